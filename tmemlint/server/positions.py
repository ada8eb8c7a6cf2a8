"""Positions: findings carry 1-based line/column in characters (code points of the document's text, lines ended by
``\\n``); LSP positions are 0-based lines and columns in the code units of the negotiated ``positionEncoding``
(LSP 3.17 §PositionEncodingKind: ``utf-16`` by default, ``utf-8`` and ``utf-32`` when the client offers them).
``Lines`` converts between the two with the document text."""

from __future__ import annotations

from lsprotocol import types as lsp

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(s: str, encoding: str) -> int:
    """The length of ``s`` in code units of ``encoding`` (utf-8 bytes, utf-16 units, utf-32 code points)."""
    if encoding == UTF32 or s.isascii():
        return len(s)
    if encoding == UTF8:
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)


def chars(s: str, n: int, encoding: str) -> int:
    """How many characters of ``s`` the first ``n`` code units of ``encoding`` hold (a position inside a character
    counts it whole; past the end: ``len(s)``)."""
    if encoding == UTF32 or s.isascii():
        return min(n, len(s))
    got = 0
    for i, c in enumerate(s):
        if got >= n:
            return i
        got += units(c, encoding)
    return len(s)


class Lines:
    """The lines of one document's text (split at ``\\n``; a ``\\r`` before it is not part of the line, as the
    engine counts them), converting finding positions to LSP positions in ``encoding`` and back."""

    def __init__(self, text: str, encoding: str = UTF16):
        self.lines = text.split("\n")
        self.encoding = encoding

    def line(self, k: int) -> str:
        """Line ``k`` (0-based), without its end; empty past the end."""
        if 0 <= k < len(self.lines):
            s = self.lines[k]
            return s[:-1] if s.endswith("\r") else s
        return ""

    def position(self, line: int, column: int) -> lsp.Position:
        """The LSP position of 1-based ``line``/``column`` (characters); a column past the line's end is its end."""
        k = max(line - 1, 0)
        text = self.line(k)
        return lsp.Position(line=k, character=units(text[:max(column - 1, 0)], self.encoding))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
        """The LSP range of a finding's span (end exclusive); an end before the start is the start."""
        start = self.position(line, column)
        end = self.position(end_line, end_column)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return lsp.Range(start=start, end=end)

    def end_of_line(self, k: int) -> lsp.Position:
        """The position after the last character of line ``k`` (0-based)."""
        return lsp.Position(line=k, character=units(self.line(k), self.encoding))

    def column(self, pos: lsp.Position) -> tuple[int, int]:
        """The 1-based (line, column in characters) of an LSP position."""
        return pos.line + 1, chars(self.line(pos.line), pos.character, self.encoding) + 1
