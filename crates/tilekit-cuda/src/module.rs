//! PTX → cubin → module → kernel, with the JIT's logs kept, and launches.
//!
//! ```text
//!   PTX text ──cuLinkCreate/AddData/Complete──► cubin (+ info log, error log, JIT time)
//!                    (log verbose: registers, spills)        │
//!                                                            ├──► disk cache (crate::cache)
//!   cubin ──cuModuleLoadDataEx──► Module ──cuModuleGetFunction──► Kernel (regs, local bytes,
//!                                                                        static smem)
//!   Kernel + LaunchDims + KernelArgs ──cuLaunchKernel──► work on the Gpu's stream
//!                                     (cuLaunchKernelEx + programmatic serialization: PDL)
//! ```
//!
//! Dynamic shared memory above 48 KiB is allowed by raising the kernel's
//! `MAX_DYNAMIC_SHARED_SIZE_BYTES` attribute before the launch, up to the device's opt-in limit.
//!
//! **Programmatic dependent launch (PDL, Hopper).** Two kernels on one stream normally meet
//! like relay runners who must stop: the second grid is launched only after the last block of
//! the first has exited and its writes are flushed, and then its blocks still have to be
//! distributed and ramp up — a gap of a few microseconds per kernel boundary in which the
//! memory system idles (bench/NOTES.md §5: permute 512×512×256 bf16 runs at 0.985 of copy
//! inside the kernel, 0.90 between events, even ten calls back to back). With PDL the second
//! launch carries `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`: once every block of
//! the first grid has executed `griddepcontrol.launch_dependents` (or exited), the second
//! grid is launched *while the first drains*; its blocks run their prologue (parameters, index
//! arithmetic) and park at `griddepcontrol.wait`, which releases them the moment the first
//! grid has completed and its memory is visible — launch and ramp overlap the tail:
//!
//! ```text
//!   plain     grid A  |■■■■■■■■■■■■■■■■■■▄▂|
//!             grid B                          ·gap·|■■■■■■■■■■■■■■■■■■▄▂|
//!
//!   PDL       grid A  |■■■■■■■■■■■■■■■■■■▄▂|        ▲ every A block issued launch_dependents
//!             grid B              |prologue····wait|■■■■■■■■■■■■■■■■■■▄▂|
//!                                  (parked on free SM slots)  ▲ A complete + its writes visible
//! ```
//!
//! Correctness rests on the dependent, not on the primary: the wait is the only ordering, so
//! a kernel may be launched this way only if no global access of any thread comes before it —
//! what [`Kernel::waits_on_prior_grid`] records from the IR (`tilekit_ir::Kernel::
//! waits_on_prior_grid`: a top-level wait before every global access). A primary without a
//! trigger simply triggers when it completes, so a dependent after any kernel (cuBLAS's,
//! PyTorch's) is safe; and since each dependent completes only after its wait returned, a
//! chain A → B → C is ordered transitively. The trigger is a pure scheduling hint: its place
//! decides how early B's blocks take SM slots, never what they read. A primary's blocks are
//! all resident before the dependent is scheduled (every one must have triggered or exited),
//! so parked dependents cannot starve a primary whose blocks wait on each other. The launch
//! goes through `cuLaunchKernelEx` only when [`Gpu::set_programmatic_launch`] is on, the kernel
//! waits on the prior grid and the device is sm_90 or newer; cluster kernels keep their
//! compiled-in cluster shape (`.reqnctapercluster`: no cluster attribute is passed, as with
//! `cuLaunchKernel`).

use std::ffi::{c_void, CString};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys;

use crate::device::Gpu;
use crate::error::{CudaError, Result};

const LOG_BYTES: usize = 1 << 16;

/// What the JIT said about one kernel.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JitReport {
    /// The JIT's info log (with `LOG_VERBOSE`: registers, shared memory, spills per kernel).
    pub info_log: String,
    /// The JIT's error log (warnings too).
    pub error_log: String,
    /// Wall time of the JIT (PTX → cubin), measured on the host, in milliseconds.
    pub jit_ms: f32,
}

/// The environment variable naming the `ptxas` that builds cubins in place of the driver's JIT
/// ([`ptxas_to_cubin`], [`crate::compile::cubin_compiler`]; empty or `jit`: the driver's JIT):
/// the driver's linker JIT (`cuLink*`) has been seen to serialise every wgmma of a
/// warpgroup's chain (a `WARPGROUP.DEPBAR` after each `HGMMA`, bench/NOTES.md §16) where
/// ptxas 13.0 on the same PTX keeps them in flight.
pub const PTXAS_ENV: &str = "TILEKIT_CUBIN_PTXAS";

/// Compiles PTX to a cubin with an external `ptxas` (`-arch TARGET -O3`): the PTX goes to a
/// file in the temporary directory, ptxas writes the cubin beside it, both are removed; the
/// compiler's messages (warnings, `-v` resource lines) become the report's info log. A ptxas
/// that fails to start or rejects the PTX is [`CudaError::Jit`] with its output.
///
/// ```
/// let e = tilekit_cuda::module::ptxas_to_cubin(
///     std::path::Path::new("/no/such/ptxas"), ".version 8.0", "sm_90a", "k",
/// ).unwrap_err();
/// assert!(e.to_string().contains("/no/such/ptxas"), "{e}");
/// ```
pub fn ptxas_to_cubin(
    ptxas: &std::path::Path,
    ptx: &str,
    target: &str,
    kernel: &str,
) -> Result<(Vec<u8>, JitReport)> {
    let started = Instant::now();
    let stem = std::env::temp_dir().join(format!(
        "tilekit-{}-{}",
        std::process::id(),
        crate::cache::content_hash(ptx.as_bytes())
    ));
    let (src, out) = (stem.with_extension("ptx"), stem.with_extension("cubin"));
    let fail = |code: String, log: String| CudaError::Jit { kernel: kernel.into(), code, log };
    std::fs::write(&src, ptx)
        .map_err(|e| fail("writing the PTX".into(), format!("{}: {e}", src.display())))?;
    let run = std::process::Command::new(ptxas)
        .args(["-arch", target, "-O3", "-v", "-o"])
        .arg(&out)
        .arg(&src)
        .output();
    let _ = std::fs::remove_file(&src);
    let run = run.map_err(|e| fail(format!("{} did not start", ptxas.display()), e.to_string()))?;
    let log =
        String::from_utf8_lossy(&run.stderr).into_owned() + &String::from_utf8_lossy(&run.stdout);
    if !run.status.success() {
        let _ = std::fs::remove_file(&out);
        return Err(fail(format!("{} exited with {}", ptxas.display(), run.status), log));
    }
    let cubin = std::fs::read(&out)
        .map_err(|e| fail("reading the cubin".into(), format!("{}: {e}", out.display())))?;
    let _ = std::fs::remove_file(&out);
    let report = JitReport {
        info_log: log,
        error_log: String::new(),
        jit_ms: started.elapsed().as_secs_f32() * 1e3,
    };
    Ok((cubin, report))
}

/// Compiles PTX to a cubin for the current device with the driver's JIT.
pub fn jit_ptx_to_cubin(gpu: &Gpu, ptx: &str, kernel: &str) -> Result<(Vec<u8>, JitReport)> {
    gpu.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
    let src = CString::new(ptx).map_err(|_| CudaError::Jit {
        kernel: kernel.into(),
        code: "invalid PTX".into(),
        log: "the PTX text contains a NUL byte".into(),
    })?;
    let name = CString::new(kernel).unwrap_or_default();
    let mut info = vec![0u8; LOG_BYTES];
    let mut err = vec![0u8; LOG_BYTES];
    use sys::CUjit_option_enum as O;
    let mut opts = [
        O::CU_JIT_INFO_LOG_BUFFER,
        O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        O::CU_JIT_ERROR_LOG_BUFFER,
        O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        O::CU_JIT_LOG_VERBOSE,
    ];
    let mut vals: [*mut c_void; 5] = [
        info.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG_BYTES),
        err.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG_BYTES),
        // CU_JIT_LOG_VERBOSE takes the integer 1 in the pointer-sized value slot
        std::ptr::without_provenance_mut(1),
    ];
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    let started = Instant::now();
    // SAFETY: option arrays have equal lengths and live until cuLinkDestroy; the log buffers are
    // LOG_BYTES long as declared; `src` is NUL-terminated and outlives the call; the cubin
    // (`size` bytes at `cubin`) is valid until cuLinkDestroy and copied out before it.
    unsafe {
        sys::cuLinkCreate_v2(opts.len() as u32, opts.as_mut_ptr(), vals.as_mut_ptr(), &mut state)
            .result()
            .map_err(|e| CudaError::driver("cuLinkCreate", e))?;
        let add = sys::cuLinkAddData_v2(
            state,
            sys::CUjitInputType::CU_JIT_INPUT_PTX,
            src.as_ptr() as *mut c_void,
            src.as_bytes_with_nul().len(),
            name.as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let done = if add == sys::CUresult::CUDA_SUCCESS {
            sys::cuLinkComplete(state, &mut cubin, &mut size)
        } else {
            add
        };
        let report = JitReport {
            info_log: log_text(&info),
            error_log: log_text(&err),
            jit_ms: started.elapsed().as_secs_f32() * 1e3,
        };
        if done != sys::CUresult::CUDA_SUCCESS {
            sys::cuLinkDestroy(state);
            return Err(CudaError::Jit {
                kernel: kernel.into(),
                code: format!("{done:?}"),
                log: report.error_log,
            });
        }
        let bytes = std::slice::from_raw_parts(cubin as *const u8, size).to_vec();
        sys::cuLinkDestroy(state);
        Ok((bytes, report))
    }
}

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

/// A loaded module (unloaded when the last kernel from it is dropped, after the device has
/// finished all work queued on it: a launch of one of its kernels may still be queued).
#[derive(Debug)]
pub struct Module {
    module: sys::CUmodule,
    gpu: Gpu,
}

// SAFETY: a CUmodule handle may be used from any thread once its context is current; every use
// binds the context first.
unsafe impl Send for Module {}
// SAFETY: as above; the module is never mutated after loading.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if self.gpu.ctx.bind_to_thread().is_ok() {
            // SAFETY: the module was loaded by cuModuleLoadDataEx and is unloaded once, after
            // the context has run every launch queued before (none can be queued after: no
            // Kernel of it is left).
            unsafe {
                sys::cuCtxSynchronize();
                sys::cuModuleUnload(self.module);
            }
        }
    }
}

/// A kernel ready to launch, with what the driver reports about it.
#[derive(Debug, Clone)]
pub struct Kernel {
    function: sys::CUfunction,
    module: Arc<Module>,
    /// The kernel's entry name.
    pub name: String,
    /// Registers per thread.
    pub registers: i32,
    /// Local memory per thread in bytes (spills and stack).
    pub local_bytes: i32,
    /// Static shared memory in bytes.
    pub static_smem: i32,
    /// Largest block size the kernel can be launched with.
    pub max_threads_per_block: i32,
    /// Blocks per cluster the kernel requires (`.reqnctapercluster`; `(1, 1, 1)` without
    /// clusters). Launches group the grid into clusters of this shape.
    pub cluster: (u32, u32, u32),
    /// Every thread executes `griddepcontrol.wait` before its first global access
    /// (`tilekit_ir::Kernel::waits_on_prior_grid`, set by [`Gpu::compile`]; `false` for a
    /// kernel loaded from an image with [`load_kernel`]): it may be launched as a programmatic
    /// dependent ([`Gpu::set_programmatic_launch`]).
    pub waits_on_prior_grid: bool,
    /// Dynamic shared memory per block its launches need, in bytes: the emitter's layout of
    /// the IR's allocations when they pass the static limit (set by [`Gpu::compile`]; 0 for a
    /// kernel loaded from an image with [`load_kernel`]).
    pub dynamic_smem: u32,
}

// SAFETY: see Module; a CUfunction is an immutable handle into its module.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

/// Loads a cubin (or PTX) image and looks up one kernel.
pub fn load_kernel(gpu: &Gpu, image: &[u8], name: &str) -> Result<Kernel> {
    gpu.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
    let mut image = image.to_vec();
    if image.last() != Some(&0) {
        image.push(0); // PTX images must be NUL-terminated; cubins ignore the extra byte
    }
    let mut module: sys::CUmodule = std::ptr::null_mut();
    let mut err = vec![0u8; LOG_BYTES];
    let mut opts = [
        sys::CUjit_option_enum::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option_enum::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut vals: [*mut c_void; 2] =
        [err.as_mut_ptr().cast(), std::ptr::without_provenance_mut(LOG_BYTES)];
    // SAFETY: the image and the log buffer outlive the call; option arrays have equal lengths.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image.as_ptr().cast(),
            2,
            opts.as_mut_ptr(),
            vals.as_mut_ptr(),
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(CudaError::Jit {
            kernel: name.into(),
            code: format!("{r:?}"),
            log: log_text(&err),
        });
    }
    let module = Arc::new(Module { module, gpu: gpu.clone() });
    let cname = CString::new(name).map_err(|_| CudaError::Driver {
        call: "cuModuleGetFunction",
        code: "name has a NUL byte".into(),
    })?;
    let mut function: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: module is loaded; cname is NUL-terminated.
    unsafe { sys::cuModuleGetFunction(&mut function, module.module, cname.as_ptr()) }
        .result()
        .map_err(|e| CudaError::driver("cuModuleGetFunction", e))?;
    let attr = |a: sys::CUfunction_attribute| -> Result<i32> {
        let mut v = 0i32;
        // SAFETY: function is a valid handle; v is a live i32.
        unsafe { sys::cuFuncGetAttribute(&mut v, a, function) }
            .result()
            .map_err(|e| CudaError::driver("cuFuncGetAttribute", e))?;
        Ok(v)
    };
    use sys::CUfunction_attribute as F;
    Ok(Kernel {
        function,
        name: name.to_string(),
        registers: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        local_bytes: attr(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        static_smem: attr(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        max_threads_per_block: attr(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        cluster: (
            attr(F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)?.max(1) as u32,
            attr(F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)?.max(1) as u32,
            attr(F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)?.max(1) as u32,
        ),
        waits_on_prior_grid: false,
        dynamic_smem: 0,
        module,
    })
}

/// The most blocks a grid may have along x, y and z on every GPU tilekit targets (sm_80, sm_90).
///
/// ```
/// assert_eq!(tilekit_cuda::module::MAX_GRID, (2_147_483_647, 65_535, 65_535));
/// ```
pub const MAX_GRID: (u32, u32, u32) = (i32::MAX as u32, 65_535, 65_535);

/// Checks a grid against [`MAX_GRID`] (and that no dimension is 0) before the driver sees it,
/// with an error naming the kernel, the grid and the axis.
///
/// ```
/// use tilekit_cuda::module::check_grid;
/// assert!(check_grid("copy", (1, 65_535, 1)).is_ok());
/// let e = check_grid("copy", (1, 67_108_864, 1)).unwrap_err().to_string();
/// assert_eq!(e, "launch of copy: grid = (1, 67108864, 1) is invalid: y = 67108864 blocks is over the limit of 65535");
/// assert!(check_grid("copy", (0, 1, 1)).is_err());
/// ```
pub fn check_grid(kernel: &str, grid: (u32, u32, u32)) -> Result<()> {
    let bad = |rule: String| CudaError::BadLaunch {
        kernel: kernel.to_string(),
        field: "grid",
        value: format!("{grid:?}"),
        rule,
    };
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
        return Err(bad("every grid dimension must be at least 1".into()));
    }
    for (axis, v, max) in
        [("x", grid.0, MAX_GRID.0), ("y", grid.1, MAX_GRID.1), ("z", grid.2, MAX_GRID.2)]
    {
        if v > max {
            return Err(bad(format!("{axis} = {v} blocks is over the limit of {max}")));
        }
    }
    Ok(())
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks per grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block in bytes.
    pub dynamic_smem: u32,
}

/// Kernel arguments, each stored in an 8-byte slot (pointers and scalars of up to 8 bytes).
///
/// ```
/// use tilekit_cuda::KernelArgs;
/// let mut a = KernelArgs::new();
/// a.u32(7).i64(-1).f32(1.5);
/// assert_eq!(a.len(), 3);
/// ```
#[derive(Debug, Clone, Default)]
pub struct KernelArgs {
    slots: Vec<Slot>,
}

/// One kernel argument: an 8-byte slot, or a 128-byte tensor map passed by value.
#[derive(Debug, Clone)]
enum Slot {
    Word(u64),
    Map(Box<crate::tma::TensorMapBytes>),
}

impl KernelArgs {
    /// No arguments yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// A device pointer (see [`Gpu::device_ptr`]).
    pub fn ptr(&mut self, p: u64) -> &mut Self {
        self.slots.push(Slot::Word(p));
        self
    }
    /// A 32-bit unsigned scalar.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.slots.push(Slot::Word(u64::from(v)));
        self
    }
    /// A 32-bit signed scalar.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.slots.push(Slot::Word(u64::from(v as u32)));
        self
    }
    /// A 64-bit signed scalar.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.slots.push(Slot::Word(v as u64));
        self
    }
    /// A 32-bit float scalar.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.slots.push(Slot::Word(u64::from(v.to_bits())));
        self
    }
    /// An encoded tensor map (128 bytes, passed by value as a grid constant).
    pub fn tensor_map(&mut self, m: crate::tma::TensorMapBytes) -> &mut Self {
        self.slots.push(Slot::Map(Box::new(m)));
        self
    }
    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Whether a launch goes as a programmatic dependent of the kernel before it (see the module
/// essay): the kernel waits on the prior grid, [`Gpu::set_programmatic_launch`] is on, and the
/// device (compute capability `cc`) is sm_90 or newer.
///
/// ```
/// use tilekit_cuda::module::launches_programmatically as pdl;
/// assert!(pdl(true, true, (9, 0)));
/// assert!(pdl(true, true, (10, 0)));
/// assert!(!pdl(false, true, (9, 0))); // a kernel that may touch memory before its wait
/// assert!(!pdl(true, false, (9, 0))); // the setting is off
/// assert!(!pdl(true, true, (8, 6))); // no programmatic launch before Hopper
/// ```
pub fn launches_programmatically(waits_on_prior_grid: bool, enabled: bool, cc: (i32, i32)) -> bool {
    waits_on_prior_grid && enabled && cc.0 >= 9
}

/// The launch attribute that makes a `cuLaunchKernelEx` launch a programmatic dependent of the
/// kernel before it on the stream: `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`
/// with `programmaticStreamSerializationAllowed = 1`.
///
/// ```
/// use cudarc::driver::sys::CUlaunchAttributeID as Id;
/// let a = tilekit_cuda::module::programmatic_attribute();
/// assert_eq!(a.id, Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
/// // SAFETY (of the read): the attribute was built with this member of the union
/// assert_eq!(unsafe { a.value.programmaticStreamSerializationAllowed }, 1);
/// ```
pub fn programmatic_attribute() -> sys::CUlaunchAttribute {
    // SAFETY: CUlaunchAttribute is plain C data (an enum whose discriminant 0 is valid, padding
    // and a union of integers and arrays): all-zero bytes are a valid value
    let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
    a
}

/// The `cuLaunchKernelEx` configuration of a launch of `dims` on `stream` with `attrs` (which
/// must outlive the returned value's use: it holds a pointer to them).
///
/// ```
/// use tilekit_cuda::module::{launch_config, programmatic_attribute};
/// use tilekit_cuda::LaunchDims;
/// let dims = LaunchDims { grid: (4, 32, 512), block: (256, 1, 1), dynamic_smem: 0 };
/// let mut attrs = [programmatic_attribute()];
/// let c = launch_config(dims, std::ptr::null_mut(), &mut attrs);
/// assert_eq!((c.gridDimX, c.gridDimY, c.gridDimZ), (4, 32, 512));
/// assert_eq!((c.blockDimX, c.blockDimY, c.blockDimZ, c.sharedMemBytes), (256, 1, 1, 0));
/// assert_eq!((c.numAttrs, c.attrs), (1, attrs.as_mut_ptr()));
/// ```
pub fn launch_config(
    dims: LaunchDims,
    stream: sys::CUstream,
    attrs: &mut [sys::CUlaunchAttribute],
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: dims.grid.0,
        gridDimY: dims.grid.1,
        gridDimZ: dims.grid.2,
        blockDimX: dims.block.0,
        blockDimY: dims.block.1,
        blockDimZ: dims.block.2,
        sharedMemBytes: dims.dynamic_smem,
        hStream: stream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    }
}

impl Gpu {
    /// Launches a kernel on the Gpu's stream (asynchronously): as a programmatic dependent of
    /// the kernel before it when [`launches_programmatically`] says so (`cuLaunchKernelEx`),
    /// else with `cuLaunchKernel`.
    ///
    /// The argument slots are read by the driver during the call (little-endian: a 4-byte
    /// parameter reads the low half of its slot). Grid, block and shared memory are checked.
    ///
    /// # Safety
    /// `args` must hold exactly the kernel's parameters, in order and of their kinds (an
    /// 8-byte slot per scalar or pointer, a tensor map where the kernel takes one): the driver
    /// reads as many bytes as the kernel's parameter list says, so too few slots make it read
    /// past them. Every pointer must address device memory of this context that stays alive,
    /// and is not used by other streams without ordering, until the kernel completes, and
    /// must cover every element the kernel will touch with these arguments. The checked
    /// path is `tilekit_ops::backend::Backend::launch`, which binds tensors by name.
    ///
    /// Safe code cannot make this call (before issue 30 it could, and too few slots made the
    /// driver read past them):
    ///
    /// ```compile_fail,E0133
    /// fn go(gpu: &tilekit_cuda::Gpu, k: &tilekit_cuda::Kernel, d: tilekit_cuda::LaunchDims) {
    ///     let _ = gpu.launch(k, d, &tilekit_cuda::KernelArgs::new());
    /// }
    /// ```
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let ir = KernelBuilder::new("empty", [32, 1, 1]).unwrap().finish().unwrap();
    ///     let (k, _) = gpu.compile(&ir, None).unwrap();
    ///     let dims = tilekit_cuda::LaunchDims { grid: (1, 1, 1), block: (32, 1, 1), dynamic_smem: 0 };
    ///     // SAFETY: the kernel has no parameters and touches no memory
    ///     unsafe { gpu.launch(&k, dims, &tilekit_cuda::KernelArgs::new()) }.unwrap();
    /// }
    /// ```
    pub unsafe fn launch(
        &self,
        kernel: &Kernel,
        dims: LaunchDims,
        args: &KernelArgs,
    ) -> Result<()> {
        let threads = u64::from(dims.block.0) * u64::from(dims.block.1) * u64::from(dims.block.2);
        if threads == 0 || threads > kernel.max_threads_per_block as u64 {
            return Err(CudaError::BadLaunch {
                kernel: kernel.name.clone(),
                field: "threads per block",
                value: threads.to_string(),
                rule: format!("1..={} for this kernel", kernel.max_threads_per_block),
            });
        }
        check_grid(&kernel.name, dims.grid)?;
        let limit = self.props().max_smem_per_block_optin;
        if dims.dynamic_smem as i64 + kernel.static_smem as i64 > limit as i64 {
            return Err(CudaError::BadLaunch {
                kernel: kernel.name.clone(),
                field: "dynamic shared memory",
                value: format!("{} bytes (+{} static)", dims.dynamic_smem, kernel.static_smem),
                rule: format!("at most {} bytes in total on {}", limit, self.props().name),
            });
        }
        self.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
        if dims.dynamic_smem > 48 * 1024 {
            // SAFETY: valid function handle; the value is within the device's opt-in limit.
            unsafe {
                sys::cuFuncSetAttribute(
                    kernel.function,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dims.dynamic_smem as i32,
                )
            }
            .result()
            .map_err(|e| CudaError::driver("cuFuncSetAttribute", e))?;
        }
        let mut slots = args.slots.clone();
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| match s {
                Slot::Word(w) => (w as *mut u64).cast(),
                Slot::Map(m) => m.0.as_mut_ptr().cast(),
            })
            .collect();
        let _keep = &kernel.module;
        if kernel.cluster != (1, 1, 1) {
            self.prepare_cluster(kernel, dims)?;
        }
        let programmatic = launches_programmatically(
            kernel.waits_on_prior_grid,
            self.programmatic_launch(),
            self.props().compute_capability,
        );
        if programmatic {
            let mut attrs = [programmatic_attribute()];
            let config = launch_config(dims, self.stream.cu_stream(), &mut attrs);
            // SAFETY: `config` points at `attrs`, `params` into `slots`, all alive for the
            // whole call; the kernel's parameter list is the one the builder generated with
            // these arguments; the grid and block were checked above.
            return unsafe {
                sys::cuLaunchKernelEx(
                    &config,
                    kernel.function,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(|e| CudaError::driver("cuLaunchKernelEx", e));
        }
        // SAFETY: `params` points into `slots`, alive for the whole call; the kernel's parameter
        // list is the one the builder generated with these arguments.
        unsafe {
            cudarc::driver::result::launch_kernel(
                kernel.function,
                dims.grid,
                dims.block,
                dims.dynamic_smem,
                self.stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(|e| CudaError::driver("cuLaunchKernel", e))
    }

    /// How many blocks of `kernel`, launched with `threads` threads and `dynamic_smem` bytes of
    /// dynamic shared memory, one multiprocessor holds at once: the driver's occupancy
    /// calculator (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) for the compiled kernel — its
    /// real registers, shared memory and block size. Persistent kernels whose blocks wait for
    /// each other size their grids by it. Above 48 KiB of dynamic shared memory the kernel is
    /// first allowed that much (as [`Gpu::launch`] does), or the answer would be 0.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let b = KernelBuilder::new("k", [256, 1, 1])?;
    ///     let _ = b.shared("s", ScalarType::F32, 1024)?;
    ///     let (k, _) = gpu.compile(&b.finish()?, None)?;
    ///     assert!(gpu.max_active_blocks(&k, 256, 0)? >= 1);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn max_active_blocks(
        &self,
        kernel: &Kernel,
        threads: u32,
        dynamic_smem: u32,
    ) -> Result<u32> {
        self.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
        if dynamic_smem > 48 * 1024 {
            // SAFETY: valid function handle; the launch checks the value against the limit.
            unsafe {
                sys::cuFuncSetAttribute(
                    kernel.function,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_smem as i32,
                )
            }
            .result()
            .map_err(|e| CudaError::driver("cuFuncSetAttribute", e))?;
        }
        let mut blocks = 0i32;
        // SAFETY: valid function handle and out-pointer.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                kernel.function,
                threads as i32,
                dynamic_smem as usize,
            )
        }
        .result()
        .map_err(|e| CudaError::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        Ok(blocks.max(0) as u32)
    }

    /// How many clusters of a cluster kernel (its `.reqnctapercluster` shape), launched with
    /// `threads` threads a block and `dynamic_smem` bytes of dynamic shared memory, the whole
    /// device holds at once: the driver's `cuOccupancyMaxActiveClusters`, which knows how the
    /// GPCs pack clusters (a cluster's blocks all sit in one GPC). Times the cluster size, the
    /// blocks resident — at most [`Gpu::max_active_blocks`] × multiprocessors, less where
    /// clusters do not tile the GPCs. A kernel without clusters counts single blocks.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use tilekit_ir::{KernelBuilder, ScalarType};
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let b = KernelBuilder::new("k", [128, 1, 1])?;
    ///     b.set_cluster_dim([2, 1, 1])?;
    ///     let _ = b.shared("s", ScalarType::F32, 1024)?;
    ///     b.cluster_barrier()?;
    ///     let (k, _) = gpu.compile(&b.finish()?, None)?;
    ///     assert!(gpu.max_active_clusters(&k, 128, 0)? >= 1);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn max_active_clusters(
        &self,
        kernel: &Kernel,
        threads: u32,
        dynamic_smem: u32,
    ) -> Result<u32> {
        // the shared-memory allowance, as for blocks
        self.max_active_blocks(kernel, threads, dynamic_smem)?;
        let (cx, cy, cz) = kernel.cluster;
        allow_cluster_size(kernel, cx * cy * cz)?;
        let config = sys::CUlaunchConfig {
            gridDimX: cx,
            gridDimY: cy,
            gridDimZ: cz,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: dynamic_smem,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        let mut clusters = 0i32;
        // SAFETY: valid function handle, a fully initialised config without attributes (the
        // cluster shape is the kernel's own) and an out-pointer.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, kernel.function, &config) }
            .result()
            .map_err(|e| CudaError::driver("cuOccupancyMaxActiveClusters", e))?;
        Ok(clusters.max(0) as u32)
    }

    /// Before launching a cluster kernel (its cluster shape is compiled in, so the plain launch
    /// groups the grid): the grid must be a multiple of the cluster, and above 8 blocks per
    /// cluster the kernel is allowed a non-portable size.
    fn prepare_cluster(&self, kernel: &Kernel, dims: LaunchDims) -> Result<()> {
        let (cx, cy, cz) = kernel.cluster;
        let (gx, gy, gz) = dims.grid;
        if gx % cx != 0 || gy % cy != 0 || gz % cz != 0 {
            return Err(CudaError::BadLaunch {
                kernel: kernel.name.clone(),
                field: "grid",
                value: format!("{:?}", dims.grid),
                rule: format!("a multiple of the kernel's cluster dims {:?}", kernel.cluster),
            });
        }
        allow_cluster_size(kernel, cx * cy * cz)?;
        Ok(())
    }
}

/// Above 8 blocks a cluster (the portable limit), `kernel` is allowed a non-portable cluster
/// size (up to 16 on Hopper); at most 8, nothing to do.
fn allow_cluster_size(kernel: &Kernel, blocks: u32) -> Result<()> {
    if blocks > 8 {
        // SAFETY: valid function handle; 1 is a valid value of this attribute.
        unsafe {
            sys::cuFuncSetAttribute(
                kernel.function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
        }
        .result()
        .map_err(|e| CudaError::driver("cuFuncSetAttribute", e))?;
    }
    Ok(())
}
