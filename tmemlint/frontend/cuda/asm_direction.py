"""Direction of the operands of an ``asm`` statement's tcgen05 instructions (rule TM903, source mode only).

GCC-style inline asm tells the compiler, by each operand's constraint, whether the template reads it (an input,
``"r"(x)``), writes it (an output, ``"=r"(x)``) or both (``"+r"(x)``); the compiler never looks into the template.
A register that a tcgen05 instruction writes but that is bound as an input is, for the compiler, unchanged by the
asm: it keeps using the value the variable had (PTX ISA 9.0 §9.7.16.8.3 ``tcgen05.ld``: the destination vector
``r`` and, of ``tcgen05.ld.red``, the reduction result ``redval`` are written).  An operand a tcgen05 instruction
only reads (the TMEM address, ``tcgen05.st``'s source registers, descriptors, the instruction descriptor, the alloc
slot's shared address, a column count) bound as an output (``=``) reaches the asm as an uninitialised register, and
the variable's old value is dropped.  In nvcc's PTX both faults leave only a dead or undefined register, which is
why the rule exists in source mode only.

``"+r"`` (read-write) is never reported: on a written operand it is correct; on an operand the instruction only
reads the compiler passes the variable's value in and afterwards assumes it may have changed, which costs an
optimisation but computes the right thing.

No tcgen05 instruction writes a register other than ``tcgen05.ld``'s: ``tcgen05.alloc`` writes the allocated
address into shared memory at ``[dst]``, and ``dst`` itself is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.frontend.cuda.asm import PLACEHOLDER, AsmStatement
from tmemlint.ir import Address, Instruction, NotReg, ParenList, Reg, RegPair, Vec


@dataclass(frozen=True, slots=True)
class DirectionFault:
    """Operand ``index`` (``%index`` of the statement: outputs first, then inputs) is bound against the way
    ``opcode`` uses it: ``written`` is True for a written operand bound as an input, False for a read operand
    bound as an output; ``role`` names the operand of the instruction (``the destination``, ``the TMEM
    address`` ...)."""

    index: int
    opcode: str
    written: bool
    role: str


def _placeholders(o, out: list[int]) -> None:
    """Append the operand numbers of the placeholder registers (``%_oN``) in operand ``o``."""
    t = type(o)
    if t is Reg:
        if o.name.startswith(PLACEHOLDER):
            try:
                out.append(int(o.name[len(PLACEHOLDER):]))
            except ValueError:
                pass
    elif t is Address:
        if o.base is not None:
            _placeholders(o.base, out)
        if o.coords is not None:
            _placeholders(o.coords, out)
    elif t is Vec or t is ParenList:
        for x in o.items:
            _placeholders(x, out)
    elif t is NotReg:
        _placeholders(o.reg, out)
    elif t is RegPair:
        _placeholders(o.first, out)
        _placeholders(o.second, out)


def _roles(inst: Instruction) -> list[tuple[object, bool, str]]:
    """``(operand, written, role)`` for each operand of tcgen05 instruction ``inst`` (PTX ISA 9.0 §9.7.16)."""
    fam = inst.family
    ops = inst.operands
    out: list[tuple[object, bool, str]] = []
    red = fam == "tcgen05.ld" and "red" in inst.parts
    for i, o in enumerate(ops):
        if fam == "tcgen05.ld" and i == 0:
            out.append((o, True, "the destination"))
        elif red and i == 1:
            out.append((o, True, "the reduction result redval"))
        elif type(o) is Address:
            what = "the shared address of the slot" if fam == "tcgen05.alloc" else (
                "the mbarrier address" if fam == "tcgen05.commit" else "the TMEM address")
            out.append((o, False, what))
        elif fam == "tcgen05.st":
            out.append((o, False, "a source register"))
        elif fam in ("tcgen05.alloc", "tcgen05.dealloc") and i == len(ops) - 1:
            out.append((o, False, "the column count"))
        elif fam == "tcgen05.dealloc":
            out.append((o, False, "the TMEM address"))
        elif fam == "tcgen05.mma" and type(o) is Reg and i in (1, 2):
            out.append((o, False, "a matrix descriptor"))
        elif fam == "tcgen05.mma" and i == 3:
            out.append((o, False, "the instruction descriptor"))
        elif fam == "tcgen05.cp":
            out.append((o, False, "the shared-memory descriptor"))
        else:
            out.append((o, False, "an operand it reads"))
    return out


def _writes(inst: Instruction) -> list[int]:
    """Placeholders a non-tcgen05 instruction of the template writes: its first operand when that is a register
    (a store's, a branch's or a barrier's first operand is an address, a label or an immediate)."""
    if not inst.operands or type(inst.operands[0]) not in (Reg, Vec, RegPair):
        return []
    out: list[int] = []
    _placeholders(inst.operands[0], out)
    return out


def direction_faults(st: AsmStatement, items) -> list[DirectionFault]:
    """The operands of asm statement ``st`` whose binding contradicts how the tcgen05 instructions of its parsed
    template (``items``: Instruction and Label prototypes with placeholder registers) use them; one fault per
    operand, in template order.  An output (``=``) that an earlier instruction of the template writes before a
    tcgen05 instruction reads it is a scratch register, not a fault."""
    n_out = len(st.outputs)
    ops = st.outputs + st.inputs
    written_before: set[int] = set()
    faults: dict[int, DirectionFault] = {}
    for inst in items:
        if type(inst) is not Instruction:
            continue
        if inst.op != "tcgen05":
            written_before.update(_writes(inst))
            continue
        for operand, written, role in _roles(inst):
            idx: list[int] = []
            _placeholders(operand, idx)
            for k in idx:
                if k in faults or k >= len(ops):
                    continue
                op = ops[k]
                if written and k >= n_out:
                    faults[k] = DirectionFault(k, inst.family, True, role)
                elif not written and k < n_out and "+" not in op.modifier and k not in written_before:
                    faults[k] = DirectionFault(k, inst.family, False, role)
        if inst.family == "tcgen05.ld":
            for i in (0, 1) if "red" in inst.parts else (0,):
                if i < len(inst.operands):
                    got: list[int] = []
                    _placeholders(inst.operands[i], got)
                    written_before.update(got)
    return list(faults.values())


__all__ = ["DirectionFault", "direction_faults"]
