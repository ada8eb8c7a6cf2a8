"""Recall gaps closed in issue 3, pinned on small variants of the fixtures: TM206 on thread-indexed stores into
the slot's variable, TM301 through register renames, TM101 for allocations made in a ``.func`` callee."""

from __future__ import annotations

from conftest import FIXTURES
from tmemlint.checks.registry import load_all
from tmemlint.engine import lint_text

load_all()

TRITON_BAD = (FIXTURES / "ptx" / "triton_same_predicate_bad.ptx").read_text()
STORE = "\tst.shared.b32 \t[%r13], %r14; // expect: TM206\n"


def _codes(text: str, code: str) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in lint_text(text, "k.ptx") if f.code == code)


def _store(line: str, shl: int = 2) -> str:
    assert STORE in TRITON_BAD
    return TRITON_BAD.replace(STORE, line + "\n").replace("shl.b32 \t%r12, %r1, 2;", f"shl.b32 \t%r12, %r1, {shl};")


def test_tm206_thread_indexed_store_on_the_slot():
    # global_smem + (tid.x << 2): thread 0 writes bytes 0-3, the slot
    assert _codes(TRITON_BAD, "TM206") == [("TM206", 33)]


def test_tm206_thread_indexed_store_past_the_slot():
    # + 4: thread 0 writes bytes 4-7, no thread writes the slot
    assert _codes(_store("\tst.shared.b32 \t[%r13+4], %r14;"), "TM206") == []


def test_tm206_thread_guard_decides():
    # only threads >= 32 store (offsets from 128 on): clean; only threads < 32 (thread 0 among them): reported
    assert _codes(_store("\t@!%p2 st.shared.b32 \t[%r13], %r14;"), "TM206") == []
    assert _codes(_store("\t@%p2 st.shared.b32 \t[%r13], %r14;"), "TM206") == [("TM206", 33)]


def test_tm206_store_width():
    # tid.x * 16 - 8: thread 0 writes from byte -8; 8 bytes (v2.b32) stop before the slot, 16 bytes (v4) cover it
    assert _codes(_store("\tst.shared.v2.b32 \t[%r13+-8], {%r14, %r14};", shl=4), "TM206") == []
    assert _codes(_store("\tst.shared.v4.b32 \t[%r13+-8], {%r14, %r14, %r14, %r14};", shl=4), "TM206") == \
        [("TM206", 33)]


CALLEE_BAD = (FIXTURES / "patterns" / "func_callee_alloc_dealloc_bad.ptx").read_text()
CALLEE_RET = "\t.loc\t1 38 1\n\tret;\n"


def _findings(text: str, code: str):
    return [f for f in lint_text(text, "k.ptx") if f.code == code]


def test_tm101_alloc_in_callee_reported_at_the_callee_alloc():
    (f,) = _findings(CALLEE_BAD, "TM101")
    assert (f.line, f.function) == (26, "_Z9gemm_tilePK5uint4S1_Pf")
    assert [r.line for r in f.related] == [273, 431]  # the call (warp 0), the kernel's exit
    assert "128 TMEM columns" in f.message and "_Z10tmem_allocPj" in f.message


def test_tm101_callee_that_cannot_be_followed_is_conservative():
    assert CALLEE_RET in CALLEE_BAD
    # recursion: the callee calls itself
    recursive = CALLEE_BAD.replace(CALLEE_RET, "\tcall.uni _Z10tmem_allocPj, ();\n" + CALLEE_RET, 1)
    assert _findings(recursive, "TM101") == []
    # a callee path that ends the thread (exit) instead of returning: expanded at its call (analysis.inline), the
    # allocating warp exits holding the columns, and no other warp frees them: a leak (the callee's alloc)
    exiting = CALLEE_BAD.replace(CALLEE_RET, "\texit;\n", 1)
    assert [f.line for f in _findings(exiting, "TM101")] == [26]


def test_tm101_callee_alloc_freed_by_the_kernel():
    # the kernel frees the callee's allocation itself (its load of the slot is a TMEM address of that allocation)
    good = (FIXTURES / "patterns" / "func_callee_alloc_kernel_free.ptx").read_text()
    assert lint_text(good, "k.ptx") == []
    bad = (FIXTURES / "patterns" / "func_callee_alloc_kernel_free_bad.ptx").read_text()
    (f,) = lint_text(bad, "k.ptx")
    assert (f.code, f.line, [r.line for r in f.related]) == ("TM103", 435, [26])


def test_tm101_kernel_without_tcgen05_of_its_own():
    # the kernel's only TMEM instructions are in its callees (its tcgen05.fence lines removed): still checked
    import re

    k = CALLEE_BAD.index(".visible .entry")
    kernel = re.sub(r"\ttcgen05\.fence::\w+;\n", "", CALLEE_BAD[k:])
    assert "tcgen05" not in kernel.split(".file")[0]
    assert [(f.code, f.line) for f in lint_text(CALLEE_BAD[:k] + kernel, "k.ptx")] == [("TM101", 26)]


BRANCH_SKIP = """.version 9.0
.target sm_100a
.address_size 64
.shared .align 16 .b8 smem[1024];
.visible .entry k(.param .u64 out)
.reqntid 128, 1, 1
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<16>;
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tsetp.ne.u32 %p1, %r2, 0;
\t@%p1 bra L_skipalloc;
\tmov.u32 %r3, smem;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 128;
\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
L_skipalloc:
\tbar.sync 0;
\tsetp.COND.u32 %p2, %r1, K;
\t@%p2 bra L_s;
\tshl.b32 %r4, %r1, 2;
\tmov.u32 %r5, smem;
\tadd.s32 %r6, %r5, %r4;
\tst.shared.u32 [%r6], %r1;
L_s:
\tbar.sync 0;
\tld.shared.u32 %r8, [smem];
\tbar.sync 0;
\t@%p1 bra L_end;
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r8, 128;
L_end:
\tret;
}
"""


def _branch_skip(cond: str, k: int) -> str:
    return BRANCH_SKIP.replace("COND", cond).replace("K;", f"{k};")


def test_tm206_branch_on_tid_skips_the_slot_thread():
    # `@%p2 bra` around the store: the threads that fall through are those with !(tid cmp k)
    assert _codes(_branch_skip("eq", 0), "TM206") == []          # thread 0 skips the store
    assert _codes(_branch_skip("lt", 1), "TM206") == []          # threads < 1 skip it
    assert _codes(_branch_skip("eq", 5), "TM206") == [("TM206", 24)]   # thread 0 stores into bytes 0-3
    assert _codes(_branch_skip("ge", 64), "TM206") == [("TM206", 24)]  # threads 0-63 store


def test_tm206_branch_skip_fixtures():
    pat = FIXTURES / "patterns"
    assert _codes((pat / "slot_in_buffer_branch_skips_t0.ptx").read_text(), "TM206") == []
    assert _codes((pat / "slot_in_buffer_branch_skips_t0_bad.ptx").read_text(), "TM206") == [("TM206", 169)]
