"""Control dependence (Ferrante, Ottenstein, Warren 1987, via post-dominators) and a generic forward must
dataflow over the CFG.

``lane_varying_controls`` answers TM109: is an instruction executed under a predicate that differs between the
lanes of a warp (its own guard, or a branch it is control dependent on, transitively)?
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from tmemlint.analysis import digraph
from tmemlint.analysis.cfg import ABORT, ENTRY, EXIT, Node
from tmemlint.analysis.threads import normalize
from tmemlint.analysis.values import TOP, used_regs
from tmemlint.ir import Instruction, Reg

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.analysis.context import AnalysisContext as FunctionContext
    from tmemlint.analysis.threads import WarpClass

S = TypeVar("S")
"""A state of ``must_state``'s dataflow (any value its ``transfer`` and ``meet`` take and give)."""

_SINK = "sink"


def control_dependences(ctx: "FunctionContext") -> dict[int, set[int]]:
    """Block id → set of branch block ids it is directly control dependent on (cached on ``ctx``)."""
    cached: dict[int, set[int]] | None = ctx.__dict__.get("_control_deps")
    if cached is not None:
        return cached
    g = ctx.cfg.graph
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
    deps: dict[int, set[int]] = {n: set() for n in ctx.cfg.blocks}
    for a, s in g.edges:
        if not isinstance(a, int) or a not in ctx.cfg.blocks:  # block ids are ints, ENTRY/EXIT/ABORT strings
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
    ctx.__dict__["_control_deps"] = deps
    return deps


def _lane_varying(ctx: "FunctionContext", inst: Instruction, reg: Reg) -> bool:
    """Whether predicate ``reg`` at ``inst`` is a thread predicate (``("tid", e)``) that some warp class does not
    decide: it may differ between the lanes of one warp."""
    v = ctx.values.reg_value(inst, reg)
    if v is TOP:
        return False
    key = normalize(v)[0]
    if key[0] != "tid":
        return False
    return any(k.decide(key[1]) is None for k in ctx.threads.classes)


def _decided(ctx: "FunctionContext", inst: Instruction, reg: Reg, klass: "WarpClass") -> bool | None:
    """The value of predicate ``reg`` at ``inst`` on every thread of warp class ``klass``, None when it is not a
    thread predicate the class decides."""
    v = ctx.values.reg_value(inst, reg)
    if v is TOP:
        return None
    positive, pol = normalize(v)  # the positive form and whether v is it (True) or its negation
    key = positive
    d = klass.decide(key[1]) if key[0] == "tid" else None
    return d if d is None or pol else not d


def class_blocks(ctx: "FunctionContext", klass: "WarpClass") -> set[Node]:
    """Blocks the threads of warp class ``klass`` can reach: from the entry, a guarded branch whose predicate the
    class decides is followed on its decided side only (cached on ``ctx``)."""
    cache: dict[int, set[Node]] = ctx.__dict__.setdefault("_class_blocks", {})
    got = cache.get(id(klass))
    if got is not None:
        return got
    g = ctx.cfg.graph
    seen: set[Node] = set()
    work: list[Node] = [ENTRY]
    while work:
        n = work.pop()
        if n in seen:
            continue
        seen.add(n)
        for s in g.successors(n):
            cond = g[n][s].get("cond")
            if cond is not None and isinstance(n, int):  # a conditional edge leaves a block
                guard, taken = cond
                d = _decided(ctx, ctx.cfg.blocks[n].instructions[-1], guard.reg, klass)
                if d is not None and (d != guard.negated) != taken:
                    continue
            work.append(s)
    cache[id(klass)] = seen
    return seen


def _class_avoids(ctx: "FunctionContext", klass: "WarpClass", start: Node, home: Node) -> bool:
    """Whether a thread of warp class ``klass`` can go from block ``start`` to the kernel's exit without passing
    block ``home`` (branches the class decides followed on their decided side only, as ``class_blocks``).  When it
    cannot, every lane that leaves ``start`` reaches ``home``, whichever side of a lane-varying branch it took:
    nvcc merges ``if (tid == 0) init();`` into the block of ``if (warp == 0) alloc();``, and lane 0 reaches the
    alloc through the init while lanes 1-31 come the other way."""
    g = ctx.cfg.graph
    seen: set[Node] = {home}
    work: list[Node] = [start]
    while work:
        n = work.pop()
        if n in seen:
            continue
        seen.add(n)
        if not isinstance(n, int) or n not in ctx.cfg.blocks:
            return True  # the exit (or an abort)
        for s in g.successors(n):
            cond = g[n][s].get("cond")
            if cond is not None and isinstance(n, int):  # a conditional edge leaves a block
                guard, taken = cond
                d = _decided(ctx, ctx.cfg.blocks[n].instructions[-1], guard.reg, klass)
                if d is not None and (d != guard.negated) != taken:
                    continue
            work.append(s)
    return False


def lane_varying_controls(ctx: "FunctionContext", inst: Instruction) -> tuple[Instruction, str] | None:
    """``(instruction, description)`` of a lane-varying condition ``inst`` executes under, or None.  A branch
    counts only for the warp classes that reach both it and ``inst`` (``class_blocks``): under ``if (warp == 0 &&
    elect_one()) … else if (warp == 1) alloc``, warp 1 never meets the lane-varying elect."""
    if inst.guard is not None and _lane_varying(ctx, inst, inst.guard.reg):
        return inst, f"its guard @{'!' if inst.guard.negated else ''}{inst.guard.reg.name}, which differs " \
                     f"between lanes of a warp"
    deps = control_dependences(ctx)
    blocks = ctx.cfg.blocks
    home = ctx.cfg.block_of[inst.index]
    reaching = [k for k in ctx.threads.classes if home in class_blocks(ctx, k)]
    seen: set[int] = set()
    work = list(deps.get(ctx.cfg.block_of[inst.index], ()))
    while work:
        b = work.pop()
        if b in seen:
            continue
        seen.add(b)
        last = blocks[b].instructions[-1]
        if last.guard is not None and _lane_varying(ctx, last, last.guard.reg) and any(
                b in class_blocks(ctx, k) and _decided(ctx, last, last.guard.reg, k) is None
                and _class_avoids(ctx, k, b, home) for k in reaching):
            return last, f"the branch at line {last.span.line}, whose condition differs between lanes of a warp"
        work.extend(deps.get(b, ()))
    return None


def _and(a: S, b: S) -> S:
    """``a and b``: ``must_state``'s default meet (for boolean states: a fact holds at a join when it holds on
    every incoming path)."""
    return a and b


def must_state(ctx: "FunctionContext", transfer: Callable[[S, Instruction], S], init: S,
               meet: Callable[[S, S], S] = _and,
               relevant: Callable[[Instruction], bool] | None = None) -> dict[int, S]:
    """Forward must-dataflow over the CFG (guards ignored: a guarded instruction may run).  ``transfer(state,
    inst)`` gives the state after ``inst``; states meet with ``meet`` at joins; the entry state is ``init``.
    ``relevant(inst)``, when given, says which instructions ``transfer`` can change the state at (the others
    are skipped).  Returns instruction index → state before it (instructions in unreachable blocks are
    absent)."""
    cfg = ctx.cfg
    order = [n for n in cfg.reverse_postorder() if isinstance(n, int) and n in cfg.blocks]
    if relevant is not None:
        moves = {n: [i for i in cfg.blocks[n].instructions if relevant(i)] for n in order}
    else:
        moves = {n: cfg.blocks[n].instructions for n in order}
    preds = {n: [p for p in cfg.graph.predecessors(n) if p in cfg.blocks or p == ENTRY] for n in order}
    out: dict[Node, S] = {}

    def entry(n: int) -> "S | _Missing":
        """The meet of the states flowing into block ``n`` (``_MISSING`` when no predecessor is computed)."""
        ins = [init if p == ENTRY else out[p] for p in preds[n] if p == ENTRY or p in out]
        if not ins:
            return _MISSING
        st = ins[0]
        for x in ins[1:]:
            st = meet(st, x)
        return st

    # a block whose predecessors' states have not changed since it was last computed would compute the same state
    # again (``transfer`` and ``meet`` are functions of their arguments): it is skipped, so a round costs the
    # blocks whose input changed, and the rounds and their states are those of recomputing every block
    version: dict[Node, int] = {n: 0 for n in order}
    seen: dict[Node, tuple[int, ...]] = {}
    # each block's latest computation: its entry state and the state after each of its ``moves``; the final pass
    # below reuses them when the block's entry state is equal to that entry (the same states, ``transfer`` being a
    # function of its arguments), instead of running every transfer once more
    last: dict[Node, list[S]] = {}
    changed = True
    rounds = 0
    while changed and rounds < 100:
        changed = False
        rounds += 1
        for n in order:
            stamp = tuple(version[p] if p != ENTRY else -1 for p in preds[n] if p == ENTRY or p in out)
            if seen.get(n) == stamp:
                continue
            seen[n] = stamp
            got = entry(n)
            if isinstance(got, _Missing):
                continue
            st = got
            trace = [st]  # the entry state, then the state after each of ``moves``
            for inst in moves[n]:
                st = transfer(st, inst)
                trace.append(st)
            last[n] = trace
            if out.get(n, _MISSING) != st:
                out[n] = st
                version[n] += 1
                changed = True
    before: dict[int, S] = {}
    for n in order:
        got = entry(n)
        if isinstance(got, _Missing):
            continue
        st = got
        kept = last.get(n)
        if kept is not None and kept[0] == st:
            j = 0
            for inst in cfg.blocks[n].instructions:
                before[inst.index] = kept[j]
                if relevant is None or relevant(inst):
                    j += 1
            continue
        if relevant is None:
            for inst in cfg.blocks[n].instructions:
                before[inst.index] = st
                st = transfer(st, inst)
            continue
        for inst in cfg.blocks[n].instructions:
            before[inst.index] = st
            if relevant(inst):
                st = transfer(st, inst)
    return before


class _Missing(enum.Enum):
    """The state of a block none of whose predecessors is computed yet (distinct from every state)."""

    MISSING = 0


_MISSING = _Missing.MISSING


def reach_bits(ctx: "FunctionContext") -> tuple[dict[Node, int], dict[Node, int]]:
    """``(block → bit, block → bitset of the other blocks reachable from it)``, for every block at once: one pass
    over the strongly connected components in reverse topological order (cached on ``ctx``)."""
    got: tuple[dict[Node, int], dict[Node, int]] | None = ctx.__dict__.get("_reach_bits")
    if got is not None:
        return got
    g = ctx.cfg.graph
    bit = {n: 1 << i for i, n in enumerate(g.nodes)}
    cond = digraph.condensation(g)
    members: dict[Node, int] = cond.graph["mapping"]  # node → component
    comp_nodes: dict[int, list[Node]] = {}
    for n, c in members.items():
        comp_nodes.setdefault(c, []).append(n)
    inside = {c: sum(bit[n] for n in ns) for c, ns in comp_nodes.items()}
    below: dict[int, int] = {}  # component → bitset of nodes reachable from it by at least one edge
    for c in reversed(list(digraph.topological_sort(cond))):
        acc = 0
        for d in cond.successors(c):
            acc |= inside[d] | below[d]
        ns = comp_nodes[c]
        if len(ns) > 1 or any(g.has_edge(n, n) for n in ns):  # a cycle: its nodes reach each other
            acc |= inside[c]
        below[c] = acc
    reach = {n: below[members[n]] & ~bit[n] for n in g.nodes}  # as digraph.descendants: never the block itself
    ctx.__dict__["_reach_bits"] = (bit, reach)
    return bit, reach


def block_descendants(ctx: "FunctionContext", b: Node) -> set[int]:
    """Blocks reachable from block ``b``, ``b`` itself excluded (cached on ``ctx``)."""
    cache: dict[Node, set[int]] = ctx.__dict__.setdefault("_descendants", {})
    got = cache.get(b)
    if got is None:
        bit, reach = reach_bits(ctx)
        r = reach[b]
        got = {n for n in ctx.cfg.blocks if r & bit[n]}
        cache[b] = got
    return got


def on_cycle(ctx: "FunctionContext", inst: Instruction) -> bool:
    """Whether ``inst`` can execute again after itself: its basic block lies on a CFG cycle (a loop)."""
    bit, reach = reach_bits(ctx)
    b = ctx.cfg.block_of[inst.index]
    return any(s == b or reach.get(s, 0) & bit[b] for s in ctx.cfg.graph.successors(b))


def can_reach(ctx: "FunctionContext", a: Instruction, b: Instruction) -> bool:
    """Whether ``b`` can execute after ``a`` on some CFG path (guards ignored)."""
    ba = ctx.cfg.block_of[a.index]
    bb = ctx.cfg.block_of[b.index]
    if ba == bb and a.index < b.index:
        return True
    bit, reach = reach_bits(ctx)
    if ba == bb:  # ``b`` at or before ``a`` in one block: again only around a cycle through the block
        return any(s == ba or reach.get(s, 0) & bit[ba] for s in ctx.cfg.graph.successors(ba))
    return bool(reach[ba] & bit[bb])


def divergent_defs(ctx: "FunctionContext") -> frozenset[int]:
    """Instruction indices of the definitions whose value may differ between the threads of a warp: those of
    ``ValueAnalysis.nonuniform_defs`` (per-thread sources and what reads them), plus the definitions of a register
    with several definitions placed under a branch whose condition may differ between threads (a flag set on the
    ``threadIdx.x == 0`` path only, ``mov.pred %p, 0`` … ``@!%p bra`` … ``mov.pred %p, -1``: the value at the join
    differs per lane, Kennedy-Allen's divergence by sync dependence), and, to a fixed point, every definition that
    reads one of them (cached on ``ctx``)."""
    cached: frozenset[int] | None = ctx.__dict__.get("_divergent_defs")
    if cached is not None:
        return cached

    va = ctx.values
    insts = ctx.function.instructions
    blocks = ctx.cfg.blocks
    deps = control_dependences(ctx)
    out: set[int] = {d for d, _ in va.nonuniform_defs()}
    readers: dict[str, list[int]] = {}
    for inst in insts:
        if va.defined_by(inst.index):
            for r in used_regs(inst):
                readers.setdefault(r.name, []).append(inst.index)
    multi = {inst.index for inst in insts for r in va.defined_by(inst.index) if not va.has_one_def(r.name)}

    def under_divergent_branch(idx: int) -> bool:
        seen: set[int] = set()
        work = list(deps.get(ctx.cfg.block_of[idx], ()))
        while work:
            b = work.pop()
            if b in seen:
                continue
            seen.add(b)
            last = blocks[b].instructions[-1]
            g = last.guard
            if g is not None and (g.reg.name.startswith("%tid") or any(
                    d in out for d in va.reaching_defs(last, g.reg.name))):
                return True
            work.extend(deps.get(b, ()))
        return False

    changed = True
    while changed:
        changed = False
        for idx in sorted(multi - out):
            if under_divergent_branch(idx):
                out.add(idx)
                changed = True
        work = list(out)
        while work:
            d = work.pop()
            for r in va.defined_by(d):
                for u in readers.get(r.name, ()):
                    if u not in out and d in va.reaching_defs(insts[u], r.name):
                        out.add(u)
                        work.append(u)
                        changed = True
    hit = ctx.__dict__["_divergent_defs"] = frozenset(out)
    return hit


def natural_loops(ctx: "FunctionContext") -> list[frozenset[Node]]:
    """The natural loops of the CFG: for each header (a block that dominates a predecessor, the source of a back
    edge), the blocks that reach one of its back edges' sources without passing through the header, with the
    header (Aho, Lam, Sethi, Ullman §9.6.6); loops with one header are merged.  Cached on ``ctx``."""
    got: list[frozenset[Node]] | None = ctx.__dict__.get("_natural_loops")
    if got is not None:
        return got
    g = ctx.cfg.graph
    idom = digraph.immediate_dominators(g, ENTRY)

    def dominates(h: Node, n: Node | None) -> bool:
        while n is not None:
            if n == h:
                return True
            up = idom.get(n)
            if up == n:
                return False
            n = up
        return False

    bodies: dict[Node, set[Node]] = {}
    for a, h in g.edges:
        if a in idom and dominates(h, a):
            body = bodies.setdefault(h, {h})
            work = [a]
            while work:
                n = work.pop()
                if n in body:
                    continue
                body.add(n)
                work.extend(g.predecessors(n))
    got = ctx.__dict__["_natural_loops"] = [frozenset(b) for b in bodies.values()]
    return got
