"""Hover on a ``tcgen05`` instruction of a PTX document: the TMEM regions it reads or writes (name, kind, lanes,
columns, packing; from the plan model, ``tmemlint.plan`` / ``docs/plan-schema.md``), the warp class that executes
it (``analysis.flow.executing_classes``) and, on an alloc or dealloc, the kernel's column budget.  Markdown; None
when the line holds no tcgen05 instruction or the text does not parse."""

from __future__ import annotations

import re

from tmemlint.names import demangle

_OPCODE = re.compile(r"tcgen05(?:\.[A-Za-z0-9_:]+)+")


def kernel_at(plan: dict, line: int) -> dict | None:
    """The kernel of ``plan`` whose body holds 1-based ``line``: the last one that starts at or before it."""
    best = None
    for k in plan.get("kernels", ()):
        if k["line"] <= line and (best is None or k["line"] > best["line"]):
            best = k
    return best


def _warp_text(warps: list[int]) -> str:
    if not warps:
        return "no warp"
    runs, start, prev = [], warps[0], warps[0]
    for w in warps[1:] + [None]:
        if w is not None and w == prev + 1:
            prev = w
            continue
        runs.append(f"{start}" if start == prev else f"{start}-{prev}")
        if w is not None:
            start = prev = w
    return ("warp " if len(warps) == 1 else "warps ") + ",".join(runs)


def warps_at(unit, line: int) -> str | None:
    """The warps that execute the tcgen05 instruction on 1-based ``line`` of a loaded ``pipeline.Unit`` (``warps
    4-7``), None when unknown."""
    from tmemlint.analysis.flow import executing_classes, warps_of
    from tmemlint.pipeline import analyse_function

    if unit.module is None:
        return None
    for fn in unit.module.functions:
        at = [i for i in fn.instructions if i.span.line == line and i.op == "tcgen05"]
        if not at:
            continue
        try:
            analysed = analyse_function(unit.module, fn, unit.path, unit.options)
            if analysed is None:
                return None
            ctx = analysed.context
            by, _ = executing_classes(ctx.cfg, ctx.values, ctx.threads)
        except Exception:  # noqa: BLE001 - a hover never fails the server
            return None
        return _warp_text(warps_of(by.get(at[0].index, ()), ctx.threads))
    return None


def _interval(iv) -> str:
    return "?" if not iv else f"[{iv[0]}, {iv[1]})"


def hover_markdown(text: str, path: str, line: int, options=None) -> str | None:
    """The hover text of 1-based ``line`` of the PTX ``text`` under ``options`` (an ``Options``; see the module
    docstring): the text is loaded once (``pipeline.load``) for the plan and the warps."""
    src = text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else ""
    m = _OPCODE.search(src.split("//")[0])
    if m is None:
        return None
    from tmemlint import pipeline
    from tmemlint.plan.model import PlanError, plan_unit

    unit = pipeline.load(text, options, name=path, whole=True)
    try:
        model = plan_unit(unit, ctas_per_sm=unit.options.ctas_per_sm)
    except (PlanError, RecursionError):
        return None
    k = kernel_at(model, line)
    if k is None:
        return None
    out = [f"**{m.group()}**"]
    warps = warps_at(unit, line)
    if warps is not None:
        out.append(f"executed by {warps}")
    rows = []
    for r in k.get("regions", ()):
        for role, acc in (("writes", r.get("writers", ())), ("reads", r.get("readers", ()))):
            for a in acc:
                if a.get("line") == line:
                    rows.append(f"| {role} | `{r['name']}` | {r['kind']} | {_interval(r.get('lanes'))} | "
                                f"{_interval(r.get('columns'))} | {r.get('packing') or ''} | {a.get('role', '')} |")
    if rows:
        out.append("| | region | kind | lanes | columns | packing | operand |\n|---|---|---|---|---|---|---|\n"
                   + "\n".join(dict.fromkeys(rows)))
    allocs = [a for a in k.get("allocations", ()) if a.get("line") == line]
    deallocs = [a for a in k.get("deallocations", ()) if a.get("line") == line]
    for a in allocs:
        out.append(f"allocation {a['allocation']}: {a.get('columns') or '?'} columns into `{a.get('slot')}` "
                   f"({a.get('warps')})")
    for a in deallocs:
        out.append(f"frees allocation {a['allocation']}: {a.get('columns') or '?'} columns")
    if allocs or deallocs:
        b = k.get("budget") or {}
        fits = "fits" if b.get("fits") else "does NOT fit (CTAs serialize in tcgen05.alloc)"
        out.append(f"column budget of `{demangle(k['kernel'])}`: regions cover {b.get('raw_columns')} of "
                   f"{b.get('allocated_columns')} allocated columns ({b.get('waste_percent')}% waste); "
                   f"{b.get('ctas_per_sm')} CTA(s) per SM use {b.get('per_sm_columns')} of {b.get('sm_limit')} "
                   f"columns: {fits}")
    return "\n\n".join(out)
