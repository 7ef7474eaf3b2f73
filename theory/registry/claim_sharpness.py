"""Sharpness witnesses of the empirical claims (E1-E6, LAP): for every number a claim's decision rule
states (its :class:`theory.statements.Threshold`: a side of 0, a reference, a fraction of |null|, a
confidence level, a least number of sizes), the pair of synthetic inputs just on either side of it
that the claim's decision function (:mod:`theory.oracles.decisions`, reading the threshold from the
registry) classifies differently; a threshold moved by a factor (``0.8 → 0.4``, ``5% → 10%``, the
level ``95% → 90%``, ``2 → 4`` sizes) or shifted off 0 gives both inputs one verdict, and ``pytest
--theorem <id>`` fails (``tests/theory/test_sharpness.py``). E4's rule states no number (every
encoder and every decoder). LAP's bounds on the spectral radius and the fit's scale are attained
exactly (SymPy on rational data, :mod:`theory.oracles.sharpness`).
"""

from __future__ import annotations

from ..statements import Sharpness

_D = "1/1000"  # how far each input of a pair lies from its threshold (``delta`` in the texts)


def _pair(
    cid: str, bound: str, text: str, below: dict, above: dict, expect: tuple[str, str], **shown: object
) -> Sharpness:
    return Sharpness(
        f"{cid}.{bound}.sharp",
        cid,
        bound,
        text,
        {"below": below, "above": above, "expect": expect, "delta": _D, **shown},
        "threshold_pair",
    )


def _effect_pairs(cid: str, direction: int, ratio: bool) -> tuple[Sharpness, ...]:
    """The effect rule's witnesses (E1, E2: ``direction`` +1, with the late/early ``ratio``; LAP: −1)."""
    s = direction
    rule = {"rule": "effect", "direction": s}
    near = "-1/1000" if s > 0 else "1/1000"
    far = "1/1000" if s > 0 else "-1/1000"
    ends = (lambda e: (e, 1)) if s > 0 else (lambda e: (-1, e))
    out = [
        _pair(
            cid,
            "side",
            "the effect interval ending $\\delta = «delta»$ on either side of «side»: 'inconclusive' and 'reproduced'",
            {**rule, "effect_ci": ends(near)},
            {**rule, "effect_ci": ends(far)},
            ("inconclusive", "reproduced"),
        ),
        _pair(
            cid,
            "equivalence",
            "with a unit null, the effect interval ending $\\delta = «delta»$ inside and outside ±«equivalence» of "
            "|null|: 'not reproduced' (no practical difference) and 'inconclusive'",
            {**rule, "effect_ci": ("-1/1000", "49/1000"), "null": 1},
            {**rule, "effect_ci": ("-1/1000", "51/1000"), "null": 1},
            ("not reproduced", "inconclusive"),
        ),
        _pair(
            cid,
            "level",
            "$m = «m»$ unit bootstrap draws of the effect, on the claim side but for the most extreme draw or "
            "the most extreme pair: at the «level» level the interval's end is the second most extreme draw, so "
            "the single wrong draw is 'reproduced' and the wrong pair 'inconclusive' (a lower level admits both, "
            "a higher one neither)",
            {**rule, "draws": [-s, -s] + [s] * 39},
            {**rule, "draws": [-s] + [s] * 40},
            ("inconclusive", "reproduced"),
            m=41,
        ),
    ]
    if ratio:
        out.append(
            _pair(
                cid,
                "reference",
                "a late/early ratio (smaller supports the claim) with the effect on the claim side: the trained "
                "interval ending $\\delta = «delta»$ below and above the reference «reference»: 'reproduced' and "
                "'inconclusive'",
                {"rule": "effect", "direction": -1, "effect_ci": (-1, "-1/2"), "trained_ci": ("1/2", "999/1000")},
                {"rule": "effect", "direction": -1, "effect_ci": (-1, "-1/2"), "trained_ci": ("1/2", "1001/1000")},
                ("reproduced", "inconclusive"),
            )
        )
    return tuple(out)


CLAIM_SHARPNESS: dict[str, tuple[Sharpness, ...]] = {
    "E1": _effect_pairs("E1", +1, ratio=True),
    "E2": _effect_pairs("E2", +1, ratio=True),
    "E3": (
        _pair(
            "E3",
            "side",
            "enough sizes, the difference interval starting $\\delta = «delta»$ on either side of «side»: "
            "'inconclusive' and 'reproduced'",
            {"rule": "scale", "diff_ci": ("-1/1000", 1), "sizes": 2},
            {"rule": "scale", "diff_ci": ("1/1000", 1), "sizes": 2},
            ("inconclusive", "reproduced"),
        ),
        _pair(
            "E3",
            "min_sizes",
            "the same clear difference interval with a size fewer than «min_sizes» and with «min_sizes»: "
            "'insufficient scale range' and 'reproduced'",
            {"rule": "scale", "diff_ci": ("1/1000", 1), "sizes": 1},
            {"rule": "scale", "diff_ci": ("1/1000", 1), "sizes": 2},
            ("insufficient scale range", "reproduced"),
        ),
    ),
    "E5": (
        _pair(
            "E5",
            "agreement_min",
            "the agreement's Wilson interval starting $\\delta = «delta»$ below and above «agreement_min»: "
            "'inconclusive' and 'reproduced'",
            {"rule": "fraction", "key": "agreement_min", "ci": ("799/1000", "9/10")},
            {"rule": "fraction", "key": "agreement_min", "ci": ("801/1000", "9/10")},
            ("inconclusive", "reproduced"),
        ),
        _pair(
            "E5",
            "component_min",
            "a component's Wilson interval starting $\\delta = «delta»$ below and above «component_min»: "
            "'inconclusive' and 'reproduced'",
            {"rule": "fraction", "key": "component_min", "ci": ("99/1000", "1/5")},
            {"rule": "fraction", "key": "component_min", "ci": ("101/1000", "1/5")},
            ("inconclusive", "reproduced"),
        ),
        _pair(
            "E5",
            "level",
            "counts (agreeing, cells) $«counts_below»$ and $«counts_above»$ whose Wilson «level» "
            "intervals start on either side of «agreement_min» (a lower level moves both above it, a higher one both "
            "below): 'inconclusive' and 'reproduced'",
            {"rule": "fraction", "key": "agreement_min", "counts": (824, 1000)},
            {"rule": "fraction", "key": "agreement_min", "counts": (825, 1000)},
            ("inconclusive", "reproduced"),
            counts_below=[824, 1000],
            counts_above=[825, 1000],
        ),
    ),
    "E6": (
        _pair(
            "E6",
            "side",
            "the paired interval starting $\\delta = «delta»$ below and above «side»: 'inconclusive' and 'reproduced'",
            {"rule": "paired", "ci": ("-1/1000", 1)},
            {"rule": "paired", "ci": ("1/1000", 1)},
            ("inconclusive", "reproduced"),
        ),
        Sharpness(
            "E6.side.closed",
            "E6",
            "side",
            "the upper end at «side» and $\\delta = «delta»$ above it: 'not reproduced' (no better) and 'inconclusive'",
            {
                "below": {"rule": "paired", "ci": (-1, 0)},
                "above": {"rule": "paired", "ci": (-1, _D)},
                "expect": ("not reproduced", "inconclusive"),
                "delta": _D,
            },
            "threshold_pair",
        ),
        _pair(
            "E6",
            "level",
            "a pair of paired differences a unit either side of their mean, $«diffs_below»$ and $«diffs_above»$: the "
            "mean just below and above Student's «level» quantile at a single degree of freedom: 'inconclusive' and "
            "'reproduced' (a lower level admits both)",
            {"rule": "paired", "diffs": ("117/10", "137/10")},
            {"rule": "paired", "diffs": ("1171/100", "1371/100")},
            ("inconclusive", "reproduced"),
            diffs_below=["117/10", "137/10"],
            diffs_above=["1171/100", "1371/100"],
        ),
    ),
    "LAP": (
        *_effect_pairs("LAP", -1, ratio=False),
        Sharpness(
            "LAP.radius.sharp",
            "LAP",
            "radius",
            "the bound is attained: the swap walk $P = «P»$ with $O = «O[0][1]»$ has spectral radius exactly "
            "the bound (its eigenvalues are the ends of T3's interval)",
            {"kind": "walk", "P": [[0, 1], [1, 0]], "O": [[[[1]], [[1]]], [[[1]], [[1]]]]},
            "radius_attained",
        ),
        Sharpness(
            "LAP.radius_status.sharp",
            "LAP",
            "radius_status",
            "the status bound less its rounding allowance is attained by the same swap walk, $P = «P»$",
            {"kind": "walk", "P": [[0, 1], [1, 0]], "O": [[[[1]], [[1]]], [[[1]], [[1]]]]},
            "radius_attained",
        ),
        Sharpness(
            "LAP.scale.sharp",
            "LAP",
            "scale",
            "the fit's scale reaches the end of its range: $Z = «Z»$, $Y = «Y»$ (the output turned a quarter "
            "from the walk's, so the symmetric part of their product vanishes) give the closed-form scale at the "
            "end",
            {"Z": [[1, 0], [0, 1]], "Y": [[0, 1], [-1, 0]]},
            "scale_attained",
        ),
    ),
}
