//! `tilekit bench launch`: the host cost of launching an already-compiled kernel through the
//! tensor API, beside the driver's own cost, in one run.
//!
//! ```text
//!   x, y: 1×256 f32 device tensors (the kernel's work is negligible: the host cost shows)
//!   rows, each: 200 warm-up calls, then --calls calls in 10 batches
//!               wall clock around each batch (no synchronisation inside), stream synchronised
//!               between batches; per call: mean over all calls, median and min over batches
//!     empty kernel, raw launch          Gpu::launch of an IR kernel with no parameters
//!     copy kernel, raw launch           Gpu::launch of the API's copy kernel, prebuilt KernelArgs
//!     api::copy_into(&cuda, &x, &mut y) plan (layout → key) + cache lookup + bind + launch
//!     api::copy(&cuda, &x)              the same plus allocating (and freeing) y
//!     api::copy_into on backend::Record the API's host work alone: plan + lookup + bind, no driver
//! ```
//!
//! The target of issue 11 is ≤ 10 µs per API call; the line after the table says how the
//! measured `api::copy_into` compares.

use std::process::ExitCode;
use std::time::Instant;

use tilekit_cuda::module::LaunchDims;
use tilekit_cuda::tensor::DeviceTensor;
use tilekit_cuda::{Gpu, KernelArgs};
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::{KernelBuilder, ScalarType};
use tilekit_ops::api;
use tilekit_ops::backend::{Backend, Cuda, LayoutTensor, Record, TensorIn, TensorOut};
use tilekit_ops::bind::Bindings;
use tilekit_ops::compiled::CompiledKernel;
use tilekit_ops::OpsError;

use crate::bench::Args;
use crate::{outln, CliError};

/// The API call's target host cost in microseconds (issue 11).
pub const TARGET_US: f64 = 10.0;

/// Warm-up calls before each row.
pub const WARMUP: usize = 200;

/// Batches each row's calls are split into.
pub const BATCHES: usize = 10;

/// One row of `tilekit bench launch`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LaunchCost {
    /// What was called.
    pub what: String,
    /// Device name.
    pub device: String,
    /// Calls timed.
    pub calls: usize,
    /// Mean wall-clock microseconds per call over all calls.
    pub mean_us: f64,
    /// Median over the batches of the batch's mean per call.
    pub median_us: f64,
    /// The fastest batch's mean per call.
    pub min_us: f64,
}

/// Per-call times of `calls` calls of `f` in [`BATCHES`] batches after [`WARMUP`] calls;
/// `between` runs after the warm-up and after each batch, outside the timed part
/// (synchronising the stream). Returns (mean, median, min) in µs per call.
///
/// ```
/// let (mean, median, min) = tilekit_cli::bench_launch::per_call(1000, || Ok(()), || Ok(())).unwrap();
/// assert!(min <= median && mean >= 0.0 && median < 1000.0);
/// ```
pub fn per_call(
    calls: usize,
    mut f: impl FnMut() -> Result<(), OpsError>,
    mut between: impl FnMut() -> Result<(), OpsError>,
) -> Result<(f64, f64, f64), OpsError> {
    for _ in 0..WARMUP {
        f()?;
    }
    between()?;
    let per = (calls / BATCHES).max(1);
    let mut batch_us = Vec::with_capacity(BATCHES);
    let mut total = 0.0;
    for _ in 0..BATCHES {
        let t = Instant::now();
        for _ in 0..per {
            f()?;
        }
        let s = t.elapsed().as_secs_f64();
        between()?;
        total += s;
        batch_us.push(s * 1e6 / per as f64);
    }
    batch_us.sort_by(|a, b| a.total_cmp(b));
    let n = batch_us.len();
    let median =
        if n % 2 == 1 { batch_us[n / 2] } else { (batch_us[n / 2 - 1] + batch_us[n / 2]) / 2.0 };
    Ok((total * 1e6 / (per * BATCHES) as f64, median, batch_us[0]))
}

/// A device tensor seen through another layout of the same memory (the raw baseline binds
/// the API's copy kernel by hand, as rank 3).
struct View<'t> {
    t: &'t DeviceTensor,
    layout: TensorLayout,
}

impl TensorIn<Cuda> for View<'_> {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn base_address(&self) -> u64 {
        self.t.device_ptr()
    }
    fn memory(&self) -> tilekit_ops::overlap::Memory {
        TensorIn::<Cuda>::memory(self.t)
    }
    fn bind_in<'a>(
        &'a self,
        b: &'a Cuda,
    ) -> tilekit_ops::Result<tilekit_ops::backend::DevicePtr<'a>>
    where
        Cuda: 'a,
    {
        TensorIn::<Cuda>::bind_in(self.t, b)
    }
}

struct ViewMut<'t> {
    t: &'t mut DeviceTensor,
    layout: TensorLayout,
}

impl TensorIn<Cuda> for ViewMut<'_> {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn base_address(&self) -> u64 {
        self.t.device_ptr()
    }
    fn memory(&self) -> tilekit_ops::overlap::Memory {
        TensorIn::<Cuda>::memory(&*self.t)
    }
    fn bind_in<'a>(
        &'a self,
        b: &'a Cuda,
    ) -> tilekit_ops::Result<tilekit_ops::backend::DevicePtr<'a>>
    where
        Cuda: 'a,
    {
        TensorIn::<Cuda>::bind_in(&*self.t, b)
    }
}

impl TensorOut<Cuda> for ViewMut<'_> {
    fn bind_out<'a>(
        &'a mut self,
        b: &'a Cuda,
    ) -> tilekit_ops::Result<tilekit_ops::backend::DevicePtr<'a>>
    where
        Cuda: 'a,
    {
        TensorOut::<Cuda>::bind_out(self.t, b)
    }
}

fn gpu_err(what: &'static str) -> impl Fn(OpsError) -> CliError {
    move |e| CliError::Gpu { what: format!("bench launch: {what}"), reason: e.to_string() }
}

/// The measurements of `tilekit bench launch` on an open GPU.
pub fn measure(gpu: &Gpu, calls: usize) -> Result<Vec<LaunchCost>, CliError> {
    let cuda = Cuda::new(gpu.clone());
    let dev = gpu.props().name.clone();
    let n = 256i64;
    let host: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.25).collect();
    let xh = HostTensor::from_slice(&host, &[1, n]).map_err(|e| gpu_err("input")(e.into()))?;
    let x = cuda.from_host(&xh).map_err(gpu_err("upload"))?;
    let mut y = cuda.empty(ScalarType::F32, &[1, n]).map_err(gpu_err("output"))?;
    let mut rows = Vec::new();
    let mut row = |what: &str, r: (f64, f64, f64)| {
        rows.push(LaunchCost {
            what: what.to_string(),
            device: dev.clone(),
            calls,
            mean_us: r.0,
            median_us: r.1,
            min_us: r.2,
        })
    };
    let sync = || cuda.synchronize();

    // the empty kernel, raw
    let empty = KernelBuilder::new("empty", [32, 1, 1])
        .and_then(|b| b.finish())
        .map_err(|e| gpu_err("empty kernel")(e.into()))?;
    let empty = cuda.loaded(&CompiledKernel::new(empty)).map_err(gpu_err("empty kernel"))?;
    let dims = LaunchDims { grid: (1, 1, 1), block: (32, 1, 1), dynamic_smem: 0 };
    let none = KernelArgs::new();
    let r = per_call(
        calls,
        // SAFETY: the empty kernel has no parameters and touches no memory
        || {
            unsafe { gpu.launch(&empty.kernel, dims, &none) }
                .map_err(|e| OpsError::Gpu(e.to_string()))
        },
        sync,
    )
    .map_err(gpu_err("empty kernel"))?;
    row("empty kernel, raw Gpu::launch", r);

    // the API's copy kernel (as the record backend sees the call), launched raw
    let rec = Record::new();
    let (lx, mut ly) = (
        LayoutTensor::new(x.layout().clone(), x.device_ptr()),
        LayoutTensor::new(y.layout().clone(), y.device_ptr()),
    );
    api::copy_into(&rec, &lx, &mut ly).map_err(gpu_err("plan"))?;
    let k = rec.take().pop().map(|l| l.kernel).ok_or_else(|| CliError::Check {
        what: "bench launch".into(),
        why: "api::copy_into launched nothing".into(),
    })?;
    let l3 = TensorLayout::strided(ScalarType::F32, vec![1, 1, n], vec![n, n, 1], 0)
        .map_err(|e| gpu_err("layout")(e.into()))?;
    {
        let xv = View { t: &x, layout: l3.clone() };
        let mut yv = ViewMut { t: &mut y, layout: l3 };
        let b = Bindings::new(&k)
            .input("x", &xv, &cuda)
            .and_then(|b| b.output("y", &mut yv, &cuda))
            .map_err(gpu_err("bind"))?;
        let grid = [
            tilekit_ops::host::blocks(n, tilekit_ops::copy::tile(ScalarType::F32).1)
                .map_err(gpu_err("grid"))?,
            1,
            1,
        ];
        let p = cuda.prepare_launch(&k, grid, b).map_err(gpu_err("prepare"))?;
        // SAFETY: x and y (bound above) live to the end of this function, past the
        // synchronisation that ends `per_call`, and only this stream uses them
        let r = per_call(calls, || unsafe { cuda.launch_prepared(&p) }, sync)
            .map_err(gpu_err("raw copy"))?;
        row("copy kernel, raw Gpu::launch (prebuilt args)", r);
    }
    check_copy(&cuda, &y, &host, "the raw launch")?;

    // the API, output passed in
    y = cuda.empty(ScalarType::F32, &[1, n]).map_err(gpu_err("output"))?;
    let r = per_call(calls, || api::copy_into(&cuda, &x, &mut y), sync)
        .map_err(gpu_err("api::copy_into"))?;
    row("api::copy_into(&cuda, &x, &mut y)", r);
    check_copy(&cuda, &y, &host, "api::copy_into")?;

    // the API, output allocated per call
    let mut last = None;
    let r = per_call(
        calls,
        || {
            last = Some(api::copy(&cuda, &x)?);
            Ok(())
        },
        sync,
    )
    .map_err(gpu_err("api::copy"))?;
    row("api::copy(&cuda, &x) (allocates y)", r);
    if let Some(y2) = &last {
        check_copy(&cuda, y2, &host, "api::copy")?;
    }

    // the API's host work alone
    let r = per_call(
        calls,
        || api::copy_into(&rec, &lx, &mut ly),
        || {
            rec.take();
            Ok(())
        },
    )
    .map_err(gpu_err("record backend"))?;
    row("api::copy_into on backend::Record (no driver)", r);
    Ok(rows)
}

fn check_copy(cuda: &Cuda, y: &DeviceTensor, want: &[f32], what: &str) -> Result<(), CliError> {
    let got = cuda.to_host(y).and_then(|t| Ok(t.to_vec::<f32>()?)).map_err(gpu_err("download"))?;
    if got != want {
        return Err(CliError::Check {
            what: "bench launch".into(),
            why: format!("{what} did not copy x into y"),
        });
    }
    Ok(())
}

/// Runs `tilekit bench launch`: a table (or JSON lines) of host costs per call; no usable GPU
/// is [`CliError::NoGpu`] (exit code 1).
pub fn run(a: &Args) -> Result<ExitCode, CliError> {
    let gpu = Gpu::open(a.device)
        .map_err(|e| CliError::NoGpu { command: "bench launch".into(), reason: e.to_string() })?;
    let rows = measure(&gpu, a.calls)?;
    if a.json {
        for r in &rows {
            let line = serde_json::to_string(r).map_err(|e| CliError::Check {
                what: r.what.clone(),
                why: format!("the measurement could not be written as JSON: {e}"),
            })?;
            outln!("{line}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "device {}; host cost per call, 1x256 f32, {} calls in {BATCHES} batches after {WARMUP} \
         warm-up calls",
        gpu.props().name,
        a.calls
    )?;
    outln!("{:<48} {:>9} {:>10} {:>8}", "call", "mean µs", "median µs", "min µs")?;
    for r in &rows {
        outln!("{:<48} {:>9.2} {:>10.2} {:>8.2}", r.what, r.mean_us, r.median_us, r.min_us)?;
    }
    if let Some(api) = rows.iter().find(|r| r.what.starts_with("api::copy_into(&cuda")) {
        let verdict = if api.median_us <= TARGET_US { "within" } else { "OVER" };
        outln!(
            "api::copy_into: {:.2} µs per call (median), {verdict} the target of {TARGET_US} µs",
            api.median_us
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
