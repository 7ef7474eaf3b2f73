"""The Krylov solvers of the factored diagnostics (``numerics.laplacian.krylov``) against LAPACK on
explicit float64 matrices (``numpy.linalg.eigh`` / ``eigvals``), with bases small enough that every
run restarts; and the spectrum checks' Krylov route against the dense path on a walk large enough
for restarts (every verdict equal, the Ritz residuals within the checks' rounding error)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import torch

from numerics.laplacian import diagnose, krylov
from numerics.laplacian.algebra import inverse_iteration_eigenvectors
from numerics.laplacian.factored import diagnose_factored
from numerics.laplacian.krylov import arnoldi_ends, lanczos_ends
from numerics.laplacian.lanczos import DECIDED_RTOL, Meter, deflated_smallest
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


def _runs_with_and_without_the_screen(monkeypatch, run):
    """``run()`` with the residual screen and with every check's residuals computed explicitly."""
    screened = run()
    with monkeypatch.context() as m:
        m.setattr(krylov, "_certainly_pending", lambda *a: False)
        explicit = run()
    return screened, explicit


def test_the_residual_screen_never_moves_a_stop(monkeypatch):
    """The screen (``‖f‖·|s_j|`` from the Krylov relation) only skips explicit residuals of pairs that
    certainly fail ``done``: with and without it, Lanczos (restarted, both ends) and Arnoldi
    (restarted, four keys) stop after the same products with the same Ritz values and residuals
    (the explicit ones, against LAPACK)."""
    rng = np.random.default_rng(4)
    N = 300
    Q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    A = (Q * np.sort(np.concatenate([[-3.0, -2.9], rng.uniform(-2.0, 2.0, N - 4), [2.5, 4.0]]))) @ Q.T
    A = 0.5 * (A + A.T)
    v0 = torch.from_numpy(rng.standard_normal(N))

    def lanczos():
        count = [0]
        out, ok = lanczos_ends(_op(A, count), N, v0, ("min", "max"), lambda *a: a[2] <= 1e-10, max_dim=20, keep=6)
        return count[0], [(t, rho) for end in ("min", "max") for t, _, rho in out[end]]

    (c1, r1), (c2, r2) = _runs_with_and_without_the_screen(monkeypatch, lanczos)
    assert c1 == c2 and c1 > 20 and np.allclose(r1, r2, rtol=0, atol=1e-12)
    ref = np.linalg.eigvalsh(A)
    assert abs(r1[0][0] - ref[0]) <= 1e-9 and abs(r1[1][0] - ref[-1]) <= 1e-9
    B = rng.standard_normal((200, 200)) / math.sqrt(200)
    B[:3, :3] += np.array([[1.6, 0.9, 0.0], [-0.9, 1.6, 0.0], [0.0, 0.0, -1.8]])
    keys = {"im": lambda x: np.abs(x.imag), "low": lambda x: x.real, "high": lambda x: -x.real, "mod": np.abs}
    w0 = torch.from_numpy(rng.standard_normal(200))

    def arnoldi():
        count = [0]
        out, ok = arnoldi_ends(_op(B, count), 200, w0, keys, lambda *a: a[2] <= 1e-10, max_dim=30, tie=1e-10)
        return count[0], [(out[k][0].real, out[k][0].imag, out[k][1]) for k in keys]

    (c1, a1), (c2, a2) = _runs_with_and_without_the_screen(monkeypatch, arnoldi)
    assert c1 == c2 and c1 > 30 and np.allclose(a1, a2, rtol=0, atol=1e-12)


def test_the_sigma_1_search_stops_once_decided_with_a_true_lower_bound():
    """``deflated_smallest`` with a ``level``: stops once ``ρ ≤ DECIDED_RTOL·θ`` and ``θ − ρ > level²``,
    in fewer products than the 1e-4 rule, and ``θ − ρ`` is below the true smallest eigenvalue
    (LAPACK). A rule on ``θ − ρ > level²`` alone stops at the first pair with ``ρ < θ``, unconverged
    (here ``ρ ≈ 0.15·θ``; on the benchmark's random walk after 2 products, with ``θ − ρ`` 50 times
    the true ``σ_1²``). Without a level, or with one above the eigenvalue, the search runs to the
    1e-4 rule."""
    rng = np.random.default_rng(5)
    N = 400
    Q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    lam = np.sort(np.concatenate([[1e-3], rng.uniform(0.05, 4.0, N - 1)]))
    A = torch.from_numpy((Q * lam) @ Q.T)
    e = SimpleNamespace(counter=[0])

    def DtD(x):  # (p, n, d) fields, n·d = N
        e.counter[0] += x.shape[0]
        return (A @ x.reshape(x.shape[0], N).T).T.reshape(x.shape)

    K = torch.zeros(N, 0, dtype=F)
    v0 = rng.standard_normal(N)

    def search(level):
        e.counter[0] = 0
        t, _, rho = deflated_smallest(DtD, K, 2.0, N, 20, 20, Meter(e, 10**6), v0, level)
        return t, rho, e.counter[0]

    t4, rho4, c4 = search(None)
    assert rho4 <= 1e-4 * t4 and abs(t4 - lam[0]) <= 1e-6
    t, rho, c = search(1e-12)
    assert c < c4 and rho <= DECIDED_RTOL * t and 0 < t - rho <= lam[0]
    assert search(math.sqrt(2 * lam[0]))[2] == c4  # not decided above the level: the 1e-4 rule


def _tridiagonal(d, e):
    return np.diag(d) + np.diag(e, 1) + np.diag(e, -1)


def test_the_subset_ritz_pairs_match_a_dense_eigendecomposition():
    """The checks' Ritz pairs (``krylov._ritz_pairs``: LAPACK ``dstebz``/``dstein`` on the tridiagonal
    projected matrix, ``dsyevr`` index ranges on the arrow after a restart) against
    ``numpy.linalg.eigh`` of the explicit matrix: the eigenvalues with the asked indices (in the asked
    order, both ends, descending as a ``max`` end asks them), orthonormal eigenvectors ``T s = θ s``
    and the largest eigenvalue modulus, also for a tridiagonal matrix that splits into blocks (zero
    off-diagonals) with double eigenvalues."""
    rng = np.random.default_rng(6)
    j = 30
    d, e = rng.uniform(-2.0, 1.0, j), rng.uniform(0.1, 1.0, j - 1)
    tri = _tridiagonal(d, e)
    e2 = e.copy()
    e2[[9, 19]] = 0.0  # three blocks, the last a copy of the first: each of its eigenvalues twice
    d2 = d.copy()
    d2[20:], e2[20:] = d[:10], e[:9]
    split = _tridiagonal(d2, e2)
    arrow = tri.copy()
    arrow[:8, :8] = np.diag(np.sort(rng.uniform(-3.0, 3.0, 8)))
    arrow[8, :8] = arrow[:8, 8] = rng.standard_normal(8)  # row 8 after a restart on 8 Ritz vectors
    for M, is_tri in ((tri, True), (split, True), (arrow, False)):
        T = np.zeros((40, 40))
        T[:j, :j] = M
        ref = np.linalg.eigvalsh(M)
        for idx in ([0], [j - 1], [0, j - 1], [0, 1, 2], [j - 1, j - 2, j - 3], [0, 1, j - 1, j - 2]):
            th, S, anorm = krylov._ritz_pairs(T, j, is_tri, idx)
            assert np.allclose(th, ref[idx], rtol=0, atol=1e-13), (is_tri, idx)
            assert abs(anorm - np.abs(ref).max()) <= 1e-13
            assert np.abs(S.T @ S - np.eye(len(idx))).max() <= 1e-12, (is_tri, idx)  # orthonormal
            assert np.abs(M @ S - S * th).max() <= 1e-12, (is_tri, idx)


def test_the_candidate_eigenvectors_by_inverse_iteration():
    """Arnoldi's candidate Ritz vectors (``algebra.inverse_iteration_eigenvectors``: inverse iteration on the projected
    matrix at its computed eigenvalues) against the explicit definition ``G s = θ s`` (``‖s‖ = 1``),
    for a conjugate pair (the second vector the conjugate of the first), a real eigenvalue, and a
    matrix whose eigenvalue is exact in floating point (a vanishing pivot)."""
    rng = np.random.default_rng(7)
    G = np.triu(rng.standard_normal((25, 25)), -1)
    z = np.linalg.eigvals(G)
    pair = z[np.argmax(z.imag)]
    real = z[np.abs(z.imag) == 0][:1]
    th = np.concatenate([[pair, np.conj(pair)], real])
    S = inverse_iteration_eigenvectors(G, th, float(np.abs(z).max()))
    assert np.allclose(np.linalg.norm(S, axis=0), 1.0, rtol=0, atol=1e-13)
    assert np.abs(G @ S - S * th).max() <= 1e-12
    D = np.diag([3.0, 1.0, -2.0]) + np.triu(np.ones((3, 3)), 1)  # exact eigenvalues 3, 1, −2
    S = inverse_iteration_eigenvectors(D, np.array([1.0 + 0j]), 3.0)
    assert np.abs(D @ S[:, 0] - S[:, 0]).max() <= 1e-14 and abs(np.linalg.norm(S[:, 0]) - 1) <= 1e-14


def test_the_torch_steps_agree_with_the_numpy_steps(monkeypatch):
    """A basis on the CPU steps on numpy views (``krylov.NUMPY_STEPS``); a basis on another device
    (cuda) steps in torch. Both, run here on the CPU: Lanczos (restarted, both ends, k = 2) and
    Arnoldi (restarted, four keys) stop after the same products with the same Ritz values, which
    are LAPACK's (``eigvalsh`` / ``eigvals`` of the explicit matrix), and the torch run's
    vectors are tensors."""
    rng = np.random.default_rng(8)
    N = 240
    Q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    A = (Q * np.sort(np.concatenate([[-3.0, -2.9], rng.uniform(-2.0, 2.0, N - 4), [2.5, 4.0]]))) @ Q.T
    A = 0.5 * (A + A.T)
    B = rng.standard_normal((N, N)) / math.sqrt(N)
    B[:3, :3] += np.array([[1.6, 0.9, 0.0], [-0.9, 1.6, 0.0], [0.0, 0.0, -1.8]])
    v0 = torch.from_numpy(rng.standard_normal(N))
    keys = {"im": lambda x: np.abs(x.imag), "low": lambda x: x.real, "high": lambda x: -x.real, "mod": np.abs}

    def runs():
        c1, c2 = [0], [0]
        done = lambda *a: a[2] <= 1e-10
        lz, ok1 = lanczos_ends(_op(A, c1), N, v0, ("min", "max"), done, max_dim=20, keep=6, max_products=2000, k=2)
        ar, ok2 = arnoldi_ends(_op(B, c2), N, v0, keys, done, max_dim=30, max_products=2000, tie=1e-10)
        assert ok1 and ok2 and c1[0] > 20 and c2[0] > 30  # both restarted
        assert all(isinstance(y, torch.Tensor) for pairs in lz.values() for _, y, _ in pairs)
        zs = [(ar[k][0].real, abs(ar[k][0].imag)) for k in keys]  # a conjugate pair ties: either member
        return (c1[0], c2[0]), [t for end in ("min", "max") for t, _, _ in lz[end]], zs

    fast = runs()
    monkeypatch.setattr(krylov, "NUMPY_STEPS", False)
    slow = runs()
    assert fast[0] == slow[0]
    assert np.allclose(fast[1], slow[1], rtol=0, atol=1e-12) and np.allclose(fast[2], slow[2], rtol=0, atol=1e-12)
    ref = np.linalg.eigvalsh(A)
    assert np.allclose(slow[1], [ref[0], ref[1], ref[-1], ref[-2]], rtol=0, atol=1e-9)
    z = np.linalg.eigvals(B)
    assert all(np.abs(z - complex(*zz)).min() <= 1e-8 for zz in slow[2])


def test_the_smallest_spaces():
    """``N = 1, 2, 3``: the whole space is the Krylov space (a one-vector basis too: LAPACK's
    wrappers take no empty off-diagonal); Lanczos (both ends, and ``k = 2`` at one) and Arnoldi give
    LAPACK's eigenvalues with zero residual up to rounding."""
    rng = np.random.default_rng(9)
    for N in (1, 2, 3):
        A = rng.standard_normal((N, N))
        Sym = A + A.T
        ref = np.linalg.eigvalsh(Sym)
        v0 = torch.ones(N, dtype=F)
        out, ok = lanczos_ends(_op(Sym, [0]), N, v0, ("min", "max"), lambda *a: a[2] <= 1e-12)
        assert ok and abs(out["min"][0][0] - ref[0]) <= 1e-12 and abs(out["max"][0][0] - ref[-1]) <= 1e-12
        out, ok = lanczos_ends(_op(Sym, [0]), N, v0, ("max",), lambda *a: a[2] <= 1e-12, k=2)
        assert ok and np.allclose([t for t, _, _ in out["max"]], ref[::-1][:2], rtol=0, atol=1e-12)
        out, ok = arnoldi_ends(_op(A, [0]), N, v0, {"mod": np.abs}, lambda *a: a[2] <= 1e-12)
        z = np.linalg.eigvals(A)
        assert ok and abs(abs(out["mod"][0]) - np.abs(z).max()) <= 1e-12 and out["mod"][1] <= 1e-12


def test_a_per_end_rule_sees_every_pair_of_its_end_at_every_check():
    """``per_end``: the rule gets an end's pairs together, nearest first, in the screen and in the
    explicit checks alike, from the first check on (one pair while the space holds fewer than ``k``);
    the Kato–Temple rule of the spectrum's ‖W‖ run then stops with the top eigenvalue within its
    stated accuracy (dense eigvalsh of the explicit matrix)."""
    from numerics.laplacian.spectral import _top_norm_done

    rng = np.random.default_rng(4)
    N = 200
    Q, _ = np.linalg.qr(rng.standard_normal((N, N)))
    lam = np.sort(np.concatenate([rng.uniform(0.0, 2.0, N - 1), [3.0]]))
    A = (Q * lam) @ Q.T
    A = 0.5 * (A + A.T)
    top = float(np.linalg.eigvalsh(A)[-1])
    seen = []
    rule = _top_norm_done(lambda s: 1e-9 * s)

    def done(end, pairs, an):
        assert end == "max" and 1 <= len(pairs) <= 2
        assert all(pairs[i][0] >= pairs[i + 1][0] for i in range(len(pairs) - 1))  # nearest the top first
        seen.append(len(pairs))
        return rule(end, pairs, an)

    v0 = torch.from_numpy(rng.standard_normal(N))
    out, ok = lanczos_ends(_op(A, [0]), N, v0, ("max",), done, k=2, per_end=True, max_products=500)
    t = out["max"][0][0]
    assert ok and 2 in seen
    assert abs(math.sqrt(t) - math.sqrt(top)) <= 1e-9 * math.sqrt(top) + 1e-15
