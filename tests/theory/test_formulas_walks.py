"""The walk side's formulas (theory/formulas/walks.py) and the conventions: what THEOREMS.md renders
is the expression an oracle evaluates, and where an oracle computes the same quantity by hand
(``dense_walk``, ``pi_inner_product``) the two agree on instances."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory import formulas as F
from theory import oracles, render
from theory.formulas import walks as FW
from theory.registry import CONVENTIONS, get
from theory.statements import Convention


def walk_component(seed: int, n: int = 3, d: int = 2):
    rng = np.random.default_rng(seed)
    P = rng.random((n, n))
    return P / P.sum(1, keepdims=True), rng.normal(size=(n, n, d, d)), rng.normal(size=(n, d))


def literal_walk(P, O):
    """``W`` with block ``(i, j) = P_ij O_ij`` (token-major), by explicit block loops."""
    n, d = P.shape[0], O.shape[-1]
    W = np.zeros((n * d, n * d))
    for i in range(n):
        for j in range(n):
            W[i * d : (i + 1) * d, j * d : (j + 1) * d] = P[i, j] * O[i, j]
    return W


def sized_matrix(expr, W, n: int, d: int):
    """A matrix formula over ``W`` (``Δ = I - W``) at the sizes ``n``, ``d`` (numpy prints an identity
    only at a fixed size), evaluated by ``lambdify`` at the matrix ``W``."""
    return F.tabulate(expr.subs({F.n: n, F.d: d}), (), {"W": W})


@pytest.mark.parametrize("seed", [0, 1])
def test_dense_walk_is_the_conventions_walk(seed):
    """The oracles' ``dense_walk`` evaluates the conventions' shape and block formulas; the walk,
    the generator and ``Δ = I - W`` (componentwise and as matrices) agree with literal block loops."""
    P, O, x = walk_component(seed)
    n, d = x.shape
    values = {"P": P, "O": O, "x": x, "n": n, "d": d}
    W = literal_walk(P, O)
    assert np.array_equal(oracles.dense_walk(P, O), W)
    lhs = F.tabulate(FW.WALK.rhs, FW.WALK.free, values)
    assert np.allclose(lhs.reshape(-1), W @ x.reshape(-1), rtol=0, atol=1e-12)
    gen = F.tabulate(FW.GENERATOR.rhs, FW.GENERATOR.free, values)
    assert np.allclose(gen.reshape(-1), x.reshape(-1) - W @ x.reshape(-1), rtol=0, atol=1e-12)
    assert np.array_equal(sized_matrix(FW.GENERATOR_MATRIX.rhs, W, n, d), np.eye(n * d) - W)
    assert FW.SHAPE_W.dims({"n": n, "d": d}) == W.shape


@pytest.mark.parametrize("edit", ["block transposed", "blocks feature-major", "Delta = I + W"])
def test_walk_formula_edits_change_the_dense_walk(monkeypatch, edit):
    """``dense_walk`` reads the conventions' formulas: an edit of the block formula (its value or its
    placement) changes it, and an edit of ``Δ`` is caught by the test above's comparison."""
    P, O, _ = walk_component(4)
    n, d = P.shape[0], O.shape[-1]
    W = literal_walk(P, O)
    if edit == "Delta = I + W":
        bad = FW.GENERATOR_MATRIX.edited(rhs=sp.Identity(F.n * F.d) + FW.W_m)
        assert not np.array_equal(sized_matrix(bad.rhs, W, n, d), np.eye(n * d) - W)
        return
    blk = FW.WALK_BLOCK
    if edit == "block transposed":
        bad = blk.edited(rhs=blk.rhs.xreplace({F.O_[F.i, F.j, F.a, F.b]: F.O_[F.i, F.j, F.b, F.a]}))
    else:
        bad = blk.edited(lhs=FW.Wb[F.a * F.n + F.i, F.b * F.n + F.j])
    monkeypatch.setattr(FW, "WALK_BLOCK", bad)
    assert not np.allclose(oracles.dense_walk(P, O), W)


def test_pi_inner_product_is_the_conventions():
    """The oracles' ``pi_inner_product`` evaluates the conventions' ``PI_INNER`` on the tokens that
    ``STACK_ENTRY`` reads: against the literal sum ``Σ_i π_i x_i·y_i`` of token-major slices."""
    _, _, x = walk_component(2)
    y = np.random.default_rng(3).normal(size=x.shape)
    pi = np.array([0.2, 0.3, 0.5])
    xs, ys = x.reshape(-1), y.reshape(-1)
    want = sum(pi[i] * float(xs[2 * i : 2 * i + 2] @ ys[2 * i : 2 * i + 2]) for i in range(3))
    assert oracles.pi_inner_product(xs, ys, pi, 2) == pytest.approx(want, abs=1e-14)
    assert np.array_equal(oracles.tokens(xs, 3, 2), x)
    bad = FW.STACK_ENTRY.edited(lhs=FW.x_vec[F.a * F.n + F.i, 0])  # feature-major entries
    pos = FW.broadcast(bad.lhs.indices[0], bad.free, {"n": 3, "d": 2})
    assert not np.array_equal(xs[pos], x)
    bad = FW.PI_INNER.edited(rhs=FW.PI_INNER.rhs.xreplace({F.pi_[F.i]: 1}))
    assert float(F.tabulate(bad.rhs, (), {"pi": pi, "x": x, "y": y, "n": 3, "d": 2})) != pytest.approx(want)


def test_stacking_evaluates_the_entry_formula():
    X = np.arange(6.0).reshape(3, 2)
    assert np.array_equal(oracles.stack(X, "token-major"), np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))


def biased_layer(stochastic: bool = True):
    """A single head with value and output biases, computed literally (``nn.Linear``: ``y = W x + b``)."""
    rng = np.random.default_rng(7)
    n, d, d_h = 3, 2, 2
    A = rng.random((n, n))
    if stochastic:
        A /= A.sum(1, keepdims=True)
    X, W_V, W_O = rng.normal(size=(n, d)), rng.normal(size=(d_h, d)), rng.normal(size=(d, d_h))
    b_V, b_O = rng.normal(size=d_h), rng.normal(size=d)
    Y = (A @ (X @ W_V.T + b_V)) @ W_O.T + b_O
    return {"A": A, "X": X, "W_V": W_V, "W_O": W_O, "b_V": b_V, "b_O": b_O, "n": n, "d": d}, Y


def bias_residual(bias, output, stochastic: bool = True) -> float:
    """The conventions' bias formulas evaluated on the layer: ``c`` from ``bias``, then the output
    ``Σ_j A_ij T x_j + c`` (``T = W_O W_V``) against the literal biased layer."""
    v, Y = biased_layer(stochastic)
    c = F.tabulate(bias.rhs, (), {"W_O": v["W_O"], "b_V": v["b_V"][:, None], "b_O": v["b_O"][:, None]})
    values = {"A": v["A"], "T": v["W_O"] @ v["W_V"], "x": v["X"], "c": np.reshape(c, -1), "n": v["n"], "d": v["d"]}
    return float(np.abs(F.tabulate(output.rhs, output.free, values) - Y).max())


def test_bias_formulas_give_the_biased_layer_output():
    assert bias_residual(FW.BIAS, FW.BIAS_OUTPUT) < 1e-12
    # the premise (row-stochastic A) is needed, and edits of either formula are rejected
    assert bias_residual(FW.BIAS, FW.BIAS_OUTPUT, stochastic=False) > 1e-3
    assert bias_residual(FW.BIAS.edited(rhs=FW.b_O), FW.BIAS_OUTPUT) > 1e-3
    c_a = sp.IndexedBase("c")[F.a]
    assert bias_residual(FW.BIAS, FW.BIAS_OUTPUT.edited(rhs=FW.BIAS_OUTPUT.rhs - c_a)) > 1e-3


@pytest.mark.parametrize("n", [3, 5, 8])
def test_fourier_modes_diagonalise_the_ring_shift(n):
    """The conventions' modes ``φ_k`` and ``ζ``: ``φ_k(j) = ζ^j``, and ``φ_k`` is an eigenvector of the
    ring shift ``(Sv)_j = v_{j+1 mod n}`` (numpy roll) with eigenvalue ``ζ``; the modes are orthogonal."""
    phi = F.tabulate(FW.FOURIER_MODE.rhs, FW.FOURIER_MODE.free, {"n": n})
    zeta = F.tabulate(FW.ZETA.rhs, (FW.kk,), {"n": n})
    assert np.allclose(np.roll(phi, -1, axis=1), zeta[:, None] * phi, rtol=0, atol=1e-12)
    assert np.allclose(phi, zeta[:, None] ** np.arange(n)[None, :], rtol=0, atol=1e-12)
    assert np.allclose(phi @ phi.conj().T, n * np.eye(n), rtol=0, atol=1e-9)
    bad = F.tabulate(FW.ZETA.rhs.xreplace({sp.I: -sp.I}), (FW.kk,), {"n": n})
    assert not np.allclose(np.roll(phi, -1, axis=1), bad[:, None] * phi, rtol=0, atol=1e-6)


def test_conventions_cite_the_objects_the_oracles_evaluate():
    """The conventions' multi-head definitions are T2.walk's (evaluated by t2_gated_walk), the
    softmax is T4's scores / normaliser and T1.factorisation's formula, the layout T1.transport's."""
    conv = {k: v for c in CONVENTIONS for k, v in c.params.items()}
    blocks = get("T2").conclusion("T2.walk").params["blocks"]
    assert [(x.lhs, x.rhs) for x in (conv["P"], conv["g"], conv["O"], conv["B"])] == list(blocks.where)
    assert conv["layout"] is get("T1").hypothesis("T1.transport").params["layout"]
    assert conv["softmax"] is get("T1").hypothesis("T1.factorisation").params["softmax"]
    assert conv["softmax"].where == F.T4_WHERE[:2] and conv["softmax"].rhs == F.T4_WHERE[2][1]
    assert conv["stacking"].rhs == F.SHA_STACKED.rhs.args[-1]  # vec(X^T), as T1.walk evaluates it
    for c in CONVENTIONS:
        assert c.evaluated_by or c.unevaluated, c.statement
        for name in c.evaluated_by:
            assert name in oracles.PREDICATES, name


def test_a_convention_is_rendered_from_its_expression():
    c = next(c for c in CONVENTIONS if "layout" in c.params)
    md = render.render_markdown(theorems=[], claims=[])
    assert "T = W_{O} W_{V}" in c.text and c.text in md
    edited = Convention(
        c.statement, {**c.params, "layout": c.params["layout"].edited(rhs=FW.W_V.T * FW.W_O.T)}, c.evaluated_by
    )
    assert "W_{V}^{T} W_{O}^{T}" in edited.text and "W_{O} W_{V}" not in edited.text


def test_relation_margin_and_rendering():
    rel = FW.Relation("support", sp.StrictGreaterThan(FW.Q[F.i, F.j], 0), (F.i, F.j))
    assert rel.markdown() == "${P'}_{i,j} > 0$"
    m, strict = FW.margin(rel, {"Pg": np.array([[0.5, 0.0], [1.0, 2.0]]), "n": 2})
    assert strict and m.tolist() == [[0.5, 0.0], [1.0, 2.0]]
    # an implication (T2.gauge's support: B_ij ≠ 0 ⇒ P'_ij > 0): +∞ where its condition fails
    gauge = FW.GAUGE_SUPPORT
    assert gauge.markdown().split(" where ")[0].endswith("\\neq 0 \\Rightarrow {P'}_{i,j} > 0$")
    As, Ts = np.array([[[0.5, 0.5], [0.0, 1.0]]]), np.array([[[2.0]]])  # B_10 = 0
    values = {"A": As, "T": Ts, "Pg": np.array([[0.5, 0.0], [0.0, 1.0]]), "n": 2, "d": 1, "H": 1}
    m, strict = FW.margin(gauge, values)
    assert strict and m.tolist() == [[0.5, 0.0], [np.inf, 1.0]]
    m, strict = FW.margin(rel.edited(rel=sp.LessThan(FW.Q[F.i, F.j], 1)), {"Pg": np.eye(2) * 3, "n": 2})
    assert not strict and m.tolist() == [[-2.0, 1.0], [1.0, -2.0]]
    with pytest.raises(TypeError, match="unsupported relational"):
        FW.margin(rel.edited(rel=sp.Eq(FW.Q[F.i, F.j], 1)), {"Pg": np.eye(2), "n": 2})


def test_shape_is_rendered_from_the_symbol():
    assert FW.SHAPE_X.markdown() == "$X \\in \\mathbb{R}^{n \\times d}$"
    assert FW.Shape("Y", sp.MatrixSymbol("Y", F.d, F.n)).markdown() == "$Y \\in \\mathbb{R}^{d \\times n}$"


# ------------------------------------------------------------------------------------------------
# the lemmas' formulas: L1's witness, L4 instantiated at fixed sizes, formula mutants of L1, L2, L4
# ------------------------------------------------------------------------------------------------
def test_l1_witness_formula_is_false_where_the_token_major_one_holds():
    rng = np.random.default_rng(4)
    values = {"A": rng.normal(size=(3, 3)), "T": rng.normal(size=(2, 2)), "X": rng.normal(size=(3, 2))}
    t = get("L1")
    good = t.conclusion("L1.token_major").params["token_major"]
    mixed = t.hypothesis("L1.shapes").witnesses[0].params["mixed"]
    lhs, rhs = F.evaluate(good, values)
    assert np.allclose(lhs, rhs, rtol=0, atol=1e-12)
    lhs, rhs = F.evaluate(mixed, values)
    assert np.abs(lhs - rhs).max() > 0.1


def _explicit(expr, A: sp.Matrix, T: sp.Matrix):
    """A formula over ``A``, ``T`` (matrix symbols of symbolic size) at the explicit matrices."""
    env = {F.n: A.rows, F.d: T.rows}
    e = expr.subs(env).subs({F.A_m.subs(env): A, F.T_m.subs(env): T})
    return e.replace(lambda x: isinstance(x, sp.Identity), lambda x: sp.eye(int(x.rows)))


def l4_residuals(theorem, A: sp.Matrix, T: sp.Matrix, probes=(0.5, 1.5, -2.0)) -> tuple[sp.Expr, float]:
    """L4's two formulas (the registry's expressions) at integer ``A``, ``T``: the resultant form
    exactly (``p_A``, ``p_T`` the characteristic polynomials), the product form at probe values of
    ``z`` with numpy's eigenvalues (relative)."""
    c = theorem.conclusion("L4.resultant")
    res, prod = c.params["resultant"], c.params["product"]
    charpoly = sp.det(_explicit(res.lhs, A, T).arg.doit().as_explicit())
    pa, pt = sp.Lambda(FW.zs, A.charpoly(FW.zs).as_expr()), sp.Lambda(FW.mus, T.charpoly(FW.mus).as_expr())
    rhs = res.rhs.subs({F.n: A.rows, F.d: T.rows}).subs({FW.p_A: pa, FW.p_T: pt}).doit()
    exact = sp.expand(charpoly - rhs)
    lam = np.linalg.eigvals(np.array(A.tolist(), dtype=float))
    mu = np.linalg.eigvals(np.array(T.tolist(), dtype=float))
    body = prod.rhs.subs({F.n: A.rows, F.d: T.rows}).doit()
    worst = 0.0
    for z in probes:
        want = complex(charpoly.subs(FW.zs, z))
        got = complex(
            sp.N(
                body.subs(FW.zs, z)
                .subs({FW.lam_A[k]: complex(v) for k, v in enumerate(lam)})
                .subs({FW.mu_T[k]: complex(v) for k, v in enumerate(mu)})
            )
        )
        worst = max(worst, abs(got - want) / max(1.0, abs(want)))
    return exact, worst


@pytest.mark.theorem("L4")
@pytest.mark.parametrize("n,d,seed", [(2, 2, 0), (3, 1, 1), (1, 3, 2), (2, 3, 3)])
def test_l4_formulas_at_fixed_sizes(n, d, seed):
    rng = np.random.default_rng(seed)
    A, T = (sp.Matrix(rng.integers(-3, 4, (k, k)).tolist()) for k in (n, d))
    exact, worst = l4_residuals(get("L4"), A, T)
    assert exact == 0 and worst < 1e-9, (exact, worst)


def _edit(tid, cid, key, **changes):
    from dataclasses import replace

    t = get(tid)
    if cid in t.hypothesis_ids:
        h = t.hypothesis(cid)
        bad = replace(h, params={**h.params, key: h.params[key].edited(**changes)})
        return replace(t, hypotheses=tuple(bad if x.id == cid else x for x in t.hypotheses))
    c = t.conclusion(cid)
    return t.with_conclusion(c.with_params(**{key: c.params[key].edited(**changes)}))


_S = FW.Sf(F.i, F.j, FW.xs)
LEMMA_MUTANTS = {
    "L1 token-major A (x) T -> T (x) A": lambda: _edit(
        "L1", "L1.token_major", "token_major", rhs=sp.KroneckerProduct(F.T_m, F.A_m) * F.Vec(F.X_m.T)
    ),
    "L1 feature-major vec(X) -> vec(X^T)": lambda: _edit(
        "L1", "L1.feature_major", "feature_major", rhs=sp.KroneckerProduct(F.T_m, F.A_m) * F.Vec(F.X_m.T)
    ),
    "L2 softmax -> sigmoid": lambda: _edit("L2", "L2.softmax", "softmax", rhs=sp.exp(_S) / (1 + sp.exp(_S))),
    "L2 rows sum to 1 -> 2": lambda: _edit("L2", "L2.rows", "rows", rhs=sp.Integer(2)),
    "L2 derivative of a row -> of a column": lambda: _edit(
        "L2", "L2.rows", "derivative", lhs=sp.Sum(sp.Derivative(F.A2_[F.j, F.i], FW.xs), (F.j, 0, F.n - 1))
    ),
    "L4 resultant mu^n -> mu^d": lambda: _edit(
        "L4", "L4.resultant", "resultant", rhs=FW.Res(FW.p_T(FW.mus), FW.mus**F.d * FW.p_A(FW.zs / FW.mus))
    ),
    "L4 product lambda_i mu_a -> lambda_i + mu_a": lambda: _edit(
        "L4",
        "L4.resultant",
        "product",
        rhs=sp.Product(FW.zs - FW.lam_A[F.i] - FW.mu_T[F.a], (F.i, 0, F.n - 1), (F.a, 0, F.d - 1)),
    ),
}


@pytest.mark.parametrize(
    "name", [pytest.param(nm, marks=pytest.mark.theorem(nm.split()[0]), id=nm) for nm in LEMMA_MUTANTS]
)
def test_lemma_formula_mutants_fail(name):
    """An edit of a lemma's formula is refuted: by the derivation for symbolic sizes (L1, L2), or by
    the formulas instantiated at fixed sizes (L4, whose proof is sized)."""
    mutant = LEMMA_MUTANTS[name]()
    if mutant.id == "L4":
        rng = np.random.default_rng(0)
        A, T = (sp.Matrix(rng.integers(-3, 4, (k, k)).tolist()) for k in (2, 3))
        exact, worst = l4_residuals(mutant, A, T)
        assert exact != 0 or worst > 1e-6, name
    else:
        assert get(mutant.id).derive_general().passed
        assert not mutant.derive_general().passed, name


def test_cancel_quotient_lowers_a_power_by_one():
    """The rule L2's quotient-rule term needs: ``Σ_j f_j · (Σ_k f_k)^{-2} = (Σ_k f_k)^{-1}``."""
    from theory import rewrite as R

    f = sp.IndexedBase("f")
    Z = sp.Sum(f[F.k], (F.k, 0, F.n - 1))
    lhs = sp.Sum(f[F.j] / Z**2, (F.j, 0, F.n - 1))
    assert R.prove(lhs, 1 / Z, [R.cancel_quotient()]) == 0
    assert R.prove(lhs, 1 / Z**2, [R.cancel_quotient()]) != 0  # one power, not two
    assert R.prove(lhs, 1 / Z, []) != 0  # the rule is what proves it


# ------------------------------------------------------------------------------------------------
# T2's notes and convention witness, L3's positivity and source quote, L1's cross reference
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("H,H_kv", [(8, 2), (6, 3), (4, 4), (12, 4), (5, 1)])
def test_gqa_formula_is_the_kv_head_map(H, H_kv):
    """T2's note: query head ``h`` reads kv head ``⌊h / (H / H_kv)⌋``, judged against the library's map."""
    from numerics.attention import kv_head_map

    gqa = get("T2").notes[0].params["gqa"]
    got = F.tabulate(gqa.rhs, gqa.free, {"H": H, "H_kv": H_kv}).astype(int).tolist()
    assert got == kv_head_map(H, H_kv)
    if H_kv not in (1, H):  # edits: the kv heads taken round-robin, or the group size inverted
        for bad in (sp.Mod(F.h, FW.H_kv), sp.floor(F.h / FW.H_kv)):
            assert F.tabulate(bad, gqa.free, {"H": H, "H_kv": H_kv}).astype(int).tolist() != got


def test_head_rank_note():
    """T2's note: ``rank(W_O W_V) ≤ d_h`` and, for a narrow head ``d_h < d``, ``T_h`` is not orthogonal."""
    note = get("T2").notes[0]
    rank, narrow = note.params["rank"], note.params["narrow"]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        d, d_h = 4, 2
        values = {"W_O": rng.normal(size=(d, d_h)), "W_V": rng.normal(size=(d_h, d)), "d_h": d_h, "d": d}
        assert FW.margin(rank, values)[0] >= 0 and FW.margin(narrow, values)[0] > 0
        T = values["W_O"] @ values["W_V"]
        assert np.abs(T.T @ T - np.eye(d)).max() > 0.1  # not orthogonal
        assert FW.margin(rank.edited(rel=sp.LessThan(rank.rel.lhs, FW.d_h - 1)), values)[0] < 0
        assert FW.margin(narrow.edited(rel=sp.StrictLessThan(F.d, FW.d_h)), values)[0] < 0


def test_off_support_note_is_what_t2_gated_walk_evaluates():
    """T2's note: off support (every head 0 at ``(i, j)``) the gates are 0/0; ``t2_gated_walk``
    finds those entries with the note's formula: an edit (only head 1 must vanish; never) is rejected."""
    off = get("T2").notes[1].params["off_support"]
    Ts = np.array([[[1.0, 2.0], [0.0, 1.0]], [[0.0, -1.0], [1.0, 0.0]]])
    causal = {"As": np.array([[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.25, 0.75]]]), "Ts": Ts}
    head0 = {"As": np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.5, 0.5], [0.25, 0.75]]]), "Ts": Ts}
    for inst in (causal, head0):
        assert oracles.t2_gated_walk(inst, {"off_support": off}).holds
    assert not oracles.t2_gated_walk(causal, {"off_support": off.edited(rhs=sp.S.NegativeOne)}).holds
    only0 = off.edited(lhs=F.Ah_[0, F.i, F.j])
    assert oracles.t2_gated_walk(head0, {"off_support": only0}).fails


def test_t2_convention_witness_names_the_block_without_transport():
    """T2.convention.w1: with ``P = A^1`` the block ``B_12`` is nonzero where ``P_12`` vanishes (the
    witness's formula, evaluated on its instance); with the head mean ``P`` no such block exists."""
    w = get("T2").hypothesis("T2.convention").witnesses[0]
    inst = oracles.build(w.instance)
    rel = w.params["no_transport"]

    def where(rel, P):
        values = {"A": inst["As"], "T": inst["Ts"], "P": P, "n": 2, "d": 2, "H": 2}
        return F.tabulate(rel.rel, rel.free, F.environment(rel, values)).astype(bool)

    assert where(rel, inst["P"])[0, 1] and not where(rel, inst["As"].mean(0)).any()
    ne, eq = rel.rel.args[1], rel.rel.args[0]  # (sympy orders And's arguments: P = 0 first)
    assert isinstance(ne, sp.Ne) and isinstance(eq, sp.Eq)
    for bad in (sp.And(sp.Eq(*ne.args), eq), sp.And(ne, sp.Ne(*eq.args))):
        assert not where(rel.edited(rel=bad), inst["P"])[0, 1]


def balanced_substochastic(seed: int, n: int = 3, d: int = 2):
    """A detailed-balanced walk (``π_i P_ij`` symmetric) with arbitrary row sums and orthogonal,
    transpose-compatible transports, drawn literally."""
    rng = np.random.default_rng(seed)
    S = rng.random((n, n))
    S = S + S.T
    pi = rng.random(n) + 0.5
    P = S / pi[:, None]
    O = np.zeros((n, n, d, d))
    for i in range(n):
        O[i, i] = np.eye(d)
        for j in range(i + 1, n):
            Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
            O[i, j], O[j, i] = Q, Q.T
    return P, O, pi, rng.normal(size=(n, d))


_ROW_SUM = sp.Sum(F.P_[F.i, F.j], (F.j, 0, F.n - 1))  # r_i: the edit 1 - r_i -> 1 + r_i


@pytest.mark.parametrize("seed", [0, 1])
def test_l3_source_correction_is_the_lemma_gap(seed):
    """L3's source quote: the correction term is ``<x, (I - W)x>_π − ½ Σ π_i P_ij |x_i − O_ij x_j|²``
    (literal numpy, dense W) on a balanced walk whose rows do not sum to 1; edits are rejected."""
    P, O, pi, x = balanced_substochastic(seed)
    n, d = x.shape
    W, xs = literal_walk(P, O), x.reshape(-1)
    form = float(xs @ (np.repeat(pi, d) * (xs - W @ xs)))
    half = 0.5 * sum(pi[i] * P[i, j] * float(np.sum((x[i] - O[i, j] @ x[j]) ** 2)) for i in range(n) for j in range(n))
    correction = get("L3").source.claim.params["correction"].expr
    values = {"P": P, "pi": pi, "x": x, "n": n, "d": d}
    assert float(F.tabulate(correction, (), values)) == pytest.approx(form - half, rel=1e-12, abs=1e-12)
    for bad in (correction.xreplace({F.pi_[F.i]: 1}), correction.xreplace({_ROW_SUM: -_ROW_SUM})):
        assert float(F.tabulate(bad, (), values)) != pytest.approx(form - half, rel=1e-6)


def test_l3_positive_weights_are_what_reversible_evaluates():
    """L3.balance's ``π_i > 0`` is the relation ``reversible`` (T3.b) evaluates: a zero weight fails it,
    and its edits (``≥``, ``> 1``) change the verdict."""
    positive = get("L3").hypothesis("L3.balance").params["positive"]
    assert positive is FW.PI_POSITIVE
    lazy = {"P": np.eye(2), "O": np.tile(np.eye(2), (2, 2, 1, 1)), "pi": np.array([0.0, 1.0])}
    half = {**lazy, "pi": np.array([0.5, 0.5])}
    assert not oracles.reversible(lazy, {}).holds and oracles.reversible(half, {}).holds
    assert oracles.reversible(lazy, {"positive": positive.edited(rel=sp.GreaterThan(F.pi_[F.i], 0))}).holds
    assert not oracles.reversible(half, {"positive": positive.edited(rel=sp.StrictGreaterThan(F.pi_[F.i], 1))}).holds


def test_cross_references_are_the_cited_operators():
    """L1, T1.spectrum and the conventions cite ``A ⊗ T`` as the operator of L1's and T1's identities
    (one object), and ``T ⊗ A`` as L1's feature-major one."""
    ops = {F.L1_TOKEN_MAJOR.rhs.args[0], F.SHA_STACKED.rhs.args[0]}
    assert ops == {FW.KRON_AT.expr} and FW.KRON_TA.expr == F.L1_FEATURE_MAJOR.rhs.args[0]
    assert get("L1").conclusion("L1.token_major").params["kron"] is FW.KRON_AT
    assert get("T1").conclusion("T1.spectrum").params["kron"] is FW.KRON_AT
    assert FW.KRON_AT.markdown() == "$A \\otimes T$" and FW.KRON_TA.markdown() == "$T \\otimes A$"


def test_test_evaluated_walk_formulas_are_registered_with_existing_tests():
    """Every formula of the walk side's notes, source quotes and witnesses that a test evaluates is
    listed in ``registry.EVALUATED_BY_TESTS`` with a test of this module that exists."""
    from theory import registry

    cited = {
        "L3.source": get("L3").source.claim.params,
        "T2.convention.w1": get("T2").hypothesis("T2.convention").witnesses[0].params,
        "T2.note0": get("T2").notes[0].params,
    }
    for key, params in cited.items():
        listed = registry.EVALUATED_BY_TESTS[key]
        assert set(listed) == set(params), key
        for test, _ in listed.values():
            path, name = test.split("::")
            assert path == "tests/theory/test_formulas_walks.py" and callable(globals()[name]), test
