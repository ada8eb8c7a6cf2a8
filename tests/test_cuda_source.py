"""CUDA sources: source mode (no compiler) against the fixtures' inline expectations, the PTX lint of the
committed .ptx, and compile mode (nvcc); case 16 of ../shared/cases."""

from __future__ import annotations

import functools
import shutil

import pytest

from conftest import EXAMPLES, FIXTURES, SHARED, expectations, needs_shared
from test_fixtures import _options
from tmemlint.checks.registry import RULES, load_all
from tmemlint.compile import map_findings
from tmemlint.engine import Options, lint_file, lint_module
from tmemlint.frontend.parser import parse_text

load_all()

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")
CASE16 = SHARED / "cases" / "16_divergent_collective_tcgen05_ld"


#: Fixtures whose expectations source mode does not meet yet, path → what it gets wrong (strict xfail: fixing the
#: gap makes the test pass, and then the entry must go).
SOURCE_GAPS: dict[str, str] = {
    "fixtures/patterns/persistent_loop_alloc_flags.cu":
        "TM101's warning on the alloc (line 54): warp 0 frees under its `had_tile` flag; warp 0 does not allocate, so "
        "its zero-trip and looping paths have equal properties and are joined at the loop exit, losing the flag's "
        "value and the loop's uniform fact, and the free looks chosen by data warp 0 computed itself (nvcc "
        "jump-threads the flag away: its PTX has no finding)",
    "fixtures/patterns/persistent_loop_alloc_flags_bad.cu":
        "TM101's warning on the alloc (line 51), the `had_tile` flag gap of persistent_loop_alloc_flags.cu",
}
#: Fixtures where the PTX lint of the committed .ptx and source mode give different codes because one of them has a
#: known gap, path → which (strict xfail).
MODES_DIFFER: dict[str, str] = {
    "fixtures/patterns/persistent_loop_alloc_flags.cu": "source mode adds TM101's warning (the had_tile flag gap)",
    "fixtures/patterns/persistent_loop_alloc_flags_bad.cu": "source mode adds TM101's warning (the had_tile flag gap)",
    "fixtures/patterns/warp_role_lambda_chain_bad.cu":
        "the PTX lint adds TM101's warning: nvcc's code for the role lambda's chain of returns is not decided per warp "
        "in PTX (tests/data/agreement_differences.json)",
}


#: Codes only source mode can report: the fault is in the C++ (an asm operand's constraint), and nvcc's PTX does not
#: show it; the comparisons with the PTX lint and with compile mode leave them out.
SOURCE_ONLY = frozenset({"TM903"})


def _cu_files():
    files = sorted((FIXTURES / "nvcc").glob("*.cu")) + sorted((FIXTURES / "cuda").glob("*.cu"))
    files += sorted((FIXTURES / "patterns").glob("*.cu"))
    return files + sorted(EXAMPLES.glob("*.cu"))


def _params(require_ptx: bool = False, gaps: dict[str, str] | None = None):
    out = []
    for p in _cu_files():
        if require_ptx and not p.with_suffix(".ptx").exists():
            continue
        lines, file_codes = expectations(p)
        missing = sorted(c for c in {c for _, c in lines} | file_codes if c not in RULES)
        marks = [pytest.mark.xfail(strict=True, reason=f"{', '.join(missing)} not implemented yet")] if missing else []
        rel = p.relative_to(FIXTURES.parent).as_posix()
        if gaps and rel in gaps:
            marks.append(pytest.mark.xfail(strict=True, reason=gaps[rel]))
        out.append(pytest.param(p, id=rel, marks=marks))
    return out


def _source(path, options=None):
    """Source-mode findings of ``path`` (with the fixture's options unless given); cached per path."""
    if options is not None:
        return lint_file(path, options=options).findings
    return _source_cached(path)


@functools.lru_cache(maxsize=None)
def _source_cached(path):
    return tuple(lint_file(path, options=_options(path)).findings)


@pytest.mark.parametrize("path", _params(gaps=SOURCE_GAPS))
def test_source_mode_matches_inline_expectations(path):
    want_lines, want_file = expectations(path)
    found = _source(path)
    got = {(f.line, f.code) for f in found}
    if want_file:
        got = {x for x in got if x[1] not in want_file}
        assert want_file <= {f.code for f in found}
    assert sorted(got) == sorted(want_lines)


@pytest.mark.parametrize("path", _params(require_ptx=True, gaps=MODES_DIFFER))
def test_source_mode_codes_equal_the_committed_ptx(path):
    ptx = path.with_suffix(".ptx")
    want = sorted({f.code for f in lint_file(ptx, options=_options(ptx)).findings})
    assert sorted({f.code for f in _source(path)} - SOURCE_ONLY) == want


def test_every_fixture_kernel_is_lowered_without_diagnostics():
    """No fixture needs TM900/TM901: the C++ of every fixture is understood."""
    bad = []
    for p in _cu_files():
        for f in _source(p, Options(codes={"TM900", "TM901"})):
            bad.append(f"{p.name}:{f.line}: {f.code} {f.message}")
    assert bad == []


def _agree(path, mapped, source) -> None:
    """Compile-mode findings ``mapped`` agree with source mode: the same (file, line, code) findings (compile mode
    puts an inline-asm instruction's finding where its text starts in the asm string, as source mode does)."""
    assert sorted({(f.path, f.line, f.code) for f in mapped}) == sorted(
        {(f.path, f.line, f.code) for f in source if f.code not in SOURCE_ONLY})


@pytest.mark.parametrize("path", _params(require_ptx=True, gaps=MODES_DIFFER))
def test_compile_mode_mapping_agrees_with_source_mode(path):
    """Compile mode on nvcc's PTX of the fixture (the committed .ptx, made with the same nvcc flags): its
    findings mapped through .loc to the .cu agree with source mode."""
    ptx = path.with_suffix(".ptx")
    opts = _options(path) or Options()
    module = parse_text(ptx.read_text(), str(ptx))
    mapped = map_findings(lint_module(module, str(ptx), opts), module, str(path), path.read_text())
    _agree(path, mapped, _source(path))


NVCC_SAMPLES = [FIXTURES / "cuda" / "tk_tm101_leak_bad.cu", FIXTURES / "nvcc" / "tm102_ncols_bad.cu",
                EXAMPLES / "gemm_leak_bad.cu"]


@needs_nvcc
@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in NVCC_SAMPLES])
def test_compile_mode_runs_nvcc_and_agrees(path):
    opts = _options(path) or Options()
    opts.compile = True
    res = lint_file(path, options=opts)
    assert res.error is None
    _agree(path, res.findings, _source(path))


@needs_shared
@pytest.mark.xfail("TM109" not in RULES, strict=True, reason="TM109 is not implemented yet")
def test_case16_divergent_collective_in_source():
    found = lint_file(CASE16 / "bad.cu").findings
    assert ("TM109", 6) in {(f.code, f.line) for f in found}
    six = next(f for f in found if f.line == 6)
    assert six.column == 17  # the asm string, not the statement
    assert [(r.line, r.message) for r in six.related][-1] == (19, "called from here (inlined)")


@needs_shared
def test_case16_good_is_clean():
    assert lint_file(CASE16 / "good.cu").findings == []


@needs_nvcc
@needs_shared
@pytest.mark.xfail("TM109" not in RULES, strict=True, reason="TM109 is not implemented yet")
def test_case16_compile_mode_maps_to_the_cu_line():
    found = lint_file(CASE16 / "bad.cu", options=Options(compile=True)).findings
    assert ("TM109", 6) in {(f.code, f.line) for f in found}
    six = next(f for f in found if f.line == 6 and f.code == "TM109")
    assert "line 18" in six.message  # the PTX line of the branch is mapped to the .cu line too
    assert (19, "called from here (inlined)") in {(r.line, r.message) for r in six.related}


@pytest.mark.parametrize("cond, want", [
    ("threadIdx.x % 32 == 0", []),
    # lane 0 arrives only when a CTA-uniform value says so: on the other path no lane arrives and the readers' wait
    # for phase 0 never returns (PTX ISA §9.7.13.15; ``SyncModel._wait_never_returns``): a hang, not an unordered
    # read, so no TM205, and TM315 at the wait (``SyncModel.never_completes``; the wait's asm string, line 14)
    ("threadIdx.x % 32 == 0 && K > 64", [(14, 17, 71, "TM315")]),
    ("threadIdx.x % 32 == 0 && (K & 64)", [(14, 17, 71, "TM315")]),
])
def test_lane_zero_hand_over_after_a_loop_the_other_lanes_join(cond, want):
    """mbarrier_slot_handover.cu: lane 0 of the MMA warp arrives on tmem_provisioned, the other lanes' exit states
    of the tile loop (zero-trip and looping) are joined by the path simulation, so their uniform facts are those of
    neither of lane 0's paths; the warp's arrival is still lane 0's on every path (order.releases_after unites the
    keys lane by lane); when lane 0's arrival is conditional, the path without it never gets past the wait."""
    path = FIXTURES / "patterns" / "mbarrier_slot_handover.cu"
    old = "if (threadIdx.x % 32 == 0) mbar_arrive(smem_u32(&tmem_provisioned));"
    src = path.read_text().replace(old, f"if ({cond}) mbar_arrive(smem_u32(&tmem_provisioned));")
    assert old in path.read_text()
    from tmemlint.engine import lint_source

    assert [(f.line, f.column, f.end_column, f.code) for f in lint_source(src, "k.cu", Options())] == want


IMMEDIATE_IN_MNEMONIC = """\
#include <cstdint>
template <int GROUP>
struct Tmem {
  __device__ static void alloc(uint32_t slot) {
    asm volatile("tcgen05.alloc.cta_group::%1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(slot), "n"(GROUP));
  }
};
template <int GROUP>
__device__ void alloc2(uint32_t slot) {
  asm volatile("tcgen05.alloc.cta_group::%1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(slot), "n"(GROUP));
}
template <int GROUP>
__global__ void __launch_bounds__(128, 1) k(uint32_t* out) {
  __shared__ uint32_t slot;
  using T = Tmem<GROUP>;
  if (threadIdx.x < 32) T::alloc((uint32_t)__cvta_generic_to_shared(&slot));
  if (threadIdx.x < 32) alloc2<GROUP>((uint32_t)__cvta_generic_to_shared(&slot));
}
void run(uint32_t* out) { k<1><<<1, 128>>>(out); }
"""


def test_an_immediate_in_the_mnemonic_is_substituted_or_said_unknown():
    """``"n"(GROUP)`` referenced inside the mnemonic (``cta_group::%1``): substituted where source mode knows the
    value (``alloc2<GROUP>`` of the launch ``k<1>``: a leak, TM101), TM901 with the reason where it does not (the
    class template behind a local ``using`` alias), never TM900."""
    from tmemlint.engine import lint_source

    got = lint_source(IMMEDIATE_IN_MNEMONIC, "k.cu", Options())
    assert [(f.code, f.line) for f in got] == [("TM901", 5), ("TM101", 10)]
    assert "%1 (GROUP) is part of an instruction's text" in got[0].message
