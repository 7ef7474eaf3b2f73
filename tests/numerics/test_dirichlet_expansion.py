"""The Dirichlet check's head expansion (numerics.laplacian.checks._dirichlet_expanded) against the
literal float64 definition ``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` evaluated edge by edge in numpy:
same residual to its rounding bound, same decision, and the literal route taken where the
expansion's value is within its bound of the tolerance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from numerics.laplacian.blocks import factored_blocks
from numerics.laplacian.checks import check_dirichlet, probe_fields, stationary
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk

F = torch.float64


def _walk(seed: int, n: int, d: int, H: int, orthogonal: bool = False):
    g = torch.Generator().manual_seed(seed)
    A = torch.softmax(torch.randn(H, n, n, generator=g, dtype=F), -1)
    if orthogonal:  # T_h = Q / H (P = mean_h A^h): O_ij = Q orthogonal, T3.3 holds with s = 1
        Q = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F))[0]
        T = (Q / H).expand(H, d, d).contiguous()
    else:
        T = torch.randn(H, d, d, generator=g, dtype=F)
    return A, T


def _oracle(A: np.ndarray, T: np.ndarray, pi: np.ndarray, x: np.ndarray, s: float) -> float:
    """The relative residual of T3.3 from its definition, edge by edge (float64 numpy)."""
    H, n, _ = A.shape
    P = A.mean(0)
    rel = []
    for p in range(x.shape[0]):
        xp = x[p]
        B = lambda i, j: sum(A[h, i, j] * T[h] for h in range(H))
        Bx = np.array([sum(B(i, j) @ xp[j] for j in range(n)) for i in range(n)])
        xx = sum(pi[i] * xp[i] @ xp[i] for i in range(n))
        lhs = sum(pi[i] * xp[i] @ (xp[i] - Bx[i]) for i in range(n))
        E = 0.5 * sum(
            pi[i] * P[i, j] * np.sum((xp[i] - (B(i, j) / P[i, j]) @ xp[j]) ** 2)
            for i in range(n)
            for j in range(n)
            if P[i, j] > 0
        )
        corr = 0.5 * (1 - s * s) * xx
        den = xx * (1 + s * s) + sum(pi[i] * np.abs(Bx[i]) @ np.abs(xp[i]) for i in range(n)) + abs(E)
        rel.append(abs(lhs - E - corr) / den)
    return max(rel)


def _spy(fb):
    calls = []
    lit = fb.edge_energy
    fb.edge_energy = lambda pi, x: calls.append(1) or lit(pi, x)
    return calls


def _dirichlet(fb, s: float | None):
    st = stationary(fb.P, F)
    common = torch.tensor(s is not None)
    s_max = torch.tensor(1.0 if s is None else s, dtype=F)
    return check_dirichlet(fb, st, common, s_max, F, 3, 0), st


@pytest.mark.parametrize("seed, n, d, H", [(0, 6, 4, 2), (1, 5, 3, 3), (2, 7, 5, 1), (3, 4, 6, 4)])
def test_expanded_residual_is_the_literal_definition(seed, n, d, H):
    A, T = _walk(seed, n, d, H)
    fb = factored_blocks(ConnectionWalk.from_mha(A, T))
    calls = _spy(fb)
    c, st = _dirichlet(fb, None)
    assert not calls  # the expansion decided (a random walk fails T3.3 by far)
    x = probe_fields((), n, d, 3, 0, torch.device("cpu")).numpy()
    ref = _oracle(A.numpy(), T.numpy(), st.pi.numpy(), x, 1.0)
    assert abs(float(c.residual) - ref) <= tol(F, n * n * d) * max(ref, 1.0)
    assert bool(c.fails) and ref - c.error > c.tol  # the definition's decision


def test_a_walk_where_dirichlet_holds_is_decided_the_same_way():
    A, T = _walk(4, 6, 4, 2, orthogonal=True)
    fb = factored_blocks(ConnectionWalk.from_mha(A, T))
    c, st = _dirichlet(fb, 1.0)
    x = probe_fields((), 6, 4, 3, 0, torch.device("cpu")).numpy()
    ref = _oracle(A.numpy(), T.numpy(), st.pi.numpy(), x, 1.0)
    assert bool(c.holds) and ref + c.error <= c.tol and float(c.residual) <= tol(F, 6 * 6 * 4)


def test_near_the_tolerance_the_literal_sum_decides():
    """A walk where T3.3 holds (s = 1) checked against a common scale s = 1 + ε: the residual is
    about ε; ε is bisected (on the literal definition) to put it at the tolerance, where the
    expansion must hand over to the literal sum and give exactly its value."""
    n, d = 6, 4
    A, T = _walk(5, n, d, 2, orthogonal=True)
    w = ConnectionWalk.from_mha(A, T)
    x = probe_fields((), n, d, 3, 0, torch.device("cpu")).numpy()
    pi = stationary(factored_blocks(w).P, F).pi.numpy()
    t_d = tol(F, n * d)
    lo, hi = 0.0, 1e-6
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _oracle(A.numpy(), T.numpy(), pi, x, 1.0 + mid) < t_d else (lo, mid)
    fb = factored_blocks(w)
    calls = _spy(fb)
    c, _ = _dirichlet(fb, 1.0 + lo)
    assert calls == [1]  # the literal route was taken
    ref = factored_blocks(w)
    st = stationary(ref.P, F)
    pi_t = st.safe[None, :]
    xt = torch.tensor(x)
    Bx = ref.apply(xt)
    xx = (pi_t[..., None] * xt * xt).sum((-1, -2))
    s = 1.0 + lo
    E = ref.edge_energy(st.safe, xt)
    lhs = (pi_t[..., None] * xt * (xt - Bx)).sum((-1, -2))
    den = xx * (1 + s * s) + (pi_t[..., None] * Bx.abs() * xt.abs()).sum((-1, -2)) + E.abs()
    literal = ((lhs - E - 0.5 * (1 - s * s) * xx).abs() / den).amax(-1)
    assert float(c.residual) == float(literal)
    # and farther from the tolerance the expansion decides again
    fb2 = factored_blocks(w)
    calls2 = _spy(fb2)
    _dirichlet(fb2, 1.0 + 100 * lo)
    assert not calls2


def test_a_batch_of_low_rank_walks():
    """Batched ``A`` with ``T_h = W_O[h] W_V[h]``: each element's residual is its own definition."""
    g = torch.Generator().manual_seed(6)
    n, d, H, k = 5, 4, 2, 3
    A = torch.softmax(torch.randn(2, H, n, n, generator=g, dtype=F), -1)
    W_O, W_V = torch.randn(H, d, k, generator=g, dtype=F), torch.randn(H, k, d, generator=g, dtype=F)
    fb = factored_blocks(ConnectionWalk.from_factors(A, W_O, W_V))
    calls = _spy(fb)
    st = stationary(fb.P, F)
    c = check_dirichlet(fb, st, torch.tensor([False, False]), torch.ones(2, dtype=F), F, 3, 0)
    assert not calls
    x = probe_fields((2,), n, d, 3, 0, torch.device("cpu")).numpy()
    T = (W_O @ W_V).numpy()
    for b in range(2):
        ref = _oracle(A[b].numpy(), T, st.pi[b].numpy(), x[b], 1.0)
        assert abs(float(c.residual[b]) - ref) <= tol(F, n * n * d) * max(ref, 1.0)
        assert bool(c.fails[b])
