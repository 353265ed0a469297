//! The GPU commands on a machine without a GPU (CI) answer with a reason on stderr and exit code
//! 1, never a panic; on a machine with one they work.

mod common;

fn tilekit(args: &[&str]) -> (i32, String) {
    let (code, out, err) = common::tilekit(args);
    (code, out + &err)
}

#[test]
fn gpu_info_or_reason() {
    let (code, out, err) = common::tilekit(&["gpu"]);
    if err.contains("no usable GPU") {
        assert_eq!(code, 1, "{err}");
        assert!(err.starts_with("tilekit: error: no usable GPU for `gpu`: "), "{err}");
        assert!(err.contains("libcuda") || err.contains("no CUDA device"), "{err}");
        assert!(out.is_empty(), "{out}");
    } else {
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("compute capability"), "{out}");
    }
}

#[test]
fn selftest_and_bench_need_a_gpu() {
    for (cmd, name) in [
        (&["selftest"][..], "selftest"),
        (&["bench", "copy", "--mib", "1", "--reps", "1"][..], "bench"),
        (&["bench", "launch", "--calls", "1000"][..], "bench launch"),
        (&["tune", "--filter", "nothing-matches"][..], "tune"),
    ] {
        let (code, out) = tilekit(cmd);
        if out.contains("no usable GPU") {
            assert_eq!(code, 1, "{out}");
            assert!(out.contains(&format!("no usable GPU for `{name}`")), "{out}");
        } else {
            assert_eq!(code, 0, "{cmd:?}: {out}");
        }
    }
}

#[test]
fn bench_rejects_unknown_kernels() {
    let (code, out) = tilekit(&["bench", "nonsense"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("invalid value 'nonsense' for '[KERNEL]'"), "{out}");
    for bad in [&["bench", "copy", "--mib", "0"][..], &["bench", "copy", "--reps", "0"]] {
        let (code, out) = tilekit(bad);
        assert_eq!(code, 2, "{bad:?}: {out}");
        assert!(out.contains("0 is not in 1.."), "{out}");
    }
    let (code, out) = tilekit(&["bench", "launch", "--calls", "10"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("10 is not in 100..=10000000"), "{out}");
}
