"""Register values: reaching definitions and a flat-lattice abstract interpretation of each definition.

Values are frozen, slotted classes, one per tag (``Const``, ``ConstSet``, ``SymAddr``, ``SymInside``, ``TmemAddr``,
``Tid``, ``Param``, ``SReg``, ``Cmp``, ``PNot``, ``PAnd``, ``POr``, ``Opaque``, ``Top``; ``Op`` a tuple subclass
that keeps its hash), read with ``match`` (``case Const(value=k):``) or ``type(v) is Const``.  Each is a
``NamedTuple`` whose first field is its tag, so it compares and hashes as the tagged tuple of the table below: two
registers computed the same way compare equal (this is what lets a predicate recomputed from the same warp index
correlate with the first one), and sets and dictionaries keyed by values need no change.  Other domains stay plain
tuples: the thread expressions inside ``Tid`` (``threadexpr``), the path facts of ``paths`` and ``threads``
(``("regval", register, value)``, ``("phi", ...)``, ``("mem", ...)`` keys), ``lifecycle``'s property tuples and
``tmem``'s ``("inst", index)`` slot keys.

=====================================  ==========================================================================
``("c", v)``                            integer constant ``v``
``("sym", name, off)``                  the address of variable ``name`` plus ``off`` bytes (any state space;
                                        ``cvta`` to and from generic keeps it)
``("symx", name)``                      an address inside variable ``name`` at an unknown offset
``("tmem", slot, col, lane)``           a TMEM address (PTX ISA §9.7.16.2: lane in bits 31-16, column in bits
                                        15-0) loaded from the allocation slot ``slot`` (a ``sym`` value), plus a
                                        constant column offset ``col`` (None: unknown) and a lane offset ``lane``
                                        (an int, a thread expression, or None: unknown)
``("tid", e)``                          a function of ``%tid.x`` given by the expression tree ``e`` (see
                                        ``eval_tid``); ``elect.sync`` and ``shfl.sync.idx`` results are of this form
``("param", name, off)``                a value loaded from one of the function's own parameters (a kernel's: the
                                        same for the whole grid)
``("sreg", name)``                      a special register that is uniform across the CTA (``%ctaid.x`` ...)
``("op", name, a, b..., depth)``        an operation on uniform values (kept symbolic so that equal computations
                                        compare equal)
``("cmp", cmp, a, b)``                  a predicate ``a cmp b``; ``("pnot", p)``, ``("pand", p, q)``,
                                        ``("por", p, q)`` combine predicates
``("cs", frozenset)``                    one of a few integer constants (``selp`` between constants, then arithmetic
                                        with constants; at most ``MAX_SET`` values)
``("opq", d)``                          an unknown value produced by definition ``d`` (a load, a ``tcgen05.ld``)
TOP                                     several reaching definitions disagree
=====================================  ==========================================================================

The lattice is flat (⊥ < any value < TOP), so the fixed point is reached in a few passes over the function.
"""

from __future__ import annotations

from functools import lru_cache
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeGuard, Union, cast

from mypy_extensions import mypyc_attr

from tmemlint.analysis.cfg import ENTRY, Node, block_control_dependences, controlling_blocks
from tmemlint.ir import Address, Imm, Instruction, NotReg, Operand, ParenList, Reg, RegPair, Sym, Vec
from tmemlint.threadexpr import BIN, CMP as _CMP, eval_tid, trunc_div, trunc_rem, wrap as _wrap

_BIN = cast("dict[str, Callable[[int, int], int]]", BIN)  # threadexpr's integer operators, typed

if TYPE_CHECKING:  # pragma: no cover - the CFG is built by whoever analyses a function body
    from tmemlint.analysis.cfg import CFG

class Const(NamedTuple):
    """``("c", value)``: the integer constant ``value``."""
    tag: Literal["c"]
    value: int


class ConstSet(NamedTuple):
    """``("cs", values)``: one of a few integer constants (at most ``MAX_SET``)."""
    tag: Literal["cs"]
    values: frozenset[int]


class SymAddr(NamedTuple):
    """``("sym", name, offset)``: the address of variable ``name`` plus ``offset`` bytes (any state space)."""
    tag: Literal["sym"]
    name: str
    offset: int


class SymInside(NamedTuple):
    """``("symx", name)``: an address inside variable ``name`` at an unknown offset."""
    tag: Literal["symx"]
    name: str


class TmemAddr(NamedTuple):
    """``("tmem", slot, col, lane)``: a TMEM address (PTX ISA §9.7.16.2: lane in bits 31-16, column in bits 15-0)
    loaded from allocation slot ``slot`` plus column offset ``col`` (columns; None: unknown) and lane offset
    ``lane`` (lanes: an int, a thread expression, or None: unknown)."""
    tag: Literal["tmem"]
    slot: Value
    col: int | None
    lane: Any


class Tid(NamedTuple):
    """``("tid", expr)``: a function of ``%tid.x`` given by the thread expression tree ``expr`` (``eval_tid``;
    a tuple of its own domain, not a ``Value``)."""
    tag: Literal["tid"]
    expr: tuple[Any, ...]


class Param(NamedTuple):
    """``("param", name, offset)``: the value loaded from the function's own parameter ``name`` at ``offset``
    bytes (a kernel's: the same for the whole grid)."""
    tag: Literal["param"]
    name: str
    offset: int


class SReg(NamedTuple):
    """``("sreg", name)``: a special register uniform across the CTA (``%ctaid.x`` ...)."""
    tag: Literal["sreg"]
    name: str


class Cmp(NamedTuple):
    """``("cmp", cmp, a, b)``: the predicate ``a cmp b`` (``cmp`` a ``setp`` comparison: ``lt``, ``hs`` ...)."""
    tag: Literal["cmp"]
    cmp: str
    a: Value
    b: Value


class PNot(NamedTuple):
    """``("pnot", p)``: the negation of predicate ``p``."""
    tag: Literal["pnot"]
    p: Value


class PAnd(NamedTuple):
    """``("pand", p, q)``: predicate ``p and q``."""
    tag: Literal["pand"]
    p: Value
    q: Value


class POr(NamedTuple):
    """``("por", p, q)``: predicate ``p or q``."""
    tag: Literal["por"]
    p: Value
    q: Value


class Opaque(NamedTuple):
    """``("opq", d)``: an unknown value produced by definition ``d`` (an instruction index, or a tuple naming a
    register: ``("in", name)``, ``(index, name)``, ``("sreg", name)``, ``("arg", ...)``)."""
    tag: Literal["opq"]
    d: Any


class Top(NamedTuple):
    """``("top",)``: several reaching definitions disagree.  One instance, ``TOP`` (tested with ``is``; pickled
    by name, so it stays that instance)."""
    tag: Literal["top"]

    def __reduce__(self) -> str:
        return "TOP"


@mypyc_attr(native_class=False)  # mypyc compiles no subclass of a built-in type (hatch_build.py)
class Op(tuple[Any, ...]):
    """``("op", name, *args, depth)``: operation ``name`` on the stable uniform values ``args`` (kept symbolic so
    that equal computations compare equal), ``depth`` its nesting depth (at most ``MAX_DEPTH``).  A tuple of
    variable length, not a ``NamedTuple``: it computes its hash once (hash-consing by structure: the same operation
    on equal uniform inputs is an equal value, in whichever warp role computes it, and a deep chain is hashed from
    its operands' kept hashes, not walked again at every dictionary lookup), so it has a ``__dict__`` for that
    hash; read it with ``case Op(name, args, depth)``."""

    __match_args__ = ("name", "args", "depth")

    @property
    def tag(self) -> Literal["op"]:
        return "op"

    @property
    def name(self) -> str:
        n: str = self[1]
        return n

    @property
    def args(self) -> tuple[Value, ...]:
        return tuple(self[2:-1])

    @property
    def depth(self) -> int:
        d: int = self[-1]
        return d

    def __hash__(self) -> int:
        d = self.__dict__
        h: int | None = d.get("_h")
        if h is None:
            h = d["_h"] = tuple.__hash__(self)
        return h

    def __reduce__(self) -> tuple[type[Op], tuple[tuple[Any, ...]]]:
        """Pickled without its kept hash (a string's hash differs between processes)."""
        return Op, (tuple(self),)


TypedValue = Union[Const, ConstSet, SymAddr, SymInside, TmemAddr, Tid, Param, SReg, Cmp, PNot, PAnd, POr, Opaque, Top,
                   Op]
"""A value of the domain: one class per tag (the table above), each a tuple whose first item is its tag, so that
values compare and hash as the tagged tuples they were (``Param`` and ``SymAddr`` stay apart; a value is a key of
sets and dictionaries, and a plain tagged tuple built elsewhere still equals its typed twin).  Thread expressions
(``Tid.expr``) and ``paths``' ``("regval", ...)`` fact keys are other domains, still plain tuples."""

Value = TypedValue
"""The type values are declared with: the union of the value classes (issue 24 item 2), read with ``match`` or
``type(v) is Cls`` and field names.  A key that may also be of another domain (``threads.FactKey``: a ``("phi",
...)``, ``("mem", ...)`` or ``("regval", ...)`` fact key) is a ``tuple[Any, ...]``; ``is_value`` tells them apart."""

TOP: Top = Top("top")


def with_items(v: TypedValue, items: tuple[Any, ...]) -> TypedValue:
    """A value of ``v``'s class made of the tuple items ``items`` (its tag first): ``threads.cross_warp_facts``
    renames parts of a fact key (an opaque load becomes a ``("mem", ...)`` key) and keeps the key's class, so
    that it is still read with ``match``."""
    if type(v) is Op:
        return Op(items)
    made: TypedValue = cast(Any, type(v))._make(items)
    return made


_VALUE_CLASSES = frozenset({Const, ConstSet, SymAddr, SymInside, TmemAddr, Tid, Param, SReg, Cmp, PNot, PAnd, POr,
                            Opaque, Top, Op})


def is_value(x: object) -> TypeGuard[TypedValue]:
    """Whether ``x`` is a value of this domain (of a class of ``TypedValue``), not a plain tuple of another domain
    (a ``threads`` fact key ``("phi", ...)``, a thread expression)."""
    return type(x) in _VALUE_CLASSES


_CONSTS = (Const, ConstSet)

_new = tuple.__new__
"""``_new(Const, ("c", k))`` is ``Const("c", k)`` without the ``NamedTuple``'s generated ``__new__`` (a Python
function: 0.39 µs against 0.23 µs), for the constructors the fixed point calls once per definition and operand."""


def const(k: int) -> Const:
    """The constant ``k``."""
    return _new(Const, ("c", k))


def opaque(d: object) -> Opaque:
    """The unknown value of definition ``d``."""
    return _new(Opaque, ("opq", d))


# Opcodes whose first operand is not a register definition.
_NO_DEF = {
    "st", "red", "bra", "brx", "ret", "exit", "trap", "brkpt", "call", "cp", "fence", "membar",
    "prefetch", "prefetchu", "setmaxnreg", "nanosleep", "griddepcontrol", "pmevent", "discard", "applypriority",
    "stmatrix", "tensormap", "multimem", "cp.async", "wgmma", "clusterlaunchcontrol", "tcgen05", "stackrestore",
}
_MBARRIER_DEFS = {"arrive", "arrive_drop", "try_wait", "test_wait", "pending_count"}
_UNIFORM_SREGS = ("%ctaid", "%nctaid", "%ntid", "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
                  "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster", "%gridid", "%nsmid")


def is_register_copy(inst: Instruction) -> bool:
    """A register-to-register ``mov`` (PTX ISA ``#data-movement-and-conversion-instructions-mov``) within one
    register group (the name without its number: ``%r238`` <- ``%r229``, the same ``.reg .b32 %r<N>`` declaration).
    That is the copy compilers emit for a loop-carried value (an SSA phi): it renames the value and computes nothing.
    A bit-typed ``mov`` into another group (``mov.b32 %f2, %r6``: nvcc's ``__uint_as_float`` right after a
    ``tcgen05.ld`` into ``"=r"`` registers) only reinterprets the bits: also a rename, the float's read is the use."""
    ops = inst.operands
    if inst.op != "mov" or len(ops) != 2 or type(ops[0]) is not Reg or type(ops[1]) is not Reg:
        return False
    dst, src = ops[0].name, ops[1].name
    if "." in src:
        return False
    return dst.rstrip("0123456789") == src.rstrip("0123456789") or any(p in inst.parts for p in ("b16", "b32", "b64"))


def defined_regs(inst: Instruction) -> tuple[Reg, ...]:
    """Registers written by ``inst`` (PTX ISA: the destination is the first operand, except for stores, branches,
    barriers other than ``bar.red`` (§9.7.13.1: its destination is written), and the asynchronous tcgen05
    instructions other than ``tcgen05.ld``); kept in ``inst.defs``."""
    d = inst.defs
    if d is None:
        d = inst.defs = tuple(_defined_regs(inst))
    return d


def _defined_regs(inst: Instruction) -> list[Reg]:
    op = inst.op
    if not inst.operands:
        return []
    if op == "tcgen05":
        if inst.family != "tcgen05.ld":
            return []
    elif op in _NO_DEF:
        return []
    elif op == "mbarrier":
        if len(inst.parts) < 2 or inst.parts[1] not in _MBARRIER_DEFS:
            return []
    elif op in ("bar", "barrier"):
        if "red" not in inst.parts:  # bar.red.popc.u32 d, a, c / bar.red.and.pred p, ...: d is written (§9.7.13.1)
            return []
    elif op == "wmma" and len(inst.parts) > 1 and inst.parts[1] == "store":
        return []
    d = inst.operands[0]
    if type(d) is Reg:
        return [d]
    if type(d) is Vec:
        return [x for x in d.items if type(x) is Reg]
    if type(d) is RegPair:
        return [x for x in (d.first, d.second) if type(x) is Reg]
    return []


def regs_in(o: Operand, out: list[Reg]) -> None:
    """Append the registers operand ``o`` reads to ``out`` (an address's base and coordinates included)."""
    if type(o) is Reg:
        out.append(o)
    elif type(o) is Address:
        if type(o.base) is Reg:
            out.append(o.base)
        if o.coords is not None:
            regs_in(o.coords, out)
    elif type(o) is Vec or type(o) is ParenList:
        for x in o.items:
            regs_in(x, out)
    elif type(o) is NotReg:
        out.append(o.reg)
    elif type(o) is RegPair:
        for y in (o.first, o.second):
            if type(y) is Reg:
                out.append(y)


def used_regs(inst: Instruction) -> tuple[Reg, ...]:
    """Registers read by ``inst``: every register operand except pure destinations, plus the guard; kept in
    ``inst.uses``."""
    u = inst.uses
    if u is None:
        u = inst.uses = tuple(_used_regs(inst))
    return u


def _used_regs(inst: Instruction) -> list[Reg]:
    out: list[Reg] = []
    ops = inst.operands
    start = 1 if defined_regs(inst) else 0
    if start and inst.op == "wgmma":
        start = 0
    for o in ops[start:]:
        regs_in(o, out)
    if inst.guard is not None:
        out.append(inst.guard.reg)
    return out


# ------------------------------------------------------------------------------------ thread expressions
# (their evaluator lives below the analyses and the front ends: tmemlint.threadexpr)


def int_type(inst: Instruction) -> str | None:
    """The integer type suffix of ``inst`` (``u32``, ``s64``, ``b32`` ...), or None (floating point, none)."""
    for p in reversed(inst.parts):
        if len(p) >= 2 and p[0] in "usb" and p[1:].isdigit():
            return p
    return None


# ------------------------------------------------------------------------------------ integer folding
#: The opcodes ``fold_op`` evaluates (PTX ISA 9.0 §9.7.1 integer arithmetic, §9.7.6 comparison and selection, §9.7.8
#: logic and shift, §9.7.9.21 ``cvt`` between integer types, §9.7.9.1 ``mov``).
FOLDED_OPS = frozenset({"add", "sub", "mul", "mad", "mul24", "div", "rem", "min", "max", "neg", "abs", "and", "or",
                        "xor", "not", "shl", "shr", "mov", "cvt", "setp", "selp"})
_FLOAT_PARTS = frozenset({"f16", "f16x2", "bf16", "bf16x2", "tf32", "f32", "f64", "e4m3x2", "e5m2x2"})


def _int_parts(parts: tuple[str, ...]) -> list[str]:
    """The integer type suffixes of an instruction's ``parts`` in order (``u32``, ``s64``, ``b16`` ...)."""
    return [p for p in parts[1:] if len(p) >= 2 and p[0] in "usb" and p[1:].isdigit()]


def fold_op(parts: tuple[str, ...], args: tuple[int, ...]) -> int | None:
    """The integer a PTX instruction writes to its first destination when its source operands are the integers
    ``args`` (in operand order; any representation: each is read as a register of the operand's type holds it,
    PTX ISA §5.2), or None when the instruction is not one of ``FOLDED_OPS`` on integer (or ``.pred``) types, or
    the result is not defined (a division by zero) or not modelled (floating point, ``.cc`` carries in).

    ``parts`` is the dotted opcode split (``("mad", "lo", "s32")``).  The result is as the destination register
    holds it (``threadexpr.wrap``): in [0, 2^w) for ``.u``/``.b`` types, [-2^(w-1), 2^(w-1)) for ``.s`` types,
    0 or 1 for ``.pred`` results (``setp``; ``and``/``or``/``xor``/``not``/``mov``/``selp`` on ``.pred``).
    Semantics, by PTX ISA 9.0 section (w: the type's width in bits): §9.7.1.1-2 ``add``/``sub`` modulo 2^w
    (``.sat``: ``.s32`` clamped); §9.7.1.3 ``mul.lo`` the low w bits, ``.hi`` the high w bits, ``.wide`` the
    2w-bit product; §9.7.1.4 ``mad`` the same, plus the third operand (of 2w bits for ``.wide``); §9.7.1.5
    ``mul24`` the 48-bit product of the operands' low 24 bits (``.lo``: its low 32 bits, ``.hi``: bits 47-16);
    §9.7.1.8-9 ``div``/``rem`` truncating toward zero; §9.7.1.10-13 ``abs``, ``neg``, ``min``, ``max`` (signed
    or unsigned by type); §9.7.8.1-4 ``and``/``or``/``xor``/``not`` bitwise; §9.7.8.8-9 ``shl``/``shr`` by an
    unsigned 32-bit amount clamped to w (``shr.s`` fills with the sign bit); §9.7.6.2 ``setp``
    (``.and``/``.or``/``.xor`` with a third, predicate, operand: ``BoolOp(a cmp b, c)``); §9.7.6.3 ``selp``;
    §9.7.9.21 ``cvt.D.S`` between integer types (the source's value, of type S, truncated or extended to D;
    ``.sat`` clamps to D's range); §9.7.9.1 ``mov``."""
    op = parts[0]
    if op not in FOLDED_OPS or "cc" in parts or any(p in _FLOAT_PARTS for p in parts):
        return None
    ints = _int_parts(parts)
    if op == "cvt":
        if len(ints) != 2 or len(args) != 1:
            return None
        dst, src = ints
        v = _wrap(args[0], src)
        if "sat" in parts:
            lo, hi = _range(dst)
            return min(max(v, lo), hi)
        return _wrap(v, dst)
    if not ints:
        if "pred" not in parts:
            return None
        return _fold_pred(op, args)
    ty = ints[-1]
    if op == "setp":
        return _fold_setp(parts, ty, args)
    wide = "wide" in parts
    dty = ty[0] + str(2 * int(ty[1:])) if wide else ty
    x = [_wrap(a, ty) for a in args]
    if op == "mad" and wide and len(x) == 3:
        x[2] = _wrap(args[2], dty)
    r = _fold_int(op, parts, ty, x)
    if r is None:
        return None
    if "sat" in parts and op in ("add", "sub") and ty == "s32":
        lo, hi = _range(ty)
        return min(max(r, lo), hi)
    return _wrap(r, dty)


def fold_values(parts: tuple[str, ...], args: list[Value]) -> Value | None:
    """``fold_op`` on abstract values: the constant, or the constant set (at most ``MAX_SET`` values), that the
    instruction with ``parts`` writes when each of ``args`` is a constant or a constant set (every combination
    of their candidates folded); None when an argument is neither, a combination does not fold, or the results
    are more than ``MAX_SET``."""
    cands = [const_candidates(a) for a in args]
    if not cands or any(c is None for c in cands):
        return None
    combos: list[tuple[int, ...]] = [()]
    for c in cands:
        assert c is not None
        combos = [t + (x,) for t in combos for x in c]
    vals: set[int] = set()
    for t in combos:
        r = fold_op(parts, t)
        if r is None:
            return None
        vals.add(r)
        if len(vals) > MAX_SET:
            return None
    return const(next(iter(vals))) if len(vals) == 1 else ConstSet("cs", frozenset(vals))


def _range(ty: str) -> tuple[int, int]:
    """The smallest and largest integer of type ``ty``."""
    w = int(ty[1:])
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if ty[0] == "s" else (0, (1 << w) - 1)


def _fold_pred(op: str, args: tuple[int, ...]) -> int | None:
    """``fold_op`` on ``.pred`` operands (each non-zero: true)."""
    b = [1 if a else 0 for a in args]
    if op == "mov" and len(b) == 1:
        return b[0]
    if op == "not" and len(b) == 1:
        return 1 - b[0]
    if op in ("and", "or", "xor") and len(b) == 2:
        return int(_BIN[op](b[0], b[1]))
    if op == "selp" and len(b) == 3:
        return b[0] if b[2] else b[1]
    return None


def _fold_setp(parts: tuple[str, ...], ty: str, args: tuple[int, ...]) -> int | None:
    """``fold_op`` for ``setp.cmp[.bop].ty`` (PTX ISA §9.7.6.2): ``a cmp b``, combined with the third operand."""
    cmp = next((p for p in parts[1:] if p in _CMP), None)
    if cmp is None or len(args) not in (2, 3):
        return None
    p = 1 if _CMP[cmp](_wrap(args[0], ty), _wrap(args[1], ty)) else 0
    if len(args) == 2:
        return p
    bop = next((q for q in parts[2:] if q in ("and", "or", "xor")), None)
    return None if bop is None else int(_BIN[bop](p, 1 if args[2] else 0))


def _fold_int(op: str, parts: tuple[str, ...], ty: str, x: list[int]) -> int | None:
    """``fold_op``'s integer result, before it is wrapped to the destination type (operands ``x`` already read as
    type ``ty``; ``None``: not defined or not modelled)."""
    w = int(ty[1:])
    if op in ("mov", "neg", "abs", "not") and len(x) == 1:
        a = x[0]
        return a if op == "mov" else -a if op == "neg" else abs(a) if op == "abs" else ~a
    if op == "selp" and len(x) == 3:
        return x[0] if x[2] else x[1]
    if op == "mul24" and len(x) == 2:
        a, b = (_wrap(v, ty[0] + "24") for v in x)
        return (a * b) >> 16 if "hi" in parts else a * b
    if op == "mad" and len(x) == 3:
        prod = _fold_int("mul", parts, ty, x[:2])
        return None if prod is None else prod + x[2]
    if len(x) != 2:
        return None
    a, b = x
    if op == "mul":
        return (a * b) >> w if "hi" in parts else a * b
    if op in ("div", "rem"):
        if b == 0:
            return None
        return trunc_div(a, b) if op == "div" else trunc_rem(a, b)
    if op in ("shl", "shr"):
        n = min(b & 0xFFFFFFFF, w)  # the shift amount is a .u32 operand whatever the type (§9.7.8.7)
        return a << n if op == "shl" else a >> n
    if op in ("add", "sub", "min", "max", "and", "or", "xor"):
        return _BIN[op](a, b)
    return None


_SWAP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "lo": "hi", "hi": "lo", "ls": "hs", "hs": "ls",
         "eq": "eq", "ne": "ne"}
NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le", "lo": "hs", "hs": "lo",
           "ls": "hi", "hi": "ls"}

_ARITH = {"add": "add", "sub": "sub", "mul": "mul", "shl": "shl", "shr": "shr", "and": "and", "or": "or",
          "xor": "xor", "div": "div", "rem": "rem", "min": "min", "max": "max", "mul24": "mul"}


@lru_cache(maxsize=1 << 16)
def is_stable(v: Value) -> bool:
    """Whether ``v`` denotes the same value wherever it is computed (no opaque or joined parts)."""
    match v:
        case Const() | ConstSet() | SymAddr() | Tid() | Param() | SReg() | TmemAddr():
            return True
        case Op():
            return all(is_stable(x) for x in v[2:-1] if isinstance(x, tuple))
        case Cmp(a=a, b=b):
            return is_stable(a) and is_stable(b)
        case PNot(p=p):
            return is_stable(p)
        case PAnd(p=p, q=q) | POr(p=p, q=q):
            return is_stable(p) and is_stable(q)
    return False  # TOP, Opaque, SymInside


def opaque_deps(v: object, out: set[Any] | None = None) -> set[Any]:
    """The definitions (``("opq", d)`` leaves: an instruction index, or a tuple naming a register) that ``v``
    depends on (``v`` any value, or a thread expression)."""
    if out is None:
        out = set()
    if type(v) is Opaque:
        out.add(v.d)
    elif isinstance(v, tuple):
        for x in v[1:]:
            if isinstance(x, tuple):
                opaque_deps(x, out)
    return out


class ValueAnalysis:
    """Values of every register definition of one function, and of every operand at its use.

    ``slots``: shared-memory addresses (``sym`` values) that ``tcgen05.alloc`` writes; a load from one of them
    yields a ``tmem`` value.  Computed by ``analyse`` in two rounds (slots are found from the first)."""

    def __init__(self, cfg: CFG) -> None:
        self.cfg = cfg
        self.fn = cfg.function
        self.insts = self.fn.instructions
        self.slots: set[Value] = set()
        self.def_value: dict[tuple[int, str], Value] = {}
        self.reach: dict[tuple[int, str], tuple[int, ...]] = {}
        self.single_def: dict[str, int] = {}
        #: dependencies of guard predicate keys, filled by ``tmemlint.analysis.threads.GuardOracle``
        self.guard_deps: dict[object, frozenset[int]] = {}
        #: ``GuardOracle`` per warp class, shared by the simulations (``paths.per_object``)
        #: (the entries' type is ``GuardOracle``, kept ``Any`` while threads.py is untyped: a typed oracle would
        #: expose its untyped ``assume`` to the strictly typed ``witness``)
        self.oracles: dict[int, tuple[object, Any]] = {}
        #: ``PropertySimulation``'s instructions of interest per ``relevant`` predicate (``paths.per_object``)
        self.interesting: dict[int, tuple[object, set[int]]] = {}
        #: caches of the modules above, declared here (not added to ``__dict__`` on first use) so the class has a
        #: fixed layout (a compiled class has no ``__dict__``): ``PropertySimulation``'s register-value facts by
        #: (instruction index, facts), its per-CFG routing and per-``relevant`` block plans (``paths.per_object``)
        self.regval_memo: dict[Any, Any] = {}
        self.routing: dict[int, tuple[object, Any]] = {}
        self.plans: dict[int, tuple[object, Any]] = {}
        #: ``threads.cross_warp`` results by facts, and its per-key renames
        self.cross_warp_sets: dict[Any, Any] = {}
        self.cross_warp_keys: dict[Any, Any] = {}
        #: whether the function issues ``.cta_group::2`` instructions (``GuardOracle._paired``); None: not asked yet
        self.cta_pair: bool | None = None
        #: readers of each register (``uses_of``); None: not indexed yet
        self._readers: dict[str, list[int]] | None = None
        #: the function's own parameters: an ``ld.param`` of another ``.param`` variable reads a call's return
        #: parameter (or an argument slot) declared in the body, never a kernel parameter (PTX ISA §5.1.6.2)
        self.param_names = frozenset(p.name for p in self.fn.params)
        #: a call's return parameter (its name in this function's body) -> the value the callee returns there
        #: (``analysis.calls.call_returns``: only values that mean the same in the caller, e.g. a TMEM address
        #: of a slot the callee allocates); a return parameter not listed is opaque
        self.returns: dict[str, Value] = {}
        #: full-mask ``elect.sync`` instructions (by index) that may run where the warp is not converged
        #: (``_diverged_elections``): each is an election of its own, not ``("elect",)``
        self.diverged_elections: frozenset[int] = frozenset()
        self._defs_by_inst: list[tuple[Reg, ...]] = [defined_regs(i) for i in self.insts]
        self._compute_reaching()

    def _predicate_inputs(self, defs_of: dict[str, list[int]]) -> set[str]:
        """Registers some guard or branch predicate is computed from (following definitions backwards through
        their operands, a bounded walk).  Only their constants can tell paths apart (a loop flag, a warp role set in
        a chain of branches); a register that only carries data (a value stored to TMEM, a loop's accumulator) never
        decides a branch, and a constant written to it is no path fact."""
        work = [i.guard.reg.name for i in self.insts if i.guard is not None]
        seen: set[str] = set()
        steps = 0
        while work and steps < 200_000:
            name = work.pop()
            if name in seen:
                continue
            seen.add(name)
            for d in defs_of.get(name, ()):
                for r in used_regs(self.insts[d]):
                    steps += 1
                    if r.name not in seen:
                        work.append(r.name)
        return seen

    # ---- reaching definitions (only for registers with several definitions) --------------------------------
    def _compute_reaching(self) -> None:
        defs_of: dict[str, list[int]] = {}
        for i, regs in enumerate(self._defs_by_inst):
            for r in regs:
                defs_of.setdefault(r.name, []).append(i)
        multi = {r: ds for r, ds in defs_of.items() if len(ds) > 1}
        self.single_def = {r: ds[0] for r, ds in defs_of.items() if len(ds) == 1}
        self.multi_defs = multi
        #: instruction index -> the multiply-defined registers it writes (names, in operand order)
        self.multi_def_writes: dict[int, list[str]] = {}
        if not multi:
            return
        feeds = self._predicate_inputs(defs_of)
        for i in sorted({d for ds in multi.values() for d in ds}):
            names = [r.name for r in self._defs_by_inst[i] if r.name in multi and r.name in feeds]
            if names:
                self.multi_def_writes[i] = names
        bit: dict[tuple[int, str], int] = {}
        reg_mask: dict[str, int] = {}
        for name, ds in multi.items():
            m = 0
            for d in ds:
                b = 1 << len(bit)
                bit[(d, name)] = b
                m |= b
            reg_mask[name] = m
        bit_owner = {b: key for key, b in bit.items()}
        cfg = self.cfg
        gen: dict[int, int] = {}
        kill: dict[int, int] = {}
        for bid, blk in cfg.blocks.items():
            g = 0
            k = 0
            for inst in blk.instructions:
                # a predicated definition (``@%p mov %r, 1``) writes only where its guard holds: the earlier
                # definitions still reach past it (CUTLASS's ``elect_one_sync``: ``mov %r, 0; @%px mov %r, 1``)
                keeps = inst.guard is not None
                for r in self._defs_by_inst[inst.index]:
                    if r.name in multi:
                        if keeps:
                            g |= bit[(inst.index, r.name)]
                            continue
                        k |= reg_mask[r.name]
                        g = (g & ~reg_mask[r.name]) | bit[(inst.index, r.name)]
            gen[bid] = g
            kill[bid] = k
        order = [n for n in cfg.reverse_postorder() if n in cfg.blocks]
        preds = {n: [p for p in cfg.graph.predecessors(n) if p in cfg.blocks] for n in order}
        out = {n: 0 for n in order}
        changed = True
        while changed:
            changed = False
            for n in order:
                inn = 0
                for p in preds[n]:
                    inn |= out[p]
                o = gen[n] | (inn & ~kill[n])
                if o != out[n]:
                    out[n] = o
                    changed = True
        for n in order:
            cur = 0
            for p in preds[n]:
                cur |= out[p]
            for inst in cfg.blocks[n].instructions:
                for r in used_regs(inst):
                    mask = reg_mask.get(r.name)
                    if mask is not None:
                        live = cur & mask
                        ds = []
                        while live:
                            low = live & -live
                            ds.append(bit_owner[low][0])
                            live ^= low
                        self.reach[(inst.index, r.name)] = tuple(ds)
                for r in self._defs_by_inst[inst.index]:
                    if r.name in multi:
                        cur = (cur if inst.guard is not None else cur & ~reg_mask[r.name]) | bit[(inst.index, r.name)]

    # ---- values ---------------------------------------------------------------------------------------------
    def reg_value(self, inst: Instruction, reg: Reg) -> Value:
        """The value of ``reg`` as read by ``inst``."""
        name = reg.name
        if name.startswith("%"):
            sv = _special(name)
            if sv is not None:
                return sv
        d = self.single_def.get(name)
        if d is not None:
            v = self.def_value.get((d, name))
            return v if v is not None else TOP
        ds = self.reach.get((inst.index, name))
        if ds is None:
            if name in self.multi_defs:
                return TOP
            return _new(Opaque, ("opq", ("in", name)))
        if len(ds) == 2:
            sel = self._selected_value(ds, name)
            if sel is not None:
                return sel
        val: Value | None = None
        for e in ds:
            v = self.def_value.get((e, name))
            if v is None:
                continue
            if val is None:
                val = v
            elif v != val:
                val = _join(val, v)
                if val is TOP:
                    return TOP
        return val if val is not None else TOP

    def _selected_value(self, ds: tuple[int, ...], name: str) -> Value | None:
        """The value of ``name`` where exactly the two definitions ``ds`` reach, when they are an unguarded constant
        and, later in the same basic block, a constant under a guard whose value is a thread expression: then every
        execution of the first is followed by the guarded one, so the register holds ``guard ? then : else``,
        ``("tid", ("sel", guard, then, else))``, exactly.  This is CUTLASS's ``cute::elect_one_sync`` (``mov %r, 0;
        elect.sync %rx|%px, -1; @%px mov %r, 1``, which DeepGEMM calls around its MMAs and again around each
        ``tcgen05.commit``): the ``setp`` on ``%r`` is then the thread predicate of the election itself, and two
        such calls with the same member mask are the same predicate (PTX ISA 9.0 §9.7.13.12 elect.sync: "the same
        leader thread is elected for the same membermask every time").  None for any other shape (a guard that is
        not a thread expression, values that are not constants, definitions in different blocks)."""
        a, b = sorted(ds)
        first, second = self.insts[a], self.insts[b]
        guard = second.guard
        if first.guard is not None or guard is None or self.cfg.block_of[a] != self.cfg.block_of[b]:
            return None
        va, vb = self.def_value.get((a, name)), self.def_value.get((b, name))
        if type(va) is not Const or type(vb) is not Const:
            return None
        g = self.reg_value(second, guard.reg)
        if type(g) is not Tid:
            return None
        then, other = ("k", vb.value), ("k", va.value)
        return Tid("tid", ("sel", g.expr, other, then) if guard.negated else ("sel", g.expr, then, other))

    def value(self, inst: Instruction, o: Operand) -> Value:
        """The value of operand ``o`` of ``inst`` (an address operand gives the address value)."""
        if type(o) is Reg:
            return self.reg_value(inst, o)
        if type(o) is Imm:
            return _new(Const, ("c", o.value))
        if type(o) is Sym:
            return _new(SymAddr, ("sym", o.name, o.offset))
        if type(o) is Address:
            return self.address_value(inst, o)
        if type(o) is NotReg:
            return pnot_value(self.reg_value(inst, o.reg))
        return TOP

    def address_value(self, inst: Instruction, a: Address) -> Value:
        """The address an ``[base+offset]`` operand denotes."""
        if a.base is None:
            return _new(Const, ("c", a.offset))
        base = self.value(inst, a.base)
        return _add(base, _new(Const, ("c", a.offset)), inst.index) if a.offset else base

    # ---- uniformity ---------------------------------------------------------------------------------------
    def reaching_defs(self, inst: Instruction, name: str) -> tuple[int, ...]:
        """Indices of the definitions of register ``name`` that reach ``inst`` (a predicated definition does not
        hide the earlier ones)."""
        return self._reaching(inst, name)

    def defined_by(self, index: int) -> tuple[Reg, ...]:
        """The registers instruction ``index`` writes."""
        return self._defs_by_inst[index]

    def has_one_def(self, name: str) -> bool:
        """Whether register ``name`` has a single definition in the function."""
        return name in self.single_def

    def _reaching(self, inst: Instruction, name: str) -> tuple[int, ...]:
        d = self.single_def.get(name)
        if d is not None:
            return (d,)
        return self.reach.get((inst.index, name), ())

    def nonuniform_defs(self) -> set[tuple[int, str]]:
        """Definitions ``(index, register)`` whose value may differ between threads of the CTA.

        Sources: ``%tid``, ``%laneid``, ``%warpid`` and other per-thread special registers; ``tcgen05.ld``,
        ``atom``, ``vote``, ``elect``, ``activemask``, ``mbarrier`` results; then, to a fixed point, every
        definition that reads a non-uniform definition (loads through a non-uniform address included).  Values
        merged from divergent branches are not considered (a data-flow approximation)."""
        cached: set[tuple[int, str]] | None = getattr(self, "_nonuniform", None)
        if cached is not None:
            return cached
        nu: set[tuple[int, str]] = set()
        sources = {"atom", "vote", "elect", "activemask", "mbarrier", "match", "redux"}
        uses = [used_regs(i) for i in self.insts]
        for inst in self.insts:
            regs = self._defs_by_inst[inst.index]
            if not regs:
                continue
            src = inst.op in sources or inst.family == "tcgen05.ld" or any(
                r.name.startswith("%") and (sv := _special(r.name)) is not None and type(sv) is not SReg
                for r in uses[inst.index])
            if src:
                nu.update((inst.index, r.name) for r in regs)
        # Worklist over def-use edges: a definition reading a register one of whose reaching definitions is
        # non-uniform is non-uniform.
        readers: dict[str, list[int]] = {}
        for inst in self.insts:
            if self._defs_by_inst[inst.index]:
                for r in uses[inst.index]:
                    readers.setdefault(r.name, []).append(inst.index)
        work = list(nu)
        while work:
            d, name = work.pop()
            for u in readers.get(name, ()):
                regs = self._defs_by_inst[u]
                if (u, regs[0].name) in nu or d not in self._reaching(self.insts[u], name):
                    continue
                for r in regs:
                    if (u, r.name) not in nu:
                        nu.add((u, r.name))
                        work.append((u, r.name))
        self._nonuniform: set[tuple[int, str]] = nu
        return nu

    def is_uniform(self, inst: Instruction, reg: Reg) -> bool:
        """Whether ``reg`` as read by ``inst`` has the same value in every thread of the CTA."""
        sv = _special(reg.name) if reg.name.startswith("%") else None
        if sv is not None:
            return type(sv) is SReg
        nu = self.nonuniform_defs()
        return not any((d, reg.name) in nu for d in self._reaching(inst, reg.name))

    def _syntactic_slots(self) -> set[Value] | None:
        """Slots of the allocs found by following single definitions back from their ``[dst]`` operands through
        ``mov``/``cvta``/``cvt``/``shfl.sync.idx`` and constant ``add``s to a symbol; None if some alloc's slot is
        not found that way (then the fixed point is run twice)."""
        slots: set[Value] = set()
        for inst in self.insts:
            if inst.family != "tcgen05.alloc":
                continue
            o = inst.operands[0] if inst.operands else None
            if type(o) is not Address:
                return None
            off = o.offset
            base: Operand | None = o.base
            for _ in range(16):
                if type(base) is Sym:
                    slots.add(SymAddr("sym", base.name, base.offset + off))
                    break
                if type(base) is not Reg:
                    return None
                d = self.single_def.get(base.name)
                if d is None:
                    return None
                di = self.insts[d]
                ops = di.operands
                if di.op in ("mov", "cvta", "cvt") and len(ops) == 2:
                    base = ops[1]
                elif di.op == "shfl" and len(ops) >= 2:
                    base = ops[1]
                elif di.op == "add" and len(ops) == 3 and type(k2 := ops[2]) is Imm:
                    off += k2.value
                    base = ops[1]
                elif di.op == "add" and len(ops) == 3 and type(k1 := ops[1]) is Imm:
                    off += k1.value
                    base = ops[2]
                else:
                    return None
            else:
                return None
        return slots

    def analyse(self, extra_slots: frozenset[Value] = frozenset(),
                returns: dict[str, Value] | None = None) -> "ValueAnalysis":
        """Run the fixed point (once when the allocation slots are found syntactically, else twice: the second
        round knows the slots).  ``extra_slots``: slots written by allocs in callees, ``returns``: values of
        calls' return parameters (``analysis.calls``).  Returns self."""
        if returns:
            self.returns = dict(returns)
        pre = self._syntactic_slots()
        if pre is not None:
            self.slots = pre | extra_slots
            self._fixpoint()
            self._rekey_diverged_elections()
            return self
        self.slots = set(extra_slots)
        self._fixpoint()
        slots = set(extra_slots)
        for inst in self.insts:
            if inst.family == "tcgen05.alloc" and inst.operands:
                v = self.value(inst, inst.operands[0])
                if type(v) is SymAddr:
                    slots.add(v)
        if slots:
            self.slots = slots
            self.def_value.clear()
            self._fixpoint()
        self._rekey_diverged_elections()
        return self

    def _rekey_diverged_elections(self) -> None:
        """Run the fixed point again when some full-mask election is not at a converged point
        (``_diverged_elections``), with those elections keyed by their own instruction (``_elected``).  Whether a
        branch's predicate is the same on a warp's lanes does not depend on which key an election has (both are
        one lane's predicate), so one more round suffices."""
        diverged = self._diverged_elections()
        if diverged and diverged != self.diverged_elections:
            self.diverged_elections = diverged
            self.def_value.clear()
            self._fixpoint()

    def _diverged_elections(self) -> frozenset[int]:
        """The full-mask ``elect.sync`` instructions (by index) that may execute while the warp is not converged:
        under a guard, or control dependent (transitively, ``cfg.block_control_dependences``) on a branch, whose
        predicate may differ between the lanes of one warp (``_same_on_warp``), lanes that exited early included.
        PTX ISA 9.0 §9.7.13.12: ``elect.sync`` elects "one predicated active leader thread" of ``membermask``, the
        same one "for the same membermask every time", and the behaviour is undefined when an executing thread is
        not in the mask; ``.sync`` waits for every thread of the mask.  Where lanes of the mask branched away or
        exited, the election is not the converged one, so it is not identified with the others (it is "unless
        proven converged": a predicate the analysis cannot show warp-uniform counts as divergent)."""
        elections = [i for i in self.insts if i.op == "elect" and self._full_mask(i)]
        if not elections:
            return frozenset()
        deps = block_control_dependences(self.cfg)
        blocks = self.cfg.blocks
        warps = self._warps_reaching()
        out: set[int] = set()
        for e in elections:
            if e.guard is not None and not self._same_on_warp(e, e.guard.reg):
                out.add(e.index)
                continue
            home = warps.get(self.cfg.block_of[e.index], 0)
            for b in controlling_blocks(deps, self.cfg.block_of[e.index]):
                last = blocks[b].instructions[-1]
                # a branch no warp that may run the election reaches (another role's ``if (elect_one())``)
                # does not split this warp
                if last.guard is not None and warps.get(b, 0) & home \
                        and not self._same_on_warp(last, last.guard.reg):
                    out.add(e.index)
                    break
        return frozenset(out)

    def _warps_reaching(self) -> dict[Node, int]:
        """Block → bit set of the warps (``%tid.x >> 5`` of a CTA of up to 1024 threads, PTX ISA §10.1) that may
        reach it: a conditional edge whose predicate is a thread predicate of the warp index only
        (``_warp_uniform``: the role tests ``warp == 1``) is followed by the warps it holds for; every other
        edge by all that reach its source."""
        g = self.cfg.graph
        every = (1 << 32) - 1
        edge_masks: dict[tuple[Node, Node], int] = {}
        for a, b in g.edges:
            cond = g[a][b].get("cond")
            m = every
            if cond is not None and isinstance(a, int) and a in self.cfg.blocks:
                guard, taken = cond
                m = self._warps_taking(self.cfg.blocks[a].instructions[-1], guard.reg, guard.negated, taken)
            edge_masks[(a, b)] = m
        reach: dict[Node, int] = {ENTRY: every}
        work: list[Node] = [ENTRY]
        while work:
            a = work.pop()
            for b in g.successors(a):
                m = reach[a] & edge_masks[(a, b)]
                if m & ~reach.get(b, 0):
                    reach[b] = reach.get(b, 0) | m
                    work.append(b)
        return reach

    def _warps_taking(self, inst: Instruction, reg: Reg, negated: bool, taken: bool) -> int:
        """Bit set of the warps (of 32) that follow the edge ``taken`` of ``inst``'s branch on ``@[!]reg``: those
        where the predicate has the needed value, when it is a thread predicate of the warp index only; else all."""
        v = self.reg_value(inst, reg)
        while type(v) is PNot:
            v = v.p
            negated = not negated
        if type(v) is not Tid:
            return (1 << 32) - 1
        try:
            vals = eval_tid(v.expr, range(0, 1024))
            if not _warp_uniform(v.expr):
                return (1 << 32) - 1
        except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
            return (1 << 32) - 1
        return sum(1 << w for w in range(32) if ((vals[32 * w] != 0) != negated) == taken)

    def _same_on_warp(self, inst: Instruction, reg: Reg) -> bool:
        """Whether predicate ``reg`` read by ``inst`` is known to have one value on all the lanes of a warp: a
        constant, a thread predicate of the warp index only (``_warp_uniform``), a value that is the same in
        every thread of the CTA (``is_uniform``), or one computed from such values (``_same_on_warp_at``)."""
        return self._same_on_warp_at(inst, reg, set(), 0)

    def _same_on_warp_at(self, inst: Instruction, reg: Reg, seen: set[tuple[int, str]], depth: int) -> bool:
        """``_same_on_warp`` of ``reg`` read by ``inst``: by the form of its value (``_same_on_warp`` the
        function), its being the same in every thread of the CTA, or every reaching definition's being of such a
        form or an operation of ``_WARP_SAME_OPS`` that reads only such registers (CUTLASS's warp-group index
        reassigned constants on each role's path; ``or.pred`` of a role test and a launch flag; a load at such an
        address).  A definition met again (a loop's phi) is taken to be so (greatest fixed point); values merged
        at the join of a lane-varying branch are not told apart (``ValueAnalysis.nonuniform_defs``'s limit)."""
        v = self.reg_value(inst, reg)
        if v is not TOP and _same_on_warp(v) or self.is_uniform(inst, reg):
            return True
        ds = self._reaching(inst, reg.name)
        if not ds or depth >= 64:
            return False
        for d in ds:
            if (d, reg.name) in seen:
                continue
            seen.add((d, reg.name))
            dv = self.def_value.get((d, reg.name))
            if dv is not None and dv is not TOP and _same_on_warp(dv):
                continue
            di = self.insts[d]
            if di.op in ("vote", "redux") and "sync" in di.parts and di.guard is None:
                continue  # a warp-wide ballot or reduction: every lane gets the one result (PTX ISA §9.7.13.7-8)
            reads = used_regs(di)
            if di.op == "shfl" and "idx" in di.parts and di.guard is None and len(di.operands) >= 3:
                # every lane reads the same source lane: only the lane index matters (§9.7.9.6 shfl.sync)
                lane = di.operands[2]
                reads = (lane,) if type(lane) is Reg else ()
            elif di.op not in _WARP_SAME_OPS:
                return False
            if not all(self._same_on_warp_at(di, r, seen, depth + 1) for r in reads):
                return False
        return True

    def _fixpoint(self) -> None:
        """One pass in reverse post-order, then a worklist over def-use edges until no value changes."""
        order = [self.cfg.blocks[n] for n in self.cfg.reverse_postorder() if isinstance(n, int) and n in self.cfg.blocks]
        users = self._users()
        work: list[int] = []
        queued: set[int] = set()
        changes = [0]
        # Definitions the first pass has still to reach: a change is not queued for them (they read the latest
        # values when the pass gets there), so straight-line code is evaluated once, not twice.
        later = bytearray(len(self.insts))
        for blk in order:
            for inst in blk.instructions:
                later[inst.index] = 1

        def evaluate(inst: Instruction) -> None:
            regs = self._defs_by_inst[inst.index]
            vals = self._transfer(inst, regs)
            for r, v in zip(regs, vals):
                key = (inst.index, r.name)
                if self.def_value.get(key) != v:
                    self.def_value[key] = v
                    changes[0] += 1
                    for u in users.get(r.name, ()):
                        if u not in queued and not later[u]:
                            queued.add(u)
                            work.append(u)

        for blk in order:
            for inst in blk.instructions:
                later[inst.index] = 0
                if self._defs_by_inst[inst.index]:
                    evaluate(inst)
        limit = 16 * (len(self.def_value) + 1)
        while work:
            idx = work.pop()
            queued.discard(idx)
            if changes[0] > limit:  # pragma: no cover - a non-monotone chain: give up on the rest
                for key in list(self.def_value):
                    self.def_value[key] = Opaque("opq", key[0])
                return
            evaluate(self.insts[idx])

    def uses_of(self, d: int, name: str) -> list[int]:
        """Indices of the instructions that read register ``name`` with the value definition ``d`` wrote
        (def-use chains from the reaching definitions; the readers of each register are indexed once)."""
        readers = self._readers
        if readers is None:
            readers = {}
            for inst in self.insts:
                for r in used_regs(inst):
                    readers.setdefault(r.name, []).append(inst.index)
            self._readers = readers
        return [u for u in readers.get(name, ()) if d in self._reaching(self.insts[u], name)]

    def _users(self) -> dict[str, list[int]]:
        """Register name → indices of the defining instructions that read it."""
        users: dict[str, list[int]] = {}
        for inst in self.insts:
            if not self._defs_by_inst[inst.index]:
                continue
            for r in used_regs(inst):
                users.setdefault(r.name, []).append(inst.index)
        return users

    def _transfer(self, inst: Instruction, regs: tuple[Reg, ...]) -> list[Value]:
        """The values ``inst`` writes to its destination registers ``regs`` (in order)."""
        op = inst.op
        idx = inst.index
        ops = inst.operands
        n = len(regs)
        dst = ops[0] if ops else None  # a definition has its destination first (never absent here)
        if n != 1 or type(dst) is not Reg:
            if op == "elect" and type(dst) is RegPair:
                out: list[Value] = []
                for x in (dst.first, dst.second):
                    if type(x) is Reg:
                        out.append(self._elected(inst) if x is dst.second else _new(Opaque, ("opq", (idx, x.name))))
                return out
            if op == "shfl" and type(dst) is RegPair and len(ops) >= 3:
                sv = self._shfl(inst)
                return [sv if r is dst.first else _new(Opaque, ("opq", (idx, r.name))) for r in regs]
            return [_new(Opaque, ("opq", (idx, r.name))) for r in regs]
        args = [self.value(inst, o) for o in ops[1:]]
        try:
            v = self._compute(inst, op, args)
        except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError):
            v = None
        if v is TOP or v is None:
            v = _new(Opaque, ("opq", idx))  # made only when needed (most definitions have a value)
        return [v]

    def _shfl(self, inst: Instruction) -> Value:
        """The value ``shfl.sync.idx`` gives from a constant source lane: the source lane's thread expression, or
        the source itself when it is the same in every lane (PTX ISA §9.7.9.6 shfl.sync)."""
        ops = inst.operands
        if inst.has("idx") and len(ops) >= 3:
            src = self.value(inst, ops[1])
            lane = self.value(inst, ops[2])
            if type(lane) is Const:
                if type(src) is Tid:
                    return Tid("tid", ("shfl", src.expr, lane.value))
                if is_stable(src):
                    return src
        return Opaque("opq", inst.index)

    def _selp_test(self, inst: Instruction, cmp: str, a: Value, b: Value) -> Value | None:
        """``setp.eq/ne r, k`` where ``r = selp c1, c0, q`` (two different constants): the predicate ``q``, its
        negation, or a constant, instead of a comparison of the constant set {c1, c0}.  nvcc writes a C++ ``bool``
        passed to inline asm as ``"r"`` this way (``selp.u32 %r, 1, 0, %p`` then ``setp.ne.b32 q, %r, 0``); keeping
        ``q`` keeps what the predicate was computed from (the CTA's rank, a warp role).  None when not that form."""
        if cmp not in ("eq", "ne") or len(inst.operands) < 3:
            return None
        for k, (val, other) in enumerate(((a, b), (b, a))):
            if type(val) is not ConstSet or type(other) is not Const:
                continue
            o = inst.operands[1 + k]
            if type(o) is not Reg:
                continue
            defs = self._reaching(inst, o.name)
            if len(defs) != 1:
                continue
            d = self.insts[defs[0]]
            ops = d.operands
            if d.op != "selp" or len(ops) != 4 or type(i1 := ops[1]) is not Imm or type(i0 := ops[2]) is not Imm:
                continue
            c1, c0, q = i1.value, i0.value, self.value(d, ops[3])
            if c1 == c0 or q is TOP:
                continue
            kk = other.value
            r = q if kk == c1 else (pnot_value(q) if kk == c0 else Const("c", 0))
            return pnot_value(r) if cmp == "ne" else r
        return None

    def computed(self, inst: Instruction, args: list[Value]) -> Value | None:
        """The value ``inst`` computes when its source operands (``inst.operands[1:]``, in order) hold ``args``:
        the transfer of the fixed point for one instruction, asked of other values than the ones it found (a path's
        register constants: ``threads.GuardOracle.resolve``); None when unknown (the fixed point makes it opaque).
        Integer results are those of ``fold_op`` (PTX ISA §9.7.1: wrapping to the destination type)."""
        return self._compute(inst, inst.op, args)

    def _compute(self, inst: Instruction, op: str, args: list[Value]) -> Value | None:
        """The value ``inst`` (opcode ``op``) computes from its source operands' values ``args`` (None: unknown,
        made opaque by the caller)."""
        idx = inst.index
        if op in ("mov", "cvt", "cvta"):
            if not args:
                return None
            return args[-1] if op != "mov" else args[0]
        if "pred" in inst.parts and op in ("and", "or", "xor", "not"):
            if op == "not":
                return pnot_value(args[0]) if args and args[0] is not TOP else None
            if len(args) < 2 or TOP in args:
                return None
            if op == "and":
                return PAnd("pand", args[0], args[1])
            if op == "or":
                return POr("por", args[0], args[1])
            return None
        if op in FOLDED_OPS and args and all(isinstance(a, _CONSTS) for a in args) \
                and (op != "setp" or all(type(a) is Const for a in args)):
            # integer arithmetic on constants (a ``setp`` of a constant set keeps the predicate: ``_selp_test``)
            return fold_values(inst.parts, args)
        if op in _ARITH:
            if len(args) < 2:
                return None
            name = "mul" if op == "mul" else _ARITH[op]
            if op == "mul" and inst.has("hi"):
                # the type names the operands' width and signedness, which the high half depends on
                ty = int_type(inst)
                return _generic(f"mulhi.{ty}" if ty is not None else "mulhi", args, idx)
            r = _binop(name, args[0], args[1], idx)
            if isinstance(r, _CONSTS) and isinstance(args[0], _CONSTS) and isinstance(args[1], _CONSTS) \
                    and not inst.has("wide"):
                r = _wrapped(r, int_type(inst))  # §5.2: the result is the value modulo 2^w of the register
            return r
        if op == "mad" and len(args) == 3 and not inst.has("hi"):
            return _binop("add", _binop("mul", args[0], args[1], idx), args[2], idx)
        if op == "neg" and args:
            return _binop("sub", Const("c", 0), args[0], idx)
        if op == "not" and args:
            match args[0]:
                case Const(value=k):
                    return const(~k)
                case Cmp() | PNot() | PAnd() | POr() as pa:
                    return pnot_value(pa)
                case Op() as oa:
                    return _binop("sub", const(-1), oa, idx)  # ~x == -1 - x in two's complement (§9.7.8.x ``not``)
            return _generic("not", args, idx)
        if op == "setp":
            cmp = next((p for p in inst.parts[1:] if p in _CMP), None)
            if cmp is None or len(args) < 2:
                return None
            ty = int_type(inst)
            a, b = args[0], args[1]
            if ty is not None and type(a) is Const and type(b) is Const:
                a, b = const(_wrap(a.value, ty)), const(_wrap(b.value, ty))
            p = self._selp_test(inst, cmp, a, b) or cmp_value(cmp, a, b, ty)
            if p is None:
                return None
            if len(args) >= 3:  # setp.cmp.bop: combined with a third predicate operand
                bop = next((q for q in inst.parts if q in ("and", "or", "xor")), None)
                if bop == "and":
                    return PAnd("pand", p, args[2])
                if bop == "or":
                    return POr("por", p, args[2])
                return None
            return p
        if op == "bfe" and len(args) == 3:
            field = _bfe(args[0], args[1], args[2], int_type(inst))
            if field is not None:
                return field
            if not inst.has("s32") and not inst.has("s64"):
                return _generic("bfe", args, idx)  # unsigned bit-field extract of uniform values, kept symbolic
            return None
        if op == "redux" and len(args) >= 1:
            return _redux(inst, args[0])
        if op == "selp" and len(args) == 3:
            c = args[2]
            if type(c) is Const:
                return args[0] if c.value else args[1]
            if args[0] == args[1]:
                return args[0]
            if type(c) is Tid and all(type(a) is Const or type(a) is Tid for a in args[:2]):
                # a value chosen per thread: a thread expression (the warp role of CUTLASS's WarpCategory)
                return Tid("tid", ("sel", c.expr, *(_tid_expr(a) for a in args[:2])))
            ka, kb = const_candidates(args[0]), const_candidates(args[1])
            if ka is not None and kb is not None and len(ka | kb) <= MAX_SET:
                return ConstSet("cs", frozenset(ka | kb))
            return _generic("selp", args, idx)
        if op == "ld" or op == "ldu":
            if not args:
                return None
            a = args[0]
            if type(a) is not SymAddr:
                return None
            if a in self.slots:
                return TmemAddr("tmem", a, 0, 0)
            if inst.has("param"):
                if a.name in self.param_names:
                    return Param("param", a.name, a.offset)
                return self.returns.get(a.name) if a.offset == 0 else None
            return None
        if op == "shfl":
            return self._shfl(inst)
        if op == "elect":
            return self._elected(inst)
        return None

    def _elected(self, inst: Instruction) -> Value:
        """The predicate ``elect.sync d|p, membermask`` writes: ``("tid", ("elect",))`` for the full member mask
        (``0xffffffff``, as CUTLASS, DeepGEMM and ThunderKittens write it), one thread expression for all such
        elections, since PTX ISA 9.0 §9.7.13.12 elects "the same leader thread ... for the same membermask every
        time" (and ``.sync`` makes every thread of the mask execute it, so the active set is the mask).  Any other
        mask (a constant subset, a register such as ``activemask``'s result) gets a key of its own instruction,
        ``("tid", ("elect", ("at", index)))``: its leader may be another lane, so it is not identified with any
        other election (``eval_tid`` still counts it as one lane); so does a full-mask election where the warp may
        not be converged (``diverged_elections``)."""
        if self._full_mask(inst) and inst.index not in self.diverged_elections:
            return Tid("tid", ("elect",))
        return Tid("tid", ("elect", ("at", inst.index)))

    def _full_mask(self, inst: Instruction) -> bool:
        """Whether the ``elect.sync`` ``inst`` names the full member mask ``0xffffffff``."""
        ops = inst.operands
        m = self.value(inst, ops[1]) if len(ops) >= 2 else TOP
        return type(m) is Const and m.value & 0xFFFFFFFF == 0xFFFFFFFF


def _bfe(a: Value, pos: Value, length: Value, ty: str | None) -> Value | None:
    """``bfe.ty d, a, pos, length`` with constant ``pos`` and ``length`` of a constant or a thread expression ``a``
    (PTX ISA §9.7.1 integer arithmetic: bfe): the field of ``min(length, w - pos)`` bits of ``a`` (as a ``w``-bit register holds it)
    from bit ``pos`` up, zero-extended for ``.u32``/``.u64``, sign-extended from its top bit for ``.s32``/``.s64``;
    0 when the length is 0 or, unsigned, when the field starts beyond the msb.  ``pos`` and ``length`` are taken
    modulo 256 (the ISA restricts them to 0..255).  A warp index ``bfe.u32 %r, %tid.x, 5, 3`` becomes
    ``(tid.x >> 5) & 7``.  None for any other operands (a register start or length, a uniform ``a``)."""
    if ty is None or ty[0] not in "us" or ty[1:] not in ("32", "64"):
        return None
    if type(pos) is not Const or type(length) is not Const or (type(a) is not Const and type(a) is not Tid):
        return None
    w = int(ty[1:])
    p, n = pos.value & 0xFF, length.value & 0xFF
    signed = ty[0] == "s"
    if n == 0 or (p >= w and not signed):
        return Const("c", 0)
    if p >= w:  # signed, start beyond the msb: the sign bit a[msb] replicated (an arithmetic shift by w - 1)
        return _bfe_expr(a, ("shr", ("wrap", ty, _tid_expr(a)), w - 1))
    n = min(n, w - p)
    field: tuple[Any, ...] = ("and", ("shr", ("wrap", "u" + ty[1:], _tid_expr(a)), p), (1 << n) - 1)
    if signed:  # the field's top bit a[pos + n - 1] extends it: field - (top << n)
        field = ("bin", "sub", field, ("shl", ("and", ("shr", field, n - 1), 1), n))
    return _bfe_expr(a, field)


def _tid_expr(a: Value) -> tuple[Any, ...]:
    """The thread expression of a constant or thread-expression value ``a``."""
    if type(a) is Const:
        return ("k", a.value)
    assert type(a) is Tid
    return a.expr


def _bfe_expr(a: Value, e: tuple[Any, ...]) -> Value:
    """``e`` (built from ``a`` by ``_bfe``) as a value: a constant when ``a`` is one, else a thread expression."""
    if type(a) is Const:
        return const(eval_tid(e, range(0, 1))[0])
    return Tid("tid", e)


_REDUX_IDEMPOTENT = frozenset({"min", "max", "and", "or"})


def _redux(inst: Instruction, src: Value) -> Value | None:
    """``redux.sync.op.ty d, src, membermask`` (PTX ISA §9.7.13.13 redux.sync: the reduction of ``src`` over the
    non-exited threads of ``membermask``, all of one warp, the executing thread among them) when every
    participant gives the same ``src``: a ``.min``/``.max``/``.and``/``.or`` of one value is that value, whatever
    the mask.  That holds for a CTA-uniform ``src`` and for a *warp-uniform* thread expression (one value on all 32
    lanes of each warp: ``%tid.x >> 5``), so ``redux.sync.min.u32 %r, %warp, -1`` keeps the warp index.  None
    (opaque) for ``.add``/``.xor`` (they count the participants), ``.f32`` and any other source."""
    op = next((p for p in inst.parts[1:] if p in _REDUX_IDEMPOTENT), None)
    if op is None or "sync" not in inst.parts or "f32" in inst.parts or src is TOP:
        return None
    match src:
        case Tid(expr=e) if _warp_uniform(e):
            return src
        case Const() | SReg() | Param() | SymAddr():
            return src
    return None


#: Operations whose result is one value on a warp's lanes when every register they read is (``ValueAnalysis.
#: _same_on_warp_at``): moves, comparisons, selections, logic, integer arithmetic and bit operations, loads (one
#: address, one value).
_WARP_SAME_OPS = frozenset({"mov", "setp", "selp", "or", "and", "xor", "not", "cvt", "cvta", "add", "sub", "mul",
                            "mad", "mul24", "mad24", "div", "rem", "min", "max", "neg", "abs", "shl", "shr", "shf",
                            "lop3", "prmt", "popc", "clz", "brev", "bfe", "bfi", "bfind", "ld"})


def _same_on_warp(v: Value, depth: int = 0) -> bool:
    """Whether value ``v`` is known to be one value on the lanes of a warp by its form: a constant, a kernel
    parameter, a shared symbol, a special register of one value per CTA (``SReg``), a thread expression of the
    warp index (``_warp_uniform``), and negations, conjunctions, disjunctions and comparisons of such values (a
    role test ``warp != 1 || %cluster_ctarank != 0``)."""
    if depth > 16:
        return False
    match v:
        case Const() | Param() | SymAddr() | SReg():
            return True
        case Tid(expr=e):
            try:
                return _warp_uniform(e)
            except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
                return False
        case PNot(p=p):
            return _same_on_warp(p, depth + 1)
        case POr(p=p, q=q) | PAnd(p=p, q=q):
            return _same_on_warp(p, depth + 1) and _same_on_warp(q, depth + 1)
        case Cmp(a=a, b=b):
            return _same_on_warp(a, depth + 1) and _same_on_warp(b, depth + 1)
    return False


def _warp_uniform(e: tuple[Any, ...]) -> bool:
    """Whether thread expression ``e`` has one value on the 32 lanes of each warp for every ``%tid.x`` in
    [0, 1024) (a function of the warp index ``%tid.x >> 5`` only)."""
    vals = eval_tid(e, range(0, 1024))
    return all(len(set(vals[w:w + 32])) == 1 for w in range(0, 1024, 32))


def _join(a: Value, b: Value) -> Value:
    """Join of two different values: TMEM addresses of one allocation stay TMEM addresses (offsets that
    disagree become unknown); anything else is TOP."""
    match a, b:
        case TmemAddr(slot=s1, col=c1, lane=l1), TmemAddr(slot=s2, col=c2, lane=l2) if s1 == s2:
            return TmemAddr("tmem", s1, c1 if c1 == c2 else None, l1 if l1 == l2 else None)
        case (SymAddr(name=n1) | SymInside(name=n1)), (SymAddr(name=n2) | SymInside(name=n2)) if n1 == n2:
            return SymInside("symx", n1)
    return TOP


@lru_cache(maxsize=4096)
@lru_cache(maxsize=1 << 16)
def _special(name: str) -> Value | None:
    """The value of special register ``name`` (``%tid.x``, ``%laneid``, uniform ``%ctaid``-like ones), or None
    for an ordinary register."""
    if name == "%tid.x":
        return Tid("tid", ("x",))
    if name == "%laneid":
        return Tid("tid", ("and", ("x",), 31))
    for p in _UNIFORM_SREGS:
        if name == p or name.startswith(p + "."):
            return SReg("sreg", name)
    if name.startswith("%tid") or name in ("%warpid", "%smid", "%clock", "%clock64", "%globaltimer"):
        return Opaque("opq", ("sreg", name))
    return None


def pnot_value(p: Value) -> Value:
    """The negation of predicate value ``p`` (a comparison negated in place, a constant flipped)."""
    match p:
        case Top():
            return TOP
        case PNot(p=inner):
            return inner
        case Cmp(cmp=c, a=a, b=b):
            return Cmp("cmp", NEGATE[c], a, b)
        case Const(value=k):
            return const(0 if k else 1)
    return PNot("pnot", p)


def cmp_value(cmp: str, a: Value, b: Value, ty: str | None = None) -> Value | None:
    """The predicate ``a cmp b``; ``ty`` is the comparison's integer type (``setp.gt.u32``: ``u32``), None when
    unknown.  A thread expression that may be negative, compared as an unsigned or bit type, is compared as the
    register holds it (``("wrap", ty, e)``): compilers test a warp range ``4 <= w <= 11`` as ``(w - 4) <=u 7``,
    which is false for warps 0-3 only because ``w - 4`` wraps (PTX ISA §5.2, §9.7.6.2 setp)."""
    if a is TOP or b is TOP:
        return None
    if type(a) is Const:
        if type(b) is Const:
            return const(1 if _CMP[cmp](a.value, b.value) else 0)
        a, b, cmp = b, a, _SWAP[cmp]
    if type(a) is Tid and type(b) is Const:
        if ty is not None and ty[0] in "ub" and _may_be_negative(a.expr):
            return Tid("tid", ("cmp", cmp, ("wrap", ty, a.expr), _wrap(b.value, ty)))
        return Tid("tid", ("cmp", cmp, a.expr, b.value))
    return Cmp("cmp", cmp, a, b)


def _may_be_negative(e: tuple[Any, ...]) -> bool:
    """Whether thread expression ``e`` (see ``eval_tid``) may evaluate to a negative number: it subtracts, adds
    or multiplies by a negative constant, or holds a negative constant."""
    tag = e[0]
    if tag == "k":
        return bool(e[1] < 0)
    if tag in ("sub", "neg"):
        return True
    if tag in ("add", "mul") and isinstance(e[2], int) and e[2] < 0:
        return True
    if tag == "bin" and e[1] == "sub":
        return True
    return any(isinstance(x, tuple) and x and _may_be_negative(x) for x in e[1:])


#: Symbolic ("op", ...) values deeper than this become opaque: long arithmetic chains (address computations of
#: unrolled loops) never need to be compared.  Deep enough for a loop's trip count recomputed by each warp role
#: from the kernel's parameters and the CTA's coordinates (FA4's ``ceil_div(seqlen_q, 128) - max((n_block * 256 +
#: seqlen_q - seqlen_k) / 128, 0)``: 11 operations, the signed divisions written as shift/add idioms).
MAX_DEPTH = 12


def _depth(v: Value) -> int:
    """The nesting depth of an ``("op", ...)`` value (its last item), 0 for any other value."""
    return v.depth if type(v) is Op else 0


def _generic(name: str, args: list[Value], idx: int) -> Value:
    """``("op", name, *args, depth)`` (an ``Op``) when every argument is a stable uniform value and the result is
    no deeper than ``MAX_DEPTH``, else an opaque value of definition ``idx``."""
    if all(type(a) is not Tid and type(a) is not TmemAddr and is_stable(a) for a in args):
        d = 1 + max((_depth(a) for a in args), default=0)
        if d <= MAX_DEPTH:
            return Op(("op", name, *args, d))
    return Opaque("opq", idx)


def _add(a: Value, b: Value, idx: int) -> Value:
    return _binop("add", a, b, idx)


MAX_SET = 16


def const_candidates(v: Value) -> frozenset[int] | None:
    """The possible integer values of ``v`` when it is a constant or a small constant set, else None."""
    if type(v) is Const:
        return frozenset((v.value,))
    if type(v) is ConstSet:
        return v.values
    return None


def _wrapped(v: Value, ty: str | None) -> Value:
    """Constant or constant set ``v`` as a register of type ``ty`` holds it (PTX ISA §5.2, §9.7.1.1: integer
    arithmetic wraps at the register's width): each candidate wrapped, a set of one collapsing to a constant."""
    if type(v) is Const:
        return const(_wrap(v.value, ty))
    assert type(v) is ConstSet
    vals = frozenset(_wrap(x, ty) for x in v.values)
    return const(next(iter(vals))) if len(vals) == 1 else ConstSet("cs", vals)


def _binop(name: str, a: Value, b: Value, idx: int) -> Value:
    """``a name b`` (``add``, ``sub``, ``mul``, ``shl`` ...: the ``threadexpr.BIN`` operators) on two values."""
    if a is TOP or b is TOP:
        return opaque(idx)
    if type(a) is Const and type(b) is Const:
        return const(_BIN[name](a.value, b.value))
    if isinstance(a, _CONSTS) and isinstance(b, _CONSTS):  # one of them a constant set
        ca, cb = const_candidates(a), const_candidates(b)
        assert ca is not None and cb is not None
        vals = frozenset(_BIN[name](x, y) for x in ca for y in cb)
        if len(vals) == 1:
            return const(next(iter(vals)))
        return ConstSet("cs", vals) if len(vals) <= MAX_SET else opaque(idx)
    if name in ("add", "or") and type(a) is Const:
        a, b = b, a
    if type(b) is Const:
        k = b.value
        match a:
            case SymAddr(name=var, offset=off) if name == "add":
                return SymAddr("sym", var, off + k)
            case SymAddr(name=var, offset=off) if name == "sub":
                return SymAddr("sym", var, off - k)
            case TmemAddr() if name in ("add", "sub", "or"):
                return _tmem_add_const(a, -k if name == "sub" else k)
            case Tid(expr=e):
                return Tid("tid", (name, e, k))
        if k == 0 and name in ("add", "sub", "or", "xor", "shl", "shr"):
            return a
    match a, b:
        case (Const() | Tid()), Tid(expr=eb) if name in _BIN:
            return Tid("tid", ("bin", name, _tid_expr(a), eb))
        case TmemAddr(), Tid(expr=eb) if name in ("add", "or"):
            return _tmem_add_tid(a, eb)
        case Tid(expr=ea), TmemAddr() if name in ("add", "or"):
            return _tmem_add_tid(b, ea)
        case TmemAddr(slot=slot), _ if name in ("add", "sub", "or"):
            return TmemAddr("tmem", slot, None, None)  # still this allocation's address, at an unknown offset
        case _, TmemAddr(slot=slot) if name in ("add", "or"):
            return TmemAddr("tmem", slot, None, None)
        case SymAddr(name=var), _ if name in ("add", "sub"):
            return SymInside("symx", var)  # somewhere inside variable ``var``, offset unknown
        case _, SymAddr(name=var) if name == "add":
            return SymInside("symx", var)
        case SymInside(), _ if name in ("add", "sub", "and", "or"):
            return a
    moved = _reassociated(name, a, b, idx)
    if moved is not None:
        return moved
    return _generic(name, [a, b], idx)


def _reassociated(name: str, a: Value, b: Value, idx: int) -> Value | None:
    """``x + (k - y)`` (either order) as ``(x - y) + k``, with ``k`` a constant: exact modulo 2^w (PTX ISA §5.2), so
    that a count written ``a + ~b`` (``~b == -1 - b``) and one written ``a - b`` share the base ``a - b`` of
    ``threads``' linear bounds; None for any other form."""
    if name != "add":
        return None
    for x, y in ((a, b), (b, a)):
        match x, y:
            case Op(), Op(name="sub", args=(Const() as k, z)):
                diff = _binop("sub", x, z, idx)
                if type(diff) is Op:
                    return _binop("add", diff, k, idx)
    return None


def _tmem_add_const(a: Value, k: int) -> Value:
    """``a + k`` on the packed 32-bit TMEM address (lane in bits 31-16, column in bits 15-0): a column that
    leaves [0, 65536) borrows from or carries into the lane field."""
    assert type(a) is TmemAddr
    _, slot, col, lane = a
    if col is not None and isinstance(lane, int):
        packed = ((lane << 16) + col + k) & 0xFFFFFFFF
        return TmemAddr("tmem", slot, packed & 0xFFFF, packed >> 16)
    if col is not None and 0 <= col + k < 0x10000 and -0x10000 < k < 0x10000:
        return TmemAddr("tmem", slot, col + k, lane)
    if col is None and -0x10000 < k < 0x10000:
        return TmemAddr("tmem", slot, None, lane)  # a column offset from an unknown column: the lane field stays
    ncol = (col + (k & 0xFFFF)) & 0xFFFF if col is not None else None
    dl = k >> 16
    nlane: object
    if isinstance(lane, int):
        nlane = lane + dl
    elif lane is None or dl == 0:
        nlane = lane
    else:
        nlane = ("add", lane, dl)
    return TmemAddr("tmem", slot, ncol, nlane)


def _tmem_add_tid(a: Value, expr: tuple[Any, ...]) -> Value:
    """``a + expr`` for TMEM address ``a`` and thread expression ``expr``: a lane offset when ``expr`` is a
    multiple of 65536 for every ``%tid.x`` in [0, 1024) (lane in bits 31-16, PTX ISA §9.7.16.2), else an unknown
    address of the allocation."""
    assert type(a) is TmemAddr
    _, slot, col, lane = a
    vals = eval_tid(expr, range(0, 1024))
    if all(v & 0xFFFF == 0 for v in vals):
        add = ("shr", expr, 16)
        nlane: object
        if lane == 0:
            nlane = add
        elif isinstance(lane, int):
            nlane = ("add", add, lane)
        else:
            nlane = None
        return TmemAddr("tmem", slot, col, nlane)
    return TmemAddr("tmem", slot, None, None)
