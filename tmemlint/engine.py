"""The driver's file-level entry points (``lint_file``, ``lint_bytes``, ``lint_document``, ``lint_text``,
``lint_source``) and the expansion of command-line paths, over ``tmemlint.pipeline`` (load → analyse → check),
which holds the suffix table, the choice of front end and the TM900/TM901 policy.  None of these raises on bad
input."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tmemlint import pipeline
from tmemlint.findings import Finding
from tmemlint.ir import Module
from tmemlint.options import Options  # noqa: F401 - its home is tmemlint.options; re-exported here
from tmemlint.pipeline import (  # noqa: F401 - the suffix table and limits live in the pipeline; re-exported
    HEADER_SUFFIXES,
    MAX_VALUE_WORK,
    PTX_SUFFIXES,
    SEARCHED_SUFFIXES,
    SOURCE_SUFFIXES,
    finish as finish_findings,
    lint_part as _lint_part,
    share_cores,
    value_work,
)

_GLOB_CHARS = ("*", "?", "[")


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
    #: the file's ``profile.Record`` when the run is profiled (``checkcmd._lint_task``; a worker returns it here)
    profile: object | None = None


def lint_module(module: Module, path: str, options: Options,
                owned: list[tuple[int, int]] | None = None) -> list[Finding]:
    """Run the enabled rules on every function of ``module`` that has a body (with ``owned``, a list of 1-based
    line ranges: only on the functions whose header line lies in one of them): ``pipeline.check_module``."""
    return pipeline.check_module(module, path, options, owned)


def lint_text(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint PTX ``text`` (reported as ``path``, whatever its suffix): ``pipeline.run``.  Never raises for bad
    input."""
    return pipeline.run(pipeline.load(text, options, name=path, as_language="ptx"))


def lint_source(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint CUDA source ``text`` (``.cu``/``.cuh``/a header, reported as ``path``); findings are in the lines of
    ``text``, before suppressions and fingerprints (``pipeline.findings_of``).  Source mode (default): without a
    compiler (``tmemlint.frontend.cuda``); with ``options.compile``, nvcc makes the PTX and findings are mapped
    back through its line info (``tmemlint.compile``; raises ``CompileError``, a CheckError, when nvcc cannot be
    run or rejects the file).  Never raises for bad input."""
    lang = pipeline.language(path)
    return pipeline.findings_of(pipeline.load(text, options, name=path, as_language="cuda" if lang == "ptx" else lang))


def source_linter() -> Callable | None:
    """The CUDA source-mode linter (``lint_source(text, path, options) -> list[Finding]``, findings in the ``.cu``
    text's lines)."""
    return lint_source


def lint_document(text: str, path: str, options: Options | None = None) -> list[Finding]:
    """Lint one document's text by its name (``pipeline.language``): ``pipeline.run``.  Never raises for bad
    input."""
    return pipeline.run(pipeline.load(text, options, name=path))


def _result(unit: pipeline.Unit, options: Options | None) -> FileResult:
    kept = unit.unreadable is not None or (unit.text is None and not unit.suppressed)  # not read: as given
    res = FileResult(unit.path, options=options if kept else unit.options)
    res.unreadable = unit.unreadable
    if unit.text is not None:
        res.lines = unit.text.count("\n")
        res.text = unit.text
    if unit.refusal is not None:
        res.error = str(unit.refusal)
    elif unit.unreadable is None:
        res.findings = pipeline.run(unit)
    return res


def lint_bytes(data: bytes, display: str, options: Options | None = None) -> FileResult:
    """Lint the raw bytes of one file (or of standard input) reported as ``display``; the result keeps the
    decoded ``text`` (for code frames) and ``options``."""
    options = options or Options()
    return _result(pipeline.load(bytes(data), options, name=display), options)


def lint_file(path: str | Path, display: str | None = None, options: Options | None = None) -> FileResult:
    """Read and lint one file.  An unreadable file gives ``unreadable`` (no exception).  At most
    ``pipeline.MAX_BYTES`` are read (a larger file, or an endless device such as ``/dev/zero``, gives TM901)."""
    return _result(pipeline.load(Path(path), options, name=display or str(path)), options)


def _walk(folder: str, excluded: Callable[[str], bool] | None) -> list[str]:
    found = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        if excluded is not None:
            dirs[:] = [d for d in dirs if not excluded(os.path.join(root, d))]
        for n in names:
            if n.endswith(SEARCHED_SUFFIXES):
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
                elif h.endswith(SEARCHED_SUFFIXES):
                    files.append(h)
        else:
            missing.append(p)
    return list(dict.fromkeys(files)), missing
