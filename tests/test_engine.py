"""Unit tests of the happens-before engine itself (issue 24, item 5): ``SyncModel`` (``analysis/order.py``) asked
directly on small hand-written kernels, each run through the real pipeline (``pipeline.load`` → ``pipeline.analyse``
→ the ``FunctionContext`` every rule gets).

Every positive case has a counter-example twin that differs from it in one instruction (``_swap`` asserts that the
text changes in exactly one place).  The kernels are 128 threads (4 warps) unless a test says otherwise; the shared
prologue ``PRE`` has warp 0 allocate 128 columns, thread 0 initialise the mbarriers ``bar0``/``bar1`` with count 1,
and every warp pass one ``bar.sync 0`` (phase 0 of CTA barrier 0) before reading the TMEM address into ``%r5``.
Instructions a test asks about carry a ``// @name`` marker.  Every kernel these tests (and ``test_engine_values``)
build is accepted by ``ptxas -arch=sm_100a`` of CUDA 13.0 without a message (checked when they were written).

Sources: PTX ISA 9.0 §9.7.13.1 (``bar``/``barrier``: ``bar.sync a, b`` completes when ``b`` threads arrived,
``bar.arrive`` arrives without waiting), §9.7.13.15 (mbarrier phases; §9.7.13.15.16 ``try_wait.parity``: the
parity names the current phase or the immediately preceding one, so a wait on parity 1 of a fresh barrier
succeeds at once), §9.7.16.8.4 (``tcgen05.commit``: the mbarrier arrival happens when the thread's earlier
asynchronous tcgen05 operations complete); ``../shared/docs/tcgen05-reference.md`` §3.1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tmemlint import pipeline
from tmemlint.analysis.order import Ordering, PhaseParity, Release
from tmemlint.analysis.sync import BarrierKey
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
#: "not warp 0", ``%p8`` = "not thread 0", ``%r5`` = the TMEM base address, ``%p9`` = a CTA-uniform flag from a
#: kernel parameter.
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
#: §9.7.16.4.2 Table 42: D type F32 = 1 in bits 4-5, N >> 3 = 8 in bits 17-22, M >> 4 = 8 in bits 24-28).
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


def build(body: str, ntid: int | None = 128, pre: str = PRE) -> Kernel:
    """``kernel_text(body, ntid, pre)`` analysed."""
    return analyse(kernel_text(body, ntid, pre))


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
    # counter-example: the consumer syncs on barrier 2 for its own 32 threads (it completes at once), which nobody
    # arrives on after the store
    k = build(swap(NAMED, "bar.sync 1, 64; // @sync", "bar.sync 2, 32; // @sync"))
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

#: Thread 64 (lane 0 of warp 2) arrives on bar1 at once, ordered after nothing: it completes bar1's phase 0, so
#: that a wait on bar1 returns (a wait that nothing can complete would never return, and what follows it would never
#: run: ordered vacuously).
STRAY = """
\tsetp.eq.u32 %p14, %r1, 64;
\t@%p14 mbarrier.arrive.shared::cta.b64 %rd8, [bar1];
"""

#: Warp 0 stores, waits, and its elected lane arrives on bar0 (its phase 0 completes: count 1); warp 1 waits for
#: phase 0 (parity 0) and loads (with ``STRAY``).
MBAR = STRAY + """
\tsetp.eq.u32 %p2, %r2, 1;
\t@%p2 bra CONSUMER;
\t@%p1 bra DONE;
\telect.sync %r12|%p15, -1;
\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r5], {%r1, %r1, %r1, %r1}; // @a
\ttcgen05.wait::st.sync.aligned;
\ttcgen05.fence::before_thread_sync;
\t@%p15 mbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive
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
    odd = build(swap(MBAR, "[bar0], 0; // @wait", "[bar0], 1; // @wait"))
    assert [odd.ctx.sync.passes_at_once(odd.at["wait"], d) for d in (0, 1, 2)] == [True, False, True]


def test_passes_at_once_is_not_judged_for_a_parity_in_a_register():
    k = build(swap(MBAR, "[bar0], 0; // @wait", "[bar0], %r9; // @wait"))
    assert [k.ctx.sync.passes_at_once(k.at["wait"], d) for d in (0, 1)] == [False, False]


def test_mbarrier_wait_on_another_barrier_orders_nothing():
    # counter-example: the consumer waits on bar1, whose phase 0 the stray arrival of thread 64 completes
    k = build(swap(MBAR, "[bar0], 0; // @wait", "[bar1], 0; // @wait"))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False
    o = k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1)
    assert o == Ordering(False, (BAR0,), (), "wait")
    assert o.describe() == "no wait on the barrier it arrives on"


# PTX ISA §9.7.13.15: phase 0 of bar0 (count 1) completes only with an arrival, and warp 0's arrive after the store
# is the only one on bar0: when warp 0 skips it (flag == 0), warp 1's wait never returns and its load never runs,
# so every load that runs is ordered (``SyncModel._wait_never_returns``)
def test_a_wait_only_the_skippable_arrive_can_complete_still_orders():
    # the arrive skipped when the kernel's ``flag`` parameter is 0 (a CTA-uniform branch warp 1 does not test)
    arrive = "\t@%p15 mbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive\n"
    k = build(swap(MBAR, arrive, "\t@!%p9 bra DONE;\n" + arrive))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is True


def test_a_skippable_arrive_does_not_order_when_another_arrival_can_complete_the_phase():
    # twin of the above: the stray arrival on bar1, and warp 1 waiting on bar1 for the phase it completes, while
    # warp 0 arrives on bar1 after its store only when ``flag`` is set: phase 0 may complete without it
    arrive = "\t@%p15 mbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @arrive\n"
    body = swap(swap(MBAR, arrive, "\t@!%p9 bra DONE;\n" + arrive.replace("[bar0]", "[bar1]")),
                "[bar0], 0; // @wait", "[bar1], 0; // @wait")
    k = build(body)
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is False


def test_mbarrier_wait_on_a_path_that_may_be_skipped_orders_nothing():
    # counter-example: warp 1 skips its wait when ``flag`` is 0 and loads anyway
    k = build(swap(MBAR, "CONSUMER:\n", "CONSUMER:\n\t@!%p9 bra WAITED;\n"))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is False


#: ``Ordering.missing`` names the edge the unordered pair of paths lacks: a wait that only some paths skip is
#: "wait" (on those paths warp 1 waits on nothing), not "phase".


def test_ordering_names_the_wait_a_path_skips():
    k = build(swap(MBAR, "CONSUMER:\n", "CONSUMER:\n\t@!%p9 bra WAITED;\n"))
    o = k.ctx.sync.ordering((k.at["a"],), k.warp(0), k.at["b"], k.warp(1))
    assert (o.verdict, o.missing) == (False, "wait")  # on the unordered path (flag == 0) warp 1 waits on nothing


# ---- tcgen05.commit → mbarrier wait: completion of an asynchronous MMA ----------------------------------------

#: One elected lane of warp 0 issues an MMA into columns 0-63 and commits to bar0 (PTX ISA §9.7.16.8.4: the
#: arrival happens when the MMA has completed); warp 1 waits for phase 0 of bar0 and loads the accumulator.
COMMIT = STRAY + f"""
\tsetp.eq.u32 %p2, %r2, 1;
\t@%p2 bra CONSUMER;
\t@%p1 bra DONE;
\telect.sync %r6|%p4, -1;
\t@!%p4 bra DONE;
\tld.param.u64 %rd2, [out];
\tmov.b32 %r7, {IDESC_M128_N64};
\ttcgen05.mma.cta_group::1.kind::f16 [%r5], %rd2, %rd2, %r7, 0; // @a
\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0]; // @commit
\tbra.uni DONE;
CONSUMER:
WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait
\t@!%p7 bra WAIT;
\ttcgen05.fence::after_thread_sync;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {{%r40, %r41, %r42, %r43}}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""
COMMIT_INST = "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0]; // @commit\n"
PLAIN_ARRIVE = "\tmbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @commit\n"


def test_commit_then_wait_completes_the_mma_before_the_load():
    k = build(COMMIT)
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.completes_before(k.at["a"], w0, k.at["b"], w1) is True
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is True
    assert k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1, completion=True) == Ordering(True, (BAR0,), (BAR0,))
    site = k.ctx.sync.site(k.at["commit"])
    assert (site.key, site.arrives, site.waits) == (BAR0, True, False)


def test_plain_arrive_after_an_mma_orders_its_issue_not_its_completion():
    # counter-example: an mbarrier.arrive instead of the commit: the MMA may still be running when bar0's phase
    # completes (only tcgen05.commit tracks the asynchronous operations, PTX ISA §9.7.16.8.4)
    k = build(swap(COMMIT, COMMIT_INST, PLAIN_ARRIVE))
    w0, w1 = k.warp(0), k.warp(1)
    assert k.ctx.sync.must_happen_before(k.at["a"], w0, k.at["b"], w1) is True
    assert k.ctx.sync.completes_before(k.at["a"], w0, k.at["b"], w1) is False
    o = k.ctx.sync.ordering((k.at["a"],), w0, k.at["b"], w1, completion=True)
    assert o == Ordering(False, (), (), "release")
    assert o.describe() == "no tcgen05.commit (or arrive) after it"


def test_a_wait_on_another_barrier_than_the_commits_completes_nothing():
    # counter-example: warp 1 waits on bar1 (completed by the stray arrival), the commit arrives on bar0
    k = build(swap(COMMIT, "[bar0], 0; // @wait", "[bar1], 0; // @wait"))
    o = k.ctx.sync.ordering((k.at["a"],), k.warp(0), k.at["b"], k.warp(1), completion=True)
    assert o == Ordering(False, (BAR0,), (), "wait")


#: Three roles: warp 0's elected lane commits its MMA to bar0; warp 1 waits for it and arrives on bar1; warp 2
#: waits on bar1 and loads (the MMA → correction → epilogue chain of CUTLASS's FMHA).
CHAIN = f"""
\tsetp.eq.u32 %p2, %r2, 1;
\t@%p2 bra RELAY;
\tsetp.eq.u32 %p3, %r2, 2;
\t@%p3 bra CONSUMER;
\t@%p1 bra DONE;
\telect.sync %r6|%p4, -1;
\t@!%p4 bra DONE;
\tld.param.u64 %rd2, [out];
\tmov.b32 %r7, {IDESC_M128_N64};
\ttcgen05.mma.cta_group::1.kind::f16 [%r5], %rd2, %rd2, %r7, 0; // @a
\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0];
\tbra.uni DONE;
RELAY:
WAIT0:
\tmbarrier.try_wait.parity.shared::cta.b64 %p5, [bar0], 0; // @relay_wait
\t@!%p5 bra WAIT0;
\tmbarrier.arrive.shared::cta.b64 %rd1, [bar1]; // @relay_arrive
\tbra.uni DONE;
CONSUMER:
WAIT1:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar1], 0;
\t@!%p7 bra WAIT1;
\ttcgen05.fence::after_thread_sync;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {{%r40, %r41, %r42, %r43}}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""


def test_completion_is_handed_on_through_a_third_warp():
    k = build(CHAIN)
    w0, w1, w2 = k.warp(0), k.warp(1), k.warp(2)
    assert [c.warps for c in k.ctx.threads.classes] == [(0,), (1,), (2,), (3,)]
    assert k.ctx.sync.completes_before(k.at["a"], w0, k.at["b"], w2) is True
    assert k.ctx.sync.all_happen_before((k.at["a"],), w0, k.at["b"], w2, hops=0, completion=True) is False
    assert k.ctx.sync.completes_before(k.at["a"], w0, k.at["relay_wait"], w1) is True


def test_a_relay_that_arrives_before_it_waits_hands_nothing_on():
    # counter-example: warp 1's arrive on bar1 moved above its wait on bar0
    arrive = "\tmbarrier.arrive.shared::cta.b64 %rd1, [bar1]; // @relay_arrive\n"
    k = build(swap(swap(CHAIN, arrive, ""), "RELAY:\n", "RELAY:\n" + arrive))
    assert k.ctx.sync.completes_before(k.at["a"], k.warp(0), k.at["b"], k.warp(2)) is False


# ---- a thread's own completion, and its hand-overs ------------------------------------------------------------

#: Warp 0 alone: its elected lane issues an MMA and commits to bar0, the warp waits for bar0 and frees the
#: columns (the MMA warp's producer tail before its dealloc).
OWN = STRAY + f"""
\t@%p1 bra DONE;
\telect.sync %r6|%p4, -1;
\t@!%p4 bra ISSUED;
\tld.param.u64 %rd2, [out];
\tmov.b32 %r7, {IDESC_M128_N64};
\ttcgen05.mma.cta_group::1.kind::f16 [%r5], %rd2, %rd2, %r7, 0; // @a
\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0]; // @commit
ISSUED:
WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait
\t@!%p7 bra WAIT;
\ttcgen05.fence::after_thread_sync;
\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r5, 128; // @b
"""
OWN_WAIT = "\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait\n"


def test_waits_own_completion_after_commit_and_wait():
    k = build(OWN)
    assert k.ctx.sync.waits_own_completion(k.warp(0), (k.at["a"],), k.at["b"]) is True


def test_waits_own_completion_without_the_wait_is_false():
    # counter-example: the wait on bar0 replaced by a wait on bar1 (completed by the stray arrival, not the commit)
    k = build(swap(OWN, OWN_WAIT, OWN_WAIT.replace("[bar0]", "[bar1]")))
    assert k.ctx.sync.waits_own_completion(k.warp(0), (k.at["a"],), k.at["b"]) is False


def test_waits_own_completion_without_the_commit_is_false():
    # counter-example: a plain arrive on bar0 instead of the commit: the phase completes at its issue, not the MMA's
    k = build(swap(OWN, "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0]; // @commit\n",
                   "\tmbarrier.arrive.shared::cta.b64 %rd1, [bar0]; // @commit\n"))
    assert k.ctx.sync.waits_own_completion(k.warp(0), (k.at["a"],), k.at["b"]) is False


def test_waits_own_completion_is_undecided_where_no_path_through_the_mma_reaches_b():
    k = build(OWN)
    assert k.ctx.sync.waits_own_completion(k.warp(1), (k.at["a"],), k.at["b"]) is None


#: Warp 1: waits for bar0, loads columns 0-3, waits for the load, releases the stage with an arrive on bar1 (a
#: hand-over to whoever waits on bar1), then loads again: after its release, before any new wait.
RELEASE = """
\tsetp.ne.u32 %p2, %r2, 1;
\t@%p2 bra DONE;
WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0;
\t@!%p7 bra WAIT;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @first
\ttcgen05.wait::ld.sync.aligned;
\ttcgen05.fence::before_thread_sync;
\telect.sync %r12|%p15, -1;
\t@%p15 mbarrier.arrive.shared::cta.b64 %rd1, [bar1]; // @release
AGAIN:
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r50, %r51, %r52, %r53}, [%r5]; // @late
\ttcgen05.wait::ld.sync.aligned;
"""


def test_released_before_names_the_hand_over_and_the_accesses_it_hands_back():
    k = build(RELEASE)
    w1 = k.warp(1)
    assert k.ctx.sync.released_before(w1, k.at["late"]) == (Release(k.at["release"], BAR1, (k.at["first"],)),)
    assert k.ctx.sync.released_before(w1, k.at["first"]) == ()
    assert k.ctx.sync.released_before(k.warp(0), k.at["late"]) == ()  # warp 0 does not execute it


def test_a_wait_after_the_hand_over_ends_it():
    # counter-example: a wait (on bar0's next phase) between the release and the late load
    # (a retry loop: an untested try_wait waits for nothing, PTX ISA §9.7.13.15.16)
    k = build(swap(RELEASE, "AGAIN:\n", "AGAIN:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p6, [bar0], 1;\n"
                                         "\t@!%p6 bra AGAIN;\n"))
    assert k.ctx.sync.released_before(k.warp(1), k.at["late"]) == ()


def test_executes_follows_the_warp_guards():
    k = build(COMMIT)
    assert [c.warps for c in k.ctx.threads.classes] == [(0,), (1,), (2,), (3,)]  # thread 64's test splits 2 from 3
    assert [k.ctx.sync.executes(c, k.at["a"]) for c in k.ctx.threads.classes] == [True, False, False, False]
    assert [k.ctx.sync.executes(c, k.at["b"]) for c in k.ctx.threads.classes] == [False, True, False, False]


# ---- answers the ISA contradicts (strict xfail: a fix of the engine turns them into passes) -------------------


def test_try_wait_whose_result_is_never_tested_orders_nothing():
    # counter-example of test_mbarrier_arrive_then_parity_wait_orders_producer_before_consumer: the retry branch
    # removed, so warp 1 goes on to the load whether or not phase 0 completed
    k = build(swap(MBAR, "\t@!%p7 bra WAIT;\n", ""))
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is False


def test_test_wait_whose_result_is_never_tested_orders_nothing():
    k = build(swap(swap(MBAR, "\t@!%p7 bra WAIT;\n", ""), "mbarrier.try_wait", "mbarrier.test_wait"))
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is False


#: ``BAR_SYNC`` with the barrier a ``bar.red.popc`` on barrier 0 (PTX ISA §9.7.13.1: ``bar.red.popc.u32 d, a{, b},
#: {!}c``; it synchronizes like ``bar.sync a`` and writes the count of threads whose ``c`` is true to ``d``).
BAR_RED = swap(BAR_SYNC, "\tbar.sync 0; // @sync\n", "\tbar.red.popc.u32 %r60, 0, %p3; // @sync\n")


def test_bar_red_orders_like_bar_sync():
    k = build(BAR_RED)
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is True


def test_bar_red_is_barrier_0_with_its_phases_counted():
    k = build(BAR_RED)
    assert k.ctx.sync.site(k.at["sync"]).key == BarrierKey("bar", 0)


def test_bar_red_does_not_order_a_load_issued_before_it():
    body = swap(swap(BAR_RED, BAR_SYNC_LD, ""), "STORED:\n", "STORED:\n" + BAR_SYNC_LD)
    k = build(body)
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is False


# ---- phases of one mbarrier -----------------------------------------------------------------------------------

#: ``MBAR`` with one more arrive of warp 0 on bar0 before its store: that arrival completes phase 0 (count 1), so
#: the store is released into phase 1.
MBAR_EARLY = swap(MBAR, "\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r5], {%r1, %r1, %r1, %r1}; // @a\n",
                  "\t@%p15 mbarrier.arrive.shared::cta.b64 %rd4, [bar0];\n"
                  "\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r5], {%r1, %r1, %r1, %r1}; // @a\n")
MBAR_WAIT = "\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait\n\t@!%p7 bra WAIT;\n"


def test_a_wait_for_the_phase_before_the_release_does_not_order():
    k = build(MBAR_EARLY)
    o = k.ctx.sync.ordering((k.at["a"],), k.warp(0), k.at["b"], k.warp(1))
    assert o == Ordering(False, (BAR0,), (BAR0,), "phase")
    assert o.describe() == "the wait on its barrier comes before the arrival (an earlier phase)"


def test_a_wait_for_the_next_phase_too_orders():
    # twin: warp 1 also waits for phase 1 (parity 1) before its load
    k = build(swap(MBAR_EARLY, MBAR_WAIT, MBAR_WAIT + "WAIT2:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p6, "
                                                       "[bar0], 1;\n\t@!%p6 bra WAIT2;\n"))
    assert k.ctx.sync.ordering((k.at["a"],), k.warp(0), k.at["b"], k.warp(1)) == Ordering(True, (BAR0,), (BAR0,))


def test_a_commit_tracks_only_the_operations_issued_before_it():
    # an MMA issued after the commit: the commit's arrival says nothing of it (PTX ISA §9.7.16.8.4)
    k = build(swap(COMMIT, COMMIT_INST, COMMIT_INST + "\ttcgen05.mma.cta_group::1.kind::f16 [%r5], %rd2, %rd2, %r7, 1;"
                                                      " // @late\n"))
    assert k.ctx.sync.completes_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is True
    assert k.ctx.sync.completes_before(k.at["late"], k.warp(0), k.at["b"], k.warp(1)) is False


#: ``MBAR`` with thread 64 (lane 0 of warp 2) arriving on bar0 too (it has stored nothing): with bar0's count 1
#: (``PRE``), whichever arrival comes first completes phase 0, which warp 1 waits for.
MBAR_TWO = swap(MBAR, "\tsetp.eq.u32 %p2, %r2, 1;\n",
                "\tsetp.eq.u32 %p3, %r2, 2;\n\t@%p3 bra OTHER;\n\tsetp.eq.u32 %p2, %r2, 1;\n") + \
    "\tbra.uni DONE;\nOTHER:\n\t@%p14 mbarrier.arrive.shared::cta.b64 %rd3, [bar0];\n"


# PTX ISA §9.7.13.15.1-2: a phase completes when its pending arrival count reaches 0; with the expected count 1,
# thread 64's arrival may complete phase 0 before warp 0's, so warp 1's wait for phase 0 does not order warp 0's
# store (``SyncModel._completed_by_others``)
def test_another_warps_arrival_may_complete_the_phase_first():
    k = build(MBAR_TWO)
    assert [c.warps for c in k.ctx.threads.classes] == [(0,), (1,), (2,), (3,)]
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is False


def test_with_an_expected_count_of_two_both_arrivals_complete_the_phase():
    # twin: bar0 initialised with count 2: phase 0 needs warp 0's arrival too
    k = analyse(swap(kernel_text(MBAR_TWO), "mbarrier.init.shared::cta.b64 [bar0], 1;",
                     "mbarrier.init.shared::cta.b64 [bar0], 2;"))
    assert k.ctx.sync.must_happen_before(k.at["a"], k.warp(0), k.at["b"], k.warp(1)) is True


# ---- the cluster barrier --------------------------------------------------------------------------------------

#: ``BAR_SYNC`` with the barrier the cluster barrier (PTX ISA §9.7.13.4: ``barrier.cluster.arrive`` releases,
#: ``barrier.cluster.wait`` acquires, every non-exited thread of the cluster takes part).
CLUSTER = swap(BAR_SYNC, "\tbar.sync 0; // @sync\n",
               "\tbarrier.cluster.arrive.aligned; // @sync\n\tbarrier.cluster.wait.aligned; // @cwait\n")


def test_cluster_barrier_arrive_and_wait_order_across_warps():
    k = build(CLUSTER)
    assert k.ctx.sync.ordering((k.at["a"],), k.warp(0), k.at["b"], k.warp(1)) == Ordering(
        True, (BarrierKey("cluster"),), (BarrierKey("cluster"),))
    arrive, wait = k.ctx.sync.site(k.at["sync"]), k.ctx.sync.site(k.at["cwait"])
    assert (arrive.arrives, arrive.waits, wait.arrives, wait.waits) == (True, False, False, True)


def test_cluster_barrier_arrive_without_the_wait_orders_nothing():
    # counter-example: the wait removed: warp 1 arrives and goes on to its load
    k = build(swap(CLUSTER, "\tbarrier.cluster.wait.aligned; // @cwait\n", ""))
    assert k.ctx.sync.ordering((k.at["a"],), k.warp(0), k.at["b"], k.warp(1)) == Ordering(
        False, (BarrierKey("cluster"),), (), "wait")


# ---- per-stage phase parity of a loop's waits (SyncModel.wait_parity, completion_ordering) ----------------------

#: The 3-stage ring of ``fixtures/ptx/tm304_stage_parity_good.ptx`` (PTX ISA §9.7.13.15.16): the epilogue's k-th
#: wait on acc_full + 8*s names parity k & 1 (the phase bit ``%r26`` flips when the stage ``%r24`` wraps to 0).
STAGE_RING = (Path(__file__).parent.parent / "fixtures" / "ptx" / "tm304_stage_parity_good.ptx").read_text()
#: the epilogue's phase update: flip when the stage wrapped
EPI_FLIP = "\tselp.b32 %r26, %r25, %r26, %p11;\n"


def _ring(text: str) -> tuple[Kernel, Instruction, Instruction, Instruction, Instruction]:
    """``text`` analysed, with its MMA, its epilogue load, the epilogue's wait on acc_full and the MMA lane's wait
    on acc_empty."""
    k = analyse(text)
    insts = k.ctx.function.instructions
    mma = next(i for i in insts if i.family == "tcgen05.mma")
    ld = next(i for i in insts if i.family == "tcgen05.ld")
    waits = [i for i in insts if i.op == "mbarrier" and "try_wait" in i.parts]
    return k, mma, ld, waits[1], waits[0]


def test_wait_parity_of_a_stage_ring_names_each_stages_phase():
    k, mma, ld, full, _ = _ring(STAGE_RING)
    assert k.ctx.sync.wait_parity(full) == PhaseParity(full, True)
    o = k.ctx.sync.completion_ordering((mma,), k.warp(0), ld, k.warp(4))
    assert (o.verdict, o.missing, o.parity) == (True, None, None)


def test_wait_parity_flipped_every_iteration_returns_at_once_on_stage_1():
    # counter-example: the phase bit flips every iteration: stage 1's first wait (iteration 1) names parity 1 on
    # the fresh acc_full + 8, the phase before phase 0
    k, mma, ld, full, _ = _ring(swap(STAGE_RING, EPI_FLIP, "\tmov.b32 %r26, %r25;\n"))
    got = k.ctx.sync.wait_parity(full)
    assert got == PhaseParity(full, False, 1, ("acc_full", 8), 0, 1)
    o = k.ctx.sync.completion_ordering((mma,), k.warp(0), ld, k.warp(4))
    full_key = BarrierKey("mbar", ("acc_full", None))
    assert o == Ordering(False, (full_key,), (full_key,), "parity", got)
    assert o.describe().startswith("the wait at line 96 names parity 1 on [acc_full+8] in iteration 1")


def test_wait_parity_never_flipped_returns_at_once_in_the_second_round():
    # counter-example: the phase bit never flips: stage 0's second wait (iteration 3) names parity 0 again
    k, mma, ld, full, _ = _ring(swap(STAGE_RING, EPI_FLIP, "\tselp.b32 %r26, %r26, %r26, %p11;\n"))
    assert k.ctx.sync.wait_parity(full) == PhaseParity(full, False, 3, ("acc_full", 0), 1, 0)
    assert k.ctx.sync.completion_ordering((mma,), k.warp(0), ld, k.warp(4)).missing == "parity"


def test_wait_parity_from_a_parameter_is_undecided():
    # counter-example: the epilogue's phase bit starts from a kernel parameter: not known, no verdict
    k, mma, ld, full, _ = _ring(swap(STAGE_RING, "\tmov.u32 %r26, 0;\n", "\tld.param.u32 %r26, [ntiles];\n"))
    assert k.ctx.sync.wait_parity(full) == PhaseParity(full, None)
    assert k.ctx.sync.completion_ordering((mma,), k.warp(0), ld, k.warp(4)).verdict is True


def test_wait_parity_of_the_producers_first_empty_wait_passes_at_once():
    # the MMA lane's wait on acc_empty names the other parity: its first wait per stage returns at once (the
    # stages start empty); wait_parity reports the fact, completion_ordering asks it only of the commit's barriers
    k, _, _, _, empty = _ring(STAGE_RING)
    assert k.ctx.sync.wait_parity(empty) == PhaseParity(empty, False, 0, ("acc_empty", 0), 0, 1)


# ---- the same thread's own MMA completion (SyncModel.own_completion, TM304's same-thread question) -------------

#: Warp 0: its elected lane issues the MMA and commits to bar0; the whole warp waits on bar0 (parity 0), then loads
#: the accumulator.
OWN = f"""
\t@%p1 bra DONE;
\telect.sync %r6|%p4, -1;
\t@!%p4 bra ISSUED;
\tld.param.u64 %rd2, [out];
\tmov.b32 %r7, {IDESC_M128_N64};
\ttcgen05.mma.cta_group::1.kind::f16 [%r5], %rd2, %rd2, %r7, 0; // @a
\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0]; // @commit
ISSUED:
WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0; // @wait
\t@!%p7 bra WAIT;
\ttcgen05.fence::after_thread_sync;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {{%r40, %r41, %r42, %r43}}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""
OWN_LD = "\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {%r40, %r41, %r42, %r43}, [%r5]; // @b\n"


def test_own_commit_then_wait_completes_the_mma_before_the_same_warps_load():
    k = build(OWN)
    assert k.ctx.sync.own_completion(k.warp(0), (k.at["a"],), k.at["b"]) == Ordering(True)


def test_own_completion_without_a_commit_misses_the_release():
    # counter-example: no commit after the MMA: the wait on bar0 tracks nothing of it
    k = build(swap(OWN, "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0]; // @commit\n",
                   ""))
    o = k.ctx.sync.own_completion(k.warp(0), (k.at["a"],), k.at["b"])
    assert o == Ordering(False, (), (BAR0,), "release")


def test_own_completion_with_the_load_before_the_wait_misses_the_wait():
    # counter-example: the load moved above the wait loop
    k = build(swap(swap(OWN, OWN_LD, ""), "ISSUED:\n", "ISSUED:\n" + OWN_LD))
    o = k.ctx.sync.own_completion(k.warp(0), (k.at["a"],), k.at["b"])
    assert o == Ordering(False, (BAR0,), (), "wait")


def test_own_completion_with_a_wait_on_another_barrier_misses_the_barrier():
    # counter-example: the warp waits on bar1, which its commit does not arrive on
    k = build(swap(OWN, "[bar0], 0; // @wait", "[bar1], 0; // @wait"))
    o = k.ctx.sync.own_completion(k.warp(0), (k.at["a"],), k.at["b"])
    assert o == Ordering(False, (BAR0,), (BAR1,), "barrier")
    assert o.describe() == "the waits before the load are on other barriers than the one its tcgen05.commit arrives on"
    # for a load whose columns are not known, any wait completes (only a path with no wait is reported)
    assert k.ctx.sync.own_completion(k.warp(0), (k.at["a"],), k.at["b"], any_wait=True) == Ordering(True)


def test_wait_parity_a_second_wait_on_the_same_phase_in_one_iteration_is_not_a_new_phase():
    # the epilogue waits twice on acc_full + 8*s with the same parity in each iteration: the second returns at once
    # after the phase the first waited for (the same phase again), so each stage's count stays one per round
    wait = "\t@!%p8 bra WAIT_FULL;\n"
    again = wait + "WAIT_AGAIN:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p12, [%r29], %r26;\n\t@!%p12 bra WAIT_AGAIN;\n"
    k, mma, ld, full, _ = _ring(swap(STAGE_RING, wait, again))
    second = next(i for i in k.ctx.function.instructions if i.op == "mbarrier" and "%p12" in str(i.operands[0]))
    assert k.ctx.sync.wait_parity(full) == PhaseParity(full, True)
    assert k.ctx.sync.wait_parity(second) == PhaseParity(second, None)  # never counted: no verdict of its own
    assert k.ctx.sync.completion_ordering((mma,), k.warp(0), ld, k.warp(4)).verdict is True


# ---- re-election between the MMA and its commit (DeepGEMM's elect_one_sync; issue 24, TM304 at
# ---- sm100_bmk_bnk_mn.cuh:245) ----------------------------------------------------------------------------------

#: Warp 1 elects a lane for the MMA and elects again for the commit to bar0; warp 0 waits on bar0, then loads.
#: PTX ISA §9.7.13 (elect.sync): "the same leader thread is elected for the same membermask every time", so the
#: lane that issued the MMA is the one that commits.
REELECT = f"""
\tsetp.ne.u32 %p2, %r2, 1;
\t@%p2 bra CONSUMER;
\telect.sync %r20|%p20, -1;
\t@!%p20 bra ISSUED;
\tld.param.u64 %rd2, [out];
\tmov.b32 %r7, {IDESC_M128_N64};
\ttcgen05.mma.cta_group::1.kind::f16 [%r5], %rd2, %rd2, %r7, 0; // @a
ISSUED:
\telect.sync %r21|%p21, -1;
\t@!%p21 bra DONE;
\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [bar0];
\tbra.uni DONE;
CONSUMER:
\tsetp.ne.u32 %p3, %r2, 0;
\t@%p3 bra DONE;
WAIT:
\tmbarrier.try_wait.parity.shared::cta.b64 %p7, [bar0], 0;
\t@!%p7 bra WAIT;
\ttcgen05.fence::after_thread_sync;
\ttcgen05.ld.sync.aligned.32x32b.x4.b32 {{%r40, %r41, %r42, %r43}}, [%r5]; // @b
\ttcgen05.wait::ld.sync.aligned;
"""


def test_a_second_election_elects_the_lane_that_issued_the_mma():
    k = build(REELECT)
    assert k.ctx.sync.completion_ordering((k.at["a"],), k.warp(1), k.at["b"], k.warp(0)).verdict is True


def test_a_second_election_through_elect_one_sync_elects_the_same_lane():
    # the elect_one_sync idiom (mov 0; elect.sync; @%px mov 1; setp.eq), as DeepGEMM and CUTLASS write it: both
    # elections are the same lane (the shape DeepGEMM's sm100_bmk_bnk_mn.cuh:245 reaches its commit through)
    idiom = "\tmov.b32 %r{r}, 0;\n\telect.sync %r{x}|%p{p}, -1;\n\t@%p{p} mov.s32 %r{r}, 1;\n\tsetp.eq.s32 %p{p}, %r{r}, 0;\n"
    body = swap(REELECT, "\telect.sync %r20|%p20, -1;\n\t@!%p20 bra ISSUED;\n",
                idiom.format(r=30, x=20, p=20) + "\t@%p20 bra ISSUED;\n")
    body = swap(body, "\telect.sync %r21|%p21, -1;\n\t@!%p21 bra DONE;\n",
                idiom.format(r=31, x=21, p=21) + "\t@%p21 bra DONE;\n")
    k = build(body)
    assert k.ctx.sync.completion_ordering((k.at["a"],), k.warp(1), k.at["b"], k.warp(0)).verdict is True


def test_a_commit_by_lane_1_does_not_complete_the_elected_lanes_mma():
    # elect.sync names no lane (PTX ISA 9.0 §9.7.13.12), and tcgen05.commit tracks only its own thread's
    # operations (§9.7.16.8.4): lane 1's commit says nothing of the MMA of the elected lane
    body = swap(REELECT, "\telect.sync %r21|%p21, -1;\n\t@!%p21 bra DONE;\n",
                "\tmov.u32 %r22, %laneid;\n\tsetp.ne.u32 %p21, %r22, 1;\n\t@%p21 bra DONE;\n")
    k = build(body)
    assert k.ctx.sync.completion_ordering((k.at["a"],), k.warp(1), k.at["b"], k.warp(0)).verdict is False


def test_the_non_elected_lanes_commit_completes_the_phase_without_the_mma():
    # the second election's test inverted (DeepGEMM's ``if (!elect_one_sync())``): the 31 lanes that did not issue
    # the MMA commit (PTX ISA 9.0 §9.7.13.12: the same leader both times; §9.7.16.8.4: each commit tracks its own
    # thread's operations, none), and the first of their arrivals completes phase 0 of bar0 (count 1): warp 0's
    # wait returns while the MMA may still run.  The issuing lane's own path arrives nowhere, but the wait does not
    # hang: the arrival primitive's sites are every lane's (``SyncModel._wait_never_returns``), not only those of
    # the threads on the MMA's paths, which took the pair of paths for one that never happens
    k = build(swap(REELECT, "\t@!%p21 bra DONE;\n", "\t@%p21 bra DONE;\n"))
    o = k.ctx.sync.completion_ordering((k.at["a"],), k.warp(1), k.at["b"], k.warp(0))
    assert (o.verdict, o.missing) == (False, "release")
    assert k.ctx.sync.completes_before(k.at["a"], k.warp(1), k.at["b"], k.warp(0)) is False


def test_an_election_after_some_lanes_branched_away_is_its_own():
    # elect.sync elects "one predicated active leader thread" of its membermask, the same "for the same membermask
    # every time" (PTX ISA 9.0 §9.7.13.12); where lanes 16-31 left before the second election, it is not the
    # converged election of the MMA: its leader is not known to be the MMA's issuer
    body = swap(REELECT, "\telect.sync %r21|%p21, -1;\n",
                "\tmov.u32 %r23, %laneid;\n\tsetp.ge.u32 %p22, %r23, 16;\n\t@%p22 bra DONE;\n"
                "\telect.sync %r21|%p21, -1;\n")
    k = build(body)
    second = next(i for i in k.ctx.function.instructions if i.op == "elect" and "%p21" in str(i.operands[0]))
    assert k.ctx.values.diverged_elections == frozenset({second.index})
    o = k.ctx.sync.completion_ordering((k.at["a"],), k.warp(1), k.at["b"], k.warp(0))
    assert (o.verdict, o.missing) == (False, "issuer")


def test_an_election_under_a_warp_uniform_branch_is_the_converged_one():
    # counter-example: a branch on the warp index (the same on every lane of a warp) before the second election
    # leaves the warp converged, so both elections are ("elect",) and elect the MMA's issuer
    body = swap(REELECT, "\telect.sync %r21|%p21, -1;\n",
                "\tsetp.eq.u32 %p22, %r2, 3;\n\t@%p22 bra DONE;\n\telect.sync %r21|%p21, -1;\n")
    k = build(body)
    assert k.ctx.values.diverged_elections == frozenset()
    assert k.ctx.sync.completion_ordering((k.at["a"],), k.warp(1), k.at["b"], k.warp(0)).verdict is True


#: Warp 0's elected lane leaves; its other lanes go on to the role test; warp 2 (the role) then elects.
ANOTHER_ROLES_ELECTION = """
\tsetp.ne.u32 %p2, %r2, 0;
\t@%p2 bra ROLES;
\telect.sync %r20|%p20, -1;
\t@!%p20 bra ROLES;
\tbra.uni DONE;
ROLES:
\tsetp.ne.u32 %p3, %r2, 2;
\t@%p3 bra DONE;
\telect.sync %r21|%p21, -1;
\t@!%p21 bra DONE;
"""


def test_an_election_after_another_roles_lane_branch_is_the_converged_one():
    # the second election is control dependent on warp 0's elect branch (warp 0's leader never reaches it), but
    # only warp 2 runs it, and warp 2 never meets that branch (``ValueAnalysis._warps_reaching``)
    k = build(ANOTHER_ROLES_ELECTION)
    assert k.ctx.values.diverged_elections == frozenset()


def test_an_election_after_its_own_warps_lane_branch_is_its_own():
    # counter-example: the role is warp 0 itself, whose lanes but the first election's leader reach the election
    k = build(swap(ANOTHER_ROLES_ELECTION, "%p3, %r2, 2;", "%p3, %r2, 0;"))
    second = next(i for i in k.ctx.function.instructions if i.op == "elect" and "%p21" in str(i.operands[0]))
    assert k.ctx.values.diverged_elections == frozenset({second.index})
