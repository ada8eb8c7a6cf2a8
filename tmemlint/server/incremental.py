"""Re-lint only the kernels an edit touched, for large multi-kernel PTX documents.

The text is cut as the engine cuts it for parallel runs (``frontend.split.Layout.parts``, one part per needed
kernel): each part keeps the module's shared text, every needed ``.func`` and every stub, its own kernel, and the
other kernels as blank lines, so line numbers are the file's and a part's findings are the whole file's findings of
the functions it owns (``pipeline._lint_parts`` relies on the same equality).  A part's findings are kept under the
SHA-1 of its text, the line ranges it owns and the options; an edit inside one kernel that adds no line changes
only that kernel's part, so one kernel is analysed again; an edit that adds or removes lines changes the parts of
the kernels below it; an edit of the shared text changes every part.  Suppressions, severities and fingerprints are
applied to the whole text afterwards (``pipeline.finish``), as a whole-file lint does.

Anything else (a text the splitter cannot cut, fewer than two needed kernels, a part that does not parse, a text
past the line limit) is linted whole by ``pipeline.run``, which gives the reference diagnostics (and the
syntax errors)."""

from __future__ import annotations

import copy
import hashlib
import re

from tmemlint import pipeline
from tmemlint.findings import Finding
from tmemlint.frontend import parser
from tmemlint.frontend.split import layout
from tmemlint.options import Options

#: Documents with fewer lines are linted whole (a part costs the shared text's parse each time).
MIN_LINES = 4000


def _whole(text: str, path: str, options: Options) -> list[Finding]:
    """The document linted whole, as ``check`` lints a file."""
    return pipeline.run(pipeline.load(text, options, name=path))


def options_key(options: Options) -> str:
    """What of ``options`` changes a part's findings, as a stable string."""
    return repr((None if options.codes is None else sorted(options.codes), sorted(options.severity.items()),
                 options.ctas_per_sm, sorted(options.defines.items()), tuple(options.include_dirs)))


def render_without(lay, drop: frozenset) -> tuple[str, list[tuple[int, int]]]:
    """``lay.render(drop)`` with the units in ``drop`` left out instead of blanked (so the text does not depend on
    their length), and where lines were taken out: ``(line of the part's text where they were, how many)``,
    in order.  Sections, initializer lists and stubs as ``Layout.render`` makes them."""
    t = lay.text
    pieces: list[str] = []
    removed: list[tuple[int, int]] = []
    pos, line, gone = 0, 1, 0
    for i, (u, k) in enumerate(zip(lay.units, lay.keep)):
        if k and i not in drop:
            continue
        pieces.append(t[pos:u.start])
        line += t.count("\n", pos, u.start)
        if i in drop:
            removed.append((line - gone, u.lines))
            gone += u.lines
        elif k or u.kind == "section":
            pieces.append("\n" * u.lines)
        elif u.kind == "init":
            pieces.append(t[u.start:u.open + 1] + "0" + "\n" * u.lines + "}")
        else:
            pieces.append(t[u.start:u.open + 1] + "\n" * t.count("\n", u.open, u.close) + t[u.close:u.end])
        line += t.count("\n", u.start, u.end)
        pos = u.end
    pieces.append(t[pos:])
    return "".join(pieces), removed


def _to_file(line: int, removed: list[tuple[int, int]]) -> int:
    return line + sum(n for at, n in removed if at <= line)


def _to_part(line: int, removed: list[tuple[int, int]]) -> int:
    out = line
    for at, n in removed:
        if at <= out:
            out -= n  # only units before ``line`` are counted: the owned kernel's are never removed
    return out


#: "line N" in a message (rules name the line of another instruction of the same function or its callees).
_LINE_IN_MESSAGE = re.compile(r"\bline (\d+)\b")


def _moved(f: Finding, removed: list[tuple[int, int]]) -> Finding:
    """A copy of the part's finding ``f`` in the file's lines: its span, related places, flow, and the line
    numbers its message names."""
    from dataclasses import replace

    if not removed:
        return copy.copy(f)
    message = _LINE_IN_MESSAGE.sub(lambda m: f"line {_to_file(int(m.group(1)), removed)}", f.message)
    return replace(f, line=_to_file(f.line, removed), end_line=_to_file(f.end_line, removed), message=message,
                   related=[replace(r, line=_to_file(r.line, removed)) if r.path == f.path else r for r in f.related],
                   flow=[replace(r, line=_to_file(r.line, removed)) if r.path == f.path else r for r in f.flow])


def lint_incremental(text: str, path: str, options: Options, known: dict[str, list[Finding]]
                     ) -> tuple[list[Finding], dict[str, list[Finding]]]:
    """The findings of the PTX document ``text`` (as ``pipeline.run`` gives them) and the part results
    this lint used, by key: those found in ``known`` (results of earlier lints of the same document) and the new
    ones.  The caller keeps the returned dict for the next lint."""
    if pipeline.is_source(path) or text.count("\n") < MIN_LINES:
        return _whole(text, path, options), {}
    lay = layout(parser.normalize(text), prune=pipeline.PRUNE)
    if lay is None or lay.code_lines > parser.MAX_LINES:
        return _whole(text, path, options), {}
    cut = lay.parts(len(lay.kernels))
    if cut is None:
        return _whole(text, path, options), {}
    okey = options_key(options)
    used: dict[str, list[Finding]] = {}
    found: list[Finding] = []
    for part in cut:
        ptext, removed = render_without(lay, part.blank)
        owned = [(_to_part(lo, removed), _to_part(hi, removed)) for lo, hi in part.owned]
        key = hashlib.sha1(f"{okey}\0{owned}\0".encode() + ptext.encode("utf-8", "surrogatepass")).hexdigest()
        got = known.get(key)
        if got is None:
            got = pipeline.lint_part(ptext, path, options, owned)
            if got is None:  # a function of the part does not parse: TM900 there, the others analysed
                got = pipeline.lint_part_isolating(ptext, path, options, owned)
            if got is None:  # an error outside the functions: the whole text decides
                return _whole(text, path, options), {}
        used[key] = got
        found.extend(_moved(f, removed) for f in got)  # copies: finish_findings sets severities, fingerprints
    out = pipeline.finish(found, text, path, options)
    broken = [(f.line, f.line) for f in found if f.code == "TM900"]
    if broken:  # unused suppressions in a function that did not parse are not reported (as lint_text does)
        spans = _function_spans(text, [ln for ln, _ in broken])
        out = [f for f in out if f.code != "TM902" or not any(lo <= f.line <= hi for lo, hi in spans)]
    return out, used


def _function_spans(text: str, lines: list[int]) -> list[tuple[int, int]]:
    """The 1-based line ranges of the functions of ``text`` that hold one of ``lines``."""
    lay = layout(parser.normalize(text), prune=False)
    if lay is None:
        return []
    out, line, pos = [], 1, 0
    for u in lay.units:
        line += text.count("\n", pos, u.start)
        pos = u.start
        if u.kind in ("entry", "func") and any(line <= ln < line + u.lines for ln in lines):
            out.append((line, line + u.lines - 1))
    return out
