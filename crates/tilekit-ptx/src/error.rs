//! Errors of the PTX backend.

/// Why a kernel could not be printed as PTX.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxError {
    /// The IR uses something this backend cannot express.
    #[error("kernel {kernel}: {what} cannot be emitted as PTX: {why}")]
    Unsupported {
        /// The kernel.
        kernel: String,
        /// The construct.
        what: String,
        /// Why, and what would work.
        why: String,
    },
    /// A target name that is not one of sm_80, sm_90, sm_90a.
    #[error("unknown PTX target {name:?}: tilekit emits sm_80, sm_90 and sm_90a")]
    UnknownTarget {
        /// The name given.
        name: String,
    },
}

/// Result alias of the PTX backend.
pub type Result<T, E = PtxError> = std::result::Result<T, E>;
