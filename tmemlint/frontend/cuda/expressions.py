"""Expressions: conditions (constant peeking, short-circuit jumps) and the value of each expression node
(``_e_<node type>``).  A mixin of ``lower.Lowering``."""

from __future__ import annotations

from tmemlint.frontend.cuda.common import AliasLV, RegLV, Unsupported, V, is_pure, type_bits, type_suffix
from tmemlint.frontend.cuda.cxx_types import (
    BOOL,
    INT,
    U64,
    UNKNOWN,
    VOID,
    CType,
    NotConstant,
    common,
    parse_number,
    promote,
    ptr_to,
    size_of,
    wrap,
)
from tmemlint.ir import Imm, Reg


class ExpressionsMixin:
    """Conditions and the values of expressions."""

    # ---- conditions ---------------------------------------------------------------------------------------------
    def peek_const(self, n) -> int | None:
        """The integer value of expression ``n`` if it is a compile-time constant here (locals bound to constants
        included), without emitting anything."""
        if n is None:
            return None
        env = {}
        try:
            return self._peek(n, env)
        except NotConstant:
            return None

    def _peek(self, n, env):
        names = set()
        stack = [n]
        while stack:
            x = stack.pop()
            t = x.type
            if t in ("identifier", "type_identifier"):
                names.add(self.text(x))
            elif t == "call_expression":
                fn = x.child_by_field_name("function")
                if fn is None or fn.type not in ("identifier", "qualified_identifier", "template_function",
                                                 "primitive_type", "sized_type_specifier", "type_identifier"):
                    raise NotConstant()
                stack.extend(x.child_by_field_name("arguments").named_children)
                if fn.type == "template_function":
                    stack.extend(fn.child_by_field_name("arguments").named_children)
            elif t in ("field_expression", "subscript_expression", "pointer_expression", "assignment_expression",
                       "update_expression", "this", "gnu_asm_expression", "lambda_expression"):
                raise NotConstant()
            else:
                stack.extend(x.named_children)
        for name in names:
            lv = self.lookup(name)
            if lv is None:
                continue  # a function, or a name the evaluator resolves (or rejects) itself
            if not isinstance(lv, AliasLV) or lv.v.const is None:
                raise NotConstant()  # a local that is not a constant (it shadows any global)
            env[name] = (lv.v.const, lv.v.ty if lv.v.ty.kind in ("int", "bool") else INT)
        env.update((k, t) for k, t in self.frame.tenv.items() if isinstance(t, CType))
        v, _t = self.P.consteval.evaluate(n, env)
        if not isinstance(v, (int, float)):
            raise NotConstant()
        return int(v)

    def cond_jump(self, n, target: str, jump_if: bool) -> None:
        """Branch to ``target`` when condition ``n`` is ``jump_if``; fall through otherwise (short-circuit)."""
        t = n.type
        if t in ("parenthesized_expression", "condition_clause"):
            kids = [c for c in n.named_children if c.type != "comment"]
            if len(kids) == 1:
                self.cond_jump(kids[0], target, jump_if)
                return
        if t == "unary_expression" and self.text(n.child_by_field_name("operator")) == "!":
            self.cond_jump(n.child_by_field_name("argument"), target, not jump_if)
            return
        if t == "binary_expression":
            op = self.text(n.child_by_field_name("operator"))
            if op in ("&&", "||"):
                left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
                kl = self.peek_const(left)
                if kl is not None:
                    if (op == "&&" and not kl) or (op == "||" and kl):
                        if bool(kl) == jump_if:
                            self.bra(target)
                        return
                    self.cond_jump(right, target, jump_if)
                    return
                if (op == "&&") != jump_if:  # && jumping on false, || jumping on true: either side decides
                    self.cond_jump(left, target, jump_if)
                    self.cond_jump(right, target, jump_if)
                else:
                    skip = self.new_label("sc")
                    self.cond_jump(left, skip, not jump_if)
                    self.cond_jump(right, target, jump_if)
                    self.place(skip)
                return
        v = self.as_pred(self.value(n))
        if v.const is not None:
            if bool(v.const) == jump_if:
                self.bra(target)
            return
        self.bra(target, v.op, not jump_if)

    # ---- values -------------------------------------------------------------------------------------------------
    def value(self, n, discard: bool = False) -> V:
        """The value of expression ``n`` (instructions for its side effects and computation are emitted)."""
        t = n.type
        h = self._EXPR.get(t)
        if h is None:
            if t in ("string_literal", "concatenated_string", "raw_string_literal"):
                return self.opaque(self.text(n)[:40], ptr_to(UNKNOWN))
            if t == "lambda_expression":
                return self._e_lambda(n)
            if t in ("initializer_list", "compound_literal_expression", "new_expression",
                     "delete_expression", "fold_expression", "user_defined_literal", "requires_expression",
                     "co_await_expression", "offsetof_expression", "generic_expression", "alignof_expression"):
                return self.opaque(self.text(n), UNKNOWN)
            if t == "ERROR":
                raise Unsupported(n, "the C++ parser could not read the code at this line")
            return self.opaque(self.text(n), UNKNOWN)
        if discard and t == "update_expression":
            return self._e_update_expression(n, discard=True)
        return h(self, n)

    def _e_number_literal(self, n) -> V:
        r = parse_number(self.text(n))
        if r is None:
            return self.opaque(self.text(n), INT)
        v, t = r
        return self.const_v(v, t)

    def _e_char_literal(self, n) -> V:
        body = self.text(n)
        try:
            inner = body[body.index("'") + 1:-1]
            return V(Imm(ord(inner.encode().decode("unicode_escape")[0])), INT)
        except (ValueError, IndexError, UnicodeDecodeError):
            return self.opaque(body, INT)

    def _e_true(self, n) -> V:
        return V(Imm(1), BOOL)

    def _e_false(self, n) -> V:
        return V(Imm(0), BOOL)

    def _e_nullptr(self, n) -> V:
        return V(Imm(0), ptr_to(UNKNOWN))

    def _e_lambda(self, n) -> V:
        """A lambda: a value that names it; calling it inlines its body with the names of the frame where it was
        written visible (captures by reference and by value read the same registers)."""
        key = f"lambda@{n.start_byte}#{self.frame.uid}"
        self.lambdas[key] = (self.P.lambda_def(n), self.frame)
        return V(None, CType("lambda", 0, False, key))

    def _e_identifier(self, n) -> V:
        name = self.text(n)
        if name == "warpSize":
            return V(Imm(32), INT)
        lv = self.lookup(name)
        if lv is None:
            return self.opaque(name, UNKNOWN)
        return self.read(lv)

    def _e_qualified_identifier(self, n) -> V:
        name = self.text(n).replace(" ", "")
        scope, _, member = name.rpartition("::")
        t = self.frame.tenv.get(scope)
        if isinstance(t, CType):
            try:
                v, vt = self.P.static_member(t, member)
                return self.const_v(v, vt)
            except NotConstant:
                return self.opaque(name, UNKNOWN)
        try:
            v, t = self.P.resolve_constant(name)
            return self.const_v(v, t)
        except NotConstant:
            pass
        return self.read(self.lvalue(n))

    def _e_this(self, n) -> V:
        return self.read(self.lvalue(n))

    def _e_parenthesized_expression(self, n) -> V:
        kids = [c for c in n.named_children if c.type != "comment"]
        if not kids:
            return self.opaque("()", UNKNOWN)
        if len(kids) > 1:
            for k in kids[:-1]:
                self.value(k, discard=True)
        return self.value(kids[-1])

    def _e_field_expression(self, n) -> V:
        return self.read(self._field_lv(n))

    def _e_subscript_expression(self, n) -> V:
        return self.read(self.lvalue(n))

    def _e_pointer_expression(self, n) -> V:
        op = n.children[0].type
        arg = n.child_by_field_name("argument")
        if op == "&":
            return self.address(self.lvalue(arg))
        return self.read(self.deref(self.value(arg)))

    def _e_comma_expression(self, n) -> V:
        self.value(n.child_by_field_name("left"), discard=True)
        return self.value(n.child_by_field_name("right"))

    def _e_sizeof_expression(self, n) -> V:
        tn = n.child_by_field_name("type")
        if tn is not None:
            sz = size_of(self.type_of(tn), self.P.structs)
        else:
            kids = [c for c in n.named_children if c.type != "comment"]
            sz = None
            if kids:
                lv = self.lvalue(kids[-1]) if kids[-1].type in ("identifier", "field_expression",
                                                               "subscript_expression") else None
                sz = size_of(lv.ty, self.P.structs) if lv is not None else None
        return V(Imm(sz), U64) if sz is not None else self.opaque(self.text(n), U64)

    def _e_cast_expression(self, n) -> V:
        t = self.type_of(n.child_by_field_name("type"))
        return self.convert(self.value(n.child_by_field_name("value")), t, explicit=True)

    def _e_conditional_expression(self, n) -> V:
        c = n.child_by_field_name("condition")
        a = n.child_by_field_name("consequence")
        b = n.child_by_field_name("alternative")
        k = self.peek_const(c)
        if k is not None:
            return self.value(a if k else b)
        if a is not None and b is not None and is_pure(a, self.P.enum_types) and is_pure(b, self.P.enum_types):
            p = self.as_pred(self.value(c))
            va, vb = self.value(a), self.value(b)
            if p.const is not None:
                return va if p.const else vb
            t = common(va.ty, vb.ty) if va.ty.kind in ("int", "bool", "float") and vb.ty.kind in (
                "int", "bool", "float") else (va.ty if va.ty.kind != "unknown" else vb.ty)
            va, vb = self.convert(va, t), self.convert(vb, t)
            if va.op is None or vb.op is None:
                return self.opaque(self.text(n), t)
            tx = self.tid_combine(lambda c, x, y: x if c else y, p, va, vb)
            if t.kind == "bool":
                va, vb = self.as_int(va), self.as_int(vb)
                r = self.reg()
                self.emit("selp.b32", [r, va.op, vb.op, p.op])
                return self.as_pred(V(r, INT, tx=tx))
            r = self.reg()
            self.emit(f"selp.{type_bits(t)}", [r, va.op, vb.op, p.op])
            return V(r, t, tx=tx)
        # branches
        l_else, l_end = self.new_label("celse"), self.new_label("cend")
        self.cond_jump(c, l_else, False)
        va = self.value(a)
        t = va.ty if va.ty.kind != "unknown" else INT
        out = RegLV(f"?:#{self.nreg}", t)
        self.write(out, va)
        self.bra(l_end)
        self.place(l_else)
        self.write(out, self.value(b))
        self.place(l_end)
        return self.read(out)

    def _e_unary_expression(self, n) -> V:
        op = self.text(n.child_by_field_name("operator"))
        v = self.value(n.child_by_field_name("argument"))
        if op == "!":
            return self._not(self.as_pred(v))
        if v.const is not None:
            t = promote(v.ty)
            if op == "-":
                return V(Imm(wrap(-v.const, t)), t)
            if op == "~":
                return V(Imm(wrap(~v.const, t)), t)
            return V(Imm(v.const), t)
        if op == "+":
            return v
        if v.op is None:
            return self.opaque(self.text(n), v.ty)
        t = promote(v.ty) if v.ty.kind in ("int", "bool") else v.ty
        r = self.reg()
        if op == "-":
            self.emit(f"neg.{type_suffix(t)}", [r, self.as_int(v).op])
        else:
            self.emit(f"not.{type_bits(t)}", [r, self.as_int(v).op])
        return V(r, t)

    def _e_binary_expression(self, n) -> V:
        op = self.text(n.child_by_field_name("operator"))
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        if op in ("&&", "||"):
            kl = self.peek_const(left)
            if kl is not None:
                if (op == "&&" and not kl) or (op == "||" and kl):
                    return V(Imm(1 if kl else 0), BOOL)
                return self.as_pred(self.value(right))
            if is_pure(right, self.P.enum_types):
                a = self.as_pred(self.value(left))
                b = self.as_pred(self.value(right))
                if a.const is not None:
                    return b if (a.const if op == "&&" else not a.const) else V(Imm(a.const), BOOL)
                if b.const is not None:
                    return a if (b.const if op == "&&" else not b.const) else V(Imm(b.const), BOOL)
                tx = self.tid_combine((lambda x, y: x and y) if op == "&&" else (lambda x, y: x or y), a, b)
                got = self.tid_predicate(tx)
                if got is not None:
                    return got
                r = self.reg("p")
                self.emit(f"{'and' if op == '&&' else 'or'}.pred", [r, a.op, b.op])
                return V(r, BOOL, tx=tx)
            out = RegLV(f"logic#{self.nreg}", BOOL)
            l_false, l_end = self.new_label("lf"), self.new_label("le")
            self.cond_jump(n, l_false, False)
            self.write(out, V(Imm(1), BOOL))
            self.bra(l_end)
            self.place(l_false)
            self.write(out, V(Imm(0), BOOL))
            self.place(l_end)
            return self.read(out)
        a = self.value(left)
        b = self.value(right)
        return self.binop(op, a, b)

    def _e_assignment_expression(self, n) -> V:
        op = self.text(n.child_by_field_name("operator"))
        lv = self.lvalue(n.child_by_field_name("left"))
        rv = self.value(n.child_by_field_name("right"))
        if op != "=":
            rv = self.binop(op[:-1], self.read(lv), rv)
        rv = self.convert(rv, lv.ty) if lv.ty.kind != "unknown" else rv
        self.write(lv, rv)
        return rv

    def _e_update_expression(self, n, discard: bool = False) -> V:
        arg = n.child_by_field_name("argument")
        op = self.text(n.child_by_field_name("operator"))
        lv = self.lvalue(arg)
        old = self.read(lv)
        prefix = n.children[0].type in ("++", "--")
        if not prefix and not discard:
            old = self.snapshot(old) if type(old.op) is Reg else old
        one = V(Imm(1), INT)
        new = self.binop("+" if op == "++" else "-", old, one)
        new = self.convert(new, lv.ty) if lv.ty.kind != "unknown" else new
        self.write(lv, new)
        return new if prefix or discard else old

    def _e_gnu_asm_expression(self, n) -> V:
        self.asm(n)
        return V(None, VOID)

    def _e_call_expression(self, n) -> V:
        r = self.call(n)
        return r if isinstance(r, V) else self.read(r)

    def _e_initializer_list(self, n) -> V:
        """``{a, b}`` as a value (an argument ``f({r[0], r[1]})``, a temporary): its elements are evaluated and
        read there, as nvcc's instructions building the temporary read them; the aggregate is opaque."""
        kids = [c for c in n.named_children if c.type != "comment"]
        if len(kids) == 1:
            return self.value(kids[0])
        return self.opaque_call(self.text(n), [self.value(k) for k in kids])
