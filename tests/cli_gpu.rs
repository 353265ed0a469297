//! The GPU commands on a machine without a GPU (CI) answer with a reason and an exit code, never
//! a panic; on a machine with one they work.

mod common;

fn tilekit(args: &[&str]) -> (i32, String) {
    let (code, out, err) = common::tilekit(args);
    (code, out + &err)
}

#[test]
fn gpu_info_or_reason() {
    let (code, out) = tilekit(&["gpu"]);
    if out.contains("no usable GPU") {
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("libcuda") || out.contains("no CUDA device"), "{out}");
    } else {
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("compute capability"), "{out}");
    }
}

#[test]
fn selftest_and_bench_need_a_gpu() {
    for cmd in [&["selftest"][..], &["bench", "copy", "--mib", "1", "--reps", "1"][..]] {
        let (code, out) = tilekit(cmd);
        if out.contains("needs a GPU") {
            assert_eq!(code, 2, "{out}");
        } else {
            assert_eq!(code, 0, "{cmd:?}: {out}");
        }
    }
}

#[test]
fn bench_rejects_unknown_kernels() {
    let (code, out) = tilekit(&["bench", "nonsense"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("KERNEL \"nonsense\" is invalid"), "{out}");
}
