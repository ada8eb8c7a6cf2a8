"""tmemlint: a static checker for NVIDIA Blackwell Tensor Memory (TMEM) use in PTX and CUDA sources.

The Python API (``tmemlint.api``, imported on first use so that ``import tmemlint`` stays instant)::

    findings = tmemlint.check(ptx_text, name="k.ptx", config={"select": ["TM1"]})
    plan = tmemlint.plan(ptx_text)
"""

from __future__ import annotations

import os as _os
import sys as _sys
from importlib.machinery import EXTENSION_SUFFIXES as _EXTENSION_SUFFIXES
from importlib.machinery import PathFinder as _PathFinder

from tmemlint.version import __version__

# ``typing`` and ``importlib.util`` are not imported here: ``--version`` and ``rules`` would pay for them (about
# 4 ms of CPU, docs/performance.md); the finder below needs ``importlib.util`` only with TMEMLINT_PURE set.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec as _ModuleSpec
    from types import ModuleType as _ModuleType
    from typing import Sequence as _Sequence
del TYPE_CHECKING


class _PureFinder:
    """``TMEMLINT_PURE=1``: a module that the wheel's build compiled with mypyc (``hatch_build.py``) is an extension
    module beside its ``.py``, and Python's own finder prefers the extension; this finder, first on
    ``sys.meta_path``, hands out the ``.py`` instead, so the same installation runs as plain Python
    (docs/performance.md).  Modules with no extension beside them are left to the usual finders."""

    @staticmethod
    def find_spec(fullname: str, path: _Sequence[str] | None = None,
                  target: _ModuleType | None = None) -> _ModuleSpec | None:
        if not fullname.startswith("tmemlint."):
            return None
        spec = _PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or not spec.origin.endswith(tuple(_EXTENSION_SUFFIXES)):
            return None
        source = _os.path.join(_os.path.dirname(spec.origin), fullname.rpartition(".")[2] + ".py")
        from importlib.util import spec_from_file_location

        return spec_from_file_location(fullname, source) if _os.path.isfile(source) else None


if _os.environ.get("TMEMLINT_PURE", "") not in ("", "0") and _PureFinder not in _sys.meta_path:
    _sys.meta_path.insert(0, _PureFinder)

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
