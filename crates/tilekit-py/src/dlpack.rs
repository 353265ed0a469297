//! DLPack input without copies: any object with `__dlpack__` / `__dlpack_device__` (a PyTorch
//! tensor, a CuPy array, a JAX array) becomes a pointer, a byte extent and a
//! [`TensorLayout`], with an owner that keeps the producer's memory alive.
//!
//! ```text
//!   x.__dlpack_device__()  ──► (2 = kDLCUDA, ordinal)      anything else: DeviceError
//!   x.__dlpack__(stream=s, max_version=(1, 0))             (TypeError: a pre-1.0 producer,
//!        │                                                  asked again without max_version)
//!        ├─► PyCapsule "dltensor_versioned" ──► *mut DLManagedTensorVersioned
//!        │      { version (major > 1: refused unread), deleter, flags, dl_tensor }
//!        └─► PyCapsule "dltensor"           ──► *mut DLManagedTensor { dl_tensor, deleter }
//!                                                          │
//!        DLTensor { data, device, ndim, dtype, shape, strides (NULL = row-major), byte_offset }
//!        device must be (kDLCUDA, the ordinal asked for), else DeviceError; an output with
//!        DLPACK_FLAG_BITMASK_READ_ONLY or _IS_COPIED: ReadOnlyError
//!                                                          │
//!   capsule renamed "used_dltensor[_versioned]" (we own it now; the producer's capsule
//!   destructor leaves it alone)                            ▼
//!   Dlpack { ptr = data, layout = strided(dtype, shape, strides, byte_offset / size),
//!            bytes = layout's span in bytes, owner: Arc<DlpackOwner> }
//!   last clone of the owner dropped ──► managed->deleter(managed)   (once, under the GIL)
//! ```
//!
//! The stream handshake is the protocol's ([`Handshake`]): the consumer passes the raw
//! `CUstream` it will use (1 for the legacy default stream, since 0 is ambiguous in the
//! protocol) and the producer makes that stream wait for its pending work; or -1, no
//! synchronisation, which the op bindings pass to a `torch.Tensor` because they launch on that
//! tensor's own current PyTorch stream (nothing to order, as for a PyTorch op).

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tilekit_ir::tensor::TensorLayout;
use tilekit_ir::ScalarType;

use crate::errors::{DTypeError, DeviceError, ReadOnlyError, ShapeError};

/// `DLDeviceType::kDLCUDA`.
pub const KDL_CUDA: i32 = 2;

/// `DLDevice`: where the memory lives.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLDevice {
    /// `DLDeviceType` (a C enum: `int32_t`-sized).
    pub device_type: i32,
    /// The device ordinal.
    pub device_id: i32,
}

/// `DLDataType`: type code, bits per lane, lanes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    /// `kDLInt` 0, `kDLUInt` 1, `kDLFloat` 2, `kDLOpaqueHandle` 3, `kDLBfloat` 4,
    /// `kDLComplex` 5, `kDLBool` 6, float8 variants 7..=13, float6/float4 14..=17.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: the borrowed view.
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    /// Device pointer (the start of the allocation the offsets count from).
    pub data: *mut c_void,
    /// Where `data` lives.
    pub device: DLDevice,
    /// Rank.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` lengths.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for a compact row-major tensor.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor`: the view plus who frees it (DLPack before 1.0, capsule "dltensor").
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The view.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it is done (may be NULL).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPackVersion`: the ABI version a versioned tensor was made for.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLPackVersion {
    /// Major version: a consumer must not read past `flags` of a major it does not know.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `DLManagedTensorVersioned` (DLPack 1.0, capsule "dltensor_versioned"): the version and the
/// deleter first (the part every major version keeps), then flags and the view.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The producer's DLPack version.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Called once by the consumer when it is done (may be NULL).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*`.
    pub flags: u64,
    /// The view.
    pub dl_tensor: DLTensor,
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the memory.
pub const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer exported a copy (writes would not reach it).
pub const FLAG_IS_COPIED: u64 = 2;

#[derive(Debug)]
enum Managed {
    Unversioned(*mut DLManagedTensor),
    Versioned(*mut DLManagedTensorVersioned),
}

/// Owns a consumed managed tensor (either kind): dropping the last clone calls its deleter once.
#[derive(Debug)]
pub struct DlpackOwner {
    managed: Managed,
}

// SAFETY: the managed tensor is only touched in `drop`, which takes the GIL before calling
// the producer's deleter (PyTorch's deleter frees a C++ tensor and may drop Python references).
unsafe impl Send for DlpackOwner {}
// SAFETY: no method reads the pointer through a shared reference.
unsafe impl Sync for DlpackOwner {}

impl Drop for DlpackOwner {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a capsule that we renamed, so we are its only consumer
        // and this is the single call of its deleter the protocol asks for.
        Python::attach(|_| unsafe {
            match self.managed {
                Managed::Unversioned(m) => {
                    if let Some(deleter) = (*m).deleter {
                        deleter(m);
                    }
                }
                Managed::Versioned(m) => {
                    if let Some(deleter) = (*m).deleter {
                        deleter(m);
                    }
                }
            }
        });
    }
}

/// A tensor read from DLPack: device pointer, the bytes its layout spans from that pointer,
/// the layout (offset = `byte_offset` in elements), the CUDA ordinal, and the owner.
#[derive(Debug, Clone)]
pub struct Dlpack {
    /// `DLTensor::data`.
    pub ptr: u64,
    /// Bytes from `ptr` the layout reaches (offset and span included).
    pub bytes: usize,
    /// dtype, shape, strides and offset in elements.
    pub layout: TensorLayout,
    /// The CUDA device ordinal.
    pub device: usize,
    /// The producer gave a versioned (DLPack 1.x) capsule.
    pub versioned: bool,
    /// The versioned capsule's flags (0 for an unversioned one).
    pub flags: u64,
    /// Keeps the producer's memory alive; the deleter runs when the last clone drops.
    pub owner: Arc<DlpackOwner>,
}

/// The names tilekit accepts, for DTypeError messages.
pub const VALID_DTYPES: &str = "float32, float16, bfloat16, float64, int32, uint32, int64";

/// A DLPack dtype as tilekit's scalar type, or `None`.
pub fn scalar_type(t: DLDataType) -> Option<ScalarType> {
    if t.lanes != 1 {
        return None;
    }
    Some(match (t.code, t.bits) {
        (2, 32) => ScalarType::F32,
        (2, 16) => ScalarType::F16,
        (2, 64) => ScalarType::F64,
        (4, 16) => ScalarType::BF16,
        (0, 32) => ScalarType::I32,
        (0, 64) => ScalarType::I64,
        (1, 32) => ScalarType::U32,
        _ => return None,
    })
}

/// A readable name of a DLPack dtype (PyTorch's spelling where there is one).
pub fn dtype_name(t: DLDataType) -> String {
    let base = match t.code {
        0 => format!("int{}", t.bits),
        1 => format!("uint{}", t.bits),
        2 => format!("float{}", t.bits),
        3 => format!("opaque handle ({} bits)", t.bits),
        4 => format!("bfloat{}", t.bits),
        5 => format!("complex{}", t.bits),
        6 => "bool".to_string(),
        7..=13 => format!("float8 variant (DLPack code {})", t.code),
        c => format!("DLPack type code {c} ({} bits)", t.bits),
    };
    if t.lanes == 1 {
        base
    } else {
        format!("{base}x{}", t.lanes)
    }
}

/// The device names of `DLDeviceType`, for DeviceError messages.
pub fn device_name(device_type: i32) -> String {
    match device_type {
        1 => "cpu".into(),
        2 => "cuda".into(),
        3 => "cuda pinned host memory (kDLCUDAHost)".into(),
        4 => "opencl".into(),
        7 => "vulkan".into(),
        8 => "metal (mps)".into(),
        9 => "vpi".into(),
        10 => "rocm".into(),
        11 => "rocm pinned host memory".into(),
        12 => "an extension device".into(),
        13 => "cuda managed memory (kDLCUDAManaged)".into(),
        14 => "oneapi (xpu)".into(),
        15 => "webgpu".into(),
        16 => "hexagon".into(),
        17 => "maia".into(),
        t => format!("DLPack device type {t}"),
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// The CUDA ordinal of a DLPack producer, or the typed error: TypeError when `obj` has no
/// DLPack methods, DeviceError when it is not on a CUDA device.
pub fn cuda_device(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    if !obj.hasattr("__dlpack__")? || !obj.hasattr("__dlpack_device__")? {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a CUDA tensor (an object with __dlpack__ and __dlpack_device__, \
             such as a torch.Tensor), got {}",
            type_name(obj)
        )));
    }
    let (device_type, device_id): (i32, i64) =
        obj.call_method0("__dlpack_device__")?.extract().map_err(|e| {
            PyTypeError::new_err(format!(
                "{what}.__dlpack_device__() must return (device_type, device_id): {e}"
            ))
        })?;
    if device_type != KDL_CUDA {
        return Err(DeviceError::new_err(format!(
            "tilekit runs on CUDA tensors; {what} is a tensor on {} — move it with {what}.cuda()",
            device_name(device_type)
        )));
    }
    usize::try_from(device_id).map_err(|_| {
        DeviceError::new_err(format!("{what} is on CUDA device {device_id}: not a valid ordinal"))
    })
}

const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

/// What a consumer passes as `__dlpack__(stream=...)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// `-1`: no synchronisation (the consumer launches on the producer's own current stream,
    /// so there is nothing to order: what tilekit passes to a `torch.Tensor`).
    NoSync,
    /// A raw `CUstream` the producer makes wait for its pending work (0, the legacy default
    /// stream, is passed as 1 as the protocol asks).
    Stream(u64),
}

/// `{"stream": ..., "max_version": (1, 0)}` (or without `max_version`, for producers older than
/// DLPack 1.0).
fn dlpack_kwargs<'py>(
    py: Python<'py>,
    handshake: Handshake,
    versioned: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let kwargs = PyDict::new(py);
    match handshake {
        Handshake::NoSync => kwargs.set_item("stream", -1)?,
        Handshake::Stream(0) => kwargs.set_item("stream", 1)?,
        Handshake::Stream(s) => kwargs.set_item("stream", s)?,
    }
    if versioned {
        kwargs.set_item("max_version", (1, 0))?;
    }
    Ok(kwargs)
}

/// Reads `obj` through DLPack (see [`export`]) after asking it for its device (CUDA only).
pub fn read(
    obj: &Bound<'_, PyAny>,
    what: &str,
    handshake: Handshake,
    output: bool,
) -> PyResult<Dlpack> {
    let device = cuda_device(obj, what)?;
    export(obj, what, device, handshake, output)
}

/// A consumed DLPack capsule: the owner of its managed tensor (the deleter runs when the last
/// clone drops), whether it was versioned, and its flags (0 when unversioned).
#[derive(Debug)]
pub struct Consumed {
    /// Keeps the producer's memory alive.
    pub owner: Arc<DlpackOwner>,
    /// A "dltensor_versioned" capsule.
    pub versioned: bool,
    /// `DLPACK_FLAG_BITMASK_*` (0 for an unversioned capsule).
    pub flags: u64,
}

impl Consumed {
    /// The producer's view.
    pub fn tensor(&self) -> &DLTensor {
        // SAFETY: the producer keeps the managed tensor valid until the deleter runs, which
        // the owner (held by self) delays; a versioned tensor's major version was checked
        unsafe {
            match self.owner.managed {
                Managed::Unversioned(m) => &(*m).dl_tensor,
                Managed::Versioned(m) => &(*m).dl_tensor,
            }
        }
    }
}

/// `obj.__dlpack__(stream=..., max_version=(1, 0))`, or without `max_version` for a producer
/// that does not take it (a TypeError), and the capsule consumed: "dltensor_versioned" or
/// "dltensor"; a capsule whose DLPack major version is over 1 is refused (TypeError; released
/// unread). Nothing about the tensor is checked yet (see [`export`]).
pub fn consume(obj: &Bound<'_, PyAny>, what: &str, handshake: Handshake) -> PyResult<Consumed> {
    let py = obj.py();
    let capsule =
        match obj.call_method("__dlpack__", (), Some(&dlpack_kwargs(py, handshake, true)?)) {
            Ok(c) => c,
            // a producer from before DLPack 1.0: no max_version keyword
            Err(e) if e.is_instance_of::<PyTypeError>(py) => obj
                .call_method("__dlpack__", (), Some(&dlpack_kwargs(py, handshake, false)?))
                .map_err(|e2| if e2.is_instance_of::<PyTypeError>(py) { e } else { e2 })?,
            Err(e) => return Err(e),
        };
    let cap = capsule.as_ptr();
    // SAFETY: plain CPython capsule calls on a live object we hold a reference to; the
    // pointer is read only after the capsule's name says which struct it is
    let managed = unsafe {
        if ffi::PyCapsule_IsValid(cap, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, DLTENSOR_VERSIONED.as_ptr())
                .cast::<DLManagedTensorVersioned>();
            if p.is_null() {
                return Err(PyErr::fetch(py));
            }
            // we are the consumer now: the producer's capsule destructor must not free it
            if ffi::PyCapsule_SetName(cap, USED_DLTENSOR_VERSIONED.as_ptr() as *const c_char) != 0 {
                return Err(PyErr::fetch(py));
            }
            Managed::Versioned(p)
        } else if ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
            if p.is_null() {
                return Err(PyErr::fetch(py));
            }
            if ffi::PyCapsule_SetName(cap, USED_DLTENSOR.as_ptr() as *const c_char) != 0 {
                return Err(PyErr::fetch(py));
            }
            Managed::Unversioned(p)
        } else {
            return Err(PyTypeError::new_err(format!(
                "{what}.__dlpack__() must return a PyCapsule named \"dltensor_versioned\" or \
                 \"dltensor\" (a consumed capsule cannot be read twice), got {}",
                type_name(&capsule)
            )));
        }
    };
    // from here on, the owner calls the deleter on every path, errors included
    let owner = Arc::new(DlpackOwner { managed });
    // SAFETY: as in Consumed::tensor; only the version and flags (the part every major
    // version keeps) are read before the major version is checked
    let (versioned, flags) = unsafe {
        match owner.managed {
            Managed::Unversioned(_) => (false, 0),
            Managed::Versioned(m) => {
                let v = (*m).version;
                if v.major > 1 {
                    return Err(PyTypeError::new_err(format!(
                        "{what}.__dlpack__() gave a DLPack {}.{} tensor: tilekit reads DLPack \
                         up to 1.x",
                        v.major, v.minor
                    )));
                }
                (true, (*m).flags)
            }
        }
    };
    Ok(Consumed { owner, versioned, flags })
}

/// The layout (offset = `byte_offset` in elements) and the bytes it spans of a DLPack view;
/// typed errors for a dtype tilekit does not take and for layouts that do not fit.
pub fn layout_of(t: &DLTensor, what: &str) -> PyResult<(TensorLayout, usize)> {
    let dtype = scalar_type(t.dtype).ok_or_else(|| {
        DTypeError::new_err(format!(
            "{what} has dtype {}: tilekit tensors are {VALID_DTYPES}",
            dtype_name(t.dtype)
        ))
    })?;
    let ndim = usize::try_from(t.ndim)
        .map_err(|_| ShapeError::new_err(format!("{what} has rank {}: must be >= 0", t.ndim)))?;
    // SAFETY: `shape` (and `strides` when not NULL) hold `ndim` entries per the DLPack spec
    let shape: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec()
    };
    let strides: Option<Vec<i64>> = if t.strides.is_null() || ndim == 0 {
        None
    } else {
        // SAFETY: `strides` is not NULL here and holds `ndim` entries (DLPack)
        Some(unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec())
    };
    let es = dtype.size_bytes() as u64;
    if !t.byte_offset.is_multiple_of(es) {
        return Err(ShapeError::new_err(format!(
            "{what} has byte_offset {}: not a multiple of its element size {es}",
            t.byte_offset
        )));
    }
    let offset = i64::try_from(t.byte_offset / es).map_err(|_| {
        ShapeError::new_err(format!("{what} has byte_offset {}: too large", t.byte_offset))
    })?;
    let layout = match strides {
        None => TensorLayout::contiguous(dtype, shape.clone()).and_then(|l| l.with_offset(offset)),
        Some(s) => TensorLayout::strided(dtype, shape.clone(), s, offset),
    }
    .map_err(|e| ShapeError::new_err(format!("{what} (shape {shape:?}): {e}")))?;
    let bytes = if layout.numel() == 0 { 0 } else { layout.size_bytes() as usize };
    Ok((layout, bytes))
}

/// Reads `obj`, whose device is CUDA `device` (from `__dlpack_device__` or the tensor itself),
/// through DLPack ([`consume`], then the view). No copy: the result points into `obj`'s memory
/// and owns the managed tensor.
///
/// Refused: a capsule whose DLPack major version is over 1 (TypeError; released unread), a
/// tensor on another device type or another ordinal than `device` (DeviceError), and, for an
/// `output`, one exported read-only or as a copy (ReadOnlyError).
pub fn export(
    obj: &Bound<'_, PyAny>,
    what: &str,
    device: usize,
    handshake: Handshake,
    output: bool,
) -> PyResult<Dlpack> {
    let consumed = consume(obj, what, handshake)?;
    let (versioned, flags) = (consumed.versioned, consumed.flags);
    let t = consumed.tensor();
    if t.device.device_type != KDL_CUDA {
        return Err(DeviceError::new_err(format!(
            "tilekit runs on CUDA tensors; {what}.__dlpack__() gave a tensor on {} — move it \
             with {what}.cuda()",
            device_name(t.device.device_type)
        )));
    }
    if i64::from(t.device.device_id) != device as i64 {
        return Err(DeviceError::new_err(format!(
            "{what} is on cuda:{device} but its DLPack tensor says cuda:{}: the producer \
             disagrees with itself",
            t.device.device_id
        )));
    }
    if output && flags & FLAG_READ_ONLY != 0 {
        return Err(ReadOnlyError::new_err(format!(
            "{what} is read-only (its DLPack export has DLPACK_FLAG_BITMASK_READ_ONLY): tilekit \
             would write it; pass a writable tensor"
        )));
    }
    if output && flags & FLAG_IS_COPIED != 0 {
        return Err(ReadOnlyError::new_err(format!(
            "{what} was exported as a copy (DLPACK_FLAG_BITMASK_IS_COPIED): tilekit's writes \
             would not reach it; pass a tensor the producer exports in place"
        )));
    }
    let (layout, bytes) = layout_of(t, what)?;
    let ptr = t.data as u64;
    let owner = consumed.owner;
    Ok(Dlpack { ptr, bytes, layout, device, versioned, flags, owner })
}
