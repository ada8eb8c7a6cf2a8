"""``--format json``: one JSON list of findings (schema in README, "Output formats")."""

from __future__ import annotations

import json
from typing import Iterable

from tmemlint.findings import Finding


def format_json(findings: Iterable[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2) + "\n"
