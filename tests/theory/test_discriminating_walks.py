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

import pytest

from tests.theory import mutation as mu
from theory import registry
from theory.gate import project

STRATEGIES = {t: project.STRATEGIES[t] for t in ("T1", "T2")}
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
