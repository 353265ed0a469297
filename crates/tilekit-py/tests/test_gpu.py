"""tilekit's ops on a CUDA device, each against PyTorch: contiguous and non-contiguous inputs,
odd shapes, f32/f16/bf16 where the kernel takes them, and bad input. Skipped without CUDA."""

import re

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import tilekit  # noqa: E402

DEV = "cuda"
FLOAT = [torch.float32, torch.float16, torch.bfloat16]  # copy, transpose, permute, morton, elementwise
REDUCE = [torch.float32, torch.bfloat16]  # row_sum, row_max (f32 out), softmax
GEMM = [torch.float16, torch.bfloat16]  # f32 out


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    return torch.randn(*shape, generator=g, device=DEV, dtype=torch.float32).to(dtype)


def poisoned(shape, dtype):
    return torch.full(shape, float("nan"), device=DEV, dtype=dtype)


def exact(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    assert torch.equal(got, want), (got - want).abs().max()


# ---- data movement: exact ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize("shape", [(37, 1001), (64, 64), (1, 513), (1000, 777)])
def test_transpose(dtype, shape):
    x = rand(*shape, dtype=dtype)
    exact(tilekit.transpose(x), torch.transpose(x, 0, 1).contiguous())


def test_transpose_swaps_the_last_two_dims_of_rank_3():
    x = rand(3, 37, 101)
    exact(tilekit.transpose(x), x.transpose(-1, -2).contiguous())


@pytest.mark.parametrize("dtype", FLOAT)
def test_transpose_into_out_and_of_a_strided_view(dtype):
    x = rand(40, 66, dtype=dtype)
    out = poisoned((33, 40), dtype)
    v = x[:, ::2]  # strides (66, 2)
    y = tilekit.transpose(v, out=out)
    assert y is out
    exact(out, v.t().contiguous())


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize("dims", [(2, 0, 1), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 1, 0), (0, 1, 2)])
def test_permute_every_order(dtype, dims):
    x = rand(30, 41, 17, dtype=dtype)
    exact(tilekit.permute(x, dims), x.permute(*dims).contiguous())


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize("shape", [(37, 1001), (3, 100, 200)])
def test_copy_contiguous_and_strided(dtype, shape):
    x = rand(*shape, dtype=dtype)
    exact(tilekit.copy(x), x.clone())
    t = x.transpose(-1, -2)
    exact(tilekit.copy(t), t.contiguous())


def morton_reference(x, t=8):
    """Tiled Morton storage of an H×W image, built index by index: t×t tiles in row-major
    tile order, inside a tile the Z order (column bit first: 0 1 4 5 / 2 3 6 7 ...); the
    padding of partial tiles is left out (None)."""
    h, w = x.shape
    th, tw = (h + t - 1) // t, (w + t - 1) // t
    bits = t.bit_length() - 1
    src = x.cpu().tolist()
    out = []
    for ti in range(th):
        for tj in range(tw):
            for z in range(t * t):
                r = sum(((z >> (2 * k + 1)) & 1) << k for k in range(bits))
                c = sum(((z >> (2 * k)) & 1) << k for k in range(bits))
                i, j = ti * t + r, tj * t + c
                out.append(src[i][j] if i < h and j < w else None)
    return out


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize("shape", [(64, 64), (37, 61), (1024, 1000)])
def test_morton_against_the_index_reference_and_back(dtype, shape):
    x = rand(*shape, dtype=dtype)
    n = tilekit.morton_len(*shape)
    assert n == ((shape[0] + 7) // 8) * ((shape[1] + 7) // 8) * 64
    out = poisoned((n,), dtype)
    m = tilekit.morton(x, out=out)
    assert m is out and m.shape == (n,)
    if shape[0] * shape[1] <= 64 * 64:
        want = morton_reference(x)
        got = m.cpu().tolist()
        keep = [k for k, v in enumerate(want) if v is not None]
        assert [got[k] for k in keep] == [want[k] for k in keep]
    back = poisoned(shape, dtype)
    exact(tilekit.unmorton(m, shape, out=back), x)


def test_morton_of_a_strided_image():
    # rows 130 apart, even, first element aligned: the kernel's 2-element vectors fit
    x = rand(40, 130)[:, :128]
    exact(tilekit.unmorton(tilekit.morton(x), x.shape), x.contiguous())


def test_morton_of_a_misaligned_image_names_the_layout():
    # offset 1 element: the first element is not 8-byte aligned for the 2-element vectors
    x = rand(40, 130)[:, 1:129]
    with pytest.raises(tilekit.ShapeError, match=r"strides \[130, 1\].*aligned"):
        tilekit.morton(x)


# ---- reductions and softmax ---------------------------------------------------------------------


def close_reduce(got, want, dtype, rtol):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype)
    torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", REDUCE)
@pytest.mark.parametrize("shape", [(37, 1001), (5, 4097), (300, 1000)])
def test_row_sum_and_row_max(dtype, shape):
    x = rand(*shape, dtype=dtype)
    want_sum = x.double().sum(-1).float()
    close_reduce(tilekit.row_sum(x), want_sum, torch.float32, 1e-5 * shape[-1] ** 0.5)
    exact(tilekit.row_max(x), x.amax(-1).float())
    # a transposed input (rows strided) and rank 3
    t = rand(shape[1], shape[0], dtype=dtype).t()
    close_reduce(tilekit.row_sum(t), t.double().sum(-1).float(), torch.float32,
                 1e-5 * shape[-1] ** 0.5)
    x3 = rand(3, 5, 77, dtype=dtype)
    exact(tilekit.row_max(x3), x3.amax(-1).float())


@pytest.mark.parametrize("dtype", REDUCE)
@pytest.mark.parametrize("shape", [(37, 1001), (5, 4097), (300, 1000)])
def test_row_sum_and_row_max(dtype, shape):
    x = rand(*shape, dtype=dtype)
    want_sum = x.double().sum(-1).float()
    close_reduce(tilekit.row_sum(x), want_sum, torch.float32, 1e-5 * shape[-1] ** 0.5)
    exact(tilekit.row_max(x), x.amax(-1).float())
    # a transposed input (rows strided) and rank 3
    t = rand(shape[1], shape[0], dtype=dtype).t()
    close_reduce(tilekit.row_sum(t), t.double().sum(-1).float(), torch.float32,
                 1e-5 * shape[-1] ** 0.5)
    x3 = rand(3, 5, 77, dtype=dtype)
    exact(tilekit.row_max(x3), x3.amax(-1).float())


LONG_ROWS = pytest.mark.xfail(
    strict=True, raises=tilekit.ShapeError,
    reason="rows over 16384 are refused until the online (chunked) softmax lands (issue 11)")


@pytest.mark.parametrize("dtype", REDUCE)
@pytest.mark.parametrize("shape", [(37, 1001), (3, 77), (64, 16384), (4, 65536), (2, 262144)])
def test_softmax(dtype, shape):
    x = rand(*shape, dtype=dtype) * 4
    want = torch.softmax(x.float(), -1)
    got = tilekit.softmax(x)
    assert got.dtype == dtype and got.shape == x.shape
    atol = 1e-5 if dtype == torch.float32 else 2.0**-8
    torch.testing.assert_close(got.float(), want, rtol=0, atol=atol)


@pytest.mark.parametrize("dtype", REDUCE)
def test_softmax_of_a_strided_view(dtype):
    x = rand(50, 300, dtype=dtype)
    v = x[::2, 1:]
    torch.testing.assert_close(
        tilekit.softmax(v).float(), torch.softmax(v.float(), -1), rtol=0,
        atol=1e-5 if dtype == torch.float32 else 2.0**-8)


# ---- elementwise with broadcast ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT)
@pytest.mark.parametrize(
    "sa,sb", [((37, 1001), (37, 1001)), ((37, 1001), (1001,)), ((37, 1001), (37, 1)),
              ((1, 1001), (37, 1))])
@pytest.mark.parametrize("op,ref", [(tilekit.add, torch.add), (tilekit.mul, torch.mul),
                                    (tilekit.maximum, torch.maximum)])
def test_elementwise(dtype, sa, sb, op, ref):
    a, b = rand(*sa, dtype=dtype, seed=1), rand(*sb, dtype=dtype, seed=2)
    exact(op(a, b), ref(a, b))


@pytest.mark.parametrize("dtype", FLOAT)
def test_elementwise_of_transposed_inputs(dtype):
    a = rand(70, 50, dtype=dtype).t()
    b = rand(50, 70, dtype=dtype)
    exact(tilekit.add(a, b), a + b)


# ---- gemm --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", GEMM)
@pytest.mark.parametrize("mnk", [(128, 128, 64), (256, 192, 96), (64, 512, 1024)])
def test_gemm(dtype, mnk):
    m, n, k = mnk
    a, b = rand(m, k, dtype=dtype, seed=3), rand(k, n, dtype=dtype, seed=4)
    want = a.double() @ b.double()
    got = tilekit.gemm(a, b, out=poisoned((m, n), torch.float32))
    assert got.shape == (m, n) and got.dtype == torch.float32
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 1e-2, err


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mnk", [(200, 136, 72), (1000, 520, 264), (130, 66, 1000)])
def test_gemm_with_a_weight_view_runs_any_shape(dtype, mnk):
    # b = w.T for a row-major (N, K) weight: the Hopper kernel (TMA + wgmma), any M, N, K
    m, n, k = mnk
    a, w = rand(m, k, dtype=dtype, seed=5), rand(n, k, dtype=dtype, seed=6)
    want = a.double() @ w.double().T
    got = tilekit.gemm(a, w.T, out=poisoned((m, n), torch.float32))
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 1e-2, err


def hopper():
    return torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.parametrize("dtype", GEMM)
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
def test_gemm_every_transpose_runs_any_shape_on_hopper(dtype, a_t, b_t):
    # row-major or transposed a and b (NN, NT, TN, TT): the Hopper kernel, M, N, K off its tiles
    if not hopper():
        pytest.skip("the Hopper kernel needs sm_90")
    m, n, k = 200, 136, 72
    a = rand(k, m, dtype=dtype, seed=7).T if a_t else rand(m, k, dtype=dtype, seed=7)
    b = rand(n, k, dtype=dtype, seed=8).T if b_t else rand(k, n, dtype=dtype, seed=8)
    want = a.double() @ b.double()
    got = tilekit.gemm(a, b, out=poisoned((m, n), torch.float32))
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 1e-2, err


def test_gemm_stages_pitches_tma_cannot_read():
    # rows of 36 f16 (72 bytes) in A, 8191-wide rows in B and C: not a tensor map's 16-byte
    # pitches, so the library stages them through padded copies; odd N = 8191 for C too
    if not hopper():
        pytest.skip("the Hopper kernel needs sm_90")
    a = rand(64, 36, dtype=torch.float16, seed=21)[:, :32]
    b = rand(32, 8191, dtype=torch.float16, seed=22)
    got = tilekit.gemm(a, b)
    want = a.double() @ b.double()
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert got.shape == (64, 8191) and err <= 1e-2, err


@pytest.mark.parametrize("dtype", GEMM)
@pytest.mark.parametrize("out_dtype", ["f32", "same"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_gemm_epilogue(dtype, out_dtype, activation):
    # activation(alpha · a @ b + beta · C + bias) fused: C random and read (beta != 0),
    # an f32 bias, a = x.T (MN-major A), b row-major
    if not hopper():
        pytest.skip("the fused epilogue runs on the Hopper kernel")
    m, n, k = 136, 200, 88
    odt = torch.float32 if out_dtype == "f32" else dtype
    a, b = rand(k, m, dtype=dtype, seed=9).T, rand(k, n, dtype=dtype, seed=10)
    c0, bias = rand(m, n, dtype=odt, seed=11), rand(n, seed=12)
    c = c0.clone()
    got = tilekit.gemm(a, b, c, alpha=0.75, beta=-0.5, bias=bias, activation=activation)
    assert got is c and got.dtype == odt
    pre = 0.75 * (a.double() @ b.double()) - 0.5 * c0.double() + bias.double()
    want = {
        None: pre,
        "relu": torch.relu(pre),
        "gelu": torch.nn.functional.gelu(pre, approximate="tanh"),
    }[activation]
    tol = 1e-2 if odt == torch.float32 else 3e-2
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= tol, err


def test_gemm_epilogue_with_a_bias_of_the_output_type_and_beta_zero():
    # beta = 0: C (NaN) is never read; bf16 out with a bf16 bias, b = w.T
    if not hopper():
        pytest.skip("the fused epilogue runs on the Hopper kernel")
    m, n, k = 130, 72, 64
    a, w = rand(m, k, dtype=torch.bfloat16, seed=13), rand(n, k, dtype=torch.bfloat16, seed=14)
    bias = rand(n, dtype=torch.bfloat16, seed=15)
    got = tilekit.gemm(a, w.T, poisoned((m, n), torch.bfloat16), bias=bias, activation="relu")
    want = torch.relu(a.double() @ w.double().T + bias.double())
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 3e-2, err


def test_gemm_epilogue_errors_name_the_problem():
    a, b = rand(64, 32, dtype=torch.bfloat16), rand(32, 48, dtype=torch.bfloat16)
    with pytest.raises(tilekit.ShapeError, match=r"\(40,\).*\(48,\)"):
        tilekit.gemm(a, b, bias=rand(40))
    with pytest.raises(tilekit.DTypeError, match="float16"):
        tilekit.gemm(a, b, bias=rand(48, dtype=torch.float16))
    with pytest.raises(tilekit.DTypeError, match="float16"):
        tilekit.gemm(a, b, poisoned((64, 48), torch.float16), alpha=2.0)


@pytest.mark.parametrize("dtype", GEMM)
@pytest.mark.parametrize("shared_b", [False, True])
def test_bmm_strided_batches(dtype, shared_b):
    # (B, M, K) @ (B, K, N), or a (K, N) weight view shared by every entry: on Hopper one
    # launch of the batched kernel; every entry against float64, the output poisoned first
    bsz, m, n, k = 5, 136, 200, 88
    a = rand(bsz, m, k, dtype=dtype, seed=30)
    b = rand(n, k, dtype=dtype, seed=31).T if shared_b else rand(bsz, k, n, dtype=dtype, seed=31)
    got = tilekit.bmm(a, b, out=poisoned((bsz, m, n), torch.float32))
    want = a.double() @ b.double()
    assert got.shape == (bsz, m, n)
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 1e-2, err


def test_bmm_epilogue_and_non_contiguous_batches():
    # a permuted batch dim (entries not one after another: one launch per entry), bf16 out,
    # alpha/beta/bias/relu fused
    if not hopper():
        pytest.skip("the fused epilogue runs on the Hopper kernel")
    bsz, m, n, k = 3, 64, 72, 40
    a = rand(m, bsz, k, dtype=torch.bfloat16, seed=32).transpose(0, 1)
    b = rand(bsz, k, n, dtype=torch.bfloat16, seed=33)
    c0, bias = rand(bsz, m, n, dtype=torch.bfloat16, seed=34), rand(n, seed=35)
    c = c0.clone()
    got = tilekit.bmm(a, b, c, alpha=0.5, beta=0.25, bias=bias, activation="relu")
    assert got is c
    want = torch.relu(0.5 * (a.double() @ b.double()) + 0.25 * c0.double() + bias.double())
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 3e-2, err


def test_bmm_errors_name_the_problem():
    a = rand(4, 32, 16, dtype=torch.bfloat16)
    with pytest.raises(tilekit.ShapeError, match=r"batch lengths 4 \(a\) and 3 \(b\)"):
        tilekit.bmm(a, rand(3, 16, 8, dtype=torch.bfloat16))
    with pytest.raises(tilekit.ShapeError, match=r"\(4, 32, 16\) and \(4, 15, 8\)"):
        tilekit.bmm(a, rand(4, 15, 8, dtype=torch.bfloat16))
    with pytest.raises(tilekit.ShapeError, match=r"out has shape \(4, 32, 9\)"):
        tilekit.bmm(a, rand(16, 8, dtype=torch.bfloat16), out=poisoned((4, 32, 9), torch.float32))


@pytest.mark.parametrize("mnk", [(1, 1, 1), (77, 130, 33), (129, 257, 65), (512, 512, 256)])
def test_gemm_f32_without_tensor_cores(mnk):
    # float32 runs on the CUDA cores (no TF32: an f32-accurate product), any shape; also b as
    # the transposed view of a row-major (N, K) weight, and a non-contiguous a
    m, n, k = mnk
    a, b = rand(m, k, seed=7), rand(k, n, seed=8)
    want = a.double() @ b.double()
    tol = 1e-6 * k + 1e-5
    got = tilekit.gemm(a, b, out=poisoned((m, n), torch.float32))
    assert got.shape == (m, n) and got.dtype == torch.float32
    assert ((got.double() - want).abs() / (want.abs() + 1)).max() <= tol
    w = rand(n, k, seed=9)
    got = tilekit.gemm(a, w.T)
    want = a.double() @ w.double().T
    assert ((got.double() - want).abs() / (want.abs() + 1)).max() <= tol
    wide = rand(m, k + 3, seed=10)[:, 1 : k + 1]  # row pitch k + 3, offset 1: scalar loads
    got = tilekit.gemm(wide, b)
    want = wide.double() @ b.double()
    assert ((got.double() - want).abs() / (want.abs() + 1)).max() <= tol


# ---- bad input ---------------------------------------------------------------------------------


def test_wrong_dtypes_name_the_dtype():
    with pytest.raises(tilekit.DTypeError, match="int8"):
        tilekit.copy(torch.zeros(4, 4, dtype=torch.int8, device=DEV))
    with pytest.raises(tilekit.DTypeError, match="float16|f16"):
        tilekit.softmax(rand(4, 4, dtype=torch.float16))
    with pytest.raises(tilekit.DTypeError, match="f16"):
        tilekit.gemm(rand(64, 64), rand(64, 64, dtype=torch.float16))  # f32 · f16
    with pytest.raises(tilekit.DTypeError, match="f16"):
        tilekit.add(rand(4, 4), rand(4, 4, dtype=torch.float16))


def test_mismatched_shapes_name_the_shapes():
    with pytest.raises(tilekit.ShapeError, match=r"\(3, 4\).*\(5, 4\)"):
        tilekit.add(rand(3, 4), rand(5, 4))
    with pytest.raises(tilekit.ShapeError, match=r"\(64, 32\).*\(64, 64\)"):
        tilekit.gemm(rand(64, 32, dtype=torch.float16), rand(64, 64, dtype=torch.float16))
    with pytest.raises(tilekit.ShapeError, match="rank >= 2"):
        tilekit.transpose(rand(5))


def test_out_with_the_wrong_shape_or_dtype():
    x = rand(8, 16)
    with pytest.raises(tilekit.ShapeError, match=r"\(8, 16\).*\(16, 8\)"):
        tilekit.transpose(x, out=poisoned((8, 16), torch.float32))
    with pytest.raises(tilekit.DTypeError, match="bfloat16"):
        tilekit.copy(x, out=poisoned((8, 16), torch.bfloat16))


def test_cpu_and_mixed_devices():
    with pytest.raises(tilekit.DeviceError, match=r"cpu.*x\.cuda\(\)"):
        tilekit.softmax(torch.randn(4, 4))
    with pytest.raises(tilekit.DeviceError, match=r"b\.cuda\(\)"):
        tilekit.add(rand(4, 4), torch.randn(4, 4))


def test_runs_on_the_current_stream_without_a_host_sync():
    x = rand(512, 1024)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = tilekit.transpose(x)
    s.synchronize()
    exact(y, x.t().contiguous())


def test_requires_grad_inputs_are_read():
    x = rand(16, 32).requires_grad_()
    exact(tilekit.copy(x), x.detach().clone())


def test_dlpack_reads_torch_memory_in_place():
    x = rand(30, 64)
    v = x.t()[1:, ::2]  # shape (63, 15), strides (1, 128), 1 element into x
    d = tilekit.read_dlpack(v, stream=torch.cuda.current_stream().cuda_stream)
    assert d["ptr"] + 4 * d["offset"] == v.data_ptr()
    assert (d["shape"], d["strides"], d["dtype"], d["device"]) == (
        [63, 15], [1, 128], "f32", torch.cuda.current_device())
    assert d["bytes"] == 4 * (d["offset"] + 62 * 1 + 14 * 128 + 1)


def test_out_is_written_in_place_and_returned():
    x = rand(33, 65, dtype=torch.bfloat16)
    out = poisoned((65, 33), torch.bfloat16)
    ptr = out.data_ptr()
    assert tilekit.transpose(x, out=out) is out and out.data_ptr() == ptr
    exact(out, x.t().contiguous())


def test_gemm_tf32_opt_in():
    # float32 on the tensor cores as tf32: compare with torch's product of the tf32-truncated
    # operands (low 13 mantissa bits cleared), a ReLU fused; b row-major is staged K-major
    if not hopper():
        pytest.skip("the Hopper kernel needs sm_90")
    m, n, k = 200, 136, 96
    a, b = rand(m, k, seed=31), rand(k, n, seed=32)
    trunc = lambda x: (x.view(torch.int32) & ~0x1FFF).view(torch.float32).double()
    want = torch.relu(trunc(a) @ trunc(b))
    got = tilekit.gemm(a, b, poisoned((m, n), torch.float32), activation="relu", tf32=True)
    err = ((got.double() - want).abs() / (want.abs() + 1)).max()
    assert err <= 1e-4, err


# ---- attention -----------------------------------------------------------------------------------

ATTN = [torch.float16, torch.bfloat16]
SDPA = torch.nn.functional.scaled_dot_product_attention
needs_hopper = pytest.mark.skipif(
    not hopper(), reason="the attention kernel (TMA, wgmma) needs a Hopper GPU (sm_90)")


def attention_reference(q, k, v, causal, scale=None):
    """O (b, s_q, h, d) and LSE (b, h, s_q) in float64 for (b, s, h, d) inputs: PyTorch's SDPA
    (the math backend: float64) on K/V expanded to the query heads, with an explicit boolean
    mask for causal attention aligned to the bottom-right (key j masked for query i when
    j > i + s_k - s_q; PyTorch's own is_causal only where s_q == s_k), and the LSE as
    torch.logsumexp of the scaled, masked scores. Rows that see no key: O = 0, LSE = -inf."""
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    scale = d ** -0.5 if scale is None else scale
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(h // hk, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(h // hk, dim=1)
    i = torch.arange(sq, device=DEV)[:, None]
    j = torch.arange(sk, device=DEV)[None, :]
    keep = j <= i + (sk - sq) if causal else torch.ones(sq, sk, dtype=torch.bool, device=DEV)
    if causal and sq == sk:
        o = SDPA(qd, kd, vd, is_causal=True, scale=scale)
    else:
        o = SDPA(qd, kd, vd, attn_mask=keep, scale=scale)
    seen = keep.any(-1)[None, None, :, None]
    o = torch.where(seen, o, torch.zeros_like(o))  # SDPA's math backend: NaN or 0 there
    scores = (qd @ kd.transpose(-1, -2)) * scale
    lse = torch.logsumexp(scores.masked_fill(~keep, float("-inf")), -1)
    return o.transpose(1, 2), lse


def check_attention(got_o, got_lse, q, k, v, causal, scale=None):
    """got (b, s_q, h, d) and (b, h, s_q) against attention_reference. P is rounded to the input
    type before P·V and O on the way out: |err| <= p_eps·max|V| + out_eps·|O| (the tolerance of
    the Rust tests of the kernel)."""
    want_o, want_lse = attention_reference(q, k, v, causal, scale)
    assert got_o.shape == want_o.shape and got_o.dtype == q.dtype, (got_o.shape, got_o.dtype)
    assert got_lse.shape == want_lse.shape and got_lse.dtype == torch.float32, got_lse.shape
    p_eps, out_eps = (1 / 128, 1 / 256) if q.dtype == torch.bfloat16 else (1 / 1024, 1 / 2048)
    tol = p_eps * v.abs().max().double() + out_eps * want_o.abs() + 1e-6
    err = (got_o.double() - want_o).abs()
    bad = (err > tol) | err.isnan()
    assert not bad.any(), (
        f"O: {int(bad.sum())} of {err.numel()} off, first at {bad.nonzero()[0].tolist()}, "
        f"max err {err.max().item()}")
    g, w = got_lse.double(), want_lse
    finite = w.isfinite()
    assert torch.equal(g.isneginf(), w.isneginf()), "LSE: -inf rows differ"
    lerr = (g - w).abs()[finite]
    assert (lerr <= 1e-3 + 1e-4 * w.abs()[finite]).all(), lerr.max()


def qkv(b, sq, sk, h, hk, d, dtype, seed=40):
    return (rand(b, sq, h, d, dtype=dtype, seed=seed), rand(b, sk, hk, d, dtype=dtype, seed=seed + 1),
            rand(b, sk, hk, d, dtype=dtype, seed=seed + 2))


@needs_hopper
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("s", [1, 77, 1000, 4097])
def test_attention_matches_sdpa(d, causal, s):
    b, h = (1, 2) if s > 1000 else (2, 3)
    q, k, v = qkv(b, s, s, h, h, d, torch.bfloat16)
    o, lse = tilekit.attention(q, k, v, causal=causal, return_lse=True)
    check_attention(o, lse, q, k, v, causal)


@needs_hopper
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_f16(d, causal):
    q, k, v = qkv(2, 300, 300, 2, 2, d, torch.float16, seed=50)
    o, lse = tilekit.attention(q, k, v, causal=causal, return_lse=True)
    check_attention(o, lse, q, k, v, causal)


@needs_hopper
@pytest.mark.parametrize("dtype", ATTN)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq,sk", [(77, 300), (300, 77), (1, 1000), (130, 129)])
def test_attention_with_s_q_not_s_k(dtype, causal, sq, sk):
    # causal is bottom-right aligned: the reference builds the boolean mask itself; with
    # s_q > s_k the first s_q - s_k rows see no key (O = 0, LSE = -inf)
    q, k, v = qkv(2, sq, sk, 2, 2, 128, dtype, seed=60)
    o, lse = tilekit.attention(q, k, v, causal=causal, return_lse=True)
    check_attention(o, lse, q, k, v, causal)
    if causal and sq > sk:
        assert torch.equal(o[:, : sq - sk].float(), torch.zeros_like(o[:, : sq - sk].float()))
        assert lse[:, :, : sq - sk].isneginf().all()
        assert lse[:, :, sq - sk :].isfinite().all()


@needs_hopper
@pytest.mark.parametrize("h,hk", [(8, 2), (8, 1), (6, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_grouped_and_multi_query(h, hk, causal):
    q, k, v = qkv(2, 200, 333, h, hk, 64, torch.bfloat16, seed=70)
    o, lse = tilekit.attention(q, k, v, causal=causal, return_lse=True)
    check_attention(o, lse, q, k, v, causal)


@needs_hopper
@pytest.mark.parametrize("dtype", ATTN)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_bhsd_layout_against_sdpa_directly(dtype, causal):
    # SDPA's (b, h, s, d) inputs: read as transposed views, O returned in the same layout
    b, h, s, d = 2, 4, 333, 128
    q, k, v = (rand(b, h, s, d, dtype=dtype, seed=80 + i) for i in range(3))
    o, lse = tilekit.attention(q, k, v, causal=causal, layout="bhsd", return_lse=True)
    assert o.shape == (b, h, s, d) and o.dtype == dtype and lse.shape == (b, h, s)
    assert o.transpose(1, 2).is_contiguous()  # a view of the (b, s, h, d) allocation
    want = SDPA(q.double(), k.double(), v.double(), is_causal=causal)
    p_eps, out_eps = (1 / 128, 1 / 256) if dtype == torch.bfloat16 else (1 / 1024, 1 / 2048)
    tol = p_eps * v.abs().max().double() + out_eps * want.abs() + 1e-6
    assert ((o.double() - want).abs() <= tol).all(), (o.double() - want).abs().max()
    t = lambda x: x.transpose(1, 2)
    check_attention(t(o), lse, t(q), t(k), t(v), causal)
    # GQA in bhsd: 4 query heads over 2 kv heads
    k2, v2 = k[:, :2], v[:, 2:]
    o2, lse2 = tilekit.attention(q, k2, v2, causal=causal, layout="bhsd", return_lse=True)
    assert o2.shape == (b, h, s, d)
    check_attention(t(o2), lse2, t(q), t(k2), t(v2), causal)


@needs_hopper
def test_attention_reads_strided_views_in_place():
    b, s, h, d = 2, 257, 4, 64
    # q, k, v slices of a packed (b, s, 3, h, d) projection
    packed = rand(b, s, 3, h, d, dtype=torch.bfloat16, seed=90)
    q, k, v = packed[:, :, 0], packed[:, :, 1], packed[:, :, 2]
    assert not q.is_contiguous()
    o, lse = tilekit.attention(q, k, v, causal=True, return_lse=True)
    check_attention(o, lse, q, k, v, True)
    # q a slice of a wider tensor (head dim 64 out of 256, offset 64 elements: 128 bytes)
    wide = rand(b, s, h, 256, dtype=torch.bfloat16, seed=91)
    q = wide[..., 64:128]
    k, v = rand(b, 100, 2, d, dtype=torch.bfloat16, seed=92), rand(b, 100, 2, d,
                                                                   dtype=torch.bfloat16, seed=93)
    o, lse = tilekit.attention(q, k, v, return_lse=True)
    check_attention(o, lse, q, k, v, False)
    # a length-1 head dim with a stride TMA could not take (3): never used to address, read
    base = rand(b * s * (d + 8) + 16, dtype=torch.bfloat16, seed=94)
    q1 = base.as_strided((b, s, 1, d), (s * (d + 8), d + 8, 3, 1), 8)
    k1, v1 = rand(b, 64, 1, d, dtype=torch.bfloat16, seed=95), rand(b, 64, 1, d,
                                                                    dtype=torch.bfloat16, seed=96)
    o, lse = tilekit.attention(q1, k1, v1, return_lse=True)
    check_attention(o, lse, q1, k1, v1, False)


@needs_hopper
def test_attention_scale_and_requires_grad_inputs():
    q, k, v = qkv(1, 150, 150, 2, 2, 128, torch.float16, seed=100)
    o, lse = tilekit.attention(q, k, v, scale=0.3, return_lse=True)
    check_attention(o, lse, q, k, v, False, scale=0.3)
    qg = q.clone().requires_grad_()
    o2 = tilekit.attention(qg, k, v, scale=0.3)
    assert torch.equal(o2, o) and not o2.requires_grad


@needs_hopper
def test_attention_runs_on_the_current_stream():
    q, k, v = qkv(2, 1000, 1000, 4, 4, 128, torch.bfloat16, seed=110)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        o, lse = tilekit.attention(q, k, v, causal=True, return_lse=True)
    s.synchronize()
    check_attention(o, lse, q, k, v, True)


def test_attention_errors_name_the_problem():
    bf = torch.bfloat16
    q, k, v = qkv(2, 16, 32, 4, 2, 64, bf, seed=120)
    with pytest.raises(tilekit.DeviceError, match=r"q on cpu .*q\.cuda\(\)"):
        tilekit.attention(q.cpu(), k, v)
    with pytest.raises(tilekit.DeviceError, match=r"v on cpu .*v\.cuda\(\)"):
        tilekit.attention(q, k, v.cpu())
    with pytest.raises(tilekit.DTypeError, match=r"q has dtype torch\.float32.*float16 or "
                                                 r"torch\.bfloat16"):
        tilekit.attention(q.float(), k.float(), v.float())
    with pytest.raises(tilekit.DTypeError, match=r"k has dtype torch\.float16 but q has "
                                                 r"torch\.bfloat16"):
        tilekit.attention(q, k.half(), v)
    with pytest.raises(tilekit.DTypeError, match=r"v has dtype torch\.float32"):
        tilekit.attention(q, k, v.float())
    q96, k96 = rand(2, 16, 4, 96, dtype=bf), rand(2, 32, 2, 96, dtype=bf)
    with pytest.raises(tilekit.ShapeError, match=r"head dim 96 .*64, 128 or 256"):
        tilekit.attention(q96, k96, k96)
    with pytest.raises(tilekit.ShapeError, match=r"q has shape \(2, 16, 256\).*rank-4"):
        tilekit.attention(q.reshape(2, 16, 256), k, v)
    with pytest.raises(tilekit.ShapeError, match=r"3 kv heads do not divide the 4 query heads"):
        k3 = rand(2, 32, 3, 64, dtype=bf)
        tilekit.attention(q, k3, k3)
    with pytest.raises(tilekit.ShapeError, match=r"batch 2 of q differs from batch 1"):
        tilekit.attention(q, k[:1], v[:1])
    with pytest.raises(tilekit.ShapeError, match=r"k and v differ in shape"):
        tilekit.attention(q, k, v[:, :31])
    with pytest.raises(tilekit.ShapeError, match=r"head dim 64 of q differs from head dim 128"):
        k128 = rand(2, 32, 2, 128, dtype=bf)
        tilekit.attention(q, k128, k128)
    # the head dim strided (every other element of 128): not contiguous
    qs = rand(2, 16, 4, 128, dtype=bf)[..., ::2]
    with pytest.raises(tilekit.ShapeError, match=r"stride 2 in its head dim.*q\.contiguous\(\)"):
        tilekit.attention(qs, k, v)
    # one element in: the first element is not 16-byte aligned for TMA
    qm = rand(2, 16, 4, 72, dtype=bf)[..., 1:65]
    with pytest.raises(tilekit.ShapeError, match=r"q \(bshd shape \(2, 16, 4, 64\).*16-byte"):
        tilekit.attention(qm, k, v)
    # a row pitch of 70 elements (140 bytes): not a multiple of 16 bytes
    kp = rand(2, 32, 2, 70, dtype=bf)[..., :64]
    with pytest.raises(tilekit.ShapeError, match=r"k \(bshd shape .*strides \(4480, 140, 70, 1\)"):
        tilekit.attention(q, kp, kp)
    with pytest.raises(ValueError, match=r"layout 'sbhd' is not one of"):
        tilekit.attention(q, k, v, layout="sbhd")
    with pytest.raises(ValueError, match=r"scale = -1.0"):
        tilekit.attention(q, k, v, scale=-1)
    # bhsd: messages give the shapes as passed
    with pytest.raises(tilekit.ShapeError, match=r"q \(2, 4, 16, 64\), k \(2, 3, 32, 64\).*'bhsd'"):
        k3 = rand(2, 3, 32, 64, dtype=bf)
        tilekit.attention(q.transpose(1, 2), k3, k3, layout="bhsd")


# ---- PyTorch citizenship: autograd, overlap, devices, torch.compile, CUDA graphs ---------------

OUT_GRAD = r"functions with out=\.\.\. arguments don't support automatic differentiation"


def test_ops_are_torch_library_operators():
    # every kernel is torch.ops.tilekit.*_into with its written tensors declared mutable
    schema = torch.ops.tilekit.softmax_into.default._schema
    assert [a.name for a in schema.arguments] == ["x", "out"]
    assert schema.arguments[1].alias_info.is_write and not schema.arguments[0].alias_info
    schema = torch.ops.tilekit.attention_into.default._schema
    written = [a.name for a in schema.arguments if a.alias_info and a.alias_info.is_write]
    assert written == ["out", "lse"]


def test_out_bumps_the_version_counter():
    z, y = rand(8, 16, seed=1), poisoned((8, 16), torch.float32)
    v0 = y._version
    tilekit.softmax(z, out=y)
    assert y._version > v0
    c = poisoned((64, 64), torch.float32)
    v0 = c._version
    tilekit.gemm(rand(64, 32), rand(32, 64), out=c)
    assert c._version > v0


def test_out_into_a_tensor_saved_for_backward_fails_at_backward():
    # s is saved by the product for w's gradient; overwriting it must not go unnoticed
    w = rand(8, 16, seed=2).requires_grad_()
    s = rand(8, 16, seed=3)
    y = w * s
    tilekit.softmax(rand(8, 16, seed=4), out=s)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    # the case: h = sigmoid(w) is saved by sigmoid's backward. With grad mode on, out=h
    # (which requires grad) is refused at once, as PyTorch's out= functions do, and h is kept
    w = rand(8, 16, seed=5).requires_grad_()
    h = torch.sigmoid(w)
    before = h.detach().clone()
    with pytest.raises(RuntimeError, match=OUT_GRAD):
        tilekit.softmax(rand(8, 16, seed=6), out=h)
    exact(h.detach(), before)
    # under no_grad the write goes through, and backward notices it
    with torch.no_grad():
        tilekit.softmax(rand(8, 16, seed=6), out=h)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


def test_out_into_a_parameter_or_inputs_requiring_grad_is_refused_like_pytorch():
    p = torch.nn.Parameter(rand(8, 16, seed=7))
    before = p.detach().clone()
    z = rand(8, 16, seed=8)
    with pytest.raises(RuntimeError) as theirs:
        torch.sigmoid(z, out=p)
    assert re.search(OUT_GRAD, str(theirs.value)), str(theirs.value)
    for call in [
        lambda: tilekit.softmax(z, out=p),
        lambda: tilekit.copy(z, out=p),
        lambda: tilekit.add(z, z, out=p),
        lambda: tilekit.transpose(rand(16, 8), out=p),
    ]:
        with pytest.raises(RuntimeError, match=OUT_GRAD):
            call()
    exact(p.detach(), before)
    # a leaf requiring grad, and a gemm into it
    leaf = torch.zeros(64, 64, device=DEV, requires_grad=True)
    with pytest.raises(RuntimeError, match=OUT_GRAD):
        tilekit.gemm(rand(64, 32), rand(32, 64), out=leaf)
    assert not leaf.detach().any()
    # an input that requires grad with out=: refused as torch.add(x, y, out=o) is
    x = rand(8, 16, seed=9).requires_grad_()
    with pytest.raises(RuntimeError, match=OUT_GRAD):
        tilekit.softmax(x, out=poisoned((8, 16), torch.float32))
    # without grad mode PyTorch writes a Parameter (an optimizer step); so does tilekit
    with torch.no_grad():
        tilekit.copy(z, out=p)
    exact(p.detach(), z)
    # without out= the result is a new tensor that does not require grad (no derivative)
    assert not tilekit.softmax(x).requires_grad


def test_overlapping_outputs_are_overlap_errors():
    x = rand(64, 64, seed=10)
    before = x.clone()
    with pytest.raises(tilekit.OverlapError) as e:
        tilekit.transpose(x, out=x)
    assert isinstance(e.value, tilekit.ShapeError)  # a kind of shape error
    with pytest.raises(tilekit.OverlapError):
        tilekit.copy(x.t(), out=x)
    a, b = rand(64, 64, seed=11), rand(64, 64, seed=12)
    a_before = a.clone()
    with pytest.raises(tilekit.OverlapError):
        tilekit.gemm(a, b, out=a)
    exact(x, before)
    exact(a, a_before)
    # in place where the op defines it: softmax and copy onto the same view, elementwise
    want = torch.softmax(x, -1)
    assert tilekit.softmax(x, out=x) is x
    torch.testing.assert_close(x, want, rtol=0, atol=1e-5)
    same = x.clone()
    assert tilekit.copy(x, out=x) is x
    exact(x, same)
    y = rand(64, 64, seed=13)
    want = y + y
    tilekit.add(y, y, out=y)
    exact(y, want)


@pytest.mark.skipif(
    torch.cuda.device_count() < 2,
    reason="needs 2 CUDA devices (an op on cuda:1 while cuda:0 is current); this machine has "
           f"{torch.cuda.device_count()}")
def test_an_op_on_another_device_leaves_the_current_device_alone():
    torch.cuda.set_device(0)
    x1 = torch.randn(37, 1001, device="cuda:1")
    y1 = tilekit.softmax(x1)
    assert torch.cuda.current_device() == 0
    assert torch.empty(4, device="cuda").device == torch.device("cuda:0")
    assert y1.device == torch.device("cuda:1")
    torch.testing.assert_close(y1, torch.softmax(x1, -1), rtol=0, atol=1e-5)
    # a call that fails in the Rust bindings (after the device was bound) leaves it too
    sq = torch.randn(64, 64, device="cuda:1")
    with pytest.raises(tilekit.OverlapError):
        tilekit.transpose(sq, out=sq)
    assert torch.cuda.current_device() == 0
    # and the other way round, on the current stream of each device
    with torch.cuda.device(1):
        x0 = torch.randn(33, 65, device="cuda:0")
        exact(tilekit.transpose(x0), x0.t().contiguous())
        assert torch.cuda.current_device() == 1
        assert torch.empty(4, device="cuda").device == torch.device("cuda:1")
    assert torch.cuda.current_device() == 0
    # GEMM and attention on cuda:1
    a, b = (torch.randn(128, 64, device="cuda:1", dtype=torch.half),
            torch.randn(64, 128, device="cuda:1", dtype=torch.half))
    c = tilekit.gemm(a, b)
    assert c.device == torch.device("cuda:1") and torch.cuda.current_device() == 0
    want = a.double() @ b.double()
    assert ((c.double() - want).abs() / (want.abs() + 1)).max() <= 1e-2


def _mixed(x, a, b, q, k, v):
    """softmax, a GEMM with its epilogue and attention between PyTorch ops."""
    y = tilekit.softmax(x * 2)
    c = tilekit.gemm(a, b, activation="relu")
    o = tilekit.attention(q, k, v, causal=True)
    return y + 1, c.float() * 2, o


def _mixed_inputs(seed):
    return (rand(37, 1001, seed=seed),
            rand(128, 64, dtype=torch.float16, seed=seed + 1),
            rand(64, 136, dtype=torch.float16, seed=seed + 2),
            *qkv(2, 130, 200, 4, 2, 64, torch.bfloat16, seed=seed + 3))


def _same(got, want):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g.float(), w.float(), rtol=1e-3, atol=1e-3)


@needs_hopper
def test_torch_compile_fullgraph_matches_eager():
    args = _mixed_inputs(200)
    want = _mixed(*args)
    torch._dynamo.reset()
    compiled = torch.compile(_mixed, fullgraph=True)
    _same(compiled(*args), want)
    args2 = _mixed_inputs(300)  # the same shapes: the compiled graph again, new values
    _same(compiled(*args2), _mixed(*args2))


@needs_hopper
def test_cuda_graph_capture_replays():
    static = _mixed_inputs(400)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture: kernels JIT-loaded, memory pooled
        for _ in range(2):
            _mixed(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = _mixed(*static)
    for seed in (500, 600):
        fresh = _mixed_inputs(seed)
        for s, f in zip(static, fresh):
            s.copy_(f)
        graph.replay()
        torch.cuda.synchronize()
        _same(outs, _mixed(*fresh))


# ---- the direct read of torch tensors (issue 32 item 4: no DLPack export per call) -----------


@pytest.mark.parametrize("make", [
    lambda: rand(16, 32),
    lambda: rand(16, 32).t(),                                   # transposed
    lambda: rand(10, 40)[3:7, 5:29],                            # offset and gaps
    lambda: rand(4, 8, 6, dtype=torch.bfloat16).permute(2, 0, 1),
    lambda: torch.arange(12, device=DEV, dtype=torch.int64).view(3, 4)[:, ::2],
    lambda: torch.empty(0, 5, device=DEV, dtype=torch.float16),
    lambda: rand(5)[2],                                         # rank 0
    lambda: torch.nn.Parameter(rand(3, 4)),
])
def test_the_direct_read_is_what_dlpack_exports(make):
    x = make()
    direct = tilekit._tilekit._read_torch(x)
    exported = tilekit.read_dlpack(x.detach())
    assert direct is not None
    size = x.element_size()
    first = exported["ptr"] + exported["offset"] * size
    assert direct["ptr"] == first or x.numel() == 0
    for key in ("dtype", "shape", "strides", "device"):
        assert direct[key] == exported[key], key
    assert direct["bytes"] == max(exported["bytes"] - exported["offset"] * size, 0)


def test_tensors_the_direct_read_leaves_to_dlpack():
    assert tilekit._tilekit._read_torch(rand(4, dtype=torch.float32).cpu()) is None
    assert tilekit._tilekit._read_torch(rand(4).to(torch.int8)) is None        # dtype
    assert tilekit._tilekit._read_torch(torch._neg_view(rand(4))) is None      # negative bit
    assert tilekit._tilekit._read_torch(rand(4, 4).to_sparse()) is None        # no strides


def test_ops_on_several_streams_keep_one_backend_per_stream():
    x = rand(64, 300)
    want = torch.softmax(x, -1)
    side = [torch.cuda.Stream() for _ in range(3)]
    outs = []
    for _ in range(3):
        for s in side:
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                outs.append(tilekit.softmax(x))
    for s in side:
        torch.cuda.current_stream().wait_stream(s)
    for y in outs:
        torch.testing.assert_close(y, want)
