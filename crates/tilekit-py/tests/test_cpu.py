"""tilekit's Python package without a GPU: import, show, argument checks, and the DLPack reader
fed by a ctypes producer (no torch needed; the torch parts are skipped without torch)."""

import ctypes
import re

import pytest

import tilekit

ENCODING = "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"


def test_exceptions_form_a_hierarchy():
    for name in ["DeviceError", "DTypeError", "ShapeError", "GpuError", "EncodingError"]:
        cls = getattr(tilekit, name)
        assert issubclass(cls, tilekit.Error), name
        assert cls.__module__ == "tilekit", cls.__module__
    assert issubclass(tilekit.Error, Exception)
    assert not issubclass(tilekit.Error, (TypeError, ValueError))


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
    """A DLPack producer over a fake device address: records the stream it was asked for, the
    capsules it handed out and how often its deleter ran."""

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


# ---- the Rust bindings without a GPU ------------------------------------------------------------


def _cuda_visible():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def test_attention_binding_reads_cuda_producers_then_reports_no_gpu():
    # five CUDA producers (fake addresses): the binding reads each through DLPack on the given
    # stream and releases it, then opening device 0 fails without a driver -> GpuError
    if _cuda_visible():
        pytest.skip("a CUDA driver is installed: the fake addresses would reach it")
    bf16 = dict(code=4, bits=16)
    q = FakeProducer([2, 77, 8, 64], **bf16, data=0x7F0000000000)
    k = FakeProducer([2, 300, 2, 64], **bf16, data=0x7F0000100000)
    v = FakeProducer([2, 300, 2, 64], **bf16, data=0x7F0000200000)
    o = FakeProducer([2, 77, 8, 64], **bf16, data=0x7F0000300000)
    lse = FakeProducer([2, 8, 77], data=0x7F0000400000)
    with pytest.raises(tilekit.GpuError) as e:
        tilekit._tilekit.attention_into(q, k, v, o, lse, True, None, 0x99)
    assert "driver" in str(e.value).lower() or "cuda" in str(e.value).lower(), str(e.value)
    for p in (q, k, v, o, lse):
        assert p.streams == [0x99] and p.deleted == 1
