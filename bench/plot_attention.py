#!/usr/bin/env python3
"""SVG of attention forward TFLOP/s per sequence length, like FlashAttention-3's figures: one
panel per (head dim, causal), bars for tilekit and each PyTorch SDPA backend.

Inputs are the JSON lines the two benchmarks print on the device, in one recorded run:

    tilekit bench attention --json          > attn.jsonl   # tilekit, every schedule
    python3 bench/compare.py --attention --json > sdpa.jsonl  # cuDNN / flash / efficient

    python3 bench/plot_attention.py attn.jsonl sdpa.jsonl -o bench/attention-h100.svg

Standard library only. tilekit's bar is its best schedule; under each group, tilekit's ratio to
the fastest SDPA backend.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgbars import legend, panel, read_jsonl, write_svg  # noqa: E402

SERIES = [
    ("tilekit", "#d1495b"),
    ("cuDNN", "#2e4057"),
    ("flash", "#66a182"),
    ("efficient", "#edae49"),
]


def collect(tk_rows, sdpa_rows):
    """{(head_dim, causal): [(seq label, {series: tflops}, note)]} in sequence order."""
    sdpa = {(r["head_dim"], r["causal"], r["seq"]): r for r in sdpa_rows if r.get("op") == "attention"}
    panels = {}
    for r in sorted(tk_rows, key=lambda r: (r["head_dim"], r["causal"], r["seq"])):
        if "best_tflops" not in r:
            continue
        s = sdpa.get((r["head_dim"], r["causal"], r["seq"]), {})
        vals = {"tilekit": r["best_tflops"], "cuDNN": s.get("cudnn"), "flash": s.get("flash"),
                "efficient": s.get("efficient")}
        best = max([v for k, v in vals.items() if k != "tilekit" and v] + [0])
        note = f"{r['best_tflops'] / best:.2f}×" if best else None
        seq = r["seq"]
        label = f"{seq // 1024}k" if seq >= 1024 and seq % 1024 == 0 else str(seq)
        panels.setdefault((r["head_dim"], r["causal"]), []).append((label, vals, note))
    return panels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tilekit_jsonl")
    ap.add_argument("sdpa_jsonl", nargs="?")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    tk = read_jsonl(args.tilekit_jsonl)
    panels = collect(tk, read_jsonl(args.sdpa_jsonl) if args.sdpa_jsonl else [])
    if not panels:
        sys.exit(f"no rows in {args.tilekit_jsonl} (expected `tilekit bench attention --json` lines)")
    dims = sorted({d for d, _ in panels})
    pw, ph = 430, 230
    width, height = 90 + len(dims) * (pw + 70), 2 * (ph + 90) + 60
    ymax = max(v for groups in panels.values() for _, vals, _ in groups for v in vals.values() if v)
    ymax = (int(ymax / 100) + 1) * 100
    parts = []
    for ci, d in enumerate(dims):
        for ri, causal in enumerate([False, True]):
            groups = panels.get((d, causal))
            if not groups:
                continue
            title = f"head dim {d}, {'causal' if causal else 'non-causal'}"
            parts += panel(groups, SERIES, 70 + ci * (pw + 70), 70 + ri * (ph + 90), pw, ph, title,
                           ymax=ymax)
    parts += legend(SERIES, 70, height - 28)
    dtype = tk[0].get("dtype", "bf16")
    device = tk[0].get("device", "?")
    write_svg(args.output, parts, width, height,
              f"Attention forward, {dtype}, 16k tokens per batch — {device}")
    print(f"wrote {args.output}: {sum(len(g) for g in panels.values())} cells in {len(panels)} panels")


if __name__ == "__main__":
    main()
