"""T5: a single head ``I − kron(A, T)`` is a connection Laplacian iff A is reversible and T is an
orthogonal involution; its spectrum is {1 − λ_i} on Fix(T) ∪ {1 + λ_i} on the −1 eigenspace and
ker Δ = 1 ⊗ Fix(T). Non-orthogonal involutions: real spectrum in [0, 2], but not π-self-adjoint
and no Dirichlet identity (a global gauge S repairs them)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from numerics import strategies as cst
from numerics.device import default_device
from numerics.laplacian import diagnose, generator_dense
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk
from theory.report import record

pytestmark = pytest.mark.theorem("T5")
F = torch.float64
DEV = default_device()


@st.composite
def involution_cases(draw, max_n: int = 5, max_d: int = 3):
    inst = draw(cst.softmax_attention(symmetric=True, max_n=max_n, max_d=3))
    d = draw(st.integers(1, max_d))
    T = draw(cst.symmetric_orthogonal(d))[0]
    return inst.A, T


def fixed_space(T: torch.Tensor) -> tuple[int, torch.Tensor]:
    """dim and orthonormal basis of Fix(T) for a symmetric T (eigenvalue +1)."""
    lam, V = torch.linalg.eigh(T)
    keep = (lam - 1).abs() <= 0.5
    return int(keep.sum()), V[:, keep]


@given(involution_cases())
def test_orthogonal_involution_with_reversible_attention_is_a_connection_laplacian(case):
    A, T = case
    D = diagnose(ConnectionWalk.from_sha(A, T))
    assert bool(D.hypotheses_t3()) and bool(D.conclusions_t3()), D.summary()
    assert bool(D.is_connection_laplacian())
    record(
        "T5",
        residual=max(float(D.self_adjoint.residual), float(D.dirichlet.residual), float(D.spectrum_interval.residual)),
    )


@given(involution_cases())
def test_spectrum_splits_over_fix_and_minus_one_space(case):
    A, T = case
    n, d = A.shape[0], T.shape[0]
    lam = torch.linalg.eigvals(A)
    assert float(lam.imag.abs().max()) <= tol(F, n)  # reversible ⇒ real spectrum
    lam = lam.real
    r_fix, U = fixed_space(T)
    expected = torch.cat([(1 - lam).repeat(r_fix), (1 + lam).repeat(d - r_fix)])
    ev = torch.linalg.eigvals(generator_dense(ConnectionWalk.from_sha(A, T)))
    r = assert_close(torch.sort(ev.real).values, torch.sort(expected).values, size=n * d, what="spec Δ")
    assert float(ev.imag.abs().max()) <= tol(F, n * d)
    # ker Δ = 1 ⊗ Fix(T) (A irreducible under softmax)
    D = diagnose(ConnectionWalk.from_sha(A, T))
    assert int(D.kernel_dim) == r_fix
    ones = torch.ones(n, 1, dtype=F, device=DEV)
    for k in range(r_fix):
        x = ones * U[:, k][None, :]
        assert_close(ConnectionWalk.from_sha(A, T).apply(x), x, size=n * d, what="1 ⊗ u is parallel")
    record("T5", residual=r)


@given(cst.softmax_attention(symmetric=True, max_n=5), st.integers(1, 3), st.data())
def test_spectrum_of_kron_is_products_of_eigenvalues(inst, d, data):
    """T1's spectral statement in the T5 setting: spec kron(A, T) = {λ_i(A) μ_k(T)} with multiplicity."""
    A = inst.A
    T = data.draw(cst.orthogonal(d))[0]
    n = A.shape[0]
    lam = torch.linalg.eigvals(A)
    mu = torch.linalg.eigvals(T)
    prod = (lam[:, None] * mu[None, :]).reshape(-1).cpu().numpy()
    ev = torch.linalg.eigvals(ConnectionWalk.from_sha(A, T).to_dense()).cpu().numpy()
    cost = np.abs(prod[:, None] - ev[None, :])
    rows, cols = linear_sum_assignment(cost)
    err = float(cost[rows, cols].max())
    assert err <= tol(F, n * d, scale=10.0), err
    record("T5", residual=err)


@st.composite
def non_orthogonal_involutions(draw, max_d: int = 3, s_min: float = 0.1, s_max: float = 1.5):
    """``(G, J, T)`` with ``T = G J G⁻¹`` a non-orthogonal involution, ``J = diag(I_r, −I_{d−r})``.

    Built so that ``G`` is invertible *with a known inverse* and bounded condition number (no
    ``inv`` of a drawn matrix, which can be singular): ``G = Q (I + N)`` with ``Q`` orthogonal and
    ``N = [[0, S], [0, 0]]`` (``S`` is ``r × (d−r)``), so ``N² = 0``, ``G⁻¹ = (I − N) Qᵀ`` and
    ``cond(G) ≤ (1 + ‖S‖₂)² ≤ (1 + s_max)²``. This loses no generality: every involution with
    ``dim Fix = r`` is ``B J B⁻¹`` (``B`` = eigenbasis); write ``B = QR`` (QR) and absorb
    ``diag(R₁₁, R₂₂)`` (it commutes with ``J``) to get ``R = I + N`` with ``S = R₁₂ R₂₂⁻¹``. Then
    ``T = Q [[I, −2S], [0, −I]] Qᵀ`` and ``‖TᵀT − I‖_F ≥ 2√2 ‖S‖_F ≥ 2√2 s_min``: non-orthogonal by
    construction. ``S = U diag(σ) Vᵀ`` with orthogonal ``U``, ``V`` and ``σ ∈ [s_min, s_max]``."""
    d = draw(st.integers(2, max_d))
    r = draw(st.integers(1, d - 1))
    k = min(r, d - r)
    sig = draw(st.lists(st.floats(s_min, s_max, allow_nan=False), min_size=k, max_size=k))
    U = draw(cst.orthogonal(r, dtype=F, device=DEV))[0][:, :k]
    V = draw(cst.orthogonal(d - r, dtype=F, device=DEV))[0][:, :k]
    S = U @ torch.diag(torch.tensor(sig, dtype=F, device=DEV)) @ V.T
    Q = draw(cst.orthogonal(d, dtype=F, device=DEV))[0]
    return involution_from_parts(Q, S)


def involution_from_parts(Q: torch.Tensor, S: torch.Tensor):
    """``(G, J, T)``: ``G = Q (I + N)``, ``N = [[0, S], [0, 0]]``, ``J = diag(I_r, −I_{d−r})``,
    ``T = G J G⁻¹`` with the exact inverse ``G⁻¹ = (I − N) Qᵀ`` (``S`` is ``r × (d−r)``)."""
    r, d = S.shape[0], Q.shape[0]
    N = torch.zeros(d, d, dtype=F, device=Q.device)
    N[:r, r:] = S
    eye = torch.eye(d, dtype=F, device=Q.device)
    G, G_inv = Q @ (eye + N), (eye - N) @ Q.T
    J = torch.diag(torch.tensor([1.0] * r + [-1.0] * (d - r), dtype=F, device=Q.device))
    return G, J, G @ J @ G_inv


@given(cst.softmax_attention(symmetric=True, min_n=2, max_n=5), non_orthogonal_involutions())
def test_non_orthogonal_involution_real_spectrum_but_not_self_adjoint(inst, inv):
    A = inst.A
    G, J, T = inv
    d = T.shape[0]
    # the strategy's guarantees (by construction, not by filtering)
    eye = torch.eye(d, dtype=F, device=DEV)
    assert float(torch.linalg.matrix_norm(T.T @ T - eye)) >= 2 * 2**0.5 * 0.1 * (1 - tol(F, d * d))
    assert float(torch.linalg.cond(G)) <= (1 + 1.5) ** 2 * (1 + tol(F, d * d))
    assert_close(T @ T, eye, size=4 * d, what="T² = I")
    D = diagnose(ConnectionWalk.from_sha(A, T))
    assert bool(D.spectrum_interval.holds), D.summary()  # real, in [0, 2]
    assert not bool(D.orthogonal.holds)
    assert not bool(D.self_adjoint.holds), D.summary()
    assert not bool(D.dirichlet.holds), D.summary()
    # global gauge S = G: (I ⊗ G⁻¹) Δ (I ⊗ G) = I − kron(A, J) is a connection Laplacian
    n = A.shape[0]
    Sg = torch.kron(torch.eye(n, dtype=F, device=DEV), G)
    L = generator_dense(ConnectionWalk.from_sha(A, T))
    Lg = torch.linalg.solve(Sg, L @ Sg)
    r = assert_close(Lg, generator_dense(ConnectionWalk.from_sha(A, J)), size=n * d * d, what="gauge-transformed Δ")
    Dg = diagnose(ConnectionWalk.from_sha(A, J))
    assert bool(Dg.conclusions_t3())
    record("T5", residual=r)


def test_non_orthogonal_involution_strategy_needs_no_inverse_of_a_drawn_matrix():
    """Regression (Hypothesis dev profile): the old strategy drew ``G = E + 2I`` with ``E ∈ [−1, 1]``
    and called ``inv(G)``; ``E = 11ᵀ − 2I`` is such a draw and makes ``G = 11ᵀ`` singular (crash while
    generating). The new construction never inverts a drawn matrix. It is also general: an
    arbitrary non-orthogonal involution ``T₀ = B J B⁻¹`` is reproduced from ``B = QR`` with
    ``S = R₁₂ R₂₂⁻¹``."""
    G_old = torch.ones(3, 3, dtype=F, device=DEV)  # = E + 2I with E = 11ᵀ − 2I, entries in [−1, 1]
    assert int(torch.linalg.matrix_rank(G_old)) == 1
    B = torch.tensor([[2.0, 1.0, 0.5], [0.0, 1.0, -1.0], [1.0, 0.0, 1.0]], dtype=F, device=DEV)
    r = 1
    J = torch.diag(torch.tensor([1.0, -1.0, -1.0], dtype=F, device=DEV))
    T0 = B @ J @ torch.linalg.inv(B)  # B is a fixed, well-conditioned matrix
    Qb, R = torch.linalg.qr(B)
    S = R[:r, r:] @ torch.linalg.inv(R[r:, r:])
    G, J2, T = involution_from_parts(Qb, S)
    assert torch.equal(J, J2)
    assert_close(T, T0, size=27, what="reconstructed involution")
    assert float(torch.linalg.cond(G)) <= (1 + float(torch.linalg.matrix_norm(S, ord=2))) ** 2 * (1 + tol(F, 9))
    eye = torch.eye(3, dtype=F, device=DEV)
    assert float(torch.linalg.matrix_norm(T.T @ T - eye)) >= 2 * 2**0.5 * float(torch.linalg.matrix_norm(S)) * (
        1 - tol(F, 9)
    )
