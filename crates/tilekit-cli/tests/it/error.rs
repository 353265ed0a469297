//! Exit codes per error category and messages that name the kernel as typed.

use std::path::PathBuf;

use tilekit_cli::CliError;
use tilekit_ops::OpsError;

#[test]
fn exit_codes_by_category() {
    let io = || std::io::Error::new(std::io::ErrorKind::StorageFull, "full");
    let failed_runs = [
        CliError::Output(io()),
        CliError::NoGpu { command: "bench".into(), reason: "no driver".into() },
        CliError::Gpu { what: "bench copy-example".into(), reason: "launch failed".into() },
        CliError::Check { what: "softmax".into(), why: "3 mismatches".into() },
        CliError::MissingVectors { looked: vec![PathBuf::from("/x")] },
        CliError::kernel("copy", OpsError::Gpu("out of memory".into())),
        CliError::kernel("copy", OpsError::Interp("race on shared memory".into())),
        CliError::kernel("copy", OpsError::GpuUnavailable("no driver".into())),
        CliError::Ops(OpsError::Interp("out of bounds".into())),
    ];
    for e in &failed_runs {
        assert_eq!(e.exit_code(), 1, "{e}");
    }
    let input_errors = [
        CliError::BadArgument { flag: "--shape".into(), value: "x".into(), rule: "r".into() },
        CliError::kernel("gemm", OpsError::invalid("gemm", "N", 60, "a multiple of 64")),
        CliError::Ops(OpsError::invalid("copy", "shape", "[0]", "lengths >= 1")),
        CliError::Emit {
            kernel: "copy".into(),
            target: "sm_80".into(),
            source: tilekit_ptx::PtxError::UnknownTarget { name: "sm_75".into() },
        },
    ];
    for e in &input_errors {
        assert_eq!(e.exit_code(), 2, "{e}");
    }
}

#[test]
fn kernel_messages_start_with_the_name_typed() {
    let e = CliError::kernel("add_row", OpsError::invalid("add", "shape", "[3]", "2 lengths"));
    assert_eq!(e.to_string(), "add_row: add: shape = [3] is invalid: 2 lengths");
    // no repetition when the library already says it
    let e =
        CliError::kernel("softmax", OpsError::invalid("softmax", "row length", 0, "must be >= 1"));
    assert_eq!(e.to_string(), "softmax: row length = 0 is invalid: must be >= 1");
    // a kernel whose name is a prefix of the library's context is still named
    let e = CliError::kernel("max", OpsError::invalid("max_pool", "x", 1, "y"));
    assert_eq!(e.to_string(), "max: max_pool: x = 1 is invalid: y");
}
