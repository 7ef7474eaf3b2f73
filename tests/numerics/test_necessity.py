"""Necessity of every hypothesis of T3 and T5: for each hypothesis, Hypothesis ``find`` searches a
strategy in which only that hypothesis is dropped for an instance whose conclusion fails, shrinks
it, and the test re-checks the shrunk instance and records it (with its spectrum) in the theorem
report. (THEOREMS.md's explicit counterexamples are classified in ``test_laplacian.py``.)

Conclusion checked (T3 items 1–4): Δ π-self-adjoint, spectrum real in [0, 2], the Dirichlet
identity, ker Δ = parallel sections."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.device import default_device
from numerics.laplacian import diagnose, format_spectrum
from numerics.walk import ConnectionWalk
from theory.report import record

F = torch.float64
DEV = default_device()

# bounded, derandomized searches: generation stops at the first hit, shrinking is capped by time
SEARCH = settings(max_examples=150, derandomize=True, database=None, deadline=None,
                  phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def fmt(x: torch.Tensor) -> str:
    a = x.detach().cpu().numpy()
    return np.array2string(np.round(a, 3) + 0.0, separator=",", max_line_width=10**6).replace("\n", "")


# --------------------------------------------------------------------------------------- strategies
@st.composite
def _sym_transports(draw, n: int, d: int, orthogonal: bool, transpose_symmetric: bool):
    """Per-edge transports with the requested parts of (c)."""
    if orthogonal:
        Q = draw(cst.orthogonal(d, n * n)).reshape(n, n, d, d)
        S = draw(cst.symmetric_orthogonal(d, n))
    else:
        Q = draw(cst.arrays((n, n, d, d), -2.0, 2.0))
        S0 = draw(cst.arrays((n, d, d), -2.0, 2.0))
        S = (S0 + S0.transpose(-1, -2)) / 2
    if not transpose_symmetric:
        return Q
    O = Q.clone()
    for i in range(n):
        O[i, i] = S[i]
        for j in range(i + 1, n):
            O[j, i] = Q[i, j].T
    return O


@st.composite
def t3_drop(draw, which: str):
    """(P, O, π or None) with all T3 hypotheses except ``which`` ∈ {a, b, orth, transpose}."""
    n = draw(st.integers(1, 3))
    d = draw(st.integers(1, 2))
    pi = None
    if which == "a":  # reversible for the drawn π, rows not summing to 1: P = diag(π)⁻¹ K
        K = draw(cst.arrays((n, n), 0.0, 2.0))
        K = (K + K.T) / 2 + 0.05 * torch.eye(n, dtype=F, device=DEV)
        pi = draw(cst.arrays((n,), 0.1, 1.0))
        P = K / pi[:, None]
        pi = pi / pi.sum()
    elif which == "b":  # stochastic, possibly with zeros, not necessarily reversible
        P = draw(cst.row_stochastic(n, zeros=True))
    elif which == "b-stationary":  # stochastic with full support: positive stationary π, no balance
        P = draw(cst.row_stochastic(draw(st.integers(1, 4))))
        n = P.shape[0]
    else:
        P, _ = draw(cst.reversible_walks(n))
    O = draw(_sym_transports(n, d, orthogonal=which != "orth", transpose_symmetric=which != "transpose"))
    return P, O, pi


@st.composite
def t5_drop(draw, which: str):
    """(A, T) single head, softmax A; all T5 hypotheses except ``which`` ∈ {reversible, orth, sym}."""
    d = draw(st.integers(1, 2))
    if which == "reversible":
        inst = draw(cst.softmax_attention(min_n=2, max_n=4, causal=None))
        T = draw(cst.symmetric_orthogonal(d))[0]
    else:
        inst = draw(cst.softmax_attention(symmetric=True, min_n=1, max_n=3))
        if which == "orth":
            T0 = draw(cst.arrays((d, d), -2.0, 2.0))
            T = (T0 + T0.T) / 2
        else:
            T = draw(cst.orthogonal(d))[0]
    return inst.A, T


# --------------------------------------------------------------------------------------- helpers
def _diag_t3(case):
    P, O, pi = case
    return diagnose(ConnectionWalk.from_edges(P, O), pi=pi)


HYP_T3 = {
    "a": lambda D: bool(D.stochastic.holds),
    "b": lambda D: bool(D.positive_stationary.holds) and bool(D.detailed_balance.holds),
    "b-stationary": lambda D: bool(D.detailed_balance.holds),
    "pi>0": lambda D: bool(D.positive_stationary.holds),
    "orth": lambda D: bool(D.orthogonal.holds),
    "transpose": lambda D: bool(D.transpose_symmetric.holds),
}
NAMES_T3 = {"a": "drop (a) stochastic", "b": "drop (b) reversible",
            "b-stationary": "drop detailed balance, keep a positive stationary π", "orth": "drop orthogonality",
            "transpose": "drop O_ji = O_ijᵀ"}


@pytest.mark.theorem("T3")
@pytest.mark.parametrize("which", ["a", "b", "b-stationary", "orth", "transpose"])
def test_t3_hypothesis_is_necessary(which):
    others = {"a": ["orth", "transpose"],  # reversibility for the drawn π is asserted below
              "b": ["a", "orth", "transpose"],
              "b-stationary": ["a", "pi>0", "orth", "transpose"],
              "orth": ["a", "b", "transpose"],
              "transpose": ["a", "b", "orth"]}[which]

    def violates(case):
        D = _diag_t3(case)
        return (not HYP_T3[which](D)) and all(HYP_T3[k](D) for k in others) and not bool(D.conclusions_t3())

    case = find(t3_drop(which), violates, settings=SEARCH)
    P, O, pi = case
    D = _diag_t3(case)
    # the shrunk instance: the dropped hypothesis fails, the others hold, the conclusion fails
    assert not HYP_T3[which](D)
    for k in others:
        assert HYP_T3[k](D), (k, D.summary())
    if which == "a":
        Fm = pi[:, None] * P
        assert torch.allclose(Fm, Fm.T, atol=D.detailed_balance.tol)  # still reversible for π
    assert not bool(D.conclusions_t3())
    failed = [k for k in ("self_adjoint", "spectrum_interval", "dirichlet", "kernel_parallel")
              if not bool(getattr(D, k).holds)]
    assert failed
    n, d = O.shape[0], O.shape[-1]
    record("T3", counterexample=(f"{NAMES_T3[which]} (found+shrunk): n={n}, d={d}, P={fmt(P)}, "
                                 f"O={fmt(O.reshape(n * n, d, d))} → fails {', '.join(failed)}; "
                                 f"spec Δ = {format_spectrum(D.spectrum)}"))


HYP_T5 = {
    "reversible": lambda D: bool(D.positive_stationary.holds) and bool(D.detailed_balance.holds),
    "orth": lambda D: bool(D.orthogonal.holds),
    "sym": lambda D: bool(D.transpose_symmetric.holds),
}
NAMES_T5 = {"reversible": "drop A reversible", "orth": "drop T orthogonal", "sym": "drop T = Tᵀ"}


@pytest.mark.theorem("T5")
@pytest.mark.parametrize("which", ["reversible", "orth", "sym"])
def test_t5_hypothesis_is_necessary(which):
    others = [k for k in HYP_T5 if k != which]

    def diag(case):
        A, T = case
        return diagnose(ConnectionWalk.from_sha(A, T))

    def violates(case):
        D = diag(case)
        return (not HYP_T5[which](D)) and all(HYP_T5[k](D) for k in others) and not bool(D.conclusions_t3())

    case = find(t5_drop(which), violates, settings=SEARCH)
    A, T = case
    D = diag(case)
    assert not HYP_T5[which](D)
    for k in others:
        assert HYP_T5[k](D), (k, D.summary())
    assert not bool(D.conclusions_t3())
    failed = [k for k in ("self_adjoint", "spectrum_interval", "dirichlet", "kernel_parallel")
              if not bool(getattr(D, k).holds)]
    assert failed
    record("T5", counterexample=(f"{NAMES_T5[which]} (found+shrunk): A={fmt(A)}, T={fmt(T)} → fails "
                                 f"{', '.join(failed)}; spec I − kron(A,T) = {format_spectrum(D.spectrum)}"))


@pytest.mark.theorem("T5")
def test_t5_non_orthogonal_involution_explicit():
    """T² = I but T not orthogonal: real spectrum in [0, 2], not π-self-adjoint, no Dirichlet."""
    A = torch.tensor([[0.6, 0.4], [0.3, 0.7]], dtype=F, device=DEV)  # n = 2: reversible
    T = torch.tensor([[1.0, 1.0], [0.0, -1.0]], dtype=F, device=DEV)
    assert torch.allclose(T @ T, torch.eye(2, dtype=F, device=DEV))
    D = diagnose(ConnectionWalk.from_sha(A, T))
    assert bool(D.detailed_balance.holds) and bool(D.spectrum_interval.holds)
    assert not bool(D.self_adjoint.holds) and not bool(D.dirichlet.holds)
    record("T5", counterexample=f"non-orthogonal involution T=[[1,1],[0,-1]], A=[[.6,.4],[.3,.7]]: "
                                f"spec Δ = {format_spectrum(D.spectrum)} ⊂ [0,2] but not π-self-adjoint, "
                                f"Dirichlet fails")
