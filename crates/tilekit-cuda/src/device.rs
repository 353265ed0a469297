//! Opening a GPU: driver detection, device properties, buffers, copies and synchronisation.
//!
//! ```text
//!   Gpu::open(0)
//!     ├─ libcuda present?  (cudarc dynamic loading; checked first, so a missing driver is
//!     │                      CudaError::NoDriver instead of a panic)
//!     ├─ device count > ordinal?  → CudaError::NoDevice
//!     └─ primary context + its default stream; properties read once
//! ```

use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as A;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, ValidAsZeroBits,
};

use crate::error::{CudaError, Result};

/// What tilekit reads off a device once, when it is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceProps {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Number of streaming multiprocessors.
    pub sm_count: i32,
    /// L2 cache size in bytes.
    pub l2_bytes: i32,
    /// Largest dynamic shared memory a block may opt in to, in bytes.
    pub max_smem_per_block_optin: i32,
    /// Total device memory in bytes.
    pub total_mem: usize,
    /// Driver version as the driver reports it (e.g. 13000 for CUDA 13.0).
    pub driver_version: i32,
}

impl DeviceProps {
    /// The PTX target name for this device (`sm_90a` for Hopper, else `sm_XY`).
    ///
    /// ```
    /// # use tilekit_cuda::DeviceProps;
    /// let p = DeviceProps { ordinal: 0, name: "NVIDIA H200".into(), compute_capability: (9, 0), sm_count: 132,
    ///     l2_bytes: 60 << 20, max_smem_per_block_optin: 232448, total_mem: 1 << 30, driver_version: 13000 };
    /// assert_eq!(p.target(), "sm_90a");
    /// ```
    pub fn target(&self) -> String {
        match self.compute_capability {
            (9, 0) => "sm_90a".to_string(),
            (a, b) => format!("sm_{a}{b}"),
        }
    }
}

/// An open GPU: a CUDA context, its stream and its properties.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    props: DeviceProps,
    /// Calls per timed repetition ([`Gpu::set_timed_calls`]), shared by every handle of
    /// this device made from one [`Gpu::open`].
    timed_calls: Arc<std::sync::atomic::AtomicUsize>,
    /// Whether kernels that wait on the prior grid are launched as programmatic dependents
    /// ([`Gpu::set_programmatic_launch`]), shared like `timed_calls`.
    programmatic: Arc<std::sync::atomic::AtomicBool>,
}

/// True when the CUDA driver library can be loaded on this machine.
///
/// ```
/// let present = tilekit_cuda::driver_present();
/// println!("CUDA driver present: {present}");
/// ```
pub fn driver_present() -> bool {
    // SAFETY: loads and immediately drops the driver library; no CUDA call is made.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl Gpu {
    /// Opens device `ordinal`. No driver or no such device is a typed error, not a panic.
    ///
    /// ```
    /// match tilekit_cuda::Gpu::open(0) {
    ///     Ok(g) => assert!(g.props().sm_count > 0),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    pub fn open(ordinal: usize) -> Result<Gpu> {
        if !driver_present() {
            return Err(CudaError::NoDriver {});
        }
        cudarc::driver::result::init().map_err(|e| CudaError::driver("cuInit", e))?;
        let count =
            CudaContext::device_count().map_err(|e| CudaError::driver("cuDeviceGetCount", e))?;
        if ordinal as i64 >= i64::from(count) {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| CudaError::driver("cuDevicePrimaryCtxRetain", e))?;
        let stream = ctx.default_stream();
        let attr =
            |a: A| ctx.attribute(a).map_err(|e| CudaError::driver("cuDeviceGetAttribute", e));
        let mut driver_version = 0i32;
        // SAFETY: the driver is loaded and initialised; the out pointer is a live i32.
        let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) };
        r.result().map_err(|e| CudaError::driver("cuDriverGetVersion", e))?;
        let props = DeviceProps {
            ordinal,
            name: ctx.name().map_err(|e| CudaError::driver("cuDeviceGetName", e))?,
            compute_capability: ctx
                .compute_capability()
                .map_err(|e| CudaError::driver("cuDeviceGetAttribute", e))?,
            sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            max_smem_per_block_optin: attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            total_mem: ctx.total_mem().map_err(|e| CudaError::driver("cuDeviceTotalMem", e))?,
            driver_version,
        };
        let timed_calls = Arc::new(std::sync::atomic::AtomicUsize::new(1));
        let programmatic = Arc::new(std::sync::atomic::AtomicBool::new(false));
        Ok(Gpu { ctx, stream, props, timed_calls, programmatic })
    }

    /// How many back-to-back calls [`Gpu::time`] (and `tilekit_ops::backend::Cuda::time`)
    /// puts between each pair of events, reporting the mean per call (default 1: one call
    /// between two events). A kernel of a few tens of microseconds timed alone pays the GPU's
    /// launch gap (the front end starting the grid after the event, ~3–5 µs on Hopper) in
    /// every repetition; a stream of calls, as a program issues them, pays only the gap
    /// between two kernels. Shared by every handle made from this one ([`Gpu::on_stream`]).
    /// Zero is taken as one.
    ///
    /// ```
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     gpu.set_timed_calls(10);
    ///     assert_eq!(gpu.new_stream().unwrap().timed_calls(), 10);
    ///     let t = gpu.time(1, 3, |_| Ok(())).unwrap();
    ///     assert_eq!(t.runs_ms.len(), 3);
    /// }
    /// ```
    pub fn set_timed_calls(&self, calls: usize) {
        self.timed_calls.store(calls.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// Calls per timed repetition ([`Gpu::set_timed_calls`]; 1 unless set).
    pub fn timed_calls(&self) -> usize {
        self.timed_calls.load(std::sync::atomic::Ordering::Relaxed).max(1)
    }

    /// Launches kernels that wait on the prior grid ([`crate::Kernel::waits_on_prior_grid`]:
    /// their IR has `griddepcontrol.wait` before every global access) as *programmatic
    /// dependents* of the kernel before them on the stream (`cuLaunchKernelEx` with
    /// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`), so that the GPU launches the
    /// next grid while the previous one drains instead of after it (see [`crate::module`]'s
    /// essay). Other kernels, and every kernel on a GPU before sm_90, keep the plain launch.
    /// Shared by every handle made from one [`Gpu::open`]. **Off by default**: it is correct
    /// for every kernel it applies to (the flag is only set where the wait precedes every
    /// global access), but it changes the launch path of the memory-bound kernels, pays only
    /// in streams of short kernels, and has not yet been validated on a GPU by the chain test
    /// and compute-sanitizer (bench/NOTES.md §19); turn it on with this setting or
    /// `tilekit bench --pdl`.
    ///
    /// ```
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     assert!(!gpu.programmatic_launch());
    ///     gpu.set_programmatic_launch(true);
    ///     assert!(gpu.new_stream().unwrap().programmatic_launch()); // shared by the handles
    /// }
    /// ```
    pub fn set_programmatic_launch(&self, on: bool) {
        self.programmatic.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether programmatic dependent launch is on ([`Gpu::set_programmatic_launch`]).
    pub fn programmatic_launch(&self) -> bool {
        self.programmatic.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The device's properties.
    pub fn props(&self) -> &DeviceProps {
        &self.props
    }

    /// The cudarc context (for cuBLAS handles and other libraries).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every tilekit operation runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The same device on another stream: work launched through the returned handle is ordered
    /// on `stream` (tensors, kernel caches and the context are shared).
    ///
    /// ```
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let side = gpu.on_stream(gpu.context().new_stream().unwrap());
    ///     assert_ne!(side.stream().cu_stream(), gpu.stream().cu_stream());
    /// }
    /// ```
    pub fn on_stream(&self, stream: Arc<CudaStream>) -> Gpu {
        Gpu {
            ctx: self.ctx.clone(),
            stream,
            props: self.props.clone(),
            timed_calls: self.timed_calls.clone(),
            programmatic: self.programmatic.clone(),
        }
    }

    /// The same device on a new non-blocking stream of its context.
    ///
    /// ```
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let side = gpu.new_stream().unwrap();
    ///     side.synchronize().unwrap();
    /// }
    /// ```
    pub fn new_stream(&self) -> Result<Gpu> {
        let s = self.ctx.new_stream().map_err(|e| CudaError::driver("cuStreamCreate", e))?;
        // the new stream starts after everything queued here so far: work queued while this
        // was the only stream recorded no uses (`tensor::StreamUses`), so it is ordered here
        let e =
            self.stream.record_event(None).map_err(|e| CudaError::driver("cuEventRecord", e))?;
        s.wait(&e).map_err(|e| CudaError::driver("cuStreamWaitEvent", e))?;
        Ok(self.on_stream(s))
    }

    /// The same device on a stream another library owns (PyTorch's current stream, say).
    ///
    /// # Safety
    /// `raw` must be a live `CUstream` of this device's primary context, kept alive by its owner
    /// while the returned handle (or anything made from it) launches work; ordering with work the
    /// owner submits elsewhere is the caller's.
    pub unsafe fn on_borrowed_stream(&self, raw: cudarc::driver::sys::CUstream) -> Gpu {
        // SAFETY: forwarded to the caller (see above)
        let s = unsafe { self.ctx.wrap_borrowed_stream(raw) };
        self.on_stream(s)
    }

    /// Records an event of the work queued on this stream so far; another stream can wait
    /// for it with [`Gpu::wait_event`].
    ///
    /// ```
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let side = gpu.new_stream().unwrap();
    ///     let done = gpu.record_event().unwrap();
    ///     side.wait_event(&done).unwrap();
    /// }
    /// ```
    pub fn record_event(&self) -> Result<cudarc::driver::CudaEvent> {
        self.stream.record_event(None).map_err(|e| CudaError::driver("cuEventRecord", e))
    }

    /// Makes this stream wait (on the device, the host does not block) for `event`.
    pub fn wait_event(&self, event: &cudarc::driver::CudaEvent) -> Result<()> {
        self.stream.wait(event).map_err(|e| CudaError::driver("cuStreamWaitEvent", e))
    }

    /// Copies host data to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        self.stream.clone_htod(data).map_err(|e| CudaError::driver("cuMemcpyHtoDAsync", e))
    }

    /// Copies a device buffer back to the host.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, buf: &CudaSlice<T>) -> Result<Vec<T>> {
        self.stream.clone_dtoh(buf).map_err(|e| CudaError::driver("cuMemcpyDtoHAsync", e))
    }

    /// Overwrites a device buffer with host data of the same length.
    pub fn write<T: DeviceRepr>(&self, data: &[T], buf: &mut CudaSlice<T>) -> Result<()> {
        if data.len() != buf.len() {
            return Err(CudaError::BadLaunch {
                kernel: "write".into(),
                field: "data length",
                value: data.len().to_string(),
                rule: format!("must equal the buffer length {}", buf.len()),
            });
        }
        self.stream.memcpy_htod(data, buf).map_err(|e| CudaError::driver("cuMemcpyHtoDAsync", e))
    }

    /// A zero-filled device buffer of `n` elements.
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>> {
        self.stream.alloc_zeros(n).map_err(|e| CudaError::driver("cuMemAllocAsync", e))
    }

    /// Device-to-device copy of a whole buffer (`cuMemcpyDtoDAsync`): the bandwidth baseline.
    pub fn copy<T: DeviceRepr>(&self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<()> {
        if dst.len() < src.len() {
            return Err(CudaError::BadLaunch {
                kernel: "copy".into(),
                field: "dst length",
                value: dst.len().to_string(),
                rule: format!("must be at least the source length {}", src.len()),
            });
        }
        self.stream.memcpy_dtod(src, dst).map_err(|e| CudaError::driver("cuMemcpyDtoDAsync", e))
    }

    /// The raw device address of a buffer (for kernel arguments).
    pub fn device_ptr<T>(&self, buf: &CudaSlice<T>) -> u64 {
        let (p, _sync) = buf.device_ptr(&self.stream);
        p
    }

    /// The raw device address of a buffer the kernel writes.
    pub fn device_ptr_mut<T>(&self, buf: &mut CudaSlice<T>) -> u64 {
        let (p, _sync) = buf.device_ptr_mut(&self.stream);
        p
    }

    /// Waits for all work on the stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(|e| CudaError::driver("cuStreamSynchronize", e))
    }
}
