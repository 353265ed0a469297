//! `tilekit bench KERNEL|all`: GPU timings as ratios to a device-to-device copy measured in the
//! same process.
//!
//! ```text
//!   for each kernel:  inputs (rotated sets when they fit in L2) ──► warm-up ×3
//!                     CUDA events around each of ≥ 20 runs ──► median
//!   baseline:         cuMemcpyDtoD of the same byte count, timed the same way
//!   report:           GB/s = (bytes read + bytes written) / median, ratio = kernel GB/s / copy GB/s
//! ```

use std::process::ExitCode;

use tilekit_cuda::{Gpu, KernelCache};
use tilekit_ir::interp::Args as KArgs;
use tilekit_ir::{examples, ScalarType};

use crate::rng::Rng;
use crate::selftest::random_buffer;
use crate::CliError;

/// Arguments of `tilekit bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Kernel to time (a kernel of the benchmark set, `copy-example`, or `all`).
    #[arg(default_value = "all")]
    pub kernel: String,
    /// Size of the data each kernel reads, in MiB.
    #[arg(long, default_value_t = 1024)]
    pub mib: usize,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    /// Print one JSON object per kernel instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

/// One measured kernel.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measurement {
    /// Kernel name.
    pub kernel: String,
    /// Device name.
    pub device: String,
    /// Bytes read plus written per run.
    pub bytes: u64,
    /// Median milliseconds.
    pub median_ms: f64,
    /// GB/s (1e9 bytes per second).
    pub gb_per_s: f64,
    /// Same-process device-to-device copy GB/s of the same byte count.
    pub copy_gb_per_s: f64,
    /// `gb_per_s / copy_gb_per_s`.
    pub ratio_to_copy: f64,
    /// For matrix products: TFLOP/s.
    pub tflops: Option<f64>,
    /// For matrix products: cuBLAS TFLOP/s on the same problem in the same process.
    pub cublas_tflops: Option<f64>,
}

fn cuda(e: tilekit_cuda::CudaError) -> CliError {
    CliError::BadArgument { flag: "gpu".into(), value: "run".into(), rule: e.to_string() }
}

/// The copy baseline: `cuMemcpyDtoD` of `bytes / 2` bytes (read + write = `bytes`), in GB/s.
pub fn copy_baseline(gpu: &Gpu, bytes_read: usize, reps: usize) -> Result<f64, CliError> {
    let src = gpu.upload(&vec![1u8; bytes_read]).map_err(cuda)?;
    let mut dst = gpu.alloc_zeros::<u8>(bytes_read).map_err(cuda)?;
    let t = gpu.time(3, reps, |_| gpu.copy(&src, &mut dst)).map_err(cuda)?;
    Ok(2.0 * bytes_read as f64 / (t.median_ms() * 1e-3) / 1e9)
}

fn bench_copy(
    gpu: &Gpu,
    a: &Args,
    cache: Option<&KernelCache>,
    copy_gbs: f64,
) -> Result<Measurement, CliError> {
    let ir = |e: tilekit_ir::IrError| CliError::BadArgument {
        flag: "kernel".into(),
        value: "copy".into(),
        rule: e.to_string(),
    };
    let kernel = examples::copy(ScalarType::F32, 4, 256).map_err(ir)?;
    let n = a.mib * (1 << 20) / 4;
    let mut rng = Rng::new(7);
    let mut args = KArgs::new();
    args.buffer(random_buffer(ScalarType::F32, n, &mut rng))
        .buffer(crate::selftest::poison(ScalarType::F32, n))
        .int(n as i64);
    let (k, _) = gpu.compile(&kernel, cache).map_err(cuda)?;
    let dev = gpu.upload_args(&kernel, &args).map_err(cuda)?;
    let grid = (gpu.props().sm_count as u32) * 8;
    let t =
        gpu.time(3, a.reps, |_| gpu.launch_ir(&k, &kernel, [grid, 1, 1], &dev)).map_err(cuda)?;
    // correctness of what was timed
    let mut out = args.clone();
    gpu.download_args(&dev, &mut out).map_err(cuda)?;
    if out.get_buffer(1).map(|b| b.as_bytes()) != args.get_buffer(0).map(|b| b.as_bytes()) {
        return Err(CliError::BadArgument {
            flag: "kernel".into(),
            value: "copy".into(),
            rule: "the timed copy produced wrong data".into(),
        });
    }
    let bytes = 2 * (n as u64) * 4;
    let gbs = bytes as f64 / (t.median_ms() * 1e-3) / 1e9;
    Ok(Measurement {
        kernel: format!("copy-example f32 v4 {} MiB", a.mib),
        device: gpu.props().name.clone(),
        bytes,
        median_ms: t.median_ms(),
        gb_per_s: gbs,
        copy_gb_per_s: copy_gbs,
        ratio_to_copy: gbs / copy_gbs,
        tflops: None,
        cublas_tflops: None,
    })
}

/// The benchmark set of issue 7: (kernel, shape, dtype) at the target sizes.
pub const BENCH_SET: &[(&str, &[i64], ScalarType)] = &[
    ("copy", &[16384, 16384], ScalarType::F32),
    ("transpose", &[16384, 16384], ScalarType::F32),
    ("transpose", &[16384, 16384], ScalarType::BF16),
    ("permute", &[512, 512, 256], ScalarType::F32),
    ("permute", &[512, 512, 256], ScalarType::BF16),
    ("morton", &[16384, 16384], ScalarType::F32),
    ("unmorton", &[16384, 16384], ScalarType::F32),
    ("row_sum", &[16384, 16384], ScalarType::F32),
    ("row_sum", &[16384, 16384], ScalarType::BF16),
    ("softmax", &[16384, 16384], ScalarType::F32),
    ("softmax", &[16384, 16384], ScalarType::BF16),
    // the rest of the library (no issue-7 target)
    ("permute021", &[512, 512, 256], ScalarType::F32),
    ("row_max", &[16384, 16384], ScalarType::F32),
    ("add", &[16384, 16384], ScalarType::F32),
    ("mul", &[16384, 16384], ScalarType::BF16),
    ("max", &[16384, 16384], ScalarType::F16),
    ("add_row", &[16384, 16384], ScalarType::F32),
    ("mul_col", &[16384, 16384], ScalarType::BF16),
    ("gemm", &[2048, 2048, 1024], ScalarType::F16),
];

fn ops_bench(
    gpu: &Gpu,
    kernel: &str,
    shape: &[i64],
    dtype: ScalarType,
    reps: usize,
    copy_gbs: f64,
) -> Result<Measurement, CliError> {
    use std::rc::Rc;
    use tilekit_ops::exec::{with_executor, GpuExecutor};
    let ex = Rc::new(GpuExecutor::new(gpu.clone()).timed(3, reps));
    let o =
        with_executor(ex.clone(), || tilekit_ops::run::launch_outcome(kernel, shape, dtype, 11))
            .map_err(|e| CliError::BadArgument {
                flag: "kernel".into(),
                value: kernel.into(),
                rule: e.to_string(),
            })?;
    let c = o.compare();
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    let name = format!("{kernel} {} {}", dims.join("x"), dtype.name());
    if !c.passed {
        return Err(CliError::BadArgument {
            flag: "kernel".into(),
            value: name,
            rule: format!(
                "the timed kernel is wrong: {} mismatches, max abs {:.3e}",
                c.mismatches, c.max_abs
            ),
        });
    }
    let rec = ex.take_records().pop().ok_or_else(|| CliError::BadArgument {
        flag: "kernel".into(),
        value: name.clone(),
        rule: "no GPU launch was recorded".into(),
    })?;
    let gbs = rec.bytes as f64 / (rec.median_ms * 1e-3) / 1e9;
    let (tflops, cublas_tflops) = if kernel == "gemm" {
        let (m, n, k) = (shape[0] as usize, shape[1] as usize, shape[2] as usize);
        let flops = 2.0 * (m * n * k) as f64;
        let ours = flops / (rec.median_ms * 1e-3) / 1e12;
        let theirs = tilekit_cuda::blas::time_gemm_f16(gpu, m, n, k, reps)
            .ok()
            .map(|t| flops / (t.median_ms() * 1e-3) / 1e12);
        (Some(ours), theirs)
    } else {
        (None, None)
    };
    Ok(Measurement {
        kernel: name,
        device: gpu.props().name.clone(),
        bytes: rec.bytes,
        median_ms: rec.median_ms,
        gb_per_s: gbs,
        copy_gb_per_s: copy_gbs,
        ratio_to_copy: gbs / copy_gbs,
        tflops,
        cublas_tflops,
    })
}

/// Runs `tilekit bench`.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let mut known: Vec<&str> = vec!["copy-example"];
    for (k, _, _) in BENCH_SET {
        if !known.contains(k) {
            known.push(k);
        }
    }
    if a.kernel != "all" && !known.contains(&a.kernel.as_str()) {
        return Err(CliError::BadArgument {
            flag: "KERNEL".into(),
            value: a.kernel.clone(),
            rule: format!("one of {known:?} or all"),
        });
    }
    let gpu = match Gpu::open(a.device) {
        Ok(g) => g,
        Err(e) => {
            println!("bench needs a GPU: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let cache = KernelCache::open(KernelCache::default_dir()).ok();
    let copy_gbs = copy_baseline(&gpu, a.mib << 20, a.reps)?;
    if !a.json {
        println!(
            "device {}; device-to-device copy (cuMemcpyDtoD, {} MiB) {copy_gbs:.0} GB/s",
            gpu.props().name,
            a.mib
        );
        println!("{:<34} {:>10} {:>10} {:>8}", "kernel", "median ms", "GB/s", "x copy");
    }
    let mut failures = 0;
    let mut emit = |r: Result<Measurement, CliError>| match r {
        Ok(m) => {
            if a.json {
                println!("{}", serde_json::to_string(&m).unwrap_or_default());
            } else {
                let extra = match (m.tflops, m.cublas_tflops) {
                    (Some(t), Some(c)) => {
                        format!("  {t:.1} TFLOP/s, cuBLAS {c:.1} TFLOP/s ({:.3} of cuBLAS)", t / c)
                    }
                    (Some(t), None) => format!("  {t:.1} TFLOP/s (cuBLAS not available)"),
                    _ => String::new(),
                };
                println!(
                    "{:<34} {:>10.3} {:>10.0} {:>8.3}{extra}",
                    m.kernel, m.median_ms, m.gb_per_s, m.ratio_to_copy
                );
            }
        }
        Err(e) => {
            failures += 1;
            println!("FAIL {e}");
        }
    };
    if a.kernel == "all" || a.kernel == "copy-example" {
        emit(bench_copy(&gpu, a, cache.as_ref(), copy_gbs));
    }
    for (k, shape, dtype) in BENCH_SET {
        if a.kernel == "all" || a.kernel == *k {
            emit(ops_bench(&gpu, k, shape, *dtype, a.reps, copy_gbs));
        }
    }
    Ok(if failures == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
