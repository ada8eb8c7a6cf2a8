"""A small C preprocessor for source mode: conditionals, ``#define`` expansion, and a map back to the file.

Source mode parses the preprocessed text with tree-sitter, so that ``#define DEV __device__ __forceinline__``,
``__align__(1024)`` or ``#if __CUDA_ARCH__ >= 1000`` read as nvcc's device pass reads them.  Every character of
the output maps back to a character of the input (``SourceMap``): text that is kept is mapped one to one, a macro
expansion maps to the start of the macro's name.  Directive lines and inactive branches are replaced by spaces
(newlines kept), so the output has the input's lines wherever no macro was expanded.

Conditionals are evaluated against the macros defined in the file, the ``-D`` options and the device-pass
predefinitions (``__CUDA_ARCH__`` = 1000, ``__CUDACC__``, CUDA 13.0).  A name that none of these define is
undefined, unless a header the file includes in quotes could define it, or it is a toolkit or library name
(``__…``, ``CUDA…``, ``CUTLASS_…``, ``CUTE_…``): then the condition is *undecidable*, no branch of it is kept,
and the region is recorded in ``Preprocessed.regions`` so that the caller can say what was not analysed (TM901).
An ``#ifndef X`` followed by ``#define X`` (an include guard) is always taken.  ``#pragma unroll N`` (and
``_Pragma("unroll N")``) becomes the attribute ``[[tmemlint::unroll(N)]]`` on the next statement; other pragmas
are dropped.

Quoted includes (``#include "x.cuh"``) are read as nvcc reads them: relative to the including file, then in each
include folder (``-I``), recursively (include guards work as they do in the compiler; ``#pragma once`` is kept).
Their text enters the output at the ``#include`` (so tree-sitter sees one translation unit), and their characters
map to *virtual* offsets: the input of the map is the main file followed by each header read, one after the other,
each starting on a fresh line (``Preprocessed.files`` says which virtual lines are which file's).  The main file
keeps its own lines and offsets.  When neither has it, ``include/`` beside the main file or up to three folders above it (the
usual project layout, built with ``-Iinclude``) is tried.  Angle includes (``<cuda.h>``, ``<cute/tensor.hpp>``) are not read; the macros
of the toolkit and of the libraries that matter are predefined.  A quoted include that cannot be found is recorded
in ``Preprocessed.missing`` (the caller says so, TM901) and makes the names it could define undecidable.
"""

from __future__ import annotations

import functools
import os
import re
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field

_TOKEN = re.compile(
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
_SPACE_KINDS = {"ws", "cont", "lc", "bc"}

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
#: Names that are known not to be defined in nvcc's device pass on Linux.
KNOWN_UNDEFINED = frozenset({
    "_MSC_VER", "_WIN32", "_WIN64", "__clang__", "__HIP__", "__HIPCC__", "__HIP_PLATFORM_AMD__", "__CUDACC_RTC__",
    "__APPLE__", "__INTEL_COMPILER", "__CUDA_ARCH_FEAT_SM90_ALL", "__CUDA_ARCH_FEAT_SM120_ALL",
})
_LIBRARY_PREFIXES = ("_", "CUDA", "CUTLASS_", "CUTE_", "CUB_", "THRUST_", "NV_", "NVCC", "CCCL_", "TORCH_", "C10_")
_ASM_KEYWORDS = {"asm", "__asm__", "__asm"}
_ASM_QUALIFIERS = {"volatile", "__volatile__", "__volatile", "inline", "goto"}
#: Put in place of a name in an asm template that no #define of the file gives (read back by cuda_asm).
UNKNOWN_MACRO_MARK = "@@tmemlint-unknown-macro:"
#: C++ alternative tokens (``#if defined(A) and not defined(B)``).
_ALT_TOKENS = {"and": "&&", "or": "||", "not": "!", "bitand": "&", "bitor": "|", "xor": "^", "compl": "~",
               "not_eq": "!="}
#: Nesting of quoted includes followed (a header that includes itself without a guard stops here), and the
#: characters read of one header.
MAX_INCLUDE_DEPTH = 64
MAX_HEADER_CHARS = 4 * 1024 * 1024
#: A quoted include found neither beside the including file nor in an include folder is looked for in the
#: ``include/`` folder beside the main file and in this many folders above it (the project layout of CMake
#: builds with ``-Iinclude``).
INCLUDE_FOLDER_LEVELS = 3
_NULL_DIRECTIVES = {"error", "warning", "line", "ident", "sccs", "assert", "unassert", "import", "include_next"}


@dataclass(slots=True)
class Macro:
    """A ``#define``: ``params`` is None for an object-like macro; ``body`` is its replacement list as
    ``(kind, text)`` tokens; ``line`` where it was defined (0: predefined or ``-D``)."""

    name: str
    params: tuple[str, ...] | None
    variadic: bool
    body: list[tuple[str, str]]
    line: int = 0


@dataclass(slots=True)
class Region:
    """An ``#if`` group whose condition is not decidable: no branch of it was kept.  Lines are 1-based input lines
    (``#if`` … ``#endif``); offsets are input character offsets; ``names`` are identifiers written before a ``(``
    inside the group (the functions it may define or call)."""

    line: int
    end_line: int
    start: int
    end: int
    condition: str
    names: frozenset[str]


class SourceMap:
    """Maps byte offsets of the preprocessed text (what tree-sitter sees) to 1-based ``(line, column)`` of the
    input (columns count characters)."""

    def __init__(self, src: str, out: str, segs: list[tuple[int, int, bool]]):
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", src)]
        self._seg_out = [s[0] for s in segs]
        self._segs = segs
        data = out.encode("utf-8", "surrogatepass")
        self.data = data
        if len(data) == len(out):
            self._char_of_byte = None
        else:
            table = array("i", bytes(4 * (len(data) + 1)))
            b = 0
            for ci, ch in enumerate(out):
                n = len(ch.encode("utf-8", "surrogatepass"))
                for k in range(n):
                    table[b + k] = ci
                b += n
            table[b] = len(out)
            self._char_of_byte = table

    def input_offset(self, byte: int) -> int:
        """The input character offset that output byte ``byte`` comes from."""
        c = byte if self._char_of_byte is None else self._char_of_byte[max(0, min(byte, len(self._char_of_byte) - 1))]
        k = bisect_right(self._seg_out, c) - 1
        if k < 0:
            return 0
        out0, in0, verbatim = self._segs[k]
        return in0 + (c - out0) if verbatim else in0

    def line_col(self, byte: int) -> tuple[int, int]:
        """1-based input ``(line, column)`` of output byte ``byte``."""
        return self.offset_line_col(self.input_offset(byte))

    def offset_line_col(self, off: int) -> tuple[int, int]:
        """1-based ``(line, column)`` of input character offset ``off``."""
        ln = bisect_right(self._line_starts, off)
        return ln, off - self._line_starts[ln - 1] + 1


@dataclass(slots=True)
class SourceFile:
    """One file of the translation unit: ``path`` as findings show it, ``first_line`` its first virtual line (1
    for the main file), ``lines`` its number of lines, ``text`` its contents (newlines normalised)."""

    path: str
    first_line: int
    lines: int
    text: str


@dataclass(slots=True)
class MissingInclude:
    """A quoted ``#include`` that was found nowhere: the name as written, the virtual line of the directive, and
    the folders searched (in order)."""

    name: str
    line: int
    searched: tuple[str, ...]


@dataclass(slots=True)
class Preprocessed:
    """The result of ``preprocess``: ``text`` for tree-sitter (``map.data`` is it in UTF-8), the map back to the
    input (virtual offsets: see the module docstring), the undecidable regions, the macros defined at the end of
    the translation unit, the files read (``files[0]`` is the main file) and the quoted includes not found."""

    text: str
    map: SourceMap
    regions: list[Region] = field(default_factory=list)
    macros: dict[str, Macro] = field(default_factory=dict)
    files: list[SourceFile] = field(default_factory=list)
    missing: list[MissingInclude] = field(default_factory=list)
    angle: list[str] = field(default_factory=list)

    def locate(self, line: int) -> tuple[str, int]:
        """``(path, line)`` of virtual line ``line``."""
        for f in reversed(self.files):
            if line >= f.first_line:
                return f.path, line - f.first_line + 1
        return self.files[0].path if self.files else "", line


def tokenize(text: str) -> list[tuple[str, str, int]]:
    """``(kind, text, offset)`` tokens of C source ``text``; kinds: nl, cont, ws, lc, bc, raw, str, chr, id, num,
    punct."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "delim":  # pragma: no cover - the named group inside raw
            kind = "raw"
        out.append((kind, m.group(), m.start()))
    return out


def _significant(toks) -> list:
    return [t for t in toks if t[0] not in _SPACE_KINDS and t[0] != "nl"]


def _parse_define(toks: list, line: int) -> Macro | None:
    """A Macro from the tokens after ``define`` (whitespace kept, to tell ``F(x)`` from ``F (x)``)."""
    i = 0
    while i < len(toks) and toks[i][0] in _SPACE_KINDS:
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
    body = [(k, t) for k, t, _o in toks[i:] if k not in _SPACE_KINDS]
    return Macro(name, params, variadic, body, line)


def macro_from_option(spec: str) -> Macro | None:
    """A Macro from a ``-D`` option value: ``NAME``, ``NAME=VALUE`` or ``NAME(ARGS)=VALUE`` (``NAME`` is ``1``)."""
    name, eq, value = spec.partition("=")
    if not eq:
        value = "1"
    toks = tokenize(f"{name} {value}")
    return _parse_define(toks, 0)


@functools.lru_cache(maxsize=1)
def _predefined() -> tuple[tuple[str, Macro], ...]:
    out = []
    for spec, body in PREDEFINED.items():
        m = macro_from_option(f"{spec}={body}")
        if m is not None:
            out.append((m.name, m))
    return tuple(out)


class _Unknown:
    """Marker for an undecidable value in #if arithmetic."""


UNKNOWN = _Unknown()


class Preprocessor:
    """Runs the directives of one file.  Use ``preprocess``."""

    def __init__(self, text: str, defines: dict[str, str] | None = None, path: str = "",
                 include_dirs: tuple[str, ...] = ()):
        self.src = text
        self.files = [SourceFile(path, 1, text.count("\n") + (0 if text.endswith("\n") else 1), text)]
        self.include_dirs = tuple(include_dirs)
        self.missing: list[MissingInclude] = []
        self.angle: list[str] = []  # angle includes, as written between < and >
        self._read: dict[str, int] = {}  # real path → its virtual offset (a file read twice maps to one place)
        self._once: set[str] = set()
        self._where: list[tuple[str, str]] = [(path, os.path.realpath(path) if path else "")]  # (shown, real)
        self._depth = 0
        self.macros: dict[str, Macro] = dict(_predefined())
        self.from_options: set[str] = set()
        for name, value in (defines or {}).items():
            m = macro_from_option(f"{name}={value}")
            if m is not None:
                self.macros[m.name] = m
                self.from_options.add(m.name)
        self.undefined: set[str] = set()
        self.quoted_includes = False
        self.out: list[str] = []
        self.out_len = 0
        self.segs: list[tuple[int, int, bool]] = []
        self.regions: list[Region] = []

    # ---- output ---------------------------------------------------------------------------------------------
    def _emit(self, text: str, in_off: int, verbatim: bool) -> None:
        if not text:
            return
        self.segs.append((self.out_len, in_off, verbatim))
        self.out.append(text)
        self.out_len += len(text)

    def _emit_blank(self, start: int, end: int) -> None:
        chunk = self.src[start:end]
        self._emit(re.sub(r"[^\n]", " ", chunk), start, True)

    # ---- main loop --------------------------------------------------------------------------------------------
    def run(self) -> Preprocessed:
        self._run_tokens(tokenize(self.src))
        out = "".join(self.out)
        return Preprocessed(out, SourceMap(self.src, out, self.segs), self.regions, self.macros, self.files,
                            self.missing, self.angle)

    def _run_tokens(self, toks: list) -> None:
        """Run the lines of one file (tokens with virtual offsets), with its own conditional stack."""
        lines = _logical_lines(toks)
        stack: list[dict] = []  # {"active": bool, "taken": bool, "parent": bool, "undecidable": bool, ...}
        block: list = []
        for li, (a, b) in enumerate(lines):
            line_toks = toks[a:b]
            sig = _significant(line_toks)
            active = all(s["active"] for s in stack)
            if sig and sig[0][1] == "#":
                self._flush(block)
                block = []
                self._directive(sig, line_toks, stack, active, lines, toks, li)
                continue
            if active:
                block.extend(line_toks)
            elif line_toks:
                self._flush(block)
                block = []
                self._emit_blank(line_toks[0][2], line_toks[-1][2] + len(line_toks[-1][1]))
        self._flush(block)
        for s in stack:  # unterminated #if: whatever was recorded stays
            if s.get("undecidable"):
                end = toks[-1][2] + len(toks[-1][1]) if toks else len(self.src)
                self._close_region(s, end)

    # ---- quoted includes ----------------------------------------------------------------------------------------
    def _find(self, name: str) -> tuple[str, str] | None:
        """``(shown path, real path)`` of quoted include ``name``: next to the including file, then in each
        include folder."""
        shown_dir = os.path.dirname(self._where[-1][0])
        real_dir = os.path.dirname(self._where[-1][1]) if self._where[-1][1] else ""
        cands = [(os.path.join(shown_dir, name), os.path.join(real_dir, name) if real_dir else name)]
        cands += [(os.path.join(d, name), os.path.join(d, name)) for d in self.include_dirs]
        # last, the layout of CMake projects built with -Iinclude: include/ beside the main file or above it
        main_shown, main_real = self._where[0]
        sd, rd = os.path.dirname(main_shown), os.path.dirname(main_real)
        for _up in range(INCLUDE_FOLDER_LEVELS):
            cands.append((os.path.join(sd, "include", name), os.path.join(rd, "include", name)))
            if not rd or os.path.dirname(rd) == rd:
                break
            sd, rd = os.path.join(sd, ".."), os.path.dirname(rd)
        if os.path.isabs(name):
            cands = [(name, name)]
        for shown, real in cands:
            if os.path.isfile(real):
                return _shown(shown), os.path.realpath(real)
        return None

    def _include(self, name: str, start: int) -> None:
        """Read quoted include ``name`` (directive at virtual offset ``start``) into the output."""
        got = self._find(name)
        if got is None:
            self.quoted_includes = True
            dirs = [os.path.dirname(self._where[-1][0]) or "."] + list(self.include_dirs)
            self.missing.append(MissingInclude(name, self._line_of(start), tuple(dirs)))
            return
        shown, real = got
        if real in self._once or self._depth >= MAX_INCLUDE_DEPTH:
            return
        base = self._read.get(real)
        if base is None:
            try:
                with open(real, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(MAX_HEADER_CHARS + 1)
            except OSError:
                self.quoted_includes = True
                self.missing.append(MissingInclude(name, self._line_of(start), (shown,)))
                return
            text = text[:MAX_HEADER_CHARS].replace("\r\n", "\n").replace("\r", "\n")
            if not self.src.endswith("\n"):
                self.src += "\n"
            base = len(self.src)
            first = self.src.count("\n") + 1
            self.src += text
            self._read[real] = base
            self.files.append(SourceFile(shown, first, text.count("\n") + (0 if text.endswith("\n") else 1), text))
        text = self.src[base:self._end_of(base)]
        toks = [(k, t, o + base) for k, t, o in tokenize(text)]
        self._where.append((shown, real))
        self._depth += 1
        try:
            self._run_tokens(toks)
        finally:
            self._depth -= 1
            self._where.pop()
        if self.out and not self.out[-1].endswith("\n"):
            self._emit("\n", base + len(text), False)

    def _end_of(self, base: int) -> int:
        """Virtual end offset of the file starting at ``base``."""
        later = [b for b in self._read.values() if b > base]
        return (min(later) if later else len(self.src))

    def _line_of(self, off: int) -> int:
        return self.src.count("\n", 0, off) + 1

    def _directive(self, sig, line_toks, stack, active, lines, toks, li) -> None:
        start = line_toks[0][2]
        end = line_toks[-1][2] + len(line_toks[-1][1])
        name = sig[1][1] if len(sig) > 1 else ""
        rest_sig = sig[2:]
        # tokens after the directive name, whitespace kept (for #define)
        k = len(line_toks)
        if len(sig) > 1:
            k = next((i for i, t in enumerate(line_toks) if t is sig[1]), k)
        after = [t for t in line_toks[k + 1:] if t[0] != "nl"]
        keep = False
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                stack.append({"active": False, "taken": True, "undecidable": False})
            else:
                if name == "if":
                    v = self._eval(rest_sig)
                else:
                    v = self._defined(rest_sig[0][1]) if rest_sig else UNKNOWN
                    if name == "ifndef":
                        if v is UNKNOWN and rest_sig and _guard_follows(rest_sig[0][1], lines, toks, li):
                            v = 0
                        v = v if v is UNKNOWN else (0 if v else 1)
                entry = {"active": False, "taken": False, "undecidable": False, "start": start,
                         "cond": _text(rest_sig, name)}
                if v is UNKNOWN:
                    entry.update(undecidable=True, taken=True)
                elif v:
                    entry.update(active=True, taken=True)
                stack.append(entry)
        elif name in ("elif", "elifdef", "elifndef"):
            if stack:
                s = stack[-1]
                parent_active = all(x["active"] for x in stack[:-1])
                if s.get("undecidable") or s["taken"] or not parent_active:
                    s["active"] = False
                else:
                    if name == "elif":
                        v = self._eval(rest_sig)
                    else:
                        v = self._defined(rest_sig[0][1]) if rest_sig else UNKNOWN
                        if name == "elifndef" and v is not UNKNOWN:
                            v = 0 if v else 1
                    if v is UNKNOWN:
                        s.update(undecidable=True, taken=True, active=False, start=start,
                                 cond=_text(rest_sig, name))
                    elif v:
                        s.update(active=True, taken=True)
                    else:
                        s["active"] = False
        elif name == "else":
            if stack:
                s = stack[-1]
                s["active"] = not s["taken"] and not s.get("undecidable")
                s["taken"] = True
        elif name == "endif":
            if stack:
                s = stack.pop()
                if s.get("undecidable"):
                    self._close_region(s, end)
        elif not active:
            pass
        elif name == "define":
            m = _parse_define(after, self._line_of(start))
            if m is not None:
                self.macros[m.name] = m
                self.undefined.discard(m.name)
        elif name == "undef":
            if rest_sig:
                self.macros.pop(rest_sig[0][1], None)
                self.undefined.add(rest_sig[0][1])
        elif name == "include":
            if rest_sig and rest_sig[0][0] == "str":
                self._include(rest_sig[0][1][1:-1], start)
            elif rest_sig and rest_sig[0][1] == "<":
                self.angle.append("".join(t[1] for t in rest_sig[1:-1]))
        elif name == "pragma":
            words = [t[1] for t in rest_sig]
            if words and words[0] == "once":
                self._once.add(self._where[-1][1])
            if words and words[0] == "unroll":
                self._emit(unroll_attribute(" ".join(words[1:])), start, False)
                self._emit_blank(start, end)
                return
        if keep:
            self._emit(self.src[start:end], start, True)
        else:
            self._emit_blank(start, end)

    def _close_region(self, s: dict, end: int) -> None:
        start = s["start"]
        body = self.src[start:end]
        names = frozenset(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body))
        self.regions.append(Region(self._line_of(start), self._line_of(end), start, end, s.get("cond", ""), names))

    # ---- definedness and #if arithmetic -------------------------------------------------------------------
    def _defined(self, name: str):
        if name in self.macros:
            return 1
        if name in self.undefined or name in KNOWN_UNDEFINED:
            return 0
        if self.quoted_includes or name.startswith(_LIBRARY_PREFIXES):
            return UNKNOWN
        return 0

    def _eval(self, sig: list):
        toks: list[tuple[str, str]] = []
        i = 0
        while i < len(sig):
            k, t = sig[i][0], sig[i][1]
            if k == "id" and t == "defined":
                j = i + 1
                paren = j < len(sig) and sig[j][1] == "("
                if paren:
                    j += 1
                if j < len(sig) and sig[j][0] == "id":
                    v = self._defined(sig[j][1])
                    toks.append(("unk", "") if v is UNKNOWN else ("num", str(v)))
                    i = j + (2 if paren else 1)
                    continue
            toks.append(("punct", _ALT_TOKENS[t]) if k == "id" and t in _ALT_TOKENS else (k, t))
            i += 1
        toks = self.expand(toks, frozenset())
        vals = []
        for idx, (k, t) in enumerate(toks):
            if k == "id":
                if t == "true":
                    vals.append(("num", "1"))
                elif t == "false":
                    vals.append(("num", "0"))
                elif t.startswith("__has_") or (idx + 1 < len(toks) and toks[idx + 1][1] == "("):
                    vals.append(("unk", ""))
                else:
                    v = self._defined(t)
                    vals.append(("unk", "") if v is UNKNOWN else ("num", "0"))
            else:
                vals.append((k, t))
        try:
            v = _CondParser(vals).parse()
        except (ValueError, IndexError, ZeroDivisionError):
            return UNKNOWN
        return v

    # ---- macro expansion ------------------------------------------------------------------------------------
    def _flush(self, block: list) -> None:
        """Emit a run of active text tokens, expanding macros (invocations may span lines)."""
        i = 0
        n = len(block)
        macros = self.macros
        run_start = None
        asm_state = 0  # 1: after asm (qualifiers may follow), 2: inside its template (before the first ':')
        depth = 0
        while i < n:
            k, t, off = block[i]
            if asm_state == 0:
                if k == "id" and t in _ASM_KEYWORDS:
                    asm_state = 1
            elif asm_state == 1:
                if t == "(":
                    asm_state, depth = 2, 1
                elif not (k in _SPACE_KINDS or k == "nl" or t in _ASM_QUALIFIERS):
                    asm_state = 0
            elif t == "(":
                depth += 1
            elif t == ")" or (t in (":", "::") and depth == 1):
                depth -= 1 if t == ")" else 0
                if t != ")" or depth == 0:
                    asm_state = 0
            elif k == "id" and t not in macros:
                # a name in an asm template that this file does not define: keep the statement readable and say
                # which name made its text unknown (cuda_asm.read_asm turns the marker into TM901)
                if run_start is not None:
                    self._emit(self.src[run_start:off], run_start, True)
                    run_start = None
                self._emit(f'"{UNKNOWN_MACRO_MARK}{t}"', off, False)
                i += 1
                continue
            m = macros.get(t) if k == "id" else None
            if m is None:
                if run_start is None:
                    run_start = off
                i += 1
                continue
            if m.params is None:
                repl = self.expand(list(m.body), frozenset({t}))
                last = i
            else:
                j = i + 1
                while j < n and (block[j][0] in _SPACE_KINDS or block[j][0] == "nl"):
                    j += 1
                if j >= n or block[j][1] != "(":
                    if run_start is None:
                        run_start = off
                    i += 1
                    continue
                args, last = _collect_args(block, j)
                if args is None:
                    if run_start is None:
                        run_start = off
                    i += 1
                    continue
                repl = self._substitute(m, args, frozenset({t}))
            if run_start is not None:
                self._emit(self.src[run_start:off], run_start, True)
                run_start = None
            self._emit(_render(repl), off, False)
            i = last + 1
        if run_start is not None and block:
            end = block[-1][2] + len(block[-1][1])
            self._emit(self.src[run_start:end], run_start, True)

    def expand(self, toks: list[tuple[str, str]], hidden: frozenset) -> list[tuple[str, str]]:
        """Fully macro-expand a token list (no positions); ``hidden`` macros are not expanded (no recursion)."""
        out: list[tuple[str, str]] = []
        i = 0
        n = len(toks)
        while i < n:
            k, t = toks[i]
            m = self.macros.get(t) if k == "id" and t not in hidden else None
            if m is None:
                out.append((k, t))
                i += 1
                continue
            if m.params is None:
                out.extend(self.expand(list(m.body), hidden | {t}))
                i += 1
                continue
            j = i + 1
            while j < n and toks[j][0] in _SPACE_KINDS:
                j += 1
            if j >= n or toks[j][1] != "(":
                out.append((k, t))
                i += 1
                continue
            args, last = _collect_args(toks, j)
            if args is None:
                out.append((k, t))
                i += 1
                continue
            out.extend(self._substitute(m, args, hidden | {t}))
            i = last + 1
        return out

    def _substitute(self, m: Macro, args: list[list[tuple[str, str]]], hidden: frozenset) -> list[tuple[str, str]]:
        params = m.params or ()
        if m.variadic and len(args) > len(params):
            fixed = len(params) - 1
            va: list = []
            for a in args[fixed:]:
                if va:
                    va.append(("punct", ","))
                va.extend(a)
            args = args[:fixed] + [va]
        amap = {p: (args[i] if i < len(args) else []) for i, p in enumerate(params)}
        body = m.body
        out: list[tuple[str, str]] = []
        i = 0
        while i < len(body):
            k, t = body[i]
            if t == "#" and i + 1 < len(body) and body[i + 1][1] in amap:
                spelled = " ".join(x[1] for x in amap[body[i + 1][1]] if x[0] not in _SPACE_KINDS)
                out.append(("str", '"' + spelled.replace("\\", "\\\\").replace('"', '\\"') + '"'))
                i += 2
                continue
            if i + 1 < len(body) and body[i + 1][1] == "##" or (out and out[-1][1] == "##"):
                piece = amap.get(t, [(k, t)]) if k == "id" else [(k, t)]
                piece = [x for x in piece if x[0] not in _SPACE_KINDS]
                if out and out[-1][1] == "##":
                    out.pop()
                    if out and piece:
                        left = out.pop()
                        pasted = left[1] + piece[0][1]
                        out.extend((x[0], x[1]) for x in tokenize(pasted) if x[0] not in _SPACE_KINDS)
                        out.extend(piece[1:])
                    else:
                        out.extend(piece)
                else:
                    out.extend(piece)
                i += 1
                continue
            if k == "id" and t in amap:
                out.extend(self.expand([x for x in amap[t] if x[0] not in _SPACE_KINDS], hidden))
            else:
                out.append((k, t))
            i += 1
        return self.expand(out, hidden)


def _collect_args(toks, j: int):
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
                if len(args) == 1 and not [x for x in args[0] if x[0] not in _SPACE_KINDS and x[0] != "nl"]:
                    args = [[]]
                return [[x for x in a if x[0] != "nl"] for a in args], idx
        elif t == "," and depth == 1:
            args.append([])
            continue
        args[-1].append((k, t))
    return None, j


def _render(toks: list[tuple[str, str]]) -> str:
    """Text of an expansion; ``_Pragma("unroll N")`` becomes ``[[tmemlint::unroll(N)]]``, other ``_Pragma`` go."""
    parts: list[str] = []
    i = 0
    while i < len(toks):
        k, t = toks[i]
        if k in _SPACE_KINDS:
            i += 1
            continue
        if t == "_Pragma" and i + 3 < len(toks) + 1:
            sig = [x for x in toks[i + 1:i + 6] if x[0] not in _SPACE_KINDS]
            if len(sig) >= 3 and sig[0][1] == "(" and sig[1][0] == "str" and sig[2][1] == ")":
                body = sig[1][1][1:-1].replace('\\"', '"').replace("\\\\", "\\").split()
                if body and body[0] == "unroll":
                    parts.append(unroll_attribute(" ".join(body[1:])))
                # skip the three significant tokens
                seen = 0
                i += 1
                while i < len(toks) and seen < 3:
                    if toks[i][0] not in _SPACE_KINDS:
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


def _logical_lines(toks) -> list[tuple[int, int]]:
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


def _guard_follows(name: str, lines, toks, li: int) -> bool:
    """Whether the next directive after line ``li`` is ``#define name`` (an include guard)."""
    for a, b in lines[li + 1:]:
        sig = _significant(toks[a:b])
        if not sig:
            continue
        return len(sig) >= 3 and sig[0][1] == "#" and sig[1][1] == "define" and sig[2][1] == name
    return False


def _text(sig, directive: str) -> str:
    body = " ".join(t[1] for t in sig)
    return f"#{directive} {body}".strip()


def _int_literal(text: str) -> int:
    t = text.replace("'", "").rstrip("uUlL")
    if t[:2] in ("0x", "0X"):
        return int(t[2:], 16)
    if t[:2] in ("0b", "0B"):
        return int(t[2:], 2)
    if len(t) > 1 and t[0] == "0":
        return int(t, 8)
    return int(t)


class _CondParser:
    """Integer arithmetic of ``#if`` with an UNKNOWN value that propagates (``0 && x`` is 0 even if x is unknown)."""

    _BIN = [
        ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"), ("+", "-"),
        ("*", "/", "%"),
    ]

    def __init__(self, toks):
        self.toks = [t for t in toks if t[0] not in _SPACE_KINDS and t[0] != "nl"]
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
            left = _apply(op, left, right)
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
            return _int_literal(text)
        if kind == "chr":
            body = text[text.index("'") + 1:-1]
            return ord(body.encode().decode("unicode_escape")[0]) if body else 0
        raise ValueError(f"unexpected {text!r}")


def _apply(op: str, a, b):
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
        "-": lambda: a - b, "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a - b * int(a / b),
    }[op]
    return f()


def _shown(path: str) -> str:
    """How a header's path is shown: as found from the paths given (relative stays relative), an absolute path
    inside the current folder made relative to it."""
    path = os.path.normpath(path)
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def preprocess(text: str, defines: dict[str, str] | None = None, path: str = "",
               include_dirs: tuple[str, ...] = ()) -> Preprocessed:
    """Preprocess C/CUDA ``text`` (the file ``path``, as shown in findings) with ``defines`` (``-D`` options: name
    → value), following quoted includes next to ``path`` and in ``include_dirs``.  Never raises for bad input:
    unbalanced conditionals end at the end of their file, malformed directives are ignored, unreadable headers
    are recorded in ``missing``."""
    return Preprocessor(text, defines, path, include_dirs).run()
