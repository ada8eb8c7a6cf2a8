"""Only what the analyses need is parsed (``tmemlint.frontend.split.layout``, ``parser.parse_layout``): debug
sections, initializer values and functions that neither hold nor reach a tcgen05 instruction are left out, and the
result is the same as a full parse: the same functions by name, identical IR for every function the analyses read,
and the same findings, on every fixture, the shared cases and corpus, and the local third-party corpus
(``.corpus/ptx``, with ``TMEMLINT_CORPUS=1``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import EXAMPLES, FIXTURES, ROOT, SHARED
from tmemlint import pipeline
from tmemlint.checks.context import FunctionContext
from tmemlint.engine import Options, lint_text
from tmemlint.frontend import parser
from tmemlint.frontend.split import layout, needed, units

MODULE = """.version 9.0
.target sm_100a
.address_size 64
.shared .align 4 .u32 slot;
.global .align 4 .b32 table[3] = {1, 2,
  3};

.func leaf()
{
\tret;
}
.func helper_free(.param .b32 t)
{
\t.reg .b32 %r<2>;
\tld.param.b32 %r1, [t];
\t{ // callseq 0, 0
\tcall.uni
\tleaf,
\t(
\t);
\t} // callseq 0
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, 128;
\tret;
}
.func unused()
{
\tret;
}
.func only_by_plain()
{
\tret;
}
.visible .entry tmem_kernel()
{
\t.reg .b32 %r<4>;
\tmov.u32 %r1, slot;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;
\tld.shared.u32 %r2, [slot];
\t{
\t.param .b32 param0;
\tst.param.b32 [param0], %r2;
\tcall.uni helper_free, (param0);
\t}
\tret;
}
.visible .entry calls_helper()
{
\t.reg .b32 %r<2>;
\t{
\t.param .b32 param0;
\tst.param.b32 [param0], %r1;
\tcall.uni helper_free, (param0);
\t}
\tret;
}
.visible .entry plain()
{
\tcall.uni only_by_plain, ();
\tret;
}
.visible .entry indirect(.param .u64 fp)
{
\t.reg .b64 %rd<2>;
\tld.param.u64 %rd1, [fp];
\tproto: .callprototype _ ();
\tcall %rd1, (), proto;
\tret;
}
\t.section\t.debug_str
\t{
\t.b8 0
\t}
"""


def test_needed_functions():
    us = units(MODULE)
    keep = needed(MODULE, us)
    got = {u.name or u.kind: k for u, k in zip(us, keep)}
    assert got == {
        "init": False, "section": False,
        "leaf": True,              # called by a needed function
        "helper_free": True,       # tcgen05.dealloc
        "unused": False,           # no tcgen05, not called
        "only_by_plain": False,    # called only by a function that is not needed
        "tmem_kernel": True,       # tcgen05.alloc
        "calls_helper": True,      # calls a function that uses TMEM
        "plain": False,
        "indirect": True,          # an indirect call may reach helper_free
    }


def test_pruned_module_keeps_every_name_and_the_needed_bodies():
    lay = layout(MODULE)
    # not counted: the section's 4 lines, the list's line break, the line breaks of the 3 stub bodies
    assert (lay.lines, lay.code_lines) == (72, 72 - 4 - 1 - 2 - 2 - 3)
    pruned = parser.parse_layout(lay, "m.ptx")
    full = parser.parse_text(MODULE, "m.ptx")
    assert [f.name for f in pruned.functions] == [f.name for f in full.functions]
    for p, f in zip(pruned.functions, full.functions):
        if p.name in ("unused", "only_by_plain", "plain"):
            assert p.has_body and p.instructions == [] and p.span == f.span
        else:
            assert _digest(p) == _digest(f)
    assert pruned.variables == full.variables


def test_a_syntax_error_in_a_function_that_is_not_needed_is_not_reported():
    bad = MODULE.replace(".func unused()\n{\n\tret;", ".func unused()\n{\n\tret )")
    # the module's one finding, with or without the error: calls_helper frees through helper_free (inlined into
    # it) without ever allocating
    assert [(f.code, f.line, f.function) for f in lint_text(bad, "m.ptx")] == [("TM104", 22, "calls_helper")]
    assert lint_text(bad, "m.ptx") == lint_text(MODULE, "m.ptx")
    with pytest.raises(parser.PTXSyntaxError):
        parser.parse_text(bad, "m.ptx")


def test_a_syntax_error_in_a_needed_function_is_reported_there():
    """A needed function that does not parse gives TM900 at its own error (issue 19, item 4: the other functions
    are still analysed, ``parser.parse_isolating``); the error in a function that is not needed stays unseen."""
    bad = MODULE.replace(".func unused()\n{\n\tret;", ".func unused()\n{\n\tret )")
    bad = bad.replace("\tmov.u32 %r1, slot;", "\tmov.u32 %r1 slot;")
    got = [(f.code, f.line, f.column) for f in lint_text(bad, "m.ptx")]
    assert got == [("TM104", 22, 2), ("TM900", bad.split("\n").index("\tmov.u32 %r1 slot;") + 1, 14)]


def test_the_line_limit_counts_the_parsed_lines(monkeypatch):
    """Debug sections and stub bodies do not count: a file of 3,000 lines, most of them a section, is read with
    a limit of 1,000 lines."""
    big = MODULE.replace("\t.b8 0\n", "\t.b8 0\n" * 3000)
    monkeypatch.setattr(parser, "MAX_LINES", 1000)
    assert lint_text(big, "m.ptx") == lint_text(MODULE, "m.ptx")
    monkeypatch.setattr(parser, "MAX_LINES", 50)
    code = layout(big).code_lines
    assert [(f.code, f.message) for f in lint_text(big, "m.ptx")] == [
        ("TM901", f"{code:,} lines of code (debug sections and functions without tcgen05 not counted), more than "
                  f"the limit of 50: the file is not analysed")]


# ---------------------------------------------------------------------------------------- every file we have


def _files() -> list[Path]:
    """Every fixture, example and shared PTX file; with ``TMEMLINT_CORPUS=1`` also the local third-party corpus
    ``.corpus/ptx`` (about 30 minutes on 2 cores: each file is analysed twice)."""
    out = sorted(FIXTURES.rglob("*.ptx")) + sorted(EXAMPLES.glob("*.ptx"))
    if SHARED.is_dir():
        out += sorted(SHARED.rglob("*.ptx"))
    if os.environ.get("TMEMLINT_CORPUS") == "1":
        out += sorted((ROOT / ".corpus" / "ptx").rglob("*.ptx"))
    return out


def _id(p: Path) -> str:
    for base in (ROOT, SHARED):
        try:
            return str(p.relative_to(base))
        except ValueError:
            pass
    return p.name


def _digest(fn):
    insts = [(i.opcode, i.guard, i.operands, i.span, i.src) for i in fn.instructions]
    return (fn.name, fn.is_entry, fn.span, fn.params, fn.directives, fn.has_body, insts, fn.labels, fn.label_spans,
            fn.branch_targets, fn.variables)


@pytest.mark.parametrize("path", _files(), ids=_id)
def test_same_module_and_findings_as_a_full_parse(path, monkeypatch):
    """The pruned module against the full parse: the same functions by name, every function the analyses
    look at (``touches_tmem`` in the full module, and its callees) identical, the others stubs; and the same
    findings from ``lint_text`` with and without pruning (``pipeline.PRUNE``)."""
    monkeypatch.setattr(parser, "MAX_LINES", 10 ** 8)  # the full parse of the largest corpus files
    text = path.read_text(encoding="utf-8", errors="replace")
    lay = layout(parser.normalize(text))
    if lay is None:
        pytest.skip("the scan does not cut this text: it is parsed whole")
    try:
        full = parser.parse_text(text, str(path))
    except parser.PTXSyntaxError:
        pruned_error = None
        try:
            parser.parse_layout(lay, str(path))
        except parser.PTXSyntaxError as e:
            pruned_error = e
        assert pruned_error is not None  # a text the grammar rejects is not read by pruning either (here)
        return
    pruned = parser.parse_layout(lay, str(path))
    assert [f.name for f in pruned.functions] == [f.name for f in full.functions]
    assert (pruned.version, pruned.target, pruned.files, pruned.variables) == \
        (full.version, full.target, full.files, full.variables)
    read = set()
    for fn in full.functions:
        if fn.has_body and FunctionContext(full, fn, str(path)).touches_tmem:
            read.add(fn.name)
    work = list(read)
    while work:  # and every function they call
        fn = full.function(work.pop())
        for i in fn.instructions:
            if i.op == "call":
                for o in i.operands:
                    callee = full.function(getattr(o, "name", ""))
                    if callee is not None and callee.name not in read:
                        read.add(callee.name)
                        work.append(callee.name)
    for p, f in zip(pruned.functions, full.functions):
        if p.name in read or p.instructions:
            assert _digest(p) == _digest(f), p.name
        else:
            assert (p.name, p.span, p.has_body, p.params) == (f.name, f.span, f.has_body, f.params)
    got = [(f.code, f.line, f.column, f.message) for f in lint_text(text, str(path), Options())]
    monkeypatch.setattr(pipeline, "PRUNE", False)
    want = [(f.code, f.line, f.column, f.message) for f in lint_text(text, str(path), Options())]
    assert got == want
