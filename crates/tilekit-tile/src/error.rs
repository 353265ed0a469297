//! Typed errors of the tile layer.
//!
//! A message names the object or analysis, the offending field, its value and what would be
//! valid, in the style of [`tilekit_layout::LayoutError`]:
//!
//! ```
//! use tilekit_tile::analysis::WarpAccess;
//! let err = WarpAccess::from_offsets(4, 3, |_| Some(0)).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "warp access: access_bytes = 12 is invalid: an access is 1, 2, 4, 8 or 16 bytes"
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
