"""Witness paths: the branch decisions of one feasible path of one warp class between two instructions, for the
code-flow steps of a path-sensitive finding (SARIF ``codeFlows``, ``flow`` in JSON, ``--show-witness``).

A breadth-first search over the CFG's blocks (``tmemlint.analysis.cfg``) from the block of the first instruction
to the block of the second (or to kernel exit), taking at each guarded branch only the sides that the class's
``GuardOracle`` allows with the path's facts (``tmemlint.analysis.paths``: a branch on the warp index is decided
by the class, a branch already decided by a fact goes the same way again) and adding the facts each side implies.
Blocks that execute an instruction the caller wants avoided (the dealloc on a leak's path, the ``wait::st`` on
an unwaited store's) are not entered.  Each block is entered once, by the shortest route, so the search is linear
in the function's size.  The result is a witness sketch, not a proof: the rules' simulations decide the finding;
this only shows one route that agrees with the class and the facts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable

from tmemlint.analysis.cfg import CFG, EXIT
from tmemlint.analysis.paths import Facts, per_object
from tmemlint.analysis.sync import is_handover, is_sync
from tmemlint.analysis.threads import GuardOracle, WarpClass
from tmemlint.analysis.values import ValueAnalysis
from tmemlint.ir import Guard, Instruction, Sym

#: a key no block has (block ids are instruction indices): the end's block reached (it may be the start's own
#: block: a later loop iteration)
_END = -1

#: Branch decisions kept in one witness (the first ones after the start and the last ones before the end).
MAX_STEPS = 12


@dataclass(frozen=True, slots=True)
class BranchStep:
    """A step on a witness path: a branch decision (``kind`` ``"branch"``: the branch instruction and what it does
    there, ``text`` e.g. ``branch to $L__BB0_7 taken (%p3 is true)``) or a synchronization the path executes
    (``kind`` ``"sync"``: a barrier, an mbarrier arrive or wait; ``text`` its opcode)."""

    inst: Instruction
    text: str
    kind: str = "branch"


def _label(inst: Instruction) -> str:
    return next((o.name for o in inst.operands if isinstance(o, Sym)), "?")


def _executes(oracle: GuardOracle, inst: Instruction, facts: Facts) -> bool:
    """Whether ``inst`` certainly or possibly executes with ``facts`` (its guard is not known false)."""
    if inst.guard is None:
        return True
    t = oracle.truth(oracle.value(inst, inst.guard.reg), facts)
    return t is None or (t != inst.guard.negated)


def branch_steps(cfg: CFG, va: ValueAnalysis, klass: WarpClass, start: Instruction | None, end: Instruction | None,
                 facts: Facts = frozenset(), avoid: Callable[[Instruction], bool] | None = None,
                 syncs: bool = False) -> list[BranchStep] | None:
    """The branch decisions of a shortest path of ``klass`` from ``start`` (None: the function's entry) to
    ``end`` (None: to kernel exit; an ``exit``/``ret`` instruction as ``end`` also ends there) that executes no
    instruction for which ``avoid`` holds, in path order; with ``syncs``, also the synchronizations and hand-overs
    the path executes (``analysis.sync.is_sync``, ``is_handover``).  ``[]`` when nothing lies between them, None when the search finds no
    such path (the caller then shows the steps without branch decisions)."""
    oracle = per_object(va.oracles, klass, lambda: GuardOracle(va, klass))
    g = cfg.graph
    insts = cfg.function.instructions
    if start is None:
        if not insts:
            return None
        start = insts[0]
        lo = 0
    else:
        lo = start.index + 1
    b0 = cfg.block_of[start.index]
    b1 = EXIT if end is None else cfg.block_of[end.index]

    def blocked(lo: int, hi: int, fx: Facts) -> bool:  # instructions lo <= i < hi avoided on this path
        return avoid is not None and any(avoid(insts[i]) and _executes(oracle, insts[i], fx) for i in range(lo, hi))

    def synced(a: int, b: int) -> list[BranchStep]:  # the synchronizations a <= i < b executes
        if not syncs:
            return []
        return [BranchStep(insts[i], insts[i].opcode, "sync") for i in range(a, b)
                if (is_sync(insts[i]) or is_handover(insts[i])) and _executes(oracle, insts[i], facts)]

    if end is not None and b0 == b1 and end.index >= lo:
        return synced(lo, end.index) if not blocked(lo, end.index, facts) else None
    if blocked(lo, cfg.blocks[b0].end, facts):
        return None
    # block -> (the block before it, the branch decision between them)
    parent: dict[int, tuple[int, BranchStep | None] | None] = {b0: None}
    work = deque([(b0, facts)])
    found: int | None = None
    while work and found is None:
        node, fx = work.popleft()
        blk = cfg.blocks[node]
        last = insts[blk.end - 1] if blk.end > blk.start else None
        for succ in g.successors(node):
            data = g[node][succ]
            nfx = fx
            step = None
            cond: tuple[Guard, bool] | None = data.get("cond")
            if cond is not None and last is not None:
                guard, taken = cond
                v = oracle.value(last, guard.reg)
                want = taken != guard.negated
                t = oracle.truth(v, fx)
                if t is not None and t != want:
                    continue
                if t is None:
                    nfx = oracle.assume(v, want, fx)
                    if nfx is None:
                        continue
                reg = guard.reg.name
                step = BranchStep(last, f"branch to {_label(last)} {'taken' if taken else 'not taken'} "
                                        f"({reg} is {'true' if want else 'false'})")
            elif "cases" in data and last is not None and succ in cfg.blocks:
                label = cfg.blocks[succ].label or "?"
                k = data["cases"][0]
                step = BranchStep(last, f"brx.idx takes entry {k} of its table, to {label}")
            if succ == b1:
                parent[_END] = (node, step)
                found = _END
                break
            if succ in parent:
                continue
            if succ not in cfg.blocks:
                continue
            sb = cfg.blocks[succ]
            if blocked(sb.start, sb.end, nfx):
                continue
            parent[succ] = (node, step)
            work.append((succ, nfx))
    if found is None:
        return None
    if end is not None and blocked(cfg.blocks[cfg.block_of[end.index]].start, end.index, facts):
        return None
    # (block, the branch decision that leads into it), from the start's block to the end's
    route: list[tuple[int, BranchStep | None]] = []
    node = found
    while (link := parent[node]) is not None:
        prev, step = link
        route.append((node, step))
        node = prev
    route.reverse()
    out: list[BranchStep] = synced(lo, cfg.blocks[b0].end)
    for node, step in route:
        if step is not None:
            out.append(step)
        if node == _END:
            if end is not None:
                out.extend(synced(cfg.blocks[cfg.block_of[end.index]].start, end.index))
        else:
            out.extend(synced(cfg.blocks[node].start, cfg.blocks[node].end))
    if syncs and len(out) > MAX_STEPS:  # keep every synchronization and the branch decisions nearest them
        keep = [b for b in out if b.kind == "sync"][-MAX_STEPS:]
        out = [b for b in out if b in keep or b.kind == "branch" and len(keep) < MAX_STEPS // 2]
    if len(out) > MAX_STEPS:
        out = out[:MAX_STEPS // 2] + out[-(MAX_STEPS - MAX_STEPS // 2):]
    return out
