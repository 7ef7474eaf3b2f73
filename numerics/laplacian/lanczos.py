r"""Budgeted Lanczos for the kernel route of the factored diagnostics: the product meter
(:class:`Meter`, which raises :class:`OverBudget` at its cap), the operator norm that the thick-restart
Lanczos of :mod:`numerics.laplacian.krylov` (:func:`ritz_extreme`) gives
(:func:`operator_norm`) and the deflated search for the smallest eigenpair of ``ΔᵀΔ`` outside a known
basis (:func:`deflated_smallest`)."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks
from numerics.laplacian.krylov import arpack_rule, block_op, lanczos_ends, ritz_extreme

F64 = torch.float64
#: ``(max_dim, keep)`` of the thick-restart Lanczos of the ker Δ search (:func:`ritz_extreme`); on
#: MiniLM layer 1 at 9 tokens (σ_1(Δ) ≈ 9.5e-4) it took 31,643 products with (40, 8), 13,421 with
#: (60, 20) and 11,913 with (80, 40)
SEARCH_BASIS = (60, 20)
#: relative Ritz residual at which the search for ``σ_1(Δ)`` stops once ``σ_1 > thr·‖Δ‖`` is decided
#: (:func:`deflated_smallest`): on the random ``n = 64, d = 64, H = 4`` walk (``σ_1 ≈ 0.062``) the
#: 1e-4 rule took 100 Lanczos steps (200 products), this one 72 (144); the first Ritz pairs (``ρ`` ≈ ``θ``)
#: are not converged — after 2 products ``θ − ρ = 0.21`` exceeds the true ``σ_1² = 3.8e-3`` — so
#: ``θ − ρ > level²`` alone is not a decision
DECIDED_RTOL = 0.1

__all__ = ["SEARCH_BASIS", "DECIDED_RTOL", "OverBudget", "Meter", "operator_norm", "deflated_smallest"]


class OverBudget(Exception):
    """The kernel route reached its cap on matrix–vector products (``max_matvecs``)."""


class Meter:
    """Products of one walk's operators (``e.counter``) since creation, against a cap: ``check()``
    raises :class:`OverBudget` once more than ``limit`` were made (``soft`` lowers the cap for the
    optional searches of a walk that already fails a T3 hypothesis)."""

    def __init__(self, e: FactoredBlocks, limit: int):
        self.e, self.start, self.limit, self.cap = e, e.counter[0], int(limit), int(limit)

    @property
    def used(self) -> int:
        return self.e.counter[0] - self.start

    def soft(self, extra: int | None) -> None:
        self.cap = self.limit if extra is None else min(self.limit, self.used + int(extra))

    def check(self) -> None:
        if self.used > self.cap:
            raise OverBudget(self.used)


def operator_norm(op, N: int, n: int, d: int, seed: int, meter: Meter, rtol: float = 1e-8) -> float:
    """``max(√λ_max(op), 1)`` of a symmetric PSD matrix-free ``op`` (``(p, n, d) → (p, n, d)``) by
    :func:`ritz_extreme` (relative residual ``rtol``, 1e-8: the norm only scales thresholds); a Ritz
    value, so never above the norm at any ``rtol``."""
    v0 = torch.from_numpy(np.random.default_rng(seed).standard_normal(N))

    apply = block_op(op, n, d)

    def opm(X):
        meter.check()
        return apply(X)

    lam = ritz_extreme(opm, N, v0, False, rtol)[0]
    return max(math.sqrt(max(lam, 0.0)), 1.0)


def deflated_smallest(DtD, K: torch.Tensor, dn: float, N: int, n: int, d: int, meter: Meter, v0, level=None):
    """``(θ, v, ρ)``: the smallest Ritz pair of ``ΔᵀΔ`` on the complement of ``K`` (``K``'s
    directions shifted to ``‖Δ‖²``) by thick-restart Lanczos (:func:`lanczos_ends`, basis
    :data:`SEARCH_BASIS`) and its residual norm; capped by ``meter``. Stops at ARPACK's relative
    rule ``ρ ≤ 1e-4·max(θ, eps^{2/3}·‖ΔᵀΔ‖_est)`` (the value only has to be told from a threshold many
    orders below) or, when ``level`` is given, as soon as ``ρ ≤ DECIDED_RTOL·θ`` and ``θ − ρ > level²``
    (:data:`DECIDED_RTOL`): the search's decision ``σ(Δ) ≥ √(θ − ρ) > level`` is then taken, under
    the assumption the 1e-4 rule already makes — Lanczos has converged (to a relative residual)
    and the eigenvalue within ``ρ`` of ``θ`` (there always is one) is the smallest one; the
    remaining steps would only sharpen a value that no verdict uses."""

    apply = block_op(DtD, n, d)

    def op(X):
        meter.check()
        if K.shape[1]:
            c = K.T @ X
            out = apply(X - K @ c)
            return out - K @ (K.T @ out) + dn**2 * (K @ c)
        return apply(X)

    lv2 = math.inf if level is None else level**2
    relative = arpack_rule(1e-4)

    def done(end, t, rho, an):
        return relative(end, t, rho, an) or (rho <= DECIDED_RTOL * t and t - rho > lv2)

    out, _ = lanczos_ends(op, N, torch.as_tensor(v0), ("min",), done, *SEARCH_BASIS)
    return out["min"][0]
