"""Picture of a plan: the region map (TMEM lanes down, columns across, as NVIDIA draws TMEM) above a lifetime
chart on the same columns (program order down: source lines where the PTX has ``-lineinfo``, else PTX lines): each
region a coloured band over its columns and live range, with its writes, reads, commits, waits, releases and reuse
edges marked; an edge in red only when it is at risk (a checker finding, or no ordering).  Every text is placed by
``tmemlint.plan.layout`` (no two overlap) and carries a class (``region-label`` with ``data-region`` and
``data-panel``, ``mark``, ``annotation``, ``tick``, ``legend``, ``heading``) that tests/test_plan_browser.py reads
back from headless Chromium.

Drawn with ``drawsvg`` (PyPI, the optional extra ``tmemlint[plot]``) from the JSON model only.
"""

from __future__ import annotations

from tmemlint.names import demangle
from tmemlint.pipeline import SOURCE_SUFFIXES
from tmemlint.plan.layout import ASCENT, DESCENT, Anchor, Box, Layout, Placed, Spot, fit, text_width

import html
import re

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


def _text(dw, d, p: Placed, cls: str, fill: str = "#111", title: str | None = None, **attrs: str) -> None:
    """Draw a placed text with its class (``region-label``, ``mark``, ``annotation``, ``tick``, ``legend``,
    ``heading``: what the browser test reads back) and an optional tooltip."""
    kw: dict = {"fill": fill, "class_": cls, **attrs}
    if p.bold:
        kw["font_weight"] = "bold"
    if p.spot.anchor is not Anchor.start:
        kw["text_anchor"] = p.spot.anchor.value
    if p.spot.rotated:
        kw["transform"] = f"rotate(90 {p.spot.x:g} {p.spot.y:g})"
    t = dw.Text(p.text, p.size, round(p.spot.x, 2), round(p.spot.y, 2), **kw)
    if title:
        t.append_title(title)
    d.append(t)


def _label_spots(name: str, x0: float, x1: float, y0: float, y1: float, inside_first: bool) -> list[tuple[float,
                                                                                                         Spot]]:
    """Candidate spots (with their font size) of a region's name for its box ``x0..x1`` x ``y0..y1``: across the
    box when it fits, else down it (top, middle, bottom); ``inside_first`` false (the lifetime chart, where marks
    fill the band): just under or over the band first, across or down, then inside."""
    w, xc = x1 - x0, (x0 + x1) / 2
    inside: list[tuple[float, Spot]] = []
    outside: list[tuple[float, Spot]] = []
    for size in (10.0, 8.0, 7.0):
        tw = text_width(name, size, True)
        if w >= tw + 4:
            inside.append((size, Spot(xc, min(y0 + 2 + ASCENT * size, (y0 + y1) / 2 + 4), Anchor.middle)))
        outside += [(size, Spot(xc, y1 + 2 + ASCENT * size, Anchor.middle)),
                    (size, Spot(xc, y0 - 2 - DESCENT * size, Anchor.middle))]
    for size in (8.0, 7.0, 6.0):
        tw = text_width(name, size, True)
        xr = xc + (ASCENT - DESCENT) * size / 2  # the rotated glyphs centred on the band
        if w + 2 >= size * (ASCENT + DESCENT):  # down the band, a pixel over each edge at most
            for f in (0.0, 0.5, 1.0, 0.25, 0.75):
                inside.append((size, Spot(xr, y0 + 3 + f * max(0.0, y1 - y0 - tw - 6), rotated=True)))
        for k in range(3):
            outside.append((size, Spot(xr, y1 + 3 + k * (tw / 2 + 2), rotated=True)))
            outside.append((size, Spot(xr, y0 - 3 - tw - k * (tw / 2 + 2), rotated=True)))
    return inside + outside if inside_first else outside[:2] + inside + outside[2:]


_STAGE = re.compile(r"^(?P<tensor>.+)\[stage (?P<stage>\d+)\]$")


def region_caption(region: dict) -> str:
    """What the picture writes on a region: its logical tensor and stage (``SFA[2]`` for the plan's label
    ``SFA[stage 2]``), the label of an unstaged tensor, else the region's name (plans older than schema 2.1)."""
    label = str(region.get("label") or region["name"])
    m = _STAGE.match(label)
    return f"{m['tensor']}[{m['stage']}]" if m else label


def _place_label(lay: Layout, name: str, spots: list[tuple[float, Spot]]) -> Placed:
    """The first free candidate of ``spots`` (sizes may differ), else the spill column."""
    for size, spot in spots:
        got = lay.place_optional(name, size, [spot], bold=True)
        if got is not None:
            return got
    return lay.place(name, 8.0, [], bold=True)


_EVENT_MARKS = {"commit": "▲", "wait": "■", "release": "◆"}


def _sources(k: dict) -> dict[int, str]:
    """PTX line -> ``file:line`` of every access and reuse edge of ``k`` that has ``-lineinfo`` (``.loc``)."""
    refs = [ref for r in k["regions"] for ref in r["writers"] + r["readers"]]
    refs += [e[side] for e in k["reuse_edges"] for side in ("reader", "writer")]
    out: dict[int, str] = {}
    for ref in refs:
        if ref.get("source"):
            out.setdefault(ref["line"], ref["source"])
    return out


def render_kernel_svg(k: dict, width: int = 1000, height: int = 820, source_mode: bool = False) -> str:
    """One kernel as an SVG document (text).  Raises ``MissingDependency`` without drawsvg.

    Top: the region map as NVIDIA draws TMEM, lanes down (0-127) and columns across (the allocation, 32 at
    least); each region a box of its lanes x columns, outlined in red when the checker has a finding on it, dashed
    when it overlaps another.  Below, on the same column axis: the lifetime chart, program order down; a band is a
    region's columns x its live range; ticks on its left edge mark writes (filled) and reads (hollow); ▲ commit,
    ■ wait, ◆ release; an arrow from a reader line to a writer line is a reuse edge, red only when it is at risk.
    The time axis is labelled with source lines where the PTX has ``-lineinfo`` (``.loc``, PTX ISA §11.5.3; the
    PTX line in each tick's tooltip), else PTX lines (``source_mode``: the plan of a CUDA source, whose lines are
    source lines).  Every text is placed by ``layout.Layout``: no two texts overlap; an event glyph that would
    overprint another is left out and listed in its band's tooltip; a label with no free spot goes to the right
    margin with a leader line."""
    dw = _drawsvg()
    sources = _sources(k)
    files = sorted({s.rsplit(":", 1)[0] for s in sources.values()})
    one_file = len(files) == 1
    left, right, top = (70 if one_file or not sources else 130), 210, 76
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

    lay = Layout(Box(0, 0, width, height), left + plot_w + 6, width - 4, chart_top)
    d = dw.Drawing(width, height, font_family="sans-serif")
    background = dw.Rectangle(0, 0, width, height, fill="white")
    d.append(background)
    title = f"TMEM plan: {demangle(k['kernel'])}"
    _text(dw, d, lay.fix(fit(title, 14, width - left - 4, True), 14, Spot(left, 20), True), "heading",
          title=title)
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
    _text(dw, d, lay.fix(fit(sub, 11, width - left - 4), 11, Spot(left, 37)), "heading", fill="#444", title=sub)
    if k.get("ordering_verdict"):
        v = k["ordering_verdict"]
        _text(dw, d, lay.fix(fit(v, 10, width - left - 4), 10, Spot(left, 53)), "heading",
              fill="#d62728" if k["riskiest_edge"] is not None else "#333", title=v)
    step = 32 if ncols <= 256 else 64
    # ---- legend (right margin, top)
    lx = left + plot_w + 12
    _text(dw, d, lay.fix("Legend", 10, Spot(lx, top), True), "legend")
    for i, (kind, colour) in enumerate(_COLOURS.items()):
        d.append(dw.Rectangle(lx, top + 8 + 14 * i, 10, 10, fill=colour, fill_opacity=0.6))
        _text(dw, d, lay.fix(kind, 9, Spot(lx + 14, top + 17 + 14 * i)), "legend")
    yy = top + 8 + 14 * len(_COLOURS) + 6
    for text in ("dashed: overlaps another region", "red outline: checker finding", "▲ commit  ■ wait  ◆ release",
                 "— write   ○ read", "blue arrow: reuse, ordered", "red arrow: reuse at risk"):
        _text(dw, d, lay.fix(text, 9, Spot(lx, yy + 9)), "legend")
        yy += 14
    lay.spill_top = max(lay.spill_top, yy + 6)
    # ---- region map: lanes x columns
    _text(dw, d, lay.fix("Region map (lanes x columns)", 11, Spot(left, top - 8), True), "heading", fill="#333")
    d.append(dw.Rectangle(left, top, plot_w, map_h, fill="#fafafa", stroke="#999"))
    for c in range(0, ncols + 1, step):
        d.append(dw.Line(x(c), top, x(c), top + map_h, stroke="#e4e4e4"))
    for lane in (0, 32, 64, 96, 128):
        d.append(dw.Line(left, ly(lane), left + plot_w, ly(lane), stroke="#e4e4e4"))
        _text(dw, d, lay.fix(str(lane), 9, Spot(left - 6, ly(lane) + 3, Anchor.end)), "tick", fill="#555")
    _text(dw, d, lay.fix("TMEM lane", 10, Spot(12, top + map_h / 2 - 24, rotated=True)), "tick", fill="#555")
    for r in k["regions"]:
        lo, hi = r["columns"]
        l0, l1 = r["lanes"]
        colour = _COLOURS.get(r["kind"], "#999")
        faulty = bool(r.get("findings"))
        box = dw.Rectangle(x(lo), ly(l0), max(1.5, x(hi) - x(lo)), max(2.0, ly(l1) - ly(l0)), fill=colour,
                           fill_opacity=0.45 if not r.get("overlaps") else 0.3,
                           stroke="#d62728" if faulty else colour, stroke_width=2 if faulty else 1,
                           stroke_dasharray="3,2" if r.get("overlaps") else None)
        box.append_title(f"{region_caption(r)} ({r['name']}, {len(r.get('fragments', [])) or 1} fragment(s)) {r['kind']} lanes [{l0}, {l1}) columns [{lo}, {hi})"
                         + (f", overlaps {', '.join(r['overlaps'])}" if r.get("overlaps") else "")
                         + (f"; {r['tcol']}" if r.get("tcol") else ""))
        d.append(box)
    # ---- lifetime chart: columns x program order
    if sources:
        axis = "source line" if one_file else "source file:line"
        heading = (f"Lifetime ({files[0]} lines down, from -lineinfo; PTX lines in the tooltips)" if one_file
                   else "Lifetime (source lines down, from -lineinfo; PTX lines in the tooltips)")
    else:
        axis = "source line" if source_mode else "PTX line"
        heading = f"Lifetime ({axis}s down)"
    _text(dw, d, lay.fix(heading, 11, Spot(left, chart_top - 22), True), "heading", fill="#333")
    d.append(dw.Rectangle(left, chart_top, plot_w, chart_h, fill="#fafafa", stroke="#999"))
    for c in range(0, ncols + 1, step):
        d.append(dw.Line(x(c), chart_top, x(c), chart_top + chart_h, stroke="#e4e4e4"))
        _text(dw, d, lay.fix(str(c), 9, Spot(x(c), chart_top - 6, Anchor.middle)), "tick", fill="#555")
    _text(dw, d, lay.fix("TMEM column", 10, Spot(left + plot_w / 2, height - 10, Anchor.middle)), "tick",
          fill="#555")
    _text(dw, d, lay.fix(axis, 10, Spot(12, chart_top + chart_h / 2 - text_width(axis, 10) / 2, rotated=True)),
          "tick", fill="#555")
    if sources:
        previous = None
        for ln in sorted(sources):
            src = sources[ln]
            label = src.rsplit(":", 1)[1] if one_file else fit(src, 9, left - 10)
            if src == previous:  # the next PTX line of the same source line: one tick for the run
                continue
            got = lay.place_optional(label, 9, [Spot(left - 6, y(ln) + 3, Anchor.end)])
            if got is not None:
                previous = src
                d.append(dw.Line(left - 4, y(ln), left, y(ln), stroke="#555"))
                _text(dw, d, got, "tick", fill="#555", title=f"{src}: PTX line {ln}")
    else:
        for t in range(9):
            ln = round(first + span * t / 8)
            got = lay.place_optional(str(ln), 9, [Spot(left - 6, y(ln) + 3, Anchor.end)])
            if got is not None:
                _text(dw, d, got, "tick", fill="#555")
    for a in k["allocations"]:
        d.append(dw.Line(left, y(a["line"]), left + plot_w, y(a["line"]), stroke="#333", stroke_dasharray="4,3"))
    for a in k["deallocations"]:
        d.append(dw.Line(left, y(a["line"]), left + plot_w, y(a["line"]), stroke="#333", stroke_dasharray="1,3"))
    live = {t["region"]: t["live"] for t in k["timeline"]}
    events = {t["region"]: {ev["stage"]: ev["lines"] for ev in t["events"]} for t in k["timeline"]}
    centre = {}
    hidden: dict[str, list[str]] = {}
    bands = {}
    for r in k["regions"]:
        lo, hi = r["columns"]
        rng = live.get(r["name"]) or [first, last]
        colour = _COLOURS.get(r["kind"], "#999")
        x0, x1 = x(lo), x(hi)
        band = dw.Rectangle(x0, y(rng[0]), max(1.5, x1 - x0), max(2.0, y(rng[1]) - y(rng[0])), fill=colour,
                            fill_opacity=0.35, stroke=colour)
        bands[r["name"]] = band
        d.append(band)
        centre[r["name"]] = (x0, x1)
        for w in r["writers"]:
            d.append(dw.Line(x0, y(w["line"]), x0 + min(6, x1 - x0), y(w["line"]), stroke=colour, stroke_width=2))
        for rd in r["readers"]:
            d.append(dw.Circle(x1 - min(4, (x1 - x0) / 2), y(rd["line"]), 2.2, fill="white", stroke=colour))
    for r in k["regions"]:  # event glyphs: one per line and region, none overprinting another
        x0, x1 = centre[r["name"]]
        size = max(3.0, min(7.0, x1 - x0 - 1))
        at: dict[int, list[str]] = {}
        for stage in _EVENT_MARKS:
            for ln in events.get(r["name"], {}).get(stage, [])[:12]:
                at.setdefault(ln, []).append(stage)
        for ln, stages in sorted(at.items()):
            what = f"{r['name']}: {' + '.join(stages)} at line {ln}" + (f" ({sources[ln]})" if ln in sources else "")
            got = lay.place_optional(_EVENT_MARKS[stages[0]], size,
                                     [Spot((x0 + x1) / 2, y(ln) + 0.35 * size, Anchor.middle)], glyph=True)
            if got is None:
                hidden.setdefault(r["name"], []).append(what)
            else:
                _text(dw, d, got, "mark", fill="#333", title=what)
    for r in k["regions"]:
        lo, hi = r["columns"]
        rng = live.get(r["name"]) or [first, last]
        extra = hidden.get(r["name"], [])
        bands[r["name"]].append_title(
            f"{region_caption(r)} ({r['name']}) {r['kind']} columns [{lo}, {hi}) lanes [{r['lanes'][0]}, {r['lanes'][1]}) live lines "
            f"{rng[0]}-{rng[1]}" + (f"; also {'; '.join(extra)}" if extra else ""))
    # ---- region labels: the map's, then the chart's
    for panel in ("map", "lifetime"):
        for r in k["regions"]:
            x0, x1 = x(r["columns"][0]), x(r["columns"][1])
            if panel == "map":
                y0, y1 = ly(r["lanes"][0]), ly(r["lanes"][1])
            else:
                rng = live.get(r["name"]) or [first, last]
                y0, y1 = y(rng[0]), y(rng[1])
            shown = region_caption(r)
            got = _place_label(lay, shown, _label_spots(shown, x0, x1, y0, y1, panel == "map"))
            if got.spilled:
                d.append(dw.Line(got.box.left - 1, (got.box.top + got.box.bottom) / 2, x1, (y0 + y1) / 2,
                                 stroke="#999", stroke_width=0.6))
            _text(dw, d, got, "region-label", data_region=r["name"], data_panel=panel)
    # ---- allocation notes, reuse edges, the riskiest one
    for a in k["allocations"] + k["deallocations"]:  # the notes placed from here on keep off these lines
        lay.block(Box(left, y(a["line"]) - 1, left + plot_w, y(a["line"]) + 1))
    for a in k["allocations"]:
        note = f"alloc {a['columns']} (line {a['line']})"
        ya = y(a["line"])
        _text(dw, d, lay.place(note, 9, [Spot(left + plot_w + 4, ya + 3 + dy) for dy in (0, 10, -10, 20, -20)]),
              "annotation")
    for a in k["deallocations"]:
        note = f"dealloc (line {a['line']})"
        ya = y(a["line"])
        _text(dw, d, lay.place(note, 9, [Spot(left + plot_w + 4, ya + 12 + dy) for dy in (0, -10, 10, -20, 20)]),
              "annotation")
    marker = dw.Marker(-0.1, -0.5, 0.9, 0.5, scale=5, orient="auto")
    marker.append(dw.Lines(-0.1, -0.5, -0.1, 0.5, 0.9, 0, fill="#333", close=True))
    d.append(marker)
    for n, e in enumerate(k["reuse_edges"]):
        x0, x1 = centre.get(e["region"], (left, left + plot_w))
        risky = n == k["riskiest_edge"]
        xc = x1 + 10 + (n % 4) * 5
        colour = "#d62728" if e.get("at_risk") else "#4c78a8"  # red only for an edge at risk
        path = dw.Path(stroke=colour, fill="none", stroke_width=2.5 if risky else 1.2, marker_end=marker)
        ym = (y(e["reader"]["line"]) + y(e["writer"]["line"])) / 2
        path.M(x1, y(e["reader"]["line"])).Q(xc + 20, ym, x1, y(e["writer"]["line"]))
        path.append_title(f"{e['region']}: line {e['reader']['line']} -> {e['writer']['line']}: {e['guard']}")
        d.append(path)
        if risky:
            note = f"riskiest: {e['guard']}"
            spots = [Spot(xc + 22, ym + dy) for dy in (0, 12, -12, 24, -24, 36, -36, 48, -48)]
            got = lay.place_optional(note, 10, spots, bold=True)
            if got is not None and got.spot != spots[0]:  # moved off a label or a line: a leader to its edge
                d.append(dw.Line(got.box.left - 1, (got.box.top + got.box.bottom) / 2, xc + 10, ym,
                                 stroke=colour, stroke_width=0.6))
            if got is None:
                got = lay.place(fit(note, 10, lay.spill_right - lay.spill_left, True), 10, [], bold=True)
                d.append(dw.Line(got.box.left - 1, (got.box.top + got.box.bottom) / 2, xc + 10, ym,
                                 stroke=colour, stroke_width=0.6))
            _text(dw, d, got, "annotation", fill=colour, title=note)
    full = max(height, int(lay.bottom + 8))
    if full != height:
        d.height = full
        d.view_box = (0, 0, width, full)
        background.args["height"] = full
    return d.as_svg()


def _source_mode(plan: dict) -> bool:
    """The plan is of a CUDA source (its lines are source lines, unless nvcc's PTX with ``.loc`` was planned)."""
    return str(plan.get("file", "")).endswith(SOURCE_SUFFIXES)


def render_svg(plan: dict) -> str:
    """The first kernel of the plan as SVG text (a file with several TMEM kernels: use ``render_html`` or
    ``--kernel``).  Raises ``MissingDependency`` without drawsvg; ``ValueError`` when the plan has no kernel."""
    if not plan["kernels"]:
        raise ValueError("no kernel uses Tensor Memory: nothing to draw")
    return render_kernel_svg(plan["kernels"][0], source_mode=_source_mode(plan))


def render_html(plan: dict, text: str) -> str:
    """A standalone HTML page: per kernel its picture (inline SVG) and the text plan ``text``."""
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>TMEM plan of {html.escape(plan['file'])}</title>",
             "<style>body{font-family:sans-serif;margin:1.5em} pre{background:#f6f6f6;padding:1em;"
             "overflow-x:auto} h2{overflow-wrap:anywhere}</style></head><body>",
             f"<h1>TMEM plan of {html.escape(plan['file'])}</h1>"]
    for k in plan["kernels"]:
        name = demangle(k["kernel"])  # a template kernel's name runs to pages: cut, whole in the tooltip
        short = name if len(name) <= 120 else name[:119] + "…"
        parts.append(f"<h2 title='{html.escape(name, quote=True)}'>{html.escape(short)}</h2>")
        parts.append(render_kernel_svg(k, source_mode=_source_mode(plan)))
    parts.append(f"<pre>{html.escape(text)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
