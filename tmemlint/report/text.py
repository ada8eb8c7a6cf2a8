"""Human-readable output: ``path:line:col: CODE [severity] message`` with related locations indented below."""

from __future__ import annotations

from typing import Iterable

from tmemlint.findings import Finding


def format_text(findings: Iterable[Finding]) -> str:
    """One block per finding: the finding line, then ``  path:line:col: note: message`` per related place."""
    lines = []
    for f in findings:
        lines.append(f"{f.path}:{f.line}:{f.column}: {f.code} [{f.severity.value}] {f.message} ({f.name})")
        for r in f.related:
            lines.append(f"  {r.path}:{r.line}:{r.column}: note: {r.message}")
    return "\n".join(lines) + ("\n" if lines else "")
