//! `tilekit run KERNEL --shape …`: build a kernel of the library, run it on random data on a
//! backend, check it against its CPU reference and report.
//!
//! ```text
//!   name + shape + dtype ──► check::Problem (random inputs, CPU reference)
//!                        ──► the API call on backend::Interp ──► RunReport: instructions,
//!                            elapsed, max |Δ|, max |Δ|/max(|want|, 1), pass/fail
//!   backend gpu          ──► the same call on backend::Cuda (device tensors; timed with events)
//!   plan                 ──► the kernel and grid alone, no data (`tilekit ptx`)
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

use tilekit_ir::{Kernel, ScalarType};

use crate::backend::{Backend as _, Cuda, Interp};
use crate::check::{Op, Problem};
use crate::error::Result;
use crate::host;

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

/// A kernel `run` knows: its name, the shape it takes and its element types.
///
/// ```
/// use tilekit_ir::ScalarType;
/// let gemm = tilekit_ops::run::KERNELS.iter().find(|k| k.name == "gemm").unwrap();
/// assert_eq!(gemm.dtypes, &[ScalarType::F16, ScalarType::BF16, ScalarType::F32]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelInfo {
    /// The name on the command line.
    pub name: &'static str,
    /// The shape it takes (rank and meaning of each length, constraints).
    pub shape: &'static str,
    /// The element types it accepts.
    pub dtypes: &'static [ScalarType],
}

const fn info(
    name: &'static str,
    shape: &'static str,
    dtypes: &'static [ScalarType],
) -> KernelInfo {
    KernelInfo { name, shape, dtypes }
}

/// The kernels `run` knows, with the shape and element types each takes.
///
/// ```
/// assert!(tilekit_ops::run::KERNELS.iter().any(|k| k.name == "transpose" && k.shape == "MxN"));
/// ```
pub const KERNELS: &[KernelInfo] = &[
    info("copy", "MxN or BxMxN", &host::FLOAT_TYPES),
    info("transpose", "MxN", &host::FLOAT_TYPES),
    info("permute", "AxBxC (perm 2,0,1)", &host::FLOAT_TYPES),
    info("permute021", "AxBxC (perm 0,2,1)", &host::FLOAT_TYPES),
    info("morton", "HxW (8x8 tiles)", &host::FLOAT_TYPES),
    info("unmorton", "HxW (8x8 tiles)", &host::FLOAT_TYPES),
    info("row_sum", "MxN", &crate::reduce::TYPES),
    info("row_max", "MxN", &crate::reduce::TYPES),
    info("softmax", "MxN", &crate::reduce::TYPES),
    info("add", "MxN", &host::FLOAT_TYPES),
    info("mul", "MxN", &host::FLOAT_TYPES),
    info("max", "MxN", &host::FLOAT_TYPES),
    info("add_row", "MxN (b: row vector of N)", &host::FLOAT_TYPES),
    info("mul_col", "MxN (b: column vector of M)", &host::FLOAT_TYPES),
    info(
        "gemm",
        "MxNxK (f16/bf16: multiples of 64, 64, 32; f32: any)",
        &crate::gemm_simt::API_TYPES,
    ),
    info(
        "attention",
        "BxSQxSKxHxHKVxD (Q BxSQxHxD, K/V BxSKxHKVxD; D 64/128/256; GPU: sm_90)",
        &crate::check::ATTENTION_TYPES,
    ),
    info(
        "attention_causal",
        "BxSQxSKxHxHKVxD (the causal mask, bottom-right aligned)",
        &crate::check::ATTENTION_TYPES,
    ),
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
    ("softmax", &[3, 20001], ScalarType::BF16),
    ("softmax", &[2, 65536], ScalarType::F32),
    ("add", &[300, 1000], ScalarType::F32),
    ("mul", &[100, 100], ScalarType::F16),
    ("max", &[77, 555], ScalarType::BF16),
    ("add_row", &[300, 1000], ScalarType::F32),
    ("mul_col", &[123, 456], ScalarType::BF16),
    ("gemm", &[128, 128, 64], ScalarType::F16),
    ("gemm", &[256, 192, 96], ScalarType::BF16),
    ("gemm", &[77, 130, 33], ScalarType::F32),
    ("gemm", &[256, 260, 132], ScalarType::F32),
    // attention: ragged lengths, grouped-query heads, s_q = 1, each head dim
    ("attention", &[1, 77, 300, 4, 2, 64], ScalarType::BF16),
    ("attention_causal", &[2, 200, 130, 2, 1, 128], ScalarType::F16),
    ("attention_causal", &[1, 1, 77, 2, 2, 256], ScalarType::BF16),
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
    /// Largest error relative to `max(|want|, 1)` ([`host::Comparison::max_rel`]): the
    /// quantity compared with the tolerance.
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
    /// assert!(r.summary().contains("relative to max(|want|, 1) (tol "), "{}", r.summary());
    /// ```
    pub fn summary(&self) -> String {
        let shape: Vec<String> = self.shape.iter().map(i64::to_string).collect();
        let check = if self.tolerance == 0.0 {
            "exact".to_string()
        } else {
            // one digit where that is the tolerance itself, else enough to compare with
            let short = format!("{:.0e}", self.tolerance);
            if short.parse::<f64>() == Ok(self.tolerance) {
                format!("tol {short}")
            } else {
                format!("tol {:.3e}", self.tolerance)
            }
        };
        format!(
            "{} {} {}: {} IR instructions, backend {}, {:.3} s, max abs err {:.3e}, max err {:.3e} relative to max(|want|, 1) ({check}): {}",
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

/// Runs `kernel` through the API ([`crate::check`]) on `backend` on random data from `seed`
/// and checks it against its CPU reference. On the GPU the time is the median of 5 calls
/// after a warm-up (CUDA events), on the interpreter the one call's.
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
    let op = Op::named(kernel)?;
    let p = Problem::new(op, shape, dtype, seed)?;
    let (o, elapsed) = match backend {
        Backend::Interp => {
            let (o, _) = p.run(&Interp)?;
            let t = o.elapsed;
            (o, t)
        }
        Backend::Gpu => {
            let cuda = Cuda::open(0)?;
            let (o, xs) = p.run(&cuda)?;
            let mut y = cuda.empty(p.output_dtype(), &p.output_shape())?;
            let t = cuda.time(1, 5, |_| p.call_into(&cuda, &xs, &mut y))?;
            (o, Duration::from_secs_f64(t.median_ms() * 1e-3))
        }
    };
    let c = o.compare();
    Ok(RunReport {
        kernel: kernel.to_string(),
        shape: shape.to_vec(),
        dtype,
        backend,
        instructions: o.instructions,
        elapsed,
        max_abs: c.max_abs,
        max_rel: c.max_rel,
        mismatches: c.mismatches,
        tolerance: c.tolerance,
        passed: c.passed,
    })
}

/// The kernel and grid that `kernel` launches through the API on contiguous inputs of
/// `shape` and `dtype` ([`crate::check::plan`]: the API call on the record backend), built
/// without any host-side data: its cost does not grow with the shape, which the kernels take
/// at run time. `tilekit ptx` prints it.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::run::plan;
/// // 2^31 - 1 elements: nothing is allocated
/// let (k, grid) = plan("copy", &[2_147_483_647, 1], ScalarType::F32).unwrap();
/// assert_eq!((k.name.as_str(), grid), ("copy", [16_777_216, 1, 1]));
/// assert_eq!(plan("transpose", &[16384, 16384], ScalarType::F32).unwrap().1, [256, 256, 1]);
/// assert!(plan("nope", &[4, 4], ScalarType::F32).is_err());
/// assert!(plan("gemm", &[64, 64, 32], ScalarType::I32).is_err()); // f16, bf16 or f32
/// assert_eq!(plan("gemm", &[77, 130, 33], ScalarType::F32).unwrap().0.name, "gemm_simt");
/// ```
pub fn plan(kernel: &str, shape: &[i64], dtype: ScalarType) -> Result<(Kernel, [u32; 3])> {
    crate::check::plan_named(kernel, shape, dtype)
}
