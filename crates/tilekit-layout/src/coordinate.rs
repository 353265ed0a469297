//! Coordinates and incremental moves (SEMANTICS §5).
//!
//! A [`Coordinate`] stores the **whole hidden index** of an adaptor, so a move only has to touch
//! the transforms whose upper dims changed:
//!
//! ```text
//!   move by (0, +1) on embed ∘ (merge | unmerge):
//!
//!   top      [ i ,  j ]      diff [0, 1]  → marks top dim 1
//!             │    │                         ↓ a stage is active iff one of its upper dims is marked;
//!   stage k  ─┴────┴─  active                  then all its lower dims become marked
//!             │
//!   bottom  offset          diff_bottom = what the move changed at the bottom
//! ```
//!
//! Each active stage runs its [`update_lower_index`](crate::Transform::update_lower_index): a
//! linear transform adds the diff, a merge/xor/modulo recomputes from the new upper index. A move
//! always equals a fresh coordinate at the new top index (tested for every transform).
//!
//! # Checked and unchecked
//!
//! Every function here that takes a top index, a step or a coordinate checks that it fits the
//! adaptor (one entry per top dim; a coordinate made for this adaptor) and returns a
//! [`LayoutError`] otherwise. Each has an `_unchecked` twin for hot loops that checked once
//! (tile windows, code generation): it skips the check (a debug assertion remains), and a wrong
//! rank gives a meaningless result or a panic instead of an error.
//!
//! ```
//! use tilekit_layout::{TensorDescriptor, Coordinate};
//! let d = TensorDescriptor::packed(vec![4i64, 6], None).unwrap();
//! assert!(Coordinate::new_descriptor(&d, &[1]).is_err());
//! let mut c = Coordinate::new_descriptor(&d, &[1, 2]).unwrap();
//! assert!(d.move_coordinate(&mut c, &[1, 0, 0]).is_err());
//! d.move_coordinate_unchecked(&mut c, &[1, 0]);
//! assert_eq!(c.offset(), 14);
//! ```

use crate::adaptor::TensorAdaptor;
use crate::descriptor::TensorDescriptor;
use crate::error::{LayoutError, Result};
use crate::idx::{Idx, IdxBool};

/// A coordinate of an adaptor or descriptor: the full hidden index.
///
/// ```
/// use tilekit_layout::{TensorDescriptor, Coordinate};
/// let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
/// let mut c = Coordinate::new_descriptor(&d, &[1, 2]).unwrap();
/// assert_eq!(c.offset(), 8);
/// d.move_coordinate(&mut c, &[1, 1]).unwrap();
/// assert_eq!((c.top(), c.offset()), (vec![2, 3], 15));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Coordinate<I = i64> {
    hidden: Vec<I>,
    top_ids: Vec<usize>,
    bottom_ids: Vec<usize>,
}

impl<I: Idx> Coordinate<I> {
    /// A fresh coordinate of an adaptor at a top index (full top-down evaluation); an error
    /// when `top` does not have one entry per top dim.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::merge(vec![4i64, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]]).unwrap();
    /// let c = Coordinate::new(&a, &[13]).unwrap();
    /// assert_eq!(c.bottom(), vec![2, 1]);
    /// assert!(Coordinate::new(&a, &[1, 3]).is_err());
    /// ```
    pub fn new(adaptor: &TensorAdaptor<I>, top: &[I]) -> Result<Self> {
        Ok(Coordinate {
            hidden: adaptor.calculate_hidden_index(top)?,
            top_ids: adaptor.top_ids().to_vec(),
            bottom_ids: adaptor.bottom_ids().to_vec(),
        })
    }

    /// **Unchecked fast path** of [`Coordinate::new`]: the caller guarantees
    /// `top.len() == adaptor.ndim_top()` (debug assertion only).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::merge(vec![4i64, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]]).unwrap();
    /// assert_eq!(Coordinate::new_unchecked(&a, &[13]).bottom(), vec![2, 1]);
    /// ```
    pub fn new_unchecked(adaptor: &TensorAdaptor<I>, top: &[I]) -> Self {
        Coordinate {
            hidden: adaptor.calculate_hidden_index_unchecked(top),
            top_ids: adaptor.top_ids().to_vec(),
            bottom_ids: adaptor.bottom_ids().to_vec(),
        }
    }

    /// A fresh coordinate of a descriptor at a top index; an error when `top` does not have one
    /// entry per top dim.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3, 4], None).unwrap();
    /// assert_eq!(Coordinate::new_descriptor(&d, &[1, 2, 3]).unwrap().offset(), 23);
    /// assert!(Coordinate::new_descriptor(&d, &[1, 2]).is_err());
    /// ```
    pub fn new_descriptor(desc: &TensorDescriptor<I>, top: &[I]) -> Result<Self> {
        Self::new(desc.adaptor(), top)
    }

    /// **Unchecked fast path** of [`Coordinate::new_descriptor`] (see
    /// [`Coordinate::new_unchecked`]).
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3, 4], None).unwrap();
    /// assert_eq!(Coordinate::new_descriptor_unchecked(&d, &[1, 2, 3]).offset(), 23);
    /// ```
    pub fn new_descriptor_unchecked(desc: &TensorDescriptor<I>, top: &[I]) -> Self {
        Self::new_unchecked(desc.adaptor(), top)
    }

    /// The whole hidden index.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert_eq!(Coordinate::new_descriptor(&d, &[1, 2]).unwrap().hidden(), &[5, 1, 2]);
    /// ```
    pub fn hidden(&self) -> &[I] {
        &self.hidden
    }

    /// The top index.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert_eq!(Coordinate::new_descriptor(&d, &[1, 2]).unwrap().top(), vec![1, 2]);
    /// ```
    pub fn top(&self) -> Vec<I> {
        self.top_ids.iter().map(|&i| self.hidden[i].clone()).collect()
    }

    /// The bottom index.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert_eq!(Coordinate::new_descriptor(&d, &[1, 2]).unwrap().bottom(), vec![5]);
    /// ```
    pub fn bottom(&self) -> Vec<I> {
        self.bottom_ids.iter().map(|&i| self.hidden[i].clone()).collect()
    }

    /// The element offset (the first bottom dim; for descriptors, the only one).
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::naive(vec![3i64, 4], vec![8, 1], None).unwrap();
    /// assert_eq!(Coordinate::new_descriptor(&d, &[2, 3]).unwrap().offset(), 19);
    /// ```
    pub fn offset(&self) -> I {
        self.bottom_ids.first().map(|&i| self.hidden[i].clone()).unwrap_or_else(|| I::lit(0))
    }
}

impl<I: Idx> TensorAdaptor<I> {
    /// `Ok` when `coord` was made for this adaptor (same hidden rank, top and bottom ids).
    fn check_coordinate(&self, coord: &Coordinate<I>) -> Result<()> {
        if coord.hidden.len() != self.ndim_hidden()
            || coord.top_ids != self.top_ids()
            || coord.bottom_ids != self.bottom_ids()
        {
            return Err(LayoutError::invalid(
                "tensor adaptor",
                "coordinate",
                format!(
                    "{} hidden dims, top ids {:?}, bottom ids {:?}",
                    coord.hidden.len(),
                    coord.top_ids,
                    coord.bottom_ids
                ),
                format!(
                    "a coordinate of this adaptor has {} hidden dims, top ids {:?} and bottom \
                     ids {:?} (make it with Coordinate::new of this adaptor)",
                    self.ndim_hidden(),
                    self.top_ids(),
                    self.bottom_ids()
                ),
            ));
        }
        Ok(())
    }

    /// Moves a coordinate by `diff_top` (reference `move_tensor_adaptor_coordinate` with
    /// `JudgeDoTransforms`), returning the bottom diff; an error when `diff_top` does not have
    /// one entry per top dim or `coord` is not a coordinate of this adaptor.
    ///
    /// A top dim counts as changed unless its diff is the constant 0; a stage runs iff one of its
    /// upper dims changed, and then marks its lower dims as changed.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::merge(vec![4i64, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]]).unwrap();
    /// let mut c = Coordinate::new(&a, &[5]).unwrap();
    /// assert_eq!(a.move_coordinate(&mut c, &[1]).unwrap(), vec![1, -5]);   // (0,5) -> (1,0)
    /// assert_eq!(c.bottom(), vec![1, 0]);
    /// assert!(a.move_coordinate(&mut c, &[1, 1]).is_err());
    /// ```
    pub fn move_coordinate(&self, coord: &mut Coordinate<I>, diff_top: &[I]) -> Result<Vec<I>> {
        self.check_top("step", diff_top)?;
        self.check_coordinate(coord)?;
        Ok(self.move_coordinate_unchecked(coord, diff_top))
    }

    /// **Unchecked fast path** of [`move_coordinate`](Self::move_coordinate): the caller
    /// guarantees that `coord` is a coordinate of this adaptor and `diff_top` has one entry per
    /// top dim (debug assertions only).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::merge(vec![4i64, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]]).unwrap();
    /// let mut c = Coordinate::new(&a, &[5]).unwrap();
    /// assert_eq!(a.move_coordinate_unchecked(&mut c, &[1]), vec![1, -5]);
    /// ```
    pub fn move_coordinate_unchecked(&self, coord: &mut Coordinate<I>, diff_top: &[I]) -> Vec<I> {
        debug_assert_eq!(diff_top.len(), self.ndim_top(), "tensor adaptor: step rank");
        debug_assert_eq!(coord.hidden.len(), self.ndim_hidden(), "tensor adaptor: coordinate");
        let n = self.ndim_hidden();
        let mut changed = vec![false; n];
        let mut diff = vec![I::lit(0); n];
        for (&id, d) in self.top_ids().iter().zip(diff_top) {
            changed[id] = d.to_const() != Some(0);
            diff[id] = d.clone();
            coord.hidden[id] = coord.hidden[id].clone() + d.clone();
        }
        let (mut du, mut up_new, mut low, mut dl) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in self.stages().iter().rev() {
            if !s.upper().iter().any(|&u| changed[u]) {
                continue;
            }
            du.clear();
            du.extend(s.upper().iter().map(|&u| diff[u].clone()));
            up_new.clear();
            up_new.extend(s.upper().iter().map(|&u| coord.hidden[u].clone()));
            low.clear();
            low.extend(s.lower().iter().map(|&l| coord.hidden[l].clone()));
            s.transform().update_lower_index_into(&du, &mut low, &up_new, &mut dl);
            for ((&l, v), d) in s.lower().iter().zip(low.drain(..)).zip(dl.drain(..)) {
                coord.hidden[l] = v;
                diff[l] = d;
                changed[l] = true;
            }
        }
        self.bottom_ids().iter().map(|&b| diff[b].clone()).collect()
    }

    /// Whether the coordinate maps to a valid bottom index assuming its top index is in range
    /// (reference `..._assuming_top_index_is_valid`): the AND of every stage that is not always
    /// valid (in practice, pads). An error when `coord` is not a coordinate of this adaptor.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::right_pad(5i64, 3, false).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert!(a.is_valid_assuming_top_valid(&Coordinate::new(&a, &[4]).unwrap()).unwrap());
    /// assert!(!a.is_valid_assuming_top_valid(&Coordinate::new(&a, &[5]).unwrap()).unwrap());
    /// ```
    pub fn is_valid_assuming_top_valid(&self, coord: &Coordinate<I>) -> Result<I::Bool> {
        self.check_coordinate(coord)?;
        Ok(self.is_valid_assuming_top_valid_unchecked(coord))
    }

    /// **Unchecked fast path** of
    /// [`is_valid_assuming_top_valid`](Self::is_valid_assuming_top_valid): the caller
    /// guarantees that `coord` is a coordinate of this adaptor.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::right_pad(5i64, 3, false).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert!(!a.is_valid_assuming_top_valid_unchecked(&Coordinate::new(&a, &[5]).unwrap()));
    /// ```
    pub fn is_valid_assuming_top_valid_unchecked(&self, coord: &Coordinate<I>) -> I::Bool {
        debug_assert_eq!(coord.hidden.len(), self.ndim_hidden(), "tensor adaptor: coordinate");
        let mut ok = I::Bool::lit(true);
        for s in self.stages() {
            if s.transform().is_always_valid() {
                continue;
            }
            let up: Vec<I> = s.upper().iter().map(|&u| coord.hidden[u].clone()).collect();
            ok = ok.and(&s.transform().is_valid_unchecked(&up));
        }
        ok
    }

    /// [`is_valid_assuming_top_valid`](Self::is_valid_assuming_top_valid) and `0 ≤ topᵢ < lengthᵢ`;
    /// an error when `coord` is not a coordinate of this adaptor.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::pass_through(4i64).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert!(a.is_valid(&Coordinate::new(&a, &[3]).unwrap()).unwrap());
    /// assert!(!a.is_valid(&Coordinate::new(&a, &[4]).unwrap()).unwrap());
    /// ```
    pub fn is_valid(&self, coord: &Coordinate<I>) -> Result<I::Bool> {
        self.check_coordinate(coord)?;
        Ok(self.is_valid_unchecked(coord))
    }

    /// **Unchecked fast path** of [`is_valid`](Self::is_valid).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, Coordinate};
    /// let a = TensorAdaptor::single_stage(vec![Transform::pass_through(4i64).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert!(!a.is_valid_unchecked(&Coordinate::new(&a, &[-1]).unwrap()));
    /// ```
    pub fn is_valid_unchecked(&self, coord: &Coordinate<I>) -> I::Bool {
        let mut ok = self.is_valid_assuming_top_valid_unchecked(coord);
        for (v, len) in coord.top().iter().zip(self.top_lengths()) {
            ok = ok.and(&v.ge(&I::lit(0))).and(&v.lt(&len));
        }
        ok
    }
}

impl<I: Idx> TensorDescriptor<I> {
    /// Moves a coordinate by a top step (reference `move_tensor_coordinate`); an error when the
    /// step does not have one entry per top dim or `coord` is not a coordinate of this
    /// descriptor.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3, 4], None).unwrap();
    /// let mut c = Coordinate::new_descriptor(&d, &[0, 2, 3]).unwrap();
    /// d.move_coordinate(&mut c, &[1, -2, -3]).unwrap();
    /// assert_eq!(c.offset(), 12);
    /// assert!(d.move_coordinate(&mut c, &[1]).is_err());
    /// ```
    pub fn move_coordinate(&self, coord: &mut Coordinate<I>, step: &[I]) -> Result<()> {
        self.adaptor().move_coordinate(coord, step).map(|_| ())
    }

    /// **Unchecked fast path** of [`move_coordinate`](Self::move_coordinate) (see
    /// [`TensorAdaptor::move_coordinate_unchecked`]).
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3, 4], None).unwrap();
    /// let mut c = Coordinate::new_descriptor(&d, &[0, 0, 0]).unwrap();
    /// d.move_coordinate_unchecked(&mut c, &[1, 1, 1]);
    /// assert_eq!(c.offset(), 17);
    /// ```
    pub fn move_coordinate_unchecked(&self, coord: &mut Coordinate<I>, step: &[I]) {
        self.adaptor().move_coordinate_unchecked(coord, step);
    }

    /// Validity assuming the top index is in range (what tensor views and tile windows use); an
    /// error when `coord` is not a coordinate of this descriptor.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate, Transform};
    /// let d = TensorDescriptor::naive(vec![5i64, 7], vec![7, 1], None).unwrap()
    ///     .transform(vec![Transform::right_pad(5, 3, false).unwrap(), Transform::right_pad(7, 1, false).unwrap()],
    ///                vec![vec![0], vec![1]], vec![vec![0], vec![1]]).unwrap();
    /// assert!(d.is_valid_assuming_top_valid(&Coordinate::new_descriptor(&d, &[4, 6]).unwrap()).unwrap());
    /// assert!(!d.is_valid_assuming_top_valid(&Coordinate::new_descriptor(&d, &[4, 7]).unwrap()).unwrap());
    /// ```
    pub fn is_valid_assuming_top_valid(&self, coord: &Coordinate<I>) -> Result<I::Bool> {
        self.adaptor().is_valid_assuming_top_valid(coord)
    }

    /// **Unchecked fast path** of
    /// [`is_valid_assuming_top_valid`](Self::is_valid_assuming_top_valid).
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert!(d.is_valid_assuming_top_valid_unchecked(&Coordinate::new_descriptor(&d, &[1, 2]).unwrap()));
    /// ```
    pub fn is_valid_assuming_top_valid_unchecked(&self, coord: &Coordinate<I>) -> I::Bool {
        self.adaptor().is_valid_assuming_top_valid_unchecked(coord)
    }

    /// Validity including `0 ≤ topᵢ < lengthᵢ` (reference `coordinate_has_valid_offset`); an
    /// error when `coord` is not a coordinate of this descriptor.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert!(!d.is_valid(&Coordinate::new_descriptor(&d, &[0, 3]).unwrap()).unwrap());
    /// let other = TensorDescriptor::packed(vec![6i64], None).unwrap();
    /// assert!(d.is_valid(&Coordinate::new_descriptor(&other, &[0]).unwrap()).is_err());
    /// ```
    pub fn is_valid(&self, coord: &Coordinate<I>) -> Result<I::Bool> {
        self.adaptor().is_valid(coord)
    }

    /// **Unchecked fast path** of [`is_valid`](Self::is_valid).
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Coordinate};
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert!(d.is_valid_unchecked(&Coordinate::new_descriptor(&d, &[1, 2]).unwrap()));
    /// ```
    pub fn is_valid_unchecked(&self, coord: &Coordinate<I>) -> I::Bool {
        self.adaptor().is_valid_unchecked(coord)
    }
}
