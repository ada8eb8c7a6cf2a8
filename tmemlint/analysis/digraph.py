"""The directed graph of a CFG and the few graph algorithms the analyses use, in the shape of ``networkx``'s.

``networkx`` costs 70 ms of CPU to import (its backend dispatch reads every installed distribution's entry points),
a fifth of checking a small file, for a dict of dicts and five algorithms.  This module is that subset, with the
same iteration orders as ``networkx.DiGraph`` 3.x (nodes in insertion order, a node's successors and predecessors
in the order their edges were added), so every traversal visits the same nodes in the same order:

* ``DiGraph``: ``add_node``, ``add_nodes_from``, ``add_edge(u, v, **attr)``, ``add_edges_from``, ``has_edge``,
  ``successors``, ``predecessors``, ``G[u]`` (successor → edge-attribute dict), ``G[u][v]``, ``nodes``, ``edges``,
  ``pred``, ``succ``, ``u in G``;
* ``dfs_postorder_nodes``, ``descendants``, ``immediate_dominators`` (Cooper, Harvey and Kennedy, as networkx),
  ``condensation`` (strongly connected components; ``graph["mapping"]``: node → component) and
  ``topological_sort``.

``tests/test_digraph.py`` compares every function with networkx's on the CFG of every fixture.
"""

from __future__ import annotations

from functools import reduce
from collections.abc import Hashable, Iterable, Iterator, KeysView
from typing import Any, Generic, TypeVar

N = TypeVar("N", bound=Hashable)
"""A node: any hashable value (the CFG's are block ids and ``"entry"``/``"exit"``/``"abort"``, ``cfg.Node``)."""

EdgeData = dict[str, Any]
"""An edge's attribute dict, networkx's: keys and values are the caller's (the CFG's: ``cond=(Guard, taken)``,
``cases=(k, ...)``, see ``cfg.CFG``), so the values stay ``Any`` here and are annotated where they are read."""


class DiGraph(Generic[N]):
    """Nodes and directed edges with attribute dicts (``networkx.DiGraph``'s layout: ``_succ[u][v]`` and
    ``_pred[v][u]`` are the same attribute dict)."""

    __slots__ = ("_succ", "_pred", "graph")

    def __init__(self) -> None:
        self._succ: dict[N, dict[N, EdgeData]] = {}
        self._pred: dict[N, dict[N, EdgeData]] = {}
        self.graph: dict[str, Any] = {}  # networkx's graph-attribute dict (``condensation``: "mapping")

    def add_node(self, n: N) -> None:
        if n not in self._succ:
            self._succ[n] = {}
            self._pred[n] = {}

    def add_nodes_from(self, nodes: Iterable[N]) -> None:
        for n in nodes:
            self.add_node(n)

    def add_edge(self, u: N, v: N, **attr: Any) -> None:
        self.add_node(u)
        self.add_node(v)
        data = self._succ[u].get(v)
        if data is None:
            data = {}
            self._succ[u][v] = data
            self._pred[v][u] = data
        data.update(attr)

    def add_edges_from(self, edges: Iterable[tuple[N, N]]) -> None:
        for u, v in edges:
            self.add_edge(u, v)

    def has_edge(self, u: N, v: N) -> bool:
        return u in self._succ and v in self._succ[u]

    def successors(self, n: N) -> Iterator[N]:
        return iter(self._succ[n])

    def predecessors(self, n: N) -> Iterator[N]:
        return iter(self._pred[n])

    def __getitem__(self, n: N) -> dict[N, EdgeData]:
        return self._succ[n]

    def __contains__(self, n: object) -> bool:
        return n in self._succ

    def __iter__(self) -> Iterator[N]:
        return iter(self._succ)

    def __len__(self) -> int:
        return len(self._succ)

    @property
    def nodes(self) -> KeysView[N]:
        """The nodes in insertion order (iterable, ``in`` works)."""
        return self._succ.keys()

    @property
    def edges(self) -> list[tuple[N, N]]:
        """``(u, v)`` for every edge: ``u`` in node order, then ``u``'s successors in edge order."""
        return [(u, v) for u, nbrs in self._succ.items() for v in nbrs]

    @property
    def succ(self) -> dict[N, dict[N, EdgeData]]:
        return self._succ

    @property
    def pred(self) -> dict[N, dict[N, EdgeData]]:
        return self._pred


def dfs_postorder_nodes(g: DiGraph[N], source: N) -> Iterator[N]:
    """The nodes reachable from ``source`` in depth-first post-order, successors taken in edge order (as
    ``networkx.dfs_postorder_nodes``)."""
    succ = g._succ
    visited = {source}
    stack = [(source, iter(succ[source]))]
    while stack:
        parent, children = stack[-1]
        for child in children:
            if child not in visited:
                visited.add(child)
                stack.append((child, iter(succ[child])))
                break
        else:
            stack.pop()
            yield parent


def descendants(g: DiGraph[N], source: N) -> set[N]:
    """The nodes reachable from ``source`` by at least one edge, ``source`` itself excluded (as networkx)."""
    succ = g._succ
    seen = {source}
    todo = [source]
    while todo:
        for v in succ[todo.pop()]:
            if v not in seen:
                seen.add(v)
                todo.append(v)
    seen.discard(source)
    return seen


def immediate_dominators(g: DiGraph[N], start: N) -> dict[N, N]:
    """Node → its immediate dominator, for every node reachable from ``start`` except ``start`` (Cooper, Harvey
    and Kennedy, "A simple, fast dominance algorithm", 2006: the algorithm and result of
    ``networkx.immediate_dominators`` 3.x)."""
    idom = {start: start}  # never followed (``start`` is last in post-order), deleted at the end (as networkx)
    order = list(dfs_postorder_nodes(g, start))
    dfn = {u: i for i, u in enumerate(order)}
    order.pop()
    order.reverse()

    def intersect(u: N, v: N) -> N:
        while u != v:
            while dfn[u] < dfn[v]:
                u = idom[u]
            while dfn[u] > dfn[v]:
                v = idom[v]
        return u

    pred = g._pred
    changed = True
    while changed:
        changed = False
        for u in order:
            new_idom = reduce(intersect, (v for v in pred[u] if v in idom))
            if u not in idom or idom[u] != new_idom:
                idom[u] = new_idom
                changed = True
    del idom[start]
    return idom


def condensation(g: DiGraph[N]) -> DiGraph[int]:
    """The graph of strongly connected components (numbered 0, 1, ...; ``graph["mapping"]``: node → component),
    with an edge between two components when an edge joins their members (Tarjan's algorithm, iterative)."""
    succ = g._succ
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    comp: dict[N, int] = {}
    n_comps = 0
    counter = 0
    for root in succ:
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(succ[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp[w] = n_comps
                        if w == v:
                            break
                    n_comps += 1
    c: DiGraph[int] = DiGraph()
    c.add_nodes_from(range(n_comps))
    for u, nbrs in succ.items():
        for v in nbrs:
            if comp[u] != comp[v]:
                c.add_edge(comp[u], comp[v])
    c.graph["mapping"] = comp
    return c


def topological_sort(g: DiGraph[N]) -> list[N]:
    """The nodes of the acyclic graph ``g`` with every edge's source before its target (Kahn's algorithm)."""
    indeg = {n: len(p) for n, p in g._pred.items()}
    ready = [n for n, d in indeg.items() if d == 0]
    out: list[N] = []
    while ready:
        n = ready.pop()
        out.append(n)
        for v in g._succ[n]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if len(out) != len(indeg):
        raise ValueError("graph has a cycle")
    return out
