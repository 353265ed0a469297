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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgbars import legend, panel, read_jsonl, write_svg  # noqa: E402

SERIES = [
    ("tilekit", "#d1495b"),
    ("cuBLASLt", "#2e4057"),
    ("torch.matmul", "#66a182"),
]


def collect(tk_rows, torch_rows, dtype):
    """[(shape, {series: tflops or None}, ratio note)] in the tilekit benchmark's order."""
    torch_by = {(r["shape"], r["dtype"]): r["torch_tflops"] for r in torch_rows}
    out = []
    for r in tk_rows:
        if r.get("dtype") != dtype:
            continue
        vals = {
            "tilekit": r.get("sm90_tflops"),
            "cuBLASLt": r.get("cublaslt_tn_tflops"),
            "torch.matmul": torch_by.get((r["shape"], dtype)),
        }
        lt, tk = vals["cuBLASLt"], vals["tilekit"]
        note = f"{tk / lt:.2f}× cuBLASLt" if lt and tk else None
        out.append((r["shape"].replace("x", "×"), vals, note))
    return out


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
    width, height = max(700, 150 * len(groups)), 480
    parts = panel(groups, SERIES, 70, 60, width - 90, 330, "")
    parts += legend(SERIES, 70, height - 30)
    write_svg(args.output, parts, width, height, f"GEMM {args.dtype}, C = A·Bᵀ — {device}")
    print(f"wrote {args.output}: {len(groups)} shapes")


if __name__ == "__main__":
    main()
