"""Typed intermediate representation of a PTX module.

The frontend (``tmemlint.frontend``) builds these objects from the Lark grammar; analyses and rules only ever see
them, never parse trees.  Positions are 1-based lines and columns of the PTX text; ``SourcePos`` carries the CUDA
file and line from the most recent ``.loc`` directive (PTX ISA 9.0, §11.5.3 ``.loc``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Union


class Span(NamedTuple):
    """A range of PTX text: 1-based ``line``/``column`` of the first character, ``end_column`` one past the last
    character on ``end_line``.  (A named tuple: created once per instruction, it must be cheap.)"""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class SourcePos:
    """A position in the high-level source, from ``.loc FILE LINE COL`` (``file`` resolved through ``.file``).

    ``inlined_at`` lists the call sites (outermost last) when the ``.loc`` has ``inlined_at`` clauses."""

    file: str
    line: int
    column: int
    inlined_at: tuple["SourcePos", ...] = ()


# ----------------------------------------------------------------------------------------------- operands


@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand: ``%r1``, a special register ``%tid.x``, or a scope-local name (``p`` in an inline-asm
    scope, renamed ``p@3`` by the frontend so that sibling scopes do not collide)."""

    name: str


@dataclass(frozen=True, slots=True)
class NotReg:
    """A negated predicate operand ``!%p`` (PTX ISA §9.7.3 logic operands)."""

    reg: Reg


@dataclass(frozen=True, slots=True)
class RegPair:
    """Two destinations ``%p|%q`` (``setp``, ``elect.sync``, ``shfl.sync``); either may be the sink ``_``."""

    first: Union[Reg, "Sym"]
    second: Union[Reg, "Sym"]


@dataclass(frozen=True, slots=True)
class Imm:
    """An integer immediate (two's-complement value as written; ``U`` suffix dropped)."""

    value: int


@dataclass(frozen=True, slots=True)
class FloatImm:
    """A floating-point immediate, kept as written (``0f3F800000``, ``1.0``)."""

    text: str


@dataclass(frozen=True, slots=True)
class Sym:
    """A symbol operand: a variable (address of), a label, a function name, or ``_``; ``offset`` in bytes."""

    name: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Vec:
    """A brace-enclosed vector operand ``{%r1, %r2}``."""

    items: tuple["Operand", ...]


@dataclass(frozen=True, slots=True)
class ParenList:
    """A parenthesised operand list of a ``call`` (return values or arguments)."""

    items: tuple["Operand", ...]


@dataclass(frozen=True, slots=True)
class Address:
    """A memory operand ``[base+offset]``; ``base`` is a register, a symbol, or ``None`` for an absolute address
    (then ``offset`` is the address).  ``coords`` holds the coordinate vector of tensor forms ``[tmap, {x, y}]``."""

    base: Reg | Sym | None
    offset: int = 0
    coords: "Operand | None" = None


Operand = Union[Reg, NotReg, RegPair, Imm, FloatImm, Sym, Vec, ParenList, Address]


# ----------------------------------------------------------------------------------------------- statements


@dataclass(frozen=True, slots=True)
class Guard:
    """Instruction guard ``@%p`` (``negated`` for ``@!%p``), PTX ISA §9.3.1 predicated execution."""

    reg: Reg
    negated: bool


@dataclass(slots=True, eq=False)
class Instruction:
    """One PTX instruction.

    ``opcode`` is the full dotted name as written (``tcgen05.ld.sync.aligned.32x32b.x2.b32``); ``parts`` is it split
    on ``.`` (``::`` stays inside a part).  ``index`` is the position in the function's flat instruction list."""

    opcode: str
    parts: tuple[str, ...]
    guard: Guard | None
    operands: tuple[Operand, ...]
    span: Span
    src: SourcePos | None = None
    index: int = -1
    #: The base opcode: ``ld`` for ``ld.shared.b32`` (computed from ``parts``).
    op: str = field(default="", compare=False)
    #: ``tcgen05.alloc`` for tcgen05 instructions (first two parts), otherwise the base opcode.
    family: str = field(default="", compare=False)
    #: Registers written and read, computed on first use by ``tmemlint.analysis.values.defined_regs`` /
    #: ``used_regs`` (after the frontend has finished the instruction).
    defs: "tuple[Reg, ...] | None" = field(default=None, compare=False, repr=False)
    uses: "tuple[Reg, ...] | None" = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        parts = self.parts
        self.op = parts[0]
        self.family = "tcgen05." + parts[1] if parts[0] == "tcgen05" and len(parts) > 1 else parts[0]

    def has(self, part: str) -> bool:
        """Whether the opcode carries the qualifier ``part`` (without its dot): ``i.has("shared::cta")``."""
        return part in self.parts

    def part_with_prefix(self, prefix: str) -> str | None:
        """The first qualifier starting with ``prefix`` (``"cta_group::"`` → ``"cta_group::2"``), or None."""
        for p in self.parts:
            if p.startswith(prefix):
                return p
        return None

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<{self.span.line}: {self.opcode}>"


@dataclass(slots=True, eq=False)
class Label:
    """A label definition ``name:`` at position ``index`` of the flat instruction list (the next instruction)."""

    name: str
    span: Span
    index: int = -1


@dataclass(slots=True)
class Variable:
    """A variable declaration: ``space`` is the state space (``shared``, ``global``, ``local``, ``param``,
    ``const``, ``reg``); ``size`` in bytes when known; ``extern`` for ``.extern`` declarations."""

    name: str
    space: str
    type: str | None
    size: int | None
    align: int | None
    extern: bool
    span: Span


@dataclass(slots=True)
class Function:
    """An ``.entry`` (kernel) or ``.func`` with its flat body.

    ``instructions`` is the body in program text order with inline-asm scopes flattened (scope-local names
    renamed); ``labels`` maps a label name to its index in ``instructions`` (the instruction that follows it).
    ``directives`` holds performance directives (``maxntid``, ``reqntid``, ``minnctapersm``,
    ``reqnctapercluster``, ``maxnreg``, ``explicitcluster``) with their integer values (PTX ISA §11.4)."""

    name: str
    is_entry: bool
    span: Span
    params: list[Variable] = field(default_factory=list)
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)
    instructions: list[Instruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    label_spans: dict[str, Span] = field(default_factory=dict)
    branch_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    variables: dict[str, Variable] = field(default_factory=dict)
    has_body: bool = True

    def threads_per_cta(self) -> tuple[int, int, int] | None:
        """``(x, y, z)`` threads from ``.reqntid`` or ``.maxntid`` (missing dimensions are 1), or None."""
        for key in ("reqntid", "maxntid"):
            dims = self.directives.get(key)
            if dims:
                d = list(dims) + [1, 1]
                return (d[0], d[1], d[2])
        return None


@dataclass(slots=True)
class Module:
    """A parsed PTX file: ``version`` (``"9.0"``), ``target`` (``["sm_100a"]``), ``address_size`` in bits,
    ``files`` maps ``.file`` numbers to names, ``variables`` holds module-scope declarations."""

    path: str
    version: str | None = None
    target: list[str] = field(default_factory=list)
    address_size: int | None = None
    files: dict[int, str] = field(default_factory=dict)
    functions: list[Function] = field(default_factory=list)
    variables: dict[str, Variable] = field(default_factory=dict)
    line_count: int = 0

    def function(self, name: str) -> Function | None:
        """The function (definition preferred over prototype) called ``name``, or None."""
        found = None
        for f in self.functions:
            if f.name == name:
                if f.has_body:
                    return f
                found = f
        return found
