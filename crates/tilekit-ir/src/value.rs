//! The builder's value handles: [`Val`] (any scalar) and [`Pred`] (a predicate).
//!
//! `tilekit_layout::Idx` fixes the signatures of its operations — `a + b`, `I::lit(3)`,
//! `I::select(&c, x, y)` — so there is no argument to pass the kernel under construction
//! through. A symbolic value therefore **carries a handle to its kernel**:
//!
//! ```text
//!   Val ──┬── Lit(i64)                 an untyped integer constant with no kernel (Idx::lit):
//!         │                            it takes the type of the value it meets
//!         ├── Sym { ctx, id, ty } ───► Rc<RefCell<Ctx>>  the kernel being built (one per
//!         │                            KernelBuilder; values, blocks, CSE tables, sticky error)
//!         └── Err(IrError)             a failed operation; it poisons what is computed from it,
//!                                      and the first error is also kept in the kernel
//! ```
//!
//! `Rc<RefCell<…>>` is the plain choice for this: building a kernel is single-threaded (so
//! `Rc`, not `Arc`), values are cheap clones, and every borrow of the context is taken and
//! released inside one builder call, never across user code (so a `RefCell` never sees two
//! borrows at once). The finished [`crate::Kernel`] holds no `Rc` and is `Send + Sync`.
//!
//! Mixing rules of the `Val` operators: an untyped literal takes the other side's type (floats
//! included: `x_f32 * Val::lit(2)` multiplies by `2.0`); `i32`/`u32` meeting `i64` is widened to
//! `i64`; any other mix is a sticky [`crate::IrError::TypeMismatch`].

use std::cell::RefCell;
use std::rc::Rc;

use crate::builder::Ctx;
use crate::error::IrError;
use crate::op::ValueId;
use crate::types::ScalarType;

#[derive(Clone)]
pub(crate) enum Repr {
    Lit(i64),
    Sym { ctx: Rc<RefCell<Ctx>>, id: ValueId, ty: ScalarType },
    Err(Box<IrError>),
}

/// A value of the kernel under construction (or an untyped integer literal): the symbolic index
/// domain. See the [module docs](self).
///
/// ```
/// use tilekit_ir::{KernelBuilder, Val, Axis};
/// use tilekit_layout::Idx;
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let t = b.thread_id(Axis::X);
/// assert_eq!((Val::lit(3) * Val::lit(4)).to_const(), Some(12)); // folds, no kernel needed
/// assert_eq!((t.clone() * Val::lit(0)).to_const(), Some(0));      // x * 0 folds
/// assert_eq!((t.clone() / Val::lit(64)).to_const(), Some(0));     // 0 <= tid.x < 64
/// assert_eq!(t.to_const(), None);
/// ```
#[derive(Clone)]
pub struct Val(pub(crate) Repr);

/// A predicate of the kernel under construction (or a constant): the symbolic domain's
/// `IdxBool`.
///
/// ```
/// use tilekit_ir::{KernelBuilder, Axis, Pred};
/// use tilekit_layout::{Idx, IdxBool};
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// let t = b.thread_id(Axis::X);
/// assert_eq!(t.lt(&tilekit_ir::Val::lit(64)).to_const(), Some(true)); // known from the range
/// let p = t.lt(&tilekit_ir::Val::lit(10));
/// assert_eq!(p.to_const(), None);
/// assert_eq!(p.and(&Pred::lit(false)).to_const(), Some(false));
/// ```
#[derive(Clone)]
pub struct Pred(pub(crate) Val);

/// The untyped integer literal `v`: `Idx::lit(v)` for [`Val`] without naming the trait or the
/// type. It has no kernel and takes the type of the value it meets (see the [module
/// docs](self)); operations on literals alone fold at build time. The one literal helper of the
/// workspace: kernels and tests import it (`use tilekit_ir::lit;`, or `tilekit_kernel::lit`)
/// rather than defining their own.
///
/// ```
/// use tilekit_ir::{lit, Axis, KernelBuilder, Val};
/// use tilekit_layout::Idx;
/// let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
/// assert_eq!((lit(3) * lit(4)).to_const(), Some(12)); // folds, no kernel needed
/// assert_eq!(lit(7).ty(), None);                      // untyped until it meets a value
/// assert_eq!((b.thread_id(Axis::X) / lit(64)).to_const(), Some(0));
/// assert_eq!(lit(5).to_const(), <Val as Idx>::lit(5).to_const());
/// ```
pub fn lit(v: i64) -> Val {
    Val(Repr::Lit(v))
}

impl Val {
    pub(crate) fn sym(ctx: &Rc<RefCell<Ctx>>, id: ValueId, ty: ScalarType) -> Val {
        Val(Repr::Sym { ctx: ctx.clone(), id, ty })
    }

    pub(crate) fn err(e: IrError) -> Val {
        Val(Repr::Err(Box::new(e)))
    }

    /// The type, or `None` for an untyped literal (or a failed value).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, Val};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// assert_eq!(b.f32(1.0).ty(), Some(ScalarType::F32));
    /// assert_eq!(Val::lit(1).ty(), None);
    /// ```
    pub fn ty(&self) -> Option<ScalarType> {
        match &self.0 {
            Repr::Sym { ty, .. } => Some(*ty),
            _ => None,
        }
    }

    /// The SSA name, for values of a kernel.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, Val};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// assert!(b.lane_id().id().is_some());
    /// assert!(Val::lit(0).id().is_none());
    /// ```
    pub fn id(&self) -> Option<ValueId> {
        match &self.0 {
            Repr::Sym { id, .. } => Some(*id),
            _ => None,
        }
    }

    /// The error, for a value whose computation failed.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, Val};
    /// use tilekit_layout::Idx;
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let bad = b.f32(1.0) + b.lane_id();   // f32 + i32
    /// assert!(bad.error().unwrap().to_string().contains("operand types differ"));
    /// ```
    pub fn error(&self) -> Option<&IrError> {
        match &self.0 {
            Repr::Err(e) => Some(e),
            _ => None,
        }
    }

    /// The integer constant, if known at build time.
    ///
    /// ```
    /// use tilekit_ir::Val;
    /// use tilekit_layout::Idx;
    /// assert_eq!(Val::lit(5).const_int(), Some(5));
    /// ```
    pub fn const_int(&self) -> Option<i64> {
        match &self.0 {
            Repr::Lit(v) => Some(*v),
            Repr::Sym { ctx, id, .. } => ctx.borrow().info(*id).konst.and_then(|l| l.as_i64()),
            Repr::Err(_) => None,
        }
    }

    /// The constant (any type), if known at build time; untyped literals are `None`.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, Lit};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// assert_eq!(b.f32(2.0).const_lit(), Some(Lit::f32(2.0)));
    /// ```
    pub fn const_lit(&self) -> Option<crate::types::Lit> {
        match &self.0 {
            Repr::Sym { ctx, id, .. } => ctx.borrow().info(*id).konst,
            _ => None,
        }
    }

    /// The known inclusive range of an integer value (a literal's is itself).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, Axis};
    /// let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
    /// assert_eq!(b.thread_id(Axis::X).range(), Some((0, 127)));
    /// ```
    pub fn range(&self) -> Option<(i64, i64)> {
        match &self.0 {
            Repr::Lit(v) => Some((*v, *v)),
            Repr::Sym { ctx, id, .. } => ctx.borrow().info(*id).range,
            Repr::Err(_) => None,
        }
    }
}

impl Pred {
    /// The value as a [`Val`] of type `pred` (a literal predicate is a `Val` literal 0/1).
    ///
    /// ```
    /// use tilekit_ir::Pred;
    /// use tilekit_layout::IdxBool;
    /// assert_eq!(Pred::lit(true).as_val().const_int(), Some(1));
    /// ```
    pub fn as_val(&self) -> &Val {
        &self.0
    }

    /// The SSA name, for predicates of a kernel.
    ///
    /// ```
    /// use tilekit_ir::Pred;
    /// use tilekit_layout::IdxBool;
    /// assert!(Pred::lit(true).id().is_none());
    /// ```
    pub fn id(&self) -> Option<ValueId> {
        self.0.id()
    }

    /// The error, for a predicate whose computation failed.
    ///
    /// ```
    /// use tilekit_ir::Pred;
    /// use tilekit_layout::IdxBool;
    /// assert!(Pred::lit(false).error().is_none());
    /// ```
    pub fn error(&self) -> Option<&IrError> {
        self.0.error()
    }
}

impl std::fmt::Debug for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Repr::Lit(v) => write!(f, "{v}"),
            Repr::Sym { id, ty, .. } => write!(f, "{id}:{ty}"),
            Repr::Err(e) => write!(f, "<error: {e}>"),
        }
    }
}

impl std::fmt::Debug for Pred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 .0 {
            Repr::Lit(v) => write!(f, "{}", *v != 0),
            _ => write!(f, "{:?}", self.0),
        }
    }
}
