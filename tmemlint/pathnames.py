"""How paths are shown: relative to the current folder, without ``./`` (as ruff and clang-tidy print them)."""

from __future__ import annotations

import os


def display_path(path: str) -> str:
    """How ``path`` is shown: relative to the current folder when it lies under it, else absolute; normalised
    (``./a//b.ptx`` → ``a/b.ptx``).  ``-`` and names in angle brackets (``<stdin>``) are kept."""
    if path == "-" or path.startswith("<"):
        return path
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.getcwd())
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return full
    return rel
