"""What the analyses need to know about the function they analyse, as a protocol: the checks' ``FunctionContext``
(``tmemlint.checks.context``) provides it, and analyses that take such a context (``lifecycle``, ``control``)
name this type, so that the analysis layer never imports the checks layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tmemlint.analysis.cfg import CFG
    from tmemlint.analysis.threads import ThreadModel
    from tmemlint.analysis.tmem import TmemSites
    from tmemlint.analysis.values import ValueAnalysis
    from tmemlint.ir import Function, Module


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

    def simulate(self, transfer: Any, init: Any, observe: Any = None, classes: Any = None,
                 relevant: Any = None) -> list: ...
