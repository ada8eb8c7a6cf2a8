"""Interprocedural precision (``analysis.calls``): a call's return parameter is not a kernel parameter, the callee's
thread predicates are decided for the caller's warp class, constant arguments decide the callee's branches and the
same argument tested in two callees is correlated."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.analysis.calls import call_returns
from tmemlint.checks.context import FunctionContext
from tmemlint.checks.registry import load_all
from tmemlint.engine import lint_text
from tmemlint.frontend.parser import parse_text

load_all()

PAT = FIXTURES / "patterns"


def _found(text: str) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in lint_text(text, "k.ptx"))


# ---- B: a callee returning the TMEM address -------------------------------------------------------------------
RET = """.version 9.0
.target sm_100a
.address_size 64
.shared .align 4 .u32 slot;
.func (.param .b32 ret0) tmem_alloc()
{
\t.reg .b32 %r<3>;
\tmov.u32 %r1, slot;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 128;
\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
\tld.shared.u32 %r2, [slot];
\tst.param.b32 [ret0], %r2;
\tret;
}
.visible .entry k(.param .u32 k_param_0)
.reqntid 32, 1, 1
{
\t.reg .b32 %r<4>;
\t{
\t.param .b32 rv;
\tcall.uni (rv), tmem_alloc, ();
\tld.param.b32 %r2, [rv];
\t}
\tFREES
\tret;
}
"""


def test_return_parameter_is_the_callee_tmem_address():
    m = parse_text(RET.replace("FREES", "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;"), "k.ptx")
    k = m.functions[1]
    assert call_returns(m, k) == {"rv@1": ("tmem", ("sym", "slot", 0), 0, 0)}  # the body scope renames rv
    ctx = FunctionContext(m, k, "k.ptx")
    # the context checks the kernel with the callee expanded at its call (analysis.inline)
    dealloc = next(i for i in ctx.function.instructions if i.family == "tcgen05.dealloc")
    assert ctx.values.value(dealloc, dealloc.operands[0]) == ("tmem", ("sym", "slot", 0), 0, 0)
    assert ctx.sites.freed_slot[dealloc.index] == ("sym", "slot", 0)


def test_return_parameter_no_tm203_and_exact_lifecycle():
    free = "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;"
    assert _found(RET.replace("FREES", free)) == []
    # freed twice: the returned address is known to be the callee's allocation (TM104 on the second dealloc)
    assert _found(RET.replace("FREES", free + "\n\t" + free)) == [("TM104", 25)]
    # never freed: TM101 at the callee's alloc
    assert _found(RET.replace("FREES", "")) == [("TM101", 9)]


def test_kernel_parameter_still_reported():
    text = RET.replace("FREES", "ld.param.u32 %r3, [k_param_0];\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 "
                                "%r3, 128;")
    got = [f for f in lint_text(text, "k.ptx") if f.code == "TM203"]
    assert [(f.line, "kernel parameter k_param_0" in f.message) for f in got] == [(25, True)]


def test_unknown_returned_value_is_opaque():
    # the callee returns a loaded value that is not a TMEM address: the caller's value is opaque, no TM203
    text = RET.replace("ld.shared.u32 %r2, [slot];", "ld.global.u32 %r2, [%rd9];").replace(
        ".reg .b32 %r<3>;", ".reg .b32 %r<3>;\n\t.reg .b64 %rd<10>;\n\tmov.u64 %rd9, 0;").replace(
        "FREES", "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;")
    assert [c for c, _ in _found(text)] == []


def test_returns_taddr_fixtures():
    assert _found((PAT / "func_returns_taddr.ptx").read_text()) == []
    assert [c for c, _ in _found((PAT / "func_returns_taddr_bad.ptx").read_text())] == ["TM104"]


# ---- A: the callee's branches at the call -----------------------------------------------------------------------
def test_cond_and_warp_gated_fixtures():
    assert _found((PAT / "func_warp_gated_helpers.ptx").read_text()) == []
    assert _found((PAT / "func_cond_helpers.ptx").read_text()) == []
    assert _found((PAT / "func_cond_helpers_bad.ptx").read_text()) == [("TM101", 24)]


def test_callee_thread_predicates_split_the_callers_warps():
    m = parse_text((PAT / "func_warp_gated_helpers.ptx").read_text(), "k.ptx")
    k = next(f for f in m.functions if f.is_entry)
    ctx = FunctionContext(m, k, "k.ptx")
    assert [c.warps for c in ctx.threads.classes] == [(0,), tuple(range(1, 32))]


COND = """.version 9.0
.target sm_100a
.address_size 64
.shared .align 4 .u32 slot;
.global .align 4 .u32 flag;
.func alloc_if(.param .b32 c)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<3>;
\tALLOC_COND
\t@%p1 bra L_a;
\tmov.u32 %r2, slot;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r2], 128;
L_a:
\tret;
}
.func free_if(.param .b32 c)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<3>;
\tFREE_COND
\t@%p1 bra L_f;
\tld.shared.u32 %r2, [slot];
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r2, 128;
L_f:
\tret;
}
.visible .entry k(.param .u32 k_c, .param .u32 k_d)
.reqntid 32, 1, 1
{
\t.reg .b32 %r<4>;
\tld.param.u32 %r1, [k_c];
\tld.param.u32 %r2, [k_d];
\t{
\t.param .b32 a0;
\tst.param.b32 [a0], ARG_A;
\tcall.uni alloc_if, (a0);
\t}
\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
\t{
\t.param .b32 a1;
\tst.param.b32 [a1], ARG_F;
\tcall.uni free_if, (a1);
\t}
\tret;
}
"""
PARAM_COND = "ld.param.u32 %r1, [c];\n\tsetp.eq.s32 %p1, %r1, 0;"
LOAD_COND = "ld.global.u32 %r1, [flag];\n\tsetp.eq.s32 %p1, %r1, 0;"
LANE_COND = "mov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p1, %r1, 0;"


def _cond(alloc_cond: str, free_cond: str, arg_a: str, arg_f: str) -> str:
    return COND.replace("ALLOC_COND", alloc_cond).replace("FREE_COND", free_cond).replace(
        "ARG_A", arg_a).replace("ARG_F", arg_f)


def test_same_kernel_parameter_correlates_the_two_callees():
    assert _found(_cond(PARAM_COND, PARAM_COND, "%r1", "%r1")) == []
    # a different kernel parameter: c = 1, d = 0 leaks, c = 0, d = 1 frees columns never allocated (as it would
    # written inline)
    assert _found(_cond(PARAM_COND, PARAM_COND, "%r1", "%r2")) == [("TM101", 14), ("TM104", 26)]


def test_constant_arguments_decide_the_callee():
    assert _found(_cond(PARAM_COND, PARAM_COND, "1", "1")) == []
    assert _found(_cond(PARAM_COND, PARAM_COND, "1", "0")) == [("TM101", 14)]
    assert _found(_cond(PARAM_COND, PARAM_COND, "0", "0")) == []


def test_lane_predicate_in_both_callees_is_the_same_thread():
    # each callee tests tid.x == 0 itself: thread 0 allocates and frees (no TM101); the .sync.aligned alloc and
    # dealloc under a lane-varying branch are divergent collectives (TM109, true)
    assert _found(_cond(LANE_COND, LANE_COND, "%r1", "%r1")) == [("TM109", 14), ("TM109", 26)]


def test_undecidable_callee_branch_is_conservative():
    # each callee branches on a value it loads: the caller cannot correlate the two, so no report (nor TM104)
    assert _found(_cond(LOAD_COND, LOAD_COND, "%r1", "%r1")) == []
    # the callees expanded at their calls (analysis.inline) are judged as the same code written inline: an
    # allocation under a loaded flag and an unconditional free is a free with no allocation when the flag is 0,
    # an allocation under that flag never freed is a leak when it is not
    assert _found(_cond(LOAD_COND, PARAM_COND, "%r1", "1")) == [("TM104", 26)]
    assert _found(_cond(LOAD_COND, PARAM_COND, "%r1", "0")) == [("TM101", 14)]
