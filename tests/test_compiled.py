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
