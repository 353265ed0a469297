//! Where kernels run: the interpreter (default) or a GPU, chosen for a scope.
//!
//! Every kernel module builds its kernel and arguments, then calls [`crate::host::launch`];
//! that call runs on the executor of the current scope:
//!
//! ```text
//!   with_executor(Gpu(…), || transpose::launch(shape, dtype, seed))
//!        │                          │ build IR, random inputs, CPU reference
//!        │                          └─► host::launch(kernel, grid, args, out)
//!        └─ scope's executor ─────────► GpuExecutor::run: compile (PTX → JIT, cached), upload,
//!                                       launch (timed: warm-up + median of reps), download
//!   outside any scope ─────────────────► the interpreter
//! ```
//!
//! So `tilekit run --backend gpu`, `selftest` and `bench` use the same kernel code, inputs and
//! references as the interpreter tests.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use tilekit_cuda::{CompileReport, Gpu, KernelCache};
use tilekit_ir::interp::{Args, HostBuffer};
use tilekit_ir::Kernel;

use crate::error::{OpsError, Result};

/// Something that runs a kernel on arguments and returns the buffer at argument `out`.
pub trait Executor {
    /// Backend name (`interp`, `gpu`).
    fn name(&self) -> &'static str;
    /// Runs `kernel` over `grid`; returns argument `out` and the time the kernel took.
    fn run(
        &self,
        kernel: &Kernel,
        grid: [u32; 3],
        args: Args,
        out: usize,
    ) -> Result<(HostBuffer, Duration)>;
}

fn take_output(args: &mut Args, out: usize) -> Result<HostBuffer> {
    args.take_buffer(out)
        .ok_or_else(|| OpsError::invalid("launch", "output argument", out, "must be a buffer"))
}

/// The CPU interpreter.
#[derive(Debug, Clone, Copy, Default)]
pub struct Interp;

impl Executor for Interp {
    fn name(&self) -> &'static str {
        "interp"
    }
    fn run(
        &self,
        kernel: &Kernel,
        grid: [u32; 3],
        mut args: Args,
        out: usize,
    ) -> Result<(HostBuffer, Duration)> {
        let t = std::time::Instant::now();
        tilekit_ir::interp::run(kernel, grid, &mut args)?;
        let elapsed = t.elapsed();
        let buf = take_output(&mut args, out)?;
        Ok((buf, elapsed))
    }
}

/// What a GPU launch recorded (one per `run`).
#[derive(Debug, Clone)]
pub struct GpuRecord {
    /// Kernel name.
    pub kernel: String,
    /// How the kernel was built.
    pub compile: CompileReport,
    /// Registers per thread and local bytes (spills).
    pub registers: i32,
    /// Local memory per thread in bytes.
    pub local_bytes: i32,
    /// Median kernel time in milliseconds (one run when not timing).
    pub median_ms: f64,
    /// Bytes of all buffer arguments (each read or written once: the fewest bytes the kernel
    /// must move, for memory-bound kernels).
    pub bytes: u64,
    /// Grid.
    pub grid: [u32; 3],
}

/// A GPU: compiles through the kernel cache, times with CUDA events when asked.
pub struct GpuExecutor {
    gpu: Gpu,
    cache: Option<KernelCache>,
    timing: Option<(usize, usize)>,
    records: RefCell<Vec<GpuRecord>>,
}

impl GpuExecutor {
    /// Launches once per run (correctness).
    pub fn new(gpu: Gpu) -> Self {
        let cache = KernelCache::open(KernelCache::default_dir()).ok();
        GpuExecutor { gpu, cache, timing: None, records: RefCell::new(Vec::new()) }
    }
    /// Times each run: `warmup` launches, then the median of `reps` launches.
    pub fn timed(mut self, warmup: usize, reps: usize) -> Self {
        self.timing = Some((warmup, reps.max(1)));
        self
    }
    /// The device.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
    /// Records of the runs so far (drained).
    pub fn take_records(&self) -> Vec<GpuRecord> {
        std::mem::take(&mut self.records.borrow_mut())
    }
}

fn cuda(e: tilekit_cuda::CudaError) -> OpsError {
    OpsError::Gpu(e.to_string())
}

impl Executor for GpuExecutor {
    fn name(&self) -> &'static str {
        "gpu"
    }
    fn run(
        &self,
        kernel: &Kernel,
        grid: [u32; 3],
        mut args: Args,
        out: usize,
    ) -> Result<(HostBuffer, Duration)> {
        let (k, compile) = self.gpu.compile(kernel, self.cache.as_ref()).map_err(cuda)?;
        let bytes =
            (0..args.len()).filter_map(|i| args.get_buffer(i)).map(|b| b.size_bytes() as u64).sum();
        let dev = self.gpu.upload_args(kernel, &args).map_err(cuda)?;
        let median_ms = match self.timing {
            Some((w, r)) => {
                let t = self
                    .gpu
                    .time(w, r, |_| self.gpu.launch_ir(&k, kernel, grid, &dev))
                    .map_err(cuda)?;
                t.median_ms()
            }
            None => {
                let t = self
                    .gpu
                    .time(0, 1, |_| self.gpu.launch_ir(&k, kernel, grid, &dev))
                    .map_err(cuda)?;
                t.median_ms()
            }
        };
        // the output after warm-up and timed runs: kernels are idempotent (outputs are never inputs)
        self.gpu.download_args(&dev, &mut args).map_err(cuda)?;
        self.records.borrow_mut().push(GpuRecord {
            kernel: kernel.name.clone(),
            compile,
            registers: k.registers,
            local_bytes: k.local_bytes,
            median_ms,
            bytes,
            grid,
        });
        let buf = take_output(&mut args, out)?;
        Ok((buf, Duration::from_secs_f64(median_ms * 1e-3)))
    }
}

/// Records every kernel launched in its scope without running it (the output comes back as it
/// went in): how tests collect the exact kernels of a configuration, e.g. to assemble them.
#[derive(Debug, Default)]
pub struct Capture {
    kernels: RefCell<Vec<(Kernel, [u32; 3])>>,
}

impl Capture {
    /// The kernels launched so far, with their grids (drained).
    pub fn take(&self) -> Vec<(Kernel, [u32; 3])> {
        std::mem::take(&mut self.kernels.borrow_mut())
    }
}

impl Executor for Capture {
    fn name(&self) -> &'static str {
        "capture"
    }
    fn run(
        &self,
        kernel: &Kernel,
        grid: [u32; 3],
        mut args: Args,
        out: usize,
    ) -> Result<(HostBuffer, Duration)> {
        self.kernels.borrow_mut().push((kernel.clone(), grid));
        let buf = take_output(&mut args, out)?;
        Ok((buf, Duration::ZERO))
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<dyn Executor>>> = const { RefCell::new(None) };
}

/// Runs `f` with `ex` as the executor of every kernel launched inside it (on this thread).
///
/// ```
/// use std::rc::Rc;
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::exec::{with_executor, Interp};
/// let o = with_executor(Rc::new(Interp), || tilekit_ops::copy::launch(&[4, 8], ScalarType::F32, 1)).unwrap();
/// assert!(o.compare().passed);
/// ```
pub fn with_executor<R>(ex: Rc<dyn Executor>, f: impl FnOnce() -> R) -> R {
    let prev = CURRENT.with(|c| c.replace(Some(ex)));
    let r = f();
    CURRENT.with(|c| *c.borrow_mut() = prev);
    r
}

/// Runs a kernel on the current scope's executor (the interpreter outside any scope).
pub fn run_current(
    kernel: &Kernel,
    grid: [u32; 3],
    args: Args,
    out: usize,
) -> Result<(HostBuffer, Duration)> {
    let ex = CURRENT.with(|c| c.borrow().clone());
    match ex {
        Some(e) => e.run(kernel, grid, args, out),
        None => Interp.run(kernel, grid, args, out),
    }
}

/// The name of the current scope's executor.
///
/// ```
/// assert_eq!(tilekit_ops::exec::current_name(), "interp");
/// ```
pub fn current_name() -> &'static str {
    CURRENT.with(|c| c.borrow().as_ref().map_or("interp", |e| e.name()))
}
