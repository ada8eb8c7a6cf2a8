"""Inline expansion of ``.func`` callees that use Tensor Memory into the kernel that calls them.

PTX ``call`` (PTX ISA §9.7.9.20, ``#control-flow-instructions-call``) runs the callee in the calling thread, and
returns to the instruction after the call; so for every analysis (values, threads, barriers and mbarrier phases,
lifecycle, regions) a direct call of a ``.func`` with a body means the same as the callee's body placed at the
call.  nvcc keeps ``__noinline__`` helpers as such callees (``tmem_free(taddr)``, ``issue_mmas(...)`` with the MMA
and its ``tcgen05.commit``, an epilogue that loads constant TMEM addresses); expanding them lets every rule see
their effects with the caller's values, warps and synchronization, instead of each rule summarising callees on
its own.

``inline_calls`` returns a new ``Function`` for a kernel whose direct calls reach a callee containing a tcgen05
or mbarrier instruction (transitively): each such call is replaced by the callee's instructions, with

- the callee's registers (those it defines) renamed apart (``%r1`` → ``%r1$inl3``), special registers kept;
- its labels renamed the same way, ``ret`` becoming a branch to the instruction after the call;
- ``ld.param`` of a callee parameter becoming a ``mov`` of the caller's argument (the value the caller stored into
  the argument's ``.param`` variable with ``st.param`` before the call, PTX ISA §5.1.6.2, or the register or
  constant given directly), and ``st.param`` into the callee's return parameter becoming a ``mov`` into the
  registers the caller then loads from the call's return parameter.

Instructions keep the callee's source spans, so findings point into the callee's text.  A call that cannot be
expanded faithfully (indirect, a callee on a call cycle, an argument whose value is not found, vector parameters,
more than ``MAX_INLINED`` instructions in all, deeper than ``MAX_DEPTH``) stays a ``call``: the analyses then treat it as
before (``analysis.calls`` summaries, or an opaque call).
"""

from __future__ import annotations

from dataclasses import dataclass

from tmemlint.analysis.calls import call_args, call_rets, call_target
from tmemlint.analysis.values import defined_regs
from tmemlint.ir import Address, Function, Guard, Imm, Instruction, Module, NotReg, Operand, ParenList, Reg, \
    RegPair, Span, Sym, Variable, Vec

#: Instructions added to one kernel by inline expansion, at most (beyond it, further calls stay calls).
MAX_INLINED = 20000
#: Nesting depth of expanded calls, at most.
MAX_DEPTH = 8

#: Operations whose presence in a callee makes its expansion worthwhile: they take part in TMEM's life cycle or
#: in the ordering of its asynchronous operations.
_RELEVANT = ("tcgen05", "mbarrier")

#: Special registers (PTX ISA §10, "Special Registers"): the same in the callee as in the caller, never renamed.
_SPECIAL = ("%tid", "%ntid", "%laneid", "%warpid", "%nwarpid", "%ctaid", "%nctaid", "%smid", "%nsmid", "%gridid",
            "%is_explicit_cluster", "%clusterid", "%nclusterid", "%cluster_", "%lanemask_", "%clock", "%pm",
            "%envreg", "%globaltimer", "%reserved_smem_offset", "%total_smem_size", "%aggr_smem_size",
            "%dynamic_smem_size", "%current_graph_exec")


@dataclass(frozen=True, slots=True)
class CallSite:
    """One expanded call: the ``call`` instruction (in its function's text), the callee's and the caller's names."""

    call: Instruction
    callee: str
    caller: str


@dataclass(frozen=True, slots=True)
class Inlined:
    """A function with its calls expanded: ``function``, and for each instruction that came from a callee
    (by index in ``function.instructions``) the calls it was expanded from, outermost first."""

    function: Function
    sites: dict[int, tuple[CallSite, ...]]


@dataclass(frozen=True, slots=True)
class _Binding:
    """How one call's interface maps into the caller: callee parameter name → the caller's operand giving its
    value; callee return parameter name → the caller's registers that receive it (with the ``ld.param`` type)."""

    params: dict[str, Operand]
    rets: dict[str, tuple[Reg, ...]]


def _relevant_funcs(module: Module) -> set[str]:
    """Names of ``.func``s with a body that contain, themselves or through direct calls, a tcgen05 or mbarrier
    instruction."""
    funcs = {f.name: f for f in module.functions if f.has_body and not f.is_entry}
    calls: dict[str, set[str]] = {}
    reach: set[str] = set()
    for name, f in funcs.items():
        out: set[str] = set()
        for i in f.instructions:
            if i.op in _RELEVANT:
                reach.add(name)
            elif i.op == "call":
                t = call_target(i)
                if t is not None and t in funcs:
                    out.add(t)
        calls[name] = out
    changed = True
    while changed:
        changed = False
        for name, out in calls.items():
            if name not in reach and out & reach:
                reach.add(name)
                changed = True
    return reach


def _param_store(insts: list[Instruction], before: int, name: str) -> Instruction | None:
    """The last ``st.param [name], x`` of ``insts`` before index ``before`` (the caller's argument store)."""
    for i in range(before - 1, -1, -1):
        inst = insts[i]
        if inst.op == "call":
            return None
        if inst.op == "st" and inst.has("param") and len(inst.operands) == 2:
            d = inst.operands[0]
            if type(d) is Address and type(d.base) is Sym and d.base.name == name:
                return inst if d.offset == 0 and d.base.offset == 0 and type(inst.operands[1]) in (Reg, Imm) \
                    else None
    return None


def _binding(insts: list[Instruction], at: int, callee: Function) -> _Binding | None:
    """The ``_Binding`` of call ``insts[at]`` of ``callee``, or None when an argument or result is not a plain
    scalar the expansion can carry."""
    call = insts[at]
    args = call_args(call)
    if len(args) != len(callee.params):
        return None
    params: dict[str, Operand] = {}
    for p, a in zip(callee.params, args):
        if type(a) is Sym:
            st = _param_store(insts, at, a.name)
            if st is None:
                return None
            params[p.name] = st.operands[1]
        elif type(a) in (Reg, Imm):
            params[p.name] = a
        else:
            return None
    rets: dict[str, tuple[Reg, ...]] = {}
    ret_ops = call_rets(call)
    own = {p.name for p in callee.params}
    ret_names = [s for s in _callee_ret_names(callee, own)]
    if ret_ops:
        if len(ret_ops) != 1 or type(ret_ops[0]) is not Sym or len(ret_names) > 1:
            return None
        rname = ret_ops[0].name
        dests: list[Reg] = []
        for inst in insts[at + 1:]:
            if inst.op == "call":
                break
            if inst.op == "ld" and inst.has("param") and len(inst.operands) == 2:
                src = inst.operands[1]
                if type(src) is Address and type(src.base) is Sym and src.base.name == rname:
                    if src.offset != 0 or src.base.offset != 0 or type(inst.operands[0]) is not Reg:
                        return None
                    dests.append(inst.operands[0])
        for n in ret_names:
            rets[n] = tuple(dests)
    return _Binding(params, rets)


def _callee_ret_names(callee: Function, own: set[str]) -> list[str]:
    """Names of the return parameters ``callee`` stores into (``st.param [func_retval0], …``): ``.param``
    symbols that are neither its input parameters nor variables of its body."""
    out: list[str] = []
    for i in callee.instructions:
        if i.op == "st" and i.has("param") and len(i.operands) == 2:
            d = i.operands[0]
            if type(d) is Address and type(d.base) is Sym and d.base.name not in own \
                    and not any(k == d.base.name or k.startswith(d.base.name + "@") for k in callee.variables):
                if d.base.name not in out:
                    out.append(d.base.name)
    return out


class _Renamer:
    """Renames one expanded copy's registers and labels apart from the caller's (suffix ``$inl<k>``)."""

    def __init__(self, callee: Function, k: int) -> None:
        self.suffix = f"$inl{k}"
        self.regs: set[str] = set()
        for i in callee.instructions:
            for r in defined_regs(i):
                self.regs.add(r.name)
        for i in callee.instructions:  # registers read but never written (not special): keep them apart too
            for o in i.operands:
                self._collect(o)
        self.labels = set(callee.labels) | {t for ts in callee.branch_targets.values() for t in ts} \
            | set(callee.branch_targets)

    def _collect(self, o: Operand) -> None:
        match o:
            case Reg(name):
                if not name.startswith(_SPECIAL):
                    self.regs.add(name)
            case Vec(items) | ParenList(items):
                for x in items:
                    self._collect(x)
            case Address(base, _, coords):
                if base is not None:
                    self._collect(base)
                if coords is not None:
                    self._collect(coords)
            case NotReg(reg):
                self._collect(reg)
            case RegPair(first, second):
                self._collect(first)
                self._collect(second)

    def reg(self, r: Reg) -> Reg:
        return Reg(r.name + self.suffix) if r.name in self.regs else r

    def label(self, name: str) -> str:
        return name + self.suffix if name in self.labels else name

    def sym(self, s: Sym) -> Sym:
        """``s`` renamed when it names one of the callee's labels (a branch target), else ``s``."""
        return Sym(self.label(s.name), s.offset) if s.name in self.labels else s

    def reg_or_sym(self, o: Reg | Sym) -> Reg | Sym:
        return self.reg(o) if isinstance(o, Reg) else self.sym(o)

    def operand(self, o: Operand) -> Operand:
        match o:
            case Reg():
                return self.reg(o)
            case Sym():
                return self.sym(o)
            case Vec(items):
                return Vec(tuple(self.operand(x) for x in items))
            case ParenList(items):
                return ParenList(tuple(self.operand(x) for x in items))
            case Address(base, offset, coords):
                return Address(self.reg_or_sym(base) if base is not None else None, offset,
                               self.operand(coords) if coords is not None else None)
            case NotReg(reg):
                return NotReg(self.reg(reg))
            case RegPair(first, second):
                return RegPair(self.reg_or_sym(first), self.reg_or_sym(second))
        return o


def _mov(like: Instruction, ty: str, dest: Reg, src: Operand, guard: Guard | None) -> Instruction:
    """``mov.<ty> dest, src`` at the place of ``like``."""
    return Instruction(f"mov.{ty}", ("mov", ty), guard, (dest, src), like.span, like.src)


def _param_type(inst: Instruction) -> str | None:
    """The type qualifier of a scalar ``ld.param`` / ``st.param`` (``b32``), None for a vector access."""
    if any(p.startswith("v") and p[1:].isdigit() for p in inst.parts):
        return None
    t = inst.parts[-1]
    return t if t[:1] in ("b", "u", "s", "f", "p") and t[1:].isdigit() else None


class _Expander:
    """Builds the expanded instruction list of one kernel."""

    def __init__(self, module: Module, relevant: set[str]) -> None:
        self.funcs = {f.name: f for f in module.functions if f.has_body and not f.is_entry}
        self.relevant = relevant
        self.count = 0
        self.added = 0
        self.out: list[Instruction] = []
        self.labels: dict[str, int] = {}
        self.label_spans: dict[str, Span] = {}
        self.branch_targets: dict[str, tuple[str, ...]] = {}
        self.variables: dict[str, Variable] = {}
        self.expanded = False
        #: expanded instruction index -> the calls it was expanded from, outermost first
        self.sites: dict[int, tuple[CallSite, ...]] = {}

    def emit(self, fn: Function, ren: _Renamer | None, binding: _Binding | None, ret_label: str | None,
             stack: tuple[str, ...], chain: tuple[CallSite, ...] = ()) -> None:
        insts = fn.instructions
        at_label: dict[int, list[str]] = {}
        for name, idx in fn.labels.items():
            at_label.setdefault(idx, []).append(name)
        skip: set[int] = set()  # the caller's ld.param of a result, replaced by the callee's mov
        for idx, inst in enumerate(insts):
            for name in at_label.get(idx, ()):
                new = ren.label(name) if ren else name
                self.labels[new] = len(self.out)
                if name in fn.label_spans:
                    self.label_spans[new] = fn.label_spans[name]
            if idx in skip:
                continue
            if inst.op == "call":
                done = self._call(fn, insts, idx, ren, stack, skip, chain)
                if done:
                    continue
            if chain:
                self.sites[len(self.out)] = chain
            self.out.append(self._copy(inst, ren, binding, ret_label))
        for name, idx in fn.labels.items():
            if idx >= len(insts):
                new = ren.label(name) if ren else name
                self.labels[new] = len(self.out)
                if name in fn.label_spans:
                    self.label_spans[new] = fn.label_spans[name]
        for name, ts in fn.branch_targets.items():
            self.branch_targets[ren.label(name) if ren else name] = tuple(ren.label(t) if ren else t for t in ts)

    def _call(self, fn: Function, insts: list[Instruction], idx: int, ren: _Renamer | None,
              stack: tuple[str, ...], skip: set[int], chain: tuple[CallSite, ...]) -> bool:
        """Expands call ``insts[idx]`` of ``fn`` in place when it can; True when it did."""
        call = insts[idx]
        t = call_target(call)
        if t is None or t not in self.relevant or t in stack or len(stack) >= MAX_DEPTH:
            return False
        callee = self.funcs.get(t)
        if callee is None or call.guard is not None:
            return False
        if self.added + len(callee.instructions) > MAX_INLINED:
            return False
        binding = _binding(insts, idx, callee)
        if binding is None:
            return False
        if ren is not None:  # the binding's operands are in ``fn``'s names: rename them to this copy's
            binding = _Binding({k: ren.operand(v) for k, v in binding.params.items()},
                               {k: tuple(ren.reg(r) for r in v) for k, v in binding.rets.items()})
        for v in callee.variables.values():
            if v.space != "param":
                return False  # a callee's own .local / .shared variables: not carried (rare in nvcc output)
        # the caller's ld.param of the result is replaced by the callee's mov into the same registers
        ret = call_rets(call)[0] if binding.rets else None  # a Sym: ``_binding`` checked it
        if isinstance(ret, Sym):
            for j in range(idx + 1, len(insts)):
                i = insts[j]
                if i.op == "call":
                    break
                if i.op == "ld" and i.has("param"):
                    src = i.operands[1]
                    if isinstance(src, Address) and isinstance(src.base, Sym) and src.base.name == ret.name:
                        skip.add(j)
        self.count += 1
        self.added += len(callee.instructions)
        self.expanded = True
        inner = _Renamer(callee, self.count)
        ret_label = f"$ret$inl{self.count}"
        self.emit(callee, inner, binding, ret_label, stack + (t,), chain + (CallSite(call, t, stack[-1]),))
        self.labels[ret_label] = len(self.out)
        self.label_spans[ret_label] = call.span
        return True

    def _copy(self, inst: Instruction, ren: _Renamer | None, binding: _Binding | None,
              ret_label: str | None) -> Instruction:
        if ren is None:
            return Instruction(inst.opcode, inst.parts, inst.guard, inst.operands, inst.span, inst.src)
        guard = Guard(ren.reg(inst.guard.reg), inst.guard.negated) if inst.guard is not None else None
        if binding is not None:
            if inst.op == "ld" and inst.has("param") and len(inst.operands) == 2:
                src = inst.operands[1]
                ty = _param_type(inst)
                if type(src) is Address and type(src.base) is Sym and src.base.name in binding.params \
                        and src.offset == 0 and src.base.offset == 0 and ty is not None \
                        and type(inst.operands[0]) is Reg:
                    return _mov(inst, ty, ren.reg(inst.operands[0]), binding.params[src.base.name], guard)
            if inst.op == "st" and inst.has("param") and len(inst.operands) == 2:
                d = inst.operands[0]
                ty = _param_type(inst)
                if type(d) is Address and type(d.base) is Sym and d.base.name in binding.rets and ty is not None:
                    dests = binding.rets[d.base.name]
                    if len(dests) == 1:
                        return _mov(inst, ty, dests[0], ren.operand(inst.operands[1]), guard)
        if inst.op == "ret" and ret_label is not None:
            return Instruction("bra.uni", ("bra", "uni"), guard, (Sym(ret_label),), inst.span, inst.src)
        return Instruction(inst.opcode, inst.parts, guard, tuple(ren.operand(o) for o in inst.operands), inst.span,
                           inst.src)


def inline_calls(module: Module, fn: Function) -> Inlined:
    """``fn`` with its direct calls of TMEM-using ``.func`` callees expanded (module docstring); ``fn`` itself
    when it is not a kernel or has no such call."""
    same = Inlined(fn, {})
    if not fn.is_entry or not fn.has_body or not any(i.op == "call" for i in fn.instructions):
        return same
    relevant = _relevant_funcs(module)
    if not relevant or not any(i.op == "call" and call_target(i) in relevant for i in fn.instructions):
        return same
    ex = _Expander(module, relevant)
    ex.emit(fn, None, None, None, (fn.name,))
    if not ex.expanded:
        return same
    for k, i in enumerate(ex.out):
        i.index = k
    return Inlined(Function(fn.name, fn.is_entry, fn.span, fn.params, fn.directives, ex.out, ex.labels,
                            ex.label_spans, ex.branch_targets, fn.variables, fn.has_body), ex.sites)


