//! Errors of the kernel library: misuse found while building a kernel, and failures while running
//! or checking one.

use tilekit_ir::ScalarType;

/// Why a kernel could not be built, run or checked.
///
/// ```
/// use tilekit_ops::OpsError;
/// let e = OpsError::invalid("transpose", "shape", "[0, 3]", "every length must be >= 1");
/// assert_eq!(e.to_string(), "transpose: shape = [0, 3] is invalid: every length must be >= 1");
/// ```
#[derive(Debug, Clone, thiserror::Error)]
pub enum OpsError {
    /// The IR builder refused an operation.
    #[error(transparent)]
    Ir(#[from] tilekit_ir::IrError),
    /// A tile-layer object could not be built.
    #[error(transparent)]
    Tile(#[from] tilekit_tile::TileError),
    /// A layout object could not be built.
    #[error(transparent)]
    Layout(#[from] tilekit_layout::LayoutError),
    /// The interpreter reported an error while running a kernel.
    #[error("interpreter: {0}")]
    Interp(String),
    /// A value given to a kernel builder or runner is outside what it supports.
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
    #[error("{context}: element type {got} does not match {expected}")]
    DtypeMismatch {
        /// Where.
        context: String,
        /// The type given.
        got: ScalarType,
        /// The type required.
        expected: ScalarType,
    },
    /// An error of the kernel-author layer that has no counterpart here (a window larger than
    /// its view, …); the shared kinds (IR, tile, layout, invalid values, element types) convert
    /// to this enum's own variants.
    ///
    /// ```
    /// use tilekit_kernel::KernelError;
    /// use tilekit_ops::OpsError;
    /// let e = OpsError::from(KernelError::WindowExceedsView { dim: 0, window: 8, view: 4 });
    /// assert!(matches!(e, OpsError::Kernel(KernelError::WindowExceedsView { dim: 0, .. })));
    /// assert!(matches!(OpsError::from(KernelError::invalid("a", "b", 1, "c")), OpsError::Invalid { .. }));
    /// ```
    #[error(transparent)]
    Kernel(tilekit_kernel::KernelError),
    /// A run would need more host memory than the limit (checked before allocating).
    #[error(
        "{context}: the run needs {} of host memory ({parts}), over the limit of {} ({limit_from}); \
         set {} to a byte count (e.g. 32G) to change the limit",
        crate::host::human_bytes(*needed),
        crate::host::human_bytes(*limit),
        crate::host::MEMORY_LIMIT_ENV
    )]
    HostMemory {
        /// The kernel (and shape).
        context: String,
        /// Bytes needed.
        needed: u64,
        /// What the bytes are, e.g. "x 8.0 GiB, y 8.0 GiB".
        parts: String,
        /// The limit in bytes.
        limit: u64,
        /// Where the limit comes from.
        limit_from: String,
    },
    /// An argument does not meet what the kernel assumes of its parameter (dtype, rank,
    /// vector alignment, index range), or a parameter is unknown or unbound.
    ///
    /// ```
    /// let e = tilekit_ops::OpsError::Bind { kernel: "copy".into(), param: "x".into(), value: "i32".into(), rule: "the kernel was built for f32 elements".into() };
    /// assert_eq!(e.to_string(), "copy: argument `x` = i32 does not fit: the kernel was built for f32 elements");
    /// ```
    #[error("{kernel}: argument `{param}` = {value} does not fit: {rule}")]
    Bind {
        /// Kernel name.
        kernel: String,
        /// Parameter name.
        param: String,
        /// What was given.
        value: String,
        /// What the kernel needs.
        rule: String,
    },
    /// An output shares memory with itself, another output or an input in a way the op does
    /// not allow ([`crate::overlap::check`]): running it would give wrong numbers silently.
    ///
    /// ```
    /// let e = tilekit_ops::OpsError::Overlap { op: "add".into(), detail: "output `out` ...".into() };
    /// assert_eq!(e.to_string(), "add: output `out` ...");
    /// ```
    #[error("{op}: {detail}")]
    Overlap {
        /// The op.
        op: String,
        /// Which tensors, their layouts, and what would be valid.
        detail: String,
    },
    /// A tensor's layout or data is inconsistent (see [`tilekit_ir::tensor::TensorError`]).
    #[error(transparent)]
    Tensor(#[from] tilekit_ir::tensor::TensorError),
    /// The GPU backend was asked for but there is no usable GPU.
    #[error("the GPU backend is not available: {0}")]
    GpuUnavailable(String),
    /// A GPU operation failed.
    #[error("GPU: {0}")]
    Gpu(String),
}

impl OpsError {
    /// An [`OpsError::Invalid`] from displayable parts.
    ///
    /// ```
    /// let e = tilekit_ops::OpsError::invalid("gemm", "m", 17, "must be a multiple of 64");
    /// assert!(e.to_string().contains("m = 17"));
    /// ```
    pub fn invalid(
        context: impl Into<String>,
        field: impl Into<String>,
        value: impl std::fmt::Display,
        rule: impl Into<String>,
    ) -> OpsError {
        OpsError::Invalid {
            context: context.into(),
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

impl From<tilekit_ir::interp::InterpError> for OpsError {
    fn from(e: tilekit_ir::interp::InterpError) -> Self {
        OpsError::Interp(e.to_string())
    }
}

impl From<tilekit_kernel::KernelError> for OpsError {
    fn from(e: tilekit_kernel::KernelError) -> Self {
        use tilekit_kernel::KernelError as K;
        match e {
            K::Ir(e) => OpsError::Ir(e),
            K::Tile(e) => OpsError::Tile(e),
            K::Layout(e) => OpsError::Layout(e),
            K::Invalid { context, field, value, rule } => {
                OpsError::Invalid { context, field, value, rule }
            }
            K::DtypeMismatch { context, got, expected } => {
                OpsError::DtypeMismatch { context, got, expected }
            }
            K::Other(inner) => match inner.downcast_ref::<OpsError>() {
                Some(e) => e.clone(),
                None => OpsError::Kernel(K::Other(inner)),
            },
            other => OpsError::Kernel(other),
        }
    }
}

/// An error of this crate returned from a closure of the kernel layer (a loop body of
/// [`tilekit_kernel::for_range`], a [`tilekit_kernel::DTile::map`]): carried through the
/// layer unchanged and recovered by `From<KernelError> for OpsError`.
///
/// ```
/// use tilekit_kernel::KernelError;
/// use tilekit_ops::OpsError;
/// let e = OpsError::GpuUnavailable("no driver".into());
/// let back = OpsError::from(KernelError::from(e));
/// assert!(matches!(back, OpsError::GpuUnavailable(m) if m == "no driver"));
/// ```
impl From<OpsError> for tilekit_kernel::KernelError {
    fn from(e: OpsError) -> Self {
        match e {
            OpsError::Kernel(k) => k,
            OpsError::Ir(e) => tilekit_kernel::KernelError::Ir(e),
            other => tilekit_kernel::KernelError::other(other),
        }
    }
}

/// Results of this crate.
pub type Result<T, E = OpsError> = std::result::Result<T, E>;
