"""``tmemlint plan``: the TMEM resource report of a kernel (regions, column budget, liveness, reuse, readback),
built from the analyses as a versioned JSON model (``model``) and rendered as text (``render_text``) or as a
picture (``render_svg``).

The package is callable: ``tmemlint.plan(ptx_text)`` is ``plan_text`` (the API's ``tmemlint.api.plan``)."""

from __future__ import annotations

import sys as _sys
import types as _types


class PlanError(ValueError):
    """The plan cannot be built: the text is not PTX (the TM900 message), ``kernel`` (``--kernel``) names no kernel
    of the file, or the file has no kernel that uses Tensor Memory (``tmemlint.PlanError`` of the API)."""


def plan_text(source: str | bytes, name: str = "kernel.ptx", *, kernel: str | None = None,
              ctas_per_sm: int | None = None) -> dict:
    """The TMEM plan of the kernels of one PTX text or CUDA source (by ``name``, read as ``tmemlint check`` reads a
    file of that name; ``kernel``: only that one, by its PTX name): the versioned JSON model of ``tmemlint plan
    --format json`` (``docs/plan-schema.md``), with the findings ``check`` gives under the rules' defaults.
    Raises PlanError: text that is not PTX (the TM900 message), or no kernel of that name
    that uses Tensor Memory."""
    from tmemlint import pipeline
    from tmemlint.options import Options
    from tmemlint.plan.model import plan_unit

    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    return plan_unit(pipeline.load(data, Options(ctas_per_sm=ctas_per_sm), name=name, whole=True), kernel,
                     ctas_per_sm)


class _CallableModule(_types.ModuleType):
    """``tmemlint.plan`` is this package and, called, ``plan_text``: ``tmemlint.plan(ptx)``."""

    def __call__(self, *args, **kwargs):
        return plan_text(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
