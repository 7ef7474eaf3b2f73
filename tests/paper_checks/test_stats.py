"""Known answers and naive float64 references for the E1/E2 statistics (paper_checks.stats)."""

from __future__ import annotations

import math

import pytest
import torch

from numerics.errors import DTypeError, ShapeError
from numerics.tolerance import assert_close, tol
from paper_checks import stats as S
from theory.report import record

F64 = torch.float64


def _rand_attention(B, H, n, *, causal=False, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    Sc = torch.randn(B, H, n, n, generator=g, dtype=F64) * 2
    if causal:
        Sc = Sc.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(Sc, -1).to(device)


def _factors(H, d, dh, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(H, d, dh, generator=g, dtype=F64).to(device),
        torch.randn(H, dh, d, generator=g, dtype=F64).to(device),
    )


# ------------------------------------------------------------------------------------ E1
@pytest.mark.theorem("E1")
def test_change_statistics_known_values(device):
    Pa = torch.eye(2, dtype=F64, device=device)[None]
    Pb = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]], dtype=F64, device=device)
    assert_close(S.frob_change(Pa, Pb), torch.tensor([math.sqrt(2.0)], dtype=F64, device=device), size=4)
    assert_close(S.tv_change(Pa, Pb), torch.tensor([1.0], dtype=F64, device=device), size=4)
    # both permutations: identical singular values, spectral distance 0
    assert_close(S.spectral_distance(Pa, Pb), torch.zeros(1, dtype=F64, device=device), size=4)
    # Gram-route singular values vs the SVD (causal walk with tiny singular values)
    Pc = _rand_attention(2, 1, 9, causal=True, seed=5, device=device)[:, 0]
    ref = torch.linalg.svdvals(Pc)
    got = S.walk_singular_values(Pc)
    assert float((got - ref).abs().max()) <= math.sqrt(tol(F64, 81)) * float(ref.max())
    P = _rand_attention(3, 1, 7, device=device)[:, 0]
    for f in (S.frob_change, S.tv_change, S.spectral_distance, S.stationary_drift):
        assert float(f(P, P).abs().max()) == 0.0


@pytest.mark.theorem("E1")
def test_tv_change_reference(device):
    Pa = _rand_attention(2, 1, 6, seed=1, device=device)[:, 0]
    Pb = _rand_attention(2, 1, 6, seed=2, device=device)[:, 0]
    ref = torch.tensor(
        [
            sum(0.5 * sum(abs(float(Pb[b, i, j] - Pa[b, i, j])) for j in range(6)) for i in range(6)) / 6
            for b in range(2)
        ],
        dtype=F64,
    )
    assert_close(S.tv_change(Pa, Pb).cpu(), ref, size=36)


@pytest.mark.theorem("E1")
def test_pagerank_and_stationary(device):
    # doubly stochastic walk: PageRank and stationary law are uniform
    n = 5
    C = torch.roll(torch.eye(n, dtype=F64), 1, 1)
    P = (0.5 * torch.eye(n, dtype=F64) + 0.5 * C)[None].to(device)
    u = torch.full((1, n), 1 / n, dtype=F64, device=device)
    assert_close(S.pagerank(P), u, size=n * n)
    assert_close(S.stationary(P), u, size=n * n)
    # PageRank solves π = (1−α) π P + α/n
    Q = _rand_attention(2, 1, 6, causal=True, device=device)[:, 0]
    pi = S.pagerank(Q)
    assert_close(pi, (1 - S.PAGERANK_ALPHA) * (pi[:, None, :] @ Q)[:, 0] + S.PAGERANK_ALPHA / 6, size=36)
    assert float(pi.min()) > 0


def test_stationary_is_refused_where_the_walk_precision_cannot_resolve_it():
    """Two 3-token blocks coupled with weight c: π = uniform for any c > 0 (doubly stochastic), but
    cond(I − P + 11ᵀ) ~ 1/c. For float32 entries c = 1e-6 is below what the solve can resolve: π and
    the reversibility defect are NaN (never a confident wrong number); the float64 reading resolves it."""

    def blocks(c):
        B = torch.full((3, 3), (1 - c) / 3, dtype=F64)
        P = torch.block_diag(B, B)
        P[:3, 3:] = c / 3
        P[3:, :3] = c / 3
        return P[None]

    u = torch.full((1, 6), 1 / 6, dtype=F64)
    assert_close(S.stationary(blocks(0.2)), u, size=36)
    assert torch.isnan(S.stationary(blocks(1e-6))).all()
    assert torch.isnan(S.reversibility_defect(blocks(1e-6))).all()
    err = (S.stationary(blocks(1e-6), dtype=F64) - u).abs().max().item()
    assert err <= 1e6 * tol(F64, 36), err  # forward error <= cond · tol, cond ~ 1/c
    assert S.reversibility_defect(blocks(1e-6), dtype=F64).item() <= 1e-9  # symmetric: reversible


@pytest.mark.theorem("E1")
def test_reversibility_defect(device):
    g = torch.Generator().manual_seed(3)
    X = torch.randn(2, 6, 3, generator=g, dtype=F64)
    K = torch.exp(X @ X.transpose(-1, -2) / 2)  # symmetric kernel: D^{-1}K is reversible (T4)
    P = (K / K.sum(-1, keepdim=True)).to(device)
    r = S.reversibility_defect(P)
    assert float(r.max()) <= tol(F64, 36)
    record("E1", residual=float(r.max()))
    # a rotation-biased walk on a 3-cycle is not reversible
    Pc = torch.tensor([[[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]]], dtype=F64, device=device)
    assert float(S.reversibility_defect(Pc)[0]) > 0.5
    # causal walks: undefined
    assert torch.isnan(S.reversibility_defect(_rand_attention(1, 1, 5, causal=True, device=device)[:, 0])).all()


@pytest.mark.theorem("E1")
def test_positional_r2_known_answers(device):
    n = 8
    m = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    # a circulant walk (kernel on a ring) is a function of i − j with equal row means: R² = 1
    c = torch.rand(n, generator=torch.Generator().manual_seed(0), dtype=F64)
    C = (c / c.sum())[m % n]
    assert_close(S.positional_r2(C[None].to(device)), torch.ones(1, dtype=F64, device=device), size=n * n)
    # uniform causal attention: rows differ only by normalisation -> nothing to explain (NaN)
    U = torch.tril(torch.ones(n, n, dtype=F64)) / torch.arange(1, n + 1, dtype=F64)[:, None]
    assert torch.isnan(S.positional_r2(U[None].to(device))).all()
    # a causal walk whose within-row profile is a kernel in i − j plus noise: high but < 1
    K = torch.tril(torch.exp(-m.abs().to(F64)))
    Kc = K / K.sum(-1, keepdim=True)
    r2c = float(S.positional_r2(Kc[None].to(device))[0])
    assert 0.5 < r2c <= 1
    # a walk with no dependence on i − j (every row the same random distribution) explains little
    v = torch.rand(n, generator=torch.Generator().manual_seed(1), dtype=F64)
    R = (v[None, :] / v.sum()).expand(n, n)
    r2 = float(S.positional_r2(R[None].to(device))[0])
    assert 0 <= r2 < 0.9


@pytest.mark.theorem("E1")
def test_diffusion_r2_exact_kernel(device):
    g = torch.Generator().manual_seed(4)
    X = torch.randn(2, 7, 3, generator=g, dtype=F64).to(device)
    D2 = S.sq_dists(X)
    ref = ((X[:, :, None, :] - X[:, None, :, :]) ** 2).sum(-1)
    assert_close(D2, ref, size=49)
    off = ~torch.eye(7, dtype=torch.bool, device=device)
    K = torch.stack([torch.exp(-D2[b] / D2[b][off].median()) for b in range(2)])
    P = K / K.sum(-1, keepdim=True)
    assert_close(S.diffusion_r2(P, D2), torch.ones(2, dtype=F64, device=device), size=49)
    assert float(S.diffusion_r2(_rand_attention(2, 1, 7, device=device)[:, 0], D2).max()) < 0.9
    # causal uniform walk: no within-row variance -> NaN rather than a spurious correlation
    U = (torch.tril(torch.ones(7, 7, dtype=F64)) / torch.arange(1, 8, dtype=F64)[:, None])[None].expand(2, 7, 7)
    assert torch.isnan(S.diffusion_r2(U.to(device), D2)).all()


@pytest.mark.theorem("E1")
def test_sinks_found_and_removed(device):
    n = 6
    P = torch.full((1, n, n), 0.1, dtype=F64)
    P[..., 3] = 0.5
    Ps = P[None].to(device)  # one layer
    sinks = S.sink_positions(Ps)
    assert sinks.tolist() == [True, False, False, True, False, False]
    Q = S.remove_sinks(P.to(device), sinks)
    assert Q.shape == (1, 4, 4)
    assert_close(Q.sum(-1), torch.ones(1, 4, dtype=F64, device=device), size=4)
    assert_close(Q, torch.full((1, 4, 4), 0.25, dtype=F64, device=device), size=16)


# ------------------------------------------------------------------------------------ E2
@pytest.mark.theorem("E2")
def test_head_singular_values_match_dense(device):
    Wo, Wv = _factors(3, 9, 2, device=device)
    s = S.head_singular_values(Wo, Wv)
    ref = torch.linalg.svdvals(Wo @ Wv)[:, :2]
    assert_close(s, ref, size=81)
    # T_Σ has rank 6 < 9: the grouped QR route gives the 6 nonzero values and exact zeros
    got, ref = S.summed_singular_values(Wo, Wv), torch.linalg.svdvals((Wo @ Wv).sum(0))
    assert_close(got, ref, size=81)
    assert float(got[6:].abs().max()) == 0.0
    # GQA: heads 0, 1 share a value block -> inner dimension 2·d_h = 4
    Wv2 = Wv.clone()
    Wv2[1] = Wv2[0]
    got2, ref2 = S.summed_singular_values(Wo, Wv2), torch.linalg.svdvals((Wo @ Wv2).sum(0))
    assert_close(got2, ref2, size=81)
    assert float(got2[4:].abs().max()) == 0.0
    # a full-rank sum (d_h·H ≥ d) goes through the dense route
    Wo3, Wv3 = _factors(3, 5, 2, seed=21, device=device)
    assert_close(S.summed_singular_values(Wo3, Wv3), torch.linalg.svdvals((Wo3 @ Wv3).sum(0)), size=25)
    U, s2, V = S.svd_factors(Wo, Wv)
    assert_close((U * s2[:, None, :]) @ V.transpose(-1, -2), Wo @ Wv, size=81)


@pytest.mark.theorem("E2")
def test_scaled_isometries_have_zero_defect(device):
    g = torch.Generator().manual_seed(5)
    d, H = 8, 4
    Q1 = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0]
    Q2 = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0]
    Wo = (0.7 * Q1).reshape(d, H, d // H).permute(1, 0, 2).to(device)
    Wv = Q2.T.reshape(H, d // H, d).to(device)
    s = S.head_singular_values(Wo, Wv)
    cvs = S.nonzero_sv_cv(s, tol(F64, d))
    assert float(cvs.abs().max()) <= tol(F64, d)
    T = (Wo @ Wv).sum(0)
    assert float(S.procrustes_defect(torch.linalg.svdvals(T), d)) <= math.sqrt(tol(F64, d))
    # a known non-isometry: diag(1, 3) -> sqrt(1 - 16/20)
    assert_close(S.procrustes_defect(torch.tensor([3.0, 1.0], dtype=F64), 2), torch.tensor(math.sqrt(0.2), dtype=F64))
    # a rank-deficient head: zero singular values are not counted
    assert_close(S.nonzero_sv_cv(torch.tensor([[2.0, 2.0, 0.0]], dtype=F64), 1e-12), torch.zeros(1, dtype=F64))


@pytest.mark.theorem("E2")
def test_data_gain_cv_reference(device):
    Wo, Wv = _factors(2, 5, 2, seed=6, device=device)
    X = torch.randn(2, 4, 5, generator=torch.Generator().manual_seed(7), dtype=F64).to(device)
    got = S.data_gain_cv(Wo, Wv, X)
    T = (Wo @ Wv).cpu()
    ref = torch.zeros(2, 2, dtype=F64)
    for b in range(2):
        for h in range(2):
            gains = torch.tensor(
                [
                    float(torch.linalg.vector_norm(T[h] @ X[b, i].cpu()) / torch.linalg.vector_norm(X[b, i].cpu()))
                    for i in range(4)
                ],
                dtype=F64,
            )
            ref[b, h] = gains.std(unbiased=False) / gains.mean()
    assert_close(got.cpu(), ref, size=25)


@pytest.mark.theorem("E2")
@pytest.mark.parametrize("causal", [False, True])
def test_edge_defect_factored_matches_naive(causal, device):
    A = _rand_attention(2, 3, 5, causal=causal, seed=8, device=device)
    Wo, Wv = _factors(3, 8, 2, seed=9, device=device)
    r = S.factor_rank(Wo, Wv, tol(F64, 8))
    assert r == 6
    fast = S.edge_defect(A, Wo, Wv, r)
    ref = S.edge_defect_naive(A.cpu(), Wo.cpu(), Wv.cpu(), r)
    res = assert_close(fast.cpu(), ref, size=8 * 8 * 3**4, what="edge defect")
    record("E2", residual=res)


@pytest.mark.theorem("E2")
def test_edge_defect_gram_terms_are_traces(device):
    Wo, Wv = _factors(3, 6, 2, seed=10, device=device)
    G2, Q4 = S.edge_gram_terms(Wo, Wv)
    T = Wo @ Wv
    for h, k, l, m in [(0, 1, 2, 0), (2, 2, 1, 0), (1, 0, 1, 2)]:
        ref = torch.trace(T[h].T @ T[k] @ T[l].T @ T[m])
        assert_close(Q4[h, k, l, m], ref, size=6**3)
    assert_close(G2, torch.einsum("hab,kab->hk", T, T), size=36)


@pytest.mark.theorem("E2")
def test_edge_defect_of_equal_gates_on_isometry_is_zero(device):
    # shared attention across heads -> O_ij = Σ_h T_h = s Q (orthogonal): κ = 0 on every edge
    d, H = 6, 3
    g = torch.Generator().manual_seed(11)
    Q1 = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0]
    Q2 = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0]
    Wo = (2.0 * Q1).reshape(d, H, d // H).permute(1, 0, 2).to(device)
    Wv = Q2.T.reshape(H, d // H, d).to(device)
    A = _rand_attention(2, 1, 4, seed=12, device=device).expand(2, H, 4, 4)
    k = S.edge_defect(A, Wo, Wv, d)
    assert float(k.abs().max()) <= math.sqrt(tol(F64, d**2))


@pytest.mark.theorem("E2")
def test_baselines_keep_what_they_should(device):
    Wo, Wv = _factors(2, 7, 3, seed=13, device=device)
    gen = torch.Generator().manual_seed(0)
    so, vo = S.spectrum_matched_factors(Wo.cpu(), Wv.cpu(), gen)
    assert_close(S.head_singular_values(so, vo), S.head_singular_values(Wo, Wv).cpu(), size=49)
    fo, fv = S.flat_factors(Wo, Wv)
    s = S.head_singular_values(fo, fv)
    assert_close(s, S.head_singular_values(Wo, Wv).mean(-1, keepdim=True).expand_as(s), size=49)
    # same column space and row space as the head
    F = fo @ fv
    U, _, V = S.svd_factors(Wo, Wv)
    PU = U @ U.transpose(-1, -2)
    PV = V @ V.transpose(-1, -2)
    assert_close(PU @ F @ PV, F, size=49)


def test_bad_input_is_refused():
    P = torch.rand(2, 3, 3, dtype=F64)
    with pytest.raises(ShapeError) as e:
        S.frob_change(P, torch.rand(2, 4, 4, dtype=F64))
    assert e.value.argument == "Pb"
    with pytest.raises(DTypeError):
        S.tv_change(torch.ones(1, 2, 2, dtype=torch.long), P[:1, :2, :2])
    with pytest.raises(ShapeError) as e:
        S.edge_defect(torch.rand(1, 3, 4, 4, dtype=F64), *_factors(2, 4, 2), 4)
    assert e.value.argument == "A"
    with pytest.raises(ShapeError):
        S.remove_sinks(P, torch.tensor([True, True, False]))
    with pytest.raises(ShapeError) as e:
        S.head_singular_values(torch.rand(2, 4, 2, dtype=F64), torch.rand(2, 3, 4, dtype=F64))
    assert e.value.argument == "W_V"
