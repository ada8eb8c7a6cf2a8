"""Ordering of the asynchronous tcgen05 operations (family 3xx)."""

from __future__ import annotations

from tmemlint.analysis.control import reach_bits
from tmemlint.analysis.regions import collect_accesses
from tmemlint.analysis.sync import ASYNC_TCGEN05
from tmemlint.analysis.threads import one_warp_executes
from tmemlint.analysis.values import defined_regs, used_regs
from tmemlint.checks.context import Grouping
from tmemlint.checks.registry import rule
from tmemlint.ir import Reg


def pending_ld_uses(ctx) -> dict[int, int]:
    """For each tcgen05.ld (by index), the first instruction (by index) that reads one of its destination registers
    while no tcgen05.wait::ld has executed since the ld, on some path (a forward may-analysis over the CFG: the
    pending set at a block entry is the union over its predecessors; ``control.must_state`` with a union meet).

    A register-to-register ``mov`` of a pending destination is a rename, not a use (nvcc copies the loop-carried
    result of a load issued in one iteration and waited for in the next): the copy becomes pending for the same ld,
    and only a later real read of the copy or of the source counts (reported at the bit-cast ``mov`` when the copy is
    a cast into another register group: the read began there).  The pending set holds ``(register name, ld index,
    bit-cast index or -1)`` triples (PTX ISA tcgen05.wait, ``#tcgen05-instructions-tcgen05-wait``; register dependencies
    §9.7.16.6.4.5; reference §2.2)."""
    from tmemlint.analysis.control import must_state

    fn = ctx.function
    if not any(i.family == "tcgen05.ld" for i in fn.instructions):
        return {}

    copies = {i.index for i in fn.instructions if _is_copy(i)}
    names_memo: dict[frozenset, frozenset] = {frozenset(): frozenset()}

    def names(pending: frozenset) -> frozenset:
        """The registers of a pending set (a set holds hundreds of entries after a wide tcgen05.ld; the transfer
        derives the names of the set it makes from those of its input, so most instructions test their
        destinations against these names instead of scanning the set)."""
        hit = names_memo.get(pending)
        if hit is None:
            hit = names_memo[pending] = frozenset(p[0] for p in pending)
        return hit

    def made(pending: frozenset, regs: frozenset) -> frozenset:
        names_memo.setdefault(pending, regs)
        return pending

    def transfer(pending: frozenset, inst) -> frozenset:
        fam = inst.family
        if fam == "tcgen05.wait::ld":
            return frozenset() if inst.guard is None else pending
        if pending and inst.index in copies:
            dst, src = inst.operands[0].name, inst.operands[1].name
            cast = dst.rstrip("0123456789") != src.rstrip("0123456789")
            have = names(pending)
            moved = {(ld, inst.index if cast and site < 0 else site) for reg, ld, site in pending if reg == src} \
                if src in have else set()
            if inst.guard is None and dst in have:  # a guarded copy may not run: the old entries of dst stay
                pending = made(frozenset(p for p in pending if p[0] != dst), have - {dst})
                have = have - {dst}
            return made(pending | {(dst, ld, site) for ld, site in moved}, have | {dst} if moved else have)
        if pending:
            defs = defined_regs(inst)
            if defs:
                have = names(pending)
                killed = {r.name for r in defs}
                if not have.isdisjoint(killed):
                    pending = made(frozenset(p for p in pending if p[0] not in killed), have - killed)
        if fam == "tcgen05.ld":
            regs = defined_regs(inst)
            pending = made(pending | {(r.name, inst.index, -1) for r in regs}, names(pending) | {r.name for r in regs})
        return pending

    def meet(x: frozenset, y: frozenset) -> frozenset:
        return made(x | y, names(x) | names(y))

    # only a wait::ld and an instruction that writes registers (a copy, a tcgen05.ld, any redefinition) change the
    # pending set
    before = must_state(ctx, transfer, frozenset(), meet=meet,
                        relevant=lambda i: bool(defined_regs(i)) or i.family == "tcgen05.wait::ld")
    first_use: dict[int, int] = {}
    for inst in fn.instructions:
        pending = before.get(inst.index)
        if not pending or inst.family == "tcgen05.wait::ld" or inst.index in copies:
            continue
        used = {r.name for r in used_regs(inst)}
        if names(pending).isdisjoint(used):
            continue
        for reg, ld, site in pending:
            at = site if site >= 0 else inst.index  # a bit-cast read before the wait is where the read began
            if reg in used and (ld not in first_use or at < first_use[ld]):
                first_use[ld] = at
    return first_use


def _is_copy(inst) -> bool:
    """A register-to-register ``mov`` (PTX ISA ``#data-movement-and-conversion-instructions-mov``) within one
    register group (the name without its number: ``%r238`` ← ``%r229``, the same ``.reg .b32 %r<N>`` declaration).
    That is the copy compilers emit for a loop-carried value (an SSA phi): it renames the value and computes nothing.
    A bit-typed ``mov`` into another group (``mov.b32 %f2, %r6``: nvcc's ``__uint_as_float`` right after a
    ``tcgen05.ld`` into ``"=r"`` registers) only reinterprets the bits: also a rename, the float's read is the use."""
    ops = inst.operands
    if inst.op != "mov" or len(ops) != 2 or type(ops[0]) is not Reg or type(ops[1]) is not Reg:
        return False
    dst, src = ops[0].name, ops[1].name
    if "." in src:
        return False
    # a bit-cast into another register group (nvcc's `mov.b32 %f1, %r1` for __uint_as_float right after the load)
    # moves the value without computing with it: a rename too; the float's later read is the use
    return dst.rstrip("0123456789") == src.rstrip("0123456789") or any(p in inst.parts for p in ("b16", "b32", "b64"))


@rule("TM301", "ld-used-before-wait", "info",
      "destination registers of tcgen05.ld read before tcgen05.wait::ld on some path (legal; off by default)",
      enabled=False)
def ld_used_before_wait(ctx):
    """PTX ISA §9.7.16.6.4.5 orders a true register dependency on a tcgen05.ld result in the same thread, so this
    is legal: info, off by default (rules catalog: it fires on most correct production kernels).  Enabled with
    ``--extend-select TM301`` as a portability and readability note; TM302 is the hazard (a register use does not
    complete the load for a later overwrite, hand-over or dealloc)."""
    insts = ctx.function.instructions
    for ld, use in sorted(pending_ld_uses(ctx).items()):
        ctx.report("TM301", insts[use],
                   f"reads a destination register of the tcgen05.ld at line {insts[ld].span.line} before "
                   f"tcgen05.wait::ld", [(insts[ld], "tcgen05.ld issued here")])


# ---- pending asynchronous tcgen05.ld / tcgen05.st (TM302, TM303) ----------------------------------------------

def _guard_key(ctx, inst):
    """Canonical key of ``inst``'s guard (same key: same condition), or None when unguarded."""
    from tmemlint.analysis.threads import normalize
    from tmemlint.analysis.values import TOP

    if inst.guard is None:
        return None
    v = ctx.values.reg_value(inst, inst.guard.reg)
    if v is TOP:
        return ("reg", inst.guard.reg.name, inst.guard.negated)
    key, pol = normalize(v)
    return (key, pol != inst.guard.negated)


def _columns(ctx, inst, k, width):
    """``(slot, lo, hi)`` columns of TMEM operand ``k`` of ``inst``, or None when not constant."""
    from tmemlint.analysis.values import TOP

    if k >= len(inst.operands) or width is None:
        return None
    v = ctx.values.value(inst, inst.operands[k])
    if v is TOP or v[0] != "tmem" or v[2] is None:
        return None
    return (v[1], v[2], v[2] + width)


def _slot(ctx, inst, k):
    """The allocation slot of TMEM operand ``k`` of ``inst`` (offset known or not), or None."""
    from tmemlint.analysis.values import TOP

    if k >= len(inst.operands):
        return None
    v = ctx.values.value(inst, inst.operands[k])
    return v[1] if v is not TOP and v[0] == "tmem" else None


def _mma_regions(ctx, inst, accumulator_only: bool = False):
    """``[(slot, lo, hi)]`` TMEM columns a tcgen05.mma reads or writes (D from a constant idesc; other
    bracketed operands: A 8 columns, scale factors 4); only D's with ``accumulator_only``."""
    from tmemlint.analysis.idesc import A_TMEM_COLUMNS, SCALE_COLUMNS, decode_idesc, mma_kind
    from tmemlint.analysis.sync import tmem_operand_indices
    from tmemlint.analysis.values import TOP

    va = ctx.values
    out = []
    ks = tmem_operand_indices(inst)
    idesc_k = 4 if inst.has("sp") else 3
    n = None
    if idesc_k < len(inst.operands):
        iv = va.value(inst, inst.operands[idesc_k])
        if iv is not TOP and iv[0] == "c":
            n = decode_idesc(iv[1], mma_kind(inst)).n or None
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


#: Whether a pending tcgen05.ld's registers were read since its issue (``_pending_dataflow``'s state).
_UNREAD, _READ = False, True


def _compared_registers(ctx, branch) -> frozenset:
    """``(register, reaching definitions)`` of each register that the ``setp`` defining ``branch``'s guard
    compares (the predicate's single reaching definition; empty when it is not a ``setp``)."""
    g = branch.guard
    if g is None:
        return frozenset()
    va = ctx.values
    defs = va.reaching_defs(branch, g.reg.name)
    if len(defs) != 1:
        return frozenset()
    setp = ctx.function.instructions[defs[0]]
    if setp.op != "setp":
        return frozenset()
    return frozenset((o.name, va.reaching_defs(setp, o.name)) for o in setp.operands[1:] if type(o) is Reg)


def _exit_correlated(ctx, ops, wait: str):
    """Loop exits that the flat dataflow cannot decide for a pending operation: ``{(branch block, successor):
    {op index}}`` where the conditional branch ending ``branch block`` leaves a natural loop that holds the
    operation and an unguarded ``wait`` (so the operation is waited if the loop goes on), and the branch's
    comparison reads a register (with the same reaching definitions) that a comparison deciding within the
    iteration whether the operation is issued also reads.  The software-pipelined epilogue issues the next load
    under ``c != last`` and exits on ``c >= last``: whether a load can be pending at the exit depends on the
    values the counter takes, which this dataflow does not track; such an operation is not carried across that
    exit (a documented limit: no guessed error)."""
    from tmemlint.analysis.control import control_dependences, natural_loops

    cfg = ctx.cfg
    blocks = cfg.blocks
    deps = control_dependences(ctx)
    loops = natural_loops(ctx)
    waits = {cfg.block_of[i.index] for i in ctx.function.instructions if i.family == wait and i.guard is None}
    out: dict = {}
    g = cfg.graph
    for op in ops:
        home = cfg.block_of[op.index]
        for body in loops:
            if home not in body or not waits & body:
                continue
            # the comparisons that decide within an iteration whether the operation is issued: its guard, and the
            # branches it is control dependent on whose successors all stay in the loop (not the loop's own test)
            ctl = frozenset().union(*(_compared_registers(ctx, blocks[b].instructions[-1]) for b in deps.get(home, ())
                                      if b in body and blocks[b].instructions
                                      and all(n in body for n in g.successors(b))))
            if op.guard is not None:
                ctl |= _compared_registers(ctx, op)
            if not ctl:
                continue
            for a in body:
                last = blocks[a].instructions[-1] if a in blocks and blocks[a].instructions else None
                if last is None or last.op != "bra" or last.guard is None:
                    continue
                if not _compared_registers(ctx, last) & ctl:
                    continue
                for n in g.successors(a):
                    if n in blocks and n not in body:
                        out.setdefault((a, n), set()).add(op.index)
    return out


def _pending_dataflow(ctx, kind: str):
    """Forward may-dataflow of unwaited tcgen05.ld (``kind="ld"``) or tcgen05.st (``"st"``) per thread.

    A pending operation leaves the set at an unguarded ``tcgen05.wait::<kind>`` (a guarded one clears those
    issued under the same condition).  Reading a tcgen05.ld's destination registers does not complete it: the
    register dependency orders the value, not the TMEM read, and an overwrite, hand-over or dealloc has no data
    dependence on it (PTX ISA §9.7.16.6.4.5, reference §3.1).  A hand-over races with a pending load whose
    registers were read on the way to it or are read after it (one whose result nothing reads is discarded, and
    what it still reads is observed by no one: ``_result_used_after``).  A loop exit whose test is correlated with the
    operation's own condition through a loop counter is not crossed (``_exit_correlated``).  Yields
    ``(instruction, pending op, what)`` hazards."""
    from tmemlint.analysis.idesc import ld_st_columns
    from tmemlint.analysis.sync import is_handover

    fn = ctx.function
    cfg = ctx.cfg
    fam_op = f"tcgen05.{kind}"
    wait = f"tcgen05.wait::{kind}"
    ops = [i for i in fn.instructions if i.family == fam_op]
    if not ops:
        return []
    info = {}
    for i in ops:
        k = 1 if kind == "ld" else 0
        info[i.index] = (_columns(ctx, i, k, ld_st_columns(i)), _guard_key(ctx, i),
                         {r.name for r in defined_regs(i)} if kind == "ld" else set())
    blocks = cfg.blocks
    order = [n for n in cfg.reverse_postorder() if n in blocks]
    preds = {n: [p for p in cfg.graph.predecessors(n) if p in blocks] for n in order}
    out_state = {n: frozenset() for n in order}
    hazards: dict = {}
    undecided = _exit_correlated(ctx, ops, wait)

    # a load's registers read on the way (``_READ``): the hand-over is a race although nothing reads them after it
    readers: dict = {}
    if kind == "ld":
        for i in ops:
            for r in defined_regs(i):
                for u in ctx.values.uses_of(i.index, r.name):
                    readers.setdefault(u, set()).add(i.index)

    def entry_state(n) -> set:
        cur: set = set()
        for p in preds[n]:
            drop = undecided.get((p, n))
            cur |= {e for e in out_state[p] if e[0] not in drop} if drop else out_state[p]
        return cur

    def step(pending: set, inst, record: bool):
        fam = inst.family
        if fam == wait:
            if inst.guard is None:
                pending.clear()
            else:
                g = _guard_key(ctx, inst)
                for e in [e for e in pending if info[e[0]][1] == g]:
                    pending.discard(e)
            return
        if not pending:
            if fam == fam_op:
                pending.add((inst.index, _UNREAD))
            return
        if record:
            what = None
            if fam == "tcgen05.dealloc":
                slot = ctx.sites.freed_slot.get(inst.index)
                hit = [p for p, _ in pending if info[p][0] is None or slot is None or info[p][0][0] == slot]
                what = ("dealloc", hit)
            elif is_handover(inst):
                hit = [p for p, read in pending if _handover_matters(ctx, inst, kind, info[p][0])
                       and (kind != "ld" or read or _result_used_after(ctx, fn.instructions[p], inst))]
                what = ("handover", hit)
            elif kind == "ld" and fam in ("tcgen05.mma", "tcgen05.st", "tcgen05.cp", "tcgen05.shift"):
                w = _tmem_writes(ctx, inst)
                hit = [p for p, _ in pending if info[p][0] is not None and any(_overlap(info[p][0], r) for r in w)]
                what = ("overwrite", hit)
            elif kind == "st" and fam in ("tcgen05.mma", "tcgen05.ld"):
                regs = _mma_regions(ctx, inst) if fam == "tcgen05.mma" else \
                    [r for r in [_columns(ctx, inst, 1, ld_st_columns(inst))] if r]
                hit = [p for p, _ in pending if info[p][0] is not None and any(_overlap(info[p][0], r) for r in regs)]
                what = ("access", hit)
            if what and what[1]:
                hazards.setdefault(inst.index, (what[0], min(what[1])))
        read = readers.get(inst.index)
        if read:
            for e in [e for e in pending if e[0] in read and not e[1]]:
                pending.discard(e)
                pending.add((e[0], _READ))
        if fam == fam_op:
            pending.add((inst.index, _UNREAD))

    # a block whose predecessors' states are those it was last computed from is skipped (``step`` without
    # recording is a function of the state): the same rounds and states as recomputing every block
    version = {n: 0 for n in order}
    seen: dict = {}
    changed = True
    while changed:
        changed = False
        for n in order:
            stamp = tuple(version[p] for p in preds[n])
            if seen.get(n) == stamp:
                continue
            seen[n] = stamp
            cur = entry_state(n)
            for inst in blocks[n].instructions:
                step(cur, inst, False)
            fz = frozenset(cur)
            if fz != out_state[n]:
                out_state[n] = fz
                version[n] += 1
                changed = True
    for n in order:
        cur = entry_state(n)
        for inst in blocks[n].instructions:
            step(cur, inst, True)
    insts = fn.instructions
    return [(insts[i], insts[p], what) for i, (what, p) in sorted(hazards.items())]


def _sync_sites(ctx) -> list:
    """``[(instruction, SyncEvent)]`` of the function's barrier, mbarrier and commit instructions."""
    sync = ctx.sync
    sites = [(i, sync.site(i)) for i in ctx.function.instructions if i.op in ("bar", "barrier", "mbarrier")
             or i.family == "tcgen05.commit"]
    return [(i, st) for i, st in sites if st is not None]


def _per_iteration(ctx, ld, kr, w, km) -> bool:
    """Whether class ``km`` commits ``w`` in its loop to a barrier that class ``kr`` waits on in the loop of its
    ``ld``: each iteration's write is handed to that iteration's load, so the next write comes after the load (a
    persistent kernel's accumulator).  A load that waits once for writes of another loop (the epilogue after the
    main loop) is not such a pair."""
    from tmemlint.analysis.control import can_reach

    sync = ctx.sync

    def in_loop(a, b) -> bool:
        return can_reach(ctx, a, b) and can_reach(ctx, b, a)

    sites = _sync_sites(ctx)
    commits = [st.key for i, st in sites if i.family == "tcgen05.commit" and sync.executes(km, i) and in_loop(w, i)]
    waits = [st.key for i, st in sites if st.waits and sync.executes(kr, i) and in_loop(i, ld)]
    return any(c.may_alias(v) for c in commits for v in waits)


def _iteration_handshake(ctx, ld, done, kr, w, km) -> bool:
    """Whether each iteration of warp class ``kr`` (its tcgen05.ld ``ld``, completed by the waits ``done``) hands
    the columns back to the next iteration of class ``km`` (its write ``w``): ``kr`` arrives, after a wait of
    ``done`` and before its next ``ld`` (on the loop's cycle), on a barrier instance that ``km`` waits on in its
    loop before ``w``; or a third class waits there for that arrival and then arrives where ``km`` waits (a named
    barrier of the readers, then one elected lane's release).  The barrier instances and who executes what are the
    ``SyncModel``'s (``site``, ``executes``); an instance whose address is not known exactly may be any other, and
    then orders."""
    from tmemlint.analysis.control import can_reach

    sync = ctx.sync
    sites = _sync_sites(ctx)

    def in_loop(a, b) -> bool:  # ``b`` after ``a`` and ``a`` again after ``b``: one iteration's segment
        return can_reach(ctx, a, b) and can_reach(ctx, b, a)

    released = [st.key for i, st in sites if st.arrives and sync.executes(kr, i)
                and any(can_reach(ctx, d, i) for d in done) and can_reach(ctx, i, ld)]
    if not released:
        return False
    awaited = [st.key for i, st in sites if st.waits and sync.executes(km, i) and in_loop(i, w)]
    if any(a.may_alias(b) for a in released for b in awaited):
        return True
    for k2 in ctx.threads.classes:  # one relay: a class that waits for the readers' arrival, then releases
        if k2 is kr or k2 is km:
            continue
        for c, sc in sites:
            if not (sc.waits and sync.executes(k2, c) and any(sc.key.may_alias(a) for a in released)):
                continue
            if any(st.arrives and sync.executes(k2, i) and in_loop(c, i) and any(st.key.may_alias(b) for b in awaited)
                   for i, st in sites):
                return True
    return False


def _released_for_others(ctx):
    """Loads whose completion is not ordered before the next overwrite by another warp class: ``[(ld, writer,
    reading class, writing class)]``.

    A warp class ``R`` loads columns that an asynchronous write ``W`` of another class ``M`` produced (an MMA whose
    completion reaches the load: ``SyncModel.completes_before(W, M, ld, R)``), both in loops, so ``W``'s next
    execution overwrites what the load read.  ``R`` waits for its load (``tcgen05.wait::ld``: the own-thread
    dataflow sees nothing pending), but unless some arrival of ``R`` after that wait orders it before ``W``
    (``SyncModel.all_happen_before``: ``R``'s own arrive on the barrier ``M`` waits on, or a barrier ``R`` joins
    with the class that arrives), the write-after-read is a race.  The shape of issue 24: one elected lane of one
    warp releases the accumulator for four reading warps with no rendezvous of them (a named barrier, or an
    arrival per warp).  Only a producer/consumer pair the model orders one way (``completes_before`` True) is
    asked the other way (``_iteration_handshake``)."""
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
    for ld in lds:
        cols = _columns(ctx, ld, 1, ld_st_columns(ld))
        found = False
        for kr in classes:
            if found or not sync.executes(kr, ld):
                continue
            done = tuple(w for w in waits if sync.executes(kr, w) and can_reach(ctx, ld, w))
            if not done:
                continue  # the own-thread dataflow reports what nothing waits for
            for w in writers:
                regs = _touched_regions(ctx, w)
                if cols is not None and regs and not any(_overlap(cols, r) for r in regs):
                    continue
                for km in classes:
                    if km is kr or not sync.executes(km, w) or sync.executes(km, ld):
                        continue
                    if not _per_iteration(ctx, ld, kr, w, km) or sync.completes_before(w, km, ld, kr) is not True:
                        continue
                    if not _iteration_handshake(ctx, ld, done, kr, w, km):
                        out.append((ld, w, kr, km))
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
    for inst, ld, what in _pending_dataflow(ctx, "ld"):
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
    for ld, w, kr, km in _released_for_others(ctx):
        ctx.report("TM302", ld,
                   f"the tcgen05.ld of {kr!r} is waited for (tcgen05.wait::ld) but nothing of {kr!r} after the wait "
                   f"orders it before the next {w.family} of {km!r} at line {w.span.line}, which overwrites the "
                   f"columns it reads: the release is made without these warps (an elected lane of another warp "
                   f"arrives for them); join the readers first (a named barrier over all of them, or an arrival per "
                   f"warp after its wait::ld)",
                   [(w, f"the next {w.family} overwrites the columns")])


@rule("TM303", "st-not-waited", "error",
      "tcgen05.st followed by an mma or ld of the same cells, a hand-over, or a dealloc, with no tcgen05.wait::st")
def st_not_waited(ctx):
    """PTX ISA §9.7.16.6 (reference §3): tcgen05.st is asynchronous; readers of the cells (an MMA, a
    tcgen05.ld), other threads and dealloc must be ordered after tcgen05.wait::st."""
    for inst, st, what in _pending_dataflow(ctx, "st"):
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
