//! Every integration test of `tilekit-cli` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod bench_args;
mod bench_gemm;
mod bench_gemm_batched;
mod conformance;
mod dtype;
mod error;
mod selftest_interp;
mod sfc;
mod swizzle_commands;
mod tune;
