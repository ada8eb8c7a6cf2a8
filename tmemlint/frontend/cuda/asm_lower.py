"""Asm binding in the lowering: an ``asm`` statement's template (``asm``) is instantiated with the registers
of its operand expressions (outputs written back to their lvalues) and its instructions appended.  A mixin of
``lower.Lowering``."""

from __future__ import annotations

from tmemlint.frontend.cuda.asm import (
    PLACEHOLDER,
    AsmTemplate,
    glued_references,
    is_local_name,
    numbers_instances,
    parse_template,
    prepare,
    read_asm,
)
from tmemlint.frontend.cuda.asm_direction import direction_faults
from tmemlint.frontend.cuda.common import (
    MAX_INSTRUCTIONS,
    AliasLV,
    BudgetExceeded,
    Diagnostic,
    RegLV,
    V,
    constraint_type,
)
from tmemlint.ir import Address, Guard, Instruction, Label, NotReg, ParenList, Reg, RegPair, Sym, Vec


class AsmMixin:
    """Lowering of asm statements."""

    # ---- asm ----------------------------------------------------------------------------------------------------
    def asm(self, n) -> None:
        """Lower one asm statement: operands bound to registers, the template's instructions appended."""
        st = self.asm_cache.get(("stmt", n.id))
        if st is None:
            st = read_asm(n, self.P.src)
            self.asm_cache[("stmt", n.id)] = st
        self.cur_span = self.span(n)
        if st.unknown is not None:
            for op in st.outputs:
                lv = self.lvalue(op.expr)
                self.write(lv, self.opaque(f"asm output {self.text(op.expr)} at {self.cur_span.line}", lv.ty))
            self.diagnostics.append(Diagnostic(
                "TM901", self.span(n), f"asm statement not analysed: {st.unknown}; its instructions are skipped"))
            return
        bound: dict[int, object] = {}
        literals: dict[int, str] = {}
        post: list = []
        outs: list = []
        k = 0
        for op in st.outputs:
            lv = self.lvalue(op.expr)
            rw = "+" in op.modifier
            if isinstance(lv, AliasLV) and lv.scope is not None and lv.name:
                c = RegLV(f"{lv.name}#{self.frame.uid}.o{self.nreg}", lv.ty)
                if rw:
                    self.write(c, lv.v)
                lv.scope[lv.name] = c
                lv = c
            outs.append(lv)
            if isinstance(lv, RegLV):
                bound[k] = self.cell(lv)
                self._detach(bound[k])
            else:
                r = self.reg()
                if rw:
                    v = self.read(lv)
                    if v.op is not None:
                        self.emit(f"mov.{constraint_type(op.constraint)}", [r, v.op])
                bound[k] = r
                post.append((lv, r))
            k += 1
        for op in st.inputs:
            self.cur_span = self.span(op.expr)
            v = self.value(op.expr)
            imm = any(c in op.constraint for c in "niI") and not any(c in op.constraint for c in "rlhfd")
            if imm and v.const is not None:
                literals[k] = str(v.const)
            elif v.ty.kind == "bool":
                bound[k] = self._to_reg(self.as_int(v), op.constraint)
            else:
                bound[k] = self._to_reg(v, op.constraint)
            k += 1
        self.cur_span = self.span(n)
        ops = st.outputs + st.inputs
        hidden = [i for i in glued_references(st) if i not in literals]
        if hidden:  # nvcc puts the operand's value into the instruction's text: unknown value, unknown instruction
            i = hidden[0]
            why = ("an immediate operand whose value is not known here" if any(c in ops[i].constraint for c in "niI")
                   else f"a \"{ops[i].constraint}\" operand (nvcc substitutes only immediates' values)")
            for lv, op in zip(outs, st.outputs):
                self.write(lv, self.opaque(f"asm output {self.text(op.expr)} at {self.cur_span.line}", lv.ty))
            self.diagnostics.append(Diagnostic(
                "TM901", self.span(n), f"asm statement not analysed: %{i} ({self.text(ops[i].expr)}) is part of an "
                                       f"instruction's text and is {why}; its instructions are skipped"))
            return
        # %= is the number of the asm instance (``nasm``: those of this kernel so far, as nvcc numbers them in a
        # file of one kernel); a template without it is one text for every instance, parsed once
        instance = self.nasm if numbers_instances(st) else 0
        key = (n.id, tuple(sorted(literals.items())), instance)
        tpl = self.asm_cache.get(key)
        if tpl is None:
            text, pos, _used = prepare(st, literals, instance)
            tpl = parse_template(text, pos, self.where)
            self.asm_cache[key] = tpl
        if tpl.error is not None:
            msg, sp = tpl.error
            self.diagnostics.append(Diagnostic("TM900", sp, msg))
        else:
            if ("dir", n.id) not in self.asm_cache:
                self.asm_cache[("dir", n.id)] = True
                self._check_directions(st, tpl)
            self._instantiate(tpl, bound)
        for lv, r in post:
            self.write(lv, V(r, lv.ty))

    def _check_directions(self, st, tpl: AsmTemplate) -> None:
        """TM903 at each operand of ``st`` bound against the way its tcgen05 instructions use it (once per asm
        statement of the file: an inlined helper's asm is lowered at every call)."""
        ops = st.outputs + st.inputs
        for f in direction_faults(st, tpl.items):
            op = ops[f.index]
            what = self.text(op.expr)
            bound = f'"{op.modifier}{op.constraint}"({what})'
            if f.written:
                msg = (f"{f.opcode} writes {f.role} %{f.index} ({what}), but the operand is bound as an input "
                       f"{bound}: the compiler assumes the asm leaves {what} unchanged and keeps using its old "
                       f"value; bind it as an output (\"={op.constraint}\")")
            else:
                msg = (f"{f.opcode} reads {f.role} %{f.index} ({what}), but the operand is bound as an output "
                       f"{bound}: the compiler passes an uninitialised register to the asm and drops {what}'s "
                       f"value; bind it as an input (\"{op.constraint}\")")
            self.diagnostics.append(Diagnostic("TM903", self.span(op.node if op.node is not None else op.expr), msg))

    def _to_reg(self, v: V, constraint: str) -> Reg:
        if type(v.op) is Reg:
            return v.op
        r = self.reg()
        if v.op is None:
            return self.opaque(f"asm operand {self.cur_span.line}:{self.cur_span.column}", v.ty).op
        self.emit(f"mov.{constraint_type(constraint)}", [r, v.op])
        return r

    def _instantiate(self, tpl: AsmTemplate, bound: dict) -> None:
        self.nasm += 1
        tag = f"@a{self.nasm}"
        labels = tpl.labels
        cache: dict = {}

        def sub(o):
            t = type(o)
            if t is Reg:
                name = o.name
                if name.startswith(PLACEHOLDER):
                    try:
                        r = bound.get(int(name[len(PLACEHOLDER):]))
                    except ValueError:
                        r = None
                    return r if r is not None else o
                if is_local_name(name):
                    r = cache.get(name)
                    if r is None:
                        r = Reg(name + tag)
                        cache[name] = r
                    return r
                return o
            if t is Sym:
                return Sym(o.name + tag, o.offset) if o.name in labels else o
            if t is Address:
                return Address(sub(o.base) if o.base is not None else None, o.offset,
                               sub(o.coords) if o.coords is not None else None)
            if t is Vec:
                return Vec(tuple(sub(x) for x in o.items))
            if t is ParenList:
                return ParenList(tuple(sub(x) for x in o.items))
            if t is NotReg:
                return NotReg(sub(o.reg))
            if t is RegPair:
                return RegPair(sub(o.first), sub(o.second))
            return o

        for item in tpl.items:
            if type(item) is Label:
                name = item.name + tag
                self.labels[name] = len(self.insts)
                self.label_spans[name] = item.span
                continue
            g = item.guard
            if g is not None:
                g = Guard(sub(g.reg), g.negated)
            inst = Instruction(item.opcode, item.parts, g, tuple(sub(o) for o in item.operands), item.span,
                               self._src(item.span), len(self.insts))
            self.asm_indices.add(inst.index)
            self.insts.append(inst)
        if len(self.insts) > MAX_INSTRUCTIONS:
            raise BudgetExceeded()


#: Statement and expression handlers by tree-sitter node type (``Lowering._s_<type>``, ``Lowering._e_<type>``).
