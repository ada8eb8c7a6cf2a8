"""Which arrivals publish ordinary memory: the release side of a hand-over of a value in shared memory.

A barrier orders the memory accesses of the threads that take part in it only when its arrive has release
semantics (PTX ISA §8 "Memory Consistency Model", release and acquire patterns):

* ``bar``/``barrier`` (``.sync``, ``.arrive``, ``.red``): prior memory accesses are performed relative to all
  participating threads when the barrier completes (§9.7.13.1);
* ``barrier.cluster.arrive`` is ``.release`` by default; ``barrier.cluster.arrive.relaxed`` "specifies that there
  are no memory ordering and visibility guarantees provided for the memory accesses performed prior to
  barrier.cluster.arrive" (§9.7.13.4).  It still proves the peer CTA is running (TM111), it publishes nothing;
* ``mbarrier.arrive`` is ``.release`` by default; ``mbarrier.arrive.relaxed`` publishes nothing (§9.7.13.15.13).

A ``.relaxed`` arrive becomes a release when the thread executes a release fence after the write and before the
arrive: ``fence.acq_rel`` / ``fence.sc`` / ``fence.release`` of any scope (the threads of one CTA are inside every
scope), or ``membar`` (§9.7.13.4: ``fence.acq_rel.cluster`` then ``barrier.cluster.arrive.relaxed`` is the ISA's own
example).  These do *not* make it one: ``fence.proxy.*`` (a proxy fence, no release), ``fence.mbarrier_init``
(applies to prior ``mbarrier.init`` only), and ``tcgen05.fence::before_thread_sync`` (orders prior *asynchronous*
tcgen05 operations, §9.7.16.6.3; ``tcgen05.alloc`` is a synchronous instruction whose shared-memory write keeps
same-address ordering with ordinary instructions, §9.7.16.6.1).

``unfenced_relaxed_arrives`` finds the relaxed arrives a write may reach with no release fence in between, and
``ReleaseSyncModel`` is the happens-before model of ``analysis.order`` in which those arrives order nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tmemlint.analysis.order import SyncModel
from tmemlint.analysis.sync import SyncEvent
from tmemlint.ir import Instruction

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.analysis.context import AnalysisContext


def is_release_fence(inst: Instruction) -> bool:
    """A fence with release semantics for the executing thread's prior ordinary memory accesses: ``fence.sc``,
    ``fence.acq_rel`` (also written ``fence.<scope>``, its default), ``fence.release`` (with or without
    ``.sync_restrict``), ``membar.<level>`` (PTX ISA §9.7.13.4).  Not ``fence.proxy.*``, ``fence.mbarrier_init``
    or ``membar.proxy``."""
    if inst.op == "membar":
        return "proxy" not in inst.parts
    if inst.op != "fence":
        return False
    parts = inst.parts[1:]
    if any(p.startswith("proxy") or p == "mbarrier_init" for p in parts):
        return False
    return not any(p == "acquire" for p in parts)


def is_relaxed_arrive(inst: Instruction) -> bool:
    """``barrier.cluster.arrive.relaxed`` or an ``mbarrier.arrive*.relaxed``: an arrival without release
    semantics."""
    if "relaxed" not in inst.parts:
        return False
    if inst.op == "barrier":
        return len(inst.parts) > 2 and inst.parts[1] == "cluster" and inst.parts[2] == "arrive"
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1].startswith("arrive")


def unfenced_relaxed_arrives(ctx: "AnalysisContext", write: Instruction) -> frozenset[int]:
    """Indices of the relaxed arrives (``is_relaxed_arrive``) that a thread can reach from ``write`` along a CFG
    path with no release fence (``is_release_fence``) between them: arrives that do not publish what ``write``
    wrote."""
    cfg = ctx.cfg
    insts = ctx.function.instructions
    out: set[int] = set()
    seen: set[int] = set()
    work: list[tuple[int, int]] = [(cfg.block_of[write.index], write.index + 1)]
    while work:
        b, start = work.pop()
        blk = cfg.blocks[b]
        fenced = False
        for i in range(start, blk.end):
            inst = insts[i]
            if is_release_fence(inst):
                fenced = True
                break
            if is_relaxed_arrive(inst):
                out.add(i)
        if fenced:
            continue
        for s in cfg.successors(b):
            if isinstance(s, str) or s in seen:  # ENTRY, EXIT, ABORT: the graph's only names that are not blocks
                continue
            seen.add(s)
            work.append((s, cfg.blocks[s].start))
    return frozenset(out)


class ReleaseSyncModel(SyncModel):
    """``SyncModel`` in which the arrives ``dropped`` (relaxed arrives with no release fence after the write being
    published, ``unfenced_relaxed_arrives``) order nothing: happens-before for ordinary memory written before
    them."""

    def __init__(self, ctx: "AnalysisContext", dropped: frozenset[int]) -> None:
        super().__init__(ctx)
        self.dropped = dropped

    def site(self, inst: Instruction) -> SyncEvent | None:
        if inst.index in self.dropped:
            return None
        return super().site(inst)


__all__ = ["ReleaseSyncModel", "is_relaxed_arrive", "is_release_fence", "unfenced_relaxed_arrives"]
