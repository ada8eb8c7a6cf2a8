"""Statements and control flow: blocks, declarations, ``if``/``for``/``while``/``do``/``switch``, ``break``,
``continue``, ``return`` and ``goto`` become labels and guarded branches; loops with a constant trip count are
unrolled (``UNROLL_DEFAULT``, ``UNROLL_PRAGMA``).  A mixin of ``lower.Lowering``."""

from __future__ import annotations

import re

from tmemlint.frontend.cuda.common import (
    CMP_OPS,
    DTORS,
    UNROLL_DEFAULT,
    UNROLL_PRAGMA,
    AggLV,
    AliasLV,
    MemLV,
    RegLV,
    UnknownLV,
    Unsupported,
    V,
    ends_with_jump,
    ptx_type,
    type_suffix,
)
from tmemlint.frontend.cuda.cxx_types import INT, UINT, UNKNOWN, CType, fold_binary, ptr_to, size_of, wrap
from tmemlint.ir import Imm, Reg, Sym, Variable


class StatementsMixin:
    """Lowering of statements (``_s_<node type>``), declarations and loops."""

    # ---- statements -------------------------------------------------------------------------------------------
    def _body(self, body) -> None:
        self.stmt(body)

    def stmt(self, n) -> None:
        t = n.type
        if t != "compound_statement":
            self.cur_span = self.span(n)
        h = self._STMT.get(t)
        if h is None:
            if t in ("comment", "empty_statement", "static_assert_declaration", "type_definition",
                     "alias_declaration", "using_declaration", "namespace_alias_definition", ";"):
                return
            if t in ("struct_specifier", "class_specifier", "enum_specifier"):
                return
            raise Unsupported(n, f"C++ statement '{t}' at this line is not supported")
        h(self, n)

    def _s_ERROR(self, n) -> None:
        raise Unsupported(n, "the C++ parser could not read the code at this line")

    def _s_compound_statement(self, n) -> None:
        self.push_scope({})
        self._stmts(n.named_children)
        self.pop_scope()

    _pragma = None

    def _stmts(self, children) -> None:
        """Lower a statement list; a ``#pragma unroll`` applies to the loop right after it."""
        pragma = None
        for c in children:
            if c.type == "preproc_call":
                d = c.child_by_field_name("directive")
                arg = c.child_by_field_name("argument")
                if d is not None and self.text(d).strip() == "#pragma" and arg is not None:
                    words = self.text(arg).split()
                    if words and words[0] == "unroll":
                        pragma = words
                continue
            if c.type == "comment":
                continue
            self._pragma = pragma if c.type in ("for_statement", "while_statement", "do_statement") else None
            pragma = None
            self.stmt(c)

    def _s_expression_statement(self, n) -> None:
        for c in n.named_children:
            if c.type != "comment":
                self.value(c, discard=True)

    def _s_attributed_statement(self, n) -> None:
        """A statement with attributes; ``[[tmemlint::unroll(N)]]`` is the preprocessor's ``#pragma unroll N``."""
        pragma = None
        for c in n.named_children:
            if c.type == "attribute_declaration":
                m = re.search(r"tmemlint::unroll(?:\s*\(([^)]*)\))?", self.text(c))
                if m:
                    pragma = ["unroll"] + ([m.group(1).strip()] if m.group(1) and m.group(1).strip() else [])
        for c in n.named_children:
            if c.type not in ("attribute_declaration", "comment"):
                self._pragma = pragma if c.type in ("for_statement", "while_statement", "do_statement") else None
                self.stmt(c)

    def _s_labeled_statement(self, n) -> None:
        lab = n.child_by_field_name("label")
        self.place(f"$C{self.frame.uid}_{self.text(lab)}")
        for c in n.named_children:
            if c.id != lab.id and c.type != "statement_identifier":
                self.stmt(c)

    def _s_goto_statement(self, n) -> None:
        lab = n.child_by_field_name("label")
        self.bra(f"$C{self.frame.uid}_{self.text(lab)}")

    def _s_declaration(self, n) -> None:
        tn = n.child_by_field_name("type")
        quals = {self.text(x) for x in n.children if x.type in ("storage_class_specifier", "type_qualifier")}
        base = self.type_of(tn)
        for d in n.children_by_field_name("declarator"):
            self.cur_span = self.span(d)
            init = None
            dd = d
            if d.type == "init_declarator":
                dd = d.child_by_field_name("declarator")
                init = d.child_by_field_name("value")
            name, ty, is_ref = self.P.apply_declarator(dd, base, self._tenv_types())
            if not name:
                continue
            self._declare(name, ty, is_ref, init, quals, d)

    def _tenv_types(self) -> dict:
        """Template parameters of the current frame for type resolution: types, and values as constants."""
        out = {}
        for k, v in self.frame.tenv.items():
            if isinstance(v, CType):
                out[k] = v
            elif isinstance(v, AliasLV) and v.v.const is not None:
                out[k] = (v.v.const, v.v.ty)
        return out

    def type_of(self, tn) -> CType:
        return self.P.type_of(tn, self._tenv_types()) if tn is not None else UNKNOWN

    def _declare(self, name: str, ty: CType, is_ref: bool, init, quals: set[str], node) -> None:
        fr = self.frame
        if "__shared__" in quals:
            sym = f"{fr.fdef.name}.{name}" if "extern" not in quals else name
            if sym not in self.variables:
                self.variables[sym] = Variable(sym, "shared", ptx_type(ty), size_of(ty, self.P.structs), None,
                                               "extern" in quals, self.span(node))
            self.bind(name, MemLV(V(Sym(sym), ptr_to(ty)), ty, "shared"))
            return
        if is_ref:
            if init is None:
                self.bind(name, UnknownLV(name, ty))
                return
            lv = self.lvalue(init)
            self.bind(name, lv)
            return
        if ty.kind == "unknown" and init is not None and init.type not in ("initializer_list", "argument_list"):
            v = self.value(init)
            ty = v.ty
            self._bind_scalar(name, ty, v, node)
            return
        if ty.kind in ("array", "struct"):
            agg = AggLV(f"{name}#{fr.uid}.{node.id}", ty)
            self.bind(name, agg)
            s = self._struct(ty)
            ctors = [f for f in s.methods.get(s.name, []) if f.body is not None] if s is not None else []
            if ctors and (init is None or init.type in ("initializer_list", "argument_list")):
                kids = [c for c in init.named_children if c.type != "comment"] if init is not None else []
                ctor = next((f for f in ctors if f.required_args() <= len(kids) <= len(f.params)), None)
                if ctor is not None:
                    self.inline_call(ctor, kids, agg, node, None)
            elif init is not None:
                self._init_aggregate(agg, init)
            dtor = next((f for f in s.methods.get("~" + s.name, []) if f.body is not None), None) if s else None
            if dtor is not None:
                self.frame.scopes[-1].setdefault(DTORS, []).append((agg, dtor))
            return
        if init is None:
            self.bind(name, RegLV(f"{name}#{fr.uid}.{node.id}", ty))
            return
        if init.type in ("initializer_list", "argument_list"):
            kids = [c for c in init.named_children if c.type != "comment"]
            v = self.value(kids[0]) if kids else V(Imm(0), ty)
        else:
            v = self.value(init)
        self._bind_scalar(name, ty, self.convert(v, ty), node)

    def _bind_scalar(self, name: str, ty: CType, v: V, node) -> None:
        fr = self.frame
        if name in self.mutated(fr.fdef):
            lv = RegLV(f"{name}#{fr.uid}.{node.id}", ty)
            self.bind(name, lv)
            self.write(lv, v)
        else:
            self.bind(name, self.alias(v, name, fr.scopes[-1]))

    def snapshot(self, v: V) -> V:
        """``v`` itself, or a copy when it lives in a variable's register (which a later write would change)."""
        if type(v.op) is Reg and v.op.name in self._cell_names:
            r = self.reg()
            self.emit(f"mov.{type_suffix(v.ty)}", [r, v.op])
            return V(r, v.ty, v.ref, v.tx)
        return v

    def alias(self, v: V, name: str, scope: dict) -> AliasLV:
        """Bind ``name`` (in ``scope``) to value ``v`` without a copy.  When ``v`` lives in a variable's register,
        the binding is remembered: a later write to that register first copies the old value for it
        (``_detach``), so no instruction reads the register before the program does."""
        lv = AliasLV(v, name, scope)
        if type(v.op) is Reg and v.op.name in self._cell_names:
            self._aliases.setdefault(v.op.name, []).append(lv)
        return lv

    def _detach(self, reg: Reg) -> None:
        """Before ``reg`` (a variable's register) is overwritten: give the live names bound to its value a copy."""
        refs = self._aliases.pop(reg.name, None)
        if not refs:
            return
        live = [a for a in refs if a.scope is not None and a.scope.get(a.name) is a and any(
            a.scope is sc for fr in self.frames for sc in fr.scopes)]
        if not live:
            return
        r = self.reg()
        self.emit(f"mov.{type_suffix(live[0].v.ty)}", [r, reg])
        for a in live:
            a.v = V(r, a.v.ty, a.v.ref, a.v.tx)

    def _init_aggregate(self, agg: AggLV, init) -> None:
        if init.type in ("initializer_list", "argument_list"):
            kids = [c for c in init.named_children if c.type != "comment"]
            s = self._struct(agg.ty)
            if s is not None:
                for (fname, _ft), k in zip(s.fields, kids):
                    if k.type == "initializer_list":
                        continue
                    lv = self.member(agg, fname)
                    if lv is not None:
                        self.write(lv, self.value(k))
                return
            if agg.ty.kind == "array":
                for i, k in enumerate(kids):
                    if k.type == "initializer_list":
                        continue
                    self.write(self.index_lv(agg, V(Imm(i), INT)), self.value(k))
            return
        v = self.value(init)
        if v.ref is not None and isinstance(v.ref[0], AggLV) and v.ref[1] is None:
            self._copy_agg(v.ref[0], agg)

    def _copy_agg(self, src: AggLV, dst: AggLV) -> None:
        prefix = src.key
        for key, reg in list(self.cells.items()):
            if key.startswith(prefix + ".") or key.startswith(prefix + "["):
                rest = key[len(prefix):]
                target = self.cell(RegLV(dst.key + rest, UINT))
                self._detach(target)
                self.emit("mov.b32", [target, Reg(reg)])

    def _s_if_statement(self, n) -> None:
        cond = n.child_by_field_name("condition")
        cexpr = self._cond_expr(cond)
        cons = n.child_by_field_name("consequence")
        alt = n.child_by_field_name("alternative")
        if alt is not None and alt.type == "else_clause":
            alt = alt.named_children[-1] if alt.named_children else None
        self.push_scope({})
        if cond is not None and cond.type == "condition_clause":
            init = cond.child_by_field_name("initializer")
            if init is not None:
                self.stmt(init)
            decl = next((c for c in cond.named_children if c.type == "declaration"), None)
            if decl is not None and cexpr is None:
                self._s_declaration(decl)
                dname = self.P.apply_declarator(decl.children_by_field_name("declarator")[0], UNKNOWN)[0]
                cexpr = None
                lv = self.lookup(dname)
                self._if_on_value(self.read(lv) if lv is not None else self.opaque(dname), cons, alt)
                self.pop_scope()
                return
        k = self.peek_const(cexpr)
        if k is not None:
            branch = cons if k else alt
            if branch is not None:
                self.stmt(branch)
            self.pop_scope()
            return
        if any(c.type == "constexpr" for c in n.children):
            # nvcc keeps one branch of an `if constexpr`; lowering both as a runtime branch would be a guess
            shown = self.text(cexpr)[:60] if cexpr is not None else ""
            raise Unsupported(n, f"the condition of `if constexpr ({shown})` is not known here (a template "
                                 f"argument or constant that was not resolved)")
        l_else = self.new_label("else")
        self.cur_span = self.span(cexpr)
        self.cond_jump(cexpr, l_else, False)
        self.stmt(cons)
        if alt is not None:
            l_end = self.new_label("endif")
            self.bra(l_end)
            self.place(l_else)
            self.stmt(alt)
            self.place(l_end)
        else:
            self.place(l_else)
        self.pop_scope()

    def _if_on_value(self, v: V, cons, alt) -> None:
        p = self.as_pred(v)
        if p.const is not None:
            branch = cons if p.const else alt
            if branch is not None:
                self.stmt(branch)
            return
        l_else = self.new_label("else")
        self.bra(l_else, p.op, True)
        self.stmt(cons)
        l_end = self.new_label("endif")
        if alt is not None:
            self.bra(l_end)
        self.place(l_else)
        if alt is not None:
            self.stmt(alt)
            self.place(l_end)

    def _cond_expr(self, cond):
        if cond is None:
            return None
        if cond.type == "condition_clause":
            v = cond.child_by_field_name("value")
            if v is not None:
                return v
            kids = [c for c in cond.named_children if c.type not in ("comment", "declaration")]
            return kids[-1] if kids else None
        if cond.type == "parenthesized_expression":
            return cond
        return cond

    def _s_while_statement(self, n) -> None:
        cexpr = self._cond_expr(n.child_by_field_name("condition"))
        body = n.child_by_field_name("body")
        self._pragma = None
        k = self.peek_const(cexpr)
        if k is not None and not k:
            return
        top = self.new_label("while")
        cont = self.new_label("wcont")
        end = self.new_label("wend")
        self._rotated_loop(cexpr, k, top, cont, end, body, None)

    def _s_do_statement(self, n) -> None:
        body = n.child_by_field_name("body")
        cexpr = n.child_by_field_name("condition")
        self._pragma = None
        top = self.new_label("do")
        cont = self.new_label("dcont")
        end = self.new_label("dend")
        self.place(top)
        self.frame.loops.append((end, cont, len(self.frame.scopes)))
        self.stmt(body)
        self.frame.loops.pop()
        self.place(cont)
        k = self.peek_const(cexpr)
        if k is None:
            self.cur_span = self.span(cexpr)
            self.cond_jump(cexpr, top, True)
        elif k:
            self.bra(top)
        self.place(end)

    def _s_for_statement(self, n) -> None:
        pragma = self._pragma
        self._pragma = None
        self.push_scope({})
        init = n.child_by_field_name("initializer")
        cexpr = n.child_by_field_name("condition")
        upd = n.child_by_field_name("update")
        body = n.child_by_field_name("body")
        trips = self._unroll_plan(init, cexpr, upd, body, pragma)
        if trips is not None:
            name, ty, values = trips
            end = self.new_label("uend")
            for k in values:
                self.push_scope({name: AliasLV(V(Imm(k), ty), name)})
                nxt = self.new_label("unext")
                self.frame.loops.append((end, nxt, len(self.frame.scopes)))
                self.stmt(body)
                self.frame.loops.pop()
                self.place(nxt)
                self.pop_scope()
            self.place(end)
            self.pop_scope()
            return
        if init is not None:
            if init.type == "declaration":
                self._s_declaration(init)
            elif init.type != "comment":
                self.cur_span = self.span(init)
                self.value(init, discard=True)
        k = self.peek_const(cexpr) if cexpr is not None else 1
        if k is not None and not k:
            self.pop_scope()
            return
        top = self.new_label("for")
        cont = self.new_label("fcont")
        end = self.new_label("fend")
        self._rotated_loop(cexpr, k, top, cont, end, body, upd)
        self.pop_scope()

    def _rotated_loop(self, cexpr, k, top: str, cont: str, end: str, body, upd) -> None:
        """A ``for``/``while`` loop in the rotated form nvcc emits (LLVM's loop rotation): the condition is
        tested once before the loop, on the initial values, and then at the bottom (``if (c) do { body; upd; }
        while (c)``).  The zero-trip decision is then a branch on the values the loop starts from (``0 <
        k_tiles``: a CTA-uniform fact every warp and lane shares), not on the loop counter after its definitions
        were joined at the head, as in nvcc's PTX.  ``k``: the condition's constant value (None: not constant;
        no condition: 1)."""
        guard = len(self.insts)
        if k is None:
            self.cur_span = self.span(cexpr)
            self.cond_jump(cexpr, end, False)
            self.rotated_loops.append((guard, len(self.insts), end, top))  # zero-trip test, preheader, labels
        self.place(top)
        self.frame.loops.append((end, cont, len(self.frame.scopes)))
        self.stmt(body)
        self.frame.loops.pop()
        self.place(cont)
        if upd is not None:
            self.cur_span = self.span(upd)
            self.value(upd, discard=True)
        if k is None:
            self.cur_span = self.span(cexpr)
            self.cond_jump(cexpr, top, True)
        else:
            self.bra(top)
        self.place(end)

    def _unroll_plan(self, init, cexpr, upd, body, pragma):
        """``(name, type, [values])`` when the loop has a constant trip count small enough to unroll."""
        no_unroll = bool(pragma) and len(pragma) > 1 and pragma[1] in ("1", "(1)")
        limit = UNROLL_DEFAULT if (no_unroll or not pragma) else UNROLL_PRAGMA
        if init is None or init.type != "declaration" or cexpr is None or upd is None:
            return None
        decls = init.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator":
            return None
        d = decls[0]
        nm = d.child_by_field_name("declarator")
        if nm is None or nm.type != "identifier":
            return None
        name = self.text(nm)
        ty = self.type_of(init.child_by_field_name("type"))
        if ty.kind not in ("int", "unknown"):
            return None
        start = self.peek_const(d.child_by_field_name("value"))
        if start is None:
            return None
        if ty.kind == "unknown":
            ty = INT
        if name in self._mutated_in(body):
            return None
        # condition: name OP bound (either side)
        if cexpr.type != "binary_expression":
            return None
        op = self.text(cexpr.child_by_field_name("operator"))
        left, right = cexpr.child_by_field_name("left"), cexpr.child_by_field_name("right")
        if left.type == "identifier" and self.text(left) == name:
            bound = self.peek_const(right)
            flip = False
        elif right.type == "identifier" and self.text(right) == name:
            bound = self.peek_const(left)
            flip = True
        else:
            return None
        if bound is None or op not in CMP_OPS:
            return None
        step = self._step(upd, name)
        if step is None:
            return None
        values = []
        v = start
        bt = INT
        for _ in range(limit + 1):
            a, b = (bound, v) if flip else (v, bound)
            ok, _t = fold_binary(op, a, ty, b, bt)
            if not ok:
                return name, ty, values
            values.append(v)
            v = wrap(step(v), ty)
        return None

    def _step(self, upd, name: str):
        t = upd.type
        if t == "update_expression":
            arg = upd.child_by_field_name("argument")
            if arg.type != "identifier" or self.text(arg) != name:
                return None
            op = self.text(upd.child_by_field_name("operator"))
            return (lambda x: x + 1) if op == "++" else (lambda x: x - 1)
        if t == "assignment_expression":
            left = upd.child_by_field_name("left")
            if left.type != "identifier" or self.text(left) != name:
                return None
            op = self.text(upd.child_by_field_name("operator"))
            k = self.peek_const(upd.child_by_field_name("right"))
            if k is None:
                return None
            if op == "+=":
                return lambda x: x + k
            if op == "-=":
                return lambda x: x - k
            if op == "*=" and k > 1:
                return lambda x: x * k
            if op == "<<=" and k > 0:
                return lambda x: x << k
            if op == ">>=" and k > 0:
                return lambda x: x >> k
        return None

    def _s_for_range_loop(self, n) -> None:
        raise Unsupported(n, "range-based for loops are not supported")

    def _s_switch_statement(self, n) -> None:
        cexpr = self._cond_expr(n.child_by_field_name("condition"))
        body = n.child_by_field_name("body")
        cases = [c for c in body.named_children if c.type == "case_statement"]
        self.cur_span = self.span(cexpr)
        v = self.value(cexpr)
        end = self.new_label("swend")
        labels = [self.new_label("case") for _ in cases]
        values = []
        default = None
        for i, c in enumerate(cases):
            val = c.child_by_field_name("value")
            if val is None:
                default = i
                values.append(None)
            else:
                values.append(self.peek_const(val))
        self.frame.loops.append((end, None, len(self.frame.scopes)))
        if v.const is not None:
            start = next((i for i, k in enumerate(values) if k is not None and k == v.const), default)
            if start is not None:
                for i in range(start, len(cases)):
                    self._case_body(cases[i])
                    if ends_with_jump(cases[i]):
                        break
            self.frame.loops.pop()
            self.place(end)
            return
        for i, k in enumerate(values):
            if i == default:
                continue
            if k is None:
                p = self.compare("==", v, self.value(cases[i].child_by_field_name("value")))
            else:
                p = self.compare("==", v, V(Imm(k), v.ty))
            if p.const is not None:
                if p.const:
                    self.bra(labels[i])
                continue
            self.bra(labels[i], p.op)
        self.bra(labels[default] if default is not None else end)
        for i, c in enumerate(cases):
            self.place(labels[i])
            self._case_body(c)
        self.frame.loops.pop()
        self.place(end)

    def _case_body(self, c) -> None:
        val = c.child_by_field_name("value")
        for s in c.named_children:
            if (val is not None and s.id == val.id) or s.type == "comment":
                continue
            self.stmt(s)

    def _s_break_statement(self, n) -> None:
        if not self.frame.loops:
            raise Unsupported(n, "'break' outside a loop")
        brk, _cont, depth = self.frame.loops[-1]
        self._unwind(depth)
        self.bra(brk)

    def _s_continue_statement(self, n) -> None:
        for _brk, cont, depth in reversed(self.frame.loops):
            if cont is not None:
                self._unwind(depth)
                self.bra(cont)
                return
        raise Unsupported(n, "'continue' outside a loop")

    def _s_return_statement(self, n) -> None:
        kids = [c for c in n.named_children if c.type != "comment"]
        fr = self.frame
        if fr.is_entry:
            if kids:
                self.value(kids[0], discard=True)
            self._unwind(0)
            self.emit("ret", [])
            return
        if kids:
            if fr.fdef.returns_ref:
                lv = self.lvalue(kids[0])
                if fr.ret_lv is None:
                    fr.ret_lv = ("lv", lv)
            else:
                v = self.value(kids[0])
                if fr.ret_lv is not None and not isinstance(fr.ret_lv, tuple):
                    self.write(fr.ret_lv, self.convert(v, fr.ret_lv.ty))
        self._unwind(0)
        self.bra(fr.ret_label)

    def _s_preproc_call(self, n) -> None:
        return

    def _s_gnu_asm_expression(self, n) -> None:
        self.asm(n)
