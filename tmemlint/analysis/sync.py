"""Instruction classes used by the ordering rules: synchronization points, hand-overs, and TMEM operands.

Sources: PTX ISA §9.7.13.1 (bar/barrier), §9.7.13.4 (barrier.cluster), §9.7.13.15 (mbarrier), §9.7.16.6
(tcgen05 memory consistency: which tcgen05 instructions are asynchronous), reference §3.
"""

from __future__ import annotations

from tmemlint.ir import Address, Instruction

#: tcgen05 operations that read or write TMEM asynchronously (reference §3).
ASYNC_TCGEN05 = {"tcgen05.mma", "tcgen05.cp", "tcgen05.shift", "tcgen05.ld", "tcgen05.st"}
#: tcgen05 instructions with .sync.aligned semantics, executed by a whole warp (reference §2.1, §2.2).
WARP_COLLECTIVE = {"tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit", "tcgen05.ld",
                   "tcgen05.st", "tcgen05.wait::ld", "tcgen05.wait::st"}


def is_cta_barrier(inst: Instruction) -> bool:
    """A barrier that waits for other threads: ``bar.sync``/``bar.red``/``barrier.sync``/``barrier.red`` (not
    ``.arrive``), and ``barrier.cluster.wait`` (the whole cluster, so the CTA too)."""
    op = inst.op
    if op in ("bar", "barrier"):
        parts = inst.parts
        if len(parts) > 1 and parts[1] == "cluster":
            return "wait" in parts
        if len(parts) > 1 and parts[1] == "warp":
            return False  # bar.warp.sync: one warp only
        return "arrive" not in parts
    return False


def is_mbarrier_wait(inst: Instruction) -> bool:
    """``mbarrier.try_wait`` / ``mbarrier.test_wait`` (the completion side of an mbarrier)."""
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1] in ("try_wait", "test_wait")


def is_sync(inst: Instruction) -> bool:
    """A point where this thread waits for others: a CTA or cluster barrier, or an mbarrier wait."""
    return is_cta_barrier(inst) or is_mbarrier_wait(inst)


def is_handover(inst: Instruction) -> bool:
    """An explicit signal to other threads that this thread is done with something: ``mbarrier.arrive*`` and
    ``bar.arrive``/``barrier.arrive`` (producer-side arrives).  Full barriers (``bar.sync``) are not counted:
    compilers place them between a tcgen05.ld and its wait for unrelated shared-memory reuse (Triton), and they
    do not by themselves release TMEM to a writer."""
    if inst.op in ("bar", "barrier"):
        return "arrive" in inst.parts and "cluster" not in inst.parts
    return inst.op == "mbarrier" and len(inst.parts) > 1 and inst.parts[1].startswith("arrive")


def cta_group(inst: Instruction) -> int | None:
    """1 or 2 from ``.cta_group::N``, or None."""
    p = inst.part_with_prefix("cta_group::")
    return int(p.split("::")[1]) if p else None


def tmem_operand_indices(inst: Instruction) -> list[int]:
    """Indices of the operands of a tcgen05 instruction that are TMEM addresses (PTX ISA §9.7.16.7-10):
    dealloc ``taddr``; ld ``[taddr]``; st, cp, shift ``[taddr]`` (first operand); mma ``[d]``, ``[a]`` when A is
    in TMEM, ``[sp-meta]``, ``[scale-A]``, ``[scale-B]`` (every bracketed operand)."""
    fam = inst.family
    ops = inst.operands
    if fam == "tcgen05.dealloc":
        return [0] if ops else []
    if fam == "tcgen05.ld":
        return [i for i, o in enumerate(ops) if type(o) is Address][:1]
    if fam in ("tcgen05.st", "tcgen05.cp", "tcgen05.shift"):
        return [0] if ops else []
    if fam == "tcgen05.mma":
        return [i for i, o in enumerate(ops) if type(o) is Address]
    return []
