"""The work of ``connwalk patterns`` (:mod:`connwalk.patterns` is its parser and option checks,
standard library only; this module imports torch and the toolkit and is imported only once the options
have been checked): transport / kernel specs to tensors, the simulation, the phase diagram, the plots
and ``summary.json``."""

from __future__ import annotations

import argparse
import json
import math
import os

import torch

from numerics.errors import ConnwalkError, ParameterError, ShapeError
from numerics.patterns.symbols import (
    PATTERN_CLASSES,
    dispersion,
    gaussian_kernel,
    predict_pattern,
    signed_wavenumbers,
)

__all__ = ["parse_kernel", "parse_transport", "execute"]

F64 = torch.float64


def parse_kernel(spec: str, n: int) -> torch.Tensor:
    """``CENTER:WIDTH`` → wrapped Gaussian kernel ``(n,)``."""
    try:
        c, w = (float(x) for x in spec.split(":"))
    except ValueError:
        raise ParameterError(f"expected CENTER:WIDTH (e.g. 4:1.5), got {spec!r}", argument="--kernel") from None
    if not (w > 0 and math.isfinite(w) and math.isfinite(c)):
        raise ParameterError(f"width must be positive and finite, got {spec!r}", argument="--kernel")
    return gaussian_kernel(n, c, w)


def _rot(rho: float, theta_deg: float) -> torch.Tensor:
    t = math.radians(theta_deg)
    return rho * torch.tensor([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]], dtype=F64)


def parse_transport(spec: str) -> torch.Tensor:
    """Transport spec (module docstring) → ``(d, d)`` float64."""
    try:
        kind, _, body = spec.partition(":")
        if kind == "diag":
            v = torch.tensor([float(x) for x in body.split(",")], dtype=F64)
            if not bool(torch.isfinite(v).all()):
                raise ValueError
            return torch.diag(v)
        if kind in ("rot", "blockrot"):
            rho, th = (float(x) for x in body.split(","))
            if not (math.isfinite(rho) and math.isfinite(th)):
                raise ValueError
            R = _rot(rho, th)
            if kind == "rot":
                return R
            T = torch.zeros(3, 3, dtype=F64)
            T[0, 0] = 1.0
            T[1:, 1:] = R
            return T
        if kind == "matrix":
            rows = [[float(x) for x in r.split(",")] for r in body.split(";")]
            M = torch.tensor(rows, dtype=F64)
            if M.ndim != 2 or M.shape[0] != M.shape[1]:
                raise ValueError
            if not bool(torch.isfinite(M).all()):
                raise ValueError
            return M
    except (ValueError, RuntimeError):
        pass
    raise ShapeError(
        f"cannot parse {spec!r}; expected diag:a,b,.. | rot:RHO,THETA | blockrot:RHO,THETA | matrix:a,b;c,d (square)",
        argument="--transport",
    )


def _model(args, ks: list[str], ts: list[str]):
    if args.n < 2:
        raise ParameterError(f"ring size must be >= 2, got {args.n}", argument="--n")
    if len(ks) != len(ts):
        raise ShapeError(f"{len(ks)} kernels but {len(ts)} transports (one of each per head)", argument="--transport")
    a = torch.stack([parse_kernel(s, args.n) for s in ks])
    Ts = [parse_transport(s) for s in ts]
    if len({T.shape for T in Ts}) != 1:
        raise ShapeError("all transports must have the same size d", argument="--transport")
    return a, torch.stack(Ts), ks, ts


def _base_state(T: torch.Tensor) -> torch.Tensor:
    """A unit base direction: the real eigenvector of ``Σ_h T_h`` with the largest real eigenvalue, if any."""
    ev, V = torch.linalg.eig(T.sum(0))
    real = ev.imag.abs() <= 1e-12
    if bool(real.any()):
        j = int(torch.argmax(torch.where(real, ev.real, torch.full_like(ev.real, -math.inf))))
        v = V[:, j].real
        return v / v.norm()
    e = torch.zeros(T.shape[-1], dtype=F64)
    e[0] = 1.0
    return e


def _simulate(a, T, args, *, n_override=None):
    from numerics.patterns.simulate import MHADynamics, perturbed_homogeneous, simulate_flow, simulate_stack

    n, d = a.shape[1], T.shape[-1]
    g = torch.Generator().manual_seed(args.seed)
    cont = None
    if args.content:
        cont = (
            torch.randn(T.shape[0], 2, d, generator=g, dtype=F64),
            torch.randn(T.shape[0], 2, d, generator=g, dtype=F64),
        )
    dyn = MHADynamics(T, kernels=a, content=cont)
    X0 = perturbed_homogeneous(n, d, _base_state(T), args.eps, generator=g)
    if args.dynamics in ("flow", "sphere"):
        steps = round(args.t_final / args.dt)
        se = max(1, steps // 300)
        steps = se * max(1, round(steps / se))
        return simulate_flow(dyn, X0, steps * args.dt, args.dt, sphere=args.dynamics == "sphere", save_every=se)
    return simulate_stack(dyn, X0, args.layers, args.eta, scheme=args.dynamics, warn=False)


def _observe(traj):
    from numerics.patterns.classify import classify_trajectory

    t = traj.times
    return classify_trajectory(t, traj.states, window=(t[len(t) // 2].item(), t[-1].item()))


def _phase(args, observe: bool):
    """Predicted (and observed) class over kernel centre × θ for one head ``blockrot:ρ,θ``."""
    m = args.phase_grid
    n = args.n
    centers = torch.linspace(-n / 4, n / 4, m).tolist()
    thetas = torch.linspace(0.0, 180.0, m).tolist()
    pred: list[list[str | None]] = [[None] * m for _ in range(m)]
    obs: list[list[str | None]] = [[None] * m for _ in range(m)]
    for i, th in enumerate(thetas):
        T = parse_transport(f"blockrot:{args.phase_rho},{th}")[None]
        for j, c in enumerate(centers):
            a = gaussian_kernel(n, c, 1.5)[None]
            p = predict_pattern(a, T)
            pred[i][j] = p.pattern_class
            if observe:
                sub = argparse.Namespace(**{**vars(args), "content": False})
                try:
                    obs[i][j] = _observe(_simulate(a, T, sub)).label
                except ConnwalkError as exc:
                    obs[i][j] = f"error: {type(exc).__name__}"
    agree = None
    if observe:
        cells = [(pred[i][j], obs[i][j]) for i in range(m) for j in range(m)]
        agree = sum(p == o for p, o in cells) / len(cells)
    return centers, thetas, pred, obs, agree


def _plots(out, a, T, pred, traj, phase, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = a.shape[1]
    ks = signed_wavenumbers(n)
    order = torch.argsort(ks)
    sig = dispersion(a, T)[order]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for b in range(sig.shape[1]):
        ax[0].plot(ks[order], sig[:, b].real, ".-", ms=3, label=f"branch {b}")
        ax[1].plot(ks[order], sig[:, b].imag, ".-", ms=3)
    for x in ax:
        x.axvline(pred.k_star, color="r", lw=0.8, ls="--")
        x.axvline(-pred.k_star, color="r", lw=0.8, ls=":")
        x.set_xlabel("k (signed)")
    ax[0].axhline(0, color="k", lw=0.5)
    ax[0].set_ylabel("Re σ(k)")
    ax[1].set_ylabel("Im σ(k)")
    ax[0].set_title(f"k*={pred.k_star}, σ={pred.growth_rate.real:.4g}{pred.growth_rate.imag:+.4g}i")
    ax[1].set_title(f"{pred.pattern_class}, c={pred.phase_velocity:.4g}")
    ax[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "dispersion.png"), dpi=110)
    plt.close(fig)
    if traj is not None:
        X = traj.states
        fl = X - X.mean(1, keepdim=True)
        # the feature carrying most fluctuation power at the end
        f = int(torch.argmax((fl[-1] ** 2).sum(0)))
        Z = fl[..., f]
        Z = Z / Z.abs().amax(1, keepdim=True).clamp_min(1e-300)  # per-time normalisation (growth removed)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.imshow(
            Z.T.numpy(),
            aspect="auto",
            origin="lower",
            cmap="RdBu_r",
            extent=[traj.times[0].item(), traj.times[-1].item(), 0, n],
        )
        ax.set_xlabel("layer" if traj.kind in ("postnorm", "prenorm") else "t")
        ax.set_ylabel("token i")
        ax.set_title(f"{traj.kind}: feature {f} of x_i − mean (normalised per time)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "spacetime.png"), dpi=110)
        plt.close(fig)
    if phase is not None:
        centers, thetas, P, O, agree = phase
        idx = {c: i for i, c in enumerate(PATTERN_CLASSES)}
        panels = [("predicted", P)] + ([("observed", O)] if agree is not None else [])
        fig, ax = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
        cmap = plt.get_cmap("tab10", len(PATTERN_CLASSES) + 1)
        for x, (name, G) in zip(ax[0], panels):
            M = torch.tensor([[idx.get(c, len(PATTERN_CLASSES)) for c in row] for row in G], dtype=F64)
            x.imshow(
                M.numpy(),
                origin="lower",
                aspect="auto",
                cmap=cmap,
                vmin=-0.5,
                vmax=len(PATTERN_CLASSES) + 0.5,
                extent=[centers[0], centers[-1], thetas[0], thetas[-1]],
            )
            x.set_xlabel("kernel centre (asymmetry)")
            x.set_ylabel("θ (deg)")
            x.set_title(name + ("" if name == "predicted" else f" (agreement {agree:.2f})"))
        handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(i)) for i in range(len(PATTERN_CLASSES))]
        fig.legend(handles, PATTERN_CLASSES, loc="lower center", ncol=5, fontsize=7)
        fig.tight_layout(rect=(0, 0.12, 1, 1))
        fig.savefig(os.path.join(out, "phase.png"), dpi=110)
        plt.close(fig)


def execute(args, kernels: list[str], transports: list[str], schema: str, progress=print) -> int:
    """Simulate, predict and write ``summary.json`` (and the plots) for checked ``args`` with these
    kernel / transport specs; library errors propagate as raised (the caller addresses them to the
    options), before anything is written. ``progress(message)`` is told each stage."""
    progress("prediction and simulation")
    a, T, ks, ts = _model(args, kernels, transports)
    pred = predict_pattern(a, T)
    traj = _simulate(a, T, args)
    obs = _observe(traj)
    if args.phase_grid >= 2:
        progress(f"phase diagram ({args.phase_grid}x{args.phase_grid} cells{', observed' if args.observe else ''})")
    phase = _phase(args, args.observe) if args.phase_grid >= 2 else None
    os.makedirs(args.out, exist_ok=True)
    summary = {
        "schema": schema,
        "kernels": ks,
        "transports": ts,
        "n": a.shape[1],
        "dynamics": args.dynamics,
        "prediction": {
            "k_star": pred.k_star,
            "growth_rate": [pred.growth_rate.real, pred.growth_rate.imag],
            "phase_velocity": pred.phase_velocity,
            "rotation_frequency": pred.rotation_frequency,
            "pattern_class": pred.pattern_class,
            "tie": pred.tie,
            "ties": [(k, [s.real, s.imag]) for k, s in pred.ties],
            "gap": pred.gap,
        },
        "observed": {
            "label": obs.label,
            "k": obs.k,
            "velocity": obs.velocity,
            "omega": obs.omega,
            "modes": obs.modes[:5],
        },
        "stack_report": traj.warnings,
        "stack_selection": None
        if traj.selection is None
        else {
            "k_star": traj.selection.k_star,
            "k_continuous": traj.selection.k_continuous,
            "effective_time": traj.selection.effective_time,
            "contrast": traj.selection.contrast,
            "frozen": traj.selection.frozen,
        },
    }
    if phase is not None:
        summary["phase"] = {
            "centers": phase[0],
            "thetas_deg": phase[1],
            "predicted": phase[2],
            "observed": phase[3] if phase[4] is not None else None,
            "agreement": phase[4],
            "rho": args.phase_rho,
        }
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
    if not args.no_plots:
        progress("plots")
        _plots(args.out, a, T, pred, traj, phase, args)
    s = pred.growth_rate
    print(
        f"prediction: k*={pred.k_star}  σ={s.real:.5f}{s.imag:+.5f}i  c={pred.phase_velocity:.4f}  "
        f"ω={pred.rotation_frequency:.4f}  class={pred.pattern_class}" + ("  (TIE)" if pred.tie else "")
    )
    vel = "" if obs.velocity is None else f"  velocity={obs.velocity:.4f}"
    print(f"observed ({traj.kind}): class={obs.label}  |k|={obs.k}{vel}")
    if traj.selection is not None:
        sel = traj.selection
        print(
            f"stack selection ({sel.scheme}, eta={sel.eta}, L={sel.layers}): |k|={sel.k_star} "
            f"(flow: |k|={sel.k_continuous}), effective time {sel.effective_time:.3g}, contrast e^{sel.contrast:.2f}"
        )
    for m in traj.warnings:
        print("stack report: " + m)
    if phase is not None and phase[4] is not None:
        print(f"phase diagram agreement (predicted vs observed): {phase[4]:.3f}")
    print(f"written to {args.out}")
    return 0
