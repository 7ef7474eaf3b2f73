"""The capped kernel route of ``diagnose(method="factored")`` (numerics.laplacian.kernel): its
dimensions and verdicts against the literal float64 definition (dense ``Δ = I − W`` and the dense
parallel-section constraints ``C``, decomposed by SVD), the Dirichlet certificate against the dense
smallest singular value, the early exit of a walk that fails a T3 hypothesis and the
``max_matvecs`` cap ('undecided' with its reason)."""

from __future__ import annotations

import math

import pytest
import torch

import numerics.laplacian.kernel as lk
from numerics.errors import ParameterError
from numerics.laplacian import diagnose
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk

F = torch.float64


def literal(w: ConnectionWalk):
    """``(σ(Δ) ascending, σ(C) ascending)`` from the definitions: ``Δ = I − W`` with block
    ``(i, j)`` of ``W`` equal to ``B_ij``; block row ``(i, j)`` of ``C`` (every edge ``P_ij > 0``)
    equal to ``e_iᵀ ⊗ I − e_jᵀ ⊗ O_ij``; both assembled entry by entry."""
    n, d = w.n, w.d
    B = w.blocks().to(F)
    P = w.walk_matrix.to(F)
    O, _ = w.edge_transports()
    O = O.to(F)
    W = torch.zeros(n * d, n * d, dtype=F)
    rows = []
    for i in range(n):
        for j in range(n):
            W[i * d : (i + 1) * d, j * d : (j + 1) * d] = B[i, j]
            if P[i, j] > 0:
                r = torch.zeros(d, n * d, dtype=F)
                r[:, i * d : (i + 1) * d] += torch.eye(d, dtype=F)
                r[:, j * d : (j + 1) * d] -= O[i, j]
                rows.append(r)
    sD = torch.linalg.svdvals(torch.eye(n * d, dtype=F) - W).flip(0)
    sC = torch.linalg.svdvals(torch.cat(rows)).flip(0)
    return sD, sC


def literal_C(w: ConnectionWalk) -> torch.Tensor:
    """``C`` assembled entry by entry (block row ``e_iᵀ ⊗ I − e_jᵀ ⊗ O_ij`` per edge ``P_ij > 0``)."""
    n, d = w.n, w.d
    P = w.walk_matrix.to(F)
    O = w.edge_transports()[0].to(F)
    rows = []
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                r = torch.zeros(d, n * d, dtype=F)
                r[:, i * d : (i + 1) * d] += torch.eye(d, dtype=F)
                r[:, j * d : (j + 1) * d] -= O[i, j]
                rows.append(r)
    return torch.cat(rows)


def literal_dims(w: ConnectionWalk):
    sD, sC = literal(w)
    thr = tol(F, w.n * w.d)
    return int((sD <= thr * sD[-1].clamp(min=1)).sum()), int((sC <= thr * sC[-1].clamp(min=1)).sum()), sD, sC


def random_heads(n, d, H, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    A = torch.softmax(torch.randn(H, n, n, generator=g, dtype=F), -1)
    return ConnectionWalk.from_mha(A, scale * torch.randn(H, d, d, generator=g, dtype=F) / math.sqrt(d))


def sym_stochastic(n, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, n, generator=g, dtype=F)
    K = torch.exp(X + X.T)
    return K / K.sum(-1, keepdim=True)


def flat_on(P, d, seed):
    """``O_ij = R_i R_jᵀ`` with random orthogonal ``R_i``: flat, ``dim ker Δ = d·components``."""
    g = torch.Generator().manual_seed(seed)
    R = torch.linalg.qr(torch.randn(P.shape[0], d, d, generator=g, dtype=F))[0]
    return ConnectionWalk.from_edges(P, R[:, None] @ R[None, :].transpose(-1, -2))


def holonomy_on(P, d, seed):
    """Random orthogonal ``O_ij`` with ``O_ji = O_ijᵀ`` (metric-compatible, not flat: no section)."""
    g = torch.Generator().manual_seed(seed)
    n = P.shape[0]
    Q = torch.linalg.qr(torch.randn(n, n, d, d, generator=g, dtype=F))[0]
    O = Q.clone()
    for i in range(n):
        O[i, i] = torch.eye(d, dtype=F)
        for j in range(i + 1, n):
            O[j, i] = Q[i, j].T
    return ConnectionWalk.from_edges(P, O)


def factored(w, **kw):
    return diagnose(w, method="factored", assemble_max=0, **kw)


@pytest.mark.parametrize("seed", range(4))
def test_random_walks_agree_with_the_literal_definition(seed):
    """Random softmax heads with random transports: dim ker Δ = dim parallel = 0 as the dense SVDs
    say; kernel_parallel holds (0 = 0), flat fails with a residual interval holding the dense one."""
    w = random_heads(6, 5, 2, seed, scale=1.0 + seed)
    kD, kC, _, sC = literal_dims(w)
    D = factored(w)
    assert (int(D.kernel_dim), int(D.parallel_dim)) == (kD, kC) == (0, 0)
    assert bool(D.kernel_parallel.holds) and not bool(D.flat.holds)
    facts = D.extra["kernel_facts"][0]
    assert facts["decided"]
    lo, hi = facts["flat_interval"]
    exact = float(sC[w.d - 1] / sC[-1])
    assert lo - D.flat.tol <= exact <= hi + D.flat.tol, (lo, exact, hi)


@pytest.mark.parametrize(
    "P, d, comps",
    [
        (sym_stochastic(5, 0), 6, 1),
        (torch.block_diag(sym_stochastic(3, 1), sym_stochastic(4, 2)), 5, 2),
        (torch.block_diag(sym_stochastic(2, 3), sym_stochastic(2, 4), sym_stochastic(3, 5)), 4, 3),
    ],
    ids=["one-component", "two-components", "three-components"],
)
def test_flat_connections_have_kernel_d_per_component(P, d, comps):
    """Flat connections: the literal SVDs give dim ker Δ = dim parallel = d·components, and so does
    the factored route, decided by the Dirichlet certificate (no Lanczos search for Δ), flat holds."""
    w = flat_on(P, d, 7)
    kD, kC, sD, _ = literal_dims(w)
    assert kD == kC == d * comps
    D = factored(w)
    assert int(D.kernel_dim) == int(D.parallel_dim) == d * comps
    assert bool(D.kernel_parallel.holds) and bool(D.flat.holds)
    facts = D.extra["kernel_facts"][0]
    cert = facts["dirichlet_lower_bound"]
    assert tol(F, w.n * w.d) * facts["norm_Delta"] < cert <= float(sD[kD]) * (1 + 1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_non_flat_metric_compatible_walks_have_kernel_zero(seed):
    """Metric-compatible transports with holonomy on a reversible walk: no parallel section, the
    literal dim ker Δ is 0, the certificate decides it and is below the dense σ_1(Δ)."""
    w = holonomy_on(sym_stochastic(5, 10 + seed), 4, seed)
    kD, kC, sD, _ = literal_dims(w)
    assert kD == kC == 0
    D = factored(w)
    assert int(D.kernel_dim) == int(D.parallel_dim) == 0
    assert bool(D.kernel_parallel.holds) and not bool(D.flat.holds)
    cert = D.extra["kernel_facts"][0]["dirichlet_lower_bound"]
    assert 0 < cert <= float(sD[0]) * (1 + 1e-12)


def test_dirichlet_certificate_is_a_lower_bound_on_reversible_heads():
    """Reversible heads with a symmetric orthogonal transport split over the heads (half the
    directions parallel): the certificate bounds the literal σ_{k+1}(Δ) from below."""
    g = torch.Generator().manual_seed(3)
    n, d, H = 5, 6, 2
    X = torch.randn(n, n, generator=g, dtype=F)
    K = torch.exp(X + X.T)
    A = K / K.sum(-1, keepdim=True)
    Q = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F))[0]
    S = Q @ torch.diag(torch.tensor([1.0, -1.0] * (d // 2), dtype=F)) @ Q.T
    w = ConnectionWalk.from_mha(torch.stack([A] * H), torch.stack([S / H] * H))
    kD, kC, sD, _ = literal_dims(w)
    assert kD == kC == d // 2
    D = factored(w)
    assert int(D.kernel_dim) == int(D.parallel_dim) == kD
    cert = D.extra["kernel_facts"][0]["dirichlet_lower_bound"]
    assert 0 < cert <= float(sD[kD]) * (1 + 1e-12)


def test_the_cap_gives_undecided_with_its_reason():
    """``max_matvecs`` below what the route needs: both checks are undecided (NaN residual, holds
    False, the reason names the cap), the dimensions are −1 and the work stayed within the cap
    (plus one block of at most d products)."""
    w = random_heads(6, 5, 2, 0)
    D = factored(w, max_matvecs=5)
    for c in (D.kernel_parallel, D.flat):
        assert not bool(c.holds) and bool(torch.isnan(c.residual))
        assert c.reason.startswith("undecided") and "max_matvecs = 5" in c.reason
    assert int(D.kernel_dim) == int(D.parallel_dim) == -1
    facts = D.extra["kernel_facts"][0]
    assert facts["decided"] is False and facts["matvecs"] <= 5 + w.d
    # with room, the same walk is decided
    assert factored(w).extra["kernel_facts"][0]["decided"]


def null_outside_sections() -> ConnectionWalk:
    """A token that keeps its value and is read by no one, ``O`` not orthogonal: ``dim ker Δ = 2``
    outside the parallel sections (there are none), no Dirichlet certificate."""
    g = torch.Generator().manual_seed(10)
    n, d = 3, 2
    P = torch.softmax(torch.randn(n, n, generator=g, dtype=F), -1)
    O = torch.randn(n, n, d, d, generator=g, dtype=F)
    O[0, 0] = torch.eye(d, dtype=F) / P[0, 0]
    O[1:, 0] = 0.0
    return ConnectionWalk.from_edges(P, O)


def test_the_search_of_a_walk_failing_t3_is_capped_by_the_other_checks(monkeypatch):
    """ker Δ outside the parallel sections (a token that keeps its value and is read by no one; O not
    orthogonal, so no certificate): the search finds it with the default budget; with the spectrum
    skipped (the other checks spend 3 products) and the floor lowered to 5 it stops, undecided,
    naming the failed T3 hypothesis as the reason for the cap; an explicit max_matvecs lifts it."""
    w = null_outside_sections()
    kD, kC, _, _ = literal_dims(w)
    assert (kD, kC) == (2, 0)
    D = factored(w, spectrum=False)
    assert (int(D.kernel_dim), int(D.parallel_dim)) == (2, 0) and not bool(D.kernel_parallel.holds)
    monkeypatch.setattr(lk, "SEARCH_FLOOR", 5)
    D = factored(w, spectrum=False)
    kp = D.kernel_parallel
    assert bool(torch.isnan(kp.residual)) and "undecided" in kp.reason and "T3 hypothesis fails" in kp.reason
    assert int(D.kernel_dim) == -1 and 0 <= D.extra["kernel_facts"][0]["kernel_dim_at_least"] <= 2
    assert int(D.parallel_dim) == 0 and not bool(D.flat.holds) and not bool(torch.isnan(D.flat.residual))
    # an explicit max_matvecs is the only cap: the early exit is lifted and the search decides
    D = factored(w, spectrum=False, max_matvecs=10_000)
    assert (int(D.kernel_dim), int(D.parallel_dim)) == (2, 0) and not bool(torch.isnan(D.kernel_parallel.residual))


@pytest.mark.parametrize("block", [1, 7, lk.GRAM_BLOCK, 40])
def test_gram_columns_equal_the_literal_product_at_every_block_size(block):
    """``CᵀC Q`` by the edge-Gram expansion, ``block`` columns per product (``lk.GRAM_BLOCK`` the
    default's cap; 40 columns wider than ``d``), against ``CᵀC Q`` with ``C`` assembled entry by entry."""
    from numerics.laplacian.blocks import element, factored_blocks
    from numerics.laplacian.lanczos import Meter

    w = random_heads(4, 20, 2, 3, scale=2.0)
    e = element(factored_blocks(w.to(dtype=F)), 0)
    C = literal_C(w)
    Q = torch.linalg.qr(torch.randn(w.n * w.d, 33, generator=torch.Generator().manual_seed(5), dtype=F))[0]
    want = C.T @ (C @ Q)
    got = lk._gram_columns(e, Q, Meter(e, 10**6), block)
    assert float((got - want).abs().max()) <= 1e-12 * float(want.abs().max())


@pytest.mark.parametrize("block, span", [(1, 64), (7, 64), (lk.GRAM_BLOCK, 64), (40, 64), (1, 5), (4, 10), (7, 9)])
def test_sections_gram_equals_the_literal_form_with_one_product_per_column(monkeypatch, block, span):
    """``Qᵀ CᵀC Q`` with the transposed term taken as a transpose (``sections_gram``) against
    ``(C Q)ᵀ(C Q)`` with ``C`` assembled entry by entry, on a non-reversible walk with random head
    transports (``Σ_j O_kj`` and its transpose differ), at one walk-like product per column; the
    projections gathered over spans of columns (several spans, spans not a multiple of the block)."""
    import numerics.laplacian.sections as ls
    from numerics.laplacian.blocks import element, factored_blocks
    from numerics.laplacian.lanczos import Meter
    from numerics.laplacian.sections import sections_gram

    monkeypatch.setattr(ls, "GRAM_SPAN", span)

    w = random_heads(4, 20, 2, 3, scale=2.0)
    e = element(factored_blocks(w.to(dtype=F)), 0)
    C = literal_C(w)
    Q = torch.linalg.qr(torch.randn(w.n * w.d, 33, generator=torch.Generator().manual_seed(6), dtype=F))[0]
    want = (C @ Q).T @ (C @ Q)
    c0 = e.counter[0]
    got = sections_gram(e, Q, Meter(e, 10**6), block)
    assert e.counter[0] - c0 == Q.shape[1]
    assert float((got - want).abs().max()) <= 1e-12 * float(want.abs().max())


@pytest.mark.parametrize("seed", range(4))
def test_norm_bounds_are_above_the_literal_norms(seed):
    """The certified upper bounds of ``‖Δ‖`` and ``‖C‖`` (no products) against the SVDs of ``Δ`` and
    ``C`` assembled entry by entry, for head walks and for a walk given by low-rank factors."""
    from numerics.laplacian.blocks import element, factored_blocks
    from numerics.laplacian.sections import norm_bounds

    if seed < 3:
        w = random_heads(5, 4, 3, seed, scale=1.0 + 2 * seed)
    else:
        g = torch.Generator().manual_seed(seed)
        A = torch.softmax(2 * torch.randn(2, 6, 6, generator=g, dtype=F), -1)
        w = ConnectionWalk.from_factors(
            A, torch.randn(2, 4, 2, generator=g, dtype=F), torch.randn(2, 2, 4, generator=g, dtype=F)
        )
    sD, sC = literal(w)
    dn_up, cn_up = norm_bounds(element(factored_blocks(w.to(dtype=F)), 0))
    assert dn_up >= max(float(sD[-1]), 1.0) and cn_up >= max(float(sC[-1]), 1.0), (dn_up, sD[-1], cn_up, sC[-1])


def test_a_walk_failing_t3_is_decided_by_the_norm_bounds():
    """A random head walk fails T3: its kernel checks are decided with the norms' bounds (``‖Δ‖`` never
    computed) and agree with the literal SVDs; the flatness interval holds the literal value."""
    w = random_heads(6, 5, 2, 11, scale=2.0)
    kD, kC, _, sC = literal_dims(w)
    D = factored(w)
    facts = D.extra["kernel_facts"][0]
    assert "norm_C_bound" in facts and math.isnan(facts["norm_Delta"]) and facts["decided"]
    assert (int(D.kernel_dim), int(D.parallel_dim)) == (kD, kC) == (0, 0)
    lo, hi = facts["flat_interval"]
    exact = float(sC[w.d - 1] / sC[-1])
    assert lo <= exact <= hi + D.flat.tol, (lo, exact, hi)


def test_a_walk_failing_t3_with_parallel_sections_takes_the_exact_norms():
    """One head with the identity transport on a non-reversible attention (T3's detailed balance
    fails): the constants are parallel and in ``ker Δ``, which the bounds cannot decide, so the route
    computes the 1e-8 norms; the dimensions are the literal ones."""
    g = torch.Generator().manual_seed(4)
    A = torch.softmax(2 * torch.randn(1, 6, 6, generator=g, dtype=F), -1)
    w = ConnectionWalk.from_mha(A, torch.eye(3, dtype=F)[None])
    kD, kC, _, _ = literal_dims(w)
    D = factored(w)
    facts = D.extra["kernel_facts"][0]
    assert not bool(D.detailed_balance.holds)
    assert "norm_C_bound" not in facts and facts["norm_Delta"] == facts["norm_Delta"]
    assert (int(D.kernel_dim), int(D.parallel_dim)) == (kD, kC) == (3, 3)
    assert bool(D.kernel_parallel.holds) and bool(D.flat.holds)


def test_max_matvecs_is_validated():
    w = random_heads(4, 3, 2, 0)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ParameterError) as e:
            diagnose(w, method="factored", max_matvecs=bad)
        assert e.value.argument == "max_matvecs"
    with pytest.raises(ParameterError):
        diagnose(w, method="dense", max_matvecs=10)


def test_the_bounded_fallback_keeps_the_sections_when_the_search_is_capped(monkeypatch):
    """Over the memory rule (forced) the Lanczos fallback runs; with Δ's eigenpairs capped by the
    early exit (T3 fails, floor lowered) kernel_parallel is undecided while the parallel-section count
    and flatness are still decided and agree with the literal SVD of C."""
    w = random_heads(6, 5, 2, 1)
    kD, kC, _, sC = literal_dims(w)
    monkeypatch.setattr(lk, "SECTIONS_MAX_CHUNKS", 0)
    monkeypatch.setattr(lk, "SEARCH_FLOOR", 1)
    D = factored(w, spectrum=False)
    facts = D.extra["kernel_facts"][0]
    assert facts["method"].startswith("lanczos") and facts["decided"] is False
    kp = D.kernel_parallel
    assert bool(torch.isnan(kp.residual)) and kp.reason.startswith("undecided") and int(D.kernel_dim) == -1
    assert int(D.parallel_dim) == kC == 0
    assert not bool(D.flat.holds) and not bool(torch.isnan(D.flat.residual))


@pytest.mark.parametrize("factors", [False, True])
@pytest.mark.parametrize("transpose", [False, True])
def test_coefficient_products_of_a_block_are_the_literal_sums(factors, transpose):
    """``Σ_h c^h x T_hᵀ`` (``transpose``: ``Σ_h c^hᵀ x T_h``) on a block of fields — the
    three-product form of ``FactoredBlocks._coef_apply_block`` — against the sums written edge by
    edge in numpy, for head transports and for low-rank factors ``T_h = W_O[h] W_V[h]``."""
    import numpy as np

    from numerics.laplacian.blocks import element, factored_blocks

    g = torch.Generator().manual_seed(7)
    H, n, d, k, p = 3, 5, 4, 2, 3
    A = torch.softmax(torch.randn(H, n, n, generator=g, dtype=F), -1)
    if factors:
        W_O, W_V = torch.randn(H, d, k, generator=g, dtype=F), torch.randn(H, k, d, generator=g, dtype=F)
        w, T = ConnectionWalk.from_factors(A, W_O, W_V), (W_O @ W_V).numpy()
    else:
        Tt = torch.randn(H, d, d, generator=g, dtype=F)
        w, T = ConnectionWalk.from_mha(A, Tt), Tt.numpy()
    e = element(factored_blocks(w), 0)
    c = torch.randn(H, n, n, generator=g, dtype=F)
    x = torch.randn(p, n, d, generator=g, dtype=F)
    cn, xn = c.numpy(), x.numpy()
    want = np.zeros((p, n, d))
    for q in range(p):
        for h in range(H):
            for i in range(n):
                for j in range(n):
                    if transpose:
                        want[q, j] += cn[h, i, j] * T[h].T @ xn[q, i]
                    else:
                        want[q, i] += cn[h, i, j] * T[h] @ xn[q, j]
    c0 = e.counter[0]
    got = e._coef_apply(c, x, transpose=transpose).numpy()
    assert e.counter[0] - c0 == p
    assert np.abs(got - want).max() <= tol(F, H * n * d, scale=float(np.abs(want).max()))


def test_null_start_is_the_smallest_singular_direction_of_delta_on_the_space():
    """spectral.null_start against numpy's SVD of ``V − WV`` (float64, an explicit dense W): the unit
    vector of span V with the smallest ``‖(I − W) y‖``."""
    import numpy as np

    from numerics.laplacian.spectral import null_start

    g = torch.Generator().manual_seed(3)
    N, m = 40, 9
    W = torch.randn(N, N, generator=g, dtype=F) / math.sqrt(N) + 0.9 * torch.eye(N, dtype=F)
    V = torch.linalg.qr(torch.randn(N, m, generator=g, dtype=F))[0]
    y = null_start(V, W @ V)
    D = (V - W @ V).numpy()
    s_min = np.linalg.svd(D, compute_uv=False)[-1]
    assert abs(float(torch.linalg.vector_norm(y)) - 1.0) <= 1e-14
    assert float(torch.linalg.vector_norm(y - V @ (V.T @ y))) <= 1e-13  # in span V
    assert abs(float(torch.linalg.vector_norm(y - W @ y)) - s_min) <= 1e-12 * np.linalg.norm(D, 2)


@pytest.mark.parametrize("n, d, H, seed", [(12, 8, 4, 1), (10, 6, 3, 2), (16, 12, 4, 3)])
def test_the_search_starts_from_the_spectrums_arnoldi_space(monkeypatch, n, d, H, seed):
    """Random walks (the spectrum's Arnoldi runs): the σ_1(Δ) search started from that space's best
    approximate null vector decides the same dimensions in fewer products than from the seeded
    random start alone (null_start replaced by 'no start')."""
    import numerics.laplacian.spectral as ls

    w = random_heads(n, d, H, seed)
    kD, kC, _, _ = literal_dims(w)
    D1 = factored(w)
    monkeypatch.setattr(ls, "null_start", lambda V, AV: None)
    D0 = factored(w)
    assert (int(D1.kernel_dim), int(D1.parallel_dim)) == (int(D0.kernel_dim), int(D0.parallel_dim)) == (kD, kC)
    assert D1.extra["matvecs"]["kernel"] < D0.extra["matvecs"]["kernel"]


def test_a_null_direction_outside_the_sections_is_found_from_the_arnoldi_start():
    """The walk of the capped-search test (dim ker Δ = 2, no parallel section) with the spectrum on,
    so the search starts from the Arnoldi space: it still finds both null directions."""
    w = null_outside_sections()
    assert literal_dims(w)[:2] == (2, 0)
    D = factored(w)
    assert (int(D.kernel_dim), int(D.parallel_dim)) == (2, 0) and not bool(D.kernel_parallel.holds)
