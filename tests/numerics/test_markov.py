"""numerics.markov against independent oracles: exact rational stationary distributions
(Fractions, Gaussian elimination), networkx's components, periods by brute-force boolean matrix
powers, and the conditioning guard on a nearly decomposable chain."""

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
    reachability,
    stationary_distribution,
    stationary_info,
    weak_components,
)
from numerics.tolerance import tol

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
