//! `tilekit bench gemm --dtype f32`: the fp32 SIMT GEMM ([`tilekit_ops::gemm_simt`], CUDA
//! cores, no TF32) beside cuBLAS SGEMM measured in the same process.
//!
//! ```text
//!   for each shape M×N×K (default 8192³ and 4096³; --gemm-shape for one):
//!     cuBLAS SGEMM   cuBLASLt, f32 in/out, CUBLAS_COMPUTE_32F (no TF32): the best of the
//!                    heuristic's first 8 algorithms (warm-up 3, median of --reps, CUDA events)
//!     tilekit        api::gemm_simt_into for every candidate (the presets default, wide,
//!                    small, and tall, default_bk16, wide_bk16_s1: SimtConfig::candidates)
//!                    and api::gemm_into (the preset it picks), A, B row-major on the device,
//!                    C poisoned with NaN first; 64 sampled elements of C checked against an
//!                    f64 dot product; registers and local memory of the loaded kernel
//!   TFLOP/s = 2·M·N·K / median; ratio = tilekit / cuBLAS
//! ```

use std::process::ExitCode;

use tilekit_cuda::blas::{time_gemm_lt, LtSpec};
use tilekit_cuda::Gpu;
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::ScalarType;
use tilekit_ops::backend::{Backend as _, Cuda};
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::gemm_simt::{build, SimtConfig, SimtLayout};
use tilekit_ops::{api, host};

use crate::bench::Args;
use crate::bench_gemm::{parse_shape, ALGOS};
use crate::{outln, CliError};

/// The default shapes (M, N, K) of the f32 table.
///
/// ```
/// assert_eq!(tilekit_cli::bench_gemm_simt::SHAPES, &[(8192, 8192, 8192), (4096, 4096, 4096)]);
/// ```
pub const SHAPES: &[(usize, usize, usize)] = &[(8192, 8192, 8192), (4096, 4096, 4096)];

/// One row: one shape, one tilekit configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SimtRow {
    /// `M×N×K`.
    pub shape: String,
    /// Device name.
    pub device: String,
    /// The candidate's name (`default`, `wide`, `small`, …) or `auto` (what `api::gemm`
    /// picks).
    pub config: String,
    /// The configuration ([`SimtConfig`]'s display).
    pub tile: String,
    /// cuBLAS SGEMM (cuBLASLt, f32 compute, no TF32), TFLOP/s of the best algorithm.
    pub cublas_tflops: f64,
    /// tilekit's TFLOP/s.
    pub tilekit_tflops: f64,
    /// `tilekit_tflops / cublas_tflops`.
    pub ratio: f64,
    /// Registers per thread of the loaded kernel.
    pub registers: Option<i32>,
    /// Local memory per thread (spills), bytes.
    pub local_bytes: Option<i32>,
}

/// Checks 64 sampled elements of `c` (M×N) against an f64 dot product of row-major `a`
/// (M×K) and `b` (K×N): within `8·ε_f32·Σ|aᵢbᵢ|` plus a tiny absolute slack, never NaN.
///
/// ```
/// use tilekit_cli::bench_gemm_simt::check_sampled;
/// let (a, b) = (vec![1.0, 2.0, 3.0, 4.0], vec![1.0, 0.0, 0.0, 1.0]); // 2×2 · I
/// assert!(check_sampled(&a, &b, &[1.0, 2.0, 3.0, 4.0], 2, 2, 2).is_ok());
/// assert!(check_sampled(&a, &b, &[1.0, 2.0, 3.0, 4.5], 2, 2, 2).is_err());
/// assert!(check_sampled(&a, &b, &[1.0, 2.0, f64::NAN, 4.0], 2, 2, 2).is_err());
/// ```
pub fn check_sampled(
    a: &[f64],
    b: &[f64],
    c: &[f64],
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), String> {
    let mut s = 0x9e37_79b9_u64;
    for probe in 0..64 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        // the first probes are the corners (edge tiles), then random elements
        let (i, j) = match probe {
            0 => (0, 0),
            1 => (m - 1, n - 1),
            2 => (0, n - 1),
            3 => (m - 1, 0),
            _ => ((s >> 3) as usize % m, (s >> 33) as usize % n),
        };
        let terms = (0..k).map(|x| a[i * k + x] * b[x * n + j]);
        let want: f64 = terms.clone().sum();
        let tol = terms.map(f64::abs).sum::<f64>() * 8.0 * f64::from(f32::EPSILON) + 1e-6;
        let g = c[i * n + j];
        if g.is_nan() || (g - want).abs() > tol {
            return Err(format!("C[{i}][{j}] = {g}, reference {want} (tolerance {tol:.2e})"));
        }
    }
    Ok(())
}

fn err(e: impl std::fmt::Display) -> CliError {
    CliError::Check { what: "bench gemm f32".into(), why: e.to_string() }
}

/// Times every configuration on one shape; `Err` for a wrong result or a failed launch.
fn measure(
    cuda: &Cuda,
    (m, n, k): (usize, usize, usize),
    cublas_tflops: f64,
    reps: usize,
) -> Result<Vec<SimtRow>, CliError> {
    let ty = ScalarType::F32;
    let (mi, ni, ki) = (m as i64, n as i64, k as i64);
    let tensor = |len: usize, shape: Vec<i64>, seed| -> Result<HostTensor, CliError> {
        HostTensor::new(
            host::random(ty, len, seed)?,
            TensorLayout::contiguous(ty, shape).map_err(err)?,
        )
        .map_err(err)
    };
    let (ah, bh) = (tensor(m * k, vec![mi, ki], 41)?, tensor(k * n, vec![ki, ni], 42)?);
    let ch = HostTensor::new(
        host::poisoned(ty, m * n)?,
        TensorLayout::contiguous(ty, vec![mi, ni]).map_err(err)?,
    )
    .map_err(err)?;
    let (av, bv) = (host::to_f64(&ah.buffer()), host::to_f64(&bh.buffer()));
    let a = cuda.from_host(&ah)?;
    let b = cuda.from_host(&bh)?;
    let flops = 2.0 * (m as f64) * (n as f64) * (k as f64);
    let shape = format!("{m}x{n}x{k}");
    let device = cuda.gpu().props().name.clone();
    let mut rows = vec![];
    let auto = tilekit_ops::gemm_simt::choose(mi, ni, cuda.multiprocessors());
    let configs = SimtConfig::candidates().into_iter().map(|(n, c)| (n.to_string(), Some(c)));
    for (name, cfg) in configs.chain([("auto".to_string(), None)]) {
        let tile = cfg.unwrap_or(auto);
        eprintln!("  {shape} f32: tilekit SIMT {name} ({tile}) …");
        let mut c = cuda.from_host(&ch)?;
        let call = |c: &mut tilekit_cuda::DeviceTensor| match &cfg {
            Some(cfg) => api::gemm_simt_into(cuda, &a, &b, c, cfg),
            None => api::gemm_into(cuda, &a, &b, c),
        };
        let t = cuda.time(3, reps, |_| call(&mut c))?;
        let got = host::to_f64(&cuda.to_host(&c)?.buffer());
        check_sampled(&av, &bv, &got, m, n, k)
            .map_err(|why| CliError::Check { what: format!("gemm f32 {name} {shape}"), why })?;
        // the kernel the API launched here (contiguous rows of multiples of 4: float4)
        let vec4 = [k, n].iter().all(|x| x % 4 == 0);
        let layout = if vec4 { SimtLayout::aligned(false) } else { SimtLayout::scalar(false) };
        let info =
            build(&tile, &layout).ok().and_then(|kk| cuda.loaded(&CompiledKernel::new(kk)).ok());
        let ours = flops / (t.median_ms() * 1e-3) / 1e12;
        eprintln!("    {:.3} ms, {ours:.1} TFLOP/s, checked", t.median_ms());
        rows.push(SimtRow {
            shape: shape.clone(),
            device: device.clone(),
            config: name,
            tile: tile.to_string(),
            cublas_tflops,
            tilekit_tflops: ours,
            ratio: ours / cublas_tflops,
            registers: info.as_ref().map(|i| i.registers()),
            local_bytes: info.as_ref().map(|i| i.local_bytes()),
        });
    }
    Ok(rows)
}

/// Runs the f32 table; a failure (cuBLAS, a launch, a wrong result) is printed as `FAIL …` on
/// stderr and makes the exit code 1.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "bench gemm".into(), reason: e.to_string() })?;
    gpu.set_timed_calls(a.back_to_back);
    let cuda = Cuda::new(gpu.clone());
    let shapes = match &a.gemm_shape {
        Some(text) => vec![parse_shape(text)?],
        None => SHAPES.to_vec(),
    };
    if !a.json {
        outln!(
            "device {}; cuBLAS SGEMM = cuBLASLt f32, CUBLAS_COMPUTE_32F (no TF32), best of {ALGOS} algorithms; row-major A, B, C",
            gpu.props().name
        )?;
        outln!(
            "{:<16} {:<8} {:<24} {:>10} {:>10} {:>7} {:>5} {:>6}",
            "M×N×K",
            "config",
            "tile",
            "cuBLAS",
            "tilekit",
            "ratio",
            "regs",
            "local"
        )?;
    }
    let mut failed = false;
    for (m, n, k) in shapes {
        let shape = format!("{m}x{n}x{k}");
        eprintln!("  {shape} f32: cuBLAS SGEMM …");
        let lt = match time_gemm_lt(&gpu, LtSpec::new(m, n, k, ScalarType::F32), ALGOS, a.reps) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("FAIL cuBLAS SGEMM {shape}: {e}");
                failed = true;
                continue;
            }
        };
        let cublas = 2.0 * (m * n) as f64 * k as f64 / (lt.best.median_ms() * 1e-3) / 1e12;
        let rows = match measure(&cuda, (m, n, k), cublas, a.reps) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("FAIL tilekit gemm f32 {shape}: {e}");
                failed = true;
                continue;
            }
        };
        for r in rows {
            if a.json {
                let line = serde_json::to_string(&r).map_err(err)?;
                outln!("{line}")?;
            } else {
                let opt = |v: Option<i32>| v.map_or("—".to_string(), |x| x.to_string());
                outln!(
                    "{:<16} {:<8} {:<24} {:>10.1} {:>10.1} {:>7.3} {:>5} {:>6}",
                    r.shape,
                    r.config,
                    r.tile,
                    r.cublas_tflops,
                    r.tilekit_tflops,
                    r.ratio,
                    opt(r.registers),
                    opt(r.local_bytes)
                )?;
            }
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
