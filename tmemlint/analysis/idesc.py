"""Instruction descriptor decoding (PTX ISA §9.7.16.4.2, Tables 42-44; the reference's §2.6) and operand
footprints in TMEM columns (§2.2, §2.3, §2.5)."""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.ir import Instruction

BLOCK_SCALED_KINDS = {"kind::mxf8f6f4", "kind::mxf4", "kind::mxf4nvf4"}


#: D element format, idesc bits 4-5 of the dense kinds (Table 42).
D_FORMATS = {0: "f16", 1: "f32", 2: "s32"}
#: Scale-factor format, idesc bit 23 of the block-scaled kinds (Tables 43/44).
SCALE_FORMATS = {0: "ue4m3", 1: "ue8m0"}


@dataclass(frozen=True, slots=True)
class Idesc:
    """A decoded 32-bit instruction descriptor: ``m`` rows and ``n`` columns of D, ``sparse``, ``block_scaled``;
    ``d_format`` is the accumulator element format (``"f32"``, ``"f16"``, ``"s32"``; block-scaled kinds always
    accumulate in f32) and ``scale_format`` the scale-factor format of block-scaled kinds (``"ue8m0"``,
    ``"ue4m3"``; None for dense kinds)."""

    m: int
    n: int
    sparse: bool
    block_scaled: bool
    d_format: str | None = None
    scale_format: str | None = None


def decode_idesc(value: int, kind: str | None) -> Idesc:
    """Decode ``value`` for an MMA of ``kind`` (``"kind::f16"``...).  N is bits 17-22 (N>>3); M is bits 24-28
    (M>>4) for dense kinds and bits 27-28 (M>>7) for block-scaled kinds, whose bits 24-26 are reserved."""
    v = value & 0xFFFFFFFF
    n = ((v >> 17) & 0x3F) << 3
    block = kind in BLOCK_SCALED_KINDS
    m = (((v >> 27) & 0x3) << 7) if block else (((v >> 24) & 0x1F) << 4)
    if block:
        return Idesc(m, n, bool(v & 0x4), True, "f32", SCALE_FORMATS[(v >> 23) & 1])
    return Idesc(m, n, bool(v & 0x4), False, D_FORMATS.get((v >> 4) & 0x3))


def mma_kind(inst: Instruction) -> str | None:
    """The ``kind::…`` qualifier of a tcgen05.mma."""
    return inst.part_with_prefix("kind::")


_LD_SHAPES = {"32x32b": (32, 1), "16x64b": (16, 2), "16x128b": (16, 4), "16x256b": (16, 8), "16x32bx2": (16, 1)}
_CP_SHAPES = {"128x256b": 8, "4x256b": 8, "128x128b": 4, "64x128b": 4, "32x128b": 4}


def ld_st_columns(inst: Instruction) -> int | None:
    """Columns touched by tcgen05.ld/st ``.shape.num`` (Table 47/48): ``.32x32b.xN`` → N, ``.16x64b`` → 2N,
    ``.16x128b`` → 4N, ``.16x256b`` → 8N; doubled with ``.pack::16b``/``.unpack::16b``."""
    per = None
    num = None
    for p in inst.parts:
        if p in _LD_SHAPES:
            per = _LD_SHAPES[p][1]
        elif p.startswith("x") and p[1:].isdigit():
            num = int(p[1:])
    if per is None or num is None:
        return None
    cols = per * num
    if inst.has("pack::16b") or inst.has("unpack::16b"):
        cols *= 2
    return cols


def cp_columns(inst: Instruction) -> int | None:
    """Columns written by tcgen05.cp ``.shape`` (reference §2.3: 256b = 8 columns, 128b = 4 columns)."""
    for p in inst.parts:
        if p in _CP_SHAPES:
            return _CP_SHAPES[p]
    return None


#: Columns of one ``[a-tmem]`` K-slice: 256 bits per row in every kind (reference §2.5, "A in TMEM").
A_TMEM_COLUMNS = 8

#: Columns of one block-scale operand (``[scale-A]``/``[scale-B]``): the ``tcgen05.cp .32x128b.warpx4`` footprint
#: CUTLASS, CuTe DSL and Triton use to load scale factors (reference §2.3, §2.5 "Scale factors").
SCALE_COLUMNS = 4


def accumulator_footprint(idesc: Idesc, cta_group: int, ws: bool = False) -> tuple[int, int]:
    """``(lanes, columns)`` of TMEM one ``tcgen05.mma`` writes as D in this CTA, from the datapath layouts of PTX ISA
    §9.7.16.10.5 (reference §2.5 table): M=128 (::1) or M=256 (::2) → 128 lanes × N (layouts D, A); M=64 not
    ``.ws`` → 64 lanes × N (layout F); M=128 ::2 sparse → 64 lanes × N (layout C); M=128 ::2 dense → 128 lanes ×
    N/2 (layout B); ``.ws`` M=64 → 128 lanes × N/2 (layout E); ``.ws`` M=32 → 128 lanes × N/4 (layout G).  The
    B, E and G column counts are the reference's inference (lanes × columns = rows × N); the rules use N for all
    (TM401 uses N, a safe upper bound).  An M the tables do not list gives ``(128, N)``."""
    m, n = idesc.m, idesc.n
    if ws:
        if m == 64:
            return 128, n // 2
        if m == 32:
            return 128, n // 4
        return 128, n
    if m == 64:
        return 64, n
    if m == 128 and cta_group == 2:
        return (64, n) if idesc.sparse else (128, n // 2)
    return 128, n


_LD_LANES = {"32x32b": 32, "16x64b": 16, "16x128b": 16, "16x256b": 16, "16x32bx2": 32}
_LD_REGS = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}


def ld_st_shape(inst: Instruction) -> tuple[str, int] | None:
    """``(shape, num)`` of a tcgen05.ld/st: ``("32x32b", 16)`` for ``.32x32b.x16``; None when either is missing."""
    shape = next((p for p in inst.parts if p in _LD_SHAPES), None)
    num = next((int(p[1:]) for p in inst.parts if p.startswith("x") and p[1:].isdigit()), None)
    if shape is None or num is None:
        return None
    return shape, num


def ld_st_lanes(inst: Instruction) -> int | None:
    """Lanes one warp's tcgen05.ld/st touches (Table 47/48 shapes, reference §2.2): 32 for ``.32x32b`` and for the
    two 16-lane halves of ``.16x32bx2``, 16 for the other ``.16x…`` shapes; None without a shape."""
    s = ld_st_shape(inst)
    return _LD_LANES[s[0]] if s else None


def ld_st_registers(inst: Instruction) -> int | None:
    """32-bit registers per thread of a tcgen05.ld/st (Table 47/48, enforced by ptxas): N for ``.32x32b``,
    ``.16x64b``, ``.16x32bx2``; 2N for ``.16x128b``; 4N for ``.16x256b``.  None without shape and num."""
    s = ld_st_shape(inst)
    return _LD_REGS[s[0]] * s[1] if s else None


def ld_st_bytes(inst: Instruction) -> int | None:
    """Bytes one warp moves with a tcgen05.ld/st: registers per thread × 32 threads × 4 bytes.  None without a
    shape."""
    r = ld_st_registers(inst)
    return r * 32 * 4 if r is not None else None


_CP_LANES = {"128x256b": 128, "4x256b": 4, "128x128b": 128, "64x128b": 128, "32x128b": 128}


def cp_lanes(inst: Instruction) -> int | None:
    """Lanes written by tcgen05.cp ``.shape`` (reference §2.3): 128, or 4 for ``.4x256b``; the multicast shapes
    ``.64x128b.warpx2`` and ``.32x128b.warpx4`` write all 128 lanes.  None without a shape."""
    for p in inst.parts:
        if p in _CP_LANES:
            return _CP_LANES[p]
    return None
