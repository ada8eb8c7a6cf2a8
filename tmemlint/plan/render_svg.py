"""Picture of a plan: TMEM columns across, program order (PTX lines) down; each region a coloured band over its
columns and live range, with its writes, reads and reuse edges marked; the riskiest reuse edge in red.

Drawn with ``drawsvg`` (PyPI, the optional extra ``tmemlint[plot]``) from the JSON model only.
"""

from __future__ import annotations

from tmemlint.names import demangle

import html

_COLOURS = {"accumulator": "#4e79a7", "A": "#59a14f", "scale-A": "#f28e2b", "scale-B": "#edc948",
            "metadata": "#b07aa1", "data": "#76b7b2"}
_RISK_COLOUR = {5: "#d62728", 4: "#ff7f0e", 3: "#bcbd22", 1: "#2ca02c", 0: "#7f7f7f"}

MISSING_MESSAGE = ("the svg and html formats need the drawsvg package: pip install 'tmemlint[plot]' "
                   "(or pip install drawsvg)")


class MissingDependency(Exception):
    """``drawsvg`` is not installed (``MISSING_MESSAGE`` says how to get it)."""


def _drawsvg():
    try:
        import drawsvg
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise MissingDependency(MISSING_MESSAGE) from e
    return drawsvg


def render_kernel_svg(k: dict, width: int = 900, height: int = 640) -> str:
    """One kernel as an SVG document (text).  Raises ``MissingDependency`` without drawsvg.

    The x axis spans the allocated columns (at least the regions' extent, 32 at minimum); the y axis spans the
    kernel's PTX lines.  A band is a region's columns × its live range; ticks on its left edge mark writes
    (filled) and reads (hollow); an arrow from a reader line to a writer line is a reuse edge."""
    dw = _drawsvg()
    left, top, right, bottom = 70, 60, 190, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    budget = k["budget"]
    ncols = max([budget["allocated_columns"] or 0] + [r["columns"][1] for r in k["regions"]] + [32])
    first, last = k["program_lines"]
    span = max(1, last - first)

    def x(col: float) -> float:
        return left + plot_w * col / ncols

    def y(line: float) -> float:
        return top + plot_h * (line - first) / span

    d = dw.Drawing(width, height, font_family="sans-serif")
    d.append(dw.Rectangle(0, 0, width, height, fill="white"))
    d.append(dw.Text(f"TMEM plan: {demangle(k['kernel'])}", 14, left, 22, font_weight="bold"))
    raw = budget["raw_columns"]
    alloc = budget["allocated_columns"]
    sub = f"{raw} of {alloc if alloc is not None else '?'} columns used"
    if budget["waste_percent"] is not None:
        sub += f", waste {budget['waste_columns']} ({budget['waste_percent']:g}%)"
    sub += f"; peak live {k['peak']['columns']} at line {k['peak']['line']}"
    d.append(dw.Text(sub, 11, left, 38, fill="#444"))
    # frame and axes
    d.append(dw.Rectangle(left, top, plot_w, plot_h, fill="#fafafa", stroke="#999"))
    step = 32 if ncols <= 256 else 64
    for c in range(0, ncols + 1, step):
        d.append(dw.Line(x(c), top, x(c), top + plot_h, stroke="#e4e4e4"))
        d.append(dw.Text(str(c), 9, x(c), top - 4, text_anchor="middle", fill="#555"))
    d.append(dw.Text("TMEM column", 10, left + plot_w / 2, height - 8, text_anchor="middle", fill="#555"))
    nt = 8
    for t in range(nt + 1):
        ln = round(first + span * t / nt)
        d.append(dw.Text(str(ln), 9, left - 6, y(ln) + 3, text_anchor="end", fill="#555"))
    d.append(dw.Text("PTX line", 10, 14, top + plot_h / 2, text_anchor="middle", fill="#555",
                     transform=f"rotate(-90 14 {top + plot_h / 2})"))
    # allocation events
    for a in k["allocations"]:
        d.append(dw.Line(left, y(a["line"]), left + plot_w, y(a["line"]), stroke="#333", stroke_dasharray="4,3"))
        d.append(dw.Text(f"alloc {a['columns']} (line {a['line']})", 9, left + plot_w + 4, y(a["line"]) + 3))
    for a in k["deallocations"]:
        d.append(dw.Line(left, y(a["line"]), left + plot_w, y(a["line"]), stroke="#333", stroke_dasharray="1,3"))
        d.append(dw.Text(f"dealloc (line {a['line']})", 9, left + plot_w + 4, y(a["line"]) + 3))
    # regions
    live = {t["region"]: t["live"] for t in k["timeline"]}
    centre = {}
    for r in k["regions"]:
        lo, hi = r["columns"]
        rng = live.get(r["name"]) or [first, last]
        colour = _COLOURS.get(r["kind"], "#999")
        x0, x1 = x(lo), x(hi)
        y0, y1 = y(rng[0]), y(rng[1])
        band = dw.Rectangle(x0, y0, max(1.5, x1 - x0), max(2.0, y1 - y0), fill=colour, fill_opacity=0.35,
                            stroke=colour)
        band.append_title(f"{r['name']} {r['kind']} columns [{lo}, {hi}) lanes [{r['lanes'][0]}, {r['lanes'][1]})")
        d.append(band)
        if x1 - x0 >= 7 * len(r["name"]) + 4:
            d.append(dw.Text(r["name"], 10, (x0 + x1) / 2, y0 + 12, text_anchor="middle", font_weight="bold"))
        else:  # a narrow region (4 scale-factor columns): the label runs down the band, not over its neighbours
            xm = (x0 + x1) / 2 + 3
            d.append(dw.Text(r["name"], 8, xm, y0 + 4, font_weight="bold", transform=f"rotate(90 {xm} {y0 + 4})"))
        centre[r["name"]] = (x0, x1)
        for w in r["writers"]:
            d.append(dw.Line(x0, y(w["line"]), x0 + 6, y(w["line"]), stroke=colour, stroke_width=2))
        for rd in r["readers"]:
            d.append(dw.Circle(x1 - 4, y(rd["line"]), 2.2, fill="white", stroke=colour))
    # reuse edges
    marker = dw.Marker(-0.1, -0.5, 0.9, 0.5, scale=5, orient="auto")
    marker.append(dw.Lines(-0.1, -0.5, -0.1, 0.5, 0.9, 0, fill="#333", close=True))
    d.append(marker)
    for n, e in enumerate(k["reuse_edges"]):
        x0, x1 = centre.get(e["region"], (left, left + plot_w))
        risky = n == k["riskiest_edge"]
        xc = x1 + 10 + (n % 4) * 5
        colour = "#d62728" if risky else "#4c78a8"  # red only for an edge the checker or happens-before faults
        path = dw.Path(stroke=colour, fill="none", stroke_width=2.5 if risky else 1.2,
                       marker_end=marker)
        path.M(x1, y(e["reader"]["line"])).Q(xc + 20, (y(e["reader"]["line"]) + y(e["writer"]["line"])) / 2,
                                               x1, y(e["writer"]["line"]))
        path.append_title(f"{e['region']}: line {e['reader']['line']} -> {e['writer']['line']}: {e['guard']}")
        d.append(path)
        if risky:
            d.append(dw.Text(f"riskiest: {e['guard']}", 10, xc + 22,
                             (y(e["reader"]["line"]) + y(e["writer"]["line"])) / 2, fill=colour,
                             font_weight="bold"))
    if k.get("ordering_verdict"):
        d.append(dw.Text(k["ordering_verdict"][:150], 9, left, 52,
                         fill="#d62728" if k["riskiest_edge"] is not None else "#333"))
    # legend
    ly = top + plot_h - 8 - 14 * len(_COLOURS)
    for i, (kind, colour) in enumerate(_COLOURS.items()):
        d.append(dw.Rectangle(left + plot_w + 8, ly + 14 * i, 10, 10, fill=colour, fill_opacity=0.6))
        d.append(dw.Text(kind, 9, left + plot_w + 22, ly + 14 * i + 9))
    return d.as_svg()


def render_svg(plan: dict) -> str:
    """The first kernel of the plan as SVG text (a file with several TMEM kernels: use ``render_html`` or
    ``--kernel``).  Raises ``MissingDependency`` without drawsvg; ``ValueError`` when the plan has no kernel."""
    if not plan["kernels"]:
        raise ValueError("no kernel uses Tensor Memory: nothing to draw")
    return render_kernel_svg(plan["kernels"][0])


def render_html(plan: dict, text: str) -> str:
    """A standalone HTML page: per kernel its picture (inline SVG) and the text plan ``text``."""
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>TMEM plan of {html.escape(plan['file'])}</title>",
             "<style>body{font-family:sans-serif;margin:1.5em} pre{background:#f6f6f6;padding:1em;"
             "overflow-x:auto}</style></head><body>",
             f"<h1>TMEM plan of {html.escape(plan['file'])}</h1>"]
    for k in plan["kernels"]:
        parts.append(f"<h2>{html.escape(demangle(k['kernel']))}</h2>")
        parts.append(render_kernel_svg(k))
    parts.append(f"<pre>{html.escape(text)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
