"""The walk core, numerics.walk, piece by piece: the Kronecker layouts, ``from_blocks`` and its gauge,
the storage properties, ``apply``, gates, edge transports, the nearest Kronecker factorisation, the
constant-transport test and the memory budget of the dense forms. (The T1/T2 statements are tested in
test_walk_t1.py / test_walk_t2.py, bad input and its messages in test_walk_errors.py.)

Every expected value is computed here from the literal definition in float64 numpy (loops over
tokens, ``np.kron``, ``np.linalg.svd`` of the Van Loan rearrangement), never by the walk core.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from numerics.errors import (
    DTypeError,
    MemoryBudgetError,
    NegativeWeightError,
    NotStochasticError,
    OffSupportError,
    ParameterError,
    ShapeError,
)
from numerics.walk import ConnectionWalk, kron_feature_major, kron_token_major
from tests.helpers import raises_named, t

f64 = torch.float64


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def close(a, b, atol=1e-12):
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=0, atol=atol)


def literal_blocks_from_heads(A, T):
    """B[i, j] = Σ_h A[h, i, j] T[h] by loops; A (H, n, n), T (H, d, d)."""
    H, n, _ = A.shape
    d = T.shape[-1]
    B = np.zeros((n, n, d, d))
    for i in range(n):
        for j in range(n):
            for h in range(H):
                B[i, j] += A[h, i, j] * T[h]
    return B


def literal_dense(B):
    n, d = B.shape[0], B.shape[-1]
    W = np.zeros((n * d, n * d))
    for i in range(n):
        for j in range(n):
            W[i * d : (i + 1) * d, j * d : (j + 1) * d] = B[i, j]
    return W


def van_loan_singular_values(B):
    """σ of R[(i, j), (a, b)] = B[i, j, a, b] (rows i-major, columns a-major)."""
    n, d = B.shape[0], B.shape[-1]
    R = np.array([[B[i, j, a, b] for a in range(d) for b in range(d)] for i in range(n) for j in range(n)])
    return np.linalg.svd(R, compute_uv=False), R


# ------------------------------------------------------------------------------------- kron
@pytest.mark.parametrize("batched_T", [False, True])
def test_token_major_kron_of_a_batch_is_the_kron_of_each_element(batched_T):
    """Two batch dims (2, 3) so that no batch size equals n = 4 or d = 2."""
    g = rng(1)
    A = g.random((2, 3, 4, 4))
    T = g.standard_normal((2, 3, 2, 2)) if batched_T else g.standard_normal((2, 2))
    W = kron_token_major(t(A), t(T))
    Wf = kron_feature_major(t(A), t(T))
    assert W.shape == (2, 3, 8, 8) and Wf.shape == (2, 3, 8, 8)
    for b in np.ndindex(2, 3):
        Tb = T[b] if batched_T else T
        close(W[b], np.kron(A[b], Tb))
        close(Wf[b], np.kron(Tb, A[b]))


def test_token_major_kron_of_rectangular_shapes_uses_last_dims():
    """n ≠ d, so a swapped shape index gives a wrong size or wrong layout."""
    g = rng(2)
    A, T = g.random((3, 3)), g.standard_normal((2, 2))
    close(kron_token_major(t(A), t(T)), np.kron(A, T))
    close(kron_feature_major(t(A), t(T)), np.kron(T, A))


# ------------------------------------------------------------------------------------- from_blocks
def literal_default_gauge(B):
    n = B.shape[0]
    w = np.array([[np.sqrt((B[i, j] ** 2).sum()) for j in range(n)] for i in range(n)])
    P = np.zeros_like(w)
    for i in range(n):
        s = w[i].sum()
        if s > 0:
            P[i] = w[i] / s
    return P


def test_from_blocks_default_gauge_is_normalised_block_norms():
    g = rng(3)
    n, d = 3, 2
    B = g.standard_normal((n, n, d, d))
    B[0, 2] = 0.0  # an edge off the support
    B[2] = 0.0  # a token with no outgoing edge: its row of P stays zero
    w = ConnectionWalk.from_blocks(t(B))
    P = literal_default_gauge(B)
    assert w.kind == "edges"
    close(w.walk_matrix, P)
    close(w.blocks(), B)
    close(w.to_dense(), literal_dense(B))
    O, sup = w.edge_transports()
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                close(O[i, j], B[i, j] / P[i, j])
            else:
                assert not bool(sup[i, j]) and bool(torch.isnan(O[i, j]).all())
    X = g.standard_normal((n, d))
    close(w.apply(t(X)), np.stack([sum(B[i, j] @ X[j] for j in range(n)) for i in range(n)]))


def test_from_blocks_default_gauge_of_small_blocks_is_still_normalised():
    """Block norms summing to less than 1 in a row: P is still the normalised norms (rows sum to 1)."""
    g = rng(41)
    B = 1e-3 * g.standard_normal((3, 3, 2, 2))
    w = ConnectionWalk.from_blocks(t(B))
    close(w.walk_matrix, literal_default_gauge(B))
    close(w.walk_matrix.sum(-1), np.ones(3))


def test_from_blocks_default_gauge_batched():
    g = rng(4)
    B = g.standard_normal((2, 3, 3, 2, 2))
    w = ConnectionWalk.from_blocks(t(B))
    assert tuple(w.batch_shape) == (2,)
    for b in range(2):
        close(w.walk_matrix[b], literal_default_gauge(B[b]))
        close(w.blocks()[b], B[b])


def test_from_blocks_with_a_chosen_gauge_keeps_it_and_divides_by_it():
    g = rng(5)
    B = g.standard_normal((2, 2, 3, 3))
    B[1, 0] = 0.0
    P = np.array([[0.25, 0.75], [0.5, 0.5]])  # positive where B is zero too: O there is 0
    w = ConnectionWalk.from_blocks(t(B), P=t(P))
    close(w.walk_matrix, P)
    close(w.blocks(), B)
    close(w.edge_transport(0, 1), B[0, 1] / 0.75)
    close(w.edge_transport(1, 0), np.zeros((3, 3)))


def test_from_blocks_rejects_a_gauge_that_is_zero_where_a_block_is_not():
    B = np.ones((2, 2, 1, 1))
    P = np.array([[1.0, 0.0], [0.5, 0.5]])
    msg = raises_named(OffSupportError, "P", lambda: ConnectionWalk.from_blocks(t(B), P=t(P)))
    assert msg == "P: is zero on an edge where B is nonzero: no transport reproduces it"
    # zero only where B is zero too is fine
    B[0, 1] = 0.0
    ConnectionWalk.from_blocks(t(B), P=t(P))


@pytest.mark.parametrize("shape", [(2, 3, 2, 2), (2, 2, 2, 3), (2, 2, 2)])
def test_from_blocks_rejects_non_square_block_layouts(shape):
    raises_named(ShapeError, "B", lambda: ConnectionWalk.from_blocks(torch.ones(shape, dtype=f64)))


def test_from_blocks_rejects_a_gauge_of_the_wrong_kind():
    B = torch.ones(2, 2, 1, 1, dtype=f64)
    raises_named(ShapeError, "P", lambda: ConnectionWalk.from_blocks(B, P=torch.ones(2, dtype=f64)))
    raises_named(NegativeWeightError, "P", lambda: ConnectionWalk.from_blocks(B, P=-torch.ones(2, 2, dtype=f64)))
    raises_named(DTypeError, "P", lambda: ConnectionWalk.from_blocks(B, P=torch.full((2, 2), 0.5, dtype=torch.float32)))
    # the gauge of T2 is row-stochastic: 3·P is not one (it would divide every transport by 3)
    raises_named(NotStochasticError, "P", lambda: ConnectionWalk.from_blocks(B, P=torch.full((2, 2), 1.5, dtype=f64)))


def test_from_blocks_accepts_a_float32_softmax_gauge_at_float32_rounding():
    """A float32 softmax's rows sum to 1 only to ~1e-7: judged with float32's tolerance, accepted."""
    n = 300
    P = torch.softmax(3 * torch.randn(n, n, generator=torch.Generator().manual_seed(0)), -1)
    assert (P.double().sum(-1) - 1).abs().max().item() > 1e-8  # not stochastic to float64's tolerance
    B = P[..., None, None] * torch.ones(1, 1, 1, 1)
    w = ConnectionWalk.from_blocks(B, P=P)
    assert torch.equal(w.walk_matrix, P)


def test_constant_transport_of_a_walk_without_edges_is_undefined():
    """All-zero blocks: B = P ⊗ T for every T, so no transport is *the* one; refused, not 'holds'."""
    from numerics.errors import UndefinedError

    P = torch.stack([torch.full((3, 3), 1 / 3, dtype=f64), torch.zeros(3, 3, dtype=f64)])  # batch element 1: no edge
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=f64))
    raises_named(UndefinedError, "walk", w.constant_transport)
    assert bool(ConnectionWalk.from_edges(P[0], torch.eye(2, dtype=f64)).constant_transport().holds)


# ------------------------------------------------------------------------------------- properties
def test_storage_form_properties():
    g = rng(6)
    A = t(g.random((2, 3, 4, 4)))  # batch 2, H 3, n 4
    T = t(g.standard_normal((3, 2, 2)))
    Wo, Wv = t(g.standard_normal((3, 2, 1))), t(g.standard_normal((3, 1, 2)))
    heads = ConnectionWalk.from_mha(A, T)
    fact = ConnectionWalk.from_factors(A, Wo, Wv)
    P = t(g.random((5, 5)))
    O = t(g.standard_normal((5, 5, 3, 3)))
    edges = ConnectionWalk.from_edges(P, O)
    assert (heads.n_heads, heads.n, heads.d, tuple(heads.batch_shape)) == (3, 4, 2, (2,))
    assert (fact.n_heads, fact.n, fact.d, tuple(fact.batch_shape)) == (3, 4, 2, (2,))
    assert (edges.n_heads, edges.n, edges.d, tuple(edges.batch_shape)) == (1, 5, 3, ())
    assert fact.factored and not heads.factored and not edges.factored
    assert heads.dtype == fact.dtype == edges.dtype == f64
    assert heads.device == edges.device == torch.device("cpu")
    close(heads.walk_matrix, A.numpy().mean(1))
    close(edges.attention, P.numpy()[None])
    close(edges.support, P.numpy() > 0)
    close(fact.head_transports, np.einsum("hdk,hke->hde", Wo.numpy(), Wv.numpy()))
    assert heads.head_transports is T
    raises_named(ShapeError, "walk", lambda: edges.head_transports)


def test_repr_names_form_batch_heads_sizes_dtype_device():
    A = torch.full((2, 3, 3), 1 / 3, dtype=f64)
    Wo, Wv = torch.ones(2, 4, 1, dtype=f64), torch.ones(2, 1, 4, dtype=f64)
    assert repr(ConnectionWalk.from_factors(A, Wo, Wv)) == (
        "ConnectionWalk(kind=heads factored, batch=(), H=2, n=3, d=4, dtype=torch.float64, device=cpu)"
    )
    assert repr(ConnectionWalk.from_mha(A, Wo @ Wv)) == (
        "ConnectionWalk(kind=heads, batch=(), H=2, n=3, d=4, dtype=torch.float64, device=cpu)"
    )


@pytest.mark.parametrize("form", ["heads", "factors", "edges"])
def test_to_converts_every_stored_tensor(form):
    g = rng(7)
    A = t(g.random((2, 3, 3)))
    if form == "heads":
        w = ConnectionWalk.from_mha(A, t(g.standard_normal((2, 2, 2))))
    elif form == "factors":
        w = ConnectionWalk.from_factors(A, t(g.standard_normal((2, 2, 1))), t(g.standard_normal((2, 1, 2))))
    else:
        w = ConnectionWalk.from_edges(A[0], t(g.standard_normal((3, 3, 2, 2))))
    w32 = w.to(dtype=torch.float32)
    assert w32.kind == w.kind and w32.factored == w.factored and w32.dtype == torch.float32
    X = t(g.standard_normal((3, 2)))
    close(w32.apply(X.float()).double(), w.apply(X), atol=1e-5)
    close(w32.blocks().double(), w.blocks(), atol=1e-5)


# ------------------------------------------------------------------------------------- apply
def test_apply_of_edges_form_is_the_literal_sum():
    g = rng(8)
    P, O, X = g.random((2, 3, 3)), g.standard_normal((2, 3, 3, 2, 2)), g.standard_normal((2, 3, 2))
    w = ConnectionWalk.from_edges(t(P), t(O))
    Y = w.apply(t(X))
    for b in range(2):
        ref = np.stack([sum(P[b, i, j] * O[b, i, j] @ X[b, j] for j in range(3)) for i in range(3)])
        close(Y[b], ref)


def test_apply_of_factored_heads_with_distinct_model_and_head_dims():
    """d = 3, d_h = 2, H = 2: the concat-heads path, against Σ_h A^h X (W_O^h W_V^h)ᵀ."""
    g = rng(9)
    A, Wo, Wv, X = (
        g.random((2, 4, 4)),
        g.standard_normal((2, 3, 2)),
        g.standard_normal((2, 2, 3)),
        g.standard_normal((4, 3)),
    )
    Y = ConnectionWalk.from_factors(t(A), t(Wo), t(Wv)).apply(t(X))
    ref = sum(A[h] @ X @ (Wo[h] @ Wv[h]).T for h in range(2))
    close(Y, ref)


@pytest.mark.parametrize("shape", [(3, 3), (2, 2), (3,)])
def test_apply_rejects_x_of_the_wrong_size_naming_x(shape):
    w = ConnectionWalk.from_sha(torch.full((2, 2), 0.5, dtype=f64), torch.eye(3, dtype=f64))
    msg = raises_named(ShapeError, "X", lambda: w.apply(torch.ones(shape, dtype=f64)))
    # the contract words a size disagreement as "has <sym>=<got> but the self has <sym>=<bound>"
    if shape == (3, 3):
        assert msg == "X: has n=3 but the self has n=2 (shape (3, 3))"
    elif shape == (2, 2):
        assert msg == "X: has d=2 but the self has d=3 (shape (2, 2))"
    else:
        assert "expected shape" in msg and "got (3,)" in msg


# ------------------------------------------------------------------------------------- gates
def test_edges_form_transports_are_the_stored_ones_bit_for_bit():
    """No B / P round trip: for these weights P·O/P ≠ O in the last bit somewhere."""
    g = rng(19)
    P = g.random((4, 4)) + 0.05
    O = g.standard_normal((4, 4, 3, 3))
    assert np.any(P[..., None, None] * O / P[..., None, None] != O)  # the round trip is not exact
    w = ConnectionWalk.from_edges(t(P), t(O))
    Oe, sup = w.edge_transports()
    assert bool(sup.all()) and torch.equal(Oe, t(O))


def test_gates_of_a_batch_with_more_elements_than_heads():
    g = rng(18)
    A = g.random((5, 2, 3, 3))
    G = ConnectionWalk.from_mha(t(A), torch.eye(2, dtype=f64).expand(2, 2, 2)).gates()
    close(G, A / A.sum(1, keepdims=True))


def test_gates_are_head_shares_and_nan_off_the_support():
    A = np.array([[[0.2, 0.0], [0.3, 0.0]], [[0.6, 0.0], [0.1, 0.5]]])
    w = ConnectionWalk.from_mha(t(A), torch.eye(2, dtype=f64).expand(2, 2, 2))
    G = w.gates().numpy()
    for i in range(2):
        for j in range(2):
            s = A[:, i, j].sum()
            if s > 0:
                close(G[:, i, j], A[:, i, j] / s)
            else:
                assert np.isnan(G[:, i, j]).all()


# ------------------------------------------------------------------------------------- edge transport
def test_edge_transport_of_heads_is_block_over_walk_weight_for_every_index_form():
    g = rng(10)
    A, T = g.random((3, 3, 3)) + 0.1, g.standard_normal((3, 2, 2))
    w = ConnectionWalk.from_mha(t(A), t(T))
    B = literal_blocks_from_heads(A, T)
    P = A.mean(0)
    for i in range(-3, 3):
        for j in range(-3, 3):
            close(w.edge_transport(i, j), B[i, j] / P[i, j])
    O, sup = w.edge_transports()
    assert bool(sup.all())
    close(O, B / P[..., None, None])


@pytest.mark.parametrize("i, j, arg", [(3, 0, "i"), (-4, 0, "i"), (0, 3, "j"), (0, -4, "j")])
def test_edge_transport_index_out_of_range_names_the_index(i, j, arg):
    w = ConnectionWalk.from_sha(torch.full((3, 3), 1 / 3, dtype=f64), torch.eye(2, dtype=f64))
    msg = raises_named(ParameterError, arg, lambda: w.edge_transport(i, j))
    assert msg == f"{arg}: index {i if arg == 'i' else j} out of range for n=3"


def test_edge_transport_off_support_in_one_batch_element_counts_it():
    A = torch.tensor([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]]], dtype=f64)
    w = ConnectionWalk.from_sha(A, torch.eye(2, dtype=f64))
    msg = raises_named(OffSupportError, "(i, j)", lambda: w.edge_transport(0, 1))
    assert "in 2 batch element(s)" in msg
    close(w.edge_transport(0, 0), np.stack([np.eye(2)] * 3))


# ------------------------------------------------------------------------------------- nearest Kronecker
def kron_case(seed, n=3, d=2, batch=()):
    g = rng(seed)
    return g.standard_normal((*batch, n, n, d, d))


@pytest.mark.parametrize("form", ["edges", "heads"])
def test_nearest_kronecker_is_the_rank_one_truncation_of_the_rearrangement(form):
    g = rng(11)
    if form == "edges":
        B = kron_case(11)
        w = ConnectionWalk.from_blocks(t(B))
    else:
        A, T = g.random((2, 3, 3)), g.standard_normal((2, 2, 2))
        B = literal_blocks_from_heads(A, T)
        w = ConnectionWalk.from_mha(t(A), t(T))
    s, R = van_loan_singular_values(B)
    P, T, gap = w.nearest_kronecker()
    assert P.shape == (3, 3) and T.shape == (2, 2)
    close(gap, np.sqrt((s[1:] ** 2).sum()))
    U, S, Vt = np.linalg.svd(R)
    rank1 = S[0] * np.outer(U[:, 0], Vt[0])
    close(np.outer(P.numpy().reshape(-1), T.numpy().reshape(-1)), rank1)
    close(np.linalg.norm(T.numpy()), 1.0)  # T is the unit-Frobenius direction, P carries σ₁
    assert float(P.sum()) >= 0  # sign convention: the walk part is nonnegative on average


def test_nearest_kronecker_sign_makes_the_walk_part_nonnegative_on_average():
    """B = P ⊗ (−T) with P ≥ 0: the factorisation is reported as P ⊗ (−T), never (−P) ⊗ T."""
    g = rng(12)
    P0 = g.random((3, 3)) + 0.1
    T0 = g.standard_normal((2, 2))
    B = np.einsum("ij,ab->ijab", P0, -T0)
    P, T, gap = ConnectionWalk.from_blocks(t(B)).nearest_kronecker()
    assert bool((P > 0).all())
    close(P.numpy()[:, :, None, None] * T.numpy()[None, None], B)


def rank_one(R):
    U, S, Vt = np.linalg.svd(R)
    return S[0] * np.outer(U[:, 0], Vt[0])


@pytest.mark.parametrize("form", ["edges", "heads", "heads_batched_T"])
def test_nearest_kronecker_and_constant_transport_batched(form):
    """Batch of 2 (≠ H = 3, ≠ n = 3? n = 4 here): each element is its own Van Loan problem."""
    g = rng(13)
    if form == "edges":
        B = kron_case(13, n=4, batch=(2,))
        w = ConnectionWalk.from_blocks(t(B))
    else:
        A = g.random((2, 3, 4, 4))
        T = g.standard_normal((2, 3, 2, 2)) if form == "heads_batched_T" else g.standard_normal((3, 2, 2))
        w = ConnectionWalk.from_mha(t(A), t(T))
        B = np.stack([literal_blocks_from_heads(A[b], T[b] if T.ndim == 4 else T) for b in range(2)])
    P, T_, gap = w.nearest_kronecker()
    ct = w.constant_transport()
    assert P.shape == (2, 4, 4) and T_.shape == (2, 2, 2) and gap.shape == (2,)
    for b in range(2):
        s, R = van_loan_singular_values(B[b])
        g_ref = np.sqrt((s[1:] ** 2).sum())
        close(gap[b], g_ref)
        close(np.outer(P[b].numpy().reshape(-1), T_[b].numpy().reshape(-1)), rank_one(R))
        close(ct.residual[b], g_ref)
        close(ct.relative_residual[b], g_ref / np.sqrt((B[b] ** 2).sum()))
        close(np.outer(ct.walk_matrix[b].numpy().reshape(-1), ct.transport[b].numpy().reshape(-1)), rank_one(R))
        close(ct.walk_matrix[b].sum(-1).mean(), 1.0)


# ------------------------------------------------------------------------------------- constant transport
def test_constant_transport_of_edges_with_one_transport_recovers_it():
    g = rng(14)
    P0 = g.random((3, 3)) + 0.05
    P0 /= P0.sum(1, keepdims=True)
    T0 = g.standard_normal((2, 2))
    w = ConnectionWalk.from_edges(t(P0), t(T0))  # (d, d) O broadcast to every edge
    ct = w.constant_transport()
    assert bool(ct.holds)
    close(ct.walk_matrix, P0)
    close(ct.transport, T0)
    close(ct.residual, 0.0, atol=1e-12)
    close(ct.relative_residual, 0.0, atol=1e-12)
    close(ct.min_coefficient, P0.min())


def test_constant_transport_rescales_to_unit_mean_row_sum():
    """B = C ⊗ T0 with row sums of C equal to 2 and 4: P = C / 3 and T = 3·T0."""
    C = np.array([[1.0, 1.0], [3.0, 1.0]])
    T0 = np.array([[0.0, 2.0], [1.0, 1.0]])
    ct = ConnectionWalk.from_edges(t(C), t(T0)).constant_transport()
    assert bool(ct.holds)
    close(ct.walk_matrix, C / 3)
    close(ct.transport, 3 * T0)


def test_constant_transport_of_edges_with_varying_transports_reports_the_gap():
    B = kron_case(15)
    w = ConnectionWalk.from_blocks(t(B))
    s, _ = van_loan_singular_values(B)
    ct = w.constant_transport()
    assert not bool(ct.holds)
    close(ct.residual, np.sqrt((s[1:] ** 2).sum()))
    close(ct.relative_residual, np.sqrt((s[1:] ** 2).sum()) / np.sqrt((B**2).sum()))


def test_constant_transport_batched_edges_judges_each_element():
    g = rng(16)
    P0 = g.random((3, 3)) + 0.1
    T0 = g.standard_normal((2, 2))
    good = np.einsum("ij,ab->ijab", P0, T0)
    bad = kron_case(16)
    ct = ConnectionWalk.from_blocks(t(np.stack([good, bad]))).constant_transport()
    assert ct.holds.tolist() == [True, False]
    s, _ = van_loan_singular_values(bad)
    close(ct.residual[1], np.sqrt((s[1:] ** 2).sum()))
    close(ct.residual[0], 0.0, atol=1e-12)


def test_a_sign_flipped_coefficient_is_not_a_constant_transport():
    """B_ij = c_ij T with one c_ij < 0: exactly Kronecker, but not a walk (P ≥ 0 fails)."""
    C = np.array([[0.5, 0.5], [-0.25, 1.25]])
    T0 = np.array([[1.0, 0.5], [0.0, 2.0]])
    B = np.einsum("ij,ab->ijab", C, T0)
    gauge = np.abs(C) / np.abs(C).sum(1, keepdims=True)  # a row-stochastic gauge positive where B ≠ 0
    ct = ConnectionWalk.from_blocks(t(B), P=t(gauge)).constant_transport()
    assert not bool(ct.holds)
    close(ct.residual, 0.0, atol=1e-12)
    close(ct.min_coefficient, -0.25)
    close(ct.walk_matrix, C)


def test_default_tolerance_scales_with_n_times_d():
    """n = d = 4: a coefficient of −5e-14 is roundoff for tol(float64, n·d) ≈ 2.3e-13 (holds) but not
    for tol(float64, 1) ≈ 1.4e-14; −1e-6 never is."""
    from numerics.tolerance import tol

    assert tol(f64, 1) < 5e-14 < tol(f64, 16)
    T0 = np.diag([1.0, 0.5, 2.0, 1.5])
    verdicts = []
    for eps in (5e-14, 1e-6):
        C = np.full((4, 4), 0.25)
        C[0] = [0.5, -eps, 0.25 + 0.5 * eps, 0.25 + 0.5 * eps]  # rows still sum to 1
        B = np.einsum("ij,ab->ijab", C, T0)
        gauge = np.abs(C) / np.abs(C).sum(1, keepdims=True)
        ct = ConnectionWalk.from_blocks(t(B), P=t(gauge)).constant_transport()
        close(ct.min_coefficient, -eps, atol=1e-15)
        verdicts.append(bool(ct.holds))
    assert verdicts == [True, False]


def _gauge(C):
    """A row-stochastic gauge positive everywhere (the transports are B / P; the T2 verdict is gauge-free)."""
    G = np.abs(C) + (C == 0)
    return G / G.sum(1, keepdims=True)


def test_sign_tolerance_is_relative_to_the_largest_coefficient_when_above_one():
    """holds iff rel ≤ rtol and min P ≥ −rtol·max(1, max|P|) (P at unit mean row sum)."""
    T0 = np.array([[1.0, 0.5], [0.0, 2.0]])
    rtol = 1e-3
    cases = {
        # max|P| ≤ 1: the sign bound is rtol itself
        "small": (np.array([[1.0 + 1.2e-3, -1.2e-3], [0.5, 0.5]]), False),
        "tiny": (np.array([[0.5 + 0.5e-3, -0.5e-3], [0.5, 0.5]]), True),
        # mean row sum 1, max|P| = 1.8: the bound is 1.8·rtol
        "large": (np.array([[1.8, -1.5e-3], [0.2 + 1.5e-3 / 2, -0.0]]), True),
    }
    Cs = []
    for name, (C, expected) in cases.items():
        Pn = C / C.sum(1).mean()
        rule = Pn.min() >= -rtol * max(1.0, np.abs(Pn).max())
        assert rule == expected, name
        B = np.einsum("ij,ab->ijab", C, T0)
        ct = ConnectionWalk.from_blocks(t(B), P=t(_gauge(C))).constant_transport(rtol=rtol)
        assert bool(ct.holds) == expected, name
        Cs.append(C)
    # batched: each element is judged with its own max|P|, not the batch's
    B = np.stack([np.einsum("ij,ab->ijab", C, T0) for C in (cases["large"][0], cases["small"][0])])
    P = np.stack([_gauge(C) for C in (cases["large"][0], cases["small"][0])])
    ct = ConnectionWalk.from_blocks(t(B), P=t(P)).constant_transport(rtol=rtol)
    assert ct.holds.tolist() == [True, False]


def test_one_token_one_feature_is_a_constant_transport_at_zero_tolerance():
    """n = d = 1: R is 1×1, no second singular value: the residual is exactly 0 ≤ rtol = 0."""
    ct = ConnectionWalk.from_sha(torch.ones(1, 1, dtype=f64), 2 * torch.ones(1, 1, dtype=f64)).constant_transport(
        rtol=0.0
    )
    assert float(ct.relative_residual) == 0.0 and bool(ct.holds)
    close(ct.transport, [[2.0]])
    close(ct.walk_matrix, [[1.0]])


def test_constant_transport_rtol_is_the_relative_residual_bound():
    B = kron_case(17)
    s, _ = van_loan_singular_values(B)
    rel = np.sqrt((s[1:] ** 2).sum()) / np.sqrt((B**2).sum())
    w = ConnectionWalk.from_blocks(t(B))
    assert not bool(w.constant_transport(rtol=rel * 0.99).holds)
    ct = w.constant_transport(rtol=rel * 1.01)
    # the Kronecker residual now passes; whether it holds depends only on the sign condition
    assert bool(ct.holds) == bool(float(ct.min_coefficient) >= -rel * 1.01 * max(float(ct.walk_matrix.abs().max()), 1))


def test_zero_walk_has_zero_relative_residual():
    """All-zero blocks on a walk with edges: the constant transport T = 0 with the walk's own P (no NaN,
    not an arbitrary T); without any edge (once reported 'holds' with an arbitrary transport): refused."""
    from numerics.errors import UndefinedError

    P = torch.full((2, 2), 0.5, dtype=f64)
    ct = ConnectionWalk.from_blocks(torch.zeros(2, 2, 2, 2, dtype=f64), P=P).constant_transport()
    assert bool(ct.holds) and float(ct.residual) == 0.0 and float(ct.relative_residual) == 0.0
    assert torch.equal(ct.transport, torch.zeros(2, 2, dtype=f64)) and torch.equal(ct.walk_matrix, P)
    w = ConnectionWalk.from_edges(torch.zeros(2, 2, dtype=f64), torch.eye(2, dtype=f64))  # P = 0, no edge
    raises_named(UndefinedError, "walk", w.constant_transport)


def test_all_zero_blocks_have_no_gauge_and_no_nearest_kronecker_factor():
    """from_blocks(zeros) was accepted with P = 0 and its nearest_kronecker() returned (0, e₁e₁ᵀ, 0): an
    arbitrary factor. Without P, all-zero blocks (in any batch element) are refused naming ``B`` (``walk``
    through as_walk); a walk whose blocks are 0 (a given P, no edge, cancelling heads) has no nearest factor."""
    from numerics.errors import UndefinedError
    from numerics.walk import as_walk

    Z = torch.zeros(3, 3, 2, 2, dtype=f64)
    msg = raises_named(UndefinedError, "B", lambda: ConnectionWalk.from_blocks(Z))
    assert msg.startswith("B: every block is 0 in 1 of 1 walk(s)")
    B = torch.stack([torch.randn(3, 3, 2, 2, dtype=f64), Z])
    assert raises_named(UndefinedError, "B", lambda: ConnectionWalk.from_blocks(B)).startswith(
        "B: every block is 0 in 1 of 2"
    )
    raises_named(UndefinedError, "walk", lambda: as_walk(Z))
    P = torch.full((3, 3), 1 / 3, dtype=f64)
    A = P[None].expand(2, 3, 3)
    T = torch.stack([torch.eye(2, dtype=f64), -torch.eye(2, dtype=f64)])
    zero_walks = [
        ConnectionWalk.from_blocks(Z, P=P),
        ConnectionWalk.from_edges(torch.zeros(3, 3, dtype=f64), torch.eye(2, dtype=f64)),
        ConnectionWalk.from_mha(A, T),  # cancelling heads: B = 0 to rounding
        ConnectionWalk.from_edges(torch.stack([P, 0 * P]), torch.eye(2, dtype=f64)),  # one of two
    ]
    for w in zero_walks:
        msg = raises_named(UndefinedError, "walk", w.nearest_kronecker)
        assert "every P ⊗ T with P = 0 is nearest" in msg
    Pk, Tk, gap = ConnectionWalk.from_blocks(Z + 0.5, P=P).nearest_kronecker()  # nonzero: still answered
    assert torch.allclose(torch.kron(Pk, Tk), torch.full((6, 6), 0.5, dtype=f64), atol=1e-15) and float(gap) <= 1e-15


# ------------------------------------------------------------------------------------- sign rule, small and zero coefficients, devices
def test_nearest_kronecker_sign_rule_with_mixed_sign_coefficients():
    """C with entries of both signs whose sum is small and positive: P keeps the sign of C (sum ≥ 0)."""
    C = np.array([[1.0, -0.9], [0.1, -0.1]])
    T0 = np.array([[2.0, 0.0], [1.0, 1.0]])
    B = np.einsum("ij,ab->ijab", C, T0)
    P, T, gap = ConnectionWalk.from_blocks(t(B), P=t(_gauge(C))).nearest_kronecker()
    assert float(P.sum()) > 0
    close(P.numpy()[:, :, None, None] * T.numpy()[None, None], B)
    c = float(P[0, 0]) / C[0, 0]
    assert c > 0
    close(P, c * C)


def test_nearest_kronecker_sign_rule_holds_per_batch_element():
    g = rng(20)
    Bs = []
    for k in range(8):
        P0 = g.random((3, 3)) + 0.05
        T0 = g.standard_normal((2, 2)) * (-1) ** k
        Bs.append(np.einsum("ij,ab->ijab", P0, T0))
    P, T, gap = ConnectionWalk.from_blocks(t(np.stack(Bs))).nearest_kronecker()
    assert bool((P > 0).all())
    for k in range(8):
        close(P[k].numpy()[:, :, None, None] * T[k].numpy()[None, None], Bs[k])


def test_relative_residual_of_a_small_walk_is_relative_to_its_own_norm():
    B = 1e-3 * kron_case(21)
    s, _ = van_loan_singular_values(B)
    ct = ConnectionWalk.from_blocks(t(B)).constant_transport()
    close(ct.relative_residual, np.sqrt((s[1:] ** 2).sum()) / np.sqrt((B**2).sum()))
    assert float(ct.relative_residual) > 0.1


@pytest.mark.parametrize("batched", [False, True])
def test_a_walk_moved_to_another_device_computes_there(batched):
    """``to(device=)`` moves every stored tensor, and the Van Loan factorisation follows it (the meta
    device stands in for an accelerator: shapes are inferred, nothing is computed)."""
    B = torch.randn(*((2,) if batched else ()), 3, 3, 2, 2, dtype=f64, generator=torch.Generator().manual_seed(0))
    w = ConnectionWalk.from_blocks(B).to(device="meta")
    assert w.device.type == "meta" and w.dtype == f64
    assert w._P.device.type == "meta" and w._O.device.type == "meta"
    P, T, gap = w.nearest_kronecker()
    assert (P.device.type, T.device.type, gap.device.type) == ("meta", "meta", "meta")
    assert P.shape == (*B.shape[:-4], 3, 3) and T.shape == (*B.shape[:-4], 2, 2)
    wh = ConnectionWalk.from_mha(torch.full((2, 3, 3), 1 / 3, dtype=f64), torch.eye(2, dtype=f64).expand(2, 2, 2))
    wm = wh.to(device="meta")
    assert wm._A.device.type == "meta" and wm._T.device.type == "meta"


def test_zero_coefficients_are_allowed_in_a_constant_transport():
    """P ≥ 0, not P > 0: with d = 1 the Kronecker residual is exactly 0, so even rtol = 0 holds."""
    C = np.array([[1.0, 0.0], [0.5, 0.5]])
    B = np.einsum("ij,ab->ijab", C, np.array([[2.0]]))
    ct = ConnectionWalk.from_blocks(t(B), P=t(_gauge(C))).constant_transport(rtol=0.0)
    assert float(ct.min_coefficient) == 0.0 and float(ct.relative_residual) == 0.0
    assert bool(ct.holds)


# ------------------------------------------------------------------------------------- memory budget
DENSE = {  # method: (dense copies it may hold at once, what the refusal says it would form)
    "blocks": (1, "the n²d² blocks B"),
    "to_dense": (2, "the dense (nd)×(nd) operator"),
    "edge_transports": (2, "the n²d² edge transports O"),
}


def _budget_walk(form, batch, dtype):
    g = torch.Generator().manual_seed(5)
    n, d = 3, 2
    if form == "edges":
        B = torch.randn(*batch, n, n, d, d, dtype=f64, generator=g)
        return ConnectionWalk.from_blocks(B).to(dtype=dtype), n, d
    A = torch.rand(*batch, 2, n, n, dtype=f64, generator=g)
    return ConnectionWalk.from_mha(A.to(dtype), torch.randn(2, d, d, generator=g).to(dtype)), n, d


@pytest.mark.parametrize("method", list(DENSE))
@pytest.mark.parametrize("form, batch, dtype", [("edges", (), f64), ("heads", (2, 3), torch.float32)])
def test_dense_forms_are_refused_exactly_above_the_memory_budget(monkeypatch, method, form, batch, dtype):
    """Bytes = copies · Π(batch) · (n d)² · itemsize; at that budget the call runs, one byte below it
    is refused (MemoryBudgetError naming the walk, saying what would have been formed)."""
    copies, what = DENSE[method]
    w, n, d = _budget_walk(form, batch, dtype)
    item = 4 if dtype == torch.float32 else 8
    need = copies * int(np.prod(batch, dtype=np.int64)) * (n * d) ** 2 * item
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", str(need))
    getattr(w, method)()
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", str(need - 1))
    msg = raises_named(MemoryBudgetError, "walk", lambda: getattr(w, method)())
    assert msg.startswith(f"walk: {what} (n={n}, d={d}, batch={batch}) would take "), msg
    # and it names the factored way to get what was wanted
    assert msg.endswith(
        "; use the factored walk.apply / numerics.spectra.extreme_eigenvalues / walk.edge_transport(i, j) instead"
    ), msg


def test_edges_form_nearest_kronecker_needs_room_for_blocks_and_a_d2_identity(monkeypatch):
    """The edges form factors B by a (d², d²) float64 identity: d⁴·8 bytes, refused on its own when it
    is the larger need (n = 1, d = 3: blocks 2·9·8 = 144 bytes, identity 648)."""
    B = torch.randn(1, 1, 3, 3, dtype=f64, generator=torch.Generator().manual_seed(6))
    w = ConnectionWalk.from_blocks(B)
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "648")
    P, T, _ = w.nearest_kronecker()
    close((P[..., None, None] * T).numpy(), B.numpy())
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "647")
    msg = raises_named(MemoryBudgetError, "walk", w.nearest_kronecker)
    assert msg.startswith("walk: a d²×d² identity (d=3) would take "), msg
    assert "use a heads-form walk (from_mha / from_factors) instead" in msg
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "143")
    msg = raises_named(MemoryBudgetError, "walk", w.nearest_kronecker)
    assert msg.startswith("walk: the n²d² blocks and a d²×d² identity (n=1, d=3, batch=()) would take "), msg
    # n = 3, d = 1: the blocks need 2·(3·1)²·8 = 144 bytes, the identity 8: the blocks bound binds
    B = torch.rand(3, 3, 1, 1, dtype=f64, generator=torch.Generator().manual_seed(7))
    w = ConnectionWalk.from_blocks(B)
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "144")
    P, T, _ = w.nearest_kronecker()
    close((P[..., None, None] * T).numpy(), B.numpy())
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "143")
    msg = raises_named(MemoryBudgetError, "walk", w.nearest_kronecker)
    assert msg.startswith("walk: the n²d² blocks and a d²×d² identity (n=3, d=1, batch=()) would take "), msg


def test_nearest_kronecker_sign_rule_per_element_of_a_mixed_sign_batch():
    """Six exact Kronecker products with coefficients of both signs: each element's P must sum to
    ≥ 0 on its own (the rule is per batch element, and its threshold is 0 — one element here has a
    leading singular vector summing to about +0.11, others to negative values)."""
    g = rng(0)
    Bs = [np.einsum("ij,ab->ijab", g.standard_normal((3, 3)) + 0.3, g.standard_normal((2, 2))) for _ in range(6)]
    P, T, gap = ConnectionWalk.from_blocks(t(np.stack(Bs))).nearest_kronecker()
    for k in range(6):
        assert float(P[k].sum()) > 0, k
        close(P[k].numpy()[:, :, None, None] * T[k].numpy()[None, None], Bs[k], atol=1e-12)
    close(gap, np.zeros(6), atol=1e-12)


def test_from_edges_with_one_constant_transport_is_the_kronecker_walk():
    """``O`` ``(d, d)`` is broadcast to every edge: the blocks are ``P_ij T`` (oracle: ``np.kron``),
    for a single walk and a batch of two."""
    g = torch.Generator().manual_seed(5)
    P = torch.rand(2, 3, 3, generator=g, dtype=torch.float64)
    T = torch.randn(2, 2, generator=g, dtype=torch.float64)
    for Pb in (P[0], P):
        w = ConnectionWalk.from_edges(Pb, T)
        assert w.blocks().shape == (*Pb.shape, 2, 2)
        dense = w.to_dense().numpy()
        ref = np.stack([np.kron(p, T.numpy()) for p in Pb.reshape(-1, 3, 3).numpy()]).reshape(dense.shape)
        np.testing.assert_array_equal(dense, ref)
        for i, j in [(0, 1), (2, 2)]:  # the stored per-edge transport is T on every edge
            np.testing.assert_array_equal(
                w.edge_transport(i, j).numpy(), np.broadcast_to(T.numpy(), (*Pb.shape[:-2], 2, 2))
            )


def test_memory_checks_take_an_explicit_budget():
    """``_check_dense`` / ``_check_unit_basis`` (shared by nearest_kronecker and the factored
    diagnostics) compare with the ``budget`` given, at the byte: n = 3, d = 2 float64, one n²d²
    array = 36·8 = 288 bytes, the d²×d² identity 16·8 = 128 bytes."""
    w = ConnectionWalk.from_edges(torch.full((3, 3), 1 / 3, dtype=f64), torch.eye(2, dtype=f64))
    w._check_dense("x", copies=2, budget=576)
    msg = raises_named(MemoryBudgetError, "walk", lambda: w._check_dense("x", copies=2, budget=575))
    assert msg.startswith("walk: x (n=3, d=2, batch=()) would take ")
    w._check_unit_basis("y", copies=1, budget=288)
    raises_named(MemoryBudgetError, "walk", lambda: w._check_unit_basis("y", copies=1, budget=287))
    one = ConnectionWalk.from_edges(torch.ones((1, 1), dtype=f64), torch.eye(2, dtype=f64))  # 32 B < 128 B
    one._check_unit_basis("z", copies=1, budget=128)
    msg = raises_named(MemoryBudgetError, "walk", lambda: one._check_unit_basis("z", copies=1, budget=127))
    assert msg.startswith("walk: a d²×d² identity (d=2) would take ")
