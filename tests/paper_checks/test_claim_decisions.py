"""The measuring code decides the claims with the thresholds the registry states.

Each claim's threshold witness (:mod:`theory.registry.claim_sharpness`: a pair of synthetic inputs
just on either side of a threshold, judged by :mod:`theory.oracles.decisions` with the registry's
numbers) is fed to ``paper_checks``' own decision code — ``inference.decide`` / ``decide_scale`` /
``interval`` / ``wilson_interval`` / ``paired_interval``, ``e5.report.fraction_verdict``,
``e6.report.effect_verdict`` and E3's least number of sizes — which must give the witness's two
verdicts. A threshold edited in the registry fails ``tests/theory/test_sharpness.py``; the same
threshold edited in ``paper_checks`` (``EQUIV_FRACTION = 0.1``, ``AGREEMENT_MIN = 0.4``, ``LEVEL =
0.9``, ``MIN_SIZES = 4``) fails here.
"""

from __future__ import annotations

import pytest

from paper_checks import inference as I
from theory.registry import get_claim
from theory.registry.claim_sharpness import CLAIM_SHARPNESS

PAIRS = [(cid, sh) for cid, shs in CLAIM_SHARPNESS.items() for sh in shs if sh.check == "threshold_pair"]


def _f(x) -> float:
    from fractions import Fraction

    return float(Fraction(str(x)))


def _measured_verdict(cid: str, data) -> str:
    """The verdict ``paper_checks`` gives the synthetic input ``data`` of claim ``cid``."""
    rule = data["rule"]
    if rule == "effect":
        ci = data.get("effect_ci")
        ci = tuple(_f(x) for x in ci) if ci else I.interval([_f(x) for x in data["draws"]])
        trained = data.get("trained_ci")
        return I.decide(
            ci,
            data["direction"],
            null_value=_f(data["null"]) if "null" in data else None,
            trained_ci=tuple(_f(x) for x in trained) if trained else None,
            reference=1.0 if trained else None,  # paper_checks.measure: a late/early ratio's reference
        )[0]
    if rule == "scale":
        from paper_checks.claims import MIN_SIZES

        if data["sizes"] < MIN_SIZES:
            return "insufficient scale range"
        return I.decide_scale(tuple(_f(x) for x in data["diff_ci"]))[0]
    if rule == "fraction":
        from paper_checks.e5 import report as R

        thr = {"agreement_min": R.AGREEMENT_MIN, "component_min": R.COMPONENT_MIN}[data["key"]]
        ci = tuple(_f(x) for x in data["ci"]) if "ci" in data else I.wilson_interval(*data["counts"])
        return R.fraction_verdict(ci, thr)
    if rule == "paired":
        from paper_checks.e6.report import effect_verdict

        if "ci" in data:
            lo, hi = (_f(x) for x in data["ci"])
        else:
            _, lo, hi = I.paired_interval([_f(x) for x in data["diffs"]])
        return effect_verdict(lo, hi)
    raise ValueError(rule)


@pytest.mark.parametrize(
    ("cid", "sh"), [pytest.param(cid, sh, marks=pytest.mark.theorem(cid), id=sh.id) for cid, sh in PAIRS]
)
def test_measuring_code_gives_each_threshold_witness_its_verdicts(cid, sh):
    got = [_measured_verdict(cid, sh.instance[k]) for k in ("below", "above")]
    assert got == list(sh.instance["expect"]), (sh.id, got)


@pytest.mark.theorem("E1", "E2", "E5", "E6", "LAP")
def test_measuring_code_levels_are_the_registrys():
    """The confidence levels enter through intervals (the witnesses above pin them); the constants
    themselves agree with the registry's exactly."""
    from fractions import Fraction

    assert (
        Fraction(str(I.LEVEL)) == get_claim("E1").thresholds["level"].exact == get_claim("E5").thresholds["level"].exact
    )
    assert Fraction(str(I.EQUIV_FRACTION)) == get_claim("LAP").thresholds["equivalence"].exact


def _effect(direction: int, ci, **more) -> dict:
    return {"rule": "effect", "direction": direction, "effect_ci": ci, **more}


#: inputs exactly ON a threshold (the witnesses above sit 1/1000 either side of it, never on it): the
#: rules' texts say *strictly* above / below («lo > side», «lo > agreement_min», …) and *within* (≤)
#: ±equivalence of |null|, so a decision with ``>=`` for ``>`` (or ``<`` for ``<=``) gives another verdict
ON_THRESHOLD = [
    ("E1", "side.lo", _effect(+1, (0, 1)), "inconclusive"),
    ("E1", "side.hi", _effect(+1, (-1, 0)), "inconclusive"),
    ("LAP", "side.hi", _effect(-1, (-1, 0)), "inconclusive"),
    ("LAP", "side.lo", _effect(-1, (0, 1)), "inconclusive"),
    ("E2", "reference.hi", _effect(-1, (-1, "-1/2"), trained_ci=("1/2", 1)), "inconclusive"),
    ("E2", "reference.lo", _effect(-1, (-1, "-1/2"), trained_ci=(1, 2)), "inconclusive"),
    ("E1", "equivalence.hi", _effect(+1, ("-1/1000", "1/20"), null=1), "not reproduced"),
    ("LAP", "equivalence.lo", _effect(-1, ("-1/20", "1/1000"), null=1), "not reproduced"),
    ("E3", "side.lo", {"rule": "scale", "diff_ci": (0, 1), "sizes": 2}, "inconclusive"),
    ("E3", "side.hi", {"rule": "scale", "diff_ci": (-1, 0), "sizes": 2}, "inconclusive"),
    ("E5", "agreement_min.lo", {"rule": "fraction", "key": "agreement_min", "ci": ("4/5", "9/10")}, "inconclusive"),
    ("E5", "agreement_min.hi", {"rule": "fraction", "key": "agreement_min", "ci": ("1/2", "4/5")}, "inconclusive"),
    ("E5", "component_min.lo", {"rule": "fraction", "key": "component_min", "ci": ("1/10", "1/5")}, "inconclusive"),
    ("E5", "component_min.hi", {"rule": "fraction", "key": "component_min", "ci": ("1/20", "1/10")}, "inconclusive"),
    ("E6", "side.lo", {"rule": "paired", "ci": (0, 1)}, "inconclusive"),
]


@pytest.mark.parametrize(
    ("cid", "data", "expect"),
    [pytest.param(c, d, e, marks=pytest.mark.theorem(c), id=f"{c}.{w}.on") for c, w, d, e in ON_THRESHOLD],
)
def test_an_interval_ending_exactly_on_a_threshold_gets_the_rules_verdict(cid, data, expect):
    """The registry's rule (:func:`theory.oracles.decisions.verdict_of`, exact arithmetic) and
    ``paper_checks``' decision code both give an interval that ends exactly on its threshold the verdict
    the rule's text states."""
    from theory.oracles.decisions import verdict_of

    assert verdict_of(get_claim(cid), data) == expect
    assert _measured_verdict(cid, data) == expect
