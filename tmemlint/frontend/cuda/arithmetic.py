"""Arithmetic on lowered values: conversions, predicates, pointer arithmetic, comparisons, binary operators, and
functions of the thread index (``threadIdx.x / 32`` as a warp predicate, tables over the threads).  A mixin of
``lower.Lowering``."""

from __future__ import annotations

from tmemlint.threadexpr import eval_tid
from tmemlint.frontend.cuda.common import (
    ARITH_OPS,
    CMP_OPS,
    CMP_SYMBOL,
    NEGATED,
    PY_BIN,
    PY_CMP,
    SWAPPED,
    AggLV,
    AliasLV,
    RegLV,
    V,
    cyclic_run,
    is_table,
    type_bits,
    type_suffix,
)
from tmemlint.frontend.cuda.cxx_types import (
    BOOL,
    INT,
    U64,
    UINT,
    UNKNOWN,
    CType,
    common,
    fold_binary,
    promote,
    ptr_to,
    size_of,
    wrap,
)
from tmemlint.ir import FloatImm, Imm, Reg, Sym


class ArithmeticMixin:
    """Conversions, comparisons, operators and thread-index functions."""

    # ---- arithmetic ---------------------------------------------------------------------------------------------
    def convert(self, v: V, t: CType, explicit: bool = False) -> V:
        """``v`` converted to type ``t`` (constants folded; bool ↔ integer via setp/selp)."""
        if t.kind in ("unknown", "void") or v.ty is t:
            return v
        if t.kind == "bool":
            return self.as_pred(v)
        if v.ty.kind == "bool" and t.kind in ("int", "float"):
            v = self.as_int(v)
            return V(v.op, t) if v.const is None else V(Imm(v.const), t)
        if type(v.op) is Imm:
            if t.kind == "int":
                return V(Imm(wrap(v.op.value, t)), t)
            if t.kind == "ptr":
                return V(v.op, t)
            if t.kind == "float":
                return V(FloatImm(repr(float(v.op.value))), t)
        if t.kind == "ptr":
            if v.ref is not None:
                base, i = v.ref
                if (isinstance(base, AggLV) and t.elem is not None and base.ty.kind == "array"
                        and base.ty.elem == t.elem):
                    return V(None, t, v.ref)
                if isinstance(base, (RegLV, AliasLV)) and i is None and base.ty == t.elem:
                    return V(None, t, v.ref)
                return V(None, t, None) if v.op is None else V(v.op, t)
            return V(v.op, t)
        if t.kind == "int" and v.ty.kind == "int" and type(v.op) is Reg and t.bits < v.ty.bits:
            r = self.reg()
            self.emit(f"cvt.{type_suffix(t)}.{type_suffix(v.ty)}", [r, v.op])
            return V(r, t, tx=v.tx)
        if t.kind == "struct":
            return V(v.op, t, v.ref)
        return V(v.op, t, v.ref if t.kind == "ptr" else None, v.tx if t.kind == "int" else None)

    def as_pred(self, v: V) -> V:
        """``v != 0`` as a predicate (a bool V: a predicate register or a constant 0/1)."""
        if v.ty.kind == "bool":
            if v.const is not None:
                return V(Imm(1 if v.const else 0), BOOL)
            if type(v.op) is Reg:
                return v
        if v.const is not None:
            return V(Imm(1 if v.const else 0), BOOL)
        if v.ref is not None:
            return V(Imm(1), BOOL)
        if type(v.op) is Sym:
            return V(Imm(1), BOOL)
        if v.op is None or type(v.op) is FloatImm:
            return self.as_pred(self.opaque("pred", INT)) if v.op is None else V(Imm(1), BOOL)
        tx = self._tx_cmp("ne", v.tx, 0)
        got = self.tid_predicate(tx) if is_table(tx) else None
        if got is not None:
            return got
        r = self.reg("p")
        t = v.ty if v.ty.kind in ("int", "ptr", "float") else INT
        self.emit(f"setp.ne.{type_suffix(t)}", [r, v.op, Imm(0)])
        return V(r, BOOL, tx=tx)

    def as_int(self, v: V) -> V:
        """A bool ``v`` as an integer 0/1 (``selp``); other values unchanged."""
        if v.ty.kind != "bool":
            return v
        if v.const is not None:
            return V(Imm(v.const), INT)
        if type(v.op) is not Reg:
            return V(v.op, INT)
        r = self.reg()
        self.emit("selp.u32", [r, Imm(1), Imm(0), v.op])
        return V(r, INT, tx=v.tx)

    def materialize(self, v: V) -> V:
        """``v`` with a symbol operand moved into a register (a symbol address is not an arithmetic operand)."""
        if type(v.op) is Sym:
            r = self.reg("rd")
            self.emit("mov.u64", [r, v.op])
            return V(r, v.ty, v.ref)
        return v

    def byte_add(self, a: V, k: int, t: CType) -> V:
        """Address ``a`` plus ``k`` bytes, as type ``t``."""
        if k == 0:
            return V(a.op, t, a.ref)
        if type(a.op) is Sym:
            return V(Sym(a.op.name, a.op.offset + k), t)
        if type(a.op) is Imm:
            return V(Imm(a.op.value + k), t)
        if type(a.op) is Reg:
            r = self.reg("rd")
            self.emit("add.s64", [r, a.op, Imm(k)])
            return V(r, t)
        return V(None, t)

    def ptr_add(self, p: V, idx: V, negate: bool = False) -> V:
        """Pointer ``p`` plus ``idx`` elements."""
        elem = p.ty.elem if p.ty.kind in ("ptr", "array") and p.ty.elem is not None else UNKNOWN
        t = ptr_to(elem)
        if p.ref is not None:
            base, i = p.ref
            if idx.const is not None and i is not None:
                return V(None, t, (base, i + (-idx.const if negate else idx.const)))
            return V(None, t, None)
        size = size_of(elem, self.P.structs)
        if idx.const is not None:
            k = idx.const * (size if size is not None else 1)
            if size is None and type(p.op) is Sym:
                return V(Sym(f"{p.op.name}+{p.op.offset}[{idx.const}]"), t)
            return self.byte_add(V(p.op, t), -k if negate else k, t)
        if p.op is None or size is None:
            return V(None, t)
        base = self.materialize(p)
        i = self.as_int(idx)
        if i.op is None:
            return V(None, t)
        r = self.reg("rd")
        self.emit("mul.wide.u32" if (i.ty.kind == "int" and i.ty.bits <= 32) else "mul.lo.s64", [r, i.op, Imm(size)])
        out = self.reg("rd")
        self.emit("sub.s64" if negate else "add.s64", [out, base.op, r])
        return V(out, t)

    def compare(self, op: str, a: V, b: V) -> V:
        """``a op b`` as a predicate."""
        if a.const is not None and b.const is not None:
            try:
                v, _t = fold_binary(op, a.const, a.ty if a.ty.kind != "unknown" else INT, b.const,
                                    b.ty if b.ty.kind != "unknown" else INT)
                return V(Imm(v), BOOL)
            except (ValueError, ZeroDivisionError):
                pass
        if a.ty.kind == "bool" and b.ty.kind != "bool" and b.const is not None and op in ("==", "!="):
            p = a
            if (b.const == 0) == (op == "=="):
                return self._not(p)
            return p
        a, b = self.as_int(a), self.as_int(b)
        if a.op is None or b.op is None:
            return self.as_pred(self.opaque(f"cmp {op}", INT))
        if a.tx is not None and b.tx is not None:
            tx = self.tid_combine(lambda x, y: PY_CMP[op](x, y), a, b)
        elif a.tx is not None and b.const is not None:
            tx = self._tx_cmp(CMP_OPS[op], a.tx, b.const)
        elif b.tx is not None and a.const is not None:
            tx = self._tx_cmp(SWAPPED[CMP_OPS[op]], b.tx, a.const)
        else:
            tx = None
        if is_table(tx):
            got = self.tid_predicate(tx)
            if got is not None:
                return got
        a, b = self.materialize(a), self.materialize(b)
        t = common(a.ty, b.ty) if a.ty.kind in ("int", "float") and b.ty.kind in ("int", "float") else (
            U64 if "ptr" in (a.ty.kind, b.ty.kind) else INT)
        r = self.reg("p")
        self.emit(f"setp.{CMP_OPS[op]}.{type_suffix(t)}", [r, a.op, b.op])
        return V(r, BOOL, tx=tx)

    def _not(self, p: V) -> V:
        if p.const is not None:
            return V(Imm(0 if p.const else 1), BOOL)
        tx = self.tid_combine(lambda x: 0 if x else 1, p) if p.tx is not None else None
        if tx is not None and not is_table(p.tx) and p.tx[0] == "cmp":
            tx = ("cmp", NEGATED[p.tx[1]], p.tx[2], p.tx[3])
        r = self.reg("p")
        self.emit("not.pred", [r, p.op])
        return V(r, BOOL, tx=tx)

    # ---- functions of the thread index ----------------------------------------------------------------------
    def _tx_cmp(self, cmp: str, tx, k: int):
        """The thread function ``tx cmp k``."""
        if tx is None:
            return None
        if is_table(tx):
            f = PY_CMP[CMP_SYMBOL[cmp]]
            return ("table", tuple(1 if f(x, k) else 0 for x in tx[1]))
        return ("cmp", cmp, tx, k)

    def tid_table(self, v: V) -> tuple | None:
        """The value of ``v`` for every thread of the CTA (constants included), or None."""
        if v.const is not None:
            return (v.const,) * self.nthreads
        tx = v.tx
        if tx is None:
            return None
        if is_table(tx):
            return tx[1]
        try:
            return tuple(eval_tid(tx, range(self.nthreads)))
        except (KeyError, TypeError, ValueError, ZeroDivisionError, RecursionError):
            return None

    def tid_combine(self, f, *vals: V):
        """``("table", …)`` of ``f`` applied thread by thread to ``vals`` (functions of the thread index or
        constants), or None when one of them is not such a function."""
        if all(v.tx is None for v in vals):
            return None
        tables = [self.tid_table(v) for v in vals]
        if any(t is None for t in tables):
            return None
        try:
            return ("table", tuple(int(f(*xs)) for xs in zip(*tables)))
        except (TypeError, ValueError, ZeroDivisionError):
            return None

    def tid_predicate(self, tx) -> V | None:
        """A predicate equal to thread table ``tx``, built as one comparison the value analysis reads as a thread
        predicate: on the thread index, its lane or its warp, over a (cyclic) run of values.  None when the
        table has no such form."""
        if tx is None:
            return None
        vals = tx[1] if is_table(tx) else self.tid_table(V(None, BOOL, tx=tx))
        if vals is None:
            return None
        if all(vals):
            return V(Imm(1), BOOL)
        if not any(vals):
            return V(Imm(0), BOOL)
        n = len(vals)
        forms = []
        if n % 32 == 0 and all(vals[t] == vals[t - t % 32] for t in range(n)):
            forms.append((("shr", ("x",), 5), [vals[w * 32] for w in range(n // 32)]))
        if n >= 32 and all(vals[t] == vals[t % 32] for t in range(n)):
            forms.append((("and", ("x",), 31), list(vals[:32])))
        forms.append((("x",), list(vals)))
        for expr, dom in forms:
            run = cyclic_run(dom)
            if run is None:
                continue
            lo, length = run
            m = len(dom)
            if lo == 0:
                cond = ("cmp", "le", expr, length - 1)
            elif lo + length == m:
                cond = ("cmp", "ge", expr, lo)
            else:
                cond = ("cmp", "le", ("rem", ("add", expr, m - lo), m), length - 1)
            return self._emit_tid_pred(cond)
        return None

    def _emit_tid_pred(self, cond) -> V:
        """Instructions computing thread predicate ``cond`` (``("cmp", c, e, k)``) from ``%tid.x``."""
        _tag, cmp, e, k = cond
        v = self._emit_tid_expr(e)
        r = self.reg("p")
        self.emit(f"setp.{cmp}.u32", [r, v.op, Imm(k)])
        return V(r, BOOL, tx=cond)

    def _emit_tid_expr(self, e) -> V:
        if e == ("x",):
            return V(Reg("%tid.x"), UINT, tx=e)
        name, inner, k = e
        a = self._emit_tid_expr(inner)
        r = self.reg()
        opcode = {"shr": "shr.u32", "and": "and.b32", "add": "add.u32", "rem": "rem.u32"}[name]
        self.emit(opcode, [r, a.op, Imm(k)])
        return V(r, UINT, tx=e)

    def binop(self, op: str, a: V, b: V) -> V:
        """``a op b`` for an arithmetic, bitwise, shift or comparison operator."""
        if op in CMP_OPS:
            return self.compare(op, a, b)
        ka, kb = a.ty.kind, b.ty.kind
        if op in ("+", "-") and ka in ("ptr", "array") and kb in ("int", "bool", "unknown") and b.ty.kind != "ptr":
            return self.ptr_add(V(a.op, a.ty if ka == "ptr" else ptr_to(a.ty.elem or UNKNOWN), a.ref), b,
                                negate=op == "-")
        if op == "+" and kb in ("ptr", "array") and ka in ("int", "bool"):
            return self.ptr_add(b, a)
        a, b = self.as_int(a), self.as_int(b)
        ta = a.ty if a.ty.kind in ("int", "float") else (U64 if a.ty.kind == "ptr" else INT)
        tb = b.ty if b.ty.kind in ("int", "float") else (U64 if b.ty.kind == "ptr" else INT)
        if a.const is not None and b.const is not None:
            try:
                v, t = fold_binary(op, a.const, ta, b.const, tb)
                return self.const_v(v, t)
            except (ValueError, ZeroDivisionError):
                return self.opaque(f"{a.op} {op} {b.op}", ta)
        t = promote(ta) if op in ("<<", ">>") else common(ta, tb)
        if a.op is None or b.op is None:
            return self.opaque(f"({op})", t)
        # identities
        if b.const is not None:
            k = b.const
            if k == 0 and op in ("+", "-", "|", "^", "<<", ">>"):
                return V(a.op, t, a.ref, a.tx)
            if k == 1 and op in ("*", "/"):
                return V(a.op, t, a.ref, a.tx)
            if k == 0 and op in ("*", "&"):
                return V(Imm(0), t)
            if t.kind == "int" and not t.signed and k > 0 and k & (k - 1) == 0 and op in ("/", "%", "*"):
                sh = k.bit_length() - 1
                if op == "/":
                    op, b = ">>", V(Imm(sh), INT)
                elif op == "%":
                    op, b = "&", V(Imm(k - 1), t)
        if a.const is not None and op in ("+", "*", "&", "|", "^"):
            if a.const == 0 and op in ("+", "|", "^"):
                return V(b.op, t, b.ref, b.tx)
            if a.const == 1 and op == "*":
                return V(b.op, t, b.ref, b.tx)
            if a.const == 0 and op in ("*", "&"):
                return V(Imm(0), t)
        a, b = self.materialize(a), self.materialize(b)
        name = ARITH_OPS[op]
        if t.kind == "float":
            suffix = type_suffix(t)
        elif op in ("&", "|", "^"):
            suffix = type_bits(t)
        elif op == "<<":
            suffix = type_bits(t)
        elif op == ">>":
            suffix = type_suffix(t)
        else:
            suffix = type_suffix(t)
        if op == "*" and t.kind == "int":
            name = "mul.lo"
        tx = None
        if t.kind == "int" and (a.tx is not None or b.tx is not None):
            base = ARITH_OPS[op]
            if b.const is not None and not is_table(a.tx):
                tx = (base, a.tx, b.const)
            elif a.const is not None and not is_table(b.tx) and op in ("+", "*", "&", "|", "^"):
                tx = (base, b.tx, a.const)
            else:
                tx = self.tid_combine(lambda x, y: PY_BIN[base](x, y), a, b)
        r = self.reg()
        self.emit(f"{name}.{suffix}", [r, a.op, b.op])
        return V(r, t, tx=tx)
