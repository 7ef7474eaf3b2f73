"""Bootstrap, summaries and the verdict rules (paper_checks.inference)."""
from __future__ import annotations

import numpy as np
import pytest

from paper_checks import inference as I
from paper_checks.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def test_summaries_known_values():
    m = np.array([4.0, 4.0, 3.0, 2.0, 1.0, 1.0])
    assert I.thirds(6) == 2
    assert I.late_early_ratio(m) == pytest.approx(0.25, rel=0, abs=1e-15)
    assert I.late_mean(m) == 1.0
    assert I.spearman_depth(np.array([5.0, 4.0, 3.0, 2.0])) == pytest.approx(-1.0)
    assert I.spearman_depth(np.array([1.0, 2.0, 3.0])) == pytest.approx(1.0)
    assert np.isnan(I.spearman_depth(np.array([2.0, 2.0, 2.0])))
    assert np.isnan(I.late_early_ratio(np.zeros(5)))  # 0/0: undefined, not 0 or 1


def test_bootstrap_is_deterministic_and_covers_the_point():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(30, 4)) + np.arange(4)
    d1 = I.boot_draws(V, I.overall_mean, 300, np.random.default_rng(1))
    d2 = I.boot_draws(V, I.overall_mean, 300, np.random.default_rng(1))
    assert np.array_equal(d1, d2)
    lo, hi = I.interval(d1)
    p = I.point(V, I.overall_mean)
    assert lo < p < hi
    # the interval of a mean shrinks like 1/sqrt(U)
    V4 = np.tile(V, (16, 1))
    lo4, hi4 = I.interval(I.boot_draws(V4, I.overall_mean, 300, np.random.default_rng(1)))
    assert (hi4 - lo4) < 0.5 * (hi - lo)


def test_constant_data_has_zero_width_interval():
    V = np.full((10, 3), 2.5)
    assert I.interval(I.boot_draws(V, I.overall_mean, 50, np.random.default_rng(0))) == (2.5, 2.5)
    Vs = [np.full((5, 3), 1.0), np.full((7, 3), 3.0)]
    nd = I.boot_draws_nested(Vs, I.overall_mean, 400, np.random.default_rng(0))
    # seeds resampled: values among {1, 2, 3}, both extremes reachable
    assert set(np.round(nd, 12)) <= {1.0, 2.0, 3.0}
    assert nd.min() == 1.0 and nd.max() == 3.0
    assert I.point(Vs, I.overall_mean) == 2.0


def test_interval_none_when_mostly_undefined():
    assert I.interval(np.array([np.nan] * 10 + [1.0])) is None


@pytest.mark.parametrize("ci,direction,expect", [
    ((-0.5, -0.1), -1, REPRODUCED),
    ((0.1, 0.5), -1, NOT_REPRODUCED),
    ((-0.1, 0.2), -1, INCONCLUSIVE),
    ((0.1, 0.5), +1, REPRODUCED),
    ((-0.5, -0.1), +1, NOT_REPRODUCED),
    (None, -1, INCONCLUSIVE),
    ((float("nan"), 1.0), -1, INCONCLUSIVE),
])
def test_decide_effect_rule(ci, direction, expect):
    assert I.decide(ci, direction)[0] == expect


def test_decide_reference_and_equivalence():
    # effect on the claim side but the trained ratio's interval straddles 1: inconclusive
    assert I.decide((-0.5, -0.1), -1, trained_ci=(0.8, 1.1), reference=1.0)[0] == INCONCLUSIVE
    assert I.decide((-0.5, -0.1), -1, trained_ci=(0.5, 0.9), reference=1.0)[0] == REPRODUCED
    # ratio entirely above 1: the walk changes more late than early -> not reproduced
    assert I.decide((-0.5, -0.1), -1, trained_ci=(1.1, 1.3), reference=1.0)[0] == NOT_REPRODUCED
    # practically no effect relative to the null
    assert I.decide((-0.01, 0.01), -1, null_value=1.0)[0] == NOT_REPRODUCED
    assert I.decide((-0.01, 0.01), -1, null_value=0.1)[0] == INCONCLUSIVE


def test_decide_scale_and_both():
    assert I.decide_scale((0.1, 0.2))[0] == REPRODUCED
    assert I.decide_scale((-0.2, -0.1))[0] == NOT_REPRODUCED
    assert I.decide_scale((-0.1, 0.1))[0] == INCONCLUSIVE
    assert I.decide_both([REPRODUCED, REPRODUCED], True, True)[0] == REPRODUCED
    assert I.decide_both([REPRODUCED, NOT_REPRODUCED], True, True)[0] == NOT_REPRODUCED
    assert I.decide_both([REPRODUCED, INCONCLUSIVE], True, True)[0] == INCONCLUSIVE
    assert I.decide_both([REPRODUCED], True, False)[0] == INCONCLUSIVE
