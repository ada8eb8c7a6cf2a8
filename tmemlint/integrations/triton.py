"""Lint every kernel Triton compiles for ``sm_100a`` / ``sm_103a`` in this process.

One line in the program::

    import tmemlint.integrations.triton; tmemlint.integrations.triton.install()          # Python warnings
    tmemlint.integrations.triton.install(action="error")                                 # raise on errors

or none, from the environment (the ``tmemlint-triton.pth`` file that the package installs reads it when Python
starts, and installs the hook the first time ``triton`` is imported)::

    TMEMLINT_TRITON=warn python train.py          # or: error
    python -m tmemlint.integrations.triton [--error] train.py ARGS     # the same for one script

The hook is Triton's compilation listener (``triton.knobs.compilation.listener``, Triton 3.4 and newer), which
Triton calls after every compilation, JIT or ``triton.compile``, and on a cache hit; an existing listener is
kept and called first.  The PTX Triton wrote to its cache is linted with ``tmemlint.check`` when the target is CUDA
compute capability 10.0 or 10.3 (other targets have no Tensor Memory).  ``action="warn"`` issues one
``TmemWarning`` per finding; ``action="error"`` raises ``TmemError`` (with ``.findings``) when a finding is at
or above ``fail_on``, out of the compilation that made the kernel, and warns about the rest.  Kernels cached with
``TRITON_STORE_BINARY_ONLY=1`` have no PTX and are not linted.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable, Iterable, Mapping

from tmemlint.api import check
from tmemlint.findings import Finding, Severity

ACTIONS = ("warn", "error")
#: CUDA compute capabilities (Triton's ``GPUTarget.arch``) whose PTX uses Tensor Memory: sm_100a and sm_103a.
TMEM_ARCHS = (100, 103)
ENV = "TMEMLINT_TRITON"


class TmemWarning(UserWarning):
    """A tmemlint finding in a kernel Triton compiled (``str``: ``path:line:col: CODE [severity] message``)."""


class TmemError(RuntimeError):
    """Findings at or above ``fail_on`` in a kernel Triton compiled; ``findings`` holds all of its findings."""

    def __init__(self, kernel: str, findings: list[Finding]):
        self.kernel = kernel
        self.findings = findings
        super().__init__(f"tmemlint: {len(findings)} finding(s) in Triton kernel {kernel}:\n"
                         + "\n".join(str(f) for f in findings))


def _get(obj: Any, key: str):
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def check_compiled(metadata: Mapping[str, Any], metadata_group: Mapping[str, str], **check_args) -> list[Finding]:
    """The findings of the PTX of one Triton compilation (the listener's ``metadata`` and ``metadata_group``: the
    cache files by name); empty when the target has no Tensor Memory or no PTX was kept.  ``check_args`` go to
    ``tmemlint.check`` (``config``, ``select``, ``ignore``)."""
    target = metadata.get("target")
    if _get(target, "backend") != "cuda" or _get(target, "arch") not in TMEM_ARCHS:
        return []
    ptx = next((p for k, p in metadata_group.items() if k.endswith(".ptx")), None)
    if ptx is None:
        return []
    try:
        with open(ptx, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return []
    return check(text, name=f"{metadata.get('name') or 'triton_kernel'}.ptx", **check_args)


def install(action: str | None = None, *, fail_on: str = "error", config=None, select: Iterable[str] | None = None,
            ignore: Iterable[str] = ()) -> Callable:
    """Install the hook (see the module docstring; ``action`` None: ``$TMEMLINT_TRITON``, else ``"warn"``).
    Installing again replaces the previous tmemlint hook.  Returns the listener.  Raises ValueError for an unknown
    action or ``fail_on``, ImportError without Triton."""
    from triton import knobs

    action = action or os.environ.get(ENV) or "warn"
    if action not in ACTIONS:
        raise ValueError(f"tmemlint: {ENV} / action must be one of {', '.join(ACTIONS)} (got {action!r})")
    if fail_on not in ("error", "warning", "info"):
        raise ValueError(f"tmemlint: fail_on must be error, warning or info (got {fail_on!r})")
    threshold = Severity(fail_on).rank
    previous = knobs.compilation.listener
    while getattr(previous, "_tmemlint_previous", None) is not None or getattr(previous, "_tmemlint", False):
        previous = getattr(previous, "_tmemlint_previous", None)

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        if previous is not None:
            previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)
        found = check_compiled(metadata, metadata_group, config=config, select=select, ignore=ignore)
        if not found:
            return
        name = metadata.get("name") or "triton_kernel"
        if action == "error" and any(f.severity.rank >= threshold for f in found):
            raise TmemError(name, found)
        for f in found:
            warnings.warn(str(f), TmemWarning, stacklevel=2)

    listener._tmemlint = True
    listener._tmemlint_previous = previous
    knobs.compilation.listener = listener
    return listener


def uninstall() -> None:
    """Remove the tmemlint hook (the listener that was there before it is put back)."""
    from triton import knobs

    cur = knobs.compilation.listener
    if getattr(cur, "_tmemlint", False):
        knobs.compilation.listener = cur._tmemlint_previous


def main(argv: list[str] | None = None) -> int:
    """``python -m tmemlint.integrations.triton [--error] SCRIPT ARGS``: run SCRIPT with the hook installed."""
    import runpy
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    action = "warn"
    if args and args[0] in ("--error", "--warn"):
        action = args.pop(0)[2:]
    if not args:
        print("usage: python -m tmemlint.integrations.triton [--error] SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    install(action)
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
