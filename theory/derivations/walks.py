"""Symbolic derivations of the lemmas L1-L4 and of T1-T2 (stacking, attention walks, sheaf
attention as a connection walk, gated multi-head walks and the T2 counterexample).

Re-exported by :mod:`theory.derivations`.
"""

from __future__ import annotations

import sympy as sp

from ..cases import T2_COUNTEREXAMPLE
from ..symbolic import (
    Derivation,
    block,
    block_matrix,
    cancel_all,
    dirichlet_form,
    expand_all,
    kron,
    pi_inner,
    reduce_circle,
    rotation,
    softmax_rows,
    stack_feature_major,
    stack_token_major,
    sylvester_resultant,
    symbol_matrix,
    symbol_vector,
    walk_matrix,
)
from .sizes import (
    sized,
    sized_symbol,
)


# ================================================================================================
# Lemmas
# ================================================================================================
@sized("L1", n=(1, 5), d=(1, 4))
def derive_l1(n: int = 3, d: int = 2) -> Derivation:
    """L1 (stacking): token-major ``vec((A X T^T)^T) = kron(A, T) vec(X^T)``; feature-major
    stacking turns it into ``kron(T, A)``. Generic ``A (n x n)``, ``T (d x d)``, ``X (n x d)``."""
    D = Derivation("L1", {"n": n, "d": d})
    A, T, X = symbol_matrix("a", n, n), symbol_matrix("t", d, d), symbol_matrix("x", n, d)
    Y = A * X * T.T
    D.add(
        "token-major: stack(A X T^T) = kron(A,T) stack(X)",
        expand_all(stack_token_major(Y) - kron(A, T) * stack_token_major(X)),
    )
    D.add(
        "feature-major: vec(A X T^T) = kron(T,A) vec(X)",
        expand_all(stack_feature_major(Y) - kron(T, A) * stack_feature_major(X)),
    )
    if n > 1 and d > 1:
        D.add(
            "mixing conventions is wrong: stack_tm(A X T^T) != kron(T,A) stack_tm(X)",
            expand_all(stack_token_major(Y) - kron(T, A) * stack_token_major(X)),
            expect_zero=False,
        )
    return D


@sized("L2", n=(2, 4), d=(1, 3))
def derive_l2(n: int = 3, d: int = 2) -> Derivation:
    """L2 (softmax rows): for ``A = softmax_rows(S(X))`` the rows sum to 1 and every directional
    derivative of a row sums to 0: ``sum_j dA_ij = 0``. Generic bilinear scores ``S = X M X^T``."""
    D = Derivation("L2", {"n": n, "d": d})
    X, M = symbol_matrix("x", n, d, real=True), symbol_matrix("m", d, d, real=True)
    A = softmax_rows(X * M * X.T)
    D.add("rows sum to 1", cancel_all(sp.Matrix([sum(A[i, j] for j in range(n)) - 1 for i in range(n)])))
    dA = [sum(sp.diff(A[0, j], X[a, b]) for j in range(n)) for a in range(n) for b in range(d)]
    D.add("sum_j d A_0j / d x_ab = 0", cancel_all(sp.Matrix(dA)))
    return D


@sized("L3", n=(2, 4), d=(1, 3))
def derive_l3(n: int = 3, d: int = 2) -> Derivation:
    """L3 (Dirichlet identity with a correction): if ``pi_i P_ij = pi_j P_ji`` (any positive pi,
    rows not necessarily stochastic, ``r_i = sum_j P_ij``) and every ``O_ij`` is orthogonal with
    ``O_ji = O_ij^T``, then
    ``<x, (I - W) x>_pi = 1/2 sum_ij pi_i P_ij ||x_i - O_ij x_j||^2 + sum_i pi_i (1 - r_i) ||x_i||^2``.
    Generic: ``P_ij = w_ij / pi_i`` with symmetric positive weights ``w``, SO(d) transports
    (d = 2: rotations by independent angles; d = 1, 3: O = +-1 / constant identity blocks)."""
    D = Derivation("L3", {"n": n, "d": d})
    pi = [sized_symbol(f"pi_{i}", positive=True) for i in range(n)]
    w = symbolic_symmetric_weights(n)
    P = sp.Matrix(n, n, lambda i, j: w[i][j] / pi[i])
    O, angles = symbolic_metric_transports(n, d)
    x = symbol_vector("x", n * d, real=True)
    W = walk_matrix(P, O)
    r = [sum(P[i, j] for j in range(n)) for i in range(n)]
    lhs = pi_inner(x, x - W * x, pi, d)
    corr = sum(pi[i] * (1 - r[i]) * (x[i * d : (i + 1) * d, :].T * x[i * d : (i + 1) * d, :])[0, 0] for i in range(n))
    D.add(
        "<x,(I-W)x>_pi = Dirichlet + sum_i pi_i (1-r_i)|x_i|^2",
        reduce_circle(lhs - dirichlet_form(P, O, pi, x, d) - corr, angles),
    )
    D.add(
        "without the correction term the identity fails when rows do not sum to 1",
        reduce_circle(lhs - dirichlet_form(P, O, pi, x, d), angles),
        expect_zero=False,
    )
    return D


@sized("L4", n=(1, 3), d=(1, 2))
def derive_l4(n: int = 3, d: int = 2) -> Derivation:
    """L4 (Kronecker spectrum): ``det(z I - kron(A, T)) = Res_mu(p_T(mu), mu^n p_A(z/mu))
    = prod_{i,k} (z - lambda_i mu_k)`` with algebraic multiplicities, for fully generic square
    ``A (n x n)``, ``T (d x d)`` (the resultant is the product over the roots of ``p_T``)."""
    D = Derivation("L4", {"n": n, "d": d})
    A, T = symbol_matrix("a", n, n), symbol_matrix("t", d, d)
    z, mu = sp.symbols("z mu")
    pK = kron(A, T).charpoly(z).as_expr()
    pA = A.charpoly(z).as_expr()
    q = sp.expand(mu**n * pA.subs(z, z / mu))
    D.add(
        "charpoly(kron(A,T))(z) = Res_mu(p_T(mu), mu^n p_A(z/mu))",
        sp.expand(pK - sylvester_resultant(T.charpoly(mu).as_expr(), q, mu)),
    )
    return D


def symbolic_symmetric_weights(n: int):
    """Symmetric positive weights ``w_ij = w_ji`` (diagonal included)."""
    w = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            w[i][j] = w[j][i] = sized_symbol(f"w_{i}{j}", positive=True)
    return w


def symbolic_metric_transports(n: int, d: int, scale=1):
    """Metric-compatible transports: ``O_ij`` orthogonal, ``O_ji = O_ij^T``, ``O_ii`` symmetric
    orthogonal. d = 2: ``O_ij = R(theta_ij)`` (i < j, independent angles) and the reflection
    ``O_ii = [[cos phi_i, sin phi_i], [sin phi_i, -cos phi_i]]``; other d: ``O_ij = I`` off the
    diagonal and ``O_ii = +-I``. Returns ``(O, angles)`` with every ``O`` multiplied by ``scale``."""
    O = [[None] * n for _ in range(n)]
    angles = []
    for i in range(n):
        for j in range(i, n):
            if d == 2:
                if i == j:
                    phi = sized_symbol(f"phi_{i}", real=True)
                    angles.append(phi)
                    Q = sp.Matrix([[sp.cos(phi), sp.sin(phi)], [sp.sin(phi), -sp.cos(phi)]])
                    O[i][i] = scale * Q
                else:
                    th = sized_symbol(f"theta_{i}{j}", real=True)
                    angles.append(th)
                    O[i][j] = scale * rotation(th)
                    O[j][i] = scale * rotation(th).T
            else:
                Q = sp.eye(d) if i != j else -sp.eye(d) if (i % 2) else sp.eye(d)
                O[i][j] = scale * Q
                O[j][i] = scale * Q.T
    return O, angles


# ================================================================================================
# T1
# ================================================================================================
@sized("T1", n=(1, 4), d=(1, 3))
def derive_t1(n: int = 3, d: int = 2) -> Derivation:
    """T1: ``SHA(X) = A X T^T`` stacked token-major is ``kron(A, T) x`` — the connection walk with
    ``P = A`` and ``O_ij = T`` on every edge. Fully generic symbols (A not even stochastic)."""
    D = Derivation("T1", {"n": n, "d": d})
    A, T, X = symbol_matrix("a", n, n), symbol_matrix("t", d, d), symbol_matrix("x", n, d)
    x = stack_token_major(X)
    y = stack_token_major(A * X * T.T)
    K = kron(A, T)
    D.add("SHA(X) = kron(A,T) x (token-major)", expand_all(y - K * x))
    const = walk_matrix(A, [[T] * n for _ in range(n)])
    D.add("kron(A,T) = walk with P = A, O_ij = T", expand_all(K - const))
    D.add(
        "per token: y_i = sum_j A_ij T x_j",
        expand_all(
            sp.Matrix.vstack(
                *[
                    (A * X * T.T)[i, :].T - sum((A[i, j] * T * X[j, :].T for j in range(n)), sp.zeros(d, 1))
                    for i in range(n)
                ]
            )
        ),
    )
    if n > 1 and d > 1:
        D.add(
            "feature-major kron(T,A) applied to the token-major x is NOT SHA",
            expand_all(y - kron(T, A) * x),
            expect_zero=False,
        )
    return D


# ================================================================================================
# T2
# ================================================================================================
def softmax_like(name: str, n: int):
    """Generic row-stochastic matrix with positive entries ``e_ij / sum_k e_ik``."""
    E = symbol_matrix(name, n, n, positive=True)
    return sp.Matrix(n, n, lambda i, j: E[i, j] / sum(E[i, k] for k in range(n)))


def head_blocks(As, Ts) -> sp.Matrix:
    """``block(B)`` with ``B_ij = sum_h A^h_ij T_h`` (T2's definition of the blocks)."""
    H, n, d = len(As), As[0].shape[0], Ts[0].shape[0]
    return block_matrix(
        [[sum((As[h][i, j] * Ts[h] for h in range(H)), sp.zeros(d, d)) for j in range(n)] for i in range(n)]
    )


def gate_matrices(As):
    """``g[i][j][h] = A^h_ij / sum_k A^k_ij`` (T2's gates)."""
    H, n = len(As), As[0].shape[0]
    return [[[As[h][i, j] / sum(As[k][i, j] for k in range(H)) for h in range(H)] for j in range(n)] for i in range(n)]


@sized("T2", n=(1, 3), d=(1, 3), heads=(1, 3))
def derive_t2(n: int = 2, d: int = 2, heads: int = 2) -> Derivation:
    """T2: MHA is one edge-dependent connection walk. Blocks ``B_ij = sum_h A^h_ij T_h``;
    ``P = mean_h A^h``, gates ``g^h_ij = A^h_ij / sum_k A^k_ij``, ``O_ij = H sum_h g^h_ij T_h`` give
    ``P_ij O_ij = B_ij``; gauge freedom; constant-transport criterion; the counterexample."""
    H = heads
    D = Derivation("T2", {"n": n, "d": d, "heads": H})
    As = [softmax_like(f"e{h}", n) for h in range(H)]
    Ts = [symbol_matrix(f"t{h}", d, d) for h in range(H)]
    if H >= 2:  # the derivation covers distinct heads: a shared attention or transport fails here
        D.add("heads are distinct: A^1 - A^2 != 0", As[0] - As[1], expect_zero=False)
        D.add("heads are distinct: T_1 - T_2 != 0", Ts[0] - Ts[1], expect_zero=False)
    X = symbol_matrix("x", n, d)
    x = stack_token_major(X)
    B = head_blocks(As, Ts)
    mha = sum((As[h] * X * Ts[h].T for h in range(H)), sp.zeros(n, d))
    D.add("MHA(X) = block(B) x, B_ij = sum_h A^h_ij T_h", cancel_all(stack_token_major(mha) - B * x))
    P = sum(As, sp.zeros(n, n)) / H
    D.add("P = mean_h A^h is row-stochastic", cancel_all(P * sp.ones(n, 1) - sp.ones(n, 1)))
    gates = gate_matrices(As)
    D.add(
        "gates are convex: sum_h g^h_ij = 1",
        cancel_all(sp.Matrix([sum(gates[i][j]) - 1 for i in range(n) for j in range(n)])),
    )
    O = [[H * sum((gates[i][j][h] * Ts[h] for h in range(H)), sp.zeros(d, d)) for j in range(n)] for i in range(n)]
    D.add("block(P, O) = B exactly", cancel_all(walk_matrix(P, O) - B))
    # gauge: any row-stochastic P' > 0 with O' = B / P'
    Pp = softmax_like("q", n)
    Op = [[block(B, i, j, d) / Pp[i, j] for j in range(n)] for i in range(n)]
    D.add("gauge: block(P', B/P') = B for any positive row-stochastic P'", cancel_all(walk_matrix(Pp, Op) - B))
    if H >= 2:
        # the special cases, substituted into the generic definitions of B, P and O above
        E = [symbol_matrix(f"e{h}", n, n, positive=True) for h in range(H)]
        shareA = {E[h][i, j]: E[0][i, j] for h in range(1, H) for i in range(n) for j in range(n)}
        T_of = [symbol_matrix(f"t{h}", d, d) for h in range(H)]
        cancel = {T_of[1][a, b]: -T_of[0][a, b] for a in range(d) for b in range(d)}
        cancel.update({T_of[h][a, b]: 0 for h in range(2, H) for a in range(d) for b in range(d)})
        cancel.update({E[1][i, j]: E[0][i, j] for i in range(n) for j in range(n)})
        # cancelling heads: T_2 = -T_1, A^1 = A^2 (other heads switched off) => B = 0 while P = A^1 > 0
        D.add("cancelling heads (T_2=-T_1, A^1=A^2): B = 0", cancel_all(B.xreplace(cancel)))
        D.add(
            "cancelling heads: P = (A^1 + A^2)/H stays positive (equals 2A^1/H)",
            cancel_all(P.xreplace(cancel) - 2 * As[0] / H)
            if H == 2
            else cancel_all(P.xreplace(cancel) - (2 * As[0] + sum(As[2:], sp.zeros(n, n))) / H),
        )
        # shared A (A^h = A^1 for all h) and shared T (T_h = T_1 for all h) in the gates formula
        TS = sum(Ts, sp.zeros(d, d))
        Oblock = block_matrix(O)
        D.add(
            "shared A across heads: O_ij = T_Sigma", cancel_all(Oblock.xreplace(shareA) - block_matrix([[TS] * n] * n))
        )
        shareT = {T_of[h][a, b]: T_of[0][a, b] for h in range(1, H) for a in range(d) for b in range(d)}
        D.add(
            "shared T across heads: O_ij = H T",
            cancel_all(Oblock.xreplace(shareT) - H * block_matrix([[Ts[0]] * n] * n)),
        )
        # constant-transport criterion with linearly independent generic T_h: solve
        # sum_h alpha_h T_h = kappa T_Sigma for (alpha, kappa): only alpha_h = kappa for all h.
        if d >= 2:
            alphas = sp.symbols(f"alpha0:{H}")
            kappa = sp.Symbol("kappa")
            eqs = list(sum((alphas[h] * Ts[h] for h in range(H)), sp.zeros(d, d)) - kappa * TS)
            sol = sp.linsolve(eqs, [*alphas, kappa])
            (tup,) = list(sol)
            D.add(
                "constant transport with independent T_h forces A^1_ij = ... = A^H_ij",
                sp.Matrix([sp.simplify(a - tup[-1]) for a in tup[:-1]]),
                detail=f"solution set {sp.sstr(sol)}",
            )
    # the counterexample of THEOREMS.md (exact numbers)
    D.checks.extend(t2_counterexample().checks)
    return D


def to_rational(v):
    return sp.Rational(str(v))


def rational_matrix(rows) -> sp.Matrix:
    return sp.Matrix([[to_rational(v) for v in r] for r in rows])


def t2_counterexample(data: dict | None = None) -> Derivation:
    """The n=2, d=2, H=2 counterexample of :data:`theory.cases.T2_COUNTEREXAMPLE`, from the
    definitions: the blocks of the MHA operator ``x -> stack(sum_h A^h X T_h^T)`` (its Jacobian,
    token-major) are compared with the stated ``B_11``, ``B_12``; their linear independence is an
    exact rank; the nearest-Kronecker miss ``sqrt(trace(R R^T) - lambda_max(R R^T))`` (Van Loan
    rearrangement ``R``, rows ``vec(B_ij)``) equals the stated closed form exactly, and its rounding
    to the stated number of decimals is a *numeric* step with that precision."""
    data = T2_COUNTEREXAMPLE if data is None else data
    D = Derivation("T2", {"n": 2, "d": 2, "heads": 2})
    A1, A2, T1, T2 = (rational_matrix(data[k]) for k in ("A1", "A2", "T1", "T2"))
    X = symbol_matrix("x", 2, 2)
    mha = A1 * X * T1.T + A2 * X * T2.T
    Op = stack_token_major(mha).jacobian(list(stack_token_major(X)))
    Bs = [[Op[2 * i : 2 * i + 2, 2 * j : 2 * j + 2] for j in range(2)] for i in range(2)]
    D.add("counterexample: B_11 of the MHA operator is the stated matrix", Bs[0][0] - rational_matrix(data["B11"]))
    D.add("counterexample: B_12 of the MHA operator is the stated matrix", Bs[0][1] - rational_matrix(data["B12"]))
    V = sp.Matrix.hstack(Bs[0][0].reshape(4, 1), Bs[0][1].reshape(4, 1))
    D.add(
        "counterexample: B_11, B_12 linearly independent (rank 2)", sp.Integer(V.rank() - 2), detail="exact rank over Q"
    )
    Rm = sp.Matrix([list(Bs[i][j].reshape(1, 4)) for i in range(2) for j in range(2)])
    G = Rm * Rm.T
    lam_max = max(G.eigenvals(), key=lambda e: float(e))
    miss2 = sp.nsimplify(G.trace() - lam_max)
    stated = sp.sympify(data["miss_exact"])
    D.add(
        "counterexample: nearest Kronecker product misses by the stated closed form (squares agree, both >= 0)",
        sp.radsimp(sp.expand(miss2 - stated**2)),
        detail=f"miss^2 = {sp.sstr(miss2)}",
    )
    digits = int(data["digits"])
    D.add_numeric(
        f"counterexample: nearest Kronecker product misses by {data['miss']} ({digits} decimals)",
        float(sp.sqrt(miss2).evalf(30)),
        float(data["miss"]),
        0.5 * 10.0 ** (-digits),
        detail=f"miss = {float(sp.sqrt(miss2).evalf(30)):.9f}",
    )
    return D
