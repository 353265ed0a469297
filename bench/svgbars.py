"""Grouped bar charts as SVG, standard library only (the device machine and CI have no plotting
package); shared by plot_gemm.py and plot_attention.py.

    parts = panel(groups, series, x=60, y=50, w=900, h=300, title="…")
    write_svg("out.svg", parts, width, height)

`groups` is [(label, {series name: value or None}, note or None)]; `series` is
[(name, colour)]. Each bar is labelled with its value; a group's note (e.g. a ratio) is printed
under its label.
"""
import json
from xml.sax.saxutils import escape


def read_jsonl(path):
    """The JSON objects of a file's lines; other lines (progress, headers) are skipped."""
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


def panel(groups, series, x, y, w, h, title, ylabel="TFLOP/s", ymax=None):
    """SVG elements of one bar chart whose plot area is (x, y, w, h)."""
    vmax = max([v for _, d, _ in groups for v in d.values() if v] + [1.0])
    step = 100 if max(vmax, ymax or 0) > 300 else 50
    top = ymax or (int(vmax / step) + 1) * step
    ys = lambda v: y + h * (1 - v / top)
    parts = [f'<text x="{x + w / 2:.1f}" y="{y - 12}" text-anchor="middle" font-size="13">'
             f'{escape(title)}</text>']
    for t in range(0, int(top) + 1, step):
        parts.append(f'<line x1="{x}" x2="{x + w}" y1="{ys(t):.1f}" y2="{ys(t):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{x - 6}" y="{ys(t) + 4:.1f}" text-anchor="end">{t}</text>')
    parts.append(f'<text x="{x - 44}" y="{y + h / 2}" transform="rotate(-90 {x - 44} {y + h / 2})" '
                 f'text-anchor="middle">{escape(ylabel)}</text>')
    gw = w / max(len(groups), 1)
    bw = gw * 0.8 / len(series)
    for gi, (label, vals, note) in enumerate(groups):
        x0 = x + gi * gw + gw * 0.1
        for si, (name, colour) in enumerate(series):
            v = vals.get(name)
            if not v:
                continue
            bx = x0 + si * bw
            parts.append(f'<rect x="{bx:.1f}" y="{ys(v):.1f}" width="{bw - 1:.1f}" '
                         f'height="{y + h - ys(v):.1f}" fill="{colour}"/>')
            parts.append(f'<text x="{bx + bw / 2:.1f}" y="{ys(v) - 3:.1f}" text-anchor="middle" '
                         f'font-size="8">{v:.0f}</text>')
        cx = x + gi * gw + gw / 2
        parts.append(f'<text x="{cx:.1f}" y="{y + h + 15}" text-anchor="middle">{escape(label)}</text>')
        if note:
            parts.append(f'<text x="{cx:.1f}" y="{y + h + 28}" text-anchor="middle" '
                         f'fill="{series[0][1]}">{escape(note)}</text>')
    return parts


def legend(series, x, y):
    """A one-line legend of the series at (x, y)."""
    parts = []
    for name, colour in series:
        parts.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 16}" y="{y + 10}">{escape(name)}</text>')
        x += 130
    return parts


def write_svg(path, parts, width, height, title=None):
    """Writes the elements as one SVG document (white background, optional title)."""
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="11">',
            f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        head.append(f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">'
                    f'{escape(title)}</text>')
    with open(path, "w") as f:
        f.write("\n".join(head + parts + ["</svg>"]) + "\n")
