//! Every integration test of `tilekit-ops` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod common;
mod gemm_common;

mod api;
mod attention_sm90;
mod copy;
mod elementwise;
mod gemm;
mod gemm_simt;
mod gemm_sm90;
mod gemm_sm90_batched;
mod gemm_sm90_pingpong_wide;
mod gemm_sm90_subtile;
mod gemm_sm90_widths;
mod gemm_tuning;
mod launch_cost;
mod morton;
mod ptx;
mod reduce;
mod reduce_coop;
mod reduce_coop_smem;
mod reduce_ring;
mod refactor_guard;
mod run;
mod tma_bind;
mod transpose;
mod tuning;
