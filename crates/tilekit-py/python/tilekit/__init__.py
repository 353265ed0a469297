"""tilekit: GPU kernels from a tile-programming IR, on PyTorch CUDA tensors.

Every op takes CUDA tensors (anything with ``__dlpack__``; PyTorch's in practice), reads them
through DLPack without copies, allocates its output with ``torch.empty`` on the input's
device (or writes into ``out=``), and launches on the input's current PyTorch stream, so it
orders with the surrounding PyTorch work like any PyTorch op::

    import torch, tilekit
    x = torch.randn(37, 1001, device="cuda")
    y = tilekit.softmax(x)                       # rows of the last dimension
    torch.testing.assert_close(y, torch.softmax(x, -1))
    svg, words = tilekit.show("H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]")

Errors are ``tilekit.Error`` subclasses naming the problem: ``DeviceError`` (a CPU tensor),
``DTypeError`` (a dtype the op does not take), ``ShapeError`` (shapes, strides or ``out`` that
do not fit), ``GpuError`` (driver, JIT or launch), ``EncodingError`` (``show``); a non-tensor
argument is a ``TypeError``.
"""

from . import _tilekit
from ._tilekit import (
    DeviceError,
    DTypeError,
    EncodingError,
    Error,
    GpuError,
    ShapeError,
    read_dlpack,
    show,
)

__all__ = [
    "Error",
    "DeviceError",
    "DTypeError",
    "ShapeError",
    "GpuError",
    "EncodingError",
    "show",
    "read_dlpack",
    "transpose",
    "permute",
    "copy",
    "morton",
    "unmorton",
    "row_sum",
    "row_max",
    "softmax",
    "add",
    "mul",
    "maximum",
    "gemm",
]


def _type_name(x):
    return type(x).__module__ + "." + type(x).__qualname__


def _check_tensor(x, what):
    """The torch tensor ``x`` detached (DLPack refuses tensors that require grad), after the
    checks that give the typed errors before anything is allocated."""
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(
            f"{what} must be a CUDA tensor (an object with __dlpack__ and __dlpack_device__, "
            f"such as a torch.Tensor), got {_type_name(x)}"
        )
    device = getattr(x, "device", None)
    if device is None or not hasattr(x, "detach"):
        raise TypeError(f"{what} must be a torch.Tensor (outputs are allocated with torch), "
                        f"got {_type_name(x)}")
    if device.type != "cuda":
        raise DeviceError(
            f"tilekit runs on CUDA tensors; got {what} on {device} — move it with {what}.cuda()"
        )
    return x.detach()


def _stream(x):
    import torch

    return torch.cuda.current_stream(x.device).cuda_stream


def _output(out, shape, like, what="out"):
    """``out`` checked against the shape, dtype and device the op produces, or a new tensor."""
    import torch

    shape = tuple(int(s) for s in shape)
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    out = _check_tensor(out, what)
    if tuple(out.shape) != shape:
        raise ShapeError(
            f"{what} has shape {tuple(out.shape)}: the result has shape {shape}"
        )
    if out.dtype != like.dtype:
        raise DTypeError(f"{what} has dtype {out.dtype}: the result has dtype {like.dtype}")
    if out.device != like.device:
        raise DeviceError(f"{what} is on {out.device}: the inputs are on {like.device}")
    return out


def _same_device(a, b):
    if a.device != b.device:
        raise DeviceError(f"the inputs are on different devices: {a.device} and {b.device}")


def transpose(x, out=None):
    """The transpose of a 2-D tensor, materialised: ``x.t().contiguous()``."""
    x = _check_tensor(x, "x")
    if x.dim() != 2:
        raise ShapeError(f"transpose takes a 2-D tensor; x has shape {tuple(x.shape)}")
    y = _output(out, (x.shape[1], x.shape[0]), x)
    _tilekit.transpose_into(x, y, _stream(x))
    return y


def permute(x, dims, out=None):
    """``x.permute(dims).contiguous()`` of a 3-D tensor (every permutation of 3 dims)."""
    x = _check_tensor(x, "x")
    dims = [int(d) for d in dims]
    if sorted(dims) != list(range(x.dim())):
        raise ShapeError(
            f"dims {dims} must name every dimension of x (shape {tuple(x.shape)}) exactly once"
        )
    y = _output(out, [x.shape[d] for d in dims], x)
    _tilekit.permute_into(x, y, dims, _stream(x))
    return y


def copy(x, out=None):
    """A contiguous copy of ``x``."""
    x = _check_tensor(x, "x")
    y = _output(out, x.shape, x)
    _tilekit.copy_into(x, y, _stream(x))
    return y


def morton(x, out=None):
    """A 2-D tensor stored in Morton (Z-order) order of 8×8 tiles, same shape."""
    x = _check_tensor(x, "x")
    y = _output(out, x.shape, x)
    _tilekit.morton_into(x, y, _stream(x))
    return y


def unmorton(x, out=None):
    """The inverse of :func:`morton`."""
    x = _check_tensor(x, "x")
    y = _output(out, x.shape, x)
    _tilekit.unmorton_into(x, y, _stream(x))
    return y


def _row_reduce(name, x, out):
    x = _check_tensor(x, "x")
    if x.dim() < 1:
        raise ShapeError(f"{name} takes a tensor of rank >= 1; x has shape {tuple(x.shape)}")
    y = _output(out, x.shape[:-1], x)
    getattr(_tilekit, name + "_into")(x, y, _stream(x))
    return y


def row_sum(x, out=None):
    """The sum over the last dimension: ``x.sum(-1)``."""
    return _row_reduce("row_sum", x, out)


def row_max(x, out=None):
    """The maximum over the last dimension: ``x.amax(-1)``."""
    return _row_reduce("row_max", x, out)


def softmax(x, out=None):
    """Softmax over the last dimension (computed in f32): ``torch.softmax(x, -1)``."""
    x = _check_tensor(x, "x")
    y = _output(out, x.shape, x)
    _tilekit.softmax_into(x, y, _stream(x))
    return y


def _binary(name, a, b, out):
    a = _check_tensor(a, "a")
    b = _check_tensor(b, "b")
    _same_device(a, b)
    import torch

    try:
        shape = torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ShapeError(
            f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast"
        ) from None
    y = _output(out, shape, a)
    getattr(_tilekit, name + "_into")(a, b, y, _stream(a))
    return y


def add(a, b, out=None):
    """``a + b`` with broadcasting."""
    return _binary("add", a, b, out)


def mul(a, b, out=None):
    """``a * b`` with broadcasting."""
    return _binary("mul", a, b, out)


def maximum(a, b, out=None):
    """``torch.maximum(a, b)`` with broadcasting."""
    return _binary("maximum", a, b, out)


def gemm(a, b, out=None):
    """``a @ b`` of 2-D tensors (M×K times K×N)."""
    a = _check_tensor(a, "a")
    b = _check_tensor(b, "b")
    _same_device(a, b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ShapeError(
            f"gemm takes a of shape (M, K) and b of shape (K, N); got {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )
    y = _output(out, (a.shape[0], b.shape[1]), a)
    _tilekit.gemm_into(a, b, y, _stream(a))
    return y
