"""Path simulations are not rerun (issue 24): every ``FunctionContext.simulate`` is logged (``SimulationKey``) and
none repeats an earlier one of its context (same warp class, instructions of interest, transfer, init and result);
the identity-transfer simulations (the ordering model's reaching facts, TM204's and TM206's observers) share one
``PathRecord`` per warp class.  Findings stay the expected ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, SHARED, needs_shared
from tmemlint import pipeline
from tmemlint.checks.context import FunctionContext

CASES = sorted(FIXTURES.glob("ptx/recall_relinquish_other_warp_*.ptx")) + \
    sorted(FIXTURES.glob("ptx/tm304_cross_role_*.ptx")) + sorted(FIXTURES.glob("ptx/recall_named_barrier_count_*.ptx"))


def _contexts(path: Path) -> tuple[list[FunctionContext], set[tuple[str, int]]]:
    """The checked contexts of ``path`` and its findings as ``(code, line)``."""
    unit = pipeline.load(path)
    assert unit.layout is None  # small files: parsed at once
    ctxs: list[FunctionContext] = []
    found: set[tuple[str, int]] = set()
    for a in pipeline.analyse(unit):
        if a.findings is not None:
            continue
        ctx = a.context
        found |= {(f.code, f.line) for f in pipeline._check_function(ctx, pipeline.enabled_rules(ctx.options))}
        ctxs.append(ctx)
    return ctxs, found


def _expected(path: Path) -> set[tuple[str, int]]:
    return {(code, n) for n, line in enumerate(path.read_text().splitlines(), 1)
            for m in re.finditer(r"expect:\s*([A-Z0-9, ]+)", line) for code in re.findall(r"TM\d{3}", m.group(1))}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_no_duplicate_simulation(path: Path) -> None:
    ctxs, found = _contexts(path)
    assert ctxs
    assert found == _expected(path)
    for ctx in ctxs:
        assert len(ctx.threads.classes) > 1
        assert ctx.duplicate_simulations() == 0
        identity = [k for k in ctx.simulations if k.transfer == "identity"]
        assert len(identity) == len({k.warps for k in identity}) <= len(ctx.threads.classes)


@needs_shared
def test_no_duplicate_simulation_triton() -> None:
    path = SHARED / "corpus" / "triton" / "mm_desc_f16.sm103.ptx"
    if not path.is_file():
        pytest.skip("the Triton corpus is not present")
    ctxs, found = _contexts(path)
    assert found == set()
    assert ctxs and all(c.duplicate_simulations() == 0 for c in ctxs)
    assert sum(len(c.simulations) for c in ctxs) > 0
