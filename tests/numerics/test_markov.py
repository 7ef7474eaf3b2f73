"""numerics.markov against independent oracles: exact rational stationary distributions
(Fractions, Gaussian elimination), networkx's components, periods by brute-force boolean matrix
powers, and the conditioning guard on a nearly decomposable chain; then each function's edge cases
(closed forms, exact fractions, numpy's eig/cond, networkx)."""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics.errors import NegativeWeightError, NonFiniteError, ShapeError, UndefinedError
from numerics.markov import (
    classes_from_reachability,
    communicating_classes,
    period,
    perron_solve,
    reachability,
    stationary_distribution,
    stationary_info,
    weak_components,
)
from numerics.tolerance import tol
from tests.helpers import raises_named, t

F = torch.float64


@st.composite
def rational_chains(draw, min_n: int = 1, max_n: int = 6, zeros: bool = True):
    """Row-stochastic chains with rational entries ``k / row sum`` (``k`` small integers): exact
    ``Fraction`` matrix and its float64 rounding."""
    n = draw(st.integers(min_n, max_n))
    lo = 0 if zeros else 1
    rows = []
    for i in range(n):
        r = draw(st.lists(st.integers(lo, 4), min_size=n, max_size=n))
        if sum(r) == 0:
            r[draw(st.integers(0, n - 1))] = 1
        rows.append([Fraction(k, sum(r)) for k in r])
    return rows, torch.tensor([[float(x) for x in r] for r in rows], dtype=F)


def exact_stationary(rows: list[list[Fraction]], idx: list[int]) -> list[Fraction]:
    """π on the closed class ``idx`` by exact Gaussian elimination of ``π(I − P_C) = 0``, ``Σπ = 1``."""
    m = len(idx)
    # unknowns π_0..π_{m-1}; equations: columns of (I − P_C)ᵀ, last replaced by the normalisation
    A = [[(Fraction(int(a == b)) - rows[idx[b]][idx[a]]) for b in range(m)] for a in range(m)]
    A[-1] = [Fraction(1)] * m
    rhs = [Fraction(0)] * (m - 1) + [Fraction(1)]
    for c in range(m):
        p = next(r for r in range(c, m) if A[r][c] != 0)
        A[c], A[p], rhs[c], rhs[p] = A[p], A[c], rhs[p], rhs[c]
        for r in range(m):
            if r != c and A[r][c] != 0:
                f = A[r][c] / A[c][c]
                A[r] = [x - f * y for x, y in zip(A[r], A[c])]
                rhs[r] -= f * rhs[c]
    return [rhs[c] / A[c][c] for c in range(m)]


def nx_graph(P: torch.Tensor) -> nx.DiGraph:
    G = nx.DiGraph()
    n = P.shape[0]
    G.add_nodes_from(range(n))
    G.add_edges_from((i, j) for i in range(n) for j in range(n) if P[i, j] > 0)
    return G


@given(rational_chains())
def test_stationary_pi_equals_exact_rational_solution(chain):
    rows, P = chain
    n = P.shape[0]
    info = stationary_info(P)
    G = nx_graph(P)
    closed = [sorted(c) for c in nx.attracting_components(G)]
    assert int(info.n_closed) == len(closed)
    exact = [Fraction(0)] * n
    for c in closed:
        for i, v in zip(c, exact_stationary(rows, c)):
            exact[i] = v / len(closed)  # each closed class weighted 1/k
    if bool(torch.isnan(info.pi).any()):  # only allowed with the conditioning guard's reason
        assert any("ill-conditioned" in r for r in info.reasons)
        return
    ref = torch.tensor([float(x) for x in exact], dtype=F)
    kappa = max(float(info.condition), 1.0)
    # backward-stable solve on the float64-rounded P: forward error ≤ κ·tol (StationaryInfo docstring)
    err = float((info.pi - ref).abs().max())
    assert err <= kappa * tol(F, n), (err, kappa)
    assert bool(info.unique) == (len(closed) == 1)
    transient = set(range(n)) - set().union(*map(set, closed))
    assert bool(info.transient) == bool(transient)
    assert all(float(info.pi[i]) == 0.0 for i in transient)


@given(rational_chains(max_n=7))
def test_classes_agree_with_networkx_and_with_the_closure(chain):
    _, P = chain
    n = P.shape[0]
    S = P > 0
    same, closed, n_closed = communicating_classes(S)
    G = nx_graph(P)
    lab = {}
    for k, comp in enumerate(nx.strongly_connected_components(G)):
        for v in comp:
            lab[v] = k
    ref_same = torch.tensor([[lab[i] == lab[j] for j in range(n)] for i in range(n)])
    attracting = set().union(*nx.attracting_components(G))
    assert bool((same == ref_same).all())
    assert [bool(c) for c in closed] == [i in attracting for i in range(n)]
    assert int(n_closed) == nx.number_attracting_components(G)
    assert int(weak_components(S)) == nx.number_weakly_connected_components(G)
    # the closure route (boolean squaring) gives the same classes
    same_r, closed_r, nc_r = classes_from_reachability(reachability(S))
    assert bool((same == same_r).all()) and bool((closed == closed_r).all()) and int(nc_r) == int(n_closed)
    R = reachability(S)
    assert all(bool(R[i, j]) == nx.has_path(G, i, j) for i in range(n) for j in range(n))


def brute_period(S: np.ndarray, i: int) -> int:
    """gcd of the lengths k ≤ 2n² of closed walks i → i (boolean matrix powers)."""
    n = S.shape[0]
    g, M = 0, np.eye(n, dtype=bool)
    for k in range(1, 2 * n * n + 1):
        M = (M.astype(int) @ S.astype(int)) > 0
        if M[i, i]:
            g = math.gcd(g, k)
    return g


@given(rational_chains(max_n=6))
def test_period_equals_gcd_of_closed_walk_lengths(chain):
    _, P = chain
    S = (P > 0).numpy()
    per = period(P > 0)
    for i in range(P.shape[0]):
        assert int(per[i]) == brute_period(S, i)


def test_period_examples_and_batch():
    cyc = torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0.0]], dtype=F)
    lazy = torch.tensor([[0.5, 0.5, 0], [0, 0, 1], [1, 0, 0.0]], dtype=F)
    per = period(torch.stack([cyc, lazy]) > 0)
    assert per.tolist() == [[3, 3, 3], [1, 1, 1]]
    assert period(torch.tensor([[0.0, 1.0], [0.0, 1.0]]) > 0).tolist() == [0, 1]  # node 0: no cycle


def test_ill_conditioned_chain_is_undefined_with_reason():
    # two blocks coupled by 1e-17 (below float64 roundoff of the rows): π cannot be resolved
    P = torch.tensor(
        [[0.5, 0.5 - 1e-17, 1e-17, 0.0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, 1e-17, 0.5, 0.5 - 1e-17]], dtype=F
    )
    info = stationary_info(P)
    assert bool(info.irreducible)
    assert bool(torch.isnan(info.pi).all()) and "ill-conditioned" in info.reasons[0]
    assert float(info.condition) * tol(F, 4) >= 1
    with pytest.raises(UndefinedError, match="ill-conditioned"):
        stationary_distribution(P)


def test_stationary_distribution_and_bad_input():
    P = torch.tensor([[0.0, 1.0], [0.5, 0.5]], dtype=F)
    assert torch.allclose(stationary_distribution(P), torch.tensor([1 / 3, 2 / 3], dtype=F), atol=tol(F, 2))
    with pytest.raises(UndefinedError, match="several stationary"):
        stationary_distribution(torch.eye(2, dtype=F))
    with pytest.raises(NegativeWeightError) as e:
        stationary_info(torch.tensor([[1.5, -0.5], [0.5, 0.5]], dtype=F))
    assert e.value.argument == "P"
    with pytest.raises(ShapeError):
        stationary_info(torch.ones(2, 3, dtype=F))
    with pytest.raises(NonFiniteError):
        stationary_info(torch.tensor([[float("nan"), 1.0], [0.5, 0.5]], dtype=F))


# ======================================================================================================
# Each function of numerics.markov on its edge cases. Expected values come from closed forms (the 2×2
# Perron pair), exact fractions, numpy's eig/cond and networkx, never from numerics.markov itself.
# ======================================================================================================

SEVERAL = "several stationary distributions ({k} closed classes): π not unique, reported π weights each class 1/{k}"
TRANSIENT = "transient states: the stationary π has zeros (no positive π)"


def perron_2x2(P):
    """Perron root and left vector (sum 1) of a positive 2×2 ``[[a, b], [c, d]]`` in closed form."""
    (a, b), (c, d) = P
    rho = (a + d) / 2 + math.sqrt(((a - d) / 2) ** 2 + b * c)
    # π (P − ρI) = 0: π_0 (a − ρ) + π_1 c = 0
    pi = np.array([c, rho - a])
    return rho, pi / pi.sum()


# ----------------------------------------------------------------------------------- non-stochastic P
def test_non_stochastic_irreducible_p_has_the_perron_root_and_left_vector():
    P = [[1.0, 2.0], [3.0, 4.0]]
    rho, pi = perron_2x2(P)
    info = stationary_info(t(P))
    assert float(info.rho) == pytest.approx(rho, rel=1e-14)
    np.testing.assert_allclose(info.pi.numpy(), pi, rtol=1e-13)
    assert bool(info.irreducible) and bool(info.unique) and not bool(info.transient)
    assert int(info.n_closed) == 1 and info.reasons == [""]
    # ‖πP − ρπ‖_∞ of the returned π, recomputed in numpy
    res = np.abs(info.pi.numpy() @ np.array(P) - float(info.rho) * info.pi.numpy()).max()
    assert float(info.residual) == pytest.approx(res, abs=1e-15)
    assert float(info.residual) <= 1e-13
    cond = np.linalg.cond(rho * np.eye(2) - np.array(P) + 1.0)
    assert float(info.condition) == pytest.approx(cond, rel=1e-10)
    np.testing.assert_allclose(stationary_distribution(t(P)).numpy(), pi, rtol=1e-13)


def test_non_stochastic_3x3_against_numpy_eig():
    g = np.random.default_rng(5)
    P = g.random((3, 3)) + 0.1
    ev, V = np.linalg.eig(P.T)
    j = int(np.argmax(ev.real))
    pi = V[:, j].real / V[:, j].real.sum()
    info = stationary_info(t(P))
    assert float(info.rho) == pytest.approx(ev[j].real, rel=1e-13)
    np.testing.assert_allclose(info.pi.numpy(), pi, rtol=1e-12)


def test_perron_solve_is_the_literal_linear_system():
    P = np.array([[0.2, 0.8], [0.6, 0.4]])
    pi, info = perron_solve(t(P), torch.tensor(1.0, dtype=F))
    M = np.eye(2) - P + 1.0
    np.testing.assert_allclose(pi.numpy() @ M, np.ones(2), atol=1e-15)
    assert int(info) == 0
    # stationary of [[.2, .8], [.6, .4]]: π ∝ (0.6, 0.8)
    np.testing.assert_allclose(pi.numpy(), [0.6 / 1.4, 0.8 / 1.4], rtol=1e-14)


def test_reducible_non_stochastic_p_is_undefined_with_reason():
    P = [[1.0, 1.0], [0.0, 2.0]]  # closed class {1}, node 0 transient; rows sum to 2
    info = stationary_info(t(P))
    assert bool(torch.isnan(info.pi).all())
    assert info.reasons == ["undefined: P is reducible and not stochastic (1 closed classes)"]
    assert not bool(info.unique) and not bool(info.irreducible) and int(info.n_closed) == 1
    assert float(info.rho) == pytest.approx(2.0, rel=1e-14)
    msg = raises_named(UndefinedError, "P", lambda: stationary_distribution(t(P)))
    assert (
        msg == "P: no unique stationary distribution: undefined: P is reducible and not stochastic (1 closed classes)"
    )


def test_stochasticity_tolerance_follows_the_dtype_argument():
    # rows sum to 1 + 1e-7: stochastic within float32's tolerance, not within float64's
    P = np.array([[0.5, 0.5 + 1e-7], [0.25, 0.75 + 1e-7]])
    assert tol(torch.float32, 2) > 1e-7 and tol(F, 2) < 1e-7
    as32 = stationary_info(t(P), dtype=torch.float32)
    as64 = stationary_info(t(P))
    assert float(as32.rho) == 1.0
    rho, pi = perron_2x2(P.tolist())
    assert float(as64.rho) == pytest.approx(rho, rel=1e-14) and float(as64.rho) != 1.0
    np.testing.assert_allclose(as64.pi.numpy(), pi, rtol=1e-12)


# ----------------------------------------------------------------------------------- reducible, stochastic
def test_two_closed_classes_and_a_transient_state_exact_pi_and_reasons():
    # 0 → 1 (absorbing) and 0 → 2; {2, 3} closed with π = (1/3, 2/3); each class weighted 1/2
    P = [[0.0, 0.5, 0.5, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.5, 0.5]]
    info = stationary_info(t(P))
    np.testing.assert_allclose(info.pi.numpy(), [0.0, 0.5, 0.5 / 3, 1.0 / 3], atol=1e-15)
    assert int(info.n_closed) == 2 and bool(info.transient) and not bool(info.unique)
    assert info.reasons == [SEVERAL.format(k=2) + "; " + TRANSIENT]
    assert float(info.rho) == 1.0 and float(info.residual) <= 1e-15
    assert float(info.condition) >= 1.0
    msg = raises_named(UndefinedError, "P", lambda: stationary_distribution(t(P)))
    assert msg == "P: no unique stationary distribution: " + SEVERAL.format(k=2) + "; " + TRANSIENT


def test_one_closed_class_with_transient_state_is_unique_with_zeros():
    P = [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    info = stationary_info(t(P))
    np.testing.assert_array_equal(info.pi.numpy(), [0.0, 0.5, 0.5])
    assert bool(info.unique) and bool(info.transient) and info.reasons == [TRANSIENT]
    # class {1, 2}: cond(I − P_C + 11ᵀ) by numpy
    sub = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert float(info.condition) == pytest.approx(np.linalg.cond(np.eye(2) - sub + 1.0), rel=1e-12)
    np.testing.assert_array_equal(stationary_distribution(t(P)).numpy(), [0.0, 0.5, 0.5])


def test_identity_has_one_class_per_state():
    info = stationary_info(torch.eye(3, dtype=F))
    np.testing.assert_allclose(info.pi.numpy(), [1 / 3] * 3, rtol=1e-15)
    assert info.reasons == [SEVERAL.format(k=3)] and int(info.n_closed) == 3
    assert float(info.condition) == pytest.approx(1.0, rel=1e-14)  # each 1×1 class: cond([[1]]) = 1


def test_ill_conditioned_closed_class_of_a_reducible_chain_is_undefined():
    e = 1e-17  # couplings below float64 roundoff inside the closed class {1, 2, 3, 4}
    P = np.zeros((5, 5))
    P[0, 0], P[0, 1] = 0.5, 0.5
    P[1:, 1:] = [[0.5, 0.5 - e, e, 0.0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, e, 0.5, 0.5 - e]]
    info = stationary_info(t(P))
    assert bool(torch.isnan(info.pi).all()) and not bool(info.unique)
    sub = P[1:, 1:]
    c = np.linalg.cond(np.eye(4) - sub + 1.0)
    assert c * tol(F, 4) >= 1
    assert info.reasons[0].startswith(
        "undefined: π is ill-conditioned on closed class [1, 2, 3, 4] (cond(I − P_C + 11ᵀ) = "
    )
    assert info.reasons[0].endswith("): a nearly decomposable class whose couplings are below roundoff")
    assert float(info.condition) >= 1 / tol(F, 4)


# ----------------------------------------------------------------------------------- batches
def test_batched_chains_are_judged_element_by_element():
    irr = [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.0, 0.5]]
    two = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]
    sub = [[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    batch = t([[irr, two], [sub, irr]])
    info = stationary_info(batch)
    assert info.pi.shape == (2, 2, 3) and info.rho.shape == (2, 2) and info.residual.shape == (2, 2)
    # irr: πP = π gives π_0 = π_2/2, π_1 = π_0, π_2 = π_1 + π_2/2, so π = (1, 1, 2)/4; numpy agrees
    ev, V = np.linalg.eig(np.array(irr).T)
    v = V[:, int(np.argmax(ev.real))].real
    pi_irr = v / v.sum()
    np.testing.assert_allclose(pi_irr, [0.25, 0.25, 0.5], rtol=1e-13)
    np.testing.assert_allclose(info.pi[0, 0].numpy(), pi_irr, rtol=1e-13)
    np.testing.assert_allclose(info.pi[1, 1].numpy(), pi_irr, rtol=1e-13)
    np.testing.assert_allclose(info.pi[0, 1].numpy(), [0.5, 0.5, 0.0], atol=1e-15)
    assert bool(torch.isnan(info.pi[1, 0]).all())
    assert info.n_closed.tolist() == [[1, 2], [3, 1]]
    assert info.irreducible.tolist() == [[True, False], [False, True]]
    assert info.unique.tolist() == [[True, False], [False, True]]
    assert info.transient.tolist() == [[False, True], [False, False]]
    assert info.rho.tolist() == [[1.0, 1.0], [pytest.approx(2.0), 1.0]]
    assert info.reasons == [
        "",
        SEVERAL.format(k=2) + "; " + TRANSIENT,
        "undefined: P is reducible and not stochastic (3 closed classes)",
        "",
    ]
    assert info.condition.shape == (2, 2)
    msg = raises_named(UndefinedError, "P", lambda: stationary_distribution(batch))
    assert msg == "P: no unique stationary distribution: " + SEVERAL.format(k=2) + "; " + TRANSIENT


def test_batched_graph_functions_against_networkx():
    mats = [
        [[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 0, 1]],  # 3-cycle + isolated self-loop
        [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]],  # two 2-cycles
    ]
    S = torch.tensor(mats, dtype=torch.bool).reshape(2, 1, 4, 4)
    same, closed, n_closed = communicating_classes(S)
    assert same.shape == (2, 1, 4, 4) and closed.shape == (2, 1, 4) and n_closed.shape == (2, 1)
    per = period(S)
    assert per.shape == (2, 1, 4)
    assert per[:, 0].tolist() == [[3, 3, 3, 1], [2, 2, 2, 2]]
    weak = weak_components(S)
    for b, m in enumerate(mats):
        G = nx.DiGraph(np.array(m))
        assert int(n_closed[b, 0]) == nx.number_attracting_components(G)
        assert int(weak[b, 0]) == nx.number_weakly_connected_components(G)
    assert weak.shape == (2, 1) and weak.dtype == torch.int64


# ----------------------------------------------------------------------------------- closure, period
@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 17])
def test_reachability_of_a_long_path_needs_every_squaring(n):
    """Path 0 → 1 → … → n−1: node j reachable from i iff j ≥ i (paths of length up to n − 1)."""
    S = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n - 1):
        S[i, i + 1] = True
    R = reachability(S)
    expect = np.triu(np.ones((n, n), dtype=bool))
    np.testing.assert_array_equal(R.numpy(), expect)
    same, closed, n_closed = classes_from_reachability(R)
    np.testing.assert_array_equal(same.numpy(), np.eye(n, dtype=bool))
    np.testing.assert_array_equal(closed.numpy(), np.arange(n) == n - 1)
    assert int(n_closed) == 1


def test_classes_from_reachability_counts_classes_not_nodes():
    # two closed classes of sizes 3 and 2, plus a transient node 5 feeding both
    S = np.zeros((6, 6), dtype=bool)
    for i, j in [(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (5, 0), (5, 3)]:
        S[i, j] = True
    same, closed, n_closed = classes_from_reachability(reachability(torch.as_tensor(S)))
    assert int(n_closed) == 2
    np.testing.assert_array_equal(closed.numpy(), [True] * 5 + [False])
    assert same.sum().item() == 9 + 4 + 1


def test_period_of_a_cycle_with_a_chord_is_the_gcd():
    # cycles of length 4 and 6 through node 0 (0→1→2→3→0 and 0→1→2→3→4→5→0): period 2
    S = np.zeros((6, 6), dtype=bool)
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 0), (3, 4), (4, 5), (5, 0)]:
        S[i, j] = True
    assert period(torch.as_tensor(S)).tolist() == [2] * 6
    # adding the 3-cycle 0→1→2→0 makes gcd(3, 4, 6) = 1
    S[2, 0] = True
    assert period(torch.as_tensor(S)).tolist() == [1] * 6


def test_period_ignores_edges_that_leave_the_class():
    # 2-cycle {0, 1} with an edge 1 → 2 into an absorbing node 2 (self-loop): periods 2, 2, 1
    S = torch.tensor([[0, 1, 0], [1, 0, 1], [0, 0, 1]], dtype=torch.bool)
    assert period(S).tolist() == [2, 2, 1]
    assert period(S).dtype == torch.int64


# ----------------------------------------------------------------------------------- bad input
def test_bad_walk_matrices_name_p():
    raises_named(NegativeWeightError, "P", lambda: stationary_info(t([[1.5, -0.5], [0.5, 0.5]])))
    raises_named(ShapeError, "P", lambda: stationary_info(torch.ones(2, 3, dtype=F)))
    raises_named(ShapeError, "P", lambda: stationary_info(torch.ones(3, dtype=F)))
    raises_named(NonFiniteError, "P", lambda: stationary_info(t([[math.nan, 1.0], [0.5, 0.5]])))
    raises_named(NonFiniteError, "P", lambda: stationary_info(t([[math.inf, 1.0], [0.5, 0.5]])))
    raises_named(NegativeWeightError, "P", lambda: stationary_distribution(t([[1.5, -0.5], [0.5, 0.5]])))


def test_period_mixes_a_self_loop_with_a_three_cycle():
    """0 → 2 → 1 → 0 (length 3) and the self-loop 2 → 2 (length 1): gcd 1; node 3 alone with a loop."""
    S = np.zeros((4, 4), dtype=bool)
    for i, j in [(0, 2), (1, 0), (2, 1), (2, 2), (3, 3)]:
        S[i, j] = True
    assert period(torch.as_tensor(S)).tolist() == [1, 1, 1, 1]
    S[2, 2] = False
    assert period(torch.as_tensor(S)).tolist() == [3, 3, 3, 1]


def test_period_skips_an_edge_out_of_the_class_listed_first():
    """Class {1, 2} (a 2-cycle) whose node 1 also points at the absorbing node 0 (lower index)."""
    S = torch.tensor([[1, 0, 0], [1, 0, 1], [0, 1, 0]], dtype=torch.bool)
    assert period(S).tolist() == [1, 2, 2]


def brute_closure(S: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure by n rounds of boolean products (no squaring)."""
    n = S.shape[-1]
    R = S | np.eye(n, dtype=bool)
    for _ in range(n):
        R = R | ((R.astype(int) @ S.astype(int)) > 0)
    return R


def test_closure_and_classes_batched_in_two_leading_dims():
    """Batch (2, 3) of 4-node graphs: every element equals its own unbatched answer (brute-force
    closure, networkx components, closed-walk gcd); the batch sizes differ from n so no axis can be confused."""
    g = np.random.default_rng(11)
    S = g.random((2, 3, 4, 4)) < 0.35
    R = reachability(torch.as_tensor(S))
    same, closed, n_closed = classes_from_reachability(R)
    assert R.shape == (2, 3, 4, 4) and same.shape == (2, 3, 4, 4)
    assert closed.shape == (2, 3, 4) and n_closed.shape == (2, 3) and n_closed.dtype == torch.int64
    weak = weak_components(torch.as_tensor(S))
    per = period(torch.as_tensor(S))
    assert weak.shape == (2, 3) and per.shape == (2, 3, 4)
    for a in range(2):
        for b in range(3):
            s = S[a, b]
            G = nx.DiGraph(s.astype(int))
            np.testing.assert_array_equal(R[a, b].numpy(), brute_closure(s))
            lab = {v: k for k, comp in enumerate(nx.strongly_connected_components(G)) for v in comp}
            np.testing.assert_array_equal(same[a, b].numpy(), [[lab[i] == lab[j] for j in range(4)] for i in range(4)])
            attracting = set().union(*nx.attracting_components(G))
            assert closed[a, b].tolist() == [i in attracting for i in range(4)]
            assert int(n_closed[a, b]) == nx.number_attracting_components(G)
            assert int(weak[a, b]) == nx.number_weakly_connected_components(G)
            assert per[a, b].tolist() == [brute_period(s, i) for i in range(4)]


def test_ill_conditioned_irreducible_reason_names_the_condition_number():
    e = 1e-17
    P = np.array([[0.5, 0.5 - e, e, 0.0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, e, 0.5, 0.5 - e]])
    info = stationary_info(t(P))
    assert not bool(info.unique) and bool(torch.isnan(info.pi).all())
    r = info.reasons[0]
    assert r.startswith("undefined: π is ill-conditioned (cond(ρI − P + 11ᵀ) = ")
    assert r.endswith("): a nearly decomposable walk whose couplings are below roundoff")
    assert r.split("= ")[1].split(")")[0] == f"{float(info.condition):.1e}"  # printed with 2 significant digits


def test_stochasticity_tolerance_defaults_to_the_dtype_of_p():
    # float32 P whose rows miss 1 by ~1 float32 ulp: stochastic for float32's tolerance (ρ = 1 exactly)
    P = torch.tensor([[0.3, 0.7], [0.6, 0.4]], dtype=torch.float32)
    assert (P.double().sum(-1) - 1).abs().max().item() > tol(F, 2)  # not stochastic to float64's tolerance
    info = stationary_info(P)
    assert float(info.rho) == 1.0
    assert float(stationary_info(P.double(), dtype=torch.float64).rho) != 1.0


def test_stationary_pi_of_a_nearly_transient_state_is_never_negative():
    """Regression (found by a Hypothesis example of test_reversibility): state 1 is entered only with
    probability 3.45e-134, so π_1 ≈ 1e-134; the linear solve returned −6.3e-17 there, and diagnose's
    π-weighted Dirichlet check then refused its own π as a negative weight. Oracle: π from the
    numpy eigenvector of Pᵀ for eigenvalue 1 (entries ≥ 0 up to sign), and diagnose runs."""
    from numerics.laplacian import diagnose
    from numerics.walk import ConnectionWalk

    g = torch.Generator().manual_seed(196)
    P = torch.rand(4, 4, generator=g, dtype=torch.float64)
    P[:, 1] = 0
    P[3, 1] = 3.45e-134
    P = P / P.sum(-1, keepdim=True)
    pi = stationary_info(P).pi
    assert bool((pi >= 0).all())
    w, v = np.linalg.eig(P.numpy().T)
    ref = np.real(v[:, np.argmin(np.abs(w - 1))])
    ref = ref / ref.sum()
    np.testing.assert_allclose(pi.numpy(), ref, rtol=0, atol=1e-15)
    rep = diagnose(ConnectionWalk.from_sha(P, torch.eye(2, dtype=torch.float64)))
    assert bool(torch.isfinite(rep.checks()["dirichlet"].residual).all())


def test_communicating_classes_returns_masks_and_counts_with_their_dtypes():
    """``same`` and ``closed`` are boolean masks and ``n_closed`` an int64 count (callers index with
    them and compare counts exactly); oracle for the values: networkx strongly connected components."""
    from numerics.markov import communicating_classes

    S = torch.tensor([[[1, 1, 0], [0, 1, 0], [0, 1, 1]], [[1, 0, 0], [0, 1, 0], [0, 0, 1]]], dtype=torch.bool)
    same, closed, n_closed = communicating_classes(S)
    assert same.dtype == torch.bool and closed.dtype == torch.bool and n_closed.dtype == torch.int64
    for b in range(2):
        g = nx.DiGraph(S[b].numpy())
        cond = nx.condensation(g)
        sinks = [c for c in cond if cond.out_degree(c) == 0]
        assert int(n_closed[b]) == len(sinks)
        closed_ref = sorted(i for c in sinks for i in cond.nodes[c]["members"])
        assert torch.nonzero(closed[b]).reshape(-1).tolist() == closed_ref


def test_stationary_info_handles_every_batch_element_after_irreducible_and_ill_conditioned_ones():
    """The per-element loop over reducible walks must go on past an irreducible element and past an
    ill-conditioned one: the last element's π is its classes' 1/k mixture (oracle by hand:
    two absorbing states and a transient one, π = (½, ½, 0))."""
    irr = torch.full((3, 3), 1 / 3, dtype=torch.float64)
    ill = torch.tensor([[1.0, 1e-20, 0.0], [1e-20, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    red = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.25, 0.25]], dtype=torch.float64)
    for batch in (torch.stack([irr, red]), torch.stack([ill, red])):
        info = stationary_info(batch)
        torch.testing.assert_close(info.pi[1], torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64), rtol=0, atol=1e-15)
    assert bool(torch.isnan(stationary_info(torch.stack([ill, red])).pi[0]).all())


def test_stationary_core_reuses_given_classes_only_on_the_same_support():
    """The diagnostics hand the walk's classes to the block-norm walk's solve: they are reused when
    the supports agree and recomputed otherwise (a hint from another support never changes the
    answer). Oracles: a rank-one chain ``1vᵀ`` has π = v; two closed 2-state blocks have π uniform,
    two closed classes."""
    from numerics.markov import stationary_core

    v = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F)
    full = stationary_core(torch.full((4, 4), 0.25, dtype=F))
    assert bool(full.irreducible) and torch.equal(full.classes[0], torch.ones(4, 4, dtype=torch.bool))
    # same (full) support, other weights: the reused classes give the rank-one chain's π
    one = stationary_core(v.expand(4, 4).clone(), classes=full.classes)
    assert bool(one.irreducible) and int(one.n_closed) == 1
    np.testing.assert_allclose(one.pi.numpy(), v.numpy(), rtol=0, atol=tol(F, 4))
    # another support: the full support's classes (one class) must not be taken for it
    blocks = torch.tensor([[0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5]], dtype=F)
    two = stationary_core(blocks, classes=full.classes)
    assert not bool(two.irreducible) and int(two.n_closed) == 2 and not bool(two.unique)
    np.testing.assert_allclose(two.pi.numpy(), np.full(4, 0.25), rtol=0, atol=tol(F, 4))
    assert "2 closed classes" in two.reasons[0]
