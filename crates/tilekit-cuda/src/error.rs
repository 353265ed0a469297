//! Typed errors of the CUDA runtime.
//!
//! A missing driver or GPU is an error value, never a panic, so callers can fall back to the
//! CPU interpreter:
//!
//! ```
//! use tilekit_cuda::{Gpu, CudaError};
//! match Gpu::open(0) {
//!     Ok(gpu) => println!("running on {}", gpu.props().name),
//!     Err(CudaError::NoDriver { .. } | CudaError::NoDevice { .. }) => println!("no GPU: interpreter"),
//!     Err(e) => println!("GPU present but unusable: {e}"),
//! }
//! ```

use std::path::PathBuf;

/// Why a CUDA operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// The CUDA driver library (libcuda) could not be loaded.
    #[error("no CUDA driver: libcuda.so could not be loaded (searched the dynamic loader's path); install the NVIDIA driver or use the interpreter")]
    NoDriver {},
    /// The driver is present but there is no such device.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s)")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: i32,
    },
    /// A driver call failed.
    #[error("CUDA driver call {call} failed: {code}")]
    Driver {
        /// The call, e.g. `cuLinkComplete`.
        call: &'static str,
        /// The driver's result code and name.
        code: String,
    },
    /// The PTX did not compile.
    #[error("PTX JIT of kernel {kernel} failed ({code}):\n{log}")]
    Jit {
        /// The kernel being compiled.
        kernel: String,
        /// The driver's result code.
        code: String,
        /// The JIT error log.
        log: String,
    },
    /// A launch parameter is out of range.
    #[error("launch of {kernel}: {field} = {value} is invalid: {rule}")]
    BadLaunch {
        /// The kernel.
        kernel: String,
        /// The offending field.
        field: &'static str,
        /// Its value.
        value: String,
        /// What would be valid.
        rule: String,
    },
    /// A tensor map the driver would refuse (checked on the host before encoding).
    #[error("tensor map {param}: {source}")]
    TensorMap {
        /// The tensor-map parameter.
        param: String,
        /// What is wrong.
        source: tilekit_ir::tma::TensorMapError,
    },
    /// The kernel cache could not be used.
    #[error("kernel cache {path}: {message}")]
    Cache {
        /// The entry or folder.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A tensor's layout, dtype or data was invalid for the operation (the layout does not fit
    /// the memory, the dtypes differ, the data length does not match the shape, …).
    ///
    /// ```
    /// use tilekit_cuda::CudaError;
    /// use tilekit_ir::tensor::TensorError;
    /// let e: CudaError = TensorError::NegativeOffset { offset: -1 }.into();
    /// assert_eq!(e.to_string(), "tensor: offset -1 is negative: the offset must be >= 0");
    /// ```
    #[error("tensor: {0}")]
    Tensor(#[from] tilekit_ir::tensor::TensorError),
}

impl CudaError {
    pub(crate) fn driver(call: &'static str, e: cudarc::driver::DriverError) -> Self {
        CudaError::Driver { call, code: format!("{:?}", e.0) }
    }
}

/// Result alias of the CUDA runtime.
pub type Result<T, E = CudaError> = std::result::Result<T, E>;
