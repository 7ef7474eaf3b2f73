"""The Krylov solvers of the factored diagnostics (``numerics.laplacian.krylov``) against LAPACK on
explicit float64 matrices (``numpy.linalg.eigh`` / ``eigvals``), with bases small enough that every
run restarts; and the spectrum checks' Krylov route against the dense path on a walk large enough
for restarts (every verdict equal, the Ritz residuals within the checks' rounding error)."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian import diagnose
from numerics.laplacian.factored import diagnose_factored
from numerics.laplacian.krylov import arnoldi_ends, lanczos_ends
from numerics.walk import ConnectionWalk

F = torch.float64


def _op(A: np.ndarray, count: list):
    At = torch.from_numpy(A)

    def op(X):
        count[0] += X.shape[1]
        return At @ X

    return op


def test_lanczos_ends_finds_both_ends_and_the_k_smallest_with_restarts():
    rng = np.random.default_rng(0)
    N = 300
    Q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    lam = np.sort(np.concatenate([[-3.0, -2.9], rng.uniform(-2.0, 2.0, N - 4), [2.5, 4.0]]))
    A = (Q * lam) @ Q.T
    A = 0.5 * (A + A.T)
    ref = np.linalg.eigvalsh(A)
    count = [0]
    v0 = torch.from_numpy(rng.standard_normal(N))
    out, ok = lanczos_ends(
        _op(A, count), N, v0, ("min", "max"), lambda *a: a[2] <= 1e-10, max_dim=20, keep=6, max_products=5000
    )
    assert ok and count[0] > 20  # restarted
    for end, want in (("min", ref[0]), ("max", ref[-1])):
        t, y, rho = out[end][0]
        assert rho <= 1e-10 and abs(t - want) <= 1e-9
        assert float(torch.linalg.vector_norm(torch.from_numpy(A) @ y - t * y)) <= 2e-10  # ρ is the true residual
    out, ok = lanczos_ends(
        _op(A, [0]), N, v0, ("min",), lambda *a: a[2] <= 1e-10, max_dim=20, keep=6, k=3, max_products=5000
    )
    assert ok and [round(t, 8) for t, _, _ in out["min"]] == [round(x, 8) for x in ref[:3]]


def test_lanczos_ends_stops_at_an_invariant_space_between_two_checks():
    """Three distinct eigenvalues: the Krylov space is invariant after 3 steps, a step without a
    Rayleigh–Ritz check (the run checks every ``CHECK_EVERY`` steps); the pairs are still the exact
    extremes (LAPACK) with their true residuals, after 3 products."""
    rng = np.random.default_rng(2)
    N = 50
    Q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    A = (Q * np.repeat([-1.0, 0.5, 3.0], [10, 20, 20])) @ Q.T
    A = 0.5 * (A + A.T)
    ref = np.linalg.eigvalsh(A)
    count = [0]
    out, ok = lanczos_ends(
        _op(A, count), N, torch.from_numpy(rng.standard_normal(N)), ("min", "max"), lambda *a: a[2] <= 1e-12
    )
    assert ok and count[0] == 3
    for end, want in (("min", ref[0]), ("max", ref[-1])):
        t, y, rho = out[end][0]
        assert abs(t - want) <= 1e-12 and rho <= 1e-12
        assert float(torch.linalg.vector_norm(torch.from_numpy(A) @ y - t * y)) <= 1e-12


def test_arnoldi_ends_gets_every_extreme_from_one_restarted_space():
    rng = np.random.default_rng(1)
    N = 200
    A = rng.standard_normal((N, N)) / math.sqrt(N)
    A[:3, :3] += np.array([[1.6, 0.9, 0.0], [-0.9, 1.6, 0.0], [0.0, 0.0, -1.8]])  # outliers: a pair and a real one
    z = np.linalg.eigvals(A)
    keys = {
        "im": lambda x: np.abs(x.imag),
        "low": lambda x: x.real,
        "high": lambda x: -x.real,
        "mod": lambda x: np.abs(x),
    }
    count = [0]
    out, ok = arnoldi_ends(
        _op(A, count),
        N,
        torch.from_numpy(rng.standard_normal(N)),
        keys,
        lambda *a: a[2] <= 1e-10,
        max_dim=30,
        max_products=5000,
    )
    assert ok and count[0] > 30  # restarted
    want = {
        "im": np.abs(z.imag).max(),
        "low": z.real.max(),
        "high": -z.real.min(),
        "mod": np.abs(z).max(),
    }
    for name, score in keys.items():
        zz, rho = out[name]
        assert rho <= 1e-10
        assert abs(float(score(np.array([zz]))[0]) - want[name]) <= 1e-8, (name, zz)
        assert np.abs(z - zz).min() <= 1e-8  # an eigenvalue of A


def test_spectrum_krylov_route_agrees_with_the_dense_spectrum():
    """n·d = 240 with H = 3 random heads: the Krylov route restarts; each spectral verdict equals the
    dense one and the previous (ARPACK) route's, the residuals agree within the tolerance, with
    fewer products than the ARPACK route."""
    g = torch.Generator().manual_seed(3)
    n, d = 24, 10
    A = torch.softmax(2 * torch.randn(3, n, n, generator=g, dtype=F), -1)
    w = ConnectionWalk.from_mha(A, torch.randn(3, d, d, generator=g, dtype=F) / math.sqrt(d))
    Dd = diagnose(w, method="dense")
    Dk = diagnose(w, method="factored")
    Da = diagnose_factored(w, spectrum_route="arpack")  # the previous route (ARPACK at machine precision)
    for name in ("spectrum_interval", "spectrum_disk", "spectrum_scaled"):
        cd, ck, ca = Dd.checks()[name], Dk.checks()[name], Da.checks()[name]
        assert bool(cd.holds) == bool(ck.holds) == bool(ca.holds) and bool(cd.fails) == bool(ck.fails), name
        if not bool(torch.isnan(cd.residual)):
            assert abs(float(cd.residual) - float(ck.residual)) <= max(cd.tol, ck.tol), name
    facts = Dk.extra["spectrum_facts"][0]
    assert facts["arnoldi"]  # a non-normal walk: Arnoldi decided some component
    assert facts["matvecs"] < Da.extra["spectrum_facts"][0]["matvecs"]
