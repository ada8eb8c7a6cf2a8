"""The driver: files → IR → per-function analyses → rules → findings.

``lint_text`` never raises on bad input: a file that is not PTX gives a TM900 finding, an analysis that hits a
bound gives TM901, and an unexpected internal error in a rule is reported as TM901 for that function (with the
exception's text) so the other functions and files are still checked.
"""

from __future__ import annotations

import gc
import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tmemlint.checks.registry import RULES, Rule, load_all
from tmemlint.findings import CheckError, Finding, Severity
from tmemlint.ir import Module
from tmemlint.options import Options  # noqa: F401 - its home is tmemlint.options; re-exported here

PTX_SUFFIXES = (".ptx",)
SOURCE_SUFFIXES = (".cu", ".cuh")
#: C++ headers: read in source mode when a file is named explicitly (folder searches skip them).
HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx")
_GLOB_CHARS = ("*", "?", "[")

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


def share_cores() -> None:
    """Initializer of the worker processes of a run over several files: a file is split only from
    ``SPLIT_MIN_LINES_SHARED`` lines of code there."""
    global _shared_cores
    _shared_cores = True


#: Parse only what the analyses need (``tmemlint.frontend.split.layout``: no debug sections, stubs for functions
#: that neither hold nor reach a tcgen05 instruction).  False parses every function: the reference the tests
#: compare with (same findings).
PRUNE = True


@dataclass(slots=True)
class FileResult:
    """Findings of one file; ``unreadable`` holds the OS error text when the file could not be read, ``error``
    why a file that was read could not be checked (a CheckError: nvcc's message in compile mode)."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    unreadable: str | None = None
    error: str | None = None
    lines: int = 0
    text: str | None = None
    options: Options | None = None


def _finding(path: str, code: str, line: int, col: int, end_col: int, message: str) -> Finding:
    r = RULES[code]
    return Finding(path, line, col, line, end_col, code, r.name, r.severity, message)


def value_work(fn) -> int:
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


def _lint_function(module: Module, fn, path: str, options: Options, rules: list[Rule]) -> list[Finding]:
    """The findings of the enabled rules on one function (see ``lint_module``)."""
    if not fn.instructions:  # no body, or an empty one (a stub of split.layout): nothing touches TMEM
        return []
    from tmemlint.checks.context import FunctionContext  # the analyses: imported when a function has a body

    ctx = FunctionContext(module, fn, path)
    ctx.options = options
    if not ctx.touches_tmem:
        return []
    work = value_work(fn)
    if work > MAX_VALUE_WORK:
        if not options.wants("TM901"):
            return []
        return [_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                         f"function {fn.name} is not analysed: its registers are redefined too often "
                         f"(definitions x reads = {work:,}, more than the limit of {MAX_VALUE_WORK:,})")]
    for r in rules:
        try:
            r.check(ctx)
        except RecursionError:
            ctx.findings.append(_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                                         f"{r.code} skipped for function {fn.name}: too deeply nested"))
        except Exception as e:  # an internal error in one rule costs that rule on this function, not the run
            ctx.findings.append(_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                                         f"{r.code} skipped for function {fn.name}: internal error "
                                         f"({type(e).__name__}: {str(e)[:200]}); please report it"))
    if options.wants("TM901"):
        for inst in ctx.cfg.unresolved:
            ctx.findings.append(_finding(path, "TM901", inst.span.line, inst.span.column, inst.span.end_column,
                                         f"branch target of '{inst.opcode}' is not a known label or "
                                         f".branchtargets list: paths through it are not analysed"))
        msgs = list(ctx.bounded) + (list(ctx.lifecycle.bounded) if "lifecycle" in ctx.__dict__ else [])
        if msgs:
            for msg in sorted(set(msgs)):
                ctx.findings.append(_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                                             f"function {fn.name}: {msg}; allocation findings may be missing"))
    return [f for f in ctx.findings if options.codes is None or f.code in options.codes]


def lint_module(module: Module, path: str, options: Options,
                owned: list[tuple[int, int]] | None = None) -> list[Finding]:
    """Run the enabled rules on every function of ``module`` that has a body (with ``owned``, a list of 1-based
    line ranges: only on the functions whose header line lies in one of them)."""
    rules = [r for r in options.rules() if r.check is not None]
    out: list[Finding] = []
    for fn in module.functions:
        if owned is not None and not any(lo <= fn.span.line <= hi for lo, hi in owned):
            continue
        try:
            out.extend(_lint_function(module, fn, path, options, rules))
        except RecursionError:  # operands nested past Python's recursion limit (a vector in a vector in ...)
            if options.wants("TM901"):
                out.append(_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                                    f"function {fn.name} is not analysed: nested too deep (Python recursion limit)"))
    return out


def finish_findings(findings: Iterable[Finding], text: str, path: str, options: Options,
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


def lint_text(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint PTX ``text`` (reported as ``path``): the rules, then ``finish_findings``.  Only what the analyses need
    is parsed (``tmemlint.frontend.split``: no debug sections, no functions that neither hold nor reach a tcgen05
    instruction), and the line limit counts those lines.  Never raises for bad input."""
    options = options or Options()
    load_all()
    from tmemlint.frontend import parser
    from tmemlint.frontend.parser import PTXSyntaxError, parse_text
    from tmemlint.frontend.split import layout

    lay = layout(parser.normalize(text), prune=PRUNE)
    try:  # past the line limit: one TM901, without reading suppressions (the text may be millions of lines)
        if lay is not None:
            parser.check_code_lines(lay)
        elif text.count("\n") + (0 if text.endswith("\n") else 1) > parser.MAX_LINES:
            parse_text(text, path)  # raises the limit's PTXLimitError
    except parser.PTXLimitError as e:
        return _over_limit(path, e.message, options)
    broken: list = []  # functions whose body does not parse (parser.parse_isolating)
    try:
        if lay is None:
            module = parse_text(text, path)
        else:
            least = SPLIT_MIN_LINES_SHARED if _shared_cores else SPLIT_MIN_LINES
            if options.jobs > 1 and least <= lay.code_lines <= parser.MAX_LINES:
                found = _lint_parts(lay, path, options)
                if found is not None:
                    return finish_findings(found, text, path, options)
            module, broken = parser.parse_isolating(lay, path)
    except PTXSyntaxError as e:  # TM900, or TM901 for a PTXLimitError
        found = [_finding(path, e.code, e.line, e.column, e.end_column, e.message)]
        return finish_findings([f for f in found if f.code == "TM900" or options.wants(f.code)], text, path,
                               options, rules_ran=False)
    del lay
    if module.version is None:
        first = 1
        return finish_findings([_finding(path, "TM900", first, 1, 2, "not a PTX module: no .version directive")],
                               text, path, options, rules_ran=False)
    if broken:
        return _isolated(module, broken, text, path, options)
    return finish_findings(lint_module(module, path, options), text, path, options)


def _isolated(module: Module, broken: list, text: str, path: str, options: Options) -> list[Finding]:
    """Findings of a module whose functions in ``broken`` (``(PTXSyntaxError, (first, last))`` pairs from
    ``parser.parse_isolating``) did not parse: TM900 at each error, the rules on the other functions; unused
    suppressions inside a broken function are not reported (its rules did not run)."""
    found = [_finding(path, "TM900", e.line, e.column, e.end_column, e.message) for e, _ in broken]
    out = finish_findings(found + lint_module(module, path, options), text, path, options)
    return [f for f in out if f.code != "TM902" or not any(lo <= f.line <= hi for _, (lo, hi) in broken)]


#: The parts of the file being split (``_lint_parts``), read by forked workers (``_lint_part_at``).
_PARTS: list = []


def _lint_parts(lay, path: str, options: Options) -> list[Finding] | None:
    """The findings of ``lint_module`` on the text of ``lay`` (a ``split.Layout``), with the module cut into
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
            if fork:
                later = [pool.submit(_lint_part_at, k, path, options) for k in range(1, len(cut))]
            else:
                later = [pool.submit(_lint_part, p.text(), path, options, p.owned) for p in cut[1:]]
            results = [_lint_part(cut[0].text(), path, options, cut[0].owned)] + [f.result() for f in later]
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
    return _lint_part(p.text(), path, options, p.owned)


def _lint_part(text: str, path: str, options: Options, owned: list[tuple[int, int]]) -> list[Finding] | None:
    """Worker of ``_lint_parts``: parse one part (already pruned, its lines counted by the caller) and run the
    rules on the functions it owns; None when the part does not parse as a module."""
    from tmemlint.frontend import parser
    from tmemlint.frontend.parser import PTXSyntaxError

    try:
        module = parser.parse_module(text, path)
    except PTXSyntaxError:
        return None
    if module.version is None:
        return None
    return lint_module(module, path, options, owned)


def lint_source(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint CUDA source ``text`` (``.cu``/``.cuh``/a header, reported as ``path``); findings are in the lines of
    ``text``.  Source mode (default): the file's asm statements and C++ control flow are lowered to the IR without
    a compiler (``tmemlint.frontend.cuda``); with ``options.compile``, nvcc makes the PTX and findings are mapped
    back through its line info (``tmemlint.compile``).  Suppressions and fingerprints are applied by the caller
    (``lint_document``).  Never raises for bad input."""
    options = options or Options()
    load_all()
    if options.compile:
        return _lint_compiled(text, path, options)
    if "tcgen05" not in text and "#include" not in text and not re.search(r"__device__[^;{}]*\)\s*;", text):
        return []  # nothing here touches Tensor Memory (the frontend decides for includes and prototypes)
    from tmemlint.frontend.cuda import diagnostic_findings, parse_cuda, with_inline_context

    # the cyclic garbage collector paused (as for the PTX parse, ``parser._parse_without_gc``): lowering and the
    # analyses allocate hundreds of thousands of long-lived objects (syntax nodes' texts, IR, facts), and each
    # collection walks all of those built so far (a fifth of the time on a 2,446-line generated kernel); the
    # garbage made in between is freed by reference counting, or by the first collection after
    enabled = gc.isenabled()
    gc.disable()
    try:
        unit = parse_cuda(text, path, options.defines, options.include_dirs)
        found = diagnostic_findings(unit, path, options.wants) + lint_module(unit.module, path, options)
        return with_inline_context(found, unit)
    finally:
        if enabled:
            gc.enable()


def _lint_compiled(text: str, path: str, options: Options) -> list[Finding]:
    """Compile mode: nvcc makes the PTX of ``path`` (``tmemlint.compile``), the rules run on it, and the findings
    move to the source lines.  Raises ``CompileError`` (a CheckError) when nvcc cannot be run or rejects the
    file."""
    import os

    from tmemlint.compile import compile_to_ptx, map_findings
    from tmemlint.frontend.parser import PTXSyntaxError, parse_text_isolating

    includes = tuple(f"-I{os.path.abspath(d)}" for d in options.include_dirs)
    ptx = compile_to_ptx(text, path, tuple(options.nvcc_args) + includes, options.defines)
    shown = f"{path} (nvcc PTX)"
    try:  # a function of nvcc's PTX this grammar cannot read costs that function only, as in lint_text
        module, broken = parse_text_isolating(ptx, shown)
    except PTXSyntaxError as e:
        return [_finding(path, "TM900", 1, 1, 2, f"the PTX nvcc made is not readable at its line {e.line}: "
                                                 f"{e.message}")]
    unread = [_finding(path, "TM900", 1, 1, 2, f"the PTX nvcc made is not readable at its line {e.line}: "
                                               f"{e.message}; the function on its lines {lo}-{hi} is not analysed")
              for e, (lo, hi) in broken]
    return unread + map_findings(lint_module(module, shown, options), module, path, text, ptx)


def source_linter() -> Callable | None:
    """The CUDA source-mode linter when one is installed in this module (``lint_source(text, path, options) ->
    list[Finding]``, findings in the ``.cu`` text's lines), else None."""
    return globals().get("lint_source")


def lint_document(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint one document's text by its name: ``.cu``/``.cuh`` through ``source_linter()`` when there is one
    (then ``finish_findings`` on the CUDA text), anything else as PTX (``lint_text``).  Never raises for bad
    input."""
    options = options or Options()
    src = source_linter() if path.endswith(SOURCE_SUFFIXES + HEADER_SUFFIXES) else None
    if src is None:
        return lint_text(text, path, options)
    unjudged: frozenset[str] = frozenset()
    if path.endswith((".cuh",) + HEADER_SUFFIXES):
        # a header checked on its own: its helpers are analysed without the kernels that include it, which do not
        # get the whole-kernel rules here; a suppression of one of those is for the including files (not TM902)
        from tmemlint.frontend.cuda import BLIND_CODES

        unjudged = BLIND_CODES
    return finish_findings(src(text, path, options), text, path, options, unjudged=unjudged)


def lint_bytes(data: bytes, display: str, options: Options | None = None) -> FileResult:
    """Lint the raw bytes of one file (or of standard input) reported as ``display``; the result keeps the
    decoded ``text`` (for code frames) and ``options``."""
    options = options or Options()
    res = FileResult(display, options=options)
    if len(data) > MAX_BYTES:
        res.findings = _too_large(display, len(data), options)
        return res
    from tmemlint.frontend.parser import PTXSyntaxError, decode

    try:
        text = decode(data)
    except PTXSyntaxError as e:
        res.findings = finish_findings([_finding(display, "TM900", e.line, e.column, e.end_column, e.message)],
                                       "", display, options, rules_ran=False)
        return res
    res.lines = text.count("\n")
    res.text = text
    try:
        res.findings = lint_document(text, display, options)
    except CheckError as e:
        res.error = str(e)
    return res


def _over_limit(display: str, message: str, options: Options) -> list[Finding]:
    """A file past a size limit: one TM901 at 1:1 (when TM901 is enabled), without reading suppressions."""
    if not options.wants("TM901"):
        return []
    return finish_findings([_finding(display, "TM901", 1, 1, 2, message)], "", display, options, rules_ran=False)


def _too_large(display: str, size: int, options: Options) -> list[Finding]:
    if size == MAX_BYTES + 1:  # a stream: read up to the limit
        return _over_limit(display, f"more than the limit of {MAX_BYTES:,} bytes: the file is not read", options)
    return _over_limit(display, f"{size:,} bytes, more than the limit of {MAX_BYTES:,}: the file is not read",
                       options)


def lint_file(path: str | Path, display: str | None = None, options: Options | None = None) -> FileResult:
    """Read and lint one file.  An unreadable file gives ``unreadable`` (no exception).  At most ``MAX_BYTES``
    are read (a larger file, or an endless device such as ``/dev/zero``, gives TM901)."""
    shown = display or str(path)
    res = FileResult(shown, options=options)
    try:
        size = os.stat(path).st_size
        if size > MAX_BYTES and os.path.isfile(path):
            res.findings = _too_large(shown, size, options or Options())
            return res
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except IsADirectoryError:
        res.unreadable = "is a directory"
        return res
    except OSError as e:
        res.unreadable = e.strerror or str(e)
        return res
    return lint_bytes(data, shown, options)


def _walk(folder: str, excluded: Callable[[str], bool] | None) -> list[str]:
    found = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        if excluded is not None:
            dirs[:] = [d for d in dirs if not excluded(os.path.join(root, d))]
        for n in names:
            if n.endswith(PTX_SUFFIXES + SOURCE_SUFFIXES):
                full = os.path.join(root, n)
                if os.path.isfile(full) and not (excluded is not None and excluded(full)):
                    found.append(full)
    return sorted(found)


def expand_paths(paths: Iterable[str], excluded: Callable[[str], bool] | None = None) -> tuple[list[str], list[str]]:
    """Files to check, each once, in argument order: files as given; folders searched recursively for ``*.ptx``,
    ``*.cu`` and ``*.cuh`` (sorted); an argument that names nothing but has glob characters (``*``, ``?``, ``[``;
    ``**`` crosses folders) expanded, sorted, keeping those files and searching its folders.  ``excluded(path)`` (e.g. ``Settings.excluded``) drops files and folders found
    by a search or a glob, never a file named as it is.  Returns ``(files, missing)`` where ``missing`` are the
    arguments that name nothing (a glob that matches nothing is missing)."""
    files: list[str] = []
    missing: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(_walk(p, excluded))
        elif os.path.exists(p) or os.path.islink(p):
            files.append(p)
        elif any(c in p for c in _GLOB_CHARS) and (hits := sorted(glob.glob(p, recursive=True))):
            for h in hits:
                if excluded is not None and excluded(h):
                    continue
                if os.path.isdir(h):
                    files.extend(_walk(h, excluded))
                elif h.endswith(PTX_SUFFIXES + SOURCE_SUFFIXES):
                    files.append(h)
        else:
            missing.append(p)
    return list(dict.fromkeys(files)), missing
