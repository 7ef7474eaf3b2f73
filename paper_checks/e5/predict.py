"""E5 linear prediction of one cell: branch exponents per dynamics and the coarse predicted pattern."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.errors import ParameterError
from numerics.patterns.classify import Thresholds
from numerics.patterns.symbols import (
    distinct_patterns,
    postnorm_layer_step,
    prenorm_layer_steps,
    signed_wavenumbers,
    symbol,
)
from numerics.tolerance import tol
from paper_checks.e5.cells import C_CLUSTER, C_COEXISTING, C_STANDING, C_STATIONARY, C_TRAVELLING, DYNAMICS


@dataclass
class CellPrediction:
    """Linear prediction of a cell: coarse ``label``, ``k`` (|k*|, 0 for clusters), winner exponent ``s``
    (per unit time or per layer), ``velocity`` (tokens per unit time / per layer), ``tie`` and the
    tied representatives, ``growth`` = Re s*, ``gap`` to the best distinct pattern."""

    label: str
    k: int
    s: complex
    velocity: float
    tie: bool
    ties: list
    growth: float
    gap: float
    unresolved: bool = False
    max_growth: float = 0.0


def annihilated(s: torch.Tensor) -> torch.Tensor:
    """A layer factor of exactly 0 (log = −inf, NaN phase) annihilates the mode: exponent −inf + 0i."""
    bad = ~torch.isfinite(s)
    return torch.where(bad, torch.complex(torch.full_like(s.real, -math.inf), torch.zeros_like(s.real)), s)


def exponent_scale(s: torch.Tensor) -> float:
    """``max(1, max|s|)`` over the finite exponents: an annihilated mode's −inf (:func:`annihilated`) is
    no magnitude the growth rates are compared at (with it, the tie tolerance was infinite — every mode
    tied — and is now refused by :func:`numerics.tolerance.tol`)."""
    fin = s[torch.isfinite(s)]
    return max(1.0, fin.abs().max().item()) if fin.numel() else 1.0


def _exponents(mu: torch.Tensor, dynamics: str, eta: float, layers: int, first: int = 0) -> torch.Tensor:
    """Branch exponents per unit time (flow) or mean per layer over layers ``first .. layers−1`` (stacks).

    Pre-norm: the residual stream's base amplitude is ``r_l = 1 + ηl`` and a tangent perturbation
    relative to it is multiplied by ``(r_l + ημ)/(r_l + η) = 1 + h_l(μ − 1)`` in layer ``l = 0, 1, …``,
    ``h_l = η/(1 + η(l+1))`` (:func:`numerics.patterns.symbols.prenorm_layer_steps`)."""
    if dynamics in ("sphere", "flow"):
        return mu - 1
    if dynamics == "postnorm":
        h = postnorm_layer_step(eta)
        return annihilated(torch.log(1 + h * (mu - 1)))
    if dynamics == "prenorm":
        acc = torch.zeros_like(mu)
        steps = prenorm_layer_steps(eta, max(int(layers), int(first) + 1), int(first)).tolist()
        for h_l in steps:
            acc = acc + torch.log(1 + h_l * (mu - 1))
        return annihilated(acc / len(steps))
    raise ParameterError(f"unknown dynamics {dynamics!r}; expected one of {DYNAMICS + ('flow',)}", argument="dynamics")


def predict_cell(
    kernels,
    transports,
    *,
    dynamics: str = "sphere",
    eta: float = 1.0,
    layers: int = 1,
    window: float = math.inf,
    t_end: float = math.inf,
    phase_tol: float = Thresholds().phase_tol,
    coexist_ratio: float = Thresholds().coexist_ratio,
    tie_tol: float | None = None,
) -> CellPrediction:
    r"""Coarse linear prediction of the *fluctuation* pattern about the base state ``x* = e3``.

    On normalised dynamics the ``k = 0`` mode of the tangent plane only turns the common direction
    (the mean keeps unit norm), so — unlike the flat flow of :func:`numerics.patterns.symbols.predict_pattern`,
    where a growing ``k = 0`` mode means clustering — the pattern is selected among ``k ≠ 0`` relative to
    the base state (whose exponent is 0 by construction, ``M(0) e3 = e3``):

    * every ``k ≠ 0`` branch decays (``max Re s < 0``, over the run or inside the window): **cluster**
      (``k = 0``);
    * otherwise the winner ``argmax_{k≠0} Re s``; distinct real patterns within ``tie_tol`` are a tie:
      two at one ``|k|`` → **standing** (stationary if their frequency is not observable), else
      **coexisting**;
    * selection unfinished: if the gap to the best mode at another ``|k|`` is too small for the
      runner-up's power to fall below ``coexist_ratio`` × the winner's by ``t_end`` (``gap·t_end <
      ½ log(1/coexist_ratio)``, equal initial amplitudes) → **coexisting** (``extra``: unresolved);
    * a single winner oscillates observably iff ``|Im s|·window ≥ phase_tol`` → **travelling**, else
      **stationary**.

    ``window``: observation-window length; ``t_end``: its end (time units or layers)."""
    M = symbol(kernels, transports)
    n, d = M.shape[0], M.shape[-1]
    mu = torch.linalg.eigvals(M)
    s = _exponents(mu, dynamics, eta, layers)  # selection: mean exponent over the whole run
    # observability of the oscillation: the exponent inside the window (differs for pre-norm only)
    s_win = (
        _exponents(mu, dynamics, eta, layers, first=max(0, int(layers - window)))
        if (dynamics == "prenorm" and math.isfinite(window))
        else s
    )
    ttol = tie_tol if tie_tol is not None else tol(torch.float64, n * d, scale=exponent_scale(s))
    ks = signed_wavenumbers(n)
    fl = ks != 0
    best = s[fl].real.max().item()

    def osc(z: complex) -> bool:  # the oscillation is observable in the window
        return abs(z.imag) > ttol and abs(z.imag) * window >= phase_tol

    best_win = s_win[fl].real.max().item()
    g_all = max(s.real.max().item(), 0.0)  # fastest mode of all, incl. k = 0 (ends the linear window)
    if best < 0 or best_win < 0:  # fluctuations decay (in the window: pre-norm's late layers can damp)
        return CellPrediction(C_CLUSTER, 0, 0j, 0.0, False, [], best, -best, max_growth=g_all)
    # candidates within ttol of the best k ≠ 0 growth: growth over the run, frequency in the window
    cand_k: list[int] = []
    cand_z: list[complex] = []
    for kk in range(n):
        k = int(ks[kk])
        if k == 0:
            continue
        for b in range(d):
            if s[kk, b].real.item() < best - ttol:
                continue
            cand_k.append(k)
            cand_z.append(complex(s_win[kk, b].item()) + (s[kk, b].real.item() - s_win[kk, b].real.item()))
    reps = distinct_patterns(cand_k, cand_z, n, ttol)  # (k, σ) and (−k, σ̄) are one real pattern
    kset = {k for k, _ in reps}
    k_star, z_star = max(reps, key=lambda kz: (kz[1].real, -kz[0]))
    other = s.real.clone()
    other[(ks == 0) | (ks.abs() == k_star)] = -math.inf
    gap = best - other.max().item() if bool(torch.isfinite(other).any()) else math.inf
    vel = 0.0 if not osc(z_star) else -n * z_star.imag / (2 * math.pi * k_star)
    unresolved = gap * t_end < 0.5 * math.log(1.0 / coexist_ratio)
    if len(kset) > 1 or unresolved:
        p = CellPrediction(C_COEXISTING, k_star, z_star, 0.0, len(reps) > 1, reps, best, gap)
    elif len(reps) == 1:
        p = CellPrediction(C_TRAVELLING if osc(z_star) else C_STATIONARY, k_star, z_star, vel, False, reps, best, gap)
    else:
        lab = C_STANDING if any(osc(z) for _, z in reps) else C_STATIONARY
        p = CellPrediction(lab, k_star, z_star, 0.0, True, reps, best, gap)
    p.unresolved = unresolved
    p.max_growth = g_all
    return p
