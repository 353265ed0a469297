//! The fp32 SIMT GEMM on the interpreter: odd shapes with every preset, transposed and strided
//! operands, aligned (float4) and scalar kernels, against an f64 product; typed errors.
use tilekit_ir::tensor::HostTensor;
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::Interp;
use tilekit_ops::bind::Bindings;
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_simt::{build, SimtConfig, SimtLayout};
use tilekit_ops::OpsError;

/// Random f32 values in [-1, 1) (never all zero), as a `rows × cols` tensor.
fn random(rows: i64, cols: i64, seed: u64) -> (Vec<f32>, HostTensor) {
    let buf = tilekit_ops::host::random(ScalarType::F32, (rows * cols) as usize, seed).unwrap();
    let v: Vec<f32> = tilekit_ops::host::to_f64(&buf).iter().map(|&x| x as f32).collect();
    assert!(v.iter().any(|&x| x != 0.0));
    let t = HostTensor::from_slice(&v, &[rows, cols]).unwrap();
    (v, t)
}

fn nan_c(m: i64, n: i64) -> HostTensor {
    HostTensor::from_slice(&vec![f32::NAN; (m * n) as usize], &[m, n]).unwrap()
}

/// `C = A·B` in f64 from element accessors.
fn reference(
    m: i64,
    n: i64,
    k: i64,
    a: impl Fn(i64, i64) -> f32,
    b: impl Fn(i64, i64) -> f32,
) -> Vec<f64> {
    let mut c = vec![0.0f64; (m * n) as usize];
    for i in 0..m {
        for p in 0..k {
            let x = f64::from(a(i, p));
            for j in 0..n {
                c[(i * n + j) as usize] += x * f64::from(b(p, j));
            }
        }
    }
    c
}

/// Every element within the K-scaled tolerance of the f64 product (f32 accumulation of K
/// products of values in [-1, 1): error ≲ K · 2⁻²⁴ · Σ|aᵢbᵢ|).
fn assert_close(got: &HostTensor, want: &[f64], k: i64, what: &str) {
    let got = got.to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len(), "{what}");
    let tol = 1e-6 * (k as f64).max(1.0) + 1e-6;
    let mut nonzero = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= tol * w.abs().max(1.0),
            "{what}: C[{i}] = {g}, want {w}"
        );
        nonzero += usize::from(w.abs() > 0.1);
    }
    assert!(nonzero > 0 || want.len() < 4, "{what}: a real product, not zeros");
}

fn check(m: i64, n: i64, k: i64, cfg: &SimtConfig, seed: u64) {
    let (av, a) = random(m, k, seed);
    let (bv, b) = random(k, n, seed + 100);
    let mut c = nan_c(m, n);
    api::gemm_simt_into(&Interp, &a, &b, &mut c, cfg).unwrap();
    let want = reference(m, n, k, |i, p| av[(i * k + p) as usize], |p, j| bv[(p * n + j) as usize]);
    assert_close(&c, &want, k, &format!("{m}x{n}x{k} {cfg}"));
}

#[test]
fn odd_shapes_with_every_preset() {
    for (name, cfg) in SimtConfig::presets() {
        for (s, &(m, n, k)) in [(1, 1, 1), (77, 130, 33), (129, 257, 65)].iter().enumerate() {
            eprintln!("{name} {m}x{n}x{k}");
            check(m, n, k, &cfg, s as u64 + 1);
        }
    }
}

#[test]
fn the_benchmark_candidates_are_right_too() {
    for (i, (name, cfg)) in SimtConfig::candidates().into_iter().enumerate().skip(3) {
        eprintln!("{name}");
        check(129, 257, 65, &cfg, 30 + i as u64);
        check(64, 128, 48, &cfg, 40 + i as u64); // float4 path
    }
}

#[test]
fn aligned_shapes_take_float4_and_match() {
    // contiguous, every length a multiple of 4: A, B and C read and written as float4
    check(64, 128, 48, &SimtConfig::default(), 7);
    check(96, 64, 32, &SimtConfig::small(), 8);
    check(64, 64, 24, &SimtConfig { stages: 1, ..SimtConfig::small() }, 9);
}

#[test]
fn the_aligned_kernel_records_its_vectors_and_binding_checks_them() {
    let k = build(&SimtConfig::small(), &SimtLayout::aligned(false)).unwrap();
    assert_eq!(k.tensors.iter().map(|t| t.vector).collect::<Vec<_>>(), vec![4, 4, 4]);
    let text = k.to_string();
    assert!(text.contains("ld.global.v4.f32") || text.contains("v4"), "float4 loads expected");
    let kc = CompiledKernel::new(k);
    let (_, odd) = random(8, 33, 1); // K = 33: rows not multiples of 4 elements
    let e = Bindings::<Interp>::new(&kc).input("a", &odd, &Interp).unwrap_err();
    assert!(e.to_string().contains("4-element vectors"), "{e}");
    let scalar = build(&SimtConfig::small(), &SimtLayout::scalar(false)).unwrap();
    assert_eq!(scalar.tensors.iter().map(|t| t.vector).collect::<Vec<_>>(), vec![1, 1, 1]);
}

#[test]
fn transposed_b_view() {
    for (m, n, k, cfg) in [
        (77, 130, 33, SimtConfig::small()),
        (65, 72, 40, SimtConfig::default()),
        (3, 300, 17, SimtConfig::wide()),
    ] {
        let (av, a) = random(m, k, 3);
        let (wv, w) = random(n, k, 4); // N × K row-major; B = wᵀ
        let bt = w.permute(&[1, 0]).unwrap();
        let mut c = nan_c(m, n);
        api::gemm_simt_into(&Interp, &a, &bt, &mut c, &cfg).unwrap();
        let want =
            reference(m, n, k, |i, p| av[(i * k + p) as usize], |p, j| wv[(j * k + p) as usize]);
        assert_close(&c, &want, k, &format!("Bᵀ {m}x{n}x{k} {cfg}"));
    }
}

#[test]
fn strided_and_offset_views() {
    // A and B are windows into bigger matrices (pitches 41 and 75, offsets): scalar path
    let (m, n, k) = (37, 70, 29);
    let (pv, parent_a) = random(m + 3, 41, 5);
    let a = parent_a.narrow(0, 2, m).unwrap().narrow(1, 5, k).unwrap();
    let (qv, parent_b) = random(k + 1, 75, 6);
    let b = parent_b.narrow(0, 1, k).unwrap().narrow(1, 3, n).unwrap();
    let mut c = nan_c(m, n);
    api::gemm_simt_into(&Interp, &a, &b, &mut c, &SimtConfig::small()).unwrap();
    let want = reference(
        m,
        n,
        k,
        |i, p| pv[((i + 2) * 41 + p + 5) as usize],
        |p, j| qv[((p + 1) * 75 + j + 3) as usize],
    );
    assert_close(&c, &want, k, "strided");
    // C as a window of a bigger, NaN-filled output: only the window is written
    let (m, n, k) = (20, 30, 12);
    let (av, a) = random(m, k, 11);
    let (bv, b) = random(k, n, 12);
    let big = nan_c(m + 2, n + 5);
    let mut cv = big.narrow(0, 1, m).unwrap().narrow(1, 2, n).unwrap();
    api::gemm_simt_into(&Interp, &a, &b, &mut cv, &SimtConfig::default()).unwrap();
    // the view's storage (host tensors copy on write): the whole (m+2) × (n+5) buffer
    let got: Vec<f64> = tilekit_ops::host::to_f64(&cv.buffer());
    assert_eq!(got.len(), ((m + 2) * (n + 5)) as usize);
    let want = reference(m, n, k, |i, p| av[(i * k + p) as usize], |p, j| bv[(p * n + j) as usize]);
    for r in 0..m + 2 {
        for col in 0..n + 5 {
            let g = got[(r * (n + 5) + col) as usize];
            let inside = (1..=m).contains(&r) && (2..n + 2).contains(&col);
            if inside {
                let w = want[((r - 1) * n + col - 2) as usize];
                assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "C[{r},{col}] = {g}, want {w}");
            } else {
                assert!(g.is_nan(), "C[{r},{col}] outside the view was written: {g}");
            }
        }
    }
}

#[test]
fn gemm_dispatches_f32_to_the_simt_kernel() {
    let (m, n, k) = (50, 45, 70);
    let (av, a) = random(m, k, 21);
    let (bv, b) = random(k, n, 22);
    let c = api::gemm(&Interp, &a, &b).unwrap();
    let want = reference(m, n, k, |i, p| av[(i * k + p) as usize], |p, j| bv[(p * n + j) as usize]);
    assert_close(&c, &want, k, "api::gemm f32");
    let mut c2 = nan_c(m, n);
    api::gemm_into(&Interp, &a, &b, &mut c2).unwrap();
    assert_close(&c2, &want, k, "api::gemm_into f32");
}

#[test]
fn bad_inputs_are_typed_errors() {
    let (_, a) = random(8, 5, 1);
    let (_, b) = random(6, 4, 2);
    let mut c = nan_c(8, 4);
    let e = api::gemm_simt_into(&Interp, &a, &b, &mut c, &SimtConfig::small()).unwrap_err();
    assert!(matches!(e, OpsError::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("inner dims"), "{e}");
    // f32 A with an f16 B
    let h = HostTensor::from_slice(&[half::f16::ONE; 20], &[5, 4]).unwrap();
    let e = api::gemm_into(&Interp, &a, &h, &mut c).unwrap_err();
    assert!(
        matches!(
            e,
            OpsError::DtypeMismatch { got: ScalarType::F16, expected: ScalarType::F32, .. }
        ),
        "{e}"
    );
    // C of the wrong shape
    let (_, b) = random(5, 4, 3);
    let mut small = nan_c(8, 3);
    let e = api::gemm_into(&Interp, &a, &b, &mut small).unwrap_err();
    assert!(e.to_string().contains("[8, 4]") || e.to_string().contains("8, 4"), "{e}");
    // C of the wrong dtype
    let mut ci = HostTensor::zeros(ScalarType::I32, &[8, 4]).unwrap();
    assert!(api::gemm_into(&Interp, &a, &b, &mut ci).is_err());
    // integer inputs: not an f32/f16/bf16 GEMM
    let ai = HostTensor::zeros(ScalarType::I32, &[8, 5]).unwrap();
    let e = api::gemm(&Interp, &ai, &b).unwrap_err();
    assert!(e.to_string().contains("i32"), "{e}");
    // bad configurations name the field
    for (cfg, field) in [
        (SimtConfig { bm: 100, ..SimtConfig::default() }, "bm = 100"),
        (SimtConfig { tn: 2, ..SimtConfig::default() }, "tn = 2"),
        (SimtConfig { stages: 0, ..SimtConfig::default() }, "stages = 0"),
        (SimtConfig { bk: 512, ..SimtConfig::default() }, "bk = 512"),
        (SimtConfig { threads: 255, ..SimtConfig::default() }, "threads = 255"),
    ] {
        let e = api::gemm_simt_into(&Interp, &a, &b, &mut nan_c(8, 4), &cfg).unwrap_err();
        assert!(matches!(e, OpsError::Invalid { .. }) && e.to_string().contains(field), "{e}");
    }
    assert!(SimtConfig::preset("nope").is_err());
}

/// `N` of "N <what>" in a ptxas -v report (first occurrence).
fn ptxas_number(report: &str, what: &str) -> u32 {
    report
        .split(what)
        .next()
        .and_then(|h| h.trim_end().rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{what}` in the report\n{report}"))
}

#[test]
fn every_preset_assembles_without_spills() {
    use tilekit_ptx::{emit_kernel, ptxas, Target};
    for (name, cfg) in SimtConfig::candidates() {
        for (lname, layout) in [
            ("aligned", SimtLayout::aligned(false)),
            ("scalar", SimtLayout::scalar(false)),
            ("aligned_bt", SimtLayout::aligned(true)),
            ("scalar_bt", SimtLayout::scalar(true)),
        ] {
            let k = build(&cfg, &layout).unwrap();
            for t in Target::ALL {
                let ptx = emit_kernel(&k, t).unwrap();
                assert!(
                    !ptx.contains("mma") && ptx.contains("fma.rn.f32"),
                    "{name}: CUDA cores only"
                );
                let id = format!("gemm_simt_{name}_{lname}");
                if let Some(report) = ptxas::assemble(&ptx, t, &id).unwrap() {
                    let spilled = ptxas_number(&report, "bytes spill stores");
                    let regs = ptxas_number(&report, "registers");
                    eprintln!("{id} {t:?}: {regs} registers, {spilled} bytes spilled");
                    assert_eq!(spilled, 0, "{id} {t:?}: spills\n{report}");
                    assert!(regs <= 255, "{id} {t:?}: {regs} registers\n{report}");
                }
            }
        }
    }
}

#[test]
fn empty_products() {
    // K = 0: C is all zeros (written, not left poisoned); M = 0: nothing to do
    let a = HostTensor::from_slice::<f32>(&[], &[5, 0]).unwrap();
    let b = HostTensor::from_slice::<f32>(&[], &[0, 7]).unwrap();
    let mut c = nan_c(5, 7);
    api::gemm_simt_into(&Interp, &a, &b, &mut c, &SimtConfig::small()).unwrap();
    assert!(c.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
    let a = HostTensor::from_slice::<f32>(&[], &[0, 3]).unwrap();
    let (_, b) = random(3, 4, 1);
    let c = api::gemm(&Interp, &a, &b).unwrap();
    assert_eq!(c.layout().shape(), &[0, 4]);
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
