"""Thread expressions: an integer function of ``%tid.x`` kept as a small tree, and its evaluator.

The CUDA front end builds these trees for ``threadIdx.x`` arithmetic (warp roles, lane tables) and the value
analysis (``tmemlint.analysis.values``) builds them for the same arithmetic in PTX; both evaluate them here, below
either of them.  Integers wrap as PTX registers do (PTX ISA §5.2).
"""

from __future__ import annotations

from functools import lru_cache


def eval_tid(expr: tuple, tids: range) -> list[int]:
    """Evaluate a thread expression for every ``%tid.x`` in ``tids``.

    Nodes: ``("x",)`` the thread index; ``(op, e, k)`` with op in shr/shl/and/or/xor/add/sub/mul/div/rem and a
    constant ``k``; ``("shfl", e, k)`` the value of ``e`` at lane ``k`` of the same warp (``shfl.sync.idx``);
    ``("elect",)`` 1 on lane 0 of each warp (``elect.sync`` elects one lane); ``("cmp", c, e, k)`` 0/1;
    ``("k", v)`` the constant ``v``; ``("bin", op, e1, e2)`` an operation of two thread expressions (a constant
    table indexed by the warp, ``(kWarpAssignment >> 4 * warp) & 0xF``); ``("sel", p, e1, e2)`` ``e1`` where ``p`` is non-zero, else ``e2``
    (``selp`` on a thread predicate: CUTLASS's warp-role chains); ``("wrap", ty, e)`` ``e`` as a register of
    integer type ``ty`` holds it (``wrap``: the operand of an unsigned comparison, ``(warp - 4) <=u 7``)."""
    return list(_eval_tid(expr, tids.start, tids.stop))


@lru_cache(maxsize=4096)
def _eval_tid(expr: tuple, lo: int, hi: int) -> tuple[int, ...]:
    tag = expr[0]
    if tag == "x":
        return tuple(range(lo, hi))
    if tag == "elect":
        return tuple(1 if t % 32 == 0 else 0 for t in range(lo, hi))
    if tag == "shfl":
        inner = expr[1]
        k = expr[2]
        out = []
        for t in range(lo, hi):
            src = (t & ~31) + k
            out.append(_eval_tid(inner, src, src + 1)[0])
        return tuple(out)
    if tag == "k":
        return (expr[1],) * (hi - lo)
    if tag == "wrap":
        return tuple(wrap(v, expr[1]) for v in _eval_tid(expr[2], lo, hi))
    if tag == "bin":
        f = BIN[expr[1]]
        return tuple(f(x, y) for x, y in zip(_eval_tid(expr[2], lo, hi), _eval_tid(expr[3], lo, hi)))
    if tag == "sel":
        ps, a, b = (_eval_tid(e, lo, hi) for e in expr[1:])
        return tuple(x if p else y for p, x, y in zip(ps, a, b))
    if tag == "cmp":
        vals = _eval_tid(expr[2], lo, hi)
        k = expr[3]
        f = CMP[expr[1]]
        return tuple(1 if f(v, k) else 0 for v in vals)
    vals = _eval_tid(expr[1], lo, hi)
    k = expr[2]
    f = BIN[tag]
    return tuple(f(v, k) for v in vals)


def wrap(v: int, ty: str | None) -> int:
    """``v`` as a register of type ``ty`` holds it (PTX ISA §5.2: integers wrap at their width): unsigned and
    bit types in [0, 2^w), signed types in [-2^(w-1), 2^(w-1)); unchanged when ``ty`` is None."""
    if ty is None:
        return v
    w = int(ty[1:])
    v &= (1 << w) - 1
    return v - (1 << w) if ty[0] == "s" and v >> (w - 1) else v


def trunc_div(a: int, b: int) -> int:
    """``a / b`` rounded toward zero, exactly (C++ [expr.mul]/4, PTX ISA 9.0 §9.7.1.8 ``div`` on integers).
    Integer arithmetic throughout: ``int(a / b)`` goes through a double and is wrong above 2**53.
    Raises ZeroDivisionError when ``b`` is 0."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def trunc_rem(a: int, b: int) -> int:
    """The remainder of ``trunc_div``: ``a - b * trunc_div(a, b)``, the sign of ``a`` (C++ [expr.mul]/4, PTX ISA
    9.0 §9.7.1.9 ``rem``).  Raises ZeroDivisionError when ``b`` is 0."""
    return a - b * trunc_div(a, b)


def _div(a, b):
    return trunc_div(a, b) if b else 0


def _rem(a, b):
    return trunc_rem(a, b) if b else 0


BIN = {
    "shr": lambda a, b: a >> b if b < 64 else 0,
    "shl": lambda a, b: (a << b) & 0xFFFFFFFFFFFFFFFF if b < 64 else 0,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _div,
    "rem": _rem,
    "min": min,
    "max": max,
}
CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "lo": lambda a, b: a < b,
    "ls": lambda a, b: a <= b,
    "hi": lambda a, b: a > b,
    "hs": lambda a, b: a >= b,
}
