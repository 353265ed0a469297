//! Typed errors of the layout layer.
//!
//! Every constructor of tilekit-layout validates its input and returns `Result<_, LayoutError>`.
//! A message names the object being built, the offending field, its value and what would be valid:
//!
//! ```
//! use tilekit_layout::Transform;
//! let err = Transform::<i64>::pad(4, -1, 2, false).unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "pad transform: left_pad = -1 is invalid: pads must be >= 0"
//! );
//! ```

/// Why a layout object could not be built or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A parameter has a value outside its valid range.
    #[error("{context}: {field} = {value} is invalid: {rule}")]
    InvalidParameter {
        /// The object being built, e.g. `"pad transform"`.
        context: String,
        /// The offending field, e.g. `"left_pad"`.
        field: String,
        /// The offending value as written by the user.
        value: String,
        /// What would be valid.
        rule: String,
    },
    /// A list has the wrong number of entries.
    #[error("{context}: {field} has {got} entries, expected {expected}")]
    CountMismatch {
        /// The object being built.
        context: String,
        /// The offending field.
        field: String,
        /// How many entries it has.
        got: usize,
        /// What was expected, in words (e.g. `"2 (one per upper dimension)"`).
        expected: String,
    },
    /// A length product, element count, byte size or index range does not fit in `i64`.
    #[error("{context}: {quantity} overflows i64: {operands}")]
    Overflow {
        /// The object being built, e.g. `"naive tensor descriptor"`.
        context: String,
        /// What overflows, e.g. `"the element space size 1 + Σ (length − 1)·stride"`.
        quantity: String,
        /// The values it is computed from, as the user wrote them, e.g. `"lengths [..], strides [..]"`.
        operands: String,
    },
}

impl LayoutError {
    /// Shorthand for [`LayoutError::InvalidParameter`].
    ///
    /// ```
    /// use tilekit_layout::LayoutError;
    /// let e = LayoutError::invalid("merge transform", "low_lengths[1]", 0, "lengths must be >= 1");
    /// assert_eq!(e.to_string(), "merge transform: low_lengths[1] = 0 is invalid: lengths must be >= 1");
    /// ```
    pub fn invalid(
        context: impl Into<String>,
        field: impl Into<String>,
        value: impl std::fmt::Debug,
        rule: impl Into<String>,
    ) -> Self {
        LayoutError::InvalidParameter {
            context: context.into(),
            field: field.into(),
            value: format!("{value:?}"),
            rule: rule.into(),
        }
    }

    /// Shorthand for [`LayoutError::CountMismatch`].
    ///
    /// ```
    /// use tilekit_layout::LayoutError;
    /// let e = LayoutError::count("embed transform", "coefficients", 1, "2 (one per upper length)");
    /// assert_eq!(e.to_string(), "embed transform: coefficients has 1 entries, expected 2 (one per upper length)");
    /// ```
    pub fn count(
        context: impl Into<String>,
        field: impl Into<String>,
        got: usize,
        expected: impl Into<String>,
    ) -> Self {
        LayoutError::CountMismatch {
            context: context.into(),
            field: field.into(),
            got,
            expected: expected.into(),
        }
    }

    /// Shorthand for [`LayoutError::Overflow`].
    ///
    /// ```
    /// use tilekit_layout::LayoutError;
    /// let e = LayoutError::overflow("unmerge transform", "the element count Π up_lengths",
    ///     format!("up_lengths {:?}", [1i64 << 40, 1 << 40]));
    /// assert_eq!(e.to_string(), "unmerge transform: the element count Π up_lengths overflows i64: \
    ///     up_lengths [1099511627776, 1099511627776]");
    /// ```
    pub fn overflow(
        context: impl Into<String>,
        quantity: impl Into<String>,
        operands: impl Into<String>,
    ) -> Self {
        LayoutError::Overflow {
            context: context.into(),
            quantity: quantity.into(),
            operands: operands.into(),
        }
    }
}

/// `Ok` when a list has one entry per item of another (`got == want`), else a
/// [`LayoutError::CountMismatch`] saying `"{want} (one per {per})"`.
///
/// ```
/// use tilekit_layout::error::expect_count;
/// assert!(expect_count("embed transform", "coefficients", 2, 2, "upper length").is_ok());
/// let e = expect_count("embed transform", "coefficients", 1, 2, "upper length").unwrap_err();
/// assert_eq!(e.to_string(), "embed transform: coefficients has 1 entries, expected 2 (one per upper length)");
/// ```
pub fn expect_count(context: &str, field: &str, got: usize, want: usize, per: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        Err(LayoutError::count(context, field, got, format!("{want} (one per {per})")))
    }
}

/// Result alias of the layout layer.
pub type Result<T, E = LayoutError> = std::result::Result<T, E>;
