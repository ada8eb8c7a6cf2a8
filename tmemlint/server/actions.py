"""Code actions on tmemlint's diagnostics: insert a suppression comment for a finding (``tmemlint.suppress``
syntax: ``// tmemlint: disable=CODE`` at the end of its line, or the code added to a ``disable`` directive already
there; ``/* ... */`` before a macro's line-continuation backslash; ``disable-file`` at the top of the file), and
remove an unused one (TM902: the directive, or only its unused codes)."""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from tmemlint.server.positions import Lines
from tmemlint.suppress import DIRECTIVE_RE, parse_directives

_CODE = re.compile(r"TM\d{3}")
_UNKNOWN = re.compile(r"'([^']*)'")


def _edit(lines: Lines, line: int, col: int, end_line: int, end_col: int, new: str) -> lsp.TextEdit:
    """A text edit replacing 1-based ``line:col`` up to ``end_line:end_col`` (characters, end exclusive)."""
    return lsp.TextEdit(range=lsp.Range(start=lines.position(line, col), end=lines.position(end_line, end_col)),
                        new_text=new)


def _action(title: str, uri: str, edits: list[lsp.TextEdit], diag: lsp.Diagnostic,
            preferred: bool = False) -> lsp.CodeAction:
    return lsp.CodeAction(title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag],
                          is_preferred=preferred or None,
                          edit=lsp.WorkspaceEdit(changes={uri: edits}))


def suppress_actions(uri: str, text: str, lines: Lines, diag: lsp.Diagnostic) -> list[lsp.CodeAction]:
    """Actions silencing the finding ``diag`` (a diagnostic this server published): on its line, in the file."""
    code = str(diag.code)
    line, _ = lines.column(diag.range.start)
    s = lines.line(line - 1)
    existing = [d for d in parse_directives(text)
                if d.kind == "disable" and d.target == line and d.problem is None]
    if existing:
        d = existing[-1]
        edit = _edit(lines, line, d.end_column, line, d.end_column, f",{code}")
    elif s.rstrip().endswith("\\"):  # a macro continues on the next line: a block comment before the backslash
        at = len(s.rstrip()) - 1
        edit = _edit(lines, line, at + 1, line, at + 1, f"/* tmemlint: disable={code} */ ")
    else:
        edit = _edit(lines, line, len(s) + 1, line, len(s) + 1, f" // tmemlint: disable={code}")
    out = [_action(f"Suppress {code} on this line", uri, [edit], diag, preferred=True)]
    files = [d for d in parse_directives(text) if d.kind == "disable-file" and d.problem is None]
    if files:
        d = files[0]
        fedit = _edit(lines, d.line, d.end_column, d.line, d.end_column, f",{code}")
    else:
        fedit = _edit(lines, 1, 1, 1, 1, f"// tmemlint: disable-file={code}\n")
    out.append(_action(f"Suppress {code} in this file", uri, [fedit], diag))
    return out


def remove_unused_action(uri: str, text: str, lines: Lines, diag: lsp.Diagnostic) -> lsp.CodeAction | None:
    """The action removing the unused suppression that TM902 diagnostic ``diag`` points at: the whole directive
    comment when none of its codes is used (the whole line when nothing else is on it), else only the unused
    codes from its list."""
    line, col = lines.column(diag.range.start)
    d = next((d for d in parse_directives(text) if d.line == line and d.column == col), None)
    if d is None:
        return None
    s = lines.line(line - 1)
    m = DIRECTIVE_RE.match(s, d.column - 1)
    if m is None:
        return None
    drop: set[str] = set()
    if d.problem is None:
        msg = diag.message
        if msg.startswith("unknown rule"):
            drop = set(_UNKNOWN.findall(msg.split(" in suppression")[0]))
        else:
            drop = set(_CODE.findall(msg.split(" reported nothing")[0]))
    keep = [w for w, c in d.codes if not (w in drop or (c is not None and c in drop))]
    if d.problem is None and keep and len(keep) < len(d.codes):
        edit = _edit(lines, line, m.start("codes") + 1, line, m.end("codes") + 1, ",".join(keep))
        return _action(f"Remove the unused {', '.join(sorted(drop))} from the suppression", uri, [edit], diag, True)
    start, end = m.start(), m.end()
    if s.startswith("/*", start):
        close = s.find("*/", end)
        end = len(s) if close < 0 else close + 2
    elif not s[end:].strip():
        end = len(s)
    while start > 0 and s[start - 1] in " \t":
        start -= 1
    if not s[:start].strip() and not s[end:].strip():  # nothing else on the line: remove the line
        edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=line - 1, character=0),
                                            end=lsp.Position(line=line, character=0)), new_text="")
    else:
        edit = _edit(lines, line, start + 1, line, end + 1, "")
    return _action("Remove the unused suppression", uri, [edit], diag, True)
