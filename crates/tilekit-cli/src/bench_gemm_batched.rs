//! `tilekit bench gemm --batch B`: strided batches of small GEMMs, where a launch per entry
//! (~5 µs each) dominates, timed three ways in the same process.
//!
//! ```text
//!   B products C[e] = A[e]·B[e] of --gemm-shape M×N×K (default 512×512×512), bf16 and f16
//!   (or --dtype), A and B stored as --layout says (default nt: A row-major, B column-major),
//!   C row-major of the input type; each operand's entries packed one matrix after another
//!
//!   cuBLASLt strided batched   batch count + strided batch offsets on each matrix layout,
//!                              the best of the heuristic's first 8 algorithms
//!   tilekit batched            api::gemm_batched_into: one launch of the batched Hopper kernel
//!                              (GemmConfig::batched); its ratio to cuBLASLt
//!   tilekit per entry          api::gemm_ex on each entry in turn: B launches (what
//!                              gemm_batched_into did before); its ratio to the batched one
//!   TFLOP/s = 2·B·M·N·K / median; tilekit's C checked on 64 sampled elements (poisoned first)
//! ```

use std::process::ExitCode;

use tilekit_cuda::blas::{time_gemm_lt, LtSpec, Order};
use tilekit_cuda::{DeviceTensor, Gpu};
use tilekit_ir::tensor::{HostTensor, TensorLayout, TensorView};
use tilekit_ir::ScalarType;
use tilekit_ops::api::{self, GemmOptions};
use tilekit_ops::backend::{Backend as _, Cuda};
use tilekit_ops::host;

use crate::bench::Args;
use crate::bench_gemm::{parse_layout, parse_shape, ALGOS};
use crate::{outln, CliError};

/// The default problem of `--batch`: 512³ per entry.
///
/// ```
/// assert_eq!(tilekit_cli::bench_gemm_batched::DEFAULT_SHAPE, (512, 512, 512));
/// ```
pub const DEFAULT_SHAPE: (usize, usize, usize) = (512, 512, 512);

/// One row of `tilekit bench gemm --batch`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BatchedRow {
    /// `M×N×K` of one entry.
    pub shape: String,
    /// Entries.
    pub batch: usize,
    /// Input (and output) type.
    pub dtype: String,
    /// `--layout`.
    pub layout: String,
    /// Device name.
    pub device: String,
    /// cuBLASLt strided batched: TFLOP/s of its best algorithm.
    pub cublaslt_tflops: f64,
    /// tilekit, one launch for the batch.
    pub tilekit_batched_tflops: Option<f64>,
    /// `tilekit_batched_tflops / cublaslt_tflops`.
    pub ratio: Option<f64>,
    /// tilekit, one launch per entry.
    pub tilekit_per_entry_tflops: Option<f64>,
    /// `tilekit_batched_tflops / tilekit_per_entry_tflops` (the launches saved).
    pub speedup_over_per_entry: Option<f64>,
}

fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

/// The rank-3 view `batch × rows × cols` of an operand whose entries are stored
/// `stored_rows × stored_cols` row-major, packed: transposed per entry where the storage is the
/// other order.
fn entries(t: &DeviceTensor, order: Order) -> Result<DeviceTensor, String> {
    match order {
        Order::RowMajor => Ok(t.clone()),
        Order::ColMajor => t.transpose(1, 2).map_err(|e| e.to_string()),
    }
}

/// tilekit on `batch` products: (batched ms, per-entry ms), each checked on 64 sampled elements
/// of C against an f64 reference; `Err` names a wrong result or a failed call.
fn tilekit_ms(
    cuda: &Cuda,
    batch: usize,
    (m, n, k): (usize, usize, usize),
    orders: (Order, Order),
    ty: ScalarType,
    reps: usize,
) -> Result<(f64, f64), String> {
    let e = |e: tilekit_ops::OpsError| e.to_string();
    let (bi, mi, ni, ki) = (batch as i64, m as i64, n as i64, k as i64);
    // each operand's storage per entry: A M×K (row-major) or K×M; B K×N (row-major) or N×K
    let a_st = if orders.0 == Order::RowMajor { [bi, mi, ki] } else { [bi, ki, mi] };
    let b_st = if orders.1 == Order::RowMajor { [bi, ki, ni] } else { [bi, ni, ki] };
    let host_t = |shape: [i64; 3], seed| -> Result<HostTensor, String> {
        let len = shape.iter().product::<i64>() as usize;
        let layout = TensorLayout::contiguous(ty, shape.to_vec()).map_err(|x| x.to_string())?;
        HostTensor::new(host::random(ty, len, seed).map_err(e)?, layout).map_err(|x| x.to_string())
    };
    let (ah, bh) = (host_t(a_st, 41)?, host_t(b_st, 42)?);
    let (av, bv) = (host::to_f64(&ah.buffer()), host::to_f64(&bh.buffer()));
    let a = entries(&cuda.from_host(&ah).map_err(e)?, orders.0)?;
    let b = entries(&cuda.from_host(&bh).map_err(e)?, orders.1)?;
    let ch = HostTensor::new(
        host::poisoned(ty, batch * m * n).map_err(e)?,
        TensorLayout::contiguous(ty, vec![bi, mi, ni]).map_err(|x| x.to_string())?,
    )
    .map_err(|x| x.to_string())?;
    // 64 sampled elements of C against the f64 reference
    let check = |c: &DeviceTensor, what: &str| -> Result<(), String> {
        let got = host::to_f64(&cuda.to_host(c).map_err(e)?.buffer());
        let mut s = 0x2545_f491_u64;
        for _ in 0..64 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let (x, i, j) =
                ((s >> 5) as usize % batch, (s >> 23) as usize % m, (s >> 41) as usize % n);
            let at_a = |t: usize| match orders.0 {
                Order::RowMajor => av[(x * m + i) * k + t],
                Order::ColMajor => av[(x * k + t) * m + i],
            };
            let at_b = |t: usize| match orders.1 {
                Order::RowMajor => bv[(x * k + t) * n + j],
                Order::ColMajor => bv[(x * n + j) * k + t],
            };
            let want: f64 = (0..k).map(|t| at_a(t) * at_b(t)).sum();
            let tol =
                (0..k).map(|t| (at_a(t) * at_b(t)).abs()).sum::<f64>() * 8.0 * f32::EPSILON as f64
                    + want.abs() / 128.0
                    + 1e-6;
            let g = got[(x * m + i) * n + j];
            if (g - want).abs() > tol || g.is_nan() {
                return Err(format!("{what}: C[{x}][{i}][{j}] = {g}, reference {want}"));
            }
        }
        Ok(())
    };
    let opts = GemmOptions::<Cuda>::new();
    let mut c = cuda.from_host(&ch).map_err(e)?;
    let t = cuda
        .time(3, reps, |_| api::gemm_batched_into(cuda, &a, &b, &mut c, &opts))
        .map_err(|x| format!("batched: {x}"))?;
    check(&c, "batched")?;
    let batched = t.median_ms();
    let c = cuda.from_host(&ch).map_err(e)?;
    let entry = |t: &DeviceTensor, i: i64| -> tilekit_ops::Result<DeviceTensor> {
        let l = TensorView::layout(t);
        let layout = TensorLayout::strided(
            l.dtype(),
            l.shape()[1..].to_vec(),
            l.strides()[1..].to_vec(),
            l.offset() + i * l.strides()[0],
        )?;
        Ok(t.with_layout(layout)?)
    };
    let t = cuda
        .time(3, reps, |_| {
            for i in 0..bi {
                let mut ci = entry(&c, i)?;
                api::gemm_ex(cuda, &entry(&a, i)?, &entry(&b, i)?, &mut ci, &opts)?;
            }
            Ok(())
        })
        .map_err(|x| format!("per entry: {x}"))?;
    check(&c, "per entry")?;
    Ok((batched, t.median_ms()))
}

/// Runs `tilekit bench gemm --batch B`: the table (or JSON lines) on stdout; a failure is
/// reported on stderr as `FAIL …` and makes the exit code 1.
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let batch = a.batch.unwrap_or(1);
    if batch == 0 {
        return Err(CliError::BadArgument {
            flag: "--batch".into(),
            value: "0".into(),
            rule: "at least 1 product".into(),
        });
    }
    let (m, n, k) = match &a.gemm_shape {
        Some(text) => parse_shape(text)?,
        None => DEFAULT_SHAPE,
    };
    let types: Vec<ScalarType> = match a.dtype {
        Some(t @ (ScalarType::BF16 | ScalarType::F16)) => vec![t],
        Some(t) => {
            return Err(CliError::BadArgument {
                flag: "--dtype".into(),
                value: t.name().into(),
                rule: "bf16 or f16 with --batch (the Hopper kernel's types)".into(),
            })
        }
        None => vec![ScalarType::BF16, ScalarType::F16],
    };
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "bench gemm".into(), reason: e.to_string() })?;
    gpu.set_timed_calls(a.back_to_back);
    let cuda = Cuda::new(gpu.clone());
    let device = gpu.props().name.clone();
    let orders = parse_layout(&a.layout)?;
    let lay = a.layout.to_uppercase();
    if !a.json {
        outln!("device {device}; {batch} products per call, layout {lay}, C of the input type")?;
        outln!(
            "{:<14} {:>6} {:>5} {:>12} {:>14} {:>7} {:>14} {:>9}",
            "M×N×K",
            "batch",
            "dtype",
            "cuBLASLt",
            "tilekit batch",
            "ratio",
            "tk per entry",
            "speedup"
        )?;
    }
    let mut failed = false;
    for ty in types {
        let shape = format!("{m}x{n}x{k}");
        let spec = LtSpec { a: orders.0, b: orders.1, batch, ..LtSpec::new(m, n, k, ty) };
        let flops = spec.flops();
        eprintln!("  {batch} × {shape} {ty}: cuBLASLt strided batched …");
        let lt = match time_gemm_lt(&gpu, spec, ALGOS, a.reps) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("FAIL cuBLASLt {batch} × {shape} {ty}: {e}");
                failed = true;
                continue;
            }
        };
        eprintln!("  {batch} × {shape} {ty}: tilekit batched and per entry …");
        let ours = match tilekit_ms(&cuda, batch, (m, n, k), orders, ty, a.reps) {
            Ok(v) => Some(v),
            Err(why) => {
                eprintln!("FAIL tilekit batched {batch} × {shape} {ty}: {why}");
                failed = true;
                None
            }
        };
        let batched = ours.map(|(b, _)| tflops(flops, b));
        let per_entry = ours.map(|(_, p)| tflops(flops, p));
        let lt_tflops = tflops(flops, lt.best.median_ms());
        let row = BatchedRow {
            shape,
            batch,
            dtype: ty.name().into(),
            layout: a.layout.clone(),
            device: device.clone(),
            cublaslt_tflops: lt_tflops,
            tilekit_batched_tflops: batched,
            ratio: batched.map(|b| b / lt_tflops),
            tilekit_per_entry_tflops: per_entry,
            speedup_over_per_entry: batched.zip(per_entry).map(|(b, p)| b / p),
        };
        if a.json {
            crate::output::json_line(&row)?;
        } else {
            let opt = crate::output::cell;
            outln!(
                "{:<14} {:>6} {:>5} {:>12.1} {:>14} {:>7} {:>14} {:>9}",
                row.shape,
                row.batch,
                row.dtype,
                row.cublaslt_tflops,
                opt(row.tilekit_batched_tflops, 1),
                opt(row.ratio, 3),
                opt(row.tilekit_per_entry_tflops, 1),
                opt(row.speedup_over_per_entry, 2)
            )?;
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
