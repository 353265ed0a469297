//! The op bindings: each `*_into` takes tensors (inputs, then the outputs the Python layer
//! allocated with PyTorch) and calls `tilekit_ops::api::*_into` on [`DeviceTensor`]s over their
//! memory. The stream is never an argument: the binding finds it.
//!
//! ```text
//!   transpose_into(x, y) ─► caller's CUDA context saved (restored when the call ends, errors
//!                           and panics included: no context leaks into PyTorch)
//!                        ─► each argument read once: a torch.Tensor (exactly, or an
//!                           nn.Parameter) directly — is_cuda, dtype (by identity), shape,
//!                           stride(), is_neg(), get_device(), data_ptr(); no DLPack export —
//!                           and any other producer (or a torch tensor the direct read does not
//!                           cover) through its __dlpack_device__; one ordinal, else DeviceError
//!                        ─► the stream: a torch.Tensor among them → PyTorch's current stream of
//!                           that device (torch._C._cuda_getCurrentRawStream: one call); else the
//!                           legacy default stream
//!                        ─► the backend of (ordinal, stream), kept from call to call (its
//!                           counters and loaded kernels too: nothing is re-created per call)
//!                        ─► the producers read through DLPack are exported now (torch: stream
//!                           -1 with the device's context current; others: the stream),
//!                           cross-checked against the ordinal; outputs writable
//!                        ─► DeviceTensor::from_raw_parts(ptr, bytes, layout, owner)
//!                        ─► api::transpose_into(&cuda, &x, &mut y)   (GIL released)
//!                        ─► owners dropped (a reference to the tensor, or the DLPack deleter);
//!                           context restored
//! ```
//!
//! The launch is asynchronous on the stream PyTorch would use for its own op on that device,
//! so it orders with the surrounding PyTorch work (and is captured by `torch.cuda.graph`);
//! PyTorch's caching allocator keeps the memory of a tensor freed later on that stream until the
//! kernel is done, as for its own ops.
//!
//! A `torch.Tensor` read directly is what its DLPack export would give (PyTorch exports
//! `data_ptr()` with the tensor's sizes and strides, never read-only unless asked), minus the
//! export's Python-level checks and device look-ups: the host cost of a call is a few attribute
//! reads per tensor. Tensors the direct read does not cover — a dtype tilekit does not take, a
//! negative-bit view, sparse or nested layouts, subclasses (FakeTensor, functional wrappers) —
//! go through `__dlpack__` as before, which gives their errors.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};
use tilekit_cuda::cudarc::driver::sys;
use tilekit_cuda::DeviceTensor;
use tilekit_ir::tensor::TensorLayout;
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::Cuda;
use tilekit_ops::elementwise::Binary;

use crate::dlpack::{self, Handshake};
use crate::errors::{cuda_err, ops_err, DeviceError, GpuError, ShapeError};

static CUDA: Mutex<Option<HashMap<usize, Cuda>>> = Mutex::new(None);

/// The backend of device `ordinal` (opened on first use, then shared: its loaded kernels
/// stay loaded for the life of the process).
fn backend(ordinal: usize) -> PyResult<Cuda> {
    let mut guard = CUDA.lock().unwrap_or_else(|p| p.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(c) = map.get(&ordinal) {
        return Ok(c.clone());
    }
    let c = Cuda::open(ordinal).map_err(|e| ops_err(&e))?;
    map.insert(ordinal, c.clone());
    Ok(c)
}

/// The backends on borrowed streams, by (ordinal, raw `CUstream`): made once per stream and kept,
/// so a call re-creates nothing (a backend per call would also allocate the self-resetting
/// counters of its stream anew: [`Cuda::on_borrowed_stream`] gives each backend its own).
/// PyTorch's streams come from per-device pools and are never destroyed, so the map stays as
/// small as the set of streams used; a stream another library destroys and whose handle is
/// reused finds its predecessor's backend, whose counters reset themselves after every launch.
static ON_STREAM: Mutex<Option<HashMap<(usize, u64), Cuda>>> = Mutex::new(None);

/// The backend of device `ordinal` launching on `stream` (see [`ON_STREAM`]).
fn backend_on(ordinal: usize, stream: u64) -> PyResult<Cuda> {
    {
        let guard = ON_STREAM.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = guard.as_ref().and_then(|m| m.get(&(ordinal, stream))) {
            return Ok(c.clone());
        }
    }
    let base = backend(ordinal)?;
    // SAFETY: `stream` is PyTorch's current stream of this device (PyTorch's streams live as
    // long as the process) or the legacy default stream
    let cuda = unsafe { base.on_borrowed_stream(stream) };
    let mut guard = ON_STREAM.lock().unwrap_or_else(|p| p.into_inner());
    guard.get_or_insert_with(HashMap::new).insert((ordinal, stream), cuda.clone());
    Ok(cuda)
}

/// Whether the CUDA driver library loads (asked once: the driver calls below need it).
fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(tilekit_cuda::driver_present)
}

/// The calling thread's current CUDA context, made current again on drop. Opening a device
/// and binding tensors make that device's primary context current (cudarc's
/// `bind_to_thread`); PyTorch reads its current device from the current context, so without
/// this an op on cuda:1 would leave PyTorch allocating on cuda:1.
struct SavedContext(Option<sys::CUcontext>);

impl SavedContext {
    fn save() -> SavedContext {
        if !driver_present() {
            return SavedContext(None); // nothing can change it
        }
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: a driver call that writes one pointer; the library is present
        match unsafe { sys::cuCtxGetCurrent(&mut ctx) } {
            sys::CUresult::CUDA_SUCCESS => SavedContext(Some(ctx)),
            // no cuInit yet: nothing is current, and nothing must be after the call
            sys::CUresult::CUDA_ERROR_NOT_INITIALIZED => SavedContext(Some(std::ptr::null_mut())),
            _ => SavedContext(None),
        }
    }
}

impl Drop for SavedContext {
    fn drop(&mut self) {
        let Some(saved) = self.0 else { return };
        let mut now: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: driver calls on a context handle the thread had current (a primary context
        // PyTorch or tilekit retained, alive for the process) or NULL (unbinds)
        unsafe {
            if sys::cuCtxGetCurrent(&mut now) != sys::CUresult::CUDA_SUCCESS || now != saved {
                let _ = sys::cuCtxSetCurrent(saved);
            }
        }
    }
}

/// What the bindings use of PyTorch, looked up once when `torch` is first seen imported.
struct Torch {
    /// `torch.Tensor`.
    tensor: Py<PyType>,
    /// `torch._C._cuda_getCurrentRawStream` (ordinal → raw `CUstream`), or `None` where that
    /// private function is missing: then `torch.cuda.current_stream(ordinal).cuda_stream`.
    raw_stream: Option<Py<PyAny>>,
    /// `torch.cuda.current_stream`.
    current_stream: Py<PyAny>,
    /// `torch.nn.Parameter`, read directly like `torch.Tensor` (None where it is missing).
    parameter: Option<Py<PyType>>,
    /// The torch dtypes tilekit takes, compared by identity.
    dtypes: Vec<(Py<PyAny>, ScalarType)>,
}

static TORCH: PyOnceLock<Torch> = PyOnceLock::new();

/// PyTorch's hooks, or `None` while `torch` is not imported (then no producer is a
/// `torch.Tensor`).
fn torch(py: Python<'_>) -> PyResult<Option<&'static Torch>> {
    if let Some(t) = TORCH.get(py) {
        return Ok(Some(t));
    }
    let modules = py.import(intern!(py, "sys"))?.getattr(intern!(py, "modules"))?;
    let Ok(torch) = modules.get_item("torch") else { return Ok(None) };
    let (Ok(tensor), Ok(cuda)) = (torch.getattr("Tensor"), torch.getattr("cuda")) else {
        return Ok(None); // torch is being imported
    };
    let raw_stream = torch
        .getattr("_C")
        .and_then(|c| c.getattr("_cuda_getCurrentRawStream"))
        .ok()
        .map(Bound::unbind);
    let parameter = torch
        .getattr("nn")
        .and_then(|nn| nn.getattr("Parameter"))
        .ok()
        .and_then(|p| p.cast_into::<PyType>().ok())
        .map(Bound::unbind);
    let dtypes = [
        ("float32", ScalarType::F32),
        ("float16", ScalarType::F16),
        ("bfloat16", ScalarType::BF16),
        ("float64", ScalarType::F64),
        ("int32", ScalarType::I32),
        ("uint32", ScalarType::U32),
        ("int64", ScalarType::I64),
    ]
    .into_iter()
    .filter_map(|(name, ty)| torch.getattr(name).ok().map(|d| (d.unbind(), ty)))
    .collect();
    let t = Torch {
        tensor: tensor.cast_into::<PyType>()?.unbind(),
        raw_stream,
        current_stream: cuda.getattr("current_stream")?.unbind(),
        parameter,
        dtypes,
    };
    Ok(Some(TORCH.get_or_init(py, || t)))
}

impl Torch {
    fn is_tensor(&self, obj: &Bound<'_, PyAny>) -> bool {
        obj.is_instance(self.tensor.bind(obj.py())).unwrap_or(false)
    }

    /// `obj` is exactly a `torch.Tensor` or an `nn.Parameter` (no subclass with behaviour of
    /// its own): what [`Torch::read`] takes.
    fn is_plain_tensor(&self, obj: &Bound<'_, PyAny>) -> bool {
        let py = obj.py();
        let ty = obj.get_type();
        ty.is(self.tensor.bind(py)) || self.parameter.as_ref().is_some_and(|p| ty.is(p.bind(py)))
    }

    /// A plain tensor's pointer, layout and device read from its attributes (one pass, no
    /// DLPack export), or `None` where the DLPack export must decide (not on a CUDA device, a
    /// dtype tilekit does not take, a negative-bit view, a layout without strides).
    fn read(&self, obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<Direct>> {
        let Some(f) = self.fields(obj)? else { return Ok(None) };
        if !f.is_cuda {
            return Ok(None);
        }
        let Ok(device) = usize::try_from(f.device) else { return Ok(None) };
        let shape = f.shape.clone();
        let layout = TensorLayout::strided(f.dtype, f.shape, f.strides, 0)
            .map_err(|e| ShapeError::new_err(format!("{what} (shape {shape:?}): {e}")))?;
        let bytes = if layout.numel() == 0 { 0 } else { layout.size_bytes() as usize };
        let owner: Arc<dyn std::any::Any + Send + Sync> = Arc::new(obj.clone().unbind());
        Ok(Some(Direct { ptr: f.ptr, bytes, layout, device, owner }))
    }

    /// The attributes [`Torch::read`] uses, read once; `None` where one of them cannot be read
    /// as a strided tensor of a tilekit dtype.
    fn fields(&self, obj: &Bound<'_, PyAny>) -> PyResult<Option<Fields>> {
        let py = obj.py();
        let is_cuda = obj.getattr(intern!(py, "is_cuda"))?.is_truthy()?;
        let dtype = obj.getattr(intern!(py, "dtype"))?;
        let Some(dtype) = self.dtypes.iter().find(|(d, _)| d.bind(py).is(&dtype)).map(|(_, t)| *t)
        else {
            return Ok(None);
        };
        let Ok(shape) = obj.getattr(intern!(py, "shape")).and_then(|s| s.extract::<Vec<i64>>())
        else {
            return Ok(None);
        };
        let Ok(strides) =
            obj.call_method0(intern!(py, "stride")).and_then(|s| s.extract::<Vec<i64>>())
        else {
            return Ok(None);
        };
        if obj.call_method0(intern!(py, "is_neg"))?.is_truthy()? {
            return Ok(None);
        }
        let device: i64 = obj.call_method0(intern!(py, "get_device"))?.extract()?;
        let ptr: u64 = obj.call_method0(intern!(py, "data_ptr"))?.extract()?;
        Ok(Some(Fields { is_cuda, dtype, shape, strides, device, ptr }))
    }

    /// The raw current stream of device `ordinal` for this thread (under `torch.cuda.graph`,
    /// the capturing stream).
    fn stream(&self, py: Python<'_>, ordinal: usize) -> PyResult<u64> {
        match &self.raw_stream {
            Some(f) => f.bind(py).call1((ordinal,))?.extract(),
            None => self
                .current_stream
                .bind(py)
                .call1((ordinal,))?
                .getattr(intern!(py, "cuda_stream"))?
                .extract(),
        }
    }
}

/// What [`Torch::fields`] reads of a tensor.
struct Fields {
    is_cuda: bool,
    dtype: ScalarType,
    shape: Vec<i64>,
    strides: Vec<i64>,
    device: i64,
    ptr: u64,
}

/// A `torch.Tensor` read without DLPack: the pointer of its first element, the bytes its
/// layout spans from there, the layout (offset 0), the CUDA ordinal, and a reference to the
/// tensor (its memory lives while the DeviceTensor over it does).
struct Direct {
    ptr: u64,
    bytes: usize,
    layout: TensorLayout,
    device: usize,
    owner: Arc<dyn std::any::Any + Send + Sync>,
}

/// How one argument is read: directly, or through DLPack (on `device`; `torch` when the
/// producer is a torch.Tensor, whose export takes stream -1 with the device's context current).
enum Read {
    Direct(Direct),
    Export { device: usize, torch: bool },
}

impl Read {
    fn device(&self) -> usize {
        match self {
            Read::Direct(d) => d.device,
            Read::Export { device, .. } => *device,
        }
    }
}

/// The CUDA ordinal of a `torch.Tensor` without a DLPack call (`get_device()`, `is_cuda`);
/// any other device through `__dlpack_device__`, whose answer names it in the DeviceError.
fn torch_device(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    let py = obj.py();
    let index: i64 = obj.call_method0(intern!(py, "get_device"))?.extract()?;
    if index >= 0 && obj.getattr(intern!(py, "is_cuda"))?.is_truthy()? {
        return Ok(index as usize);
    }
    dlpack::cuda_device(obj, what)
}

/// The handshake [`read_all`] uses for `obj`, for `read_dlpack` without a stream: `-1` for a
/// `torch.Tensor` (the ops launch on its current stream), the legacy default stream otherwise.
pub fn default_handshake(obj: &Bound<'_, PyAny>) -> PyResult<Handshake> {
    Ok(match torch(obj.py())? {
        Some(t) if t.is_tensor(obj) => Handshake::NoSync,
        _ => Handshake::Stream(0),
    })
}

/// One argument of a binding: the producer, its name in messages, and whether it is written.
type Arg<'a, 'py> = (&'a Bound<'py, PyAny>, &'static str, bool);

/// Reads `objs`: all on one CUDA device (checked before anything is exported), each a
/// [`DeviceTensor`] over the producer's memory, and the backend on the stream to launch on.
fn read_all(py: Python<'_>, objs: &[Arg<'_, '_>]) -> PyResult<(Cuda, Vec<DeviceTensor>)> {
    let torch = torch(py)?;
    let mut reads = Vec::with_capacity(objs.len());
    let mut any_torch = false;
    for (obj, name, _) in objs {
        let read = match torch {
            Some(t) if t.is_plain_tensor(obj) => {
                any_torch = true;
                match t.read(obj, name)? {
                    Some(d) => Read::Direct(d),
                    None => Read::Export { device: torch_device(obj, name)?, torch: true },
                }
            }
            Some(t) if t.is_tensor(obj) => {
                any_torch = true;
                Read::Export { device: torch_device(obj, name)?, torch: true }
            }
            _ => Read::Export { device: dlpack::cuda_device(obj, name)?, torch: false },
        };
        reads.push(read);
    }
    let (first, first_name) = (reads[0].device(), objs[0].1);
    if let Some((r, (_, name, _))) = reads.iter().zip(objs).find(|(r, _)| r.device() != first) {
        return Err(DeviceError::new_err(format!(
            "{first_name} is on cuda:{first} but {name} is on cuda:{}: every tensor of a \
             call must be on one device",
            r.device()
        )));
    }
    // the legacy default stream where no torch.Tensor is among the producers
    let stream = match torch {
        Some(t) if any_torch => t.stream(py, first)?,
        _ => 0,
    };
    let mut opened = None;
    if any_torch {
        // the device's context current from here on, as PyTorch's launches have theirs (its
        // __dlpack__ also refuses a tensor of another device than the current one); the
        // caller's comes back at the end. Two driver calls when it is current already.
        let cuda = backend_on(first, stream)?;
        cuda.gpu()
            .context()
            .bind_to_thread()
            .map_err(|e| GpuError::new_err(format!("cuCtxSetCurrent: {e}")))?;
        opened = Some(cuda);
    }
    // the exports and their checks (read-only outputs, devices); with no torch.Tensor among
    // the producers, before the GPU is opened: a refused output needs no driver
    let mut parts = Vec::with_capacity(reads.len());
    for ((obj, name, output), read) in objs.iter().zip(reads) {
        parts.push(match read {
            Read::Direct(d) => (d.ptr, d.bytes, d.layout, d.owner),
            Read::Export { device, torch } => {
                let handshake = if torch { Handshake::NoSync } else { Handshake::Stream(stream) };
                let t = dlpack::export(obj, name, device, handshake, *output)?;
                let owner: Arc<dyn std::any::Any + Send + Sync> = t.owner;
                (t.ptr, t.bytes, t.layout, owner)
            }
        });
    }
    let cuda = match opened {
        Some(c) => c,
        None => backend_on(first, stream)?,
    };
    let mut tensors = Vec::with_capacity(parts.len());
    for (ptr, bytes, layout, owner) in parts {
        // SAFETY: ptr .. ptr + bytes is the producer's memory on this device (its data_ptr()
        // and layout, or DLPack), kept alive by `owner`; the producer's pending work is ordered
        // with `stream` (the same stream for a torch.Tensor, the handshake for others)
        let d = unsafe { DeviceTensor::from_raw_parts(cuda.gpu(), ptr, bytes, layout, owner) }
            .map_err(|e| cuda_err(&e))?;
        tensors.push(d);
    }
    Ok((cuda, tensors))
}

/// What the op bindings read of a `torch.Tensor` without DLPack (pointer of the first element,
/// bytes spanned, dtype, shape, strides, device), or `None` where they export it through DLPack
/// instead (not a plain tensor, not on a CUDA device, another dtype, a negative-bit view, no
/// strides). For the tests that hold the direct read to the DLPack export.
#[pyfunction]
pub fn _read_torch<'py>(x: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = x.py();
    let Some(t) = torch(py)? else { return Ok(None) };
    if !t.is_plain_tensor(x) {
        return Ok(None);
    }
    let Some(d) = t.read(x, "x")? else { return Ok(None) };
    let out = PyDict::new(py);
    out.set_item("ptr", d.ptr)?;
    out.set_item("bytes", d.bytes)?;
    out.set_item("dtype", d.layout.dtype().to_string())?;
    out.set_item("shape", d.layout.shape().to_vec())?;
    out.set_item("strides", d.layout.strides().to_vec())?;
    out.set_item("device", d.device)?;
    Ok(Some(out))
}

/// The host cost of reading one argument, `n` times, in nanoseconds per read: `"torch"` the
/// direct read of a `torch.Tensor`'s attributes the bindings use (then its layout), `"dlpack"`
/// the DLPack export they used before (the device look-up, `__dlpack__(stream=-1,
/// max_version=(1, 0))`, the capsule read, the deleter). Any device: a CPU tensor measures the
/// same Python-level work, so the figure is taken on a machine without a GPU. For
/// bench/host_cost.py; nothing is launched.
#[pyfunction]
pub fn _read_cost(py: Python<'_>, x: &Bound<'_, PyAny>, n: usize, path: &str) -> PyResult<f64> {
    let t = torch(py)?
        .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("torch is not imported"))?;
    let start = std::time::Instant::now();
    for _ in 0..n {
        match path {
            "torch" => {
                let f = t.fields(x)?.ok_or_else(|| {
                    pyo3::exceptions::PyTypeError::new_err(
                        "not a strided tensor of a tilekit dtype",
                    )
                })?;
                let layout = TensorLayout::strided(f.dtype, f.shape, f.strides, 0)
                    .map_err(|e| ShapeError::new_err(e.to_string()))?;
                let owner: Arc<dyn std::any::Any + Send + Sync> = Arc::new(x.clone().unbind());
                std::hint::black_box((layout, owner, f.ptr, f.device, f.is_cuda));
            }
            "dlpack" => {
                // what torch_device read of a CUDA tensor, then the export and its view
                let py = x.py();
                let index: i64 = x.call_method0(intern!(py, "get_device"))?.extract()?;
                let cuda = x.getattr(intern!(py, "is_cuda"))?.is_truthy()?;
                let c = dlpack::consume(x, "x", Handshake::NoSync)?;
                let view = dlpack::layout_of(c.tensor(), "x")?;
                std::hint::black_box((index, cuda, view, c));
            }
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "path {other:?}: \"torch\" or \"dlpack\""
                )))
            }
        }
    }
    Ok(start.elapsed().as_nanos() as f64 / n.max(1) as f64)
}

fn run(
    py: Python<'_>,
    objs: &[Arg<'_, '_>],
    f: impl FnOnce(&Cuda, &mut [DeviceTensor]) -> tilekit_ops::Result<()> + Send,
) -> PyResult<()> {
    // dropped last (locals drop in reverse order): after the tensors and the backend
    let _caller_context = SavedContext::save();
    let (cuda, mut tensors) = read_all(py, objs)?;
    py.detach(|| f(&cuda, &mut tensors)).map_err(|e| ops_err(&e))
}

/// `y = x` (same shape and dtype, any strides of either).
#[pyfunction]
pub fn copy_into(py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::copy_into(c, &x[0], &mut y[0])
    })
}

/// `y = x` with the last two dims swapped.
#[pyfunction]
pub fn transpose_into(py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::transpose_into(c, &x[0], &mut y[0])
    })
}

/// `y = x.permute(dims)`.
#[pyfunction]
pub fn permute_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    dims: Vec<usize>,
) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::permute_into(c, &x[0], &dims, &mut y[0])
    })
}

/// The number of elements of the Morton storage of an `h × w` image in `tile × tile` tiles.
#[pyfunction]
pub fn morton_len(h: i64, w: i64, tile: i64) -> PyResult<i64> {
    api::morton_len(h, w, tile).map_err(|e| ops_err(&e))
}

/// `x` (H × W) into its tiled Morton storage `y` (1-D, at least `morton_len` elements).
#[pyfunction]
pub fn morton_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    tile: i64,
) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::morton_into(c, &x[0], tile, &mut y[0])
    })
}

/// The H × W image `y` back from its tiled Morton storage `s`.
#[pyfunction]
pub fn unmorton_into(
    py: Python<'_>,
    s: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    tile: i64,
) -> PyResult<()> {
    run(py, &[(s, "s", false), (y, "out", true)], |c, t| {
        let (s, y) = t.split_at_mut(1);
        api::unmorton_into(c, &s[0], tile, &mut y[0])
    })
}

/// Row sums (f32) along the last dim.
#[pyfunction]
pub fn row_sum_into(py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::row_sum_into(c, &x[0], &mut y[0])
    })
}

/// Row maxima (f32) along the last dim.
#[pyfunction]
pub fn row_max_into(py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::row_max_into(c, &x[0], &mut y[0])
    })
}

/// Softmax along the last dim (f32 math, x's dtype).
#[pyfunction]
pub fn softmax_into(py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<()> {
    run(py, &[(x, "x", false), (y, "out", true)], |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::softmax_into(c, &x[0], &mut y[0])
    })
}

fn binary(
    py: Python<'_>,
    op: Binary,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<()> {
    run(py, &[(a, "a", false), (b, "b", false), (y, "out", true)], |c, t| {
        let (ab, y) = t.split_at_mut(2);
        api::binary_op_into(c, op, &ab[0], &ab[1], &mut y[0])
    })
}

/// `y = a + b` with broadcasting.
#[pyfunction]
pub fn add_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<()> {
    binary(py, Binary::Add, a, b, y)
}

/// `y = a · b` with broadcasting.
#[pyfunction]
pub fn mul_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<()> {
    binary(py, Binary::Mul, a, b, y)
}

/// `y = max(a, b)` with broadcasting.
#[pyfunction]
pub fn maximum_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<()> {
    binary(py, Binary::Max, a, b, y)
}

/// `c = a @ b` (f16/bf16 in on tensor cores, or f32 in on the CUDA cores; f32 out).
#[pyfunction]
pub fn gemm_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
) -> PyResult<()> {
    run(py, &[(a, "a", false), (b, "b", false), (c, "out", true)], |cu, t| {
        let (ab, c) = t.split_at_mut(2);
        api::gemm_into(cu, &ab[0], &ab[1], &mut c[0])
    })
}

/// `c = act(alpha · a @ b + beta · c + bias)` (f16/bf16 in, or f32 with `tf32`; c f32 or the
/// inputs' type; bias `None` or N elements of c's type or f32; `activation` "none", "relu" or
/// "gelu").
#[pyfunction]
#[pyo3(signature = (a, b, c, bias, alpha, beta, activation, tf32 = false))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_ex_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    alpha: f32,
    beta: f32,
    activation: &str,
    tf32: bool,
) -> PyResult<()> {
    run_gemm(py, (a, b, c, bias), (alpha, beta, activation, tf32), false)
}

/// The Python tensors a, b, c and an optional bias through `api::gemm_ex` or (`batched`, rank-3
/// operands) `api::gemm_batched_into`, with the epilogue (alpha, beta, activation name, tf32).
#[allow(clippy::type_complexity)]
fn run_gemm(
    py: Python<'_>,
    (a, b, c, bias): (
        &Bound<'_, PyAny>,
        &Bound<'_, PyAny>,
        &Bound<'_, PyAny>,
        Option<&Bound<'_, PyAny>>,
    ),
    (alpha, beta, activation, tf32): (f32, f32, &str, bool),
    batched: bool,
) -> PyResult<()> {
    let act = activation_named(activation)?;
    let mut objs = vec![(a, "a", false), (b, "b", false), (c, "out", true)];
    if let Some(bias) = bias {
        objs.push((bias, "bias", false));
    }
    run(py, &objs, move |cu, t| {
        let (abc, rest) = t.split_at_mut(3);
        let (ab, c) = abc.split_at_mut(2);
        let mut opts = api::GemmOptions::new().alpha(alpha).beta(beta).activation(act).tf32(tf32);
        if let Some(bias) = rest.first() {
            opts = opts.bias(bias);
        }
        if batched {
            api::gemm_batched_into(cu, &ab[0], &ab[1], &mut c[0], &opts)
        } else {
            api::gemm_ex(cu, &ab[0], &ab[1], &mut c[0], &opts)
        }
    })
}

/// The epilogue's activation by its Python name.
fn activation_named(activation: &str) -> PyResult<api::Activation> {
    match activation {
        "none" => Ok(api::Activation::None),
        "relu" => Ok(api::Activation::Relu),
        "gelu" => Ok(api::Activation::Gelu),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "activation {other:?}: valid are \"none\", \"relu\", \"gelu\""
        ))),
    }
}

/// `c[i] = act(alpha · a[i] @ b[i] + beta · c[i] + bias)` for every entry i of rank-3 a, b, c
/// (a batch length of 1 is shared by every entry): `api::gemm_batched_into`, one launch for a
/// strided batch on a Hopper GPU.
#[pyfunction]
#[pyo3(signature = (a, b, c, bias, alpha, beta, activation, tf32 = false))]
#[allow(clippy::too_many_arguments)]
pub fn gemm_batched_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    alpha: f32,
    beta: f32,
    activation: &str,
    tf32: bool,
) -> PyResult<()> {
    run_gemm(py, (a, b, c, bias), (alpha, beta, activation, tf32), true)
}

/// Fused attention forward (`api::attention_into`, the Hopper kernel): `o = softmax(q·kᵀ ·
/// scale [+ causal mask]) · v` and its log-sum-exp `lse`, q `(b, s_q, h, d)`, k and v
/// `(b, s_k, h_kv, d)`, o `(b, s_q, h, d)` of q's type, lse `(b, h, s_q)` f32; `scale` `None`
/// is `1/√d`; `causal` is bottom-right aligned (key `j` masked for query `i` when
/// `j > i + s_k − s_q`).
#[pyfunction]
#[pyo3(signature = (q, k, v, o, lse, causal, scale))]
#[allow(clippy::too_many_arguments)]
pub fn attention_into(
    py: Python<'_>,
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    o: &Bound<'_, PyAny>,
    lse: &Bound<'_, PyAny>,
    causal: bool,
    scale: Option<f64>,
) -> PyResult<()> {
    let objs =
        [(q, "q", false), (k, "k", false), (v, "v", false), (o, "out", true), (lse, "lse", true)];
    run(py, &objs, move |cu, t| {
        let (qkv, ol) = t.split_at_mut(3);
        let (o, lse) = ol.split_at_mut(1);
        api::attention_into(cu, &qkv[0], &qkv[1], &qkv[2], causal, scale, &mut o[0], &mut lse[0])
    })
}

/// Adds every op binding to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(copy_into, m)?)?;
    m.add_function(wrap_pyfunction!(transpose_into, m)?)?;
    m.add_function(wrap_pyfunction!(permute_into, m)?)?;
    m.add_function(wrap_pyfunction!(morton_len, m)?)?;
    m.add_function(wrap_pyfunction!(morton_into, m)?)?;
    m.add_function(wrap_pyfunction!(unmorton_into, m)?)?;
    m.add_function(wrap_pyfunction!(row_sum_into, m)?)?;
    m.add_function(wrap_pyfunction!(row_max_into, m)?)?;
    m.add_function(wrap_pyfunction!(softmax_into, m)?)?;
    m.add_function(wrap_pyfunction!(add_into, m)?)?;
    m.add_function(wrap_pyfunction!(mul_into, m)?)?;
    m.add_function(wrap_pyfunction!(maximum_into, m)?)?;
    m.add_function(wrap_pyfunction!(gemm_into, m)?)?;
    m.add_function(wrap_pyfunction!(gemm_ex_into, m)?)?;
    m.add_function(wrap_pyfunction!(gemm_batched_into, m)?)?;
    m.add_function(wrap_pyfunction!(attention_into, m)?)?;
    m.add_function(wrap_pyfunction!(_read_cost, m)?)?;
    m.add_function(wrap_pyfunction!(_read_torch, m)?)?;
    Ok(())
}
