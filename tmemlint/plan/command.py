"""The ``tmemlint plan FILE`` subcommand (registered on the CLI app by ``tmemlint.cli``).

Exit codes: 0 the plan was printed; 2 the file cannot be read or parsed (the TM900 message, as ``check`` prints
it), ``--kernel`` names no TMEM kernel, or the svg/html format lacks its optional dependency.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer


class PlanFormat(str, Enum):
    """Output formats of ``tmemlint plan``."""

    text = "text"
    json = "json"
    svg = "svg"
    html = "html"


def _fail(message: str) -> None:
    typer.echo(f"tmemlint: {message}", err=True)
    raise typer.Exit(2)


def plan_command(
    file: str = typer.Argument(..., help="A PTX file."),
    kernel: Optional[str] = typer.Option(None, "--kernel", help="Only this kernel (function name)."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="Output format."),
    ctas_per_sm: Optional[int] = typer.Option(None, "--ctas-per-sm", min=1,
                                              help="CTAs resident per SM when the kernel has no .minnctapersm."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
):
    """Print the TMEM plan of a kernel: regions, column budget, peak, reuse edges, readback, timeline."""
    from tmemlint.frontend.parser import PTXSyntaxError, decode, parse_text
    from tmemlint.plan.model import PlanError, build_plan
    from tmemlint.plan.render_text import render_text

    try:
        if Path(file).suffix in (".cu", ".cuh", ".h", ".hpp"):
            _fail(f"{file}: plan reads PTX; compile the CUDA source first (nvcc -arch=sm_100a -ptx -lineinfo)")
        data = Path(file).read_bytes()
    except IsADirectoryError:
        _fail(f"{file}: is a directory")
    except OSError as e:
        _fail(f"{file}: cannot read: {e.strerror or e}")
    try:
        text = decode(data)
        module = parse_text(text, file)
    except PTXSyntaxError as e:
        _fail(f"{file}:{e.line}:{e.column}: TM900 [error] {e.message} (syntax-error)")
    if module.version is None:
        _fail(f"{file}:1:1: TM900 [error] not a PTX module: no .version directive (syntax-error)")
    try:
        plan = build_plan(module, file, kernel, ctas_per_sm)
    except PlanError as e:
        _fail(str(e))
    except RecursionError:
        _fail(f"{file}: too deeply nested to plan")
    if output_format is PlanFormat.json:
        out = json.dumps(plan, indent=1) + "\n"
    elif output_format is PlanFormat.text:
        out = render_text(plan)
    else:
        from tmemlint.plan.render_svg import MissingDependency, render_html, render_svg

        try:
            if output_format is PlanFormat.svg:
                if not plan["kernels"]:
                    _fail(f"{file}: no kernel uses Tensor Memory: nothing to draw")
                out = render_svg(plan)
            else:
                out = render_html(plan, render_text(plan))
        except MissingDependency as e:
            _fail(str(e))
    if output:
        try:
            Path(output).write_text(out, encoding="utf-8")
        except OSError as e:
            _fail(f"{output}: cannot write: {e.strerror or e}")
    else:
        sys.stdout.write(out)
    raise typer.Exit(0)
