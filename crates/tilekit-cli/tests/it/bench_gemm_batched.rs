//! `tilekit bench gemm --batch`: its arguments are checked before any GPU is opened (a typed
//! error names the flag), and its default problem is the brief's 512³.

use clap::Parser;
use tilekit_cli::bench::Args;
use tilekit_cli::bench_gemm_batched::{run, DEFAULT_SHAPE};
use tilekit_cli::CliError;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn args(line: &[&str]) -> Args {
    Cli::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap().args
}

#[test]
fn the_batch_flag_parses_and_bad_values_are_named() {
    let a = args(&["gemm", "--batch", "64", "--gemm-shape", "512x512x512"]);
    assert_eq!((a.batch, a.gemm_shape.as_deref()), (Some(64), Some("512x512x512")));
    assert_eq!(DEFAULT_SHAPE, (512, 512, 512));
    let bad = |line: &[&str], flag: &str| match run(&args(line)) {
        Err(CliError::BadArgument { flag: f, .. }) => assert_eq!(f, flag, "{line:?}"),
        other => panic!("{line:?}: {other:?}"),
    };
    bad(&["gemm", "--batch", "0"], "--batch");
    bad(&["gemm", "--batch", "8", "--dtype", "f32"], "--dtype");
    bad(&["gemm", "--batch", "8", "--gemm-shape", "512x0x512"], "--gemm-shape");
}
