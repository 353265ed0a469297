//! Device tensors: GPU memory (owned, or borrowed from cudarc) with a
//! [`TensorLayout`] — dtype, shape, strides and offset in
//! elements.
//!
//! ```text
//!   DeviceTensor        Arc<CudaSlice<u8>> (owned bytes, shared by views) + TensorLayout + Gpu
//!   DeviceTensorRef<'a> CudaView<'a, u8>   (borrowed from the caller's CudaSlice<T> /
//!                                           CudaView<'a, T>, dtype checked against T) + layout
//!
//!   views (permute, transpose, narrow, broadcast_to) make a new layout over the same bytes
//!   to_vec / to_host: download bytes [offset·size, span·size) of the storage, then gather on
//!   the host with tilekit_ir::tensor::gather_bytes — the code HostTensor uses
//! ```
//!
//! Every check (layout fits the storage, dtypes agree, data length matches the shape) is a
//! [`CudaError::Tensor`] holding the [`TensorError`]; a missing driver or GPU is the usual
//! [`CudaError::NoDriver`] / [`CudaError::NoDevice`] from [`Gpu::open`].
//!
//! ```
//! use tilekit_cuda::{tensor::DeviceTensor, Gpu};
//! if let Ok(gpu) = Gpu::open(0) {
//!     let t = DeviceTensor::from_slice(&gpu, &[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap();
//!     let v = t.transpose(0, 1).unwrap();
//!     assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
//! }
//! ```

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, CudaView, DevicePtr, DevicePtrMut};
use tilekit_ir::interp::HostBuffer;
use tilekit_ir::tensor::{
    check_len, gather_bytes, Element, HostTensor, TensorError, TensorLayout, TensorView,
};
use tilekit_ir::ScalarType;

use crate::device::Gpu;
use crate::error::{CudaError, Result};

/// Where [`download_gather`] reads: a cudarc view, or raw device memory of a known size.
enum Source<'a, 'b> {
    View(&'b CudaView<'a, u8>),
    Raw { ptr: u64, bytes: usize },
}

impl Source<'_, '_> {
    fn len(&self) -> usize {
        match self {
            Source::View(v) => v.len(),
            Source::Raw { bytes, .. } => *bytes,
        }
    }
}

/// Downloads the bytes `layout` addresses in `src` and gathers them into a contiguous host
/// tensor (row-major, offset 0).
fn download_gather(gpu: &Gpu, src: Source<'_, '_>, layout: &TensorLayout) -> Result<HostTensor> {
    let es = layout.dtype().size_bytes();
    layout.check_fits(src.len() / es)?;
    let contiguous = TensorLayout::contiguous(layout.dtype(), layout.shape().to_vec())?;
    if layout.numel() == 0 {
        return Ok(HostTensor::new(HostBuffer::zeroed(layout.dtype(), 0), contiguous)?);
    }
    // strides are non-negative: the lowest addressed element is the offset
    let lo = layout.offset() as usize * es;
    let hi = layout.size_bytes() as usize;
    let bytes = match src {
        Source::View(view) => gpu
            .stream
            .clone_dtoh(&view.slice(lo..hi))
            .map_err(|e| CudaError::driver("cuMemcpyDtoHAsync", e))?,
        Source::Raw { ptr, .. } => {
            let mut out = vec![0u8; hi - lo];
            gpu.ctx.bind_to_thread().map_err(|e| CudaError::driver("cuCtxSetCurrent", e))?;
            // SAFETY: `ptr + lo .. ptr + hi` lies in the storage (checked by check_fits above);
            // `out` is a live host buffer of that size, synchronised before it is read.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut out,
                    ptr + lo as u64,
                    gpu.stream.cu_stream(),
                )
            }
            .map_err(|e| CudaError::driver("cuMemcpyDtoHAsync", e))?;
            gpu.synchronize()?;
            out
        }
    };
    let gathered = gather_bytes(&layout.with_offset(0)?, &bytes)?;
    let buf =
        HostBuffer::from_bytes(layout.dtype(), gathered).ok_or_else(|| CudaError::Driver {
            call: "download",
            code: format!("{} bytes are not whole {} elements", bytes.len(), layout.dtype()),
        })?;
    Ok(HostTensor::new(buf, contiguous)?)
}

fn check_dtype<T: Element>(layout: &TensorLayout) -> Result<()> {
    if layout.dtype() != T::DTYPE {
        return Err(TensorError::DtypeMismatch { layout: layout.dtype(), other: T::DTYPE }.into());
    }
    Ok(())
}

/// A tensor in device memory that tilekit owns: shared bytes (views share them) and a layout
/// that fits them.
///
/// ```
/// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
/// use tilekit_ir::ScalarType;
/// if let Ok(gpu) = Gpu::open(0) {
///     let z = DeviceTensor::zeros(&gpu, ScalarType::BF16, &[2, 2]).unwrap();
///     assert_eq!(z.storage_bytes(), 8);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct DeviceTensor {
    gpu: Gpu,
    storage: Storage,
    layout: TensorLayout,
}

/// The bytes under a [`DeviceTensor`]: a cudarc allocation tilekit made, or memory another
/// library owns (a DLPack capsule from PyTorch), kept alive by `owner`.
/// The last use of a tilekit allocation on any stream, so that work on another stream, a
/// download, or the free waits for it:
///
/// ```text
///   bind on stream S      S waits for the last use (an event), then the launch is queued
///   after the launch      an event recorded on S becomes the last use
///   download on D         D waits for the last use first
///   last tensor dropped   the allocation's stream waits for the last use, then frees
/// ```
///
/// Only while the context has several streams (cudarc's multi-stream mode): on one stream,
/// stream order already is the order of use, and nothing is recorded.
#[derive(Debug, Default)]
pub struct StreamUses {
    last: Mutex<Option<Arc<CudaEvent>>>,
}

impl StreamUses {
    /// Orders `stream` after the last recorded use (nothing to do when there is none).
    pub fn wait_on(&self, stream: &CudaStream) -> Result<()> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(e) = last {
            stream.wait(&e).map_err(|e| CudaError::driver("cuStreamWaitEvent", e))?;
        }
        Ok(())
    }

    /// Records `event` — work just queued that uses the memory — as the last use.
    pub fn record(&self, event: &Arc<CudaEvent>) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(event));
    }
}

/// Whether uses must be recorded on `stream`'s context (it has several streams).
pub fn tracks_uses(stream: &CudaStream) -> bool {
    stream.context().is_in_multi_stream_mode()
}

/// A tilekit allocation and its last use.
struct Owned {
    uses: StreamUses,
    slice: Arc<CudaSlice<u8>>,
}

impl Owned {
    /// `slice`, just made (allocated, uploaded or cleared) on `gpu`'s stream: that work is its
    /// first use.
    fn new(gpu: &Gpu, slice: Arc<CudaSlice<u8>>) -> Result<Arc<Owned>> {
        let owned = Owned { uses: StreamUses::default(), slice };
        if tracks_uses(gpu.stream()) {
            let e = gpu
                .stream()
                .record_event(None)
                .map_err(|e| CudaError::driver("cuEventRecord", e))?;
            owned.uses.record(&Arc::new(e));
        }
        Ok(Arc::new(owned))
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // the free (queued on the allocation's stream when the slice drops) waits for the last
        // use on any stream; an error here has nowhere to go but the context's error slot
        if let Some(e) = self.uses.last.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = self.slice.stream().wait(&e);
        }
    }
}

#[derive(Clone)]
enum Storage {
    Owned(Arc<Owned>),
    External { ptr: u64, bytes: usize, owner: Arc<dyn std::any::Any + Send + Sync> },
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Storage::Owned(s) => write!(f, "Owned({} bytes)", s.slice.len()),
            Storage::External { ptr, bytes, .. } => write!(f, "External({ptr:#x}, {bytes} bytes)"),
        }
    }
}

impl DeviceTensor {
    /// Uploads `data` (row-major) as a contiguous tensor of `shape`, checked that the length
    /// matches the shape.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     assert!(DeviceTensor::from_slice(&gpu, &[1i32, 2, 3], &[3]).is_ok());
    ///     assert!(DeviceTensor::from_slice(&gpu, &[1i32, 2, 3], &[2, 2]).is_err());
    /// }
    /// ```
    pub fn from_slice<T: Element>(gpu: &Gpu, data: &[T], shape: &[i64]) -> Result<DeviceTensor> {
        let layout = TensorLayout::contiguous(T::DTYPE, shape.to_vec())?;
        check_len(&layout, data.len())?;
        DeviceTensor::from_host_bytes(gpu, T::to_buffer(data).as_bytes(), layout)
    }

    /// Uploads a host tensor's elements as a contiguous device tensor of the same shape.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::tensor::HostTensor;
    /// let h = HostTensor::from_slice(&[1u32, 2, 3, 4], &[2, 2]).unwrap().transpose(0, 1).unwrap();
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let d = DeviceTensor::from_host(&gpu, &h).unwrap();
    ///     assert_eq!(d.to_vec::<u32>().unwrap(), vec![1, 3, 2, 4]);
    /// }
    /// ```
    pub fn from_host(gpu: &Gpu, host: &HostTensor) -> Result<DeviceTensor> {
        let c = host.contiguous()?;
        DeviceTensor::from_host_bytes(gpu, c.buffer().as_bytes(), c.layout().clone())
    }

    fn from_host_bytes(gpu: &Gpu, bytes: &[u8], layout: TensorLayout) -> Result<DeviceTensor> {
        // the driver refuses zero-byte allocations: an empty tensor keeps one unused byte
        let storage = if bytes.is_empty() { gpu.alloc_zeros::<u8>(1)? } else { gpu.upload(bytes)? };
        let storage = Storage::Owned(Owned::new(gpu, Arc::new(storage))?);
        Ok(DeviceTensor { gpu: gpu.clone(), storage, layout })
    }

    /// A contiguous zero tensor.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let z = DeviceTensor::zeros(&gpu, ScalarType::F32, &[3]).unwrap();
    ///     assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 3]);
    /// }
    /// ```
    pub fn zeros(gpu: &Gpu, dtype: ScalarType, shape: &[i64]) -> Result<DeviceTensor> {
        let layout = TensorLayout::contiguous(dtype, shape.to_vec())?;
        let n = (layout.size_bytes() as usize).max(1);
        let storage = Storage::Owned(Owned::new(gpu, Arc::new(gpu.alloc_zeros::<u8>(n)?))?);
        Ok(DeviceTensor { gpu: gpu.clone(), storage, layout })
    }

    /// A tensor over existing device bytes, checked that the layout fits them.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let bytes = Arc::new(gpu.alloc_zeros::<u8>(16).unwrap());
    ///     let l = TensorLayout::strided(ScalarType::F32, vec![2], vec![2], 1).unwrap();
    ///     assert!(DeviceTensor::from_storage(&gpu, bytes.clone(), l).is_ok());
    ///     let l = TensorLayout::contiguous(ScalarType::F32, vec![5]).unwrap();
    ///     assert!(DeviceTensor::from_storage(&gpu, bytes, l).is_err());
    /// }
    /// ```
    pub fn from_storage(
        gpu: &Gpu,
        storage: Arc<CudaSlice<u8>>,
        layout: TensorLayout,
    ) -> Result<DeviceTensor> {
        layout.check_fits(storage.len() / layout.dtype().size_bytes())?;
        Ok(DeviceTensor {
            gpu: gpu.clone(),
            storage: Storage::Owned(Owned::new(gpu, storage)?),
            layout,
        })
    }

    /// A contiguous tensor of `shape` whose contents are unspecified (not zeroed: the memory
    /// is the allocator's) — an output a kernel is about to write.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::uninit(&gpu, ScalarType::F16, &[3, 5]).unwrap();
    ///     assert_eq!(t.storage_bytes(), 30);
    /// }
    /// ```
    pub fn uninit(gpu: &Gpu, dtype: ScalarType, shape: &[i64]) -> Result<DeviceTensor> {
        let layout = TensorLayout::contiguous(dtype, shape.to_vec())?;
        let n = (layout.size_bytes() as usize).max(1);
        // SAFETY: u8 has no invalid bit patterns; the contents are documented as unspecified
        let storage = unsafe { gpu.stream.alloc::<u8>(n) }
            .map_err(|e| CudaError::driver("cuMemAllocAsync", e))?;
        let storage = Storage::Owned(Owned::new(gpu, Arc::new(storage))?);
        Ok(DeviceTensor { gpu: gpu.clone(), storage, layout })
    }

    /// A tensor over device memory another library owns (a DLPack capsule, a framework's
    /// allocation): `bytes` bytes at device address `ptr`, kept alive by `owner` (dropped with
    /// the last view of the tensor). The layout is checked to fit `bytes`.
    ///
    /// # Safety
    /// `ptr .. ptr + bytes` must be device memory of `gpu`'s context, valid for reads and writes
    /// while `owner` lives, and work on it must be ordered with `gpu`'s stream by the caller.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let own = DeviceTensor::zeros(&gpu, ScalarType::F32, &[4]).unwrap();
    ///     let ptr = own.device_ptr();
    ///     let layout = TensorLayout::contiguous(ScalarType::F32, vec![2, 2]).unwrap();
    ///     // SAFETY: `own` (the owner) keeps the 16 bytes alive
    ///     let t = unsafe { DeviceTensor::from_raw_parts(&gpu, ptr, 16, layout, Arc::new(own)) }.unwrap();
    ///     assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0; 4]);
    /// }
    /// ```
    pub unsafe fn from_raw_parts(
        gpu: &Gpu,
        ptr: u64,
        bytes: usize,
        layout: TensorLayout,
        owner: Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<DeviceTensor> {
        layout.check_fits(bytes / layout.dtype().size_bytes())?;
        Ok(DeviceTensor {
            gpu: gpu.clone(),
            storage: Storage::External { ptr, bytes, owner },
            layout,
        })
    }

    /// The device address of the storage's first byte (not of the tensor's first element: add
    /// `layout().offset()` elements). Work queued on another stream for a tilekit allocation is
    /// waited for on this tensor's stream, as cudarc does for its own launches.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::zeros(&gpu, ScalarType::F32, &[64]).unwrap();
    ///     assert_eq!(t.device_ptr() % 256, 0); // the driver's allocations are 256-byte aligned
    /// }
    /// ```
    pub fn device_ptr(&self) -> u64 {
        match &self.storage {
            Storage::Owned(s) => self.gpu.device_ptr(&s.slice),
            Storage::External { ptr, .. } => *ptr,
        }
    }

    /// The object keeping external memory alive (see [`DeviceTensor::from_raw_parts`]);
    /// `None` for tilekit's own allocations.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     assert!(DeviceTensor::zeros(&gpu, ScalarType::F32, &[1]).unwrap().owner().is_none());
    /// }
    /// ```
    pub fn owner(&self) -> Option<&Arc<dyn std::any::Any + Send + Sync>> {
        match &self.storage {
            Storage::Owned(_) => None,
            Storage::External { owner, .. } => Some(owner),
        }
    }

    /// Bytes of the storage under the tensor (views included).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::zeros(&gpu, ScalarType::F32, &[4, 4]).unwrap();
    ///     assert_eq!(t.narrow(0, 1, 2).unwrap().storage_bytes(), 64);
    /// }
    /// ```
    pub fn storage_bytes(&self) -> usize {
        match &self.storage {
            Storage::Owned(s) => s.slice.len(),
            Storage::External { bytes, .. } => *bytes,
        }
    }

    /// The same tensor (same storage, same layout) on another stream of the same device: what
    /// launches through a `Gpu` made by [`Gpu::new_stream`] take.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let side = gpu.new_stream().unwrap();
    ///     let t = DeviceTensor::zeros(&gpu, ScalarType::F32, &[4]).unwrap().on(&side);
    ///     assert_eq!(t.gpu().stream().cu_stream(), side.stream().cu_stream());
    /// }
    /// ```
    pub fn on(&self, gpu: &Gpu) -> DeviceTensor {
        DeviceTensor {
            gpu: gpu.clone(),
            storage: self.storage.clone(),
            layout: self.layout.clone(),
        }
    }

    /// The layout.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1.0f64; 6], &[2, 3]).unwrap();
    ///     assert_eq!(t.layout().strides(), &[3, 1]);
    /// }
    /// ```
    pub fn layout(&self) -> &TensorLayout {
        &self.layout
    }

    /// The element type.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// use tilekit_ir::ScalarType;
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     assert_eq!(DeviceTensor::from_slice(&gpu, &[1i64], &[1]).unwrap().dtype(), ScalarType::I64);
    /// }
    /// ```
    pub fn dtype(&self) -> ScalarType {
        self.layout.dtype()
    }

    /// The lengths.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     assert_eq!(DeviceTensor::from_slice(&gpu, &[1i64; 4], &[4, 1]).unwrap().shape(), &[4, 1]);
    /// }
    /// ```
    pub fn shape(&self) -> &[i64] {
        self.layout.shape()
    }

    /// The device bytes (shared with every view of them).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1u32; 4], &[4]).unwrap();
    ///     let n = t.narrow(0, 1, 2).unwrap();
    ///     assert!(std::sync::Arc::ptr_eq(t.storage().unwrap(), n.storage().unwrap()));
    /// }
    /// ```
    pub fn storage(&self) -> Option<&Arc<CudaSlice<u8>>> {
        match &self.storage {
            Storage::Owned(s) => Some(&s.slice),
            Storage::External { .. } => None,
        }
    }

    /// The last use of a tilekit allocation on any stream ([`StreamUses`]): what launches on
    /// other streams, downloads and the free wait for. `None` for external memory, whose
    /// owner orders it (PyTorch's caching allocator, on the stream tilekit is given).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1u32], &[1]).unwrap();
    ///     assert!(t.uses().is_some());
    /// }
    /// ```
    pub fn uses(&self) -> Option<&StreamUses> {
        match &self.storage {
            Storage::Owned(s) => Some(&s.uses),
            Storage::External { .. } => None,
        }
    }

    /// The GPU the tensor lives on.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1u32], &[1]).unwrap();
    ///     assert_eq!(t.gpu().props().ordinal, 0);
    /// }
    /// ```
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn view(&self, layout: TensorLayout) -> DeviceTensor {
        DeviceTensor { gpu: self.gpu.clone(), storage: self.storage.clone(), layout }
    }

    /// A permuted view sharing the storage.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[0i32, 1, 2, 3, 4, 5], &[1, 2, 3]).unwrap();
    ///     assert_eq!(t.permute(&[2, 0, 1]).unwrap().to_vec::<i32>().unwrap(), vec![0, 3, 1, 4, 2, 5]);
    /// }
    /// ```
    pub fn permute(&self, perm: &[usize]) -> Result<DeviceTensor> {
        Ok(self.view(self.layout.permute(perm)?))
    }

    /// A transposed view sharing the storage.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[0i32, 1, 2, 3], &[2, 2]).unwrap();
    ///     assert_eq!(t.transpose(0, 1).unwrap().to_vec::<i32>().unwrap(), vec![0, 2, 1, 3]);
    /// }
    /// ```
    pub fn transpose(&self, a: usize, b: usize) -> Result<DeviceTensor> {
        Ok(self.view(self.layout.transpose(a, b)?))
    }

    /// A narrowed view sharing the storage.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[0i32, 1, 2, 3], &[4]).unwrap();
    ///     assert_eq!(t.narrow(0, 2, 2).unwrap().to_vec::<i32>().unwrap(), vec![2, 3]);
    /// }
    /// ```
    pub fn narrow(&self, dim: usize, start: i64, len: i64) -> Result<DeviceTensor> {
        Ok(self.view(self.layout.narrow(dim, start, len)?))
    }

    /// A broadcast view sharing the storage.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[5i32, 6], &[2, 1]).unwrap();
    ///     assert_eq!(t.broadcast_to(&[2, 2]).unwrap().to_vec::<i32>().unwrap(), vec![5, 5, 6, 6]);
    /// }
    /// ```
    pub fn broadcast_to(&self, shape: &[i64]) -> Result<DeviceTensor> {
        Ok(self.view(self.layout.broadcast_to(shape)?))
    }

    /// A borrowed view of this tensor (`None` for memory another library owns, see
    /// [`DeviceTensor::from_raw_parts`]).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1.0f32, 2.0], &[2]).unwrap();
    ///     assert_eq!(t.as_ref().unwrap().to_vec::<f32>(&gpu).unwrap(), vec![1.0, 2.0]);
    /// }
    /// ```
    pub fn as_ref(&self) -> Option<DeviceTensorRef<'_>> {
        match &self.storage {
            Storage::Owned(s) => Some(DeviceTensorRef {
                view: s.slice.as_view(),
                layout: self.layout.clone(),
                ptr: self.device_ptr(),
                ordinal: self.gpu.props().ordinal,
            }),
            Storage::External { .. } => None,
        }
    }

    /// Downloads the elements into a contiguous host tensor (logical row-major order).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1u32, 2, 3, 4], &[2, 2]).unwrap();
    ///     let h = t.transpose(0, 1).unwrap().to_host().unwrap();
    ///     assert_eq!(h.buffer().to_u32(), Some(vec![1, 3, 2, 4]));
    /// }
    /// ```
    pub fn to_host(&self) -> Result<HostTensor> {
        let src = match &self.storage {
            Storage::Owned(st) => {
                // the last use on any stream (a kernel writing it) comes first
                st.uses.wait_on(self.gpu.stream())?;
                return download_gather(&self.gpu, Source::View(&st.slice.as_view()), &self.layout);
            }
            Storage::External { ptr, bytes, .. } => Source::Raw { ptr: *ptr, bytes: *bytes },
        };
        download_gather(&self.gpu, src, &self.layout)
    }

    /// Downloads the elements (logical row-major order), checked that `T` is the dtype.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[half::bf16::ONE], &[1]).unwrap();
    ///     assert_eq!(t.to_vec::<half::bf16>().unwrap(), vec![half::bf16::ONE]);
    ///     assert!(t.to_vec::<f32>().is_err());
    /// }
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        check_dtype::<T>(&self.layout)?;
        Ok(self.to_host()?.to_vec::<T>()?)
    }

    /// A contiguous copy in new device memory (gathered through the host for now).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensor, Gpu};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let t = DeviceTensor::from_slice(&gpu, &[1u32, 2, 3, 4], &[2, 2]).unwrap();
    ///     let c = t.transpose(0, 1).unwrap().contiguous().unwrap();
    ///     assert!(c.layout().is_contiguous());
    ///     assert_eq!(c.to_vec::<u32>().unwrap(), vec![1, 3, 2, 4]);
    /// }
    /// ```
    pub fn contiguous(&self) -> Result<DeviceTensor> {
        let h = self.to_host()?;
        DeviceTensor::from_host_bytes(&self.gpu, h.buffer().as_bytes(), h.layout().clone())
    }
}

impl TensorView for DeviceTensor {
    fn layout(&self) -> &TensorLayout {
        &self.layout
    }
    fn with_layout(&self, layout: TensorLayout) -> Result<Self, TensorError> {
        if layout.dtype() != self.layout.dtype() {
            return Err(TensorError::DtypeMismatch {
                layout: layout.dtype(),
                other: self.layout.dtype(),
            });
        }
        layout.check_fits(self.storage_bytes() / layout.dtype().size_bytes())?;
        Ok(self.view(layout))
    }
}

/// A tensor over device memory the caller owns (a cudarc `CudaSlice<T>` or `CudaView<'a, T>`),
/// checked that the layout fits its length and that its dtype is `T`'s.
///
/// ```
/// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// if let Ok(gpu) = Gpu::open(0) {
///     let buf = gpu.upload(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
///     let l = TensorLayout::strided(ScalarType::F32, vec![2, 2], vec![1, 3], 1).unwrap();
///     let t = DeviceTensorRef::from_cuda_slice(&buf, l).unwrap();
///     assert_eq!(t.to_vec::<f32>(&gpu).unwrap(), vec![1.0, 4.0, 2.0, 5.0]);
/// }
/// ```
#[derive(Debug)]
pub struct DeviceTensorRef<'a> {
    view: CudaView<'a, u8>,
    layout: TensorLayout,
    /// The view's first byte (ordered on the stream that was given when it was made).
    ptr: u64,
    ordinal: usize,
}

impl<'a> DeviceTensorRef<'a> {
    /// A tensor over a whole cudarc slice.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[1i32, 2]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::F32, vec![2]).unwrap();
    ///     assert!(DeviceTensorRef::from_cuda_slice(&buf, l).is_err()); // i32 memory, f32 layout
    /// }
    /// ```
    pub fn from_cuda_slice<T: Element>(
        slice: &'a CudaSlice<T>,
        layout: TensorLayout,
    ) -> Result<DeviceTensorRef<'a>> {
        check_dtype::<T>(&layout)?;
        layout.check_fits(slice.len())?;
        // SAFETY: u8 is valid for any bit pattern, and the byte view covers exactly the slice
        let view = unsafe { slice.transmute::<u8>(slice.len() * std::mem::size_of::<T>()) };
        let (ptr, _sync) = slice.device_ptr(slice.stream());
        Ok(DeviceTensorRef {
            view: view.expect("the byte view has the slice's size"),
            layout,
            ptr,
            ordinal: slice.ordinal(),
        })
    }

    /// A tensor over a cudarc view.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[1i32, 2, 3, 4]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::I32, vec![2]).unwrap();
    ///     let t = DeviceTensorRef::from_view(&gpu, buf.slice(2..), l).unwrap();
    ///     assert_eq!(t.to_vec::<i32>(&gpu).unwrap(), vec![3, 4]);
    /// }
    /// ```
    pub fn from_view<T: Element>(
        gpu: &Gpu,
        view: CudaView<'a, T>,
        layout: TensorLayout,
    ) -> Result<DeviceTensorRef<'a>> {
        check_dtype::<T>(&layout)?;
        layout.check_fits(view.len())?;
        // SAFETY: u8 is valid for any bit pattern, and the byte view covers exactly the view
        let bytes = unsafe { view.transmute::<u8>(view.len() * std::mem::size_of::<T>()) };
        // the view's last write (on its own stream) is waited for on the GPU's stream
        let (ptr, _sync) = view.device_ptr(gpu.stream());
        Ok(DeviceTensorRef {
            view: bytes.expect("the byte view has the view's size"),
            layout,
            ptr,
            ordinal: gpu.props().ordinal,
        })
    }

    /// The device address of the memory's first byte (add `layout().offset()` elements for the
    /// tensor's first element).
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[0.0f32; 8]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::F32, vec![8]).unwrap();
    ///     let t = DeviceTensorRef::from_cuda_slice(&buf, l).unwrap();
    ///     assert_eq!(t.device_ptr(), gpu.device_ptr(&buf));
    /// }
    /// ```
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The CUDA ordinal of the device the memory is on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The layout.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[1i32, 2]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::I32, vec![2]).unwrap();
    ///     assert_eq!(DeviceTensorRef::from_cuda_slice(&buf, l.clone()).unwrap().layout(), &l);
    /// }
    /// ```
    pub fn layout(&self) -> &TensorLayout {
        &self.layout
    }

    /// The borrowed bytes.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[1i32, 2]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::I32, vec![1]).unwrap();
    ///     assert_eq!(DeviceTensorRef::from_cuda_slice(&buf, l).unwrap().bytes().len(), 8);
    /// }
    /// ```
    pub fn bytes(&self) -> &CudaView<'a, u8> {
        &self.view
    }

    fn with_layout(&self, layout: TensorLayout) -> DeviceTensorRef<'a> {
        DeviceTensorRef { view: self.view.slice(..), layout, ptr: self.ptr, ordinal: self.ordinal }
    }

    /// A permuted view of the same memory.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[0i32, 1, 2, 3]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::I32, vec![2, 2]).unwrap();
    ///     let t = DeviceTensorRef::from_cuda_slice(&buf, l).unwrap().permute(&[1, 0]).unwrap();
    ///     assert_eq!(t.to_vec::<i32>(&gpu).unwrap(), vec![0, 2, 1, 3]);
    /// }
    /// ```
    pub fn permute(&self, perm: &[usize]) -> Result<DeviceTensorRef<'a>> {
        Ok(self.with_layout(self.layout.permute(perm)?))
    }

    /// A narrowed view of the same memory.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[0i32, 1, 2, 3]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::I32, vec![2, 2]).unwrap();
    ///     let t = DeviceTensorRef::from_cuda_slice(&buf, l).unwrap().narrow(1, 1, 1).unwrap();
    ///     assert_eq!(t.to_vec::<i32>(&gpu).unwrap(), vec![1, 3]);
    /// }
    /// ```
    pub fn narrow(&self, dim: usize, start: i64, len: i64) -> Result<DeviceTensorRef<'a>> {
        Ok(self.with_layout(self.layout.narrow(dim, start, len)?))
    }

    /// Downloads the elements into a contiguous host tensor, on `gpu`'s stream.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[7u32, 8]).unwrap();
    ///     let l = TensorLayout::strided(ScalarType::U32, vec![3], vec![0], 1).unwrap();
    ///     let h = DeviceTensorRef::from_cuda_slice(&buf, l).unwrap().to_host(&gpu).unwrap();
    ///     assert_eq!(h.buffer().to_u32(), Some(vec![8, 8, 8]));
    /// }
    /// ```
    pub fn to_host(&self, gpu: &Gpu) -> Result<HostTensor> {
        download_gather(gpu, Source::View(&self.view), &self.layout)
    }

    /// Downloads the elements (logical row-major order), checked that `T` is the dtype.
    ///
    /// ```
    /// use tilekit_cuda::{tensor::DeviceTensorRef, Gpu};
    /// use tilekit_ir::{tensor::TensorLayout, ScalarType};
    /// if let Ok(gpu) = Gpu::open(0) {
    ///     let buf = gpu.upload(&[7u32, 8]).unwrap();
    ///     let l = TensorLayout::contiguous(ScalarType::U32, vec![2]).unwrap();
    ///     let t = DeviceTensorRef::from_cuda_slice(&buf, l).unwrap();
    ///     assert_eq!(t.to_vec::<u32>(&gpu).unwrap(), vec![7, 8]);
    ///     assert!(t.to_vec::<i32>(&gpu).is_err());
    /// }
    /// ```
    pub fn to_vec<T: Element>(&self, gpu: &Gpu) -> Result<Vec<T>> {
        check_dtype::<T>(&self.layout)?;
        Ok(self.to_host(gpu)?.to_vec::<T>()?)
    }
}

/// A tensor over memory a cudarc program owns and lends **mutably** (its `CudaSlice<T>`), so a
/// kernel can write it: the output side of [`DeviceTensorRef`]. The borrow lasts as long as the
/// tensor, so the slice cannot be read or freed while a launch may still write it through here
/// (launches are stream-ordered: synchronise, or read the slice on the same stream).
///
/// ```
/// use tilekit_cuda::{tensor::DeviceTensorMut, Gpu};
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// if let Ok(gpu) = Gpu::open(0) {
///     let mut buf = gpu.alloc_zeros::<f32>(6).unwrap();
///     let l = TensorLayout::contiguous(ScalarType::F32, vec![2, 3]).unwrap();
///     let t = DeviceTensorMut::from_cuda_slice(&mut buf, l).unwrap();
///     assert_eq!(t.layout().shape(), &[2, 3]);
///     assert!(DeviceTensorMut::from_cuda_slice(&mut buf, TensorLayout::contiguous(ScalarType::F32, vec![7]).unwrap()).is_err());
/// }
/// ```
#[derive(Debug)]
pub struct DeviceTensorMut<'a> {
    layout: TensorLayout,
    ptr: u64,
    ordinal: usize,
    _borrow: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> DeviceTensorMut<'a> {
    /// A tensor of `layout` over a cudarc slice of `T` (checked: `T` is the dtype, the layout
    /// fits the slice).
    pub fn from_cuda_slice<T: Element>(
        slice: &'a mut CudaSlice<T>,
        layout: TensorLayout,
    ) -> Result<DeviceTensorMut<'a>> {
        check_dtype::<T>(&layout)?;
        layout.check_fits(slice.len())?;
        let ordinal = slice.ordinal();
        let stream = slice.stream().clone();
        let (ptr, _sync) = slice.device_ptr_mut(&stream);
        Ok(DeviceTensorMut { layout, ptr, ordinal, _borrow: std::marker::PhantomData })
    }

    /// The layout.
    pub fn layout(&self) -> &TensorLayout {
        &self.layout
    }

    /// The device address of the memory's first byte.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The CUDA ordinal of the device the memory is on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
}
