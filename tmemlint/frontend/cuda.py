"""Source mode: CUDA C++ (``.cu``, ``.cuh``, headers) → the PTX IR, without a compiler.

``parse_cuda(text, path, defines)`` preprocesses the text (``cpp_pre``), parses it with tree-sitter-cuda, collects
the definitions (``cuda_program``) and lowers every kernel, with the device functions it calls inlined, to a
synthetic IR ``Function`` (``cuda_lower``).  The result is a ``Module`` that the analyses and rules of
``tmemlint.checks`` read exactly as they read nvcc's PTX, plus the frontend's own diagnostics (TM900: an asm text
that is not PTX; TM901: code that could not be analysed and why).

Which functions: every ``__global__`` kernel.  A file without kernels (a header) is the API of its device
functions: each non-template function holding inline asm is lowered on its own.  In a file with kernels, device
functions that no kernel calls are not analysed, as nvcc (whole-program mode) drops them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tmemlint.findings import Finding, Related
from tmemlint.frontend.cpp_pre import Preprocessed, Region, preprocess
from tmemlint.frontend.cuda_lower import Diagnostic, Lowering
from tmemlint.frontend.cuda_program import FunctionDef, Program
from tmemlint.ir import Module, Span

#: Suffixes read in source mode by default, and header suffixes read when a file is named explicitly.
SOURCE_SUFFIXES = (".cu", ".cuh")
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl")


@dataclass(slots=True)
class CudaUnit:
    """The lowered file: ``module`` (one Function per analysed kernel or helper), ``diagnostics`` of the
    frontend, and the number of input lines."""

    module: Module
    diagnostics: list[Diagnostic] = field(default_factory=list)
    lines: int = 0


def _calls(f: FunctionDef, prog: Program) -> set[str]:
    """Names that ``f`` calls (plain and last component), from its body."""
    out: set[str] = set()
    if f.body is None:
        return out
    stack = [f.body]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None:
                if fn.type == "field_expression":
                    name = prog.text(fn.child_by_field_name("field"))
                elif fn.type == "template_function":
                    name = prog.text(fn.child_by_field_name("name"))
                else:
                    name = prog.text(fn)
                name = name.replace(" ", "")
                out.add(name)
                out.add(name.rsplit("::", 1)[-1])
        elif n.type in ("declaration", "field_declaration", "parameter_declaration"):
            t = n.child_by_field_name("type")  # constructors and destructors run where an object is declared
            if t is not None:
                if t.type == "qualified_identifier" and t.child_by_field_name("name") is not None:
                    t = t.child_by_field_name("name")
                if t.type == "template_type":
                    t = t.child_by_field_name("name")
                name = prog.text(t).replace(" ", "").rsplit("::", 1)[-1]
                out.update((name, "~" + name))
        stack.extend(n.named_children)
    return out


class _LazyCalls(dict):
    """``function → names it calls``, computed on first use (only the undecidable-#if check and the reach of a
    kernel need it)."""

    def __init__(self, prog: Program):
        super().__init__()
        self.prog = prog

    def __missing__(self, f: FunctionDef) -> set[str]:
        got = _calls(f, self.prog)
        self[f] = got
        return got

    def get(self, f, default=None):  # noqa: D401 - dict API
        return self[f]


def _has_asm(f: FunctionDef) -> bool:
    if f._has_asm is None:
        found = False
        if f.body is not None:
            stack = [f.body]
            while stack and not found:
                n = stack.pop()
                if n.type == "gnu_asm_expression":
                    found = True
                stack.extend(n.named_children)
        f._has_asm = found
    return f._has_asm


def _region_of(f: FunctionDef, pre: Preprocessed) -> Region | None:
    """An undecidable #if region inside ``f``'s body, if any."""
    if not pre.regions or f.body is None:
        return None
    a = pre.map.input_offset(f.body.start_byte)
    b = pre.map.input_offset(max(f.body.start_byte, f.body.end_byte - 1))
    for r in pre.regions:
        if r.start < b and r.end > a:
            return r
    return None


def parse_cuda(text: str, path: str, defines: dict[str, str] | None = None) -> CudaUnit:
    """Lower the CUDA source ``text`` (reported as ``path``) with ``-D`` ``defines``.  Never raises for bad input:
    what cannot be read becomes a TM900/TM901 diagnostic."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    unit = CudaUnit(Module(path, "9.0", ["sm_100a"], 64), [], text.count("\n") + (0 if text.endswith("\n") else 1))
    unit.module.line_count = unit.lines
    try:
        pre = preprocess(text, defines)
        prog = Program(pre, path)
    except (RecursionError, ValueError, IndexError, KeyError) as e:  # never expected; never a traceback either
        unit.diagnostics.append(Diagnostic("TM901", Span(1, 1, 1, 2), f"the file is not analysed: internal error "
                                                                      f"of source mode ({type(e).__name__}: {e})"))
        return unit
    defined = {f.name for f in prog.all_functions if f.body is not None} | {
        f.qualname for f in prog.all_functions if f.body is not None}
    calls = _LazyCalls(prog)
    by_name: dict[str, list[FunctionDef]] = {}
    for f in prog.all_functions:
        for key in (f.name, f.qualname):
            by_name.setdefault(key, []).append(f)

    def reach(f: FunctionDef) -> list[FunctionDef]:
        seen = {f}
        order = [f]
        i = 0
        while i < len(order):
            for name in calls.get(order[i], ()):
                for g in by_name.get(name, ()):
                    if g not in seen:
                        seen.add(g)
                        order.append(g)
            i += 1
        return order

    kernels = [f for f in prog.all_functions if f.is_kernel and f.body is not None]
    # Without kernels (a header), the device functions that hold asm are the file's API: analyse each alone.
    # In a file with kernels nvcc drops uncalled device functions (whole-program mode), and so does source mode.
    helpers = [] if kernels else [f for f in prog.all_functions if f.body is not None and f.owner is None
                                  and _has_asm(f) and not f.template_params]
    if not kernels:  # a header: say which asm is under an #if that cannot be decided
        for r in pre.regions:
            if re.search(r"\basm\b|\b__asm__\b", text[r.start:r.end]):
                unit.diagnostics.append(Diagnostic(
                    "TM901", Span(r.line, 1, r.line, 2),
                    f"asm statements under '{r.condition[:80]}' (lines {r.line}-{r.end_line}) are not analysed: the "
                    f"condition is not decidable from this file and the -D options"))
    asm_cache: dict = {}
    for f in kernels + helpers:
        blocked = _blocking_region(f, reach(f), calls, defined, pre) if pre.regions else None
        if blocked is not None:
            region, why = blocked
            unit.diagnostics.append(Diagnostic(
                "TM901", Span(region.line, 1, region.line, 2),
                f"function {f.name} is not analysed: {why} ('{region.condition[:80]}', lines {region.line}-"
                f"{region.end_line}) is not decidable from this file and the -D options; pass -DNAME[=VALUE] to "
                f"choose its branch"))
            continue
        lw = Lowering(prog, f, asm_cache)
        fn = lw.run()
        unit.diagnostics.extend(lw.diagnostics)
        if fn is None:
            continue
        unit.module.functions.append(fn)
        for name, var in fn.variables.items():
            if name not in unit.module.variables and "." not in name:
                unit.module.variables[name] = var
    return unit


def _blocking_region(f: FunctionDef, reached: list[FunctionDef], calls, defined: set[str],
                     pre: Preprocessed) -> tuple[Region, str] | None:
    if not pre.regions:
        return None
    for g in reached:
        r = _region_of(g, pre)
        if r is not None:
            return r, ("the #if inside it" if g is f else f"the #if inside {g.name}, which it calls")
    for g in reached:
        for name in calls.get(g, ()):
            if name in defined:
                continue
            for r in pre.regions:
                if name in r.names:
                    return r, f"{name}, which it calls, is defined under an #if that"
    return None


def diagnostic_findings(unit: CudaUnit, path: str, wants) -> list[Finding]:
    """The frontend diagnostics of ``unit`` as findings (``wants(code)`` filters them)."""
    from tmemlint.checks.registry import RULES

    out = []
    for d in unit.diagnostics:
        if not wants(d.code):
            continue
        r = RULES[d.code]
        sp = d.span
        out.append(Finding(path, sp.line, sp.column, sp.end_line, sp.end_column, d.code, r.name, r.severity,
                           d.message))
    return out


def with_inline_context(findings: list[Finding], module: Module) -> list[Finding]:
    """Source-mode findings, one per (line, column, code), each with the call sites of the inlined helper it
    points into as related locations ("inlined here")."""
    by_pos: dict[tuple[int, int], object] = {}
    for fn in module.functions:
        for inst in fn.instructions:
            key = (inst.span.line, inst.span.column)
            if key not in by_pos and inst.src is not None:
                by_pos[key] = inst.src
    seen: set = set()
    out = []
    for f in sorted(findings, key=Finding.sort_key):
        k = (f.path, f.line, f.column, f.code)
        if k in seen:
            continue
        seen.add(k)
        src = by_pos.get((f.line, f.column))
        if src is not None and src.inlined_at:
            have = {(r.line, r.column) for r in f.related}
            for site in src.inlined_at:
                if (site.line, site.column) not in have:
                    f.related.append(Related(f.path, site.line, site.column, "called from here (inlined)"))
        out.append(f)
    return out
