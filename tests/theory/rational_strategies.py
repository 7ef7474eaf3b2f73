"""Hypothesis strategies for exact rational instances (used by test_certificates.py).

Kept here rather than in ``numerics/strategies.py`` because they produce ``Fraction`` data for the
torch-free ``theory`` package. Sizes are realistic (n = 6..10, d = 2..3); denominators are small
so exact arithmetic stays fast.
"""
from __future__ import annotations

from fractions import Fraction

from hypothesis import strategies as st

from theory import certificates as C

MAX_DEN = 12
SIZES_N = st.integers(6, 10)
SIZES_D = st.integers(2, 3)


def rationals(lo=-3, hi=3, max_den=MAX_DEN):
    return st.fractions(min_value=lo, max_value=hi, max_denominator=max_den)


def positive_rationals(hi=4, max_den=MAX_DEN):
    return st.fractions(min_value=Fraction(1, max_den), max_value=hi, max_denominator=max_den)


def matrices(r, c, elements=None):
    elements = elements if elements is not None else rationals()
    return st.lists(st.lists(elements, min_size=c, max_size=c), min_size=r, max_size=r)


def vectors(k, elements=None):
    return st.lists(elements if elements is not None else rationals(), min_size=k, max_size=k)


@st.composite
def row_stochastic(draw, n, *, positive=True, support=None):
    """Row-stochastic rational ``n x n``: positive weights normalised per row (``support`` an
    optional 0/1 mask; the diagonal is always kept so rows never vanish)."""
    el = positive_rationals() if positive else st.one_of(st.just(Fraction(0)), positive_rationals())
    W = draw(matrices(n, n, el))
    if support is not None:
        W = [[W[i][j] if (support[i][j] or i == j) else Fraction(0) for j in range(n)] for i in range(n)]
    for i in range(n):
        if sum(W[i]) == 0:
            W[i][i] = Fraction(1)
    return [[x / sum(r) for x in r] for r in W]


@st.composite
def symmetric_weights(draw, n, *, sparse=True):
    """Symmetric nonnegative rational weights with positive diagonal (so every degree > 0);
    ``sparse`` lets off-diagonal weights be exactly 0 (a general graph, not only complete)."""
    el = st.one_of(st.just(Fraction(0)), positive_rationals()) if sparse else positive_rationals()
    w = [[Fraction(0)] * n for _ in range(n)]
    for i in range(n):
        w[i][i] = draw(positive_rationals())
        for j in range(i + 1, n):
            w[i][j] = w[j][i] = draw(el)
    return w


@st.composite
def skew(draw, d):
    S = [[Fraction(0)] * d for _ in range(d)]
    for i in range(d):
        for j in range(i + 1, d):
            x = draw(rationals())
            S[i][j], S[j][i] = x, -x
    return S


@st.composite
def rational_orthogonal(draw, d):
    """Rational orthogonal matrix: Cayley transform of a rational skew matrix (det +1), times a
    Householder reflection half of the time (det -1)."""
    Q = C.cayley(draw(skew(d)))
    if draw(st.booleans()):
        u = draw(vectors(d, rationals()).filter(lambda u: any(u)))
        Q = C.matmul(Q, C.householder(u))
    return Q


@st.composite
def symmetric_orthogonal(draw, d):
    """Rational symmetric orthogonal matrix (an orthogonal involution): +-I or a Householder
    reflection."""
    kind = draw(st.sampled_from(["I", "-I", "H"]))
    if kind == "I":
        return C.eye(d)
    if kind == "-I":
        return C.scale(-1, C.eye(d))
    u = draw(vectors(d, rationals()).filter(lambda u: any(u)))
    return C.householder(u)


@st.composite
def metric_transports(draw, n, d):
    """``O_ij`` rational orthogonal with ``O_ji = O_ij^T``; ``O_ii`` symmetric orthogonal."""
    O = [[None] * n for _ in range(n)]
    for i in range(n):
        O[i][i] = draw(symmetric_orthogonal(d))
        for j in range(i + 1, n):
            Q = draw(rational_orthogonal(d))
            O[i][j], O[j][i] = Q, C.transpose(Q)
    return O
