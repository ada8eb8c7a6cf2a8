"""Path-sensitive typestate by property simulation (Das, Lerner, Seigle: "ESP: Path-Sensitive Program
Verification in Polynomial Time", PLDI 2002).

A state is ``(prop, facts)``: ``prop`` is the property being tracked (hashable, supplied by the rule: e.g. which
allocations this thread holds) and ``facts`` a frozenset of ``(key, bool)`` branch facts (see
``tmemlint.analysis.threads``).  Guarded instructions and conditional branches fork on undecided predicates and
consult the facts, so a predicate tested twice is taken the same way both times (correlated guards).  At every
program point, states with equal ``prop`` are merged and keep only the facts they share: the number of states is
bounded by the number of distinct property values, never by the number of paths.

The simulation runs once per warp class (``WarpClass``): predicates of the thread index are decided by the class.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any, TypeVar

from mypy_extensions import mypyc_attr

from tmemlint.analysis.cfg import CFG, EXIT, Node
from tmemlint.analysis.feasibility import Feasibility
from tmemlint.analysis.threads import GuardOracle, WarpClass
from tmemlint.analysis.values import Const, Tid, ValueAnalysis
from tmemlint.ir import Guard, Instruction
from tmemlint.threadexpr import eval_tid

FactKey = tuple[Any, ...]
"""What a branch fact is about: a value of the value analysis (a tagged tuple, ``tmemlint.analysis.values``) or
``("regval", register, value)``; still a tagged tuple."""
Fact = tuple[FactKey, bool]
Facts = frozenset[Fact]
Transfer = Callable[..., Hashable]
"""``transfer(prop, inst) → prop``, or with ``transfer_facts`` ``transfer(prop, inst, facts) → prop | Branches``
(a ``Fork`` in either case)."""
Observe = Callable[[Hashable, Instruction, Facts], None]
"""``observe(prop, inst, facts)``, called before ``transfer`` for every executed instruction."""
Route = tuple[Node, "tuple[Guard, bool] | None", "tuple[int, ...] | None"]
"""An out-edge of a CFG node for the simulation: ``(successor, cond, cases)`` (the edge's attributes, ``cfg.CFG``)."""

_T = TypeVar("_T")

#: Block visits allowed per simulation before giving up (reported as TM901 by the caller); read when a simulation
#: is made, so that a test can lower it in the compiled module too (tests/test_scale.py).
DEFAULT_BUDGET = 400_000


def identity_transfer(prop: Hashable, _inst: Instruction) -> Hashable:
    """The transfer that never changes the property: a simulation of it only follows the paths (which branch facts
    reach each instruction), for its observer.  One function object, so ``FunctionContext.simulate`` can tell such
    runs apart and share them."""
    return prop


class BudgetExceeded(Exception):
    """The simulation needed more than its budget of block visits."""


class StatesSplit(Exception):
    """A simulation run with ``single_valued`` met two property values at one program point (two states at a block
    entry, after an instruction, or at one exiting instruction): the caller's premise (every point has one
    property value) does not hold, and it falls back to what it would have run otherwise."""


@mypyc_attr(native_class=False)  # mypyc compiles no subclass of a built-in type
class Fork(frozenset[Hashable]):
    """Returned by a transfer function: the instruction leads to any one of these property values (a ``call``
    whose callee's paths end in different states); the path forks, with the same facts, into one state each."""


@mypyc_attr(native_class=False)
class Branches(tuple[tuple[Hashable, Facts], ...]):
    """Returned by a transfer function that takes the path's facts (``transfer_facts``): ``((prop, facts), …)``,
    the instruction leads to any one of these states, each with its own facts (a ``call`` whose callee's paths
    end in different states, with the branch facts that tell them apart in the caller's terms)."""


@dataclass(slots=True)
class ExitState:
    """A property value reaching kernel exit, with the facts of its paths and the exiting instruction."""

    prop: Hashable
    facts: Facts
    exit_inst: Instruction | None


def per_object(cache: dict[int, tuple[object, _T]], obj: object, make: Callable[[], _T]) -> _T:
    """``make()`` computed once per object ``obj`` (by identity; the entry keeps ``obj`` alive, so its ``id`` is
    not reused while cached)."""
    hit = cache.get(id(obj))
    if hit is None or hit[0] is not obj:
        hit = cache[id(obj)] = (obj, make())
    return hit[1]


class PropertySimulation:
    """Runs ``transfer`` over every feasible path of one warp class.

    ``transfer(prop, inst)`` is called for each instruction executed (guard true); it returns the new prop.
    ``observe(prop, inst, facts)``, if given, is called before ``transfer`` for every executed instruction."""

    def __init__(self, cfg: CFG, va: ValueAnalysis, klass: WarpClass, transfer: Transfer, init: Hashable,
                 observe: Observe | None = None, budget: int | None = None,
                 relevant: Callable[[Instruction], bool] | None = None, init_facts: Facts = frozenset(),
                 oracle: GuardOracle | None = None, transfer_facts: bool = False,
                 feasibility: Feasibility | None = None, single_valued: bool = False) -> None:
        """``init_facts``: the facts of the entry state (a callee simulated at a call starts with the caller's);
        ``oracle``: evaluates the predicates (default: the class's ``GuardOracle`` of ``va``);
        ``transfer_facts``: ``transfer(prop, inst, facts)`` is called instead, and may return ``Branches``;
        ``feasibility``: asked of a branch both of whose outcomes the facts leave open (``analysis.feasibility``);
        ``single_valued``: ``run`` raises ``StatesSplit`` as soon as two property values meet at one program point
        (``SyncModel._single_valued_releases`` reads a batched run only when every point had one)."""
        self.single_valued = single_valued
        self.feasibility = feasibility
        self.cfg = cfg
        self.va = va
        # one oracle (and its memo) per class for every rule's simulation
        if oracle is None:
            oracle = per_object(va.oracles, klass, lambda: GuardOracle(va, klass))
        self.oracle = oracle
        self.init_facts = init_facts
        self.transfer_facts = transfer_facts
        self.transfer = transfer
        self.observe = observe
        self.init = init
        self.budget = DEFAULT_BUDGET if budget is None else budget
        self._dep_indices: set[int] = set()
        self._deps_seen = 0
        #: definitions of registers with several definitions: a constant written there is a path fact
        self._regval_defs = va.multi_def_writes
        self._regval_memo: dict[tuple[int, Facts], Facts] = va.regval_memo
        #: ``_kill`` results of this oracle's ``deps`` (a ``BoundOracle`` has its own)
        self._kill_memo: dict[tuple[int, Facts, int], Facts] = oracle.kill_memo
        #: ``_branch`` outcomes by (instruction index, facts), shared by every simulation with this oracle
        self._branches: dict[tuple[int, Facts], tuple[tuple[bool, Facts], ...]] = oracle.branch_memo
        #: the same refined by ``feasibility`` (one per function, as the value analysis), shared likewise: most
        #: branches are asked again and again, and the refinement is a pure function of the outcomes
        self._refined: dict[tuple[int, Facts], tuple[tuple[bool, Facts], ...]] = oracle.refined_branch_memo
        #: instructions that need full processing: guarded ones, exits, and those the property looks at;
        #: every other instruction only kills the facts that depend on its definitions (computed once per
        #: ``relevant`` for all the warp classes of a ``FunctionContext.simulate``)
        self._interesting = per_object(va.interesting, relevant, lambda: {
            i.index for i in cfg.function.instructions if i.guard is not None or i.op in ("ret", "exit", "trap")
            or relevant is None or relevant(i)} | set(self._regval_defs))

    def _regval(self, facts: Facts, inst: Instruction, names: list[str]) -> Facts:
        """Record (or forget) the value ``inst`` writes to each multiply-defined register in ``names`` when it
        is a constant or a thread expression (decided per warp class): ``(("regval", register, value), True)``.
        A pure function of ``(inst, facts)``: memoised per value analysis (every simulation of the function asks
        it again)."""
        memo = self._regval_memo
        k = (inst.index, facts)
        hit = memo.get(k)
        if hit is None:
            if len(memo) > 200_000:
                memo.clear()
            hit = memo[k] = self._regval_uncached(facts, inst, names)
        return hit

    def _regval_uncached(self, facts: Facts, inst: Instruction, names: list[str]) -> Facts:
        keep = frozenset(f for f in facts if not (f[0][0] == "regval" and f[0][1] in names))
        for n in names:
            v = self.va.def_value.get((inst.index, n))
            if type(v) is Const or type(v) is Tid:
                keep = keep | {(("regval", n, v), True)}
        return keep

    def _refresh_deps(self) -> None:
        deps = self.oracle.deps
        self._deps_seen = len(deps)
        self._dep_indices = set().union(*deps.values()) if deps else set()

    def _kill(self, facts: Facts, idx: int) -> Facts:
        if not facts:
            return facts
        deps = self.oracle.deps
        if len(deps) != self._deps_seen:
            self._refresh_deps()
        if idx not in self._dep_indices:
            return facts
        # memoised per oracle: the result depends on the facts, the instruction and ``deps``, which only grows
        # (so its size names its state)
        k = (idx, facts, len(deps))
        memo = self._kill_memo
        hit = memo.get(k)
        if hit is None:
            if len(memo) > 200_000:
                memo.clear()
            keep = [f for f in facts if idx not in deps.get(f[0], ())]
            hit = memo[k] = facts if len(keep) == len(facts) else frozenset(keep)
        return hit

    def _branch(self, inst: Instruction, facts: Facts) -> tuple[tuple[bool, Facts], ...]:
        """``((taken: bool, facts), …)`` for each feasible outcome of ``inst``'s guard; a pure function of
        ``(inst, facts)`` for one oracle, memoised."""
        k = (inst.index, facts)
        if self.feasibility is not None:
            got = self._refined.get(k)
            if got is None:
                if len(self._refined) > 200_000:
                    self._refined.clear()
                got = self._refined[k] = self.feasibility.refine(self.oracle, inst, self._plain_branch(k, inst, facts))
            return got
        return self._plain_branch(k, inst, facts)

    def _plain_branch(self, k: tuple[int, Facts], inst: Instruction, facts: Facts) -> tuple[tuple[bool, Facts], ...]:
        memo = self._branches
        hit = memo.get(k)
        if hit is None:
            if len(memo) > 200_000:
                memo.clear()
            hit = memo[k] = tuple(self._branch_uncached(inst, facts))
        return hit

    def _branch_uncached(self, inst: Instruction, facts: Facts) -> Iterator[tuple[bool, Facts]]:
        g = inst.guard
        assert g is not None  # asked only of guarded instructions and conditional branches
        v = self.oracle.value(inst, g.reg)
        t = self.oracle.truth(v, facts)
        if t is not None:
            yield (t != g.negated), facts
            return
        for outcome in (True, False):
            f = self.oracle.assume(v, outcome != g.negated, facts)
            if f is not None:
                yield outcome, f

    def _brx_cases(self, inst: Instruction) -> set[int] | None:
        """Table entries a ``brx.idx`` can take in this warp class, when its index depends only on %tid.x."""
        if not inst.operands:
            return None
        v = self.va.value(inst, inst.operands[0])
        if type(v) is Const:
            return {v.value}
        if type(v) is not Tid:
            return None
        vals: set[int] = set()
        for w in self.oracle.klass.warps:
            lo = 32 * w
            vals.update(eval_tid(v.expr, range(lo, min(lo + 32, self.oracle.klass.n_threads))))
        return vals

    def run(self) -> list[ExitState]:
        """Simulate; returns the states reaching EXIT.  Raises BudgetExceeded."""
        cfg = self.cfg
        g = cfg.graph
        entry_states: dict[Node, dict[Hashable, Facts]] = {}
        exits: dict[tuple[Hashable, int], ExitState] = {}
        single = self.single_valued
        exit_prop: dict[int, Hashable] = {}  # with ``single``: the one property value seen at each exiting instruction
        # the worklist is a heap ordered by reverse post-order: a join is processed after all of its forward
        # predecessors, so each block of an acyclic region is visited once per property change instead of once per
        # arrival (a LIFO stack re-walked everything below a join each time one more predecessor arrived: quadratic
        # visits with linear fact sets on a chain of diamonds)
        rank, routes = per_object(self.va.routing, cfg, lambda: _routing(cfg))
        work: list[tuple[int, int]] = []  # (rank, block id): a heap
        queued: set[int] = set()

        def arrive(node: Node, prop: Hashable, facts: Facts, from_inst: Instruction | None) -> None:
            if node == EXIT:
                k = (prop, from_inst.index if from_inst is not None else -1)
                if single and exit_prop.setdefault(k[1], prop) != prop:
                    raise StatesSplit()
                old = exits.get(k)
                if old is None:
                    exits[k] = ExitState(prop, facts, from_inst)
                else:
                    old.facts = old.facts & facts
                return
            if isinstance(node, str) or node not in cfg.blocks:
                return  # ABORT: a trapped path holds nothing
            states = entry_states.setdefault(node, {})
            had = states.get(prop)
            if had is None:
                states[prop] = facts
                if single and len(states) > 1:
                    raise StatesSplit()
            else:
                new = had & facts
                if new == had:
                    return
                states[prop] = new
            if node not in queued:
                queued.add(node)
                heappush(work, (rank[node], node))

        plans: dict[int, tuple[list[Instruction], frozenset[int]]] = per_object(
            self.va.plans, self._interesting, dict)
        first = next(iter(g.successors("entry")))
        arrive(first, self.init, self.init_facts, None)
        visits = 0
        # ``_branch``'s memo, read inline (a hit is most calls: the same guards with the same facts again and again);
        # a miss goes through ``_branch``, which fills it
        outcomes = self._branches if self.feasibility is None else self._refined
        branch = self._branch
        while work:
            node = heappop(work)[1]
            queued.discard(node)
            visits += 1
            if visits > self.budget:
                raise BudgetExceeded()
            blk = cfg.blocks[node]
            states = dict(entry_states[node])
            insts = blk.instructions
            last = insts[-1] if insts else None
            interesting = self._interesting
            deps = self.oracle.deps
            observe, transfer, with_facts = self.observe, self.transfer, self.transfer_facts
            # the block's other instructions only kill facts, and only those that are ``_dep_indices`` (the
            # definitions some fact depends on): while none of them is, only the instructions of interest are
            # walked; ``deps`` grows only while one of those is processed, so the test is made again after each
            plan = plans.get(node)
            if plan is None:
                plan = plans[node] = ([i for i in insts if i.index in interesting],
                                      frozenset(i.index for i in insts if i.index not in interesting))
            only, others = plan
            if len(deps) != self._deps_seen:
                self._refresh_deps()
            seq = only if self._dep_indices.isdisjoint(others) else insts
            k = 0
            while k < len(seq):
                inst = seq[k]
                k += 1
                idx = inst.index
                if idx not in interesting:
                    if len(deps) != self._deps_seen:
                        self._refresh_deps()
                    if idx in self._dep_indices:
                        nxt: dict[Hashable, Facts] = {}
                        for prop, facts in states.items():
                            f = self._kill(facts, idx)
                            old = nxt.get(prop)
                            nxt[prop] = f if old is None else (old & f)
                        states = nxt
                    continue
                op = inst.op
                is_branch = inst is last and op in ("bra", "brx")
                guarded = inst.guard is not None and not is_branch
                ends_path = op in ("ret", "exit")
                nxt = {}
                for prop, facts in states.items():
                    if guarded:
                        got = outcomes.get((idx, facts))
                        if got is None:
                            got = branch(inst, facts)
                    else:
                        got = ((True, facts),)
                    for taken, f in got:
                        p = prop
                        if taken and not is_branch:
                            if observe is not None:
                                observe(p, inst, f)
                            p = transfer(p, inst, f) if with_facts else transfer(p, inst)
                            if type(p) is Branches:
                                for q, qf in p:
                                    qf = self._kill(qf, idx)
                                    old = nxt.get(q)
                                    nxt[q] = qf if old is None else (old & qf)
                                continue
                            names = self._regval_defs.get(idx)
                            if names:
                                f = self._regval(f, inst, names)
                            if ends_path:
                                arrive(EXIT, p, self._kill(f, idx), inst)
                                continue
                            if op == "trap":
                                continue
                        if f:  # ``_kill``'s own first tests, without a call for the instructions that kill nothing
                            if len(deps) != self._deps_seen:
                                self._refresh_deps()
                            if idx in self._dep_indices:
                                f = self._kill(f, idx)
                        if type(p) is Fork:
                            for q in p:
                                old = nxt.get(q)
                                nxt[q] = f if old is None else (old & f)
                        else:
                            old = nxt.get(p)
                            nxt[p] = f if old is None else (old & f)
                states = nxt
                if single and len(nxt) > 1:
                    raise StatesSplit()
                if seq is only and len(deps) != self._deps_seen:
                    self._refresh_deps()
                    if not self._dep_indices.isdisjoint(others):  # walk the rest of the block in full
                        seq, k = insts, idx - blk.start + 1
            # route to successors; a brx.idx whose index is a function of the thread index goes only to the
            # table entries that the threads of this class select
            cases = self._brx_cases(last) if last is not None and last.op == "brx" else None
            ends = last is not None and last.op in ("ret", "exit")
            for prop, facts in states.items():
                for succ, cond, ks in routes[node]:
                    if cases is not None:
                        if ks is not None and not (set(ks) & cases):
                            continue
                    if succ == EXIT and ends:
                        continue  # already delivered above (a guarded ret falls through here otherwise)
                    if succ == "abort":
                        continue
                    if cond is None:
                        arrive(succ, prop, facts, last)
                        continue
                    _guard, want_taken = cond
                    assert last is not None  # a guarded branch ends the block
                    got = outcomes.get((last.index, facts))
                    if got is None:
                        got = branch(last, facts)
                    for taken, f in got:
                        if taken == want_taken:
                            arrive(succ, prop, f, last)
        return list(exits.values())


def _routing(cfg: CFG) -> tuple[dict[Node, int], dict[Node, list[Route]]]:
    """``(rank, routes)`` of ``cfg`` for the simulations: each node's position in reverse post-order, and each
    node's out-edges ``[(successor, cond, cases)]`` in the graph's order (computed once per CFG, not per
    simulation)."""
    g = cfg.graph
    rank = {n: i for i, n in enumerate(cfg.reverse_postorder())}
    routes: dict[Node, list[Route]] = {n: [(succ, d.get("cond"), d.get("cases")) for succ, d in g[n].items()]
                                       for n in g.nodes}
    return rank, routes
