"""Which threads and warps execute what: warp classes and predicate facts.

A CTA has ``n_threads`` threads in x (from ``.reqntid``/``.maxntid``, PTX ISA §11.4; 1024 when not declared).
Every predicate that depends only on ``%tid.x`` (``ValueAnalysis`` ``tid`` values) is evaluated for every thread.
Warps that agree on all of them form a *warp class*; inside a class such a predicate is either decided (the same
for every thread of every warp of the class) or *lane-varying* (threads of one warp disagree: a divergent
condition).  ``%warpid`` is not used: PTX ISA §10.9 says it may change during execution (preemption, migration),
so only ``%tid``-derived warp indices identify a warp.

Predicates that do not depend on ``%tid.x`` become *facts* on a path: ``key → bool`` where ``key`` is the
predicate's canonical value (so that a predicate recomputed the same way has the same key).  Keys whose value is
built from opaque definitions are killed when one of those definitions executes again (loop iterations).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tmemlint.analysis.values import TOP, ValueAnalysis, _CMP, _NEGATE, eval_tid, opaque_deps
from tmemlint.ir import Function, Instruction, Reg

MAX_THREADS = 1024
_POSITIVE = {"eq", "lt", "le", "lo", "ls"}


def normalize(v) -> tuple[object, bool]:
    """``(key, polarity)``: the canonical positive form of predicate value ``v`` and whether ``v`` is it or its
    negation (``ne`` ↔ ``eq``, ``ge`` ↔ ``lt`` ...)."""
    pol = True
    while isinstance(v, tuple) and v and v[0] == "pnot":
        v = v[1]
        pol = not pol
    if isinstance(v, tuple) and v and v[0] == "cmp" and v[1] not in _POSITIVE:
        return ("cmp", _NEGATE[v[1]], v[2], v[3]), not pol
    if isinstance(v, tuple) and v and v[0] == "tid" and v[1][0] == "cmp" and v[1][1] not in _POSITIVE:
        e = v[1]
        return ("tid", ("cmp", _NEGATE[e[1]], e[2], e[3])), not pol
    return v, pol


@dataclass(slots=True)
class WarpClass:
    """Warps (indices ``tid.x // 32``) that agree on every thread predicate of the function.

    ``size_known``: the block size is declared, so ``len(warps)`` warps really run."""

    warps: tuple[int, ...]
    n_threads: int
    size_known: bool
    _cache: dict = field(default_factory=dict)

    @property
    def min_warps(self) -> int:
        """How many warps of this class certainly run (1 when the block size is not declared)."""
        return len(self.warps) if self.size_known else 1

    def decide(self, expr: tuple) -> bool | None:
        """True/False when the thread predicate ``expr`` has that value on every thread of the class, None when
        it differs between threads (lane-varying inside a warp, or between warps of the class)."""
        r = self._cache.get(expr)
        if r is None and expr not in self._cache:
            vals = []
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
        return f"warps {w[0]}" if len(w) == 1 else f"warps {w[0]}-{w[-1]}"


@dataclass(slots=True)
class ThreadModel:
    """The CTA's threads for one function: ``n_threads`` in x, whether declared, and the warp classes."""

    n_threads: int
    size_known: bool
    classes: list[WarpClass]


def _thread_predicates(fn: Function, va: ValueAnalysis) -> set:
    preds = set()
    for inst in fn.instructions:
        if inst.guard is not None:
            v = va.reg_value(inst, inst.guard.reg)
            if v is not TOP and v[0] == "tid":
                preds.add(normalize(v)[0][1])
    return preds


def thread_model(fn: Function, va: ValueAnalysis) -> ThreadModel:
    """Partition the warps of ``fn``'s CTA into classes by the thread predicates that guard instructions or
    branches."""
    dims = fn.threads_per_cta()
    known = dims is not None and dims[1] == 1 and dims[2] == 1
    n = min(dims[0], MAX_THREADS) if dims else MAX_THREADS
    n = max(n, 1)
    preds = sorted(_thread_predicates(fn, va), key=repr)
    n_warps = (n + 31) // 32
    sig_of: dict[tuple, list[int]] = {}
    for w in range(n_warps):
        lo, hi = w * 32, min(w * 32 + 32, n)
        sig = []
        for e in preds:
            vals = eval_tid(e, range(lo, hi))
            sig.append(2 if (any(vals) and not all(vals)) else (1 if vals[0] else 0))
        sig_of.setdefault(tuple(sig), []).append(w)
    classes = [WarpClass(tuple(ws), n, known) for ws in sorted(sig_of.values())]
    return ThreadModel(n, known, classes)


class GuardOracle:
    """Evaluates a predicate register at an instruction for one warp class: a decided bool, or a fact key."""

    def __init__(self, va: ValueAnalysis, klass: WarpClass):
        self.va = va
        self.klass = klass
        self._deps: dict = {}

    def evaluate(self, inst: Instruction, reg: Reg, negated: bool = False):
        """``(decided, key, deps)``: ``decided`` is True/False when the predicate is known for this class (then
        ``key`` is None); otherwise ``key`` is the canonical fact key of the predicate *as written with
        ``negated``* and ``decided`` is the polarity that makes the predicate true, so the caller forks into
        ``key=decided`` (predicate true) and ``key=not decided`` (false).  ``deps`` are the instruction indices
        whose re-execution invalidates the key."""
        v = self.va.reg_value(inst, reg)
        if v is TOP:
            reach = self.va.reach.get((inst.index, reg.name), ())
            key = ("phi", reg.name, reach)
            return None, (key, not negated), frozenset(reach)
        if v[0] == "c":
            val = v[1] != 0
            return (val != negated), None, frozenset()
        key, pol = normalize(v)
        if key[0] == "tid":
            d = self.klass.decide(key[1])
            if d is not None:
                return ((d == pol) != negated), None, frozenset()
            # lane-varying inside this class: a per-thread fact
        deps = self._deps.get(key)
        if deps is None:
            deps = frozenset(_dep_index(d) for d in opaque_deps(key))
            self._deps[key] = deps
        return None, (key, pol != negated), deps


def _dep_index(d) -> int:
    if isinstance(d, int):
        return d
    if isinstance(d, tuple) and d and isinstance(d[0], int):
        return d[0]
    return -1


def is_lane_fact(key) -> bool:
    """Whether a fact key is a thread predicate (its value may differ between threads of one warp class)."""
    return isinstance(key, tuple) and bool(key) and key[0] == "tid"


__all__ = ["GuardOracle", "ThreadModel", "WarpClass", "is_lane_fact", "normalize", "thread_model", "_CMP"]
