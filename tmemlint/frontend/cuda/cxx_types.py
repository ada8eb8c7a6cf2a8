"""C++ types, struct layouts and compile-time evaluation for source mode.

Only what kernels with inline-asm tcgen05 need: integer and floating types with their widths, pointers, arrays,
structs (layout by the usual natural-alignment rules, ``alignas``), CUDA vector types, and an interpreter for
``constexpr`` expressions and functions (loops included) with C++ integer semantics (promotion, the usual
arithmetic conversions, wrap-around of unsigned types).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Callable

from tmemlint.frontend.transformer import parse_int
from tmemlint.threadexpr import trunc_div, trunc_rem

Node = object  # a tree_sitter.Node


@dataclass(frozen=True, slots=True)
class CType:
    """A C++ type: ``kind`` is ``int``, ``bool``, ``float``, ``ptr``, ``array``, ``struct``, ``cg`` (a
    cooperative_groups object), ``void`` or ``unknown``; ``bits`` for int/float; ``name`` spells it (the struct
    name for structs); ``elem`` for ptr and array; ``count`` elements of an array (None: unknown, ``T x[]``);
    ``args`` the template arguments of a class template (ints and CTypes)."""

    kind: str
    bits: int = 0
    signed: bool = False
    name: str = ""
    elem: "CType | None" = None
    count: int | None = None
    args: tuple = ()

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "bool")

    @property
    def is_scalar(self) -> bool:
        return self.kind in ("int", "bool", "float", "ptr")

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        if self.kind == "ptr":
            return f"{self.elem!r}*"
        if self.kind == "array":
            return f"{self.elem!r}[{self.count}]"
        return self.name or self.kind


def int_t(bits: int, signed: bool, name: str = "") -> CType:
    """An integer type of ``bits`` bits."""
    return CType("int", bits, signed, name or f"{'int' if signed else 'uint'}{bits}_t")


INT = int_t(32, True, "int")
UINT = int_t(32, False, "unsigned")
I64 = int_t(64, True, "long long")
U64 = int_t(64, False, "unsigned long long")
BOOL = CType("bool", 8, False, "bool")
FLOAT = CType("float", 32, True, "float")
DOUBLE = CType("float", 64, True, "double")
VOID = CType("void", 0, False, "void")
UNKNOWN = CType("unknown", 0, False, "?")


def ptr_to(t: CType) -> CType:
    """Pointer to ``t``."""
    return CType("ptr", 64, False, "", t)


def array_of(t: CType, n: int | None) -> CType:
    """Array of ``n`` elements of ``t``."""
    return CType("array", 0, False, "", t, n)


_PRIMITIVES: dict[str, CType] = {}
for _names, _t in (
    (("bool",), BOOL),
    (("char", "signed char", "int8_t", "int8"), int_t(8, True)),
    (("unsigned char", "uint8_t", "uchar", "uint8"), int_t(8, False)),
    (("short", "short int", "signed short", "int16_t"), int_t(16, True)),
    (("unsigned short", "unsigned short int", "uint16_t", "ushort"), int_t(16, False)),
    (("int", "signed", "signed int", "int32_t"), INT),
    (("unsigned", "unsigned int", "uint32_t", "uint"), UINT),
    (("long", "long int", "signed long", "long long", "long long int", "signed long long", "int64_t", "ptrdiff_t",
      "intptr_t", "ssize_t", "index_t"), I64),
    (("unsigned long", "unsigned long int", "unsigned long long", "unsigned long long int", "uint64_t", "size_t",
      "uintptr_t"), U64),
    (("float",), FLOAT),
    (("double",), DOUBLE),
    (("void",), VOID),
    (("half", "__half", "__nv_bfloat16", "nv_bfloat16", "bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2"),
     CType("float", 16, True, "half")),
):
    for _n in _names:
        _PRIMITIVES[_n] = _t


def primitive(name: str) -> CType | None:
    """The type spelled ``name`` (``uint32_t``, ``unsigned long long``, ``std::size_t``), or None."""
    n = " ".join(name.replace("std::", "").replace("cute::", "").replace("cutlass::", "").split())
    return _PRIMITIVES.get(n)


@dataclass(slots=True)
class StructInfo:
    """A struct, class or union defined in the file: fields in order (``(name, type)``), static constexpr members
    (name → ``(initializer node, type)``), methods (name → function definitions), template parameters, and the
    layout (``offsets`` in bytes, ``size``, ``align``; None when a field's size is unknown; a union's members all
    at offset 0)."""

    name: str
    fields: list[tuple[str, CType]] = field(default_factory=list)
    statics: dict[str, Node] = field(default_factory=dict)
    methods: dict[str, list] = field(default_factory=dict)
    align_request: int | None = None
    template_params: list = field(default_factory=list)
    is_union: bool = False
    offsets: dict[str, int] | None = None
    size: int | None = None
    align: int = 1
    laid_out: bool = False

    def field_type(self, name: str) -> CType | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None


def _vector(name: str, elem: CType, n: int, align: int) -> StructInfo:
    s = StructInfo(name, [(c, elem) for c in "xyzw"[:n]])
    s.align_request = align
    return s


#: CUDA built-in vector types and opaque library types with a known size.
BUILTIN_STRUCTS: dict[str, StructInfo] = {}
for _base, _elem in (("char", int_t(8, True)), ("uchar", int_t(8, False)), ("short", int_t(16, True)),
                     ("ushort", int_t(16, False)), ("int", INT), ("uint", UINT), ("float", FLOAT),
                     ("longlong", I64), ("ulonglong", U64), ("double", DOUBLE), ("long", I64), ("ulong", U64)):
    for _n in (2, 3, 4):
        _sz = _elem.bits // 8
        _al = _sz * (_n if _n != 3 else 1)
        BUILTIN_STRUCTS[f"{_base}{_n}"] = _vector(f"{_base}{_n}", _elem, _n, min(_al, 16))
for _n in ("__half2", "half2", "__nv_bfloat162", "nv_bfloat162"):
    BUILTIN_STRUCTS[_n] = _vector(_n, CType("float", 16, True, "half"), 2, 4)
_tm = StructInfo("CUtensorMap", [("opaque", array_of(U64, 16))])
_tm.align_request = 64
BUILTIN_STRUCTS["CUtensorMap"] = _tm


def align_of(t: CType, structs: dict[str, StructInfo]) -> int | None:
    """Alignment of ``t`` in bytes, or None when unknown."""
    if t.kind in ("int", "float"):
        return max(1, t.bits // 8)
    if t.kind == "bool":
        return 1
    if t.kind == "ptr":
        return 8
    if t.kind == "array":
        return align_of(t.elem, structs) if t.elem else None
    if t.kind == "struct":
        s = structs.get(t.name)
        if s is None:
            return None
        layout(s, structs)
        return s.align if s.size is not None else None
    return None


def size_of(t: CType, structs: dict[str, StructInfo]) -> int | None:
    """Size of ``t`` in bytes, or None when unknown."""
    if t.kind in ("int", "float"):
        return max(1, t.bits // 8)
    if t.kind == "bool":
        return 1
    if t.kind == "ptr":
        return 8
    if t.kind == "array":
        if t.count is None or t.elem is None:
            return None
        e = size_of(t.elem, structs)
        return None if e is None else e * t.count
    if t.kind == "struct":
        s = structs.get(t.name)
        if s is None:
            return None
        layout(s, structs)
        return s.size
    return None


def layout(s: StructInfo, structs: dict[str, StructInfo], _depth: int = 0) -> None:
    """Compute ``s.offsets``, ``s.size`` and ``s.align`` (natural alignment, ``alignas`` on the struct)."""
    if s.laid_out or _depth > 32:
        return
    s.laid_out = True
    off = 0
    align = 1
    offsets: dict[str, int] = {}
    for name, t in s.fields:
        a = align_of(t, structs)
        sz = size_of(t, structs)
        if a is None or sz is None:
            s.offsets, s.size, s.align = None, None, 1
            return
        if s.is_union:  # every member at offset 0
            offsets[name] = 0
            off = max(off, sz)
        else:
            off = (off + a - 1) // a * a
            offsets[name] = off
            off += sz
        align = max(align, a)
    if s.align_request:
        align = max(align, s.align_request)
    s.offsets = offsets
    s.size = (off + align - 1) // align * align if off else 0
    s.align = align


# ------------------------------------------------------------------------------------------ integer semantics


def wrap(value: int, t: CType) -> int:
    """``value`` converted to integer type ``t`` (two's complement wrap-around; bool: 0/1)."""
    if t.kind == "bool":
        return 1 if value else 0
    if t.kind != "int" or not t.bits:
        return value
    mask = (1 << t.bits) - 1
    v = value & mask
    if t.signed and v >> (t.bits - 1):
        v -= 1 << t.bits
    return v


def promote(t: CType) -> CType:
    """Integer promotion: types narrower than int become int."""
    if t.kind == "bool" or (t.kind == "int" and t.bits < 32):
        return INT
    return t


def common(a: CType, b: CType) -> CType:
    """The usual arithmetic conversions of two arithmetic types."""
    if a.kind == "float" or b.kind == "float":
        if a.kind == "float" and b.kind == "float":
            return a if a.bits >= b.bits else b
        return a if a.kind == "float" else b
    a, b = promote(a), promote(b)
    if a.kind != "int" or b.kind != "int":
        return a if a.kind == "int" else b
    bits = max(a.bits, b.bits)
    unsigned = (not a.signed and a.bits == bits) or (not b.signed and b.bits == bits)
    return int_t(bits, not unsigned, "")


_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}


def fold_binary(op: str, a: int | float, ta: CType, b: int | float, tb: CType) -> tuple[int | float, CType]:
    """Evaluate ``a op b`` with C++ semantics; returns ``(value, type)``.  Raises ZeroDivisionError, ValueError."""
    if op in ("<<", ">>"):
        t = promote(ta)
        if not isinstance(a, int) or not isinstance(b, int) or b < 0:
            raise ValueError("bad shift")
        if b >= t.bits:
            return 0, t
        v = a << b if op == "<<" else (wrap(a, t) >> b)
        return wrap(v, t), t
    if op in ("&&", "||"):
        return (1 if (a and b) else 0) if op == "&&" else (1 if (a or b) else 0), BOOL
    t = common(ta, tb)
    if t.kind == "float":
        a, b = float(a), float(b)
        r = {"+": a + b, "-": a - b, "*": a * b}.get(op)
        if r is not None:
            return r, t
        if op == "/":
            return a / b, t
        if op in _CMP_OPS:
            return _cmp(op, a, b), BOOL
        raise ValueError(op)
    a, b = wrap(int(a), t), wrap(int(b), t)
    if op in _CMP_OPS:
        return _cmp(op, a, b), BOOL
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        r = trunc_div(a, b) if t.signed else a // b
        if b == 0:
            raise ZeroDivisionError
    elif op == "%":
        if b == 0:
            raise ZeroDivisionError
        r = trunc_rem(a, b) if t.signed else a % b
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    else:
        raise ValueError(op)
    return wrap(r, t), t


def _cmp(op: str, a, b) -> int:
    return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


@functools.lru_cache(maxsize=4096)
def parse_number(text: str) -> tuple[int | float, CType] | None:
    """Value and type of a C++ number literal (``128``, ``0x3FFFF``, ``1ull``, ``2.0f``), or None."""
    t = text.replace("'", "")
    low = t.lower()
    is_hex = low.startswith("0x")
    if not is_hex and ("." in t or "e" in low) or low.endswith("f") and not is_hex:
        body = t.rstrip("fFlL")
        try:
            return float(body), (FLOAT if low.endswith("f") else DOUBLE)
        except ValueError:
            return None
    suffix = ""
    while t and t[-1] in "uUlLzZ":
        suffix = t[-1] + suffix
        t = t[:-1]
    try:
        v = parse_int(t)  # the same radix prefixes as PTX: 0x, 0b, legacy octal
    except ValueError:
        return None
    s = suffix.lower()
    unsigned = "u" in s
    longs = s.count("l")
    if longs or v >= 1 << 32 or (not unsigned and v >= 1 << 31 and not is_hex):
        ty = U64 if unsigned or v >= 1 << 63 else I64
    elif unsigned or v >= 1 << 31:
        ty = UINT
    else:
        ty = INT
    return v, ty


# ------------------------------------------------------------------------------------------ constexpr evaluation


class NotConstant(Exception):
    """The expression is not a compile-time constant (for this evaluator)."""


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


#: Steps one constant evaluation may take (a constexpr function's loop iterations included).
CONSTEVAL_BUDGET = 200_000


class ConstEval:
    """Evaluates expressions and ``constexpr`` function bodies on tree-sitter nodes to ``(value, CType)``.

    ``resolve(name)`` gives the value of a name not bound locally (a global constant, an enumerator, a
    template argument) or raises NotConstant; ``function(call_node, name)`` returns the function definitions a
    call may refer to; ``type_of(node, env)`` resolves a type node; ``member(ctype, name)`` a static member of a
    struct type.  ``env`` binds names to ``(value, type)`` or, for template type parameters, to a CType.  Raises
    NotConstant for anything else."""

    def __init__(self, text: Callable[[Node], str], resolve: Callable, functions: Callable, type_of: Callable,
                 sizeof: Callable, member: Callable):
        self.text = text
        self.resolve = resolve
        self.functions = functions
        self.type_of = type_of
        self.sizeof = sizeof
        self.member = member
        self.steps = 0

    def evaluate(self, node: Node, env: dict | None = None) -> tuple:
        """``(value, type)`` of expression ``node``; ``env`` binds local names.  Raises NotConstant."""
        self.steps = 0
        try:
            return self._expr(node, dict(env or {}))
        except (ZeroDivisionError, ValueError, TypeError, OverflowError, RecursionError, IndexError,
                AttributeError):
            raise NotConstant() from None

    def call(self, fdef, args: list[tuple], template_env: dict | None = None) -> tuple:
        """Run constexpr function ``fdef`` (a FunctionDef) on constant ``args``.  Raises NotConstant."""
        self.steps = 0
        try:
            return self._invoke(fdef, args, template_env or {})
        except (ZeroDivisionError, ValueError, TypeError, OverflowError, RecursionError, IndexError,
                AttributeError):
            raise NotConstant() from None

    # ---- expressions ------------------------------------------------------------------------------------------
    def _tick(self):
        self.steps += 1
        if self.steps > CONSTEVAL_BUDGET:
            raise NotConstant()

    def _expr(self, n, env):
        self._tick()
        k = n.type
        if k == "number_literal":
            r = parse_number(self.text(n))
            if r is None:
                raise NotConstant()
            return r
        if k == "true":
            return 1, BOOL
        if k in ("false", "nullptr"):
            return 0, BOOL if k == "false" else U64
        if k == "char_literal":
            body = self.text(n)
            inner = body[body.index("'") + 1:-1]
            return ord(inner.encode().decode("unicode_escape")[0]), int_t(8, True)
        if k == "parenthesized_expression":
            return self._expr(n.named_children[-1], env)
        if k in ("identifier", "type_identifier"):  # a template argument naming a constant reads as a type
            name = self.text(n)
            if name in env:
                v = env[name]
                if isinstance(v, CType):
                    raise NotConstant()
                return v
            return self.resolve(name)
        if k == "type_descriptor" and len(n.named_children) == 1:
            return self._expr(n.named_children[0], env)
        if k == "qualified_identifier":
            full = self.text(n).replace(" ", "")
            scope, _, member = full.rpartition("::")
            if isinstance(env.get(scope), CType):
                return self.member(env[scope], member)
            return self.resolve(full)
        if k == "binary_expression":
            op = self.text(n.child_by_field_name("operator"))
            a, ta = self._expr(n.child_by_field_name("left"), env)
            if op == "&&" and not a:
                return 0, BOOL
            if op == "||" and a:
                return 1, BOOL
            b, tb = self._expr(n.child_by_field_name("right"), env)
            return fold_binary(op, a, ta, b, tb)
        if k == "unary_expression":
            op = self.text(n.child_by_field_name("operator"))
            v, t = self._expr(n.child_by_field_name("argument"), env)
            if op == "!":
                return (0 if v else 1), BOOL
            if op == "-":
                t = promote(t)
                return (wrap(-v, t) if t.kind == "int" else -v), t
            if op == "+":
                return v, promote(t)
            if op == "~":
                t = promote(t)
                return wrap(~int(v), t), t
            raise NotConstant()
        if k == "conditional_expression":
            c, _ = self._expr(n.child_by_field_name("condition"), env)
            return self._expr(n.child_by_field_name("consequence" if c else "alternative"), env)
        if k == "cast_expression":
            t = self.type_of(n.child_by_field_name("type"))
            v, vt = self._expr(n.child_by_field_name("value"), env)
            return convert(v, vt, t)
        if k == "sizeof_expression":
            tn = n.child_by_field_name("type")
            if tn is not None:
                sz = self.sizeof(self.type_of(tn))
                if sz is None:
                    raise NotConstant()
                return sz, U64
            raise NotConstant()
        if k == "call_expression":
            return self._call(n, env)
        if k == "assignment_expression":
            return self._assign(n, env)
        if k == "update_expression":
            arg = n.child_by_field_name("argument")
            if arg.type != "identifier" or self.text(arg) not in env:
                raise NotConstant()
            name = self.text(arg)
            old, t = env[name]
            op = self.text(n.child_by_field_name("operator"))
            new = wrap(old + (1 if op == "++" else -1), t) if t.kind == "int" else old + (1 if op == "++" else -1)
            env[name] = (new, t)
            prefix = n.children[0].type in ("++", "--")
            return (new if prefix else old), t
        if k == "comma_expression":
            self._expr(n.child_by_field_name("left"), env)
            return self._expr(n.child_by_field_name("right"), env)
        raise NotConstant()

    def _assign(self, n, env):
        left = n.child_by_field_name("left")
        if left.type != "identifier" or self.text(left) not in env:
            raise NotConstant()
        name = self.text(left)
        op = self.text(n.child_by_field_name("operator"))
        v, vt = self._expr(n.child_by_field_name("right"), env)
        old, t = env[name]
        if op != "=":
            v, vt = fold_binary(op[:-1], old, t, v, vt)
        env[name] = convert(v, vt, t)
        return env[name]

    def _call(self, n, env):
        fn = n.child_by_field_name("function")
        args_node = n.child_by_field_name("arguments")
        arg_nodes = [a for a in args_node.named_children if a.type != "comment"]
        if fn.type in ("primitive_type", "sized_type_specifier", "type_identifier"):
            t = self.type_of(fn)
            if len(arg_nodes) != 1 or t.kind not in ("int", "bool", "float"):
                raise NotConstant()
            v, vt = self._expr(arg_nodes[0], env)
            return convert(v, vt, t)
        if fn.type == "template_function":
            name = self.text(fn.child_by_field_name("name"))
            if name in ("static_cast", "reinterpret_cast", "const_cast") and len(arg_nodes) == 1:
                targs = fn.child_by_field_name("arguments").named_children
                t = self.type_of(targs[0]) if targs else UNKNOWN
                v, vt = self._expr(arg_nodes[0], env)
                return convert(v, vt, t)
        name = self.text(fn).replace(" ", "")
        short = name.rsplit("::", 1)[-1]
        args = [self._expr(a, env) for a in arg_nodes]
        if short in ("min", "max") and len(args) == 2:
            t = common(args[0][1], args[1][1])
            vals = [convert(v, vt, t)[0] for v, vt in args]
            return (min(vals) if short == "min" else max(vals)), t
        if short in ("ceil_div", "cdiv", "div_up", "ceil_div_int") and len(args) == 2:
            t = common(args[0][1], args[1][1])
            return wrap(-(-args[0][0] // args[1][0]), t), t
        if short == "log2" and len(args) == 1 and args[0][0] > 0:
            return int(math.log2(args[0][0])), args[0][1]
        for fdef in self.functions(n, name):
            if fdef.body is None or len(fdef.params) < len(args):
                continue
            tenv = {}
            if fn.type == "template_function" or fn.child_by_field_name("name") is not None:
                tenv = self._template_args(fn, fdef, env)
            return self._invoke(fdef, args, tenv)
        raise NotConstant()

    def _template_args(self, fn, fdef, env) -> dict:
        targs = fn.child_by_field_name("arguments") if fn.type == "template_function" else None
        out = {}
        if targs is None:
            return out
        for p, a in zip(fdef.template_params, targs.named_children):
            if p[1] == "value":
                out[p[0]] = self._expr(a, env)
            else:
                out[p[0]] = self.type_of(a, env)
        return out

    def _invoke(self, fdef, args, tenv):
        env = dict(tenv)
        for i, p in enumerate(fdef.params):
            if i < len(args):
                v, vt = args[i]
            elif p.default is not None:
                v, vt = self._expr(p.default, env)
            else:
                raise NotConstant()
            env[p.name] = convert(v, vt, p.type) if p.type.kind in ("int", "bool", "float") else (v, vt)
        try:
            self._stmt(fdef.body, env)
        except _Return as r:
            if r.value is None:
                raise NotConstant() from None
            v, vt = r.value
            rt = fdef.return_type
            return convert(v, vt, rt) if rt.kind in ("int", "bool", "float") else (v, vt)
        raise NotConstant()

    # ---- statements -------------------------------------------------------------------------------------------
    def _stmt(self, n, env):
        self._tick()
        k = n.type
        if k == "compound_statement":
            for c in n.named_children:
                self._stmt(c, env)
        elif k == "declaration":
            t = self.type_of(n.child_by_field_name("type"))
            for d in n.children_by_field_name("declarator"):
                if d.type != "init_declarator":
                    if d.type == "identifier":
                        env[self.text(d)] = (0, t)
                        continue
                    raise NotConstant()
                name_node = d.child_by_field_name("declarator")
                if name_node.type != "identifier":
                    raise NotConstant()
                val = d.child_by_field_name("value")
                if val.type in ("initializer_list", "argument_list"):
                    kids = val.named_children
                    if len(kids) != 1:
                        raise NotConstant()
                    val = kids[0]
                v, vt = self._expr(val, env)
                env[self.text(name_node)] = convert(v, vt, t) if t.kind in ("int", "bool", "float") else (v, vt)
        elif k == "expression_statement":
            for c in n.named_children:
                self._expr(c, env)
        elif k == "return_statement":
            kids = [c for c in n.named_children if c.type != "comment"]
            raise _Return(self._expr(kids[0], env) if kids else None)
        elif k == "if_statement":
            cond = n.child_by_field_name("condition")
            c, _ = self._expr(cond.child_by_field_name("value") or cond.named_children[-1], env)
            branch = n.child_by_field_name("consequence" if c else "alternative")
            if branch is not None:
                if branch.type == "else_clause":
                    branch = branch.named_children[-1]
                self._stmt(branch, env)
        elif k == "while_statement":
            cond = n.child_by_field_name("condition")
            cexpr = cond.child_by_field_name("value") or cond.named_children[-1]
            body = n.child_by_field_name("body")
            while self._expr(cexpr, env)[0]:
                try:
                    self._stmt(body, env)
                except _Break:
                    break
                except _Continue:
                    continue
        elif k == "do_statement":
            body = n.child_by_field_name("body")
            cexpr = n.child_by_field_name("condition")
            while True:
                try:
                    self._stmt(body, env)
                except _Break:
                    break
                except _Continue:
                    pass
                if not self._expr(cexpr, env)[0]:
                    break
        elif k == "for_statement":
            init = n.child_by_field_name("initializer")
            if init is not None:
                if init.type == "declaration":
                    self._stmt(init, env)
                else:
                    self._expr(init, env)
            cexpr = n.child_by_field_name("condition")
            upd = n.child_by_field_name("update")
            body = n.child_by_field_name("body")
            while cexpr is None or self._expr(cexpr, env)[0]:
                try:
                    self._stmt(body, env)
                except _Break:
                    break
                except _Continue:
                    pass
                if upd is not None:
                    self._expr(upd, env)
        elif k == "break_statement":
            raise _Break()
        elif k == "continue_statement":
            raise _Continue()
        elif k in ("comment", "empty_statement", "static_assert_declaration", "preproc_call"):
            pass
        else:
            raise NotConstant()


def convert(v, vt: CType, t: CType) -> tuple:
    """Convert constant ``v`` of type ``vt`` to type ``t``."""
    if t.kind == "bool":
        return (1 if v else 0), BOOL
    if t.kind == "int":
        return wrap(int(v), t), t
    if t.kind == "float":
        return float(v), t
    if t.kind == "ptr" and isinstance(v, int):
        return v, t
    return v, vt
