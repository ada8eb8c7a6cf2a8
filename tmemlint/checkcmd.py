"""The ``check`` command without its command-line parser: what ``tmemlint check`` does once its arguments are
read (``run_check``), the output formats and the helpers the CLI shares (issue 29, start-up).

``tmemlint.cli`` declares the options with typer and calls ``run_check``; ``tmemlint.entry`` calls it directly for
the command lines that ``parse_simple`` understands (files and a few options), so that a plain check does not
import typer, click or rich (about 25 ms of CPU, docs/performance.md).  Anything else goes to typer.  Messages go
to standard error as ``typer.echo(..., err=True)`` writes them (the text, a line break, a flush), so both paths
print the same bytes (tests/test_startup.py compares them).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter
from enum import Enum
from typing import Any, Callable, Iterable, Sequence

from tmemlint import profile as _profile
from tmemlint.checks.registry import RULES, load_all  # noqa: F401 - load_all: for tmemlint.entry's start-up
from tmemlint.config import ConfigError, Overrides, Settings, split_selectors
from tmemlint.engine import FileResult, Options, lint_bytes, lint_file, share_cores
from tmemlint.findings import Finding, Severity
from tmemlint.libraries import library_predicate

STDIN_DISPLAY = "<stdin>"
PROGRESS_MIN_FILES = 20


def _echo(text: str, err: bool = False) -> None:
    """``typer.echo``'s bytes for plain text: ``text``, a line break, then a flush."""
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n")
    stream.flush()


class OutputFormat(str, Enum):
    """``--format``: text (with code frames), concise (one line), json, sarif (2.1.0), github (workflow commands)."""

    text = "text"
    concise = "concise"
    json = "json"
    sarif = "sarif"
    github = "github"


class FailOn(str, Enum):
    """``--fail-on``: the lowest severity that makes the exit code 1 (``never``: findings never do)."""

    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _stdout(text: str, flush: bool = False) -> None:
    """Write ``text`` to standard output (and flush it); when the reader has closed the pipe (``tmemlint ... |
    head -1``) the rest of the output is dropped (standard output's descriptor then points at ``os.devnull``) and the check goes on: the summary on
    standard error and the exit status stay what they would have been."""
    try:
        sys.stdout.write(text)
        if flush:
            sys.stdout.flush()
    except BrokenPipeError:
        try:  # entry.silence_stdout's steps (entry imports this module: no import back)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass


def fail(message: str) -> None:
    _echo(f"tmemlint: {message}", err=True)
    raise SystemExit(2)


def _lint_task(task: tuple[str, str, Options]) -> FileResult:
    """Worker: lint one ``(path, display, options)`` file.  An unexpected internal error becomes an ``unreadable`` result instead of a traceback."""
    path, display, options = task
    p = _profile.ACTIVE
    if p is not None:
        p.begin_file(display)
    try:
        res = lint_file(path, display, options)
    except Exception as e:  # noqa: BLE001 - one broken file must not stop the others
        res = FileResult(display, unreadable=f"internal error: {type(e).__name__}: {e}", options=options)
    if p is not None:
        res.profile = p.end_file()
    return res


def _worker_init(profiling: bool) -> None:
    """Initializer of the worker processes of a run over several files: ``engine.share_cores``, and a profile of
    the worker's own (``profile.worker_profile``) when the run is profiled."""
    share_cores()
    if profiling:
        _profile.worker_profile()


def lint_tasks(tasks: Sequence[tuple[str, str, Options]], jobs: int,
               on_done: Callable[[], None] | None = None) -> list[FileResult]:
    """Lint ``(path, display, options)`` tasks with up to ``jobs`` processes; results in task order (so the
    output does not depend on ``jobs``).  ``on_done`` is called once per finished file (for a progress bar).
    When a worker process dies, the files not yet done are linted in this process."""
    results: list[FileResult] = []
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            results.append(_lint_task(t))
            if on_done:
                on_done()
        return results
    from concurrent.futures import ProcessPoolExecutor  # imported here: ~20 ms that a one-file run never needs
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), initializer=_worker_init,
                                 initargs=(_profile.ACTIVE is not None,)) as pool:
            # largest files first (the last file to start is a small one), results in task order
            order = sorted(range(len(tasks)), key=lambda i: -_file_size(tasks[i][0]))
            futures = {i: pool.submit(_lint_task, tasks[i]) for i in order}
            for i in range(len(tasks)):
                results.append(futures[i].result())
                if on_done:
                    on_done()
    except BrokenProcessPool:  # a worker died (killed, out of memory): finish in this process
        for t in tasks[len(results):]:
            results.append(_lint_task(t))
            if on_done:
                on_done()
    return results


def _file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _run_with_progress(tasks, jobs: int) -> list[FileResult]:
    show = len(tasks) > PROGRESS_MIN_FILES and sys.stderr.isatty() and not os.environ.get("CI")
    if not show:
        return lint_tasks(tasks, jobs)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task("check", total=len(tasks))
        return lint_tasks(tasks, jobs, lambda: progress.advance(bar))


def statistics(findings: Iterable[Finding]) -> list[tuple[str, str, int]]:
    """``(code, name, count)`` per rule with findings, most frequent first (ties by code)."""
    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    return sorted(((c, names[c], n) for c, n in counts.items()), key=lambda x: (-x[2], x[0]))


def use_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def present(findings: list[Finding], results: list[FileResult]) -> tuple[list[Finding], dict[str, str]]:
    """The findings as a person reads them: PTX findings with ``-lineinfo`` moved to their CUDA lines
    (``tmemlint.lineinfo``), one finding per place and rule across files (a ``.cu`` and the PTX made from it
    give the same finding), sorted; and the text of every file a finding names, for code frames."""
    sources = {r.path: r.text for r in results if r.text is not None}
    out: list[Finding] = []
    for res in results:
        if res.text is not None and res.path.endswith(".ptx") and ".loc" in res.text:
            from tmemlint.lineinfo import relocate  # only for PTX with line information

            out.extend(_profile.timed("lineinfo")(relocate)(
                [f for f in findings if f.path == res.path], res.text, res.path, sources,
                library_predicate(res.options, res.path)))
    moved = {id(f) for r in results if r.text is not None and r.path.endswith(".ptx") and ".loc" in r.text
             for f in findings if f.path == r.path}
    out.extend(f for f in findings if id(f) not in moved)
    out.sort(key=lambda x: x.sort_key())
    unique: dict[tuple, Finding] = {}
    for f in out:
        key = (f.path, f.line, f.code, f.fingerprint or f.message)
        kept = unique.get(key)
        if kept is None:
            unique[key] = f
            continue
        if kept.origin is not None and f.origin is None:  # prefer the finding of the file read directly
            unique[key], kept, f = f, f, kept
        said = {r.message for r in kept.related}
        kept.related.extend(r for r in f.related if r.message not in said)
    return list(unique.values()), sources


def _show_settings(settings: Settings, path: str, define, compile_: bool, nvcc_arg, include_dir=None,
                   build_path=None) -> None:
    """``--show-settings``: the configuration file that applies to ``path`` and every resolved setting."""
    cfg = settings.config_for(path) if path != "-" else None
    opts = _source_options(settings.options_for(path), define, compile_, nvcc_arg, include_dir, build_path, path)
    codes = sorted(opts.codes) if opts.codes is not None else sorted(c for c, r in RULES.items() if r.enabled)
    lines = [
        f"Resolved settings for: {path}",
        f"configuration file: {_shown(cfg.source) if cfg is not None and cfg.source else '(none)'}",
        f"select: {', '.join(codes)}",
        f"severity: {', '.join(f'{c}={v}' for c, v in sorted(opts.severity.items())) or '(rule defaults)'}",
        f"fail-on: {opts.fail_on}",
        f"ctas-per-sm: {opts.ctas_per_sm if opts.ctas_per_sm is not None else '(from .minnctapersm)'}",
        f"exclude: {', '.join(g for g, _ in settings.exclude_patterns(path))}",
        f"force-exclude: {str(settings.force_exclude(path)).lower()}",
        f"respect-gitignore: {str(settings.respect_gitignore(path)).lower()}",
        f"defines: {', '.join(f'{k}={v}' for k, v in opts.defines.items()) or '(none)'}",
        f"mode: {'compile (nvcc)' if opts.compile else 'source'} for CUDA files",
        f"include-dirs: {', '.join(opts.include_dirs) or '(none)'}",
    ]
    if opts.nvcc_args:
        lines.append(f"nvcc arguments: {' '.join(opts.nvcc_args)}")
    _echo("\n".join(lines))


def _shown(path) -> str:
    from tmemlint.discover import display_path

    return display_path(str(path))


def _source_options(options: Options, define: list[str] | None, compile_: bool,
                    nvcc_arg: list[str] | None, include_dir: list[str] | None = None, build_path: str | None = None,
                    path: str | None = None) -> Options:
    """``options`` with the CUDA-source settings of the command line (``-D``, ``--compile``, ``--nvcc-arg``,
    ``-I``, and ``-p``: the flags of ``path`` in ``compile_commands.json``, ``tmemlint.compdb``)."""
    db = None
    if build_path and path:  # the compilation database's reader (json, shlex) only with -p
        from tmemlint.compdb import flags_for

        db = flags_for(build_path, path)
    for d in (db.defines if db else []) + list(define or ()):
        name, eq, value = d.partition("=")
        if name.strip():
            options.defines[name.strip()] = value if eq else "1"
    options.compile = compile_
    options.nvcc_args = (tuple(db.nvcc_args) if db else ()) + tuple(nvcc_arg or ())
    options.include_dirs = tuple(include_dir or ()) + (tuple(db.include_dirs) if db else ()) + options.include_dirs
    options.library_dirs = tuple(db.library_dirs) if db else ()
    return options


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(findings: list[Finding], hidden: int = 0, failed: bool = False) -> str:
    """The last line of terminal formats: ``Found 3 errors and 51 warnings in 2 files`` (counts by severity, then
    the number of files with findings), ``All checks passed!`` when there is nothing, and how many findings the
    baseline hid."""
    extra = f" ({hidden} more in the baseline)" if hidden else ""
    if not findings:
        if failed:
            return "No findings in the files that could be checked" + extra
        return "All checks passed!" + extra
    n = Counter(f.severity for f in findings)
    parts = [_plural(n[Severity.ERROR], "error") if n[Severity.ERROR] else "",
             _plural(n[Severity.WARNING], "warning") if n[Severity.WARNING] else "",
             f"{n[Severity.INFO]} info finding{'' if n[Severity.INFO] == 1 else 's'}" if n[Severity.INFO] else ""]
    parts = [p for p in parts if p]
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    files = len({f.path for f in findings})
    return f"Found {said} in {_plural(files, 'file')}{extra}"


def _render(findings: list[Finding], sources: dict[str, str], fmt: OutputFormat, show_statistics: bool,
            notifications: list[str], hidden: int, color: bool, witness: bool = False) -> str:
    """The text of standard output (or ``--output-file``) for ``fmt``: the findings only (the CLI prints
    ``summary`` on standard error for the terminal formats, as clang-tidy does, so that pipes get findings
    only).  ``witness``: the text format shows each finding's code-flow steps under it."""
    from tmemlint.names import demangle_message

    if show_statistics:
        stats = statistics(findings)
        if fmt is OutputFormat.json:
            import json

            return json.dumps([{"code": c, "name": n, "count": k} for c, n, k in stats], indent=2) + "\n"
        out = "".join(f"{k:>5}  {c}  {n}\n" for c, n, k in stats)
    elif fmt is OutputFormat.json:
        from tmemlint.report.json_format import format_json

        return format_json(findings)
    elif fmt is OutputFormat.sarif:
        from tmemlint.report.sarif import format_sarif

        return format_sarif(findings, notifications)
    else:
        shown = [dataclasses.replace(f, message=demangle_message(f.message)) for f in findings]
        if fmt is OutputFormat.github:
            from tmemlint.report.github import format_github

            out = format_github(shown)
        elif fmt is OutputFormat.concise:
            from tmemlint.report.concise import format_concise

            out = format_concise(shown)
        else:
            from tmemlint.report.text import format_text

            out = format_text(shown, sources, color=color, witness=witness)
    return out



@dataclasses.dataclass(frozen=True)
class CheckOptions:
    """The options of ``tmemlint check`` after its paths, with the command line's defaults (``tmemlint.cli.check``
    declares and documents each for typer; ``parse_simple`` reads a few without it).  ``run_check`` takes them
    as keywords; ``check`` takes this object."""

    output_format: OutputFormat = OutputFormat.text
    output_file: str | None = None
    select: Sequence[str] | None = None
    ignore: Sequence[str] | None = None
    extend_select: Sequence[str] | None = None
    fail_on: FailOn | None = None
    exit_zero: bool = False
    quiet: bool = False
    config: str | None = None
    isolated: bool = False
    show_settings: bool = False
    exclude: Sequence[str] | None = None
    extend_exclude: Sequence[str] | None = None
    force_exclude: bool | None = None
    respect_gitignore: bool | None = None
    ctas_per_sm: int | None = None
    show_statistics: bool = False
    #: None: when standard output is a terminal and there is no ``--output-file``.
    show_witness: bool | None = None
    baseline: str | None = None
    write_baseline: str | None = None
    stdin_filename: str | None = None
    #: None: ``os.cpu_count()``.
    jobs: int | None = None
    define: Sequence[str] | None = None
    compile_: bool = False
    nvcc_arg: Sequence[str] | None = None
    include_dir: Sequence[str] | None = None
    build_path: str | None = None
    #: The CPU time per phase (``tmemlint.profile``) as a table on standard error.
    profile: bool = False
    #: The same as JSON in this file.
    profile_json: str | None = None


def run_check(paths: Sequence[str] | None, **options: Any) -> int:
    """``tmemlint check`` with its arguments read: ``check(paths, CheckOptions(**options))`` (an unknown keyword
    is a ``TypeError``), the exit status."""
    return check(paths, CheckOptions(**options))


def check(paths: Sequence[str] | None, o: CheckOptions) -> int:
    """``tmemlint check PATHS`` with the options ``o``: the exit status (0, 1, 2 as ``tmemlint.cli`` documents).
    With ``o.profile``/``o.profile_json``: the CPU time per phase (``tmemlint.profile``) as a table on standard
    error and/or as JSON in that file."""
    if not (o.profile or o.profile_json):
        return _check(paths, o)
    prof = _profile.enable()
    try:
        status = _check(paths, o)
        run = prof.finish()
    finally:
        _profile.disable()
    if o.profile:
        _stdout("", flush=True)
        sys.stderr.write(_profile.table(run, prof.files))
        sys.stderr.flush()
    if o.profile_json:
        import json

        try:
            with open(o.profile_json, "w", encoding="utf-8") as fh:
                json.dump(_profile.as_json(run, prof.files), fh, indent=1)
                fh.write("\n")
        except OSError as e:
            fail(f"{o.profile_json}: cannot write: {e.strerror or e}")
    return status


def _check(paths: Sequence[str] | None, o: CheckOptions) -> int:
    """``check`` without the profile."""
    from tmemlint.discover import display_path, discover

    paths = list(paths or [])
    if not paths:
        paths = ["-"] if o.stdin_filename is not None else ["."]
    if o.jobs is not None and o.jobs < 1:
        fail(f"--jobs: must be at least 1 (got {o.jobs})")
    n_jobs = o.jobs or os.cpu_count() or 1
    try:
        settings = Settings(o.config, o.isolated, Overrides(
            select=split_selectors(o.select) if o.select else None, extend_select=split_selectors(o.extend_select),
            ignore=split_selectors(o.ignore), fail_on=o.fail_on.value if o.fail_on else None, ctas_per_sm=o.ctas_per_sm,
            exclude=list(o.exclude) if o.exclude else None, extend_exclude=list(o.extend_exclude or []),
            force_exclude=o.force_exclude, respect_gitignore=o.respect_gitignore))
        found = discover([p for p in paths if p != "-"], settings)
        if o.show_settings:
            first = found.files[0] if found.files else (o.stdin_filename or paths[0])
            _show_settings(settings, first, o.define, o.compile_, o.nvcc_arg, o.include_dir, o.build_path)
            return 0
        tasks = [(f, f, _source_options(settings.options_for(f), o.define, o.compile_, o.nvcc_arg, o.include_dir,
                                         o.build_path, f)) for f in found.files]
        stdin_task = None
        if "-" in paths:
            display = display_path(o.stdin_filename) if o.stdin_filename else STDIN_DISPLAY
            stdin_task = (display, _source_options(settings.options_for(o.stdin_filename or os.path.join(
                os.getcwd(), "-")), o.define, o.compile_, o.nvcc_arg, o.include_dir, o.build_path, o.stdin_filename))
    except ConfigError as e:
        fail(str(e))

    status = 0
    notifications: list[str] = []
    for m in found.missing:
        msg = f"{m}: no such file or directory"
        _echo(f"tmemlint: {msg}", err=True)
        notifications.append(msg)
        status = 2
    if not tasks and stdin_task is None and not found.missing:
        where = ", ".join(found.empty) if found.empty else ", ".join(paths)
        _echo(f"tmemlint: warning: no .ptx, .cu or .cuh files to check in {where} (after exclusions and "
                   f".gitignore)", err=True)
    if n_jobs > 1:  # a big multi-kernel PTX file is also split over processes (engine.SPLIT_MIN_LINES)
        tasks = [(f, d, dataclasses.replace(o, jobs=n_jobs)) for f, d, o in tasks]
        if stdin_task is not None:
            stdin_task = (stdin_task[0], dataclasses.replace(stdin_task[1], jobs=n_jobs))
    results: list[FileResult] = []
    prof = _profile.ACTIVE
    if stdin_task is not None:
        if prof is not None:
            prof.begin_file(stdin_task[0])
            prof.push("read")
        data = sys.stdin.buffer.read()
        if prof is not None:
            prof.pop()
        results.append(lint_bytes(data, stdin_task[0], stdin_task[1]))
        if prof is not None:
            results[-1].profile = prof.end_file()
    results.extend(_run_with_progress(tasks, n_jobs))
    if prof is not None:
        prof.files = [r.profile for r in results if r.profile is not None]

    findings: list[Finding] = []
    fail_rank: dict[str, str] = {}
    for res in results:
        if res.unreadable or res.error:
            msg = f"{res.path}: cannot read: {res.unreadable}" if res.unreadable else f"{res.path}: {res.error}"
            _echo(f"tmemlint: {msg}", err=True)
            notifications.append(msg)
            status = 2
        findings.extend(res.findings)
        fail_rank[res.path] = (res.options.fail_on if res.options else None) or "error"
    findings, sources = present(findings, results)

    if o.write_baseline is not None:
        from tmemlint.baseline import BaselineError
        from tmemlint.baseline import write_baseline as write

        try:
            n = write(findings, o.write_baseline)
        except BaselineError as e:
            fail(str(e))
        _echo(f"tmemlint: wrote {n} finding{'s' if n != 1 else ''} to {o.write_baseline}", err=True)
        return status
    hidden = 0
    if o.baseline is not None:
        from tmemlint.baseline import BaselineError, filter_baseline, read_baseline

        try:
            keys = read_baseline(o.baseline)
        except BaselineError as e:
            fail(str(e))
        kept = filter_baseline(findings, keys, o.baseline)
        hidden = len(findings) - len(kept)
        findings = kept

    witness = o.show_witness
    if witness is None:
        witness = o.output_file is None and sys.stdout.isatty()
    if prof is not None:
        prof.push("output")
    text = _render(findings, sources, o.output_format, o.show_statistics, notifications, hidden,
                   color=o.output_file is None and use_color(), witness=witness)
    if o.output_file is not None:
        try:
            with open(o.output_file, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            fail(f"{o.output_file}: cannot write: {e.strerror or e}")
    else:
        _stdout(text)
    if not o.quiet and results and o.output_format in (OutputFormat.text, OutputFormat.concise, OutputFormat.github):
        _stdout("", flush=True)
        _echo(summary(findings, hidden, status == 2), err=True)
    if prof is not None:
        prof.pop()
    if status == 0 and not o.exit_zero:
        for f in findings:
            level = fail_rank.get(f.origin or f.path, "error")
            if level != "never" and f.severity.rank >= Severity(level).rank:
                status = 1
                break
    return status


#: Options ``parse_simple`` reads: flag → keyword of ``run_check``; the ones with a value take the next argument
#: or ``=VALUE``.  Any other argument that starts with ``-`` (stdin, ``--``, short flags run together, every other
#: option) leaves the command line to typer.
_FLAGS = {"-q": "quiet", "--quiet": "quiet", "--exit-zero": "exit_zero", "--isolated": "isolated",
          "--profile": "profile"}
_VALUED = {"--output-format": "output_format", "--format": "output_format", "-j": "jobs", "--jobs": "jobs",
           "--profile-json": "profile_json"}


def parse_simple(args: Sequence[str]) -> dict | None:
    """The keywords of ``run_check`` for a command line of files and the options in ``_FLAGS`` and ``_VALUED``
    (``check`` first or not; options anywhere, the last one given wins, as click reads them), or None for any
    other command line, which typer reads: no file, a value that typer would reject (a format it does not know, a
    ``--jobs`` that is not a decimal number), anything else."""
    rest = list(args)
    if rest and rest[0] == "check":
        rest = rest[1:]
    kw: dict = {}
    paths: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        i += 1
        if not a.startswith("-"):
            paths.append(a)
            continue
        if a in _FLAGS:
            kw[_FLAGS[a]] = True
            continue
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")  # click reads -j=2 as "=2"
        if name not in _VALUED:
            return None
        if not eq:
            if i >= len(rest):
                return None
            value = rest[i]
            i += 1
        if _VALUED[name] == "profile_json":
            kw["profile_json"] = value
        elif _VALUED[name] == "jobs":
            if not (value.isascii() and value.isdigit()):
                return None
            kw["jobs"] = int(value)
        else:
            if value not in OutputFormat.__members__:
                return None
            kw["output_format"] = OutputFormat(value)
    if not paths or paths[0] in ("plan", "rules", "rule", "server"):
        return None
    kw["paths"] = paths
    return kw
