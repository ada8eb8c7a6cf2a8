"""Text rendering of a plan (the JSON model of ``tmemlint.plan.model``; nothing here looks at the PTX)."""

from __future__ import annotations

from tmemlint.names import demangle

_STAGE_LABEL = {"alloc": "alloc", "write": "write", "commit": "commit", "wait": "wait", "read": "read",
                "wait::ld": "wait::ld", "release": "release", "reuse": "reuse", "dealloc": "dealloc"}
_GUARD_TEXT = {
    "none": "none",
    "thread-barrier": "thread barrier only",
    "mbarrier": "mbarrier",
    "mbarrier+tcgen05": "mbarrier + tcgen05 waits and fences",
    "barrier+tcgen05": "barrier + tcgen05 waits and fences",
    "same-thread-wait": "same-thread order with the wait",
    "conditional-wait": "same-thread order with a wait on some paths",
    "pipelined": "same-thread pipelined pair",
}


def _span(lo_hi: list[int]) -> str:
    return f"[{lo_hi[0]}, {lo_hi[1]})"


def _at(ref: dict) -> str:
    """``line N`` of a reference, with its source position when the PTX has line info."""
    return f"line {ref['line']}" + (f" ({ref['source']})" if ref.get("source") else "")


def _findings(fs: list[dict]) -> str:
    return "; ".join(f"{f['code']} line {f['line']}" for f in fs)


def _lines(xs: list[int], limit: int = 8) -> str:
    if not xs:
        return "-"
    shown = ", ".join(str(x) for x in xs[:limit])
    return shown + (f", … (+{len(xs) - limit})" if len(xs) > limit else "")


def _refs(refs: list[dict], limit: int = 6) -> str:
    if not refs:
        return "-"
    by_op: dict[str, list[int]] = {}
    for r in refs:
        key = r["op"] if r["role"] in ("d", "ld", "st", "cp", "shift") else f"{r['op']}({r['role']})"
        by_op.setdefault(key, []).append(r["line"])
    return "; ".join(f"{op} {_lines(sorted(set(ls)), limit)}" for op, ls in by_op.items())


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = ["  " + "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    for r in rows:
        out.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return out


def render_kernel(k: dict) -> str:
    """One kernel's plan as text: header, region map, budget, peak, reuse edges, readback, timeline."""
    out: list[str] = []
    ctas = k["ctas_per_sm"]
    cg = k["cta_group"]
    out.append(f"kernel {k.get('demangled') or demangle(k['kernel'])}  (line {k['line']}, target {k['target'] or '?'}, "
               f"cta_group {cg if cg is not None else '-'}, "
               f"{k['threads_per_cta'] or '?'} threads per CTA)")
    out.append(f"CTAs per SM assumed: {ctas['value']} (from {ctas['source']})")
    for a in k["allocations"]:
        out.append(f"allocation {a['allocation']}: tcgen05.alloc line {a['line']}, "
                   f"{a['columns'] if a['columns'] is not None else '?'} columns, slot {a['slot']}, {a['warps']}")
    for d in k["deallocations"]:
        out.append(f"  freed by tcgen05.dealloc line {d['line']} "
                   f"({d['columns'] if d['columns'] is not None else '?'} columns)")
    out.append("")
    out.append("Region map")
    rows = []
    for r in k["regions"]:
        st = r.get("stage")
        rows.append([r["name"], r.get("label", r["name"]), r["kind"], _span(r["lanes"]), _span(r["columns"]),
                     str(r["width"]),
                     f"{st['index']}/{st['of']}" if st else "-", r["packing"],
                     _refs(r["writers"]), _refs(r["readers"])])
    out.extend(_table(["region", "tensor", "kind", "lanes", "columns", "width", "stage", "packing", "writers (line)",
                       "readers (line)"], rows))
    for r in k["regions"]:
        out.append(f"  {r['name']}: {r['tlane']}; {r['tcol']}")
        frags = r.get("fragments") or []
        if len(frags) > 1:
            out.append(f"  {r['name']}: {len(frags)} fragments (one per instruction footprint): "
                       + "; ".join(f"{_span(f['columns'])} {_refs(f['writers'], 3)} / {_refs(f['readers'], 3)}"
                                   for f in frags))
        if r.get("fragment"):
            out.append(f"  {r['name']}: {r['fragment']}")
        if r.get("overlaps"):
            why = f" ({_findings(r['findings'])})" if r.get("findings") else ""
            out.append(f"  {r['name']} OVERLAPS {', '.join(r['overlaps'])}{why}")
        elif r.get("findings"):
            out.append(f"  {r['name']}: {_findings(r['findings'])}")
    for u in k["unplaced"]:
        out.append(f"  not placed: {u['op']} ({u['role']}) line {u['line']}: {u['reason']}")
    out.append("")
    b = k["budget"]
    out.append("Column budget")
    out.append(f"  raw columns (regions, aliases once): {b['raw_columns']}"
               + ("" if b["complete"] else "  (incomplete: some accesses are not placed exactly)"))
    for a in b["allocations"]:
        out.append(f"  allocation {a['allocation']}: {a['allocated_columns']} allocated, {a['raw_columns']} used, "
                   f"{a['waste_columns']} unused")
    if b["allocated_columns"] is not None:
        out.append(f"  allocated: {b['allocated_columns']} columns per CTA; per SM: {b['allocated_columns']} x "
                   f"{b['ctas_per_sm']} CTA = {b['per_sm_columns']} of {b['sm_limit']} "
                   f"({'fits' if b['fits'] else 'OVER: CTAs serialize in tcgen05.alloc'})")
        out.append(f"  alignment waste: {b['waste_columns']} columns = {b['waste_percent']:g}% of the allocation")
    else:
        out.append("  allocated: unknown (column count not constant)")
    p = k["peak"]
    out.append(f"Peak live columns: {p['columns']} at line {p['line']} ({', '.join(p['regions']) or '-'})")
    out.append("")
    out.append("Reuse edges (last reader -> next writer on the same columns)")
    edges = k["reuse_edges"]
    if not edges:
        out.append("  none: no column is written again after it is read")
    for n, e in enumerate(edges):
        mark = "!" if n == k["riskiest_edge"] else " "
        it = ", next iteration" if e["next_iteration"] else ""
        rel = e.get("relation", "same thread" if e["same_thread"] else "other warps")
        who = rel if rel == "same thread" else f"{e['reader']['warps']} -> {e['writer']['warps']}" + (
            "" if rel == "other warps" else f", {rel}")
        fs = f"; check: {_findings(e['findings'])}" if e.get("findings") else ""
        out.append(f" {mark}{e['region']} {_span(e['columns'])}: {e['reader']['op']} {_at(e['reader'])} -> "
                   f"{e['writer']['op']} {_at(e['writer'])} ({who}{it}): {_GUARD_TEXT[e['guard']]}{fs}")
    if "ordering_verdict" in k:
        out.append(f"  {k['ordering_verdict']}")
    if k["riskiest_edge"] is not None:
        e = edges[k["riskiest_edge"]]
        miss = "; ".join(e["missing"]) or "nothing"
        out.append(f"  riskiest: {e['region']} read at line {e['reader']['line']}, rewritten at line "
                   f"{e['writer']['line']} ({_GUARD_TEXT[e['guard']]}); missing: {miss}")
    if k.get("falsify"):
        out.append(f"  to falsify: {k['falsify']}")
    out.append("")
    rb = k["readback"]
    out.append("Readback cost")
    if rb["ld_count"] == 0:
        out.append("  no tcgen05.ld")
    else:
        for s in rb["by_shape"]:
            runs = s.get("executions", s["count"])
            loops = f", {runs} executions per pass (counted readback loops)" if runs != s["count"] else ""
            out.append(f"  tcgen05.ld .{s['shape']}: {s['count']} x ({s['registers_per_thread']} registers per "
                       f"thread, {s['bytes_per_warp']} bytes per warp){loops}, lines {_lines(s['lines'])}")
            if s.get("fragment"):
                out.append(f"    {s['fragment']}")
        cta = f", {rb['bytes_per_cta']} bytes per CTA" if rb["bytes_per_cta"] is not None else ""
        out.append(f"  one pass over every tcgen05.ld: {rb['bytes_per_warp']} bytes per warp{cta}")
        out.append(f"  registers per thread held between a tcgen05.ld and its wait: up to "
                   f"{rb['max_registers_held']} (line {rb['max_registers_held_line']})")
        out.append(f"  tcgen05.wait::ld: {rb['wait_count']} for {rb['ld_count']} tcgen05.ld "
                   f"({rb['waits_per_ld']:g} per ld)"
                   + (f"; no wait before exit after lines {_lines(rb['lds_without_wait'])}"
                      if rb["lds_without_wait"] else ""))
    out.append("")
    out.append("Lifecycle timeline (lines)")
    for t in k["timeline"]:
        steps = [f"{_STAGE_LABEL[ev['stage']]} {_lines(ev['lines'], 4)}" for ev in t["events"] if ev["lines"]]
        live = f" live {t['live'][0]}-{t['live'][1]}" if t["live"] else ""
        out.append(f"  {t['region']}{live}: " + " -> ".join(steps))
    if k.get("findings"):
        out.append("")
        out.append(f"Checker findings ({len(k['findings'])})")
        for f in k["findings"]:
            out.append(f"  line {f['line']}: {f['code']} [{f['severity']}] {f['message']}")
    if k.get("assumptions"):
        out.append("")
        out.append("Assumptions")
        for a in k["assumptions"]:
            out.append(f"  {'(from the code) ' if a['from_code'] else ''}{a['text']}")
    for note in k["notes"]:
        out.append(f"note: {note}")
    return "\n".join(out) + "\n"


def render_text(plan: dict) -> str:
    """The whole plan (every kernel of the file) as text."""
    parts = [f"TMEM plan of {plan['file']} ({plan['tool']}, schema {plan['schema_version']})\n"]
    if not plan["kernels"]:
        parts.append("no kernel uses Tensor Memory\n")
    for k in plan["kernels"]:
        parts.append("\n" + render_kernel(k))
    if plan.get("design_comparison"):
        parts.append(f"\nCompared with design {plan['design']['design']}\n")
        parts.extend(f"  {line}\n" for line in plan["design_comparison"])
    return "".join(parts)
