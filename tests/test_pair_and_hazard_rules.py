"""Issue 15's rules on their fixtures, with the severity and the column range each finding must have (the fixture
comparison of test_fixtures checks code and line only): TM307 is an error from another warp class and a warning from
the MMA's own thread; TM112 and TM308 are errors; TM309 is a warning (a CTA-scope remote arrive, or the leader's CTA-scope
wait), an error for the relayed cp.async completion (CUTLASS #3324). Plus the CTA-pair model of analysis/cluster on its own."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from tmemlint.analysis.cluster import EITHER, LEADER, UNKNOWN, PairRoles
from tmemlint.analysis.values import Cmp, Op, Param, SReg, const
from tmemlint.engine import lint_file
from tmemlint.ir import Function, Span

CASES = {
    "nvcc/tm307_mma_operand_overwritten_bad.ptx":
        [(line, 2, 56, "TM307", "error") for line in (162, 173, 193, 203, 221, 231)],
    "nvcc/tm307_same_thread_issue_order_warn.ptx":
        [(line, 2, 56, "TM307", "warning") for line in (202, 213, 274, 284, 345, 355)],
    "nvcc/tm307_same_thread_issue_order_warn.cu": [(78, 23, 71, "TM307", "warning"), (79, 23, 71, "TM307", "warning")],
    "ptx/tm307_same_thread_other_barrier_warn.ptx": [(73, 2, 53, "TM307", "warning"), (74, 2, 53, "TM307", "warning")],
    "nvcc/tm112_pair_issue_not_leader_bad.ptx":
        [(line, 2, 67, "TM112", "error") for line in (173, 183, 193, 203)] + [(210, 2, 104, "TM112", "error")],
    "nvcc/tm112_pair_issue_not_leader_bad.cu": [(62, 21, 76, "TM112", "error"), (65, 19, 117, "TM112", "error")],
    "nvcc/tm308_cross_warp_race_bad.ptx": [(78, 2, 54, "TM308", "error")],
    "nvcc/tm309_remote_release_scope_bad.ptx": [(237, 2, 50, "TM309", "warning")],
    "ptx/tm309_remote_release_scope_bad.ptx": [(66, 2, 48, "TM309", "warning"), (75, 2, 60, "TM309", "warning")],
    "ptx/tm309_acquire_cta_wait_bad.ptx": [(73, 2, 60, "TM309", "warning")],
    "ptx/tm309_relayed_cp_async_bad.ptx": [(78, 2, 48, "TM309", "error")],
    "ptx/tm309_relaxed_generic_bad.ptx": [(63, 2, 64, "TM309", "error")],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_with_severity_and_columns(name):
    found = lint_file(FIXTURES / name).findings
    assert sorted({(f.line, f.column, f.end_column, f.code, f.severity.value) for f in found}) == CASES[name]


def _roles(directives=None) -> PairRoles:
    fn = Function("k", True, Span(1, 1, 1, 1), directives=directives or {})

    class NoValues:  # facts that mention the CTA's identity directly need no value analysis
        insts: list = []
        def_value: dict = {}

    return PairRoles(fn, NoValues())


RANK = SReg("sreg", "%cluster_ctarank")


def _eq(a, b):
    return Cmp("cmp", "eq", a, b)


def _op(*items):
    return Op(("op",) + items)


def test_leader_tests_decide_the_role():
    roles = _roles()
    assert roles.role(frozenset()) == EITHER  # no test at all: both CTAs of the pair run it
    assert roles.role(frozenset({(_eq(RANK, const(0)), True)})) == LEADER
    parity = _eq(_op("and", RANK, const(1), 1), const(0))
    assert roles.role(frozenset({(parity, True)})) == LEADER
    assert roles.role(frozenset({(parity, False)})) == EITHER  # the odd CTA
    assert roles.role(frozenset({(_eq(RANK, const(1)), True)})) == EITHER
    ctaid_parity = _eq(_op("and", SReg("sreg", "%ctaid.x"), const(1), 1), const(0))
    assert roles.role(frozenset({(ctaid_parity, True)})) == LEADER  # pairs along x, the shape every launch uses
    bfe = _eq(_op("bfe", RANK, const(0), const(1), 1), const(0))
    assert roles.role(frozenset({(bfe, True)})) == LEADER


def test_declared_cluster_shape_is_used():
    ctaid_parity = _eq(_op("and", SReg("sreg", "%ctaid.x"), const(1), 1), const(0))
    # pairs along y (1 x 2 cluster): %ctaid.x parity no longer tells leader from peer
    assert _roles({"reqnctapercluster": (1, 2, 1)}).role(frozenset({(ctaid_parity, True)})) == EITHER
    assert _roles({"reqnctapercluster": (2, 1, 1)}).role(frozenset({(ctaid_parity, True)})) == LEADER


def test_identity_mixed_with_unknown_values_is_undecided():
    mixed = _eq(RANK, Param("param", "k_param_0", 0))
    assert _roles().role(frozenset({(mixed, True)})) == UNKNOWN
