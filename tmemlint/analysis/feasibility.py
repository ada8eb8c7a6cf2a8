"""Path feasibility and counted-loop values the abstract domains cannot decide, asked of an SMT solver (z3).

Three questions, each asked only where the engine's own domains leave it undecided:

* ``Feasibility.prune``: of the two outcomes of a branch that the path facts (``analysis.threads``) leave open,
  is each one satisfiable together with the facts of its path?  A guard correlated with a loop's exit test
  (``if (k == 3) bar.sync`` in a loop that runs while ``k + 1 < 4``) is decided here: the facts ``k != 3`` and
  ``!(k + 1 < 4)`` contradict the values the induction variable ``k`` takes.
* ``Feasibility.loop_values``: the values a counted loop's induction variable holds where the loop body reads it
  (``c = 0; c < 160; c += 32`` gives {0, 32, 64, 96, 128}), bounded to ``MAX_ITERATIONS`` iterations; the value
  sets of ``analysis.regions`` widen such a register to unknown.
* ``Feasibility.pair_invariant``: does a predicate on the CTA's identity have the same truth value in both CTAs of
  a CTA pair (``%ctaid.x`` = 2j and 2j+1)?  DeepGEMM's persistent tile loop ``ctaid.x < ceil(M/128)*32`` does
  (an even bound), ``ctaid.x < ceil(M/128)`` need not.

Registers are bit-vectors of their PTX widths (PTX ISA §5.2.2; integer arithmetic wraps, §9.7.1), comparisons are
signed or unsigned as the ``setp`` type says (§9.7.3.1 ``setp``).  What the translation cannot follow becomes a
free variable named after its value, so equal values of the value analysis are equal terms and nothing else is
assumed: an answer of "unsatisfiable" is a proof for the model, any other answer (satisfiable, unknown, a solver
timeout of ``TIMEOUT_MS``) keeps the engine's own answer.

The induction variable of a natural loop (Aho, Lam, Sethi, Ullman §9.6.6) ``L`` is a register with exactly two
definitions, one before ``L`` (``init``) and one in ``L`` (``step``: ``add``/``sub`` of a constant), in a loop
with one back edge whose source ends in a conditional branch on a ``setp`` of the stepped value.  At the header it
holds ``init`` or a stepped value that passed the back-edge test: ``k == init or test(k)``.  Values of the current
iteration are related only through definitions that dominate the query point inside an innermost loop (each then
ran exactly once since the header was last entered); every other in-loop value stays a free variable.

z3 is imported on the first question (its import costs 50-100 ms): a run that asks nothing never loads it.
"""

from __future__ import annotations

import importlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from tmemlint import profile
from tmemlint.analysis import digraph
from tmemlint.analysis.cfg import CFG, ENTRY, Node
from tmemlint.analysis.cluster import CTA_IDENTITY_SREGS, mentions_identity
from tmemlint.analysis.threads import Facts, GuardOracle, normalize
from tmemlint.analysis.values import (TOP, Cmp, Const, ConstSet, Op, Opaque, PAnd, Param, PNot, POr, SReg, Value,
                                      ValueAnalysis, int_type, is_value, opaque, opaque_deps)
from tmemlint.ir import Imm, Instruction, Reg

#: Solver time per query (milliseconds); a query that runs out answers "unknown".  A backstop: ``RLIMIT`` binds
#: first on an unloaded machine, and it does not depend on the load.
TIMEOUT_MS = 200
#: z3 resource units per query (its ``rlimit``, counted from the query's start): a bound on the work of a check that
#: gives the same answer on every machine and at every load (a check of the fixtures' queries takes a few hundred).
RLIMIT = 1_000_000
#: Satisfiability checks per function; later ones answer "unknown" (the engine's own answer), bounding the cost.
MAX_QUERIES = 64
#: Most iterations of a counted loop that ``loop_values`` enumerates before it answers "unknown".
MAX_ITERATIONS = 64
#: Pair-invariance checks (``pair_invariant``) per function, counted among its ``MAX_QUERIES`` as well; later ones
#: answer "unknown" (not invariant).
MAX_PAIR_QUERIES = 32
#: Definitions ``_identity_free`` looks through (opaque values, merged registers) before it answers "not proven".
_IDENTITY_DEPTH = 6
#: Operations whose result is a function of their operands alone (no memory, no per-thread or per-CTA state): an
#: opaque value they compute is identity-free when their operands are.
_PURE = frozenset(("add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg", "mov", "cvt", "selp",
                   "setp", "min", "max", "div", "rem", "abs", "bfe", "bfi", "shf", "prmt", "popc", "clz", "brev",
                   "cnot", "lop3"))
#: The pair bit's registers per coordinate (``pair_invariant``): a CTA pair is two CTAs whose
#: ``%cluster_ctarank`` differs only in bit 0 (``#tcgen05-cta-pair``); with the power-of-two cluster shapes
#: ``cluster.PairRoles`` assumes, their ``%ctaid`` and ``%cluster_ctaid`` differ in bit 0 of one coordinate.
_PAIR_COORDS = ("x", "y", "z")
#: Nesting of a translated value (instructions expanded) before the rest becomes a free variable.
_MAX_DEPTH = 12
_ARITH = ("add", "sub", "mul", "shl", "shr", "and", "or", "xor", "mov", "neg", "not")
_CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
Outcomes = tuple[tuple[bool, Facts], ...]
"""``((taken, facts), …)``: the feasible outcomes of a branch (``paths.PropertySimulation._branch``)."""


@dataclass(slots=True)
class SolverCost:
    """What the solver was asked: ``queries`` (satisfiability checks and loop enumerations run), ``hits``
    (answered from the cache), ``seconds`` (wall time spent in z3, translation of the guards included),
    ``pruned`` (branch outcomes found infeasible), ``unknown`` (checks that ran out of ``TIMEOUT_MS`` or could not
    be translated), ``capped`` (branches left as the engine answered them because the function had used its
    ``MAX_QUERIES``)."""

    queries: int = 0
    hits: int = 0
    seconds: float = 0.0
    pruned: int = 0
    unknown: int = 0
    capped: int = 0

    def add(self, queries: int = 0, hits: int = 0, seconds: float = 0.0, pruned: int = 0, unknown: int = 0,
            capped: int = 0) -> None:
        """Count into this record (seconds: wall time)."""
        self.queries += queries
        self.hits += hits
        self.seconds += seconds
        self.pruned += pruned
        self.unknown += unknown
        self.capped += capped


#: Totals over every ``Feasibility`` of this process (the benchmark reads them).
TOTALS = SolverCost()


@dataclass(frozen=True, slots=True)
class Induction:
    """The induction variable ``reg`` of the natural loop with header ``header`` and body ``body``: defined before
    the loop at ``init`` and in it at ``step`` (``reg = reg ± delta``); the back edge leaves block ``latch``, whose
    last instruction ``branch`` goes back to the header when its guard is ``back_taken``."""

    reg: str
    header: Node
    body: frozenset[Node]
    init: int
    step: int
    delta: int
    width: int
    latch: Node
    branch: int
    back_taken: bool


@dataclass(slots=True)
class _Query:
    """One translation: the query point ``q`` (an instruction index), the side conditions of the induction
    variables met, the induction variables read, the values replaced by a term (``subst``), and ``previous``: a
    back-edge test, true of the previous iteration, whose in-loop values are not the current iteration's."""

    q: int
    side: list[Any] = field(default_factory=list)
    inductions: set[str] = field(default_factory=set)
    subst: dict[Value, Any] = field(default_factory=dict)
    previous: bool = False
    #: the free variables made (z3 name -> the value or predicate key it stands for; a fresh one is absent)
    free: dict[str, object] = field(default_factory=dict)


def _width(inst: Instruction, default: int = 32) -> int:
    """The bit width of ``inst``'s integer type (``add.s32``: 32, ``mul.wide.u32``: 64 for the result)."""
    ty = int_type(inst)
    if ty is None:
        return default
    w = int(ty[1:])
    return 2 * w if inst.has("wide") else w


class Feasibility:
    """The solver's questions for one function (see the module docstring), with their answers cached: one per
    ``FunctionContext`` (its ``feasibility`` attribute)."""

    def __init__(self, cfg: CFG, va: ValueAnalysis) -> None:
        self.cfg = cfg
        self.va = va
        self.insts = va.insts
        self.cost = SolverCost()
        self._z3: Any = None
        self._loops: list[tuple[Node, frozenset[Node], list[Node]]] | None = None
        self._idom: dict[Node, Node] = {}
        self._looping: frozenset[Node] = frozenset()
        self._fresh = 0
        self._inductions: dict[str, Induction | None] = {}
        self._cmp_types: dict[Value, str | None] | None = None
        self._branch_ivs: dict[int, frozenset[str]] = {}
        self._prune_memo: dict[tuple[int, Outcomes], Outcomes] = {}
        self._record_memo: dict[tuple[int, Outcomes], Outcomes] = {}
        self._sat_memo: dict[tuple[int, Facts], bool | None] = {}
        self._loop_values: dict[tuple[int, str], frozenset[int] | None] = {}
        self._pair_memo: dict[object, bool | None] = {}
        self._pair_queries = 0
        self._identity_memo: dict[object, bool] = {}
        #: registers whose values at some read ``loop_values`` answered (not None)
        self.answered: set[str] = set()

    # ---- structure --------------------------------------------------------------------------------------
    def _structure(self) -> list[tuple[Node, frozenset[Node], list[Node]]]:
        """``[(header, body, back-edge sources)]`` of the natural loops that contain no other loop's header."""
        if self._loops is None:
            g = self.cfg.graph
            self._idom = digraph.immediate_dominators(g, ENTRY)
            bodies: dict[Node, set[Node]] = {}
            latches: dict[Node, list[Node]] = {}
            for a, h in g.edges:
                if a in self._idom and self._dominates_node(h, a):
                    latches.setdefault(h, []).append(a)
                    body = bodies.setdefault(h, {h})
                    work = [a]
                    while work:
                        n = work.pop()
                        if n not in body:
                            body.add(n)
                            work.extend(g.predecessors(n))
            self._loops = [(h, frozenset(b), latches[h]) for h, b in bodies.items()
                           if not any(o != h and o in b for o in bodies)]
            self._looping = frozenset(n for b in bodies.values() for n in b)
        return self._loops

    def _dominates_node(self, a: Node, b: Node) -> bool:
        n: Node | None = b
        while n is not None:
            if n == a:
                return True
            up = self._idom.get(n)
            if up is None or up == n:
                return False
            n = up
        return False

    def _dominates(self, i: int, j: int) -> bool:
        """Whether instruction ``i`` dominates instruction ``j`` (runs before it on every path to it)."""
        bi, bj = self.cfg.block_of[i], self.cfg.block_of[j]
        if bi == bj:
            return i <= j
        return self._dominates_node(bi, bj)

    def _loop_of(self, i: int) -> tuple[Node, frozenset[Node], list[Node]] | None:
        b = self.cfg.block_of[i]
        return next((lp for lp in self._structure() if b in lp[1]), None)

    def _in_any_loop(self, i: int) -> bool:
        """Whether instruction ``i`` lies in a natural loop (innermost or not): it may run more than once."""
        self._structure()
        return self.cfg.block_of[i] in self._looping

    def induction(self, reg: str) -> Induction | None:
        """The counted-loop induction variable ``reg`` (see the module docstring), or None."""
        if reg in self._inductions:
            return self._inductions[reg]
        got = self._inductions[reg] = self._induction(reg)
        return got

    def _induction(self, reg: str) -> Induction | None:
        defs = [i for i, names in self.va.multi_def_writes.items() if reg in names]
        if len(defs) != 2:
            return None
        for init, step in (defs, defs[::-1]):
            lp = self._loop_of(step)
            if lp is None or self._in_any_loop(init) or len(lp[2]) != 1:
                continue
            header, body, (latch,) = lp
            s = self.insts[step]
            if s.op not in ("add", "sub") or len(s.operands) != 3:
                continue
            a, b = s.operands[1], s.operands[2]
            if not (type(a) is Reg and a.name == reg):
                continue
            k = self.va.value(s, b)
            if type(k) is not Const:
                continue
            delta = int(k.value) if s.op == "add" else -int(k.value)
            blk = self.cfg.blocks.get(latch) if isinstance(latch, int) else None
            if blk is None or not blk.instructions:
                continue
            br = blk.instructions[-1]
            if br.op != "bra" or br.guard is None or not self._dominates(step, br.index):
                continue
            if self.va.reach.get((br.index, reg), (step,)) != (step,):
                continue
            edge = self.cfg.graph[latch].get(header, {})
            cond = edge.get("cond") if isinstance(edge, dict) else None
            if cond is None:
                continue
            return Induction(reg, header, body, init, step, delta, _width(s), latch, br.index, bool(cond[1]))
        return None

    def _reads_header_value(self, iv: Induction, i: int) -> bool:
        """Whether the read of ``iv.reg`` at instruction ``i`` sees the value the register had at the loop header
        in the current iteration: ``i`` is in the loop and its ``step`` does not run before it in the iteration."""
        if self.cfg.block_of[i] not in iv.body:
            return False
        if set(self.va.reach.get((i, iv.reg), ())) != {iv.init, iv.step}:
            return False
        if i == iv.step:
            return True
        sb, ib = self.cfg.block_of[iv.step], self.cfg.block_of[i]
        if sb == ib:
            return i < iv.step
        g = self.cfg.graph
        seen: set[Node] = {sb}
        work: list[Node] = list(g.successors(sb))
        while work:
            n = work.pop()
            if n in seen or n == iv.header or n not in iv.body:
                continue
            if n == ib:
                return False
            seen.add(n)
            work.extend(g.successors(n))
        return True

    # ---- translation ------------------------------------------------------------------------------------
    def _solver(self) -> Any:
        if self._z3 is None:
            # lazy: only a run that asks a question pays for the import (z3 has no type information)
            prof = profile.ACTIVE if "z3" not in sys.modules else None
            if prof is not None:
                prof.push("solver_import")
            try:
                self._z3 = importlib.import_module("z3")
            finally:
                if prof is not None:
                    prof.pop()
        return self._z3

    def _cmp_type(self, key: Value) -> str | None:
        """The integer type of the ``setp`` instructions whose predicate is ``key`` (its canonical form), or None
        when there is none or they disagree in signedness."""
        if self._cmp_types is None:
            table: dict[Value, str | None] = {}
            for inst in self.insts:
                if inst.op != "setp" or not inst.operands or type(inst.operands[0]) is not Reg:
                    continue
                v = self.va.def_value.get((inst.index, inst.operands[0].name))
                if type(v) is not Cmp:
                    continue
                k = normalize(v)[0]
                ty = int_type(inst)
                table[k] = ty if table.get(k, ty) == ty else None
            self._cmp_types = table
        return self._cmp_types.get(key)

    def _var(self, name: object, w: int, qy: _Query | None = None) -> Any:
        """The free ``w``-bit variable of value ``name`` (equal values, equal variables), or a fresh one when
        ``name`` is None or, in a back-edge test, when the value may change from one iteration to the next."""
        z3 = self._solver()
        if name is None or (qy is not None and qy.previous and not self._invariant(name)):
            self._fresh += 1
            return z3.BitVec(f"f{self._fresh}_{w}", w)
        var = f"v{abs(hash((name, w)))}_{w}"
        if qy is not None:
            qy.free[var] = name
        return z3.BitVec(var, w)

    def _invariant(self, v: object) -> bool:
        """Whether value ``v`` is the same in every iteration of every loop: it depends on no definition in a
        loop (kernel parameters, constants, thread indices, definitions outside loops)."""
        if not (isinstance(v, tuple) and v and isinstance(v[0], str)):
            return False
        return all(isinstance(d, int) and 0 <= d < len(self.insts) and not self._in_any_loop(d)
                   for d in opaque_deps(v))

    def _fit(self, t: Any, w: int) -> Any:
        z3 = self._solver()
        tw = t.size()
        if tw == w:
            return t
        return z3.Extract(w - 1, 0, t) if tw > w else z3.ZeroExt(w - tw, t)

    def _allowed(self, i: int, qy: _Query) -> bool:
        """Whether definition ``i``'s latest execution may be expanded at the query point: outside every loop,
        or in the query point's innermost loop and dominating it (it ran in the current iteration)."""
        if not self._in_any_loop(i):
            return True
        if qy.q < 0:  # no query point (``pair_invariant``): an in-loop value is its own free variable
            return False
        lp = self._loop_of(qy.q)
        return lp is not None and self.cfg.block_of[i] in lp[1] and self._dominates(i, qy.q)

    def _term(self, v: Value, w: int, qy: _Query, depth: int = 0, at: int | None = None) -> Any:
        """``v`` as a ``w``-bit term (a free variable where the translation stops)."""
        z3 = self._solver()
        if v in qy.subst:
            return self._fit(qy.subst[v], w)
        if v is TOP or depth > _MAX_DEPTH:
            return self._var(None, w)
        match v:
            case Const(value=int() as k):
                return z3.BitVecVal(k % (1 << w), w)
            case Opaque(d=int() as d) if 0 <= d < len(self.insts) and self._allowed(d, qy):
                t = self._expand(self.insts[d], qy, depth + 1)
                if t is not None:
                    return self._fit(t, w)
            case Op(name="add" | "sub" | "mul" | "and" | "or" | "xor" | "shl" | "shr" as op, args=(x, y)):
                return _arith(z3, op, self._term(x, w, qy, depth + 1), self._term(y, w, qy, depth + 1), False)
            case Op(name="not", args=(x,)):
                return ~self._term(x, w, qy, depth + 1)
            case Op(name=str() as op, args=(x, y)) if op.startswith("mulhi.") and op[6] in "su" \
                    and op[7:].isdigit():
                n = int(op[7:])
                hi = _mul_hi(z3, self._term(x, n, qy, depth + 1), self._term(y, n, qy, depth + 1), op[6] == "s")
                return self._fit(hi, w)
        return self._var(v, w, qy)

    def _operand(self, inst: Instruction, k: int, w: int, qy: _Query, depth: int) -> Any:
        z3 = self._solver()
        o = inst.operands[k]
        if type(o) is Imm:
            return z3.BitVecVal(o.value % (1 << w), w)
        if type(o) is Reg:
            iv = self.induction(o.name)
            if iv is not None and self._reads_header_value(iv, inst.index) and self._allowed(inst.index, qy):
                x = self._header_value(iv, qy)
                if qy.previous:  # the iteration that came round: its header value was one step less
                    x = x - z3.BitVecVal(iv.delta % (1 << iv.width), iv.width)
                return self._fit(x, w)
            v = self.va.value(inst, o)
            if v is TOP:
                return self._var(None, w)
            if type(v) is Opaque and isinstance(v.d, int) and self._in_any_loop(v.d) and not self._dominates(
                    v.d, inst.index):
                return self._var(v, w, qy)  # a previous iteration's value
            return self._term(v, w, qy, depth, inst.index)
        return self._var(None, w)

    def _expand(self, inst: Instruction, qy: _Query, depth: int) -> Any:
        """The value ``inst`` computes (its latest execution), or None when not followed."""
        z3 = self._solver()
        op = inst.op
        if len(inst.operands) < 2 or type(inst.operands[0]) is not Reg:
            return None
        w = _width(inst)
        if op == "setp":
            if inst.guard is not None or len(inst.operands) != 3:
                return None
            cmp = next((p for p in inst.parts[1:] if p in _CMPS), None)
            ty = int_type(inst)
            if cmp is None or ty is None:
                return None
            a = self._operand(inst, 1, w, qy, depth)
            b = self._operand(inst, 2, w, qy, depth)
            return z3.If(_compare(z3, cmp, a, b, ty[0] == "s"), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
        if inst.guard is not None or op not in _ARITH or inst.has("wide"):
            return None
        if inst.has("hi"):
            ty = int_type(inst)
            if op != "mul" or ty is None or ty[0] not in "su" or len(inst.operands) != 3:
                return None
            return _mul_hi(z3, self._operand(inst, 1, w, qy, depth), self._operand(inst, 2, w, qy, depth),
                           ty[0] == "s")
        if op in ("mov", "neg", "not"):
            a = self._operand(inst, 1, w, qy, depth)
            return a if op == "mov" else (-a if op == "neg" else ~a)
        if len(inst.operands) != 3:
            return None
        a = self._operand(inst, 1, w, qy, depth)
        b = self._operand(inst, 2, w, qy, depth)
        return _arith(z3, op, a, b, inst.has("s32") or inst.has("s64"))

    def _header_value(self, iv: Induction, qy: _Query) -> Any:
        """The induction variable's value at the header in the current iteration, with its side condition."""
        z3 = self._solver()
        x = z3.BitVec(f"iv_{iv.reg}_{iv.step}", iv.width)
        if iv.reg not in qy.inductions and not qy.previous:
            qy.inductions.add(iv.reg)
            side = _Query(iv.branch, subst={opaque(iv.step): x}, previous=True)
            side.inductions.add(iv.reg)
            init = self._init_term(iv, side)
            test = self._back_test(iv, side)
            qy.side.append(x == init if test is None else z3.Or(x == init, test))
        return x

    def _init_term(self, iv: Induction, qy: _Query) -> Any:
        inst = self.insts[iv.init]
        v = self.va.def_value.get((iv.init, iv.reg))
        if v is None or v is TOP:
            return self._var(None, iv.width)
        return self._term(v, iv.width, qy, 0, inst.index)

    def _back_test(self, iv: Induction, qy: _Query) -> Any:
        """The back-edge test as it held of the value that came round (the stepped value, substituted)."""
        br = self.insts[iv.branch]
        assert br.guard is not None
        p = self.va.reg_value(br, br.guard.reg)
        if p is TOP:
            return None
        t = self._pred(p, qy)
        if t is None:
            return None
        z3 = self._solver()
        return t if iv.back_taken != br.guard.negated else z3.Not(t)

    def _pred(self, v: Value, qy: _Query, depth: int = 0) -> Any:
        """Predicate value ``v`` as a z3 Boolean (a free Boolean where the translation stops), or None."""
        z3 = self._solver()
        if v is TOP or depth > _MAX_DEPTH:
            return None
        match v:
            case Const(value=k):
                return z3.BoolVal(bool(k))
            case PNot(p=p):
                t = self._pred(p, qy, depth + 1)
                return None if t is None else z3.Not(t)
            case PAnd(tag=tag, p=p, q=q) | POr(tag=tag, p=p, q=q):
                a, b = self._pred(p, qy, depth + 1), self._pred(q, qy, depth + 1)
                if a is None or b is None:
                    return None
                return z3.And(a, b) if tag == "pand" else z3.Or(a, b)
        key, pol = normalize(v)
        if type(key) is Cmp:
            ty = self._cmp_type(key)
            if ty is None:
                return None
            w = int(ty[1:])
            t = _compare(z3, str(key.cmp), self._term(key.a, w, qy, depth + 1),
                         self._term(key.b, w, qy, depth + 1), ty[0] == "s")
            return t if pol else z3.Not(t)
        if type(key) is Opaque and isinstance(key.d, int) and 0 <= key.d < len(self.insts):
            inst = self.insts[key.d]
            if inst.op == "setp" and self._allowed(key.d, qy):
                e = self._expand(inst, qy, depth + 1)
                if e is not None:
                    t = e == z3.BitVecVal(1, 1)
                    return t if pol else z3.Not(t)
        if qy.previous and not self._invariant(key):
            self._fresh += 1
            b = z3.Bool(f"g{self._fresh}")
        else:
            name = f"b{abs(hash(key))}"
            qy.free[name] = key
            b = z3.Bool(name)
        return b if pol else z3.Not(b)

    # ---- questions ------------------------------------------------------------------------------------------
    def _guard_inductions(self, inst: Instruction) -> frozenset[str]:
        """The induction variables the guard of branch ``inst`` is computed from (its ``setp`` chain)."""
        got = self._branch_ivs.get(inst.index)
        if got is None:
            got = frozenset()
            if inst.guard is not None and any(self.induction(r) is not None
                                              for r in self.va.multi_defs):
                t0 = time.perf_counter()
                prof = profile.ACTIVE
                if prof is not None:
                    prof.push("solver")
                try:
                    qy = _Query(inst.index)
                    p = self.va.reg_value(inst, inst.guard.reg)
                    if p is not TOP and self._pred(p, qy) is not None:
                        got = frozenset(qy.inductions)
                finally:
                    if prof is not None:
                        prof.pop()
                self._count(seconds=time.perf_counter() - t0)
            self._branch_ivs[inst.index] = got
        return got

    def _count(self, **n: Any) -> None:
        """Count into this function's ``cost`` and the process's ``TOTALS``."""
        self.cost.add(**n)
        TOTALS.add(**n)

    def refine(self, oracle: GuardOracle, inst: Instruction, outcomes: Outcomes) -> Outcomes:
        """``outcomes`` of the guard of ``inst`` (``paths.PropertySimulation._branch``) refined for a guard
        computed from a counted loop's induction variable: two open outcomes are ``prune``d; one decided outcome
        records its predicate as a fact (decided by a register constant of the path, ``("regval", …)``, it
        would be lost where that path joins a later iteration's, which has the fact)."""
        if not self.va.multi_defs or not self._guard_inductions(inst):
            return outcomes
        if len(outcomes) == 2:
            return self.prune(inst, outcomes)
        if len(outcomes) != 1 or inst.guard is None:
            return outcomes
        k = (inst.index, outcomes)
        hit = self._record_memo.get(k)
        if hit is None:
            taken, facts = outcomes[0]
            plain = frozenset(f for f in facts if not (isinstance(f[0], tuple) and f[0][:1] == ("regval",)))
            got = oracle.assume(oracle.value(inst, inst.guard.reg), taken != inst.guard.negated, plain)
            hit = outcomes if got is None or got <= facts else ((taken, facts | got),)
            if len(self._record_memo) > 50_000:
                self._record_memo.clear()
            self._record_memo[k] = hit
        return hit

    def prune(self, inst: Instruction, outcomes: Outcomes) -> Outcomes:
        """``outcomes`` of branch ``inst`` less those the solver proves infeasible with their facts; asked only
        when both outcomes are open and the guard is computed from a counted loop's induction variable."""
        if len(outcomes) != 2 or not self.va.multi_defs or not self._guard_inductions(inst):
            return outcomes
        k = (inst.index, outcomes)
        hit = self._prune_memo.get(k)
        if hit is not None:
            self._count(hits=1)
            return hit
        keep = tuple(o for o in outcomes if self._feasible(inst, o[1]) is not False)
        if not keep:
            keep = outcomes
        pruned = len(outcomes) - len(keep)
        self._count(pruned=pruned)
        if len(self._prune_memo) > 50_000:
            self._prune_memo.clear()
        self._prune_memo[k] = keep
        return keep

    def _feasible(self, q: Instruction, facts: Facts) -> bool | None:
        """``satisfiable`` cached by the constraint: the query point and the facts that are translated (a
        register constant of the path, a memory or join fact is not), so paths that differ only in those share
        one answer; None (unknown) once the function has used its ``MAX_QUERIES``."""
        k = (q.index, frozenset(f for f in facts if _translated(f[0])))
        if k in self._sat_memo:
            self._count(hits=1)
            return self._sat_memo[k]
        if self.cost.queries >= MAX_QUERIES:
            self._count(capped=1)
            return None
        got = self._sat_memo[k] = self.satisfiable(q, facts)
        return got

    @profile.timed("solver")
    def satisfiable(self, q: Instruction, facts: Facts) -> bool | None:
        """Whether the path facts ``facts`` at instruction ``q`` may hold together: False when z3 proves them
        contradictory (with the values of the induction variables they read), True when satisfiable, None when
        unknown (timeout)."""
        t0 = time.perf_counter()
        z3 = self._solver()
        self._count(queries=1)
        try:
            qy = _Query(q.index)
            constraints = []
            for key, val in facts:
                if not _translated(key):
                    continue
                t = self._pred(key, qy)
                if t is not None:
                    constraints.append(t if val else z3.Not(t))
            if not qy.inductions:
                return True
            return self._satisfiable(z3, *constraints, *qy.side)
        except (z3.Z3Exception, RecursionError, ValueError, TypeError, IndexError):
            self._count(unknown=1)
            return None
        finally:
            dt = time.perf_counter() - t0
            self._count(seconds=dt)

    def loop_values(self, inst: Instruction, reg: str) -> frozenset[int] | None:
        """The values register ``reg`` holds where ``inst`` reads it, when it is a counted loop's induction
        variable read at its header value and the loop's init, step and back-edge test are constants: each
        iteration's value, at most ``MAX_ITERATIONS`` of them; None otherwise (unknown)."""
        k = (inst.index, reg)
        if k in self._loop_values:
            self._count(hits=1)
            return self._loop_values[k]
        got = None
        iv = self.induction(reg)
        if iv is not None and self._reads_header_value(iv, inst.index):
            got = self._enumerate(iv)
            if got is not None:
                self.answered.add(reg)
        self._loop_values[k] = got
        return got

    @profile.timed("solver")
    def _enumerate(self, iv: Induction) -> frozenset[int] | None:
        t0 = time.perf_counter()
        z3 = self._solver()
        self._count(queries=1)
        try:
            x = z3.BitVec(f"iv_{iv.reg}_{iv.step}", iv.width)
            qy = _Query(iv.branch, subst={opaque(iv.step): x}, previous=True)
            qy.inductions.add(iv.reg)
            init = z3.simplify(self._init_term(iv, qy))
            test = self._back_test(iv, qy)
            if test is None or not z3.is_bv_value(init):
                return None
            mask = (1 << iv.width) - 1
            v = init.as_long()
            out = {v}
            for _ in range(MAX_ITERATIONS):
                v = (v + iv.delta) & mask
                r = z3.simplify(z3.substitute(test, (x, z3.BitVecVal(v, iv.width))))
                if z3.is_false(r):
                    return frozenset(out)
                if not z3.is_true(r):
                    return None
                out.add(v)
            return None
        except (z3.Z3Exception, RecursionError, ValueError, TypeError, IndexError):
            return None
        finally:
            dt = time.perf_counter() - t0
            self._count(seconds=dt)

    # ---- the CTA pair ---------------------------------------------------------------------------------------
    def pair_invariant(self, key: object) -> bool | None:
        """Whether predicate ``key`` (a path fact's key: a ``Cmp`` or a predicate combination) has the same truth
        value in the two CTAs of a CTA pair: True when z3 proves ``P[c := 2j] == P[c := 2j+1]`` for every value
        of the shared inputs and every coordinate ``d`` that may carry the pair bit, where ``c`` is ``%ctaid.d``,
        ``%cluster_ctaid.d`` and ``%cluster_ctarank`` (the pair: ranks ``2k``, ``2k+1``, reference §3,
        ``#tcgen05-cta-pair``; the coordinates under ``cluster.PairRoles``' power-of-two cluster shapes); False
        when z3 finds inputs on which they differ; None when undecided (not translated, a solver timeout, the
        function's ``MAX_PAIR_QUERIES`` or its ``MAX_QUERIES`` of all checks used).  Shared inputs: kernel
        parameters, the other special registers, and any value ``_identity_free`` proves computed without the
        CTA's identity (an in-loop value is a free variable: the query has no program point); every other free
        variable (memory, a value derived from the identity through what the translation does not follow) is a
        separate variable in each CTA.  Cached per predicate; each check runs under ``TIMEOUT_MS`` and
        ``RLIMIT``."""
        if key in self._pair_memo:
            self._count(hits=1)
            return self._pair_memo[key]
        if self._pair_queries >= MAX_PAIR_QUERIES or self.cost.queries >= MAX_QUERIES:
            self._count(capped=1)
            return None
        self._pair_queries += 1
        got = self._pair_memo[key] = self._pair_check(key)
        return got

    @profile.timed("solver")
    def _pair_check(self, key: object) -> bool | None:
        t0 = time.perf_counter()
        z3 = self._solver()
        self._count(queries=1)
        try:
            qy = _Query(-1)
            t = self._pred(key, qy) if is_value(key) else None
            if t is None or qy.side:
                self._count(unknown=1)
                return None
            coords: dict[str, list[Any]] = {d: [] for d in _PAIR_COORDS}
            rank: list[Any] = []
            renames: list[tuple[Any, Any]] = []
            for v in _free_vars(z3, t):
                val = qy.free.get(str(v))
                name = val.name if type(val) is SReg else None
                if name == "%cluster_ctarank":
                    rank.append(v)
                elif isinstance(name, str) and name[-2:] in (".x", ".y", ".z") and name[:-2] in ("%ctaid",
                                                                                                 "%cluster_ctaid"):
                    coords[name[-1]].append(v)
                elif val is None or not self._identity_free(val):
                    renames.append((v, z3.FreshConst(v.sort())))
            differs = []
            for d in [c for c in _PAIR_COORDS if coords[c]] or ["x"]:
                even, odd = [], []
                for v in coords[d] + rank:
                    j = z3.FreshConst(v.sort())
                    even.append((v, j << 1))
                    odd.append((v, (j << 1) | 1))
                a = z3.substitute(t, *even) if even else t
                b = z3.substitute(t, *(odd + renames)) if odd or renames else t
                differs.append(a != b)
            sat = self._satisfiable(z3, z3.Or(*differs))
            return None if sat is None else not sat
        except (z3.Z3Exception, RecursionError, ValueError, TypeError, IndexError):
            self._count(unknown=1)
            return None
        finally:
            self._count(seconds=time.perf_counter() - t0)

    def _satisfiable(self, z3: Any, *constraints: Any) -> bool | None:
        """Whether the conjunction of ``constraints`` is satisfiable, by z3's SMT core alone (``SimpleSolver``: no
        tactic set-up, 30-60 ms a check on small QF_BV queries) under ``TIMEOUT_MS`` and ``RLIMIT``; None, counted
        as unknown, when z3 gives no answer within them."""
        s = z3.SimpleSolver()
        s.set("timeout", TIMEOUT_MS)
        s.set("rlimit", RLIMIT)
        s.add(*constraints)
        r = s.check()
        if r == z3.unsat or r == z3.sat:
            return bool(r == z3.sat)
        self._count(unknown=1)
        return None

    def _identity_free(self, v: object, depth: int = 0) -> bool:
        """Whether value ``v`` is proven the same in every CTA of a cluster: built from constants, kernel
        parameters and special registers other than the CTA-identity ones (``cluster.CTA_IDENTITY_SREGS``), through
        pure operations (``_PURE``) of definitions followed up to ``_IDENTITY_DEPTH`` deep.  A load is not (shared
        memory is per CTA), nor a per-thread special register (``%smid``, ``%clock``: opaque)."""
        if v is TOP or not isinstance(v, tuple) or not v:
            return False
        if mentions_identity(v, sregs=CTA_IDENTITY_SREGS):
            return False
        hit = self._identity_memo.get(v)
        if hit is not None:
            return hit
        if depth > _IDENTITY_DEPTH:
            return False
        self._identity_memo[v] = False  # a cycle through a loop-carried register proves nothing
        out = False
        if type(v) in (Const, ConstSet, Param, SReg):
            out = True
        elif v[0] == "phi" and len(v) == 3 and isinstance(v[2], tuple):  # a ``threads`` fact key, not a value
            out = all(self._identity_free(self.va.def_value.get((d, v[1]), TOP), depth + 1) for d in v[2])
        elif type(v) is Opaque:
            d = v.d[0] if isinstance(v.d, tuple) and v.d and isinstance(v.d[0], int) else v.d
            if isinstance(d, int) and 0 <= d < len(self.insts):
                out = self._pure_inputs(self.insts[d], depth)
        elif type(v) in (Op, Cmp, PNot, PAnd, POr):
            out = all(self._identity_free(x, depth + 1) if isinstance(x, tuple) else True
                      for x in (v[2:-1] if type(v) is Op else v[2:] if type(v) is Cmp else v[1:]))
        self._identity_memo[v] = out
        return out

    def _pure_inputs(self, inst: Instruction, depth: int) -> bool:
        """Whether ``inst`` is a pure operation (``_PURE``, unguarded) on identity-free operands (each reaching
        definition of a merged register, too)."""
        if depth > _IDENTITY_DEPTH or inst.op not in _PURE or inst.guard is not None:
            return False
        for o in inst.operands[1:]:
            if type(o) is Imm:
                continue
            if type(o) is not Reg:
                return False
            if not self._identity_free(self.va.value(inst, o), depth + 1):
                d = self.va.single_def.get(o.name)
                defs = (d,) if d is not None else self.va.reach.get((inst.index, o.name), ())
                if not defs or not all(self._pure_inputs(self.insts[r], depth + 1) for r in defs
                                       if 0 <= r < len(self.insts)):
                    return False
        return True


def _free_vars(z3: Any, t: Any) -> list[Any]:
    """The uninterpreted constants (free variables) of z3 term ``t``, each once, in first-seen order."""
    out: dict[str, Any] = {}
    seen: set[int] = set()
    work = [t]
    while work:
        e = work.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.setdefault(str(e), e)
        else:
            work.extend(e.children())
    return list(out.values())


def _translated(key: object) -> TypeGuard[Value]:
    """Whether the path fact with key ``key`` enters a satisfiability check: a predicate value; a register
    constant of the path (``regval``), a memory fact (``mem``) or a join fact (``phi``) does not."""
    return isinstance(key, tuple) and bool(key) and key[0] not in ("regval", "mem", "phi")


def _arith(z3: Any, op: str, a: Any, b: Any, signed: bool) -> Any:
    """``a op b`` of two bit-vectors of one width (PTX ISA §9.7.1: wrapping; shifts clamp, §9.7.8.7)."""
    if b.size() != a.size():
        b = z3.ZeroExt(a.size() - b.size(), b) if b.size() < a.size() else z3.Extract(a.size() - 1, 0, b)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    if op == "shl":
        return z3.If(z3.UGE(b, a.size()), z3.BitVecVal(0, a.size()), a << b)
    if op == "shr":
        return a >> b if signed else z3.LShR(a, b)
    raise ValueError(op)


def _mul_hi(z3: Any, a: Any, b: Any, signed: bool) -> Any:
    """``mul.hi`` of two ``n``-bit bit-vectors: the high ``n`` bits of their ``2n``-bit product, the operands
    sign-extended for an ``.s`` type and zero-extended for a ``.u`` one (PTX ISA §9.7.1.3 ``mul``:
    ``t = a * b; n = bitwidth of type; d = t<2n-1..n>`` for ``.hi``)."""
    n = a.size()
    if b.size() != n:
        b = z3.ZeroExt(n - b.size(), b) if b.size() < n else z3.Extract(n - 1, 0, b)
    ext = z3.SignExt if signed else z3.ZeroExt
    return z3.Extract(2 * n - 1, n, ext(n, a) * ext(n, b))


def _compare(z3: Any, cmp: str, a: Any, b: Any, signed: bool) -> Any:
    """``a cmp b`` as ``setp`` compares (PTX ISA §9.7.3.1: ``lo``/``ls``/``hi``/``hs`` unsigned)."""
    if b.size() != a.size():
        b = z3.ZeroExt(a.size() - b.size(), b) if b.size() < a.size() else z3.Extract(a.size() - 1, 0, b)
    if cmp == "eq":
        return a == b
    if cmp == "ne":
        return a != b
    if cmp in ("lo", "ls", "hi", "hs"):
        signed = False
        cmp = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}[cmp]
    if signed:
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[cmp]
    return {"lt": z3.ULT(a, b), "le": z3.ULE(a, b), "gt": z3.UGT(a, b), "ge": z3.UGE(a, b)}[cmp]
