"""``--format concise``: one line per finding, ``path:line:col: CODE [severity] message``."""

from __future__ import annotations

from typing import Iterable

from tmemlint.findings import Finding


def format_concise(findings: Iterable[Finding]) -> str:
    """One line per finding (1-based line and column); related places are left out."""
    out = [f"{f.path}:{f.line}:{f.column}: {f.code} [{f.severity.value}] {f.message}" for f in findings]
    return "\n".join(out) + ("\n" if out else "")
