//! Coordinate transforms: the atoms of every layout.
//!
//! A transform maps an **upper** index (closer to the user) to a **lower** index (closer to
//! memory). Layouts are built by stacking transforms over hidden dimensions (see
//! [`crate::adaptor`]); a tensor's element offset is what comes out at the very bottom.
//!
//! ```text
//!        upper (user)                      upper (user)
//!       (row, col) 5×7                     z ∈ 0..64
//!            │  embed(coefs 7,1)              │  merge(2,2,2,2,2,2)
//!            ▼                                ▼
//!        offset = 7·row + col           (y2,x2,y1,x1,y0,x0) bits
//!        lower (memory)                       │  unmerge ×2 …
//! ```
//!
//! Each transform provides the five operations of the reference (SEMANTICS §2):
//!
//! | operation | method |
//! |---|---|
//! | lower index from upper | [`Transform::lower_index`] |
//! | incremental update for coordinate moves | [`Transform::update_lower_index`] |
//! | validity (only pads can be invalid) | [`Transform::is_always_valid`], [`Transform::is_valid`] |
//! | guaranteed vector length/stride, lower → upper | [`Transform::upper_vector_lengths_strides`] |
//! | upper lengths | [`Transform::upper_lengths`] |
//!
//! The catalogue, with `u` upper and `l` lower indices:
//!
//! | constructor | low→up | lower from upper | valid iff |
//! |---|---|---|---|
//! | [`pass_through(L)`](Transform::pass_through) | 1→1 | `l = u` | always |
//! | [`pad(L, lp, rp, skip)`](Transform::pad) | 1→1, up `L+lp+rp` | `l = u − lp` | `lp ≤ u < L+lp` |
//! | [`left_pad(L, lp, skip)`](Transform::left_pad) | 1→1, up `L+lp` | `l = u − lp` | `u ≥ lp` |
//! | [`right_pad(L, rp, skip)`](Transform::right_pad) | 1→1, up `L+rp` | `l = u` | `u < L` |
//! | [`embed(lens, coefs)`](Transform::embed) | 1→N | `l = Σ uᵢ·cᵢ` | always |
//! | [`merge(lens)`](Transform::merge) | N→1, up `Π Lᵢ` | mixed-radix split, last fastest | always |
//! | [`unmerge(lens)`](Transform::unmerge) | 1→N | `l = Σ uᵢ·Π_{j>i} Uⱼ` | always |
//! | [`freeze(v)`](Transform::freeze) | 1→0 | `l = v` | always |
//! | [`insert(L)`](Transform::insert) | 0→1 | — | always |
//! | [`replicate(lens)`](Transform::replicate) | 0→N | — | always |
//! | [`slice(b, e)`](Transform::slice) | 1→1, up `e−b` | `l = u + b` | always |
//! | [`modulo(m, L)`](Transform::modulo) | 1→1 | `l = u mod m` | always |
//! | [`xor(L0, L1)`](Transform::xor) | 2→2 | `l₀ = u₀, l₁ = u₁ ⊕ (u₀ mod L₁)` | always |
//! | [`offset(L, o)`](Transform::offset) | 1→1 | `l = u + o` | always |
//! | [`indexing(table)`](Transform::indexing) | 1→1 | `l = table[u]` | always |
//!
//! Where the reference is broken tilekit is not: `left_pad` can be used in descriptors, and
//! `modulo` supports coordinate moves (the lower index is recomputed from the new upper index).
//! Both merge variants of the reference (magic division and division/modulo) give the same
//! numbers; tilekit has one merge and records which variant a description asked for.

use crate::error::expect_count;
use crate::error::{LayoutError, Result};
use crate::idx::{checked_product, consts, gcd, product, Idx, IdxBool};

/// Which reference merge a [`Transform::merge`] stands for. Both compute the same lower index;
/// the variant is kept so that descriptions round-trip and code generators may choose
/// (magic multiply-shift vs hardware division).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MergeVariant {
    /// `merge_v2_magic_division` (`make_merge_transform`).
    MagicDivision,
    /// `merge_v3_division_mod`.
    DivisionMod,
}

/// The parameters of a transform. Read it with [`Transform::kind`]; build transforms with the
/// validating constructors of [`Transform`].
#[derive(Debug, Clone, PartialEq)]
pub enum TransformKind<I> {
    /// `l = u` over `length`.
    PassThrough {
        /// Upper (= lower) length.
        length: I,
    },
    /// Two-sided pad.
    Pad {
        /// Lower length.
        low_length: I,
        /// Left pad.
        left: I,
        /// Right pad.
        right: I,
        /// When true, every index counts as valid.
        skip_is_valid_check: bool,
    },
    /// Left pad.
    LeftPad {
        /// Lower length.
        low_length: I,
        /// Left pad.
        left: I,
        /// When true, every index counts as valid.
        skip_is_valid_check: bool,
    },
    /// Right pad.
    RightPad {
        /// Lower length.
        low_length: I,
        /// Right pad.
        right: I,
        /// When true, every index counts as valid.
        skip_is_valid_check: bool,
    },
    /// `l = Σ uᵢ·cᵢ`.
    Embed {
        /// Upper lengths.
        up_lengths: Vec<I>,
        /// Coefficient of each upper dimension.
        coefficients: Vec<I>,
    },
    /// Mixed-radix split of one upper index into the lower dims (last fastest).
    Merge {
        /// Lower lengths.
        low_lengths: Vec<I>,
        /// The reference variant this stands for.
        variant: MergeVariant,
    },
    /// Row-major linearisation of the upper dims into one lower index.
    Unmerge {
        /// Upper lengths.
        up_lengths: Vec<I>,
    },
    /// No upper dimension; the lower index is the constant `low_idx`.
    Freeze {
        /// The fixed lower index.
        low_idx: I,
    },
    /// One dangling upper dimension of `length` (no lower dimension).
    Insert {
        /// Upper length.
        length: I,
    },
    /// Dangling upper dimensions (no lower dimension).
    Replicate {
        /// Upper lengths.
        up_lengths: Vec<I>,
    },
    /// `l = u + begin` over `end − begin`.
    Slice {
        /// First lower index.
        begin: I,
        /// One past the last lower index.
        end: I,
    },
    /// `l = u mod modulus`.
    Modulo {
        /// The modulus.
        modulus: I,
        /// Upper length.
        up_length: I,
    },
    /// `l₀ = u₀, l₁ = u₁ ⊕ (u₀ mod lengths[1])`.
    Xor {
        /// Lengths of both dimensions.
        lengths: [I; 2],
    },
    /// `l = u + offset`.
    Offset {
        /// Upper length.
        length: I,
        /// The added offset.
        offset: I,
    },
    /// `l = table[u]` (gather).
    Indexing {
        /// Lower index of every upper index.
        table: Vec<i64>,
    },
}

/// A validated coordinate transform, generic over the index domain `I`.
///
/// ```
/// use tilekit_layout::Transform;
/// // the row-major offset of a 4×6 tensor with strides (6, 1)
/// let t = Transform::embed(vec![4i64, 6], vec![6, 1]).unwrap();
/// assert_eq!(t.lower_index(&[2, 3]).unwrap(), vec![15]);
/// assert_eq!(t.upper_lengths(), vec![4, 6]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Transform<I = i64> {
    kind: TransformKind<I>,
}

fn known_ge<I: Idx>(ctx: &str, field: &str, v: &I, min: i64, rule: &str) -> Result<()> {
    match v.to_const() {
        Some(c) if c < min => Err(LayoutError::invalid(ctx, field, c, rule)),
        _ => Ok(()),
    }
}

fn lengths_ok<I: Idx>(ctx: &str, field: &str, v: &[I]) -> Result<()> {
    for (i, x) in v.iter().enumerate() {
        known_ge(ctx, &format!("{field}[{i}]"), x, 1, "lengths must be >= 1")?;
    }
    Ok(())
}

/// `Err(Overflow)` when the product of lengths known now does not fit in `i64`.
fn product_fits<I: Idx>(ctx: &str, quantity: &str, field: &str, v: &[I]) -> Result<()> {
    match consts(v) {
        Some(c) if checked_product(&c).is_none() => {
            Err(LayoutError::overflow(ctx, quantity, format!("{field} {c:?}")))
        }
        _ => Ok(()),
    }
}

/// `Err(Overflow)` when a sum of values known now does not fit in `i64`.
fn sum_fits<I: Idx>(ctx: &str, quantity: &str, parts: &[(&str, &I)]) -> Result<()> {
    let known: Option<Vec<i64>> = parts.iter().map(|(_, v)| v.to_const()).collect();
    match known {
        Some(c) if c.iter().try_fold(0i64, |a, &x| a.checked_add(x)).is_none() => {
            let ops: Vec<String> =
                parts.iter().zip(&c).map(|((name, _), v)| format!("{name} {v}")).collect();
            Err(LayoutError::overflow(ctx, quantity, ops.join(", ")))
        }
        _ => Ok(()),
    }
}

impl<I: Idx> Transform<I> {
    /// `l = u` over `length`.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::pass_through(6i64).unwrap();
    /// assert_eq!(t.lower_index(&[5]).unwrap(), vec![5]);
    /// assert_eq!(t.upper_vector_lengths_strides(&[4], &[1]).unwrap(), (vec![4], vec![1]));
    /// ```
    pub fn pass_through(length: I) -> Result<Self> {
        known_ge("pass_through transform", "length", &length, 1, "lengths must be >= 1")?;
        Ok(Self { kind: TransformKind::PassThrough { length } })
    }

    /// Two-sided pad: upper length `L + left + right`, `l = u − left`, valid iff
    /// `left ≤ u < L + left` (unless `skip_is_valid_check`). Kills vectorisation (the reference
    /// does not propagate vector lengths through it).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::pad(10i64, 2, 3, false).unwrap();
    /// assert_eq!(t.upper_lengths(), vec![15]);
    /// assert_eq!(t.lower_index(&[2]).unwrap(), vec![0]);
    /// assert!(!t.is_valid(&[1]).unwrap() && t.is_valid(&[11]).unwrap() && !t.is_valid(&[12]).unwrap());
    /// ```
    pub fn pad(low_length: I, left: I, right: I, skip_is_valid_check: bool) -> Result<Self> {
        let ctx = "pad transform";
        known_ge(ctx, "low_length", &low_length, 1, "lengths must be >= 1")?;
        known_ge(ctx, "left_pad", &left, 0, "pads must be >= 0")?;
        known_ge(ctx, "right_pad", &right, 0, "pads must be >= 0")?;
        sum_fits(
            ctx,
            "the upper length low_length + left_pad + right_pad",
            &[("low_length", &low_length), ("left_pad", &left), ("right_pad", &right)],
        )?;
        Ok(Self { kind: TransformKind::Pad { low_length, left, right, skip_is_valid_check } })
    }

    /// Left pad: upper length `L + left`, `l = u − left`, valid iff `u ≥ left`.
    /// Unlike the reference's, this one works inside descriptors.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::left_pad(5i64, 2, false).unwrap();
    /// assert_eq!(t.upper_lengths(), vec![7]);
    /// assert_eq!(t.lower_index(&[6]).unwrap(), vec![4]);
    /// assert!(!t.is_valid(&[1]).unwrap() && t.is_valid(&[2]).unwrap());
    /// ```
    pub fn left_pad(low_length: I, left: I, skip_is_valid_check: bool) -> Result<Self> {
        let ctx = "left_pad transform";
        known_ge(ctx, "low_length", &low_length, 1, "lengths must be >= 1")?;
        known_ge(ctx, "left_pad", &left, 0, "pads must be >= 0")?;
        sum_fits(
            ctx,
            "the upper length low_length + left_pad",
            &[("low_length", &low_length), ("left_pad", &left)],
        )?;
        Ok(Self { kind: TransformKind::LeftPad { low_length, left, skip_is_valid_check } })
    }

    /// Right pad: upper length `L + right`, `l = u`, valid iff `u < L`. This is what
    /// `pad_tensor_view` uses to round a tensor up to a multiple of the tile.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::right_pad(5i64, 3, false).unwrap();
    /// assert_eq!(t.upper_lengths(), vec![8]);
    /// assert!(t.is_valid(&[4]).unwrap() && !t.is_valid(&[5]).unwrap());
    /// ```
    pub fn right_pad(low_length: I, right: I, skip_is_valid_check: bool) -> Result<Self> {
        let ctx = "right_pad transform";
        known_ge(ctx, "low_length", &low_length, 1, "lengths must be >= 1")?;
        known_ge(ctx, "right_pad", &right, 0, "pads must be >= 0")?;
        sum_fits(
            ctx,
            "the upper length low_length + right_pad",
            &[("low_length", &low_length), ("right_pad", &right)],
        )?;
        Ok(Self { kind: TransformKind::RightPad { low_length, right, skip_is_valid_check } })
    }

    /// Embed: `l = Σ uᵢ·cᵢ` (the strided view of a naive descriptor).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::embed(vec![4i64, 5], vec![2, 3]).unwrap();
    /// assert_eq!(t.lower_index(&[3, 4]).unwrap(), vec![18]);
    /// ```
    pub fn embed(up_lengths: Vec<I>, coefficients: Vec<I>) -> Result<Self> {
        let ctx = "embed transform";
        if up_lengths.is_empty() {
            return Err(LayoutError::count(ctx, "up_lengths", 0, "at least 1"));
        }
        lengths_ok(ctx, "up_lengths", &up_lengths)?;
        crate::error::expect_count(
            ctx,
            "coefficients",
            coefficients.len(),
            up_lengths.len(),
            "upper length",
        )?;
        if let (Some(ls), Some(cs)) = (consts(&up_lengths), consts(&coefficients)) {
            // every in-range upper index must give a lower index that fits: the largest is the
            // sum of the positive terms (lengthᵢ − 1)·cᵢ, the smallest that of the negative ones
            let (mut hi, mut lo) = (Some(0i64), Some(0i64));
            for (l, c) in ls.iter().zip(&cs) {
                let term = (l - 1).checked_mul(*c);
                let side = if *c >= 0 { &mut hi } else { &mut lo };
                *side = side.zip(term).and_then(|(a, t)| a.checked_add(t));
            }
            if hi.is_none() || lo.is_none() {
                return Err(LayoutError::overflow(
                    ctx,
                    "the lower index range Σ (up_length − 1)·coefficient",
                    format!("up_lengths {ls:?}, coefficients {cs:?}"),
                ));
            }
        }
        Ok(Self { kind: TransformKind::Embed { up_lengths, coefficients } })
    }

    /// Merge (the reference's `make_merge_transform`, magic division): one upper index of length
    /// `Π Lᵢ` split mixed-radix into the lower dims, the last fastest.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::merge(vec![4i64, 6]).unwrap();
    /// assert_eq!(t.upper_lengths(), vec![24]);
    /// assert_eq!(t.lower_index(&[13]).unwrap(), vec![2, 1]);
    /// ```
    pub fn merge(low_lengths: Vec<I>) -> Result<Self> {
        Self::merge_variant(low_lengths, MergeVariant::MagicDivision)
    }

    /// Merge with an explicit reference variant (both give the same numbers).
    ///
    /// ```
    /// use tilekit_layout::{Transform, transform::MergeVariant};
    /// let a = Transform::merge_variant(vec![2i64, 3, 4], MergeVariant::DivisionMod).unwrap();
    /// assert_eq!(a.lower_index(&[23]).unwrap(), vec![1, 2, 3]);
    /// ```
    pub fn merge_variant(low_lengths: Vec<I>, variant: MergeVariant) -> Result<Self> {
        let ctx = "merge transform";
        if low_lengths.is_empty() {
            return Err(LayoutError::count(ctx, "low_lengths", 0, "at least 1"));
        }
        lengths_ok(ctx, "low_lengths", &low_lengths)?;
        product_fits(ctx, "the upper length Π low_lengths", "low_lengths", &low_lengths)?;
        Ok(Self { kind: TransformKind::Merge { low_lengths, variant } })
    }

    /// Unmerge: `l = Σ uᵢ·Sᵢ`, `Sᵢ = Π_{j>i} Uⱼ` (row-major, last fastest).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::unmerge(vec![2i64, 3, 4]).unwrap();
    /// assert_eq!(t.lower_index(&[1, 2, 3]).unwrap(), vec![23]);
    /// // only the last upper dim inherits a vector length: gcd(8, 4) = 4
    /// assert_eq!(t.upper_vector_lengths_strides(&[8], &[1]).unwrap(), (vec![-1, -1, 4], vec![-1, -1, 1]));
    /// ```
    pub fn unmerge(up_lengths: Vec<I>) -> Result<Self> {
        let ctx = "unmerge transform";
        if up_lengths.is_empty() {
            return Err(LayoutError::count(ctx, "up_lengths", 0, "at least 1"));
        }
        lengths_ok(ctx, "up_lengths", &up_lengths)?;
        product_fits(ctx, "the lower length Π up_lengths", "up_lengths", &up_lengths)?;
        Ok(Self { kind: TransformKind::Unmerge { up_lengths } })
    }

    /// Freeze: no upper dimension, the lower index is always `low_idx`.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::freeze(2i64).unwrap();
    /// assert_eq!(t.lower_index(&[]).unwrap(), vec![2]);
    /// assert_eq!(t.num_upper(), 0);
    /// ```
    pub fn freeze(low_idx: I) -> Result<Self> {
        known_ge("freeze transform", "low_idx", &low_idx, 0, "indices must be >= 0")?;
        Ok(Self { kind: TransformKind::Freeze { low_idx } })
    }

    /// Insert: one dangling upper dimension (no lower dimension; its index is ignored).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::insert(3i64).unwrap();
    /// assert_eq!((t.num_lower(), t.num_upper()), (0, 1));
    /// ```
    pub fn insert(length: I) -> Result<Self> {
        known_ge("insert transform", "length", &length, 1, "lengths must be >= 1")?;
        Ok(Self { kind: TransformKind::Insert { length } })
    }

    /// Replicate: dangling upper dimensions (may be none), used for R dims of distributions.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::replicate(vec![2i64, 4]).unwrap();
    /// assert_eq!((t.num_lower(), t.num_upper()), (0, 2));
    /// assert!(Transform::<i64>::replicate(vec![]).is_ok());
    /// ```
    pub fn replicate(up_lengths: Vec<I>) -> Result<Self> {
        let ctx = "replicate transform";
        lengths_ok(ctx, "up_lengths", &up_lengths)?;
        product_fits(ctx, "the number of replicas Π up_lengths", "up_lengths", &up_lengths)?;
        Ok(Self { kind: TransformKind::Replicate { up_lengths } })
    }

    /// Slice `[begin, end)` of the lower dimension: `l = u + begin`, always valid (no range
    /// check, as the reference).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::slice(2i64, 7).unwrap();
    /// assert_eq!(t.upper_lengths(), vec![5]);
    /// assert_eq!(t.lower_index(&[4]).unwrap(), vec![6]);
    /// ```
    pub fn slice(begin: I, end: I) -> Result<Self> {
        let ctx = "slice transform";
        known_ge(ctx, "slice_begin", &begin, 0, "indices must be >= 0")?;
        if let (Some(b), Some(e)) = (begin.to_const(), end.to_const()) {
            if e <= b {
                return Err(LayoutError::invalid(
                    ctx,
                    "slice_end",
                    e,
                    format!("the end must be greater than slice_begin = {b}"),
                ));
            }
        }
        Ok(Self { kind: TransformKind::Slice { begin, end } })
    }

    /// Modulo: `l = u mod modulus` over an upper length. Moves work (the reference's do not).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::modulo(4i64, 12).unwrap();
    /// assert_eq!(t.lower_index(&[11]).unwrap(), vec![3]);
    /// let mut low = vec![3];
    /// let d = t.update_lower_index(&[1], &mut low, &[0]).unwrap();  // u went 11 -> 0 (a step of 1 wrapped)
    /// assert_eq!((low, d), (vec![0], vec![-3]));
    /// ```
    pub fn modulo(modulus: I, up_length: I) -> Result<Self> {
        let ctx = "modulo transform";
        known_ge(ctx, "modulus", &modulus, 1, "the modulus must be >= 1")?;
        known_ge(ctx, "up_length", &up_length, 1, "lengths must be >= 1")?;
        Ok(Self { kind: TransformKind::Modulo { modulus, up_length } })
    }

    /// XOR swizzle on two dims: `l₀ = u₀`, `l₁ = u₁ ⊕ (u₀ mod L₁)`. Vector lengths pass through
    /// both dims: XOR at a granularity that keeps vectors contiguous.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::xor(4i64, 8).unwrap();
    /// assert_eq!(t.lower_index(&[3, 5]).unwrap(), vec![3, 6]);
    /// ```
    pub fn xor(len0: I, len1: I) -> Result<Self> {
        let ctx = "xor transform";
        known_ge(ctx, "up_lengths[0]", &len0, 1, "lengths must be >= 1")?;
        known_ge(ctx, "up_lengths[1]", &len1, 1, "lengths must be >= 1")?;
        Ok(Self { kind: TransformKind::Xor { lengths: [len0, len1] } })
    }

    /// Offset: `l = u + offset` over `length`.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::offset(10i64, 5).unwrap();
    /// assert_eq!(t.lower_index(&[3]).unwrap(), vec![8]);
    /// ```
    pub fn offset(length: I, offset: I) -> Result<Self> {
        let ctx = "offset transform";
        known_ge(ctx, "length", &length, 1, "lengths must be >= 1")?;
        if let (Some(l), Some(o)) = (length.to_const(), offset.to_const()) {
            if o.checked_add(l - 1).is_none() {
                return Err(LayoutError::overflow(
                    ctx,
                    "the lower index range offset + length − 1",
                    format!("length {l}, offset {o}"),
                ));
            }
        }
        Ok(Self { kind: TransformKind::Offset { length, offset } })
    }

    /// Indexing (gather): `l = table[u]`, upper length = table length. An upper index outside
    /// the table maps to 0.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::<i64>::indexing(vec![7, 3, 9]).unwrap();
    /// assert_eq!(t.lower_index(&[2]).unwrap(), vec![9]);
    /// assert_eq!(t.upper_lengths(), vec![3]);
    /// ```
    pub fn indexing(table: Vec<i64>) -> Result<Self> {
        if table.is_empty() {
            return Err(LayoutError::count("indexing transform", "table", 0, "at least 1"));
        }
        if let Some((i, v)) = table.iter().enumerate().find(|(_, v)| **v < 0) {
            return Err(LayoutError::invalid(
                "indexing transform",
                format!("table[{i}]"),
                v,
                "lower indices must be >= 0",
            ));
        }
        Ok(Self { kind: TransformKind::Indexing { table } })
    }

    /// The parameters.
    ///
    /// ```
    /// use tilekit_layout::{Transform, transform::TransformKind};
    /// let t = Transform::pass_through(3i64).unwrap();
    /// assert!(matches!(t.kind(), TransformKind::PassThrough { length: 3 }));
    /// ```
    pub fn kind(&self) -> &TransformKind<I> {
        &self.kind
    }

    /// The reference's name of this transform (`"embed"`, `"merge_v2_magic_division"`, …).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert_eq!(Transform::merge(vec![2i64, 2]).unwrap().name(), "merge_v2_magic_division");
    /// ```
    pub fn name(&self) -> &'static str {
        match &self.kind {
            TransformKind::PassThrough { .. } => "pass_through",
            TransformKind::Pad { .. } => "pad",
            TransformKind::LeftPad { .. } => "left_pad",
            TransformKind::RightPad { .. } => "right_pad",
            TransformKind::Embed { .. } => "embed",
            TransformKind::Merge { variant: MergeVariant::MagicDivision, .. } => {
                "merge_v2_magic_division"
            }
            TransformKind::Merge { variant: MergeVariant::DivisionMod, .. } => {
                "merge_v3_division_mod"
            }
            TransformKind::Unmerge { .. } => "unmerge",
            TransformKind::Freeze { .. } => "freeze",
            TransformKind::Insert { .. } => "insert",
            TransformKind::Replicate { .. } => "replicate",
            TransformKind::Slice { .. } => "slice",
            TransformKind::Modulo { .. } => "modulo",
            TransformKind::Xor { .. } => "xor",
            TransformKind::Offset { .. } => "offset",
            TransformKind::Indexing { .. } => "indexing",
        }
    }

    /// Number of lower dimensions.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert_eq!(Transform::merge(vec![2i64, 3]).unwrap().num_lower(), 2);
    /// ```
    pub fn num_lower(&self) -> usize {
        match &self.kind {
            TransformKind::Merge { low_lengths, .. } => low_lengths.len(),
            TransformKind::Xor { .. } => 2,
            TransformKind::Insert { .. } | TransformKind::Replicate { .. } => 0,
            _ => 1,
        }
    }

    /// Number of upper dimensions.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert_eq!(Transform::unmerge(vec![2i64, 3]).unwrap().num_upper(), 2);
    /// ```
    pub fn num_upper(&self) -> usize {
        match &self.kind {
            TransformKind::Embed { up_lengths, .. }
            | TransformKind::Unmerge { up_lengths }
            | TransformKind::Replicate { up_lengths } => up_lengths.len(),
            TransformKind::Xor { .. } => 2,
            TransformKind::Freeze { .. } => 0,
            _ => 1,
        }
    }

    /// Lengths of the upper dimensions.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert_eq!(Transform::pad(4i64, 1, 2, false).unwrap().upper_lengths(), vec![7]);
    /// ```
    pub fn upper_lengths(&self) -> Vec<I> {
        use TransformKind as K;
        match &self.kind {
            K::PassThrough { length } | K::Insert { length } | K::Offset { length, .. } => {
                vec![length.clone()]
            }
            K::Pad { low_length, left, right, .. } => {
                vec![low_length.clone() + left.clone() + right.clone()]
            }
            K::LeftPad { low_length, left, .. } => vec![low_length.clone() + left.clone()],
            K::RightPad { low_length, right, .. } => vec![low_length.clone() + right.clone()],
            K::Embed { up_lengths, .. }
            | K::Unmerge { up_lengths }
            | K::Replicate { up_lengths } => up_lengths.clone(),
            K::Merge { low_lengths, .. } => vec![product(low_lengths)],
            K::Freeze { .. } => vec![],
            K::Slice { begin, end } => vec![end.clone() - begin.clone()],
            K::Modulo { up_length, .. } => vec![up_length.clone()],
            K::Xor { lengths } => lengths.to_vec(),
            K::Indexing { table } => vec![I::lit(table.len() as i64)],
        }
    }

    /// The lengths of the lower dimensions this transform declares, where its parameters fix
    /// them (pass-through, pads, merge, unmerge, xor); `None` for the others.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert_eq!(Transform::unmerge(vec![2i64, 3]).unwrap().declared_lower_lengths(), Some(vec![6]));
    /// assert_eq!(Transform::embed(vec![2i64], vec![4]).unwrap().declared_lower_lengths(), None);
    /// ```
    pub fn declared_lower_lengths(&self) -> Option<Vec<I>> {
        use TransformKind as K;
        match &self.kind {
            K::PassThrough { length } => Some(vec![length.clone()]),
            K::Pad { low_length, .. }
            | K::LeftPad { low_length, .. }
            | K::RightPad { low_length, .. } => Some(vec![low_length.clone()]),
            K::Merge { low_lengths, .. } => Some(low_lengths.clone()),
            K::Unmerge { up_lengths } => Some(vec![product(up_lengths)]),
            K::Xor { lengths } => Some(lengths.to_vec()),
            _ => None,
        }
    }

    fn context(&self) -> String {
        format!("{} transform", self.name())
    }

    fn check_upper(&self, field: &str, up: &[I]) -> Result<()> {
        expect_count(&self.context(), field, up.len(), self.num_upper(), "upper dimension")
    }

    fn check_lower(&self, field: &str, low: usize) -> Result<()> {
        expect_count(&self.context(), field, low, self.num_lower(), "lower dimension")
    }

    /// The lower index of an upper index; an error when `up` does not have one entry per upper
    /// dimension (`num_upper()`).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::merge(vec![2i64, 3, 4]).unwrap();
    /// assert_eq!(t.lower_index(&[17]).unwrap(), vec![1, 1, 1]);
    /// assert_eq!(
    ///     t.lower_index(&[1, 7]).unwrap_err().to_string(),
    ///     "merge_v2_magic_division transform: upper index has 2 entries, expected 1 (one per upper dimension)"
    /// );
    /// ```
    pub fn lower_index(&self, up: &[I]) -> Result<Vec<I>> {
        self.check_upper("upper index", up)?;
        let mut out = Vec::with_capacity(self.num_lower());
        self.lower_index_into(up, &mut out);
        Ok(out)
    }

    /// **Unchecked fast path** of [`lower_index`](Self::lower_index), into a caller's buffer
    /// (cleared first), so evaluation loops allocate once rather than once per stage. The caller
    /// guarantees `up.len() == num_upper()` (adaptors do: their stages are validated when
    /// built); a wrong rank is caught by a debug assertion only, and may panic or give a
    /// meaningless index in release builds.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::merge(vec![2i64, 3]).unwrap();
    /// let mut buf = vec![99];
    /// t.lower_index_into(&[5], &mut buf);
    /// assert_eq!(buf, vec![1, 2]);
    /// ```
    pub fn lower_index_into(&self, up: &[I], out: &mut Vec<I>) {
        use TransformKind as K;
        debug_assert_eq!(up.len(), self.num_upper(), "{}: upper index rank", self.name());
        out.clear();
        match &self.kind {
            K::PassThrough { .. } | K::RightPad { .. } => out.push(up[0].clone()),
            K::Pad { left, .. } | K::LeftPad { left, .. } => out.push(up[0].clone() - left.clone()),
            K::Embed { coefficients, .. } => {
                let mut acc = I::lit(0);
                for (u, c) in up.iter().zip(coefficients) {
                    acc = acc + u.clone() * c.clone();
                }
                out.push(acc);
            }
            K::Merge { low_lengths, .. } => {
                let n = low_lengths.len();
                out.resize(n, I::lit(0));
                let mut rest = up[0].clone();
                for i in (1..n).rev() {
                    out[i] = rest.clone() % low_lengths[i].clone();
                    rest = rest / low_lengths[i].clone();
                }
                out[0] = rest;
            }
            K::Unmerge { up_lengths } => {
                let mut acc = up[0].clone();
                for i in 1..up_lengths.len() {
                    acc = acc * up_lengths[i].clone() + up[i].clone();
                }
                out.push(acc);
            }
            K::Freeze { low_idx } => out.push(low_idx.clone()),
            K::Insert { .. } | K::Replicate { .. } => {}
            K::Slice { begin, .. } => out.push(up[0].clone() + begin.clone()),
            K::Modulo { modulus, .. } => out.push(up[0].clone() % modulus.clone()),
            K::Xor { lengths } => {
                out.push(up[0].clone());
                out.push(up[1].clone() ^ (up[0].clone() % lengths[1].clone()));
            }
            K::Offset { offset, .. } => out.push(up[0].clone() + offset.clone()),
            K::Indexing { table } => out.push(up[0].lookup(table)),
        }
    }

    /// Incremental update for coordinate moves: given the upper diff, the current lower index
    /// (updated in place) and the **already updated** upper index, returns the lower diff.
    ///
    /// Linear transforms apply the diff (`embed`, `unmerge`: the same formula on the diff; pads,
    /// slice, offset: `dl = du`); merge, xor, modulo and indexing recompute from `up_new`, so
    /// arbitrary jumps are exact.
    ///
    /// An error when `diff_up` or `up_new` does not have one entry per upper dimension or `low`
    /// one per lower dimension.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::embed(vec![4i64, 6], vec![6, 1]).unwrap();
    /// let mut low = vec![15];                       // at (2, 3)
    /// let d = t.update_lower_index(&[1, -2], &mut low, &[3, 1]).unwrap();
    /// assert_eq!((d, low), (vec![4], vec![19]));
    /// assert!(t.update_lower_index(&[1], &mut [15], &[3, 1]).is_err());
    /// ```
    pub fn update_lower_index(&self, diff_up: &[I], low: &mut [I], up_new: &[I]) -> Result<Vec<I>> {
        self.check_upper("upper diff", diff_up)?;
        self.check_upper("new upper index", up_new)?;
        self.check_lower("lower index", low.len())?;
        let mut diff = Vec::with_capacity(self.num_lower());
        self.update_lower_index_into(diff_up, low, up_new, &mut diff);
        Ok(diff)
    }

    /// **Unchecked fast path** of [`update_lower_index`](Self::update_lower_index), writing the
    /// lower diff into a caller's buffer (cleared first). The caller guarantees the ranks
    /// (`diff_up` and `up_new`: `num_upper()`, `low`: `num_lower()`); they are checked by debug
    /// assertions only.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::merge(vec![4i64, 6]).unwrap();
    /// let (mut low, mut diff) = (vec![0, 5], Vec::new());
    /// t.update_lower_index_into(&[1], &mut low, &[6], &mut diff);
    /// assert_eq!((low, diff), (vec![1, 0], vec![1, -5]));
    /// ```
    pub fn update_lower_index_into(
        &self,
        diff_up: &[I],
        low: &mut [I],
        up_new: &[I],
        diff: &mut Vec<I>,
    ) {
        use TransformKind as K;
        debug_assert_eq!(diff_up.len(), self.num_upper(), "{}: upper diff rank", self.name());
        debug_assert_eq!(up_new.len(), self.num_upper(), "{}: upper index rank", self.name());
        debug_assert_eq!(low.len(), self.num_lower(), "{}: lower index rank", self.name());
        match &self.kind {
            K::PassThrough { .. }
            | K::Pad { .. }
            | K::LeftPad { .. }
            | K::RightPad { .. }
            | K::Slice { .. }
            | K::Offset { .. } => {
                low[0] = low[0].clone() + diff_up[0].clone();
                diff.clear();
                diff.push(diff_up[0].clone());
            }
            K::Embed { .. } | K::Unmerge { .. } => {
                self.lower_index_into(diff_up, diff);
                low[0] = low[0].clone() + diff[0].clone();
            }
            K::Freeze { .. } => {
                diff.clear();
                diff.push(I::lit(0));
            }
            K::Insert { .. } | K::Replicate { .. } => diff.clear(),
            K::Merge { .. } | K::Xor { .. } | K::Modulo { .. } | K::Indexing { .. } => {
                self.lower_index_into(up_new, diff);
                for (d, l) in diff.iter_mut().zip(low.iter_mut()) {
                    let new = d.clone();
                    *d = new.clone() - l.clone();
                    *l = new;
                }
            }
        }
    }

    /// True when every upper index maps to a valid lower index (everything but pads, and pads
    /// built with `skip_is_valid_check`).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert!(Transform::pass_through(4i64).unwrap().is_always_valid());
    /// assert!(!Transform::right_pad(4i64, 4, false).unwrap().is_always_valid());
    /// assert!(Transform::right_pad(4i64, 4, true).unwrap().is_always_valid());
    /// ```
    pub fn is_always_valid(&self) -> bool {
        use TransformKind as K;
        match &self.kind {
            K::Pad { skip_is_valid_check, .. }
            | K::LeftPad { skip_is_valid_check, .. }
            | K::RightPad { skip_is_valid_check, .. } => *skip_is_valid_check,
            _ => true,
        }
    }

    /// Whether this upper index maps to a valid lower index (a domain boolean); an error when
    /// `up` does not have one entry per upper dimension.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::pad(4i64, 1, 2, false).unwrap();
    /// let v: Vec<bool> = (0..7).map(|u| t.is_valid(&[u]).unwrap()).collect();
    /// assert_eq!(v, [false, true, true, true, true, false, false]);
    /// assert!(t.is_valid(&[]).is_err());
    /// ```
    pub fn is_valid(&self, up: &[I]) -> Result<I::Bool> {
        self.check_upper("upper index", up)?;
        Ok(self.is_valid_unchecked(up))
    }

    /// **Unchecked fast path** of [`is_valid`](Self::is_valid): the caller guarantees
    /// `up.len() == num_upper()` (checked by a debug assertion only).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert!(!Transform::right_pad(4i64, 2, false).unwrap().is_valid_unchecked(&[4]));
    /// ```
    pub fn is_valid_unchecked(&self, up: &[I]) -> I::Bool {
        use TransformKind as K;
        debug_assert_eq!(up.len(), self.num_upper(), "{}: upper index rank", self.name());
        if self.is_always_valid() {
            return I::Bool::lit(true);
        }
        match &self.kind {
            K::Pad { low_length, left, .. } => {
                up[0].ge(left).and(&up[0].lt(&(low_length.clone() + left.clone())))
            }
            K::LeftPad { left, .. } => up[0].ge(left),
            K::RightPad { low_length, .. } => up[0].lt(low_length),
            _ => I::Bool::lit(true),
        }
    }

    /// Propagates guaranteed vector (length, stride) from the lower dims to the upper dims
    /// (`-1` = unknown), by the rule of the reference for each transform (SEMANTICS §2); an
    /// error when the lists do not have one entry per lower dimension.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// // a merge passes the last lower dim's vector info up unchanged
    /// let t = Transform::merge(vec![4i64, 6]).unwrap();
    /// assert_eq!(t.upper_vector_lengths_strides(&[-1, 4], &[-1, 1]).unwrap(), (vec![4], vec![1]));
    /// // a two-sided pad kills it
    /// let p = Transform::pad(6i64, 1, 1, false).unwrap();
    /// assert_eq!(p.upper_vector_lengths_strides(&[2], &[1]).unwrap(), (vec![-1], vec![-1]));
    /// assert!(p.upper_vector_lengths_strides(&[], &[]).is_err());
    /// ```
    pub fn upper_vector_lengths_strides(
        &self,
        low_lengths: &[i64],
        low_strides: &[i64],
    ) -> Result<(Vec<i64>, Vec<i64>)> {
        self.check_lower("lower vector lengths", low_lengths.len())?;
        self.check_lower("lower vector strides", low_strides.len())?;
        Ok(self.upper_vector_lengths_strides_unchecked(low_lengths, low_strides))
    }

    /// **Unchecked fast path** of
    /// [`upper_vector_lengths_strides`](Self::upper_vector_lengths_strides): the caller
    /// guarantees one entry per lower dimension in both lists (debug assertion only).
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::unmerge(vec![2i64, 8]).unwrap();
    /// assert_eq!(t.upper_vector_lengths_strides_unchecked(&[4], &[1]), (vec![-1, 4], vec![-1, 1]));
    /// ```
    pub fn upper_vector_lengths_strides_unchecked(
        &self,
        low_lengths: &[i64],
        low_strides: &[i64],
    ) -> (Vec<i64>, Vec<i64>) {
        use TransformKind as K;
        debug_assert_eq!(low_lengths.len(), self.num_lower(), "{}: lower rank", self.name());
        debug_assert_eq!(low_strides.len(), self.num_lower(), "{}: lower rank", self.name());
        let n = self.num_upper();
        let unknown = (vec![-1; n], vec![-1; n]);
        match &self.kind {
            K::PassThrough { .. } | K::LeftPad { .. } | K::RightPad { .. } | K::Xor { .. } => {
                (low_lengths.to_vec(), low_strides.to_vec())
            }
            K::Merge { .. } => {
                (vec![*low_lengths.last().unwrap_or(&-1)], vec![*low_strides.last().unwrap_or(&-1)])
            }
            K::Unmerge { up_lengths } => {
                let (mut lens, mut strides) = unknown;
                let last_up = consts(&up_lengths[n - 1..]).map(|v| v[0]);
                lens[n - 1] = match (low_lengths[0], last_up) {
                    (l, Some(u)) if l != -1 => gcd(l, u),
                    _ => -1,
                };
                strides[n - 1] = low_strides[0];
                (lens, strides)
            }
            _ => unknown,
        }
    }

    /// A compact one-line description, e.g. `unmerge(2, 3, 4)`.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// assert_eq!(Transform::unmerge(vec![2i64, 3, 4]).unwrap().describe(), "unmerge(2, 3, 4)");
    /// assert_eq!(Transform::pad(4i64, 1, 2, false).unwrap().describe(), "pad(4, left 1, right 2)");
    /// ```
    pub fn describe(&self) -> String {
        use TransformKind as K;
        let list = |v: &[I]| v.iter().map(show).collect::<Vec<_>>().join(", ");
        let skip = |s: &bool| if *s { ", skip check" } else { "" };
        match &self.kind {
            K::PassThrough { length } => format!("pass_through({})", show(length)),
            K::Pad { low_length, left, right, skip_is_valid_check: s } => format!(
                "pad({}, left {}, right {}{})",
                show(low_length),
                show(left),
                show(right),
                skip(s)
            ),
            K::LeftPad { low_length, left, skip_is_valid_check: s } => {
                format!("left_pad({}, left {}{})", show(low_length), show(left), skip(s))
            }
            K::RightPad { low_length, right, skip_is_valid_check: s } => {
                format!("right_pad({}, right {}{})", show(low_length), show(right), skip(s))
            }
            K::Embed { up_lengths, coefficients } => {
                format!(
                    "embed(lengths [{}], coefficients [{}])",
                    list(up_lengths),
                    list(coefficients)
                )
            }
            K::Merge { low_lengths, .. } => format!("merge({})", list(low_lengths)),
            K::Unmerge { up_lengths } => format!("unmerge({})", list(up_lengths)),
            K::Freeze { low_idx } => format!("freeze({})", show(low_idx)),
            K::Insert { length } => format!("insert({})", show(length)),
            K::Replicate { up_lengths } => format!("replicate({})", list(up_lengths)),
            K::Slice { begin, end } => format!("slice({}..{})", show(begin), show(end)),
            K::Modulo { modulus, up_length } => {
                format!("modulo({} over {})", show(modulus), show(up_length))
            }
            K::Xor { lengths } => format!("xor({}, {})", show(&lengths[0]), show(&lengths[1])),
            K::Offset { length, offset } => format!("offset({}, +{})", show(length), show(offset)),
            K::Indexing { table } => format!("indexing({table:?})"),
        }
    }
}

fn show<I: Idx>(v: &I) -> String {
    match v.to_const() {
        Some(c) => c.to_string(),
        None => format!("{v:?}"),
    }
}

impl Transform<i64> {
    /// The same transform over another index domain (parameters become constants of `I`).
    /// This is how layouts built with concrete numbers generate code.
    ///
    /// ```
    /// use tilekit_layout::Transform;
    /// let t = Transform::unmerge(vec![2i64, 3]).unwrap();
    /// let same: Transform<i64> = t.lift();
    /// assert_eq!(same, t);
    /// ```
    pub fn lift<I: Idx>(&self) -> Transform<I> {
        use TransformKind as K;
        let l = |v: &i64| I::lit(*v);
        let ls = |v: &[i64]| v.iter().map(l).collect::<Vec<I>>();
        let kind = match &self.kind {
            K::PassThrough { length } => K::PassThrough { length: l(length) },
            K::Pad { low_length, left, right, skip_is_valid_check } => K::Pad {
                low_length: l(low_length),
                left: l(left),
                right: l(right),
                skip_is_valid_check: *skip_is_valid_check,
            },
            K::LeftPad { low_length, left, skip_is_valid_check } => K::LeftPad {
                low_length: l(low_length),
                left: l(left),
                skip_is_valid_check: *skip_is_valid_check,
            },
            K::RightPad { low_length, right, skip_is_valid_check } => K::RightPad {
                low_length: l(low_length),
                right: l(right),
                skip_is_valid_check: *skip_is_valid_check,
            },
            K::Embed { up_lengths, coefficients } => {
                K::Embed { up_lengths: ls(up_lengths), coefficients: ls(coefficients) }
            }
            K::Merge { low_lengths, variant } => {
                K::Merge { low_lengths: ls(low_lengths), variant: *variant }
            }
            K::Unmerge { up_lengths } => K::Unmerge { up_lengths: ls(up_lengths) },
            K::Freeze { low_idx } => K::Freeze { low_idx: l(low_idx) },
            K::Insert { length } => K::Insert { length: l(length) },
            K::Replicate { up_lengths } => K::Replicate { up_lengths: ls(up_lengths) },
            K::Slice { begin, end } => K::Slice { begin: l(begin), end: l(end) },
            K::Modulo { modulus, up_length } => {
                K::Modulo { modulus: l(modulus), up_length: l(up_length) }
            }
            K::Xor { lengths } => K::Xor { lengths: [l(&lengths[0]), l(&lengths[1])] },
            K::Offset { length, offset } => K::Offset { length: l(length), offset: l(offset) },
            K::Indexing { table } => K::Indexing { table: table.clone() },
        };
        Transform { kind }
    }
}
