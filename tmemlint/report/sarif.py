"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One run.  ``tool.driver`` lists every registered rule (id, name, descriptions, ``help`` with the rule page's
Markdown, ``helpUri``, default level and enablement, tags).  Each result has ``ruleId``/``ruleIndex``, ``level``,
``message``, one location (an ``artifactLocation`` relative to ``%SRCROOT%``, the current folder, whose absolute
address is given in ``originalUriBaseIds``; a file outside it gets an absolute ``file://`` address), its region
(1-based lines and columns, ``endColumn`` exclusive), ``relatedLocations``, ``codeFlows`` when the finding has
steps (its witness: one thread flow per warp class, ``thread_flows``), and ``partialFingerprints`` (``tmemlint.fingerprint``).  GitHub's upload limits are kept: at most 25,000
results (then a notification says how many were left out) and 1,000 related locations per result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import quote

from tmemlint.version import __version__
from tmemlint.checks.registry import RULES, load_all
from tmemlint.docs import HOMEPAGE, rule_doc, rule_url
from tmemlint.findings import Finding, Related, Severity
from tmemlint.fingerprint import FINGERPRINT_KEY
from tmemlint.names import demangle, demangle_message

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
MAX_RESULTS = 25_000
MAX_RELATED = 1_000
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
FAMILY = {"1": "lifecycle", "2": "addresses", "3": "ordering", "4": "regions", "9": "input"}


def _rule_descriptor(code: str) -> dict:
    r = RULES[code]
    doc = rule_doc(code)
    summary = r.summary[0].upper() + r.summary[1:] if r.summary else r.code
    full = summary if summary.endswith(".") else summary + "."
    help_text = doc if doc else f"{r.code} {r.name} ({r.severity.value})\n\n{full}\n"
    return {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": help_text},
        "helpUri": rule_url(code),
        "defaultConfiguration": {"level": LEVEL[r.severity], "enabled": r.enabled},
        "properties": {"tags": ["tmem", "tcgen05", FAMILY.get(r.code[2:3], "other")]},
    }


def artifact_location(path: str, root: str | None = None) -> dict:
    """The ``artifactLocation`` of ``path``: ``{"uri": relative, "uriBaseId": "%SRCROOT%"}`` when ``path`` lies
    under ``root`` (default: the current folder), else ``{"uri": "file:///absolute"}``.  URIs use ``/`` and
    percent-encoding."""
    base = os.path.abspath(root or os.getcwd())
    full = os.path.abspath(path)
    rel = os.path.relpath(full, base)
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir or os.path.isabs(rel):
        return {"uri": Path(full).as_uri()}
    return {"uri": quote(rel.replace(os.sep, "/"), safe="/"), "uriBaseId": SRCROOT}


def _physical(path: str, line: int, column: int, root: str | None, end_line: int | None = None,
              end_column: int | None = None) -> dict:
    region = {"startLine": max(line, 1), "startColumn": max(column, 1)}
    if end_line is not None:
        region["endLine"] = max(end_line, region["startLine"])
    if end_column is not None:
        region["endColumn"] = max(end_column, 1)
    return {"artifactLocation": artifact_location(path, root), "region": region}


def _related(i: int, r: Related, root: str | None) -> dict:
    return {"id": i, "physicalLocation": _physical(r.path, r.line, r.column, root), "message": {"text": r.message}}


def thread_flows(flow: Sequence[Related], root: str | None = None) -> list[dict]:
    """The SARIF ``threadFlows`` of a witness: one per warp class (``Related.thread``) in the order the classes
    first appear, each with ``id`` and ``message`` naming the class and its steps in execution order; a step's
    ``executionOrder`` is its place in the whole witness (1-based), so a viewer can interleave the classes.  A step
    that names no class joins the class of the next step (else of the previous one); a witness that names none is
    one thread flow without ``id``."""
    labels = [s.thread for s in flow]
    for k in range(len(labels) - 2, -1, -1):
        if labels[k] is None:
            labels[k] = labels[k + 1]
    for k in range(1, len(labels)):
        if labels[k] is None:
            labels[k] = labels[k - 1]
    flows: dict[str | None, list[dict]] = {}
    for order, (s, label) in enumerate(zip(flow, labels), 1):
        flows.setdefault(label, []).append({
            "location": {"physicalLocation": _physical(s.path, s.line, s.column, root), "message": {"text": s.message}},
            "executionOrder": order})
    out = []
    for label, steps in flows.items():
        tf: dict = {"locations": steps}
        if label is not None:
            tf = {"id": label, "message": {"text": label}, "locations": steps}
        out.append(tf)
    return out


def _result(f: Finding, index: dict[str, int], root: str | None) -> dict:
    res = {
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": LEVEL[f.severity],
        "message": {"text": demangle_message(f.message)},
        "locations": [{"physicalLocation": _physical(f.path, f.line, f.column, root, f.end_line, f.end_column)}],
    }
    if f.related:
        res["relatedLocations"] = [_related(i, r, root) for i, r in enumerate(f.related[:MAX_RELATED], 1)]
    if f.flow:
        res["codeFlows"] = [{"threadFlows": thread_flows(f.flow, root)}]
    if f.fingerprint:
        res["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    if f.function:
        res["properties"] = {"function": f.function, "functionDemangled": demangle(f.function)}
    return res


def sarif_log(findings: Iterable[Finding], notifications: Sequence[str] = (), root: str | None = None,
              max_results: int = MAX_RESULTS) -> dict:
    """The SARIF 2.1.0 log (a dict ready for ``json.dumps``) of ``findings`` in the given order.

    ``notifications`` are tool-execution messages (e.g. unreadable files; each an error-level notification that
    also sets ``executionSuccessful`` false); ``root`` is the folder ``%SRCROOT%`` stands for (default: the
    current folder).  Past ``max_results`` results the rest are dropped and a warning notification says how
    many."""
    load_all()
    codes = sorted(RULES)
    index = {c: i for i, c in enumerate(codes)}
    found = list(findings)
    notes = [{"level": "error", "message": {"text": n}} for n in notifications]
    if len(found) > max_results:
        notes.append({"level": "warning", "message": {
            "text": f"{len(found)} results; only the first {max_results} are included "
                    f"(GitHub code scanning accepts at most {MAX_RESULTS} per run)"}})
        found = found[:max_results]
    base = os.path.abspath(root or os.getcwd())
    base_uri = Path(base).as_uri()
    run = {
        "tool": {"driver": {
            "name": "tmemlint",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": HOMEPAGE,
            "rules": [_rule_descriptor(c) for c in codes],
        }},
        "originalUriBaseIds": {SRCROOT: {"uri": base_uri if base_uri.endswith("/") else base_uri + "/"}},
        "invocations": [{"executionSuccessful": not notifications, "toolExecutionNotifications": notes}],
        "results": [_result(f, index, root) for f in found],
        "columnKind": "utf16CodeUnits",
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def format_sarif(findings: Iterable[Finding], notifications: Sequence[str] = (), root: str | None = None) -> str:
    """``sarif_log`` as indented JSON text with a final newline."""
    return json.dumps(sarif_log(findings, notifications, root), indent=2) + "\n"
