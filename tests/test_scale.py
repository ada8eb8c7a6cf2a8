"""Scale (issue 3): the analysis stays exact on kernels with thousands of branches, and says so (TM901) when a bound
is hit.  The inputs come from ``tests/scale_gen.py``; each test takes a few seconds (speed itself is measured by
``benchmarks/``, not asserted here).  Sizes: 4000 if/else diamonds in sequence (2**4000 paths), 1500 nested
conditions, a loop with 1000 exits, a ``brx.idx`` over 5000 targets; a 1,000,000-line ``-lineinfo``-shaped file."""

from __future__ import annotations

import pytest

import scale_gen
from tmemlint.analysis import paths
from tmemlint.engine import lint_file, lint_text

SHAPES = {
    "diamonds": (scale_gen.diamonds, 4000),
    "nested": (scale_gen.nested, 1500),
    "loop_exits": (scale_gen.loop_exits, 1000),
    "brx": (scale_gen.brx_targets, 5000),
}


def _found(text):
    return [(f.line, f.code, [r.line for r in f.related]) for f in lint_text(text, "scale.ptx")]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_correct_kernel_has_no_finding(shape):
    make, n = SHAPES[shape]
    assert _found(make(n).text) == []


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_leak_deep_inside_is_tm101_at_the_alloc(shape):
    make, n = SHAPES[shape]
    g = make(n, leak_at=n * 3 // 4)
    assert g.alloc_line == 27 and g.leak_line > 0
    # the alloc line, with the planted exit as the place where the kernel exits holding the columns
    assert _found(g.text) == [(27, "TM101", [g.leak_line])]


def test_budget_hit_is_tm901_never_silent(monkeypatch):
    """With the path simulation's budget forced down to 50 block visits, a kernel whose analysis needs more gives
    TM901 at the function (the allocation verdicts are incomplete), for the correct and for the leaking kernel."""
    monkeypatch.setattr(paths, "DEFAULT_BUDGET", 50)  # read by every simulation, compiled with mypyc or not
    for leak in (None, 150):
        found = lint_text(scale_gen.diamonds(200, leak_at=leak).text, "scale.ptx")
        assert [(f.line, f.code) for f in found if f.code != "TM901"] == []
        tm901 = [(f.line, f.code, f.message) for f in found if f.code == "TM901"]
        assert tm901 and all(line == 9 for line, _, _ in tm901), tm901  # the .entry line
        assert any("exceeded its budget; allocation findings may be missing" in m for _, _, m in tm901), tm901


def test_million_line_lineinfo_file(tmp_path):
    """A 1,200,000-line file shaped like nvcc -lineinfo output (CUTLASS's FMHA example is 1.09M lines): 4
    kernels, one with a 96-column alloc and dealloc (TM102 at both), the rest debug data.  The line limit
    (1,000,000) counts the lines that are parsed, not the debug sections, so the file is checked completely."""
    g = scale_gen.lineinfo_like(1_200_000, kernels=4, bad_kernel=2)
    path = tmp_path / "big_lineinfo.ptx"
    path.write_text(g.text)
    del g.text
    assert sum(1 for _ in path.open()) == 1_200_000
    found = [(f.line, f.code) for f in lint_file(path, "big_lineinfo.ptx").findings]
    assert found == [(g.lines["allocs"][2], "TM102"), (g.lines["deallocs"][2], "TM102")]
