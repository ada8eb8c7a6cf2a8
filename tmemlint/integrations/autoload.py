"""``TMEMLINT_TRITON=warn|error``: install the Triton hook (``tmemlint.integrations.triton``) when ``triton`` is
first imported, without importing it earlier.  Run at interpreter start by the ``tmemlint-triton.pth`` file only
when the variable is set; any failure leaves the program alone (a warning says why)."""

from __future__ import annotations

import importlib.abc
import os
import sys
import warnings


class _Finder(importlib.abc.MetaPathFinder):
    """Waits for ``triton.knobs`` to be imported (Triton imports it while importing itself), then installs."""

    def find_spec(self, name, path=None, target=None):
        if name != "triton.knobs":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def run(module):
            exec_module(module)
            try:
                from tmemlint.integrations.triton import install

                install(os.environ.get("TMEMLINT_TRITON"))
            except Exception as e:  # noqa: BLE001 - a broken hook must not break the user's program
                warnings.warn(f"tmemlint: the Triton hook was not installed: {e}", RuntimeWarning, stacklevel=2)

        spec.loader.exec_module = run
        return spec


def activate() -> None:
    """Install the hook now if ``triton`` is already imported, else when it is."""
    if not os.environ.get("TMEMLINT_TRITON"):
        return
    if "triton.knobs" in sys.modules:
        from tmemlint.integrations.triton import install

        install(os.environ.get("TMEMLINT_TRITON"))
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


activate()
