//! Space-filling curves: the order in which a tile's elements are visited, one vector at a time.
//!
//! A [`SpaceFillingCurve`] turns a 1-D **access number** `i ∈ 0..num_access` into the
//! N-D index (in elements) where access `i` starts. Load/store traits use one to walk a thread's
//! Y space; transposes and shuffles use one to visit a tile in a cache-friendly order. It is
//! CK Tile's `space_filling_curve<TensorLengths, DimAccessOrder, ScalarsPerAccess, SnakeCurved>`
//! (SEMANTICS §7) with its parameters as validated run-time data.
//!
//! # The three ingredients
//!
//! * **`scalars_per_access`** — each access covers a box of `scalars_per_access[d]` elements along
//!   dim `d` (a vector load/store when it is > 1 on one dim). The access space has
//!   `access_lengths[d] = ceil(tensor_lengths[d] / scalars_per_access[d])` positions per dim.
//! * **`dim_access_order`** — a new-to-old permutation: element `k` names the original dim that is
//!   the `k`-th loop from the *outside* (`k = 0` slowest, the last fastest). Access numbers are
//!   split into mixed-radix digits `o[0..n]` over `ordered_access_lengths[k] =
//!   access_lengths[dim_access_order[k]]`, last digit fastest.
//! * **`snake`** — when set, ordered dim `k` runs backwards iff the row-major linear index of the
//!   *un-snaked* outer digits `o[0..k]` is odd. Ordered dim 0 never reverses. This is the
//!   reference's rule exactly — not "parity of the parent digit" (see the 3×2×2 example below).
//!
//! The start index is `idx[dim_access_order[k]] = o'[k] · scalars_per_access[dim_access_order[k]]`
//! where `o'` are the (possibly reversed) digits.
//!
//! # Pictures
//!
//! A 4×6 tile, scalar accesses, row-major order `[0, 1]`; each cell shows the access number that
//! visits it. Without snake, every row starts again at the left (a jump of 5 columns); with snake
//! odd rows run right to left, so consecutive accesses are always neighbours:
//!
//! ```text
//!     snake = false              snake = true
//!    0  1  2  3  4  5          0  1  2  3  4  5   →
//!    6  7  8  9 10 11         11 10  9  8  7  6   ←
//!   12 13 14 15 16 17         12 13 14 15 16 17   →
//!   18 19 20 21 22 23         23 22 21 20 19 18   ←
//! ```
//!
//! The same with vectors of 4 along dim 1 of a 4×8 tile (`scalars_per_access = [1, 4]`): the
//! access space is 4×2 and each access covers four cells:
//!
//! ```text
//!   0 0 0 0 1 1 1 1
//!   3 3 3 3 2 2 2 2
//!   4 4 4 4 5 5 5 5
//!   7 7 7 7 6 6 6 6
//! ```
//!
//! The snake parity rule on 3×2×2 (order `[0, 1, 2]`): the innermost dim reverses for outer
//! linear indices `o0·2 + o1 = 1, 3, 5`, so access 4 = digits (1, 0, 0) lands at `[1, 1, 0]` —
//! dim 1 reversed (o0 = 1 is odd) but dim 2 not (outer index 2 is even).
//!
//! # Non-divisible lengths (where tilekit goes beyond the reference)
//!
//! The reference floors `access_lengths` and refuses to compile `get_num_of_access` and the step
//! functions when a length is not a multiple of its scalars. tilekit follows the design
//! documents instead: access lengths are **ceilings**, the last access along such a dimension is
//! partial, and every access reports its valid extent `min(scalars, length − start)` per dim
//! ([`SpaceFillingCurve::valid_extent`]). A 5×7 tile with 2×3 accesses has 3×3 accesses; access
//! 8 starts at `[4, 6]` and covers only 1×1 element. For divisible curves every number equals
//! the reference's.
//!
//! # One source of truth
//!
//! [`SpaceFillingCurve::index_of`] is written only with [`Idx`] operations (division and
//! remainder by lengths, parity by `% 2`, reversal by [`Idx::select`]), so the same code gives
//! `i64` results here and straight-line index math in generated kernels, where a symbolic access
//! number folds to constants. The `i64` conveniences ([`SpaceFillingCurve::index`], steps,
//! extents, [`SpaceFillingCurve::accesses`]) all call it.
//!
//! ```
//! use tilekit_layout::SpaceFillingCurve;
//! let sfc = SpaceFillingCurve::new(vec![4, 6], vec![0, 1], vec![1, 1], true).unwrap();
//! assert_eq!(sfc.index(6).unwrap(), vec![1, 5]); // row 1 runs backwards
//! assert_eq!(sfc.forward_step(5), Some(vec![1, 0])); // end of row 0 → one row down
//! ```

use crate::error::{LayoutError, Result};
use crate::idx::{checked_product, Idx};

const CTX: &str = "space_filling_curve";

/// A validated space-filling curve over an N-D tile (see the [module documentation](self)).
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// // 4×8 tile, vectors of 4 along dim 1, snake
/// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
/// assert_eq!(sfc.num_access(), 8);
/// let starts: Vec<Vec<i64>> = sfc.accesses().map(|a| a.index).collect();
/// assert_eq!(starts[..4], [vec![0, 0], vec![0, 4], vec![1, 4], vec![1, 0]]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpaceFillingCurve {
    tensor_lengths: Vec<i64>,
    dim_access_order: Vec<usize>,
    scalars_per_access: Vec<i64>,
    snake: bool,
    access_lengths: Vec<i64>,
    ordered_access_lengths: Vec<i64>,
    /// `ordered_strides[k] = Π_{j>k} ordered_access_lengths[j]` (mixed-radix place values).
    ordered_strides: Vec<i64>,
    num_access: i64,
    scalar_per_vector: i64,
}

/// One access of a curve: its number, where it starts and how much of its box is inside the
/// tensor. Produced by [`SpaceFillingCurve::accesses`].
///
/// ```
/// use tilekit_layout::{sfc::Access, SpaceFillingCurve};
/// let sfc = SpaceFillingCurve::new(vec![5, 7], vec![0, 1], vec![2, 3], false).unwrap();
/// let last: Access = sfc.accesses().last().unwrap();
/// assert_eq!(last, Access { i: 8, index: vec![4, 6], extent: vec![1, 1] });
/// assert!(last.is_partial(&sfc));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Access {
    /// The access number, `0..num_access`.
    pub i: i64,
    /// Where the access starts, in elements, in original dim order ([`SpaceFillingCurve::index`]).
    pub index: Vec<i64>,
    /// Valid elements per dim, `min(scalars_per_access, length − index)`
    /// ([`SpaceFillingCurve::valid_extent`]).
    pub extent: Vec<i64>,
}

impl Access {
    /// Whether the access covers fewer elements than a full vector box (only possible for
    /// non-divisible lengths).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![6], vec![0], vec![4], false).unwrap();
    /// let partial: Vec<bool> = sfc.accesses().map(|a| a.is_partial(&sfc)).collect();
    /// assert_eq!(partial, [false, true]);
    /// ```
    pub fn is_partial(&self, curve: &SpaceFillingCurve) -> bool {
        self.extent.iter().zip(&curve.scalars_per_access).any(|(e, s)| e < s)
    }
}

impl SpaceFillingCurve {
    /// Builds a curve, validating every parameter.
    ///
    /// * `tensor_lengths`: at least one dim, every length `>= 1`;
    /// * `dim_access_order`: a permutation of `0..ndim` (new-to-old, element 0 = slowest loop);
    /// * `scalars_per_access`: one per dim, every value `>= 1` (it may exceed the length: the
    ///   single access along that dim is then partial);
    /// * `snake`: reverse inner dims by the parity rule of SEMANTICS §7.
    ///
    /// The number of accesses, the element count and `scalar_per_vector` must fit in `i64`.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let ok = SpaceFillingCurve::new(vec![3, 2, 2], vec![2, 0, 1], vec![1, 1, 1], false);
    /// assert!(ok.is_ok());
    /// let err = SpaceFillingCurve::new(vec![3, 2], vec![1, 1], vec![1, 1], true).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "space_filling_curve: dim_access_order[1] = 1 is invalid: \
    ///      dim 1 already appears at dim_access_order[0]; the order must be a permutation of 0..2"
    /// );
    /// let err = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 0], true).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "space_filling_curve: scalars_per_access[1] = 0 is invalid: scalars per access must be >= 1"
    /// );
    /// ```
    pub fn new(
        tensor_lengths: Vec<i64>,
        dim_access_order: Vec<usize>,
        scalars_per_access: Vec<i64>,
        snake: bool,
    ) -> Result<Self> {
        let n = tensor_lengths.len();
        if n == 0 {
            return Err(LayoutError::count(CTX, "tensor_lengths", 0, "at least 1 (ndim >= 1)"));
        }
        for (d, &l) in tensor_lengths.iter().enumerate() {
            if l < 1 {
                return Err(LayoutError::invalid(
                    CTX,
                    format!("tensor_lengths[{d}]"),
                    l,
                    "lengths must be >= 1",
                ));
            }
        }
        if dim_access_order.len() != n {
            return Err(LayoutError::count(
                CTX,
                "dim_access_order",
                dim_access_order.len(),
                format!("{n} (a permutation of 0..{n}, one entry per dim of tensor_lengths)"),
            ));
        }
        let mut seen_at: Vec<Option<usize>> = vec![None; n];
        for (k, &d) in dim_access_order.iter().enumerate() {
            let Some(slot) = seen_at.get_mut(d) else {
                return Err(LayoutError::invalid(
                    CTX,
                    format!("dim_access_order[{k}]"),
                    d,
                    format!("the curve has {n} dims, so the order must be a permutation of 0..{n}"),
                ));
            };
            if let Some(first) = *slot {
                return Err(LayoutError::invalid(
                    CTX,
                    format!("dim_access_order[{k}]"),
                    d,
                    format!(
                        "dim {d} already appears at dim_access_order[{first}]; \
                         the order must be a permutation of 0..{n}"
                    ),
                ));
            }
            *slot = Some(k);
        }
        if scalars_per_access.len() != n {
            return Err(LayoutError::count(
                CTX,
                "scalars_per_access",
                scalars_per_access.len(),
                format!("{n} (one per dim of tensor_lengths)"),
            ));
        }
        for (d, &s) in scalars_per_access.iter().enumerate() {
            if s < 1 {
                return Err(LayoutError::invalid(
                    CTX,
                    format!("scalars_per_access[{d}]"),
                    s,
                    "scalars per access must be >= 1",
                ));
            }
        }
        let too_big = |field: &str, v: &[i64], what: &str| {
            LayoutError::invalid(CTX, field, v, format!("{what} overflows i64 (or usize)"))
        };
        checked_product(&tensor_lengths)
            .ok_or_else(|| too_big("tensor_lengths", &tensor_lengths, "the element count"))?;
        let scalar_per_vector = checked_product(&scalars_per_access).ok_or_else(|| {
            too_big("scalars_per_access", &scalars_per_access, "the product (scalar_per_vector)")
        })?;
        let access_lengths: Vec<i64> = tensor_lengths
            .iter()
            .zip(&scalars_per_access)
            .map(|(&l, &s)| l / s + i64::from(l % s != 0))
            .collect();
        let num_access =
            checked_product(&access_lengths).filter(|&n| usize::try_from(n).is_ok()).ok_or_else(
                || too_big("tensor_lengths", &tensor_lengths, "the number of accesses"),
            )?;
        let ordered_access_lengths: Vec<i64> =
            dim_access_order.iter().map(|&d| access_lengths[d]).collect();
        let mut ordered_strides = vec![1i64; n];
        for k in (0..n.saturating_sub(1)).rev() {
            // cannot overflow: a suffix product of a product that fits
            ordered_strides[k] = ordered_strides[k + 1] * ordered_access_lengths[k + 1];
        }
        Ok(Self {
            tensor_lengths,
            dim_access_order,
            scalars_per_access,
            snake,
            access_lengths,
            ordered_access_lengths,
            ordered_strides,
            num_access,
            scalar_per_vector,
        })
    }

    /// Number of dimensions.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![2, 3, 4], vec![0, 1, 2], vec![1, 1, 1], true).unwrap();
    /// assert_eq!(sfc.ndim(), 3);
    /// ```
    pub fn ndim(&self) -> usize {
        self.tensor_lengths.len()
    }

    /// The tile's lengths in elements (`TensorLengths`).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(sfc.tensor_lengths(), [4, 8]);
    /// ```
    pub fn tensor_lengths(&self) -> &[i64] {
        &self.tensor_lengths
    }

    /// The loop order, new-to-old: element `k` is the original dim of the `k`-th loop from the
    /// outside (`DimAccessOrder`).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![1, 0], vec![1, 1], false).unwrap();
    /// assert_eq!(sfc.dim_access_order(), [1, 0]); // dim 1 slowest: column-major walk
    /// ```
    pub fn dim_access_order(&self) -> &[usize] {
        &self.dim_access_order
    }

    /// Elements per access along each dim (`ScalarsPerAccess`).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(sfc.scalars_per_access(), [1, 4]);
    /// ```
    pub fn scalars_per_access(&self) -> &[i64] {
        &self.scalars_per_access
    }

    /// Whether the curve snakes (`SnakeCurved`).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4], vec![0], vec![1], false).unwrap();
    /// assert!(!sfc.snake());
    /// ```
    pub fn snake(&self) -> bool {
        self.snake
    }

    /// Elements per access in total: `Π scalars_per_access` (`ScalarPerVector`). For partial
    /// accesses of non-divisible curves this is the nominal size; see
    /// [`valid_extent`](Self::valid_extent).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![8, 8], vec![0, 1], vec![2, 2], true).unwrap();
    /// assert_eq!(sfc.scalar_per_vector(), 4);
    /// ```
    pub fn scalar_per_vector(&self) -> i64 {
        self.scalar_per_vector
    }

    /// Accesses per dim, original dim order: `ceil(tensor_lengths / scalars_per_access)`
    /// (equal to the reference's floor for divisible curves).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![5, 7], vec![0, 1], vec![2, 3], false).unwrap();
    /// assert_eq!(sfc.access_lengths(), [3, 3]);
    /// ```
    pub fn access_lengths(&self) -> &[i64] {
        &self.access_lengths
    }

    /// `access_lengths` permuted by the order: `ordered_access_lengths[k] =
    /// access_lengths[dim_access_order[k]]` (the mixed radix of access numbers, last fastest).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![3, 2, 2], vec![2, 0, 1], vec![1, 1, 1], false).unwrap();
    /// assert_eq!(sfc.ordered_access_lengths(), [2, 3, 2]);
    /// ```
    pub fn ordered_access_lengths(&self) -> &[i64] {
        &self.ordered_access_lengths
    }

    /// Number of accesses: `Π access_lengths` (`get_num_of_access()`).
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![16, 32], vec![1, 0], vec![1, 8], false).unwrap();
    /// assert_eq!(sfc.num_access(), 64);
    /// ```
    pub fn num_access(&self) -> i64 {
        self.num_access
    }

    /// Start index (in elements, original dim order) of access `i`, for any index domain.
    ///
    /// Written only with domain operations, so a symbolic `i` gives straight-line index math:
    /// digit `o[k] = (i / stride[k]) % ordered_access_lengths[k]`; with snake, ordered dim `k ≥ 1`
    /// is reversed (`L − 1 − o[k]`) when `(i / stride[k−1]) % 2 == 1`, since `i / stride[k−1]`
    /// is exactly the row-major linear index of the un-snaked outer digits `o[0..k]`.
    ///
    /// `i` is not range-checked (a domain value may not be known); for `i` outside
    /// `0..num_access` the result is meaningless but computing it never panics. Use
    /// [`index`](Self::index) for checked `i64` access numbers.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![3, 2, 2], vec![0, 1, 2], vec![1, 1, 1], true).unwrap();
    /// assert_eq!(sfc.index_of(&4i64), vec![1, 1, 0]);
    /// ```
    pub fn index_of<I: Idx>(&self, i: &I) -> Vec<I> {
        let n = self.ndim();
        let mut out: Vec<I> = vec![I::lit(0); n];
        for k in 0..n {
            let len = self.ordered_access_lengths[k];
            let digit = (i.clone() / I::lit(self.ordered_strides[k])) % I::lit(len);
            let digit = if self.snake && k > 0 {
                let outer = i.clone() / I::lit(self.ordered_strides[k - 1]);
                let forward = (outer % I::lit(2)).eq_(&I::lit(0));
                let reversed = I::lit(len - 1) - digit.clone();
                I::select(&forward, digit, reversed)
            } else {
                digit
            };
            let d = self.dim_access_order[k];
            out[d] = digit * I::lit(self.scalars_per_access[d]);
        }
        out
    }

    /// Valid elements per dim of the access that starts at `index_of(i)`, for any index domain:
    /// `min(scalars_per_access, tensor_lengths − start)`. Equal to `scalars_per_access` except
    /// on the last access along a non-divisible dim.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![5, 7], vec![0, 1], vec![2, 3], false).unwrap();
    /// assert_eq!(sfc.valid_extent_of(&5i64), vec![2, 1]); // starts at [2, 6]
    /// ```
    pub fn valid_extent_of<I: Idx>(&self, i: &I) -> Vec<I> {
        self.index_of(i)
            .into_iter()
            .enumerate()
            .map(|(d, start)| {
                let left = I::lit(self.tensor_lengths[d]) - start;
                I::lit(self.scalars_per_access[d]).min_(left)
            })
            .collect()
    }

    fn check_access(&self, field: &str, i: i64) -> Result<()> {
        if (0..self.num_access).contains(&i) {
            Ok(())
        } else {
            Err(LayoutError::invalid(
                CTX,
                field,
                i,
                format!(
                    "the curve has {} accesses, so access numbers are 0..{}",
                    self.num_access, self.num_access
                ),
            ))
        }
    }

    /// Start index (in elements, original dim order) of access `i` (`get_index(i)`); an error for
    /// `i` outside `0..num_access`.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(sfc.index(3).unwrap(), vec![1, 0]);
    /// assert_eq!(
    ///     sfc.index(8).unwrap_err().to_string(),
    ///     "space_filling_curve: access number = 8 is invalid: \
    ///      the curve has 8 accesses, so access numbers are 0..8"
    /// );
    /// ```
    pub fn index(&self, i: i64) -> Result<Vec<i64>> {
        self.check_access("access number", i)?;
        Ok(self.index_of(&i))
    }

    /// Valid elements per dim of access `i`: `min(scalars_per_access, length − start)`; an error
    /// for `i` outside `0..num_access`.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![5, 7], vec![0, 1], vec![2, 3], false).unwrap();
    /// assert_eq!(sfc.valid_extent(0).unwrap(), vec![2, 3]);
    /// assert_eq!(sfc.valid_extent(8).unwrap(), vec![1, 1]);
    /// assert!(sfc.valid_extent(9).is_err());
    /// ```
    pub fn valid_extent(&self, i: i64) -> Result<Vec<i64>> {
        self.check_access("access number", i)?;
        Ok(self.valid_extent_of(&i))
    }

    /// `index(b) − index(a)` (`get_step_between(a, b)`), in elements, original dim order; an
    /// error when either access number is out of range.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 6], vec![0, 1], vec![1, 1], true).unwrap();
    /// assert_eq!(sfc.step_between(0, 23).unwrap(), vec![3, 0]);
    /// assert!(sfc.step_between(0, 24).is_err());
    /// ```
    pub fn step_between(&self, a: i64, b: i64) -> Result<Vec<i64>> {
        self.check_access("step start access number", a)?;
        self.check_access("step end access number", b)?;
        let (ia, ib) = (self.index_of(&a), self.index_of(&b));
        Ok(ib.iter().zip(&ia).map(|(y, x)| y - x).collect())
    }

    /// The step from access `i` to `i + 1` (`get_forward_step(i)`); `None` for the last access
    /// and for `i` out of range.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(sfc.forward_step(1), Some(vec![1, 0]));
    /// assert_eq!(sfc.forward_step(2), Some(vec![0, -4]));
    /// assert_eq!(sfc.forward_step(7), None);
    /// ```
    pub fn forward_step(&self, i: i64) -> Option<Vec<i64>> {
        let next = i.checked_add(1)?;
        self.step_between(i, next).ok()
    }

    /// The step from access `i` to `i − 1` (`get_backward_step(i)`); `None` for access 0 and
    /// for `i` out of range.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(sfc.backward_step(2), Some(vec![-1, 0]));
    /// assert_eq!(sfc.backward_step(0), None);
    /// ```
    pub fn backward_step(&self, i: i64) -> Option<Vec<i64>> {
        let prev = i.checked_sub(1)?;
        self.step_between(i, prev).ok()
    }

    /// The number of the access whose box contains `element` (an element index, original dim
    /// order): the inverse of the curve. `None` when the rank is wrong or the element lies
    /// outside the tensor.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(sfc.access_at(&[1, 2]), Some(3));
    /// assert_eq!(sfc.access_at(&[1, 5]), Some(2));
    /// assert_eq!(sfc.access_at(&[4, 0]), None);
    /// ```
    pub fn access_at(&self, element: &[i64]) -> Option<i64> {
        if element.len() != self.ndim() {
            return None;
        }
        let mut linear = 0i64; // row-major linear index of the un-snaked digits so far
        for (k, &d) in self.dim_access_order.iter().enumerate() {
            let e = element[d];
            if !(0..self.tensor_lengths[d]).contains(&e) {
                return None;
            }
            let len = self.ordered_access_lengths[k];
            let shown = e / self.scalars_per_access[d];
            let digit = if self.snake && linear % 2 == 1 { len - 1 - shown } else { shown };
            linear = linear * len + digit;
        }
        Some(linear)
    }

    /// Every access in order, with its start index and valid extent.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![2, 4], vec![0, 1], vec![1, 4], true).unwrap();
    /// let v: Vec<_> = sfc.accesses().map(|a| (a.i, a.index, a.extent)).collect();
    /// assert_eq!(v, [(0, vec![0, 0], vec![1, 4]), (1, vec![1, 0], vec![1, 4])]);
    /// assert_eq!(sfc.accesses().len(), 2);
    /// ```
    pub fn accesses(&self) -> Accesses<'_> {
        Accesses { curve: self, next: 0, end: self.num_access }
    }
}

impl std::fmt::Display for SpaceFillingCurve {
    /// `space_filling_curve(lengths [..], order [..], scalars [..], snake|linear)`.
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![4, 8], vec![0, 1], vec![1, 4], true).unwrap();
    /// assert_eq!(
    ///     sfc.to_string(),
    ///     "space_filling_curve(lengths [4, 8], order [0, 1], scalars [1, 4], snake)"
    /// );
    /// ```
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{CTX}(lengths {:?}, order {:?}, scalars {:?}, {})",
            self.tensor_lengths,
            self.dim_access_order,
            self.scalars_per_access,
            if self.snake { "snake" } else { "linear" }
        )
    }
}

/// Iterator over the accesses of a curve, in access order. Made by
/// [`SpaceFillingCurve::accesses`].
///
/// ```
/// use tilekit_layout::SpaceFillingCurve;
/// let sfc = SpaceFillingCurve::new(vec![4, 6], vec![0, 1], vec![1, 1], true).unwrap();
/// let mut it = sfc.accesses();
/// assert_eq!(it.len(), 24);
/// assert_eq!(it.nth(6).unwrap().index, vec![1, 5]);
/// assert_eq!(it.next_back().unwrap().index, vec![3, 0]);
/// ```
#[derive(Debug, Clone)]
pub struct Accesses<'a> {
    curve: &'a SpaceFillingCurve,
    next: i64,
    end: i64,
}

impl Accesses<'_> {
    fn make(&self, i: i64) -> Access {
        Access { i, index: self.curve.index_of(&i), extent: self.curve.valid_extent_of(&i) }
    }
}

impl Iterator for Accesses<'_> {
    type Item = Access;

    fn next(&mut self) -> Option<Access> {
        if self.next >= self.end {
            return None;
        }
        let a = self.make(self.next);
        self.next += 1;
        Some(a)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        match usize::try_from(left) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }

    fn nth(&mut self, n: usize) -> Option<Access> {
        let skip = i64::try_from(n).unwrap_or(i64::MAX);
        self.next = self.next.saturating_add(skip).min(self.end);
        self.next()
    }
}

impl DoubleEndedIterator for Accesses<'_> {
    fn next_back(&mut self) -> Option<Access> {
        if self.next >= self.end {
            return None;
        }
        self.end -= 1;
        Some(self.make(self.end))
    }
}

impl ExactSizeIterator for Accesses<'_> {}

impl<'a> IntoIterator for &'a SpaceFillingCurve {
    type Item = Access;
    type IntoIter = Accesses<'a>;

    /// Same as [`SpaceFillingCurve::accesses`].
    ///
    /// ```
    /// use tilekit_layout::SpaceFillingCurve;
    /// let sfc = SpaceFillingCurve::new(vec![3], vec![0], vec![1], true).unwrap();
    /// let mut n = 0;
    /// for a in &sfc { n += a.extent[0]; }
    /// assert_eq!(n, 3);
    /// ```
    fn into_iter(self) -> Accesses<'a> {
        self.accesses()
    }
}
