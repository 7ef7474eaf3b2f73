"""Threshold and decision in one home (:mod:`numerics.tolerance`): ``judge`` is the rule
"``residual ≤ 64 · size · ε · scale``" decided three ways, checked against the literal definition in
exact rational arithmetic (``fractions.Fraction`` of the very floats involved)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import tolerance
from numerics.errors import DTypeError, ParameterError, ShapeError
from numerics.tolerance import judge, rel_err, tol
from tests.helpers import raises_named

EPS = {torch.float64: Fraction(2) ** -52, torch.float32: Fraction(2) ** -23}


def literal(residual: float, dtype, size: int, scale: float, error: float) -> tuple[bool, bool]:
    thr = 64 * max(size, 1) * EPS[dtype] * max(Fraction(scale), Fraction(2) ** -52)
    r, e = Fraction(residual), Fraction(error)
    return r + e <= thr, r - e > thr


@given(
    dtype=st.sampled_from([torch.float64, torch.float32]),
    size=st.integers(1, 10_000),
    scale=st.sampled_from([0.0, 1e-300, 0.5, 1.0, 3.0, 1e6]),
    ratio=st.sampled_from([0.0, 0.25, 0.999, 1.0, 1.001, 4.0]),
    err_ratio=st.sampled_from([0.0, 1e-3, 0.5]),
)
def test_judge_is_the_literal_rule_away_from_rounding(dtype, size, scale, ratio, err_ratio):
    thr = tol(dtype, size, scale=scale)
    residual, error = ratio * thr, err_ratio * thr
    # the float sums in decide round; compare only where the exact sums are not within one ulp of thr
    exact_lo, exact_hi = Fraction(residual) - Fraction(error), Fraction(residual) + Fraction(error)
    ulp = Fraction(np.spacing(thr))
    if abs(exact_hi - Fraction(thr)) <= ulp or abs(exact_lo - Fraction(thr)) <= ulp:
        return
    assert judge(residual, dtype, size, scale=scale, error=error) == literal(residual, dtype, size, scale, error)


def test_judge_is_three_valued_and_elementwise():
    thr = tol(torch.float64, 8, scale=2.0)
    res = torch.tensor([0.0, thr, 2 * thr, float("inf")], dtype=torch.float64)
    holds, fails = judge(res, torch.float64, 8, scale=2.0, error=0.1 * thr)
    assert holds.tolist() == [True, False, False, False]
    assert fails.tolist() == [False, False, True, True]  # thr ± error: undecided; an infinite residual fails
    holds, fails = judge(np.array([0.0, thr]), torch.float64, 8, scale=2.0, error=np.array([0.0, np.inf]))
    assert holds.tolist() == [True, False] and fails.tolist() == [False, False]  # an infinite error: undecided


def test_a_check_reads_threshold_and_decision_from_one_module():
    # what the checks import: the threshold and the three-valued rule, with the verdict words
    for name in ("tol", "judge", "decide", "rounding_error", "status", "combine", "HOLDS", "FAILS", "UNDECIDED"):
        assert name in tolerance.__all__
    assert tolerance.status(*tolerance.decide(1.0, 2.0, 0.5)) == tolerance.HOLDS
    assert tolerance.status(*tolerance.decide(3.0, 2.0, 0.5)) == tolerance.FAILS
    assert tolerance.status(*tolerance.decide(2.2, 2.0, 0.5)) == tolerance.UNDECIDED


def test_a_size_of_zero_counts_as_one():
    assert tol(torch.float64, 0) == tol(torch.float64, 1) == tol(torch.float64, np.int64(1))


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("call", "err", "arg"),
    [
        # an error bound is >= 0: error=-1 made (holds, fails) = (True, True), both at once
        (lambda: judge(1e-3, torch.float64, 4, error=-1), ParameterError, "error"),
        (lambda: judge(1e-3, torch.float64, 4, error=NAN), ParameterError, "error"),
        (
            lambda: judge(0.0, torch.float64, 4, error=torch.tensor([0.0, -1e-300], dtype=torch.float64)),
            ParameterError,
            "error",
        ),
        # a residual is a norm: a negative one held; a NaN one is a computation that did not happen
        (lambda: judge(-1.0, torch.float64), ParameterError, "residual"),
        (lambda: judge(np.array([0.0, -5e-324]), torch.float64), ParameterError, "residual"),
        (lambda: judge(torch.tensor([0.0, NAN]), torch.float64), ParameterError, "residual"),
        (lambda: judge(NAN, torch.float64), ParameterError, "residual"),
        (lambda: judge(torch.tensor([1j]), torch.complex128), DTypeError, "residual"),
        # scale=inf held for anything, scale=nan made tol NaN, a negative scale counted as ulp(1)
        (lambda: judge(1e300, torch.float64, scale=INF), ParameterError, "scale"),
        (lambda: tol(torch.float64, scale=NAN), ParameterError, "scale"),
        (lambda: tol(torch.float64, scale=-1.0), ParameterError, "scale"),
        (lambda: tol(torch.float64, scale="1"), ParameterError, "scale"),
        (lambda: tol(torch.float64, safety=0.0), ParameterError, "safety"),
        # sizes -5 and 2.5 were coerced (to 1 and 2)
        (lambda: tol(torch.float64, -5), ParameterError, "size"),
        (lambda: tol(torch.float64, 2.5), ParameterError, "size"),
        (lambda: tol(torch.float64, True), ParameterError, "size"),
        (lambda: judge(0.0, torch.float64, -1), ParameterError, "size"),
        # int64 / a string are not precisions
        (lambda: tol(torch.int64), DTypeError, "dtype"),
        (lambda: judge(0.0, "float64"), DTypeError, "dtype"),
        (lambda: tolerance.eps(torch.bool), DTypeError, "dtype"),
        # rel_err broadcast (3,) against (2, 3) or raised torch's RuntimeError
        (lambda: rel_err(torch.ones(3), torch.ones(2, 3)), ShapeError, "(a, b)"),
        (lambda: rel_err(torch.ones(3), torch.ones(4)), ShapeError, "(a, b)"),
    ],
)
def test_bad_input_to_the_tolerance_is_refused_naming_the_argument(call, err, arg):
    raises_named(err, arg, call)


def test_judge_reads_its_safety():
    """``safety`` scales the threshold: at 1000·thr64 the residual 2·tol(...) holds, at the default it fails."""
    thr = tol(torch.float64, 4)
    assert judge(2 * thr, torch.float64, 4) == (False, True)
    assert judge(2 * thr, torch.float64, 4, safety=1000.0) == (True, False)
    assert judge(2 * thr, torch.float64, 4, safety=1000.0) == judge(2 * thr, torch.float64, 4, scale=1000.0 / 64)


@pytest.mark.parametrize(
    ("dtype", "real"),
    [(torch.complex64, torch.float32), (torch.complex128, torch.float64), (torch.float16, torch.float16)],
)
def test_eps_of_a_complex_dtype_is_that_of_its_real_part(dtype, real):
    assert tolerance.eps(dtype) == torch.finfo(real).eps
    assert tol(dtype, 3) == 64 * 3 * torch.finfo(real).eps
