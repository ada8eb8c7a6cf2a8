"""The analyses are typed (issue 24): every file in ``CLEAN`` passes ``mypy --strict`` on its own, its imports
followed silently (errors in the modules it imports are theirs).  The list only grows: a file that regresses is
named in the failure."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# files of tmemlint/analysis/ that are `mypy --strict` clean; add a file when it is, never remove one
CLEAN = [
    "digraph.py",
    "cfg.py",
    "paths.py",
    "flow.py",
    "context.py",
    "tmem.py",
    "publication.py",
    "witness.py",
    "cluster.py",
    "lifecycle.py",
    "regions.py",
    "localmem.py",
    "threads.py",
    "idesc.py",
    "sync.py",
    "mbarriers.py",
    "__init__.py",
    "control.py",
    "values.py",
    "calls.py",
    "inline.py",
    "order.py",
]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install -e '.[test]')")
def test_analyses_are_strictly_typed() -> None:
    paths = [f"tmemlint/analysis/{name}" for name in CLEAN]
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
                          "--no-color-output", *paths], cwd=ROOT, capture_output=True, text=True)
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    regressed = sorted({line.split(":", 1)[0] for line in errors})
    assert run.returncode == 0 and not errors, (
        f"mypy --strict regressed in {', '.join(regressed) or '(no file named)'}:\n{run.stdout}{run.stderr}")
