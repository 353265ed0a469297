//! The op bindings: each `*_into` takes DLPack producers (inputs, then the output the Python
//! layer allocated with PyTorch) and the raw `CUstream` to launch on, and calls
//! `tilekit_ops::api::*_into` on [`DeviceTensor`]s over the producers' memory.
//!
//! ```text
//!   transpose_into(x, y, stream) ─► dlpack::read(x), dlpack::read(y)   one ordinal, else DeviceError
//!                                ─► CUDA[ordinal] (Cuda::open once: loaded kernels are kept)
//!                                   .on_borrowed_stream(stream)
//!                                ─► DeviceTensor::from_raw_parts(ptr, bytes, layout, owner)
//!                                ─► api::transpose_into(&cuda, &x, &mut y)   (GIL released)
//!                                ─► owners dropped: the producers' deleters run
//! ```
//!
//! The launch is asynchronous on the caller's stream; PyTorch's caching allocator keeps the
//! memory of a tensor freed later on that stream until the kernel is done, as for its own ops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use tilekit_cuda::DeviceTensor;
use tilekit_ops::api;
use tilekit_ops::backend::Cuda;
use tilekit_ops::elementwise::Binary;

use crate::dlpack;
use crate::errors::{cuda_err, ops_err, DeviceError};

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

/// Reads `objs` (named in messages) on `stream`: all on one CUDA device, each a
/// [`DeviceTensor`] over the producer's memory, and the backend on that stream.
fn read_all(
    objs: &[(&Bound<'_, PyAny>, &str)],
    stream: u64,
) -> PyResult<(Cuda, Vec<DeviceTensor>)> {
    let mut read = Vec::with_capacity(objs.len());
    for (obj, name) in objs {
        read.push((dlpack::read(obj, name, stream)?, *name));
    }
    let (first, first_name) = (read[0].0.device, read[0].1);
    if let Some((t, name)) = read.iter().find(|(t, _)| t.device != first) {
        return Err(DeviceError::new_err(format!(
            "{first_name} is on cuda:{first} but {name} is on cuda:{}: every tensor of a call \
             must be on one device",
            t.device
        )));
    }
    // SAFETY: `stream` is the producers' current stream on this device (the Python layer
    // passes torch.cuda.current_stream(x.device).cuda_stream), alive during the call
    let cuda = unsafe { backend(first)?.on_borrowed_stream(stream) };
    let mut tensors = Vec::with_capacity(read.len());
    for (t, _) in read {
        let owner: Arc<dyn std::any::Any + Send + Sync> = t.owner;
        // SAFETY: ptr .. ptr + bytes is the producer's memory on this device (DLPack), kept
        // alive by `owner`; the producer ordered its pending work with `stream` in __dlpack__
        let d =
            unsafe { DeviceTensor::from_raw_parts(cuda.gpu(), t.ptr, t.bytes, t.layout, owner) }
                .map_err(|e| cuda_err(&e))?;
        tensors.push(d);
    }
    Ok((cuda, tensors))
}

fn run(
    py: Python<'_>,
    objs: &[(&Bound<'_, PyAny>, &str)],
    stream: u64,
    f: impl FnOnce(&Cuda, &mut [DeviceTensor]) -> tilekit_ops::Result<()> + Send,
) -> PyResult<()> {
    let (cuda, mut tensors) = read_all(objs, stream)?;
    py.detach(|| f(&cuda, &mut tensors)).map_err(|e| ops_err(&e))
}

/// `y = x` (same shape and dtype, any strides of either).
#[pyfunction]
pub fn copy_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::copy_into(c, &x[0], &mut y[0])
    })
}

/// `y = x` with the last two dims swapped.
#[pyfunction]
pub fn transpose_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
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
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
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
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
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
    stream: u64,
) -> PyResult<()> {
    run(py, &[(s, "s"), (y, "out")], stream, |c, t| {
        let (s, y) = t.split_at_mut(1);
        api::unmorton_into(c, &s[0], tile, &mut y[0])
    })
}

/// Row sums (f32) along the last dim.
#[pyfunction]
pub fn row_sum_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::row_sum_into(c, &x[0], &mut y[0])
    })
}

/// Row maxima (f32) along the last dim.
#[pyfunction]
pub fn row_max_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
        let (x, y) = t.split_at_mut(1);
        api::row_max_into(c, &x[0], &mut y[0])
    })
}

/// Softmax along the last dim (f32 math, x's dtype).
#[pyfunction]
pub fn softmax_into(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    run(py, &[(x, "x"), (y, "out")], stream, |c, t| {
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
    stream: u64,
) -> PyResult<()> {
    run(py, &[(a, "a"), (b, "b"), (y, "out")], stream, |c, t| {
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
    stream: u64,
) -> PyResult<()> {
    binary(py, Binary::Add, a, b, y, stream)
}

/// `y = a · b` with broadcasting.
#[pyfunction]
pub fn mul_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    binary(py, Binary::Mul, a, b, y, stream)
}

/// `y = max(a, b)` with broadcasting.
#[pyfunction]
pub fn maximum_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    binary(py, Binary::Max, a, b, y, stream)
}

/// `c = a @ b` (f16/bf16 in on tensor cores, or f32 in on the CUDA cores; f32 out).
#[pyfunction]
pub fn gemm_into(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    c: &Bound<'_, PyAny>,
    stream: u64,
) -> PyResult<()> {
    run(py, &[(a, "a"), (b, "b"), (c, "out")], stream, |cu, t| {
        let (ab, c) = t.split_at_mut(2);
        api::gemm_into(cu, &ab[0], &ab[1], &mut c[0])
    })
}

/// `c = act(alpha · a @ b + beta · c + bias)` (f16/bf16 in, or f32 with `tf32`; c f32 or the
/// inputs' type; bias `None` or N elements of c's type or f32; `activation` "none", "relu" or
/// "gelu").
#[pyfunction]
#[pyo3(signature = (a, b, c, bias, alpha, beta, activation, stream, tf32 = false))]
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
    stream: u64,
    tf32: bool,
) -> PyResult<()> {
    run_gemm(py, (a, b, c, bias), (alpha, beta, activation, tf32), stream, false)
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
    stream: u64,
    batched: bool,
) -> PyResult<()> {
    let act = activation_named(activation)?;
    let mut objs = vec![(a, "a"), (b, "b"), (c, "out")];
    if let Some(bias) = bias {
        objs.push((bias, "bias"));
    }
    run(py, &objs, stream, move |cu, t| {
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
#[pyo3(signature = (a, b, c, bias, alpha, beta, activation, stream, tf32 = false))]
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
    stream: u64,
    tf32: bool,
) -> PyResult<()> {
    run_gemm(py, (a, b, c, bias), (alpha, beta, activation, tf32), stream, true)
}

/// Fused attention forward (`api::attention_into`, the Hopper kernel): `o = softmax(q·kᵀ ·
/// scale [+ causal mask]) · v` and its log-sum-exp `lse`, q `(b, s_q, h, d)`, k and v
/// `(b, s_k, h_kv, d)`, o `(b, s_q, h, d)` of q's type, lse `(b, h, s_q)` f32; `scale` `None`
/// is `1/√d`; `causal` is bottom-right aligned (key `j` masked for query `i` when
/// `j > i + s_k − s_q`).
#[pyfunction]
#[pyo3(signature = (q, k, v, o, lse, causal, scale, stream))]
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
    stream: u64,
) -> PyResult<()> {
    let objs = [(q, "q"), (k, "k"), (v, "v"), (o, "out"), (lse, "lse")];
    run(py, &objs, stream, move |cu, t| {
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
