"""Where TMEM addresses go (family 2xx)."""

from __future__ import annotations

from tmemlint.analysis.values import TOP
from tmemlint.checks.registry import rule
from tmemlint.ir import Address

_MEMORY_OPS = {"ld", "ldu", "st", "atom", "red", "cp", "prefetch", "prefetchu", "cvta", "mbarrier", "multimem"}


@rule("TM201", "non-tcgen05-access", "error",
      "ld/st/atom/red/cp.async whose address derives from a TMEM address")
def non_tcgen05_access(ctx):
    """PTX ISA §9.7.16.2: Tensor Memory is reachable only through tcgen05 instructions.  A TMEM address used by
    an ordinary memory instruction reads or writes shared (or generic) memory at a meaningless address."""
    if not ctx.sites.allocs:
        return
    va = ctx.values
    for inst in ctx.function.instructions:
        if inst.op not in _MEMORY_OPS or inst.op == "cvta":
            continue
        for o in inst.operands:
            if type(o) is not Address:
                continue
            v = va.address_value(inst, o)
            if v is TOP or v[0] != "tmem":
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
            if v is not TOP and v[0] == "tmem":
                nxt = va.single_def.get(r.name)
                break
        d = nxt
    return None
