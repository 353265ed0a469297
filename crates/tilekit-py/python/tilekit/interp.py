"""tilekit's ops on its CPU interpreter: the same kernels as on the GPU, run without one.

The interpreter executes the kernel IR the PTX is made from (the Hopper kernels included), with
every launch checked for races and out-of-bounds accesses. It is slow (seconds for a few
thousand elements of a GEMM), so it is for correctness on small shapes, not for timing::

    import numpy as np
    from tilekit import interp
    x = np.random.rand(3, 100).astype(np.float32)
    y = interp.softmax(x)                          # a NumPy array
    a = interp.Bits.bf16(np.random.rand(16, 32))   # bfloat16 from NumPy (bit patterns)
    c = interp.gemm(a, a.T, out_dtype="bf16")      # a Bits of bf16, (16, 16)

Arguments are CPU ``torch.Tensor``s (results are CPU tensors) or NumPy arrays (results are NumPy
arrays); NumPy has no bfloat16, so bf16 goes in and out as :class:`Bits` (the uint16 bit
patterns, ``Bits.bf16`` rounds floats to nearest even). Strided views — a transposed weight
``w.T``, any permutation of a dense tensor — reach the kernel with their strides, as on the GPU;
other strides are made contiguous first. Errors are the GPU ops' typed errors
(``tilekit.ShapeError``, ``DTypeError``, ...).
"""

import ctypes

from . import _tilekit
from ._tilekit import DeviceError, ShapeError

__all__ = ["Bits", "copy", "transpose", "softmax", "row_sum", "row_max", "add", "mul",
           "maximum", "gemm", "attention"]

_NP_NAMES = {"float32": "f32", "float16": "f16", "float64": "f64", "int32": "i32",
             "uint32": "u32", "int64": "i64"}
_TORCH_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
                "int32": "i32", "uint32": "u32", "int64": "i64"}
_SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "u32": 4, "i64": 8}


class Bits:
    """A NumPy array of bit patterns tagged with the dtype they encode (``"bf16"``: uint16)."""

    def __init__(self, bits, dtype="bf16"):
        if dtype != "bf16":
            raise ValueError(f"Bits holds bf16 bit patterns; got dtype {dtype!r}")
        if str(bits.dtype) != "uint16":
            raise TypeError(f"bf16 bits are a uint16 array, got {bits.dtype}")
        self.bits, self.dtype = bits, dtype

    @staticmethod
    def bf16(values):
        """Floats rounded to the nearest bfloat16 (ties to even; NaN stays NaN)."""
        import numpy as np

        u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        nan = (u & 0x7FFFFFFF) > 0x7F800000
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return Bits(np.where(nan, np.uint16(0x7FC0), r))

    def float(self):
        """The values as a float32 NumPy array (exact)."""
        import numpy as np

        return (self.bits.astype(np.uint32) << 16).view(np.float32)

    @property
    def shape(self):
        return self.bits.shape

    @property
    def T(self):
        return Bits(self.bits.T, self.dtype)

    def __repr__(self):
        return f"Bits({self.dtype}, shape={self.shape})"


def _dense_order(shape, strides):
    """The dims from outermost to innermost when ``strides`` describe a dense permutation of
    ``shape`` (every element once, no gaps), else None."""
    dims = sorted(range(len(shape)), key=lambda i: (-strides[i], -i))
    expect = 1
    for i in reversed(dims):
        if shape[i] != 1 and strides[i] != expect:
            return None
        expect *= shape[i]
    return dims


def _torch_input(x, what):
    name = _TORCH_NAMES.get(str(x.dtype).replace("torch.", ""))
    if name is None:
        raise _tilekit.DTypeError(f"{what} has dtype {x.dtype}: the interpreter takes "
                                  f"{', '.join(_TORCH_NAMES)}")
    if x.device.type != "cpu":
        raise DeviceError(f"tilekit.interp runs on CPU tensors; {what} is on {x.device} — "
                          f"pass {what}.cpu()")
    x = x.detach()
    shape, strides = list(x.shape), list(x.stride())
    order = _dense_order(shape, strides)
    if order is None:
        x = x.contiguous()
        strides, order = list(x.stride()), list(range(x.dim()))
    dense = x.permute(order) if order else x
    nbytes = x.numel() * x.element_size()
    data = ctypes.string_at(dense.data_ptr(), nbytes) if nbytes else b""
    return (name, shape, strides, 0, data)


def _numpy_input(x, what):
    import numpy as np

    if isinstance(x, Bits):
        arr, name = x.bits, "bf16"
    else:
        arr = np.asarray(x)
        name = _NP_NAMES.get(str(arr.dtype))
        if name is None:
            raise _tilekit.DTypeError(
                f"{what} has dtype {arr.dtype}: the interpreter takes "
                f"{', '.join(_NP_NAMES)} (and bf16 as tilekit.interp.Bits)")
    size = arr.itemsize
    shape = list(arr.shape)
    strides = [s // size if s % size == 0 else None for s in arr.strides]
    order = None if None in strides or any(s < 0 for s in strides) else _dense_order(shape,
                                                                                    strides)
    if order is None:
        arr = np.ascontiguousarray(arr)
        strides, order = [s // size for s in arr.strides], list(range(arr.ndim))
        if arr.ndim == 0:
            strides = []
    data = np.ascontiguousarray(arr.transpose(order)).tobytes() if arr.ndim else arr.tobytes()
    return (name, shape, strides, 0, data)


class _Kind:
    """How the results come back: torch tensors or NumPy arrays, like the first argument."""

    def __init__(self, first):
        mod = type(first).__module__
        self.torch = mod.startswith("torch")

    def read(self, x, what):
        if self.torch:
            if not type(x).__module__.startswith("torch"):
                raise TypeError(f"{what} must be a torch.Tensor like the first argument, got "
                                f"{type(x).__module__}.{type(x).__qualname__}")
            return _torch_input(x, what)
        return _numpy_input(x, what)

    def result(self, data, dtype, shape):
        if self.torch:
            import torch

            tdt = getattr(torch, {v: k for k, v in _TORCH_NAMES.items()}[dtype])
            if not data:
                return torch.empty(shape, dtype=tdt)
            return torch.frombuffer(bytearray(data), dtype=tdt).reshape(shape)
        import numpy as np

        if dtype == "bf16":
            return Bits(np.frombuffer(data, dtype=np.uint16).reshape(shape).copy())
        ndt = {v: k for k, v in _NP_NAMES.items()}[dtype]
        return np.frombuffer(data, dtype=ndt).reshape(shape).copy()


def _run(op, args, outputs, **kw):
    kind = _Kind(args[0][1])
    specs = [kind.read(x, what) for what, x in args]
    outs = [(dtype if dtype is not None else specs[0][0], list(shape))
            for dtype, shape in outputs]
    data = _tilekit.interp_run(op, specs, outs, **kw)
    return [kind.result(d, dt, sh) for d, (dt, sh) in zip(data, outs)], specs


def _shape(x):
    return tuple(x.shape)


def copy(x):
    """A contiguous copy of ``x`` (the copy kernel)."""
    return _run("copy", [("x", x)], [(None, _shape(x))])[0][0]


def transpose(x):
    """The last two dims swapped, materialised."""
    s = _shape(x)
    if len(s) < 2:
        raise ShapeError(f"transpose swaps the last two dims: x must have rank >= 2, got {s}")
    return _run("transpose", [("x", x)], [(None, s[:-2] + (s[-1], s[-2]))])[0][0]


def softmax(x):
    """Softmax over the last dimension (f32 math, ``x``'s dtype)."""
    return _run("softmax", [("x", x)], [(None, _shape(x))])[0][0]


def row_sum(x):
    """The float32 sum over the last dimension."""
    s = _shape(x)
    if not s:
        raise ShapeError("row_sum takes a tensor of rank >= 1; x has shape ()")
    return _run("row_sum", [("x", x)], [("f32", s[:-1])])[0][0]


def row_max(x):
    """The maximum over the last dimension, as float32."""
    s = _shape(x)
    if not s:
        raise ShapeError("row_max takes a tensor of rank >= 1; x has shape ()")
    return _run("row_max", [("x", x)], [("f32", s[:-1])])[0][0]


def _binary(op, a, b):
    sa, sb = _shape(a), _shape(b)
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    if any(x != y and 1 not in (x, y) for x, y in zip(pa, pb)):
        raise ShapeError(f"{op}: shapes {sa} and {sb} do not broadcast")
    shape = tuple(max(x, y) if 0 not in (x, y) else 0 for x, y in zip(pa, pb))
    return _run(op, [("a", a), ("b", b)], [(None, shape)])[0][0]


def add(a, b):
    """``a + b`` with broadcasting."""
    return _binary("add", a, b)


def mul(a, b):
    """``a * b`` with broadcasting."""
    return _binary("mul", a, b)


def maximum(a, b):
    """The elementwise maximum with broadcasting."""
    return _binary("maximum", a, b)


def gemm(a, b, out_dtype="f32"):
    """``a @ b`` of (M, K) and (K, N) matrices: float16/bfloat16 on the Hopper kernel's IR, the
    result float32 (the default) or the inputs' dtype (``out_dtype`` ``"bf16"`` / ``"f16"``);
    float32 inputs on the CUDA-core kernel (float32 result)."""
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        raise ShapeError(f"gemm takes a of shape (M, K) and b of shape (K, N); got {sa} and {sb}")
    if out_dtype not in _SIZES:
        raise ValueError(f"out_dtype {out_dtype!r}: one of {', '.join(_SIZES)}")
    return _run("gemm", [("a", a), ("b", b)], [(out_dtype, (sa[0], sb[1]))])[0][0]


def attention(q, k, v, causal=False, scale=None, return_lse=False):
    """Fused attention forward of q (b, s_q, h, d) and k, v (b, s_k, h_kv, d), float16 or
    bfloat16, ``causal`` aligned to the bottom-right corner (key j masked for query i when
    j > i + s_k - s_q); as :func:`tilekit.attention` with ``layout="bshd"``."""
    sq = _shape(q)
    if len(sq) != 4:
        raise ShapeError(f"q has shape {sq}: attention takes rank-4 (batch, seq, heads, head dim)")
    b, s, h, _ = sq
    (o, lse), _ = _run("attention", [("q", q), ("k", k), ("v", v)],
                       [(None, sq), ("f32", (b, h, s))], causal=bool(causal),
                       scale=None if scale is None else float(scale))
    return (o, lse) if return_lse else o
