"""One typo must not hide everything (issue 19, item 4): a syntax error inside one PTX function gives TM900 there
while the other functions keep their findings (``parser.parse_isolating``), for the CLI and the editor alike; a
CUDA function whose brace is left open does not swallow the functions after it (``frontend.cuda.recover``)."""

from __future__ import annotations

import textwrap

import pytest

from ptx_samples import NCOLS_96
from tmemlint.engine import lint_document, lint_text
from tmemlint.frontend.cuda.recover import close_unfinished
from tmemlint.options import Options

DEALLOC = "\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 96;\n"
LEAK = NCOLS_96.replace(DEALLOC, "")
HEAD, BODY = LEAK[:LEAK.index(".visible")], LEAK[LEAK.index(".visible"):]
#: two kernels k and k2 (k2 from line 30), each with TM101 and TM102 at its alloc (lines 16 and 34)
TWO = HEAD + BODY + "\n" + BODY.replace("entry k()", "entry k2()")


def codes(findings):
    return [(f.code, f.line, f.column) for f in findings]


def test_a_typo_in_one_ptx_kernel_keeps_the_others_findings():
    assert codes(lint_text(TWO, "t.ptx")) == [("TM101", 16, 2), ("TM102", 16, 2), ("TM101", 34, 2), ("TM102", 34, 2)]
    bad = TWO.replace("\tshr.u32 %r2, %r1, 5;", "\tshr.u32 %r2, %r1 5;", 1)  # a comma missing in k
    got = lint_text(bad, "t.ptx")
    assert codes(got) == [("TM900", 12, 19), ("TM101", 34, 2), ("TM102", 34, 2)]
    assert got[0].message == "unexpected '5' (expected ',', '}', RPAR, ']', ';', VBAR)"
    # both kernels broken: two TM900; an unused suppression inside a broken kernel is not reported
    bad2 = bad.replace("\tsetp.ne.u32 %p1, %r2, 0;", "\tsetp.ne.u32 %p1, %r2, 0; // tmemlint: disable=TM102", 1)
    bad2 = bad2[:bad2.rindex("\tret;")] + "\tret\n}\n"
    assert codes(lint_text(bad2, "t.ptx")) == [("TM900", 12, 19), ("TM900", 39, 1)]  # the brace after the unfinished ret


def test_an_error_outside_the_functions_is_still_one_error_for_the_file():
    bad = TWO.replace(".target sm_100a", ".target sm_100a foo")
    assert codes(lint_text(bad, "t.ptx")) == [("TM900", 2, 17)]


def test_a_broken_func_takes_its_callers_with_it():
    """A kernel that calls a .func that does not parse is not analysed against the .func's empty stub (its
    dealloc would look missing)."""
    text = HEAD + textwrap.dedent("""\
        .func free_it(.param .b32 a)
        {
        \t.reg .b32 %r<2>;
        \tld.param.b32 %r1, [a];
        \ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 32;
        \tret;
        }
        """) + BODY.replace(", 96;", ", 32;").replace("\tld.shared.u32 %r4, [%r3];\n",
                                                   "\tld.shared.u32 %r4, [%r3];\n\t{\n\t.param .b32 p;\n"
                                                   "\tst.param.b32 [p], %r4;\n\tcall free_it, (p);\n\t}\n")
    assert codes(lint_text(text, "t.ptx")) == []
    bad = text.replace("ld.param.b32 %r1, [a];", "ld.param.b32 %r1 [a];")
    assert [c for c, _, _ in codes(lint_text(bad, "t.ptx"))] == ["TM900"]


CUDA = textwrap.dedent("""\
    #include <cstdint>
    constexpr int kCols = 96;

    __global__ void __launch_bounds__(128) k(uint32_t* out) {
      __shared__ uint32_t slot;
      if (threadIdx.x / 32 == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                     :: "r"((uint32_t)__cvta_generic_to_shared(&slot)), "n"(kCols) : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
      }
      __syncthreads();
      uint32_t taddr = slot;
      __syncthreads();
      if (threadIdx.x / 32 == 0) {
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "n"(kCols) : "memory");
      }
    }
    """)


def test_an_open_brace_in_one_cuda_kernel_does_not_swallow_the_next():
    two = CUDA + "\n" + CUDA.split("\n", 2)[2].replace(") k(", ") k2(")  # k2 from line 19
    assert codes(lint_document(two, "k.cu")) == [("TM102", 7, 19), ("TM102", 15, 19), ("TM102", 23, 19),
                                                 ("TM102", 31, 19)]
    bad = two.replace("  uint32_t taddr = slot;\n", "  uint32_t taddr = slot; if (taddr == 0) {\n", 1)
    assert close_unfinished(bad).split("\n")[18] == " @}"  # the blank line before k2
    got = lint_document(bad, "k.cu")
    assert codes(got) == [("TM901", 19, 2), ("TM102", 23, 19), ("TM102", 31, 19)]
    assert got[0].message == ("function k is not analysed: the C++ parser could not read the code at this line")
    assert close_unfinished(two) == two


@pytest.mark.parametrize("scope", ["namespace ns {\n", "struct S {\n", 'extern "C" {\n'])
def test_functions_inside_scopes_are_not_closed(scope):
    text = scope + "__device__ int f() { return 1; }\n__device__ int g() { return 2; }\n}\n"
    assert close_unfinished(text) == text


def test_the_editor_gets_the_other_kernels_findings_while_one_has_a_typo(tmp_path):
    pytest.importorskip("pygls")
    from test_server_editor import Editor

    (tmp_path / "tmemlint.toml").write_text('select = ["TM101", "TM102"]\n')
    e = Editor(tmp_path)
    try:
        e.start(tmp_path)
        uri = (tmp_path / "t.ptx").as_uri()
        e.open(uri, TWO)
        assert [d["code"] for d in e.diagnostics(uri)["diagnostics"]] == ["TM101", "TM102", "TM101", "TM102"]
        e.change(uri, TWO.replace("\tshr.u32 %r2, %r1, 5;", "\tshr.u32 %r2, %r1 5;", 1), 2)
        got = e.diagnostics(uri)
        assert (got["version"], [(d["code"], d["range"]["start"]["line"]) for d in got["diagnostics"]]) == (
            2, [("TM900", 11), ("TM101", 33), ("TM102", 33)])
    finally:
        e.close()


def test_options_unchanged_for_files_that_parse():
    assert codes(lint_text(TWO, "t.ptx", Options(codes={"TM101"}))) == [("TM101", 16, 2), ("TM101", 34, 2)]


def test_lint_file_reports_the_typo_and_the_other_kernels_leak(tmp_path):
    """Through the CLI's path (``lint_file``): a kernel with a syntax error (here a blank inside an instruction
    name, which ptxas rejects too) and a kernel with a real leak give the TM900 and the TM101."""
    from tmemlint.engine import lint_file

    bad = TWO.replace("\ttcgen05.alloc.cta_group::1", "\ttcgen05 .alloc.cta_group::1", 1)
    f = tmp_path / "two.ptx"
    f.write_text(bad)
    got = lint_file(f).findings
    assert codes(got) == [("TM900", 16, 10), ("TM101", 34, 2), ("TM102", 34, 2)]
    assert "'tcgen05.alloc'" in got[0].message


def test_compile_mode_confines_an_unreadable_function_of_nvccs_ptx(monkeypatch):
    """Compile mode reads nvcc's PTX with the same isolation: a function the grammar cannot read is one TM900 (at
    the source's first line: its instructions are not known, so neither are their .loc), the others are linted."""
    import tmemlint.compile

    ptx = TWO.replace("\tshr.u32 %r2, %r1, 5;", "\tshr.u32 %r2, %r1 5;", 1)
    monkeypatch.setattr(tmemlint.compile, "compile_to_ptx", lambda *a, **k: ptx)
    got = lint_document("__global__ void k() {}\n", "k.cu", Options(compile=True))
    assert sorted({f.code for f in got}) == ["TM101", "TM102", "TM900"]
    unread = [f for f in got if f.code == "TM900"]
    assert len(unread) == 1 and unread[0].line == 1
    assert "not readable at its line 12" in unread[0].message and "lines 5-21 " in unread[0].message


def test_the_plan_leaves_out_a_function_that_does_not_parse():
    from tmemlint.frontend.parser import parse_text_isolating

    bad = TWO.replace("\tshr.u32 %r2, %r1, 5;", "\tshr.u32 %r2, %r1 5;", 1)
    module, broken = parse_text_isolating(bad, "t.ptx", tmem_only=False)
    assert [fn.name for fn in module.functions if fn.instructions] == ["k2"]
    assert [(e.line, e.column, span) for e, span in broken] == [(12, 19, (5, 21))]
