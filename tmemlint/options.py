"""The options of one checked file: which rules run, their severities, and how CUDA sources are read.  Its own
module so that configuration (``tmemlint.config``), the driver (``tmemlint.engine``), the rules (as
``ctx.options``) and the Python API share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from tmemlint.checks.registry import RULES, Rule, load_all


@dataclass(slots=True)
class Options:
    """What to check and how to report it (one file's resolved configuration, see ``tmemlint.config``).

    ``codes``: the enabled rule codes (None: the registry's defaults).  ``severity``: code → ``"error"`` |
    ``"warning"`` | ``"info"`` overriding the rule's default severity in the findings.  ``fail_on``: the lowest
    severity that makes the exit code 1 (``"error"``, ``"warning"``, ``"info"``, ``"never"``).  ``ctas_per_sm``:
    CTAs resident per SM from the configuration (None: from ``.minnctapersm`` only), for the column budget rule;
    rules read it as ``ctx.options.ctas_per_sm``.  CUDA sources: ``defines`` (``-D``: name → value) decide their
    ``#if``; ``compile`` lints them through nvcc (``--compile``) with ``nvcc_args`` added to its command line."""

    codes: set[str] | None = None
    severity: dict[str, str] = field(default_factory=dict)
    fail_on: str = "error"
    ctas_per_sm: int | None = None
    defines: dict[str, str] = field(default_factory=dict)
    compile: bool = False
    nvcc_args: tuple[str, ...] = ()
    #: Folders searched for quoted includes (``-I``, ``include-dirs``), after the including file's folder.
    include_dirs: tuple[str, ...] = ()
    #: Library headers (``tmemlint.libraries``): ``(root, glob)`` pairs of the configuration's ``library-paths``,
    #: and the ``-isystem`` folders of ``-p`` (absolute).  A finding placed in one moves to the user's frame.
    library_paths: tuple[tuple[str, str], ...] = ()
    library_dirs: tuple[str, ...] = ()
    #: Processes one large PTX file may be split over (``engine.SPLIT_MIN_LINES`` lines of code and two kernels
    #: that use TMEM); the CLI sets it to ``--jobs`` (with several files too, from ``engine.SPLIT_MIN_LINES_SHARED``
    #: lines: a big file started first is split while the other workers take the small files).
    jobs: int = 1

    def rules(self) -> list[Rule]:
        load_all()
        if self.codes is None:
            return [r for r in RULES.values() if r.enabled]
        return [RULES[c] for c in sorted(self.codes) if c in RULES]

    def wants(self, code: str) -> bool:
        load_all()
        return RULES[code].enabled if self.codes is None else code in self.codes
