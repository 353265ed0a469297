//! # tilekit-cuda
//!
//! tilekit's CUDA runtime on the driver API through cudarc with dynamic loading: a machine
//! without a driver or GPU builds and runs tilekit, and [`Gpu::open`] answers with a typed
//! [`CudaError`] that callers turn into the interpreter fallback.
//!
//! | module | what lives there |
//! |---|---|
//! | [`device`] | [`Gpu`]: driver detection, properties, buffers, copies |
//! | [`module`] | PTX JIT to cubin with the logs kept, modules, kernels, launches |
//! | [`timing`] | CUDA-event timing with warm-up and medians |
//! | [`blas`] | cuBLAS baselines |
//! | [`cache`] | the on-disk kernel cache |
//! | [`ir_run`] | running an IR kernel on the GPU with the interpreter's argument list |
//! | [`compile`] | IR kernel → PTX → cubin (cached) → loaded kernel, with a report |
//! | [`tma`] | TMA tensor maps: host-side checks and `cuTensorMapEncodeTiled` |
//! | [`tensor`] | device tensors (owned, or borrowed from cudarc) with dtype, shape, strides, offset |
//!
//! ```
//! match tilekit_cuda::Gpu::open(0) {
//!     Ok(gpu) => println!("{} (sm_{}{})", gpu.props().name, gpu.props().compute_capability.0, gpu.props().compute_capability.1),
//!     Err(e) => println!("no GPU here: {e}"),
//! }
//! ```
#![deny(missing_docs)]

pub mod blas;
pub mod cache;
pub mod compile;
pub mod device;
pub mod error;
pub mod ir_run;
pub mod module;
pub mod tensor;
pub mod timing;
pub mod tma;

pub use cache::KernelCache;
pub use compile::CompileReport;
/// The cudarc version tilekit is built on (streams, events and buffers in its API are cudarc's).
pub use cudarc;
pub use device::{driver_present, DeviceProps, Gpu};
pub use error::{CudaError, Result};
pub use ir_run::DeviceArgs;
pub use module::{jit_ptx_to_cubin, load_kernel, JitReport, Kernel, KernelArgs, LaunchDims};
pub use tensor::{DeviceTensor, DeviceTensorMut, DeviceTensorRef};
pub use timing::Timing;
