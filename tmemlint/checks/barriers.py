"""Issue and mbarrier rules of issue 24: single-thread issue (TM314), peer barriers addressed in the local form
(TM310), arrivals beyond a phase's count (TM311), multicast targets recycled before their phase (TM312), and waits
for a phase that no arrival completes (TM315).

Sources: PTX ISA 9.0 Table 46 (``#tcgen05-ops-execution-granularity``), §9.7.13.15 (``#parallel-synchronization-
and-communication-instructions-mbarrier``), §9.7.9.22 (``mapa``), reference §3.1."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import lru_cache, partial
from typing import TYPE_CHECKING

from tmemlint.analysis.cluster import CTA_IDENTITY_SREGS, PairRoles, mentions_identity
from tmemlint.analysis.control import can_reach, divergent_defs
from tmemlint.analysis.lifecycle import consistent_choice_facts
from tmemlint.analysis.mbarriers import arrive_site, cluster_targets, expected_counts
from tmemlint.analysis.sync import CLUSTER, LOCAL, NEVER_REMOTE, barrier_key, mapa_origin, mbarrier_op
from tmemlint.analysis.paths import BudgetExceeded, PropertySimulation
from tmemlint.analysis.threads import (UNKNOWN_LANES, bounds_disagree, cross_warp_facts, depends_on, is_lane_fact,
                                      lane_counts, lanes_on_path, min_warps_on_path, undecidable_pair)
from tmemlint.analysis.values import TOP, Cmp, Const, ConstSet, Op, Param, PAnd, PNot, POr, SReg
from tmemlint.checks.registry import rule
from tmemlint.ir import Instruction

if TYPE_CHECKING:
    from tmemlint.analysis.sync import BarrierKey
    from tmemlint.analysis.paths import Facts
    from tmemlint.analysis.threads import WarpClass
    from tmemlint.checks.context import FunctionContext

#: tcgen05 instructions with single-thread semantics (PTX ISA Table 46): each thread that executes one issues it.
SINGLE_THREAD = ("tcgen05.mma", "tcgen05.cp", "tcgen05.shift", "tcgen05.commit")


@rule("TM314", "single-issue-guard", "error",
      "a single-thread tcgen05 mma/cp/shift/commit whose guard can hold for more than one thread of a warp")
def single_issue_guard(ctx):
    """PTX ISA 9.0 Table 46 (``#tcgen05-ops-execution-granularity``): ``tcgen05.mma``, ``cp``, ``shift`` and
    ``commit`` are issued by a single thread; executed by several lanes of a warp, each lane issues its own
    operation (32 MMAs into the same accumulator, 32 arrivals of the commit).

    Followed on the paths of each warp class (the happens-before model's per-class fact sets, ``ctx.sync``): at each
    such instruction, the thread predicates of the path and of its own guard (``elect.sync``, ``%tid.x``/``%laneid``
    tests, a role entered by a thread test) are evaluated for the 32 lanes of every warp of the class
    (``threads.lanes_on_path``).  Reported when more than one lane satisfies them on some path.  Nothing is said
    when a path's facts involve a per-thread value the analysis cannot evaluate, when a class has too many paths
    there, or in a ``.func`` (its caller's lane test is not visible)."""

    if not ctx.function.is_entry:
        return
    insts = [i for i in ctx.function.instructions if i.op == "tcgen05" and i.family in SINGLE_THREAD]
    if not insts:
        return
    nonuniform = divergent_defs(ctx)
    for inst in insts:
        worst = None
        for klass in ctx.threads.classes:
            sets = ctx.sync.fact_sets(klass, inst)
            if sets is None:
                continue  # too many paths reach it: not decided
            for facts in sets:
                n = lanes_on_path(klass, facts, nonuniform)
                if n != UNKNOWN_LANES and n > 1 and (worst is None or n > worst[0]):
                    worst = (n, klass)
        if worst is None:
            continue
        n, klass = worst
        what = inst.family.split(".", 1)[1]
        ctx.report("TM314", inst, f"tcgen05.{what} has single-thread semantics, but on some path of {klass!r} up to "
                                  f"{n} lanes of a warp execute it (no elect.sync, lane or thread-index test "
                                  f"confines it to one thread): each lane issues its own {what}")


@rule("TM310", "remote-barrier-local-form", "error",
      "an mbarrier operation in the .shared/.shared::cta form on a peer CTA's barrier address (from mapa)")
def remote_barrier_local_form(ctx):
    """PTX ISA 9.0 §9.7.13.15 (``#parallel-synchronization-and-communication-instructions-mbarrier``) and §5.1.7:
    a ``.shared::cta`` (or ``.shared``) address names the executing CTA's own shared memory; an address from
    ``mapa`` (§9.7.9.22) is in the cluster's window and names a peer CTA's variable.  Only arrive, expect_tx and
    complete_tx may act on a peer's barrier, through ``.shared::cluster`` (or a generic address) with ``_`` as
    destination; init, inval, try_wait, test_wait, pending_count and ``cp.async.mbarrier.arrive`` never may, in
    any form (reference §3.1).

    The barrier operand is followed back through register copies and offset additions (``sync.mapa_origin``)
    on every reaching definition; a ``mapa`` onto ``%cluster_ctarank`` (the CTA itself) does not count."""

    va = ctx.values
    for inst in ctx.function.instructions:
        if inst.op not in ("mbarrier", "cp"):
            continue
        m = mbarrier_op(inst)
        if m is None:
            continue
        never = m.kind in NEVER_REMOTE or m.kind == "cp.async.mbarrier.arrive"
        if not never and m.space != LOCAL:
            continue
        if never and m.space == CLUSTER:
            continue  # not a form ptxas accepts for these operations (reference §4)
        src = mapa_origin(va, inst, m.operand)
        if src is None:
            continue
        related = [(src, "the address of a peer CTA's barrier is made here (mapa)")]
        kind = "mbarrier." + m.kind if m.kind != "cp.async.mbarrier.arrive" else m.kind
        if never:
            ctx.report("TM310", inst, f"{kind} on a peer CTA's barrier (its address comes from mapa at line "
                                      f"{src.span.line}): a wait, init, inval or cp.async arrive acts only on the "
                                      f"executing CTA's own barriers, in any state space", related)
        else:
            ctx.report("TM310", inst, f"{kind} in the .shared::cta state space on a peer CTA's barrier (its address "
                                      f"comes from mapa at line {src.span.line}): the .shared::cta form addresses "
                                      f"this CTA's own window; a remote arrive needs .shared::cluster and `_` as "
                                      f"destination", related)


@rule("TM311", "arrive-count-overflow", "error",
      "more arrivals reach an mbarrier phase than its expected count (a warp-wide arrive on a count-1 barrier)")
def arrive_count_overflow(ctx):
    """PTX ISA 9.0 §9.7.13.15 (``#parallel-synchronization-and-communication-instructions-mbarrier``): a phase
    completes when its pending arrival count reaches zero, and the count is then reset to the expected count
    (``mbarrier.init``); arrivals beyond it count toward the next phases with no wait observing them, which the
    ISA does not allow: phases complete early and the parity can end where it started (reference §3.1).

    Counted for one dynamic execution of each arrive site (``mbarriers.arrive_site``) by one warp class: the
    threads of the class's warps whose path facts reach it (``threads.lane_counts``; the block size declared, else
    one warp), times the arrivals per thread, times the CTAs of the cluster that send to the same peer for a
    ``mapa`` arrive (``cluster.PairRoles.senders``).  Reported when that exceeds the barrier's expected count
    (``mbarriers.expected_counts``: one constant init count, no ``arrive_drop``).  Silent when the count, the
    barrier or the threads cannot be known.  A commit's lanes beyond the first in a warp are TM314's (one root
    cause, one finding)."""

    fn = ctx.function
    if not fn.is_entry:
        return  # a .func's threads are its caller's
    va = ctx.values
    counts = expected_counts(va, fn.instructions)
    if not counts:
        return
    nonuniform = divergent_defs(ctx)
    roles = None
    for inst in fn.instructions:
        if inst.op not in ("mbarrier", "cp", "tcgen05"):
            continue
        site = arrive_site(va, inst)
        if site is None or site.per_thread is None or not site.key.exact or site.key not in counts:
            continue
        expected, init = counts[site.key]
        worst = None
        # the classes that reach the site on a path chosen by no CTA-uniform condition: they all get there, in
        # the same round, so their threads add up (a class that reaches it only under some condition does not)
        together: list = []
        for klass in ctx.threads.classes:
            unconditional = 0
            sets = ctx.sync.fact_sets(klass, inst)
            if sets is None:
                continue
            for facts in sets:
                per_warp = lane_counts(klass, facts, nonuniform)
                if per_warp is None:
                    continue
                if site.commit:
                    per_warp = tuple(min(n, 1) for n in per_warp)
                # every warp of the class when it is known to run, one where the path is a %warpid role's
                threads = sum(per_warp) if min_warps_on_path(klass, facts) > 1 else max(per_warp, default=0)
                ctas = 1
                if site.remote is not None:
                    if roles is None:
                        roles = PairRoles(fn, va)
                    rank = site.remote.operands[2]
                    ctas = roles.senders(facts, va.value(site.remote, rank))
                total = threads * site.per_thread * ctas
                if total > expected and (worst is None or total > worst[0]):
                    worst = (total, klass, threads, ctas)
                if site.remote is None and all(is_lane_fact(k) or k[0] == "regval" for k, _ in facts):
                    unconditional = max(unconditional, threads)
            if unconditional:
                together.append((klass, unconditional))
        if len(together) > 1:
            threads = sum(n for _, n in together)
            total = threads * site.per_thread
            if total > expected and (worst is None or total > worst[0]):
                worst = (total, " and ".join(repr(k) for k, _ in together), threads, 1)
        if worst is None:
            continue
        total, klass, threads, ctas = worst
        who = f"{threads} thread{'s' if threads != 1 else ''} of {klass if isinstance(klass, str) else repr(klass)}"
        if site.per_thread != 1:
            who += f" × {site.per_thread} arrivals each"
        if ctas > 1:
            who += f", in each of {ctas} CTAs of the cluster,"
        name = site.key.ident[0]
        ctx.report("TM311", inst, f"{total} arrivals on mbarrier {name} in one phase ({who} execute this), but it "
                                  f"was initialised with an expected count of {expected} at line {init.span.line}: "
                                  f"the surplus completes the next phases with no wait observing them",
                   [(init, f"expected arrival count {expected}")])


@rule("TM315", "wait-never-completes", "error",
      "an mbarrier wait for a phase that no arrival can complete on some feasible path (the CTA hangs)")
def wait_never_completes(ctx):
    """PTX ISA 9.0 §9.7.13.15.1-2 (phase completion): a phase of an mbarrier completes when its pending arrival
    count reaches zero (and its pending transaction count too); a ``try_wait`` / ``test_wait`` for a phase that
    never completes never succeeds (§9.7.13.15.16), so the waiting warps, and the CTA, hang.

    Asked of the engine (``SyncModel.never_completes``): a wait for phase 0 of an exactly known mbarrier that one
    other warp class alone arrives on, on a path where that class arrives on it nowhere.  The path's facts are
    proved satisfiable where the abstract domains left a branch open (``Feasibility.satisfiable``: "unknown" is
    silent).  One finding per barrier, at its first wait that hangs, with the arrive sites the path skips and the
    other waits as related places.  Silent wherever an arrival may come from a place the engine does not see: a
    copy's ``complete_tx``, a commit, a peer CTA, a callee, an aliased or unknown address, a parity that is not
    constant (see the rule page)."""
    fn = ctx.function
    if not fn.is_entry:
        return  # a .func's threads are its caller's
    sync = ctx.sync
    found: dict = {}  # barrier key -> [hangs]
    for inst in fn.instructions:
        if inst.op != "mbarrier":
            continue
        for klass in ctx.threads.classes:
            if not sync.executes(klass, inst):
                continue
            hang = sync.never_completes(klass, inst)
            if hang is None:
                continue
            if ctx.feasibility.satisfiable(inst, hang.facts) is not True:
                continue
            found.setdefault(hang.key, []).append(hang)
            break
    for key, hangs in found.items():
        first = hangs[0]
        name = key.ident[0] if isinstance(key.ident, tuple) else key.ident
        related = [(a, f"an arrival on {name} that this path of {first.arriver!r} skips") for a in first.skipped]
        if not first.skipped:
            related = []
        related += [(h.wait, f"also waits for phase 0 of {name} ({h.klass!r})") for h in hangs[1:]]
        if first.arriver is None:
            arrives = [i for i in fn.instructions if i.op == "mbarrier" and sync.site(i) is not None
                       and sync.site(i).arrives and sync.site(i).key == key]
            related = [(a, f"arrives on {name}") for a in arrives] + related
            phase = f"phase {first.waited}" + (f" (wait {first.waited + 1} on it on this path)" if first.waited else "")
            ctx.report("TM315", first.wait,
                       f"the wait of {first.klass!r} for {phase} of mbarrier {name}: it was initialised with an "
                       f"expected count of {first.expected}, so {phase.split(' (')[0]} needs "
                       f"{(first.waited + 1) * (first.expected or 0)} arrivals, but at most {first.arrivals} arrival"
                       f"{'s reach' if first.arrivals != 1 else ' reaches'} it on any path (no arrival anywhere "
                       f"completes this phase): the phase never completes and the wait never returns (the CTA hangs)",
                       related, facts=first.facts)
            continue
        what = ("only at the arrive sites below, which this path skips" if first.skipped
                else "nowhere: no arrival anywhere completes this phase")
        ctx.report("TM315", first.wait,
                   f"the wait of {first.klass!r} for phase 0 of mbarrier {name}, which only {first.arriver!r} "
                   f"arrives on, {what}: on this path the phase never completes and the wait never returns (the "
                   f"CTA hangs)",
                   related, facts=first.facts)


@rule("TM312", "commit-target-recycled", "error",
      "an mbarrier a multicast commit or remote arrive targets is invalidated, re-initialised or abandoned by "
      "exit before its CTA waited for it")
def commit_target_recycled(ctx):
    """PTX ISA 9.0 §9.7.16.8.4 (``#tcgen05-instructions-tcgen05-commit``): ``tcgen05.commit …
    .multicast::cluster`` arrives on the barrier at the same offset in every CTA of the mask when the committed
    operations complete, later than its issue; a remote ``mbarrier.arrive`` (§9.7.13.15) acts on the peer's barrier
    when it lands.  A barrier that is invalidated (``mbarrier.inval``), initialised again, or whose CTA has exited
    (its shared memory released) before that arrival is an arrive on an object that no longer exists: undefined
    behaviour, and a cluster barrier after the commit's issue does not cover the commit's completion.

    For each such target barrier, the threads that retire it (an inval, an init that may run after a sending
    instruction, the exits) must have waited on that barrier before, themselves on every path (a simulation per
    warp class), or after a wait of another class on it that the happens-before model (``ctx.sync``) orders
    before them.  A CTA's exit is covered when one class is.  The exit paths that would abandon the barrier are
    chosen jointly (one per exiting class, their facts agreeing with each other and the sender's) and must be able
    to run together: a path that passed a wait for phase 0 of a barrier whose every arrive site lies off the chosen
    paths never got there (``SyncModel.joint_choice``; §9.7.13.15.1-2).  Reported at the inval/init, or at the
    sending instruction for the exits; silent when the model cannot decide (past
    ``_JOINT_BUDGET`` joint choices of exit paths: a TM901 note says so)."""

    fn = ctx.function
    if not fn.is_entry:
        return
    va = ctx.values
    insts = fn.instructions
    targets = cluster_targets(va, insts)
    if not targets:
        return
    exits = [i for i in insts if i.op in ("ret", "exit")]
    for key, senders in sorted(targets.items(), key=lambda kv: kv[1][0].index):
        waits = []
        retire = []
        for inst in insts:
            m = mbarrier_op(inst) if inst.op == "mbarrier" else None
            if m is None or not barrier_key(va, inst, m.operand).may_alias(key):
                continue
            if m.kind in ("try_wait", "test_wait"):
                waits.append(inst)
            elif m.kind == "inval" or (m.kind == "init" and any(can_reach(ctx, s, inst) for s in senders)):
                retire.append(inst)
        watched = {i.index for i in waits + retire + exits}
        remote_only = all(x.op == "mbarrier" for x in senders)
        split = frozenset() if remote_only else _sender_keys(ctx, senders)
        waited_at, unwaited = _waited_before(ctx, key, watched, split)

        def safe(at, kb) -> bool | None:
            """Whether ``kb`` has waited on ``key`` before every execution of ``at`` (or, for remote arrives, which
            take effect when issued, is ordered after every one of them: a cluster barrier after the arrive)."""
            if waited_at.get((id(kb), at.index)) is True:
                return True
            verdict: bool | None = False
            if remote_only:
                answers = [ctx.sync.must_happen_before(x, ka, at, kb) for x in senders
                           for ka in ctx.threads.classes if ctx.sync.executes(ka, x)]
                if answers and all(a is True for a in answers):
                    return True
                if None in answers:
                    verdict = None
            for w in waits:
                for kw in ctx.threads.classes:
                    if not ctx.sync.executes(kw, w):
                        continue
                    r = ctx.sync.must_happen_before(w, kw, at, kb)
                    if r is True:
                        return True
                    if r is None:
                        verdict = None
            return verdict

        name = key.ident[0]
        for inst in retire:
            for kb in ctx.threads.classes:
                if not ctx.sync.executes(kb, inst) or safe(inst, kb) is not False:
                    continue
                what = "invalidated" if inst.parts[1] == "inval" else "initialised again"
                s = senders[0]
                ctx.report("TM312", inst, f"mbarrier {name} is {what} here by {kb!r}, which has not waited on it "
                                          f"since the {s.family if s.op == 'tcgen05' else 'remote arrive'} at line "
                                          f"{s.span.line} that arrives on it from another CTA: that arrival can "
                                          f"land after this", [(s, "arrives on this barrier in every CTA it targets")])
                break
        # the exits: the CTA a sender targets is gone once all its threads exit; it is covered when some class
        # waits on the barrier before its exit on every path that can run alongside the sender's (uniform facts
        # that agree, the CTA's identity left out: the sender runs in another CTA)
        if remote_only:
            continue  # a remote arrive takes effect when issued: a cluster barrier after it covers it (TM111's)
        for s in senders:
            hit = _abandoning_path(ctx, s, exits, unwaited)
            if hit is not None:
                ctx.report("TM312", s, f"the arrival of this multicast commit on mbarrier {name} can land after a CTA "
                                       f"it targets has exited: on a path that runs with this one, no warp waits on "
                                       f"{name} before its exit (a cluster barrier after the commit's issue does not "
                                       f"cover its completion)", [(hit, "exits here without waiting on it")])
                break


#: Joint choices of exit paths (one per exiting warp class) ``_abandoning_path`` has the engine try per sender path
#: (``SyncModel.joint_choice``); past them that path is undecided: no finding, a TM901 note (``ctx.bounded``).
_JOINT_BUDGET = 256


def _abandoning_path(ctx, sender, exits, unwaited: dict):
    """An exit instruction such that, on a path of ``sender``'s class through it, every warp class that exits has
    a path to an exit that did not wait (``unwaited``: ``(id(class), exit index) → fact sets``) and whose uniform
    facts, other than the CTA's identity, agree with the sender's and with each other's; None when there is none
    or it cannot be told.

    The chosen paths must also be feasible together as far as the engine's waits tell (``SyncModel.joint_choice``,
    ``joint_paths_feasible``): an exit path that passed a wait for phase 0 of a barrier whose arrive
    sites all lie off the joint path never gets there (PTX ISA §9.7.13.15.1-2; FA4's backward kernel with a zero
    trip count: the MMA warp waits on a barrier only the consumers' skipped loop arrives on).  Kernels are taken to
    terminate: the sender's own thread must reach an exit as well, on a path that extends the sender's (in its own
    CTA: the facts of the CTA's identity kept), so an execution in which it waits forever is not one that abandons
    the barrier.  Past ``_JOINT_BUDGET`` combinations a sender path is undecided: it gives no witness (a pairwise one
    would be a guess), and when no other path gives one the rule says so (TM901, through ``ctx.bounded``)."""

    per_thread = divergent_defs(ctx)
    pair = _targets_one_pair(ctx, sender)

    def strip(f):
        return _cluster_uniform(f, per_thread, pair, ctx.feasibility.pair_invariant)

    def agree(fa, fb) -> bool:
        return consistent_choice_facts([fa, fb]) and not bounds_disagree(fa, fb) and not undecidable_pair(fa, fb)

    undecided = False
    for ka in ctx.threads.classes:
        sets = ctx.sync.fact_sets(ka, sender)
        if not sets:
            continue
        for raw in sets:
            fa = strip(raw)
            options = []  # per exiting class, its (exit, facts) paths whose stripped facts agree with the sender's
            for kb in ctx.threads.classes:
                mine = [e for e in exits if ctx.sync.executes(kb, e)]
                if not mine:
                    continue
                found = [(e, fb) for e in mine for fb in sorted(unwaited.get((id(kb), e.index), ()), key=repr)
                         if agree(fa, strip(fb))]
                if not found:
                    options = None
                    break
                options.append((kb, tuple(found)))
            if not options:
                continue
            # kernels terminate: the sender's own thread goes on to an exit, on a path that extends its own
            own = tuple((e, fe) for e in exits if ctx.sync.executes(ka, e) for fe in ctx.sync.wait_paths(ka, e, raw))
            got = ctx.sync.joint_choice(((ka, sender, raw),), tuple(options) + (((ka, own),) if own else ()),
                                        strip, _JOINT_BUDGET)
            if got.paths is not None:
                return got.paths[1][1]
            if not got.decided:
                undecided = True  # no witness either way: not a finding (another sender path may still give one)
    if undecided:
        ctx.bounded.append(f"TM312: the exit paths that may run with the multicast commit at line {sender.span.line} "
                           f"were not decided within {_JOINT_BUDGET} joint choices (TM312 not reported for it)")
    return None


def _cluster_uniform(facts: Facts, per_thread: frozenset[int], pair: bool = False,
                     invariant: Callable[[object], bool | None] | None = None) -> Facts:
    """The facts of ``facts`` that hold for every CTA of the cluster: no thread predicates, register values of the
    path, values that differ per thread (``per_thread``: ``divergent_defs``; a spin loop's try_wait result), or
    the identity of the CTA within its cluster (``%clusterid``, the cluster's own, is the same in the sender's CTA
    and its targets: a persistent tile loop over ``clusterid.x`` runs as often in both).  ``pair``: the sender's
    targets are one CTA pair (``_targets_one_pair``), so a fact computed from ``%ctaid`` without its bit 0
    (``_pair_bits``: FA4's n-block ``(ctaid.x << 7) & -256``) is the same in both and is kept, and so is one that
    ``invariant`` (``Feasibility.pair_invariant``) proves has the same truth value in both (DeepGEMM's persistent
    tile loop ``ctaid.x < ceil(M/128)*32``: an even bound, the pair's ``ctaid.x`` being ``2j`` and ``2j+1``)."""
    return frozenset(x for x in facts if not is_lane_fact(x[0]) and x[0][0] != "regval"
                     and (not mentions_identity(x[0], sregs=CTA_IDENTITY_SREGS)
                          or (pair and (_pair_bits(x[0]) == 0 or (invariant is not None and invariant(x[0]) is True))))
                     and not depends_on(x[0], per_thread))


def _targets_one_pair(ctx: FunctionContext, sender: Instruction) -> bool:
    """Whether ``sender`` is a ``tcgen05.commit.cta_group::2 … .multicast::cluster`` whose ``ctaMask`` is a constant
    naming CTAs of one CTA pair only (ranks ``2k`` and ``2k+1``, reference §3: the pair is the two CTAs whose
    ``%cluster_ctarank`` differs in bit 0).  The commit is issued from that pair (PTX ISA Table 46), and with the
    power-of-two cluster shapes ``cluster.PairRoles`` assumes, the pair's ``%ctaid`` differ in bit 0 of one
    coordinate only."""
    if sender.op != "tcgen05" or "cta_group::2" not in sender.parts or len(sender.operands) < 2:
        return False
    v = ctx.values.value(sender, sender.operands[1])
    if type(v) is not Const or not isinstance(v.value, int) or v.value <= 0:
        return False
    m: int = v.value & 0xFFFF
    low = (m & -m).bit_length() - 1
    return m != 0 and m >> (low & ~1) <= 3


#: A mask of every result bit (``_pair_bits``: the result may depend on the pair bit anywhere).
_ALL_BITS = (1 << 64) - 1


@lru_cache(maxsize=1 << 14)
def _pair_bits(v: object) -> int:
    """The bits of value ``v`` (a ``ValueAnalysis`` value or predicate) that may differ between the two CTAs of a
    pair, whose ``%ctaid.x/y/z`` differ at most in bit 0: a known-bits propagation of that bit through shifts by
    constants, masks, and carries (an add moves it to every higher bit).  ``_ALL_BITS`` for any other operation on
    it, an opaque value, or the CTA's rank within its cluster; 0 when ``v`` does not depend on it."""
    if not isinstance(v, tuple) or not v or v == TOP:
        return _ALL_BITS
    match v:
        case Const() | ConstSet() | Param():
            return 0
        case SReg(name=name):
            if not mentions_identity(v, sregs=CTA_IDENTITY_SREGS):
                return 0
            return 1 if isinstance(name, str) and name.startswith("%ctaid.") else _ALL_BITS
        case Cmp(a=a, b=b):
            return 0 if _pair_bits(a) == 0 and _pair_bits(b) == 0 else _ALL_BITS
        case PNot(p=p):
            return 0 if _pair_bits(p) == 0 else _ALL_BITS
        case PAnd(p=p, q=q) | POr(p=p, q=q):
            return 0 if _pair_bits(p) == 0 and _pair_bits(q) == 0 else _ALL_BITS
    if type(v) is not Op:
        return _ALL_BITS
    name, args = v.name, v.args
    masks = [_pair_bits(a) for a in args]
    m = 0
    for x in masks:
        m |= x
    if m == 0:
        return 0
    k = a1.value if len(args) == 2 and type(a1 := args[1]) is Const and isinstance(a1.value, int) else None
    if name == "shl" and k is not None and masks[1] == 0 and 0 <= k < 64:
        return (masks[0] << k) & _ALL_BITS
    if name == "shr" and k is not None and masks[1] == 0 and 0 <= k < 64 and masks[0] < 1 << 31:
        return masks[0] >> k  # below the sign bit: the same for a logical and an arithmetic shift
    if name == "and" and k is not None and masks[1] == 0:
        return masks[0] & k & _ALL_BITS
    if name in ("add", "sub", "mul"):
        low = (m & -m).bit_length() - 1
        return _ALL_BITS & ~((1 << low) - 1)  # a carry moves a difference in bit ``low`` to the bits above
    if name in ("or", "xor", "and"):
        return m
    return _ALL_BITS


def _sender_keys(ctx: FunctionContext, senders: list[Instruction]) -> frozenset[Hashable]:
    """The predicate keys (cross-warp form) of the cluster-uniform facts on the paths to ``senders``: the
    conditions by which an exit path can be told apart from a sender's."""
    per_thread = divergent_defs(ctx)
    keys: set[Hashable] = set()
    for s in senders:
        pair = _targets_one_pair(ctx, s)
        for ka in ctx.threads.classes:
            for fa in ctx.sync.fact_sets(ka, s) or ():
                keys.update(k for k, _ in _cluster_uniform(fa, per_thread, pair, ctx.feasibility.pair_invariant))
    return frozenset(keys)


def _waited_before(ctx: FunctionContext, key: BarrierKey, watched: set[int],
                   split: frozenset[Hashable] = frozenset()) -> tuple[dict[tuple[int, int], bool],
                                                                    dict[tuple[int, int], set[Facts]]]:
    """``(every, unwaited)``: ``every`` maps ``(id(class), instruction index) → True`` where every path of the class
    reaching the instruction (one of ``watched``) has waited on barrier ``key`` (``mbarrier.try_wait`` /
    ``test_wait``) before it; ``unwaited`` maps the same pairs to the cross-warp fact sets of the paths that have
    not (one simulation per warp class).

    The simulation joins the paths that carry one property by intersecting their facts, so two paths that skip
    the wait for different reasons (a zero-trip k-loop, and the arithmetic-infeasible exit of its unrolled
    remainder) would reach the exit with the facts neither contradicts the sender with.  ``split``: predicate keys
    (cross-warp form) whose facts an unwaited path keeps in its property, taken at each block's first
    instruction, so that paths that disagree on them reach an exit as separate fact sets; a waited path is one
    property (``True``)."""

    va = ctx.values
    out: dict[tuple[int, int], bool] = {}
    unwaited: dict[tuple[int, int], set[Facts]] = {}
    leaders = {b.instructions[0].index for b in ctx.cfg.blocks.values() if b.instructions} if split else set()

    def transfer(prop: Hashable, inst: Instruction, facts: Facts) -> Hashable:
        if prop is True:
            return prop
        if inst.op == "mbarrier":
            m = mbarrier_op(inst)
            if m is not None and m.kind in ("try_wait", "test_wait") and barrier_key(va, inst, m.operand).may_alias(
                    key):
                return True
        if inst.index in leaders:
            kept = frozenset(f for f in cross_warp_facts(va, facts) if f[0] in split)
            if kept != prop:
                return kept
        return prop

    def observe(klass: WarpClass, prop: Hashable, inst: Instruction, facts: Facts) -> None:
        if inst.index in watched:
            k = (id(klass), inst.index)
            waited = prop is True
            out[k] = waited and out.get(k, True)
            if not waited:
                unwaited.setdefault(k, set()).add(cross_warp_facts(va, facts))

    def relevant(inst: Instruction) -> bool:
        return inst.index in watched or inst.op == "mbarrier" or inst.index in leaders

    for klass in ctx.threads.classes:
        sim = PropertySimulation(ctx.cfg, va, klass, transfer, frozenset(), observe=partial(observe, klass),
                                 relevant=relevant, transfer_facts=True)
        try:
            sim.run()
        except BudgetExceeded:
            ctx.bounded.append(f"path simulation of {klass!r} exceeded its budget")
    return out, unwaited
