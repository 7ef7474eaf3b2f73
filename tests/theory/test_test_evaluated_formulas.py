"""Mutants of the formulas a test evaluates instead of a predicate (``registry.EVALUATED_BY_TESTS``):
each edit is rejected by that test's own comparison (the companion of test_gate's formula mutants)."""

from __future__ import annotations

import pytest

from theory import formulas as F
from theory.registry import get
from theory.report import record

#: formula edits of the formulas a test evaluates instead of a predicate (registry.EVALUATED_BY_TESTS):
#: name -> (conclusion, formula key, edit); each is rejected by that test's own comparison
TEST_FORMULA_MUTANTS = {
    "T6 dynamics - x_i -> + x_i": (
        "T6.jacobian",
        "dynamics",
        lambda f: f.edited(rhs=f.rhs + 2 * F.x_[F.i, F.c]),
    ),
    "T6 dynamics A^h_ij -> A^h_ji": (
        "T6.jacobian",
        "dynamics",
        lambda f: f.edited(rhs=f.rhs.xreplace({F.Ah_[F.h, F.i, F.j]: F.Ah_[F.h, F.j, F.i]})),
    ),
}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.theorem(n.split()[0]), id=n) for n in TEST_FORMULA_MUTANTS]
)
def test_test_evaluated_formula_mutant_is_rejected(name):
    """The comparison the formula's test makes (``test_patterns.dynamics_residual``) accepts the
    registry's formula and rejects the edit, on a velocity computed literally (numpy loops)."""
    import numpy as np

    from tests.numerics.test_patterns import dynamics_residual

    cid, key, edit = TEST_FORMULA_MUTANTS[name]
    ident = get(cid.split(".")[0]).conclusion(cid).params[key]
    A = np.array([[[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.25, 0.5]]])
    T = np.array([[[1.0, 2.0], [-1.0, 0.5]]])
    X = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])
    velocity = np.zeros_like(X)
    for i_ in range(3):
        for j_ in range(3):
            velocity[i_] += A[0, i_, j_] * (T[0] @ X[j_])
    velocity -= X
    assert dynamics_residual(ident, A, T, X, velocity) <= 1e-14, name
    assert dynamics_residual(edit(ident), A, T, X, velocity) >= 0.1, name
    record(cid.split(".")[0], counterexample=f"test-evaluated formula mutant rejected: {name}")
