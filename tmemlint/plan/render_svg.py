"""Picture of a plan: the region map (TMEM lanes down, columns across, as NVIDIA draws TMEM) above a lifetime
chart on the same columns (program order, PTX lines, down): each region a coloured band over its columns and live
range, with its writes, reads, commits, waits, releases and reuse edges marked; an edge in red only when it is at
risk (a checker finding, or no ordering).

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


def _label(dw, d, name: str, x0: float, x1: float, y0: float, y1: float, k: int, colour: str = "#111",
           below: bool = False) -> None:
    """A region's name inside its box: across when it fits, else down the band, alternating between the top and
    the bottom half for neighbours (``k``: the region's index) so that labels of 4-column regions never overlap;
    ``below``: a narrow band's label goes under the band (the lifetime chart, where marks fill the band)."""
    w = x1 - x0
    if w >= 6.5 * len(name) + 4:
        d.append(dw.Text(name, 10, (x0 + x1) / 2, min(y0 + 13, (y0 + y1) / 2 + 4), text_anchor="middle",
                         font_weight="bold", fill=colour))
        return
    size = 8 if w >= 7 else 7
    xm = (x0 + x1) / 2 + size / 2 - 1
    if below:
        ys = y1 + 3 + (0 if k % 2 == 0 else 6 * len(name))
    else:
        ys = y0 + 3 if k % 2 == 0 else (y0 + y1) / 2 + 2
    d.append(dw.Text(name, size, xm, ys, font_weight="bold", fill=colour, transform=f"rotate(90 {xm} {ys})"))


_EVENT_MARKS = {"commit": "▲", "wait": "■", "release": "◆"}


def render_kernel_svg(k: dict, width: int = 1000, height: int = 820) -> str:
    """One kernel as an SVG document (text).  Raises ``MissingDependency`` without drawsvg.

    Top: the region map as NVIDIA draws TMEM, lanes down (0-127) and columns across (the allocation, 32 at
    least); each region a box of its lanes x columns, outlined in red when the checker has a finding on it, dashed
    when it overlaps another.  Below, on the same column axis: the lifetime chart, PTX lines down; a band is a
    region's columns x its live range; ticks on its left edge mark writes (filled) and reads (hollow); ▲ commit,
    ■ wait, ◆ release; an arrow from a reader line to a writer line is a reuse edge, red only when it is at risk."""
    dw = _drawsvg()
    left, right, top = 70, 210, 76
    plot_w = width - left - right
    map_h = 200
    chart_top = top + map_h + 46
    chart_h = height - chart_top - 40
    budget = k["budget"]
    ncols = max([budget["allocated_columns"] or 0] + [r["columns"][1] for r in k["regions"]] + [32])
    first, last = k["program_lines"]
    span = max(1, last - first)

    def x(col: float) -> float:
        return left + plot_w * col / ncols

    def ly(lane: float) -> float:
        return top + map_h * lane / 128

    def y(line: float) -> float:
        return chart_top + chart_h * (line - first) / span

    d = dw.Drawing(width, height, font_family="sans-serif")
    d.append(dw.Rectangle(0, 0, width, height, fill="white"))
    title = f"TMEM plan: {demangle(k['kernel'])}"
    d.append(dw.Text(title if len(title) <= 118 else title[:117] + "…", 14, left, 20, font_weight="bold"))
    raw = budget["raw_columns"]
    alloc = budget["allocated_columns"]
    sub = f"{raw} of {alloc if alloc is not None else '?'} columns used"
    if budget["waste_percent"] is not None:
        sub += f", waste {budget['waste_columns']} ({budget['waste_percent']:g}%)"
    sub += f"; peak live {k['peak']['columns']} at line {k['peak']['line']}"
    if budget.get("per_sm_columns") is not None:
        sub += (f"; per SM {budget['per_sm_columns']} of 512 with {budget['ctas_per_sm']} CTA(s) "
                f"({'fits' if budget['fits'] else 'OVER'})")
    if not budget["complete"]:
        sub += "; incomplete: some accesses not placed"
    d.append(dw.Text(sub, 11, left, 37, fill="#444"))
    if k.get("ordering_verdict"):
        v = k["ordering_verdict"]
        v = v if len(v) <= 160 else v[:159] + "…"
        t = dw.Text(v, 10, left, 53, fill="#d62728" if k["riskiest_edge"] is not None else "#333")
        t.append_title(k["ordering_verdict"])
        d.append(t)
    step = 32 if ncols <= 256 else 64
    # ---- region map: lanes x columns
    d.append(dw.Text("Region map (lanes x columns)", 11, left, top - 8, font_weight="bold", fill="#333"))
    d.append(dw.Rectangle(left, top, plot_w, map_h, fill="#fafafa", stroke="#999"))
    for c in range(0, ncols + 1, step):
        d.append(dw.Line(x(c), top, x(c), top + map_h, stroke="#e4e4e4"))
    for lane in (0, 32, 64, 96, 128):
        d.append(dw.Line(left, ly(lane), left + plot_w, ly(lane), stroke="#e4e4e4"))
        d.append(dw.Text(str(lane), 9, left - 6, ly(lane) + 3, text_anchor="end", fill="#555"))
    d.append(dw.Text("TMEM lane", 10, 16, top + map_h / 2, text_anchor="middle", fill="#555",
                     transform=f"rotate(-90 16 {top + map_h / 2})"))
    for i, r in enumerate(k["regions"]):
        lo, hi = r["columns"]
        l0, l1 = r["lanes"]
        colour = _COLOURS.get(r["kind"], "#999")
        faulty = bool(r.get("findings"))
        box = dw.Rectangle(x(lo), ly(l0), max(1.5, x(hi) - x(lo)), max(2.0, ly(l1) - ly(l0)), fill=colour,
                           fill_opacity=0.45 if not r.get("overlaps") else 0.3,
                           stroke="#d62728" if faulty else colour, stroke_width=2 if faulty else 1,
                           stroke_dasharray="3,2" if r.get("overlaps") else None)
        box.append_title(f"{r['name']} {r['kind']} lanes [{l0}, {l1}) columns [{lo}, {hi})"
                         + (f", overlaps {', '.join(r['overlaps'])}" if r.get("overlaps") else "")
                         + (f"; {r['tcol']}" if r.get("tcol") else ""))
        d.append(box)
    for i, r in enumerate(k["regions"]):  # labels after every box: no box covers a label
        _label(dw, d, r["name"], x(r["columns"][0]), x(r["columns"][1]), ly(r["lanes"][0]), ly(r["lanes"][1]), i)
    # ---- lifetime chart: columns x PTX lines
    d.append(dw.Text("Lifetime (PTX lines down)", 11, left, chart_top - 22, font_weight="bold", fill="#333"))
    d.append(dw.Rectangle(left, chart_top, plot_w, chart_h, fill="#fafafa", stroke="#999"))
    for c in range(0, ncols + 1, step):
        d.append(dw.Line(x(c), chart_top, x(c), chart_top + chart_h, stroke="#e4e4e4"))
        d.append(dw.Text(str(c), 9, x(c), chart_top - 6, text_anchor="middle", fill="#555"))
    d.append(dw.Text("TMEM column", 10, left + plot_w / 2, height - 10, text_anchor="middle", fill="#555"))
    nt = 8
    for t in range(nt + 1):
        ln = round(first + span * t / nt)
        d.append(dw.Text(str(ln), 9, left - 6, y(ln) + 3, text_anchor="end", fill="#555"))
    d.append(dw.Text("PTX line", 10, 16, chart_top + chart_h / 2, text_anchor="middle", fill="#555",
                     transform=f"rotate(-90 16 {chart_top + chart_h / 2})"))
    for a in k["allocations"]:
        d.append(dw.Line(left, y(a["line"]), left + plot_w, y(a["line"]), stroke="#333", stroke_dasharray="4,3"))
        d.append(dw.Text(f"alloc {a['columns']} (line {a['line']})", 9, left + plot_w + 4, y(a["line"]) + 3))
    for a in k["deallocations"]:
        d.append(dw.Line(left, y(a["line"]), left + plot_w, y(a["line"]), stroke="#333", stroke_dasharray="1,3"))
        d.append(dw.Text(f"dealloc (line {a['line']})", 9, left + plot_w + 4, y(a["line"]) + 12))
    live = {t["region"]: t["live"] for t in k["timeline"]}
    events = {t["region"]: {ev["stage"]: ev["lines"] for ev in t["events"]} for t in k["timeline"]}
    centre = {}
    for i, r in enumerate(k["regions"]):
        lo, hi = r["columns"]
        rng = live.get(r["name"]) or [first, last]
        colour = _COLOURS.get(r["kind"], "#999")
        x0, x1 = x(lo), x(hi)
        y0, y1 = y(rng[0]), y(rng[1])
        band = dw.Rectangle(x0, y0, max(1.5, x1 - x0), max(2.0, y1 - y0), fill=colour, fill_opacity=0.35,
                            stroke=colour)
        band.append_title(f"{r['name']} {r['kind']} columns [{lo}, {hi}) lanes [{r['lanes'][0]}, {r['lanes'][1]}) "
                          f"live lines {rng[0]}-{rng[1]}")
        d.append(band)
        centre[r["name"]] = (x0, x1)
        for w in r["writers"]:
            d.append(dw.Line(x0, y(w["line"]), x0 + min(6, x1 - x0), y(w["line"]), stroke=colour, stroke_width=2))
        for rd in r["readers"]:
            d.append(dw.Circle(x1 - min(4, (x1 - x0) / 2), y(rd["line"]), 2.2, fill="white", stroke=colour))
        for stage, mark in _EVENT_MARKS.items():
            for ln in events.get(r["name"], {}).get(stage, [])[:12]:
                t = dw.Text(mark, 7, (x0 + x1) / 2, y(ln) + 2.5, text_anchor="middle", fill="#333")
                t.append_title(f"{r['name']}: {stage} at line {ln}")
                d.append(t)
    for i, r in enumerate(k["regions"]):
        rng = live.get(r["name"]) or [first, last]
        _label(dw, d, r["name"], x(r["columns"][0]), x(r["columns"][1]), y(rng[0]), y(rng[1]), i, below=True)
    marker = dw.Marker(-0.1, -0.5, 0.9, 0.5, scale=5, orient="auto")
    marker.append(dw.Lines(-0.1, -0.5, -0.1, 0.5, 0.9, 0, fill="#333", close=True))
    d.append(marker)
    for n, e in enumerate(k["reuse_edges"]):
        x0, x1 = centre.get(e["region"], (left, left + plot_w))
        risky = n == k["riskiest_edge"]
        xc = x1 + 10 + (n % 4) * 5
        colour = "#d62728" if e.get("at_risk") else "#4c78a8"  # red only for an edge at risk
        path = dw.Path(stroke=colour, fill="none", stroke_width=2.5 if risky else 1.2, marker_end=marker)
        path.M(x1, y(e["reader"]["line"])).Q(xc + 20, (y(e["reader"]["line"]) + y(e["writer"]["line"])) / 2,
                                               x1, y(e["writer"]["line"]))
        path.append_title(f"{e['region']}: line {e['reader']['line']} -> {e['writer']['line']}: {e['guard']}")
        d.append(path)
        if risky:
            d.append(dw.Text(f"riskiest: {e['guard']}", 10, xc + 22,
                             (y(e["reader"]["line"]) + y(e["writer"]["line"])) / 2, fill=colour,
                             font_weight="bold"))
    # ---- legend
    lx = left + plot_w + 12
    lyy = top
    d.append(dw.Text("Legend", 10, lx, lyy, font_weight="bold"))
    for i, (kind, colour) in enumerate(_COLOURS.items()):
        d.append(dw.Rectangle(lx, lyy + 8 + 14 * i, 10, 10, fill=colour, fill_opacity=0.6))
        d.append(dw.Text(kind, 9, lx + 14, lyy + 17 + 14 * i))
    yy = lyy + 8 + 14 * len(_COLOURS) + 6
    for text in ("dashed: overlaps another region", "red outline: checker finding", "▲ commit  ■ wait  ◆ release",
                 "— write   ○ read", "blue arrow: reuse, ordered", "red arrow: reuse at risk"):
        d.append(dw.Text(text, 9, lx, yy + 9))
        yy += 14
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
