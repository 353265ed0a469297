//! The tensor API on every backend: each test body is generic over `Backend` and runs on the
//! interpreter (`NAME::interp`) and on a GPU (`NAME::cuda`, `#[ignore]`d: `cargo test --
//! --include-ignored` runs it on a machine with a GPU, where a missing GPU is a failure; see
//! docs/testing.md). Inputs are random (seeded), outputs are poisoned (NaN)
//! before the kernels write them, and every result is compared with an independent CPU
//! reference: a gather through the host tensor's strides, or an f64 computation.

use tilekit_ir::tensor::{HostTensor, TensorView};
use tilekit_ir::ScalarType::{self, BF16, F16, F32};
use tilekit_layout::swizzle::TiledMorton;
use tilekit_ops::backend::{Backend, Cuda, Interp};
use tilekit_ops::{api, host, OpsError};

/// The GPU of a test that needs one. Such tests are `#[ignore]`d (the summary counts them) and
/// run with `--include-ignored`; a missing GPU is then a failure, never a skip.
fn cuda() -> Cuda {
    Cuda::open(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU and none opened: {e}"))
}

/// Runs a generic test body on the interpreter and (ignored unless asked for) on the GPU.
macro_rules! on_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn interp() {
                super::$name(&tilekit_ops::backend::Interp);
            }
            #[test]
            #[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
            fn cuda() {
                super::$name(&super::cuda());
            }
        }
    )*};
}

on_backends!(
    copy_views,
    permute_every_rank3,
    transpose_matrices,
    rows,
    row_reductions_every_length,
    softmax_long_rows,
    elementwise_broadcast,
    morton_roundtrip,
    gemm_tiles,
    gemm_hopper_weights,
    gemm_every_layout,
    gemm_stages_operands_tma_cannot_read,
    gemm_batches,
    gemm_batches_in_one_launch,
    gemm_tf32,
    gemm_ex_epilogues,
    gemm_ex_typed_errors,
    typed_errors,
    overlapping_outputs_refused,
    in_place_where_defined,
    empty_dims_as_pytorch,
);

fn random(ty: ScalarType, shape: &[i64], seed: u64) -> HostTensor {
    let n = shape.iter().product::<i64>() as usize;
    let layout = tilekit_ir::tensor::TensorLayout::contiguous(ty, shape.to_vec()).unwrap();
    HostTensor::new(host::random(ty, n, seed).unwrap(), layout).unwrap()
}

/// A NaN-filled tensor on the backend (an output the kernel must overwrite everywhere).
fn poisoned<B: Backend>(b: &B, ty: ScalarType, shape: &[i64]) -> B::Tensor {
    let n = shape.iter().product::<i64>() as usize;
    let layout = tilekit_ir::tensor::TensorLayout::contiguous(ty, shape.to_vec()).unwrap();
    b.from_host(&HostTensor::new(host::poisoned(ty, n).unwrap(), layout).unwrap()).unwrap()
}

fn values(t: &HostTensor) -> Vec<f64> {
    host::to_f64(&t.contiguous().unwrap().buffer().as_ref().clone())
}

fn bits(t: &HostTensor) -> Vec<u8> {
    t.contiguous().unwrap().buffer().as_bytes().to_vec()
}

fn check(what: &str, got: &[f64], want: &[f64], tol: f64) {
    let c = host::compare(got, want, tol);
    assert!(c.passed, "{what}: {} mismatches, max |Δ| {} (tol {tol})", c.mismatches, c.max_abs);
}

fn copy_views<B: Backend>(b: &B) {
    for (i, ty) in [F32, F16, BF16].into_iter().enumerate() {
        let x = random(ty, &[37, 1001], 10 + i as u64);
        let xd = b.from_host(&x).unwrap();
        // contiguous (merged into one dim), narrowed (offset 3, odd), transposed (strided)
        let views = [x.clone(), x.narrow(1, 3, 990).unwrap(), x.transpose(0, 1).unwrap()];
        for (k, hv) in views.iter().enumerate() {
            let dv = match k {
                0 => xd.clone(),
                1 => view(b, &xd, |l| l.narrow(1, 3, 990)),
                _ => view(b, &xd, |l| l.transpose(0, 1)),
            };
            let mut y = poisoned(b, ty, hv.shape());
            api::copy_into(b, &dv, &mut y).unwrap();
            assert_eq!(bits(&b.to_host(&y).unwrap()), bits(hv), "{ty} view {k}");
            let y2 = api::copy(b, &dv).unwrap();
            assert_eq!(bits(&b.to_host(&y2).unwrap()), bits(hv), "{ty} view {k} (allocated)");
        }
    }
}

/// A view of a backend tensor: the same storage under a new layout (the data stays where it
/// is), through the backend-agnostic `TensorView`.
fn view<B: Backend>(
    _b: &B,
    t: &B::Tensor,
    f: impl Fn(
        &tilekit_ir::tensor::TensorLayout,
    ) -> tilekit_ir::tensor::Result<tilekit_ir::tensor::TensorLayout>,
) -> B::Tensor {
    t.with_layout(f(TensorView::layout(t)).unwrap()).unwrap()
}

fn permute_every_rank3<B: Backend>(b: &B) {
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for (i, ty) in [F32, BF16].into_iter().enumerate() {
        let x = random(ty, &[5, 33, 17], 20 + i as u64);
        let xd = b.from_host(&x).unwrap();
        for p in perms {
            let want = x.permute(&p).unwrap();
            let y = api::permute(b, &xd, &p).unwrap();
            assert_eq!(b.to_host(&y).unwrap().shape(), want.shape());
            assert_eq!(bits(&b.to_host(&y).unwrap()), bits(&want), "{ty} perm {p:?}");
            // into a poisoned output, from a strided (transposed) input
            let xt = view(b, &xd, |l| l.transpose(0, 2));
            let want_t = x.transpose(0, 2).unwrap().permute(&p).unwrap();
            let mut yt = poisoned(b, ty, want_t.shape());
            api::permute_into(b, &xt, &p, &mut yt).unwrap();
            assert_eq!(bits(&b.to_host(&yt).unwrap()), bits(&want_t), "{ty} perm {p:?} of x^T");
        }
    }
}

fn transpose_matrices<B: Backend>(b: &B) {
    for (shape, ty) in [([70, 33], F32), ([130, 257], F16), ([64, 64], BF16), ([1, 9], F32)] {
        let x = random(ty, &shape, 30);
        let y = api::transpose(b, &b.from_host(&x).unwrap()).unwrap();
        assert_eq!(bits(&b.to_host(&y).unwrap()), bits(&x.transpose(0, 1).unwrap()), "{shape:?}");
    }
    // batched: the last two dims of a rank-3 tensor
    let x = random(F32, &[3, 40, 50], 31);
    let y = api::transpose(b, &b.from_host(&x).unwrap()).unwrap();
    assert_eq!(bits(&b.to_host(&y).unwrap()), bits(&x.permute(&[0, 2, 1]).unwrap()));
}

fn row_refs(x: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut s, mut mx, mut sm) = (vec![0.0; m], vec![f64::NEG_INFINITY; m], vec![0.0; m * n]);
    for r in 0..m {
        let row = &x[r * n..(r + 1) * n];
        s[r] = row.iter().sum();
        mx[r] = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = row.iter().map(|v| (v - mx[r]).exp()).sum();
        for c in 0..n {
            sm[r * n + c] = (row[c] - mx[r]).exp() / z;
        }
    }
    (s, mx, sm)
}

/// Row sum and max across the kernels' boundaries (a warp a row up to 256 16-byte pieces, a
/// block a row past it, a row split over blocks when rows are fewer than SMs), rows that do not
/// fill the last block of 8, padded row strides.
fn row_reductions_every_length<B: Backend>(b: &B) {
    for (i, ty) in [F32, BF16].into_iter().enumerate() {
        let w = tilekit_ops::reduce::warp_rows::max_row(ty);
        for (k, (m, n)) in
            [(1, 1), (3, 7), (13, 100), (9, w - 1), (17, w), (5, w + 1), (2, 3 * w + 5)]
                .into_iter()
                // few long rows: split over blocks (the interpreter has 4 SMs)
                .chain([(1, 70001), (3, 40003), (2, 9 * w)])
                .enumerate()
        {
            let x = random(ty, &[m, n + 3], 80 + 10 * i as u64 + k as u64);
            let xd = b.from_host(&x).unwrap();
            let hv = x.narrow(1, 2, n).unwrap(); // row stride n + 3, odd offset
            let dv = view(b, &xd, |l| l.narrow(1, 2, n));
            let (s, mx, _) = row_refs(&values(&hv), m as usize, n as usize);
            let mut ys = poisoned(b, F32, &[m]);
            api::row_sum_into(b, &dv, &mut ys).unwrap();
            check(
                &format!("row_sum {ty} {m}x{n}"),
                &values(&b.to_host(&ys).unwrap()),
                &s,
                1e-4 * (1.0 + (n as f64).sqrt()),
            );
            let ym = api::row_max(b, &dv).unwrap();
            check(&format!("row_max {ty} {m}x{n}"), &values(&b.to_host(&ym).unwrap()), &mx, 0.0);
        }
    }
}

fn rows<B: Backend>(b: &B) {
    for (i, ty) in [F32, BF16].into_iter().enumerate() {
        let x = random(ty, &[7, 1024], 40 + i as u64);
        let xd = b.from_host(&x).unwrap();
        // contiguous rows, and a narrowed view (offset 3, 1000 columns: scalar loads)
        for (hv, dv) in [
            (x.clone(), xd.clone()),
            (x.narrow(1, 3, 1000).unwrap(), view(b, &xd, |l| l.narrow(1, 3, 1000))),
        ] {
            let (m, n) = (hv.shape()[0] as usize, hv.shape()[1] as usize);
            let (s, mx, sm) = row_refs(&values(&hv), m, n);
            let mut ys = poisoned(b, F32, &[m as i64]);
            api::row_sum_into(b, &dv, &mut ys).unwrap();
            check("row_sum", &values(&b.to_host(&ys).unwrap()), &s, 1e-4);
            let ym = api::row_max(b, &dv).unwrap();
            check("row_max", &values(&b.to_host(&ym).unwrap()), &mx, 0.0);
            let mut y = poisoned(b, ty, hv.shape());
            api::softmax_into(b, &dv, &mut y).unwrap();
            let tol = if ty == F32 { 1e-5 } else { 1.0 / 256.0 };
            let got = values(&b.to_host(&y).unwrap());
            let c = host::compare(&got, &sm, 0.0);
            assert!(c.max_abs <= tol, "softmax {ty}: max |Δ| {}", c.max_abs);
        }
    }
    // rank 3: rows are every dim but the last
    let x = random(F32, &[2, 3, 100], 45);
    let s = api::row_sum(b, &b.from_host(&x).unwrap()).unwrap();
    let h = b.to_host(&s).unwrap();
    assert_eq!(h.shape(), &[2, 3]);
    check("row_sum rank 3", &values(&h), &row_refs(&values(&x), 6, 100).0, 1e-4);
}

/// `api::softmax` of `rows × n` random values (seed `seed`) on `b`, every element against the
/// f64 reference (elements of a long row are small, ≈ 1/n: relative to each reference value,
/// 1e-4 for f32, 2⁻⁷ for 16-bit); returns the results.
fn long_softmax_checked<B: Backend>(
    b: &B,
    ty: ScalarType,
    (rows, n): (i64, i64),
    seed: u64,
    what: &str,
) -> Vec<f64> {
    let x = random(ty, &[rows, n], seed);
    let y = api::softmax(b, &b.from_host(&x).unwrap()).unwrap();
    let want = row_refs(&values(&x), rows as usize, n as usize).2;
    let got = values(&b.to_host(&y).unwrap());
    let rtol = if ty == F32 { 1e-4 } else { 1.0 / 128.0 };
    let worst =
        got.iter().zip(&want).map(|(g, w)| (g - w).abs() / (w.abs() + 1e-30)).fold(0.0, f64::max);
    assert!(worst <= rtol, "{what}softmax {rows}×{n} {ty}: max relative error {worst}");
    got
}

fn softmax_long_rows<B: Backend>(b: &B) {
    for (i, ty) in [F32, BF16].into_iter().enumerate() {
        // where the device's table splits long rows over cooperating blocks (H100, H200),
        // rows of 65536 + 3 and 262144 take that path too (staged, coop in shared memory)
        let lens: &[i64] = if b.tuning().softmax_coop_for(ty).is_some() {
            &[20001, 65539, 262144]
        } else {
            &[20001]
        };
        for &n in lens {
            let got = long_softmax_checked(b, ty, (3, n), 50 + i as u64 + n as u64, "");
            for r in 0..3 {
                let row: f64 = got[r * n as usize..(r + 1) * n as usize].iter().sum();
                assert!((row - 1.0).abs() < 1e-2, "row {r} of 3×{n} {ty} sums to {row}");
            }
        }
    }
}

/// The counter kernels (coop smem, not clusters: the plain, one-exponential and speculated
/// shapes) on one backend, call after call with 5, 2, 9 and 5 rows of 5 and 10 blocks: each
/// call against the reference, and the backend's kept counters all zero after them (the
/// kernels wrap their tickets and row counters back; a call that left one raised would make
/// the next one's blocks take wrong rows or pass their waits early).
fn softmax_counters_are_reused<B: Backend>(b: &B) {
    for (i, (ty, n)) in [(F32, 20001i64), (BF16, 33000), (F32, 40000)].into_iter().enumerate() {
        for (j, rows) in [5i64, 2, 9, 5].into_iter().enumerate() {
            let seed = 90 + 10 * i as u64 + j as u64;
            long_softmax_checked(b, ty, (rows, n), seed, &format!("call {j}: "));
        }
    }
    let kept = b.counters(16).unwrap();
    assert!(b.to_vec::<u32>(&kept).unwrap().iter().all(|&c| c == 0), "counters left raised");
}

fn counter_tuning(shape: tilekit_ops::reduce::CoopTuning) -> tilekit_ops::tuning::Tuning {
    tilekit_ops::tuning::Tuning {
        softmax_coop: Some(shape),
        softmax_coop_16bit: Some(shape),
        softmax_staged: None,
        ..tilekit_ops::tuning::Tuning::default()
    }
}

/// The counter shapes [`softmax_counters_are_reused`] runs: 128 threads × 16 elements a step
/// into 16 KiB slices (f32 20001: 5 blocks a row, bf16 33000: 5, f32 40000: 10), plain, with
/// one exponential, with the ticket speculated, and with 2 vectors a thread held in registers
/// (f32 20001: 4 blocks a row, bf16 33000: 4, f32 40000: 8).
fn counter_shapes() -> Vec<tilekit_ops::reduce::CoopTuning> {
    let c = tilekit_ops::reduce::CoopTuning::in_shared(128, 16, 16);
    vec![c, c.with_one_exp(), c.with_spec(), c.with_one_exp().with_spec(), c.with_held(2)]
}

mod softmax_counters {
    #[test]
    fn interp() {
        for c in super::counter_shapes() {
            let b = tilekit_ops::backend::TunedInterp(super::counter_tuning(c));
            super::softmax_counters_are_reused(&b);
        }
    }
    #[test]
    #[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
    fn cuda() {
        let g = super::cuda();
        for c in super::counter_shapes() {
            super::softmax_counters_are_reused(&g.with_tuning(super::counter_tuning(c)));
        }
    }
}

fn round(ty: ScalarType, v: f64) -> f64 {
    let t = HostTensor::new(
        tilekit_ir::interp::HostBuffer::from_bytes(ty, {
            let bits = host::round_bits(ty, v);
            bits.to_le_bytes()[..ty.size_bytes()].to_vec()
        })
        .unwrap(),
        tilekit_ir::tensor::TensorLayout::contiguous(ty, vec![1]).unwrap(),
    )
    .unwrap();
    values(&t)[0]
}

fn elementwise_broadcast<B: Backend>(b: &B) {
    let cases: [(&[i64], &[i64]); 4] =
        [(&[33, 70], &[33, 70]), (&[33, 70], &[70]), (&[33, 70], &[33, 1]), (&[4, 5, 6], &[5, 1])];
    for (i, ty) in [F32, F16, BF16].into_iter().enumerate() {
        for (sa, sb) in cases {
            let (a, z) = (random(ty, sa, 60 + i as u64), random(ty, sb, 70 + i as u64));
            let (ad, zd) = (b.from_host(&a).unwrap(), b.from_host(&z).unwrap());
            let shape = api::broadcast_shape(sa, sb).unwrap();
            let (av, zv) = (
                values(&a.broadcast_to(&shape).unwrap()),
                values(&z.broadcast_to(&shape).unwrap()),
            );
            type F = fn(f64, f64) -> f64;
            let ops: [(&str, F); 3] =
                [("add", |p, q| p + q), ("mul", |p, q| p * q), ("max", f64::max)];
            for (name, f) in ops {
                let y = match name {
                    "add" => api::add(b, &ad, &zd),
                    "mul" => api::mul(b, &ad, &zd),
                    _ => api::maximum(b, &ad, &zd),
                }
                .unwrap();
                let want: Vec<f64> =
                    av.iter().zip(&zv).map(|(&p, &q)| round(ty, f(p, q))).collect();
                let h = b.to_host(&y).unwrap();
                assert_eq!(h.shape(), &shape[..]);
                check(&format!("{name} {ty} {sa:?}·{sb:?}"), &values(&h), &want, 0.0);
            }
        }
    }
    // a strided (transposed) first operand
    let a = random(F32, &[40, 30], 80);
    let z = random(F32, &[30, 40], 81);
    let at = view(b, &b.from_host(&a).unwrap(), |l| l.transpose(0, 1));
    let y = api::add(b, &at, &b.from_host(&z).unwrap()).unwrap();
    let want: Vec<f64> = values(&a.transpose(0, 1).unwrap())
        .iter()
        .zip(values(&z))
        .map(|(p, q)| round(F32, p + q))
        .collect();
    check("add of a transposed view", &values(&b.to_host(&y).unwrap()), &want, 0.0);
}

fn morton_roundtrip<B: Backend>(b: &B) {
    for (shape, t, ty) in [([37i64, 61i64], 4, F32), ([64, 64], 8, BF16), ([9, 17], 4, F16)] {
        let x = random(ty, &shape, 90);
        let s = api::morton(b, &b.from_host(&x).unwrap(), t).unwrap();
        let geo = TiledMorton::new(shape[0], shape[1], t).unwrap();
        let sv = values(&b.to_host(&s).unwrap());
        let xv = values(&x);
        for r in 0..shape[0] {
            for c in 0..shape[1] {
                let got = sv[geo.offset(r, c) as usize];
                assert_eq!(got.to_bits(), xv[(r * shape[1] + c) as usize].to_bits(), "({r}, {c})");
            }
        }
        let back = api::unmorton(b, &s, shape[0], shape[1], t).unwrap();
        assert_eq!(bits(&b.to_host(&back).unwrap()), bits(&x));
    }
}

fn gemm_tiles<B: Backend>(b: &B) {
    for ty in [F16, BF16] {
        let (m, n, k) = (128, 64, 96);
        let (a, z) = (random(ty, &[m, k], 100), random(ty, &[k, n], 101));
        let c = api::gemm(b, &b.from_host(&a).unwrap(), &b.from_host(&z).unwrap()).unwrap();
        let want = tilekit_ops::gemm::reference(
            &values(&a)[..],
            &values(&z)[..],
            m as usize,
            n as usize,
            k as usize,
        )
        .unwrap();
        check(
            &format!("gemm {ty}"),
            &values(&b.to_host(&c).unwrap()),
            &want,
            tilekit_ops::gemm::gemm_tolerance(k),
        );
    }
}

/// `A · Wᵀ` with W stored `N × K` (a linear layer's weight) passed as the view `w.t()`: the
/// Hopper kernel's layout (TMA + wgmma, persistent), ragged in M, N and K — on the interpreter
/// and on an sm_90 GPU — against an f64 reference (the mma.sync path refuses these shapes, so a
/// pass can only come from the Hopper kernel).
fn gemm_hopper_weights<B: Backend>(b: &B) {
    for (ty, (m, n, k)) in [(BF16, (200, 136, 72)), (F16, (130, 66, 200))] {
        let (a, w) = (random(ty, &[m, k], 110), random(ty, &[n, k], 111));
        let wt = view(b, &b.from_host(&w).unwrap(), |l| l.transpose(0, 1));
        let mut c = poisoned(b, F32, &[m, n]);
        api::gemm_into(b, &b.from_host(&a).unwrap(), &wt, &mut c).unwrap();
        let (av, wv) = (values(&a), values(&w));
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let want: Vec<f64> = (0..mu * nu)
            .map(|ij| (0..ku).map(|x| av[ij / nu * ku + x] * wv[ij % nu * ku + x]).sum())
            .collect();
        check(
            &format!("gemm {ty} A·Wᵀ {m}x{n}x{k}"),
            &values(&b.to_host(&c).unwrap()),
            &want,
            tilekit_ops::gemm::gemm_tolerance(k),
        );
    }
}

/// An `r × c` operand as a view of random storage: row-major, or (`transposed`) the
/// transpose of a row-major `c × r` tensor (unit row stride); with its values in logical order.
fn operand<B: Backend>(
    b: &B,
    ty: ScalarType,
    (r, c): (i64, i64),
    transposed: bool,
    seed: u64,
) -> (B::Tensor, Vec<f64>) {
    if transposed {
        let t = random(ty, &[c, r], seed);
        let v = values(&t.transpose(0, 1).unwrap());
        (view(b, &b.from_host(&t).unwrap(), |l| l.transpose(0, 1)), v)
    } else {
        let t = random(ty, &[r, c], seed);
        let v = values(&t);
        (b.from_host(&t).unwrap(), v)
    }
}

/// All four transposes of A and B (row-major B included: "NN") on the Hopper kernel, M, N, K
/// off its tiles and off the mma.sync tiles (so only the Hopper kernel can pass), vs f64.
fn gemm_every_layout<B: Backend>(b: &B) {
    for (i, (ty, (m, n, k))) in
        [(BF16, (136, 72, 80)), (F16, (64, 200, 88))].into_iter().enumerate()
    {
        for (j, (a_t, b_t)) in
            [(false, false), (false, true), (true, false), (true, true)].into_iter().enumerate()
        {
            let seed = 120 + 10 * i as u64 + 2 * j as u64;
            let (a, av) = operand(b, ty, (m, k), a_t, seed);
            let (z, zv) = operand(b, ty, (k, n), b_t, seed + 1);
            let c = api::gemm(b, &a, &z).unwrap();
            let (mu, nu, ku) = (m as usize, n as usize, k as usize);
            let want: Vec<f64> = (0..mu * nu)
                .map(|ij| (0..ku).map(|x| av[ij / nu * ku + x] * zv[x * nu + ij % nu]).sum())
                .collect();
            check(
                &format!(
                    "gemm {ty} {m}x{n}x{k} A{} B{}",
                    ["", "ᵀ"][a_t as usize],
                    ["", "ᵀ"][b_t as usize]
                ),
                &values(&b.to_host(&c).unwrap()),
                &want,
                tilekit_ops::gemm::gemm_tolerance(k),
            );
        }
    }
}

/// Operands the tensor maps cannot read where they lie are staged through padded copies: A
/// with a row pitch of 75 f16 (150 bytes), B = Wᵀ with W's pitch 75, a B narrowed to start at
/// element 1 (misaligned), a C with an odd row pitch (65 f32) computed in a padded buffer and
/// copied back — and `gemm_ex` with beta ≠ 0 into such a C (its values staged in first), vs
/// f64. Elements of C's storage outside the view stay untouched.
fn gemm_stages_operands_tma_cannot_read<B: Backend>(b: &B) {
    use tilekit_ops::api::GemmOptions;
    let (m, n, k) = (70i64, 65i64, 75i64);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let a = b.from_host(&random(F16, &[m, k], 160)).unwrap();
    let av = values(&b.to_host(&a).unwrap());
    let w = random(F16, &[n, k], 161);
    let wv = values(&w);
    let bt = view(b, &b.from_host(&w).unwrap(), |l| l.transpose(0, 1));
    // C: the first 65 columns of a 70 × 67 buffer poisoned with NaN (pitch 67, odd)
    let c_full = poisoned(b, F32, &[m, n + 2]);
    let mut c = view(b, &c_full, |l| l.narrow(1, 0, n));
    api::gemm_into(b, &a, &bt, &mut c).unwrap();
    let want: Vec<f64> = (0..mu * nu)
        .map(|ij| (0..ku).map(|x| av[ij / nu * ku + x] * wv[ij % nu * ku + x]).sum())
        .collect();
    let tol = tilekit_ops::gemm::gemm_tolerance(k);
    check("gemm staged (pitches 75, C pitch 67)", &values(&b.to_host(&c).unwrap()), &want, tol);
    let full = values(&b.to_host(&c_full).unwrap());
    assert!((0..mu).all(|r| full[r * (nu + 2) + nu].is_nan()), "C's pad columns were written");

    // a B whose first element is 2 bytes past a 16-byte boundary: K × N at offset 1
    let wide = random(F16, &[k, n + 1], 162);
    let zv: Vec<f64> = values(&wide.narrow(1, 1, n).unwrap());
    let z = view(b, &b.from_host(&wide).unwrap(), |l| l.narrow(1, 1, n));
    let c2 = api::gemm(b, &a, &z).unwrap();
    let want2: Vec<f64> = (0..mu * nu)
        .map(|ij| (0..ku).map(|x| av[ij / nu * ku + x] * zv[x * nu + ij % nu]).sum())
        .collect();
    check("gemm staged (B at offset 1)", &values(&b.to_host(&c2).unwrap()), &want2, tol);

    // beta ≠ 0 into the odd-pitch C: its values are staged in, then the result copied back
    let before = values(&b.to_host(&c).unwrap());
    api::gemm_ex(b, &a, &bt, &mut c, &GemmOptions::new().alpha(0.5).beta(-2.0)).unwrap();
    let want3: Vec<f64> = want.iter().zip(&before).map(|(p, c0)| 0.5 * p - 2.0 * c0).collect();
    check("gemm_ex staged C, beta -2", &values(&b.to_host(&c).unwrap()), &want3, 3.0 * tol);
}

/// f32 operands on the tensor cores as tf32 (opt-in): A row-major, B row-major (staged into a
/// K-major copy: tf32 wgmma has no transpose), a ReLU epilogue; vs f64 of the operands with
/// their low 13 mantissa bits cleared (what tf32 reads). Without the opt-in: a typed error.
fn gemm_tf32<B: Backend>(b: &B) {
    use tilekit_ops::api::{Activation, GemmOptions};
    let (m, n, k) = (200i64, 136i64, 96i64);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let a = random(F32, &[m, k], 180);
    let z = random(F32, &[k, n], 181);
    let t = |x: f64| f64::from(f32::from_bits((x as f32).to_bits() & !0x1fff));
    let (av, zv): (Vec<f64>, Vec<f64>) =
        (values(&a).into_iter().map(t).collect(), values(&z).into_iter().map(t).collect());
    let (ad, zd) = (b.from_host(&a).unwrap(), b.from_host(&z).unwrap());
    let mut c = poisoned(b, F32, &[m, n]);
    let opts = GemmOptions::new().tf32(true).activation(Activation::Relu);
    api::gemm_ex(b, &ad, &zd, &mut c, &opts).unwrap();
    let want: Vec<f64> = (0..mu * nu)
        .map(|ij| {
            (0..ku).map(|x| av[ij / nu * ku + x] * zv[x * nu + ij % nu]).sum::<f64>().max(0.0)
        })
        .collect();
    check("gemm tf32", &values(&b.to_host(&c).unwrap()), &want, 1e-4);
    let e = api::gemm_ex(b, &ad, &zd, &mut c, &GemmOptions::new()).unwrap_err().to_string();
    assert!(e.contains("GemmOptions::tf32(true)"), "{e}");
}

/// Strided batches through `api::gemm_batched_into`: 3 entries of 70 × 40 × 48 bf16 with B
/// shared (batch length 1) and A's entries strided apart by more than a matrix, into a bf16 C
/// with alpha; and f32 inputs (the CUDA-core kernel) with a transposed B per entry; vs f64.
fn gemm_batches<B: Backend>(b: &B) {
    use tilekit_ops::api::GemmOptions;
    let (batch, m, n, k) = (3i64, 70i64, 40i64, 48i64);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    // A: the first 70 rows of each of 3 slabs of 72 rows (entries 72·48 elements apart)
    let a_full = random(BF16, &[batch, m + 2, k], 170);
    let afv = values(&a_full);
    let a = view(b, &b.from_host(&a_full).unwrap(), |l| l.narrow(1, 0, m));
    let w = random(BF16, &[1, k, n], 171);
    let wv = values(&w);
    let z = b.from_host(&w).unwrap();
    let mut c = poisoned(b, BF16, &[batch, m, n]);
    api::gemm_batched_into(b, &a, &z, &mut c, &GemmOptions::new().alpha(0.5)).unwrap();
    let want: Vec<f64> = (0..batch as usize * mu * nu)
        .map(|e| {
            let (s, i, j) = (e / (mu * nu), e / nu % mu, e % nu);
            0.5 * (0..ku).map(|x| afv[(s * (mu + 2) + i) * ku + x] * wv[x * nu + j]).sum::<f64>()
        })
        .collect();
    check("gemm batched bf16", &values(&b.to_host(&c).unwrap()), &want, 1.0 / 64.0);

    // f32: B stored N × K per entry and passed transposed
    let a32 = random(F32, &[batch, m, k], 172);
    let w32 = random(F32, &[batch, n, k], 173);
    let (av, wv) = (values(&a32), values(&w32));
    let zt = view(b, &b.from_host(&w32).unwrap(), |l| l.transpose(1, 2));
    let mut c32 = poisoned(b, F32, &[batch, m, n]);
    let a32d = b.from_host(&a32).unwrap();
    api::gemm_batched_into(b, &a32d, &zt, &mut c32, &GemmOptions::new()).unwrap();
    let want32: Vec<f64> = (0..batch as usize * mu * nu)
        .map(|e| {
            let (s, i, j) = (e / (mu * nu), e / nu % mu, e % nu);
            (0..ku).map(|x| av[(s * mu + i) * ku + x] * wv[(s * nu + j) * ku + x]).sum::<f64>()
        })
        .collect();
    check("gemm batched f32", &values(&b.to_host(&c32).unwrap()), &want32, 1e-4);
}

/// Strided batches as one launch of the batched Hopper kernel (`gemm_batched_into`), 3 entries
/// of 130 × 72 × 80 bf16 (edge tiles in M, N and K): A MN-major (each entry stored K × M) with
/// B row-major into a NaN-poisoned f32 C with an f32 bias and ReLU; B one shared K-major entry
/// (`Wᵀ`) into a random bf16 C with alpha and beta; and A's entries 4 elements further apart
/// than a matrix (8 bytes: no tensor map over the batch, one launch per entry) — vs f64.
fn gemm_batches_in_one_launch<B: Backend>(b: &B) {
    use tilekit_ir::tensor::TensorLayout;
    use tilekit_ops::api::{Activation, GemmOptions};
    let (batch, m, n, k) = (3i64, 130i64, 72i64, 80i64);
    let (bu, mu, nu, ku) = (batch as usize, m as usize, n as usize, k as usize);
    // C[e][i][j] = f(Σ_x A[e][i][x]·B[e or 0][x][j], e·M·N + i·N + j, j) on logical views
    let reference = |a: &HostTensor, w: &HostTensor, f: &dyn Fn(f64, usize, usize) -> f64| {
        let (av, wv) = (values(a), values(w));
        let shared = w.shape()[0] == 1;
        (0..bu * mu * nu)
            .map(|e| {
                let (s, i, j) = (e / (mu * nu), e / nu % mu, e % nu);
                let sw = if shared { 0 } else { s };
                let p = (0..ku).map(|x| av[(s * mu + i) * ku + x] * wv[(sw * ku + x) * nu + j]);
                f(p.sum::<f64>(), e, j)
            })
            .collect::<Vec<f64>>()
    };
    // A MN-major, B row-major (MN-major), f32 C, bias + ReLU
    let a_st = random(BF16, &[batch, k, m], 180);
    let a_h = a_st.transpose(1, 2).unwrap();
    let a = view(b, &b.from_host(&a_st).unwrap(), |l| l.transpose(1, 2));
    let w = random(BF16, &[batch, k, n], 181);
    let bias = random(F32, &[n], 182);
    let bv = values(&bias);
    let mut c = poisoned(b, F32, &[batch, m, n]);
    let bias_d = b.from_host(&bias).unwrap();
    let opts = GemmOptions::new().bias(&bias_d).activation(Activation::Relu);
    api::gemm_batched_into(b, &a, &b.from_host(&w).unwrap(), &mut c, &opts).unwrap();
    let want = reference(&a_h, &w, &|p, _, j| (p + bv[j]).max(0.0));
    check("batched MN-major A, bias, relu", &values(&b.to_host(&c).unwrap()), &want, 1e-3);

    // one shared B = Wᵀ (K-major), a random bf16 C read with beta, alpha
    let a2 = random(BF16, &[batch, m, k], 183);
    let w_st = random(BF16, &[1, n, k], 184);
    let w_h = w_st.transpose(1, 2).unwrap();
    let wd = view(b, &b.from_host(&w_st).unwrap(), |l| l.transpose(1, 2));
    let c0 = random(BF16, &[batch, m, n], 185);
    let c_old = values(&c0);
    let mut c2 = b.from_host(&c0).unwrap();
    let opts = GemmOptions::new().alpha(2.0).beta(0.5);
    api::gemm_batched_into(b, &b.from_host(&a2).unwrap(), &wd, &mut c2, &opts).unwrap();
    let want = reference(&a2, &w_h, &|p, e, _| 2.0 * p + 0.5 * c_old[e]);
    check("batched shared Wᵀ, alpha, beta", &values(&b.to_host(&c2).unwrap()), &want, 1.0 / 16.0);

    // entries 8 bytes further apart than a matrix: per-entry launches, the same products
    let stride = m * k + 4;
    let flat = random(BF16, &[batch * stride], 186);
    let odd = |l: &TensorLayout| {
        TensorLayout::strided(l.dtype(), vec![batch, m, k], vec![stride, k, 1], 0)
    };
    let a3_h = flat.with_layout(odd(flat.layout()).unwrap()).unwrap();
    let a3 = view(b, &b.from_host(&flat).unwrap(), odd);
    let w3 = random(BF16, &[batch, k, n], 187);
    let mut c3 = poisoned(b, F32, &[batch, m, n]);
    api::gemm_batched_into(b, &a3, &b.from_host(&w3).unwrap(), &mut c3, &GemmOptions::new())
        .unwrap();
    let want = reference(&a3_h, &w3, &|p, _, _| p);
    check("batched, unaligned batch stride", &values(&b.to_host(&c3).unwrap()), &want, 1e-3);
}

/// `act(alpha·A·B + beta·C + bias)` through `api::gemm_ex`: bf16 C read (beta ≠ 0) and
/// written with an f32 bias and GELU (A transposed, B row-major); f32 C poisoned with NaN and
/// beta = 0 (C never read) with ReLU (B = Wᵀ); bf16 C with a bf16 bias (both transposed); vs
/// f64.
fn gemm_ex_epilogues<B: Backend>(b: &B) {
    use tilekit_ops::api::{Activation, GemmOptions};
    let (m, n, k) = (136, 72, 80);
    for (case, (out, bias_ty, a_t, b_t, beta, act)) in [
        (BF16, F32, true, false, 0.5f32, Activation::Gelu),
        (F32, F32, false, true, 0.0, Activation::Relu),
        (BF16, BF16, true, true, -1.5, Activation::Relu),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 140 + 10 * case as u64;
        let (a, av) = operand(b, BF16, (m, k), a_t, seed);
        let (z, zv) = operand(b, BF16, (k, n), b_t, seed + 1);
        let bias_h = random(bias_ty, &[n], seed + 2);
        let bias = b.from_host(&bias_h).unwrap();
        let c_h = random(out, &[m, n], seed + 3);
        let mut c =
            if beta == 0.0 { poisoned(b, out, &[m, n]) } else { b.from_host(&c_h).unwrap() };
        let alpha = 1.25f32;
        let opts = GemmOptions::new().alpha(alpha).beta(beta).bias(&bias).activation(act);
        api::gemm_ex(b, &a, &z, &mut c, &opts).unwrap();
        let (cv, bv) = (values(&c_h), values(&bias_h));
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let want: Vec<f64> = (0..mu * nu)
            .map(|ij| {
                let p: f64 = (0..ku).map(|x| av[ij / nu * ku + x] * zv[x * nu + ij % nu]).sum();
                let old = if beta == 0.0 { 0.0 } else { beta as f64 * cv[ij] };
                act.apply(alpha as f64 * p + old + bv[ij % nu])
            })
            .collect();
        assert!(want.iter().filter(|v| **v > 0.5).count() > mu * nu / 8);
        let tol = tilekit_ops::gemm::gemm_tolerance(k) * 2.0 + if out == F32 { 0.0 } else { 0.1 };
        check(&format!("gemm_ex {out} {act:?}"), &values(&b.to_host(&c).unwrap()), &want, tol);
    }
}

fn gemm_ex_typed_errors<B: Backend>(b: &B) {
    use tilekit_ops::api::GemmOptions;
    let (a, _) = operand(b, BF16, (64, 32), false, 150);
    let (z, _) = operand(b, BF16, (32, 48), false, 151);
    let mut c = poisoned(b, BF16, &[64, 48]);
    let short = b.from_host(&random(F32, &[40], 152)).unwrap();
    let e = api::gemm_ex(b, &a, &z, &mut c, &GemmOptions::new().bias(&short)).unwrap_err();
    assert!(e.to_string().contains("bias shape") && e.to_string().contains("[48]"), "{e}");
    let f16_bias = b.from_host(&random(F16, &[48], 153)).unwrap();
    let e = api::gemm_ex(b, &a, &z, &mut c, &GemmOptions::new().bias(&f16_bias)).unwrap_err();
    assert!(e.to_string().contains("bias type") && e.to_string().contains("f16"), "{e}");
    let mut c16 = poisoned(b, F16, &[64, 48]);
    let e = api::gemm_ex(b, &a, &z, &mut c16, &GemmOptions::new()).unwrap_err();
    assert!(e.to_string().contains("C type") && e.to_string().contains("f32 or bf16"), "{e}");
    let mut wrong = poisoned(b, F32, &[48, 64]);
    let e = api::gemm_ex(b, &a, &z, &mut wrong, &GemmOptions::new()).unwrap_err();
    assert!(e.to_string().contains("[64, 48]"), "{e}");
}

fn typed_errors<B: Backend>(b: &B) {
    let x = b.from_host(&random(F32, &[4, 8], 1)).unwrap();
    let xi = b.from_host(&HostTensor::from_slice(&[1i32; 32], &[4, 8]).unwrap()).unwrap();
    let e = api::softmax(b, &xi).unwrap_err().to_string();
    assert!(e.contains("i32"), "{e}");
    let mut wrong = poisoned(b, F32, &[8, 4]);
    let e = api::copy_into(b, &x, &mut wrong).unwrap_err().to_string();
    assert!(e.contains("[8, 4]") && e.contains("[4, 8]"), "{e}");
    let mut wrong_ty = poisoned(b, F16, &[4, 8]);
    assert!(matches!(api::copy_into(b, &x, &mut wrong_ty), Err(OpsError::DtypeMismatch { .. })));
    let e = api::add(b, &x, &b.from_host(&random(F32, &[3], 2)).unwrap()).unwrap_err().to_string();
    assert!(e.contains("[4, 8] and [3]"), "{e}");
    let h = b.from_host(&random(F16, &[64, 32], 3)).unwrap();
    let e = api::gemm(b, &h, &h).unwrap_err().to_string();
    assert!(e.contains("inner dims"), "{e}");
    // f32 runs on the CUDA cores; an f32 A with an f16 B is a dtype error naming both
    let e = api::gemm(b, &x, &h).unwrap_err().to_string();
    assert!(e.contains("f32") && e.contains("f16"), "{e}");
}

#[test]
fn bindings_refuse_a_misaligned_view() {
    use tilekit_ops::{bind::Bindings, compiled::CompiledKernel, copy};
    // a copy kernel built for 4-vectors cannot read a view starting at element 1
    let k = CompiledKernel::new(copy::build(F32, 4, 4).unwrap());
    let x = random(F32, &[1, 4, 16], 5);
    let xv = x.narrow(2, 1, 12).unwrap();
    let e = Bindings::<Interp>::new(&k).input("x", &xv, &Interp).unwrap_err().to_string();
    assert!(e.contains("4-element vectors") && e.contains("offset 1"), "{e}");
    // and too many elements for the 32-bit index type
    let big = tilekit_ir::tensor::TensorLayout::strided(F32, vec![1, 2, 4], vec![0, 1 << 31, 1], 0);
    if let Ok(l) = big {
        let info = &k.kernel().tensors[0];
        let e = tilekit_ops::bind::check_tensor("copy", info, ScalarType::I32, &l, 0).unwrap_err();
        assert!(e.to_string().contains("32-bit"), "{e}");
    }
}

#[test]
fn kernels_are_built_once_per_configuration() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    // the same call twice launches the very same kernel object (the process cache's), not a
    // rebuilt equal one
    let rec = Record::new();
    let x = LayoutTensor::contiguous(F32, &[3, 64]).unwrap();
    let mut y = LayoutTensor::contiguous(F32, &[3]).unwrap();
    api::row_sum_into(&rec, &x, &mut y).unwrap();
    api::row_sum_into(&rec, &x, &mut y).unwrap();
    let l = rec.take();
    assert!(std::ptr::eq(l[0].kernel.kernel(), l[1].kernel.kernel()));
}

#[test]
fn large_contiguous_tensors_fit_the_grid_limits() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    // 16384² f32 is 2²¹ rows of 128: 65536 blocks of 32 rows, one over the y limit, unless the
    // rows are widened (found on the H200 bench: copy and add failed at launch)
    let rec = Record::new();
    for (shape, ty) in
        [(vec![16384i64, 16384], F32), (vec![1 << 15, 1 << 15], BF16), (vec![3, 1 << 28], F16)]
    {
        let x = LayoutTensor::contiguous(ty, &shape).unwrap();
        let mut y = LayoutTensor::contiguous(ty, &shape).unwrap();
        api::copy_into(&rec, &x, &mut y).unwrap();
        api::binary_op_into(&rec, tilekit_ops::elementwise::Binary::Add, &x, &x, &mut y).unwrap();
    }
    let launches = rec.take();
    assert_eq!(launches.len(), 6);
    for l in launches {
        let [gx, gy, gz] = l.grid;
        assert!(
            gy <= 65535 && gz <= 65535 && gx >= 1,
            "{} grid {:?}",
            l.kernel.kernel().name,
            l.grid
        );
    }
}

#[test]
fn grids_over_the_y_limit_are_split_into_launches() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    // a transpose whose plane has 2^22 + 160 rows (65538 tiles of 64 in grid y) and a strided
    // copy of 2.1 M rows (65625 tiles of 32): two launches each, every grid within the limits
    let rec = Record::new();
    let x = LayoutTensor::contiguous(F32, &[4_194_400, 2]).unwrap();
    api::transpose(&rec, &x).unwrap();
    let wide = LayoutTensor::contiguous(F32, &[2_100_000, 4]).unwrap();
    let narrow = LayoutTensor::new(wide.layout().narrow(1, 0, 3).unwrap(), 0);
    api::copy(&rec, &narrow).unwrap();
    // an elementwise op whose operands do not merge (one strided): 2.1 M rows, two launches
    let dense = LayoutTensor::contiguous(F32, &[2_100_000, 3]).unwrap();
    api::add(&rec, &narrow, &dense).unwrap();
    let l = rec.take();
    assert_eq!(l.len(), 6, "{:?}", l.iter().map(|l| l.grid).collect::<Vec<_>>());
    assert_eq!(l.iter().map(|l| l.grid[1]).sum::<u32>(), 65_538 + 2 * 65_625);
    assert!(l.iter().all(|l| l.grid[1] <= 65_535 && l.grid[2] <= 65_535));
    // and the split launches compute the right thing (interpreter, the transpose case)
    let xh = random(F32, &[4_194_400, 2], 3);
    let y = api::transpose(&Interp, &xh).unwrap();
    assert_eq!(bits(&y), bits(&xh.transpose(0, 1).unwrap()));
}

#[test]
fn without_a_gpu_the_cuda_backend_is_a_typed_error() {
    // on a machine without a driver or device (CI), opening the backend names why; with a GPU,
    // an ordinal past the last device does
    let e = match Cuda::open(0) {
        Ok(_) => Cuda::open(4096).map(|_| ()).unwrap_err(),
        Err(e) => e,
    };
    assert!(matches!(e, OpsError::GpuUnavailable(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with("the GPU backend is not available: "), "{text}");
    assert!(text.len() > "the GPU backend is not available: ".len() + 5, "{text}");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn cudarc_buffers_are_inputs_and_outputs() {
    // a cudarc program's own buffers: a borrowed CudaSlice (read through a strided view) in, a
    // mutably borrowed CudaSlice out (poisoned first)
    use tilekit_cuda::{DeviceTensorMut, DeviceTensorRef};
    use tilekit_ir::tensor::TensorLayout;
    let cuda = cuda();
    let gpu = cuda.gpu();
    let x = random(F32, &[37, 130], 4);
    let buf = gpu.upload(&x.to_vec::<f32>().unwrap()).unwrap();
    let xr = DeviceTensorRef::from_cuda_slice(&buf, x.layout().clone()).unwrap();
    let mut out = gpu.upload(&vec![f32::NAN; 37 * 130]).unwrap();
    {
        let l = TensorLayout::contiguous(F32, vec![130, 37]).unwrap();
        let mut y = DeviceTensorMut::from_cuda_slice(&mut out, l).unwrap();
        api::transpose_into(&cuda, &xr, &mut y).unwrap();
    }
    cuda.synchronize().unwrap();
    let got = gpu.download(&out).unwrap();
    assert_eq!(got, x.transpose(0, 1).unwrap().to_vec::<f32>().unwrap());
    // a view of the borrowed input (narrowed columns) into a tilekit tensor
    let xn = xr.narrow(1, 5, 100).unwrap();
    let s = api::row_sum(&cuda, &xn).unwrap();
    let want = row_refs(&values(&x.narrow(1, 5, 100).unwrap()), 37, 100).0;
    check("row_sum of a borrowed view", &values(&cuda.to_host(&s).unwrap()), &want, 1e-4);
}

#[test]
fn strided_batches_are_one_launch_where_tma_can_step_over_the_entries() {
    use tilekit_ops::api::GemmOptions;
    use tilekit_ops::backend::{LayoutTensor, Record};
    let rec = Record::new();
    let t = |shape: &[i64]| LayoutTensor::contiguous(BF16, shape).unwrap();
    let mut c = LayoutTensor::contiguous(F32, &[64, 512, 512]).unwrap();
    let names = |rec: &Record| -> Vec<(String, bool)> {
        rec.take()
            .iter()
            .map(|l| {
                let k = l.kernel.kernel();
                (k.name.clone(), k.params.iter().any(|p| p.name == "a_batch_step"))
            })
            .collect()
    };
    // 64 entries of 512³: one batched launch; a shared B too
    let plain = GemmOptions::new();
    api::gemm_batched_into(&rec, &t(&[64, 512, 512]), &t(&[64, 512, 512]), &mut c, &plain).unwrap();
    assert_eq!(names(&rec), vec![("gemm_sm90".to_string(), true)]);
    api::gemm_batched_into(&rec, &t(&[64, 512, 512]), &t(&[1, 512, 512]), &mut c, &plain).unwrap();
    assert_eq!(names(&rec), vec![("gemm_sm90".to_string(), true)]);
    // A's entries 8 bytes off a 16-byte step: one plain launch per entry
    let odd = tilekit_ir::tensor::TensorLayout::strided(
        BF16,
        vec![64, 512, 512],
        vec![512 * 512 + 4, 512, 1],
        0,
    )
    .unwrap();
    let a = LayoutTensor::new(odd, 0);
    api::gemm_batched_into(&rec, &a, &t(&[64, 512, 512]), &mut c, &plain).unwrap();
    // (every other entry starts 8 bytes off 16 and is staged through a copy first)
    let l = names(&rec);
    let gemms: Vec<_> = l.iter().filter(|(name, _)| name == "gemm_sm90").collect();
    assert_eq!((gemms.len(), l.len()), (64, 96), "{l:?}");
    assert!(gemms.iter().all(|(_, batched)| !batched), "{l:?}");
    // a permuted batch dim (entries 512 elements apart, rows 64 · 512): one launch per entry
    let permuted = tilekit_ir::tensor::TensorLayout::strided(
        BF16,
        vec![64, 512, 512],
        vec![512, 64 * 512, 1],
        0,
    )
    .unwrap();
    let a = LayoutTensor::new(permuted, 0);
    api::gemm_batched_into(&rec, &a, &t(&[64, 512, 512]), &mut c, &plain).unwrap();
    let l = names(&rec);
    assert!(l.len() == 64 && l.iter().all(|(n, batched)| n == "gemm_sm90" && !batched), "{l:?}");
    // f32 inputs: the CUDA-core kernel, one launch per entry
    let f = |shape: &[i64]| LayoutTensor::contiguous(F32, shape).unwrap();
    api::gemm_batched_into(&rec, &f(&[64, 512, 512]), &f(&[64, 512, 512]), &mut c, &plain).unwrap();
    assert_eq!(rec.take().len(), 64);
}

#[test]
fn mismatched_batches_are_typed_errors() {
    use tilekit_ops::api::GemmOptions;
    use tilekit_ops::backend::{LayoutTensor, Record};
    let rec = Record::new();
    let t = |ty, shape: &[i64]| LayoutTensor::contiguous(ty, shape).unwrap();
    let plain = GemmOptions::new();
    let mut c = t(F32, &[3, 64, 32]);
    // B's batch 2 against C's 3
    let e = api::gemm_batched_into(
        &rec,
        &t(BF16, &[3, 64, 16]),
        &t(BF16, &[2, 16, 32]),
        &mut c,
        &plain,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("batch") && e.contains("[2, 16, 32]"), "{e}");
    // inner dims 16 and 24
    let e = api::gemm_batched_into(
        &rec,
        &t(BF16, &[3, 64, 16]),
        &t(BF16, &[3, 24, 32]),
        &mut c,
        &plain,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("inner dims"), "{e}");
    // C's entries 64 × 30 for products of 64 × 32
    let mut narrow = t(F32, &[3, 64, 30]);
    let e = api::gemm_batched_into(
        &rec,
        &t(BF16, &[3, 64, 16]),
        &t(BF16, &[3, 16, 32]),
        &mut narrow,
        &plain,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("30"), "{e}");
    // a rank-2 A
    let e =
        api::gemm_batched_into(&rec, &t(BF16, &[64, 16]), &t(BF16, &[3, 16, 32]), &mut c, &plain)
            .unwrap_err()
            .to_string();
    assert!(e.contains("ranks"), "{e}");
    assert!(rec.take().is_empty());
}

/// One step of [`pdl_chain`]: a permute, or `y = x + x` (exact: a doubling).
#[derive(Clone, Copy, Debug)]
enum Step {
    Permute([usize; 3]),
    Double,
}

/// The steps of [`pdl_chain`]: every permute kernel shape (the transpose kernel for the
/// perms that move the last dim, the copy kernel for those that keep it), with a doubling
/// (the elementwise kernel, reading its input twice) every fourth step.
fn chain_steps(n: usize) -> Vec<Step> {
    let perms = [[0, 2, 1], [1, 0, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]];
    (0..n)
        .map(|i| if i % 4 == 3 { Step::Double } else { Step::Permute(perms[i % perms.len()]) })
        .collect()
}

/// A chain of `steps` dependent calls issued back to back (each reads the previous call's
/// output, every output a distinct NaN-poisoned tensor allocated before the chain starts, so
/// that nothing but kernels sits between two calls on the stream), then row sum, row max and
/// softmax of the last output, then every intermediate compared bit for bit with the CPU
/// reference (the row results with an f64 reference). With programmatic dependent launch on, a
/// dependent that read its input before the previous kernel completed would see NaNs (or
/// partial results) and fail here.
fn pdl_chain<B: Backend>(b: &B, shape: [i64; 3], steps: usize) {
    for (i, ty) in [F32, BF16].into_iter().enumerate() {
        let x = random(ty, &shape, 70 + i as u64);
        // the CPU reference of every step, and the shapes of the outputs
        let mut want = vec![x.clone()];
        for s in chain_steps(steps) {
            let prev = want.last().unwrap();
            let next = match s {
                Step::Permute(p) => prev.permute(&p).unwrap().contiguous().unwrap(),
                Step::Double => {
                    let v: Vec<f64> = values(prev).iter().map(|v| 2.0 * v).collect();
                    let layout =
                        tilekit_ir::tensor::TensorLayout::contiguous(ty, prev.shape().to_vec())
                            .unwrap();
                    HostTensor::new(host::from_f64(ty, &v), layout).unwrap()
                }
            };
            want.push(next);
        }
        let mut ts = vec![b.from_host(&x).unwrap()];
        ts.extend(want[1..].iter().map(|w| poisoned(b, ty, w.shape())));
        // the chain ends in the one-block-per-row kernels, each reading the last output
        let last = want.last().unwrap();
        let rows = last.shape()[..2].to_vec();
        let (m, n) = ((rows[0] * rows[1]) as usize, last.shape()[2] as usize);
        let (mut ysum, mut ymax) = (poisoned(b, F32, &rows), poisoned(b, F32, &rows));
        let mut ysoft = poisoned(b, ty, last.shape());
        b.synchronize().unwrap(); // the uploads are done: from here on, only kernels
        for (k, s) in chain_steps(steps).into_iter().enumerate() {
            let (done, rest) = ts.split_at_mut(k + 1);
            let (prev, next) = (&done[k], &mut rest[0]);
            match s {
                Step::Permute(p) => api::permute_into(b, prev, &p, next).unwrap(),
                Step::Double => {
                    api::binary_op_into(b, tilekit_ops::elementwise::Binary::Add, prev, prev, next)
                        .unwrap()
                }
            }
        }
        let t_last = ts.last().unwrap();
        api::row_sum_into(b, t_last, &mut ysum).unwrap();
        api::row_max_into(b, t_last, &mut ymax).unwrap();
        api::softmax_into(b, t_last, &mut ysoft).unwrap();
        b.synchronize().unwrap();
        let (sum, max, soft) = row_refs(&values(last), m, n);
        check(&format!("{ty} chain row_sum"), &values(&b.to_host(&ysum).unwrap()), &sum, 1e-4);
        check(&format!("{ty} chain row_max"), &values(&b.to_host(&ymax).unwrap()), &max, 0.0);
        // |Δ| ≤ tol (softmax values are at most 1); a NaN (a stale read of the poison) fails
        let tol = if ty == F32 { 1e-5 } else { 1.0 / 256.0 };
        check(&format!("{ty} chain softmax"), &values(&b.to_host(&ysoft).unwrap()), &soft, tol);
        for (k, (t, w)) in ts.iter().zip(&want).enumerate().skip(1) {
            let got = b.to_host(t).unwrap();
            assert_eq!(got.shape(), w.shape(), "{ty} step {k}");
            if bits(&got) != bits(w) {
                // NaNs: read before the previous call wrote (the poison came through)
                let (g, e) = (values(&got), values(w));
                let bad: Vec<usize> =
                    (0..g.len()).filter(|&i| g[i].to_bits() != e[i].to_bits()).collect();
                let nans = g.iter().filter(|v| v.is_nan()).count();
                panic!(
                    "{ty} step {k} ({:?}): {} of {} elements wrong ({nans} NaN), first at {}: {} \
                     instead of {}",
                    chain_steps(steps)[k - 1],
                    bad.len(),
                    g.len(),
                    bad[0],
                    g[bad[0]],
                    e[bad[0]]
                );
            }
        }
    }
}

/// [`pdl_chain`] on the interpreter (one grid at a time: the ops are no-ops) and on the GPU
/// with programmatic dependent launch on and off (`… pdl --include-ignored`).
mod pdl_chain {
    use tilekit_ops::backend::Interp;

    #[test]
    fn interp() {
        super::pdl_chain(&Interp, [3, 40, 72], 8);
    }

    #[test]
    #[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
    fn cuda_programmatic_launch() {
        let c = super::cuda();
        c.gpu().set_programmatic_launch(true);
        assert!(c.gpu().programmatic_launch());
        // 20 dependent calls of 6M elements (24 MiB f32): grids of thousands of blocks,
        // long enough for the next grid to launch while the previous one drains
        super::pdl_chain(&c, [24, 512, 512], 20);
    }

    /// The same chain on a small shape (a few hundred blocks a call): for compute-sanitizer,
    /// whose tools are too slow for the large one.
    #[test]
    #[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
    fn cuda_programmatic_launch_small() {
        let c = super::cuda();
        c.gpu().set_programmatic_launch(true);
        super::pdl_chain(&c, [4, 128, 96], 20);
    }

    #[test]
    #[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
    fn cuda_plain_launch() {
        let c = super::cuda();
        c.gpu().set_programmatic_launch(false);
        super::pdl_chain(&c, [24, 512, 512], 20);
    }
}

// ------------------------------------------------------------------ overlap (issue 30, item 1)

use tilekit_ops::elementwise::Binary::Add;

fn is_overlap(r: Result<(), OpsError>, what: &str) {
    match r {
        Err(OpsError::Overlap { detail, .. }) => assert!(!detail.is_empty(), "{what}"),
        other => panic!("{what}: expected an overlap error, got {other:?}"),
    }
}

/// Outputs that overlap themselves or an input are refused with a named error before any
/// kernel runs (each of these returned Ok and a wrong answer before).
fn overlapping_outputs_refused<B: Backend>(b: &B) {
    use tilekit_ir::tensor::TensorLayout;
    let x = b.from_host(&random(F32, &[4, 8], 1)).unwrap();
    let z = b.from_host(&random(F32, &[4, 8], 2)).unwrap();
    // an output whose rows all alias one row (strides [0, 8, 1])
    let store = b.from_host(&random(F32, &[8], 3)).unwrap();
    let mut y = view(b, &store, |_| TensorLayout::strided(F32, vec![4, 1, 8], vec![0, 8, 1], 0));
    let as3 = |_: &TensorLayout| TensorLayout::strided(F32, vec![4, 1, 8], vec![8, 8, 1], 0);
    let (x3, z3) = (view(b, &x, as3), view(b, &z, as3));
    is_overlap(api::binary_op_into(b, Add, &x3, &z3, &mut y), "add into strides [0, 8, 1]");
    // transpose / copy of a transposed view into the very tensor they read
    let sq = b.from_host(&random(F32, &[8, 8], 5)).unwrap();
    let mut sq_out = sq.clone();
    is_overlap(api::transpose_into(b, &sq, &mut sq_out), "transpose(x, out=x)");
    let sqt = view(b, &sq, |l| l.transpose(0, 1));
    is_overlap(api::copy_into(b, &sqt, &mut sq_out), "copy(x.t(), out=x)");
    // gemm writing over its own A (f32: CUDA cores) and over B
    let a = b.from_host(&random(F32, &[8, 8], 6)).unwrap();
    let mut a_out = a.clone();
    is_overlap(api::gemm_into(b, &a, &sq, &mut a_out), "gemm(a, b, out=a)");
    let mut sq_out2 = sq.clone();
    is_overlap(api::gemm_into(b, &a, &sq, &mut sq_out2), "gemm(a, b, out=b)");
    // a batched GEMM whose C has batch stride 0: both entries write one matrix
    let ab = b.from_host(&random(BF16, &[2, 16, 16], 7)).unwrap();
    let cstore = b.from_host(&random(F32, &[16, 16], 8)).unwrap();
    let mut cb = view(b, &cstore, |l| l.broadcast_to(&[2, 16, 16]));
    is_overlap(
        api::gemm_batched_into(b, &ab, &ab, &mut cb, &api::GemmOptions::new()),
        "batched gemm with C batch stride 0",
    );
    // a row reduction into a column of its own input
    let mut col = view(b, &x, |_| TensorLayout::strided(F32, vec![4], vec![8], 0));
    is_overlap(api::row_sum_into(b, &x, &mut col), "row_sum into x[:, 0]");
    // softmax into a shifted view of its input (partial overlap)
    let wide = b.from_host(&random(F32, &[4, 9], 9)).unwrap();
    let xin = view(b, &wide, |l| l.narrow(1, 0, 8));
    let mut shifted = view(b, &wide, |l| l.narrow(1, 1, 8));
    is_overlap(api::softmax_into(b, &xin, &mut shifted), "softmax into a shifted view");
    // morton storage over its own image
    let img = b.from_host(&random(F32, &[8, 8], 10)).unwrap();
    let mut flat = view(b, &img, |_| TensorLayout::contiguous(F32, vec![64]));
    is_overlap(api::morton_into(b, &img, 4, &mut flat), "morton into its own image");
}

/// Where an op is defined in place (elementwise, softmax, copy) an output that is exactly an
/// input's view works, and the result is seen through every tensor sharing the memory; an
/// output over a disjoint part of an input's memory works too.
fn in_place_where_defined<B: Backend>(b: &B) {
    let (xh, zh) = (random(F32, &[6, 40], 11), random(F32, &[6, 40], 12));
    let sum: Vec<f64> =
        values(&xh).iter().zip(values(&zh)).map(|(p, q)| round(F32, p + q)).collect();
    let x = b.from_host(&xh).unwrap();
    let z = b.from_host(&zh).unwrap();
    let alias = x.clone(); // shares x's memory, as views of device memory do
    let mut out = x.clone();
    api::binary_op_into(b, Add, &x, &z, &mut out).unwrap();
    check("add in place", &values(&b.to_host(&alias).unwrap()), &sum, 0.0);
    // softmax in place, against the out-of-place result of the same input
    let s = b.from_host(&random(BF16, &[5, 300], 13)).unwrap();
    let want = values(&b.to_host(&api::softmax(b, &s).unwrap()).unwrap());
    let mut s_out = s.clone();
    api::softmax_into(b, &s, &mut s_out).unwrap();
    check("softmax in place", &values(&b.to_host(&s).unwrap()), &want, 0.0);
    // copy onto itself: nothing changes
    let before = values(&b.to_host(&z).unwrap());
    let mut z_out = z.clone();
    api::copy_into(b, &z, &mut z_out).unwrap();
    check("copy onto itself", &values(&b.to_host(&z).unwrap()), &before, 0.0);
    // disjoint halves of one buffer: out = left + left, written into the right half
    let buf = b.from_host(&random(F32, &[4, 64], 14)).unwrap();
    let left = view(b, &buf, |l| l.narrow(1, 0, 32));
    let mut right = view(b, &buf, |l| l.narrow(1, 32, 32));
    let lv = values(&b.to_host(&left).unwrap());
    api::binary_op_into(b, Add, &left, &left, &mut right).unwrap();
    let got = values(&b.to_host(&buf).unwrap());
    for r in 0..4 {
        for c in 0..32 {
            assert_eq!(got[r * 64 + c], lv[r * 32 + c], "left half kept at ({r}, {c})");
            assert_eq!(got[r * 64 + 32 + c], round(F32, 2.0 * lv[r * 32 + c]), "sum at ({r}, {c})");
        }
    }
}

/// Empty dims as PyTorch: K = 0 makes a zero product (and the epilogue still runs), rows of
/// no elements give empty softmaxes and zero sums, no rows give empty outputs.
fn empty_dims_as_pytorch<B: Backend>(b: &B) {
    // K = 0, f32 (CUDA cores) and bf16 (tensor cores)
    for ty in [F32, BF16] {
        let a = b.from_host(&random(ty, &[5, 0], 20)).unwrap();
        let w = b.from_host(&random(ty, &[0, 7], 21)).unwrap();
        let c = api::gemm(b, &a, &w).unwrap();
        check(&format!("gemm K = 0 {ty}"), &values(&b.to_host(&c).unwrap()), &[0.0; 35], 0.0);
    }
    // K = 0 with β·C + bias: C = 2·C + bias
    let a = b.from_host(&random(BF16, &[4, 0], 22)).unwrap();
    let w = b.from_host(&random(BF16, &[0, 8], 23)).unwrap();
    let (ch, bh) = (random(F32, &[4, 8], 24), random(F32, &[8], 25));
    let mut c = b.from_host(&ch).unwrap();
    let bias = b.from_host(&bh).unwrap();
    let opts = api::GemmOptions::new().beta(2.0).bias(&bias);
    api::gemm_ex(b, &a, &w, &mut c, &opts).unwrap();
    let (cv, bv) = (values(&ch), values(&bh));
    let want: Vec<f64> = (0..32).map(|i| round(F32, 2.0 * cv[i] + bv[i % 8])).collect();
    check("gemm_ex K = 0, beta 2, bias", &values(&b.to_host(&c).unwrap()), &want, 1e-6);
    // rows of no elements
    let x = b.from_host(&random(F32, &[3, 0], 26)).unwrap();
    assert_eq!(b.to_host(&api::softmax(b, &x).unwrap()).unwrap().shape(), &[3, 0]);
    check(
        "row_sum of empty rows",
        &values(&b.to_host(&api::row_sum(b, &x).unwrap()).unwrap()),
        &[0.0; 3],
        0.0,
    );
    let e = api::row_max(b, &x).unwrap_err().to_string();
    assert!(e.contains("empty row"), "{e}");
    // no rows
    let none = b.from_host(&random(F32, &[0, 9], 27)).unwrap();
    assert_eq!(b.to_host(&api::row_sum(b, &none).unwrap()).unwrap().shape(), &[0]);
}

#[test]
fn a_clone_is_the_same_memory_on_the_interpreter() {
    // on a GPU `y = x.clone()` shares x's memory; the interpreter now models that too, so a
    // transpose into the clone is refused instead of silently diverging (copy-on-write)
    let x = random(F32, &[8, 8], 30);
    let mut y = x.clone();
    is_overlap(api::transpose_into(&Interp, &x, &mut y), "transpose_into(x, x.clone())");
    let mut own = x.contiguous().unwrap(); // memory of its own
    api::transpose_into(&Interp, &x, &mut own).unwrap();
    assert_eq!(own.to_vec::<f32>().unwrap(), x.transpose(0, 1).unwrap().to_vec::<f32>().unwrap());
}

#[test]
fn record_backend_sees_overlap_before_planning() {
    use tilekit_ir::tensor::TensorLayout;
    use tilekit_ops::backend::{LayoutTensor, Record};
    let rec = Record::new();
    // separately made tensors are separate memory; views share it
    let x = LayoutTensor::contiguous(F32, &[1024, 1024]).unwrap();
    let mut y = LayoutTensor::contiguous(F32, &[1024, 1024]).unwrap();
    api::transpose_into(&rec, &x, &mut y).unwrap();
    let mut xt = x.with_layout(x.layout().transpose(0, 1).unwrap());
    is_overlap(api::copy_into(&rec, &x, &mut xt), "copy into x.t()");
    // a batched GEMM whose output batch stride is 0
    let a = LayoutTensor::contiguous(BF16, &[2, 128, 64]).unwrap();
    let w = LayoutTensor::contiguous(BF16, &[2, 64, 128]).unwrap();
    let c = LayoutTensor::contiguous(F32, &[128, 128]).unwrap();
    let mut cb = c.with_layout(c.layout().broadcast_to(&[2, 128, 128]).unwrap());
    is_overlap(
        api::gemm_batched_into(&rec, &a, &w, &mut cb, &api::GemmOptions::new()),
        "batched C stride 0",
    );
    // attention writing O over K
    let q = LayoutTensor::contiguous(BF16, &[1, 128, 2, 64]).unwrap();
    let kv = LayoutTensor::contiguous(BF16, &[1, 128, 2, 64]).unwrap();
    let mut o = kv.with_layout(kv.layout().clone());
    let mut lse = LayoutTensor::contiguous(F32, &[1, 2, 128]).unwrap();
    let r = api::attention_into(&rec, &q, &kv, &kv, false, None, &mut o, &mut lse);
    is_overlap(r, "attention O over K");
    // LSE written over the first bytes of O's memory
    let mut o2 = LayoutTensor::contiguous(BF16, &[1, 128, 2, 64]).unwrap();
    let mut lse2 = o2.with_layout(TensorLayout::contiguous(F32, vec![1, 2, 128]).unwrap());
    let r = api::attention_into(&rec, &q, &kv, &kv, false, None, &mut o2, &mut lse2);
    is_overlap(r, "attention LSE over O");
    let mut o3 = LayoutTensor::contiguous(BF16, &[1, 128, 2, 64]).unwrap();
    api::attention_into(&rec, &q, &kv, &kv, false, None, &mut o3, &mut lse).unwrap();
}

#[test]
fn morton_storage_past_32_bits_is_refused() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    // the image fits 32-bit indices, its tiled storage (2 147 766 336 elements) does not: the
    // store index used to wrap and write ~8.6 GB below the buffer
    let rec = Record::new();
    let img = LayoutTensor::contiguous(F32, &[46341, 46340]).unwrap();
    let len = api::morton_len(46341, 46340, 32).unwrap();
    assert!(len > i64::from(i32::MAX));
    let mut s = LayoutTensor::contiguous(F32, &[len]).unwrap();
    let e = api::morton_into(&rec, &img, 32, &mut s).unwrap_err().to_string();
    assert!(e.contains("32-bit"), "{e}");
    let mut back = LayoutTensor::contiguous(F32, &[46341, 46340]).unwrap();
    let e = api::unmorton_into(&rec, &s, 32, &mut back).unwrap_err().to_string();
    assert!(e.contains("32-bit"), "{e}");
}

// ------------------------------------------------------------- streams (issue 30, item 3)

/// Two streams of one device: an input dropped while a kernel on the other stream still reads
/// it is not freed (and reused) under the kernel, and a download on another stream waits for
/// the kernel that writes what it reads. Run under compute-sanitizer memcheck on a GPU.
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn two_streams_order_uses_frees_and_downloads() {
    let c = cuda();
    let side = c.new_stream().unwrap();
    for round in 0..8u64 {
        // 64 MiB read by a transpose on `side` while its input is dropped on `c`'s stream and
        // new tensors (which may reuse the memory) are written there
        let xh = random(F32, &[4096, 4096], 100 + round);
        let x = c.from_host(&xh).unwrap();
        let y = api::transpose(&side, &x).unwrap();
        drop(x);
        let scratch: Vec<_> =
            (0..4).map(|i| c.from_host(&random(F32, &[4096, 4096], 200 + i)).unwrap()).collect();
        // downloaded on `c`'s stream: waits for the transpose on `side`
        let got = c.to_host(&y).unwrap();
        assert_eq!(
            got.to_vec::<f32>().unwrap(),
            xh.transpose(0, 1).unwrap().to_vec::<f32>().unwrap(),
            "round {round}"
        );
        drop(scratch);
        // a softmax written on `side`, read back on `c`'s stream at once
        let sh = random(BF16, &[2048, 8192], 300 + round);
        let s = side.from_host(&sh).unwrap();
        let p = api::softmax(&side, &s).unwrap();
        let got = values(&c.to_host(&p).unwrap());
        // the same kernel on one stream, synchronised: bit for bit the same
        let alone = api::softmax(&c, &c.from_host(&sh).unwrap()).unwrap();
        c.synchronize().unwrap();
        let want = values(&c.to_host(&alone).unwrap());
        check(&format!("softmax on side, read on main, round {round}"), &got, &want, 0.0);
    }
}

// ------------------------------------------------------- 64-bit indices (issue 30, item 9)

#[test]
fn tensors_past_2_31_elements_plan_a_64_bit_kernel() {
    use tilekit_ir::ParamKind;
    use tilekit_ops::backend::{LayoutTensor, Record};
    // row_sum of 65536 × 32776 bf16 (2^31 + 2^19 elements) was refused by the 32-bit index
    // check; PyTorch computes it. The memory-bound ops now plan the kernel's 64-bit twin.
    let rec = Record::new();
    let x = LayoutTensor::contiguous(BF16, &[65536, 32776]).unwrap();
    let mut s = LayoutTensor::contiguous(F32, &[65536]).unwrap();
    api::row_sum_into(&rec, &x, &mut s).unwrap();
    let mut y = LayoutTensor::contiguous(BF16, &[65536, 32776]).unwrap();
    api::binary_op_into(&rec, Add, &x, &x, &mut y).unwrap();
    let mut p = LayoutTensor::contiguous(BF16, &[65536, 32776]).unwrap();
    api::softmax_into(&rec, &x, &mut p).unwrap();
    let xt = x.with_layout(x.layout().narrow(1, 1, 32775).unwrap());
    let mut yc = LayoutTensor::contiguous(BF16, &[65536, 32775]).unwrap();
    api::copy_into(&rec, &xt, &mut yc).unwrap();
    let mut yt = LayoutTensor::contiguous(BF16, &[32776, 65536]).unwrap();
    api::transpose_into(&rec, &x, &mut yt).unwrap();
    let launches = rec.take();
    assert!(launches.iter().any(|l| l.kernel.kernel().name.starts_with("transpose")));
    for l in launches {
        let k = l.kernel.kernel();
        let lens: Vec<_> = k.params.iter().filter(|p| p.name.contains(".len")).collect();
        assert!(
            lens.iter().all(|p| p.kind == ParamKind::Scalar(tilekit_ir::ScalarType::I64)),
            "{}: {:?}",
            k.name,
            lens
        );
    }
    // a small tensor keeps the 32-bit kernel
    let small = LayoutTensor::contiguous(BF16, &[64, 64]).unwrap();
    let mut ss = LayoutTensor::contiguous(F32, &[64]).unwrap();
    api::row_sum_into(&rec, &small, &mut ss).unwrap();
    let l = rec.take();
    assert!(l[0]
        .kernel
        .kernel()
        .params
        .iter()
        .any(|p| p.kind == ParamKind::Scalar(tilekit_ir::ScalarType::I32)));
}

#[test]
fn the_64_bit_kernels_compute_what_the_32_bit_ones_do() {
    use tilekit_ops::{bind::Bindings, compiled::CompiledKernel, reduce::Reduction};
    let (m, n) = (37, 1003);
    let x = random(BF16, &[m, n], 40);
    let z = random(BF16, &[m, n], 41);
    let run = |ix| {
        // elementwise add
        let k = CompiledKernel::new(
            tilekit_ops::elementwise::build_indexed(Add, BF16, 1, 1, ix).unwrap(),
        );
        let mut y =
            HostTensor::new(host::poisoned(BF16, (m * n) as usize).unwrap(), x.layout().clone())
                .unwrap();
        let (tm, tn) = tilekit_ops::copy::tile(BF16);
        let grid = [host::blocks(n, tn).unwrap(), host::blocks(m, tm).unwrap(), 1];
        let args = Bindings::new(&k)
            .input("a", &x, &Interp)
            .unwrap()
            .input("b", &z, &Interp)
            .unwrap()
            .output("c", &mut y, &Interp)
            .unwrap();
        Interp.launch(&k, grid, args).unwrap();
        // row sums
        let k = CompiledKernel::new(
            tilekit_ops::reduce::build_reduce_indexed(Reduction::Sum, BF16, 1, ix).unwrap(),
        );
        let mut s = HostTensor::new(
            host::poisoned(F32, m as usize).unwrap(),
            tilekit_ir::tensor::TensorLayout::contiguous(F32, vec![m]).unwrap(),
        )
        .unwrap();
        let args = Bindings::new(&k)
            .input("x", &x, &Interp)
            .unwrap()
            .output("y", &mut s, &Interp)
            .unwrap();
        Interp.launch(&k, [m as u32, 1, 1], args).unwrap();
        (values(&y), values(&s))
    };
    let (y32, s32) = run(ScalarType::I32);
    let (y64, s64) = run(ScalarType::I64);
    check("add, 64-bit vs 32-bit", &y64, &y32, 0.0);
    check("row_sum, 64-bit vs 32-bit", &s64, &s32, 0.0);
    // the online softmax's 64-bit twin (what softmax past 2^31 elements takes)
    let soft = |ix| {
        let o = tilekit_ops::reduce::OnlineTuning::default();
        let k = tilekit_ops::reduce::build_softmax_online_indexed(BF16, 1, o, ix).unwrap();
        let k = CompiledKernel::new(k);
        let mut p =
            HostTensor::new(host::poisoned(BF16, (m * n) as usize).unwrap(), x.layout().clone())
                .unwrap();
        let args = Bindings::new(&k)
            .input("x", &x, &Interp)
            .unwrap()
            .output("y", &mut p, &Interp)
            .unwrap();
        Interp.launch(&k, [m as u32, 1, 1], args).unwrap();
        values(&p)
    };
    let want = values(&api::softmax(&Interp, &x).unwrap());
    check("softmax online, 32-bit vs the API", &soft(ScalarType::I32), &want, 1.0 / 256.0);
    check("softmax online, 64-bit vs 32-bit", &soft(ScalarType::I64), &soft(ScalarType::I32), 0.0);
    // and both against the f64 reference
    let want: Vec<f64> = values(&x).chunks(n as usize).map(|r| r.iter().sum()).collect();
    check("row_sum vs f64", &s64, &want, 1e-3 * n as f64);
}

/// The transpose's 64-bit twins (one tile a block, and the looped kernels the tuner may pick)
/// transpose as the 32-bit ones do, bit for bit, on edge tiles and a batch.
#[test]
fn the_64_bit_transposes_compute_what_the_32_bit_ones_do() {
    use tilekit_ops::transpose::{build_looped_indexed, TransposeLoop};
    use tilekit_ops::{bind::Bindings, compiled::CompiledKernel};
    let (batch, m, n) = (2i64, 72i64, 104i64); // edge tiles, 8-element vectors fit
    let loops = [
        TransposeLoop::default(),
        TransposeLoop { tiles_per_block: 2, buffers: 2, ..TransposeLoop::default() },
        TransposeLoop {
            tiles_per_block: 3,
            buffers: 1,
            prefetch: false,
            ..TransposeLoop::default()
        },
    ];
    for (i, ty) in [F32, BF16].into_iter().enumerate() {
        let x = random(ty, &[batch, m, n], 60 + i as u64);
        let want = bits(&x.permute(&[0, 2, 1]).unwrap());
        let v = tilekit_ops::transpose::tile(ty).0;
        let t = 16 * v;
        for lp in loops {
            for ix in [ScalarType::I32, ScalarType::I64] {
                let k = CompiledKernel::new(build_looped_indexed(ty, v, v, v, lp, ix).unwrap());
                let mut y = HostTensor::new(
                    host::poisoned(ty, (batch * m * n) as usize).unwrap(),
                    tilekit_ir::tensor::TensorLayout::contiguous(ty, vec![batch, n, m]).unwrap(),
                )
                .unwrap();
                let gy = host::blocks(m, t).unwrap().div_ceil(lp.tiles_per_block);
                let grid = [host::blocks(n, t).unwrap(), gy, batch as u32];
                let args = Bindings::new(&k)
                    .input("x", &x, &Interp)
                    .unwrap()
                    .output("y", &mut y, &Interp)
                    .unwrap();
                Interp.launch(&k, grid, args).unwrap();
                assert_eq!(bits(&y), want, "{ty} {lp} {ix}");
            }
        }
    }
}

/// row_sum and add of 65536 × 32776 bf16 (past 2^31 elements) on a GPU, against f64 sums.
#[test]
#[ignore = "needs a CUDA GPU with 16 GB free: run with --include-ignored where one is"]
fn row_sum_past_2_31_elements_on_a_gpu() {
    let c = Cuda::open(0).expect("this test needs a GPU");
    let (m, n) = (65536i64, 32776i64);
    let xh = random(BF16, &[m, n], 50);
    let x = c.from_host(&xh).unwrap();
    let s = c.to_host(&api::row_sum(&c, &x).unwrap()).unwrap().to_vec::<f32>().unwrap();
    let xv = host::to_f64(&xh.buffer());
    let mut worst = 0.0f64;
    for (r, got) in s.iter().enumerate().step_by(997) {
        let want: f64 = xv[r * n as usize..(r + 1) * n as usize].iter().sum();
        worst = worst.max((f64::from(*got) - want).abs());
    }
    assert!(worst < 0.05, "row sums off by {worst}");
    // the last row (whose elements sit past 2^31) exactly checked too
    let last: f64 = xv[(m - 1) as usize * n as usize..].iter().sum();
    assert!((f64::from(s[(m - 1) as usize]) - last).abs() < 0.05);
    let y = c.to_host(&api::add(&c, &x, &x).unwrap()).unwrap();
    let yb = y.buffer();
    for i in [0usize, (1 << 31) - 1, 1 << 31, (m * n) as usize - 1] {
        assert_eq!(host::value(&yb, i), round(BF16, 2.0 * xv[i]), "element {i}");
    }
}

/// A GEMM whose C spans past 2^31 elements (an LM head: 32768 tokens × 128256 vocabulary) was
/// refused by the epilogue's 32-bit index check; it now runs on bands of C's rows.
#[test]
fn gemm_with_c_past_2_31_elements_runs_in_bands() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    let rec = Record::new();
    let a = LayoutTensor::contiguous(BF16, &[32768, 4096]).unwrap();
    let w = LayoutTensor::contiguous(BF16, &[128256, 4096]).unwrap();
    let wt = w.with_layout(w.layout().transpose(0, 1).unwrap());
    let mut c = LayoutTensor::contiguous(F32, &[32768, 128256]).unwrap();
    api::gemm_into(&rec, &a, &wt, &mut c).unwrap();
    let launches = rec.take();
    // 2^31 / 128256 rows a band, rounded down to 256 (16640): 32768 rows in 2 bands
    assert_eq!(
        launches.len(),
        2,
        "{:?}",
        launches.iter().map(|l| &l.kernel.kernel().name).collect::<Vec<_>>()
    );
    assert!(launches.iter().all(|l| l.kernel.kernel().name.starts_with("gemm_sm90")));
    // a column-major C past 2^31 (bands of rows would not fit) keeps the typed error
    let ct = LayoutTensor::contiguous(F32, &[128256, 32768]).unwrap();
    let ctv = ct.layout().transpose(0, 1).unwrap();
    let e = api::gemm_into(&rec, &a, &wt, &mut ct.with_layout(ctv)).unwrap_err();
    assert!(e.to_string().contains("32-bit"), "{e}");
}

/// Attention whose tensors span past 2^31 elements (17 sequences of 32768 tokens, 32 heads of
/// 128) was refused by the 32-bit index check; it now runs on bands of the batch.
#[test]
fn attention_past_2_31_elements_runs_in_bands() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    let rec = Record::new();
    let q = LayoutTensor::contiguous(BF16, &[17, 32768, 32, 128]).unwrap();
    let kv = LayoutTensor::contiguous(BF16, &[17, 32768, 8, 128]).unwrap();
    let mut o = LayoutTensor::contiguous(BF16, &[17, 32768, 32, 128]).unwrap();
    let mut lse = LayoutTensor::contiguous(F32, &[17, 32, 32768]).unwrap();
    api::attention_into(&rec, &q, &kv, &kv, true, None, &mut o, &mut lse).unwrap();
    // 15 sequences of 2^27 elements a band (16 would span 2^31): 15 + 2
    let grids: Vec<u32> = rec.take().iter().map(|l| l.grid[2]).collect();
    assert_eq!(grids, vec![15, 2], "batch per launch");
    // a batch that does not match is still the shape error, not a band's
    let kv2 = LayoutTensor::contiguous(BF16, &[16, 32768, 8, 128]).unwrap();
    let e = api::attention_into(&rec, &q, &kv2, &kv2, true, None, &mut o, &mut lse).unwrap_err();
    assert!(e.to_string().contains("batch") || e.to_string().contains("16"), "{e}");
}

/// GEMM with C past 2^31 elements (rows at the bands' edges against f64), attention and a
/// transpose past 2^31 elements, on a GPU.
#[test]
#[ignore = "needs a CUDA GPU with 30 GB free: run with --include-ignored where one is"]
fn gemm_and_transpose_past_2_31_elements_on_a_gpu() {
    let g = cuda();
    let (m, n, k) = (66000i64, 32800i64, 64i64); // C: 2.16e9 elements, bands of 65280 rows
    let ah = random(BF16, &[m, k], 70);
    let bh = random(BF16, &[k, n], 71);
    let c = api::gemm(&g, &g.from_host(&ah).unwrap(), &g.from_host(&bh).unwrap()).unwrap();
    let (av, bv) = (values(&ah), values(&bh));
    for r in [0i64, 65279, 65280, 65281, m - 1] {
        let row = view(&g, &c, |l| l.narrow(0, r, 1));
        let got = values(&g.to_host(&api::copy(&g, &row).unwrap()).unwrap());
        let want: Vec<f64> = (0..n as usize)
            .map(|j| {
                (0..k as usize)
                    .map(|p| av[r as usize * k as usize + p] * bv[p * n as usize + j])
                    .sum()
            })
            .collect();
        check(&format!("C row {r}"), &got, &want, 1e-3 * k as f64);
    }
    drop(c);
    // attention over 17 sequences of 16384 tokens, 64 heads of 128 (2^31 + 2^27 elements): the
    // banded run's last sequence equals that sequence run alone
    let q = g.from_host(&random(BF16, &[17, 16384, 64, 128], 73)).unwrap();
    let kv = g.from_host(&random(BF16, &[17, 16384, 8, 128], 74)).unwrap();
    let (o, _) = api::attention(&g, &q, &kv, &kv, true, None).unwrap();
    let last = |t: &<Cuda as Backend>::Tensor| view(&g, t, |l| l.narrow(0, 16, 1));
    let (o1, _) = api::attention(&g, &last(&q), &last(&kv), &last(&kv), true, None).unwrap();
    let banded = g.to_host(&api::copy(&g, &last(&o)).unwrap()).unwrap();
    assert_eq!(bits(&banded), bits(&g.to_host(&o1).unwrap()), "sequence 16");
    drop((q, kv, o, o1));
    // transpose of 2^31 + 2^16 bf16 elements
    let (tm, tn) = (32769i64, 65536i64);
    let xh = random(BF16, &[tm, tn], 72);
    let y = g.to_host(&api::transpose(&g, &g.from_host(&xh).unwrap()).unwrap()).unwrap();
    let (xb, yb) = (xh.buffer(), y.buffer());
    for (i, j) in [(0i64, 0i64), (tm - 1, tn - 1), (tm - 1, 0), (0, tn - 1), (32768, 12345)] {
        let (src, dst) = ((i * tn + j) as usize, (j * tm + i) as usize);
        assert_eq!(host::value(&yb, dst).to_bits(), host::value(&xb, src).to_bits(), "({i}, {j})");
    }
}

/// A device keeps at most its capacity of kernels loaded (kernels are specialised to shapes: a
/// process seeing ever new shapes must not fill the GPU with modules), and a kernel unloaded
/// to make room is loaded again, right, when it is launched again.
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored on a machine with one"]
fn loaded_kernels_bounded_cuda() {
    let b = cuda();
    b.set_kernel_capacity(8).unwrap();
    assert!(b.loaded_count() <= 8);
    let shapes: Vec<[i64; 2]> = (0..24).map(|i| [3 + i, 129 + 7 * i]).collect();
    for round in 0..2 {
        for (i, s) in shapes.iter().enumerate() {
            let x = random(F32, s, 500 + i as u64);
            let mut y = poisoned(&b, F32, &[s[1], s[0]]);
            api::transpose_into(&b, &b.from_host(&x).unwrap(), &mut y).unwrap();
            let want = x.transpose(0, 1).unwrap();
            assert_eq!(bits(&b.to_host(&y).unwrap()), bits(&want), "round {round} {s:?}");
            assert!(b.loaded_count() <= 8, "{} kernels loaded", b.loaded_count());
        }
    }
    assert!(b.set_kernel_capacity(0).is_err());
    b.set_kernel_capacity(tilekit_ops::loaded::DEFAULT_CAPACITY).unwrap();
}

/// Which row-reduction kernels a shape gets, from the device's SMs and the row length (no table
/// of shapes): short rows a warp each, long rows a block each, few long rows split.
#[test]
fn row_reductions_pick_kernels_by_shape() {
    use tilekit_ops::backend::{LayoutTensor, Record};
    let rec = Record::new().on_multiprocessors(132);
    let plan = |m: i64, n: i64| -> Vec<String> {
        let x = LayoutTensor::contiguous(BF16, &[m, n]).unwrap();
        let mut y = LayoutTensor::contiguous(F32, &[m]).unwrap();
        api::row_sum_into(&rec, &x, &mut y).unwrap();
        rec.take().iter().map(|l| format!("{} {:?}", l.kernel.kernel().name, l.grid)).collect()
    };
    assert_eq!(plan(16384, 768), ["row_sum_rows [2048, 1, 1]"]);
    assert_eq!(plan(16384, 4096), ["row_sum [16384, 1, 1]"]);
    assert_eq!(plan(1, 10_000_000), ["row_sum_split [264, 1, 1]", "row_sum_rows [1, 1, 1]"]);
    assert_eq!(plan(200, 1 << 20), ["row_sum [200, 1, 1]"]);
}

/// The row kernels' 64-bit twins (what rows past 2^31 elements take) sum as the 32-bit ones
/// do, bit for bit: a warp a row, and a row split over 3 blocks.
#[test]
fn the_64_bit_row_kernels_compute_what_the_32_bit_ones_do() {
    use tilekit_ops::reduce::{split_rows, warp_rows, Reduction};
    use tilekit_ops::{bind::Bindings, compiled::CompiledKernel};
    let (m, n) = (13i64, 1003i64);
    let x = random(BF16, &[m, n], 90);
    let out = |shape: &[i64]| {
        let len = shape.iter().product::<i64>() as usize;
        HostTensor::new(
            host::poisoned(F32, len).unwrap(),
            tilekit_ir::tensor::TensorLayout::contiguous(F32, shape.to_vec()).unwrap(),
        )
        .unwrap()
    };
    let run = |ix: ScalarType| {
        let k = CompiledKernel::new(warp_rows::build(Reduction::Sum, BF16, 1, ix).unwrap());
        let mut y = out(&[m]);
        let grid = [host::blocks(m, warp_rows::ROWS).unwrap(), 1, 1];
        let args = Bindings::new(&k)
            .input("x", &x, &Interp)
            .unwrap()
            .output("y", &mut y, &Interp)
            .unwrap();
        Interp.launch(&k, grid, args).unwrap();
        let k = CompiledKernel::new(split_rows::build(Reduction::Sum, BF16, 1, ix).unwrap());
        let mut p = out(&[m, 3]);
        let args = Bindings::new(&k)
            .input("x", &x, &Interp)
            .unwrap()
            .output("partial", &mut p, &Interp)
            .unwrap();
        Interp.launch(&k, [3, m as u32, 1], args).unwrap();
        (values(&y), values(&p))
    };
    let ((y32, p32), (y64, p64)) = (run(ScalarType::I32), run(ScalarType::I64));
    check("warp rows, 64-bit vs 32-bit", &y64, &y32, 0.0);
    check("split rows, 64-bit vs 32-bit", &p64, &p32, 0.0);
    let want = row_refs(&values(&x), m as usize, n as usize).0;
    check("warp rows vs f64", &y32, &want, 1e-3);
    let split: Vec<f64> = p32.chunks(3).map(|c| c.iter().sum()).collect();
    check("split rows vs f64", &split, &want, 1e-3);
}
