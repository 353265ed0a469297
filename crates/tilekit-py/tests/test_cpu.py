"""tilekit's Python package without a GPU: import, show, argument checks, and the DLPack reader
fed by a ctypes producer (no torch needed; the torch parts are skipped without torch)."""

import ctypes
import re

import pytest

import tilekit

ENCODING = "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"


def test_exceptions_form_a_hierarchy():
    for name in ["DeviceError", "DTypeError", "ShapeError", "OverlapError", "ReadOnlyError",
                 "GpuError", "EncodingError"]:
        cls = getattr(tilekit, name)
        assert issubclass(cls, tilekit.Error), name
        assert cls.__module__ == "tilekit", cls.__module__
        assert name in tilekit.__all__, name
    assert issubclass(tilekit.Error, Exception)
    assert not issubclass(tilekit.Error, (TypeError, ValueError))
    # an overlap is a kind of shape error: code catching ShapeError keeps working
    assert issubclass(tilekit.OverlapError, tilekit.ShapeError)
    assert not issubclass(tilekit.ReadOnlyError, tilekit.ShapeError)


def test_version_is_the_packages():
    from importlib.metadata import version

    assert tilekit.__version__ == version("tilekit")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", tilekit.__version__), tilekit.__version__
    assert tilekit._tilekit.__version__ == tilekit.__version__


def test_show_draws_a_valid_encoding():
    svg, words = tilekit.show(ENCODING)
    assert svg.startswith("<svg") or svg.startswith("<?xml"), svg[:80]
    assert svg.rstrip().endswith("</svg>")
    # 4×16 tile over 8 threads: 64 cells, each owned by one thread
    assert svg.count("<rect") >= 64
    assert "tile 4×16 over 8 threads" in words, words
    assert "8 values per thread" in words
    # the ownership map: row 0 starts with thread 0 holding its values 0..3, then thread 1
    row0 = next(l for l in words.splitlines() if re.match(r"^\s+0\s+0:0", l))
    assert row0.split()[1:6] == ["0:0", "0:1", "0:2", "0:3", "1:0"], row0


def test_show_dtype_changes_the_vector_words():
    _, w32 = tilekit.show(ENCODING, dtype="fp32")
    _, w16 = tilekit.show(ENCODING, dtype="bf16")
    assert w32 != w16
    assert "bf16" in w16 and "fp32" in w32


def test_show_refuses_a_bad_encoding_with_the_parsers_message():
    with pytest.raises(tilekit.EncodingError) as e:
        tilekit.show("H[[2,2],[4,4]] P[[X0.0],[Z1.0]] Y[X0.1,X1.1]")
    assert "column 26" in str(e.value) and "Z1.0" in str(e.value), str(e.value)


def test_show_refuses_an_invalid_encoding_with_the_validators_message():
    # X0.5 names an H component that X0 (two components) does not have
    with pytest.raises(tilekit.EncodingError) as e:
        tilekit.show("H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.5,X1.1]")
    assert "X0.5" in str(e.value) or "minor" in str(e.value) or "5" in str(e.value), str(e.value)


def test_show_refuses_an_unknown_dtype():
    with pytest.raises(tilekit.EncodingError, match="int4"):
        tilekit.show(ENCODING, dtype="int4")


@pytest.mark.parametrize(
    "call",
    [
        lambda: tilekit.transpose([[1.0, 2.0]]),
        lambda: tilekit.permute(3, (2, 0, 1)),
        lambda: tilekit.copy("x"),
        lambda: tilekit.morton(None),
        lambda: tilekit.unmorton(1.5, (8, 8)),
        lambda: tilekit.row_sum(object()),
        lambda: tilekit.row_max([1.0]),
        lambda: tilekit.softmax({}),
        lambda: tilekit.add(1, 2),
        lambda: tilekit.mul([1.0], [2.0]),
        lambda: tilekit.maximum(b"a", b"b"),
        lambda: tilekit.gemm(1, 2),
        lambda: tilekit.bmm(1, 2),
        lambda: tilekit.attention([1.0], [1.0], [1.0]),
        lambda: tilekit.attention(1, 2, 3, causal=True, layout="bhsd", return_lse=True),
    ],
)
def test_ops_refuse_non_tensors_with_type_error(call):
    with pytest.raises(TypeError, match="must be a CUDA tensor"):
        call()


def test_gemm_refuses_bad_epilogue_arguments_before_touching_tensors():
    with pytest.raises(ValueError, match="'tanh' is not one of None, 'relu', 'gelu'"):
        tilekit.gemm(1, 2, activation="tanh")
    with pytest.raises(ValueError, match="beta = 0.5 reads C: pass out="):
        tilekit.gemm(1, 2, beta=0.5)
    with pytest.raises(ValueError, match="'tanh' is not one of None, 'relu', 'gelu'"):
        tilekit.bmm(1, 2, activation="tanh")
    with pytest.raises(ValueError, match=r"beta = 2.0 reads C: pass out= the \(B, M, N\) tensor"):
        tilekit.bmm(1, 2, beta=2)


def test_attention_refuses_bad_arguments_before_touching_tensors():
    # the layout and the scale are checked first: plain objects stand in for the tensors
    for bad in ["bsdh", "BSHD", "", None, 3]:
        with pytest.raises(ValueError, match="is not one of 'bshd'.*'bhsd'") as e:
            tilekit.attention(1, 2, 3, layout=bad)
        assert repr(bad) in str(e.value), str(e.value)
    for bad in [0, -0.125, float("inf"), float("nan")]:
        with pytest.raises(ValueError, match=r"scale = .*positive finite"):
            tilekit.attention(1, 2, 3, scale=bad)
    with pytest.raises(TypeError, match="scale must be a number or None, got builtins.str"):
        tilekit.attention(1, 2, 3, scale="0.1")


def test_ops_refuse_cpu_torch_tensors_with_device_error():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 8)
    for call in [
        lambda: tilekit.transpose(x),
        lambda: tilekit.softmax(x),
        lambda: tilekit.add(x, x),
        lambda: tilekit.gemm(x, x.t()),
        lambda: tilekit.bmm(x[None], x.t()),
        lambda: tilekit.attention(x.view(1, 4, 1, 8), x.view(1, 4, 1, 8), x.view(1, 4, 1, 8)),
    ]:
        with pytest.raises(tilekit.DeviceError, match=r"on cpu .*[xaq]\.cuda\(\)"):
            call()
    with pytest.raises(tilekit.DeviceError, match="on cpu"):
        tilekit.read_dlpack(x)


# ---- the DLPack reader, fed by a producer written with ctypes --------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER),
]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


class FakeProducer:
    """A DLPack producer over a fake device address, from before DLPack 1.0 (no max_version:
    tilekit asks again without it): records the stream it was asked for, the capsules it handed
    out and how often its deleter ran."""

    def __init__(self, shape, strides=None, code=2, bits=32, lanes=1, device=(2, 0),
                 byte_offset=0, data=0x7F0000000000, tensor_device=None):
        self.device = device
        self.streams = []
        self.capsules = []
        self.deleted = 0
        n = len(shape)
        self.shape = (ctypes.c_int64 * max(n, 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(n, 1))(*strides)
        tdev = tensor_device or device
        self.managed = DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = data
        t.device = DLDevice(*tdev)
        t.ndim = n
        t.dtype = DLDataType(code, bits, lanes)
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = (ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64))
                     if self.strides is not None else None)
        t.byte_offset = byte_offset

        def deleter(_p):
            self.deleted += 1

        self._deleter = DELETER(deleter)
        self.managed.deleter = self._deleter

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        cap = _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)
        self.capsules.append(cap)
        return cap


def test_dlpack_reads_a_strided_f32_view_without_copying():
    p = FakeProducer([3, 5], strides=[1, 7], byte_offset=8, data=0x7F0000001000)
    d = tilekit.read_dlpack(p, stream=0x1234)
    assert d == {
        "ptr": 0x7F0000001000,
        # offset 2 elements + span 1 + 2·1 + 4·7 = 33 elements of 4 bytes
        "bytes": 33 * 4,
        "dtype": "f32",
        "shape": [3, 5],
        "strides": [1, 7],
        "offset": 2,
        "device": 0,
        "versioned": False,
        "read_only": False,
    }
    assert p.streams == [0x1234]
    # consumed: renamed, and the deleter ran exactly once when tilekit let go
    assert _capsule_name(p.capsules[0]) == b"used_dltensor"
    assert p.deleted == 1


def test_dlpack_null_strides_are_row_major_and_stream_0_is_passed_as_1():
    p = FakeProducer([2, 3, 4], code=4, bits=16, device=(2, 1))
    d = tilekit.read_dlpack(p, stream=0)
    assert (d["dtype"], d["strides"], d["offset"], d["bytes"], d["device"]) == (
        "bf16", [12, 4, 1], 0, 48, 1)
    assert p.streams == [1]
    assert p.deleted == 1


@pytest.mark.parametrize(
    "code,bits,name",
    [(2, 16, "f16"), (2, 64, "f64"), (0, 32, "i32"), (0, 64, "i64"), (1, 32, "u32")],
)
def test_dlpack_dtypes(code, bits, name):
    p = FakeProducer([4], code=code, bits=bits)
    assert tilekit.read_dlpack(p)["dtype"] == name
    assert p.deleted == 1


@pytest.mark.parametrize(
    "code,bits,lanes,shown",
    [(0, 8, 1, "int8"), (1, 8, 1, "uint8"), (6, 8, 1, "bool"), (5, 64, 1, "complex64"),
     (2, 32, 4, "float32x4")],
)
def test_dlpack_refuses_other_dtypes_naming_them_and_still_releases(code, bits, lanes, shown):
    p = FakeProducer([4], code=code, bits=bits, lanes=lanes)
    with pytest.raises(tilekit.DTypeError) as e:
        tilekit.read_dlpack(p)
    msg = str(e.value)
    assert shown in msg and "float32, float16, bfloat16" in msg, msg
    assert p.deleted == 1


def test_dlpack_refuses_cpu_and_other_devices():
    p = FakeProducer([4], device=(1, 0))
    with pytest.raises(tilekit.DeviceError, match=r"on cpu — move it with x\.cuda\(\)"):
        tilekit.read_dlpack(p)
    assert p.streams == [] and p.deleted == 0  # refused before asking for the capsule
    p = FakeProducer([4], device=(8, 0))
    with pytest.raises(tilekit.DeviceError, match="metal"):
        tilekit.read_dlpack(p)
    # a producer whose tensor disagrees with its __dlpack_device__
    p = FakeProducer([4], device=(2, 0), tensor_device=(13, 0))
    with pytest.raises(tilekit.DeviceError, match="managed"):
        tilekit.read_dlpack(p)
    assert p.deleted == 1


def test_dlpack_cross_checks_the_device_ordinal():
    # __dlpack_device__ says cuda:0, the capsule's DLTensor says cuda:1
    p = FakeProducer([4], device=(2, 0), tensor_device=(2, 1))
    with pytest.raises(tilekit.DeviceError, match=r"cuda:0 but its DLPack tensor says cuda:1"):
        tilekit.read_dlpack(p)
    assert p.deleted == 1


def test_dlpack_without_a_stream_passes_the_legacy_default_stream_to_other_producers():
    # what the ops use for producers that are not torch tensors (no torch stream to launch on)
    p = FakeProducer([4])
    tilekit.read_dlpack(p)
    assert p.streams == [1] and p.deleted == 1


def test_dlpack_refuses_bad_layouts_as_shape_errors():
    p = FakeProducer([4, 4], strides=[4, -1])
    with pytest.raises(tilekit.ShapeError, match="stride -1 of dimension 1 is negative"):
        tilekit.read_dlpack(p)
    assert p.deleted == 1
    p = FakeProducer([4], byte_offset=6)
    with pytest.raises(tilekit.ShapeError, match="byte_offset 6"):
        tilekit.read_dlpack(p)
    assert p.deleted == 1


def test_dlpack_refuses_a_capsule_read_twice():
    p = FakeProducer([4])
    cap = p.__dlpack__()

    class Again:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            return cap

    tilekit.read_dlpack(Again())
    with pytest.raises(TypeError, match="dltensor"):
        tilekit.read_dlpack(Again())
    assert p.deleted == 1


def test_dlpack_refuses_objects_without_the_protocol():
    with pytest.raises(TypeError, match="got builtins.list|got list"):
        tilekit.read_dlpack([1, 2, 3])


# ---- versioned capsules (DLPack 1.0) ------------------------------------------------------------


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER_V),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
]

READ_ONLY, IS_COPIED = 1, 2


class VersionedProducer(FakeProducer):
    """A DLPack 1.x producer: a "dltensor_versioned" capsule with `flags` when asked with
    max_version >= (1, 0), the unversioned one otherwise; records the max_version asked for."""

    def __init__(self, shape, flags=0, version=(1, 0), **kw):
        super().__init__(shape, **kw)
        self.max_versions = []
        self.vdeleted = 0
        self.vmanaged = DLManagedTensorVersioned()
        self.vmanaged.version = DLPackVersion(*version)
        self.vmanaged.flags = flags
        self.vmanaged.dl_tensor = self.managed.dl_tensor

        def deleter(_p):
            self.vdeleted += 1

        self._vdeleter = DELETER_V(deleter)
        self.vmanaged.deleter = self._vdeleter

    def __dlpack__(self, stream=None, max_version=None):
        self.max_versions.append(max_version)
        if max_version is None or max_version[0] < 1:
            return super().__dlpack__(stream=stream)
        self.streams.append(stream)
        cap = _capsule_new(ctypes.addressof(self.vmanaged), b"dltensor_versioned", None)
        self.capsules.append(cap)
        return cap


def test_dlpack_reads_versioned_capsules():
    p = VersionedProducer([3, 5], strides=[1, 7], byte_offset=8, data=0x7F0000001000)
    d = tilekit.read_dlpack(p, stream=0x1234)
    assert p.max_versions == [(1, 0)] and p.streams == [0x1234]
    assert (d["ptr"], d["bytes"], d["shape"], d["strides"], d["offset"]) == (
        0x7F0000001000, 33 * 4, [3, 5], [1, 7], 2)
    assert d["versioned"] is True and d["read_only"] is False
    assert _capsule_name(p.capsules[0]) == b"used_dltensor_versioned"
    assert (p.vdeleted, p.deleted) == (1, 0)
    # a later minor version reads the same
    p = VersionedProducer([4], version=(1, 3))
    assert tilekit.read_dlpack(p)["versioned"] and p.vdeleted == 1


def test_dlpack_read_only_capsules_are_read_but_never_written():
    p = VersionedProducer([4], flags=READ_ONLY)
    assert tilekit.read_dlpack(p)["read_only"] is True  # an input: fine
    assert p.vdeleted == 1
    with pytest.raises(tilekit.ReadOnlyError, match="read-only.*READ_ONLY"):
        tilekit.read_dlpack(p, output=True)
    assert p.vdeleted == 2
    p = VersionedProducer([4], flags=IS_COPIED)
    with pytest.raises(tilekit.ReadOnlyError, match="copy"):
        tilekit.read_dlpack(p, output=True)
    assert p.vdeleted == 1


def test_dlpack_refuses_a_major_version_it_does_not_know_and_still_releases():
    p = VersionedProducer([4], version=(2, 0))
    with pytest.raises(TypeError, match=r"DLPack 2\.0 tensor: tilekit reads DLPack up to 1\.x"):
        tilekit.read_dlpack(p)
    assert p.vdeleted == 1


def test_dlpack_versioned_capsule_checks_like_unversioned_ones():
    p = VersionedProducer([4], code=0, bits=8)
    with pytest.raises(tilekit.DTypeError, match="int8"):
        tilekit.read_dlpack(p)
    p2 = VersionedProducer([4], device=(2, 1), tensor_device=(2, 0))
    with pytest.raises(tilekit.DeviceError, match="cuda:1 but its DLPack tensor says cuda:0"):
        tilekit.read_dlpack(p2)
    assert p.vdeleted == 1 and p2.vdeleted == 1


# ---- the Rust bindings without a GPU ------------------------------------------------------------


def _cuda_visible():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_bindings_take_no_stream_argument():
    # the stream is the bindings' own choice (PyTorch's current stream): a raw integer from the
    # caller is refused before anything is read
    ps = [FakeProducer([4]) for _ in range(5)]
    with pytest.raises(TypeError):
        tilekit._tilekit.attention_into(*ps, True, None, 0x99)
    with pytest.raises(TypeError):
        tilekit._tilekit.softmax_into(ps[0], ps[1], 0x99)
    assert all(p.streams == [] and p.deleted == 0 for p in ps)


def test_attention_binding_reads_cuda_producers_then_reports_no_gpu():
    # five CUDA producers (fake addresses, not torch tensors): the binding reads each through
    # DLPack on the legacy default stream (passed as 1) and releases it, then opening device 0
    # fails without a driver -> GpuError
    if _cuda_visible():
        pytest.skip("a CUDA driver is installed: the fake addresses would reach it")
    bf16 = dict(code=4, bits=16)
    q = FakeProducer([2, 77, 8, 64], **bf16, data=0x7F0000000000)
    k = FakeProducer([2, 300, 2, 64], **bf16, data=0x7F0000100000)
    v = FakeProducer([2, 300, 2, 64], **bf16, data=0x7F0000200000)
    o = FakeProducer([2, 77, 8, 64], **bf16, data=0x7F0000300000)
    lse = FakeProducer([2, 8, 77], data=0x7F0000400000)
    with pytest.raises(tilekit.GpuError) as e:
        tilekit._tilekit.attention_into(q, k, v, o, lse, True, None)
    assert "driver" in str(e.value).lower() or "cuda" in str(e.value).lower(), str(e.value)
    for p in (q, k, v, o, lse):
        assert p.streams == [1] and p.deleted == 1


def test_bindings_refuse_read_only_outputs_before_touching_the_gpu():
    if _cuda_visible():
        pytest.skip("a CUDA driver is installed: the fake addresses would reach it")
    x = VersionedProducer([4, 8], flags=READ_ONLY, data=0x7F0000000000)  # an input: fine
    y = VersionedProducer([4, 8], flags=READ_ONLY, data=0x7F0000100000)
    with pytest.raises(tilekit.ReadOnlyError, match="out is read-only"):
        tilekit._tilekit.softmax_into(x, y)
    assert x.vdeleted == 1 and y.vdeleted == 1


def test_bindings_refuse_producers_on_two_devices_before_exporting():
    a = FakeProducer([4], device=(2, 0))
    b = FakeProducer([4], device=(2, 1))
    y = FakeProducer([4], device=(2, 0))
    with pytest.raises(tilekit.DeviceError, match=r"a is on cuda:0 but b is on cuda:1"):
        tilekit._tilekit.add_into(a, b, y)
    assert all(p.streams == [] for p in (a, b, y))


# ---- the torch.library operators, traced on fake CUDA tensors (torch needed, no GPU) -----------


def _fake_cuda():
    """torch and a FakeTensorMode whose tensors claim a CUDA device (no GPU touched)."""
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode

    return torch, FakeTensorMode()


def _traced(x, a, b, q, out):
    y = tilekit.softmax(x * 2)
    c = tilekit.gemm(a, b)
    o = tilekit.attention(q, q, q, causal=True, layout="bhsd")
    tilekit.add(x, x, out=out)
    z = tilekit.bmm(a[None], b, activation="relu")
    return y + 1, c, o, z


def _traced_inputs(torch):
    cuda = dict(device="cuda")
    return (torch.empty(37, 1001, **cuda), torch.empty(128, 64, dtype=torch.half, **cuda),
            torch.empty(64, 128, dtype=torch.half, **cuda),
            torch.empty(2, 4, 100, 64, dtype=torch.bfloat16, **cuda), torch.empty(37, 1001, **cuda))


def test_ops_are_torch_operators_with_their_outputs_mutable():
    torch = pytest.importorskip("torch")
    for name in ["copy", "transpose", "permute", "morton", "unmorton", "row_sum", "row_max",
                 "softmax", "add", "mul", "maximum", "gemm", "gemm_ex", "gemm_batched",
                 "attention"]:
        schema = getattr(torch.ops.tilekit, name + "_into").default._schema
        written = [a.name for a in schema.arguments if a.alias_info and a.alias_info.is_write]
        assert written == (["out", "lse"] if name == "attention" else ["out"]), (name, written)
        assert not schema.returns, name


def test_ops_trace_into_one_graph_with_make_fx():
    torch, mode = _fake_cuda()
    from torch.fx.experimental.proxy_tensor import make_fx

    with mode:
        graph = make_fx(_traced)(*_traced_inputs(torch))
    called = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    for op in ["softmax_into", "gemm_into", "attention_into", "add_into", "gemm_batched_into"]:
        assert f"tilekit.{op}.default" in called, called


def test_torch_compile_fullgraph_traces_the_ops():
    # Dynamo through the Python layer without a graph break, then AOTAutograd functionalises
    # the mutations (auto_functionalized): fullgraph=True raises on any break
    torch, mode = _fake_cuda()
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def keep(gm, _inputs):
        graphs.append(gm)
        return gm

    torch._dynamo.reset()
    with mode:
        args = _traced_inputs(torch)
        got = torch.compile(_traced, backend=aot_autograd(fw_compiler=keep), fullgraph=True)(*args)
    assert [tuple(t.shape) for t in got] == [(37, 1001), (128, 128), (2, 4, 100, 64), (1, 128, 128)]
    assert len(graphs) == 1
    assert "tilekit.attention_into" in graphs[0].code


def test_out_follows_pytorchs_autograd_rules_for_out_functions():
    torch, mode = _fake_cuda()
    msg = r"functions with out=\.\.\. arguments don't support automatic differentiation"
    with mode:
        z = torch.empty(8, 16, device="cuda")
        leaf = torch.empty(8, 16, device="cuda", requires_grad=True)
        with pytest.raises(RuntimeError, match=msg):
            torch.sigmoid(z, out=leaf)  # PyTorch's own rule, the same message
        for call in [lambda: tilekit.softmax(z, out=leaf), lambda: tilekit.copy(z, out=leaf),
                     lambda: tilekit.add(z, z, out=leaf),
                     lambda: tilekit.gemm(z, z.t(), out=torch.empty(8, 8, device="cuda",
                                                                    requires_grad=True))]:
            with pytest.raises(RuntimeError, match=msg):
                call()
        with pytest.raises(RuntimeError, match=r"^softmax\(\): " + msg):
            tilekit.softmax(leaf, out=torch.empty(8, 16, device="cuda"))  # an input
        with torch.no_grad():
            assert tilekit.softmax(z, out=leaf) is leaf  # allowed, as in PyTorch
        assert not tilekit.softmax(leaf).requires_grad  # no out=: a new tensor, no derivative


# ---- the direct read of torch tensors (issue 32 item 4) -------------------------------------------


def test_bindings_refuse_cpu_torch_tensors_read_directly_with_device_error():
    torch = pytest.importorskip("torch")
    x, y = torch.zeros(4, 8), torch.zeros(4, 8)
    with pytest.raises(tilekit.DeviceError, match="x is a tensor on cpu"):
        tilekit._tilekit.softmax_into(x, y)
    assert tilekit._tilekit._read_torch(x) is None  # not CUDA: left to DLPack, which refuses


def test_read_cost_times_both_paths_and_names_bad_ones():
    torch = pytest.importorskip("torch")
    x = torch.zeros(16, 16, dtype=torch.bfloat16).t()
    assert tilekit._tilekit._read_cost(x, 10, "torch") > 0
    assert tilekit._tilekit._read_cost(x, 10, "dlpack") > 0
    with pytest.raises(ValueError, match="path"):
        tilekit._tilekit._read_cost(x, 1, "other")
    with pytest.raises(TypeError, match="strided tensor"):
        tilekit._tilekit._read_cost(torch.zeros(3, dtype=torch.int8), 1, "torch")
