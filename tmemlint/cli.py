"""Command line: ``tmemlint [check] PATHS``, ``tmemlint rules``, ``tmemlint rule CODE``, ``tmemlint server``.

Exit codes (as ruff, shellcheck): 0 nothing at or above ``--fail-on``; 1 findings at or above it; 2 usage error,
a configuration or baseline error, or an input that could not be read.  No input, option or configuration file
produces a traceback: every such error is one ``tmemlint: …`` line on standard error.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import List, Optional

import typer

from tmemlint.version import __version__
from tmemlint.checks.registry import RULES, load_all, resolve_prefix
from tmemlint.checkcmd import (  # noqa: F401 - the check command's helpers, re-exported for their users
    PROGRESS_MIN_FILES, STDIN_DISPLAY, CheckOptions, FailOn, OutputFormat, fail, lint_tasks, present, run_check,
    statistics, summary, use_color)
from tmemlint.checkcmd import check as check_with
from tmemlint.plan.command import plan_command

CONTEXT = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(add_completion=False, no_args_is_help=True, context_settings=CONTEXT,
                  help="Static checker for NVIDIA Blackwell Tensor Memory (tcgen05) in PTX and CUDA sources.")

SUBCOMMANDS = {"check", "plan", "rules", "rule", "server", "--help", "-h", "--version"}


@app.command(context_settings=CONTEXT)
def check(
    paths: Optional[List[str]] = typer.Argument(
        None, help="PTX or CUDA files, folders searched for *.ptx/*.cu/*.cuh, globs ('kernels/**/*.ptx'), or - "
                   "for standard input [default: .]."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--output-format", "--format",
                                               help="Output format."),
    output_file: Optional[str] = typer.Option(None, "--output-file", "-o",
                                              help="Write the findings (and the summary) to this file."),
    select: Optional[List[str]] = typer.Option(None, help="Only these rules (codes, names or prefixes; comma list)."),
    ignore: Optional[List[str]] = typer.Option(None, help="Skip these rules."),
    extend_select: Optional[List[str]] = typer.Option(None, help="Enable these rules on top of the selection."),
    fail_on: Optional[FailOn] = typer.Option(None, help="Lowest severity that makes the exit code 1 "
                                                        "(default: error, or fail-on of the configuration)."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when findings are reported (2 still "
                                                              "means a usage or input error)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print the findings only: no summary line on standard "
                                                            "error."),
    config: Optional[str] = typer.Option(None, "--config", help="Use this configuration file for every file "
                                                                "(pyproject.toml or tmemlint.toml)."),
    isolated: bool = typer.Option(False, "--isolated", help="Ignore all configuration files."),
    show_settings: bool = typer.Option(False, "--show-settings", help="Print the resolved settings of the first "
                                                                      "file to check, and exit."),
    exclude: Optional[List[str]] = typer.Option(None, help="Globs of files/folders to skip in folder searches "
                                                           "(replaces exclude and its defaults: .git, .venv, "
                                                           "node_modules, build, ...)."),
    extend_exclude: Optional[List[str]] = typer.Option(None, help="Globs to skip on top of exclude."),
    force_exclude: Optional[bool] = typer.Option(None, "--force-exclude/--no-force-exclude",
                                                 help="Apply exclusions to files named on the command line too "
                                                      "(for pre-commit)."),
    respect_gitignore: Optional[bool] = typer.Option(None, "--respect-gitignore/--no-respect-gitignore",
                                                     help="Skip what .gitignore and .ignore files ignore in folder "
                                                          "searches [default: respect]."),
    ctas_per_sm: Optional[int] = typer.Option(None, "--ctas-per-sm", help="CTAs resident per SM (column budget)."),
    show_statistics: bool = typer.Option(False, "--statistics", help="Print the number of findings per rule "
                                                                     "instead of the findings."),
    show_witness: Optional[bool] = typer.Option(None, "--show-witness/--no-show-witness",
                                                help="Text format: print the witness of each path-sensitive finding "
                                                     "under it (the steps of each warp class: the access, the branch "
                                                     "decisions, the barrier) [default: when writing to a "
                                                     "terminal]."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Report only findings not in this baseline."),
    write_baseline: Optional[str] = typer.Option(None, "--write-baseline",
                                                 help="Write today's findings to this baseline file and exit 0."),
    stdin_filename: Optional[str] = typer.Option(None, "--stdin-filename",
                                                 help="Name of the file read from standard input (-)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Files checked in parallel (default: all cores)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not answer from (or store in) the result cache "
                                                            "(also: TMEMLINT_NO_CACHE=1)."),
    define: Optional[List[str]] = typer.Option(None, "--define", "-D", help="NAME[=VALUE] for the #if of CUDA "
                                                                             "sources (and nvcc with --compile)."),
    compile_: bool = typer.Option(False, "--compile", help="Lint CUDA sources through nvcc's PTX (-arch=sm_100a "
                                                           "-ptx -lineinfo) instead of reading them directly."),
    nvcc_arg: Optional[List[str]] = typer.Option(None, "--nvcc-arg", help="Extra nvcc argument for --compile "
                                                                          "(repeatable: --nvcc-arg=-I/path)."),
    include_dir: Optional[List[str]] = typer.Option(None, "--include-dir", "-I", help="Folder searched for quoted "
                                                    "#include of CUDA sources (and -I for nvcc with --compile)."),
    build_path: Optional[str] = typer.Option(None, "--build-path", "-p", help="Folder with compile_commands.json "
                                             "(CMake, Bear): each CUDA file's -I, -D and nvcc flags from it."),
    profile: bool = typer.Option(False, "--profile", help="Print the CPU time of each phase (start-up, read, parse, "
                                                          "each analysis, the solver, each rule, output) per file "
                                                          "and in total to standard error, as clang-tidy's "
                                                          "--enable-check-profile (not cached)."),
    profile_json: Optional[str] = typer.Option(None, "--profile-json", help="Write the CPU time of each phase, per "
                                               "file and in total, as JSON to this file (not cached)."),
):
    """Check PTX files and CUDA sources (.cu, .cuh) for TMEM faults."""
    options = dict(locals())  # the parameters, each a field of checkcmd.CheckOptions but paths and no_cache
    del options["paths"], options["no_cache"]  # --no-cache: handled by the console entry point (tmemlint.entry)
    raise typer.Exit(check_with(paths, CheckOptions(**options)))


class RulesFormat(str, Enum):
    """``tmemlint rules --format``: a table for people, or JSON for tools."""

    text = "text"
    json = "json"


@app.command("rules", context_settings=CONTEXT)
def rules_cmd(output_format: RulesFormat = typer.Option(RulesFormat.text, "--output-format", "--format",
                                                        help="Output format.")):
    """List every rule: code, name, default severity, and summary."""
    load_all()
    if output_format is RulesFormat.json:
        from tmemlint.docs import rule_url

        rows = [{"code": r.code, "name": r.name, "severity": r.severity.value, "enabled": r.enabled,
                 "summary": r.summary, "url": rule_url(r.code)} for r in (RULES[c] for c in sorted(RULES))]
        typer.echo(json.dumps(rows, indent=2))
        return
    for code in sorted(RULES):
        r = RULES[code]
        sev = r.severity.value + ("" if r.enabled else " (off)")
        typer.echo(f"{r.code}  {r.name:<34} {sev:<14} {r.summary}")


@app.command("rule", context_settings=CONTEXT)
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


@app.command("server", context_settings=CONTEXT)
def server_cmd():
    """Run the language server (LSP over standard input/output) for editors; needs the server extra."""
    try:
        from tmemlint.server import main as serve
    except ImportError as e:
        fail(f"the language server needs pygls ({e}); install it with: pip install 'tmemlint[server]'")
    serve()


app.command("plan", context_settings=CONTEXT)(plan_command)  # tmemlint plan FILE: the TMEM resource report (tmemlint/plan/)


def _version_callback(value: bool):
    if value:
        typer.echo(f"tmemlint {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True,
                                               help="Print the version and exit.")):
    """tmemlint: static checks for Blackwell Tensor Memory (tcgen05) in PTX and CUDA sources."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point: ``tmemlint PATHS`` means ``tmemlint check PATHS``, and ``tmemlint`` alone ``tmemlint
    check .``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or (args[0] not in SUBCOMMANDS and args[0] not in _command_names()):
        args.insert(0, "check")
    app(args=args, prog_name="tmemlint")


def _command_names() -> set[str]:
    names = set()
    for c in app.registered_commands:
        names.add(c.name or c.callback.__name__)
    return names


if __name__ == "__main__":  # pragma: no cover
    main()
