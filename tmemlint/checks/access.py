"""Where TMEM addresses go (family 2xx)."""

from __future__ import annotations

from tmemlint.analysis.cluster import evaluate, identity_environments, mentions_identity
from tmemlint.analysis.control import block_descendants, can_reach
from tmemlint.analysis.paths import identity_transfer
from tmemlint.analysis.publication import ReleaseSyncModel, unfenced_relaxed_arrives
from tmemlint.analysis.sync import tmem_operand_indices
from tmemlint.analysis.threads import is_lane_fact
from tmemlint.analysis.tmem import trap_checked_bases
from tmemlint.analysis.values import (TOP, Const, Op, Param, SReg, SymAddr, SymInside, Tid, TmemAddr, regs_in,
                                      defined_regs, eval_tid, fold_op)
from tmemlint.checks.registry import rule
from tmemlint.ir import Address, Imm, Reg

_MEMORY_OPS = {"ld", "ldu", "st", "atom", "red", "cp", "prefetch", "prefetchu", "cvta", "mbarrier", "multimem"}


@rule("TM201", "non-tcgen05-access", "error",
      "ld/st/atom/red/cp.async whose address derives from a TMEM address")
def non_tcgen05_access(ctx):
    """PTX ISA §9.7.16.2: Tensor Memory is reachable only through tcgen05 instructions.  A TMEM address used by
    an ordinary memory instruction reads or writes shared (or generic) memory at a meaningless address."""
    if not ctx.sites.allocs:
        return
    va = ctx.values
    taddr_defs = _tmem_operand_defs(ctx)
    for inst in ctx.function.instructions:
        if inst.op not in _MEMORY_OPS or inst.op == "cvta":
            continue
        for o in inst.operands:
            if type(o) is not Address:
                continue
            v = va.address_value(inst, o)
            if type(v) is not TmemAddr:
                # whatever its origin (an integer constant under a trap-checked base, a 512-column allocation), a
                # register value that a tcgen05 instruction uses as a TMEM address is no memory address
                base = o.base
                hit = None
                if base is not None and hasattr(base, "name"):
                    hit = next((taddr_defs[(d, base.name)] for d in va.reaching_defs(inst, base.name)
                                if (d, base.name) in taddr_defs), None)
                if hit is not None:
                    ctx.report("TM201", inst,
                               f"{inst.opcode} uses {base.name} as a memory address, the value the {hit.family} at "
                               f"line {hit.span.line} uses as a TMEM address; Tensor Memory is only reachable through "
                               f"tcgen05 instructions (tcgen05.ld/st/cp/mma)", [(hit, "used as a TMEM address here")])
                    break
                continue
            slot = v[1]
            allocs = ctx.sites.allocs_of_slot(slot)
            related = [(allocs[0], "TMEM allocated here")] if allocs else []
            loads = _slot_load(ctx, inst, o)
            if loads is not None:
                related.append((loads, "the TMEM address is loaded from the allocation slot here"))
            ctx.report("TM201", inst,
                       f"{inst.opcode} uses a TMEM address (allocated into slot "
                       f"{slot[1]}) as a memory address; Tensor Memory is only reachable through tcgen05 "
                       f"instructions (tcgen05.ld/st/cp/mma)", related)
            break


def _tmem_operand_defs(ctx) -> dict:
    """``(definition index, register) → tcgen05 instruction`` for the register definitions that reach a TMEM
    operand of a tcgen05 instruction (the same value is then a TMEM address, whatever it was computed from)."""
    va = ctx.values
    out: dict = {}
    for inst in ctx.function.instructions:
        if inst.op != "tcgen05":
            continue
        for k in tmem_operand_indices(inst):
            o = inst.operands[k]
            reg = o.base if type(o) is Address else o
            if reg is None or not hasattr(reg, "name") or not str(reg.name).startswith("%"):
                continue
            for d in va.reaching_defs(inst, reg.name):
                out.setdefault((d, reg.name), inst)
    return out


def _slot_load(ctx, inst, addr):
    """The ld that produced the TMEM address in ``addr``'s base register, when it has one definition."""
    va = ctx.values
    base = addr.base
    if base is None or not hasattr(base, "name"):
        return None
    d = va.single_def.get(base.name)
    seen = 0
    while d is not None and seen < 16:
        seen += 1
        di = ctx.function.instructions[d]
        if di.op in ("ld", "ldu"):
            return di
        regs = [o for o in di.operands[1:] if hasattr(o, "name") and str(o.name).startswith("%")]
        nxt = None
        for r in regs:
            v = va.reg_value(di, r)
            if type(v) is TmemAddr:
                nxt = va.single_def.get(r.name)
                break
        d = nxt
    return None


def _slot_symbols(ctx) -> dict[str, int | None]:
    """Names of the variables that hold allocation slots → their declared size in bytes (None: unknown)."""
    out = {}
    for slot in {ctx.sites.slot_of[a.index] for a in ctx.sites.allocs}:
        if type(slot) is not SymAddr:
            continue
        var = ctx.function.variables.get(slot.name) or ctx.module.variables.get(slot.name)
        out[slot.name] = var.size if var is not None else None
    return out


def _tmem_operands(ctx):

    va = ctx.values
    for inst in ctx.function.instructions:
        if inst.op != "tcgen05":
            continue
        for k in tmem_operand_indices(inst):
            yield inst, k, va.value(inst, inst.operands[k])


@rule("TM202", "slot-address-as-taddr", "error",
      "the shared-memory address of the alloc slot used as a TMEM address")
def slot_address_as_taddr(ctx):
    """PTX ISA §9.7.16.7.1: tcgen05.alloc writes the TMEM address *into* the slot at [dst]; the TMEM address is
    the value loaded from the slot, not the slot's own shared-memory address."""
    slots = {ctx.sites.slot_of[a.index] for a in ctx.sites.allocs}
    names = _slot_symbols(ctx)
    for inst, k, v in _tmem_operands(ctx):
        match v:
            case SymAddr(name=var):
                hit = v in slots or (var in names and (names[var] or 1 << 30) <= 16)
            case SymInside(name=var):
                hit = var in names and names[var] is not None and names[var] <= 16
            case _:
                continue
        if hit:
            allocs = [a for a in ctx.sites.allocs if ctx.sites.slot_of[a.index][1] == v[1]]
            ctx.report("TM202", inst, f"{inst.family} uses the shared-memory address of the allocation slot "
                                      f"{v[1]} as a TMEM address; load the TMEM address from the slot "
                                      f"(ld.shared) and use that value",
                       [(allocs[0], "tcgen05.alloc writes the TMEM address into the slot here")] if allocs else [])


def _trap_checked_constants(ctx) -> set[int]:
    """``analysis.tmem.trap_checked_bases`` of the function."""
    return trap_checked_bases(ctx.function, ctx.values)


@rule("TM203", "unallocated-access", "error",
      "a TMEM operand that does not derive from an allocation of this kernel")
def unallocated_access(ctx):
    """PTX ISA §9.7.16.2: TMEM must be allocated before use; a constant address is a column offset from the
    allocation's base only when that base is known: the allocation covers all 512 columns (its base is then 0), or
    the code checked the loaded base against a constant and traps otherwise (DeepGEMM, FlashMLA: ``ld.shared`` of
    the slot, ``setp.eq``, ``@p bra``, ``trap``); every constant address is then base + offset (whether it stays
    inside the allocation is TM402's question)."""
    fn = ctx.function
    if not fn.is_entry:
        return
    full = any(ctx.sites.ncols.get(a.index) == 512 for a in ctx.sites.allocs)
    checked = _trap_checked_constants(ctx)
    names = _slot_symbols(ctx)
    constants = []  # (instruction, address): reported once per kernel, the same assumption everywhere
    for inst, k, v in _tmem_operands(ctx):
        match v:
            case Const(value=k):
                if not (full or checked):
                    constants.append((inst, k))
                continue
            case Param(name=pname):
                why = f"a value loaded from kernel parameter {pname}"
            case Tid():
                if full or checked:
                    continue
                why = "an address computed from the thread index alone"
            case SymAddr(name=var) | SymInside(name=var) if var not in names:
                why = f"an address inside variable {var}"
            case _:
                continue
        if not ctx.sites.allocs:
            why += " (this kernel has no tcgen05.alloc)"
        ctx.report("TM203", inst, f"{inst.family} accesses TMEM at {why}, which does not come from a "
                                  f"tcgen05.alloc of this kernel")
    if constants:
        inst, addr = constants[0]
        n = len({i.index for i, _ in constants})
        cols = sorted({a & 0xFFFF for _, a in constants})
        alloc = ctx.sites.allocs[0] if ctx.sites.allocs else None
        uses = f"{n} tcgen05 instruction{'s' if n > 1 else ''} address{'' if n > 1 else 'es'} TMEM by integer " \
               f"constants (columns {cols[0]}-{cols[-1]}), assuming the allocation starts at column 0"
        if alloc is None:
            ctx.report("TM203", inst, f"{inst.family} accesses TMEM at the constant address {addr:#x}, which does "
                                      f"not come from a tcgen05.alloc of this kernel (this kernel has no "
                                      f"tcgen05.alloc)")
        else:
            ctx.report("TM203", alloc,
                       f"{uses}: an allocation of fewer than 512 columns starts at column 0 only if no other CTA "
                       f"holds TMEM (PTX ISA 9.7.16.7.1); check the base read from the slot and trap otherwise "
                       f"(or allocate 512 columns)",
                       [(i, f"{i.family} at the constant address {a:#x}") for i, a in constants[:3]])


def existing_warps(ctx) -> int:
    """Warps certainly present in the CTA: all of them when the block size is declared, else one more than the
    highest warp that a thread predicate of the kernel singles out."""
    tm = ctx.threads
    if tm.size_known:
        return (tm.n_threads + 31) // 32
    hi = 0
    classes = tm.classes
    if len(classes) > 1:
        last = next(c for c in classes if 31 in c.warps)
        for c in classes:
            if c is not last:
                hi = max(hi, max(c.warps) + 1)
    return max(hi, 1)


def _lanes_of_shape(inst) -> int:
    return 32 if inst.has("32x32b") else 16


@rule("TM204", "lane-quadrant", "error",
      "tcgen05.ld/st whose lane field is outside 32*(warpid%4) ... +31 where the warp is known")
def lane_quadrant(ctx):
    """PTX ISA §9.7.16.2.3 (access restrictions): warp w of a warpgroup may only access lanes
    32*(w%4) .. 32*(w%4)+31 with tcgen05.ld/st; ``-g-tmem-access-check`` traps otherwise."""
    targets = [i for i in ctx.function.instructions if i.family in ("tcgen05.ld", "tcgen05.st")]
    if not targets:
        return
    executed: dict = {}

    def observe(klass, prop, inst, facts):
        if inst.family in ("tcgen05.ld", "tcgen05.st"):
            executed.setdefault(inst.index, set()).add(id(klass))

    runs = ctx.simulate(identity_transfer, None, observe,
                        relevant=lambda i: i.family in ("tcgen05.ld", "tcgen05.st"))
    nwarps = existing_warps(ctx)
    va = ctx.values
    for inst in targets:
        k = 1 if inst.family == "tcgen05.ld" else 0
        v = va.value(inst, inst.operands[k]) if k < len(inst.operands) else TOP
        if type(v) is not TmemAddr:
            continue
        lane = v.lane
        width = _lanes_of_shape(inst)
        if lane is None and _identity_lane_fault(ctx, inst, k, width, runs, executed, nwarps):
            continue
        if lane is None:
            base = inst.operands[k].base if isinstance(inst.operands[k], Address) else None
            if base is None or not hasattr(base, "name") or not va.is_uniform(inst, base):
                continue
            quads = sorted({w % 4 for klass, _ in runs if id(klass) in executed.get(inst.index, ())
                            for w in klass.warps if w < nwarps})
            if len(quads) > 1:
                ctx.report("TM204", inst, f"{inst.family} is executed by warps of lane quadrants "
                                          f"{', '.join(map(str, quads))} with the same TMEM address in every thread: "
                                          f"the lane field does not follow the warp (warp w may only access lanes "
                                          f"32*(w%4) .. +31; {_TRAPS})")
            continue
        for klass, _ in runs:
            if id(klass) not in executed.get(inst.index, ()):
                continue
            bad = []
            for w in klass.warps:
                if w >= nwarps:
                    continue
                if isinstance(lane, int):
                    vals = {lane}
                else:
                    vals = set(eval_tid(lane, range(32 * w, 32 * w + 32)))
                if len(vals) != 1:
                    continue
                base = vals.pop() & 0xFFFF
                q = 32 * (w % 4)
                if not (q <= base and base + width <= q + 32):
                    bad.append((w, base))
            if bad:
                w, base = bad[0]
                more = f" (and {len(bad) - 1} more warps)" if len(bad) > 1 else ""
                ctx.report("TM204", inst, f"{inst.family} by warp {w}{more} accesses lanes {base}..{base + width - 1}"
                                          f", outside its quadrant {32 * (w % 4)}..{32 * (w % 4) + 31} "
                                          f"(warp w may only access lanes 32*(w%4) .. +31; {_TRAPS})")
                break


#: What NVIDIA's run-time check does with a lane-quadrant fault (reference §0.2, §1; rules catalog "Severity").
_TRAPS = "ptxas -g-tmem-access-check traps on it: current_warp_owner_invalid"


#: Integer operations ``_lane_value`` evaluates (``values.fold_op``; the address's low 32 bits, as the TMEM address
#: is a ``.b32``, PTX ISA §9.7.16.2).
_LANE_OPS = frozenset({"add", "sub", "shl", "shr", "mul", "and", "or", "xor"})


def _lane_value(va, inst, o, env: dict, tids: range, depth: int = 0) -> int | None:
    """The value of operand ``o`` of ``inst`` (a register, an immediate, an address ``[r+imm]``) in every thread of
    ``tids`` of the CTA with special registers ``env`` (``analysis.cluster``), the TMEM address loaded from the
    allocation slot taken as 0 (its lane field is 0, PTX ISA §9.7.16.7.1, and only the lane field is asked for);
    followed through single definitions by mov/cvt and integer arithmetic.  None when it differs between the
    threads, or depends on anything else (a load, several definitions)."""
    if depth > 16:
        return None
    if type(o) is Imm:
        return o.value
    if type(o) is Address:
        b = _lane_value(va, inst, o.base, env, tids, depth + 1) if o.base is not None else 0
        return None if b is None else b + o.offset
    if type(o) is not Reg:
        return None
    v = va.reg_value(inst, o)
    match v:
        case Const(value=k):
            return k
        case Tid(expr=e):
            got = set(eval_tid(e, tids))
            return got.pop() if len(got) == 1 else None
        case SReg() | Op():
            x = evaluate(v, env)
            if x is not None:
                return x
    d = va.single_def.get(o.name)
    if d is None:
        return None
    di = va.insts[d]
    ops = di.operands
    if di.op in ("ld", "ldu"):
        return 0 if type(v) is TmemAddr else None
    if di.op in ("mov", "cvt") and len(ops) == 2:
        return _lane_value(va, di, ops[1], env, tids, depth + 1)
    if di.op not in _LANE_OPS or len(ops) != 3 or (di.op == "mul" and "lo" not in di.parts):
        return None
    x = _lane_value(va, di, ops[1], env, tids, depth + 1)
    y = _lane_value(va, di, ops[2], env, tids, depth + 1) if x is not None else None
    if y is None or (di.op in ("shl", "shr") and not 0 <= y < 32):
        return None
    r = fold_op(di.parts, (x, y))
    return None if r is None else r & 0xFFFFFFFF


def _identity_lane_fault(ctx, inst, k, width, runs, executed, nwarps) -> bool:
    """TM204 for a lane field computed from the CTA's identity (``%cluster_ctarank``, ``%ctaid``-derived: a 2-CTA
    kernel taking the TMEM lane from the global row ``rank * 128 + warp * 32``).  The address is evaluated
    (``_lane_value``) for every CTA of every cluster shape the launch may have (``analysis.cluster``) and every warp
    of the classes that execute ``inst``; the lane footprint must stay in the warp's quadrant.  Only lane fields
    that differ between CTAs are this check's.  Reports and returns True on a fault; says nothing (False) when the
    address cannot be evaluated or a path to ``inst`` branches on the CTA's identity (that branch may exclude the
    faulting CTAs)."""
    va = ctx.values
    o = inst.operands[k]
    envs = identity_environments(ctx.function)
    bad = None
    for klass, _ in runs:
        if id(klass) not in executed.get(inst.index, ()):
            continue
        sets = ctx.sync.fact_sets(klass, inst)
        if sets is None or any(mentions_identity(key) for facts in sets for key, _val in facts):
            return False
        for w in klass.warps:
            if w >= nwarps:
                continue
            tids = range(32 * w, 32 * w + 32)
            lanes = []
            for env in envs:
                x = _lane_value(va, inst, o, env, tids)
                if x is None:
                    return False
                lanes.append(((x >> 16) & 0xFFFF, env))
            if len({b for b, _ in lanes}) < 2:
                continue  # the same lane in every CTA: the other TM204 checks' question
            q = 32 * (w % 4)
            for base, env in lanes:
                if not (q <= base and base + width <= q + 32) and bad is None:
                    bad = (w, base, env)
    if bad is None:
        return False
    w, base, env = bad
    rank = env.get("%cluster_ctarank")
    ctx.report("TM204", inst, f"{inst.family} by warp {w} in the CTA of %cluster_ctarank {rank} (%ctaid.x "
                              f"{env.get('%ctaid.x')}) accesses lanes {base}..{base + width - 1}, outside its "
                              f"quadrant {32 * (w % 4)}..{32 * (w % 4) + 31}: the lane field is computed from the "
                              f"CTA's identity, not from the warp's rank in its warpgroup (warp w may only access "
                              f"lanes 32*(w%4) .. +31; {_TRAPS})")
    return True


def reachable_after(ctx, starts) -> set[int]:
    """Indices of the instructions that can execute after one of the instructions ``starts`` (CFG paths)."""
    cfg = ctx.cfg
    out: set[int] = set()
    for s in starts:
        b = cfg.block_of[s.index]
        out.update(range(s.index + 1, cfg.blocks[b].end))
        for d in block_descendants(ctx, b):
            out.update(range(cfg.blocks[d].start, cfg.blocks[d].end))
    return out


@rule("TM205", "slot-read-unsynchronized", "error",
      "a warp other than the allocating one reads the alloc slot with no barrier after the alloc")
def slot_read_unsynchronized(ctx):
    """PTX ISA §9.7.16.7.1: alloc's write of the TMEM address to shared memory is a weak store; other threads
    may read it only after synchronization (tcgen05.fence::before_thread_sync, a barrier, fence::after).

    A read by warp class ``kb`` is ordered when, for an alloc of that slot executed by class ``ka``,
    ``ctx.sync.must_happen_before(alloc, ka, read, kb)``: ``ka`` arrives on a barrier instance after the alloc
    and ``kb`` waits on it before the read (a ``__syncthreads``, CUTLASS's named ``bar.arrive``/``bar.sync`` pair in
    sibling role branches, ThunderKittens' mbarrier).  A read whose value is never used as a TMEM operand is no
    fault (nvcc may load the slot on a path that then does not touch TMEM)."""
    sites = ctx.sites
    if not sites.allocs:
        return
    slots = {sites.slot_of[a.index] for a in sites.allocs}
    allocs_by: dict = {}  # slot -> [(alloc, class that executes it)]
    allocating = {}
    for run in ctx.lifecycle.runs:
        allocating[id(run.klass)] = {sites.slot_of[i] for i in run.executed if i in sites.slot_of}
        for a in sites.allocs:
            if a.index in run.executed:
                allocs_by.setdefault(sites.slot_of[a.index], []).append((a, run.klass))
    va = ctx.values
    insts = ctx.function.instructions
    reads = [i for i in insts if i.op in ("ld", "ldu") and len(i.operands) >= 2]
    reads = [(i, va.value(i, i.operands[1])) for i in reads]
    reads = [(i, slot) for i, slot in reads if slot is not TOP and slot in slots]
    models: dict[frozenset, object] = {}

    def model_for(alloc):
        """The happens-before model for what ``alloc`` wrote: ``ctx.sync`` without the relaxed arrives it reaches
        with no release fence in between (``analysis.publication``), which publish nothing."""
        dropped = unfenced_relaxed_arrives(ctx, alloc)
        if not dropped:
            return ctx.sync, dropped
        if dropped not in models:
            models[dropped] = ReleaseSyncModel(ctx, dropped)
        return models[dropped], dropped

    hits: dict[int, tuple[str, list]] = {}
    for klass in ctx.threads.classes:
        for inst, slot in reads:
            if inst.index in hits or slot in allocating.get(id(klass), ()) or not ctx.sync.executes(klass, inst):
                continue
            if not _flows_to_tmem_operand(ctx, inst):
                continue
            if not allocs_by.get(slot):
                continue
            relaxed: list = []
            ordered = False
            for a, ka in allocs_by[slot]:
                model, dropped = model_for(a)
                if model.must_happen_before(a, ka, inst, klass) is not False:
                    ordered = True
                    break
                if dropped and ctx.sync.must_happen_before(a, ka, inst, klass) is not False:
                    relaxed = sorted(dropped)
            if not ordered:
                hits[inst.index] = (repr(klass), relaxed)
    for idx, (who, relaxed) in sorted(hits.items()):
        allocs = sites.allocs_of_slot(va.value(insts[idx], insts[idx].operands[1]))
        related = [(allocs[0], "tcgen05.alloc writes the slot here")]
        if relaxed:
            arrive = insts[relaxed[0]]
            related.append((arrive, "a .relaxed arrive: no release of the slot"))
            ctx.report("TM205", insts[idx],
                       f"{who} read the allocation slot ordered after the tcgen05.alloc only by the .relaxed arrive at "
                       f"line {arrive.span.line} ({arrive.opcode}), which proves the other threads are running but "
                       f"publishes nothing (PTX ISA: no memory ordering and visibility guarantees): the TMEM address "
                       f"may not be visible yet; arrive with release semantics (barrier.cluster.arrive, the default "
                       f".release) or put fence.acq_rel.cluster before the .relaxed arrive", related)
            continue
        ctx.report("TM205", insts[idx], f"{who} read the allocation slot with no barrier after the tcgen05.alloc "
                                        f"on some path: the TMEM address written by tcgen05.alloc in another warp may not "
                                        f"be visible yet", related)


def _flows_to_tmem_operand(ctx, load) -> bool:
    """Whether the value ``load`` defines reaches, through register definitions (reaching definitions, any
    arithmetic or copy), a TMEM operand of a tcgen05 instruction, a store, or a call argument (where it may
    become one)."""
    va = ctx.values
    insts = ctx.function.instructions
    work = [(load.index, r.name) for r in defined_regs(load)]
    seen = set(work)
    while work:
        d, name = work.pop()
        for u in va.uses_of(d, name):
            inst = insts[u]
            if inst.op in ("st", "call", "atom", "red") or (
                    inst.op == "tcgen05" and any(_names(inst.operands[k]) & {name}
                                                 for k in tmem_operand_indices(inst))):
                return True
            for r in defined_regs(inst):
                if (u, r.name) not in seen:
                    seen.add((u, r.name))
                    work.append((u, r.name))
    return False


def _names(o) -> set[str]:
    """Register names inside operand ``o``."""
    out: list = []
    regs_in(o, out)
    return {r.name for r in out}


_STORE_OPS = {"st", "atom", "red", "cp", "mbarrier", "stmatrix"}
_SCALAR_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


def _tid_address(va, inst, a: Address):
    """``(symbol, offset, e)`` when address operand ``a`` of ``inst`` is ``symbol + offset + e(%tid.x)`` bytes
    (``e`` a thread expression, see ``values.eval_tid``), found by following single definitions through
    ``mov``/``cvt``/``cvta`` and ``add``s of a constant or of one thread expression; else None."""
    off = a.offset
    base = a.base
    for _ in range(16):
        if type(base) is not Reg:
            return None
        d = va.single_def.get(base.name)
        if d is None:
            return None
        di = va.insts[d]
        ops = di.operands
        if di.op in ("mov", "cvta", "cvt") and len(ops) == 2:
            base = ops[1]
            continue
        if di.op != "add" or len(ops) != 3:
            return None
        x, y = va.value(di, ops[1]), va.value(di, ops[2])
        if type(y) is Const:
            off += y.value
            base = ops[1]
            continue
        if type(x) is Const:
            off += x.value
            base = ops[2]
            continue
        for u, t in ((x, y), (y, x)):
            if type(u) is SymAddr and type(t) is Tid:
                return u.name, u.offset + off, t.expr
        return None
    return None


def _store_bytes(inst) -> int:
    """Bytes one thread's store writes: the scalar type's size × the vector length for ``st``/``atom``/``red``
    (PTX ISA ``#data-movement-and-conversion-instructions-st``, ``#parallel-synchronization-and-communication-
    instructions-atom``), 8 for ``mbarrier.init`` (a 64-bit object, ``#parallel-synchronization-and-communication-
    instructions-mbarrier``), else 4 (one 32-bit word: the slot's own size)."""
    if inst.op == "mbarrier":
        return 8
    size = None
    vec = 1
    for q in inst.parts[1:]:
        if q[:1] in "bufs" and q[1:] in _SCALAR_BYTES:
            size = _SCALAR_BYTES[q[1:]]
        elif q in ("v2", "v4", "v8"):
            vec = int(q[1:])
    if inst.op == "cp" and "bulk" in inst.parts and "tensor" not in inst.parts and len(inst.operands) > 2 \
            and type(inst.operands[2]) is Imm:
        return int(inst.operands[2].value)  # cp.async.bulk [dst], [src], size: size bytes (a multiple of 16)
    return size * vec if size is not None and inst.op in ("st", "atom", "red") else 4


def _cp_to_shared(inst) -> bool:
    """Whether copy ``inst`` writes shared memory: its destination state space, the first one named
    (``cp.async.ca.shared.global``, ``cp.async.bulk.shared::cluster.global``, ``cp.async.bulk.tensor.2d.shared::cta
    .global``: PTX ISA ``#data-movement-and-conversion-instructions-cp-async``, ``-cp-async-bulk``,
    ``-cp-async-bulk-tensor``), is ``.shared``."""
    space = next((q for q in inst.parts[1:] if q.split("::")[0] in ("shared", "global", "local")), "")
    return space.startswith("shared")


def _thread_hit(ctx, inst, slot):
    """``slot`` when a thread that executes store ``inst`` writes the slot's 4 bytes: the address is the slot's
    symbol plus a function of ``%tid.x`` (``global_smem + (tid.x << 2)``: thread 0 writes offset 0, in bytes),
    evaluated for every thread of every warp class whose paths reach the store (``FunctionContext.simulate``) and
    that the path's thread predicates let through: the store's own guard and the branches on ``%tid.x`` taken to
    reach it (``if (threadIdx.x != 0) buf[threadIdx.x] = …``: thread 0 never stores).  Else None."""
    a = _tid_address(ctx.values, inst, inst.operands[1 if inst.op == "atom" else 0])
    if a is None or a[0] != slot[1]:
        return None
    _name, off, expr = a
    width = _store_bytes(inst)
    lo, hi = slot[2] - off - width + 1, slot[2] - off + 4   # e(tid) in [lo, hi) overlaps the slot's bytes
    guard = None
    if inst.guard is not None:
        g = ctx.values.reg_value(inst, inst.guard.reg)
        if type(g) is Tid:
            guard = (g.expr, inst.guard.negated)
    for klass, fact_sets in _classes_reaching(ctx, inst):
        n = klass.n_threads
        for w in klass.warps:
            tids = range(32 * w, min(32 * w + 32, n))
            vals = eval_tid(expr, tids)
            ok = eval_tid(guard[0], tids) if guard is not None else None
            # per set of paths reaching the store: the threads its thread-predicate facts let through
            lets = [_lane_filter(facts, tids) for facts in fact_sets]
            for k, e in enumerate(vals):
                if lo <= e < hi and (ok is None or bool(ok[k]) != guard[1]) and \
                        any(f is None or f[k] for f in lets):
                    return slot
    return None


def _lane_filter(facts, tids: range) -> list[bool] | None:
    """For each thread of ``tids``: whether it satisfies every thread-predicate fact (``("tid", e)`` keys,
    ``threads.is_lane_fact``) of ``facts``; None when there is none.  ``elect.sync`` facts are not used: the
    elected lane is not specified (PTX ISA §9.7.13.12), so they let every thread through."""
    out = None
    for key, val in facts:
        if not is_lane_fact(key) or "elect" in repr(key):
            continue
        got = eval_tid(key[1], tids)
        if out is None:
            out = [True] * len(tids)
        out = [o and bool(g) == val for o, g in zip(out, got)]
    return out


def _classes_reaching(ctx, inst) -> list:
    """``[(warp class, [facts])]`` for the warp classes with a path that executes ``inst``, with the branch facts of
    each set of paths that reaches it (one simulation per class for all TM206 candidates of the function, cached
    on ``ctx``)."""
    runs = ctx.rule_caches.tm206_reach
    if runs is None:
        seen: dict[int, list] = {}

        def observe(klass, _prop, i, facts):
            lst = seen.setdefault(i.index, [])
            for k, fs in lst:
                if k is klass:
                    if len(fs) >= 64:  # many fact sets (loops): keep the paths' common facts only
                        fs[:] = [frozenset.intersection(facts, *fs)]
                    elif facts not in fs:
                        fs.append(facts)
                    return
            lst.append((klass, [facts]))

        cand = {i.index for i in ctx.function.instructions if i.op in _STORE_OPS}
        ctx.simulate(identity_transfer, 0, observe, relevant=lambda i: i.index in cand)
        runs = ctx.rule_caches.tm206_reach = seen
    return runs.get(inst.index, [])


def _dynamic_shared(ctx) -> frozenset[str]:
    """Names of the ``.extern .shared`` arrays visible to the function: dynamic shared memory, sized at launch.
    Every such array starts at the same address, the start of the CTA's dynamic shared memory (PTX ISA §5.1.5,
    ``.shared``; CUDA C++ Programming Guide, ``extern __shared__``: "all variables declared in this fashion start
    at the same address"), so byte offsets into two of them are offsets into one buffer."""
    return frozenset(n for vs in (ctx.module.variables, ctx.function.variables) for n, v in vs.items()
                     if v.extern and v.space == "shared")


@rule("TM206", "alloc-slot-aliased", "warning",
      "a store to the alloc slot's bytes between the alloc and a later read of the slot")
def alloc_slot_aliased(ctx):
    """PTX ISA §9.7.16.7.1: the slot holds the TMEM address until every thread that needs it has read it.  A store
    (or an mbarrier/TMA write) to the same shared-memory bytes that can run after the alloc and before a read of
    the slot replaces the address with unrelated data.  Reusing the bytes after the last read (Triton's
    ``global_smem``) is fine and not reported."""
    sites = ctx.sites
    if not sites.allocs:
        return
    va = ctx.values
    slots = {sites.slot_of[a.index] for a in sites.allocs if type(sites.slot_of[a.index]) is SymAddr}
    if not slots:
        return
    names = _slot_symbols(ctx)
    reads = [i for i in ctx.function.instructions if i.op in ("ld", "ldu") and len(i.operands) > 1
             and va.value(i, i.operands[1]) in slots]
    dynamic = _dynamic_shared(ctx)
    for inst in ctx.function.instructions:
        # the written address: the first operand, but atom's second (atom{.sem}{.space}.op d, [a], b)
        at = 1 if inst.op == "atom" else 0
        if inst.op not in _STORE_OPS or len(inst.operands) <= at or type(inst.operands[at]) is not Address:
            continue
        if inst.op == "mbarrier" and (len(inst.parts) < 2 or inst.parts[1] != "init"):
            continue
        if inst.op == "cp" and not _cp_to_shared(inst):
            continue
        v = va.address_value(inst, inst.operands[at])
        if v is TOP:
            continue
        hit = None
        for slot in slots:
            match v:
                case SymAddr(name=var, offset=off):
                    same = var == slot.name or (var in dynamic and slot.name in dynamic)
                    if same and off < slot.offset + 4 and slot.offset < off + _store_bytes(inst):
                        hit = slot
                case SymInside(name=var) if var == slot.name:
                    hit = slot if (names.get(slot.name) or 1 << 30) <= 16 else _thread_hit(ctx, inst, slot)
        if hit is None:
            continue
        allocs = sites.allocs_of_slot(hit)
        later = [r for r in reads if r is not inst and can_reach(ctx, inst, r)] \
            if any(can_reach(ctx, a, inst) for a in allocs) else []
        if later:
            ctx.report("TM206", inst, f"{inst.opcode} writes the bytes of the allocation slot {hit[1]} while the TMEM "
                                      f"address stored there by tcgen05.alloc is still to be read",
                       [(allocs[0], "tcgen05.alloc writes the slot here"), (later[0], "the slot is read here")])
            continue
        race = _cross_warp_slot_store(ctx, inst, allocs, [r for r in reads if va.value(r, r.operands[1]) == hit])
        if race is not None:
            (alloc, ka), (read, kr), ks = race
            ctx.report("TM206", inst, f"{inst.opcode} by {ks!r} writes the bytes of the allocation slot {hit[1]} and "
                                      f"nothing orders it before the tcgen05.alloc of {ka!r} or after the slot read "
                                      f"of {kr!r}: the TMEM address stored there may be overwritten before it is read",
                       [(alloc, "tcgen05.alloc writes the slot here"), (read, "the slot is read here")])


def _cross_warp_slot_store(ctx, store, allocs, reads):
    """``((alloc, its class), (read, its class), the store's class)`` when a warp class that executes ``store`` (a
    write of the slot's bytes) is another than the allocating one or the reading one, and the store may come after
    the alloc (it does not happen before it: ``SyncModel.must_happen_before`` is False) and before the read (the read
    does not happen before the store).  The CFG question of ``alloc_slot_aliased`` misses this: warp roles run in
    sibling branches, where neither reaches the other.  Pairs within one class are the CFG's (program order); an
    ordering the model cannot decide orders.  None when there is no such race.  The reads are asked before the
    allocs (a store that follows every read races with no alloc), and the race returned is the first in (store
    class, alloc, read, read class) order either way."""
    sync = ctx.sync
    by_alloc = [(a, run.klass) for run in ctx.lifecycle.runs for a in allocs if a.index in run.executed]
    classes = ctx.threads.classes
    # only a read whose value reaches a TMEM operand can race; the "store before the read" verdict of a pair
    # (read, its class) does not depend on the alloc, so it is decided once per store class, not once per alloc
    reads = [r for r in reads if _flows_to_tmem_operand(ctx, r)]
    if not by_alloc or not reads:
        return None
    for ks in classes:
        if not sync.executes(ks, store):
            continue
        before_read: dict[tuple[int, int], bool] = {}  # (read position, class position) -> store before the read

        def unordered(ri: int, r, ki: int, kr) -> bool:
            got = before_read.get((ri, ki))
            if got is None:
                got = before_read[(ri, ki)] = can_reach(ctx, store, r) if kr is ks else \
                    sync.must_happen_before(r, kr, store, ks) is False
            return got

        # a race needs both a read the store may precede and an alloc it may follow: the reads are asked first, as
        # they are asked of every alloc the store may follow anyway, and when the store follows every read no
        # alloc is asked about (the question an alloc at the kernel's start asks is the costly one: nothing orders
        # a later store before it, which only the whole chain search over every third class's waits can say)
        other_class = any(ka is not ks for _a, ka in by_alloc)
        if not any(unordered(ri, r, ki, kr) for ri, r in enumerate(reads) for ki, kr in enumerate(classes)
                   if sync.executes(kr, r) and (kr is not ks or other_class)):
            continue
        for a, ka in by_alloc:
            after_alloc = can_reach(ctx, a, store) if ka is ks else sync.must_happen_before(store, ks, a, ka) is False
            if not after_alloc:
                continue
            for ri, r in enumerate(reads):
                for ki, kr in enumerate(classes):
                    if not sync.executes(kr, r) or (ka is ks and kr is ks):
                        continue
                    if unordered(ri, r, ki, kr):
                        return (a, ka), (r, kr), ks
    return None
