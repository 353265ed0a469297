//! `tilekit bench --back-to-back`: its default is one call per event pair, values outside
//! 1..=1000 are refused naming themselves and the range, and a valid one on a machine without
//! a GPU is the typed no-GPU error.

use clap::Parser;
use tilekit_cli::bench::{run, timed_calls_note, Args};
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
