"""Fixtures and examples: findings equal the inline ``// expect:`` comments, line by line; every compiled
fixture assembles with ptxas."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import EXAMPLES, FIXTURES, expectations, needs_ptxas
from tmemlint.checks.registry import RULES, load_all
from tmemlint.engine import Options, lint_file

load_all()

PTXAS_REJECTS = "ptxas REJECTS this file on purpose"
#: ``// tmemlint-test: extend-select=TM107[, TM306]`` in a fixture: lint it with these opt-in rules added to the defaults
_EXTEND = re.compile(r"//\s*tmemlint-test:\s*extend-select=([A-Z0-9, ]+)")


#: Fixtures whose expectations are right but that tmemlint does not meet yet (a false positive or a miss of the
#: analysis), path from the repository root → what the linter gets wrong. xfail(strict=True): fixing the gap makes the
#: test pass, and then this entry must go.
KNOWN_GAPS: dict[str, str] = {
    "fixtures/ptx/tm305_barrier_mma_incomplete_bad.ptx":
        "TM305's completion side is off (checks/ordering.py ENFORCE_COMPLETION): a barrier after an un-waited MMA",
    "fixtures/ptx/tm303_late_wait_mapa_handover_bad.ptx":
        "an arrive through mapa has no barrier identity (sync_event: BarrierKey ident None, may alias any barrier), so "
        "must_happen_before credits the wait::st that follows the hand-over (checks/ordering.py _handover_candidates)",
}


def _options(path) -> Options | None:
    """The defaults, plus the rules a ``tmemlint-test: extend-select=`` comment of the fixture names (None: none)."""
    extra = {c.strip() for m in _EXTEND.finditer(path.read_text(encoding="utf-8", errors="replace"))
             for c in m.group(1).split(",") if c.strip()}
    return Options(codes={c for c, r in RULES.items() if r.enabled} | extra) if extra else None


def _fixture_files():
    files = sorted(p for p in FIXTURES.rglob("*.ptx") if "real" not in p.relative_to(FIXTURES).parts)
    files += sorted(EXAMPLES.glob("*.ptx"))
    out = []
    for p in files:
        lines, file_codes = expectations(p)
        missing = sorted({c for _, c in lines} | file_codes - set(RULES))
        missing = [c for c in missing if c not in RULES]
        marks = [pytest.mark.xfail(strict=True, reason=f"{', '.join(missing)} not implemented yet")] if missing else []
        rel = p.relative_to(FIXTURES.parent).as_posix()
        if rel in KNOWN_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[rel]))
        out.append(pytest.param(p, id=rel, marks=marks))
    return out


@pytest.mark.parametrize("path", _fixture_files())
def test_findings_match_inline_expectations(path):
    want_lines, want_file = expectations(path)
    found = lint_file(path, options=_options(path)).findings
    got_lines = {(f.line, f.code) for f in found}
    if want_file:
        got_lines = {x for x in got_lines if x[1] not in want_file}
        assert want_file <= {f.code for f in found}
    assert sorted(got_lines) == sorted(want_lines)


def _compiled():
    files = sorted((FIXTURES / "nvcc").glob("*.ptx")) + sorted(EXAMPLES.glob("*.ptx"))
    files += sorted((FIXTURES / "patterns").glob("*.ptx")) + sorted((FIXTURES / "ptx").glob("*.ptx"))
    return [pytest.param(p, id=p.name) for p in files]


@needs_ptxas
@pytest.mark.parametrize("path", _compiled())
def test_fixture_assembles_with_ptxas(path):
    text = path.read_text()
    target = re.search(r"^\s*\.target\s+(sm_\w+)", text, re.M)  # sm_103a for tcgen05.ld.red
    arch = target.group(1) if target else "sm_100a"
    proc = subprocess.run(["ptxas", f"-arch={arch}", str(path), "-o", "/dev/null"], capture_output=True, text=True)
    if PTXAS_REJECTS in text:
        assert proc.returncode != 0
    else:
        assert proc.returncode == 0, proc.stderr


def test_there_are_fixtures():
    assert len(_fixture_files()) > 0
