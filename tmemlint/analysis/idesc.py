"""Instruction descriptor decoding (PTX ISA §9.7.16.4.2, Tables 42-44; the reference's §2.6) and operand
footprints in TMEM columns (§2.2, §2.3, §2.5)."""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.ir import Instruction

BLOCK_SCALED_KINDS = {"kind::mxf8f6f4", "kind::mxf4", "kind::mxf4nvf4"}


@dataclass(frozen=True, slots=True)
class Idesc:
    """A decoded 32-bit instruction descriptor: ``m`` rows and ``n`` columns of D, ``sparse``, ``block_scaled``."""

    m: int
    n: int
    sparse: bool
    block_scaled: bool


def decode_idesc(value: int, kind: str | None) -> Idesc:
    """Decode ``value`` for an MMA of ``kind`` (``"kind::f16"``...).  N is bits 17-22 (N>>3); M is bits 24-28
    (M>>4) for dense kinds and bits 27-28 (M>>7) for block-scaled kinds, whose bits 24-26 are reserved."""
    v = value & 0xFFFFFFFF
    n = ((v >> 17) & 0x3F) << 3
    block = kind in BLOCK_SCALED_KINDS
    m = (((v >> 27) & 0x3) << 7) if block else (((v >> 24) & 0x1F) << 4)
    return Idesc(m, n, bool(v & 0x4), block)


def mma_kind(inst: Instruction) -> str | None:
    """The ``kind::…`` qualifier of a tcgen05.mma."""
    return inst.part_with_prefix("kind::")


def accumulator_columns(idesc: Idesc, cta_group: int) -> int:
    """Columns of D written by one MMA, as a safe upper bound: N (the reference's §2.5 datapath table gives N/2 or
    N/4 for some layouts; the linter uses N)."""
    return idesc.n


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
