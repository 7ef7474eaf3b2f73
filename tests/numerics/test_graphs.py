"""Graph views (networkx) agree with the linear-algebra diagnostics: irreducibility, closed classes,
aperiodicity, reversibility (Kolmogorov on a cycle basis vs detailed balance), stationary π,
flatness (holonomy vs the dimension of parallel sections); edge data; errors. Then each graph view on
its own, against hand-built walks whose answer is known by construction."""

from __future__ import annotations

import math
import re
from itertools import combinations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.device import default_device
from numerics.errors import (
    DTypeError,
    NonFiniteError,
    NotStochasticError,
    ShapeError,
    UndecidedTruthError,
    UndefinedError,
)
from numerics.graphs import (
    closed_classes,
    holonomies,
    is_aperiodic,
    is_irreducible,
    is_reversible,
    kolmogorov_cycles,
    period,
    reversible_by_span,
    softmax_triangle_identity,
    stationary_distribution,
    to_networkx,
)
from numerics.laplacian import communicating_classes, diagnose, reachability, stationary_info
from numerics.markov import classes_from_reachability
from numerics.tolerance import assert_close, tol
from numerics.walk import ConnectionWalk
from tests.helpers import assert_bad_input, raises_named, t
from theory.report import record
from theory.rounding import rounding_error

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


# ======================================================================================================
# Each graph view on its own. Expected values come from hand-built walks whose answer is known by
# construction (cycle lengths, doubly stochastic chains, spanning-tree ratios written out, products of
# transports around a cycle, softmax log-ratios in float64 numpy), never from numerics.graphs itself.
# ======================================================================================================
f64 = torch.float64


def cycle_walk(n):
    """i → i+1 mod n with probability 1: period n."""
    P = np.zeros((n, n))
    for i in range(n):
        P[i, (i + 1) % n] = 1.0
    return P


# ------------------------------------------------------------------------------------- period
@pytest.mark.parametrize("n", [2, 3, 5])
def test_period_of_a_directed_cycle_is_its_length(n):
    P = cycle_walk(n)
    assert period(t(P)) == n
    assert not is_aperiodic(t(P))
    assert is_irreducible(t(P))


def graph_walk(n, edges):
    P = np.zeros((n, n))
    for a, b in edges:
        P[a, b] = 1.0
    return P / P.sum(1, keepdims=True)


@pytest.mark.parametrize(
    "edges, expected",
    [
        # cycles 0-1-2-3-0 (4) and 0-4-5-6-7-0 (5): gcd 1
        ([(0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (4, 5), (5, 6), (6, 7), (7, 0)], 1),
        # cycles 0-1-2-3-0 (4) and 0-4-5-6-7-3-0 (6): gcd 2
        ([(0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (4, 5), (5, 6), (6, 7), (7, 3)], 2),
        # cycles 0-1-2-0 (3) and 0-3-4-5-6-7-0 (6): gcd 3
        ([(0, 1), (1, 2), (2, 0), (0, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 0)], 3),
    ],
)
def test_period_is_the_gcd_of_cycle_lengths(edges, expected):
    P = graph_walk(8, edges)
    assert period(t(P)) == expected
    assert is_aperiodic(t(P)) == (expected == 1)


def test_period_with_a_self_loop_is_one():
    P = cycle_walk(4)
    P[2] = [0, 0, 0.5, 0.5]
    assert period(t(P)) == 1


def test_period_of_a_reducible_walk_is_undefined():
    P = np.array([[1.0, 0.0], [0.5, 0.5]])
    raises_named(UndefinedError, "walk", lambda: period(t(P)))


def test_closed_classes_of_a_walk_with_two_traps():
    P = np.array([[0.2, 0.4, 0.4, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]])
    assert sorted(map(sorted, closed_classes(t(P)))) == [[1], [2, 3]]
    assert not is_irreducible(t(P))
    raises_named(UndefinedError, "walk", lambda: stationary_distribution(t(P)))


# ------------------------------------------------------------------------------------- reversibility
def reversible_from_symmetric(K):
    K = np.asarray(K, dtype=float)
    return K / K.sum(1, keepdims=True), K.sum(1) / K.sum()


def test_reversible_walk_pi_is_row_sums_of_the_symmetric_kernel_and_balance_holds():
    K = np.array([[1.0, 2.0, 0.0, 0.5], [2.0, 0.0, 3.0, 1.5], [0.0, 3.0, 1.0, 4.0], [0.5, 1.5, 4.0, 2.0]])
    P, pi = reversible_from_symmetric(K)
    r = is_reversible(t(P))
    assert r.holds and bool(r) and r.unique and r.reason == ""
    np.testing.assert_allclose(r.pi, pi, rtol=0, atol=1e-14)
    assert 0.0 <= r.balance_residual <= 1e-15
    assert 0.0 <= r.residual <= 1e-13
    assert len(r.cycles) == 2  # 5 undirected edges between distinct nodes, 4 nodes: 5 − 4 + 1 basis cycles
    assert 0 < r.tol < 1e-12


def test_non_reversible_three_cycle_residuals_are_the_literal_ones():
    """P = rotation-biased 3-cycle; Kolmogorov log-ratio 3·log(7/3); tree π from root 0."""
    P = np.array([[0.0, 0.7, 0.3], [0.3, 0.0, 0.7], [0.7, 0.3, 0.0]])
    r = is_reversible(t(P))
    assert not r.holds and not bool(r)
    assert math.isclose(r.residual, 3 * math.log(7 / 3), rel_tol=1e-13)
    # spanning tree edges 0–1, 0–2: π1/π0 = P01/P10, π2/π0 = P02/P20
    p = np.array([1.0, 0.7 / 0.3, 0.3 / 0.7])
    p /= p.sum()
    np.testing.assert_allclose(r.pi, p, rtol=1e-14)
    bal = abs(p[1] * 0.7 - p[2] * 0.3)
    assert math.isclose(r.balance_residual, bal, rel_tol=1e-12)
    assert r.reason.startswith("Kolmogorov fails on cycle")
    assert f"{3 * math.log(7 / 3):.3e}" in r.reason
    ((cyc, lr),) = r.cycles
    assert sorted(cyc) == [0, 1, 2] and math.isclose(abs(lr), 3 * math.log(7 / 3), rel_tol=1e-13)
    # the stationary law of this doubly stochastic chain is uniform (linear-solve route)
    np.testing.assert_allclose(stationary_distribution(t(P)), np.full(3, 1 / 3), atol=1e-14)


def test_kolmogorov_log_ratio_sign_follows_the_cycle_orientation():
    P = np.array([[0.0, 0.7, 0.3], [0.3, 0.0, 0.7], [0.7, 0.3, 0.0]])
    ((cyc, lr),) = kolmogorov_cycles(to_networkx(t(P)))
    L = len(cyc)
    lit = sum(math.log(P[cyc[k], cyc[(k + 1) % L]]) - math.log(P[cyc[(k + 1) % L], cyc[k]]) for k in range(L))
    assert math.isclose(lr, lit, rel_tol=1e-14) and abs(lr) > 1


def test_one_way_edge_reason_names_the_edge():
    P = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    r = is_reversible(t(P))
    assert not r.holds
    assert r.residual == math.inf and r.balance_residual == math.inf
    assert np.isnan(r.pi).all() and not r.unique and r.cycles == []
    assert r.reason.startswith("edge ") and "has no reverse edge" in r.reason


def test_zero_row_is_not_reversible_and_says_so():
    P = np.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])
    r = is_reversible(t(P))
    assert not r.holds
    assert "node 2 has no outgoing edge (zero row)" in r.reason
    assert "2 components" in r.reason  # node 2 is its own component


def test_two_components_each_get_half_the_mass():
    K1 = np.array([[1.0, 2.0], [2.0, 1.0]])
    K2 = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 1.0], [3.0, 1.0, 2.0]])
    P = np.zeros((5, 5))
    P[:2, :2] = K1 / K1.sum(1, keepdims=True)
    P[2:, 2:] = K2 / K2.sum(1, keepdims=True)
    r = is_reversible(t(P))
    assert r.holds and not r.unique
    np.testing.assert_allclose(r.pi[:2], 0.5 * K1.sum(1) / K1.sum(), atol=1e-15)
    np.testing.assert_allclose(r.pi[2:], 0.5 * K2.sum(1) / K2.sum(), atol=1e-15)
    assert r.reason == "2 components: π not unique, each component has mass 1/2"


def test_stationary_distribution_of_a_walk_with_transient_states():
    P = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.2, 0.8, 0.0], [0.0, 0.0, 0.1, 0.9], [0.0, 0.6, 0.4, 0.0]])
    # closed class {1, 2, 3}: solve π = π P_C by hand-free linear algebra on the literal matrix
    C = P[1:, 1:]
    w, V = np.linalg.eig(C.T)
    v = np.real(V[:, np.argmin(abs(w - 1))])
    ref = np.concatenate([[0.0], v / v.sum()])
    np.testing.assert_allclose(stationary_distribution(t(P)), ref, atol=1e-13)


# ------------------------------------------------------------------------------------- networkx view
def test_to_networkx_of_a_batched_walk_needs_an_index():
    P = np.stack([cycle_walk(3), np.full((3, 3), 1 / 3)])
    T = np.eye(2)
    w = ConnectionWalk.from_sha(t(P), t(T))
    raises_named(ShapeError, "walk", lambda: to_networkx(w))
    G0, G1 = to_networkx(w, index=0), to_networkx(w, index=(1,))
    assert sorted(G0.edges) == [(0, 1), (1, 2), (2, 0)]
    assert G1.number_of_edges() == 9 and G1.graph == {"n": 3, "d": 2, "dtype": torch.float64}
    np.testing.assert_array_equal(G1[0][1]["transport"], np.eye(2))
    assert G1[0][1]["weight"] == pytest.approx(1 / 3, abs=1e-16)
    np.testing.assert_allclose(G1[0][1]["block"], np.eye(2) / 3, atol=1e-16)
    raises_named(ShapeError, "walk", lambda: to_networkx(t(P)))
    assert sorted(to_networkx(t(P), index=0).edges) == [(0, 1), (1, 2), (2, 0)]
    B = np.ones((2, 2, 3, 3, 2, 2))
    raises_named(ShapeError, "index", lambda: to_networkx(ConnectionWalk.from_blocks(t(B)), index=0))


def test_to_networkx_of_a_walk_matrix_has_no_transports():
    G = to_networkx(t(np.array([[0.0, 1.0], [0.25, 0.75]])))
    assert G.graph == {"n": 2, "d": None, "dtype": torch.float64}
    assert sorted(G.edges(data=True)) == [(0, 1, {"weight": 1.0}), (1, 0, {"weight": 0.25}), (1, 1, {"weight": 0.75})]
    raises_named(ShapeError, "walk", lambda: holonomies(G))


# ------------------------------------------------------------------------------------- holonomy
def rot(theta):
    return np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])


def edges_walk(P, O):
    return ConnectionWalk.from_edges(t(P), t(O))


def test_holonomy_of_a_one_way_cycle_is_the_product_around_it():
    g = np.random.default_rng(3)
    P = cycle_walk(3)
    O = np.zeros((3, 3, 2, 2))
    for i in range(3):
        O[i, (i + 1) % 3] = g.standard_normal((2, 2)) + 2 * np.eye(2)
    fl = holonomies(edges_walk(P, O))
    (h,) = fl.holonomies
    prod = O[0, 1] @ O[1, 2] @ O[2, 0]
    # the holonomy is conjugate to the product around the cycle: same trace and determinant
    assert math.isclose(np.trace(h.matrix), np.trace(prod), rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(np.linalg.det(h.matrix), np.linalg.det(prod), rel_tol=1e-12)
    assert math.isclose(h.defect, np.linalg.norm(h.matrix - np.eye(2)), rel_tol=1e-15)
    assert h.cycle[0] == h.edge[0] and h.cycle[-1] == h.edge[1] and sorted(h.cycle) == [0, 1, 2]
    assert not fl.holds and fl.residual == h.defect
    # frames: x_i = O_ij x_j along tree edges, with R_root = I
    assert np.allclose(fl.frames[0], np.eye(2))


def test_flat_connection_has_identity_holonomies_and_consistent_frames():
    g = np.random.default_rng(4)
    n = 4
    R = [g.standard_normal((2, 2)) + 2 * np.eye(2) for _ in range(n)]
    P = np.full((n, n), 1 / n)
    O = np.array([[R[i] @ np.linalg.inv(R[j]) for j in range(n)] for i in range(n)])
    fl = holonomies(edges_walk(P, O))
    assert fl.holds and bool(fl) and fl.reason == ""
    assert len(fl.holonomies) == n * n - (n - 1)  # every edge but the n − 1 tree edges
    assert fl.residual <= fl.tol
    for i in range(n):
        for j in range(n):
            np.testing.assert_allclose(fl.frames[i], O[i, j] @ fl.frames[j], atol=1e-12)
    # twist one edge: exactly one holonomy, on that edge or on the cycle it closes, moves
    O2 = O.copy()
    O2[2, 3] = O[2, 3] @ (R[3] @ rot(0.3) @ np.linalg.inv(R[3]))
    fl2 = holonomies(edges_walk(P, O2))
    assert not fl2.holds and fl2.residual > 0.1


def singular_tree_edge_walk():
    """Two tokens swapping, O_01 = diag(1, 0) (singular) on the spanning-tree edge, O_10 = I."""
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 2, 2))
    O[0, 1] = np.array([[1.0, 0.0], [0.0, 0.0]])
    O[1, 0] = np.eye(2)
    return edges_walk(P, O)


def test_singular_transport_on_a_tree_edge_is_a_reason_not_a_crash():
    fl = holonomies(singular_tree_edge_walk())
    assert not fl.holds
    assert fl.reason == "singular transport O_01 on a spanning-tree edge"


def test_two_way_edge_with_inverse_transports_is_flat_and_with_others_is_not():
    A = rot(0.4) * 2.0
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 2, 2))
    O[0, 1], O[1, 0] = A, np.linalg.inv(A)
    fl = holonomies(edges_walk(P, O))
    assert fl.holds and len(fl.holonomies) == 1
    O[1, 0] = A.T
    fl = holonomies(edges_walk(P, O))
    h = fl.holonomies[0]
    lit = np.linalg.norm(A @ A.T - np.eye(2))  # around 0 → 1 → 0 the transport is O_01 O_10
    assert math.isclose(h.defect, lit, rel_tol=1e-12) and not fl.holds


# ------------------------------------------------------------------------------------- triangle identity
def softmax_case(seed, n=4, d=3, scale=0.7, mask=()):
    g = np.random.default_rng(seed)
    X, M = g.standard_normal((n, d)), g.standard_normal((d, d))
    S = scale * X @ M @ X.T
    for i, j in mask:
        S[i, j] = S[j, i] = -np.inf
    A = np.exp(S - S.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    return A, X, M, scale


def literal_log_ratio(X, M, scale, i, j, k):
    Ma = (M - M.T) / 2
    return 2 * scale * (X[j] - X[i]) @ Ma @ (X[k] - X[i])


def test_triangle_identity_on_full_softmax():
    A, X, M, s = softmax_case(5)
    ti = softmax_triangle_identity(t(A), t(X), t(M), scale=s)
    assert ti.holds and ti.n_triangles == 4
    assert ti.residual <= 1e-12
    lit = max(abs(literal_log_ratio(X, M, s, *c)) for c in combinations(range(4), 3))
    assert math.isclose(ti.max_log_ratio, lit, rel_tol=1e-10)
    assert 0 < ti.tol < 1e-9


def test_triangle_identity_skips_masked_edges():
    A, X, M, s = softmax_case(6, n=5, mask=[(0, 1)])
    ti = softmax_triangle_identity(t(A), t(X), t(M), scale=s)
    assert ti.n_triangles == 10 - 3  # the 3 triangles through edge {0, 1} are gone
    assert ti.holds


def test_triangle_identity_fails_for_a_wrong_scale():
    A, X, M, s = softmax_case(7)
    ti = softmax_triangle_identity(t(A), t(X), t(M), scale=2 * s)
    lit = max(abs(literal_log_ratio(X, M, s, *c)) for c in combinations(range(4), 3))
    assert not ti.holds and math.isclose(ti.residual, lit, rel_tol=1e-9)


def test_triangle_identity_mismatched_shapes_name_x():
    A, X, M, s = softmax_case(8)
    raises_named(ShapeError, "X", lambda: softmax_triangle_identity(t(A), t(X[:3]), t(M), scale=s))
    raises_named(ShapeError, "X", lambda: softmax_triangle_identity(t(A), t(X), t(M[:2, :2]), scale=s))
    raises_named(ShapeError, "A", lambda: softmax_triangle_identity(t(A[None]), t(X), t(M), scale=s))


# ------------------------------------------------------------------------------------- span criterion
def test_span_criterion_symmetric_form_holds_and_antisymmetric_fails_with_its_norm():
    g = np.random.default_rng(9)
    X = g.standard_normal((5, 3))
    S = g.standard_normal((3, 3))
    assert reversible_by_span(t(X), t(S + S.T)) == (True, pytest.approx(0.0, abs=1e-15))
    K = S - S.T
    holds, r = reversible_by_span(t(X), t(K))
    assert not holds
    assert math.isclose(r, np.linalg.norm(K), rel_tol=1e-12)  # span is R³ and M_a = K: ‖K‖_F


def test_span_criterion_collinear_tokens_and_single_token():
    v = np.array([1.0, 2.0, -1.0])
    X = np.outer([0.0, 1.0, -2.0, 3.0], v) + np.array([0.5, 0.5, 0.5])
    K = np.array([[0.0, 1.0, 2.0], [-1.0, 0.0, 3.0], [-2.0, -3.0, 0.0]])
    holds, r = reversible_by_span(t(X), t(K))
    assert holds and r <= 1e-14
    assert reversible_by_span(t(X[:1]), t(K)) == (True, 0.0)
    assert reversible_by_span(t(np.repeat(X[:1], 3, 0)), t(K)) == (True, 0.0)
    # tokens spanning a plane: r = ‖Uᵀ M_a U‖_F for an orthonormal basis U of that plane
    X2 = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    holds, r = reversible_by_span(t(X2), t(K))
    assert not holds and math.isclose(r, math.sqrt(2) * 1.0, rel_tol=1e-14)


# ------------------------------------------------------------------------------------- error messages
P22 = torch.tensor([[0.5, 0.5], [0.25, 0.75]], dtype=f64)
SOFT = softmax_case(11, n=3, d=2)

BAD_INPUT = [
    (
        lambda: to_networkx(torch.ones(2, 2, dtype=torch.int64)),
        "DTypeError",
        "walk: expected a floating tensor (float32/float64), got torch.int64; cast explicitly",
    ),
    (lambda: to_networkx(torch.ones(3, dtype=f64)), "ShapeError", "walk: expected shape (..., n, n), got (3,)"),
    (lambda: to_networkx(torch.ones(2, 3, dtype=f64)), "ShapeError", "walk: has n=2 and 3 in one shape (2, 3)"),
    (lambda: to_networkx(P22 * float("nan")), "NonFiniteError", "walk: contains 4 NaN/inf entries"),
    (
        lambda: to_networkx(P22 - 0.5),
        "NegativeWeightError",
        "walk: has negative entries (min -2.500e-01); weights must be >= 0",
    ),
    (
        lambda: to_networkx(torch.stack([P22, P22])),
        "ShapeError",
        "walk: batched walk (batch shape (2,)): pass index= to choose one element",
    ),
    (
        lambda: to_networkx(torch.ones(2, 3, 2, 2, 1, 1, dtype=f64), index=0),
        "ShapeError",
        "index: index 0 does not select one walk of batch shape (2, 3)",
    ),
    (lambda: holonomies(P22), "ShapeError", "walk: graph has no transports (built from P alone)"),
    (
        lambda: period(torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=f64)),
        "UndefinedError",
        "walk: the period is defined for irreducible walks; this one is reducible",
    ),
    (
        lambda: stationary_distribution(torch.eye(2, dtype=f64)),
        "UndefinedError",
        "walk: 2 closed classes: several stationary distributions",
    ),
    (
        lambda: softmax_triangle_identity(torch.ones(3, 3, dtype=torch.int64), t(SOFT[1]), t(SOFT[2]), scale=1.0),
        "DTypeError",
        "A: expected a floating tensor",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), torch.ones(3, 2, dtype=torch.int64), t(SOFT[2]), scale=1.0),
        "DTypeError",
        "X: expected a floating tensor",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1]), torch.ones(2, 2, dtype=torch.int64), scale=1.0),
        "DTypeError",
        "M: expected a floating tensor",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0])[None], t(SOFT[1]), t(SOFT[2]), scale=1.0),
        "ShapeError",
        "A: expected shape (n, n), got (1, 3, 3)",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0])[:2], t(SOFT[1]), t(SOFT[2]), scale=1.0),
        "ShapeError",
        "A: has n=2 and 3 in one shape (2, 3)",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1])[None], t(SOFT[2]), scale=1.0),
        "ShapeError",
        "X: expected shape (n, d), got (1, 3, 2)",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1])[0], t(SOFT[2]), scale=1.0),
        "ShapeError",
        "X: expected shape (n, d), got (2,)",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1]), t(SOFT[2])[:1], scale=1.0),
        "ShapeError",
        "M: has d=1 and 2 in one shape (1, 2)",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]) * float("nan"), t(SOFT[1]), t(SOFT[2]), scale=1.0),
        "NonFiniteError",
        "A: contains 9 NaN/inf entries",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1]) * float("inf"), t(SOFT[2]), scale=1.0),
        "NonFiniteError",
        "X: contains 6 NaN/inf entries",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1]), t(SOFT[2]) * float("nan"), scale=1.0),
        "NonFiniteError",
        "M: contains 4 NaN/inf entries",
    ),
    (
        lambda: softmax_triangle_identity(t(SOFT[0]), t(SOFT[1])[:2], t(SOFT[2]), scale=1.0),
        "ShapeError",
        "X: has n=2 but A has n=3 (shape (2, 2))",
    ),
]


@pytest.mark.parametrize("call, err, message", BAD_INPUT)
def test_bad_input_messages_name_the_argument_and_what_was_expected(call, err, message):
    assert_bad_input(call, err, message)


# ------------------------------------------------------------------------------------- batched index
def test_every_graph_query_reads_the_batch_element_it_is_given():
    full = np.full((3, 3), 1 / 3)
    cyc = cycle_walk(3)
    P = t(np.stack([cyc, full]))
    assert (period(P, index=0), period(P, index=1)) == (3, 1)
    assert (is_aperiodic(P, index=0), is_aperiodic(P, index=1)) == (False, True)
    twotraps = np.array([[0.2, 0.4, 0.4], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    Q = t(np.stack([full, twotraps]))
    assert (is_irreducible(Q, index=0), is_irreducible(Q, index=1)) == (True, False)
    assert len(closed_classes(Q, index=0)) == 1 and len(closed_classes(Q, index=1)) == 2
    skew = np.array([[0.0, 0.7, 0.3], [0.3, 0.0, 0.7], [0.7, 0.3, 0.0]])
    R = t(np.stack([skew, full]))
    np.testing.assert_allclose(stationary_distribution(R, index=0), np.full(3, 1 / 3), atol=1e-14)
    raises_named(UndefinedError, "walk", lambda: stationary_distribution(Q, index=1))
    assert (is_reversible(R, index=0).holds, is_reversible(R, index=1).holds) == (False, True)


def test_a_single_isolated_token_has_period_one():
    """No edge at all: no cycle length to take the gcd of; the period is 1 by convention."""
    assert period(t([[0.0]])) == 1


def test_triangle_identity_of_float32_inputs_is_evaluated_in_float64():
    A, X, M, s = softmax_case(12)
    A32, X32, M32 = (torch.as_tensor(v, dtype=torch.float32) for v in (A, X, M))
    ti = softmax_triangle_identity(A32, X32, M32, scale=s)
    An, Xn, Mn = (v.double().numpy() for v in (A32, X32, M32))
    Ma = (Mn - Mn.T) / 2
    res = 0.0
    for i, j, k in combinations(range(4), 3):
        lr = (
            math.log(An[i, j])
            + math.log(An[j, k])
            + math.log(An[k, i])
            - math.log(An[i, k])
            - math.log(An[k, j])
            - math.log(An[j, i])
        )
        res = max(res, abs(lr - 2 * s * (Xn[j] - Xn[i]) @ Ma @ (Xn[k] - Xn[i])))
    assert res > 1e-9  # float32 softmax: the residual is visible ...
    assert math.isclose(ti.residual, res, rel_tol=1e-12)  # ... and reproduced to float64 rounding


# ------------------------------------------------------------------------------------- conditioning of π
def nearly_decomposable_cycle(eps):
    """Non-reversible 4-state walk: two strongly coupled pairs joined one way round by ε."""
    P = np.array([[0.0, 1.0, 0.0, 0.0], [0.6, 0.0, 0.4, 0.0], [0.0, 0.0, 0.0, 1.0], [0.4, 0.0, 0.6, 0.0]])
    P[1] = [0.6 + 0.4 - eps, 0.0, eps, 0.0]
    P[3] = [eps, 0.0, 1.0 - eps, 0.0]
    return P


def kappa_times_tol(P):
    from numerics.tolerance import tol

    m = P.shape[0]
    M = (np.eye(m) - P + 1.0).T
    return np.linalg.cond(M) * tol(torch.float64, m)


def coupling_bracket(target: float) -> tuple[float, float]:
    """The coupling ε of :func:`nearly_decomposable_cycle` bisected (geometrically, 200 steps) to the
    bracket ``(lo, hi)`` where κ·tol crosses ``target`` (κ·tol decreases as ε grows)."""
    lo, hi = 1e-20, 1e-2
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if kappa_times_tol(nearly_decomposable_cycle(mid)) > target:
            lo = mid
        else:
            hi = mid
    return lo, hi


def test_pi_is_refused_exactly_when_cond_times_tol_reaches_one():
    """stationary_distribution's documented criterion cond(I − P_C + 11ᵀ)·tol(float64, m) ≥ 1,
    evaluated here in numpy; ε is bisected to put the product at ≈1.5 (refused) and ≈0.5 (solved)."""

    def eps_for(target):
        return coupling_bracket(target)[1]

    P_bad = nearly_decomposable_cycle(eps_for(1.5))
    assert 1.0 <= kappa_times_tol(P_bad) < 2.0
    assert not is_reversible(t(P_bad)).holds
    msg = raises_named(UndefinedError, "walk", lambda: stationary_distribution(t(P_bad)))
    assert msg.startswith("walk: π is ill-conditioned (cond(I − P_C + 11ᵀ) = ")
    assert msg.endswith("): a nearly decomposable walk whose couplings are below roundoff")
    P_ok = nearly_decomposable_cycle(eps_for(0.5))
    assert kappa_times_tol(P_ok) < 1.0
    pi = stationary_distribution(t(P_ok))
    np.testing.assert_allclose(pi @ P_ok, pi, atol=1e-6)
    assert math.isclose(pi.sum(), 1.0, rel_tol=1e-12)


def test_triangle_identity_of_a_symmetric_form_has_zero_log_ratios():
    A, X, M, s = softmax_case(13)
    g = np.random.default_rng(13)
    S = g.standard_normal((3, 3))
    Msym = S + S.T
    Sc = s * X @ Msym @ X.T
    A = np.exp(Sc - Sc.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    ti = softmax_triangle_identity(t(A), t(X), t(Msym), scale=s)
    assert ti.holds and ti.n_triangles == 4
    assert ti.max_log_ratio <= 1e-12


def test_causal_attention_has_no_two_way_triangles():
    """One-way edges (a causal mask) take no part: no triangle, nothing to violate."""
    A, X, M, s = softmax_case(14, n=4)
    C = np.tril(A)
    C /= C.sum(1, keepdims=True)
    ti = softmax_triangle_identity(t(C), t(X), t(M), scale=s)
    assert ti.n_triangles == 0 and ti.holds and ti.residual == 0.0 and ti.max_log_ratio == 0.0


# ===================================================================================== tolerance rules
# Tolerance rules are the documented ones (docstrings of Reversibility, Flatness, TriangleIdentity,
# reversible_by_span, stationary_distribution); the tests evaluate them with numerics.tolerance.tol
# and put residuals at 0.9× and 1.1× of them, so a rule that drifts by more than 10% fails.
def tol64(size, scale=1.0):
    from numerics.tolerance import tol

    return tol(f64, size, scale=scale)


# ------------------------------------------------------------------------------------- to_networkx
def test_to_networkx_refuses_a_digraph_naming_walk():
    """The shared graph-query contract lets a DiGraph through; to_networkx itself takes none, and the
    refusal names its own parameter (it used to name a non-existent ``P``)."""
    G = to_networkx(t(cycle_walk(3)))
    msg = raises_named(DTypeError, "walk", lambda: to_networkx(G))
    assert msg == "walk: expected a ConnectionWalk, blocks or a walk matrix, got DiGraph"


def test_to_networkx_of_unbatched_blocks_reads_p_and_o_from_them():
    """A 4-dim tensor is blocks B (n, n, d, d) (not a batch of walk matrices): gauge P_ij = row-normalised
    ‖B_ij‖_F, O_ij = B_ij / P_ij (ConnectionWalk.from_blocks' default)."""
    O01, O10 = rot(0.3), 2.0 * np.eye(2)
    B = np.zeros((2, 2, 2, 2))
    B[0, 1], B[1, 0] = O01, O10
    G = to_networkx(t(B))
    assert G.graph == {"n": 2, "d": 2, "dtype": torch.float64} and sorted(G.edges) == [(0, 1), (1, 0)]
    assert G[0][1]["weight"] == pytest.approx(1.0, abs=1e-15) and G[1][0]["weight"] == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(G[0][1]["transport"], O01, atol=1e-15)
    np.testing.assert_allclose(G[1][0]["block"], O10, atol=1e-15)


def test_to_networkx_of_a_float32_walk_stores_float64_transports_and_blocks():
    P = np.array([[0.25, 0.75], [0.5, 0.5]], dtype=np.float32)
    O = np.stack([np.stack([rot(0.1 * (i + 2 * j)) for j in range(2)]) for i in range(2)]).astype(np.float32)
    w = ConnectionWalk.from_edges(torch.from_numpy(P), torch.from_numpy(O))
    G = to_networkx(w)
    for i, j in [(0, 0), (0, 1), (1, 0), (1, 1)]:
        tr, bl = G[i][j]["transport"], G[i][j]["block"]
        assert tr.dtype == np.float64 and bl.dtype == np.float64
        np.testing.assert_array_equal(tr, O[i, j].astype(np.float64))  # float32 → float64 is exact
        assert G[i][j]["weight"] == float(P[i, j])


def test_to_networkx_refuses_above_the_memory_budget_of_four_dense_copies(monkeypatch):
    """O, B (and P, support) are materialised: 4 dense n²d² float64 copies = 4·16·8 = 512 bytes."""
    from numerics.errors import MemoryBudgetError

    P = np.array([[0.5, 0.5], [0.5, 0.5]])
    w = ConnectionWalk.from_edges(t(P), t(np.eye(2)))
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "511")
    msg = raises_named(MemoryBudgetError, "walk", lambda: to_networkx(w))
    assert msg.startswith("walk: the graph's n²d² transports and blocks (n=2, d=2, batch=()) would take")
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "512")
    assert to_networkx(w).number_of_edges() == 4


# ------------------------------------------------------------------------------------- holonomy
def ring_with_tail_walk():
    """Node 0 — 1, ring 1-2-3-4-5-1, all edges both ways, random invertible transports. BFS from 0 has
    one spanning tree: 0-1, 1-2, 1-5, 2-3, 5-4 (3 and 4 are both at depth 3, so 3-4 is the chord)."""
    g = np.random.default_rng(21)
    und = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 1)]
    P = np.zeros((6, 6))
    O = np.zeros((6, 6, 2, 2))
    for a, b in und:
        for u, v in [(a, b), (b, a)]:
            P[u, v] = 1.0
            O[u, v] = g.standard_normal((2, 2)) + 2 * np.eye(2)
    return P / P.sum(1, keepdims=True), O


def test_holonomy_cycles_are_the_tree_paths_closed_by_their_edge():
    P, O = ring_with_tail_walk()
    fl = holonomies(edges_walk(P, O))
    parent = {1: 0, 2: 1, 5: 1, 3: 2, 4: 5}
    tree = {(parent[v], v) for v in parent}
    cycles = {h.edge: h.cycle for h in fl.holonomies}
    # every directed edge but the 5 tree edges (u → v, u the parent) closes a cycle
    assert set(cycles) == {(u, v) for u, v in zip(*np.nonzero(P))} - tree
    assert cycles[(3, 4)] == [3, 2, 1, 5, 4]
    assert cycles[(4, 3)] == [4, 5, 1, 2, 3]
    for v, u in parent.items():  # a reverse tree edge closes the 2-cycle v → u → v
        assert cycles[(v, u)] == [v, u]
    # around 3 → 2 → 1 → 5 → 4 → 3 the holonomy is conjugate to the product of transports along it
    prod = O[3, 2] @ O[2, 1] @ O[1, 5] @ O[5, 4] @ O[4, 3]
    h = next(h for h in fl.holonomies if h.edge == (3, 4))
    # R_3⁻¹ O_34 R_4 with tree frames: conjugate to O_34 (O_54⁻¹ O_15⁻¹)(O_12 O_23) — not prod, so
    # compare with the literal frames product instead (x_u = O_uv x_v along tree edges u → v)
    inv = np.linalg.inv
    lit = O[1, 2] @ O[2, 3] @ O[3, 4] @ inv(O[5, 4]) @ inv(O[1, 5])
    assert math.isclose(np.trace(h.matrix), np.trace(lit), rel_tol=1e-10, abs_tol=1e-12)
    assert math.isclose(np.linalg.det(h.matrix), np.linalg.det(lit), rel_tol=1e-10)
    # a separation, not a tolerance: the product along the cycle is another matrix — its determinant
    # differs from the frames product's by far more than the rounding of five 2×2 factors
    assert abs(np.linalg.det(lit) - np.linalg.det(prod)) > tol64(5 * 2, scale=abs(np.linalg.det(prod)))


def test_holonomies_of_a_batched_walk_read_the_indexed_element():
    P = np.full((3, 3), 1 / 3)
    flat = np.broadcast_to(np.eye(2), (3, 3, 2, 2)).copy()
    twisted = flat.copy()
    twisted[0, 1] = rot(0.5)
    w = ConnectionWalk.from_edges(t(np.stack([P, P])), t(np.stack([flat, twisted])))
    assert holonomies(w, index=0).holds
    fl = holonomies(w, index=1)
    assert not fl.holds and fl.residual > 0.1
    raises_named(ShapeError, "walk", lambda: holonomies(w))


def test_a_walk_on_a_tree_has_no_holonomy_and_is_flat():
    """0 → 1 → 2 one way only: every edge is a spanning-tree edge, no cycle, nothing to be curved."""
    P = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    O = np.zeros((3, 3, 2, 2))
    O[0, 1], O[1, 2] = rot(0.3) * 2, rot(-1.0)
    fl = holonomies(edges_walk(P, O))
    assert fl.holonomies == [] and fl.residual == 0.0 and fl.holds and fl.reason == ""


def test_holonomy_through_a_singular_frame_has_infinite_defect_not_nan():
    """NaN would compare False with every bound and make max() order-dependent; inf is reported."""
    fl = holonomies(singular_tree_edge_walk())
    (h,) = fl.holonomies
    assert h.defect == math.inf and fl.residual == math.inf and not fl.holds


@pytest.mark.parametrize("small, singular", [(1e-12, False), (1e-15, True)])
def test_a_numerically_singular_frame_is_a_reason(small, singular):
    """Frames with cond₂(R_v)·eps > 10⁻² are refused: cond 10¹² (·eps = 2.2e-4) is kept, cond 10¹⁵
    (·eps = 0.22) is not, although the transports are exact inverses (flat in exact arithmetic)."""
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 2, 2))
    O[0, 1] = np.diag([1.0, small])
    O[1, 0] = np.diag([1.0, 1.0 / small])
    fl = holonomies(edges_walk(P, O))
    if singular:
        assert not fl.holds and fl.reason == "frame at node 1 is (numerically) singular"
    else:
        assert fl.holds and fl.reason == "" and fl.residual == 0.0


def flat_walk(R, P):
    n = len(R)
    O = np.array([[R[i] @ np.linalg.inv(R[j]) for j in range(n)] for i in range(n)])
    return O, edges_walk(P, O)


def flat_tol(O, R, n, d):
    """Flatness' documented bound; the frames of a flat connection are R_v R_0⁻¹ whatever the tree."""
    norm = max([1.0] + [np.linalg.norm(O[i, j], 2) for i in range(n) for j in range(n)])
    cond = max([1.0] + [np.linalg.cond(R[v] @ np.linalg.inv(R[0])) for v in range(n)])
    return tol64((n + 1) * d, scale=norm * cond)


def test_flatness_tolerance_of_orthogonal_transports_is_the_unscaled_one():
    g = np.random.default_rng(22)
    n, d = 4, 3
    R = [np.linalg.qr(g.standard_normal((d, d)))[0] for _ in range(n)]
    O, w = flat_walk(R, np.full((n, n), 1 / n))
    fl = holonomies(w)
    assert fl.holds and fl.residual <= 1e-14
    assert math.isclose(fl.tol, tol64((n + 1) * d), rel_tol=1e-12)  # ‖O‖₂ = cond = 1


def test_flatness_of_ill_conditioned_frames_scales_its_tolerance():
    """Frames with singular values 1, 10, 100: the rounding of a flat connection's holonomies
    (≈1e-11) is far above tol((n+1)d) but inside the documented scaled bound."""
    g = np.random.default_rng(0)
    n, d = 4, 3
    R = []
    for _ in range(n):
        Q1, Q2 = (np.linalg.qr(g.standard_normal((d, d)))[0] for _ in range(2))
        R.append(Q1 @ np.diag([1.0, 10.0, 100.0]) @ Q2)
    O, w = flat_walk(R, np.full((n, n), 1 / n))
    fl = holonomies(w)
    assert math.isclose(fl.tol, flat_tol(O, R, n, d), rel_tol=1e-9)
    assert fl.residual > tol64((n + 1) * d)  # unscaled, this flat connection would be called curved
    assert fl.holds


# ------------------------------------------------------------------------------------- reversibility
def two_triangles(bridge):
    """Triangle {0,1,2} strongly rotation-biased (log-ratio 3·log(7/3)), triangle {3,4,5} mildly
    (3·log(0.55/0.45)); joined by edge 2–3 when ``bridge``."""
    P = np.zeros((6, 6))
    for base, (f, b) in [(0, (0.7, 0.3)), (3, (0.55, 0.45))]:
        for k in range(3):
            i, j = base + k, base + (k + 1) % 3
            P[i, j], P[j, i] = f, b
    if bridge:
        P[2, 3] = P[3, 2] = 0.5
    return P


@pytest.mark.parametrize("bridge", [True, False])
def test_kolmogorov_reason_names_the_worst_cycle(bridge):
    r = is_reversible(t(two_triangles(bridge)))
    assert not r.holds
    m = re.match(r"Kolmogorov fails on cycle \[([0-9, ]+)\] \(log-ratio (-?[0-9.e+-]+)\)", r.reason)
    assert m, r.reason
    assert {int(x) for x in m.group(1).split(",")} == {0, 1, 2}
    # the reason prints the log-ratio with 4 significant digits (:.3e): compare the printed text exactly
    assert m.group(2).lstrip("-") == f"{3 * math.log(7 / 3):.3e}"
    if bridge:
        assert r.unique and ";" not in r.reason
    else:  # the failure comes first, then the note on the components, joined by "; "
        assert not r.unique
        assert r.reason.endswith(")" + "; 2 components: π not unique, each component has mass 1/2")


def test_one_way_edge_result_fields_are_exactly_false_and_zero_tol():
    P = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    r = is_reversible(t(P))
    assert r.holds is False and r.unique is False and r.tol == 0.0


def kolmogorov_scale(P, cycle):
    """S = Σ (|log P| + 1) over the 2L weights of a cycle, both directions (the operand scale)."""
    L = len(cycle)
    return sum(
        abs(math.log(P[cycle[j], cycle[(j + 1) % L]])) + abs(math.log(P[cycle[(j + 1) % L], cycle[j]])) + 2.0
        for j in range(L)
    )


def test_reversibility_tolerance_is_tol_of_twice_the_cycle_length_at_its_log_scale():
    path = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [0.0, 1.0, 0.0]])  # no cycle: L = 1
    assert is_reversible(t(path)).tol == tol64(2) and is_reversible(t(path)).error == 0.0
    tri = np.full((3, 3), 1 / 3)
    S = kolmogorov_scale(tri, [0, 1, 2])
    assert math.isclose(S, 6 * (math.log(3) + 1), rel_tol=1e-15)
    r = is_reversible(t(tri))
    assert math.isclose(r.tol, tol64(6, scale=S / 2), rel_tol=1e-15)
    assert math.isclose(r.error, rounding_error(6, S), rel_tol=1e-15)
    # tiny softmax weights: the tolerance follows |log P| (a reversible walk with weights 1e-200 is
    # judged at its own precision, not failed by rounding of its 460-sized logarithms)
    tiny = np.array([[0.0, 1e-200, 1.0], [1.0, 0.0, 1.0], [1e-200, 1.0, 0.0]])
    tiny /= tiny.sum(1, keepdims=True)
    assert is_reversible(t(tiny)).tol > 100 * tol64(6)


@pytest.mark.parametrize("factor, status", [(0.5, "holds"), (0.97, "undecided"), (1.03, "undecided"), (1.5, "fails")])
def test_reversibility_decision_at_its_tolerance_edge(factor, status):
    """Triangle with Kolmogorov log-ratio δ = factor·tol: reversible iff δ ≤ tol, decided only outside
    the residual's own rounding. Weights near 1: S = Σ(|log P| + 1) ≈ 6, tol = tol(float64, 6,
    scale=S/2) ≈ 2.6e-13, error = rounding_error(6, S) ≈ 1.6e-14 = tol/16: ±3 % is inside that band
    (undecided), ±50 % is decided."""
    bound = tol64(6, scale=3.0)
    P = np.ones((3, 3))
    P[0, 1] = math.exp(factor * bound)
    lit = math.log(P[0, 1])  # the literal log-ratio around 0 → 1 → 2 → 0 (all other weights 1)
    # exp(δ) is stored as 1 + kε: the literal log-ratio is δ up to half an ulp of 1 (ε = 2.2e-16)
    assert abs(lit - factor * bound) <= np.finfo(float).eps
    r = is_reversible(t(P))
    S = kolmogorov_scale(P, [0, 1, 2])
    assert math.isclose(r.tol, tol64(6, scale=S / 2), rel_tol=1e-15) and math.isclose(r.tol, bound, rel_tol=1e-12)
    # the residual is a sum of six logarithms of numbers near 1: both computations agree to the
    # rounding of the logarithms' arguments (an ulp of 1 each), not relatively
    assert abs(r.residual - lit) <= rounding_error(6, 1.0)
    assert math.isclose(r.error, rounding_error(6, S), rel_tol=1e-12)
    assert (r.holds, r.fails, r.undecided) == (status == "holds", status == "fails", status == "undecided")
    assert ("undecided" in r.reason) == (status == "undecided")


def test_pi_of_an_extremely_lopsided_chain_does_not_overflow():
    """π₁/π₀ = P₀₁/P₁₀ = 0.5/1e-300: log π spans 690 > log(max float); π = (P₁₀, P₀₁)/(P₀₁ + P₁₀)."""
    a, b = 0.5, 1e-300
    P = np.array([[1 - a, a], [b, 1 - b]])
    r = is_reversible(t(P))
    assert r.holds
    # exp of a log-ratio of 690 carries 690·eps relative error
    np.testing.assert_allclose(r.pi, [b / (a + b), a / (a + b)], rtol=1e-12, atol=0)
    np.testing.assert_allclose(stationary_distribution(t(P)), [b / (a + b), a / (a + b)], rtol=1e-12, atol=0)


# ------------------------------------------------------------------------------------- stationary
def test_stationary_distribution_row_sum_tolerance_is_tol_of_n():
    """Row sums exactly 1 ± tol(float64, n) are accepted (dyadic, so exact); 1.5·tol is refused."""
    bound = tol64(2)
    ok = np.array([[0.5, 0.5 + bound], [0.5, 0.5]])
    assert ok[0].sum() - 1.0 == bound
    np.testing.assert_allclose(stationary_distribution(t(ok)).sum(), 1.0, atol=1e-15)
    bad = np.array([[0.5, 0.5 + 1.5 * bound], [0.5, 0.5]])
    msg = raises_named(NotStochasticError, "walk", lambda: stationary_distribution(t(bad)))
    assert msg == (
        f"walk: rows must sum to 1 for a stationary distribution (max |row sum − 1| = {1.5 * bound:.3e}); "
        "see numerics.laplacian.stationary_info for Perron vectors"
    )


@pytest.mark.parametrize("target, refused", [(0.9, False), (1.1, True)])
def test_pi_refusal_threshold_is_cond_times_tol_one(target, refused):
    """Tighter than the 0.5 / 1.5 bracket above: κ·tol at 0.9 is solved, at 1.1 refused."""
    lo, hi = coupling_bracket(target)
    P = nearly_decomposable_cycle(hi if not refused else lo)
    kt = kappa_times_tol(P)
    # not a float identity: the bisection over the coupling lands κ·tol near its target, on the
    # intended side of the refusal threshold 1 (what the test is about)
    assert (kt < 1) != refused and abs(kt - target) < 0.02
    if refused:
        raises_named(UndefinedError, "walk", lambda: stationary_distribution(t(P)))
    else:
        pi = stationary_distribution(t(P))
        assert math.isclose(pi.sum(), 1.0, rel_tol=1e-12) and (pi >= 0).all()


# ------------------------------------------------------------------------------------- triangle identity
def triangle_case(seed, d, xmax, p):
    """n = 3 tokens with max|X| = xmax and |scale|·max|X|²·Σ|M| = p; A = softmax(scale·X M Xᵀ)."""
    g = np.random.default_rng(seed)
    X = g.uniform(-1, 1, (3, d)) * xmax * 0.9
    X[0, 0] = xmax
    M = g.standard_normal((d, d))
    s = p / (xmax**2 * np.abs(M).sum())
    S = s * X @ M @ X.T
    A = np.exp(S - S.max(1, keepdims=True))
    A /= A.sum(1, keepdims=True)
    return A, X, M, s


def literal_triangle_residual(A, X, M, s):
    lr = (
        math.log(A[0, 1])
        + math.log(A[1, 2])
        + math.log(A[2, 0])
        - math.log(A[0, 2])
        - math.log(A[2, 1])
        - math.log(A[1, 0])
    )
    return abs(lr - literal_log_ratio(X, M, s, 0, 1, 2))


def triangle_roundoff(A, d, p):
    """Rounding bound of a triangle log-ratio residual (theory.rounding): six logarithms of
    magnitude |log A_e| and a right-hand side 2·s·(x_j − x_i)ᵀM_a(x_k − x_i) of d² products, at most
    8·p in magnitude (|x_j − x_i| ≤ 2 max|X|, s·max|X|²·Σ|M| = p)."""
    mag = sum(abs(math.log(A[i, j])) for i in range(3) for j in range(3) if i != j) + 8 * p
    return rounding_error(6 + 2 * d * d, mag)


@pytest.mark.parametrize("d, xmax, p", [(3, 3.0, 3.0), (1, 2.0, 3.0), (2, 1.5, 0.5)])
@pytest.mark.parametrize("factor", [0.25, 4.0])
def test_triangle_identity_decision_at_its_tolerance_edge(d, xmax, p, factor):
    """A_01 multiplied by e^δ, δ = factor·tol(float64, 6d², scale = 1 + p): holds iff δ ≤ tol. The
    factors sit far enough from the edge (×¼, ×4) that the computation's own rounding (up to ~⅓ of
    the tolerance here, at d = 1) cannot decide them; the tolerance's formula is pinned exactly (ti.tol)."""
    A, X, M, s = triangle_case(30 + d, d, xmax, p)
    bound = tol64(6 * d * d, scale=1.0 + p)
    # a margin, not a tolerance: the unperturbed softmax's literal residual (round-off only) must sit
    # two orders below the decision tolerance, so that the e^δ perturbation alone decides
    assert literal_triangle_residual(A, X, M, s) < 1e-2 * bound
    A[0, 1] *= math.exp(factor * bound)
    lit = literal_triangle_residual(A, X, M, s)
    ti = softmax_triangle_identity(t(A), t(X), t(M), scale=s)
    assert math.isclose(ti.tol, bound, rel_tol=1e-12)
    # the residual is a difference of O(1) logarithms: two computations of it agree to the rounding
    # of those operands (not relatively: a 3e-12 residual carries ulps of its O(1) terms, and which
    # ulp depends on the BLAS kernel), so compare within that absolute bound
    assert ti.n_triangles == 1 and abs(ti.residual - lit) <= triangle_roundoff(A, d, p)
    assert triangle_roundoff(A, d, p) < 0.5 * bound  # ... below the 75 % margin the decision needs
    assert ti.holds == (factor < 1)


def test_triangle_identity_without_triangles_has_unit_scale_tolerance():
    A, X, M, s = softmax_case(14, n=4, scale=5.0)
    C = np.tril(A)
    C /= C.sum(1, keepdims=True)
    ti = softmax_triangle_identity(t(C), t(X), t(M), scale=s)
    assert ti.n_triangles == 0 and ti.tol == tol64(6 * 3 * 3)


# ------------------------------------------------------------------------------------- span criterion
@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_span_criterion_decision_at_its_tolerance_edge(factor):
    """Tokens 0, e₁, e₂, e₃ span R³, so ‖UᵀM_aU‖_F = ‖M_a‖_F; with max|M_a| < 1 the bound is
    tol(float64, d²): M_a of norm factor·tol holds iff factor ≤ 1."""
    X = np.vstack([np.zeros(3), np.eye(3)])
    K = np.array([[0.0, 1.0, 2.0], [-1.0, 0.0, 3.0], [-2.0, -3.0, 0.0]])
    bound = tol64(9)
    M = K * (factor * bound / np.linalg.norm(K))
    holds, r = reversible_by_span(t(X), t(M))
    assert math.isclose(r, factor * bound, rel_tol=1e-9)
    assert holds == (factor < 1)


def test_span_criterion_tolerance_scales_with_the_antisymmetric_part():
    """M_a = 10⁸(e₁e₂ᵀ − e₂e₁ᵀ) vanishes on the plane span{(1,1,0), e₃} (uᵀM_a v = 0 there); the tokens'
    SVD basis of that plane carries round-off, so ‖UᵀM_aU‖ ≈ 1e-8: zero relative to max|M_a| = 10⁸."""
    g = np.random.default_rng(23)
    c = g.standard_normal((5, 2))
    X = c[:, :1] * np.array([1.0, 1.0, 0.0]) + c[:, 1:] * np.array([0.0, 0.0, 1.0])
    M = np.zeros((3, 3))
    M[0, 1], M[1, 0] = 1e8, -1e8
    holds, r = reversible_by_span(t(X), t(M))
    assert r > tol64(9)  # round-off above the unscaled bound ...
    assert holds  # ... but within tol(float64, d², scale = max|M_a| = 10⁸)


def test_span_criterion_is_scale_invariant_in_the_tokens():
    """M_a vanishing on span{x_j − x_1} does not depend on the tokens' scale: tokens of size 1e-15
    still span R³ (they are exact, not round-off), so r = ‖M_a‖_F as for unit tokens."""
    g = np.random.default_rng(24)
    X = g.standard_normal((4, 3))
    K = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    for c in (1.0, 1e-15):
        holds, r = reversible_by_span(t(c * X), t(K))
        assert not holds and math.isclose(r, math.sqrt(2), rel_tol=1e-12)


def test_span_criterion_ignores_round_off_differences_of_far_tokens():
    """Tokens at 10⁶·(1,1,1) differing by one ulp (≈1e-10) along three axes: the differences are
    round-off relative to the tokens' magnitude, so the span is {0} and the criterion holds."""
    base = np.full(3, 1e6)
    X = np.array([base, base, base, base])
    X[1, 0] = np.nextafter(1e6, 2e6)
    X[2, 1] = np.nextafter(1e6, 2e6)
    X[3, 2] = np.nextafter(1e6, 0.0)
    K = np.array([[0.0, 1.0, 2.0], [-1.0, 0.0, 3.0], [-2.0, -3.0, 0.0]])
    assert reversible_by_span(t(X), t(K)) == (True, 0.0)


def test_span_criterion_of_float32_inputs_is_evaluated_in_float64():
    """X, M float32: r must equal ‖M_a‖_F of the float64 values (tokens spanning R³), to float64
    rounding — a float32 SVD or a float32 M − Mᵀ would be off by ~1e-7."""
    g = np.random.default_rng(25)
    X32 = g.standard_normal((4, 3)).astype(np.float32)
    M32 = (g.standard_normal((3, 3)) * np.array([1.0, 1e-3, 30.0])).astype(np.float32)
    M64 = M32.astype(np.float64)
    lit = np.linalg.norm((M64 - M64.T) / 2)
    assert np.linalg.norm((M32 - M32.T) / 2 - (M64 - M64.T) / 2) > 1e-9  # float32 would show
    holds, r = reversible_by_span(torch.from_numpy(X32), torch.from_numpy(M32))
    assert not holds and math.isclose(r, lit, rel_tol=1e-13)


def log_pair_at(target):
    """(a, b) with math.log(a) − math.log(b) == target exactly (both logs in [0.5, 1), so the
    difference is exact; b is searched among the floats next to exp(log a − target))."""
    for ia in range(1000):
        a = 1.7 + ia * 1e-3
        la = math.log(a)
        b = math.exp(la - target)
        for k in range(-4, 5):
            bb = b + k * math.ulp(b)
            if math.log(bb) == la - target:
                return a, bb
    raise AssertionError("no float pair found")  # pragma: no cover


def test_a_residual_exactly_at_the_tolerance_is_undecided():
    """A log-ratio exactly tol(float64, 6) on one triangle (one edge pair a, b, every other weight 1,
    so each sum is exactly log a − log b): for the triangle identity with X = 0 (right side 0,
    scale 1, d = 1: tolerance tol(float64, 6)) it sits within its own rounding of the tolerance —
    neither holds nor fails but undecided; Kolmogorov's criterion, whose tolerance is at the
    cycle's log scale (three times larger here), decides it."""
    bound = tol64(6)
    a, b = log_pair_at(bound)
    P = np.ones((3, 3))
    P[0, 1], P[1, 0] = a, b
    r = is_reversible(t(P))
    # Kolmogorov's tolerance is at the cycle's log scale (tol(6, S/2), S ≈ 6): this residual holds
    S = kolmogorov_scale(P, [0, 1, 2])
    assert r.residual == bound and math.isclose(r.tol, tol64(6, scale=S / 2), rel_tol=1e-15)
    assert r.holds and not r.undecided
    ti = softmax_triangle_identity(t(P), t(np.zeros((3, 1))), t([[1.0]]), scale=1.0)
    assert ti.residual == bound == ti.tol and ti.error > 0
    assert not ti.holds and not ti.fails and ti.undecided


@pytest.mark.parametrize(
    ("k", "verdict"),
    [(186, "holds"), (187, "undecided"), (191, "undecided"), (192, "undecided"), (193, "undecided")]
    + [(198, "undecided"), (199, "fails")],
)
def test_a_holonomy_defect_within_its_rounding_of_the_tolerance_is_undecided(k, verdict):
    """d = 1, O_01 = 1, O_10 = b = 1 − k·2⁻⁵²: frames 1, 1 (cond 1, ‖O‖₂ ≤ 1), the one holonomy is b and its
    defect exactly k·2⁻⁵², against tol(float64, (n+1)·d = 3) = 192·2⁻⁵² known to its rounding
    error rounding_error(3, 1) = 6·2⁻⁵²: holds iff k + 6 ≤ 192, fails iff k − 6 > 192, else undecided.
    (Two-valued, flatness held at k = 191, one ulp below, and failed at 193, one above.)"""
    b = 1.0 - k * 2.0**-52
    P = np.array([[0.0, 1.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 1, 1))
    O[0, 1], O[1, 0] = 1.0, b
    fl = holonomies(edges_walk(P, O))
    assert fl.residual == k * 2.0**-52 and fl.tol == tol64(3) == 192 * 2.0**-52 and fl.error == 6 * 2.0**-52
    assert (fl.holds, fl.fails, fl.undecided) == (verdict == "holds", verdict == "fails", verdict == "undecided")
    if verdict == "undecided":
        assert fl.reason.startswith("undecided: holonomy defect ")
        with pytest.raises(UndecidedTruthError):
            bool(fl)
    else:
        assert bool(fl) == (verdict == "holds") and fl.reason == ""


def test_an_exactly_singular_frame_is_a_reason_not_an_infinite_scale():
    """R_1 = O_10 = diag(1, 0) over the one-way edge 1 → 0 has cond₂ = inf: flatness fails with the reason
    (its infinite condition number once reached the tolerance's scale and raised there)."""
    P = np.array([[0.0, 0.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 2, 2))
    O[1, 0] = np.diag([1.0, 0.0])
    fl = holonomies(edges_walk(P, O))
    assert fl.fails and not fl.undecided and fl.reason == "frame at node 1 is (numerically) singular"
    assert fl.tol == tol64(3 * 2)


def test_a_frame_with_cond_times_eps_exactly_one_percent_is_kept():
    """The frame test is strict (cond₂·eps > 10⁻²): the frame R_1 = O_10 = diag(1, x) reached over the
    one-way edge 1 → 0 (R_1 = O_10 R_0, exact) has cond exactly x = fl(0.01)·2⁵², cond·eps = fl(0.01)."""
    x = 0.01 * 2.0**52
    assert np.linalg.cond(np.diag([1.0, x])) * np.finfo(np.float64).eps == 0.01
    P = np.array([[0.0, 0.0], [1.0, 0.0]])
    O = np.zeros((2, 2, 2, 2))
    O[1, 0] = np.diag([1.0, x])
    fl = holonomies(edges_walk(P, O))
    assert fl.reason == "" and fl.holds
    np.testing.assert_array_equal(fl.frames[1], np.diag([1.0, x]))


def test_a_difference_exactly_at_the_rank_threshold_is_round_off():
    """Tokens 0, t·e₁, e₂ with t = tol(float64, max(n−1, d) = 2, scale = max|X| = 1): the singular value t
    is not above the threshold, so the span is the line e₂, where M_a vanishes: (True, 0.0)."""
    thr = tol64(2)
    X = np.array([[0.0, 0.0], [thr, 0.0], [0.0, 1.0]])
    M = np.array([[0.0, 5.0], [-5.0, 0.0]])
    assert reversible_by_span(t(X), t(M)) == (True, 0.0)
    X[1, 0] = 2 * thr  # above the threshold: the span is the plane and r = ‖M_a‖_F
    holds, r = reversible_by_span(t(X), t(M))
    assert not holds and math.isclose(r, 5 * math.sqrt(2), rel_tol=1e-12)


def test_a_span_residual_exactly_at_the_tolerance_holds():
    """Tokens 0, e₁, e₂ (exact SVD), M_a = [[0, m], [−m, 0]] with ‖M_a‖_F exactly tol(float64, d² = 4)."""
    bound = tol64(4)
    ms = [2.0**-44.5 + k * math.ulp(2.0**-44.5) for k in range(-50, 51)]
    m = next(m for m in ms if np.linalg.norm(np.array([[0.0, m], [-m, 0.0]])) == bound)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert reversible_by_span(t(X), t([[0.0, 2 * m], [0.0, 0.0]])) == (True, bound)


# ------------------------------------------------------------------------------ rounding bounds of the T4 checks
def test_triangle_identity_error_bound_is_its_stated_formula():
    """error = rounding_error(6 + 2d², Σ|log A| over the six weights + 8|s|·max|X|²·Σ|M| + 6), the
    largest over triangles (theory.rounding): computed here from the literal definition."""
    A, X, M, s = softmax_case(5, n=3, scale=0.7)
    d = X.shape[1]
    ti = softmax_triangle_identity(t(A), t(X), t(M), scale=s)
    logs = sum(abs(math.log(A[i, j])) for i in range(3) for j in range(3) if i != j)
    rhs = 8 * abs(s) * float(np.abs(X).max()) ** 2 * float(np.abs(M).sum())
    assert rhs > 1 and d >= 2  # both terms matter in this case
    assert math.isclose(ti.error, rounding_error(6 + 2 * d * d, logs + rhs + 6.0), rel_tol=1e-12)
    assert ti.holds and not ti.undecided and not ti.fails


def tiny_and_unit_triangles():
    """Two triangles sharing node 0, symmetric weights: one through tiny weights 1e-120 (|log P| ≈ 276,
    a large Kolmogorov tolerance), one through weights ½ and 1."""
    return np.array(
        [
            [0.0, 1e-120, 1e-120, 0.5, 0.5],
            [1e-120, 0.0, 1.0, 0.0, 0.0],
            [1e-120, 1.0, 0.0, 0.0, 0.0],
            [0.5, 0.0, 0.0, 0.0, 0.5],
            [0.5, 0.0, 0.0, 0.5, 0.0],
        ]
    )


@pytest.mark.parametrize("perm", [[0, 1, 2, 3, 4], [0, 3, 4, 1, 2]])  # each triangle first in the basis once
def test_kolmogorov_reports_the_bound_of_its_worst_cycle(perm):
    """Two triangles sharing node 0: one with tiny weights (large |log P|, large tolerance) and a small
    Kolmogorov defect, one with weights near 1 and a larger one. The reported tol / error are those of the cycle with the
    largest residual/tolerance ratio, each cycle decided against its own bound."""
    P = tiny_and_unit_triangles()
    # defects: about a tenth of its tolerance on the tiny-weight triangle (holds), about twice its
    # tolerance on the near-1 triangle (fails); their residual·tol products order the other way round
    P[1, 2] *= math.exp(5e-12)
    P[3, 4] *= math.exp(9e-13)
    P = P[np.ix_(perm, perm)]
    r = is_reversible(t(P))
    G = to_networkx(t(P))
    per = []
    for c, lr in kolmogorov_cycles(G):
        S = kolmogorov_scale(P, c)
        per.append(
            (abs(lr) / tol64(2 * len(c), scale=S / 2), tol64(2 * len(c), scale=S / 2), rounding_error(2 * len(c), S))
        )
    assert len(per) == 2 and per[0][1] != per[1][1]
    ratios = sorted(p[0] for p in per)
    assert 0.05 < ratios[0] < 0.5 and 1.5 < ratios[1] < 5  # one cycle holds, one fails
    prods = {p[0]: p[0] * p[1] ** 2 for p in per}  # residual · tol, ordered against the ratios
    assert prods[ratios[0]] > prods[ratios[1]]
    worst = max(per)
    assert math.isclose(r.tol, worst[1], rel_tol=1e-12) and math.isclose(r.error, worst[2], rel_tol=1e-12)
    assert r.fails and not r.holds


def test_kolmogorov_ties_keep_the_first_cycle():
    """Symmetric weights: every log-ratio is exactly 0, every ratio ties at 0; the reported bound is
    the first basis cycle's (a strict comparison), whose log scale differs from the second's."""
    P = tiny_and_unit_triangles()
    r = is_reversible(t(P))
    cycles = kolmogorov_cycles(to_networkx(t(P)))
    assert [lr for _, lr in cycles] == [0.0, 0.0]
    first = cycles[0][0]
    S = kolmogorov_scale(P, first)
    assert math.isclose(r.tol, tol64(2 * len(first), scale=S / 2), rel_tol=1e-12)
    assert r.holds and not r.undecided


def test_bool_of_an_undecided_reversibility_raises():
    """``Reversibility`` is three-valued (``holds`` / ``fails`` / ``undecided``): ``bool()`` of an
    undecided one raises ``UndecidedTruthError`` (a ``ConnwalkError`` and a ``TypeError``)."""
    from numerics.errors import UndecidedTruthError
    from numerics.graphs import Reversibility

    P = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert bool(is_reversible(P))
    und = Reversibility(False, np.full(2, 0.5), 1e-16, 0.0, True, reason="within rounding", undecided=True)
    assert not und.holds and not und.fails
    with pytest.raises(UndecidedTruthError, match="within rounding"):
        bool(und)
