//! Tensor descriptors: an adaptor whose one bottom dim is the element offset (SEMANTICS §4).
//!
//! ```text
//!   user index (top)     [row, col]           [row, col]  8×8 after right pads
//!                            │                   │      │
//!                          embed             right_pad right_pad   ← transform()
//!                            │                   └──┬───┘
//!   offset (hidden 0)      7·row + col             embed(5×7, strides 7,1)  ← naive()
//! ```
//!
//! A descriptor adds to its adaptor an **element space size** (how many elements the memory
//! behind it holds) and, per hidden dim, a **guaranteed vector length and stride** (`-1` =
//! unknown) that tile windows use to pick vector widths. The naive constructors put the
//! guarantee on the last top dim; [`TensorDescriptor::transform`] extends it with `-1` for new
//! hidden dims; [`TensorDescriptor::top_safe_vector_lengths_strides`] pushes it to the top.

use crate::adaptor::TensorAdaptor;
use crate::error::{LayoutError, Result};
use crate::idx::{consts, Idx};
use crate::transform::Transform;

/// A tensor descriptor, generic over the index domain.
///
/// ```
/// use tilekit_layout::TensorDescriptor;
/// let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], Some((4, 1))).unwrap();
/// assert_eq!(d.calculate_offset(&[2, 3]).unwrap(), 15);
/// assert_eq!(d.element_space_size(), 24);
/// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 4], vec![-1, 1]));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TensorDescriptor<I = i64> {
    adaptor: TensorAdaptor<I>,
    element_space_size: I,
    guaranteed_lengths: Vec<i64>,
    guaranteed_strides: Vec<i64>,
}

impl<I: Idx> TensorDescriptor<I> {
    /// A descriptor from its parts. The adaptor must have exactly one bottom dim (the offset);
    /// the guaranteed arrays have one entry per hidden dim (`-1` = unknown).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, TensorDescriptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// let d = TensorDescriptor::from_parts(a, 6, vec![-1, -1, -1], vec![-1, -1, 1]).unwrap();
    /// assert_eq!(d.calculate_offset(&[1, 1]).unwrap(), 4);
    /// ```
    pub fn from_parts(
        adaptor: TensorAdaptor<I>,
        element_space_size: I,
        guaranteed_lengths: Vec<i64>,
        guaranteed_strides: Vec<i64>,
    ) -> Result<Self> {
        let ctx = "tensor descriptor";
        if adaptor.bottom_ids().len() != 1 {
            return Err(LayoutError::count(
                ctx,
                "bottom_hidden_ids",
                adaptor.bottom_ids().len(),
                "1 (a descriptor's bottom is the element offset)",
            ));
        }
        let n = adaptor.ndim_hidden();
        for (field, v) in [
            ("guaranteed_vector_lengths", &guaranteed_lengths),
            ("guaranteed_vector_strides", &guaranteed_strides),
        ] {
            if v.len() != n {
                return Err(LayoutError::count(
                    ctx,
                    field,
                    v.len(),
                    format!("{n} (one per hidden dim)"),
                ));
            }
            if let Some((i, x)) = v
                .iter()
                .enumerate()
                .find(|(_, x)| **x < -1 || (field == "guaranteed_vector_lengths" && **x == 0))
            {
                return Err(LayoutError::invalid(
                    ctx,
                    format!("{field}[{i}]"),
                    x,
                    "use -1 for unknown, otherwise a positive value",
                ));
            }
        }
        if let Some(s) = element_space_size.to_const() {
            if s < 0 {
                return Err(LayoutError::invalid(ctx, "element_space_size", s, "must be >= 0"));
            }
        }
        Ok(TensorDescriptor { adaptor, element_space_size, guaranteed_lengths, guaranteed_strides })
    }

    /// A descriptor over an adaptor with nothing guaranteed (reference
    /// `make_tensor_descriptor_from_adaptor`).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, TensorDescriptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// let d = TensorDescriptor::from_adaptor(a, 6).unwrap();
    /// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, -1], vec![-1, -1]));
    /// ```
    pub fn from_adaptor(adaptor: TensorAdaptor<I>, element_space_size: I) -> Result<Self> {
        let n = adaptor.ndim_hidden();
        Self::from_parts(adaptor, element_space_size, vec![-1; n], vec![-1; n])
    }

    /// `make_naive_tensor_descriptor(lengths, strides, [VecLen, VecStride])`: one embed; element
    /// space `1 + Σ (lenᵢ − 1)·strideᵢ`; the last top dim gets the guaranteed vector
    /// `(length, stride)` if given. A space (or an offset range) that does not fit in `i64` is
    /// a [`LayoutError::Overflow`].
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::naive(vec![4i64, 6], vec![8, 1], None).unwrap();
    /// assert_eq!(d.element_space_size(), 30);
    /// assert_eq!(d.calculate_offset(&[3, 5]).unwrap(), 29);
    /// let e = TensorDescriptor::naive(vec![2i64, 4], vec![i64::MAX, 1], None).unwrap_err();
    /// assert_eq!(e.to_string(), "naive tensor descriptor: the element space size 1 + Σ (length − 1)·stride \
    ///     overflows i64: lengths [2, 4], strides [9223372036854775807, 1]");
    /// ```
    pub fn naive(
        lengths: Vec<I>,
        strides: Vec<I>,
        last_dim_vector: Option<(i64, i64)>,
    ) -> Result<Self> {
        let ctx = "naive tensor descriptor";
        crate::error::expect_count(ctx, "strides", strides.len(), lengths.len(), "length")?;
        let n = lengths.len();
        let space = match (consts(&lengths), consts(&strides)) {
            (Some(ls), Some(ss)) => {
                let mut acc = Some(1i64);
                for (l, s) in ls.iter().zip(&ss) {
                    acc = acc
                        .zip(l.checked_sub(1).and_then(|m| m.checked_mul(*s)))
                        .and_then(|(a, t)| a.checked_add(t));
                }
                I::lit(acc.ok_or_else(|| {
                    LayoutError::overflow(
                        ctx,
                        "the element space size 1 + Σ (length − 1)·stride",
                        format!("lengths {ls:?}, strides {ss:?}"),
                    )
                })?)
            }
            _ => {
                let mut space = I::lit(1);
                for (l, s) in lengths.iter().zip(&strides) {
                    space = space + (l.clone() - I::lit(1)) * s.clone();
                }
                space
            }
        };
        let adaptor = TensorAdaptor::single_stage(
            vec![Transform::embed(lengths, strides)?],
            vec![vec![0]],
            vec![(0..n).collect()],
        )?;
        let (mut gl, mut gs) = (vec![-1; n + 1], vec![-1; n + 1]);
        if let Some((vl, vs)) = last_dim_vector {
            gl[n] = vl;
            gs[n] = vs;
        }
        Self::from_parts(adaptor, space, gl, gs)
    }

    /// `make_naive_tensor_descriptor_packed(lengths, [VecLen])`: one unmerge; element space =
    /// product (a [`LayoutError::Overflow`] when it does not fit in `i64`); the last dim is
    /// guaranteed stride 1 and, if given, the vector length.
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::packed(vec![2i64, 3, 4], None).unwrap();
    /// assert_eq!(d.calculate_offset(&[1, 2, 3]).unwrap(), 23);
    /// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, -1, -1], vec![-1, -1, 1]));
    /// assert_eq!(
    ///     TensorDescriptor::packed(vec![1i64 << 32, 1 << 32], None).unwrap_err().to_string(),
    ///     "unmerge transform: the lower length Π up_lengths overflows i64: up_lengths [4294967296, 4294967296]"
    /// );
    /// ```
    pub fn packed(lengths: Vec<I>, last_dim_vector_length: Option<i64>) -> Result<Self> {
        let n = lengths.len();
        // the unmerge refuses a product that overflows, so the space below is exact
        let unmerge = Transform::unmerge(lengths.clone())?;
        let space = crate::idx::product(&lengths);
        let adaptor =
            TensorAdaptor::single_stage(vec![unmerge], vec![vec![0]], vec![(0..n).collect()])?;
        let (mut gl, mut gs) = (vec![-1; n + 1], vec![-1; n + 1]);
        gl[n] = last_dim_vector_length.unwrap_or(-1);
        gs[n] = 1;
        Self::from_parts(adaptor, space, gl, gs)
    }

    /// `make_naive_tensor_descriptor_aligned(lengths, align)`: row-major with the second-to-last
    /// stride rounded up to a multiple of `align`; strides or a space that overflow `i64` are a
    /// [`LayoutError::Overflow`].
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::aligned(vec![3i64, 5], 4).unwrap();
    /// assert_eq!(d.calculate_offset(&[1, 0]).unwrap(), 8);
    /// assert_eq!(d.element_space_size(), 21);
    /// assert!(TensorDescriptor::aligned(vec![3i64, i64::MAX], 4).is_err());
    /// ```
    pub fn aligned(lengths: Vec<I>, align: I) -> Result<Self> {
        let ctx = "aligned tensor descriptor";
        if let Some(a) = align.to_const() {
            if a < 1 {
                return Err(LayoutError::invalid(ctx, "align", a, "must be >= 1"));
            }
        }
        let n = lengths.len();
        if n == 0 {
            return Err(LayoutError::count(ctx, "lengths", 0, "at least 1"));
        }
        let mut strides = vec![I::lit(1); n];
        if let (Some(ls), Some(a)) = (consts(&lengths), align.to_const()) {
            // the same strides, computed with overflow checks
            let overflow = || {
                LayoutError::overflow(
                    ctx,
                    "the strides (the last length rounded up to align, times the inner lengths)",
                    format!("lengths {ls:?}, align {a}"),
                )
            };
            if n >= 2 {
                let last = ls[n - 1];
                let rounded = last.checked_add(a - 1).ok_or_else(overflow)? / a * a;
                let mut cs = vec![1i64; n];
                cs[n - 2] = rounded;
                for i in (0..n - 2).rev() {
                    cs[i] = cs[i + 1].checked_mul(ls[i + 1]).ok_or_else(overflow)?;
                }
                strides = cs.into_iter().map(I::lit).collect();
            }
            return Self::naive(lengths, strides, None);
        }
        if n >= 2 {
            let last = lengths[n - 1].clone();
            let rounded = (last + align.clone() - I::lit(1)) / align.clone() * align;
            strides[n - 2] = rounded;
            for i in (0..n - 2).rev() {
                strides[i] = strides[i + 1].clone() * lengths[i + 1].clone();
            }
        }
        Self::naive(lengths, strides, None)
    }

    /// `make_naive_tensor_descriptor_with_offset(lengths, strides, offset)`: an offset below an
    /// embed; the offset is **not** part of the element space size.
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::naive_with_offset(vec![3i64, 4], vec![4, 1], 10).unwrap();
    /// assert_eq!(d.calculate_offset(&[2, 3]).unwrap(), 21);
    /// assert_eq!(d.element_space_size(), 12);
    /// ```
    pub fn naive_with_offset(lengths: Vec<I>, strides: Vec<I>, offset: I) -> Result<Self> {
        let naive = Self::naive(lengths, strides, None)?;
        let space = naive.element_space_size.clone();
        let n = naive.adaptor.ndim_top();
        // offset(space, os): hidden 0 <- hidden 1; the embed then goes from hidden 1 to the top.
        let off = crate::adaptor::Stage::new(
            Transform::offset(space.clone(), offset)?,
            vec![0],
            vec![1],
        )?;
        let embed = naive.adaptor.stages()[0].transform().clone();
        let embed = crate::adaptor::Stage::new(embed, vec![1], (2..n + 2).collect())?;
        let adaptor = TensorAdaptor::new(vec![off, embed], vec![0], (2..n + 2).collect(), n + 2)?;
        Self::from_adaptor(adaptor, space)
    }

    /// `transform_tensor_descriptor(desc, transforms, lower_ids, upper_ids)`: new transforms on
    /// top of the current top dims (see [`TensorAdaptor::transform`]); guaranteed vectors of
    /// new hidden dims are unknown; the element space is unchanged.
    ///
    /// ```
    /// use tilekit_layout::{TensorDescriptor, Transform};
    /// let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], Some((4, 1))).unwrap()
    ///     .transform(vec![Transform::merge(vec![4, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]]).unwrap();
    /// assert_eq!(d.calculate_offset(&[13]).unwrap(), 13);
    /// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![4], vec![1]));
    /// ```
    pub fn transform(
        &self,
        transforms: Vec<Transform<I>>,
        lower_ids: Vec<Vec<usize>>,
        upper_ids: Vec<Vec<usize>>,
    ) -> Result<Self> {
        let adaptor = self.adaptor.transform(transforms, lower_ids, upper_ids)?;
        let n = adaptor.ndim_hidden();
        let mut gl = self.guaranteed_lengths.clone();
        let mut gs = self.guaranteed_strides.clone();
        gl.resize(n, -1);
        gs.resize(n, -1);
        Self::from_parts(adaptor, self.element_space_size.clone(), gl, gs)
    }

    /// Puts an adaptor on top of the descriptor (reference `chain_tensor_adaptors` with the
    /// descriptor's adaptor first): the adaptor's bottom dims are the descriptor's top dims; new
    /// hidden dims have no guaranteed vector; the element space is unchanged.
    ///
    /// ```
    /// use tilekit_layout::{TensorAdaptor, TensorDescriptor, Transform};
    /// let d = TensorDescriptor::packed(vec![4i64, 6], None).unwrap();
    /// // a 1-D view of the 4×6 tensor: an adaptor from one index (top) to (i, j) (bottom)
    /// let flat = TensorAdaptor::single_stage(vec![Transform::merge(vec![4i64, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]]).unwrap();
    /// assert_eq!(d.chain(&flat).unwrap().calculate_offset(&[13]).unwrap(), 13);
    /// // an adaptor whose bottom has 1 dim does not fit a top of 2
    /// let split = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![4i64, 6]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert!(d.chain(&split).is_err());
    /// ```
    pub fn chain(&self, adaptor: &TensorAdaptor<I>) -> Result<Self> {
        let chained = self.adaptor.chain(adaptor)?;
        let n = chained.ndim_hidden();
        let mut gl = self.guaranteed_lengths.clone();
        let mut gs = self.guaranteed_strides.clone();
        gl.resize(n, -1);
        gs.resize(n, -1);
        Self::from_parts(chained, self.element_space_size.clone(), gl, gs)
    }

    /// The adaptor.
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::packed(vec![2i64, 3], None).unwrap();
    /// assert_eq!(d.adaptor().ndim_hidden(), 3);
    /// ```
    pub fn adaptor(&self) -> &TensorAdaptor<I> {
        &self.adaptor
    }

    /// Number of elements of the memory behind the descriptor.
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// assert_eq!(TensorDescriptor::packed(vec![2i64, 3], None).unwrap().element_space_size(), 6);
    /// ```
    pub fn element_space_size(&self) -> I {
        self.element_space_size.clone()
    }

    /// Guaranteed vector lengths per hidden dim (`-1` = unknown).
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// assert_eq!(TensorDescriptor::packed(vec![2i64, 3], Some(3)).unwrap().guaranteed_vector_lengths(), &[-1, -1, 3]);
    /// ```
    pub fn guaranteed_vector_lengths(&self) -> &[i64] {
        &self.guaranteed_lengths
    }

    /// Guaranteed vector strides per hidden dim (`-1` = unknown).
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// assert_eq!(TensorDescriptor::packed(vec![2i64, 3], None).unwrap().guaranteed_vector_strides(), &[-1, -1, 1]);
    /// ```
    pub fn guaranteed_vector_strides(&self) -> &[i64] {
        &self.guaranteed_strides
    }

    /// Number of top dims.
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// assert_eq!(TensorDescriptor::packed(vec![2i64, 3], None).unwrap().ndim(), 2);
    /// ```
    pub fn ndim(&self) -> usize {
        self.adaptor.ndim_top()
    }

    /// Top lengths.
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// assert_eq!(TensorDescriptor::packed(vec![2i64, 3], None).unwrap().lengths(), vec![2, 3]);
    /// ```
    pub fn lengths(&self) -> Vec<I> {
        self.adaptor.top_lengths()
    }

    /// The element offset of a top index (`calculate_offset`); an error when `top` does not
    /// have one entry per top dimension. The index itself is not range-checked (as in the
    /// reference: pads and windows evaluate indices outside the lengths).
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::naive(vec![4i64, 6], vec![1, 4], None).unwrap();   // column-major
    /// assert_eq!(d.calculate_offset(&[3, 2]).unwrap(), 11);
    /// assert_eq!(
    ///     d.calculate_offset(&[1]).unwrap_err().to_string(),
    ///     "tensor adaptor: top index has 1 entries, expected 2 (one per top dimension)"
    /// );
    /// ```
    pub fn calculate_offset(&self, top: &[I]) -> Result<I> {
        self.adaptor.check_top("top index", top)?;
        Ok(self.calculate_offset_unchecked(top))
    }

    /// **Unchecked fast path** of [`calculate_offset`](Self::calculate_offset), for hot loops and
    /// code generation that checked the rank once: the caller guarantees
    /// `top.len() == ndim()` (a debug assertion checks it; in release builds a wrong rank gives a
    /// meaningless offset).
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::packed(vec![4i64, 6], None).unwrap();
    /// assert_eq!(d.calculate_offset_unchecked(&[2, 3]), 15);
    /// ```
    pub fn calculate_offset_unchecked(&self, top: &[I]) -> I {
        let mut bottom = self.adaptor.calculate_bottom_index_unchecked(top);
        // a descriptor's adaptor has exactly one bottom dim (checked by `from_parts`)
        bottom.swap_remove(0)
    }

    /// Guaranteed vector (lengths, strides) of the top dims
    /// (`get_top_dimension_safe_vector_length_strides`).
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::packed(vec![2i64, 8], Some(4)).unwrap();
    /// assert_eq!(d.top_safe_vector_lengths_strides(), (vec![-1, 4], vec![-1, 1]));
    /// ```
    pub fn top_safe_vector_lengths_strides(&self) -> (Vec<i64>, Vec<i64>) {
        self.adaptor
            .top_safe_vector_lengths_strides(&self.guaranteed_lengths, &self.guaranteed_strides)
    }
}

impl TensorDescriptor<i64> {
    /// The same descriptor over another index domain (see [`Transform::lift`]).
    ///
    /// ```
    /// use tilekit_layout::TensorDescriptor;
    /// let d = TensorDescriptor::packed(vec![2i64, 3], Some(3)).unwrap();
    /// let e: TensorDescriptor<i64> = d.lift();
    /// assert_eq!(d, e);
    /// ```
    pub fn lift<I: Idx>(&self) -> TensorDescriptor<I> {
        TensorDescriptor {
            adaptor: self.adaptor.lift(),
            element_space_size: I::lit(self.element_space_size),
            guaranteed_lengths: self.guaranteed_lengths.clone(),
            guaranteed_strides: self.guaranteed_strides.clone(),
        }
    }
}
