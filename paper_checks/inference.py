r"""Uncertainty and decision rules shared by the paper checks.

Data layout: a measurement of one statistic on one model is an array ``V`` ``(U, K)``: ``U``
resampling units (prompts for attention / hidden-state statistics, heads or layers for weight
statistics) by ``K`` columns (layers). A *summary* ``f`` maps the column means ``(K,)`` to the
reported scalar (late/early ratio, late-third mean, overall mean, Spearman ρ against depth).

* Trained model: percentile bootstrap over units (``n_boot`` resamples, 95%).
* Null model (several seeds): nested bootstrap — resample seeds with replacement, then units
  within each chosen seed; the column means of the chosen seeds are averaged before ``f``.
* Effect = trained − null, bootstrapped with independent draws of both.

These intervals cover prompt (and null-seed) sampling only; they do **not** cover variation
across models or training runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats as _st

from numerics.errors import NonFiniteError, ParameterError, ShapeError
from paper_checks.verdict import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

LEVEL = 0.95
EQUIV_FRACTION = 0.05  # effects whose whole interval lies within ±5% of |null| count as "no effect"


# ------------------------------------------------------------------------------- summaries
def thirds(K: int) -> int:
    """Number of columns in the early / late third: ``max(1, round(K/3))``."""
    return max(1, round(K / 3))


def late_early_ratio(m: np.ndarray) -> float:
    """``mean(last third) / mean(first third)`` of the per-layer means ``m``."""
    k = thirds(len(m))
    early, late = np.mean(m[:k]), np.mean(m[-k:])
    return float(late / early) if early != 0 else float("nan")


def late_mean(m: np.ndarray) -> float:
    """Mean of the last third of the per-layer means."""
    return float(np.mean(m[-thirds(len(m)) :]))


def overall_mean(m: np.ndarray) -> float:
    return float(np.mean(m))


def spearman_depth(m: np.ndarray) -> float | np.ndarray:
    """Spearman ρ between depth index and the per-layer means ``m`` ``(K,)``, or row-wise for
    ``(..., K)`` (bootstrap draws): Pearson's r of the ranks (``scipy.stats.rankdata``, ties get
    average ranks; ``scipy.stats.pearsonr`` along the last axis). NaN for < 3 layers, constant or
    non-finite means.

    ``scipy.stats.spearmanr`` gives the same number (the tests use it as the oracle) but costs
    ~10 ms per call on this project's machines; the bootstrap evaluates ~30k draws per run, which
    this vectorised form does in one call."""
    x = np.asarray(m, dtype=float)
    rows = x.reshape(-1, x.shape[-1])
    out = np.full(rows.shape[0], np.nan)
    K = rows.shape[-1]
    if K >= 3:
        ok = np.isfinite(rows).all(-1) & (rows != rows[:, :1]).any(-1)
        if ok.any():
            depth = np.arange(K, dtype=float)[None]
            out[ok] = _st.pearsonr(depth, _st.rankdata(rows[ok], axis=-1), axis=-1).statistic
    return float(out[0]) if x.ndim == 1 else out.reshape(x.shape[:-1])


#: summaries that take ``(..., K)`` and return one value per row (evaluated once on all draws)
ROWWISE = frozenset({spearman_depth})


SUMMARIES: dict[str, Callable[[np.ndarray], Any]] = {
    "late_early_ratio": late_early_ratio,
    "late_mean": late_mean,
    "mean": overall_mean,
    "spearman": spearman_depth,
}


# ------------------------------------------------------------------------------- bootstrap
def _colmeans(V: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN (undefined statistic)
        return np.nanmean(V, axis=0) if np.isnan(V).any() else V.mean(axis=0)


def point(V: np.ndarray | Sequence[np.ndarray], f: Callable) -> float:
    """Point estimate: ``f`` of the column means (pooled over seeds for a list)."""
    if isinstance(V, np.ndarray):
        return f(_colmeans(V))
    return f(np.mean([_colmeans(v) for v in V], axis=0))


def boot_draws(V: np.ndarray, f: Callable, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of ``f(colmeans(V[idx]))`` over the units (rows) of ``V`` ``(U, K)``."""
    V = np.asarray(V, dtype=float)
    U = V.shape[0]
    idx = rng.integers(0, U, size=(n_boot, U))
    return _apply(f, boot_colmeans(V, idx))


def _apply(f: Callable, cms: np.ndarray) -> np.ndarray:
    """``f`` of every row of ``cms`` ``(n_boot, K)``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if f in ROWWISE:
            return np.asarray(f(cms), dtype=float)
        return np.array([f(cm) for cm in cms])


def boot_colmeans(V: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Column means of ``V[idx[b]]`` for every draw ``b``: ``(n_boot, K)`` (NaN-aware)."""
    W = V[idx]  # (n_boot, U, K)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(W, axis=1) if np.isnan(W).any() else W.mean(axis=1)


def boot_draws_nested(Vs: Sequence[np.ndarray], f: Callable, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Nested bootstrap over seeds, then units within seed (see the module docstring)."""
    Vs = [np.asarray(v, dtype=float) for v in Vs]
    S = len(Vs)
    sidx = rng.integers(0, S, size=(n_boot, S))
    # an independent unit resample for every (slot, seed) pair, so repeated seeds stay independent
    cm = np.stack(
        [
            np.stack([boot_colmeans(v, rng.integers(0, v.shape[0], size=(n_boot, v.shape[0]))) for v in Vs])
            for _ in range(S)
        ]
    )  # (slot, seed, n_boot, K)
    b = np.arange(n_boot)
    pooled = np.mean([cm[j, sidx[:, j], b] for j in range(S)], axis=0)  # (n_boot, K)
    return _apply(f, pooled)


def interval(draws: np.ndarray, level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile interval of the finite draws; None when fewer than half are finite."""
    d = np.asarray(draws, dtype=float)
    d = d[np.isfinite(d)]
    if d.size < max(2, len(draws) // 2):
        return None
    a = (1 - level) / 2
    return float(np.quantile(d, a)), float(np.quantile(d, 1 - a))


# ------------------------------------------------------------------------------- intervals
def wilson_interval(successes: int, total: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``successes / total`` (95% by default), by
    ``scipy.stats.binomtest(successes, total).proportion_ci(method="wilson")``."""
    if int(total) != total or total <= 0:
        raise ParameterError(f"need a positive whole number of trials, got {total}", argument="total")
    if int(successes) != successes or not 0 <= successes <= total:
        raise ParameterError(f"must be a whole number in [0, {total}], got {successes}", argument="successes")
    if not 0.0 < level < 1.0:
        raise ParameterError(f"must be in (0, 1), got {level}", argument="level")
    ci = _st.binomtest(int(successes), int(total)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def paired_interval(diffs, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and two-sided Student-t interval of paired differences ``diffs`` (one per seed):
    ``mean ± t_{(1+level)/2, m−1} · sd/√m``, ``m = len(diffs) ≥ 2``, by
    ``scipy.stats.ttest_1samp(diffs, 0).confidence_interval(level)``. Returns ``(mean, lo, hi)``;
    identical differences (sd = 0) give the degenerate interval ``(mean, mean)``. Infinite / NaN
    differences are refused (censor them first)."""
    x = np.asarray(diffs, dtype=np.float64).ravel()
    if x.size < 2:
        raise ShapeError(f"need at least 2 paired differences, got {x.size}", argument="diffs")
    if not np.isfinite(x).all():
        raise NonFiniteError("contains NaN/inf; censor non-reaching runs before pairing", argument="diffs")
    if not 0.0 < level < 1.0:
        raise ParameterError(f"must be in (0, 1), got {level}", argument="level")
    m = float(x.mean())
    if float(x.std(ddof=1)) == 0.0:
        return m, m, m
    ci = _st.ttest_1samp(x, 0.0).confidence_interval(confidence_level=level)
    return m, float(ci.low), float(ci.high)


# ------------------------------------------------------------------------------- verdicts
def decide(
    effect_ci: tuple[float, float] | None,
    direction: int,
    *,
    null_value: float | None = None,
    trained_ci: tuple[float, float] | None = None,
    reference: float | None = None,
    closed_wrong_side: bool = False,
) -> tuple[str, str]:
    """Verdict from the effect interval (trained − null) and an optional absolute condition.

    ``direction`` = −1 when smaller values support the claim, +1 when larger values do. With
    ``reference`` (e.g. 1 for a late/early ratio) the trained interval must also lie on the claim
    side of it. Rule:

    * ``reproduced``: the effect interval lies entirely on the claim side of 0 (and, with a
      reference, the trained interval entirely on the claim side of the reference);
    * ``not reproduced``: the effect interval lies entirely on the wrong side of 0, or (with a
      reference) the trained interval entirely on the wrong side, or the whole effect interval is
      within ±5% of |null| (no practical difference from the null);
    * ``inconclusive``: otherwise (including undefined statistics).

    ``closed_wrong_side=True``: an effect interval that reaches 0 at its claim-side end (for
    ``direction`` +1: ``hi ≤ 0``, including the degenerate ``[0, 0]``) already counts as the wrong
    side ("no better": the E6 rule).

    Returns ``(verdict, reason)``."""
    if effect_ci is None or not all(np.isfinite(effect_ci)):
        return INCONCLUSIVE, "statistic undefined or interval unavailable"
    lo, hi = effect_ci
    s = direction
    eff_claim = (lo > 0) if s > 0 else (hi < 0)
    if closed_wrong_side:
        eff_wrong = (lo >= 0) if s < 0 else (hi <= 0)
    else:
        eff_wrong = (lo > 0) if s < 0 else (hi < 0)
    abs_claim = abs_wrong = None
    if reference is not None:
        if trained_ci is None or not all(np.isfinite(trained_ci)):
            return INCONCLUSIVE, "trained interval unavailable"
        tlo, thi = trained_ci
        abs_claim = (thi < reference) if s < 0 else (tlo > reference)
        abs_wrong = (tlo > reference) if s < 0 else (thi < reference)
    if eff_wrong:
        return NOT_REPRODUCED, "effect interval on the wrong side of 0" + (
            " (or ending at 0)" if closed_wrong_side else ""
        )
    if abs_wrong:
        return NOT_REPRODUCED, f"trained interval on the wrong side of {reference:g}"
    if null_value is not None and np.isfinite(null_value):
        m = EQUIV_FRACTION * abs(null_value)
        if m > 0 and -m <= lo and hi <= m:
            return NOT_REPRODUCED, "effect interval within ±5% of |null| (no practical difference)"
    if eff_claim and (abs_claim is None or abs_claim):
        return REPRODUCED, "effect interval on the claim side of 0" + (
            f" and trained interval on the claim side of {reference:g}" if reference is not None else ""
        )
    return INCONCLUSIVE, "interval includes no effect"


def decide_scale(diff_ci: tuple[float, float] | None) -> tuple[str, str]:
    """E3: ``diff`` = claim-oriented strength (larger model) − strength (smaller model).

    reproduced if its interval is > 0, not reproduced if < 0, else inconclusive."""
    if diff_ci is None or not all(np.isfinite(diff_ci)):
        return INCONCLUSIVE, "interval unavailable"
    lo, hi = diff_ci
    if lo > 0:
        return REPRODUCED, "larger model's effect is stronger (interval > 0)"
    if hi < 0:
        return NOT_REPRODUCED, "larger model's effect is weaker (interval < 0)"
    return INCONCLUSIVE, "interval includes 0"


def decide_both(verdicts: Sequence[str], have_encoder: bool, have_decoder: bool) -> tuple[str, str]:
    """E4: reproduced iff reproduced for every encoder and every decoder; not reproduced if any
    model's verdict is ``not reproduced``; inconclusive otherwise or when a kind is missing."""
    if not (have_encoder and have_decoder):
        return INCONCLUSIVE, "needs at least one encoder and one decoder"
    if any(v == NOT_REPRODUCED for v in verdicts):
        return NOT_REPRODUCED, "not reproduced for at least one architecture"
    if verdicts and all(v == REPRODUCED for v in verdicts):
        return REPRODUCED, "reproduced for encoders and decoders"
    return INCONCLUSIVE, "mixed or inconclusive per-model verdicts"
