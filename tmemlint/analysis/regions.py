"""TMEM regions: the columns and lanes every tcgen05 operand covers, and the regions those footprints form.

Three layers, each usable on its own:

1. ``AddressSets``: the *set* of TMEM addresses an operand may hold.  ``ValueAnalysis`` gives one value per
   register (a loop-carried stage index makes the column unknown); here a register holds a bounded set of 32-bit
   integers (at most ``MAX_SET`` values), or a TMEM address ``TmemAddr`` = allocation slot plus a set of 32-bit
   offsets from the allocation's base (PTX ISA §9.7.16.2: lane in bits 31-16, column in bits 15-0; bits 31-30 of
   a block-scale operand select a byte of the cell, so the lane is taken from bits 29-16).  Pipeline counters that
   wrap (``i + 1 > 1 ? 0 : i + 1``, ``i & 1``, ``i % 2``) stay small sets, so a double-buffered accumulator at
   ``base + stage * 128`` gives the two columns {0, 128}.  An address plus an unknown term (a loop over column
   chunks) keeps its known part and is marked inexact (``exact=False``): its footprint is *anchored* there.
2. ``Access``: one TMEM operand of one instruction with its footprint (columns from the shape tables and the
   decoded instruction descriptor of ``tmemlint.analysis.idesc``), role (accumulator, A, scale-A/B, sparsity
   metadata, ld/st/cp data) and direction.
3. ``Region``: a column interval ``[lo, hi)`` of one allocation with the accesses that touch it.  Regions are the
   maximal footprints of the accumulators (``tcgen05.mma`` D), of the MMA operands read from TMEM (A, scale
   factors, metadata: adjacent K-slices of A merge) and of ``tcgen05.st``/``cp`` data that is neither; an st/cp
   inside an operand region writes that operand, one inside an accumulator writes the accumulator (zero-fill,
   rescale), and loads attach to every region they overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tmemlint.analysis.feasibility import Feasibility
from tmemlint.analysis.idesc import (A_TMEM_COLUMNS, BLOCK_SCALED_KINDS, SCALE_COLUMNS, Idesc, accumulator_footprint, cp_columns,
                                     cp_lanes, decode_idesc, ld_st_columns, ld_st_lanes, ld_st_registers, mma_kind)
from tmemlint.analysis.localmem import LocalMemory
from tmemlint.analysis.tmem import Slot
from tmemlint.analysis.values import Const, Tid, ValueAnalysis, fold_op
from tmemlint.analysis.values import TmemAddr as TmemValue
from tmemlint.ir import Address, Imm, Instruction, Operand, Reg, Sym, Vec
from tmemlint.threadexpr import eval_tid

#: Integer operations followed through when one register is used twice in an address expression.
_CHAIN_OPS = {"add", "sub", "or", "xor", "and", "shl", "shr", "mul", "mov", "cvt"}
#: Largest set of values a register may hold before it counts as unknown.
MAX_SET = 64
#: Re-evaluations of one definition before a still-growing set is widened to unknown (loop counters).
_WIDEN_AFTER = 8
#: The same for TMEM addresses, which grow only when a loop advances them.
_WIDEN_ADDRESS_AFTER = 3
_MASK = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class TmemAddr:
    """A set of TMEM addresses of the allocation whose slot is ``slot``: ``offsets`` are 32-bit offsets from the
    allocation's base address; ``exact`` is False when an unknown term was added (the offsets are then the known
    part: the access is anchored there)."""

    slot: Slot
    offsets: frozenset[int]
    exact: bool = True

    @property
    def columns(self) -> list[int]:
        """The start columns (bits 15-0 of each offset), sorted."""
        return sorted({o & 0xFFFF for o in self.offsets})

    @property
    def lanes(self) -> list[int]:
        """The start lanes (bits 29-16 of each offset; bits 31-30 are a block-scale byte selector), sorted."""
        return sorted({(o >> 16) & 0x3FFF for o in self.offsets})


IntSet = frozenset[int]
"""The 32-bit integer values a register may hold."""
AbsVal = IntSet | TmemAddr | None
"""What ``AddressSets`` knows of a register: integers, TMEM addresses, or None (unknown); ``_BOTTOM`` (the empty
set) is "no value yet" in a fixed-point iteration."""
RegKey = tuple[str, tuple[int, ...]]
"""A register and the definitions of it that reach a read (``AddressSets._key``)."""
KnownBits = tuple[IntSet, int]
"""``(values of the known bits, mask of the unknown bits)`` (``_known_bits``)."""

_BOTTOM: IntSet = frozenset()


def _join(a: AbsVal, b: AbsVal) -> AbsVal:
    if a is None or b is None:
        return None
    if a == _BOTTOM:
        return b
    if b == _BOTTOM:
        return a
    if type(a) is TmemAddr and type(b) is TmemAddr:
        if a.slot != b.slot:
            return None
        offs = a.offsets | b.offsets
        return TmemAddr(a.slot, offs, a.exact and b.exact) if len(offs) <= MAX_SET else None
    if isinstance(a, TmemAddr) or isinstance(b, TmemAddr):
        return None
    u = a | b
    return u if len(u) <= MAX_SET else None


#: The ``values.fold_op`` instruction (parts) each operation of the integer sets is folded as: every value is a
#: 32-bit register's bits (a TMEM address is a ``.b32``, PTX ISA §9.7.16.2), read unsigned; ``mulhi_s`` is
#: ``mul.hi.s32`` (the high half of a signed product, a division by a constant).
_FOLD_AS: dict[str, tuple[str, ...]] = {
    "add": ("add", "u32"), "sub": ("sub", "u32"), "mul": ("mul", "lo", "u32"), "shl": ("shl", "b32"),
    "shr": ("shr", "u32"), "and": ("and", "b32"), "or": ("or", "b32"), "xor": ("xor", "b32"), "min": ("min", "u32"),
    "max": ("max", "u32"), "rem": ("rem", "u32"), "div": ("div", "u32"), "mulhi_u": ("mul", "hi", "u32"),
    "mulhi_s": ("mul", "hi", "s32"),
}
#: The comparisons of ``setp`` (PTX ISA §9.7.6.2).
_CMPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"})


def _holds(cmp: str, x: int, k: int) -> bool:
    """``x cmp k`` on two 32-bit values read as signed (``setp.cmp.s32``, ``values.fold_op``)."""
    return fold_op(("setp", cmp, "s32"), (x, k)) == 1


def _opname(inst: Instruction) -> str:
    """The ``_FOLD_AS`` key of an integer instruction: its opcode, or ``mulhi_u``/``mulhi_s`` for ``mul.hi``."""
    if inst.op == "mul" and inst.has("hi"):
        return "mulhi_s" if any(p.startswith("s") and p[1:].isdigit() for p in inst.parts) else "mulhi_u"
    return inst.op


def _pairwise(op: str, a: IntSet, b: IntSet) -> IntSet | None:
    if len(a) * len(b) > MAX_SET * MAX_SET:
        return None
    parts = _FOLD_AS[op]
    out: set[int] = set()
    for x in a:
        for y in b:
            v = fold_op(parts, (x, y))
            if v is None:
                return None
            out.add(v & _MASK)
    return frozenset(out) if len(out) <= MAX_SET else None


class AddressSets:
    """Bounded value sets for the registers that form TMEM addresses of one function (see module docstring).

    Demand-driven: ``address(inst, operand)`` evaluates the definitions the operand depends on and iterates them to
    a fixed point; definitions whose set keeps growing are widened to unknown.  Never raises on odd input."""

    def __init__(self, va: ValueAnalysis, n_threads: int = 1024, constant_slot: Slot | None = None,
                 warps: tuple[int, ...] | None = None, local: LocalMemory | None = None,
                 feasibility: Feasibility | None = None) -> None:
        """``constant_slot``: the allocation whose base is known to be column 0 (512 columns, or a trap-checked
        base: ``analysis.tmem.trap_checked_bases``), so integer TMEM operands are its offsets (DeepGEMM,
        FlashMLA, FlashAttention-4 address TMEM by constants); None otherwise.  ``warps``: only the threads of
        these warps (``tid.x // 32``) are considered for thread-index values (the warps that execute the
        instructions asked about: a column ``(warp & 3) * 256`` issued only by warps 0-1 is {0, 256}); None: all
        ``n_threads``.  ``local``: the function's local-memory stores (``analysis.localmem``; built on first use
        when None): a TMEM address stored to a local array and read back keeps its value.  ``feasibility``: asked
        for the values of a counted loop's induction variable where its set was widened to unknown
        (``analysis.feasibility.Feasibility.loop_values``)."""
        self.feasibility = feasibility
        self.constant_slot = constant_slot
        self.local = local
        self.warps = tuple(warps) if warps is not None else None
        self.va = va
        self.insts = va.insts
        self.n_threads = max(1, n_threads)
        self._val: dict[tuple[int, str], AbsVal] = {}  # (definition index, register) → its values
        self._changes: dict[tuple[int, str], int] = {}
        self._busy: set[tuple[int, str]] = set()
        self._frozen: set[tuple[int, str]] = set()
        self._cycle_keys: set[tuple[int, str]] = set()
        self._cyclic = False
        self._changed = False

    # ---- public -------------------------------------------------------------------------------------------
    def address(self, inst: Instruction, k: int) -> TmemAddr | None:
        """The TMEM addresses operand ``k`` of ``inst`` may hold, or None when it is not a TMEM address of a known
        allocation (or the set is too large)."""
        if k >= len(inst.operands):
            return None
        v = self._stable(lambda: self._operand(inst, inst.operands[k]))
        if type(v) is frozenset and v and self.constant_slot is not None:
            return TmemAddr(self.constant_slot, v)  # integer addresses: offsets from the known base 0
        return v if type(v) is TmemAddr else None

    def register(self, inst: Instruction, name: str) -> AbsVal:
        """The values register ``name`` may hold where ``inst`` reads it: a frozenset of integers, a ``TmemAddr``,
        or None when unknown."""
        return self._stable(lambda: self._use(inst, Reg(name)))

    def definition(self, d: int, name: str) -> AbsVal:
        """The values the definition of ``name`` at instruction ``d`` may give (as ``register``)."""
        return self._stable(lambda: self._eval_def(d, name))

    def integers(self, inst: Instruction, k: int) -> IntSet | None:
        """The integer values operand ``k`` of ``inst`` may have, or None when unknown."""
        if k >= len(inst.operands):
            return None
        v = self._stable(lambda: self._operand(inst, inst.operands[k]))
        return v if type(v) is frozenset and v else None

    # ---- fixed point ----------------------------------------------------------------------------------------
    def _stable(self, thunk: Callable[[], AbsVal]) -> AbsVal:
        """Evaluate ``thunk``; when a definition was met again while being evaluated (a loop), re-evaluate the
        definitions seen so far until none changes (widening bounds the rounds)."""
        self._cyclic = False
        v = thunk()
        rounds = 0
        cyclic = self._cyclic
        while self._cyclic and rounds < _WIDEN_AFTER * 4:
            rounds += 1
            self._changed = False
            for key in list(self._val):
                self._eval_def(*key, force=True)
            v = thunk()
            if not self._changed:
                break
        if cyclic and self._frozen:
            self._narrow()
            v = thunk()
        self._cyclic = False
        return v

    def _narrow(self) -> None:
        """After widening, recompute the definitions outside the loops that were widened from their operands
        alone (no join with the old value), so that values downstream of a widened loop address keep only the
        offsets that enter the loop."""
        for _ in range(4):
            changed = False
            for key in list(self._val):
                old = self._val[key]
                if key in self._cycle_keys and key in self._frozen or old is None or type(old) is not TmemAddr:
                    continue
                self._busy.add(key)
                try:
                    new = self._transfer(self.insts[key[0]], key[1])
                finally:
                    self._busy.discard(key)
                if type(new) is TmemAddr and new != old:
                    self._val[key] = new
                    self._frozen.discard(key)
                    changed = True
            if not changed:
                return

    def _operand(self, inst: Instruction, o: Operand) -> AbsVal:
        if type(o) is Imm:
            return frozenset({o.value & _MASK})
        if type(o) is Reg:
            return self._use(inst, o)
        if type(o) is Address:
            if type(o.base) is not Reg:
                return None
            base = self._use(inst, o.base)
            return self._add(base, frozenset({o.offset & _MASK})) if o.offset else base
        return None

    def _use(self, inst: Instruction, reg: Reg) -> AbsVal:
        name = reg.name
        if name.startswith("%"):
            sv = self._special(name)
            if sv is not False:
                return sv
        va = self.va
        d = va.single_def.get(name)
        if d is not None:
            return self._eval_def(d, name)
        ds = va.reach.get((inst.index, name))
        if ds is None:
            return None
        acc: AbsVal = _BOTTOM
        for d in ds:
            acc = _join(acc, self._eval_def(d, name))
            if acc is None:
                break
        if acc is None and self.feasibility is not None:  # widened: a counted loop's values, from its exit test
            return self.feasibility.loop_values(inst, name)
        return acc

    def _special(self, name: str) -> IntSet | None | Literal[False]:
        """The values of ``%tid.x``/``%laneid``; None for another special register the function never defines
        (unknown); False for any other register (evaluated from its definitions)."""
        if name == "%tid.x" or name == "%laneid":
            expr = ("x",) if name == "%tid.x" else ("and", ("x",), 31)
            return self._tid_set(expr)
        if name.startswith("%"):
            if self.va.single_def.get(name) is None and name not in self.va.multi_defs:
                return None
        return False

    def _tid_set(self, expr: tuple[Any, ...]) -> IntSet | None:
        if self.warps is None:
            vals = frozenset(v & _MASK for v in eval_tid(expr, range(0, self.n_threads)))
        else:
            vals = frozenset(v & _MASK for w in self.warps
                             for v in eval_tid(expr, range(w * 32, min(w * 32 + 32, self.n_threads))))
        return vals if len(vals) <= MAX_SET else None

    def _eval_def(self, d: int, name: str, force: bool = False) -> AbsVal:
        key = (d, name)
        if key in self._busy:
            self._cyclic = True
            self._cycle_keys.add(key)
            return self._val.get(key, _BOTTOM)
        if key in self._val and not force:
            return self._val[key]
        old = self._val.get(key, _BOTTOM)
        if old is None or key in self._frozen:
            return old
        self._val[key] = old
        self._busy.add(key)
        try:
            new = self._transfer(self.insts[d], name)
        finally:
            self._busy.discard(key)
        joined = _join(old, new) if new is not None else None
        if joined is None and type(old) is TmemAddr and type(new) is TmemAddr and old.slot == new.slot:
            joined = self._widen(key, old)
        new = joined
        if new != old:
            n = self._changes.get(key, 0) + 1
            self._changes[key] = n
            if n > (_WIDEN_ADDRESS_AFTER if type(new) is TmemAddr else _WIDEN_AFTER):
                new = self._widen(key, new if type(new) is TmemAddr else old)
            self._val[key] = new
            self._changed = True
        return self._val[key]

    def _widen(self, key: tuple[int, str], v: AbsVal) -> TmemAddr | None:
        """A TMEM address that keeps growing (an address advanced in a loop: ``taddr += 32``) is widened to an
        inexact address with no offsets of its own, and frozen: joined with the definition that enters the loop,
        it leaves that definition's offsets as the anchors.  Anything else widens to unknown."""
        if type(v) is not TmemAddr:
            return None
        self._frozen.add(key)
        return TmemAddr(v.slot, frozenset(), False)

    # ---- transfer -------------------------------------------------------------------------------------------
    def _transfer(self, inst: Instruction, name: str) -> AbsVal:
        va = self.va
        v = va.def_value.get((inst.index, name))
        match v:
            case Const(value=k):
                return frozenset({k & _MASK})
            case TmemValue(slot=slot, col=int() as col, lane=int() as lane):
                return TmemAddr(slot, frozenset({((lane << 16) + col) & _MASK}))
            case Tid(expr=e):
                s = self._tid_set(e)
                if s is not None:
                    return s
        ops = inst.operands
        if inst.op == "ld" and inst.has("local"):
            return self._local_load(inst, name)
        if not ops or type(ops[0]) is not Reg or ops[0].name != name:
            return None
        op = inst.op
        args = ops[1:]
        try:
            if op in ("mov", "cvt", "cvta") and args:
                src = args[0] if op == "mov" else args[-1]
                if type(src) in (Sym, Vec):
                    return None
                return self._operand(inst, src)
            if op in ("add", "sub", "or", "xor", "and", "shl", "shr", "mul", "min", "max", "rem", "div") \
                    and len(args) >= 2:
                if op == "mul" and inst.has("wide"):
                    return None
                op = _opname(inst)  # mul.hi: the high half (a division by a constant: (s + 1) % 5)
                shared = self._shared_source(inst, args[0], args[1])
                if shared is not None:
                    return shared
                a = self._operand(inst, args[0])
                b = self._operand(inst, args[1])
                return self._binop(op, a, b, args)
            if op == "mad" and len(args) == 3 and inst.has("lo"):
                m = self._binop("mul", self._operand(inst, args[0]), self._operand(inst, args[1]), args[:2])
                return self._binop("add", m, self._operand(inst, args[2]), args[1:])
            if op == "selp" and len(args) == 3:
                return self._selp(inst, args)
            if op == "neg" and args:
                a = self._operand(inst, args[0])
                return _pairwise("sub", frozenset({0}), a) if type(a) is frozenset and a else None
        except (TypeError, ValueError, OverflowError, RecursionError):
            return None
        return None

    def local_memory(self) -> LocalMemory:
        """The function's local-memory stores (``analysis.localmem``), built once."""
        if self.local is None:
            self.local = LocalMemory(self.va.cfg, self.va.single_def, self.va.reach)
        return self.local

    def _integers_now(self, inst: Instruction, k: int) -> IntSet | None:
        """``integers`` inside an evaluation (no fixed point of its own)."""
        if k >= len(inst.operands):
            return None
        v = self._operand(inst, inst.operands[k])
        return v if isinstance(v, frozenset) and v else None

    def _local_load(self, inst: Instruction, name: str) -> AbsVal:
        """``ld.local`` of a value this thread stored to its frame (PTX ISA §9.7.9.8; ``analysis.localmem``): the
        join of the values of the stores that reach it at its offsets (ThunderKittens' ``tm[stage]`` array of
        accumulator addresses), or None when one is not known."""
        dst = inst.operands[0] if inst.operands else None
        items = dst.items if type(dst) is Vec else (dst,)
        k = next((i for i, x in enumerate(items) if type(x) is Reg and x.name == name), None)
        if k is None:
            return None
        got = self.local_memory().loaded(inst, k, self._integers_now)
        if not got:
            return None
        acc: AbsVal = _BOTTOM
        for e in got:
            acc = _join(acc, self._operand(e.inst, e.value))
            if acc is None:
                return None
        return acc

    # ---- one value used twice -----------------------------------------------------------------------------
    def _key(self, inst: Instruction, reg: Reg) -> RegKey:
        """The definitions of ``reg`` reaching ``inst``: two reads with the same key read the same value."""
        d = self.va.single_def.get(reg.name)
        return (reg.name, (d,) if d is not None else tuple(sorted(self.va.reach.get((inst.index, reg.name), ()))))

    def _one_def(self, inst: Instruction, reg: Reg) -> int | None:
        """The only definition of ``reg`` that reaches ``inst``, or None."""
        d = self.va.single_def.get(reg.name)
        if d is not None:
            return d
        ds = self.va.reach.get((inst.index, reg.name), ())
        return next(iter(ds)) if len(ds) == 1 else None

    def _sources(self, inst: Instruction, o: Operand, depth: int = 0) -> set[RegKey]:
        """The registers (keys) an integer operand is computed from through single-definition arithmetic."""
        if type(o) is not Reg or o.name.startswith("%tid") or depth > 6:
            return set()
        key = self._key(inst, o)
        d = self._one_def(inst, o)
        if d is None:
            return {key}
        src = self.insts[d]
        if src.op not in _CHAIN_OPS or not src.operands:
            return {key}
        out = {key}
        for x in src.operands[1:]:
            out |= self._sources(src, x, depth + 1)
        return out

    def _shared_source(self, inst: Instruction, x: Operand, y: Operand) -> IntSet | None:
        """``x op y`` when both operands are computed from one register: evaluated once per value of that
        register, not from two independent sets (TK: ``((s << 7) | 16) - (s << 6)`` is ``64 s + 16``, never
        ``16 - 192``); None when the operands share nothing or the shared register's set is unknown."""
        common = self._sources(inst, x) & self._sources(inst, y)
        if not common:
            return None
        for key in sorted(common, key=lambda k: (-len(k[1]), k)):
            name, defs = key
            vals: AbsVal = _BOTTOM
            for d in defs:
                vals = _join(vals, self._eval_def(d, name))
            if type(vals) is not frozenset or not vals or len(vals) > 16:
                continue
            out: IntSet = frozenset()
            for v in vals:
                r = self._eval_fixed(inst, _opname(inst), inst.operands[1:3], key, v, 0)
                if type(r) is not frozenset:
                    return None
                out |= r
                if len(out) > MAX_SET:
                    return None
            return out
        return None

    def _eval_fixed(self, inst: Instruction, op: str, args: Sequence[Operand], key: RegKey, value: int,
                    depth: int) -> AbsVal:
        """``op args`` at ``inst`` with the register ``key`` fixed to ``value``."""
        vals = [self._operand_fixed(inst, a, key, value, depth) for a in args]
        if any(type(v) is not frozenset for v in vals):
            return None
        if op in ("mov", "cvt"):
            return vals[0]
        return self._binop(op, vals[0], vals[1], args) if len(vals) == 2 else None

    def _operand_fixed(self, inst: Instruction, o: Operand, key: RegKey, value: int, depth: int) -> AbsVal:
        if type(o) is Reg and not o.name.startswith("%tid"):
            if self._key(inst, o) == key:
                return frozenset({value & _MASK})
            d = self._one_def(inst, o)
            if d is not None and depth < 6:
                src = self.insts[d]
                if src.op in _CHAIN_OPS and src.operands and key in self._sources(inst, o):
                    ops = src.operands[1:] if src.op != "cvt" else src.operands[-1:]
                    if src.op == "mul" and src.has("wide"):
                        return None
                    return self._eval_fixed(src, _opname(src), ops[:2], key, value, depth + 1)
        return self._operand(inst, o)

    def _binop(self, op: str, a: AbsVal, b: AbsVal, args: Sequence[Operand]) -> AbsVal:
        if a is None and b is None:
            return None
        ta, tb = type(a) is TmemAddr, type(b) is TmemAddr
        if op in ("add", "or", "sub") and (ta or tb):
            if ta and tb:
                return None
            if tb:
                if op == "sub":
                    return None
                a, b = b, a
            assert isinstance(a, TmemAddr) and not isinstance(b, TmemAddr)  # the address is ``a`` now
            if b is None:
                return TmemAddr(a.slot, a.offsets, False)
            if b == _BOTTOM:
                return _BOTTOM
            if op == "sub":
                b = frozenset((-x) & _MASK for x in b)
            return self._add(a, b)
        if isinstance(a, TmemAddr) or isinstance(b, TmemAddr):
            return None
        if a is None or b is None:
            if op == "and":  # x & k ⊆ the submasks of k: few when k has few bits set (stage & 1, (i << 8) & 256)
                k = b if a is None else a
                if k and len(k) == 1:
                    return _submasks(next(iter(k)))
            if op == "rem":
                if b and len(b) == 1 and 0 < next(iter(b)) <= MAX_SET:
                    return frozenset(range(next(iter(b))))
            return None
        if a == _BOTTOM or b == _BOTTOM:
            return _BOTTOM
        return _pairwise(op, a, b)

    def _add(self, a: AbsVal, b: AbsVal) -> AbsVal:
        if a is None:
            return None
        if isinstance(a, TmemAddr):
            if b is None:
                return TmemAddr(a.slot, a.offsets, False)
            if type(b) is not frozenset:
                return None
            if not a.offsets:
                return a
            if not b:
                return _BOTTOM
            s = _pairwise("add", a.offsets, b)
            return TmemAddr(a.slot, s, a.exact) if s is not None else TmemAddr(a.slot, a.offsets, False)
        if isinstance(b, TmemAddr):
            return self._add(b, a)
        if b is None:
            return None
        if not a or not b:
            return _BOTTOM
        return _pairwise("add", a, b)

    def _selp_shared(self, inst: Instruction, args: Sequence[Operand]) -> IntSet | None:
        """``selp d, A, B, p`` with ``p = (X cmp K)`` where A, B and X are all computed from one register ``s``
        (a stage counter that wraps: ``s+1 > 2 ? s-2 : s+1``): evaluated once per value of ``s``, so each value
        picks its own side (None when they share no register or a value is not a single integer)."""
        p = args[2]
        if type(p) is not Reg:
            return None
        d = self.va.single_def.get(p.name)
        if d is None:
            return None
        st = self.insts[d]
        cmp = next((q for q in st.parts[1:] if q in _CMPS), None)
        if st.op != "setp" or cmp is None or len(st.operands) != 3:
            return None
        common = self._sources(st, st.operands[1])
        for a in args[:2]:  # an immediate side (``s + 1 == 5 ? 0 : s + 1``) shares nothing and constrains nothing
            if type(a) is not Imm:
                common &= self._sources(inst, a)
        for key in sorted(common, key=lambda k: (-len(k[1]), k)):
            name, defs = key
            vals: AbsVal = _BOTTOM
            for dd in defs:
                vals = _join(vals, self._eval_def(dd, name))
            if type(vals) is not frozenset or not vals or len(vals) > 16:
                continue
            out: set[int] = set()
            for v in vals:
                x = self._operand_fixed(st, st.operands[1], key, v, 0)
                k = self._operand(st, st.operands[2])
                if type(x) is not frozenset or type(k) is not frozenset or len(x) != 1 or len(k) != 1:
                    return None
                take = _holds(cmp, next(iter(x)), next(iter(k)))
                got = self._operand_fixed(inst, args[0] if take else args[1], key, v, 0)
                if type(got) is not frozenset:
                    return None
                out |= got
            return frozenset(out) if len(out) <= MAX_SET else None
        return None

    def _selp(self, inst: Instruction, args: Sequence[Operand]) -> AbsVal:
        shared = self._selp_shared(inst, args)
        if shared is not None:
            return shared
        a = self._operand(inst, args[0])
        b = self._operand(inst, args[1])
        p = args[2]
        # the wrap-around idiom: selp d, A, B, p with p = (X cmp K) and X one of A, B: filter that side
        if type(p) is Reg:
            d = self.va.single_def.get(p.name)
            if d is not None:
                s = self.insts[d]
                cmp = next((q for q in s.parts[1:] if q in _CMPS), None)
                if s.op == "setp" and cmp and len(s.operands) == 3 and type(s.operands[1]) is Reg:
                    x = s.operands[1]
                    kv = self._operand(s, s.operands[2])
                    if type(kv) is frozenset and len(kv) == 1:
                        k = next(iter(kv))
                        if type(args[0]) is Reg and args[0].name == x.name and type(a) is frozenset:
                            a = frozenset(v for v in a if _holds(cmp, v, k))
                        if type(args[1]) is Reg and args[1].name == x.name and type(b) is frozenset:
                            b = frozenset(v for v in b if not _holds(cmp, v, k))
        cs = self.constant_slot
        if cs is not None:  # selp between the base and an integer address (ThunderKittens: base or 0)
            if type(a) is TmemAddr and a.slot == cs and type(b) is frozenset and b:
                b = TmemAddr(cs, b)
            elif type(b) is TmemAddr and b.slot == cs and type(a) is frozenset and a:
                a = TmemAddr(cs, a)
        return _join(a, b)


def _submasks(k: int) -> IntSet | None:
    """Every value ``x & k`` can take: the submasks of ``k`` (None when there are more than ``MAX_SET``)."""
    bits = [1 << i for i in range(32) if k >> i & 1]
    if 1 << len(bits) > MAX_SET:
        return None
    out: set[int] = set()
    for m in range(1 << len(bits)):
        out.add(sum(b for i, b in enumerate(bits) if m >> i & 1))
    return frozenset(out)


# ------------------------------------------------------------------------------------------------ accesses


@dataclass(slots=True, eq=False)
class Access:
    """One TMEM operand of one tcgen05 instruction.

    ``role``: ``"d"`` (mma accumulator), ``"a"`` (mma A from TMEM), ``"scale-a"``, ``"scale-b"``, ``"sp"``
    (sparsity metadata), ``"st"``, ``"cp"``, ``"ld"``, ``"shift"``.  ``writes``/``reads``: direction (an MMA reads
    D too unless ``enable-input-d`` is the constant false).  ``addr``: the address set, or None when unknown.
    ``columns``/``lanes``: the footprint width in columns and the lanes one issue covers (a warp for ld/st, the
    MMA's datapath for mma, the shape for cp).  ``registers``: 32-bit registers per thread (ld/st).  ``packing``:
    what one 32-bit cell holds.  ``idesc``: the decoded instruction descriptor (mma, when constant)."""

    inst: Instruction
    role: str
    writes: bool
    reads: bool
    addr: TmemAddr | None
    columns: int | None
    lanes: int | None
    packing: str
    registers: int | None = None
    idesc: Idesc | None = None
    op_index: int = 0

    @property
    def op(self) -> str:
        """``mma``, ``cp``, ``st``, ``ld`` or ``shift``."""
        return self.inst.family.split(".", 1)[1]

    def intervals(self) -> list[tuple[int, int]]:
        """``[lo, hi)`` column intervals this access may cover (one per possible start column); empty when the
        address or the width is unknown."""
        if self.addr is None or self.columns is None:
            return []
        return [(c, c + self.columns) for c in self.addr.columns]


def mma_operands(inst: Instruction) -> dict[str, int]:
    """Operand indices of a ``tcgen05.mma`` (PTX ISA §9.7.16.10.9; reference §2.5): ``d``, ``a``, ``b``, ``sp``
    (with ``.sp``), ``idesc``, ``scale-a``/``scale-b`` (``.block_scale``) and ``enable-input-d``.  ``a`` is present
    whatever A's kind; whether it is in TMEM is ``type(operands[a]) is Address``."""
    ops = inst.operands
    out = {"d": 0, "a": 1, "b": 2}
    k = 3
    if inst.has("sp"):
        out["sp"] = 3
        k = 4
    out["idesc"] = k
    if inst.has("block_scale"):
        out["scale-a"] = k + 1
        out["scale-b"] = k + 2
        out["enable-input-d"] = k + 3
    else:
        j = k + 1
        while j < len(ops) and type(ops[j]) is Vec:
            j += 1
        out["enable-input-d"] = j
    return {r: i for r, i in out.items() if i < len(ops)}


def _packing_ld_st(inst: Instruction) -> str:
    if inst.has("pack::16b") or inst.has("unpack::16b"):
        return "2x16b"
    return "b32"


def idesc_shape_bits(kind: str | None) -> int:
    """Mask of the instruction-descriptor bits that give the accumulator's shape: N>>3 in bits 17-22, and M in bits
    27-28 (M>>7) for the block-scaled kinds or bits 24-28 (M>>4) for the dense kinds (PTX ISA §9.7.16.4.2, Tables
    42-44; reference §2.6)."""
    return (0x3F << 17) | ((0x3 << 27) if kind in BLOCK_SCALED_KINDS else (0x1F << 24))


def known_idesc(inst: Instruction, k: int, va: ValueAnalysis, sets: AddressSets) -> KnownBits | None:
    """Known-bits view of the 32-bit instruction descriptor, operand ``k`` of a ``tcgen05.mma``: ``(values,
    unknown)`` where ``unknown`` is a mask of the bits that may be anything and ``values`` the possible values of
    the other bits (unknown bits read as 0).  A constant gives ``({v}, 0)``, a small set of constants (``selp``
    between descriptors) ``(set, 0)``.  CuTe DSL ORs the scale-factor byte selectors, shifted out of the scale
    operands' TMEM addresses, into SFB_ID (bits 4-5) and SFA_ID (bits 29-30): those bits are unknown, the shape
    fields are not.  None when a shape bit (``idesc_shape_bits``) is unknown or the value cannot be followed."""
    if k >= len(inst.operands):
        return None
    o = inst.operands[k]
    iv = va.value(inst, o)
    if type(iv) is Const:
        return frozenset({iv.value & _MASK}), 0
    vals = sets.integers(inst, k)
    if vals:
        return vals, 0
    if type(o) is not Reg:
        return None
    got = _known_bits(va, sets, inst, o, 0)
    if got is None:
        return None
    vals, unknown = got
    if unknown & idesc_shape_bits(mma_kind(inst)) or not vals:
        return None
    return vals, unknown


def _constant_idesc(inst: Instruction, k: int, va: ValueAnalysis, sets: AddressSets) -> Idesc | None:
    """The descriptor of operand ``k``: a constant, or a small set of constants that agree on M and N (CuTe DSL
    shifts the scale-byte selectors into bits 4-5 and 29-30 per K step); the widest N when they differ."""
    got = known_idesc(inst, k, va, sets)
    if got is None:
        return None
    kind = mma_kind(inst)
    descs = [decode_idesc(v, kind) for v in sorted(got[0])]
    return max(descs, key=lambda d: (d.n, d.m))


def _known_bits(va: ValueAnalysis, sets: AddressSets, inst: Instruction, reg: Reg, depth: int) -> KnownBits | None:
    """``(values, unknown_mask)`` of ``reg`` at ``inst``: the possible values of its known bits and a mask of the
    bits that may be anything (an address masked into a descriptor field).  None when too deep or too large."""
    if depth > 12:
        return None
    k = next((i for i, o in enumerate(inst.operands) if o is reg), None)
    known = sets.integers(inst, k) if k is not None else None
    if known:
        return known, 0
    d = va.single_def.get(reg.name)
    if d is None:
        return frozenset({0}), _MASK
    di = va.insts[d]
    ops = di.operands
    if di.op == "mov" and len(ops) == 2 and type(ops[1]) is Vec and len(ops[1].items) == 2:
        # mov.b32 d, {lo, hi}: two 16-bit halves (CUTLASS builds the descriptor of a block-scaled MMA so)
        halves: list[KnownBits] = []
        for o in ops[1].items:
            h = (frozenset({o.value & 0xFFFF}), 0) if type(o) is Imm else (
                _known_bits(va, sets, di, o, depth + 1) if type(o) is Reg else None)
            if h is None or len(h[0]) > 16:
                return None
            halves.append((frozenset(v & 0xFFFF for v in h[0]), h[1] & 0xFFFF))
        (lo, ulo), (hi, uhi) = halves
        return frozenset(a | (b << 16) for a in lo for b in hi), ulo | (uhi << 16)
    if di.op == "cvt" and len(ops) >= 2 and type(ops[-1]) is Reg:
        bits = next((int(p[1:]) for p in di.parts[1:2] if p[1:].isdigit()), 32)  # cvt.u16.u32: the destination
        got = _known_bits(va, sets, di, ops[-1], depth + 1)
        if got is None:
            return None
        m = (1 << bits) - 1 if bits < 32 else _MASK
        return frozenset(v & m for v in got[0]), got[1] & m
    if len(ops) < 3 or di.op not in ("or", "xor", "and", "shl", "shr"):
        return frozenset({0}), _MASK

    def arg(o: Operand) -> KnownBits | None:
        if type(o) is Imm:
            return frozenset({o.value & _MASK}), 0
        if type(o) is Reg:
            return _known_bits(va, sets, di, o, depth + 1)
        return frozenset({0}), _MASK

    a = arg(ops[1])
    b = arg(ops[2])
    if a is None or b is None:
        return None
    (va_, ua), (vb, ub) = a, b
    if di.op in ("shl", "shr"):
        if ub or len(vb) != 1:
            return frozenset({0}), _MASK
        n = next(iter(vb))
        if n >= 32:
            return frozenset({0}), 0
        f: Callable[[int], int] = (lambda x: (x << n) & _MASK) if di.op == "shl" else (lambda x: x >> n)
        return frozenset(f(x) for x in va_), f(ua)
    op = "and" if di.op == "and" else ("xor" if di.op == "xor" else "or")
    vals = _pairwise(op, va_, vb)
    if vals is None:
        return None
    if op == "and":
        unknown = (ua & (ub | max(vb))) | (ub & (ua | max(va_)))
        if ua and not ub and len(vb) == 1:
            unknown = ua & next(iter(vb))
        elif ub and not ua and len(va_) == 1:
            unknown = ub & next(iter(va_))
        vals = frozenset(v & ~unknown for v in vals)
    else:
        unknown = ua | ub
        vals = frozenset(v & ~unknown for v in vals)
    return vals, unknown


def collect_accesses(insts: list[Instruction], va: ValueAnalysis, sets: AddressSets) -> list[Access]:
    """Every TMEM operand of the tcgen05 instructions in ``insts`` (mma, cp, st, ld, shift) as an ``Access``.
    Scale-factor operands of a block-scaled MMA are ``SCALE_COLUMNS`` wide; an ``[a-tmem]`` K-slice
    ``A_TMEM_COLUMNS``; sparsity metadata 1 column per issue (its exact extent is in figures only)."""
    out: list[Access] = []
    for inst in insts:
        fam = inst.family
        if fam == "tcgen05.mma":
            ix = mma_operands(inst)
            cg = 2 if inst.has("cta_group::2") else 1
            desc = None
            ii = ix.get("idesc")
            if ii is not None:
                desc = _constant_idesc(inst, ii, va, sets)
            accumulate = True
            ei = ix.get("enable-input-d")
            if ei is not None:
                ev = va.value(inst, inst.operands[ei])
                if type(ev) is Const and ev.value == 0:
                    accumulate = False
            lanes, cols = (accumulator_footprint(desc, cg, inst.has("ws")) if desc and desc.n else (None, None))
            dfmt = desc.d_format if desc else None
            out.append(Access(inst, "d", True, accumulate, sets.address(inst, 0), cols, lanes,
                              f"{dfmt} accumulator" if dfmt else "accumulator", idesc=desc, op_index=0))
            kind = (mma_kind(inst) or "kind::?").split("::", 1)[1]
            if "a" in ix and type(inst.operands[ix["a"]]) is Address:
                out.append(Access(inst, "a", False, True, sets.address(inst, ix["a"]), A_TMEM_COLUMNS,
                                  lanes, f"A operand ({kind})", idesc=desc, op_index=ix["a"]))
            if "sp" in ix:
                out.append(Access(inst, "sp", False, True, sets.address(inst, ix["sp"]), 1, lanes,
                                  "sparsity metadata", idesc=desc, op_index=ix["sp"]))
            for role in ("scale-a", "scale-b"):
                if role in ix:
                    fmt = desc.scale_format if desc else None
                    vec = inst.part_with_prefix("scale_vec::") or next(
                        (p for p in inst.parts if p in ("block16", "block32")), None)
                    what = f"{fmt or 'scale'} factors" + (f" ({vec})" if vec else "")
                    out.append(Access(inst, role, False, True, sets.address(inst, ix[role]), SCALE_COLUMNS, 128,
                                      what, idesc=desc, op_index=ix[role]))
        elif fam == "tcgen05.cp":
            fmt = "b32"
            if inst.part_with_prefix("b8x16") or any(p.startswith("b6x16") or p.startswith("b4x16")
                                                     for p in inst.parts):
                fmt = "decompressed b8x16"
            out.append(Access(inst, "cp", True, False, sets.address(inst, 0), cp_columns(inst), cp_lanes(inst),
                              fmt))
        elif fam == "tcgen05.st":
            out.append(Access(inst, "st", True, False, sets.address(inst, 0), ld_st_columns(inst),
                              ld_st_lanes(inst), _packing_ld_st(inst), ld_st_registers(inst)))
        elif fam == "tcgen05.ld":
            k = 1 if len(inst.operands) > 1 else 0
            out.append(Access(inst, "ld", False, True, sets.address(inst, k), ld_st_columns(inst),
                              ld_st_lanes(inst), _packing_ld_st(inst), ld_st_registers(inst), op_index=k))
        elif fam == "tcgen05.shift":
            out.append(Access(inst, "shift", True, True, sets.address(inst, 0), 8, 128, "b32"))
    return out


# ------------------------------------------------------------------------------------------------ regions

#: Region kinds, in the order a region takes its kind when several roles touch it.
KIND_ORDER = ("accumulator", "A", "scale-A", "scale-B", "metadata", "data")
_ROLE_KIND = {"d": "accumulator", "a": "A", "scale-a": "scale-A", "scale-b": "scale-B", "sp": "metadata"}


@dataclass(slots=True, eq=False)
class Region:
    """Columns ``[lo, hi)`` of the allocation with slot ``slot`` and the accesses that touch them.

    ``kind``: ``accumulator``, ``A``, ``scale-A``, ``scale-B``, ``metadata`` or ``data`` (st/cp/ld only).
    ``writers`` write it (mma D, st, cp, shift); ``readers`` read it as an operand or with tcgen05.ld (an
    accumulating MMA is a writer, not a reader).  ``lane_lo``/``lane_hi``: lanes ``[lane_lo, lane_hi)``.
    ``anchored``: some access was placed by the known part of an inexact address."""

    slot: Slot
    lo: int
    hi: int
    kind: str
    lane_lo: int = 0
    lane_hi: int = 128
    writers: list[Access] = field(default_factory=list)
    readers: list[Access] = field(default_factory=list)
    anchored: bool = False

    @property
    def width(self) -> int:
        """``hi - lo`` columns."""
        return self.hi - self.lo

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether ``[lo, hi)`` shares a column with this region."""
        return lo < self.hi and self.lo < hi


@dataclass(slots=True)
class RegionMap:
    """Regions of one function (sorted by slot, then ``lo``, then kind) and the accesses whose footprint is not
    known (``unplaced``: unknown address or width)."""

    accesses: list[Access]
    regions: list[Region]
    unplaced: list[Access]


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(a, b) for a, b in out]


def _cut(intervals: list[tuple[int, int]], cuts: set[int]) -> list[tuple[int, int]]:
    """``intervals`` split at every column of ``cuts`` that lies strictly inside one."""
    out: list[tuple[int, int]] = []
    for lo, hi in intervals:
        pts = sorted(c for c in cuts if lo < c < hi)
        for a, b in zip([lo] + pts, pts + [hi]):
            out.append((a, b))
    return out


def _stage_cuts(accesses: list[Access], roles: tuple[str, ...]) -> dict[Slot, set[int]]:
    """Per slot, the start columns of the accesses of ``roles`` whose address is a set of several columns (a
    stage-indexed or loop-carried offset: ``base + stage * 4``): each such column starts a pipeline stage."""
    cuts: dict[Slot, set[int]] = {}
    for a in accesses:
        if a.role in roles and a.addr is not None and len(a.addr.columns) > 1:
            cuts.setdefault(a.addr.slot, set()).update(a.addr.columns)
    return cuts


def _addr(a: Access) -> TmemAddr:
    """The address of an access that ``build_regions`` places (``intervals()`` is empty without one)."""
    assert a.addr is not None
    return a.addr


def build_regions(accesses: list[Access], split_stages: bool = False) -> RegionMap:
    """Form regions from accesses (see module docstring).  Accumulators are keyed by their exact interval (two
    stages are two regions); A, scale and metadata operand reads merge when adjacent or overlapping; st/cp/shift
    writes that overlap an operand region join it, those inside an accumulator join that, and the rest merge into
    ``data`` regions; ld reads join every region they overlap (an anchored ld: the region it starts in).

    ``split_stages``: operand and data regions are also cut where one access's column set starts a stage (an
    operand at ``base + stage * 4`` over 4 stages is 4 regions of 4 columns, not one of 16), and an operand region
    grows to the st/cp that writes it when that write starts inside it and runs into no other region (8 columns of
    scale factors copied for an MMA that reads 4): the plan's view."""
    placed = [a for a in accesses if a.intervals()]
    unplaced = [a for a in accesses if not a.intervals()]
    regions: list[Region] = []
    by_key: dict[tuple[Slot, int, int, str], Region] = {}

    def add(slot: Slot, lo: int, hi: int, kind: str) -> Region:
        key = (slot, lo, hi, kind)
        r = by_key.get(key)
        if r is None:
            r = Region(slot, lo, hi, kind)
            by_key[key] = r
            regions.append(r)
        return r

    # accumulators: one region per exact interval
    for a in placed:
        if a.role == "d":
            for lo, hi in a.intervals():
                add(_addr(a).slot, lo, hi, "accumulator")
    # operands read from TMEM: merged per (slot, kind)
    for role, kind in (("a", "A"), ("scale-a", "scale-A"), ("scale-b", "scale-B"), ("sp", "metadata")):
        per_slot: dict[Slot, list[tuple[int, int]]] = {}
        for a in placed:
            if a.role == role:
                per_slot.setdefault(_addr(a).slot, []).extend(a.intervals())
        cuts: dict[Slot, set[int]] = _stage_cuts(placed, (role,)) if split_stages else {}
        for slot, ivs in per_slot.items():
            for lo, hi in _cut(_merge(ivs), cuts.get(slot, set())):
                add(slot, lo, hi, kind)
    operand_regions = [r for r in regions if r.kind != "accumulator"]
    acc_regions = [r for r in regions if r.kind == "accumulator"]
    if split_stages:  # an operand's region is what is written for it: 8 columns copied for an MMA reading 4
        for r in sorted(operand_regions, key=lambda x: x.lo):
            width = r.hi - r.lo
            ops_in = {a.role for a in placed if a.role in ("st", "cp") and _addr(a).slot == r.slot
                      and any(r.lo <= lo < r.hi for lo, _ in a.intervals())}
            grew = True
            while grew:
                grew = False
                for a in placed:
                    if a.role not in ops_in or _addr(a).slot != r.slot:
                        continue
                    for lo, hi in a.intervals():
                        if r.lo <= lo <= r.hi < hi and hi - r.lo <= 2 * width and not any(
                                o is not r and o.slot == r.slot and o.overlaps(r.hi, hi) for o in regions):
                            r.hi, grew = hi, True
    # plain data written by st/cp/shift outside every operand region and accumulator
    data_ivs: dict[Slot, list[tuple[int, int]]] = {}
    for a in placed:
        if a.role in ("st", "cp", "shift"):
            for lo, hi in a.intervals():
                if any(r.slot == _addr(a).slot and r.overlaps(lo, hi) for r in operand_regions):
                    continue
                if any(r.slot == _addr(a).slot and r.lo <= lo and hi <= r.hi for r in acc_regions):
                    continue
                data_ivs.setdefault(_addr(a).slot, []).append((lo, hi))
    data_cuts: dict[Slot, set[int]] = _stage_cuts(placed, ("st", "cp", "shift")) if split_stages else {}
    for slot, ivs in data_ivs.items():
        for lo, hi in _cut(_merge(ivs), data_cuts.get(slot, set())):
            add(slot, lo, hi, "data")
    # attach every access
    for a in placed:
        slot = _addr(a).slot
        for lo, hi in a.intervals():
            if a.role == "d":
                targets = [by_key[(slot, lo, hi, "accumulator")]]
            elif a.role in _ROLE_KIND:
                kind = _ROLE_KIND[a.role]
                targets = [r for r in regions if r.slot == slot and r.kind == kind and r.overlaps(lo, hi)]
            elif a.role in ("st", "cp", "shift"):
                targets = [r for r in operand_regions if r.slot == slot and r.overlaps(lo, hi)]
                if not targets:
                    targets = [r for r in acc_regions if r.slot == slot and r.lo <= lo and hi <= r.hi]
                if not targets:
                    targets = [r for r in regions if r.slot == slot and r.kind == "data" and r.overlaps(lo, hi)]
            else:  # ld
                if _addr(a).exact:
                    targets = [r for r in regions if r.slot == slot and r.overlaps(lo, hi)]
                else:
                    targets = [r for r in regions if r.slot == slot and r.lo <= lo < r.hi]
                # an ld over an accumulator that an A operand aliases reads the accumulator
                if len(targets) > 1 and any(t.kind == "accumulator" for t in targets):
                    targets = [t for t in targets if t.kind in ("accumulator", "data")]
            for r in targets:
                if not _addr(a).exact:
                    r.anchored = True
                if a.writes and a.role != "d" or a.role == "d":
                    if a not in r.writers:
                        r.writers.append(a)
                if a.reads and a.role != "d":
                    if a not in r.readers:
                        r.readers.append(a)
            if not any(a in r.writers or a in r.readers for r in regions) and a not in unplaced:
                unplaced.append(a)
    # lanes: from the accesses that place the region
    for r in regions:
        los: list[int] = []
        his: list[int] = []
        for a in r.writers + r.readers:
            if a.addr is None:
                continue
            base_lanes = a.addr.lanes
            per_warp = a.role in ("ld", "st")
            for l0 in base_lanes:
                if per_warp and len(base_lanes) > 1:
                    los.append(min(base_lanes))
                    his.append(max(base_lanes) + (a.lanes or 32))
                    break
                los.append(l0)
                his.append(l0 + (a.lanes or 128))
        if los:
            r.lane_lo, r.lane_hi = min(los), min(128, max(his))
    regions.sort(key=lambda r: (repr(r.slot), r.lo, KIND_ORDER.index(r.kind), r.hi))
    return RegionMap(accesses, regions, unplaced)
