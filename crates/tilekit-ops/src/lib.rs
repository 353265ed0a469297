//! # tilekit-ops
//!
//! The kernel library of tilekit, written only with the IR builder (no PTX text): every
//! kernel is Rust code that makes views, tile windows with distributions, distributed tensors
//! of registers and shared-memory tiles, and every index comes from tilekit-layout /
//! tilekit-tile generic code evaluated over the IR's symbolic values.
//!
//! ```text
//!   tile     views, windows, distributed tensors, warp/block reductions (re-exported from
//!   dist     the distributions the kernels use (encodings)          the tilekit-kernel crate)
//!   host     random data, dtypes, vector-width choice, comparison
//!   copy  transpose (+ permute)  morton  reduce (+ softmax)  elementwise  gemm  gemm_simt (f32)
//!            each: config → builder function → Kernel; CPU reference
//!   compiled  bind  backend  api   kernels built once, arguments bound by name, backends
//!            (Interp, Cuda, Record), every op as a function on tensors
//!   check    random problems of the ops through the API, against the CPU references
//!   run      `tilekit run`: check one op on a backend, report
//! ```
//!
//! ```
//! use tilekit_ir::ScalarType;
//! let r = tilekit_ops::run::run("copy", &[33, 70], ScalarType::F32, tilekit_ops::run::Backend::Interp, 1).unwrap();
//! assert!(r.passed && r.max_abs == 0.0);
//! ```
#![deny(missing_docs)]

pub mod api;
pub mod attention_sm90;
pub mod backend;
pub mod bind;
pub mod check;
pub mod compiled;
pub mod copy;
pub mod elementwise;
pub mod error;
pub mod gemm;
pub mod gemm_simt;
pub mod gemm_sm90;
pub mod gemm_tuning;
pub mod host;
pub mod loaded;
pub mod morton;
pub mod overlap;
pub mod reduce;
pub mod run;
pub mod soak;
pub mod transpose;
pub mod tuning;

pub use error::{OpsError, Result};

/// The kernel-author layer (views, windows, distributed tiles, loops, reductions), re-exported
/// from [`tilekit_kernel`], where it lives and is documented.
pub use tilekit_kernel::tile;

/// The distributions the kernels use, re-exported from [`tilekit_kernel::dist`].
pub use tilekit_kernel::dist;
