"""Allocation state along paths, for the whole CTA.

TMEM is allocated per CTA (PTX ISA §9.7.16.7.1): one warp may allocate and another free.  So the state is first
computed per thread, for one representative thread of every warp class (``PropertySimulation``): the property is
the set of ``("a", slot)`` (this thread allocated ``slot`` and has not freed it), ``("f", slot)`` (this thread
freed ``slot`` allocated elsewhere; ``("f", "*")``: freed an address of unknown origin), ``("d", slot)`` (this
thread freed ``slot`` and has not allocated it again), ``("r", i)`` (this thread executed the relinquish at
instruction ``i``) and ``("last", n)`` (the column count of this thread's latest alloc).  The CTA-level verdict
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
        #: dealloc index -> earlier dealloc of the same slot by the same thread (TM104)
        self.double_free: dict[int, int | None] = {}
        #: alloc index -> the relinquish executed before it by the same thread (TM105)
        self.after_relinquish: dict[int, int] = {}
        #: alloc index -> columns held by this thread including the new allocation, when over 512 (TM106)
        self.over_budget: dict[int, int] = {}
        #: alloc indices executed while this thread still held an allocation written to the same slot (TM101:
        #: the earlier allocation's address is overwritten, so it can never be freed)
        self.realloc: set[int] = set()
        sites = ctx.sites
        self._alloc_idx = {a.index for a in sites.allocs}
        self._dealloc_idx = {d.index for d in sites.deallocs}
        if not sites.allocs and not sites.deallocs and not sites.relinquishes:
            return
        for klass in ctx.threads.classes:
            run = ClassRun(klass)
            sim = PropertySimulation(ctx.cfg, ctx.values, klass, self._transfer, frozenset(),
                                     observe=self._observer(run), relevant=self._relevant)
            try:
                run.exits = sim.run()
            except BudgetExceeded:
                self.bounded.append(f"path simulation of {klass!r} exceeded its budget")
                continue
            self.runs.append(run)

    def _relevant(self, inst: Instruction) -> bool:
        return inst.index in self._alloc_idx or inst.index in self._dealloc_idx or \
            inst.family == "tcgen05.relinquish_alloc_permit"

    def _observer(self, run: ClassRun):
        interesting = self._alloc_idx | self._dealloc_idx

        sites = self.ctx.sites

        def observe(prop, inst: Instruction, facts):
            idx = inst.index
            if idx in interesting or inst.family == "tcgen05.relinquish_alloc_permit":
                if idx not in run.executed:
                    run.executed[idx] = facts
            if idx in self._alloc_idx:
                if ("a", sites.slot_of[idx]) in prop:
                    self.realloc.add(idx)
                for p in prop:
                    if p[0] == "r":
                        self.after_relinquish.setdefault(idx, p[1])
                n = sites.ncols.get(idx)
                if n:
                    held = sum(self._slot_cols(p[1]) for p in prop if p[0] == "a") + n
                    if held > 512:
                        self.over_budget[idx] = max(held, self.over_budget.get(idx, 0))
            elif idx in self._dealloc_idx:
                slot = sites.freed_slot[idx]
                if slot is not None and ("d", slot) in prop and ("a", slot) not in prop:
                    self.double_free.setdefault(idx, None)

        return observe

    def _slot_cols(self, slot) -> int:
        ns = [self.ctx.sites.ncols.get(a.index) for a in self.ctx.sites.allocs_of_slot(slot)]
        ns = [n for n in ns if n]
        return max(ns) if ns else 0

    def _transfer(self, prop: frozenset, inst: Instruction) -> frozenset:
        idx = inst.index
        if idx in self._alloc_idx:
            slot = self.ctx.sites.slot_of[idx]
            n = self.ctx.sites.ncols.get(idx)
            keep = frozenset(p for p in prop if p[0] != "last" and p != ("d", slot))
            return keep | {("a", slot)} | ({("last", n)} if n else frozenset())
        if idx in self._dealloc_idx:
            slot = self.ctx.sites.freed_slot[idx]
            if slot is None:
                return frozenset(p for p in prop if p[0] != "a") | {("f", "*")}
            if ("a", slot) in prop:
                return (prop - {("a", slot)}) | {("d", slot)}
            if ("d", slot) in prop:
                return prop  # this thread frees twice: TM104 through ``double_free``, not a cross-warp free
            return prop | {("f", slot), ("d", slot)}
        if inst.family == "tcgen05.relinquish_alloc_permit":
            if any(p[0] == "r" for p in prop):
                return prop
            return prop | {("r", idx)}
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

    def find_unmatched_free(self, slot) -> tuple[ClassRun, ExitState] | None:
        """A class and exit state that freed ``slot`` allocated by another thread, while a consistent choice of
        the other classes' exit states allocated it nowhere (TM104: dealloc with no allocation on some path)."""
        budget = [COMBINATION_BUDGET]
        for i, run in enumerate(self.runs):
            for st in run.exits:
                if ("f", slot) not in st.prop:
                    continue
                others = [r for j, r in enumerate(self.runs) if j != i]
                if consistent_choice(others, st.facts, lambda s: ("a", slot) not in s.prop, budget):
                    return run, st
        return None

    def multi_warp_sites(self) -> dict[int, str]:
        """Alloc/dealloc instructions executed by more than one warp (TM108): index → which warps."""
        out: dict[int, str] = {}
        by_inst: dict[int, list[ClassRun]] = {}
        for run in self.runs:
            for idx in run.executed:
                if idx in self._alloc_idx or idx in self._dealloc_idx:
                    by_inst.setdefault(idx, []).append(run)
        for idx, runs in by_inst.items():
            big = [r for r in runs if r.klass.min_warps > 1]
            if big:
                out[idx] = f"every warp of {big[0].klass!r}"
            elif len(runs) > 1:
                facts = [r.executed[idx] for r in runs]
                if consistent_choice_facts(facts):
                    out[idx] = " and ".join(repr(r.klass) for r in runs)
        return out


def consistent_choice_facts(fact_sets: list[frozenset]) -> bool:
    """Whether the uniform facts of all ``fact_sets`` agree."""
    acc: dict | None = {}
    for f in fact_sets:
        acc = _merge_facts(acc, f)
        if acc is None:
            return False
    return True


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
