//! tilekit's Python exceptions and the mapping of its Rust errors onto them.
//!
//! ```text
//!   tilekit.Error (Exception)
//!     ├── DeviceError    a tensor not on a CUDA device
//!     ├── DTypeError     a dtype the op or tilekit does not take
//!     ├── ShapeError     shapes, strides, ranks that do not fit the op (names the shapes)
//!     │     └── OverlapError  an output sharing memory with an input or another output in a
//!     │                       way the op does not allow (out=x of a transpose, a gemm's out=a)
//!     ├── ReadOnlyError  an output exported read-only (or as a copy) through DLPack
//!     ├── GpuError       no driver, no device, a failed driver call, JIT or launch
//!     └── EncodingError  tilekit.show: an encoding the parser or validator refuses
//! ```
//!
//! Every Rust error reaches Python as one of these with the Rust message; nothing panics
//! across the boundary (a panic would surface as pyo3's PanicException, a bug).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;
use tilekit_cuda::CudaError;
use tilekit_ir::tensor::TensorError;
use tilekit_ops::OpsError;

create_exception!(tilekit, Error, PyException, "The base of every tilekit error.");
create_exception!(tilekit, DeviceError, Error, "A tensor is not on a CUDA device.");
create_exception!(tilekit, DTypeError, Error, "A dtype the op (or tilekit) does not take.");
create_exception!(tilekit, ShapeError, Error, "Shapes or strides that do not fit the op.");
create_exception!(
    tilekit,
    OverlapError,
    ShapeError,
    "An output overlaps an input or another output in a way the op does not allow."
);
create_exception!(
    tilekit,
    ReadOnlyError,
    Error,
    "An output that cannot be written: exported read-only (or as a copy) through DLPack."
);
create_exception!(tilekit, GpuError, Error, "No CUDA driver or device, or a failed GPU call.");
create_exception!(tilekit, EncodingError, Error, "A tile-distribution encoding was refused.");

/// A tensor error as the Python exception of its kind.
pub fn tensor_err(e: &TensorError) -> PyErr {
    match e {
        TensorError::DtypeMismatch { .. } | TensorError::UnsupportedDtype { .. } => {
            DTypeError::new_err(e.to_string())
        }
        _ => ShapeError::new_err(e.to_string()),
    }
}

/// A CUDA runtime error as the Python exception of its kind.
pub fn cuda_err(e: &CudaError) -> PyErr {
    match e {
        CudaError::Tensor(t) => tensor_err(t),
        _ => GpuError::new_err(e.to_string()),
    }
}

/// A kernel-library error as the Python exception of its kind.
pub fn ops_err(e: &OpsError) -> PyErr {
    match e {
        OpsError::DtypeMismatch { .. } => DTypeError::new_err(e.to_string()),
        OpsError::Invalid { field, .. } if field == "dtype" => DTypeError::new_err(e.to_string()),
        OpsError::Invalid { .. } | OpsError::Kernel(_) => ShapeError::new_err(e.to_string()),
        OpsError::Tensor(t) => tensor_err(t),
        OpsError::Bind { .. } => ShapeError::new_err(e.to_string()),
        OpsError::Overlap { .. } => OverlapError::new_err(e.to_string()),
        OpsError::GpuUnavailable(_) | OpsError::Gpu(_) => GpuError::new_err(e.to_string()),
        _ => Error::new_err(e.to_string()),
    }
}
