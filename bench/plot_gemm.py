#!/usr/bin/env python3
"""SVG bar chart of GEMM TFLOP/s per shape: tilekit (Hopper kernel), cuBLASLt, torch.matmul.

Inputs are the JSON lines the two benchmarks print on the device, in one recorded run:

    tilekit bench gemm --json        > gemm.jsonl     # tilekit + cuBLASLt, same process
    python3 bench/compare.py --gemm --json > torch.jsonl

    python3 bench/plot_gemm.py gemm.jsonl torch.jsonl -o bench/gemm-h100.svg [--dtype bf16]

Standard library only (the device machine and CI have no plotting package). One group of bars
per shape, in the order of the benchmark; each bar is labelled with its TFLOP/s, and the tilekit
bar with its ratio to cuBLASLt. Lines that are not JSON (progress, headers) are skipped.
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

SERIES = [
    ("tilekit", "#d1495b"),
    ("cuBLASLt", "#2e4057"),
    ("torch.matmul", "#66a182"),
]


def read_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def collect(tk_rows, torch_rows, dtype):
    """[(shape, {series: tflops or None})] in the tilekit benchmark's order."""
    torch_by = {(r["shape"], r["dtype"]): r["torch_tflops"] for r in torch_rows}
    out = []
    for r in tk_rows:
        if r.get("dtype") != dtype:
            continue
        out.append((r["shape"], {
            "tilekit": r.get("sm90_tflops"),
            "cuBLASLt": r.get("cublaslt_tn_tflops"),
            "torch.matmul": torch_by.get((r["shape"], dtype)),
        }))
    return out


def svg(groups, title, width=1100, height=480):
    left, right, top, bottom = 60, 20, 50, 90
    plot_w, plot_h = width - left - right, height - top - bottom
    vmax = max([v for _, d in groups for v in d.values() if v] + [1.0])
    step = 100 if vmax > 300 else 50
    ymax = (int(vmax / step) + 1) * step
    y = lambda v: top + plot_h * (1 - v / ymax)
    gw = plot_w / max(len(groups), 1)
    bw = gw * 0.8 / len(SERIES)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>']
    for t in range(0, ymax + 1, step):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                     f'stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t}</text>')
    parts.append(f'<text x="16" y="{top + plot_h / 2}" transform="rotate(-90 16 {top + plot_h / 2})" '
                 f'text-anchor="middle">TFLOP/s</text>')
    for gi, (shape, vals) in enumerate(groups):
        x0 = left + gi * gw + gw * 0.1
        for si, (name, color) in enumerate(SERIES):
            v = vals.get(name)
            if not v:
                continue
            x = x0 + si * bw
            parts.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bw - 1:.1f}" '
                         f'height="{top + plot_h - y(v):.1f}" fill="{color}"/>')
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{y(v) - 3:.1f}" text-anchor="middle" '
                         f'font-size="9">{v:.0f}</text>')
        lt, tk = vals.get("cuBLASLt"), vals.get("tilekit")
        label = escape(shape.replace("x", "×"))
        cx = left + gi * gw + gw / 2
        parts.append(f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{label}</text>')
        if lt and tk:
            parts.append(f'<text x="{cx:.1f}" y="{top + plot_h + 30}" text-anchor="middle" '
                         f'fill="#d1495b">{tk / lt:.2f}× cuBLASLt</text>')
    lx = left
    for name, color in SERIES:
        parts.append(f'<rect x="{lx}" y="{height - 28}" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{lx + 16}" y="{height - 18}">{escape(name)}</text>')
        lx += 130
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tilekit_jsonl")
    ap.add_argument("torch_jsonl", nargs="?")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()
    tk = read_jsonl(args.tilekit_jsonl)
    th = read_jsonl(args.torch_jsonl) if args.torch_jsonl else []
    groups = collect(tk, th, args.dtype)
    if not groups:
        sys.exit(f"no {args.dtype} rows in {args.tilekit_jsonl} (expected `tilekit bench gemm --json` lines)")
    device = tk[0].get("device", "?")
    with open(args.output, "w") as f:
        f.write(svg(groups, f"GEMM {args.dtype}, C = A·Bᵀ — {device}"))
    print(f"wrote {args.output}: {len(groups)} shapes")


if __name__ == "__main__":
    main()
