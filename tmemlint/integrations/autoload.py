"""``TMEMLINT_TRITON=warn|error``, ``TMEMLINT_CUTE=warn|error``: install the Triton hook
(``tmemlint.integrations.triton``) when ``triton`` is first imported, the CuTe DSL hook
(``tmemlint.integrations.cute``) when the DSL (``cutlass``) is, without importing either earlier.  Run at interpreter
start by the ``tmemlint-triton.pth`` / ``tmemlint-cute.pth`` files only when one of the variables is set; any
failure leaves the program alone (a warning says why)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class Hook:
    """An integration: its module under ``tmemlint.integrations``, the variable that turns it on, the compiler's
    module whose import completes what the hook wraps, and the compiler's name in messages."""

    name: str
    env: str
    trigger: str
    compiler: str


HOOKS = (
    Hook("triton", "TMEMLINT_TRITON", "triton.knobs", "Triton"),  # Triton imports knobs while importing itself
    Hook("cute", "TMEMLINT_CUTE", "cutlass.base_dsl.compiler", "CuTe DSL"),  # CompileCallable, CompileOptions
)


def _install(hook: Hook) -> None:
    """``install()`` of ``hook``'s integration with the action its variable names; a failure is a warning."""
    try:
        from tmemlint.integrations import cute, triton

        (cute if hook.name == "cute" else triton).install(os.environ.get(hook.env))
    except Exception as e:  # noqa: BLE001 - a broken hook must not break the user's program
        warnings.warn(f"tmemlint: the {hook.compiler} hook was not installed: {e}", RuntimeWarning, stacklevel=2)


class _Finder(importlib.abc.MetaPathFinder):
    """Waits for each pending hook's trigger module to be imported, then installs the hook once it has run."""

    def __init__(self, pending: list[Hook]):
        self.pending = pending

    def find_spec(self, name, path=None, target=None):
        hook = next((h for h in self.pending if h.trigger == name), None)
        if hook is None:
            return None
        self.pending.remove(hook)
        sys.meta_path.remove(self)  # the real finders find it
        try:
            spec = importlib.util.find_spec(name)
        finally:
            if self.pending:
                sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def run(module):
            exec_module(module)
            _install(hook)

        spec.loader.exec_module = run
        return spec


def activate() -> None:
    """For each hook whose variable is set: install it now if its compiler is already imported, else when it is."""
    pending = []
    for hook in HOOKS:
        if not os.environ.get(hook.env):
            continue
        if hook.trigger in sys.modules:
            _install(hook)
        elif not any(isinstance(f, _Finder) and hook in f.pending for f in sys.meta_path):
            pending.append(hook)
    if pending:
        sys.meta_path.insert(0, _Finder(pending))


activate()
