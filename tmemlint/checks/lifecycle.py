"""Allocation lifecycle rules (family 1xx): leaks and column counts."""

from __future__ import annotations

from tmemlint.analysis.tmem import valid_ncols
from tmemlint.checks.registry import rule


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
        flow = [(site, f"allocated here ({run.klass!r})")]
        if st.exit_inst is not None:
            related.append((st.exit_inst, f"the kernel exits here with the allocation live ({run.klass!r})"))
            flow.append((st.exit_inst, "exits here without tcgen05.dealloc"))
        ctx.report("TM101", site,
                   f"{what} allocated here are not deallocated on some path to kernel exit "
                   f"(a CTA that exits holding TMEM makes the next CTA's tcgen05.alloc wait forever)",
                   related, flow)


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
