"""Exact (SymPy) building blocks shared by the derivations. No torch, no floats.

Conventions are those of THEOREMS.md (Conventions):

* ``X`` is ``n x d``, row ``i`` is the token ``x_i``; **token-major** stacking ``x = vec(X^T)``
  (``x[i*d + k] = X[i, k]``); block ``(i, j)`` of an ``nd x nd`` operator is rows ``i*d:(i+1)*d``,
  columns ``j*d:(j+1)*d``.
* transports act on column vectors; a connection walk has blocks ``P_ij O_ij``.

A derivation step is a :class:`Check`: a named residual that must reduce to exact zero (or, for a
necessity witness, must *not*).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy as sp


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One exact step of a derivation.

    ``residual`` is a SymPy expression or matrix already brought to a canonical form by the
    derivation (``expand`` / ``cancel`` / reduction modulo ``cos^2 + sin^2 = 1`` or ``z^n = 1``),
    so "is exactly zero" is a structural test, never a floating comparison.
    ``expect_zero=False`` marks a *necessity witness*: dropping a hypothesis must leave a nonzero
    residual (the derivation is then shown to use that hypothesis).

    ``precision`` set: a *numeric* step (a rounded value such as "0.662, 3 decimals"): ``residual``
    is a float, and the step is "zero" iff ``|residual| <= precision``. Such a step is reported as
    numeric with its precision, never as an exact residual.
    """

    theorem: str
    name: str
    residual: Any
    expect_zero: bool = True
    detail: str = ""
    precision: float | None = None

    @property
    def numeric(self) -> bool:
        return self.precision is not None

    @property
    def kind(self) -> str:
        """``"witness"`` (expect a nonzero), ``"numeric"`` (a rounded value) or ``"zero"`` (exact zero):
        the kinds of :data:`theory.steps.STEPS`."""
        return "witness" if not self.expect_zero else ("numeric" if self.numeric else "zero")

    @property
    def is_zero(self) -> bool:
        if self.precision is not None:
            return abs(float(self.residual)) <= self.precision
        return is_exact_zero(self.residual)

    @property
    def passed(self) -> bool:
        return self.is_zero == self.expect_zero

    def describe(self) -> str:
        status = "ok" if self.passed else "FAILED"
        if self.precision is not None:
            want = (
                f"numeric |{float(self.residual):.3g}| <= {self.precision:g}"
                if self.expect_zero
                else f"numeric |{float(self.residual):.3g}| > {self.precision:g}"
            )
        else:
            want = "exact = 0" if self.expect_zero else "exact != 0"
        return f"[{status}] {self.theorem} {self.name}: residual {want}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Derivation:
    """All checks of one theorem's derivation at given sizes."""

    theorem: str
    sizes: dict
    checks: list[Check] = field(default_factory=list)
    facts: dict = field(default_factory=dict)  # decisions a certificate reached (e.g. "reversible")

    def add(self, name: str, residual, *, expect_zero: bool = True, detail: str = "") -> Check:
        c = Check(self.theorem, name, residual, expect_zero, detail)
        self.checks.append(c)
        return c

    def add_numeric(self, name: str, value: float, stated: float, precision: float, *, detail: str = "") -> Check:
        """A rounded value: ``|value - stated| <= precision`` (reported as numeric, not exact)."""
        c = Check(self.theorem, name, float(value) - float(stated), True, detail, precision=float(precision))
        self.checks.append(c)
        return c

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def summary(self) -> str:
        return "\n".join(c.describe() for c in self.checks)


def is_exact_zero(residual) -> bool:
    """True iff ``residual`` (number, expression, matrix, or sequence of those) is structurally 0.
    ``None`` (a step that computed nothing) is an error, never "nonzero"."""
    if residual is None:
        raise TypeError("a derivation step's residual is None: nothing was computed")
    if isinstance(residual, (sp.MatrixBase,)):
        return all(is_exact_zero(e) for e in residual)
    if isinstance(residual, (list, tuple)):
        return all(is_exact_zero(e) for e in residual)
    if isinstance(residual, (int, Fraction)):
        return residual == 0
    return sp.sympify(residual) == 0  # structural: the derivation has already canonicalised it


# ----------------------------------------------------------------------------------------------
# Canonical forms
# ----------------------------------------------------------------------------------------------
def cancel_all(M):
    """Entrywise ``cancel(together(.))``: canonical form of rational functions (zero iff 0)."""
    if isinstance(M, sp.MatrixBase):
        return M.applyfunc(lambda e: sp.cancel(sp.together(e)))
    return sp.cancel(sp.together(M))


def expand_all(M):
    if isinstance(M, sp.MatrixBase):
        return M.applyfunc(sp.expand)
    return sp.expand(M)


def numerators(M):
    """Entrywise expanded numerator of ``together(.)``: zero iff the rational function is zero
    (denominators here are products of positive sums, never zero). Cheaper than ``cancel``."""
    if isinstance(M, sp.MatrixBase):
        return M.applyfunc(numerators)
    return sp.expand(sp.fraction(sp.together(M))[0])


def at_rational_point(M, *, seed: int = 0):
    """Evaluate every free symbol at a fixed positive rational (``(k mod 7 + 1) / (k mod 5 + 2)``
    for the k-th symbol in name order, shifted by ``seed``): an exact witness value. A nonzero
    result proves the expression is not identically zero."""
    syms = sorted(
        sp.sympify(M).free_symbols if not isinstance(M, sp.MatrixBase) else M.free_symbols, key=lambda s: s.name
    )
    point = {s: sp.Rational((k + seed) % 7 + 1, (k + seed) % 5 + 2) for k, s in enumerate(syms)}
    out = M.xreplace(point)
    return out


def reduce_circle(expr, angles: Sequence[sp.Symbol]):
    """Canonical form of a rational expression in ``cos(t), sin(t)`` for independent angles ``t``.

    Replaces ``cos t -> c_t``, ``sin t -> s_t``, takes the numerator of the combined fraction and
    reduces it modulo the ideal ``(c_t^2 + s_t^2 - 1)_t``: every power ``s_t^k`` becomes
    ``s_t^{k mod 2} (1 - c_t^2)^{floor(k/2)}``. Polynomials of degree <= 1 in each ``s_t`` are a
    basis of the coordinate ring of the torus, so the result is 0 iff ``expr`` vanishes for all
    angles (the denominators, products of nonzero weights, are left aside).
    """
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(lambda e: reduce_circle(e, angles))
    subs = {}
    pairs = []
    for t in angles:
        c, s = sp.Symbol(f"c_{t.name}", real=True), sp.Symbol(f"s_{t.name}", real=True)
        subs[sp.cos(t)] = c
        subs[sp.sin(t)] = s
        pairs.append((c, s))
    num, _den = sp.fraction(sp.together(sp.sympify(expr).subs(subs)))
    f = sp.expand(num)
    for c, s in pairs:
        if not f.has(s):
            continue
        p = sp.Poly(f, s)
        f = sp.expand(sum(coeff * s ** (k % 2) * (1 - c**2) ** (k // 2) for (k,), coeff in p.terms()))
    return f


def reduce_root_of_unity(expr, zeta: sp.Symbol, n: int):
    """Remainder of a polynomial in ``zeta`` modulo ``zeta^n - 1`` (entrywise for matrices).

    An identity that must hold for *every* n-th root of unity holds iff this remainder is 0.
    """
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(lambda e: reduce_root_of_unity(e, zeta, n))
    e = sp.expand(expr)
    if not e.has(zeta):
        return e
    return sp.expand(sp.rem(e, zeta**n - 1, zeta))


# ----------------------------------------------------------------------------------------------
# Matrices and stacking
# ----------------------------------------------------------------------------------------------
def symbol_matrix(name: str, rows: int, cols: int, **assumptions) -> sp.Matrix:
    """``rows x cols`` matrix of independent symbols ``name_{i}{j}``."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}", **assumptions))


def symbol_vector(name: str, size: int, **assumptions) -> sp.Matrix:
    return sp.Matrix(size, 1, lambda i, _j: sp.Symbol(f"{name}_{i}", **assumptions))


def stack_token_major(X: sp.Matrix) -> sp.Matrix:
    """``x = vec(X^T)``: ``(n, d) -> (n*d, 1)`` with ``x[i*d + k] = X[i, k]``."""
    n, d = X.shape
    return sp.Matrix(n * d, 1, lambda r, make_conclusion: X[r // d, r % d])


def stack_feature_major(X: sp.Matrix) -> sp.Matrix:
    """``vec(X)``: ``(n, d) -> (n*d, 1)`` with ``x[k*n + i] = X[i, k]`` (the *other* convention)."""
    n, d = X.shape
    return sp.Matrix(n * d, 1, lambda r, make_conclusion: X[r % n, r // n])


def unstack_token_major(x: sp.Matrix, n: int, d: int) -> sp.Matrix:
    return sp.Matrix(n, d, lambda i, k: x[i * d + k])


def kron(A: sp.Matrix, T: sp.Matrix) -> sp.Matrix:
    """Kronecker product: block ``(i, j)`` is ``A[i, j] * T`` (token-major ``kron(A, T)``)."""
    n, m = A.shape
    p, q = T.shape
    return sp.Matrix(n * p, m * q, lambda r, c: A[r // p, c // q] * T[r % p, c % q])


def block_matrix(blocks: Sequence[Sequence[sp.Matrix]]) -> sp.Matrix:
    """Dense ``nd x nd`` matrix from an ``n x n`` nested list of ``d x d`` blocks."""
    n = len(blocks)
    d = blocks[0][0].shape[0]
    return sp.Matrix(n * d, n * d, lambda r, c: blocks[r // d][c // d][r % d, c % d])


def block(M: sp.Matrix, i: int, j: int, d: int) -> sp.Matrix:
    """Block ``(i, j)`` of a token-major ``nd x nd`` matrix."""
    return M[i * d : (i + 1) * d, j * d : (j + 1) * d]


def walk_matrix(P: sp.Matrix, O) -> sp.Matrix:
    """Connection walk ``W`` with blocks ``P_ij O_ij`` (``O[i][j]`` a ``d x d`` matrix)."""
    n = P.shape[0]
    return block_matrix([[P[i, j] * O[i][j] for j in range(n)] for i in range(n)])


def pi_inner(x: sp.Matrix, y: sp.Matrix, pi: Sequence, d: int):
    """``<x, y>_pi = sum_i pi_i x_i^T y_i`` for token-major stacked ``x, y``."""
    return sum(pi[i] * (x[i * d : (i + 1) * d, :].T * y[i * d : (i + 1) * d, :])[0, 0] for i in range(len(pi)))


def dirichlet_form(P: sp.Matrix, O, pi: Sequence, x: sp.Matrix, d: int, *, sign: int = -1):
    """``1/2 sum_ij pi_i P_ij ||x_i + sign * O_ij x_j||^2`` (sign -1: Dirichlet form of ``I - W``)."""
    n = P.shape[0]
    total = 0
    for i in range(n):
        xi = x[i * d : (i + 1) * d, :]
        for j in range(n):
            v = xi + sign * O[i][j] * x[j * d : (j + 1) * d, :]
            total += pi[i] * P[i, j] * (v.T * v)[0, 0]
    return total / 2


def rotation(theta) -> sp.Matrix:
    """SO(2) rotation ``R(theta) = [[cos, -sin], [sin, cos]]``."""
    return sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])


def cayley(S: sp.Matrix) -> sp.Matrix:
    """Cayley transform ``Q = (I - S)^{-1} (I + S)`` of a skew matrix ``S``: orthogonal, det +1,
    rational whenever ``S`` is (``I - S`` is invertible because ``S`` has imaginary spectrum)."""
    d = S.shape[0]
    I = sp.eye(d)
    return (I - S).inv() * (I + S)


def householder(u: sp.Matrix) -> sp.Matrix:
    """``I - 2 u u^T / (u^T u)``: a symmetric orthogonal involution, rational when ``u`` is."""
    d = u.shape[0]
    return sp.eye(d) - 2 * (u * u.T) / (u.T * u)[0, 0]


def sylvester_resultant(f, g, x: sp.Symbol):
    """``Res_x(f, g)`` as the determinant of the Sylvester matrix (Berkowitz, division-free).

    ``Res_x(f, g) = lc(f)^{deg g} prod_{f(r)=0} g(r)``; for monic ``f`` with roots ``r_k`` it is
    ``prod_k g(r_k)`` counted with multiplicity.
    """
    F, G = sp.Poly(f, x), sp.Poly(g, x)
    m, n = F.degree(), G.degree()
    fc, gc = F.all_coeffs(), G.all_coeffs()
    size = m + n
    S = sp.zeros(size, size)
    for r in range(n):
        for k, c in enumerate(fc):
            S[r, r + k] = c
    for r in range(m):
        for k, c in enumerate(gc):
            S[n + r, r + k] = c
    return S.det(method="berkowitz")


def softmax_rows(S: sp.Matrix, mask: Iterable[tuple[int, int]] = ()) -> sp.Matrix:
    """Row softmax ``A_ij = exp(S_ij) / sum_k exp(S_ik)``; entries in ``mask`` are 0 (masked)."""
    n, m = S.shape
    masked = set(mask)
    E = sp.Matrix(n, m, lambda i, j: 0 if (i, j) in masked else sp.exp(S[i, j]))
    return sp.Matrix(n, m, lambda i, j: E[i, j] / sum(E[i, k] for k in range(m)))
