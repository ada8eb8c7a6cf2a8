"""The ``tmemlint plan FILE`` subcommand (registered on the CLI app by ``tmemlint.cli``).

``plan`` reads the same configuration and options as ``check`` (``pyproject.toml``/``tmemlint.toml``, ``--config``,
``--isolated``, ``--ctas-per-sm``, ``-D``, ``-I``, ``-p``) and runs the same rules, whose findings the plan shows.
CUDA sources (``.cu``/``.cuh``) are planned in source mode (the asm statements lowered without a compiler; lines
are source lines) or, with ``--compile``, from the PTX nvcc makes (PTX lines; the ``.loc`` source lines in text).

Exit codes: 0 the plan was printed; 2 the file cannot be read or parsed (the TM900 message, as ``check`` prints
it), a configuration error, ``--kernel`` names no TMEM kernel, or the svg/html format lacks its optional
dependency.
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer


class PlanFormat(str, Enum):
    """Output formats of ``tmemlint plan``."""

    text = "text"
    json = "json"
    svg = "svg"
    html = "html"
    cuda = "cuda"


def _fail(message: str) -> None:
    typer.echo(f"tmemlint: {message}", err=True)
    raise typer.Exit(2)


def _options(file: str, config: str | None, isolated: bool, ctas_per_sm: int | None, define, include_dir,
             build_path: str | None, compile_: bool, nvcc_arg):
    """The ``Options`` ``check`` would use for ``file`` with these command-line settings (``cli._source_options``
    does the same for check)."""
    from tmemlint.compdb import flags_for
    from tmemlint.config import Overrides, Settings

    settings = Settings(config, isolated, Overrides(ctas_per_sm=ctas_per_sm))
    opts = settings.options_for(os.path.abspath(file) if file != "-" else os.path.join(os.getcwd(), "-"))
    db = flags_for(build_path, file) if build_path else None
    for d in (db.defines if db else []) + list(define or ()):
        name, eq, value = d.partition("=")
        if name.strip():
            opts.defines[name.strip()] = value if eq else "1"
    opts.compile = compile_
    opts.nvcc_args = (tuple(db.nvcc_args) if db else ()) + tuple(nvcc_arg or ())
    opts.include_dirs = tuple(include_dir or ()) + (tuple(db.include_dirs) if db else ()) + opts.include_dirs
    return opts


def _unit(file: str, data: bytes, opts):
    """The file loaded as ``check`` loads it (``pipeline.load``: PTX, a CUDA source in source mode, or nvcc's PTX
    of it with ``--compile``), every function parsed; what source mode could not read is said on standard error,
    and the plan goes on without it."""
    from tmemlint import pipeline

    unit = pipeline.load(data, opts, name=file, whole=True)
    for d in getattr(unit.cuda, "diagnostics", ()):
        typer.echo(f"{file}:{d.span.line}:{d.span.column}: {d.code} {d.message} (the plan omits it)", err=True)
    if unit.cuda is None and unit.module is not None:  # a function that does not parse is left out, as check does
        for f in unit.diagnostics:
            typer.echo(f"{file}:{f.line}:{f.column}: {f.code} [{f.severity.value}] {f.message} ({f.name}; the plan "
                       f"omits its function)", err=True)
    return unit


def plan_command(
    file: Optional[str] = typer.Argument(None, help="A PTX file or a CUDA source (.cu, .cuh)."),
    kernel: Optional[str] = typer.Option(None, "--kernel", help="Only this kernel: its PTX name, its demangled "
                                                                "name, or a part of either."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="Output format (cuda: with "
                                                                               "--design, a header)."),
    ctas_per_sm: Optional[int] = typer.Option(None, "--ctas-per-sm", min=1,
                                              help="CTAs resident per SM (as check: over .minnctapersm)."),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    config: Optional[str] = typer.Option(None, "--config", help="Use this configuration file."),
    isolated: bool = typer.Option(False, "--isolated", help="Ignore all configuration files."),
    define: Optional[List[str]] = typer.Option(None, "--define", "-D", help="NAME[=VALUE] for the #if of CUDA "
                                                                             "sources."),
    include_dir: Optional[List[str]] = typer.Option(None, "--include-dir", "-I", help="Folder for quoted #include."),
    build_path: Optional[str] = typer.Option(None, "--build-path", "-p", help="Folder with compile_commands.json."),
    compile_: bool = typer.Option(False, "--compile", help="Plan CUDA sources from nvcc's PTX."),
    nvcc_arg: Optional[List[str]] = typer.Option(None, "--nvcc-arg", help="Extra nvcc argument for --compile."),
    design: Optional[str] = typer.Option(None, "--design", help="A design (TOML) of the TMEM objects: plan it; "
                                                                "with FILE, compare the kernel with it."),
):
    """Print the TMEM plan of a kernel: regions, column budget, peak, reuse edges, readback, timeline."""
    from tmemlint.config import ConfigError
    from tmemlint.plan.model import PlanError, plan_unit
    from tmemlint.plan.render_text import render_text

    if file is None and design is None:
        _fail("plan needs a FILE (PTX or CUDA source) or --design DESIGN.toml")
    if output_format is PlanFormat.cuda and (design is None or file is not None):
        _fail("--format cuda writes the header of a design: plan --design DESIGN.toml --format cuda (no FILE)")
    dplan = None
    if design is not None:
        from tmemlint.plan.design import DesignError, load_design, plan_design, render_cuda, render_design

        try:
            dplan = plan_design(load_design(design), ctas_per_sm)
        except DesignError as e:
            _fail(f"{design}: {e}")
        if file is None:
            if output_format is PlanFormat.json:
                _emit(json.dumps(dplan, indent=1) + "\n", output)
            elif output_format is PlanFormat.cuda:
                _emit(render_cuda(dplan), output)
            else:
                _emit(render_design(dplan), output)
            raise typer.Exit(0)
    try:
        data = Path(file).read_bytes()
    except IsADirectoryError:
        _fail(f"{file}: is a directory")
    except OSError as e:
        _fail(f"{file}: cannot read: {e.strerror or e}")
    try:
        opts = _options(file, config, isolated, ctas_per_sm, define, include_dir, build_path, compile_, nvcc_arg)
    except ConfigError as e:
        _fail(str(e))
    try:
        plan = plan_unit(_unit(file, data, opts), kernel, opts.ctas_per_sm)
    except PlanError as e:
        _fail(str(e))
    if dplan is not None:
        from tmemlint.plan.design import compare

        plan["design"] = dplan
        plan["design_comparison"] = compare(dplan, plan)
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
    _emit(out, output)
    raise typer.Exit(0)


def _emit(out: str, output: str | None) -> None:
    if output:
        try:
            Path(output).write_text(out, encoding="utf-8")
        except OSError as e:
            _fail(f"{output}: cannot write: {e.strerror or e}")
    else:
        sys.stdout.write(out)
