"""Severities and messages of the third-party idioms that issue 13 names (fixtures/patterns, written for this
project in the style of CUTLASS, ThunderKittens, DeepGEMM, FlashMLA): a correct idiom gets no error; a path that
exists only if warps disagree about data they loaded separately is a warning that says so; its bad twin is an
error.  Line expectations live in the fixtures (tests/test_fixtures.py); this file pins what they cannot say."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from tmemlint.checks.registry import load_all
from tmemlint.engine import lint_file
from tmemlint.findings import Severity

load_all()
PATTERNS = FIXTURES / "patterns"


def _findings(name: str):
    path = PATTERNS / name if (PATTERNS / name).exists() else FIXTURES / "ptx" / name
    return sorted((f.code, f.severity, f.line) for f in lint_file(path).findings)


def _ptx_line(name: str, needle: str) -> int:
    lines = (PATTERNS / name).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


def test_data_chosen_tile_paths_are_warnings_that_state_the_assumption():
    name = "persistent_roles_data_tiles.ptx"
    got = lint_file(PATTERNS / name).findings
    alloc = _ptx_line(name, "tcgen05.alloc")
    dealloc = _ptx_line(name, "tcgen05.dealloc")
    assert sorted((f.code, f.severity, f.line) for f in got) == [
        ("TM101", Severity.WARNING, alloc), ("TM104", Severity.WARNING, dealloc)]
    assert all("if every warp sees the same tiles" in f.message for f in got)


def test_data_chosen_tile_paths_bad_twin_is_an_error():
    name = "persistent_roles_data_tiles_bad.ptx"
    dealloc = _ptx_line(name, "tcgen05.dealloc")
    read = _ptx_line(name, "expect: TM205")
    assert _findings(name) == [("TM104", Severity.ERROR, dealloc), ("TM205", Severity.ERROR, read),
                               ("TM305", Severity.ERROR, dealloc)]


@pytest.mark.parametrize("name", [
    "named_barrier_slot_handover.ptx", "mbarrier_slot_handover.ptx", "warp_role_chain.ptx", "warp_role_table.ptx",
    "trap_checked_constant_columns.ptx", "pair_dealloc_peer_mbarrier.ptx", "pair_cluster_size_branch.ptx",
    "dealloc_transitive_handover.ptx", "sf_stage_register_twice.ptx", "local_vector_register.ptx", "st_handover_other_columns.ptx", "dealloc_named_barrier_tmem_users.ptx"])
def test_correct_idioms_have_no_finding(name):
    assert _findings(name) == []


def test_verdicts_do_not_depend_on_the_hash_seed():
    """Set iteration order changes with PYTHONHASHSEED; the happens-before verdicts must not (a short-circuited
    search once recorded 'undecided' for some orders of the barrier keys only)."""
    import json
    import os
    import subprocess
    import sys

    files = [str(PATTERNS / n) for n in ("persistent_roles_data_tiles.ptx", "dealloc_transitive_handover_bad.ptx",
                                          "st_handover_other_columns.ptx", "sf_stage_register_twice.ptx")]
    outs = []
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, TMEMLINT_NO_CACHE="1")
        p = subprocess.run([sys.executable, "-P", "-m", "tmemlint", "--no-cache", "--format", "json", *files],
                           capture_output=True, text=True, env=env, timeout=600)
        outs.append(sorted((f["path"], f["line"], f["code"], f["severity"]) for f in json.loads(p.stdout)))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]  # the bad twin and the warnings are there
