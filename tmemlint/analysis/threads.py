"""Which threads and warps execute what: warp classes and predicate facts.

A CTA has ``n_threads`` threads in x (from ``.reqntid``/``.maxntid``, PTX ISA §11.4; 1024 when not declared).
Every predicate that depends only on ``%tid.x`` (``ValueAnalysis`` ``tid`` values) is evaluated for every thread.
Warps that agree on all of them form a *warp class*; inside a class such a predicate is either decided (the same
for every thread of every warp of the class) or *lane-varying* (threads of one warp disagree: a divergent
condition).  ``%warpid`` does not name a warp of the CTA: PTX ISA §10.4 gives it as the warp's location when read
("its value may change during execution, e.g. due to rescheduling of threads following preemption"; ``%tid`` is
to be used for a virtual warp index), so only ``%tid``-derived warp indices split warps into classes.  A test of
``%warpid`` is one value for the threads of a warp but says nothing about which or how many warps of a class take
it: such a path is *warp-varying* (``warp_varying``), and ``min_warps_on_path`` claims no more than one warp for it
(an undecided role guard is never reported as several warps).  Counts of the warps that execute an instruction are
asked here and nowhere else: ``warps_executing`` (over the paths that reach it), ``one_warp_executes`` (a warp's
own accesses and its hand-over or dealloc), ``distinct_warps`` (the two outcomes of a ``%warpid`` test are
different warps) and ``other_warp_view`` (a path's facts as another warp sees them, for happens-before pairs).

Predicates that do not depend on ``%tid.x`` become *facts* on a path: ``key → bool`` where ``key`` is the
predicate's canonical value (so that a predicate recomputed the same way has the same key).  Keys whose value is
built from opaque definitions are killed when one of those definitions executes again (loop iterations).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import Any, TypeGuard, cast, overload

from tmemlint.analysis.cluster import evaluate
from tmemlint.analysis.values import (TOP, Cmp, Const, Op, Opaque, PAnd, PNot, POr, Tid, Value, ValueAnalysis, NEGATE,
                                      cmp_value, opaque_deps, with_items)
from tmemlint.ir import Function, Instruction, Reg
from tmemlint.threadexpr import CMP as _CMP, eval_tid

Expr = tuple[Any, ...]
"""A thread expression, a function of ``%tid.x`` (``tmemlint.threadexpr.eval_tid``: ``("x",)``, ``("elect",)``,
``("cmp", op, e, k)``, ...)."""
FactKey = tuple[Any, ...]
"""What a branch fact is about: the canonical positive form of a predicate value (``normalize``: a ``Value``, read
with ``match``), or a key of another domain, a plain tagged tuple: ``("phi", register, reaching definitions)``,
``("mem", address, type)`` (``cross_warp_facts``), ``("regval", register, value)`` (recorded by the path
simulation).  ``paths.FactKey`` is the same type."""
Fact = tuple[FactKey, bool]
"""``(key, outcome)``: the predicate ``key`` has value ``outcome`` on the path."""
Facts = frozenset[Fact]
"""A path's branch facts (``paths.Facts`` is the same type)."""
Bound = tuple[Value, str, int]
"""``(base, op, k)``: the comparison ``base op k`` with ``op`` in ``lt``, ``le``, ``eq`` (signed)."""

MAX_THREADS = 1024
_POSITIVE = {"eq", "lt", "le", "lo", "ls"}


@overload
def normalize(v: Value) -> tuple[Value, bool]: ...
@overload
def normalize(v: FactKey) -> tuple[FactKey, bool]: ...
def normalize(v: FactKey) -> tuple[FactKey, bool]:
    """``(key, polarity)``: the canonical positive form of predicate value ``v`` and whether ``v`` is it or its
    negation (``ne`` ↔ ``eq``, ``ge`` ↔ ``lt`` ...).  Any other key (``("phi", ...)``) is its own form."""
    pol = True
    while type(v) is PNot:
        v = v.p
        pol = not pol
    if type(v) is Cmp and v.cmp not in _POSITIVE:
        return Cmp("cmp", NEGATE[v.cmp], v.a, v.b), not pol
    if type(v) is Tid and v.expr[0] == "cmp" and v.expr[1] not in _POSITIVE:
        e = v.expr  # a thread expression ``("cmp", op, e, k)`` (``threadexpr``'s domain)
        return Tid("tid", ("cmp", NEGATE[e[1]], e[2], e[3])), not pol
    return v, pol


def kleene(tag: str, a: bool | None, b: bool | None) -> bool | None:
    """``a or b`` (``tag`` "por") or ``a and b`` ("pand") of two truth values of which either may be unknown
    (None): decided when one operand decides it, else None."""
    if tag == "por":
        return True if a is True or b is True else False if a is False and b is False else None
    return False if a is False or b is False else True if a is True and b is True else None


@dataclass(slots=True)
class WarpClass:
    """Warps (indices ``tid.x // 32``) that agree on every thread predicate of the function.

    ``size_known``: the block size is declared, so ``len(warps)`` warps really run."""

    warps: tuple[int, ...]
    n_threads: int
    size_known: bool
    _cache: dict[Expr, bool | None] = field(default_factory=dict)

    @property
    def min_warps(self) -> int:
        """How many warps of this class certainly run (1 when the block size is not declared)."""
        return len(self.warps) if self.size_known else 1

    def decide(self, expr: Expr) -> bool | None:
        """True/False when the thread predicate ``expr`` has that value on every thread of the class, None when
        it differs between threads (lane-varying inside a warp, or between warps of the class)."""
        r = self._cache.get(expr)
        if r is None and expr not in self._cache:
            vals: list[int] = []
            for w in self.warps:
                lo = w * 32
                hi = min(lo + 32, self.n_threads)
                vals.extend(eval_tid(expr, range(lo, hi)))
            if all(vals):
                r = True
            elif not any(vals):
                r = False
            else:
                r = None
            self._cache[expr] = r
        return r

    def __repr__(self) -> str:
        w = self.warps
        if len(w) == 1:
            return f"warp {w[0]}"
        if list(w) == list(range(w[0], w[-1] + 1)):
            return f"warps {w[0]}-{w[-1]}"
        return "warps " + ", ".join(map(str, w))


@dataclass(slots=True)
class ThreadModel:
    """The CTA's threads for one function: ``n_threads`` in x, whether declared, and the warp classes."""

    n_threads: int
    size_known: bool
    classes: list[WarpClass]


def thread_predicates(fn: Function, va: ValueAnalysis) -> set[Expr]:
    """The thread expressions (``("tid", e)`` values, normalized) that guard instructions or branches of ``fn``,
    looked for through ``pnot``/``pand``/``por`` up to 8 levels deep."""
    preds: set[Expr] = set()

    def collect(v: Value, depth: int = 0) -> None:
        if v is TOP or depth > 8:
            return
        match v:
            case Tid():
                key = normalize(v)[0]
                assert type(key) is Tid
                preds.add(key.expr)
            case PAnd(p=p, q=q) | POr(p=p, q=q):
                collect(p, depth + 1)
                collect(q, depth + 1)
            case PNot(p=p):
                collect(p, depth + 1)

    for inst in fn.instructions:
        if inst.guard is not None:
            collect(va.reg_value(inst, inst.guard.reg))
    return preds


def thread_model(fn: Function, va: ValueAnalysis, extra: frozenset[Expr] = frozenset()) -> ThreadModel:
    """Partition the warps of ``fn``'s CTA into classes by the thread predicates that guard instructions or
    branches, and the ``extra`` ones (those of the ``.func`` callees it calls, ``analysis.calls``: a callee runs
    in the caller's threads, so its ``%tid.x`` tests split the same warps)."""
    dims = fn.threads_per_cta()
    known = dims is not None and dims[1] == 1 and dims[2] == 1
    n = min(dims[0], MAX_THREADS) if dims else MAX_THREADS
    n = max(n, 1)
    preds = sorted(thread_predicates(fn, va) | set(extra), key=repr)
    n_warps = (n + 31) // 32
    sig_of: dict[tuple[int, ...], list[int]] = {}
    for w in range(n_warps):
        lo, hi = w * 32, min(w * 32 + 32, n)
        sig: list[int] = []
        for e in preds:
            vals = eval_tid(e, range(lo, hi))
            sig.append(2 if (any(vals) and not all(vals)) else (1 if vals[0] else 0))
        sig_of.setdefault(tuple(sig), []).append(w)
    classes = [WarpClass(tuple(ws), n, known) for ws in sorted(sig_of.values())]
    return ThreadModel(n, known, classes)


class _Unseen(Enum):
    """The sentinel of ``GuardOracle.truth``'s memo (None is a cached answer)."""

    UNSEEN = 0


_UNSEEN = _Unseen.UNSEEN


class GuardOracle:
    """Evaluates predicates for one warp class against a path's facts.

    Predicate values (``ValueAnalysis``) are constants, thread predicates (decided by the class, or lane-varying),
    ``pnot``/``pand``/``por`` combinations, or opaque comparisons.  ``truth`` says what the facts imply;
    ``assume`` adds what a branch outcome implies (a false ``por`` makes both operands false, a true ``pand``
    both true), or returns None when the outcome contradicts the facts (an infeasible path)."""

    def __init__(self, va: ValueAnalysis, klass: WarpClass) -> None:
        self.va = va
        self.klass = klass
        #: predicate key -> the definitions (instruction indices) it depends on; a pure function of the key,
        #: shared by every oracle of this value analysis
        self.deps: dict[object, frozenset[int]] = va.guard_deps
        #: ``truth`` results by (predicate value, facts): the simulation asks the same question on every visit
        self._truths: dict[tuple[FactKey, Facts], bool | None] = {}
        #: ``paths.PropertySimulation``'s ``_kill`` results and branch outcomes, shared by every simulation with
        #: this oracle (declared here: a compiled class has no ``__dict__`` to add them to)
        self.kill_memo: dict[Any, Any] = {}
        self.branch_memo: dict[Any, Any] = {}
        #: the same outcomes refined by ``analysis.feasibility`` (a pure function of the outcomes)
        self.refined_branch_memo: dict[Any, Any] = {}

    def _paired(self) -> bool:
        """Whether the function issues ``.cta_group::2`` instructions (its cluster has at least 2 CTAs)."""
        p = self.va.cta_pair
        if p is None:
            p = self.va.cta_pair = any(
                i.op == "tcgen05" and "cta_group::2" in i.parts for i in self.va.insts)
        return p

    def value(self, inst: Instruction, reg: Reg) -> FactKey:
        """The predicate value of ``reg`` at ``inst`` (a ``("phi", …)`` key when definitions disagree)."""
        v: Value = self.va.reg_value(inst, reg)
        if v is TOP:
            reach: tuple[int, ...] = self.va.reach.get((inst.index, reg.name), ())
            key: FactKey = ("phi", reg.name, reach)
            self.deps.setdefault(key, frozenset(reach))
            return key
        return v

    def _key(self, v: FactKey) -> tuple[FactKey, bool]:
        key, pol = normalize(v)
        if key not in self.deps:
            self.deps[key] = frozenset(_dep_index(d) for d in opaque_deps(key))
        return key, pol

    def truth(self, v: FactKey, facts: Facts) -> bool | None:
        """True/False when the class or the facts decide predicate ``v``, else None."""
        memo = self._truths
        k = (v, facts)
        t = memo.get(k, _UNSEEN)
        if t is _UNSEEN:
            if len(memo) > 100_000:
                memo.clear()
            t = memo[k] = self._truth(v, facts)
        return t

    def _truth(self, v: FactKey, facts: Facts) -> bool | None:
        match v:
            case Const(value=k):
                return bool(k != 0)
            case PNot(p=p):
                t = self.truth(p, facts)
                return None if t is None else not t
            case POr(p=p, q=q) | PAnd(p=p, q=q):
                t = kleene(v.tag, self.truth(p, facts), self.truth(q, facts))
                if t is not None:
                    return t
        key, pol = self._key(v)
        if type(key) is Tid and key.expr != ("elect",):
            d = self.klass.decide(key.expr)
            if d is not None:
                return d == pol
        if (key, True) in facts:
            return pol
        if (key, False) in facts:
            return not pol
        if type(key) is Cmp and facts:
            t = interval_truth(key, facts)
            if t is None:
                t = residue_truth(key, facts)
            if t is not None:
                return t == pol
        if type(key) is Cmp:
            t = cluster_truth(key, self._paired())
            if t is not None:
                return t == pol
        if facts and self.deps.get(key):
            r = self.resolve(key, facts)
            if type(r) is Const:
                return bool(r.value != 0) == pol
            if type(r) is Tid:
                d = self.klass.decide(r.expr)
                if d is not None:
                    return d == pol
        return None

    def resolve(self, v: FactKey, facts: Facts, depth: int = 0) -> Value | None:
        """``v`` with its opaque definitions recomputed from the path's register constants (facts
        ``(("regval", register, value), True)`` recorded by the simulation when a constant or a thread expression
        is written to a register that has several definitions, e.g. a loop-carried flag or a warp role chosen in a
        chain of branches); a constant or a thread expression, or None."""
        if depth > 6 or v is TOP:
            return None
        match v:
            case Const() | Tid():
                return v
            case Cmp(cmp=cmp, a=a0, b=b0):
                a = self.resolve(a0, facts, depth + 1)
                b = self.resolve(b0, facts, depth + 1)
                if a is None or b is None:
                    return None
                c: Value | None = cmp_value(cmp, a, b)
                return c
            case Opaque(d=int() as d):
                return self._recompute(d, facts, depth)
        if v[0] == "phi":  # a register several definitions reach (a loop-carried flag branched on directly)
            regval: Value | None = next((f[0][2] for f in facts
                                         if f[1] and f[0][0] == "regval" and f[0][1] == v[1]), None)
            return regval
        return None

    def _recompute(self, d: int, facts: Facts, depth: int) -> Value | None:
        """``resolve`` of the opaque value of single-register definition ``d`` (an instruction index): its
        operation recomputed from its operands' resolved values; a constant or a thread expression, or None."""
        inst = self.va.insts[d]
        regs = self.va.defined_by(inst.index)
        if len(regs) != 1 or len(inst.operands) < 2:
            return None
        args = []
        for o in inst.operands[1:]:
            if type(o) is Reg:
                known: Value = self.va.reg_value(inst, o)
                val: Value | None = known
                if known is TOP:
                    val = next((f[0][2] for f in facts
                                if f[1] and f[0][0] == "regval" and f[0][1] == o.name), None)
                elif type(known) is not Const:
                    val = self.resolve(known, facts, depth + 1)
                if val is None:
                    return None
                args.append(val)
            else:
                args.append(self.va.value(inst, o))
        try:
            r = self.va.computed(inst, args)
        except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError):
            return None
        return r if type(r) is Const or type(r) is Tid else None

    def assume(self, v: FactKey, want: bool, facts: Facts) -> Facts | None:
        """``facts`` plus what ``v == want`` implies, or None when that contradicts them."""
        t = self.truth(v, facts)
        if t is not None:
            return facts if t == want else None
        match v:
            case PNot(p=p):
                return self.assume(p, not want, facts)
            case POr(p=p, q=q) | PAnd(p=p, q=q):
                if (type(v) is POr and not want) or (type(v) is PAnd and want):
                    f = self.assume(p, want, facts)
                    return None if f is None else self.assume(q, want, f)
                # a true `or` (false `and`) whose one side is known to be false (true): the other side decides
                a, b = self.truth(p, facts), self.truth(q, facts)
                if a is (not want):
                    return self.assume(q, want, facts)
                if b is (not want):
                    return self.assume(p, want, facts)
        key, pol = self._key(v)
        return facts | {(key, want == pol)}



#: State spaces whose loads read memory that every warp of the CTA sees alike (launch data: kernel parameters,
#: constants, global tables such as cumulative sequence lengths).
_SHARED_READ_SPACES = ("global", "param", "const")


def cross_warp_facts(va: ValueAnalysis, facts: Facts) -> Facts:
    """``facts`` with each opaque value that a plain load produced (``ld.global``/``ld.param``/``ld.const``, not
    ``.volatile``, ``.relaxed``/``.acquire``, from a CTA-uniform address) replaced by ``("mem", address)``, so that
    warps that load the same launch data separately (CUTLASS's per-role copies of the tile-validity test, each
    reading the cumulative sequence lengths) agree on the facts built from it when their paths are combined.

    Only cross-class combinations use this (``consistent_choice``): within one thread the opaque values keep their
    definitions, so a loop that reloads still sees a new value.  Assumes the kernel does not write the launch data
    it branches on while warps read it (a documented limit)."""
    whole: dict[Facts, Facts] = va.cross_warp_sets
    hit = whole.get(facts)
    if hit is not None:
        return hit
    if len(whole) > 50_000:
        whole.clear()
    whole[facts] = hit = _cross_warp(va, facts)
    return hit


def _cross_warp(va: ValueAnalysis, facts: Facts) -> Facts:
    cache: dict[FactKey, FactKey] = va.cross_warp_keys
    out: list[Fact] = []
    changed = False
    for key, val in facts:
        k = cache.get(key)
        if k is None:
            k = cache[key] = _canon(va, key, 0)
        changed |= k is not key
        out.append((k, val))
    return frozenset(out) if changed else facts


def _canon(va: ValueAnalysis, v: Any, depth: int) -> Any:
    if not isinstance(v, tuple) or not v or depth > 8:
        return v
    if type(v) is Opaque and isinstance(v.d, int):
        inst = va.insts[v.d]
        if inst.op in ("ld", "ldu") and len(inst.operands) >= 2 and any(sp in inst.parts for sp in _SHARED_READ_SPACES) \
                and not any(q in inst.parts for q in ("volatile", "relaxed", "acquire", "mmio")):
            a = inst.operands[1]
            base = getattr(a, "base", None)
            addr = va.value(inst, a)
            if addr is not TOP and (base is None or not hasattr(base, "name") or va.is_uniform(inst, base)):
                return ("mem", _canon(va, addr, depth + 1), inst.parts[-1])
            return ("mem", ("load", v.d), inst.parts[-1])  # launch data at an address known to this load only
        return v
    new = tuple(_canon(va, x, depth + 1) if isinstance(x, tuple) else x for x in v)
    if new == v:
        return v
    return new if type(v) is tuple else with_items(cast(Value, v), new)  # a value stays of its class (read with ``match``)


def _data_dependent(key: object, tags: tuple[str, ...] = ("regval", "mem")) -> bool:
    """Whether a fact's key is built from values a warp computed itself from launch data or a loop: a load of
    launch data (``("mem", …)``, see ``threads.cross_warp_facts``) or a flag a loop set (``("regval", …)``).  Another
    warp's path cannot be tied to such a fact by construction.  With ``tags=_OPAQUE``, any value the analysis could
    not name (also an opaque definition or a merge of several)."""
    if isinstance(key, tuple):
        if type(key) is not tuple:  # a value: only an opaque one is among the tags (``_OPAQUE``)
            if type(key) is Opaque and "opq" in tags:
                return True
        elif key and key[0] in tags:  # a key of another domain: ("regval", ...), ("mem", ...), ("phi", ...)
            return True
        return any(_data_dependent(x, tags) for x in key if isinstance(x, tuple))
    return False


_OPAQUE = ("regval", "mem", "opq", "phi")


def data_chosen(facts: Facts, tags: tuple[str, ...] = ("regval", "mem")) -> bool:
    """Whether some CTA-uniform fact of a path is ``_data_dependent`` (with ``tags``)."""
    return any(_data_dependent(k, tags) for k, _ in facts if not is_lane_fact(k))


def undecidable_pair(f1: Facts, f2: Facts) -> bool:
    """Whether two paths of different warp classes are chosen by data neither can tie to the other: one by launch
    data or a loop flag, the other by any value the analysis could not name."""
    return (data_chosen(f1) and data_chosen(f2, _OPAQUE)) or (data_chosen(f2) and data_chosen(f1, _OPAQUE))


_CLUSTER_SREGS = ("%cluster_nctaid.x", "%cluster_nctaid.y", "%cluster_nctaid.z", "%cluster_nctarank")
_POW2 = (1, 2, 4, 8, 16)


def cluster_truth(key: Cmp, paired: bool) -> bool | None:
    """A comparison of the cluster's extents (``%cluster_nctaid.*``, ``%cluster_nctarank``) decided over every
    cluster shape the launch may have: x and y powers of two up to 16 CTAs (PTX ISA §10.14-15; 8 portable, 16
    with the non-portable opt-in), at least 2 CTAs when the kernel issues ``.cta_group::2`` (a CTA pair lives in
    one cluster, §9.7.16.2.4).  The z extent is taken as 1: every 2-CTA kernel known launches 2D clusters (a
    documented limit).  None when the shapes disagree or the comparison involves other values."""
    results: set[bool] = set()
    for x in _POW2:
        for y in _POW2:
            n = x * y
            if n > 16 or (paired and n < 2):
                continue
            env = {"%cluster_nctaid.x": x, "%cluster_nctaid.y": y, "%cluster_nctaid.z": 1, "%cluster_nctarank": n}
            a, b = evaluate(key.a, env), evaluate(key.b, env)
            if a is None or b is None:
                return None
            results.add(_CMP[key.cmp](a, b))
            if len(results) > 1:
                return None
    return results.pop() if results else None


_SIGNED = {"lt", "le", "eq"}


def _linear(v: Value) -> tuple[Value, int]:
    """``(base, c)`` with ``v == base + c`` for ``("op", "add"|"sub", base, ("c", c))`` chains."""
    c = 0
    while type(v) is Op and v.name in ("add", "sub") and len(v) == 5 and type(k := v.args[1]) is Const:
        c += k.value if v.name == "add" else -k.value
        v = v.args[0]
    return v, c


def _bound(key: FactKey) -> Bound | None:
    """``(base, op, k)`` for a comparison key ``base + c op k0`` (op in lt/le/eq), with k = k0 - c."""
    if type(key) is not Cmp or key.cmp not in _SIGNED or type(key.b) is not Const:
        return None
    base, c = _linear(key.a)
    return base, key.cmp, key.b.value - c


def interval_truth(key: FactKey, facts: Facts) -> bool | None:
    """Decide ``key`` from the facts about the same linear base (signed interval reasoning)."""
    q = _bound(key)
    if q is None:
        return None
    base, op, k = q
    iv = _interval(base, facts)
    return None if iv is None else _decide(op, iv[0], iv[1], k)


def bounds_disagree(fa: Facts, fb: Facts) -> bool:
    """Whether a comparison of ``fb`` is decided the other way by the signed bounds ``fa`` puts on the same linear
    base (``interval_truth``): a consumer's zero-trip test ``n < 1`` against a loop entered on ``n - 1 >= 1``."""
    for key, val in fb:
        if type(key) is Cmp and interval_truth(key, fa) == (not val):
            return True
    return False


def _interval(base: Value, facts: Facts) -> tuple[int, int] | None:
    """``(lo, hi)``: the values ``base`` can take on a path with these branch facts (comparisons of
    ``base + c`` with constants), or None when no fact bounds it or the facts contradict each other."""
    lo, hi = -(1 << 64), 1 << 64
    found = False
    for fkey, val in facts:
        if type(fkey) is not Cmp or fkey.cmp not in _SIGNED:  # _bound's first test, without a call per fact
            continue
        b = _bound(fkey)
        if b is None or b[0] != base:
            continue
        found = True
        _, fop, fk = b
        if fop == "lt":
            if val:
                hi = min(hi, fk - 1)
            else:
                lo = max(lo, fk)
        elif fop == "le":
            if val:
                hi = min(hi, fk)
            else:
                lo = max(lo, fk + 1)
        elif fop == "eq" and val:
            lo, hi = max(lo, fk), min(hi, fk)
    if not found or lo > hi:
        return None
    return lo, hi


def _decide(op: str, lo: int, hi: int, k: int) -> bool | None:
    """``x op k`` (``lt``, ``le``, ``eq``) for every ``x`` in ``[lo, hi]``: True, False, or None when it differs."""
    if op == "lt":
        return True if hi < k else (False if lo >= k else None)
    if op == "le":
        return True if hi <= k else (False if lo > k else None)
    if op == "eq":
        if lo == hi == k:
            return True
        return False if (k < lo or k > hi) else None
    return None


def _residue(v: Value) -> tuple[Value, int] | None:
    """``(base, m)`` for a residue value ``base & m`` with ``m = 2^j - 1`` (``("op", "and", base, ("c", m), _)``),
    else None."""
    match v:
        case Op(name="and", args=(base, Const(value=m))) if m > 0 and not m & (m + 1):
            return base, m
    return None


#: Candidate values of a counter enumerated by ``residue_truth`` at most.
_MAX_RESIDUE_CANDIDATES = 256


def residue_truth(key: FactKey, facts: Facts) -> bool | None:
    """Decide a comparison of a counter's residue, ``(base & m) op k`` with ``m = 2^j - 1`` (``k % STAGES == s``,
    ``(iter & 1) == phase``; the remainder tests of a loop unrolled ``m + 1`` times), against the path's facts
    about ``base``: its interval (comparisons of ``base`` with constants) and the outcomes of earlier residue
    tests of it (any mask ``2^i - 1``; PTX ISA §9.7.8.1 ``and``).  The candidates are the values of ``base`` in
    its interval when it is small and non-negative, else the residues modulo the largest mask involved (every
    smaller mask's residue is a function of it); the key is decided when it has one value on every candidate
    that the facts allow.  A loop that runs 1 to 7 times (``k_tiles >= 1``, ``k_tiles < 8``: the 8-way unrolled
    body was skipped) has a non-zero remainder, so the path on which ``(k_tiles & 7) == 0`` holds is infeasible;
    after ``(k & 3) == 1`` the parity ``(k & 1) == 1`` is decided."""
    if type(key) is not Cmp or key.cmp not in _SIGNED or type(key.b) is not Const:
        return None
    r = _residue(key.a)
    if r is None:
        return None
    base, m = r
    tests: list[tuple[int, str, int, bool]] = []  # (mask, op, k, outcome) of the facts on residues of base
    for fkey, val in facts:
        if type(fkey) is not Cmp or fkey.cmp not in _SIGNED or type(fb := fkey.b) is not Const:
            continue
        fr = _residue(fkey.a)
        if fr is not None and fr[0] == base:
            tests.append((fr[1], fkey.cmp, fb.value, val))
    top = max([m] + [t[0] for t in tests])
    iv = _interval(base, facts)
    if iv is not None and 0 <= iv[0] and iv[1] - iv[0] < _MAX_RESIDUE_CANDIDATES:
        candidates = range(iv[0], iv[1] + 1)
    elif top < _MAX_RESIDUE_CANDIDATES:
        candidates = range(top + 1)
        if iv is not None and 0 <= iv[0] and (iv[0] & ~top) == (iv[1] & ~top):  # one block of top + 1 values
            candidates = range(iv[0] & top, (iv[1] & top) + 1)
    else:
        return None
    op, k = key.cmp, key.b.value
    seen: set[bool] = set()
    for x in candidates:
        if all(_compare(fop, x & fm, fk) == val for fm, fop, fk, val in tests):
            seen.add(_compare(op, x & m, k))
            if len(seen) > 1:
                return None
    return seen.pop() if seen else None


def _compare(op: str, x: int, k: int) -> bool:
    """``x op k`` for ``op`` in ``lt``, ``le``, ``eq``."""
    return x < k if op == "lt" else x <= k if op == "le" else x == k


#: Special registers that are one value for the threads of a warp when read but whose value at a given read is not a
#: function of ``%tid``: ``%warpid`` (PTX ISA §10.4, the warp's current location, which may change during execution)
#: and the clock and timer registers (``%clock``, ``%globaltimer``, PTX ISA §10), read by each warp at its own time.  A comparison of one chooses warps in
#: a way the analysis cannot evaluate.
WARP_VARYING_SREGS = frozenset({"%warpid", "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo",
                                "%globaltimer_hi"})


def warp_varying(key: object, depth: int = 0) -> bool:
    """Whether a fact key reads a ``WARP_VARYING_SREGS`` register (``("opq", ("sreg", name))``, as
    ``values._special`` gives it), so that warps of one class may take different outcomes of it."""
    if not isinstance(key, tuple) or not key or depth > 12:
        return False
    if type(key) is Opaque and isinstance(d := key.d, tuple) and len(d) == 2 and d[0] == "sreg":
        return d[1] in WARP_VARYING_SREGS
    return any(warp_varying(x, depth + 1) for x in key[1:] if isinstance(x, tuple))


@lru_cache(maxsize=1 << 14)
def warp_chosen(facts: Facts) -> bool:
    """Whether a CTA-uniform-looking fact of a path is ``warp_varying``: the path is taken by warps the analysis
    cannot name (none, one or several of a class)."""
    return any(warp_varying(k) for k, _ in facts if not is_lane_fact(k))


def min_warps_on_path(klass: WarpClass, facts: Facts) -> int:
    """How many warps of ``klass`` certainly execute a path with these branch ``facts``, when any does:
    ``klass.min_warps``, or 1 when a CTA-uniform-looking fact of the path is ``warp_varying`` (a role chosen by
    ``setp.eq.u32 %p, %warpid, 0``: which warps, and how many, take it is undecided).  Units: warps."""
    n = klass.min_warps
    return 1 if n > 1 and warp_chosen(facts) else n


def warps_executing(klass: WarpClass, fact_sets: Iterable[Facts] | None) -> int:
    """How many warps of ``klass`` certainly execute an instruction that the class reaches on paths with the branch
    facts ``fact_sets`` (``SyncModel.fact_sets``: one set per path, CTA-uniform facts in cross-warp form): 0 when no
    path reaches it, else the fewest ``min_warps_on_path`` over the paths (the warps of a class take one
    CTA-uniform path together, but a path chosen by ``%warpid`` may be taken by one warp only, PTX ISA §10.4), and
    ``klass.min_warps`` when the paths were too many to keep (None).  The one derivation of "who executes this" for
    counts of warps: TM108 (``lifecycle``), barrier participants (``order.SyncModel.overfull``), a warp's own
    hand-over or dealloc (TM302, TM305).  Units: warps."""
    if fact_sets is None:
        return klass.min_warps
    return min((min_warps_on_path(klass, f) for f in fact_sets), default=0)


@lru_cache(maxsize=1 << 14)
def other_warp_view(facts: Facts) -> Facts:
    """``facts`` as another warp sees them: without the ``warp_varying`` facts (a warp's test of ``%warpid`` says
    nothing about another warp's, PTX ISA §10.4), so that pairing a path of one warp with a path of another warp
    (``SyncModel`` happens-before) does not take a role test of ``%warpid`` for a CTA-uniform choice."""
    if not warp_chosen(facts):
        return facts
    return frozenset(f for f in facts if is_lane_fact(f[0]) or not warp_varying(f[0]))


def distinct_warps(f1: Facts, f2: Facts) -> bool:
    """Whether two paths of one warp class are taken by different warps: a ``warp_varying`` CTA-uniform-looking fact
    (a role test of ``%warpid``) has one outcome on one path and the other on the other, and a warp takes one
    outcome of the test it makes (the other warps of the class, PTX ISA §10.4)."""
    return any((k, not v) in f2 for k, v in f1 if warp_varying(k) and not is_lane_fact(k))


def one_warp_executes(klass: WarpClass, fact_sets: Sequence[Iterable[Facts] | None]) -> bool:
    """Whether at most one warp of ``klass``, the same one, executes the instructions reached on paths with these
    fact sets (one entry per instruction, as ``SyncModel.fact_sets`` gives them): none is certainly executed by
    several warps (``warps_executing``), and no two are reached only on paths of different warps
    (``distinct_warps``: a ``%warpid`` role for one, another role for the other).  A class of one warp: always;
    the hand-over or dealloc of a warp's own accesses then needs no barrier (program order)."""
    if any(warps_executing(klass, fs) > 1 for fs in fact_sets):
        return False
    chosen = [list(fs) for fs in fact_sets if fs is not None]
    chosen = [fs for fs in chosen if fs and all(warp_chosen(f) for f in fs)]
    for i, a in enumerate(chosen):
        for b in chosen[i + 1:]:
            if all(distinct_warps(f, g) for f in a for g in b):
                return False
    return True


def _dep_index(d: object) -> int:
    if isinstance(d, int):
        return d
    if isinstance(d, tuple) and d and isinstance(d[0], int):
        return d[0]
    return -1


def is_lane_fact(key: object) -> TypeGuard[Tid]:
    """Whether a fact key is a thread predicate (its value may differ between threads of one warp class)."""
    return type(key) is Tid


__all__ = ["Bound", "Expr", "Fact", "FactKey", "Facts", "GuardOracle", "ThreadModel", "UNKNOWN_LANES", "Value",
           "WarpClass", "cluster_truth", "cross_warp_facts", "data_chosen", "depends_on", "interval_truth",
           "is_lane_fact", "kleene", "lane_counts", "lanes_on_path", "min_warps_on_path", "normalize",
           "residue_truth", "thread_model", "thread_predicates", "undecidable_pair", "warp_chosen", "warp_varying",
           "warps_executing", "WARP_VARYING_SREGS", "distinct_warps", "one_warp_executes", "other_warp_view"]


#: ``lanes_on_path`` when a path's facts involve a predicate that may differ between the threads of a warp in a
#: way the analysis cannot evaluate (a value loaded per thread, a combination of thread and opaque tests).
UNKNOWN_LANES = -1


def lanes_on_path(klass: WarpClass, facts: Facts, nonuniform: frozenset[int]) -> int:
    """The most threads of one warp of ``klass`` that satisfy every thread predicate among a path's ``facts``
    (``(("tid", e), value)`` facts, ``elect.sync`` included: ``("elect",)`` holds on one lane), counting only
    threads of the CTA (``klass.n_threads``): 32 for a path with no lane test, 1 under ``elect.sync`` or
    ``%tid.x == 0``.  ``UNKNOWN_LANES`` when a fact that is not a thread predicate depends on one of the
    definitions ``nonuniform`` (instruction indices whose value may differ between threads: ``control.
    divergent_defs``) or mixes a thread predicate with other values: which lanes satisfy it cannot be evaluated.
    Units: threads (PTX ISA §10.1 ``%tid``, §10.3 ``%laneid``)."""
    counts = lane_counts(klass, facts, nonuniform)
    return UNKNOWN_LANES if counts is None else max(counts, default=0)


def lane_counts(klass: WarpClass, facts: Facts, nonuniform: frozenset[int]) -> tuple[int, ...] | None:
    """Per warp of ``klass`` (in ``klass.warps`` order), how many of its threads satisfy the thread predicates of
    a path's ``facts``; None where ``lanes_on_path`` says ``UNKNOWN_LANES``."""
    lane: list[tuple[Expr, bool]] = []
    for key, val in facts:
        if is_lane_fact(key):
            lane.append((key.expr, val))
            continue
        if not isinstance(key, tuple) or not key or key[0] == "regval":
            continue  # a register's value on the path: no condition on the thread by itself
        if _mentions_tid(key) or depends_on(key, nonuniform):
            return None
    out = []
    for w in klass.warps:
        lo, hi = w * 32, min(w * 32 + 32, klass.n_threads)
        ok = [True] * (hi - lo)
        for expr, val in lane:
            for i, v in enumerate(eval_tid(expr, range(lo, hi))):
                if bool(v) != val:
                    ok[i] = False
        out.append(sum(ok))
    return tuple(out)


def _mentions_tid(v: object, depth: int = 0) -> bool:
    if not isinstance(v, tuple) or not v or depth > 12:
        return False
    if type(v) is Tid:
        return True
    return any(_mentions_tid(x, depth + 1) for x in v[1:] if isinstance(x, tuple))


def depends_on(key: object, defs: frozenset[int]) -> bool:
    """Whether predicate key ``key`` reads one of the definitions ``defs`` (instruction indices): its opaque
    leaves, or the reaching definitions of a ``("phi", register, definitions)`` key."""
    if not isinstance(key, tuple) or not key:
        return False
    if key[0] == "phi":
        return any(d in defs for d in key[2])
    if type(key) is Opaque:
        if isinstance(d := key.d, tuple) and d and d[0] == "sreg":
            return str(d[1]).startswith("%tid")  # %tid.y/z; %warpid, %smid, %clock are one value per warp
        return _dep_index(d) in defs
    if key[0] == "mem":
        # launch data (``cross_warp_facts``): at a CTA-uniform address, or at one known to that load only
        inner = key[1]
        return isinstance(inner, tuple) and len(inner) == 2 and inner[0] == "load" and inner[1] in defs
    return any(depends_on(x, defs) for x in key[1:] if isinstance(x, tuple))
