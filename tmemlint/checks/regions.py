"""Regions: which TMEM columns each operand covers (family 4xx)."""

from __future__ import annotations

from tmemlint.analysis.idesc import cp_columns, decode_idesc, mma_kind
from tmemlint.analysis.values import TOP
from tmemlint.checks.registry import rule

#: Columns assumed for one block-scale operand: CUTLASS loads scale factors with tcgen05.cp .32x128b.warpx4,
#: 4 columns (reference §2.5 "Scale factors").
SCALE_COLUMNS = 4


def _tmem(va, inst, k):
    if k >= len(inst.operands):
        return None
    v = va.value(inst, inst.operands[k])
    if v is TOP or v[0] != "tmem" or v[2] is None:
        return None
    return v


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
        iv = va.value(inst, inst.operands[ii])
        if iv is TOP or iv[0] != "c":
            continue
        desc = decode_idesc(iv[1], mma_kind(inst))
        if desc.n == 0:
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
        if not bad:
            continue
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
                           f"inside the accumulator columns [{lo}, {hi}) of the tcgen05.mma at line "
                           f"{inst.span.line}", [(inst, f"accumulator of N={desc.n} columns written here")])
        names = ", ".join(f"{w} at column {c}" for w, c in bad)
        ctx.report("TM401", inst,
                   f"block-scale operand ({names}) lies inside this MMA's accumulator columns [{lo}, {hi}) "
                   f"(N={desc.n} from instruction descriptor {iv[1]:#010x}): the MMA overwrites its own scale "
                   f"factors", related)
