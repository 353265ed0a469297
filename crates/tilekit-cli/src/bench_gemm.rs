//! `tilekit bench gemm`: TFLOP/s of GEMM on the shapes of issue 13, tilekit's kernel beside
//! cuBLASLt measured in the same process.
//!
//! ```text
//!   for each shape M×N×K (row-major A, B) and input type (bf16, f16; f32 for 8192³):
//!     cuBLASLt, output = input type   the best of the heuristic's first 8 algorithms
//!                                     (each: warm-up 3, median of --reps, CUDA events)
//!     cuBLASLt, output f32            the same, for the comparison with tilekit's kernel
//!     tilekit                         api::gemm_into on device tensors (f32 output), where
//!                                     the kernel takes the shape; its ratio to the line above
//!   flops = 2·M·N·K; TFLOP/s = flops / median
//! ```
//!
//! tilekit's GEMM is today the `mma.sync` block kernel (multiples of 64 × 64 × 32 only); the
//! Hopper kernel of issue 13 will take its place in this table.

use std::process::ExitCode;

use tilekit_cuda::blas::{time_gemm_lt, LtSpec};
use tilekit_cuda::Gpu;
use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Backend as _, Cuda};
use tilekit_ops::check::{Op, Problem};

use crate::bench::Args;
use crate::{outln, CliError};

/// The shapes of issue 13's table (M, N, K).
///
/// ```
/// assert_eq!(tilekit_cli::bench_gemm::SHAPES[0], (8192, 8192, 8192));
/// ```
pub const SHAPES: &[(usize, usize, usize)] = &[
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (8192, 8192, 1024),
    (4096, 14336, 4096),
    (14336, 4096, 4096),
    (16384, 1024, 4096),
    (8191, 8191, 8191),
    (1000, 1000, 1000),
    (64, 8192, 8192),
];

/// Algorithms of cuBLASLt's heuristic timed per problem (the fastest is the baseline).
pub const ALGOS: usize = 8;

/// One row of `tilekit bench gemm`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GemmRow {
    /// `M×N×K`.
    pub shape: String,
    /// Input type.
    pub dtype: String,
    /// Device name.
    pub device: String,
    /// cuBLASLt, output of the input type: TFLOP/s of the best algorithm.
    pub cublaslt_tflops: f64,
    /// cuBLASLt's heuristic first choice, same output: TFLOP/s.
    pub cublaslt_first_tflops: f64,
    /// cuBLASLt with f32 output (tilekit's kernel's output today).
    pub cublaslt_f32_out_tflops: Option<f64>,
    /// tilekit's kernel (f32 output), where it takes the shape.
    pub tilekit_tflops: Option<f64>,
    /// `tilekit_tflops / cublaslt_f32_out_tflops`.
    pub ratio: Option<f64>,
}

fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

/// tilekit's GEMM on device tensors: median ms, or `None` where the kernel refuses the shape.
fn tilekit_ms(
    cuda: &Cuda,
    m: usize,
    n: usize,
    k: usize,
    ty: ScalarType,
    reps: usize,
) -> Option<f64> {
    let p = Problem::new(Op::Gemm, &[m as i64, n as i64, k as i64], ty, 5).ok()?;
    let xs = p.upload(cuda).ok()?;
    let mut y = cuda.empty(p.output_dtype(), &p.output_shape()).ok()?;
    let t = cuda.time(3, reps, |_| p.call_into(cuda, &xs, &mut y)).ok()?;
    Some(t.median_ms())
}

/// Runs `tilekit bench gemm`: the table (or JSON lines) on stdout; a cuBLASLt failure is
/// reported on stderr as `FAIL …` and makes the exit code 1.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "bench gemm".into(), reason: e.to_string() })?;
    let cuda = Cuda::new(gpu.clone());
    let device = gpu.props().name.clone();
    if !a.json {
        outln!("device {device}; cuBLASLt: best of the heuristic's first {ALGOS} algorithms, row-major A and B")?;
        outln!(
            "{:<18} {:>5} {:>12} {:>12} {:>14} {:>10} {:>7}",
            "M×N×K",
            "dtype",
            "cuBLASLt",
            "(1st algo)",
            "cuBLASLt f32→",
            "tilekit",
            "ratio"
        )?;
    }
    let mut failed = false;
    let mut cases: Vec<(usize, usize, usize, ScalarType)> = vec![];
    for &(m, n, k) in SHAPES {
        for ty in [ScalarType::BF16, ScalarType::F16] {
            cases.push((m, n, k, ty));
        }
    }
    cases.push((8192, 8192, 8192, ScalarType::F32));
    for (m, n, k, ty) in cases {
        let shape = format!("{m}x{n}x{k}");
        let spec = LtSpec::new(m, n, k, ty);
        let flops = spec.flops();
        let lt = match time_gemm_lt(&gpu, spec, ALGOS, a.reps) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("FAIL cuBLASLt {shape} {ty}: {e}");
                failed = true;
                continue;
            }
        };
        let (lt32, ours) = if ty == ScalarType::F32 {
            (None, None)
        } else {
            let lt32 =
                time_gemm_lt(&gpu, LtSpec { output: ScalarType::F32, ..spec }, ALGOS, a.reps)
                    .ok()
                    .map(|t| tflops(flops, t.best.median_ms()));
            (lt32, tilekit_ms(&cuda, m, n, k, ty, a.reps).map(|ms| tflops(flops, ms)))
        };
        let row = GemmRow {
            shape,
            dtype: ty.name().into(),
            device: device.clone(),
            cublaslt_tflops: tflops(flops, lt.best.median_ms()),
            cublaslt_first_tflops: tflops(flops, lt.first_ms),
            cublaslt_f32_out_tflops: lt32,
            tilekit_tflops: ours,
            ratio: ours.zip(lt32).map(|(o, t)| o / t),
        };
        if a.json {
            let line = serde_json::to_string(&row)
                .map_err(|e| CliError::Check { what: "json".into(), why: e.to_string() })?;
            outln!("{line}")?;
        } else {
            let opt =
                |v: Option<f64>, p: usize| v.map_or("—".to_string(), |x| format!("{x:.p$}"));
            outln!(
                "{:<18} {:>5} {:>12.1} {:>12.1} {:>14} {:>10} {:>7}",
                row.shape,
                row.dtype,
                row.cublaslt_tflops,
                row.cublaslt_first_tflops,
                opt(row.cublaslt_f32_out_tflops, 1),
                opt(row.tilekit_tflops, 1),
                opt(row.ratio, 3)
            )?;
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
