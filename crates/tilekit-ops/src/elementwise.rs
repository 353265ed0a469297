//! Elementwise binary ops `c = a ∘ b` (add, mul, max) with `b` full, a row vector (broadcast over
//! rows) or a column vector (broadcast over columns).
//!
//! ```text
//!   broadcast is a view, not code: b's (lengths, strides) are (M, N) with strides
//!     full (N, 1)   row vector (0, 1)   column vector (1, 0)
//!   so the same window walk reads b[j] or b[i]; a stride-0 last dim has no vector guarantee
//!   (scalar loads), a row vector keeps 16-byte loads.
//!   math in f32 (16-bit inputs widened, the result rounded once): equal to the f64 reference
//!   rounded to the type, so the check is exact.
//!   griddepcontrol.wait before the loads, launch_dependents after them (programmatic
//!   dependent launch, tilekit_cuda::module)
//! ```
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::{backend::Interp, check::{check, Op}, elementwise::{Binary, Broadcast}};
//! let o = check(&Interp, Op::Elementwise(Binary::Add, Broadcast::Row), &[5, 9], ScalarType::F16, 1);
//! assert!(o.unwrap().compare().passed);
//! ```

use tilekit_ir::{Axis, BinOp, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::Idx;

use crate::dist;
use crate::error::Result;
use crate::host;
use crate::tile::{View, Window};

/// The operation.
///
/// ```
/// assert_eq!(tilekit_ops::elementwise::Binary::Mul.name(), "mul");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a · b`.
    Mul,
    /// `max(a, b)`, NaN if either is NaN (`torch.maximum`; PTX `max.NaN`).
    Max,
}

impl Binary {
    /// The name (`add`, `mul`, `max`).
    ///
    /// ```
    /// assert_eq!(tilekit_ops::elementwise::Binary::Max.name(), "max");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Mul => "mul",
            Binary::Max => "max",
        }
    }

    fn op(self) -> BinOp {
        match self {
            Binary::Add => BinOp::Add,
            Binary::Mul => BinOp::Mul,
            Binary::Max => BinOp::Max,
        }
    }

    /// The op on two `f64`s: the CPU reference. `Max` propagates NaN, as the kernels do.
    ///
    /// ```
    /// use tilekit_ops::elementwise::Binary;
    /// assert_eq!(Binary::Max.apply(1.0, -2.0), 1.0);
    /// assert!(Binary::Max.apply(f64::NAN, 1.0).is_nan() && Binary::Max.apply(1.0, f64::NAN).is_nan());
    /// ```
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Binary::Add => a + b,
            Binary::Mul => a * b,
            Binary::Max if a.is_nan() || b.is_nan() => f64::NAN,
            Binary::Max => a.max(b),
        }
    }
}

/// The shape of `b`.
///
/// ```
/// use tilekit_ops::elementwise::Broadcast;
/// assert_eq!(Broadcast::Col.strides(4, 6), [1, 0]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broadcast {
    /// `b` is `M × N`.
    None,
    /// `b` is a row vector of `N`, the same for every row.
    Row,
    /// `b` is a column vector of `M`, the same for every column.
    Col,
}

impl Broadcast {
    /// The strides that view `b` as `M × N`.
    ///
    /// ```
    /// use tilekit_ops::elementwise::Broadcast;
    /// assert_eq!(Broadcast::Row.strides(4, 6), [0, 1]);
    /// ```
    pub fn strides(self, _m: i64, n: i64) -> [i64; 2] {
        match self {
            Broadcast::None => [n, 1],
            Broadcast::Row => [0, 1],
            Broadcast::Col => [1, 0],
        }
    }

    /// Elements of `b` for an `m × n` problem.
    ///
    /// ```
    /// use tilekit_ops::elementwise::Broadcast;
    /// assert_eq!((Broadcast::None.len(4, 6), Broadcast::Row.len(4, 6), Broadcast::Col.len(4, 6)), (24, 6, 4));
    /// ```
    #[allow(clippy::len_without_is_empty)] // a count for a problem size, not a container
    pub fn len(self, m: i64, n: i64) -> i64 {
        match self {
            Broadcast::None => m.saturating_mul(n), // shapes are checked before
            Broadcast::Row => n,
            Broadcast::Col => m,
        }
    }
}

/// `c = a ∘ b`: params `a`, `b`, `c` (2-D, runtime lengths/strides); `va`, `vb` the vector
/// guarantees of a/c and of b.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::elementwise::{build, Binary};
/// let k = build(Binary::Mul, ScalarType::BF16, 8, 1).unwrap();
/// assert!(k.to_string().contains("ld.global.v8.bf16") && k.to_string().contains("ld.global.bf16"));
/// assert!(k.waits_on_prior_grid()); // may be launched as a programmatic dependent
/// ```
pub fn build(op: Binary, ty: ScalarType, va: i64, vb: i64) -> Result<Kernel> {
    build_indexed(op, ty, va, vb, ScalarType::I32)
}

/// [`build`] with lengths, strides and offsets of `index` type (`i32`, or `i64` for tensors
/// past 2^31 elements: [`host::index_type`] picks it).
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::elementwise::{build_indexed, Binary};
/// let k = build_indexed(Binary::Add, ScalarType::F32, 4, 4, ScalarType::I64).unwrap();
/// let i64 = tilekit_ir::ParamKind::Scalar(ScalarType::I64);
/// assert!(k.params.iter().filter(|p| p.name.contains(".len")).all(|p| p.kind == i64));
/// ```
pub fn build_indexed(
    op: Binary,
    ty: ScalarType,
    va: i64,
    vb: i64,
    index: ScalarType,
) -> Result<Kernel> {
    host::check_dtype(op.name(), ty, &host::FLOAT_TYPES)?;
    let (tm, tn) = crate::copy::tile(ty);
    let v = 16 / ty.size_bytes() as i64;
    let b = KernelBuilder::new(op.name(), [crate::copy::THREADS, 1, 1])?;
    b.set_index_type(index)?;
    let a = b.tensor_param("a", ty, 2)?;
    let bb = b.tensor_param("b", ty, 2)?;
    let c = b.tensor_param("c", ty, 2)?;
    let d = dist::row_major(tm, tn, crate::copy::THREADS as i64, v)?;
    let origin = [b.block_id(Axis::Y) * Val::lit(tm), b.block_id(Axis::X) * Val::lit(tn)];
    let win = |t: &tilekit_ir::TensorParam, vec: i64| -> Result<Window> {
        Ok(Window::new(&b, &View::global(t, vec)?.pad(&[tm, tn])?, &[tm, tn], &origin, &d)?)
    };
    b.grid_dependency_wait(); // programmatic dependent launch: before the first global access
    let x = win(&a, va)?.load(&b)?.cast(&b, ScalarType::F32)?;
    let y = win(&bb, vb)?.load(&b)?.cast(&b, ScalarType::F32)?;
    b.launch_dependents(); // both operands' loads are out: the next grid may launch
    let z = x.zip_map(&b, &y, |b, p, q| Ok(b.binary(op.op(), p, q)?))?.cast(&b, ty)?;
    win(&c, va)?.store(&b, &z)?;
    Ok(b.finish()?)
}
