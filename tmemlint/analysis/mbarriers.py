"""mbarrier arrival counting as the issue-24 rules see it: which instructions count arrivals toward a phase, the
expected counts that ``mbarrier.init`` sets, and the barriers peer CTAs arrive on.  Which operand is the barrier,
its state space and whether it is a peer CTA's are the classifier's (``analysis.sync``).

Sources: PTX ISA 9.0 §9.7.13.15 (``#parallel-synchronization-and-communication-instructions-mbarrier``: init,
inval, arrive, arrive_drop, expect_tx, complete_tx, test_wait, try_wait, pending_count), §9.7.9.25
(``cp.async.mbarrier.arrive``), §9.7.9.24 (``cp.async.bulk`` with ``.mbarrier::complete_tx::bytes``), §9.7.9.22
(``mapa``: the address of the same variable in another CTA of the cluster), §5.1.7 (the ``.shared::cta`` window is
the CTA's own), reference §3.1.
"""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.analysis.sync import BarrierKey, barrier_key, mapa_origin, sync_event
from tmemlint.analysis.values import ValueAnalysis
from tmemlint.ir import Address, Instruction, Reg

#: Register copies and offsets followed back from an mbarrier operand to a ``mapa`` (``sync.mapa_origin``'s).
_MAX_HOPS = 8


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
    e = sync_event(values, inst)
    if e is None or e.operand is None:
        return None
    if e.kind == "commit":
        return ArriveSite(inst, _local_key(values, inst, e.operand), 1, None, True)
    if e.kind == "cp.async.mbarrier.arrive":
        if e.op != "noinc":
            return None
    elif e.kind != "mbarrier" or e.op != "arrive":
        return None
    n = e.count
    src = mapa_origin(values, inst, e.operand)
    if src is not None:
        return ArriveSite(inst, barrier_key(values, src, 1), n, src, False)
    return ArriveSite(inst, _local_key(values, inst, e.operand), n, None, False)


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
        e = sync_event(values, inst) if inst.op == "mbarrier" else None
        if e is None or e.operand is None:
            continue
        if e.op == "arrive_drop":
            drops.append(e.key)
        if e.op != "init":
            continue
        key, n = e.key, e.count
        if not key.exact or n is None:
            if key.ident is None:
                return {}
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
