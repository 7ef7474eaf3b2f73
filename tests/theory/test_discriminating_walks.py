"""Discriminating T1 and T2 instances: for every conclusion with a predicate, a property test whose
drawn instances reject each of the reviewer's mutant kinds (operand order, transpose, sign, factor,
index swap) of the conclusion's own formulas, without help from ``tests/theory/test_gate.py``.

The mutants are generated mechanically from the registry's SymPy expressions
(:mod:`tests.theory.mutation`); ``test_tX_conclusion_holds`` is the property test, and
``test_mutant_is_rejected_by_the_property_test`` needs, among the same strategy's draws, an instance
the registry's statement holds on and the mutant fails on. A mutant that is the same statement is
listed in ``EQUIVALENT`` with the exact SymPy check that shows it (``test_equivalent_mutant_is_exactly_equivalent``).

The strategies draw, from a seed, instances whose structure makes the mutant kinds visible: ``n, d ≥
2`` (so ``Aᵀ ≠ A``, ``Tᵀ ≠ T``, ``A ⊗ T ≠ T ⊗ A``), softmax attention of non-symmetric scores; for
T2, two or three heads with distinct attentions and transports, and the special cases T2.special and
T2.constant speak of (shared attention, shared transport, cancelling heads) a quarter of the time each.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import strategies as st

from tests.theory import mutation as mu
from theory import registry


def _softmax(S: np.ndarray) -> np.ndarray:
    E = np.exp(S - S.max(-1, keepdims=True))
    return E / E.sum(-1, keepdims=True)


def t1_instance(seed: int) -> dict:
    """A T1 instance (both hypotheses hold): SHA with ``nn.Linear`` weights, attention at ``X``."""
    rng = np.random.default_rng(seed)
    n, d, dh = int(rng.integers(2, 5)), int(rng.integers(2, 4)), int(rng.integers(1, 4))
    X = rng.uniform(-2, 2, (n, d))
    M = rng.uniform(-1.5, 1.5, (d, d))
    WV, WO = rng.uniform(-1.5, 1.5, (dh, d)), rng.uniform(-1.5, 1.5, (d, dh))
    A = _softmax(X @ M @ X.T / math.sqrt(d))
    Y = A @ (X @ WV.T) @ WO.T
    return {"kind": "t1", "A": A, "T": WO @ WV, "X": X, "Y": Y, "W_O": WO, "W_V": WV, "M": M}


def t2_instance(seed: int) -> dict:
    """A T2 instance (both hypotheses hold): row-stochastic heads; the mode (free, shared attention,
    shared transport, two cancelling heads) drawn uniformly; half of the draws sparse (a support
    shared by the heads, not symmetric) with a gauge ``P'`` positive on the transposed support."""
    rng = np.random.default_rng(seed)
    mode = ("free", "shared_A", "shared_T", "cancelling")[int(rng.integers(0, 4))]
    H = 2 if mode == "cancelling" else int(rng.integers(2, 4))
    n, d = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    sparse = rng.random() < 0.5
    # a support shared by every head, not symmetric (a zero A^h_ij for every h: off support)
    mask = (rng.random((n, n)) < 0.6) | np.eye(n, dtype=bool) if sparse else np.ones((n, n), bool)

    def head():
        W = rng.uniform(0.05, 1.0, (n, n)) * mask
        return W / W.sum(-1, keepdims=True)

    base = head()
    As = np.stack([base if mode in ("shared_A", "cancelling") else head() for _ in range(H)])
    Ts = rng.uniform(-2, 2, (H, d, d))
    if mode == "shared_T":
        Ts = np.stack([Ts[0]] * H)
    elif mode == "cancelling":
        Ts = np.stack([Ts[0], -Ts[0]])
    inst = {"kind": "mha", "As": As, "Ts": Ts}
    if sparse:  # a gauge positive on the transposed support: outside T2.gauge's premise unless symmetric
        G = rng.uniform(0.05, 1.0, (n, n)) * (mask.T | np.eye(n, dtype=bool))
        inst["Pg"] = G / G.sum(-1, keepdims=True)
    return inst


STRATEGIES = {
    "T1": st.integers(0, 2**32 - 1).map(t1_instance),
    "T2": st.integers(0, 2**32 - 1).map(t2_instance),
}
CONCLUSIONS = [(t, c.id) for t in STRATEGIES for c in registry.get(t).conclusions if c.predicate]
MUTANTS = {
    m.name: (t, m)
    for t, cid in CONCLUSIONS
    for m in mu.conclusion_mutants(registry.get(t).conclusion(cid), skip=registry.EVALUATED_BY_TESTS.get(cid, {}))
}

#: the generated mutants that state what the registry states (no instance can reject them), each
#: shown by the exact check :func:`tests.theory.mutation.equivalence_reason` at explicit sizes:
#: T1.walk's blocks have one transport (``O_ij = T``, so ``O_ji = O_ij``); ``A ⊗ T``, ``Aᵀ ⊗ T``,
#: ``A ⊗ Tᵀ`` and ``T ⊗ A`` have one characteristic polynomial (T1.spectrum reads only eigenvalues);
#: T2.gauge's identity holds by its own definition ``O' = B / P'`` for every ``B``, and ``Σ_ab B_ba²``
#: is ``Σ_ab B_ab²``; T2.constant's and T2.special's statements are homogeneous in ``B`` and ``T_Σ`` and
#: hold for every value of their free indices (a swap of two of them states the same)
EQUIVALENT = [
    "T1.walk block rhs: O[i, j, a, b] -> O[j, i, a, b] (index swap)",
    "T1.spectrum kron expr: A -> A^T (transpose)",
    "T1.spectrum kron expr: T -> T^T (transpose)",
    "T1.spectrum kron expr: KroneckerProduct(A, T) -> KroneckerProduct(T, A) (operand order)",
    "T2.gauge gauge where B[i, j, a, b]: body times -1 (sign)",
    "T2.gauge gauge where B[i, j, a, b]: body times 2 (factor)",
    "T2.gauge gauge where B[i, j, a, b]: A[h, i, j] -> A[h, j, i] (index swap)",
    "T2.gauge gauge where B[i, j, a, b]: T[h, a, b] -> T[h, b, a] (transpose)",
    "T2.gauge support rel: B[i, j, a, b] -> B[i, j, b, a] (transpose)",
    "T2.constant constant where B[i, j, a, b]: body times 2 (factor)",
    "T2.constant constant where B[i, j, a, b]: A[h, i, j] -> A[h, j, i] (index swap)",
    "T2.constant constant where TS[a, b]: body times 2 (factor)",
    "T2.constant nonneg rel: left side times 2 (factor)",
    "T2.constant nonneg rel: c[i, j] -> c[j, i] (index swap)",
    "T2.special cancelling lhs: lhs times -1 (sign)",
    "T2.special cancelling lhs: lhs times 2 (factor)",
    "T2.special cancelling lhs: B[i, j, a, b] -> B[j, i, a, b] (index swap)",
    "T2.special cancelling lhs: B[i, j, a, b] -> B[i, j, b, a] (transpose)",
    "T2.special cancelling where B[i, j, a, b]: body times -1 (sign)",
    "T2.special cancelling where B[i, j, a, b]: body times 2 (factor)",
    "T2.special cancelling where B[i, j, a, b]: A[h, i, j] -> A[h, j, i] (index swap)",
    "T2.special cancelling where B[i, j, a, b]: T[h, a, b] -> T[h, b, a] (transpose)",
]


(
    test_conclusion_holds,
    test_mutant_is_rejected_by_the_property_test,
    test_equivalent_mutant_is_exactly_equivalent,
) = mu.property_tests(
    STRATEGIES, CONCLUSIONS, MUTANTS, [nm for nm in MUTANTS if nm not in EQUIVALENT], list(EQUIVALENT)
)


@pytest.mark.theorem("T1", "T2")
def test_the_mutants_cover_every_conclusion_and_kind():
    """Every conclusion with a predicate has mutants; the kinds that apply to T1's and T2's formulas
    (matrix products, Kronecker products, indexed transports) are all generated; every listed
    equivalent is a generated mutant."""
    assert set(EQUIVALENT) <= set(MUTANTS)
    for t, cid in CONCLUSIONS:
        if cid != "T2.counterexample":  # its statement is data (exact numbers), no formula
            assert any(m.cid == cid for _, m in MUTANTS.values()), cid
    for t in STRATEGIES:
        kinds = {m.kind for tt, m in MUTANTS.values() if tt == t}
        assert kinds == set(mu.KINDS) - ({"operand order"} if t == "T2" else set()), (t, kinds)
