"""The derivations for symbolic sizes (``theory/derivations/general.py``) and the rewrite rules they
use (``theory/rewrite.py``): each derivation reaches its exact zeros for symbolic ``n``, ``d``, ``H``
on the registry's own formulas; each rule is an equality checked on numbers; a wrong rule, a dropped
hypothesis, an edited formula or heads that share one matrix make a step fail; and the formulas,
instantiated at fixed sizes, are what the fixed-size derivations compute (the second route agrees).
"""

from __future__ import annotations

import cmath
import math
import time

import numpy as np
import pytest
import sympy as sp

from tests.theory.test_gate import FORMULA_MUTANTS  # the gate's formula mutants
from theory import formulas as F
from theory import rewrite as R
from theory.derivations import general as G
from theory.derivations import spectral as dsp
from theory.derivations import walks as dw
from theory.registry import THEOREMS, get
from theory.report import record
from theory.symbolic import dirichlet_form, kron, pi_inner, stack_token_major, symbol_matrix, walk_matrix

GENERAL_IDS = [t.id for t in THEOREMS if t.general is not None]
USERS = {t.id: [u.id for u in THEOREMS if t.id in u.lemmas] for t in THEOREMS}

#: seconds each general derivation took in this session (printed by the timing test)
TIMES: dict[str, float] = {}


def _marks(tid):
    return [pytest.mark.theorem(x) for x in (tid, *USERS.get(tid, []))]


@pytest.mark.parametrize("tid", [pytest.param(t, marks=_marks(t), id=t) for t in GENERAL_IDS])
def test_general_derivation_reaches_exact_zero(tid):
    entry = get(tid)
    t0 = time.perf_counter()
    D = entry.derive_general()
    TIMES[tid] = time.perf_counter() - t0
    for x in (tid, *USERS.get(tid, [])):
        record(x, symbolic=D.passed)
    assert D.passed, D.summary()
    assert D.sizes and all(isinstance(v, sp.Symbol) for v in D.sizes.values()), D.sizes  # symbolic sizes
    got = [(c.kind, c.name, c.detail) if c.detail else (c.kind, c.name) for c in D.checks]
    assert got == list(entry.general_steps)
    for c in D.checks:
        assert c.is_zero is c.expect_zero, c.describe()
    # every conclusion's general links name passing steps of this derivation
    for c in entry.conclusions:
        for g in c.general:
            assert any(s.name.startswith(g) and s.passed for s in D.checks), (c.id, g)
    assert TIMES[tid] < 30, TIMES  # a structural bound, not a benchmark: minutes would mean a blow-up


def test_every_general_scope_is_backed_by_a_general_derivation():
    """A conclusion whose scope claims every size names the steps that prove it, and a conclusion
    that names such steps has a derivation for symbolic sizes; 'checked numerically only' names none."""
    for t in THEOREMS:
        for c in t.conclusions:
            assert c.scope, c.id
            if "all n" in c.scope or "every ring size" in c.scope:
                assert c.general and t.general is not None, c.id
            if c.general:
                assert t.general is not None, c.id
            if c.scope.startswith("checked numerically only"):
                assert not c.general, c.id


# ------------------------------------------------------------------------------------------------
# the rules, on numbers
# ------------------------------------------------------------------------------------------------
RNG = np.random.default_rng(7)
N, D_ = 4, 3


def _value(expr, env):
    return F.tabulate(expr, (), {**env, "n": N, "d": D_, "H": 3})


def _reversible():
    K = RNG.random((N, N)) + 0.1
    K = K + K.T
    return K / K.sum(1, keepdims=True), K.sum(1) / K.sum()


def _orthogonal_transports():
    O = np.zeros((N, N, D_, D_))
    for u in range(N):
        w = RNG.standard_normal(D_)
        O[u, u] = np.eye(D_) - 2 * np.outer(w, w) / (w @ w)  # O_uu = O_uu^T: a reflection
        for v in range(u + 1, N):
            Q = np.linalg.qr(RNG.standard_normal((D_, D_)))[0]
            O[u, v], O[v, u] = Q, Q.T
    return O


def _env():
    P, pi = _reversible()
    M = RNG.standard_normal((D_, D_))
    return {
        "P": P,
        "pi": pi,
        "O": _orthogonal_transports(),
        "x": RNG.standard_normal((N, D_)),
        "y": RNG.standard_normal((N, D_)),
        "M": M + M.T,
        "A": RNG.random((3, N, N)) + 0.1,
        "T": RNG.standard_normal((3, D_, D_)),
    }


def _check_rule(rule, term_expr, env):
    ts = R.terms(term_expr)
    assert len(ts) == 1, ts
    (t,) = ts
    before = _value(t.expr(), env)
    outs = [rule.apply(t)] if rule.kind == "reduction" else rule.apply(t)
    outs = [o for o in outs if o is not None]
    assert outs, f"{rule.name} did not apply to {term_expr}"
    for o in outs:
        np.testing.assert_allclose(_value(o.expr(), env), before, rtol=1e-12, atol=1e-12)
    return outs


i, j, k, a, b, c = F.i, F.j, F.k, F.a, F.b, F.c


def _S(body, *lims):
    return sp.Sum(body, *[(v, 0, F.RANGE[v] - 1) for v in lims])


def test_rules_are_equalities_under_their_hypotheses():
    env = _env()
    P, O, pi, x, y = F.P_, F.O_, F.pi_, F.x_, F.y_
    _check_rule(R.row_sum(P), _S(pi[i] * P[i, j] * x[i, a], i, j, a), env)
    out = _check_rule(R.orthogonality(O), _S(O[i, j, a, b] * O[i, j, a, c] * x[j, b] * y[j, c], i, j, a, b, c), env)
    assert len(out[0].sums) == 3  # Σ_a O_ab O_ac = δ_bc: the sums over a and c are gone
    _check_rule(R.detailed_balance(pi, P), _S(pi[i] * P[i, j] * x[j, a] ** 2, i, j, a), env)
    _check_rule(R.transpose_compatible(O), _S(pi[i] * O[i, j, a, b] * x[i, a] * y[j, b], i, j, a, b), env)
    _check_rule(R.symmetric(F.M_), _S(F.M_[a, b] * x[i, a] * y[i, b], i, a, b), env)
    _check_rule(R.constant_sum(), _S(x[0, 0], i), env)
    Rq = np.stack([np.linalg.qr(RNG.standard_normal((D_, D_)))[0] for _ in range(N)])  # every R_u orthogonal
    Rb = sp.IndexedBase("R")
    out = _check_rule(
        R.row_orthogonality(Rb), _S(Rb[i, a, c] * Rb[i, b, c] * x[i, a] * y[i, b], i, a, b, c), {**env, "R": Rq}
    )
    assert len(out[0].sums) == 2  # Σ_c R_ac R_bc = δ_ab: the sums over c and b are gone
    Ms = env["M"]
    lam_, U = np.linalg.eigh(Ms)  # a real symmetric d×d matrix: real eigenpairs
    ev = {**env, "Ms": Ms, "u": U[:, 1], "lambda": lam_[1]}
    _check_rule(
        R.eigen(sp.IndexedBase("Ms"), F.u_, F.lam), _S(sp.IndexedBase("Ms")[a, b] * F.u_[b] * x[0, a], a, b), ev
    )
    A, T = F.Ah_, F.Th_
    q = _S(A[F.l, 0, 1], F.l)
    _check_rule(R.cancel_quotient(), _S(A[F.h, 0, 1] * A[F.l, 0, 1] * T[F.h, 0, 1] / q, F.h, F.l), env)
    # the index-swap rule: a renaming of bound indices is the same term, a different pairing is not
    t1, t2 = R.terms(_S(P[i, j] * x[i, a] * y[j, a], i, j, a)), R.terms(_S(P[j, i] * x[j, a] * y[i, a], i, j, a))
    assert R.canonical(t1[0]) == R.canonical(t2[0])
    t3 = R.terms(_S(P[i, j] * x[j, a] * y[i, a], i, j, a))
    assert R.canonical(t1[0]) != R.canonical(t3[0])
    np.testing.assert_allclose(_value(t1[0].expr(), env), _value(t2[0].expr(), env), rtol=1e-12)


def test_cyclic_shift_rule_on_roots_of_unity():
    av = RNG.standard_normal(N)
    rule = R.cyclic_shift(F.a_, F.zeta, F.n)
    (t,) = R.terms(sp.Sum(F.a_[0, sp.Mod(j - i, F.n)] * F.zeta**j, (j, 0, F.n - 1)))
    new = rule.apply(t)
    assert new is not None
    for kk in range(N):
        z = cmath.exp(2j * math.pi * kk / N)
        for ii in range(N):
            env = {"a": av[None, :], "zeta": z, "n": N, "i": ii}
            lhs = sum(av[(jj - ii) % N] * z**jj for jj in range(N))
            got = complex(F.tabulate(new.expr(), (), env))
            assert abs(got - lhs) < 1e-12
            assert abs(complex(F.tabulate(t.expr(), (), env)) - lhs) < 1e-12


def test_index_split_and_sum_split_rules_on_integers():
    n, d = F.n, F.d
    e = R.split_index(sp.floor((i * d + a) / d) * 100 + sp.Mod(i * d + a, d), [d, n])
    assert e == 100 * i + a
    for nn, dd in ((3, 2), (2, 5)):
        for ii in range(nn):
            for aa in range(dd):
                p = ii * dd + aa
                assert (p // dd, p % dd) == (ii, aa)
    assert R.split_index(sp.floor((i * d + a) / n), [d, n]) == sp.floor((i * d + a) / n)  # not a block of n
    q = sp.Symbol("q", integer=True, nonnegative=True)
    s = R.split_sum(sp.Sum(F.x_[q], (q, 0, n * d - 1)), n, d, (j, b))
    assert s == sp.Sum(F.x_[j * d + b], (j, 0, n - 1), (b, 0, d - 1))


# ------------------------------------------------------------------------------------------------
# what must fail
# ------------------------------------------------------------------------------------------------
def _failing(D) -> list[str]:
    return [c.name for c in D.failures()]


@pytest.mark.theorem("T3")
@pytest.mark.parametrize("dropped", ["stochastic", "balance", "orthogonal"])
def test_a_dropped_hypothesis_breaks_the_dirichlet_derivation(dropped):
    di = F.DIRICHLET
    assert R.prove(di.lhs, di.rhs, G.t3_rules(transpose=False)) == 0
    assert R.prove(di.lhs, di.rhs, G.t3_rules(transpose=False, **{dropped: False})) != 0


@pytest.mark.theorem("T3")
def test_self_adjointness_needs_transpose_compatibility():
    sa = F.SELF_ADJOINT
    assert R.prove(sa.lhs, sa.rhs, G.t3_rules(stochastic=False, orthogonal=False, transpose=False)) != 0
    assert R.prove(sa.lhs, sa.rhs, G.t3_rules(stochastic=False, orthogonal=False, balance=False)) != 0


def _wrong_balance(pi, P):
    def apply(t):
        out = []
        for p, f in enumerate(t.factors):
            if isinstance(f, sp.Indexed) and f.base == P:
                u, v = f.indices
                new = list(t.factors)
                new[p] = P[v, u]  # π_u P_uv -> π_u P_vu: not an equality
                out.append(R.Term(t.coeff, t.sums, tuple(new)))
        return out

    return R.Rule("wrong", "", "symmetry", apply)


@pytest.mark.theorem("T3")
@pytest.mark.theorem("L3")
def test_a_wrong_rule_makes_the_derivation_fail(monkeypatch):
    monkeypatch.setattr(R, "detailed_balance", _wrong_balance)
    assert set(_failing(get("T3").derive_general())) == {
        "general: <x, Delta y>_pi = <Delta x, y>_pi from (b), (c2), all n, d",
        "general: Dirichlet identity from (a), (b), (c1), all n, d",
        "general: <x,(2I-Delta)x>_pi = 1/2 sum pi_i P_ij |x_i + O_ij x_j|^2 from (a), (b), (c1), all n, d",
        "general: scaled isometries O = sQ: Dirichlet form + (1-s^2)/2 |x|_pi^2 from (a), (b), (c1) on Q, all n, d",
    }
    assert _failing(get("L3").derive_general())


@pytest.mark.theorem("T6")
def test_a_wrong_cyclic_shift_fails_t6(monkeypatch):
    good = R.cyclic_shift

    def wrong(base, zeta, size):
        rule = good(base, zeta, size)

        def apply(t):
            new = rule.apply(t)
            if new is None:
                return None
            return R.Term(
                new.coeff,
                new.sums,
                tuple(f**-1 if f.is_Pow and f.base == zeta and f.exp.has(F.i) else f for f in new.factors),
            )

        return R.Rule("wrong shift", "", "reduction", apply)

    monkeypatch.setattr(R, "cyclic_shift", wrong)
    assert _failing(get("T6").derive_general()) == [
        "general: J(phi_k (x) v) = phi_k (x) (M(k) - I) v for every ring size n (zeta^n = 1)"
    ]


@pytest.mark.theorem("L1")
@pytest.mark.theorem("T1")
def test_a_wrong_index_split_fails_the_stacking_lemma(monkeypatch):
    good = R.split_index
    monkeypatch.setattr(
        R, "split_index", lambda e, blocks: good(e, blocks).xreplace({F.a: F.b}) if e.has(F.a) else good(e, blocks)
    )
    assert _failing(get("L1").derive_general())


@pytest.mark.parametrize(
    "name", [pytest.param(nm, marks=pytest.mark.theorem(nm.split()[0]), id=nm) for nm in FORMULA_MUTANTS]
)
def test_formula_mutants_fail_the_derivation_for_symbolic_sizes(name):
    """The general derivation reads the registry entry it is given: a statement mutant of the
    gate (tests/theory/test_gate.py) is refuted symbolically, not only on drawn instances."""
    from tests.theory.test_gate import MUTANTS

    original, mutant = MUTANTS[name]()
    assert original.derive_general().passed
    D = mutant.derive_general()
    assert not D.passed, name
    record(original.id, counterexample=f"formula mutant refuted for symbolic sizes: {name} ({_failing(D)[0]})")


@pytest.mark.theorem("T2")
def test_shared_heads_fail_t2(monkeypatch):
    # general route: every head built from one attention (or one transport) matrix
    monkeypatch.setattr(G, "HEAD_ATTENTION", lambda hd: F.Ah_[0, F.i, F.j])
    assert "general: heads' attentions are distinct symbols (A^h for a symbolic head index h)" in _failing(
        get("T2").derive_general()
    )
    monkeypatch.undo()
    monkeypatch.setattr(G, "HEAD_TRANSPORT", lambda hd: F.Th_[0, F.a, F.b])
    assert "general: heads' transports are distinct symbols (T_h for a symbolic head index h)" in _failing(
        get("T2").derive_general()
    )
    monkeypatch.undo()
    # fixed-size route: every head's attention built from the same symbols
    good = dw.softmax_like
    monkeypatch.setattr(dw, "softmax_like", lambda name, n: good("e0" if name.startswith("e") else name, n))
    assert "heads are distinct: A^1 - A^2 != 0" in _failing(dw.derive_t2())
    monkeypatch.undo()
    sm = dw.symbol_matrix
    monkeypatch.setattr(
        dw, "symbol_matrix", lambda name, *s, **kw: sm("t0" if name in ("t1", "t2") else name, *s, **kw)
    )
    assert "heads are distinct: T_1 - T_2 != 0" in _failing(dw.derive_t2())


@pytest.mark.theorem("T6")
def test_shared_heads_fail_t6(monkeypatch):
    monkeypatch.setattr(G, "HEAD_TRANSPORT", lambda hd: F.Th_[0, F.a, F.b])
    assert "general: heads' transports are distinct symbols (T_h for a symbolic head index h)" in _failing(
        get("T6").derive_general()
    )
    monkeypatch.undo()
    monkeypatch.setattr(G, "HEAD_KERNEL", lambda hd: F.A0_[0, 0, F.m])
    assert "general: heads' scores (kernels a_h) are distinct symbols (symbolic head index h)" in _failing(
        get("T6").derive_general()
    )
    monkeypatch.undo()
    sm = dsp.symbol_matrix
    monkeypatch.setattr(dsp, "symbol_matrix", lambda name, *s, **kw: sm("t0" if name == "t1" else name, *s, **kw))
    assert "Fourier: heads are distinct: T_0 - T_1 != 0 (transports)" in _failing(dsp.t6_fourier(4, 2, 2))
    monkeypatch.undo()
    monkeypatch.setattr(dsp, "symbol_matrix", lambda name, *s, **kw: sm("m0" if name == "m1" else name, *s, **kw))
    assert "heads are distinct: M_0 - M_1 != 0 (score matrices)" in _failing(dsp.derive_t6(ring=3))


# ------------------------------------------------------------------------------------------------
# the second route: the formulas at fixed sizes are what the fixed-size derivations compute
# ------------------------------------------------------------------------------------------------
def _at(expr, sizes: dict, values: dict):
    """``expr`` at fixed sizes, every ``Indexed`` replaced by the fixed route's symbol."""
    e = expr.xreplace({getattr(F, k): v for k, v in sizes.items()}).doit()
    return e.replace(lambda x: isinstance(x, sp.Indexed), lambda x: values[x.base.label.name](*x.indices))


@pytest.mark.theorem("T3")
@pytest.mark.theorem("L3")
def test_t3_formulas_at_fixed_sizes_are_the_fixed_route(monkeypatch):
    n, d = 3, 2
    pi = [sp.Symbol(f"pi_{u}", positive=True) for u in range(n)]
    P = symbol_matrix("p", n, n)
    O, _ = dw.symbolic_metric_transports(n, d)
    xv = sp.Matrix(n * d, 1, lambda p, _: sp.Symbol(f"x_{p}"))
    yv = sp.Matrix(n * d, 1, lambda p, _: sp.Symbol(f"y_{p}"))
    vals = {
        "pi": lambda u: pi[u],
        "P": lambda u, v: P[u, v],
        "O": lambda u, v, r, s: O[u][v][r, s],
        "x": lambda u, r: xv[u * d + r],
        "y": lambda u, r: yv[u * d + r],
    }
    W = walk_matrix(P, O)
    Delta = sp.eye(n * d) - W
    di = get("T3").conclusion("T3.dirichlet").params["dirichlet"]
    assert sp.expand(_at(di.lhs, {"n": n, "d": d}, vals) - pi_inner(xv, Delta * xv, pi, d)) == 0
    assert sp.expand(_at(di.rhs, {"n": n, "d": d}, vals) - dirichlet_form(P, O, pi, xv, d)) == 0
    sa = get("T3").conclusion("T3.self_adjoint").params["self_adjoint"]
    assert sp.expand(_at(sa.lhs, {"n": n, "d": d}, vals) - pi_inner(xv, Delta * yv, pi, d)) == 0
    up = get("T3").conclusion("T3.spectrum").params["upper_form"]
    assert sp.expand(_at(up.rhs, {"n": n, "d": d}, vals) - dirichlet_form(P, O, pi, xv, d, sign=+1)) == 0


@pytest.mark.theorem("T1")
@pytest.mark.theorem("L1")
@pytest.mark.parametrize("n,d", [(3, 2), (2, 3)])
def test_t1_formula_at_fixed_sizes_is_the_fixed_route(n, d):
    A, T, X = symbol_matrix("a", n, n), symbol_matrix("t", d, d), symbol_matrix("x", n, d)
    st = get("T1").conclusion("T1.walk").params["stacked"]
    sub = {F.n: n, F.d: d}
    Am, Tm, Xm, Ym = (s.xreplace(sub) for s in (F.A_m, F.T_m, F.X_m, F.Y_m))
    vals = {Am: A, Tm: T, Xm: X, Ym: A * X * T.T}
    lhs = st.lhs.xreplace(sub).xreplace(vals).as_explicit()
    rhs = st.rhs.xreplace(sub).xreplace(vals).as_explicit()
    assert sp.expand(lhs - stack_token_major(A * X * T.T)) == sp.zeros(n * d, 1)
    assert sp.expand(rhs - kron(A, T) * stack_token_major(X)) == sp.zeros(n * d, 1)


@pytest.mark.theorem("T2")
def test_t2_formulas_at_fixed_sizes_are_the_fixed_route():
    n, d, H = 2, 2, 2
    As = [dw.softmax_like(f"e{h}", n) for h in range(H)]
    Ts = [symbol_matrix(f"t{h}", d, d) for h in range(H)]
    vals = {"A": lambda h, u, v: As[h][u, v], "T": lambda h, r, s: Ts[h][r, s]}
    blocks = get("T2").conclusion("T2.walk").params["blocks"]
    sizes = {"n": n, "d": d, "H": H}
    B = dw.head_blocks(As, Ts)
    gates = dw.gate_matrices(As)
    for u in range(n):
        for v in range(n):
            for r in range(d):
                for s in range(d):
                    at = {F.i: u, F.j: v, F.a: r, F.b: s}
                    rhs = _at(G.instantiate(blocks.rhs, blocks.where).xreplace(at), sizes, vals)
                    assert sp.cancel(rhs - B[u * d + r, v * d + s]) == 0
                    lhs = _at(G.instantiate(blocks.lhs, blocks.where).xreplace(at), sizes, vals)
                    P = sum(A[u, v] for A in As) / H
                    O = H * sum(gates[u][v][h] * Ts[h][r, s] for h in range(H))
                    assert sp.cancel(lhs - P * O) == 0


@pytest.mark.theorem("T6")
@pytest.mark.parametrize("ring", [3, 5])
def test_t6_formula_at_fixed_sizes_is_the_fixed_route(ring):
    """The general Fourier identity at a fixed ring size, with ``zeta`` a primitive root of unity,
    holds exactly — the fixed-size route's statement, reduced modulo ``zeta^ring = 1``."""
    d, H = 2, 2
    f = get("T6").conclusion("T6.fourier").params["fourier"]
    av = [[sp.Symbol(f"a{h}_{m}") for m in range(ring)] for h in range(H)]
    Ts = [symbol_matrix(f"t{h}", d, d) for h in range(H)]
    v = [sp.Symbol(f"v_{r}") for r in range(d)]
    vals = {
        "A0": lambda h, u, w: av[h][(w - u) % ring],  # circulant heads (H3)
        "T": lambda h, r, s: Ts[h][r, s],
        "v": lambda r: v[r],
    }
    sizes = {"n": ring, "d": d, "H": H}
    for u in range(ring):
        for r in range(d):
            at = {F.i: u, F.c: r}
            res = _at(G.instantiate(f.lhs - f.rhs, f.where).xreplace(at), sizes, vals)
            assert dsp.reduce_root_of_unity(sp.Matrix([sp.expand(res)]), F.zeta, ring) == sp.zeros(1, 1)


def test_general_derivation_times(capsys):
    """Each general derivation's wall time (seconds), printed for the record."""
    out = {}
    for tid in GENERAL_IDS:
        t0 = time.perf_counter()
        assert get(tid).derive_general().passed
        out[tid] = round(time.perf_counter() - t0, 3)
    with capsys.disabled():
        print("\ngeneral derivation times (s):", out)


@pytest.mark.parametrize(
    "tid,hid",
    [
        pytest.param(t, h, marks=pytest.mark.theorem(t), id=f"{t} without {h}")
        for t, h in [
            ("T3", "T3.a"),
            ("T3", "T3.b"),
            ("T3", "T3.c1"),
            ("T3", "T3.c2"),
            ("L3", "L3.balance"),
            ("L3", "L3.metric"),
            ("T4", "T4.softmax"),
            ("T2", "T2.heads"),
            ("T6", "T6.H3"),
        ]
    ],
)
def test_a_dropped_hypothesis_fails_the_derivation_for_symbolic_sizes(tid, hid):
    """The registry's hypotheses are the derivation's rules: the statement without one (a statement
    mutant, as in the gate) is not proved."""
    D = get(tid).without(hid).derive_general()
    assert not D.passed, (tid, hid)


def _t3_instance():
    K = np.array([[1.0, 2.0, 0.5], [2.0, 1.0, 1.5], [0.5, 1.5, 2.0]])
    P = K / K.sum(1, keepdims=True)

    def rot(t):
        return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])

    O = np.zeros((3, 3, 2, 2))
    for u in range(3):
        O[u, u] = np.diag([1.0, -1.0])
        for v in range(u + 1, 3):
            O[u, v], O[v, u] = rot(0.3 + u + 2 * v), rot(0.3 + u + 2 * v).T
    return {"kind": "walk", "P": P, "O": O, "pi": K.sum(1) / K.sum()}


def _ring_instance():
    a = np.array([0.1, 0.2, 0.3, 0.4])
    return {
        "kind": "ring",
        "A0": a[(np.arange(4)[None, :] - np.arange(4)[:, None]) % 4][None],
        "T": np.array([[[2.0]]]),
    }


def _t2_instance():
    As = np.array([[[0.5, 0.5], [0.25, 0.75]], [[0.9, 0.1], [0.3, 0.7]]])
    return {"kind": "mha", "As": As, "Ts": np.array([np.eye(2), [[0.0, -1.0], [1.0, 0.0]]])}


@pytest.mark.parametrize(
    "hid,key,edit",
    [
        pytest.param("T3.a", "stochastic", lambda f: f.edited(rhs=sp.Integer(2)), marks=pytest.mark.theorem("T3")),
        pytest.param(
            "T3.b", "balance", lambda f: f.edited(rhs=F.pi_[F.j] * F.P_[F.i, F.j]), marks=pytest.mark.theorem("T3")
        ),
        pytest.param("T3.c1", "orthogonal", lambda f: f.edited(rhs=2 * f.rhs), marks=pytest.mark.theorem("T3")),
        pytest.param(
            "T3.c2", "transpose", lambda f: f.edited(lhs=F.O_[F.j, F.i, F.a, F.b]), marks=pytest.mark.theorem("T3")
        ),
        pytest.param(
            "T6.H3",
            "circulant",
            lambda f: f.edited(rhs=F.A0_[F.h, 0, sp.Mod(F.i - F.j, F.n)]),
            marks=pytest.mark.theorem("T6"),
        ),
        pytest.param(
            "T2.heads",
            "heads",
            lambda f: f.edited(lhs=sp.Sum(F.Ah_[F.h, F.j, F.i], (F.j, 0, F.n - 1))),
            marks=pytest.mark.theorem("T2"),
        ),
    ],
    ids=[
        "(a) rows sum to 2",
        "(b) pi_j P_ij",
        "(c1) 2 delta",
        "(c2) O_ji = O_ij",
        "T6 (H3) (j - i) mod n -> (i - j) mod n",
        "T2 heads: columns sum to 1",
    ],
)
def test_hypothesis_formula_mutants_fail(hid, key, edit):
    """A hypothesis is a formula too: its edit is rejected by its predicate on an instance of the
    true hypothesis (so the property tests' sampler is caught) and the derivation for symbolic
    sizes, which compiles its rules from these formulas, is no longer proved."""
    from dataclasses import replace

    from theory import oracles

    t = get(hid.split(".")[0])
    h = t.hypothesis(hid)
    bad = replace(h, params={**h.params, key: edit(h.params[key])})
    mutant = replace(t, hypotheses=tuple(bad if x.id == hid else x for x in t.hypotheses))
    assert t.derive_general().passed and not mutant.derive_general().passed
    inst = {"T3": _t3_instance, "T6": _ring_instance}.get(t.id, _t2_instance)()
    assert oracles.judge(h, inst).holds and not oracles.judge(bad, inst).holds
