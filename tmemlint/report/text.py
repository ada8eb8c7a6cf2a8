"""Human-readable output: ``path:line:col: CODE [severity] message (name)``, then a code frame (the offending
line and a caret line under its column range) when the source text is known, then the related places indented.

Colour (ANSI) is used only when asked (``color=True``); the CLI asks when standard output is a terminal and
``NO_COLOR`` is not set."""

from __future__ import annotations

from typing import Iterable, Mapping

from tmemlint.findings import Finding, Severity

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_CYAN = "\x1b[36m"
_SEV_COLOR = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m", Severity.INFO: "\x1b[1;34m"}


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def code_frame(line_text: str, line: int, column: int, end_column: int | None, color: bool = False,
               caret_color: str = _SEV_COLOR[Severity.ERROR]) -> list[str]:
    """Two lines: ``"  179 | <line_text>"`` and ``"      | <spaces>^^^"`` with carets under the 1-based columns
    ``column`` … ``end_column - 1`` (to the end of the line when ``end_column`` is None or not after
    ``column``; at least one caret).  Tabs before the range are kept so the caret lines up in any terminal."""
    text = line_text.rstrip("\r\n")
    start = max(column - 1, 0)
    stop = len(text.rstrip()) if end_column is None or end_column <= column else end_column - 1
    stop = max(min(stop, len(text)), start + 1)
    pad = "".join("\t" if ch == "\t" else " " for ch in text[:start])
    num = str(line)
    gutter = " " * len(num)
    bar = _paint("|", _DIM, color)
    return [f"  {_paint(num, _DIM, color)} {bar} {text}",
            f"  {gutter} {bar} {pad}{_paint('^' * (stop - start), caret_color, color)}"]


def witness_lines(f: Finding, color: bool = False) -> list[str]:
    """The compact rendering of ``f``'s code flow (``--show-witness``): ``  witness:`` then one numbered line per
    step, ``    N. path:line:col: [warp class] message``, the class named where it changes; no lines for a
    finding without steps."""
    if not f.flow:
        return []
    out = [f"  {_paint('witness:', _BOLD, color)}"]
    last = None
    for k, s in enumerate(f.flow, 1):
        who = f"[{s.thread}] " if s.thread is not None and s.thread != last else ""
        last = s.thread if s.thread is not None else last
        where = _paint(f"{s.path}:{s.line}:{s.column}:", _BOLD, color)
        out.append(f"    {k}. {where} {_paint(who, _CYAN, color) if who else ''}{s.message}")
    return out


def format_text(findings: Iterable[Finding], sources: Mapping[str, str] | None = None, color: bool = False,
                witness: bool = False) -> str:
    """One block per finding: the finding line; the code frame when ``sources`` (display path → file text) has
    the finding's file and line; then ``  path:line:col: note: message`` per related place; with ``witness``,
    the code-flow steps (``witness_lines``).  Blocks are separated by a blank line when frames are shown.
    ``color`` adds ANSI colours."""
    split: dict[str, list[str]] = {}
    blocks = []
    for f in findings:
        sev = _paint(f.code, _SEV_COLOR[f.severity], color) + " " + _paint(f"[{f.severity.value}]",
                                                                            _SEV_COLOR[f.severity], color)
        where = _paint(f"{f.path}:{f.line}:{f.column}:", _BOLD, color)
        block = [f"{where} {sev} {f.message} ({_paint(f.name, _CYAN, color)})"]
        if sources is not None and f.path in sources:
            lines = split.setdefault(f.path, sources[f.path].split("\n"))
            if 1 <= f.line <= len(lines):
                end = f.end_column if f.end_line == f.line else None
                block.extend(code_frame(lines[f.line - 1], f.line, f.column, end, color, _SEV_COLOR[f.severity]))
        for r in f.related:
            block.append(f"  {_paint(f'{r.path}:{r.line}:{r.column}:', _BOLD, color)} note: {r.message}")
        if witness:
            block.extend(witness_lines(f, color))
        blocks.append(block)
    sep = "\n\n" if sources else "\n"
    return sep.join("\n".join(b) for b in blocks) + ("\n" if blocks else "")
