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

from typing import Any, Callable, Iterable, Mapping

from tmemlint.api import check
from tmemlint.findings import Finding
from tmemlint.integrations.common import ACTIONS, TmemError, TmemWarning, policy, run_script

__all__ = ["ACTIONS", "ENV", "TMEM_ARCHS", "TmemError", "TmemWarning", "check_compiled", "install", "main",
           "uninstall"]

#: CUDA compute capabilities (Triton's ``GPUTarget.arch``) whose PTX uses Tensor Memory: sm_100a and sm_103a.
TMEM_ARCHS = (100, 103)
ENV = "TMEMLINT_TRITON"


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

    how = policy(action, fail_on, ENV)
    previous = knobs.compilation.listener
    while getattr(previous, "_tmemlint_previous", None) is not None or getattr(previous, "_tmemlint", False):
        previous = getattr(previous, "_tmemlint_previous", None)

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        if previous is not None:
            previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)
        found = check_compiled(metadata, metadata_group, config=config, select=select, ignore=ignore)
        how.report(metadata.get("name") or "triton_kernel", found, compiler="Triton")

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
    return run_script(install, "tmemlint.integrations.triton", argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
