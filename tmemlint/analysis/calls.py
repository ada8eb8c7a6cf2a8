"""Calls of ``.func`` callees that allocate, free or relinquish TMEM (interprocedural lifecycle summaries).

PTX ``call`` (PTX ISA §9.7.9.20, ``#control-flow-instructions-call``) transfers control to a ``.func`` of the module
and back; the callee runs in the caller's thread, so a ``tcgen05.alloc`` / ``dealloc`` / ``relinquish_alloc_permit``
in a callee is executed by the calling warp on behalf of the kernel's CTA (PTX ISA §9.7.16.7.1).  nvcc keeps
``__noinline__`` helpers (``tmem_alloc(&slot)``, ``tmem_free(taddr)``) as such callees.

This module answers, for one caller: which ``call`` instructions reach (transitively) a TMEM lifecycle
instruction, the analyses of each callee (CFG, values, allocation sites: ``CalleeInfo``), and the caller's values of
the arguments (``call_binding``), so that a callee's ``[slot]`` or ``taddr`` operand loaded from a parameter is
known in the caller's terms.  The lifecycle simulation (``analysis.lifecycle``) runs the callee's paths at each
call with the caller's state and warp class.  Calls that cannot be followed (an indirect call through a register, a
callee on a call cycle: recursion) are *unknown*; the lifecycle treats them conservatively (they may free
anything), so they never cause a report.  A callee declared without a body (``.extern .func``, e.g. ``vprintf``)
is not a TMEM effect: its instructions live in another compilation unit that tmemlint does not see.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from tmemlint.analysis.cfg import CFG, build_cfg
from tmemlint.analysis.threads import Expr, FactKey, Facts, GuardOracle, WarpClass, thread_predicates
from tmemlint.analysis.tmem import Slot, TmemSites, tmem_sites
from tmemlint.analysis.values import (TOP, Cmp, Const, Op, PAnd, Param, PNot, POr, SymAddr, TmemAddr, Value,
                                      ValueAnalysis, cmp_value, pnot_value, const, is_stable, is_value, opaque,
                                      opaque_deps)
from tmemlint.ir import Address, Function, Instruction, Module, Operand, ParenList, Reg, Sym

#: the call graph of a module's functions with bodies: caller name → the names of the functions it calls directly
CallGraph = dict[str, set[str]]

LIFECYCLE = ("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit")


def call_target(inst: Instruction) -> str | None:
    """The name of the function ``inst`` (a ``call``) calls, or None for an indirect call (through a register:
    ``call %rd1, (args), prototype``)."""
    for o in inst.operands:
        if type(o) is Sym:
            return o.name
        if type(o) is not ParenList:
            return None
    return None


def call_args(inst: Instruction) -> tuple[Operand, ...]:
    """The argument operands of ``call`` ``inst``: the parenthesised list after the callee (PTX ISA
    ``call{.uni} (ret-param), func, (param-list)``)."""
    seen_target = False
    for o in inst.operands:
        if type(o) is Sym and not seen_target:
            seen_target = True
        elif type(o) is ParenList and seen_target:
            return o.items
    return ()


@dataclass(eq=False)
class CalleeInfo:
    """One ``.func`` with a body and its analyses (computed on first use).  ``unknown``: the callee cannot be
    followed (it is on a call cycle, or makes an indirect call while reaching lifecycle instructions)."""

    function: Function
    unknown: bool = False

    @cached_property
    def cfg(self) -> CFG:
        return build_cfg(self.function)

    @cached_property
    def values(self) -> ValueAnalysis:
        return ValueAnalysis(self.cfg).analyse()

    @cached_property
    def sites(self) -> TmemSites:
        return tmem_sites(self.function, self.values)


@dataclass(eq=False)
class ModuleCalls:
    """For one module: the functions that reach a TMEM lifecycle instruction, themselves or through callees
    (``effects``: name → CalleeInfo), computed once per module."""

    module: Module
    effects: dict[str, CalleeInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        funcs = {f.name: f for f in self.module.functions if f.has_body}
        calls: CallGraph = {}
        direct: set[str] = set()
        indirect: set[str] = set()
        for name, f in funcs.items():
            out: set[str] = set()
            for i in f.instructions:
                if i.family in LIFECYCLE:
                    direct.add(name)
                elif i.op == "call":
                    t = call_target(i)
                    if t is None:
                        indirect.add(name)
                    elif t in funcs:
                        out.add(t)
            calls[name] = out
        # functions that reach a lifecycle instruction: a fixed point over the call graph
        reach = set(direct)
        changed = True
        while changed:
            changed = False
            for name, out in calls.items():
                if name not in reach and out & reach:
                    reach.add(name)
                    changed = True
        for name in sorted(reach):
            self.effects[name] = CalleeInfo(funcs[name], unknown=name in indirect or _on_cycle(name, calls))


def _on_cycle(name: str, calls: CallGraph) -> bool:
    """Whether ``name`` can call itself (directly or through other functions): recursion."""
    work = list(calls.get(name, ()))
    seen: set[str] = set()
    while work:
        n = work.pop()
        if n == name:
            return True
        if n in seen:
            continue
        seen.add(n)
        work.extend(calls.get(n, ()))
    return False


#: the last few modules' summaries (a module is linted function by function; its kernels share the callees)
_CACHE: list[ModuleCalls] = []


def module_calls(module: Module) -> ModuleCalls:
    """The (cached) ``ModuleCalls`` of ``module``."""
    for mc in _CACHE:
        if mc.module is module:
            return mc
    mc = ModuleCalls(module)
    _CACHE.insert(0, mc)
    del _CACHE[4:]
    return mc


def lifecycle_calls(module: Module, fn: Function) -> dict[int, CalleeInfo]:
    """``call`` instruction index → the callee's ``CalleeInfo``, for the calls of ``fn`` whose callee reaches a
    TMEM lifecycle instruction.  An indirect call in ``fn`` maps to an unknown callee when some other ``.func``
    of the module reaches a lifecycle instruction (it might call that function; a kernel is never the target of
    a ``call``: PTX ISA "Control Flow Instructions: call" names a ``.func``)."""
    if not any(i.op == "call" for i in fn.instructions):
        return {}
    mc = module_calls(module)
    if not mc.effects:
        return {}
    out: dict[int, CalleeInfo] = {}
    for i in fn.instructions:
        if i.op != "call":
            continue
        t = call_target(i)
        if t is None:
            if any(name != fn.name and not info.function.is_entry for name, info in mc.effects.items()):
                out[i.index] = CalleeInfo(fn, unknown=True)
        elif t in mc.effects:
            out[i.index] = mc.effects[t]
    return out


def call_binding(va: ValueAnalysis, inst: Instruction, callee: Function) -> dict[str, Value]:
    """The callee's parameter names → the caller's values of the arguments of ``call`` ``inst`` (an argument is a
    ``.param`` variable the caller wrote with ``st.param`` before the call, or a register or constant)."""
    args = call_args(inst)
    out: dict[str, Value] = {}
    stores: dict[str, Instruction] | None = None
    for p, a in zip(callee.params, args):
        v: Value = TOP
        if type(a) is Sym:
            if stores is None:
                stores = {}
                for i in va.insts[:inst.index]:
                    if i.op == "st" and i.has("param") and len(i.operands) == 2:
                        d = i.operands[0]
                        base = d.base if type(d) is Address else None
                        if type(d) is Address and type(base) is Sym and d.offset == 0 and base.offset == 0:
                            stores[base.name] = i
            st = stores.get(a.name)
            if st is not None:
                v = va.value(st, st.operands[1])
        else:
            v = va.value(inst, a)
        out[p.name] = v
    return out


def reachable_callees(module: Module, fn: Function) -> Iterator[CalleeInfo]:
    """The callees ``fn`` reaches through lifecycle calls, transitively, each once (``CalleeInfo``; callees that
    cannot be followed are left out)."""
    calls = lifecycle_calls(module, fn)
    if not calls:
        return
    effects = module_calls(module).effects
    seen: set[str] = set()
    work = [c for c in calls.values() if not c.unknown]
    while work:
        c = work.pop()
        name = c.function.name
        if name in seen or c.unknown:
            continue
        seen.add(name)
        yield c
        for i in c.function.instructions:
            if i.op == "call":
                t = call_target(i)
                if t is not None and t in effects:
                    work.append(effects[t])


def callee_slots(module: Module, fn: Function) -> frozenset[Slot]:
    """Allocation slots (``("sym", name, offset)``) written by allocs in the callees ``fn`` calls, transitively:
    the caller's loads from them are TMEM addresses too (``ValueAnalysis.analyse``).  A slot passed to the callee
    as an argument is not included."""
    out: set[Slot] = set()
    for c in reachable_callees(module, fn):
        for i in c.function.instructions:
            if i.family == "tcgen05.alloc":
                slot = c.sites.slot_of[i.index]
                if type(slot) is SymAddr:
                    out.add(slot)
    return frozenset(out)


def call_rets(inst: Instruction) -> tuple[Operand, ...]:
    """The return-parameter operands of ``call`` ``inst``: the parenthesised list before the callee (PTX ISA
    ``call{.uni} (ret-param), func, (param-list)``), empty when the callee returns nothing."""
    for o in inst.operands:
        if type(o) is ParenList:
            return o.items
        return ()
    return ()


def returned_value(callee: CalleeInfo) -> Value | None:
    """The value ``callee`` stores into its first return parameter (``st.param [func_retval0], %r`` before
    ``ret``), when every such store (at byte offset 0) stores the same value and that value means the same in the caller: a TMEM
    address of an allocation slot that is a variable (``("tmem", ("sym", …), col, lane)`` with constant offsets),
    a constant, or a variable's address.  None otherwise (the caller's load is then opaque)."""
    fn = callee.function
    if callee.unknown or not fn.has_body:
        return None
    own = {p.name for p in fn.params}
    vals: set[Value] = set()
    for i in fn.instructions:
        if i.op != "st" or not i.has("param") or len(i.operands) != 2:
            continue
        d = i.operands[0]
        base = d.base if type(d) is Address else None
        # the return parameter is declared in the header: neither an input parameter nor a body variable (an
        # argument slot of a nested call)
        if type(d) is not Address or type(base) is not Sym or base.name in own or base.name in fn.variables:
            continue
        if d.offset != 0 or base.offset != 0:
            return None
        vals.add(callee.values.value(i, i.operands[1]))
    if len(vals) != 1:
        return None
    v = next(iter(vals))
    if v is TOP:
        return None
    match v:
        case TmemAddr(slot=SymAddr(), col=int(), lane=int()) | Const() | SymAddr():
            return v
    return None


def call_returns(module: Module, fn: Function) -> dict[str, Value]:
    """For ``fn``'s calls of callees that reach a TMEM lifecycle instruction: the name of the call's return
    parameter (declared in ``fn``'s body, PTX ISA §5.1.6.2) → the value the callee returns (``returned_value``),
    for ``ValueAnalysis.returns``."""
    calls = lifecycle_calls(module, fn)
    out: dict[str, Value] = {}
    clash: set[str] = set()
    for idx, callee in calls.items():
        rets = call_rets(fn.instructions[idx])
        ret = rets[0] if len(rets) == 1 else None
        if type(ret) is not Sym:
            continue
        v = returned_value(callee)
        if v is None:
            continue
        name = ret.name
        if name in out and out[name] != v:
            clash.add(name)
        out[name] = v
    for name in clash:
        del out[name]
    return out


def callee_thread_predicates(module: Module, fn: Function) -> frozenset[Expr]:
    """The thread predicates (``%tid.x`` tests) of the callees ``fn`` reaches through lifecycle calls,
    transitively: ``threads.thread_model`` splits the caller's warps by them too (a callee runs in the caller's
    threads, PTX ISA §9.7.9.20, so its ``threadIdx.x / 32 == 0`` test is decided by the caller's warp class)."""
    out: set[Expr] = set()
    for c in reachable_callees(module, fn):
        out |= thread_predicates(c.function, c.values)
    return frozenset(out)


def portable_facts(facts: Facts) -> Facts:
    """The branch facts that mean the same in a caller and its callee: thread predicates of ``%tid.x`` (the same
    thread runs both) other than ``elect.sync`` (each ``elect.sync`` elects again), and predicates over constants,
    kernel parameters, variables' addresses and uniform special registers (no opaque definition, no register
    of either function)."""
    out = []
    for f in facts:
        key = f[0]
        if not isinstance(key, tuple) or not key or key[0] in ("phi", "regval") or "elect" in repr(key):
            continue
        if opaque_deps(key):
            continue
        out.append(f)
    return frozenset(out) if len(out) != len(facts) else facts


class BoundOracle(GuardOracle):
    """A ``threads.GuardOracle`` for a callee simulated at one call: the callee's parameters (``("param", name,
    0)`` values) are replaced by the caller's arguments when those mean the same in both functions (constants,
    kernel parameters, thread functions, addresses: ``values.is_stable``), and by an opaque value of the call
    otherwise, so that ``tmem_alloc_if(1)`` decides the callee's branch and ``alloc_if(c)`` / ``free_if(c)`` test
    the same fact."""

    def __init__(self, va: ValueAnalysis, klass: WarpClass, binding: dict[str, Value], name: str) -> None:
        super().__init__(va, klass)
        self.deps = {}  # keys may hold the caller's values: dependencies of their own, not the callee's shared ones
        self.binding = binding
        self.name = name
        self._subst: dict[Value, Value] = {}

    def value(self, inst: Instruction, reg: Reg) -> FactKey:
        v = super().value(inst, reg)
        return self.substitute(v) if is_value(v) else v  # a ``("phi", ...)`` key names the callee's own registers

    def substitute(self, v: Value) -> Value:
        """``v`` (a callee value) in the caller's terms (``_substitute``)."""
        r = self._subst.get(v)
        if r is None:
            r = self._subst[v] = _substitute(v, self.binding, self.name)
        return r


def _substitute(v: Value, binding: dict[str, Value], name: str) -> Value:
    """``v`` (a callee value) with its parameters replaced (``BoundOracle``), folded again where that makes a
    constant or a thread predicate."""
    match v:
        case Param(name=pname, offset=off):
            b = binding.get(pname, TOP) if off == 0 else TOP
            if b is not TOP and is_stable(b):
                return b
            return opaque(("arg", name, pname, off))
        case Cmp(cmp=c, a=a0, b=b0):
            a, b = _substitute(a0, binding, name), _substitute(b0, binding, name)
            if a is a0 and b is b0:
                return v
            r = cmp_value(c, a, b)
            return r if r is not None else Cmp("cmp", c, a, b)
        case PNot(p=p0):
            a = _substitute(p0, binding, name)
            return v if a is p0 else pnot_value(a)
        case PAnd(tag=tag, p=a0, q=b0) | POr(tag=tag, p=a0, q=b0):
            a, b = _substitute(a0, binding, name), _substitute(b0, binding, name)
            if a is a0 and b is b0:
                return v
            for x, y in ((a, b), (b, a)):
                if type(x) is Const:
                    if tag == "pand":
                        return y if x.value else const(0)
                    return const(1) if x.value else y
            return PAnd("pand", a, b) if tag == "pand" else POr("por", a, b)
        case Op(name=op):
            args = tuple(_substitute(x, binding, name) for x in v[2:-1])
            return v if args == v[2:-1] else Op(("op", op, *args, v.depth))
    return v
