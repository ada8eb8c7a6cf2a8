"""Ordering of the asynchronous tcgen05 operations (family 3xx)."""

from __future__ import annotations

from tmemlint.analysis.values import defined_regs, used_regs
from tmemlint.checks.registry import rule


def pending_ld_uses(ctx) -> dict[int, int]:
    """For each tcgen05.ld (by index), the first instruction (by index) that reads one of its destination registers
    while no tcgen05.wait::ld has executed since the ld, on some path (a forward may-analysis over the CFG: the
    pending set at a block entry is the union over its predecessors)."""
    fn = ctx.function
    cfg = ctx.cfg
    if not any(i.family == "tcgen05.ld" for i in fn.instructions):
        return {}
    blocks = cfg.blocks
    order = [n for n in cfg.reverse_postorder() if n in blocks]
    preds = {n: [p for p in cfg.graph.predecessors(n) if p in blocks] for n in order}
    out: dict[int, frozenset] = {n: frozenset() for n in order}
    first_use: dict[int, int] = {}

    def run_block(n, cur: frozenset, record: bool) -> frozenset:
        pending = dict(cur)
        for inst in blocks[n].instructions:
            fam = inst.family
            if fam == "tcgen05.wait::ld":
                if inst.guard is None:
                    pending.clear()
                continue
            if pending:
                for r in used_regs(inst):
                    ld = pending.get(r.name)
                    if ld is not None and record:
                        old = first_use.get(ld)
                        if old is None or inst.index < old:
                            first_use[ld] = inst.index
                for r in defined_regs(inst):
                    pending.pop(r.name, None)
            if fam == "tcgen05.ld":
                for r in defined_regs(inst):
                    pending[r.name] = inst.index
        return frozenset(pending.items())

    changed = True
    while changed:
        changed = False
        for n in order:
            cur = frozenset().union(*(out[p] for p in preds[n])) if preds[n] else frozenset()
            o = run_block(n, cur, False)
            if o != out[n]:
                out[n] = o
                changed = True
    for n in order:
        cur = frozenset().union(*(out[p] for p in preds[n])) if preds[n] else frozenset()
        run_block(n, cur, True)
    return first_use


@rule("TM301", "ld-used-before-wait", "warning",
      "destination registers of tcgen05.ld read before tcgen05.wait::ld on some path")
def ld_used_before_wait(ctx):
    """PTX ISA §9.7.16.6.4.5 orders a true register dependency on a tcgen05.ld result in the same thread, so this
    is legal; it is reported as a warning because the value is only guaranteed in memory-ordered uses after
    tcgen05.wait::ld, and code that reads early is fragile under refactoring (TM302 is the hazard)."""
    insts = ctx.function.instructions
    for ld, use in sorted(pending_ld_uses(ctx).items()):
        ctx.report("TM301", insts[use],
                   f"reads a destination register of the tcgen05.ld at line {insts[ld].span.line} before "
                   f"tcgen05.wait::ld", [(insts[ld], "tcgen05.ld issued here")])
