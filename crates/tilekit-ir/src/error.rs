//! Typed build-time errors.
//!
//! Every misuse of the builder is an [`IrError`] whose message names the offending value or
//! parameter and says what would be valid:
//!
//! ```
//! use tilekit_ir::{KernelBuilder, ScalarType};
//! let b = KernelBuilder::new("k", [128, 1, 1]).unwrap();
//! let e = b.shared("huge", ScalarType::F32, 60_000).unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "shared memory \"huge\" (f32 × 60000 = 240000 bytes) brings the block to 240000 bytes, \
//!      over the limit of 232448 bytes (227 KiB, sm_90)"
//! );
//! ```
//!
//! Errors from operator overloads on [`crate::Val`] (which cannot return a `Result`, because
//! `tilekit_layout::Idx` fixes their signatures) are *sticky*: the first one is kept in the
//! kernel under construction and returned by [`crate::KernelBuilder::finish`].

use crate::types::ScalarType;

/// Why a kernel could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IrError {
    /// Operand types of an op do not agree.
    #[error("{op}: operand types differ: {left} and {right} (both operands must have one type)")]
    TypeMismatch {
        /// The op, e.g. `"add"`.
        op: String,
        /// Type of the first operand.
        left: ScalarType,
        /// Type of the second operand.
        right: ScalarType,
    },
    /// An op does not apply to a type.
    #[error("{op} does not apply to {ty}: valid types are {valid}")]
    WrongType {
        /// The op.
        op: String,
        /// The offending type.
        ty: ScalarType,
        /// What would be valid.
        valid: String,
    },
    /// A vector memory access of an invalid width.
    #[error("{op}: vector of {width} × {elem} is invalid: valid widths for {elem} are {valid:?} (powers of two, at most 16 bytes)")]
    VectorWidth {
        /// The op.
        op: String,
        /// Requested elements.
        width: usize,
        /// Element type.
        elem: ScalarType,
        /// Valid element counts.
        valid: Vec<usize>,
    },
    /// Too much shared memory.
    #[error("shared memory \"{name}\" ({elem} × {len} = {bytes} bytes) brings the block to {total} bytes, over the limit of {limit} bytes ({limit_desc})")]
    SharedMemoryLimit {
        /// The allocation's name.
        name: String,
        /// Its element type.
        elem: ScalarType,
        /// Its elements.
        len: usize,
        /// Its bytes.
        bytes: usize,
        /// The block's total with it.
        total: usize,
        /// The limit.
        limit: usize,
        /// The limit in words (`"227 KiB, sm_90"`).
        limit_desc: String,
    },
    /// Invalid block dimensions.
    #[error("block dims {dims:?} are invalid: each must be >= 1, z <= 64, and the product ({threads}) at most 1024")]
    BlockDims {
        /// The dims.
        dims: [u32; 3],
        /// Their product.
        threads: u64,
    },
    /// A value outside what an op accepts.
    #[error("{op}: {what} = {value} is invalid: {valid}")]
    Invalid {
        /// The op.
        op: String,
        /// What was given.
        what: String,
        /// Its value.
        value: String,
        /// What would be valid.
        valid: String,
    },
    /// A tensor map that disagrees with the layout of the shared tile it was derived from
    /// (see [`crate::tma::TensorMapSpec::check_layout`]).
    #[error("tensor map {map} disagrees with the layout it was derived from: {detail}")]
    TensorMapLayout {
        /// The map's name.
        map: String,
        /// The first disagreement.
        detail: String,
    },
    /// Invalid cluster dimensions (see [`crate::KernelBuilder::set_cluster_dim`]).
    #[error("cluster dims {dims:?} are invalid: {rule}")]
    ClusterDims {
        /// The dims.
        dims: [u32; 3],
        /// What was violated.
        rule: String,
    },
    /// A loop body or if branch yields the wrong number of values.
    #[error("{what} yields {got} values, expected {expected}")]
    YieldCount {
        /// `"for body"`, `"else branch"`.
        what: String,
        /// Yielded.
        got: usize,
        /// Expected.
        expected: usize,
    },
    /// A loop body or if branch yields a value of the wrong type.
    #[error(
        "{what} yields {got} as value {index}, expected {expected} (the type of the carried value)"
    )]
    YieldType {
        /// `"for body"`, `"else branch"`.
        what: String,
        /// Position.
        index: usize,
        /// Yielded type.
        got: ScalarType,
        /// Expected type.
        expected: ScalarType,
    },
    /// A value of another kernel (or of a closed loop/if block) was used.
    #[error("{op}: value {value} belongs to another kernel under construction")]
    ForeignValue {
        /// The op.
        op: String,
        /// The value.
        value: String,
    },
    /// A value defined inside a loop body or if branch was used after that block closed.
    #[error("{op}: value {value} is defined inside a loop body or if branch that is already closed; pass it out as a carried or yielded value")]
    OutOfScope {
        /// The op.
        op: String,
        /// The value.
        value: String,
    },
    /// A constant does not fit the type it is used as.
    #[error("constant {value} does not fit {ty} (in {op})")]
    ConstantOutOfRange {
        /// The op.
        op: String,
        /// The constant.
        value: String,
        /// The type.
        ty: ScalarType,
    },
    /// A constant integer division or remainder by zero.
    #[error("{op}: division by the constant 0")]
    DivisionByZero {
        /// The op.
        op: String,
    },
    /// A memory reference not declared by this kernel.
    #[error("{op}: memory {mem} is not declared by this kernel")]
    UnknownMemory {
        /// The op.
        op: String,
        /// The memory, as written.
        mem: String,
    },
    /// A wrong number of operands (e.g. an mma fragment of the wrong size).
    #[error("{op}: {what} has {got} values, expected {expected}")]
    OperandCount {
        /// The op.
        op: String,
        /// Which operand list.
        what: String,
        /// Given.
        got: usize,
        /// Expected.
        expected: usize,
    },
    /// A layout error from tilekit-layout while building index math.
    #[error("layout: {0}")]
    Layout(#[from] tilekit_layout::LayoutError),
    /// A misuse of `wgmma` (see [`crate::wgmma`]).
    #[error("wgmma: {0}")]
    Wgmma(#[from] crate::wgmma::WgmmaError),
}

/// Result alias of this crate's build-time operations.
pub type Result<T, E = IrError> = std::result::Result<T, E>;
