//! Every integration test of `tilekit-ir` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod common;

mod builder;
mod dump;
mod eval;
mod examples;
mod interp;
mod interp_async;
mod interp_atomic;
mod interp_clock;
mod interp_cluster;
mod interp_tma;
mod interp_warps;
mod interp_wgmma;
mod interp_wgmma_mn_wide;
mod kernel;
mod passes;
mod symbolic;
mod tensor;
mod wgmma_desc;
