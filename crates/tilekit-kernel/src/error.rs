//! Errors of the kernel-author layer: misuse found while building a kernel (a window that does
//! not fit its view, a tile stored to memory of another element type, …), the builder's and
//! the layout algebra's own errors, and errors of the author's closures passed through loops
//! and maps.

use std::sync::Arc;

use tilekit_ir::ScalarType;

/// Why a kernel could not be built with this layer.
///
/// ```
/// use tilekit_kernel::KernelError;
/// let e = KernelError::invalid("tile window", "lengths", "[4, 8]", "must be the distribution's X lengths [4, 16]");
/// assert_eq!(e.to_string(), "tile window: lengths = [4, 8] is invalid: must be the distribution's X lengths [4, 16]");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
pub enum KernelError {
    /// The IR builder refused an operation.
    #[error(transparent)]
    Ir(#[from] tilekit_ir::IrError),
    /// A tile-layer object (an encoding, a distribution, load/store traits) could not be built.
    #[error(transparent)]
    Tile(#[from] tilekit_tile::TileError),
    /// A layout object (a transform, a descriptor) could not be built.
    #[error(transparent)]
    Layout(#[from] tilekit_layout::LayoutError),
    /// A value given to this layer is outside what it supports.
    #[error("{context}: {field} = {value} is invalid: {rule}")]
    Invalid {
        /// Where.
        context: String,
        /// Which value.
        field: String,
        /// The value given.
        value: String,
        /// What would be valid.
        rule: String,
    },
    /// Two things that must agree in element type do not.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let e = tilekit_kernel::KernelError::DtypeMismatch { context: "window store".into(), got: ScalarType::F32, expected: ScalarType::F16 };
    /// assert_eq!(e.to_string(), "window store: element type f32 does not match f16");
    /// ```
    #[error("{context}: element type {got} does not match {expected}")]
    DtypeMismatch {
        /// Where.
        context: String,
        /// The type given.
        got: ScalarType,
        /// The type required.
        expected: ScalarType,
    },
    /// A tile window reaches past a view that has no padding along that dimension.
    ///
    /// ```
    /// let e = tilekit_kernel::KernelError::WindowExceedsView { dim: 1, window: 16, view: 8 };
    /// assert!(e.to_string().contains("length 16 along dim 1 exceeds the view's length 8"));
    /// ```
    #[error(
        "tile window: length {window} along dim {dim} exceeds the view's length {view}; pad the \
         view (View::pad) or make the window at most {view} long"
    )]
    WindowExceedsView {
        /// The dimension.
        dim: usize,
        /// The window length.
        window: i64,
        /// The view length.
        view: i64,
    },
    /// An error of another layer, returned by the author's closure inside
    /// [`for_range`](crate::for_range) or [`DTile::map`](crate::DTile::map) and carried back
    /// unchanged (a library built on this layer can recover its own error type by downcasting).
    ///
    /// ```
    /// use tilekit_kernel::KernelError;
    /// let e = KernelError::other(std::fmt::Error);
    /// assert!(matches!(&e, KernelError::Other(inner) if inner.downcast_ref::<std::fmt::Error>().is_some()));
    /// ```
    #[error(transparent)]
    Other(Arc<dyn std::error::Error + Send + Sync + 'static>),
}

impl KernelError {
    /// A [`KernelError::Invalid`] from displayable parts.
    ///
    /// ```
    /// let e = tilekit_kernel::KernelError::invalid("pad view", "tile", "[0]", "one length >= 1 per view dim (1)");
    /// assert!(e.to_string().contains("tile = [0]"));
    /// ```
    pub fn invalid(
        context: impl Into<String>,
        field: impl Into<String>,
        value: impl std::fmt::Display,
        rule: impl Into<String>,
    ) -> KernelError {
        KernelError::Invalid {
            context: context.into(),
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }

    /// A [`KernelError::Other`] wrapping an error of another layer.
    ///
    /// ```
    /// let e = tilekit_kernel::KernelError::other(std::fmt::Error);
    /// assert_eq!(e.to_string(), std::fmt::Error.to_string());
    /// ```
    pub fn other(e: impl std::error::Error + Send + Sync + 'static) -> KernelError {
        KernelError::Other(Arc::new(e))
    }
}

/// Results of this crate.
pub type Result<T, E = KernelError> = std::result::Result<T, E>;
