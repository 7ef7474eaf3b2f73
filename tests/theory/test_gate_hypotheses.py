"""The theorem gate on hypotheses: an edit of a hypothesis formula that an oracle evaluates is
rejected on a fixed instance of the true hypothesis (the hypothesis' predicate accepts the instance
and rejects it under the edit), so the property tests' sampler, which asserts the hypotheses it
enforces, is caught too. The statement and conclusion-formula mutants are in ``test_gate.py``."""

from __future__ import annotations

import pytest
import sympy as sp

from theory import formulas as F
from theory import oracles
from theory.formulas import spectral as FS
from theory.formulas import walks as FW
from theory.registry import get
from theory.report import record

#: edits of hypothesis formulas an oracle evaluates: the hypothesis' predicate accepts an instance of
#: the true hypothesis and rejects it under the edit (so the property tests' sampler, which asserts
#: the hypotheses it enforces, is caught too)
_T2_HEADS = [[[0.5, 0.5], [0.25, 0.75]], [[0.9, 0.1], [0.3, 0.7]]]


def softmax_instance():
    import numpy as np

    X, M = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 2.0]]), np.array([[1.0, 2.0], [0.0, 1.0]])
    S = X @ M @ X.T / np.sqrt(2.0)
    A = np.exp(S) / np.exp(S).sum(-1, keepdims=True)  # literal float64 definition, independent of the formula
    return {"A": A.tolist(), "X": X.tolist(), "M": M.tolist()}


_T1_SOFTMAX = softmax_instance()
HYPOTHESIS_MUTANTS = {
    "T1 layout T = W_O W_V -> (W_O W_V)^T": (
        "T1.transport",
        "layout",
        lambda f: f.edited(rhs=(FW.W_O * FW.W_V).T),
        {"T": [[1.0, 2.0], [3.0, 7.0]], "W_O": [[1.0, 0.0], [3.0, 1.0]], "W_V": [[1.0, 2.0], [0.0, 1.0]]},
    ),
    "T1 layout T = W_O W_V -> W_V W_O": (
        "T1.transport",
        "layout",
        lambda f: f.edited(rhs=FW.W_V * FW.W_O),
        {"T": [[1.0, 2.0], [3.0, 7.0]], "W_O": [[1.0, 0.0], [3.0, 1.0]], "W_V": [[1.0, 2.0], [0.0, 1.0]]},
    ),
    "T1 softmax scores X M X^T -> X M^T X^T": (
        "T1.factorisation",
        "softmax",
        lambda f: f.edited(
            where=((f.where[0][0], f.where[0][1].xreplace({F.M_[F.a, F.b]: F.M_[F.b, F.a]})), *f.where[1:])
        ),
        _T1_SOFTMAX,
    ),
    "T1 softmax without 1/sqrt(d_k)": (
        "T1.factorisation",
        "softmax",
        lambda f: f.edited(where=((f.where[0][0], f.where[0][1].xreplace({F.dk: 1})), *f.where[1:])),
        _T1_SOFTMAX,
    ),
    "T1 softmax d_k = d -> d_k = 1": ("T1.factorisation", "dk", lambda f: f.edited(rhs=sp.S.One), _T1_SOFTMAX),
    "T1 softmax no mask mu_ij = 0 -> mu_ij = j": (
        "T1.factorisation",
        "no_mask",
        lambda f: f.edited(rhs=F.j),
        _T1_SOFTMAX,
    ),
    "T1 layout W_V in R^{d_h x d} -> R^{d x d_h}": (
        "T1.transport",
        "W_V",
        lambda f: FW.Shape("W_V", FW.W_V.T),
        {"T": [[1.0, 2.0], [3.0, 6.0]], "W_O": [[1.0], [3.0]], "W_V": [[1.0, 2.0]]},
    ),
    "T2 convention P = mean -> sum": (
        "T2.convention",
        "convention",
        lambda f: f.edited(rhs=f.rhs * F.H),
        {"As": _T2_HEADS, "Ts": [[[1.0]], [[2.0]]], "P": [[0.7, 0.3], [0.275, 0.725]]},
    ),
    "T2 convention P = mean -> head 1": (
        "T2.convention",
        "convention",
        lambda f: f.edited(rhs=F.Ah_[0, F.i, F.j]),
        {"As": _T2_HEADS, "Ts": [[[1.0]], [[2.0]]], "P": [[0.7, 0.3], [0.275, 0.725]]},
    ),
    "T4 softmax M = W_Q^T W_K -> W_K^T W_Q": (
        "T4.softmax",
        "qk",
        lambda f: f.edited(rhs=f.rhs.xreplace({FS.W_Q_: FS.W_K_, FS.W_K_: FS.W_Q_})),
        # M = W_Q^T W_K (not symmetric), d_k = 1
        {
            "X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
            "M": [[1.0, 2.0], [-1.0, -2.0]],
            "W_Q": [[1.0, -1.0]],
            "W_K": [[1.0, 2.0]],
        },
    ),
    "T4 softmax n >= 3 -> n >= 4": (
        "T4.softmax",
        "size",
        lambda f: f.edited(rel=sp.GreaterThan(F.n, 4)),
        {"X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "M": [[1.0, 2.0], [0.0, 1.0]]},
    ),
    "T4 softmax A_ij > 0 -> A_ij > 1/2": (
        "T4.softmax",
        "positive",
        lambda f: f.edited(rel=sp.StrictGreaterThan(F.A_[F.i, F.j], sp.S.Half)),
        {"X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "M": [[1.0, 2.0], [0.0, 1.0]]},
    ),
    "T4 softmax no mask mu = 0 -> mu_ij = -1": (
        "T4.softmax",
        "no_mask",
        lambda f: f.edited(rhs=sp.S.NegativeOne),
        {"X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "M": [[1.0, 2.0], [0.0, 1.0]]},
    ),
    "T5 involution T^T T = I -> 2I": (
        "T5.involution",
        "orthogonal",
        lambda f: f.edited(rhs=2 * f.rhs),
        {"T": [[0.6, 0.8], [0.8, -0.6]]},
    ),
    "T5 involution T = T^T -> T = -T^T": (
        "T5.involution",
        "symmetric",
        lambda f: f.edited(rhs=-f.rhs),
        {"T": [[0.6, 0.8], [0.8, -0.6]]},
    ),
    "T6 (H1) rows sum to 1 -> columns": (
        "T6.H1",
        "heads",
        lambda f: f.edited(lhs=sp.Sum(F.Ah_[F.h, F.j, F.i], (F.j, 0, F.n - 1))),
        {"A0": [[[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.25, 0.5]]]},
    ),
    "T6 (H2) x* = X_0 -> x* = sum_i X_i": (
        "T6.H2",
        "homogeneous",
        lambda f: f.edited(where=((f.where[0][0], sp.Sum(F.X_[F.i, F.c], (F.i, 0, F.n - 1))),)),
        {"X": [[1.0, -2.0], [1.0, -2.0], [1.0, -2.0]]},
    ),
}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.theorem(n.split()[0]), id=n) for n in HYPOTHESIS_MUTANTS]
)
def test_hypothesis_formula_mutant_is_rejected(name):
    import numpy as np

    hid, key, edit, data = HYPOTHESIS_MUTANTS[name]
    h = get(hid.split(".")[0]).hypothesis(hid)
    bad = h.__class__(**{**h.__dict__, "params": {**h.params, key: edit(h.params[key])}})
    inst = {k: np.asarray(v, float) for k, v in data.items()}
    assert oracles.judge(h, inst).holds, name
    assert oracles.judge(bad, inst).fails, name
    record(hid.split(".")[0], counterexample=f"hypothesis formula mutant rejected: {name}")
