"""T5: a single head ``I − kron(A, T)`` is a connection Laplacian iff A is reversible and T is an
orthogonal involution; its spectrum is {1 − λ_i} on Fix(T) ∪ {1 + λ_i} on the −1 eigenspace and
ker Δ = 1 ⊗ Fix(T). Non-orthogonal involutions: real spectrum in [0, 2], but not π-self-adjoint
and no Dirichlet identity (a global gauge S repairs them)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given
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
    record("T5", residual=max(float(D.self_adjoint.residual), float(D.dirichlet.residual),
                              float(D.spectrum_interval.residual)))


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
def non_orthogonal_involutions(draw, max_d: int = 3):
    d = draw(st.integers(2, max_d))
    r = draw(st.integers(1, d - 1))
    G = draw(cst.arrays((d, d), -1.0, 1.0)) + 2 * torch.eye(d, dtype=F, device=DEV)
    J = torch.diag(torch.tensor([1.0] * r + [-1.0] * (d - r), dtype=F, device=DEV))
    T = G @ J @ torch.linalg.inv(G)
    return G, J, T


@given(cst.softmax_attention(symmetric=True, min_n=2, max_n=5), non_orthogonal_involutions())
def test_non_orthogonal_involution_real_spectrum_but_not_self_adjoint(inst, inv):
    A = inst.A
    G, J, T = inv
    d = T.shape[0]
    assume(float(torch.linalg.matrix_norm(T.T @ T - torch.eye(d, dtype=F, device=DEV))) > 1e-3)
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
    r = assert_close(Lg, generator_dense(ConnectionWalk.from_sha(A, J)), size=n * d * d,
                     what="gauge-transformed Δ")
    Dg = diagnose(ConnectionWalk.from_sha(A, J))
    assert bool(Dg.conclusions_t3())
    record("T5", residual=r)
