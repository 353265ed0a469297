//! `tilekit._tilekit`: the Rust half of the `tilekit` Python package.
//!
//! ```text
//!   python/tilekit/__init__.py            this extension module
//!   ───────────────────────────           ─────────────────────────────────────────────
//!   y = torch.empty(shape, like x)   ──►  transpose_into(x, y, stream)
//!   stream = current_stream(x).cuda_stream   │ dlpack::read(x), dlpack::read(y): pointers,
//!                                            │ layouts, owners (no copies)
//!                                            │ DeviceTensor::from_raw_parts, Cuda backend on
//!                                            │ the raw stream, tilekit_ops::api::*_into
//!                                            ▼ errors → tilekit.Error subclasses
//!   show(encoding) ──► (svg, words)   (CPU only: the tile layer's parser and renderer)
//! ```
//!
//! The Python layer allocates outputs with PyTorch, so every tensor tilekit touches is
//! PyTorch's memory on PyTorch's stream; the Rust side only borrows it for one call.

#![deny(missing_docs)]

use pyo3::prelude::*;
use pyo3::types::PyDict;

mod dlpack;
mod errors;
mod ops;
mod show;

use errors::{DTypeError, DeviceError, EncodingError, Error, GpuError, ShapeError};

/// Reads a DLPack producer and releases it at once: what tilekit sees of a tensor (pointer,
/// byte extent, dtype name, shape, strides, offset in elements, device ordinal). For tests
/// and debugging of the zero-copy path; the producer's deleter runs before this returns.
#[pyfunction]
#[pyo3(signature = (x, stream = 0))]
fn read_dlpack<'py>(x: &Bound<'py, PyAny>, stream: u64) -> PyResult<Bound<'py, PyDict>> {
    let t = dlpack::read(x, "x", stream)?;
    let d = PyDict::new(x.py());
    d.set_item("ptr", t.ptr)?;
    d.set_item("bytes", t.bytes)?;
    d.set_item("dtype", t.layout.dtype().to_string())?;
    d.set_item("shape", t.layout.shape().to_vec())?;
    d.set_item("strides", t.layout.strides().to_vec())?;
    d.set_item("offset", t.layout.offset())?;
    d.set_item("device", t.device)?;
    Ok(d)
}

#[pymodule]
fn _tilekit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("DeviceError", py.get_type::<DeviceError>())?;
    m.add("DTypeError", py.get_type::<DTypeError>())?;
    m.add("ShapeError", py.get_type::<ShapeError>())?;
    m.add("GpuError", py.get_type::<GpuError>())?;
    m.add("EncodingError", py.get_type::<EncodingError>())?;
    m.add_function(wrap_pyfunction!(show::show, m)?)?;
    m.add_function(wrap_pyfunction!(read_dlpack, m)?)?;
    ops::register(m)?;
    Ok(())
}
