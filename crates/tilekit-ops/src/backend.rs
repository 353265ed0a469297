//! Where kernels run on tensors: the CPU interpreter on host tensors, or a CUDA stream on
//! device tensors — one trait, so user code and tests are written once.
//!
//! ```text
//!   api::softmax(&backend, &x)            the same call on both backends
//!        │ plan: kernel key from x's layout (dtype, vectors the layout allows)
//!        │ compiled::cached(key) ──► CompiledKernel (IR built once per process)
//!        │ Bindings: x, y bound by name, checked (dtype, rank, vectors, index range)
//!        ▼
//!   Backend::launch(kernel, grid, bindings)
//!     Interp:  HostTensor (Arc'd bytes)  ─► interpreter (race-checked), outputs written back
//!     Cuda:    DeviceTensor (device ptr) ─► module cache (id → loaded kernel, per device)
//!                                           ─► cuLaunchKernel on the backend's stream, async
//! ```
//!
//! A [`Cuda`] backend is a device plus a stream: [`Cuda::new_stream`] gives another stream
//! sharing the module cache, [`Cuda::record_event`] / [`Cuda::wait_event`] order streams, and
//! [`Cuda::on_borrowed_stream`] launches on a stream another library owns (PyTorch's current
//! stream). Nothing is copied to or from the host by a launch.
//!
//! ```
//! use tilekit_ir::tensor::HostTensor;
//! use tilekit_ops::{api, backend::{Backend, Interp}};
//! let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
//! let y = api::transpose(&Interp, &x).unwrap();
//! assert_eq!(y.shape(), &[3, 2]);
//! assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
//! ```

use std::sync::{Arc, Mutex};

use tilekit_cuda::module::LaunchDims;
use tilekit_cuda::tensor::{tracks_uses, DeviceTensor, StreamUses};
use tilekit_cuda::{CompileReport, Gpu, KernelArgs, KernelCache, Timing};
use tilekit_ir::interp::{Args, HostBuffer};
use tilekit_ir::tensor::{Element, HostStorage, HostTensor, TensorError, TensorLayout, TensorView};
use tilekit_ir::{ParamKind, ScalarType};

use crate::bind::{Bindings, Slot};
use crate::compiled::CompiledKernel;
use crate::error::{OpsError, Result};
use crate::gemm_tuning::GemmTable;
use crate::overlap::{Memory, Space};
use crate::tuning::Tuning;

/// A place kernels run: allocates tensors, moves them to and from the host, launches.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::backend::{Backend, Interp};
/// let t = Interp.empty(ScalarType::F32, &[2, 3]).unwrap();
/// assert_eq!(t.shape(), &[2, 3]);
/// assert!(Interp.to_host(&t).unwrap().to_vec::<f32>().unwrap().iter().all(|v| v.is_nan())); // poisoned
/// ```
pub trait Backend {
    /// The tensor type of this backend.
    type Tensor: TensorIn<Self> + TensorOut<Self> + TensorView + Clone + std::fmt::Debug;
    /// How a bound input refers to memory.
    type In<'a>
    where
        Self: 'a;
    /// How a bound output refers to memory.
    type Out<'a>
    where
        Self: 'a;

    /// `interp` or `cuda`.
    fn name(&self) -> &'static str;
    /// A contiguous tensor whose contents are unspecified (the interpreter fills it with NaN
    /// or all-ones bits, so a kernel that misses an element is caught).
    fn empty(&self, dtype: ScalarType, shape: &[i64]) -> Result<Self::Tensor>;
    /// A contiguous tensor of zeros: what ops use for workspaces that must start at zero (the
    /// counters of the cooperative softmax, `reduce::coop`). The interpreter makes a zeroed
    /// host buffer; the GPU allocates and clears it in stream order (`cuMemAllocAsync` +
    /// `cuMemsetD8Async`), so a launch queued after it sees zeros.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::backend::{Backend, Interp};
    /// let t = Interp.zeros(ScalarType::U32, &[3]).unwrap();
    /// assert_eq!(Interp.to_vec::<u32>(&t).unwrap(), vec![0, 0, 0]);
    /// ```
    fn zeros(&self, dtype: ScalarType, shape: &[i64]) -> Result<Self::Tensor> {
        self.from_host(&HostTensor::zeros(dtype, shape)?)
    }
    /// `u32` counters of at least `len` elements, all zero, for kernels that **leave them at
    /// zero** when they end (the cooperative softmax with slices in shared memory wraps its
    /// ticket and row counters back to 0: `reduce::coop_smem`). The interpreter makes fresh
    /// zeros; the GPU keeps one buffer per backend and stream between calls, zeroed once when
    /// it is made or grown, so a call queues no memset. A kernel that may leave a counter
    /// nonzero must take [`zeros`](Self::zeros) instead.
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// let t = Interp.counters(3).unwrap();
    /// assert_eq!(Interp.to_vec::<u32>(&t).unwrap(), vec![0, 0, 0]);
    /// ```
    fn counters(&self, len: i64) -> Result<Self::Tensor> {
        self.zeros(ScalarType::U32, &[len])
    }
    /// A copy of a host tensor on this backend.
    #[allow(clippy::wrong_self_convention)] // `self` is the backend the tensor is made on
    fn from_host(&self, t: &HostTensor) -> Result<Self::Tensor>;
    /// A contiguous host copy (waits for queued work).
    fn to_host(&self, t: &Self::Tensor) -> Result<HostTensor>;
    /// Runs `kernel` over `grid` with bound arguments (asynchronously on a GPU).
    fn launch(
        &self,
        kernel: &CompiledKernel,
        grid: [u32; 3],
        args: Bindings<'_, Self>,
    ) -> Result<()>;
    /// Waits for everything queued (a no-op on the interpreter).
    fn synchronize(&self) -> Result<()>;

    /// The launch shapes the ops use on this backend's device (see [`crate::tuning`]).
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// assert_eq!(Interp.tuning(), tilekit_ops::tuning::Tuning::default());
    /// ```
    fn tuning(&self) -> Tuning {
        Tuning::default()
    }

    /// The tuned GEMM choices of this backend's device ([`crate::gemm_tuning`]): what
    /// `tilekit tune gemm --save` stored for it on a GPU, an empty table (every problem takes
    /// the heuristic) elsewhere.
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// assert!(Interp.gemm_table().entries.is_empty());
    /// ```
    fn gemm_table(&self) -> Arc<GemmTable> {
        static EMPTY: std::sync::OnceLock<Arc<GemmTable>> = std::sync::OnceLock::new();
        EMPTY.get_or_init(|| Arc::new(GemmTable::default())).clone()
    }

    /// Whether this backend runs sm_90a kernels (TMA, wgmma, clusters): a Hopper GPU, or the
    /// interpreter (which emulates them). Ops with a Hopper kernel pick it where this holds.
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// assert!(Interp.hopper());
    /// ```
    fn hopper(&self) -> bool {
        true
    }

    /// How many blocks of `kernel` one multiprocessor holds at once: on a GPU the driver's
    /// occupancy calculator for the compiled kernel (its real registers and shared memory); the
    /// interpreter backends estimate it from shared memory and threads
    /// ([`crate::reduce::resident_blocks`]). Persistent kernels whose blocks wait for each
    /// other size their grids by it, so every block is resident at once.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::backend::{Backend, Interp};
    /// use tilekit_ops::compiled::CompiledKernel;
    /// let k = tilekit_ops::reduce::ring::build_softmax_ring(ScalarType::BF16, 512, 4, (2, 2), (3, 1)).unwrap();
    /// assert_eq!(Interp.resident_blocks(&CompiledKernel::new(k)).unwrap(), 2); // 96 KiB of slots
    /// ```
    fn resident_blocks(&self, kernel: &CompiledKernel) -> Result<u32> {
        Ok(crate::reduce::resident_blocks(kernel.kernel()))
    }

    /// The streaming multiprocessors of the device: persistent kernels size their grids by it.
    /// The interpreter backends say 4, so persistent kernels walk several rows per block there.
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// assert_eq!(Interp.multiprocessors(), 4);
    /// ```
    fn multiprocessors(&self) -> u32 {
        4
    }

    /// A contiguous tensor of `shape` holding `data` (row-major), checked against the shape.
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// let t = Interp.from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    /// assert_eq!(Interp.to_vec::<f32>(&t).unwrap(), vec![1.0, 2.0, 3.0]);
    /// assert!(Interp.from_slice(&[1.0f32, 2.0], &[3]).is_err());
    /// ```
    #[allow(clippy::wrong_self_convention)] // `self` is the backend the tensor is made on
    fn from_slice<T: Element>(&self, data: &[T], shape: &[i64]) -> Result<Self::Tensor> {
        self.from_host(&HostTensor::from_slice(data, shape)?)
    }

    /// The elements of `t` in logical row-major order, checked that `T` is its dtype.
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Interp};
    /// let t = Interp.from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
    /// assert!(Interp.to_vec::<f32>(&t).is_err()); // i32 tensor
    /// ```
    fn to_vec<T: Element>(&self, t: &Self::Tensor) -> Result<Vec<T>> {
        Ok(self.to_host(t)?.to_vec::<T>()?)
    }
}

/// A tensor a kernel of backend `B` can read.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::backend::{Interp, TensorIn};
/// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
/// assert_eq!(TensorIn::<Interp>::layout(&x).shape(), &[2]);
/// ```
pub trait TensorIn<B: Backend + ?Sized> {
    /// Dtype, shape, strides and offset.
    fn layout(&self) -> &TensorLayout;
    /// The address of the storage's first byte, for alignment checks (0 on the host, whose
    /// buffers the interpreter treats as aligned).
    fn base_address(&self) -> u64;
    /// Where the storage lives, for the overlap checks of every op ([`crate::overlap`]):
    /// tensors that may share elements must say the same [`Memory::space`].
    fn memory(&self) -> Memory;
    /// The backend's handle of the memory, for one launch on `b` (on a GPU it holds the
    /// tensor's use until the launch is queued: [`Cuda`]).
    fn bind_in<'a>(&'a self, b: &'a B) -> Result<B::In<'a>>
    where
        B: 'a;
}

/// A tensor a kernel of backend `B` can write.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::backend::{Interp, TensorOut};
/// let mut y = HostTensor::from_slice(&[0.0f32; 2], &[2]).unwrap();
/// assert!(TensorOut::<Interp>::bind_out(&mut y, &Interp).is_ok());
/// ```
pub trait TensorOut<B: Backend + ?Sized>: TensorIn<B> {
    /// The backend's writable handle of the memory, for one launch on `b`.
    fn bind_out<'a>(&'a mut self, b: &'a B) -> Result<B::Out<'a>>
    where
        B: 'a;
}

// ------------------------------------------------------------------------------- interpreter

/// Host tensors are the tensors of an interpreter backend: bound as their own buffers.
macro_rules! host_tensors_on {
    ($b:ty) => {
        impl TensorIn<$b> for HostTensor {
            fn layout(&self) -> &TensorLayout {
                HostTensor::layout(self)
            }
            fn base_address(&self) -> u64 {
                0
            }
            fn memory(&self) -> Memory {
                Memory::host(self.storage().id())
            }
            fn bind_in<'a>(&'a self, _: &'a $b) -> Result<Arc<HostBuffer>>
            where
                $b: 'a,
            {
                Ok(self.buffer())
            }
        }

        impl TensorOut<$b> for HostTensor {
            fn bind_out<'a>(&'a mut self, _: &'a $b) -> Result<HostStorage>
            where
                $b: 'a,
            {
                Ok(self.storage().clone())
            }
        }
    };
}

/// The CPU interpreter: host tensors, every launch checked for races and out-of-bounds
/// accesses. Slow, exact, and available everywhere.
///
/// ```
/// use tilekit_ops::backend::{Backend, Interp};
/// assert_eq!(Interp.name(), "interp");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Interp;

host_tensors_on!(Interp);

fn from_offset(buf: &HostBuffer, offset: i64, elem: ScalarType) -> Result<HostBuffer> {
    let at = (offset.max(0) as usize) * elem.size_bytes();
    let bytes = buf.as_bytes().get(at..).unwrap_or(&[]).to_vec();
    HostBuffer::from_bytes(elem, bytes).ok_or_else(|| {
        OpsError::invalid("interpreter launch", "buffer", format!("{elem}"), "whole elements")
    })
}

impl Backend for Interp {
    type Tensor = HostTensor;
    type In<'a> = Arc<HostBuffer>;
    type Out<'a> = HostStorage;

    fn name(&self) -> &'static str {
        "interp"
    }

    fn empty(&self, dtype: ScalarType, shape: &[i64]) -> Result<HostTensor> {
        let layout = TensorLayout::contiguous(dtype, shape.to_vec())?;
        let buf = crate::host::poisoned(dtype, layout.numel() as usize)?;
        Ok(HostTensor::new(buf, layout)?)
    }

    fn from_host(&self, t: &HostTensor) -> Result<HostTensor> {
        // a storage of its own, as an upload makes (the bytes are copied on the first write)
        Ok(HostTensor::from_shared(t.buffer(), t.layout().clone())?)
    }

    fn to_host(&self, t: &HostTensor) -> Result<HostTensor> {
        Ok(t.contiguous()?)
    }

    fn launch(&self, kernel: &CompiledKernel, grid: [u32; 3], b: Bindings<'_, Self>) -> Result<()> {
        interp_launch(kernel, grid, b.finish()?)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

/// Runs `kernel` on the interpreter over bound host buffers and writes the outputs back.
fn interp_launch<'a, B>(
    kernel: &CompiledKernel,
    grid: [u32; 3],
    slots: Vec<Slot<'a, B>>,
) -> Result<()>
where
    B: Backend<In<'a> = Arc<HostBuffer>, Out<'a> = HostStorage> + ?Sized + 'a,
{
    let mut args = Args::new();
    let mut outs = Vec::new();
    for (i, s) in slots.into_iter().enumerate() {
        match s {
            Slot::In { mem, offset, elem } => {
                args.buffer(from_offset(&mem, offset, elem)?);
            }
            Slot::Out { mem, offset, elem } => {
                let before = mem.snapshot();
                args.buffer(from_offset(&before, offset, elem)?);
                outs.push((i, mem, offset, elem, before));
            }
            Slot::Int(v) => {
                args.int(v);
            }
            Slot::Scalar(l) => {
                args.scalar(l);
            }
            Slot::TensorMap(m) => {
                args.tensor_map(m);
            }
        }
    }
    tilekit_ir::interp::run(kernel.kernel(), grid, &mut args)?;
    // Only the bytes the kernel changed go back: two outputs over disjoint parts of one
    // storage (or an output beside an input) keep each other's elements, as on a device.
    for (i, mem, offset, elem, before) in outs {
        let got = args.take_buffer(i).ok_or_else(|| {
            OpsError::invalid("interpreter launch", "output", i, "must be a buffer")
        })?;
        let at = offset.max(0) as usize * elem.size_bytes();
        let changed = ChangedBytes::new(before.as_bytes().get(at..).unwrap_or(&[]), got.as_bytes());
        // the snapshot goes first, so the storage writes in place instead of copying itself
        drop(before);
        if changed.any {
            mem.write(|buf| {
                let dst = buf.as_bytes_mut().get_mut(at..).unwrap_or(&mut []);
                for (i, (d, &g)) in dst.iter_mut().zip(got.as_bytes()).enumerate() {
                    if changed.get(i) {
                        *d = g;
                    }
                }
            });
        }
    }
    Ok(())
}

/// Which bytes of a kernel's output differ from what the storage held before: one bit per
/// byte (an eighth of the output, not a second copy of it).
struct ChangedBytes {
    bits: Vec<u64>,
    any: bool,
}

impl ChangedBytes {
    fn new(old: &[u8], got: &[u8]) -> ChangedBytes {
        let n = old.len().min(got.len());
        let mut bits = vec![0u64; n.div_ceil(64)];
        let mut any = false;
        for (i, (o, g)) in old.iter().zip(got).enumerate() {
            if o != g {
                bits[i / 64] |= 1 << (i % 64);
                any = true;
            }
        }
        ChangedBytes { bits, any }
    }

    fn get(&self, i: usize) -> bool {
        self.bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }
}

/// The interpreter planning with a given [`Tuning`] (host tensors, as [`Interp`]): runs on the
/// CPU what a device with that tuning would launch, so tuned kernel choices are tested here.
///
/// ```
/// use tilekit_ir::tensor::HostTensor;
/// use tilekit_ops::{api, backend::{Backend, TunedInterp}, transpose::TransposeLoop, tuning::Tuning};
/// let lp = TransposeLoop { tiles_per_block: 2, buffers: 2, prefetch: true, min_blocks: 0, cache: tilekit_ir::GlobalCache::Default };
/// let b = TunedInterp(Tuning { transpose_loop_f32: lp, ..Tuning::default() });
/// assert_eq!(b.tuning().transpose_loop_f32, lp);
/// let x = HostTensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
/// let y = api::transpose(&b, &x).unwrap();
/// assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TunedInterp(pub Tuning);

host_tensors_on!(TunedInterp);

impl Backend for TunedInterp {
    type Tensor = HostTensor;
    type In<'a> = Arc<HostBuffer>;
    type Out<'a> = HostStorage;

    fn name(&self) -> &'static str {
        "interp (tuned)"
    }

    fn empty(&self, dtype: ScalarType, shape: &[i64]) -> Result<HostTensor> {
        Interp.empty(dtype, shape)
    }

    fn from_host(&self, t: &HostTensor) -> Result<HostTensor> {
        // a storage of its own, as an upload makes (the bytes are copied on the first write)
        Ok(HostTensor::from_shared(t.buffer(), t.layout().clone())?)
    }

    fn to_host(&self, t: &HostTensor) -> Result<HostTensor> {
        Ok(t.contiguous()?)
    }

    fn launch(&self, kernel: &CompiledKernel, grid: [u32; 3], b: Bindings<'_, Self>) -> Result<()> {
        interp_launch(kernel, grid, b.finish()?)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn tuning(&self) -> Tuning {
        self.0
    }
}

// ---------------------------------------------------------------------------------- record

/// A tensor of the [`Record`] backend: a layout (and a base address for alignment checks),
/// no data. Planning with it costs nothing however large the shape.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::backend::LayoutTensor;
/// let t = LayoutTensor::contiguous(ScalarType::F32, &[1 << 20, 1 << 10]).unwrap(); // 4 GiB, not allocated
/// assert_eq!(t.layout().numel(), 1 << 30);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutTensor {
    layout: TensorLayout,
    address: u64,
    space: u64,
}

/// A fresh [`Space::Record`] for a new [`LayoutTensor`].
fn record_space() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl LayoutTensor {
    /// A tensor of `layout` whose storage starts at byte `address`: a storage of its own
    /// (its views, [`with_layout`](Self::with_layout), share it; other tensors do not).
    ///
    /// ```
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// let l = TensorLayout::contiguous(ScalarType::F16, vec![4]).unwrap();
    /// assert_eq!(tilekit_ops::backend::LayoutTensor::new(l, 256).address(), 256);
    /// ```
    pub fn new(layout: TensorLayout, address: u64) -> LayoutTensor {
        LayoutTensor { layout, address, space: record_space() }
    }

    /// A row-major tensor of `shape` at address 0 (aligned, as fresh allocations are).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::backend::LayoutTensor::contiguous(ScalarType::F32, &[2, 3]).unwrap();
    /// assert_eq!(t.layout().strides(), &[3, 1]);
    /// ```
    pub fn contiguous(dtype: ScalarType, shape: &[i64]) -> Result<LayoutTensor> {
        Ok(LayoutTensor::new(TensorLayout::contiguous(dtype, shape.to_vec())?, 0))
    }

    /// The layout.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// let t = tilekit_ops::backend::LayoutTensor::contiguous(ScalarType::F32, &[5]).unwrap();
    /// assert_eq!(t.layout().shape(), &[5]);
    /// ```
    pub fn layout(&self) -> &TensorLayout {
        &self.layout
    }

    /// The storage's byte address.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// assert_eq!(tilekit_ops::backend::LayoutTensor::contiguous(ScalarType::F32, &[5]).unwrap().address(), 0);
    /// ```
    pub fn address(&self) -> u64 {
        self.address
    }

    /// The same storage seen through another layout (a permuted or broadcast view).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::backend::LayoutTensor;
    /// let t = LayoutTensor::contiguous(ScalarType::F32, &[2, 3]).unwrap();
    /// let v = t.with_layout(t.layout().transpose(0, 1).unwrap());
    /// assert_eq!(v.layout().strides(), &[1, 3]);
    /// ```
    pub fn with_layout(&self, layout: TensorLayout) -> LayoutTensor {
        LayoutTensor { layout, address: self.address, space: self.space }
    }
}

impl TensorIn<Record> for LayoutTensor {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn base_address(&self) -> u64 {
        self.address
    }
    fn memory(&self) -> Memory {
        Memory { space: Space::Record(self.space), base: self.address }
    }
    fn bind_in<'a>(&'a self, _: &'a Record) -> Result<()>
    where
        Record: 'a,
    {
        Ok(())
    }
}

impl TensorOut<Record> for LayoutTensor {
    fn bind_out<'a>(&'a mut self, _: &'a Record) -> Result<()>
    where
        Record: 'a,
    {
        Ok(())
    }
}

/// One launch a [`Record`] backend saw: the kernel and its grid.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The kernel.
    pub kernel: CompiledKernel,
    /// The grid.
    pub grid: [u32; 3],
}

/// A backend that runs nothing: every op plans, binds and checks its arguments as on any
/// backend, and the launch is recorded instead of run. `tilekit ptx` prints what it records
/// (the kernel and grid an op would launch for a shape, no data made); tests compare it with
/// real launches; `tilekit bench launch` times the API's host work with it.
///
/// ```
/// use tilekit_ir::ScalarType;
/// use tilekit_ops::{api, backend::{LayoutTensor, Record}};
/// let rec = Record::new();
/// let x = LayoutTensor::contiguous(ScalarType::F32, &[16384, 16384]).unwrap();
/// let y = api::transpose(&rec, &x).unwrap();
/// assert_eq!(y.layout().shape(), &[16384, 16384]);
/// let l = rec.take();
/// assert_eq!((l[0].kernel.kernel().name.as_str(), l[0].grid), ("transpose", [256, 256, 1]));
/// ```
#[derive(Debug, Default)]
pub struct Record {
    launches: std::cell::RefCell<Vec<Launch>>,
    tuning: Tuning,
    /// `None`: the interpreter's count (4).
    multiprocessors: Option<u32>,
}

impl Record {
    /// A recorder with nothing recorded.
    ///
    /// ```
    /// assert!(tilekit_ops::backend::Record::new().take().is_empty());
    /// ```
    pub fn new() -> Record {
        Record::default()
    }

    /// A recorder that plans with `tuning` (what a device with that tuning would launch).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{api, backend::{LayoutTensor, Record}, transpose::TransposeLoop};
    /// use tilekit_ops::tuning::Tuning;
    /// let lp = TransposeLoop { tiles_per_block: 4, buffers: 2, prefetch: false, min_blocks: 0, cache: tilekit_ir::GlobalCache::Default };
    /// let rec = Record::with_tuning(Tuning { transpose_loop_f32: lp, ..Tuning::default() });
    /// let x = LayoutTensor::contiguous(ScalarType::F32, &[16384, 16384]).unwrap();
    /// api::transpose(&rec, &x).unwrap();
    /// let l = rec.take();
    /// assert_eq!((l[0].kernel.kernel().name.as_str(), l[0].grid), ("transpose_tiled", [256, 64, 1]));
    /// ```
    pub fn with_tuning(tuning: Tuning) -> Record {
        Record { launches: Default::default(), tuning, multiprocessors: None }
    }

    /// The same recorder planning for a device of `n` multiprocessors (persistent grids and
    /// the cooperative softmax's residency bound depend on it; the default is the
    /// interpreter's 4).
    ///
    /// ```
    /// use tilekit_ops::backend::{Backend, Record};
    /// assert_eq!(Record::new().multiprocessors(), 4);
    /// assert_eq!(Record::new().on_multiprocessors(132).multiprocessors(), 132);
    /// ```
    pub fn on_multiprocessors(self, n: u32) -> Record {
        Record { multiprocessors: Some(n), ..self }
    }

    /// The launches recorded so far (drained).
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// use tilekit_ops::{api, backend::{LayoutTensor, Record}};
    /// let rec = Record::new();
    /// api::row_sum(&rec, &LayoutTensor::contiguous(ScalarType::F32, &[4, 100]).unwrap()).unwrap();
    /// assert_eq!(rec.take().len(), 1);
    /// assert!(rec.take().is_empty());
    /// ```
    pub fn take(&self) -> Vec<Launch> {
        std::mem::take(&mut self.launches.borrow_mut())
    }
}

impl TensorView for LayoutTensor {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn with_layout(&self, layout: TensorLayout) -> std::result::Result<Self, TensorError> {
        Ok(LayoutTensor { layout, address: self.address, space: self.space })
    }
}

impl Backend for Record {
    type Tensor = LayoutTensor;
    type In<'a> = ();
    type Out<'a> = ();

    fn name(&self) -> &'static str {
        "record"
    }

    fn empty(&self, dtype: ScalarType, shape: &[i64]) -> Result<LayoutTensor> {
        LayoutTensor::contiguous(dtype, shape)
    }

    fn from_host(&self, t: &HostTensor) -> Result<LayoutTensor> {
        Ok(LayoutTensor::new(t.layout().clone(), 0))
    }

    fn to_host(&self, t: &LayoutTensor) -> Result<HostTensor> {
        Err(OpsError::invalid(
            "record backend",
            "to_host",
            format!("a tensor of shape {:?}", t.layout.shape()),
            "the record backend holds layouts, not data: run on Interp or Cuda to read results",
        ))
    }

    fn launch(&self, kernel: &CompiledKernel, grid: [u32; 3], b: Bindings<'_, Self>) -> Result<()> {
        b.finish()?;
        self.launches.borrow_mut().push(Launch { kernel: kernel.clone(), grid });
        Ok(())
    }

    fn tuning(&self) -> Tuning {
        self.tuning
    }

    fn multiprocessors(&self) -> u32 {
        self.multiprocessors.unwrap_or(4)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

// ------------------------------------------------------------------------------------ CUDA

fn cuda(e: tilekit_cuda::CudaError) -> OpsError {
    OpsError::Gpu(e.to_string())
}

/// A loaded kernel and the dynamic shared memory its launches need.
#[derive(Debug, Clone)]
struct Loaded {
    kernel: Arc<tilekit_cuda::Kernel>,
    dynamic_smem: u32,
    report: Arc<CompileReport>,
}

/// What the driver reports about a kernel loaded on a [`Cuda`] device, and how it was built
/// (for `tilekit bench` and `selftest`).
#[derive(Debug, Clone)]
pub struct LoadedKernel {
    /// The loaded kernel: launch it with [`Gpu::launch`] (a raw launch, no checks of ours).
    pub kernel: Arc<tilekit_cuda::Kernel>,
    /// Dynamic shared memory per block its launches need, in bytes.
    pub dynamic_smem: u32,
    /// How it was built the first time this device loaded it (PTX, cache, JIT, load).
    pub compile: Arc<CompileReport>,
}

impl LoadedKernel {
    /// Registers per thread.
    pub fn registers(&self) -> i32 {
        self.kernel.registers
    }
    /// Local memory per thread in bytes (spills and stack).
    pub fn local_bytes(&self) -> i32 {
        self.kernel.local_bytes
    }
}

/// A launch made ready once (kernel loaded, arguments converted): [`Cuda::launch_prepared`]
/// replays it with nothing but the driver call. How `tilekit bench launch` measures the
/// driver's own cost beside the API's. Its arguments (raw addresses) cannot be reached or
/// swapped from outside:
///
/// ```compile_fail,E0616
/// fn args(p: &tilekit_ops::backend::PreparedLaunch) -> &tilekit_cuda::KernelArgs {
///     &p.args
/// }
/// ```
#[derive(Debug, Clone)]
pub struct PreparedLaunch {
    kernel: Arc<tilekit_cuda::Kernel>,
    dims: LaunchDims,
    args: KernelArgs,
}

impl PreparedLaunch {
    /// The loaded kernel.
    pub fn kernel(&self) -> &tilekit_cuda::Kernel {
        &self.kernel
    }

    /// Grid, block and dynamic shared memory.
    pub fn dims(&self) -> LaunchDims {
        self.dims
    }
}

/// A device pointer bound to a launch, with the device it belongs to and, for tilekit's own
/// allocations, their [`StreamUses`]: the launch stream waited for the last use when it was
/// bound, and the launch becomes the last use once queued.
#[derive(Debug, Clone, Copy)]
pub struct DevicePtr<'a> {
    /// Address of the storage's first byte.
    pub ptr: u64,
    /// CUDA ordinal of the device.
    pub ordinal: usize,
    uses: Option<&'a StreamUses>,
}

impl DevicePtr<'_> {
    /// A pointer into memory whose uses its owner orders (external memory).
    ///
    /// ```
    /// let p = tilekit_ops::backend::DevicePtr::external(0x1000, 0);
    /// assert_eq!((p.ptr, p.ordinal), (0x1000, 0));
    /// ```
    pub fn external(ptr: u64, ordinal: usize) -> DevicePtr<'static> {
        DevicePtr { ptr, ordinal, uses: None }
    }
}

/// A CUDA device and one of its streams, with a per-device cache of loaded kernels (shared
/// by every stream made from it). Launches are asynchronous and stream-ordered.
///
/// ```
/// use tilekit_ops::backend::Cuda;
/// match Cuda::open(0) {
///     Ok(cuda) => println!("on {}", cuda.gpu().props().name),
///     Err(e) => assert!(e.to_string().contains("GPU")), // no driver or device here
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Cuda {
    gpu: Gpu,
    modules: Arc<Mutex<crate::loaded::Lru<Loaded>>>,
    disk: Option<Arc<KernelCache>>,
    tuning: Tuning,
    tuning_source: crate::tuning::TuningSource,
    gemm_table: Arc<GemmTable>,
    gemm_source: crate::tuning::TuningSource,
    /// The self-resetting counters of this backend's stream ([`Backend::counters`]): a new
    /// stream gets its own (two streams must never share one).
    counters: Arc<Mutex<Option<DeviceTensor>>>,
}

impl Cuda {
    /// How many clusters of `kernel` (a cluster kernel) the device holds at once
    /// ([`tilekit_cuda::Gpu::max_active_clusters`]: the GPCs' packing of its clusters);
    /// `tilekit tune` prints it beside every cluster shape.
    ///
    /// ```
    /// use tilekit_ir::KernelBuilder;
    /// use tilekit_ops::backend::Cuda;
    /// use tilekit_ops::compiled::CompiledKernel;
    /// if let Ok(cuda) = Cuda::open(0) {
    ///     let b = KernelBuilder::new("k", [64, 1, 1]).unwrap();
    ///     b.set_cluster_dim([2, 1, 1]).unwrap();
    ///     b.cluster_barrier().unwrap();
    ///     let k = CompiledKernel::new(b.finish().unwrap());
    ///     assert!(cuda.resident_clusters(&k).unwrap() >= 1);
    /// }
    /// ```
    pub fn resident_clusters(&self, kernel: &CompiledKernel) -> Result<u32> {
        let l = self.load(kernel)?;
        let threads = kernel.kernel().block_dim.iter().product::<u32>();
        self.gpu.max_active_clusters(&l.kernel, threads, l.dynamic_smem).map_err(cuda)
    }

    /// Opens device `ordinal` on its default stream. No driver or device is
    /// [`OpsError::GpuUnavailable`].
    ///
    /// ```
    /// if let Err(e) = tilekit_ops::backend::Cuda::open(99) {
    ///     println!("{e}");
    /// }
    /// ```
    pub fn open(ordinal: usize) -> Result<Cuda> {
        let gpu = Gpu::open(ordinal).map_err(|e| OpsError::GpuUnavailable(e.to_string()))?;
        Ok(Cuda::new(gpu))
    }

    /// A backend on an open GPU (and its stream), with the on-disk kernel cache at its default
    /// place when that can be opened.
    ///
    /// ```
    /// if let Ok(gpu) = tilekit_cuda::Gpu::open(0) {
    ///     let cuda = tilekit_ops::backend::Cuda::new(gpu);
    ///     cuda.synchronize_stream().unwrap();
    /// }
    /// ```
    pub fn new(gpu: Gpu) -> Cuda {
        let disk = KernelCache::open(KernelCache::default_dir()).ok().map(Arc::new);
        let (mut tuning, tuning_source) =
            Tuning::resolve(&crate::tuning::default_dir(), &gpu.props().name);
        if gpu.props().compute_capability.0 < 9 {
            // thread-block clusters and bulk copies are sm_90 and later
            tuning.softmax_cluster = None;
            tuning.softmax_staged_bulk = false;
        }
        let (gemm_table, gemm_source) =
            GemmTable::resolve(&crate::tuning::default_dir(), &gpu.props().name);
        Cuda {
            gpu,
            modules: Arc::new(Mutex::new(
                crate::loaded::Lru::new(crate::loaded::DEFAULT_CAPACITY).expect("non-zero"),
            )),
            disk,
            tuning,
            tuning_source,
            gemm_table: Arc::new(gemm_table),
            gemm_source,
            counters: Arc::default(),
        }
    }

    /// Where this backend's GEMM choices came from: a file `tilekit tune gemm --save` wrote for
    /// the device, or none (heuristics; also when a saved file was unusable: the error is kept).
    ///
    /// ```
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     println!("gemm tuning: {}", cuda.gemm_tuning_source());
    /// }
    /// ```
    pub fn gemm_tuning_source(&self) -> &crate::tuning::TuningSource {
        &self.gemm_source
    }

    /// Where this backend's launch shapes came from: a file `tilekit tune --save` wrote for the
    /// device, or the built-in table (also when a saved file was unusable: the error is kept).
    ///
    /// ```
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     println!("tuning: {}", cuda.tuning_source());
    /// }
    /// ```
    pub fn tuning_source(&self) -> &crate::tuning::TuningSource {
        &self.tuning_source
    }

    /// The same backend with other launch shapes (what `tilekit tune` compares).
    ///
    /// ```
    /// use tilekit_ops::{backend::{Backend, Cuda}, tuning::Tuning};
    /// if let Ok(cuda) = Cuda::open(0) {
    ///     let t = Tuning { softmax_threads_bf16: 1024, ..cuda.tuning() };
    ///     assert_eq!(cuda.with_tuning(t).tuning().softmax_threads_bf16, 1024);
    /// }
    /// ```
    pub fn with_tuning(&self, tuning: Tuning) -> Cuda {
        Cuda { tuning, ..self.clone() }
    }

    /// The device (and the stream launches go to).
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// The same device on a new stream, sharing loaded kernels.
    ///
    /// ```
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     let side = cuda.new_stream().unwrap();
    ///     let ev = cuda.record_event().unwrap();
    ///     side.wait_event(&ev).unwrap();
    /// }
    /// ```
    pub fn new_stream(&self) -> Result<Cuda> {
        Ok(Cuda {
            gpu: self.gpu.new_stream().map_err(cuda)?,
            counters: Arc::default(),
            ..self.clone()
        })
    }

    /// The same device on a stream another library owns (a raw `CUstream`, e.g. PyTorch's
    /// `torch.cuda.current_stream().cuda_stream`), sharing loaded kernels.
    ///
    /// # Safety
    /// `raw` must be a live stream of this device's primary context for as long as the
    /// returned backend launches on it.
    pub unsafe fn on_borrowed_stream(&self, raw: u64) -> Cuda {
        // SAFETY: forwarded to the caller
        let gpu = unsafe {
            self.gpu.on_borrowed_stream(raw as tilekit_cuda::cudarc::driver::sys::CUstream)
        };
        Cuda { gpu, counters: Arc::default(), ..self.clone() }
    }

    /// Records the work queued so far on this stream.
    pub fn record_event(&self) -> Result<tilekit_cuda::cudarc::driver::CudaEvent> {
        self.gpu.record_event().map_err(cuda)
    }

    /// Makes this stream wait (on the device) for an event of another stream.
    pub fn wait_event(&self, e: &tilekit_cuda::cudarc::driver::CudaEvent) -> Result<()> {
        self.gpu.wait_event(e).map_err(cuda)
    }

    /// Waits on the host for this stream.
    pub fn synchronize_stream(&self) -> Result<()> {
        self.gpu.synchronize().map_err(cuda)
    }

    /// Number of kernels loaded on this device so far.
    pub fn loaded_count(&self) -> usize {
        self.modules.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn load(&self, k: &CompiledKernel) -> Result<Loaded> {
        if let Some(l) = self.modules.lock().unwrap_or_else(|p| p.into_inner()).get(k.id()) {
            return Ok(l.clone());
        }
        let (loaded, report) = self.gpu.compile(k.kernel(), self.disk.as_deref()).map_err(cuda)?;
        let l = Loaded {
            dynamic_smem: loaded.dynamic_smem,
            kernel: Arc::new(loaded),
            report: Arc::new(report),
        };
        let (kept, evicted) = {
            let mut m = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            let evicted = m.insert(k.id(), l.clone());
            (m.get(k.id()).cloned().unwrap_or(l), evicted)
        };
        // unloading waits for the device (tilekit_cuda::Module's drop): outside the lock
        drop(evicted);
        Ok(kept)
    }

    /// How many kernels this device keeps loaded at most (shared by every stream of it): past
    /// that, the least recently launched quarter is unloaded (and built again, from the disk
    /// cache, if it is launched again).
    ///
    /// ```
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     assert_eq!(cuda.kernel_capacity(), tilekit_ops::loaded::DEFAULT_CAPACITY);
    /// }
    /// ```
    pub fn kernel_capacity(&self) -> usize {
        self.modules.lock().unwrap_or_else(|p| p.into_inner()).capacity()
    }

    /// Keeps at most `capacity` kernels loaded on this device from now on (unloading the
    /// least recently used now if more are); zero is refused.
    ///
    /// ```
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     cuda.set_kernel_capacity(64).unwrap();
    ///     assert!(cuda.loaded_count() <= 64);
    ///     assert!(cuda.set_kernel_capacity(0).is_err());
    /// }
    /// ```
    pub fn set_kernel_capacity(&self, capacity: usize) -> Result<()> {
        let evicted =
            self.modules.lock().unwrap_or_else(|p| p.into_inner()).set_capacity(capacity).map_err(
                |_| OpsError::Invalid {
                    context: "Cuda::set_kernel_capacity".into(),
                    field: "capacity".into(),
                    value: capacity.to_string(),
                    rule: "a device keeps at least 1 kernel loaded".into(),
                },
            )?;
        drop(evicted);
        Ok(())
    }

    /// Compiles (PTX → cubin, through the disk cache) and loads `k` on this device now, so the
    /// first launch does not pay for it.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     let k = tilekit_ops::compiled::CompiledKernel::new(tilekit_ops::copy::build(ScalarType::F32, 4, 4).unwrap());
    ///     cuda.prepare(&k).unwrap();
    /// }
    /// ```
    pub fn prepare(&self, k: &CompiledKernel) -> Result<()> {
        self.load(k).map(|_| ())
    }

    /// The kernel `k` as loaded on this device (compiled and loaded now if it was not yet):
    /// registers, spills, how it was built.
    ///
    /// ```
    /// use tilekit_ir::ScalarType;
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     let k = tilekit_ops::compiled::CompiledKernel::new(tilekit_ops::copy::build(ScalarType::F32, 4, 4).unwrap());
    ///     let info = cuda.loaded(&k).unwrap();
    ///     assert!(info.registers() > 0);
    /// }
    /// ```
    pub fn loaded(&self, k: &CompiledKernel) -> Result<LoadedKernel> {
        let l = self.load(k)?;
        Ok(LoadedKernel { kernel: l.kernel, dynamic_smem: l.dynamic_smem, compile: l.report })
    }

    /// Converts bound arguments into a [`PreparedLaunch`] of `kernel` over `grid` (loading the
    /// kernel), without launching.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, ScalarType};
    /// use tilekit_ops::{backend::{Backend, Cuda}, bind::Bindings, compiled::CompiledKernel, copy};
    /// if let Ok(cuda) = Cuda::open(0) {
    ///     let k = CompiledKernel::new(copy::build(ScalarType::F32, 4, 4).unwrap());
    ///     let x = cuda.from_host(&HostTensor::from_slice(&[1.0f32; 8], &[1, 2, 4]).unwrap()).unwrap();
    ///     let mut y = cuda.empty(ScalarType::F32, &[1, 2, 4]).unwrap();
    ///     let b = Bindings::new(&k).input("x", &x, &cuda).unwrap().output("y", &mut y, &cuda).unwrap();
    ///     let p = cuda.prepare_launch(&k, [1, 1, 1], b).unwrap();
    ///     // SAFETY: x and y are alive and used by this stream alone until the download below
    ///     unsafe { cuda.launch_prepared(&p) }.unwrap();
    ///     assert_eq!(cuda.to_host(&y).unwrap().to_vec::<f32>().unwrap(), vec![1.0; 8]);
    /// }
    /// ```
    pub fn prepare_launch(
        &self,
        kernel: &CompiledKernel,
        grid: [u32; 3],
        b: Bindings<'_, Self>,
    ) -> Result<PreparedLaunch> {
        Ok(self.prepare_with_uses(kernel, grid, b)?.0)
    }

    /// [`prepare_launch`](Self::prepare_launch), with the [`StreamUses`] of the tilekit
    /// allocations bound (what the launch must be recorded in).
    fn prepare_with_uses<'a>(
        &self,
        kernel: &CompiledKernel,
        grid: [u32; 3],
        b: Bindings<'a, Self>,
    ) -> Result<(PreparedLaunch, Vec<&'a StreamUses>)> {
        let loaded = self.load(kernel)?;
        let ir = kernel.kernel();
        let slots = b.finish()?;
        let uses: Vec<&StreamUses> = slots
            .iter()
            .filter_map(|s| match s {
                Slot::In { mem, .. } | Slot::Out { mem, .. } => mem.uses,
                _ => None,
            })
            .collect();
        // the address of each bound tensor, for the tensor maps that view it
        let addrs: Vec<Option<u64>> = slots
            .iter()
            .map(|s| match s {
                Slot::In { mem, offset, elem } | Slot::Out { mem, offset, elem } => {
                    Some(mem.ptr + *offset as u64 * elem.size_bytes() as u64)
                }
                _ => None,
            })
            .collect();
        let mut args = KernelArgs::new();
        for (s, p) in slots.into_iter().zip(&ir.params) {
            match s {
                Slot::TensorMap(m) => {
                    let ParamKind::TensorMap { spec, global } = p.kind else {
                        return Err(OpsError::invalid(
                            "launch",
                            "tensor map",
                            &p.name,
                            "bound to a tensor-map parameter",
                        ));
                    };
                    let addr = addrs.get(global as usize).copied().flatten().ok_or_else(|| {
                        OpsError::invalid(
                            "launch",
                            "tensor map",
                            &p.name,
                            "a map over a bound tensor",
                        )
                    })?;
                    args.tensor_map(
                        self.gpu.encode_tensor_map(&p.name, &spec, &m, addr).map_err(cuda)?,
                    );
                }
                Slot::In { mem, offset, elem } | Slot::Out { mem, offset, elem } => {
                    args.ptr(mem.ptr + offset as u64 * elem.size_bytes() as u64);
                }
                Slot::Int(v) => match p.kind {
                    ParamKind::Scalar(ScalarType::I64) => {
                        args.i64(v);
                    }
                    _ => {
                        args.u32(v as u32);
                    }
                },
                Slot::Scalar(l) => {
                    args.i64(l.bits() as i64);
                }
            }
        }
        let [x, y, z] = ir.block_dim;
        let dims = LaunchDims {
            grid: (grid[0], grid[1], grid[2]),
            block: (x, y, z),
            dynamic_smem: loaded.dynamic_smem,
        };
        Ok((PreparedLaunch { kernel: loaded.kernel, dims, args }, uses))
    }

    /// Launches a [`PreparedLaunch`] on this backend's stream: the driver call alone.
    ///
    /// # Safety
    /// Every tensor bound when `p` was prepared must still be alive (not freed, not reused)
    /// until the launch completes, and work on other streams that uses them must be ordered
    /// with this stream by the caller: `p` holds their raw addresses, not the tensors. Nothing
    /// is recorded for later frees or other streams ([`StreamUses`]); [`Backend::launch`]
    /// does all of that and is safe.
    pub unsafe fn launch_prepared(&self, p: &PreparedLaunch) -> Result<()> {
        // SAFETY: the arguments were converted from the kernel's own bound parameters by
        // `prepare` (count and kinds match its parameter list); the memory's liveness is the
        // caller's contract above
        unsafe { self.gpu.launch(&p.kernel, p.dims, &p.args) }.map_err(cuda)
    }

    /// Times `f` on this backend's stream with CUDA events: `warmup` calls, then `reps`
    /// repetitions of [`Gpu::timed_calls`](tilekit_cuda::Gpu::timed_calls) back-to-back calls
    /// (1 unless set) each between two events, reported per call (one synchronisation at the
    /// end); `f` gets the call number. How `tilekit bench` and `selftest` time API calls.
    ///
    /// ```
    /// if let Ok(cuda) = tilekit_ops::backend::Cuda::open(0) {
    ///     let t = cuda.time(1, 3, |_| Ok(())).unwrap();
    ///     assert_eq!(t.runs_ms.len(), 3);
    /// }
    /// ```
    pub fn time(
        &self,
        warmup: usize,
        reps: usize,
        mut f: impl FnMut(usize) -> Result<()>,
    ) -> Result<Timing> {
        use tilekit_cuda::cudarc::driver::sys::CUevent_flags;
        if reps == 0 {
            return Err(OpsError::invalid("timing", "reps", 0, "at least one timed repetition"));
        }
        for i in 0..warmup {
            f(i)?;
        }
        let ev = |what: &str, e: tilekit_cuda::cudarc::driver::DriverError| {
            OpsError::Gpu(format!("{what}: {e}"))
        };
        let mut events = Vec::with_capacity(2 * reps);
        for _ in 0..2 * reps {
            events.push(
                self.gpu
                    .context()
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .map_err(|e| ev("cuEventCreate", e))?,
            );
        }
        let calls = self.gpu.timed_calls();
        for i in 0..reps {
            events[2 * i].record(self.gpu.stream()).map_err(|e| ev("cuEventRecord", e))?;
            for j in 0..calls {
                f(warmup + i * calls + j)?;
            }
            events[2 * i + 1].record(self.gpu.stream()).map_err(|e| ev("cuEventRecord", e))?;
        }
        self.synchronize_stream()?;
        let mut runs_ms = Vec::with_capacity(reps);
        for i in 0..reps {
            runs_ms.push(
                events[2 * i]
                    .elapsed_ms(&events[2 * i + 1])
                    .map_err(|e| ev("cuEventElapsedTime", e))?
                    / calls as f32,
            );
        }
        Ok(Timing { runs_ms })
    }

    fn check_device(&self, t: &DeviceTensor) -> Result<()> {
        check_ordinal(self, t.gpu().props().ordinal)
    }
}

impl TensorIn<Cuda> for DeviceTensor {
    fn layout(&self) -> &TensorLayout {
        DeviceTensor::layout(self)
    }
    fn base_address(&self) -> u64 {
        self.device_ptr()
    }
    fn memory(&self) -> Memory {
        Memory::device(self.gpu().props().ordinal, self.device_ptr())
    }
    fn bind_in<'a>(&'a self, b: &'a Cuda) -> Result<DevicePtr<'a>>
    where
        Cuda: 'a,
    {
        b.check_device(self)?;
        let uses = self.uses();
        if let Some(u) = uses {
            // the launch stream waits for the last use on any stream (a write elsewhere); also
            // once the other streams are gone (back in single-stream mode a recorded use may
            // still be running): nothing is recorded, and nothing waited for, where no second
            // stream was ever made
            u.wait_on(b.gpu.stream()).map_err(cuda)?;
        }
        Ok(DevicePtr { ptr: self.device_ptr(), ordinal: b.gpu.props().ordinal, uses })
    }
}

fn check_ordinal(b: &Cuda, theirs: usize) -> Result<()> {
    let mine = b.gpu.props().ordinal;
    if mine != theirs {
        return Err(OpsError::invalid(
            "cuda launch",
            "tensor device",
            format!("cuda:{theirs}"),
            format!("the backend runs on cuda:{mine}; move the tensor there first"),
        ));
    }
    Ok(())
}

/// Borrowed cudarc memory as an op's input: the tensor knows its address and device.
macro_rules! borrowed_input {
    ($t:ty) => {
        impl TensorIn<Cuda> for $t {
            fn layout(&self) -> &TensorLayout {
                <$t>::layout(self)
            }
            fn base_address(&self) -> u64 {
                self.device_ptr()
            }
            fn memory(&self) -> Memory {
                Memory::device(self.ordinal(), self.device_ptr())
            }
            fn bind_in<'a>(&'a self, b: &'a Cuda) -> Result<DevicePtr<'a>>
            where
                Cuda: 'a,
            {
                check_ordinal(b, self.ordinal())?;
                Ok(DevicePtr::external(self.device_ptr(), self.ordinal()))
            }
        }
    };
}

// a cudarc program's `CudaSlice`/`CudaView` borrowed (input), or a `CudaSlice` borrowed
// mutably (input or output)
borrowed_input!(tilekit_cuda::DeviceTensorRef<'_>);
borrowed_input!(tilekit_cuda::DeviceTensorMut<'_>);

impl TensorOut<Cuda> for tilekit_cuda::DeviceTensorMut<'_> {
    fn bind_out<'a>(&'a mut self, b: &'a Cuda) -> Result<DevicePtr<'a>>
    where
        Cuda: 'a,
    {
        self.bind_in(b)
    }
}

impl TensorOut<Cuda> for DeviceTensor {
    fn bind_out<'a>(&'a mut self, b: &'a Cuda) -> Result<DevicePtr<'a>>
    where
        Cuda: 'a,
    {
        self.bind_in(b)
    }
}

impl Backend for Cuda {
    type Tensor = DeviceTensor;
    type In<'a> = DevicePtr<'a>;
    type Out<'a> = DevicePtr<'a>;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn tuning(&self) -> Tuning {
        self.tuning
    }

    fn gemm_table(&self) -> Arc<GemmTable> {
        self.gemm_table.clone()
    }

    fn multiprocessors(&self) -> u32 {
        self.gpu.props().sm_count.max(1) as u32
    }

    fn hopper(&self) -> bool {
        self.gpu.props().compute_capability.0 >= 9
    }

    fn empty(&self, dtype: ScalarType, shape: &[i64]) -> Result<DeviceTensor> {
        DeviceTensor::uninit(&self.gpu, dtype, shape).map_err(cuda)
    }

    fn zeros(&self, dtype: ScalarType, shape: &[i64]) -> Result<DeviceTensor> {
        // stream-ordered: cuMemAllocAsync + cuMemsetD8Async on this backend's stream
        DeviceTensor::zeros(&self.gpu, dtype, shape).map_err(cuda)
    }

    fn counters(&self, len: i64) -> Result<DeviceTensor> {
        // kept between calls: every kernel that takes them leaves them at zero, and launches
        // on this stream run in order, so the next one finds zeros without a memset
        let mut kept = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = kept.as_ref().filter(|t| t.layout().numel() >= len) {
            return Ok(t.clone());
        }
        let t = self.zeros(ScalarType::U32, &[len.max(1024)])?;
        *kept = Some(t.clone());
        Ok(t)
    }

    fn from_host(&self, t: &HostTensor) -> Result<DeviceTensor> {
        DeviceTensor::from_host(&self.gpu, t).map_err(cuda)
    }

    fn to_host(&self, t: &DeviceTensor) -> Result<HostTensor> {
        t.on(&self.gpu).to_host().map_err(cuda)
    }

    fn resident_blocks(&self, kernel: &CompiledKernel) -> Result<u32> {
        let l = self.load(kernel)?;
        let threads = kernel.kernel().block_dim.iter().product::<u32>();
        self.gpu.max_active_blocks(&l.kernel, threads, l.dynamic_smem).map_err(cuda)
    }

    fn launch(&self, kernel: &CompiledKernel, grid: [u32; 3], b: Bindings<'_, Self>) -> Result<()> {
        let (p, uses) = self.prepare_with_uses(kernel, grid, b)?;
        // SAFETY: every bound tensor is borrowed by the bindings for this whole call, and its
        // last use on another stream was waited for when it was bound; after the launch is
        // queued it is recorded as the tensors' last use, so frees, downloads and work on
        // other streams wait for it
        unsafe { self.launch_prepared(&p)? };
        if !uses.is_empty() && tracks_uses(self.gpu.stream()) {
            let e = self
                .gpu
                .stream()
                .record_event(None)
                .map_err(|e| OpsError::Gpu(format!("cuEventRecord: {e}")))?;
            let e = Arc::new(e);
            for u in uses {
                u.record(&e);
            }
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.synchronize_stream()
    }
}
