"""Which source files are library headers, for "user code first" (issue 26): a finding whose place falls in a
library header moves to the user's frame of its inline chain, and the header place becomes a related one
(``tmemlint.lineinfo.relocate`` for ``-lineinfo`` PTX, ``tmemlint.compile.map_findings`` for compile mode,
``tmemlint.frontend.cuda.with_inline_context`` for source mode take the predicate this module builds).

A path is a library header when

* it lies in a folder of the toolkit or of NVIDIA's template libraries (``DEFAULT_LIBRARY_PATTERN``): a path
  component ``cutlass/``, ``cute/``, ``cccl/``, ``cub/``, ``thrust/``, ``libcudacxx/`` or ``cuda/std/``, or a CUDA
  toolkit include folder (``/usr/local/cuda/include/``, ``cuda-13.0/include/``, ``cuda-13.0/targets/…/include/``);
* it lies under a system include folder of the file's flags (``-isystem DIR`` in ``--nvcc-arg`` or in the
  ``compile_commands.json`` entry of ``-p``), or
* it matches a ``library-paths`` glob of the configuration (relative to the configuration file, as ``exclude``).

The checked file itself is never a library header (a CUTLASS example checked inside the CUTLASS tree is user
code), and neither is the outermost frame of an inline chain (the kernel's own file).
"""

from __future__ import annotations

import os
import re
from typing import Callable

from tmemlint.config import glob_match
from tmemlint.options import Options

#: Path components of NVIDIA's libraries and the CUDA toolkit's include folders (``/`` separators).
DEFAULT_LIBRARY_PATTERN = re.compile(
    r"(?:^|/)(?:cutlass|cute|cccl|cub|thrust|libcudacxx)/"
    r"|(?:^|/)cuda/std/"
    r"|(?:^|/)cuda(?:-[0-9][0-9.]*)?/(?:targets/[^/]+/)?include/")


def system_dirs(options: Options) -> tuple[str, ...]:
    """The ``-isystem`` folders of ``options`` (absolute): from ``library_dirs`` (``-p``) and the ``-isystem DIR`` /
    ``-isystemDIR`` arguments of ``nvcc_args``."""
    out = list(options.library_dirs)
    args = list(options.nvcc_args)
    for i, a in enumerate(args):
        if a == "-isystem" and i + 1 < len(args):
            out.append(args[i + 1])
        elif a.startswith("-isystem") and len(a) > len("-isystem"):
            out.append(a[len("-isystem"):].lstrip("="))
    return tuple(os.path.abspath(d) for d in out)


def library_predicate(options: Options | None, checked: str | None = None) -> Callable[[str], bool]:
    """``is_library(path)`` for the file ``checked`` with ``options`` (see the module docstring); ``path`` is a
    display path (relative to the current folder) or an absolute one."""
    dirs = system_dirs(options) if options is not None else ()
    globs = tuple(options.library_paths) if options is not None else ()
    own = os.path.realpath(checked) if checked else None
    memo: dict[str, bool] = {}

    def is_library(path: str) -> bool:
        hit = memo.get(path)
        if hit is None:
            hit = memo[path] = _classify(path)
        return hit

    def _classify(path: str) -> bool:
        if not path:
            return False
        full = os.path.abspath(path)
        if own is not None and os.path.realpath(full) == own:
            return False
        rel = os.path.relpath(full)
        # below the current folder only the components under it count (a project that lives in a folder called
        # cute/ is not a library)
        shown = full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel
        if DEFAULT_LIBRARY_PATTERN.search(shown.replace(os.sep, "/")):
            return True
        if any(full == d or full.startswith(d.rstrip(os.sep) + os.sep) for d in dirs):
            return True
        return any(glob_match(g, full, root) for root, g in globs)

    return is_library
