"""Two clean-ups of a lowered function that nvcc's optimiser does and that the analyses can see, so that source
mode's IR has the definitions nvcc's PTX has (issue 14: source mode and compile mode agree).

* ``sink_loop_constants``: ``int it = 0; for (...) { ... ++it; }`` where ``it`` is read only inside the loop: nvcc
  initialises ``it`` in the loop's preheader, after the zero-trip test, not before it.  The path simulation records
  the constant a path last wrote to a register that has several definitions (``regval`` facts), so where the
  initialisation sits decides which paths carry ``it = 0``: with it before the test, a warp's zero-trip path and
  its looping path both do, and the happens-before analysis takes such paths as chosen by data the warp computed
  itself (undecided) where nvcc's PTX gives a decided answer.
* ``drop_dead_definitions``: a C++ variable that is only ever set to constants and never read (a ``bool has_valid``
  a loop sets and nobody reads) is removed, as nvcc removes it; its constants would otherwise be path facts too.

Both take and return the instruction list and the label map (label → index), and renumber ``Instruction.index``.
"""

from __future__ import annotations

from tmemlint.ir import Address, Guard, Imm, Instruction, NotReg, ParenList, Reg, RegPair, Vec

#: Opcodes without side effects whose only effect is their destination register(s).
PURE = frozenset({"mov", "add", "sub", "mul", "mad", "div", "rem", "and", "or", "xor", "not", "shl", "shr", "setp",
                  "selp", "cvt", "cvta", "neg", "abs", "min", "max"})


def _regs(o, out: set[str]) -> None:
    t = type(o)
    if t is Reg:
        out.add(o.name)
    elif t is Address:
        if o.base is not None:
            _regs(o.base, out)
        if o.coords is not None:
            _regs(o.coords, out)
    elif t is Vec or t is ParenList:
        for x in o.items:
            _regs(x, out)
    elif t is NotReg:
        _regs(o.reg, out)
    elif t is RegPair:
        _regs(o.first, out)
        _regs(o.second, out)
    elif t is Guard:
        out.add(o.reg.name)


def _reads(inst: Instruction, pure: bool) -> set[str]:
    """Registers ``inst`` reads: for a pure instruction every operand but the first (its destination); for any
    other, every register it names (a store's address, an asm output taken as read: conservative)."""
    out: set[str] = set()
    for o in inst.operands[1:] if pure else inst.operands:
        _regs(o, out)
    if inst.guard is not None:
        out.add(inst.guard.reg.name)
    return out


def _renumber(insts: list[Instruction], order: list[int], labels: dict[str, int]):
    """The instructions at old indices ``order``, renumbered; each label moved to the new position of the first
    instruction of ``order`` at or after its old position in old index order (a label at a removed instruction
    goes to the next one kept)."""
    new = [insts[i] for i in order]
    pos = {old: k for k, old in enumerate(order)}
    n = len(insts)
    nxt: list[int] = [len(new)] * (n + 1)
    for old in range(n - 1, -1, -1):
        nxt[old] = pos[old] if old in pos else nxt[old + 1]
    out_labels = {name: (nxt[i] if i < n else len(new)) for name, i in labels.items()}
    for k, inst in enumerate(new):
        inst.index = k
    return new, out_labels


def sink_loop_constants(insts: list[Instruction], labels: dict[str, int], loops: list[tuple[int, int, str, str]],
                        cells: set[str], asm: set[int]):
    """Move ``mov %cell, imm`` just before a rotated loop's zero-trip test into its preheader when the cell is
    read only inside the loop.  ``loops``: ``(guard start, preheader, exit label, top label)`` of each rotated loop
    (indices in ``insts``; the preheader is where the top label is placed); ``cells``: registers of C++ variables;
    ``asm``: ``id()`` of the instructions that come from asm statements."""
    if not loops:
        return insts, labels
    targets = set(labels.values())
    readers: dict[str, list[int]] = {}
    writers: dict[str, list[int]] = {}
    for inst in insts:
        for r in _reads(inst, inst.op in PURE):
            readers.setdefault(r, []).append(inst.index)
        d = inst.operands[0] if inst.operands else None
        if type(d) is Reg and inst.op in PURE:
            writers.setdefault(d.name, []).append(inst.index)
    moves: dict[int, list[int]] = {}  # preheader index -> moved instruction indices
    moved: set[int] = set()
    tops = {top for _g, _pre, _end, top in loops}
    for g, pre, end_label, _top in loops:
        end = labels.get(end_label)
        if end is None:
            continue
        i = g - 1
        while i >= 0 and i + 1 not in targets:  # straight-line code up to the zero-trip test, no label in between
            inst = insts[i]
            if inst.op in ("bra", "brx", "ret", "exit", "trap"):
                break
            ops = inst.operands
            if (inst.op == "mov" and inst.guard is None and id(inst) not in asm and i not in moved and len(ops) == 2
                    and type(ops[0]) is Reg and ops[0].name in cells and type(ops[1]) is Imm):
                name = ops[0].name
                # read only inside the loop (not by the test, not after it, not before it through an outer
                # loop), written by nothing between the definition and the loop
                if all(pre <= k < end for k in readers.get(name, ())) and \
                        not any(i < k < pre for k in writers.get(name, ())):
                    moves.setdefault(pre, []).insert(0, i)
                    moved.add(i)
            i -= 1
    if not moved:
        return insts, labels
    order: list[int] = []
    for old in range(len(insts)):
        for k in moves.get(old, ()):
            order.append(k)
        if old not in moved:
            order.append(old)
    # a label keeps pointing at its instruction, which comes after the definitions moved in front of it (the loop's
    # top follows its preheader); a label at a moved definition (the end of an if before the loop) points at the
    # next instruction that stayed
    new = [insts[i] for i in order]
    pos = {old: k for k, old in enumerate(order)}

    def at(name: str, i: int) -> int:
        while i in moved:
            i += 1
        if i in moves and name not in tops:  # the zero-trip test's own label (a || b): the preheader's start
            return pos[moves[i][0]]
        return pos[i] if i < len(insts) else len(new)

    out_labels = {name: at(name, i) for name, i in labels.items()}
    for k, inst in enumerate(new):
        inst.index = k
    return new, out_labels


def drop_dead_definitions(insts: list[Instruction], labels: dict[str, int], cells: set[str], asm: set[int]):
    """Remove the definitions of the C++ variables (``cells``) that are written only with constants (``mov %v,
    imm``) and never read (a ``bool has_valid`` a loop sets and nobody reads), outside asm statements (``asm``: the
    ``id()`` of their instructions).  Only such flags: a computation whose result is unused (``float c = f(r);``)
    stays, as its reads of a ``tcgen05.ld`` result are what TM301 is about."""
    read: set[str] = set()
    consts: dict[str, list[int]] = {}
    other: set[str] = set()
    for k, inst in enumerate(insts):
        own = id(inst) not in asm
        ops = inst.operands
        if own and inst.op == "mov" and inst.guard is None and len(ops) == 2 and type(ops[0]) is Reg and \
                ops[0].name in cells and type(ops[1]) is Imm:
            consts.setdefault(ops[0].name, []).append(k)
            continue
        read |= _reads(inst, inst.op in PURE and own)
        if inst.op in PURE and ops:
            d: set[str] = set()
            _regs(ops[0], d)
            other |= d
    dead = {k for name, ks in consts.items() if name not in read and name not in other for k in ks}
    if not dead:
        return insts, labels
    return _renumber(insts, [k for k in range(len(insts)) if k not in dead], labels)


__all__ = ["PURE", "drop_dead_definitions", "sink_loop_constants"]
