//! The JSON structures shared by conformance files: transforms and adaptors as the reference
//! prints them (`{transform: {kind, …}, lower_hidden_ids, upper_hidden_ids}`), and their
//! conversion into tilekit-layout objects through the library's validating constructors.

use serde::Deserialize;
use tilekit_layout::adaptor::Stage;
use tilekit_layout::transform::MergeVariant;
use tilekit_layout::{LayoutError, TensorAdaptor, Transform};

/// One transform as the reference describes it. Every kind carries the `up_lengths` the
/// reference reports (except `freeze`, which has no upper dim); they are checked against the
/// transform tilekit builds.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind")]
#[allow(missing_docs)]
pub enum TransformJson {
    #[serde(rename = "pass_through")]
    PassThrough { up_lengths: Vec<i64> },
    #[serde(rename = "pad")]
    Pad {
        up_lengths: Vec<i64>,
        left_pad: i64,
        right_pad: i64,
        #[serde(default)]
        skip_is_valid_check: bool,
    },
    #[serde(rename = "left_pad")]
    LeftPad {
        up_lengths: Vec<i64>,
        left_pad: i64,
        #[serde(default)]
        low_length: Option<i64>,
        #[serde(default)]
        skip_is_valid_check: bool,
    },
    #[serde(rename = "right_pad")]
    RightPad {
        up_lengths: Vec<i64>,
        low_length: i64,
        right_pad: i64,
        #[serde(default)]
        skip_is_valid_check: bool,
    },
    #[serde(rename = "embed")]
    Embed { up_lengths: Vec<i64>, coefficients: Vec<i64> },
    #[serde(rename = "merge_v2_magic_division")]
    MergeV2 { low_lengths: Vec<i64>, up_lengths: Vec<i64> },
    #[serde(rename = "merge_v3_division_mod")]
    MergeV3 { low_lengths: Vec<i64>, up_lengths: Vec<i64> },
    #[serde(rename = "unmerge")]
    Unmerge {
        up_lengths: Vec<i64>,
        #[serde(default)]
        use_24bit: bool,
    },
    #[serde(rename = "freeze")]
    Freeze { low_idx: i64 },
    #[serde(rename = "insert")]
    Insert { up_lengths: Vec<i64> },
    #[serde(rename = "replicate")]
    Replicate { up_lengths: Vec<i64> },
    #[serde(rename = "slice")]
    Slice { up_lengths: Vec<i64>, slice_begin: i64, slice_end: i64 },
    #[serde(rename = "modulo")]
    Modulo { up_lengths: Vec<i64>, modulus: i64 },
    #[serde(rename = "xor")]
    Xor { up_lengths: Vec<i64> },
    #[serde(rename = "offset")]
    Offset { up_lengths: Vec<i64>, offset: i64 },
    #[serde(rename = "indexing")]
    Indexing { up_lengths: Vec<i64>, table: Vec<i64> },
}

fn one(ctx: &str, v: &[i64]) -> Result<i64, LayoutError> {
    match v {
        [x] => Ok(*x),
        _ => Err(LayoutError::count(ctx, "up_lengths", v.len(), "1")),
    }
}

impl TransformJson {
    /// The reference's upper lengths as written in the file.
    pub fn up_lengths(&self) -> Vec<i64> {
        use TransformJson as T;
        match self {
            T::Freeze { .. } => vec![],
            T::PassThrough { up_lengths }
            | T::Pad { up_lengths, .. }
            | T::LeftPad { up_lengths, .. }
            | T::RightPad { up_lengths, .. }
            | T::Embed { up_lengths, .. }
            | T::MergeV2 { up_lengths, .. }
            | T::MergeV3 { up_lengths, .. }
            | T::Unmerge { up_lengths, .. }
            | T::Insert { up_lengths }
            | T::Replicate { up_lengths }
            | T::Slice { up_lengths, .. }
            | T::Modulo { up_lengths, .. }
            | T::Xor { up_lengths }
            | T::Offset { up_lengths, .. }
            | T::Indexing { up_lengths, .. } => up_lengths.clone(),
        }
    }

    /// Builds the transform with the library's constructor for that kind.
    pub fn to_transform(&self) -> Result<Transform<i64>, LayoutError> {
        use TransformJson as T;
        match self {
            T::PassThrough { up_lengths } => {
                Transform::pass_through(one("pass_through", up_lengths)?)
            }
            T::Pad { up_lengths, left_pad, right_pad, skip_is_valid_check } => {
                let up = one("pad", up_lengths)?;
                Transform::pad(
                    up - left_pad - right_pad,
                    *left_pad,
                    *right_pad,
                    *skip_is_valid_check,
                )
            }
            T::LeftPad { up_lengths, left_pad, low_length, skip_is_valid_check } => {
                let up = one("left_pad", up_lengths)?;
                Transform::left_pad(
                    low_length.unwrap_or(up - left_pad),
                    *left_pad,
                    *skip_is_valid_check,
                )
            }
            T::RightPad { low_length, right_pad, skip_is_valid_check, .. } => {
                Transform::right_pad(*low_length, *right_pad, *skip_is_valid_check)
            }
            T::Embed { up_lengths, coefficients } => {
                Transform::embed(up_lengths.clone(), coefficients.clone())
            }
            T::MergeV2 { low_lengths, .. } => {
                Transform::merge_variant(low_lengths.clone(), MergeVariant::MagicDivision)
            }
            T::MergeV3 { low_lengths, .. } => {
                Transform::merge_variant(low_lengths.clone(), MergeVariant::DivisionMod)
            }
            T::Unmerge { up_lengths, use_24bit } => {
                if *use_24bit {
                    return Err(LayoutError::invalid(
                        "unmerge transform",
                        "use_24bit",
                        true,
                        "tilekit computes indices in full width; only use_24bit = false is supported",
                    ));
                }
                Transform::unmerge(up_lengths.clone())
            }
            T::Freeze { low_idx } => Transform::freeze(*low_idx),
            T::Insert { up_lengths } => Transform::insert(one("insert", up_lengths)?),
            T::Replicate { up_lengths } => Transform::replicate(up_lengths.clone()),
            T::Slice { slice_begin, slice_end, .. } => Transform::slice(*slice_begin, *slice_end),
            T::Modulo { up_lengths, modulus } => {
                Transform::modulo(*modulus, one("modulo", up_lengths)?)
            }
            T::Xor { up_lengths } => match up_lengths.as_slice() {
                [a, b] => Transform::xor(*a, *b),
                _ => Err(LayoutError::count("xor transform", "up_lengths", up_lengths.len(), "2")),
            },
            T::Offset { up_lengths, offset } => {
                Transform::offset(one("offset", up_lengths)?, *offset)
            }
            T::Indexing { table, .. } => Transform::indexing(table.clone()),
        }
    }
}

/// One stage of an adaptor.
#[derive(Debug, Clone, Deserialize)]
pub struct StageJson {
    /// The transform.
    pub transform: TransformJson,
    /// Hidden ids of its lower dims.
    pub lower_hidden_ids: Vec<usize>,
    /// Hidden ids of its upper dims.
    pub upper_hidden_ids: Vec<usize>,
}

/// An adaptor (or a descriptor's adaptor) as the reference describes it.
#[derive(Debug, Clone, Deserialize)]
pub struct AdaptorJson {
    /// Number of hidden dims.
    pub ndim_hidden: usize,
    /// Hidden ids of the bottom dims.
    pub bottom_hidden_ids: Vec<usize>,
    /// Hidden ids of the top dims.
    pub top_hidden_ids: Vec<usize>,
    /// Stages in reference order (bottom to top).
    pub transforms: Vec<StageJson>,
}

impl AdaptorJson {
    /// Builds the adaptor, and returns alongside it, per stage whose upper lengths differ from
    /// the file's, a description of the difference (an empty list when all agree).
    pub fn to_adaptor(&self) -> Result<(TensorAdaptor<i64>, Vec<String>), LayoutError> {
        let mut stages = Vec::with_capacity(self.transforms.len());
        let mut mismatches = Vec::new();
        for (k, s) in self.transforms.iter().enumerate() {
            let t = s.transform.to_transform()?;
            if t.upper_lengths() != s.transform.up_lengths() {
                mismatches.push(format!(
                    "transforms[{k}] ({}): upper lengths {:?}, the file says {:?}",
                    t.name(),
                    t.upper_lengths(),
                    s.transform.up_lengths()
                ));
            }
            stages.push(Stage::new(t, s.lower_hidden_ids.clone(), s.upper_hidden_ids.clone())?);
        }
        let a = TensorAdaptor::new(
            stages,
            self.bottom_hidden_ids.clone(),
            self.top_hidden_ids.clone(),
            self.ndim_hidden,
        )?;
        Ok((a, mismatches))
    }
}

/// Row-major enumeration of every multi-index of `lengths` (last fastest).
pub fn row_major(lengths: &[i64]) -> Vec<Vec<i64>> {
    let total: i64 = lengths.iter().product();
    let mut out = Vec::with_capacity(total.max(0) as usize);
    for mut k in 0..total {
        let mut idx = vec![0; lengths.len()];
        for d in (0..lengths.len()).rev() {
            idx[d] = k % lengths[d];
            k /= lengths[d];
        }
        out.push(idx);
    }
    out
}
