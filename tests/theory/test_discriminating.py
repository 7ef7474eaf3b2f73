"""Discriminating T3 instances: property tests whose drawn walks have a nontrivial kernel and
non-symmetric transports, so that each T3 conclusion's own property test rejects the reviewer's
mutant kinds of its formulas (operand order, transpose, sign, factor, index swap — e.g. the parallel
section ``x_i = O_ji x_j`` instead of ``O_ij x_j``) without help from ``tests/theory/test_gate.py``.

The strategy draws, from a seed, a reversible walk (symmetric positive weights on a connected graph,
``P = D⁻¹W``, ``π ∝ D``) with either a flat connection ``O_ij = R_i R_jᵀ`` (random rotations ``R_i``,
``d ≥ 2``: ``dim ker Δ = d``, parallel sections ``x_i = R_i f``, ``O_ji = O_ijᵀ ≠ O_ij``; two of three
draws) or independent transpose-compatible rotations (trivial kernel), and a scale ``s`` for
T3.scaled. ``test_t3_conclusion_holds`` is the property test; ``test_mutant_is_rejected_by_the_property_test``
runs the same strategy on each mutant of :data:`MUTANTS` and needs a drawn instance it fails on (the
original holding there).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, find, given, settings

from tests.theory import mutation as mu
from theory import formulas as F
from theory import oracles, registry
from theory.gate import project
from theory.gate.project import walk_instance

#: the property tests' settings and the search among their draws (shared with the other theorems' files)
PROPERTY, SEARCH = mu.PROPERTY, mu.SEARCH


instances = project.STRATEGIES["T3"]

T3 = registry.get("T3")
CONCLUSIONS = [c.id for c in T3.conclusions]


@pytest.mark.theorem("T3")
@pytest.mark.parametrize("cid", CONCLUSIONS)
@PROPERTY
@given(inst=instances)
def test_t3_conclusion_holds(cid, inst):
    verdict = oracles.judge(T3.conclusion(cid), inst)
    assert verdict.holds, (cid, verdict)


@pytest.mark.theorem("T3")
@PROPERTY
@given(inst=instances)
def test_the_drawn_walks_discriminate(inst):
    """Flat draws have a kernel of dimension d and, for d ≥ 2, transports that are not symmetric
    (so an index swap or a transpose of ``O`` is a different statement on them)."""
    if "R" in inst:
        n, d = inst["P"].shape[0], inst["O"].shape[-1]
        Dl = np.eye(n * d) - np.einsum("ij,ijab->iajb", inst["P"], inst["O"]).reshape(n * d, n * d)
        assert np.linalg.matrix_rank(Dl, tol=1e-8) == n * d - d


def _seeds_discriminate() -> None:
    """Enough flat draws with non-symmetric transports among the property test's seeds."""
    rng = np.random.default_rng(0)
    draws = [walk_instance(int(s)) for s in rng.integers(0, 2**32 - 1, 200)]
    flat = [x for x in draws if "R" in x and x["O"].shape[-1] >= 2]
    assert len(flat) >= 90, len(flat)
    assert all(np.abs(x["O"] - x["O"].transpose(1, 0, 2, 3)).max() > 1e-3 for x in flat)


@pytest.mark.theorem("T3")
def test_flat_draws_are_frequent_and_not_symmetric():
    _seeds_discriminate()


_O = F.O_[F.i, F.j, F.a, F.b]
_P = F.P_[F.i, F.j]


def _swap(old, new):
    def edit(f):
        return {"lhs": f.lhs.xreplace({old: new}), "rhs": f.rhs.xreplace({old: new})}

    return edit


def _rhs(factor):
    return lambda f: {"rhs": f.rhs * factor}


def _lhs(factor):
    return lambda f: {"lhs": f.lhs * factor}


#: name -> (conclusion, formula key, edit of the Identity's sides): the reviewer's mutant kinds
MUTANTS = {
    "T3.kernel parallel O_ji (index swap)": ("T3.kernel", "parallel", _swap(_O, F.O_[F.j, F.i, F.a, F.b])),
    "T3.kernel parallel O_ij^T (transpose)": ("T3.kernel", "parallel", _swap(_O, F.O_[F.i, F.j, F.b, F.a])),
    "T3.kernel parallel -O (sign)": ("T3.kernel", "parallel", _rhs(-1)),
    "T3.kernel parallel 2 O (factor)": ("T3.kernel", "parallel", _rhs(2)),
    "T3.self_adjoint P_ji (operand order)": ("T3.self_adjoint", "self_adjoint", _swap(_P, F.P_[F.j, F.i])),
    "T3.self_adjoint -rhs (sign)": ("T3.self_adjoint", "self_adjoint", _rhs(-1)),
    "T3.dirichlet 2 rhs (factor)": ("T3.dirichlet", "dirichlet", _rhs(2)),
    "T3.dirichlet -rhs (sign)": ("T3.dirichlet", "dirichlet", _rhs(-1)),
    "T3.spectrum upper form 2 rhs (factor)": ("T3.spectrum", "upper_form", _rhs(2)),
    "T3.flat O_ij = R_j R_i^T (operand order)": (
        "T3.flat",
        "flat",
        lambda f: {"lhs": f.lhs.xreplace({_O: F.O_[F.j, F.i, F.a, F.b]})},
    ),
    "T3.flat -rhs (sign)": ("T3.flat", "flat", _rhs(-1)),
    "T3.scaled 2 rhs (factor)": ("T3.scaled", "scaled", _rhs(2)),
    "T3.scaled -lhs (sign)": ("T3.scaled", "scaled", _lhs(-1)),
}


@pytest.mark.theorem("T3")
@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutant_is_rejected_by_the_property_test(name):
    """The property test's own strategy finds an instance the registry's statement holds on and the
    mutant does not (fails, or undecided: either fails the property test, which asserts ``holds``)."""
    cid, key, edit = MUTANTS[name]
    c = T3.conclusion(cid)
    f = c.params[key]
    changes = edit(f)
    mutant = c.with_params(**{key: f.edited(**changes)})
    assert any(sp.sympify(changes[k]) != getattr(f, k) for k in changes), f"{name}: the edit changed nothing"

    def rejected(inst) -> bool:
        return oracles.judge(c, inst).holds and not oracles.judge(mutant, inst).holds

    found = find(instances, rejected, settings=SEARCH)
    assert rejected(found)


#: mutants that are the same statement under T3's hypotheses (no instance can reject them): by (c2)
#: ``O_ji = O_ijᵀ``, so an index swap of ``O`` is its transpose, and transposing every transport gives
#: the walk's π-adjoint ``W*`` (by (b)), whose π-form equals ``W``'s and which is π-self-adjoint when
#: ``W`` is; the sums of squares are symmetric in ``(i, j)`` under (b), (c1)
EQUIVALENT = {
    "T3.self_adjoint O_ji (index swap)": ("T3.self_adjoint", "self_adjoint", _swap(_O, F.O_[F.j, F.i, F.a, F.b])),
    "T3.dirichlet O_ji (index swap)": ("T3.dirichlet", "dirichlet", _swap(_O, F.O_[F.j, F.i, F.a, F.b])),
    "T3.dirichlet O^T (transpose)": ("T3.dirichlet", "dirichlet", _swap(_O, F.O_[F.i, F.j, F.b, F.a])),
    "T3.spectrum upper form O_ji (index swap)": ("T3.spectrum", "upper_form", _swap(_O, F.O_[F.j, F.i, F.a, F.b])),
    "T3.spectrum upper form O^T (transpose)": ("T3.spectrum", "upper_form", _swap(_O, F.O_[F.i, F.j, F.b, F.a])),
}


@pytest.mark.theorem("T3")
@pytest.mark.parametrize("name", list(EQUIVALENT))
@settings(max_examples=20, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(inst=instances)
def test_equivalent_mutant_holds_wherever_the_statement_does(name, inst):
    """The equivalent mutants hold on the drawn instances (so their absence from MUTANTS is a fact
    about the statement, not a weakness of the strategy)."""
    cid, key, edit = EQUIVALENT[name]
    c = T3.conclusion(cid)
    f = c.params[key]
    assert oracles.judge(c.with_params(**{key: f.edited(**edit(f))}), inst).holds
