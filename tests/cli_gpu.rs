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

#[test]
fn tune_gemm_checks_its_arguments_before_the_gpu() {
    // bad arguments are named whether or not a GPU is present (usage errors: exit code 2)
    for (args, want) in [
        (&["tune", "gemm"][..], "--shape \"\" is invalid: `tune gemm` needs the problem, MxNxK"),
        (
            &["tune", "gemm", "--shape", "64x64"],
            "--shape \"64x64\" is invalid: MxNxK with M, N, K ≥ 1",
        ),
        (
            &["tune", "gemm", "--shape", "64x64x64", "--dtype", "f32"],
            "--dtype \"f32\" is invalid: bf16 or f16",
        ),
        (
            &["tune", "gemm", "--shape", "64x64x64", "--out", "f64"],
            "--out \"f64\" is invalid: f32, or `same`",
        ),
    ] {
        let (code, out) = tilekit(args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains(want), "{args:?}: {out}");
    }
    let (code, out) = tilekit(&["tune", "nonsense"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("invalid value 'nonsense' for '[KERNEL]'"), "{out}");
    // a good request: the tuner's table on a Hopper GPU, the reason without one
    let (code, out) = tilekit(&["tune", "gemm", "--shape", "256x256x128", "--reps", "2"]);
    if out.contains("no usable GPU") {
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("no usable GPU for `tune gemm`"), "{out}");
    } else {
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("class `bf16>f32 nt m256 n256 k128`"), "{out}");
        assert!(out.contains("[heuristic]"), "{out}");
    }
}

#[test]
fn bench_attention_probe_checks_its_arguments_then_needs_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("attn.csv");
    let csv = csv.to_str().unwrap();
    // no case: named
    let (code, out) = tilekit(&["bench", "attention", "--probe", csv]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("--probe needs one --attention-case"), "{out}");
    // a variant text that names several: listed
    let args = ["bench", "attention", "--attention-case", "128,4096", "--attention-variant"];
    let (code, out) = tilekit(&[&args[..], &["bn128", "--probe", csv]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("plain/bn128/tma") && out.contains("runs one"), "{out}");
    // one variant: the GPU's run, or the reason there is none
    let svg = dir.path().join("attn.svg");
    let one = [
        "plain/bn128/tma",
        "--probe",
        csv,
        "--probe-svg",
        svg.to_str().unwrap(),
        "--probe-blocks",
        "8",
        "--reps",
        "3",
    ];
    let (code, out) = tilekit(&[&args[..], &one[..]].concat());
    if out.contains("no usable GPU") {
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("no usable GPU for `bench attention --probe`"), "{out}");
    } else {
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("tensor busy") && out.contains("k_full_wait *"), "{out}");
        let text = std::fs::read_to_string(csv).unwrap();
        assert!(text.starts_with("block,warpgroup,index,time,event,span,edge\n"), "{text}");
        assert!(text.lines().count() > 8 * 3 * 2, "{}", text.lines().count());
        assert!(std::fs::read_to_string(svg).unwrap().contains("data-span=\"softmax\""));
    }
}
