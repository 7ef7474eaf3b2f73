"""T3: diagnostics of the Laplacian reduction, property tests of T3's conclusions, the weaker
(stationary, non-reversible) statement, scaled isometries, flat connections, THEOREMS.md's
counterexamples, a naive float64 reference, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.device import default_device
from numerics.errors import DTypeError, NegativeWeightError, NonFiniteError, ShapeError, UndefinedError
from numerics.laplacian import (
    diagnose,
    dirichlet_energy,
    generator_dense,
    parallel_constraints,
    stationary_distribution,
    stationary_info,
)
from numerics.laplacian.diagnosis import auto_method
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk
from theory.report import record

pytestmark = pytest.mark.theorem("T3")
F = torch.float64
DEV = default_device()


def _triangle_rotation_walk(c: float, s_: float):
    """n = 3, uniform P, O_ij = R (i < j), Rᵀ (i > j), I on the diagonal, R = [[c, −s], [s, c]]:
    holonomy R(θ) around the triangle, so no parallel section unless θ = 0."""
    R = torch.tensor([[c, -s_], [s_, c]], dtype=F, device=DEV)
    n, d = 3, 2
    P = torch.full((n, n), 1 / 3, dtype=F, device=DEV)
    O = torch.empty(n, n, d, d, dtype=F, device=DEV)
    for i in range(n):
        for j in range(n):
            O[i, j] = torch.eye(d, dtype=F, device=DEV) if i == j else (R if i < j else R.T)
    return P, O


def t(x) -> torch.Tensor:
    return torch.as_tensor(x, dtype=F, device=DEV)


def conclusion_residual(D, *names: str) -> float:
    return max(float(getattr(D, k).residual.max()) for k in names)


# --------------------------------------------------------------------------------------- naive reference
def naive_dense_generator(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    n, d = O.shape[0], O.shape[-1]
    L = np.eye(n * d)
    for i in range(n):
        for j in range(n):
            for a in range(d):
                for b in range(d):
                    L[i * d + a, j * d + b] -= P[i, j] * O[i, j, a, b]
    return L


def naive_dirichlet(P, O, pi, x) -> float:
    n = P.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                v = x[i] - O[i, j] @ x[j]
                s += 0.5 * pi[i] * P[i, j] * float(v @ v)
    return s


@given(cst.metric_compatible_walks(max_n=4, max_d=3), st.integers(0, 2**16))
def test_diagnostics_agree_with_naive_float64_loops(walk, seed):
    P, O, pi = walk
    n, d = O.shape[0], O.shape[-1]
    w = ConnectionWalk.from_edges(P, O)
    Pn, On, pin = P.cpu().numpy(), O.cpu().numpy(), pi.cpu().numpy()
    L = naive_dense_generator(Pn, On)
    r = assert_close(generator_dense(w).cpu(), torch.as_tensor(L), size=n * d, what="dense Δ vs loops")
    x = np.random.default_rng(seed).standard_normal((n, d))
    E = dirichlet_energy(P, O, pi, t(x)).item()
    assert abs(E - naive_dirichlet(Pn, On, pin, x)) <= tol(F, n * n * d, scale=max(E, 1.0))
    D = diagnose(w)
    # naive detailed-balance / self-adjointness residuals with the strategy's π
    db = max(abs(pin[i] * Pn[i, j] - pin[j] * Pn[j, i]) for i in range(n) for j in range(n))
    Dpi = np.kron(np.diag(pin), np.eye(d))
    sa = np.abs(Dpi @ L - (Dpi @ L).T).max()
    assert db <= D.detailed_balance.tol and sa <= D.self_adjoint.tol
    assert_close(D.pi.cpu(), pi.cpu(), size=n, what="π vs strategy's π")
    # <x, Δx>_π by loops equals the naive Dirichlet energy (T3.3)
    xv = x.reshape(-1)
    lhs = float(xv @ Dpi @ L @ xv)
    assert abs(lhs - naive_dirichlet(Pn, On, pin, x)) <= tol(F, n * n * d, scale=max(abs(lhs), 1.0))
    record("T3", residual=r)


# --------------------------------------------------------------------------------------- T3 property
@given(cst.metric_compatible_walks())
def test_t3_conclusions_hold_under_a_b_c(walk):
    P, O, pi = walk
    D = diagnose(ConnectionWalk.from_edges(P, O))
    assert bool(D.hypotheses_t3()), D.summary()
    # items 1–3 always; item 4 (ker = parallel) or an explicit, verified 'ambiguous' (near-flat walks)
    assert bool(D.self_adjoint.holds) and bool(D.spectrum_interval.holds) and bool(D.dirichlet.holds), D.summary()
    assert_kernel_parallel_or_borderline(D)
    assert bool(D.is_connection_laplacian()), D.summary()
    # T3 formula: Δ = I − (diag π ⊗ I)^{-1} W_sym, W_sym = block(π_i P_ij O_ij) symmetric
    n, d = O.shape[0], O.shape[-1]
    Wsym = (pi[:, None, None, None] * P[..., None, None] * O).transpose(1, 2).reshape(n * d, n * d)
    assert_close(Wsym, Wsym.T, size=n * d, what="W_sym symmetric")
    Dinv = torch.kron(torch.diag(1 / pi), torch.eye(d, dtype=F, device=DEV))
    assert_close(
        generator_dense(ConnectionWalk.from_edges(P, O)),
        torch.eye(n * d, dtype=F, device=DEV) - Dinv @ Wsym,
        size=n * d,
        what="Δ = I − D⁻¹ W_sym",
    )
    ev = D.spectrum
    assert float(ev.real.min()) >= -D.spectrum_interval.tol and float(ev.real.max()) <= 2 + D.spectrum_interval.tol
    names = ("self_adjoint", "spectrum_interval", "dirichlet") + (
        ("kernel_parallel",) if bool(D.kernel_parallel.defined) else ()
    )
    record("T3", residual=conclusion_residual(D, *names))


@given(cst.metric_compatible_walks(max_n=4, max_d=2), st.integers(1, 3))
def test_t3_batched_diagnostics_equal_per_element(walk, copies):
    P, O, pi = walk
    Pb = torch.stack([P] * copies)
    Ob = torch.stack([O] * copies)
    Db = diagnose(ConnectionWalk.from_edges(Pb, Ob))
    D1 = diagnose(ConnectionWalk.from_edges(P, O))
    for name, c in Db.checks().items():
        assert c.holds.shape == (copies,)
        assert bool((c.holds == getattr(D1, name).holds).all()), name
    assert_close(Db.pi, D1.pi.expand(copies, -1), size=P.shape[0], what="batched π")


@given(cst.row_stochastic(min_n=1, max_n=5), st.integers(1, 3), st.data())
def test_weaker_statement_stationary_orthogonal_gives_disk_dirichlet_kernel(P, d, data):
    """(a), orthogonal O (no transpose symmetry), stationary π > 0, no reversibility:
    Dirichlet identity and ker = parallel sections hold; spectrum in the disk |z − 1| ≤ 1."""
    n = P.shape[0]
    O = data.draw(cst.orthogonal(d, n * n)).reshape(n, n, d, d)
    D = diagnose(ConnectionWalk.from_edges(P, O))
    assert bool(D.stochastic.holds) and bool(D.positive_stationary.holds) and bool(D.orthogonal.holds)
    assert bool(D.dirichlet.holds), D.summary()
    assert bool(D.spectrum_disk.holds), D.summary()
    assert_kernel_parallel_or_borderline(D)
    # W is a π-contraction: ‖Wx‖_π ≤ ‖x‖_π
    x = data.draw(cst.arrays((n, d)))
    W = ConnectionWalk.from_edges(P, O)
    pi = D.pi
    nx_ = (pi[:, None] * x**2).sum()
    nw = (pi[:, None] * W.apply(x) ** 2).sum()
    assert nw.item() <= nx_.item() + tol(F, n * d, scale=max(nx_.item(), 1.0))
    record("T3", residual=conclusion_residual(D, "dirichlet", "spectrum_disk", "kernel_parallel"))


@given(cst.metric_compatible_walks(max_n=4), st.floats(0.1, 2.5))
def test_scaled_isometry_spectrum_and_dirichlet_correction(walk, s):
    P, O, pi = walk
    w = ConnectionWalk.from_edges(P, s * O)
    D = diagnose(w)
    assert bool(D.scaled_isometry.holds)
    assert abs(D.scale.item() - s) <= tol(F, P.shape[0] * O.shape[-1], scale=s)
    assert bool(D.spectrum_scaled.holds), D.summary()  # spec Δ ⊂ [1 − s, 1 + s]
    assert bool(D.dirichlet.holds), D.summary()  # with + (1 − s²)/2 ‖x‖²_π
    assert bool(D.self_adjoint.holds)
    if s > 1 + 1e-6:
        # s > 1 allows negative eigenvalues: not a connection Laplacian in the strict sense
        assert not bool(D.is_connection_laplacian())
    record("T3", residual=conclusion_residual(D, "spectrum_scaled", "dirichlet"))


@given(st.integers(1, 4), st.integers(1, 3), st.floats(0.2, 1.8), st.data())
def test_flat_connection_kernel_and_conjugation(n, d, s, data):
    """T3.5: O_ij = R_i R_jᵀ: Δ = R((I − P) ⊗ I)Rᵀ and dim ker Δ = d (P irreducible); with a
    scale s the bottom of the spectrum 1 − s is attained (Q has a parallel section)."""
    P, pi = data.draw(cst.reversible_walks(n))
    R, O = data.draw(cst.flat_connections(n, d))
    w = ConnectionWalk.from_edges(P, O)
    D = diagnose(w)
    assert bool(D.flat.holds) and bool(D.kernel_parallel.holds), D.summary()
    assert int(D.kernel_dim) == d and int(D.parallel_dim) == d
    Rb = torch.block_diag(*R)
    eye_d = torch.eye(d, dtype=F, device=DEV)
    ref = Rb @ torch.kron(torch.eye(n, dtype=F, device=DEV) - P, eye_d) @ Rb.T
    r = assert_close(generator_dense(w), ref, size=n * d, what="Δ = R((I−P)⊗I)Rᵀ")
    Ds = diagnose(ConnectionWalk.from_edges(P, s * O))
    lo = float(Ds.spectrum.real.min())
    assert abs(lo - (1 - s)) <= Ds.spectrum_scaled.tol * 10, (lo, s)
    record("T3", residual=r)


def test_eigenvalue_two_attained_iff_twisted_section():
    """Bipartite swap walk, O = 1: x = (1, −1) is twisted (x_i = −O_ij x_j): Δx = 2x; a 3-cycle
    (odd, complete) has no twisted section and stays below 2."""
    D2 = diagnose(ConnectionWalk.from_edges(t([[0, 1], [1, 0]]), t([[1.0]])))
    assert bool(D2.hypotheses_t3()) and abs(float(D2.spectrum.real.max()) - 2) <= D2.spectrum_interval.tol
    P3 = t(np.full((3, 3), 0.5) - 0.5 * np.eye(3))
    D3 = diagnose(ConnectionWalk.from_edges(P3, t([[1.0]])))
    assert bool(D3.hypotheses_t3()) and float(D3.spectrum.real.max()) < 2 - 0.1
    # flipping the transport on the bipartite walk turns the twisted section into a parallel one
    D2f = diagnose(ConnectionWalk.from_edges(t([[0, 1], [1, 0]]), t([[[[1.0]], [[-1.0]]], [[[-1.0]], [[1.0]]]])))
    assert int(D2f.kernel_dim) == 1 and abs(float(D2f.spectrum.real.min())) <= D2f.spectrum_interval.tol


# --------------------------------------------------------------------------------------- THEOREMS.md cases
def _edges(P, O):
    return ConnectionWalk.from_edges(t(P), t(O))


def _rot(theta):
    c, s = math.cos(theta), math.sin(theta)
    return [[c, -s], [s, c]]


def theory_counterexamples():
    one2 = np.ones((2, 2, 1, 1))
    I2 = np.eye(2)
    R = np.array(_rot(math.pi / 3))
    O12 = np.array([[1, 1.5], [0, 1]])
    O31 = np.diag([2.0, 0.5])
    inv = np.linalg.inv
    Okeep = np.stack([np.stack([I2, O12, inv(O31)]), np.stack([inv(O12), I2, I2]), np.stack([O31, I2, I2])])
    half = np.full((3, 3), 0.5) - 0.5 * np.eye(3)
    return {
        "drop (a)": (_edges([[0, 2], [2, 0]], one2), "stochastic", [-1, 3]),
        "drop (b)": (
            _edges([[0, 1, 0], [0, 0, 1], [1, 0, 0]], np.ones((3, 3, 1, 1))),
            "detailed_balance",
            [0, complex(1.5, -math.sqrt(3) / 2), complex(1.5, math.sqrt(3) / 2)],
        ),
        "drop O_ji = O_ijᵀ": (
            _edges([[0, 1], [1, 0]], np.stack([np.stack([I2, R]), np.stack([R, I2])])),
            "transpose_symmetric",
            [
                complex(0.5, -math.sqrt(3) / 2),
                complex(0.5, math.sqrt(3) / 2),
                complex(1.5, -math.sqrt(3) / 2),
                complex(1.5, math.sqrt(3) / 2),
            ],
        ),
        "drop orthogonality": (
            _edges([[0, 1], [1, 0]], np.array([[[[1.0]], [[2.0]]], [[[2.0]], [[1.0]]]])),
            "orthogonal",
            [-1, 3],
        ),
        "drop orthogonality, keep O_ji = O_ij⁻¹": (_edges(half, Okeep), "orthogonal", None),
    }


def _match_spectrum(ev: torch.Tensor, expected) -> float:
    got = sorted(ev.cpu().tolist(), key=lambda z: (round(z.real, 9), round(z.imag, 9)))
    exp = sorted([complex(e) for e in expected], key=lambda z: (round(z.real, 9), round(z.imag, 9)))
    assert len(got) == len(exp)
    return max(abs(a - b) for a, b in zip(got, exp))


@pytest.mark.parametrize("name", list(theory_counterexamples()))
def test_theory_counterexamples_are_classified(name):
    w, dropped, spectrum = theory_counterexamples()[name]
    D = diagnose(w)
    hyp = {
        "stochastic": D.stochastic,
        "detailed_balance": D.detailed_balance,
        "orthogonal": D.orthogonal,
        "transpose_symmetric": D.transpose_symmetric,
    }
    assert not bool(hyp[dropped].holds), D.summary()
    others = [
        k for k in hyp if k != dropped and not (name.startswith("drop orthogonality,") and k == "transpose_symmetric")
    ]
    for k in others:
        assert bool(hyp[k].holds), (k, D.summary())
    assert not bool(D.conclusions_t3()), D.summary()
    if spectrum is not None:
        err = _match_spectrum(D.spectrum, spectrum)
        assert err <= D.spectrum_interval.tol * 10, (err, D.summary())
    if name == "drop (a)":
        # <x, Δx>_π = −1 at x = (1, 1) while the Dirichlet form is 0; correction Σπ_i(1 − r_i)|x_i|²
        x = t([[1.0], [1.0]])
        pi = D.pi
        lhs = (pi[:, None] * x * (x - w.apply(x))).sum().item()
        E = dirichlet_energy(w.walk_matrix, w.edge_transports()[0], pi, x).item()
        assert abs(lhs + 1) <= tol(F, 2) and abs(E) <= tol(F, 2)
        r = w.walk_matrix.sum(-1)
        corr = (pi * (1 - r) * x[:, 0] ** 2).sum().item()
        assert abs(lhs - (E + corr)) <= tol(F, 4)
    if name == "drop (b)":
        assert bool(D.spectrum_disk.holds) and bool(D.dirichlet.holds)  # the weaker statement survives
    if name.startswith("drop orthogonality,"):
        ev = D.spectrum
        assert float(ev.real.min()) == pytest.approx(-0.0268, abs=5e-5)
        assert float(ev.imag.abs().max()) > 0.1
        for k in ("self_adjoint", "spectrum_interval", "spectrum_disk", "dirichlet"):
            assert not bool(getattr(D, k).holds), k  # "everything fails"
    from numerics.laplacian import format_spectrum

    record("T3", counterexample=f"THEOREMS.md T3 {name}: spec Δ = {format_spectrum(D.spectrum)}")


def test_no_positive_stationary_pi_breaks_kernel_equals_parallel():
    """P = [[1, 0], [.5, .5]], d = 1, O_22 = −1: ker Δ is not the parallel sections (THEOREMS.md T3)."""
    w = _edges([[1, 0], [0.5, 0.5]], [[[[1.0]], [[1.0]]], [[[1.0]], [[-1.0]]]])
    D = diagnose(w)
    assert bool(D.stochastic.holds) and bool(D.orthogonal.holds)
    assert not bool(D.positive_stationary.holds) and "transient" in D.positive_stationary.reason
    assert int(D.kernel_dim) == 1 and int(D.parallel_dim) == 0
    k = t([3.0, 1.0])
    assert_close(w.apply(k[:, None])[:, 0], k, size=2, what="Δ (3, 1) = 0")
    assert not bool(D.kernel_parallel.holds)
    # the degenerate π = e_1 satisfies detailed balance but is not positive
    assert_close(D.pi, t([1.0, 0.0]), size=2, what="π = e_1")
    assert not bool(D.detailed_balance.holds)
    record(
        "T3",
        counterexample="no positive π: P=[[1,0],[.5,.5]], O_22=−1 → ker Δ = span{(3, 1)}, "
        "parallel sections {0}; spec Δ = {0, 1.5}",
    )


# --------------------------------------------------------------------------------------- forms of input
@given(cst.metric_compatible_walks(max_n=4, max_d=2))
def test_blocks_and_heads_input_give_gauge_free_answers(walk):
    P, O, pi = walk
    B = P[..., None, None] * O
    Db = diagnose(B)
    assert bool(Db.is_connection_laplacian()), Db.summary()
    assert_close(Db.block_pi, pi, size=P.shape[0], what="gauge-free π")
    # heads form: the same operator as an MHA with shared attention and T_Σ split over two heads
    _n, _d = O.shape[0], O.shape[-1]
    if bool((O[0, 0] == O).all()):
        T = O[0, 0]
        w = ConnectionWalk.from_mha(torch.stack([P, P]), torch.stack([0.25 * T, 0.75 * T]))
        Dh = diagnose(w)
        assert bool(Dh.conclusions_t3())


def test_disconnected_walk_reports_non_unique_pi():
    P = torch.block_diag(t([[0.5, 0.5], [0.5, 0.5]]), t([[0.2, 0.8], [0.4, 0.6]]))
    w = ConnectionWalk.from_edges(P, t([[1.0]]))
    D = diagnose(w)
    assert not bool(D.pi_unique)
    assert "several stationary distributions" in D.positive_stationary.reason
    assert int(D.n_components) == 2 and int(D.kernel_dim) == 2  # one parallel section per component
    assert abs(D.pi[:2].sum().item() - 0.5) <= tol(F, 4)
    assert bool(D.conclusions_t3())  # T3 holds for any positive π
    with pytest.raises(UndefinedError, match="several stationary"):
        stationary_distribution(P)


def test_reducible_non_stochastic_pi_is_undefined_not_guessed():
    P = t([[2.0, 0.0], [0.0, 3.0]])
    info = stationary_info(P)
    assert bool(torch.isnan(info.pi).all()) and "undefined" in info.reasons[0]
    D = diagnose(ConnectionWalk.from_edges(P, t([[1.0]])))
    assert bool(torch.isnan(D.self_adjoint.residual)) and not bool(D.self_adjoint.holds)
    with pytest.raises(UndefinedError):
        stationary_distribution(P)


def test_zero_row_is_reported():
    P = t([[0.5, 0.5], [0.0, 0.0]])
    D = diagnose(ConnectionWalk.from_edges(P, t([[1.0]])))
    assert not bool(D.stochastic.holds) and "zero row" in D.stochastic.reason
    assert not bool(D.positive_stationary.holds)
    B = torch.zeros(2, 2, 1, 1, dtype=F, device=DEV)
    B[0, 1] = 1.0
    Db = diagnose(B)
    assert not bool(Db.block_detailed_balance.holds) and "zero" in Db.block_detailed_balance.reason


def test_bad_input_raises_typed_errors():
    good = torch.zeros(2, 2, 3, 3, dtype=F)
    with pytest.raises(DTypeError) as e:
        diagnose(good.to(torch.complex128))
    assert e.value.argument == "walk"  # the parameter name the caller used
    bad = good.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(NonFiniteError):
        diagnose(bad)
    with pytest.raises(ShapeError):
        diagnose(torch.zeros(2, 2, 3, 2, dtype=F))  # non-square blocks
    with pytest.raises(ShapeError):
        diagnose(torch.zeros(2, 3, 2, 2, dtype=F))  # n × m blocks
    with pytest.raises(DTypeError):
        diagnose(torch.zeros(2, 2, 1, 1, dtype=torch.int64))
    with pytest.raises(NegativeWeightError):
        stationary_info(t([[1.5, -0.5], [0.5, 0.5]]))
    with pytest.raises(ShapeError):
        diagnose(_edges([[1.0]], [[[[1.0]]]]), pi=t([1.0, 2.0]))


def test_large_walk_skips_dense_checks_with_reason():
    n, d = 3, 2
    P = t(np.full((n, n), 1 / n))
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(d, dtype=F, device=DEV)), method="dense", max_dense=4)
    assert D.spectrum is None and "max_dense" in D.spectrum_interval.reason
    assert not bool(D.spectrum_interval.holds) and bool(torch.isnan(D.spectrum_interval.residual))
    assert bool(D.self_adjoint.holds)


def test_parallel_constraints_match_definition():
    P = t([[0.5, 0.5, 0], [0.3, 0.3, 0.4], [0, 1.0, 0]])
    O = torch.randn(3, 3, 2, 2, dtype=F, generator=torch.Generator().manual_seed(1)).to(DEV)
    C = parallel_constraints(O, P > 0)
    x = torch.randn(3, 2, dtype=F, generator=torch.Generator().manual_seed(2)).to(DEV)
    Cx = (C @ x.reshape(-1)).reshape(3, 3, 2)
    for i in range(3):
        for j in range(3):
            ref = x[i] - O[i, j] @ x[j] if P[i, j] > 0 else torch.zeros(2, dtype=F, device=DEV)
            assert_close(Cx[i, j], ref, size=2, what=f"C row ({i},{j})")


@given(cst.metric_compatible_walks(max_n=4, max_d=2), st.booleans())
def test_gram_path_of_parallel_constraints_matches_svd_path(walk, sparse):
    """The large-size path (eigh of CᵀC without forming C) against the direct SVD of C."""
    from numerics.laplacian.forms import parallel_gram, parallel_svd

    P, O, _ = walk
    sup = P > 0
    if sparse:
        sup = sup & (torch.rand(P.shape, generator=torch.Generator().manual_seed(0)).to(P.device) < 0.6)
    C = parallel_constraints(O, sup)
    N = C.shape[-1]
    assert_close(parallel_gram(O, sup), C.T @ C, size=N, what="G = CᵀC")
    s_svd, _, g1 = parallel_svd(O, sup)
    s_eig, _, g2 = parallel_svd(O, sup, max_entries=0)
    assert not g1 and g2
    # σ from √λ(CᵀC) is accurate to √(eps)·‖C‖ only
    assert float((s_svd - s_eig).abs().max()) <= math.sqrt(tol(F, N)) * max(float(s_svd.max()), 1.0)


@given(cst.metric_compatible_walks(max_n=4, max_d=3))
def test_float32_walks_use_float32_tolerances(walk):
    P, O, _ = walk
    w32 = ConnectionWalk.from_edges(P.float(), O.float())
    D = diagnose(w32)
    assert bool(D.hypotheses_t3()), D.summary()
    if not bool(D.kernel_parallel.defined):
        check_float32_kernel_ambiguity(P, O, D)
    else:
        assert bool(D.conclusions_t3()), D.summary()
    assert D.orthogonal.tol == pytest.approx(tol(torch.float32, O.shape[-1], scale=max(O.shape[-1], 1)), rel=0.5)
    # a float32-sized defect is still caught when it is larger than float32 rounding
    O2 = O.clone()
    O2[0, 0] = O2[0, 0] * (1 + 1e-3)
    D2 = diagnose(ConnectionWalk.from_edges(P.float(), O2.float()))
    assert not bool(D2.orthogonal.holds)


def assert_kernel_parallel_or_borderline(D) -> None:
    """ker Δ = parallel sections, or an explicit 'ambiguous' whose premise is verifiable: the counts
    differ and, when ker Δ is the larger, the Dirichlet identity holds (so Δ sees a parallel-section
    defect only squared); when the parallel sections are more, the Jensen bound was the reason."""
    kp = D.kernel_parallel
    if bool(kp.defined):
        assert bool(kp.holds), D.summary()
        return
    assert "ambiguous" in kp.reason and not bool(kp.holds), D.summary()
    assert int(D.kernel_dim) != int(D.parallel_dim), D.summary()
    if int(D.kernel_dim) > int(D.parallel_dim):
        assert bool(D.dirichlet.holds) and "Dirichlet energy" in kp.reason, D.summary()
    else:  # parallel sections that Δ's threshold just misses: ‖ΔZ‖ ≤ ‖CZ‖ (Jensen) bounds them
        assert "Jensen" in kp.reason, D.summary()


def check_float32_kernel_ambiguity(P, O, D) -> None:
    """``kernel_parallel`` was reported undefined for a float32 walk: it must say why, every other
    T3 conclusion must hold, and the ambiguity must be genuine — Δ has eigenvalues between the
    float32 rounding bound and tol(float32, nd) (so its kernel count is a range), and the float64
    diagnosis of the float64 walk (exactly metric-compatible; it differs from the float32 one by the
    rounding only), whose tolerance is ~10⁹ times smaller, resolves them as nonzero and finds
    ker Δ = parallel sections."""
    assert "ambiguous at float32" in D.kernel_parallel.reason and not bool(D.kernel_parallel.holds)
    assert bool(D.self_adjoint.holds) and bool(D.spectrum_interval.holds) and bool(D.dirichlet.holds)
    nd = D.n * D.d
    D64 = diagnose(ConnectionWalk.from_edges(P.double(), O.double()))
    assert bool(D64.hypotheses_t3()) and bool(D64.conclusions_t3()), D64.summary()
    assert int(D64.kernel_dim) < int(D.kernel_dim)  # float32 counted true eigenvalues as zero
    lam = torch.sort(D64.spectrum.real).values[int(D64.kernel_dim) : int(D.kernel_dim)]
    assert float(lam.min()) > tol(F, nd)  # true nonzero eigenvalues (float64 resolves them) ...
    assert float(lam.max()) <= 2 * tol(torch.float32, nd)  # ... that the float32 tolerance cannot


def test_float32_borderline_kernel_is_reported_ambiguous_not_wrong():
    """Found by Hypothesis (dev profile): n = 3, uniform P, O_ii = I and O_ij = R(θ) (i < j),
    O_ji = R(θ)ᵀ, θ = 0.0204, rounded to float32. The holonomy of the triangle is R(θ), so there is
    no parallel section (σ_min(C)/‖C‖ = 3.9e-3 ≫ float32 rounding) and no kernel: the exact smallest
    eigenvalue of Δ is (2/3)(1 − cos(θ/3)) = 1.54e-5 (twice), true, not float32 noise (float64 on
    the float32-rounded data gives 1.5388e-5: the rounding moves it by 2.5e-8). But 1.54e-5 < tol(float32, 6) = 4.6e-5: Δ, which
    sees the holonomy defect quadratically, cannot separate it from 0 at float32 tolerance while C
    (linear) can. The old diagnostic counted ker Δ = 2 ≠ 0 and reported kernel_parallel False (a
    silent wrong 'T3 violated'); it is now undefined with the reason."""
    th = 0.0204
    c, s_ = math.cos(th), math.sin(th)
    P, O = _triangle_rotation_walk(c, s_)
    n, d = 3, 2
    D = diagnose(ConnectionWalk.from_edges(P.float(), O.float()))
    assert bool(D.hypotheses_t3())
    assert torch.isnan(D.kernel_parallel.residual) and "ambiguous at float32" in D.kernel_parallel.reason
    assert int(D.kernel_dim) == 2 and int(D.parallel_dim) == 0
    assert not bool(D.flat.holds) and float(D.flat.residual) > 50 * D.flat.tol  # not flat: certain
    check_float32_kernel_ambiguity(P, O, D)
    D64 = diagnose(ConnectionWalk.from_edges(P, O))
    lam = torch.sort(D64.spectrum.real).values[:2]
    exact = (2 / 3) * (1 - math.cos(th / 3))
    assert float((lam - exact).abs().max()) <= tol(F, n * d)
    # Weyl (Δ symmetric here): float32 rounding of the entries moves them by ≤ tol(float32, nd)
    lam32 = torch.sort(
        torch.linalg.eigvals(generator_dense(ConnectionWalk.from_edges(P.float(), O.float()))).real
    ).values[:2]
    assert float((lam32 - exact).abs().max()) <= tol(torch.float32, n * d)
    assert int(D64.kernel_dim) == int(D64.parallel_dim) == 0 and bool(D64.kernel_parallel.holds)
    # a genuine mismatch (certain counts on both sides) is still a definite failure, not 'ambiguous':
    # a non-orthogonal connection whose Δ has a kernel that is not a parallel section
    # (d = 1, P uniform on 2 tokens, O_00 = −1, O_11 = 1, O_01 = 3, O_10 = 1: W(1, 1) = (1, 1), but
    # x_0 = −x_0 forces every parallel section to vanish)
    Pg = torch.full((2, 2), 0.5, dtype=F, device=DEV)
    Og = torch.tensor([[-1.0, 3.0], [1.0, 1.0]], dtype=F, device=DEV)[..., None, None]
    for dt in (torch.float32, F):
        Dg = diagnose(ConnectionWalk.from_edges(Pg.to(dt), Og.to(dt)))
        assert int(Dg.kernel_dim) == 1 and int(Dg.parallel_dim) == 0
        assert not bool(Dg.kernel_parallel.holds) and bool(Dg.kernel_parallel.defined), Dg.kernel_parallel


def test_kernel_residual_carries_the_null_space_gap():
    """Found by Hypothesis (dev profile, test_involution): A = [[1 − 4.26e-8, 4.26e-8],
    [2.06e-4, 1 − 2.06e-4]], T = [1]. ker Δ = span(1) and the counts agree (1 = 1), but the SVD's
    null vector is only accurate to eps·‖Δ‖/gap (Wedin; gap = σ₁(Δ) ≈ 2.9e-4, the only nonzero one), so ‖CK‖/‖C‖ = 9.5e-14 >
    tol(F, 2) = 2.8e-14. The bound now carries max(‖Δ‖, 1)/gap (gap = σ₁(Δ) ≈ 2.9e-4 here)."""
    a, b = 4.2636e-08, 2.0644e-04
    A = torch.tensor([[1 - a, a], [b, 1 - b]], dtype=F, device=DEV)
    D = diagnose(ConnectionWalk.from_sha(A, torch.ones(1, 1, dtype=F, device=DEV)))
    assert int(D.kernel_dim) == int(D.parallel_dim) == 1
    assert bool(D.kernel_parallel.holds), D.kernel_parallel
    sD = torch.linalg.svdvals(torch.eye(2, dtype=F, device=DEV) - A)
    assert float(D.kernel_parallel.residual) > tol(F, 2)  # the gap-free bound would have failed
    gap_bound = tol(F, 2) * max(float(sD[0]), 1.0) / float(sD[0])  # σ₁ is the gap (σ₂ = 0: kernel)
    assert D.kernel_parallel.tol == pytest.approx(gap_bound, rel=1e-6)
    assert float(D.kernel_parallel.residual) <= gap_bound


def test_gram_path_end_to_end_finds_flat_kernel():
    """Parallel sections from CᵀC (the path used when C has > 2²² entries), forced on a small walk."""
    g = torch.Generator().manual_seed(5)
    n, d = 10, 3
    K = torch.rand(n, n, dtype=F, generator=g)
    K = (K + K.T) * (torch.rand(n, n, dtype=F, generator=g) < 0.4)
    K = ((K + K.T) / 2 + torch.eye(n, dtype=F)).to(DEV)
    P = K / K.sum(-1, keepdim=True)
    R, _ = torch.linalg.qr(torch.randn(n, d, d, dtype=F, generator=g))
    R = R.to(DEV)
    O = torch.einsum("iab,jcb->ijac", R, R)
    D = diagnose(ConnectionWalk.from_edges(P, O), svd_max_entries=0)
    ncomp = int(D.n_components)
    assert bool(D.flat.holds) and bool(D.kernel_parallel.holds) and int(D.kernel_dim) == d * ncomp, D.summary()
    assert D.flat.tol >= math.sqrt(tol(F, n * d))  # the Gram path's √eps threshold was used
    # break flatness on one two-way edge (still metric-compatible): the kernel shrinks
    Rm = torch.linalg.qr(torch.randn(d, d, dtype=F, generator=g))[0].to(DEV)
    i, j = [int(v) for v in torch.nonzero((P > 0) & ~torch.eye(n, dtype=torch.bool, device=DEV))[0]]
    O2 = O.clone()
    O2[i, j] = O[i, j] @ Rm
    O2[j, i] = O2[i, j].T
    D2 = diagnose(ConnectionWalk.from_edges(P, O2), svd_max_entries=0)
    D3 = diagnose(ConnectionWalk.from_edges(P, O2))
    assert not bool(D2.flat.holds) and bool(D2.kernel_parallel.holds)
    assert int(D2.kernel_dim) == int(D3.kernel_dim) < d * ncomp
    assert int(D2.parallel_dim) == int(D3.parallel_dim)


def test_spectrum_survives_torch_eigvals_non_convergence():
    """Found by Hypothesis (dev profile, seed 5, test_graphs flatness): a reversible walk coupled by
    2.0119e-131 with O_00 = [[1, 2⁻⁵⁴], [2⁻⁵⁴, 1]] (orthogonal to rounding). torch.linalg.eigvals
    fails to converge on Δ (LAPACK error 4); diagnose now falls back to numpy's LAPACK. Exact
    spectrum: Δ = [[E, −cR], [−cRᵀ, 0]] with E = −2⁻⁵⁴σ_x: eigenvalues ±2⁻⁵⁴ and ±O(c²/2⁻⁵⁴)."""
    c, e = 2.0119e-131, 2.0**-54
    s10 = 10**-0.5
    R = torch.tensor([[3 * s10, -s10], [s10, 3 * s10]], dtype=F, device=DEV)
    P = torch.tensor([[1.0, c], [c, 1.0]], dtype=F, device=DEV)
    O = torch.empty(2, 2, 2, 2, dtype=F, device=DEV)
    O[0, 0] = torch.tensor([[1.0, e], [e, 1.0]], dtype=F, device=DEV)
    O[1, 1] = torch.eye(2, dtype=F, device=DEV)
    O[0, 1], O[1, 0] = R, R.T
    D = diagnose(ConnectionWalk.from_edges(P, O))
    ev = torch.sort(D.spectrum.real).values
    expected = torch.tensor([-e, 0.0, 0.0, e], dtype=F, device=DEV)
    assert float((ev - expected).abs().max()) <= tol(F, 4, scale=e)  # ‖Δ‖ ≈ 2⁻⁵⁴
    assert float(D.spectrum.imag.abs().max()) <= tol(F, 4)
    assert bool(D.spectrum_interval.holds)


def test_float64_borderline_kernel_is_reported_ambiguous():
    """Found by Hypothesis (dev profile, seed 33): P = ½·11ᵀ (n = 2), d = 3, four near-identity
    rotations (printed values below, re-orthonormalised by the polar factor). The holonomy defect
    (‖Cx‖ ≈ 1.4e-7) is resolved by C but gives Δ an eigenvalue ~1e-14 < tol(F, 6) = 8.5e-14:
    ambiguous at float64, now reported so (it was a silent kernel_parallel False)."""
    a = [[1.0, -6.5146e-04, -6.5062e-04], [6.5104e-04, 1.0, -6.5019e-04], [6.5104e-04, 6.4977e-04, 1.0]]
    b = [[1.0, -6.5104e-04, -6.5019e-04], [6.5062e-04, 1.0, -6.5019e-04], [6.5062e-04, 6.4977e-04, 1.0]]
    U, _, Vh = torch.linalg.svd(torch.tensor([a, b, b, b], dtype=F, device=DEV))
    O = (U @ Vh).reshape(2, 2, 3, 3)
    P = torch.full((2, 2), 0.5, dtype=F, device=DEV)
    D = diagnose(ConnectionWalk.from_edges(P, O))
    assert bool(D.stochastic.holds) and bool(D.positive_stationary.holds) and bool(D.orthogonal.holds)
    assert int(D.kernel_dim) == 1 and int(D.parallel_dim) == 0
    assert_kernel_parallel_or_borderline(D)
    sC = torch.linalg.svdvals(parallel_constraints(O, P > 0))
    assert float(sC.min()) > tol(F, 6) * float(sC.max())  # C resolves the defect ...
    assert float(torch.linalg.svdvals(generator_dense(ConnectionWalk.from_edges(P, O))).min()) <= tol(F, 6)  # Δ not


def test_nearly_flat_float64_walk_kernel_is_ambiguous():
    """Found by Hypothesis (dev profile, seed 4, full suite): the float64 twin of the float32 case —
    n = 3, uniform P, O_ij = R(θ) (i < j) with sin θ = 3.3333e-10. Holonomy R(θ): C resolves the
    defect (‖Cx‖ ≈ 5e-11 ≫ tol(F, 6) = 8.5e-14) but Δ's eigenvalue θ²/27 ≈ 4e-21 is far below it.
    Reported ambiguous (was a silent kernel_parallel False)."""
    s_ = 3.3333e-10
    c = math.sqrt(1 - s_ * s_)
    P, O = _triangle_rotation_walk(c, s_)
    D = diagnose(ConnectionWalk.from_edges(P, O))
    assert bool(D.hypotheses_t3())
    assert int(D.kernel_dim) == 2 and int(D.parallel_dim) == 0
    assert "ambiguous at float64" in D.kernel_parallel.reason
    assert_kernel_parallel_or_borderline(D)
    assert not bool(D.flat.holds)  # the holonomy is certain


def test_parallel_sections_just_missed_by_delta_are_ambiguous():
    """Found by Hypothesis (dev profile): P = ¼·11ᵀ (n = 4), every O_ij = R(θ) with
    sin θ = 1.2901e-13 ≈ tol. C accepts two parallel sections (defect ‖(I − R)x‖ ≈ 1.3e-13 ≤ tol)
    while Δ = I − R ⊗ (P) has |λ| ≈ 1.3e-13 just above its threshold: reported ambiguous."""
    s_ = 1.2901e-13
    c = math.sqrt(1 - s_ * s_)
    R = torch.tensor([[c, -s_], [s_, c]], dtype=F, device=DEV)
    n = 4
    P = torch.full((n, n), 0.25, dtype=F, device=DEV)
    O = R.expand(n, n, 2, 2).clone()
    D = diagnose(ConnectionWalk.from_edges(P, O))
    assert int(D.parallel_dim) > int(D.kernel_dim)
    assert "ambiguous at float64" in D.kernel_parallel.reason and "Jensen" in D.kernel_parallel.reason
    assert_kernel_parallel_or_borderline(D)


# ------------------------------------------------------- method="auto": the path of the stated rule
@pytest.mark.parametrize(
    "n, d, H, max_dense, auto_max_nd, expected",
    [
        (12, 8, 4, 1024, None, "dense"),  # n·d = 96 ≤ 96
        (16, 8, 4, 1024, None, "factored"),  # 128 > 96: few heads, the factored path is faster
        (12, 16, 32, 1024, None, "dense"),  # H/d = 2: dense up to 192
        (13, 16, 32, 1024, None, "factored"),
        (16, 16, 16, 1024, None, "factored"),  # H/d = 1: 256 > 96
        (32, 16, 256, 1024, None, "dense"),  # edges form (H = d²): dense up to max_dense
        (64, 32, 1024, 4096, None, "dense"),
        (64, 32, 1024, 1024, None, "factored"),  # above max_dense only the factored path is complete
        (8, 8, 4, 32, None, "factored"),  # max_dense lowered below n·d
        (8, 8, 4, 1024, 64, "dense"),  # an explicit auto_max_nd is the switch
        (8, 8, 4, 1024, 63, "factored"),
        (8, 8, 4, 32, 1000, "dense"),
        (12, 8, 4, 1024, None, "dense"),  # n·d = 96 exactly: the bound is inclusive
        (13, 8, 4, 1024, None, "factored"),
        (384, 1, 4, 1024, None, "dense"),  # d = 1: H/d = 4, dense up to 384
        (385, 1, 4, 1024, None, "factored"),
    ],
)
def test_auto_picks_the_path_of_the_stated_rule(n, d, H, max_dense, auto_max_nd, expected):
    assert auto_method(n, d, H, max_dense, auto_max_nd) == expected


def test_auto_counts_a_heads_walk_by_its_heads_and_an_edges_walk_by_d_squared():
    """n = 16, d = 16 (n·d = 256): 4 heads are past the dense bound 96, an edges-form walk (d² = 256
    terms per block) is not (96·16)."""
    g = torch.Generator().manual_seed(0)
    A = torch.softmax(torch.randn(4, 16, 16, generator=g, dtype=F), -1)
    T = torch.randn(4, 16, 16, generator=g, dtype=F) / 4
    heads = ConnectionWalk.from_mha(A, T)
    assert heads.kind == "heads"
    assert diagnose(heads, spectrum=False, kernel=False).extra["method"] == "factored"
    edges = ConnectionWalk.from_blocks(torch.einsum("hij,hab->ijab", A, T))
    assert edges.kind != "heads"
    assert diagnose(edges).extra["method"] == "dense"
