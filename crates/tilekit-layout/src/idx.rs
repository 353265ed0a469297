//! The index domain: the one abstraction every piece of index math is written against.
//!
//! CK Tile splits integers into compile-time `number<N>` and run-time `index_t`, and resolves
//! the compile-time half with template metaprogramming. tilekit writes every transform, adaptor,
//! descriptor, curve and distribution **once**, generic over an index domain [`Idx`], and lets the
//! domain decide what an operation means:
//!
//! ```text
//!                      one source of truth
//!           ┌──────────────────────────────────────┐
//!           │  Transform::lower_index(&[I]) -> Vec<I>
//!           │  TensorDescriptor::calculate_offset   │
//!           │  SpaceFillingCurve::index_of, ...     │
//!           └──────────────┬───────────────────────┘
//!                          │ I: Idx
//!            ┌─────────────┴──────────────┐
//!            ▼                            ▼
//!      I = i64 (here)               I = symbolic IR value (tilekit-ir)
//!      evaluates now:               records instructions; constants fold,
//!      tests, conformance,          so only thread/block-dependent math
//!      analyses, rendering          becomes code in the generated kernel
//! ```
//!
//! Rules that keep code generic (they matter for the symbolic domain):
//!
//! * never convert a domain value to a concrete integer (`as i64`) inside index math — ask
//!   [`Idx::to_const`] only where the *reference* itself needs a compile-time number (guaranteed
//!   vector lengths, validation of parameters);
//! * never branch on a concrete value: use [`Idx::select`] with a domain boolean;
//! * divide and take remainders only by lengths (positive by validation), never by data.
//!
//! Division is truncating (C semantics), like CK's `index_t`.
//!
//! ```
//! use tilekit_layout::{Idx, IdxBool};
//! fn clamp_low<I: Idx>(x: I, lo: I) -> I {
//!     let below = x.lt(&lo);
//!     I::select(&below, lo, x)
//! }
//! assert_eq!(clamp_low(3i64, 5), 5);
//! assert_eq!(clamp_low(7i64, 5), 7);
//! assert!(true.and(&true));
//! ```

use std::fmt::Debug;
use std::ops::{Add, BitXor, Div, Mul, Rem, Sub};

/// A boolean of an index domain: `bool` for `i64`, a predicate register for the IR.
///
/// ```
/// use tilekit_layout::IdxBool;
/// let t = <bool as IdxBool>::lit(true);
/// assert_eq!(t.and(&false), false);
/// assert_eq!(t.or(&false), true);
/// assert_eq!(t.not(), false);
/// assert_eq!(t.to_const(), Some(true));
/// ```
pub trait IdxBool: Clone + Debug {
    /// A constant boolean.
    fn lit(v: bool) -> Self;
    /// The value if it is known now (always for `bool`).
    fn to_const(&self) -> Option<bool>;
    /// Logical and.
    fn and(&self, other: &Self) -> Self;
    /// Logical or.
    fn or(&self, other: &Self) -> Self;
    /// Logical not.
    fn not(&self) -> Self;
}

impl IdxBool for bool {
    fn lit(v: bool) -> Self {
        v
    }
    fn to_const(&self) -> Option<bool> {
        Some(*self)
    }
    fn and(&self, other: &Self) -> Self {
        *self && *other
    }
    fn or(&self, other: &Self) -> Self {
        *self || *other
    }
    fn not(&self) -> Self {
        !*self
    }
}

/// An index domain: integers with `+ - * / % ^`, comparisons that give a domain boolean, and
/// select. See the [module documentation](self) for why everything is generic over it.
///
/// ```
/// use tilekit_layout::Idx;
/// // row-major offset of (i, j) in a tile with `cols` columns, written once for every domain
/// fn offset<I: Idx>(i: I, j: I, cols: I) -> I { i * cols + j }
/// assert_eq!(offset(2i64, 3, 8), 19);
/// assert_eq!(<i64 as Idx>::lit(19).to_const(), Some(19));
/// ```
pub trait Idx:
    Clone
    + Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + BitXor<Output = Self>
{
    /// The domain's boolean.
    type Bool: IdxBool;

    /// A constant of the domain.
    fn lit(v: i64) -> Self;

    /// The value if it is known now (always `Some` for `i64`; for a symbolic value, `Some` only
    /// when it folded to a constant).
    fn to_const(&self) -> Option<i64>;

    /// `self < other`.
    fn lt(&self, other: &Self) -> Self::Bool;

    /// `self == other`.
    fn eq_(&self, other: &Self) -> Self::Bool;

    /// `cond ? if_true : if_false`, evaluated without branching.
    fn select(cond: &Self::Bool, if_true: Self, if_false: Self) -> Self;

    /// `self <= other`.
    fn le(&self, other: &Self) -> Self::Bool {
        other.lt(self).not()
    }

    /// `self >= other`.
    fn ge(&self, other: &Self) -> Self::Bool {
        self.lt(other).not()
    }

    /// `self > other`.
    fn gt(&self, other: &Self) -> Self::Bool {
        other.lt(self)
    }

    /// The smaller of two values (by select).
    fn min_(self, other: Self) -> Self {
        let c = self.lt(&other);
        Self::select(&c, self, other)
    }

    /// The larger of two values (by select).
    fn max_(self, other: Self) -> Self {
        let c = self.lt(&other);
        Self::select(&c, other, self)
    }

    /// `table[self]` for a table known at build time; `0` when `self` is outside the table.
    ///
    /// The default is a select chain (what a symbolic domain lowers to when the index is not a
    /// constant); `i64` indexes directly.
    fn lookup(&self, table: &[i64]) -> Self {
        let mut acc = Self::lit(0);
        for (k, &v) in table.iter().enumerate() {
            let hit = self.eq_(&Self::lit(k as i64));
            acc = Self::select(&hit, Self::lit(v), acc);
        }
        acc
    }
}

impl Idx for i64 {
    type Bool = bool;
    fn lit(v: i64) -> Self {
        v
    }
    fn to_const(&self) -> Option<i64> {
        Some(*self)
    }
    fn lt(&self, other: &Self) -> bool {
        *self < *other
    }
    fn eq_(&self, other: &Self) -> bool {
        *self == *other
    }
    fn select(cond: &bool, if_true: Self, if_false: Self) -> Self {
        if *cond {
            if_true
        } else {
            if_false
        }
    }
    fn lookup(&self, table: &[i64]) -> Self {
        usize::try_from(*self).ok().and_then(|k| table.get(k).copied()).unwrap_or(0)
    }
}

/// Converts a slice of `i64` to a vector of domain constants.
///
/// ```
/// use tilekit_layout::idx::lits;
/// let v: Vec<i64> = lits(&[1, 2, 3]);
/// assert_eq!(v, vec![1, 2, 3]);
/// ```
pub fn lits<I: Idx>(v: &[i64]) -> Vec<I> {
    v.iter().map(|&x| I::lit(x)).collect()
}

/// The constants of a slice of domain values, or `None` if any is not known now.
///
/// ```
/// use tilekit_layout::idx::consts;
/// assert_eq!(consts(&[4i64, 6]), Some(vec![4, 6]));
/// ```
pub fn consts<I: Idx>(v: &[I]) -> Option<Vec<i64>> {
    v.iter().map(Idx::to_const).collect()
}

/// Product of domain values (`1` for an empty slice).
///
/// ```
/// use tilekit_layout::idx::product;
/// assert_eq!(product(&[2i64, 3, 4]), 24);
/// assert_eq!(product::<i64>(&[]), 1);
/// ```
pub fn product<I: Idx>(v: &[I]) -> I {
    v.iter().cloned().fold(I::lit(1), |a, b| a * b)
}

/// Product of `i64` values, `None` when it overflows `i64` (`Some(1)` for an empty slice).
/// Every length product, element count and byte size of the layout and tile layers is computed
/// with it (or with `checked_mul` / `checked_add`) and refused with
/// [`LayoutError::Overflow`](crate::LayoutError::Overflow) when it does not fit.
///
/// ```
/// use tilekit_layout::idx::checked_product;
/// assert_eq!(checked_product(&[2, 3, 4]), Some(24));
/// assert_eq!(checked_product(&[]), Some(1));
/// assert_eq!(checked_product(&[1 << 32, 1 << 32]), None);
/// ```
pub fn checked_product(v: &[i64]) -> Option<i64> {
    v.iter().try_fold(1i64, |acc, &x| acc.checked_mul(x))
}

/// Greatest common divisor of two non-negative integers (`gcd(0, n) = n`).
///
/// ```
/// assert_eq!(tilekit_layout::idx::gcd(12, 8), 4);
/// assert_eq!(tilekit_layout::idx::gcd(0, 5), 5);
/// assert_eq!(tilekit_layout::idx::gcd(i64::MIN, 6), 2);
/// ```
pub fn gcd(a: i64, b: i64) -> i64 {
    // in u64, so that |i64::MIN| does not overflow; the one result that does not fit
    // (2^63 = gcd(i64::MIN, 0) or gcd(i64::MIN, i64::MIN)) saturates to i64::MAX
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(i64::MAX)
}
