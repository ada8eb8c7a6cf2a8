"""Control-flow graph of basic blocks, one ``digraph.DiGraph`` (networkx's layout and orders) per function.

Block boundaries follow PTX control flow (PTX ISA §9.7.9): a label starts a block; ``bra`` (guarded: two
successors, unguarded: one), ``brx.idx`` (its ``.branchtargets`` list, §9.7.9.3), ``ret``/``exit`` (to the exit
node) and ``trap`` (to the abort node: an aborted kernel leaks nothing) end one.  A guarded ``ret``/``exit``/``trap``
also falls through.  ``call`` does not end a block; its callee is summarized by the analyses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tmemlint.analysis import digraph
from tmemlint.ir import Function, Instruction, Sym

ENTRY = "entry"
EXIT = "exit"
ABORT = "abort"

Node = int | str
"""A node of ``CFG.graph``: a block id (``Block.id``) or one of ``ENTRY``, ``EXIT``, ``ABORT``."""


@dataclass(slots=True, eq=False)
class Block:
    """A basic block: instructions ``start`` ≤ i < ``end`` of the function's flat list; ``id`` is ``start``."""

    id: int
    start: int
    end: int
    label: str | None = None
    instructions: list[Instruction] = field(default_factory=list)


@dataclass(slots=True)
class CFG:
    """Blocks of one function and their graph.

    ``graph`` nodes are block ids plus ``ENTRY``, ``EXIT`` and ``ABORT``; an edge may carry ``cond=(Guard, taken)``
    when it is the taken (True) or fall-through (False) side of a guarded branch, and ``case=k`` when it is
    entry k of a ``brx.idx`` table.  ``unresolved`` lists ``brx.idx``
    instructions whose target list could not be found (TM901)."""

    function: Function
    blocks: dict[int, Block]
    graph: digraph.DiGraph[Node]
    block_of: list[int]
    unresolved: list[Instruction]

    def successors(self, node: Node) -> Iterator[Node]:
        return self.graph.successors(node)

    def reverse_postorder(self) -> list[Node]:
        """Nodes in reverse post-order from ENTRY (unreachable blocks last, in text order)."""
        order = list(digraph.dfs_postorder_nodes(self.graph, ENTRY))
        order.reverse()
        seen = set(order)
        order.extend(n for n in self.blocks if n not in seen)
        return order


_TERMINATORS = {"bra", "brx", "ret", "exit", "trap"}


def _target(inst: Instruction) -> str | None:
    for o in inst.operands:
        if isinstance(o, Sym):
            return o.name
    return None


def build_cfg(fn: Function) -> CFG:
    """Build the CFG of ``fn``.  Never raises: a branch to an unknown label goes to EXIT and is recorded in
    ``unresolved``."""
    insts = fn.instructions
    n = len(insts)
    leaders = {0} if n else set()
    for idx in fn.labels.values():
        if idx < n:
            leaders.add(idx)
    for i, inst in enumerate(insts):
        if inst.op in _TERMINATORS and i + 1 < n:
            leaders.add(i + 1)
    starts = sorted(leaders)
    label_at: dict[int, str] = {}
    for name, idx in fn.labels.items():
        label_at.setdefault(idx, name)
    blocks: dict[int, Block] = {}
    block_of = [0] * n
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else n
        b = Block(s, s, e, label_at.get(s), insts[s:e])
        blocks[s] = b
        for i in range(s, e):
            block_of[i] = s
    g: digraph.DiGraph[Node] = digraph.DiGraph()
    g.add_node(ENTRY)
    g.add_node(EXIT)
    g.add_node(ABORT)
    g.add_nodes_from(blocks)
    unresolved: list[Instruction] = []

    def block_for_label(name: str | None) -> Node | None:
        if name is None:
            return None
        idx = fn.labels.get(name)
        if idx is None:
            return None
        return block_of[idx] if idx < n else EXIT

    g.add_edge(ENTRY, starts[0] if starts else EXIT)
    for s in starts:
        b = blocks[s]
        last = insts[b.end - 1]
        fall = b.end if b.end < n else EXIT
        op = last.op
        guard = last.guard
        if op == "bra":
            tgt = block_for_label(_target(last))
            if tgt is None:
                unresolved.append(last)
                tgt = EXIT
            if guard is None:
                g.add_edge(s, tgt)
            else:
                g.add_edge(s, tgt, cond=(guard, True))
                if fall != tgt:
                    g.add_edge(s, fall, cond=(guard, False))
                else:
                    g[s][tgt].pop("cond", None)
        elif op == "brx":
            table = _target(last) if len(last.operands) > 1 else None
            names = fn.branch_targets.get(table or "")
            if not names:
                unresolved.append(last)  # TM901; the paths through it are not analysed (no edge to EXIT)
                g.add_edge(s, ABORT)
            for k, name in enumerate(names or ()):
                tgt = block_for_label(name)
                tgt = tgt if tgt is not None else EXIT
                if g.has_edge(s, tgt):
                    g[s][tgt]["cases"] = g[s][tgt].get("cases", ()) + (k,)
                else:
                    g.add_edge(s, tgt, cases=(k,))
            if guard is not None:
                g.add_edge(s, fall)
        elif op in ("ret", "exit", "trap"):
            g.add_edge(s, ABORT if op == "trap" else EXIT)
            if guard is not None:
                g.add_edge(s, fall)
        else:
            g.add_edge(s, fall)
    return CFG(fn, blocks, g, block_of, unresolved)


#: The virtual sink of the reversed CFG (``block_control_dependences``): the exit and the abort node post-dominate
#: through it.
_SINK = "sink"


def controlling_blocks(deps: dict[int, set[int]], block: int) -> Iterator[int]:
    """The branch blocks ``block`` is control dependent on, transitively (``deps``: ``block_control_dependences``),
    each once, nearest first along each chain; a caller may stop at the first that matters."""
    seen: set[int] = set()
    work = list(deps.get(block, ()))
    while work:
        b = work.pop()
        if b in seen:
            continue
        seen.add(b)
        yield b
        work.extend(deps.get(b, ()))


def block_control_dependences(cfg: CFG) -> dict[int, set[int]]:
    """Block id → the branch block ids it is directly control dependent on (Ferrante, Ottenstein, Warren 1987, via
    post-dominators): ``b`` depends on ``a`` when an edge of ``a`` leads to a block ``b`` post-dominates and ``b``
    does not post-dominate ``a``.  Not cached: ``control.control_dependences`` caches it per function."""
    g = cfg.graph
    rev: digraph.DiGraph[Node] = digraph.DiGraph()
    rev.add_nodes_from(g.nodes)
    rev.add_node(_SINK)
    rev.add_edges_from((v, u) for u, v in g.edges)
    rev.add_edge(_SINK, EXIT)
    rev.add_edge(_SINK, ABORT)
    # nodes that cannot reach an exit (infinite loops) post-dominate nothing; tie them to the sink
    reach = digraph.descendants(rev, _SINK) | {_SINK}
    for m in list(g.nodes):
        if m not in reach:
            rev.add_edge(_SINK, m)
    ipdom = digraph.immediate_dominators(rev, _SINK)
    deps: dict[int, set[int]] = {n: set() for n in cfg.blocks}
    for a, s in g.edges:
        if not isinstance(a, int) or a not in cfg.blocks:  # block ids are ints, ENTRY/EXIT/ABORT strings
            continue
        stop = ipdom.get(a)
        n: Node | None = s
        guard = 0
        while n is not None and n != stop and n != _SINK and guard < 100000:
            guard += 1
            if isinstance(n, int) and n in deps:
                deps[n].add(a)
            nxt = ipdom.get(n)
            if nxt == n:
                break
            n = nxt
    return deps
