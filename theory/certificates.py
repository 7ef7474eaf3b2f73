"""Exact rational certificates: the identities of T1-T6 verified on concrete *rational* instances
of realistic size (n ~ 6..10, d ~ 2..3) in exact arithmetic (``fractions.Fraction``), with no
floating tolerance at all. Hypothesis draws the instances (``tests/theory/rational_strategies.py``);
this module only computes, so it stays SymPy/stdlib-only and usable outside pytest.

Matrices are lists of lists of ``Fraction``; a "block field" ``O`` is an ``n x n`` list of ``d x d``
matrices; vectors are token-major lists of length ``n*d``. Floats are refused
(:class:`~theory.errors.NotExactError`): a certificate over a float is no certificate.

Rational orthogonal matrices come from the Cayley transform ``(I - S)^{-1}(I + S)`` of rational skew
``S`` and from Householder reflections ``I - 2uu^T/u^Tu`` of rational ``u``.

Every ``certify_*`` returns a :class:`~theory.symbolic.Derivation` whose checks hold exact residuals
(lists of Fractions): ``hypothesis: ...`` checks confirm the drawn instance satisfies the theorem's
hypotheses exactly, the others are the conclusions.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from numbers import Rational

from .errors import NotExactError
from .symbolic import Derivation

Mat = list[list[Fraction]]


# ----------------------------------------------------------------------------------------------
# exact linear algebra on Fractions
# ----------------------------------------------------------------------------------------------
def q(v, argument: str = "value") -> Fraction:
    """Exact rational from int / Fraction / sympy Rational; floats raise NotExactError."""
    if isinstance(v, bool):
        raise NotExactError(argument, v)
    if isinstance(v, Fraction):
        return v
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, Rational):  # numbers.Rational (sympy Rational registers as one too)
        return Fraction(int(v.numerator), int(v.denominator))
    try:  # sympy.Rational without ABC registration
        import sympy as sp

        if isinstance(v, sp.Rational):
            return Fraction(int(v.p), int(v.q))
    except Exception:  # pragma: no cover
        pass
    raise NotExactError(argument, v)


def qmat(M, argument: str = "matrix") -> Mat:
    rows = [list(r) for r in M]
    width = {len(r) for r in rows}
    if len(width) > 1:
        raise ValueError(f"{argument}: ragged rows (lengths {sorted(width)})")
    return [[q(x, argument) for x in r] for r in rows]


def eye(d: int) -> Mat:
    return [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]


def zeros(r: int, c: int) -> Mat:
    return [[Fraction(0)] * c for _ in range(r)]


def matmul(A: Mat, B: Mat) -> Mat:
    Bt = list(zip(*B))
    return [[sum((a * b for a, b in zip(row, col)), Fraction(0)) for col in Bt] for row in A]


def matvec(A: Mat, x: Sequence[Fraction]) -> list[Fraction]:
    return [sum((a * b for a, b in zip(row, x)), Fraction(0)) for row in A]


def transpose(A: Mat) -> Mat:
    return [list(r) for r in zip(*A)]


def add(A: Mat, B: Mat, s=1) -> Mat:
    return [[a + s * b for a, b in zip(ra, rb)] for ra, rb in zip(A, B)]


def scale(c, A: Mat) -> Mat:
    return [[c * a for a in r] for r in A]


def inverse(A: Mat) -> Mat:
    """Exact Gauss-Jordan inverse; ``ZeroDivisionError`` if singular."""
    n = len(A)
    M = [list(r) + e for r, e in zip(A, eye(n))]
    for c in range(n):
        p = next((r for r in range(c, n) if M[r][c] != 0), None)
        if p is None:
            raise ZeroDivisionError("singular matrix")
        M[c], M[p] = M[p], M[c]
        piv = M[c][c]
        M[c] = [v / piv for v in M[c]]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return [r[n:] for r in M]


def cayley(S: Mat) -> Mat:
    """``(I - S)^{-1}(I + S)``: rational orthogonal (det +1) for rational skew ``S``."""
    d = len(S)
    return matmul(inverse(add(eye(d), S, -1)), add(eye(d), S))


def householder(u: Sequence[Fraction]) -> Mat:
    """``I - 2 u u^T / (u^T u)``: rational symmetric orthogonal involution (det -1)."""
    uu = sum(x * x for x in u)
    d = len(u)
    return [[Fraction(int(i == j)) - 2 * u[i] * u[j] / uu for j in range(d)] for i in range(d)]


def kron(A: Mat, T: Mat) -> Mat:
    """Token-major ``kron(A, T)``: block ``(i, j)`` is ``A[i][j] * T``."""
    n, d = len(A), len(T)
    return [[A[r // d][c // d] * T[r % d][c % d] for c in range(n * d)] for r in range(n * d)]


def stack(X: Mat) -> list[Fraction]:
    """Token-major ``vec(X^T)``."""
    return [v for row in X for v in row]


def walk_apply(P: Mat, O, x: Sequence[Fraction], d: int) -> list[Fraction]:
    """``(W x)_i = sum_j P_ij O_ij x_j`` (token-major ``x``), without forming ``W``."""
    n = len(P)
    out = []
    for i in range(n):
        acc = [Fraction(0)] * d
        for j in range(n):
            if P[i][j] == 0:
                continue
            xj = x[j * d : (j + 1) * d]
            Oij = O[i][j]
            for a in range(d):
                acc[a] += P[i][j] * sum((Oij[a][b] * xj[b] for b in range(d)), Fraction(0))
        out.extend(acc)
    return out


def _flat(M) -> list[Fraction]:
    return [v for r in M for v in r]


def max_abs(residual) -> Fraction:
    """Largest |entry| of a (nested) residual; exactly 0 iff the certificate holds."""
    if isinstance(residual, (list, tuple)):
        return max((max_abs(r) for r in residual), default=Fraction(0))
    return abs(Fraction(residual))


def _dot(a, b):
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def pi_inner_product(x, y, pi, d):
    return sum((pi[i] * _dot(x[i * d : (i + 1) * d], y[i * d : (i + 1) * d]) for i in range(len(pi))), Fraction(0))


def _dirichlet(P, O, pi, x, d, sign=-1):
    n = len(P)
    tot = Fraction(0)
    for i in range(n):
        xi = x[i * d : (i + 1) * d]
        for j in range(n):
            if P[i][j] == 0:
                continue
            Ox = matvec(O[i][j], x[j * d : (j + 1) * d])
            v = [a + sign * b for a, b in zip(xi, Ox)]
            tot += pi[i] * P[i][j] * _dot(v, v)
    return tot / 2


def reversible_from_weights(w: Mat) -> tuple[Mat, list[Fraction]]:
    """Symmetric nonnegative weights (positive row sums) -> ``(P, pi)``: ``P_ij = w_ij / deg_i``,
    ``pi_i = deg_i / sum(deg)``; reversible by construction."""
    n = len(w)
    deg = [sum(r, Fraction(0)) for r in w]
    if any(g <= 0 for g in deg):
        raise ValueError("w: every row needs a positive sum")
    tot = sum(deg)
    return [[w[i][j] / deg[i] for j in range(n)] for i in range(n)], [g / tot for g in deg]


# ----------------------------------------------------------------------------------------------
# certificates
# ----------------------------------------------------------------------------------------------
def certify_t1(A, T, X) -> Derivation:
    """T1 on a rational instance: ``stack(A X T^T) = kron(A, T) stack(X)`` (dense kron, token-major)
    and the same via the connection walk with ``O_ij = T``."""
    A, T, X = qmat(A, "A"), qmat(T, "T"), qmat(X, "X")
    n, d = len(A), len(T)
    D = Derivation("T1", {"n": n, "d": d})
    y = stack(matmul(matmul(A, X), transpose(T)))
    x = stack(X)
    D.add("SHA(X) = kron(A,T) x", [a - b for a, b in zip(y, matvec(kron(A, T), x))])
    D.add("SHA(X) = walk(P=A, O=T) x", [a - b for a, b in zip(y, walk_apply(A, [[T] * n] * n, x, d))])
    return D


def certify_t2(As, Ts, X) -> Derivation:
    """T2 on rational heads: ``P = mean A^h``, convex gates, ``O_ij = H sum_h g^h_ij T_h``:
    ``P_ij O_ij = B_ij`` blockwise, and ``MHA(X) = walk(P, O) x``."""
    As = [qmat(A, f"As[{h}]") for h, A in enumerate(As)]
    Ts = [qmat(T, f"Ts[{h}]") for h, T in enumerate(Ts)]
    X = qmat(X, "X")
    H, n, d = len(As), len(As[0]), len(Ts[0])
    D = Derivation("T2", {"n": n, "d": d, "heads": H})
    D.add("hypothesis: every A^h row-stochastic", [sum(r) - 1 for A in As for r in A])
    P = [[sum(A[i][j] for A in As) / H for j in range(n)] for i in range(n)]
    D.add("P = mean_h A^h row-stochastic", [sum(r) - 1 for r in P])
    res_g: list = []
    res_b: list = []
    O: list[list] = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            tot = sum(A[i][j] for A in As)
            B = zeros(d, d)
            for A, T in zip(As, Ts):
                B = add(B, scale(A[i][j], T))
            if tot == 0:  # off support: O_ij arbitrary (0/0); B_ij = 0 must hold
                res_b.append(_flat(B))
                O[i][j] = zeros(d, d)
                continue
            g = [A[i][j] / tot for A in As]
            res_g.append(sum(g) - 1)
            Oij = zeros(d, d)
            for gh, T in zip(g, Ts):
                Oij = add(Oij, scale(H * gh, T))
            O[i][j] = Oij
            res_b.append(_flat(add(scale(P[i][j], Oij), B, -1)))
    D.add("gates convex: sum_h g^h_ij = 1", res_g)
    D.add("P_ij O_ij = B_ij for every edge", res_b)
    y = [Fraction(0)] * (n * d)
    for A, T in zip(As, Ts):
        y = [a + b for a, b in zip(y, stack(matmul(matmul(A, X), transpose(T))))]
    D.add("MHA(X) = walk(P, O) x", [a - b for a, b in zip(y, walk_apply(P, O, stack(X), d))])
    return D


def certify_t3(w, O, x, s=None) -> Derivation:
    """T3 on a rational instance: reversible ``P`` from symmetric weights ``w`` and metric-
    compatible rational orthogonal transports ``O`` (checked exactly as hypotheses): pi-self-
    adjointness (blockwise ``pi_i P_ij O_ij = (pi_j P_ji O_ji)^T``), the Dirichlet identity and the
    ``[0,2]`` identity at ``x``; with a rational ``s``: the scaled identity with ``(1-s^2)/2 ||x||^2_pi``."""
    w = qmat(w, "w")
    n = len(w)
    O = [[qmat(O[i][j], f"O[{i}][{j}]") for j in range(n)] for i in range(n)]
    x = [q(v, "x") for v in x]
    d = len(O[0][0])
    P, pi = reversible_from_weights(w)
    D = Derivation("T3", {"n": n, "d": d})
    D.add("hypothesis: w symmetric", [w[i][j] - w[j][i] for i in range(n) for j in range(n)])
    D.add("hypothesis (a): P row-stochastic", [sum(r) - 1 for r in P])
    D.add("hypothesis (b): detailed balance", [pi[i] * P[i][j] - pi[j] * P[j][i] for i in range(n) for j in range(n)])
    D.add(
        "hypothesis (c): O_ij orthogonal",
        [_flat(add(matmul(transpose(O[i][j]), O[i][j]), eye(d), -1)) for i in range(n) for j in range(n)],
    )
    D.add(
        "hypothesis (c): O_ji = O_ij^T",
        [_flat(add(O[j][i], transpose(O[i][j]), -1)) for i in range(n) for j in range(n)],
    )
    D.add("pi stationary", [sum(pi[i] * P[i][j] for i in range(n)) - pi[j] for j in range(n)])
    D.add(
        "1. pi-self-adjoint: pi_i P_ij O_ij = (pi_j P_ji O_ji)^T",
        [
            _flat(add(scale(pi[i] * P[i][j], O[i][j]), transpose(scale(pi[j] * P[j][i], O[j][i])), -1))
            for i in range(n)
            for j in range(n)
        ],
    )
    Wx = walk_apply(P, O, x, d)
    Dx = [a - b for a, b in zip(x, Wx)]
    D.add("3. Dirichlet identity", [pi_inner_product(x, Dx, pi, d) - _dirichlet(P, O, pi, x, d)])
    D.add(
        "2. <x,(2I-Delta)x>_pi = 1/2 sum pi_i P_ij |x_i + O_ij x_j|^2",
        [pi_inner_product(x, [a + b for a, b in zip(x, Wx)], pi, d) - _dirichlet(P, O, pi, x, d, sign=+1)],
    )
    if s is not None:
        s = q(s, "s")
        Os = [[scale(s, O[i][j]) for j in range(n)] for i in range(n)]
        Dsx = [a - b for a, b in zip(x, walk_apply(P, Os, x, d))]
        D.add(
            "scaled O = sQ: Dirichlet + (1-s^2)/2 |x|^2_pi",
            [
                pi_inner_product(x, Dsx, pi, d)
                - _dirichlet(P, Os, pi, x, d)
                - (1 - s * s) / 2 * pi_inner_product(x, x, pi, d)
            ],
        )
    return D


def certify_t3_flat(w, R, v) -> Derivation:
    """T3 items 4-5 on a rational flat connection ``O_ij = R_i R_j^T`` (rational orthogonal
    ``R_i``): the parallel section ``x_i = R_i v`` is in ``ker Delta`` exactly, and
    ``Delta = R((I - P) (x) I)R^T`` applied to a vector agrees (checked on ``x`` itself and on
    ``R (e (x) v)``)."""
    w = qmat(w, "w")
    n = len(w)
    R = [qmat(r, f"R[{i}]") for i, r in enumerate(R)]
    v = [q(c, "v") for c in v]
    d = len(v)
    P, _pi = reversible_from_weights(w)
    D = Derivation("T3", {"n": n, "d": d})
    D.add("hypothesis: R_i orthogonal", [_flat(add(matmul(transpose(r), r), eye(d), -1)) for r in R])
    O = [[matmul(R[i], transpose(R[j])) for j in range(n)] for i in range(n)]
    sec = [c for i in range(n) for c in matvec(R[i], v)]
    Wsec = walk_apply(P, O, sec, d)
    D.add("4. parallel section x_i = R_i v is in ker Delta", [a - b for a, b in zip(sec, Wsec)])
    # 5. Delta = R((I-P) (x) I)R^T on a generic vector z_i = R_i (i+1) v  (not a section)
    z = [c for i in range(n) for c in matvec(R[i], [(i + 1) * vv for vv in v])]
    Dz = [a - b for a, b in zip(z, walk_apply(P, O, z, d))]
    Rtz = [c for i in range(n) for c in matvec(transpose(R[i]), z[i * d : (i + 1) * d])]
    inner = [a - b for a, b in zip(Rtz, walk_apply(P, [[eye(d)] * n] * n, Rtz, d))]
    Rinner = [c for i in range(n) for c in matvec(R[i], inner[i * d : (i + 1) * d])]
    D.add("5. Delta z = R((I-P) (x) I) R^T z", [a - b for a, b in zip(Dz, Rinner)])
    return D


def certify_t4(K, query_bias=None) -> Derivation:
    """T4 on a positive rational kernel ``K`` (``K_ij`` plays ``exp(S_ij)``): ``A = D^{-1}K``.

    Always: every triangle ratio of A equals that of K (the row normalisers cancel: the
    exponentiated Kolmogorov identity), and the **Kolmogorov criterion** is decided exactly: A is
    reversible iff every triangle ratio through token 0 equals 1 (full support: these triangles
    span the cycle space). Its two sides are checked against each other: the only candidate
    ``pi_0 = 1``, ``pi_j = A_0j / A_j0`` (forced by detailed balance on the edges at 0) balances A
    exactly when the criterion holds (a positive check), and leaves a nonzero residual when it fails
    (a necessity witness, ``expect_zero=False``). ``D.facts["reversible"]`` records the decision.
    If K is symmetric: detailed balance with ``pi_i ∝ D_ii``, stationarity, every triangle ratio
    = 1. With positive rational ``query_bias`` ``b_j`` (``e^{beta_j}``) and symmetric K:
    ``A' = D'^{-1} K diag(b)`` is reversible with ``pi_i ∝ b_i D'_ii``."""
    K = qmat(K, "K")
    n = len(K)
    if any(v <= 0 for r in K for v in r):
        raise ValueError("K: entries must be positive (full support)")
    Dg = [sum(r) for r in K]
    A = [[K[i][j] / Dg[i] for j in range(n)] for i in range(n)]
    D = Derivation("T4", {"n": n})
    tri = [(i, j, k) for i in range(n) for j in range(i + 1, n) for k in range(j + 1, n)]
    D.add(
        "triangle ratio of A = triangle ratio of K (normalisers cancel)",
        [
            A[i][j] * A[j][k] * A[k][i] / (A[i][k] * A[k][j] * A[j][i])
            - K[i][j] * K[j][k] * K[k][i] / (K[i][k] * K[k][j] * K[j][i])
            for i, j, k in tri
        ],
    )
    through0 = [
        A[0][j] * A[j][k] * A[k][0] / (A[0][k] * A[k][j] * A[j][0]) - 1 for j in range(1, n) for k in range(j + 1, n)
    ]
    reversible = all(r == 0 for r in through0)
    pi = [Fraction(1)] + [A[0][j] / A[j][0] for j in range(1, n)]
    db = [pi[i] * A[i][j] - pi[j] * A[j][i] for i in range(n) for j in range(n)]
    D.facts["reversible"] = reversible
    if reversible:
        D.add("Kolmogorov criterion holds (every triangle ratio through 0 is 1): pi_j = A_0j/A_j0 balances A", db)
        D.add(
            "Kolmogorov criterion holds: that pi is stationary",
            [sum(pi[i] * A[i][j] for i in range(n)) - pi[j] for j in range(n)],
        )
    else:
        D.add("Kolmogorov criterion fails: a triangle ratio through 0 differs from 1", through0, expect_zero=False)
        D.add(
            "Kolmogorov criterion fails: the only candidate pi_j = A_0j/A_j0 does not balance A", db, expect_zero=False
        )
    symmetric = all(K[i][j] == K[j][i] for i in range(n) for j in range(n))
    if symmetric:
        D.add(
            "symmetric K: detailed balance with pi_i = D_ii",
            [Dg[i] * A[i][j] - Dg[j] * A[j][i] for i in range(n) for j in range(n)],
        )
        D.add("symmetric K: pi = D stationary", [sum(Dg[i] * A[i][j] for i in range(n)) - Dg[j] for j in range(n)])
        D.add(
            "symmetric K: Kolmogorov, every triangle ratio = 1",
            [A[i][j] * A[j][k] * A[k][i] - A[i][k] * A[k][j] * A[j][i] for i, j, k in tri],
        )
    if query_bias is not None:
        b = [q(v, "query_bias") for v in query_bias]
        if any(v <= 0 for v in b):
            raise ValueError("query_bias: entries are e^{beta_j} and must be positive")
        Kb = [[K[i][j] * b[j] for j in range(n)] for i in range(n)]
        Db = [sum(r) for r in Kb]
        Ab = [[Kb[i][j] / Db[i] for j in range(n)] for i in range(n)]
        if symmetric:
            pib = [b[i] * Db[i] for i in range(n)]
            D.add(
                "query bias: detailed balance with pi_i = b_i D'_ii",
                [pib[i] * Ab[i][j] - pib[j] * Ab[j][i] for i in range(n) for j in range(n)],
            )
    return D


def rational_complement(u: Sequence[Fraction]) -> list[list[Fraction]]:
    """A rational basis of ``u^perp`` (exact nullspace of ``u^T``)."""
    d = len(u)
    p = next(k for k in range(d) if u[k] != 0)
    basis = []
    for k in range(d):
        if k == p:
            continue
        e = [Fraction(0)] * d
        e[k] = Fraction(1)
        e[p] = -u[k] / u[p]
        basis.append(e)
    return basis


def certify_t5(w, u, y) -> Derivation:
    """T5 on a rational instance: reversible ``A`` from symmetric ``w``, ``T = I - 2 uu^T/u^Tu``.
    Checks T is an orthogonal involution, ``Delta = I - kron(A, T)`` is pi-self-adjoint, and the
    spectral splitting ``Delta (y (x) f) = ((I - A) y) (x) f`` for ``f in Fix T = u^perp``,
    ``Delta (y (x) u) = ((I + A) y) (x) u`` (together they span, so spec = {1-lambda} u {1+lambda})."""
    w = qmat(w, "w")
    u = [q(c, "u") for c in u]
    y = [q(c, "y") for c in y]
    n, d = len(w), len(u)
    A, pi = reversible_from_weights(w)
    T = householder(u)
    D = Derivation("T5", {"n": n, "d": d})
    D.add(
        "T orthogonal, symmetric, T^2 = I",
        [
            _flat(add(matmul(transpose(T), T), eye(d), -1)),
            _flat(add(T, transpose(T), -1)),
            _flat(add(matmul(T, T), eye(d), -1)),
        ],
    )
    D.add(
        "pi-self-adjoint: pi_i A_ij T = (pi_j A_ji T)^T",
        [
            _flat(add(scale(pi[i] * A[i][j], T), transpose(scale(pi[j] * A[j][i], T)), -1))
            for i in range(n)
            for j in range(n)
        ],
    )
    K = kron(A, T)
    Ay = matvec(A, y)

    def delta(v):
        return [a - b for a, b in zip(v, matvec(K, v))]

    res = []
    for f in rational_complement(u):
        v = [yi * fk for yi in y for fk in f]
        want = [(yi - ai) * fk for yi, ai in zip(y, Ay) for fk in f]
        res.append([a - b for a, b in zip(delta(v), want)])
    D.add("Delta (y (x) f) = ((I - A) y) (x) f on Fix T", res)
    v = [yi * uk for yi in y for uk in u]
    want = [(yi + ai) * uk for yi, ai in zip(y, Ay) for uk in u]
    D.add("Delta (y (x) u) = ((I + A) y) (x) u on the -1 eigenspace", [a - b for a, b in zip(delta(v), want)])
    D.add(
        "1 (x) Fix T is in ker Delta (A stochastic)",
        [delta([fk for _ in range(n) for fk in f]) for f in rational_complement(u)],
    )
    return D


def _cyc_mul(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    """Product in the group ring Q[Z_n] = Q[zeta]/(zeta^n - 1) (cyclic convolution)."""
    n = len(a)
    out = [Fraction(0)] * n
    for i, x in enumerate(a):
        if x == 0:
            continue
        for j, y in enumerate(b):
            out[(i + j) % n] += x * y
    return out


def certify_t6(kernels, Ts, v) -> Derivation:
    """T6 Fourier eigenpairs on rational circulant kernels ``a_h`` (length ``ring``), rational
    ``T_h`` and ``v``, for every ring-th root of unity at once: all arithmetic in
    ``Q[zeta]/(zeta^ring - 1)``. ``J = block(sum_h A0^h_ij T_h) - I`` with
    ``A0^h_ij = a_h((j - i) mod ring)``, ``phi(j) = zeta^j``:
    ``J (phi (x) v) = phi (x) (M - I) v`` with ``M = sum_h a^_h T_h``, ``a^ = sum_m a(m) zeta^m``."""
    ks = [[q(c, f"kernels[{h}]") for c in k] for h, k in enumerate(kernels)]
    Ts = [qmat(T, f"Ts[{h}]") for h, T in enumerate(Ts)]
    v = [q(c, "v") for c in v]
    ring, d, H = len(ks[0]), len(v), len(ks)
    D = Derivation("T6", {"ring": ring, "d": d, "heads": H})

    def mono(m):
        e = [Fraction(0)] * ring
        e[m % ring] = Fraction(1)
        return e

    Tv = [matvec(T, v) for T in Ts]
    res = []
    hats = [[k[m] for m in range(ring)] for k in ks]  # a^_h = sum_m a_h(m) zeta^m
    for i in range(ring):
        for a in range(d):
            lhs = [Fraction(0)] * ring  # (J (phi (x) v))_{i,a}
            for h in range(H):
                for j in range(ring):
                    c = ks[h][(j - i) % ring] * Tv[h][a]
                    if c:
                        lhs[j % ring] += c
            lhs[i % ring] -= v[a]
            rhs = [Fraction(0)] * ring  # phi_i ((M - I) v)_a
            Mv = [Fraction(0)] * ring
            for h in range(H):
                Mv = [x + y for x, y in zip(Mv, [c * Tv[h][a] for c in hats[h]])]
            Mv[0] -= v[a]
            rhs = _cyc_mul(mono(i), Mv)
            res.append([x - y for x, y in zip(lhs, rhs)])
    D.add("J (phi (x) v) = phi (x) (M(k) - I) v in Q[zeta]/(zeta^n - 1)", res)
    return D
