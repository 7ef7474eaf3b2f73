"""Graph views (networkx) agree with the linear-algebra diagnostics: irreducibility, closed classes,
aperiodicity, reversibility (Kolmogorov on a cycle basis vs detailed balance), stationary π,
flatness (holonomy vs the dimension of parallel sections); edge data; errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.device import default_device
from numerics.errors import DTypeError, NonFiniteError, ShapeError, UndefinedError
from numerics.graphs import (
    closed_classes,
    holonomies,
    is_aperiodic,
    is_irreducible,
    is_reversible,
    period,
    stationary_distribution,
    to_networkx,
)
from numerics.laplacian import communicating_classes, diagnose, reachability, stationary_info
from numerics.markov import classes_from_reachability
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk
from theory.report import record

F = torch.float64
DEV = default_device()

walk_matrices = st.one_of(
    cst.row_stochastic(min_n=1, max_n=6, zeros=True),
    cst.row_stochastic(min_n=1, max_n=6),
    cst.reversible_walks(min_n=1, max_n=6, zeros=True).map(lambda pp: pp[0]),
    cst.reversible_walks(min_n=1, max_n=6).map(lambda pp: pp[0]),
)


@given(cst.metric_compatible_walks(max_n=4, max_d=2))
def test_to_networkx_edge_data(walk):
    P, O, _ = walk
    w = ConnectionWalk.from_edges(P, O)
    G = to_networkx(w)
    n, d = O.shape[0], O.shape[-1]
    assert G.number_of_nodes() == n and G.graph["d"] == d
    assert G.number_of_edges() == int((P > 0).sum())
    for i, j, data in G.edges(data=True):
        assert data["weight"] == P[i, j].item()
        # edge_transports() returns B_ij / P_ij: equal to O_ij up to one rounding
        np.testing.assert_allclose(data["transport"], O[i, j].cpu().numpy(), rtol=0, atol=tol(F, d))
        np.testing.assert_allclose(data["block"], (P[i, j] * O[i, j]).cpu().numpy(), rtol=0, atol=tol(F, 1))


@given(walk_matrices)
def test_irreducibility_and_closed_classes_agree(P):
    info = stationary_info(P)
    assert is_irreducible(P) == bool(info.irreducible)
    assert bool(reachability(P > 0).all()) == is_irreducible(P)
    assert len(closed_classes(P)) == int(info.n_closed)
    # Tarjan (scipy) vs transitive closure by boolean matrix squaring
    same, closed, nc = communicating_classes(P > 0)
    same_r, closed_r, nc_r = classes_from_reachability(reachability(P > 0))
    assert bool((same == same_r).all()) and bool((closed == closed_r).all()) and int(nc) == int(nc_r)


@given(walk_matrices)
def test_aperiodicity_agrees_with_primitivity(P):
    if not is_irreducible(P):
        with pytest.raises(UndefinedError):
            period(P)
        return
    n = P.shape[0]
    # Wielandt: an irreducible P is primitive (aperiodic) iff P^((n−1)²+1) > 0 entrywise
    S = (P > 0).to(F)
    Q = torch.linalg.matrix_power(S, (n - 1) ** 2 + 1)
    primitive = bool((Q > 0).all())
    assert is_aperiodic(P) == primitive == (period(P) == 1)


@pytest.mark.theorem("T3")
@given(walk_matrices)
def test_reversibility_graph_agrees_with_linear_algebra(P):
    n = P.shape[0]
    rev = is_reversible(P)
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(1, dtype=F, device=P.device)))
    if D.detailed_balance.reason and "ill-conditioned" in D.detailed_balance.reason:
        # the linear solve cannot resolve π (couplings below roundoff): LA must say so explicitly,
        # not answer; the graph route (ratios along a spanning tree) still answers exactly
        assert not bool(D.detailed_balance.holds) and bool(torch.isnan(D.pi).all())
        assert float(stationary_info(P).condition) * tol(F, n) >= 1
        return
    la = bool(D.detailed_balance.holds)
    assert rev.holds == la, (rev.reason, D.detailed_balance, P)
    if rev.holds:
        # LA π carries the condition number of its solve (see check_graph_pi_against_linear_algebra)
        kappa = max(float(stationary_info(P).condition), 1.0)
        err = float(torch.linalg.vector_norm(torch.as_tensor(rev.pi, dtype=F, device=P.device) - D.pi))
        bound = kappa * tol(F, 2 * n, scale=float(torch.linalg.vector_norm(D.pi)))
        assert err <= bound, f"graph π vs LA π: |err|={err:.3e} > κ·tol={bound:.3e} (κ = {kappa:.3e})"
        r = err / float(torch.linalg.vector_norm(D.pi))
        assert rev.unique == bool(D.pi_unique)
        record("T3", residual=r)


@given(walk_matrices)
def test_stationary_distribution_graph_agrees_with_linear_algebra(P):
    info = stationary_info(P)
    if int(info.n_closed) != 1:
        with pytest.raises(UndefinedError):
            stationary_distribution(P)
        return
    check_graph_pi_against_linear_algebra(P, info)


def check_graph_pi_against_linear_algebra(P: torch.Tensor, info) -> float:
    """Graph π (spanning-tree ratios, or a solve on the closed class) against the LA π.

    Error budget. Each route's rounding is a backward error of relative size ``tol(F, n)`` (n
    accumulated operations per entry: LU of an n×n matrix, or a product of ≤ n−1 edge ratios). The
    LA π solves ``π (ρI − P + 11ᵀ) = 1ᵀ``; a backward-stable solve gives
    ``‖π̂ − π‖ ≤ κ · tol(F, n) · ‖π‖`` with ``κ = info.condition`` (first order in the backward
    error; the LA route reports π undefined when ``κ · tol(F, n) ≥ 1``). The graph route computes
    the π of the exactly-balanced walk that ``P`` rounds (a relative perturbation of P of size
    ``tol(F, n)``), so it too is within ``κ · tol(F, n) · ‖π‖`` of the Perron vector of ``P``. The
    two routes therefore differ by at most ``2κ · tol(F, n) · ‖π‖ = κ · tol(F, 2n, scale=‖π‖)``.
    Independently of κ, both must be stationary to roundoff: ``‖πP − π‖_∞ ≤ tol(F, n)`` (a
    backward-error check that ill-conditioning cannot excuse)."""
    n = P.shape[0]
    kappa = float(info.condition)
    try:
        pi_g = torch.as_tensor(stationary_distribution(P), dtype=F, device=P.device)
    except UndefinedError as e:
        # not reversible, so the graph route needs the same solve: it may decline only for the same
        # reason as LA, and then LA must decline too
        assert "ill-conditioned" in str(e) and bool(torch.isnan(info.pi).all()), (e, info.reasons)
        assert kappa * tol(F, n) >= 1 and "ill-conditioned" in info.reasons[0]
        return 0.0
    assert float(((pi_g @ P) - pi_g).abs().max()) <= tol(F, n), "graph π is not stationary"
    if bool(torch.isnan(info.pi).any()):
        # LA declines to answer: it must be because the solve is too ill-conditioned to resolve π,
        # and it must say so; the graph route still answers (checked stationary above)
        assert kappa * tol(F, n) >= 1 and "ill-conditioned" in info.reasons[0], (kappa, info.reasons)
        return 0.0
    assert float(((info.pi @ P) - info.pi).abs().max()) <= tol(F, n), "LA π is not stationary"
    err = float(torch.linalg.vector_norm(pi_g - info.pi))
    bound = max(kappa, 1.0) * tol(F, 2 * n, scale=float(torch.linalg.vector_norm(info.pi)))
    assert err <= bound, f"graph π vs LA π: |err|={err:.3e} > κ·tol={bound:.3e} (κ = {kappa:.3e})"
    return err


@st.composite
def flat_or_not(draw):
    n = draw(st.integers(1, 4))
    d = draw(st.integers(1, 2))
    P, _ = draw(cst.reversible_walks(n, zeros=draw(st.booleans())))
    if draw(st.booleans()):
        _, O = draw(cst.flat_connections(n, d))
    else:
        _, _, O = (None, None, draw(cst.metric_compatible_walks(n, d))[1])
    return P, O


@pytest.mark.theorem("T3")
@given(flat_or_not())
def test_flatness_holonomy_agrees_with_parallel_section_dimension(case):
    P, O = case
    w = ConnectionWalk.from_edges(P, O)
    fl = holonomies(w)
    D = diagnose(w)
    assert fl.holds == bool(D.flat.holds), (fl.residual, D.flat, fl.reason)
    if fl.holds:
        # frames reproduce every transport: O_ij = R_i R_j⁻¹ on the support
        R = fl.frames
        for i, j, data in to_networkx(w).edges(data=True):
            np.testing.assert_allclose(
                R[i] @ np.linalg.inv(R[j]), data["transport"], rtol=0, atol=tol(F, 4 * O.shape[-1])
            )
        assert int(D.parallel_dim) == O.shape[-1] * int(D.n_components)
    record("T3", residual=fl.residual if fl.holds else 0.0)


@pytest.mark.theorem("T3")
def test_holonomy_detects_a_twist_on_one_cycle():
    n, d = 3, 2
    P = torch.full((n, n), 1 / 3, dtype=F, device=DEV)
    O = torch.eye(d, dtype=F, device=DEV).expand(n, n, d, d).clone()
    c, s = np.cos(0.3), np.sin(0.3)
    Rm = torch.tensor([[c, -s], [s, c]], dtype=F, device=DEV)
    O[0, 1], O[1, 0] = Rm, Rm.T
    fl = holonomies(ConnectionWalk.from_edges(P, O))
    assert not fl.holds
    bad = [h for h in fl.holonomies if h.defect > 1e-6]
    assert bad and all(abs(np.trace(h.matrix) - 2 * c) < 1e-12 or h.defect < 1e-6 for h in bad)


def test_graph_bad_input():
    with pytest.raises(DTypeError):
        to_networkx(torch.eye(2, dtype=torch.complex128))
    bad = torch.eye(2, dtype=F)
    bad[0, 1] = float("nan")
    with pytest.raises(NonFiniteError):
        to_networkx(bad)
    with pytest.raises(ShapeError):
        to_networkx(torch.zeros(2, 3, dtype=F))
    with pytest.raises(ShapeError):
        to_networkx(torch.zeros(2, 2, 3, 2, dtype=F))  # non-square blocks


def test_graph_errors():
    P = torch.full((2, 3, 3), 1 / 3, dtype=F, device=DEV)
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F, device=DEV))
    with pytest.raises(ShapeError):
        to_networkx(w)
    G = to_networkx(w, index=1)
    assert G.number_of_edges() == 9
    with pytest.raises(ShapeError):
        holonomies(P[0])  # no transports
    disc = torch.block_diag(torch.ones(2, 2, dtype=F) / 2, torch.ones(2, 2, dtype=F) / 2).to(DEV)
    with pytest.raises(UndefinedError, match="closed classes"):
        stationary_distribution(disc)
    rev = is_reversible(disc)
    assert rev.holds and not rev.unique and "not unique" in rev.reason
    causal = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=F, device=DEV)
    r = is_reversible(causal)
    assert not r.holds and r.residual == float("inf") and np.isnan(r.pi).all()


def test_nearly_decomposable_reversible_walk_is_reported_ill_conditioned_not_wrong():
    """Found by Hypothesis (dev profile): a reversible walk with couplings ~1e-257. Dense LA cannot
    resolve its π and must say so; Kolmogorov on the graph still certifies reversibility and gives π."""
    K = torch.tensor([[1.0, 1e-200, 0.0], [1e-200, 1.0, 1.0], [0.0, 1.0, 3.0]], dtype=F)  # symmetric
    P = K / K.sum(-1, keepdim=True)
    pi_true = K.sum(-1) / K.sum()
    info = stationary_info(P)
    assert bool(torch.isnan(info.pi).all()) and "ill-conditioned" in info.reasons[0]
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(1, dtype=F)))
    assert not bool(D.detailed_balance.holds) and "ill-conditioned" in D.detailed_balance.reason
    rev = is_reversible(P)
    assert rev.holds
    assert_close(torch.as_tensor(rev.pi, dtype=F), pi_true, size=9, what="graph π")


def test_graph_and_la_stationary_pi_agree_within_the_condition_number():
    """Found by Hypothesis (dev profile): K symmetric with one coupling 5e-13 (a nearly decomposable
    reversible walk, cond(I − P + 11ᵀ) ≈ 5.9e10). LA π and graph π differ by ~1e-6 ≫ tol(F, 9) =
    1.3e-13, but within κ · tol(F, 2n). Against the exact Perron vector of the float P (mpmath, 60
    digits: π = (0.4951456139215, 0.009708772157485, 0.4951456139210)) the LA error is 9.5e-7 and the
    graph error 4.2e-8: both within κ · tol(F, 3) ≈ 2.5e-3, the graph route being the more accurate."""
    K = np.array([[0.01, 1e-12, 1.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]])
    K = (K + K.T) / 2
    P = torch.as_tensor(K / K.sum(-1, keepdims=True), dtype=F, device=DEV)
    info = stationary_info(P)
    assert 1e10 < float(info.condition) < 1e11 and not bool(torch.isnan(info.pi).any())
    err = check_graph_pi_against_linear_algebra(P, info)
    assert err > tol(F, 9)  # the plain tolerance alone could not have passed: κ is needed
    exact = torch.tensor([0.4951456139215, 0.009708772157485366, 0.4951456139210146], dtype=F, device=DEV)
    kt = float(info.condition) * tol(F, 3)
    assert float(torch.linalg.vector_norm(info.pi - exact)) <= kt
    pi_g = torch.as_tensor(stationary_distribution(P), dtype=F, device=DEV)
    assert float(torch.linalg.vector_norm(pi_g - exact)) <= kt
    # and the graph π is the π of the exactly-balanced walk that P rounds: D / ΣD
    assert_close(pi_g, torch.as_tensor(K.sum(-1) / K.sum(), dtype=F, device=DEV), size=3, what="graph π")


def test_ill_conditioned_pi_is_reported_undefined_and_graph_still_answers():
    """Found by Hypothesis (dev profile): P = [[1, 3.3e-247], [3.3e-247, 1]] (rows sum to 1 in float).
    cond(I − P + 11ᵀ) = ∞ in float: LA reports π undefined with the reason; the graph gives (½, ½)."""
    c = 3.3345e-247
    P = torch.tensor([[1.0, c], [c, 1.0]], dtype=F, device=DEV)
    info = stationary_info(P)
    assert bool(torch.isnan(info.pi).all()) and "ill-conditioned" in info.reasons[0]
    assert check_graph_pi_against_linear_algebra(P, info) == 0.0
    assert_close(
        torch.as_tensor(stationary_distribution(P), dtype=F, device=DEV),
        torch.tensor([0.5, 0.5], dtype=F, device=DEV),
        size=2,
        what="graph π",
    )


def test_ill_conditioned_closed_class_of_a_reducible_walk_is_reported_undefined():
    """Found by Hypothesis (dev profile): two closed classes, one of them {0, 1} coupled by 7e-44
    (below roundoff). The per-class Perron solve is singular in float: LA must report π undefined with
    the reason (it returned NaN with no reason before); the graph certifies reversibility exactly."""
    c = 7.0065e-44
    P = torch.tensor([[1.0, c, 0.0], [c, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=F, device=DEV)
    info = stationary_info(P)
    assert int(info.n_closed) == 2 and bool(torch.isnan(info.pi).all())
    assert "ill-conditioned" in info.reasons[0] and float(info.condition) * tol(F, 3) >= 1
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(1, dtype=F, device=DEV)))
    assert not bool(D.detailed_balance.holds) and "ill-conditioned" in D.detailed_balance.reason
    rev = is_reversible(P)
    assert rev.holds and not rev.unique
    np.testing.assert_allclose(rev.pi, [0.25, 0.25, 0.5], rtol=0, atol=tol(F, 3))
    # a well-separated reducible walk still gets its per-class π and a finite condition number
    Q = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.3, 0.7]], dtype=F, device=DEV)
    iq = stationary_info(Q)
    assert_close(iq.pi, torch.tensor([0.5, 0.5, 0.0], dtype=F, device=DEV), size=3, what="π")
    assert 1.0 <= float(iq.condition) < 10


def test_ill_conditioned_non_reversible_walk_graph_route_declines_too():
    """Found by Hypothesis: a non-reversible walk whose closed class {1, 2} is coupled by 8.8e-208.
    The graph route needs a solve there as well; it raised numpy's LinAlgError before, and now
    raises UndefinedError with the reason, as LA reports π undefined."""
    c = 8.7918e-208
    P = torch.tensor(
        [[0.0, 0.0, 1.0, 0.0], [c, 1.0, 0.0, 0.0], [0.0, c, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]], dtype=F, device=DEV
    )
    info = stationary_info(P)
    assert bool(torch.isnan(info.pi).all()) and "ill-conditioned" in info.reasons[0]
    with pytest.raises(UndefinedError, match="ill-conditioned"):
        stationary_distribution(P)
    assert check_graph_pi_against_linear_algebra(P, info) == 0.0


def test_positivity_of_pi_is_structural_not_a_rounded_entry():
    """Found by Hypothesis (dev profile, seed 11): P = [[1, 1.4359e-238], [1, 0]] is irreducible, so
    π = (1, 1.4359e-238)/Σ > 0 (Perron–Frobenius) and it is reversible (one edge pair, balanced to
    1e-238). The LA solve returns π_1 = 0 — normwise accurate, but it used to report 'no positive π'.
    Positivity now comes from the class structure (transient states ⇔ zeros)."""
    c = 1.4359e-238
    P = torch.tensor([[1.0, c], [1.0, 0.0]], dtype=F, device=DEV)
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(1, dtype=F, device=DEV)))
    assert bool(D.positive_stationary.holds) and bool(D.detailed_balance.holds), D.summary()
    assert is_reversible(P).holds
    assert_close(D.pi, torch.tensor([1.0, c], dtype=F, device=DEV), size=2, what="π")
    # a genuinely transient state still makes π non-positive
    Q = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=F, device=DEV)
    Dq = diagnose(ConnectionWalk.from_edges(Q, torch.eye(1, dtype=F, device=DEV)))
    assert not bool(Dq.positive_stationary.holds) and not bool(Dq.detailed_balance.holds)


def test_one_way_edge_is_a_certain_detailed_balance_failure_even_below_tolerance():
    """Found by Hypothesis (dev profile, seed 21): P = [[1, 0, 4.343e-174], [⅓, ⅓, ⅓], [⅓, ⅓, ⅓]] is
    irreducible (π > 0) with edge 1→0 but no edge 0→1: not reversible, exactly. LA's detailed-balance
    residual is ~1e-174 (π_1, π_2 ~ 1e-174), below any tolerance, so it used to report 'holds'. The
    zero pattern is exact data; the diagnostic now fails detailed balance on it with the reason."""
    P = torch.tensor([[1.0, 0.0, 4.343e-174], [1 / 3, 1 / 3, 1 / 3], [1 / 3, 1 / 3, 1 / 3]], dtype=F, device=DEV)
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(1, dtype=F, device=DEV)))
    assert float(D.detailed_balance.residual) <= D.detailed_balance.tol  # numerically tiny ...
    assert not bool(D.detailed_balance.holds) and "no reverse edge" in D.detailed_balance.reason  # ... certain
    assert not is_reversible(P).holds
