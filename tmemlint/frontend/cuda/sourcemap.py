"""What the preprocessor gives back: the output text with its map to the input (``SourceMap``: output bytes →
1-based line and column of the virtual input, the main file followed by every header read), the files read
(``SourceFile``), the quoted includes not found, and the ``#if`` regions that could not be decided."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field

from tmemlint.frontend.cuda.macros import Macro

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@dataclass(slots=True)
class Region:
    """An ``#if`` group whose condition is not decidable: no branch of it was kept.  Lines are 1-based input lines
    (``#if`` … ``#endif``); offsets are input character offsets; ``names`` are identifiers written before a ``(``
    inside the group (the functions it may define or call)."""

    line: int
    end_line: int
    start: int
    end: int
    condition: str
    names: frozenset[str]


class SourceMap:
    """Maps byte offsets of the preprocessed text (what tree-sitter sees) to 1-based ``(line, column)`` of the
    input (columns count characters)."""

    def __init__(self, src: str, out: str, segs: list[tuple[int, int, bool]]):
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", src)]
        self._seg_out = [s[0] for s in segs]
        self._segs = segs
        data = out.encode("utf-8", "surrogatepass")
        self.data = data
        # byte → character: where the text is ASCII they are equal; past each multi-byte character the byte
        # offset runs ahead by its extra bytes.  Kept per multi-byte character (their byte starts, character
        # offsets and the extra bytes before each), so that the map costs nothing for ASCII text and one regex
        # pass otherwise.
        self._mb_byte: list[int] = []
        self._mb_char: list[int] = []
        self._mb_extra: list[int] = []  # extra bytes of the multi-byte characters up to and including this one
        if len(data) != len(out):
            extra = 0
            for m in _NON_ASCII.finditer(out):
                c = m.start()
                self._mb_byte.append(c + extra)
                self._mb_char.append(c)
                extra += len(m.group(0).encode("utf-8", "surrogatepass")) - 1
                self._mb_extra.append(extra)
        self._nbytes = len(data)

    def _char_of(self, byte: int) -> int:
        """The character offset of output byte ``byte`` (a byte inside a multi-byte character: that character)."""
        byte = max(0, min(byte, self._nbytes))
        k = bisect_right(self._mb_byte, byte) - 1
        if k < 0:
            return byte
        c, total = self._mb_char[k], self._mb_extra[k]
        before = total - (self._mb_extra[k] - (self._mb_extra[k - 1] if k else 0))  # extra bytes before it
        if byte - self._mb_byte[k] <= total - before:  # inside character k
            return c
        return byte - total

    def input_offset(self, byte: int) -> int:
        """The input character offset that output byte ``byte`` comes from."""
        c = self._char_of(byte) if self._mb_byte else byte
        k = bisect_right(self._seg_out, c) - 1
        if k < 0:
            return 0
        out0, in0, verbatim = self._segs[k]
        return in0 + (c - out0) if verbatim else in0

    def line_col(self, byte: int) -> tuple[int, int]:
        """1-based input ``(line, column)`` of output byte ``byte``."""
        return self.offset_line_col(self.input_offset(byte))

    def offset_line_col(self, off: int) -> tuple[int, int]:
        """1-based ``(line, column)`` of input character offset ``off``."""
        ln = bisect_right(self._line_starts, off)
        return ln, off - self._line_starts[ln - 1] + 1


@dataclass(slots=True)
class SourceFile:
    """One file of the translation unit: ``path`` as findings show it, ``first_line`` its first virtual line (1
    for the main file), ``lines`` its number of lines, ``text`` its contents (newlines normalised)."""

    path: str
    first_line: int
    lines: int
    text: str


@dataclass(slots=True)
class MissingInclude:
    """A quoted ``#include`` that was found nowhere: the name as written, the virtual line of the directive, and
    the folders searched (in order)."""

    name: str
    line: int
    searched: tuple[str, ...]


@dataclass(slots=True)
class Preprocessed:
    """The result of ``preprocess``: ``text`` for tree-sitter (``map.data`` is it in UTF-8), the map back to the
    input (virtual offsets: see the module docstring), the undecidable regions, the macros defined at the end of
    the translation unit, the files read (``files[0]`` is the main file) and the quoted includes not found."""

    text: str
    map: SourceMap
    regions: list[Region] = field(default_factory=list)
    macros: dict[str, Macro] = field(default_factory=dict)
    files: list[SourceFile] = field(default_factory=list)
    missing: list[MissingInclude] = field(default_factory=list)
    angle: list[str] = field(default_factory=list)
    #: why nothing of the file was read (``preprocess.TooLarge``: the translation unit is past the budget of
    #: source mode); the text is then the main file blanked
    too_large: Exception | None = None

    def locate(self, line: int) -> tuple[str, int]:
        """``(path, line)`` of virtual line ``line``."""
        for f in reversed(self.files):
            if line >= f.first_line:
                return f.path, line - f.first_line + 1
        return self.files[0].path if self.files else "", line
