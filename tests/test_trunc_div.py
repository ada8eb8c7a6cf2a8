"""``threadexpr.trunc_div``/``trunc_rem``: the one exact truncating integer division of the thread expressions, the
CUDA front end's constant evaluators and ``values.fold_op`` (C++ [expr.mul]/4, PTX ISA 9.0 §9.7.1.8-9).  The earlier
``int(a / b)`` went through a double and was wrong above 2**53."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmemlint.frontend.cuda.common import PY_BIN
from tmemlint.threadexpr import trunc_div, trunc_rem

BIG = st.integers(min_value=-(1 << 70), max_value=1 << 70)


@given(BIG, BIG.filter(bool))
def test_trunc_div_rounds_toward_zero_exactly(a: int, b: int) -> None:
    q = Fraction(a, b)
    assert trunc_div(a, b) == (math.floor(q) if q >= 0 else math.ceil(q))
    assert trunc_rem(a, b) == a - b * trunc_div(a, b)
    assert abs(trunc_rem(a, b)) < abs(b) and (trunc_rem(a, b) == 0 or (trunc_rem(a, b) > 0) == (a > 0))


def test_above_two_to_the_53_the_double_was_wrong() -> None:
    a, b = (1 << 60) + 1, 3
    assert int(a / b) != a // b  # the old evaluation, for the record
    assert PY_BIN["div"](a, b) == 384307168202282325
    assert PY_BIN["rem"](a, b) == 2
    assert PY_BIN["div"](-a, b) == -384307168202282325 and PY_BIN["rem"](-a, b) == -2


def test_division_by_zero_raises() -> None:
    with pytest.raises(ZeroDivisionError):
        trunc_div(1, 0)
    with pytest.raises(ZeroDivisionError):
        trunc_rem(1, 0)
