"""Tokens, macros and ``#if`` arithmetic for the preprocessor (``preprocess``): the C tokenizer, ``#define``
bodies and their expansion helpers, the predefined macros of nvcc's device pass for ``sm_100a``, ``#pragma unroll``
as an attribute, and integer arithmetic with an undecidable value (``UNKNOWN``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tmemlint.threadexpr import trunc_div, trunc_rem


TOKEN = re.compile(
    r"""
     (?P<nl>\n)
    |(?P<cont>\\[ \t]*\n)
    |(?P<ws>[ \t\f\v\r]+)
    |(?P<lc>//(?:[^\n\\]|\\[^\n]|\\\n)*)
    |(?P<bc>/\*.*?\*/)
    |(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^ ()\\\t\v\f\n"]{0,16})\(.*?\)(?P=delim)")
    |(?P<str>(?:u8|u|U|L)?"(?:\\(?:.|\n)|[^"\\\n])*")
    |(?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*')
    |(?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<num>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.']|)*)
    |(?P<punct>\#\#|\#|\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||::|[-+*/%&|^]=|.)
    """,
    re.X | re.S,
)
SPACE_KINDS = {"ws", "cont", "lc", "bc"}
#: Macros of nvcc's device pass for ``-arch=sm_100a`` (CUDA 13.0), and of the libraries whose kernels source mode
#: reads, given as ``#define`` text.  A ``#define`` in the file replaces them.
PREDEFINED = {
    "__CUDACC__": "1",
    "__NVCC__": "1",
    "__CUDA_ARCH__": "1000",
    "__CUDA_ARCH_SPECIFIC__": "1000",
    "__CUDA_ARCH_FEAT_SM100_ALL": "1",
    "__CUDACC_VER_MAJOR__": "13",
    "__CUDACC_VER_MINOR__": "0",
    "__CUDACC_VER_BUILD__": "88",
    "CUDART_VERSION": "13000",
    "__CUDA_API_VER_MAJOR__": "13",
    "__cplusplus": "201703L",
    "__align__(n)": "alignas(n)",
    "__cluster_dims__(...)": "__attribute__((cluster_dims(__VA_ARGS__)))",
    "CUTLASS_DEVICE": "__device__ __forceinline__",
    "CUTLASS_HOST_DEVICE": "__host__ __device__ __forceinline__",
    "CUTLASS_GLOBAL": "__global__",
    "CUTE_DEVICE": "__device__ __forceinline__",
    "CUTE_HOST_DEVICE": "__host__ __device__ __forceinline__",
    "CUTE_HOST": "__host__ __forceinline__",
    "CUTLASS_PRAGMA_UNROLL": '_Pragma("unroll")',
    "CUTLASS_PRAGMA_NO_UNROLL": '_Pragma("unroll 1")',
    "CUTE_UNROLL": '_Pragma("unroll")',
    "CUTE_NO_UNROLL": '_Pragma("unroll 1")',
    "CUTE_INLINE_CONSTANT": "static constexpr",
    "CUTE_STATIC_ASSERT(...)": "",
    "CUTE_STATIC_V(x)": "x",
    "CUTLASS_ASSERT(x)": "",
    "CUTE_RUNTIME_ASSERT(x)": "",
    "CUTLASS_ARCH_MMA_SM100_ENABLED": "1",
    "CUTE_ARCH_TCGEN05_TMEM_ENABLED": "1",
}
#: C++ alternative tokens (``#if defined(A) and not defined(B)``).
ALT_TOKENS = {"and": "&&", "or": "||", "not": "!", "bitand": "&", "bitor": "|", "xor": "^", "compl": "~",
               "not_eq": "!="}


@dataclass(slots=True)
class Macro:
    """A ``#define``: ``params`` is None for an object-like macro; ``body`` is its replacement list as
    ``(kind, text)`` tokens; ``line`` where it was defined (0: predefined or ``-D``)."""

    name: str
    params: tuple[str, ...] | None
    variadic: bool
    body: list[tuple[str, str]]
    line: int = 0


def tokenize(text: str, base: int = 0) -> list[tuple[str, str, int]]:
    """``(kind, text, offset)`` tokens of C source ``text`` (offsets plus ``base``); kinds: nl, cont, ws, lc, bc,
    raw, str, chr, id, num, punct.  One comprehension over the matches: this is most of the preprocessor's time."""
    # (``lastgroup`` is the outermost group that matched: ``raw``, never the ``delim`` inside it)
    return [(m.lastgroup, m.group(), m.start() + base) for m in TOKEN.finditer(text)]


def significant(toks) -> list:
    return [t for t in toks if t[0] not in SPACE_KINDS and t[0] != "nl"]


def parse_define(toks: list, line: int) -> Macro | None:
    """A Macro from the tokens after ``define`` (whitespace kept, to tell ``F(x)`` from ``F (x)``)."""
    i = 0
    while i < len(toks) and toks[i][0] in SPACE_KINDS:
        i += 1
    if i >= len(toks) or toks[i][0] != "id":
        return None
    name = toks[i][1]
    i += 1
    params = None
    variadic = False
    if i < len(toks) and toks[i][1] == "(":
        params = []
        i += 1
        while i < len(toks) and toks[i][1] != ")":
            k, t = toks[i][0], toks[i][1]
            if k == "id":
                params.append(t)
            elif t == "...":
                variadic = True
                params.append("__VA_ARGS__")
            i += 1
        i += 1
        params = tuple(params)
    body = [(k, t) for k, t, _o in toks[i:] if k not in SPACE_KINDS]
    return Macro(name, params, variadic, body, line)


def macro_from_option(spec: str) -> Macro | None:
    """A Macro from a ``-D`` option value: ``NAME``, ``NAME=VALUE`` or ``NAME(ARGS)=VALUE`` (``NAME`` is ``1``)."""
    name, eq, value = spec.partition("=")
    if not eq:
        value = "1"
    toks = tokenize(f"{name} {value}")
    return parse_define(toks, 0)


@functools.lru_cache(maxsize=1)
def predefined() -> tuple[tuple[str, Macro], ...]:
    out = []
    for spec, body in PREDEFINED.items():
        m = macro_from_option(f"{spec}={body}")
        if m is not None:
            out.append((m.name, m))
    return tuple(out)


class _Unknown:
    """Marker for an undecidable value in #if arithmetic."""


UNKNOWN = _Unknown()


def collect_args(toks, j: int):
    """Arguments of a macro invocation whose ``(`` is at ``toks[j]``: ``(args, index of ')')`` or ``(None, j)``."""
    depth = 0
    args: list[list] = [[]]
    for idx in range(j, len(toks)):
        k, t = toks[idx][0], toks[idx][1]
        if t == "(":
            depth += 1
            if depth == 1:
                continue
        elif t == ")":
            depth -= 1
            if depth == 0:
                if len(args) == 1 and not [x for x in args[0] if x[0] not in SPACE_KINDS and x[0] != "nl"]:
                    args = [[]]
                return [[x for x in a if x[0] != "nl"] for a in args], idx
        elif t == "," and depth == 1:
            args.append([])
            continue
        args[-1].append((k, t))
    return None, j


def render(toks: list[tuple[str, str]]) -> str:
    """Text of an expansion; ``_Pragma("unroll N")`` becomes ``[[tmemlint::unroll(N)]]``, other ``_Pragma`` go."""
    parts: list[str] = []
    i = 0
    while i < len(toks):
        k, t = toks[i]
        if k in SPACE_KINDS:
            i += 1
            continue
        if t == "_Pragma" and i + 3 < len(toks) + 1:
            sig = [x for x in toks[i + 1:i + 6] if x[0] not in SPACE_KINDS]
            if len(sig) >= 3 and sig[0][1] == "(" and sig[1][0] == "str" and sig[2][1] == ")":
                body = sig[1][1][1:-1].replace('\\"', '"').replace("\\\\", "\\").split()
                if body and body[0] == "unroll":
                    parts.append(unroll_attribute(" ".join(body[1:])))
                # skip the three significant tokens
                seen = 0
                i += 1
                while i < len(toks) and seen < 3:
                    if toks[i][0] not in SPACE_KINDS:
                        seen += 1
                    i += 1
                continue
        parts.append(t)
        i += 1
    return " ".join(parts)


def unroll_attribute(count: str) -> str:
    """``#pragma unroll [N]`` as the attribute ``[[tmemlint::unroll(N)]]``: tree-sitter reads an attribute as part
    of the statement it precedes (a pragma line between ``for (…)`` and its unbraced body would end the loop)."""
    count = count.strip()
    return f"[[tmemlint::unroll({count})]]" if count else "[[tmemlint::unroll]]"


def logical_lines(toks) -> list[tuple[int, int]]:
    """Index ranges ``[a, b)`` of the logical lines of ``toks`` (the newline token ends its line)."""
    out = []
    a = 0
    for i, t in enumerate(toks):
        if t[0] == "nl":
            out.append((a, i + 1))
            a = i + 1
    if a < len(toks):
        out.append((a, len(toks)))
    return out


def int_literal(text: str) -> int:
    t = text.replace("'", "").rstrip("uUlL")
    if t[:2] in ("0x", "0X"):
        return int(t[2:], 16)
    if t[:2] in ("0b", "0B"):
        return int(t[2:], 2)
    if len(t) > 1 and t[0] == "0":
        return int(t, 8)
    return int(t)


class CondParser:
    """Integer arithmetic of ``#if`` with an UNKNOWN value that propagates (``0 && x`` is 0 even if x is unknown)."""

    _BIN = [
        ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"),
        ("*", "/", "%"),
    ]

    def __init__(self, toks):
        self.toks = [t for t in toks if t[0] not in SPACE_KINDS and t[0] != "nl"]
        self.i = 0

    def parse(self):
        if not self.toks:
            raise ValueError("empty condition")
        v = self._ternary()
        if self.i != len(self.toks):
            raise ValueError("trailing tokens")
        return v

    def _peek(self):
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def _ternary(self):
        c = self._binary(0)
        if self._peek() == "?":
            self.i += 1
            a = self._ternary()
            if self._peek() != ":":
                raise ValueError("expected ':'")
            self.i += 1
            b = self._ternary()
            if c is UNKNOWN:
                return a if (a == b and a is not UNKNOWN) else UNKNOWN
            return a if c else b
        return c

    def _binary(self, level: int):
        if level == len(self._BIN):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in self._BIN[level]:
            op = self._peek()
            self.i += 1
            right = self._binary(level + 1)
            left = apply(op, left, right)
        return left

    def _unary(self):
        t = self._peek()
        if t in ("!", "-", "+", "~"):
            self.i += 1
            v = self._unary()
            if v is UNKNOWN:
                return UNKNOWN
            return {"!": lambda x: 0 if x else 1, "-": lambda x: -x, "+": lambda x: x, "~": lambda x: ~x}[t](v)
        if t == "(":
            self.i += 1
            v = self._ternary()
            if self._peek() != ")":
                raise ValueError("expected ')'")
            self.i += 1
            return v
        kind, text = self.toks[self.i]
        self.i += 1
        if kind == "unk":
            return UNKNOWN
        if kind == "num":
            return int_literal(text)
        if kind == "chr":
            body = text[text.index("'") + 1:-1]
            return ord(body.encode().decode("unicode_escape")[0]) if body else 0
        raise ValueError(f"unexpected {text!r}")


def apply(op: str, a, b):
    if op == "&&":
        if a is not UNKNOWN and not a or b is not UNKNOWN and not b:
            return 0
        return UNKNOWN if UNKNOWN in (a, b) else 1
    if op == "||":
        if a is not UNKNOWN and a or b is not UNKNOWN and b:
            return 1
        return UNKNOWN if UNKNOWN in (a, b) else 0
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    f = {
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b),
        "!=": lambda: int(a != b), "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
        ">=": lambda: int(a >= b), "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b,
        "-": lambda: a - b, "*": lambda: a * b, "/": lambda: trunc_div(a, b), "%": lambda: trunc_rem(a, b),
    }[op]
    return f()
