"""Bootstrap, summaries and the verdict rules (paper_checks.inference)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from numerics.errors import NonFiniteError, ParameterError, ShapeError
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


@pytest.mark.parametrize(
    "ci,direction,expect",
    [
        ((-0.5, -0.1), -1, REPRODUCED),
        ((0.1, 0.5), -1, NOT_REPRODUCED),
        ((-0.1, 0.2), -1, INCONCLUSIVE),
        ((0.1, 0.5), +1, REPRODUCED),
        ((-0.5, -0.1), +1, NOT_REPRODUCED),
        (None, -1, INCONCLUSIVE),
        ((float("nan"), 1.0), -1, INCONCLUSIVE),
    ],
)
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


def test_spearman_matches_scipy_spearmanr_row_by_row():
    """The vectorised ρ (ranks + Pearson along rows) against scipy.stats.spearmanr on each row, with
    ties (rounded values) and the NaN cases (constant, non-finite, fewer than 3 layers)."""
    rng = np.random.default_rng(4)
    M = np.round(rng.normal(size=(200, 9)), 1)  # many ties
    M[3] = 2.0
    M[5, 4] = np.nan
    M[7, 2] = np.inf
    rho = I.spearman_depth(M)
    assert rho.shape == (200,)
    for i, row in enumerate(M):
        if i in (3, 5, 7):
            assert np.isnan(rho[i]) and np.isnan(I.spearman_depth(row))
            continue
        ref = stats.spearmanr(np.arange(9), row).statistic
        assert rho[i] == pytest.approx(ref, abs=1e-14)
        assert I.spearman_depth(row) == pytest.approx(ref, abs=1e-14)
    assert np.isnan(I.spearman_depth(np.array([1.0, 2.0])))
    # the bootstrap evaluates the row-wise summary once on all draws: same draws as row by row
    V = rng.normal(size=(12, 6)) + np.arange(6)
    d = I.boot_draws(V, I.spearman_depth, 50, np.random.default_rng(2))
    idx = np.random.default_rng(2).integers(0, 12, size=(50, 12))
    ref = [stats.spearmanr(np.arange(6), V[ix].mean(0)).statistic for ix in idx]
    np.testing.assert_allclose(d, ref, rtol=0, atol=1e-14)


def _wilson_literal(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval written out (Wilson 1927), clipped to [0, 1]."""
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def test_wilson_interval_tabulated_literal_and_coverage():
    lo, hi = I.wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)  # tables
    assert I.wilson_interval(0, 10)[0] == 0.0 and I.wilson_interval(10, 10)[1] == pytest.approx(1.0)
    for n in (1, 2, 7, 40, 121):
        for k in range(n + 1):
            lo, hi = I.wilson_interval(k, n)
            rlo, rhi = _wilson_literal(k, n)
            assert lo == pytest.approx(rlo, abs=1e-13) and hi == pytest.approx(rhi, abs=1e-13)
    rng = np.random.default_rng(7)
    p, n, reps = 0.3, 200, 2000
    hits = rng.binomial(n, p, reps)
    ci = {int(h): I.wilson_interval(int(h), n) for h in np.unique(hits)}
    cover = np.mean([ci[int(h)][0] <= p <= ci[int(h)][1] for h in hits])
    assert 0.93 <= cover <= 0.97, cover


def test_wilson_interval_refuses_bad_counts():
    for args, name in [
        ((3, 0), "total"),
        ((3, 2), "successes"),
        ((-1, 5), "successes"),
        ((1.5, 5), "successes"),
        ((1, 5, 1.0), "level"),
    ]:
        with pytest.raises(ParameterError) as e:
            I.wilson_interval(*args)
        assert e.value.argument == name, args


T_975_DF4 = 2.7764451051977987  # Student t quantile, 0.975, 4 d.o.f. (tables)


def test_paired_interval_hand_computed():
    m, lo, hi = I.paired_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    se = np.sqrt(2.5) / np.sqrt(5)
    assert m == pytest.approx(3.0, rel=1e-12)
    assert lo == pytest.approx(3.0 - T_975_DF4 * se, rel=1e-9)
    assert hi == pytest.approx(3.0 + T_975_DF4 * se, rel=1e-9)
    # identical differences: a degenerate interval at the mean (not NaN)
    assert I.paired_interval([0.0, 0.0, 0.0]) == (0.0, 0.0, 0.0)
    assert I.paired_interval([2.5] * 4) == (2.5, 2.5, 2.5)


def test_paired_interval_covers_true_mean_at_nominal_rate():
    """Synthetic paired samples with known mean: the 95% interval covers it ~95% of the time."""
    rng = np.random.default_rng(123)
    mu, reps, m = 0.7, 1000, 5
    base = rng.normal(0.0, 1.0, (reps, m))
    treat = base + mu + rng.normal(0.0, 0.5, (reps, m))  # paired: shared per-seed component
    covered = 0
    for b, t in zip(base, treat):
        _, lo, hi = I.paired_interval(t - b)
        covered += lo <= mu <= hi
    rate = covered / reps
    # binomial sd at p=.95, 1000 reps: 0.0069 -> 3 sd band
    assert 0.93 <= rate <= 0.97, rate


def test_paired_interval_refuses_bad_input():
    with pytest.raises(ShapeError) as e:
        I.paired_interval([1.0])
    assert e.value.argument == "diffs"
    with pytest.raises(NonFiniteError) as e:
        I.paired_interval([1.0, np.inf, 2.0])
    assert e.value.argument == "diffs"
    with pytest.raises(ParameterError) as e:
        I.paired_interval([1.0, 2.0], level=1.0)
    assert e.value.argument == "level"


@pytest.mark.parametrize(
    "ci, direction, expect",
    [
        ((0.1, 0.5), 1, REPRODUCED),
        ((-0.5, -0.1), 1, NOT_REPRODUCED),
        ((-0.5, 0.0), 1, NOT_REPRODUCED),
        ((0.0, 0.0), 1, NOT_REPRODUCED),
        ((-0.1, 0.3), 1, INCONCLUSIVE),
        ((0.0, 0.4), -1, NOT_REPRODUCED),
        ((-0.4, -0.1), -1, REPRODUCED),
        ((float("nan"), 1.0), 1, INCONCLUSIVE),
    ],
)
def test_decide_closed_wrong_side(ci, direction, expect):
    """E6's rule: an interval that only reaches 0 ("no better") already counts against the claim;
    without the option the same interval is inconclusive."""
    assert I.decide(ci, direction, closed_wrong_side=True)[0] == expect
    if 0.0 in ci:
        assert I.decide(ci, direction)[0] == INCONCLUSIVE


def test_percentile_interval_is_the_95_percent_one():
    """The interval behind every E1–E6 / LAP verdict, labelled "95%": the 2.5% and 97.5% quantiles
    of the draws (numpy's linear rule on 0…1000 puts them at 25 and 975; a 90% one at 50 and 950)."""
    assert I.LEVEL == 0.95
    assert I.interval(np.arange(1001.0)) == pytest.approx((25.0, 975.0), abs=1e-9)
    rng = np.random.default_rng(7)
    d = rng.permutation(np.arange(1001.0))
    assert I.interval(d) == pytest.approx((25.0, 975.0), abs=1e-9)  # order of the draws does not matter


def test_bootstrap_interval_covers_a_known_mean_at_its_nominal_level():
    """Normal data with known mean, 40 units: the percentile bootstrap interval of the mean (the
    pipeline's boot_draws + interval) covers it in 93–96% of 1000 replications (a percentile
    interval of a mean slightly under-covers at this size); a 90% interval would cover ~89%."""
    rng = np.random.default_rng(2024)
    mu, U, reps, n_boot = 1.5, 40, 1000, 400
    covered = 0
    for _ in range(reps):
        V = rng.normal(mu, 1.0, size=(U, 1))
        lo, hi = I.interval(I.boot_draws(V, I.overall_mean, n_boot, rng))
        covered += lo <= mu <= hi
    rate = covered / reps
    # binomial sd at p = .94, 1000 reps: 0.0075; a 90% interval (~0.89) lies > 5 sd below 0.93
    assert 0.93 <= rate <= 0.965, rate
