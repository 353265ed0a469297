//! Every integration test of `tilekit-ptx` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod emit;
mod warp_ring;
mod wgmma;
mod wgmma_warps;
