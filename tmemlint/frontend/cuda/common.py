"""Shared by the lowering modules (``lower``, ``statements``, ``expressions``, ``arithmetic``, ``lvalues``,
``calls``, ``asm``): the limits, the values and lvalues the lowering computes with, the frame of an inlined
function, the errors that stop a function's lowering, and small helpers over types and syntax trees."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tmemlint.frontend.cuda.cxx_types import UNKNOWN, CType
from tmemlint.frontend.cuda.program import FunctionDef, Program
from tmemlint.ir import Imm, SourcePos, Span
from tmemlint.threadexpr import trunc_div, trunc_rem


#: Call depth of inlining.
MAX_INLINE_DEPTH = 24
#: Instructions one lowered function may have.
MAX_INSTRUCTIONS = 60_000
#: Trip counts unrolled without a pragma (or under ``#pragma unroll 1``: unrolling only makes the analysis exact) /
#: under ``#pragma unroll``.
UNROLL_DEFAULT = 64
UNROLL_PRAGMA = 256

DTORS = "\0dtors"  # scope key: objects whose destructor runs when the scope ends
SPECIAL_NAMES = {"threadIdx": "%tid", "blockIdx": "%ctaid", "blockDim": "%ntid", "gridDim": "%nctaid",
            "clusterIdx": "%cluster_ctaid", "clusterDim": "%cluster_nctaid"}
ARITH_OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem", "&": "and", "|": "or", "^": "xor",
              "<<": "shl", ">>": "shr"}
CMP_OPS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


class Unsupported(Exception):
    """C++ the lowering cannot translate faithfully; the function is reported (TM901) and not analysed."""

    def __init__(self, node, what: str):
        super().__init__(what)
        self.node = node
        self.what = what


class BudgetExceeded(Exception):
    """The function grew past MAX_INSTRUCTIONS after inlining and unrolling."""


@dataclass(slots=True)
class Diagnostic:
    """A finding of the frontend itself: ``code`` (TM900, TM901 or TM903), where, and the message."""

    code: str
    span: Span
    message: str


# ------------------------------------------------------------------------------------------------ values


class V:
    """An rvalue: ``op`` is the operand holding it (Reg, Imm, Sym, FloatImm; None for an aggregate or unknown
    value), ``ty`` its C++ type, ``ref`` for a pointer to local storage: ``(lvalue, element index or None)``, and
    ``tx`` when the value is a function of ``threadIdx.x`` alone: a thread expression of
    ``tmemlint.threadexpr.eval_tid``, or ``("table", values)`` with its value for every thread."""

    __slots__ = ("op", "ty", "ref", "tx")

    def __init__(self, op, ty: CType, ref=None, tx=None):
        self.op = op
        self.ty = ty
        self.ref = ref
        self.tx = tx

    @property
    def const(self):
        return self.op.value if type(self.op) is Imm else None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"V({self.op!r}: {self.ty!r})"


class RegLV:
    """A local scalar that owns a register (``key`` names it uniquely in the function)."""

    __slots__ = ("key", "ty")

    def __init__(self, key: str, ty: CType):
        self.key = key
        self.ty = ty


class AggLV:
    """A local array or struct: its elements are RegLV/AggLV under ``key[i]`` / ``key.field``."""

    __slots__ = ("key", "ty")

    def __init__(self, key: str, ty: CType):
        self.key = key
        self.ty = ty


class MemLV:
    """An object in memory at address ``addr`` (a V) in state space ``space`` (``shared``, ``global``, ``param``,
    ``const`` or ``""`` for generic)."""

    __slots__ = ("addr", "ty", "space")

    def __init__(self, addr: V, ty: CType, space: str):
        self.addr = addr
        self.ty = ty
        self.space = space


class AliasLV:
    """A name bound to a value (a variable that is never modified, a by-value parameter, a constant)."""

    __slots__ = ("v", "name", "scope")

    def __init__(self, v: V, name: str = "", scope: dict | None = None):
        self.v = v
        self.name = name
        self.scope = scope

    @property
    def ty(self) -> CType:
        return self.v.ty


class UnknownLV:
    """An object the lowering does not model: reads give an opaque value named by ``text``; writes are dropped."""

    __slots__ = ("text", "ty")

    def __init__(self, text: str, ty: CType = UNKNOWN):
        self.text = text
        self.ty = ty


@dataclass(slots=True)
class Frame:
    """One inlined function instance (or the lowered function itself)."""

    fdef: FunctionDef
    scopes: list[dict]
    this: object = None
    tenv: dict = field(default_factory=dict)
    ret_label: str | None = None
    ret_lv: object = None
    loops: list[tuple[str, str | None, int]] = field(default_factory=list)
    inlined_at: tuple[SourcePos, ...] = ()
    is_entry: bool = False
    uid: int = 0


# ------------------------------------------------------------------------------------------------ helpers


def type_suffix(t: CType) -> str:
    if t.kind == "bool":
        return "pred"
    if t.kind == "float":
        return f"f{t.bits}"
    if t.kind == "ptr":
        return "u64"
    if t.kind == "int":
        return f"{'s' if t.signed else 'u'}{max(t.bits, 8)}"
    return "b32"


def type_bits(t: CType) -> str:
    if t.kind == "bool":
        return "pred"
    if t.kind in ("int", "float"):
        return f"b{max(t.bits, 8)}"
    if t.kind == "ptr":
        return "b64"
    return "b32"


def ptx_type(t: CType) -> str | None:
    if t.kind in ("int", "float", "ptr", "bool"):
        return type_bits(t) if t.kind != "bool" else "pred"
    return "b8"


def constraint_type(c: str) -> str:
    if "l" in c:
        return "b64"
    if "h" in c:
        return "b16"
    if "f" in c:
        return "f32"
    if "d" in c:
        return "f64"
    return "b32"


PY_CMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
           "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
CMP_SYMBOL = {v: k for k, v in CMP_OPS.items()}
SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
PY_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": trunc_div, "rem": trunc_rem, "and": lambda a, b: a & b,
           "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b,
           "shr": lambda a, b: a >> b}


def is_table(tx) -> bool:
    return tx is not None and tx[0] == "table"


def cyclic_run(bits: list) -> tuple[int, int] | None:
    """``(start, length)`` when the true entries of ``bits`` form one run, possibly wrapping around the end."""
    n = len(bits)
    ones = sum(1 for b in bits if b)
    if ones == 0 or ones == n:
        return None
    starts = [i for i in range(n) if bits[i] and not bits[i - 1]]
    if len(starts) != 1:
        return None
    return starts[0], ones


PURE_CALLS = {"static_cast", "reinterpret_cast", "const_cast", "bit_cast", "min", "max", "umin", "umax",
               "__uint_as_float", "__float_as_uint", "__int_as_float", "__float_as_int", "__cvta_generic_to_shared"}


def is_pure(n, types=frozenset()) -> bool:
    """Whether expression ``n`` has no side effects (no assignments, increments, asm, or calls other than casts
    and arithmetic intrinsics); a call of one of ``types`` (``Role(x)``) is a cast."""
    stack = [n]
    while stack:
        x = stack.pop()
        t = x.type
        if t in ("assignment_expression", "update_expression", "gnu_asm_expression", "lambda_expression"):
            return False
        if t == "call_expression":
            fn = x.child_by_field_name("function")
            if fn is None:
                return False
            if fn.type == "template_function":
                fn = fn.child_by_field_name("name")
            if fn.type not in ("primitive_type", "sized_type_specifier") and (
                    fn.type not in ("identifier", "qualified_identifier")
                    or fn.text.decode("utf-8", "replace").rsplit("::", 1)[-1] not in PURE_CALLS
                    and fn.text.decode("utf-8", "replace") not in types):
                return False
            stack.extend(x.child_by_field_name("arguments").named_children)
            continue
        stack.extend(x.named_children)
    return True


def check_parsed(f: FunctionDef, prog: Program) -> None:
    """Raise Unsupported at the first place tree-sitter could not parse in ``f`` (an ERROR or a MISSING node):
    the structure around it is a guess, so the function is not analysed.  When a name written like a macro that
    the translation unit does not define is there, the message says so (it may come from a header not read)."""
    root = f.node
    if not root.has_error:
        return
    stack = [root]
    while stack:
        n = stack.pop()
        if n.is_error or n.is_missing:
            line_start = prog.src.rfind(b"\n", 0, n.start_byte) + 1
            line_end = prog.src.find(b"\n", n.end_byte)
            what = "the C++ parser could not read the code at this line"
            raise Unsupported(n, what + macro_hint(prog.src[line_start:line_end if line_end >= 0 else None]
                                                   .decode("utf-8", "replace"), prog.pre.macros, prog.pre.text))
        stack.extend(c for c in reversed(n.children) if c.has_error or c.is_missing)
    raise Unsupported(root, "the C++ parser could not read this function")


_MACRO_LIKE = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]*|[A-Z]{3,}[A-Z0-9]*)\b")


def macro_hint(code: str, macros, unit_text: str = "") -> str:
    """``: NAME is probably a macro …`` for the first name in ``code`` written like a macro (upper case) that is
    not defined in the translation unit (neither as a macro nor declared in ``unit_text``: a template parameter,
    a variable, a type), else ``""``."""
    for m in _MACRO_LIKE.finditer(code):
        name = m.group(1)
        declared = re.search(r"\b(typename|class|struct|enum|using|int|unsigned|bool|auto|size_t|u?int\d+_t|char|"
                             r"long|float|double)\s+" + name + r"\b\s*[=;,)>\[{]", unit_text)
        if name not in macros and not code[m.end():m.end() + 1] == '"' and not declared:
            return (f": {name} is probably a macro of a header that was not read; pass -D {name}=… (its value as "
                    f"the build defines it) or -I DIR for the header")
    return ""


def single_tail_return(body) -> bool:
    """Whether the function body's only ``return`` is its last statement (its value needs no register)."""
    kids = [c for c in body.named_children if c.type != "comment"]
    if not kids or kids[-1].type != "return_statement":
        return False
    stack = list(kids[:-1])
    while stack:
        x = stack.pop()
        if x.type == "return_statement":
            return False
        if x.type == "lambda_expression":
            continue
        stack.extend(x.named_children)
    return True


def ends_with_jump(case) -> bool:
    kids = [c for c in case.named_children if c.type != "comment"]
    return bool(kids) and kids[-1].type in ("break_statement", "return_statement", "continue_statement",
                                            "goto_statement")
