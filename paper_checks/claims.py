r"""From measurements to verdict rows: E1, E2 (per model), E3 (across sizes), E4 (across architectures).

Rules (also printed in the report):

* **E1 / E2, per model and statistic**: effect = trained − null (null = ``random:<same
  architecture>``, several seeds), 95% bootstrap interval (prompts; seeds × prompts for the null;
  heads / layers for weight statistics). Verdict by :func:`paper_checks.inference.decide`; for the
  consecutive-layer change statistics (late/early ratio) the trained ratio's interval must also lie
  below 1 ("the walk changes less in the late third than in the early third").
* **E3**: within each architecture kind, models ordered by parameter count; for consecutive sizes,
  diff = claim-oriented effect of the larger − of the smaller (``direction × effect``), bootstrap
  interval from independent draws; reproduced if > 0 *and* the larger model's own E1/E2 verdict
  for that statistic is reproduced (a phenomenon that is absent cannot strengthen: moving toward
  the claim while still not reproducing it is inconclusive); not reproduced if < 0. One size
  only: ``insufficient scale range``.
* **E4**: per statistic, reproduced iff reproduced for every encoder and every decoder; not
  reproduced if any of them is not reproduced; else inconclusive.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from paper_checks import inference as I
from paper_checks.measure import BASELINES, E1_STATS, E2_BASELINED, E2_STATS, VARIANTS, Measurement, StatSpec
from paper_checks.verdict import INCONCLUSIVE, INSUFFICIENT_SCALE, REPRODUCED, StatResult

#: E3: the least number of sizes of one architecture kind (the registry's «min_sizes»)
MIN_SIZES = 2

INTERVAL_NOTE = (
    "95% percentile bootstrap over prompts (trained) and over seeds × prompts (null); "
    "it does not cover variation across models or training runs"
)

RULE_E12 = (
    "reproduced: effect CI on the claim side of 0{ref}; not reproduced: effect CI on the wrong side, "
    "{refw}or within ±5% of |null|; else inconclusive"
)


@dataclass
class ModelRun:
    """A trained model's measurement and its null models' (one per seed)."""

    trained: Measurement
    nulls: list[Measurement]
    draws: dict = field(default_factory=dict)  # (stat, variant) -> effect draws (trained − null)
    rows: dict = field(default_factory=dict)  # (stat, variant) -> StatResult


def _f(x) -> float | None:
    x = float(x)
    return None if not math.isfinite(x) else x


def _ci(ci):
    return None if ci is None else (float(ci[0]), float(ci[1]))


def _rng(seed: int, *key) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32("|".join(map(str, key)).encode())])


def stat_name(spec: StatSpec, variant: str) -> str:
    return spec.id if variant == "plain" else f"{spec.id} [sink-aware]"


def _rule(spec: StatSpec) -> str:
    side = "<" if spec.direction < 0 else ">"
    base = f"direction: trained {side} null. "
    if spec.reference is not None:
        return base + RULE_E12.format(
            ref=f" and trained CI < {spec.reference:g}", refw=f"trained CI > {spec.reference:g}, "
        )
    return base + RULE_E12.format(ref="", refw="")


def _arrays(m: Measurement, spec: StatSpec, variant: str) -> np.ndarray:
    return m.e1[variant][spec.id] if spec.claim == "E1" else m.e2[spec.id]


def model_rows(run: ModelRun, *, n_boot: int, seed: int) -> list[StatResult]:
    """E1 (both variants) and E2 rows of one model; fills ``run.draws`` / ``run.rows``."""
    out = []
    t = run.trained
    for spec in E1_STATS + E2_STATS:
        for variant in VARIANTS if spec.claim == "E1" else ("plain",):
            Vt = _arrays(t, spec, variant)
            Vn = [_arrays(m, spec, variant) for m in run.nulls]
            f = I.SUMMARIES[spec.summary]
            rng = _rng(seed, t.name, spec.id, variant)
            tp, npt = I.point(Vt, f), I.point(Vn, f)
            td = I.boot_draws(Vt, f, n_boot, rng)
            nd = I.boot_draws_nested(Vn, f, n_boot, rng)
            ed = td - nd
            t_ci, n_ci, e_ci = I.interval(td), I.interval(nd), I.interval(ed)
            verdict, reason = I.decide(e_ci, spec.direction, null_value=npt, trained_ci=t_ci, reference=spec.reference)
            extra = {
                "trained_interval": _ci(t_ci),
                "unit": spec.unit,
                "summary": spec.summary,
                "direction": spec.direction,
                "variant": variant,
                "kind": t.kind,
                "n_params": t.n_params,
                "null_seeds": len(run.nulls),
            }
            notes = reason
            if spec.claim == "E1":
                extra["spearman_trained"] = _f(I.point(Vt, I.spearman_depth))
                extra["spearman_null"] = _f(I.point(Vn, I.spearman_depth))
                sd = I.boot_draws(Vt, I.spearman_depth, n_boot, rng)
                extra["spearman_trained_interval"] = _ci(I.interval(sd))
                if spec.id == "reversibility_defect" and t.kind == "decoder":
                    notes = "causal walk: never reversible with a positive π (T4); statistic undefined"
            if spec.claim == "E2":
                bl = {}
                for b in BASELINES:
                    if spec.id in E2_BASELINED and b in t.e2_baselines:
                        Vb = t.e2_baselines[b][spec.id]
                        bd = I.boot_draws(Vb, f, n_boot, rng)
                        # paired draws are not available across different arrays of equal units;
                        # the difference interval uses independent draws (conservative)
                        bl[b] = {
                            "value": _f(I.point(Vb, f)),
                            "interval": _ci(I.interval(bd)),
                            "trained_minus_baseline_interval": _ci(I.interval(td - bd)),
                        }
                    elif spec.id == "head_sv_cv":
                        bl[b] = {
                            "value": _f(tp) if b == "spectrum_matched" else 0.0,
                            "interval": None,
                            "trained_minus_baseline_interval": None,
                            "note": "equal to trained by construction"
                            if b == "spectrum_matched"
                            else "0 by construction",
                        }
                extra["baselines"] = bl
                if spec.id == "edge_defect":
                    extra["edge_layers"] = list(t.edge_layers)
            row = StatResult(
                claim=spec.claim,
                model=t.name,
                statistic=stat_name(spec, variant),
                trained=_f(tp),
                null=_f(npt),
                interval=_ci(e_ci),
                effect=_f(tp - npt),
                verdict=verdict,
                rule=_rule(spec),
                interval_of="effect = trained − null; "
                + INTERVAL_NOTE.replace("prompts (trained)", f"{spec.unit} (trained)"),
                definition=spec.definition,
                null_interval=_ci(n_ci),
                notes=notes,
                extra=extra,
            )
            run.draws[(spec.id, variant)] = ed
            run.rows[(spec.id, variant)] = row
            out.append(row)
    return out


def e3_rows(runs: list[ModelRun], *, seed: int) -> list[StatResult]:
    """E3: for each kind, consecutive sizes compared (see the module docstring)."""
    out = []
    for kind in ("encoder", "decoder"):
        group = sorted([r for r in runs if r.trained.kind == kind], key=lambda r: r.trained.n_params)
        names = " → ".join(f"{r.trained.name} ({r.trained.n_params / 1e6:.0f}M)" for r in group) or "none"
        sizes = {r.trained.n_params for r in group}
        for spec in E1_STATS + E2_STATS:
            for variant in VARIANTS if spec.claim == "E1" else ("plain",):
                stat = stat_name(spec, variant)
                if len(group) < MIN_SIZES or len(sizes) < MIN_SIZES:
                    out.append(
                        StatResult(
                            claim="E3",
                            model=f"{kind}s: {names}",
                            statistic=stat,
                            trained=None,
                            null=None,
                            interval=None,
                            effect=None,
                            verdict=INSUFFICIENT_SCALE,
                            rule="needs at least two sizes of the same architecture kind",
                            interval_of="n/a",
                            definition=spec.definition,
                            notes=f"{len(group)} {kind} size(s) present; install the scale set for E3",
                            extra={"kind": kind, "variant": variant},
                        )
                    )
                    continue
                for small, large in pairwise(group):
                    key = (spec.id, variant)
                    s_small = spec.direction * small.draws[key]
                    s_large = spec.direction * large.draws[key]
                    diff = s_large - s_small
                    ci = I.interval(diff)
                    verdict, reason = I.decide_scale(ci)
                    if verdict == REPRODUCED and large.rows[key].verdict != REPRODUCED:
                        verdict = INCONCLUSIVE
                        reason = (
                            f"moves toward the claim with size, but the larger model's own {spec.claim} "
                            f"verdict is '{large.rows[key].verdict}': nothing to strengthen"
                        )
                    es = small.rows[key].effect
                    el = large.rows[key].effect
                    eff = None if es is None or el is None else spec.direction * (el - es)
                    out.append(
                        StatResult(
                            claim="E3",
                            model=f"{small.trained.name} → {large.trained.name}",
                            statistic=stat,
                            trained=el,
                            null=es,
                            interval=_ci(ci),
                            effect=eff,
                            verdict=verdict,
                            rule="reproduced if the larger model's claim-oriented effect exceeds the smaller's "
                            "(interval > 0) and the larger model's own E1/E2 verdict is reproduced; "
                            "not reproduced if < 0; else inconclusive",
                            interval_of="direction·(effect_large − effect_small), independent bootstrap draws",
                            definition=spec.definition,
                            notes=reason + "; 'trained' = larger model's effect, 'null' = smaller model's effect",
                            extra={
                                "kind": kind,
                                "variant": variant,
                                "small": small.trained.name,
                                "large": large.trained.name,
                            },
                        )
                    )
    return out


def e4_rows(runs: list[ModelRun]) -> list[StatResult]:
    """E4: encoder and decoder side by side, per statistic."""
    out = []
    enc = [r for r in runs if r.trained.kind == "encoder"]
    dec = [r for r in runs if r.trained.kind == "decoder"]
    for spec in E1_STATS + E2_STATS:
        for variant in VARIANTS if spec.claim == "E1" else ("plain",):
            key = (spec.id, variant)
            per = {r.trained.name: r.rows[key].verdict for r in enc + dec}
            verdict, reason = I.decide_both(list(per.values()), bool(enc), bool(dec))

            def mean_eff(group, key=key):
                v = [r.rows[key].effect for r in group if r.rows[key].effect is not None]
                return float(np.mean(v)) if v else None

            out.append(
                StatResult(
                    claim="E4",
                    model="encoders vs decoders",
                    statistic=stat_name(spec, variant),
                    trained=mean_eff(enc),
                    null=mean_eff(dec),
                    interval=None,
                    effect=None,
                    verdict=verdict,
                    rule="reproduced iff reproduced for every encoder and every decoder; not reproduced if any "
                    "is not reproduced; else inconclusive",
                    interval_of="n/a (conjunction of the per-model E1/E2 verdicts)",
                    definition=spec.definition,
                    notes=reason
                    + "; 'trained' = mean effect over encoders, 'null' = mean effect over decoders; "
                    + ", ".join(f"{k}: {v}" for k, v in per.items()),
                    extra={"per_model": per, "variant": variant},
                )
            )
    return out
