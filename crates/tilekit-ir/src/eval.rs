//! The meaning of every pure op, on canonical bits: one source of truth for the build-time
//! folder and the interpreter.
//!
//! ```text
//!   builder: add.i32 (const 3) (const 4) ──► eval_binary(Add, I32, 3, 4) = 7 ──► const.i32 7
//!   interp:  add.i32 %a %b, thread t     ──► eval_binary(Add, I32, a[t], b[t])
//! ```
//!
//! Values are `u64` in the canonical encoding of [`crate::types`]. 16-bit floats are computed in
//! `f32` and rounded once (exact for `+ - * /`, since `f32` carries more than twice the bits);
//! `fma` in `f64`. The fast approximations (`ex2.approx`, `rcp.approx`, `rsqrt.approx`) are
//! evaluated exactly here; on a GPU they differ by a few ulp, so tests compare with tolerances.

use half::{bf16, f16};

use crate::op::{BinOp, CmpOp, UnOp};
use crate::types::{canonical, ScalarType};

/// Why an evaluation has no value.
///
/// ```
/// use tilekit_ir::{eval::{eval_binary, EvalError}, BinOp, ScalarType};
/// assert_eq!(eval_binary(BinOp::Div, ScalarType::I32, 1, 0), Err(EvalError::DivisionByZero));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalError {
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// The op does not apply to the type (caught by the builder's type checks first).
    Unsupported,
}

/// Reads canonical bits of a float type as `f64`.
///
/// ```
/// use tilekit_ir::{eval::to_f64, ScalarType};
/// assert_eq!(to_f64(ScalarType::F32, 1.0f32.to_bits() as u64), 1.0);
/// ```
#[inline]
pub fn to_f64(ty: ScalarType, bits: u64) -> f64 {
    match ty {
        ScalarType::F16 => f16::from_bits(bits as u16).to_f64(),
        ScalarType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        ScalarType::F32 => f32::from_bits(bits as u32) as f64,
        ScalarType::F64 => f64::from_bits(bits),
        _ => bits as i64 as f64,
    }
}

/// Rounds an `f64` to a float type (nearest even) and returns its canonical bits.
///
/// ```
/// use tilekit_ir::{eval::from_f64, ScalarType};
/// assert_eq!(from_f64(ScalarType::F32, 1.0), 0x3f80_0000);
/// assert_eq!(from_f64(ScalarType::F16, 1.0), 0x3c00);
/// ```
#[inline]
pub fn from_f64(ty: ScalarType, v: f64) -> u64 {
    match ty {
        ScalarType::F16 => f16::from_f64(v).to_bits() as u64,
        ScalarType::BF16 => bf16::from_f64(v).to_bits() as u64,
        ScalarType::F32 => (v as f32).to_bits() as u64,
        _ => v.to_bits(),
    }
}

/// Computes a float op of type `ty` via `f32` (16- and 32-bit types) or `f64`, rounding once.
#[inline(always)]
fn float2(
    ty: ScalarType,
    a: u64,
    b: u64,
    f32op: fn(f32, f32) -> f32,
    f64op: fn(f64, f64) -> f64,
) -> u64 {
    match ty {
        ScalarType::F64 => f64op(f64::from_bits(a), f64::from_bits(b)).to_bits(),
        _ => {
            let r = f32op(to_f64(ty, a) as f32, to_f64(ty, b) as f32);
            from_f64(ty, r as f64)
        }
    }
}

/// Evaluates a unary op.
///
/// ```
/// use tilekit_ir::{eval::eval_unary, UnOp, ScalarType, Lit};
/// assert_eq!(eval_unary(UnOp::Neg, ScalarType::I32, 5), Ok(Lit::int(ScalarType::I32, -5).unwrap().bits()));
/// assert_eq!(eval_unary(UnOp::Not, ScalarType::Pred, 1), Ok(0));
/// ```
pub fn eval_unary(op: UnOp, ty: ScalarType, a: u64) -> Result<u64, EvalError> {
    unary_inline(op, ty, a)
}

/// [`eval_unary`], inlined into the interpreter's per-instruction lane loops (with a constant op and
/// type it folds to a few machine instructions).
#[inline(always)]
pub(crate) fn unary_inline(op: UnOp, ty: ScalarType, a: u64) -> Result<u64, EvalError> {
    let r = if ty.is_int() {
        let x = a as i64;
        match op {
            UnOp::Neg => x.wrapping_neg() as u64,
            UnOp::Not => !a,
            UnOp::Abs => x.wrapping_abs() as u64,
            _ => return Err(EvalError::Unsupported),
        }
    } else if ty == ScalarType::Pred {
        match op {
            UnOp::Not => (a == 0) as u64,
            _ => return Err(EvalError::Unsupported),
        }
    } else {
        let x = to_f64(ty, a);
        let v = match op {
            UnOp::Neg => -x,
            UnOp::Abs => x.abs(),
            UnOp::Exp2Approx => (x as f32).exp2() as f64,
            UnOp::Exp2ApproxFtz => {
                let ftz = |v: f32| if v.is_subnormal() { 0.0f32.copysign(v) } else { v };
                ftz(ftz(x as f32).exp2()) as f64
            }
            UnOp::RcpApprox => (1.0 / (x as f32)) as f64,
            UnOp::RsqrtApprox => (1.0 / (x as f32).sqrt()) as f64,
            UnOp::Lg2Approx => (x as f32).log2() as f64,
            UnOp::Sqrt if ty == ScalarType::F64 => x.sqrt(),
            UnOp::Sqrt => (x as f32).sqrt() as f64,
            UnOp::Not => return Err(EvalError::Unsupported),
        };
        from_f64(ty, v)
    };
    Ok(canonical(ty, r))
}

/// The canonical NaN of a float type: what PTX gives for a NaN result of `max.NaN` / `min.NaN`
/// (and of the emulated f64 form): `0x7fff` for F16 and BF16, `0x7fff_ffff` for F32,
/// `0x7fff_ffff_ffff_ffff` for F64. Other types have no NaN; they get the F64 pattern, which no
/// caller asks for.
///
/// ```
/// use tilekit_ir::{eval::canonical_nan, ScalarType};
/// assert_eq!(canonical_nan(ScalarType::F32), 0x7fff_ffff);
/// assert_eq!(canonical_nan(ScalarType::BF16), 0x7fff);
/// assert!(f32::from_bits(canonical_nan(ScalarType::F32) as u32).is_nan());
/// ```
#[inline(always)]
pub fn canonical_nan(ty: ScalarType) -> u64 {
    match ty {
        ScalarType::F16 | ScalarType::BF16 => 0x7fff,
        ScalarType::F32 => 0x7fff_ffff,
        _ => 0x7fff_ffff_ffff_ffff,
    }
}

/// Whether canonical bits of the float type `ty` are a NaN.
#[inline(always)]
fn is_nan(ty: ScalarType, bits: u64) -> bool {
    match ty {
        ScalarType::F32 => f32::from_bits(bits as u32).is_nan(),
        ScalarType::F64 => f64::from_bits(bits).is_nan(),
        _ => to_f64(ty, bits).is_nan(),
    }
}

/// Evaluates a binary op.
///
/// Float `Min` and `Max` propagate NaN (IEEE 754-2019 `minimum` / `maximum`, PTX `min.NaN` /
/// `max.NaN`, `torch.minimum` / `torch.maximum`): if either operand is NaN the result is the
/// type's [`canonical_nan`]; otherwise the smaller / larger operand. Integer `Min` / `Max` are
/// the plain signed or unsigned order.
///
/// ```
/// use tilekit_ir::{eval::eval_binary, BinOp, ScalarType, Lit};
/// let m7 = Lit::int(ScalarType::I32, -7).unwrap().bits();
/// assert_eq!(eval_binary(BinOp::Div, ScalarType::I32, m7, 2), Ok(Lit::int(ScalarType::I32, -3).unwrap().bits()));
/// assert_eq!(eval_binary(BinOp::Shr, ScalarType::U32, 0xffff_ffff, 4), Ok(0x0fff_ffff));
/// let f = |x: f32| x.to_bits() as u64;
/// assert_eq!(eval_binary(BinOp::Max, ScalarType::F32, f(1.0), f(3.0)), Ok(f(3.0)));
/// assert_eq!(eval_binary(BinOp::Max, ScalarType::F32, f(f32::NAN), f(3.0)), Ok(0x7fff_ffff));
/// assert_eq!(eval_binary(BinOp::Min, ScalarType::F32, f(1.0), f(f32::NAN)), Ok(0x7fff_ffff));
/// ```
pub fn eval_binary(op: BinOp, ty: ScalarType, a: u64, b: u64) -> Result<u64, EvalError> {
    binary_inline(op, ty, a, b)
}

/// [`eval_binary`], inlined into the interpreter's per-instruction lane loops (with a constant op and
/// type it folds to a few machine instructions).
#[inline(always)]
pub(crate) fn binary_inline(op: BinOp, ty: ScalarType, a: u64, b: u64) -> Result<u64, EvalError> {
    let r = if ty.is_int() {
        let bits = (ty.size_bytes() * 8) as u64;
        let signed = ty.is_signed();
        // For u32 the canonical bits are the value, for i32/i64 the sign-extended value: both
        // are correct operands for i64 arithmetic followed by canonicalisation.
        let (x, y) = (a as i64, b as i64);
        match op {
            BinOp::Add => x.wrapping_add(y) as u64,
            BinOp::Sub => x.wrapping_sub(y) as u64,
            BinOp::Mul => x.wrapping_mul(y) as u64,
            BinOp::Div | BinOp::Rem if y == 0 => return Err(EvalError::DivisionByZero),
            BinOp::Div if signed => x.wrapping_div(y) as u64,
            BinOp::Div => a / b,
            BinOp::Rem if signed => x.wrapping_rem(y) as u64,
            BinOp::Rem => a % b,
            BinOp::Min => x.min(y) as u64,
            BinOp::Max => x.max(y) as u64,
            BinOp::And => a & b,
            BinOp::Or => a | b,
            BinOp::Xor => a ^ b,
            BinOp::Shl if b >= bits => 0,
            BinOp::Shl => a << b,
            BinOp::Shr if signed => (x >> b.min(63)) as u64,
            BinOp::Shr if b >= bits => 0,
            BinOp::Shr => a >> b,
        }
    } else if ty == ScalarType::Pred {
        match op {
            BinOp::And => a & b,
            BinOp::Or => a | b,
            BinOp::Xor => a ^ b,
            _ => return Err(EvalError::Unsupported),
        }
    } else {
        match op {
            BinOp::Add => float2(ty, a, b, |x, y| x + y, |x, y| x + y),
            BinOp::Sub => float2(ty, a, b, |x, y| x - y, |x, y| x - y),
            BinOp::Mul => float2(ty, a, b, |x, y| x * y, |x, y| x * y),
            BinOp::Div => float2(ty, a, b, |x, y| x / y, |x, y| x / y),
            // NaN-propagating, as PTX `min.NaN` / `max.NaN` (torch.minimum / torch.maximum):
            // a NaN operand gives the type's canonical NaN
            BinOp::Min | BinOp::Max if is_nan(ty, a) || is_nan(ty, b) => canonical_nan(ty),
            BinOp::Min => float2(ty, a, b, f32::min, f64::min),
            BinOp::Max => float2(ty, a, b, f32::max, f64::max),
            _ => return Err(EvalError::Unsupported),
        }
    };
    Ok(canonical(ty, r))
}

/// Evaluates `a * b + c` (one rounding for floats, wrapping for integers).
///
/// ```
/// use tilekit_ir::{eval::eval_fma, ScalarType};
/// assert_eq!(eval_fma(ScalarType::I32, 3, 4, 5), Ok(17));
/// let f = |x: f32| x.to_bits() as u64;
/// assert_eq!(eval_fma(ScalarType::F32, f(2.0), f(3.0), f(1.0)), Ok(f(7.0)));
/// ```
pub fn eval_fma(ty: ScalarType, a: u64, b: u64, c: u64) -> Result<u64, EvalError> {
    fma_inline(ty, a, b, c)
}

/// [`eval_fma`], inlined into the interpreter's per-instruction lane loops (with a constant op and
/// type it folds to a few machine instructions).
#[inline(always)]
pub(crate) fn fma_inline(ty: ScalarType, a: u64, b: u64, c: u64) -> Result<u64, EvalError> {
    let r = match ty {
        t if t.is_int() => (a as i64).wrapping_mul(b as i64).wrapping_add(c as i64) as u64,
        ScalarType::F64 => {
            f64::from_bits(a).mul_add(f64::from_bits(b), f64::from_bits(c)).to_bits()
        }
        ScalarType::F32 => f32::from_bits(a as u32)
            .mul_add(f32::from_bits(b as u32), f32::from_bits(c as u32))
            .to_bits() as u64,
        t if t.is_float() => from_f64(t, to_f64(t, a).mul_add(to_f64(t, b), to_f64(t, c))),
        _ => return Err(EvalError::Unsupported),
    };
    Ok(canonical(ty, r))
}

/// Evaluates a comparison (result 0 or 1).
///
/// ```
/// use tilekit_ir::{eval::eval_cmp, CmpOp, ScalarType};
/// assert_eq!(eval_cmp(CmpOp::Lt, ScalarType::U32, 1, 0xffff_ffff), 1);
/// let nan = f32::NAN.to_bits() as u64;
/// assert_eq!(eval_cmp(CmpOp::Ne, ScalarType::F32, nan, nan), 1);
/// ```
pub fn eval_cmp(op: CmpOp, ty: ScalarType, a: u64, b: u64) -> u64 {
    cmp_inline(op, ty, a, b)
}

/// [`eval_cmp`], inlined into the interpreter's per-instruction lane loops (with a constant op and
/// type it folds to a few machine instructions).
#[inline(always)]
pub(crate) fn cmp_inline(op: CmpOp, ty: ScalarType, a: u64, b: u64) -> u64 {
    use std::cmp::Ordering;
    let ord = if ty.is_float() {
        to_f64(ty, a).partial_cmp(&to_f64(ty, b))
    } else {
        Some((a as i64).cmp(&(b as i64)))
    };
    let r = match (op, ord) {
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Lt, Some(o)) => o == Ordering::Less,
        (CmpOp::Le, Some(o)) => o != Ordering::Greater,
        (CmpOp::Gt, Some(o)) => o == Ordering::Greater,
        (CmpOp::Ge, Some(o)) => o != Ordering::Less,
        (CmpOp::Eq, Some(o)) => o == Ordering::Equal,
        (CmpOp::Ne, Some(o)) => o != Ordering::Equal,
    };
    r as u64
}

/// Converts a value of type `from` to type `to` (see [`crate::Op::Cvt`] for the rules).
///
/// ```
/// use tilekit_ir::{eval::eval_cvt, ScalarType};
/// let f = |x: f32| x.to_bits() as u64;
/// assert_eq!(eval_cvt(ScalarType::F32, ScalarType::I32, f(-2.7)) as i64, -2);
/// assert_eq!(eval_cvt(ScalarType::I32, ScalarType::F32, 3), f(3.0));
/// assert_eq!(eval_cvt(ScalarType::F32, ScalarType::F16, f(1.0)), 0x3c00);
/// assert_eq!(eval_cvt(ScalarType::Pred, ScalarType::I32, 1), 1);
/// ```
pub fn eval_cvt(from: ScalarType, to: ScalarType, a: u64) -> u64 {
    cvt_inline(from, to, a)
}

/// Two f32 (bits) rounded to `to` (F16 or BF16) and packed, `lo` in the low 16 bits (see
/// [`crate::Op::CvtPack`]).
///
/// ```
/// use tilekit_ir::{eval::eval_pack, ScalarType};
/// // f16 1.0 = 0x3c00, 0.5 = 0x3800
/// assert_eq!(eval_pack(ScalarType::F16, 1.0f32.to_bits() as u64, 0.5f32.to_bits() as u64), 0x3800_3c00);
/// ```
pub fn eval_pack(to: ScalarType, lo: u64, hi: u64) -> u64 {
    let half = |x: u64| cvt_inline(ScalarType::F32, to, x) & 0xffff;
    half(lo) | (half(hi) << 16)
}

/// One lane of a packed 16-bit pair op ([`crate::Op::BinaryPair`]): `x op y` for the bits of two
/// `ty` (F16 or BF16) values, `op` Max or Min; the result is the bits of one operand, or the
/// canonical NaN `0x7fff` when either operand is NaN (as PTX `max.NaN.bf16x2`: NaN propagates,
/// like [`eval_binary`]'s float `Max` and `Min`).
///
/// ```
/// use tilekit_ir::{eval::eval_pair, BinOp, ScalarType};
/// // bf16 1.0 = 0x3f80, −2.0 = 0xc000, −∞ = 0xff80, NaN = 0x7fc0
/// assert_eq!(eval_pair(BinOp::Max, ScalarType::BF16, 0x3f80, 0xc000), 0x3f80);
/// assert_eq!(eval_pair(BinOp::Min, ScalarType::BF16, 0x3f80, 0xc000), 0xc000);
/// assert_eq!(eval_pair(BinOp::Max, ScalarType::BF16, 0xff80, 0xc000), 0xc000);
/// assert_eq!(eval_pair(BinOp::Max, ScalarType::BF16, 0x7fc0, 0xc000), 0x7fff);
/// assert_eq!(eval_pair(BinOp::Min, ScalarType::BF16, 0x3f80, 0x7fc0), 0x7fff);
/// ```
pub fn eval_pair(op: crate::BinOp, ty: ScalarType, x: u64, y: u64) -> u64 {
    let (fx, fy) = (to_f64(ty, x & 0xffff), to_f64(ty, y & 0xffff));
    if fx.is_nan() || fy.is_nan() {
        return canonical_nan(ty);
    }
    let pick_x = match op {
        crate::BinOp::Min => fx <= fy,
        _ => fx >= fy,
    };
    if pick_x {
        x
    } else {
        y
    }
}

/// [`eval_cvt`], inlined into the interpreter's per-instruction lane loops (with a constant op and
/// type it folds to a few machine instructions).
#[inline(always)]
pub(crate) fn cvt_inline(from: ScalarType, to: ScalarType, a: u64) -> u64 {
    let r = if from.is_float() {
        let x = to_f64(from, a);
        if to.is_float() {
            from_f64(to, x)
        } else if let Some((lo, hi)) = to.int_range() {
            // cvt.rzi saturates; NaN gives 0
            if x.is_nan() {
                0
            } else {
                (x.trunc().clamp(lo as f64, hi as f64) as i64) as u64
            }
        } else {
            (x != 0.0) as u64
        }
    } else {
        // integer or predicate source: its canonical bits are its value as i64 (u32 zero-extended)
        let x = a as i64;
        if to.is_float() {
            from_f64(to, x as f64)
        } else if to == ScalarType::Pred {
            (x != 0) as u64
        } else {
            x as u64
        }
    };
    canonical(to, r)
}
