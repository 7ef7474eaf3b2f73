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
from numerics.errors import UndecidedTruthError
from numerics.laplacian import diagnose
from numerics.laplacian.algebra import tsqr
from numerics.laplacian.blocks import DenseBlocks, FactoredBlocks, element, factored_blocks
from numerics.laplacian.checks import (
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
from numerics.laplacian.result import Check, make_check, skipped
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk
from tests.helpers import host, literal_constraints, rot

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


# ------------------------------------------------------------------------------------ the factored algebra, every method
# Batched walks, transports per batch element, low-rank factors, chunk sizes that cut every loop, the
# edges form's unit-matrix basis: each method against the same quantity computed from the explicit
# blocks B_ij = Σ_h a^h_ij T_h by literal numpy loops (O_ij = B_ij / P_ij on the support, 0 off it).
def _literal(P, a, T):
    """B and O ``(n, n, d, d)`` of one walk from its coefficients by loops (numpy float64)."""
    H, n, _ = a.shape
    B = np.zeros((n, n) + T.shape[-2:])
    O = np.zeros_like(B)
    for i in range(n):
        for j in range(n):
            for h in range(H):
                B[i, j] += a[h, i, j] * T[h]
            if P[i, j] > 0:
                O[i, j] = B[i, j] / P[i, j]
    return B, O


def _heads_case(seed, batch=(2,), H=3, n=4, d=3, dh=None, t_batched=False):
    """Coefficients a ``(*batch, H, n, n)`` with zeros (a partial support), P their head mean, and T
    ``(H, d, d)`` (or per batch element), or the factors W_O ``(H, d, dh)``, W_V ``(H, dh, d)``."""
    g = np.random.default_rng(seed)
    a = g.uniform(0.0, 1.0, (*batch, H, n, n)) * (g.uniform(0, 1, (*batch, H, n, n)) > 0.35)
    a[..., 0, :, :] += np.eye(n) * 0.2  # no empty row
    a[..., :, 0, n - 1] = 0.0  # one edge off the support in every element
    P = a.mean(-3)
    if dh is not None:
        WO, WV = g.standard_normal((H, d, dh)), g.standard_normal((H, dh, d))
        return P, a, WO @ WV, (WO, WV)
    T = g.standard_normal(((*batch,) if t_batched else ()) + (H, d, d))
    return P, a, T, None


def _fb(P, a, T, fac, chunk):
    kw = {"W_O": torch.tensor(fac[0]), "W_V": torch.tensor(fac[1])} if fac is not None else {}
    return FactoredBlocks(torch.tensor(P), torch.tensor(a), torch.tensor(T), chunk_elems=chunk, **kw)


CASES = {
    "heads": dict(),
    "transports per element": dict(t_batched=True, H=2),
    "low-rank factors": dict(dh=2),
    "one head": dict(H=1),
    "d = 1": dict(d=1),
}


@pytest.mark.parametrize("chunk", [1, 5, 7, 20, 40, 1 << 22])
@pytest.mark.parametrize("case", list(CASES))
def test_factored_algebra_batched_matches_literal_loops(case, chunk):
    """Every reduction of :class:`FactoredBlocks` on a batch of two walks, whatever the chunk size."""
    P, a, T, fac = _heads_case(1, **CASES[case])
    fb = _fb(P, a, T, fac, chunk)
    H, n, d = a.shape[-3], a.shape[-1], T.shape[-1]
    assert (fb.n, fb.d, fb.H, fb.batch, fb.terms) == (n, d, H, (2,), H)
    g = np.random.default_rng(2)
    pi = g.uniform(0.1, 1.0, (2, n))
    c = g.uniform(0.1, 2.0, (2, n, n))
    x = g.standard_normal((2, 3, n, d))
    fro = np.linalg.norm
    ref = {k: np.zeros((2, n, n)) for k in ("norms", "scale", "tnorms", "balance", "transpose", "gram")}
    Wx, Wtx, E = np.zeros_like(x), np.zeros_like(x), np.zeros((2, 3))
    for b in range(2):
        Tb = T[b] if T.ndim == 4 else T
        B, O = _literal(P[b], a[b], Tb)
        for i in range(n):
            for j in range(n):
                ref["norms"][b, i, j] = fro(B[i, j])
                ref["scale"][b, i, j] = sum(abs(a[b, h, i, j]) * fro(Tb[h]) for h in range(H))
                ref["tnorms"][b, i, j] = fro(O[i, j])
                ref["balance"][b, i, j] = fro(pi[b, i] * B[i, j] - pi[b, j] * B[j, i].T)
                ref["transpose"][b, i, j] = fro(O[j, i] - O[i, j].T)
                ref["gram"][b, i, j] = fro(c[b, i, j] ** 2 * O[i, j].T @ O[i, j] - np.eye(d))
                for p in range(3):
                    Wx[b, p, i] += B[i, j] @ x[b, p, j]
                    Wtx[b, p, j] += B[i, j].T @ x[b, p, i]
                    if P[b, i, j] > 0:
                        E[b, p] += 0.5 * pi[b, i] * P[b, i, j] * fro(x[b, p, i] - O[i, j] @ x[b, p, j]) ** 2
    got = {
        "norms": fb.norms(),
        "scale": fb.block_scale(),
        "tnorms": fb.transport_norms(),
        "balance": fb.balance_defect(torch.tensor(pi)),
        "transpose": fb.transpose_defect(),
        "gram": fb.gram_defect(torch.tensor(c)),
    }
    big = max(float(np.abs(ref["scale"]).max()), 1.0) ** 2 * 16
    for k, r in ref.items():
        assert got[k].shape == (2, n, n) and got[k].dtype == F, k
        np.testing.assert_allclose(got[k].numpy(), r, rtol=0, atol=tol(F, H * d * d, scale=big), err_msg=k)
    np.testing.assert_array_equal(fb.norm_floor().numpy(), tol(F, H) * fb.block_scale().numpy())
    xt = torch.tensor(x)
    s2 = big * float(np.abs(x).max()) ** 2
    for k, got_, r in (
        ("apply", fb.apply(xt), Wx),
        ("apply_t", fb.apply_t(xt), Wtx),
        ("energy", fb.edge_energy(torch.tensor(pi), xt), E),
    ):
        assert got_.shape == r.shape, k
        np.testing.assert_allclose(got_.numpy(), r, rtol=0, atol=tol(F, n * n * d, scale=s2), err_msg=k)


@pytest.mark.parametrize("chunk", [1, 7, 20, 1 << 22])
@pytest.mark.parametrize("case", list(CASES))
def test_factored_constraint_products_of_one_walk_match_the_literal_C(case, chunk):
    """``C x``, ``CᵀC x`` (row-chunked, and by the edge-Gram expansion) and the element views of a
    batch: judged by the explicit constraint matrix C of the element's own blocks."""
    P, a, T, fac = _heads_case(3, **CASES[case])
    fb = _fb(P, a, T, fac, chunk)
    n, d = a.shape[-1], T.shape[-1]
    x = np.random.default_rng(4).standard_normal((3, n, d))
    xt = torch.tensor(x)
    for b in range(2):
        e = element(fb, b)
        assert e.batch == () and e.counter is fb.counter and e.chunk_elems == chunk and not e.exact
        Tb = T[b] if T.ndim == 4 else T
        np.testing.assert_array_equal(e.T.numpy(), Tb)
        np.testing.assert_array_equal(e.P.numpy(), P[b])
        np.testing.assert_array_equal(e.a.numpy(), a[b])
        assert e.W_O is fb.W_O and e.W_V is fb.W_V  # the low-rank factors are kept (the cheaper products)
        B, O = _literal(P[b], a[b], Tb)
        C = literal_constraints(P[b], O)
        xf = x.reshape(3, n * d)
        Cx = (xf @ C.T).reshape(3, n, n, d)
        CtCx = (xf @ C.T @ C).reshape(3, n, d)
        s = max(float(np.abs(O).max()), 1.0) ** 2 * float(np.abs(x).max()) * n * 4
        np.testing.assert_allclose(e.constraints_apply(xt).numpy(), Cx, rtol=0, atol=tol(F, n * d, scale=s))
        np.testing.assert_allclose(e.constraints_gram_apply(xt).numpy(), CtCx, rtol=0, atol=tol(F, n * n * d, scale=s))
        np.testing.assert_allclose(e.constraints_gram_fast(xt).numpy(), CtCx, rtol=0, atol=tol(F, n * n * d, scale=s))
        # the edge Gram, computed once and kept: the second call gives the same tensor object
        assert e._edge_gram() is e._edge_gram()


@pytest.mark.parametrize("form", ["heads", "low-rank factors", "edges"])
def test_factored_algebra_computes_on_the_device_of_its_tensors(form):
    """Every method on the meta device, which stands in for an accelerator (shapes only; torch refuses
    a CPU tensor beside a meta one, so a temporary made on the default device fails)."""
    n, d = 4, 3
    if form == "edges":
        g = np.random.default_rng(7)
        w = ConnectionWalk.from_edges(
            torch.tensor(g.uniform(0.1, 1, (2, n, n))), torch.tensor(g.standard_normal((2, n, n, d, d)))
        )
        fb = factored_blocks(w.to(device="meta"), chunk_elems=5)
    else:
        P, a, T, fac = _heads_case(7, dh=2 if form == "low-rank factors" else None)
        meta = lambda v: torch.tensor(v).to("meta")
        kw = {"W_O": meta(fac[0]), "W_V": meta(fac[1])} if fac is not None else {}
        fb = FactoredBlocks(meta(P), meta(a), meta(T), chunk_elems=5, **kw)
    x = torch.zeros(2, 3, n, d, dtype=F, device="meta")
    pi = torch.ones(2, n, dtype=F, device="meta")
    c = torch.ones(2, n, n, dtype=F, device="meta")
    outs = [fb.norms(), fb.block_scale(), fb.norm_floor(), fb.transport_norms(), fb.balance_defect(pi)]
    outs += [fb.transpose_defect(), fb.gram_defect(c), fb.apply(x), fb.apply_t(x), fb.edge_energy(pi, x)]
    e = element(fb, 1)
    outs += [e.constraints_apply(x[0]), e.constraints_gram_apply(x[0]), e.constraints_gram_fast(x[0]), e._edge_gram()]
    assert [o.device.type for o in outs] == ["meta"] * len(outs)
    R = tsqr(iter([torch.zeros(2, 3, dtype=F, device="meta")]), 3, F, torch.device("meta"))
    assert R.device.type == "meta" and R.shape == (2, 3)
    # two batch dimensions: n and d are read from the trailing axes
    P4 = torch.full((2, 5, n, n), 1 / n, dtype=F, device="meta")
    assert DenseBlocks(P4, torch.zeros(2, 5, n, n, d, d, dtype=F, device="meta"), P4).n == n
    assert DenseBlocks(P4, P4, P4).terms == 1  # explicit blocks: one term each
    assert FactoredBlocks(P4, torch.zeros(2, 5, 2, n, n, dtype=F, device="meta"), torch.zeros(2, d, d, dtype=F)).n == n
    z = torch.zeros(2, n, n, d, d, dtype=F, device="meta")
    db = DenseBlocks(pi[..., None].expand(2, n, n), z, z)
    assert db.gram_defect(c).device.type == "meta" and db.gram_defect(c).shape == (2, n, n)


def test_factored_algebra_counts_single_vector_products():
    """``counter`` counts probes (vectors) through W, Wᵀ or a coefficient operator, shared by the
    element views: 2 walks × 3 probes per batched product, 3 per element product, 2 × 3 for CᵀC fast."""
    P, a, T, _ = _heads_case(5)
    fb = _fb(P, a, T, None, 1 << 22)
    x = torch.ones(2, 3, 4, 3, dtype=F)
    fb.apply(x)
    assert fb.counter == [6]
    fb.apply_t(x)
    assert fb.counter == [12]
    e = element(fb, 1)
    e.apply(x[0])
    assert fb.counter == [15]
    e.constraints_gram_fast(x[0])
    assert fb.counter == [21]
    e.constraints_gram_apply(x[0])  # row by row, without W products
    assert fb.counter == [21]
    assert FactoredBlocks(torch.tensor(P), torch.tensor(a), torch.tensor(T)).counter == [0]
    one = FactoredBlocks(torch.ones(1, 1, dtype=F), torch.ones(2, 1, 1, dtype=F) / 2, torch.tensor(T[:2]))
    one.constraints_gram_fast(torch.ones(5, 1, 3, dtype=F))  # n = 1: still one count per probe and product
    assert one.counter == [10]
    assert element(e, 0) is e  # an unbatched one is its own element


def test_factored_blocks_of_an_edges_walk_is_exact_in_the_unit_matrix_basis():
    """An edges-form walk in the basis of the d² unit matrices: coefficients a^{ab}_ij = B_ij[a, b],
    terms 1, no rounding floor, the block scale is ‖B_ij‖_F; every method as for explicit blocks."""
    g = np.random.default_rng(6)
    n, d = 3, 2
    P = g.uniform(0.1, 1.0, (2, n, n))
    P[:, 0, 2] = 0.0
    O = g.standard_normal((2, n, n, d, d))
    w = ConnectionWalk.from_edges(torch.tensor(P), torch.tensor(O))
    fb = factored_blocks(w, chunk_elems=5)
    assert fb.exact and fb.terms == 1 and d * d == fb.H and fb.batch == (2,) and fb.chunk_elems == 5
    B = P[..., None, None] * O
    for ab in range(d * d):
        np.testing.assert_array_equal(fb.a[:, ab].numpy(), B[..., ab // d, ab % d])
        # the coefficients of O are its own entries (0 off the support), not B/P recomputed
        np.testing.assert_array_equal(fb.w[:, ab].numpy(), np.where(P > 0, O[..., ab // d, ab % d], 0.0))
        np.testing.assert_array_equal(fb.T[ab].numpy(), np.eye(d * d)[ab].reshape(d, d))
    np.testing.assert_array_equal(fb.norm_floor().numpy(), np.zeros((2, n, n)))
    norms = np.linalg.norm(B, axis=(-1, -2))
    np.testing.assert_allclose(fb.norms().numpy(), norms, rtol=0, atol=1e-14 * norms.max())
    np.testing.assert_array_equal(fb.block_scale().numpy(), fb.norms().numpy())
    Oz = np.where(P[..., None, None] > 0, O, 0.0)
    np.testing.assert_allclose(fb.transport_norms().numpy(), np.linalg.norm(Oz, axis=(-1, -2)), rtol=0, atol=1e-13)
    x = g.standard_normal((2, n, d))
    for b in range(2):
        e = element(fb, b)
        assert e.exact and e.terms == 1
        np.testing.assert_array_equal(e.w.numpy(), fb.w[b].numpy())  # the entries of O, not B/P recomputed
        C = literal_constraints(P[b], Oz[b])
        ref = (x.reshape(2, n * d) @ C.T @ C).reshape(2, n, d)
        np.testing.assert_allclose(e.constraints_gram_fast(torch.tensor(x)).numpy(), ref, rtol=0, atol=1e-12)


def test_factored_blocks_of_an_edges_walk_refuses_its_basis_above_the_budget():
    """Three n²d² float64 arrays (n = 3, d = 2: 3·36·8 = 864 bytes) and a d²×d² identity (128 bytes):
    at 864 bytes it is built, one byte less is refused naming the walk."""
    from numerics.errors import MemoryBudgetError

    w = ConnectionWalk.from_edges(torch.full((3, 3), 1 / 3, dtype=F), torch.eye(2, dtype=F))
    assert factored_blocks(w, memory_budget=864).exact
    with pytest.raises(MemoryBudgetError) as exc:
        factored_blocks(w, memory_budget=863)
    assert exc.value.argument == "walk" and "unit-matrix coefficients" in str(exc.value)


def test_factored_blocks_of_a_heads_walk_keeps_heads_factors_and_chunk_size():
    """A heads-form walk: a = the attention (float64), P its head mean, T the head transports; with
    low-rank factors W_O, W_V kept (T_h = W_O[h] W_V[h]); a float32 walk is read in float64."""
    g = torch.Generator().manual_seed(8)
    A = torch.softmax(torch.randn(2, 4, 4, generator=g, dtype=F), -1)
    WO, WV = torch.randn(2, 3, 1, generator=g, dtype=F), torch.randn(2, 1, 3, generator=g, dtype=F)
    fb = factored_blocks(ConnectionWalk.from_factors(A, WO, WV), chunk_elems=9)
    assert fb.chunk_elems == 9 and not fb.exact and fb.terms == 2
    np.testing.assert_array_equal(fb.a.numpy(), A.numpy())
    np.testing.assert_array_equal(fb.P.numpy(), A.numpy().mean(0))
    np.testing.assert_array_equal(fb.W_O.numpy(), WO.numpy())
    np.testing.assert_array_equal(fb.W_V.numpy(), WV.numpy())
    np.testing.assert_allclose(fb.T.numpy(), WO.numpy() @ WV.numpy(), rtol=0, atol=1e-15)
    f32 = factored_blocks(ConnectionWalk.from_mha(A.float(), (WO @ WV).float()))
    assert f32.a.dtype == F and f32.T.dtype == F and f32.P.dtype == F and f32.W_O is None
    g32 = factored_blocks(ConnectionWalk.from_factors(A.float(), WO.float(), WV.float()))
    assert g32.W_O.dtype == F and g32.W_V.dtype == F
    e32 = factored_blocks(ConnectionWalk.from_edges(A[0].float(), torch.eye(2)))
    assert e32.P.dtype == F and e32.w.dtype == F and e32.a.dtype == F
    np.testing.assert_array_equal(f32.T.numpy(), (WO @ WV).float().double().numpy())


@pytest.mark.parametrize("batch", [(), (2,)])
def test_tsqr_gives_a_triangular_factor_of_the_stacked_chunks(batch):
    """RᵀR = XᵀX for X the row chunks stacked (an unbatched chunk is shared by every batch element);
    R upper triangular with at most m rows."""
    g = np.random.default_rng(9)
    chunks = [g.standard_normal((*batch, 2, 3)), g.standard_normal((1, 3)), g.standard_normal((*batch, 4, 3))]
    R = tsqr((torch.tensor(c) for c in chunks), 3, F, torch.device("cpu"), batch)
    X = np.concatenate([np.broadcast_to(c, (*batch, *c.shape[-2:])) for c in chunks], -2)
    assert R.shape == (*batch, 3, 3) and R.dtype == F
    np.testing.assert_allclose(
        np.swapaxes(R.numpy(), -1, -2) @ R.numpy(), np.swapaxes(X, -1, -2) @ X, rtol=0, atol=1e-12
    )
    np.testing.assert_array_equal(np.tril(R.numpy(), -1), 0.0)
    assert tsqr(iter(()), 4, F, torch.device("cpu"), batch).shape == (*batch, 0, 4)


# ------------------------------------------------------------------------------ numerics.laplacian.result: what a diagnosis returns
def test_check_to_keeps_every_field_and_the_given_fails():
    """``Check.to`` moves the tensors and keeps name, tol, reason, error and the *given* ``fails`` (a
    structural failure with a NaN residual fails; the default rule would call it undecided)."""
    c = make_check(
        "x", torch.tensor([float("nan"), 0.5], dtype=F), 1.0, "why", error=0.25, require=torch.tensor([False, True])
    )
    assert c.fails.tolist() == [True, False] and c.holds.tolist() == [False, True]
    m = c.to("cpu")
    assert (m.name, m.tol, m.reason, m.error) == ("x", 1.0, "why", 0.25)
    assert m.fails.tolist() == [True, False] and m.holds.tolist() == [False, True]
    assert torch.equal(m.residual.isnan(), c.residual.isnan()) and float(m.residual[1]) == 0.5
    meta = c.to("meta")
    assert (meta.holds.device.type, meta.fails.device.type, meta.residual.device.type) == ("meta",) * 3


def test_check_repr_counts_undecided_elements_only_when_there_are_some():
    c = make_check("stochastic", torch.tensor([0.0, 2.0], dtype=F), 1.0)
    assert repr(c) == "Check(stochastic: holds=1/2, max residual=2.000e+00, tol=1.0e+00, error=0.0e+00)"
    u = make_check("flat", torch.tensor([0.0, 1.0], dtype=F), 1.0, "close", error=0.5)
    assert (
        repr(u)
        == "Check(flat: holds=1/2 (1 undecided), max residual=1.000e+00, tol=1.0e+00, error=5.0e-01, reason='close')"
    )


def test_make_check_require_error_and_a_lower_precision_bound():
    """``require`` False fails even a NaN residual; ``error`` is kept; a float32 bound per element is
    compared in float64 (a 0-d float64 residual 1 + 1e-10 against a float32 bound 1 fails)."""
    c = make_check("r", torch.tensor([float("nan"), float("nan")], dtype=F), 1.0, require=torch.tensor([False, True]))
    assert c.fails.tolist() == [True, False] and c.undecided.tolist() == [False, True]
    assert make_check("e", torch.tensor(0.0, dtype=F), 1.0, error=0.125).error == 0.125
    b = make_check("b", torch.tensor(1 + 1e-10, dtype=F), torch.tensor([1.0], dtype=torch.float32))
    assert b.fails.tolist() == [True] and b.holds.tolist() == [False] and b.tol == 1.0


def test_skipped_is_undecided_on_the_given_device_with_its_reason():
    from numerics.laplacian.result import skipped

    s = skipped("flat", (2,), torch.device("cpu"), "skipped: too big")
    assert s.name == "flat" and s.reason == "skipped: too big" and math.isnan(s.tol)
    assert s.holds.tolist() == [False, False] and s.fails.tolist() == [False, False]
    assert s.residual.dtype == F and bool(s.residual.isnan().all()) and s.undecided.all()
    m = skipped("flat", (3,), torch.device("meta"), "why")
    assert (m.holds.device.type, m.fails.device.type, m.residual.device.type) == ("meta",) * 3
    assert m.residual.shape == (3,) and m.holds.dtype == torch.bool


def _result(holds: dict[str, list[bool]], scale, si_tol=0.25):
    """A LaplacianDiagnostics whose checks hold where ``holds`` says (others hold everywhere)."""
    from numerics.laplacian.result import CHECK_NAMES, LaplacianDiagnostics

    b = len(scale)
    checks = {}
    for k in CHECK_NAMES:
        h = torch.tensor(holds.get(k, [True] * b))
        checks[k] = make_check(k, torch.where(h, 0.0, 1.0).to(F), si_tol if k == "scaled_isometry" else 0.5)
    z = torch.zeros(b, dtype=F)
    return LaplacianDiagnostics(
        **checks, pi=torch.full((b, 2), 0.5, dtype=F), pi_unique=torch.ones(b, dtype=torch.bool), block_pi=z,
        rho=z + 1, scale=torch.tensor(scale, dtype=F), transport_scale=z, spectrum=None, kernel_dim=None,
        parallel_dim=None, n_components=z, n=2, d=1,
    )  # fmt: skip


def test_hypotheses_t3_is_the_conjunction_of_a_b_c():
    """All 16 combinations of stochastic, positive π, detailed balance, metric compatibility."""
    combos = [[bool(m >> k & 1) for k in range(4)] for m in range(16)]
    names = ["stochastic", "positive_stationary", "detailed_balance", "metric_compatible"]
    D = _result({k: [c[i] for c in combos] for i, k in enumerate(names)}, [1.0] * 16)
    assert D.hypotheses_t3().tolist() == [all(c) for c in combos]
    assert D.failing((0,)) == names and D.failing((15,)) == []


def test_is_connection_laplacian_needs_scale_one_within_four_tolerances():
    """|s − 1| ≤ 4·tol(scaled_isometry): tol = 0.25, so s = 2 (exactly 4 tol) is one, 2.125 is not,
    1.5 is; and it needs scaled isometry and block detailed balance."""
    D = _result(
        {"scaled_isometry": [True, True, True, False], "block_detailed_balance": [True] * 4}, [2.0, 2.125, 1.5, 1.0]
    )
    assert D.is_connection_laplacian().tolist() == [True, False, True, False]
    E = _result({"block_detailed_balance": [False]}, [1.0])
    assert E.is_connection_laplacian().tolist() == [False]


SWAP = ConnectionWalk.from_edges(torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F), torch.eye(1, dtype=F))


def test_summary_is_a_fixed_width_table_with_the_spectrum():
    """The swap walk (n = 2, d = 1): every check holds, Δ has eigenvalues 0 and 2, π = (½, ½) unique."""
    from numerics.laplacian import CHECK_NAMES, diagnose

    D = diagnose(SWAP)
    lines = D.summary().split("\n")
    assert lines[0] == "condition               status        residual        tol      error  reason"
    assert len(lines) == 1 + len(CHECK_NAMES) + 2
    for line, k in zip(lines[1:], CHECK_NAMES):
        c = getattr(D, k)
        assert line.startswith(f"{k:<24}holds     ") and line.endswith("  ") and c.reason is None, line
    assert lines[-2] == "scale s = 1; rho = 1; pi unique = True"
    assert lines[-1] == "spectrum of Δ: {0, 2}"
    S = diagnose(SWAP, method="dense", max_dense=0)
    rows = S.summary().split("\n")
    assert len(rows) == 1 + len(CHECK_NAMES) + 1 and rows[-1].startswith("scale s = 1")
    row = next(r for r in rows if r.startswith("flat"))
    assert row.startswith("flat                    undecided          nan")
    assert row.endswith("  skipped: n·d = 2 > max_dense = 0 (use method='factored' or numerics.spectra)")


def test_as_dict_reports_every_check_with_its_fields_scale_and_pi():
    from numerics.laplacian import CHECK_NAMES, diagnose

    D = diagnose(SWAP, method="dense", max_dense=0)
    out = D.as_dict()
    assert list(out) == [*CHECK_NAMES, "scale", "pi"]
    for k in CHECK_NAMES:
        c = getattr(D, k)
        v = out[k]
        assert list(v) == ["status", "holds", "residual", "tol", "error", "reason"]
        assert v["status"] == c.status() and v["holds"] is bool(c.holds) and v["reason"] == c.reason
        assert v["tol"] == c.tol or (math.isnan(v["tol"]) and math.isnan(c.tol))
        assert v["error"] == c.error and type(v["residual"]) is float
    assert out["stochastic"]["holds"] is True and out["stochastic"]["residual"] == 0.0
    assert out["flat"]["holds"] is False and math.isnan(out["flat"]["residual"])
    assert out["scale"] == 1.0 and out["pi"] == [0.5, 0.5]


C128 = torch.complex128


@pytest.mark.parametrize(
    "ev, kw, expected",
    [
        # sorted by real part; conjugate pairs merged (the positive imaginary part shown); repeats counted
        ([2, 0, 1 + 1j, 1 - 1j, 0], {}, "{0×2, 1±1i, 2}"),
        ([0, 0, 0, 3], {}, "{0×3, 3}"),
        ([0.123456 + 0.654321j, 0.123456 - 0.654321j], {}, "{0.1235±0.6543i}"),
        ([0.123456], {"digits": 2}, "{0.12}"),
        ([-0.00001], {}, "{0}"),  # −0 shown as 0
        ([1 + 0.00003j, 1 - 0.00003j], {}, "{1×2}"),  # |Im| below 10⁻⁴: real
        ([1 + 0.0001j, 1 - 0.0001j], {}, "{1±0.0001i}"),  # exactly 10⁻⁴: shown
        ([0.5 + 0.5j, 0.5 - 0.5j], {}, "{0.5±0.5i}"),
        # equal at 4 digits: ordered by the imaginary part, not by the hidden digits of the real part
        ([1.00001 + 0.5j, 1.00001 - 0.5j, 1.00004 + 0.2j, 1.00004 - 0.2j], {}, "{1±0.2i, 1±0.5i}"),
        ([float(k) for k in range(12, 0, -1)], {}, "{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}"),
        ([float(k) for k in range(13, 0, -1)], {}, "{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, …}"),
        ([float(k) for k in range(5, 0, -1)], {"max_items": 3}, "{1, 2, 3, …}"),
    ],
)
def test_format_spectrum_rounds_merges_sorts_and_truncates(ev, kw, expected):
    from numerics.laplacian import format_spectrum

    assert format_spectrum(torch.tensor(ev, dtype=C128), **kw) == expected


# ------------------------------------------------------------------------------ numerics.laplacian.checks: error bounds
# Each check's ``error`` (the rounding band of its residual, theory.rounding.rounding_error(size, scale)) restated
# from the module's documented bounds with numpy norms of the literal blocks: an edges-form walk has one term
# per block, so ``terms`` = 1 in every size.
def _scaled_rotations(n, seed):
    g = np.random.default_rng(seed)
    P = g.uniform(0.1, 1.0, (n, n))
    P /= P.sum(-1, keepdims=True)
    a = g.uniform(0.5, 2.0, (n, n))
    O = np.stack([np.stack([a[i, j] * rot(g.uniform(0, 6)) for j in range(n)]) for i in range(n)])
    return P, O


@pytest.mark.parametrize("kind", ["dense", "factored"])
@pytest.mark.parametrize("batched", [False, True])
def test_error_bounds_of_the_algebraic_checks_restated(kind, batched):
    from numerics.laplacian import diagnose
    from theory.rounding import rounding_error

    P, O = _scaled_rotations(3, 1)
    Pb, Ob = (np.stack([P, P[::-1, ::-1]]), np.stack([O, O[::-1, ::-1]])) if batched else (P, O)
    D = diagnose(ConnectionWalk.from_edges(host(Pb), host(Ob)), method=kind)
    n, d = 3, 2
    Ps, Os = (Pb, Ob) if batched else (Pb[None], Ob[None])
    fro = np.linalg.norm(Os, axis=(-1, -2))  # ‖O_ij‖_F = transport scale of an edges walk
    bs = Ps * fro  # ‖B_ij‖_F = block scale
    pi = D.pi.reshape(-1, n).numpy()
    bpi = D.block_pi.reshape(-1, n).numpy()
    want = {
        "stochastic": rounding_error(n + 1, np.abs(Ps.sum(-1)).max() + 1.0),
        "orthogonal": rounding_error(1 + d + 1, (3 * fro**2 + math.sqrt(d)).max()),
        "transpose_symmetric": rounding_error(1 + 1 + 1, (fro + np.swapaxes(fro, -1, -2)).max()),
        "self_adjoint": rounding_error(
            1 + 2 + 1, (pi[:, :, None] * bs + pi[:, None, :] * np.swapaxes(bs, -1, -2)).max()
        ),
        "block_detailed_balance": rounding_error(
            1 + 2 + 1, (bpi[:, :, None] * bs + bpi[:, None, :] * np.swapaxes(bs, -1, -2)).max()
        ),
    }
    want["metric_compatible"] = max(want["orthogonal"], want["transpose_symmetric"])
    want["detailed_balance"] = rounding_error(2, (pi[:, :, None] * Ps).max())  # the flows π_i P_ij
    # πP − ρπ (ρ = 1): max π·(max column sum of P + ρ)
    want["positive_stationary"] = rounding_error(n + 1, pi.max() * (Ps.sum(-2).max() + 1.0))
    want["dirichlet"] = rounding_error(n * d + 1 + 2, 1.0)  # relative: sums over n·d entries of one-term products
    # scaled isometry: c = P/β = √d/‖O‖, so c²‖O‖² = d, plus √d, plus twice the relative error of β
    # (rounding_error(1 + d + 1, 1), the heads' cancellation ratio being 1) times d; or that error times n + 1
    rel_beta = rounding_error(1 + d + 1, 1.0)
    want["scaled_isometry"] = max(
        rounding_error(1 + d + 1, 3 * d + math.sqrt(d) + 2 * rel_beta * d), rel_beta * (n + 1)
    )
    for k, v in want.items():
        assert getattr(D, k).error == pytest.approx(v, rel=1e-12, abs=0), k


def test_a_one_way_edge_fails_detailed_balance_however_small_its_flow():
    """0 → 2 with P = 10⁻²⁰ and 2 → 1 with no reverse edges: π > 0 (π₂ ≈ 10⁻²⁰), every flow imbalance
    is ≈ 10⁻²⁰ plus the rounding of π's O(1) entries (the BLAS decides which: 0 on one machine, 5.6e-17
    on another), far below the tolerance and within the residual's own error, yet the check fails: exact
    balance needs P_ji > 0."""
    P = torch.tensor([[0.5, 0.5 - 1e-20, 1e-20], [0.5, 0.5, 0.0], [0.0, 1.0, 0.0]], dtype=F)
    st_ = stationary(P, F)
    assert bool(st_.positive)
    c = check_detailed_balance(P, st_, F)
    assert float(c.residual) <= float(c.error) < float(c.tol)
    assert bool(c.fails) and not bool(c.holds) and "edge 0→2 has no reverse edge" in c.reason


def test_a_given_pi_is_named_in_its_errors():
    """``stationary(P, tdt, pi)``: a π that is not a tensor, or of another shape than P's rows (batched
    P (2, 3, 3) needs π (2, 3)), is refused naming ``pi``."""
    from numerics.errors import ConnwalkError, ShapeError

    P = torch.full((2, 3, 3), 1 / 3, dtype=F)
    with pytest.raises(ConnwalkError) as exc:
        stationary(P, F, pi="abc")
    assert exc.value.argument == "pi"
    with pytest.raises(ShapeError) as exc:
        stationary(P, F, pi=torch.ones(4, dtype=F))
    assert exc.value.argument == "pi" and str(exc.value).startswith("pi: expected (2, 3), got (4,)"), str(exc.value)


def test_scaled_isometry_error_of_a_long_walk_is_the_row_sum_error():
    """n = 8: the row sums of β carry (n + 1)·rel_β, more than the Gram term: the error is 9·rel_β."""
    from numerics.laplacian import diagnose
    from theory.rounding import rounding_error

    P, O = _scaled_rotations(8, 2)
    D = diagnose(ConnectionWalk.from_edges(host(P), host(O)))
    rel_beta = rounding_error(1 + 2 + 1, 1.0)
    assert rel_beta * 9 > rounding_error(1 + 2 + 1, 3 * 2 + math.sqrt(2) + 4 * rel_beta)
    assert D.scaled_isometry.error == pytest.approx(rel_beta * 9, rel=1e-12, abs=0)


def test_check_stochastic_error_of_an_empty_batch():
    """No walk in the batch: no row sum, the error scale is 0 + 1 (rounding_error(n + 1, 1))."""
    from theory.rounding import rounding_error

    c = check_stochastic(torch.zeros(0, 3, 3, dtype=F), F)
    assert c.residual.shape == (0,) and c.reason is None
    assert c.error == rounding_error(4, 1.0)


def test_spectrum_error_is_the_backward_error_for_one_plus_the_walk_norm():
    from numerics.laplacian.checks import spectrum_error
    from theory.rounding import rounding_error

    assert spectrum_error(6, 2.5) == rounding_error(6, 3.5)
    assert spectrum_error(6, 0.0) == rounding_error(6, 1.0)
    assert spectrum_error(6, -1.0) == rounding_error(6, 1.0)  # a norm is never negative


def test_spectrum_checks_carry_the_error_and_fail_the_scaled_form_without_a_scale():
    t = lambda v: torch.tensor(v, dtype=F)
    si_no = make_check("scaled_isometry", t([1.0, 0.0]), 1e-12)
    a, b, c = spectrum_checks(
        t([0.0, 0.0]), t([0.0, 0.0]), t([2.0, 2.0]), t([1.0, 1.0]), t([1.0, 1.0]), si_no, 1e-12, error=0.5
    )
    assert (a.error, b.error, c.error) == (0.5, 0.5, 0.5)
    # where the scaled isometry fails, the scaled spectrum check fails (it has no scale s); where it holds,
    # a zero residual is undecided within the error 0.5 of a tolerance 1e-12
    assert c.fails.tolist() == [True, False] and c.undecided.tolist() == [False, True]


def test_metric_compatible_combines_decisions_errors_and_tolerances():
    """(c) holds where both hold, fails where either fails, is undecided otherwise (an undecided
    orthogonality with a holding symmetry stays undecided); error and tol are the larger ones."""
    from numerics.laplacian.checks import check_metric_compatible

    t = lambda v: torch.tensor(v, dtype=F)
    orth = make_check("orthogonal", t([0.0, 2.0, 1.0, 0.0]), 1.0, error=0.25)  # holds, fails, undecided, holds
    ts = make_check("transpose_symmetric", t([0.0, 0.0, 0.0, 3.0]), 2.0, error=0.125)  # holds, holds, holds, fails
    mc = check_metric_compatible(orth, ts)
    assert mc.name == "metric_compatible" and mc.reason is None
    assert mc.holds.tolist() == [True, False, False, False]
    assert mc.fails.tolist() == [False, True, False, True]
    assert mc.residual.tolist() == [0.0, 2.0, 1.0, 3.0] and mc.tol == 2.0 and mc.error == 0.25


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
    ts_, common, s_max, _ = transport_scale(alg3, F)
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
    _, common, s_max, _ = transport_scale(alg, F)
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
    _, cm, sm, _ = transport_scale(algs, F)
    assert not bool(check_dirichlet(algs, sts, cm, sm, F, 3, 0).holds)


def test_spectrum_checks_from_extremes():
    t = lambda v: torch.tensor(v, dtype=F)
    from numerics.laplacian.result import make_check

    si_yes = make_check("scaled_isometry", t(0.0), 1e-12)
    si_no = make_check("scaled_isometry", t(1.0), 1e-12)
    a, b, c = spectrum_checks(t(0.0), t(0.0), t(2.0), t(1.0), t(1.0), si_yes, 1e-12)
    assert bool(a.holds) and bool(b.holds) and bool(c.holds)
    a, b, c = spectrum_checks(t(0.5), t(-0.1), t(1.0), t(1.2), t(0.5), si_yes, 1e-12)
    assert float(a.residual) == pytest.approx(0.5) and float(b.residual) == pytest.approx(0.2)
    assert float(c.residual) == pytest.approx(0.6)  # Re z = −0.1 is 0.6 below 1 − s = 0.5
    _, _, c = spectrum_checks(t(0.0), t(0.0), t(2.0), t(1.0), t(1.0), si_no, 1e-12)
    assert not bool(c.holds) and bool(torch.isnan(c.residual)) and "scaled isometry" in c.reason


# ==================================================================================================
# Small deterministic cases of each check function (exact residuals, the tolerances they are compared
# with, reasons, batched inputs), judged by closed forms and numpy loops; ``host`` builds a float64
# CPU tensor. (Formerly in test_laplacian_mutants.py, with the dense ones now in test_diagnose_dense.py.)


# ------------------------------------------------------------------------------ numerics.laplacian.checks: Check, make_check
def test_check_repr_bool_and_defined():
    c = Check("x", torch.tensor(True), host(0.5), 1e-3)
    assert repr(c) == "Check(x: holds, residual=5.000e-01, tol=1.0e-03, error=0.0e+00)"
    assert bool(c) and bool(c.defined) and c.status() == "holds"
    c2 = Check("y", torch.tensor([True, False, True]), host([0.1, float("nan"), 0.3]), 0.5, "why")
    assert repr(c2) == (
        "Check(y: holds=2/3 (1 undecided), max residual=3.000e-01, tol=5.0e-01, error=0.0e+00, reason='why')"
    )
    with pytest.raises(UndecidedTruthError, match=r"y is undecided at 1 of 3 .*use \.holds.*\.fails.*\.status"):
        bool(c2)  # undecided somewhere: no two-valued truth value (was False: "undecided" read as "fails")
    assert c2.defined.tolist() == [True, False, True]
    # a NaN residual (not computed) is undecided, not a failure
    assert c2.fails.tolist() == [False, False, False] and c2.undecided.tolist() == [False, True, False]
    assert [c2.status((i,)) for i in range(3)] == ["holds", "undecided", "holds"]
    c3 = Check("z", torch.tensor([True, True]), host([float("nan"), float("nan")]), 0.5)
    assert "max residual=-1.000e+00" in repr(c3)  # NaN shown as −1 in the maximum
    assert bool(c3)
    c4 = Check("w", torch.tensor(False), host(0.7), 0.5, error=0.25)
    assert c4.status() == "fails" and "error=2.5e-01" in repr(c4)
    assert not bool(c4)  # decided: fails
    c5 = Check("f", torch.tensor([True, False]), host([0.1, 0.9]), 0.5)  # decided everywhere, one fails
    assert not bool(c5) and c5.fails.tolist() == [False, True]
    with pytest.raises(ValueError, match="both hold and fail"):
        Check("v", torch.tensor(True), host(0.1), 0.5, fails=torch.tensor(True))


def test_bool_of_an_undecided_check_raises_a_type_error_like_sympy():
    """Three values do not fit in a bool: ``bool()`` of a check undecided anywhere raises
    ``UndecidedTruthError`` (a ``ConnwalkError`` and a ``TypeError``, as SymPy's undecidable relational
    is); a skipped check (not computed) is undecided too."""
    import sympy as sp

    from numerics.errors import ConnwalkError

    und = make_check("u", host(0.5), 0.5, error=0.1)  # within its error of the bound
    assert und.status() == "undecided"
    for exc in (UndecidedTruthError, ConnwalkError, TypeError):
        with pytest.raises(exc):
            bool(und)
    with pytest.raises(UndecidedTruthError, match="not computed here"):
        bool(skipped("s", (), "cpu", "not computed here"))
    with pytest.raises(TypeError):  # the convention followed
        bool(sp.Symbol("x") < 1)


def test_status_of_a_batch_names_the_index_and_the_shape():
    """``status()`` selects one element: without an index on a batched check, with an index of the
    wrong length or out of range, a ``BatchIndexError`` (an ``IndexError``) names ``index`` and the
    batch shape; an int, a negative index and numpy / torch integers select as in numpy."""
    from numerics.errors import BatchIndexError

    c = make_check("b", host([[0.1, 0.9], [0.5, 0.2]]), 0.5, error=0.01)
    assert c.status((0, 0)) == "holds" and c.status((0, 1)) == "fails" and c.status((1, 0)) == "undecided"
    assert c.status((-1, -1)) == "holds" and c.status((np.int64(1), torch.tensor(0))) == "undecided"
    for bad, what in [((), "batch shape (2, 2)"), ((5, 0), "out of range"), ((0,), "batch shape (2, 2)")]:
        with pytest.raises(BatchIndexError, match=r"^index: ") as exc:
            c.status(bad)
        assert exc.value.argument == "index" and what in str(exc.value) and isinstance(exc.value, IndexError)
    v = make_check("v", host([0.1, 0.9, 0.2]), 0.5)
    assert v.status(1) == "fails"
    with pytest.raises(BatchIndexError, match=r"index: \(5,\) is out of range for batch shape \(3,\)"):
        v.status((5,))
    with pytest.raises(BatchIndexError, match="not an int"):
        v.status("0")
    with pytest.raises(BatchIndexError, match=r"give no index"):
        make_check("s", host(0.1), 0.5).status((0,))


def test_diagnostics_element_methods_name_the_index():
    """``summary`` / ``as_dict`` / ``failing`` / ``undecided`` of a batched diagnosis need one batch
    element: the same typed error as ``Check.status``."""
    from numerics.errors import BatchIndexError

    A = torch.full((2, 1, 3, 3), 1 / 3, dtype=F)
    D = diagnose(ConnectionWalk.from_mha(A, torch.eye(2, dtype=F)[None]), method="dense", max_dense=0)
    assert D.failing((1,)) == D.failing(1) and "stochastic" in D.summary((0,))
    for method in (D.summary, D.as_dict, D.failing, D.undecided):
        with pytest.raises(BatchIndexError, match=r"^index: .*batch shape \(2,\)"):
            method()
        with pytest.raises(BatchIndexError, match=r"^index: \(2,\) is out of range"):
            method((2,))


def test_make_check_boundary_nan_dtype_and_reason():
    c = make_check("m", torch.tensor([0.5, 0.25, float("nan")], dtype=torch.float32), 0.25)
    assert c.residual.dtype == F and c.holds.tolist() == [False, True, False]  # ≤ at the bound
    assert c.fails.tolist() == [True, False, False]  # NaN: undecided, never holds nor fails
    assert isinstance(c.tol, float) and c.tol == 0.25 and c.reason is None and c.name == "m"
    forced = make_check("m", host([0.0, float("nan"), 0.0]), 1.0, "", require=torch.tensor([False, True, True]))
    assert forced.holds.tolist() == [False, False, True] and forced.reason is None
    assert forced.fails.tolist() == [True, False, False]  # a failed requirement fails whatever the residual
    assert make_check("m", host(0.0), 1.0, "r").reason == "r"


def test_make_check_is_undecided_within_its_error_of_the_bound():
    """Exact binary fractions: residual r with error e against bound 1 holds iff r + e ≤ 1, fails
    iff r − e > 1, else undecided (the edges themselves pin ≤ against <)."""
    r = host([0.5, 0.75, 0.875, 1.0, 1.125, 1.25, 1.5])
    c = make_check("m", r, 1.0, error=0.25)
    assert [c.status((i,)) for i in range(7)] == [
        "holds",
        "holds",  # 0.75 + 0.25 = 1: at the bound holds
        "undecided",
        "undecided",
        "undecided",
        "undecided",  # 1.25 − 0.25 = 1: not above the bound
        "fails",
    ]
    per = make_check("m", host([0.5, 0.5]), host([1.0, 0.25]))  # a bound per batch element
    assert per.holds.tolist() == [True, False] and per.fails.tolist() == [False, True] and per.tol == 1.0


# ------------------------------------------------------------------------------ numerics.laplacian.checks: (a), π, (b)
def test_check_stochastic_residual_tolerance_and_reason():
    from numerics.laplacian.checks import check_stochastic

    P = host([[[0.5, 0.5], [0.2, 0.7]], [[0.5, 0.5], [0.5, 0.5]]])
    c = check_stochastic(P, F)
    assert c.residual.tolist() == pytest.approx([0.1, 0.0], abs=1e-15)
    assert c.holds.tolist() == [False, True] and c.tol == tol(F, 2) and c.reason is None
    assert check_stochastic(P, F, row_tol=0.2).holds.tolist() == [True, True]
    assert check_stochastic(P, F, row_tol=0.05).tol == 0.05
    z = check_stochastic(host([[0.0, 0.0], [0.5, 0.5]]), F)
    assert z.reason == "zero row(s) in P: not a walk" and float(z.residual) == 1.0
    assert check_stochastic(host([[1.0, 0.0], [0.0, 1.0]]), torch.float32).tol == tol(torch.float32, 2)


def test_stationary_with_a_given_pi():
    from numerics.errors import NonFiniteError, ShapeError
    from numerics.laplacian.checks import stationary
    from tests.helpers import raises_named

    P = host([[0.5, 0.5], [0.25, 0.75]])  # π = (1/3, 2/3)
    st_ = stationary(P, F)
    assert not st_.given and st_.pi.tolist() == pytest.approx([1 / 3, 2 / 3], abs=1e-15)
    assert bool(st_.check.holds) and st_.check.tol == tol(F, 2) and st_.check.reason is None
    g = stationary(P, F, host([2.0, 4.0]))  # normalised to sum 1
    assert g.given and g.pi.tolist() == pytest.approx([1 / 3, 2 / 3], abs=1e-15) and bool(g.check.holds)
    u = stationary(P, F, host([1.0, 1.0]))  # not stationary: ‖πP − π‖_∞ = |0.375 − 0.5| = 0.125
    assert float(u.check.residual) == pytest.approx(0.125, abs=1e-15) and not bool(u.check.holds)
    assert bool(u.positive) and bool(u.defined)
    # a stationary π with a zero entry is not positive (transient state 2)
    Pt = host([[1.0, 0.0], [0.5, 0.5]])
    z = stationary(Pt, F, host([1.0, 0.0]))
    assert float(z.check.residual) == 0.0 and not bool(z.check.holds) and not bool(z.positive)
    # non-stochastic P: ρ = 2, the given π is stationary for ρ
    r = stationary(2 * P, F, host([1.0, 2.0]))
    assert float(r.check.residual) <= 1e-15 and bool(r.check.holds)
    raises_named(ShapeError, "pi", lambda: stationary(P, F, host([1.0, 2.0, 3.0])))
    raises_named(NonFiniteError, "pi", lambda: stationary(P, F, host([1.0, float("nan")])))


def test_detailed_balance_residual_tolerance_and_one_way_edges():
    from numerics.laplacian.checks import check_detailed_balance, stationary

    # batch: a non-reversible doubly stochastic walk (symmetric support) and one with one-way edges
    P0 = np.array([[0.0, 0.7, 0.3], [0.3, 0.0, 0.7], [0.7, 0.3, 0.0]])  # π uniform
    P1 = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.5, 0.0, 0.5]])  # 1→2 and 2→0 one-way
    P = host(np.stack([P0, P1]))
    st_ = stationary(P, F)
    db = check_detailed_balance(P, st_, F)
    pi1 = st_.pi[1].numpy()
    for b, (Pb, pib) in enumerate(((P0, np.full(3, 1 / 3)), (P1, pi1))):
        Fm = pib[:, None] * Pb
        assert float(db.residual[b]) == pytest.approx(np.abs(Fm - Fm.T).max(), abs=1e-15)
    assert float(db.residual[0]) == pytest.approx(0.4 / 3, abs=1e-15)
    assert db.holds.tolist() == [False, False]
    assert "edge 1→2 has no reverse edge" in db.reason and db.reason.startswith("support of P not symmetric")
    # tolerance: tol(n, scale = max π_i P_ij) times the π solve's condition number (≥ 1)
    Fmax = max(0.7 / 3, float((st_.pi[1][:, None] * P[1]).max()))
    kappa = max(float(st_.info.condition.max()), 1.0)
    assert db.tol == pytest.approx(tol(F, 3, scale=Fmax) * kappa, rel=1e-12, abs=0)
    # a given π: no condition factor
    R = host([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])  # reversible, π = (¼, ½, ¼)
    given = stationary(R, F, host([1.0, 2.0, 1.0]))
    dg = check_detailed_balance(R, given, F)
    assert bool(dg.holds) and dg.reason is None
    assert dg.tol == pytest.approx(tol(F, 3, scale=0.25), rel=1e-12, abs=0)
    # no positive π: the reason says so, and the check fails even with zero residual
    Pt = host([[1.0, 0.0], [0.5, 0.5]])
    dt = check_detailed_balance(Pt, stationary(Pt, F), F)
    assert not bool(dt.holds) and dt.reason.startswith("no positive π: ")
    assert "no reverse edge" not in dt.reason  # π not positive: the one-way remark is not added


def test_one_way_edge_reason_names_the_first_positive_batch_element():
    from numerics.laplacian.checks import check_detailed_balance, stationary

    P0 = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])  # first one-way edge 0→1
    P1 = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.5, 0.0, 0.5]])  # first one-way edge 1→2
    Pt = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])  # transient states, one-way edges
    P = host(np.stack([Pt, P1, P0]))
    db = check_detailed_balance(P, stationary(P, F), F)
    assert "edge 1→2 has no reverse edge" in db.reason  # element 1: the first with π > 0
    assert db.holds.tolist() == [False, False, False]


# ------------------------------------------------------------------------------ numerics.laplacian.checks: gauge-free π
def test_block_pi_values_and_reasons():
    from numerics.laplacian.checks import block_pi

    # N_ij = S_ij / π*_i with S symmetric: π*_i N_ij = S_ij balances, so the block π is π*
    pis = np.array([0.2, 0.3, 0.5])
    S = np.array([[0.1, 0.4, 0.2], [0.4, 0.0, 0.3], [0.2, 0.3, 0.6]])
    pi, why = block_pi(host(S / pis[:, None]))
    assert pi.tolist() == pytest.approx(pis.tolist(), abs=1e-14) and why == ""
    z, why = block_pi(host([[1.0, 1.0], [0.0, 0.0]]))
    assert bool(torch.isnan(z).all()) and why == "a block row of B is zero: no positive π balances it"
    tr, why = block_pi(host([[1.0, 0.0], [1.0, 1.0]]))
    assert bool(torch.isnan(tr).all()) and why == "the support of B has transient states: no positive π"
    dc, why = block_pi(host([[2.0, 0.0], [0.0, 3.0]]))
    # π ∝ π'/r, π' = (½, ½) for N/r (each class weighted equally), r = (2, 3): π = (0.6, 0.4)
    assert dc.tolist() == pytest.approx([0.6, 0.4], abs=1e-15)
    assert why == "support of B is disconnected: block π weights each class equally"
    _, why = block_pi(host([[1.0, 1e-20], [1e-20, 1.0]]))
    assert why.startswith("block π undefined: π is ill-conditioned")


def _blocks(P: np.ndarray, O: np.ndarray, floor=None):
    from numerics.laplacian.blocks import DenseBlocks

    Pt, Ot = host(P), host(O)
    Ot = torch.where((Pt > 0)[..., None, None], Ot, torch.zeros_like(Ot))
    return DenseBlocks(Pt, Pt[..., None, None] * Ot, Ot, None if floor is None else host(floor))


def test_block_detailed_balance_residual_and_tolerance_against_loops():
    from numerics.laplacian.checks import check_block_detailed_balance

    P = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])  # π = (¼, ½, ¼)
    R = rot(0.4)
    O = np.empty((3, 3, 2, 2))
    for i in range(3):
        for j in range(3):
            O[i, j] = R if i != j else np.eye(2)  # O_ji = O_ij, not O_ijᵀ: balanced norms only
    c, bpi = check_block_detailed_balance(_blocks(P, O), F)
    pis = np.array([0.25, 0.5, 0.25])
    assert bpi.tolist() == pytest.approx(pis.tolist(), abs=1e-14)
    B = P[..., None, None] * O
    res = max(np.linalg.norm(pis[i] * B[i, j] - pis[j] * B[j, i].T) for i in range(3) for j in range(3))
    assert float(c.residual) == pytest.approx(res, rel=1e-12, abs=0) and res > 0.1 and not bool(c.holds)
    N = np.linalg.norm(B, axis=(-2, -1))
    gscale = max((pis[:, None] * N).max(), N.max() / 3)
    assert c.tol == pytest.approx(tol(F, 6, scale=gscale), rel=1e-12, abs=0) and c.reason is None
    # the block-norm floor: a block at or below it counts as absent (a cancelled head sum)
    P2 = np.array([[0.5, 1e-3], [0.0, 1.0]])
    O2 = np.broadcast_to(np.eye(1), (2, 2, 1, 1)).copy()
    floor = np.array([[0.0, 1e-3], [0.0, 0.0]])
    c2, _ = check_block_detailed_balance(_blocks(P2, O2, floor), F)
    assert c2.reason == "support of B is disconnected: block π weights each class equally"
    c3, _ = check_block_detailed_balance(_blocks(P2, O2), F)
    assert c3.reason == "the support of B has transient states: no positive π" and not bool(c3.holds)
    assert bool(torch.isnan(c3.residual))


def test_block_detailed_balance_tolerance_scale_from_tiny_pi():
    from numerics.laplacian.checks import check_block_detailed_balance

    # N = S / π* (S symmetric, π* = (0.9, 0.1)): max π_i N_ij = max S = 1 < max N / n = 5
    pis = np.array([0.9, 0.1])
    N = np.array([[0.0, 0.01], [0.01, 1.0]]) / pis[:, None]
    O = np.ones((2, 2, 1, 1))
    c, bpi = check_block_detailed_balance(_blocks(N, O), F)
    assert bpi.tolist() == pytest.approx(pis.tolist(), abs=1e-14)
    assert (pis[:, None] * N).max() < N.max() / 2
    assert c.tol == pytest.approx(tol(F, 2, scale=N.max() / 2), rel=1e-12, abs=0)


# ------------------------------------------------------------------------------ numerics.laplacian.checks: (c)
def test_orthogonal_transpose_symmetric_metric_compatible_tolerances():
    from numerics.laplacian.checks import (
        check_metric_compatible,
        check_orthogonal,
        check_transpose_symmetric,
    )

    P = np.full((2, 2), 0.5)
    R = rot(0.3)
    for s in (2.0, 0.5):
        O = s * np.stack([np.stack([np.eye(2), R]), np.stack([R.T, np.eye(2)])])
        bl = _blocks(P, O)
        orth, onorm = check_orthogonal(bl, F)
        assert onorm == pytest.approx(2 * s * s, rel=1e-14, abs=0)
        assert float(orth.residual) == pytest.approx(abs(s * s - 1) * math.sqrt(2), rel=1e-12, abs=0)
        assert orth.tol == pytest.approx(tol(F, 2, scale=max(2 * s * s, 2.0)), rel=1e-12, abs=0)
        ts = check_transpose_symmetric(bl, F, onorm)
        assert ts.tol == pytest.approx(tol(F, 2, scale=max(math.sqrt(2 * s * s), 1.0)), rel=1e-12, abs=0)
        assert bool(ts.holds) and ts.reason is None and float(ts.residual) == 0.0
    # O_21 = R instead of Rᵀ, orthogonal: metric_compatible carries the transpose defect
    O = np.stack([np.stack([np.eye(2), R]), np.stack([R, np.eye(2)])])
    bl = _blocks(P, O)
    orth, onorm = check_orthogonal(bl, F)
    ts = check_transpose_symmetric(bl, F, onorm)
    mc = check_metric_compatible(orth, ts)
    assert bool(orth.holds) and not bool(ts.holds) and not bool(mc.holds)
    assert float(mc.residual) == float(ts.residual) == pytest.approx(np.linalg.norm(R - R.T), rel=1e-12, abs=0)
    assert mc.tol == max(orth.tol, ts.tol) and mc.name == "metric_compatible" and mc.reason is None
    # scaled orthogonal and transpose-symmetric: the orthogonality defect is the residual
    bl2 = _blocks(P, 2 * np.stack([np.stack([np.eye(2), R]), np.stack([R.T, np.eye(2)])]))
    o2, on2 = check_orthogonal(bl2, F)
    mc2 = check_metric_compatible(o2, check_transpose_symmetric(bl2, F, on2))
    assert float(mc2.residual) == pytest.approx(3 * math.sqrt(2), rel=1e-12, abs=0) and not bool(mc2.holds)


def test_transpose_symmetric_on_a_one_way_support():
    from numerics.laplacian.checks import check_orthogonal, check_transpose_symmetric

    P = np.array([[0.5, 0.5], [0.0, 1.0]])  # 0→1 one-way: its transport is not compared
    O = np.stack([np.stack([np.eye(2), rot(0.5)]), np.stack([rot(0.9), np.eye(2)])])
    bl = _blocks(P, O)
    orth, onorm = check_orthogonal(bl, F)
    ts = check_transpose_symmetric(bl, F, onorm)
    assert ts.reason == "support not symmetric: checked on two-way edges only"
    assert bool(ts.holds) and float(ts.residual) == 0.0
    assert onorm == pytest.approx(2.0, rel=1e-14, abs=0)  # the off-support O_10 is not counted


def test_transport_scale_common_and_not_common():
    from numerics.laplacian.checks import transport_scale

    P = np.full((2, 2), 0.5)
    R = rot(0.3)
    O = np.stack([np.stack([2 * np.eye(2), 2 * R]), np.stack([3 * R.T, 2 * np.eye(2)])])
    ts_, common, s_max, _ = transport_scale(_blocks(P, O), F)
    assert not bool(common) and bool(torch.isnan(ts_)) and float(s_max) == pytest.approx(3.0, rel=1e-14, abs=0)
    # equal Frobenius scales, but not a multiple of an orthogonal matrix
    Sh = np.array([[1.0, 1.0], [0.0, 1.0]]) * math.sqrt(2 / 3)  # ‖Sh‖_F = √2
    O2 = np.broadcast_to(Sh, (2, 2, 2, 2)).copy()
    ts2, common2, s2, _ = transport_scale(_blocks(P, O2), F)
    assert not bool(common2) and float(s2) == pytest.approx(1.0, rel=1e-14, abs=0)
    ts3, common3, _, _ = transport_scale(_blocks(P, 0.5 * np.broadcast_to(R, (2, 2, 2, 2)).copy()), F)
    assert bool(common3) and float(ts3) == pytest.approx(0.5, rel=1e-14, abs=0)
    # regression: on a sparse support the off-support zeros are not edge scales (s_min was 0 there,
    # so no sparse walk had a common scale and the Dirichlet check dropped its ½(1 − s²) term)
    Ps = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    ts4, common4, s4, _ = transport_scale(_blocks(Ps, 0.5 * np.broadcast_to(R, (3, 3, 2, 2)).copy()), F)
    assert bool(common4) and float(ts4) == pytest.approx(0.5, rel=1e-14, abs=0)
    Os = 0.5 * np.broadcast_to(R, (3, 3, 2, 2)).copy()
    Os[1, 2] *= 1.5  # one edge scale 0.75: not common
    ts5, common5, s5, _ = transport_scale(_blocks(Ps, Os), F)
    assert not bool(common5) and float(s5) == pytest.approx(0.75, rel=1e-14, abs=0)


def test_scaled_isometry_spread_zero_rows_and_floor():
    from numerics.laplacian.checks import check_scaled_isometry

    # d = 1: every Q is ±1; the row sums of β = |B| are (1.0, 0.4): spread 0.3 / 0.7
    P = np.array([[0.5, 0.5], [0.2, 0.2]])
    si, s = check_scaled_isometry(_blocks(P, np.ones((2, 2, 1, 1))), F)
    assert float(s) == pytest.approx(0.7, rel=1e-14, abs=0)
    assert float(si.residual) == pytest.approx(0.3 / 0.7, rel=1e-12, abs=0) and not bool(si.holds)
    assert si.tol == pytest.approx(tol(F, 2, scale=1.0), rel=1e-12, abs=0) and si.reason is None
    # equal row sums 0.8 but one block not a scaled orthogonal matrix
    Sh = np.array([[1.0, 1.0], [0.0, 1.0]])
    O = np.stack([np.stack([np.eye(2), Sh]), np.stack([np.eye(2), np.eye(2)])])
    Pm = np.full((2, 2), 0.4)
    si2, s2 = check_scaled_isometry(_blocks(Pm, O), F)
    Q = Sh / (np.linalg.norm(Sh) / math.sqrt(2))
    assert float(si2.residual) == pytest.approx(np.linalg.norm(Q.T @ Q - np.eye(2)), rel=1e-9, abs=0)
    assert si2.tol == pytest.approx(tol(F, 4, scale=2.0), rel=1e-12, abs=0)
    # all-zero blocks: no scale s > 0, never a scaled isometry (though nothing is spread)
    z, sz = check_scaled_isometry(_blocks(np.zeros((2, 2)), np.ones((2, 2, 1, 1))), F)
    assert float(sz) == 0.0 and not bool(z.holds) and z.reason == "zero block row"
    assert float(z.residual) == 0.0
    # a block below the head-sum floor is absent: rows (1.0) and (0.5 + 0.5)
    P3 = np.array([[0.5, 0.5], [1e-9, 1.0]])
    si3, s3 = check_scaled_isometry(_blocks(P3, np.ones((2, 2, 1, 1)), [[0.0, 0.0], [1e-9, 0.0]]), F)
    assert bool(si3.holds) and float(s3) == pytest.approx(1.0, rel=1e-14, abs=0)


# ------------------------------------------------------------------------------ numerics.laplacian.checks: conclusions
def test_self_adjoint_tolerance_and_reason():
    from numerics.laplacian.checks import check_self_adjoint, stationary

    P = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    O = np.broadcast_to(3 * np.eye(2), (3, 3, 2, 2)).copy()
    st_ = stationary(host(P), F)
    sa = check_self_adjoint(_blocks(P, O), st_, F)
    gws = max(st_.pi[i].item() * P[i, j] * 3 * math.sqrt(2) for i in range(3) for j in range(3))
    assert sa.tol == pytest.approx(tol(F, 6, scale=gws), rel=1e-12, abs=0)
    assert bool(sa.holds) and sa.reason is None
    Pt = np.array([[1.0, 0.0], [0.5, 0.5]])
    stt = stationary(host(Pt), F)
    sat = check_self_adjoint(_blocks(Pt, np.ones((2, 2, 1, 1))), stt, F)
    assert not bool(sat.holds) and sat.reason.startswith("no positive π: ") and "transient" in sat.reason


def test_dirichlet_reason_when_pi_undefined_and_tolerance():
    from numerics.laplacian.checks import check_dirichlet, stationary, transport_scale

    P = np.array([[2.0, 0.0], [0.0, 3.0]])  # reducible, not stochastic: π undefined
    bl = _blocks(P, np.ones((2, 2, 1, 1)))
    st_ = stationary(host(P), F)
    _, common, s_max, _ = transport_scale(bl, F)
    c = check_dirichlet(bl, st_, common, s_max, F, 2, 0)
    assert c.reason == "π undefined" and bool(torch.isnan(c.residual)) and not bool(c.holds)
    R = np.array([[0.5, 0.5], [0.5, 0.5]])
    blr = _blocks(R, np.broadcast_to(rot(0.2), (2, 2, 2, 2)).copy())
    _, cm, sm, _ = transport_scale(blr, F)
    cr = check_dirichlet(blr, stationary(host(R), F), cm, sm, F, 2, 0)
    assert cr.tol == tol(F, 4) and cr.reason is None and bool(cr.holds)


def test_dirichlet_identity_defect_of_a_non_stochastic_walk():
    """P = 2·(swap), d = 1, O = 1, π = (½, ½), probe x: <x, Δx>_π − E(x) = −½‖x‖² (rows sum to
    2), so the relative residual is ½‖x‖²_π / (the magnitudes of every summed term), > tol."""
    from numerics.laplacian.checks import check_dirichlet, probe_fields, stationary, transport_scale

    P = np.array([[0.0, 2.0], [2.0, 0.0]])
    bl = _blocks(P, np.ones((2, 2, 1, 1)))
    st_ = stationary(host(P), F)
    _, common, s_max, _ = transport_scale(bl, F)
    c = check_dirichlet(bl, st_, common, s_max, F, 3, 7)
    x = probe_fields((), 2, 1, 3, 7, torch.device("cpu")).numpy()[..., 0]  # (3, 2)
    pi = np.array([0.5, 0.5])
    rel = []
    for p in range(3):
        xx = (pi * x[p] ** 2).sum()
        Bx = 2 * x[p][::-1]
        lhs = (pi * x[p] * (x[p] - Bx)).sum()
        E = 0.5 * sum(pi[i] * P[i, j] * (x[p, i] - x[p, j]) ** 2 for i in range(2) for j in range(2))
        scale = xx * 2 + (pi * np.abs(Bx) * np.abs(x[p])).sum() + abs(E)
        rel.append(abs(lhs - E) / scale)
        assert lhs - E == pytest.approx(-0.5 * 2 * xx, rel=1e-12, abs=0)  # Σ π_i (1 − r_i) ‖x_i‖², r_i = 2
    assert float(c.residual) == pytest.approx(max(rel), rel=1e-12, abs=0) and not bool(c.holds)


def test_probe_fields_are_seeded_standard_normal_with_the_batch_in_front():
    from numerics.laplacian.checks import probe_fields

    a = probe_fields((2,), 3, 2, 4, 5, torch.device("cpu"))
    assert a.shape == (2, 4, 3, 2) and a.dtype == F
    assert torch.equal(a, probe_fields((2,), 3, 2, 4, 5, torch.device("cpu")))
    assert not torch.equal(a, probe_fields((2,), 3, 2, 4, 6, torch.device("cpu")))
    ref = torch.randn(4, 2, 3, 2, generator=torch.Generator().manual_seed(5), dtype=F)
    assert torch.equal(a[1, 2], ref[2, 1])  # probe-major draw, batch moved in front
    # drawn on the CPU (the same fields on every device), then moved to the walk's device (the meta
    # device stands in for an accelerator)
    m = probe_fields((2,), 3, 2, 4, 5, torch.device("meta"))
    assert m.device.type == "meta" and m.shape == (2, 4, 3, 2)


def test_metric_compatible_and_scaled_isometry_on_a_batch():
    from numerics.laplacian.checks import (
        check_metric_compatible,
        check_orthogonal,
        check_scaled_isometry,
        check_transpose_symmetric,
    )

    P = np.full((2, 2, 2), 0.5)
    R = rot(0.3)
    good = np.stack([np.stack([np.eye(2), R]), np.stack([R.T, np.eye(2)])])
    bad = good.copy()
    bad[0, 1] = np.array([[1.0, 1.0], [0.0, 1.0]])
    bl = _blocks(P, np.stack([good, bad]))
    orth, onorm = check_orthogonal(bl, F)
    mc = check_metric_compatible(orth, check_transpose_symmetric(bl, F, onorm))
    assert mc.holds.tolist() == [True, False]
    si, s = check_scaled_isometry(bl, F)
    assert si.holds.tolist() == [True, False] and float(si.residual[0]) <= si.tol
    Q = bad[0, 1] / (np.linalg.norm(bad[0, 1]) / math.sqrt(2))
    assert float(si.residual[1]) == pytest.approx(np.linalg.norm(Q.T @ Q - np.eye(2)), rel=1e-9, abs=0)


def test_transpose_symmetric_on_a_batch_with_one_way_edges():
    from numerics.laplacian.checks import check_orthogonal, check_transpose_symmetric

    R = rot(0.5)
    O = np.stack([np.stack([np.eye(2), R]), np.stack([R, np.eye(2)])])  # O_10 = R, not Rᵀ
    P = np.stack([np.full((2, 2), 0.5), np.array([[0.5, 0.5], [0.0, 1.0]])])  # element 1: 0→1 one-way
    bl = _blocks(P, np.stack([O, O]))
    orth, onorm = check_orthogonal(bl, F)
    ts = check_transpose_symmetric(bl, F, onorm)
    assert ts.holds.tolist() == [False, True]
    assert float(ts.residual[0]) == pytest.approx(np.linalg.norm(R - R.T), rel=1e-12, abs=0)
    assert float(ts.residual[1]) == 0.0
    assert ts.reason == "support not symmetric: checked on two-way edges only"
    assert orth.residual.shape == (2,) and bool(orth.holds.all())


@pytest.mark.parametrize("case", list(CASES))
def test_factored_algebra_second_call_with_other_weights_matches_literal_loops(case):
    """``balance_defect`` and ``gram_defect`` keep their products with the edges' coefficients and a
    later call only reweights them (the algebraic checks call them with two π's and three scalings):
    every call of a sequence against the literal loops."""
    P, a, T, fac = _heads_case(3, **CASES[case])
    fb = _fb(P, a, T, fac, 1 << 22)
    H, n, d = a.shape[-3], a.shape[-1], T.shape[-1]
    g = np.random.default_rng(4)
    fro = np.linalg.norm
    lit = [_literal(P[b], a[b], T[b] if T.ndim == 4 else T) for b in range(2)]
    scale = max(max(float(np.abs(B).max()), float(np.abs(O).max())) for B, O in lit)
    atol = tol(F, H * d * d, scale=max(scale, 1.0) ** 2 * 16)
    for _ in range(3):
        pi = g.uniform(0.1, 1.0, (2, n))
        c = g.uniform(0.1, 2.0, (2, n, n))
        bal, gram = np.zeros((2, n, n)), np.zeros((2, n, n))
        for b, (B, O) in enumerate(lit):
            for i in range(n):
                for j in range(n):
                    bal[b, i, j] = fro(pi[b, i] * B[i, j] - pi[b, j] * B[j, i].T)
                    gram[b, i, j] = fro(c[b, i, j] ** 2 * O[i, j].T @ O[i, j] - np.eye(d))
        np.testing.assert_allclose(fb.balance_defect(torch.tensor(pi)).numpy(), bal, rtol=0, atol=atol)
        np.testing.assert_allclose(fb.gram_defect(torch.tensor(c)).numpy(), gram, rtol=0, atol=atol)


def test_factored_components_are_networkx_weak_components():
    """``n_components`` of both paths (``checks.support_components``): one for an irreducible walk
    (read off the π solve's classes, no second graph search), else the weak components of the
    support; judged by networkx on an irreducible walk, two disconnected blocks and a weakly
    connected walk with a transient token."""
    import networkx as nx

    from numerics.laplacian import diagnose

    g = torch.Generator().manual_seed(5)
    full = torch.softmax(torch.randn(2, 4, 4, generator=g, dtype=F), -1)
    two = full * torch.block_diag(torch.ones(2, 2, dtype=F), torch.ones(2, 2, dtype=F))
    transient = full.clone()
    transient[:, 1:, 0] = 0.0  # token 0 is left and never entered again
    for A, want_irreducible in ((full, True), (two, False), (transient, False)):
        A = A / A.sum(-1, keepdim=True)
        w = ConnectionWalk.from_mha(A, torch.randn(2, 2, 2, generator=g, dtype=F))
        G = nx.DiGraph()
        G.add_nodes_from(range(4))
        G.add_edges_from((i, j) for i in range(4) for j in range(4) if float(A.mean(0)[i, j]) > 0)
        assert nx.is_strongly_connected(G) == want_irreducible
        for D in (diagnose(w, method="factored", spectrum=False, kernel=False), diagnose(w, method="dense")):
            assert int(D.n_components) == nx.number_weakly_connected_components(G)


def test_row_norms_of_one_row_are_absolute_values_at_any_size():
    """An edges-form walk with ``d = 1`` has one coefficient per block: its norm is ``|B_ij|`` even
    where a square underflows (the dense path's norm of a 1×1 block; found by the agreement test on
    ``P = [[1, 7.6e-239], [1, 0]]``), and several rows are the literal root of the sum of squares."""
    from numerics.laplacian.algebra import row_norms

    P = torch.tensor([[1.0, 7.5962e-239], [1.0, 0.0]], dtype=F)
    w = ConnectionWalk.from_edges(P, torch.ones(2, 2, 1, 1, dtype=F))
    fb = factored_blocks(w)
    assert fb.exact and fb.H == 1
    np.testing.assert_array_equal(fb.norms().numpy(), P.numpy())
    np.testing.assert_array_equal(fb.transport_norms().numpy(), (P > 0).to(F).numpy())
    y = torch.tensor([[[3.0]], [[4.0]], [[12.0]]], dtype=F)
    assert row_norms(y).shape == (1, 1) and float(row_norms(y)) == 13.0
    assert float(row_norms(-y[:1])) == 3.0
