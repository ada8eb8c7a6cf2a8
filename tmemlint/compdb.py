"""``-p BUILD``: a CUDA file's flags from ``BUILD/compile_commands.json`` (the compilation database that CMake
writes with ``CMAKE_EXPORT_COMPILE_COMMANDS=ON`` and Bear records; clang-tidy reads it the same way).

Format (clang's JSONCompilationDatabase): a list of ``{"directory", "file", "arguments" | "command"}``; ``file``
and relative paths in the arguments are relative to ``directory``.  From the entry of the checked file this keeps
what decides what nvcc sees: include folders (``-I``, ``-isystem``, ``--include-path``), macros (``-D``,
``--define-macro``), and for compile mode the language flags (``-std``, ``--expt-*``, ``--extended-lambda``,
``-include``, ``-U``).  The output, the architecture (compile mode always makes ``sm_100a`` PTX), ``-c``/``-o`` and
the source itself are dropped.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from functools import lru_cache

from tmemlint.config import ConfigError

#: Flags kept for nvcc (compile mode), with their separate value when they take one.
_KEEP_WITH_VALUE = {"-std", "--std", "-include", "--pre-include", "-U", "--undefine-macro", "-Xcompiler",
                    "--compiler-options", "-ccbin", "--compiler-bindir"}
_KEEP_PREFIX = ("-std=", "--std=", "--expt-", "--extended-lambda", "-U", "-Xcompiler=", "--compiler-options=",
                "-rdc", "--relocatable-device-code", "-G", "-lineinfo", "--use_fast_math", "-ftz", "-prec-",
                "--ftz", "--prec-", "-fmad", "--fmad", "-maxrregcount", "--maxrregcount")
_INCLUDE = {"-I", "--include-path", "-isystem", "-iquote"}
_DEFINE = {"-D", "--define-macro"}
#: Flags whose separate value is dropped with them.
_DROP_WITH_VALUE = {"-o", "--output-file", "-x", "--x", "-arch", "--gpu-architecture", "-gencode",
                    "--generate-code", "-code", "--gpu-code", "-MF", "-MT", "-MQ", "--options-file", "-odir",
                    "--output-directory", "-ccbin"}


@dataclass(slots=True)
class Flags:
    """What one file's entry says: include folders (absolute), ``NAME[=VALUE]`` macros, and nvcc arguments."""

    include_dirs: list[str] = field(default_factory=list)
    #: The ``-isystem`` folders among ``include_dirs``: their headers are library code (``tmemlint.libraries``).
    library_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    nvcc_args: list[str] = field(default_factory=list)


@lru_cache(maxsize=8)
def _load(db_path: str) -> dict[str, tuple[str, list[str]]]:
    """``real path of the file → (directory, arguments)`` of a compilation database."""
    try:
        with open(db_path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise ConfigError(f"{db_path}: {e.strerror or e} (-p names the build folder that holds "
                          f"compile_commands.json; CMake writes it with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{db_path}: not a compilation database ({e})") from None
    if not isinstance(data, list):
        raise ConfigError(f"{db_path}: not a compilation database (a JSON list of entries is expected)")
    out: dict[str, tuple[str, list[str]]] = {}
    for e in data:
        if not isinstance(e, dict) or not isinstance(e.get("file"), str):
            continue
        d = e.get("directory") if isinstance(e.get("directory"), str) else os.path.dirname(db_path)
        args = e.get("arguments")
        if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            try:
                args = shlex.split(e["command"]) if isinstance(e.get("command"), str) else []
            except ValueError:
                args = []
        out.setdefault(os.path.realpath(os.path.join(d, e["file"])), (d, args))
    return out


def flags_for(build_path: str, path: str) -> Flags | None:
    """The flags of ``path`` in ``build_path/compile_commands.json`` (``build_path`` may name the file itself);
    None when the database has no entry for it.  Raises ConfigError when the database cannot be read."""
    db = build_path if build_path.endswith(".json") else os.path.join(build_path, "compile_commands.json")
    entry = _load(os.path.abspath(db)).get(os.path.realpath(path))
    if entry is None:
        return None
    return parse_arguments(*entry)


def parse_arguments(directory: str, args: list[str]) -> Flags:
    """The Flags of one compiler command line (``args[0]`` is the compiler) run from ``directory``."""
    out = Flags()

    def absolute(p: str) -> str:
        return os.path.normpath(os.path.join(directory, p))

    i = 1
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        i += 1
        inc = next((f for f in _INCLUDE if a == f or a.startswith(f) and a[len(f):len(f) + 1] not in ("", "-")), None)
        if inc is not None:
            value = a[len(inc):].lstrip("=") if a != inc else nxt
            i += a == inc
            if value:
                out.include_dirs.append(absolute(value))
                out.nvcc_args.append("-I" + absolute(value))
                if inc == "-isystem":
                    out.library_dirs.append(absolute(value))
            continue
        dfn = next((f for f in _DEFINE if a == f or a.startswith(f)), None)
        if dfn is not None:
            value = a[len(dfn):].lstrip("=") if a != dfn else nxt
            i += a == dfn
            if value:
                out.defines.append(value)
            continue
        if a in _KEEP_WITH_VALUE and nxt is not None:
            i += 1
            out.nvcc_args += [a, absolute(nxt) if a in ("-include", "--pre-include") else nxt]
            continue
        if a in _DROP_WITH_VALUE:
            i += 1
            continue
        if a.startswith(_KEEP_PREFIX):
            out.nvcc_args.append(a)
    return out
