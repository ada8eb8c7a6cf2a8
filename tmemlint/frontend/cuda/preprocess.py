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
keeps its own lines and offsets.  When neither has it, ``include/`` beside the main file or up to three folders
above it (the usual project layout, built with ``-Iinclude``) is tried.  Angle includes (``<cuda.h>``,
``<cute/tensor.hpp>``) are not read (the macros of the toolkit and of the libraries that matter are predefined),
unless an include folder has the file and it is not a library's (``<proj/tmem.cuh>`` with ``-Iinclude``).
A quoted include that cannot be found is recorded in ``Preprocessed.missing`` (the caller says so, TM901) and
makes the names it could define undecidable.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right

from tmemlint.frontend.cuda.macros import (
    ALT_TOKENS,
    SPACE_KINDS,
    UNKNOWN,
    CondParser,
    Macro,
    collect_args,
    logical_lines,
    macro_from_option,
    parse_define,
    predefined,
    render,
    significant,
    tokenize,
    unroll_attribute,
)
from tmemlint.frontend.cuda.sourcemap import MissingInclude, Preprocessed, Region, SourceFile, SourceMap


#: Names that are known not to be defined in nvcc's device pass on Linux.
KNOWN_UNDEFINED = frozenset({
    "_MSC_VER", "_WIN32", "_WIN64", "__clang__", "__HIP__", "__HIPCC__", "__HIP_PLATFORM_AMD__", "__CUDACC_RTC__",
    "__APPLE__", "__INTEL_COMPILER", "__CUDA_ARCH_FEAT_SM90_ALL", "__CUDA_ARCH_FEAT_SM120_ALL",
})
_LIBRARY_PREFIXES = ("_", "CUDA", "CUTLASS_", "CUTE_", "CUB_", "THRUST_", "NV_", "NVCC", "CCCL_", "TORCH_", "C10_")
_ASM_KEYWORDS = {"asm", "__asm__", "__asm"}
_ASM_QUALIFIERS = {"volatile", "__volatile__", "__volatile", "inline", "goto"}
#: Put in place of a name in an asm template that no #define of the file gives (read back by asm).
UNKNOWN_MACRO_MARK = "@@tmemlint-unknown-macro:"
#: Nesting of quoted includes followed (a header that includes itself without a guard stops here), and the
#: characters read of one header.
MAX_INCLUDE_DEPTH = 64
MAX_HEADER_CHARS = 4 * 1024 * 1024
#: Characters of one translation unit (the file and every header it reads, and the text after macro expansion)
#: that source mode reads: about 0.5 s of preprocessing and 50 MB on one core of 2026, and a tree-sitter parse,
#: definitions and lowering in proportion.  A bigger unit (CUTLASS's example kernels read 280 headers, 10 million characters:
#: 60 s and 800 MB to end in TM901s for #if branches it cannot decide) is refused at the header that crosses it,
#: with TM901 (``TooLarge``), at the cost of what was read until then: what nvcc reads that fast, compile mode
#: reads.  ThunderKittens' kernels (90 headers, 0.83 million characters) stay under it.
MAX_UNIT_CHARS = 1_000_000
#: A quoted include found neither beside the including file nor in an include folder is looked for in the
#: ``include/`` folder beside the main file and in this many folders above it (the project layout of CMake
#: builds with ``-Iinclude``).
INCLUDE_FOLDER_LEVELS = 3
_NULL_DIRECTIVES = {"error", "warning", "line", "ident", "sccs", "assert", "unassert", "import", "include_next"}


class TooLarge(Exception):
    """The translation unit is past ``MAX_UNIT_CHARS`` (``chars`` with what was read): at ``header``, included by
    ``by``, reached from the ``#include`` at ``line`` of the main file, after ``files`` files; ``header`` empty
    when the text after macro expansion is what grew past it."""

    def __init__(self, header: str, line: int, files: int, chars: int = 0, by: str = ""):
        super().__init__(header)
        self.header, self.line, self.files, self.chars, self.by = header, line, files, chars, by


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
        self._bases: list[int] = [0]  # the virtual offset of each of ``files``
        self._main_line: list[int] = []  # the main file's line of the #include being read
        self._once: set[str] = set()
        self._where: list[tuple[str, str]] = [(path, os.path.realpath(path) if path else "")]  # (shown, real)
        self._depth = 0
        self.macros: dict[str, Macro] = dict(predefined())
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
        try:
            self._run_tokens(tokenize(self.src))
        except TooLarge as e:
            main = self.files[0]  # nothing of it is analysed: the main file alone, blank, with the reason
            blank = re.sub(r"[^\n]", " ", main.text)
            return Preprocessed(blank, SourceMap(main.text, blank, [(0, 0, True)]), [], self.macros, [main],
                                self.missing, self.angle, too_large=e)
        out = "".join(self.out)
        if len(out) > MAX_UNIT_CHARS:  # macros expanded the text past the budget
            main = self.files[0]
            blank = re.sub(r"[^\n]", " ", main.text)
            return Preprocessed(blank, SourceMap(main.text, blank, [(0, 0, True)]), [], self.macros, [main],
                                self.missing, self.angle, too_large=TooLarge("", 1, len(self.files), len(out)))
        return Preprocessed(out, SourceMap(self.src, out, self.segs), self.regions, self.macros, self.files,
                            self.missing, self.angle)

    def _run_tokens(self, toks: list) -> None:
        """Run the lines of one file (tokens with virtual offsets), with its own conditional stack."""
        lines = logical_lines(toks)
        stack: list[dict] = []  # {"active": bool, "taken": bool, "parent": bool, "undecidable": bool, ...}
        block: list = []
        for li, (a, b) in enumerate(lines):
            line_toks = toks[a:b]
            sig = significant(line_toks)
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
    def _find(self, name: str, angle: bool = False) -> tuple[str, str] | None:
        """``(shown path, real path)`` of include ``name``: next to the including file (quoted includes only),
        then in each include folder."""
        shown_dir = os.path.dirname(self._where[-1][0])
        real_dir = os.path.dirname(self._where[-1][1]) if self._where[-1][1] else ""
        cands = [] if angle else [(os.path.join(shown_dir, name), os.path.join(real_dir, name) if real_dir else name)]
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

    def _include(self, name: str, start: int, angle: bool = False) -> None:
        """Read include ``name`` (directive at virtual offset ``start``) into the output."""
        got = self._find(name, angle)
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
            if len(self.src) + len(text) > MAX_UNIT_CHARS:
                raise TooLarge(name, self._main_line[0] if self._main_line else self._line_of(start), len(self.files),
                               len(self.src) + len(text), self._where[-1][0])
            if not self.src.endswith("\n"):
                self.src += "\n"
            base = len(self.src)
            last = self.files[-1]
            first = last.first_line + last.lines
            self.src += text
            self._read[real] = base
            self._bases.append(base)
            self.files.append(SourceFile(shown, first, text.count("\n") + (0 if text.endswith("\n") else 1), text))
        text = self.src[base:self._end_of(base)]
        toks = tokenize(text, base)
        if not self._main_line:
            self._main_line.append(self._line_of(start))
        self._where.append((shown, real))
        self._depth += 1
        try:
            self._run_tokens(toks)
        finally:
            self._depth -= 1
            self._where.pop()
            if self._depth == 0:
                self._main_line.clear()
        if self.out and not self.out[-1].endswith("\n"):
            self._emit("\n", base + len(text), False)

    def _end_of(self, base: int) -> int:
        """Virtual end offset of the file starting at ``base``."""
        later = [b for b in self._read.values() if b > base]
        return (min(later) if later else len(self.src))

    def _line_of(self, off: int) -> int:
        """The virtual line of virtual offset ``off`` (counted inside its own file: the input grows to megabytes)."""
        k = bisect_right(self._bases, off) - 1
        base, f = self._bases[k], self.files[k]
        return f.first_line + f.text.count("\n", 0, off - base)

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
            m = parse_define(after, self._line_of(start))
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
                name = "".join(t[1] for t in rest_sig[1:-1])
                self.angle.append(name)
                if _project_header(name) and self._find(name, angle=True) is not None:
                    self._include(name, start, angle=True)  # the project's own header, found where nvcc finds it
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
            toks.append(("punct", ALT_TOKENS[t]) if k == "id" and t in ALT_TOKENS else (k, t))
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
            v = CondParser(vals).parse()
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
                elif not (k in SPACE_KINDS or k == "nl" or t in _ASM_QUALIFIERS):
                    asm_state = 0
            elif t == "(":
                depth += 1
            elif t == ")" or (t in (":", "::") and depth == 1):
                depth -= 1 if t == ")" else 0
                if t != ")" or depth == 0:
                    asm_state = 0
            elif k == "id" and t not in macros:
                # a name in an asm template that this file does not define: keep the statement readable and say
                # which name made its text unknown (asm.read_asm turns the marker into TM901)
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
                while j < n and (block[j][0] in SPACE_KINDS or block[j][0] == "nl"):
                    j += 1
                if j >= n or block[j][1] != "(":
                    if run_start is None:
                        run_start = off
                    i += 1
                    continue
                args, last = collect_args(block, j)
                if args is None:
                    if run_start is None:
                        run_start = off
                    i += 1
                    continue
                repl = self._substitute(m, args, frozenset({t}))
            if run_start is not None:
                self._emit(self.src[run_start:off], run_start, True)
                run_start = None
            self._emit(render(repl), off, False)
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
            while j < n and toks[j][0] in SPACE_KINDS:
                j += 1
            if j >= n or toks[j][1] != "(":
                out.append((k, t))
                i += 1
                continue
            args, last = collect_args(toks, j)
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
                spelled = " ".join(x[1] for x in amap[body[i + 1][1]] if x[0] not in SPACE_KINDS)
                out.append(("str", '"' + spelled.replace("\\", "\\\\").replace('"', '\\"') + '"'))
                i += 2
                continue
            if i + 1 < len(body) and body[i + 1][1] == "##" or (out and out[-1][1] == "##"):
                piece = amap.get(t, [(k, t)]) if k == "id" else [(k, t)]
                piece = [x for x in piece if x[0] not in SPACE_KINDS]
                if out and out[-1][1] == "##":
                    out.pop()
                    if out and piece:
                        left = out.pop()
                        pasted = left[1] + piece[0][1]
                        out.extend((x[0], x[1]) for x in tokenize(pasted) if x[0] not in SPACE_KINDS)
                        out.extend(piece[1:])
                    else:
                        out.extend(piece)
                else:
                    out.extend(piece)
                i += 1
                continue
            if k == "id" and t in amap:
                out.extend(self.expand([x for x in amap[t] if x[0] not in SPACE_KINDS], hidden))
            else:
                out.append((k, t))
            i += 1
        return self.expand(out, hidden)


def _guard_follows(name: str, lines, toks, li: int) -> bool:
    """Whether the next directive after line ``li`` is ``#define name`` (an include guard)."""
    for a, b in lines[li + 1:]:
        sig = significant(toks[a:b])
        if not sig:
            continue
        return len(sig) >= 3 and sig[0][1] == "#" and sig[1][1] == "define" and sig[2][1] == name
    return False


def _text(sig, directive: str) -> str:
    body = " ".join(t[1] for t in sig)
    return f"#{directive} {body}".strip()


#: First path components of angle includes that are libraries (never read, even when an include folder has them)
_LIBRARIES = ("cute", "cutlass", "cub", "thrust", "cuda", "nv", "cooperative_groups", "crt", "sm_", "kittens",
              "deep_gemm", "torch", "c10", "ATen", "mma.h", "cuda_", "cudaTypedefs.h", "curand", "cublas", "cufft")


def _project_header(name: str) -> bool:
    """Whether angle include ``name`` may be a header of the project (``<proj/tmem.cuh>`` built with
    ``-Iinclude``): it has a file suffix and is not a library's (``<cute/tensor.hpp>``, ``<cuda_bf16.h>``)."""
    first = name.split("/", 1)[0]
    return "." in name.rsplit("/", 1)[-1] and not first.startswith(_LIBRARIES)


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
