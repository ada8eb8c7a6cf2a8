"""The Python API, for compilers, JITs and notebooks: lint PTX (or CUDA source) text and get the TMEM plan without
files or a command line.  Stable from 0.3: the names in ``__all__`` keep their meaning and signatures (new
keyword arguments may be added, with defaults).

    import tmemlint

    findings = tmemlint.check(ptx_text, name="matmul_kernel.ptx")        # list[tmemlint.Finding], sorted
    findings = tmemlint.check(ptx_text, config={"select": ["TM1"], "severity": {"TM301": "error"}})
    errors = [f for f in findings if f.severity is tmemlint.Severity.ERROR]
    print(*findings, sep="\\n")                                          # path:line:col: CODE [severity] ...
    plan = tmemlint.plan(ptx_text, kernel="matmul_kernel")               # the plan model (docs/plan-schema.md)

Configuration is an argument, never read from files unless asked: ``config`` is None (the rules' defaults), a
mapping with the keys of ``[tool.tmemlint]`` (``select``, ``ignore``, ``severity``, ``per-file-ignores``, ...), or
the path of a ``pyproject.toml`` / ``tmemlint.toml``.  ``select`` / ``ignore`` / ``extend_select`` apply on top,
as on the command line.  A bad configuration raises ``ConfigError``; bad PTX never raises (it is a TM900
finding); a plan of text that cannot be planned raises ``PlanError``.  Both read the text as ``tmemlint
check`` reads a file of that name (``tmemlint.pipeline``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from tmemlint.config import Config, ConfigError, Overrides, Settings, parse_config, split_selectors
from tmemlint.findings import Finding, Related, Severity
from tmemlint.options import Options
from tmemlint.plan import PlanError, plan_text

__all__ = ["check", "plan", "options", "Finding", "Related", "Severity", "Options", "ConfigError", "PlanError"]


def options(config: Mapping[str, Any] | str | os.PathLike | None = None, *, name: str = "kernel.ptx",
            select: Iterable[str] | None = None, ignore: Iterable[str] = (), extend_select: Iterable[str] = (),
            defines: Mapping[str, str] | None = None) -> Options:
    """The ``Options`` of a file called ``name`` under ``config`` and the selection arguments (see the module
    docstring); ``defines`` decide the ``#if`` of CUDA sources (``-D``).  Raises ConfigError."""
    overrides = Overrides(select=split_selectors(select) if select is not None else None,
                          extend_select=split_selectors(extend_select), ignore=split_selectors(ignore))
    if config is None or isinstance(config, Mapping):
        settings = Settings(isolated=config is None, overrides=overrides)
        if isinstance(config, Mapping):
            source = Path("<config>")  # globs relative to the current folder
            settings.use(parse_config(dict(config), source) if config else Config(source, source.parent))
    else:
        settings = Settings(config, overrides=overrides)
    opts = settings.options_for(os.path.abspath(name))
    opts.defines.update(defines or {})
    return opts


def check(source: str | bytes, name: str = "kernel.ptx", *, config: Mapping[str, Any] | str | os.PathLike | None = None,
          select: Iterable[str] | None = None, ignore: Iterable[str] = (), extend_select: Iterable[str] = (),
          defines: Mapping[str, str] | None = None) -> list[Finding]:
    """The findings of one PTX text (or CUDA source, when ``name`` ends in ``.cu``/``.cuh``), sorted by place;
    ``name`` is how the text is reported (and which ``per-file-ignores`` apply).  Suppression comments in the text
    apply.  Never raises for bad input; raises ConfigError for a bad configuration."""
    from tmemlint import pipeline

    opts = options(config, name=name, select=select, ignore=ignore, extend_select=extend_select, defines=defines)
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    unit = pipeline.load(data, opts, name=name)
    if unit.refusal is not None:
        raise ValueError(f"{name}: {unit.refusal}")
    return pipeline.run(unit)


def plan(source: str | bytes, name: str = "kernel.ptx", *, kernel: str | None = None,
         ctas_per_sm: int | None = None) -> dict:
    """The TMEM plan of the kernels of one PTX text or CUDA source (by ``name``, as ``check`` reads it;
    ``kernel``: only that one, by its PTX name): the versioned JSON model of ``tmemlint plan --format json``
    (regions, column budget, peak, reuse edges, readback, timeline; ``docs/plan-schema.md``), with the findings
    ``check`` gives under the rules' defaults.  Raises PlanError."""
    return plan_text(source, name, kernel=kernel, ctas_per_sm=ctas_per_sm)
