//! `tilekit run KERNEL --shape …`: build a kernel of the library, run it on random data on a
//! backend, check it against its CPU reference and report.
//!
//! ```text
//!   name + shape + dtype ──► kernel module's launch (build → interpreter → reference)
//!                        ──► RunReport: instructions, elapsed, max |Δ|, max rel, pass/fail
//!   backend gpu          ──► the same, inside an exec::GpuExecutor scope (PTX → JIT → launch)
//! ```
//!
//! ```
//! use tilekit_ir::ScalarType;
//! use tilekit_ops::run::{run, Backend};
//! let r = run("row_max", &[4, 100], ScalarType::F32, Backend::Interp, 1).unwrap();
//! assert!(r.passed);
//! assert!(run("nope", &[4, 4], ScalarType::F32, Backend::Interp, 1).is_err());
//! ```

use std::time::Duration;

use tilekit_ir::ScalarType;

use crate::elementwise::{Binary, Broadcast};
use crate::error::{OpsError, Result};
use crate::reduce::Reduction;

/// Where a kernel runs.
///
/// ```
/// assert_eq!(tilekit_ops::run::Backend::Interp.name(), "interp");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The CPU interpreter.
    Interp,
    /// A GPU through PTX (not in this build).
    Gpu,
}

impl Backend {
    /// The name used on the command line.
    ///
    /// ```
    /// assert_eq!(tilekit_ops::run::Backend::Gpu.name(), "gpu");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Backend::Interp => "interp",
            Backend::Gpu => "gpu",
        }
    }
}

/// The kernels `run` knows, with the shape each takes.
///
/// ```
/// assert!(tilekit_ops::run::KERNELS.iter().any(|(k, _)| *k == "transpose"));
/// ```
pub const KERNELS: &[(&str, &str)] = &[
    ("copy", "MxN or BxMxN"),
    ("transpose", "MxN"),
    ("permute", "AxBxC (perm 2,0,1)"),
    ("permute021", "AxBxC (perm 0,2,1)"),
    ("morton", "HxW (8x8 tiles)"),
    ("unmorton", "HxW (8x8 tiles)"),
    ("row_sum", "MxN"),
    ("row_max", "MxN"),
    ("softmax", "MxN (N <= 16384)"),
    ("add", "MxN"),
    ("mul", "MxN"),
    ("max", "MxN"),
    ("add_row", "MxN (b: row vector of N)"),
    ("mul_col", "MxN (b: column vector of M)"),
    ("gemm", "MxNxK (multiples of 64, 64, 32; f16/bf16)"),
];

/// The configurations `tilekit selftest` runs on a GPU (and CI assembles with ptxas):
/// (kernel, shape, dtype). Shapes include ones that are
/// not multiples of the kernels' tiles.
pub const SELFTEST_CASES: &[(&str, &[i64], ScalarType)] = &[
    ("copy", &[1000, 777], ScalarType::F32),
    ("copy", &[37, 4099], ScalarType::F16),
    ("copy", &[3, 100, 200], ScalarType::BF16),
    ("transpose", &[1000, 777], ScalarType::F32),
    ("transpose", &[513, 1025], ScalarType::F16),
    ("transpose", &[64, 64], ScalarType::BF16),
    ("permute", &[30, 40, 50], ScalarType::F32),
    ("permute", &[64, 33, 17], ScalarType::BF16),
    ("permute021", &[30, 40, 50], ScalarType::F16),
    ("morton", &[1024, 1000], ScalarType::F32),
    ("morton", &[100, 75], ScalarType::BF16),
    ("unmorton", &[1024, 1000], ScalarType::F32),
    ("unmorton", &[37, 61], ScalarType::F16),
    ("row_sum", &[300, 1000], ScalarType::F32),
    ("row_sum", &[5, 4097], ScalarType::BF16),
    ("row_max", &[300, 1000], ScalarType::F32),
    ("row_max", &[7, 333], ScalarType::BF16),
    ("softmax", &[300, 1000], ScalarType::F32),
    ("softmax", &[3, 77], ScalarType::F32),
    ("softmax", &[64, 16384], ScalarType::BF16),
    ("add", &[300, 1000], ScalarType::F32),
    ("mul", &[100, 100], ScalarType::F16),
    ("max", &[77, 555], ScalarType::BF16),
    ("add_row", &[300, 1000], ScalarType::F32),
    ("mul_col", &[123, 456], ScalarType::BF16),
    ("gemm", &[128, 128, 64], ScalarType::F16),
    ("gemm", &[256, 192, 96], ScalarType::BF16),
];

/// What one `run` did.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let r = tilekit_ops::run::run("copy", &[2, 3], ScalarType::F32, tilekit_ops::run::Backend::Interp, 1).unwrap();
/// assert!(r.summary().contains("copy 2x3 f32"));
/// ```
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Kernel name.
    pub kernel: String,
    /// Problem shape.
    pub shape: Vec<i64>,
    /// Element type.
    pub dtype: ScalarType,
    /// Backend used.
    pub backend: Backend,
    /// IR instructions.
    pub instructions: usize,
    /// Run time on the backend.
    pub elapsed: Duration,
    /// Largest absolute error.
    pub max_abs: f64,
    /// Largest relative error.
    pub max_rel: f64,
    /// Elements outside the tolerance.
    pub mismatches: usize,
    /// Tolerance (0 = exact).
    pub tolerance: f64,
    /// Whether the result matched its reference.
    pub passed: bool,
}

impl RunReport {
    /// One line: kernel, shape, dtype, IR size, backend, time, check.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let r = tilekit_ops::run::run("row_sum", &[2, 30], ScalarType::F32, tilekit_ops::run::Backend::Interp, 1).unwrap();
    /// assert!(r.summary().contains("PASS"));
    /// ```
    pub fn summary(&self) -> String {
        let shape: Vec<String> = self.shape.iter().map(i64::to_string).collect();
        let check = if self.tolerance == 0.0 {
            "exact".to_string()
        } else {
            format!("tol {:.0e}", self.tolerance)
        };
        format!(
            "{} {} {}: {} IR instructions, backend {}, {:.3} s, max abs err {:.3e}, max rel err {:.3e} ({check}): {}",
            self.kernel,
            shape.join("x"),
            self.dtype,
            self.instructions,
            self.backend.name(),
            self.elapsed.as_secs_f64(),
            self.max_abs,
            self.max_rel,
            if self.passed { "PASS".to_string() } else { format!("FAIL ({} mismatches)", self.mismatches) }
        )
    }
}

/// Builds `kernel`, runs it on `backend` on random data from `seed` and checks it.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::{run::{run, Backend}, OpsError};
/// // without a GPU (or a driver) the GPU backend is a typed error, not a panic
/// match run("copy", &[2, 3], ScalarType::F32, Backend::Gpu, 1) {
///     Ok(r) => assert!(r.passed),
///     Err(e) => assert!(matches!(e, OpsError::GpuUnavailable(_)), "{e}"),
/// }
/// ```
pub fn run(
    kernel: &str,
    shape: &[i64],
    dtype: ScalarType,
    backend: Backend,
    seed: u64,
) -> Result<RunReport> {
    if backend == Backend::Gpu {
        let gpu =
            tilekit_cuda::Gpu::open(0).map_err(|e| OpsError::GpuUnavailable(e.to_string()))?;
        let ex = std::rc::Rc::new(crate::exec::GpuExecutor::new(gpu));
        return crate::exec::with_executor(ex, || run(kernel, shape, dtype, Backend::Interp, seed))
            .map(|mut r| {
                r.backend = Backend::Gpu;
                r
            });
    }
    let o = launch_outcome(kernel, shape, dtype, seed)?;
    let c = o.compare();
    Ok(RunReport {
        kernel: kernel.to_string(),
        shape: shape.to_vec(),
        dtype,
        backend,
        instructions: o.instructions,
        elapsed: o.elapsed,
        max_abs: c.max_abs,
        max_rel: c.max_rel,
        mismatches: c.mismatches,
        tolerance: c.tolerance,
        passed: c.passed,
    })
}

/// Builds and launches `kernel` on the current executor (see [`crate::exec`]) with random data
/// from `seed`, returning the outcome with its CPU reference.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let o = tilekit_ops::run::launch_outcome("row_sum", &[3, 50], ScalarType::F32, 2).unwrap();
/// assert!(o.compare().passed);
/// ```
pub fn launch_outcome(
    kernel: &str,
    shape: &[i64],
    dtype: ScalarType,
    seed: u64,
) -> Result<crate::host::Outcome> {
    let o = match kernel {
        "copy" => crate::copy::launch(shape, dtype, seed)?,
        "transpose" => crate::transpose::launch(shape, dtype, seed)?,
        "permute" => crate::transpose::launch_permute(shape, &[2, 0, 1], dtype, seed)?,
        "permute021" => crate::transpose::launch_permute(shape, &[0, 2, 1], dtype, seed)?,
        "morton" => crate::morton::launch(shape, 8, false, dtype, seed)?,
        "unmorton" => crate::morton::launch(shape, 8, true, dtype, seed)?,
        "row_sum" => crate::reduce::launch(Reduction::Sum, shape, dtype, seed)?,
        "row_max" => crate::reduce::launch(Reduction::Max, shape, dtype, seed)?,
        "softmax" => crate::reduce::launch(Reduction::Softmax, shape, dtype, seed)?,
        "add" => crate::elementwise::launch(Binary::Add, Broadcast::None, shape, dtype, seed)?,
        "mul" => crate::elementwise::launch(Binary::Mul, Broadcast::None, shape, dtype, seed)?,
        "max" => crate::elementwise::launch(Binary::Max, Broadcast::None, shape, dtype, seed)?,
        "add_row" => crate::elementwise::launch(Binary::Add, Broadcast::Row, shape, dtype, seed)?,
        "mul_col" => crate::elementwise::launch(Binary::Mul, Broadcast::Col, shape, dtype, seed)?,
        "gemm" => crate::gemm::launch(shape, dtype, seed)?,
        _ => {
            let names: Vec<&str> = KERNELS.iter().map(|(k, _)| *k).collect();
            return Err(OpsError::invalid(
                "run",
                "kernel",
                kernel,
                format!("one of {}", names.join(", ")),
            ));
        }
    };
    Ok(o)
}
