#!/usr/bin/env python3
"""PyTorch's figures for the memory-bound kernels of issue 7, in the same units as `tilekit bench`.

Run it on the device machine in the same call as `tilekit bench` (PyTorch is installed there):

    python3 bench/compare.py            # table
    python3 bench/compare.py --json     # one JSON object per op
    python3 bench/compare.py --gemm     # torch.matmul on issue 13's GEMM shapes (TFLOP/s)
    python3 bench/compare.py --attention  # SDPA per backend on issue 14's cases (TFLOP/s)

Every op is timed with CUDA events: 3 warm-ups, then the median of `--reps` runs. Bytes are the
fewest the op must move (each input read once, each output written once). The ratio is to a
device-to-device copy of 1 GiB (`torch.Tensor.copy_`) measured in the same process, which is what
`tilekit bench` divides by too (there through cuMemcpyDtoD).
"""
import argparse
import json
import statistics

import torch


def timed(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def morton_perm(h, w, t):
    """Storage position of each row-major element in the tiled Morton layout (tilekit's rule)."""
    rows = torch.arange(h, device="cuda").view(h, 1).expand(h, w)
    cols = torch.arange(w, device="cuda").view(1, w).expand(h, w)
    tr, ir = rows // t, rows % t
    tc, ic = cols // t, cols % t
    z = torch.zeros_like(rows)
    bits = t.bit_length() - 1
    for b in range(bits):
        z |= ((ic >> b) & 1) << (2 * b)
        z |= ((ir >> b) & 1) << (2 * b + 1)
    tiles_w = (w + t - 1) // t
    return ((tr * tiles_w + tc) * t * t + z).flatten()


# Issue 13's GEMM shapes (M, N, K), the same list as `tilekit bench gemm` (tilekit_cli::bench_gemm::SHAPES).
GEMM_SHAPES = [
    (8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (8192, 8192, 1024),
    (4096, 14336, 4096), (14336, 4096, 4096), (16384, 1024, 4096), (8191, 8191, 8191),
    (1000, 1000, 1000), (64, 8192, 8192),
]


def gemm(args):
    """torch.matmul in tilekit's TN layout: A (M×K) and B stored N×K, both row-major, C = A·Bᵀ.

    bf16 and f16 with the output in the input type (torch's default), and fp32 with TF32 off for
    the SIMT row of issue 13. FLOPs = 2·M·N·K; the median of `--reps` CUDA-event timings.
    """
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.cuda.get_device_name(0)
    rows = []
    for (m, n, k) in GEMM_SHAPES:
        for dt, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
            if name == "f16" and (m, n, k) not in [(8192, 8192, 8192), (4096, 14336, 4096), (14336, 4096, 4096)]:
                continue
            a = (torch.rand(m, k, device="cuda") - 0.5).to(dt)
            b = (torch.rand(n, k, device="cuda") - 0.5).to(dt)
            ms = timed(lambda: torch.matmul(a, b.t()), args.reps)
            rows.append(dict(op="gemm", shape=f"{m}x{n}x{k}", dtype=name, device=dev, median_ms=ms,
                             torch_tflops=2 * m * n * k / (ms * 1e-3) / 1e12, torch=torch.__version__))
            del a, b
    a = torch.rand(8192, 8192, device="cuda") - 0.5
    b = torch.rand(8192, 8192, device="cuda") - 0.5
    ms = timed(lambda: torch.matmul(a, b.t()), args.reps)
    rows.append(dict(op="gemm", shape="8192x8192x8192", dtype="f32 (no tf32)", device=dev, median_ms=ms,
                     torch_tflops=2 * 8192 ** 3 / (ms * 1e-3) / 1e12, torch=torch.__version__))
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(f"PyTorch {torch.__version__} on {dev}: torch.matmul, C = A·Bᵀ (B stored N×K)")
        print(f"{'shape':<18} {'dtype':<14} {'median ms':>10} {'TFLOP/s':>8}")
        for r in rows:
            print(f"{r['shape']:<18} {r['dtype']:<14} {r['median_ms']:>10.3f} {r['torch_tflops']:>8.1f}")


def attention(args):
    """torch SDPA forward with each backend on `tilekit bench attention`'s cases.

    bf16, 16384 tokens per batch, hidden 2048 (heads = 2048 / d), inputs laid out (b, s, h, d)
    as tilekit takes them and passed to SDPA as (b, h, s, d) views. TFLOP/s = 4·b·h·s²·d / t,
    halved for causal. A backend that refuses a case is reported as null.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    dev = torch.cuda.get_device_name(0)
    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    rows = []
    for d in (64, 128, 256):
        for causal in (False, True):
            for s in (512, 1024, 2048, 4096, 8192, 16384):
                b, h = 16384 // s, 2048 // d
                q, k, v = [(torch.rand(b, s, h, d, device="cuda") - 0.5).to(torch.bfloat16).transpose(1, 2)
                           for _ in range(3)]
                flops = 4 * b * h * s * s * d / (2 if causal else 1)
                row = dict(op="attention", device=dev, head_dim=d, causal=causal, seq=s, batch=b, heads=h,
                           torch=torch.__version__)
                for name, be in backends:
                    try:
                        with sdpa_kernel([be]):
                            ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                                       args.reps)
                        row[name] = flops / (ms * 1e-3) / 1e12
                    except RuntimeError:
                        row[name] = None
                rows.append(row)
                del q, k, v
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(f"PyTorch {torch.__version__} on {dev}: SDPA forward TFLOP/s, bf16")
        print(f"{'d':>4} {'causal':>6} {'seq':>6} {'cudnn':>8} {'flash':>8} {'efficient':>9}")
        f = lambda x: "—" if x is None else f"{x:.1f}"
        for r in rows:
            print(f"{r['head_dim']:>4} {str(r['causal']):>6} {r['seq']:>6} {f(r['cudnn']):>8} "
                  f"{f(r['flash']):>8} {f(r['efficient']):>9}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--gemm", action="store_true", help="torch.matmul on issue 13's GEMM shapes")
    ap.add_argument("--attention", action="store_true", help="SDPA backends on issue 14's cases")
    args = ap.parse_args()
    if args.gemm:
        gemm(args)
        return
    if args.attention:
        attention(args)
        return
    dev = torch.cuda.get_device_name(0)
    gib = 1 << 30
    src = torch.rand(gib // 4, device="cuda") + 0.5
    dst = torch.empty_like(src)
    copy_ms = timed(lambda: dst.copy_(src), args.reps)
    copy_gbs = 2 * gib / (copy_ms * 1e-3) / 1e9
    del src, dst

    rows = []

    def add(name, fn, nbytes):
        ms = timed(fn, args.reps)
        gbs = nbytes / (ms * 1e-3) / 1e9
        rows.append(dict(op=name, device=dev, median_ms=ms, gb_per_s=gbs, copy_gb_per_s=copy_gbs,
                         ratio_to_copy=gbs / copy_gbs))

    n = 16384
    for dt, name in [(torch.float32, "fp32"), (torch.bfloat16, "bf16")]:
        x = (torch.rand(n, n, device="cuda") + 0.5).to(dt)
        es = x.element_size()
        add(f"transpose {name} {n}x{n}", lambda: x.t().contiguous(), 2 * n * n * es)
        add(f"row sum {name} {n}x{n}", lambda: x.sum(dim=1, dtype=torch.float32), n * n * es + n * 4)
        add(f"softmax {name} {n}x{n}", lambda: torch.softmax(x, dim=1), 2 * n * n * es)
        del x
    for dt, name in [(torch.float32, "fp32"), (torch.bfloat16, "bf16")]:
        x = (torch.rand(512, 512, 256, device="cuda") + 0.5).to(dt)
        add(f"permute(2,0,1) {name} 512x512x256", lambda: x.permute(2, 0, 1).contiguous(),
            2 * x.numel() * x.element_size())
        del x
    x = torch.rand(n * n, device="cuda") + 0.5
    perm = morton_perm(n, n, 8)
    out = torch.empty_like(x)
    add(f"morton 8x8 tiles fp32 {n}x{n} (scatter)", lambda: out.index_copy_(0, perm, x), 2 * n * n * 4)
    add(f"morton inverse fp32 {n}x{n} (gather)", lambda: x.index_select(0, perm), 2 * n * n * 4)
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print(f"PyTorch {torch.__version__} on {dev}; copy_ {copy_gbs:.0f} GB/s")
        print(f"{'op':<44} {'median ms':>10} {'GB/s':>8} {'x copy':>7}")
        for r in rows:
            print(f"{r['op']:<44} {r['median_ms']:>10.3f} {r['gb_per_s']:>8.0f} {r['ratio_to_copy']:>7.3f}")


if __name__ == "__main__":
    main()
