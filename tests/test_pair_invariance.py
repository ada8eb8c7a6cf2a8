"""``Feasibility.pair_invariant``: whether a predicate has the same truth value in the two CTAs of a CTA pair
(``%ctaid.d`` = 2j and 2j + 1, ``%cluster_ctarank`` = 2k and 2k + 1), asked of z3, with a counter-example for each
predicate that is not; and TM312's use of it (``barriers._cluster_uniform``) on a persistent tile loop."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.analysis.feasibility import MAX_PAIR_QUERIES
from tmemlint.analysis.threads import normalize
from tmemlint.analysis.values import opaque
from tmemlint.checks.context import FunctionContext
from tmemlint.engine import lint_file
from tmemlint.frontend.parser import parse_text

# one setp per question; the comment names the answer
_KERNEL = """
.version 8.7
.target sm_100a
.address_size 64
.visible .entry k(.param .u32 n)
{
	.reg .pred %p<20>;
	.reg .b32 %r<40>;
	.shared .align 4 .b32 word;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	shl.b32 %r3, %r1, 5;
	shr.u32 %r4, %r1, 7;
	setp.lt.u32 %p1, %r2, %r3;        // ctaid.x < n * 32: invariant (an even bound)
	setp.lt.u32 %p2, %r2, %r4;        // ctaid.x < n / 128: not (the bound may be odd)
	and.b32 %r5, %r2, 1;
	setp.eq.u32 %p3, %r5, 0;          // ctaid.x & 1 == 0: not (the pair bit itself)
	setp.le.u32 %p4, %r2, %r3;        // ctaid.x <= n * 32: not (2j == bound)
	setp.eq.u32 %p5, %r2, %r3;        // ctaid.x == n * 32: not
	not.b32 %r6, %r2;
	add.s32 %r7, %r3, %r6;
	shr.u32 %r8, %r7, 1;
	setp.lt.u32 %p6, %r8, %r1;        // (n * 32 + ~ctaid.x) >> 1 < n: invariant (bound - 1 - 2j is odd)
	ld.shared.u32 %r9, [word];
	shl.b32 %r10, %r9, 1;
	setp.lt.u32 %p7, %r2, %r10;       // ctaid.x < 2 * smem word: not (shared memory is per CTA)
	mov.u32 %r11, %cluster_ctarank;
	setp.lt.u32 %p8, %r11, %r3;       // cluster_ctarank < n * 32: invariant (ranks 2k, 2k + 1)
	mov.u32 %r12, %ctaid.y;
	setp.lt.u32 %p9, %r12, %r4;       // ctaid.y < n / 128: not (a pair along y)
	shl.b32 %r13, %r1, 4;
	setp.lt.s32 %p10, %r2, %r13;      // signed ctaid.x < n * 16: invariant
	ret;
}
"""


def _keys():
    m = parse_text(_KERNEL, "k.ptx")
    ctx = FunctionContext(m, m.functions[0], "k.ptx")
    va = ctx.values
    keys = {}
    for inst in ctx.function.instructions:
        if inst.op == "setp":
            reg = inst.operands[0].name
            keys[reg] = normalize(va.def_value[(inst.index, reg)])[0]
    return ctx, keys


def test_pair_invariance_proofs_and_counter_examples():
    ctx, keys = _keys()
    fe = ctx.feasibility
    got = {r: fe.pair_invariant(k) for r, k in keys.items()}
    assert got == {"%p1": True, "%p2": False, "%p3": False, "%p4": False, "%p5": False, "%p6": True,
                   "%p7": False, "%p8": True, "%p9": False, "%p10": True}
    queries = fe.cost.queries
    assert fe.pair_invariant(keys["%p1"]) is True  # cached per predicate
    assert fe.cost.queries == queries and fe.cost.hits >= 1


def test_pair_invariance_is_budgeted_and_undecided_means_not_proven():
    ctx, keys = _keys()
    fe = ctx.feasibility
    fe._pair_queries = MAX_PAIR_QUERIES  # the function's budget used: unknown, not a guess
    assert fe.pair_invariant(keys["%p1"]) is None
    assert fe.cost.capped == 1
    ctx, keys = _keys()
    fe = ctx.feasibility
    assert fe.pair_invariant(opaque(10 ** 6)) is False  # a predicate of unknown origin: its own Boolean per CTA


def test_persistent_tile_loop_of_a_pair_is_one_trip_count():
    good = lint_file(FIXTURES / "ptx" / "tm312_pair_persistent_tiles_good.ptx")
    bad = lint_file(FIXTURES / "ptx" / "tm312_pair_persistent_tiles_bad.ptx")
    assert [f.code for f in good.findings] == []
    assert [(f.code, f.line) for f in bad.findings] == [("TM312", 85)]
