"""Suppression comments in ``.ptx`` and ``.cu`` text, by rule code or name (either spelling, any case):

    tcgen05.alloc... [%r1], 96; // tmemlint: disable=TM102              this line
    // tmemlint: disable-next-line=TM101,tmem-leak                       the line after the comment
    // tmemlint: disable-file=TM301                                      the whole file (anywhere in it)

``/* tmemlint: ... */`` works too, and so does a comment inside a CUDA inline-asm string (nvcc copies it onto the
PTX line).  A finding is suppressed when its first line is the directive's target line.  A directive (or one of
its codes) that suppressed nothing is reported as TM902 unused-suppression at the comment, and so is a directive
that cannot be understood (unknown kind, unknown rule, no rule named) -- but only for rules that actually ran:
a suppression of a rule that is not selected is left alone.  A finding in an included header (source mode and
compile mode put it there) is silenced by a comment in the header, at its line there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from tmemlint.checks.registry import RULES, load_all, resolve
from tmemlint.findings import Finding

KINDS = ("disable", "disable-next-line", "disable-file")

_DIRECTIVE = re.compile(
    r"(?://|/\*)\s*tmemlint\s*:\s*(?P<kind>[A-Za-z][A-Za-z-]*)"
    r"(?:\s*=\s*(?P<codes>[A-Za-z0-9_-]+(?:\s*,\s*[A-Za-z0-9_-]+)*))?")
#: The directive's pattern: groups ``kind`` and ``codes`` (the comma list as written), from ``//`` or ``/*``.
DIRECTIVE_RE = _DIRECTIVE


@dataclass(slots=True)
class Directive:
    """One ``tmemlint:`` comment.  ``line``/``column``/``end_column`` (1-based, end exclusive) locate the comment
    text; ``target`` is the line it silences (None: the whole file); ``codes`` pairs each name as written with its
    rule code (None when unknown); ``used`` collects the codes that silenced a finding; ``problem`` explains a
    directive that cannot be applied at all (unknown kind, no codes)."""

    kind: str
    line: int
    column: int
    end_column: int
    target: int | None
    codes: list[tuple[str, str | None]] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    problem: str | None = None

    def covers(self, code: str, line: int) -> bool:
        """True when this directive silences rule ``code`` reported on ``line``."""
        if self.problem is not None or (self.target is not None and self.target != line):
            return False
        return any(c == code for _, c in self.codes)


def parse_directives(text: str) -> list[Directive]:
    """Every ``tmemlint:`` directive of ``text`` (PTX or CUDA), in file order.  Never raises."""
    load_all()
    out: list[Directive] = []
    if "tmemlint" not in text:
        return out  # most files: no need to split a million-line text into lines
    for n, line in enumerate(text.split("\n"), 1):  # lines as the parser counts them: only LF ends one
        if "tmemlint" not in line:
            continue
        for m in _DIRECTIVE.finditer(line):
            kind = m.group("kind").lower()
            d = Directive(kind, n, m.start() + 1, m.end() + 1, None)
            if kind not in KINDS:
                d.problem = f"unknown suppression directive 'tmemlint: {m.group('kind')}' " \
                            f"(expected {', '.join(KINDS)})"
            elif not m.group("codes"):
                d.problem = f"'tmemlint: {kind}' names no rule (write {kind}=CODE[,CODE...])"
            else:
                d.target = n if kind == "disable" else n + 1 if kind == "disable-next-line" else None
                d.codes = [(c.strip(), resolve(c.strip())) for c in m.group("codes").split(",")]
            out.append(d)
    return out


def _tm902(path: str, d: Directive, message: str) -> Finding:
    r = RULES["TM902"]
    return Finding(path, d.line, d.column, d.line, d.end_column, r.code, r.name, r.severity, message)


def _read(path: str) -> str:
    """The text of a file findings point into (an included header); empty when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def apply_suppressions(findings: Iterable[Finding], text: str, path: str, enabled: Callable[[str], bool],
                       report_unused: bool = True) -> list[Finding]:
    """The findings of one file that no directive of ``text`` silences, plus TM902 findings.

    ``enabled(code)`` tells whether a rule ran on this file (a suppression of a rule that did not run is not
    unused); TM902 findings are added only when ``report_unused`` is true and TM902 is enabled, and they can
    themselves be silenced by a ``disable…=TM902`` directive.  A finding in another file (``f.path`` is not
    ``path``: a header the file includes) is matched against that file's directives, which are not reported as
    unused (the header may be there for other files).  The input findings are not modified."""
    directives = parse_directives(text)
    findings = list(findings)
    elsewhere = {f.path for f in findings if f.path != path}
    if not directives and not elsewhere:
        return findings
    # a finding source mode (or compile mode's line info) moved into an included header is silenced by the
    # header's own comments, never by the main file's comment on the same line number
    others = {p: parse_directives(_read(p)) for p in sorted(elsewhere)}
    kept: list[Finding] = []
    for f in findings:
        hit = [d for d in (directives if f.path == path else others[f.path]) if d.covers(f.code, f.line)]
        for d in hit:
            d.used.add(f.code)
        if not hit:
            kept.append(f)
    if not (report_unused and enabled("TM902")):
        return kept
    extra: list[Finding] = []
    scope = {"disable": "on this line", "disable-next-line": "on the next line", "disable-file": "in this file"}
    for d in directives:
        if d.problem is not None:
            extra.append(_tm902(path, d, d.problem))
            continue
        unknown = [w for w, c in d.codes if c is None]
        unused = [c for _, c in d.codes if c is not None and c not in d.used and c != "TM902" and enabled(c)]
        if unknown:
            extra.append(_tm902(path, d, "unknown rule " + ", ".join(repr(w) for w in unknown) + " in suppression"))
        if unused:
            names = ", ".join(f"{c} ({RULES[c].name})" for c in dict.fromkeys(unused))
            extra.append(_tm902(path, d, f"unused suppression: {names} reported nothing {scope[d.kind]}"))
    kept.extend(f for f in extra if not any(d.covers("TM902", f.line) for d in directives))
    return kept
