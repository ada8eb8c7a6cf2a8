"""Large multi-kernel PTX files are cut into parts (``tmemlint.frontend.split``) parsed and analysed in parallel
(``pipeline._lint_parts``): same findings as one serial run, exact line numbers, and a fall back to the serial parse
for a text the cut cannot handle or a part the grammar rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from tmemlint import pipeline
from tmemlint.engine import Options, lint_text
from tmemlint.frontend.split import layout, parts, units

MIXED = FIXTURES / "patterns" / "kernels_mixed_cta_group.ptx"

TWO = """.version 9.0
.target sm_100a
.address_size 64
.extern .func (.param .b32 r) helper(.param .b32 a);
.global .align 4 .b32 table[2] = {1, 2};

.visible .entry a()
{
  ret;
}

// a comment with a brace { and .entry in it
.visible .entry b()
{
  { .reg .b32 t; mov.b32 t, 1; }
  ret;
}
.func (.param .b32 r) helper(.param .b32 a)
{
  ret;
}
.section .debug_str
{
.b8 0
}
"""


def _multi_kernel_fixtures() -> list[Path]:
    out = []
    for p in sorted(FIXTURES.rglob("*.ptx")):
        lay = layout(p.read_text(encoding="utf-8", errors="replace"))
        if lay is not None and len(lay.kernels) >= 2:
            out.append(p)
    return out


def test_units_are_the_functions_and_sections_in_file_order():
    got = [(u.kind, TWO.count("\n", 0, u.start) + 1, u.lines, u.name) for u in units(TWO)]
    assert got == [("init", 5, 0, None), ("entry", 7, 4, "a"), ("entry", 13, 5, "b"), ("func", 18, 4, "helper"),
                   ("section", 22, 4, None)]


def test_parts_keep_shared_text_and_line_numbers():
    (p0, own0), (p1, own1) = parts(TWO, 2, prune=False)  # every function kept (none uses TMEM)
    assert len(p0) != len(TWO) and p0.count("\n") == p1.count("\n") == TWO.count("\n")
    lines0, lines1, orig = p0.split("\n"), p1.split("\n"), TWO.split("\n")
    for n in (1, 4):  # .version, the prototype: in every part
        assert lines0[n - 1] == lines1[n - 1] == orig[n - 1]
    # the initialised table in every part, its values left out (the IR keeps none)
    assert lines0[4] == lines1[4] == ".global .align 4 .b32 table[2] = {0};"
    assert lines0[17] == lines1[17] == ".func (.param .b32 r) helper(.param .b32 a)"  # callee context everywhere
    # each kernel in exactly one part; the .func analysed by the first part only; the section in none
    assert sorted(own0 + own1) == [(7, 10), (13, 17), (18, 21)]
    assert (18, 21) in own0
    in0 = {n for n in (7, 13) if lines0[n - 1] == orig[n - 1]}
    in1 = {n for n in (7, 13) if lines1[n - 1] == orig[n - 1]}
    assert in0 | in1 == {7, 13} and not in0 & in1
    assert lines0[21:25] == lines1[21:25] == ["", "", "", ""]


@pytest.mark.parametrize("text", [
    "{ .version 9.0",                                  # unbalanced
    ".version 9.0\n.visible .entry a() { ret; } .visible .entry b() { ret; }\n",  # two items on one line
    ".version 9.0\n.visible .entry a()\n{\n ret;\n}\n",  # one kernel: nothing to share out
    # a declaration before a kernel's keyword on its line would be lost by the parts that blank the kernel
    ".version 9.0\n.shared .b8 s[4]; .visible .entry a()\n{\n ret;\n}\n.visible .entry b()\n{\n ret;\n}\n",
    # a brace group that is neither a function, a section nor an initializer
    ".version 9.0\n{\n}\n.visible .entry a()\n{\n ret;\n}\n.visible .entry b()\n{\n ret;\n}\n",
])
def test_texts_that_are_not_cut(text):
    assert parts(text, 2, prune=False) is None


def test_keywords_in_block_comments_and_strings_are_not_headers():
    text = TWO.replace(".visible .entry a()\n", ".visible .entry a(\n/*\n.entry fake .section x\n*/\n)\n")
    got = [(u.kind, text.count("\n", 0, u.start) + 1) for u in units(text)]
    assert got == [("init", 5), ("entry", 7), ("entry", 17), ("func", 22), ("section", 26)]


@pytest.mark.parametrize("path", _multi_kernel_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_split_run_gives_the_serial_findings(path, monkeypatch):
    monkeypatch.setattr(pipeline, "SPLIT_MIN_LINES", 0)
    text = path.read_text(encoding="utf-8")
    serial = lint_text(text, str(path), Options())
    calls = []
    real = pipeline._lint_parts
    monkeypatch.setattr(pipeline, "_lint_parts", lambda *a: calls.append(real(*a)) or calls[-1])
    split = lint_text(text, str(path), Options(jobs=2))
    assert len(calls) == 1 and calls[0] is not None  # really split, not the serial fall-back
    assert [(f.code, f.line, f.column, f.message) for f in split] == \
        [(f.code, f.line, f.column, f.message) for f in serial]


def test_a_part_the_grammar_rejects_gives_the_serial_diagnostic(monkeypatch):
    monkeypatch.setattr(pipeline, "SPLIT_MIN_LINES", 0)
    lines = MIXED.read_text(encoding="utf-8").split("\n")
    assert lines[599].strip() and not lines[599].lstrip().startswith(("//", "$", "."))
    lines[599] = lines[599] + " )"  # inside the second kernel (lines 498-799)
    text = "\n".join(lines)
    got = [(f.code, f.line) for f in lint_text(text, "k.ptx", Options(jobs=2))]
    assert got == [(f.code, f.line) for f in lint_text(text, "k.ptx", Options())]
    assert got[0] == ("TM900", 600)


def test_two_kernels_with_a_leak_in_the_second_part(monkeypatch):
    monkeypatch.setattr(pipeline, "SPLIT_MIN_LINES", 0)
    leak = TWO.replace(".visible .entry b()\n{\n", ".visible .entry b()\n{\n  .reg .b32 %n;\n  .shared .b32 s;\n"
                       "  mov.b32 %n, 32;\n  tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [s], %n;\n")
    got = [(f.code, f.line) for f in lint_text(leak, "k.ptx", Options(jobs=2))]
    assert got == [("TM101", 18)]  # the tcgen05.alloc of kernel b
    assert got == [(f.code, f.line) for f in lint_text(leak, "k.ptx", Options())]


INDIRECT = """.version 9.0
.target sm_100a
.address_size 64

.shared .align 4 .u32 slotA;
.shared .align 4 .u32 slotB;

.func helper(.param .b32 x)
{
	ret;
}

.visible .entry kA(
	.param .u64 fp
)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [fp];
	mov.u32 %r1, slotA;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;
	{
	.param .b32 p0;
	st.param.b32 [p0], %r2;
	proto: .callprototype _ (.param .b32 _);
	call %rd1, (p0), proto;
	}
	ret;
}

.visible .entry kB()
{
	.reg .b32 %r<4>;
	mov.u32 %r1, slotB;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;
	ld.shared.u32 %r2, [slotB];
	tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;
	ret;
}
"""


def test_an_indirect_call_cannot_reach_a_kernel_of_another_part(monkeypatch):
    """An indirect call may reach any .func that allocates or frees, never a kernel (kB's allocation is no reason
    to assume kA's call frees): kA's leak is reported by the serial run and by the split run, in which kB is
    blanked (ptxas accepts this module)."""
    monkeypatch.setattr(pipeline, "SPLIT_MIN_LINES", 0)
    serial = [(f.code, f.line) for f in lint_text(INDIRECT, "k.ptx", Options())]
    assert serial == [("TM101", 21)]
    assert [(f.code, f.line) for f in lint_text(INDIRECT, "k.ptx", Options(jobs=2))] == serial


def test_a_run_over_several_files_splits_the_big_one_with_the_same_output(monkeypatch, tmp_path):
    """``--jobs 2`` over several files: files in parallel (the largest started first) and the multi-kernel file
    (4 kernels, TM102 in the third) split over processes too; the output is the one of ``--jobs 1``."""
    import scale_gen
    from typer.testing import CliRunner

    from tmemlint.cli import app

    monkeypatch.setattr(pipeline, "SPLIT_MIN_LINES", 0)  # forked workers inherit it
    monkeypatch.setattr(pipeline, "SPLIT_MIN_LINES_SHARED", 0)
    big = tmp_path / "big.ptx"
    big.write_text(scale_gen.lineinfo_like(3000, kernels=4, bad_kernel=2).text)
    files = [str(FIXTURES / "nvcc" / "tm102_ncols_bad.ptx"), str(big), str(MIXED),
             str(FIXTURES / "patterns" / "func_callee_alloc_dealloc_bad.ptx")]
    out = {n: CliRunner().invoke(app, ["check", "--isolated", "--no-cache", "--format", "concise", "--jobs",
                                       str(n), *files]) for n in (1, 2)}
    assert out[1].exit_code == out[2].exit_code == 1
    assert out[1].stdout == out[2].stdout
    assert sum(line.startswith(str(big)) and "TM102" in line for line in out[1].stdout.splitlines()) == 2
