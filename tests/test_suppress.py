"""Suppression comments: every bad fixture (PTX, and CUDA in source mode) is silenced by disable comments on its
finding lines; the three directive kinds, codes and names; TM902 for suppressions that suppress nothing."""

from __future__ import annotations

from collections import defaultdict

import pytest

from conftest import FIXTURES, SHARED, expectations
from ptx_samples import ALLOC_LINE, DEALLOC_LINE, NCOLS_96, insert_line, with_comment
from tmemlint.checks.registry import RULES, load_all
from tmemlint.engine import Options, lint_file, lint_text, source_linter
from tmemlint.suppress import parse_directives

load_all()


def _bad_files():
    """Bad PTX fixtures, and bad CUDA sources (checked only when the engine has a source-mode linter); a CUDA
    fixture whose fault source mode does not report yet is a strict xfail with the reason of
    ``test_cuda_source.SOURCE_GAPS``."""
    from test_cuda_source import SOURCE_GAPS

    files = sorted((FIXTURES / "nvcc").glob("tm*_bad.ptx")) + sorted((FIXTURES / "nvcc").glob("tm*_bad.cu"))
    files = [p for p in files if p.suffix != ".ptx" or any(expectations(p))]  # TM903: a fault of the .cu only
    if SHARED.is_dir():
        files += sorted((SHARED / "cases").glob("*/bad*.ptx")) + sorted((SHARED / "cases").glob("*/bad*.cu"))
    out = []
    for p in files:
        rel = p.relative_to(FIXTURES.parent).as_posix() if FIXTURES.parent in p.parents else ""
        marks = [pytest.mark.xfail(strict=True, reason=SOURCE_GAPS[rel])] if rel in SOURCE_GAPS else []
        out.append(pytest.param(p, id=f"{p.parent.name}/{p.name}", marks=marks))
    return out


def _silence(path, tmp_path, use_names: bool):
    if path.suffix == ".cu" and source_linter() is None:
        pytest.skip("no CUDA source mode in this engine")
    load_all()
    every = Options(set(RULES))  # rules that are off by default (TM107, TM306) report their own bad fixtures too
    found = lint_file(path, options=every).findings
    by_line = defaultdict(list)
    for f in found:
        by_line[f.line].append(f.name if use_names else f.code)
    text = path.read_text(encoding="utf-8")
    for line, codes in by_line.items():
        text = with_comment(text, line, "// tmemlint: disable=" + ",".join(dict.fromkeys(codes)))
    out = tmp_path / path.name
    out.write_text(text, encoding="utf-8")
    return found, lint_file(out, options=every).findings


@pytest.mark.parametrize("path", _bad_files())
def test_bad_fixture_is_silenced_by_its_disable_comments(path, tmp_path):
    found, after = _silence(path, tmp_path, use_names=False)
    assert {f.code for f in found} - {"TM901"}, "a bad fixture reports its rule"
    assert [(f.line, f.code) for f in after] == []


def test_silenced_by_name(tmp_path):
    path = FIXTURES / "nvcc" / "tm102_ncols_bad.ptx"
    found, after = _silence(path, tmp_path, use_names=True)
    # the two bad column counts, and TM307's warnings on the scale-factor copies (the CUTLASS mainloop idiom)
    assert sorted(f.code for f in found) == ["TM102", "TM102", "TM307", "TM307"]
    assert after == []


OPTS = Options({"TM102", "TM902"})


def test_disable_this_line_by_code_and_name():
    text = with_comment(NCOLS_96, ALLOC_LINE, "// tmemlint: disable=TM102")
    text = with_comment(text, DEALLOC_LINE, "/* tmemlint: disable = Invalid-NCols */")
    assert lint_text(text, "k.ptx", OPTS) == []


def test_disable_next_line():
    text = insert_line(NCOLS_96, ALLOC_LINE, "\t// tmemlint: disable-next-line=invalid-ncols")
    got = lint_text(text, "k.ptx", OPTS)
    assert [(f.line, f.code) for f in got] == [(DEALLOC_LINE + 1, "TM102")]


def test_disable_file_anywhere():
    text = NCOLS_96 + "// tmemlint: disable-file=TM102\n"
    assert lint_text(text, "k.ptx", OPTS) == []


def test_unused_suppression_is_reported_at_the_comment():
    text = with_comment(NCOLS_96, 11, "// tmemlint: disable=TM102")
    got = lint_text(text, "k.ptx", OPTS)
    assert [(f.line, f.column, f.end_column, f.code, f.severity.value, f.message) for f in got] == [
        (11, 23, 49, "TM902", "warning",
         "unused suppression: TM102 (invalid-ncols) reported nothing on this line"),
        (ALLOC_LINE, 2, 68, "TM102", "error",
         "tcgen05.alloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"),
        (DEALLOC_LINE, 2, 56, "TM102", "error",
         "tcgen05.dealloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"),
    ]
    assert got[0].name == "unused-suppression"


def test_partly_used_unknown_and_malformed_directives():
    text = with_comment(NCOLS_96, ALLOC_LINE, "// tmemlint: disable=TM102,TM101,TM999")
    text = insert_line(text, 2, "// tmemlint: disable-line=TM102")
    text = insert_line(text, 3, "// tmemlint: disable-file")
    got = lint_text(text, "k.ptx", Options({"TM101", "TM102", "TM902"}))
    assert [(f.line, f.code, f.message) for f in got] == [
        (2, "TM902", "unknown suppression directive 'tmemlint: disable-line' (expected disable, "
                     "disable-next-line, disable-file)"),
        (3, "TM902", "'tmemlint: disable-file' names no rule (write disable-file=CODE[,CODE...])"),
        (ALLOC_LINE + 2, "TM902", "unknown rule 'TM999' in suppression"),
        (ALLOC_LINE + 2, "TM902", "unused suppression: TM101 (tmem-leak) reported nothing on this line"),
        (DEALLOC_LINE + 2, "TM102",
         "tcgen05.dealloc column count 96 is not a power of two (nCols must be a power of two in [32, 512])"),
    ]


def test_suppression_of_a_rule_that_did_not_run_is_not_unused():
    text = with_comment(NCOLS_96, 11, "// tmemlint: disable=TM301")
    assert [f.code for f in lint_text(text, "k.ptx", OPTS)] == ["TM102", "TM102"]


def test_tm902_can_be_silenced_and_deselected():
    text = with_comment(NCOLS_96, 11, "// tmemlint: disable=TM102") + "// tmemlint: disable-file=TM902\n"
    assert [f.code for f in lint_text(text, "k.ptx", OPTS)] == ["TM102", "TM102"]
    text = with_comment(NCOLS_96, 11, "// tmemlint: disable=TM102")
    assert [f.code for f in lint_text(text, "k.ptx", Options({"TM102"}))] == ["TM102", "TM102"]


def test_syntax_error_can_be_silenced_and_gives_no_tm902():
    text = ".version 8.7\n.target sm_100a\n.entry k() { add.f32 %f1 } // tmemlint: disable=TM900,TM101\n"
    assert lint_text(text, "k.ptx") == []


def test_directives_in_cuda_source():
    cu = ('__global__ void k() {\n'
          '  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 96; '
          '// tmemlint: disable=TM102\\n" :: "r"(s));\n'
          '  // tmemlint: disable-next-line=tmem-leak\n'
          '  /* tmemlint: disable-file=TM301 */\n'
          '}\n')
    got = [(d.kind, d.line, d.target, d.codes) for d in parse_directives(cu)]
    assert got == [("disable", 2, 2, [("TM102", "TM102")]),
                   ("disable-next-line", 3, 4, [("tmem-leak", "TM101")]),
                   ("disable-file", 4, None, [("TM301", "TM301")])]


def test_lines_are_counted_at_line_feeds_only():
    """A form feed or U+2028 inside a comment does not shift the lines suppressions and fingerprints see."""
    text = NCOLS_96.replace("\t.reg .pred %p<2>;", "\t.reg .pred %p<2>; // a\x0cb \u2028 c")
    text = text.replace(", 96;", ", 96; // tmemlint: disable=TM102")
    assert lint_text(text, "k.ptx", OPTS) == []


# ---- findings in included headers (issue 14) ---------------------------------------------------------------------

def _project_with(tmp_path, monkeypatch, where: str, comment: str):
    """fixtures/projects/leak_early_return_bad copied, ``comment`` appended to line 11 of ``where`` (the header's
    line 11 is the tcgen05.alloc source mode reports TM101 at)."""
    import shutil

    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects" / "leak_early_return_bad", proj)
    f = proj / where
    lines = f.read_text(encoding="utf-8").split("\n")
    lines[10] += "  " + comment
    f.write_text("\n".join(lines), encoding="utf-8")
    monkeypatch.chdir(proj)
    return proj


def _found_in(path: str) -> list[tuple[str, int, int, str]]:
    import os

    return [(os.path.normpath(f.path), f.line, f.column, f.code) for f in lint_file(path).findings]


def test_a_header_comment_silences_the_finding_in_the_header(tmp_path, monkeypatch):
    _project_with(tmp_path, monkeypatch, "include/tmem_alloc.cuh", "// tmemlint: disable=TM101")
    assert _found_in("src/gemm_epilogue.cu") == []
    # the header checked on its own does not get TM101 (its helper is analysed without the kernel): not unused
    assert _found_in("include/tmem_alloc.cuh") == []


def test_the_main_files_comment_on_the_same_line_number_does_not_silence_a_header_finding(tmp_path, monkeypatch):
    _project_with(tmp_path, monkeypatch, "src/gemm_epilogue.cu", "// tmemlint: disable=TM101")
    assert _found_in("src/gemm_epilogue.cu") == [("include/tmem_alloc.cuh", 11, 17, "TM101"),
                                                  ("src/gemm_epilogue.cu", 11, 37, "TM902")]


def test_a_header_alone_still_reports_unused_suppressions_of_rules_it_judges(tmp_path, monkeypatch):
    _project_with(tmp_path, monkeypatch, "include/tmem_alloc.cuh", "// tmemlint: disable=TM102,TM101")
    assert _found_in("include/tmem_alloc.cuh") == [("include/tmem_alloc.cuh", 11, 102, "TM902")]
    assert _found_in("src/gemm_epilogue.cu") == []  # TM101 silenced; the header's directives are not judged here
