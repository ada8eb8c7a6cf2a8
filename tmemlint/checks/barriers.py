"""Issue and mbarrier rules of issue 24: single-thread issue (TM314), peer barriers addressed in the local form
(TM310), arrivals beyond a phase's count (TM311), and multicast targets recycled before their phase (TM312).

Sources: PTX ISA 9.0 Table 46 (``#tcgen05-ops-execution-granularity``), §9.7.13.15 (``#parallel-synchronization-
and-communication-instructions-mbarrier``), §9.7.9.22 (``mapa``), reference §3.1."""

from __future__ import annotations

from tmemlint.checks.registry import rule

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
    from tmemlint.analysis.control import divergent_defs
    from tmemlint.analysis.threads import UNKNOWN_LANES, lanes_on_path

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

    The barrier operand is followed back through register copies and offset additions (``mbarriers.mapa_origin``)
    on every reaching definition; a ``mapa`` onto ``%cluster_ctarank`` (the CTA itself) does not count."""
    from tmemlint.analysis.mbarriers import CLUSTER, LOCAL, NEVER_REMOTE, mapa_origin, mbarrier_op

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
    from tmemlint.analysis.cluster import PairRoles
    from tmemlint.analysis.control import divergent_defs
    from tmemlint.analysis.mbarriers import arrive_site, expected_counts
    from tmemlint.analysis.threads import is_lane_fact, lane_counts

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
                threads = sum(per_warp) if klass.size_known else max(per_warp, default=0)
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
