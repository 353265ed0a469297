//! Typed errors of the tile layer.
//!
//! A message names the object or analysis, the offending field, its value and what would be
//! valid, in the style of [`tilekit_layout::LayoutError`]:
//!
//! ```
//! use tilekit_tile::encoding::{EncodingSpec, TileDistributionEncoding};
//! let err = TileDistributionEncoding::new(EncodingSpec {
//!     rs_lengths: vec![2], hs_lengthss: vec![vec![4], vec![4]],
//!     ps_to_rhss_major: vec![vec![1]], ps_to_rhss_minor: vec![vec![0]],
//!     ys_to_rhs_major: vec![0, 2], ys_to_rhs_minor: vec![0, 0],
//! }).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "tile distribution encoding: ys_to_rhs_major[0] = 0 is invalid: a Y cannot map to an R \
//!      (replication) component: Ys hold X data, so majors of Ys are 1..=NDimX"
//! );
//! ```

/// Why a tile-layer object could not be built or analysed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TileError {
    /// A parameter has a value outside its valid range.
    #[error("{context}: {field} = {value} is invalid: {rule}")]
    InvalidParameter {
        /// The object or analysis, e.g. `"warp access"`.
        context: String,
        /// The offending field, e.g. `"lane 3 address"`.
        field: String,
        /// The offending value as written by the user.
        value: String,
        /// What would be valid.
        rule: String,
    },
    /// A tile distribution encoding breaks one of the rules of a well-formed encoding.
    #[error("tile distribution encoding: {field} = {value} is invalid: {message}")]
    Encoding {
        /// Which rule is broken.
        rule: EncodingRule,
        /// The offending field, e.g. `"ys_to_rhs_major[1]"`.
        field: String,
        /// The offending value.
        value: String,
        /// The rule in words, with what would be valid.
        message: String,
    },
    /// A layout object could not be built.
    #[error(transparent)]
    Layout(#[from] tilekit_layout::LayoutError),
}

/// The rules a well-formed tile distribution encoding obeys (the reference checks none of
/// them; SEMANTICS §8.4 lists what it silently does instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncodingRule {
    /// There must be at least one X, one P and one Y, and no empty H or P list.
    NotEmpty,
    /// Lengths are at least 1.
    PositiveLength,
    /// Each X length, the tile's element count and the number of (element, replica) pairs
    /// `Π R · Π X` fit in `i64` (every P length, Y length, the thread count and the thread
    /// buffer size are products of some of these, so they fit too).
    FitsInI64,
    /// Paired lists (majors and minors) have equal lengths.
    PairedLists,
    /// An RH major is 0 (R) or 1..=NDimX (the H list of X major−1).
    MajorInRange,
    /// An RH minor indexes into its major's list.
    MinorInRange,
    /// A Y never maps to an R component.
    NoYOnR,
    /// Every H component is used by exactly one P list or one Y.
    HUsedOnce,
    /// An R component is used by at most one P list, once.
    RUsedAtMostOnce,
}

impl TileError {
    /// Shorthand for [`TileError::InvalidParameter`].
    ///
    /// ```
    /// use tilekit_tile::TileError;
    /// let e = TileError::invalid("bank model", "access_bytes", 2, "the model covers 4, 8 and 16 bytes");
    /// assert_eq!(e.to_string(), "bank model: access_bytes = 2 is invalid: the model covers 4, 8 and 16 bytes");
    /// ```
    pub fn invalid(
        context: impl Into<String>,
        field: impl Into<String>,
        value: impl std::fmt::Debug,
        rule: impl Into<String>,
    ) -> Self {
        TileError::InvalidParameter {
            context: context.into(),
            field: field.into(),
            value: format!("{value:?}"),
            rule: rule.into(),
        }
    }
}

/// Result alias of the tile layer.
pub type Result<T, E = TileError> = std::result::Result<T, E>;
