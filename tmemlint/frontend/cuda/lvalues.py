"""Lvalues: names, fields, elements and dereferences as registers (locals), aggregates, memory in a state space
or opaque objects; their addresses, reads and writes.  A mixin of ``lower.Lowering``."""

from __future__ import annotations

from tmemlint.frontend.cuda.common import SPECIAL_NAMES, AggLV, AliasLV, MemLV, RegLV, UnknownLV, V, type_suffix
from tmemlint.frontend.cuda.cxx_types import INT, UINT, UNKNOWN, CType, StructInfo, layout, ptr_to, size_of
from tmemlint.ir import Address, Imm, Reg, Sym, Vec


class LvaluesMixin:
    """Lvalues and memory."""

    # ---- lvalues ------------------------------------------------------------------------------------------------
    def lvalue(self, n):
        """The object expression ``n`` denotes."""
        t = n.type
        if t == "identifier":
            name = self.text(n)
            lv = self.lookup(name)
            return lv if lv is not None else UnknownLV(name)
        if t == "parenthesized_expression":
            kids = [c for c in n.named_children if c.type != "comment"]
            return self.lvalue(kids[-1])
        if t == "field_expression":
            return self._field_lv(n)
        if t == "subscript_expression":
            base = n.child_by_field_name("argument")
            idx_node = n.child_by_field_name("index")
            if idx_node is None:
                ind = n.child_by_field_name("indices")
                kids = [c for c in ind.named_children if c.type != "comment"] if ind is not None else []
                idx_node = kids[0] if kids else None
            blv = self.lvalue(base)
            idx = self.value(idx_node) if idx_node is not None else V(Imm(0), INT)
            if blv.ty.kind == "array":
                return self.index_lv(blv, idx)
            return self.deref(self.ptr_add(self.read(blv), idx))
        if t == "pointer_expression":
            op = n.children[0].type
            arg = n.child_by_field_name("argument")
            if op == "*":
                return self.deref(self.value(arg))
            return AliasLV(self.address(self.lvalue(arg)))
        if t == "qualified_identifier":
            name = self.text(n).replace(" ", "")
            lv = self.global_lv(name) or self.global_lv(name.rsplit("::", 1)[-1])
            return lv if lv is not None else UnknownLV(name)
        if t == "call_expression":
            r = self.call(n, want_lvalue=True)
            if isinstance(r, V):
                return AliasLV(r)
            return r
        if t == "this":
            fr = self.frame
            if fr.this is None:
                return UnknownLV("this")
            return AliasLV(V(None, ptr_to(fr.this.ty), (fr.this, None)))
        if t == "cast_expression" or t == "conditional_expression" or t == "assignment_expression":
            return AliasLV(self.value(n))
        return AliasLV(self.value(n))

    def _field_lv(self, n):
        arg = n.child_by_field_name("argument")
        fname = self.text(n.child_by_field_name("field"))
        op = self.text(n.child_by_field_name("operator"))
        if arg.type == "identifier" and op == ".":
            base = self.text(arg)
            if base in SPECIAL_NAMES and self.lookup(base) is None:
                return AliasLV(self._special(base, fname))
        if arg.type == "this":
            fr = self.frame
            if fr.this is None:
                return UnknownLV(self.text(n))
            lv = self.member(fr.this, fname)
            return lv if lv is not None else UnknownLV(self.text(n))
        if op == "->":
            obj = self.deref(self.value(arg))
        else:
            obj = self.lvalue(arg)
        lv = self.member(obj, fname)
        return lv if lv is not None else UnknownLV(self.text(n))

    def _special(self, base: str, field: str) -> V:
        prefix = SPECIAL_NAMES[base]
        if field in ("x", "y", "z"):
            return V(Reg(f"{prefix}.{field}"), UINT, tx=("x",) if prefix == "%tid" and field == "x" else None)
        return self.opaque(f"{base}.{field}", UINT)

    def _struct(self, ty: CType) -> StructInfo | None:
        if ty.kind != "struct":
            return None
        return self.P.structs.get(ty.name)

    def member(self, obj, fname: str):
        """Field ``fname`` of object ``obj`` (an lvalue), or None when ``obj`` has no such field."""
        s = self._struct(obj.ty)
        if s is None:
            if isinstance(obj, UnknownLV):
                return UnknownLV(f"{obj.text}.{fname}")
            return None
        ft = s.field_type(fname)
        if ft is None:
            return None
        if isinstance(obj, AggLV):
            key = f"{obj.key}.{fname}"
            return AggLV(key, ft) if ft.kind in ("array", "struct") else RegLV(key, ft)
        if isinstance(obj, MemLV):
            layout(s, self.P.structs)
            if s.offsets is not None:
                return MemLV(self.byte_add(obj.addr, s.offsets[fname], ptr_to(ft)), ft, obj.space)
            a = obj.addr
            if type(a.op) is Sym:
                return MemLV(V(Sym(f"{a.op.name}+{a.op.offset}.{fname}"), ptr_to(ft)), ft, obj.space)
            return UnknownLV(fname, ft)
        if isinstance(obj, AliasLV):
            return UnknownLV(fname, ft)
        return UnknownLV(fname, ft)

    def index_lv(self, lv, idx: V):
        """Element ``idx`` of array lvalue ``lv``."""
        elem = lv.ty.elem or UNKNOWN
        if isinstance(lv, AggLV):
            if idx.const is None:
                return UnknownLV(f"{lv.key}[?]", elem)
            key = f"{lv.key}[{idx.const}]"
            return AggLV(key, elem) if elem.kind in ("array", "struct") else RegLV(key, elem)
        if isinstance(lv, MemLV):
            return MemLV(self.ptr_add(V(lv.addr.op, ptr_to(elem), lv.addr.ref), idx), elem, lv.space)
        return UnknownLV("element", elem)

    def deref(self, p: V):
        """The object pointer value ``p`` points to."""
        elem = p.ty.elem if p.ty.kind in ("ptr", "array") and p.ty.elem is not None else UNKNOWN
        if p.ref is not None:
            base, i = p.ref
            if i is None or i == 0 and not isinstance(base, AggLV):
                return base
            if isinstance(base, AggLV) and base.ty.kind == "array":
                return self.index_lv(base, V(Imm(i), INT))
            if i == 0:
                return base
            return UnknownLV("pointee", elem)
        if p.op is None:
            return UnknownLV("pointee", elem)
        return MemLV(p, elem, self._space_of(p))

    def _space_of(self, p: V) -> str:
        if type(p.op) is Sym:
            name = p.op.name.split("+", 1)[0]
            var = self.variables.get(name)
            if var is not None:
                return var.space
        return ""

    def address(self, lv) -> V:
        """``&lv``."""
        if isinstance(lv, MemLV):
            return V(lv.addr.op, ptr_to(lv.ty), lv.addr.ref)
        if isinstance(lv, (RegLV, AggLV)):
            return V(None, ptr_to(lv.ty), (lv, None))
        if isinstance(lv, AliasLV) and lv.v.ty.kind != "unknown":
            return V(None, ptr_to(lv.ty), (lv, None))
        return self.opaque(f"&{getattr(lv, 'text', '?')}", ptr_to(lv.ty))

    def read(self, lv) -> V:
        """The value of lvalue ``lv`` (arrays decay to a pointer to their first element)."""
        if isinstance(lv, AliasLV):
            return lv.v
        if isinstance(lv, RegLV):
            return V(self.cell(lv), lv.ty)
        if isinstance(lv, AggLV):
            if lv.ty.kind == "array":
                return V(None, ptr_to(lv.ty.elem or UNKNOWN), (lv, 0))
            return V(None, lv.ty, (lv, None))
        if isinstance(lv, MemLV):
            if lv.ty.kind == "array":
                return V(lv.addr.op, ptr_to(lv.ty.elem or UNKNOWN), lv.addr.ref)
            if lv.ty.kind == "struct":
                return V(None, lv.ty, (lv, None))
            r = self.reg("p" if lv.ty.kind == "bool" else "r")
            sp = f".{lv.space}" if lv.space else ""
            self.emit(f"ld{sp}.{type_suffix(lv.ty)}", [r, self._addr_operand(lv.addr)])
            return V(r, lv.ty)
        if isinstance(lv, UnknownLV):
            return self.opaque(lv.text, lv.ty)
        return self.opaque("?", UNKNOWN)

    def write(self, lv, v: V) -> None:
        """Store ``v`` into ``lv``."""
        if isinstance(lv, RegLV):
            v = self.convert(v, lv.ty)
            if v.op is None:
                v = self.opaque(f"value of {lv.key}", lv.ty)
            reg = self.cell(lv)
            self._detach(reg)
            self.emit(f"mov.{type_suffix(lv.ty)}", [reg, v.op])
        elif isinstance(lv, MemLV):
            if lv.ty.kind == "struct":
                self._store_vector(lv, v)
                return
            if lv.ty.kind == "array":
                return
            v = self.convert(v, lv.ty)
            src = v.op if v.op is not None else self.opaque("stored value", lv.ty).op
            sp = f".{lv.space}" if lv.space else ""
            self.emit(f"st{sp}.{type_suffix(lv.ty)}", [self._addr_operand(lv.addr), src])
        elif isinstance(lv, AliasLV) and lv.scope is not None and lv.name:
            c = RegLV(f"{lv.name}#{self.frame.uid}.w{self.nreg}", lv.ty)
            lv.scope[lv.name] = c
            self.write(c, v)
        elif isinstance(lv, AggLV) and v.ref is not None and isinstance(v.ref[0], AggLV):
            self._copy_agg(v.ref[0], lv)

    def _store_vector(self, lv: MemLV, v: V) -> None:
        """A struct of 4, 8 or 16 bytes stored to memory (``sA[i] = A[j]`` of ``uint4``/``float4``/``int2``...): as
        nvcc does, one vector load of the source when it is in memory and one vector store of 32-bit words
        (``ld.v4.u32``, ``st.shared.v4.u32``), so that the analyses see the store into shared memory (a producer's
        tile, TM309) and the load.  Other structs are not stored (their copies stay invisible, as before)."""
        size = size_of(lv.ty, self.P.structs)
        if size not in (4, 8, 16):
            return
        n = size // 4
        vec = f".v{n}" if n > 1 else ""
        regs = [self.reg("r") for _ in range(n)]
        src = v.ref[0] if v.ref is not None and isinstance(v.ref[0], MemLV) and v.ref[1] is None else None
        if src is not None and size_of(src.ty, self.P.structs) == size:
            sp = f".{src.space}" if src.space else ""
            self.emit(f"ld{sp}{vec}.u32", [Vec(tuple(regs)) if n > 1 else regs[0], self._addr_operand(src.addr)])
        else:
            regs = [self.opaque("stored value", UINT).op for _ in range(n)]
        sp = f".{lv.space}" if lv.space else ""
        self.emit(f"st{sp}{vec}.u32", [self._addr_operand(lv.addr), Vec(tuple(regs)) if n > 1 else regs[0]])

    def _addr_operand(self, a: V) -> Address:
        op = a.op
        if type(op) is Sym:
            return Address(Sym(op.name), op.offset)
        if type(op) is Reg:
            return Address(op)
        if type(op) is Imm:
            return Address(None, op.value)
        return Address(self.opaque("address").op)
