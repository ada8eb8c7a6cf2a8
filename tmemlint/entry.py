"""Console entry point with a content-hash result cache.

A check of unchanged inputs (a pre-commit hook or an editor running again) is answered from the cache without
importing the parser or the analyses: the key is a SHA-256 over the tool version and its installed files (sizes
and modification times), the command-line arguments, the
working directory, and the bytes of every input file and of every configuration file that could apply to it
(``pyproject.toml`` / ``tmemlint.toml`` in its folder and above).  The cached value is the run's standard output,
standard error and exit code.  Only runs whose output does not go to a terminal are cached (colour and progress
bars depend on it), and only plain ``check`` runs over files (no ``-``, no folders, no ``--write-baseline``).

The cache lives in ``$TMEMLINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/tmemlint``, else ``~/.cache/tmemlint``;
``--no-cache`` (or ``TMEMLINT_NO_CACHE=1``) bypasses it.  Entries are small files named by the key; a corrupt or
unreadable entry is ignored.
"""

import os
import sys

from tmemlint.version import __version__

# Nothing else is imported here: ``--version`` and ``rules`` cost the interpreter's start and little more
# (``_answer_at_once``); the cache's modules (hashlib, json, pathlib) are imported by the functions that use them.

_CONFIG_NAMES = ("pyproject.toml", "tmemlint.toml")
_UNCACHEABLE = {"-", "--write-baseline", "--compile", "--stdin-filename", "server", "plan", "rules", "rule",
                "--help", "-h", "--version", "--statistics", "-o", "--output-file", "--show-settings", "--profile",
                "--profile-json"}


def _configs_for(path) -> list:
    """The configuration files that may apply to ``path`` (a ``pathlib.Path``): in its folder and above."""
    out = []
    d = path.resolve().parent
    while True:
        for name in _CONFIG_NAMES:
            c = d / name
            if c.is_file():
                out.append(c)
        if d.parent == d:
            return out
        d = d.parent


def _code_stamp() -> str:
    """Size and modification time of every file of the installed package (code, grammar, rule pages): an
    edited rule or an editable install that changed invalidates the cache even when the version stays."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parent
    parts = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith((".py", ".lark", ".md")):
                try:
                    st = os.stat(os.path.join(dirpath, n))
                except OSError:
                    continue
                parts.append(f"{n}:{st.st_size}:{st.st_mtime_ns}")
    grammar = root.parent / "grammars" / "ptx.lark"
    if grammar.is_file():
        st = grammar.stat()
        parts.append(f"grammar:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def cache_key(args: list[str]) -> str | None:
    """The cache key of a ``check`` run with ``args``, or None when the run is not cacheable (a folder or a glob,
    an argument that is not a readable regular file where a path is expected, stdin, or an option that writes or
    reads elsewhere)."""
    import hashlib
    import json
    from pathlib import Path

    if any(a in _UNCACHEABLE or a.startswith(("--write-baseline", "--compile", "--build-path", "-p",
                                               "--output-file", "-o", "--show-settings",
                                               "--profile")) for a in args):
        return None
    h = hashlib.sha256()
    h.update(f"tmemlint {__version__}\0{_code_stamp()}\0{os.getcwd()}\0".encode())
    h.update(json.dumps(args).encode())
    for var in ("NO_COLOR", "TMEMLINT_CONFIG"):
        h.update(f"{var}={os.environ.get(var, '')}\0".encode())
    files = 0
    configs: set[Path] = set()
    for a in args:
        if a.startswith("-"):
            continue
        p = Path(a)
        if p.is_dir():
            return None  # folder contents change without the path changing: not worth hashing a tree here
        if any(c in a for c in "*?[") and not p.is_file():
            return None  # a glob: what it matches changes without the argument changing
        if not p.is_file():
            continue  # an option value (format name, rule code) or a missing file: part of the args hash
        try:
            data = p.read_bytes()
        except OSError:
            return None
        if b'#include "' in data and not a.endswith(".ptx"):
            return None  # a CUDA file with quoted includes: its headers are inputs too, and may change alone
        h.update(b"\0F" + a.encode() + b"\0" + hashlib.sha256(data).digest())
        configs.update(_configs_for(p))
        files += 1
    if not files:
        return None
    for c in sorted(configs):
        try:
            h.update(b"\0C" + str(c).encode() + b"\0" + c.read_bytes())
        except OSError:
            return None
    return h.hexdigest()


def _read(key: str) -> tuple[str, str, int] | None:
    import json

    from tmemlint.cachedir import cache_dir

    try:
        entry = json.loads((cache_dir() / key[:2] / key).read_text(encoding="utf-8"))
        return entry["stdout"], entry["stderr"], int(entry["code"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(key: str, out: str, err: str, code: int) -> None:
    import json

    from tmemlint.cachedir import cache_dir

    try:
        d = cache_dir() / key[:2]
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{key}.{os.getpid()}"
        tmp.write_text(json.dumps({"stdout": out, "stderr": err, "code": code}), encoding="utf-8")
        os.replace(tmp, d / key)
    except OSError:
        pass  # a read-only home or a full disk only loses the cache


def _answer_at_once(args: list[str]) -> bool:
    """Answer ``--version``, ``rules`` and ``rule CODE`` without the command line's parser (typer) or the rules
    (their table is ``tmemlint.ruletable``): the output and exit code of ``tmemlint.cli`` for the same
    arguments.  False for anything else."""
    if args == ["--version"]:
        sys.stdout.write(f"tmemlint {__version__}\n")
        return True
    if args == ["rules"]:
        from tmemlint.ruletable import rules_lines

        sys.stdout.write("\n".join(rules_lines()) + "\n")
        return True
    if len(args) == 2 and args[0] == "rule" and not args[1].startswith("-"):
        from tmemlint.ruletable import ROWS, resolve_prefix

        got = resolve_prefix(args[1])
        if len(got) != 1:
            sys.stderr.write(f"tmemlint: unknown rule {args[1]!r}\n")
            raise SystemExit(2)
        code, name, severity, _on, summary = next(r for r in ROWS if r[0] == got[0])
        here = os.path.dirname(os.path.abspath(__file__))
        text = None
        for folder in (os.path.join(here, "rules"), os.path.join(os.path.dirname(here), "rules")):
            if os.path.isdir(folder):  # the wheel's tmemlint/rules, else the source tree's (tmemlint.docs.rules_dir)
                try:
                    with open(os.path.join(folder, f"{code}-{name}.md"), encoding="utf-8") as fh:
                        text = fh.read()
                except OSError:
                    pass
                break
        if text is None:
            text = f"{code} {name} ({severity})\n\n{summary}\n"
        sys.stdout.write(text + "\n")
        return True
    return False


def _run(args: list[str]) -> None:
    """The command: a plain check (files and the few options ``checkcmd.parse_simple`` reads) without typer
    (``checkcmd.run_check``, the function the typer command calls), anything else through ``tmemlint.cli``.
    Raises ``SystemExit`` with the exit status, as typer does.

    The start-up runs with the cyclic garbage collector off: the driver's modules and, for a plain check, the
    rules and the analyses under them (``load_all``, which ``run_check``'s ``Settings`` would call first) allocate
    only what lives as long as the process, and the collections during their import (about 50 at the default
    thresholds, a few ms) walked them for nothing.  ``gc.freeze`` then keeps them out of every later collection
    and the collector is back on for the analyses.  This function runs once per process (the console script,
    ``python -m tmemlint``); the API and the language server do not pass through it."""
    import gc

    gc.disable()
    try:
        from tmemlint.checkcmd import load_all, parse_simple, run_check

        simple = parse_simple(args)
        if simple is not None:
            load_all()
    finally:
        gc.freeze()
        gc.enable()
    if simple is not None:
        raise SystemExit(run_check(**simple))
    from tmemlint import cli

    cli.main(args)


#: Subcommands of ``tmemlint.cli`` that are not a check: they leave through the interpreter's normal exit.
_NOT_A_CHECK = {"plan", "rules", "rule", "server", "--help", "-h", "--version"}


def silence_stdout() -> None:
    """Point the standard output's file descriptor at ``os.devnull`` after a write to it failed (a reader that
    closed the pipe early: ``tmemlint ... | head -1``), so that no later flush fails again (the recipe of the
    Python documentation, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's StringIO): nothing to silence
        pass


def _flush() -> None:
    """Flush standard output and standard error; a reader that went away loses the rest, not the exit code."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        silence_stdout()
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def fast_exit_allowed() -> bool:
    """Whether a finished check may leave with ``os._exit``: not when ``TMEMLINT_NO_FAST_EXIT`` is ``1``, ``true``
    or ``yes`` (for tools that run code at the interpreter's exit: coverage, ``atexit`` probes)."""
    return os.environ.get("TMEMLINT_NO_FAST_EXIT", "").lower() not in ("1", "true", "yes")


def _leave(code: object, fast: bool) -> None:
    """End a ``main`` run with exit status ``code`` (a ``SystemExit``'s code).  With ``fast`` (a finished check
    run by ``console``, ``fast_exit_allowed``) and an integer status: flush the standard streams, then
    ``os._exit(code)``, which skips the interpreter's shutdown: freeing the IR and every analysis object, 9% of a
    check's CPU in session 9's per-phase account, 0.6 s on an 886k-line PTX file (docs/performance.md, issue 29,
    "the exit phase").  Every file the check wrote is closed by then (``--output-file``, ``--profile-json``,
    ``--write-baseline`` and the result cache are written in ``with`` blocks or by ``Path.write_text``) and its
    worker processes are joined (``-j N``: the pools are ``with`` blocks).  Otherwise raise ``SystemExit(code)``."""
    _flush()
    if fast and isinstance(code, int) and not isinstance(code, bool):
        os._exit(code)
    raise SystemExit(code)


def main(argv: list[str] | None = None, *, fast_exit: bool = False) -> None:
    """``tmemlint`` console script: answer from the cache when possible, else run ``tmemlint.cli.main``.
    ``fast_exit``: a finished check ends the process with ``os._exit`` (``_leave``); ``console`` passes it, a
    caller in a process that goes on (a test, a tool) leaves it off and gets ``SystemExit``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if _answer_at_once(args):
        _flush()
        return
    use_cache = "--no-cache" not in args and os.environ.get("TMEMLINT_NO_CACHE") not in ("1", "true", "yes")
    args_wo = [a for a in args if a != "--no-cache"]
    fast = fast_exit and fast_exit_allowed() and not (args_wo and args_wo[0] in _NOT_A_CHECK)
    key = None
    if use_cache and args_wo and not (sys.stdout.isatty() or sys.stderr.isatty()):
        first = args_wo[0]
        check_args = args_wo[1:] if first == "check" else args_wo
        key = cache_key(check_args)
    if key is not None:
        hit = _read(key)
        if hit is not None:
            out, err, code = hit
            try:
                sys.stdout.write(out)
            except BrokenPipeError:
                silence_stdout()
            sys.stderr.write(err)
            _leave(code, fast)
    if key is None:
        try:
            _run(args_wo)
        except SystemExit as e:
            if not fast:
                raise
            _leave(e.code, fast)
        return
    import contextlib
    import io

    out_buf, err_buf = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out_buf), contextlib.redirect_stderr(err_buf):
            _run(args_wo)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    out, err = out_buf.getvalue(), err_buf.getvalue()
    if code in (0, 1):
        _write(key, out, err, code)
    try:
        sys.stdout.write(out)
    except BrokenPipeError:
        silence_stdout()
    sys.stderr.write(err)
    _leave(code, fast)


def console() -> None:
    """The ``tmemlint`` console script and ``python -m tmemlint``: ``main`` with ``fast_exit``."""
    main(fast_exit=True)


if __name__ == "__main__":  # pragma: no cover
    console()
