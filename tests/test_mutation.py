"""Mutation testing for recall, fast subset: faults injected into correct real PTX by ``benchmarks/mutate.py`` are
reported with the exact code on the exact line, and nothing new appears on the lines the mutation did not touch.

The whole harness (every input, every fault class, ptxas on every mutant, the recall table) is
``python benchmarks/mutate.py --out report.md``; these cases pin a few mutants per class with hand-checked lines.
Line numbers are those of the mutant (inserted lines shift the lines below them).
"""

from __future__ import annotations

import functools
import importlib.util
import sys

import pytest

from conftest import ROOT, SHARED, needs_ptxas, needs_shared
from tmemlint.engine import lint_text


def _load_harness():
    spec = importlib.util.spec_from_file_location("tmemlint_mutate", ROOT / "benchmarks" / "mutate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


mutate = _load_harness()

TRITON = "../shared/corpus/triton/"


def _path(name: str):
    return SHARED / name[len("../shared/"):] if name.startswith("../shared/") else ROOT / name


@functools.lru_cache(maxsize=None)
def _analysed(name: str):
    """(FileAnalysis, original findings, mutants, not-applicable sites) of one input, all fault classes."""
    fa = mutate.FileAnalysis(mutate.source_for(str(_path(name))))
    muts, nas = mutate.generate(fa)
    return fa, mutate.original_findings(fa.text, fa.src.name), muts, nas


def _mutant(name: str, fault: str, anchor: int):
    fa, orig, muts, _ = _analysed(name)
    hits = [m for m in muts if m.fault == fault and m.anchor == anchor]
    assert len(hits) == 1, f"{fault} at line {anchor} of {name}: {[(m.fault, m.anchor) for m in muts]}"
    return fa, orig, hits[0]


# (input, mutation kind, line of the mutated instruction in the original, expected code, expected lines in the
# mutant): every expected line must carry the code.
CASES = [
    # 5: a tcgen05.cp destination moved inside a block-scaled MMA's accumulator -> TM401 on the cp
    ("fixtures/nvcc/tm401_scale_overlap_good.ptx", "tm401-cp", 406, "TM401", [407]),
    # 1: dealloc deleted / moved into one branch -> TM101 on the alloc
    ("examples/gemm_blockscaled_good.ptx", "tm101-delete", 1568, "TM101", [179]),
    ("fixtures/real/cute/cute_mxf8.ptx", "tm101-branch", 848, "TM101", [131]),
    # 2: alloc (and dealloc) count in a register holding 96 / 1024 -> TM102 on both
    ("fixtures/real/cute/cute_mxf8.ptx", "tm102-96", 131, "TM102", [132, 850]),
    ("fixtures/nvcc/tm104_double_dealloc_good.ptx", "tm102-1024", 59, "TM102", [60, 404]),
    # 3: ld/st.shared through the TMEM address -> TM201 on the new line
    ("fixtures/real/cute/cute_mxf8.ptx", "tm201-st", 137, "TM201", [138]),
    ("fixtures/real/cute/cute_mxf8.ptx", "tm201-before-ld", 751, "TM201", [751]),
    # 4: wait::ld moved below the first read (697 deleted, re-inserted after 700) -> TM301 on the read
    ("examples/gemm_blockscaled_good.ptx", "tm301-move-wait", 697, "TM301", [699]),
    # 5: scale-factor address inside the accumulator [0, 128): the cp writing it and every MMA reading it
    ("fixtures/nvcc/tm401_scale_overlap_good.ptx", "tm401-scale", 333, "TM401", [406, 449, 456, 465, 473, 481]),
    # 6: alloc after the relinquish (CuTe: the relinquish closes the MMA warp's region) -> TM105 on the copy
    ("fixtures/real/cute/cute_dense_f16.ptx", "tm105-realloc", 643, "TM105", [644]),
    # 7: dealloc twice -> TM104 on the second
    ("fixtures/nvcc/tm104_double_dealloc_good.ptx", "tm104-dup", 402, "TM104", [403]),
]

TRITON_CASES = [
    # warp-specialized: the dealloc warp 0 executes (937; the one at 780 is on a path warp 0 never takes)
    (TRITON + "mm_persistent_ws_f16.sm100.ptx", "tm101-delete", 937, "TM101", [54]),
    (TRITON + "mm_persistent_ws_f16.sm100.ptx", "tm104-dup", 937, "TM104", [938]),
    (TRITON + "mm_scaled_tma_mxfp8.sm103.ptx", "tm102-96", 79, "TM102", [80, 797]),
    (TRITON + "mm_scaled_tma_mxfp8.sm100.ptx", "tm201-ld", 82, "TM201", [83]),
    # the wait (273) moves below the read at 278, past the mbarrier.arrive at 276: TM302 there is a consequence
    (TRITON + "mm_persistent_ws_f16.sm100.ptx", "tm301-move-wait", 273, "TM301", [277]),
    (TRITON + "mm_scaled_tma_mxfp8.sm100.ptx", "tm401-scale", 226, "TM401",
     [233, 257, 265, 273, 281, 447, 472, 480, 488, 496]),
    (TRITON + "mm_desc_f16.sm100.ptx", "tm105-realloc", 57, "TM105", [58]),
]

#: Mutants tmemlint misses today (see the report of benchmarks/mutate.py): (case) -> why.  xfail(strict=True): when
#: the analysis catches them the test passes, and the entry must go.
KNOWN_MISSES: dict = {}

#: TM401 on the compiler shapes that used to hide the accumulator (fixed: column sets and the idesc's known bits).
TM401_CASES = [
    # CuTe DSL builds the idesc with selp/or and ORs the scale byte selectors into bits 4-5/29-30 (selp.b32 %r152,
    # 144711680, 144703488, %p1; or.b32 %r41, %r152, %r151; or.b32 %r42, %r37, %r41): N=128 in every alternative
    ("fixtures/real/cute/cute_mxf8.ptx", "tm401-scale", 138, "TM401", [498, 512, 576, 596, 661, 676]),
    ("fixtures/real/cute/cute_mxf4.ptx", "tm401-cp", 484, "TM401", [485]),
    # nvcc's double-buffered accumulator: [%r42] with %r42 = (%r116 & 128) + base, column 0 or 128; a scale factor
    # at column 64 lies inside stage 0
    ("examples/gemm_blockscaled_good.ptx", "tm401-scale", 398, "TM401", [483, 528, 541, 553, 565]),
    ("fixtures/nvcc/tm101_leak_good.ptx", "tm401-cp", 434, "TM401", [435]),
]


def _check(name, fault, anchor, code, lines):
    fa, orig, m = _mutant(name, fault, anchor)
    ap = mutate.apply_edits(fa.lines, m.edits)
    found = {(f.code, f.line) for f in lint_text(ap.text, fa.src.name, mutate.lint_options())}
    missing = [ln for ln in lines if (code, ln) not in found]
    assert not missing, f"{m.description}: {code} missing at {missing}; got {sorted(found)}"
    res = mutate.evaluate(m, fa.lines, orig, use_ptxas=False)
    assert res.status == "detected", res.missing
    assert res.spurious == [], res.spurious


@pytest.mark.parametrize("name,fault,anchor,code,lines", CASES, ids=[f"{c[1]}@{c[0].split('/')[-1]}:{c[2]}"
                                                                     for c in CASES])
def test_mutant_reported(name, fault, anchor, code, lines):
    _check(name, fault, anchor, code, lines)


@needs_shared
@pytest.mark.parametrize("name,fault,anchor,code,lines", TRITON_CASES,
                         ids=[f"{c[1]}@{c[0].split('/')[-1]}:{c[2]}" for c in TRITON_CASES])
def test_triton_mutant_reported(name, fault, anchor, code, lines):
    _check(name, fault, anchor, code, lines)


@pytest.mark.parametrize("name,fault,anchor,code,lines", TM401_CASES,
                         ids=[f"{c[1]}@{c[0].split('/')[-1]}:{c[2]}" for c in TM401_CASES])
def test_tm401_compiler_shapes(name, fault, anchor, code, lines):
    _check(name, fault, anchor, code, lines)


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=why),
                                               id=f"{c[1]}@{c[0].split('/')[-1]}:{c[2]}")
                                  for c, why in KNOWN_MISSES.items()])
def test_known_miss(case):
    name, fault, anchor, code, lines = case
    _check(name, fault, anchor, code, list(lines))


@needs_shared
def test_unexecuted_dealloc_is_an_equivalent_mutant():
    """Triton's warp-specialized kernel has a second dealloc (line 780) on a partition path warp 0, the only warp
    that allocates, never takes (its guard %p1 = tid < 32 is false there): deleting or duplicating it is no fault,
    so no mutant is made, and the site is listed as not applicable."""
    name = TRITON + "mm_persistent_ws_f16.sm100.ptx"
    _, _, muts, nas = _analysed(name)
    assert not [m for m in muts if m.anchor == 780]
    skipped = {(n.fault, n.line) for n in nas if "equivalent" in n.reason}
    assert {("tm101-delete", 780), ("tm101-branch", 780), ("tm104-dup", 780)} <= skipped


def test_mutation_keeps_untouched_lines():
    """Line bookkeeping: inserted lines shift the rest, the original lines keep their text."""
    fa, _, m = _mutant("fixtures/real/cute/cute_mxf8.ptx", "tm102-96", 131)
    ap = mutate.apply_edits(fa.lines, m.edits)
    new = ap.text.splitlines()
    assert new[131 - 1] == "\tmov.b32 \t%r345, 96;"  # fresh register: .reg .b32 %r<345> becomes %r<347>
    assert new[132 - 1] == "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 \t[%r9], %r345;"
    assert new[32 - 1] == "\t.reg .b32 \t%r<347>;"
    for orig, n in ap.new_of_orig.items():
        if orig not in m.edits.replace:
            assert new[n - 1] == fa.lines[orig - 1]


@needs_ptxas
def test_mutants_assemble():
    """The mutants above are programs ptxas accepts (sm_103a for the .sm103 Triton file; two Triton mutants only:
    ptxas takes seconds on those, and the harness assembles every mutant anyway)."""
    cases = CASES + list(KNOWN_MISSES) + ([TRITON_CASES[0], TRITON_CASES[2]] if SHARED.is_dir() else [])
    rejected = []
    for name, fault, anchor, _code, _lines in cases:
        fa, _, m = _mutant(name, fault, anchor)
        err = mutate.ptxas_check(mutate.apply_edits(fa.lines, m.edits).text, m.source.arch)
        if err is not None:
            rejected.append(f"{name} {fault}@{anchor}: {err}")
    assert rejected == []


def test_wait_moved_past_a_later_wait_is_an_equivalent_mutant(tmp_path):
    """nvcc's CUTLASS-style epilogue: ld A; wait::ld; bit-cast renames of A; ld B; wait::ld; arithmetic on A. Moving
    the first wait below the first read of A crosses the second wait, which completes A too (wait::ld waits for all
    of the thread's earlier loads): no fault, so no mutant; the site is listed as an equivalent mutant. (The twelve
    tm301-move-wait "misses" of the 2026-12-07 rerun on fixtures/real/nvcc/cutlass_style_templates were this.)"""
    good = (ROOT / "fixtures/ptx/bitcast_rename_two_loads_one_wait_good.ptx").read_text()
    first_ld = "\ttcgen05.ld.sync.aligned.32x32b.x2.b32 {%r6, %r7}, [%r5];\n"
    wait = "\ttcgen05.wait::ld.sync.aligned;\n"
    assert good.count(first_ld) == 1
    text = good.replace(first_ld, first_ld + wait)
    path = tmp_path / "two_waits.ptx"
    path.write_text(text)
    wait_line = text.splitlines().index(wait.rstrip("\n"), 0) + 1
    later_wait_line = text.splitlines().index(wait.rstrip("\n"), wait_line) + 1
    fa = mutate.FileAnalysis(mutate.source_for(str(path)))
    muts, nas = mutate.generate(fa)
    assert [m.anchor for m in muts if m.fault == "tm301-move-wait"] == [later_wait_line]
    reasons = [n.reason for n in nas if n.fault == "tm301-move-wait" and n.line == wait_line]
    assert reasons == [f"equivalent mutant: the wait::ld at line {later_wait_line} completes the same loads before "
                       "their first read (a bit-cast mov before it is a rename, not a read)"]
