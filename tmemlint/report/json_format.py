"""``--format json``: one JSON list of findings (schema in README, "Output formats").

Each finding is ``Finding.to_json`` plus ``url`` (its rule's page, ``tmemlint.docs.rule_url``), ``function``
(the function or kernel as PTX names it, mangled for C++) and ``function_demangled`` (as people read it), and
``fingerprint`` (``tmemlint.fingerprint``, as in SARIF and baselines), and ``flow`` (the code-flow steps, as SARIF
``codeFlows`` shows them, in execution order, each with ``thread``: the warp class that executes it, "warp 2",
or null: the witness of a path-sensitive finding, e.g. the alloc, the branch decisions, the exit of a leak; for
TM302/TM303 the tcgen05.ld/st, then each place that needs its completion; an empty list for a finding of one place
of a rule that is not path-sensitive); messages name functions demangled."""

from __future__ import annotations

import json
from typing import Iterable

from tmemlint.docs import rule_url
from tmemlint.findings import Finding
from tmemlint.names import demangle, demangle_message


def finding_json(f: Finding) -> dict:
    """The JSON object of one finding (see the module docstring)."""
    d = f.to_json()
    d["message"] = demangle_message(d["message"])
    d["url"] = rule_url(f.code)
    d["function"] = f.function
    d["function_demangled"] = demangle(f.function) if f.function else None
    d["fingerprint"] = f.fingerprint or None
    d["flow"] = [{"path": s.path, "line": s.line, "column": s.column, "message": s.message, "thread": s.thread}
                 for s in f.flow]
    return d


def format_json(findings: Iterable[Finding]) -> str:
    """The findings as one indented JSON list of ``finding_json`` objects, with a final newline."""
    return json.dumps([finding_json(f) for f in findings], indent=2) + "\n"
