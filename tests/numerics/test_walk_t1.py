"""T1: single-head attention is the constant-transport connection walk kron(A, T) (token-major)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from numerics import strategies as cst
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk, kron_feature_major, kron_token_major
from tests.helpers import eigvec_condition, naive_token_major, naive_walk_apply
from theory.report import record

pytestmark = pytest.mark.theorem("T1")


@st.composite
def sha_cases(draw, zeros=True):
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 4))
    A = draw(cst.row_stochastic(n, zeros=zeros))
    T = draw(cst.general_transports(1, d))[0]
    X = draw(cst.arrays((n, d)))
    return A, T, X


@given(sha_cases())
def test_sha_apply_equals_literal_formula_and_kron(case):
    A, T, X = case
    n, d = X.shape
    w = ConnectionWalk.from_sha(A, T)
    Y = w.apply(X)
    # literal formula Y = A X Tᵀ and the naive float64 loop
    ref = naive_walk_apply(A[None], T[None], X)
    r1 = assert_close(Y.cpu(), ref, size=n * d, what="apply vs naive loop")
    assert_close(Y, A @ X @ T.T, size=n * d, what="apply vs A X Tᵀ")
    # token-major kron(A, T) acting on x = X.reshape(-1)
    K = kron_token_major(A, T)
    assert_close(K.cpu(), torch.kron(A, T).cpu(), size=1, what="kron_token_major vs torch.kron")
    assert_close((K @ X.reshape(-1)).reshape(n, d), Y, size=n * d, what="kron(A,T) x")
    assert_close(w.to_dense().cpu(), naive_token_major(A[None], T[None]), size=1, what="to_dense vs naive blocks")
    record("T1", residual=r1)


@given(sha_cases(zeros=False))
def test_feature_major_is_the_conjugated_operator(case):
    """kron(T, A) is the same map in the feature-major basis vec(X): Π kron(A,T) Πᵀ with Π the
    perfect shuffle; applied to the token-major vector it is a different operator in general."""
    A, T, X = case
    n, d = X.shape
    perm = torch.arange(n * d).reshape(n, d).T.reshape(-1)  # feature-major index -> token-major index
    Ktm = kron_token_major(A, T)
    Kfm = kron_feature_major(A, T)
    assert_close(Kfm, Ktm[perm][:, perm], size=1, what="kron(T,A) vs shuffled kron(A,T)")
    y_fm = (Kfm @ X.T.reshape(-1)).reshape(d, n).T  # feature-major stacking, unstacked
    assert_close(y_fm, A @ X @ T.T, size=n * d, what="feature-major applied consistently")
    record("T1", residual=0.0, examples=0)


def test_mixing_stackings_is_a_different_operator():
    """The classic silent bug: feature-major kron(T, A) applied to a token-major vector."""
    A = torch.tensor([[0.7, 0.3], [0.4, 0.6]], dtype=torch.float64)
    T = torch.tensor([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0], [3.0, 0.0, 1.0]], dtype=torch.float64)
    X = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    right = (kron_token_major(A, T) @ X.reshape(-1)).reshape(2, 3)
    wrong = (kron_feature_major(A, T) @ X.reshape(-1)).reshape(2, 3)
    assert torch.allclose(right, A @ X @ T.T)
    assert (wrong - right).abs().max() > 1.0


@given(sha_cases(zeros=False))
def test_sha_spectrum_is_products(case):
    """spec kron(A, T) = {λ_i(A) μ_k(T)} with multiplicities (Bauer–Fike-scaled tolerance)."""
    A, T, _ = case
    n, d = A.shape[-1], T.shape[-1]
    kA, kT = eigvec_condition(A), eigvec_condition(T)
    assume(kA * kT < 1e6)  # near-defective matrices have ill-conditioned eigenvalues
    ev = np.linalg.eigvals(kron_token_major(A, T).cpu().numpy())
    lam = np.linalg.eigvals(A.cpu().numpy())
    mu = np.linalg.eigvals(T.cpu().numpy())
    prod = (lam[:, None] * mu[None, :]).reshape(-1)
    cost = np.abs(ev[:, None] - prod[None, :])
    r, c = linear_sum_assignment(cost)
    err = cost[r, c].max()
    scale = max(float(np.abs(mu).max()), 1.0)
    bound = tol(torch.float64, n * d, scale=scale) * kA * kT
    assert err <= bound, f"eigenvalue mismatch {err:.3e} > {bound:.3e}"
    record("T1", residual=err / scale)


@given(st.integers(1, 3), sha_cases())
def test_batched_sha(bsz, case):
    A, T, X = case
    Ab = torch.stack([A] * bsz) * 1.0
    Ab[0] = Ab[0].flip(-1)  # batch elements differ
    Xb = torch.stack([X] * bsz)
    Y = ConnectionWalk.from_sha(Ab, T).apply(Xb)
    for b in range(bsz):
        assert_close(Y[b], Ab[b] @ X @ T.T, size=X.numel(), what=f"batch element {b}")
