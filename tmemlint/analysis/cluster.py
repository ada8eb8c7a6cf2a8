"""Which CTA of a cluster runs a path: the leader of a CTA pair, its peer, or either.

A ``.cta_group::2`` operation is issued by one thread of the *pair* (PTX ISA §9.7.16.2.4, Table 46
``#tcgen05-ops-execution-granularity``): the two CTAs of a cluster whose ``%cluster_ctarank`` differs only in bit 0,
the *leader* being the even one (``#tcgen05-cta-pair``).  Whether a path can run in the odd CTA is decided from the
path's branch facts (``tmemlint.analysis.threads``) that compare CTA-identity special registers (``%cluster_ctarank``,
``%cluster_ctaid.*``, ``%ctaid.*``, ``%clusterid.*``: PTX ISA §10.7-10.14) with constants or with each other, by
evaluating them for every CTA of every cluster shape the launch may have.

Cluster shapes: from ``.reqnctapercluster`` when the kernel declares it; otherwise every shape of at most 16 CTAs
(``.maxclusterrank`` when declared) whose x extent is even, the only shape in which a CTA pair lies along x, as
every paired kernel known launches it (CUTLASS requires the cluster's M mode to be a multiple of 2 for 2-SM MMA
atoms; ThunderKittens, DeepGEMM, FlashMLA launch (2, 1, 1)).  With an even x extent the pair is ``(2j, 2j+1)`` in
x, so ``%ctaid.x & 1`` and ``%cluster_ctaid.x & 1`` tell leader and peer apart as ``%cluster_ctarank & 1`` does
(a documented limit: a kernel that pairs CTAs along y and tests ``%ctaid.x`` parity without declaring its
cluster shape is taken as paired along x).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import cast

from tmemlint.analysis.values import (MAX_DEPTH, TOP, Cmp, Const, Op, Opaque, PAnd, PNot, POr, SReg, Tid, Value,
                                      ValueAnalysis)
from tmemlint.ir import Function, Reg
from tmemlint.threadexpr import BIN, CMP

Env = dict[str, int]
"""Special-register values of one CTA: ``{"%cluster_ctarank": 1, "%ctaid.x": 3, …}``."""
Facts = frozenset[tuple[Value, bool]]
"""A path's branch facts, ``paths.Facts`` (not imported from there: ``paths`` imports ``threads``, which imports this
module)."""

#: CTA-identity special registers, whose values differ between the CTAs of one launch.
IDENTITY_SREGS = ("%cluster_ctarank", "%cluster_ctaid", "%ctaid", "%clusterid")
_MAX_CLUSTER = 16

LEADER, EITHER, UNKNOWN = "leader", "either", "unknown"


#: The identity registers that differ between the CTAs of one cluster (``%clusterid`` is the cluster's, the same
#: in all of them: PTX ISA §10, special registers).
CTA_IDENTITY_SREGS = ("%cluster_ctarank", "%cluster_ctaid", "%ctaid")


def _is_identity(name: str, sregs: tuple[str, ...] = IDENTITY_SREGS) -> bool:
    return any(name == p or name.startswith(p + ".") for p in sregs)


@lru_cache(maxsize=64)
def _shapes(declared: tuple[int, ...] | None, max_rank: int | None) -> tuple[tuple[int, int], ...]:
    if declared:
        d = list(declared) + [1, 1]
        return ((d[0], d[1] * d[2]),)
    limit = min(max_rank or _MAX_CLUSTER, _MAX_CLUSTER)
    return tuple((x, y) for x in (2, 4, 8, 16) for y in (1, 2, 4, 8, 16) if x * y <= limit)


@lru_cache(maxsize=64)
def _environments(shapes: tuple[tuple[int, int], ...]) -> tuple[tuple[Env, bool], ...]:
    """``(special-register values, is the CTA the pair's leader)`` for each CTA of two clusters in x and two in
    y of each shape (enough to tell ``%ctaid`` parity and ``%clusterid`` tests apart)."""
    out: list[tuple[Env, bool]] = []
    for nx, ny in shapes:
        for gx in (0, 1):
            for gy in (0, 1):
                for cy in range(ny):
                    for cx in range(nx):
                        rank = cx + cy * nx
                        env = {"%cluster_ctarank": rank, "%cluster_ctaid.x": cx, "%cluster_ctaid.y": cy,
                               "%cluster_ctaid.z": 0, "%cluster_nctaid.x": nx, "%cluster_nctaid.y": ny,
                               "%cluster_nctaid.z": 1, "%cluster_nctarank": nx * ny, "%ctaid.x": gx * nx + cx,
                               "%ctaid.y": gy * ny + cy, "%ctaid.z": 0, "%clusterid.x": gx, "%clusterid.y": gy,
                               "%clusterid.z": 0}
                        out.append((env, rank % 2 == 0))
    return tuple(out)


def identity_environments(fn: Function) -> tuple[Env, ...]:
    """The special-register values (``{"%cluster_ctarank": 1, "%ctaid.x": 3, …}``) of every CTA of two clusters in
    x and two in y of each cluster shape ``fn``'s launch may have (module docstring)."""
    shapes = _shapes(fn.directives.get("reqnctapercluster"), (fn.directives.get("maxclusterrank") or (None,))[0])
    return tuple(env for env, _leader in _environments(shapes))


def evaluate(v: Value, env: Env) -> int | None:
    """``v`` (a ``ValueAnalysis`` value) with the special registers of ``env`` (``{"%cluster_ctarank": 3, …}``);
    None when it depends on anything else.  Also used for comparisons of the cluster's extents
    (``threads.cluster_truth``)."""
    match v:
        case Const(value=k):
            return k
        case SReg(name=sreg):
            return env.get(sreg)
        case Op(name="bfe", args=(x, p, n)):  # bit-field extract (PTX ISA §9.7.1.18), unsigned
            a, pos, ln = evaluate(x, env), evaluate(p, env), evaluate(n, env)
            if a is None or pos is None or ln is None:
                return None
            return (a >> pos) & ((1 << ln) - 1) if 0 <= pos < 64 and 0 <= ln <= 64 else None
        case Op(name=op, args=(x, y)) if op in BIN:
            a, b = evaluate(x, env), evaluate(y, env)
            if a is None or b is None:
                return None
            try:
                # BIN's lambdas are not annotated (threadexpr): every one maps two integers to an integer
                return cast("Callable[[int, int], int]", BIN[op])(a, b)
            except (ZeroDivisionError, ValueError, OverflowError):
                return None
        case Cmp(cmp=c, a=x, b=y):
            a, b = evaluate(x, env), evaluate(y, env)
            return None if a is None or b is None else int(CMP[c](a, b))
        case PNot(p=x):
            a = evaluate(x, env)
            return None if a is None else int(not a)
        case PAnd(tag=tag, p=x, q=y) | POr(tag=tag, p=x, q=y):
            a, b = evaluate(x, env), evaluate(y, env)
            if a is None or b is None:
                return None
            return int(bool(a) and bool(b)) if tag == "pand" else int(bool(a) or bool(b))
    return None

def mentions_identity(v: object, depth: int = 0, sregs: tuple[str, ...] = IDENTITY_SREGS) -> bool:
    """Whether value ``v`` is computed from a CTA-identity special register (at any depth of its tuple); ``sregs``:
    which ones count (``CTA_IDENTITY_SREGS``: only those that tell the CTAs of one cluster apart)."""
    if v is TOP or depth > 2 * MAX_DEPTH or not isinstance(v, tuple) or not v:  # an op chain, then predicates
        return False
    if type(v) is SReg:
        return isinstance(v.name, str) and _is_identity(v.name, sregs)
    return any(mentions_identity(x, depth + 1, sregs) for x in v[1:] if isinstance(x, tuple))


class PairRoles:
    """The CTA-pair question for one function: on a path with these facts, which CTA of the pair runs?

    ``va`` is the function's ``ValueAnalysis``: a fact about a value merged from several definitions (a ``phi``
    key) or loaded after being computed from the CTA's identity is recognised as being about the identity, so
    that it makes the answer ``UNKNOWN`` rather than being ignored."""

    def __init__(self, fn: Function, va: ValueAnalysis) -> None:
        shapes = _shapes(fn.directives.get("reqnctapercluster"),
                         (fn.directives.get("maxclusterrank") or (None,))[0])
        self._envs = _environments(shapes)
        self._va = va
        self._memo: dict[Facts, str] = {}
        self._derived: dict[object, bool] = {}

    def _from_identity(self, v: object, depth: int = 0) -> bool:
        """Whether ``v`` is, or is computed from, a CTA-identity value, looking through opaque definitions and
        merged (``phi``) registers up to a few definitions deep."""
        if mentions_identity(v):
            return True
        if depth > 4 or not isinstance(v, tuple) or not v:
            return False
        hit = self._derived.get(v)
        if hit is not None:
            return hit
        self._derived[v] = False  # cycles through loop-carried registers
        va = self._va
        out = False
        if v[0] == "phi":
            out = any(self._from_identity(va.def_value.get((d, v[1]), TOP), depth + 1) for d in v[2])
        elif type(v) is Opaque:
            d = v.d[0] if isinstance(v.d, tuple) and v.d and isinstance(v.d[0], int) else v.d
            if isinstance(d, int) and 0 <= d < len(va.insts):
                inst = va.insts[d]
                for o in inst.operands[1:]:
                    vals = [va.value(inst, o)]
                    if type(o) is Reg:  # a register merged from several definitions: each one's value
                        vals += [va.def_value.get((r, o.name), TOP) for r in va.reaching_defs(inst, o.name)]
                    if any(self._from_identity(x, depth + 1) for x in vals):
                        out = True
                        break
        else:
            out = any(self._from_identity(x, depth + 1) for x in v[1:] if isinstance(x, tuple))
        self._derived[v] = out
        return out

    def role(self, facts: Facts) -> str:
        """``LEADER`` when every CTA whose identity satisfies the facts about CTA identity is the even CTA of its
        pair; ``EITHER`` when an odd CTA satisfies them too (the path runs in both CTAs of a pair); ``UNKNOWN``
        when a fact mixes CTA identity with values the analysis cannot evaluate (``%ctaid.x`` compared with a
        value loaded from memory), so the path's CTA cannot be told."""
        hit = self._memo.get(facts)
        if hit is not None:
            return hit
        checks: list[tuple[Value, bool]] = []
        for key, val in facts:
            if not isinstance(key, tuple) or not key or type(key) is Tid or key[0] == "regval":
                continue
            if mentions_identity(key):
                checks.append((key, val))
            elif self._from_identity(key):
                self._memo[facts] = UNKNOWN
                return UNKNOWN
        result = EITHER
        if checks:
            leader_only = True
            satisfiable = False
            for env, leader in self._envs:
                ok = True
                for key, val in checks:
                    t = evaluate(key, env)
                    if t is None:
                        self._memo[facts] = UNKNOWN
                        return UNKNOWN
                    if bool(t) != val:
                        ok = False
                        break
                if ok:
                    satisfiable = True
                    if not leader:
                        leader_only = False
                        break
            result = LEADER if leader_only and satisfiable else (EITHER if not leader_only else UNKNOWN)
        self._memo[facts] = result
        return result

    def senders(self, facts: Facts, target: Value) -> int:
        """How many CTAs of one cluster run a path with these facts and send to the same CTA, the one whose rank
        is ``target`` (a ``ValueAnalysis`` value: a ``mapa`` rank): the most CTAs of one cluster that agree on the
        target, taken as the fewest over the cluster shapes the launch may have (a lower bound).  1 when the facts
        or the target cannot be evaluated for every CTA.  PTX ISA §9.7.9.22 (``mapa``), §10.12 (``%cluster_ctarank``)."""
        checks: list[tuple[Value, bool]] = []
        for key, val in facts:
            if not isinstance(key, tuple) or not key or type(key) is Tid or key[0] == "regval":
                continue
            if mentions_identity(key):
                checks.append((key, val))
            elif self._from_identity(key):
                return 1
        per_shape: dict[tuple[int, int], dict[int, int]] = {}
        for env, _leader in self._envs:
            if env["%clusterid.x"] or env["%clusterid.y"]:
                continue  # one cluster of each shape
            shape = (env["%cluster_nctaid.x"], env["%cluster_nctaid.y"])
            by_target = per_shape.setdefault(shape, {})
            ok = True
            for key, val in checks:
                t = evaluate(key, env)
                if t is None:
                    return 1
                if bool(t) != val:
                    ok = False
                    break
            if not ok:
                continue
            r = evaluate(target, env)
            if r is None:
                return 1
            by_target[r] = by_target.get(r, 0) + 1
        if not per_shape:
            return 1
        return max(1, min(max(t.values(), default=0) for t in per_shape.values()))


__all__ = ["CTA_IDENTITY_SREGS", "EITHER", "IDENTITY_SREGS", "LEADER", "PairRoles", "UNKNOWN", "evaluate", "mentions_identity"]
