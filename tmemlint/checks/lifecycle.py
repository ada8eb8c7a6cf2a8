"""Allocation lifecycle rules (family 1xx): leaks and column counts."""

from __future__ import annotations

from tmemlint.analysis.cluster import EITHER, PairRoles
from tmemlint.analysis.control import lane_varying_controls
from tmemlint.analysis.sync import WARP_COLLECTIVE, cta_group, peer_arrive_key
from tmemlint.analysis.tmem import valid_ncols
from tmemlint.analysis.values import SymAddr
from tmemlint.checks.registry import rule
from tmemlint.findings import Severity
from tmemlint.ir import Sym


@rule("TM101", "tmem-leak", "error",
      "an allocation that reaches kernel exit on some feasible path without a matching dealloc")
def tmem_leak(ctx):
    """PTX ISA §9.7.16.7.1: all TMEM allocated by a CTA must be deallocated before the kernel exits.  Reported on
    the alloc, with the exit reached on the leaking path."""
    if not ctx.function.is_entry:
        return
    lc = ctx.lifecycle
    sites = ctx.sites
    seen = set()
    for again in sorted(lc.realloc):
        slot = sites.slot_of[again]
        earlier = [a for a in sites.allocs_of_slot(slot) if a.index != again]
        if not earlier or again in lc.after_relinquish:
            continue  # the same alloc in a loop (freed from another warp), or an alloc that traps (TM105)
        seen.add(slot)
        first = earlier[0]
        insts = ctx.function.instructions
        ctx.report("TM101", first, f"the TMEM address allocated here is overwritten in slot {slot[1]} by the "
                                   f"tcgen05.alloc at line {insts[again].span.line} before it is freed: these "
                                   f"columns can no longer be deallocated",
                   [(insts[again], "the slot is written again here")])
    for alloc in sites.allocs:
        slot = sites.slot_of[alloc.index]
        if slot in seen:
            continue
        seen.add(slot)
        hit = lc.find_leak(slot)
        if hit is None:
            continue
        run, st = hit
        first = sites.allocs_of_slot(slot)
        site = next((a for a in first if a.index in run.executed), first[0])
        ncols = sites.ncols.get(site.index)
        what = f"{ncols} TMEM columns" if ncols else "TMEM columns"
        related = []
        flow = [(site, "allocated here", run.klass)]
        if st.exit_inst is not None:
            related.append((st.exit_inst, f"the kernel exits here with the allocation live ({run.klass!r})"))
            flow.append((st.exit_inst, "exits here without tcgen05.dealloc", run.klass))
        witness = {"facts": st.facts, "avoid": lambda i: i.family == "tcgen05.dealloc"}
        frees = {("f", slot), ("f", "*")}
        if lc.conditional(run, st, lambda s: bool(s.prop & frees)):
            ctx.report("TM101", site,
                       f"{what} allocated here are not deallocated on a path where the warps that free them decide "
                       f"differently from {run.klass!r} on values each computed itself (a tile loop that runs zero "
                       f"times for one role, a tile valid for one role only): if every warp sees the same tiles, as a "
                       f"launch normally guarantees, this path cannot happen", related, flow,
                       severity=Severity.WARNING, **witness)
            continue
        ctx.report("TM101", site,
                   f"{what} allocated here are not deallocated on some path to kernel exit "
                   f"(a CTA that exits holding TMEM makes the next CTA's tcgen05.alloc wait forever)",
                   related, flow, **witness)
    # allocations made in .func callees (analysis.calls): reported at the callee's alloc, the call as related
    callee_sites = lc.callee_alloc_sites()
    for slot in sorted(callee_sites, key=lambda s: (callee_sites[s][1].index, callee_sites[s][0].index)):
        if slot in seen:
            continue
        seen.add(slot)
        hit = lc.find_leak(slot)
        if hit is None:
            continue
        run, st = hit
        site, call, ncols = callee_sites[slot]
        mine = run.callee_allocs.get(slot)
        if mine:  # the leaking class's own call and alloc
            site, call, ncols = min(mine, key=lambda x: (x[1].index, x[0].index))
        what = f"{ncols} TMEM columns" if ncols else "TMEM columns"
        callee = lc.calls[call.index].function.name
        related = [(call, f"{callee} is called here by {ctx.function.name} ({run.klass!r})")]
        flow = [(call, f"calls {callee}", run.klass), (site, "allocated here", repr(run.klass))]
        if st.exit_inst is not None:
            related.append((st.exit_inst, f"the kernel exits here with the allocation live ({run.klass!r})"))
            flow.append((st.exit_inst, "exits here without tcgen05.dealloc", repr(run.klass)))
        ctx.report("TM101", site,
                   f"{what} allocated here (in {callee}, called by kernel {ctx.function.name} at line "
                   f"{call.span.line}) are not deallocated on some path to kernel exit (a CTA that exits holding "
                   f"TMEM makes the next CTA's tcgen05.alloc wait forever)", related, flow)


@rule("TM102", "invalid-ncols", "error",
      "alloc or dealloc column count that is not a power of two in [32, 512]")
def invalid_ncols(ctx):
    """PTX ISA §9.7.16.7.1: nCols must be a power of two in [32, 512].  ptxas checks alloc immediates only; a
    constant in a register is silently rounded down (reference §0.3)."""
    for inst in ctx.sites.allocs + ctx.sites.deallocs:
        n = ctx.sites.ncols.get(inst.index)
        if n is None or valid_ncols(n):
            continue
        kind = "tcgen05.alloc" if inst.family == "tcgen05.alloc" else "tcgen05.dealloc"
        why = "not a power of two" if 32 <= n <= 512 else "outside [32, 512]"
        extra = "" if n % 32 == 0 else "; it is not even a multiple of 32"
        ctx.report("TM102", inst, f"{kind} column count {n} is {why}{extra} "
                                  f"(nCols must be a power of two in [32, 512])")


def _slot_ncols(ctx, slot) -> int | None:
    ns = {ctx.sites.ncols.get(a.index) for a in ctx.sites.allocs_of_slot(slot)}
    if ctx.lifecycle.calls:  # allocations of this slot made in callees (analysis.calls)
        ns |= {n for _a, _c, n in ctx.lifecycle.callee_allocs_of_slot(slot)}
    return ns.pop() if len(ns) == 1 and None not in ns else None


def _slot_allocs(ctx, slot) -> list:
    """The allocs of ``slot``: this function's, else those in callees (``analysis.calls``) it executes."""
    allocs = ctx.sites.allocs_of_slot(slot)
    if not allocs and ctx.lifecycle.calls:
        allocs = [a for a, _c, _n in ctx.lifecycle.callee_allocs_of_slot(slot)]
    return allocs


@rule("TM103", "dealloc-mismatch", "error",
      "dealloc whose column count differs from its allocation, or whose address is not the allocation's base")
def dealloc_mismatch(ctx):
    """PTX ISA §9.7.16.7.1: ``taddr`` of dealloc must point to a previous allocation; freeing fewer columns leaks
    the rest and more traps (reference §0.2, §4)."""
    sites = ctx.sites
    for d in sites.deallocs:
        slot = sites.freed_slot.get(d.index)
        if slot is None:
            continue
        allocs = _slot_allocs(ctx, slot)
        if not allocs:
            continue
        col = sites.freed_col.get(d.index)
        if col is not None and col != 0:
            ctx.report("TM103", d, f"tcgen05.dealloc frees the TMEM address at column offset {col} of the "
                                   f"allocation, not its base (taddr must be the address tcgen05.alloc returned)",
                       [(allocs[0], "allocated here")])
            continue
        want = _slot_ncols(ctx, slot)
        got = sites.ncols.get(d.index)
        if want is not None and got is not None and want != got:
            what = "leaves the other columns allocated" if got < want else "frees columns it does not own"
            ctx.report("TM103", d, f"tcgen05.dealloc frees {got} columns of a {want}-column allocation: it {what}",
                       [(allocs[0], f"{want} columns allocated here")])


@rule("TM104", "double-dealloc", "error",
      "dealloc of columns already freed, or with no allocation on some path")
def double_dealloc(ctx):
    """PTX ISA §9.7.16.7.1: taddr must be a live allocation.  ptxas plants a trap for this in default builds
    (``unallocated_columns_being_dealloced``, reference §0.2)."""
    sites = ctx.sites
    if not sites.deallocs:
        return
    lc = ctx.lifecycle
    multi = lc.multi_warp_sites()
    done = set()
    for d in sites.deallocs:
        if d.index in lc.double_free:
            done.add(d.index)
            ctx.report("TM104", d, "tcgen05.dealloc frees columns this warp already freed on this path "
                                   "(no tcgen05.alloc in between)")
    slots = {sites.freed_slot[d.index] for d in sites.deallocs if sites.freed_slot[d.index] is not None}
    if not sites.allocs and not lc.calls and ctx.function.is_entry:
        for d in sites.deallocs:
            if d.index not in done:
                ctx.report("TM104", d, "tcgen05.dealloc in a kernel that never executes tcgen05.alloc")
        return
    for slot in slots:
        if not _slot_allocs(ctx, slot) and type(slot) is SymAddr and not lc.calls:
            for d in sites.deallocs:
                if sites.freed_slot[d.index] == slot and d.index not in done:
                    ctx.report("TM104", d, f"tcgen05.dealloc of an address read from {slot[1]}, which no "
                                           f"tcgen05.alloc writes")
            continue
        hit = lc.find_unmatched_free(slot)
        if hit is None:
            continue
        run, st = hit
        for d in sites.deallocs:
            if sites.freed_slot[d.index] == slot and d.index in run.executed and d.index not in done \
                    and d.index not in multi:
                allocs = _slot_allocs(ctx, slot) or [d]
                related = [(allocs[0], "the only allocation, not executed on that path")]
                if lc.conditional(run, st, lambda s: ("a", slot) in s.prop):
                    ctx.report("TM104", d, f"tcgen05.dealloc ({run.klass!r}) runs on a path where the warp that "
                                           f"allocates decided differently on values each computed itself (a tile "
                                           f"valid for one role only): if every warp sees the same tiles, as a "
                                           f"launch normally guarantees, this path cannot happen", related,
                               severity=Severity.WARNING)
                    break
                ctx.report("TM104", d, f"tcgen05.dealloc ({run.klass!r}) runs on a path where no warp "
                                       f"allocated these columns", related)
                break


@rule("TM105", "alloc-after-relinquish", "error",
      "tcgen05.alloc reachable after tcgen05.relinquish_alloc_permit")
def alloc_after_relinquish(ctx):
    """PTX ISA §9.7.16.7.1: after relinquish_alloc_permit, any further alloc by the CTA is illegal; the permit
    is never re-acquired (reference §0.6; ptxas traps ``phase_invalid_during_alloc``)."""
    if not ctx.sites.relinquishes or not ctx.sites.allocs:
        return
    insts = ctx.function.instructions
    for idx, rel in sorted(ctx.lifecycle.after_relinquish.items()):
        ctx.report("TM105", insts[idx], "tcgen05.alloc after this warp executed tcgen05.relinquish_alloc_permit "
                                        "(the permit is not re-acquired: the alloc is illegal)",
                   [(insts[rel], "permit relinquished here")])
    _alloc_after_other_warps_relinquish(ctx, set(ctx.lifecycle.after_relinquish))


def _alloc_after_other_warps_relinquish(ctx, done: set[int]) -> None:
    """TM105 across warps: the permit belongs to the CTA (PTX ISA §9.7.16.7.1: a CTA may not allocate after *any*
    of its warps relinquished), so an alloc that one warp class executes after a barrier or mbarrier orders it
    after another class's relinquish (``SyncModel.must_happen_before`` True on every path: a relinquish in warp 1
    before a ``__syncthreads`` that precedes warp 0's alloc) is illegal.  Undecided orders are not reported."""
    classes = ctx.threads.classes
    sync = ctx.sync
    for a in ctx.sites.allocs:
        if a.index in done:
            continue
        hit = None
        for kb in classes:
            if hit is not None or not sync.executes(kb, a):
                continue
            for r in ctx.sites.relinquishes:
                for ka in classes:
                    if ka is kb or not sync.executes(ka, r):
                        continue
                    if sync.must_happen_before(r, ka, a, kb) is True:
                        hit = (r, ka, kb)
                        break
                if hit is not None:
                    break
        if hit is not None:
            r, ka, kb = hit
            ctx.report("TM105", a, "tcgen05.alloc after another warp of the CTA executed "
                                   "tcgen05.relinquish_alloc_permit, ordered before it by synchronization (the "
                                   "permit is the CTA's: the alloc is illegal)",
                       [(r, "permit relinquished here, by another warp")])


def ctas_per_sm(ctx) -> tuple[int, str]:
    """CTAs per SM assumed for the column budget and where that comes from: the configuration
    (``ctas-per-sm``), ``.minnctapersm`` (PTX ISA §11.4.4), or 1."""
    cfg = getattr(ctx, "options", None)
    n = getattr(cfg, "ctas_per_sm", None) if cfg is not None else None
    if n:
        return int(n), "configuration"
    d = ctx.function.directives.get("minnctapersm")
    if d and d[0] > 1:
        return d[0], ".minnctapersm"
    return 1, "default"


@rule("TM106", "column-oversubscription", "error",
      "more than 512 TMEM columns live at once in a CTA (error), or per SM with several CTAs (warning)")
def column_oversubscription(ctx):
    """PTX ISA §9.7.16.2.1/§9.7.16.7.1: 512 columns per SM partition; alloc blocks until columns are free, so
    CTAs resident on one SM that together need more than 512 serialize (a deadlock when they wait on each other);
    allocations should not grow within a CTA."""
    sites = ctx.sites
    if not sites.allocs:
        return
    lc = ctx.lifecycle
    insts = ctx.function.instructions
    for idx, held in sorted(lc.over_budget.items()):
        ctx.report("TM106", insts[idx], f"this allocation brings the columns held by one CTA to {held}, over "
                                        f"the 512 TMEM columns (the alloc blocks forever)")
    n, src = ctas_per_sm(ctx)
    if n > 1:
        peak = max((lc.over_budget.get(a.index) or sites.ncols.get(a.index) or 0) for a in sites.allocs)
        if peak * n > 512:
            site = max(sites.allocs, key=lambda a: sites.ncols.get(a.index) or 0)
            if site.index not in lc.over_budget:
                ctx.report("TM106", site, f"{peak} columns per CTA x {n} CTAs per SM ({src}) = {peak * n} "
                                          f"columns, over 512: co-resident CTAs serialize in tcgen05.alloc, "
                                          f"a deadlock if they wait on each other", severity=Severity.WARNING)
    # Not reported: an allocation larger than an earlier one. The ISA's "should not increase" is advisory
    # (§9.7.16.7.1) and ../shared/cases/S1 good.ptx (64 then 128 columns) is correct code.


@rule("TM107", "missing-relinquish", "info",
      "no tcgen05.relinquish_alloc_permit after the last alloc", enabled=False)
def missing_relinquish(ctx):
    """PTX ISA §9.7.16.7.1: relinquishing the permit lets other CTAs on the SM allocate without waiting for this
    CTA's allocation decisions.  Hygiene only."""
    sites = ctx.sites
    if not sites.allocs or not ctx.function.is_entry:
        return
    for run in ctx.lifecycle.runs:
        if not any(a.index in run.executed for a in sites.allocs):
            continue
        if any(not any(p[0] == "r" for p in st.prop) for st in run.exits):
            last = max((a for a in sites.allocs if a.index in run.executed), key=lambda a: a.index)
            ctx.report("TM107", last, "no tcgen05.relinquish_alloc_permit after the last tcgen05.alloc on some "
                                      "path of this warp")
            return


@rule("TM108", "alloc-warp", "error", "alloc or dealloc executed by more than one warp")
def alloc_warp(ctx):
    """PTX ISA Table 46 (issue granularity): alloc, dealloc and relinquish are issued by one warp of the CTA
    (one per peer CTA for cta_group::2).  Each further warp that executes them allocates or frees again."""
    insts = ctx.function.instructions
    if not ctx.sites.allocs and not ctx.sites.deallocs:
        return
    for idx, who in sorted(ctx.lifecycle.multi_warp_sites().items()):
        inst = insts[idx]
        kind = "tcgen05.alloc" if inst.family == "tcgen05.alloc" else "tcgen05.dealloc"
        ctx.report("TM108", inst, f"{kind} is executed by more than one warp ({who}): each warp "
                                  f"{'allocates' if kind.endswith('alloc') and 'de' not in kind else 'frees'} again")


@rule("TM109", "divergent-collective", "error",
      "a .sync.aligned tcgen05 instruction under a condition that differs between lanes of a warp")
def divergent_collective(ctx):
    """PTX ISA §9.7.16.7.1/§9.7.16.8 and the ``.aligned`` qualifier (§9.7.13.1): every thread of the warp must
    execute the same .sync.aligned instruction; under a lane-varying condition the others never arrive."""
    for inst in ctx.function.instructions:
        if inst.family not in WARP_COLLECTIVE:
            continue
        hit = lane_varying_controls(ctx, inst)
        if hit is not None:
            where, why = hit
            ctx.report("TM109", inst, f"{inst.family} is .sync.aligned (all 32 lanes must execute it) but runs "
                                      f"under {why}", [(where, "the lane-varying condition")])


@rule("TM110", "cta-group-mix", "error",
      ".cta_group::1 and .cta_group::2 in one kernel, including its callees")
def cta_group_mix(ctx):
    """PTX ISA 9.0 §9.7.16 (clarified in §13.1): all tcgen05 instructions of a kernel use the same
    .cta_group; ptxas rejects the mix too (reference §4)."""
    fn = ctx.function
    if not fn.is_entry:
        return
    insts = [i for i in fn.instructions if i.op == "tcgen05" and cta_group(i) is not None]
    for callee in _callees(ctx):
        insts += [i for i in callee.instructions if i.op == "tcgen05" and cta_group(i) is not None]
    if not insts:
        return
    allocs = [i for i in insts if i.family == "tcgen05.alloc"]
    ref = allocs[0] if allocs else insts[0]
    g = cta_group(ref)
    for i in insts:
        if cta_group(i) != g:
            ctx.report("TM110", i, f"{i.family} uses .cta_group::{cta_group(i)} but this kernel uses "
                                   f".cta_group::{g} (all tcgen05 instructions of a kernel must agree)",
                       [(ref, f".cta_group::{g} here")])


def _callees(ctx):
    """Functions of the module called (transitively) by ctx.function."""
    mod = ctx.module
    seen: set[str] = set()
    work = [ctx.function]
    out = []
    while work:
        f = work.pop()
        for i in f.instructions:
            if i.op != "call":
                continue
            for o in i.operands:
                if type(o) is Sym and o.name not in seen:
                    callee = mod.function(o.name)
                    if callee is not None and callee.has_body:
                        seen.add(o.name)
                        out.append(callee)
                        work.append(callee)
    return out


@rule("TM111", "pair-alloc-unsynchronized", "error",
      "a .cta_group::2 alloc not preceded by a cluster barrier, or a paired dealloc without one after the work")
def pair_alloc_unsynchronized(ctx):
    """PTX ISA Table 46 and §9.7.16.7.1: for cta_group::2 one warp of each peer CTA allocates, and the peer must
    have been launched and not have exited: a cluster barrier before the paired alloc, and after the paired work
    before the dealloc (reference §1).

    The ordering question is the happens-before engine's (``SyncModel.peer_synced``: cluster barrier arrive/wait
    and mbarrier waits as the shared classifier's sync events), on the paths of each warp class, so a role that falls through into a join where
    only another warp allocates is not confused with it.  After the paired work, a wait on a local mbarrier that
    the kernel also arrives on in its peer CTA (``mbarrier.arrive`` through ``mapa``: CUTLASS's paired TMEM
    release) stands for the cluster barrier: the peer arrives there only after its own paired work.  A cluster
    barrier counts after the work only when this thread's ``barrier.cluster.arrive`` also comes after it: with the
    arrive before the work and the wait after it, the wait only proves that the peer arrived before its own work.
    Checked in kernels only, with their callees inlined: a ``.func``'s caller may hold the barrier."""
    if not ctx.function.is_entry:
        return  # a .func's cluster barrier may be its caller's: decided where the callee is inlined into its kernel
    sites = ctx.sites
    pair = {i.index for i in sites.allocs + sites.deallocs if cta_group(i) == 2}
    if not pair:
        return
    insts = ctx.function.instructions
    va = ctx.values
    peer_keys = [k for k in (peer_arrive_key(va, i) for i in insts if i.op == "mbarrier") if k is not None]
    paired_work = ("tcgen05.mma", "tcgen05.cp", "tcgen05.commit", "tcgen05.shift")

    work = frozenset(i.index for i in insts if i.op == "tcgen05" and i.family in paired_work and cta_group(i) == 2)
    unsynced = {i for i in pair for k in ctx.threads.classes
                if ctx.sync.executes(k, insts[i]) and not ctx.sync.peer_synced(k, insts[i], work, tuple(peer_keys))}
    for idx in sorted(unsynced):
        i = insts[idx]
        if i.family == "tcgen05.alloc":
            ctx.report("TM111", i, "tcgen05.alloc.cta_group::2 is not preceded by a cluster barrier on every path "
                                   "(barrier.cluster.arrive + wait): the peer CTA may not be running yet")
        else:
            ctx.report("TM111", i, "tcgen05.dealloc.cta_group::2 without a cluster barrier after the paired work "
                                   "on some path: the peer CTA may still use these columns")
    _paired_work_of_other_warps(ctx, [i for i in sites.deallocs if i.index in pair and i.index not in unsynced],
                                paired_work, peer_keys)


def _paired_work_of_other_warps(ctx, deallocs, paired_work, peer_keys) -> None:
    """TM111 for a paired dealloc whose warps do not issue the paired work themselves (the warp-specialized form:
    the MMA warp's elected lane issues the pair's MMAs and commits, warp 0 frees).  The dealloc must follow, on
    every path of its warp class, a cluster barrier wait that the MMA warp's last paired operation happens before
    (``SyncModel.all_happen_before``: the MMA warp arrives on the cluster barrier after its work, so the peer CTA,
    running the same code, has finished with the pair's columns when the wait completes), or a wait on a barrier
    the peer arrives on (CUTLASS's paired TMEM release, as in the same-warp check above).  An ordering the model
    cannot decide orders (no finding)."""
    if not deallocs:
        return
    insts = ctx.function.instructions
    sync = ctx.sync
    classes = ctx.threads.classes
    work = [i for i in insts if i.op == "tcgen05" and i.family in paired_work and cta_group(i) == 2]
    cluster_waits = [i for i in insts if i.op == "barrier" and "cluster" in i.parts and "wait" in i.parts]
    peer_waits = set()
    for i in insts:
        s = sync.site(i) if peer_keys and i.op == "mbarrier" else None
        if s is not None and s.waits and any(s.key.may_alias(k) for k in peer_keys):
            peer_waits.add(i.index)
    reported: set[int] = set()
    for kw in classes:
        ws = tuple(w for w in work if sync.executes(kw, w))
        if not ws:
            continue
        for kd in classes:
            todo = [d for d in deallocs if d.index not in reported and sync.executes(kd, d)]
            if kd is kw or not todo:
                continue
            after = {c.index for c in cluster_waits
                     if sync.executes(kd, c) and sync.all_happen_before(ws, kw, c, kd) is not False} | peer_waits
            unsynced = {d.index for d in todo
                        if not sync.peer_synced(kd, d, frozenset(w.index for w in work), (), frozenset(after), False)}
            for idx in sorted(unsynced):
                reported.add(idx)
                w = ws[-1]
                ctx.report("TM111", insts[idx],
                           f"tcgen05.dealloc.cta_group::2 by {kd!r} is not preceded, on some path, by a cluster "
                           f"barrier after the paired {w.family} of {kw!r} at line {w.span.line}: the peer CTA may "
                           f"still use these columns (barrier.cluster.arrive + wait after the last use of the pair's "
                           f"columns, or a wait on a barrier the peer arrives on)",
                           [(w, "paired work of another warp")])

#: Single-thread tcgen05 operations (PTX ISA Table 46): with ``.cta_group::2`` one thread of the CTA pair issues
#: them, for both CTAs.
_PAIR_ISSUED = ("tcgen05.mma", "tcgen05.cp", "tcgen05.shift", "tcgen05.commit")


@rule("TM112", "pair-issue-not-leader", "error",
      "a .cta_group::2 mma/cp/shift/commit whose guard does not confine it to the leader CTA of the pair")
def pair_issue_not_leader(ctx):
    """PTX ISA §9.7.16.2.4 and Table 46 (``#tcgen05-ops-execution-granularity``): a ``.cta_group::2`` mma, cp,
    shift or commit is issued by one thread of the CTA pair and acts on both CTAs' TMEM and shared memory; the
    pair's protocol has the leader (even ``%cluster_ctarank``) issue it.  Issued from both CTAs, every operation
    runs twice over the same operands and arrives twice on the barriers: corrupt results or a hang.

    Followed on the paths of each warp class: at each such instruction, the branch facts of the path and the
    instruction's own guard are evaluated for every CTA of every cluster shape the launch may have
    (``analysis.cluster``); reported when an odd CTA satisfies them.  A path whose facts compare the CTA's identity
    with values the analysis cannot evaluate is not reported.  ``.cta_group::2`` alloc, dealloc and relinquish are
    per CTA (one warp of each CTA issues them) and are not concerned."""
    if not ctx.function.is_entry:
        return  # a .func's leader test may be its caller's: not decidable from the callee alone
    insts = ctx.function.instructions
    paired = {i.index for i in insts if i.op == "tcgen05" and i.family in _PAIR_ISSUED and cta_group(i) == 2}
    if not paired:
        return
    roles = PairRoles(ctx.function, ctx.values)
    both: set[int] = set()
    for idx in sorted(paired):
        for klass in ctx.threads.classes:
            sets = ctx.sync.fact_sets(klass, insts[idx])  # the happens-before model's per-class paths, reused
            if sets and any(roles.role(f) == EITHER for f in sets):
                both.add(idx)
                break
    for idx in sorted(both):
        i = insts[idx]
        what = i.family.split(".", 1)[1]
        ctx.report("TM112", i, f"tcgen05.{what}.cta_group::2 can be issued by both CTAs of the pair: no condition "
                               f"on this path confines it to the leader CTA (%cluster_ctarank even), so the peer "
                               f"issues it a second time for the same pair")
