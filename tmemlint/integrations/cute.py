"""Lint every kernel that the CuTe DSL (``nvidia-cutlass-dsl``) compiles for ``sm_100a`` / ``sm_103a`` in this
process.

One line in the program::

    import tmemlint.integrations.cute; tmemlint.integrations.cute.install()               # Python warnings
    tmemlint.integrations.cute.install(action="error")                                    # raise on errors

or none, from the environment (the ``tmemlint-cute.pth`` file that the package installs reads it when Python
starts, and installs the hook the first time the DSL is imported)::

    TMEMLINT_CUTE=warn python train.py          # or: error
    python -m tmemlint.integrations.cute [--error] train.py ARGS     # the same for one script

The hook wraps the DSL's compile entry point, ``CompileCallable._compile`` (``cute.compile(...)``,
``cute.compile[options](...)``, ``cute.experimental.compile``); a wrapper already there is kept and called.  For the
compilation it asks the DSL to keep the PTX (its ``KeepPTX`` option, set where the options of the compilation are
final: ``CompileOptions.apply_envar_settings``), in a temporary folder removed afterwards unless the compilation
keeps other artifacts (``--keep-cubin``, ``CUTE_DSL_KEEP=cubin``...), whose folder it then shares.  The DSL's
cache is left as it is (``cute.compile`` compiles without it).  The compiled function's ``__ptx__`` is then linted
with ``tmemlint.check`` when its ``.target`` is of the sm_100 family (sm_100a, sm_103a, sm_100f, sm_103f; other
targets have no Tensor Memory), reported as ``<jit function>.ptx`` with the kernel named in each finding.
``action="warn"`` issues one ``TmemWarning`` per finding, at the ``cute.compile`` call; ``action="error"`` raises
``TmemError`` (with ``.findings``) out of ``cute.compile`` when a finding is at or above ``fail_on``, and warns
about the rest.  ``@cute.jit`` functions called directly (compiled and run in one step) are not linted.
"""

from __future__ import annotations

import contextvars
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from tmemlint.api import check
from tmemlint.findings import Finding
from tmemlint.integrations.common import ACTIONS, TmemError, TmemWarning, policy, run_script

__all__ = ["ACTIONS", "ENV", "TMEM_TARGETS", "TmemError", "TmemWarning", "check_compiled", "install", "main",
           "ptx_target", "uninstall"]

ENV = "TMEMLINT_CUTE"
#: PTX targets with Tensor Memory (PTX ISA §13.2, tcgen05 "Target ISA notes": the sm_100 family, arch- and
#: family-specific).
TMEM_TARGETS = frozenset({"sm_100a", "sm_103a", "sm_100f", "sm_103f"})
_TARGET = re.compile(r"^[ \t]*\.target[ \t]+(\w+)", re.MULTILINE)


def ptx_target(ptx: str) -> str | None:
    """The first target of a PTX module's ``.target`` directive (PTX ISA §11.1.2), None without one."""
    m = _TARGET.search(ptx)
    return m.group(1) if m else None


def check_compiled(ptx: object, name: str = "cute_kernel.ptx", **check_args: Any) -> list[Finding]:
    """The findings of a compiled function's ``__ptx__``; empty when it is not PTX text (None, or the path the DSL
    could not write) or its target has no Tensor Memory.  ``check_args`` go to ``tmemlint.check`` (``config``,
    ``select``, ``ignore``)."""
    if not isinstance(ptx, str) or ptx_target(ptx) not in TMEM_TARGETS:
        return []
    return check(ptx, name=name, **check_args)


def jit_name(func: object) -> str:
    """The Python name of what ``cute.compile`` compiles: a function (under its decorators), a bound method, or a
    callable object (its class)."""
    target = getattr(func, "__func__", func)
    while hasattr(target, "__wrapped__"):
        target = target.__wrapped__
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(func).__name__


def _describe(f: Finding) -> str:
    """A finding as the hook reports it: ``str(f)`` and the kernel it is in (a jit function may launch several)."""
    return f"{f} in kernel {f.function}" if f.function else str(f)


@dataclass
class _Request:
    """The PTX that one ``cute.compile`` call asks of the DSL: the option objects replaced to get it
    (``(CompileOptions, option class, previous option)``, put back afterwards) and the temporary folder it lands
    in (None: the compilation's own dump folder, or none yet)."""

    compiler: Any  # the cutlass.base_dsl.compiler module
    replaced: list[tuple[Any, type, Any]] = field(default_factory=list)
    folder: str | None = None

    def keep_ptx(self, options: Any, envar: Any) -> None:
        """Turn on ``KeepPTX`` in ``options`` unless the compilation keeps its PTX already; into a temporary
        folder unless it keeps another artifact (whose dump folder it then shares)."""
        c = self.compiler
        if options.options[c.KeepPTX].value or getattr(envar, "keep_ptx", False):
            return
        self._replace(options, c.KeepPTX, c.KeepPTX(True))
        others = (options.options[c.KeepCUBIN].value or options.options[c.KeepSASS].value
                  or getattr(envar, "keep_cubin", False) or getattr(envar, "keep_sass", False))
        if not others:
            self.folder = self.folder or tempfile.mkdtemp(prefix="tmemlint-cute-")
            self._replace(options, c.DumpDir, c.DumpDir(self.folder))

    def _replace(self, options: Any, cls: type, new: Any) -> None:
        self.replaced.append((options, cls, options.options[cls]))
        options.options[cls] = new

    def undo(self) -> None:
        """Put the replaced options back (the shared ``CompileOptions`` of ``cute.compile[...]`` included) and
        remove the temporary folder."""
        for options, cls, previous in reversed(self.replaced):
            options.options[cls] = previous
        self.replaced.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


#: The request of the ``cute.compile`` call under way in this thread (or task), None outside one.
_REQUEST: contextvars.ContextVar[_Request | None] = contextvars.ContextVar("tmemlint_cute_request", default=None)


@dataclass(frozen=True)
class _Hook:
    """One installation: the two wrappers and what they wrap (restored by ``uninstall``)."""

    compile: Callable[..., Any]
    previous_compile: Callable[..., Any]
    apply: Callable[..., Any]
    previous_apply: Callable[..., Any]


#: The installed hook; wrappers of an earlier installation that another wrapper still calls pass through.
_installed: list[_Hook] = []


def _unwrapped(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` without the tmemlint wrappers on top of it."""
    while getattr(method, "_tmemlint", False):
        method = method._tmemlint_previous  # type: ignore[attr-defined]
    return method


def install(action: str | None = None, *, fail_on: str = "error", config: Any = None,
            select: Iterable[str] | None = None, ignore: Iterable[str] = ()) -> Callable[..., Any]:
    """Install the hook (see the module docstring; ``action`` None: ``$TMEMLINT_CUTE``, else ``"warn"``).
    Installing again replaces the previous tmemlint hook.  Returns the compile wrapper.  Raises ValueError for an
    unknown action or ``fail_on``, ImportError without the DSL (or one without the entry points above)."""
    from cutlass.base_dsl import compiler

    how = policy(action, fail_on, ENV)
    callable_cls, options_cls = compiler.CompileCallable, compiler.CompileOptions
    if not callable(getattr(callable_cls, "_compile", None)) or \
            not callable(getattr(options_cls, "apply_envar_settings", None)):
        raise ImportError("tmemlint: this nvidia-cutlass-dsl has no CompileCallable._compile or "
                          "CompileOptions.apply_envar_settings to hook")
    previous_compile = _unwrapped(callable_cls._compile)
    previous_apply = _unwrapped(options_cls.apply_envar_settings)

    def _compile(self: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        if not _installed or _installed[-1].compile is not _compile:
            return previous_compile(self, func, *args, **kwargs)
        request = _Request(compiler)
        token = _REQUEST.set(request)
        try:
            compiled = previous_compile(self, func, *args, **kwargs)
        finally:
            _REQUEST.reset(token)
            request.undo()
        name = jit_name(func)
        found = check_compiled(getattr(compiled, "__ptx__", None), f"{name}.ptx", config=config, select=select,
                               ignore=ignore)
        # stacklevel: report → _compile → CompileCallable.__call__ → the cute.compile call
        how.report(name, found, compiler="CuTe DSL", describe=_describe, stacklevel=3)
        return compiled

    def apply_envar_settings(self: Any, envar: Any, function_name: str) -> Any:
        request = _REQUEST.get()
        if request is not None and _installed and _installed[-1].apply is apply_envar_settings:
            request.keep_ptx(self, envar)
        return previous_apply(self, envar, function_name)

    for wrapper, previous in ((_compile, previous_compile), (apply_envar_settings, previous_apply)):
        wrapper._tmemlint = True  # type: ignore[attr-defined]
        wrapper._tmemlint_previous = previous  # type: ignore[attr-defined]
        wrapper.__doc__ = previous.__doc__
    _installed[:] = [_Hook(_compile, previous_compile, apply_envar_settings, previous_apply)]
    callable_cls._compile = _compile
    options_cls.apply_envar_settings = apply_envar_settings
    return _compile


def uninstall() -> None:
    """Remove the tmemlint hook: the methods it wrapped are put back where its wrappers are still on top, and its
    wrappers pass through where another wrapper has since wrapped them."""
    if not _installed:
        return
    from cutlass.base_dsl import compiler

    hook = _installed.pop()
    if compiler.CompileCallable._compile is hook.compile:
        compiler.CompileCallable._compile = hook.previous_compile
    if compiler.CompileOptions.apply_envar_settings is hook.apply:
        compiler.CompileOptions.apply_envar_settings = hook.previous_apply


def main(argv: list[str] | None = None) -> int:
    """``python -m tmemlint.integrations.cute [--error] SCRIPT ARGS``: run SCRIPT with the hook installed."""
    return run_script(install, "tmemlint.integrations.cute", argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
