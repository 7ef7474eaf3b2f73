r"""The ``LAP`` check: do real attention layers satisfy the Laplacian-reduction hypotheses (T3)?

Claim checked (THEOREMS.md, "LAP"): *trained attention layers are closer to a random-walk
connection Laplacian than a random initialisation of the same architecture*. Per model and layer,
on the real layer inputs of the shipped corpus, :mod:`paper_checks.laplacian_stats` measures each
hypothesis's defect (stochastic, detailed balance of P, block detailed balance with the transports,
transpose symmetry / orthogonality / scaled isometry of the edge transports), each conclusion's
status (π-self-adjointness, the Dirichlet identity on the real input, the spectral radius of the
walk) and two distances to walks that satisfy the hypotheses (output change when the walk is
replaced by its reversible part, and by the best reversible constant-involution Laplacian).

Statistic, null model and decision rule (the E1/E2 machinery of :mod:`paper_checks.claims`):

* per statistic an array prompts × layers; the reported value is the mean over layers;
* null = ``random:<same architecture>`` (the job's null seeds), same prompts;
* effect = trained − null with a 95% percentile bootstrap (prompts; seeds × prompts for the null);
* verdict by :func:`paper_checks.inference.decide` with direction −1 (smaller = closer to a
  connection Laplacian): reproduced if the effect interval is < 0, not reproduced if > 0 or within
  ±5% of |null|, else inconclusive (undefined statistics: inconclusive);
* separately, a *status* per statistic and model: ``holds`` when the whole trained interval is at
  or below the statistic's tolerance (float32 rounding of the model's own computation,
  ``numerics.tolerance.tol(float32, n)``: Hugging Face eager attention computes softmax in float32,
  so real rows sum to 1 only to ~1e-7; the walk's spectral radius is compared to 1 + that
  tolerance), ``fails`` when its lower end is above it, ``borderline`` otherwise, ``undefined``
  for causal walks where T3 needs a positive π that does not exist (T4).

Scope (cost): every statistic runs on the first ``edge_prompts`` prompts of ``edge_layers`` evenly
spaced layers (the E2 edge-defect scope: 4 prompts and 6 layers by default — all of MiniLM's 6 —,
2 and 3 with ``--quick``); the matrix-free spectral radius on 2 prompts of the first and last of
those layers.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
import torch

from numerics.tolerance import tol
from paper_checks import inference as I
from paper_checks import laplacian_stats as LS
from paper_checks.formatting import fmt, fmt_ci, fmt_sig, md_row, md_rule
from paper_checks.measure import spread_layers
from paper_checks.names import LAP_ALIASES, LAP_CLAIM
from paper_checks.verdict import NOT_REPRODUCED, StatResult

CLAIM = LAP_CLAIM
ALIASES = LAP_ALIASES
NAME = "LAP"

STATEMENT = (
    "trained attention layers are closer to a random-walk connection Laplacian (T3: (a) stochastic, "
    "(b) reversible, (c) metric-compatible) than a random initialisation of the same architecture"
)

STATUS_HOLDS, STATUS_FAILS, STATUS_BORDER, STATUS_UNDEF = "holds", "fails", "borderline", "undefined"


@dataclass(frozen=True)
class LapSpec:
    id: str
    kind: str  # hypothesis | conclusion | distance
    ref: str  # which T3 item
    definition: str
    unit: str = "prompts"
    reference: float = 0.0  # status: holds iff trained ≤ reference + tolerance
    scale: str = "relative: a ratio of norms, 0 when it holds"  # what a value is measured against


SPECS: list[LapSpec] = [
    LapSpec(
        "stochastic", "hypothesis", "T3 (a)", "max_i |Σ_j P_ij − 1|, P = mean_h A^h", scale="absolute: row-sum error"
    ),
    LapSpec(
        "detailed_balance",
        "hypothesis",
        "T3 (b)",
        "‖F − Fᵀ‖_F / ‖F + Fᵀ‖_F, F = diag(π) P, π stationary (NaN: causal, no positive π by T4)",
    ),
    LapSpec(
        "block_detailed_balance",
        "hypothesis",
        "T3 (b), gauge-free",
        "‖G − G^τ‖ / ‖G + G^τ‖, G_ij = π̂_i B_ij, G^τ_ij = π̂_j B_jiᵀ, π̂ from the block norms ‖B_ij‖_F",
    ),
    LapSpec(
        "transpose_symmetry",
        "hypothesis",
        "T3 (c): O_ji = O_ijᵀ",
        "(Σ w_ij ‖O_ij − O_jiᵀ‖² / Σ w_ij ‖O_ij + O_jiᵀ‖²)^½ over two-way edges, w = (P + Pᵀ)/2, "
        "O_ij = Σ_h (A^h_ij/P_ij) T_h (causal: the diagonal only)",
    ),
    LapSpec(
        "orthogonality",
        "hypothesis",
        "T3 (c): O_ij orthogonal",
        "Σ_ij P_ij ‖O_ijᵀO_ij − I‖_F/√d / Σ_ij P_ij (from head Gram terms)",
        scale="absolute, against ‖I‖_F/√d = 1: about s² − 1 when O_ij ≈ sQ_ij (gain s)",
    ),
    LapSpec(
        "scaled_isometry",
        "hypothesis",
        "T3 item 6: O_ij = s Q_ij",
        "Σ_ij P_ij ι(O_ij) / Σ_ij P_ij, ι(O)² = d tr((OᵀO)²)/tr(OᵀO)² − 1 (CV of all d squared singular "
        "values; 0 iff O = sQ)",
        scale="coefficient of variation (0 = one gain)",
    ),
    LapSpec(
        "self_adjoint",
        "conclusion",
        "T3.1",
        "‖ΠW − WᵀΠ‖_F / ‖ΠW + WᵀΠ‖_F, Π = diag(π) ⊗ I_d, π stationary (NaN: causal)",
    ),
    LapSpec(
        "dirichlet",
        "conclusion",
        "T3.3 on the real input x",
        "|a − b|/(a + b), a = ½ Σ_i π_i (2 − r_i)‖x_i‖², b = ½ Σ_ij π_i P_ij ‖O_ij x_j‖²; "
        "a − b = <x, Δx>_π − ½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖² (NaN: causal)",
    ),
    LapSpec(
        "spectral_radius",
        "conclusion",
        "T3.2 ⇒ ρ(W) ≤ 1",
        "ρ(W), largest |eigenvalue| of the walk (matrix-free ARPACK); spec Δ ⊂ [0, 2] implies ρ(W) ≤ 1",
        unit="prompts (first 2) × layers (first and last)",
        reference=1.0,
        scale="largest eigenvalue modulus, against 1; at least ρ(Σ_h T_h) on every prompt",
    ),
    LapSpec(
        "dist_reversible",
        "distance",
        "nearest π-self-adjoint walk",
        "‖Wx − W_rev x‖/‖Wx‖ on the real input, W_rev = Π''⁻¹ ½(ΠW + WᵀΠ), π'' = ½(π ⊙ r + Pᵀπ) "
        "(π stationary; PageRank for causal walks)",
        scale="relative output change",
    ),
    LapSpec(
        "dist_laplacian",
        "distance",
        "nearest constant-involution Laplacian",
        "min_{s≥0, Q=Qᵀ=Q⁻¹} ‖Wx − (P'' ⊗ sQ)x‖/‖Wx‖ on the real input, P'' the reversible walk of "
        "W_rev (closed form; an upper bound on the distance to all scaled connection Laplacians)",
        scale="relative output change",
    ),
]
SPEC = {s.id: s for s in SPECS}


def _rule() -> str:
    return (
        "direction: trained < null (closer to a connection Laplacian). reproduced: effect CI < 0; not "
        "reproduced: effect CI > 0 or within ±5% of |null|; else inconclusive. Status (separate): holds iff "
        "the trained CI lies at or below the tolerance"
    )


class Collector:
    """Per-layer hook for :func:`paper_checks.measure.measure` computing every ``LAP`` statistic on the
    first ``prompts`` prompts of the layers ``layers`` (all when None); the spectral radius on the first
    ``spec_prompts`` prompts of ``spec_layers`` evenly spaced ones among them."""

    name = NAME

    def __init__(
        self,
        n_layers: int,
        *,
        prompts: int = 4,
        layers: int | None = None,
        spec_prompts: int = 2,
        spec_layers: int = 2,
        spec_tol: float = 1e-4,
        seed: int = 0,
    ):
        self.n_layers = int(n_layers)
        self.prompts = int(prompts)
        self.layer_ids = spread_layers(self.n_layers, layers) if layers else list(range(self.n_layers))
        self.spec_prompts = int(spec_prompts)
        self.spec_layer_ids = (
            [self.layer_ids[i] for i in spread_layers(len(self.layer_ids), spec_layers)] if spec_layers > 0 else []
        )
        self.spec_tol = float(spec_tol)
        self.seed = int(seed)
        self.cols: dict[str, list[np.ndarray]] = {s.id: [] for s in SPECS}
        self.extra_cols: dict[str, list[np.ndarray]] = {"laplacian_scale": []}
        self.rho_bound: list[float] = []  # ρ(Σ_h T_h) of each spectral layer (prompt-independent)
        self.n = self.d = self.used_prompts = None

    def layer(self, index: int, A: torch.Tensor, X: torch.Tensor, W_O: torch.Tensor, W_V: torch.Tensor) -> None:
        if index not in self.layer_ids:
            return
        p = min(self.prompts, int(A.shape[0]))
        A, X = A[:p].to(torch.float64), X[:p].to(torch.float64)
        Wo, Wv = W_O.to(torch.float64), W_V.to(torch.float64)
        self.n, self.d, self.used_prompts = int(A.shape[-1]), int(Wo.shape[1]), p
        hd = LS.hypothesis_defects(A, Wo, Wv, quartic=True, gram=LS.transport_grams(Wo, Wv))
        for k in HYP_KEYS:
            self.cols[k].append(hd[k].cpu().numpy())
        self.cols["dirichlet"].append(LS.dirichlet_defect(A, Wo, Wv, X).cpu().numpy())
        dist = LS.nearest_walk_distances(A, Wo, Wv, X)
        for k in ("dist_reversible", "dist_laplacian"):
            self.cols[k].append(dist[k].cpu().numpy())
        self.extra_cols["laplacian_scale"].append(dist["laplacian_scale"].cpu().numpy())
        if index in self.spec_layer_ids:
            m = min(self.spec_prompts, p)
            self.rho_bound.append(LS.constant_field_radius(Wo, Wv))
            self.cols["spectral_radius"].append(
                np.array(
                    [
                        LS.spectral_radius(A, Wo, Wv, index=b, tol_arpack=self.spec_tol, seed=self.seed + b)
                        for b in range(m)
                    ]
                )
            )

    def finish(self, n_layers: int) -> dict:
        stats = {k: np.stack(v, 1) if v else np.full((1, 1), np.nan) for k, v in self.cols.items()}
        layers = {k: (self.spec_layer_ids if k == "spectral_radius" else list(self.layer_ids)) for k in stats}
        return {
            "stats": stats,
            "layers": layers,
            "n": self.n,
            "d": self.d,
            "prompts": self.used_prompts,
            "laplacian_scale": np.stack(self.extra_cols["laplacian_scale"], 1),
            "rho_lower_bound": list(self.rho_bound),
            "spec_tol": self.spec_tol,
        }


HYP_KEYS = LS.HYPOTHESES + ("self_adjoint",)


def settings(resolved: dict) -> dict:
    """Collector settings from the job's resolved config: the E2 edge-defect scope (first
    ``edge_prompts`` prompts, ``edge_layers`` evenly spaced layers: 4 and 6 by default, 2 and 3 quick)."""
    q = bool(resolved.get("quick"))
    return {
        "prompts": int(resolved.get("edge_prompts") or (2 if q else 4)),
        "layers": int(resolved.get("edge_layers") or (3 if q else 6)),
        "spec_prompts": 2,
        "spec_layers": 2,
        "spec_tol": 1e-3,
    }


def hooks_for(claims, handle, resolved: dict, seed: int = 0) -> list:
    """``[Collector]`` when ``LAP`` is among the claims, else ``[]`` (one registration per measure call)."""
    if CLAIM not in claims:
        return []
    return [Collector(int(handle.n_layers), seed=seed, **settings(resolved))]


def _rng(seed: int, *key) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32("|".join(map(str, key)).encode())])


def _f(x):
    x = float(x)
    return x if math.isfinite(x) else None


def _ci(ci):
    return None if ci is None else (float(ci[0]), float(ci[1]))


def status(ci, reference: float, tolerance: float) -> str:
    """``holds`` / ``fails`` / ``borderline`` of an interval against ``reference + tolerance``."""
    if ci is None or not all(np.isfinite(ci)):
        return STATUS_UNDEF
    lim = reference + tolerance
    if ci[1] <= lim:
        return STATUS_HOLDS
    if ci[0] > lim:
        return STATUS_FAILS
    return STATUS_BORDER


def significant_digits(rel_tol: float) -> int:
    """Significant digits a value computed to relative accuracy ``rel_tol`` supports (1e-3 → 3)."""
    return max(1, int(math.floor(-math.log10(rel_tol)))) if rel_tol > 0 else 6


COMPARISON_CLOSER, COMPARISON_FARTHER = "closer than null", "farther than null"
COMPARISON_SAME = "as close as null (within ±5%)"
#: both hold to rounding: the verdict is then "not reproduced" (the trained layer cannot be closer), and
#: the row says so in the words of its verdict
COMPARISON_BOTH = "not closer: both hold to rounding, nothing left to improve"
COMPARISON_OPEN, COMPARISON_UNDEF = "undecided (interval includes 0)", "undefined"


def comparison(effect_ci, null_value, *, both_hold: bool) -> str:
    """How trained compares with the null, in words (the question the LAP verdict answers; the
    status answers the other one: does the item hold on these layers). Same order of tests as
    :func:`paper_checks.inference.decide`."""
    if both_hold:
        return COMPARISON_BOTH
    if effect_ci is None or not all(np.isfinite(effect_ci)):
        return COMPARISON_UNDEF
    lo, hi = effect_ci
    if lo > 0:
        return COMPARISON_FARTHER
    m = I.EQUIV_FRACTION * abs(null_value) if null_value is not None and np.isfinite(null_value) else 0.0
    if m > 0 and -m <= lo and hi <= m:
        return COMPARISON_SAME
    if hi < 0:
        return COMPARISON_CLOSER
    return COMPARISON_OPEN


def model_rows(run, *, n_boot: int, seed: int) -> list[StatResult]:
    """``LAP`` rows of one :class:`paper_checks.claims.ModelRun` (empty when the hook did not run)."""
    t = run.trained
    if NAME not in t.checks:
        return []
    res_t = t.checks[NAME]
    res_n = [m.checks[NAME] for m in run.nulls if NAME in m.checks]
    n = int(res_t["n"])
    tol_f32 = tol(torch.float32, n)
    out = []
    f = I.SUMMARIES["mean"]
    for spec in SPECS:
        Vt = res_t["stats"][spec.id]
        Vn = [r["stats"][spec.id] for r in res_n]
        rng = _rng(seed, t.name, CLAIM, spec.id)
        tp = I.point(Vt, f)
        td = I.boot_draws(Vt, f, n_boot, rng)
        t_ci = I.interval(td)
        if Vn:
            npt = I.point(Vn, f)
            nd = I.boot_draws_nested(Vn, f, n_boot, rng)
            n_ci, e_ci = I.interval(nd), I.interval(td - nd)
        else:
            npt, n_ci, e_ci = float("nan"), None, None
        verdict, reason = I.decide(e_ci, -1, null_value=npt)
        causal = t.kind == "decoder"
        if causal and not np.isfinite(tp):
            reason = "causal walk: T3 needs a positive π, which a causal walk never has (T4); statistic undefined"
        per_layer = []
        for k, layer in enumerate(res_t["layers"][spec.id]):
            col = Vt[:, k : k + 1]
            ci_k = I.interval(I.boot_draws(col, f, min(n_boot, 300), _rng(seed, t.name, CLAIM, spec.id, layer)))
            nv = [v[:, k : k + 1] for v in Vn]
            per_layer.append(
                {
                    "layer": int(layer),
                    "trained": _f(I.point(col, f)),
                    "trained_interval": _ci(ci_k),
                    "null": _f(I.point(nv, f)) if nv else None,
                }
            )
        st_t = status(t_ci, spec.reference, tol_f32)
        st_n = status(n_ci, spec.reference, tol_f32)
        both_hold = st_t == st_n == STATUS_HOLDS and spec.reference == 0.0
        if both_hold:
            verdict, reason = (
                NOT_REPRODUCED,
                (
                    "trained and null both satisfy it to rounding (status holds): the "
                    "trained layer cannot be closer; differences are float32 rounding"
                ),
            )
        extra = {
            "kind": spec.kind,
            "ref": spec.ref,
            "status_trained": st_t,
            "status_null": st_n,
            "tolerance": tol_f32,
            "tolerance_note": "tol(float32, n): the model computes attention in float32",
            "trained_interval": _ci(t_ci),
            "unit": spec.unit,
            "summary": "mean over layers",
            "direction": -1,
            "model_kind": t.kind,
            "n": n,
            "d": res_t["d"],
            "null_seeds": len(res_n),
            "per_layer": per_layer,
            "prompts": res_t.get("prompts"),
            "layers": list(res_t["layers"][spec.id]),
        }
        extra["comparison"] = comparison(e_ci, npt, both_hold=both_hold)
        extra["scale"] = spec.scale
        if spec.id == "dist_laplacian":
            extra["laplacian_scale"] = _f(np.nanmean(res_t["laplacian_scale"]))
        if spec.id == "spectral_radius":
            # ARPACK's relative accuracy bounds the digits; ρ(Σ_h T_h) ≤ ρ(W) on every prompt
            extra["arpack_tol"] = float(res_t.get("spec_tol", 1e-3))
            extra["significant_digits"] = significant_digits(extra["arpack_tol"])
            bt = res_t.get("rho_lower_bound") or []
            bn = [r.get("rho_lower_bound") or [] for r in res_n]
            for k, p in enumerate(per_layer):
                p["lower_bound"] = _f(bt[k]) if k < len(bt) else None
                vals = [b[k] for b in bn if k < len(b)]
                p["null_lower_bound"] = _f(np.mean(vals)) if vals else None
        out.append(
            StatResult(
                claim=CLAIM,
                model=t.name,
                statistic=spec.id,
                trained=_f(tp),
                null=_f(npt),
                interval=_ci(e_ci),
                effect=_f(tp - npt),
                verdict=verdict,
                rule=_rule(),
                interval_of="effect = trained − null; 95% percentile bootstrap over prompts (trained) and over seeds × "
                "prompts (null); it does not cover variation across models or training runs",
                definition=f"{spec.kind} ({spec.ref}): {spec.definition}",
                null_interval=_ci(n_ci),
                notes=reason,
                extra=extra,
            )
        )
    return out


def rows(runs, claims, *, n_boot: int, seed: int) -> list[StatResult]:
    """All ``LAP`` rows of the job (empty unless ``LAP`` was requested)."""
    if CLAIM not in claims:
        return []
    return [r for run in runs for r in model_rows(run, n_boot=n_boot, seed=seed)]


# ------------------------------------------------------------------------------------ report
def _fmt(x, digits=3):
    return fmt(x, digits)


#: the header of each model's LAP table in report.md
TABLE_HEADER = (
    "| statistic | kind | scale | holds on these layers? trained / null | trained [95% CI] | null [95% CI] | "
    "effect = trained − null [95% CI] | trained vs null | LAP verdict (reproduced = closer than null) |"
)


def report_section(rows_: list[StatResult], figure=None) -> list[str]:
    """Markdown lines of the ``LAP`` section (per model: defects trained vs null, statuses, per layer);
    ``figure(model)``: lines showing that model's figure, placed at the end of its subsection."""
    lap = [r for r in rows_ if r.claim == CLAIM]
    if not lap:
        return []
    parts = [
        "## LAP: Laplacian reduction on real layers (T3 hypotheses and conclusions)",
        f"Claim: {STATEMENT}. Each statistic is 0 exactly when its hypothesis / conclusion holds "
        "(spectral radius: ≤ 1); values are means over layers of per-prompt values on the real layer inputs. "
        "Two separate questions, two columns: **holds on these layers?** — `holds` iff the 95% interval lies at "
        "or below the tolerance tol(float32, n) (the model computes attention in float32; the spectral radius "
        "is compared to 1 + tol), `fails` iff it lies above, else `borderline`; and **trained vs null** — is "
        "the trained layer closer to a connection Laplacian than its random initialisation? The LAP verdict "
        "answers only the second: `reproduced` means *closer than the null*, not *the hypothesis holds* "
        "(a hypothesis can fail on both and still be closer; it can hold on both, and then neither is closer). "
        "Distances: relative change of the layer's attention output (bias offset excluded) when its walk is "
        "replaced by its reversible part W_rev, or by the best reversible constant-involution Laplacian "
        "P''⊗sQ (definitions below; THEOREMS.md LAP).",
        "",
    ]
    for model in dict.fromkeys(r.model for r in lap):
        mr = [r for r in lap if r.model == model]
        e = mr[0].extra
        parts += [
            f"### {model} (n = {e['n']}, d = {e['d']}, {e['model_kind']}, {e['null_seeds']} null seeds; "
            f"first {e['prompts']} prompts, layers {e['layers']})",
            "",
            TABLE_HEADER,
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in mr:
            x = r.extra
            k = x.get("significant_digits")
            parts.append(
                md_row(
                    [
                        r.statistic,
                        f"{x['kind']} ({x['ref']})",
                        x.get("scale", ""),
                        f"{x['status_trained']} / {x['status_null']}",
                        f"{fmt_sig(r.trained, k)} {fmt_ci(x['trained_interval'], k)}",
                        f"{fmt_sig(r.null, k)} {fmt_ci(r.null_interval, k)}",
                        f"{fmt_sig(r.effect, k)} {fmt_ci(r.interval, k)}",
                        x.get("comparison", ""),
                        f"**{r.verdict}**",
                    ]
                )
            )
        ls = [r for r in mr if r.statistic == "dist_laplacian"]
        if ls and ls[0].extra.get("laplacian_scale") is not None:
            parts += [
                "",
                f"Fitted involution scale s* (mean over prompts and layers, trained): "
                f"{_fmt(ls[0].extra['laplacian_scale'])}.",
            ]
        show = [
            r
            for r in mr
            if r.statistic
            in (
                "detailed_balance",
                "block_detailed_balance",
                "transpose_symmetry",
                "scaled_isometry",
                "self_adjoint",
                "dist_reversible",
                "dist_laplacian",
            )
        ]
        layers = [p["layer"] for p in show[0].extra["per_layer"]] if show else []
        parts += [
            "",
            "Per layer, trained / null (mean over prompts):",
            "",
            md_row(["layer", *(r.statistic for r in show)]),
            md_rule(len(show) + 1),
        ]
        for k, layer in enumerate(layers):
            cells = []
            for r in show:
                p = r.extra["per_layer"][k]
                cells.append(f"{_fmt(p['trained'])} / {_fmt(p['null'])}")
            parts.append(md_row([layer, *cells]))
        sr = [r for r in mr if r.statistic == "spectral_radius"]
        if sr:
            x = sr[0].extra
            k = x.get("significant_digits")

            def bound(p, key):
                return "—" if p.get(key) is None else fmt_sig(p[key], k)

            parts += [
                "",
                f"Spectral radius ρ(W) per layer (ARPACK, relative tolerance {x.get('arpack_tol', 1e-3):g}: "
                f"{k} significant digits), trained [95% CI] / null, each beside the prompt-independent bound it "
                "must exceed, ρ(Σ_h T_h) (a constant field x_i = v is mapped to (Σ_h T_h) v by any stochastic "
                "walk, so every eigenvalue of Σ_h T_h is one of W): "
                + "; ".join(
                    f"layer {p['layer']}: {fmt_sig(p['trained'], k)} {fmt_ci(p['trained_interval'], k)} ≥ "
                    f"{bound(p, 'lower_bound')} / {fmt_sig(p['null'], k)} ≥ {bound(p, 'null_lower_bound')}"
                    for p in x["per_layer"]
                )
                + " (2 prompts per layer: the interval only shows their spread).",
            ]
        if figure is not None:
            parts += figure(model)
        parts.append("")
    return parts
