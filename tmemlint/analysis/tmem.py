"""TMEM facts of one function: allocation sites, their slots and column counts, and what each TMEM operand
refers to (PTX ISA §9.7.16.7.1 tcgen05.alloc/dealloc; the reference's §2.1).

An allocation is identified by its *slot*: the shared-memory address ``tcgen05.alloc`` writes the TMEM address
to (a ``("sym", name, offset)`` value).  Values loaded from the slot are TMEM addresses of that allocation
(``ValueAnalysis`` gives them as ``("tmem", slot, col, lane)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tmemlint.analysis.values import TOP, Cmp, Const, SymAddr, TmemAddr, ValueAnalysis
from tmemlint.ir import Function, Instruction

#: TMEM geometry per CTA on sm_100a (PTX ISA §9.7.16.2.1): 128 lanes x 512 columns of 32-bit cells.
TMEM_LANES = 128
TMEM_COLUMNS = 512

Slot = tuple[Any, ...]
"""An allocation's slot key: its ``("sym", name, offset)`` value, or ``("inst", index)`` when the slot address is
unknown (still a tagged tuple, as the values of ``ValueAnalysis``)."""


def valid_ncols(n: int) -> bool:
    """Whether ``n`` is a legal ``nCols``: a power of two in [32, 512] (PTX ISA §9.7.16.7.1)."""
    return 32 <= n <= 512 and n & (n - 1) == 0


@dataclass(slots=True)
class TmemSites:
    """Allocation-related instructions of a function.

    ``slot_of`` maps an alloc's index to its slot key (``("sym", ...)``, or ``("inst", index)`` when the slot
    address is unknown); ``freed_slot`` maps a dealloc's index to the slot of the TMEM address it frees, or None
    when that address is not derived from a known slot; ``ncols`` maps alloc/dealloc indices to a constant column
    count (None when not constant)."""

    allocs: list[Instruction] = field(default_factory=list)
    deallocs: list[Instruction] = field(default_factory=list)
    relinquishes: list[Instruction] = field(default_factory=list)
    slot_of: dict[int, Slot] = field(default_factory=dict)
    freed_slot: dict[int, Slot | None] = field(default_factory=dict)
    freed_col: dict[int, int | None] = field(default_factory=dict)
    ncols: dict[int, int | None] = field(default_factory=dict)

    def allocs_of_slot(self, slot: Slot) -> list[Instruction]:
        return [a for a in self.allocs if self.slot_of[a.index] == slot]


def const_value(va: ValueAnalysis, inst: Instruction, k: int) -> int | None:
    """Operand ``k`` of ``inst`` as an integer constant, or None."""
    if k >= len(inst.operands):
        return None
    v = va.value(inst, inst.operands[k])
    return v.value if type(v) is Const else None


def trap_checked_bases(fn: Function, va: ValueAnalysis) -> set[int]:
    """Constants c for which the code traps unless a TMEM base loaded from a slot equals c: ``setp.ne %p, base,
    c; @%p trap`` (hand-written) or nvcc's ``@%p bra L; trap; L:`` with ``%p = (base == c)``.  After such a check
    the allocation's base is c, so integer-constant TMEM addresses are column offsets from it."""
    out: set[int] = set()
    insts = fn.instructions
    if not any(i.op == "trap" for i in insts):
        return out
    for inst in insts:
        if inst.guard is None or inst.op not in ("trap", "bra"):
            continue
        if inst.op == "bra" and not (inst.index + 1 < len(insts) and insts[inst.index + 1].op == "trap"):
            continue
        v = va.reg_value(inst, inst.guard.reg)
        if type(v) is Cmp and v.cmp in ("eq", "ne"):
            for a, b in ((v.a, v.b), (v.b, v.a)):
                if type(a) is TmemAddr and type(b) is Const:
                    out.add(b.value)
    return out


def first_operand_value(va: ValueAnalysis, inst: Instruction) -> tuple[Any, ...]:
    """The value of ``inst``'s first operand (the slot of an alloc, the TMEM address of a dealloc), TOP if none
    (``lifecycle`` asks it of a callee's)."""
    return va.value(inst, inst.operands[0]) if inst.operands else TOP


def tmem_sites(fn: Function, va: ValueAnalysis) -> TmemSites:
    """Collect the allocation sites of ``fn``.  A dealloc of an integer-constant address frees the allocation whose
    base is known (the only slot, allocated with 512 columns or trap-checked): DeepGEMM's ``free(0, n)``."""
    s = TmemSites()
    for inst in fn.instructions:
        fam = inst.family
        if fam == "tcgen05.alloc":
            s.allocs.append(inst)
            v = first_operand_value(va, inst)
            s.slot_of[inst.index] = v if type(v) is SymAddr else ("inst", inst.index)
            s.ncols[inst.index] = const_value(va, inst, 1)
        elif fam == "tcgen05.dealloc":
            s.deallocs.append(inst)
            v = first_operand_value(va, inst)
            if type(v) is TmemAddr:
                s.freed_slot[inst.index] = v.slot
                s.freed_col[inst.index] = v.col
            else:
                s.freed_slot[inst.index] = None
                s.freed_col[inst.index] = None
            s.ncols[inst.index] = const_value(va, inst, 1)
        elif fam == "tcgen05.relinquish_alloc_permit":
            s.relinquishes.append(inst)
    slots = {s.slot_of[a.index] for a in s.allocs}
    constant_frees = [d for d in s.deallocs if s.freed_slot[d.index] is None]
    if constant_frees and len(slots) == 1:
        known = any(s.ncols.get(a.index) == TMEM_COLUMNS for a in s.allocs) or trap_checked_bases(fn, va)
        for d in constant_frees:
            v = first_operand_value(va, d)
            if known and type(v) is Const:
                s.freed_slot[d.index] = next(iter(slots))
                s.freed_col[d.index] = v.value & 0xFFFF
    return s
