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
from numerics.laplacian import _classes, communicating_classes, diagnose, reachability, stationary_info
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
    same_r, closed_r, nc_r = _classes(reachability(P > 0))
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
        r = assert_close(torch.as_tensor(rev.pi, device=P.device), D.pi, size=n * n, what="graph π vs LA π")
        assert rev.unique == bool(D.pi_unique)
        record("T3", residual=r)


@given(walk_matrices)
def test_stationary_distribution_graph_agrees_with_linear_algebra(P):
    info = stationary_info(P)
    if int(info.n_closed) != 1:
        with pytest.raises(UndefinedError):
            stationary_distribution(P)
        return
    pi_g = torch.as_tensor(stationary_distribution(P), device=P.device)
    assert_close(pi_g, info.pi, size=P.shape[0] ** 2, what="stationary π")


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
            np.testing.assert_allclose(R[i] @ np.linalg.inv(R[j]), data["transport"], rtol=0,
                                       atol=tol(F, 4 * O.shape[-1]))
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
