"""What the analyses need to know about the function they analyse, as a protocol: the checks' ``FunctionContext``
(``tmemlint.checks.context``) provides it, and analyses that take such a context (``lifecycle``, ``control``)
name this type, so that the analysis layer never imports the checks layer."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tmemlint.analysis.cfg import CFG, Node
    from tmemlint.analysis.paths import ExitState, Facts, Transfer
    from tmemlint.analysis.threads import ThreadModel, WarpClass
    from tmemlint.analysis.tmem import TmemSites
    from tmemlint.analysis.values import ValueAnalysis
    from tmemlint.ir import Function, Instruction, Module


@dataclass(slots=True)
class ControlCaches:
    """What ``tmemlint.analysis.control`` computes once per function, owned by the function's context
    (``AnalysisContext.control_caches``): each field is filled on first use by the function named beside it."""

    #: ``control_dependences``: block id -> the branch block ids it is directly control dependent on
    control_deps: dict[int, set[int]] | None = None
    #: ``class_blocks``: per warp class (by ``id``), the blocks it may execute
    class_blocks: dict[int, set[Node]] = field(default_factory=dict)
    #: ``reach_bits``: (block -> bit, block -> bitset of the blocks reachable from it)
    reach_bits: tuple[dict[Node, int], dict[Node, int]] | None = None
    #: ``block_descendants``: block -> the blocks reachable from it
    descendants: dict[Node, set[int]] = field(default_factory=dict)
    #: ``divergent_defs``: the definitions whose value may differ between the lanes of a warp
    divergent_defs: frozenset[int] | None = None
    #: ``natural_loops``: the loop bodies, one per header
    natural_loops: list[frozenset[Node]] | None = None
    #: ``analysis.order.SyncModel.releases_after`` of one tcgen05.ld (st) anchor: (warp class id, opcode family,
    #: completion) -> (the class, {anchor index: [(keys, facts)]}), one multi-anchor simulation answering every
    #: tcgen05.ld (st) of the function for that class
    releases_batch: dict[tuple[int, str, bool], tuple[object, dict[int, list[Any]]]] = field(default_factory=dict)
    #: ``SyncModel._single_valued_releases``: (warp class id, opcode family, completion) -> (the class, {anchor index:
    #: [(keys, facts)]}, or None when the multi-anchor run split a state and each anchor is simulated alone)
    releases_single: dict[tuple[int, str, bool], tuple[object, dict[int, list[Any]] | None]] = field(
        default_factory=dict)


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
    #: ``tmemlint.analysis.control``'s per-function results, owned by the context
    control_caches: "ControlCaches"

    def simulate(self, transfer: "Transfer", init: Hashable,
                 observe: "Callable[[WarpClass, Hashable, Instruction, Facts], None] | None" = None,
                 classes: "Iterable[WarpClass] | None" = None,
                 relevant: "Callable[[Instruction], bool] | None" = None) -> "list[tuple[WarpClass, list[ExitState]]]":
        """``[(klass, exits)]``: a ``PropertySimulation`` of ``transfer`` from ``init`` per warp class (all, or
        ``classes``); ``observe(klass, prop, inst, facts)``; ``relevant(inst)``: the instructions ``transfer`` and
        ``observe`` look at (None: all)."""
        ...

    def simulate_single_valued(self, transfer: "Transfer", init: Hashable, klass: "WarpClass",
                               relevant: "Callable[[Instruction], bool] | None" = None) -> "list[ExitState] | None":
        """The exit states of one ``PropertySimulation`` of ``transfer`` from ``init`` for ``klass``, run with
        ``single_valued`` (``paths.StatesSplit``): None when two property values met at one program point or the
        budget was exceeded (nothing is noted in ``bounded``: the caller falls back to the runs it replaces, which
        note it themselves)."""
        ...
