"""Ordering of the asynchronous tcgen05 operations (family 3xx)."""

from __future__ import annotations

from tmemlint.analysis.control import reach_bits
from tmemlint.analysis.regions import collect_accesses
from tmemlint.analysis.sync import ASYNC_TCGEN05
from tmemlint.analysis.threads import one_warp_executes
from tmemlint.analysis.values import defined_regs, is_register_copy
from tmemlint.checks.context import Grouping
from tmemlint.checks.registry import rule


def _ld_uses_before_wait(ctx) -> dict[int, int]:
    """For each tcgen05.ld (by index), the first instruction (by index) that reads one of its destination registers
    while the load may still be in flight for the reading thread (``SyncModel.pending_at``: no tcgen05.wait::ld of
    that thread since the ld, on some feasible path of its warp class).

    A register-to-register copy (``is_register_copy``) of a destination is a rename, not a use (nvcc copies the
    loop-carried result of a load issued in one iteration and waited for in the next): the readers of the copy are
    followed instead (def-use chains, ``ValueAnalysis.uses_of``) while the value is in flight at each link (the ld or
    the copy pending at the next reader: ``PendingAt.ops`` / ``copies``), and a read through a bit-cast ``mov`` into another
    register group is reported at the ``mov`` (the read began there).  PTX ISA tcgen05.wait,
    ``#tcgen05-instructions-tcgen05-wait``; register dependencies §9.7.16.6.4.5; reference §2.2."""
    insts = ctx.function.instructions
    va = ctx.values
    sync = ctx.sync
    first_use: dict[int, int] = {}
    for ld in insts:
        if ld.family != "tcgen05.ld":
            continue
        stack = [(ld.index, r.name, -1) for r in defined_regs(ld)]
        seen: set = set()
        while stack:
            d, name, site = stack.pop()
            if (d, name) in seen:
                continue
            seen.add((d, name))
            for u in va.uses_of(d, name):
                ui = insts[u]
                if ui.family == "tcgen05.wait::ld":
                    continue
                # the value ``d`` wrote is still in flight at ``u``: the load (or the copy that renamed its value)
                # was issued (made) with no wait::ld since; a later issue of the same ld in a loop is another value
                at_u = sync.pending_at(ui, "ld")
                if not (any(p.op is ld for p in at_u.ops) if d == ld.index else any(c.index == d for c in at_u.copies)):
                    continue
                if is_register_copy(ui) and ui.operands[1].name == name:
                    dst = ui.operands[0].name
                    cast = dst.rstrip("0123456789") != name.rstrip("0123456789")
                    stack.append((u, dst, u if cast and site < 0 else site))
                    continue
                at = site if site >= 0 else u  # a real read
                if ld.index not in first_use or at < first_use[ld.index]:
                    first_use[ld.index] = at
    return first_use


@rule("TM301", "ld-used-before-wait", "info",
      "destination registers of tcgen05.ld read before tcgen05.wait::ld on some path (legal; off by default)",
      enabled=False)
def ld_used_before_wait(ctx):
    """PTX ISA §9.7.16.6.4.5 orders a true register dependency on a tcgen05.ld result in the same thread, so this
    is legal: info, off by default (rules catalog: it fires on most correct production kernels).  Enabled with
    ``--extend-select TM301`` as a portability and readability note; TM302 is the hazard (a register use does not
    complete the load for a later overwrite, hand-over or dealloc)."""
    insts = ctx.function.instructions
    for ld, use in sorted(_ld_uses_before_wait(ctx).items()):
        ctx.report("TM301", insts[use],
                   f"reads a destination register of the tcgen05.ld at line {insts[ld].span.line} before "
                   f"tcgen05.wait::ld", [(insts[ld], "tcgen05.ld issued here")])


# ---- pending asynchronous tcgen05.ld / tcgen05.st (TM302, TM303) ----------------------------------------------

def _columns(ctx, inst, k, width):
    """``(slot, lo, hi)`` columns of TMEM operand ``k`` of ``inst``, or None when not constant."""
    from tmemlint.analysis.values import TmemAddr

    if k >= len(inst.operands) or width is None:
        return None
    v = ctx.values.value(inst, inst.operands[k])
    if type(v) is not TmemAddr or v.col is None:
        return None
    return (v.slot, v.col, v.col + width)


def _slot(ctx, inst, k):
    """The allocation slot of TMEM operand ``k`` of ``inst`` (offset known or not), or None."""
    from tmemlint.analysis.values import TmemAddr

    if k >= len(inst.operands):
        return None
    v = ctx.values.value(inst, inst.operands[k])
    return v.slot if type(v) is TmemAddr else None


def _mma_regions(ctx, inst, accumulator_only: bool = False):
    """``[(slot, lo, hi)]`` TMEM columns a tcgen05.mma reads or writes (D from a constant idesc; other
    bracketed operands: A 8 columns, scale factors 4); only D's with ``accumulator_only``."""
    from tmemlint.analysis.idesc import A_TMEM_COLUMNS, SCALE_COLUMNS, decode_idesc, mma_kind
    from tmemlint.analysis.sync import tmem_operand_indices
    from tmemlint.analysis.values import Const

    va = ctx.values
    out = []
    ks = tmem_operand_indices(inst)
    idesc_k = 4 if inst.has("sp") else 3
    n = None
    if idesc_k < len(inst.operands):
        iv = va.value(inst, inst.operands[idesc_k])
        if type(iv) is Const:
            n = decode_idesc(iv.value, mma_kind(inst)).n or None
    for k in ks:
        if accumulator_only and k != 0:
            continue
        width = n if k == 0 else (A_TMEM_COLUMNS if k == 1 else SCALE_COLUMNS)
        r = _columns(ctx, inst, k, width)
        if r is not None:
            out.append(r)
    return out


def _overlap(a, b) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def _tmem_writes(ctx, inst):
    """Column ranges written by an mma/st/cp/shift (for TM302)."""
    from tmemlint.analysis.idesc import cp_columns, ld_st_columns

    fam = inst.family
    if fam == "tcgen05.mma":
        return _mma_regions(ctx, inst, accumulator_only=True)
    if fam == "tcgen05.st":
        r = _columns(ctx, inst, 0, ld_st_columns(inst))
        return [r] if r else []
    if fam == "tcgen05.cp":
        r = _columns(ctx, inst, 0, cp_columns(inst))
        return [r] if r else []
    if fam == "tcgen05.shift":
        r = _columns(ctx, inst, 0, 8)
        return [r] if r else []
    return []


def _handover_matters(ctx, arrive, kind: str, cols) -> bool:
    """Whether the hand-over ``arrive`` can let another warp touch the cells of a pending tcgen05.ld (``kind``
    "ld": a write of them, or a dealloc) or tcgen05.st ("st": a read or write of them): some warp class other than
    the arriving warp alone waits on its barrier (``ctx.sync``) and afterwards issues such a tcgen05 instruction
    (columns ``cols`` = ``(slot, lo, hi)``; unknown columns on either side count as overlapping).  A hand-over
    matters only for the cells the other side touches: CUTLASS's FMHA correction warps arrive on a barrier whose
    waiters use other columns, then wait::st before the barrier that publishes the stored ones; an epilogue's
    arrive on a TMA-load barrier hands over no TMEM at all.

    What does not depend on ``cols`` (the users each class may reach from a wait on the barrier, and whether a user
    is ordered after the arriving classes' later wait) is computed once per ``(arrive, kind)``
    (``_handover_candidates``); the answer is whether some such user touches ``cols`` and is not so ordered."""
    sync = ctx.sync
    if sync.site(arrive) is None:
        return True
    memo = ctx.rule_caches.handover
    key = (arrive.index, kind, cols)
    if key in memo:
        return memo[key]
    per_class, completed_before = _handover_candidates(ctx, arrive, kind)
    result = False
    for k, users_k in per_class:
        for u in users_k:
            if u.family != "tcgen05.dealloc" and cols is not None:
                regs = _touched_regions(ctx, u)
                if regs and not any(_overlap(cols, r) for r in regs):
                    continue
            if not completed_before(u, k):
                result = True
                break
        if result:
            break
    memo[key] = result
    return result


def _touched_regions(ctx, u):
    """``[(slot, lo, hi)]`` TMEM columns tcgen05 instruction ``u`` touches (for ``_handover_matters``), memoised
    per instruction on ``ctx``."""
    from tmemlint.analysis.idesc import ld_st_columns

    memo = ctx.rule_caches.touched_regions
    if u.index not in memo:
        memo[u.index] = _mma_regions(ctx, u) if u.family == "tcgen05.mma" else _tmem_writes(ctx, u) or \
            [r for r in [_columns(ctx, u, 1, ld_st_columns(u))] if r]
    return memo[u.index]


def _handover_candidates(ctx, arrive, kind: str):
    """For the hand-over ``arrive`` of a pending ``kind`` ("ld"/"st") operation: ``(per_class, completed_before)``
    where ``per_class`` lists ``(warp class, users)`` for each class other than the arriving warp alone (one warp
    whose own arrival is program order), with the tcgen05 instructions of the kinds that matter that the class
    may execute after one of its waits on a barrier that may be ``arrive``'s (CFG reachability); and
    ``completed_before(u, k)`` tells whether ``u`` (class ``k``) is ordered after each arriving class's later
    tcgen05.wait::<kind> (the pending operation has completed before ``u``: a dealloc after the barrier that
    follows the wait::st), memoised.  Computed once per ``(arrive, kind)`` on ``ctx``: every query is a pure
    function of the function's analyses, so asking each (class, user) pair once gives the answers of asking it per
    wait."""
    from tmemlint.analysis.control import can_reach

    cache = ctx.rule_caches.handover_candidates
    got = cache.get((arrive.index, kind))
    if got is not None:
        return got
    sync = ctx.sync
    site = sync.site(arrive)
    insts = ctx.function.instructions
    waits = [i for i in insts if (s := sync.site(i)) is not None and s.waits and s.key.may_alias(site.key)]
    touches = ("tcgen05.mma", "tcgen05.st", "tcgen05.cp", "tcgen05.shift", "tcgen05.dealloc") if kind == "ld" else \
        ("tcgen05.mma", "tcgen05.ld", "tcgen05.st", "tcgen05.cp", "tcgen05.shift", "tcgen05.dealloc")
    users = [i for i in insts if i.family in touches]
    classes = ctx.threads.classes
    arrivers = [k for k in classes if sync.executes(k, arrive)]
    done = [i for i in insts if i.family == f"tcgen05.wait::{kind}" and can_reach(ctx, arrive, i)]
    per_class = []
    for k in classes:
        waits_k = [w for w in waits if sync.executes(k, w)]
        if not waits_k:
            continue
        users_k = [u for u in users if sync.executes(k, u) and any(can_reach(ctx, w, u) for w in waits_k)]
        if arrivers == [k] and one_warp_executes(k, [sync.fact_sets(k, i) for i in (arrive, *users_k)]):
            continue  # only this warp's own arrival: program order
        if users_k:
            per_class.append((k, users_k))
    ordered: dict = {}

    def completed_before(u, k) -> bool:
        hit = ordered.get((u.index, id(k)))
        if hit is None:
            hit = ordered[(u.index, id(k))] = bool(done) and all(
                any(sync.must_happen_before(wd, ka, u, k) for wd in done if sync.executes(ka, wd))
                for ka in arrivers)
        return hit

    got = cache[(arrive.index, kind)] = (per_class, completed_before)
    return got


def _result_used_after(ctx, ld, point) -> bool:
    """Whether a destination register of tcgen05.ld ``ld`` is read, with the value ``ld`` wrote, somewhere
    ``point`` can reach: on a path where nothing reads the load (CUTLASS example 93 skips its stores of the loaded
    row on some tiles), whatever it still reads is discarded, so a hand-over there races with nothing."""
    from tmemlint.analysis.control import can_reach

    insts = ctx.function.instructions
    return any(can_reach(ctx, point, insts[u]) for r in defined_regs(ld) for u in ctx.values.uses_of(ld.index, r.name))


def _pending_hazards(ctx, kind: str):
    """The places where an unwaited tcgen05.ld (``kind="ld"``) or tcgen05.st (``"st"``) of the executing thread
    meets something that needs its completion: ``[(instruction, pending op, what)]``.  Which operations are still in
    flight is the happens-before engine's answer (``SyncModel.pending_at``: per warp class and feasible path, a
    ``tcgen05.wait::<kind>`` of the same thread completes them; a register read does not, PTX ISA §9.7.16.6.4.5,
    reference §3.1).  What needs completion: a dealloc of the slot, a hand-over (``is_handover``) whose waiters
    touch the cells (``_handover_matters``; for a load, one whose registers were read on the way or are read after
    it: a load nothing reads is discarded, ``_result_used_after``), a write of the loaded cells (ld), an MMA or
    tcgen05.ld of the stored cells (st)."""
    from tmemlint.analysis.idesc import ld_st_columns
    from tmemlint.analysis.sync import is_handover

    fn = ctx.function
    fam_op = f"tcgen05.{kind}"
    ops = [i for i in fn.instructions if i.family == fam_op]
    if not ops:
        return []
    cols = {i.index: _columns(ctx, i, 1 if kind == "ld" else 0, ld_st_columns(i)) for i in ops}
    sync = ctx.sync
    hazards = []
    for inst in fn.instructions:
        fam = inst.family
        handover = is_handover(inst)
        if not (fam == "tcgen05.dealloc" or handover or (kind == "ld" and fam in (
                "tcgen05.mma", "tcgen05.st", "tcgen05.cp", "tcgen05.shift")) or (kind == "st" and fam in (
                "tcgen05.mma", "tcgen05.ld"))):
            continue
        pending = sync.pending_at(inst, kind).ops
        if not pending and fam != "tcgen05.dealloc":
            continue
        if fam == "tcgen05.dealloc":
            slot = ctx.sites.freed_slot.get(inst.index)
            hit = [p.op.index for p in pending if cols[p.op.index] is None or slot is None
                   or cols[p.op.index][0] == slot]
            hit += _pending_elsewhere(ctx, ops, inst, cols, slot)
            what = "dealloc"
        elif handover:
            hit = [p.op.index for p in pending if _handover_matters(ctx, inst, kind, cols[p.op.index])
                   and (kind != "ld" or p.read or _result_used_after(ctx, p.op, inst))]
            what = "handover"
        elif kind == "ld":
            w = _tmem_writes(ctx, inst)
            hit = [p.op.index for p in pending if cols[p.op.index] is not None
                   and any(_overlap(cols[p.op.index], r) for r in w)]
            what = "overwrite"
        else:
            regs = _mma_regions(ctx, inst) if fam == "tcgen05.mma" else \
                [r for r in [_columns(ctx, inst, 1, ld_st_columns(inst))] if r]
            hit = [p.op.index for p in pending if cols[p.op.index] is not None
                   and any(_overlap(cols[p.op.index], r) for r in regs)]
            what = "access"
        if hit:
            hazards.append((inst, fn.instructions[min(hit)], what))
    return hazards


def _pending_elsewhere(ctx, ops, dealloc, cols, slot) -> list:
    """Indices of the operations ``ops`` (tcgen05.ld or st) that another warp class issues, whose issue is ordered
    before ``dealloc`` but whose completion is not (``SyncModel.completed_before`` False: a barrier after the load
    with no ``tcgen05.wait::ld`` of the loading thread before it), on the slot ``dealloc`` frees."""
    sync = ctx.sync
    classes = ctx.threads.classes
    out = []
    for op in ops:
        c = cols[op.index]
        if c is not None and slot is not None and c[0] != slot:
            continue
        for kd in classes:
            if not sync.executes(kd, dealloc):
                continue
            if any(ka is not kd and sync.executes(ka, op) and sync.completed_before(op, ka, dealloc, kd) is False
                   for ka in classes):
                out.append(op.index)
                break
    return out


def _sync_sites(ctx) -> list:
    """``[(instruction, SyncEvent)]`` of the function's barrier, mbarrier and commit instructions (computed once per
    function: ``RuleCaches.sync_sites``)."""
    cached = ctx.rule_caches.sync_sites
    if cached is None:
        sync = ctx.sync
        sites = [(i, sync.site(i)) for i in ctx.function.instructions if i.op in ("bar", "barrier", "mbarrier")
                 or i.family == "tcgen05.commit"]
        cached = ctx.rule_caches.sync_sites = [(i, st) for i, st in sites if st is not None]
    return cached


def _in_loop(ctx, a, b) -> bool:
    """``b`` after ``a`` and ``a`` again after ``b``: both on one cycle of the CFG (one iteration's segment)."""
    from tmemlint.analysis.control import can_reach

    return can_reach(ctx, a, b) and can_reach(ctx, b, a)


def _loop_keys(ctx, kind: str, klass, inst) -> list:
    """The barrier keys of the ``_sync_sites`` that warp class ``klass`` may execute (``SyncModel.executes``) on one
    CFG cycle with ``inst`` (``_in_loop``), in program order: ``kind`` "commit" the tcgen05.commit sites, "wait"
    the sites that wait.  A function of (kind, class, instruction) alone, memoised in ``RuleCaches.loop_keys``:
    TM302's per-pair questions (``_per_iteration``, ``_iteration_handshake``) ask it for every (load, reading
    class, writer, writing class), each time a scan of every site with two reachability tests (CUTLASS 77
    FMHA backward: 46,848 calls, 4 million ``can_reach``, for some 2,000 distinct answers)."""
    memo = ctx.rule_caches.loop_keys
    k = (kind, id(klass), inst.index)
    hit = memo.get(k)
    if hit is None or hit[0] is not klass:
        sync = ctx.sync
        if kind == "commit":
            keys = [st.key for i, st in _sync_sites(ctx) if i.family == "tcgen05.commit" and sync.executes(klass, i)
                    and _in_loop(ctx, inst, i)]
        else:
            keys = [st.key for i, st in _sync_sites(ctx) if st.waits and sync.executes(klass, i)
                    and _in_loop(ctx, i, inst)]
        hit = memo[k] = (klass, keys)
    return hit[1]


def _per_iteration(ctx, ld, kr, w, km) -> bool:
    """Whether class ``km`` commits ``w`` in its loop to a barrier that class ``kr`` waits on in the loop of its
    ``ld``: each iteration's write is handed to that iteration's load, so the next write comes after the load (a
    persistent kernel's accumulator).  A load that waits once for writes of another loop (the epilogue after the
    main loop) is not such a pair."""
    commits = _loop_keys(ctx, "commit", km, w)
    waits = _loop_keys(ctx, "wait", kr, ld)
    return any(c.may_alias(v) for c in commits for v in waits)


def _class_sites(ctx, roles: dict, klass) -> tuple[list, list]:
    """``(waits, arrivals)``: the ``_sync_sites`` that wait, and those that arrive, which warp class ``klass`` may
    execute (``SyncModel.executes``), in program order; memoised in ``roles`` (by the class's ``id``)."""
    hit = roles.get(id(klass))
    if hit is None:
        sync = ctx.sync
        sites = [(i, st) for i, st in _sync_sites(ctx) if sync.executes(klass, i)]
        hit = roles[id(klass)] = ([(i, st) for i, st in sites if st.waits], [(i, st) for i, st in sites if st.arrives])
    return hit


def _readers_release(ctx, ld, done, kr) -> list:
    """The arrive sites (``_sync_sites``' ``(instruction, site)``) of warp class ``kr`` after a wait of ``done`` (the
    waits that complete its tcgen05.ld ``ld``) and before its next ``ld`` (on the loop's cycle): what each iteration
    of the readers hands back (``_iteration_handshake``, ``_handover_gap``)."""
    from tmemlint.analysis.control import can_reach

    sync = ctx.sync
    return [(i, st) for i, st in _sync_sites(ctx) if st.arrives and sync.executes(kr, i)
            and any(can_reach(ctx, d, i) for d in done) and can_reach(ctx, i, ld)]


def _iteration_handshake(ctx, ld, released, kr, w, km, roles) -> bool:
    """Whether each iteration of warp class ``kr`` (its tcgen05.ld ``ld``) hands the columns back to the next
    iteration of class ``km`` (its write ``w``): ``kr`` arrives, after a wait that completes ``ld`` and before its
    next ``ld``, on a barrier instance (``released``: ``_readers_release``) that ``km`` waits on in its loop before
    ``w``; or a third class waits there for that arrival and then arrives where ``km`` waits (a named barrier of the
    readers, then one elected lane's release).  The barrier instances and who executes what are the ``SyncModel``'s
    (``site``, ``executes``; ``roles``: the memo of ``_class_sites``); an instance whose address is not known
    exactly may be any other, and then orders."""
    if not released:
        return False
    released = [st.key for _i, st in released]
    awaited = _loop_keys(ctx, "wait", km, w)  # the waits of ``km`` in its loop before ``w``
    if any(a.may_alias(b) for a in released for b in awaited):
        return True
    for k2 in ctx.threads.classes:  # one relay: a class that waits for the readers' arrival, then releases
        if k2 is kr or k2 is km:
            continue
        waits, arrivals = _class_sites(ctx, roles, k2)
        for c, sc in waits:
            if not any(sc.key.may_alias(a) for a in released):
                continue
            if any(_in_loop(ctx, c, i) and any(st.key.may_alias(b) for b in awaited) for i, st in arrivals):
                return True
    return False


def _lines(insts) -> str:
    """``line 80`` / ``line 80 and 2 more`` for instructions: the first in line order, and how many others (a
    ``line N`` reference ``lineinfo`` maps to its source position; several PTX lines of one source line would read
    the same position several times)."""
    ns = sorted({i.span.line for i in insts})
    return f"line {ns[0]}" if len(ns) == 1 else f"line {ns[0]} and {len(ns) - 1} more"


def _handover_gap(ctx, ld, done, kr, w, km) -> str:
    """What ``_released_for_others`` knows of the missing hand-over of ``kr``'s load ``ld`` (completed by the waits
    ``done``) to ``km``'s write ``w``, in words, from the facts ``_iteration_handshake`` found missing: which
    arrivals the waits of ``km`` in its loop before ``w`` are for (``SyncModel.site``, ``executes``), whether
    ``kr`` makes some of them, and what ``kr`` arrives on after its wait::ld in the iteration.  The releasing
    thread may be a lane of ``kr``'s own warp (CUTLASS's pipeline ``consumer_release`` from the loading warps)
    or of another warp class; the message says which, as the model sees it."""
    sync = ctx.sync
    sites = _sync_sites(ctx)
    awaited = [(i, st) for i, st in sites if st.waits and sync.executes(km, i) and _in_loop(ctx, i, w)]
    arrivals = [(i, k) for i, st in sites if st.arrives and any(st.key.may_alias(a.key) for _, a in awaited)
                for k in ctx.threads.classes if sync.executes(k, i)]
    released = [i for i, _st in _readers_release(ctx, ld, done, kr)]
    own = [i for i, k in arrivals if k is kr]
    if own:
        return (f"the arrival of {kr!r} on the barrier {km!r} waits on ({_lines(own)}) is not between the "
                f"tcgen05.wait::ld and the next tcgen05.ld: wait for the load (tcgen05.wait::ld) before that arrival")
    after = (f"no arrival of {kr!r} comes between the tcgen05.wait::ld and the next tcgen05.ld" if not released else
             f"the arrivals of {kr!r} after the tcgen05.wait::ld ({_lines(released)}) reach no wait of {km!r}, "
             f"directly or through another warp class")
    join = "; join the readers first (a named barrier over all of them, or an arrival per warp after its wait::ld)"
    if not arrivals:
        return f"{after}, and no arrival reaches the waits of {km!r} before it{join}"
    by: dict[str, list] = {}
    for i, k in arrivals:
        by.setdefault(repr(k), []).append(i)
    others = " and of ".join(f"{k} ({_lines(v)})" for k, v in sorted(by.items()))
    return f"the wait of {km!r} ({_lines([i for i, _ in awaited])}) is for the arrival of {others}, and {after}{join}"


def _released_for_others(ctx):
    """Loads whose completion is not ordered before the next overwrite by another warp class: ``[(ld, writer,
    reading class, writing class, the reading class's waits that complete the load)]``.

    A warp class ``R`` loads columns that an asynchronous write ``W`` of another class ``M`` produced (an MMA whose
    completion reaches the load: ``SyncModel.completes_before(W, M, ld, R)``), both in loops, so ``W``'s next
    execution overwrites what the load read.  ``R`` waits for its load (``tcgen05.wait::ld``: the own-thread
    dataflow sees nothing pending), but unless some arrival of ``R`` after that wait orders it before ``W``
    (``SyncModel.all_happen_before``: ``R``'s own arrive on the barrier ``M`` waits on, or a barrier ``R`` joins
    with the class that arrives), the write-after-read is a race.  The shape of issue 24: one elected lane of one
    warp releases the accumulator for four reading warps with no rendezvous of them (a named barrier, or an
    arrival per warp).  Only a producer/consumer pair the model orders one way (``completes_before`` True) is
    asked the other way (``_iteration_handshake``); the handshake, which reads only barrier sites and CFG paths, is
    looked for first, and only a pair without one is asked ``completes_before``."""
    from tmemlint.analysis.control import can_reach, on_cycle
    from tmemlint.analysis.idesc import ld_st_columns

    insts = ctx.function.instructions
    lds = [i for i in insts if i.family == "tcgen05.ld" and on_cycle(ctx, i)]
    writers = [i for i in insts if i.family in ("tcgen05.mma", "tcgen05.cp") and on_cycle(ctx, i)]
    if not lds or not writers:
        return []
    sync = ctx.sync
    classes = ctx.threads.classes
    waits = [i for i in insts if i.family == "tcgen05.wait::ld" and i.guard is None]
    out = []
    roles: dict = {}  # ``_class_sites`` per class
    for ld in lds:
        cols = _columns(ctx, ld, 1, ld_st_columns(ld))
        found = False
        for kr in classes:
            if found or not sync.executes(kr, ld):
                continue
            done = tuple(w for w in waits if sync.executes(kr, w) and can_reach(ctx, ld, w))
            if not done:
                continue  # the own-thread dataflow reports what nothing waits for
            released = _readers_release(ctx, ld, done, kr)
            for w in writers:
                regs = _touched_regions(ctx, w)
                if cols is not None and regs and not any(_overlap(cols, r) for r in regs):
                    continue
                for km in classes:
                    if km is kr or not sync.executes(km, w) or sync.executes(km, ld):
                        continue
                    # the handshake (barrier sites and CFG paths) before the completion (a simulation per
                    # writer): a pair that hands the columns back every iteration is no race either way
                    if not _per_iteration(ctx, ld, kr, w, km) or \
                            _iteration_handshake(ctx, ld, released, kr, w, km, roles):
                        continue
                    if sync.completes_before(w, km, ld, kr) is True:
                        out.append((ld, w, kr, km, done))
                        found = True
                        break
                if found:
                    break
    return out


@rule("TM302", "tmem-reuse-before-wait-ld", "error",
      "TMEM read by tcgen05.ld then overwritten, handed over or freed with no tcgen05.wait::ld in between")
def tmem_reuse_before_wait_ld(ctx):
    """PTX ISA §9.7.16.6 (reference §3): tcgen05.ld is asynchronous; until tcgen05.wait::ld (or a use of its
    registers) the cells may still be read, so an MMA/st/cp writing them, a hand-over to other threads, or a
    dealloc races with the load (write-after-read)."""
    for inst, ld, what in _pending_hazards(ctx, "ld"):
        text = {"overwrite": f"{inst.family} overwrites TMEM columns that the tcgen05.ld at line {ld.span.line} "
                             f"may still be reading",
                "handover": f"{inst.opcode} hands over to other threads while the tcgen05.ld at line "
                            f"{ld.span.line} may still be reading TMEM",
                "dealloc": f"tcgen05.dealloc frees columns that the tcgen05.ld at line {ld.span.line} may still "
                           f"be reading"}[what]
        place = {"overwrite": f"{inst.family} overwrites its columns", "handover": f"hand-over ({inst.opcode})",
                 "dealloc": "tcgen05.dealloc frees its columns"}[what]
        ctx.report("TM302", inst, text + " (no tcgen05.wait::ld in between)", [(ld, "tcgen05.ld issued here")],
                   group=Grouping(("ld", ld.index), ld, "no tcgen05.wait::ld after this tcgen05.ld, which may still be "
                                  "reading TMEM at {n} later place{s} needing its completion", place))
    for ld, w, kr, km, done in _released_for_others(ctx):
        ctx.report("TM302", ld,
                   f"the tcgen05.ld of {kr!r} is waited for (tcgen05.wait::ld at {_lines(done)}) but nothing of "
                   f"{kr!r} after the wait orders it before the next {w.family} of {km!r} at line {w.span.line}, "
                   f"which overwrites the columns it reads: {_handover_gap(ctx, ld, done, kr, w, km)}",
                   [(w, f"the next {w.family} overwrites the columns")])


@rule("TM303", "st-not-waited", "error",
      "tcgen05.st followed by an mma or ld of the same cells, a hand-over, or a dealloc, with no tcgen05.wait::st")
def st_not_waited(ctx):
    """PTX ISA §9.7.16.6 (reference §3): tcgen05.st is asynchronous; readers of the cells (an MMA, a
    tcgen05.ld), other threads and dealloc must be ordered after tcgen05.wait::st."""
    for inst, st, what in _pending_hazards(ctx, "st"):
        text = {"access": f"{inst.family} reads TMEM columns that the tcgen05.st at line {st.span.line} may "
                          f"still be writing",
                "handover": f"{inst.opcode} hands over to other threads while the tcgen05.st at line "
                            f"{st.span.line} may still be writing TMEM",
                "dealloc": f"tcgen05.dealloc frees columns that the tcgen05.st at line {st.span.line} may still be "
                           f"writing"}[what]
        place = {"access": f"{inst.family} reads its columns", "handover": f"hand-over ({inst.opcode})",
                 "dealloc": "tcgen05.dealloc frees its columns"}[what]
        ctx.report("TM303", inst, text + " (no tcgen05.wait::st in between)", [(st, "tcgen05.st issued here")],
                   group=Grouping(("st", st.index), st, "no tcgen05.wait::st after this tcgen05.st, which may still be "
                                  "writing TMEM at {n} later place{s} needing its completion", place))


@rule("TM304", "accumulator-read-before-complete", "error",
      "tcgen05.ld of columns written by tcgen05.mma/cp with no completion (commit + mbarrier wait) between")
def accumulator_read_before_complete(ctx):
    """PTX ISA §9.7.16.6 (reference §3, canonical pattern "mma result → ld"): MMA and cp are asynchronous; their
    results may be read only after tcgen05.commit's mbarrier completes and the reader waits on it.  One
    happens-before question for every reader, asked of the ``SyncModel``: is the write's completion (its thread's
    tcgen05.commit → that mbarrier's phase → a wait of the reading thread) ordered before the load?  The same
    thread (``SyncModel.own_completion``, on the class's feasible paths: a wait skipped only under a condition
    correlated with the MMA's own, in pipelined loops, is on no path) or another warp role (``_cross_role_reads``,
    ``SyncModel.completion_ordering``, the waits' parities judged per stage).  The message names the missing edge:
    no commit after the MMA, no wait, a wait on another barrier, a wait before the arrival (an earlier phase) or
    after the read, or a wait whose parity names the phase before (it returns at once)."""
    from tmemlint.analysis.idesc import ld_st_columns

    fn = ctx.function
    lds = [i for i in fn.instructions if i.family == "tcgen05.ld"]
    writers = [i for i in fn.instructions if i.family in ("tcgen05.mma", "tcgen05.cp")]
    if not lds or not writers:
        return
    from tmemlint.analysis.control import can_reach

    sync = ctx.sync
    regions = {w.index: (_mma_regions(ctx, w, accumulator_only=True) if w.family == "tcgen05.mma" else
                         [r for r in [_columns(ctx, w, 0, 8)] if r]) for w in writers}
    # the writers with a region in each slot, in program order (an overlap is in one slot): an ld looks only at
    # those, not at every writer of the function
    by_slot: dict = {}
    for w in writers:
        for s in dict.fromkeys(r[0] for r in regions[w.index]):
            by_slot.setdefault(s, []).append(w)
    overlapping: dict = {}  # (columns, slot) -> the writers of the slot with a region that overlaps them, in order
    hits: dict = {}  # ld index -> (writer, Ordering): the same thread reads before the completion
    for ld in lds:
        mine = _columns(ctx, ld, 1, ld_st_columns(ld))
        slot = _slot(ctx, ld, 1)
        if slot is None:
            continue
        cand = overlapping.get((mine, slot))
        if cand is None:
            cand = overlapping[(mine, slot)] = [
                w for w in by_slot.get(slot, ())
                if any((_overlap(mine, r) if mine is not None else r[0] == slot) for r in regions[w.index])]
        cand = [w for w in cand if can_reach(ctx, w, ld)]
        for k in ctx.threads.classes:
            ops = tuple(w for w in cand if sync.executes(k, w))
            if not ops or not sync.executes(k, ld):
                continue
            why = sync.own_completion(k, ops, ld, any_wait=mine is None)
            if why.verdict is False:
                hits[ld.index] = (ops[0], why)
                break
    insts = fn.instructions
    cross = _cross_role_reads(ctx, lds, writers)
    for i in sorted(set(hits) | set(cross)):
        if i in hits:
            w, own = hits[i]
            ctx.report("TM304", insts[i], f"tcgen05.ld reads columns written by the {w.family} at line "
                                          f"{w.span.line} of the same thread, and no path orders the load after "
                                          f"that operation's completion ({own.describe()}): the "
                                          f"asynchronous result may not be complete (tcgen05.commit to an mbarrier "
                                          f"and wait on it)", [(w, "written here")])
            continue
        w, ka, kb, why = cross[i]
        ctx.report("TM304", insts[i], f"tcgen05.ld by {kb!r} reads columns written by the {w.family} of {ka!r} at "
                                      f"line {w.span.line} (another warp role), and the load is not ordered after "
                                      f"that operation's completion ({why.describe()}): wait on the mbarrier its "
                                      f"tcgen05.commit arrives on, for that phase, then tcgen05.fence::"
                                      f"after_thread_sync, before the load", [(w, "written here")])


def _repeats(ctx, inst) -> bool:
    """Whether ``inst`` lies on a cycle of the CFG (a loop body): then some of its executions may precede an
    instruction that others follow, and the happens-before model's loop counts (``order.MANY``) cannot tell which."""
    bit, reach = reach_bits(ctx)
    blk = ctx.cfg.block_of[inst.index]
    return any(n == blk or reach[n] & bit[blk] for n in ctx.cfg.graph.successors(blk))


def _cross_role_reads(ctx, lds, writers) -> dict:
    """TM304 across warp roles: ``{ld index: (writer, writer's class, ld's class, Ordering)}`` for each tcgen05.ld
    that a warp class issues over columns another class writes with tcgen05.mma (D) or tcgen05.cp, where the
    happens-before model (``SyncModel.ordering`` with ``completion``: a ``tcgen05.commit`` of the writer after its
    write, and a wait on that barrier before the load, for a phase that includes the commit's arrival, directly or
    through another class that waited for it) says the load is not ordered after the write's completion on some
    pair of paths.  Columns come from the address sets (``AddressSets``: a stage register gives a set of start
    columns); a load or write whose footprint is not known is not asked about, and an undecided answer (None)
    reports nothing.  The writers of one class that may overlap the load are one group (the latest of them on each
    path must be complete: a commit covers every earlier operation of its thread), less those ordered after the
    load (a later write that the load's hand-over lets happen: CUTLASS-style accumulator reuse), unless both lie
    in loops (then the model's loop counts, ``order.MANY``, order every execution of one after every execution of
    the other, although the write of tile t precedes the load of tile t)."""
    sync = ctx.sync
    classes = ctx.threads.classes
    acc = collect_accesses(list(lds) + list(writers), ctx.values, ctx.address_sets)
    spans: dict[int, list] = {}
    for a in acc:
        if a.role not in ("ld", "d", "cp") or a.addr is None or not a.addr.exact:
            continue
        iv = a.intervals()
        if iv:
            spans[a.inst.index] = [(a.addr.slot, lo, hi) for lo, hi in iv]
    runs = {id(k): [w for w in writers if w.index in spans and sync.executes(k, w)] for k in classes}
    out: dict = {}
    for ld in lds:
        mine = spans.get(ld.index)
        if not mine:
            continue
        for kb in classes:
            if ld.index in out or not sync.executes(kb, ld):
                continue
            for ka in classes:
                if ka is kb:
                    continue
                group = tuple(w for w in runs[id(ka)] if any(_overlap(m, r) for m in mine for r in spans[w.index]))
                if not group:
                    continue
                why = sync.completion_ordering(group, ka, ld, kb)
                if why.verdict is False:
                    # a write ordered after the load is a later write of the cells (the load's own hand-over lets
                    # it happen: write-after-read), not the one the load reads
                    both_loop = _repeats(ctx, ld)
                    group = tuple(w for w in group if (both_loop and _repeats(ctx, w)) or
                                  sync.must_happen_before(ld, kb, w, ka) is not True)
                    if not group:
                        continue
                    why = sync.completion_ordering(group, ka, ld, kb)
                if why.verdict is False:
                    out[ld.index] = (group[-1], ka, kb, why)
                    break
    return out


@rule("TM305", "dealloc-unsynchronized", "error",
      "dealloc with no synchronization after other warps' last tcgen05 access of the allocation")
def dealloc_unsynchronized(ctx):
    """PTX ISA §9.7.16.6 (reference §2.1 "Dealloc readiness", §3): before dealloc every other warp's tcgen05
    access must be ordered before it: tcgen05.fence::before_thread_sync → barrier (or mbarrier wait) → dealloc.

    Asked of the happens-before model (``ctx.sync.all_happen_before``): for each warp class that accesses TMEM
    (other than the deallocating warp itself), the latest access on each of its paths is followed by an arrival on a
    barrier instance the deallocating warp waits on before the dealloc.  Warps that never touch TMEM need not take
    part (a named barrier among exactly the TMEM users is enough)."""
    from tmemlint.analysis.sync import tmem_operand_indices

    sites = ctx.sites
    if not sites.deallocs:
        return
    insts = ctx.function.instructions
    accesses = [i for i in insts if i.op == "tcgen05" and i.family != "tcgen05.dealloc" and tmem_operand_indices(i)]
    if not accesses:
        return
    sync = ctx.sync
    classes = ctx.threads.classes
    used_by = {id(k): tuple(a for a in accesses if sync.executes(k, a)) for k in classes}
    for d in sites.deallocs:
        for kd in classes:
            if not sync.executes(kd, d):
                continue
            unordered = [k for k in classes if used_by[id(k)] and (k is not kd or not one_warp_executes(
                         k, [sync.fact_sets(k, i) for i in (d, *used_by[id(k)])]))
                         and sync.all_happen_before(used_by[id(k)], k, d, kd) is False]
            if not unordered and ENFORCE_COMPLETION:
                incomplete = _incomplete_async(ctx, d, kd, used_by)
                if incomplete is not None:
                    k, op, why = incomplete
                    ctx.report("TM305", d, f"tcgen05.dealloc by {kd!r} frees columns while the {op.family} of {k!r} "
                                           f"at line {op.span.line} may not be complete ({why.describe()}): a barrier "
                                           f"orders its issue, not its completion; its issuing thread commits it "
                                           f"(tcgen05.commit) and that phase must be waited on before the dealloc",
                               [(op, "asynchronous operation on the allocation")])
                    break
            if unordered:
                ctx.report("TM305", d, f"tcgen05.dealloc by {kd!r} is not ordered after the last tcgen05 access of "
                                       f"{unordered[0]!r} on some path (no barrier or mbarrier it arrives on after "
                                       f"that access and this warp waits on before the dealloc): those warps may "
                                       f"still be using the columns",
                           [(used_by[id(unordered[0])][-1], "a TMEM access of those warps")])
                break


#: TM305's completion side (``_incomplete_async``) is off.  With it on, fixtures/, the Triton corpus and the real
#: patterns stay clean and tm305_barrier_mma_incomplete_bad is found: the false positive on
#: fixtures/patterns/warp_role_table_bad (a remainder test of an unrolled loop on an infeasible path) is gone with
#: ``threads.residue_truth``, and the acc_full -> epilogue -> acc_empty chain of a CUTLASS-style teardown
#: (fixtures/ptx/tm305_acc_chain_teardown_good, CUTLASS 70's GEMM) is followed through ``all_happen_before``'s third
#: classes.  What keeps it off: ../shared/cases 08 (good.ptx: thread 0's MMA is never committed, the dealloc follows
#: a bar.sync) and 18 (good.ptx, good_leader.ptx: the commit's mma_done is never waited on) are listed clean, and
#: the completion side reports their deallocs (TM305 at 08/good.ptx:42, 18/good.ptx:44, 18/good_leader.ptx:48),
#: rightly by PTX ISA §9.7.16.6: those shared expectations must be re-judged first; then the bad twin of
#: fixtures/nvcc/tm304_accumulator_read_before_complete gets back its `expect: TM305` (commit 38a1045 reverted).
ENFORCE_COMPLETION = False


def _incomplete_async(ctx, d, kd, used_by):
    """TM305's completion side: ``(class, operation, Ordering)`` for the first warp class (the deallocating one
    included) whose tcgen05.mma operations on TMEM (asynchronous: PTX ISA §9.7.16.6, reference §3 "Before
    dealloc") are not complete before the dealloc ``d`` of class ``kd`` on some path, by the happens-before model
    with ``completion`` (a ``tcgen05.commit`` after the latest of them, whose phase ``kd`` waits for, or a class
    that waited for it and then synchronizes with ``kd``); None when every one is, or when it cannot be decided.
    A ``tcgen05.cp``/``shift`` is not asked about: another thread's MMA that reads its columns completes it (the
    canonical cp → mma hand-over, reference §3), which this question does not follow; the cp of the MMA's own
    thread is covered by that thread's commit."""
    sync = ctx.sync
    for k in ctx.threads.classes:
        ops = tuple(a for a in used_by[id(k)] if a.family == "tcgen05.mma")
        if not ops:
            continue
        why = sync.ordering(ops, k, d, kd, completion=True, phases=False)
        if why.verdict is False and (k is not kd or sync.waits_own_completion(k, ops, d) is not True):
            return k, ops[-1], why
    return None


#: The tcgen05 instructions TM313 asks about: the accesses of columns that a release may have handed back.
_RELEASED_ACCESS = ("tcgen05.ld", "tcgen05.st", "tcgen05.cp")
#: The producer's writes that a release lets start (the accumulator of an MMA, a cp, st or shift).
_PRODUCER_WRITE = ("tcgen05.mma", "tcgen05.cp", "tcgen05.st", "tcgen05.shift")


def _exact_spans(ctx, insts, writes_only: bool = False, warps=None) -> dict[int, list[tuple[int, int, int]]]:
    """``{instruction index: [(slot, lo, hi)]}``: the column intervals each of ``insts`` may touch, from the address
    sets (``AddressSets``; a stage register gives one interval per start column), over all its TMEM operands, or
    only those it writes (``writes_only``: an MMA's D, a cp's, st's or shift's destination); with ``warps``, as those
    warps compute the addresses (``FunctionContext.address_sets_of``).  An operand whose address
    is not known exactly is left out."""
    out: dict[int, list] = {}
    sets = ctx.address_sets if warps is None else ctx.address_sets_of(tuple(warps))
    for a in collect_accesses(list(insts), ctx.values, sets):
        if (writes_only and not a.writes) or a.addr is None or not a.addr.exact:
            continue
        iv = a.intervals()
        if iv:
            out.setdefault(a.inst.index, []).extend((a.addr.slot, lo, hi) for lo, hi in iv)
    return out


@rule("TM313", "access-after-release", "error",
      "tcgen05.ld/st/cp of columns after the thread released them to their producer, before waiting again")
def access_after_release(ctx):
    """PTX ISA §9.7.13.15 (mbarrier: an arrive hands the thread's earlier work to whoever waits for the phase),
    §9.7.16.6 (reference §3): once a consumer has arrived on a stage's "empty" barrier (or ``bar.arrive``d), the
    producer that waits for that phase may issue its next MMA/cp into the stage's columns; a tcgen05.ld, st or cp
    of those columns by the consumer after the arrive and before it waits again races with it (cudnn-frontend
    #652: the epilogue released the accumulator, then loaded one more subtile).

    Three questions to the happens-before model (``ctx.sync``): the releases of the access's warp class still
    pending at the access (``released_before``: no wait since) with the accesses each hands back
    (``Release.handed``); and whether some other class, after a wait on a barrier that may be the released one,
    can write columns the access touches with no wait in between on another barrier the access's class arrives on
    after the access (``reclaims``; a later arrival on the released barrier is a later phase and does not order
    it).  The access must overlap the columns handed back: after releasing stage 0 a consumer may load
    stage 1, which it still owns.  Columns come from the address sets; an access or write whose columns are not
    known exactly is not asked about."""
    insts = ctx.function.instructions
    accesses = [i for i in insts if i.family in _RELEASED_ACCESS]
    if not accesses:
        return
    sync = ctx.sync
    if not any(i.op in ("mbarrier", "bar", "barrier") and (st := sync.site(i)) is not None and st.arrives
               and not st.waits for i in insts):
        return
    classes = ctx.threads.classes
    pending = {id(k): [x for x in accesses if sync.executes(k, x) and sync.released_before(k, x)] for k in classes}
    if not any(pending.values()):
        return
    writers = [i for i in insts if i.family in _PRODUCER_WRITE]
    waits = [i for i in insts if (st := sync.site(i)) is not None and st.waits]
    # the columns as each warp computes them (FunctionContext.address_sets_of): FlashAttention-4's softmax warps
    # store to `(warp > 3) * 128 + c` with the lane field `(warp & 3) * 32`; a union over a class's warps would put
    # warp 4's columns with warp 1's lanes
    warps = sorted({w for k in classes for w in k.warps})
    per_warp = {w: _exact_spans(ctx, list(dict.fromkeys(accesses + writers)), warps=(w,)) for w in warps}
    written = {w: _exact_spans(ctx, writers, writes_only=True, warps=(w,)) for w in warps}
    reported: set[int] = set()
    for kb in classes:
        for x in pending[id(kb)]:
            if x.index in reported:
                continue
            for rel in sync.released_before(kb, x):
                hit = _reclaiming_write(ctx, rel, x, kb, per_warp, writers, written, waits)
                if hit is None:
                    continue
                u, ka = hit
                ctx.report("TM313", x, f"{x.family} by {kb!r} touches columns this thread released at line "
                                       f"{rel.inst.span.line} ({rel.inst.op}.{'.'.join(rel.inst.parts[1:2])}) and has "
                                       f"not waited for again: the {u.family} of {ka!r} at line {u.span.line}, issued "
                                       f"after its wait on that barrier, may already be writing them (finish the "
                                       f"access, and its tcgen05.wait, before the release)",
                           [(rel.inst, "the columns are released here"),
                            (u, "the producer's next write of them")])
                reported.add(x.index)
                break


#: Warp-wide TMEM accesses: a warp reaches only the 32 lanes of its quadrant, warp % 4 (PTX ISA §9.7.16.2.3).
_QUADRANT_ACCESS = ("tcgen05.ld", "tcgen05.st")


def _cells_meet(ctx, x, wb, u, wa, rel, per_warp, written) -> bool:
    """Whether the write ``u`` as warp ``wa`` computes it touches cells (lanes x columns) that the access ``x`` of
    warp ``wb`` touches and that ``wb`` handed back with ``rel`` (columns from each warp's own address sets; lanes
    by quadrant when both are warp-wide ld/st: they meet only in the same quadrant); False when either may touch
    several intervals (it cannot be told that they meet)."""
    if x.family in _QUADRANT_ACCESS and u.family in _QUADRANT_ACCESS and wa % 4 != wb % 4:
        return False
    mine = per_warp[wb].get(x.index)
    cols = written[wa].get(u.index)
    handed = [c for h in rel.handed for c in per_warp[wb].get(h.index, ())]
    # an error needs the cells to meet on every path: each of the two must have one known interval (a stage
    # register with several possible columns, the same set for both, is not a proof that they meet)
    if not (mine and cols and handed) or len(mine) != 1 or len(cols) != 1:
        return False
    return _overlap(cols[0], mine[0]) and any(_overlap(cols[0], h) for h in handed)


def _reclaiming_write(ctx, rel, x, kb, per_warp, writers, written, waits):
    """``(write, class)`` for TM313: a tcgen05 write ``u`` of a warp class ``ka`` other than ``kb`` that ``ka`` can
    issue after one of its waits on a barrier that may be the one ``rel`` arrives on, over cells both handed back
    with ``rel`` (``u`` refills that stage) and touched by the access ``x`` (``_cells_meet``, warp by warp), unordered
    after ``x`` (``SyncModel.reclaims``, unless ``SyncModel.all_happen_before`` proves ``x`` ordered before ``u``);
    None when there is none.
    After releasing stage 0 a consumer may load stage 1: the producer's write of stage 1 overlaps none of the
    columns handed back."""
    sync = ctx.sync
    for ka in ctx.threads.classes:
        if ka is kb:
            continue
        waits_k = [w for w in waits if sync.site(w).key.may_alias(rel.key) and sync.executes(ka, w)]
        if not waits_k:
            continue
        for u in writers:
            if not any(_cells_meet(ctx, x, wb, u, wa, rel, per_warp, written) for wa in ka.warps for wb in kb.warps) \
                    or not sync.executes(ka, u):
                continue
            # the barrier-key question is a heuristic: two barriers of one array at offsets not known (FA4's
            # S_full/P_full and P_full_lastsplit) may alias, so a wait on the second is taken for a wait on the
            # released one; a proof of the happens-before model that ``x`` is ordered before ``u`` overrides it
            if sync.reclaims(x, kb, u, ka, rel.key) and sync.all_happen_before((x,), kb, u, ka) is not True:
                return u, ka
    return None


@rule("TM306", "missing-tcgen05-fence", "info",
      "synchronization between tcgen05 operations without tcgen05.fence::before/after_thread_sync",
      enabled=False)
def missing_tcgen05_fence(ctx):
    """PTX ISA §9.7.16.6.3-4 (reference §3): the canonical patterns place tcgen05.fence::before_thread_sync between
    a thread's asynchronous tcgen05 operations (ld, st, mma, cp, shift) and the synchronization that hands them
    over (an arrive, a barrier; ``tcgen05.commit`` is one implicitly), and tcgen05.fence::after_thread_sync
    between a wait (mbarrier wait, barrier) and the asynchronous tcgen05 operations that it orders after other
    threads' work, and between the synchronization and a tcgen05.dealloc of columns that other threads used (the
    ISA's "before dealloc" pattern: fence::before_thread_sync, barrier, fence::after_thread_sync, dealloc).  The
    synchronization events and their fences are the happens-before engine's (``SyncModel.fencing``: releases are
    the sites that arrive, waits those that wait, on the paths of each warp class, across basic blocks); one
    finding per synchronization instruction, at it.  Triton, CuTe DSL and CUTLASS output omit the fences, so this
    rule is opt-in."""
    insts = ctx.function.instructions
    if not any(i.family in ASYNC_TCGEN05 for i in insts):
        return
    fencings = ctx.sync.unfenced()
    handed: dict[int, list[int]] = {}  # async tcgen05 operation -> the releases it reaches with no fence
    after: dict[int, int] = {}  # wait -> the async tcgen05 operation after it with no fence between
    for f in fencings:
        for a in f.unfenced_before:
            handed.setdefault(a.index, []).append(f.inst.index)
        if f.unfenced_after is not None:
            after[f.inst.index] = f.unfenced_after.index
    # one root cause per operation with no fence before its hand-overs: reported at the first of them
    before: dict[int, tuple[int, list[int]]] = {}
    for a, syncs in sorted(handed.items()):
        first, *rest = sorted(syncs)
        before.setdefault(first, (a, rest))
    for idx in sorted(set(before) | set(after)):
        inst = insts[idx]
        parts = []
        related = []
        if idx in before:
            a = insts[before[idx][0]]
            rest = before[idx][1]
            more = f" (and {len(rest)} later synchronization{'s' if len(rest) > 1 else ''})" if rest else ""
            parts.append(f"synchronization after the {a.family} at line {a.span.line} without "
                         f"tcgen05.fence::before_thread_sync{more}")
            related.append((a, f"the {a.family} handed over without tcgen05.fence::before_thread_sync"))
            related.extend((insts[r], "a later synchronization it reaches unfenced") for r in rest)
        if idx in after:
            b = insts[after[idx]]
            parts.append(f"{'and ' if parts else 'synchronization '}followed by the {b.family} at line "
                         f"{b.span.line} without tcgen05.fence::after_thread_sync")
            related.append((b, f"the {b.family} not ordered after this wait by tcgen05.fence::after_thread_sync"))
        ctx.report("TM306", inst, " ".join(parts), related)
