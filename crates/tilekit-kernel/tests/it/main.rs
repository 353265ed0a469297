//! Every integration test of `tilekit-kernel` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod probe;
mod ring;
mod tile;
mod wgmma_acc;
