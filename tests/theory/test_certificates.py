"""Exact rational certificates: Hypothesis draws rational instances of realistic size
(n = 6..10, d = 2..3) and every identity holds with residual exactly 0 (no tolerance)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from theory import certificates as C
from theory.errors import NotExactError
from theory.report import record

from . import rational_strategies as R


def _certify(D, theorem_id):
    worst = max((C.max_abs(c.residual) for c in D.checks if c.expect_zero), default=Fraction(0))
    record(theorem_id, residual=worst)
    assert D.passed, D.summary()
    assert worst == 0


@pytest.mark.theorem("T1")
@given(st.data())
def test_t1_rational(data):
    n, d = data.draw(R.SIZES_N), data.draw(R.SIZES_D)
    A = data.draw(R.row_stochastic(n))
    T = data.draw(R.matrices(d, d))
    X = data.draw(R.matrices(n, d))
    _certify(C.certify_t1(A, T, X), "T1")


@pytest.mark.theorem("T2")
@given(st.data())
def test_t2_rational(data):
    n, d, H = data.draw(R.SIZES_N), data.draw(R.SIZES_D), data.draw(st.integers(2, 4))
    causal = data.draw(st.booleans())
    support = [[int(j <= i) for j in range(n)] for i in range(n)] if causal else None
    As = [data.draw(R.row_stochastic(n, positive=not causal, support=support)) for _ in range(H)]
    Ts = [data.draw(R.matrices(d, d)) for _ in range(H)]
    X = data.draw(R.matrices(n, d))
    _certify(C.certify_t2(As, Ts, X), "T2")


@pytest.mark.theorem("T3")
@given(st.data())
def test_t3_rational(data):
    n, d = data.draw(R.SIZES_N), data.draw(R.SIZES_D)
    w = data.draw(R.symmetric_weights(n))
    O = data.draw(R.metric_transports(n, d))
    x = data.draw(R.vectors(n * d))
    s = data.draw(R.positive_rationals(hi=3))
    _certify(C.certify_t3(w, O, x, s=s), "T3")


@pytest.mark.theorem("T3")
@given(st.data())
def test_t3_flat_connection_rational(data):
    n, d = data.draw(R.SIZES_N), data.draw(R.SIZES_D)
    w = data.draw(R.symmetric_weights(n))
    Rs = [data.draw(R.rational_orthogonal(d)) for _ in range(n)]
    v = data.draw(R.vectors(d))
    _certify(C.certify_t3_flat(w, Rs, v), "T3")


@pytest.mark.theorem("T4")
@given(st.data())
def test_t4_rational(data):
    n = data.draw(R.SIZES_N)
    symmetric = data.draw(st.booleans())
    K = data.draw(R.matrices(n, n, lo=0, hi=4, positive=True))
    if symmetric:
        K = [[K[min(i, j)][max(i, j)] for j in range(n)] for i in range(n)]
    b = data.draw(R.vectors(n, lo=0, hi=4, positive=True))
    _certify(C.certify_t4(K, query_bias=b), "T4")


@pytest.mark.theorem("T5")
@given(st.data())
def test_t5_rational(data):
    n, d = data.draw(R.SIZES_N), data.draw(R.SIZES_D)
    w = data.draw(R.symmetric_weights(n))
    u = data.draw(R.vectors(d).filter(any))
    y = data.draw(R.vectors(n))
    _certify(C.certify_t5(w, u, y), "T5")


@pytest.mark.theorem("T6")
@given(st.data())
def test_t6_rational(data):
    ring, d, H = data.draw(st.integers(6, 10)), data.draw(R.SIZES_D), data.draw(st.integers(1, 2))
    kernels = [data.draw(R.row_stochastic(ring))[0] for _ in range(H)]  # a_h >= 0, sum 1
    Ts = [data.draw(R.matrices(d, d)) for _ in range(H)]
    v = data.draw(R.vectors(d))
    _certify(C.certify_t6(kernels, Ts, v), "T6")


# ---------------------------------------------------------------------------------------------
# the certificates can fail
# ---------------------------------------------------------------------------------------------
@pytest.mark.theorem("T3")
def test_t3_certificate_detects_nonreversible_and_nonorthogonal():
    n, d = 3, 2
    w = [[1, 2, 0], [2, 1, 1], [0, 1, 3]]
    Q = C.cayley([[0, Fraction(1, 2)], [Fraction(-1, 2), 0]])
    O = [[C.eye(d) for _ in range(n)] for _ in range(n)]
    O[0][1], O[1][0] = Q, Q  # O_10 should be Q^T
    D = C.certify_t3(w, O, [1, 2, 3, 4, 5, 6])
    failed = {c.name for c in D.failures()}
    assert "hypothesis (c): O_ji = O_ij^T" in failed
    assert "1. pi-self-adjoint: pi_i P_ij O_ij = (pi_j P_ji O_ji)^T" in failed
    record("T3", counterexample="rational: O_ji = O_ij (not O_ij^T) breaks pi-self-adjointness")
    O2 = [[C.scale(2, C.eye(d)) for _ in range(n)] for _ in range(n)]  # not orthogonal
    D2 = C.certify_t3(w, O2, [1, 0, 0, 1, 1, 1])
    assert "3. Dirichlet identity" in {c.name for c in D2.failures()}


@pytest.mark.theorem("T4")
def test_t4_certificate_nonsymmetric_kernel_not_reversible():
    K = [[1, 2, 3], [1, 1, 1], [5, 1, 2]]
    A = [[Fraction(k, sum(r)) for k in r] for r in K]
    ratio = A[0][1] * A[1][2] * A[2][0] / (A[0][2] * A[2][1] * A[1][0])
    assert ratio != 1  # Kolmogorov criterion fails: no detailed balance for any pi
    D = C.certify_t4(K)
    assert D.passed and D.facts["reversible"] is False
    names = {c.name for c in D.checks if not c.expect_zero}
    assert "Kolmogorov criterion fails: the only candidate pi_j = A_0j/A_j0 does not balance A" in names
    record("T4", counterexample="nonsymmetric kernel: triangle ratio != 1, not reversible")


@pytest.mark.theorem("T4")
@given(st.data())
def test_t4_certificate_decides_nonsymmetric_kernels(data):
    """Non-symmetric K = diag(c) S diag(b) with S symmetric is reversible (pi_i ∝ D_i b_i / c_i):
    the certificate must say so and verify detailed balance; a generic K (one entry perturbed)
    is not, and the certificate must find the triangle that fails."""
    n = data.draw(st.integers(3, 7))
    S = data.draw(R.matrices(n, n, lo=0, hi=4, positive=True))
    S = [[S[min(i, j)][max(i, j)] for j in range(n)] for i in range(n)]
    c = data.draw(R.vectors(n, lo=0, hi=4, positive=True))
    b = data.draw(R.vectors(n, lo=0, hi=4, positive=True))
    K = [[c[i] * S[i][j] * b[j] for j in range(n)] for i in range(n)]
    D = C.certify_t4(K)
    assert D.passed and D.facts["reversible"] is True, D.summary()
    assert any(c_.name.startswith("Kolmogorov criterion holds") and c_.expect_zero for c_ in D.checks)
    K2 = [row[:] for row in K]
    K2[0][1] = K2[0][1] * 2  # breaks the triangles (0, 1, k)
    D2 = C.certify_t4(K2)
    assert D2.passed and D2.facts["reversible"] is False, D2.summary()
    record("T4", residual=0)


def test_certificates_refuse_floats():
    with pytest.raises(NotExactError, match="A: exact certificates need rationals"):
        C.certify_t1([[0.5, 0.5], [0.5, 0.5]], [[1]], [[1], [2]])
    with pytest.raises(NotExactError):
        C.q(True)
    assert C.q(Fraction(1, 3)) == Fraction(1, 3)
    import sympy as sp

    assert C.q(sp.Rational(2, 7), "x") == Fraction(2, 7)


def test_exact_helpers():
    S = [[0, Fraction(2, 3), -1], [Fraction(-2, 3), 0, Fraction(1, 5)], [1, Fraction(-1, 5), 0]]
    Q = C.cayley(C.qmat(S))
    assert C.matmul(C.transpose(Q), Q) == C.eye(3)
    Hh = C.householder([Fraction(1), Fraction(2), Fraction(-2)])
    assert C.matmul(Hh, Hh) == C.eye(3) and Hh == C.transpose(Hh)
    with pytest.raises(ZeroDivisionError):
        C.inverse([[Fraction(1), Fraction(2)], [Fraction(2), Fraction(4)]])
    assert C._cyc_mul([0, 1, 0], [0, 0, 1]) == [1, 0, 0]  # zeta * zeta^2 = zeta^3 = 1
