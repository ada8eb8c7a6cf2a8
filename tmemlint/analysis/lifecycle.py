"""Allocation state along paths, for the whole CTA.

TMEM is allocated per CTA (PTX ISA §9.7.16.7.1): one warp may allocate and another free.  So the state is first
computed per thread, for one representative thread of every warp class (``PropertySimulation``): the property is
the set of ``("a", slot)`` (this thread allocated ``slot`` and has not freed it), ``("f", slot)`` (this thread
freed ``slot`` allocated elsewhere; ``("f", "*")``: freed an address of unknown origin), ``("d", slot)`` (this
thread freed ``slot`` and has not allocated it again), ``("r", i)`` (this thread executed the relinquish at
instruction ``i``), ``("m", slot)`` (maybe held: an unresolved call, below) and ``("last", n)`` (the column count
of this thread's latest alloc, in columns).  The CTA-level verdict
then combines one exit state per warp class whose branch facts agree (``consistent_choice``): an allocation leaks
when some combination allocates it and no class frees it.

A ``call`` of a ``.func`` that allocates, frees or relinquishes (``analysis.calls``) applies the callee's effects:
the callee's paths (PTX ISA §9.7.9.20: it runs in the caller's thread) are simulated for the same warp class (whose
warps are split by the callee's ``%tid.x`` tests too), starting from the caller's property value and its portable
branch facts, with the callee's parameters replaced by the caller's arguments (``calls.BoundOracle``: a constant
argument decides the callee's branches, the same kernel parameter passed to two callees is the same fact).  The
call leads to each property value that reaches the callee's ``ret``, with the facts of those paths (``Branches``),
or, when the caller cannot tell those outcomes apart, to one conservative state (``_merge_unresolved``).  Operands
the callee loads from its parameters are bound to the caller's arguments.  The results are cached per (callee,
arguments, class, property value, outermost call, portable facts).  A callee that cannot be
followed (recursion, an indirect call, a callee path that ends in ``exit``, a callee over its simulation budget)
may free anything: this thread's allocations are dropped and ``("f", "*")`` is added, so it never causes a leak
report.  ``callee_allocs`` lists, per slot, the callee allocs executed through calls (for TM101's location).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from tmemlint.analysis.calls import BoundOracle, CalleeInfo, call_binding, lifecycle_calls, portable_facts
from tmemlint.analysis.paths import Branches, BudgetExceeded, ExitState, FactKey, Facts, Observe, PropertySimulation
from tmemlint.analysis.tmem import Slot, first_operand_value
from tmemlint.analysis.values import TOP, Const, PAnd, Param, PNot, POr, SymAddr, TmemAddr, Value, ValueAnalysis
from tmemlint.analysis.threads import (WarpClass, cross_warp_facts, is_lane_fact, kleene, min_warps_on_path, normalize,
                                      undecidable_pair, warp_chosen)
from tmemlint.ir import Instruction

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.analysis.context import AnalysisContext as FunctionContext

#: Combinations of per-class exit states examined before giving up (TM901).
COMBINATION_BUDGET = 200_000

Token = tuple[str, Any]
"""One element of the property (module docstring), still a tagged tuple: ``("a" | "f" | "d" | "m", slot)`` (a
``tmem.Slot``, ``"*"`` in ``("f", "*")``, ``("inst", (callee, index))`` for a callee's unknown slot), ``("r",
instruction index)``, ``("last", columns)``."""
Prop = frozenset[Token]
"""The property of the lifecycle simulation: what one thread holds, freed and relinquished."""
Binding = dict[str, Value]
"""A callee's parameter names → the caller's argument values (``calls.call_binding``)."""
BindingKey = tuple[tuple[str, Value], ...]
CalleeAlloc = tuple[Instruction, Instruction, "int | None"]
"""``(alloc instruction in a callee, the call in the analysed function that led to it, its column count or None)``."""
CallOutcome = "Prop | list[tuple[Prop, Facts]]"
"""A call's single outcome, or each outcome with the portable facts that tell it apart."""
MergedFacts = dict[object, Any]
"""Fact key → value, plus ``_COMPOUND`` → the compound keys (``_merge_facts``)."""


def _prop(st: ExitState) -> Prop:
    """The property value of an exit state of the lifecycle simulation."""
    return cast(Prop, st.prop)  # ExitState.prop is any Hashable: this simulation's are Prop


@dataclass(slots=True)
class ClassRun:
    """Result of simulating one warp class: exit states, and every alloc/dealloc/relinquish it may execute (with
    the facts of the first path that does)."""

    klass: WarpClass
    exits: list[ExitState] = field(default_factory=list)
    executed: dict[int, Facts] = field(default_factory=dict)
    events: list[object] = field(default_factory=list)
    #: slot -> [(alloc instruction in a callee, the call in the analysed function that led to it, ncols or None)]
    callee_allocs: dict[Slot, list[CalleeAlloc]] = field(default_factory=dict)


class Lifecycle:
    """Per-class allocation state of a function (see module docstring).  ``bounded`` lists messages for TM901
    when a budget was exceeded (the verdicts of that function are then incomplete)."""

    def __init__(self, ctx: "FunctionContext") -> None:
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
        #: call instruction index -> the callee it calls, for callees that reach alloc/dealloc/relinquish
        self.calls: dict[int, CalleeInfo] = lifecycle_calls(ctx.module, ctx.function)
        self._bindings: dict[tuple[Any, ...], Binding] = {}
        self._call_cache: dict[tuple[str, BindingKey, int, Prop, int, Facts], Prop | list[tuple[Prop, Facts]]] = {}
        self._oracles: dict[tuple[str, BindingKey, int], BoundOracle] = {}
        self._active: list[str] = []
        if not sites.allocs and not sites.deallocs and not sites.relinquishes and not self.calls:
            return
        # one predicate object for every class: ``PropertySimulation`` computes its instructions of interest once
        # per such object (a bound method is a new object at each access)
        relevant = self._relevant
        for klass in ctx.threads.classes:
            run = ClassRun(klass)
            init: Prop = frozenset()
            sim = PropertySimulation(ctx.cfg, ctx.values, klass,
                                     lambda p, i, f, r=run: self._transfer(p, i, r, f), init,
                                     observe=self._observer(run), relevant=relevant,
                                     transfer_facts=True)
            try:
                # exit facts in cross-warp form: combinations of classes compare launch data by address
                run.exits = [ExitState(e.prop, cross_warp_facts(ctx.values, e.facts), e.exit_inst) for e in sim.run()]
            except BudgetExceeded:
                self.bounded.append(f"path simulation of {klass!r} exceeded its budget")
                continue
            self.runs.append(run)

    def _relevant(self, inst: Instruction) -> bool:
        return inst.index in self._alloc_idx or inst.index in self._dealloc_idx or \
            inst.family == "tcgen05.relinquish_alloc_permit" or inst.index in self.calls

    def _observer(self, run: ClassRun) -> Observe:
        interesting = self._alloc_idx | self._dealloc_idx

        sites = self.ctx.sites

        def observe(state: Hashable, inst: Instruction, facts: Facts) -> None:
            prop = cast(Prop, state)  # this simulation's property values are Prop
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

    def _slot_cols(self, slot: Slot) -> int:
        got = [self.ctx.sites.ncols.get(a.index) for a in self.ctx.sites.allocs_of_slot(slot)]
        ns = [n for n in got if n]
        return max(ns) if ns else 0

    def _transfer(self, prop: Prop, inst: Instruction, run: ClassRun, facts: Facts = frozenset()) -> Prop | Branches:
        idx = inst.index
        if idx in self._alloc_idx:
            return _alloc(prop, self.ctx.sites.slot_of[idx], self.ctx.sites.ncols.get(idx))
        if idx in self._dealloc_idx:
            return _dealloc(prop, self.ctx.sites.freed_slot[idx])
        if inst.family == "tcgen05.relinquish_alloc_permit":
            return _relinquish(prop, idx)
        if idx in self.calls:
            return self._call(prop, inst, self.calls[idx], self.ctx.values, run, inst, facts)
        return prop

    # ---- calls of .func callees (analysis.calls) ------------------------------------------------------------
    def _call(self, prop: Prop, inst: Instruction, callee: CalleeInfo, va: ValueAnalysis, run: ClassRun,
              outer: Instruction, facts: Facts = frozenset(), oracle: BoundOracle | None = None) -> Prop | Branches:
        """The states after ``call`` ``inst`` (made in the function whose values are ``va``; ``oracle``: the
        ``BoundOracle`` of that function when it is itself a callee); ``outer`` is the call in the analysed
        function that this call is (transitively) part of.

        The callee starts with the caller's portable facts (``calls.portable_facts``); the call leads to each
        property value reaching the callee's ``ret`` with the portable facts of those paths (``Branches``).  When
        two different property values are not told apart by such facts (the callee's alloc or dealloc is under a
        branch on something the caller cannot see, e.g. a value the callee loads), the call is unresolved and
        leads to one conservative state (``_merge_unresolved``): what only some paths allocate or free is
        "maybe held" (``("m", slot)``), never a leak nor an unmatched free."""
        name = callee.function.name
        if callee.unknown or name in self._active:
            return _unknown_call(prop)
        binding: Binding = call_binding(va, inst, callee.function) if callee.function.params else {}
        if oracle is not None:  # a call inside a callee: its arguments in the outermost caller's terms
            binding = {k: (oracle.substitute(v) if v is not TOP else v)
                       for k, v in binding.items()}
        infacts: Facts = portable_facts(facts)
        bkey: BindingKey = tuple(sorted(binding.items(), key=lambda kv: kv[0]))
        key = (name, bkey, id(run), prop, outer.index, infacts)
        got = self._call_cache.get(key)
        if got is None:
            got = self._call_cache[key] = self._run_callee(prop, callee, binding, bkey, run, outer, infacts)
        if isinstance(got, frozenset):
            return got
        return Branches((p, facts | pf) for p, pf in got)

    def _run_callee(self, prop: Prop, callee: CalleeInfo, binding: Binding, bkey: BindingKey, run: ClassRun,
                    outer: Instruction, infacts: Facts) -> Prop | list[tuple[Prop, Facts]]:
        """A property value (the call's single outcome), or ``[(prop, portable facts)]``."""
        name = callee.function.name
        okey = (name, bkey, id(run.klass))
        bound = self._oracles.get(okey)
        if bound is None or bound.klass is not run.klass:
            bound = self._oracles[okey] = BoundOracle(callee.values, run.klass, binding, name)
        self._active.append(name)
        try:
            sim = PropertySimulation(
                callee.cfg, callee.values, run.klass,
                lambda p, i, f: self._callee_transfer(p, i, callee, binding, run, outer, f, bound), prop,
                observe=lambda p, i, f: self._callee_observe(i, callee, binding, run, outer),
                relevant=lambda i: i.family in _LIFECYCLE or i.op == "call", init_facts=infacts, oracle=bound,
                transfer_facts=True)
            exits: list[ExitState] | None = sim.run()
        except BudgetExceeded:
            exits = None
        finally:
            self._active.pop()
        if exits is None or any(e.exit_inst is not None and e.exit_inst.op == "exit" for e in exits):
            return _unknown_call(prop)
        outs: dict[Prop, Facts] = {}
        for e in exits:
            pf: Facts = portable_facts(e.facts)
            ep = _prop(e)
            outs[ep] = pf if ep not in outs else outs[ep] & pf
        if len(outs) == 1:
            return next(iter(outs))
        items = list(outs.items())
        for j, (p1, f1) in enumerate(items):
            for p2, f2 in items[j + 1:]:
                if not _contradict(f1, f2):
                    return _merge_unresolved(prop, [p for p, _ in items])
        return items

    def _callee_slot(self, inst: Instruction, callee: CalleeInfo, binding: Binding) -> Slot:
        """The slot a callee's alloc writes: its own symbol, or the caller's argument it loads the address from."""
        slot = callee.sites.slot_of[inst.index]
        if type(slot) is SymAddr:
            return slot
        v = first_operand_value(callee.values, inst)
        if type(v) is Param and v.offset == 0:
            b = binding.get(v.name, TOP)
            if type(b) is SymAddr:
                return b
        return ("inst", (callee.function.name, inst.index))

    def _callee_freed(self, inst: Instruction, callee: CalleeInfo, binding: Binding) -> Slot | None:
        """The slot a callee's dealloc frees (None: unknown), through the caller's argument when ``taddr`` is a
        parameter of the callee."""
        slot = callee.sites.freed_slot.get(inst.index)
        if slot is not None:
            return slot
        v = first_operand_value(callee.values, inst)
        if type(v) is Param and v.offset == 0:
            b = binding.get(v.name, TOP)
            if type(b) is TmemAddr:
                freed: Slot = b.slot
                return freed
        return None

    def _callee_ncols(self, inst: Instruction, callee: CalleeInfo, binding: Binding) -> int | None:
        n = callee.sites.ncols.get(inst.index)
        if n is None and len(inst.operands) > 1:
            v = callee.values.value(inst, inst.operands[1])
            if type(v) is Param and v.offset == 0:
                b = binding.get(v.name, TOP)
                if type(b) is Const:
                    n = b.value
        return n

    def _callee_transfer(self, prop: Prop, inst: Instruction, callee: CalleeInfo, binding: Binding,
                         run: ClassRun, outer: Instruction, facts: Facts = frozenset(),
                         oracle: BoundOracle | None = None) -> Prop | Branches:
        fam = inst.family
        if fam == "tcgen05.alloc":
            return _alloc(prop, self._callee_slot(inst, callee, binding),
                          self._callee_ncols(inst, callee, binding))
        if fam == "tcgen05.dealloc":
            return _dealloc(prop, self._callee_freed(inst, callee, binding))
        if fam == "tcgen05.relinquish_alloc_permit":
            return _relinquish(prop, outer.index)
        if inst.op == "call":
            from tmemlint.analysis.calls import call_target, module_calls

            t = call_target(inst)
            effects = module_calls(self.ctx.module).effects
            if t is None:
                return _unknown_call(prop)
            if t in effects:
                return self._call(prop, inst, effects[t], callee.values, run, outer, facts, oracle)
        return prop

    def _callee_observe(self, inst: Instruction, callee: CalleeInfo, binding: Binding, run: ClassRun,
                        outer: Instruction) -> None:
        if inst.family == "tcgen05.alloc":
            lst = run.callee_allocs.setdefault(self._callee_slot(inst, callee, binding), [])
            if not any(a is inst and c is outer for a, c, _n in lst):
                lst.append((inst, outer, self._callee_ncols(inst, callee, binding)))

    def callee_allocs_of_slot(self, slot: Slot) -> list[CalleeAlloc]:
        """``[(alloc instruction in a callee, call, ncols or None)]`` executed through calls for ``slot``, in call
        order (TM103/TM104 compare a dealloc of the analysed function with them)."""
        out: list[CalleeAlloc] = []
        for run in self.runs:
            for x in run.callee_allocs.get(slot, ()):
                if not any(x[0] is y[0] and x[1] is y[1] for y in out):
                    out.append(x)
        return sorted(out, key=lambda x: (x[1].index, x[0].index))

    def callee_alloc_sites(self) -> dict[Slot, CalleeAlloc]:
        """Slot → ``(alloc instruction in a callee, the call that led to it, its column count or None)`` for
        allocations made in callees, the first executed one per slot (by call, then callee instruction)."""
        out: dict[Slot, CalleeAlloc] = {}
        for run in self.runs:
            for slot, lst in run.callee_allocs.items():
                for a, c, n in lst:
                    have = out.get(slot)
                    if have is None or (c.index, a.index) < (have[1].index, have[0].index):
                        out[slot] = (a, c, n)
        return out

    # ---- CTA-level combination ------------------------------------------------------------------------------
    def find_leak(self, slot: Slot) -> tuple[ClassRun, ExitState] | None:
        """A class and exit state that hold ``slot`` at exit while some consistent choice of exit states of the
        other classes frees nothing of it; None when every combination frees it."""
        frees = {("f", slot), ("f", "*")}
        budget = [COMBINATION_BUDGET]
        for i, run in enumerate(self.runs):
            for st in run.exits:
                if ("a", slot) not in _prop(st):
                    continue
                others = [r for j, r in enumerate(self.runs) if j != i]
                if consistent_choice(others, st.facts, lambda s: not (_prop(s) & frees), budget):
                    return run, st
                if budget[0] <= 0:
                    self.bounded.append("too many warp-class path combinations for the leak check")
                    return None
        return None

    def conditional(self, run: ClassRun, st: ExitState, effect: Callable[[ExitState], bool]) -> bool:
        """Whether the verdict on ``st`` (a leak, a free with no allocation) holds only if warps disagree about data:
        ``st``'s own path is chosen by facts built from values its class computed itself (loads, loop-carried flags),
        and another class has an exit state with ``effect`` (it frees, it allocates) that is also consistent with
        ``st``'s facts and was chosen the same way.  Two warps that each walk the same persistent tile loop and test the same tile for validity agree
        in every real launch, but the analysis cannot tie their separate loads together: such a finding states its
        assumption and is not a definite error."""
        for other in self.runs:
            if other is run:
                continue
            for s in other.exits:
                if effect(s) and consistent_choice_facts([s.facts, st.facts]) and undecidable_pair(st.facts, s.facts):
                    return True
        return False

    def find_unmatched_free(self, slot: Slot) -> tuple[ClassRun, ExitState] | None:
        """A class and exit state that freed ``slot`` allocated by another thread, while a consistent choice of
        the other classes' exit states allocated it nowhere (TM104: dealloc with no allocation on some path)."""
        budget = [COMBINATION_BUDGET]
        for i, run in enumerate(self.runs):
            for st in run.exits:
                if ("f", slot) not in _prop(st):
                    continue
                others = [r for j, r in enumerate(self.runs) if j != i]
                if consistent_choice(others, st.facts, lambda s: ("a", slot) not in _prop(s), budget):
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
            big = [r for r in runs if min_warps_on_path(r.klass, r.executed[idx]) > 1]
            runs = [r for r in runs if not warp_chosen(r.executed[idx])]  # a %warpid role: which warps is undecided
            if big:
                out[idx] = f"every warp of {big[0].klass!r}"
            elif len(runs) > 1:
                facts = [r.executed[idx] for r in runs]
                if consistent_choice_facts(facts):
                    out[idx] = " and ".join(repr(r.klass) for r in runs)
        return out


_LIFECYCLE = ("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")


def _alloc(prop: Prop, slot: Slot, n: int | None) -> Prop:
    """After a tcgen05.alloc of ``n`` columns (None: not constant) into ``slot``."""
    keep = frozenset(p for p in prop if p[0] != "last" and p != ("d", slot) and p != ("m", slot))
    return keep | {("a", slot)} | ({("last", n)} if n else frozenset())


def _dealloc(prop: Prop, slot: Slot | None) -> Prop:
    """After a tcgen05.dealloc of an address of ``slot`` (None: of unknown origin)."""
    if slot is None:
        return frozenset(p for p in prop if p[0] not in ("a", "m")) | {("f", "*")}
    if ("m", slot) in prop and ("a", slot) not in prop:  # maybe held (an unresolved call): freed now
        return (prop - {("m", slot)}) | {("d", slot)}
    if ("a", slot) in prop:
        return (prop - {("a", slot)}) | {("d", slot)}
    if ("d", slot) in prop:
        return prop  # this thread frees twice: TM104 through ``double_free``, not a cross-warp free
    return prop | {("f", slot), ("d", slot)}


def _contradict(f1: Facts, f2: Facts) -> bool:
    """Whether two fact sets give some predicate different values (no path satisfies both)."""
    small, big = (f1, f2) if len(f1) <= len(f2) else (f2, f1)
    return any((k, not v) in big for k, v in small)


def _merge_unresolved(before: Prop, outs: list[Prop]) -> Prop:
    """One state for a call whose outcomes ``outs`` (property values) the caller cannot tell apart: what every
    outcome has; a slot that some outcomes hold (``a``) and others do not becomes "maybe held" (``m``: a later
    dealloc frees it without report, the exit does not leak it); frees of other threads' allocations (``f``) and
    relinquishes (``r``) of any outcome are kept (they only prevent reports); ``d`` only when every outcome has
    it."""
    common = frozenset.intersection(*outs)
    out = set(common)
    for p in outs:
        for x in p:
            if x[0] in ("a", "m") and x not in common:
                out.add(("m", x[1]))
            elif x[0] in ("f", "r"):
                out.add(x)
    if any(x[0] == "last" for x in out) and sum(1 for x in out if x[0] == "last") > 1:
        out = {x for x in out if x[0] != "last"}
    return frozenset(out)


def _relinquish(prop: Prop, idx: int) -> Prop:
    """After tcgen05.relinquish_alloc_permit (``idx``: where, in the analysed function)."""
    if any(p[0] == "r" for p in prop):
        return prop
    return prop | {("r", idx)}


def _unknown_call(prop: Prop) -> Prop:
    """After a call that cannot be followed: it may free anything (never a cause of a leak report)."""
    return _dealloc(prop, None)


def consistent_choice_facts(fact_sets: list[Facts]) -> bool:
    """Whether the uniform facts of all ``fact_sets`` agree."""
    acc: MergedFacts = {}
    for f in fact_sets:
        merged = _merge_facts(acc, f)
        if merged is None:
            return False
        acc = merged
    return True


#: Key of a merged fact dict under which the compound facts (``por``/``pand`` predicates) it holds are listed.
_COMPOUND = ("compound",)


def _merge_facts(acc: MergedFacts, facts: Facts) -> MergedFacts | None:
    """``acc`` (fact key → value) with the CTA-uniform ``facts`` added, or None when they contradict it: the same
    key with the other value, or a compound fact (a branch on ``or.pred``/``and.pred`` of two tests, kept whole
    by the path simulation) whose value the atomic facts decide the other way (one class took the branch on
    ``a || b``; another knows ``!a`` and ``!b``)."""
    out = acc
    compound = False
    for key, val in facts:
        if is_lane_fact(key):
            continue
        have = out.get(key)
        if have is None:
            if out is acc:
                out = dict(acc)
            out[key] = val
            if type(key) is POr or type(key) is PAnd:
                out[_COMPOUND] = out.get(_COMPOUND, ()) + (key,)
                compound = True
        elif have != val:
            return None
    if (compound or out is not acc) and _COMPOUND in out:
        for key in out[_COMPOUND]:
            got = _decided(key, out)
            if got is not None and got != out[key]:
                return None
    return out


def _decided(p: FactKey, facts: MergedFacts) -> bool | None:
    """The value of predicate ``p`` that the atomic ``facts`` (key → value) decide, or None."""
    match p:
        case Const(value=k):
            return bool(k != 0)
        case PNot(p=q):
            v = _decided(q, facts)
            return None if v is None else not v
        case PAnd(tag=tag, p=a, q=b) | POr(tag=tag, p=a, q=b):
            return kleene(tag, _decided(a, facts), _decided(b, facts))
    key, pol = normalize(p)
    have = facts.get(key)
    return None if have is None else bool(have == pol)


def consistent_choice(runs: list[ClassRun], facts: Facts, accept: Callable[[ExitState], bool],
                      budget: list[int]) -> bool:
    """Whether one exit state can be chosen from every run such that ``accept(state)`` holds for each and the
    CTA-uniform facts of all chosen states (and ``facts``) agree.  Thread-predicate facts are per thread and do
    not have to agree.  ``budget[0]`` is decremented per state tried."""
    start = _merge_facts({}, facts)
    if start is None:
        return False

    def go(k: int, acc: MergedFacts) -> bool:
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
