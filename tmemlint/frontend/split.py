"""What of a PTX module the grammar has to read, and how to cut it into parts parsed in parallel.

A module is a sequence of top-level items (PTX ISA §11: module directives, variable declarations, function
declarations and definitions, ``.section`` blocks).  ``layout`` finds the items with a body (``units``) by a text
scan (comments and strings skipped, braces counted; a ``.section`` block, which holds no brace, is passed over
with one ``find``) and decides which ones the analyses need (``Layout.keep``):

* ``.section`` blocks (DWARF ``.b8`` data: 85-95% of the lines of ``-lineinfo`` output) are never needed: the IR
  keeps nothing of them (``.loc`` file names come from the ``.file`` directives, which are shared text);
* a function is needed when it holds a ``tcgen05`` instruction, calls (transitively) one that does, makes an
  indirect call while some ``.func`` is needed (it may call that one), or is called (transitively) by a needed
  function: the analyses follow calls into callees (``tmemlint.analysis.calls``) and every rule reads all the
  instructions of the functions it checks, so only whole functions are left out.  This is a superset of what
  ``FunctionContext.touches_tmem`` analyses and of every callee those analyses read.

``Layout.pruned`` is the text the grammar reads: sections replaced by as many line breaks as they had, and every
function that is not needed replaced by a *stub* (its header and braces with the body's line breaks, so the
function is still known by name, as a function with an empty body); line and column numbers are those of the
file.  The decision is a text scan, not a parse: ``tcgen05`` in a comment keeps a function, a ``call`` the scan
cannot read is taken as an indirect call, any name of a function in a call statement as a call of it, so it may
keep more than needed, never less.  A syntax error inside a function that is not needed is not seen (ptxas reports
it); a text the scan cannot cut (``units`` returns None) is read whole.

For parallel runs ``Layout.parts`` cuts the pruned module into parts: each keeps the module's shared text
(everything outside bodies: ``.version``/``.target``, ``.file``, declarations, prototypes), every needed ``.func``
definition (callee context) and every stub, plus the needed kernels it owns; the other kernels are blank lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Braces, and the things in which a brace is not one: comments and string literals.
_SCAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|[{}]', re.S)
#: The grammar's ``SECTION`` token (``grammars/ptx.lark``): a section is cut only where the grammar reads it as one.
_SECTION = re.compile(r"\.section[ \t]+[^{;]*\{[^}]*\}")
#: Something in an initializer's braces (an empty one is left to the grammar, which rejects it).
_VALUE = re.compile(r"\S")
#: A function's name after its ``.entry``/``.func`` keyword, past an optional return-parameter list.
_NAME = re.compile(r"\s*(?:\([^()]*\)\s*)?([A-Za-z_$%][\w$]*)")


@dataclass(slots=True)
class Unit:
    """One top-level ``{...}`` item: ``kind`` ``entry``, ``func`` or ``section``; ``start``/``end`` are character
    offsets of its first line's start and of the end of the line holding its closing brace; ``lines`` its line
    count; ``open``/``close`` the offsets of its braces; ``name`` a function's name (None for a section, or when
    the scan cannot read it).  Kind ``init`` is the brace list of a module variable's initializer (``= {1, 2}``):
    ``start``/``end`` span its braces, ``lines`` counts the line breaks between them."""

    kind: str
    start: int
    end: int
    lines: int
    open: int = -1
    close: int = -1
    name: str | None = None


def units(text: str) -> list[Unit] | None:
    """The functions and sections of ``text`` in file order, or None when the text cannot be cut safely (unbalanced
    braces, an item that does not start on its own line, two items on one line, text after a closing brace on its
    line, a top-level brace group that is not a function, a section or an initializer, a section the grammar
    would not read as one ``SECTION`` token).

    Without block comments (nvcc, Triton and CuTe DSL never write one), comments and strings end on their line,
    so the scan visits only the braces (``str.find``) and reads a brace's line only when a ``//`` or a quote
    precedes it there; a text with ``/*`` is scanned token by token (``_tokens``).  Both give the same units."""
    return _units(text, _tokens(text) if "/*" in text else _braces(text))


def _braces(text: str):
    """The positions of the braces of ``text`` that are not inside a ``//`` comment or a string, for a text
    without block comments; ``send(pos)`` moves the scan to ``pos`` (past a section)."""
    find, rfind = text.find, text.rfind
    pos = 0
    no, nc = find("{"), find("}")
    while no >= 0 or nc >= 0:
        if nc < 0 or 0 <= no < nc:
            q = no
            no = find("{", q + 1)
        else:
            q = nc
            nc = find("}", q + 1)
        ls = rfind("\n", 0, q) + 1
        if (find("/", ls, q) >= 0 or find('"', ls, q) >= 0) and _quoted(text, ls, q):
            continue
        jump = yield q
        if jump is not None:
            pos = jump
            no, nc = find("{", pos), find("}", pos)
            yield None  # the answer to send()


def _quoted(text: str, ls: int, q: int) -> bool:
    """Whether position ``q`` of the line starting at ``ls`` is inside a ``//`` comment or a string."""
    for m in _SCAN.finditer(text, ls):
        if m.end() > q:
            return m.start() < q or m.group() not in ("{", "}")
    return False


def _tokens(text: str):
    """``_braces`` for any text: every comment, string and brace, in one regular-expression scan."""
    pos = 0
    search = _SCAN.search
    while True:
        m = search(text, pos)
        if m is None:
            return
        pos = m.end()
        if m.group() in ("{", "}"):
            jump = yield m.start()
            if jump is not None:
                pos = jump
                yield None


def _units(text: str, braces) -> list[Unit] | None:
    out: list[Unit] = []
    depth = 0
    open_at = -1
    prev_end = 0
    head = None
    for q in braces:
        if text[q] == "{":
            if depth == 0:
                open_at = q
                try:
                    head = _header(text, prev_end, open_at)
                except _Uncuttable:
                    return None
                if head is not None and head[0] == "section":
                    # no brace inside a section (the grammar's SECTION token ends at the first '}'): jump there
                    close = text.find("}", q + 1)
                    sec = _SECTION.match(text, head[2])  # from the keyword
                    if close < 0 or sec is None or sec.end() != close + 1:
                        return None
                    u = _unit(text, head, open_at, close)
                    if u is None:
                        return None
                    out.append(u)
                    prev_end = u.end
                    braces.send(u.end)
                    continue
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                if head is None:  # an initializer `= {1, 2}`: its values are left out, the rest is shared text
                    if _VALUE.search(text, open_at + 1, q):
                        out.append(Unit("init", open_at, q + 1, text.count("\n", open_at, q), open_at, q))
                    prev_end = q + 1
                    continue
                u = _unit(text, head, open_at, q)
                if u is None:
                    return None
                out.append(u)
                prev_end = u.end
    if depth != 0:
        return None
    return out


def _unit(text: str, head: tuple[str, int, int, int], open_at: int, close: int) -> Unit | None:
    """The unit whose header is ``head`` and whose braces are at ``open_at`` and ``close``; None when something
    other than ``;`` follows the closing brace on its line."""
    kind, start, _kw, kw_end = head
    nl = text.find("\n", close)
    end = len(text) if nl < 0 else nl + 1
    if text[close + 1:end].strip() not in ("", ";"):
        return None
    name = None
    if kind != "section":
        m = _NAME.match(text, kw_end, open_at)
        name = m.group(1) if m else None
    return Unit(kind, start, end, text.count("\n", start, end), open_at, close, name)


#: Comments, strings and the keywords that open a top-level item, in one scan (a keyword inside a comment or a
#: string is consumed by the comment or string alternative).
_HEAD_SCAN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\.(entry|func|section)\b', re.S)
#: What may precede the keyword on its line: blanks and linkage directives (PTX ISA §11.6).
_LINKAGE = re.compile(r"[ \t]*(?:\.(?:visible|weak|extern|common)[ \t]+)*")


class _Uncuttable(Exception):
    """The text cannot be cut at line starts: an item's first line also holds something else, or a top-level
    brace group is neither a function, a section nor an initializer."""


def _header(text: str, lo: int, brace: int) -> tuple[str, int, int, int] | None:
    """The kind, line start, keyword start and keyword end of the item whose body opens at ``brace``: the last
    ``.entry``/``.func``/``.section`` keyword between ``lo`` and the brace outside comments and strings; None for
    an initializer (``= {...}``).  Raises _Uncuttable when there is no keyword, or something other than linkage
    directives precedes the keyword on its line."""
    j = brace - 1
    while j >= lo and text[j].isspace():
        j -= 1
    if j >= lo and text[j] == "=":
        return None  # an initializer: `=` and blanks before the brace
    last = None
    for m in _HEAD_SCAN.finditer(text, lo, brace):
        if m.group(1):
            last = m
    if last is None:
        raise _Uncuttable()
    start = text.rfind("\n", 0, last.start()) + 1
    if start < lo or _LINKAGE.fullmatch(text, start, last.start()) is None:
        raise _Uncuttable()
    return last.group(1), start, last.start(), last.end()


# ------------------------------------------------------------------------------------------ what is needed

#: A direct call's target: ``call{.uni} [(rets),] name`` followed by ``,`` or ``;`` (blanks may precede ``.uni``).
_DIRECT = re.compile(r"(?:\s*\.uni)?\s*(?:\([^()]*\)\s*,\s*)?[A-Za-z_$][\w$]*\s*[,;]")
_WORD = re.compile(r"[A-Za-z_$%][\w$]*")


@dataclass(slots=True)
class _Calls:
    """What the scan reads of one function body: whether ``tcgen05`` occurs in it, the names of the functions its
    call statements mention, and whether one of its calls is (or may be) indirect."""

    tcgen05: bool
    names: set[str] = field(default_factory=set)
    indirect: bool = False


def _calls(text: str, u: Unit, functions: set[str]) -> _Calls:
    c = _Calls(text.find("tcgen05", u.open, u.close) >= 0)
    find = text.find
    pos = u.open
    while True:
        i = find("call", pos, u.close)
        if i < 0:
            return c
        pos = i + 4
        if _NAME_CHAR(text[i - 1]) or text[i - 1] in ".%" or _NAME_CHAR(text[pos]):
            continue  # part of a longer name, a register, or .callprototype
        semi = find(";", pos, u.close)
        if semi < 0:
            c.indirect = True
            continue
        stmt = text[pos:semi + 1]
        if _DIRECT.match(stmt) is None:
            c.indirect = True  # through a register, or a form the scan does not read
        c.names.update(w for w in _WORD.findall(stmt) if w in functions)


def _NAME_CHAR(ch: str) -> bool:
    return ch.isalnum() or ch in "_$"


def needed(text: str, us: list[Unit]) -> list[bool] | None:
    """For each unit of ``us``: whether the analyses need it (see the module docstring; sections never), or None
    when a function's name cannot be read (then every function is needed)."""
    fns = [k for k, u in enumerate(us) if u.kind in ("entry", "func")]
    if any(us[k].name is None for k in fns):
        return None
    names = {us[k].name for k in fns}
    by_name: dict[str, list[int]] = {}
    for k in fns:
        by_name.setdefault(us[k].name, []).append(k)
    info = {k: _calls(text, us[k], names) for k in fns}
    callers: dict[str, list[int]] = {}
    for k in fns:
        for n in info[k].names:
            callers.setdefault(n, []).append(k)
    keep = {k for k in fns if info[k].tcgen05}

    def up(work: list[int]) -> None:  # callers of needed functions, transitively
        while work:
            k = work.pop()
            for j in callers.get(us[k].name, ()):
                if j not in keep:
                    keep.add(j)
                    work.append(j)

    up(list(keep))
    while any(us[k].kind == "func" for k in keep):  # an indirect call may reach a needed .func
        more = [k for k in fns if info[k].indirect and k not in keep]
        if not more:
            break
        keep.update(more)
        up(more)
    work = list(keep)
    while work:  # callees of needed functions, transitively
        k = work.pop()
        for n in info[k].names:
            for j in by_name[n]:
                if j not in keep:
                    keep.add(j)
                    work.append(j)
    return [k in keep for k in range(len(us))]


# ------------------------------------------------------------------------------------------ the layout


@dataclass(slots=True)
class Layout:
    """``text`` with its ``units`` and, per unit, whether it is ``keep`` (needed, read whole); sections and the
    other functions are left out of ``pruned`` and ``parts``.  ``lines``: the text's lines (a final newline ends
    the last line); ``code_lines``: the lines the grammar reads, i.e. less those of sections, of initializer
    lists and of the bodies of functions that are not needed (the line of each stub's braces counts)."""

    text: str
    units: list[Unit]
    keep: list[bool]
    lines: int = 0
    code_lines: int = 0

    def __post_init__(self) -> None:
        t = self.text
        self.lines = t.count("\n") + (0 if t.endswith("\n") else 1)
        left = 0
        for u, k in zip(self.units, self.keep):
            if not k:
                left += t.count("\n", u.open, u.close) if u.kind in ("entry", "func") else u.lines
        self.code_lines = self.lines - left

    @property
    def skips(self) -> bool:
        """Whether anything is left out."""
        return not all(self.keep)

    @property
    def kernels(self) -> list[Unit]:
        """The needed ``.entry`` units."""
        return [u for u, k in zip(self.units, self.keep) if k and u.kind == "entry"]

    def pruned(self) -> str:
        """The text the grammar reads (see the module docstring): every needed function, stubs for the others."""
        return self.render(frozenset())

    def render(self, blank: frozenset[int]) -> str:
        """The text with sections blanked, initializer lists as ``{0}``, functions that are not needed as stubs,
        and the units whose indices are in ``blank`` blanked too (each with its line breaks)."""
        t = self.text
        pieces = []
        pos = 0
        for i, (u, k) in enumerate(zip(self.units, self.keep)):
            if k and i not in blank:
                continue
            if k or u.kind == "section":
                pieces.append(t[pos:u.start])
                pieces.append("\n" * u.lines)
            elif u.kind == "init":  # one value for the list (the IR keeps no initial values)
                pieces.append(t[pos:u.open + 1])
                pieces.append("0" + "\n" * u.lines)
                pieces.append("}")
            else:  # a stub: the header, the body's line breaks, the closing brace's line
                pieces.append(t[pos:u.open + 1])
                pieces.append("\n" * t.count("\n", u.open, u.close))
                pieces.append(t[u.close:u.end])
            pos = u.end
        pieces.append(t[pos:])
        return "".join(pieces)

    def parts(self, n: int) -> list[Part] | None:
        """The pruned text cut into at most ``n`` parts of about equal work (bytes of the needed kernels),
        each rendered on demand (``Part.text``).  Every part keeps the shared text, the stubs and all needed
        ``.func`` definitions; each needed ``.entry`` is in exactly one part; each ``.func`` is owned (analysed)
        by the first part.  None when there are fewer than two needed kernels or ``n`` < 2."""
        us = self.units
        entries = [i for i, (u, k) in enumerate(zip(us, self.keep)) if k and u.kind == "entry"]
        if n < 2 or len(entries) < 2:
            return None
        n = min(n, len(entries))
        bins: list[set[int]] = [set() for _ in range(n)]
        load = [0] * n
        for i in sorted(entries, key=lambda i: -(us[i].end - us[i].start)):
            k = min(range(n), key=lambda b: load[b])
            bins[k].add(i)
            load[k] += us[i].end - us[i].start
        funcs = {i for i, (u, k) in enumerate(zip(us, self.keep)) if k and u.kind == "func"}
        first_line: list[int] = []
        line, pos = 1, 0
        for u in us:
            line += self.text.count("\n", pos, u.start)
            first_line.append(line)
            pos = u.start
        out = []
        for k, mine in enumerate(bins):
            owned = sorted(mine | funcs) if k == 0 else sorted(mine)
            out.append(Part(self, frozenset(i for i in entries if i not in mine),
                            [(first_line[i], first_line[i] + us[i].lines - 1) for i in owned]))
        return out


@dataclass(slots=True)
class Part:
    """One part of ``Layout.parts``: the layout, the kernels it leaves blank (unit indices) and the 1-based line
    ranges ``(first, last)`` of the functions it analyses (``owned``)."""

    layout: Layout
    blank: frozenset
    owned: list[tuple[int, int]]

    def text(self) -> str:
        return self.layout.render(self.blank)


def layout(text: str, prune: bool = True) -> Layout | None:
    """The layout of ``text``: with ``prune``, only the functions the analyses need are kept (``needed``), else
    every function (sections are left out either way).  None when the text cannot be cut (``units``)."""
    us = units(text)
    if us is None:
        return None
    keep = needed(text, us) if prune else None
    if keep is None:
        keep = [u.kind in ("entry", "func") for u in us]
    return Layout(text, us, keep)


def parts(text: str, n: int, prune: bool = True) -> list[tuple[str, list[tuple[int, int]]]] | None:
    """``(part_text, owned)`` for each part of ``layout(text, prune).parts(n)`` (None when the text cannot be cut
    or has fewer than two needed kernels)."""
    lay = layout(text, prune)
    cut = lay.parts(n) if lay is not None else None
    if cut is None:
        return None
    return [(p.text(), p.owned) for p in cut]
