"""tilekit: GPU kernels from a tile-programming IR, on PyTorch CUDA tensors.

Every op takes CUDA tensors (``torch.Tensor``), reads them through DLPack without copies,
allocates its output with ``torch.empty`` on the input's device (or writes into ``out=``), and
launches on the input device's current PyTorch stream, so it orders with the surrounding
PyTorch work like any PyTorch op::

    import torch, tilekit
    x = torch.randn(37, 1001, device="cuda")
    y = tilekit.softmax(x)                       # rows of the last dimension
    torch.testing.assert_close(y, torch.softmax(x, -1))
    svg, words = tilekit.show("H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]")
    q = torch.randn(2, 1000, 8, 128, device="cuda", dtype=torch.bfloat16)  # (b, s, h, d)
    o = tilekit.attention(q, q, q, causal=True)  # fused attention forward (Hopper)

PyTorch operators: every kernel is a ``torch.library`` operator, ``torch.ops.tilekit.*_into``
(``softmax_into(Tensor x, Tensor(a!) out)``, ``gemm_ex_into``, ``attention_into``, ...), which
the functions here call after their checks and allocations. So the ops

- keep autograd honest: writing ``out=`` bumps its version counter (a tensor saved for backward
  and then overwritten fails at ``backward()`` as after a PyTorch in-place op), and ``out=`` with
  grad mode on refuses a tensor that requires grad (a leaf ``nn.Parameter`` included) or inputs
  that require grad, with PyTorch's own ``RuntimeError`` for ``out=`` functions. The ops have no
  derivatives: results never require grad (under ``torch.no_grad()`` anything goes);
- trace under ``torch.compile(fullgraph=True)`` (fake implementations give the shapes; the
  functions' checks run at trace time) and are captured by ``torch.cuda.graph``.

The operators are registered when ``tilekit`` is imported after ``torch``, or else on the first
op call: import torch before tilekit (or call one op eagerly) before ``torch.compile``. Without
torch installed the package imports and ``show`` works; the ops need torch.

Without a GPU, ``tilekit.interp`` runs the same kernels on tilekit's CPU interpreter (CPU
tensors or NumPy arrays; slow: for correctness on small shapes, as ``bench/suite.py --backend
interp`` does).

The stream is never an argument: the bindings use PyTorch's current stream of the tensors'
device, and leave the calling thread's CUDA context (PyTorch's current device) as they found it.

Errors are ``tilekit.Error`` subclasses naming the problem: ``DeviceError`` (a CPU tensor),
``DTypeError`` (a dtype the op does not take), ``ShapeError`` (shapes, strides or ``out`` that
do not fit) and its subclass ``OverlapError`` (an output sharing memory with an input or another
output where the op cannot run in place: ``transpose(x, out=x)``, ``gemm(a, b, out=a)``;
elementwise ops, ``softmax`` and ``copy`` onto the same view run in place), ``ReadOnlyError`` (an
output exported read-only through DLPack), ``GpuError`` (driver, JIT or launch),
``EncodingError`` (``show``); a non-tensor argument is a ``TypeError``.
"""

import sys as _sys

from . import _tilekit, interp
from ._tilekit import (
    DeviceError,
    DTypeError,
    EncodingError,
    Error,
    GpuError,
    OverlapError,
    ReadOnlyError,
    ShapeError,
    __version__,
    read_dlpack,
    show,
)

__all__ = [
    "__version__",
    "Error",
    "DeviceError",
    "DTypeError",
    "ShapeError",
    "OverlapError",
    "ReadOnlyError",
    "GpuError",
    "EncodingError",
    "show",
    "read_dlpack",
    "transpose",
    "permute",
    "copy",
    "morton",
    "morton_len",
    "unmorton",
    "row_sum",
    "row_max",
    "softmax",
    "add",
    "mul",
    "maximum",
    "gemm",
    "bmm",
    "attention",
    "interp",
]


# ---- the torch.library operators -----------------------------------------------------------------

# (binding in _tilekit, schema): tensors written are annotated Tensor(a!) (mutated: autograd's
# version counters, functionalisation under torch.compile)
_SCHEMAS = {
    "copy_into": "(Tensor x, Tensor(a!) out) -> ()",
    "transpose_into": "(Tensor x, Tensor(a!) out) -> ()",
    "permute_into": "(Tensor x, Tensor(a!) out, int[] dims) -> ()",
    "morton_into": "(Tensor x, Tensor(a!) out, int tile) -> ()",
    "unmorton_into": "(Tensor s, Tensor(a!) out, int tile) -> ()",
    "row_sum_into": "(Tensor x, Tensor(a!) out) -> ()",
    "row_max_into": "(Tensor x, Tensor(a!) out) -> ()",
    "softmax_into": "(Tensor x, Tensor(a!) out) -> ()",
    "add_into": "(Tensor a, Tensor b, Tensor(a!) out) -> ()",
    "mul_into": "(Tensor a, Tensor b, Tensor(a!) out) -> ()",
    "maximum_into": "(Tensor a, Tensor b, Tensor(a!) out) -> ()",
    "gemm_into": "(Tensor a, Tensor b, Tensor(a!) out) -> ()",
    "gemm_ex_into": "(Tensor a, Tensor b, Tensor(a!) out, Tensor? bias, float alpha, float beta, "
                    "str activation, bool tf32) -> ()",
    "gemm_batched_into": "(Tensor a, Tensor b, Tensor(a!) out, Tensor? bias, float alpha, "
                         "float beta, str activation, bool tf32) -> ()",
    "attention_into": "(Tensor q, Tensor k, Tensor v, Tensor(a!) out, Tensor(b!) lse, bool causal, "
                      "float? scale, str layout) -> ()",
}

_torch = None  # the torch module, once the operators are registered
_Tensor = None  # torch.Tensor, likewise
_LIB = None  # the torch.library.Library (kept: dropping it would unregister the operators)
_OPS = {}  # binding name -> torch.ops.tilekit.<name>.default


def _nograd(t):
    """``t`` as DLPack takes it: a tensor that requires grad detached (same memory; the
    kernels run below autograd, where the flag is still set)."""
    return t.detach() if t.requires_grad else t


def _bump(*written):
    """Bumps the version counters of the tensors a kernel wrote (the dispatcher does not for
    an operator without an autograd kernel); inference tensors have none and are skipped."""
    _torch._C._increment_version(written)


def _kernel2(f):
    def kernel(x, out, *rest):
        f(_nograd(x), _nograd(out), *rest)
        _bump(out)

    return kernel


def _kernel3(f):
    def kernel(a, b, out, *rest):
        f(_nograd(a), _nograd(b), _nograd(out), *rest)
        _bump(out)

    return kernel


def _gemm_kernel(f):
    def kernel(a, b, out, bias, alpha, beta, activation, tf32):
        bias = None if bias is None else _nograd(bias)
        f(_nograd(a), _nograd(b), _nograd(out), bias, alpha, beta, activation, tf32=tf32)
        _bump(out)

    return kernel


def _attention_kernel(q, k, v, out, lse, causal, scale, layout):
    # the TMA checks read data_ptr(): here, on the real tensors (eager or compiled)
    q = _tma_view(_nograd(q), "q", layout)
    k = _tma_view(_nograd(k), "k", layout)
    v = _tma_view(_nograd(v), "v", layout)
    _tilekit.attention_into(q, k, v, _nograd(out), _nograd(lse), causal, scale)
    _bump(out, lse)


def _fake(*args):
    """The shape functions (fake / meta): every operator only writes tensors it was given."""
    return None


def _register(torch):
    """Registers every kernel as a ``torch.library`` operator in the ``tilekit`` namespace (once;
    a no-op when already done, e.g. after ``importlib.reload``)."""
    global _torch, _Tensor, _LIB
    if _LIB is not None:
        return
    kernels = {name: _kernel2 for name in ("copy_into", "transpose_into", "permute_into",
                                           "morton_into", "unmorton_into", "row_sum_into",
                                           "row_max_into", "softmax_into")}
    kernels.update({name: _kernel3 for name in ("add_into", "mul_into", "maximum_into",
                                                "gemm_into")})
    kernels.update(gemm_ex_into=_gemm_kernel, gemm_batched_into=_gemm_kernel)
    ns = torch.ops.tilekit
    lib = None
    if not hasattr(ns, "softmax_into"):
        lib = torch.library.Library("tilekit", "DEF")
        for name, schema in _SCHEMAS.items():
            lib.define(name + schema)
            impl = (_attention_kernel if name == "attention_into"
                    else kernels[name](getattr(_tilekit, name)))
            lib.impl(name, impl, "CUDA")
            torch.library.register_fake("tilekit::" + name, _fake, lib=lib)
    for name in _SCHEMAS:
        _OPS[name] = getattr(ns, name).default
    _torch, _Tensor, _LIB = torch, torch.Tensor, lib if lib is not None else True


def _torch_tensor_type():
    """``torch.Tensor`` once torch is imported (registering the operators then), else None."""
    torch = _sys.modules.get("torch")
    if torch is None or not hasattr(torch, "library"):
        return None
    _register(torch)
    return _Tensor


if "torch" in _sys.modules:
    _torch_tensor_type()


# ---- argument checks -------------------------------------------------------------------------------


def _type_name(x):
    return type(x).__module__ + "." + type(x).__qualname__


def _check_tensor(x, what):
    """``x`` after the checks that give the typed errors before anything is allocated: a
    ``torch.Tensor`` on a CUDA device."""
    tensor = _Tensor if _Tensor is not None else _torch_tensor_type()
    if tensor is not None and isinstance(x, tensor):
        if not x.is_cuda:  # an attribute read: x.device would build a torch.device
            raise DeviceError(
                f"tilekit runs on CUDA tensors; got {what} on {x.device} — move it with "
                f"{what}.cuda()"
            )
        return x
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(
            f"{what} must be a CUDA tensor (an object with __dlpack__ and __dlpack_device__, "
            f"such as a torch.Tensor), got {_type_name(x)}"
        )
    raise TypeError(f"{what} must be a torch.Tensor (outputs are allocated with torch), "
                    f"got {_type_name(x)}")


def _output(out, shape, like, dtype=None, what="out", op="", inputs=()):
    """``out`` checked against the shape, dtype (``like``'s unless given) and device the op
    produces, and against autograd as PyTorch's ``out=`` functions are; or a new tensor."""
    shape = tuple(shape)
    dtype = like.dtype if dtype is None else dtype
    if out is None:
        # new_empty: like's device without building a torch.device (host cost, issue 32)
        return like.new_empty(shape, dtype=dtype)
    _check_tensor(out, what)
    if tuple(out.shape) != shape:
        raise ShapeError(
            f"{what} has shape {tuple(out.shape)}: the result has shape {shape}"
        )
    if out.dtype != dtype:
        raise DTypeError(f"{what} has dtype {out.dtype}: the result has dtype {dtype}")
    if out.get_device() != like.get_device():  # both CUDA (checked): ordinals suffice
        raise DeviceError(f"{what} is on {out.device}: the inputs are on {like.device}")
    _check_out_grad(op, out, inputs)
    return out  # the caller's tensor itself: ops return `out`


def _check_out_grad(op, out, inputs):
    """PyTorch's rule for ``out=`` functions: with grad mode on, neither ``out`` nor an input
    may require grad (the ops have no derivatives; a leaf ``nn.Parameter`` is never written)."""
    if not _torch.is_grad_enabled():
        return
    if out.requires_grad or any(t is not None and t.requires_grad for t in inputs):
        raise RuntimeError(
            f"{op}(): functions with out=... arguments don't support automatic "
            f"differentiation, but one of the arguments requires grad."
        )


def _same_device(a, b):
    if a.get_device() != b.get_device():  # both CUDA (checked): ordinals suffice
        raise DeviceError(f"the inputs are on different devices: {a.device} and {b.device}")


def transpose(x, out=None):
    """The last two dims swapped, materialised: ``x.transpose(-1, -2).contiguous()``."""
    x = _check_tensor(x, "x")
    if x.dim() < 2:
        raise ShapeError(
            f"transpose swaps the last two dims: x must have rank >= 2, got shape {tuple(x.shape)}"
        )
    shape = list(x.shape)
    shape[-1], shape[-2] = shape[-2], shape[-1]
    y = _output(out, shape, x, op="transpose", inputs=(x,))
    _OPS["transpose_into"](x, y)
    return y


def permute(x, dims, out=None):
    """``x.permute(dims).contiguous()`` of a 3-D tensor (every permutation of 3 dims)."""
    x = _check_tensor(x, "x")
    dims = [int(d) for d in dims]
    if sorted(dims) != list(range(x.dim())):
        raise ShapeError(
            f"dims {dims} must name every dimension of x (shape {tuple(x.shape)}) exactly once"
        )
    y = _output(out, [x.shape[d] for d in dims], x, op="permute", inputs=(x,))
    _OPS["permute_into"](x, y, dims)
    return y


def copy(x, out=None):
    """A contiguous copy of ``x``."""
    x = _check_tensor(x, "x")
    y = _output(out, x.shape, x, op="copy", inputs=(x,))
    _OPS["copy_into"](x, y)
    return y


def morton_len(h, w, tile=8):
    """The number of elements of the tiled Morton storage of an ``h × w`` image."""
    return _tilekit.morton_len(int(h), int(w), int(tile))


def morton(x, tile=8, out=None):
    """An ``H × W`` image in tiled Morton storage: ``tile × tile`` tiles in row-major order,
    Z order inside a tile (the padding of partial tiles is unspecified), as a 1-D tensor of
    :func:`morton_len` elements."""
    x = _check_tensor(x, "x")
    if x.dim() != 2:
        raise ShapeError(f"morton takes an image H × W (rank 2); x has shape {tuple(x.shape)}")
    y = _output(out, (morton_len(x.shape[0], x.shape[1], tile),), x, op="morton", inputs=(x,))
    _OPS["morton_into"](x, y, int(tile))
    return y


def unmorton(s, shape, tile=8, out=None):
    """The ``shape = (H, W)`` image back from its tiled Morton storage ``s`` (the inverse of
    :func:`morton`)."""
    s = _check_tensor(s, "s")
    shape = tuple(int(v) for v in shape)
    if len(shape) != 2:
        raise ShapeError(f"unmorton makes an image H × W: shape must have 2 entries, got {shape}")
    y = _output(out, shape, s, op="unmorton", inputs=(s,))
    _OPS["unmorton_into"](s, y, int(tile))
    return y


def _row_reduce(name, x, out):
    x = _check_tensor(x, "x")
    if x.dim() < 1:
        raise ShapeError(f"{name} takes a tensor of rank >= 1; x has shape {tuple(x.shape)}")
    y = _output(out, x.shape[:-1], x, dtype=_torch.float32, op=name, inputs=(x,))
    _OPS[name + "_into"](x, y)
    return y


def row_sum(x, out=None):
    """The sum over the last dimension in float32: ``x.float().sum(-1)``."""
    return _row_reduce("row_sum", x, out)


def row_max(x, out=None):
    """The maximum over the last dimension as float32: ``x.amax(-1).float()``."""
    return _row_reduce("row_max", x, out)


def softmax(x, out=None):
    """Softmax over the last dimension (computed in f32): ``torch.softmax(x, -1)``."""
    x = _check_tensor(x, "x")
    y = _output(out, x.shape, x, op="softmax", inputs=(x,))
    _OPS["softmax_into"](x, y)
    return y


def _binary(name, a, b, out):
    a = _check_tensor(a, "a")
    b = _check_tensor(b, "b")
    _same_device(a, b)
    try:
        shape = _torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ShapeError(
            f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast"
        ) from None
    y = _output(out, shape, a, op=name, inputs=(a, b))
    _OPS[name + "_into"](a, b, y)
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


_ACTIVATIONS = ("relu", "gelu")


def _epilogue(activation, alpha, beta, out, what):
    """The epilogue's arguments checked before any tensor is touched."""
    if activation is not None and activation not in _ACTIVATIONS:
        raise ValueError(
            f"activation {activation!r} is not one of None, 'relu', 'gelu'"
        )
    alpha, beta = float(alpha), float(beta)
    if beta != 0.0 and out is None:
        raise ValueError(
            f"beta = {beta} reads C: pass out= the {what} tensor to accumulate into"
        )
    return alpha, beta


def _out_dtype(out, a, op):
    dtype = _torch.float32 if out is None else getattr(out, "dtype", None)
    if out is not None and dtype not in (_torch.float32, a.dtype):
        raise DTypeError(
            f"out has dtype {dtype}: {op} writes float32 or the inputs' dtype {a.dtype}"
        )
    return dtype


def _bias(bias, n, dtype, a, op):
    if bias is None:
        return None
    bias = _check_tensor(bias, "bias")
    if tuple(bias.shape) != (n,):
        raise ShapeError(
            f"bias has shape {tuple(bias.shape)}: {op} adds one value per column, shape ({n},)"
        )
    if bias.dtype not in (dtype, _torch.float32):
        raise DTypeError(f"bias has dtype {bias.dtype}: valid are {dtype} (out's) or float32")
    if bias.get_device() != a.get_device():
        raise DeviceError(f"bias is on {bias.device}: the inputs are on {a.device}")
    return bias


def gemm(a, b, out=None, *, alpha=1.0, beta=0.0, bias=None, activation=None, tf32=False):
    """``activation(alpha * (a @ b) + beta * out + bias)`` of float16 or bfloat16 matrices
    (M×K times K×N) on tensor cores; by default simply ``a @ b`` in float32.

    On a Hopper GPU any M, N, K run on the Hopper kernel (TMA + wgmma) for every combination of
    row-major and transposed operands (``a`` or ``a.T`` of a contiguous tensor, ``b`` or
    ``w.T`` of a linear layer's (N, K) weight) whose rows are a multiple of 16 bytes; the
    epilogue (``alpha``, ``beta``, ``bias``, ``activation``) is fused into its stores. Elsewhere
    only the plain product runs, with M, N and K multiples of 64, 64 and 32. float32 matrices
    run on the CUDA cores (no TF32), any shape and strides, plain product only — or, with
    ``tf32=True``, on the tensor cores as tf32 (low 13 mantissa bits ignored) with the epilogue.

    ``out``: the (M, N) result, float32 or the inputs' dtype (float32 when omitted); with
    ``beta != 0`` it is also read (C), so it must be given. ``bias``: an (N,) tensor of
    ``out``'s dtype or float32, added to every row. ``activation``: ``None``, ``"relu"`` or
    ``"gelu"`` (the tanh approximation, ``torch.nn.functional.gelu(x, approximate="tanh")``)."""
    alpha, beta = _epilogue(activation, alpha, beta, out, "(M, N)")
    a = _check_tensor(a, "a")
    b = _check_tensor(b, "b")
    _same_device(a, b)
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ShapeError(
            f"gemm takes a of shape (M, K) and b of shape (K, N); got {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )
    dtype = _out_dtype(out, a, "gemm")
    bias = _bias(bias, b.shape[1], dtype, a, "gemm")
    y = _output(out, (a.shape[0], b.shape[1]), a, dtype=dtype, op="gemm", inputs=(a, b, bias))
    plain = alpha == 1.0 and beta == 0.0 and bias is None and activation is None
    if plain and dtype == _torch.float32 and not tf32:
        _OPS["gemm_into"](a, b, y)
        return y
    _OPS["gemm_ex_into"](a, b, y, bias, alpha, beta, activation or "none", bool(tf32))
    return y


def bmm(a, b, out=None, *, alpha=1.0, beta=0.0, bias=None, activation=None, tf32=False):
    """Batched :func:`gemm`: ``out[i] = activation(alpha * (a[i] @ b[i]) + beta * out[i] + bias)``
    for ``a`` of shape (B, M, K) and ``b`` of shape (B, K, N); an operand with a batch length of
    1, or a 2-D ``b`` of shape (K, N) (a weight shared by every entry), serves every entry.

    On a Hopper GPU a strided batch (entries one after another, 16-byte aligned) is **one
    launch** of the batched Hopper kernel; other strides run one launch per entry. float32
    inputs run on the CUDA cores one entry at a time (plain product only) unless ``tf32=True``.
    ``out``: (B, M, N), float32 (the default) or the inputs' dtype. Other arguments as
    :func:`gemm`."""
    alpha, beta = _epilogue(activation, alpha, beta, out, "(B, M, N)")
    a = _check_tensor(a, "a")
    b = _check_tensor(b, "b")
    _same_device(a, b)
    if b.dim() == 2:
        b = b.unsqueeze(0)
    if a.dim() != 3 or b.dim() != 3 or a.shape[2] != b.shape[1]:
        raise ShapeError(
            f"bmm takes a of shape (B, M, K) and b of shape (B, K, N) or (K, N); got "
            f"{tuple(a.shape)} and {tuple(b.shape)}"
        )
    batch = max(a.shape[0], b.shape[0])
    if a.shape[0] not in (1, batch) or b.shape[0] not in (1, batch):
        raise ShapeError(
            f"bmm: batch lengths {a.shape[0]} (a) and {b.shape[0]} (b) differ and neither is 1"
        )
    dtype = _out_dtype(out, a, "bmm")
    bias = _bias(bias, b.shape[2], dtype, a, "bmm")
    y = _output(out, (batch, a.shape[1], b.shape[2]), a, dtype=dtype, op="bmm",
                inputs=(a, b, bias))
    _OPS["gemm_batched_into"](a, b, y, bias, alpha, beta, activation or "none", bool(tf32))
    return y


_LAYOUTS = {
    "bshd": "(batch, seq, heads, head dim), flash-attn's",
    "bhsd": "(batch, heads, seq, head dim), torch.nn.functional.scaled_dot_product_attention's",
}
_HEAD_DIMS = (64, 128, 256)


def _attention_args(layout, scale):
    """The non-tensor arguments of :func:`attention`, checked before any tensor is touched."""
    if not isinstance(layout, str) or layout not in _LAYOUTS:
        raise ValueError(
            f"layout {layout!r} is not one of "
            + ", ".join(f"{k!r} {v}" for k, v in _LAYOUTS.items())
        )
    if scale is None:
        return None
    import math

    try:
        if isinstance(scale, (str, bytes)):
            raise TypeError
        scale = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"scale must be a number or None, got {_type_name(scale)}") from None
    if not (math.isfinite(scale) and scale > 0.0):
        raise ValueError(f"scale = {scale}: attention takes a positive finite scale (or None: "
                         f"1/sqrt(head dim))")
    return scale


def _tma_view(x, what, layout):
    """``x`` (a (b, s, h, d) view) as the kernel's tensor maps read it: the head dim contiguous,
    the other strides multiples of 16 bytes, the first element 16-byte aligned. Strides of
    length-1 dims are never used to address, so they are set to contiguous ones (a view of the
    same memory) instead of being refused. Runs in the operator's CUDA kernel (real tensors:
    it reads ``data_ptr()``); messages give the shape in ``layout`` as passed."""
    shape, strides = tuple(x.shape), list(x.stride())
    order = {"bshd": (0, 1, 2), "bhsd": (0, 2, 1)}[layout]
    shape_as_given = tuple(shape[i] for i in order) + (shape[3],)
    if strides[3] != 1:
        raise ShapeError(
            f"{what} ({layout} shape {shape_as_given}) has stride {strides[3]} in its head dim: "
            f"the last dim must be contiguous (stride 1); pass {what}.contiguous()"
        )
    inner, fixed = 1, False
    for i in (3, 2, 1, 0):
        if shape[i] == 1 and strides[i] != inner:
            strides[i], fixed = inner, True
        inner *= shape[i]
    elem = x.element_size()
    bad = [i for i in range(3) if (strides[i] * elem) % 16 != 0]
    if bad or (x.data_ptr() % 16) != 0:
        given = [x.stride()[i] for i in order] + [1]
        raise ShapeError(
            f"{what} ({layout} shape {shape_as_given}, strides {tuple(given)}, first element at "
            f"byte address {x.data_ptr()}): the kernel reads it with TMA, which needs every "
            f"stride a multiple of 16 bytes ({16 // elem} elements) and the first element on a "
            f"16-byte boundary; pass {what}.contiguous()"
        )
    return x.as_strided(shape, strides) if fixed else x


def attention(q, k, v, causal=False, scale=None, layout="bshd", return_lse=False):
    """Fused attention forward: ``softmax(q @ k^T * scale [causal mask]) @ v`` per (batch,
    head), in one kernel (FlashAttention-3's schedule: TMA, wgmma, warp specialisation; needs
    a Hopper GPU, sm_90).

    ``layout="bshd"`` (the default, flash-attn's): ``q`` is (batch, s_q, heads, d), ``k`` and
    ``v`` are (batch, s_k, heads_kv, d). ``layout="bhsd"``: (batch, heads, s, d), what
    ``torch.nn.functional.scaled_dot_product_attention`` takes; read as a transposed view,
    without a copy. The output ``O`` has ``q``'s shape, layout and dtype (a new tensor; for
    ``"bhsd"`` a (b, h, s_q, d) view of a (b, s_q, h, d) allocation).

    - dtypes: float16 or bfloat16, the same for all three; f32 math inside.
    - head dim ``d``: 64, 128 or 256; ``heads_kv`` divides ``heads`` (grouped-query and
      multi-query attention: query head ``i`` reads K/V head ``i // (heads // heads_kv)``).
    - strides: any, with the head dim contiguous, the others multiples of 16 bytes and the
      first element 16-byte aligned (the kernel reads through TMA): slices such as
      ``qkv[:, :, 0]`` of a packed (b, s, 3, h, d) tensor are read in place.
    - ``scale``: multiplies the scores; ``None`` is ``1 / sqrt(d)``; positive.
    - ``causal``: key ``j`` is masked for query ``i`` when ``j > i + s_k - s_q`` (aligned to
      the bottom-right corner, as flash-attn; the same as PyTorch's ``is_causal`` when
      ``s_q == s_k``, which aligns to the top-left otherwise). A query row that sees no key
      (``s_q > s_k``) gets ``O = 0`` and ``LSE = -inf``.
    - ``return_lse``: also return the log-sum-exp of each row's scaled, masked scores,
      float32 (batch, heads, s_q) in both layouts (natural log; what a backward pass needs).

    Runs on ``q``'s current CUDA stream, asynchronously, like a PyTorch op::

        q = torch.randn(2, 1000, 8, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(2, 1000, 2, 128, device="cuda", dtype=torch.bfloat16)  # 2 KV heads
        v = torch.randn_like(k)
        o, lse = tilekit.attention(q, k, v, causal=True, return_lse=True)  # (2, 1000, 8, 128)

        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))   # SDPA's (b, h, s, d)
        o2 = tilekit.attention(qt, kt, vt, causal=True, layout="bhsd")
        ref = torch.nn.functional.scaled_dot_product_attention(
            qt, kt.repeat_interleave(4, 1), vt.repeat_interleave(4, 1), is_causal=True)
        torch.testing.assert_close(o2, ref, atol=2e-2, rtol=0)

    Errors: ``ValueError`` (a layout other than "bshd" / "bhsd", a scale that is not positive),
    ``DeviceError`` (a CPU tensor, tensors on different devices), ``DTypeError`` (not
    float16/bfloat16, or dtypes that differ), ``ShapeError`` (rank not 4, a head dim other
    than 64/128/256, batch or head dims that do not match, strides TMA cannot read),
    ``GpuError`` (no Hopper GPU, a failed launch)."""
    scale = _attention_args(layout, scale)
    causal = bool(causal)
    q = _check_tensor(q, "q")
    k = _check_tensor(k, "k")
    v = _check_tensor(v, "v")
    _same_device(q, k)
    _same_device(q, v)
    names = "(batch, seq, heads, head dim)" if layout == "bshd" else "(batch, heads, seq, head dim)"
    for what, x in (("q", q), ("k", k), ("v", v)):
        if x.dim() != 4:
            raise ShapeError(
                f"{what} has shape {tuple(x.shape)}: layout {layout!r} takes rank-4 tensors "
                f"{names}"
            )
    if q.dtype not in (_torch.float16, _torch.bfloat16):
        raise DTypeError(
            f"q has dtype {q.dtype}: attention takes torch.float16 or torch.bfloat16 (tensor "
            f"cores); convert with q.half() or q.bfloat16()"
        )
    for what, x in (("k", k), ("v", v)):
        if x.dtype != q.dtype:
            raise DTypeError(
                f"{what} has dtype {x.dtype} but q has {q.dtype}: q, k and v must share one dtype"
            )
    given = {w: tuple(x.shape) for w, x in (("q", q), ("k", k), ("v", v))}
    if layout == "bhsd":
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    b, s_q, h, d = q.shape
    bk, s_k, h_kv, dk = k.shape
    shapes = f"q {given['q']}, k {given['k']}, v {given['v']} (layout {layout!r}: {names})"
    if d not in _HEAD_DIMS:
        raise ShapeError(f"head dim {d} ({shapes}): attention takes a head dim of 64, 128 or 256")
    if tuple(v.shape) != tuple(k.shape):
        raise ShapeError(f"k and v differ in shape ({shapes}): they must have one shape")
    if bk != b:
        raise ShapeError(f"batch {b} of q differs from batch {bk} of k and v ({shapes})")
    if dk != d:
        raise ShapeError(f"head dim {d} of q differs from head dim {dk} of k and v ({shapes})")
    if h % h_kv != 0:
        raise ShapeError(
            f"{h_kv} kv heads do not divide the {h} query heads ({shapes}): grouped-query "
            f"attention needs heads a multiple of kv heads"
        )
    o = q.new_empty((b, s_q, h, d))
    lse = q.new_empty((b, h, s_q), dtype=_torch.float32)
    _OPS["attention_into"](q, k, v, o, lse, causal, scale, layout)
    if layout == "bhsd":
        o = o.transpose(1, 2)
    return (o, lse) if return_lse else o
