"""Regions: which TMEM columns each operand covers (family 4xx)."""

from __future__ import annotations

from tmemlint.analysis.idesc import A_TMEM_COLUMNS, SCALE_COLUMNS, cp_columns, decode_idesc, mma_kind
from tmemlint.analysis.values import TOP
from tmemlint.checks.registry import rule


def _tmem(va, inst, k):
    if k >= len(inst.operands):
        return None
    v = va.value(inst, inst.operands[k])
    if v is TOP or v[0] != "tmem" or v[2] is None:
        return None
    return v


def constant_idesc(va, inst, k):
    """``(Idesc, text)`` of operand ``k`` of an MMA when it is a constant, or one of a few constants that all
    decode to the same M and N (CuTe DSL selects between descriptors that differ only in other fields); else
    ``(None, "")``."""
    from tmemlint.analysis.values import const_candidates

    if k >= len(inst.operands):
        return None, ""
    vals = const_candidates(va.value(inst, inst.operands[k]))
    if not vals:
        return None, ""
    descs = {decode_idesc(x, mma_kind(inst)) for x in vals}
    shapes = {(dd.m, dd.n) for dd in descs}
    if len(shapes) != 1:
        return None, ""
    text = " or ".join(f"{x & 0xFFFFFFFF:#010x}" for x in sorted(vals))
    return next(iter(descs)), text


def block_scale_operands(inst):
    """Operand indices ``(d, idesc, scale_a, scale_b)`` of a ``tcgen05.mma … .block_scale`` (PTX ISA
    §9.7.16.10.9: ``[d], a, b, {[sp-meta],} idesc, [scale-A], [scale-B], enable-input-d``)."""
    k = 4 if inst.has("sp") else 3
    return 0, k, k + 1, k + 2


@rule("TM401", "scale-accumulator-overlap", "error",
      "block-scale factor columns overlap the accumulator columns of a tcgen05.mma")
def scale_accumulator_overlap(ctx):
    """PTX ISA §9.7.16.10.7 (block scaling) and §9.7.16.4.2 (idesc): the accumulator occupies columns
    [col(d), col(d)+N) with N from the instruction descriptor; scale factors stored there are overwritten by the
    MMA's results (and are read as garbage by it)."""
    va = ctx.values
    insts = ctx.function.instructions
    cps = [i for i in insts if i.family == "tcgen05.cp"]
    flagged_cp = set()
    for inst in insts:
        if inst.family != "tcgen05.mma" or not inst.has("block_scale"):
            continue
        di, ii, ai, bi = block_scale_operands(inst)
        d = _tmem(va, inst, di)
        if d is None or ii >= len(inst.operands):
            continue
        desc, iv_text = constant_idesc(va, inst, ii)
        if desc is None or desc.n == 0:
            continue
        lo, hi = d[2], d[2] + desc.n
        bad = []
        for which, k in (("scale-A", ai), ("scale-B", bi)):
            s = _tmem(va, inst, k)
            if s is None or s[1] != d[1]:
                continue
            c = s[2]
            if c < hi and c + SCALE_COLUMNS > lo:
                bad.append((which, c))
        related = []
        for cp in cps:
            v = _tmem(va, cp, 0)
            w = cp_columns(cp) or SCALE_COLUMNS
            if v is None or v[1] != d[1] or not (v[2] < hi and v[2] + w > lo):
                continue
            related.append((cp, "scale factors written here"))
            if cp.index not in flagged_cp:
                flagged_cp.add(cp.index)
                ctx.report("TM401", cp,
                           f"tcgen05.cp writes scale factors to columns [{v[2]}, {v[2] + w}) of the allocation, "
                           f"inside the accumulator columns [{lo}, {hi}) of the block-scaled tcgen05.mma at line "
                           f"{inst.span.line}", [(inst, f"accumulator of N={desc.n} columns written here")])
        if not bad:
            continue
        names = ", ".join(f"{w} at column {c}" for w, c in bad)
        ctx.report("TM401", inst,
                   f"block-scale operand ({names}) lies inside this MMA's accumulator columns [{lo}, {hi}) "
                   f"(N={desc.n} from instruction descriptor {iv_text}): the MMA overwrites its own scale "
                   f"factors", related)


def _slot_ncols(ctx, slot) -> int | None:
    ns = {ctx.sites.ncols.get(a.index) for a in ctx.sites.allocs_of_slot(slot)}
    return ns.pop() if len(ns) == 1 and None not in ns else None


def operand_footprints(ctx, inst):
    """``[(operand index, what, slot, col, lanes_from, columns)]`` for the TMEM operands of ``inst`` whose column
    offset is constant: D of an MMA from its constant idesc (``accumulator_footprint``, PTX ISA §9.7.16.10.5),
    A in TMEM (8 columns), tcgen05.ld/st from the shape (Table 47/48), tcgen05.cp from the shape (§9.7.16.8.1).
    Scale-factor operands are left out: their address carries a byte selector in bits 30-31."""
    from tmemlint.analysis.idesc import accumulator_footprint, ld_st_columns
    from tmemlint.analysis.sync import cta_group

    va = ctx.values
    fam = inst.family
    out = []

    def tm(k):
        v = _tmem(va, inst, k)
        return v

    if fam == "tcgen05.mma":
        di, ii = 0, (4 if inst.has("sp") else 3)
        d = tm(di)
        if d is not None and ii < len(inst.operands):
            desc, _text = constant_idesc(va, inst, ii)
            if desc is not None:
                if desc.n:
                    _lanes, cols = accumulator_footprint(desc, cta_group(inst) or 1, inst.has("ws"))
                    out.append((di, "accumulator", d[1], d[2], d[3], cols))
        if len(inst.operands) > 1:
            a = tm(1)
            if a is not None:
                out.append((1, "A operand", a[1], a[2], a[3], A_TMEM_COLUMNS))
        if inst.has("sp") and len(inst.operands) > 3:
            meta = tm(3)
            if meta is not None:
                out.append((3, "sparsity metadata", meta[1], meta[2], meta[3], 1))
    elif fam in ("tcgen05.ld", "tcgen05.st"):
        k = 1 if fam == "tcgen05.ld" else 0
        v = tm(k)
        w = ld_st_columns(inst)
        if v is not None and w:
            out.append((k, "access", v[1], v[2], v[3], w))
    elif fam == "tcgen05.cp":
        v = tm(0)
        w = cp_columns(inst)
        if v is not None and w:
            out.append((0, "copy destination", v[1], v[2], v[3], w))
    return out


@rule("TM402", "region-out-of-bounds", "error",
      "an operand footprint that extends past the end of its allocation or past column 512")
def region_out_of_bounds(ctx):
    """PTX ISA §9.7.16.2 and the footprint tables (§9.7.16.8, §9.7.16.10.5; reference §2.2, §2.3, §2.6): the
    columns an operand covers, from its constant address and its shape or instruction descriptor, must lie inside
    the allocation ([base, base+nCols)) and inside the 512 columns of TMEM."""
    for inst in ctx.function.instructions:
        if inst.op != "tcgen05":
            continue
        for _k, what, slot, col, _lane, width in operand_footprints(ctx, inst):
            end = col + width
            n = _slot_ncols(ctx, slot)
            limit, where = (n, f"its {n}-column allocation") if n is not None else (512, "TMEM (512 columns)")
            if end > limit or end > 512:
                if end > 512 and (n is None or n >= 512):
                    limit, where = 512, "TMEM (512 columns)"
                allocs = ctx.sites.allocs_of_slot(slot)
                ctx.report("TM402", inst, f"{inst.family} {what} covers columns [{col}, {end}) of the allocation, "
                                          f"past the end of {where}",
                           [(allocs[0], f"{n} columns allocated here")] if allocs and n else [])
                break


@rule("TM403", "operand-overlap", "warning",
      "A-in-TMEM or sparsity metadata columns overlapping the MMA's own accumulator")
def operand_overlap(ctx):
    """PTX ISA §9.7.16.10.9 (operands of tcgen05.mma): an A operand or sparsity metadata in TMEM inside the columns
    the same MMA writes as its accumulator is read while it is overwritten.  The loop-invariant scale-address
    heuristic of the catalog is not implemented: CuTe DSL and DeepGEMM-style code legitimately reuse scale columns
    while the A/B descriptors advance (byte selectors live in the instruction descriptor)."""
    for inst in ctx.function.instructions:
        if inst.family != "tcgen05.mma":
            continue
        fps = operand_footprints(ctx, inst)
        acc = [f for f in fps if f[1] == "accumulator"]
        if not acc:
            continue
        _, _, slot, lo, _, w = acc[0]
        for _k, what, s2, col, _l, width in fps:
            if what == "accumulator" or s2 != slot:
                continue
            if col < lo + w and lo < col + width:
                ctx.report("TM403", inst, f"the {what} in TMEM (columns [{col}, {col + width})) overlaps this MMA's "
                                          f"accumulator columns [{lo}, {lo + w})")
