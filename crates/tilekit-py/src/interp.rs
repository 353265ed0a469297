//! The CPU interpreter from Python: the library's ops on host bytes, without a GPU.
//!
//! ```text
//!   tilekit.interp.gemm(a, b)          (python/tilekit/interp.py: torch CPU tensors or NumPy
//!        │                              arrays → dtype name, shape, strides, offset, bytes)
//!        ▼
//!   interp_run("gemm", inputs, outputs) ─► HostTensor::new(HostBuffer::from_bytes(..), layout)
//!                                       ─► outputs: Interp.empty (NaN-poisoned), contiguous
//!                                       ─► tilekit_ops::api::*(&Interp, ..)   (GIL released)
//!                                       ─► each output's bytes (row-major)
//! ```
//!
//! The same kernels as on the GPU (the interpreter runs the IR the PTX is made from, sm_90a
//! included), with every launch checked for races and out-of-bounds accesses; slow, so for
//! small shapes: correctness only. Errors are the ops' typed errors, as on the GPU.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tilekit_ir::interp::HostBuffer;
use tilekit_ir::tensor::{HostTensor, TensorLayout};
use tilekit_ir::ScalarType;
use tilekit_ops::api;
use tilekit_ops::backend::{Backend, Interp};

use crate::errors::{ops_err, tensor_err, DTypeError, ShapeError};

/// The dtypes by tilekit's short names (`ScalarType::name`).
const DTYPES: [ScalarType; 7] = [
    ScalarType::F32,
    ScalarType::F16,
    ScalarType::BF16,
    ScalarType::F64,
    ScalarType::I32,
    ScalarType::U32,
    ScalarType::I64,
];

fn dtype_named(name: &str, what: &str) -> PyResult<ScalarType> {
    DTYPES.iter().copied().find(|t| t.name() == name).ok_or_else(|| {
        DTypeError::new_err(format!(
            "{what} has dtype {name}: the interpreter takes f32, f16, bf16, f64, i32, u32, i64"
        ))
    })
}

/// One input as Python passes it: dtype name, shape, strides and offset in elements, and the
/// bytes of the storage the layout addresses.
type Input<'py> = (String, Vec<i64>, Vec<i64>, i64, Bound<'py, PyBytes>);

fn host_tensor(input: &Input<'_>, what: &str) -> PyResult<HostTensor> {
    let (dtype, shape, strides, offset, bytes) = input;
    let dtype = dtype_named(dtype, what)?;
    let buffer = HostBuffer::from_bytes(dtype, bytes.as_bytes().to_vec()).ok_or_else(|| {
        ShapeError::new_err(format!(
            "{what}: {} bytes are not a whole number of {dtype} elements",
            bytes.as_bytes().len()
        ))
    })?;
    let layout = TensorLayout::strided(dtype, shape.clone(), strides.clone(), *offset)
        .map_err(|e| ShapeError::new_err(format!("{what} (shape {shape:?}): {e}")))?;
    HostTensor::new(buffer, layout).map_err(|e| tensor_err(&e))
}

/// The names of each op's inputs and outputs, in the order Python passes them.
fn arity(op: &str) -> PyResult<(&'static [&'static str], &'static [&'static str])> {
    Ok(match op {
        "copy" | "transpose" | "softmax" | "row_sum" | "row_max" => (&["x"], &["out"]),
        "add" | "mul" | "maximum" => (&["a", "b"], &["out"]),
        "gemm" => (&["a", "b"], &["out"]),
        "attention" => (&["q", "k", "v"], &["out", "lse"]),
        other => {
            return Err(PyValueError::new_err(format!(
                "op {other:?}: the interpreter runs copy, transpose, softmax, row_sum, row_max, \
                 add, mul, maximum, gemm, attention"
            )))
        }
    })
}

/// Runs `op` on the CPU interpreter: `inputs` as [`Input`]s, `outputs` as (dtype name, shape)
/// of new row-major tensors; returns the outputs' bytes. `causal` and `scale` are attention's
/// (bottom-right causal mask; `None` is 1/√d). A gemm of f16/bf16 inputs runs the Hopper
/// kernel's IR (`api::gemm_ex`, C of f32 or the inputs' type); of f32 inputs the CUDA-core
/// kernel (`api::gemm_into`).
#[pyfunction]
#[pyo3(signature = (op, inputs, outputs, causal = false, scale = None))]
pub fn interp_run<'py>(
    py: Python<'py>,
    op: &str,
    inputs: Vec<Input<'py>>,
    outputs: Vec<(String, Vec<i64>)>,
    causal: bool,
    scale: Option<f64>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let (in_names, out_names) = arity(op)?;
    if inputs.len() != in_names.len() || outputs.len() != out_names.len() {
        return Err(PyValueError::new_err(format!(
            "{op} takes {} inputs and {} outputs; got {} and {}",
            in_names.len(),
            out_names.len(),
            inputs.len(),
            outputs.len()
        )));
    }
    let xs = inputs
        .iter()
        .zip(in_names)
        .map(|(i, name)| host_tensor(i, name))
        .collect::<PyResult<Vec<_>>>()?;
    let mut ys = Vec::with_capacity(outputs.len());
    for ((dtype, shape), name) in outputs.iter().zip(out_names) {
        let dtype = dtype_named(dtype, name)?;
        ys.push(Interp.empty(dtype, shape).map_err(|e| ops_err(&e))?);
    }
    let op = op.to_string();
    let ys = py
        .detach(move || -> tilekit_ops::Result<Vec<HostTensor>> {
            let b = &Interp;
            match (op.as_str(), ys.as_mut_slice()) {
                ("copy", [y]) => api::copy_into(b, &xs[0], y)?,
                ("transpose", [y]) => api::transpose_into(b, &xs[0], y)?,
                ("softmax", [y]) => api::softmax_into(b, &xs[0], y)?,
                ("row_sum", [y]) => api::row_sum_into(b, &xs[0], y)?,
                ("row_max", [y]) => api::row_max_into(b, &xs[0], y)?,
                ("add", [y]) => api::binary_op_into(
                    b,
                    tilekit_ops::elementwise::Binary::Add,
                    &xs[0],
                    &xs[1],
                    y,
                )?,
                ("mul", [y]) => api::binary_op_into(
                    b,
                    tilekit_ops::elementwise::Binary::Mul,
                    &xs[0],
                    &xs[1],
                    y,
                )?,
                ("maximum", [y]) => api::binary_op_into(
                    b,
                    tilekit_ops::elementwise::Binary::Max,
                    &xs[0],
                    &xs[1],
                    y,
                )?,
                ("gemm", [y]) if xs[0].dtype() == ScalarType::F32 => {
                    api::gemm_into(b, &xs[0], &xs[1], y)?
                }
                ("gemm", [y]) => api::gemm_ex(b, &xs[0], &xs[1], y, &api::GemmOptions::new())?,
                ("attention", [o, lse]) => {
                    api::attention_into(b, &xs[0], &xs[1], &xs[2], causal, scale, o, lse)?
                }
                _ => unreachable!("arity() checked the op and the number of outputs"),
            }
            Ok(ys)
        })
        .map_err(|e| ops_err(&e))?;
    ys.iter()
        .map(|y| {
            let y = y.contiguous().map_err(|e| tensor_err(&e))?;
            let buf = y.buffer();
            let n = y.layout().numel() as usize * y.dtype().size_bytes();
            Ok(PyBytes::new(py, &buf.as_bytes()[..n]))
        })
        .collect()
}
