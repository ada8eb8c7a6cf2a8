"""Instruction-level control flow over a ``CFG``: successors, back edges, natural loops, must-pass queries, and
which warp classes execute each instruction.

Program order is the PTX text order (instruction ``index``).  A CFG edge to a block that starts at or before the
edge's source block is a *back edge* (compilers lay loops out header first, so for their output this is the
natural-loop back edge); the loop it closes spans the text from the header to the end of the source block.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Hashable, Iterable

from tmemlint.analysis.cfg import CFG
from tmemlint.analysis.paths import BudgetExceeded, Facts, PropertySimulation
from tmemlint.analysis.threads import ThreadModel
from tmemlint.analysis.values import ValueAnalysis
from tmemlint.ir import Instruction


class Flow:
    """Successor and predecessor instruction indices of one function, with back edges marked.

    ``succ[i]`` / ``pred[i]``: lists of ``(j, back)`` where ``back`` is True on a loop back edge.  ``loops``:
    ``(header_index, last_index)`` text ranges of the natural loops, innermost first."""

    def __init__(self, cfg: CFG):
        self.cfg = cfg
        insts = cfg.function.instructions
        n = len(insts)
        self.n = n
        self.succ: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
        self.pred: list[list[tuple[int, bool]]] = [[] for _ in range(n)]
        loops = set()
        for bid, blk in cfg.blocks.items():
            for i in range(blk.start, blk.end - 1):
                self.succ[i].append((i + 1, False))
                self.pred[i + 1].append((i, False))
            if blk.end <= blk.start:
                continue
            last = blk.end - 1
            for s in cfg.graph.successors(bid):
                if s not in cfg.blocks:
                    continue
                tgt = cfg.blocks[s].start
                if tgt >= n:
                    continue
                back = tgt <= blk.start
                self.succ[last].append((tgt, back))
                self.pred[tgt].append((last, back))
                if back:
                    loops.add((tgt, last))
        self.loops = sorted(loops, key=lambda lp: (lp[1] - lp[0], lp[0]))

    def reach(self, start: int, stop: Callable[[int], bool], forward: bool = True, back_edges: bool = True,
              avoid: Callable[[int], bool] | None = None) -> set[int]:
        """Instructions met first on paths leaving ``start`` (excluded) for which ``stop`` holds: the search does
        not continue past them.  ``avoid``: instructions the paths may not pass.  ``back_edges=False`` stays inside
        one iteration."""
        edges = self.succ if forward else self.pred
        seen = {start}
        found: set[int] = set()
        work = deque([start])
        while work:
            i = work.popleft()
            for j, back in edges[i]:
                if back and not back_edges:
                    continue
                if j in seen:
                    continue
                seen.add(j)
                if stop(j):
                    found.add(j)
                    continue
                if avoid is not None and avoid(j):
                    continue
                work.append(j)
        return found

    def reachable(self, start: int, target: int, avoid: Callable[[int], bool] | None = None,
                  back_edges: bool = True) -> bool:
        """Whether ``target`` can follow ``start`` on some path that passes no instruction for which ``avoid``
        holds (``start`` and ``target`` themselves are not tested)."""
        return bool(self.reach(start, lambda j: j == target, True, back_edges, avoid))

    def must_pass(self, start: int, target: int, what: Callable[[int], bool]) -> bool:
        """Whether every path from ``start`` to ``target`` passes an instruction for which ``what`` holds (True
        also when ``target`` cannot follow ``start`` at all)."""
        return not self.reachable(start, target, avoid=what)

    def only_via_back_edge(self, start: int, target: int) -> bool:
        """Whether ``target`` follows ``start`` only through a loop back edge (a later iteration)."""
        return not self.reachable(start, target, back_edges=False)

    def loop_of(self, index: int) -> tuple[int, int] | None:
        """The innermost loop whose text range contains ``index``, or None."""
        for lo, hi in self.loops:
            if lo <= index <= hi:
                return lo, hi
        return None


def executing_classes(cfg: CFG, va: ValueAnalysis, threads: ThreadModel) -> tuple[dict[int, frozenset[int]], bool]:
    """``({instruction index: indices of the warp classes that may execute it}, complete)`` by property
    simulation with a trivial property (guards and branches on the thread index are decided per class; other
    predicates fork).  ``complete`` is False when a simulation exceeded its budget: the instructions of that class
    are then attributed to it wherever they are reachable."""
    out: dict[int, set[int]] = {}
    complete = True
    for ci, klass in enumerate(threads.classes):
        def observe(_prop: Hashable, inst: Instruction, _facts: Facts, ci: int = ci) -> None:
            out.setdefault(inst.index, set()).add(ci)

        sim = PropertySimulation(cfg, va, klass, lambda p, _i: p, 0, observe=observe)
        try:
            sim.run()
        except BudgetExceeded:
            complete = False
            for i in range(len(cfg.function.instructions)):
                out.setdefault(i, set()).add(ci)
    return {i: frozenset(s) for i, s in out.items()}, complete


def warps_of(classes: Iterable[int], threads: ThreadModel) -> list[int]:
    """The warp indices (``tid.x // 32``) of the given warp classes, sorted."""
    ws: set[int] = set()
    for c in classes:
        ws.update(threads.classes[c].warps)
    return sorted(ws)
