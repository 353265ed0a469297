//! `tilekit bench --pdl`: off unless given, the header's note, and the no-GPU error.
//! `tilekit bench --back-to-back`: its default is one call per event pair, values outside
//! 1..=1000 are refused naming themselves and the range, and a valid one on a machine without
//! a GPU is the typed no-GPU error. `tilekit bench gemm --gemm-config`: `|`-separated texts or
//! `best`, empty texts refused by clap, a text no label contains refused before the GPU is
//! opened (naming it and the labels), `best` only for its shapes and layout nt.

use clap::Parser;
use tilekit_cli::bench::{pdl_note, run, timed_calls_note, Args};
use tilekit_cli::CliError;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: Args,
}

fn parse(line: &[&str]) -> Result<Args, clap::Error> {
    Cli::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).map(|c| c.args)
}

#[test]
fn back_to_back_defaults_to_one_and_parses() {
    assert_eq!(parse(&["copy"]).unwrap().back_to_back, 1);
    assert_eq!(parse(&["permute", "--back-to-back", "10"]).unwrap().back_to_back, 10);
    assert_eq!(timed_calls_note(1), "");
    assert_eq!(timed_calls_note(7), "; timed as 7 back-to-back calls per event pair");
}

#[test]
fn back_to_back_outside_one_to_a_thousand_is_refused_naming_the_value() {
    for bad in ["0", "1001"] {
        let err = parse(&["copy", "--back-to-back", bad]).err().unwrap().to_string();
        assert!(err.contains(&format!("'{bad}'")) && err.contains("1..=1000"), "{err}");
    }
    let err = parse(&["copy", "--back-to-back", "ten"]).err().unwrap().to_string();
    assert!(err.contains("'ten'"), "{err}");
}

#[test]
fn back_to_back_without_a_gpu_is_the_no_gpu_error() {
    if tilekit_cuda::driver_present() {
        return; // a machine with a driver times for real; the device runs cover it
    }
    match run(&parse(&["copy", "--back-to-back", "10"]).unwrap()) {
        Err(CliError::NoGpu { command, .. }) => assert_eq!(command, "bench"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn gemm_config_parses_patterns_and_best() {
    use tilekit_cli::bench_gemm::GemmConfigFilter;
    assert_eq!(parse(&["gemm"]).unwrap().gemm_config, None);
    let a = parse(&[
        "gemm",
        "--gemm-config",
        "bn 256, 3 stages, overlap, persistent, grouped 8, tma store|bm 64",
    ])
    .unwrap();
    assert_eq!(
        a.gemm_config,
        Some(GemmConfigFilter::Patterns(vec![
            "bn 256, 3 stages, overlap, persistent, grouped 8, tma store".into(),
            "bm 64".into()
        ]))
    );
    let best = parse(&["gemm", "--gemm-config", "best"]).unwrap();
    assert_eq!(best.gemm_config, Some(GemmConfigFilter::Best));
    for bad in ["", "bm 64||pingpong", "bm 64|"] {
        let err = parse(&["gemm", "--gemm-config", bad]).err().unwrap().to_string();
        assert!(err.contains("--gemm-config") && err.contains("empty"), "{bad:?}: {err}");
    }
}

#[test]
fn gemm_config_matching_nothing_is_refused_before_the_gpu_naming_the_labels() {
    // one shape: a text no label contains is the typed error, listing the shape's labels
    // (checked before the GPU is opened, so this holds with or without a driver)
    let a = parse(&["gemm", "--gemm-shape", "1000x1000x1000", "--gemm-config", "bm 64|bn 999"])
        .unwrap();
    match run(&a) {
        Err(CliError::BadArgument { flag, value, rule }) => {
            assert_eq!((flag.as_str(), value.as_str()), ("--gemm-config", "bn 999"));
            assert!(rule.contains("1000x1000x1000 bf16, 1000x1000x1000 f16"), "{rule}");
            assert!(
                rule.contains("bn 144, 8 stages, overlap, persistent, grouped 8, tma store, bm 64"),
                "{rule}"
            );
        }
        other => panic!("{other:?}"),
    }
    // best: only the shapes it has lists for, only layout nt
    let odd = parse(&["gemm", "--gemm-shape", "512x512x512", "--gemm-config", "best"]).unwrap();
    match run(&odd) {
        Err(CliError::BadArgument { value, rule, .. }) => {
            assert_eq!(value, "best");
            assert!(rule.contains("512x512x512") && rule.contains("8192x8192x8192"), "{rule}");
        }
        other => panic!("{other:?}"),
    }
    let nn = parse(&["gemm", "--gemm-config", "best", "--layout", "nn"]).unwrap();
    match run(&nn) {
        Err(CliError::BadArgument { rule, .. }) => assert!(rule.contains("--layout nn"), "{rule}"),
        other => panic!("{other:?}"),
    }
    // not with the tables it does not select from
    let f32 = parse(&["gemm", "--dtype", "f32", "--gemm-config", "bm 64"]).unwrap();
    match run(&f32) {
        Err(CliError::BadArgument { flag, rule, .. }) => {
            assert_eq!(flag, "--gemm-config");
            assert!(rule.contains("--dtype f32"), "{rule}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn gemm_config_that_matches_some_shapes_passes_the_check() {
    // the whole table: `bm 64` matches 1000³ and 64 × 8192 × 8192 only — no error; without a
    // GPU the run then stops at the no-GPU error
    if tilekit_cuda::driver_present() {
        return; // with a driver this would time the table; the device runs cover it
    }
    let a = parse(&["gemm", "--gemm-config", "bm 64"]).unwrap();
    match run(&a) {
        Err(CliError::NoGpu { command, .. }) => assert_eq!(command, "bench gemm"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn pdl_is_off_unless_asked_for_and_combines_with_back_to_back() {
    assert!(!parse(&["permute"]).unwrap().pdl);
    let a = parse(&["permute", "--back-to-back", "10", "--pdl"]).unwrap();
    assert!(a.pdl && a.back_to_back == 10);
    assert!(parse(&["permute", "--pdl", "yes"]).is_err()); // a flag, not an option
    assert_eq!(pdl_note(false, (9, 0)), "");
    assert_eq!(pdl_note(true, (9, 0)), "; programmatic dependent launch on");
    assert_eq!(pdl_note(true, (8, 6)), "; --pdl has no effect before sm_90");
}

#[test]
fn pdl_without_a_gpu_is_the_no_gpu_error() {
    if tilekit_cuda::driver_present() {
        return; // a machine with a driver times for real; the device runs cover it
    }
    match run(&parse(&["permute", "--back-to-back", "10", "--pdl"]).unwrap()) {
        Err(CliError::NoGpu { command, .. }) => assert_eq!(command, "bench"),
        other => panic!("{other:?}"),
    }
}
