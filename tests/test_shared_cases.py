"""The fault cases of ../shared/cases: every expect.txt row, exactly (code and line, or a clean file)."""

from __future__ import annotations

import pytest

from conftest import SHARED, needs_shared
from tmemlint.checks.registry import RULES, load_all
from tmemlint.engine import Options, lint_file

load_all()

#: Rows whose verdict a later rule overturns, with the findings tmemlint gives instead and why. Case 18's good kernel
#: issues the paired tcgen05.mma and tcgen05.commit from thread 0 of *both* CTAs of the pair (no %cluster_ctarank
#: test): PTX ISA Table 46 has one thread of the CTA pair issue them, which is TM112 (issue 15); the case predates it.
OVERTURNED = {"18_mixed_cta_group/good.ptx": [("TM112", 36), ("TM112", 37)]}


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
    # a row that names a rule off by default (TM301 is info and opt-in since issue 26) is checked with it enabled
    opt_in = want in RULES and not RULES[want].enabled
    found = lint_file(path, options=Options(codes={c for c, r in RULES.items() if r.enabled} | {want})
                      if opt_in else None).findings
    got = sorted((f.code, f.line) for f in found)
    overturned = OVERTURNED.get(f"{path.parent.name}/{path.name}")
    if overturned is not None:
        assert got == overturned
    elif want == "clean":
        assert got == []
    elif line is None:
        assert want in {c for c, _ in got}, got
    else:
        assert (want, line) in got, got
