"""``tmemlint.analysis.digraph`` (the CFG's graph, without networkx's 70 ms import) against networkx itself on the
CFG of every fixture: the same nodes, edges and attribute dicts in the same orders, and the same results of every
algorithm the analyses use (orders included where the analyses depend on them)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from tmemlint.analysis import digraph
from tmemlint.analysis.cfg import ENTRY, EXIT, build_cfg
from tmemlint.frontend.parser import parse_module

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for p in (ROOT / "fixtures").rglob("*.ptx")) + sorted((ROOT / "examples").glob("*.ptx"))


def _as_networkx(g: digraph.DiGraph) -> nx.DiGraph:
    h = nx.DiGraph()
    h.add_nodes_from(g.nodes)
    for u, v in g.edges:
        h.add_edge(u, v, **g[u][v])
    return h


def _components(c, mapping) -> set:
    groups: dict = {}
    for n, k in mapping.items():
        groups.setdefault(k, set()).add(n)
    return {frozenset(s) for s in groups.values()}


def _graphs():
    for p in FILES:
        try:
            module = parse_module(p.read_text(errors="replace"), str(p))
        except Exception:  # fixtures of syntax errors
            continue
        for fn in module.functions:
            if fn.instructions:
                yield p, fn.name, build_cfg(fn).graph


def test_digraph_equals_networkx_on_every_fixture_cfg():
    n = 0
    for p, name, g in _graphs():
        n += 1
        h = _as_networkx(g)
        where = (p.name, name)
        assert list(g.nodes) == list(h.nodes), where
        assert g.edges == list(h.edges), where
        for u in g.nodes:
            assert list(g.successors(u)) == list(h.successors(u)), where
            assert list(g.predecessors(u)) == list(h.predecessors(u)), where
        assert list(digraph.dfs_postorder_nodes(g, ENTRY)) == list(nx.dfs_postorder_nodes(h, ENTRY)), where
        for u in list(g.nodes)[:50]:
            assert digraph.descendants(g, u) == nx.descendants(h, u), where
        rev_g, rev_h = digraph.DiGraph(), nx.DiGraph()
        for r in (rev_g, rev_h):
            r.add_nodes_from(g.nodes)
            r.add_edges_from((v, u) for u, v in g.edges)
        assert digraph.immediate_dominators(rev_g, EXIT) == nx.immediate_dominators(rev_h, EXIT), where
        cg, ch = digraph.condensation(g), nx.condensation(h)
        assert _components(cg, cg.graph["mapping"]) == _components(ch, ch.graph["mapping"]), where
        order = digraph.topological_sort(cg)
        pos = {c: i for i, c in enumerate(order)}
        assert sorted(order) == sorted(cg.nodes) and all(pos[u] < pos[v] for u, v in cg.edges), where
    assert n > 150


def test_edge_attributes_are_shared_and_updated():
    g = digraph.DiGraph()
    g.add_edge(1, 2, cond="x")
    g.add_edge(1, 2, cases=(0,))
    g[1][2]["cases"] += (1,)
    assert g[1][2] == {"cond": "x", "cases": (0, 1)} and g.pred[2][1] is g[1][2]
    assert g.has_edge(1, 2) and not g.has_edge(2, 1) and 3 not in g
    with pytest.raises(ValueError):
        g.add_edge(2, 1)
        digraph.topological_sort(g)
