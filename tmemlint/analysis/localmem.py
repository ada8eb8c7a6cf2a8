"""32-bit values kept in the local-memory frame (``.local``, the ``__local_depot`` of a function) and read back.

nvcc keeps a small array that is indexed by a runtime value in local memory: ThunderKittens' bf16/fp8 GEMMs store
the TMEM addresses of their accumulator stages to ``tm[2]`` (``st.local.v2.u32 [%rd2], {%r689, %r690}``) and
read ``tm[stage]`` back (``ld.local.u32 %r738, [%rd14]`` with ``%rd14 = %rd2 + 4·stage``).  This analysis tells,
for every ``ld.local`` whose address is the frame plus a known set of byte offsets, which ``st.local`` elements may
have written the value it reads (PTX ISA §9.7.9.8 ``ld``, §9.7.9.10 ``st``, §5.1.5 the ``.local`` state space is
private to each thread, so only this thread's stores matter).

A forward reaching-stores analysis over the CFG: a store to a single known offset kills the earlier stores to that
offset; a store whose offset is not known, or whose element is not 32 bits wide, makes every offset unknown until a
later known store (a value read through it is not followed).  Offsets are byte offsets from the frame's base
(``__local_depot``, ``%SPL``/``%SP`` derived from it).  Never raises on odd input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Mapping

from tmemlint.analysis.cfg import CFG, ENTRY
from tmemlint.ir import Address, Imm, Instruction, Operand, Reg, Sym, Vec

#: Largest set of byte offsets one pointer may hold before it counts as unknown.
MAX_OFFSETS = 64
#: Passes of the reaching-stores iteration before it gives up (the lattice is finite; this only bounds odd CFGs).
_MAX_ROUNDS = 64
_ELEMENT_BYTES = {"b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b16": 2,
                  "u16": 2, "s16": 2, "f16": 2, "b8": 1, "u8": 1, "s8": 1, "b128": 16}

#: An integer-set oracle: the values operand ``k`` of an instruction may have (None: unknown).
IntegerSets = Callable[[Instruction, int], "frozenset[int] | None"]


@dataclass(frozen=True, slots=True)
class StoredElement:
    """One 32-bit element a ``st.local`` writes: the instruction, the operand holding the value (a register or an
    immediate of its vector operand) and the byte offset from the frame's base."""

    inst: Instruction
    value: Operand
    offset: int


#: The unknown store set at an offset (a store of unknown address or width may have written it).
_UNKNOWN: frozenset[StoredElement] = frozenset()


def _is_local(inst: Instruction, op: str) -> bool:
    return inst.op == op and inst.has("local")


def _element_bytes(inst: Instruction) -> int | None:
    return next((_ELEMENT_BYTES[p] for p in inst.parts[1:] if p in _ELEMENT_BYTES), None)


def _vector_width(inst: Instruction) -> int:
    return next((int(p[1:]) for p in inst.parts[1:] if p in ("v2", "v4", "v8")), 1)


class LocalMemory:
    """Reaching ``st.local`` elements per ``ld.local`` of one function (see the module docstring).

    ``pointer_offsets(inst, operand, ints)`` gives the frame offsets an address operand may point at (``ints`` says
    which integers an index register holds); ``loaded(inst, k, ints)`` the stored elements that element ``k`` of a
    ``ld.local`` may read, or None when one of them is not known."""

    def __init__(self, cfg: CFG, single_def: dict[str, int], reach: Mapping[tuple[int, str], Collection[int]] | None = None) -> None:
        """``single_def``: the registers with one definition (``ValueAnalysis.single_def``); ``reach``: the
        definitions of a register that reach an instruction (``ValueAnalysis.reach``), for the others."""
        self.cfg = cfg
        self.insts = cfg.function.instructions
        self.single_def = single_def
        self.reach = reach or {}
        self._in: dict[int, dict[int, frozenset[StoredElement]] | None] | None = None
        self._ints: IntegerSets | None = None
        self._store_offsets: dict[int, frozenset[int] | None] = {}

    # ---- pointers -------------------------------------------------------------------------------------------
    def pointer_offsets(self, inst: Instruction, o: Operand, ints: IntegerSets, depth: int = 0) -> frozenset[int] | None:
        """Byte offsets from the frame's base that the address operand ``o`` of ``inst`` may hold, or None."""
        if depth > 8:
            return None
        if type(o) is Address:
            base = o.base
            if type(base) is Sym:
                return frozenset({o.offset}) if base.name.startswith("__local_depot") else None
            if type(base) is not Reg:
                return None
            got = self._register(inst, base, ints, depth + 1)
            return frozenset(x + o.offset for x in got) if got is not None else None
        if type(o) is Reg:
            return self._register(inst, o, ints, depth + 1)
        if type(o) is Sym:
            return frozenset({o.offset}) if o.name.startswith("__local_depot") else None
        return None

    def _def_of(self, inst: Instruction, reg: Reg) -> int | None:
        d = self.single_def.get(reg.name)
        if d is not None:
            return d
        ds = self.reach.get((inst.index, reg.name))
        return next(iter(ds)) if ds is not None and len(ds) == 1 else None

    def _register(self, inst: Instruction, reg: Reg, ints: IntegerSets, depth: int) -> frozenset[int] | None:
        d = self._def_of(inst, reg)
        if d is None or depth > 8:
            return None
        di = self.insts[d]
        ops = di.operands
        if len(ops) < 2 or type(ops[0]) is not Reg or ops[0].name != reg.name:
            return None
        if di.op in ("mov", "cvta") and len(ops) == 2:
            return self.pointer_offsets(di, ops[1], ints, depth + 1)
        if di.op == "add" and len(ops) == 3:
            for p, q in ((1, 2), (2, 1)):
                base = self.pointer_offsets(di, ops[p], ints, depth + 1)
                if base is None:
                    continue
                step = self._index(di, q, ints, depth + 1)
                if step is None:
                    return None
                out = frozenset(b + s for b in base for s in step)
                return out if len(out) <= MAX_OFFSETS else None
        return None

    def _index(self, inst: Instruction, k: int, ints: IntegerSets, depth: int) -> frozenset[int] | None:
        """The integer values of operand ``k`` (a byte offset added to a frame pointer): an immediate, or a
        ``mul.wide``/``shl``/``cvt`` of a 32-bit register whose values ``ints`` knows."""
        o = inst.operands[k]
        if type(o) is Imm:
            return frozenset({o.value})
        if type(o) is not Reg or depth > 8:
            return None
        d = self._def_of(inst, o)
        if d is None:
            return None
        di = self.insts[d]
        ops = di.operands
        if len(ops) < 2:
            return None
        if di.op == "cvt" and len(ops) == 2:
            return ints(di, 1)
        if di.op in ("mul", "shl") and len(ops) == 3 and type(ops[2]) is Imm and (di.op == "shl" or di.has("wide")):
            vals = ints(di, 1)
            if vals is None:
                return None
            n = ops[2].value
            return frozenset((v << n) if di.op == "shl" else v * n for v in vals)
        if di.op == "mov" and len(ops) == 2:
            return self._index(di, 1, ints, depth + 1)
        return None

    # ---- reaching stores ------------------------------------------------------------------------------------
    def _stored(self, inst: Instruction, ints: IntegerSets) -> list[StoredElement] | None:
        """The 32-bit elements a ``st.local`` writes at one known offset each, or None when its offset or element
        width is not known (it may then write any offset)."""
        if len(inst.operands) < 2 or _element_bytes(inst) != 4:
            return None
        offs = self.pointer_offsets(inst, inst.operands[0], ints)
        if offs is None or len(offs) != 1:
            return None
        base = next(iter(offs))
        v = inst.operands[1]
        items = v.items if type(v) is Vec else (v,)
        if len(items) != _vector_width(inst):
            return None
        return [StoredElement(inst, x, base + 4 * i) for i, x in enumerate(items)]

    def _solve(self, ints: IntegerSets) -> None:
        """Reaching stores at the entry of every block: per offset the stores that may have written it last
        (``_UNKNOWN``: some store of unknown address or width may have); a missing offset was never written."""
        cfg = self.cfg
        effects: dict[int, list[tuple[str, list[StoredElement] | None]]] = {}
        for bid, blk in cfg.blocks.items():
            eff = []
            for i in range(blk.start, blk.end):
                ins = self.insts[i]
                if _is_local(ins, "st"):
                    eff.append(("st", self._stored(ins, ints)))
            effects[bid] = eff
        entry: dict[int, dict[int, frozenset[StoredElement]] | None] = {bid: None for bid in cfg.blocks}
        starts = [s for s in cfg.successors(ENTRY) if s in cfg.blocks]
        first = min(cfg.blocks) if cfg.blocks else None
        for s in starts or ([first] if first is not None else []):
            entry[s] = {}
        order = [n for n in cfg.reverse_postorder() if n in cfg.blocks]
        for _ in range(_MAX_ROUNDS):
            changed = False
            for bid in order:
                state = entry[bid]
                if state is None:
                    continue
                out = self._transfer(state, effects[bid])
                for nxt in cfg.successors(bid):
                    if not isinstance(nxt, int) or nxt not in cfg.blocks:
                        continue
                    old = entry[nxt]
                    new = out if old is None else _meet(old, out)
                    if new != old:
                        entry[nxt] = new
                        changed = True
            if not changed:
                break
        else:
            entry = {bid: None for bid in cfg.blocks}
        self._in = entry

    @staticmethod
    def _transfer(state: dict[int, frozenset[StoredElement]],
                  effects: list[tuple[str, list[StoredElement] | None]]) -> dict[int, frozenset[StoredElement]]:
        out = dict(state)
        for _, elems in effects:
            if elems is None:  # may write anywhere: every offset written so far is unknown, and so is any other
                out = {k: _UNKNOWN for k in out}
                out[-1] = _UNKNOWN
                continue
            for e in elems:
                out[e.offset] = frozenset({e})
        return out

    def loaded(self, inst: Instruction, k: int, ints: IntegerSets) -> list[StoredElement] | None:
        """The stored elements that element ``k`` of the ``ld.local`` ``inst`` (its destination vector's k-th
        register) may read: the stores to its offsets that reach it.  None when its address is not a known set of
        frame offsets, when an offset may hold a value of unknown origin, or when none was written."""
        if not _is_local(inst, "ld") or len(inst.operands) < 2 or _element_bytes(inst) != 4:
            return None
        offs = self.pointer_offsets(inst, inst.operands[1], ints)
        if not offs:
            return None
        if self._in is None:
            self._solve(ints)
        assert self._in is not None
        blk = self.cfg.block_of[inst.index] if inst.index < len(self.cfg.block_of) else None
        state = self._in.get(blk) if blk is not None else None
        if state is None:
            return None
        assert blk is not None
        b = self.cfg.blocks[blk]
        effects = [("st", self._stored(self.insts[i], ints)) for i in range(b.start, inst.index)
                   if _is_local(self.insts[i], "st")]
        state = self._transfer(state, effects)
        out: list[StoredElement] = []
        for off in sorted(offs):
            got = state.get(off + 4 * k, state.get(-1))
            if not got:  # unknown, or never written on some path
                return None
            out.extend(sorted(got, key=lambda e: (e.inst.index, e.offset)))
        return out


def _meet(a: dict[int, frozenset[StoredElement]], b: dict[int, frozenset[StoredElement]]) -> dict[int,
                                                                                              frozenset[StoredElement]]:
    """Join of two reaching-store states: per offset the union; an offset missing on one side was not written
    there (an uninitialised read: unknown), and unknown absorbs."""
    out: dict[int, frozenset[StoredElement]] = {}
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if x is None or y is None or not x or not y:
            out[k] = _UNKNOWN
        else:
            out[k] = x | y
    return out


__all__ = ["LocalMemory", "StoredElement"]
