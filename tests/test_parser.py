"""The grammar and the IR builder on the PTX forms real compilers write."""

from __future__ import annotations

import pytest

from conftest import SHARED, needs_shared
from tmemlint.frontend import PTXSyntaxError, parse_text
from tmemlint.ir import Address, Imm, Reg, Sym, Vec

HEADER = ".version 9.0\n.target sm_100a\n.address_size 64\n"


def body(text: str) -> str:
    return HEADER + ".visible .entry k(.param .u64 p)\n{\n" + text + "\n}\n"


def test_vector_without_space_after_opcode():
    m = parse_text(body("  .reg .b32 %r<4>;\n  tcgen05.ld.sync.aligned.32x32b.x2.b32{%r1, %r2},[%r3];"))
    inst = m.functions[0].instructions[0]
    assert inst.opcode == "tcgen05.ld.sync.aligned.32x32b.x2.b32"
    assert inst.family == "tcgen05.ld"
    assert inst.operands == (Vec((Reg("%r1"), Reg("%r2"))), Address(Reg("%r3"), 0))
    assert (inst.span.line, inst.span.column, inst.span.end_column) == (7, 3, 57)


def test_scopes_rename_locals_and_labels_in_sibling_scopes():
    text = """  { .reg .pred p; setp.eq.u32 p, %r1, 0; L1: @p bra L1; }
  { .reg .pred p; setp.ne.u32 p, %r1, 0; L1: @!p bra L1; }"""
    fn = parse_text(body(text)).functions[0]
    g1, g2 = fn.instructions[1].guard, fn.instructions[3].guard
    assert g1.reg.name != g2.reg.name
    assert g2.negated and not g1.negated
    assert fn.instructions[1].operands == (Sym("L1@1"),)
    assert fn.instructions[3].operands == (Sym("L1@2"),)
    assert fn.labels == {"L1@1": 1, "L1@2": 3}


def test_addresses_guards_and_branch_targets():
    text = """  ld.shared.b32 %r1, [global_smem+384];
  ld.shared.b8 %r2, [%r3+-4];
JT: .branchtargets A, B;
  @!%p1 brx.idx %r2, JT;
A: ret;
B: exit;"""
    fn = parse_text(body(text)).functions[0]
    assert fn.instructions[0].operands[1] == Address(Sym("global_smem"), 384)
    assert fn.instructions[1].operands[1] == Address(Reg("%r3"), -4)
    assert fn.branch_targets == {"JT": ("A", "B")}
    assert fn.instructions[2].guard.negated


def test_loc_maps_to_source_file_and_inlined_frames():
    text = HEADER + """.visible .entry k()
{
  .loc 1 7 3
  ret;
  .loc 1 9 5, function_name $L__info_string0, inlined_at 1 20 1
  exit;
}
.file 1 "kernel.cu"
"""
    fn = parse_text(text).functions[0]
    assert (fn.instructions[0].src.file, fn.instructions[0].src.line, fn.instructions[0].src.column) == ("kernel.cu", 7, 3)
    assert fn.instructions[1].src.inlined_at[0].line == 20


def test_debug_sections_are_one_token_and_lines_stay_exact():
    text = HEADER + ".section .debug_info\n{\n.b8 1\n.b32 .debug_abbrev\n}\n.visible .entry k()\n{\n  ret;\n}\n"
    m = parse_text(text)
    assert m.functions[0].instructions[0].span.line == 11


def test_module_declarations_and_directives():
    text = HEADER + """.extern .shared .align 16 .b8 global_smem[];
.global .align 4 .b32 tab[2] = {1, 2};
.visible .entry k(.param .align 64 .b8 k_p0[128], .param .u32 k_p1)
.maxntid 128, 1, 1
.minnctapersm 2
.reqnctapercluster 2, 1, 1
{
  ret;
}
"""
    m = parse_text(text)
    fn = m.functions[0]
    assert fn.directives == {"maxntid": (128, 1, 1), "minnctapersm": (2,), "reqnctapercluster": (2, 1, 1)}
    assert fn.threads_per_cta() == (128, 1, 1)
    assert m.variables["global_smem"].space == "shared" and m.variables["global_smem"].extern
    assert [p.name for p in fn.params] == ["k_p0", "k_p1"]


def test_integer_literal_forms():
    fn = parse_text(body("  mov.u32 %r1, 0x10;\n  mov.u32 %r1, -1;\n  mov.u32 %r1, 0b101;\n  mov.u32 %r1, 7U;")).functions[0]
    assert [i.operands[1] for i in fn.instructions] == [Imm(16), Imm(-1), Imm(5), Imm(7)]


@pytest.mark.parametrize("text,line,col", [
    (HEADER + ".visible .entry k()\n{\n  mov.u32 %r1 %r2;\n}\n", 6, 15),
    (HEADER + ".visible .entry k()\n{\n  ret;\n", 7, 1),
    ("int main() { return 0; }\n", 1, 1),
])
def test_syntax_errors_carry_positions(text, line, col):
    with pytest.raises(PTXSyntaxError) as e:
        parse_text(text)
    assert (e.value.line, e.value.column) == (line, col)


@needs_shared
def test_every_shared_file_parses():
    files = sorted((SHARED / "corpus" / "triton").glob("*.ptx")) + sorted((SHARED / "cases").glob("*/*.ptx"))
    assert len(files) == 36 + 25  # case 18 gained good_leader.ptx
    for f in files:
        m = parse_text(f.read_text(), str(f))
        assert m.version is not None
