"""The suite both ways (issue 29): where the installed tmemlint's analysis core is compiled with mypyc
(``hatch_build.py``; ``pip install .`` with a C compiler), the suite runs it compiled, and these tests run the fixture
agreement check again as plain Python (``TMEMLINT_PURE=1``) in a subprocess.  Where it is pure (an editable
install, no compiler, ``TMEMLINT_PURE=1``) they skip, saying so."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from tmemlint.analysis import paths

ROOT = Path(__file__).resolve().parents[1]
COMPILED = paths.__file__ is not None and paths.__file__.endswith(tuple(EXTENSION_SUFFIXES))
needs_compiled = pytest.mark.skipif(
    not COMPILED, reason="the installed tmemlint is pure Python (editable install, no C compiler or TMEMLINT_PURE=1)")
PURE = {**os.environ, "TMEMLINT_PURE": "1"}


@needs_compiled
def test_tmemlint_pure_loads_the_py_modules():
    """``TMEMLINT_PURE=1``: the compiled modules load from their ``.py`` (the finder in tmemlint/__init__.py)."""
    run = subprocess.run([sys.executable, "-P", "-c", "import tmemlint.analysis.paths as p, tmemlint.analysis.values"
                          " as v; print(p.__file__); print(v.__file__)"],
                         env=PURE, cwd=ROOT, capture_output=True, text=True, check=True)
    assert [Path(line).name for line in run.stdout.split()] == ["paths.py", "values.py"]


@needs_compiled
def test_fixtures_pass_pure_too():
    """tests/test_fixtures.py (every fixture's expectations) as plain Python; this run checks them compiled.
    ``-P``: the installed package, not the checkout on ``sys.path``."""
    run = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(ROOT / "tests" / "test_fixtures.py")],
                         env=PURE, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]


BUILTINS = {"tuple", "frozenset", "set", "dict", "list", "int", "str", "bytes", "float"}


def _mypyc_modules() -> list[Path]:
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [ROOT / m for m in conf["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]["mypyc-modules"]]


def test_compiled_modules_subclass_no_builtin_natively():
    """mypyc rejects a native class that subclasses a built-in type ("Inheriting from most builtin types is
    unimplemented"), and the wheel build then falls back to pure Python with only a warning (``hatch_build.py``):
    such a class in a compiled module must be ``@mypyc_attr(native_class=False)``.  Checked here without a build."""
    import ast

    bad = []
    for path in _mypyc_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases}
            if not any(isinstance(b, ast.Name) and b.id in BUILTINS for b in bases):
                continue
            if not any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "mypyc_attr"
                       and any(k.arg == "native_class" and isinstance(k.value, ast.Constant) and k.value.value is False
                               for k in d.keywords) for d in node.decorator_list):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}")
    assert bad == []
