//! Every integration test of `tilekit-cuda` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod cache;
mod no_gpu;
mod ptxas_cubin;
mod tensor;
mod tma_encode;
