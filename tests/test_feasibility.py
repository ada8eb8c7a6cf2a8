"""The solver's questions (``tmemlint.analysis.feasibility``): a counted loop's values and the pruning of a branch
outcome that contradicts a loop's exit test; z3 is imported only when a question is asked; ``mul.hi`` in the
translation."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, ROOT
from tmemlint.analysis.threads import normalize
from tmemlint.analysis.values import Op
from tmemlint.checks.context import FunctionContext
from tmemlint.checks.ordering import dealloc_unsynchronized
from tmemlint.frontend.parser import parse_file, parse_text


def _ctx(name: str) -> FunctionContext:
    path = FIXTURES / "ptx" / name
    m = parse_file(path)
    return FunctionContext(m, m.functions[0], str(path))


def test_counted_loop_values_at_the_header_read():
    ctx = _ctx("recall_chunk_loop_past_alloc_bad.ptx")
    fe = ctx.feasibility
    iv = fe.induction("%r30")
    assert iv is not None and (iv.delta, iv.width) == (32, 32)
    add = next(i for i in ctx.function.instructions if i.span.line == 54)  # add.s32 %r31, %r22, %r30
    assert fe.loop_values(add, "%r30") == frozenset({0, 32, 64, 96, 128})
    assert fe.loop_values(add, "%r30") == frozenset({0, 32, 64, 96, 128})
    assert (fe.cost.queries, fe.cost.hits) == (1, 1)
    assert fe.answered == {"%r30"}


def test_step16_loop_values():
    ctx = _ctx("feasibility_chunk_step16_good.ptx")
    add = next(i for i in ctx.function.instructions if i.span.line == 54)
    assert ctx.feasibility.loop_values(add, "%r30") == frozenset({0, 16, 32, 48})


def test_exit_after_a_skipped_last_iteration_barrier_is_pruned():
    ctx = _ctx("recall_last_iteration_barrier_good.ptx")
    assert [f.code for f in ctx.findings] == []
    dealloc_unsynchronized(ctx)
    assert ctx.findings == []
    assert ctx.feasibility.cost.pruned >= 1


def test_a_file_without_counted_loops_never_imports_z3():
    probe = ("import sys; from tmemlint.engine import lint_file; "
             f"lint_file({str(FIXTURES / 'ptx' / 'constant_taddr_memory_access.ptx')!r}); print('z3' in sys.modules)")
    assert (FIXTURES / 'ptx' / 'constant_taddr_memory_access.ptx').is_file()
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


# ``mul.hi`` in the translation (PTX ISA §9.7.1.3: the high half of the 2n-bit product, the operands extended as
# the type's signedness says): as a value (``Op`` ``mulhi.<type>`` of uniform operands) and as an instruction
# expanded from its opaque value (an operand with two definitions)
_MUL_HI = """
.version 8.7
.target sm_100a
.address_size 64
.visible .entry k(.param .u32 n)
{
	.reg .pred %p<20>;
	.reg .b32 %r<40>;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mul.hi.u32 %r3, %r2, -2147483648;  // ctaid.x >> 1: the pair's CTAs 2j, 2j + 1 give j
	setp.lt.u32 %p1, %r3, %r1;         // invariant
	mul.hi.s32 %r4, %r2, -2147483648;  // floor(-ctaid.x / 2): -j and -j - 1
	setp.lt.s32 %p2, %r4, %r1;         // not invariant (n = -j)
	setp.eq.u32 %p9, %r1, 7;
	mov.u32 %r20, %ctaid.x;
	@%p9 mov.u32 %r20, 5;
	mul.hi.u32 %r21, %r20, 2;          // the top bit of %r20: 0 or 1
	setp.lt.u32 %p3, %r21, 2;          // always true: invariant
	mul.hi.s32 %r22, %r20, 2;          // -1 or 0 (sign-extended; zero-extended it would be 0 or 1)
	setp.le.s32 %p4, %r22, 0;          // always true: invariant
	setp.lt.s32 %p5, %r22, 0;          // %r20 < 0, a value per CTA: not invariant
	ret;
}
"""


def test_mul_hi_is_the_high_half_of_the_signed_or_unsigned_product():
    m = parse_text(_MUL_HI, "k.ptx")
    ctx = FunctionContext(m, m.functions[0], "k.ptx")
    va = ctx.values
    setps = {i.operands[0].name: va.def_value[(i.index, i.operands[0].name)]
             for i in ctx.function.instructions if i.op == "setp" and i.operands[0].name != "%p9"}
    mul = next(i for i in ctx.function.instructions if i.op == "mul")
    op = va.def_value[(mul.index, "%r3")]
    assert type(op) is Op and op.name == "mulhi.u32"
    got = {r: ctx.feasibility.pair_invariant(normalize(v)[0]) for r, v in setps.items()}
    assert got == {"%p1": True, "%p2": False, "%p3": True, "%p4": True, "%p5": False}
