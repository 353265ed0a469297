//! The GPU commands on a machine without a GPU (CI) answer with a reason on stderr and exit code
//! 1, never a panic; on a machine with one they work. Each `…_or_…` test checks whichever this
//! machine is; its `…_on_a_gpu` twin is `#[ignore]`d (the summary counts it) and, run with
//! `--include-ignored`, requires a GPU (docs/testing.md).

use crate::common;

fn tilekit(args: &[&str]) -> (i32, String) {
    let (code, out, err) = common::tilekit(args);
    (code, out + &err)
}

/// Fails a GPU-only test on a machine without a GPU (instead of passing without its check).
fn require_gpu(out: &str) {
    assert!(!out.contains("no usable GPU"), "this test needs a CUDA GPU and none opened: {out}");
}

fn gpu_info_on_the_gpu(code: i32, out: &str) {
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("compute capability"), "{out}");
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
        gpu_info_on_the_gpu(code, &out);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn gpu_info_on_a_gpu() {
    let (code, out) = tilekit(&["gpu"]);
    require_gpu(&out);
    gpu_info_on_the_gpu(code, &out);
}

const GPU_COMMANDS: [(&[&str], &str); 4] = [
    (&["selftest"], "selftest"),
    (&["bench", "copy", "--mib", "1", "--reps", "1"], "bench"),
    (&["bench", "launch", "--calls", "1000"], "bench launch"),
    (&["tune", "--filter", "nothing-matches"], "tune"),
];

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn selftest_and_bench_run_on_a_gpu() {
    for (cmd, _) in GPU_COMMANDS {
        let (code, out) = tilekit(cmd);
        require_gpu(&out);
        assert_eq!(code, 0, "{cmd:?}: {out}");
    }
}

#[test]
fn selftest_and_bench_need_a_gpu() {
    for (cmd, name) in GPU_COMMANDS {
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
    let (code, out) = tilekit(&TUNE_GEMM);
    if out.contains("no usable GPU") {
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("no usable GPU for `tune gemm`"), "{out}");
    } else {
        tune_gemm_on_the_gpu(code, &out);
    }
}

const TUNE_GEMM: [&str; 6] = ["tune", "gemm", "--shape", "256x256x128", "--reps", "2"];

fn tune_gemm_on_the_gpu(code: i32, out: &str) {
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("class `bf16>f32 nt m256 n256 k128`"), "{out}");
    assert!(out.contains("[heuristic]"), "{out}");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn tune_gemm_on_a_gpu() {
    let (code, out) = tilekit(&TUNE_GEMM);
    require_gpu(&out);
    tune_gemm_on_the_gpu(code, &out);
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
    let (code, out) = probe_one_variant(dir.path());
    if out.contains("no usable GPU") {
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("no usable GPU for `bench attention --probe`"), "{out}");
    } else {
        probe_on_the_gpu(code, &out, dir.path());
    }
}

/// `bench attention --probe` of one variant, writing `attn.csv` and `attn.svg` into `dir`.
fn probe_one_variant(dir: &std::path::Path) -> (i32, String) {
    let (csv, svg) = (dir.join("attn.csv"), dir.join("attn.svg"));
    let args = ["bench", "attention", "--attention-case", "128,4096", "--attention-variant"];
    let one = [
        "plain/bn128/tma",
        "--probe",
        csv.to_str().unwrap(),
        "--probe-svg",
        svg.to_str().unwrap(),
        "--probe-blocks",
        "8",
        "--reps",
        "3",
    ];
    tilekit(&[&args[..], &one[..]].concat())
}

fn probe_on_the_gpu(code: i32, out: &str, dir: &std::path::Path) {
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("tensor busy") && out.contains("k_full_wait *"), "{out}");
    let text = std::fs::read_to_string(dir.join("attn.csv")).unwrap();
    assert!(text.starts_with("block,warpgroup,index,time,event,span,edge\n"), "{text}");
    assert!(text.lines().count() > 8 * 3 * 2, "{}", text.lines().count());
    let svg = std::fs::read_to_string(dir.join("attn.svg")).unwrap();
    assert!(svg.contains("data-span=\"softmax\""));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn bench_attention_probe_on_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out) = probe_one_variant(dir.path());
    require_gpu(&out);
    probe_on_the_gpu(code, &out, dir.path());
}
