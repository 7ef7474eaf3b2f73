"""The empirical claims' decision rules as the registry states them: each function reads the claim's
thresholds (:attr:`theory.statements.Claim.thresholds`: the side, the reference, the fraction of
|null|, the confidence level, the least number of sizes) and turns synthetic inputs into the verdict
the rule's text defines, in exact arithmetic where the inputs are exact (``Fraction``) and in
50-digit mpmath where a quantile enters (Wilson's normal quantile, Student's t).

* :func:`effect` — E1, E2, LAP: the effect interval against the side, a late/early ratio's trained
  interval against the reference, the whole effect interval within ±fraction of |null|;
* :func:`scale` — E3: the difference interval against the side, and the number of sizes;
* :func:`fraction` — E5: a Wilson interval against ``agreement_min`` / ``component_min``;
* :func:`paired` — E6: the paired t-interval against the side (its upper end at most the side:
  "not reproduced");
* the intervals the levels enter: :func:`percentile_interval` (the bootstrap's, numpy's linear
  quantile), :func:`wilson_interval` (the score interval) and :func:`t_interval` (Student's t with
  one degree of freedom, two paired differences: the Cauchy quantile ``tan(π(p − 1/2))``).

:func:`check_pair` judges a claim's threshold witness: the pair of inputs just on either side of the
threshold gets the two verdicts the witness names (a widened or shifted threshold gives both inputs
one verdict). ``paper_checks``' decision code is compared with these functions on the witnesses by
``tests/paper_checks/test_claim_decisions.py``; ``theory`` never imports it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import mpmath

from .instances import Verdict

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
INSUFFICIENT = "insufficient scale range"


def _q(x: Any) -> Fraction:
    return Fraction(str(x))


def _t(claim, name: str) -> Fraction:
    return claim.thresholds[name].exact


def effect(
    claim,
    effect_ci: Sequence[Any],
    direction: int,
    *,
    null_value: Any = None,
    trained_ci: Sequence[Any] | None = None,
    ratio: bool = False,
) -> str:
    """E1/E2/LAP: 'reproduced' if the effect interval lies on the claim side of ``side`` (and, for a
    late/early ``ratio``, the trained interval on the claim side of ``reference``); 'not reproduced'
    if it lies on the wrong side (or the ratio's trained interval does), or entirely within
    ±``equivalence`` of |null|; otherwise 'inconclusive'."""
    lo, hi = (_q(x) for x in effect_ci)
    side = _t(claim, "side")
    claim_side = lo > side if direction > 0 else hi < side
    wrong_side = hi < side if direction > 0 else lo > side
    abs_claim = abs_wrong = None
    if ratio:
        tlo, thi = (_q(x) for x in trained_ci or ())
        ref = _t(claim, "reference")
        abs_claim = thi < ref if direction < 0 else tlo > ref
        abs_wrong = tlo > ref if direction < 0 else thi < ref
    if wrong_side or abs_wrong:
        return NOT_REPRODUCED
    if null_value is not None:
        m = _t(claim, "equivalence") * abs(_q(null_value))
        if m > 0 and -m <= lo and hi <= m:
            return NOT_REPRODUCED
    if claim_side and abs_claim in (None, True):
        return REPRODUCED
    return INCONCLUSIVE


def scale(claim, diff_ci: Sequence[Any], sizes: int) -> str:
    """E3 (with the larger model's own verdict reproduced): fewer than ``min_sizes`` sizes:
    'insufficient scale range'; the difference interval above ``side``: 'reproduced', below it: 'not
    reproduced'; otherwise 'inconclusive'."""
    if sizes < _t(claim, "min_sizes"):
        return INSUFFICIENT
    lo, hi = (_q(x) for x in diff_ci)
    side = _t(claim, "side")
    return REPRODUCED if lo > side else NOT_REPRODUCED if hi < side else INCONCLUSIVE


def fraction(claim, key: str, ci: Sequence[Any]) -> str:
    """E5: the Wilson interval above the threshold ``key`` (``agreement_min``, ``component_min``):
    'reproduced'; below it: 'not reproduced'; otherwise 'inconclusive'."""
    lo, hi = (mpmath.mpf(str(x)) if not isinstance(x, mpmath.mpf) else x for x in ci)
    thr = _t(claim, key)
    thr_m = mpmath.mpf(thr.numerator) / thr.denominator
    return REPRODUCED if lo > thr_m else NOT_REPRODUCED if hi < thr_m else INCONCLUSIVE


def paired(claim, ci: Sequence[Any]) -> str:
    """E6: the paired interval above ``side``: 'reproduced'; its upper end at most ``side``: 'not
    reproduced'; otherwise 'inconclusive'."""
    lo, hi = ci
    side = _t(claim, "side")
    side_m = mpmath.mpf(side.numerator) / side.denominator
    lo, hi = (x if isinstance(x, mpmath.mpf) else mpmath.mpf(str(x)) for x in (lo, hi))
    return REPRODUCED if lo > side_m else NOT_REPRODUCED if hi <= side_m else INCONCLUSIVE


# ------------------------------------------------------------------------------------------------
# the intervals a confidence level enters
# ------------------------------------------------------------------------------------------------
def _quantile(xs: Sequence[Fraction], q: Fraction) -> Fraction:
    """numpy's default (linear) quantile of ``xs``, exactly."""
    s = sorted(xs)
    h = (len(s) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def percentile_interval(claim, draws: Sequence[Any]) -> tuple[Fraction, Fraction]:
    """The bootstrap's percentile interval at the claim's ``level``: the quantiles ``(1 − level)/2``
    and ``(1 + level)/2`` of the draws (numpy's linear interpolation), exactly."""
    a = (1 - _t(claim, "level")) / 2
    xs = [_q(x) for x in draws]
    return _quantile(xs, a), _quantile(xs, 1 - a)


def _mp(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


def wilson_interval(claim, successes: int, total: int):
    """Wilson's score interval of ``successes / total`` at the claim's ``level`` (50-digit mpmath)."""
    with mpmath.workdps(50):
        z = mpmath.sqrt(2) * mpmath.erfinv(_mp(_t(claim, "level")))
        p, nn = mpmath.mpf(successes) / total, mpmath.mpf(total)
        centre = (p + z**2 / (2 * nn)) / (1 + z**2 / nn)
        half = z / (1 + z**2 / nn) * mpmath.sqrt(p * (1 - p) / nn + z**2 / (4 * nn**2))
        return centre - half, centre + half


def t_interval(claim, diffs: Sequence[Any]):
    """The paired t-interval at the claim's ``level`` of two differences (one degree of freedom:
    Student's t is Cauchy, its quantile ``tan(π(p − 1/2))``), 50-digit mpmath."""
    if len(diffs) != 2:
        raise ValueError("the closed form covers two paired differences (one degree of freedom)")
    a, b = (_mp(_q(x)) for x in diffs)
    with mpmath.workdps(50):
        p = (1 + _mp(_t(claim, "level"))) / 2
        t = mpmath.tan(mpmath.pi * (p - mpmath.mpf(1) / 2))
        mean, sd = (a + b) / 2, abs(a - b) / mpmath.sqrt(2)
        half = t * sd / mpmath.sqrt(2)
        return mean - half, mean + half


def verdict_of(claim, data: Mapping[str, Any]) -> str:
    """The verdict of one synthetic input of a threshold witness (``data["rule"]`` names the rule;
    the input is an interval, or the draws / counts / differences its level turns into one)."""
    rule = data["rule"]
    if rule == "effect":
        ci = data.get("effect_ci") or percentile_interval(claim, data["draws"])
        return effect(
            claim,
            ci,
            data["direction"],
            null_value=data.get("null"),
            trained_ci=data.get("trained_ci"),
            ratio="trained_ci" in data,
        )
    if rule == "scale":
        return scale(claim, data["diff_ci"], data["sizes"])
    if rule == "fraction":
        ci = data.get("ci") or wilson_interval(claim, *data["counts"])
        return fraction(claim, data["key"], ci)
    if rule == "paired":
        return paired(claim, data.get("ci") or t_interval(claim, data["diffs"]))
    raise ValueError(f"unknown decision rule {rule!r}")


def check_pair(claim, sh) -> Verdict:
    """A threshold witness holds when its two inputs (``below``, ``above``: just on either side of
    the threshold ``sh.bound``) get the verdicts it names (``expect``: two different verdicts)."""
    got = [verdict_of(claim, sh.instance[k]) for k in ("below", "above")]
    want = list(sh.instance["expect"])
    ok = got == want and want[0] != want[1]
    return Verdict(ok, 0.0 if ok else 1.0, 0.0, f"{claim.id} «{sh.bound}»: verdicts {got}, witness expects {want}")


__all__ = [
    "INCONCLUSIVE",
    "INSUFFICIENT",
    "NOT_REPRODUCED",
    "REPRODUCED",
    "check_pair",
    "effect",
    "fraction",
    "paired",
    "percentile_interval",
    "scale",
    "t_interval",
    "verdict_of",
    "wilson_interval",
]
