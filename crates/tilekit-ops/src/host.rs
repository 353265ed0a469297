//! Host-side helpers shared by the kernels: random data in a dtype, poisoned outputs,
//! conversions to `f64`, vector-width choice from a shape, and result comparison.
//!
//! ```text
//!   seed ──splitmix64──► uniform in [-2, 2) away from 0 ──round to dtype──► HostBuffer + f64 copy
//!   outputs: NaN-filled (poison) before every run, so an element never written shows up
//!   compare(got, want): max |Δ|, max |Δ| / max(|want|, 1e-3), exact or within a tolerance
//! ```
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::host::random;
//! let (buf, vals) = random(ScalarType::BF16, 100, 7);
//! assert_eq!(buf.len(), 100);
//! assert!(vals.iter().all(|v| *v != 0.0 && v.abs() <= 2.0));
//! ```

use half::{bf16, f16};
use tilekit_ir::interp::HostBuffer;
use tilekit_ir::{Lit, ScalarType};

use crate::error::{OpsError, Result};

/// The data types the kernels accept for data movement.
///
/// ```
/// assert_eq!(tilekit_ops::host::FLOAT_TYPES.len(), 3);
/// ```
pub const FLOAT_TYPES: [ScalarType; 3] = [ScalarType::F32, ScalarType::F16, ScalarType::BF16];

/// Checks that `ty` is one of `allowed` (a typed error naming the kernel otherwise).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host::check_dtype;
/// assert!(check_dtype("gemm", ScalarType::F32, &[ScalarType::F16, ScalarType::BF16]).is_err());
/// ```
pub fn check_dtype(kernel: &str, ty: ScalarType, allowed: &[ScalarType]) -> Result<()> {
    if allowed.contains(&ty) {
        return Ok(());
    }
    let names: Vec<String> = allowed.iter().map(|t| t.to_string()).collect();
    Err(OpsError::invalid(kernel, "dtype", ty, format!("must be one of {}", names.join(", "))))
}

/// Checks a shape's rank and that every length is ≥ 1.
///
/// ```
/// use tilekit_ops::host::check_shape;
/// assert!(check_shape("copy", &[3, 0], 2).is_err());
/// assert!(check_shape("copy", &[3, 4], 2).is_ok());
/// ```
pub fn check_shape(kernel: &str, shape: &[i64], rank: usize) -> Result<()> {
    if shape.len() != rank || shape.iter().any(|&l| l < 1 || l > i32::MAX as i64) {
        return Err(OpsError::invalid(
            kernel,
            "shape",
            format!("{shape:?}"),
            format!("needs {rank} lengths in 1..=2^31-1"),
        ));
    }
    let n: i64 = shape.iter().product();
    if n > i32::MAX as i64 {
        return Err(OpsError::invalid(
            kernel,
            "shape",
            format!("{shape:?}"),
            "more than 2^31-1 elements",
        ));
    }
    Ok(())
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `len` random values of `ty` in `[-2, 2)`, never zero, as a buffer and as the exact `f64`
/// values it holds.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let (a, _) = tilekit_ops::host::random(ScalarType::F32, 8, 1);
/// let (b, _) = tilekit_ops::host::random(ScalarType::F32, 8, 1);
/// assert_eq!(a, b); // deterministic in the seed
/// ```
pub fn random(ty: ScalarType, len: usize, seed: u64) -> (HostBuffer, Vec<f64>) {
    let mut rng = SplitMix(seed ^ 0x005E_ED0F_711E_u64);
    let raw: Vec<f64> = (0..len)
        .map(|_| {
            let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
            let x = u * 4.0 - 2.0;
            if x.abs() < 1.0 / 64.0 {
                x.signum() * (1.0 / 64.0 + x.abs()) + if x == 0.0 { 0.5 } else { 0.0 }
            } else {
                x
            }
        })
        .collect();
    let buf = from_f64(ty, &raw);
    let vals = to_f64(&buf);
    (buf, vals)
}

/// A buffer of `ty` holding `vals` rounded to `ty`.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host::{from_f64, to_f64};
/// assert_eq!(to_f64(&from_f64(ScalarType::F16, &[1.0, 0.5])), vec![1.0, 0.5]);
/// ```
pub fn from_f64(ty: ScalarType, vals: &[f64]) -> HostBuffer {
    match ty {
        ScalarType::F16 => {
            HostBuffer::from_f16(&vals.iter().map(|&v| f16::from_f64(v)).collect::<Vec<_>>())
        }
        ScalarType::BF16 => {
            HostBuffer::from_bf16(&vals.iter().map(|&v| bf16::from_f64(v)).collect::<Vec<_>>())
        }
        ScalarType::F64 => HostBuffer::from_f64(vals),
        _ => HostBuffer::from_f32(&vals.iter().map(|&v| v as f32).collect::<Vec<_>>()),
    }
}

/// The buffer's elements as `f64` (floats; integers by value).
///
/// ```
/// use tilekit_ir::interp::HostBuffer;
/// assert_eq!(tilekit_ops::host::to_f64(&HostBuffer::from_i32(&[3])), vec![3.0]);
/// ```
pub fn to_f64(buf: &HostBuffer) -> Vec<f64> {
    (0..buf.len())
        .map(|i| {
            let bits = buf.bits(i);
            match buf.elem() {
                ScalarType::F32 => f32::from_bits(bits as u32) as f64,
                ScalarType::F64 => f64::from_bits(bits),
                ScalarType::F16 => f16::from_bits(bits as u16).to_f64(),
                ScalarType::BF16 => bf16::from_bits(bits as u16).to_f64(),
                ScalarType::I32 => bits as u32 as i32 as f64,
                ScalarType::U32 => bits as u32 as f64,
                _ => bits as i64 as f64,
            }
        })
        .collect()
}

/// `len` NaNs of `ty`: outputs are poisoned before every run.
///
/// ```
/// use tilekit_ir::ScalarType;
/// assert!(tilekit_ops::host::to_f64(&tilekit_ops::host::poisoned(ScalarType::BF16, 2)).iter().all(|v| v.is_nan()));
/// ```
pub fn poisoned(ty: ScalarType, len: usize) -> HostBuffer {
    let lit = Lit::float(ty, f64::NAN).unwrap_or(Lit::f32(f32::NAN));
    HostBuffer::filled(lit, len)
}

/// The widest vector (elements, a power of two, at most 16 bytes of `ty`) that divides every
/// one of `lengths` — the guarantee a view may make for a contiguous last dim whose length and
/// other strides are these.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::host::vector_for;
/// assert_eq!(vector_for(ScalarType::F32, &[1000, 64]), 4);
/// assert_eq!(vector_for(ScalarType::BF16, &[1000]), 8);
/// assert_eq!(vector_for(ScalarType::F32, &[777]), 1);
/// ```
pub fn vector_for(ty: ScalarType, lengths: &[i64]) -> i64 {
    let mut v = 16 / ty.size_bytes() as i64;
    while v > 1 && lengths.iter().any(|&l| l % v != 0) {
        v /= 2;
    }
    v
}

/// How a result compares with its reference.
///
/// ```
/// let c = tilekit_ops::host::compare(&[1.0, 2.0], &[1.0, 2.5], 0.0);
/// assert_eq!((c.max_abs, c.mismatches, c.passed), (0.5, 1, false));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// Largest absolute error.
    pub max_abs: f64,
    /// Largest error relative to `max(|want|, 1e-3)`.
    pub max_rel: f64,
    /// Elements outside the tolerance (NaN counts).
    pub mismatches: usize,
    /// The tolerance used (0 = exact).
    pub tolerance: f64,
    /// No mismatches.
    pub passed: bool,
}

/// Compares element by element; an element passes when `|got − want| ≤ tol · max(|want|, 1)`
/// (so `tol = 0` is exact). NaN never passes.
///
/// ```
/// let c = tilekit_ops::host::compare(&[1.0, f64::NAN], &[1.0, 1.0], 0.1);
/// assert_eq!(c.mismatches, 1);
/// ```
pub fn compare(got: &[f64], want: &[f64], tol: f64) -> Comparison {
    let mut c =
        Comparison { max_abs: 0.0, max_rel: 0.0, mismatches: 0, tolerance: tol, passed: true };
    if got.len() != want.len() {
        c.mismatches = got.len().abs_diff(want.len()).max(1);
        c.passed = false;
        return c;
    }
    for (&g, &w) in got.iter().zip(want) {
        let d = (g - w).abs();
        if d.is_nan() {
            c.mismatches += 1;
            c.max_abs = f64::NAN;
            continue;
        }
        c.max_abs = if c.max_abs.is_nan() { c.max_abs } else { c.max_abs.max(d) };
        c.max_rel = c.max_rel.max(d / w.abs().max(1e-3));
        if d > tol * w.abs().max(1.0) {
            c.mismatches += 1;
        }
    }
    c.passed = c.mismatches == 0;
    c
}

/// What one kernel launch on the interpreter produced, with its reference.
///
/// ```
/// let o = tilekit_ops::host::Outcome { instructions: 3, got: vec![1.0], want: vec![1.0], tolerance: 0.0, elapsed: std::time::Duration::ZERO };
/// assert!(o.compare().passed);
/// ```
#[derive(Debug, Clone)]
pub struct Outcome {
    /// IR instructions of the kernel (constants not counted).
    pub instructions: usize,
    /// The output, as `f64`.
    pub got: Vec<f64>,
    /// The CPU reference, as `f64`.
    pub want: Vec<f64>,
    /// Tolerance (0 = exact).
    pub tolerance: f64,
    /// Time in the interpreter.
    pub elapsed: std::time::Duration,
}

impl Outcome {
    /// The comparison of `got` and `want` with the outcome's tolerance.
    ///
    /// ```
    /// let o = tilekit_ops::host::Outcome { instructions: 3, got: vec![1.0], want: vec![2.0], tolerance: 0.0, elapsed: std::time::Duration::ZERO };
    /// assert!(!o.compare().passed);
    /// ```
    pub fn compare(&self) -> Comparison {
        compare(&self.got, &self.want, self.tolerance)
    }
}

/// Runs `kernel` on the current executor (the interpreter unless a scope chose a GPU, see
/// [`crate::exec`]), timing it; returns the buffer at argument `out`.
///
/// ```
/// use tilekit_ir::{examples, ScalarType, interp::{Args, HostBuffer}};
/// let k = examples::copy(ScalarType::F32, 4, 64).unwrap();
/// let mut args = Args::new();
/// args.buffer(HostBuffer::from_f32(&[1.0, 2.0])).buffer(HostBuffer::from_f32(&[0.0; 2])).int(2);
/// let (y, _) = tilekit_ops::host::launch(&k, [1, 1, 1], args, 1).unwrap();
/// assert_eq!(y.to_f32(), Some(vec![1.0, 2.0]));
/// ```
pub fn launch(
    kernel: &tilekit_ir::Kernel,
    grid: [u32; 3],
    args: tilekit_ir::interp::Args,
    out: usize,
) -> Result<(HostBuffer, std::time::Duration)> {
    crate::exec::run_current(kernel, grid, args, out)
}

/// Row-major strides of `shape`.
///
/// ```
/// assert_eq!(tilekit_ops::host::strides(&[2, 3, 4]), vec![12, 4, 1]);
/// ```
pub fn strides(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Grid size along one axis: `ceil(len / tile)`, checked against the hardware limit.
///
/// ```
/// assert_eq!(tilekit_ops::host::blocks(1000, 64).unwrap(), 16);
/// ```
pub fn blocks(len: i64, tile: i64) -> Result<u32> {
    let n = (len + tile - 1) / tile;
    u32::try_from(n).map_err(|_| OpsError::invalid("grid", "blocks", n, "must fit in u32"))
}
