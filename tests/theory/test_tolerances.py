"""The conclusions' tolerances are the expressions their oracles evaluate.

Each threshold an oracle decides with is a :class:`theory.formulas.tolerances.Tolerance` in the
conclusion's params (rendered in its tolerance text). ``TOLERANCE_MUTANTS`` edits such an
expression in memory; each edit must change a verdict an instance makes observable: the mutant
rejects an instance the conclusion holds on (rounding noise of a large instance, the √ε-accuracy
of a defective eigenvalue) or accepts a counterexample (a residual of order one under a threshold
without ``ε``). The registry's own tolerance decides the same instance correctly, so editing the
expression in :mod:`theory.formulas.tolerances` makes ``pytest --theorem <id>`` fail here.
"""

from __future__ import annotations

import numpy as np
import pytest

from theory import oracles, registry
from theory.formulas import tolerances as FT


def _cyclic(n: int = 3, weight: float = 1.0) -> np.ndarray:
    """A walk around a cycle (probability 0.9 forward, 0.1 backward), scaled by ``weight``."""
    P = np.zeros((n, n))
    for i in range(n):
        P[i, (i + 1) % n], P[i, (i - 1) % n] = 0.9, 0.1
    return weight * P


def t1_wrong_output() -> dict:
    """``Y = A X T`` (not ``A X Tᵀ``) for a non-symmetric rotation ``T``: T1.walk fails by order one."""
    A, T = _cyclic(), np.array([[0.6, -0.8], [0.8, 0.6]])
    X = np.arange(6.0).reshape(3, 2) - 2.5
    return {"kind": "sha_layers", "A": A, "T": T, "X": X, "Y": A @ X @ T}


def defective() -> dict:
    """A defective ``A`` (a double eigenvalue 1, one eigenvector): its eigenvalues, and those of
    ``A ⊗ T``, are only ``√ε``-accurate (about 1e-8), and T1.spectrum / T5.spectrum hold on it."""
    return {"A": np.array([[2.0, 1.0], [-1.0, 0.0]]), "T": np.diag([2.0, 3.0])}


def defective_involution() -> dict:
    return {**defective(), "T": np.diag([1.0, -1.0])}


def t2_unnormalised_heads() -> dict:
    """Heads whose rows do not sum to 1: T2.walk's row sums fail by order one."""
    rng = np.random.default_rng(0)
    return {"kind": "mha", "As": rng.random((2, 3, 3)), "Ts": rng.standard_normal((2, 2, 2))}


def t3_irreversible() -> dict:
    """The cycle walk with its (uniform) stationary π, scalar transports: not reversible, so
    T3.self_adjoint fails by order one."""
    return {"kind": "walk", "P": _cyclic(), "O": np.ones((3, 3, 1, 1)), "pi": np.full(3, 1 / 3)}


def t3_substochastic() -> dict:
    """The cycle walk at half weight (rows sum to 1/2): the Dirichlet identity fails by order one."""
    return {**t3_irreversible(), "P": _cyclic(weight=0.5)}


def t6_not_circulant() -> dict:
    """A ring whose kernel is not circulant: T6.fourier fails by order one."""
    rng = np.random.default_rng(1)
    A0 = rng.random((1, 4, 4))
    A0 /= A0.sum(-1, keepdims=True)
    return {"kind": "ring", "A0": A0, "T": rng.standard_normal((1, 2, 2))}


def _drop_eps(bound):
    return bound.subs(FT.eps, 1)


#: name -> (conclusion, tolerance key, edit of its bound, instance, does the conclusion hold on it)
TOLERANCE_MUTANTS = {
    "T1.walk 64 eps n d -> 64 n d (eps dropped)": ("T1.walk", "tol", _drop_eps, t1_wrong_output, False),
    "T1.spectrum 1e-6 -> 1e-12 (sqrt eps accuracy dropped)": (
        "T1.spectrum",
        "tol",
        lambda b: b * 1e-6,
        defective,
        True,
    ),
    "T2.walk 64 eps H n -> 64 H n (eps dropped)": ("T2.walk", "tol", _drop_eps, t2_unnormalised_heads, False),
    "T3.self_adjoint 64 eps n d -> 64 n d (eps dropped)": (
        "T3.self_adjoint",
        "tol",
        _drop_eps,
        t3_irreversible,
        False,
    ),
    "T3.dirichlet 64 eps n^2 d -> 64 n^2 d (eps dropped)": (
        "T3.dirichlet",
        "tol_form",
        _drop_eps,
        t3_substochastic,
        False,
    ),
    "T5.spectrum 1e-6 -> 1e-12 (sqrt eps accuracy dropped)": (
        "T5.spectrum",
        "tol",
        lambda b: b * 1e-6,
        defective_involution,
        True,
    ),
    "T6.fourier 64 eps n H d -> 64 n H d (eps dropped)": ("T6.fourier", "tol", _drop_eps, t6_not_circulant, False),
}


def _conclusion(cid: str):
    return registry.get(cid.split(".")[0]).conclusion(cid)


def _params(names):
    return [pytest.param(n, marks=pytest.mark.theorem(n.split(".")[0]), id=n) for n in names]


@pytest.mark.parametrize("name", _params(TOLERANCE_MUTANTS))
def test_the_registry_tolerance_decides_the_instance(name):
    """With the registry's tolerance the oracle judges the instance as it is (an edit of the
    expression in :mod:`theory.formulas.tolerances` fails here)."""
    cid, _, _, make, holds = TOLERANCE_MUTANTS[name]
    verdict = oracles.judge(_conclusion(cid), make())
    assert verdict.holds is holds and not verdict.undecided, (name, verdict)


@pytest.mark.parametrize("name", _params(TOLERANCE_MUTANTS))
def test_tolerance_mutant_is_rejected(name):
    """The edited tolerance gets the same instance wrong: it rejects a true instance or accepts a
    counterexample."""
    cid, key, edit, make, holds = TOLERANCE_MUTANTS[name]
    c = _conclusion(cid)
    mutant = c.with_params(**{key: c.params[key].edited(bound=edit(c.params[key].bound))})
    assert mutant.params[key] != c.params[key]
    verdict = oracles.judge(mutant, make())
    assert verdict.holds is not holds, (name, verdict)


def test_every_theorem_with_rounding_tolerances_has_tolerance_mutants():
    ids = {n.split(".")[0] for n in TOLERANCE_MUTANTS}
    assert {"T1", "T2", "T3", "T5", "T6"} <= ids and len(TOLERANCE_MUTANTS) >= 5


def test_every_predicated_conclusion_states_its_thresholds():
    """Every conclusion with a predicate and a numeric tolerance cites its thresholds as ``«name»``
    (the params the oracle evaluates); only exact rules carry none."""
    for tid in registry.ids():
        for c in registry.get(tid).conclusions:
            if c.predicate and c.tolerance and not c.tolerance.startswith("exact:"):
                assert c.tolerances, c.id


def test_a_tolerance_is_evaluated_from_its_expression():
    """The threshold is the expression's value at the instance's sizes and norms (``ε`` the float64
    machine epsilon)."""
    assert float(np.finfo(np.float64).eps) == FT.EPS
    assert FT.OPERATOR.value(n=3, d=2) == 64 * FT.EPS * 3 * 2
    assert FT.FORM.value(n=3, d=2) == 64 * FT.EPS * 3 * 3 * 2
    W = np.array([[0.0, 3.0], [4.0, 0.0]])  # ‖W‖₂ = 4
    assert FT.SPECTRUM.value({"W": W}, n=2, d=1) == pytest.approx(1e-9 * 2 * 4, rel=1e-15)
    assert FT.SPECTRUM.value({"W": W / 8}, n=2, d=1) == pytest.approx(1e-9 * 2, rel=1e-15)
    B = np.full((2, 2, 1, 1), 0.5)  # ‖B‖_F = 1
    assert FT.KRONECKER.value({"B": B}) == pytest.approx(1e-9, rel=1e-15)
    assert FT.OPERATOR.markdown() == "$r \\le 64 d n \\varepsilon$"
