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

from tmemlint.analysis.order import BarrierKey
from tmemlint.analysis.values import TOP, ValueAnalysis
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


def _trace(values: ValueAnalysis, at: Instruction, name: str, found: list[Instruction], depth: int) -> bool:
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
            tried: list[tuple[Reg, list[Instruction]]] = []
            for r in regs:
                mine: list[Instruction] = []
                if _trace(values, src, r.name, mine, depth + 1):
                    tried.append((r, mine))
            if len(tried) != 1 or (src.op == "sub" and tried[0][0] is not ops[1]):
                return False
            found.extend(tried[0][1])
            continue
        return False
    return True


def barrier_key(values: ValueAnalysis, inst: Instruction, operand: int) -> BarrierKey:
    """The ``order.BarrierKey`` of the barrier that address operand ``operand`` of ``inst`` names in the
    executing CTA (a variable at a byte offset; unknown parts None)."""
    v = values.value(inst, inst.operands[operand])
    if v is not TOP and v[0] == "sym":
        return BarrierKey("mbar", (v[1], v[2]))
    if v is not TOP and v[0] == "symx":
        return BarrierKey("mbar", (v[1], None))
    return BarrierKey("mbar", None)


@dataclass(frozen=True, slots=True)
class ArriveSite:
    """An instruction that counts arrivals toward a phase of an mbarrier (PTX ISA §9.7.13.15.2 "phase
    completion"): ``key`` names the barrier in the CTA the arrivals land in; ``per_thread``: arrivals each
    executing thread makes (the ``count`` operand of ``mbarrier.arrive``, 1 for ``arrive.expect_tx``, a commit or
    ``cp.async.mbarrier.arrive.noinc``), None when not a constant; ``remote``: the ``mapa`` that sends them to a
    peer CTA's barrier (``key`` is then the local variable it maps), else None; ``commit``: a ``tcgen05.commit``
    (one arrival per issuing thread, whose lanes beyond the first are TM314's)."""

    inst: Instruction
    key: BarrierKey
    per_thread: int | None
    remote: Instruction | None
    commit: bool


def arrive_site(values: ValueAnalysis, inst: Instruction) -> ArriveSite | None:
    """The arrivals ``inst`` makes, or None: ``mbarrier.arrive`` (with or without ``.expect_tx``), ``tcgen05.commit``
    (``.mbarrier::arrive::one``), ``cp.async.mbarrier.arrive.noinc`` (without ``.noinc`` it raises the pending
    count by one first: no net arrival, §9.7.9.25).  ``arrive_drop`` is not one: it changes the expected count
    (``expected_counts`` gives up on such a barrier)."""
    commit = inst.family == "tcgen05.commit"
    if commit:
        k = next((j for j, o in enumerate(inst.operands) if type(o) is Address), None)
        if k is None:
            return None
        return ArriveSite(inst, _local_key(values, inst, k), 1, None, True)
    m = mbarrier_op(inst)
    if m is None:
        return None
    if m.kind == "cp.async.mbarrier.arrive":
        if "noinc" not in inst.parts:
            return None
        n: int | None = 1
    elif m.kind == "arrive":
        n = 1
        if "expect_tx" not in inst.parts and len(inst.operands) > m.operand + 1:
            c = values.value(inst, inst.operands[m.operand + 1])
            n = c[1] if c is not TOP and c[0] == "c" else None
    else:
        return None
    src = mapa_origin(values, inst, m.operand)
    if src is not None:
        return ArriveSite(inst, barrier_key(values, src, 1), n, src, False)
    return ArriveSite(inst, _local_key(values, inst, m.operand), n, None, False)


def _local_key(values: ValueAnalysis, inst: Instruction, operand: int) -> BarrierKey:
    """``barrier_key``, or an unknown key when the address may come from ``mapa`` on some path (then the barrier
    may be a peer's)."""
    o = inst.operands[operand]
    base = o.base if type(o) is Address else None
    if type(base) is Reg and _reaches_mapa(values, inst, base.name, 0):
        return BarrierKey("mbar", None)
    return barrier_key(values, inst, operand)


def _reaches_mapa(values: ValueAnalysis, at: Instruction, name: str, depth: int) -> bool:
    if depth > _MAX_HOPS or name.startswith("%"):
        return False
    for d in values.reaching_defs(at, name):
        src = values.insts[d]
        if src.op == "mapa":
            return True
        if src.op in ("mov", "cvt", "cvta", "add", "sub") and any(
                type(x) is Reg and _reaches_mapa(values, src, x.name, depth + 1) for x in src.operands[1:]):
            return True
    return False


def expected_counts(values: ValueAnalysis, insts: list[Instruction]) -> dict[BarrierKey, tuple[int, Instruction]]:
    """Barriers of known expected arrival count: exact key → ``(count, the mbarrier.init)`` for every barrier that
    this function initialises, always with the same constant count (PTX ISA §9.7.13.15.9), at a known offset, and
    on which no ``mbarrier.arrive_drop`` may act (it lowers the count of later phases).  A barrier with an init
    whose count or address is unknown, or an arrive_drop whose address is unknown, drops out (all of them, for
    the latter)."""
    out: dict[BarrierKey, tuple[int, Instruction]] = {}
    bad: set[BarrierKey] = set()
    drops: list[BarrierKey] = []
    for inst in insts:
        m = mbarrier_op(inst) if inst.op == "mbarrier" else None
        if m is None:
            continue
        if m.kind == "arrive_drop":
            drops.append(barrier_key(values, inst, m.operand))
        if m.kind != "init":
            continue
        key = barrier_key(values, inst, m.operand)
        c: tuple[object, ...] = values.value(inst, inst.operands[m.operand + 1]) if len(inst.operands) > m.operand + 1 else TOP
        if not key.exact or c is TOP or c[0] != "c":
            if key.ident is None:
                return {}
            bad.add(key)
            continue
        n = c[1]
        if not isinstance(n, int):
            bad.add(key)
            continue
        old = out.get(key)
        if old is not None and old[0] != n:
            bad.add(key)
        elif old is None:
            out[key] = (n, inst)
    for key in list(out):
        if any(key.may_alias(b) for b in bad) or any(key.may_alias(d) for d in drops):
            del out[key]
    return out


def cluster_targets(values: ValueAnalysis, insts: list[Instruction]) -> dict[BarrierKey, list[Instruction]]:
    """Barriers that arrivals from other CTAs land on: exact key (the variable, at the same offset in every CTA
    of the cluster) → the instructions sending them: ``tcgen05.commit … .multicast::cluster`` (one arrival on the
    barrier at the operand's offset in each CTA of the mask, when the committed operations complete: PTX ISA
    §9.7.16.8.4) and arrives through ``mapa`` (§9.7.9.22)."""
    out: dict[BarrierKey, list[Instruction]] = {}
    for inst in insts:
        if inst.family == "tcgen05.commit":
            if "multicast::cluster" not in inst.parts:
                continue
            site = arrive_site(values, inst)
        elif inst.op == "mbarrier":
            site = arrive_site(values, inst)
            if site is None or site.remote is None:
                continue
        else:
            continue
        if site is not None and site.key.exact:
            out.setdefault(site.key, []).append(inst)
    return out
