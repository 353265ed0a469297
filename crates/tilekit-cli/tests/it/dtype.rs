//! The shared `--dtype` parser: every spelling of the table, aliases alike, and clap's usage
//! error (exit code 2) for anything else.

use clap::{Arg, Command};
use tilekit_cli::dtype::{element_dtype, kernel_dtype};
use tilekit_ir::ScalarType;
use tilekit_tile::render::Dtype;

fn kernel_cmd() -> Command {
    Command::new("k").arg(Arg::new("dtype").long("dtype").value_parser(kernel_dtype()))
}

fn element_cmd() -> Command {
    Command::new("e").arg(Arg::new("dtype").long("dtype").value_parser(element_dtype()))
}

#[test]
fn kernel_spellings() {
    for (spelling, want) in [
        ("f32", ScalarType::F32),
        ("fp32", ScalarType::F32),
        ("f16", ScalarType::F16),
        ("fp16", ScalarType::F16),
        ("bf16", ScalarType::BF16),
    ] {
        let m = kernel_cmd().try_get_matches_from(["k", "--dtype", spelling]).unwrap();
        assert_eq!(m.get_one::<ScalarType>("dtype"), Some(&want), "{spelling}");
    }
    for bad in ["fp8", "f64", "F32", "float", ""] {
        let e = kernel_cmd().try_get_matches_from(["k", "--dtype", bad]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{bad}");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("[possible values: f32, f16, bf16]"), "{e}");
    }
}

#[test]
fn element_spellings_extend_the_kernel_ones() {
    for (spelling, want) in [
        ("f32", Dtype::Fp32),
        ("fp32", Dtype::Fp32),
        ("f16", Dtype::Fp16),
        ("fp16", Dtype::Fp16),
        ("bf16", Dtype::Bf16),
        ("fp8", Dtype::Fp8),
        ("f8", Dtype::Fp8),
        ("f64", Dtype::F64),
        ("fp64", Dtype::F64),
    ] {
        let m = element_cmd().try_get_matches_from(["e", "--dtype", spelling]).unwrap();
        assert_eq!(m.get_one::<Dtype>("dtype"), Some(&want), "{spelling}");
    }
    // every kernel spelling means the same element size in both tables
    for s in ["f32", "fp32", "f16", "fp16", "bf16"] {
        let k = kernel_dtype().lookup(s).unwrap();
        let e = element_dtype().lookup(s).unwrap();
        assert_eq!(k.size_bytes() as i64, e.size_bytes(), "{s}");
    }
    let e = element_cmd().try_get_matches_from(["e", "--dtype", "int4"]).unwrap_err();
    assert!(e.to_string().contains("[possible values: f32, f16, bf16, fp8, f64]"), "{e}");
}

#[test]
fn ignore_case_is_honoured_when_a_command_asks_for_it() {
    let cmd = Command::new("k")
        .arg(Arg::new("dtype").long("dtype").ignore_case(true).value_parser(kernel_dtype()));
    let m = cmd.try_get_matches_from(["k", "--dtype", "FP16"]).unwrap();
    assert_eq!(m.get_one::<ScalarType>("dtype"), Some(&ScalarType::F16));
}

#[test]
fn parse_str_outside_clap() {
    assert_eq!(kernel_dtype().parse_str("fp32").unwrap(), ScalarType::F32);
    let e = element_dtype().parse_str("int4").unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert_eq!(
        e.to_string(),
        "--dtype \"int4\" is invalid: one of f32 (fp32), f16 (fp16), bf16, fp8 (f8), f64 (fp64)"
    );
}
