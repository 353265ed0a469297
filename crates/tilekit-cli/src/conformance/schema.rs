//! The JSON structures shared by conformance files: transforms and adaptors as the reference
//! prints them (`{transform: {kind, …}, lower_hidden_ids, upper_hidden_ids}`), and their
//! conversion into tilekit-layout objects through the library's validating constructors.

use std::path::Path;

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
                // saturating: a low length past i64 is refused by the constructor's checks
                Transform::pad(
                    up.saturating_sub(*left_pad).saturating_sub(*right_pad),
                    *left_pad,
                    *right_pad,
                    *skip_is_valid_check,
                )
            }
            T::LeftPad { up_lengths, left_pad, low_length, skip_is_valid_check } => {
                let up = one("left_pad", up_lengths)?;
                Transform::left_pad(
                    low_length.unwrap_or(up.saturating_sub(*left_pad)),
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

/// Most elements, indices or accesses a checker enumerates (or allocates data for) for one
/// entry of a vector file: 2^24. The reference's vectors describe small tiles; an entry whose
/// lengths describe more is refused with a [`SizeError`] before anything is allocated.
pub const MAX_ENUMERATED: i64 = 1 << 24;

/// An entry of a vector file whose sizes the checkers refuse to enumerate or allocate for:
/// names the file, the entry, the field and its value.
///
/// ```
/// use std::path::Path;
/// use tilekit_cli::conformance::schema::checked_count;
/// let e = checked_count(Path::new("descriptors.json"), "big", "top_lengths", &[3_000_000_000, 2]).unwrap_err();
/// assert_eq!(e.to_string(), "descriptors.json: entry \"big\": top_lengths = [3000000000, 2] is invalid: \
///     it describes 6000000000 indices; the checker enumerates at most 16777216 per entry");
/// assert_eq!(checked_count(Path::new("f.json"), "ok", "x", &[4, 6]).unwrap(), 24);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: entry {entry:?}: {field} = {value} is invalid: {rule}")]
pub struct SizeError {
    /// The vector file.
    pub file: String,
    /// The entry's name.
    pub entry: String,
    /// The offending field.
    pub field: String,
    /// Its value, as in the file.
    pub value: String,
    /// Why it is refused.
    pub rule: String,
}

/// The number of indices of `lengths` (their product), refused with a [`SizeError`] when a
/// length is negative, the product overflows `i64` or it exceeds [`MAX_ENUMERATED`].
pub fn checked_count(
    file: &Path,
    entry: &str,
    field: &str,
    lengths: &[i64],
) -> Result<i64, SizeError> {
    let err = |rule: String| SizeError {
        file: file.display().to_string(),
        entry: entry.to_string(),
        field: field.to_string(),
        value: format!("{lengths:?}"),
        rule,
    };
    if let Some(l) = lengths.iter().find(|&&l| l < 0) {
        return Err(err(format!("a length of {l} is negative")));
    }
    match tilekit_layout::idx::checked_product(lengths) {
        None => Err(err("the number of indices it describes overflows i64".into())),
        Some(n) if n > MAX_ENUMERATED => Err(err(format!(
            "it describes {n} indices; the checker enumerates at most {MAX_ENUMERATED} per entry"
        ))),
        Some(n) => Ok(n),
    }
}

/// The `k`-th multi-index of `lengths` in row-major order (last fastest).
pub fn row_major_index(mut k: i64, lengths: &[i64]) -> Vec<i64> {
    let mut idx = vec![0; lengths.len()];
    for d in (0..lengths.len()).rev() {
        if lengths[d] > 0 {
            idx[d] = k % lengths[d];
            k /= lengths[d];
        }
    }
    idx
}

/// Row-major enumeration of every multi-index of `lengths` (last fastest), lazily: nothing is
/// allocated for indices not yet visited. Lengths of 0 (or below) give no index.
pub fn row_major(lengths: &[i64]) -> impl Iterator<Item = Vec<i64>> + '_ {
    let total = tilekit_layout::idx::checked_product(lengths).unwrap_or(i64::MAX).max(0);
    let total = if lengths.iter().any(|&l| l <= 0) { 0 } else { total };
    (0..total).map(move |k| row_major_index(k, lengths))
}

/// Checks that `listed` (indices from a file) enumerates every index of `lengths` in row-major
/// order: one check, failed with the first difference. Compares counts first, so lengths that
/// describe billions of indices cost nothing.
pub fn check_row_major<'a>(
    t: &mut super::Tally,
    item: &str,
    what: &str,
    lengths: &[i64],
    listed: impl ExactSizeIterator<Item = &'a [i64]>,
) {
    let want =
        tilekit_layout::idx::checked_product(lengths).filter(|_| lengths.iter().all(|&l| l >= 0));
    if want != i64::try_from(listed.len()).ok() {
        let want = want.map_or_else(|| "more than i64".to_string(), |n| n.to_string());
        return t.fail(
            item,
            format!(
                "{what}: the file lists {} indices, the lengths {lengths:?} have {want}",
                listed.len()
            ),
        );
    }
    for (k, got) in listed.enumerate() {
        let expected = row_major_index(k as i64, lengths);
        if got != expected.as_slice() {
            return t.fail(
                item,
                format!("{what}: index #{k} is {got:?}, row-major order gives {expected:?}"),
            );
        }
    }
    t.check(item, what, true);
}

/// Whether `idx` lies inside `lengths` (`0 ≤ idxᵢ < lengthᵢ`, same rank).
pub fn inside(idx: &[i64], lengths: &[i64]) -> bool {
    idx.len() == lengths.len() && idx.iter().zip(lengths).all(|(&i, &l)| 0 <= i && i < l)
}
