"""TMEM data hazards between threads (family 3xx, continued): MMA operands overwritten before the MMA completed
(TM307), two warps on the same TMEM cells with no hand-over (TM308), and cluster-scope publication to a peer CTA's
paired operation (TM309).

Cells are compared only where both footprints are known exactly (one start column, an exact address set:
``analysis.regions``); an operand whose columns the analysis cannot pin down is never reported.  Ordering between
warp classes is the happens-before model of ``analysis.order``; an undecided answer is not reported.
"""

from __future__ import annotations

from tmemlint.analysis.control import can_reach
from tmemlint.analysis.sync import peer_arrive_key
from tmemlint.checks.registry import rule
from tmemlint.findings import Severity

_MMA_READ_ROLES = {"a": "the A operand", "scale-a": "scale-A factors", "scale-b": "scale-B factors",
                   "sp": "sparsity metadata"}


def _cells(acc) -> tuple | None:
    """``(slot, lo, hi)`` of an access whose address is one exactly known column, else None."""
    a = acc.addr
    if a is None or not a.exact or acc.columns is None:
        return None
    cols = a.columns
    if len(cols) != 1:
        return None
    return (a.slot, cols[0], cols[0] + acc.columns)


def _overlap(x: tuple, y: tuple) -> bool:
    return x[0] == y[0] and x[1] < y[2] and y[1] < x[2]


def _accesses(ctx):
    memo = ctx.rule_caches.hazard_accesses
    if memo is None:
        from tmemlint.analysis.regions import collect_accesses

        tc = [i for i in ctx.function.instructions if i.op == "tcgen05"]
        memo = ctx.rule_caches.hazard_accesses = collect_accesses(tc, ctx.values, ctx.address_sets) if tc else []
    return memo


# ---- TM307 -------------------------------------------------------------------------------------------------------

def _waits_between_writes(ctx, m, km, w, kw) -> bool:
    """Whether every execution of the write ``w`` by class ``kw`` is either the first one, issued before the first
    MMA ``m`` can run (``m`` is ordered after ``w``: the loader's first copy, then its arrive that the MMA waits
    for), or a later one preceded, since the previous write, by a wait on a barrier the MMA's class commits to
    after ``m``.  The loop ``for kb: { if (kb > 0) wait(mma_done); cp; arrive(sf_full); }`` is correct although
    its first write waits for nothing; counting phases (``SyncModel``) cannot tell its first round from the others.
    Simulated on the paths of ``kw``: the writes so far (0, 1, many) and the waits since the last one.  When some
    repeated writes wait and others may not, the rounds that skip the wait depend on a loop counter the paths do not
    keep: taken as waiting (a documented limit)."""
    sync = ctx.sync
    keys = {k for ks, _f in sync.releases_after(km, (m,), completion=True).get(m.index, []) for k in ks}
    if not keys:
        return False
    states: set[tuple[int, int]] = set()

    def transfer(prop, inst):
        writes, waits = prop
        if inst.index == w.index:
            return (min(writes + 1, 2), 0)
        s = sync.site(inst)
        if s is not None and s.waits and any(s.key.may_alias(k) for k in keys):
            return (writes, 1)
        return prop

    def observe(_k, prop, inst, _facts):
        if inst.index == w.index:
            states.add(prop)

    ctx.simulate(transfer, (0, 0), observe, classes=[kw],
                 relevant=lambda i: i.index == w.index or i.op in ("mbarrier", "bar", "barrier"))
    if not states:
        return False
    later = [waits for writes, waits in states if writes >= 1]
    if later and not any(later):
        return False  # the write comes round again and never waits for the MMA's commit in between
    # some repeated writes wait for the commit and others may not: which rounds skip the wait is a question of the
    # loop counter's value that the paths do not keep (`if (kb > 0) wait(...)`): not decided, not reported
    return all(waits or writes >= 1 or sync.must_happen_before(w, kw, m, km) is True for writes, waits in states)


def _completion_never_awaited(ctx, m, km, w, kw) -> bool:
    """Whether no wait of class ``kw`` that can precede its write ``w`` (CFG reach) is on a barrier that may carry
    the completion of the MMA ``m`` of class ``km``: the barriers ``km`` commits to after ``m``
    (``SyncModel.releases_after`` with ``completion``: a ``tcgen05.commit`` arrives once the MMA completed, PTX ISA
    §9.7.16.8.4) and, transitively, every barrier that a class other than ``kw`` arrives on once it waits on one of
    those (a relay; taken wherever it lies, an over-approximation that can only keep the answer undecided).  Then
    no chain of synchronization orders ``m``'s completion before ``w``, whatever the paths: an undecided answer of
    the happens-before model (path pairs chosen by each class's own loop data) is a no.  The producer that
    overwrites a TMEM A operand each K block without waiting on the MMA's commit (reference §3, "mma reads TMEM
    operand → overwrite")."""
    sync = ctx.sync
    keys = {k for ks, _f in sync.releases_after(km, (m,), completion=True).get(m.index, []) for k in ks}
    if not keys:
        return True
    sites = [(i, s) for i in ctx.function.instructions if (s := sync.site(i)) is not None]
    relays = [k for k in ctx.threads.classes if k is not kw]
    grown = True
    while grown:
        grown = False
        for k2 in relays:
            if any(s.waits and sync.executes(k2, i) and any(s.key.may_alias(k) for k in keys) for i, s in sites):
                new = {s.key for i, s in sites if s.arrives and sync.executes(k2, i)} - keys
                if new:
                    keys |= new
                    grown = True
    return not any(s.waits and sync.executes(kw, i) and can_reach(ctx, i, w) and any(s.key.may_alias(k) for k in keys)
                   for i, s in sites)


@rule("TM307", "mma-operand-overwritten", "error",
      "tcgen05.cp/st writes TMEM columns an earlier tcgen05.mma reads, with no completion of that MMA between")
def mma_operand_overwritten(ctx):
    """PTX ISA §9.7.16.6 (reference §3): tcgen05.mma is asynchronous and reads its TMEM operands (A, scale-A,
    scale-B, sparsity metadata) while it executes; the cells may be written again only after the MMA completed:
    ``tcgen05.commit`` to an mbarrier, then a wait on it.  The implicitly pipelined pairs (§9.7.16.6.1) are
    cp→mma, shift→mma, mma→mma on the same accumulator and shape: mma→cp and mma→st are not among them.

    Error when the writer is another warp class (no commit of the MMA's thread that the writer waits on:
    ``SyncModel.completes_before``); a warning when the MMA's own thread writes next in issue order with no commit
    and wait on that commit's barrier in between (CUTLASS's block-scaled mainloop loads the next K block's scale
    factors that way: issue order, not the ISA, makes it work): ``SyncModel.uncompleted_by_issuer``.  A wait on a
    barrier the analysis cannot tell apart from the commit's counts as the completion (a documented limit:
    DeepGEMM's stage-rotated barriers)."""
    from tmemlint.analysis.control import on_cycle

    accs = _accesses(ctx)
    reads = [a for a in accs if a.op == "mma" and a.role in _MMA_READ_ROLES and _cells(a) is not None]
    if not reads:
        return
    # an MMA whose accumulator covers its own TMEM operands is a layout fault (TM401 scale factors, TM403 operand
    # overlap), reported there; the accumulator of one MMA laid over another's operands (P over S) is a reuse
    # question for this rule
    self_overlap = {a.inst.index for a in accs if a.op == "mma" and a.role == "d" and _cells(a) is not None
                    and any(_overlap(_cells(a), _cells(r)) for r in reads if r.inst.index == a.inst.index)}
    writers = [a for a in accs if a.writes and _cells(a) is not None and a.inst.index not in self_overlap]
    pairs: dict[int, list[int]] = {}
    read_of: dict[tuple[int, int], object] = {}
    for w in writers:
        for r in reads:
            if r.inst.index != w.inst.index and _overlap(_cells(r), _cells(w)):
                pairs.setdefault(w.inst.index, []).append(r.inst.index)
                read_of.setdefault((w.inst.index, r.inst.index), r)
    if not pairs:
        return
    insts = ctx.function.instructions
    sync = ctx.sync
    classes = ctx.threads.classes
    verdict: dict[int, tuple[int, bool]] = {}  # writer -> (mma, error)

    # another warp class writes: the MMA must have completed (its thread's commit, waited on by the writer)
    for w_idx, ms in sorted(pairs.items()):
        w = insts[w_idx]
        for m_idx in ms:
            m = insts[m_idx]
            for km in classes:
                if not sync.executes(km, m):
                    continue
                for kw in classes:
                    if kw is km or not sync.executes(kw, w):
                        continue
                    if sync.must_happen_before(w, kw, m, km) is True and not on_cycle(ctx, w):
                        continue  # the write only ever precedes the MMA (st of A, then the MMA)
                    done = sync.completes_before(m, km, w, kw)
                    if done is None and (on_cycle(ctx, m) or sync.must_happen_before(w, kw, m, km) is not True) \
                            and _completion_never_awaited(ctx, m, km, w, kw):
                        done = False  # undecided only by path facts, yet no wait of the writer can carry it
                    if done is False and not _waits_between_writes(ctx, m, km, w, kw):
                        verdict.setdefault(w_idx, (m_idx, True))
    # the MMA's own thread writes next
    for w_idx, m_idx in sync.uncompleted_by_issuer(pairs).items():
        verdict.setdefault(w_idx, (m_idx, False))
    for w_idx, (m_idx, error) in sorted(verdict.items()):
        w, m = insts[w_idx], insts[m_idx]
        r = read_of[(w_idx, m_idx)]
        lo, hi = _cells(r)[1:]
        what = f"{w.family} writes TMEM columns [{lo}, {hi}) that the tcgen05.mma at line {m.span.line} reads as " \
               f"{_MMA_READ_ROLES[r.role]}, with no completion of that MMA in between (tcgen05.commit to an " \
               f"mbarrier, then a wait on it)"
        if error:
            ctx.report("TM307", w, what + ": the MMA may still be reading them", [(m, "the MMA reading them")])
        else:
            ctx.report("TM307", w, what + "; issued by the MMA's own thread, it relies on issue order (mma→"
                                          f"{w.family.split('.', 1)[1]} is not an implicitly pipelined pair)",
                       [(m, "the MMA reading them")], severity=Severity.WARNING)


# ---- TM308 -------------------------------------------------------------------------------------------------------

def _thread_indexed(ctx, inst) -> bool:
    """Whether a ``brx.idx``'s index is a constant or a function of ``%tid.x`` (its targets per warp known)."""
    from tmemlint.analysis.values import Const, Tid

    if not inst.operands:
        return False
    v = ctx.values.value(inst, inst.operands[0])
    return type(v) is Const or type(v) is Tid


def _quarter_lanes(acc) -> tuple:
    """``(0, lo, hi)``: the lanes within its warp's quarter that an ld/st covers (PTX ISA §9.7.16.2.3, the shapes of
    §9.7.16.8.3: ``.32x32b`` all 32, ``.16x64b``/``.16x128b``/``.16x256b`` 16 from the address's lane), the whole
    quarter when the address's lane is not one known value."""
    lanes = {lane % 32 for lane in acc.addr.lanes} if acc.addr is not None else set()
    width = min(acc.lanes or 32, 32)
    if len(lanes) != 1 or not acc.addr.exact:  # the quarter's base differs per warp; the offset in it must not
        return (0, 0, 32)
    lo = lanes.pop()
    return (0, lo, min(lo + width, 32))


def _shared_quarter(kx, ky, same: bool) -> bool:
    """Whether two different warps, one of class ``kx`` and one of ``ky``, share a TMEM lane quarter (warp % 4,
    PTX ISA §9.7.16.2.3): warps w and w + 4 do.  Within one class (``same``) only when its warps certainly run."""
    if same and not kx.size_known:
        return False
    return any(a != b and a % 4 == b % 4 for a in kx.warps for b in ky.warps)


@rule("TM308", "cross-warp-tmem-race", "error",
      "two warps access the same TMEM cells, one with tcgen05.st, with no hand-over between them")
def cross_warp_tmem_race(ctx):
    """PTX ISA §9.7.16.2.3 (lane quarters) and §9.7.16.6 (reference §3, "ld/st → another thread"): warps ``w`` and
    ``w + 4`` reach the same lane quarter; when two of them touch the same cells and one writes (tcgen05.st), the
    writer's ``wait::st``, ``fence::before_thread_sync`` and an arrive must be ordered before the other's access
    (its wait and ``fence::after_thread_sync``).  Reported when neither access is ordered before the other by any
    barrier (``SyncModel``).  One warp reusing the cells of its own quarter needs no barrier and is not concerned;
    a loop where only one direction is ordered is not reported, nor is code below a ``brx.idx`` whose index comes
    from data (the warps that run it are not known): documented limits."""

    accs = [a for a in _accesses(ctx) if a.op in ("ld", "st") and _cells(a) is not None]
    if not any(a.op == "st" for a in accs):
        return
    # warp roles dispatched by data (Triton's brx.idx over a per-warp table in shared memory): which warps run
    # the code below cannot be told from the warp index
    dispatch = [i for i in ctx.function.instructions if i.op == "brx" and not _thread_indexed(ctx, i)]
    accs = [a for a in accs if not any(can_reach(ctx, d, a.inst) for d in dispatch)]
    sync = ctx.sync
    classes = ctx.threads.classes
    insts = ctx.function.instructions
    reported: set[int] = set()
    for i, x in enumerate(accs):
        for y in accs[i:]:
            if x.op != "st" and y.op != "st":
                continue
            if not _overlap(_cells(x), _cells(y)) or not _overlap(_quarter_lanes(x), _quarter_lanes(y)):
                continue
            target = y if y.op == "st" else x
            other = x if target is y else y
            if target.inst.index in reported:
                continue
            for kx in classes:
                if target.inst.index in reported or not sync.executes(kx, x.inst):
                    continue
                for ky in classes:
                    if not sync.executes(ky, y.inst) or not _shared_quarter(kx, ky, kx is ky):
                        continue
                    if kx is ky and x.inst.index != y.inst.index:
                        continue  # program order within the class's own warps is not a cross-warp question
                    if x.inst.index != y.inst.index or kx is not ky:
                        a, b = sync.must_happen_before(x.inst, kx, y.inst, ky), \
                            sync.must_happen_before(y.inst, ky, x.inst, kx)
                        if a is not False or b is not False:
                            continue
                    reported.add(target.inst.index)
                    lo, hi = _cells(target)[1:]
                    verb = "write" if other.op == "st" else "read"
                    ctx.report("TM308", insts[target.inst.index],
                               f"tcgen05.st by {kx if target is x else ky!r} writes TMEM columns [{lo}, {hi}) that "
                               f"{ky if target is x else kx!r} also {verb}s in the same lane quarter, with no "
                               f"barrier or mbarrier ordering the two warps (wait::st, fence::before_thread_sync "
                               f"and an arrive on one side; the wait and fence::after_thread_sync on the other)",
                               [(insts[other.inst.index], f"the other warp's tcgen05.{other.op}")])
                    break


# ---- TM309 -------------------------------------------------------------------------------------------------------

_GENERIC_WRITES = ("st", "stmatrix", "red", "atom")


def _cluster_fence(inst) -> bool:
    """A fence that makes the thread's earlier writes a release at cluster scope when a relaxed (or any) arrive
    follows (PTX ISA §8.7 release patterns): ``fence.acq_rel.cluster``, ``fence.sc.cluster``,
    ``fence.release….cluster``; not ``fence.proxy.*`` nor ``fence.mbarrier_init``."""
    p = inst.parts
    return inst.op == "fence" and "cluster" in p and any(x in p for x in ("acq_rel", "sc", "release")) \
        and "mbarrier_init" not in p and "proxy" not in p


#: What ``_publishes`` found before a remote arrive: TMEM written with tcgen05.st (``TMEM``; ``TMEM_FENCED`` when a
#: ``tcgen05.fence::before_thread_sync`` follows the writes), shared memory written through the generic proxy and
#: made visible to the async proxy (``GENERIC``), or a ``cp.async`` completion observed through a CTA-scope wait on
#: the local mbarrier that ``cp.async.mbarrier.arrive`` signals (``RELAYED_CP_ASYNC``, CUTLASS #3324).
TMEM, TMEM_FENCED, GENERIC, RELAYED_CP_ASYNC = "tmem", "tmem-fenced", "generic", "relayed-cp-async"

_WHAT = {TMEM: "TMEM written with tcgen05.st", TMEM_FENCED: "TMEM written with tcgen05.st",
         GENERIC: "shared memory written for the async proxy",
         RELAYED_CP_ASYNC: "observing cp.async completion on a local mbarrier through a CTA-scope wait"}


def _cta_scope_wait(inst) -> bool:
    """An mbarrier ``try_wait``/``test_wait`` without ``.cluster`` scope: ``.acquire.cta`` by default (PTX ISA
    §9.7.13.15.16), which does not acquire what a thread of another CTA released."""
    p = inst.parts
    return inst.op == "mbarrier" and len(p) > 1 and p[1] in ("try_wait", "test_wait") and "cluster" not in p


def _publication_event(inst, cp_async_keys, sync) -> bool:
    """Whether ``inst`` bears on what a later remote arrive of its thread publishes (``_publishes``): a
    tcgen05.st or tcgen05.ld, a ``tcgen05.fence::before_thread_sync``, a generic write of shared memory, a
    ``fence.proxy.async``, a cluster-scope fence (``_cluster_fence``), a CTA-scope wait on a local mbarrier that a
    ``cp.async.mbarrier.arrive`` signals, or a remote arrive (through ``mapa``: it ends what the previous one
    published)."""
    fam, op = inst.family, inst.op
    if fam in ("tcgen05.st", "tcgen05.ld") or (fam == "tcgen05.fence" and "before_thread_sync" in "".join(inst.parts)):
        return True
    if op in _GENERIC_WRITES and ("shared" in inst.parts or "shared::cta" in inst.parts):
        return True
    if (op == "fence" and "proxy" in inst.parts and "async" in inst.parts) or _cluster_fence(inst):
        return True
    s = sync.site(inst)
    return s is not None and s.waits and _cta_scope_wait(inst) and any(s.key.may_alias(k) for k in cp_async_keys)


def _round_publishes(round_, remote: set[int], cp_async_keys, sync) -> str | None:
    """What a remote arrive publishes after the events ``round_`` of its thread (``SyncModel.since_latest_wait``:
    in program order since the thread's latest wait, that wait first when it is the CTA-scope wait of a relayed
    ``cp.async`` completion): ``TMEM`` / ``TMEM_FENCED`` (tcgen05.st, then ``fence::before_thread_sync``),
    ``GENERIC`` (shared memory written, then ``fence.proxy.async``), ``RELAYED_CP_ASYNC``, or None (nothing, or a
    tcgen05.ld in the round: a consumer's release publishes nothing the peer's MMA reads).  A cluster-scope fence
    releases the writes before it (then nothing is left to publish); an earlier remote arrive published those
    before it."""
    wrote_tmem, smem, read_tmem = 0, 0, False
    for inst in round_:
        fam, op = inst.family, inst.op
        if inst.index in remote:
            wrote_tmem, smem, read_tmem = 0, 0, False
        elif fam == "tcgen05.st":
            wrote_tmem = 1
        elif fam == "tcgen05.ld":
            read_tmem = True
        elif fam == "tcgen05.fence":
            wrote_tmem = 2 if wrote_tmem else 0
        elif op in _GENERIC_WRITES:
            smem = 1
        elif op == "fence" and "proxy" in inst.parts:
            smem = 2 if smem == 1 else smem
        elif _cluster_fence(inst):
            wrote_tmem, smem = 0, 0
        else:  # the CTA-scope wait on a cp.async barrier (``_publication_event``)
            wrote_tmem, smem, read_tmem = 0, 3, False
    if read_tmem:
        return None
    if smem == 3:
        return RELAYED_CP_ASYNC
    if wrote_tmem:
        return TMEM_FENCED if wrote_tmem == 2 else TMEM
    return GENERIC if smem == 2 else None


#: Which of several paths' publications a remote arrive is reported for: the worst (the relayed cp.async first).
_PUBLICATION_RANK = {RELAYED_CP_ASYNC: 0, GENERIC: 1, TMEM: 2, TMEM_FENCED: 3}


def _publishes(ctx) -> dict[int, str]:
    """Remote arrive index → what it publishes (``TMEM``, ``TMEM_FENCED``, ``GENERIC``, ``RELAYED_CP_ASYNC``): asked
    of the happens-before engine (``SyncModel.since_latest_wait``): the publication events (``_publication_event``)
    that precede the arrive on some path of a warp class that executes it, since the class's latest wait, read in
    program order (``_round_publishes``): TMEM written with tcgen05.st, shared memory written through the generic
    proxy and made visible to the async proxy (``fence.proxy.async``), or a CTA-scope wait on a local mbarrier that
    a ``cp.async.mbarrier.arrive`` signals, with no cluster-scope fence after those writes, and no TMEM read in
    the round (a consumer's release after tcgen05.ld publishes nothing the peer's MMA reads).  Any other wait, a
    CTA barrier included, starts a new round: an epilogue's shared-memory staging for its own TMA store, then
    ``bar.sync`` among the epilogue warps, then a remote arrive publishes nothing (a documented limit: producers
    that meet at a named barrier before one of them arrives are not followed).  Of several paths, the worst
    publication (``_PUBLICATION_RANK``)."""
    va = ctx.values
    sync = ctx.sync
    insts = ctx.function.instructions
    remote = {i.index for i in insts if peer_arrive_key(va, i) is not None}
    if not remote:
        return {}
    cp_async_keys = [s.key for i in insts if i.op == "cp" and "mbarrier" in i.parts and "arrive" in i.parts
                     and (s := sync.site(i)) is not None]
    events = frozenset(i.index for i in insts if i.index in remote or _publication_event(i, cp_async_keys, sync))
    out: dict[int, str] = {}
    for idx in sorted(remote):
        arrive = insts[idx]
        found = {what for k in ctx.threads.classes if sync.executes(k, arrive)
                 for round_ in sync.since_latest_wait(k, arrive, events)
                 if (what := _round_publishes(round_, remote, cp_async_keys, sync)) is not None}
        if found:
            out[idx] = min(found, key=_PUBLICATION_RANK.__getitem__)
    return out


def _cluster_release(inst) -> bool:
    """Whether an mbarrier arrive releases at cluster scope: ``.release`` (the default) with ``.cluster`` scope
    (PTX ISA §9.7.13.15.13: the defaults are ``.release`` and ``.cta``)."""
    return "cluster" in inst.parts and "relaxed" not in inst.parts


@rule("TM309", "remote-release-scope", "warning",
      "data a peer CTA's paired tcgen05 op reads published with a CTA-scope remote arrive or acquired with a "
      "CTA-scope wait")
def remote_release_scope(ctx):
    """PTX ISA §9.7.13.15.13 (mbarrier.arrive: ``.release`` and ``.cta`` by default), §9.7.13.15.16 (try_wait:
    ``.acquire.cta`` by default) and the memory consistency model (§8: a release or acquire at CTA scope does not
    synchronize with a thread of another CTA): a warp that writes data and then arrives on the leader CTA's mbarrier
    through ``mapa`` so that the leader's ``.cta_group::2`` mma or cp reads it should arrive with
    ``.release.cluster``, and the leader should wait with ``.acquire.cluster``.

    Warning (rules catalog, TM309): a ``.release.cta`` arrive after TMEM or shared-memory writes, and the leader's
    CTA-scope wait on such a barrier: CUTLASS, DeepGEMM, FlashMLA and FlashAttention-4 publish this way.  Error: a
    ``.relaxed`` arrive after generic or cp.async data with no cluster-scope fence (no release at all), and a
    relayed cp.async completion (a CTA-scope wait on the local mbarrier of ``cp.async.mbarrier.arrive``, then a
    remote arrive without ``.release.cluster``: CUTLASS #3324, where the leader's 2-CTA MMA read stale B).  Never
    reported: TMEM published with ``tcgen05.fence::before_thread_sync`` and a ``.relaxed.cluster`` arrive (the
    ISA's canonical pattern), an epilogue's release of the accumulator after tcgen05.ld (publishes nothing), and
    writes followed by a ``fence.acq_rel.cluster`` (then the arrive), which releases them."""
    from tmemlint.analysis.sync import cta_group

    insts = ctx.function.instructions
    paired = [i for i in insts if i.family in ("tcgen05.mma", "tcgen05.cp") and cta_group(i) == 2]
    if not paired:
        return
    sync = ctx.sync
    va = ctx.values
    reported_waits: set[int] = set()
    for idx, what in sorted(_publishes(ctx).items()):
        arrive = insts[idx]
        relaxed = "relaxed" in arrive.parts
        cluster = "cluster" in arrive.parts
        if what == TMEM_FENCED and relaxed and cluster:
            continue  # the ISA's canonical TMEM hand-over: tcgen05 fences around a .relaxed.cluster arrive/wait
        key = peer_arrive_key(va, arrive)
        waits = [i for i in insts if (s := sync.site(i)) is not None and s.waits and s.key.may_alias(key)]
        reading = [(w, p) for w in waits for p in paired if can_reach(ctx, w, p)]
        if not reading:
            continue
        consumer = reading[0][1]
        failure = ("; CUTLASS #3324: the leader's 2-CTA MMA read stale B relayed this way"
                   if what == RELAYED_CP_ASYNC else "")
        if not _cluster_release(arrive):
            sem = "relaxed" if relaxed else "release"
            scope = "cluster" if cluster else "cta"
            error = what == RELAYED_CP_ASYNC or (relaxed and what in (GENERIC, RELAYED_CP_ASYNC))
            if error and relaxed:
                why = "no release at all: no fence.acq_rel.cluster before it"
            elif error:
                why = "a CTA-scope release of a cp.async completion observed at CTA scope"
            else:
                why = ("formally outside the ISA's guarantees, although NVIDIA's own libraries publish this way"
                       if not relaxed else "a .relaxed arrive without the tcgen05 fences and .cluster scope")
            ctx.report("TM309", arrive, f"arrives on a peer CTA's mbarrier (mapa) with .{sem}.{scope} semantics "
                                        f"after {_WHAT[what]}: the paired {consumer.family} that waits on it reads "
                                        f"that data, and only a .release.cluster arrive makes the writes visible "
                                        f"to the peer CTA ({why}){failure}",
                       [(consumer, "the paired operation that reads the data")],
                       severity=Severity.ERROR if error else Severity.WARNING)
        for w, p in reading:
            if w.index in reported_waits or not _cta_scope_wait(w):
                continue
            reported_waits.add(w.index)
            ctx.report("TM309", w, f"waits with .acquire.cta semantics (the default of {w.parts[1]}) on the mbarrier "
                                   f"that a peer CTA's arrive at line {arrive.span.line} publishes {_WHAT[what]} "
                                   f"through: the paired {p.family} reads that data, and only an .acquire.cluster "
                                   f"wait observes the peer CTA's release{failure}",
                       [(arrive, "the peer CTA's remote arrive"), (p, "the paired operation that reads the data")],
                       severity=Severity.WARNING)
