//! Build-time folding: what makes only thread- and block-dependent index math become code.
//!
//! Every op the builder emits passes through these rules before hash-consing:
//!
//! ```text
//!   constants         add.i32 3, 4                  → const 7         (crate::eval, like the interpreter)
//!   identities        x+0, x-0, x*1, x/1, x|0, x^0  → x;   x*0, x%1, x&0, x-x, x^x → 0
//!   ranges            tid.x / 64 with tid.x ∈ 0..=63 → 0;  tid.x % 64 → tid.x;  tid.x < 64 → true
//!   strength          x / 2^k, x % 2^k with x ≥ 0    → shr x, k;  and x, 2^k−1
//!   reassociation     (x + 3) + 4 → x + 7;  (x * 2) * 4 → x * 8;  (x + 3) * 4 → x*4 + 12
//!                     (x / 3) / 5 → x / 15;  (x * 8) / 4 → x * 2;  (x * 8) % 4 → 0;  shr(shr x,1),2 → shr x,3
//!   predicates        not(a < b) → b <= a (integers), p & true → p, p | true → true
//!   canonical forms   constants on the right of commutative ops, x − c → x + (−c) (signed),
//!                     a > b → b < a, operands of commutative ops ordered (so CSE sees a+b = b+a)
//!   control           select on a constant predicate, if on a constant, loops that never run
//! ```
//!
//! Ranges: every integer value may carry an inclusive range that holds for every thread
//! (special registers know their block dims; arithmetic propagates ranges in 128-bit and drops
//! them when the type could wrap). The rules that use them never change a value.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, Axis};
//! use tilekit_layout::Idx;
//! let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
//! let t = b.thread_id(Axis::X);
//! assert_eq!((t.clone() % Idx::lit(64)).id(), t.id());
//! let x = (t.clone() + Idx::lit(3)) + Idx::lit(4);
//! let y = t.clone() + Idx::lit(7);
//! assert_eq!(x.id(), y.id());
//! ```

use crate::builder::Ctx;
use crate::error::{IrError, Result};
use crate::eval::{eval_binary, eval_cmp, eval_cvt, eval_fma, eval_pack, eval_unary, EvalError};
use crate::op::{BinOp, CmpOp, Op, UnOp, ValueId};
use crate::types::{Lit, ScalarType};

fn binary_valid(op: BinOp, ty: ScalarType) -> std::result::Result<(), &'static str> {
    let ok = if ty.is_int() {
        true
    } else if ty == ScalarType::Pred {
        matches!(op, BinOp::And | BinOp::Or | BinOp::Xor)
    } else {
        matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Min | BinOp::Max)
    };
    if ok {
        Ok(())
    } else if ty == ScalarType::Pred {
        Err("i32, u32, i64 (and, or, xor also take pred)")
    } else {
        Err("i32, u32, i64 (rem, and, or, xor, shl, shr are integer ops)")
    }
}

/// The range of `a op b` from the ranges of its operands, if it can be bounded.
///
/// ```
/// use tilekit_ir::{passes::fold::range_binary, BinOp};
/// assert_eq!(range_binary(BinOp::Mul, Some((0, 63)), Some((4, 4))), Some((0, 252)));
/// assert_eq!(range_binary(BinOp::Rem, Some((0, 1000)), Some((8, 8))), Some((0, 7)));
/// assert_eq!(range_binary(BinOp::Div, Some((-9, 9)), Some((2, 2))), Some((-4, 4)));
/// assert_eq!(range_binary(BinOp::Div, Some((0, 9)), Some((-1, 2))), None);
/// ```
pub fn range_binary(
    op: BinOp,
    ra: Option<(i64, i64)>,
    rb: Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    let (a0, a1) = ra?;
    let (b0, b1) = rb?;
    let (a0, a1, b0, b1) = (a0 as i128, a1 as i128, b0 as i128, b1 as i128);
    let corners = |f: &dyn Fn(i128, i128) -> i128| {
        let v = [f(a0, b0), f(a0, b1), f(a1, b0), f(a1, b1)];
        (*v.iter().min().unwrap_or(&0), *v.iter().max().unwrap_or(&0))
    };
    let (lo, hi) = match op {
        BinOp::Add => (a0 + b0, a1 + b1),
        BinOp::Sub => (a0 - b1, a1 - b0),
        BinOp::Mul => corners(&|x, y| x * y),
        BinOp::Div if b0 > 0 => corners(&|x, y| x / y),
        BinOp::Rem if b0 > 0 => {
            let m = b1 - 1;
            (if a0 >= 0 { 0 } else { a0.max(-m) }, if a1 <= 0 { 0 } else { a1.min(m) })
        }
        BinOp::Min => (a0.min(b0), a1.min(b1)),
        BinOp::Max => (a0.max(b0), a1.max(b1)),
        BinOp::And if a0 >= 0 && b0 >= 0 => (0, a1.min(b1)),
        BinOp::And if a0 >= 0 => (0, a1),
        BinOp::And if b0 >= 0 => (0, b1),
        BinOp::Or | BinOp::Xor if a0 >= 0 && b0 >= 0 => {
            let m = a1.max(b1) as u128;
            (0, ((m + 1).next_power_of_two() - 1) as i128)
        }
        BinOp::Shr if a0 >= 0 && b0 >= 0 && b1 < 64 => (a0 >> b1, a1 >> b0),
        BinOp::Shl if a0 >= 0 && b0 >= 0 && b1 < 62 => (a0 << b0, a1 << b1),
        _ => return None,
    };
    Some((i64::try_from(lo).ok()?, i64::try_from(hi).ok()?))
}

/// What a comparison is known to give from operand ranges.
fn decide_cmp(op: CmpOp, (a0, a1): (i64, i64), (b0, b1): (i64, i64)) -> Option<bool> {
    match op {
        CmpOp::Lt if a1 < b0 => Some(true),
        CmpOp::Lt if a0 >= b1 => Some(false),
        CmpOp::Le if a1 <= b0 => Some(true),
        CmpOp::Le if a0 > b1 => Some(false),
        CmpOp::Eq | CmpOp::Ne => {
            let eq = if a0 == a1 && b0 == b1 && a0 == b0 {
                Some(true)
            } else if a1 < b0 || b1 < a0 {
                Some(false)
            } else {
                None
            };
            eq.map(|e| e == (op == CmpOp::Eq))
        }
        _ => None,
    }
}

impl Ctx {
    fn int_lit(&mut self, ty: ScalarType, v: i64) -> ValueId {
        self.konst(Lit::from_bits(ty, v as u64))
    }

    fn eval_err(&self, e: EvalError, op: String, ty: ScalarType) -> IrError {
        match e {
            EvalError::DivisionByZero => IrError::DivisionByZero { op },
            EvalError::Unsupported => IrError::WrongType { op, ty, valid: "another type".into() },
        }
    }

    /// A folded, hash-consed binary op.
    pub(crate) fn binary(&mut self, op: BinOp, a: ValueId, b: ValueId) -> Result<ValueId> {
        let ty = self.ty(a);
        if self.ty(b) != ty {
            return Err(IrError::TypeMismatch {
                op: op.name().into(),
                left: ty,
                right: self.ty(b),
            });
        }
        if let Err(valid) = binary_valid(op, ty) {
            return Err(IrError::WrongType { op: op.name().into(), ty, valid: valid.into() });
        }
        let (ka, kb) = (self.konst_of(a), self.konst_of(b));
        if let (Some(x), Some(y)) = (ka, kb) {
            return match eval_binary(op, ty, x.bits(), y.bits()) {
                Ok(r) => Ok(self.konst(Lit::from_bits(ty, r))),
                Err(e) => Err(self.eval_err(e, format!("{}.{ty} {x}, {y}", op.name()), ty)),
            };
        }
        if op.is_commutative() && ka.is_some() {
            return self.binary(op, b, a);
        }
        if ty.is_int() {
            if let Some(v) = self.simplify_int(op, ty, a, b)? {
                return Ok(v);
            }
        } else if ty == ScalarType::Pred {
            if let Some(v) = self.simplify_pred(op, a, b)? {
                return Ok(v);
            }
        }
        let (a, b) = if op.is_commutative() && kb.is_none() && a > b { (b, a) } else { (a, b) };
        let range =
            if ty.is_int() { range_binary(op, self.range_of(a), self.range_of(b)) } else { None };
        Ok(self.intern(Op::Binary(op, a, b), ty, range))
    }

    fn simplify_pred(&mut self, op: BinOp, a: ValueId, b: ValueId) -> Result<Option<ValueId>> {
        if a == b {
            return Ok(Some(match op {
                BinOp::Xor => self.konst(Lit::pred(false)),
                _ => a,
            }));
        }
        let Some(c) = self.konst_of(b).and_then(Lit::as_bool) else {
            return Ok(None);
        };
        Ok(Some(match (op, c) {
            (BinOp::And, false) | (BinOp::Or, true) => b,
            (BinOp::And, true) | (BinOp::Or, false) | (BinOp::Xor, false) => a,
            (BinOp::Xor, true) => self.unary(UnOp::Not, a)?,
            _ => return Ok(None),
        }))
    }

    fn simplify_int(
        &mut self,
        op: BinOp,
        ty: ScalarType,
        a: ValueId,
        b: ValueId,
    ) -> Result<Option<ValueId>> {
        if a == b {
            match op {
                BinOp::Sub | BinOp::Xor => return Ok(Some(self.int_lit(ty, 0))),
                BinOp::And | BinOp::Or | BinOp::Min | BinOp::Max => return Ok(Some(a)),
                _ => {}
            }
        }
        let Some(c) = self.int_of(b) else {
            return Ok(None);
        };
        let all_ones = Lit::from_bits(ty, u64::MAX).as_i64() == Some(c);
        let zero = |s: &mut Self| Ok(Some(s.int_lit(ty, 0)));
        match op {
            BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr
                if c == 0 =>
            {
                return Ok(Some(a))
            }
            BinOp::Mul | BinOp::Div if c == 1 => return Ok(Some(a)),
            BinOp::Mul | BinOp::And if c == 0 => return zero(self),
            BinOp::Rem if c == 1 || c == -1 => return zero(self),
            BinOp::And if all_ones => return Ok(Some(a)),
            BinOp::Sub if ty.is_signed() => {
                if let Some(n) = c.checked_neg() {
                    let n = self.int_lit(ty, n);
                    return self.binary(BinOp::Add, a, n).map(Some);
                }
            }
            _ => {}
        }
        // patterns on the definition of `a` with a constant second operand
        if let Some(r) = self.simplify_pattern(op, ty, a, b, c)? {
            return Ok(Some(r));
        }
        if let Some((lo, hi)) = self.range_of(a) {
            match op {
                BinOp::Div if c > 0 && lo >= 0 && hi < c => return zero(self),
                BinOp::Rem if c > 0 && lo >= 0 && hi < c => return Ok(Some(a)),
                BinOp::Min if hi <= c => return Ok(Some(a)),
                BinOp::Min if lo >= c => return Ok(Some(b)),
                BinOp::Max if lo >= c => return Ok(Some(a)),
                BinOp::Max if hi <= c => return Ok(Some(b)),
                BinOp::Div if c > 0 && lo >= 0 && (c as u64).is_power_of_two() => {
                    let k = self.int_lit(ty, c.trailing_zeros() as i64);
                    return self.binary(BinOp::Shr, a, k).map(Some);
                }
                BinOp::Rem if c > 0 && lo >= 0 && (c as u64).is_power_of_two() => {
                    let m = self.int_lit(ty, c - 1);
                    return self.binary(BinOp::And, a, m).map(Some);
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// Rules on the definition of `a` (`a = x inner c1`) with a constant `c`.
    fn simplify_pattern(
        &mut self,
        op: BinOp,
        ty: ScalarType,
        a: ValueId,
        b: ValueId,
        c: i64,
    ) -> Result<Option<ValueId>> {
        let bits = ty.size_bytes() as i64 * 8;
        let Some(Op::Binary(inner, x, y)) = self.def(a).cloned() else {
            return Ok(None);
        };
        let Some(c1) = self.int_of(y) else {
            return Ok(None);
        };
        let a_ranged = self.range_of(a).is_some();
        let r = match (op, inner) {
            (BinOp::Add, BinOp::Add) => {
                let s = self.int_lit(ty, c1.wrapping_add(c));
                self.binary(BinOp::Add, x, s)?
            }
            (BinOp::Mul, BinOp::Mul) => {
                let p = self.int_lit(ty, c1.wrapping_mul(c));
                self.binary(BinOp::Mul, x, p)?
            }
            (BinOp::Mul, BinOp::Add) => {
                let xc = self.binary(BinOp::Mul, x, b)?;
                let p = self.int_lit(ty, c1.wrapping_mul(c));
                self.binary(BinOp::Add, xc, p)?
            }
            (BinOp::Div, BinOp::Div) if c > 0 && c1 > 0 => match c1.checked_mul(c) {
                Some(p) if Lit::int(ty, p).is_some() => {
                    let p = self.int_lit(ty, p);
                    self.binary(BinOp::Div, x, p)?
                }
                _ => return Ok(None),
            },
            (BinOp::Div, BinOp::Mul) if c > 0 && c1 % c == 0 && a_ranged => {
                let q = self.int_lit(ty, c1 / c);
                self.binary(BinOp::Mul, x, q)?
            }
            (BinOp::Rem, BinOp::Mul) if c != 0 && c1 % c == 0 && a_ranged => self.int_lit(ty, 0),
            (BinOp::Shr, BinOp::Shr) if c > 0 && c1 > 0 && c + c1 < bits => {
                let s = self.int_lit(ty, c + c1);
                self.binary(BinOp::Shr, x, s)?
            }
            (BinOp::And, BinOp::And) => {
                let m = self.int_lit(ty, c & c1);
                self.binary(BinOp::And, x, m)?
            }
            _ => return Ok(None),
        };
        Ok(Some(r))
    }

    /// A folded unary op.
    pub(crate) fn unary(&mut self, op: UnOp, a: ValueId) -> Result<ValueId> {
        let ty = self.ty(a);
        let ok = match op {
            UnOp::Neg | UnOp::Abs => ty.is_int() || ty.is_float(),
            UnOp::Not => ty.is_int() || ty == ScalarType::Pred,
            UnOp::Sqrt => ty.is_float(),
            UnOp::Exp2Approx
            | UnOp::Exp2ApproxFtz
            | UnOp::RcpApprox
            | UnOp::RsqrtApprox
            | UnOp::Lg2Approx => ty == ScalarType::F32,
        };
        if !ok {
            return Err(IrError::WrongType {
                op: op.name().into(),
                ty,
                valid: match op {
                    UnOp::Exp2Approx
                    | UnOp::Exp2ApproxFtz
                    | UnOp::RcpApprox
                    | UnOp::RsqrtApprox
                    | UnOp::Lg2Approx => "f32",
                    UnOp::Sqrt => "f16, bf16, f32, f64",
                    UnOp::Not => "i32, u32, i64, pred",
                    _ => "i32, u32, i64, f16, bf16, f32, f64",
                }
                .into(),
            });
        }
        if let Some(x) = self.konst_of(a) {
            let r =
                eval_unary(op, ty, x.bits()).map_err(|e| self.eval_err(e, op.name().into(), ty))?;
            return Ok(self.konst(Lit::from_bits(ty, r)));
        }
        match self.def(a).cloned() {
            Some(Op::Unary(inner, x)) if inner == op && matches!(op, UnOp::Neg | UnOp::Not) => {
                return Ok(x)
            }
            // not(a < b) = b <= a for integers (not for floats: NaN)
            Some(Op::Cmp(c, x, y)) if op == UnOp::Not && self.ty(x).is_int() => {
                return match c {
                    CmpOp::Lt => self.cmp(CmpOp::Le, y, x),
                    CmpOp::Le => self.cmp(CmpOp::Lt, y, x),
                    CmpOp::Eq => self.cmp(CmpOp::Ne, x, y),
                    CmpOp::Ne => self.cmp(CmpOp::Eq, x, y),
                    CmpOp::Gt => self.cmp(CmpOp::Le, x, y),
                    CmpOp::Ge => self.cmp(CmpOp::Lt, x, y),
                };
            }
            _ => {}
        }
        let range = match (op, self.range_of(a)) {
            (UnOp::Neg, Some((lo, hi))) => {
                lo.checked_neg().zip(hi.checked_neg()).map(|(l, h)| (h, l))
            }
            _ => None,
        };
        Ok(self.intern(Op::Unary(op, a), ty, range))
    }

    /// A folded fma (`mul` + `add` for integers, so their rules apply).
    pub(crate) fn fma(&mut self, a: ValueId, b: ValueId, c: ValueId) -> Result<ValueId> {
        let ty = self.ty(a);
        for x in [b, c] {
            if self.ty(x) != ty {
                return Err(IrError::TypeMismatch {
                    op: "fma".into(),
                    left: ty,
                    right: self.ty(x),
                });
            }
        }
        if ty.is_int() {
            let m = self.binary(BinOp::Mul, a, b)?;
            return self.binary(BinOp::Add, m, c);
        }
        if !ty.is_float() {
            return Err(IrError::WrongType {
                op: "fma".into(),
                ty,
                valid: "i32, u32, i64, f16, bf16, f32, f64".into(),
            });
        }
        if let (Some(x), Some(y), Some(z)) = (self.konst_of(a), self.konst_of(b), self.konst_of(c))
        {
            let r = eval_fma(ty, x.bits(), y.bits(), z.bits())
                .map_err(|e| self.eval_err(e, "fma".into(), ty))?;
            return Ok(self.konst(Lit::from_bits(ty, r)));
        }
        let (a, b) = if a > b { (b, a) } else { (a, b) };
        Ok(self.intern(Op::Fma(a, b, c), ty, None))
    }

    /// A folded comparison.
    pub(crate) fn cmp(&mut self, op: CmpOp, a: ValueId, b: ValueId) -> Result<ValueId> {
        let ty = self.ty(a);
        if self.ty(b) != ty {
            return Err(IrError::TypeMismatch {
                op: op.name().into(),
                left: ty,
                right: self.ty(b),
            });
        }
        if ty == ScalarType::Pred {
            return Err(IrError::WrongType {
                op: op.name().into(),
                ty,
                valid: "i32, u32, i64, f16, bf16, f32, f64 (compare predicates with xor)".into(),
            });
        }
        if let (Some(x), Some(y)) = (self.konst_of(a), self.konst_of(b)) {
            return Ok(self.konst(Lit::pred(eval_cmp(op, ty, x.bits(), y.bits()) != 0)));
        }
        match op {
            CmpOp::Gt => return self.cmp(CmpOp::Lt, b, a),
            CmpOp::Ge => return self.cmp(CmpOp::Le, b, a),
            _ => {}
        }
        if ty.is_int() {
            if a == b {
                let r = matches!(op, CmpOp::Le | CmpOp::Eq);
                return Ok(self.konst(Lit::pred(r)));
            }
            if let (Some(ra), Some(rb)) = (self.range_of(a), self.range_of(b)) {
                if let Some(r) = decide_cmp(op, ra, rb) {
                    return Ok(self.konst(Lit::pred(r)));
                }
            }
        }
        let (a, b) = if matches!(op, CmpOp::Eq | CmpOp::Ne) && a > b { (b, a) } else { (a, b) };
        Ok(self.intern(Op::Cmp(op, a, b), ScalarType::Pred, None))
    }

    /// A folded select.
    pub(crate) fn select(&mut self, c: ValueId, a: ValueId, b: ValueId) -> Result<ValueId> {
        let ty = self.ty(a);
        if self.ty(b) != ty {
            return Err(IrError::TypeMismatch { op: "selp".into(), left: ty, right: self.ty(b) });
        }
        if let Some(k) = self.konst_of(c).and_then(Lit::as_bool) {
            return Ok(if k { a } else { b });
        }
        if a == b {
            return Ok(a);
        }
        if ty == ScalarType::Pred {
            // c ? a : b  ==  (c & a) | (!c & b)
            let ca = self.binary(BinOp::And, c, a)?;
            let nc = self.unary(UnOp::Not, c)?;
            let ncb = self.binary(BinOp::And, nc, b)?;
            return self.binary(BinOp::Or, ca, ncb);
        }
        let range = match (self.range_of(a), self.range_of(b)) {
            (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
            _ => None,
        };
        Ok(self.intern(Op::Select(c, a, b), ty, range))
    }

    /// A folded conversion.
    pub(crate) fn cvt(&mut self, a: ValueId, to: ScalarType) -> Result<ValueId> {
        let from = self.ty(a);
        if from == to {
            return Ok(a);
        }
        if let Some(x) = self.konst_of(a) {
            return Ok(self.konst(Lit::from_bits(to, eval_cvt(from, to, x.bits()))));
        }
        let range = if to.is_int() {
            if from == ScalarType::Pred {
                Some((0, 1))
            } else if from.is_int() {
                self.range_of(a)
            } else {
                None
            }
        } else {
            None
        };
        Ok(self.intern(Op::Cvt(a), to, range))
    }

    /// A folded pack of two f32 rounded to `to` (F16 or BF16) into a u32 (`lo` low).
    pub(crate) fn cvt_pack(&mut self, lo: ValueId, hi: ValueId, to: ScalarType) -> Result<ValueId> {
        let op = format!("cvt.rn.{to}x2.f32");
        if !matches!(to, ScalarType::F16 | ScalarType::BF16) {
            return Err(IrError::WrongType { op, ty: to, valid: "f16 or bf16".into() });
        }
        for v in [lo, hi] {
            let ty = self.ty(v);
            if ty != ScalarType::F32 {
                return Err(IrError::WrongType { op, ty, valid: "f32 operands".into() });
            }
        }
        if let (Some(x), Some(y)) = (self.konst_of(lo), self.konst_of(hi)) {
            let bits = eval_pack(to, x.bits(), y.bits());
            return Ok(self.konst(Lit::from_bits(ScalarType::U32, bits)));
        }
        Ok(self.intern(Op::CvtPack(to, lo, hi), ScalarType::U32, None))
    }
}
