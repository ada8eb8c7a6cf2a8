"""``tmemlint plan``: the TMEM resource report of a kernel (regions, column budget, liveness, reuse, readback),
built from the analyses as a versioned JSON model (``model``) and rendered as text (``render_text``) or as a
picture (``render_svg``)."""

import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    """``tmemlint.plan`` is this package and, called, the API's ``tmemlint.api.plan``: ``tmemlint.plan(ptx)``."""

    def __call__(self, *args, **kwargs):
        from tmemlint.api import plan

        return plan(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
