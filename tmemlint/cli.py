"""Command line: ``tmemlint [check] PATHS``, ``tmemlint rules``, ``tmemlint rule CODE``.

Exit codes (as ruff, shellcheck): 0 nothing at or above ``--fail-on``; 1 findings at or above it; 2 usage error or
an input that could not be read.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from tmemlint import __version__
from tmemlint.checks.registry import RULES, load_all, resolve_prefix
from tmemlint.engine import Options, expand_paths, lint_file
from tmemlint.findings import Severity
from tmemlint.report.json_format import format_json
from tmemlint.report.text import format_text

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Static checker for NVIDIA Blackwell Tensor Memory (tcgen05) in PTX.")

SUBCOMMANDS = {"check", "rules", "rule", "--help", "-h", "--version"}


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _selection(select: list[str] | None, ignore: list[str] | None, extend: list[str] | None) -> set[str] | None:
    load_all()
    if not select and not ignore and not extend:
        return None
    codes = set()
    if select:
        for s in _split(select):
            got = resolve_prefix(s)
            if not got:
                raise typer.BadParameter(f"unknown rule code or name {s!r}", param_hint="--select")
            codes.update(got)
    else:
        codes = {c for c, r in RULES.items() if r.enabled}
    for s in _split(extend or []):
        got = resolve_prefix(s)
        if not got:
            raise typer.BadParameter(f"unknown rule code or name {s!r}", param_hint="--extend-select")
        codes.update(got)
    for s in _split(ignore or []):
        got = resolve_prefix(s)
        if not got:
            raise typer.BadParameter(f"unknown rule code or name {s!r}", param_hint="--ignore")
        codes.difference_update(got)
    return codes


def _split(values: list[str]) -> list[str]:
    out = []
    for v in values:
        out.extend(x for x in v.split(",") if x.strip())
    return out


@app.command()
def check(
    paths: List[str] = typer.Argument(..., help="PTX files, or folders searched for *.ptx."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="Output format."),
    select: Optional[List[str]] = typer.Option(None, help="Only these rules (codes, names or prefixes; comma list)."),
    ignore: Optional[List[str]] = typer.Option(None, help="Skip these rules."),
    extend_select: Optional[List[str]] = typer.Option(None, help="Enable these rules on top of the defaults."),
    fail_on: FailOn = typer.Option(FailOn.error, help="Lowest severity that makes the exit code 1."),
):
    """Check PTX files for TMEM faults."""
    options = Options(_selection(select, ignore, extend_select))
    files, missing = expand_paths(paths)
    status = 0
    findings = []
    for m in missing:
        typer.echo(f"tmemlint: {m}: no such file or directory", err=True)
        status = 2
    for f in files:
        res = lint_file(f, options=options)
        if res.unreadable:
            typer.echo(f"tmemlint: {f}: cannot read: {res.unreadable}", err=True)
            status = 2
        findings.extend(res.findings)
    findings.sort(key=lambda x: x.sort_key())
    if output_format is OutputFormat.json:
        sys.stdout.write(format_json(findings))
    else:
        sys.stdout.write(format_text(findings))
        if findings:
            n_err = sum(1 for f in findings if f.severity is Severity.ERROR)
            typer.echo(f"{len(findings)} finding{'s' if len(findings) != 1 else ''} "
                       f"({n_err} error{'s' if n_err != 1 else ''}) in {len(files)} file{'s' if len(files) != 1 else ''}",
                       err=True)
    if status == 0 and fail_on is not FailOn.never:
        rank = Severity(fail_on.value).rank
        if any(f.severity.rank >= rank for f in findings):
            status = 1
    raise typer.Exit(status)


@app.command("rules")
def rules_cmd():
    """List every rule: code, name, default severity, and summary."""
    load_all()
    for code in sorted(RULES):
        r = RULES[code]
        sev = r.severity.value + ("" if r.enabled else " (off)")
        typer.echo(f"{r.code}  {r.name:<34} {sev:<14} {r.summary}")


@app.command("rule")
def rule_cmd(code: str = typer.Argument(..., help="Rule code or name, e.g. TM101 or tmem-leak.")):
    """Print a rule's documentation page."""
    from tmemlint.docs import rule_doc

    got = resolve_prefix(code)
    if len(got) != 1:
        typer.echo(f"tmemlint: unknown rule {code!r}", err=True)
        raise typer.Exit(2)
    text = rule_doc(got[0])
    if text is None:
        r = RULES[got[0]]
        text = f"{r.code} {r.name} ({r.severity.value})\n\n{r.summary}\n"
    typer.echo(text)


def _version_callback(value: bool):
    if value:
        typer.echo(f"tmemlint {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                               help="Print the version and exit.")):
    """tmemlint: static checks for Blackwell Tensor Memory (tcgen05) in PTX."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point: ``tmemlint PATHS`` means ``tmemlint check PATHS``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] not in SUBCOMMANDS and args[0] not in _command_names():
        args.insert(0, "check")
    app(args=args, prog_name="tmemlint")


def _command_names() -> set[str]:
    names = set()
    for c in app.registered_commands:
        names.add(c.name or c.callback.__name__)
    return names


if __name__ == "__main__":  # pragma: no cover
    main()
