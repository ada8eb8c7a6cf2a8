"""Helper inlining: calls of functions of the translation unit (inlined, with template arguments, explicit
specialisations, lambdas with their closure, methods on their object), constexpr evaluation, the CUDA intrinsics
(``__syncthreads``, ``__shfl_sync``, ``elect_one_sync``, atomics, ...), and calls of functions whose body is not
lowered (their arguments are read; ``unseen`` records those that could reach tcgen05).  A mixin of
``lower.Lowering``."""

from __future__ import annotations

import re

from tmemlint.frontend.cuda.common import (
    MAX_INLINE_DEPTH,
    AggLV,
    AliasLV,
    Frame,
    MemLV,
    RegLV,
    V,
    check_parsed,
    is_table,
    single_tail_return,
    type_bits,
    type_suffix,
)
from tmemlint.frontend.cuda.cxx_types import (
    BOOL,
    FLOAT,
    INT,
    U64,
    UINT,
    UNKNOWN,
    VOID,
    CType,
    NotConstant,
    common,
    ptr_to,
    wrap,
)
from tmemlint.frontend.cuda.program import FunctionDef
from tmemlint.ir import Imm, Reg, RegPair, SourcePos, Sym


class CallsMixin:
    """Calls: inlining, intrinsics and opaque calls."""

    # ---- calls --------------------------------------------------------------------------------------------------
    def call(self, n, want_lvalue: bool = False):
        """Lower a call: a cast, an intrinsic, a function of the file (inlined), or an opaque value."""
        fn = n.child_by_field_name("function")
        args_node = n.child_by_field_name("arguments")
        args = [a for a in args_node.named_children if a.type != "comment"] if args_node is not None else []
        self.cur_span = self.span(n)
        ft = fn.type
        if ft in ("primitive_type", "sized_type_specifier"):
            t = self.type_of(fn)
            return self.convert(self.value(args[0]), t, explicit=True) if args else V(Imm(0), t)
        targs = None
        if ft == "template_function":
            name = self.text(fn.child_by_field_name("name")).replace(" ", "")
            targs = fn.child_by_field_name("arguments")
            short = name.rsplit("::", 1)[-1]
            if short in ("static_cast", "reinterpret_cast", "const_cast", "bit_cast") and len(args) == 1:
                tn = [x for x in targs.named_children if x.type != "comment"]
                t = self.type_of(tn[0]) if tn else UNKNOWN
                if short == "reinterpret_cast" and t.kind == "ptr":
                    v = self.value(args[0])
                    if v.ref is not None and (v.ty.elem is None or v.ty.elem != t.elem) \
                            and not _same_size_scalars(v.ty.elem, t.elem):
                        return V(None, t)
                    return V(v.op, t, v.ref)
                if t.kind == "ptr" or short != "bit_cast":
                    return self.convert(self.value(args[0]), t, explicit=True)
                return self.value(args[0])
        elif ft == "field_expression":
            return self._method_call(n, fn, args)
        elif ft == "qualified_identifier":
            name = self.text(fn).replace(" ", "")
            inner = fn.child_by_field_name("name")
            while inner is not None and inner.type == "qualified_identifier":  # a::b::f<N>: the last name's
                inner = inner.child_by_field_name("name")
            if inner is not None and inner.type == "template_function":
                targs = inner.child_by_field_name("arguments")
                name = name.split("<", 1)[0]
        elif ft == "type_identifier":
            t = self.type_of(fn)
            if t.kind in ("int", "bool", "float") and len(args) == 1:
                return self.convert(self.value(args[0]), t, explicit=True)
            name = self.text(fn)
            s = self.P.structs.get(name)
            if s is not None:
                return self.opaque(self.text(n), CType("struct", 0, False, s.name))
        elif ft in ("identifier",):
            name = self.text(fn)
            lv = self.lookup(name)
            lam = self.lambdas.get(lv.ty.name) if lv is not None and lv.ty.kind == "lambda" else None
            if lam is not None:
                return self.inline_call(lam[0], args, None, n, None, closure=lam[1])
            if lv is not None and lv.ty.kind == "struct":  # a functor: op(…) calls its operator()
                s = self._struct(lv.ty)
                cands = [f for f in (s.methods.get("operator()", []) if s is not None else [])
                         if f.body is not None and f.required_args() <= len(args) <= len(f.params)]
                if cands:
                    return self.inline_call(cands[0], args, lv, n, None, want_lvalue=want_lvalue)
        elif ft == "lambda_expression":
            f, closure = self.lambdas[self._e_lambda(fn).ty.name]
            return self.inline_call(f, args, None, n, None, closure=closure)
        else:
            for a in args:
                self.value(a, discard=True)
            return self.opaque(self.text(n), UNKNOWN)
        short = name.rsplit("::", 1)[-1]
        if (name in self.P.enum_types or short in self.P.enum_types) and len(args) == 1:
            return self.convert(self.value(args[0]), INT, explicit=True)  # an enum conversion Role(x)
        this = self.frame.this
        own = self._struct(this.ty) if this is not None and "::" not in name else None
        cands = self.P.lookup_functions(name, len(args), own,
                                        self._spec_key(targs) if targs is not None else None)
        if cands:
            # a method called by its bare name inside another method of the same struct acts on the same object
            same = own is not None and cands[0].owner is own
            return self.inline_call(cands[0], args, this if same else None, n, targs, want_lvalue=want_lvalue)
        h = _INTRINSICS.get(name) or _INTRINSICS.get(short)
        if h is not None:
            return h(self, args, n)
        known = self.P.functions.get(name.split("<", 1)[0]) or self.P.functions.get(short.split("<", 1)[0])
        if not any(f.body is not None for f in known or ()) and not _harmless(name):
            self.unseen.setdefault(name, self.span(n))
        return self.opaque_call(self.text(fn), [self.value(a) for a in args])

    def opaque_call(self, name: str, vals: list[V], ty: CType = UNKNOWN) -> V:
        """A call of a function whose body is not lowered (a math function, an unseen helper): its arguments are
        read where it is called, as nvcc's instruction computing it reads them (a ``prmt`` of every register the
        arguments hold, the elements of a local array passed by pointer included); the result is an opaque value,
        the same for the same name and arguments."""
        regs: list[Reg] = []
        for v in vals:
            if type(v.op) is Reg:
                regs.append(v.op)
            elif v.ref is not None and isinstance(v.ref[0], AggLV):
                k = v.ref[0].key
                regs.extend(Reg(r) for key, r in self.cells.items() if key.startswith((k + "[", k + ".")))
        if regs:
            self.emit("prmt.b32", [self.reg("arg"), *regs])
        key = name + "(" + ",".join(repr(v.op) if v.op is not None else "?" for v in vals) + ")"
        return self.opaque(key, ty)

    def _method_call(self, n, fn, args):
        obj_node = fn.child_by_field_name("argument")
        op = self.text(fn.child_by_field_name("operator"))
        mname = self.text(fn.child_by_field_name("field"))
        obj = self.deref(self.value(obj_node)) if op == "->" else self.lvalue(obj_node)
        if obj.ty.kind == "cg":
            got = self._cg_method(obj.ty.name, mname, args)
            if got is not None:
                return got
        s = self._struct(obj.ty)
        if s is not None:
            cands = [f for f in s.methods.get(mname, []) if f.body is not None and
                     f.required_args() <= len(args) <= len(f.params)]
            if cands:
                return self.inline_call(cands[0], args, obj, n, None)
        owner = obj.ty.name if obj.ty.kind == "struct" and obj.ty.name else ""
        if s is None and obj.ty.kind in ("struct", "unknown") and not _harmless(owner + "::" + mname):
            self.unseen.setdefault(f"{owner or self.text(obj_node)}::{mname}", self.span(n))
        return self.opaque_call(self.text(n), [self.value(a) for a in args])

    def _cg_method(self, group: str, mname: str, args) -> V | None:
        """A method of a cooperative_groups object (``cluster.sync()``, ``block.sync()``, ``block_rank()``)."""
        for a in args:
            self.value(a, discard=True)
        if mname in ("sync", "barrier_sync"):
            if group == "cluster":
                self.emit("barrier.cluster.arrive.aligned", [])
                self.emit("barrier.cluster.wait.aligned", [])
            elif group == "block":
                self.emit("bar.sync", [Imm(0)])
            elif group == "warp":
                self.emit("bar.warp.sync", [Imm(-1)])
            else:
                return None
            return V(None, VOID)
        if mname == "block_rank" and group == "cluster":
            return V(Reg("%cluster_ctarank"), UINT)
        if mname == "thread_rank" and group == "block":
            return V(Reg("%tid.x"), UINT)
        return None

    def inline_call(self, f: FunctionDef, arg_nodes: list, this, call_node, targs, want_lvalue: bool = False,
                    closure: Frame | None = None):
        """Inline a call of ``f`` (or evaluate it when it is constexpr and its arguments are constants); a lambda
        sees the names of its ``closure`` frame."""
        # arguments, in the caller
        bound = []
        for i, a in enumerate(arg_nodes):
            p = f.params[i] if i < len(f.params) else None
            if p is not None and p.is_ref:
                bound.append(self.lvalue(a))
            else:
                bound.append(self.value(a))
        tenv = self._template_env(f, targs)
        if f.is_constexpr and not f.returns_ref and all(isinstance(b, V) and b.const is not None for b in bound):
            try:
                env = {k: ((v.v.const, v.v.ty) if isinstance(v, AliasLV) else v) for k, v in tenv.items()
                       if isinstance(v, CType) or isinstance(v, AliasLV) and v.v.const is not None}
                v, t = self.P.consteval.call(f, [(b.const, b.ty) for b in bound], env)
                return self.const_v(v, t)
            except NotConstant:
                pass
        if f.body is None and not _harmless(f.qualname):
            self.unseen.setdefault(f.qualname, self.span(call_node) if call_node is not None else self.cur_span)
        if f.body is None or len(self.frames) > MAX_INLINE_DEPTH or any(fr.fdef is f for fr in self.frames):
            vals = [b if isinstance(b, V) else self.read(b) for b in bound]
            return self.opaque_call(f"{f.qualname}", vals, f.return_type)
        check_parsed(f, self.P)
        if this is not None:
            tenv = {**self.struct_tenv(this.ty), **tenv}
        call_span = self.span(call_node) if call_node is not None else self.cur_span
        fr = Frame(f, [{}], this=this, tenv=tenv, uid=self._uid(),
                   inlined_at=(SourcePos(self.path, call_span.line, call_span.column),) + self.frame.inlined_at)
        if closure is not None:
            fr.scopes = list(closure.scopes) + [{}]
            fr.this, fr.tenv = closure.this, closure.tenv
        scope = fr.scopes[-1]
        mutated = self.mutated(f)
        for i, p in enumerate(f.params):
            if i < len(bound):
                b = bound[i]
            elif p.default is not None:
                self.frames.append(fr)
                try:
                    b = self.lvalue(p.default) if p.is_ref else self.value(p.default)
                finally:
                    self.frames.pop()
            else:
                b = self.opaque(f"missing argument {p.name}", p.type)
            if p.is_ref:
                scope[p.name] = b if not isinstance(b, V) else AliasLV(b)
                continue
            v = self.convert(b, p.type) if p.type.kind != "unknown" else b
            if p.type.kind in ("struct", "array") and v.ref is not None and v.op is None:
                scope[p.name] = v.ref[0]
                continue
            if p.name in mutated:
                c = RegLV(f"{p.name}#{fr.uid}", p.type if p.type.kind != "unknown" else v.ty)
                scope[p.name] = c
                self.write(c, v)
            else:
                scope[p.name] = self.alias(v, p.name, scope)
        rt = f.return_type
        direct = single_tail_return(f.body)
        fr.ret_label = self.new_label("ret")
        if rt.kind not in ("void",) and not f.returns_ref and not direct:
            fr.ret_lv = RegLV(f"ret#{fr.uid}", rt if rt.kind != "unknown" else UINT)
        self.frames.append(fr)
        result = None
        saved_span = self.cur_span
        try:
            if this is not None:
                self._field_initializers(f, this)
            stmts = [c for c in f.body.named_children]
            if direct:
                last = [c for c in stmts if c.type != "comment"][-1]
                self.push_scope({})
                self._stmts([c for c in stmts if c.id != last.id])
                kids = [c for c in last.named_children if c.type != "comment"]
                self.cur_span = self.span(last)
                if kids:
                    result = self.lvalue(kids[0]) if f.returns_ref else self.value(kids[0])
                    if isinstance(result, V) and rt.kind != "unknown":
                        result = self.convert(result, rt)
                self.pop_scope()
            else:
                self.stmt(f.body)
                if f.returns_ref and isinstance(fr.ret_lv, tuple):
                    result = fr.ret_lv[1]
            self.place(fr.ret_label)
        finally:
            self.frames.pop()
            self.cur_span = saved_span
        if result is None:
            if isinstance(fr.ret_lv, RegLV):
                result = self.read(fr.ret_lv)
            else:
                result = V(None, VOID) if rt.kind == "void" else self.opaque(f"{f.qualname}()", rt)
        if want_lvalue or not isinstance(result, V):
            return result
        return result

    def _spec_key(self, targs) -> str:
        """The template arguments of a call as an explicit specialization spells them: constants folded
        (``f<kN / 2>`` finds ``template <> f<64>``), other arguments as written."""
        parts = []
        for x in targs.named_children:
            if x.type == "comment":
                continue
            k = self.peek_const(x) if x.type != "type_descriptor" else None
            parts.append(str(k) if k is not None else self.text(x).replace(" ", ""))
        return "<" + ",".join(parts) + ">"

    def _template_env(self, f: FunctionDef, targs) -> dict:
        env: dict = {}
        given = [x for x in targs.named_children if x.type != "comment"] if targs is not None else []
        for i, (pname, kind, default) in enumerate(f.template_params):
            node = given[i] if i < len(given) else default
            if node is None:
                continue
            if kind == "type":
                env[pname] = self.type_of(node)
            else:
                k = self.peek_const(node)
                if k is not None:
                    env[pname] = AliasLV(V(Imm(k), INT))
        return env

    def _field_initializers(self, f: FunctionDef, this) -> None:
        """A constructor's member initializer list (``: addr(0), n(cols)``)."""
        for c in f.node.named_children:
            if c.type != "field_initializer_list":
                continue
            for init in c.named_children:
                if init.type != "field_initializer":
                    continue
                fld = next((x for x in init.named_children if x.type == "field_identifier"), None)
                args = next((x for x in init.named_children if x.type in ("argument_list", "initializer_list")),
                            None)
                if fld is None or args is None:
                    continue
                lv = self.member(this, self.text(fld))
                kids = [x for x in args.named_children if x.type != "comment"]
                if lv is not None and len(kids) == 1:
                    self.cur_span = self.span(init)
                    self.write(lv, self.value(kids[0]))


def _same_size_scalars(a: CType | None, b: CType | None) -> bool:
    """``a`` and ``b`` are integer or floating-point types of one width: ``*reinterpret_cast<uint32_t*>(&f[i])`` of
    a ``float f[]`` names the same 32-bit register as ``f[i]`` (an asm output bound so is read back as the float)."""
    return a is not None and b is not None and a.kind in ("int", "float") and b.kind in ("int", "float") \
        and a.bits == b.bits


# ------------------------------------------------------------------------------------------------ intrinsics


def _i_syncthreads(lw: CallsMixin, args, n) -> V:
    for a in args:
        lw.value(a, discard=True)
    lw.emit("bar.sync", [Imm(0)])
    return V(None, VOID)


def _i_syncwarp(lw: CallsMixin, args, n) -> V:
    mask = lw.value(args[0]) if args else V(Imm(-1), UINT)
    lw.emit("bar.warp.sync", [mask.op if mask.op is not None else Imm(-1)])
    return V(None, VOID)


def _i_fence(kind: str):
    def h(lw: CallsMixin, args, n) -> V:
        lw.emit(f"membar.{kind}", [])
        return V(None, VOID)
    return h


def _i_shfl(mode: str):
    def h(lw: CallsMixin, args, n) -> V:
        vals = [lw.value(a) for a in args]
        if len(vals) < 3:
            return lw.opaque(lw.text(n), UINT)
        mask, src, lane = vals[0], vals[1], vals[2]
        t = src.ty if src.ty.kind in ("int", "float") else UINT
        srcv = lw.as_int(src)
        if srcv.op is None:
            srcv = lw.opaque(lw.text(args[1]), t)
        lanev = lane if lane.op is not None else lw.opaque("lane", INT)
        d = lw.reg()
        p = lw.reg("p")
        clamp = Imm(31) if mode != "up" else Imm(0)
        lw.emit(f"shfl.sync.{mode}.b32", [RegPair(d, p), lw.materialize(srcv).op, lanev.op, clamp,
                                           mask.op if mask.op is not None else Imm(-1)])
        tx = None
        if mode == "idx" and lane.const is not None and srcv.tx is not None:
            if is_table(srcv.tx):
                tab = srcv.tx[1]
                tx = ("table", tuple(tab[min((i & ~31) + lane.const, len(tab) - 1)] for i in range(len(tab))))
            else:
                tx = ("shfl", srcv.tx, lane.const)
        return V(d, t, tx=tx)
    return h


def _i_cvta(lw: CallsMixin, args, n) -> V:
    v = lw.value(args[0]) if args else lw.opaque("cvta", U64)
    if v.op is None or type(v.op) in (Sym, Imm):
        return V(v.op, U64, v.ref)
    r = lw.reg("rd")
    lw.emit("cvta.to.shared.u64", [r, v.op])
    return V(r, U64)


def _i_cvta_generic(lw: CallsMixin, args, n) -> V:
    v = lw.value(args[0]) if args else lw.opaque("cvta", U64)
    if v.op is None or type(v.op) in (Sym, Imm):
        return V(v.op, ptr_to(UNKNOWN), v.ref)
    r = lw.reg("rd")
    lw.emit("cvta.shared.u64", [r, v.op])
    return V(r, ptr_to(UNKNOWN))


def _i_bitcast(t: CType):
    def h(lw: CallsMixin, args, n) -> V:
        v = lw.value(args[0]) if args else lw.opaque("bitcast", t)
        if v.op is None or type(v.op) is not Reg:
            return V(v.op, t) if v.op is not None else lw.opaque(lw.text(n), t)
        r = lw.reg()
        lw.emit(f"mov.b{t.bits}", [r, v.op])
        return V(r, t)
    return h


def _i_minmax(name: str):
    def h(lw: CallsMixin, args, n) -> V:
        vals = [lw.value(a) for a in args]
        if len(vals) != 2:
            return lw.opaque(lw.text(n), UNKNOWN)
        a, b = vals
        t = common(a.ty if a.ty.kind in ("int", "float") else INT, b.ty if b.ty.kind in ("int", "float") else INT)
        if a.const is not None and b.const is not None:
            x, y = wrap(a.const, t), wrap(b.const, t)
            return V(Imm(min(x, y) if name == "min" else max(x, y)), t)
        if a.op is None or b.op is None:
            return lw.opaque(lw.text(n), t)
        r = lw.reg()
        lw.emit(f"{name}.{type_suffix(t)}", [r, lw.materialize(a).op, lw.materialize(b).op])
        return V(r, t)
    return h


def _i_elect(lw: CallsMixin, args, n) -> V:
    for a in args:
        lw.value(a, discard=True)
    r = lw.reg()
    p = lw.reg("p")
    lw.emit("elect.sync", [RegPair(r, p), Imm(-1)])
    return V(p, BOOL, tx=("elect",))


def _i_tid_expr(kind: str):
    def h(lw: CallsMixin, args, n) -> V:
        tid = V(Reg("%tid.x"), UINT, tx=("x",))
        if kind == "warp":
            return lw.binop("/", tid, V(Imm(32), UINT))
        if kind == "lane":
            return lw.binop("%", tid, V(Imm(32), UINT))
        if kind == "warpgroup":
            return lw.binop("/", tid, V(Imm(128), UINT))
        w = lw.binop("/", tid, V(Imm(32 if kind == "warp_sync" else 128), UINT))
        d = lw.reg()
        p = lw.reg("p")
        lw.emit("shfl.sync.idx.b32", [RegPair(d, p), w.op, Imm(0), Imm(31), Imm(-1)])
        return V(d, UINT, tx=("shfl", w.tx, 0) if w.tx is not None and not is_table(w.tx) else None)
    return h


def _i_sreg(name: str):
    def h(lw: CallsMixin, args, n) -> V:
        return V(Reg(name), UINT)
    return h


def _i_cluster(opcodes: tuple[str, ...]):
    def h(lw: CallsMixin, args, n) -> V:
        for op in opcodes:
            lw.emit(op, [])
        return V(None, VOID)
    return h


def _i_trap(lw: CallsMixin, args, n) -> V:
    lw.emit("trap", [])
    return V(None, VOID)


def _i_nanosleep(lw: CallsMixin, args, n) -> V:
    v = lw.value(args[0]) if args else V(Imm(0), UINT)
    lw.emit("nanosleep.u32", [v.op if v.op is not None else Imm(0)])
    return V(None, VOID)


def _i_atomic(op: str):
    def h(lw: CallsMixin, args, n) -> V:
        vals = [lw.value(a) for a in args]
        if not vals or vals[0].op is None and vals[0].ref is None:
            return lw.opaque(lw.text(n), UINT)
        lv = lw.deref(vals[0])
        if not isinstance(lv, MemLV):
            return lw.opaque(lw.text(n), UINT)
        r = lw.reg()
        ops = [r, lw._addr_operand(lv.addr)] + [v.op if v.op is not None else Imm(0) for v in vals[1:]]
        sp = f".{lv.space}" if lv.space else ""
        width = type_bits(lv.ty) if op in ("and", "or", "xor", "exch", "cas") else type_suffix(lv.ty)
        lw.emit(f"atom{sp}.{op}.{width}", ops)
        return V(r, lv.ty)
    return h


def _i_ldg(lw: CallsMixin, args, n) -> V:
    v = lw.value(args[0]) if args else lw.opaque("ldg", ptr_to(UINT))
    lv = lw.deref(v)
    if isinstance(lv, MemLV):
        r = lw.reg()
        lw.emit(f"ld.global.nc.{type_suffix(lv.ty)}", [r, lw._addr_operand(lv.addr)])
        return V(r, lv.ty)
    return lw.read(lv)


def _i_group(group: str):
    def h(lw: CallsMixin, args, n) -> V:
        for a in args:
            lw.value(a, discard=True)
        return V(None, CType("cg", 0, False, group))
    return h


def _i_ignore(lw: CallsMixin, args, n) -> V:
    for a in args:
        lw.value(a, discard=True)
    return V(None, VOID)


#: Functions of the toolkit and the standard library that do not reach tcgen05 (math, conversions, vector
#: constructors); with the ``__`` intrinsics and the namespaces of ``_HARMLESS_NAMESPACES``.  A call of any other
#: function whose body is not in the translation unit is reported (TM901).
_MATH = frozenset(
    f"{b}{s}" for b in (
        "sqrt", "rsqrt", "cbrt", "rcbrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow",
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "sincos", "fabs", "fmin",
        "fmax", "fma", "floor", "ceil", "round", "rint", "lrint", "llrint", "lround", "llround", "trunc",
        "nearbyint", "fmod", "remainder", "copysign", "erf", "erfc", "erfinv", "hypot", "ldexp", "frexp", "modf",
        "fdim", "nan", "norm3d", "rnorm", "normcdf", "isnan", "isinf", "isfinite", "signbit", "logb", "ilogb",
        "scalbn", "tgamma", "lgamma", "j0", "j1", "y0", "y1", "saturate", "fdivide", "exp2", "sinpi", "cospi")
    for s in ("", "f")) | {"abs", "labs", "llabs", "min", "max", "printf", "memcpy", "memset", "assert",
                            "static_assert", "sizeof", "alignof", "decltype", "dim3", "clock", "clock64"}
_HARMLESS_NAMESPACES = ("std::", "cuda::std::", "::std::", "::cuda::std::", "thrust::", "nvcuda::")
#: ... except anything named after Tensor Memory.  (Not harmless: the rest of libcu++, whose ``cuda::ptx::``
#: wrappers issue tcgen05 and whose ``cuda::barrier`` waits order TMEM accesses, cooperative groups' free functions
#: and CUB's block primitives, which synchronise: a rule would miss their ordering.)
_TMEM_NAMES = re.compile(r"tcgen05|tmem", re.I)
#: The CUDA runtime's device functions (``cudaGridDependencySynchronize``, ``cudaTriggerProgrammaticLaunch
#: Completion``) and the atomics the intrinsics table does not model (``atomicAdd_block``, ``atomicInc``).
_RUNTIME = re.compile(r"cuda[A-Z]\w*|atomic[A-Z]\w*")
_VECTOR_MAKE = re.compile(r"make_(u?(char|short|int|long|longlong)|float|double|half|bfloat16|cudaExtent|"
                          r"cudaPitchedPtr|cudaPos)[1-4]?")


def _harmless(name: str) -> bool:
    """Whether a call of ``name`` (qualified as written; ``Type::method`` for methods) whose body source mode
    cannot see is known not to reach tcgen05: the toolkit's math and conversion functions and ``__`` intrinsics,
    vector constructors, and the standard library and Thrust."""
    name = name.replace(" ", "")
    if _TMEM_NAMES.search(name):
        return False
    if name.startswith(_HARMLESS_NAMESPACES):
        return True
    short = name.rsplit("::", 1)[-1].split("<", 1)[0]
    if "::" in name and name.split("::", 1)[0] in ("float2", "float4", "int2", "int4", "uint2", "uint4", "dim3",
                                                   "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162"):
        return True
    return (short.startswith("__") or short in _MATH or bool(_VECTOR_MAKE.fullmatch(short))
            or bool(_RUNTIME.fullmatch(short)))


_INTRINSICS = {
    "__syncthreads": _i_syncthreads,
    "__syncthreads_count": _i_syncthreads,
    "__syncthreads_and": _i_syncthreads,
    "__syncthreads_or": _i_syncthreads,
    "__syncwarp": _i_syncwarp,
    "__threadfence": _i_fence("gl"),
    "__threadfence_block": _i_fence("cta"),
    "__threadfence_system": _i_fence("sys"),
    "__shfl_sync": _i_shfl("idx"),
    "__shfl_xor_sync": _i_shfl("bfly"),
    "__shfl_down_sync": _i_shfl("down"),
    "__shfl_up_sync": _i_shfl("up"),
    "__cvta_generic_to_shared": _i_cvta,
    "cast_smem_ptr_to_uint": _i_cvta,
    "__cvta_shared_to_generic": _i_cvta_generic,
    "__uint_as_float": _i_bitcast(FLOAT),
    "__int_as_float": _i_bitcast(FLOAT),
    "__float_as_uint": _i_bitcast(UINT),
    "__float_as_int": _i_bitcast(INT),
    "min": _i_minmax("min"),
    "max": _i_minmax("max"),
    "umin": _i_minmax("min"),
    "umax": _i_minmax("max"),
    "elect_one_sync": _i_elect,
    "canonical_warp_idx_sync": _i_tid_expr("warp_sync"),
    "canonical_warp_idx": _i_tid_expr("warp"),
    "canonical_lane_idx": _i_tid_expr("lane"),
    "canonical_warp_group_idx": _i_tid_expr("warpgroup_sync"),
    "warpid": _i_tid_expr("warp"),
    "laneid": _i_tid_expr("lane"),
    "warpgroupid": _i_tid_expr("warpgroup"),
    "block_rank_in_cluster": _i_sreg("%cluster_ctarank"),
    "cluster_sync": _i_cluster(("barrier.cluster.arrive.aligned", "barrier.cluster.wait.aligned")),
    "cluster_arrive": _i_cluster(("barrier.cluster.arrive.aligned",)),
    "cluster_arrive_relaxed": _i_cluster(("barrier.cluster.arrive.relaxed.aligned",)),
    "cluster_wait": _i_cluster(("barrier.cluster.wait.aligned",)),
    "__trap": _i_trap,
    "__nanosleep": _i_nanosleep,
    "atomicAdd": _i_atomic("add"),
    "atomicSub": _i_atomic("add"),
    "atomicOr": _i_atomic("or"),
    "atomicAnd": _i_atomic("and"),
    "atomicXor": _i_atomic("xor"),
    "atomicExch": _i_atomic("exch"),
    "atomicCAS": _i_atomic("cas"),
    "atomicMax": _i_atomic("max"),
    "atomicMin": _i_atomic("min"),
    "__ldg": _i_ldg,
    "this_cluster": _i_group("cluster"),
    "this_thread_block": _i_group("block"),
    "this_grid": _i_group("grid"),
    "assert": _i_ignore,
    "printf": _i_ignore,
    "__builtin_assume": _i_ignore,
    "__assume": _i_ignore,
}
