//! Every integration test of `tilekit-tile` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod common;

mod analysis_banks;
mod analysis_cache;
mod analysis_requests;
mod distributed_tensor;
mod distribution;
mod encoding;
mod render;
mod view;
mod window;
