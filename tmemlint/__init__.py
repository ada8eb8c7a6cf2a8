"""tmemlint: a static checker for NVIDIA Blackwell Tensor Memory (TMEM) use in PTX and CUDA sources.

The Python API (``tmemlint.api``, imported on first use so that ``import tmemlint`` stays instant)::

    findings = tmemlint.check(ptx_text, name="k.ptx", config={"select": ["TM1"]})
    plan = tmemlint.plan(ptx_text)
"""

from tmemlint.version import __version__

_API = ("check", "options", "Finding", "Related", "Severity", "Options", "ConfigError", "PlanError")


def __getattr__(name: str):
    if name == "plan":  # the subpackage, callable as tmemlint.api.plan
        import importlib

        return importlib.import_module("tmemlint.plan")
    if name in _API:
        from tmemlint import api

        return getattr(api, name)
    raise AttributeError(f"module 'tmemlint' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API) + ["plan"])
