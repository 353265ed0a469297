//! The op bindings: each `*_into` takes DLPack producers (inputs, then the outputs the Python
//! layer allocated with PyTorch) and calls `tilekit_ops::api::*_into` on [`DeviceTensor`]s
//! over the producers' memory. The stream is never an argument: the binding finds it.
//!
//! ```text
//!   transpose_into(x, y) ─► caller's CUDA context saved (restored when the call ends, errors
//!                           and panics included: no context leaks into PyTorch)
//!                        ─► each producer's device, nothing exported yet: a torch.Tensor's
//!                           get_device(), else __dlpack_device__(); one ordinal, else DeviceError
//!                        ─► the stream: a torch.Tensor among them → PyTorch's current stream of
//!                           that device (torch._C._cuda_getCurrentRawStream, looked up once),
//!                           the device's context current while PyTorch exports; else the
//!                           legacy default stream
//!                        ─► dlpack::export each (torch: stream=-1, no sync needed; others: the
//!                           stream), cross-checked against the ordinal; outputs writable
//!                        ─► CUDA[ordinal] (Cuda::open once: loaded kernels are kept)
//!                           .on_borrowed_stream(stream)
//!                        ─► DeviceTensor::from_raw_parts(ptr, bytes, layout, owner)
//!                        ─► api::transpose_into(&cuda, &x, &mut y)   (GIL released)
//!                        ─► owners dropped: the producers' deleters run; context restored
//! ```
//!
//! The launch is asynchronous on the stream PyTorch would use for its own op on that device,
//! so it orders with the surrounding PyTorch work (and is captured by `torch.cuda.graph`);
//! PyTorch's caching allocator keeps the memory of a tensor freed later on that stream until the
//! kernel is done, as for its own ops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use tilekit_cuda::cudarc::driver::sys;
use tilekit_cuda::DeviceTensor;
use tilekit_ops::api;
use tilekit_ops::backend::Cuda;
use tilekit_ops::elementwise::Binary;

use crate::dlpack::{self, Handshake};
use crate::errors::{cuda_err, ops_err, DeviceError, GpuError};

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
    let t = Torch {
        tensor: tensor.cast_into::<PyType>()?.unbind(),
        raw_stream,
        current_stream: cuda.getattr("current_stream")?.unbind(),
    };
    Ok(Some(TORCH.get_or_init(py, || t)))
}

impl Torch {
    fn is_tensor(&self, obj: &Bound<'_, PyAny>) -> bool {
        obj.is_instance(self.tensor.bind(obj.py())).unwrap_or(false)
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
    let mut devices = Vec::with_capacity(objs.len());
    for (obj, name, _) in objs {
        let is_torch = torch.is_some_and(|t| t.is_tensor(obj));
        let device =
            if is_torch { torch_device(obj, name)? } else { dlpack::cuda_device(obj, name)? };
        devices.push((device, is_torch));
    }
    let (first, first_name) = (devices[0].0, objs[0].1);
    if let Some(((device, _), (_, name, _))) =
        devices.iter().zip(objs).find(|((d, _), _)| *d != first)
    {
        return Err(DeviceError::new_err(format!(
            "{first_name} is on cuda:{first} but {name} is on cuda:{device}: every tensor of a \
             call must be on one device"
        )));
    }
    let mut opened = None;
    let mut stream = 0; // the legacy default stream: no torch.Tensor among the producers
    if let Some(t) = torch.filter(|_| devices.iter().any(|(_, is_torch)| *is_torch)) {
        let cuda = backend(first)?;
        // the device's context current while PyTorch exports (its __dlpack__ may refuse a
        // tensor of another device than the current one); the caller's comes back at the end
        cuda.gpu()
            .context()
            .bind_to_thread()
            .map_err(|e| GpuError::new_err(format!("cuCtxSetCurrent: {e}")))?;
        stream = t.stream(py, first)?;
        opened = Some(cuda);
    }
    let mut read = Vec::with_capacity(objs.len());
    for ((obj, name, output), (device, is_torch)) in objs.iter().zip(&devices) {
        let handshake = if *is_torch { Handshake::NoSync } else { Handshake::Stream(stream) };
        read.push(dlpack::export(obj, name, *device, handshake, *output)?);
    }
    let base = match opened {
        Some(c) => c,
        None => backend(first)?,
    };
    // SAFETY: `stream` is PyTorch's current stream of this device (alive while PyTorch runs
    // on it, which spans this call) or the legacy default stream
    let cuda = unsafe { base.on_borrowed_stream(stream) };
    let mut tensors = Vec::with_capacity(read.len());
    for t in read {
        let owner: Arc<dyn std::any::Any + Send + Sync> = t.owner;
        // SAFETY: ptr .. ptr + bytes is the producer's memory on this device (DLPack), kept
        // alive by `owner`; the producer's pending work is ordered with `stream` (the same
        // stream for a torch.Tensor, the handshake for others)
        let d =
            unsafe { DeviceTensor::from_raw_parts(cuda.gpu(), t.ptr, t.bytes, t.layout, owner) }
                .map_err(|e| cuda_err(&e))?;
        tensors.push(d);
    }
    Ok((cuda, tensors))
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
    Ok(())
}
