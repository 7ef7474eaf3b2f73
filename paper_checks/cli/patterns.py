r"""``connwalk patterns``: dispersion relation, space–time diagram and phase diagram for given parameters.

Usage (all options have defaults; ``--example ex1`` reproduces THEOREMS.md T6 Ex1)::

    connwalk patterns --out DIR [--example ex1|ex3] [--n 64]
                      [--kernel CENTER:WIDTH ...] [--transport SPEC ...]
                      [--dynamics flow|sphere|postnorm|prenorm] [--t-final 30] [--dt 0.01]
                      [--eta 0.5] [--layers 60] [--content] [--seed 0] [--eps 1e-6]
                      [--phase-grid 9] [--phase-rho 1.5] [--observe] [--no-plots]

One Gaussian relative kernel per head (``--kernel 4:1.5`` = wrapped Gaussian centred at offset +4,
width 1.5, see :func:`numerics.patterns.gaussian_kernel`) and one transport per head:

* ``diag:1,-3``                 diagonal matrix;
* ``rot:RHO,THETA``             ``ρR(θ)`` (2×2, θ in degrees);
* ``blockrot:RHO,THETA``        ``blockdiag(1, ρR(θ))`` (3×3: base direction e1 + rotating plane);
* ``matrix:a,b;c,d``            any square matrix, rows separated by ``;``.

Writes to ``DIR``: ``dispersion.png`` (Re σ and Im σ of every branch vs signed k, k* marked),
``spacetime.png`` (one feature of the fluctuation ``x_i(t) − mean`` over tokens × time, from the
chosen dynamics), ``phase.png`` (predicted class over kernel centre × θ for one head
``blockrot:ρ,θ``; with ``--observe`` also the observed class from simulating each cell, and their
agreement fraction), and ``summary.json``. Prints the prediction, the discrete-stack selection
report (when a stack is simulated) and the observed class. Exit 0; bad input: 2 with a one-line
error (through ``paper_checks.cli``) — :func:`main` returns the same codes on its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import torch

from numerics.contracts import Float, Int, declare
from numerics.errors import ConnwalkError, ParameterError, ShapeError
from numerics.patterns import (
    PATTERN_CLASSES,
    dispersion,
    gaussian_kernel,
    predict_pattern,
    signed_wavenumbers,
)
from numerics.validate import check_memory
from paper_checks.cli.parser import Parser

__all__ = ["add_parser", "build_parser", "main", "run", "parse_transport", "parse_kernel"]

F64 = torch.float64


# ------------------------------------------------------------------ option contract
def _option_rules(a: dict, sizes: dict) -> None:
    if a["--phase-grid"] == 1:
        raise ParameterError("must be 0 (skip) or >= 2, got 1", argument="--phase-grid")


#: the declared kinds of the numeric options (checked before any work, errors name the option)
OPTIONS = declare(
    "connwalk patterns",
    after=_option_rules,
    **{
        "--n": Int(lo=2),
        "--t-final": Float(lo=0.0),
        "--dt": Float(lo=0.0),
        "--eta": Float(lo=0.0),
        "--layers": Int(lo=1),
        "--seed": Int(lo=0, hi=2**63 - 1),
        "--eps": Float(lo=0.0),
        "--phase-grid": Int(lo=0),
        "--phase-rho": Float(nonzero=True),
    },
)

#: library argument names → the option the user typed (errors raised while simulating)
OPTION_NAMES = {
    "dt": "--dt",
    "t_final": "--t-final",
    "X0": "--eps",
    "X": "--eps",
    "eps": "--eps",
    "eta": "--eta",
    "layers": "--layers",
    "kernels": "--kernel",
    "width": "--kernel",
    "center": "--kernel",
    "transports": "--transport",
    "n": "--n",
    "x_star": "--transport",
    "pos_bias": "--kernel",
}

#: ``summary.json["schema"]``: an existing non-empty ``--out`` must carry it (files of others are never overwritten)
SCHEMA = "connwalk.patterns.summary/1"


def _check_out(out) -> None:
    from pathlib import Path

    from paper_checks.report import OutputPathError, check_out_dir

    if not isinstance(out, str) or not out.strip():
        raise OutputPathError(f"expected a directory path, got {out!r}", argument="--out")
    p = Path(out)
    if p.is_dir() and any(p.iterdir()):
        try:
            with open(p / "summary.json", encoding="utf-8") as fh:
                ours = json.load(fh).get("schema") == SCHEMA
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise OutputPathError(
                f"{out!r} exists and holds files not written by connwalk patterns (no summary.json "
                f"with schema {SCHEMA!r}); choose a new or empty directory",
                argument="--out",
            )
        return
    check_out_dir(out)


def check_options(args) -> None:
    """Every option before any work; raises a :class:`ConnwalkError` naming the option as typed."""
    OPTIONS.validate({opt: getattr(args, opt[2:].replace("-", "_")) for opt in OPTIONS.specs})
    _check_out(args.out)
    if args.dynamics in ("flow", "sphere") and args.t_final < args.dt:
        raise ParameterError(f"must be at least one step of --dt={args.dt}, got {args.t_final}", argument="--t-final")
    # the observed class is read from the second half of the trajectory, which needs MIN_SAMPLES samples
    from numerics.classify import MIN_SAMPLES

    steps_needed = 2 * MIN_SAMPLES - 2
    if args.dynamics in ("flow", "sphere") and round(args.t_final / args.dt) < steps_needed:
        raise ParameterError(
            f"must cover at least {steps_needed} steps of --dt={args.dt} (the class is observed on the second "
            f"half of the trajectory, which needs {MIN_SAMPLES} samples), got {args.t_final}",
            argument="--t-final",
        )
    if args.dynamics not in ("flow", "sphere") and args.layers < steps_needed:
        raise ParameterError(
            f"must be at least {steps_needed} (the class is observed on the second half of the stack, which "
            f"needs {MIN_SAMPLES} layers), got {args.layers}",
            argument="--layers",
        )
    H = len(args.kernel or (EXAMPLES[args.example][0] if args.example else ["4:1.5"]))
    # the dynamics form (H, n, n) attention scores (a few copies during an RK4 step)
    check_memory(
        "--n", 8 * H * args.n * args.n * 8, f"the (H, n, n) attention of the simulation (n={args.n})", "a smaller --n"
    )


def as_option_error(exc: ConnwalkError) -> ConnwalkError:
    """``exc`` re-addressed to the option the user typed (same type and message)."""
    opt = OPTION_NAMES.get(exc.argument or "")
    if opt is None:
        return exc
    msg = str(exc)
    if msg.startswith(f"{exc.argument}: "):
        msg = msg[len(exc.argument) + 2 :]
    return type(exc)(msg, argument=opt)


# ------------------------------------------------------------------ parsing
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


def _example(centres, width, transports) -> tuple[list[str], list[str]]:
    """A reference case of :mod:`theory.cases` as ``--kernel`` / ``--transport`` specs (one home for
    its numbers: the registry's T6 notes render the same data)."""
    from fractions import Fraction

    w = float(Fraction(width))
    return [f"{c}:{w:g}" for c in centres], [
        "matrix:" + ";".join(",".join(str(x) for x in row) for row in T) for T in transports
    ]


def _examples() -> dict[str, tuple[list[str], list[str]]]:
    from theory.cases import T6_EX1, T6_EX3

    return {
        "ex1": _example([T6_EX1["centre"]], T6_EX1["width"], [T6_EX1["T"]]),
        "ex3": _example(T6_EX3["centres"], T6_EX3["width"], T6_EX3["T"]),
    }


EXAMPLES = _examples()


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    if parser is None:
        parser = Parser(prog="connwalk patterns", description=__doc__.split("\n")[0])
    p = parser
    p.add_argument("--out", required=True, help="output directory (created if missing)")
    p.add_argument("--example", choices=sorted(EXAMPLES), default=None, help="THEOREMS.md T6 reference case")
    p.add_argument("--n", type=int, default=64, help="ring size (default 64)")
    p.add_argument("--kernel", action="append", default=None, help="CENTER:WIDTH, one per head")
    p.add_argument("--transport", action="append", default=None, help="transport spec, one per head")
    p.add_argument("--dynamics", choices=["flow", "sphere", "postnorm", "prenorm"], default="flow")
    p.add_argument("--t-final", type=float, default=30.0, help="flow time (flow/sphere)")
    p.add_argument("--dt", type=float, default=0.01, help="RK4 step (flow/sphere)")
    p.add_argument("--eta", type=float, default=0.5, help="layer step (stacks)")
    p.add_argument("--layers", type=int, default=60, help="layers (stacks)")
    p.add_argument("--content", action="store_true", help="random content attention W_Q, W_K (default: off)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eps", type=float, default=1e-6, help="initial perturbation size")
    p.add_argument("--phase-grid", type=int, default=9, help="cells per axis of the phase diagram (0: skip)")
    p.add_argument("--phase-rho", type=float, default=1.5, help="ρ of blockrot:ρ,θ in the phase diagram")
    p.add_argument("--observe", action="store_true", help="simulate every phase-diagram cell (slower)")
    p.add_argument("--no-plots", action="store_true", help="write summary.json only")
    p.set_defaults(func=run)
    return p


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``patterns`` on an ``argparse`` subparsers object (``connwalk patterns …``)."""
    p = subparsers.add_parser(
        "patterns",
        help="dispersion relation, space–time diagram, phase diagram (T6/E5)",
        description=__doc__.split("\n")[0],
    )
    return build_parser(p)


# ------------------------------------------------------------------ work
def _model(args):
    if args.n < 2:
        raise ParameterError(f"ring size must be >= 2, got {args.n}", argument="--n")
    ks, ts = EXAMPLES[args.example] if args.example else ([], [])
    ks = args.kernel or ks or ["4:1.5"]
    ts = args.transport or ts or ["diag:1,-3"]
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
    from numerics.simulate import MHADynamics, perturbed_homogeneous, simulate_flow, simulate_stack

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
    from numerics.classify import classify_trajectory

    t = traj.times
    return classify_trajectory(t, traj.states, window=(t[len(t) // 2].item(), t[-1].item()))


def _phase(args, observe: bool):
    """Predicted (and observed) class over kernel centre × θ for one head ``blockrot:ρ,θ``."""
    m = args.phase_grid
    n = args.n
    centers = torch.linspace(-n / 4, n / 4, m).tolist()
    thetas = torch.linspace(0.0, 180.0, m).tolist()
    pred = [[None] * m for _ in range(m)]
    obs = [[None] * m for _ in range(m)]
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


def run(args) -> int:
    """Execute ``connwalk patterns`` for parsed ``args``; raises :class:`ConnwalkError` (naming the
    option as typed) on bad input, before any work and before anything is written."""
    check_options(args)
    try:
        a, T, ks, ts = _model(args)
        pred = predict_pattern(a, T)
        traj = _simulate(a, T, args)
        obs = _observe(traj)
        phase = _phase(args, args.observe) if args.phase_grid >= 2 else None
    except ConnwalkError as exc:
        raise as_option_error(exc) from exc
    os.makedirs(args.out, exist_ok=True)
    summary = {
        "schema": SCHEMA,
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


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``connwalk patterns ...`` or ``python -m paper_checks.cli patterns ...`` go through the dispatcher): 0 ok, 2 bad input."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ConnwalkError as exc:
        print(f"connwalk patterns: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("connwalk patterns: interrupted (SIGINT)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
