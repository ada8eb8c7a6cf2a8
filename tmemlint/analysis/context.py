"""What the analyses need to know about the function they analyse, as a protocol: the checks' ``FunctionContext``
(``tmemlint.checks.context``) provides it, and analyses that take such a context (``lifecycle``, ``control``)
name this type, so that the analysis layer never imports the checks layer."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tmemlint.analysis.cfg import CFG
    from tmemlint.analysis.paths import ExitState, Facts, Transfer
    from tmemlint.analysis.threads import ThreadModel, WarpClass
    from tmemlint.analysis.tmem import TmemSites
    from tmemlint.analysis.values import ValueAnalysis
    from tmemlint.ir import Function, Instruction, Module


class AnalysisContext(Protocol):
    """One function of a module with its analyses computed on first use (each attribute is computed once and
    shared): the CFG, the value analysis, the warp classes, the TMEM allocation sites, and ``simulate`` (a
    property simulation per warp class, see ``FunctionContext.simulate``)."""

    module: "Module"
    function: "Function"
    cfg: "CFG"
    values: "ValueAnalysis"
    threads: "ThreadModel"
    sites: "TmemSites"

    def simulate(self, transfer: "Transfer", init: Hashable,
                 observe: "Callable[[WarpClass, Hashable, Instruction, Facts], None] | None" = None,
                 classes: "Iterable[WarpClass] | None" = None,
                 relevant: "Callable[[Instruction], bool] | None" = None) -> "list[tuple[WarpClass, list[ExitState]]]":
        """``[(klass, exits)]``: a ``PropertySimulation`` of ``transfer`` from ``init`` per warp class (all, or
        ``classes``); ``observe(klass, prop, inst, facts)``; ``relevant(inst)``: the instructions ``transfer`` and
        ``observe`` look at (None: all)."""
        ...
