"""Shared test helpers: where the shared inputs live, and the inline-expectation reader."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = ROOT / "fixtures"
EXAMPLES = ROOT / "examples"

_EXPECT = re.compile(r"//\s*expect:\s*([A-Z0-9, ]+)")
#: ``// expect-ptx: CODE`` counts in ``.ptx`` files only: the expectation of a multi-line asm statement, whose PTX
#: line carries the end of its string while the finding in the ``.cu`` is where the instruction's text starts (a
#: ``// expect:`` C++ comment there, which nvcc does not copy).
_EXPECT_PTX = re.compile(r"//\s*expect-ptx:\s*([A-Z0-9, ]+)")
_EXPECT_FILE = re.compile(r"//\s*expect-file:\s*([A-Z0-9, ]+)")

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not present")
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not installed")


def expectations(path: Path) -> tuple[set[tuple[int, str]], set[str]]:
    """``({(line, code)}, {file-level codes})`` from ``// expect: CODE[, CODE]`` comments in ``path``."""
    lines: set[tuple[int, str]] = set()
    file_codes: set[str] = set()
    for n, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = _EXPECT.search(text)
        if m:
            lines.update((n, c.strip()) for c in m.group(1).split(",") if c.strip())
        m = _EXPECT_PTX.search(text) if path.suffix == ".ptx" else None
        if m:
            lines.update((n, c.strip()) for c in m.group(1).split(",") if c.strip())
        m = _EXPECT_FILE.search(text)
        if m:
            file_codes.update(c.strip() for c in m.group(1).split(",") if c.strip())
    return lines, file_codes
