"""The spectrum checks' Krylov route (:mod:`numerics.laplacian.spectral`) against the eigenvalues
and the norm of the walk's matrix built here as ``Σ_h A_h ⊗ T_h`` (numpy LAPACK).

It leaves an Arnoldi component unconverged only where it cannot change a residual (``_Skip``):
each residual is a max of components, and a component whose refined Bendixson bound lies below a
converged component of every check it feeds is certainly not the max. The residual reported is
the max the full route reports, a dropped component is below it, and a component that *is* the
max is never dropped. ``‖W‖`` (the checks' tolerance and error bound) is as accurate as the route
promises although its Lanczos run stops on the Kato–Temple bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from numerics.laplacian import diagnose
from numerics.laplacian.checks import spectrum_error
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk

F = torch.float64


def _walk(seed: int, scale: float):
    """Three random softmax heads on ``n = 12`` tokens, ``d = 6``: random transports times
    ``scale``, the first shifted by the identity (a real eigenvalue of ``W`` near 1 + …)."""
    g = torch.Generator().manual_seed(seed)
    n, d = 12, 6
    A = torch.softmax(2 * torch.randn(3, n, n, generator=g, dtype=F), -1)
    T = scale * torch.randn(3, d, d, generator=g, dtype=F) / math.sqrt(d)
    T[0] += torch.eye(d, dtype=F)
    W = sum(np.kron(A[h].numpy(), T[h].numpy()) for h in range(3))
    return ConnectionWalk.from_mha(A, T), W


def _oracle(W: np.ndarray) -> dict:
    """The components of ``spectrum_interval`` and ``spectrum_disk`` from every eigenvalue of ``Δ = I − W``."""
    z = np.linalg.eigvals(np.eye(len(W)) - W)
    return {
        "im": float(np.abs(z.imag).max()),
        "low": float(-z.real.min()),
        "high": float(z.real.max() - 2),
        "mod": float(np.abs(z - 1).max() - 1),
    }


def _check_against_the_oracle(seed: int, scale: float):
    w, W = _walk(seed, scale)
    D = diagnose(w, method="factored", assemble_max=0)  # the Lanczos / Arnoldi route at n·d = 72
    comp = _oracle(W)
    want = {
        "spectrum_interval": max(comp["im"], comp["low"], comp["high"], 0.0),
        "spectrum_disk": max(comp["mod"], 0.0),
    }
    for name, r in want.items():
        got = float(D.checks()[name].residual)
        assert abs(got - r) <= 1e-9 * max(1.0, r), (name, got, r, comp)
    facts = D.extra["spectrum_facts"][0]
    dropped = facts.get("not_converged", {})
    for c, why in dropped.items():
        for k, v in why["below"].items():
            assert why["bendixson_bound"][k] < v <= float(D.checks()[k].residual) + 1e-12
        assert comp[c] < want["spectrum_interval"]  # certainly below the residual it feeds
    return comp, want, dropped


@pytest.mark.parametrize("seed, scale", [(2, 1.0), (3, 1.0), (0, 2.0)])
def test_a_component_below_the_residual_is_left_unconverged_and_the_residual_is_unchanged(seed, scale):
    """Walks where ``high`` (and on some ``im``) lies below the interval residual: Arnoldi stops
    without converging it, the facts say so with its bound, and the residuals are the oracle's."""
    _, _, dropped = _check_against_the_oracle(seed, scale)
    assert dropped


@pytest.mark.parametrize("seed, scale", [(0, 0.5), (13, 1.0), (14, 1.0), (1, 2.0)])
def test_a_candidate_that_is_the_max_is_converged(seed, scale):
    """Walks where a candidate component (not the largest Bendixson bound after the first Lanczos
    steps) is the largest eigenvalue component: its refined bound is above the others, it is not
    dropped, and the residual is its value. On the first three ``im`` is the max and converges
    after the references: a rule that dropped every candidate reports 0.48, 1.22, 0.52 for
    0.62, 1.41, 1.00."""
    comp, want, dropped = _check_against_the_oracle(seed, scale)
    top = max(("im", "low", "high"), key=comp.get)
    assert comp[top] == want["spectrum_interval"] and top not in dropped


def test_the_norm_of_w_behind_the_tolerance_is_within_the_stated_error():
    """``n·d = 240``, three random heads (restarted Lanczos): the ``‖W‖`` inside each spectral
    check's tolerance ``tol(float64, N, scale=‖W‖)`` and error ``spectrum_error(N, ‖W‖)`` is within
    ``spectrum_error(N, ‖W‖)`` of the largest singular value numpy finds, although the run stops on
    the Kato–Temple bound (a rule that stopped at the first check is 0.61 off)."""
    g = torch.Generator().manual_seed(3)
    n, d = 24, 10
    A = torch.softmax(2 * torch.randn(3, n, n, generator=g, dtype=F), -1)
    T = torch.randn(3, d, d, generator=g, dtype=F) / math.sqrt(d)
    W = sum(np.kron(A[h].numpy(), T[h].numpy()) for h in range(3))
    norm = float(np.linalg.norm(W, 2))
    N = n * d
    assert norm > 1.0  # the tolerance's scale is ‖W‖ itself
    D = diagnose(ConnectionWalk.from_mha(A, T), method="factored")
    for name in ("spectrum_interval", "spectrum_disk"):
        c = D.checks()[name]
        wn = c.tol / tol(F, N, scale=1.0)
        assert abs(wn - norm) <= spectrum_error(N, norm), (name, wn, norm)
        assert math.isclose(c.error, spectrum_error(N, norm), rel_tol=1e-12), (name, c.error)
