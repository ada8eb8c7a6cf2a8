"""Reading PTX files into ``tmemlint.ir.Module``.

LALR parsers (contextual lexer) of ``grammars/ptx.lark``, run with the IR-building transformer inline, so no parse
tree is kept: the generated one (``tmemlint.frontend.ptx_lalr``, Lark's stand-alone parser: no ``lark`` import, about
20 ms less start-up) for the first ``STANDALONE_MAX_CHARS`` characters a process parses, and Lark with lark-cython
(1.2-2x faster per line, about 35 ms to import and load) beyond them (``_pick``).  Both
have the same tables and the same IR builder: the same items, and the pure-Python parser's error positions.  Bytes are decoded as UTF-8 (a BOM is dropped); bytes that are not
UTF-8 (Latin-1 text in comments) are decoded as Latin-1 so positions stay exact.
"""

from __future__ import annotations

import functools
import gc
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tmemlint import profile
from tmemlint.frontend.split import Layout, layout
from tmemlint.frontend.transformer import (MAX_SCOPE_DEPTH, IRBuilder, NestingTooDeep, SpacedName, Decl,
                                          declared_variables)
from tmemlint.ir import Function, Module, SourcePos

if TYPE_CHECKING:
    from lark import Lark

#: The Lark options of every PTX parser (``_parser`` and the generated ``ptx_lalr``, ``generate.source``).
LARK_OPTIONS: dict[str, Any] = {"parser": "lalr", "lexer": "contextual", "maybe_placeholders": False,
                                "propagate_positions": False}

#: The generated parser reads at most this many characters (after the pre-pass) in one process, counted over its
#: texts: below it, lark-cython's faster parse (about 0.2-0.4 ms less per 1,000 characters) does not pay for
#: importing it and loading its tables (about 16-27 ms); the text that would exceed it, and every later one, goes
#: to lark-cython (docs/performance.md, issue 29).
STANDALONE_MAX_CHARS = 64_000


class _Budget:
    """The characters the generated parser has read in this process (``_pick``)."""

    def __init__(self) -> None:
        self.chars = 0


_generated = _Budget()


#: Files with more lines than this are not parsed (TM901): about 100 s and 600 MB at the parser's speed.
MAX_LINES = 1_000_000


class PTXSyntaxError(Exception):
    """The text is not PTX this grammar accepts.  ``line``/``column`` are 1-based, ``end_column`` exclusive;
    ``code`` is the rule the engine reports it as (TM900)."""

    code = "TM900"

    def __init__(self, message: str, line: int, column: int, end_column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.end_column = end_column if end_column is not None else column + 1


class PTXLimitError(PTXSyntaxError):
    """The text may be PTX but is beyond a limit of this tool (``MAX_LINES`` lines, ``MAX_SCOPE_DEPTH`` nested
    scopes, Python's recursion limit): reported as TM901 not-analysable, with the limit in the message."""

    code = "TM901"


def grammar_text() -> str:
    """The PTX grammar: ``tmemlint/grammars/ptx.lark`` inside an installed wheel, else ``grammars/ptx.lark`` of the
    source tree."""
    from importlib import resources  # only Lark's parser and the generator read the grammar (issue 29)

    try:
        res = resources.files("tmemlint").joinpath("grammars", "ptx.lark")
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover
        pass
    here = Path(__file__).resolve().parents[2] / "grammars" / "ptx.lark"
    return here.read_text(encoding="utf-8")


def backend() -> str:
    """``"lark-cython"`` when the compiled LALR backend is installed (the ``lark-cython`` package: same grammar,
    same IR, about twice as fast), else ``"lark"`` (pure Python)."""
    from importlib.util import find_spec

    return "lark-cython" if find_spec("lark_cython") is not None else "lark"  # found, not imported (issue 29)


def _table_cache(grammar: str, kind: str) -> Path | None:
    """Where the LALR tables built from ``grammar`` are kept between runs (Lark's ``cache`` file: a pickle of the
    analysed grammar, about 50 KB; loading it takes ~10 ms where building the tables takes ~100 ms): in the result
    cache's folder (``tmemlint.cachedir.cache_dir``), named by the SHA-256 of the grammar, the Lark version and the
    backend, so an edited grammar never loads stale tables.  None when the folder cannot be created (then the
    tables are built in every process)."""
    import hashlib

    import lark

    from tmemlint.cachedir import cache_dir

    digest = hashlib.sha256(f"{lark.__version__}\0{kind}\0{grammar}".encode()).hexdigest()[:32]
    folder = cache_dir() / "parser"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder / f"ptx-{digest}.lark"


@functools.lru_cache(maxsize=2)
@profile.timed("parser_load")
def _parser(accelerated: bool = True) -> "Lark":
    """The PTX parser with the IR builder inline; ``accelerated`` picks lark-cython when installed.  The LALR
    tables come from Lark's own ``cache`` file at ``_table_cache`` (Lark checks a SHA-256 of the grammar and
    options stored in it, rebuilds and rewrites a stale, corrupt or half-written file, and never fails on it)."""
    extra = {}
    kind = "lark"
    if accelerated and backend() == "lark-cython":
        try:
            import lark_cython
        except ImportError:  # found but broken: pure Lark
            pass
        else:
            extra["_plugins"] = lark_cython.plugins
            kind = "lark-cython"
    grammar = grammar_text()
    cache = _table_cache(grammar, kind)
    if cache is not None and cache.exists() and not _trusted(cache):
        try:
            cache.unlink()
        except OSError:
            cache = None  # a cache file we cannot vouch for nor remove: build the tables
    fresh = cache is not None and not cache.exists()
    from lark import Lark

    # cache after the options: Lark hashes the options in the order given, and this is the order of the files
    # that tmemlint 0.3.0 wrote (same grammar, same file name: a different order would rebuild them in turn)
    parser = Lark(grammar, transformer=IRBuilder(), **LARK_OPTIONS, cache=str(cache) if cache is not None else False,
                  **extra)
    if fresh and cache.is_file():
        _seal(cache)
    return parser


@functools.lru_cache(maxsize=1)
@profile.timed("parser_load")
def _standalone():
    """The generated parser (``tmemlint.frontend.ptx_lalr``) with the IR builder inline: pure Python, Lark's own
    LALR runtime and this grammar's tables, without importing ``lark``."""
    from tmemlint.frontend import ptx_lalr

    return ptx_lalr.Lark_StandAlone(transformer=IRBuilder())


def _pick(text: str) -> bool:
    """Whether ``text`` is parsed with Lark and lark-cython (else the generated parser): when Lark's parser is
    already loaded, or lark-cython is installed and ``text`` would take the generated parser's reading in this
    process beyond ``STANDALONE_MAX_CHARS`` (a folder of many small files pays lark-cython's import once, not a
    slower parse of each).  Without lark-cython the generated parser reads everything: Lark alone is no faster."""
    if _parser.cache_info().currsize:
        return True
    if backend() != "lark-cython":
        return False
    if _generated.chars + len(text) > STANDALONE_MAX_CHARS:
        return True
    _generated.chars += len(text)
    return False


def _digest_path(cache: Path) -> Path:
    return cache.with_name(cache.name + ".sha256")


def _seal(cache: Path) -> None:
    """Make the table file ``cache`` private to its owner and record its SHA-256 beside it (``_trusted``)."""
    import hashlib
    import os

    try:
        os.chmod(cache, 0o600)
        digest = hashlib.sha256(cache.read_bytes()).hexdigest()
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.sha256")
        tmp.write_text(digest, encoding="ascii")
        os.replace(tmp, _digest_path(cache))
    except OSError:
        pass


def _trusted(cache: Path) -> bool:
    """Whether the table file ``cache`` may be unpickled: a regular file owned by this user, writable by nobody
    else, whose bytes match the SHA-256 recorded when it was written (Lark itself checks only the grammar hash in
    its first line, so a damaged file would otherwise load and fail inside every parse)."""
    import hashlib
    import os
    import stat

    try:
        st = os.lstat(cache)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022:
            return False
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return False
        want = _digest_path(cache).read_text(encoding="ascii").strip()
        return hashlib.sha256(cache.read_bytes()).hexdigest() == want
    except (OSError, ValueError):
        return False


def decode(data: bytes) -> str:
    """Text of a PTX file: UTF-8 (BOM dropped), falling back to Latin-1 for stray non-UTF-8 bytes.

    Raises PTXSyntaxError for binary data (a NUL byte), with the position of the first NUL."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        col = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        raise PTXSyntaxError("binary data (NUL byte): not a PTX text file", line, col)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _expected(e) -> str:
    exp = getattr(e, "expected", None) or getattr(e, "allowed", None) or ()
    names = sorted(str(x) for x in exp)
    if not names:
        return ""
    pretty = {"SEMI": "';'", "OPCODE": "an instruction", "REG": "a register", "IDENT": "a name", "INT": "an integer",
              "RBRACE": "'}'", "LBRACE": "'{'", "COMMA": "','", "LSQB": "'['", "RSQB": "']'"}
    shown = [pretty.get(n, n) for n in names[:6]]
    return " (expected " + ", ".join(shown) + (", ..." if len(names) > 6 else "") + ")"


def _parse_without_gc(parser, text: str):
    """``parser.parse(text)`` with the cyclic garbage collector paused: the parse allocates millions of acyclic
    objects (tokens, operands, instructions), and every collection would walk all those built so far (18% of
    the parse time on a 520k-line file)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return parser.parse(text)
    finally:
        if enabled:
            gc.enable()


def normalize(text: str) -> str:
    """``text`` with ``\r\n`` line ends as ``\n`` (a lone ``\r`` is blank space, as in every other place that
    counts lines: code frames, fingerprints, suppressions)."""
    return text.replace("\r\n", "\n") if "\r" in text else text


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)  # a final newline ends the last line


def parse_text(text: str, path: str = "<string>", tmem_only: bool = False) -> Module:
    """Parse PTX ``text`` into a Module.

    With ``tmem_only``, only what the analyses need is parsed (``parse_layout``): debug sections are skipped and
    functions that neither hold nor reach a tcgen05 instruction are stubs (known by name, empty body); the
    line limit counts the lines that are parsed.  Without it every line is parsed and counted.

    Raises PTXSyntaxError with the position of the first token the grammar rejects, PTXLimitError for a text
    beyond ``MAX_LINES`` or ``MAX_SCOPE_DEPTH``.  Lines end at ``\n`` (``\r\n`` too); a lone ``\r`` is blank
    space."""
    text = normalize(text)
    if tmem_only:

        lay = layout(text)
        if lay is not None:
            return parse_layout(lay, path)
    lines = _line_count(text)
    if lines > MAX_LINES:
        raise PTXLimitError(f"{lines:,} lines, more than the limit of {MAX_LINES:,}: the file is not analysed",
                            1, 1)
    return parse_module(text, path)


def parse_layout(lay, path: str) -> Module:
    """Parse the functions the analyses need of the normalized text of ``lay`` (a ``split.Layout``): its
    ``pruned`` text.  Raises PTXLimitError when more than ``MAX_LINES`` lines are left to parse (``code_lines``).
    When the pruned text does not parse, the whole text is parsed instead (when within ``MAX_LINES``), so the
    error reported is the first one of the file, as without pruning."""
    check_code_lines(lay)
    if not lay.skips:
        return parse_module(lay.text, path)
    try:
        return parse_module(lay.pruned(), path)
    except PTXLimitError:
        raise
    except PTXSyntaxError:
        if lay.lines > MAX_LINES:
            raise
    return parse_module(lay.text, path)


#: At most this many functions with a syntax error are left out before the file is reported as one error.
MAX_ISOLATED = 32


def parse_isolating(lay, path: str) -> tuple[Module, list[tuple[PTXSyntaxError, tuple[int, int]]]]:
    """``parse_layout`` that keeps going past syntax errors inside function bodies: a needed function whose text
    does not parse is parsed as a stub (its header and braces, an empty body; ``split.Layout.render``) and its
    error is returned with the function's 1-based line range ``(first, last)``, so the other functions are still
    analysed.  Returns the module and those errors (none for a text that parses).  An error outside every needed
    function (module directives, declarations, a function's header), more than ``MAX_ISOLATED`` broken functions,
    or a limit: raised as ``parse_layout`` raises it (the first error of the file)."""

    check_code_lines(lay)
    keep = list(lay.keep)
    firsts: list[int] = []
    line, pos = 1, 0
    for u in lay.units:
        line += lay.text.count("\n", pos, u.start)
        firsts.append(line)
        pos = u.start
    errors: list[tuple[PTXSyntaxError, tuple[int, int]]] = []
    cur = lay
    while True:
        try:
            return parse_module(cur.pruned() if cur.skips else cur.text, path), errors
        except PTXLimitError:
            raise
        except PTXSyntaxError as e:
            hit = [i for i, u in enumerate(lay.units) if keep[i] and u.kind in ("entry", "func")
                   and _brace_line(lay, i, firsts) < e.line <= firsts[i] + u.lines - 1]
            if not hit or len(errors) >= MAX_ISOLATED:
                return parse_layout(lay, path), []  # raises the reference error of the file
            i = hit[0]
            keep[i] = False
            errors.append((e, (firsts[i], firsts[i] + lay.units[i].lines - 1)))
            _drop_callers(lay, keep, lay.units[i])
            cur = Layout(lay.text, lay.units, keep)


def parse_text_isolating(text: str, path: str = "<string>", tmem_only: bool = True
                         ) -> tuple[Module, list[tuple[PTXSyntaxError, tuple[int, int]]]]:
    """``parse_text(text, path, tmem_only)`` with syntax errors confined to their functions (``parse_isolating``):
    the module of the functions that parse and the errors of the others, each with its function's 1-based line
    range.  A text that ``split.layout`` cannot cut is parsed whole (its first error is raised, as ``parse_text``
    raises it)."""

    text = normalize(text)
    lay = layout(text, prune=tmem_only)
    if lay is None:
        return parse_text(text, path), []
    return parse_isolating(lay, path)


def _brace_line(lay, i: int, firsts: list[int]) -> int:
    """The 1-based line of the opening brace of unit ``i`` (an error on it or before it is in the header)."""
    u = lay.units[i]
    return firsts[i] + lay.text.count("\n", u.start, u.open)


def _drop_callers(lay, keep: list[bool], broken) -> None:
    """Stub the functions that call the ``.func`` ``broken`` (transitively): analysed against its empty stub they
    would report what its real body does (a dealloc done by the callee would look missing)."""
    import re

    names = [broken.name] if broken.kind == "func" and broken.name else []
    while names:
        word = re.compile(r"(?<![\w$%])" + re.escape(names.pop()) + r"(?![\w$])")
        for j, u in enumerate(lay.units):
            if keep[j] and u.kind in ("entry", "func") and word.search(lay.text, u.open, u.close):
                keep[j] = False
                if u.kind == "func" and u.name:
                    names.append(u.name)


def check_code_lines(lay) -> None:
    """Raise PTXLimitError when more than ``MAX_LINES`` lines of the layout ``lay`` are left to parse (its
    ``code_lines``: debug sections, initializer lists and the bodies of functions that are not needed do not
    count)."""
    code = lay.code_lines
    if code > MAX_LINES:
        raise PTXLimitError(f"{code:,} lines of code (debug sections and functions without tcgen05 not counted), "
                            f"more than the limit of {MAX_LINES:,}: the file is not analysed", 1, 1)


def parse_module(text: str, path: str) -> Module:
    """Parse normalized PTX ``text`` whole, without a line limit (the callers apply it); see ``parse_text``."""
    from tmemlint.frontend.ptx_lalr import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    try:
        items = None
        if _pick(text):
            prof = profile.ACTIVE  # importing lark (on the first large text of a process): loading the parser
            if prof is not None:
                prof.push("parser_load")
            try:
                from lark.exceptions import UnexpectedInput
            finally:
                if prof is not None:
                    prof.pop()

            try:
                items = _parse_without_gc(_parser(), text)
            except UnexpectedInput:
                pass  # the pure-Python parser, below, gives the reference error position
        if items is None:
            items = _parse_without_gc(_standalone(), text)
    except UnexpectedCharacters as e:
        raise PTXSyntaxError(f"unexpected character {text[e.pos_in_stream]!r}", e.line, e.column) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            raise PTXSyntaxError("unexpected end of file" + _expected(e), max(1, text.count("\n") + 1), 1) from None
        width = max(1, len(str(tok)))
        raise PTXSyntaxError(f"unexpected {str(tok)[:40]!r}" + _expected(e), tok.line, tok.column,
                             tok.column + width) from None
    except UnexpectedEOF as e:
        raise PTXSyntaxError("unexpected end of file" + _expected(e), max(1, text.count("\n") + 1), 1) from None
    except SpacedName as e:
        raise PTXSyntaxError(e.message, e.line, e.column, e.end_column) from None
    except NestingTooDeep as e:
        raise PTXLimitError(f"{e}: the file is not analysed (limit {MAX_SCOPE_DEPTH})", e.line, e.column) from None
    except RecursionError:
        raise PTXLimitError("nested too deep for the parser (Python recursion limit): the file is not analysed",
                            1, 1) from None
    module = Module(path=path, line_count=_line_count(text))
    for item in items:
        if isinstance(item, Function):
            module.functions.append(item)
        elif isinstance(item, Decl):
            for v in declared_variables(item):
                module.variables[v.name] = v
        elif isinstance(item, tuple):
            kind, value = item
            if kind == "file":
                module.files[value[0]] = value[1]
            elif kind == "version":
                module.version = value
            elif kind == "target":
                module.target = value
            elif kind == "address_size":
                module.address_size = value
    _resolve_locs(module)
    return module


def _resolve_locs(module: Module) -> None:
    cache: dict[int, SourcePos | None] = {}
    files = module.files
    for fn in module.functions:
        for inst in fn.instructions:
            raw = inst.src
            if raw is None:
                continue
            key = id(raw)
            pos = cache.get(key)
            if pos is None:
                inl = tuple(SourcePos(files.get(f, f"<file {f}>"), ln, col) for f, ln, col in raw.inlined)
                pos = SourcePos(files.get(raw.file, f"<file {raw.file}>"), raw.line, raw.column, inl)
                cache[key] = pos
            inst.src = pos


def parse_file(path: str | Path, display: str | None = None) -> Module:
    """Read and parse a PTX file.

    Raises OSError when the file cannot be read and PTXSyntaxError when it is not PTX."""
    data = Path(path).read_bytes()
    return parse_text(decode(data), display or str(path))
