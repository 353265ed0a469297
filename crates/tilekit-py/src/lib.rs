//! `tilekit._tilekit`: the Rust half of the `tilekit` Python package.
//!
//! ```text
//!   python/tilekit/__init__.py            this extension module
//!   ───────────────────────────           ─────────────────────────────────────────────
//!   y = torch.empty(shape, like x)   ──►  transpose_into(x, y)   (no stream argument)
//!   torch.ops.tilekit.transpose_into       │ the caller's CUDA context saved; PyTorch's
//!   (a torch.library op: autograd's        │ current stream of the tensors' device;
//!   version counters, torch.compile,       │ dlpack::export(x), (y): pointers, layouts,
//!   CUDA graphs)                           │ owners (no copies); DeviceTensor::from_raw_parts,
//!                                          │ tilekit_ops::api::*_into; context restored
//!                                          ▼ errors → tilekit.Error subclasses
//!   show(encoding) ──► (svg, words)   (CPU only: the tile layer's parser and renderer)
//!   interp_run(op, inputs, outputs) ──► the outputs' bytes   (tilekit.interp: the library's
//!                                       kernels on the CPU interpreter, no GPU; interp.rs)
//! ```
//!
//! The Python layer allocates outputs with PyTorch, so every tensor tilekit touches is
//! PyTorch's memory on PyTorch's stream; the Rust side only borrows it for one call.

#![deny(missing_docs)]

use pyo3::prelude::*;
use pyo3::types::PyDict;

mod dlpack;
mod errors;
mod interp;
mod ops;
mod show;

use errors::{
    DTypeError, DeviceError, EncodingError, Error, GpuError, OverlapError, ReadOnlyError,
    ShapeError,
};

/// Reads a DLPack producer and releases it at once: what tilekit sees of a tensor (pointer,
/// byte extent, dtype name, shape, strides, offset in elements, device ordinal, whether the
/// capsule was versioned and read-only). For tests and debugging of the zero-copy path; the
/// producer's deleter runs before this returns. `stream` is only the handshake value passed
/// to the producer (nothing is launched): `None` is what the ops pass (-1 to a `torch.Tensor`,
/// the legacy default stream to others). `output` refuses a read-only export as the ops do
/// for the tensors they write (ReadOnlyError).
#[pyfunction]
#[pyo3(signature = (x, stream = None, output = false))]
fn read_dlpack<'py>(
    x: &Bound<'py, PyAny>,
    stream: Option<u64>,
    output: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let handshake = match stream {
        Some(s) => dlpack::Handshake::Stream(s),
        None => ops::default_handshake(x)?,
    };
    let t = dlpack::read(x, "x", handshake, output)?;
    let d = PyDict::new(x.py());
    d.set_item("ptr", t.ptr)?;
    d.set_item("bytes", t.bytes)?;
    d.set_item("dtype", t.layout.dtype().to_string())?;
    d.set_item("shape", t.layout.shape().to_vec())?;
    d.set_item("strides", t.layout.strides().to_vec())?;
    d.set_item("offset", t.layout.offset())?;
    d.set_item("device", t.device)?;
    d.set_item("versioned", t.versioned)?;
    d.set_item("read_only", t.flags & dlpack::FLAG_READ_ONLY != 0)?;
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
    m.add("OverlapError", py.get_type::<OverlapError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    // the crate's version is the wheel's (maturin takes it from Cargo.toml)
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(show::show, m)?)?;
    m.add_function(wrap_pyfunction!(read_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(interp::interp_run, m)?)?;
    ops::register(m)?;
    Ok(())
}
