"""Regions: which TMEM columns each operand covers (family 4xx)."""

from __future__ import annotations

from tmemlint.analysis.control import on_cycle
from tmemlint.analysis.idesc import (
    A_TMEM_COLUMNS,
    SCALE_COLUMNS,
    accumulator_footprint,
    cp_columns,
    decode_idesc,
    ld_st_columns,
    mma_kind,
)
from tmemlint.analysis.regions import known_idesc
from tmemlint.analysis.sync import cta_group
from tmemlint.analysis.values import TmemAddr, const_candidates
from tmemlint.checks.registry import rule
from tmemlint.ir import Address, Imm, Reg


def _tmem(va, inst, k):
    if k >= len(inst.operands):
        return None
    v = va.value(inst, inst.operands[k])
    if type(v) is not TmemAddr or v.col is None:
        return None
    return v


def constant_idesc(va, inst, k):
    """``(Idesc, text)`` of operand ``k`` of an MMA when it is a constant, or one of a few constants that all
    decode to the same M and N (CuTe DSL selects between descriptors that differ only in other fields); else
    ``(None, "")``."""
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


def _exact_columns(sets, inst, k):
    """``(slot, start columns)`` of TMEM operand ``k`` of ``inst`` when every address it may hold is known (an exact
    ``TmemAddr``: no unknown term was added); columns are bits 15-0 of each address (PTX ISA §9.7.16.2).  Else
    None."""
    a = sets.address(inst, k)
    if a is None or not a.exact or not a.offsets:
        return None
    return a.slot, a.columns


def _bit_ranges(mask: int) -> str:
    """``"4-5, 29-30"`` for the set bits of ``mask``."""
    out = []
    b = 0
    while b < 32:
        if mask >> b & 1:
            e = b
            while e + 1 < 32 and mask >> (e + 1) & 1:
                e += 1
            out.append(f"{b}-{e}" if e > b else str(b))
            b = e + 1
        else:
            b += 1
    return ", ".join(out)


def _accumulator(ctx, inst):
    """``(slot, start columns, n, idesc text)`` of the accumulator of a block-scaled ``tcgen05.mma``, or None.

    The start columns are every column the ``[d]`` address may hold (a double-buffered accumulator at ``base +
    (stage & 1) * 128`` gives {0, 128}); ``n`` is N in columns, decoded from the instruction descriptor's bits 17-22
    (PTX ISA §9.7.16.4.2, Tables 43/44) through its known-bits view (``known_idesc``: CuTe DSL ORs the scale byte
    selectors into bits 4-5 and 29-30, which leaves N known), the smallest N when several descriptors are
    possible.  TM401 takes the accumulator as ``[col(d), col(d) + N)`` (reference §2.5, a safe upper bound)."""
    sets = ctx.address_sets
    di, ii, _ai, _bi = block_scale_operands(inst)
    d = _exact_columns(sets, inst, di)
    if d is None:
        return None
    got = known_idesc(inst, ii, ctx.values, sets)
    if got is None:
        return None
    vals, unknown = got
    n = min(decode_idesc(v, mma_kind(inst)).n for v in vals)
    if n == 0:
        return None
    return d[0], d[1], n, _idesc_text(vals, unknown)


def _idesc_text(vals, unknown: int) -> str:
    """A descriptor for a message: ``0x08a00000``, ``0x08a00000 or 0x08a00010``, or, for more alternatives or
    unknown bits, the bits all alternatives share and the others: ``0x08a00000 (bits 4-5, 29-30 vary)``."""
    vals = sorted(v & 0xFFFFFFFF for v in vals)
    if not unknown and len(vals) <= 2:
        return " or ".join(f"{x:#010x}" for x in vals)
    fixed = ~unknown & 0xFFFFFFFF
    for v in vals:
        fixed &= ~(v ^ vals[0])
    return f"{vals[0] & fixed:#010x} (bits {_bit_ranges(~fixed & 0xFFFFFFFF)} vary)"


def _hits(cols, width, acc_cols, n):
    """``[(column, accumulator start)]``: columns ``[c, c + width)`` that share a column with the accumulator
    ``[a, a + n)``, for every possible start ``c`` and ``a``."""
    return [(c, a) for c in cols for a in acc_cols if c < a + n and a < c + width]


def _acc_text(acc_cols, n, starts):
    """``(intervals, note)``: the accumulator columns a fault lies in (``[0, 128)``), and for a multi-buffered
    accumulator the columns its address may hold (``"; the accumulator address is column 0 or 128"``)."""
    ivs = ", ".join(f"[{a}, {a + n})" for a in sorted(set(starts)))
    if len(acc_cols) == 1:
        return ivs, ""
    return ivs, f"; the accumulator address is column {' or '.join(map(str, acc_cols))}"


@rule("TM401", "scale-accumulator-overlap", "error",
      "block-scale factor columns overlap the accumulator columns of a tcgen05.mma")
def scale_accumulator_overlap(ctx):
    """PTX ISA §9.7.16.10.7 (block scaling) and §9.7.16.4.2 (idesc): the accumulator occupies columns
    [col(d), col(d)+N) with N from the instruction descriptor; scale factors stored there are overwritten by the
    MMA's results (and are read as garbage by it).

    Addresses are column sets (``AddressSets``): an accumulator or scale operand whose column is one of a few
    (double buffering) is reported when some pair of possible columns overlaps (the fault happens on those tiles).
    Only exact address sets count: an address plus an unknown term is never placed.  Scale operands are
    ``SCALE_COLUMNS`` (4) columns wide, a tcgen05.cp destination its shape's columns (reference §2.3)."""
    insts = ctx.function.instructions
    mmas = [i for i in insts if i.family == "tcgen05.mma" and i.has("block_scale")]
    if not mmas:
        return
    sets = ctx.address_sets
    cps = [(c, _exact_columns(sets, c, 0)) for c in insts if c.family == "tcgen05.cp"]
    flagged_cp = set()
    for inst in mmas:
        acc = _accumulator(ctx, inst)
        if acc is None:
            continue
        slot, acc_cols, n, iv_text = acc
        _di, _ii, ai, bi = block_scale_operands(inst)
        bad = []
        starts = []
        for which, k in (("scale-A", ai), ("scale-B", bi)):
            s = _exact_columns(sets, inst, k) if k < len(inst.operands) else None
            if s is None or s[0] != slot:
                continue
            hits = _hits(s[1], SCALE_COLUMNS, acc_cols, n)
            if hits:
                bad.append((which, sorted({c for c, _ in hits})))
                starts += [a for _, a in hits]
        related = []
        for cp, v in cps:
            if v is None or v[0] != slot:
                continue
            w = cp_columns(cp) or SCALE_COLUMNS
            hits = _hits(v[1], w, acc_cols, n)
            if not hits:
                continue
            related.append((cp, "scale factors written here"))
            if cp.index not in flagged_cp:
                flagged_cp.add(cp.index)
                c = min(c for c, _ in hits)
                ivs, note = _acc_text(acc_cols, n, [a for _, a in hits])
                ctx.report("TM401", cp,
                           f"tcgen05.cp writes scale factors to columns [{c}, {c + w}) of the allocation, "
                           f"inside the accumulator columns {ivs} of the block-scaled tcgen05.mma at line "
                           f"{inst.span.line}" + (f" ({note[2:]})" if note else ""),
                           [(inst, f"accumulator of N={n} columns written here")])
        if not bad:
            continue
        names = ", ".join(f"{w} at column {' or '.join(map(str, cs))}" for w, cs in bad)
        ivs, note = _acc_text(acc_cols, n, starts)
        ctx.report("TM401", inst,
                   f"block-scale operand ({names}) lies inside this MMA's accumulator columns {ivs} (N={n} from "
                   f"instruction descriptor {iv_text}{note}): the MMA overwrites its own scale factors", related)


def _slot_ncols(ctx, slot) -> int | None:
    ns = {ctx.sites.ncols.get(a.index) for a in ctx.sites.allocs_of_slot(slot)}
    return ns.pop() if len(ns) == 1 and None not in ns else None


def operand_footprints(ctx, inst):
    """``[(operand index, what, slot, col, lanes_from, columns)]`` for the TMEM operands of ``inst`` whose column
    offset is constant: D of an MMA from its constant idesc (``accumulator_footprint``, PTX ISA §9.7.16.10.5),
    A in TMEM (8 columns), tcgen05.ld/st from the shape (Table 47/48), tcgen05.cp from the shape (§9.7.16.8.1).
    Scale-factor operands are left out: their address carries a byte selector in bits 30-31."""
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


def _loop_footprints(ctx, inst):
    """The footprint of a ``tcgen05.ld``/``st`` whose column the value analysis leaves unknown but the address
    sets know exactly (a counted loop over column chunks, its offsets from ``analysis.feasibility``): one entry,
    at its largest column, as ``operand_footprints`` gives them."""
    fam = inst.family
    k = 1 if fam == "tcgen05.ld" else 0
    if fam not in ("tcgen05.ld", "tcgen05.st") or _tmem(ctx.values, inst, k) is not None:
        return []
    w = ld_st_columns(inst)
    got = ctx.executing.get(inst.index) if w else None
    if not got:
        return []
    # with the thread indices of the warps that execute it, and only where the solver answered a loop's values
    warps = tuple(sorted({x for c in got for x in ctx.threads.classes[c].warps}))
    a = ctx.address_sets_of(warps).address(inst, k)
    if a is None or not a.exact or not a.offsets or not ctx.feasibility.answered:
        return []
    return [(k, "access", a.slot, a.columns[-1], a.lanes[0], w)]


@rule("TM402", "region-out-of-bounds", "error",
      "an operand footprint that extends past the end of its allocation or past column 512")
def region_out_of_bounds(ctx):
    """PTX ISA §9.7.16.2 and the footprint tables (§9.7.16.8, §9.7.16.10.5; reference §2.2, §2.3, §2.6): the
    columns an operand covers, from its constant address and its shape or instruction descriptor, must lie inside
    the allocation ([base, base+nCols)) and inside the 512 columns of TMEM."""
    for inst in ctx.function.instructions:
        if inst.op != "tcgen05":
            continue
        for _k, what, slot, col, _lane, width in operand_footprints(ctx, inst) + _loop_footprints(ctx, inst):
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
    the same MMA writes as its accumulator is read while it is overwritten.  CuTe DSL, CUTLASS and DeepGEMM-style
    code legitimately reuse scale columns while the A/B descriptors advance: they copy the next K block's factors
    into them in the loop (tcgen05.cp), or select other factors with the byte selectors of the instruction
    descriptor.

    The catalog's other shape, a scale-factor address that stays the same while the A/B descriptors advance in a
    K loop, is reported where nothing can refresh those columns: ``_stale_scale_factors``."""
    _stale_scale_factors(ctx)
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


def _varies_in_loop(ctx, inst, o, depth: int = 0) -> bool | None:
    """Whether register operand ``o`` of ``inst`` can hold a different value in each iteration of a loop around
    ``inst``: True when it has several definitions (a loop-carried register: the initial value and the update), or
    its one definition lies on a CFG cycle and computes it from such a register; False when it is a constant or its
    definitions lie outside every cycle; None when it cannot be told (an immediate is False)."""
    if type(o) is Imm:
        return False
    if type(o) is not Reg or depth > 12:
        return None
    va = ctx.values
    d = va.single_def.get(o.name)
    if d is None:
        return True if o.name.startswith("%") and "." not in o.name else None
    di = va.insts[d]
    if not on_cycle(ctx, di):
        return False
    if di.op in ("ld", "ldu", "tcgen05", "call"):
        return None
    got = [_varies_in_loop(ctx, di, x, depth + 1) for x in di.operands[1:]]
    if True in got:
        return True
    return False if all(g is False for g in got) else None


def _may_refresh(ctx, writer, sf) -> bool:
    """Whether tcgen05.cp/st ``writer`` may write the first column of a scale-factor operand whose TMEM address
    value is ``sf`` (``("tmem", slot, column, lane)``, or None when not constant).  The MMA reads the operand's
    factors from that column on (PTX ISA §9.7.16.10.7), so a write that refreshes them covers it; a writer whose
    constant footprint (``operand_footprints``: the shape's columns, §9.7.16.8) lies in another allocation or
    misses that column does not.  An address or footprint that is not constant may refresh."""
    fps = operand_footprints(ctx, writer)
    if sf is None or not fps:
        return True
    return any(slot == sf[1] and col <= sf[2] < col + width for _k, _what, slot, col, _l, width in fps)


def _stale_scale_factors(ctx) -> None:
    """TM403 (rules catalog): a block-scaled ``tcgen05.mma`` in a loop whose A (B) descriptor advances each iteration
    while its scale-A (scale-B) address and its instruction descriptor (the byte selectors, bits 4-5 and 29-30,
    PTX ISA §9.7.16.4.2) stay the same, in a kernel where no tcgen05.cp, tcgen05.st or call on a loop can write TMEM
    again: each K block needs its own scale factors (§9.7.16.10.7), so every iteration after the first scales its
    A/B block with stale factors.  Anything that may refresh the columns in a loop (CUTLASS's per-K-block cp into
    the same columns) keeps the rule silent; so does an operand whose variation cannot be told."""
    insts = ctx.function.instructions
    mmas = [i for i in insts if i.family == "tcgen05.mma" and i.has("block_scale") and on_cycle(ctx, i)]
    if not mmas:
        return
    writers = [i for i in insts if (i.family in ("tcgen05.cp", "tcgen05.st") or i.op == "call") and on_cycle(ctx, i)]
    if any(i.op == "call" for i in writers):
        return
    for inst in mmas:
        _di, ii, ai, bi = block_scale_operands(inst)
        if bi >= len(inst.operands) or _varies_in_loop(ctx, inst, inst.operands[ii]) is not False:
            continue
        stale = []
        for which, desc_k, sf_k in (("A", 1, ai), ("B", 2, bi)):
            desc, sf = inst.operands[desc_k], inst.operands[sf_k]
            if type(desc) is Address or type(sf) is not Address or sf.base is None:
                continue  # A in TMEM: no descriptor to advance
            if _varies_in_loop(ctx, inst, desc) is True and _varies_in_loop(ctx, inst, sf.base) is False and \
                    not any(_may_refresh(ctx, w, _tmem(ctx.values, inst, sf_k)) for w in writers):
                stale.append(which)
        if stale:
            names = " and ".join(f"scale-{w}" for w in stale)
            descs = " and ".join(stale)
            ctx.report("TM403", inst, f"the {names} address{'es' if len(stale) > 1 else ''} of this block-scaled "
                                      f"MMA stay{'' if len(stale) > 1 else 's'} the same in every iteration of its "
                                      f"loop while the {descs} descriptor{'s' if len(stale) > 1 else ''} advance"
                                      f"{'' if len(stale) > 1 else 's'}, and nothing in a loop writes TMEM again "
                                      f"(tcgen05.cp/st) or selects other factors (the instruction descriptor is the "
                                      f"same): every K block after the first is scaled with the first block's "
                                      f"factors")
