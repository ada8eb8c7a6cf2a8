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
from tmemlint.analysis.cfg import ENTRY, Node, block_control_dependences, controlling_blocks
from tmemlint.analysis.threads import normalize
from tmemlint.analysis.values import TOP, Const, Tid, used_regs
from tmemlint.ir import Instruction, Operand, Reg

if TYPE_CHECKING:  # pragma: no cover
    from tmemlint.analysis.context import AnalysisContext as FunctionContext
    from tmemlint.analysis.threads import WarpClass

S = TypeVar("S")
"""A state of ``must_state``'s dataflow (any value its ``transfer`` and ``meet`` take and give)."""


def control_dependences(ctx: "FunctionContext") -> dict[int, set[int]]:
    """Block id → set of branch block ids it is directly control dependent on (cached on ``ctx``)."""
    cached = ctx.control_caches.control_deps
    if cached is not None:
        return cached
    deps = block_control_dependences(ctx.cfg)
    ctx.control_caches.control_deps = deps
    return deps


def _lane_varying(ctx: "FunctionContext", inst: Instruction, reg: Reg) -> bool:
    """Whether predicate ``reg`` at ``inst`` is a thread predicate (``("tid", e)``) that some warp class does not
    decide: it may differ between the lanes of one warp."""
    v = ctx.values.reg_value(inst, reg)
    if v is TOP:
        return False
    key = normalize(v)[0]
    if type(key) is not Tid:
        return False
    return any(k.decide(key.expr) is None for k in ctx.threads.classes)


def _decided(ctx: "FunctionContext", inst: Instruction, reg: Reg, klass: "WarpClass") -> bool | None:
    """The value of predicate ``reg`` at ``inst`` on every thread of warp class ``klass``, None when it is not a
    thread predicate the class decides."""
    v = ctx.values.reg_value(inst, reg)
    if v is TOP:
        return None
    positive, pol = normalize(v)  # the positive form and whether v is it (True) or its negation
    key = positive
    d = klass.decide(key.expr) if type(key) is Tid else None
    return d if d is None or pol else not d


def class_blocks(ctx: "FunctionContext", klass: "WarpClass") -> set[Node]:
    """Blocks the threads of warp class ``klass`` can reach: from the entry, a guarded branch whose predicate the
    class decides is followed on its decided side only (cached on ``ctx``)."""
    cache = ctx.control_caches.class_blocks
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
    for b in controlling_blocks(deps, home):
        last = blocks[b].instructions[-1]
        if last.guard is not None and _lane_varying(ctx, last, last.guard.reg) and any(
                b in class_blocks(ctx, k) and _decided(ctx, last, last.guard.reg, k) is None
                and _class_avoids(ctx, k, b, home) for k in reaching):
            return last, f"the branch at line {last.span.line}, whose condition differs between lanes of a warp"
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
    got = ctx.control_caches.reach_bits
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
    ctx.control_caches.reach_bits = (bit, reach)
    return bit, reach


def block_descendants(ctx: "FunctionContext", b: Node) -> set[int]:
    """Blocks reachable from block ``b``, ``b`` itself excluded (cached on ``ctx``)."""
    cache = ctx.control_caches.descendants
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


#: Special registers whose value is a function of the thread's lane only (PTX ISA §10.3 ``%laneid``, §10.4-10.8
#: ``%lanemask_*``): the same in lane ``l`` of every warp.
_LANE_SREGS = ("%laneid", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt")

#: A warp's full member mask (``membermask`` of ``vote.sync``/``shfl.sync``/``redux.sync``): every lane takes part.
_FULL_MASK = (-1, 0xFFFFFFFF)


def _const(ctx: "FunctionContext", inst: Instruction, op: Operand) -> int | None:
    """The integer value of operand ``op`` of ``inst`` when the value analysis knows it (an immediate, or a register
    set to a constant: nvcc's ``mov.b32 %r1114, -1`` before ``vote.sync.ballot.b32 %r68, %p118, %r1114``)."""
    v = ctx.values.value(inst, op)
    return v.value if type(v) is Const and isinstance(v.value, int) else None


def _warp_reduction_operands(ctx: "FunctionContext", inst: Instruction) -> tuple[list[Operand], Operand | None] | None:
    """``(value operands, source-lane operand)`` of a full-warp exchange whose result is one value for the whole warp,
    a function of the lanes' operands only: ``vote.sync.{ballot,any,all,uni}`` and ``redux.sync`` with ``membermask``
    -1 (PTX ISA §9.7.13.11 vote.sync: the ballot "copies the predicate from each thread … into the corresponding bit
    position of destination register d" in every participating thread; §9.7.13.13 redux.sync), and ``shfl.sync.idx``
    with ``c`` = 31 (no sub-segments, clamp 31: every lane reads lane ``b[4:0]``, §9.7.9.6 shfl.sync) and
    ``membermask`` -1, whose result is the source lane's value when ``b`` is one value for the warp; None for any
    other instruction."""
    ops = inst.operands
    if inst.op in ("vote", "redux") and "sync" in inst.parts and len(ops) == 3 \
            and _const(ctx, inst, ops[2]) in _FULL_MASK:
        return [ops[1]], None
    if inst.op == "shfl" and "sync" in inst.parts and "idx" in inst.parts and len(ops) == 5 \
            and _const(ctx, inst, ops[3]) == 31 and _const(ctx, inst, ops[4]) in _FULL_MASK:
        return [ops[1]], ops[2]
    return None


def _operand_defs(ctx: "FunctionContext", inst: Instruction, ops: list[Operand]) -> set[int]:
    """The definitions (instruction indices) of the registers among ``ops`` that reach ``inst``."""
    out: set[int] = set()
    for o in ops:
        if isinstance(o, Reg):
            out.update(ctx.values.reaching_defs(inst, o.name))
    return out


def _moves_sreg(inst: Instruction, names: tuple[str, ...]) -> bool:
    """Whether ``inst`` is ``mov`` of one of the special registers ``names``."""
    src = inst.operands[1] if inst.op == "mov" and len(inst.operands) == 2 else None
    return isinstance(src, Reg) and src.name in names


def _lane_mask_of_tid(ctx: "FunctionContext", inst: Instruction) -> bool:
    """Whether ``inst`` is ``and d, t, m`` with ``t`` the thread's ``%tid.x`` (its ``mov``) and ``0 <= m < 32``: with a
    CTA whose x extent is a multiple of 32 (or whose y and z extents are 1), ``%tid.x & m`` is ``%laneid & m``, the
    same in lane ``l`` of every warp (PTX ISA §10.1 ``%tid``, §10.3 ``%laneid``)."""
    if inst.op != "and" or len(inst.operands) != 3:
        return False
    dims = ctx.function.threads_per_cta()
    if dims is None or (dims[0] % 32 != 0 and dims[1] * dims[2] != 1):
        return False
    a, b = inst.operands[1], inst.operands[2]
    if not isinstance(a, Reg):
        a, b = b, a
    m = _const(ctx, inst, b)
    if m is None or not 0 <= m < 32 or not isinstance(a, Reg):
        return False
    defs = ctx.values.reaching_defs(inst, a.name)
    insts = ctx.function.instructions
    return bool(defs) and all(_moves_sreg(insts[d], ("%tid.x",)) for d in defs)


def divergent_defs(ctx: "FunctionContext") -> frozenset[int]:
    """Instruction indices of the definitions whose value may differ between the threads of the CTA: those of
    ``ValueAnalysis.nonuniform_defs`` (per-thread sources and what reads them), plus the definitions of a register
    with several definitions placed under a branch whose condition may differ between threads (a flag set on the
    ``threadIdx.x == 0`` path only, ``mov.pred %p, 0`` … ``@!%p bra`` … ``mov.pred %p, -1``: the value at the join
    differs per lane, Kennedy-Allen's divergence by sync dependence), and, to a fixed point, every definition that
    reads one of them (cached on ``ctx``).

    A full-warp exchange (``_warp_reduction_operands``: a ``vote.sync`` ballot, ``redux.sync``, ``shfl.sync.idx``
    from a source lane that is one value for the CTA) of values that are the same in lane ``l`` of every warp
    (``_warp_specific``: built from launch data and the lane index only, CUTLASS's grouped-GEMM scheduler, where
    lane ``l`` reads group ``l``'s problem shape and a ballot picks the group of the tile) gives one value for the
    whole CTA: it and what reads it are not divergent for that."""
    cached = ctx.control_caches.divergent_defs
    if cached is not None:
        return cached

    va = ctx.values
    insts = ctx.function.instructions
    blocks = ctx.cfg.blocks
    deps = control_dependences(ctx)
    nonuniform = {d for d, _ in va.nonuniform_defs()}
    readers: dict[str, list[int]] = {}
    for inst in insts:
        if va.defined_by(inst.index):
            for r in used_regs(inst):
                readers.setdefault(r.name, []).append(inst.index)
    multi = {inst.index for inst in insts for r in va.defined_by(inst.index) if not va.has_one_def(r.name)}

    def inputs(idx: int) -> set[int]:
        inst = insts[idx]
        return {d for r in used_regs(inst) for d in va.reaching_defs(inst, r.name)}

    # the per-thread sources: non-uniform definitions that read no non-uniform definition
    sources = {d for d in nonuniform if not inputs(d) & nonuniform}
    exchanges = {i.index: got for i in insts if (got := _warp_reduction_operands(ctx, i)) is not None}

    def under_divergent_branch(idx: int, divergent: set[int]) -> bool:
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
                    d in divergent for d in va.reaching_defs(last, g.reg.name))):
                return True
            work.extend(deps.get(b, ()))
        return False

    def closure(seeds: set[int], blocked: set[int], stops: Callable[[int], bool]) -> set[int]:
        """``seeds`` and, to a fixed point, the readers of a member (but ``blocked`` ones and those ``stops``
        accepts) and the definitions of ``multi`` under a branch whose guard reads a member."""
        out = set(seeds)
        changed = True
        while changed:
            changed = False
            for idx in sorted(multi - out - blocked):
                if under_divergent_branch(idx, out):
                    out.add(idx)
                    changed = True
            work = list(out)
            while work:
                d = work.pop()
                for r in va.defined_by(d):
                    for u in readers.get(r.name, ()):
                        if u not in out and u not in blocked and not stops(u) \
                                and d in va.reaching_defs(insts[u], r.name):
                            out.add(u)
                            work.append(u)
                            changed = True
        return out

    source_lanes = {x: [lane] for x, (_, lane) in exchanges.items() if lane is not None}
    reductions: set[int] = set()
    if exchanges:
        # warp-specific: may differ between lane l of one warp and lane l of another (the warp index, per-thread
        # results of atomics or barriers); a lane index and what launch data it selects are not
        seeds_w = {d for d in sources - set(exchanges) if not _moves_sreg(insts[d], _LANE_SREGS)}
        warp_specific = closure(seeds_w, set(), lambda u: _lane_mask_of_tid(ctx, insts[u]))
        reductions = {x for x, (vals, _) in exchanges.items()
                      if x not in warp_specific and not _operand_defs(ctx, insts[x], vals) & warp_specific}
    while True:
        out = closure(sources - reductions, reductions, lambda u: False)
        # a shfl's source lane must be one value for the CTA as well (greatest fixed point: a lane picked by a
        # ballot of the same kind)
        keep = {x for x in reductions if not _operand_defs(ctx, insts[x], source_lanes.get(x, [])) & out}
        if keep == reductions:
            break
        reductions = keep
    hit = ctx.control_caches.divergent_defs = frozenset(out)
    return hit


def natural_loops(ctx: "FunctionContext") -> list[frozenset[Node]]:
    """The natural loops of the CFG: for each header (a block that dominates a predecessor, the source of a back
    edge), the blocks that reach one of its back edges' sources without passing through the header, with the
    header (Aho, Lam, Sethi, Ullman §9.6.6); loops with one header are merged.  Cached on ``ctx``."""
    got = ctx.control_caches.natural_loops
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
    got = ctx.control_caches.natural_loops = [frozenset(b) for b in bodies.values()]
    return got
