//! Every integration test of `tilekit` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod common;

mod cli_bounds;
mod cli_dtype;
mod cli_exit_codes;
mod cli_gpu;
mod cli_main;
mod cli_output;
mod cli_ptx;
mod cli_run;
mod cli_sfc;
mod cli_show;
mod guide;
