"""Unit tests of the happens-before engine itself (issue 24, item 5): ``SyncModel`` (``analysis/order.py``) asked
directly on small hand-written kernels, each run through the real pipeline (``pipeline.load`` → ``pipeline.analyse``
→ the ``FunctionContext`` every rule gets).

Every positive case has a counter-example twin that differs from it in one instruction (``_swap`` asserts that the
text changes in exactly one place).  The kernels are 128 threads (4 warps) unless a test says otherwise; the shared
prologue ``PRE`` has warp 0 allocate 128 columns, thread 0 initialise the mbarriers ``bar0``/``bar1`` with count 1,
and every warp pass one ``bar.sync 0`` (phase 0 of CTA barrier 0) before reading the TMEM address into ``%r5``.
Instructions a test asks about carry a ``// @name`` marker.

Sources: PTX ISA 9.0 §9.7.13.1 (``bar``/``barrier``: ``bar.sync a, b`` completes when ``b`` threads arrived,
``bar.arrive`` arrives without waiting), §9.7.13.15 (mbarrier phases; §9.7.13.15.16 ``try_wait.parity``: the
parity names the current phase or the immediately preceding one, so a wait on parity 1 of a fresh barrier
succeeds at once), §9.7.16.8.4 (``tcgen05.commit``: the mbarrier arrival happens when the thread's earlier
asynchronous tcgen05 operations complete); ``../shared/docs/tcgen05-reference.md`` §3.1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tmemlint import pipeline
from tmemlint.analysis.order import BarrierKey, Ordering, Release
from tmemlint.analysis.threads import WarpClass
from tmemlint.checks.context import FunctionContext
from tmemlint.ir import Instruction

HEAD = """.version 9.0
.target sm_100a
.address_size 64

.visible .entry k(.param .u64 out, .param .u32 flag)
{ntid}{{
\t.reg .pred %p<32>;
\t.reg .b32 %r<128>;
\t.reg .b64 %rd<32>;
\t.shared .align 4 .b32 slot;
\t.shared .align 8 .b64 bar0;
\t.shared .align 8 .b64 bar1;
"""

#: Warp 0 allocates 128 columns (PTX ISA §9.7.16.7.1) and relinquishes; thread 0 initialises bar0 and bar1
#: (count 1); every thread passes ``bar.sync 0`` once; ``%r1`` = ``%tid.x``, ``%r2`` = the warp index, ``%p1`` =
#: "not warp 0", ``%p8`` = "not thread 0", ``%r5`` = the TMEM base address, ``%p9`` = a CTA-uniform flag from a kernel parameter.
PRE = """
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tsetp.ne.u32 %p1, %r2, 0;
\t@%p1 bra ALLOCATED;
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [slot], 128;
\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
ALLOCATED:
\tsetp.ne.u32 %p8, %r1, 0;
\t@%p8 bra INITED;
\tmbarrier.init.shared::cta.b64 [bar0], 1;
\tmbarrier.init.shared::cta.b64 [bar1], 1;
INITED:
\ttcgen05.fence::before_thread_sync;
\tbar.sync 0;
\ttcgen05.fence::after_thread_sync;
\tld.shared.b32 %r5, [slot];
\tld.param.u32 %r9, [flag];
\tsetp.ne.u32 %p9, %r9, 0;
"""

#: The instruction descriptor of a dense ``kind::f16`` MMA with M = 128, N = 64 and an F32 accumulator (PTX ISA
#: §9.7.16.4.1 Table 42: D type F32 = 1 in bits 4-5, N >> 3 = 8 in bits 17-22, M >> 4 = 8 in bits 24-28).
IDESC_M128_N64 = (1 << 4) | (8 << 17) | (8 << 24)

BAR0 = BarrierKey("mbar", ("bar0", 0))
BAR1 = BarrierKey("mbar", ("bar1", 0))


@dataclass(frozen=True, slots=True)
class Kernel:
    """One analysed kernel: its context (what the rules get), its text, and the instructions marked ``// @name``."""

    ctx: FunctionContext
    text: str
    at: dict[str, Instruction]

    def warp(self, w: int) -> WarpClass:
        """The warp class holding warp ``w`` (``tid.x // 32``)."""
        return next(k for k in self.ctx.threads.classes if w in k.warps)


def kernel_text(body: str, ntid: int | None = 128, pre: str = PRE) -> str:
    """A PTX module with one kernel ``k`` whose body is ``pre`` then ``body`` then ``ret``; ``.maxntid ntid, 1, 1``
    (none when ``ntid`` is None)."""
    head = HEAD.format(ntid=f".maxntid {ntid}, 1, 1\n" if ntid is not None else "")
    return head + pre + body.strip("\n") + "\nDONE:\n\tret;\n}\n"


def analyse(text: str) -> Kernel:
    """``text`` through ``pipeline.load`` and ``pipeline.analyse``: the one function context, and the marked
    instructions by name."""
    unit = pipeline.load(text, name="k.ptx")
    assert unit.diagnostics == [] and unit.module is not None, unit.diagnostics
    contexts = [a.context for a in pipeline.analyse(unit) if a.context is not None and a.findings is None]
    assert len(contexts) == 1
    ctx = contexts[0]
    assert ctx.cfg.unresolved == []
    lines = {n: m.group(1) for n, line in enumerate(text.splitlines(), 1) if (m := re.search(r"//\s*@(\w+)", line))}
    at = {lines[i.span.line]: i for i in ctx.function.instructions if i.span.line in lines}
    assert set(at) == set(lines.values()), (lines, at)
    return Kernel(ctx, text, at)


def build(body: str, ntid: int | None = 128) -> Kernel:
    return analyse(kernel_text(body, ntid))


def swap(body: str, old: str, new: str) -> str:
    """``body`` with its one occurrence of ``old`` replaced by ``new``: a twin that differs in one place."""
    assert body.count(old) == 1, old
    return body.replace(old, new)


# ---- CTA barrier 0 (bar.sync 0 = __syncthreads) ---------------------------------------------------------------

#: Warp 0 stores to TMEM and waits for the store; every warp passes ``bar.sync 0`` (its second phase); warp 1 then
#: loads the cells.
BAR_SYNC = """
\tsetp.ne.u32 %p3, %r2, 1;
\t@%p1 bra STORED;
\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r5], {%r1, %r1, %r1, %r1}; // @a
\ttcgen05.wait::st.sync.aligned;
STORED:
\ttcgen05.fence::before_thread_sync;
\tbar.sync 0; // @sync
\ttcgen05.fence::after_thread_sync;
\t@!%p3 tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""
#: warp 1's load of ``BAR_SYNC``, guarded by "warp 1"
BAR_SYNC_LD = "\t@!%p3 tcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @b\n"


def test_bar_sync_orders_one_warps_store_before_another_warps_load():
    k = build(BAR_SYNC)
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is True
    o = k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1)
    assert o == Ordering(True, (BarrierKey("bar", 0),), (BarrierKey("bar", 0),), None)
    assert o.describe() == ""


def test_bar_sync_does_not_order_a_load_issued_before_the_barrier():
    # counter-example: warp 1's load moved above the bar.sync (the wait comes before the arrival it needs): both
    # warps passed phase 0 of barrier 0 in the prologue, the store is released into phase 1
    body = swap(swap(BAR_SYNC, BAR_SYNC_LD, ""), "STORED:\n", "STORED:\n" + BAR_SYNC_LD)
    k = build(body)
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
    o = k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1)
    assert o == Ordering(False, (BarrierKey("bar", 0),), (BarrierKey("bar", 0),), "phase")
    assert o.describe() == "the wait on its barrier comes before the arrival (an earlier phase)"


def test_store_is_not_ordered_before_the_same_warps_earlier_instructions():
    # the reverse question: warp 1's load is not ordered before warp 0's store (nothing warp 1 does after the
    # load is waited on by warp 0 before its store)
    k = build(BAR_SYNC)
    assert k.ctx.sync.must_happen_before(k.at["b"], k.warp(1), k.at["a"], k.warp(0)) is False


# ---- named barriers with a participant count (bar.arrive / bar.sync id, n) -----------------------------------

#: Warp 0 stores, waits, and arrives on named barrier 1 for 64 threads (PTX ISA §9.7.13.1: a release without a
#: wait); warp 1 waits there (``bar.sync 1, 64``: the other 32 of the 64) and loads.  Warps 2-3 take no part.
NAMED = """
\tsetp.eq.u32 %p2, %r2, 1;
\t@%p2 bra CONSUMER;
\t@%p1 bra DONE;
\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r5], {%r1, %r1, %r1, %r1}; // @a
\ttcgen05.wait::st.sync.aligned;
\ttcgen05.fence::before_thread_sync;
\tbar.arrive 1, 64; // @arrive
\tbra.uni DONE;
CONSUMER:
\tbar.sync 1, 64; // @sync
\ttcgen05.fence::after_thread_sync;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""


def test_named_barrier_arrive_then_sync_orders_producer_before_consumer():
    k = build(NAMED)
    w0, w1 = k.warp(0), k.warp(1)
    assert [c.warps for c in k.ctx.threads.classes] == [(0,), (1,), (2, 3)]
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is True
    assert k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1) == Ordering(
        True, (BarrierKey("bar", 1),), (BarrierKey("bar", 1),), None)
    assert k.ctx.sync.overfull(1) is False


def test_named_barrier_sync_on_another_id_orders_nothing():
    # counter-example: the consumer waits on barrier 2, which nobody arrives on after the store
    k = build(swap(NAMED, "bar.sync 1, 64; // @sync", "bar.sync 2, 64; // @sync"))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
    o = k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1)
    assert o == Ordering(False, (BarrierKey("bar", 1),), (), "wait")
    assert o.describe() == "no wait on the barrier it arrives on"


def test_bar_arrive_is_a_release_not_a_wait():
    # the arrive itself: a release by warp 0 (it does not wait) on barrier 1
    k = build(NAMED)
    arrive, sync = k.ctx.sync.site(k.at["arrive"]), k.ctx.sync.site(k.at["sync"])
    assert (arrive.key, arrive.arrives, arrive.waits) == (BarrierKey("bar", 1), True, False)
    assert (sync.key, sync.arrives, sync.waits) == (BarrierKey("bar", 1), True, True)


#: ``NAMED`` with warps 1-3 all consumers: 32 (warp 0's arrive) + 96 threads reach barrier 1
NAMED_ALL = swap(NAMED, "\tsetp.eq.u32 %p2, %r2, 1;\n\t@%p2 bra CONSUMER;\n", "\t@%p1 bra CONSUMER;\n")


def test_named_barrier_with_its_full_participant_count_orders():
    k = build(swap(swap(NAMED_ALL, "bar.arrive 1, 64;", "bar.arrive 1, 128;"), "bar.sync 1, 64;", "bar.sync 1, 128;"))
    assert [c.warps for c in k.ctx.threads.classes] == [(0,), (1, 2, 3)]
    assert k.ctx.sync.overfull(1) is False
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is True


def test_named_barrier_with_fewer_threads_than_take_part_orders_nothing():
    # counter-example: 128 threads reach ``bar.sync 1, 64``: the instance completes with whichever 64 arrive first
    # (warps 1 and 2, say) and warp 0's arrival may go to a later instance (PTX ISA §9.7.13.1)
    k = build(NAMED_ALL)  # NAMED with one branch changed: warps 2-3 join warp 1
    assert k.ctx.sync.overfull(1) is True
    assert k.ctx.sync.site(k.at["sync"]) is None
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is False


def test_barrier_that_only_the_producer_executes_orders_nothing():
    # counter-example: the consumer's bar.sync removed; warp 0 still arrives on barrier 1
    k = build(swap(NAMED, "\tbar.sync 1, 64; // @sync\n", ""))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.executes(w0, k.at["arrive"]) is True
    assert k.ctx.sync.executes(w1, k.at["arrive"]) is False
    assert k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1) == Ordering(False, (BarrierKey("bar", 1),), (), "wait")


# ---- mbarrier arrive → try_wait.parity ------------------------------------------------------------------------

#: Warp 0 stores, waits, and arrives on bar0 (its phase 0 completes: count 1); warp 1 waits for phase 0 (parity 0)
#: and loads.
MBAR = """
\tsetp.eq.u32 %p2, %r2, 1;
\t@%p2 bra CONSUMER;
\t@%p1 bra DONE;
\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r5], {%r1, %r1, %r1, %r1}; // @a
\ttcgen05.wait::st.sync.aligned;
\ttcgen05.fence::before_thread_sync;
\tmbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive
\tbra.uni DONE;
CONSUMER:
WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait
\t@!%p7 bra WAIT;
WAITED:
\ttcgen05.fence::after_thread_sync;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""


def test_mbarrier_arrive_then_parity_wait_orders_producer_before_consumer():
    k = build(MBAR)
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is True
    assert k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1) == Ordering(True, (BAR0,), (BAR0,), None)
    site = k.ctx.sync.site(k.at["wait"])
    assert (site.key, site.arrives, site.waits) == (BAR0, False, True)


def test_mbarrier_load_before_the_wait_is_not_ordered():
    # counter-example: the load moved above the wait loop
    ld = "\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @b\n"
    body = swap(swap(MBAR, ld, ""), "CONSUMER:\n", "CONSUMER:\n" + ld)
    k = build(body)
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
    assert k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1) == Ordering(False, (BAR0,), (), "wait")


def test_mbarrier_wait_on_the_wrong_parity_passes_at_once_and_orders_nothing():
    # counter-example: parity 1 on the fresh barrier names the phase before phase 0, complete already
    k = build(swap(MBAR, "[bar0], 0; // @wait", "[bar0], 1; // @wait"))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.passes_at_once(k.at["wait"], 0) is True
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
    assert k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1) == Ordering(False, (BAR0,), (), "wait")


def test_passes_at_once_counts_the_phases_already_waited():
    k = build(MBAR)
    wait = k.at["wait"]
    assert [k.ctx.sync.passes_at_once(wait, done) for done in (0, 1, 2, 3, 4)] == [False, True, False, True, False]
    odd = build(swap(MBAR, "[bar0], 0; // @wait", "[bar0], 1; // @wait")).at["wait"]
    assert [build(MBAR).ctx.sync.passes_at_once(odd, d) for d in (0, 1)] == [True, False]


def test_passes_at_once_is_not_judged_for_a_parity_in_a_register():
    k = build(swap(MBAR, "[bar0], 0; // @wait", "[bar0], %r9; // @wait"))
    assert [k.ctx.sync.passes_at_once(k.at["wait"], d) for d in (0, 1)] == [False, False]


def test_mbarrier_wait_on_another_barrier_orders_nothing():
    # counter-example: the consumer waits on bar1, which nobody arrives on
    k = build(swap(MBAR, "[bar0], 0; // @wait", "[bar1], 0; // @wait"))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
    o = k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1)
    assert o == Ordering(False, (BAR0,), (), "wait")
    assert o.describe() == "no wait on the barrier it arrives on"


def test_mbarrier_arrive_on_a_path_that_may_be_skipped_orders_nothing():
    # counter-example: the arrive skipped when the kernel's ``flag`` parameter is 0 (a CTA-uniform branch that
    # warp 1's wait does not test: warp 1 may wait forever, or for a later arrival that is not this one)
    arrive = "\tmbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive\n"
    k = build(swap(MBAR, arrive, "\t@!%p9 bra DONE;\n" + arrive))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False


def test_mbarrier_wait_on_a_path_that_may_be_skipped_orders_nothing():
    # counter-example: warp 1 skips its wait when ``flag`` is 0 and loads anyway
    k = build(swap(MBAR, "CONSUMER:\n", "CONSUMER:\n\t@!%p9 bra WAITED;\n"))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
