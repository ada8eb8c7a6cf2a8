"""Findings: what a rule reports, where, and the places related to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Severity(str, Enum):
    """Default severities of the rule catalog: ``error`` (wrong or undefined per the PTX ISA on some feasible
    path), ``warning`` (legal but fragile or likely wrong), ``info`` (hygiene)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


class CheckError(Exception):
    """A file that was read but could not be checked (nvcc rejected it in compile mode); the message says why.
    The driver reports it as one ``tmemlint: path: message`` line and exit code 2."""


@dataclass(frozen=True, slots=True)
class Related:
    """A related place: 1-based ``line``/``column`` in ``path`` and what happens there ("allocated here").

    ``thread``: on a code-flow step (``Finding.flow``), the warp class that executes it as the rules name it
    ("warp 2", "warps 4-7"; ``WarpClass.__repr__``), None when the step is not tied to one class; SARIF puts the
    steps of each class in a thread flow of their own."""

    path: str
    line: int
    column: int
    message: str
    thread: str | None = None


#: How many affected places a grouped finding's message names before "and N more".
GROUP_NAMED = 3


@dataclass(frozen=True, slots=True)
class Group:
    """The affected places of a finding that stands for one root cause (rules catalog "Grouping": a missing
    ``wait::st`` that leaves N hand-overs unordered is one finding at the ``tcgen05.st``).  ``headline`` is the
    message's first part, with ``{n}`` for the number of places and ``{s}`` for the plural ending; ``places`` are
    the affected places in position order, each with a short text ("hand-over to other threads (bar.sync)")."""

    headline: str
    places: tuple[Related, ...] = ()

    def adding(self, places) -> "Group":
        """This group with ``places`` added (a place already present, same path, line and column, is kept once)."""
        seen = {(r.path, r.line, r.column) for r in self.places}
        out = list(self.places)
        for r in places:
            if (r.path, r.line, r.column) not in seen:
                seen.add((r.path, r.line, r.column))
                out.append(r)
        return Group(self.headline, tuple(sorted(out, key=lambda r: (r.path, r.line, r.column))))

    def message(self, path: str) -> str:
        """The finding's message in file ``path``: the headline with the count, then the first ``GROUP_NAMED``
        places ("line N" in ``path``, "file:N" elsewhere) and how many more."""
        n = len(self.places)
        named = "; ".join(f"{r.message} at {f'line {r.line}' if r.path == path else f'{r.path}:{r.line}'}"
                          for r in self.places[:GROUP_NAMED])
        more = f"; and {n - GROUP_NAMED} more" if n > GROUP_NAMED else ""
        return f"{self.headline.format(n=n, s='' if n == 1 else 's')}: {named}{more}"


@dataclass(slots=True)
class Finding:
    """One diagnostic.  ``line``/``column`` are 1-based; ``end_column`` is exclusive, on ``end_line``.

    ``flow`` lists the steps of a
    multi-step finding in execution order (the witness: SARIF code flows, ``flow`` in JSON, ``--show-witness``),
    each a Related whose ``thread`` names its warp class.  ``fingerprint`` is set by the engine after the
    rules ran (``tmemlint.fingerprint``): a hex string that identifies the finding across unrelated edits of the
    file (SARIF ``partialFingerprints``, baseline keys); it is not part of the JSON form."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    severity: Severity
    message: str
    related: list[Related] = field(default_factory=list)
    flow: list[Related] = field(default_factory=list)
    function: str | None = None
    fingerprint: str = ""
    #: The checked file when it differs from ``path``: a ``-lineinfo`` PTX file whose finding was moved to its
    #: CUDA source line (``tmemlint.lineinfo``); its configuration (``fail-on``) still applies.
    origin: str | None = None
    #: The affected places of a finding that groups one root cause (``Group``; ``ctx.report(group=...)``): also in
    #: ``related`` and ``flow``; None for a finding of one place.
    group: Group | None = None

    def __str__(self) -> str:
        """``path:line:col: CODE [severity] message (name)``, function names demangled: one line, as ``--format
        concise`` prints it with the rule's name."""
        from tmemlint.names import demangle_message

        return f"{self.path}:{self.line}:{self.column}: {self.code} [{self.severity.value}] " \
               f"{demangle_message(self.message)} ({self.name})"

    def absorb(self, other: "Finding") -> None:
        """Merge ``other`` (the same rule at the same place: one root cause) into this finding: its related places
        and code-flow steps that are new, the higher severity, and its group's places (the message is then
        rendered again from the merged group)."""
        for mine, theirs in ((self.related, other.related), (self.flow, other.flow)):
            seen = {(r.path, r.line, r.column, r.message, r.thread) for r in mine}
            for r in theirs:
                if (r.path, r.line, r.column, r.message, r.thread) not in seen:
                    seen.add((r.path, r.line, r.column, r.message, r.thread))
                    mine.append(r)
        if other.severity.rank > self.severity.rank:
            self.severity = other.severity
        if self.group is not None and other.group is not None:
            self.group = self.group.adding(other.group.places)
            self.message = self.group.message(self.path)

    def sort_key(self):
        return (self.path, self.line, self.column, self.code, self.message)

    def to_json(self) -> dict:
        """The JSON form (``--format json``): path, line, column, code, name, severity, message, related."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "related": [{"path": r.path, "line": r.line, "column": r.column, "message": r.message}
                        for r in self.related],
        }
