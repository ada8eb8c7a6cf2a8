"""``--format github``: GitHub Actions workflow commands, one per finding, which the runner turns into
annotations on the pull request:

    ::error file=k.ptx,line=12,col=2,endColumn=40,title=TM101::512 TMEM columns ... (tmem-leak)

``error`` findings are ``::error``, ``warning`` ``::warning``, ``info`` ``::notice``.  A finding spanning
several lines gives ``endLine`` instead of ``endColumn`` (GitHub takes ``endColumn`` on one line only)."""

from __future__ import annotations

from typing import Iterable

from tmemlint.findings import Finding, Severity

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow-command message: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value: as ``escape_data`` plus ``:`` → ``%3A`` and ``,`` → ``%2C``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(findings: Iterable[Finding]) -> str:
    """One ``::error|warning|notice file=…,line=…,col=…,endColumn=…,title=CODE::message (name)`` per finding."""
    out = []
    for f in findings:
        props = [f"file={escape_property(f.path)}", f"line={f.line}", f"col={f.column}"]
        props.append(f"endColumn={f.end_column}" if f.end_line == f.line else f"endLine={f.end_line}")
        props.append(f"title={escape_property(f.code)}")
        out.append(f"::{COMMAND[f.severity]} {','.join(props)}::{escape_data(f'{f.message} ({f.name})')}")
    return "\n".join(out) + ("\n" if out else "")
