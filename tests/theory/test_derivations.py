"""Symbolic derivations of every registered theorem/lemma reach exact zero (SymPy, no floats),
necessity witnesses stay nonzero, and the derivations catch deliberately broken mathematics; the
derivations' building blocks, each against its literal definition in independent arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from theory import derivations as dv
from theory.cases import T2_COUNTEREXAMPLE, T3_INVERSE_TRANSPORTS
from theory.derivations import spectral as dsp
from theory.derivations import spectral as dv_spectral
from theory.derivations import walks as dv_walks
from theory.derivations import walks as dw
from theory.registry import THEOREMS, get
from theory.report import record
from theory.symbolic import Check, Derivation

#: lemma id -> the theorems whose derivation relies on it (their table rows include the lemma)
USERS = {t.id: [u.id for u in THEOREMS if t.id in u.lemmas] for t in THEOREMS}


def _ids_for(theorem_id: str) -> list[str]:
    return [theorem_id, *USERS.get(theorem_id, [])]


def _is_necessity(c: Check) -> bool:
    return (not c.expect_zero) or c.name.startswith("drop")


def _run_and_record(theorem_id: str, **sizes) -> Derivation:
    try:
        D = get(theorem_id).derive(**sizes)
    except Exception:
        for tid in _ids_for(theorem_id):
            record(tid, symbolic=False)
        raise
    for tid in _ids_for(theorem_id):
        record(tid, symbolic=D.passed)
    for c in D.checks:
        if _is_necessity(c) and c.passed:
            record(theorem_id, counterexample=c.name)
    return D


@pytest.mark.parametrize(
    "theorem_id",
    [pytest.param(t.id, marks=[pytest.mark.theorem(i) for i in _ids_for(t.id)], id=t.id) for t in THEOREMS],
)
def test_derivation_reaches_exact_zero(theorem_id):
    D = _run_and_record(theorem_id)
    assert D.checks, f"{theorem_id}: the derivation produced no checks"
    assert D.passed, f"{theorem_id} derivation failed:\n{D.summary()}"
    entry = get(theorem_id)
    assert D.theorem == theorem_id and D.sizes == entry.default_sizes
    # the derivation takes exactly the steps the registry states (theory/steps.py), in order and kind
    got = [(c.kind, c.name, c.detail) if c.detail else (c.kind, c.name) for c in D.checks]
    assert got == list(entry.steps)
    # every positive step is an exact structural zero, every witness an exact nonzero
    for c in D.checks:
        assert c.is_zero is c.expect_zero, c.describe()
    # every registry link to a step of this derivation names a step that ran and passed
    for owner, text in _links_to(theorem_id):
        assert any(c.name.startswith(text) and c.passed for c in D.checks), (
            f"{owner} links to derivation step {theorem_id}::{text!r}, which is not a passing check"
        )


def _links_to(theorem_id: str) -> list[tuple[str, str]]:
    out = []
    for t in THEOREMS:
        for c in t.conclusions:
            out += [(c.id, link.split("::", 1)[1]) for link in c.derivations if link.split("::", 1)[0] == theorem_id]
        for h in t.hypotheses:
            out += [
                (w.id, w.derivation.split("::", 1)[1])
                for w in h.witnesses
                if w.derivation and w.derivation.split("::", 1)[0] == theorem_id
            ]
    return out


@pytest.mark.parametrize(
    "theorem_id",
    [pytest.param(t.id, marks=[pytest.mark.theorem(i) for i in _ids_for(t.id)], id=t.id) for t in THEOREMS],
)
def test_derivation_at_its_smallest_supported_sizes(theorem_id):
    """Every derivation also reaches its exact zeros (and witnesses) at the low corner of its
    supported sizes, where steps that need n > 1 or d > 1 are left out."""
    entry = get(theorem_id)
    small = {k: lo for k, (lo, hi) in entry.supported_sizes.items()}
    D = entry.derive(**small)
    assert D.theorem == theorem_id and D.sizes == small
    assert D.checks and D.passed, D.summary()
    for c in D.checks:
        assert c.is_zero is c.expect_zero, c.describe()


@pytest.mark.theorem("T1")
@pytest.mark.parametrize("n,d", [(1, 3), (3, 1), (2, 2)])
def test_t1_convention_witness_exactly_when_both_sizes_exceed_one(n, d):
    """kron(T, A) = kron(A, T) when A or T is 1×1, so the feature-major witness exists exactly when
    n > 1 and d > 1; the derivation states it there and only there."""
    D = _run_and_record("T1", n=n, d=d)
    assert D.passed, D.summary()
    witnesses = [c.name for c in D.checks if not c.expect_zero]
    want = ["feature-major kron(T,A) applied to the token-major x is NOT SHA"] if n > 1 and d > 1 else []
    assert witnesses == want


@pytest.mark.theorem("T2")
@pytest.mark.parametrize("n,d", [(2, 1), (2, 2)])
def test_t2_with_three_heads(n, d):
    """H = 3 takes the general branches (a cancelling pair plus a zeroed third head; for d ≥ 2 the
    constant-transport solution set over three gates: α₁ = α₂ = α₃ = κ), and n ≠ d catches a
    transposed shape."""
    D = _run_and_record("T2", n=n, d=d, heads=3)
    assert D.passed, D.summary()
    names = [c.name for c in D.checks]
    assert "cancelling heads: P = (A^1 + A^2)/H stays positive (equals 2A^1/H)" in names
    sol = [c for c in D.checks if c.name.startswith("constant transport with independent T_h")]
    assert [c.detail for c in sol] == (["solution set {(kappa, kappa, kappa, kappa)}"] if d >= 2 else [])


@pytest.mark.theorem("L1")
@pytest.mark.parametrize("n,d", [(1, 1), (2, 3), (4, 2), (1, 3), (3, 1), (2, 2)])
def test_stacking_lemma_other_sizes(n, d):
    D = _run_and_record("L1", n=n, d=d)
    assert D.passed, D.summary()
    # kron(T, A) = kron(A, T) when A or T is 1x1, so the convention-mixing witness exists exactly
    # when n > 1 and d > 1, and the derivation shows it there
    witnesses = [c.name for c in D.checks if not c.expect_zero]
    assert witnesses == (
        ["mixing conventions is wrong: stack_tm(A X T^T) != kron(T,A) stack_tm(X)"] if n > 1 and d > 1 else []
    )


@pytest.mark.theorem("T6")
@pytest.mark.parametrize("ring", [3, 4, 6])
def test_fourier_eigenpairs_all_rings(ring):
    D = dv.t6_fourier(ring, 2, 2)
    record("T6", symbolic=D.passed)
    assert D.passed, D.summary()
    # from ring 3 on the reversed sign is a different symbol (on a ring of 2, e^{±iπ} agree): its
    # witness is stated on every ring tested here
    assert [c.name for c in D.checks if not c.expect_zero] == [
        "Fourier: heads are distinct: a_0 - a_1 != 0 (score kernels)",
        "Fourier: heads are distinct: T_0 - T_1 != 0 (transports)",
        "Fourier with the reversed sign e^(-2 pi i k m/n) is wrong",
    ]


@pytest.mark.theorem("T6")
def test_fourier_reversed_sign_convention_fails():
    """numpy's fft sign (e^{-2 pi i k m/n}) is the wrong symbol for phi_k(j) = e^{+2 pi i k j/n}."""
    D = dv.t6_fourier(5, 2, 1, sign=-1)
    assert not D.passed
    record("T6", counterexample="reversed Fourier sign: J(phi_k (x) v) != phi_k (x) (M(k)-I) v")


# ---------------------------------------------------------------------------------------------
# the derivations can fail: break the mathematics and watch them catch it
# ---------------------------------------------------------------------------------------------
@pytest.mark.theorem("T1")
def test_t1_catches_feature_major_kron(monkeypatch):
    real = dv.kron
    monkeypatch.setattr(dv_walks, "kron", lambda A, T: real(T, A))
    D = dv.derive_t1(n=3, d=2)
    assert not D.passed
    assert any(not c.passed and c.name.startswith("SHA(X) = kron") for c in D.checks)


@pytest.mark.theorem("T3")
def test_t3_catches_transports_without_transpose(monkeypatch):
    """O_ji = O_ij (instead of O_ij^T): pi-self-adjointness must fail. (The Dirichlet identity is a
    quadratic-form identity and survives: it needs only orthogonality and stationarity.)"""
    real = dv.symbolic_metric_transports

    def broken(n, d, scale=1):
        O, angles = real(n, d, scale)
        for i in range(n):
            for j in range(i + 1, n):
                O[j][i] = O[i][j]
        return O, angles

    monkeypatch.setattr(dv_spectral, "symbolic_metric_transports", broken)
    D = dv.derive_t3(n=2, d=2, counterexamples=False)
    failed = {c.name for c in D.failures()}
    assert any(name.startswith("1. Delta is pi-self-adjoint") for name in failed), D.summary()
    assert not any(name.startswith("3. Dirichlet") for name in failed), D.summary()


@pytest.mark.theorem("L2")
def test_l2_catches_unnormalised_attention(monkeypatch):
    monkeypatch.setattr(dv_walks, "softmax_rows", lambda S, mask=(): S.applyfunc(sp.exp))
    assert not dv.derive_l2(n=2, d=1).passed


@pytest.mark.theorem("T2")
def test_t2_counterexample_has_no_constant_transport():
    D = dv.t2_counterexample()
    assert D.passed, D.summary()
    record("T2", counterexample="n=d=H=2: B_11, B_12 linearly independent, Kronecker miss 0.662")


def test_check_and_derivation_semantics():
    ok = Check("T1", "zero", sp.Matrix([[0, 0]]))
    bad = Check("T1", "nonzero", sp.Matrix([[0, sp.Symbol("x")]]))
    wit = Check("T1", "witness", sp.Integer(3), expect_zero=False)
    assert ok.passed and not bad.passed and wit.passed
    D = Derivation("T1", {})
    assert not D.passed  # an empty derivation proves nothing
    D.checks += [ok, wit]
    assert D.passed
    D.checks.append(bad)
    assert not D.passed and D.failures() == [bad]
    assert "FAILED" in D.summary()


# ---------------------------------------------------------------------------------------------
# T2's special cases and counterexample are computed from the definitions, not by construction
# ---------------------------------------------------------------------------------------------
@pytest.mark.theorem("T2")
def test_t2_special_cases_use_the_definitions(monkeypatch):
    """Break the definition of the blocks (a head weighted twice) or of the gates (not normalised):
    the cancelling-heads and shared-A steps, which substitute into those definitions, must fail."""
    real_blocks, real_gates = dv.head_blocks, dv.gate_matrices

    def weighted(As, Ts):
        return real_blocks(As, [T * (h + 1) for h, T in enumerate(Ts)])

    monkeypatch.setattr(dv_walks, "head_blocks", weighted)
    failed = {c.name for c in dv.derive_t2(n=2, d=2, heads=2).failures()}
    assert any(n.startswith("cancelling heads (T_2=-T_1") for n in failed), failed
    monkeypatch.setattr(dv_walks, "head_blocks", real_blocks)
    monkeypatch.setattr(
        dv_walks, "gate_matrices", lambda As: [[[g * 2 for g in row] for row in rows] for rows in real_gates(As)]
    )
    failed = {c.name for c in dv.derive_t2(n=2, d=2, heads=2).failures()}
    assert any(n.startswith("shared A across heads") for n in failed), failed
    assert any(n.startswith("gates are convex") for n in failed), failed


@pytest.mark.theorem("T2")
@pytest.mark.parametrize(
    "change,step",
    [
        ({"B11": [["9/10", "1/2"], ["1/2", "9/10"]]}, "counterexample: B_11 of the MHA operator"),
        (
            {"miss_exact": "sqrt(2)*sqrt(5 - sqrt(17))/3"},
            "counterexample: nearest Kronecker product misses by the stated closed form",
        ),
        ({"miss": 0.5}, "counterexample: nearest Kronecker product misses by 0.5"),
        ({"A2": [["1/3", "2/3"], ["1/2", "1/2"]]}, "counterexample: B_12 of the MHA operator"),
    ],
)
def test_t2_counterexample_checks_its_stated_data(change, step):
    from theory.cases import T2_COUNTEREXAMPLE

    D = dv.t2_counterexample({**T2_COUNTEREXAMPLE, **change})
    assert any(c.name.startswith(step) for c in D.failures()), D.summary()


def test_rounded_values_are_numeric_steps_with_their_precision():
    D = dv.t2_counterexample()
    (num,) = [c for c in D.checks if c.numeric]
    assert num.precision == 0.0005 and abs(num.residual) <= num.precision
    assert "numeric" in num.describe() and "<= 0.0005" in num.describe()
    assert all(not c.numeric for c in D.checks if c is not num)  # everything else is exact
    T3 = dv.t3_counterexamples()
    (num3,) = [c for c in T3.checks if c.numeric]
    assert num3.precision == 5e-05 and "numeric" in num3.describe()
    wrong = Check("T3", "rounded", 0.001, precision=5e-05)
    assert not wrong.passed and "numeric" in wrong.describe()


# ======================================================================================================
# The building blocks of the derivations, each checked against its literal definition with independent
# arithmetic (exact Fraction loops, float64 numpy at sample angles), so a derivation cannot pass because a
# helper silently built something else (theory/derivations/walks.py, theory/derivations/spectral.py).
# ======================================================================================================

#: the theorems whose derivations are built from the shared helpers below (`pytest --theorem T2/T3/T6`
#: runs their tests); a helper only one theorem uses is marked with that theorem alone
HELPERS = pytest.mark.theorem("T2", "T3", "T6")


def F(v) -> Fraction:
    return Fraction(str(v))


def fmat(rows) -> list[list[Fraction]]:
    return [[F(v) for v in r] for r in rows]


def as_fractions(M: sp.Matrix) -> list[list[Fraction]]:
    out = []
    for i in range(M.rows):
        row = []
        for j in range(M.cols):
            e = sp.nsimplify(M[i, j])
            assert e.is_Rational, (i, j, M[i, j])
            row.append(Fraction(int(e.p), int(e.q)))
        out.append(row)
    return out


# ------------------------------------------------------------------------------------------------
# theory.derivations.walks helpers
# ------------------------------------------------------------------------------------------------
@HELPERS
@pytest.mark.parametrize("n", [1, 3])
def test_sym_weights_are_symmetric_positive_named_symbols(n):
    w = dw.symbolic_symmetric_weights(n)
    assert len(w) == n and all(len(row) == n for row in w)
    for i in range(n):
        for j in range(n):
            a, b = min(i, j), max(i, j)
            # literal definition: one positive symbol w_ab per unordered pair (diagonal included)
            assert w[i][j] == sp.Symbol(f"w_{a}{b}", positive=True), (i, j, w[i][j])
            assert w[i][j].is_positive is True
            assert w[i][j] is w[j][i] or w[i][j] == w[j][i]
    assert len({w[i][j] for i in range(n) for j in range(n)}) == n * (n + 1) // 2


def _numeric(O, angles, values):
    subs = dict(zip(angles, values, strict=True))
    return [[np.array(sp.N(M.xreplace(subs)).tolist(), dtype=float) for M in row] for row in O]


def _rot(t: float) -> np.ndarray:
    return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])


def _refl(t: float) -> np.ndarray:
    return np.array([[math.cos(t), math.sin(t)], [math.sin(t), -math.cos(t)]])


@HELPERS
@pytest.mark.parametrize("n", [2, 3])
def test_metric_transports_d2_are_rotations_and_reflections(n):
    O, angles = dw.symbolic_metric_transports(n, 2)
    want_names = {f"phi_{i}" for i in range(n)} | {f"theta_{i}{j}" for i in range(n) for j in range(i + 1, n)}
    assert len(angles) == n * (n + 1) // 2
    assert {a.name for a in angles} == want_names
    assert all(a.is_real is True for a in angles)
    # independent angles (distinct symbols), evaluated at fixed values with float64 numpy
    vals = {a: 0.3 + 0.7 * k for k, a in enumerate(angles)}
    by_name = {a.name: vals[a] for a in angles}
    num = _numeric(O, list(vals), list(vals.values()))
    for i in range(n):
        for j in range(n):
            Q = num[i][j]
            assert Q.shape == (2, 2)
            np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-12)  # orthogonal
            np.testing.assert_allclose(num[j][i], Q.T, atol=1e-12)  # O_ji = O_ij^T
            if i == j:
                np.testing.assert_allclose(Q, _refl(by_name[f"phi_{i}"]), atol=1e-12)
                assert np.linalg.det(Q) == pytest.approx(-1.0)
            elif i < j:
                np.testing.assert_allclose(Q, _rot(by_name[f"theta_{i}{j}"]), atol=1e-12)
                assert np.linalg.det(Q) == pytest.approx(1.0)


@HELPERS
@pytest.mark.parametrize("d", [1, 3])
def test_metric_transports_other_d_are_signed_identities(d):
    n = 3
    O, angles = dw.symbolic_metric_transports(n, d)
    assert angles == []
    for i in range(n):
        for j in range(n):
            want = sp.eye(d) if i != j else (-sp.eye(d) if i % 2 == 1 else sp.eye(d))
            assert O[i][j] == want, (i, j, O[i][j])


@HELPERS
@pytest.mark.parametrize("d", [1, 2])
def test_metric_transports_scale_multiplies_every_transport(d):
    s = sp.Symbol("s", positive=True)
    O1, a1 = dw.symbolic_metric_transports(3, d)
    Os, a2 = dw.symbolic_metric_transports(3, d, scale=s)
    O1b, _ = dw.symbolic_metric_transports(3, d, scale=1)
    assert a1 == a2
    for i in range(3):
        for j in range(3):
            assert sp.expand(Os[i][j] - s * O1[i][j]) == sp.zeros(d, d)
            assert O1b[i][j] == O1[i][j]


@HELPERS
def test_softmax_like_is_the_row_normalised_positive_symbol_matrix():
    n = 3
    M = dw.softmax_like("q", n)
    assert M.shape == (n, n)
    E = [[sp.Symbol(f"q_{i}{j}", positive=True) for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(n):
            assert sp.cancel(M[i, j] - E[i][j] / sum(E[i])) == 0
    assert all(s.is_positive for s in M.free_symbols)
    assert {s.name for s in M.free_symbols} == {f"q_{i}{j}" for i in range(n) for j in range(n)}
    # exact instance: e_ij = i + 2j + 1 gives rows e_i. / sum_k e_ik (Fractions)
    point = {E[i][j]: i + 2 * j + 1 for i in range(n) for j in range(n)}
    got = as_fractions(M.xreplace(point))
    for i in range(n):
        tot = sum(i + 2 * k + 1 for k in range(n))
        assert got[i] == [Fraction(i + 2 * j + 1, tot) for j in range(n)]


def _rand_rational(rng, shape):
    return [
        [Fraction(int(rng.integers(-9, 10)), int(rng.integers(1, 7))) for _ in range(shape[1])] for _ in range(shape[0])
    ]


@HELPERS
@pytest.mark.parametrize("H,n,d", [(1, 3, 2), (2, 3, 2), (3, 2, 3)])
def test_head_blocks_are_the_sum_over_heads(H, n, d):
    rng = np.random.default_rng(H * 100 + n * 10 + d)
    As = [_rand_rational(rng, (n, n)) for _ in range(H)]
    Ts = [_rand_rational(rng, (d, d)) for _ in range(H)]
    B = dw.head_blocks([sp.Matrix(A) for A in As], [sp.Matrix(T) for T in Ts])
    assert B.shape == (n * d, n * d)
    got = as_fractions(B)
    for i in range(n):
        for j in range(n):
            for a in range(d):
                for b in range(d):
                    want = sum((As[h][i][j] * Ts[h][a][b] for h in range(H)), Fraction(0))
                    assert got[i * d + a][j * d + b] == want, (i, j, a, b)


@HELPERS
@pytest.mark.parametrize("H,n", [(1, 2), (3, 2), (2, 3)])
def test_gates_are_the_head_shares(H, n):
    rng = np.random.default_rng(7 * H + n)
    As = [
        [[Fraction(int(rng.integers(1, 9)), int(rng.integers(1, 5))) for _ in range(n)] for _ in range(n)]
        for _ in range(H)
    ]
    g = dw.gate_matrices([sp.Matrix(A) for A in As])
    assert len(g) == n and all(len(r) == n for r in g)
    for i in range(n):
        for j in range(n):
            tot = sum(As[k][i][j] for k in range(H))
            got = [Fraction(int(sp.Rational(x).p), int(sp.Rational(x).q)) for x in g[i][j]]
            assert got == [As[h][i][j] / tot for h in range(H)]


@HELPERS
def test_exact_rational_parsing():
    assert dw.to_rational(0.662) == sp.Rational(331, 500)
    assert dw.to_rational("5/7") == sp.Rational(5, 7)
    assert dw.to_rational(-3) == sp.Integer(-3)
    assert dw.rational_matrix([[0.5, "1/3"], [2, "-7/4"]]) == sp.Matrix(
        [[sp.Rational(1, 2), sp.Rational(1, 3)], [2, sp.Rational(-7, 4)]]
    )


# ------------------------------------------------------------------------------------------------
# t2_counterexample: every step's verdict against an independent Fraction / numpy computation
# ------------------------------------------------------------------------------------------------
def _blocks_fraction(data) -> dict[tuple[int, int], list[list[Fraction]]]:
    """``B_ij = A1_ij T1 + A2_ij T2`` with exact Fractions (the MHA operator's token-major blocks)."""
    A1, A2, T1, T2 = (fmat(data[k]) for k in ("A1", "A2", "T1", "T2"))
    return {
        (i, j): [[A1[i][j] * T1[a][b] + A2[i][j] * T2[a][b] for b in range(2)] for a in range(2)]
        for i in range(2)
        for j in range(2)
    }


def _oracle_miss(data) -> float:
    """Nearest-Kronecker miss ``sqrt(||R||_F^2 - sigma_max(R)^2)`` of the Van Loan rearrangement,
    float64 numpy SVD."""
    B = _blocks_fraction(data)
    R = np.array([[float(v) for row in B[i, j] for v in row] for i in range(2) for j in range(2)])
    s = np.linalg.svd(R, compute_uv=False)
    return float(np.sqrt(max(np.sum(s**2) - s[0] ** 2, 0.0)))


T2_VARIANTS = {
    "stated": {},
    # row 0 of both heads uniform: B_11 = B_12 = (T1 + T2)/2 (dependent) while B_21 is not
    "dependent row": {
        "A1": [["1/2", "1/2"], ["9/10", "1/10"]],
        "A2": [["1/2", "1/2"], ["2/10", "8/10"]],
        "B11": [["1/2", "-1/2"], ["1/2", "1/2"]],
        "B12": [["1/2", "-1/2"], ["1/2", "1/2"]],
    },
    "4 decimals": {"miss": 0.6622, "digits": 4},
    "4 decimals, wrong": {"miss": 0.662, "digits": 4},
    "wrong closed form": {"miss_exact": "sqrt(2)*sqrt(5 - sqrt(17))/3"},
}


@pytest.mark.theorem("T2")
@pytest.mark.parametrize("variant", list(T2_VARIANTS))
def test_t2_counterexample_verdicts_match_an_independent_computation(variant):
    data = {**T2_COUNTEREXAMPLE, **T2_VARIANTS[variant]}
    D = dw.t2_counterexample(data)
    assert D.theorem == "T2" and D.sizes == {"n": 2, "d": 2, "heads": 2}
    assert [c.theorem for c in D.checks] == ["T2"] * 5
    B = _blocks_fraction(data)
    miss = _oracle_miss(data)
    digits = int(data["digits"])
    names = [
        "counterexample: B_11 of the MHA operator is the stated matrix",
        "counterexample: B_12 of the MHA operator is the stated matrix",
        "counterexample: B_11, B_12 linearly independent (rank 2)",
        "counterexample: nearest Kronecker product misses by the stated closed form (squares agree, both >= 0)",
        f"counterexample: nearest Kronecker product misses by {data['miss']} ({digits} decimals)",
    ]
    assert [c.name for c in D.checks] == names
    b11, b12, rank, closed, rounded = D.checks
    assert b11.passed == bool(B[0, 0] == fmat(data["B11"]))
    assert b12.passed == bool(B[0, 1] == fmat(data["B12"]))
    V = np.array([[float(v) for row in B[0, 0] for v in row], [float(v) for row in B[0, 1] for v in row]])
    assert rank.passed == bool(np.linalg.matrix_rank(V) == 2)
    assert rank.detail == "exact rank over Q" and not rank.numeric
    stated = float(sp.sympify(data["miss_exact"]))
    assert closed.passed == bool(abs(stated - miss) < 1e-12)
    assert not closed.numeric
    assert float(sp.sympify(closed.detail.removeprefix("miss^2 = "))) == pytest.approx(miss**2, abs=1e-12)
    assert closed.detail.startswith("miss^2 = ")
    # the rounded value: numeric, precision half a unit of the last stated decimal
    assert rounded.numeric and rounded.precision == pytest.approx(0.5 * 10.0**-digits, rel=1e-15)
    assert rounded.residual == pytest.approx(miss - float(data["miss"]), abs=1e-12)
    assert rounded.passed == bool(abs(miss - float(data["miss"])) <= 0.5 * 10.0**-digits)
    assert rounded.detail == f"miss = {miss:.9f}"


@HELPERS
@pytest.mark.parametrize(
    "change",
    [
        {},
        # a case where a 15-digit evaluation of the miss rounds to the neighbouring double
        {"A1": [["1/10", "9/10"], ["1/10", "9/10"]], "A2": [["3/5", "2/5"], ["1/2", "1/2"]], "miss": 0.848},
    ],
)
def test_t2_counterexample_value_is_the_correctly_rounded_double(change):
    """The reported miss is the double nearest to the exact ``sqrt(||R||_F^2 - sigma_max(R)^2)``
    of the Van Loan rearrangement (mpmath SVD at 50 digits), not a 15-digit approximation of it."""
    import mpmath

    data = {**T2_COUNTEREXAMPLE, **change}
    B = _blocks_fraction(data)
    with mpmath.workdps(50):
        R = mpmath.matrix(
            [
                [mpmath.mpf(v.numerator) / v.denominator for row in B[i, j] for v in row]
                for i in range(2)
                for j in range(2)
            ]
        )
        s = mpmath.svd_r(R, compute_uv=False)
        exact = float(mpmath.sqrt(sum(x**2 for x in s) - max(s) ** 2))
    (num,) = [c for c in dw.t2_counterexample(data).checks if c.numeric]
    assert num.residual == exact - float(data["miss"])


# ------------------------------------------------------------------------------------------------
# theory.derivations.spectral helpers
# ------------------------------------------------------------------------------------------------
def _det_fraction(M: list[list[Fraction]]) -> Fraction:
    """Determinant by exact Gaussian elimination (Fractions)."""
    A = [row[:] for row in M]
    n, det = len(A), Fraction(1)
    for c in range(n):
        p = next((r for r in range(c, n) if A[r][c] != 0), None)
        if p is None:
            return Fraction(0)
        if p != c:
            A[c], A[p] = A[p], A[c]
            det = -det
        det *= A[c][c]
        for r in range(c + 1, n):
            f = A[r][c] / A[c][c]
            A[r] = [A[r][k] - f * A[c][k] for k in range(n)]
    return det


@HELPERS
@pytest.mark.parametrize(
    "expected",
    [
        {1: 1, 2: 1, -3: 1},  # wrong spectrum
        {2: 3},
        {0: 1, 5: 2},
    ],
)
def test_spectrum_residual_is_charpoly_minus_the_stated_product(expected):
    M = [
        [Fraction(2), Fraction(1), Fraction(0)],
        [Fraction(-1, 2), Fraction(3), Fraction(1)],
        [Fraction(0), Fraction(2, 3), Fraction(-1)],
    ]
    r = dsp.spectrum_residual(sp.Matrix(M), expected)
    assert r.shape == (1, 1)
    z = sp.Symbol("z")
    for zv in range(-3, 4):
        charp = _det_fraction([[Fraction(zv) * (i == j) - M[i][j] for j in range(3)] for i in range(3)])
        prod = Fraction(1)
        for e, m in expected.items():
            prod *= (Fraction(zv) - e) ** m
        assert sp.Rational(r[0, 0].subs(z, zv)) == sp.Rational(charp - prod)


@HELPERS
def test_spectrum_residual_vanishes_exactly_for_the_true_spectrum():
    M = sp.Matrix([[2, 1], [0, 2]])  # defective: 2 twice
    assert dsp.spectrum_residual(M, {2: 2}) == sp.zeros(1, 1)
    assert dsp.spectrum_residual(M, {2: 1}) != sp.zeros(1, 1)


def _inverse_transport_operator(inv) -> np.ndarray:
    """``I - W`` of the 3-cycle with weights 1/2 and ``O_ji = O_ij^{-1}`` (float64 numpy)."""
    O12, O23, O31 = (np.array([[float(F(v)) for v in r] for r in inv[k]]) for k in ("O12", "O23", "O31"))
    O = {
        (0, 1): O12,
        (1, 0): np.linalg.inv(O12),
        (1, 2): O23,
        (2, 1): np.linalg.inv(O23),
        (2, 0): O31,
        (0, 2): np.linalg.inv(O31),
    }
    W = np.zeros((6, 6))
    for (i, j), Q in O.items():
        W[2 * i : 2 * i + 2, 2 * j : 2 * j + 2] = 0.5 * Q
    return np.eye(6) - W


T3_VARIANTS = {
    "stated": {},
    "3 decimals": {"negative_eigenvalue": -0.027, "digits": 3},
    "wrong 4th decimal": {"negative_eigenvalue": -0.0269},
    # the root lies below the rounding interval (a one-sided count would still find it)
    "root below the interval": {"negative_eigenvalue": -0.0267},
    "sheared O23": {"O23": [[1, "1/2"], [0, 1]]},
    # flat identity transports: spec {0, 0, 3/2 x 4}, no negative and no non-real eigenvalue
    "identity transports": {"O12": [[1, 0], [0, 1]], "O31": [[1, 0], [0, 1]]},
}


@pytest.mark.theorem("T3")
@pytest.mark.parametrize("variant", list(T3_VARIANTS))
def test_t3_inverse_transport_steps_match_numpy_eigenvalues(variant, monkeypatch):
    inv = {**T3_INVERSE_TRANSPORTS, **T3_VARIANTS[variant]}
    monkeypatch.setattr(dsp, "T3_INVERSE_TRANSPORTS", inv)
    D = dsp.t3_counterexamples()
    assert D.theorem == "T3" and D.sizes == {}
    assert all(c.theorem == "T3" for c in D.checks)
    ev = np.linalg.eigvals(_inverse_transport_operator(inv))
    real = np.sort(ev[np.abs(ev.imag) < 1e-6].real)
    neg = real[real < -1e-9]
    distinct_neg = sorted({round(float(v), 5) for v in neg})
    n_complex = int(np.sum(np.abs(ev.imag) >= 1e-6))
    stated, digits = float(inv["negative_eigenvalue"]), int(inv["digits"])
    half = 0.5 * 10.0**-digits
    by = {c.name.split(": ", 1)[-1]: c for c in D.checks if "O_ji=O_ij^-1" in c.name}
    one = by["one negative real eigenvalue"]
    assert one.passed == (len(distinct_neg) == 1)
    assert one.detail == (
        f"{len(distinct_neg)} distinct negative real root(s), algebraic multiplicity {len(neg)}, exact root isolation"
    )
    in_interval = by[f"exactly one distinct real eigenvalue in [{inv['negative_eigenvalue']} -+ {half:g}]"]
    n_in = len({round(float(v), 6) for v in real if stated - half <= v <= stated + half})
    assert in_interval.passed == (n_in == 1)
    assert in_interval.detail == "exact root count in the rounding interval"
    value = by[f"the negative eigenvalue is {inv['negative_eigenvalue']} ({digits} decimals)"]
    assert value.numeric and value.precision == pytest.approx(half, rel=1e-12)
    if distinct_neg:
        assert value.residual == pytest.approx(float(neg.min()) - stated, abs=1e-7)
        assert value.passed == (abs(float(neg.min()) - stated) <= half)
        assert value.detail == f"negative real root {float(neg.min()):.8f}"
    else:
        assert math.isnan(value.residual) and not value.passed
        assert value.detail == "negative real root nan"
    pair = by["a complex pair exists (number of non-real eigenvalues)"]
    assert not pair.expect_zero and int(pair.residual) == n_complex
    assert pair.detail == f"{n_complex} non-real eigenvalues"
    assert pair.passed == (n_complex > 0)
    sa = [c for c in D.checks if c.name.endswith("pi-self-adjointness fails")]
    assert len(sa) == 1 and not sa[0].expect_zero
    Delta = _inverse_transport_operator(inv)
    S = np.kron(np.eye(3) / 3, np.eye(2)) @ Delta
    np.testing.assert_allclose(np.array(sa[0].residual.tolist(), dtype=float), S - S.T, atol=1e-12)


@pytest.mark.theorem("T6")
@pytest.mark.parametrize("ring", [2, 3])
def test_t6_fourier_steps_and_the_reversed_sign_witness(ring):
    D = dsp.t6_fourier(ring, 2, 1)
    assert D.theorem == "T6" and D.sizes == {"ring": ring, "d": 2, "heads": 1}
    names = [f"Fourier (ring={ring}): J(phi_k (x) v) = phi_k (x) (M(k)-I) v, a^(k) = sum_m a(m) e^(+2 pi i k m/n)"]
    if ring >= 3:  # on a 2-ring zeta = +-1 is real: both sign conventions agree, no witness
        names.append("Fourier with the reversed sign e^(-2 pi i k m/n) is wrong")
    names.append("rotating wave: rho R(theta)(1,-i)^T = rho e^{i theta}(1,-i)^T")
    assert [c.name for c in D.checks] == names
    assert [c.expect_zero for c in D.checks] == [
        n != "Fourier with the reversed sign e^(-2 pi i k m/n) is wrong" for n in names
    ]
    assert D.passed, D.summary()
    # each Fourier residual is one nd-vector: J (phi_k (x) v) - phi_k (x) (M(k) - I) v
    assert [c.residual.shape for c in D.checks[:-1]] == [(ring * 2, 1)] * (len(names) - 1)
    # two heads: the transports T_0, T_1 are independent generic matrices (both appear in the witness)
    two = dsp.t6_fourier(ring, 2, 2)
    assert two.sizes == {"ring": ring, "d": 2, "heads": 2} and two.passed, two.summary()
    if ring >= 3:
        (wit,) = [c for c in two.checks if c.name.startswith("Fourier with the reversed sign")]
        names = {s.name for s in wit.residual.free_symbols}
        assert {f"t{h}_{a}{b}" for h in range(2) for a in range(2) for b in range(2)} <= names, names
    rev = dsp.t6_fourier(ring, 2, 1, sign=-1)
    assert rev.theorem == "T6" and [c.name for c in rev.checks] == ["Fourier with the reversed sign"]
    assert rev.passed is (ring == 2)


@pytest.mark.theorem("T3")
def test_t3_counterexample_step_names_and_kinds():
    """The published step list of T3's counterexamples (names as the report prints them; registry
    links match by prefix, so a change after the prefix would otherwise go unnoticed)."""
    D = dsp.t3_counterexamples()
    inv = "drop orthogonality keep O_ji=O_ij^-1"
    stated, digits = T3_INVERSE_TRANSPORTS["negative_eigenvalue"], T3_INVERSE_TRANSPORTS["digits"]
    half = 0.5 * 10.0**-digits
    assert [(c.name, c.expect_zero, c.numeric) for c in D.checks] == [
        ("drop (a) [P=[[0,2],[2,0]], O=1]: spec Delta = {-1, 3}", True, False),
        ("drop (a): <x,Delta x>_pi = -1 at x=(1,1)", True, False),
        ("drop (a): Dirichlet form = 0 at x=(1,1)", True, False),
        ("drop (a): correction sum_i pi_i (1 - r_i)|x_i|^2 = -1", True, False),
        ("drop (b) [directed 3-cycle, O=1]: spec = {0, 3/2 +- (sqrt3/2) i}", True, False),
        ("drop O_ji=O_ij^T [swap, O_12=O_21=R(pi/3)]: spec = {1/2 +- i sqrt3/2, 3/2 +- i sqrt3/2}", True, False),
        ("drop orthogonality [swap, O=2]: spec = {-1, 3}", True, False),
        (f"{inv} [3-cycle]: one negative real eigenvalue", True, False),
        (f"{inv} [3-cycle]: exactly one distinct real eigenvalue in [{stated} -+ {half:g}]", True, False),
        (f"{inv} [3-cycle]: the negative eigenvalue is {stated} ({digits} decimals)", True, True),
        (f"{inv} [3-cycle]: a complex pair exists (number of non-real eigenvalues)", False, False),
        (f"{inv}: pi-self-adjointness fails", False, False),
    ]
    assert D.passed, D.summary()
