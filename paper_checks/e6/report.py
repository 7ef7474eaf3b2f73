"""E6 rows, figures and entry point: paired statistics over seeds, verdicts, plots, :func:`run`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paper_checks.e6.data import load_cifar10_tokens, load_digits_tokens
from paper_checks.e6.gpsa import BASELINES_B, GPSAConfig, gpsa_work_units, train_gpsa
from paper_checks.e6.shift import BASELINES_A, ShiftTaskConfig, shift_work_units, train_shift_task
from paper_checks.inference import decide, paired_interval
from paper_checks.progress import ticker
from paper_checks.verdict import StatResult

CLAIM = "E6"
RULE = (
    "per baseline: 'reproduced' if the 95% paired t-interval of the effect lies above 0, "
    "'not reproduced' if its upper end is <= 0, 'inconclusive' otherwise"
)


def effect_verdict(lo: float, hi: float) -> str:
    """Verdict of :data:`RULE` from the 95% interval of an effect whose positive sign supports the
    claim (``paper_checks.inference.decide`` with an interval ending at 0 counted as "no better")."""
    return decide((lo, hi), +1, closed_wrong_side=True)[0]


BASELINE_NOTES = {
    "aligned_pe": "ablation, not a standard baseline: the same positional prior with standard OV init "
    "(isolates the contribution of the identity OV initialisation)",
    "abs_pe_0.02": "standard baseline: learned absolute PE at GPT-2/BERT init scale",
    "abs_pe_1": "standard baseline: learned absolute PE at torch nn.Embedding default scale",
    "rel_zero": "standard baseline: zero-initialised relative bias (T5-style)",
    "misaligned": "deliberately misaligned prior (opposite velocity)",
    "gpsa_random": "ablation: GPSA with random positional init and standard W_V",
    "vit_abs_pe": "standard baseline: DeiT-style attention with learned absolute PE",
    "gpsa_antilocal": "deliberately misaligned prior (anti-local positional init)",
}


def _censor(steps: np.ndarray, cap: float) -> np.ndarray:
    s = np.asarray(steps, dtype=np.float64).copy()
    s[~np.isfinite(s)] = cap
    return s


def _step_rows(res: dict, treat: str, baselines, cap: float, model: str, unit: str) -> list[StatResult]:
    rows = []
    st = _censor(res["steps"][treat], cap)
    for b in baselines:
        if b not in res["steps"]:
            continue
        sb = _censor(res["steps"][b], cap)
        diffs = np.log2((sb + 1.0) / (st + 1.0))
        m, lo, hi = paired_interval(diffs)
        n_cens_t = int((~np.isfinite(res["steps"][treat])).sum())
        n_cens_b = int((~np.isfinite(res["steps"][b])).sum())
        rows.append(
            StatResult(
                claim=CLAIM,
                model=model,
                statistic=f"log2_steps_ratio_vs_{b}",
                trained=float(st.mean()),
                null=float(sb.mean()),
                interval=(lo, hi),
                effect=m,
                verdict=effect_verdict(lo, hi),
                rule=RULE,
                definition=(
                    f"mean over seeds of log2((steps_{b} + 1)/(steps_{treat} + 1)); steps = first {unit} "
                    f"reaching the threshold; never-reaching runs censored at {cap:g}; "
                    f"trained/null = mean steps of {treat}/{b}"
                ),
                notes=(
                    f"speed-up factor 2^effect = {2**m:.2f}; censored runs: {treat} {n_cens_t}, {b} {n_cens_b}"
                    + (" (effect is a lower bound)" if n_cens_b and not n_cens_t else "")
                    + (" (effect is an upper bound)" if n_cens_t and not n_cens_b else "")
                    + (" (both arms censored in some seeds: effect biased toward 0)" if n_cens_t and n_cens_b else "")
                ),
                extra={
                    "baseline_role": BASELINE_NOTES.get(b, ""),
                    "steps_treatment": res["steps"][treat].tolist(),
                    "steps_baseline": res["steps"][b].tolist(),
                    "paired_log2_ratios": diffs.tolist(),
                },
            )
        )
    return rows


def _acc_rows(res: dict, treat: str, baselines, model: str) -> list[StatResult]:
    rows = []
    at = res["accuracy"][treat]  # (S, K)
    for b in baselines:
        if b not in res["accuracy"]:
            continue
        ab = res["accuracy"][b]
        diffs = (at - ab).mean(-1)
        m, lo, hi = paired_interval(diffs)
        per_n = {}
        for k, N in enumerate(res["data_sizes"]):
            mk, lk, hk = paired_interval(at[:, k] - ab[:, k])
            per_n[str(N)] = {
                "treatment": float(at[:, k].mean()),
                "baseline": float(ab[:, k].mean()),
                "diff": mk,
                "interval": (lk, hk),
            }
        rows.append(
            StatResult(
                claim=CLAIM,
                model=model,
                statistic=f"acc_auc_diff_vs_{b}",
                trained=float(at.mean()),
                null=float(ab.mean()),
                interval=(lo, hi),
                effect=m,
                verdict=effect_verdict(lo, hi),
                rule=RULE,
                definition=(
                    f"mean over N in {list(res['data_sizes'])} of test accuracy({treat}) − accuracy({b}), "
                    "paired by seed (data-efficiency: area between accuracy-vs-N curves)"
                ),
                notes=BASELINE_NOTES.get(b, ""),
                extra={"per_N": per_n, "baseline_role": BASELINE_NOTES.get(b, "")},
            )
        )
    return rows


def _plot_a(res: dict, out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for a in res["arms"]:
        c = res["loss_curves"][a]
        ax.plot(np.arange(c.shape[1]), c.mean(0), label=a)
    ax.axhline(res["config"].loss_threshold, color="k", ls=":", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("Adam step")
    ax.set_ylabel("held-out cross-entropy (mean over seeds)")
    ax.set_title(f"E6(a) cyclic shift s={res['config'].shift}, n={res['config'].n}")
    ax.legend(fontsize=7)
    ax = axes[1]
    for a in res["arms"]:
        acc = res["accuracy"][a]
        ax.errorbar(
            res["data_sizes"],
            acc.mean(0),
            yerr=acc.std(0, ddof=1) if acc.shape[0] > 1 else None,
            marker="o",
            capsize=3,
            label=a,
        )
    ax.set_xscale("log")
    ax.set_xticks(res["data_sizes"])
    ax.set_xticklabels([str(N) for N in res["data_sizes"]])
    ax.minorticks_off()
    ax.set_xlabel("training sequences N")
    ax.set_ylabel("held-out token accuracy")
    ax.set_title("accuracy vs data (mean ± sd over seeds)")
    fig.tight_layout()
    path = out_dir / "e6a_shift.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    paths.append(str(path))
    return paths


def _plot_b(res: dict, out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for a in res["arms"]:
        cur = res["curves"][a][:, -1, :]
        axes[0].plot(res["eval_steps"], cur.mean(0), label=a)
        acc = res["accuracy"][a]
        axes[1].errorbar(
            res["data_sizes"],
            acc.mean(0),
            yerr=acc.std(0, ddof=1) if acc.shape[0] > 1 else None,
            marker="o",
            capsize=3,
            label=a,
        )
    axes[0].set_xlabel("Adam step")
    axes[0].set_ylabel(f"test accuracy (N = {res['data_sizes'][-1]})")
    axes[0].set_title(f"E6(b) GPSA on {res['dataset']}")
    axes[0].legend(fontsize=7)
    axes[1].set_xscale("log")
    axes[1].set_xticks(res["data_sizes"])
    axes[1].set_xticklabels([str(N) for N in res["data_sizes"]])
    axes[1].minorticks_off()
    axes[1].set_xlabel("training images N")
    axes[1].set_ylabel("test accuracy")
    fig.tight_layout()
    path = out_dir / f"e6b_{res['dataset']}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [str(path)]


SCALES = ("quick", "default", "full")


def configs(scale: str) -> tuple[ShiftTaskConfig, GPSAConfig]:
    """The E6(a)/(b) configurations of each scale: "quick" (tests, ~10 s), "default" (main job,
    ≤ ~60 s on 2 cores), "full" (users with time: more seeds, steps and data sizes)."""
    if scale == "quick":
        return (
            ShiftTaskConfig(
                max_steps=100,
                data_sizes=(2, 16),
                data_steps=60,
                eval_size=64,
                arms=("aligned", "abs_pe_0.02", "rel_zero", "misaligned"),
            ),
            GPSAConfig(
                steps=60, data_sizes=(250,), eval_every=10, acc_threshold=0.4, arms=("convit_local", "vit_abs_pe")
            ),
        )
    if scale == "default":
        return ShiftTaskConfig(), GPSAConfig(steps=250, acc_threshold=0.75)
    if scale == "full":
        return (
            ShiftTaskConfig(
                seeds=10, max_steps=600, data_sizes=(1, 2, 4, 8, 16, 32, 64), data_steps=300, eval_size=256
            ),
            GPSAConfig(seeds=10, steps=800, data_sizes=(30, 60, 125, 250, 500, None), acc_threshold=0.85),
        )
    raise ValueError(f"scale: expected one of {SCALES}, got {scale!r}")


def run(
    out_dir,
    *,
    quick: bool = False,
    seed: int = 0,
    scale: str | None = None,
    cifar_dir=None,
    device=None,
    progress=None,
) -> list[StatResult]:
    """Run E6(a) and E6(b); write ``e6a_shift.png`` and ``e6b_<dataset>.png`` into ``out_dir``.

    ``quick=True`` is the test setting (scale "quick"); otherwise ``scale`` (default "default";
    "full" for users with time). ``seed`` offsets every seed (seeds ``seed .. seed+S−1``).
    ``cifar_dir``: a local CIFAR-10 python-pickle directory; when given, E6(b) also runs on it.
    ``progress(done, total, what)``, when given, is called after every training step and figure,
    ``total`` fixed from the start."""
    scale = scale or ("quick" if quick else "default")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg_a, cfg_b = configs(scale)
    rows: list[StatResult] = []
    n_data = 1 + (cifar_dir is not None)
    tick = ticker(shift_work_units(cfg_a) + n_data * gpsa_work_units(cfg_b) + 1 + n_data, progress)

    ra = train_shift_task(cfg_a, seeds=range(seed, seed + cfg_a.seeds), device=device, progress=tick)
    model_a = f"E6a-cyclic-shift(n={cfg_a.n},V={cfg_a.vocab},s={cfg_a.shift})"
    base_a = [b for b in BASELINES_A if b in ra["arms"]]
    rows += _step_rows(
        ra, "aligned", base_a, cfg_a.max_steps + 1, model_a, f"Adam step with held-out CE < {cfg_a.loss_threshold}"
    )
    rows += _acc_rows(ra, "aligned", base_a, model_a)
    if "misaligned" in ra["arms"] and "rel_zero" in ra["arms"]:
        # controllability: a misaligned prior should be worse than no prior
        r = _step_rows(ra, "misaligned", ["rel_zero"], cfg_a.max_steps + 1, model_a, "step")[0]
        r.statistic = "log2_steps_ratio_rel_zero_over_misaligned"
        r.notes += "; positive = the misaligned prior speeds learning, negative = it slows it (controllability)"
        r.verdict = decide(r.interval, -1)[0]  # smaller (negative) = the misaligned prior is slower
        r.rule = (
            "controllability: 'reproduced' if the misaligned prior is slower than the zero-init relative "
            "bias (interval below 0), 'not reproduced' if above 0, 'inconclusive' otherwise"
        )
        rows.append(r)
    for r in rows:
        r.extra.setdefault("prior", ra["prior"])
        r.extra["seconds"] = ra["seconds"]
        r.extra["scale"] = scale
    pngs = _plot_a(ra, out)
    tick(1, "E6(a) figure")

    datasets = [load_digits_tokens()]
    if cifar_dir is not None:
        datasets.append(load_cifar10_tokens(cifar_dir))
    for data in datasets:
        rb = train_gpsa(cfg_b, data, seeds=range(seed, seed + cfg_b.seeds), device=device, progress=tick)
        model_b = f"E6b-gpsa-{data['name']}"
        base_b = [b for b in BASELINES_B if b in rb["arms"]]
        rb_rows = _step_rows(
            rb,
            "convit_local",
            base_b,
            cfg_b.steps + cfg_b.eval_every,
            model_b,
            f"evaluated step (every {cfg_b.eval_every}) with test accuracy >= {cfg_b.acc_threshold} "
            f"at N = {rb['data_sizes'][-1]}",
        )
        rb_rows += _acc_rows(rb, "convit_local", base_b, model_b)
        for r in rb_rows:
            r.extra["seconds"] = rb["seconds"]
            r.extra["scale"] = scale
        rows += rb_rows
        pngs += _plot_b(rb, out)
        tick(1, f"E6(b) {data['name']} figure")
    for r in rows:
        r.extra["pngs"] = pngs
    return rows
