"""``values.fold_op``, the one integer folder of the value analysis and of ``order``'s concrete loop runs (issue
24: one constant-set domain), against Python's arithmetic modulo 2^w for every opcode and type it claims (PTX ISA
§5.2: integers wrap at their width; §9.7.1 integer arithmetic, §9.7.6 comparison and selection, §9.7.8 logic and
shift, §9.7.9.21 ``cvt``).

The reference below is written from the ISA's definitions with other means than the folder (``Fraction`` for the
truncating division, ``%`` and powers of two instead of masks and shifts), on operands of any representation: each
is read as the operand's type holds it.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmemlint.analysis.values import FOLDED_OPS, MAX_SET, ConstSet, const, fold_op, fold_values, opaque

TYPES = ["u16", "u32", "u64", "s16", "s32", "s64", "b16", "b32", "b64"]
#: Operands: anything from -2^65 to 2^65 (wider than any register: only the low bits may count).
ANY = st.integers(min_value=-(1 << 65), max_value=1 << 65)


def held(v: int, ty: str) -> int:
    """``v`` as a register of type ``ty`` holds it: modulo 2^w, in [-2^(w-1), 2^(w-1)) for ``.s`` types."""
    w = int(ty[1:])
    m = v % 2 ** w
    return m - 2 ** w if ty[0] == "s" and m >= 2 ** (w - 1) else m


def trunc_div(a: int, b: int) -> int:
    """``a / b`` rounded toward zero (PTX ISA §9.7.1.8)."""
    return int(Fraction(a, b))


def wide(ty: str) -> str:
    return ty[0] + str(2 * int(ty[1:]))


def reference(op: str, mods: tuple[str, ...], ty: str, args: tuple[int, ...]) -> int | None:
    """The ISA's result of ``op.mods.ty`` on ``args`` (None where the ISA leaves it undefined)."""
    w = int(ty[1:])
    x = [held(a, ty) for a in args]
    if op in ("add", "sub", "and", "or", "xor", "min", "max"):
        a, b = x
        r = {"add": a + b, "sub": a - b, "min": min(a, b), "max": max(a, b)}.get(op)
        if r is None:  # the bitwise operations on the w-bit patterns
            ua, ub = a % 2 ** w, b % 2 ** w
            bits = [((ua >> i) & 1, (ub >> i) & 1) for i in range(w)]
            f = {"and": lambda p, q: p & q, "or": lambda p, q: p | q, "xor": lambda p, q: p ^ q}[op]
            r = sum(f(p, q) << i for i, (p, q) in enumerate(bits))
        return held(r, ty)
    if op == "mul":
        p = x[0] * x[1]
        if "wide" in mods:
            return held(p, wide(ty))
        return held(p // 2 ** w, ty) if "hi" in mods else held(p, ty)
    if op == "mad":
        p = x[0] * x[1]
        if "wide" in mods:
            return held(p + held(args[2], wide(ty)), wide(ty))
        return held((p // 2 ** w if "hi" in mods else p) + x[2], ty)
    if op in ("div", "rem"):
        a, b = x
        if b == 0:
            return None
        q = trunc_div(a, b)
        return held(q if op == "div" else a - b * q, ty)
    if op in ("shl", "shr"):
        a, n = x[0], min(args[1] % 2 ** 32, w)
        return held(a * 2 ** n, ty) if op == "shl" else held(a // 2 ** n, ty)
    if op == "neg":
        return held(-x[0], ty)
    if op == "abs":
        return held(abs(x[0]), ty)
    if op == "not":
        return held(2 ** w - 1 - x[0] % 2 ** w, ty)
    if op == "selp":
        return held(args[0] if args[2] else args[1], ty)
    raise AssertionError(op)


BINARY = [("add", ()), ("sub", ()), ("mul", ("lo",)), ("mul", ("hi",)), ("mul", ("wide",)), ("div", ()),
          ("rem", ()), ("min", ()), ("max", ()), ("and", ()), ("or", ()), ("xor", ()), ("shl", ()), ("shr", ())]


@pytest.mark.parametrize("op,mods", BINARY, ids=[".".join((o, *m)) for o, m in BINARY])
@settings(max_examples=60, deadline=None)
@given(ty=st.sampled_from(TYPES), a=ANY, b=ANY | st.integers(min_value=-3, max_value=70))
def test_binary_ops_equal_python_modulo_the_width(op, mods, ty, a, b):
    if op in ("mul", "div", "rem", "min", "max") and ty[0] == "b" or op in ("shl", "and", "or", "xor", "not") \
            and ty[0] == "s" or op == "mul" and "wide" in mods and ty.endswith("64"):
        return  # not a type PTX gives the instruction (§9.7.1, §9.7.8)
    assert fold_op((op, *mods, ty), (a, b)) == reference(op, mods, ty, (a, b))


@pytest.mark.parametrize("mods", [("lo",), ("hi",), ("wide",)])
@settings(max_examples=60, deadline=None)
@given(ty=st.sampled_from(["u16", "u32", "u64", "s16", "s32", "s64"]), a=ANY, b=ANY, c=ANY)
def test_mad_equals_python(mods, ty, a, b, c):
    if "wide" in mods and ty.endswith("64"):
        return
    assert fold_op(("mad", *mods, ty), (a, b, c)) == reference("mad", mods, ty, (a, b, c))


@pytest.mark.parametrize("op", ["neg", "abs", "not"])
@settings(max_examples=60, deadline=None)
@given(ty=st.sampled_from(TYPES), a=ANY)
def test_unary_ops_equal_python(op, ty, a):
    if op in ("neg", "abs") and ty[0] != "s" or op == "not" and ty[0] == "s":
        return
    assert fold_op((op, ty), (a,)) == reference(op, (), ty, (a,))


@settings(max_examples=100, deadline=None)
@given(ty=st.sampled_from(TYPES), a=ANY, b=ANY, c=st.integers(min_value=0, max_value=3))
def test_selp_chooses_by_the_predicate(ty, a, b, c):
    assert fold_op(("selp", ty), (a, b, c)) == reference("selp", (), ty, (a, b, c))


CMPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
        "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b}


@pytest.mark.parametrize("cmp", sorted(CMPS))
@settings(max_examples=60, deadline=None)
@given(ty=st.sampled_from(TYPES), a=ANY, b=ANY, c=st.integers(min_value=0, max_value=1),
       bop=st.sampled_from([None, "and", "or", "xor"]))
def test_setp_compares_as_the_type_holds_the_operands(cmp, ty, a, b, c, bop):
    p = int(CMPS[cmp](held(a, ty), held(b, ty)))
    if bop is None:
        assert fold_op(("setp", cmp, ty), (a, b)) == p
    else:
        want = {"and": p & c, "or": p | c, "xor": p ^ c}[bop]
        assert fold_op(("setp", cmp, bop, ty), (a, b, c)) == want


@settings(max_examples=200, deadline=None)
@given(dst=st.sampled_from(TYPES[:6]), src=st.sampled_from(TYPES[:6]), a=ANY, sat=st.booleans())
def test_cvt_between_integer_types(dst, src, a, sat):
    """§9.7.9.21: the source operand's value (of type ``src``) as type ``dst``, truncated or extended; ``.sat``
    clamps it to ``dst``'s range."""
    v = held(a, src)
    if sat:
        w = int(dst[1:])
        lo, hi = (-2 ** (w - 1), 2 ** (w - 1) - 1) if dst[0] == "s" else (0, 2 ** w - 1)
        assert fold_op(("cvt", "sat", dst, src), (a,)) == min(max(v, lo), hi)
    else:
        assert fold_op(("cvt", dst, src), (a,)) == held(v, dst)


@given(a=st.integers(min_value=0, max_value=1), b=st.integers(min_value=0, max_value=1))
def test_pred_logic(a, b):
    assert fold_op(("and", "pred"), (a, b)) == a & b
    assert fold_op(("or", "pred"), (a, b)) == a | b
    assert fold_op(("xor", "pred"), (a, b)) == a ^ b
    assert fold_op(("not", "pred"), (a,)) == 1 - a
    assert fold_op(("mov", "pred"), (a,)) == a


@settings(max_examples=100, deadline=None)
@given(a=ANY, b=ANY, hi=st.booleans(), signed=st.booleans())
def test_mul24_multiplies_the_low_24_bits(a, b, hi, signed):
    """§9.7.1.5: the 48-bit product of the operands' low 24 bits (sign-extended for ``.s32``); ``.lo`` its low 32
    bits, ``.hi`` bits 47-16."""
    ty = "s32" if signed else "u32"
    x, y = (held(v, "s24" if signed else "u24") for v in (a, b))
    p = x * y
    want = held(p // 2 ** 16 if hi else p, ty)
    assert fold_op(("mul24", "hi" if hi else "lo", ty), (a, b)) == want


def test_what_is_not_folded():
    assert fold_op(("div", "u32"), (5, 0)) is None  # undefined (§9.7.1.8)
    assert fold_op(("rem", "s32"), (5, 0)) is None
    assert fold_op(("add", "f32"), (1, 2)) is None  # floating point
    assert fold_op(("cvt", "rn", "f32", "u32"), (1,)) is None
    assert fold_op(("add", "cc", "u32"), (1, 2)) is None  # a carry out is not modelled
    assert fold_op(("popc", "b32"), (7,)) is None  # not one of FOLDED_OPS
    assert "popc" not in FOLDED_OPS
    assert fold_op(("add", "sat", "s32"), ((1 << 31) - 1, 1)) == (1 << 31) - 1  # §9.7.1.1: clamped


def test_fold_values_is_the_constant_set_domain():
    """``fold_values``: every combination of the candidates folded; a set of one is a constant; more than
    ``MAX_SET`` results, or one combination that does not fold, is no value."""
    cs = ConstSet("cs", frozenset({1, 2}))
    assert fold_values(("add", "u32"), [cs, const(10)]) == ConstSet("cs", frozenset({11, 12}))
    assert fold_values(("and", "b32"), [cs, const(4)]) == const(0)
    assert fold_values(("sub", "u32"), [const(0), cs]) == ConstSet("cs", frozenset({0xFFFFFFFF, 0xFFFFFFFE}))
    assert fold_values(("div", "u32"), [const(4), ConstSet("cs", frozenset({0, 2}))]) is None
    big = ConstSet("cs", frozenset(range(MAX_SET)))
    assert fold_values(("mul", "lo", "u32"), [big, ConstSet("cs", frozenset({1, 100}))]) is None
    assert fold_values(("add", "u32"), [const(1), opaque(3)]) is None
