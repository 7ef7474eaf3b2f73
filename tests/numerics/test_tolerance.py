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
from numerics.tolerance import judge, tol

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
    res = torch.tensor([0.0, thr, 2 * thr, float("nan")], dtype=torch.float64)
    holds, fails = judge(res, torch.float64, 8, scale=2.0, error=0.1 * thr)
    assert holds.tolist() == [True, False, False, False]
    assert fails.tolist() == [False, False, True, False]  # thr ± error: undecided; NaN: undecided


def test_a_check_reads_threshold_and_decision_from_one_module():
    # what the checks import: the threshold and the three-valued rule, with the verdict words
    for name in ("tol", "judge", "decide", "rounding_error", "status", "combine", "HOLDS", "FAILS", "UNDECIDED"):
        assert name in tolerance.__all__
    assert tolerance.status(*tolerance.decide(1.0, 2.0, 0.5)) == tolerance.HOLDS
    assert tolerance.status(*tolerance.decide(3.0, 2.0, 0.5)) == tolerance.FAILS
    assert tolerance.status(*tolerance.decide(2.2, 2.0, 0.5)) == tolerance.UNDECIDED


@pytest.mark.parametrize("size", [0, -3])
def test_a_size_below_one_counts_as_one(size):
    assert tol(torch.float64, size) == tol(torch.float64, 1)
