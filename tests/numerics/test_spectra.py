"""Spectra: matrix-free ARPACK (π-symmetrised eigsh / eigs) agrees with dense eig; the factored
path never forms the nd × nd operator; the symmetrised operator is a similarity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.device import default_device
from numerics.errors import DTypeError, NonFiniteError, ParameterError, ShapeError, UndefinedError
from numerics.laplacian import generator_dense
from numerics.spectra import (
    dense_eigenvalues,
    extreme_eigenvalues,
    generator_operator,
    pi_symmetry_residual,
    select,
    symmetrized_dense,
)
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk
from theory.report import record

pytestmark = pytest.mark.theorem("T3")
F = torch.float64
DEV = default_device()


def reversible_heads_walk(n: int, d: int, H: int, seed: int, factored: bool = True) -> ConnectionWalk:
    """Softmax attention with a symmetric form (reversible), shared by H heads whose transports
    sum to a symmetric T_Σ with distinct eigenvalues (|μ| ≤ 1): a π-self-adjoint Δ."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, dtype=F, generator=g)
    M = torch.randn(4, 4, dtype=F, generator=g)
    A = torch.softmax(X @ (M + M.T) @ X.T / 4, dim=-1)
    Q, _ = torch.linalg.qr(torch.randn(d, d, dtype=F, generator=g))
    mu = torch.linspace(-0.9, 0.95, d, dtype=F)
    Ts = Q @ torch.diag(mu) @ Q.T
    w = torch.rand(H, dtype=F, generator=g) + 0.5
    w = w / w.sum()
    T = w[:, None, None] * Ts
    Ah = A.expand(H, n, n).contiguous()
    if factored:
        # low-rank-looking factors: T_h = W_O[h] W_V[h] with W_O = T_h, W_V = I (d_h = d)
        return ConnectionWalk.from_factors(
            Ah.to(DEV), T.to(DEV), torch.eye(d, dtype=F).expand(H, d, d).contiguous().to(DEV)
        )
    return ConnectionWalk.from_mha(Ah.to(DEV), T.to(DEV))


@settings(max_examples=10)
@given(cst.metric_compatible_walks(min_n=3, max_n=5, max_d=3), st.integers(1, 3))
def test_eigsh_pi_symmetrised_agrees_with_dense(walk, k):
    P, O, pi = walk
    w = ConnectionWalk.from_edges(P, O)
    N = P.shape[0] * O.shape[-1]
    if k >= N - 1:
        k = N - 2
    res = extreme_eigenvalues(w, k=k, which="LA")
    assert res.method == "eigsh-pi-symmetrised"
    dense = torch.sort(dense_eigenvalues(w).real).values.cpu().numpy()
    err = float(np.abs(res.eigenvalues - dense[-k:]).max())
    assert err <= tol(F, N, scale=2.0), (res.eigenvalues, dense)
    record("T3", residual=err)


@pytest.mark.parametrize("factored", [True, False])
def test_matrix_free_both_ends_agree_with_dense_and_never_densify(monkeypatch, factored):
    n, d, H, k = 24, 4, 3, 6
    w = reversible_heads_walk(n, d, H, seed=1, factored=factored)
    dense = torch.sort(dense_eigenvalues(w).real).values.cpu().numpy()

    def boom(*a, **kw):
        raise AssertionError("matrix-free path materialised blocks / the dense operator")

    monkeypatch.setattr(ConnectionWalk, "to_dense", boom)
    monkeypatch.setattr(ConnectionWalk, "blocks", boom)
    res = extreme_eigenvalues(w, k=k, which="BE")
    monkeypatch.undo()
    assert res.method == "eigsh-pi-symmetrised" and res.symmetric_residual <= tol(F, n * d)
    ref = np.concatenate([dense[: k // 2], dense[-(k - k // 2) :]])
    err = float(np.abs(res.eigenvalues - ref).max())
    assert err <= tol(F, n * d, scale=2.0), (res.eigenvalues, ref)
    record("T3", residual=err)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eigs_path_for_non_reversible_walks_agrees_with_dense(seed):
    g = torch.Generator().manual_seed(seed)
    n, d = 16, 3
    P = torch.rand(n, n, dtype=F, generator=g) + 0.05
    P = (P / P.sum(-1, keepdim=True)).to(DEV)
    T = (torch.randn(d, d, dtype=F, generator=g) / 2).to(DEV)
    w = ConnectionWalk.from_sha(P, T)
    res = extreme_eigenvalues(w, k=3, which="LM")
    assert res.method == "eigs" and res.symmetric_residual > 1e-6
    dense = dense_eigenvalues(w).cpu().numpy()
    # each ARPACK value is an eigenvalue, and they are the k of largest modulus |Δ| (ties allowed)
    near = np.abs(res.eigenvalues[:, None] - dense[None, :]).min(-1)
    assert float(near.max()) <= tol(F, n * d, scale=4.0), near
    kth = np.sort(np.abs(dense))[-3]
    assert float(np.abs(res.eigenvalues).min()) >= kth - tol(F, n * d, scale=4.0)


@given(cst.metric_compatible_walks(max_n=4, max_d=2))
def test_symmetrised_dense_is_symmetric_and_similar(walk):
    P, O, pi = walk
    w = ConnectionWalk.from_edges(P, O)
    S = symmetrized_dense(w, pi)
    N = S.shape[-1]
    assert_close(S, S.T, size=N, what="D^½ Δ D^-½ symmetric")
    a = torch.sort(torch.linalg.eigvalsh(S)).values
    b = torch.sort(dense_eigenvalues(w).real).values
    r = assert_close(a, b, size=N * N, what="similar spectra")
    # the LinearOperator equals the dense matrices column by column (naive reference)
    op = generator_operator(w, pi=pi)
    op0 = generator_operator(w)
    E = np.eye(N)
    assert_close(torch.as_tensor(np.stack([op.matvec(e) for e in E], 1)), S.cpu(), size=N, what="S operator")
    assert_close(
        torch.as_tensor(np.stack([op0.matvec(e) for e in E], 1)), generator_dense(w).cpu(), size=N, what="Δ operator"
    )
    assert pi_symmetry_residual(w, pi) <= tol(F, N)
    record("T3", residual=r)


@pytest.mark.parametrize(
    ("x", "err", "starts"),
    [
        (np.full(6, np.nan), NonFiniteError, "x: 6 NaN/inf entries (of 6)"),
        (np.array([0, 0, 0, 0, 0, np.inf]), NonFiniteError, "x: 1 NaN/inf entries (of 6)"),
        (np.ones(7), ShapeError, "x: expected a token-major vector of length n·d = 3·2 = 6 (shape (6,) or (6, 1))"),
        (np.ones((2, 3)), ShapeError, "x: expected a token-major vector of length n·d = 3·2 = 6"),
        (np.ones(6, dtype=complex), DTypeError, "x: expected real values"),
    ],
)
def test_generator_operator_refuses_a_bad_vector_naming_it(x, err, starts):
    """A NaN vector gave NaN; n·d + 1 entries gave scipy's bare "dimension mismatch"."""
    w = reversible_heads_walk(3, 2, 1, seed=1, factored=False)
    for op in (generator_operator(w), generator_operator(w, pi=torch.full((3,), 1 / 3, dtype=F, device=DEV))):
        with pytest.raises(err) as exc:
            op.matvec(x)
        assert type(exc.value) is err and str(exc.value).startswith(starts), str(exc.value)
        with pytest.raises(err):
            op @ x
    assert generator_operator(w).matvec(np.ones((6, 1))).shape == (6, 1)


def test_batched_select_and_errors():
    w1 = reversible_heads_walk(8, 2, 2, seed=3, factored=False)
    A = torch.stack([w1.attention, w1.attention.flip(-1).flip(-2)])
    wb = ConnectionWalk.from_mha(A, w1.head_transports)
    with pytest.raises(ShapeError):
        extreme_eigenvalues(wb, k=2)
    r0 = extreme_eigenvalues(wb, k=2, index=0)
    r1 = extreme_eigenvalues(w1, k=2)
    assert np.abs(r0.eigenvalues - r1.eigenvalues).max() <= tol(F, 16, scale=2.0)
    assert select(wb, 1).batch_shape == torch.Size([])
    with pytest.raises(ParameterError):
        extreme_eigenvalues(w1, k=15)  # k >= nd − 1
    with pytest.raises(ParameterError):
        extreme_eigenvalues(w1, k=2, which="XX")
    with pytest.raises(UndefinedError):
        generator_operator(w1, pi=torch.zeros(8, dtype=F, device=DEV))
    causal = torch.tril(torch.ones(4, 4, dtype=F, device=DEV))
    causal = causal / causal.sum(-1, keepdim=True)
    with pytest.raises(UndefinedError):
        extreme_eigenvalues(ConnectionWalk.from_sha(causal, torch.eye(2, dtype=F, device=DEV)), k=2, symmetric=True)
