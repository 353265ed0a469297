//! A soak of the tensor API: random ops, shapes, dtypes, views, in-place and overlapping
//! outputs, several streams and early frees, each result against the op's CPU reference —
//! for minutes, on any backend (`tilekit soak`).
//!
//! ```text
//!   case n (seed, n) ─► op · dtype · shape ─► check::Problem (random inputs, CPU reference)
//!     variant  plain        inputs uploaded on stream a, op on stream b, inputs dropped at
//!                           once, scratch allocated on a (may reuse their memory), result
//!                           downloaded on stream c
//!              padded       input 0 read through a view of a wider storage (row pitch + pad,
//!                           offset): the same reference
//!              in place     out = input 0's own view where the op is defined in place
//!              overlapping  out over part of input 0: must be refused (OpsError::Overlap)
//!   every case: the comparison with the reference, or the expected refusal, else a failure
//! ```
//!
//! ```
//! use std::time::Duration;
//! use tilekit_ops::{backend::Interp, soak::{soak, SoakConfig}};
//! let cfg = SoakConfig { duration: Duration::ZERO, cases: Some(6), seed: 1, max_elems: 4096 };
//! let r = soak(&[Interp], &cfg, |_| {}).unwrap();
//! assert_eq!((r.cases, r.failures.len()), (6, 0), "{:?}", r.failures);
//! ```

use std::time::{Duration, Instant};

use tilekit_ir::tensor::{TensorLayout, TensorView};
use tilekit_ir::ScalarType;

use crate::backend::{Backend, TensorIn};
use crate::check::{Op, Problem};
use crate::elementwise::{Binary, Broadcast};
use crate::error::{OpsError, Result};
use crate::reduce::Reduction;

/// How long and how big a soak runs.
///
/// ```
/// let c = tilekit_ops::soak::SoakConfig::minutes(2.0);
/// assert_eq!(c.duration.as_secs(), 120);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SoakConfig {
    /// Run cases until this much time has passed (and at least one case).
    pub duration: Duration,
    /// Stop after this many cases instead, if given.
    pub cases: Option<u64>,
    /// The seed of case 0 (case `n` uses `seed + n`): a failure names its case, which reruns
    /// alone with the same seed.
    pub seed: u64,
    /// The most elements of one tensor (the interpreter wants thousands, a GPU millions).
    pub max_elems: i64,
}

impl SoakConfig {
    /// `minutes` of cases from seed 1, tensors of up to 2^16 elements.
    ///
    /// ```
    /// assert_eq!(tilekit_ops::soak::SoakConfig::minutes(0.5).max_elems, 1 << 16);
    /// ```
    pub fn minutes(minutes: f64) -> SoakConfig {
        SoakConfig {
            duration: Duration::from_secs_f64(minutes.max(0.0) * 60.0),
            cases: None,
            seed: 1,
            max_elems: 1 << 16,
        }
    }
}

/// What a soak saw.
///
/// ```
/// let r = tilekit_ops::soak::SoakReport::default();
/// assert!(r.failures.is_empty() && r.cases == 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// Cases run.
    pub cases: u64,
    /// Results compared with their reference and within its tolerance.
    pub matched: u64,
    /// Overlapping outputs refused as they must be.
    pub refused: u64,
    /// In-place cases among the matched.
    pub in_place: u64,
    /// Cases whose input was a padded view.
    pub padded: u64,
    /// One line per failed case: its number, what it ran, what went wrong.
    pub failures: Vec<String>,
    /// Seconds spent.
    pub seconds: f64,
}

/// SplitMix64: the case's choices, reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Plain,
    Padded,
    InPlace,
    Overlapping,
}

/// One random case: the op, its problem shape and dtype.
fn pick_case(rng: &mut Rng, max_elems: i64) -> (Op, Vec<i64>, ScalarType) {
    let ops = [
        Op::Copy,
        Op::Transpose,
        Op::Permute([0, 2, 1]),
        Op::Permute([2, 0, 1]),
        Op::Reduce(Reduction::Sum),
        Op::Reduce(Reduction::Max),
        Op::Reduce(Reduction::Softmax),
        Op::Elementwise(Binary::Add, Broadcast::None),
        Op::Elementwise(Binary::Mul, Broadcast::Row),
        Op::Elementwise(Binary::Max, Broadcast::Col),
        Op::Gemm,
    ];
    let op = rng.pick(&ops);
    let ty = rng.pick(op.dtypes());
    // lengths up to the element budget, skewed small (odd sizes are the interesting ones)
    let mut len = |cap: i64| {
        let cap = cap.max(1);
        if rng.next().is_multiple_of(2) {
            rng.range(1, cap.min(80))
        } else {
            rng.range(1, cap)
        }
    };
    let shape = match op {
        Op::Permute(_) => {
            let a = len(max_elems.min(64));
            let b = len((max_elems / a).min(128));
            vec![a, b, len(max_elems / (a * b))]
        }
        Op::Gemm => {
            // the Hopper kernel's tiles on the interpreter are slow: keep GEMMs modest
            let cap = ((max_elems as f64).sqrt() as i64).clamp(8, 512);
            vec![len(cap), len(cap), len(cap)]
        }
        _ => {
            let m = len(max_elems.min(512));
            vec![m, len(max_elems / m)]
        }
    };
    (op, shape, ty)
}

/// `x`'s shape as a view of a wider storage: each row (last dim) `pad` elements longer and the
/// first element `pad` in; the storage's other elements are poison.
fn padded_layout(l: &TensorLayout, pad: i64) -> Result<(TensorLayout, i64)> {
    let shape = l.shape().to_vec();
    let r = shape.len();
    let mut strides = vec![1i64; r];
    for d in (0..r.saturating_sub(1)).rev() {
        let inner = if d == r - 2 { shape[r - 1] + pad } else { shape[d + 1] * strides[d + 1] };
        strides[d] = inner;
    }
    let view = TensorLayout::strided(l.dtype(), shape, strides, pad)?;
    Ok((view.clone(), view.span_elems()))
}

/// Whether out = input 0's own view is defined for `op` (same shape and dtype, elementwise).
fn in_place(op: Op) -> bool {
    matches!(op, Op::Copy | Op::Reduce(Reduction::Softmax) | Op::Elementwise(_, Broadcast::None))
}

/// Runs cases on `streams` (one backend, or several streams of one device: each case uploads,
/// runs and downloads on streams picked at random) until `cfg` says stop, calling `progress`
/// about every five seconds. Errors other than a case's own are returned at once.
///
/// ```
/// use std::time::Duration;
/// use tilekit_ops::{backend::Interp, soak::{soak, SoakConfig}};
/// let cfg = SoakConfig { duration: Duration::ZERO, cases: Some(3), seed: 7, max_elems: 2048 };
/// let mut calls = 0;
/// let r = soak(&[Interp], &cfg, |_| calls += 1).unwrap();
/// assert_eq!(r.matched + r.refused, 3);
/// ```
pub fn soak<B: Backend>(
    streams: &[B],
    cfg: &SoakConfig,
    mut progress: impl FnMut(&SoakReport),
) -> Result<SoakReport> {
    if streams.is_empty() {
        return Err(OpsError::invalid("soak", "streams", 0, "at least one backend"));
    }
    let start = Instant::now();
    let mut last = start;
    let mut report = SoakReport::default();
    loop {
        let done = match cfg.cases {
            Some(n) => report.cases >= n,
            None => report.cases > 0 && start.elapsed() >= cfg.duration,
        };
        if done {
            break;
        }
        let n = report.cases;
        let mut rng = Rng(cfg.seed.wrapping_add(n).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let (op, shape, ty) = pick_case(&mut rng, cfg.max_elems);
        let variant = match rng.next() % 8 {
            0..=2 => Variant::Plain,
            3 | 4 => Variant::Padded,
            5 | 6 if in_place(op) => Variant::InPlace,
            _ => Variant::Overlapping,
        };
        let what = format!("case {n}: {} {ty} {shape:?} {variant:?}", op.name());
        let s: [&B; 3] =
            [0, 1, 2].map(|_| &streams[rng.range(0, streams.len() as i64 - 1) as usize]);
        match run_case(s, op, &shape, ty, variant, cfg.seed.wrapping_add(n), &mut rng) {
            Ok(Outcome::Matched) => {
                report.matched += 1;
                report.in_place += u64::from(variant == Variant::InPlace);
                report.padded += u64::from(variant == Variant::Padded);
            }
            Ok(Outcome::Refused) => report.refused += 1,
            Ok(Outcome::Wrong(why)) => report.failures.push(format!("{what}: {why}")),
            Err(e) => report.failures.push(format!("{what}: error {e}")),
        }
        report.cases += 1;
        report.seconds = start.elapsed().as_secs_f64();
        if last.elapsed() >= Duration::from_secs(5) {
            last = Instant::now();
            progress(&report);
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

enum Outcome {
    Matched,
    Refused,
    Wrong(String),
}

fn run_case<B: Backend>(
    [up, run, down]: [&B; 3],
    op: Op,
    shape: &[i64],
    ty: ScalarType,
    variant: Variant,
    seed: u64,
    rng: &mut Rng,
) -> Result<Outcome> {
    let p = Problem::new(op, shape, ty, seed)?;
    let mut xs = p.upload(up)?;
    let x0 = TensorIn::<B>::layout(&xs[0]).clone();
    if matches!(variant, Variant::Padded | Variant::Overlapping) {
        // input 0 inside a wider storage (poisoned around it)
        let pad = rng.range(1, 9);
        let (view, span) = padded_layout(&x0, pad)?;
        let storage = up.empty(ty, &[span])?;
        let mut placed = storage.with_layout(view)?;
        crate::api::copy_into(up, &xs[0], &mut placed)?;
        xs[0] = placed;
    }
    let want_shape = p.output_shape();
    let result = match variant {
        Variant::Plain | Variant::Padded => {
            let y = p.call(run, &xs)?;
            drop(xs); // freed while the op may still run on another stream
            let scratch = up.empty(ty, &[x0.numel().max(1)])?;
            let got = down.to_host(&y)?;
            drop(scratch);
            Some(got)
        }
        Variant::InPlace => {
            let mut y = xs[0].clone();
            p.call_into(run, &xs, &mut y)?;
            Some(down.to_host(&y)?)
        }
        Variant::Overlapping => {
            let Some(mut y) = overlapping_output(&xs[0], &want_shape, p.output_dtype()) else {
                // no view of input 0's storage has the output's dtype and fits: run it plainly
                return run_case([up, run, down], op, shape, ty, Variant::Plain, seed, rng);
            };
            return Ok(match p.call_into(run, &xs, &mut y) {
                Err(OpsError::Overlap { .. }) => Outcome::Refused,
                Err(e) => Outcome::Wrong(format!("expected an overlap refusal, got {e}")),
                Ok(()) => Outcome::Wrong("an overlapping output was accepted".into()),
            });
        }
    };
    let got = result.expect("every other variant downloads");
    if got.shape() != want_shape.as_slice() {
        return Ok(Outcome::Wrong(format!("shape {:?}, want {want_shape:?}", got.shape())));
    }
    let c = p.compare(&got);
    Ok(if c.passed {
        Outcome::Matched
    } else {
        Outcome::Wrong(format!(
            "{} mismatches, max |Δ| {:.3e}, max |Δ|/max(|want|, 1) {:.3e} (tol {:.1e})",
            c.mismatches, c.max_abs, c.max_rel, c.tolerance
        ))
    })
}

/// An output of `shape` and `dtype` over `x`'s storage that shares elements with `x` but is
/// not its own view: x's layout shifted back one element where the shapes agree and the last
/// dim has several elements (element (i, j) lands on x's (i, j − 1)), else a contiguous view
/// from x's first element with other strides; `None` where no such view exists (another
/// dtype, a single element, too big for the storage).
fn overlapping_output<T: TensorView>(x: &T, shape: &[i64], dtype: ScalarType) -> Option<T> {
    let l = x.layout();
    let r = l.rank();
    if dtype != l.dtype() || l.offset() < 1 || l.numel() < 2 {
        return None;
    }
    let c = TensorLayout::contiguous(dtype, shape.to_vec()).ok()?;
    let layout = if shape == l.shape() && l.shape()[r - 1] > 1 {
        TensorLayout::strided(dtype, shape.to_vec(), l.strides().to_vec(), l.offset() - 1).ok()?
    } else {
        TensorLayout::strided(dtype, shape.to_vec(), c.strides().to_vec(), l.offset()).ok()?
    };
    let rel = crate::overlap::relation(
        (&layout, crate::overlap::Memory::host(0)),
        (l, crate::overlap::Memory::host(0)),
    );
    if rel == crate::overlap::Relation::Same || !brute_force_overlap(&layout, l) {
        return None; // the same view, or (by brute force) no shared element: not this test
    }
    x.with_layout(layout).ok()
}

/// Whether two layouts of one storage share an element, by listing both (the independent
/// check of [`crate::overlap::relation`] the soak trusts).
fn brute_force_overlap(a: &TensorLayout, b: &TensorLayout) -> bool {
    let offsets = |l: &TensorLayout| -> std::collections::HashSet<i64> {
        (0..l.numel())
            .map(|mut i| {
                let mut o = l.offset();
                for d in (0..l.rank()).rev() {
                    o += (i % l.shape()[d]) * l.strides()[d];
                    i /= l.shape()[d];
                }
                o
            })
            .collect()
    };
    !offsets(a).is_disjoint(&offsets(b))
}
