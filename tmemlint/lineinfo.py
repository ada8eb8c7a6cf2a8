"""Findings of a PTX file built with line info (``nvcc -lineinfo``, CUTLASS and CuTe DSL builds) moved to the CUDA
lines they came from, so that a user lands in their ``.cu``, not on line 140,095 of generated text.

PTX line info is ``.file N "name"`` plus ``.loc N LINE COLUMN [, function_name …, inlined_at N LINE COLUMN]``
directives (PTX ISA 9.0 §11.5.3 ``.loc``, §11.5.4 ``.file``): every instruction after a ``.loc`` comes from that
source position until the next one.  ``relocate`` moves a finding of such a file to the source position of its
instruction when the named source file exists here (``.file`` names are taken relative to the PTX file's
folder, else to the current folder, else as absolute paths):

* the finding's place becomes the CUDA file, line and column (paths relative to the current folder); for an
  instruction written as inline ``asm`` the column is where the instruction's text starts in the asm string,
  the place source mode reports, since nvcc's ``.loc`` names the statement's last operand line;
* the PTX position stays as the first related place (``the PTX instruction``), the other related places and
  code-flow steps move the same way, and ``inlined_at`` call sites become ``called from here (inlined)``;
* a finding placed in a library header (``library``: CUTLASS, CuTe, cccl, the toolkit, ``-isystem`` folders,
  ``library-paths``; ``tmemlint.libraries``) moves to the user's frame of its inline chain, the call into the
  library (the chain continues through the ``.loc`` of each call site: nvcc names one site per ``.loc``); the
  header place becomes the related place ``in this library header``;
* ``line N`` in the message becomes the CUDA line of PTX line N;
* findings of one rule that move to the same source position (the PTX instructions of an unrolled loop, or the
  inlined copies of a helper) are one finding there (rules catalog "Grouping"): related places and code-flow steps
  are merged, and so are the affected places of a grouped finding (``Finding.group``), whose count is recounted;
* fingerprints are those of the CUDA line (``tmemlint.fingerprint``), so a finding of ``k.ptx`` and the same
  finding of ``k.cu`` (source or compile mode) are one finding, which the CLI reports once.

A finding whose instruction has no ``.loc``, or whose source file is not here, stays on its PTX line; a
related place then names the recorded source position.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Mapping, MutableMapping, Protocol, Sequence

from tmemlint.findings import Finding, Group, Related
from tmemlint.ir import Module

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_HEADER = re.compile(r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\b")
_MNEMONIC = re.compile(r"^\s*(?:@!?%?[\w$]+\s+)?([a-z][\w.:]*)")
_LINE_REF = re.compile(r"\bline (\d+)\b")
#: How many lines above nvcc's ``.loc`` line an inline-asm statement's text is searched for.
ASM_LOOKBACK = 12


@dataclass(frozen=True, slots=True)
class Loc:
    """A source position of one PTX line: the ``.file`` name as recorded, 1-based line and column (column 0:
    unknown), and the call sites it was inlined into (innermost first)."""

    file: str
    line: int
    column: int
    inlined_at: tuple[tuple[str, int, int], ...] = ()


def line_locations(ptx_text: str) -> dict[int, Loc]:
    """PTX line number (1-based) → ``Loc`` for every line after a ``.loc`` in the same function (lines with
    ``.loc 0`` or an unknown file number get none)."""
    lines = ptx_text.split("\n")
    files: dict[int, str] = {}
    for line in lines:  # nvcc puts the .file directives after the functions
        if ".file" in line:
            m = _FILE.match(line)
            if m:
                files[int(m.group(1))] = m.group(2)
    out: dict[int, Loc] = {}
    current: Loc | None = None
    for n, line in enumerate(lines, 1):
        s = line.lstrip()
        if not s or s.startswith("//") or s.startswith(".file"):
            continue
        if s.startswith(".loc"):
            m = _LOC.match(line)
            current = None
            if m and int(m.group(2)) > 0 and int(m.group(1)) in files:
                sites = tuple((files[int(f)], int(ln), int(c)) for f, ln, c in _INLINED.findall(m.group(4))
                              if int(f) in files and int(ln) > 0)
                current = Loc(files[int(m.group(1))], int(m.group(2)), int(m.group(3)), sites)
            continue
        if _HEADER.match(line):
            current = None
            continue
        if current is not None:
            out[n] = current
    return out


#: ``_FILE`` over a whole text: whitespace never crosses a line break, so it matches exactly the lines it matches
_FILE_TEXT = re.compile(r'^[^\S\n]*\.file[^\S\n]+(\d+)[^\S\n]+"([^"\n]*)"', re.M)


class LazyLineLocations:
    """``line_locations`` of a text split into ``lines``, computed only for the lines asked about: a finding's line
    walks back to the ``.loc`` (or function header) that governs it, instead of the whole file being mapped (a
    CUTLASS example has a million lines and a few findings).  ``get(n)`` and ``[n]`` as on the dict."""

    def __init__(self, text: str, lines: list[str]):
        self.lines = lines
        self.files: dict[int, str] = {int(m.group(1)): m.group(2) for m in _FILE_TEXT.finditer(text)}
        self._memo: dict[int, Loc | None] = {}
        self._locs: dict[int, Loc | None] = {}  # line of a ``.loc`` -> its Loc

    def _loc(self, k: int) -> Loc | None:
        """The ``Loc`` of the ``.loc`` directive on line ``k`` (1-based), memoised: many findings share one."""
        if k in self._locs:
            return self._locs[k]
        got = self._locs[k] = self._parse_loc(self.lines[k - 1])
        return got

    def _parse_loc(self, line: str) -> Loc | None:
        files = self.files
        m = _LOC.match(line)
        if m and int(m.group(2)) > 0 and int(m.group(1)) in files:
            sites = tuple((files[int(f)], int(ln), int(c)) for f, ln, c in _INLINED.findall(m.group(4))
                          if int(f) in files and int(ln) > 0)
            return Loc(files[int(m.group(1))], int(m.group(2)), int(m.group(3)), sites)
        return None

    @staticmethod
    def _skipped(s: str) -> bool:
        return not s or s.startswith("//") or s.startswith(".file")

    def get(self, n: int, default=None):
        if n in self._memo:
            got = self._memo[n]
            return default if got is None else got
        got = None
        lines = self.lines
        if 1 <= n <= len(lines):
            s = lines[n - 1].lstrip()
            if not (self._skipped(s) or s.startswith(".loc") or _HEADER.match(lines[n - 1])):
                for k in range(n - 1, 0, -1):
                    line = lines[k - 1]
                    s = line.lstrip()
                    if self._skipped(s):
                        continue
                    if s.startswith(".loc"):
                        got = self._loc(k)
                        break
                    if _HEADER.match(line):
                        break
        self._memo[n] = got
        return default if got is None else got

    def __getitem__(self, n: int) -> Loc:
        got = self.get(n)
        if got is None:
            raise KeyError(n)
        return got


def snap_to_asm(lines: list[str] | None, line: int, column: int, opcode: str | None) -> tuple[int, int, int]:
    """``(line, column, end_column)`` of an instruction whose ``.loc`` is ``line``/``column``: where ``opcode`` (the
    instruction's dotted name, e.g. ``tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32``) starts inside a
    string on that line or up to ``ASM_LOOKBACK`` lines above it (an inline ``asm`` statement), else the
    ``.loc`` position itself (one column wide)."""
    col = max(column, 1)
    if opcode and lines:
        for ln in range(min(line, len(lines)), max(line - ASM_LOOKBACK, 0), -1):
            i = lines[ln - 1].find(opcode)
            if i >= 0 and '"' in lines[ln - 1][:i]:
                return ln, i + 1, i + 1 + len(opcode)
        # the asm text may hold an operand reference where nvcc put an immediate's value (cta_group::%2)
        pattern = _substituted(opcode)
        for ln in range(min(line, len(lines)), max(line - ASM_LOOKBACK, 0), -1):
            m = pattern.search(lines[ln - 1])
            if m is not None and '"' in lines[ln - 1][:m.start()]:
                return ln, m.start() + 1, m.end() + 1
    return line, col, col + 1


_OPERAND_REF = r"%(?:[0-9]+|\[[A-Za-z_]\w*\])"


def _substituted(opcode: str) -> re.Pattern:
    """``opcode`` as an asm template may spell it: every qualifier value after the first component may be an
    operand reference (``%2``, ``%[group]``) that nvcc replaced by an immediate's value."""
    pieces = re.split(r"(\.|::)", opcode)
    out = [re.escape(pieces[0])]
    for k in range(1, len(pieces), 2):
        out.append(re.escape(pieces[k]))
        out.append(f"(?:{re.escape(pieces[k + 1])}|{_OPERAND_REF})")
    return re.compile("".join(out) + r"(?![\w.:])")


class _Mapper:
    def __init__(self, ptx_text: str, ptx_path: str, sources: MutableMapping[str, str]):
        from tmemlint.pathnames import display_path

        self.display = display_path
        self.ptx_lines = ptx_text.split("\n")
        self.locs = LazyLineLocations(ptx_text, self.ptx_lines)
        self.folder = os.path.dirname(os.path.abspath(ptx_path))
        self.sources = sources
        self.resolved: dict[str, str | None] = {}
        self._lines: dict[str, list[str]] = {}  # display path -> its text split into lines, once per file

    def file(self, name: str) -> str | None:
        """The display path of the recorded source file ``name``, or None when it is not here."""
        if name not in self.resolved:
            found = None
            for cand in ([name] if os.path.isabs(name) else [os.path.join(self.folder, name), name]):
                if os.path.isfile(cand):
                    found = self.display(os.path.normpath(cand))
                    break
            self.resolved[name] = found
        return self.resolved[name]

    def text(self, path: str) -> list[str] | None:
        """The lines of the source file ``path`` (read once into ``sources``), or None when it cannot be read."""
        hit = self._lines.get(path)
        if hit is not None:
            return hit
        if path not in self.sources:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    self.sources[path] = fh.read()
            except OSError:
                return None
        hit = self._lines[path] = self.sources[path].split("\n")
        return hit

    def place(self, ptx_line: int) -> tuple[str, int, int, int] | None:
        """``(path, line, column, end_column)`` in the source of the instruction on ``ptx_line``, or None."""
        loc = self.locs.get(ptx_line)
        if loc is None:
            return None
        path = self.file(loc.file)
        if path is None:
            return None
        m = _MNEMONIC.match(self.ptx_lines[ptx_line - 1]) if ptx_line <= len(self.ptx_lines) else None
        return (path, *snap_to_asm(self.text(path), loc.line, loc.column, m.group(1) if m else None))

    def related(self, r: Related) -> Related:
        got = self.place(r.line) if r.path == self.ptx_path else None
        return r if got is None else Related(got[0], got[1], got[2], r.message, r.thread)

    def message(self, text: str, shown: str) -> str:
        def sub(mo: re.Match) -> str:
            got = self.place(int(mo.group(1)))
            if got is None:
                return mo.group(0)
            return f"line {got[1]}" if got[0] == shown else f"{got[0]}:{got[1]}"

        return _LINE_REF.sub(sub, text)


_LOC_INLINED = re.compile(r"^[^\S\n]*\.loc[^\S\n]+(\d+)[^\S\n]+(\d+)[^\S\n]+(\d+)\b[^\n]*?\binlined_at[^\S\n]+"
                          r"(\d+)[^\S\n]+(\d+)[^\S\n]+(\d+)", re.M)


def inline_chain(ptx_text: str) -> dict[tuple[str, int, int], tuple[str, int, int]]:
    """``(file, line, column)`` of a ``.loc`` → the call site it was inlined at, from every ``.loc … inlined_at``
    line of the PTX.  nvcc writes one site per ``.loc``: a helper of ``cute/…`` inlined into another one names
    that one, whose own ``.loc`` names the next call out, up to the kernel's."""
    files = {int(m.group(1)): m.group(2) for m in _FILE_TEXT.finditer(ptx_text)}
    out: dict[tuple[str, int, int], tuple[str, int, int]] = {}
    for m in _LOC_INLINED.finditer(ptx_text):
        f, site = files.get(int(m.group(1))), files.get(int(m.group(4)))
        if f is not None and site is not None:
            out.setdefault((f, int(m.group(2)), int(m.group(3))), (site, int(m.group(5)), int(m.group(6))))
    return out


def call_sites(first: tuple[tuple[str, int, int], ...], chain: dict, limit: int = 64) -> list[tuple[str, int, int]]:
    """The call sites of a position, innermost first: its own ``inlined_at`` sites ``first``, then each site's
    own site in ``chain`` (``inline_chain``), at most ``limit``."""
    sites = list(first)
    while len(sites) < limit and sites:
        nxt = chain.get(sites[-1])
        if nxt is None or nxt in sites:
            break
        sites.append(nxt)
    return sites


def relocate(findings: list[Finding], ptx_text: str, ptx_path: str,
             sources: MutableMapping[str, str] | None = None,
             library: Callable[[str], bool] | None = None) -> list[Finding]:
    """``findings`` of the PTX file ``ptx_path`` (text ``ptx_text``) moved to their CUDA source lines (see the
    module docstring).  ``sources`` (display path → text) is read for code frames and fingerprints, and gets the
    source files that were read.  Findings that stay on the PTX keep their fingerprints; moved ones get those of
    their CUDA lines.  ``library(path)`` says which source files are library headers (``tmemlint.libraries``): a
    finding placed in one moves to the innermost call site of its inline chain in the user's files (the call into
    the library), with the header place as a related place (``in this library header``)."""
    from tmemlint.fingerprint import assign_fingerprints

    if not findings:
        return []
    sources = {} if sources is None else sources
    m = _Mapper(ptx_text, ptx_path, sources)
    m.ptx_path = ptx_path
    out: list[Finding] = []
    moved: dict[str, list[Finding]] = {}
    first: dict[tuple, Finding] = {}  # (path, line, column, code, function) -> the moved finding there
    chain = None  # inline_chain(ptx_text), read when a finding falls in a library header
    for f in findings:
        got = m.place(f.line)
        if got is None:
            loc = m.locs.get(f.line)
            if loc is not None:
                f.related.insert(0, Related(loc.file, loc.line, max(loc.column, 1),
                                            "the CUDA source of this instruction (file not found here)"))
            out.append(f)
            continue
        path, line, col, end = got
        loc = m.locs[f.line]
        related = [Related(ptx_path, f.line, f.column, "the PTX instruction")]
        sites = list(loc.inlined_at)
        if library is not None and library(path):
            if chain is None:
                chain = inline_chain(ptx_text)
            sites = call_sites(loc.inlined_at, chain)
            user = next((k for k, (name, _, _) in enumerate(sites)
                         if m.file(name) is not None and (k == len(sites) - 1 or not library(m.file(name)))), None)
            if user is not None:  # the user's frame: the finding goes there, the header is a related place
                related.append(Related(path, line, col, "in this library header"))
                name, ln, c = sites[user]
                path, line, col = m.file(name), ln, max(c, 1)
                end = col + 1
                sites = sites[user + 1:]
        related += [m.related(r) for r in f.related]
        for name, ln, c in sites:
            site = m.file(name)
            if site is not None:
                related.append(Related(site, ln, max(c, 1), "called from here (inlined)"))
        group = None if f.group is None else Group(f.group.headline, ()).adding(m.related(r) for r in f.group.places)
        g = Finding(path, line, col, line, end, f.code, f.name, f.severity,
                    m.message(f.message, path) if group is None else group.message(path), related,
                    [m.related(s) for s in f.flow], f.function, origin=ptx_path, group=group)
        same = (path, line, col, f.code, f.function)
        if same in first:
            first[same].absorb(g)
            continue
        first[same] = g
        moved.setdefault(path, []).append(g)
        out.append(g)
    for path, group in moved.items():
        assign_fingerprints(group, m.text(path) or [])
    return out


# ------------------------------------------------------------------------ CUDA source mode (no PTX in between)


class SourceLines(Protocol):
    """What ``with_inline_context`` reads of a preprocessed CUDA file (``frontend.cuda.sourcemap.Preprocessed``):
    ``files[0]`` the main file (``path``, ``first_line``, ``lines``: its virtual lines, 1-based), then the
    included ones; ``locate(line)`` the ``(path, line)`` of a virtual line."""

    files: Sequence

    def locate(self, line: int) -> tuple[str, int]: ...


def with_inline_context(findings: list[Finding], module: Module, pre: SourceLines | None = None,
                        blind: Mapping[str, object] | None = None,
                        blind_codes: frozenset[str] = frozenset(),
                        library: Callable[[str], bool] | None = None) -> list[Finding]:
    """Findings of CUDA source mode (``tmemlint.frontend.cuda``), one per (line, column, code), each with the call
    sites of the inlined helper it points into as related locations ("called from here (inlined)"); findings in
    included headers moved to the header's path and line (``pre``: the preprocessed file's map of virtual lines);
    findings of ``blind_codes`` in a function of ``blind`` (one analysed without some of the code around it)
    dropped.  ``module`` is the lowered file; with no ``pre`` it is one file and nothing moves.  ``library(path)``:
    which headers are library code (``tmemlint.libraries``); a finding in one moves to the innermost call site in
    the user's files, the header place becoming a related place (``user_frame``)."""
    blind = blind or {}
    by_pos: dict[tuple[int, int], object] = {}
    for fn in module.functions:
        for inst in fn.instructions:
            key = (inst.span.line, inst.span.column)
            if key not in by_pos and inst.src is not None:
                by_pos[key] = inst.src
    seen: set = set()
    out = []
    for f in findings:  # in the rules' order: of the copies of one finding (an unrolled loop), the first stays
        if f.code in blind_codes and f.function in blind:
            continue
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
    if pre is not None and len(pre.files) > 1:
        out = [_relocated(f, pre) for f in out]
        if library is not None:
            out = [user_frame(f, library, pre.files[0].path) for f in out]
    return sorted(out, key=Finding.sort_key)


_CALLED = "called from here (inlined)"


def user_frame(f: Finding, library: Callable[[str], bool], main: str) -> Finding:
    """``f`` moved out of a library header (``library(f.path)``, never the main file ``main``) to the first of
    its call sites (``called from here (inlined)``, innermost first) in the user's files: the header place
    becomes the related place ``in this library header``, the call sites inside it are dropped."""
    if f.path == main or not library(f.path):
        return f
    sites = [r for r in f.related if r.message == _CALLED]
    user = next((k for k, r in enumerate(sites) if r.path == main or not library(r.path)), None)
    if user is None:
        return f
    to = sites[user]
    keep = [r for r in f.related if r.message != _CALLED]
    f.related = [Related(f.path, f.line, f.column, "in this library header")] + keep + sites[user + 1:]
    f.path, f.line, f.column, f.end_line, f.end_column = to.path, to.line, to.column, to.line, to.column + 1
    return f


def _relocated(f: Finding, pre: SourceLines) -> Finding:
    """``f`` with its virtual lines (see ``tmemlint.frontend.cuda.preprocess``) made file and line: the finding, its related places, and
    ``line N`` in its message."""
    main = pre.files[0]
    last = main.first_line + main.lines - 1

    def move(path: str, line: int) -> tuple[str, int]:
        return (path, line) if line <= last or path != main.path else pre.locate(line)

    f.path, f.line = move(f.path, f.line)
    if f.end_line > last:
        f.end_line = pre.locate(f.end_line)[1]
    f.related = [Related(*move(r.path, r.line), r.column, r.message) for r in f.related]
    f.flow = [Related(*move(r.path, r.line), r.column, r.message, r.thread) for r in f.flow]

    def ref(mo: re.Match) -> str:
        p, n = move(main.path, int(mo.group(1)))
        return f"line {n}" if p == f.path else f"{p}:{n}"

    f.message = _LINE_REF.sub(ref, f.message)
    return f
