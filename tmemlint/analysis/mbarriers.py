"""mbarrier operations as the issue-24 rules see them: which operand is the barrier, in which state space the
instruction addresses it, and whether that address is a peer CTA's (it comes from ``mapa``).

Sources: PTX ISA 9.0 §9.7.13.15 (``#parallel-synchronization-and-communication-instructions-mbarrier``: init,
inval, arrive, arrive_drop, expect_tx, complete_tx, test_wait, try_wait, pending_count), §9.7.9.25
(``cp.async.mbarrier.arrive``), §9.7.9.24 (``cp.async.bulk`` with ``.mbarrier::complete_tx::bytes``), §9.7.9.22
(``mapa``: the address of the same variable in another CTA of the cluster), §5.1.7 (the ``.shared::cta`` window is
the CTA's own), reference §3.1.
"""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.analysis.values import ValueAnalysis
from tmemlint.ir import Address, Instruction, Reg

#: State-space forms of an mbarrier operand: the CTA's own window (``.shared`` / ``.shared::cta``), the cluster's
#: window (``.shared::cluster``), or a generic address (no state space written).
LOCAL, CLUSTER, GENERIC = "shared::cta", "shared::cluster", "generic"

#: mbarrier operations that act only on the executing CTA's own barriers, in every form (reference §3.1).
NEVER_REMOTE = ("init", "inval", "try_wait", "test_wait", "pending_count")

#: Register copies and offsets followed back from an mbarrier operand to a ``mapa``.
_MAX_HOPS = 8


@dataclass(frozen=True, slots=True)
class MbarrierOp:
    """One instruction's access to an mbarrier object.

    ``kind``: the operation (``arrive``, ``arrive_drop``, ``expect_tx``, ``complete_tx``, ``try_wait``,
    ``test_wait``, ``init``, ``inval``, ``pending_count``; ``cp.async.mbarrier.arrive`` for that instruction,
    ``complete_tx`` for a bulk copy's mbarrier operand); ``space``: ``LOCAL``, ``CLUSTER`` or ``GENERIC``;
    ``operand``: the index of the barrier's address operand in ``inst.operands``."""

    inst: Instruction
    kind: str
    space: str
    operand: int


def _space(parts: tuple[str, ...]) -> str:
    if "shared::cluster" in parts:
        return CLUSTER
    if "shared::cta" in parts or "shared" in parts:
        return LOCAL
    return GENERIC


def mbarrier_op(inst: Instruction) -> MbarrierOp | None:
    """The mbarrier access of ``inst``, or None when it has none."""
    op, parts = inst.op, inst.parts
    addrs = [k for k, o in enumerate(inst.operands) if type(o) is Address]
    if not addrs:
        return None
    if op == "mbarrier" and len(parts) > 1:
        return MbarrierOp(inst, parts[1], _space(parts), addrs[0])
    if op == "cp" and "async" in parts and "mbarrier" in parts and "arrive" in parts:
        return MbarrierOp(inst, "cp.async.mbarrier.arrive", _space(parts), addrs[0])
    if op == "cp" and "bulk" in parts and any(p.startswith("mbarrier::complete_tx") for p in parts):
        # the barrier lives in the destination's state space (the first shared one written): §9.7.9.24
        dst = next((p for p in parts if p.startswith("shared")), None)
        return MbarrierOp(inst, "complete_tx", _space((dst,)) if dst else GENERIC, addrs[-1])
    return None


def mapa_origin(values: ValueAnalysis, inst: Instruction, operand: int) -> Instruction | None:
    """The ``mapa`` instruction the address operand ``operand`` of ``inst`` comes from on every path, through
    register copies (``mov``, ``cvt``, ``cvta``) and additions of an offset; None when some reaching definition
    is not such a chain, or when the ``mapa`` maps to ``%cluster_ctarank`` itself (the executing CTA)."""
    o = inst.operands[operand]
    base = o.base if type(o) is Address else o
    if type(base) is not Reg:
        return None
    found: list[Instruction] = []
    if not _trace(values, inst, base.name, found, 0):
        return None
    return found[0] if found else None


def _trace(values: ValueAnalysis, at: Instruction, name: str, found: list, depth: int) -> bool:
    """Whether every reaching definition of register ``name`` at ``at`` is a ``mapa`` chain (appended to
    ``found``)."""
    if depth > _MAX_HOPS or name.startswith("%") and "." in name:
        return False
    defs = values.reaching_defs(at, name)
    if not defs:
        return False
    for d in defs:
        src = values.insts[d]
        ops = src.operands
        if src.op == "mapa" and len(ops) >= 3:
            rank = ops[2]
            if type(rank) is Reg and values.value(src, rank) == ("sreg", "%cluster_ctarank"):
                return False  # the executing CTA's own barrier
            found.append(src)
            continue
        if src.op in ("mov", "cvt", "cvta") and len(ops) == 2 and type(ops[1]) is Reg:
            if not _trace(values, src, ops[1].name, found, depth + 1):
                return False
            continue
        if src.op in ("add", "sub") and len(ops) == 3:
            regs = [x for x in ops[1:] if type(x) is Reg]
            # exactly one operand is the address; the other an immediate or an offset that is not a mapa chain
            tried = []
            for r in regs:
                mine: list = []
                if _trace(values, src, r.name, mine, depth + 1):
                    tried.append((r, mine))
            if len(tried) != 1 or (src.op == "sub" and tried[0][0] is not ops[1]):
                return False
            found.extend(tried[0][1])
            continue
        return False
    return True
