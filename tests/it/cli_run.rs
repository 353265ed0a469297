//! `tilekit run` end to end: summaries, exit codes, the GPU backend's refusal, flag errors.

use crate::common;

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
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn gpu_backend_runs_on_a_gpu() {
    let (code, out, err) = tilekit(&["run", "copy", "--shape", "4x4", "--backend", "gpu"]);
    assert!(tilekit_cuda_present(), "this test needs a CUDA GPU and none opened: {err}");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("backend gpu") && out.trim_end().ends_with("PASS"), "{out}");
}

/// Checks whichever this machine is; `gpu_backend_runs_on_a_gpu` (ignored unless asked for)
/// requires the GPU.
#[test]
fn gpu_backend_runs_or_says_why_not() {
    let (code, out, err) = tilekit(&["run", "copy", "--shape", "4x4", "--backend", "gpu"]);
    if tilekit_cuda_present() {
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("backend gpu") && out.trim_end().ends_with("PASS"), "{out}");
    } else {
        assert_eq!(code, 1);
        assert!(
            err.starts_with(
                "tilekit: error: no usable GPU for `run --backend gpu`: no CUDA driver"
            ),
            "{err}"
        );
    }
}

fn tilekit_cuda_present() -> bool {
    let (code, _, _) = tilekit(&["gpu"]);
    code == 0
}

#[test]
fn errors_name_the_kernel_typed() {
    // the library builds permute021 with the permute module and add_row with add: the message
    // starts with the name the user typed
    for (kernel, shape, inner) in [
        ("permute021", "3x4", "permute: shape = [3, 4] is invalid"),
        ("add_row", "3x4x5", "add: shape = [3, 4, 5] is invalid"),
        ("mul_col", "3", "mul: shape = [3] is invalid"),
        ("unmorton", "4x5x6", "morton: shape = [4, 5, 6] is invalid"),
        ("row_max", "3", "row_max: shape = [3] is invalid"),
    ] {
        let (code, out, err) = tilekit(&["run", kernel, "--shape", shape]);
        assert_eq!(code, 2, "{kernel}: {err}");
        assert!(out.is_empty(), "{out}");
        let want = if inner.starts_with(kernel) {
            format!("tilekit: error: {inner}")
        } else {
            format!("tilekit: error: {kernel}: {inner}")
        };
        assert!(err.starts_with(&want), "{kernel}: {err}");
    }
}

#[test]
fn help_lists_every_kernel_with_ranks_and_dtypes() {
    for cmd in ["run", "ptx"] {
        let (code, out, _) = tilekit(&[cmd, "--help"]);
        assert_eq!(code, 0);
        for k in tilekit_ops::run::KERNELS {
            let types: Vec<String> = k.dtypes.iter().map(|t| t.to_string()).collect();
            let line = out
                .lines()
                .find(|l| l.split_whitespace().next() == Some(k.name))
                .unwrap_or_else(|| panic!("{cmd} --help has no line for {}:\n{out}", k.name));
            assert!(line.contains(k.shape) && line.ends_with(&types.join(", ")), "{line}");
        }
        assert!(
            out.contains(
                "gemm        MxNxK (f16/bf16: multiples of 64, 64, 32; f32: any) f16, bf16, f32"
            ),
            "{out}"
        );
    }
    let (_, out, _) = tilekit(&["bench", "--help"]);
    assert!(out.contains("softmax 16384x16384 bf16") && out.contains("copy-example"), "{out}");
}

#[test]
fn bad_arguments() {
    let (code, _, err) = tilekit(&["run", "copy", "--shape", "4xq"]);
    assert_eq!(code, 2);
    assert!(err.contains("--shape \"4xq\" is invalid"), "{err}");
    let (code, _, err) = tilekit(&["run", "copy", "--shape", "4x4", "--dtype", "f64"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'f64' for '--dtype <DTYPE>'"), "{err}");
    assert!(err.contains("[possible values: f32, f16, bf16]"), "{err}");
    let (code, _, err) = tilekit(&["run", "nope", "--shape", "4x4"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'nope' for '<KERNEL>'"), "{err}");
    assert!(err.contains("copy, transpose, permute"), "{err}");
}

#[test]
fn gemm_runs_any_shape_the_api_computes() {
    // the CLI used to check the old mma.sync kernel's tile rule (N = 60 refused) while
    // api::gemm computes every shape on the Hopper kernel (issue 31, point 6)
    for shape in ["64x60x32", "200x328x72"] {
        let (code, out, err) =
            tilekit(&["run", "gemm", "--shape", shape, "--dtype", "bf16", "--backend", "interp"]);
        assert_eq!(code, 0, "{shape}: {out}{err}");
        assert!(out.contains("PASS"), "{shape}: {out}");
    }
}

/// The number after `label` in a summary line, e.g. `max err 7.8e-4 …` → 7.8e-4.
fn number_after(line: &str, label: &str) -> f64 {
    let rest =
        &line[line.find(label).unwrap_or_else(|| panic!("no {label:?} in {line}")) + label.len()..];
    rest.split_whitespace().next().unwrap().trim_end_matches([',', ')', ':']).parse().unwrap()
}

#[test]
fn the_printed_error_is_the_one_compared_with_the_tolerance() {
    // the line used to print `max rel err` over max(|want|, 1e-3) while the check divides by
    // max(|want|, 1): e.g. `max rel err 7.8e-1 (tol 3e-2): PASS` (issue 31, point 6)
    for args in [
        &["run", "softmax", "--shape", "4x300"][..],
        &["run", "row_sum", "--shape", "3x1000", "--dtype", "bf16"],
        &["run", "gemm", "--shape", "64x64x32"],
    ] {
        let (code, out, err) = tilekit(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.contains("max rel err"), "{out}");
        assert!(out.contains(" relative to max(|want|, 1) (tol "), "{out}");
        assert!(out.trim_end().ends_with("): PASS"), "{out}");
        let (err, tol) = (number_after(&out, "max err "), number_after(&out, "(tol "));
        assert!(err <= tol, "{args:?}: a PASS prints an error within the tolerance: {out}");
    }
}

#[test]
fn errors_name_the_shape_given() {
    // copy views MxN as 1xMxN: the error used to show [1, 1, 2147483648] (issue 31, point 6)
    let (code, _, err) = tilekit(&["run", "copy", "--shape", "1x2147483648"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        "tilekit: error: copy: shape = [1, 2147483648] is invalid: needs 2 lengths in 1..=2^31-1"
    );
    let (code, _, err) = tilekit(&["run", "copy", "--shape", "2x3x4x5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shape = [2, 3, 4, 5] is invalid: needs 2 or 3 lengths"), "{err}");
}

#[test]
fn negative_lengths_get_a_typed_message() {
    // clap took `-5x10` for a flag and advised `-- -5` (issue 31, point 6)
    for cmd in ["run", "ptx"] {
        for shape in ["-5x10", "5x-10", "-1"] {
            let (code, out, err) = tilekit(&[cmd, "copy", "--shape", shape]);
            assert_eq!(code, 2, "{cmd} {shape}: {err}");
            assert!(out.is_empty(), "{out}");
            assert!(
                err.starts_with(&format!(
                    "tilekit: error: --shape \"{shape}\" is invalid: lengths are positive integers"
                )),
                "{cmd} {shape}: {err}"
            );
            assert!(!err.contains("-- -"), "{err}");
        }
    }
}
