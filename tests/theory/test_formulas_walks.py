"""The walk side's formulas (theory/formulas_walks.py) and the conventions: what THEOREMS.md renders
is the expression an oracle evaluates, and where an oracle computes the same quantity by hand
(``dense_walk``, ``_pi_inner``) the two agree on instances."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory import formulas as F
from theory import formulas_walks as FW
from theory import oracles, render
from theory.registry import CONVENTIONS, get
from theory.statements import Convention


def _walk(seed: int, n: int = 3, d: int = 2):
    rng = np.random.default_rng(seed)
    P = rng.random((n, n))
    return P / P.sum(1, keepdims=True), rng.normal(size=(n, n, d, d)), rng.normal(size=(n, d))


@pytest.mark.parametrize("seed", [0, 1])
def test_dense_walk_is_the_conventions_walk(seed):
    P, O, x = _walk(seed)
    n, d = x.shape
    values = {"P": P, "O": O, "x": x, "n": n, "d": d}
    W = oracles.dense_walk(P, O)
    lhs = F.tabulate(FW.WALK.rhs, FW.WALK.free, values)
    assert np.allclose(lhs.reshape(-1), W @ x.reshape(-1), rtol=0, atol=1e-12)
    gen = F.tabulate(FW.GENERATOR.rhs, FW.GENERATOR.free, values)
    assert np.allclose(gen.reshape(-1), x.reshape(-1) - W @ x.reshape(-1), rtol=0, atol=1e-12)
    blocks = F.tabulate(FW.WALK_BLOCK.rhs, FW.WALK_BLOCK.free, values)  # (i, j, a, b)
    assert np.allclose(blocks.transpose(0, 2, 1, 3).reshape(n * d, n * d), W, rtol=0, atol=0)


def test_pi_inner_product_is_the_conventions():
    _, _, x = _walk(2)
    y = np.random.default_rng(3).normal(size=x.shape)
    pi = np.array([0.2, 0.3, 0.5])
    values = {"pi": pi, "x": x, "y": y, "n": 3, "d": 2}
    got = float(F.tabulate(FW.PI_INNER.rhs, (), values))
    assert got == pytest.approx(oracles._pi_inner(x.reshape(-1), y.reshape(-1), pi, 2), abs=1e-14)


def test_conventions_cite_the_objects_the_oracles_evaluate():
    """The conventions' multi-head definitions are T2.walk's (evaluated by t2_gated_walk), the
    softmax is T4's scores / normaliser and T1.factorisation's formula, the layout T1.transport's."""
    conv = {k: v for c in CONVENTIONS for k, v in c.params.items()}
    blocks = get("T2").conclusion("T2.walk").params["blocks"]
    assert [(x.lhs, x.rhs) for x in (conv["P"], conv["g"], conv["O"], conv["B"])] == list(blocks.where)
    assert conv["layout"] is get("T1").hypothesis("T1.transport").params["layout"]
    assert conv["softmax"] is get("T1").hypothesis("T1.factorisation").params["softmax"]
    assert conv["softmax"].where == F._T4_WHERE[:2] and conv["softmax"].rhs == F._T4_WHERE[2][1]
    assert conv["stacking"].rhs == F.SHA_STACKED.rhs.args[-1]  # vec(X^T), as T1.walk evaluates it
    for c in CONVENTIONS:
        assert c.evaluated_by or c.unevaluated, c.statement
        for name in c.evaluated_by:
            assert name in oracles.PREDICATES, name


def test_a_convention_is_rendered_from_its_expression():
    c = next(c for c in CONVENTIONS if "layout" in c.params)
    md = render.render_markdown(theorems=[], claims=[])
    assert "T = W_{O} W_{V}" in c.text and c.text in md
    edited = Convention(c.statement, {"layout": c.params["layout"].edited(rhs=FW.W_V.T * FW.W_O.T)}, c.evaluated_by)
    assert "W_{V}^{T} W_{O}^{T}" in edited.text and "W_{O} W_{V}" not in edited.text


def test_relation_margin_and_rendering():
    rel = FW.GAUGE_SUPPORT
    assert rel.markdown() == "${P'}_{i,j} > 0$"
    m, strict = FW.margin(rel, {"Pg": np.array([[0.5, 0.0], [1.0, 2.0]]), "n": 2})
    assert strict and m.tolist() == [[0.5, 0.0], [1.0, 2.0]]
    m, strict = FW.margin(rel.edited(rel=sp.LessThan(FW.Q[F.i, F.j], 1)), {"Pg": np.eye(2) * 3, "n": 2})
    assert not strict and m.tolist() == [[-2.0, 1.0], [1.0, -2.0]]
    with pytest.raises(TypeError, match="unsupported relational"):
        FW.margin(rel.edited(rel=sp.Eq(FW.Q[F.i, F.j], 1)), {"Pg": np.eye(2), "n": 2})


def test_shape_is_rendered_from_the_symbol():
    assert FW.SHAPE_X.markdown() == "$X \\in \\mathbb{R}^{n \\times d}$"
    assert FW.Shape("Y", sp.MatrixSymbol("Y", F.d, F.n)).markdown() == "$Y \\in \\mathbb{R}^{d \\times n}$"
