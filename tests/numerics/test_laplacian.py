"""T3: diagnostics of the Laplacian reduction, property tests of T3's conclusions, the weaker
(stationary, non-reversible) statement, scaled isometries, flat connections, THEORY.md's
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
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk
from theory.report import record

pytestmark = pytest.mark.theorem("T3")
F = torch.float64
DEV = default_device()


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
    assert bool(D.conclusions_t3()), D.summary()
    assert bool(D.is_connection_laplacian()), D.summary()
    # T3 formula: Δ = I − (diag π ⊗ I)^{-1} W_sym, W_sym = block(π_i P_ij O_ij) symmetric
    n, d = O.shape[0], O.shape[-1]
    Wsym = (pi[:, None, None, None] * P[..., None, None] * O).transpose(1, 2).reshape(n * d, n * d)
    assert_close(Wsym, Wsym.T, size=n * d, what="W_sym symmetric")
    Dinv = torch.kron(torch.diag(1 / pi), torch.eye(d, dtype=F, device=DEV))
    assert_close(generator_dense(ConnectionWalk.from_edges(P, O)), torch.eye(n * d, dtype=F, device=DEV) - Dinv @ Wsym,
                  size=n * d, what="Δ = I − D⁻¹ W_sym")
    ev = D.spectrum
    assert float(ev.real.min()) >= -D.spectrum_interval.tol and float(ev.real.max()) <= 2 + D.spectrum_interval.tol
    record("T3", residual=conclusion_residual(D, "self_adjoint", "spectrum_interval", "dirichlet", "kernel_parallel"))


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
    assert bool(D.kernel_parallel.holds), D.summary()
    # W is a π-contraction: ‖Wx‖_π ≤ ‖x‖_π
    x = data.draw(cst.arrays((n, d)))
    W = ConnectionWalk.from_edges(P, O)
    pi = D.pi
    nx_ = (pi[:, None] * x ** 2).sum()
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


# --------------------------------------------------------------------------------------- THEORY.md cases
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
        "drop (b)": (_edges([[0, 1, 0], [0, 0, 1], [1, 0, 0]], np.ones((3, 3, 1, 1))), "detailed_balance",
                     [0, complex(1.5, -math.sqrt(3) / 2), complex(1.5, math.sqrt(3) / 2)]),
        "drop O_ji = O_ijᵀ": (_edges([[0, 1], [1, 0]], np.stack([np.stack([I2, R]), np.stack([R, I2])])),
                              "transpose_symmetric",
                              [complex(0.5, -math.sqrt(3) / 2), complex(0.5, math.sqrt(3) / 2),
                               complex(1.5, -math.sqrt(3) / 2), complex(1.5, math.sqrt(3) / 2)]),
        "drop orthogonality": (_edges([[0, 1], [1, 0]], np.array([[[[1.0]], [[2.0]]], [[[2.0]], [[1.0]]]])),
                               "orthogonal", [-1, 3]),
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
    hyp = {"stochastic": D.stochastic, "detailed_balance": D.detailed_balance, "orthogonal": D.orthogonal,
           "transpose_symmetric": D.transpose_symmetric}
    assert not bool(hyp[dropped].holds), D.summary()
    others = [k for k in hyp if k != dropped and not (name.startswith("drop orthogonality,") and k == "transpose_symmetric")]
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

    record("T3", counterexample=f"THEORY {name}: spec Δ = {format_spectrum(D.spectrum)}")


def test_no_positive_stationary_pi_breaks_kernel_equals_parallel():
    """P = [[1, 0], [.5, .5]], d = 1, O_22 = −1: ker Δ is not the parallel sections (THEORY T3)."""
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
    record("T3", counterexample="no positive π: P=[[1,0],[.5,.5]], O_22=−1 → ker Δ = span{(3, 1)}, "
                                "parallel sections {0}; spec Δ = {0, 1.5}")


# --------------------------------------------------------------------------------------- forms of input
@given(cst.metric_compatible_walks(max_n=4, max_d=2))
def test_blocks_and_heads_input_give_gauge_free_answers(walk):
    P, O, pi = walk
    B = P[..., None, None] * O
    Db = diagnose(B)
    assert bool(Db.is_connection_laplacian()), Db.summary()
    assert_close(Db.block_pi, pi, size=P.shape[0], what="gauge-free π")
    # heads form: the same operator as an MHA with shared attention and T_Σ split over two heads
    n, d = O.shape[0], O.shape[-1]
    if bool((O == O[0, 0]).all()):
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
    assert e.value.argument == "B"
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
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(d, dtype=F, device=DEV)), max_dense=4)
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
    from numerics.laplacian import _parallel_gram, _parallel_svd

    P, O, _ = walk
    sup = P > 0
    if sparse:
        sup = sup & (torch.rand(P.shape, generator=torch.Generator().manual_seed(0)).to(P.device) < 0.6)
    C = parallel_constraints(O, sup)
    N = C.shape[-1]
    assert_close(_parallel_gram(O, sup), C.T @ C, size=N, what="G = CᵀC")
    s_svd, _, g1 = _parallel_svd(O, sup)
    s_eig, _, g2 = _parallel_svd(O, sup, max_entries=0)
    assert not g1 and g2
    # σ from √λ(CᵀC) is accurate to √(eps)·‖C‖ only
    assert float((s_svd - s_eig).abs().max()) <= math.sqrt(tol(F, N)) * max(float(s_svd.max()), 1.0)


@given(cst.metric_compatible_walks(max_n=4, max_d=3))
def test_float32_walks_use_float32_tolerances(walk):
    P, O, _ = walk
    w32 = ConnectionWalk.from_edges(P.float(), O.float())
    D = diagnose(w32)
    assert bool(D.hypotheses_t3()) and bool(D.conclusions_t3()), D.summary()
    assert D.orthogonal.tol == pytest.approx(tol(torch.float32, O.shape[-1], scale=max(O.shape[-1], 1)), rel=0.5)
    # a float32-sized defect is still caught when it is larger than float32 rounding
    O2 = O.clone()
    O2[0, 0] = O2[0, 0] * (1 + 1e-3)
    D2 = diagnose(ConnectionWalk.from_edges(P.float(), O2.float()))
    assert not bool(D2.orthogonal.holds)


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
