"""Happens-before between warp classes through barrier instances.

One model of synchronization for every rule that asks "is ``b`` (run by the warps of class ``kb``) ordered after
``a`` (run by class ``ka``)?".  A barrier *instance* is named by a ``BarrierKey``:

* a CTA barrier (``bar``/``barrier`` ``.sync``/``.arrive``/``.red``) by its id (PTX ISA §9.7.13.1; ``bar.sync 0``
  is ``__syncthreads``);
* an mbarrier by its shared-memory address (§9.7.13.15): ``mbarrier.arrive*`` and ``tcgen05.commit`` (which arrives
  when the thread's earlier asynchronous tcgen05 operations complete, §9.7.16.8.4) arrive, ``mbarrier.try_wait`` /
  ``test_wait`` wait;
* the cluster barrier (§9.7.13.4): ``barrier.cluster.arrive`` / ``.wait``.

``a`` happens before ``b`` when some instance ``X`` is *released* by ``ka`` after ``a`` on every feasible path of
``ka`` from ``a`` to its exit (it arrives on ``X``, or joins a ``bar.sync`` on ``X``), and ``kb`` *waits* on ``X`` on
every feasible path from the kernel's entry to ``b``: the phase ``kb`` waited for needs ``ka``'s arrival, which comes
after ``a``.  Paths are those of the warp class (``PropertySimulation``: branches on the warp index are decided, and
correlated branches are taken the same way), so a role's ``bar.arrive`` in its own branch and the readers'
``bar.sync`` in a sibling branch order the two roles, while a ``bar.sync 1, 160`` that the first class never joins,
or a wait under ``if (blockIdx.y & 1)``, orders nothing.

Phases are counted along each path, so a ``__syncthreads`` that both classes passed before ``a`` does not order
``a``.  Limits: counts stop at ``MANY`` (loops): a class that arrives on ``X`` in a loop is then taken to order ``a``
before every wait of ``kb`` on ``X``; an mbarrier whose address is not known exactly (an unknown offset into a
shared buffer holding many barriers, an address from ``mapa``) matches any such mbarrier and its phases are not
counted; a barrier id in a register that is not constant matches any barrier id.  Expected counts
(``mbarrier.init``): with a count of 1, another class's arrival not ordered after ``a`` may complete the phase
first and then orders nothing (``_completed_by_others``); other counts are not compared with the arrivals.  A path
that passed a wait for phase 0 (a constant parity 0, or a loop's phase bit whose first execution names 0) needs one
of the barrier's arrive sites on a path that agrees with it (``arrivals_needed``), and a choice of paths of several
classes that leaves every such site off is infeasible (``joint_paths_feasible``, ``joint_choice``: "may these
classes be at these instructions together?"); a pair of paths of ``ka`` and ``kb`` that does so never happens and
orders vacuously (``_wait_never_returns``: every lane's sites, ``ka``'s own path for the sites only its threads
through ``a`` run).  These readers share one primitive of arrivals (``arrive_sites``, ``phase_arrivals``: the sites, of
which kind, that may complete phase ``k``, and the ``(k + 1)`` × count arrivals it takes).  The events and barrier identities are the classifier's
(``analysis.sync``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, cast

from mypy_extensions import mypyc_attr

from tmemlint.analysis.cfg import Node
from tmemlint.analysis.control import can_reach, divergent_defs, natural_loops, on_cycle
from tmemlint.analysis.lifecycle import consistent_choice_facts
from tmemlint.analysis.mbarriers import expected_counts
from tmemlint.analysis.paths import identity_transfer
from tmemlint.analysis.sync import (ASYNC_TCGEN05, WARP_COLLECTIVE, AddressForm, BarrierKey, SyncEvent,
                                    address_form, barrier_key, sync_event, tmem_operand_indices)
from tmemlint.analysis.threads import (bounds_disagree, cross_warp_facts, is_lane_fact, lane_counts,
                                       other_warp_view, undecidable_pair, warps_executing)
from tmemlint.analysis.threads import Facts
from tmemlint.analysis.values import (TOP, Cmp, Const, PAnd, POr, SymAddr, Tid, ValueAnalysis, defined_regs,
                                      fold_op, int_type, is_register_copy)
from tmemlint.ir import Address, Imm, Instruction, NotReg, Reg, Sym

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.analysis.context import AnalysisContext
    from tmemlint.analysis.threads import WarpClass

#: Per observed instruction index and CTA-uniform fact set of the paths reaching it: a count (``_Counts``).
_PerFacts = dict[int, dict[Facts, int]]


def _is_release(inst: Instruction, site: SyncEvent) -> bool:
    """Whether ``inst`` hands something back without waiting: ``mbarrier.arrive`` / ``arrive_drop`` (not
    ``.expect_tx``, a producer announcing bytes) or ``bar.arrive`` / ``barrier.arrive`` (not the cluster barrier).
    A ``tcgen05.commit`` is not: it hands over its own asynchronous operations' results when they complete."""
    if not site.arrives or site.waits:
        return False
    if inst.op == "mbarrier":
        return "expect_tx" not in inst.parts
    return inst.op in ("bar", "barrier") and site.key.kind == "bar"


#: Events kept per path by ``SyncModel.since_latest_wait`` (the latest ones).
_MAX_ROUND = 16

#: Barrier phases counted exactly below this many; this many or more (a loop) is "many".
MANY = 4

#: The anchor index under which ``SyncModel.releases_after(from_entry=True)`` reports the keys arrived on from entry.
_ENTRY = -1

#: Exit states of a class above which ``releases_after`` does not unite the keys lane by lane.
_MAX_LANE_STATES = 64

#: The opcode families whose single-anchor ``releases_after`` is answered by one simulation of all of them.
_BATCHED_ANCHORS = frozenset({"tcgen05.ld", "tcgen05.st"})

#: Anchor families of ``releases_after`` answered from one multi-anchor run per class when that run has one property
#: value at every program point (``SyncModel._single_valued_releases``, exact): TM302's per-load question asks for
#: the ``tcgen05.wait::ld`` (st) after each load (``completed_before``).
_SINGLE_VALUED_ANCHORS = frozenset({"tcgen05.wait::ld", "tcgen05.wait::st"})

#: Branch-fact sets kept per instruction before they are taken as unknown.
_MAX_FACT_SETS = 32

#: The fact set of the entry that stands for every path past ``_MAX_FACT_SETS``.
_ANY_PATH: Facts = frozenset()

#: The barrier keys some lane arrives on after an anchor, with the CTA-uniform facts of the paths (``releases_after``).
_KeysOnPath = tuple[frozenset[BarrierKey], Facts]

#: An exit state of ``releases_after``: (its CTA-uniform facts, its thread-predicate facts, the keys arrived on).
_LaneState = tuple[Facts, Facts, frozenset[BarrierKey]]

#: ``released_before``'s path state: (TMEM accesses since the latest wait, {(release index, the accesses it hands
#: back)}).
_Handed = tuple[frozenset[int], frozenset[tuple[int, frozenset[int]]]]

#: Opcodes whose instructions are observed by the simulations (the instructions rules ask about).
_OBSERVED = {"ld", "ldu", "st", "tcgen05", "bar", "barrier", "mbarrier", "call", "ret", "exit", "atom", "red", "cp"}


@dataclass(slots=True)
class _Counts:
    """For one warp class and one barrier key, per observed instruction index and per CTA-uniform fact set of the
    paths reaching it: the fewest waits on the key, and the most arrivals (both capped at ``MANY``).  Past
    ``_MAX_FACT_SETS`` fact sets an instruction keeps one entry under the empty fact set (any path)."""

    waits: _PerFacts
    arrivals: _PerFacts
    #: per observed instruction and fact set, the most waits of any thread of the class: what a warp-collective
    #: (``.sync.aligned``) instruction is ordered after, since every lane of the warp reaches it together
    lane_waits: _PerFacts


@dataclass(frozen=True, slots=True)
class Ordering:
    """The answer of ``SyncModel.ordering``: whether ``a`` (run by ``ka``) is ordered before ``b`` (run by ``kb``).

    ``verdict``: True (ordered on every feasible pair of paths), False (not ordered on some pair), None (the model
    cannot decide: then a rule says nothing).  ``released``: the barrier instances ``ka`` arrives on after ``a`` (for
    a ``completion`` question only ``tcgen05.commit`` arrivals, which wait for the thread's earlier asynchronous
    tcgen05 operations, PTX ISA §9.7.16.8.4); ``waited``: the instances among them that ``kb`` waits on before
    ``b`` on some path.  ``missing`` says which edge of the chain release → wait is absent when ``verdict`` is False:
    ``"release"`` (``ka`` arrives on no barrier after ``a``; for ``completion``, commits to none), ``"wait"``
    (``kb`` waits on none of ``released`` before ``b``) or ``"phase"`` (it waits on one, but for a phase that does
    not include ``ka``'s arrival: the wait comes before it, e.g. the load is issued before the wait) or
    ``"issuer"`` (for ``completion``: a thread that issued ``a`` commits to none of ``released``, which other
    threads' commits arrive on, as when lane 1 commits after the elected lane's MMA) or
    ``"barrier"`` (``SyncModel.own_completion``: the thread waits, but on other barriers than its commit's) or
    ``"parity"`` (``SyncModel.completion_ordering``: it waits in a loop, but names at some iteration the parity of
    the phase before the one it must wait for, so the wait returns at once; ``parity`` says which); None when
    ordered or undecided."""

    verdict: bool | None
    released: tuple[BarrierKey, ...] = ()
    waited: tuple[BarrierKey, ...] = ()
    missing: str | None = None
    parity: "PhaseParity | None" = None

    def describe(self) -> str:
        """The missing edge in words, for a rule's message ('' when none is missing)."""
        if self.missing == "release":
            return "no tcgen05.commit (or arrive) after it"
        if self.missing == "wait":
            return "no wait on the barrier it arrives on"
        if self.missing == "phase":
            return "the wait on its barrier comes before the arrival (an earlier phase)"
        if self.missing == "issuer":
            return "the tcgen05.commit is issued by another thread than the one that issued the operation, and " \
                   "a commit tracks only its own thread's operations"
        if self.missing == "barrier":
            return "the waits before the load are on other barriers than the one its tcgen05.commit arrives on"
        if self.missing == "parity" and self.parity is not None:
            return self.parity.describe()
        return ""


@dataclass(frozen=True, slots=True)
class Release:
    """A hand-over by the executing thread (``SyncModel.released_before``): ``inst`` arrives on ``key`` (an
    ``mbarrier.arrive`` without ``.expect_tx``, or ``bar.arrive``/``barrier.arrive``) without waiting.
    ``handed``: the thread's tcgen05 instructions on TMEM (ld, st, cp, mma, shift) between its latest wait and
    ``inst``, on some path, in program order: the cells it was working on, which the release hands back (the
    epilogue's loads of the stage it then frees)."""

    inst: Instruction
    key: BarrierKey
    handed: tuple[Instruction, ...] = ()


@dataclass(frozen=True, slots=True)
class Fencing:
    """The tcgen05 fences around one synchronization event (``SyncModel.fencing``): PTX ISA §9.7.16.6.3-4
    (reference §3).  ``tcgen05.fence::before_thread_sync`` orders the thread's earlier asynchronous tcgen05
    operations (ld, st, mma, cp, shift: ``ASYNC_TCGEN05``) before the synchronization that releases them, and
    ``tcgen05.fence::after_thread_sync`` orders the operations (and a ``tcgen05.dealloc``) after a wait after it.

    ``inst``: the event, an instruction with a ``SyncEvent``.  ``unfenced_before``: when it releases
    (``SyncEvent.arrives``, a thread's arrival in program order): the thread's asynchronous tcgen05 operations that
    reach it on some path of some warp class with no ``fence::before_thread_sync`` and no ``tcgen05.commit`` between
    (a commit's arrival waits for them, §9.7.16.8.4: a fence of its own), in index order.  ``unfenced_after``: when
    it waits (``SyncEvent.waits``): the first asynchronous tcgen05 operation or dealloc met after it on some path
    with no ``fence::after_thread_sync`` between, or None."""

    inst: Instruction
    unfenced_before: tuple[Instruction, ...] = ()
    unfenced_after: Instruction | None = None


@dataclass(frozen=True, slots=True)
class Hop:
    """One link of a happens-before chain (``SyncModel.chain``): ``releaser`` arrives on one of the barrier
    instances ``keys`` after the chain's previous event (at ``releases``, its arrive, ``bar``/``barrier`` or
    ``tcgen05.commit`` sites on those instances that a CFG path from the event reaches) and ``waiter`` waits on it
    (at ``waits``, its sites on those instances from which a path reaches the hop's end) before ``until``: the next
    hop's first wait, or the instruction asked about (PTX ISA §9.7.13.1, §9.7.13.15, §9.7.16.8.4)."""

    releaser: "WarpClass"
    waiter: "WarpClass"
    keys: tuple[BarrierKey, ...]
    releases: tuple[Instruction, ...]
    waits: tuple[Instruction, ...]
    until: Instruction


@dataclass(frozen=True, slots=True)
class Chain:
    """The answer of ``SyncModel.chain``: ``verdict`` as ``all_happen_before``'s (True ordered, False not ordered on
    some pair of paths, None undecided); when ordered, ``hops``, the chain found (one hop through a barrier instance
    both classes use, or two and more through third classes that wait and then arrive); when undecided, the chain
    the engine could not confirm (hops none of which is known not to order, or the instances waited on; empty when
    there is none); when not ordered, ``missing``, the
    missing edge of the direct question (``Ordering.missing``: ``"release"``, ``"wait"`` or ``"phase"``), with
    ``released`` (the instances the first class releases after the event) and ``waited`` (those of them the second
    class waits on before the instruction asked about)."""

    verdict: bool | None
    hops: tuple[Hop, ...] = ()
    missing: str | None = None
    released: tuple[BarrierKey, ...] = ()
    waited: tuple[BarrierKey, ...] = ()


@dataclass(frozen=True, slots=True)
class Hang:
    """The answer of ``SyncModel.never_completes``: the wait ``wait`` (run by ``klass``) for phase 0 of the exactly
    known mbarrier ``key`` never returns on the path of ``klass`` whose CTA-uniform facts, together with those of a
    path of ``arriver`` (the one warp class that arrives on ``key``), are ``facts``: on that path ``arriver`` makes
    no arrival on ``key`` from the kernel's entry to its exit, so the phase's pending count never reaches zero (PTX
    ISA §9.7.13.15.1-2; the expected count of ``mbarrier.init`` is at least 1).  ``skipped``: the arrive sites on
    ``key`` that this path of ``arriver`` does not execute.  ``arriver`` None: fewer arrivals than the expected
    count reach the phase on any path (``expected``, ``arrivals``).  ``facts`` are the abstract domains' consistent choice;
    a caller that wants a proof asks ``feasibility.Feasibility.satisfiable`` of them at ``wait``."""

    wait: Instruction
    klass: "WarpClass"
    key: BarrierKey
    arriver: "WarpClass | None"
    facts: Facts
    skipped: tuple[Instruction, ...]
    #: when no path makes enough arrivals (``arriver`` None): the expected count of the barrier's init, and the
    #: most arrivals all threads of the CTA make on it from entry to exit (``SyncModel._arrival_bound``)
    expected: int | None = None
    arrivals: int | None = None
    #: the waits of ``klass`` on ``key`` before ``wait`` on the path (each for the next phase): ``wait`` needs
    #: ``waited + 1`` phases completed
    waited: int = 0


#: ``SyncModel.fencing``'s path state: (the asynchronous tcgen05 operations since the latest fence::before_thread_sync
#: or commit, at most ``_MAX_PENDING``; the wait, if any, since which no asynchronous operation or fence came).
_Fences = tuple[frozenset[int], frozenset[int]]

#: Unfenced operations kept per path by ``SyncModel.fencing`` (the first ones; more add nothing to a finding).
_MAX_PENDING = 4


@mypyc_attr(allow_interpreted_subclasses=True)  # publication.ReleaseSyncModel overrides site (mypyc)
class SyncModel:
    """Happens-before of one function (see the module docstring), computed on demand per warp class and cached.

    ``ctx`` is a ``FunctionContext`` (its ``values`` and ``simulate``)."""

    def __init__(self, ctx: "AnalysisContext") -> None:
        self.ctx = ctx
        self._events: dict[int, SyncEvent | None] = {}
        self._forms: dict[int, AddressForm | None] = {}
        self._parity0: dict[int, tuple[WarpClass, tuple[BarrierKey, ...]]] = {}
        self._arriver: dict[BarrierKey, WarpClass | None] = {}
        self._arrive_sites: dict[BarrierKey, tuple[ArriveSite, ...]] = {}
        # instruction index -> the barrier its first execution in its loop waits on for parity 0 (``_first_wait``)
        self._first_zero: dict[int, BarrierKey | None] = {}
        # loop blocks -> {wait instruction index: its first execution in the loop's concrete run}
        self._first_waits: dict[frozenset[Node], dict[int, _WaitRun]] = {}
        # class id -> (class, ``_zero_phase_waits``)
        self._zero_waits: dict[int, tuple[WarpClass, dict[int, dict[Facts, frozenset[BarrierKey]]]]] = {}
        self._by_others: dict[tuple[tuple[int, ...], int, BarrierKey], bool] = {}
        self._sites: dict[int, SyncEvent | None] = {}
        # class id -> (class, {instruction index: fact sets})
        self._facts_at: dict[int, tuple[WarpClass, dict[int, set[Facts] | None]]] = {}
        # ids of the classes whose identity replay (``_reaching_facts``) exceeded its budget
        self._unfinished: set[int] = set()
        self._counts: dict[tuple[int, BarrierKey], tuple[WarpClass, _Counts]] = {}
        # (class id, the key's sites) -> (class, _Counts): ``_count``
        self._counts_alike: dict[tuple[int, frozenset[tuple[int, bool]]], tuple[WarpClass, _Counts]] = {}
        self._releases: dict[tuple[int, tuple[int, ...], bool, bool, bool],
                             tuple[WarpClass, dict[int, list[_KeysOnPath]]]] = {}
        self._transitive: dict[tuple[Any, ...], bool | None] = {}
        self._agreement: dict[tuple[Facts, ...], bool] = {}
        self._uniform_facts: dict[Facts, Facts] = {}
        self._undecidable: dict[tuple[Facts, Facts], bool] = {}
        self._lane_free: dict[Facts, Facts] = {}
        self._key_order: dict[frozenset[BarrierKey], tuple[BarrierKey, ...]] = {}
        self._ordered: dict[tuple[Any, ...], bool | None] = {}
        # class id -> (class, {instruction index: releases})
        self._released: dict[int, tuple[WarpClass, dict[int, tuple[Release, ...]]]] = {}
        self._overfull: dict[object, bool] = {}  # barrier id -> more threads take part than its thread count
        self._waits_since: dict[tuple[int, BarrierKey],
                                tuple[WarpClass, dict[int, frozenset[frozenset[BarrierKey]]]]] = {}
        # (class id, kind) -> (class, {instruction index: {op index: read on some path}}): ``pending_at``
        self._pending: dict[tuple[int, str], tuple[WarpClass, dict[int, dict[int, bool]]]] = {}

    def _uniform(self, facts: Facts) -> Facts:
        """The CTA-uniform facts of a path in cross-warp form (``threads.cross_warp_facts``), memoised."""
        hit = self._uniform_facts.get(facts)
        if hit is None:
            hit = self._uniform_facts[facts] = cross_warp_facts(
                self.ctx.values, frozenset(f for f in facts if not is_lane_fact(f[0])))
        return hit

    def _agree(self, *fact_sets: Facts) -> bool:
        """``consistent_choice_facts`` memoised: the same few fact sets are compared again for every pair of
        instructions asked about."""
        hit = self._agreement.get(fact_sets)
        if hit is None:
            hit = self._agreement[fact_sets] = consistent_choice_facts(list(fact_sets))
        return hit

    def _undecidable_pair(self, f1: Facts, f2: Facts) -> bool:
        """``threads.undecidable_pair`` memoised: the same pairs of path facts are asked about for every barrier
        key and every pair of instructions."""
        hit = self._undecidable.get((f1, f2))
        if hit is None:
            hit = self._undecidable[(f1, f2)] = undecidable_pair(f1, f2)
        return hit

    def _without_lane_facts(self, facts: Facts) -> Facts:
        """``facts`` less its lane facts (``threads.is_lane_fact``), memoised per fact set (``_direct`` strips the
        same few reaching fact sets for every pair of instructions asked about)."""
        hit = self._lane_free.get(facts)
        if hit is None:
            hit = self._lane_free[facts] = frozenset(f for f in facts if not is_lane_fact(f[0]))
        return hit

    def _in_order(self, keys: frozenset[BarrierKey]) -> tuple[BarrierKey, ...]:
        """The barrier keys ``keys`` in a fixed order (by ``repr``), memoised per key set."""
        hit = self._key_order.get(keys)
        if hit is None:
            hit = self._key_order[keys] = tuple(sorted(keys, key=repr))
        return hit

    def event(self, inst: Instruction) -> SyncEvent | None:
        """``sync.sync_event`` of ``inst``, memoised: every synchronization effect, those that neither release nor
        acquire included (an ``mbarrier.init``, a fence, a wait whose result is never tested)."""
        idx = inst.index
        if idx not in self._events:
            self._events[idx] = sync_event(self.ctx.values, inst)
        return self._events[idx]

    def site(self, inst: Instruction) -> SyncEvent | None:
        """The event of ``inst`` when it releases or acquires a barrier instance (``SyncEvent.arrives`` /
        ``waits``), memoised; None for any other instruction, and for the sites of a CTA barrier used by more
        threads than its count (``overfull``), which synchronize nothing."""
        idx = inst.index
        if idx not in self._sites:
            s = self.event(inst)
            if s is not None and not (s.arrives or s.waits):
                s = None
            if s is not None and s.key.kind == "bar" and s.key.ident is not None and self.overfull(s.key.ident):
                s = None
            self._sites[idx] = s
        return self._sites[idx]

    def overfull(self, ident: object) -> bool:
        """Whether CTA barrier ``ident`` is used with a thread count below the number of threads that take part:
        PTX ISA §9.7.13.1 (``bar{.cta}.sync a, b``): the instance completes once ``b`` threads arrived (each warp
        counts 32) and is then reset, so when more warps reach it, which of them complete it together depends on
        their arrival order, and it orders no chosen warp after another (``bar.sync 1, 64`` among 4 warps pairs
        warp 0 with any one other).  Judged only when every ``bar``/``barrier`` ``.sync``/``.arrive`` on ``ident``
        has the same constant count, none of them in a loop (a loop may hand the id from one group of warps to the
        next), and the warps that certainly run and execute one of them (``threads.warps_executing``: none claimed
        beyond one for a path chosen by ``%warpid``) number more than the count allows; the barrier's sites then
        synchronize nothing."""
        hit = self._overfull.get(ident)
        if hit is not None:
            return hit
        self._overfull[ident] = False  # while computing (the class simulations below do not read sites)
        insts: list[Instruction] = []
        counts: set[int] = set()
        for i in self.ctx.function.instructions:
            if i.op not in ("bar", "barrier") or len(i.parts) < 2 or i.parts[1] in ("cluster", "warp", "red"):
                continue
            s = self.event(i)
            if s is None or s.key.ident != ident and s.key.ident is not None:
                continue
            if s.key.ident is None or s.count is None:
                return False  # an id not known, a count of every thread of the CTA or not constant: not over-full
            counts.add(s.count)
            insts.append(i)
        if len(counts) != 1 or any(on_cycle(self.ctx, i) for i in insts):
            return False
        threads = 0
        for k in self.ctx.threads.classes:
            threads += 32 * max((warps_executing(k, self.fact_sets(k, i)) for i in insts), default=0)
        got = self._overfull[ident] = threads > next(iter(counts))
        return got

    def passes_at_once(self, inst: Instruction, done: int) -> bool:
        """Whether the wait ``inst`` (``mbarrier.try_wait.parity`` / ``test_wait.parity`` on an exactly known
        mbarrier) by a thread that has completed ``done`` waits on that mbarrier (fewer than ``MANY``: counted
        exactly) names the parity of the phase before phase ``done``: PTX ISA §9.7.13.15.16 (the parity operand
        names the current phase or the immediately preceding one; tcgen05-reference.md, mbarrier "wait"), so the wait
        succeeds at once when phase ``done`` has not completed yet (a wait on parity 1 of a freshly initialised
        mbarrier, whose current phase 0 is preceded by a complete phase of parity 1), and orders nothing after
        that phase's arrivals on that interleaving.  Only a constant parity is judged (one from a loop's phase
        register is not)."""
        if done >= MANY or inst.op != "mbarrier":
            return False
        s = self.site(inst)
        if s is None or not s.waits or not s.key.exact or s.parity is None:
            return False
        return (s.parity & 1) != (done & 1)

    @staticmethod
    def _relevant(inst: Instruction) -> bool:
        """The instructions the simulations observe; one function object (a bound method is a new object at every
        access, and ``PropertySimulation`` computes its instructions of interest once per such object)."""
        return inst.op in _OBSERVED

    def _count(self, klass: "WarpClass", key: BarrierKey) -> _Counts:
        """Simulate ``klass`` counting its arrivals on and waits for instances that may be ``key``."""
        hit = self._counts.get((id(klass), key))
        if hit is not None and hit[0] is klass:
            return hit[1]
        # ``transfer`` below depends on ``key`` only through the sites that may alias it (those that arrive or
        # wait) and, for a wait, whether it is ``key`` itself: two keys alike at every instruction the class may
        # execute count alike (one simulation)
        sig = (id(klass), frozenset((i.index, s.waits and s.key == key) for i, s in self._sited
                                    if (s.arrives or s.waits) and s.key.may_alias(key)
                                    and (i.op not in _OBSERVED or self.executes(klass, i))))
        hit = self._counts_alike.get(sig)
        if hit is not None and hit[0] is klass:
            self._counts[(id(klass), key)] = hit
            return hit[1]
        waits: _PerFacts = {}
        arrivals: _PerFacts = {}
        most: _PerFacts = {}

        def transfer(prop: tuple[int, int], inst: Instruction) -> tuple[int, int]:
            s = self.site(inst)
            if s is None or not s.key.may_alias(key):
                return prop
            arr, wai = prop
            if s.waits and s.key == key and self.passes_at_once(inst, wai):
                return (arr, wai)  # a wait on the phase before the current one returns at once: it acquires nothing
            return (min(arr + 1, MANY) if s.arrives else arr, min(wai + 1, MANY) if s.waits else wai)

        uniform_of = self._uniform_facts

        def observe(_k: "WarpClass", prop: Any, inst: Instruction, facts: Facts) -> None:
            # ``prop``: (arrivals, waits) of ``transfer``
            # called for every observed instruction of every state: the memo of ``_uniform`` is read inline, and
            # a first entry is the property's own counts (waits and arrivals are capped at ``MANY``, never below 0)
            i = inst.index
            uniform = uniform_of.get(facts)
            if uniform is None:
                uniform = self._uniform(facts)
            w = waits.get(i)
            if w is None:
                w = waits[i] = {}
                a = arrivals[i] = {}
                hi = most[i] = {}
            else:
                a = arrivals[i]
                hi = most[i]
            old = w.get(uniform)
            if old is None:
                if len(w) >= _MAX_FACT_SETS:
                    uniform = _ANY_PATH
                    old = w.get(uniform)
            if old is None:
                w[uniform] = prop[1]
                a[uniform] = prop[0]
                hi[uniform] = prop[1]
            else:
                if prop[1] < old:
                    w[uniform] = prop[1]
                if prop[0] > a[uniform]:
                    a[uniform] = prop[0]
                if prop[1] > hi[uniform]:
                    hi[uniform] = prop[1]

        self.ctx.simulate(transfer, (0, 0), observe, classes=[klass], relevant=self._relevant)
        c = _Counts(waits, arrivals, lane_waits=most)
        self._counts[(id(klass), key)] = self._counts_alike[sig] = (klass, c)
        return c

    @cached_property
    def _sited(self) -> tuple[tuple[Instruction, SyncEvent], ...]:
        """The instructions with a ``site``, with it (``_count``'s signature of a key)."""
        return tuple((i, s) for i in self.ctx.function.instructions if (s := self.site(i)) is not None)

    def _reaching_facts(self, klass: "WarpClass") -> dict[int, set[Facts] | None]:
        """Observed instruction index → the branch-fact sets of the states of ``klass`` that reach it (None: more
        than ``_MAX_FACT_SETS`` of them, taken as unknown)."""
        hit = self._facts_at.get(id(klass))
        if hit is None or hit[0] is not klass:
            seen: dict[int, set[Facts] | None] = {}

            def observe(_k: "WarpClass", _p: Hashable, inst: Instruction, facts: Facts) -> None:
                got = seen.setdefault(inst.index, set())
                if got is not None:
                    got.add(cross_warp_facts(self.ctx.values, facts))
                    if len(got) > _MAX_FACT_SETS:
                        seen[inst.index] = None

            if not self.ctx.simulate(identity_transfer, None, observe, classes=[klass], relevant=self._relevant):
                self._unfinished.add(id(klass))  # past its budget: ``_runs_none_of`` knows nothing of it
            hit = self._facts_at[id(klass)] = (klass, seen)
        return hit[1]

    def _runs_none_of(self, klass: "WarpClass", ops: Iterable[int]) -> bool:
        """Whether ``klass`` executes none of the instructions ``ops`` (indices, of observed opcodes) on any feasible
        path, by its identity replay (``_reaching_facts``); False when that replay exceeded its budget.

        A simulation whose property changes only at ``ops`` (``_pending_table``, ``uncompleted_by_issuer``: both
        start empty, and their transfer returns an empty property unchanged everywhere but at an operation) then
        keeps its initial property on every path: its states are the identity run's, state for state (the same
        blocks in the same order, the same facts, the same visits, so the same budget), and its observer, which
        records nothing of an empty property, records nothing.  Its result is then known without running it."""
        reach = self._reaching_facts(klass)
        if id(klass) in self._unfinished:
            return False
        insts = self.ctx.function.instructions
        return all(insts[o].op in _OBSERVED and o not in reach for o in ops)

    def fact_sets(self, klass: "WarpClass", inst: Instruction) -> set[Facts] | None:
        """The branch-fact sets (cross-warp form) of the paths of ``klass`` that reach ``inst`` (an instruction of an
        observed opcode): empty when none does, None when there are more than ``_MAX_FACT_SETS`` of them."""
        return self._reaching_facts(klass).get(inst.index, set())

    def executes(self, klass: "WarpClass", inst: Instruction) -> bool:
        """Whether ``klass`` may execute ``inst`` (an instruction of an observed opcode) on some feasible path."""
        return inst.index in self._reaching_facts(klass)

    def releases_after(self, klass: "WarpClass", anchors: tuple[Instruction, ...],
                       grouped: bool = False, completion: bool = False,
                       from_entry: bool = False) -> dict[int, list[_KeysOnPath]]:
        """For each anchor instruction (by index) that ``klass`` may execute: ``[(keys, facts)]``, one entry per
        CTA-uniform set of branch facts of the class's paths through the anchor to an exit: the keys some lane of
        the warp arrives on after the anchor's latest execution.  ``grouped``: the anchors are one group, reported
        under the first anchor's index (the keys after the latest execution of any of them).  ``completion``:
        only ``tcgen05.commit`` arrivals count, the ones that wait for the thread's earlier asynchronous tcgen05
        operations to complete (PTX ISA §9.7.16.8.4), and only the issuing thread's own: the entries are then per
        thread that executed the anchor, not united over the warp's lanes (``_issuers_keys``).  ``from_entry`` (with
        no anchors): the keys arrived on from the
        kernel's entry, under the index ``_ENTRY``."""
        if len(anchors) == 1 and not grouped and not from_entry and anchors[0].family in _BATCHED_ANCHORS:
            batched = self._batched_releases(klass, anchors[0], completion)
            if batched is not None:
                return batched
        cache_key = (id(klass), tuple(a.index for a in anchors), grouped, completion, from_entry)
        hit = self._releases.get(cache_key)
        if hit is not None and hit[0] is klass:
            return hit[1]
        if len(anchors) == 1 and not grouped and not from_entry and anchors[0].family in _SINGLE_VALUED_ANCHORS:
            shared = self._single_valued_releases(klass, anchors[0], completion)
            if shared is not None:
                self._releases[cache_key] = (klass, shared)
                return shared
        out = self._releases_run(klass, anchors, grouped, completion, from_entry, False)
        assert out is not None  # ``single_valued`` False: a run always finishes (a budget exceeded gives no states)
        self._releases[cache_key] = (klass, out)
        return out

    def _releases_run(self, klass: "WarpClass", anchors: tuple[Instruction, ...], grouped: bool, completion: bool,
                      from_entry: bool, single_valued: bool) -> dict[int, list[_KeysOnPath]] | None:
        """``releases_after``'s simulation and its entries, not cached.  ``single_valued``: run with
        ``PropertySimulation(single_valued=True)`` (``FunctionContext.simulate_single_valued``); None when the
        run split a state or exceeded its budget."""
        group = anchors[0].index if grouped and anchors else None
        idx = {a.index: (group if grouped else a.index) for a in anchors}
        # the instructions that arrive (for ``completion``, the commits), with the key each arrives on
        arriving = {i.index: (s.key,) for i, s in self._sited
                    if s.arrives and (not completion or i.family == "tcgen05.commit")}

        def transfer(prop: frozenset[tuple[int | None, frozenset[BarrierKey]]],
                     inst: Instruction) -> frozenset[tuple[int | None, frozenset[BarrierKey]]]:
            key = arriving.get(inst.index)
            if key is not None and prop:
                prop = frozenset((a, ks.union(key)) for a, ks in prop)
            if inst.index in idx:
                g = idx[inst.index]
                prop = frozenset(p for p in prop if p[0] != g) | {(g, frozenset())}
            return prop

        # one entry per CTA-uniform path: exit states that differ only in thread-predicate facts are lanes of one
        # warp (an mbarrier arrive by lane 0 alone is the warp's arrival), so their keys are united
        merged: dict[int, dict[Facts, frozenset[BarrierKey]]] = {}
        states: dict[int, list[_LaneState]] = {}  # anchor -> its exit states
        start: frozenset[tuple[int | None, frozenset[BarrierKey]]] = (
            frozenset({(_ENTRY, frozenset())}) if from_entry else frozenset())
        if single_valued:
            one = self.ctx.simulate_single_valued(transfer, start, klass, relevant=self._relevant)
            if one is None:
                return None
            runs = [(klass, one)]
        else:
            runs = self.ctx.simulate(transfer, start, classes=[klass], relevant=self._relevant)
        for _k, exits in runs:
            for ex in exits:
                uniform = self._uniform(ex.facts)
                lane = frozenset(f for f in ex.facts if is_lane_fact(f[0]))
                path = cast("frozenset[tuple[int, frozenset[BarrierKey]]]", ex.prop)
                for a, ks in path:
                    per = merged.setdefault(a, {})
                    per[uniform] = per.get(uniform, frozenset()) | ks
                    states.setdefault(a, []).append((uniform, lane, ks))
        for a, per in merged.items():
            if completion and len(states[a]) <= _MAX_LANE_STATES:
                continue  # ``_issuers_keys`` below: a commit counts only for the thread that issued
            if len(states[a]) <= _MAX_LANE_STATES:
                for uniform in per:
                    per[uniform] = per[uniform] | self._every_lane_keys(uniform, states[a])
        out = {a: (self._issuers_keys(klass, states[a]) if completion and len(states[a]) <= _MAX_LANE_STATES
                   else [(ks, facts) for facts, ks in per.items()]) for a, per in merged.items()}
        return out

    def _single_valued_releases(self, klass: "WarpClass", anchor: Instruction,
                                completion: bool) -> dict[int, list[_KeysOnPath]] | None:
        """``releases_after(klass, (anchor,), completion=completion)`` for an ``anchor`` of a family in
        ``_SINGLE_VALUED_ANCHORS``, read from one multi-anchor run per (class, family, completion) whose anchors
        are every instruction of that family, run with ``single_valued``: kept only when at every program point
        (block entry, after each instruction, each exiting instruction) the run had one property value; None
        otherwise (the caller runs the one-anchor simulation, as before), and when ``anchor`` is the only one of
        its family.

        Exact: the one-anchor run's property is the projection of the batch's onto ``anchor`` (``{(anchor, keys)}``
        or empty; ``releases_after``'s transfer adds an arrival's key to every anchor's set and resets only the
        executing anchor's, so projecting commutes with the transfer).  With one property value per point the
        batch merges nothing the one-anchor run keeps apart and keeps apart nothing it merges (a fork's two
        outcomes, or two arrivals, with equal projections are equal states in both, and unequal ones stopped the
        batch), so both runs visit the same blocks in the same order with the same facts, and the states reaching
        each exit are the one-anchor run's under the projection (the same budget of visits, too: a batch past its
        budget falls back).  The entries are then computed from the same exit states in the same order.  The batch's
        anchors are those ``klass`` executes: another one keeps the one-anchor run's property empty on every path
        (``_runs_none_of``), so its answer is ``{}`` without a run."""
        if self._runs_none_of(klass, (anchor.index,)):
            return {}  # the property stays empty on every path (``_runs_none_of``): no entry, as the run would give
        fam = anchor.family
        cache = self.ctx.control_caches.releases_single
        hit = cache.get((id(klass), fam, completion))
        if hit is None or hit[0] is not klass:
            # the anchors the class executes (the others answer ``{}`` above); a batch with an anchor on a CFG cycle
            # is not tried: the state before its first execution and the one after an iteration meet at the loop's
            # head, so the run would stop (a heuristic of cost: whether the batch is kept is decided by the run)
            group = tuple(i for i in self.ctx.function.instructions
                          if i.family == fam and not self._runs_none_of(klass, (i.index,)))
            tried = len(group) > 1 and not any(can_reach(self.ctx, i, i) for i in group)
            got = self._releases_run(klass, group, False, completion, False, True) if tried else None
            hit = cache[(id(klass), fam, completion)] = (klass, got)
        table = hit[1]
        if table is None:
            return None
        entry = table.get(anchor.index)
        return {anchor.index: entry} if entry is not None else {}

    def _issuers_keys(self, klass: "WarpClass", states: list[_LaneState]) -> list[_KeysOnPath]:
        """``releases_after(completion=True)``'s entries: one per exit state of a thread that executed the anchor,
        the keys that thread itself committed to after it.  ``tcgen05.commit`` tracks only the prior asynchronous
        tcgen05 operations of the executing thread (PTX ISA 9.0 §9.7.16.8.4, single-thread semantics), so the
        lanes are not united: a commit by lane 1 says nothing of the MMA the elected lane issued, and every thread
        that issued must have committed on its own path.  A state whose thread predicates no thread of ``klass``
        satisfies (``lane == 1`` and ``lane != 1`` joined) is left out; an election (``elect.sync``) names no lane
        (§9.7.13.12), so its facts are not evaluated: the elected lane may be any lane the other facts allow.
        Units: lanes (``%laneid``)."""
        out: dict[_KeysOnPath, None] = {}
        for uniform, lane, ks in states:
            if self._some_thread(klass, lane):
                out[(ks, uniform)] = None
        return list(out)

    def _some_thread(self, klass: "WarpClass", lane: Facts) -> bool:
        """Whether some thread of ``klass`` satisfies the thread-predicate facts ``lane`` other than elections
        (``lane_counts``, an election's facts left out: its leader is no lane known, PTX ISA §9.7.13.12)."""
        known = frozenset(f for f in lane if not _mentions_election(f[0]))
        return sum(lane_counts(klass, known, frozenset()) or (1,)) > 0

    def _batched_releases(self, klass: "WarpClass", anchor: Instruction,
                          completion: bool) -> dict[int, list[_KeysOnPath]] | None:
        """``releases_after(klass, (anchor,), completion=completion)`` for a tcgen05.ld or st ``anchor``: one
        simulation per class, family and ``completion`` whose anchors are every instruction of that family in the
        function (those ``klass`` never executes never enter its states), cached in the context's
        ``ControlCaches.releases_batch``.  The per-load questions (``completed_before``, asked for each load before
        each dealloc: CUTLASS tutorial_02's 256 loads) then cost one simulation instead of one per load.  Each
        anchor's entries are its own: re-executing an anchor restarts only its keys (``releases_after``'s
        transfer), so the other anchors change which states the simulation keeps apart, not what is arrived on
        after this one.  None when ``anchor`` is the only one of its family (the plain simulation is the batch)."""
        fam = anchor.family
        cache = self.ctx.control_caches.releases_batch
        hit = cache.get((id(klass), fam, completion))
        if hit is None or hit[0] is not klass:
            group = tuple(i for i in self.ctx.function.instructions if i.family == fam)
            if len(group) < 2:
                return None
            hit = cache[(id(klass), fam, completion)] = (klass, self.releases_after(klass, group,
                                                                                    completion=completion))
        got = hit[1].get(anchor.index)
        return {anchor.index: got} if got is not None else {}

    def _every_lane_keys(self, uniform: Facts, states: list[_LaneState]) -> frozenset[BarrierKey]:
        """The keys the warp arrives on in every CTA-uniform situation that agrees with ``uniform``, from the lanes:
        each lane ends in one of the exit ``states`` whose uniform facts agree with ``uniform`` and whose
        thread-predicate facts do not contradict its own, so it arrives on the keys all of those have in common;
        the warp on the union of its lanes' keys.  The lanes are represented by the thread-predicate facts of the
        states (``lane == 0``, ``lane != 0``).  This finds lane 0's arrival for the path where the other lanes'
        exit states were joined (the simulation intersects the facts of states with equal properties: the other
        lanes' zero-trip and looping paths of the MMA warp's loop, whose uniform facts are then those of neither)."""
        out: frozenset[BarrierKey] = frozenset()
        for sig in {lane for _, lane, _ in states}:
            want = dict(sig)
            common: frozenset[BarrierKey] | None = None
            for u, lane, ks in states:
                if any(want.get(k, v) != v for k, v in lane) or not self._agree(u, uniform):
                    continue
                common = ks if common is None else common & ks
                if not common:
                    break
            if common:
                out = out | common
        return out

    def must_happen_before(self, a: Instruction, ka: "WarpClass", b: Instruction, kb: "WarpClass") -> bool | None:
        """Whether every execution of ``b`` by ``kb`` is ordered after ``a``'s execution by ``ka``; None when it
        cannot be decided (no path of ``ka`` through ``a`` reaches an exit the analysis follows: an unresolved
        ``brx.idx``, a loop with no exit; or the only unordered pairs of paths are chosen, in both classes, by
        values each computed itself, such as one role's tile loop running zero times while another's does not).

        For every path of ``kb`` reaching ``b`` and every path of ``ka`` through ``a`` whose CTA-uniform branch
        facts agree with it (a CTA that returns early returns in every warp), ``ka`` arrives on some instance
        ``X`` after ``a`` (its ``n+1``-th arrival, ``n`` = its most arrivals on ``X`` before ``a`` on the paths
        that agree) and ``kb`` has completed at least ``n+1`` waits on ``X`` before ``b``, so the phase it waited
        for includes that arrival.  Counts of ``MANY`` or more (loops) are not compared: a wait then orders (a
        documented limit)."""
        return self.all_happen_before((a,), ka, b, kb)

    def completes_before(self, a: Instruction, ka: "WarpClass", b: Instruction, kb: "WarpClass") -> bool | None:
        """Whether the asynchronous tcgen05 operation ``a`` (an mma or cp issued by ``ka``) has *completed* before
        every execution of ``b`` by ``kb``: ``must_happen_before`` where the release after ``a`` must be a
        ``tcgen05.commit`` of ``ka`` (its mbarrier arrival waits for ``a``'s completion, PTX ISA §9.7.16.8.4); a
        plain arrive or barrier after ``a`` orders its issue, not its completion.  Later hops (a class that waited
        for the commit, then hands over) are ordinary."""
        return self.all_happen_before((a,), ka, b, kb, completion=True)

    def ordering(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction, kb: "WarpClass",
                 completion: bool = False, tied: bool = False, phases: bool = True) -> Ordering:
        """``all_happen_before(group, ka, b, kb, completion=completion, tied=tied)`` with the chain's edges: which
        barrier instances ``ka`` releases after the latest of ``group``, which of them ``kb`` waits on before ``b``,
        and when not ordered, the edge that is missing (``Ordering``).  ``phases``: see ``all_happen_before``."""
        verdict = self.all_happen_before(group, ka, b, kb, completion=completion, tied=tied, phases=phases)
        paths = self.releases_after(ka, group, grouped=len(group) > 1, completion=completion).get(group[0].index)
        released = sorted({k for keys, _ in paths or () for k in keys}, key=repr)
        waits = self._count_waits_before(kb, b, released)
        waited = tuple(k for k in released if waits.get(k, 0) > 0)
        missing = None
        if verdict is False:
            missing = "release" if not released else "wait" if self._skips_every_wait(kb, b, released) else "phase"
            if completion and released and any(not keys for keys, _ in paths or ()):
                missing = "issuer"  # another thread commits: ``_issuers_keys``
        return Ordering(verdict, tuple(released), waited, missing)

    def _skips_every_wait(self, kb: "WarpClass", b: Instruction, keys: list[BarrierKey]) -> bool:
        """Whether some path of ``kb`` reaches ``b`` without waiting on any of ``keys`` (``b``'s own wait
        included): the missing edge of that path is the wait, whatever the other paths do (``Ordering.missing``
        names the edge the unordered pair of paths lacks, not the union over paths).  Paths are told apart by
        their CTA-uniform fact sets (``_Counts.waits``: the fewest waits per fact set); a fact set one key's
        simulation did not keep (past ``_MAX_FACT_SETS``) counts as waiting on that key."""
        sb = self.site(b)
        tables = []
        for k in keys:
            if sb is not None and sb.waits and sb.key.may_alias(k):
                return False  # b itself waits on k on every path
            tables.append(self._count(kb, k).waits.get(b.index, {}))
        paths = {f for t in tables for f in t}
        if not paths:
            return True
        return any(all(t.get(f, 1) == 0 for t in tables) for f in paths)

    def _count_waits_before(self, kb: "WarpClass", b: Instruction, keys: list[BarrierKey]) -> dict[BarrierKey, int]:
        """The most waits of ``kb`` on each of ``keys`` before ``b`` over its paths (``b``'s own wait included)."""
        out: dict[BarrierKey, int] = {}
        sb = self.site(b)
        for k in keys:
            done = 1 if sb is not None and sb.waits and sb.key.may_alias(k) else 0
            got = self._count(kb, k).waits.get(b.index, {})
            out[k] = max(got.values(), default=0) + done
        return out

    def waits_own_completion(self, klass: "WarpClass", ops: tuple[Instruction, ...], b: Instruction) -> bool | None:
        """Whether each thread of ``klass`` that issued one of the asynchronous tcgen05 operations ``ops`` has itself
        committed them (``tcgen05.commit``, which tracks all of the thread's earlier ones, PTX ISA §9.7.16.8.4) and
        waited on that commit's barrier before it reaches ``b``, on every path (the MMA lane's own producer tail
        before the warp frees the columns).  None when no path through ``ops`` reaches ``b``; False when some does
        without such a wait.  A path's state is ``None`` (nothing issued) or the frozenset of the keys committed to
        since the last operation (empty: issued, not committed).  A set, not a tuple: a loop that commits to the same
        barrier every iteration gives one state, not one per trip."""
        want = {o.index for o in ops}
        verdicts: set[bool] = set()

        pending: frozenset[BarrierKey] = frozenset()

        def transfer(prop: frozenset[BarrierKey] | None, i: Instruction) -> frozenset[BarrierKey] | None:
            if i.index in want:
                return pending
            if prop is None:
                return None
            s = self.site(i)
            if s is None:
                return prop
            if i.family == "tcgen05.commit":
                return prop | {s.key}
            if s.waits and prop and any(s.key.may_alias(k) for k in prop):
                return None  # complete: as if nothing were pending
            return prop

        def observe(_k: "WarpClass", prop: Hashable, i: Instruction, _facts: Facts) -> None:
            if i.index == b.index and prop is not None:
                verdicts.add(False)
            elif i.index == b.index:
                verdicts.add(True)

        relevant = lambda i: i.index in want or self._relevant(i)  # noqa: E731
        self.ctx.simulate(transfer, None, observe, classes=[klass], relevant=relevant)
        if not verdicts:
            return None
        return False not in verdicts

    def form(self, inst: Instruction) -> AddressForm | None:
        """``sync.address_form`` of ``inst`` (the finer identity of its mbarrier), memoised."""
        idx = inst.index
        if idx not in self._forms:
            self._forms[idx] = address_form(self.ctx.values, inst)
        return self._forms[idx]

    def uncompleted_by_issuer(self, pairs: dict[int, list[int]]) -> dict[int, int]:
        """For each instruction ``w`` of ``pairs`` (``{w index: [index of an asynchronous tcgen05 operation, …]}``):
        the first operation of its list that the thread executing ``w`` issued earlier and has not seen complete, on
        some path of some warp class, by index; instructions whose operations all completed are left out.  An
        operation completes for its issuing thread at a ``tcgen05.commit`` after it (which tracks all the thread's
        earlier asynchronous tcgen05 operations, PTX ISA §9.7.16.8.4) followed by an mbarrier wait
        (``try_wait``/``test_wait``, §9.7.13.15.16) that may be on that commit's barrier (``AddressForm.may_alias``:
        ``full[s]`` and ``empty[s]`` of one stage register are told apart, barriers the analysis cannot tell apart
        are the same).  Any such wait counts, whether its result is tested or not (the safe side: a missed
        completion is reported).  TM307's same-thread question: does the MMA's own thread write its operands before
        the MMA completed?"""
        ops = {m for ms in pairs.values() for m in ms}
        found: dict[int, int] = {}
        _Pending = frozenset[tuple[int, frozenset[AddressForm | None]]]

        def transfer(prop: _Pending, inst: Instruction) -> _Pending:
            idx = inst.index
            if idx in ops:
                return frozenset(p for p in prop if p[0] != idx) | {(idx, frozenset())}
            if not prop:
                return prop
            e = self.event(inst)
            if e is None:
                return prop
            if e.kind == "commit":
                v = self.form(inst)
                return frozenset((m, c | {v}) for m, c in prop)
            if e.kind == "mbarrier" and e.op in ("try_wait", "test_wait"):
                v = self.form(inst)
                return frozenset(p for p in prop if not any(c is None or c.may_alias(v) for c in p[1]))
            return prop

        def observe(_k: "WarpClass", prop: Any, inst: Instruction, _facts: Facts) -> None:  # prop: _Pending
            want = pairs.get(inst.index)
            if not want or not prop or inst.index in found:
                return
            hit = sorted(m for m, _c in prop if m in want)
            if hit:
                found[inst.index] = hit[0]

        watched = ops | set(pairs)
        # a class that issues none of ``ops`` keeps an empty property and finds nothing (``_runs_none_of``)
        classes = [k for k in self.ctx.threads.classes if not self._runs_none_of(k, ops)]
        self.ctx.simulate(transfer, frozenset(), observe, classes=classes,
                          relevant=lambda i: i.index in watched or i.family == "tcgen05.commit" or i.op == "mbarrier")
        return found

    def released_before(self, klass: "WarpClass", inst: Instruction) -> tuple[Release, ...]:
        """The hand-overs of ``klass`` (``Release``: arrives that do not wait) that precede ``inst`` on some path
        of the class with no wait of the class in between (no ``mbarrier.try_wait``/``test_wait``, ``bar.sync`` /
        ``barrier.sync``/``bar.red``, ``barrier.cluster.wait``): what this thread has handed back and not yet
        waited for again when it executes ``inst`` (PTX ISA §9.7.13.15, §9.7.13.1; rules catalog TM313).  Any
        wait ends every hand-over (it may be the wait for the cells again): a documented limit that keeps the
        answer on the safe side.  Each release comes with the TMEM accesses it hands back (``Release.handed``:
        those since the thread's latest wait before it, united over the paths).  Empty when ``klass`` does not
        execute ``inst``."""
        hit = self._released.get(id(klass))
        if hit is None or hit[0] is not klass:
            seen: dict[int, dict[int, frozenset[int]]] = {}
            insts = self.ctx.function.instructions
            empty: frozenset[Any] = frozenset()

            def transfer(prop: _Handed, i: Instruction) -> _Handed:
                # (TMEM accesses since the latest wait, {(release index, the accesses it hands back)})
                touched, released = prop
                if i.op == "tcgen05" and i.index in self._tmem_users:
                    return touched | {i.index}, released
                s = self.site(i)
                if s is None:
                    return prop
                if s.waits:
                    return empty, empty
                if _is_release(i, s):
                    return touched, released | {(i.index, touched)}
                return prop

            def observe(_k: "WarpClass", prop: Any, i: Instruction, _facts: Facts) -> None:  # prop: _Handed
                if prop[1]:
                    at = seen.setdefault(i.index, {})
                    for r, handed in prop[1]:
                        at[r] = at.get(r, empty) | handed

            self.ctx.simulate(transfer, (empty, empty), observe, classes=[klass], relevant=self._relevant)
            table = {i: tuple(Release(insts[r], self._site_key(insts[r]), tuple(insts[h] for h in sorted(at[r])))
                              for r in sorted(at))
                     for i, at in seen.items()}
            hit = self._released[id(klass)] = (klass, table)
        return hit[1].get(inst.index, ())

    def _site_key(self, inst: Instruction) -> BarrierKey:
        """The barrier key of ``inst``, an instruction with a sync site."""
        s = self.site(inst)
        assert s is not None
        return s.key

    @cached_property
    def _tmem_users(self) -> frozenset[int]:
        """Indices of the tcgen05 instructions with a TMEM operand other than ``dealloc`` (``Release.handed``)."""
        return frozenset(i.index for i in self.ctx.function.instructions
                         if i.op == "tcgen05" and i.family != "tcgen05.dealloc" and tmem_operand_indices(i))

    def waits_since(self, klass: "WarpClass", key: BarrierKey,
                    inst: Instruction) -> frozenset[frozenset[BarrierKey]]:
        """For the paths of ``klass`` reaching ``inst`` that waited on an instance that may be ``key``: the sets of
        barrier instances the class waited on since its latest such wait (one set per distinct path state; a
        frozenset of frozensets, empty when no path reaching ``inst`` has waited on ``key``)."""
        memo = self._waits_since
        hit = memo.get((id(klass), key))
        if hit is None or hit[0] is not klass:
            seen: dict[int, set[frozenset[BarrierKey]]] = {}

            def transfer(prop: frozenset[BarrierKey] | None, i: Instruction) -> frozenset[BarrierKey] | None:
                st = self.site(i)
                if st is None or not st.waits:
                    return prop
                if st.key.may_alias(key):
                    return frozenset()
                return None if prop is None else prop | {st.key}

            def observe(_k: "WarpClass", prop: Any, i: Instruction, _facts: Facts) -> None:
                if prop is not None:
                    seen.setdefault(i.index, set()).add(prop)

            self.ctx.simulate(transfer, None, observe, classes=[klass], relevant=self._relevant)
            hit = memo[(id(klass), key)] = (klass, {i: frozenset(v) for i, v in seen.items()})
        return hit[1].get(inst.index, frozenset())

    def reclaims(self, a: Instruction, ka: "WarpClass", b: Instruction, kb: "WarpClass", key: BarrierKey) -> bool:
        """Whether ``b`` (run by ``kb``) may follow ``kb``'s wait on an instance that may be ``key`` without being
        ordered after ``a`` (run by ``ka``, which released ``key`` before ``a`` and has not waited since): on some
        path of ``kb`` reaching ``b`` after such a wait, ``kb`` waited since its latest wait on ``key`` on no
        instance ``X`` (one that cannot be ``key``) that ``ka`` arrives on after ``a``.  A wait on ``X`` before the
        wait on ``key`` is for an earlier phase (an earlier ``__syncthreads`` both passed, the other stage's
        barrier of the previous round), so only those after it can order ``a`` before ``b``; a later arrival of
        ``ka`` on ``key`` itself is a later phase than the one ``kb`` waited for.  TM313's question: may the
        producer's write ``b`` overwrite the columns the consumer's access ``a`` touches after their release?"""
        since = self.waits_since(kb, key, b)
        if not since:
            return False
        paths = self.releases_after(ka, (a,)).get(a.index)
        others = {k for keys, _ in paths or () for k in keys if not k.may_alias(key)}
        return any(not any(w.may_alias(x) for w in waited for x in others) for waited in since)

    def all_happen_before(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction,
                          kb: "WarpClass", hops: int = 2, completion: bool = False,
                          tied: bool = False, phases: bool = True) -> bool | None:
        """``must_happen_before`` for the latest of the instructions ``group`` that ``ka`` executes on each path
        (every access of a warp class before a dealloc); counts of arrivals are the most at any of them.

        Happens-before is transitive: when no barrier instance orders ``group`` before ``b`` directly, a third
        warp class that waits after ``group`` (at a wait ordered after it) and then arrives where ``kb`` waits
        orders them (the MMA warp commits to the correction warps, which hand over to the epilogue warp that
        frees: CUTLASS FMHA; the MMA warp commits to acc_full, the epilogue waits for it and arrives on acc_empty,
        which the MMA warp waits on before its dealloc: CUTLASS 70's GEMM); at most ``hops`` such classes are
        followed.  The first hop is asked with ``completion`` and ``phases`` (not ``tied``); a chain one of whose hops
        is undecided (None) makes the answer None when no chain orders.

        ``tied``: ``b`` uses what ``group`` produced (a load of an MMA's accumulator), so an execution in which ``b``
        runs and ``group`` does not is no excuse: pairs of paths chosen by data each class computed itself count
        as unordered instead of undecided, and a barrier key that is not exact orders only the paths of ``kb`` that
        waited on it at least once (not merely some path).  The first hop only; later hops are ordinary.

        ``phases`` False: a wait on an instance orders a path of ``kb`` whatever the phase counts say (one wait
        after the release suffices); counts compared across two classes' unrolled loops (a remainder loop in each)
        pair paths that are not the same iterations, so questions whose answer must not depend on them ask this
        way (the first hop only)."""
        direct = self._direct(group, ka, b, kb, completion, tied, phases)
        if direct is not False or hops == 0:
            return direct
        key = (tuple(g.index for g in group), id(ka), b.index, id(kb), hops, completion, tied, phases)
        if key in self._transitive:
            return self._transitive[key]
        self._transitive[key] = False  # a cycle through the same question orders nothing
        insts = self.ctx.function.instructions
        waits = [i for i in insts if i.op in ("mbarrier", "bar", "barrier") and (s := self.site(i)) is not None
                 and s.waits]
        result: bool | None = False
        for k2 in self.ctx.threads.classes:
            if k2 is ka or k2 is kb or result:
                continue
            for w in waits:
                if not self.executes(k2, w):
                    continue
                # ``then`` depends on ``w`` and ``b`` only, so it is shared by every group asked about: asked
                # first, it spares the first hop where the second cannot order (hops - 1 questions never come back
                # to a question of ``hops``, so the order of the two does not change either answer)
                then = self.all_happen_before((w,), k2, b, kb, hops - 1)
                if then is False or (then is None and result is None):
                    continue  # once undecided, only a chain whose both hops order changes the verdict
                first = self._direct(group, ka, w, k2, completion, phases=phases)
                if first is False:
                    continue
                if first and then:
                    result = True
                    break
                result = None  # a chain the model cannot decide (paths chosen by each class's own data)
        self._transitive[key] = result
        return result

    def _direct(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction,
                kb: "WarpClass", completion: bool = False, tied: bool = False,
                phases: bool = True) -> bool | None:
        key = (tuple(g.index for g in group), ka.warps, b.index, kb.warps, completion, tied, phases)
        if key not in self._ordered:
            self._ordered[key] = self._direct_uncached(group, ka, b, kb, completion, tied, phases)
        return self._ordered[key]

    def _direct_uncached(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction,
                         kb: "WarpClass", completion: bool = False, tied: bool = False,
                         phases: bool = True) -> bool | None:
        """``all_happen_before`` through one barrier instance, with no third class.  When ``b`` is itself a wait,
        the question is whether ``group`` is ordered before ``b`` returns (its own wait counts)."""
        a = group[0]
        paths_a = self.releases_after(ka, group, grouped=len(group) > 1, completion=completion).get(a.index)
        if not paths_a:
            return None
        facts_b = self._reaching_facts(kb).get(b.index)

        def orders(x: BarrierKey, fa: Facts, fb: Facts) -> bool | None:
            """Whether ``x`` orders the paths of facts ``fa`` (``ka``) and ``fb`` (``kb``): True, False, or None
            when the only unordered path pairs are chosen by data each class computed itself."""
            sb = self.site(b)
            done = 1 if sb is not None and sb.waits and sb.key.may_alias(x) else 0  # b itself waits on x
            counts = self._count(kb, x)
            table = counts.lane_waits if b.family in WARP_COLLECTIVE else counts.waits
            own = sb.key == x if sb is not None else False
            b_states = [(f, min(m + (0 if done and own and self.passes_at_once(b, m) else done), MANY))
                        for f, m in table.get(b.index, {}).items() if self._agree(f, fb, other_warp_view(fa))]
            if not b_states:
                return False
            if tied and (not x.exact or not phases):  # a path of kb that never waited on it is not ordered
                return all(m > 0 for _, m in b_states)
            if not phases:  # one wait orders; a path with none does, unless chosen by data (undecided)
                unknown = False
                for f, m in b_states:
                    if m == 0:
                        if not self._undecidable_pair(f, fa):
                            return False
                        unknown = True
                return None if unknown else True
            if not x.exact:  # arrivals on other barriers may be counted too: any wait orders (a documented limit)
                return any(m > 0 for _, m in b_states)
            if self._completed_by_others(group, ka, x):
                return False  # another class's arrival may complete the phase kb waits for before ka's
            a_states = [st for g in group for st in self._count(ka, x).arrivals.get(g.index, {}).items()]
            verdict: bool | None = True
            for f, m in b_states:
                n = max((c for g, c in a_states if self._agree(g, fa)
                         and self._agree(other_warp_view(g), f, other_warp_view(fa))), default=0)
                if not (m > 0 and (n >= MANY or m >= MANY or n + 1 <= m)):
                    if tied or not self._undecidable_pair(f, fa):
                        return False
                    verdict = None  # both paths chosen by values each class computed itself
            return verdict

        uncertain = False
        for fb in (facts_b if facts_b else (frozenset(),)):
            fb = self._without_lane_facts(fb)
            for keys, fa in paths_a:
                if not self._agree(other_warp_view(fa), fb):  # ka's %warpid tests are its own warp's
                    continue
                # ``orders`` is a pure function of its arguments (its counts are memoised per class and key), so
                # the search stops at the first key that orders: the same answer whatever the order of the keys,
                # without simulating the counts of the keys after it
                verdicts = []
                for x in self._in_order(keys):
                    verdicts.append(orders(x, fa, fb))
                    if verdicts[-1] is True:
                        break
                if True in verdicts:
                    continue
                if self._wait_never_returns(group, ka, fa, fb, kb, b):
                    continue  # on this pair of paths kb waits for a phase that never completes: b never runs
                if None in verdicts or (not tied and self._undecidable_pair(fa, fb)):
                    uncertain = True  # e.g. a role that allocated but met only empty tiles, per its own loads
                    continue
                return False
        return None if uncertain else True

    def _completed_by_others(self, group: tuple[Instruction, ...], ka: "WarpClass", x: BarrierKey) -> bool:
        """Whether a phase of the exactly known mbarrier ``x`` may complete without ``ka``'s arrival after
        ``group``: ``x`` is initialised with an expected count of 1 (``mbarriers.expected_counts``) and a warp class
        other than ``ka`` may arrive on it (an arrive site that may be ``x``) at an arrival not ordered after
        ``group`` (``all_happen_before``).  PTX ISA §9.7.13.15.1-2: a phase completes when its pending arrival count
        reaches zero, so with a count of 1 the first arrival completes it, whoever makes it.  Arrivals ordered after
        ``group`` (a class that waits for ``ka``'s arrival, then arrives for the next phase) keep the order.  Other
        counts are not judged (a documented limit).  Memoised; a question met again while it is being answered
        (through ``all_happen_before``) is answered False."""
        memo_key = (tuple(g.index for g in group), id(ka), x)
        hit = self._by_others.get(memo_key)
        if hit is not None:
            return hit
        self._by_others[memo_key] = False
        got = False
        if self.phase_arrivals(x, 0).needed == 1:
            for i, s in self._sited:
                if got:
                    break
                if not s.arrives or not s.key.may_alias(x):
                    continue
                for k in self.ctx.threads.classes:
                    if k is not ka and self.executes(k, i) and self.all_happen_before(group, ka, i, k) is not True:
                        got = True
                        break
        self._by_others[memo_key] = got
        return got

    @cached_property
    def _expected(self) -> dict[BarrierKey, tuple[int, Instruction]]:
        """``mbarriers.expected_counts`` of the function: exact key → (expected arrival count, its init)."""
        return expected_counts(self.ctx.values, self.ctx.function.instructions)

    def _wait_never_returns(self, group: tuple[Instruction, ...], ka: "WarpClass", fa: Facts, fb: Facts,
                            kb: "WarpClass", b: Instruction) -> bool:
        """Whether the path of ``kb`` of facts ``fb`` cannot reach ``b`` while ``ka`` runs its path of facts ``fa``
        through ``group``, asked of the arrival primitive: on it ``kb`` has passed a wait for phase 0 of an
        mbarrier ``X`` before ``b`` (``arrivals_needed``), or ``b`` is one (``_zero_phase_wait``), and no arrive
        site of ``X`` (``phase_arrivals(X, 0).sites``: any class, any lane, a peer's remote arrive or multicast
        commit, a call) may run with these paths.  PTX ISA §9.7.13.15.1-2: a phase completes only once its pending
        arrival count reaches zero, and the expected count of ``mbarrier.init`` is at least 1, so with no arrival
        phase 0 never completes and the wait never returns: an arrive that ``ka`` may skip leaves no execution of
        ``b`` unordered.  A site that only threads of ``ka`` running ``group`` execute (``_run_by_group``) is asked
        of ``ka``'s path itself: no arrival on ``X`` before the latest of ``group`` (``_count``) nor after it
        (``releases_after``, the warp's lanes united); every other site (another class's, or lanes of ``ka`` that
        do not run ``group``, such as the non-elected lanes of an MMA warp) is asked of ``may_arrive_with``'s test
        (``_site_may_run``).  Only barriers with sites, all of them this CTA's own arrivals on exactly ``X``
        (``PhaseArrivals.local``), are asked."""
        needs = list(self.arrivals_needed(kb, b, fb))
        own = self._zero_phase_wait(b)
        if own is not None and all(n.barrier != own for n in needs):
            needs.append(NeededArrival(own, self.phase_arrivals(own, 0)))
        if not needs:
            return False
        joint = (other_warp_view(fa), fb)
        for need in needs:
            x = need.barrier
            if not need.phase.local or not need.phase.sites:
                # a peer CTA's arrival, a multicast commit, a callee's or an aliased address: not followed; no site:
                # the model counts none of the arrivals (a subclass's unfenced relaxed arrives), not a proof of none
                continue
            if any(not (k is ka and self._run_by_group(ka, a.inst, group)) and self._site_may_run(k, a.inst, joint)
                   for a in need.phase.sites for k in self.ctx.threads.classes if self.executes(k, a.inst)):
                continue  # an arrival this path of ka does not decide may complete the phase
            paths = self.releases_after(ka, group, grouped=len(group) > 1).get(group[0].index, [])
            same = [ks for ks, f in paths if f == fa]  # this very path, else every path that agrees with it
            after = frozenset().union(*same) if same else frozenset(
                k for ks, f in paths if self._agree(f, fa) for k in ks)
            if any(k.may_alias(x) for k in after):
                continue
            before = [c for g in group for f, c in self._count(ka, x).arrivals.get(g.index, {}).items()
                      if self._agree(f, fb, fa)]
            if before and not any(before):
                return True
        return False

    def _run_by_group(self, klass: "WarpClass", inst: Instruction, group: tuple[Instruction, ...]) -> bool:
        """Whether every thread of ``klass`` that may execute ``inst`` runs an instruction of ``group`` too: each
        fact set of the paths reaching ``inst`` holds every thread predicate (lane fact: ``elect.sync``, lane or
        thread-index tests) of some path reaching an instruction of ``group`` (a conjunction that implies it).
        False when the paths are not known."""
        sets = self.fact_sets(klass, inst)
        if not sets:
            return False
        lanes: list[Facts] = []
        for g in group:
            gs = self.fact_sets(klass, g)
            if gs is None:
                return False
            lanes += [frozenset(f for f in fg if is_lane_fact(f[0])) for fg in gs]
        return all(any(lg <= fs for lg in lanes) for fs in sets)

    def _zero_phase_wait(self, inst: Instruction) -> BarrierKey | None:
        """The mbarrier that the tested (``SyncEvent.waits``) ``.parity`` wait ``inst`` waits on for parity 0 when
        it returns (a constant parity 0, or a register whose first execution in its loop names 0:
        ``_first_zero_wait``; the transfer of ``_zero_phase_waits``), else None."""
        s = self.site(inst)
        if s is None or not s.waits or s.key.kind != "mbar":
            return None
        if s.parity == 0:
            return s.key
        if s.parity is None and "parity" in inst.parts:
            return self._first_zero_wait(inst)
        return None

    def never_completes(self, klass: "WarpClass", b: Instruction) -> Hang | None:
        """Whether the mbarrier wait ``b`` (run by ``klass``) never returns on some path (``Hang``), else None.

        Proved only in the shape ``_wait_never_returns`` uses for ordering: ``b`` is a ``.parity`` wait for phase 0
        (every wait of ``klass`` on the barrier is: ``_parity0_waited``) of an exactly known mbarrier ``X`` that
        one other warp class ``ka`` alone arrives on (``_only_arriver``: no unknown, aliased or peer address, no
        multicast commit), every event on ``X`` being a plain ``mbarrier.init`` / ``arrive`` / wait
        (``_plain_barrier``: no ``expect_tx`` or ``complete_tx`` whose bytes a copy completes, no commit, no
        ``cp.async`` arrive), in a function with no call (an arrive in a callee is not seen); ``b`` is the first
        wait of ``klass`` on ``X`` on a path of facts ``fb``, and a path of ``ka`` agreeing with ``fb`` arrives on
        ``X`` nowhere from entry to exit, every path of ``ka`` that agrees with both arriving on it nowhere either
        (``releases_after(from_entry=True)``: lanes of one warp united).  Pairs of paths chosen by data each class
        computed itself (``threads.undecidable_pair``) prove nothing.  PTX ISA §9.7.13.15.1-2 (phase completion),
        §9.7.13.15.16 (``try_wait.parity``).  Also proved, whoever arrives: the barrier's expected count (one
        constant ``mbarrier.init``) is above the most arrivals the whole CTA makes on it (``_arrival_bound``), so
        phase 0 completes on no path (``Hang.arriver`` None)."""
        sb = self.site(b)
        if sb is None or not sb.waits or sb.key.kind != "mbar" or not sb.key.exact or sb.parity is None:
            return None
        x = sb.key
        if not self._plain_barrier(x) or not self._constant_parity_waits(klass, x):
            return None
        facts_b = self._reaching_facts(klass).get(b.index)
        if not facts_b:
            return None
        waits = self._count(klass, x).waits.get(b.index, {})
        expected = self.phase_arrivals(x, 0).needed  # phase 0's arrivals: the expected count
        bound = self._arrival_bound(x) if expected is not None else None
        if expected is not None and bound is not None:
            for fb in sorted(facts_b, key=repr):
                fb = self._without_lane_facts(fb)
                m = min((n for f, n in waits.items() if self._agree(f, fb)), default=MANY)
                # the (m+1)-th wait of alternating parity 0, 1, 0, … returns only once phase m completed
                needed = self.phase_arrivals(x, m).needed if m < MANY else None
                if needed is not None and sb.parity == m % 2 and bound < needed:
                    return Hang(b, klass, x, None, fb, (), expected, bound, m)
        if sb.parity != 0 or x not in self._parity0_waited(klass):
            return None
        ka = self._only_arriver(x)
        if ka is None or ka is klass:
            return None
        paths_a = self.releases_after(ka, (), from_entry=True).get(_ENTRY, [])
        for fb in sorted(facts_b, key=repr):
            fb = self._without_lane_facts(fb)
            if not any(m == 0 for f, m in waits.items() if self._agree(f, fb)):
                continue  # not the first wait on x of this path
            for keys, fa in paths_a:
                if any(k.may_alias(x) for k in keys) or not self._agree(other_warp_view(fa), fb):
                    continue
                if self._undecidable_pair(fa, fb):
                    continue
                situation = self._skipping_situation(x, paths_a, other_warp_view(fa) | fb)
                if situation is None:
                    continue  # some lane of ka may arrive in every situation of these paths
                skipped = tuple(a.inst for a in self.phase_arrivals(x, 0).sites)
                return Hang(b, klass, x, ka, situation, skipped)
        return None

    def _skipping_situation(self, x: BarrierKey, paths_a: list[_KeysOnPath], facts: Facts) -> Facts | None:
        """``facts`` with, for each path of ``paths_a`` that arrives on ``x`` and agrees with them, one of its
        CTA-uniform comparisons (of parameters, special registers and constants: no opaque value, no register
        value) added negated, so that no path that arrives on ``x`` agrees with the result; None when that is not
        possible.  The paths' facts are those of joined exit states (what the states have in common), so every
        execution in the situation returned ends in a path that agrees with it: none of its lanes arrives."""
        arriving = sorted((other_warp_view(f) for ks, f in paths_a if any(k.may_alias(x) for k in ks)), key=repr)
        got = facts
        for f in arriving:
            if not self._agree(f, got):
                continue
            known = {k for k, _ in got}
            for k, v in sorted(f, key=repr):
                text = repr(k)
                if type(k) is not Cmp or "opq" in text or "regval" in text:
                    continue
                if k in known:
                    continue
                flipped = got | {(k, not v)}
                if self._agree(flipped):
                    got = flipped
                    break
            else:
                return None
        if any(self._agree(f, got) for f in arriving):
            return None
        return got

    def _arrival_bound(self, x: BarrierKey) -> int | None:
        """The most arrivals on the mbarrier ``x`` that all threads of the CTA make from the kernel's entry to its
        exit, or None when not bounded: per warp class and arrive site on exactly ``x``, the threads whose path
        facts reach it (``threads.lane_counts`` over the class's warps, the most of any path), times the site's
        arrival count (``SyncEvent.count``), times the most arrivals on ``x`` one thread of the class makes on a
        path to an exit (``_count``; ``MANY``, a loop, is not bounded).  Units: arrivals (PTX ISA §9.7.13.15.2)."""
        nonuniform = divergent_defs(self.ctx)
        exits = [i for i in self.ctx.function.instructions if i.op in ("ret", "exit")]
        phase = self.phase_arrivals(x, 0)
        if not phase.local:
            return None  # an arrival from a peer CTA, a callee or an aliased address is not bounded here
        total = 0
        for k in self.ctx.threads.classes:
            sites = [a for a in phase.sites if self.executes(k, a.inst)]
            if not sites:
                continue
            arrivals = self._count(k, x).arrivals
            times = max((c for e in exits for c in arrivals.get(e.index, {}).values()), default=None)
            if times is None or times >= MANY:
                return None
            for a in sites:
                sets = self.fact_sets(k, a.inst)
                if a.count is None or sets is None:
                    return None
                threads = 0
                for f in sets:
                    per_warp = lane_counts(k, f, nonuniform)
                    if per_warp is None:
                        return None
                    threads = max(threads, sum(per_warp))
                total += threads * a.count * times
        return total

    def _constant_parity_waits(self, klass: "WarpClass", x: BarrierKey) -> bool:
        """Whether every wait of ``klass`` that may be on the mbarrier ``x`` is a ``.parity`` wait on exactly ``x``
        with a constant parity (PTX ISA §9.7.13.15.16)."""
        return all(s.key == x and s.parity is not None for i, s in self._sited
                   if s.waits and s.key.may_alias(x) and self.executes(klass, i))

    def _plain_barrier(self, x: BarrierKey) -> bool:
        """Whether every synchronization event that may be on the mbarrier ``x`` is a plain ``mbarrier.init``,
        ``arrive`` (no ``.expect_tx``, local), ``try_wait`` or ``test_wait`` on exactly ``x``, and the function makes
        no call: a copy's ``complete_tx`` (PTX ISA §9.7.9.24), a ``tcgen05.commit`` (§9.7.16.8.4), a ``cp.async``
        arrive (§9.7.9.25), an ``arrive_drop`` or an arrive in a callee may complete a phase the counts do not
        see."""
        if not all(a.kind == "local" and a.op == "arrive" and not a.tx and a.lands_on == x
                   for a in self.arrive_sites(x)):
            return False  # a call, a remote or multicast arrival, a commit, a drop, a transaction count
        for i in self.ctx.function.instructions:
            e = self.event(i)
            if e is None or e.kind in ("bar", "cluster", "fence") or not e.key.may_alias(x):
                continue
            if e.key != x or e.kind != "mbarrier" or e.tx or e.remote:
                return False
            if e.op not in ("init", "arrive", "try_wait", "test_wait"):
                return False
        return True

    def _parity0_waited(self, klass: "WarpClass") -> tuple[BarrierKey, ...]:
        """The exactly known mbarriers that ``klass`` waits on, every wait of it that may be on one being a
        ``.parity`` wait on that very key with constant parity 0 (PTX ISA §9.7.13.15.16: it returns once phase 0
        completed, or at once when a later phase is current), in a fixed order; memoised per class."""
        hit = self._parity0.get(id(klass))
        if hit is not None and hit[0] is klass:
            return hit[1]
        waited = [s for i, s in self._sited if s.waits and s.key.kind == "mbar" and self.executes(klass, i)]
        out = tuple(sorted({s.key for s in waited if s.key.exact and s.parity == 0
                            and all(w.key == s.key and w.parity == 0 for w in waited if w.key.may_alias(s.key))},
                           key=repr))
        self._parity0[id(klass)] = (klass, out)
        return out

    def _only_arriver(self, x: BarrierKey) -> "WarpClass | None":
        """The one warp class that may arrive on the exactly known mbarrier ``x``, or None: when no class or several
        do, or some arrival that may be on ``x`` is not known to be on exactly ``x`` (an unknown address, one from
        ``mapa``: a peer CTA's, PTX ISA §9.7.9.22) or is a ``tcgen05.commit … .multicast::cluster`` (it arrives in
        every CTA of its mask, §9.7.16.8.4: a peer's commit may arrive here).  Memoised per key."""
        if x in self._arriver:
            return self._arriver[x]
        found: dict[int, "WarpClass"] = {}
        phase = self.phase_arrivals(x, 0)
        if phase.local:
            for a in phase.sites:
                found.update((id(k), k) for k in self.ctx.threads.classes if self.executes(k, a.inst))
        got = next(iter(found.values())) if phase.local and len(found) == 1 else None
        self._arriver[x] = got
        return got

    # ---- the arrivals of a phase: one primitive (issue 24) ------------------------------------------------------

    def arrive_sites(self, x: BarrierKey) -> tuple["ArriveSite", ...]:
        """Every event of the function that may act on the pending counts of a phase of the mbarrier ``x`` (an
        offset in whichever CTA: a peer's remote arrive or multicast commit lands on the same offset there), in
        program order (``ArriveSite``; memoised per key).  PTX ISA §9.7.13.15.1-2: a phase completes when its pending
        arrival count and its pending transaction count (bytes) both reach zero.  The events: ``mbarrier.arrive*``
        (``"local"``, or ``"remote"`` through ``mapa``: it lands on the variable ``mapa`` maps, in the target CTA,
        §9.7.9.22), ``tcgen05.commit`` (``"commit"``: one arrival when the thread's earlier asynchronous tcgen05
        operations complete; ``"multicast"`` with ``.multicast::cluster``: one in each CTA of the mask,
        §9.7.16.8.4), ``cp.async.mbarrier.arrive`` (``"cp.async"``, §9.7.9.25), the transaction-count operations
        (``"expect_tx"``, ``"complete_tx"``: a bulk copy's mbarrier operand or ``mbarrier.complete_tx``,
        §9.7.9.24-25, §9.7.13.15.8-9; no arrival) and every ``call`` (``"call"``: a callee may arrive anywhere)."""
        hit = self._arrive_sites.get(x)
        if hit is not None:
            return hit
        got = self._arrive_sites[x] = tuple(a for a in self._arrive_events if a.lands_on.may_alias(x))
        return got

    @cached_property
    def _arrive_events(self) -> tuple["ArriveSite", ...]:
        """``arrive_sites`` of any barrier: every arrival, transaction-count event and call of the function.  An
        arrival is one this model counts as a ``site`` (a subclass may drop some: ``publication.ReleaseSyncModel``'s
        unfenced relaxed arrives order nothing, so no reasoning of that model may lean on them)."""
        out: list[ArriveSite] = []
        for i in self.ctx.function.instructions:
            if i.op == "call":
                out.append(ArriveSite(i, "call", BarrierKey("mbar", None), None, op="call"))
                continue
            e = self.event(i)
            if e is None or e.kind in ("bar", "cluster", "fence"):
                continue
            if e.arrives and self.site(i) is None:
                continue
            if e.kind == "commit":
                out.append(ArriveSite(i, "multicast" if e.multicast else "commit", e.key, 1, op=e.op))
            elif e.kind == "cp.async.mbarrier.arrive":
                out.append(ArriveSite(i, "cp.async", e.key, e.count, op=e.op))
            elif e.kind == "complete_tx" or (e.kind == "mbarrier" and e.op in ("expect_tx", "complete_tx")):
                out.append(ArriveSite(i, e.op if e.kind == "mbarrier" else "complete_tx", e.key, 0, True, e.op))
            elif e.kind == "mbarrier" and e.arrives:
                out.append(ArriveSite(i, "remote" if e.remote else "local", self._lands_on(i, e), e.count, e.tx,
                                      e.op))
        return tuple(out)

    def phase_arrivals(self, x: BarrierKey, k: int) -> "PhaseArrivals":
        """What completes phase ``k`` (0-based; ``k`` < ``MANY``) of the mbarrier ``x`` (``PhaseArrivals``): the
        arrive sites that may contribute (``arrive_sites`` less the transaction-count operations, which arrive on
        nothing), whether they are all this CTA's own arrivals on exactly ``x`` (``local``), and the arrivals
        needed: ``(k + 1)`` × the expected count of ``x``'s one constant ``mbarrier.init`` (units: arrivals; PTX
        ISA §9.7.13.15.1-2: the pending count is reset to the expected count when a phase completes, so phases 0 …
        ``k`` take that many arrivals between them), None when not known.  The readers: ``arrivals_needed`` (a
        wait that returned implies one of ``sites`` ran; ``NeededArrival.phase``), ``_wait_never_returns`` (the same,
        for one pair of paths), ``_only_arriver`` and ``_arrival_bound`` (TM315's proofs, which need ``local``),
        ``never_completes`` and ``_completed_by_others`` (``needed``)."""
        sites = tuple(a for a in self.arrive_sites(x) if a.arrives)
        local = all(a.kind in ("local", "commit", "cp.async") and a.lands_on == x for a in sites)
        expected = self._expected.get(x)
        return PhaseArrivals(x, k, sites, local, (k + 1) * expected[0] if expected is not None else None)

    # ---- a wait that must observe an arrival implies one of its arrive sites ran (issue 24) ---------------------

    def arrivals_needed(self, klass: "WarpClass", at: Instruction, facts: Facts) -> tuple["NeededArrival", ...]:
        """The arrivals that must have happened before ``klass`` reaches ``at`` on its paths whose CTA-uniform facts
        agree with ``facts``: one ``NeededArrival`` per mbarrier ``X`` that every such path has passed a tested
        ``.parity`` wait for parity 0 on (``_zero_phase_waits``: a constant parity 0, or a parity in a register
        whose first execution in its loop names 0 on ``X``: ``_first_zero_wait``).  PTX ISA §9.7.13.15.16: such a
        wait returns once the phase of parity 0 that is current or just before has completed, never at once on a
        freshly initialised barrier (whose current phase is 0); §9.7.13.15.1-2: a phase completes only when its
        pending arrival count reaches zero, and ``mbarrier.init``'s expected count is at least 1, so some arrive on
        ``X`` ran before the wait returned.  The sites that may be that arrive are ``phase_arrivals(X, 0).sites``
        (any class, a peer CTA's remote arrive or multicast commit, a call included: ``NeededArrival.sites``).
        Limits: a wait for parity 1 adds nothing (it returns at once on a fresh barrier, and after a parity-0 wait
        the arrival is already needed), and the number of arrivals (``PhaseArrivals.needed``, in
        ``NeededArrival.phase``) is not asked of the sites.  ``_wait_never_returns`` asks it of one pair of paths."""
        per_facts = self._zero_phase_waits(klass).get(at.index)
        if not per_facts:
            return ()
        passed: frozenset[BarrierKey] | None = per_facts.get(facts)  # one of ``wait_paths``: that very path
        if passed is None:
            for f, keys in per_facts.items():
                if self._agree(f, facts):
                    passed = keys if passed is None else passed & keys
        if not passed:
            return ()
        return tuple(NeededArrival(x, self.phase_arrivals(x, 0)) for x in self._in_order(passed))

    def _lands_on(self, inst: Instruction, s: SyncEvent) -> BarrierKey:
        """The mbarrier, as an offset in whichever CTA, that the arrival event ``s`` of ``inst`` lands on: for a
        remote arrive whose address register has one reaching definition, a ``mapa`` (``[%r]`` with no offset
        added), the local barrier that ``mapa`` maps (PTX ISA §9.7.9.22: the same variable at the same offset in
        the target CTA); else the event's own key."""
        if not s.remote or s.operand is None:
            return s.key
        o = inst.operands[s.operand]
        if type(o) is not Address or o.offset != 0 or type(o.base) is not Reg:
            return s.key
        va = self.ctx.values
        defs = va.reaching_defs(inst, o.base.name)
        if len(defs) != 1:
            return s.key
        src = va.insts[next(iter(defs))]
        if src.op != "mapa" or len(src.operands) < 3 or src.operands[0] != o.base:
            return s.key
        return barrier_key(va, src, 1)

    def wait_paths(self, klass: "WarpClass", at: Instruction, along: Facts = frozenset()) -> tuple[Facts, ...]:
        """The fact sets (cross-warp form, lane facts kept) of the paths of ``klass`` that reach ``at``, kept apart
        by the waits for phase 0 they passed (``_zero_phase_waits``; ``fact_sets`` joins paths that differ only in
        them), less those that give a fact of ``along`` the other value (lane facts included: the same thread's
        path further on), in a fixed order: the paths to ask ``arrivals_needed`` about."""
        known = dict(along)
        return tuple(sorted((f for f in self._zero_phase_waits(klass).get(at.index, {})
                             if all(_fact_value(k, known) in (None, v) for k, v in f)), key=repr))

    def _zero_phase_waits(self, klass: "WarpClass") -> dict[int, dict[Facts, frozenset[BarrierKey]]]:
        """Per observed instruction of ``klass`` and fact set of the paths reaching it (cross-warp form), the mbarriers
        every such path has passed a tested (``SyncEvent.waits``) ``.parity`` wait for parity 0 on (a constant 0,
        or a register whose first execution in its loop names 0: ``_first_zero_wait``)
        (``arrivals_needed``); memoised per class.  Past ``_MAX_FACT_SETS`` fact sets an instruction keeps one
        entry under the empty fact set (any path)."""
        hit = self._zero_waits.get(id(klass))
        if hit is not None and hit[0] is klass:
            return hit[1]
        seen: dict[int, dict[Facts, frozenset[BarrierKey]]] = {}

        def transfer(prop: frozenset[BarrierKey], inst: Instruction) -> frozenset[BarrierKey]:
            key = self._zero_phase_wait(inst)
            if key is None or key in prop:
                return prop
            return prop | {key}

        def observe(_k: "WarpClass", prop: Any, inst: Instruction, facts: Facts) -> None:
            got = seen.setdefault(inst.index, {})
            uniform = cross_warp_facts(self.ctx.values, facts)
            if uniform not in got and len(got) >= _MAX_FACT_SETS:
                uniform = _ANY_PATH
            old = got.get(uniform)
            got[uniform] = prop if old is None else old & prop

        self.ctx.simulate(transfer, frozenset(), observe, classes=[klass], relevant=self._relevant)
        self._zero_waits[id(klass)] = (klass, seen)
        return seen

    def _first_zero_wait(self, inst: Instruction) -> BarrierKey | None:
        """The mbarrier (exactly known) that the first execution of the ``.parity`` wait ``inst`` (its parity in a
        register: a loop's phase bit) waits on, when that execution names parity 0; else None.  The execution is
        that of ``wait_parity``'s concrete run of the outermost loop around ``inst`` (``_unrolled_parities``):
        the run is faithful up to it (a branch it cannot decide stops it, and one whose unknown side leaves the
        loop is taken as staying: a path that leaves there never executes ``inst`` in the loop).  PTX ISA
        §9.7.13.15.16: a parity-0 wait returns once the phase of parity 0 that is current or just before is
        complete, so some phase of that barrier completed, whatever the thread counted before; later executions
        (which may name the phase before and return at once) add nothing to ``arrivals_needed``.  Memoised."""
        idx = inst.index
        if idx in self._first_zero:
            return self._first_zero[idx]
        got: BarrierKey | None = None
        loop = self._parity_loop(inst)
        if loop is not None:
            self.wait_parity(inst)  # runs the loop once (``_parity_tables``), recording each wait's first execution
            w = self._first_waits.get(loop, {}).get(idx)
            if w is not None and w.barrier is not None and w.parity is not None and w.parity & 1 == 0:
                got = BarrierKey("mbar", w.barrier)
        self._first_zero[idx] = got
        return got

    def may_arrive_with(self, need: "NeededArrival", joint: tuple[Facts, ...],
                        view: "Callable[[Facts], Facts] | None" = None) -> bool:
        """Whether one of ``need``'s arrive sites may run, by some warp class, on a path whose facts (``view`` of
        them: the facts that hold in every CTA the question spans; by default the CTA-uniform ones) agree with every
        fact set of ``joint`` (``consistent_choice_facts``, and no signed bound of one decides a comparison of the
        other the other way: ``threads.bounds_disagree``).  True when a site's paths are not known."""
        return any(self._site_may_run(k, x, joint, view) for x in need.sites for k in self.ctx.threads.classes
                   if self.executes(k, x))

    def _site_may_run(self, klass: "WarpClass", inst: Instruction, joint: tuple[Facts, ...],
                      view: "Callable[[Facts], Facts] | None" = None) -> bool:
        """Whether ``klass`` may execute ``inst`` on a path whose facts (``view`` of them; by default the
        CTA-uniform ones) agree with every fact set of ``joint`` (``may_arrive_with``'s test for one site and
        class); True when its paths are not known."""
        sets = self.fact_sets(klass, inst)
        if sets is None:
            return True
        for fx in sets:
            v = view(fx) if view is not None else self._uniform(fx)
            if self._agree(v, *joint) and not any(bounds_disagree(v, f) or bounds_disagree(f, v) for f in joint):
                return True
        return False

    def joint_paths_feasible(self, chosen: tuple[tuple["WarpClass", Instruction, Facts], ...],
                             view: "Callable[[Facts], Facts] | None" = None) -> bool:
        """Whether the paths ``chosen`` (per warp class, an instruction it reaches and the facts of its path there,
        of one execution of the cluster) can run together as far as their waits tell: False when one of them has
        passed a wait whose phase needs an arrival (``arrivals_needed``, asked with the path's own facts) that no
        arrive site may make on a path agreeing with all of them (``may_arrive_with``, on their ``view``): that
        wait never returned, the combination deadlocks before those instructions.  An exit path that passes such a
        wait while the joint path skips every arrive site is infeasible."""
        joint = tuple(view(f) if view is not None else self._uniform(f) for _k, _i, f in chosen)
        for k, at, f in chosen:
            for need in self.arrivals_needed(k, at, f):
                if not self.may_arrive_with(need, joint, view):
                    return False
        return True

    def joint_choice(self, fixed: tuple[tuple["WarpClass", Instruction, Facts], ...],
                     options: tuple[tuple["WarpClass", tuple[tuple[Instruction, Facts], ...]], ...],
                     view: "Callable[[Facts], Facts] | None" = None, budget: int = 256) -> "JointChoice":
        """One execution of the cluster made of the paths ``fixed`` and one path per entry of ``options`` (a warp
        class and the (instruction, facts) paths it may take there), the first in order whose facts (their
        ``view``: those that hold in every CTA the question spans; by default the CTA-uniform ones) agree with each
        other (``consistent_choice_facts``, and no signed bound of one decides a comparison of another the other
        way: ``threads.bounds_disagree``) and that ``joint_paths_feasible`` accepts: "may these classes be at these
        instructions together?".  Past ``budget`` complete choices tried, the answer is undecided
        (``JointChoice.decided`` False)."""
        chosen = list(fixed)

        def seen(f: Facts) -> Facts:
            return view(f) if view is not None else self._uniform(f)

        views = [seen(f) for _k, _i, f in fixed]
        tries = 0

        def agrees(fb: Facts) -> bool:
            return all(self._agree(f, fb) and not bounds_disagree(f, fb) and not bounds_disagree(fb, f)
                       for f in views)

        def search(n: int) -> bool:
            nonlocal tries
            if n == len(options):
                tries += 1
                return self.joint_paths_feasible(tuple(chosen), view)
            klass, paths = options[n]
            for at, fb in paths:
                if tries >= budget:
                    return False
                vb = seen(fb)
                if not agrees(vb):
                    continue
                chosen.append((klass, at, fb))
                views.append(vb)
                if search(n + 1):
                    return True
                chosen.pop()
                views.pop()
            return False

        if search(0):
            return JointChoice(tuple(chosen), True)
        return JointChoice(None, tries < budget)

    def fencing(self, inst: Instruction) -> Fencing:
        """The tcgen05 fences around the synchronization ``inst`` (``Fencing``), on the paths of every warp class;
        an instruction with no ``SyncEvent`` has none to miss.  The events are the shared classifier's
        (``SyncModel.site``): an arrival that the hardware makes when asynchronous operations complete is not
        the thread's release of its tcgen05 operations (``tcgen05.commit`` is a fence of them,
        ``cp.async.mbarrier.arrive`` tracks only ``cp.async``), a ``try_wait`` whose result is never tested waits
        for nothing, and a barrier that more threads use than its count synchronizes nothing."""
        return self._fencings.get(inst.index) or Fencing(inst)

    @cached_property
    def _fencings(self) -> dict[int, Fencing]:
        """``fencing`` of every synchronization event that misses a fence, by index (one simulation)."""
        insts = self.ctx.function.instructions
        handed: dict[int, set[int]] = {}  # release -> the unfenced asynchronous operations that reach it
        after: dict[int, int] = {}  # wait -> the first asynchronous operation after it with no fence between
        empty: frozenset[int] = frozenset()

        def releases(i: Instruction, s: SyncEvent | None) -> bool:
            return s is not None and s.arrives and i.op in ("bar", "barrier", "mbarrier")

        def transfer(prop: _Fences, i: Instruction) -> _Fences:
            pending, waited = prop
            fam = i.family
            if fam in ASYNC_TCGEN05:
                return (pending | {i.index} if len(pending) < _MAX_PENDING else pending), empty
            if fam == "tcgen05.dealloc" or fam == "tcgen05.fence::after_thread_sync":
                return pending, empty
            if fam in ("tcgen05.fence::before_thread_sync", "tcgen05.commit"):
                return empty, waited
            s = self.site(i)
            if releases(i, s):
                pending = empty
            if s is not None and s.waits:
                waited = frozenset({i.index})
            return pending, waited

        def observe(_k: "WarpClass", prop: Any, i: Instruction, _facts: Facts) -> None:  # prop: _Fences
            pending, waited = prop
            if i.family in ASYNC_TCGEN05 or i.family == "tcgen05.dealloc":
                for w in waited:
                    after.setdefault(w, i.index)
            elif pending and releases(i, self.site(i)):
                handed.setdefault(i.index, set()).update(pending)

        self.ctx.simulate(transfer, (empty, empty), observe, relevant=self._relevant)
        return {idx: Fencing(insts[idx], tuple(insts[a] for a in sorted(handed.get(idx, ()))),
                             insts[after[idx]] if idx in after else None)
                for idx in sorted(set(handed) | set(after))}

    def unfenced(self) -> tuple[Fencing, ...]:
        """``fencing`` of every synchronization event that misses a fence before or after it, in index order."""
        return tuple(self._fencings.values())

    def peer_synced(self, klass: "WarpClass", inst: Instruction, work: frozenset[int],
                    peer_keys: tuple[BarrierKey, ...], ordered_waits: frozenset[int] = frozenset(),
                    own_barrier: bool = True) -> bool:
        """Whether every path of ``klass`` reaching ``inst`` is synchronized with the peer CTA of a pair since its
        latest paired operation (an index in ``work``; the entry when none): TM111's question (PTX ISA Table 46,
        §9.7.13.4, §9.7.16.7.1; rules catalog TM111).  The events are the shared classifier's (``site``): with
        ``own_barrier``, the class arrived on the cluster barrier (``barrier.cluster.arrive``, ``.relaxed`` included:
        the peer's arrival proves it ran to that point) and then waited for that phase (an arrive before the paired
        operation and a wait after it only proves the peer arrived before its own work); or it waited on an
        mbarrier of ``peer_keys`` (one the peer CTA arrives on through ``mapa``: CUTLASS's paired TMEM release), or
        passed a wait of ``ordered_waits`` (a cluster wait the engine orders after another class's paired work,
        ``all_happen_before``)."""
        memo_key = (id(klass), work, peer_keys, ordered_waits, own_barrier)
        hit = self._peer_memo.get(memo_key)
        if hit is None or hit[0] is not klass:
            hit = self._peer_memo[memo_key] = (klass, self._peer_unsynced(klass, work, peer_keys, ordered_waits,
                                                                          own_barrier))
        return inst.index not in hit[1]

    @cached_property
    def _peer_memo(self) -> dict[tuple[Any, ...], tuple["WarpClass", frozenset[int]]]:
        """``peer_synced``'s answers: per question, the instructions some path reaches unsynchronized."""
        return {}

    def _peer_unsynced(self, klass: "WarpClass", work: frozenset[int], peer_keys: tuple[BarrierKey, ...],
                       ordered_waits: frozenset[int], own_barrier: bool) -> frozenset[int]:
        """The observed instructions that some path of ``klass`` reaches unsynchronized (``peer_synced``)."""
        unsynced, arrived, synced = 0, 1, 2
        bad: set[int] = set()

        def transfer(state: int, i: Instruction) -> int:
            if i.index in ordered_waits:
                return synced
            if i.index in work:
                return unsynced
            s = self.site(i)
            if s is None:
                return state
            if s.key.kind == "cluster" and own_barrier:
                if s.arrives:
                    return max(state, arrived)
                if s.waits:
                    return synced if state >= arrived else state
            if s.waits and peer_keys and any(s.key.may_alias(k) for k in peer_keys):
                return synced
            return state

        def observe(_k: "WarpClass", state: Any, i: Instruction, _facts: Facts) -> None:
            if state != synced:
                bad.add(i.index)

        self.ctx.simulate(transfer, unsynced, observe, classes=[klass], relevant=self._relevant)
        return frozenset(bad)

    def chain(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction, kb: "WarpClass",
              completion: bool = False, hops: int = 2) -> Chain:
        """``all_happen_before(group, ka, b, kb, hops, completion)`` with the chain that orders (``Chain.hops``) or
        the edge that is missing (``Chain.missing``): the plan's reuse edges name it.  A chain through a third
        class is the first one ``all_happen_before`` accepts (for an undecided answer, the first none of whose hops
        is known not to order) (the same classes and waits, in the same order; every
        answer asked here is memoised there).  ``ka`` may be ``kb`` (the lanes of one warp class: a warp's
        ``tcgen05.ld`` and the MMA its elected lane issues later)."""
        verdict = self.all_happen_before(group, ka, b, kb, hops, completion=completion)
        first = self.ordering(group, ka, b, kb, completion=completion)
        if verdict is False:
            return Chain(False, (), first.missing, first.released, first.waited)
        direct = self._direct(group, ka, b, kb, completion)
        if direct is True:
            return Chain(True, (self._hop(group, ka, b, kb, first.waited, completion),), None, first.released,
                         first.waited)
        if hops > 0:
            insts = self.ctx.function.instructions
            waits = [i for i in insts if i.op in ("mbarrier", "bar", "barrier") and (s := self.site(i)) is not None
                     and s.waits]
            for k2 in self.ctx.threads.classes:
                if k2 is ka or k2 is kb:
                    continue
                for w in waits:
                    if not self.executes(k2, w):
                        continue
                    then = self.all_happen_before((w,), k2, b, kb, hops - 1)
                    if then is False or (verdict is True and then is not True):
                        continue
                    head = self._direct(group, ka, w, k2, completion)
                    if head is False or (verdict is True and head is not True):
                        continue
                    via = self.ordering(group, ka, w, k2, completion=completion).waited
                    rest = self.chain((w,), k2, b, kb, completion=False, hops=hops - 1)
                    if not via or not rest.hops:
                        continue  # a hop through no barrier instance names no chain
                    hop = self._hop(group, ka, w, k2, via, completion)
                    return Chain(verdict, (hop,) + rest.hops, None, first.released, first.waited)
        if direct is None and first.waited:  # undecided: the instances waited on, the chain not confirmed
            return Chain(None, (self._hop(group, ka, b, kb, first.waited, completion),), None, first.released,
                         first.waited)
        return Chain(verdict, (), None, first.released, first.waited)

    def _hop(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction, kb: "WarpClass",
             waited: tuple[BarrierKey, ...], completion: bool) -> Hop:
        """The ``Hop`` from ``group`` (run by ``ka``) to ``b`` (run by ``kb``), ordered directly, through the
        instances of ``waited`` whose phase counts order them (``_phase_orders``; all of ``waited`` when none does
        alone, e.g. only paths that agree on their facts are ordered): the sites of ``ka`` arriving on them that a
        path from an instruction of ``group`` reaches (commits only for ``completion``), and those of ``kb``
        waiting on them from which a path reaches ``b`` (``b`` itself when it waits on one)."""
        keys = tuple(k for k in waited if self._phase_orders(group, ka, b, kb, k)) or waited
        rel: list[Instruction] = []
        wai: list[Instruction] = []
        for i, s in self._sited:
            if not any(s.key.may_alias(k) for k in keys):
                continue
            if s.arrives and (not completion or i.family == "tcgen05.commit") and self.executes(ka, i) \
                    and any(can_reach(self.ctx, g, i) for g in group):
                rel.append(i)
            if s.waits and self.executes(kb, i) and (i is b or can_reach(self.ctx, i, b)):
                wai.append(i)
        return Hop(ka, kb, keys, tuple(rel), tuple(wai), b)

    def _phase_orders(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction, kb: "WarpClass",
                      key: BarrierKey) -> bool:
        """Whether the phase counts of ``key`` alone order ``group`` before ``b`` on every path, the facts of the
        paths aside (``_direct``'s test, taken over all paths at once): ``kb`` has waited on it at least once more
        before ``b`` than ``ka`` had arrived on it at the latest of ``group`` (either count ``MANY``: a loop), or
        the key is not exact and ``kb`` waits on it (a documented limit of the model).  A ``__syncthreads`` both
        classes passed before ``group`` waits for an earlier phase and does not order it."""
        sb = self.site(b)
        done = 1 if sb is not None and sb.waits and sb.key.may_alias(key) else 0
        waits = self._count(kb, key).waits.get(b.index, {})
        if not waits:
            return False
        m = min(min(waits.values()) + done, MANY)
        if not key.exact:
            return m > 0
        n = max((c for g in group for c in self._count(ka, key).arrivals.get(g.index, {}).values()), default=0)
        return m > 0 and (n >= MANY or m >= MANY or n + 1 <= m)

    def since_latest_wait(self, klass: "WarpClass", inst: Instruction,
                          events: frozenset[int]) -> frozenset[tuple[Instruction, ...]]:
        """What the thread of ``klass`` has done, among the instructions ``events`` (by index), on its paths to
        ``inst`` since its latest wait (an instruction whose ``site`` waits: ``mbarrier.try_wait``/``test_wait``
        whose result is tested, ``bar.sync``/``barrier.sync``/``bar.red``, ``barrier.cluster.wait``), that wait
        included when it is one of ``events``: one tuple per distinct path state, in program order (a repeat of
        the latest event is not added again; the latest ``_MAX_ROUND`` are kept).  These are the events that
        happen before ``inst`` in the thread's current round, the ones a release at ``inst`` publishes (PTX ISA
        §8.7: a release orders the thread's earlier memory operations; §9.7.13.15.13 ``mbarrier.arrive``): TM309's
        question "which writes does this remote arrive publish".  Empty when ``klass`` does not reach ``inst``."""
        memo_key = (id(klass), events)
        hit = self._rounds.get(memo_key)
        if hit is None or hit[0] is not klass:
            seen: dict[int, set[tuple[int, ...]]] = {}
            insts = self.ctx.function.instructions

            def transfer(prop: tuple[int, ...], i: Instruction) -> tuple[int, ...]:
                s = self.site(i)
                if s is not None and s.waits:
                    prop = ()
                if i.index in events and (not prop or prop[-1] != i.index):
                    prop = (prop + (i.index,))[-_MAX_ROUND:]
                return prop

            def observe(_k: "WarpClass", prop: Any, i: Instruction, _facts: Facts) -> None:  # prop: tuple[int, ...]
                seen.setdefault(i.index, set()).add(prop)

            self.ctx.simulate(transfer, (), observe, classes=[klass],
                              relevant=lambda i: i.index in events or self._relevant(i))
            table = {i: frozenset(tuple(insts[j] for j in t) for t in ts) for i, ts in seen.items()}
            hit = self._rounds[memo_key] = (klass, table)
        return hit[1].get(inst.index, frozenset())

    @cached_property
    def _rounds(self) -> dict[tuple[int, frozenset[int]],
                              tuple["WarpClass", dict[int, frozenset[tuple[Instruction, ...]]]]]:
        """``since_latest_wait``'s answers: per (class, events), per observed instruction, the rounds reaching it."""
        return {}

    # ---- the phase parity of a wait in a loop (issue 24: per-stage phases) -------------------------------------

    def wait_parity(self, inst: Instruction) -> "PhaseParity":
        """Whether the ``mbarrier.try_wait.parity`` / ``test_wait.parity`` ``inst`` names, at each of its executions
        in its loop, the parity of the phase it must wait for (``PhaseParity``).

        PTX ISA §9.7.13.15.16: the parity operand names the current phase or the one before it; a wait for the one
        before it (complete) returns at once.  A thread that waits on mbarrier ``X`` for the ``k``-th time
        (``k`` = 0, 1, …, counted per barrier address; a second wait for the same parity in one iteration of the loop
        is the same phase again, not counted) has seen phases 0 … k-1 of ``X`` complete, so it must name
        parity ``k & 1``; ``(k + 1) & 1`` names phase ``k - 1`` (for ``k`` = 0 the phase before a freshly
        initialised barrier's phase 0, complete as well) and returns at once whenever phase ``k`` has not completed
        yet: it orders nothing after the arrivals of phase ``k``.  A stage ring (stage ``s`` = ``(s + 1) % n`` or
        ``t % n``, barrier ``base + 8 * s``, phase bit flipped on each wrap or ``(t / n) & 1``) gives every stage its
        own count.

        Decided by running the outermost loop that contains ``inst`` (a spin loop around the wait itself does not
        count) concretely from its header (``_unrolled_parities``): the loop-carried registers start at their
        constant values from before the loop, a wait's own result is taken as success, and a loop-exit test on a
        value not known (a tile count from a kernel parameter) is taken as staying in the loop, so a verdict False
        is for a trip count of at least ``PhaseParity.iteration + 1``.  Undecided (None) when an address or parity
        the wait needs is not a known constant, a branch inside the loop depends on an unknown value, the thread
        itself arrives on a barrier it waits on in the loop, or a wait on the same barrier variable can precede
        the loop (its phases would have to be counted too)."""
        loop = self._parity_loop(inst)
        if loop is None:
            return PhaseParity(inst, None)
        table = self._parity_tables.get(loop)
        if table is None:
            table = self._parity_tables[loop] = self._unrolled_parities(loop)
        return table.get(inst.index) or PhaseParity(inst, None)

    def completion_ordering(self, group: tuple[Instruction, ...], ka: "WarpClass", b: Instruction,
                            kb: "WarpClass") -> Ordering:
        """Whether the completion of the asynchronous tcgen05 operations ``group`` (an MMA or cp of ``ka``) is
        ordered before ``b`` (a load of ``kb`` that reads what they wrote): ``ordering(group, ka, b, kb,
        completion=True, tied=True, phases=False)`` (a ``tcgen05.commit`` after the latest of ``group``, its
        mbarrier phase, a wait of ``kb`` before ``b``), with the waits' parities judged per stage
        (``wait_parity``): when ``b`` lies in a loop and every wait of ``kb`` in that loop before ``b`` on a barrier
        the commit may arrive on names, at some iteration, the phase before the one it must wait for, that wait
        returns at once and the answer is not ordered (``Ordering.missing`` ``"parity"``, ``Ordering.parity`` the
        first such wait).  The loop's waits decide only when each of them is judged; one undecided leaves the
        answer as ``ordering`` gives it."""
        why = self.ordering(group, ka, b, kb, completion=True, tied=True, phases=False)
        if why.verdict is not True or not why.released or not on_cycle(self.ctx, b):
            return why
        waits = [i for i, s in self._sited if s.waits and i.op == "mbarrier" and self.executes(kb, i)
                 and any(s.key.may_alias(k) for k in why.released)
                 and can_reach(self.ctx, i, b) and can_reach(self.ctx, b, i)]
        if not waits:
            return why
        judged = [self.wait_parity(w) for w in waits]
        if any(p.verdict is not False for p in judged):
            return why
        return Ordering(False, why.released, why.waited, "parity", judged[0])

    @cached_property
    def _parity_tables(self) -> dict[frozenset[Node], dict[int, "PhaseParity"]]:
        """``wait_parity``'s answers per loop (its blocks): one concrete run per loop."""
        return {}

    def _parity_loop(self, inst: Instruction) -> frozenset[Node] | None:
        """The outermost natural loop containing ``inst`` that is more than a spin loop (every instruction of it an
        mbarrier wait or a branch), or None."""
        blk = self.ctx.cfg.block_of[inst.index]
        blocks = self.ctx.cfg.blocks
        best: frozenset[Node] | None = None
        for body in natural_loops(self.ctx):
            if blk not in body or (best is not None and len(body) <= len(best)):
                continue
            if all(i.op == "bra" or (i.op == "mbarrier" and len(i.parts) > 1 and i.parts[1].endswith("_wait"))
                   for n in body if isinstance(n, int) for i in blocks[n].instructions):
                continue
            best = body
        return best

    def _unrolled_parities(self, body: frozenset[Node]) -> dict[int, "PhaseParity"]:
        """Run loop ``body`` concretely from its header (``wait_parity``): every parity wait met, by index."""
        cfg, values, ctx = self.ctx.cfg, self.ctx.values, self.ctx
        g = cfg.graph
        heads = [n for n in body if any(p not in body for p in g.predecessors(n))]
        if len(heads) != 1 or not isinstance(heads[0], int):
            return {}
        head = heads[0]
        first = cfg.blocks[head].instructions[0]
        run = _ConcreteRun(values, cfg.block_of, body)
        n: Node = head
        iteration = 0
        steps = 0
        while steps < _PARITY_STEPS and iteration < _PARITY_ROUNDS:
            if not isinstance(n, int) or n not in body:
                break
            nxt: Node | None = None
            for i in cfg.blocks[n].instructions:
                steps += 1
                if i.op == "bra":
                    nxt = run.branch(i, [(s, g[n][s].get("cond")) for s in g.successors(n)])
                    break
                if i.op in ("ret", "exit", "trap", "brx", "call"):
                    nxt = None
                    break
                run.step(i, iteration)
            else:
                succs = list(g.successors(n))
                nxt = succs[0] if len(succs) == 1 else None
            if nxt is None:
                break
            if nxt == head:
                iteration += 1
            n = nxt
        firsts = self._first_waits.setdefault(body, {})  # ``_first_zero_wait``: each wait's first execution
        for w in run.waits:
            firsts.setdefault(w.inst.index, w)
        out: dict[int, PhaseParity] = {}
        # a variable the thread arrives on in the loop, or waits on before it, is not counted from 0 here
        blocked = set(run.arrived)
        for i, s in self._sited:
            if s.waits and s.key.kind == "mbar" and cfg.block_of[i.index] not in body and can_reach(ctx, i, first):
                if s.key.ident is None:
                    return {}
                blocked.add(s.key.ident[0])
        for w in run.waits:
            got = out.get(w.inst.index)
            if got is not None and got.verdict is not True:
                continue
            if w.barrier is None or w.parity is None or None in blocked or w.barrier[0] in blocked:
                out[w.inst.index] = PhaseParity(w.inst, None)
            elif (w.parity & 1) != (w.completed & 1):
                out[w.inst.index] = PhaseParity(w.inst, False, w.iteration, w.barrier, w.completed, w.parity)
            elif got is None:
                out[w.inst.index] = PhaseParity(w.inst, True)
        if run.aborted:  # the rest of the loop was not run: only a wrong parity found so far is a verdict
            out = {k: (p if p.verdict is False else PhaseParity(p.wait, None)) for k, p in out.items()}
        return out

    def own_completion(self, klass: "WarpClass", ops: tuple[Instruction, ...], b: Instruction,
                       any_wait: bool = False) -> Ordering:
        """TM304's question when one thread issues the asynchronous tcgen05 operations ``ops`` (an MMA or cp) and
        then reads what they wrote with ``b`` (a tcgen05.ld): is the operations' completion ordered before ``b`` on the paths of
        ``klass`` — a ``tcgen05.commit`` after the latest of ``ops`` (it tracks every earlier asynchronous tcgen05
        operation of the thread, PTX ISA §9.7.16.8.4), then a wait on the mbarrier it arrives on (§9.7.13.15.16)?
        The chain of ``completion_ordering`` within one thread, on the class's feasible paths (``simulate``: a wait
        skipped only under a branch correlated with the MMA's own is on no path).

        ``Ordering.verdict``: True (every path through ``ops`` that reaches ``b`` completed them), False (none
        did), None (no path through ``ops`` reaches ``b``, or some complete and others do not: the paths are then
        chosen by the thread's own data, such as a tile count of zero, and the model does not decide).
        ``missing`` for False names the edge the paths lack, in this order of precedence: ``"release"`` (no
        commit after the operation), ``"wait"`` (a commit, but no wait at all before ``b``: the wait comes after
        the load, or there is none) or ``"barrier"`` (waits, but none on the commit's barrier).  ``released``: the
        commit barriers of those paths; ``waited``: the barriers they waited on instead.

        ``any_wait``: a wait on any mbarrier completes (for a load whose columns are not known, which may not read
        what ``ops`` wrote at all: only a path with no wait after the operation is then reported)."""
        memo_key = (id(klass), tuple(o.index for o in ops), any_wait)
        hit = self._own_paths.get(memo_key)
        if hit is None or hit[0] is not klass:
            hit = self._own_paths[memo_key] = (klass, self._own_states(klass, ops, any_wait))
        seen = hit[1].get(b.index, set())
        pending = [p for p in seen if not p.done]
        if not seen or (pending and len(pending) < len(seen)):
            return Ordering(None)
        if not pending:
            return Ordering(True)
        released = self._in_order(frozenset(k for p in pending for k in p.committed))
        waited = self._in_order(frozenset(k for p in pending for k in p.waited))
        if any(not p.committed for p in pending):
            missing = "release"
        elif any(not p.waited for p in pending):
            missing = "wait"
        else:
            missing = "barrier"
        return Ordering(False, released, waited, missing)

    @cached_property
    def _own_paths(self) -> dict[tuple[Any, ...], tuple["WarpClass", dict[int, set["_OwnPath"]]]]:
        """``own_completion``'s path states per question (class, operations, ``any_wait``), by instruction."""
        return {}

    def _own_states(self, klass: "WarpClass", ops: tuple[Instruction, ...],
                    any_wait: bool) -> dict[int, set["_OwnPath"]]:
        """The ``_OwnPath`` states of the paths of ``klass`` through ``ops`` at each observed instruction (one
        simulation for every load asked about)."""
        want = {o.index for o in ops}
        start = _OwnPath(frozenset(), frozenset(), False)
        seen: dict[int, set[_OwnPath]] = {}

        def transfer(prop: _OwnPath | None, i: Instruction) -> _OwnPath | None:
            if i.index in want:
                return start
            if prop is None or prop.done:
                return prop
            s = self.site(i)
            if s is None:
                return prop
            if i.family == "tcgen05.commit":
                return _OwnPath(prop.committed | {s.key}, prop.waited, False)
            if s.waits and i.op == "mbarrier":
                if any_wait or any(s.key.may_alias(k) for k in prop.committed):
                    return _OwnPath(prop.committed, prop.waited, True)
                return _OwnPath(prop.committed, prop.waited | {s.key}, False)
            return prop

        def observe(_k: "WarpClass", prop: Any, i: Instruction, _facts: Facts) -> None:
            if prop is not None and i.family == "tcgen05.ld":
                seen.setdefault(i.index, set()).add(prop)

        relevant = lambda i: i.index in want or self._relevant(i)  # noqa: E731
        self.ctx.simulate(transfer, None, observe, classes=[klass], relevant=relevant)
        return seen


    def pending_at(self, inst: Instruction, kind: str, klass: "WarpClass | None" = None) -> "PendingAt":
        """The ``tcgen05.ld`` (``kind`` "ld") or ``tcgen05.st`` ("st") operations that the thread executing ``inst``
        issued earlier and that may still be in flight when it executes ``inst``: on some feasible path of the warp
        class (``klass``, or every class that executes ``inst``) from the operation to ``inst``, no
        ``tcgen05.wait::<kind>`` of that thread executed in between (PTX ISA tcgen05.wait, ``#tcgen05-instructions-tcgen05-wait``: a wait
        completes every prior tcgen05.ld / tcgen05.st *issued by the executing thread*; reference §3.1).

        Per path of the class (``simulate``): a wait on one path only leaves the operation pending on the others; a
        guarded wait completes only on the paths where its guard holds (correlated with the operation's own guard
        by the path facts); a wait in another warp class completes nothing of this one; a load in a loop with its
        wait after the loop is pending inside the loop and complete after it.  Reading a load's result registers
        does not complete it (§9.7.16.6.4.5: the register dependency orders the value, not the TMEM read; an
        overwrite, hand-over or dealloc has no data dependence on it): ``Outstanding.read`` only records that some
        path read them since the issue (the lanes that took a guarded use, e.g. lanes 0-15, and not the others).

        Answered for the instructions the simulation observes: tcgen05 instructions, barrier and mbarrier
        instructions, ``ret`` / ``exit``, and readers of load results and of their register copies; another instruction gets an
        empty answer."""
        classes = [klass] if klass is not None else self.ctx.threads.classes  # a class that never runs ``inst``
        # observed nothing there
        merged: dict[int, bool] = {}
        for k in classes:
            for op, read in self._pending_table(k, kind).get(inst.index, {}).items():
                merged[op] = merged.get(op, False) or read
        insts = self.ctx.function.instructions
        fam = f"tcgen05.{kind}"
        return PendingAt(inst, kind, tuple(Outstanding(insts[o], merged[o]) for o in sorted(merged)
                                           if insts[o].family == fam),
                         tuple(insts[o] for o in sorted(merged) if insts[o].family != fam))

    def completed_before(self, op: Instruction, ka: "WarpClass", b: Instruction, kb: "WarpClass") -> bool | None:
        """Whether the tcgen05.ld / tcgen05.st ``op`` that class ``ka`` issues has completed before ``b`` (class
        ``kb``, another thread) executes: some ``tcgen05.wait::ld`` / ``wait::st`` of ``ka`` at which ``op`` may be
        pending (``pending_at``) happens before ``b`` (``must_happen_before``).  A barrier that orders ``op``'s issue
        before ``b`` does not complete it (PTX ISA tcgen05.wait, ``#tcgen05-instructions-tcgen05-wait``: only the
        issuing thread's wait does; reference §3.1).  False: ``op`` is ordered before ``b`` but no completing wait
        is; None: not even ``op``'s issue is ordered before ``b`` (the model does not decide)."""
        kind = "ld" if op.family == "tcgen05.ld" else "st"
        wait = f"tcgen05.wait::{kind}"
        table = self._pending_table(ka, kind)
        waits = [i for i in self.ctx.function.instructions
                 if i.family == wait and op.index in table.get(i.index, {})]
        if any(self.must_happen_before(w, ka, b, kb) for w in waits):
            return True
        return False if self.must_happen_before(op, ka, b, kb) else None

    def _pending_table(self, klass: "WarpClass", kind: str) -> dict[int, dict[int, bool]]:
        """``pending_at``'s table for one class: ``{instruction index: {op index: read on some path}}`` (one
        simulation per class and kind).  A path's state is the frozenset of ``(op index, read)`` pairs in flight (a
        register copy of a load result, made while a load is in flight, is such an entry too: ``PendingAt.copies``)."""
        hit = self._pending.get((id(klass), kind))
        if hit is not None and hit[0] is klass:
            return hit[1]
        insts = self.ctx.function.instructions
        fam_op, wait = f"tcgen05.{kind}", f"tcgen05.wait::{kind}"
        ops = frozenset(i.index for i in insts if i.family == fam_op)
        readers: dict[int, frozenset[int]] = {}
        renamed: set[int] = set()
        copies: frozenset[int] = frozenset()
        if kind == "ld":
            got: dict[int, set[int]] = {}
            va = self.ctx.values
            for i in insts:
                if i.index in ops:
                    for r in defined_regs(i):
                        for u in va.uses_of(i.index, r.name):
                            got.setdefault(u, set()).add(i.index)
            readers = {u: frozenset(v) for u, v in got.items()}
            # the readers of renames of the results too (observed only: ``_ld_uses_before_wait``'s question)
            stack = [(u, insts[u].operands[0]) for u in readers if is_register_copy(insts[u])]
            while stack:
                d, dst = stack.pop()
                assert isinstance(dst, Reg)
                for u in va.uses_of(d, dst.name):
                    if u not in readers and u not in renamed:
                        renamed.add(u)
                        if is_register_copy(insts[u]):
                            stack.append((u, insts[u].operands[0]))
            copies = frozenset(u for u in (*readers, *renamed) if is_register_copy(insts[u]))
        table: dict[int, dict[int, bool]] = {}
        _State = frozenset[tuple[int, bool]]
        empty: _State = frozenset()

        def transfer(prop: _State, i: Instruction) -> _State:
            if i.family == wait:
                return empty
            read = readers.get(i.index)
            if read and prop:
                prop = frozenset((o, r or o in read) for o, r in prop)
            if i.index in ops or (prop and i.index in copies):
                prop = prop | {(i.index, False)}
            return prop

        def observe(_k: "WarpClass", prop: Any, i: Instruction, _facts: Facts) -> None:  # prop: _State
            if prop:
                at = table.setdefault(i.index, {})
                for o, r in prop:
                    at[o] = at.get(o, False) or r

        def relevant(i: Instruction) -> bool:
            return i.op in ("tcgen05", "bar", "barrier", "mbarrier", "ret", "exit") or i.index in readers \
                or i.index in renamed

        if ops and not self._runs_none_of(klass, ops):  # else the property stays empty: ``_runs_none_of``
            self.ctx.simulate(transfer, empty, observe, classes=[klass], relevant=relevant)
        self._pending[(id(klass), kind)] = (klass, table)
        return table


@dataclass(frozen=True, slots=True)
class Outstanding:
    """A tcgen05.ld / tcgen05.st that may still be in flight (``SyncModel.pending_at``): ``op``, and ``read``:
    whether some path to the asking instruction read its destination registers since its issue (always False for
    a store)."""

    op: Instruction
    read: bool


@dataclass(frozen=True, slots=True)
class PendingAt:
    """``SyncModel.pending_at``'s answer: at ``at``, the ``kind`` ("ld" / "st") operations of the executing thread
    not completed by its ``tcgen05.wait::<kind>`` on some path (``ops``, by program order; empty: all complete), and
    (ld) the register copies of in-flight results made since the latest wait (``copies``)."""

    at: Instruction
    kind: str
    ops: tuple[Outstanding, ...]
    #: register copies (``is_register_copy``) of load results made while some load was pending and with no
    #: ``tcgen05.wait::ld`` since, on some path: a value copied before the wait is still the in-flight one
    copies: tuple[Instruction, ...] = ()


@dataclass(frozen=True, slots=True)
class _OwnPath:
    """``SyncModel.own_completion``'s state of a path since the thread's latest asynchronous operation of interest:
    the barriers it committed to since, those it waited on since (none of them committed), and whether a wait on a
    committed barrier completed the operations."""

    committed: frozenset[BarrierKey]
    waited: frozenset[BarrierKey]
    done: bool

#: Iterations of a loop ``SyncModel.wait_parity`` runs: enough for two rounds of a ring of 8 stages.
_PARITY_ROUNDS = 16

#: Instructions ``SyncModel.wait_parity`` executes per loop before it stops (a large body: fewer iterations).
_PARITY_STEPS = 20_000


#: The comparison that is true exactly when ``op`` is false (a fact ``a ne b`` is ``a eq b`` of the other value).
_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}


def _mentions_election(v: object, depth: int = 0) -> bool:
    """Whether the fact key or thread expression ``v`` reads an ``elect.sync`` predicate (``("elect", ...)``)."""
    if not isinstance(v, tuple) or not v or depth > 12:
        return False
    if v[0] == "elect":
        return True
    return any(_mentions_election(x, depth + 1) for x in v[1:])


def _fact_value(key: Any, known: dict[Any, bool]) -> bool | None:
    """The value of the fact ``key`` that the facts ``known`` (key → value) decide: the key itself, its negated
    comparison (``cmp``, or a ``tid`` comparison, with the complementary operator), or a ``por`` / ``pand`` of
    parts they decide; None when undecided."""
    got = known.get(key)
    if got is not None:
        return got
    if isinstance(key, tuple) and key:
        if type(key) is POr or type(key) is PAnd:
            a, b = _fact_value(key.p, known), _fact_value(key.q, known)
            if type(key) is POr:
                return True if True in (a, b) else False if a is False and b is False else None
            return False if False in (a, b) else True if a is True and b is True else None
        if type(key) is Cmp and key.cmp in _NEGATED:
            other = known.get(Cmp("cmp", _NEGATED[key.cmp], key.a, key.b))
            return None if other is None else not other
        if type(key) is Tid and len(key.expr) == 4 and key.expr[0] == "cmp" and key.expr[1] in _NEGATED:
            other = known.get(Tid("tid", ("cmp", _NEGATED[key.expr[1]]) + key.expr[2:]))
            return None if other is None else not other
    return None


@dataclass(frozen=True, slots=True)
class JointChoice:
    """``SyncModel.joint_choice``'s answer: ``paths`` (per warp class, the instruction and path facts of one
    feasible execution, the fixed paths first) or None; ``decided`` False when the search stopped at its budget
    before it found one (no answer either way)."""

    paths: tuple[tuple["WarpClass", Instruction, Facts], ...] | None
    decided: bool


@dataclass(frozen=True, slots=True)
class NeededArrival:
    """``SyncModel.arrivals_needed``'s answer for one mbarrier: ``barrier`` (waited on for parity 0 before the
    instruction asked about) and ``phase``, what completes its phase 0 (``SyncModel.phase_arrivals``): one of its
    sites (an ``mbarrier.arrive*``, a ``cp.async.mbarrier.arrive``, a ``tcgen05.commit``, local, remote or
    multicast, or a call) ran before the wait returned (PTX ISA §9.7.13.15.1-2), ``phase.needed`` arrivals in all
    when the expected count is known."""

    barrier: BarrierKey
    phase: "PhaseArrivals"

    @property
    def sites(self) -> tuple[Instruction, ...]:
        """The instructions of ``phase.sites``, in program order."""
        return tuple(a.inst for a in self.phase.sites)


@dataclass(frozen=True, slots=True)
class ArriveSite:
    """One event that may act on the pending counts of an mbarrier's phase (``SyncModel.arrive_sites``).

    ``kind``: ``"local"`` (``mbarrier.arrive*`` on this CTA's barrier), ``"remote"`` (through ``mapa``: a peer
    CTA's, PTX ISA §9.7.9.22), ``"commit"`` / ``"multicast"`` (``tcgen05.commit``, without / with
    ``.multicast::cluster``, §9.7.16.8.4), ``"cp.async"`` (``cp.async.mbarrier.arrive``, §9.7.9.25),
    ``"expect_tx"`` / ``"complete_tx"`` (the transaction count only, §9.7.13.15.8-9; a bulk copy's
    ``complete_tx`` too) or ``"call"`` (a callee, not seen).  ``lands_on``: the barrier it acts on, as an offset in
    whichever CTA (a remote arrive's ``mapa`` source; unknown for a call).  ``count``: arrivals per executing
    thread (units: arrivals; 0 for the transaction-count kinds; a ``cp.async.mbarrier.arrive`` without
    ``.noinc`` nets 0), None when not a constant.  ``tx``: it changes the transaction count too
    (``arrive.expect_tx``).  ``op``: the event's operation (``SyncEvent.op``; ``"call"``)."""

    inst: Instruction
    kind: str
    lands_on: BarrierKey
    count: int | None
    tx: bool = False
    op: str = ""

    @property
    def arrives(self) -> bool:
        """Whether it may arrive (every kind but the transaction-count ones)."""
        return self.kind not in ("expect_tx", "complete_tx")


@dataclass(frozen=True, slots=True)
class PhaseArrivals:
    """``SyncModel.phase_arrivals``: what completes phase ``phase`` of the mbarrier ``barrier``.  ``sites``: the
    arrive sites (``ArriveSite``, not the transaction-count ones) that may contribute, any class, any CTA;
    ``local``: every one of them is an arrival of this CTA on exactly ``barrier`` (no remote, multicast, call or
    aliased address: ``sites`` are then all the arrivals there are); ``needed``: the arrivals phases 0 …
    ``phase`` take together (``(phase + 1)`` × the expected count, PTX ISA §9.7.13.15.1-2), None when the
    expected count is not known."""

    barrier: BarrierKey
    phase: int
    sites: tuple[ArriveSite, ...]
    local: bool
    needed: int | None


@dataclass(frozen=True, slots=True)
class PhaseParity:
    """``SyncModel.wait_parity``'s answer for one parity wait.  ``verdict``: True (every execution of the run names
    the phase it must wait for), False (one names the phase before it, which returns at once: PTX ISA
    §9.7.13.15.16), None (undecided).  For False: ``iteration`` (0-based, of the loop), ``barrier`` (the mbarrier
    as (variable, byte offset): the stage), ``completed`` (the waits on that barrier the thread had completed
    before: the phase it must wait for) and ``parity`` (the parity operand's value)."""

    wait: Instruction
    verdict: bool | None
    iteration: int = -1
    barrier: tuple[str, int] | None = None
    completed: int = 0
    parity: int = 0

    def describe(self) -> str:
        """The wrong parity in words, for a rule's message ('' unless ``verdict`` is False)."""
        if self.verdict is not False or self.barrier is None:
            return ""
        name, off = self.barrier
        where = f"{name}+{off}" if off else name
        return (f"the wait at line {self.wait.span.line} names parity {self.parity & 1} on [{where}] in iteration "
                f"{self.iteration} of its loop, its wait number {self.completed + 1} on that barrier, which must name "
                f"parity {self.completed & 1}: it names the phase before, already complete, and returns at once")


@dataclass(frozen=True, slots=True)
class _SymAddr:
    """A concrete shared-memory address in ``_ConcreteRun``: variable ``name`` plus ``offset`` bytes."""

    name: str
    offset: int


#: A concrete value in ``_ConcreteRun``: an integer (the register's bits, as an unsigned 64-bit number: only the
#: low bits of the register's width count), an address, or None (not known).
_Conc = int | _SymAddr | None


@dataclass(frozen=True, slots=True)
class _WaitRun:
    """One execution of a parity wait in ``_ConcreteRun``: the barrier and parity (None: not known), and the
    waits on that barrier the run completed before it."""

    inst: Instruction
    iteration: int
    barrier: tuple[str, int] | None
    parity: int | None
    completed: int


class _ConcreteRun:
    """A concrete execution of one thread through one loop's blocks (``SyncModel.wait_parity``): integer registers
    by name; a register the run has not written has its value from the definitions outside the loop that reach
    its use (``ValueAnalysis``), when they agree on a constant or a symbol address.  Integer arithmetic is
    ``values.fold_op``'s (PTX ISA §9.7.1-9.7.3, §9.7.8: the same folding as the value analysis), plus addresses
    moved or offset by integers; anything else writes unknown values."""

    def __init__(self, values: ValueAnalysis, block_of: list[int], body: frozenset[Node]) -> None:
        self.values = values
        self.block_of = block_of
        self.body = body
        self.regs: dict[str, _Conc] = {}
        self.waits: list[_WaitRun] = []
        self.done: dict[tuple[str, int], int] = {}
        #: per barrier, the iteration and parity of the run's latest wait on it (a second wait on the same phase in
        #: one iteration is not a new phase)
        self.last: dict[tuple[str, int], tuple[int, int]] = {}
        self.arrived: set[str | None] = set()
        self.aborted = False

    def read(self, inst: Instruction, o: object) -> _Conc:
        """The concrete value of operand ``o`` of ``inst``."""
        if type(o) is Imm:
            return o.value & _MASK64
        if type(o) is Sym:
            return _SymAddr(o.name, o.offset)
        if type(o) is NotReg:
            v = self.read(inst, o.reg)
            return (0 if v else 1) if isinstance(v, int) else None
        if type(o) is Address:
            base = self.read(inst, o.base) if o.base is not None else 0
            return _offset(base, o.offset)
        if type(o) is not Reg:
            return None
        if o.name in self.regs:
            return self.regs[o.name]
        if o.name.startswith("%") and "." in o.name:
            return None  # a special register (%tid.x, %ctaid.x): per thread, not known
        got: set[_Conc] = set()
        for d in self.values.reaching_defs(inst, o.name):
            if self.block_of[d] in self.body:
                continue
            dv = self.values.def_value.get((d, o.name))
            if type(dv) is Const and isinstance(dv.value, int):
                got.add(dv.value & _MASK64)
            elif type(dv) is SymAddr and isinstance(dv.offset, int):
                got.add(_SymAddr(dv.name, dv.offset))
            else:
                got.add(None)
        return got.pop() if len(got) == 1 else None

    def guard_holds(self, inst: Instruction) -> bool | None:
        """Whether ``inst``'s guard holds (True with none), None when not known."""
        if inst.guard is None:
            return True
        v = self.read(inst, inst.guard.reg)
        if not isinstance(v, int):
            return None
        return bool(v) != inst.guard.negated

    def branch(self, inst: Instruction, succs: list[tuple[Node, Any]]) -> Node | None:
        """The successor block a ``bra`` goes to (``succs``: each with its edge's ``cond``); an unknown guard
        that leaves the loop on one side stays in it (the loop runs again); otherwise None (the run stops)."""
        if len(succs) == 1:
            return succs[0][0]
        holds = self.guard_holds(inst)
        if holds is None:
            inside = [s for s, _ in succs if s in self.body]
            if len(inside) == 1 and len(succs) == 2:
                return inside[0]
            self.aborted = True
            return None
        for s, cond in succs:
            if cond is not None and cond[1] == holds:
                return s
        self.aborted = True
        return None

    def step(self, inst: Instruction, iteration: int) -> None:
        """Execute ``inst`` (not a branch) in loop iteration ``iteration``."""
        holds = self.guard_holds(inst)
        if holds is False:
            return
        op, parts = inst.op, inst.parts
        if op == "mbarrier" and len(parts) > 1:
            addr = next((o for o in inst.operands if type(o) is Address), None)
            where = self.read(inst, addr) if addr is not None else None
            bar = (where.name, where.offset) if isinstance(where, _SymAddr) and holds else None
            if parts[1].startswith("arrive"):  # under an unknown guard too: it may arrive
                self.arrived.add(where.name if isinstance(where, _SymAddr) else None)
            elif parts[1] in ("try_wait", "test_wait") and "parity" in parts:
                parity = self.read(inst, inst.operands[2]) if len(inst.operands) > 2 else None
                par = parity if isinstance(parity, int) and holds else None
                if bar is not None and par is not None and self.last.get(bar) == (iteration, par & 1):
                    pass  # the same phase again in one iteration: it returns at once, after the phase waited for
                else:
                    done = self.done.get(bar, 0) if bar is not None else 0
                    self.waits.append(_WaitRun(inst, iteration, bar, par, done))
                    if bar is not None:
                        self.done[bar] = done + 1
                        if par is not None:
                            self.last[bar] = (iteration, par & 1)
        elif inst.family == "tcgen05.commit":
            addr = next((o for o in inst.operands if type(o) is Address), None)
            where = self.read(inst, addr) if addr is not None else None
            self.arrived.add(where.name if isinstance(where, _SymAddr) else None)
        defs = defined_regs(inst)
        if not defs:
            return
        out: _Conc = None
        if holds:
            if op == "mbarrier" and len(parts) > 1 and parts[1] in ("try_wait", "test_wait"):
                out = 1  # the wait's own result: the run follows the path on which it succeeded
            else:
                out = self._compute(inst)
        for k, r in enumerate(defs):
            self.regs[r.name] = out if k == 0 else None

    def _compute(self, inst: Instruction) -> _Conc:
        """The value ``inst`` writes to its first destination, or None: an address moved by a ``mov``/``cvt`` or
        offset by an integer ``add``/``sub``, else the integers ``values.fold_op`` computes."""
        op, ops = inst.op, inst.operands
        ty = int_type(inst)
        args = [self.read(inst, o) for o in ops[1:]]
        if ty is not None and len(args) == 1 and op in ("mov", "cvt") and isinstance(args[0], _SymAddr):
            return args[0]
        if ty is not None and len(args) == 2 and op in ("add", "sub"):
            x, y = args
            width = int(ty[1:])
            if isinstance(x, _SymAddr) and isinstance(y, int):
                return _offset(x, _signed(y, width) if op == "add" else -_signed(y, width))
            if isinstance(y, _SymAddr) and isinstance(x, int) and op == "add":
                return _offset(y, _signed(x, width))
        ints = tuple(a for a in args if isinstance(a, int))
        if len(ints) != len(args):
            return None
        r = fold_op(inst.parts, ints)
        return None if r is None else r & _MASK64


#: 64 bits: an immediate's two's complement form.
_MASK64 = (1 << 64) - 1


def _signed(x: int, width: int) -> int:
    """``x`` (unsigned, ``width`` bits) as a two's complement signed integer."""
    x &= (1 << width) - 1
    return x - (1 << width) if width > 1 and x >> (width - 1) else x


def _offset(base: _Conc, k: int) -> _Conc:
    """``base`` plus ``k`` bytes: an address moves, an integer adds (64 bits), an unknown stays unknown."""
    if isinstance(base, _SymAddr):
        return _SymAddr(base.name, base.offset + k)
    if isinstance(base, int):
        return (base + k) & _MASK64
    return None
