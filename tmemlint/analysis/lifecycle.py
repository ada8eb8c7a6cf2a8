"""Allocation state along paths, for the whole CTA.

TMEM is allocated per CTA (PTX ISA §9.7.16.7.1): one warp may allocate and another free.  So the state is first
computed per thread, for one representative thread of every warp class (``PropertySimulation``): the property is
the set of ``("a", slot)`` (this thread allocated ``slot`` and has not freed it) and ``("f", slot)`` (this thread
freed ``slot`` allocated elsewhere; ``("f", "*")``: freed an address of unknown origin).  The CTA-level verdict
then combines one exit state per warp class whose branch facts agree (``consistent_choice``): an allocation leaks
when some combination allocates it and no class frees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tmemlint.analysis.paths import BudgetExceeded, ExitState, PropertySimulation
from tmemlint.analysis.threads import WarpClass, is_lane_fact
from tmemlint.ir import Instruction

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.checks.context import FunctionContext

#: Combinations of per-class exit states examined before giving up (TM901).
COMBINATION_BUDGET = 200_000


@dataclass(slots=True)
class ClassRun:
    """Result of simulating one warp class: exit states, and every alloc/dealloc/relinquish it may execute (with
    the facts of the first path that does)."""

    klass: WarpClass
    exits: list[ExitState] = field(default_factory=list)
    executed: dict[int, frozenset] = field(default_factory=dict)
    events: list = field(default_factory=list)


class Lifecycle:
    """Per-class allocation state of a function (see module docstring).  ``bounded`` lists messages for TM901
    when a budget was exceeded (the verdicts of that function are then incomplete)."""

    def __init__(self, ctx: "FunctionContext"):
        self.ctx = ctx
        self.runs: list[ClassRun] = []
        self.bounded: list[str] = []
        sites = ctx.sites
        self._alloc_idx = {a.index for a in sites.allocs}
        self._dealloc_idx = {d.index for d in sites.deallocs}
        if not sites.allocs and not sites.deallocs and not sites.relinquishes:
            return
        for klass in ctx.threads.classes:
            run = ClassRun(klass)
            sim = PropertySimulation(ctx.cfg, ctx.values, klass, self._transfer, frozenset(),
                                     observe=self._observer(run))
            try:
                run.exits = sim.run()
            except BudgetExceeded:
                self.bounded.append(f"path simulation of {klass!r} exceeded its budget")
                continue
            self.runs.append(run)

    def _observer(self, run: ClassRun):
        interesting = self._alloc_idx | self._dealloc_idx

        def observe(prop, inst: Instruction, facts):
            if inst.index in interesting or inst.family == "tcgen05.relinquish_alloc_permit":
                if inst.index not in run.executed:
                    run.executed[inst.index] = facts

        return observe

    def _transfer(self, prop: frozenset, inst: Instruction) -> frozenset:
        idx = inst.index
        if idx in self._alloc_idx:
            return prop | {("a", self.ctx.sites.slot_of[idx])}
        if idx in self._dealloc_idx:
            slot = self.ctx.sites.freed_slot[idx]
            if slot is None:
                return frozenset(p for p in prop if p[0] != "a") | {("f", "*")}
            if ("a", slot) in prop:
                return prop - {("a", slot)}
            return prop | {("f", slot)}
        return prop

    # ---- CTA-level combination ------------------------------------------------------------------------------
    def find_leak(self, slot) -> tuple[ClassRun, ExitState] | None:
        """A class and exit state that hold ``slot`` at exit while some consistent choice of exit states of the
        other classes frees nothing of it; None when every combination frees it."""
        frees = {("f", slot), ("f", "*")}
        budget = [COMBINATION_BUDGET]
        for i, run in enumerate(self.runs):
            for st in run.exits:
                if ("a", slot) not in st.prop:
                    continue
                others = [r for j, r in enumerate(self.runs) if j != i]
                if consistent_choice(others, st.facts, lambda s: not (s.prop & frees), budget):
                    return run, st
                if budget[0] <= 0:
                    self.bounded.append("too many warp-class path combinations for the leak check")
                    return None
        return None


def _merge_facts(acc: dict, facts: frozenset) -> dict | None:
    out = acc
    for key, val in facts:
        if is_lane_fact(key):
            continue
        have = out.get(key)
        if have is None:
            if out is acc:
                out = dict(acc)
            out[key] = val
        elif have != val:
            return None
    return out


def consistent_choice(runs: list[ClassRun], facts: frozenset, accept, budget: list[int]) -> bool:
    """Whether one exit state can be chosen from every run such that ``accept(state)`` holds for each and the
    CTA-uniform facts of all chosen states (and ``facts``) agree.  Thread-predicate facts are per thread and do
    not have to agree.  ``budget[0]`` is decremented per state tried."""
    start = _merge_facts({}, facts)
    if start is None:
        return False

    def go(k: int, acc: dict) -> bool:
        if k == len(runs):
            return True
        for st in runs[k].exits:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if not accept(st):
                continue
            merged = _merge_facts(acc, st.facts)
            if merged is not None and go(k + 1, merged):
                return True
        return False

    return go(0, start)
