"""One pipeline for every way in (``check``, ``plan``, the language server, the Python API, the integrations):

    load(path | bytes | text, options) -> Unit          which front end reads it, and what it could not read
    analyse(unit)                      -> [Analysed]     the per-function contexts (``checks.context``)
    check(analysed, rules)             -> [Finding]      the rules on them
    run(unit)                          -> [Finding]      all three, then suppressions, severities, fingerprints

This module holds the only table of file suffixes (``language``), the only choice of a front end (PTX parser,
CUDA source mode, nvcc in compile mode: ``load``) and the only policy of TM900/TM901: a file that is not PTX gives
TM900, an analysis that hits a bound gives TM901, and an internal error of a rule is TM901 for that rule on that
function (with the exception's text) so that the other rules, functions and files are still checked, whoever
asked.  ``load`` and ``run`` never raise for bad input (compile mode raises ``CheckError`` when nvcc fails).
"""

from __future__ import annotations

import gc
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator

from tmemlint import profile
from tmemlint.checks.registry import RULES, Rule, load_all
from tmemlint.findings import CheckError, Finding, Severity
from tmemlint.ir import Function, Module
from tmemlint.libraries import library_predicate
from tmemlint.options import Options

if TYPE_CHECKING:
    from tmemlint.checks.context import FunctionContext

# ---- the suffix table ------------------------------------------------------------------------------------------

#: PTX text (nvcc ``-ptx``, Triton, CuTe DSL, hand-written).
PTX_SUFFIXES = (".ptx",)
#: CUDA sources, read in source mode; folders are searched for these and for PTX.
SOURCE_SUFFIXES = (".cu", ".cuh")
#: C++ headers: read in source mode when a file is named explicitly (folder searches skip them).
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl")
#: What a folder search (``discover``) and a glob keep.
SEARCHED_SUFFIXES = PTX_SUFFIXES + SOURCE_SUFFIXES


def language(path: str) -> str:
    """How the file ``path`` is read: ``"cuda"`` (a ``.cu``), ``"cuda-header"`` (``.cuh`` and C++ headers: their
    helpers are checked without the kernels that include them), or ``"ptx"`` (anything else)."""
    if path.endswith(SOURCE_SUFFIXES[:1]):
        return "cuda"
    if path.endswith(SOURCE_SUFFIXES[1:] + HEADER_SUFFIXES):
        return "cuda-header"
    return "ptx"


def is_source(path: str) -> bool:
    """Whether ``path`` is read in CUDA source mode (``language`` is not ``"ptx"``)."""
    return language(path) != "ptx"


# ---- limits ----------------------------------------------------------------------------------------------------

#: Files larger than this are not read (TM901); see also ``tmemlint.frontend.parser.MAX_LINES`` and
#: ``tmemlint.frontend.transformer.MAX_SCOPE_DEPTH``.
MAX_BYTES = 64 * 1024 * 1024
#: A function whose registers are redefined so often that the value analysis would take more than about a
#: second (sum over registers of definitions x reads by definitions, ``value_work``) is not analysed (TM901).
#: The largest function of the Triton, CuTe DSL and nvcc corpus scores 35,000.
MAX_VALUE_WORK = 4_000_000
#: PTX files with at least this many lines of code and several kernels are parsed and analysed in
#: ``Options.jobs`` processes (``_lint_parts``).  Starting the pool costs about 40 ms of CPU and a few MB; two
#: processes saved 15% of the wall time on two 2,900-line kernels, 32-42% on files of 12,000-18,000 lines with
#: 2-4 kernels (CUTLASS 93, ThunderKittens, FlashMLA; ``docs/performance.md``, fifth round).
SPLIT_MIN_LINES = 5_000
#: ``SPLIT_MIN_LINES`` for a file linted by a worker of a run over several files (``cli.lint_tasks``): the other
#: workers keep the cores busy, so a split adds processes that compete with them (five files of 12,000-18,500
#: lines in one ``--jobs 2`` run: 1.97 s of wall time and 3.59 s of CPU unsplit, 2.06 s and 3.84 s split).
SPLIT_MIN_LINES_SHARED = 20_000
_shared_cores = False  # set in the workers of a run over several files (``share_cores``)
#: Parse only what the analyses need (``tmemlint.frontend.split.layout``: no debug sections, stubs for functions
#: that neither hold nor reach a tcgen05 instruction).  False parses every function: the reference the tests
#: compare with (same findings).
PRUNE = True


def share_cores() -> None:
    """Initializer of the worker processes of a run over several files: a file is split only from
    ``SPLIT_MIN_LINES_SHARED`` lines of code there."""
    global _shared_cores
    _shared_cores = True


def finding(path: str, code: str, line: int, col: int, end_col: int, message: str) -> Finding:
    """A finding of the registry's rule ``code`` on one line (the driver's own: TM900, TM901)."""
    r = RULES[code]
    return Finding(path, line, col, line, end_col, code, r.name, r.severity, message)


# ---- load ------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Unit:
    """One loaded file.

    ``path``: how it is reported; ``text``: its decoded text (None when it was not read); ``language``: see
    ``language``; ``module``: the IR the rules run on (None when there is none: not PTX, past a limit, or nothing
    in it touches TMEM); ``diagnostics``: the findings of loading (TM900/TM901, the CUDA front end's diagnostics);
    ``rules_ran``: False when the rules could not run (unused suppressions are then not reported);
    ``suppressed``: False past a size limit (the findings are reported without reading the text's suppressions);
    ``broken``: the 1-based line ranges of PTX functions that did not parse; ``unjudged``: codes whose unused
    suppressions are not reported (a header's whole-kernel rules); ``unreadable``: the OS error text of a file
    that could not be read; ``refusal``: why a file that was read could not be checked (a ``CheckError``: nvcc's
    message in compile mode; ``findings_of`` raises it)."""

    path: str
    options: Options
    text: str | None = None
    language: str = "ptx"
    module: Module | None = None
    diagnostics: list[Finding] = field(default_factory=list)
    rules_ran: bool = True
    suppressed: bool = True
    broken: list[tuple[int, int]] = field(default_factory=list)
    unjudged: frozenset[str] = frozenset()
    unreadable: str | None = None
    refusal: CheckError | None = None
    #: the path the contexts report (compile mode: ``path (nvcc PTX)`` until ``_map`` moves them)
    analysed_as: str = ""
    #: source mode: the ``frontend.cuda.CudaUnit`` (findings are moved back through it)
    cuda: object | None = None
    #: compile mode: nvcc's PTX text (findings are mapped back through its line info)
    ptx: str | None = None
    #: a large PTX file that may be analysed in parallel parts (``split.Layout``), parsed only when it is not
    layout: object | None = None

    @property
    def lines(self) -> int:
        return self.text.count("\n") if self.text is not None else 0


def load(source: str | bytes | os.PathLike, options: Options | None = None, *, name: str | None = None,
         whole: bool = False, as_language: str | None = None) -> Unit:
    """Read ``source`` -- a path (``os.PathLike``), raw bytes, or text -- reported as ``name`` (default: the path,
    else ``kernel.ptx``) with the front end its name asks for (``language``; ``as_language`` overrides it).
    ``whole``: parse every function (the plan draws them all and names them); otherwise only those the analyses
    need (``PRUNE``; a CUDA source that nothing in it touches TMEM is not parsed).  Never raises for bad input (nvcc's refusal in compile mode is kept in ``refusal``)."""
    options = options or Options()
    how = (whole, as_language)
    if isinstance(source, os.PathLike):
        return _load_file(source, name or os.fspath(source), options, how)
    shown = name or "kernel.ptx"
    if isinstance(source, str):
        return _load_text(source, shown, options, how)
    return _load_bytes(bytes(source), shown, options, how)


def _load_file(path: os.PathLike, shown: str, options: Options, how) -> Unit:
    """At most ``MAX_BYTES`` are read (a larger file, or an endless device such as ``/dev/zero``, gives TM901)."""
    p = profile.ACTIVE
    if p is not None:
        p.push("read")
    try:
        size = os.stat(path).st_size
        if size > MAX_BYTES and os.path.isfile(path):
            return _too_large(shown, size, options)
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except IsADirectoryError:
        return Unit(shown, options, unreadable="is a directory", rules_ran=False)
    except OSError as e:
        return Unit(shown, options, unreadable=e.strerror or str(e), rules_ran=False)
    finally:
        if p is not None:
            p.pop()
    return _load_bytes(data, shown, options, how)


def _load_bytes(data: bytes, shown: str, options: Options, how) -> Unit:
    if len(data) > MAX_BYTES:
        return _too_large(shown, len(data), options)
    from tmemlint.frontend.parser import PTXSyntaxError, decode

    p = profile.ACTIVE
    if p is not None:
        p.push("read")
    try:
        text = decode(data)
    except PTXSyntaxError as e:
        return Unit(shown, options, rules_ran=False,
                    diagnostics=[finding(shown, "TM900", e.line, e.column, e.end_column, e.message)])
    finally:
        if p is not None:
            p.pop()
    return _load_text(text, shown, options, how)


def _too_large(shown: str, size: int, options: Options) -> Unit:
    """A file past the size limit: one TM901 at 1:1, without reading suppressions."""
    if size == MAX_BYTES + 1:  # a stream: read up to the limit
        msg = f"more than the limit of {MAX_BYTES:,} bytes: the file is not read"
    else:
        msg = f"{size:,} bytes, more than the limit of {MAX_BYTES:,}: the file is not read"
    return _over_limit(Unit(shown, options), msg)


def _over_limit(unit: Unit, message: str) -> Unit:
    unit.rules_ran = False
    unit.suppressed = False
    unit.module = None
    unit.diagnostics = [finding(unit.path, "TM901", 1, 1, 2, message)] if unit.options.wants("TM901") else []
    return unit


def _load_text(text: str, shown: str, options: Options, how) -> Unit:
    whole, as_language = how
    unit = Unit(shown, options, text=text, language=as_language or language(shown), analysed_as=shown)
    load_all()
    if unit.language == "ptx":
        return _load_ptx(unit, whole)
    if unit.language == "cuda-header":
        # a header checked on its own: its helpers are analysed without the kernels that include it, which do not
        # get the whole-kernel rules here; a suppression of one of those is for the including files (not TM902)
        from tmemlint.frontend.cuda import BLIND_CODES

        unit.unjudged = BLIND_CODES
    if options.compile:
        return _load_compiled(unit)
    if not whole and "tcgen05" not in text and "#include" not in text and not re.search(r"__device__[^;{}]*\)\s*;", text):
        return unit  # nothing here touches Tensor Memory (the frontend decides for includes and prototypes)
    from tmemlint.frontend.cuda import parse_cuda

    # the cyclic garbage collector paused (as for the PTX parse, ``parser._parse_without_gc``): lowering and the
    # analyses allocate hundreds of thousands of long-lived objects (syntax nodes' texts, IR, facts), and each
    # collection walks all of those built so far; the garbage made in between is freed by reference counting
    p = profile.ACTIVE
    if p is not None:
        p.push("cuda")
    try:
        with _no_gc():
            cu = parse_cuda(text, shown, options.defines, options.include_dirs)
    finally:
        if p is not None:
            p.pop()
    unit.cuda = cu
    unit.module = cu.module
    unit.diagnostics = diagnostics_as_findings(cu.diagnostics, shown, options)
    return unit


def diagnostics_as_findings(diagnostics, path: str, options: Options) -> list[Finding]:
    """A front end's diagnostics (``code``, ``span``, ``message``: what it could not read) as findings of the
    registry's rules, those ``options`` enables; the front end itself stays below the rules."""
    out = []
    for d in diagnostics:
        if not options.wants(d.code):
            continue
        r = RULES[d.code]
        sp = d.span
        out.append(Finding(path, sp.line, sp.column, sp.end_line, sp.end_column, d.code, r.name, r.severity,
                           d.message))
    return out


def _load_compiled(unit: Unit) -> Unit:
    """Compile mode: nvcc makes the PTX of the source (``tmemlint.compile``); the rules run on it and the findings
    move to the source lines (``findings_of``).  ``refusal``: the ``CompileError`` (a ``CheckError``) when nvcc
    cannot be run or rejects the file."""
    from tmemlint.compile import compile_to_ptx
    from tmemlint.frontend.parser import PTXSyntaxError, parse_text_isolating

    options = unit.options
    includes = tuple(f"-I{os.path.abspath(d)}" for d in options.include_dirs)
    p = profile.ACTIVE
    if p is not None:
        p.push("compile")
    try:
        ptx = compile_to_ptx(unit.text, unit.path, tuple(options.nvcc_args) + includes, options.defines)
    except CheckError as e:
        unit.refusal = e
        unit.rules_ran = False
        return unit
    finally:
        if p is not None:
            p.pop()
    unit.analysed_as = f"{unit.path} (nvcc PTX)"
    if p is not None:
        p.push("parse")
    try:  # a function of nvcc's PTX this grammar cannot read costs that function only, as for a PTX file
        module, broken = parse_text_isolating(ptx, unit.analysed_as)
    except PTXSyntaxError as e:
        unit.diagnostics = [finding(unit.path, "TM900", 1, 1, 2, f"the PTX nvcc made is not readable at its line "
                                                                 f"{e.line}: {e.message}")]
        return unit
    finally:
        if p is not None:
            p.pop()
    unit.module = module
    unit.diagnostics = [finding(unit.path, "TM900", 1, 1, 2, f"the PTX nvcc made is not readable at its line "
                                                             f"{e.line}: {e.message}; the function on its lines "
                                                             f"{lo}-{hi} is not analysed")
                        for e, (lo, hi) in broken]
    unit.ptx = ptx
    return unit


def _load_ptx(unit: Unit, whole: bool) -> Unit:
    """PTX: only what the analyses need is parsed (``tmemlint.frontend.split``: no debug sections, no functions
    that neither hold nor reach a tcgen05 instruction), and the line limit counts those lines; a function whose
    body does not parse is TM900 and the others are still read (``parser.parse_isolating``)."""
    from tmemlint.frontend import parser
    from tmemlint.frontend.split import layout

    text, path, options = unit.text, unit.path, unit.options
    p = profile.ACTIVE
    if p is not None:
        p.push("prepass")
    try:
        lay = layout(parser.normalize(text), prune=PRUNE and not whole)
        try:  # past the line limit: one TM901, without reading suppressions (the text may be millions of lines)
            if lay is not None:
                parser.check_code_lines(lay)
            elif text.count("\n") + (0 if text.endswith("\n") else 1) > parser.MAX_LINES:
                parser.parse_text(text, path)  # raises the limit's PTXLimitError
        except parser.PTXLimitError as e:
            return _over_limit(unit, e.message)
    finally:
        if p is not None:
            p.pop()
    if lay is not None and not whole:
        least = SPLIT_MIN_LINES_SHARED if _shared_cores else SPLIT_MIN_LINES
        if options.jobs > 1 and least <= lay.code_lines <= parser.MAX_LINES:
            unit.layout = lay  # ``run`` tries the parts first, and parses here when they cannot be used
            return unit
    return _parse_ptx(unit, lay)


@profile.timed("parse")
def _parse_ptx(unit: Unit, lay) -> Unit:
    from tmemlint.frontend import parser

    path, options = unit.path, unit.options
    broken: list = []
    try:
        if lay is None:
            module = parser.parse_text(unit.text, path)
        else:
            module, broken = parser.parse_isolating(lay, path)
    except parser.PTXSyntaxError as e:  # TM900, or TM901 for a PTXLimitError
        unit.rules_ran = False
        if e.code == "TM900" or options.wants(e.code):
            unit.diagnostics = [finding(path, e.code, e.line, e.column, e.end_column, e.message)]
        return unit
    if module.version is None:
        unit.rules_ran = False
        unit.diagnostics = [finding(path, "TM900", 1, 1, 2, "not a PTX module: no .version directive")]
        return unit
    unit.module = module
    unit.diagnostics = [finding(path, "TM900", e.line, e.column, e.end_column, e.message) for e, _ in broken]
    unit.broken = [span for _, span in broken]
    return unit


class _no_gc:
    def __enter__(self):
        self.enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.enabled:
            gc.enable()


# ---- analyse ---------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Analysed:
    """One function to check: its ``context`` (analyses computed on first use), and ``findings`` when it is not
    analysed (the TM901 that says why, or nothing when TM901 is off); None when the rules run on it."""

    context: FunctionContext | None
    findings: list[Finding] | None = None


#: Operands nested deeper than this (a vector in a vector in ...: PTX itself nests at most three deep, the
#: coordinate vector of an address ``[tmap, {x, y}]``) leave their function unanalysed (TM901).  The analyses walk
#: operands recursively: plain Python stops that at its recursion limit (about 1,000 frames, a RecursionError), the
#: mypyc-compiled core does not (its calls are C calls: 5,000 levels passed, 400,000 overflowed the C stack and
#: crashed the process), so both stop here, at the same depth, before the walk (docs/performance.md, session 9).
MAX_OPERAND_DEPTH = 200


def operands_too_deep(fn: Function, limit: int = MAX_OPERAND_DEPTH) -> bool:
    """Whether an operand of ``fn`` nests deeper than ``limit`` levels (a register: 1; ``{%r1, %r2}``: 2; an
    address's coordinate vector counts one level below the address).  Iterative: it is what no recursion may
    reach."""
    from tmemlint.ir import Address, Operand, ParenList, Vec

    for inst in fn.instructions:
        stack: list[tuple[Operand, int]] = [(o, 1) for o in inst.operands if isinstance(o, (Vec, ParenList, Address))]
        while stack:
            o, depth = stack.pop()
            if depth > limit:
                return True
            if isinstance(o, (Vec, ParenList)):
                stack.extend((x, depth + 1) for x in o.items)
            elif isinstance(o, Address) and o.coords is not None:
                stack.append((o.coords, depth + 1))
    return False


def value_work(fn: Function) -> int:
    """The cost of ``fn``'s value analysis: over every register, its definitions times the definitions that read
    it (the def-use worklist revisits every reader of a register each time one of its definitions changes)."""
    from collections import Counter

    from tmemlint.analysis.values import defined_regs, used_regs

    defs: Counter = Counter()
    reads: Counter = Counter()
    for inst in fn.instructions:
        d = defined_regs(inst)
        if d:
            for r in d:
                defs[r.name] += 1
            for r in used_regs(inst):
                reads[r.name] += 1
    return sum(n * reads[r] for r, n in defs.items())


def analyse_function(module: Module, fn: Function, path: str, options: Options) -> Analysed | None:
    """The context of one function of ``module`` (reported as ``path``), None when it has no body or nothing in
    it touches TMEM (a stub of ``split.layout`` included)."""
    if not fn.instructions:
        return None
    from tmemlint.checks.context import FunctionContext  # the analyses: imported when a function has a body

    p = profile.ACTIVE
    if p is not None:
        p.push("inline")
    try:
        ctx = FunctionContext(module, fn, path)
    finally:
        if p is not None:
            p.pop()
    ctx.options = options
    if p is not None:
        p.push("triage")
    try:
        if not ctx.touches_tmem:
            return None
        if operands_too_deep(fn):  # what the recursion limit stops in plain Python, stopped compiled too
            return Analysed(ctx, _too_deep(ctx))
        work = value_work(fn)
    except RecursionError:  # operands nested past Python's recursion limit (a vector in a vector in ...)
        return Analysed(ctx, _too_deep(ctx))
    finally:
        if p is not None:
            p.pop()
    if work > MAX_VALUE_WORK:
        if not options.wants("TM901"):
            return Analysed(ctx, [])
        sp = fn.span
        return Analysed(ctx, [finding(path, "TM901", sp.line, sp.column, sp.end_column,
                                      f"function {fn.name} is not analysed: its registers are redefined too often "
                                      f"(definitions x reads = {work:,}, more than the limit of {MAX_VALUE_WORK:,})")])
    if p is not None:
        p.count("functions")
        p.count("instructions", len(ctx.function.instructions))
    return Analysed(ctx)


def _too_deep(ctx: FunctionContext) -> list[Finding]:
    if not ctx.options.wants("TM901"):
        return []
    sp = ctx.function.span
    return [finding(ctx.path, "TM901", sp.line, sp.column, sp.end_column,
                    f"function {ctx.function.name} is not analysed: nested too deep (Python recursion limit)")]


def analyse(unit: Unit, owned: list[tuple[int, int]] | None = None) -> Iterator[Analysed]:
    """The functions of ``unit`` to check, one at a time (with ``owned``, a list of 1-based line ranges: only
    those whose header line lies in one of them)."""
    if unit.module is None:
        return
    for fn in unit.module.functions:
        if owned is not None and not any(lo <= fn.span.line <= hi for lo, hi in owned):
            continue
        a = analyse_function(unit.module, fn, unit.analysed_as or unit.path, unit.options)
        if a is not None:
            yield a


# ---- check -----------------------------------------------------------------------------------------------------


def enabled_rules(options: Options) -> list[Rule]:
    """The rules ``options`` enables that a context checks (not the driver's TM900-TM902)."""
    return [r for r in options.rules() if r.check is not None]


def check(analysed: Iterable[Analysed], rules: list[Rule] | None = None) -> list[Finding]:
    """The findings of ``rules`` (default: those each context's options enable) on the analysed functions, with
    the TM901s of what was not analysed; a rule's internal error is TM901 for that rule on that function."""
    out: list[Finding] = []
    callee_found: list[Finding] = []  # findings of .func bodies checked on their own
    for a in analysed:
        if a.findings is not None:
            out.extend(a.findings)
            continue
        ctx = a.context
        try:
            found = _check_function(ctx, enabled_rules(ctx.options) if rules is None else rules)
        except RecursionError:
            found = _too_deep(ctx)
        (out if ctx.function.is_entry else callee_found).extend(found)
    # a kernel checks its callees' bodies expanded at their calls (``analysis.inline``): a callee's own finding
    # at the same place is the same root cause, reported once, by the kernel (which knows the caller's values)
    seen = {(f.path, f.code, f.line, f.column) for f in out}
    out.extend(f for f in callee_found if (f.path, f.code, f.line, f.column) not in seen)
    return out


def _check_function(ctx: FunctionContext, rules: list[Rule]) -> list[Finding]:
    fn, path, options = ctx.function, ctx.path, ctx.options
    sp = fn.span
    p = profile.ACTIVE
    for r in rules:
        if p is not None:
            p.push("rule:" + r.code)
        try:
            r.check(ctx)
        except RecursionError:
            ctx.findings.append(finding(path, "TM901", sp.line, sp.column, sp.end_column,
                                        f"{r.code} skipped for function {fn.name}: too deeply nested"))
        except Exception as e:  # an internal error in one rule costs that rule on this function, not the run
            ctx.findings.append(finding(path, "TM901", sp.line, sp.column, sp.end_column,
                                        f"{r.code} skipped for function {fn.name}: internal error "
                                        f"({type(e).__name__}: {str(e)[:200]}); please report it"))
        finally:
            if p is not None:
                p.pop()
    if p is not None:
        _count_function(p, ctx)
    if options.wants("TM901"):
        for inst in ctx.cfg.unresolved:
            ctx.findings.append(finding(path, "TM901", inst.span.line, inst.span.column, inst.span.end_column,
                                        f"branch target of '{inst.opcode}' is not a known label or "
                                        f".branchtargets list: paths through it are not analysed"))
        lifecycle = ctx.lifecycle_if_analysed()
        msgs = list(ctx.bounded) + (list(lifecycle.bounded) if lifecycle is not None else [])
        if msgs:
            for msg in sorted(set(msgs)):
                ctx.findings.append(finding(path, "TM901", sp.line, sp.column, sp.end_column,
                                            f"function {fn.name}: {msg}; allocation findings may be missing"))
    return [f for f in ctx.findings if options.codes is None or f.code in options.codes]


def _count_function(p: profile.Profile, ctx: FunctionContext) -> None:
    """The counts of one checked function: its simulations, its solver's queries (when it had one)."""
    p.count("simulations", len(ctx.simulations))
    feas = ctx.__dict__.get("feasibility")  # where functools.cached_property keeps it, when it was asked for
    if feas is not None:
        p.count("solver_queries", feas.cost.queries)
        p.count("solver_hits", feas.cost.hits)


def check_module(module: Module, path: str, options: Options,
                 owned: list[tuple[int, int]] | None = None) -> list[Finding]:
    """``check(analyse(...))`` on a module already in IR (reported as ``path``)."""
    unit = Unit(path, options, module=module, analysed_as=path)
    return check(analyse(unit, owned), enabled_rules(options))


# ---- run -------------------------------------------------------------------------------------------------------


def findings_of(unit: Unit) -> list[Finding]:
    """The raw findings of ``unit``: the diagnostics of loading and the rules' findings, in the lines of its text
    (before suppressions).  Raises the unit's ``refusal`` (compile mode)."""
    if unit.refusal is not None:
        raise unit.refusal
    if unit.module is None:
        return list(unit.diagnostics)
    if unit.cuda is not None:
        from tmemlint.frontend.cuda import BLIND_CODES
        from tmemlint.lineinfo import with_inline_context  # source mode only: a PTX check does not import it

        with _no_gc():
            found = unit.diagnostics + check(analyse(unit), enabled_rules(unit.options))
        cu = unit.cuda
        return profile.timed("lineinfo")(with_inline_context)(found, cu.module, cu.pre, cu.blind, BLIND_CODES,
                                                              library_predicate(unit.options, unit.path))
    found = check(analyse(unit), enabled_rules(unit.options))
    if unit.ptx is not None:
        from tmemlint.compile import map_findings

        return unit.diagnostics + profile.timed("lineinfo")(map_findings)(found, unit.module, unit.path, unit.text, unit.ptx,
                                               library_predicate(unit.options, unit.path))
    return unit.diagnostics + found


def run(unit: Unit) -> list[Finding]:
    """The findings of ``unit`` as ``check`` reports them: ``findings_of``, then ``finish`` (suppressions, TM902,
    severities, fingerprints), sorted."""
    if unit.layout is not None:  # a large PTX file: in parallel parts when it can be cut
        found = _lint_parts(unit.layout, unit.path, unit.options)
        if found is not None:
            return finish(found, unit.text, unit.path, unit.options)
        _parse_ptx(unit, unit.layout)
        unit.layout = None
    if not unit.suppressed:
        return finish(unit.diagnostics, "", unit.path, unit.options, rules_ran=False) if unit.diagnostics else []
    out = finish(findings_of(unit), unit.text or "", unit.path, unit.options, rules_ran=unit.rules_ran,
                 unjudged=unit.unjudged)
    if unit.broken:  # unused suppressions inside a function that did not parse (its rules did not run)
        out = [f for f in out if f.code != "TM902" or not any(lo <= f.line <= hi for lo, hi in unit.broken)]
    return out


@profile.timed("suppress")
def finish(findings: Iterable[Finding], text: str, path: str, options: Options,
           rules_ran: bool = True, unjudged: frozenset[str] = frozenset()) -> list[Finding]:
    """What happens after the rules ran on one file's ``text``: suppression comments (and TM902 for unused ones
    when ``rules_ran``, except for the ``unjudged`` codes), severity overrides, fingerprints; returns the findings
    sorted by ``Finding.sort_key``."""
    from tmemlint.fingerprint import assign_fingerprints
    from tmemlint.suppress import apply_suppressions

    load_all()
    wants = options.wants if not unjudged else (lambda c: options.wants(c) and c not in unjudged)
    out = apply_suppressions(findings, text, path, wants, report_unused=rules_ran)
    for f in out:
        sev = options.severity.get(f.code)
        if sev is not None:
            f.severity = Severity(sev)
    if out:
        assign_fingerprints(out, text.split("\n"))
    return sorted(out, key=Finding.sort_key)


# ---- large PTX files in parallel parts -------------------------------------------------------------------------

#: The parts of the file being split (``_lint_parts``), read by forked workers (``_lint_part_at``).
_PARTS: list = []


def _lint_parts(lay, path: str, options: Options) -> list[Finding] | None:
    """The findings of the rules on the text of ``lay`` (a ``split.Layout``), with the module cut into
    ``options.jobs`` parts (``Layout.parts``) parsed and analysed in parallel: this process takes the first part,
    worker processes the others (forked: each renders its own part from the layout it inherits).  None when the
    text has fewer than two kernels to share out, a part does not parse, or a worker fails: the caller then
    parses the needed functions once, which gives the reference diagnostics."""
    cut = lay.parts(options.jobs)
    if cut is None:
        return None
    import multiprocessing
    import sys
    from concurrent.futures import ProcessPoolExecutor

    fork = sys.platform.startswith("linux")
    mp = multiprocessing.get_context("fork" if fork else "spawn")
    _PARTS[:] = cut
    try:
        with ProcessPoolExecutor(max_workers=len(cut) - 1, mp_context=mp) as pool:
            if fork and profile.ACTIVE is not None:  # each worker returns the profile of its part
                later = [pool.submit(_lint_part_profiled, k, path, options) for k in range(1, len(cut))]
            elif fork:
                later = [pool.submit(_lint_part_at, k, path, options) for k in range(1, len(cut))]
            else:
                later = [pool.submit(lint_part, p.text(), path, options, p.owned) for p in cut[1:]]
            results = [lint_part(cut[0].text(), path, options, cut[0].owned)] + [_merged(f.result()) for f in later]
    except Exception:  # noqa: BLE001 - a worker that died or could not start: the serial run decides
        return None
    finally:
        _PARTS.clear()
    if any(r is None for r in results):
        return None
    return [f for r in results for f in r]


def _lint_part_at(k: int, path: str, options: Options) -> list[Finding] | None:
    """Forked worker of ``_lint_parts``: part ``k`` of the file being split."""
    p = _PARTS[k]
    return lint_part(p.text(), path, options, p.owned)


def _lint_part_profiled(k: int, path: str, options: Options) -> tuple[list[Finding] | None, profile.Record]:
    """``_lint_part_at`` in a forked worker while profiling: the findings and the profile of the part."""
    p = profile.worker_profile()
    p.begin_file(path)
    try:
        found = _lint_part_at(k, path, options)
    finally:
        rec = p.end_file()
    return found, rec


def _merged(got):
    """A part worker's result: its findings, with its profile (``_lint_part_profiled``) added to the file's."""
    if isinstance(got, tuple):
        found, rec = got
        rec.counts.pop("files", None)
        if profile.ACTIVE is not None:
            profile.ACTIVE.merge(rec)
        return found
    return got


def lint_part(text: str, path: str, options: Options, owned: list[tuple[int, int]]) -> list[Finding] | None:
    """Worker of ``_lint_parts`` (and of the server's incremental lint): parse one part (already pruned, its
    lines counted by the caller) and run the rules on the functions it owns; None when the part does not parse
    as a module."""
    from tmemlint.frontend import parser

    try:
        module = profile.timed("parse")(parser.parse_module)(text, path)
    except parser.PTXSyntaxError:
        return None
    if module.version is None:
        return None
    return check_module(module, path, options, owned)


def lint_part_isolating(text: str, path: str, options: Options, owned: list[tuple[int, int]]
                        ) -> list[Finding] | None:
    """The findings of a part whose functions do not all parse (``parser.parse_isolating``): TM900 at each error in
    the owned lines, the rules on the owned functions that parse; None when the part cannot be read that way."""
    from tmemlint.frontend import parser
    from tmemlint.frontend.split import layout

    lay = layout(text, prune=PRUNE)
    if lay is None:
        return None
    try:
        module, broken = parser.parse_isolating(lay, path)
    except parser.PTXSyntaxError:
        return None
    if module.version is None:
        return None
    out = [finding(path, "TM900", e.line, e.column, e.end_column, e.message)
           for e, (lo, _) in broken if any(a <= lo <= b for a, b in owned)]
    return out + check_module(module, path, options, owned)


__all__ = ["Analysed", "HEADER_SUFFIXES", "PTX_SUFFIXES", "SEARCHED_SUFFIXES", "SOURCE_SUFFIXES", "Unit", "analyse",
           "analyse_function", "check", "check_module", "enabled_rules", "finding", "finish", "findings_of",
           "is_source", "language", "load", "run"]
