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
    """One rational in ``[lo, hi]`` with denominator <= ``max_den``."""
    return st.integers(1, max_den).flatmap(lambda den: st.integers(lo * den, hi * den).map(lambda k: Fraction(k, den)))


def positive_rationals(hi=4, max_den=MAX_DEN):
    return rationals(0, hi, max_den).map(lambda x: x if x > 0 else Fraction(1, MAX_DEN))


@st.composite
def _row(draw, c, lo, hi, positive, max_den=MAX_DEN):
    """A row of ``c`` rationals sharing one drawn denominator (fast to generate: one integer draw
    per entry); zero entries become ``1/max_den`` when ``positive``."""
    den = draw(st.integers(1, max_den))
    lo_k = 1 if positive else lo * den
    ks = draw(st.lists(st.integers(lo_k, hi * den), min_size=c, max_size=c))
    return [Fraction(k, den) for k in ks]


def matrices(r, c, elements=None, *, lo=-3, hi=3, positive=False):
    """``r x c`` rational matrix (rows share a denominator); ``elements`` overrides per entry."""
    if elements is not None:
        return st.lists(st.lists(elements, min_size=c, max_size=c), min_size=r, max_size=r)
    return st.lists(_row(c, lo, hi, positive), min_size=r, max_size=r)


def vectors(k, elements=None, *, lo=-3, hi=3, positive=False):
    if elements is not None:
        return st.lists(elements, min_size=k, max_size=k)
    return _row(k, lo, hi, positive)


@st.composite
def row_stochastic(draw, n, *, positive=True, support=None):
    """Row-stochastic rational ``n x n``: positive weights normalised per row (``support`` an
    optional 0/1 mask; the diagonal is always kept so rows never vanish)."""
    W = draw(matrices(n, n, lo=0, hi=4, positive=positive))
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
    U = draw(matrices(n, n, lo=0, hi=4, positive=not sparse))
    w = [[U[min(i, j)][max(i, j)] for j in range(n)] for i in range(n)]
    for i in range(n):
        if w[i][i] == 0:
            w[i][i] = Fraction(1, MAX_DEN)
    return w


@st.composite
def skew(draw, d):
    """Rational skew-symmetric ``d x d`` (its ``d(d-1)/2`` parameters share one denominator)."""
    k = d * (d - 1) // 2
    params = iter(draw(_row(k, -3, 3, False)) if k else [])
    S = [[Fraction(0)] * d for _ in range(d)]
    for i in range(d):
        for j in range(i + 1, d):
            x = next(params)
            S[i][j], S[j][i] = x, -x
    return S


@st.composite
def rational_orthogonal(draw, d):
    """Rational orthogonal matrix: Cayley transform of a rational skew matrix (det +1), times a
    Householder reflection half of the time (det -1)."""
    Q = C.cayley(draw(skew(d)))
    if draw(st.booleans()):
        u = draw(vectors(d))
        if any(u):
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
    u = draw(vectors(d))
    return C.householder(u) if any(u) else C.eye(d)


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
