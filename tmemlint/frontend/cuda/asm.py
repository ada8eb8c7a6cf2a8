"""Inline ``asm`` statements of CUDA C++: their template text, operands, and the PTX instructions they hold.

``read_asm`` takes a tree-sitter ``gnu_asm_expression`` and returns an ``AsmStatement``: the template text with
the source position of every character (adjacent literals concatenated, escapes decoded, raw strings kept), and
the output, input and clobber lists.  ``prepare`` substitutes the operand references (``%0``, ``%[name]``, ``%%``,
``%=``) and ``parse_template`` parses the text with the PTX grammar inside a synthetic ``.entry`` body, so that the
same grammar and IR builder as for ``.ptx`` files read it; each instruction's span is mapped back to the ``.cu``
characters it came from.  Operand references become placeholder registers ``%_oN``; the lowering binds them to
registers of the C++ operand expressions.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from tmemlint.frontend.cuda.preprocess import UNKNOWN_MACRO_MARK
from tmemlint.frontend.parser import PTXSyntaxError, parse_text
from tmemlint.ir import Instruction, Label, Span

Node = object  # tree_sitter.Node

PLACEHOLDER = "%_o"
_WRAP_HEAD = ".version 9.0\n.target sm_100a\n.address_size 64\n.entry __asm__()\n{\n"
_HEAD_LINES = _WRAP_HEAD.count("\n")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", "'": "'",
            '"': '"', "?": "?"}


@dataclass(slots=True)
class AsmOperand:
    """One operand of an asm statement: ``constraint`` without modifiers (``r``, ``l``, ``n``...), ``modifier``
    (``=``, ``+`` or empty), the optional ``[name]``, the C++ expression node, and the whole operand's node
    (``"=r"(x)``)."""

    constraint: str
    modifier: str
    name: str | None
    expr: Node
    node: Node = None


@dataclass(slots=True)
class AsmStatement:
    """An asm statement: ``text`` (None when it is not statically known, with ``unknown`` saying why) and
    ``positions`` (the source byte offset of each character of ``text``, in the preprocessed file)."""

    node: Node
    text: str | None
    positions: list[int]
    outputs: list[AsmOperand] = field(default_factory=list)
    inputs: list[AsmOperand] = field(default_factory=list)
    clobbers: list[str] = field(default_factory=list)
    unknown: str | None = None


def _decode_literal(node, src: bytes, text: list[str], pos: list[int]) -> str | None:
    """Append the characters of string literal ``node`` to ``text``/``pos``; return a reason when it is not a
    plain literal."""
    t = node.type
    if t == "raw_string_literal":
        for c in node.children:
            if c.type == "raw_string_content":
                s = src[c.start_byte:c.end_byte].decode("utf-8", "replace")
                b = c.start_byte
                for ch in s:
                    text.append(ch)
                    pos.append(b)
                    b += len(ch.encode("utf-8"))
        return None
    if t != "string_literal":
        return f"'{src[node.start_byte:node.end_byte].decode('utf-8', 'replace')[:60]}'"
    for c in node.children:
        ct = c.type
        if ct == "string_content":
            s = src[c.start_byte:c.end_byte].decode("utf-8", "replace")
            b = c.start_byte
            for ch in s:
                text.append(ch)
                pos.append(b)
                b += len(ch.encode("utf-8"))
        elif ct == "escape_sequence":
            e = src[c.start_byte:c.end_byte].decode("utf-8", "replace")
            ch = _unescape(e)
            if ch:
                text.append(ch)
                pos.append(c.start_byte)
    return None


def _unescape(e: str) -> str:
    body = e[1:]
    if not body:
        return ""
    if body[0] in _ESCAPES:
        return _ESCAPES[body[0]]
    if body[0] == "\n":
        return ""
    if body[0] == "x":
        try:
            return chr(int(body[1:], 16))
        except ValueError:
            return ""
    if body[0] in "uU":
        try:
            return chr(int(body[1:], 16))
        except ValueError:
            return ""
    if body[0] in "01234567":
        return chr(int(body[:3], 8))
    return body[0]


def string_value(node, src: bytes) -> tuple[str, list[int]] | None:
    """Text and positions of a string literal or a concatenation of literals; None when a piece is not a
    literal (a macro that is not defined in the file)."""
    text: list[str] = []
    pos: list[int] = []
    pieces = node.named_children if node.type == "concatenated_string" else [node]
    for p in pieces:
        if p.type == "comment":
            continue
        if _decode_literal(p, src, text, pos) is not None:
            return None
    return "".join(text), pos


def read_asm(node, src: bytes) -> AsmStatement:
    """Read a ``gnu_asm_expression`` node."""
    st = AsmStatement(node, None, [])
    code = node.child_by_field_name("assembly_code")
    if code is None:
        st.unknown = "the asm statement has no template string"
    else:
        got = string_value(code, src)
        marked = got is not None and UNKNOWN_MACRO_MARK in got[0]
        if marked:
            name = got[0].split(UNKNOWN_MACRO_MARK, 1)[1].split('"', 1)[0]
            name = re.split(r"[^A-Za-z0-9_$]", name, maxsplit=1)[0]
            st.unknown = f"its text is built from '{name}', which is not defined in this file"
        elif got is None:
            bad = [p for p in (code.named_children if code.type == "concatenated_string" else [code])
                   if p.type not in ("string_literal", "raw_string_literal", "comment")]
            what = src[bad[0].start_byte:bad[0].end_byte].decode("utf-8", "replace") if bad else "?"
            st.unknown = f"its text is built from '{what[:60]}', which is not a string literal of this file"
        else:
            st.text, st.positions = got
    for c in node.children:
        if c.type == "ERROR":
            st.unknown = st.unknown or ("its text is built from '" +
                                        src[c.start_byte:c.end_byte].decode("utf-8", "replace")[:60] +
                                        "', which is not a string literal of this file")
    for lst, attr in (("output_operands", "outputs"), ("input_operands", "inputs")):
        ln = node.child_by_field_name(lst)
        if ln is None:
            continue
        for op in ln.named_children:
            if op.type not in ("gnu_asm_output_operand", "gnu_asm_input_operand"):
                continue
            cn = op.child_by_field_name("constraint")
            sym = op.child_by_field_name("symbol")
            val = op.child_by_field_name("value")
            cs = string_value(cn, src) if cn is not None else None
            ctext = cs[0] if cs else ""
            modifier = "".join(ch for ch in ctext if ch in "=+&")
            letters = "".join(ch for ch in ctext if ch not in "=+&")
            name = src[sym.start_byte:sym.end_byte].decode() if sym is not None else None
            getattr(st, attr).append(AsmOperand(letters, modifier, name, val, op))
    cl = node.child_by_field_name("clobbers")
    if cl is not None:
        for c in cl.named_children:
            sv = string_value(c, src) if c.type in ("string_literal", "concatenated_string") else None
            if sv:
                st.clobbers.append(sv[0])
    return st


_REF = re.compile(r"%(%|=|\[([A-Za-z_]\w*)\]|[0-9]+)")


def prepare(st: AsmStatement, literals: dict[int, str], instance: int = 0) -> tuple[str, list[int], set[int]]:
    """The template with operand references substituted as nvcc does before ptxas reads the text: ``%N`` →
    ``literals[N]`` (immediates) or the placeholder register ``%_oN``; ``%%`` → ``%``; ``%=`` → ``instance``, the
    number of this asm instance (nvcc numbers every asm statement it emits, an inlined helper's once per call, from
    0: ``WAIT_%=:`` is ``WAIT_0:``, then ``WAIT_1:``).  Returns ``(text, positions, referenced operand numbers)``."""
    names: dict[str, int] = {}
    for i, op in enumerate(st.outputs + st.inputs):
        if op.name:
            names[op.name] = i
    text = st.text or ""
    pos = st.positions
    out: list[str] = []
    opos: list[int] = []
    used: set[int] = set()
    last = 0
    for m in _REF.finditer(text):
        s = m.start()
        out.append(text[last:s])
        opos.extend(pos[last:s])
        g = m.group(1)
        if g == "%":
            rep = "%"
        elif g == "=":
            rep = str(instance)
        else:
            idx = names.get(m.group(2), -1) if m.group(2) else int(g)
            if idx < 0:
                rep = m.group(0)
            else:
                used.add(idx)
                rep = literals.get(idx, f"{PLACEHOLDER}{idx}")
        out.append(rep)
        opos.extend([pos[s]] * len(rep))
        last = m.end()
    out.append(text[last:])
    opos.extend(pos[last:])
    return "".join(out), opos, used


def numbers_instances(st: AsmStatement) -> bool:
    """Whether the template holds ``%=`` (its text then differs from one instance of the statement to the next)."""
    return any(m.group(1) == "=" for m in _REF.finditer(st.text or ""))


def glued_references(st: AsmStatement) -> list[int]:
    """The operand numbers referenced inside a PTX token of the template (``cta_group::%2``, ``.x%1``, ``L%0:``):
    nvcc substitutes an immediate operand's value there before ptxas reads the text, so the instruction is only
    known with that value.  A reference standing alone (an operand: ``[%0], %1``) is not glued."""
    names: dict[str, int] = {}
    for i, op in enumerate(st.outputs + st.inputs):
        if op.name:
            names[op.name] = i
    text = st.text or ""
    out: list[int] = []
    for m in _REF.finditer(text):
        g = m.group(1)
        if g in ("%", "="):
            continue
        idx = names.get(m.group(2), -1) if m.group(2) else int(g)
        before = text[m.start() - 1] if m.start() > 0 else " "
        after = text[m.end()] if m.end() < len(text) else " "
        if idx >= 0 and (before.isalnum() or before in "_$.:" or after.isalnum() or after in "_$"):
            out.append(idx)
    return out


@dataclass(slots=True)
class AsmTemplate:
    """The parsed template of one asm statement: ``items`` (Instruction and Label prototypes, spans in the .cu
    file), the label names it defines, or ``error`` (message, span) when the text is not PTX."""

    items: list
    labels: frozenset[str]
    error: tuple[str, Span] | None = None


@functools.lru_cache(maxsize=2048)
def _parse_statements(text: str):
    """``(items, labels, error)`` of a template text, spans in the text's own coordinates (1-based line and column
    of ``text``).  Cached: the same helper asm appears in every kernel (and file) that uses it."""
    try:
        module = parse_text(_WRAP_HEAD + text + "\n}\n", "<asm>")
    except PTXSyntaxError as e:
        return (), frozenset(), (f"the asm text is not valid PTX: {e.message}",
                                 Span(e.line - _HEAD_LINES, e.column, e.line - _HEAD_LINES, e.end_column))
    if len(module.functions) != 1:
        return (), frozenset(), ("the asm text is not a statement list (unbalanced braces)", Span(1, 1, 1, 2))
    fn = module.functions[0]
    at: dict[int, list[str]] = {}
    for name, idx in fn.labels.items():
        at.setdefault(idx, []).append(name)
    items: list = []

    def local(sp: Span) -> Span:
        return Span(sp.line - _HEAD_LINES, sp.column, sp.end_line - _HEAD_LINES, sp.end_column)

    for i, inst in enumerate(fn.instructions):
        for name in at.get(i, ()):
            items.append(Label(name, local(fn.label_spans[name])))
        inst.span = local(inst.span)
        inst.src = None
        items.append(inst)
    for name in at.get(len(fn.instructions), ()):
        items.append(Label(name, local(fn.label_spans[name])))
    return tuple(items), frozenset(fn.labels), None


def parse_template(text: str, positions: list[int], where) -> AsmTemplate:
    """Parse substituted template ``text`` as a PTX statement list.  ``where(byte) -> (line, col)`` maps a source
    byte offset (``positions`` entries) to the .cu file; the returned prototypes carry .cu spans.  Never raises."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(line: int, col: int) -> int:
        k = line - 1
        if k < 0 or not text:
            return 0
        if k >= len(starts):
            return max(0, len(text) - 1)
        return min(starts[k] + col - 1, len(text) - 1)

    def point(off: int) -> tuple[int, int]:
        if not positions:
            return where(0)
        return where(positions[max(0, min(off, len(positions) - 1))])

    def span_of(sp: Span) -> Span:
        a = offset(sp.line, sp.column)
        b = offset(sp.end_line, sp.end_column - 1) if sp.end_column > 1 else a
        l1, c1 = point(a)
        l2, c2 = point(max(a, b))
        return Span(l1, c1, l2, c2 + 1)

    items, labels, error = _parse_statements(text)
    if error is not None:
        return AsmTemplate([], labels, (error[0], span_of(error[1])))
    out: list = []
    for it in items:
        if type(it) is Label:
            out.append(Label(it.name, span_of(it.span)))
        else:
            out.append(Instruction(it.opcode, it.parts, it.guard, it.operands, span_of(it.span)))
    return AsmTemplate(out, labels)


def is_local_name(name: str) -> bool:
    """Whether a register name inside an asm template is local to the statement (declared in it: renamed by the
    IR builder ``name@N``, or written without ``%``)."""
    return "@" in name or not name.startswith("%")


__all__ = ["AsmOperand", "AsmStatement", "AsmTemplate", "PLACEHOLDER", "glued_references", "is_local_name", "numbers_instances",
           "parse_template", "prepare", "read_asm", "string_value", "Instruction"]
