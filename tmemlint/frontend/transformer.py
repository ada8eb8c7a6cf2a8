"""Lark callbacks that build the typed IR (``tmemlint.ir``) while the LALR parser runs.

The transformer is passed to the parser itself (Lark's inline-transformer mode), so no parse tree is ever built:
each grammar rule's callback receives its children and returns IR objects.  Inline-asm scopes (``{ .reg .pred p;
... }``) are returned as nested ``_Scope`` objects and flattened by ``flatten_body``, which renames scope-local
registers and labels (PTX ISA §11.1: a name declared in a block shadows outer names and is local to the block).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the tokens of lark, lark-cython or the generated parser (tmemlint.frontend.ptx_lalr): same fields
    from lark import Token

from tmemlint.frontend.opcode import instruction_name
from tmemlint.ir import (
    Address,
    FloatImm,
    Function,
    Guard,
    Imm,
    Instruction,
    Label,
    NotReg,
    ParenList,
    Reg,
    RegPair,
    Span,
    Sym,
    Variable,
    Vec,
)

_LOC_RE = re.compile(r"\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)")
_INLINED_RE = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_REGS: dict = {}  # interned Reg operands (immutable): a kernel names each register many times
_LOC_CACHE: dict = {}  # .loc text → _Loc (real files repeat the same .loc lines many times)
_STATE_SPACES = {"reg", "sreg", "const", "global", "local", "param", "shared", "tex"}
_TYPE_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8, "128": 16}


def parse_int(text) -> int:
    """Value of a PTX integer literal (decimal, ``0x`` hex, ``0b`` binary, legacy octal, ``U`` suffix).

    Raises ValueError for text that is not an integer literal."""
    t = (text if type(text) is str else text.value).rstrip("U")
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t[0] == "0":
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


def _span(first: Token, last: Token | None = None) -> Span:
    last = last or first
    return Span(first.line, first.column, last.end_line or last.line, last.end_column or last.column)


@dataclass(slots=True)
class Decl:
    quals: list[tuple[str, int | None]]
    items: list[tuple[str, int | None, int | None, Token]]  # name, range count, array elems, token


@dataclass(slots=True)
class _Scope:
    statements: list


@dataclass(slots=True)
class _Loc:
    file: int
    line: int
    column: int
    inlined: tuple[tuple[int, int, int], ...]


@dataclass(slots=True)
class _Pragma:
    pass


@dataclass(slots=True)
class _BranchTargets:
    targets: tuple[str, ...]


@dataclass(slots=True)
class _Body:
    statements: list


def _decl_space(quals: list[tuple[str, int | None]]) -> tuple[str, str | None, int | None, bool]:
    space, typ, align, extern = "reg", None, None, False
    for q, v in quals:
        if q in _STATE_SPACES:
            space = q
        elif q == "align":
            align = v
        elif q == "extern":
            extern = True
        elif q[:1] in "busf" and q[1:] in _TYPE_SIZES or q == "pred":
            typ = q
    return space, typ, align, extern


def _type_size(typ: str | None) -> int | None:
    if typ is None or typ == "pred":
        return None
    return _TYPE_SIZES.get(typ[1:])


class IRBuilder:
    """Inline transformer for ``grammars/ptx.lark``: the parser looks its callbacks up by rule and terminal name,
    so it is no ``lark.Transformer`` subclass and serves Lark, lark-cython and the generated parser alike.

    After a parse, ``module_items`` holds the top-level results in order (``Function`` objects, module variables,
    and ``("version"|"target"|"address_size"|"file", value)`` tuples); ``tmemlint.frontend.parser`` assembles them
    into a ``Module``."""

    # ---- operands -------------------------------------------------------------------------------------------
    def reg(self, c):
        name = c[0].value
        r = _REGS.get(name)
        if r is None:
            r = _REGS[name] = Reg(name)
        return r

    def not_reg(self, c):
        return NotReg(Reg(c[0].value))

    def reg_pair(self, c):
        def one(t):
            return Reg(t.value) if t.type == "REG" else Sym(t.value)

        return RegPair(one(c[0]), one(c[1]))

    def symbol(self, c):
        return Sym(c[0].value)

    def symbol_offset(self, c):
        return Sym(c[0].value, parse_int(c[1]))

    def int_imm(self, c):
        return Imm(parse_int(c[0]))

    def float_imm(self, c):
        return FloatImm(c[0].value)

    def vector(self, c):
        return Vec(tuple(c))

    def paren_list(self, c):
        return ParenList(tuple(c))

    def offset(self, c):
        return parse_int(c[0])

    offset_signed = offset

    def addr_reg(self, c):
        return Address(Reg(c[0].value), c[1] if len(c) > 1 else 0)

    def addr_symbol(self, c):
        return Address(Sym(c[0].value), c[1] if len(c) > 1 else 0)

    def addr_imm(self, c):
        return Address(None, parse_int(c[0]))

    def address_operand(self, c):
        return c[0]

    def tensor_address(self, c):
        a = c[0]
        return Address(a.base, a.offset, c[1])

    def operands_first(self, c):
        return [c[0]]

    def operands_more(self, c):
        c[0].append(c[1])
        return c[0]

    def statements_empty(self, c):
        return []

    def statements_more(self, c):
        c[0].append(c[1])
        return c[0]

    def statements_same(self, c):
        return c[0]

    # ---- statements -----------------------------------------------------------------------------------------
    def instruction(self, c):
        guard = None
        first = c[0]
        i = 0
        if first.type == "GUARD":
            g = first.value[1:]
            neg = g.startswith("!")
            guard = Guard(Reg(g[1:] if neg else g), neg)
            i = 1
        op_tok = c[i]
        operands = tuple(c[i + 1]) if len(c) > i + 2 else ()
        semi = c[-1]
        opcode = op_tok.value
        if _GAP(opcode) is not None:  # blank space or a comment before a qualifier (grammars/ptx.lark OPCODE)
            opcode = _close_gaps(op_tok)
        return Instruction(opcode, tuple(opcode.split(".")), guard, operands, _span(first, semi))

    def label(self, c):
        t = c[0]
        return Label(t.value.rstrip(": \t"), _span(t))

    def loc(self, c):
        text = c[0].value
        got = _LOC_CACHE.get(text)
        if got is None:
            m = _LOC_RE.match(text)
            if not m:
                return None
            inl = tuple((int(a), int(b), int(d)) for a, b, d in _INLINED_RE.findall(m.group(4)))
            got = _Loc(int(m.group(1)), int(m.group(2)), int(m.group(3)), inl)
            if len(_LOC_CACHE) < 1 << 16:
                _LOC_CACHE[text] = got
        return got

    def pragma(self, c):
        return _Pragma()

    def callprototype(self, c):
        return _Pragma()

    def branchtargets(self, c):
        return _BranchTargets(tuple(t.value for t in c))

    def scope(self, c):
        return _Scope(c[0])

    def body(self, c):
        return _Body(c[0])

    # ---- declarations ---------------------------------------------------------------------------------------
    def qualifier(self, c):
        return (c[0].value[1:], None)

    def qualifier_with_value(self, c):
        return (c[0].value[1:], parse_int(c[1]))

    def qualifiers(self, c):
        return c

    def var_name(self, c):
        return c[0]

    def reg_range(self, c):
        return ("range", parse_int(c[0]))

    def array_dims(self, c):
        n = 1
        for t in c:
            n *= parse_int(t)
        return ("array", n if c else None)

    def initializer(self, c):
        return ("init", None)

    def init_list(self, c):
        return None

    def init_scalar(self, c):
        return None

    def init_symbol(self, c):
        return None

    def init_symbol_cast(self, c):
        return None

    def var_item(self, c):
        tok = c[0]
        count = elems = None
        for extra in c[1:]:
            if extra[0] == "range":
                count = extra[1]
            elif extra[0] == "array":
                elems = extra[1] if extra[1] is not None else 0
        return (tok.value, count, elems, tok)

    def declaration(self, c):
        return Decl(c[0], c[1:])

    def param(self, c):
        quals = c[0]
        tok = c[1]
        space, typ, align, extern = _decl_space(quals)
        size = _type_size(typ)
        if len(c) > 2 and size is not None and c[2][1]:
            size *= c[2][1]
        return Variable(tok.value, space, typ, size, align, extern, _span(tok))

    def params(self, c):
        return ("params", c)

    def return_params(self, c):
        return ("return_params", c)

    def perf_directive(self, c):
        if not c or not hasattr(c[0], "type") or c[0].type != "DOTNAME":
            return ("pragma", ())
        return (c[0].value[1:], tuple(parse_int(t) for t in c[1:]))

    def function(self, c):
        quals = c[0]
        names = [q for q, _ in quals]
        name_tok = next(x for x in c[1:] if hasattr(x, "type") and hasattr(x, "value"))
        params: list[Variable] = []
        directives: dict[str, tuple[int, ...]] = {}
        body = None
        for x in c[1:]:
            if isinstance(x, tuple) and x and x[0] == "params":
                params = x[1]
            elif isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], tuple):
                if x[0] != "pragma":
                    directives[x[0]] = x[1]
            elif isinstance(x, _Body):
                body = x
        fn = Function(name_tok.value, "entry" in names, _span(name_tok), params, directives)
        fn.has_body = body is not None
        if body is not None:
            flatten_body(fn, body.statements)
        return fn

    # ---- module ---------------------------------------------------------------------------------------------
    def version(self, c):
        return ("version", c[0].value)

    def target(self, c):
        return ("target", [t.value for t in c])

    def address_size(self, c):
        return ("address_size", parse_int(c[0]))

    def file_directive(self, c):
        return ("file", (parse_int(c[0]), c[1].value[1:-1]))

    def start(self, c):
        return c


def declared_variables(decl: Decl) -> list[Variable]:
    space, typ, align, extern = _decl_space(decl.quals)
    out = []
    size = _type_size(typ)
    for name, count, elems, tok in decl.items:
        if count is not None:
            continue
        vsize = size * elems if (size is not None and elems) else (size if elems is None else None)
        out.append(Variable(name, space, typ, vsize, align, extern, _span(tok)))
    return out


#: ``{ }`` scopes nested deeper than this inside one function body make the file not analysable (TM901).
MAX_SCOPE_DEPTH = 1000


#: Something in an OPCODE token that is not part of an opcode written without gaps.
_GAP = re.compile(r"[^\w.:]").search
#: One gap of an opcode: blank space and comments (what the grammar ignores), up to the next qualifier's dot.
_GAPS = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)+", re.S)


class SpacedName(Exception):
    """An opcode with blank space inside its instruction name (``mbarrier.try_wait .parity``, ``tcgen05 .alloc``):
    ptxas rejects it (``tmemlint.frontend.opcode``).  ``line``/``column`` (1-based) are those of the qualifier
    after the gap, ``end_column`` exclusive."""

    def __init__(self, message: str, line: int, column: int, end_column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.end_column = end_column


def _close_gaps(tok: Token) -> str:
    """The opcode of the OPCODE token ``tok`` without its gaps (PTX ISA §9.1: qualifiers are tokens of their own,
    ptxas allows blank space and comments before each one).  Raises SpacedName for a gap inside the instruction
    name (``opcode.instruction_name``)."""
    text = tok.value
    pieces = _GAPS.split(text)
    opcode = "".join(pieces)
    name = instruction_name(opcode)
    done = len(pieces[0])
    if done < len(name):
        # the first gap cuts the name: the qualifier after it is where ptxas's error is
        m = _GAPS.search(text)
        at = m.end()
        line = tok.line + text.count("\n", 0, at)
        nl = text.rfind("\n", 0, at)
        column = (tok.column + at) if nl < 0 else at - nl
        width = len(pieces[1].split(".")[1]) + 1 if len(pieces) > 1 else 1
        raise SpacedName(f"blank space inside the instruction name {name!r}: ptxas allows it only before the "
                         f"qualifiers that follow the name", line, column, column + width)
    return opcode


class NestingTooDeep(Exception):
    """A function body whose ``{ }`` scopes nest deeper than ``MAX_SCOPE_DEPTH``; ``line``/``column`` are the
    function name's position."""

    def __init__(self, function: str, line: int, column: int):
        super().__init__(f"{{ }} scopes nested more than {MAX_SCOPE_DEPTH} deep in function {function}")
        self.line = line
        self.column = column


def flatten_body(fn: Function, statements: list) -> None:
    """Fill ``fn.instructions``, ``labels``, ``branch_targets`` and ``variables`` from the nested statements.

    Scope-local declarations and labels are renamed ``name@N`` (N = scope number) so that later analyses can treat
    the body as one flat list of instructions.  The walk keeps its own stack (no Python recursion); scopes nested
    deeper than ``MAX_SCOPE_DEPTH`` raise NestingTooDeep."""
    insts = fn.instructions
    counter = 0
    current_loc = None  # the raw _Loc; tmemlint.frontend.parser resolves it once .file is known
    pending_label: str | None = None

    def enter(stmts: list, renames: dict[str, str], sid: int):
        local = renames
        if sid == 0:  # the function's own scope: a register declared without '%' (CuTe DSL's named registers)
            local = dict(renames)
            for s in stmts:
                if isinstance(s, Decl) and _decl_space(s.quals)[0] == "reg":
                    for name, count, _e, _t in s.items:
                        for nm in ([name] if count is None else [f"{name}{k}" for k in range(count)]):
                            if not nm.startswith("%"):
                                local[nm] = f"%%{nm}"
        if sid > 0:  # a nested scope: its declarations and labels shadow outer names
            local = dict(renames)
            for s in stmts:
                if isinstance(s, Decl):
                    is_reg = _decl_space(s.quals)[0] == "reg"
                    for name, count, _e, _t in s.items:
                        names = [name] if count is None else [f"{name}{k}" for k in range(count)]
                        for nm in names:
                            # a register declared without '%' is written as a bare name: mark it with '%%'
                            local[nm] = (f"%%{nm}@{sid}" if is_reg and not nm.startswith("%") else f"{nm}@{sid}")
                elif isinstance(s, Label):
                    local[s.name] = f"{s.name}@{sid}"
        return iter(stmts), local

    stack = [enter(statements, {}, 0)]
    while stack:
        it, local = stack[-1]
        for s in it:
            if isinstance(s, Instruction):
                if local:
                    _rename(s, local)
                s.index = len(insts)
                s.src = current_loc
                insts.append(s)
                pending_label = None
            elif isinstance(s, Label):
                name = local.get(s.name, s.name)
                name = name[2:] if name.startswith("%%") else name
                fn.labels[name] = len(insts)
                fn.label_spans[name] = s.span
                pending_label = name
            elif isinstance(s, _Loc):
                current_loc = s
            elif isinstance(s, _BranchTargets):
                if pending_label is not None:
                    fn.branch_targets[pending_label] = tuple(local.get(t, t) for t in s.targets)
            elif isinstance(s, Decl):
                for v in declared_variables(s):
                    if v.space != "reg":
                        fn.variables[local.get(v.name, v.name)] = v
            elif isinstance(s, _Scope):
                if len(stack) > MAX_SCOPE_DEPTH:
                    raise NestingTooDeep(fn.name, fn.span.line, fn.span.column)
                counter += 1
                stack.append(enter(s.statements, local, counter))
                break
        else:
            stack.pop()


def _rename_operand(o, m: dict[str, str]):
    t = type(o)
    if t is Reg:
        n = m.get(o.name)
        return Reg(n[2:] if n.startswith("%%") else n) if n else o
    if t is Sym:
        n = m.get(o.name)
        if n and n.startswith("%%"):
            return Reg(n[2:])
        return Sym(n, o.offset) if n else o
    if t is Address:
        return Address(_rename_operand(o.base, m) if o.base is not None else None, o.offset,
                       _rename_operand(o.coords, m) if o.coords is not None else None)
    if t is Vec:
        return Vec(tuple(_rename_operand(x, m) for x in o.items))
    if t is ParenList:
        return ParenList(tuple(_rename_operand(x, m) for x in o.items))
    if t is NotReg:
        return NotReg(_rename_operand(o.reg, m))
    if t is RegPair:
        return RegPair(_rename_operand(o.first, m), _rename_operand(o.second, m))
    return o


def _rename(inst: Instruction, m: dict[str, str]) -> Instruction:
    ops = tuple(_rename_operand(o, m) for o in inst.operands)
    guard = inst.guard
    if guard is not None and guard.reg.name in m:
        n = m[guard.reg.name]
        guard = Guard(Reg(n[2:] if n.startswith("%%") else n), guard.negated)
    inst.operands = ops
    inst.guard = guard
    return inst
