#!/usr/bin/env python3
"""The model-shape suite runner (issue 32): every case of a suite file timed beside PyTorch.

    python3 bench/suite.py bench/model-shapes.json --json out.json --svg out.svg
    python3 bench/suite.py bench/suite-small.json --backend interp     # no GPU: correctness only

A suite file is JSON: {"about": "...", "cases": [...]}; each case has "op" and "name" and
(optional "model", "dtype", default bf16):

    gemm       m, n, k, layout   C[m,n] = A @ B, bf16 in, bf16 out. layout letters are BLAS-style
                                 for a row-major C: "nt" A row-major (m,k), B a weight W (n,k)
                                 used as W.T; "nn" both row-major; "tn" A stored (k,m) used as
                                 its transpose; "tt" both transposed.
    attention  b, sq, sk, h, hk, d, causal
                                 q (b,sq,h,d), k and v (b,sk,hk,d); causal is bottom-right
                                 aligned (query i sees keys up to sk - sq + i).
    softmax    m, n              over the last dim of an (m, n) tensor.
    row_sum    m, n              float32 sum over the last dim of an (m, n) tensor.

On a GPU (``--backend cuda``, the default) each case runs through the ``tilekit`` Python package
and through PyTorch in this process, each timed with CUDA events (``--warmup`` calls, then the
median of ``--reps`` calls, each between its own pair of events: launch cost on both sides):

    gemm       tilekit.gemm(a, b, out=c)     vs torch.matmul(a, b, out=c2), the same views
    attention  tilekit.attention(q, k, v)    vs the fastest SDPA backend that runs the case:
               cuDNN, flash, efficient, each with GQA through enable_gqa=True and through K/V
               expanded beforehand (outside the timing), bottom-right causal through
               torch.nn.attention.bias.causal_lower_right where sq != sk (is_causal where equal)
    softmax    tilekit.softmax(x)            vs torch.softmax(x, -1)
    row_sum    tilekit.row_sum(x)            vs x.sum(-1, dtype=torch.float32)

ratio = PyTorch time / tilekit time (> 1: tilekit faster). Memory-bound cases (softmax, row_sum,
decode: sq <= 8) are also set against a device copy of the same number of bytes (read + write)
timed the same way in the same run: "of copy" = copy time / op time. Each tilekit result is
checked against PyTorch's with the tolerance printed beside it. Families: gemm, attention
(prefill, sq > 8), decode (sq <= 8), softmax, row_sum; each gets the geometric mean and minimum of
its ratios and the count under 0.90. A case tilekit refuses is reported with its typed error and
counted as refused (the run goes on).

``--backend interp`` runs every case on tilekit's CPU interpreter (``tilekit.interp``) and checks
it against an independent float64 reference: PyTorch on the CPU when it is importable, else NumPy.
No timing beside PyTorch there; the interpreter is slow, so cases over ``--max-work`` are skipped.

Exit status: 1 when a result is out of tolerance (or, with ``--strict``, when a case was refused
or skipped), 2 for a suite file that cannot be read; else 0.
"""
import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

OPS = {
    "gemm": ("m", "n", "k", "layout"),
    "attention": ("b", "sq", "sk", "h", "hk", "d", "causal"),
    "softmax": ("m", "n"),
    "row_sum": ("m", "n"),
}
GEMM_LAYOUTS = ("nn", "nt", "tn", "tt")
DTYPES = ("bf16", "f16", "f32")
FAMILIES = ("gemm", "attention", "decode", "softmax", "row_sum")
DECODE_MAX_SQ = 8
UNDER = 0.90


class SuiteError(Exception):
    """A suite file that cannot be run: names the case and the field."""


# ---- the suite file --------------------------------------------------------------------------


def parse_suite(doc, source="suite"):
    """The cases of a suite document (a dict as read from JSON), checked and normalised: every
    case gets "name", "model", "dtype" (default bf16) and its op's fields as ints (bool for
    causal, str for layout). Raises SuiteError naming the case and field."""
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise SuiteError(f"{source}: a suite is an object with a list \"cases\"")
    cases = []
    for i, c in enumerate(doc["cases"]):
        where = f"{source}: case {i}"
        if not isinstance(c, dict):
            raise SuiteError(f"{where}: a case is an object, got {type(c).__name__}")
        op = c.get("op")
        if op not in OPS:
            raise SuiteError(f"{where}: op {op!r} is not one of {', '.join(OPS)}")
        name = str(c.get("name") or f"{op} {i}")
        where = f"{source}: case {i} ({name})"
        out = {"op": op, "name": name, "model": str(c.get("model", "")),
               "dtype": c.get("dtype", "bf16")}
        if out["dtype"] not in DTYPES:
            raise SuiteError(f"{where}: dtype {out['dtype']!r} is not one of {', '.join(DTYPES)}")
        for field in OPS[op]:
            if field not in c:
                raise SuiteError(f"{where}: {op} needs field {field!r}")
            v = c[field]
            if field == "layout":
                if v not in GEMM_LAYOUTS:
                    raise SuiteError(f"{where}: layout {v!r} is not one of "
                                     f"{', '.join(GEMM_LAYOUTS)}")
            elif field == "causal":
                if not isinstance(v, bool):
                    raise SuiteError(f"{where}: causal must be true or false, got {v!r}")
            else:
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise SuiteError(f"{where}: {field} must be a positive integer, got {v!r}")
            out[field] = v
        if op == "attention":
            if out["h"] % out["hk"]:
                raise SuiteError(f"{where}: hk {out['hk']} does not divide h {out['h']}")
            if out["dtype"] == "f32":
                raise SuiteError(f"{where}: attention is bf16 or f16")
        if op == "gemm" and out["dtype"] == "f32":
            raise SuiteError(f"{where}: gemm is bf16 or f16")
        cases.append(out)
    return cases


def load_suite(path):
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise SuiteError(f"{path}: not JSON: {e}") from None
    return doc.get("about", "") if isinstance(doc, dict) else "", parse_suite(doc, path)


def family(case):
    if case["op"] == "attention":
        return "decode" if case["sq"] <= DECODE_MAX_SQ else "attention"
    return case["op"]


def gemm_storage(layout, m, n, k):
    """How a GEMM case's operands are stored: ((A's stored shape, A is its transpose),
    (B's stored shape, B is its transpose)); A is (m, k) and B is (k, n) as used."""
    if layout not in GEMM_LAYOUTS:
        raise SuiteError(f"layout {layout!r} is not one of {', '.join(GEMM_LAYOUTS)}")
    a_t, b_t = layout[0] == "t", layout[1] == "t"
    return (((k, m) if a_t else (m, k), a_t), ((n, k) if b_t else (k, n), b_t))


def gemm_views(layout, m, n, k, make):
    """A (m, k) and B (k, n) of a layout: ``make(shape)`` makes a stored tensor, transposed
    with ``.T`` where the layout says so (a view, no copy)."""
    (sa, at), (sb, bt) = gemm_storage(layout, m, n, k)
    a, b = make(sa), make(sb)
    return (a.T if at else a), (b.T if bt else b)


def attention_pairs(sq, sk, causal):
    """The (query, key) pairs attention computes per (batch, head): sq * sk, or with the
    bottom-right causal mask sum over i of min(sk, max(0, sk - sq + i + 1))."""
    if not causal:
        return sq * sk
    total = 0
    for i in range(sq):
        total += min(sk, max(0, sk - sq + i + 1))
    return total


def elem_bytes(dtype):
    return {"bf16": 2, "f16": 2, "f32": 4}[dtype]


def case_flops(c):
    if c["op"] == "gemm":
        return 2 * c["m"] * c["n"] * c["k"]
    if c["op"] == "attention":
        return 4 * c["b"] * c["h"] * c["d"] * attention_pairs(c["sq"], c["sk"], c["causal"])
    return None


def case_bytes(c):
    """The fewest bytes the op moves: each input read once, each output written once."""
    e = elem_bytes(c["dtype"])
    if c["op"] == "gemm":
        return e * (c["m"] * c["k"] + c["k"] * c["n"] + c["m"] * c["n"])
    if c["op"] == "attention":
        q = c["b"] * c["sq"] * c["h"] * c["d"]
        kv = c["b"] * c["sk"] * c["hk"] * c["d"]
        return e * (2 * q + 2 * kv)
    if c["op"] == "softmax":
        return 2 * e * c["m"] * c["n"]
    return e * c["m"] * c["n"] + 4 * c["m"]


def case_work(c):
    """A size for --max-work: multiply-adds for gemm and attention, elements otherwise."""
    f = case_flops(c)
    return f // 2 if f is not None else c["m"] * c["n"]


def memory_bound(c):
    return c["op"] in ("softmax", "row_sum") or family(c) == "decode"


def shape_text(c):
    if c["op"] == "gemm":
        return f"{c['m']}x{c['n']}x{c['k']} {c['layout']}"
    if c["op"] == "attention":
        gqa = f"{c['h']}/{c['hk']}h" if c["h"] != c["hk"] else f"{c['h']}h"
        return (f"b{c['b']} {c['sq']}x{c['sk']} {gqa} d{c['d']}"
                + (" causal" if c["causal"] else ""))
    return f"{c['m']}x{c['n']}"


# ---- checks --------------------------------------------------------------------------------


def tolerance(c):
    """(rtol, atol) of a case: |got - want| <= atol + rtol * |want| elementwise. Inputs are
    standard normal (attention's scaled so that scores stay O(1))."""
    low = c["dtype"] in ("bf16", "f16")
    if c["op"] == "gemm":
        # the output is rounded to 16 bits (2^-8 relative); f32 accumulation in any order
        return 1e-2, 1e-3 * math.sqrt(c["k"])
    if c["op"] == "attention":
        # P is rounded to 16 bits before P @ V, as in every flash kernel
        return 2e-2, 2e-2
    if c["op"] == "softmax":
        return (1e-2, 1e-5) if low else (1e-4, 1e-7)
    return 1e-4, 1e-6 * c["n"]


def geomean(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    if any(x <= 0 for x in xs):
        raise ValueError("the geometric mean takes positive numbers")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summarize(rows):
    """Per family: cases, ran, geometric mean and minimum of the ratios (with the case), the
    count under 0.90, refused / skipped / mismatched counts; and the fractions of copy."""
    out = {}
    for fam in FAMILIES:
        rs = [r for r in rows if r["family"] == fam]
        if not rs:
            continue
        ratios = [(r["ratio"], r["name"]) for r in rs if r.get("ratio") is not None]
        low = min(ratios) if ratios else None
        of_copy = [r["of_copy"] for r in rs if r.get("of_copy") is not None]
        out[fam] = {
            "cases": len(rs),
            "timed": len(ratios),
            "geomean": geomean([x for x, _ in ratios]),
            "min": low[0] if low else None,
            "min_case": low[1] if low else None,
            "under_0.90": sum(1 for x, _ in ratios if x < UNDER),
            "refused": sum(1 for r in rs if r["status"] == "refused"),
            "skipped": sum(1 for r in rs if r["status"] == "skipped"),
            "mismatch": sum(1 for r in rs if r["status"] == "mismatch"),
            "of_copy_min": min(of_copy) if of_copy else None,
            "of_copy_geomean": geomean(of_copy),
        }
    return out


# ---- output --------------------------------------------------------------------------------


def fmt(v, spec=".3f", none="-"):
    return none if v is None else format(v, spec)


def print_table(header, rows, summary, timed, out=None):
    out = out or sys.stdout
    p = lambda s="": print(s, file=out)
    p("tilekit model-shape suite: " + header["suite"])
    for key in ("device", "backend", "commit", "date", "tilekit", "torch", "reference", "copy"):
        if header.get(key):
            p(f"  {key:<9} {header[key]}")
    p()
    if timed:
        p(f"{'case':<44} {'shape':<30} {'tilekit ms':>10} {'torch ms':>9} {'ratio':>6} "
          f"{'rate':>16} {'of copy':>12}  check")
    else:
        p(f"{'case':<44} {'shape':<30} {'wall s':>7}  check")
    fam = None
    for r in rows:
        if r["family"] != fam:
            fam = r["family"]
            p(f"-- {fam}")
        check = r["status"] if r["status"] != "ok" else "ok"
        if r.get("check"):
            check += f" ({r['check']})"
        if r.get("error"):
            check += f": {r['error']}"
        if timed:
            rate = ""
            if r.get("tilekit_tflops") is not None:
                rate = f"{r['tilekit_tflops']:.1f}/{fmt(r.get('torch_tflops'), '.1f')} TF"
            elif r.get("tilekit_gbs") is not None:
                rate = f"{r['tilekit_gbs']:.0f}/{fmt(r.get('torch_gbs'), '.0f')} GB/s"
            ofc = ""
            if r.get("of_copy") is not None:
                ofc = f"{r['of_copy']:.2f}/{fmt(r.get('torch_of_copy'), '.2f')}"
            torch_ms = fmt(r.get("torch_ms"), ".4f")
            if r.get("torch_backend"):
                check = f"[sdpa {r['torch_backend']}] " + check
            p(f"{r['name'][:44]:<44} {r['shape'][:30]:<30} {fmt(r.get('tilekit_ms'), '.4f'):>10} "
              f"{torch_ms:>9} {fmt(r.get('ratio'), '.2f'):>6} {rate:>16} {ofc:>12}  {check}")
        else:
            p(f"{r['name'][:44]:<44} {r['shape'][:30]:<30} {fmt(r.get('wall_s'), '.2f'):>7}  "
              f"{check}")
    p()
    if timed:
        p("ratio = PyTorch time / tilekit time; rate = tilekit/PyTorch; of copy = a same-size "
          "device copy's time / the op's (tilekit/PyTorch)")
        p(f"{'family':<10} {'cases':>5} {'timed':>5} {'geomean':>8} {'min':>6} {'< 0.90':>6} "
          f"{'refused':>7} {'mismatch':>8}  {'of copy min':>11}  minimum case")
        for fam, s in summary.items():
            p(f"{fam:<10} {s['cases']:>5} {s['timed']:>5} {fmt(s['geomean'], '.2f'):>8} "
              f"{fmt(s['min'], '.2f'):>6} {s['under_0.90']:>6} {s['refused']:>7} "
              f"{s['mismatch']:>8}  {fmt(s['of_copy_min'], '.2f'):>11}  {s['min_case'] or ''}")
    else:
        n = len(rows)
        bad = {k: sum(1 for r in rows if r["status"] == k) for k in ("mismatch", "refused",
                                                                       "skipped")}
        p(f"{n} cases: {n - sum(bad.values())} ok, {bad['mismatch']} mismatch, "
          f"{bad['refused']} refused, {bad['skipped']} skipped")


def write_svg(path, header, rows):
    """One horizontal bar per case: the ratio on a log2 axis (1/16 .. 4), grouped by family;
    green >= 1, orange 0.90 .. 1, red < 0.90, a grey mark for a case not timed."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from svgbars import write_svg as write
    from xml.sax.saxutils import escape

    lo, hi = -4.0, 2.0
    x0, w, row_h, top = 330, 560, 13, 60
    xs = lambda r: x0 + w * (min(max(math.log2(r), lo), hi) - lo) / (hi - lo)
    parts, y = [], top
    for t in range(int(lo), int(hi) + 1):
        xt = xs(2.0 ** t)
        label = f"{2.0 ** t:g}" if t >= 0 else f"1/{2 ** -t}"
        parts.append(f'<text x="{xt:.1f}" y="{top - 8}" text-anchor="middle">{label}</text>')
    for ref, colour in ((1.0, "#444"), (UNDER, "#c33")):
        parts.append(f'<line x1="{xs(ref):.1f}" x2="{xs(ref):.1f}" y1="{top - 4}" '
                     f'y2="{{BOTTOM}}" stroke="{colour}" stroke-dasharray="3,2"/>')
    fam = None
    for r in rows:
        if r["family"] != fam:
            fam = r["family"]
            y += 6
            parts.append(f'<text x="8" y="{y + 10}" font-weight="bold">{escape(fam)}</text>')
            y += row_h
        parts.append(f'<text x="{x0 - 6}" y="{y + 10}" text-anchor="end" font-size="10">'
                     f'{escape(r["name"][:52])}</text>')
        ratio = r.get("ratio")
        if ratio:
            colour = "#3a3" if ratio >= 1 else ("#e90" if ratio >= UNDER else "#d33")
            a, b = sorted((xs(1.0), xs(ratio)))
            parts.append(f'<rect x="{a:.1f}" y="{y + 2}" width="{max(b - a, 1):.1f}" '
                         f'height="{row_h - 3}" fill="{colour}"/>')
            parts.append(f'<text x="{x0 + w + 6}" y="{y + 10}" font-size="10">{ratio:.2f}</text>')
        else:
            parts.append(f'<text x="{x0 + w + 6}" y="{y + 10}" font-size="10" fill="#888">'
                         f'{escape(r["status"])}</text>')
        y += row_h
    parts = [p.replace("{BOTTOM}", str(y)) for p in parts]
    title = (f"tilekit / PyTorch on {header.get('device', '?')} — ratio = PyTorch time / tilekit "
             f"time ({header.get('commit', '')}, {header.get('date', '')[:10]})")
    write(path, parts, x0 + w + 60, y + 20, title=title)


# ---- the header ------------------------------------------------------------------------------


def commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short=10", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (+ uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def base_header(args, tilekit):
    return {
        "suite": args.suite,
        "backend": args.backend,
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tilekit": getattr(tilekit, "__version__", "?"),
        "python": platform.python_version(),
    }


def row_base(c):
    return {"name": c["name"], "model": c["model"], "op": c["op"], "family": family(c),
            "dtype": c["dtype"], "shape": shape_text(c),
            "case": {k: v for k, v in c.items() if k not in ("name", "model")},
            "status": "ok"}


def error_text(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


# ---- the GPU run -----------------------------------------------------------------------------


class Gpu:
    """Timing and tensors on the current CUDA device, with PyTorch."""

    def __init__(self, torch, args):
        self.torch, self.args = torch, args
        self.copies = {}

    def timed(self, fn):
        torch = self.torch
        for _ in range(self.args.warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        start = time.perf_counter()
        for i in range(self.args.reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
            if i >= 2 and time.perf_counter() - start > self.args.max_seconds:
                break  # a long case: the median of fewer calls
        return statistics.median(times)

    def copy_ms(self, nbytes):
        """A device copy moving `nbytes` in all (nbytes / 2 read, nbytes / 2 written)."""
        half = max(nbytes // 2, 16)
        if half not in self.copies:
            torch = self.torch
            src = torch.empty(half, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            self.copies[half] = self.timed(lambda: dst.copy_(src))
            del src, dst
        return self.copies[half]

    def dtype(self, name):
        t = self.torch
        return {"bf16": t.bfloat16, "f16": t.float16, "f32": t.float32}[name]

    def randn(self, shape, dtype, scale=1.0):
        t = self.torch
        return (t.randn(shape, device="cuda", dtype=t.float32) * scale).to(self.dtype(dtype))


def check(got, want, rtol, atol):
    """(ok, text): the largest |got - want| and its ratio to the tolerance at that element."""
    d = (got - want).abs()
    lim = atol + rtol * want.abs()
    excess = (d / lim).max().item() if d.numel() else 0.0
    nonfinite = bool((~(got == got)).any().item()) if d.numel() else False
    ok = excess <= 1.0 and not nonfinite
    return ok, f"max err {d.max().item() if d.numel() else 0:.3g}, {excess:.2f} of tol " \
               f"(rtol {rtol:g}, atol {atol:.3g})"


def sdpa_best(gpu, c, q, k, v):
    """The fastest SDPA way that runs the case: (ms, name, output in (b, sq, h, d), tried)."""
    torch = gpu.torch
    import warnings
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION)]
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # (b, heads, s, d) views
    kw = {}
    if c["causal"] and c["sq"] == c["sk"]:
        kw["is_causal"] = True
    elif c["causal"]:
        from torch.nn.attention.bias import causal_lower_right

        kw["attn_mask"] = causal_lower_right(c["sq"], c["sk"])
    group = c["h"] // c["hk"]
    ways = [("", kt, vt, {})]
    if group > 1:
        ke, ve = (x.repeat_interleave(group, dim=1) for x in (kt, vt))
        ways = [(" gqa", kt, vt, {"enable_gqa": True}), (" expanded", ke, ve, {})]
    tried, best = {}, None
    for bname, be in backends:
        for wname, kk, vv, extra in ways:
            name = bname + wname
            fn = lambda: F.scaled_dot_product_attention(qt, kk, vv, **kw, **extra)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with sdpa_kernel([be]):
                        out = fn()
                        ms = gpu.timed(fn)
            except Exception as e:  # a backend that does not run the case
                tried[name] = error_text(e)
                continue
            tried[name] = ms
            if best is None or ms < best[0]:
                best = (ms, name, out.transpose(1, 2))
    if best is None:
        return None, None, None, tried
    return best[0], best[1], best[2], tried


def run_case_gpu(gpu, tilekit, c):
    torch = gpu.torch
    row = row_base(c)
    rtol, atol = tolerance(c)
    op = c["op"]
    if op == "gemm":
        m, n, k = c["m"], c["n"], c["k"]
        a, b = gemm_views(c["layout"], m, n, k, lambda s: gpu.randn(s, c["dtype"]))
        out_tk = torch.empty((m, n), dtype=a.dtype, device="cuda")
        out_pt = torch.empty_like(out_tk)
        tk = lambda: tilekit.gemm(a, b, out=out_tk)
        pt = lambda: torch.matmul(a, b, out=out_pt)
        result = lambda: out_tk
        want = lambda: out_pt
    elif op == "attention":
        bq, sq, sk, h, hk, d = (c[x] for x in ("b", "sq", "sk", "h", "hk", "d"))
        q = gpu.randn((bq, sq, h, d), c["dtype"])
        k = gpu.randn((bq, sk, hk, d), c["dtype"])
        v = gpu.randn((bq, sk, hk, d), c["dtype"])
        tk = lambda: tilekit.attention(q, k, v, causal=c["causal"])
        pt = None
    elif op == "softmax":
        x = gpu.randn((c["m"], c["n"]), c["dtype"])
        tk = lambda: tilekit.softmax(x)
        pt = lambda: torch.softmax(x, -1)
    else:
        x = gpu.randn((c["m"], c["n"]), c["dtype"])
        tk = lambda: tilekit.row_sum(x)
        pt = lambda: x.sum(-1, dtype=torch.float32)
    # tilekit first: a refusal is reported and the case goes on to PyTorch alone
    try:
        got = tk()
        torch.cuda.synchronize()
    except (tilekit.Error, ValueError, TypeError, RuntimeError) as e:
        row.update(status="refused", error=error_text(e))
        got = None
    if got is not None:
        row["tilekit_ms"] = gpu.timed(tk)
    try:
        if op == "attention":
            ms, name, ref, tried = sdpa_best(gpu, c, q, k, v)
            row["torch_ms"], row["torch_backend"], row["torch_tried"] = ms, name, tried
        else:
            ref = pt()
            row["torch_ms"] = gpu.timed(pt)
            if op == "gemm":
                ref = want()
    except RuntimeError as e:
        row["torch_error"] = error_text(e)
        ref = None
    if got is not None and ref is not None:
        if op == "gemm":
            got = result()
        ok, text = check(got.float(), ref.float(), rtol, atol)
        row["check"] = text
        if not ok:
            row["status"] = "mismatch"
    if row.get("tilekit_ms") and row.get("torch_ms"):
        row["ratio"] = row["torch_ms"] / row["tilekit_ms"]
    flops, nbytes = case_flops(c), case_bytes(c)
    for side in ("tilekit", "torch"):
        ms = row.get(side + "_ms")
        if not ms:
            continue
        if flops is not None and not memory_bound(c):
            row[side + "_tflops"] = flops / (ms * 1e-3) / 1e12
        else:
            row[side + "_gbs"] = nbytes / (ms * 1e-3) / 1e9
    if memory_bound(c):
        row["bytes"] = nbytes
        row["copy_ms"] = gpu.copy_ms(nbytes)
        for side, key in (("tilekit", "of_copy"), ("torch", "torch_of_copy")):
            if row.get(side + "_ms"):
                row[key] = row["copy_ms"] / row[side + "_ms"]
    return row


def run_gpu(args, cases):
    import torch
    import tilekit

    if not torch.cuda.is_available():
        sys.exit("suite.py: no CUDA device (use --backend interp for the CPU interpreter)")
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    gpu = Gpu(torch, args)
    header = base_header(args, tilekit)
    header["device"] = torch.cuda.get_device_name(0)
    header["torch"] = torch.__version__
    header["reference"] = "PyTorch's result on the same inputs (tolerance per case)"
    gib = 1 << 30
    ms = gpu.copy_ms(2 * gib)
    header["copy_gbs"] = 2 * gib / (ms * 1e-3) / 1e9
    header["copy"] = (f"{header['copy_gbs']:.0f} GB/s (Tensor.copy_ of 1 GiB, read + write bytes, "
                      f"median of {args.reps})")
    rows = []
    for c in cases:
        t0 = time.perf_counter()
        try:
            row = run_case_gpu(gpu, tilekit, c)
        except torch.cuda.OutOfMemoryError as e:
            row = row_base(c)
            row.update(status="skipped", error=error_text(e))
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        if args.progress:
            print(f"  {c['name']}: {row.get('ratio')} {row['status']}", file=sys.stderr)
        torch.cuda.empty_cache()
    return header, rows


# ---- the interpreter run ---------------------------------------------------------------------


class NumpyHost:
    """Inputs for tilekit.interp and the float64 reference, with NumPy."""

    name = "NumPy float64"

    def __init__(self, seed):
        import numpy as np

        self.np = np
        self.rng = np.random.default_rng(seed)

    def randn(self, shape, dtype, scale=1.0):
        """(the tensor tilekit.interp takes, its exact values in float64)."""
        np = self.np
        from tilekit.interp import Bits

        x = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        if dtype == "bf16":
            bits = Bits.bf16(x)
            return bits, bits.float().astype(np.float64)
        x = x.astype({"f16": np.float16, "f32": np.float32}[dtype])
        return x, x.astype(np.float64)

    def f64(self, y):
        from tilekit.interp import Bits

        return (y.float() if isinstance(y, Bits) else y).astype(self.np.float64)

    def t(self, x):
        return x.T

    def softmax(self, x):
        e = self.np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def row_sum(self, x):
        return x.sum(axis=-1)

    def attention(self, q, k, v, causal):
        np = self.np
        b, sq, h, d = q.shape
        sk, hk = k.shape[1], k.shape[2]
        g = h // hk
        k = np.repeat(k, g, axis=2)
        v = np.repeat(v, g, axis=2)
        s = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
        if causal:
            i = np.arange(sq)[:, None]
            j = np.arange(sk)[None, :]
            s = np.where(j > i + sk - sq, -np.inf, s)
        m = s.max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        p = np.exp(s - m)
        den = p.sum(axis=-1, keepdims=True)
        p = np.divide(p, den, out=np.zeros_like(p), where=den > 0)
        return np.einsum("bhqk,bkhd->bqhd", p, v)

    def check(self, got, want, rtol, atol):
        np = self.np
        d = np.abs(got - want)
        if not d.size:
            return True, "empty"
        excess = float((d / (atol + rtol * np.abs(want))).max())
        ok = excess <= 1.0 and bool(np.isfinite(got).all())
        return ok, f"max err {float(d.max()):.3g}, {excess:.2f} of tol (rtol {rtol:g}, " \
                   f"atol {atol:.3g})"


class TorchHost:
    """Inputs for tilekit.interp and the float64 reference, with PyTorch on the CPU."""

    name = "PyTorch CPU float64"

    def __init__(self, seed):
        import torch

        self.torch = torch
        self.gen = torch.Generator().manual_seed(seed)

    def randn(self, shape, dtype, scale=1.0):
        t = self.torch
        x = t.randn(shape, generator=self.gen, dtype=t.float32) * scale
        x = x.to({"bf16": t.bfloat16, "f16": t.float16, "f32": t.float32}[dtype])
        return x, x.double()

    def f64(self, y):
        return y.double()

    def t(self, x):
        return x.T

    def softmax(self, x):
        return self.torch.softmax(x, -1)

    def row_sum(self, x):
        return x.sum(-1)

    def attention(self, q, k, v, causal):
        import torch.nn.functional as F

        t = self.torch
        sq, sk, h, hk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        kt, vt = (x.repeat_interleave(h // hk, dim=1) for x in (kt, vt))
        mask = None
        if causal:
            i = t.arange(sq)[:, None]
            j = t.arange(sk)[None, :]
            mask = j <= i + sk - sq
        o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)
        if causal and sq > sk:  # rows that see no key: 0, as tilekit defines them
            o = o.masked_fill(~mask.any(-1)[:, None], 0.0)
        return o.transpose(1, 2)

    def check(self, got, want, rtol, atol):
        return check(got, want, rtol, atol)


def run_case_interp(host, interp, c):
    row = row_base(c)
    rtol, atol = tolerance(c)
    op = c["op"]
    if op == "gemm":
        m, n, k = c["m"], c["n"], c["k"]
        (sa, at), (sb, bt) = gemm_storage(c["layout"], m, n, k)
        a, a64 = host.randn(sa, c["dtype"])
        b, b64 = host.randn(sb, c["dtype"])
        if at:
            a, a64 = host.t(a), host.t(a64)
        if bt:
            b, b64 = host.t(b), host.t(b64)
        run = lambda: interp.gemm(a, b, out_dtype=c["dtype"])
        want = lambda: a64 @ b64
    elif op == "attention":
        bq, sq, sk, h, hk, d = (c[x] for x in ("b", "sq", "sk", "h", "hk", "d"))
        q, q64 = host.randn((bq, sq, h, d), c["dtype"])
        k, k64 = host.randn((bq, sk, hk, d), c["dtype"])
        v, v64 = host.randn((bq, sk, hk, d), c["dtype"])
        run = lambda: interp.attention(q, k, v, causal=c["causal"])
        want = lambda: host.attention(q64, k64, v64, c["causal"])
    else:
        x, x64 = host.randn((c["m"], c["n"]), c["dtype"])
        run = (lambda: interp.softmax(x)) if op == "softmax" else (lambda: interp.row_sum(x))
        want = (lambda: host.softmax(x64)) if op == "softmax" else (lambda: host.row_sum(x64))
    t0 = time.perf_counter()
    try:
        got = run()
    except Exception as e:  # the typed error is the report
        row.update(status="refused", error=error_text(e))
        return row
    finally:
        row["wall_s"] = time.perf_counter() - t0
    ok, text = host.check(host.f64(got), want(), rtol, atol)
    row["check"] = text
    if not ok:
        row["status"] = "mismatch"
    return row


def run_interp(args, cases):
    import tilekit
    from tilekit import interp

    try:
        import torch  # noqa: F401

        host = TorchHost(0) if args.reference in ("auto", "torch") else NumpyHost(0)
    except ImportError:
        if args.reference == "torch":
            sys.exit("suite.py: --reference torch but torch is not importable")
        host = NumpyHost(0)
    header = base_header(args, tilekit)
    header["device"] = f"tilekit CPU interpreter ({platform.machine()}, {os.cpu_count()} cores)"
    header["reference"] = host.name
    if isinstance(host, TorchHost):
        header["torch"] = host.torch.__version__
    rows = []
    for c in cases:
        if case_work(c) > args.max_work:
            row = row_base(c)
            row.update(status="skipped", error=f"{case_work(c)} units of work > --max-work "
                                                f"{args.max_work} (too slow to interpret)")
        else:
            row = run_case_interp(host, interp, c)
        rows.append(row)
        if args.progress:
            print(f"  {c['name']}: {row['status']} {row.get('wall_s', 0):.1f} s", file=sys.stderr)
    return header, rows


# ---- main ------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", help="a suite file (JSON: about, cases)")
    ap.add_argument("--backend", choices=("cuda", "interp"), default="cuda")
    ap.add_argument("--json", metavar="PATH", help="write every figure as JSON")
    ap.add_argument("--svg", metavar="PATH", help="plot the ratios (GPU run)")
    ap.add_argument("--reps", type=int, default=20, help="timed calls per side (median)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=5.0,
                    help="stop timing a side after this long (at least 3 calls)")
    ap.add_argument("--only", action="append", default=[],
                    help="run the cases whose name contains this text (repeatable)")
    ap.add_argument("--max-work", type=int, default=20_000_000,
                    help="interp: skip cases over this many multiply-adds (or elements)")
    ap.add_argument("--reference", choices=("auto", "torch", "numpy"), default="auto",
                    help="interp: the float64 reference (auto: PyTorch CPU if importable)")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a case was refused or skipped, too")
    ap.add_argument("--progress", action="store_true", help="a line per case on stderr")
    args = ap.parse_args(argv)
    try:
        about, cases = load_suite(args.suite)
    except (OSError, SuiteError) as e:
        print(f"suite.py: {e}", file=sys.stderr)
        return 2
    if args.only:
        cases = [c for c in cases if any(s in c["name"] for s in args.only)]
    order = {f: i for i, f in enumerate(FAMILIES)}
    cases.sort(key=lambda c: order[family(c)])  # stable: the file's order within a family
    if args.backend == "cuda":
        header, rows = run_gpu(args, cases)
    else:
        header, rows = run_interp(args, cases)
    header["about"] = about
    summary = summarize(rows)
    print_table(header, rows, summary, timed=args.backend == "cuda")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "families": summary, "cases": rows}, f, indent=1)
    if args.svg:
        write_svg(args.svg, header, rows)
    bad = any(r["status"] == "mismatch" for r in rows)
    if args.strict:
        bad = bad or any(r["status"] in ("refused", "skipped") for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
