"""Where tmemlint keeps what it caches: the result cache of the console entry point (``tmemlint.entry``) and the
parser's LALR tables (``tmemlint.frontend.parser``, in ``parser/``).  A leaf module: it imports nothing of
tmemlint, so the front end can ask for the folder without importing the command line."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$TMEMLINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/tmemlint``, else ``~/.cache/tmemlint`` (it may not exist
    yet)."""
    env = os.environ.get("TMEMLINT_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tmemlint"
