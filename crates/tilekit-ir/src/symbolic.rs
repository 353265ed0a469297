//! The symbolic index domain: [`Val`] implements `tilekit_layout::Idx` and [`Pred`] implements
//! `IdxBool`, so every transform, adaptor and descriptor of tilekit-layout generates IR unchanged.
//!
//! ```text
//!   TensorDescriptor<Val>::calculate_offset(&[tid_row, Val::lit(3)])
//!        │  the generic code calls  +  *  /  %  ^  lt  eq_  select  on Val
//!        ▼
//!   Val op Val ──► both literals?  fold in i64 now (no kernel involved)
//!              └─► otherwise       Ctx::binary: type unification, folding, ranges, CSE
//!                                   (crate::passes::fold, crate::passes::cse)
//!        ▼
//!   only the math that depends on tid / ctaid / runtime params is left as instructions
//! ```
//!
//! Operators cannot return errors, so a failure (type mismatch, constant division by zero,
//! values of two kernels) gives a `Val` that carries the error and is recorded in the kernel;
//! [`crate::KernelBuilder::finish`] returns it.
//!
//! ```
//! use tilekit_ir::{KernelBuilder, Axis, Val};
//! use tilekit_layout::{Idx, TensorDescriptor};
//! let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
//! let d = TensorDescriptor::naive(vec![Val::lit(8), Val::lit(8)], vec![Val::lit(8), Val::lit(1)], None).unwrap();
//! let t = b.thread_id(Axis::X);
//! let off = d.calculate_offset(&[t.clone() / Val::lit(8), t.clone() % Val::lit(8)]).unwrap();
//! b.keep(&off);
//! // row*8 + col with row = tid>>3, col = tid&7: shr, mul, and, add + the tid.x read
//! assert_eq!(b.finish().unwrap().instruction_count(), 5);
//! ```

use std::cell::RefCell;
use std::ops::{Add, BitXor, Div, Mul, Rem, Sub};
use std::rc::Rc;

use tilekit_layout::{Idx, IdxBool};

use crate::builder::Ctx;
use crate::error::IrError;
use crate::op::{BinOp, CmpOp, UnOp, ValueId};
use crate::types::{Lit, ScalarType};
use crate::value::{Pred, Repr, Val};

/// The kernel of a value and its id, with literals materialised in `ty`.
fn materialise(c: &mut Ctx, v: &Val, ty: ScalarType, op: &str) -> Result<ValueId, IrError> {
    match &v.0 {
        Repr::Sym { id, .. } => {
            c.check_scope(*id, op)?;
            Ok(*id)
        }
        Repr::Lit(x) => c.lit_as(*x, ty, op),
        Repr::Err(e) => Err((**e).clone()),
    }
}

/// Unifies the types of two operands: literals adopt, 32-bit ints widen to i64.
fn unify(c: &mut Ctx, a: ValueId, b: ValueId, op: &str) -> Result<(ValueId, ValueId), IrError> {
    let (ta, tb) = (c.ty(a), c.ty(b));
    if ta == tb {
        return Ok((a, b));
    }
    let widen = |t: ScalarType| matches!(t, ScalarType::I32 | ScalarType::U32);
    if ta == ScalarType::I64 && widen(tb) {
        return Ok((a, c.cvt(b, ScalarType::I64)?));
    }
    if tb == ScalarType::I64 && widen(ta) {
        return Ok((c.cvt(a, ScalarType::I64)?, b));
    }
    Err(IrError::TypeMismatch { op: op.into(), left: ta, right: tb })
}

/// The context two values share (error when they come from different kernels).
fn context(a: &Val, b: &Val, op: &str) -> Result<Option<Rc<RefCell<Ctx>>>, IrError> {
    let ca = match &a.0 {
        Repr::Sym { ctx, .. } => Some(ctx),
        Repr::Err(e) => return Err((**e).clone()),
        Repr::Lit(_) => None,
    };
    let cb = match &b.0 {
        Repr::Sym { ctx, .. } => Some(ctx),
        Repr::Err(e) => return Err((**e).clone()),
        Repr::Lit(_) => None,
    };
    match (ca, cb) {
        (Some(x), Some(y)) if !Rc::ptr_eq(x, y) => {
            Err(IrError::ForeignValue { op: op.into(), value: format!("{b:?}") })
        }
        (Some(x), _) | (None, Some(x)) => Ok(Some(x.clone())),
        (None, None) => Ok(None),
    }
}

fn fail(ctx: Option<&Rc<RefCell<Ctx>>>, e: IrError) -> Val {
    if let Some(c) = ctx {
        c.borrow_mut().record(&e);
    }
    Val::err(e)
}

/// Runs `f` on the shared context with both operands materialised and unified.
fn with_ctx(
    a: &Val,
    b: &Val,
    op: &str,
    f: impl FnOnce(&mut Ctx, ValueId, ValueId) -> Result<ValueId, IrError>,
) -> Val {
    let ctx = match context(a, b, op) {
        Ok(Some(c)) => c,
        Ok(None) => {
            return Val::err(IrError::ForeignValue { op: op.into(), value: "literal".into() })
        }
        Err(e) => {
            let c = context_of_any(a, b);
            return fail(c.as_ref(), e);
        }
    };
    let r = {
        let mut c = ctx.borrow_mut();
        let hint = a.ty().or(b.ty()).unwrap_or(c.index_ty);
        materialise(&mut c, a, hint, op)
            .and_then(|x| Ok((x, materialise(&mut c, b, hint, op)?)))
            .and_then(|(x, y)| unify(&mut c, x, y, op))
            .and_then(|(x, y)| f(&mut c, x, y))
            .map(|id| (id, c.ty(id)))
    };
    match r {
        Ok((id, ty)) => Val::sym(&ctx, id, ty),
        Err(e) => fail(Some(&ctx), e),
    }
}

fn context_of_any(a: &Val, b: &Val) -> Option<Rc<RefCell<Ctx>>> {
    [a, b].into_iter().find_map(|v| match &v.0 {
        Repr::Sym { ctx, .. } => Some(ctx.clone()),
        _ => None,
    })
}

fn lit_binary(op: BinOp, x: i64, y: i64) -> Val {
    match crate::eval::eval_binary(op, ScalarType::I64, x as u64, y as u64) {
        Ok(r) => Val(Repr::Lit(r as i64)),
        Err(_) => Val::err(IrError::DivisionByZero { op: format!("{} {x}, {y}", op.name()) }),
    }
}

fn binary(op: BinOp, a: Val, b: Val) -> Val {
    if let (Repr::Lit(x), Repr::Lit(y)) = (&a.0, &b.0) {
        return lit_binary(op, *x, *y);
    }
    with_ctx(&a, &b, op.name(), |c, x, y| c.binary(op, x, y))
}

macro_rules! impl_op {
    ($tr:ident, $m:ident, $op:expr) => {
        impl $tr for Val {
            type Output = Val;
            fn $m(self, rhs: Val) -> Val {
                binary($op, self, rhs)
            }
        }
        impl $tr<&Val> for &Val {
            type Output = Val;
            fn $m(self, rhs: &Val) -> Val {
                binary($op, self.clone(), rhs.clone())
            }
        }
    };
}

impl_op!(Add, add, BinOp::Add);
impl_op!(Sub, sub, BinOp::Sub);
impl_op!(Mul, mul, BinOp::Mul);
impl_op!(Div, div, BinOp::Div);
impl_op!(Rem, rem, BinOp::Rem);
impl_op!(BitXor, bitxor, BinOp::Xor);

fn compare(op: CmpOp, a: &Val, b: &Val) -> Pred {
    if let (Repr::Lit(x), Repr::Lit(y)) = (&a.0, &b.0) {
        let r = crate::eval::eval_cmp(op, ScalarType::I64, *x as u64, *y as u64);
        return Pred(Val(Repr::Lit(r as i64)));
    }
    Pred(with_ctx(a, b, op.name(), |c, x, y| c.cmp(op, x, y)))
}

impl Idx for Val {
    type Bool = Pred;

    fn lit(v: i64) -> Self {
        crate::value::lit(v)
    }

    fn to_const(&self) -> Option<i64> {
        self.const_int()
    }

    fn lt(&self, other: &Self) -> Pred {
        compare(CmpOp::Lt, self, other)
    }

    fn eq_(&self, other: &Self) -> Pred {
        compare(CmpOp::Eq, self, other)
    }

    fn select(cond: &Pred, if_true: Self, if_false: Self) -> Self {
        let (ctx, cid) = match &cond.0 .0 {
            Repr::Lit(c) => return if *c != 0 { if_true } else { if_false },
            Repr::Err(e) => {
                let c = context_of_any(&if_true, &if_false);
                return fail(c.as_ref(), (**e).clone());
            }
            Repr::Sym { ctx, id, .. } => (ctx.clone(), *id),
        };
        for v in [&if_true, &if_false] {
            match &v.0 {
                Repr::Sym { ctx: c, .. } if !Rc::ptr_eq(c, &ctx) => {
                    let e = IrError::ForeignValue { op: "selp".into(), value: format!("{v:?}") };
                    return fail(Some(&ctx), e);
                }
                Repr::Err(e) => return fail(Some(&ctx), (**e).clone()),
                _ => {}
            }
        }
        let r = {
            let mut c = ctx.borrow_mut();
            let hint = if_true.ty().or(if_false.ty()).unwrap_or(c.index_ty);
            materialise(&mut c, &if_true, hint, "selp")
                .and_then(|x| Ok((x, materialise(&mut c, &if_false, hint, "selp")?)))
                .and_then(|(x, y)| unify(&mut c, x, y, "selp"))
                .and_then(|(x, y)| c.select(cid, x, y))
                .map(|id| (id, c.ty(id)))
        };
        match r {
            Ok((id, ty)) => Val::sym(&ctx, id, ty),
            Err(e) => fail(Some(&ctx), e),
        }
    }

    fn min_(self, other: Self) -> Self {
        binary(BinOp::Min, self, other)
    }

    fn max_(self, other: Self) -> Self {
        binary(BinOp::Max, self, other)
    }
}

fn pred_binary(op: BinOp, a: &Pred, b: &Pred) -> Pred {
    if let (Repr::Lit(x), Repr::Lit(y)) = (&a.0 .0, &b.0 .0) {
        let r = crate::eval::eval_binary(op, ScalarType::Pred, (*x != 0) as u64, (*y != 0) as u64)
            .unwrap_or(0);
        return Pred(Val(Repr::Lit(r as i64)));
    }
    let mut op_name = op.name().to_string();
    op_name.push_str(".pred");
    // literals become pred constants
    let ctx = context_of_any(&a.0, &b.0);
    let Some(ctx) = ctx else {
        return Pred(Val::err(IrError::ForeignValue { op: op_name, value: "literal".into() }));
    };
    let r = {
        let mut c = ctx.borrow_mut();
        (|| {
            let x = materialise(&mut c, &a.0, ScalarType::Pred, &op_name)?;
            let y = materialise(&mut c, &b.0, ScalarType::Pred, &op_name)?;
            c.binary(op, x, y)
        })()
    };
    match r {
        Ok(id) => Pred(Val::sym(&ctx, id, ScalarType::Pred)),
        Err(e) => Pred(fail(Some(&ctx), e)),
    }
}

impl IdxBool for Pred {
    fn lit(v: bool) -> Self {
        Pred(Val(Repr::Lit(v as i64)))
    }

    fn to_const(&self) -> Option<bool> {
        match &self.0 .0 {
            Repr::Lit(v) => Some(*v != 0),
            Repr::Sym { ctx, id, .. } => ctx.borrow().konst_of(*id).and_then(Lit::as_bool),
            Repr::Err(_) => None,
        }
    }

    fn and(&self, other: &Self) -> Self {
        pred_binary(BinOp::And, self, other)
    }

    fn or(&self, other: &Self) -> Self {
        pred_binary(BinOp::Or, self, other)
    }

    fn not(&self) -> Self {
        match &self.0 .0 {
            Repr::Lit(v) => Pred(Val(Repr::Lit((*v == 0) as i64))),
            Repr::Err(_) => self.clone(),
            Repr::Sym { ctx, id, .. } => {
                let r = ctx.borrow_mut().unary(UnOp::Not, *id);
                match r {
                    Ok(n) => Pred(Val::sym(ctx, n, ScalarType::Pred)),
                    Err(e) => Pred(fail(Some(ctx), e)),
                }
            }
        }
    }
}
