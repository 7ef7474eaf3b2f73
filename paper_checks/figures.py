r"""Figures of the paper checks (matplotlib, Agg backend): per-layer curves with bootstrap bands,
trained vs null, and transport singular-value spectra."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import warnings

import matplotlib.pyplot as plt
import numpy as np

from paper_checks.captions import figure_file
from paper_checks.inference import boot_colmeans
from paper_checks.measure import E1_STATS, VARIANTS
from paper_checks.progress import ticker

PNG_META = {"Software": None}

#: y-axis label of each E1 panel (what is plotted per layer)
E1_YLABEL = {
    "walk_change_frob": "‖P_{l+1} − P_l‖_F / ‖P_l‖_F",
    "walk_change_tv": "mean row total variation (P_{l+1}, P_l)",
    "walk_spectral_distance": "relative change of σ(P)",
    "stationary_drift": "½ ‖π_{l+1} − π_l‖₁",
    "reversibility_defect": "reversibility defect (relative)",
    "positional_r2": "R² of P on token distance",
    "diffusion_r2": "R² of P on feature distance",
}


def layer_band(
    Vs: list[np.ndarray], n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-column mean and 95% band of ``(U, K)`` arrays (one per seed; nested bootstrap)."""
    Vs = [np.asarray(v, dtype=float) for v in Vs]
    S = len(Vs)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean([np.nanmean(v, 0) for v in Vs], 0)
        sidx = rng.integers(0, S, size=(n_boot, S))
        cm = np.stack(
            [
                np.stack([boot_colmeans(v, rng.integers(0, v.shape[0], size=(n_boot, v.shape[0]))) for v in Vs])
                for _ in range(S)
            ]
        )
        b = np.arange(n_boot)
        draws = np.nanmean([cm[j, sidx[:, j], b] for j in range(S)], axis=0)
        if np.isnan(draws).all():
            return mean, mean, mean
        lo, hi = np.nanquantile(draws, 0.025, 0), np.nanquantile(draws, 0.975, 0)
    return mean, lo, hi


def not_applicable(ax, text: str) -> None:
    """A panel whose statistic does not exist for this model: its reason as text, no axes (an empty
    frame with ticks would read as a measured zero)."""
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="0.3")


def _band(ax, x, band, label, color, ls="-"):
    m, lo, hi = band
    ax.plot(x, m, ls, color=color, label=label, lw=1.5)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)


def plot_e1(run, path: Path, *, n_boot: int, seed: int) -> None:
    t = run.trained
    rng = np.random.default_rng([seed, 101])
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    for ax, spec in zip(axes.flat, E1_STATS):
        ax.set_title(spec.id, fontsize=9)
        if all(np.isnan(t.e1[v][spec.id]).all() for v in VARIANTS):
            not_applicable(ax, "not applicable: causal walk\n(never reversible, T4)")
            continue
        for variant, color, ls in zip(VARIANTS, ("C0", "C1"), ("-", "--")):
            V = t.e1[variant][spec.id]
            K = V.shape[1]
            x = np.arange(K) + (0.5 if spec.summary == "late_early_ratio" else 0)
            _band(ax, x, layer_band([V], n_boot, rng), f"trained ({variant})", color, ls)
            Vn = [m.e1[variant][spec.id] for m in run.nulls]
            _band(
                ax,
                x,
                layer_band(Vn, n_boot, rng),
                f"random init ({variant})",
                "0.4" if variant == "plain" else "0.7",
                ls,
            )
        ax.set_xlabel("layer" + (" transition l→l+1" if spec.summary == "late_early_ratio" else ""))
        ax.set_ylabel(E1_YLABEL.get(spec.id, spec.id), fontsize=8)
    axes.flat[-1].axis("off")
    h, lab = axes.flat[0].get_legend_handles_labels()
    axes.flat[-1].legend(h, lab, loc="center", fontsize=9)
    fig.suptitle(f"E1 per-layer walk statistics — {t.name} ({t.kind}); bands: 95% bootstrap over prompts (× seeds)")
    fig.subplots_adjust(left=0.05, right=0.98, bottom=0.1, top=0.88, wspace=0.25, hspace=0.35)
    fig.savefig(path, dpi=80, metadata=PNG_META)
    plt.close(fig)


def plot_e2(run, path: Path, *, n_boot: int, seed: int) -> None:
    t = run.trained
    rng = np.random.default_rng([seed, 202])
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    L, H = t.n_layers, t.n_heads
    ax = axes[0]
    hcv = t.e2["head_sv_cv"].reshape(L, H)
    x = np.arange(L)
    ax.plot(x, hcv.mean(1), color="C0", label="trained (mean over heads)")
    ax.fill_between(x, hcv.min(1), hcv.max(1), color="C0", alpha=0.2, lw=0, label="trained (min–max heads)")
    ncv = np.stack([m.e2["head_sv_cv"].reshape(L, H) for m in run.nulls])
    ax.plot(x, ncv.mean((0, 2)), color="0.4", label="random init")
    ax.fill_between(x, ncv.min((0, 2)), ncv.max((0, 2)), color="0.4", alpha=0.2, lw=0)
    ax.set_title("head partial-isometry defect (CV of σ(T_h))", fontsize=9)
    ax.set_xlabel("layer")
    ax.set_ylabel("CV of the singular values of T_h", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[1]
    _band(ax, x, layer_band([t.e2["data_gain_cv"]], n_boot, rng), "trained", "C0")
    _band(ax, x, layer_band([m.e2["data_gain_cv"] for m in run.nulls], n_boot, rng), "random init", "0.4")
    for b, c in (("spectrum_matched", "C2"), ("flat_subspace", "C3")):
        if b in t.e2_baselines:
            _band(ax, x, layer_band([t.e2_baselines[b]["data_gain_cv"]], n_boot, rng), b.replace("_", " "), c, "--")
    ax.set_title("data-dependent defect: CV over tokens of ‖T_h x‖/‖x‖", fontsize=9)
    ax.set_xlabel("layer")
    ax.set_ylabel("CV over tokens of ‖T_h x‖/‖x‖", fontsize=8)
    ax.legend(fontsize=7)
    ax = axes[2]
    cmap = plt.get_cmap("viridis")
    spec = t.spectra  # (L, H, dh)
    k = np.arange(1, spec.shape[-1] + 1)
    for l in range(L):
        s = spec[l] / spec[l].mean(-1, keepdims=True)
        ax.plot(k, np.median(s, 0), color=cmap(l / max(L - 1, 1)), lw=1)
    for m in run.nulls[:1]:
        for l in range(L):
            s = m.spectra[l] / m.spectra[l].mean(-1, keepdims=True)
            ax.plot(k, np.median(s, 0), color="0.6", lw=0.8, ls=":")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set_title("σ_k(T_h)/mean σ(T_h), median over heads; colour = depth, dotted = random init", fontsize=9)
    ax.set_xlabel("singular value index k")
    ax.set_ylabel("σ_k(T_h) / mean σ(T_h)", fontsize=8)
    fig.suptitle(f"E2 transports — {t.name} ({t.kind})")
    fig.subplots_adjust(left=0.05, right=0.98, bottom=0.1, top=0.88, wspace=0.25, hspace=0.35)
    fig.savefig(path, dpi=80, metadata=PNG_META)
    plt.close(fig)


#: y-axis label of each LAP panel (the statistic's formula, short)
LAP_YLABEL = {
    "stochastic": "max_i |Σ_j P_ij − 1|",
    "detailed_balance": "‖F − Fᵀ‖ / ‖F + Fᵀ‖",
    "block_detailed_balance": "‖G − G^τ‖ / ‖G + G^τ‖",
    "transpose_symmetry": "relative asymmetry O_ij vs O_jiᵀ",
    "orthogonality": "mean ‖OᵀO − I‖_F / √d",
    "scaled_isometry": "CV of the σ²(O_ij)",
    "self_adjoint": "‖ΠW − WᵀΠ‖ / ‖ΠW + WᵀΠ‖",
    "dirichlet": "|a − b| / (a + b)",
    "spectral_radius": "ρ(W)",
    "dist_reversible": "‖Wx − W_rev x‖ / ‖Wx‖",
    "dist_laplacian": "‖Wx − (P''⊗sQ)x‖ / ‖Wx‖",
}


def plot_lap(run, path: Path, *, n_boot: int, seed: int) -> bool:
    """The LAP figure of one model: per layer, each T3 defect of the trained layers and of the null
    (random init) with 95% bootstrap bands over prompts (× null seeds); ρ(W) beside its bound
    ρ(Σ_h T_h) and the line 1. False (nothing drawn) when the LAP hook did not run."""
    from paper_checks.laplacian_check import NAME, SPECS

    t = run.trained
    if NAME not in t.checks:
        return False
    res_t = t.checks[NAME]
    res_n = [m.checks[NAME] for m in run.nulls if NAME in m.checks]
    rng = np.random.default_rng([seed, 303])
    ncol = 4
    nrow = -(-len(SPECS) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.3 * nrow), squeeze=False)
    for ax, spec in zip(axes.flat, SPECS):
        Vt = res_t["stats"][spec.id]
        x = np.asarray(res_t["layers"][spec.id])
        ax.set_title(f"{spec.id} — {spec.kind} {spec.ref}", fontsize=8)
        if Vt.shape[1] != len(x) or np.isnan(Vt).all():
            not_applicable(ax, "not applicable: causal walk\n(no positive π, T4)")
            continue
        _band(ax, x, layer_band([Vt], n_boot, rng), "trained", "C0")
        Vn = [r["stats"][spec.id] for r in res_n]
        if Vn:
            _band(ax, x, layer_band(Vn, n_boot, rng), "random init", "0.4")
        if spec.id == "spectral_radius":
            ax.axhline(1.0, color="k", lw=0.6, ls=":", label="1 (T3.2 bound)")
            bt = res_t.get("rho_lower_bound") or []
            if len(bt) == len(x):
                ax.plot(x, bt, "v", color="C0", ms=5, label="ρ(Σ_h T_h), trained")
        ax.set_xlabel("layer", fontsize=8)
        ax.set_ylabel(LAP_YLABEL.get(spec.id, spec.id), fontsize=8)
        ax.tick_params(labelsize=7)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(SPECS) :]:
        ax.axis("off")
    fig.suptitle(
        f"LAP per layer — {t.name} ({t.kind}): T3 defects trained vs random init; bands: 95% bootstrap over "
        "prompts (× seeds); 0 = the hypothesis holds",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=80, metadata=PNG_META)
    plt.close(fig)
    return True


def draw_all(runs, outdir: Path, *, n_boot: int, seed: int, claims: set[str], progress=None) -> list[str]:
    """Draw every per-model figure the claims need into ``outdir``; their file names
    (:func:`paper_checks.captions.figure_file`, which the report's captions read).
    ``progress(done, total, what)``, when given, is called after each figure."""
    kinds = []
    if claims & {"E1", "E3", "E4"}:
        kinds.append(("e1", plot_e1))
    if claims & {"E2", "E3", "E4"}:
        kinds.append(("e2", plot_e2))
    if "LAP" in claims:
        kinds.append(("lap", plot_lap))
    tick = ticker(len(runs) * len(kinds), progress)
    names = []
    for run in runs:
        for kind, plot in kinds:
            f = figure_file(kind, run.trained.name)
            if plot(run, outdir / f, n_boot=n_boot, seed=seed) is not False:  # plot_lap: False = nothing drawn
                names.append(f)
            tick(1, f)
    return names
