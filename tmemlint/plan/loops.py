"""Column sets of TMEM addresses that advance in a counted loop (``taddr += 32`` over the chunks of a readback):
the plan places each iteration's columns instead of anchoring the access at the address it starts from.

A register inside one natural loop is an affine function ``base + coef·k`` of the iteration number ``k`` when its
definitions are a value entering the loop and an in-loop ``phi + step`` (``add``/``sub``/``mov``/``shl``/``mul`` by
constants); the trip count comes from the loop's back-edge branch ``@p bra header`` with ``p = setp.cmp x, K`` and
``x`` affine.  Values outside the loop are ``AddressSets`` values (``tmemlint.analysis.regions``).  Anything else
(two carried registers in one expression, a trip count that is not constant, more than ``MAX_TRIPS`` iterations)
gives None and the access stays anchored.
"""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.analysis.flow import Flow
from tmemlint.analysis.regions import AddressSets, TmemAddr
from tmemlint.ir import Imm, Instruction, Reg

#: Most iterations of one loop that are enumerated.
MAX_TRIPS = 512
_MASK = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class _Lin:
    """``base + coef·k`` (``phi``: plus the loop-carried register being solved, for the step of its update)."""

    base: object  # frozenset of ints or TmemAddr
    coef: int = 0
    phi: bool = False


def _const(v) -> int | None:
    return next(iter(v)) if type(v) is frozenset and len(v) == 1 else None


class LoopColumns:
    """Per function: ``address(inst, k)`` gives the TMEM address set of operand ``k`` of ``inst`` over all
    iterations of its innermost loop, or None."""

    def __init__(self, insts: list[Instruction], va, sets: AddressSets, flow: Flow):
        self.insts, self.va, self.sets, self.flow = insts, va, sets, flow
        self._trips: dict = {}

    def address(self, inst: Instruction, k: int) -> TmemAddr | None:
        loop = self.flow.loop_of(inst.index)
        if loop is None or k >= len(inst.operands):
            return None
        o = inst.operands[k]
        reg = getattr(o, "base", o)
        if type(reg) is not Reg:
            return None
        off = getattr(o, "offset", 0) or 0
        try:
            v = self._reg(reg.name, inst.index, loop, None, 0)
            n = self._trip_count(loop)
        except (RecursionError, ValueError):
            return None
        if v is None or n is None or v.phi:
            return None
        base = v.base
        if type(base) is frozenset and base and self.sets.constant_slot is not None:
            base = TmemAddr(self.sets.constant_slot, base)  # integer addresses: columns from the known base 0
        if type(base) is not TmemAddr or not base.offsets:
            return None
        offs = frozenset((b + off + v.coef * i) & _MASK for b in base.offsets for i in range(n))
        return TmemAddr(base.slot, offs, base.exact)

    # ---- affine values ---------------------------------------------------------------------------------------
    def _reg(self, name: str, at: int, loop, phi, depth: int) -> _Lin | None:
        if depth > 12:
            return None
        lo, hi = loop
        defs = self.va.reaching_defs(self.insts[at], name)
        if not defs:
            v = self.sets.register(self.insts[at], name)
            return _Lin(v) if v is not None else None
        inside = [d for d in defs if lo <= d <= hi]
        outside = [d for d in defs if not lo <= d <= hi]
        if phi is not None and name == phi[0] and tuple(sorted(defs)) == phi[1]:
            return _Lin(frozenset({0}), 0, True)
        if not inside:
            v = self.sets.register(self.insts[at], name)
            return _Lin(v) if v is not None else None
        if outside and len(inside) == 1:  # loop-carried: entry value, then phi + step each iteration
            init = None
            for d in outside:
                v = self.sets.definition(d, name)
                if v is None:
                    return None
                init = v if init is None else _union(init, v)
                if init is None:
                    return None
            step = self._def(inside[0], name, loop, (name, tuple(sorted(defs))), depth + 1)
            if step is None or not step.phi or step.coef or _const(step.base) is None:
                return None
            s = _const(step.base)
            if s >= 1 << 31:
                s -= 1 << 32
            return _Lin(init, s)
        if len(inside) == 1 and not outside and inside[0] < at:
            return self._def(inside[0], name, loop, phi, depth + 1)
        return None

    def _operand(self, o, at: int, loop, phi, depth: int) -> _Lin | None:
        if type(o) is Imm:
            return _Lin(frozenset({o.value & _MASK}))
        if type(o) is Reg:
            return self._reg(o.name, at, loop, phi, depth)
        return None

    def _def(self, d: int, name: str, loop, phi, depth: int) -> _Lin | None:
        inst = self.insts[d]
        ops = inst.operands
        if not ops or type(ops[0]) is not Reg or ops[0].name != name:
            return None
        args = [self._operand(o, d, loop, phi, depth) for o in ops[1:3]]
        if inst.op in ("mov", "cvt") and args and args[-1 if inst.op == "cvt" else 0] is not None:
            return args[0] if inst.op == "mov" else self._operand(ops[-1], d, loop, phi, depth)
        if len(args) < 2 or args[0] is None or args[1] is None:
            return None
        a, b = args
        if inst.op == "add":
            if a.phi and b.phi:
                return None
            base = _add(a.base, b.base)
            return _Lin(base, a.coef + b.coef, a.phi or b.phi) if base is not None else None
        if inst.op == "sub" and not b.phi and not b.coef and _const(b.base) is not None:
            base = _add(a.base, frozenset({(-_const(b.base)) & _MASK}))
            return _Lin(base, a.coef, a.phi) if base is not None else None
        if inst.op in ("shl", "mul") and not b.phi and not b.coef and _const(b.base) is not None and not a.phi \
                and type(a.base) is frozenset:
            f = (1 << _const(b.base)) if inst.op == "shl" else _const(b.base)
            return _Lin(frozenset((x * f) & _MASK for x in a.base), a.coef * f)
        return None

    # ---- trip count ------------------------------------------------------------------------------------------
    def trip_count(self, loop) -> int | None:
        """Iterations of the natural loop ``loop`` (``Flow.loops`` entry) when it is counted, else None."""
        return self._trip_count(loop)

    def _trip_count(self, loop) -> int | None:
        if loop in self._trips:
            return self._trips[loop]
        self._trips[loop] = None
        lo, hi = loop
        br = self.insts[hi]
        if br.op != "bra" or br.guard is None:
            return None
        p = self.va.reaching_defs(br, br.guard.reg.name)
        if len(p) != 1:
            return None
        s = self.insts[p[0]]
        cmp = next((q for q in s.parts[1:] if q in _CMPS), None)
        if s.op != "setp" or cmp is None or len(s.operands) < 3:
            return None
        x = self._operand(s.operands[1], s.index, loop, None, 0)
        y = self._operand(s.operands[2], s.index, loop, None, 0)
        if x is None or y is None or x.phi or y.phi or type(x.base) is not frozenset or type(y.base) is not frozenset:
            return None
        if len(x.base) != 1 or len(y.base) != 1 or (x.coef == 0) == (y.coef == 0):
            return None
        signed = any(q.startswith("s") and q[1:].isdigit() for q in s.parts)
        f = _CMPS[cmp]

        def val(lin: _Lin, k: int) -> int:
            v = (next(iter(lin.base)) + lin.coef * k) & _MASK
            return v - (1 << 32) if signed and v & 0x80000000 else v

        for k in range(MAX_TRIPS):
            if f(val(x, k), val(y, k)) == br.guard.negated:  # the back edge is not taken after iteration k
                self._trips[loop] = k + 1
                return k + 1
        return None


_CMPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
         "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
         "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b, "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b}


def _add(a, b):
    ta, tb = type(a) is TmemAddr, type(b) is TmemAddr
    if ta and tb:
        return None
    if tb:
        a, b = b, a
        ta = True
    if type(b) is not frozenset or (not ta and type(a) is not frozenset):
        return None
    offs = a.offsets if ta else a
    if len(offs) * len(b) > 4096:
        return None
    s = frozenset((x + y) & _MASK for x in offs for y in b)
    return TmemAddr(a.slot, s, a.exact) if ta else s


def _union(a, b):
    if type(a) is TmemAddr and type(b) is TmemAddr and a.slot == b.slot:
        return TmemAddr(a.slot, a.offsets | b.offsets, a.exact and b.exact)
    if type(a) is frozenset and type(b) is frozenset:
        return a | b
    return None
