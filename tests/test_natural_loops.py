"""``control.natural_loops`` against networkx on every fixture CFG, and on a hand-built nest of two loops."""

from __future__ import annotations

import networkx as nx

from test_digraph import _as_networkx, _graphs
from tmemlint.analysis.cfg import ENTRY
from tmemlint.analysis.control import natural_loops
from tmemlint.checks.context import FunctionContext
from tmemlint.frontend.parser import parse_module


def _oracle(h: nx.DiGraph) -> set[frozenset]:
    """Natural loops by the textbook: for each back edge a -> h (h dominates a), h plus the nodes that reach a
    in the graph without h; merged per header."""
    idom = nx.immediate_dominators(h, ENTRY)

    def dominates(d, n) -> bool:
        while True:
            if n == d:
                return True
            if idom.get(n, n) == n:
                return False
            n = idom[n]

    bodies: dict = {}
    for a, hd in h.edges:
        if a in idom and dominates(hd, a):
            cut = h.copy()
            cut.remove_node(hd)
            body = {hd, a} | (nx.ancestors(cut, a) if a != hd else set())
            bodies.setdefault(hd, set()).update(body)
    return {frozenset(b) for b in bodies.values()}


class _Ctx:  # what natural_loops reads of a FunctionContext
    def __init__(self, cfg):
        from tmemlint.analysis.context import ControlCaches

        self.cfg = cfg
        self.control_caches = ControlCaches()


def test_natural_loops_equal_the_textbook_definition_on_every_fixture_cfg():
    from tmemlint.analysis.cfg import build_cfg
    from tmemlint.frontend.parser import parse_module as parse

    n = 0
    for p, name, g in _graphs():
        h = _as_networkx(g)
        reachable = h.subgraph(nx.descendants(h, ENTRY) | {ENTRY}).copy()
        module = parse(p.read_text(errors="replace"), str(p))
        fn = next(f for f in module.functions if f.name == name)
        got = {b for b in natural_loops(_Ctx(build_cfg(fn)))}
        assert got == _oracle(reachable), (p.name, name)
        n += len(got)
    assert n > 50  # the fixtures hold that many loops


NEST = """.version 9.0
.target sm_100a
.address_size 64
.visible .entry nest()
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	mov.u32 %r1, 0;
OUTER:
	mov.u32 %r2, 0;
INNER:
	add.s32 %r2, %r2, 1;
	setp.lt.u32 %p1, %r2, 4;
	@%p1 bra INNER;
	add.s32 %r1, %r1, 1;
	setp.lt.u32 %p2, %r1, 8;
	@%p2 bra OUTER;
	ret;
}
"""


def test_a_nest_of_two_loops_has_two_natural_loops_one_inside_the_other():
    fn = parse_module(NEST, "nest.ptx").functions[0]
    ctx = FunctionContext(parse_module(NEST, "nest.ptx"), fn, "nest.ptx")
    loops = sorted(natural_loops(ctx), key=len)
    assert len(loops) == 2
    inner, outer = loops
    assert inner < outer
    assert ctx.cfg.block_of[fn.instructions[3].index] in inner  # the inner test (setp of %p1)
    assert ctx.cfg.block_of[fn.instructions[6].index] not in inner  # the outer test (setp of %p2)
