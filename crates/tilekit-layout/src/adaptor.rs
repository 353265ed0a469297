//! Tensor adaptors: transforms wired together over hidden dimension ids.
//!
//! An adaptor is a list of [`Stage`]s — a transform plus the **hidden ids** of its lower and upper
//! dimensions — with a list of bottom ids and a list of top ids. Hidden dimensions are slots of
//! one flat index vector; nothing else connects the transforms (SEMANTICS §3).
//!
//! ```text
//!   Morton order of an 8×8 tile (the `morton_8x8` conformance descriptor):
//!
//!   top ids:                          [9]  z
//!                                      │ stage 3: merge(2,2,2,2,2,2)
//!                        ┌──┬──┬───────┴──┬──┬──┐   lower [3, 6, 4, 7, 5, 8]
//!   hidden:   0   1   2  3  4  5         6  7  8   9
//!                 ▲   ▲  └──┴──┘         └──┴──┘
//!                 │   │  stage 1:        stage 2:
//!                 │   │  unmerge(2,2,2)  unmerge(2,2,2)
//!                 │   │  of row [1]      of col [2]
//!                 └───┴── stage 0: embed(lengths 8,8; coefficients 8,1) from [0]
//!   bottom ids: [0]  the element offset
//! ```
//!
//! Evaluation (`calculate_bottom_index`) writes the top index into the top slots of a zeroed
//! hidden vector, then runs the stages **from the last to the first**, each writing its lower
//! slots from its upper slots. So if two stages write the same slot the one with the smaller
//! index wins, and slots nobody writes stay 0 — both are reference behaviour that distribution
//! encodings rely on.
//!
//! Builders mirror the reference: [`TensorAdaptor::single_stage`],
//! [`TensorAdaptor::transform`] (append transforms on top; new hidden ids are allocated in
//! transform order and the new top order is chosen by labels) and [`TensorAdaptor::chain`].

use crate::error::{expect_count, LayoutError, Result};
use crate::idx::{checked_product, consts, Idx};
use crate::transform::Transform;

/// The most hidden dimensions an adaptor may have. Evaluating an adaptor allocates one index
/// per hidden dimension, so [`TensorAdaptor::new`] refuses more (a descriptor read from a file
/// cannot make an evaluation allocate gigabytes); real layouts have tens.
///
/// ```
/// use tilekit_layout::{Transform, TensorAdaptor, adaptor::{Stage, MAX_HIDDEN_DIMS}};
/// let s = Stage::new(Transform::pass_through(4i64).unwrap(), vec![0], vec![1]).unwrap();
/// let e = TensorAdaptor::new(vec![s], vec![0], vec![1], MAX_HIDDEN_DIMS + 1).unwrap_err();
/// assert!(e.to_string().starts_with("tensor adaptor: ndim_hidden = 1048577 is invalid"));
/// ```
pub const MAX_HIDDEN_DIMS: usize = 1 << 20;

/// One transform of an adaptor with the hidden ids of its lower and upper dimensions.
///
/// ```
/// use tilekit_layout::{Transform, adaptor::Stage};
/// let s = Stage::new(Transform::merge(vec![4i64, 6]).unwrap(), vec![1, 2], vec![3]).unwrap();
/// assert_eq!(s.lower(), &[1, 2]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Stage<I = i64> {
    transform: Transform<I>,
    lower: Vec<usize>,
    upper: Vec<usize>,
}

impl<I: Idx> Stage<I> {
    /// A stage; the id lists must have the transform's lower and upper ranks.
    ///
    /// ```
    /// use tilekit_layout::{Transform, adaptor::Stage};
    /// let e = Stage::new(Transform::merge(vec![4i64, 6]).unwrap(), vec![1], vec![3]).unwrap_err();
    /// assert!(e.to_string().contains("lower_hidden_ids has 1 entries, expected 2"));
    /// ```
    pub fn new(transform: Transform<I>, lower: Vec<usize>, upper: Vec<usize>) -> Result<Self> {
        let ctx = format!("{} stage", transform.name());
        if lower.len() != transform.num_lower() {
            return Err(LayoutError::count(
                ctx,
                "lower_hidden_ids",
                lower.len(),
                format!("{} (the transform's lower rank)", transform.num_lower()),
            ));
        }
        if upper.len() != transform.num_upper() {
            return Err(LayoutError::count(
                ctx,
                "upper_hidden_ids",
                upper.len(),
                format!("{} (the transform's upper rank)", transform.num_upper()),
            ));
        }
        Ok(Stage { transform, lower, upper })
    }

    /// The transform.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, adaptor::Stage};
    /// let s = Stage::new(Transform::pass_through(4i64).unwrap(), vec![0], vec![1]).unwrap();
    /// assert_eq!(s.transform().name(), "pass_through");
    /// ```
    pub fn transform(&self) -> &Transform<I> {
        &self.transform
    }

    /// Hidden ids of the lower dimensions.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, adaptor::Stage};
    /// let s = Stage::new(Transform::pass_through(4i64).unwrap(), vec![0], vec![1]).unwrap();
    /// assert_eq!(s.lower(), &[0]);
    /// ```
    pub fn lower(&self) -> &[usize] {
        &self.lower
    }

    /// Hidden ids of the upper dimensions.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, adaptor::Stage};
    /// let s = Stage::new(Transform::pass_through(4i64).unwrap(), vec![0], vec![1]).unwrap();
    /// assert_eq!(s.upper(), &[1]);
    /// ```
    pub fn upper(&self) -> &[usize] {
        &self.upper
    }
}

/// A validated tensor adaptor (SEMANTICS §3).
///
/// ```
/// use tilekit_layout::{Transform, TensorAdaptor};
/// // (tile, elem) over a 1-D index of 24 = merge of 4×6, stored as one unmerge
/// let a = TensorAdaptor::single_stage(
///     vec![Transform::merge(vec![4i64, 6]).unwrap()],
///     vec![vec![0, 1]],
///     vec![vec![0]],
/// ).unwrap();
/// assert_eq!(a.calculate_bottom_index(&[13]).unwrap(), vec![2, 1]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TensorAdaptor<I = i64> {
    stages: Vec<Stage<I>>,
    bottom: Vec<usize>,
    top: Vec<usize>,
    ndim_hidden: usize,
}

fn check_ids(ctx: &str, field: &str, ids: &[usize], ndim_hidden: usize) -> Result<()> {
    for (k, &id) in ids.iter().enumerate() {
        if id >= ndim_hidden {
            return Err(LayoutError::invalid(
                ctx,
                format!("{field}[{k}]"),
                id,
                format!("hidden ids are 0..{ndim_hidden} (ndim_hidden = {ndim_hidden})"),
            ));
        }
    }
    Ok(())
}

/// `ids` are below `ndim_hidden` (checked first), so a bitmap finds repeats in linear time.
fn check_distinct(ctx: &str, field: &str, ids: &[usize], ndim_hidden: usize) -> Result<()> {
    let mut seen = vec![false; ndim_hidden];
    for (k, &id) in ids.iter().enumerate() {
        if std::mem::replace(&mut seen[id], true) {
            return Err(LayoutError::invalid(
                ctx,
                format!("{field}[{k}]"),
                id,
                "each hidden id may appear only once in this list",
            ));
        }
    }
    Ok(())
}

impl<I: Idx> TensorAdaptor<I> {
    /// An adaptor from its full structure, as the reference stores it.
    ///
    /// Validated: `ndim_hidden` is at most [`MAX_HIDDEN_DIMS`]; every id is below `ndim_hidden`;
    /// top and bottom ids are distinct; every top id is the upper dimension of some stage; the
    /// number of top indices (the product of the top lengths, when they are known now) fits in
    /// `i64` ([`LayoutError::Overflow`] otherwise).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor, adaptor::Stage};
    /// let s = Stage::new(Transform::embed(vec![4i64, 6], vec![6, 1]).unwrap(), vec![0], vec![1, 2]).unwrap();
    /// let a = TensorAdaptor::new(vec![s.clone()], vec![0], vec![1, 2], 3).unwrap();
    /// assert_eq!(a.calculate_bottom_index(&[1, 2]).unwrap(), vec![8]);
    /// let e = TensorAdaptor::new(vec![s], vec![0], vec![1, 5], 3).unwrap_err();
    /// assert!(e.to_string().contains("top_hidden_ids[1] = 5 is invalid"));
    /// ```
    pub fn new(
        stages: Vec<Stage<I>>,
        bottom: Vec<usize>,
        top: Vec<usize>,
        ndim_hidden: usize,
    ) -> Result<Self> {
        let ctx = "tensor adaptor";
        if ndim_hidden > MAX_HIDDEN_DIMS {
            return Err(LayoutError::invalid(
                ctx,
                "ndim_hidden",
                ndim_hidden,
                format!("an adaptor has at most {MAX_HIDDEN_DIMS} hidden dims"),
            ));
        }
        check_ids(ctx, "bottom_hidden_ids", &bottom, ndim_hidden)?;
        check_ids(ctx, "top_hidden_ids", &top, ndim_hidden)?;
        check_distinct(ctx, "bottom_hidden_ids", &bottom, ndim_hidden)?;
        check_distinct(ctx, "top_hidden_ids", &top, ndim_hidden)?;
        for (t, s) in stages.iter().enumerate() {
            check_ids(ctx, &format!("transforms[{t}].lower_hidden_ids"), &s.lower, ndim_hidden)?;
            check_ids(ctx, &format!("transforms[{t}].upper_hidden_ids"), &s.upper, ndim_hidden)?;
            // a stage that reads its own output is a cycle: evaluation would never reach the
            // bottom
            if let Some(id) = s.upper.iter().find(|u| s.lower.contains(u)) {
                return Err(LayoutError::invalid(
                    ctx,
                    format!("transforms[{t}].upper_hidden_ids"),
                    id,
                    format!(
                        "hidden id {id} is also a lower id of the same transform {:?}: a \
                         transform's upper and lower dims must differ",
                        s.lower
                    ),
                ));
            }
        }
        // the first stage (and position) that has each hidden id as an upper dim, in linear
        // time (not stages × top): where top lengths come from
        let mut owner: Vec<Option<(usize, usize)>> = vec![None; ndim_hidden];
        for (si, s) in stages.iter().enumerate() {
            for (k, &u) in s.upper.iter().enumerate() {
                owner[u].get_or_insert((si, k));
            }
        }
        for (k, id) in top.iter().enumerate() {
            if owner[*id].is_none() {
                return Err(LayoutError::invalid(
                    ctx,
                    format!("top_hidden_ids[{k}]"),
                    id,
                    "a top dimension must be the upper dimension of some transform",
                ));
            }
        }
        let uppers: Vec<Vec<I>> = stages.iter().map(|s| s.transform.upper_lengths()).collect();
        // an indexing (gather) table addresses the dim below it: every value must be a valid
        // index of that dim when its length is known, or the index math below overflows
        for (t, s) in stages.iter().enumerate() {
            if let crate::transform::TransformKind::Indexing { table } = s.transform.kind() {
                let Some((si, k)) = owner[s.lower[0]] else { continue };
                let Some(len) = uppers[si][k].to_const() else { continue };
                if let Some((i, v)) = table.iter().enumerate().find(|(_, v)| **v >= len) {
                    return Err(LayoutError::invalid(
                        ctx,
                        format!("transforms[{t}] indexing table[{i}]"),
                        v,
                        format!("must be < {len}, the length of the lower dim {}", s.lower[0]),
                    ));
                }
            }
        }
        let top_lengths: Vec<I> =
            top.iter().filter_map(|&id| owner[id].map(|(si, k)| uppers[si][k].clone())).collect();
        if let Some(lengths) = consts(&top_lengths) {
            if checked_product(&lengths).is_none() {
                return Err(LayoutError::overflow(
                    ctx,
                    "the number of top indices Π top lengths",
                    format!("top lengths {lengths:?}"),
                ));
            }
        }
        reachable_ranges(ctx, &stages, &top, &top_lengths, ndim_hidden)?;
        Ok(TensorAdaptor { stages, bottom, top, ndim_hidden })
    }

    /// The reference's `make_single_stage_tensor_adaptor(trans, lower_ids, upper_ids)`: bottom
    /// dims get hidden ids `0..nlow`; the new top dims get `nlow + label`, top order by label.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(
    ///     vec![Transform::unmerge(vec![2i64, 4]).unwrap(), Transform::pass_through(3).unwrap()],
    ///     vec![vec![0], vec![1]],
    ///     vec![vec![0, 2], vec![1]],
    /// ).unwrap();
    /// // top = (u0, pass, u1)
    /// assert_eq!(a.calculate_bottom_index(&[1, 2, 3]).unwrap(), vec![7, 2]);
    /// ```
    pub fn single_stage(
        transforms: Vec<Transform<I>>,
        lower_ids: Vec<Vec<usize>>,
        upper_ids: Vec<Vec<usize>>,
    ) -> Result<Self> {
        let ctx = "single-stage tensor adaptor";
        expect_count(ctx, "lower_ids", lower_ids.len(), transforms.len(), "transform")?;
        expect_count(ctx, "upper_ids", upper_ids.len(), transforms.len(), "transform")?;
        let nlow = labels_count(ctx, "lower_ids", &lower_ids)?;
        let nup = labels_count(ctx, "upper_ids", &upper_ids)?;
        let mut stages = Vec::with_capacity(transforms.len());
        for ((t, lo), up) in transforms.into_iter().zip(lower_ids).zip(upper_ids) {
            let up: Vec<usize> = up.iter().map(|u| u + nlow).collect();
            stages.push(Stage::new(t, lo, up)?);
        }
        Self::new(stages, (0..nlow).collect(), (nlow..nlow + nup).collect(), nlow + nup)
    }

    /// The reference's `transform_tensor_adaptor(old, new_transforms, lower_old_top_ids,
    /// upper_new_top_ids)`: appends transforms on top. `lower_ids[t]` are positions in the old
    /// top; `upper_ids[t]` are labels of the new top (each of `0..n` used exactly once); fresh
    /// hidden ids are allocated in transform order.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor};
    /// let base = TensorAdaptor::single_stage(
    ///     vec![Transform::embed(vec![8i64, 8], vec![8, 1]).unwrap()], vec![vec![0]], vec![vec![0, 1]],
    /// ).unwrap();
    /// // 8×8 as (tile_row, tile_col, in_row, in_col) of 4×4 tiles
    /// let t = base.transform(
    ///     vec![Transform::unmerge(vec![2, 4]).unwrap(), Transform::unmerge(vec![2, 4]).unwrap()],
    ///     vec![vec![0], vec![1]],
    ///     vec![vec![0, 2], vec![1, 3]],
    /// ).unwrap();
    /// assert_eq!(t.calculate_bottom_index(&[1, 0, 2, 3]).unwrap(), vec![8 * 6 + 3]);
    /// ```
    pub fn transform(
        &self,
        transforms: Vec<Transform<I>>,
        lower_ids: Vec<Vec<usize>>,
        upper_ids: Vec<Vec<usize>>,
    ) -> Result<Self> {
        let ctx = "transform_tensor_adaptor";
        expect_count(ctx, "lower_ids", lower_ids.len(), transforms.len(), "transform")?;
        expect_count(ctx, "upper_ids", upper_ids.len(), transforms.len(), "transform")?;
        let nup = labels_count(ctx, "upper_ids", &upper_ids)?;
        let mut stages = self.stages.clone();
        let mut new_top = vec![0usize; nup];
        let mut next = self.ndim_hidden;
        // as the reference's sanity check: every old top dim feeds at most one new transform
        // (two transforms writing one dim would make moves and fresh offsets disagree)
        let mut fed_by: Vec<Option<usize>> = vec![None; self.top.len()];
        // a transform may not declare a lower dim longer than the old top dim it reads: in-range
        // new indices would reach past the old dim (and past the offset range checked when the
        // descriptor was built)
        let old_lengths = self.top_lengths();
        for (t, ((tr, lo), up)) in transforms.into_iter().zip(lower_ids).zip(upper_ids).enumerate()
        {
            if let Some(declared) = tr.declared_lower_lengths() {
                for (k, (d, &pos)) in declared.iter().zip(&lo).enumerate() {
                    let old = old_lengths.get(pos).and_then(|l| l.to_const());
                    if let (Some(d), Some(old)) = (d.to_const(), old) {
                        if d > old {
                            return Err(LayoutError::invalid(
                                ctx,
                                format!("transform {t} ({}) lower length {k}", tr.name()),
                                d,
                                format!("at most the length {old} of old top dim {pos} it reads"),
                            ));
                        }
                    }
                }
            }
            let mut low_hidden = Vec::with_capacity(lo.len());
            for (k, &pos) in lo.iter().enumerate() {
                let Some(&h) = self.top.get(pos) else {
                    return Err(LayoutError::invalid(
                        ctx,
                        format!("lower_ids[{t}][{k}]"),
                        pos,
                        format!("positions in the old top are 0..{}", self.top.len()),
                    ));
                };
                if let Some(first) = fed_by[pos].replace(t) {
                    return Err(LayoutError::invalid(
                        ctx,
                        format!("lower_ids[{t}][{k}]"),
                        pos,
                        format!(
                            "each old top dim feeds one transform; position {pos} already \
                             feeds transform {first}"
                        ),
                    ));
                }
                low_hidden.push(h);
            }
            let mut up_hidden = Vec::with_capacity(up.len());
            for &label in &up {
                new_top[label] = next;
                up_hidden.push(next);
                next += 1;
            }
            stages.push(Stage::new(tr, low_hidden, up_hidden)?);
        }
        Self::new(stages, self.bottom.clone(), new_top, next)
    }

    /// The reference's `chain_tensor_adaptors(a0, a1)`: `a1`'s bottom dims are `a0`'s top dims;
    /// `a1`'s other hidden ids are shifted past `a0`'s.
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor};
    /// let a0 = TensorAdaptor::single_stage(
    ///     vec![Transform::embed(vec![4i64, 6], vec![6, 1]).unwrap()], vec![vec![0]], vec![vec![0, 1]],
    /// ).unwrap();
    /// let a1 = TensorAdaptor::single_stage(
    ///     vec![Transform::merge(vec![4i64, 6]).unwrap()], vec![vec![0, 1]], vec![vec![0]],
    /// ).unwrap();
    /// let c = a0.chain(&a1).unwrap();
    /// assert_eq!(c.calculate_bottom_index(&[17]).unwrap(), vec![17]);
    /// ```
    pub fn chain(&self, next: &TensorAdaptor<I>) -> Result<Self> {
        if next.bottom.len() != self.top.len() {
            return Err(LayoutError::count(
                "chain_tensor_adaptors",
                "second adaptor's bottom_hidden_ids",
                next.bottom.len(),
                format!("{} (the first adaptor's top rank)", self.top.len()),
            ));
        }
        let shift = self.ndim_hidden;
        let map = |id: usize| -> usize {
            match next.bottom.iter().position(|&b| b == id) {
                Some(k) => self.top[k],
                None => id + shift,
            }
        };
        let mut stages = self.stages.clone();
        for s in &next.stages {
            stages.push(Stage {
                transform: s.transform.clone(),
                lower: s.lower.iter().map(|&i| map(i)).collect(),
                upper: s.upper.iter().map(|&i| map(i)).collect(),
            });
        }
        let top = next.top.iter().map(|&i| map(i)).collect();
        Self::new(stages, self.bottom.clone(), top, shift + next.ndim_hidden)
    }

    /// The stages, bottom to top (reference order).
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::pass_through(4i64).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert_eq!(a.stages().len(), 1);
    /// ```
    pub fn stages(&self) -> &[Stage<I>] {
        &self.stages
    }

    /// Hidden ids of the bottom dimensions.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::pass_through(4i64).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert_eq!(a.bottom_ids(), &[0]);
    /// ```
    pub fn bottom_ids(&self) -> &[usize] {
        &self.bottom
    }

    /// Hidden ids of the top dimensions.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::pass_through(4i64).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert_eq!(a.top_ids(), &[1]);
    /// ```
    pub fn top_ids(&self) -> &[usize] {
        &self.top
    }

    /// Number of hidden dimensions.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::pass_through(4i64).unwrap()], vec![vec![0]], vec![vec![0]]).unwrap();
    /// assert_eq!(a.ndim_hidden(), 2);
    /// ```
    pub fn ndim_hidden(&self) -> usize {
        self.ndim_hidden
    }

    /// Number of top dimensions.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.ndim_top(), 2);
    /// ```
    pub fn ndim_top(&self) -> usize {
        self.top.len()
    }

    /// Lengths of the top dimensions, each from the transform that owns it (the first stage,
    /// in reference order, with that id among its upper dims).
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.top_lengths(), vec![2, 3]);
    /// ```
    pub fn top_lengths(&self) -> Vec<I> {
        self.top.iter().map(|&id| self.hidden_length(id).unwrap_or_else(|| I::lit(-1))).collect()
    }

    /// The length of a hidden dimension that is the upper dim of some stage.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.hidden_length(2), Some(3));
    /// assert_eq!(a.hidden_length(0), None);
    /// ```
    pub fn hidden_length(&self, id: usize) -> Option<I> {
        self.stages.iter().find_map(|s| {
            s.upper
                .iter()
                .position(|&u| u == id)
                .map(|k| s.transform.upper_lengths().swap_remove(k))
        })
    }

    /// Product of the top lengths (it fits in `i64` when the lengths are known: checked when
    /// the adaptor is built).
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.element_size(), 6);
    /// ```
    pub fn element_size(&self) -> I {
        crate::idx::product(&self.top_lengths())
    }

    /// `Ok` when `top` has one entry per top dimension.
    pub(crate) fn check_top(&self, field: &str, top: &[I]) -> Result<()> {
        expect_count("tensor adaptor", field, top.len(), self.top.len(), "top dimension")
    }

    /// The whole hidden index for a top index (top slots written, stages run last → first); an
    /// error when `top` does not have one entry per top dimension.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.calculate_hidden_index(&[1, 2]).unwrap(), vec![5, 1, 2]);
    /// assert_eq!(
    ///     a.calculate_hidden_index(&[1]).unwrap_err().to_string(),
    ///     "tensor adaptor: top index has 1 entries, expected 2 (one per top dimension)"
    /// );
    /// ```
    pub fn calculate_hidden_index(&self, top: &[I]) -> Result<Vec<I>> {
        self.check_top("top index", top)?;
        Ok(self.calculate_hidden_index_unchecked(top))
    }

    /// **Unchecked fast path** of [`calculate_hidden_index`](Self::calculate_hidden_index): the
    /// caller guarantees `top.len() == ndim_top()` (a debug assertion checks it; in release
    /// builds a wrong rank gives a meaningless index). For hot loops that checked the rank once.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.calculate_hidden_index_unchecked(&[1, 2]), vec![5, 1, 2]);
    /// ```
    pub fn calculate_hidden_index_unchecked(&self, top: &[I]) -> Vec<I> {
        debug_assert_eq!(top.len(), self.top.len(), "tensor adaptor: top index rank");
        let mut hidden = vec![I::lit(0); self.ndim_hidden];
        for (&id, v) in self.top.iter().zip(top) {
            hidden[id] = v.clone();
        }
        let mut up: Vec<I> = Vec::new();
        let mut low: Vec<I> = Vec::new();
        for s in self.stages.iter().rev() {
            up.clear();
            up.extend(s.upper.iter().map(|&i| hidden[i].clone()));
            s.transform.lower_index_into(&up, &mut low);
            for (&i, v) in s.lower.iter().zip(low.drain(..)) {
                hidden[i] = v;
            }
        }
        hidden
    }

    /// The bottom index of a top index; an error when `top` does not have one entry per top
    /// dimension.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.calculate_bottom_index(&[1, 2]).unwrap(), vec![5]);
    /// assert!(a.calculate_bottom_index(&[1, 2, 0]).is_err());
    /// ```
    pub fn calculate_bottom_index(&self, top: &[I]) -> Result<Vec<I>> {
        self.check_top("top index", top)?;
        Ok(self.calculate_bottom_index_unchecked(top))
    }

    /// **Unchecked fast path** of [`calculate_bottom_index`](Self::calculate_bottom_index): the
    /// caller guarantees `top.len() == ndim_top()` (debug assertion only).
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.calculate_bottom_index_unchecked(&[1, 2]), vec![5]);
    /// ```
    pub fn calculate_bottom_index_unchecked(&self, top: &[I]) -> Vec<I> {
        let hidden = self.calculate_hidden_index_unchecked(top);
        self.bottom.iter().map(|&i| hidden[i].clone()).collect()
    }

    /// Propagates guaranteed vector (length, stride) arrays over **hidden** dims to the top
    /// dims: stages in forward order compute their upper values from their lower values, then a
    /// guaranteed value that is not `-1` overrides (SEMANTICS §3).
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3, 4]).unwrap()], vec![vec![0]], vec![vec![0, 1, 2]]).unwrap();
    /// // a packed descriptor: stride 1 guaranteed on the last dim, length unknown
    /// let (l, s) = a.top_safe_vector_lengths_strides(&[-1, -1, -1, -1], &[-1, -1, -1, 1]);
    /// assert_eq!((l, s), (vec![-1, -1, -1], vec![-1, -1, 1]));
    /// ```
    pub fn top_safe_vector_lengths_strides(
        &self,
        guaranteed_lengths: &[i64],
        guaranteed_strides: &[i64],
    ) -> (Vec<i64>, Vec<i64>) {
        let get = |v: &[i64], i: usize| v.get(i).copied().unwrap_or(-1);
        let mut lens: Vec<i64> =
            (0..self.ndim_hidden).map(|i| get(guaranteed_lengths, i)).collect();
        let mut strides: Vec<i64> =
            (0..self.ndim_hidden).map(|i| get(guaranteed_strides, i)).collect();
        for s in &self.stages {
            let ll: Vec<i64> = s.lower.iter().map(|&i| lens[i]).collect();
            let ls: Vec<i64> = s.lower.iter().map(|&i| strides[i]).collect();
            // ranks: the stage was validated against its transform when built
            let (ul, us) = s.transform.upper_vector_lengths_strides_unchecked(&ll, &ls);
            for (k, &id) in s.upper.iter().enumerate() {
                let gl = get(guaranteed_lengths, id);
                let gs = get(guaranteed_strides, id);
                lens[id] = if gl != -1 { gl } else { ul[k] };
                strides[id] = if gs != -1 { gs } else { us[k] };
            }
        }
        (
            self.top.iter().map(|&i| lens[i]).collect(),
            self.top.iter().map(|&i| strides[i]).collect(),
        )
    }

    /// One line per stage, bottom to top, e.g. `[1, 2] <- embed(...) <- [3, 4]`.
    ///
    /// ```
    /// # use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// assert_eq!(a.describe(), "bottom [0], top [1, 2]\n  [0] <- unmerge(2, 3) <- [1, 2]\n");
    /// ```
    pub fn describe(&self) -> String {
        let mut out = format!("bottom {:?}, top {:?}\n", self.bottom, self.top);
        for s in &self.stages {
            out.push_str(&format!(
                "  {:?} <- {} <- {:?}\n",
                s.lower,
                s.transform.describe(),
                s.upper
            ));
        }
        out
    }
}

fn labels_count(ctx: &str, field: &str, ids: &[Vec<usize>]) -> Result<usize> {
    let n: usize = ids.iter().map(Vec::len).sum();
    let mut seen = vec![false; n];
    for (t, list) in ids.iter().enumerate() {
        for (k, &label) in list.iter().enumerate() {
            if label >= n || seen[label] {
                return Err(LayoutError::invalid(
                    ctx,
                    format!("{field}[{t}][{k}]"),
                    label,
                    format!("labels must use each of 0..{n} exactly once"),
                ));
            }
            seen[label] = true;
        }
    }
    Ok(n)
}

impl TensorAdaptor<i64> {
    /// The same adaptor over another index domain (see [`Transform::lift`]).
    ///
    /// ```
    /// use tilekit_layout::{Transform, TensorAdaptor};
    /// let a = TensorAdaptor::single_stage(vec![Transform::unmerge(vec![2i64, 3]).unwrap()], vec![vec![0]], vec![vec![0, 1]]).unwrap();
    /// let b: TensorAdaptor<i64> = a.lift();
    /// assert_eq!(a, b);
    /// ```
    pub fn lift<I: Idx>(&self) -> TensorAdaptor<I> {
        TensorAdaptor {
            stages: self
                .stages
                .iter()
                .map(|s| Stage {
                    transform: s.transform.lift(),
                    lower: s.lower.clone(),
                    upper: s.upper.clone(),
                })
                .collect(),
            bottom: self.bottom.clone(),
            top: self.top.clone(),
            ndim_hidden: self.ndim_hidden,
        }
    }
}

/// Runs the interval analysis of [`crate::reach`] over the stages in evaluation order (last
/// stage first, hidden dims starting at 0 as in `calculate_hidden_index_unchecked`): an error when
/// some in-range top index would overflow `i64` in a stage's index math or in a move.
fn reachable_ranges<I: Idx>(
    ctx: &str,
    stages: &[Stage<I>],
    top: &[usize],
    top_lengths: &[I],
    ndim_hidden: usize,
) -> Result<()> {
    use crate::reach::{lower_ranges, Range};
    let mut hidden: Vec<Option<Range>> = vec![Some(Range::new(0, 0)); ndim_hidden];
    for (&id, len) in top.iter().zip(top_lengths) {
        hidden[id] = len.to_const().map(|l| Range::new(0, i128::from(l.max(1) - 1)));
    }
    for (t, s) in stages.iter().enumerate().rev() {
        let up: Vec<Option<Range>> = s.upper.iter().map(|&i| hidden[i]).collect();
        let what = || format!("{ctx}, transforms[{t}] ({})", s.transform.name());
        let low = lower_ranges(&s.transform, &up, &what)?;
        for (&i, r) in s.lower.iter().zip(low) {
            hidden[i] = r;
        }
    }
    Ok(())
}
