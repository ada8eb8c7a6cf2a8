"""Cutting a large PTX module into parts that can be parsed and analysed in parallel.

A module is a sequence of top-level items (PTX ISA §11: module directives, variable declarations, function
declarations and definitions, ``.section`` blocks).  Functions are analysed one at a time (rules read only the
function and the module's variables, and the ``.func`` definitions it calls), so a module with many kernels can be
split into *parts*: each part keeps the module's shared text (everything outside function bodies and ``.section``
blocks: ``.version``/``.target``, ``.file``, declarations, prototypes) and every ``.func`` definition (callee
context), plus the kernels and sections it owns; everything else is replaced by the same number of line breaks, so
line and column numbers in a part are those of the file.

This is a text scan (comments and strings skipped, braces counted), not a parser: it only decides where to cut.
Every part is still parsed by the grammar; a cut the grammar rejects makes the caller fall back to one parse of the
whole file, so a file that is not well-formed gets exactly the diagnostics of the serial parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Braces, and the things in which a brace is not one: comments and string literals.
_SCAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|[{}]', re.S)


@dataclass(slots=True)
class Unit:
    """One top-level ``{...}`` item: ``kind`` ``entry``, ``func`` or ``section``; ``start``/``end`` are character
    offsets of its first line's start and of the end of the line holding its closing brace; ``lines`` its line
    count (the weight used to balance parts)."""

    kind: str
    start: int
    end: int
    lines: int


def units(text: str) -> list[Unit] | None:
    """The functions and sections of ``text`` in file order, or None when the text cannot be cut safely (unbalanced
    braces, an item that does not start on its own line, two items on one line, text after a closing brace on its
    line, a top-level brace group that is not a function, a section or an initializer)."""
    out: list[Unit] = []
    depth = 0
    open_at = -1
    prev_end = 0
    for m in _SCAN.finditer(text):
        tok = m.group()
        if tok == "{":
            if depth == 0:
                open_at = m.start()
            depth += 1
        elif tok == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                try:
                    head = _header(text, prev_end, open_at)
                except _Uncuttable:
                    return None
                if head is None:
                    continue  # an initializer `= {1, 2}`: stays in the shared text
                kind, start = head
                nl = text.find("\n", m.end())
                end = len(text) if nl < 0 else nl + 1
                if text[m.end():end].strip() not in ("", ";"):
                    return None  # something follows the closing brace on its line
                out.append(Unit(kind, start, end, text.count("\n", start, end)))
                prev_end = end
    if depth != 0:
        return None
    return out


#: Comments, strings and the keywords that open a top-level item, in one scan (a keyword inside a comment or a
#: string is consumed by the comment or string alternative).
_HEAD_SCAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\.(entry|func|section)\b', re.S)
#: What may precede the keyword on its line: blanks and linkage directives (PTX ISA §11.6).
_LINKAGE = re.compile(r"[ \t]*(?:\.(?:visible|weak|extern|common)[ \t]+)*")


#: An initializer's opening brace: ``=`` then blanks just before it.
_INITIALIZER = re.compile(r"=\s*\Z")


class _Uncuttable(Exception):
    """The text cannot be cut at line starts: an item's first line also holds something else, or a top-level
    brace group is neither a function, a section nor an initializer."""


def _header(text: str, lo: int, brace: int) -> tuple[str, int] | None:
    """The kind and line start of the item whose body opens at ``brace``: the last ``.entry``/``.func``/``.section``
    keyword between ``lo`` and the brace outside comments and strings; None for an initializer (``= {...}``).
    Raises _Uncuttable when there is no keyword, or something other than linkage directives precedes the keyword
    on its line."""
    if _INITIALIZER.search(text, lo, brace):
        return None
    last = None
    for m in _HEAD_SCAN.finditer(text, lo, brace):
        if m.group(1):
            last = m
    if last is None:
        raise _Uncuttable()
    start = text.rfind("\n", 0, last.start()) + 1
    if start < lo or _LINKAGE.fullmatch(text, start, last.start()) is None:
        raise _Uncuttable()
    return last.group(1), start


def parts(text: str, n: int) -> list[tuple[str, list[tuple[int, int]]]] | None:
    """``text`` cut into at most ``n`` parts of about equal work: ``(part_text, owned)`` where ``owned`` lists the
    1-based line ranges ``(first, last)`` of the kernels and ``.func`` definitions the part analyses.  Every part
    keeps the shared text and all ``.func`` definitions; each ``.entry`` and ``.section`` is in exactly one part;
    each ``.func`` is owned (analysed) by the first part.  None when the text cannot be cut (see ``units``) or
    has fewer than two kernels to share out."""
    us = units(text)
    if us is None:
        return None
    entries = [u for u in us if u.kind == "entry"]
    if n < 2 or len(entries) < 2:
        return None
    n = min(n, len(entries))
    # Balance by lines of code; .section lines (one .b8 each, read as a block) weigh about a twentieth of one.
    bins: list[list[Unit]] = [[] for _ in range(n)]
    load = [0.0] * n
    for u in sorted((u for u in us if u.kind != "func"), key=lambda u: -(u.lines / 20 if u.kind == "section"
                                                                           else u.lines)):
        k = min(range(n), key=lambda i: load[i])
        bins[k].append(u)
        load[k] += u.lines / 20 if u.kind == "section" else u.lines
    funcs = [u for u in us if u.kind == "func"]
    first_line: dict[int, int] = {}
    line, pos = 1, 0
    for u in us:
        line += text.count("\n", pos, u.start)
        first_line[id(u)] = line
        pos = u.start
    out = []
    for k, mine in enumerate(bins):
        keep = sorted(mine + funcs, key=lambda u: u.start)
        owned = [u for u in keep if u.kind == "entry" or (u.kind == "func" and k == 0)]
        out.append((_blank_others(text, us, {id(u) for u in keep}),
                    [(first_line[id(u)], first_line[id(u)] + u.lines - 1) for u in owned]))
    return out


def _blank_others(text: str, us: list[Unit], keep: set[int]) -> str:
    """``text`` with every unit not in ``keep`` replaced by as many line breaks as it had."""
    pieces = []
    pos = 0
    for u in us:
        if id(u) in keep:
            continue
        pieces.append(text[pos:u.start])
        pieces.append("\n" * text.count("\n", u.start, u.end))
        pos = u.end
    pieces.append(text[pos:])
    return "".join(pieces)
