"""The fault cases of ../shared/cases: every expect.txt row, exactly (code and line, or a clean file)."""

from __future__ import annotations

import pytest

from conftest import SHARED, needs_shared
from tmemlint.checks.registry import RULES, load_all
from tmemlint.engine import lint_file

load_all()


def _rows():
    if not SHARED.is_dir():
        return []
    rows = []
    for exp in sorted((SHARED / "cases").glob("*/expect.txt")):
        for row in exp.read_text().splitlines():
            if not row.strip():
                continue
            where, want = row.rsplit(": ", 1)
            name, _, line = where.partition(":")
            if not name.endswith(".ptx"):
                continue  # .cu rows belong to source mode
            marks = []
            if want != "clean" and want not in RULES:
                marks.append(pytest.mark.xfail(strict=True, reason=f"{want} is not implemented yet"))
            rows.append(pytest.param(exp.parent / name, want, int(line) if line else None,
                                     id=f"{exp.parent.name}/{name}:{line or '*'}:{want}", marks=marks))
    return rows


@needs_shared
@pytest.mark.parametrize("path,want,line", _rows())
def test_case_expectation(path, want, line):
    found = lint_file(path).findings
    got = sorted((f.code, f.line) for f in found)
    if want == "clean":
        assert got == []
    elif line is None:
        assert want in {c for c, _ in got}, got
    else:
        assert (want, line) in got, got
