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
from numerics.laplacian.blocks import DenseBlocks, FactoredBlocks, factored_blocks
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
from numerics.laplacian.result import Check, make_check
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk
from tests.helpers import host, rot

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
    assert not bool(c2)
    assert c2.defined.tolist() == [True, False, True]
    # a NaN residual (not computed) is undecided, not a failure
    assert c2.fails.tolist() == [False, False, False] and c2.undecided.tolist() == [False, True, False]
    assert [c2.status((i,)) for i in range(3)] == ["holds", "undecided", "holds"]
    c3 = Check("z", torch.tensor([True, True]), host([float("nan"), float("nan")]), 0.5)
    assert "max residual=-1.000e+00" in repr(c3)  # NaN shown as −1 in the maximum
    assert bool(c3)
    c4 = Check("w", torch.tensor(False), host(0.7), 0.5, error=0.25)
    assert c4.status() == "fails" and "error=2.5e-01" in repr(c4)
    with pytest.raises(ValueError, match="both hold and fail"):
        Check("v", torch.tensor(True), host(0.1), 0.5, fails=torch.tensor(True))


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
    ts_, common, s_max = transport_scale(_blocks(P, O), F)
    assert not bool(common) and bool(torch.isnan(ts_)) and float(s_max) == pytest.approx(3.0, rel=1e-14, abs=0)
    # equal Frobenius scales, but not a multiple of an orthogonal matrix
    Sh = np.array([[1.0, 1.0], [0.0, 1.0]]) * math.sqrt(2 / 3)  # ‖Sh‖_F = √2
    O2 = np.broadcast_to(Sh, (2, 2, 2, 2)).copy()
    ts2, common2, s2 = transport_scale(_blocks(P, O2), F)
    assert not bool(common2) and float(s2) == pytest.approx(1.0, rel=1e-14, abs=0)
    ts3, common3, _ = transport_scale(_blocks(P, 0.5 * np.broadcast_to(R, (2, 2, 2, 2)).copy()), F)
    assert bool(common3) and float(ts3) == pytest.approx(0.5, rel=1e-14, abs=0)
    # regression: on a sparse support the off-support zeros are not edge scales (s_min was 0 there,
    # so no sparse walk had a common scale and the Dirichlet check dropped its ½(1 − s²) term)
    Ps = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    ts4, common4, s4 = transport_scale(_blocks(Ps, 0.5 * np.broadcast_to(R, (3, 3, 2, 2)).copy()), F)
    assert bool(common4) and float(ts4) == pytest.approx(0.5, rel=1e-14, abs=0)
    Os = 0.5 * np.broadcast_to(R, (3, 3, 2, 2)).copy()
    Os[1, 2] *= 1.5  # one edge scale 0.75: not common
    ts5, common5, s5 = transport_scale(_blocks(Ps, Os), F)
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
    _, common, s_max = transport_scale(bl, F)
    c = check_dirichlet(bl, st_, common, s_max, F, 2, 0)
    assert c.reason == "π undefined" and bool(torch.isnan(c.residual)) and not bool(c.holds)
    R = np.array([[0.5, 0.5], [0.5, 0.5]])
    blr = _blocks(R, np.broadcast_to(rot(0.2), (2, 2, 2, 2)).copy())
    _, cm, sm = transport_scale(blr, F)
    cr = check_dirichlet(blr, stationary(host(R), F), cm, sm, F, 2, 0)
    assert cr.tol == tol(F, 4) and cr.reason is None and bool(cr.holds)


def test_dirichlet_identity_defect_of_a_non_stochastic_walk():
    """P = 2·(swap), d = 1, O = 1, π = (½, ½), probe x: <x, Δx>_π − E(x) = −½‖x‖² (rows sum to
    2), so the relative residual is ½‖x‖²_π / (the magnitudes of every summed term), > tol."""
    from numerics.laplacian.checks import check_dirichlet, probe_fields, stationary, transport_scale

    P = np.array([[0.0, 2.0], [2.0, 0.0]])
    bl = _blocks(P, np.ones((2, 2, 1, 1)))
    st_ = stationary(host(P), F)
    _, common, s_max = transport_scale(bl, F)
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
