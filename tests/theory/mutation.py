"""The gate's mutant generator and its exact equivalence checks, for the discriminating test files:
they live in the package (:mod:`theory.gate.mutants`, :mod:`theory.gate.equivalence`,
:mod:`theory.gate.search`, so the gate runs them on any registered statement); this module re-exports
them under their former names and adds the pytest side (:func:`property_tests`, :func:`mutant_params`).

Not collected by pytest (no ``test_`` prefix); used by ``tests/theory/test_discriminating_walks.py``
and ``tests/theory/test_discriminating_spectral.py``.
"""

from __future__ import annotations

from theory.gate.equivalence import (  # noqa: F401
    DEFINITIONS,
    HYPOTHESIS_RULES,
    SIZES,
    SPANS,
    SPECTRAL,
    canonical_symmetric,
    definition_rule,
    equivalence_reason,
    inline,
    residual,
    rules_for,
    same_spectrum,
    scaled_residual,
    substitute,
    symmetric_rule,
    symmetric_under,
)
from theory.gate.mutants import KINDS, Mutant, conclusion_mutants, formula_mutants, position_classes  # noqa: F401
from theory.gate.search import PROPERTY, SEARCH, fails_the_property_test, rejecting_instance  # noqa: F401


def mutant_params(names, mutants) -> list:
    """``pytest.param`` per mutant name, tagged with its theorem (``mutants[name][0]``) and named by it."""
    import pytest

    return [pytest.param(nm, marks=pytest.mark.theorem(mutants[nm][0]), id=nm) for nm in names]


def property_tests(strategies, conclusions, mutants, rejected, equivalent):
    """The three tests a discriminating file runs, over its own strategies and mutants:
    ``test_conclusion_holds`` (the property test: each ``(theorem, conclusion)`` of ``conclusions`` holds
    on every drawn instance), ``test_mutant_is_rejected_by_the_property_test`` (each name of ``rejected``:
    the property test's own strategy draws an instance the statement holds on and the mutant does not —
    it fails, or judging it raises) and ``test_equivalent_mutant_is_exactly_equivalent`` (each name of
    ``equivalent``, by :func:`equivalence_reason`). Assign them to those names in the test module."""
    import pytest
    from hypothesis import given
    from hypothesis import strategies as st

    from theory import oracles, registry

    @pytest.mark.parametrize(
        "tid, cid", [pytest.param(t, c, marks=pytest.mark.theorem(t), id=c) for t, c in conclusions]
    )
    @PROPERTY
    @given(data=st.data())
    def test_conclusion_holds(tid, cid, data):
        inst = data.draw(strategies[tid])
        verdict = oracles.judge(registry.get(tid).conclusion(cid), inst)
        assert verdict.holds, (cid, verdict)

    # a mutant may divide by a zero of a drawn sparse head or take the log of a negative number: numpy's
    # RuntimeWarning there is the mutant's own NaN, which the oracle reads (the original's property test
    # keeps them errors)
    @pytest.mark.filterwarnings("ignore::RuntimeWarning")
    @pytest.mark.parametrize("name", mutant_params(rejected, mutants))
    def test_mutant_is_rejected_by_the_property_test(name):
        tid, m = mutants[name]
        rejecting_instance(strategies[tid], registry.get(tid).conclusion(m.cid), m)

    @pytest.mark.parametrize("name", mutant_params(equivalent, mutants))
    def test_equivalent_mutant_is_exactly_equivalent(name):
        tid, m = mutants[name]
        assert equivalence_reason(tid, registry.get(tid).conclusion(m.cid), m), name

    return (
        test_conclusion_holds,
        test_mutant_is_rejected_by_the_property_test,
        test_equivalent_mutant_is_exactly_equivalent,
    )
