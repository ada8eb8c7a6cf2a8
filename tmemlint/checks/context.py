"""What a check sees: one function with its analyses, computed once on first use and shared by all rules."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any
from functools import cached_property

from tmemlint.analysis.cfg import CFG, build_cfg
from tmemlint.analysis.context import ControlCaches
from tmemlint.analysis.feasibility import Feasibility
from tmemlint.analysis.flow import executing_classes, warps_of
from tmemlint.analysis.inline import inline_calls
from tmemlint.analysis.lifecycle import Lifecycle
from tmemlint.analysis.order import SyncModel
from tmemlint.analysis.paths import BudgetExceeded, ExitState, PropertySimulation, StatesSplit, identity_transfer
from tmemlint.analysis.regions import AddressSets
from tmemlint.analysis.threads import ThreadModel, thread_model
from tmemlint.analysis.tmem import TmemSites, tmem_sites
from tmemlint.analysis.values import ValueAnalysis
from tmemlint.analysis.witness import branch_steps
from tmemlint import profile
from tmemlint.checks.registry import RULES
from tmemlint.findings import Finding, Group, Related, Severity
from tmemlint.ir import Function, Instruction, Module, Span


#: Rules whose verdict depends on a path or on which warp class executes what: each of their findings carries a
#: witness (``Finding.flow``).  A rule that gives no flow of its own gets one from its places (the finding's and
#: the related instructions, in program order, each with the warp class that executes it, and the branch
#: decisions between the steps of one class: ``tmemlint.analysis.witness``).
PATH_SENSITIVE = frozenset({
    "TM101", "TM104", "TM105", "TM107", "TM108", "TM109", "TM111",
    "TM201", "TM203", "TM204", "TM205", "TM206",
    "TM302", "TM303", "TM304", "TM305", "TM306", "TM307", "TM308", "TM309",
    "TM311", "TM312", "TM313", "TM314", "TM315",
})

#: Rules of a missing order (a completion, a barrier): their witnesses also show the synchronizations on the
#: path and, for each further warp class, the last one it executes before its step (``FunctionContext.witness``).
ORDER_WITNESS = frozenset({"TM302", "TM303", "TM304", "TM305", "TM307", "TM308", "TM313"})

#: A code-flow step as a rule gives it: ``(where, what happens there)`` or ``(where, what, warp class)``.
Step = tuple


@dataclass(frozen=True, slots=True)
class Grouping:
    """How ``FunctionContext.report`` merges the findings of one root cause (rules catalog "Grouping").  Reports of
    one rule with the same ``key`` become one finding at ``at`` (the instruction that needs the missing completion,
    e.g. the ``tcgen05.st`` with no ``wait::st``), with message ``headline`` (``{n}``: the number of affected
    places, ``{s}``: the plural ending) followed by the places; each report's own place (its ``where``, described
    by ``place``) becomes a related place and a code-flow step after ``at``."""

    key: object
    at: Instruction
    headline: str
    place: str


def _interpreted(cls: type) -> bool:
    """Whether ``cls``'s module runs as Python source (not compiled by mypyc)."""
    import sys

    return str(getattr(sys.modules.get(cls.__module__), "__file__", "")).endswith(".py")


def _hashable(x: object) -> Hashable:
    """``x`` when hashable, else its identity (a closure's dict or list, for ``transfer_identity``)."""
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return x


def transfer_identity(transfer: Callable[..., object]) -> Hashable:
    """What names a transfer function's behaviour for ``SimulationKey``: its code and the values its closure holds
    (by value when hashable, else by identity); ``paths.identity_transfer`` is ``"identity"``."""
    if transfer is identity_transfer:
        return "identity"
    code = getattr(transfer, "__code__", None)
    if code is None:  # a callable that mypyc compiled (no code object): the object itself, kept alive by the key,
        return ("object", _hashable(transfer))  # so that a later one at the same address is not taken for it
    cells = tuple(_hashable(c.cell_contents) if c.cell_contents is not None else None
                  for c in (transfer.__closure__ or ()))
    return (code, cells, ("id", id(getattr(transfer, "__self__", None))))


@dataclass(frozen=True, slots=True)
class SimulationKey:
    """One path simulation of ``FunctionContext.simulate``: the warp class (its warps), the instructions of interest
    (``relevant``'s indices; None: all), the transfer (``transfer_identity``), the initial property, and the result
    (the exit states as ``(prop, facts, exiting instruction index)``; None when the budget was exceeded)."""

    warps: tuple[int, ...]
    relevant: frozenset[int] | None
    transfer: Hashable
    init: Hashable
    result: frozenset[tuple[Hashable, frozenset, int]] | None

    def same_run(self) -> tuple:
        """What two identical reruns share: everything (an identity transfer's init is immaterial: the property
        never changes, so only the observer differs)."""
        return (self.warps, self.relevant, self.transfer, None if self.transfer == "identity" else self.init,
                self.result if self.transfer != "identity" else None)


#: Opcodes of the instructions every ``PathRecord`` observes (``FunctionContext._recorded_set``): those the ordering
#: model observes (``analysis.order``) and the shared-memory writes of TM206.
RECORDED_OPS = frozenset({"ld", "ldu", "st", "tcgen05", "bar", "barrier", "mbarrier", "call", "ret", "exit", "atom",
                          "red", "cp", "stmatrix"})


@dataclass(frozen=True, slots=True)
class PathRecord:
    """The paths of one warp class under ``identity_transfer`` (``FunctionContext._replay``): every observation
    ``(instruction, branch facts)`` in the order the simulation made it (repeats included: a block visited again
    with fewer facts is observed again), and the exit states (None: the budget was exceeded)."""

    observed: tuple[tuple[Instruction, frozenset], ...]
    exits: tuple[ExitState, ...] | None


@dataclass(slots=True)
class RuleCaches:
    """What the rules compute once per function and share between their calls, owned by the function's context
    (``FunctionContext.rule_caches``); each field is filled on first use by the function named beside it."""

    #: ``checks.access._classes_reaching`` (TM206): instruction index -> [(warp class, [branch facts])]
    tm206_reach: dict[int, list[Any]] | None = None
    #: ``checks.hazards._accesses``: the TMEM accesses of the function (``analysis.regions.collect_accesses``)
    hazard_accesses: list[Any] | None = None
    #: ``checks.ordering._handover_matters``: (arrive index, kind, columns) -> whether the hand-over matters
    handover: dict[tuple[Any, ...], bool] = field(default_factory=dict)
    #: ``checks.ordering._touched_regions``: instruction index -> [(slot, lo, hi)] columns it touches
    touched_regions: dict[int, list[Any]] = field(default_factory=dict)
    #: ``checks.ordering._handover_candidates``: (arrive index, kind) -> (per class users, completed_before)
    handover_candidates: dict[tuple[int, str], tuple[Any, ...]] = field(default_factory=dict)
    #: ``checks.ordering._sync_sites``: [(instruction, SyncEvent)] of the barrier, mbarrier and commit instructions
    sync_sites: list[Any] | None = None
    #: ``checks.ordering._loop_keys``: (kind, class id, instruction index) -> (class, [barrier keys])
    loop_keys: dict[tuple[str, int, int], tuple[Any, list[Any]]] = field(default_factory=dict)


class FunctionContext:
    """Analyses of ``function`` in ``module`` for the rules, and ``report`` to emit findings."""

    def __init__(self, module: Module, function: Function, path: str):
        self.module = module
        #: the kernel with its TMEM-using ``.func`` callees expanded at their calls (``analysis.inline``)
        inlined = inline_calls(module, function)
        self.function = inlined.function
        #: instruction index -> the calls it was expanded from (``analysis.inline.Inlined.sites``)
        self.call_sites = inlined.sites
        self.path = path
        self.findings: list[Finding] = []
        self._groups: dict[tuple, Finding] = {}  # (code, Grouping.key) -> the finding that merges them
        self.bounded: list[str] = []
        self._address_sets_of: dict[tuple[int, ...], AddressSets] = {}  # address_sets_of, by warp tuple
        #: every path simulation run by ``simulate``, in order (``duplicate_simulations`` counts the repeats)
        self.simulations: list[SimulationKey] = []
        #: the paths of each (warp class's warps, instructions of interest) for ``identity_transfer`` (``_replay``)
        self._paths: dict[tuple[tuple[int, ...], frozenset[int] | None], PathRecord] = {}
        self._relevant_sets: dict[int, tuple[Callable[[Instruction], bool], frozenset[int]]] = {}
        #: ``analysis.control``'s per-function results
        self.control_caches = ControlCaches()
        #: the rules' shared per-function results
        self.rule_caches = RuleCaches()

    @cached_property
    @profile.timed("cfg")
    def cfg(self) -> CFG:
        return build_cfg(self.function)

    @cached_property
    @profile.timed("values")
    def values(self) -> ValueAnalysis:
        from tmemlint.analysis.calls import call_returns, callee_slots

        return ValueAnalysis(self.cfg).analyse(callee_slots(self.module, self.function),
                                               call_returns(self.module, self.function))

    @cached_property
    @profile.timed("threads")
    def threads(self) -> ThreadModel:
        from tmemlint.analysis.calls import callee_thread_predicates

        return thread_model(self.function, self.values, callee_thread_predicates(self.module, self.function))

    @cached_property
    @profile.timed("sites")
    def sites(self) -> TmemSites:
        return tmem_sites(self.function, self.values)

    @cached_property
    @profile.timed("solver")
    def feasibility(self) -> Feasibility:
        """The solver's questions about this function's paths and counted loops, with their cache
        (``tmemlint.analysis.feasibility``; z3 is imported only when one is asked)."""
        return Feasibility(self.cfg, self.values)

    @cached_property
    @profile.timed("address_sets")
    def address_sets(self) -> AddressSets:
        """Bounded sets of TMEM addresses and integers per operand (``tmemlint.analysis.regions``): a
        double-buffered accumulator at ``base + (stage & 1) * 128`` has the column set {0, 128}."""
        from tmemlint.analysis.tmem import TMEM_COLUMNS, trap_checked_bases

        sites = self.sites
        slots = {sites.slot_of[a.index] for a in sites.allocs}
        known = len(slots) == 1 and (any(sites.ncols.get(a.index) == TMEM_COLUMNS for a in sites.allocs)
                                     or 0 in trap_checked_bases(self.function, self.values))
        return AddressSets(self.values, self.threads.n_threads, next(iter(slots)) if known else None,
                           feasibility=self.feasibility)

    @profile.timed("address_sets")
    def address_sets_of(self, warps: tuple[int, ...]) -> AddressSets:
        """``address_sets`` evaluated with the thread indices of ``warps`` only (``AddressSets(warps=...)``): a
        column computed from the warpgroup index (``(warp >> 2) * 128``) is one interval for the warps of one
        warpgroup, not the union over the CTA.  One per warp tuple, kept by this context."""
        got = self._address_sets_of.get(warps)
        if got is None:
            base = self.address_sets
            got = self._address_sets_of[warps] = AddressSets(self.values, self.threads.n_threads,
                                                             base.constant_slot, warps=warps,
                                                             feasibility=self.feasibility)
        return got

    @cached_property
    @profile.timed("lifecycle")
    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self)

    def lifecycle_if_analysed(self) -> Lifecycle | None:
        """``lifecycle`` when a rule has asked for it, else None (without analysing it)."""
        got: Lifecycle | None = self.__dict__.get("lifecycle")  # where functools.cached_property keeps its value
        return got

    @cached_property
    @profile.timed("sync")
    def sync(self) -> SyncModel:
        """Happens-before between warp classes through barrier instances (``tmemlint.analysis.order``).  While
        profiling (``tmemlint.profile``), the rules' calls of its methods are timed and counted (``TimedProxy``;
        not when ``analysis.order`` is compiled, whose callers check the type)."""
        model = SyncModel(self)
        if profile.ACTIVE is not None and _interpreted(SyncModel):
            return profile.TimedProxy(model, "sync", "sync_calls", profile.HB_QUERIES,
                                      "hb_queries")  # type: ignore[return-value]
        return model

    @cached_property
    def touches_tmem(self) -> bool:
        """Whether the function has a tcgen05 instruction, or calls a ``.func`` that allocates, frees or
        relinquishes TMEM (``analysis.calls``)."""
        if any(i.op == "tcgen05" for i in self.function.instructions):
            return True
        from tmemlint.analysis.calls import lifecycle_calls

        return bool(lifecycle_calls(self.module, self.function))

    def simulate(self, transfer, init, observe=None, classes=None, relevant=None) -> list:
        """Run a ``PropertySimulation`` per warp class (all classes, or ``classes``); returns
        ``[(klass, exits)]``.  ``relevant(inst)`` says which instructions ``transfer``/``observe`` look at (None:
        all).  A class whose simulation exceeds its budget is skipped and noted in ``bounded`` (TM901).  Each run
        is logged in ``simulations`` (``SimulationKey``)."""
        out = []
        for klass in classes if classes is not None else self.threads.classes:
            if transfer is identity_transfer:
                exits = self._replay(klass, relevant, init, observe)
                if exits is not None:
                    out.append((klass, exits))
                continue
            sim = PropertySimulation(self.cfg, self.values, klass, transfer, init,
                                     observe=(lambda p, i, f, k=klass: observe(k, p, i, f)) if observe else None,
                                     relevant=relevant, feasibility=self.feasibility)
            exits = self._run_logged(sim, klass, transfer, init, relevant)
            if exits is None:  # not single-valued: only the budget stops it
                self.bounded.append(f"path simulation of {klass!r} exceeded its budget")
            else:
                out.append((klass, exits))
        return out

    def simulate_single_valued(self, transfer, init, klass, relevant=None) -> list[ExitState] | None:
        """One ``PropertySimulation`` of ``transfer`` from ``init`` for ``klass`` with ``single_valued``: its exit
        states, or None when two property values met at one program point (``paths.StatesSplit``) or the budget was
        exceeded; nothing is noted in ``bounded`` (the caller then runs what this replaces, which notes it).  Logged
        in ``simulations`` as every run is (result None when it did not finish)."""
        sim = PropertySimulation(self.cfg, self.values, klass, transfer, init, relevant=relevant,
                                 feasibility=self.feasibility, single_valued=True)
        return self._run_logged(sim, klass, transfer, init, relevant)

    def _run_logged(self, sim, klass, transfer, init, relevant) -> list[ExitState] | None:
        """Runs ``sim`` under the profile's "simulation" phase and logs it in ``simulations``: its exit states, or
        None when its budget was exceeded (``BudgetExceeded``) or, single-valued, two property values met at one
        program point (``StatesSplit``); raises neither."""
        p = profile.ACTIVE
        if p is not None:
            p.push("simulation")
        try:
            exits: list[ExitState] | None = sim.run()
        except (BudgetExceeded, StatesSplit):
            exits = None
        finally:
            if p is not None:
                p.pop()
        self.simulations.append(SimulationKey(
            klass.warps, self._relevant_set(relevant), transfer_identity(transfer), _hashable(init),
            None if exits is None else frozenset((e.prop, e.facts, -1 if e.exit_inst is None else e.exit_inst.index)
                                                 for e in exits)))
        return exits

    def _replay(self, klass, relevant, init, observe) -> list[ExitState] | None:
        """``simulate`` of ``identity_transfer`` for ``klass``: the property never changes, so the paths, and the
        ``(instruction, facts)`` each observation is called with, depend only on the class and the instructions of
        interest; they are simulated once per such pair (``PathRecord``, kept by this context) and replayed to
        ``observe`` in the order the simulation made them, with ``init`` as the property.  None when the
        simulation exceeded its budget (noted in ``bounded`` each time, as a rerun would)."""
        rel = self._relevant_set(relevant)
        recorded = self._recorded_set
        if rel is not None and not rel <= recorded:
            recorded = recorded | rel
        key = (klass.warps, None if rel is None else recorded)
        rec = self._paths.get(key)
        if rec is None:
            seen: list[tuple[Instruction, frozenset]] = []
            sim = PropertySimulation(self.cfg, self.values, klass, identity_transfer, None,
                                     observe=lambda _p, i, f: seen.append((i, f)),
                                     relevant=None if rel is None else lambda i: i.index in recorded)
            p = profile.ACTIVE
            if p is not None:
                p.push("simulation")
            try:
                got: list[ExitState] | None = sim.run()
            except BudgetExceeded:
                got = None
            finally:
                if p is not None:
                    p.pop()
            rec = self._paths[key] = PathRecord(tuple(seen), None if got is None else tuple(got))
            self.simulations.append(SimulationKey(klass.warps, key[1], "identity", None, None if got is None else
                                                  frozenset((e.prop, e.facts, -1 if e.exit_inst is None
                                                             else e.exit_inst.index) for e in got)))
        elif profile.ACTIVE is not None:
            profile.ACTIVE.count("replays")
        if rec.exits is None:
            self.bounded.append(f"path simulation of {klass!r} exceeded its budget")
            return None
        if observe is not None:
            if rel is None or rel == key[1]:
                for inst, facts in rec.observed:
                    observe(klass, init, inst, facts)
            else:
                for inst, facts in rec.observed:
                    if inst.index in rel:
                        observe(klass, init, inst, facts)
        return [ExitState(init, e.facts, e.exit_inst) for e in rec.exits]

    @cached_property
    def _recorded_set(self) -> frozenset[int]:
        """The instructions a ``PathRecord`` observes at least (``RECORDED_OPS``), so that the identity-transfer
        callers with different instructions of interest (the ordering model's, TM204's loads and stores, TM206's
        stores) share one record per class: which facts reach an instruction does not depend on which others are
        observed (the instructions not of interest only kill facts, as the observed ones do)."""
        return frozenset(i.index for i in self.function.instructions if i.op in RECORDED_OPS)

    def _relevant_set(self, relevant) -> frozenset[int] | None:
        """The indices of the instructions ``relevant`` holds for (None: every instruction), for ``SimulationKey``;
        memoised per function object (kept alive by the memo, so its ``id`` is not reused)."""
        if relevant is None:
            return None
        hit = self._relevant_sets.get(id(relevant))
        if hit is None or hit[0] is not relevant:
            hit = self._relevant_sets[id(relevant)] = (
                relevant, frozenset(i.index for i in self.function.instructions if relevant(i)))
        return hit[1]

    def duplicate_simulations(self) -> int:
        """How many of the logged ``simulations`` repeat an earlier one of this context (``SimulationKey.same_run``:
        same class, instructions of interest, transfer, init and result)."""
        seen: set[tuple] = set()
        dup = 0
        for k in self.simulations:
            run = k.same_run()
            dup += run in seen
            seen.add(run)
        return dup

    def related(self, where: Instruction | Span, message: str, thread: str | None = None) -> Related:
        span = where.span if isinstance(where, Instruction) else where
        return Related(self.path, span.line, span.column, message, thread)

    @cached_property
    @profile.timed("executing")
    def executing(self) -> dict[int, frozenset[int]]:
        """Instruction index → indices of the warp classes that may execute it (``analysis.flow``), for the
        threads of default witnesses; computed only when a finding needs one."""
        return executing_classes(self.cfg, self.values, self.threads)[0]

    def _class_of(self, inst: Instruction):
        """``(WarpClass or None, label or None)`` of the warp classes that execute ``inst``."""
        got = self.executing.get(inst.index)
        if not got:
            return None, None
        if len(got) == 1:
            k = self.threads.classes[next(iter(got))]
            return k, repr(k)
        ws = warps_of(got, self.threads)
        return None, ("warp " if len(ws) == 1 else "warps ") + ", ".join(map(str, ws))

    @profile.timed("witness")
    def witness(self, steps, facts: frozenset = frozenset(), avoid=None, code: str | None = None) -> list[Related]:
        """The code flow of ``steps`` (``Step``s, in execution order): each step a Related with its warp class,
        and between two consecutive instructions of one class the branch decisions of a path of that class
        from one to the other that agrees with ``facts`` and executes no instruction for which ``avoid`` holds
        (``analysis.witness.branch_steps``; an ``exit``/``ret`` step ends that path at kernel exit).  For the
        rules of a missing order (``ORDER_WITNESS``, rule ``code``), the synchronizations on that path are steps
        too, and a step of another class is preceded by the last synchronization that class executes before it:
        the barrier that does not order it."""
        out: list[Related] = []
        prev = None
        seen: list = []
        order = code in ORDER_WITNESS
        for st in steps:
            where, msg = st[0], st[1]
            klass = st[2] if len(st) > 2 else None
            label = klass if isinstance(klass, str) or klass is None else repr(klass)
            real = klass is not None and not isinstance(klass, str) and isinstance(where, Instruction)
            got = None
            try:
                if real and prev is not None and prev[1] is klass:
                    got = branch_steps(self.cfg, self.values, klass, prev[0], where, facts, avoid, syncs=order)
                elif real and order and seen and not any(k is klass for k in seen):
                    got = [b for b in branch_steps(self.cfg, self.values, klass, None, where, syncs=True) or ()
                           if b.kind == "sync"][-1:]
                    got = [replace(b, text=f"the last synchronization of {label} before it: {b.text}")
                           for b in got]
            except RecursionError:
                got = None
            for b in got or ():
                out.append(self.related(b.inst, b.text if b.kind == "branch" or b.text.startswith("the last")
                                        else f"passes {b.text}", label))
            out.append(self.related(where, msg, label))
            if real:
                seen.append(klass)
            prev = (where, klass) if isinstance(where, Instruction) else None
        return out

    def _default_flow(self, code: str, where, related) -> list[Related]:
        """The witness of a path-sensitive finding whose rule gave none: the related instructions (the rules name
        the earlier event there: the alloc, the load, the MMA still reading, the access before the free), then the
        finding's own instruction, each with the class that executes it (``witness``)."""
        places = [(w, m) for w, m in related if isinstance(w, Instruction) and w is not where] + \
            [(where, f"{where.family if isinstance(where, Instruction) else 'here'}: "
                     f"{RULES[code].name}")]
        if not isinstance(where, Instruction):
            return [self.related(w, m) for w, m in places]
        steps = []
        for w, m in places:
            klass, label = self._class_of(w)
            steps.append((w, m, klass if klass is not None else label))
        return self.witness(steps, code=code)

    def report(self, code: str, where: Instruction | Span, message: str,
               related: list[tuple[Instruction | Span, str]] = (), flow: list[Step] = (),
               severity: Severity | None = None, group: Grouping | None = None, facts: frozenset = frozenset(),
               avoid=None):
        """Emit a finding of rule ``code`` at ``where`` (an instruction: its whole text is the range), with the
        rule's default severity unless ``severity`` is given (rules with two severities, e.g. TM106).  With
        ``group``, reports of the same root cause are merged into one finding at ``group.at`` (``Grouping``);
        ``message`` is then not used, ``related`` places other than ``group.at`` are kept.  ``flow``: the witness
        steps (``witness``, with ``facts`` and ``avoid``); a ``PATH_SENSITIVE`` rule that gives none gets
        ``_default_flow``."""
        r = RULES[code]
        span = where.span if isinstance(where, Instruction) else where
        if group is not None:
            place = Related(self.path, span.line, span.column, group.place)
            step = Related(self.path, span.line, span.column, group.place,
                           self._class_of(where)[1] if isinstance(where, Instruction) else None)
            hit = self._groups.get((code, group.key))
            if hit is None:
                at = group.at.span
                first = next((m for w, m in related if w is group.at), "the instruction that needs the completion")
                hit = Finding(self.path, at.line, at.column, at.end_line, at.end_column, code, r.name,
                              severity or r.severity, "", [],
                              [self.related(group.at, first, self._class_of(group.at)[1])], self.function.name,
                              group=Group(group.headline))
                self._groups[(code, group.key)] = hit
                self.findings.append(hit)
            hit.absorb(Finding(self.path, span.line, span.column, span.end_line, span.end_column, code, r.name,
                               severity or r.severity, "",
                               [place] + [self.related(w, m) for w, m in related if w is not group.at], [step],
                               self.function.name, group=Group(group.headline, (place,))))
            hit.related.sort(key=lambda x: (x.path, x.line, x.column))
            return
        sites = self.call_sites.get(where.index) if isinstance(where, Instruction) else None
        if sites and self.function.instructions[where.index] is where:  # type: ignore[union-attr]
            # a place in an expanded callee: say so, and name the calls (``analysis.inline``)
            inner = sites[-1]
            message = f"{message} (in {inner.callee}, called by {inner.caller} at line {inner.call.span.line})"
            related = [(s.call, f"{s.callee} is called here by {s.caller}") for s in sites] + list(related)
        if flow:
            steps = self.witness(flow, facts, avoid, code)
        elif code in PATH_SENSITIVE:
            steps = self._default_flow(code, where, related)
        else:
            steps = []
        self.findings.append(Finding(
            self.path, span.line, span.column, span.end_line, span.end_column, code, r.name, severity or r.severity, message,
            [self.related(w, m) for w, m in related], steps, self.function.name))
