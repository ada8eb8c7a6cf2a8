"""The driver: files → IR → per-function analyses → rules → findings.

``lint_text`` never raises on bad input: a file that is not PTX gives a TM900 finding, an analysis that hits a
bound gives TM901, and an unexpected internal error in a rule is reported as TM901 for that function (with the
exception's text) so the other functions and files are still checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from tmemlint.checks.context import FunctionContext
from tmemlint.checks.registry import RULES, Rule, load_all
from tmemlint.findings import Finding
from tmemlint.frontend.parser import PTXSyntaxError, decode, parse_text
from tmemlint.ir import Module

PTX_SUFFIXES = (".ptx",)


@dataclass(slots=True)
class Options:
    """What to check: ``codes`` are the enabled rule codes (None: the registry's defaults)."""

    codes: set[str] | None = None

    def rules(self) -> list[Rule]:
        load_all()
        if self.codes is None:
            return [r for r in RULES.values() if r.enabled]
        return [RULES[c] for c in sorted(self.codes) if c in RULES]

    def wants(self, code: str) -> bool:
        load_all()
        return RULES[code].enabled if self.codes is None else code in self.codes


@dataclass(slots=True)
class FileResult:
    """Findings of one file; ``unreadable`` holds the OS error text when the file could not be read."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    unreadable: str | None = None
    lines: int = 0


def _finding(path: str, code: str, line: int, col: int, end_col: int, message: str) -> Finding:
    r = RULES[code]
    return Finding(path, line, col, line, end_col, code, r.name, r.severity, message)


def lint_module(module: Module, path: str, options: Options) -> list[Finding]:
    """Run the enabled rules on every function of ``module`` that has a body."""
    rules = [r for r in options.rules() if r.check is not None]
    out: list[Finding] = []
    for fn in module.functions:
        if not fn.has_body:
            continue
        ctx = FunctionContext(module, fn, path)
        if not ctx.touches_tmem:
            continue
        for r in rules:
            try:
                r.check(ctx)
            except RecursionError:
                ctx.findings.append(_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                                             f"{r.code} skipped for function {fn.name}: too deeply nested"))
        if options.wants("TM901"):
            for inst in ctx.cfg.unresolved:
                ctx.findings.append(_finding(path, "TM901", inst.span.line, inst.span.column, inst.span.end_column,
                                             f"branch target of '{inst.opcode}' is not a known label or "
                                             f".branchtargets list: paths through it are not analysed"))
            if "lifecycle" in ctx.__dict__:
                for msg in ctx.lifecycle.bounded:
                    ctx.findings.append(_finding(path, "TM901", fn.span.line, fn.span.column, fn.span.end_column,
                                                 f"function {fn.name}: {msg}; allocation findings may be missing"))
        out.extend(f for f in ctx.findings if options.codes is None or f.code in options.codes)
    return out


def lint_text(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint PTX ``text`` (reported as ``path``).  Never raises for bad input."""
    options = options or Options()
    load_all()
    try:
        module = parse_text(text, path)
    except PTXSyntaxError as e:
        return [_finding(path, "TM900", e.line, e.column, e.end_column, e.message)]
    if module.version is None:
        first = 1
        return [_finding(path, "TM900", first, 1, 2, "not a PTX module: no .version directive")]
    return sorted(lint_module(module, path, options), key=Finding.sort_key)


def lint_file(path: str | Path, display: str | None = None, options: Options | None = None) -> FileResult:
    """Read and lint one file.  An unreadable file gives ``unreadable`` (no exception)."""
    shown = display or str(path)
    res = FileResult(shown)
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        res.unreadable = "is a directory"
        return res
    except OSError as e:
        res.unreadable = e.strerror or str(e)
        return res
    try:
        text = decode(data)
    except PTXSyntaxError as e:
        res.findings = [_finding(shown, "TM900", e.line, e.column, e.end_column, e.message)]
        return res
    res.lines = text.count("\n")
    res.findings = lint_text(text, shown, options)
    return res


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """Files to check: files as given, folders searched recursively for ``*.ptx`` (sorted).  Returns
    ``(files, missing)`` where ``missing`` are arguments that name nothing."""
    files: list[str] = []
    missing: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, dirs, names in os.walk(p):
                dirs.sort()
                for n in names:
                    if n.endswith(PTX_SUFFIXES):
                        full = os.path.join(root, n)
                        if os.path.isfile(full):
                            found.append(full)
            files.extend(sorted(found))
        elif os.path.exists(p) or os.path.islink(p):
            files.append(p)
        else:
            missing.append(p)
    return files, missing
