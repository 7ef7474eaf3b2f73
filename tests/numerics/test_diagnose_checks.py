"""The pieces of ``diagnose`` one by one: both block algebras (dense blocks, factored heads)
against literal float64 loops, and each hypothesis / conclusion function on walks whose answer is
known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.laplacian_checks import (
    DenseBlocks,
    check_block_detailed_balance,
    check_detailed_balance,
    check_dirichlet,
    check_orthogonal,
    check_scaled_isometry,
    check_self_adjoint,
    check_stochastic,
    check_transpose_symmetric,
    spectrum_checks,
    stationary,
    transport_scale,
)
from numerics.laplacian_factored import FactoredBlocks, factored_blocks
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk

F = torch.float64


def _dense_blocks(w: ConnectionWalk) -> DenseBlocks:
    w = w.to(dtype=F)
    P = w.walk_matrix
    O, sup = w.edge_transports()
    return DenseBlocks(P, w.blocks(), torch.where(sup[..., None, None], O, torch.zeros_like(O)))


def _algebras(w: ConnectionWalk):
    return {"dense": _dense_blocks(w), "factored": factored_blocks(w)}


def _arr(shape, lo=-2.0, hi=2.0):
    """Entries 0 or of magnitude ≥ 1e-6: a norm of numbers near 1e-160 underflows in an unscaled
    sum of squares (torch) but not in a scaled one (LAPACK), a difference outside this comparison."""
    return cst.arrays(shape, lo, hi).map(lambda t: torch.where(t.abs() < 1e-6, torch.zeros_like(t), t))


@st.composite
def heads_walks(draw, max_n: int = 4, max_d: int = 3, max_h: int = 3):
    """Random heads-form walks, with full transports or with low-rank factors, some attention
    entries zero (so the support is not full)."""
    n, d, H = draw(st.integers(1, max_n)), draw(st.integers(1, max_d)), draw(st.integers(1, max_h))
    A = draw(_arr((H, n, n), 0.0, 1.0))
    mask = draw(_arr((H, n, n), 0.0, 1.0)) > 0.3
    A = torch.where(mask, A, torch.zeros_like(A))
    A[:, torch.arange(n), torch.arange(n)] += 0.1  # no empty row
    A = A / A.sum(-1, keepdim=True)
    if draw(st.booleans()):
        dh = draw(st.integers(1, d))
        return ConnectionWalk.from_factors(A, draw(_arr((H, d, dh))), draw(_arr((H, dh, d))))
    return ConnectionWalk.from_mha(A, draw(_arr((H, d, d))))


def naive(w: ConnectionWalk):
    """Blocks, walk matrix and edge transports by literal loops (numpy float64)."""
    A = w.attention.cpu().numpy()
    T = w.head_transports.cpu().numpy()
    H, n, _ = A.shape
    P = A.mean(0)
    B = np.zeros((n, n) + T.shape[1:])
    O = np.zeros_like(B)
    for i in range(n):
        for j in range(n):
            for h in range(H):
                B[i, j] += A[h, i, j] * T[h]
            if P[i, j] > 0:
                O[i, j] = B[i, j] / P[i, j]
    return P, B, O


@given(heads_walks(), st.integers(0, 2**16))
def test_factored_algebra_matches_literal_loops(w, seed):
    P, B, O = naive(w)
    n, d = P.shape[0], B.shape[-1]
    fb = factored_blocks(w)
    rng = np.random.default_rng(seed)
    pi = rng.uniform(0.1, 1.0, n)
    c = rng.uniform(0.1, 2.0, (n, n))
    x = rng.standard_normal((2, n, d))
    I = np.eye(d)
    fro = np.linalg.norm
    ref = {
        "norms": np.array([[fro(B[i, j]) for j in range(n)] for i in range(n)]),
        "transport_norms": np.array([[fro(O[i, j]) for j in range(n)] for i in range(n)]),
        "balance": np.array([[fro(pi[i] * B[i, j] - pi[j] * B[j, i].T) for j in range(n)] for i in range(n)]),
        "transpose": np.array([[fro(O[j, i] - O[i, j].T) for j in range(n)] for i in range(n)]),
        "gram": np.array([[fro(c[i, j] ** 2 * O[i, j].T @ O[i, j] - I) for j in range(n)] for i in range(n)]),
    }
    got = {
        "norms": fb.norms(),
        "transport_norms": fb.transport_norms(),
        "balance": fb.balance_defect(torch.tensor(pi)),
        "transpose": fb.transpose_defect(),
        "gram": fb.gram_defect(torch.tensor(c)),
    }
    scale = max(float(np.abs(B).max()), float(np.abs(O).max()), 1.0) ** 2 * 4
    for k in ref:
        err = float(np.abs(got[k].numpy() - ref[k]).max())
        assert err <= tol(F, d * d, scale=scale), (k, err)
    Wx = np.einsum("ijab,pjb->pia", B, x)
    Wtx = np.einsum("jiba,pjb->pia", B, x)
    E = np.array(
        [
            0.5
            * sum(
                pi[i] * P[i, j] * fro(x[p, i] - O[i, j] @ x[p, j]) ** 2
                for i in range(n)
                for j in range(n)
                if P[i, j] > 0
            )
            for p in range(2)
        ]
    )
    CtC = np.zeros_like(x)
    for p in range(2):
        for i in range(n):
            for j in range(n):
                if P[i, j] > 0:
                    r = x[p, i] - O[i, j] @ x[p, j]
                    CtC[p, i] += r
                    CtC[p, j] -= O[i, j].T @ r
    xt = torch.tensor(x)
    s2 = scale * max(float(np.abs(x).max()), 1.0) ** 2
    assert float(np.abs(fb.apply(xt).numpy() - Wx).max()) <= tol(F, n * d, scale=s2)
    assert float(np.abs(fb.apply_t(xt).numpy() - Wtx).max()) <= tol(F, n * d, scale=s2)
    assert float(np.abs(fb.edge_energy(torch.tensor(pi), xt).numpy() - E).max()) <= tol(F, n * n * d, scale=s2 * n)
    assert float(np.abs(fb.constraints_gram_apply(xt).numpy() - CtC).max()) <= tol(F, n * n * d, scale=s2 * n)


def test_row_chunking_does_not_change_results():
    g = torch.Generator().manual_seed(3)
    A = torch.softmax(torch.randn(3, 7, 7, generator=g, dtype=F), -1)
    T = torch.randn(3, 4, 4, generator=g, dtype=F)
    w = ConnectionWalk.from_mha(A, T)
    big, small = factored_blocks(w), factored_blocks(w, chunk_elems=1)
    pi = torch.rand(7, generator=g, dtype=F)
    x = torch.randn(2, 7, 4, generator=g, dtype=F)
    for f in (
        lambda b: b.norms(),
        lambda b: b.balance_defect(pi),
        lambda b: b.gram_defect(torch.ones(7, 7, dtype=F)),
        lambda b: b.edge_energy(pi, x),
        lambda b: b.constraints_gram_apply(x),
    ):
        assert torch.allclose(f(big), f(small), rtol=0, atol=tol(F, 64, scale=float(f(big).abs().max())))


def test_gram_defect_resolves_defects_far_below_sqrt_eps():
    """A transport (1 + δ)·Q (Q orthogonal, d = 16) split over 12 heads, δ = 1e-11: the exact
    ‖OᵀO − I‖_F = 4(2δ + δ²) = 8e-11. The factored value (triangular factor of the columns) is
    right to eps level; an expansion through the Gram matrix, ‖OᵀO‖² − 2 tr OᵀO + d, cancels to
    a √eps ≈ 1e-8 floor and could not resolve it."""
    g = torch.Generator().manual_seed(0)
    Q, _ = torch.linalg.qr(torch.randn(16, 16, generator=g, dtype=F))
    wts = torch.rand(12, generator=g, dtype=F)
    wts = wts / wts.sum()
    A = torch.full((12, 5, 5), 0.2, dtype=F) * 12 * wts[:, None, None]
    delta = 1e-11
    fb = FactoredBlocks(A.mean(0), A, ((1 + delta) * Q / 12).expand(12, 16, 16).clone())  # O_ij = (1 + δ) Q
    r = fb.gram_defect(torch.ones(5, 5, dtype=F))
    exact = 4 * (2 * delta + delta**2)
    assert float((r - exact).abs().max()) <= tol(F, 16 * 12, scale=16.0), (r.max(), exact)


# ------------------------------------------------------------------------------------ one check at a time
def _edges(P, O):
    return ConnectionWalk.from_edges(torch.as_tensor(P, dtype=F), torch.as_tensor(O, dtype=F))


@pytest.mark.parametrize("kind", ["dense", "factored"])
def test_stochastic_and_stationary(kind):
    P = torch.tensor([[0.0, 1.0], [0.5, 0.5]], dtype=F)
    c = check_stochastic(P, F)
    assert bool(c.holds) and float(c.residual) == 0.0
    c2 = check_stochastic(2 * P, F)
    assert not bool(c2.holds) and float(c2.residual) == pytest.approx(1.0)
    # the row-sum tolerance of float32 attention (module docstring of numerics.laplacian)
    Pr = P.clone()
    Pr[0, 1] += 2.4e-7
    assert not bool(check_stochastic(Pr, F).holds) and bool(check_stochastic(Pr, torch.float32).holds)
    st_ = stationary(P, F)
    assert torch.allclose(st_.pi, torch.tensor([1 / 3, 2 / 3], dtype=F), atol=tol(F, 2))
    assert bool(st_.check.holds) and bool(st_.positive)
    db = check_detailed_balance(P, st_, F)
    assert bool(db.holds)  # two states: always reversible
    cyc = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0.0]], dtype=F)
    dbc = check_detailed_balance(cyc, stationary(cyc, F), F)
    assert not bool(dbc.holds) and "no reverse edge" in dbc.reason
    assert float(dbc.residual) == pytest.approx(1 / 3)


@pytest.mark.parametrize("kind", ["dense", "factored"])
def test_metric_compatibility_checks_on_known_transports(kind):
    R = torch.tensor([[0.6, -0.8], [0.8, 0.6]], dtype=F)
    I2 = torch.eye(2, dtype=F)
    P = torch.full((2, 2), 0.5, dtype=F)
    O = torch.stack([torch.stack([I2, R]), torch.stack([R.T, I2])])
    alg = _algebras(ConnectionWalk.from_edges(P, O))[kind]
    orth, onorm = check_orthogonal(alg, F)
    assert bool(orth.holds) and onorm == pytest.approx(2.0)
    assert bool(check_transpose_symmetric(alg, F, onorm).holds)
    # O_21 = R instead of Rᵀ: ‖R − Rᵀ‖_F = 1.6·√2 on the edge pair
    O2 = torch.stack([torch.stack([I2, R]), torch.stack([R, I2])])
    alg2 = _algebras(ConnectionWalk.from_edges(P, O2))[kind]
    ts = check_transpose_symmetric(alg2, F, 2.0)
    assert not bool(ts.holds) and float(ts.residual) == pytest.approx(1.6 * math.sqrt(2), abs=1e-12)
    # scaled transports 2·O: ‖4I − I‖_F = 3√2; common walk-gauge scale 2; gauge-free s = 2
    alg3 = _algebras(ConnectionWalk.from_edges(P, 2 * O))[kind]
    orth3, _ = check_orthogonal(alg3, F)
    assert float(orth3.residual) == pytest.approx(3 * math.sqrt(2), abs=1e-12)
    ts_, common, s_max = transport_scale(alg3, F)
    assert bool(common) and float(ts_) == pytest.approx(2.0, abs=1e-13)
    si, s = check_scaled_isometry(alg3, F)
    assert bool(si.holds) and float(s) == pytest.approx(2.0, abs=1e-13)


@pytest.mark.parametrize("kind", ["dense", "factored"])
def test_balance_self_adjointness_and_dirichlet(kind):
    # reversible, metric-compatible: everything holds
    P = torch.tensor([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]], dtype=F)
    Q = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F)  # symmetric orthogonal
    w = ConnectionWalk.from_edges(P, Q)
    alg = _algebras(w)[kind]
    st_ = stationary(P, F)
    bdb, bpi = check_block_detailed_balance(alg, F)
    assert bool(bdb.holds) and torch.allclose(bpi, st_.pi, atol=tol(F, 3))
    assert bool(check_self_adjoint(alg, st_, F).holds)
    _, common, s_max = transport_scale(alg, F)
    assert bool(check_dirichlet(alg, st_, common, s_max, F, 3, 0).holds)
    # a 3-cycle is stationary (uniform π) but not reversible: self-adjointness fails by
    # max ‖π_i B_ij − π_j B_jiᵀ‖_F = (1/3)·‖Q‖_F = √2/3
    cyc = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0.0]], dtype=F)
    algc = _algebras(ConnectionWalk.from_edges(cyc, Q))[kind]
    stc = stationary(cyc, F)
    sa = check_self_adjoint(algc, stc, F)
    assert not bool(sa.holds) and float(sa.residual) == pytest.approx(math.sqrt(2) / 3, abs=1e-13)
    # drop (a): P = 2·(swap): <x, Δx>_π − E(x) = Σ π_i (1 − r_i)‖x_i‖² ≠ 0
    sw = torch.tensor([[0, 2.0], [2.0, 0]], dtype=F)
    algs = _algebras(ConnectionWalk.from_edges(sw, torch.eye(1, dtype=F)))[kind]
    sts = stationary(sw, F)
    _, cm, sm = transport_scale(algs, F)
    assert not bool(check_dirichlet(algs, sts, cm, sm, F, 3, 0).holds)


def test_spectrum_checks_from_extremes():
    t = lambda v: torch.tensor(v, dtype=F)
    from numerics.laplacian_checks import make_check

    si_yes = make_check("scaled_isometry", t(0.0), 1e-12)
    si_no = make_check("scaled_isometry", t(1.0), 1e-12)
    a, b, c = spectrum_checks(t(0.0), t(0.0), t(2.0), t(1.0), t(1.0), si_yes, 1e-12)
    assert bool(a.holds) and bool(b.holds) and bool(c.holds)
    a, b, c = spectrum_checks(t(0.5), t(-0.1), t(1.0), t(1.2), t(0.5), si_yes, 1e-12)
    assert float(a.residual) == pytest.approx(0.5) and float(b.residual) == pytest.approx(0.2)
    assert float(c.residual) == pytest.approx(0.6)  # Re z = −0.1 is 0.6 below 1 − s = 0.5
    _, _, c = spectrum_checks(t(0.0), t(0.0), t(2.0), t(1.0), t(1.0), si_no, 1e-12)
    assert not bool(c.holds) and bool(torch.isnan(c.residual)) and "scaled isometry" in c.reason
