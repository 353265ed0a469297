//! `tilekit run` end to end: summaries, exit codes, the GPU backend's refusal, flag errors.

mod common;

use common::tilekit;

#[test]
fn transpose_runs_and_passes() {
    let (code, out, err) = tilekit(&["run", "transpose", "--shape", "100x77"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("transpose 100x77 f32: "), "{out}");
    assert!(out.contains("backend interp") && out.contains("(exact): PASS"), "{out}");
}

#[test]
fn kernels_and_dtypes() {
    for args in [
        &["run", "morton", "--shape", "40x50", "--dtype", "bf16"][..],
        &["run", "permute", "--shape", "3x5x7", "--dtype", "f16", "--seed", "4"],
        &["run", "softmax", "--shape", "4x300"],
        &["run", "gemm", "--shape", "64x64x32"],
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("IR instructions") && out.trim_end().ends_with("PASS"), "{out}");
    }
}

#[test]
fn gpu_backend_runs_or_says_why_not() {
    let (code, out, err) = tilekit(&["run", "copy", "--shape", "4x4", "--backend", "gpu"]);
    if tilekit_cuda_present() {
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("backend gpu") && out.trim_end().ends_with("PASS"), "{out}");
    } else {
        assert_eq!(code, 2);
        assert!(
            err.starts_with("tilekit: error: the GPU backend is not available: no CUDA driver"),
            "{err}"
        );
    }
}

fn tilekit_cuda_present() -> bool {
    let (code, _, _) = tilekit(&["gpu"]);
    code == 0
}

#[test]
fn bad_arguments() {
    let (code, _, err) = tilekit(&["run", "copy", "--shape", "4xq"]);
    assert_eq!(code, 2);
    assert!(err.contains("--shape \"4xq\" is invalid"), "{err}");
    let (code, _, err) = tilekit(&["run", "copy", "--shape", "4x4", "--dtype", "f64"]);
    assert_eq!(code, 2);
    assert!(err.contains("one of f32, f16, bf16"), "{err}");
    let (code, _, err) = tilekit(&["run", "nope", "--shape", "4x4"]);
    assert_eq!(code, 2);
    assert!(err.contains("kernel = nope is invalid"), "{err}");
    let (code, _, err) = tilekit(&["run", "gemm", "--shape", "64x60x32"]);
    assert_eq!(code, 2);
    assert!(err.contains("N = 60 is invalid"), "{err}");
}
