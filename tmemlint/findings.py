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
    """A related place: 1-based ``line``/``column`` in ``path`` and what happens there ("allocated here")."""

    path: str
    line: int
    column: int
    message: str


@dataclass(slots=True)
class Finding:
    """One diagnostic.  ``line``/``column`` are 1-based; ``end_column`` is exclusive, on ``end_line``.

    ``flow`` lists the steps of a
    multi-step finding (for SARIF code flows), each a Related.  ``fingerprint`` is set by the engine after the
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

    def __str__(self) -> str:
        """``path:line:col: CODE [severity] message (name)``, function names demangled: one line, as ``--format
        concise`` prints it with the rule's name."""
        from tmemlint.names import demangle_message

        return f"{self.path}:{self.line}:{self.column}: {self.code} [{self.severity.value}] " \
               f"{demangle_message(self.message)} ({self.name})"

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
