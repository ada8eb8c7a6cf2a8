"""One unfinished function must not swallow the rest of the file: a brace left open while typing (``if (x) {``
without its ``}``) makes the C++ parser read every later function as part of that one, so none of them would be
analysed.  ``close_unfinished`` closes such a function just before the next line that starts a function at the
left margin, with a character C++ does not allow before the braces (``@``), so that function is still reported as
not readable (TM901) and the ones after it are read as written.  The characters go on the blank line before that
function (or at the start of its first line when there is none), so no other line or column moves."""

from __future__ import annotations

import re

#: A line that starts a function (or template) at the left margin.
_START = re.compile(r"(?:template\s*<|(?:static\s+|inline\s+|extern\s+\"C\"\s+)*__(?:global|device|host)__\b)")
#: What the scan steps over: comments, string and character literals, preprocessor lines, braces, and ``;``.
_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|^[ \t]*#[^\n]*|[{};]|\n',
                    re.S | re.M)
#: Before a ``{``: what makes it a scope that may hold functions (a namespace, a class) rather than a body.
_SCOPE = re.compile(r"\b(?:namespace|struct|class|union|enum)\b|\bextern\s*\"C\"")


def close_unfinished(text: str) -> str:
    """``text`` with each function still open at a left-margin function start closed there (see the module
    docstring); the text itself when none is."""
    stack: list[bool] = []  # per open brace: does it open code (True) or a namespace / extern "C" scope
    last = 0  # where the current statement or header began
    inserts: list[tuple[int, str]] = []  # (offset, what to insert there)
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok == "\n":
            nxt = m.end()
            if any(stack) and _START.match(text, nxt):
                code = sum(stack)
                inserts.append(_where(text, m.start(), nxt, code))
                stack = [s for s in stack if not s]
            continue
        if tok == "{":
            stack.append(not _SCOPE.search(text, last, m.start()))
            last = m.end()
        elif tok == "}":
            if stack:
                stack.pop()
            last = m.end()
        elif tok == ";":
            last = m.end()
    if not inserts:
        return text
    out, pos = [], 0
    for at, add in inserts:
        out.append(text[pos:at])
        out.append(add)
        pos = at
    out.append(text[pos:])
    return "".join(out)


def _where(text: str, nl: int, start: int, n: int) -> tuple[int, str]:
    """Where the ``n`` closing braces go and how they are written: at the end of the line that ends at ``nl`` when
    it is blank (no column moves), else at the start of the function's line ``start`` (only that line's columns
    move: a line before it may be a preprocessor directive or a comment, where braces would not count)."""
    prev = text.rfind("\n", 0, nl) + 1
    if not text[prev:nl].strip():
        return nl, " @" + "}" * n
    return start, "@" + "}" * n + " "
