"""``diagnose`` (numerics/laplacian.py) judged by the independent oracles (theory/oracles/__init__.py), and
the repair of block detailed balance: balanced norms with wrong transports must be rejected.

* ``test_block_detailed_balance_rejects_balanced_norms_with_wrong_transports``: the walk obtained
  from a reversible metric-compatible one by dropping ``O_ji = O_ijᵀ`` (``O_ji = O_ij`` instead,
  a non-symmetric rotation) has ``π_i‖B_ij‖ = π_j‖B_ji‖`` exactly, yet no ``π`` gives
  ``π_i B_ij = π_j B_jiᵀ``. A norms-only ``block_detailed_balance`` passes it; this test fails then.
* ``test_diagnose_agrees_with_the_oracles``: on T3 instances with any subset of the hypotheses
  dropped, every ``diagnose`` verdict that has an oracle counterpart agrees with it whenever the
  oracle is clear (holds, or fails by far more than any tolerance).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics.laplacian import diagnose
from numerics.walk import ConnectionWalk
from tests.numerics.statement_cases import instances
from theory import oracles
from theory.registry import get
from theory.report import record

F = torch.float64


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=F)


def _rot(th: float) -> np.ndarray:
    return np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])


@st.composite
def untransposed_walks(draw):
    """Reversible stochastic P (full support, n ≥ 2), O_ij = R(θ_ij) for i < j and O_ji = O_ij
    (not O_ijᵀ; θ away from 0 and π so R(θ) is not symmetric), reflections on the diagonal."""
    n = draw(st.integers(2, 5))
    W = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n * n, max_size=n * n))).reshape(n, n)
    K = (W + W.T) / 2
    P = K / K.sum(-1, keepdims=True)
    O = np.zeros((n, n, 2, 2))
    for i in range(n):
        phi = draw(st.floats(-math.pi, math.pi))
        O[i, i] = np.array([[math.cos(phi), math.sin(phi)], [math.sin(phi), -math.cos(phi)]])
        for j in range(i + 1, n):
            th = draw(st.floats(0.3, math.pi - 0.3)) * draw(st.sampled_from([1, -1]))
            O[i, j] = O[j, i] = _rot(th)
    return P, O


@pytest.mark.theorem("T3")
@given(untransposed_walks())
def test_block_detailed_balance_rejects_balanced_norms_with_wrong_transports(case):
    P, O = case
    inst = {"kind": "walk", "P": P, "O": O}
    # the norms balance exactly for the stationary π of P (orthogonal blocks: ‖B_ij‖ = √2 P_ij)
    pi = oracles.stationary(P)
    N = np.linalg.norm(P[:, :, None, None] * O, axis=(-1, -2))
    assert np.abs(pi[:, None] * N - (pi[:, None] * N).T).max() <= 1e-12
    assert oracles.reversible(inst, {}).holds and oracles.orthogonal(inst, {}).holds
    assert not oracles.transpose_compatible(inst, {}).holds
    oracle = oracles.block_detailed_balance(inst, {})
    assert not oracle.holds, oracle
    D = diagnose(ConnectionWalk.from_edges(_t(P), _t(O)))
    assert not bool(D.block_detailed_balance.holds), D.summary()
    assert not bool(D.is_connection_laplacian())
    # positive control: the same walk with O_ji = O_ijᵀ is balanced, for the oracle and for diagnose
    Ot = O.copy()
    for i in range(P.shape[0]):
        for j in range(i + 1, P.shape[0]):
            Ot[j, i] = O[i, j].T
    good = {"kind": "walk", "P": P, "O": Ot}
    assert oracles.block_detailed_balance(good, {}).holds
    D2 = diagnose(ConnectionWalk.from_edges(_t(P), _t(Ot)))
    assert bool(D2.block_detailed_balance.holds), D2.summary()
    record("T3", residual=float(D2.block_detailed_balance.residual))


@pytest.mark.theorem("T3")
def test_block_detailed_balance_registered_witness():
    """The registered witness of (c2) (swap walk, O_12 = O_21 = a rational rotation): norms balanced,
    transports not; diagnose must reject it."""
    (w,) = get("T3").hypothesis("T3.c2").witnesses
    inst = oracles.build(w.instance)
    assert not oracles.block_detailed_balance(inst, {}).holds
    D = diagnose(ConnectionWalk.from_edges(_t(inst["P"]), _t(inst["O"])))
    assert not bool(D.block_detailed_balance.holds)
    record("T3", counterexample="balanced norms, O_21 = O_12 (a rotation): block detailed balance rejected")


# ---------------------------------------------------------------------------------------- diagnose
#: diagnose field -> (how to get the oracle verdict)
PAIRS = {
    "stochastic": lambda i: oracles.stochastic(i, {}),
    "orthogonal": lambda i: oracles.orthogonal(i, {}),
    "transpose_symmetric": lambda i: oracles.transpose_compatible(i, {}),
    "self_adjoint": lambda i: oracles.walk_self_adjoint(i, {}),
    "spectrum_interval": lambda i: oracles.walk_spectrum_interval(i, {"lo": 0, "hi": 2}),
    "dirichlet": lambda i: oracles.walk_dirichlet(i, {}),
    "kernel_parallel": lambda i: oracles.walk_kernel_parallel(i, {}),
    "block_detailed_balance": lambda i: oracles.block_detailed_balance(i, {}),
}


@st.composite
def t3_any(draw):
    t = get("T3")
    for hid in sorted(t.hypothesis_ids):
        if draw(st.booleans()):
            t = t.without(hid)
    return draw(instances(t))


def _clear(v: oracles.Verdict) -> bool:
    """The oracle's verdict is far from its boundary: holds with a residual ≤ 1e-3 × its tolerance,
    or fails by ≥ 1e-6 (relative) and by ≥ 1e3 × its tolerance (any reasonable tolerance of
    diagnose then agrees)."""
    if not v.applicable:
        return False
    return (v.holds and v.residual <= 1e-3 * v.tol) or (v.residual >= 1e-6 and v.residual >= 1e3 * v.tol)


def _well_conditioned(P, O, pi) -> bool:
    """Compared only on well-scaled instances: nonzero transport entries ≥ 1e-6 in magnitude and
    a stationary π within a factor 100 (diagnose's tolerances are absolute floors plus ε-scaled
    terms that do not carry eigenvalue or π conditioning; disagreements outside this range are
    tolerance conventions, listed in the closing report of issue 10)."""
    nz = np.abs(O[np.abs(O) > 0])
    if nz.size and nz.min() < 1e-6:
        return False
    p = pi if pi is not None else oracles.stationary(P)
    return bool(p.min() > 0 and p.max() / p.min() <= 100)


def _common_scale(P, O):
    """``s`` when every transport on the support is ``s·Q`` with ``Q`` orthogonal (one ``s``)."""
    d = O.shape[-1]
    sup = list(zip(*np.nonzero(P)))
    if not sup:
        return None
    s = [float(np.linalg.norm(O[i, j])) / math.sqrt(d) for i, j in sup]
    if max(s) - min(s) > 1e-12 * max(max(s), 1.0) or max(s) == 0:
        return None
    Q = [O[i, j] / s[0] for i, j in sup]
    return s[0] if all(np.abs(q.T @ q - np.eye(d)).max() <= 1e-12 for q in Q) else None


@pytest.mark.theorem("T3")
@given(t3_any())
def test_diagnose_agrees_with_the_oracles(inst):
    P, O = oracles.walk_view(inst)
    pi = inst.get("pi")
    D = diagnose(ConnectionWalk.from_edges(_t(P), _t(O)), pi=None if pi is None else _t(pi))
    stochastic = oracles.stochastic(inst, {}).holds
    if not _well_conditioned(P, O, pi):
        return
    if pi is None and stochastic:  # (b) with the computed π: positive stationary and balanced
        rev = oracles.reversible(inst, {})
        if _clear(rev):
            assert bool(D.positive_stationary.holds and D.detailed_balance.holds) == rev.holds, (rev, D.summary())
    # π of a non-stochastic P with no π given: diagnose uses the Perron vector (πP = ρπ), the
    # statement's π solves πP = π (none exists): the π-dependent checks are not comparable then
    pi_comparable = pi is not None or stochastic
    scaled = _common_scale(P, O)
    compared = 0
    for name, oracle in PAIRS.items():
        if name in ("self_adjoint", "dirichlet") and not pi_comparable:
            continue
        if name == "dirichlet" and scaled is not None and abs(scaled - 1) > 1e-9:
            continue  # diagnose states the scaled-isometry variant (T3.scaled) for O = sQ, s ≠ 1
        if name == "block_detailed_balance" and (np.abs(P[:, :, None, None] * O).sum((1, 2, 3)) == 0).any():
            continue  # a zero block row: diagnose reports block π undefined by convention (documented)
        v = oracle(inst)
        if not _clear(v):
            continue
        got = bool(getattr(D, name).holds)
        assert got == v.holds, f"{name}: diagnose {got}, oracle {v}\n{D.summary()}"
        compared += 1
    record("T3", residual=0.0, examples=compared)


@pytest.mark.theorem("T6")
def test_homogeneous_judges_the_base_state_and_names_a_missing_one():
    """T6.H2's predicate evaluates the registry's formula on the instance's base state ``X``."""
    from theory.registry import get

    params = get("T6").hypothesis("T6.H2").params
    ring = {"kind": "ring", "A0": np.full((1, 3, 3), 1 / 3), "T": np.eye(2)[None]}
    assert oracles.homogeneous({**ring, "X": np.array([[1.0, -2.0]] * 3)}, params).holds
    assert oracles.homogeneous({**ring, "X": np.array([[1.0, -2.0], [1.0, -2.0], [1.0, -1.5]])}, params).fails
    with pytest.raises(KeyError, match="'X'"):
        oracles.homogeneous(ring, params)


@pytest.mark.theorem("T2")
def test_t2_gauge_judges_a_tiny_transport_at_unit_scale():
    """A transport of 1e-259 (drawn once by Hypothesis): the gauge identity is linear in T, so it holds
    exactly; products of such a transport underflow, and the support premise ``B_ij ≠ 0 ⇒ P'_ij > 0``
    must not take the underflow for a zero block (that gave an infinite residual)."""
    inst = {"kind": "mha", "As": np.full((1, 2, 2), 0.5), "Ts": np.full((1, 1, 1), 3.90355048e-259)}
    v = oracles.t2_gauge(inst, get("T2").conclusion("T2.gauge").params)
    assert v.holds and not v.undecided and v.residual == 0.0


@pytest.mark.theorem("T3")
def test_t3_self_adjoint_scales_by_its_terms_on_a_nearly_absorbing_state():
    """A reversible 2-state walk (drawn by Hypothesis in the gate's search) whose dominant state has
    ``Δ ≈ 0``: every entry of ``(diag π ⊗ I)Δ`` is small, so a residual measured against that
    maximum (1e-16 / 2e-3) failed a true statement; measured against the terms it sums it holds, and
    dropping π from the formula is still rejected."""
    from theory import formulas as F

    P = np.array([[0.17705339788992458, 0.8229466021100754], [0.0017538886088879439, 0.9982461113911121]])
    inst = {"kind": "walk", "P": P, "O": np.array([-1.0, 1.0, 1.0, 1.0]).reshape(2, 2, 1, 1)}
    params = get("T3").conclusion("T3.self_adjoint").params
    assert oracles.reversible(inst, {}).holds and oracles.walk_self_adjoint(inst, params).holds
    ident = params["self_adjoint"]
    no_pi = ident.edited(rhs=ident.rhs.xreplace({F.pi_[F.i]: 1}))
    assert oracles.walk_self_adjoint(inst, {"self_adjoint": no_pi}).fails


def test_bool_of_an_undecided_verdict_raises():
    """An oracle's verdict is three-valued: ``bool()`` of an undecided one raises a ``TypeError``
    (``theory.errors.UndecidedTruthError``) instead of reading "undecided" as "fails"."""
    from theory.errors import UndecidedTruthError

    assert bool(oracles.residual_verdict(0.1, 1.0)) and not bool(oracles.residual_verdict(2.0, 1.0))
    und = oracles.residual_verdict(1.0, 1.0, error=0.5)
    assert und.status == "undecided"
    with pytest.raises(UndecidedTruthError, match=r"use \.holds, \.fails or \.status"):
        bool(und)
    with pytest.raises(TypeError):
        bool(oracles.residual_verdict(math.nan, 1.0))
