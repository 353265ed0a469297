//! Exit codes by category: 0 success, 1 a check or run failed (no GPU for a GPU command, a
//! closed stdout aside: see cli_output.rs), 2 usage or input errors — with every error on
//! stderr and nothing on stdout.

mod common;

use common::tilekit;

fn gpu_present() -> bool {
    tilekit(&["gpu"]).0 == 0
}

#[test]
fn success_is_0() {
    for args in [
        &["run", "copy", "--shape", "4x4"][..],
        &["ptx", "copy", "--shape", "4x4"],
        &["--help"],
        &["--version"],
        &["run", "--help"],
        &["help", "ptx"],
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.is_empty() && err.is_empty(), "{args:?}: {out}{err}");
    }
}

#[test]
fn usage_errors_are_2_on_stderr() {
    // clap's own usage errors (missing, unknown, malformed) and values the library refuses
    for (args, says) in [
        (&["nosuchcommand"][..], "unrecognized subcommand 'nosuchcommand'"),
        (&["run"], "required arguments were not provided"),
        (&["run", "copy"], "--shape <SHAPE>"),
        (&["run", "copy", "--shape", "4x4", "--bogus"], "unexpected argument '--bogus'"),
        (&["run", "copy", "--shape", "4x4", "--seed", "x"], "invalid value 'x' for '--seed"),
        (&["run", "copy", "--shape", "4x4", "--backend", "tpu"], "invalid value 'tpu'"),
        (&["run", "copy", "--shape", "4x4", "--dtype", "int8"], "invalid value 'int8'"),
        (&["ptx", "nope", "--shape", "4x4"], "invalid value 'nope' for '<KERNEL>'"),
        (&["bench", "nope"], "invalid value 'nope' for '[KERNEL]'"),
        (&["run", "copy", "--shape", "0x4"], "--shape \"0x4\" is invalid"),
        (&["run", "transpose", "--shape", "4x4x4"], "transpose: shape = [4, 4, 4] is invalid"),
        (
            &["run", "softmax", "--shape", "4x16385", "--dtype", "f16"],
            "softmax: dtype = f16 is invalid",
        ),
        (&["ptx", "gemm", "--shape", "64x64"], "gemm: shape = [64, 64] is invalid: [M, N, K]"),
        (&["ptx", "copy", "--shape", "65536x65536"], "4294967296 elements, more than 2^31-1"),
        (&["ptx", "copy", "--shape", "4x4", "--target", "sm_75"], "--target \"sm_75\" is invalid"),
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: stdout {out}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_missing_gpu_is_1_on_stderr() {
    if gpu_present() {
        return; // the GPU commands run: cli_gpu.rs checks them
    }
    for (args, command) in [
        (&["gpu"][..], "gpu"),
        (&["selftest"], "selftest"),
        (&["bench", "copy", "--mib", "1", "--reps", "1"], "bench"),
        (&["bench", "launch"], "bench launch"),
        (&["tune"], "tune"),
        (&["run", "copy", "--shape", "4x4", "--backend", "gpu"], "run --backend gpu"),
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            err.starts_with(&format!("tilekit: error: no usable GPU for `{command}`: ")),
            "{err}"
        );
    }
}

#[test]
fn missing_conformance_vectors_are_1() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("conformance");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .env("TILEKIT_CONFORMANCE", &missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("looked at {}", missing.display())), "{err}");
}
