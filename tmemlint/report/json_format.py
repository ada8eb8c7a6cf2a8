"""``--format json``: one JSON list of findings (schema in README, "Output formats")."""

from __future__ import annotations

import json
from typing import Iterable

from tmemlint.findings import Finding


def format_json(findings: Iterable[Finding]) -> str:
    """The findings as one indented JSON list of ``Finding.to_json`` objects, with a final newline."""
    return json.dumps([f.to_json() for f in findings], indent=2) + "\n"
