"""What the compiler hooks share (``tmemlint.integrations.triton``, ``tmemlint.integrations.cute``): the two actions,
the warning and error they report with, the reading of ``action`` / ``fail_on`` (and of the environment variable
that chooses the action), and ``python -m tmemlint.integrations.<compiler> [--error] SCRIPT ARGS``.

Nothing here imports a compiler or the checker, so the hooks' autoloader (``tmemlint.integrations.autoload``, run at
interpreter start) stays cheap."""

from __future__ import annotations

import os
import runpy
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tmemlint.findings import Finding, Severity

#: What a hook does with the findings of a kernel: ``warn`` (one ``TmemWarning`` each) or ``error`` (raise
#: ``TmemError`` out of the compilation when one is at or above ``fail_on``, warn about the others).
ACTIONS = ("warn", "error")
#: The ``fail_on`` levels, lowest first (``Severity``).
FAIL_ON = ("info", "warning", "error")


class TmemWarning(UserWarning):
    """A tmemlint finding in a kernel a compiler produced (``str``: ``path:line:col: CODE [severity] message``)."""


class TmemError(RuntimeError):
    """Findings at or above ``fail_on`` in a kernel a compiler produced; ``findings`` holds all of its findings,
    ``kernel`` names it (Triton: the kernel; CuTe DSL: the ``@cute.jit`` function compiled), ``compiler`` the
    compiler ("Triton", "CuTe DSL"); ``lines`` are the findings as the message lists them (default ``str``)."""

    def __init__(self, kernel: str, findings: list[Finding], compiler: str,
                 lines: Sequence[str] | None = None):
        self.kernel = kernel
        self.findings = findings
        self.compiler = compiler
        text = list(lines) if lines is not None else [str(f) for f in findings]
        super().__init__(f"tmemlint: {len(findings)} finding(s) in {compiler} kernel {kernel}:\n" + "\n".join(text))


@dataclass(frozen=True)
class Policy:
    """How a hook reports: ``action`` (one of ``ACTIONS``) and ``threshold``, the ``Severity.rank`` of
    ``fail_on`` from which ``action="error"`` raises."""

    action: str
    threshold: int

    def report(self, kernel: str, findings: list[Finding], *, compiler: str,
               describe: Callable[[Finding], str] = str, stacklevel: int = 2) -> None:
        """Raise ``TmemError`` or issue one ``TmemWarning`` per finding (``describe`` writes its text; nothing
        when ``findings`` is empty).  ``stacklevel`` counts from the caller of ``report``, as ``warnings.warn``
        does from its own caller."""
        if not findings:
            return
        if self.action == "error" and any(f.severity.rank >= self.threshold for f in findings):
            raise TmemError(kernel, findings, compiler, [describe(f) for f in findings])
        for f in findings:
            warnings.warn(describe(f), TmemWarning, stacklevel=stacklevel + 1)


def policy(action: str | None, fail_on: str, env: str) -> Policy:
    """The ``Policy`` of ``install(action, fail_on=...)``: ``action`` None reads the environment variable ``env``,
    and is ``"warn"`` when that is unset or empty.  Raises ValueError for an unknown action or ``fail_on``."""
    action = action or os.environ.get(env) or "warn"
    if action not in ACTIONS:
        raise ValueError(f"tmemlint: {env} / action must be one of {', '.join(ACTIONS)} (got {action!r})")
    if fail_on not in FAIL_ON:
        raise ValueError(f"tmemlint: fail_on must be error, warning or info (got {fail_on!r})")
    return Policy(action, Severity(fail_on).rank)


def run_script(install: Callable[[str], object], module: str, argv: list[str] | None = None) -> int:
    """``python -m MODULE [--error|--warn] SCRIPT ARGS``: ``install(action)``, then run SCRIPT as ``__main__`` with
    ``sys.argv`` = SCRIPT ARGS.  Returns 2 (usage on stderr) without a SCRIPT, else 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    action = "warn"
    if args and args[0] in ("--error", "--warn"):
        action = args.pop(0)[2:]
    if not args:
        print(f"usage: python -m {module} [--error] SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    install(action)
    sys.argv = args
    runpy.run_path(args[0], run_name="__main__")
    return 0
