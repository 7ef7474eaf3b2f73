"""Symbolic derivations of T3-T6 (connection Laplacian self-adjointness, spectrum and Dirichlet
form with their counterexamples; softmax patterns; sheaf Laplacian spectrum; ring Fourier symbols).

Re-exported by :mod:`theory.derivations`.
"""

from __future__ import annotations

import sympy as sp

from ..cases import T3_INVERSE_TRANSPORTS, T3_WITNESS_FACTS
from ..formulas import c as _c
from ..formulas.patterns import MOVED
from ..formulas.spectral import xstar_
from ..symbolic import (
    Derivation,
    at_rational_point,
    block_matrix,
    cancel_all,
    dirichlet_form,
    expand_all,
    householder,
    kron,
    numerators,
    pi_inner,
    reduce_circle,
    reduce_root_of_unity,
    rotation,
    softmax_rows,
    symbol_matrix,
    symbol_vector,
    walk_matrix,
)
from .sizes import (
    sized,
    sized_symbol,
)
from .walks import (
    rational_matrix,
    symbolic_metric_transports,
    symbolic_symmetric_weights,
    to_rational,
)


# ================================================================================================
# T3
# ================================================================================================
@sized("T3", n=(2, 3), d=(1, 2))
def derive_t3(n: int = 3, d: int = 2, counterexamples: bool = True) -> Derivation:
    """T3: with reversible stochastic ``P_ij = w_ij / deg_i`` (symmetric positive weights,
    ``pi_i = deg_i / sum deg``) and metric-compatible SO(2) transports ``O_ij = R(theta_ij)``,
    ``O_ji = O_ij^T`` (diagonal: reflections): Delta = I - W is pi-self-adjoint, the Dirichlet
    identity holds exactly, ``<x,(2I - Delta) x>_pi = 1/2 sum pi_i P_ij ||x_i + O_ij x_j||^2``
    (so spec in [0,2]), the scaled version gains ``(1 - s^2)/2 ||x||^2_pi``, and the flat
    connection ``O_ij = R_i R_j^T`` gives ``Delta = R((I-P) (x) I)R^T`` with parallel sections in the
    kernel. Then (``counterexamples=True``) every necessity counterexample of THEOREMS.md is evaluated
    exactly."""
    D = Derivation("T3", {"n": n, "d": d})
    w = symbolic_symmetric_weights(n)
    deg = [sum(w[i][j] for j in range(n)) for i in range(n)]
    tot = sum(deg)
    pi = [deg[i] / tot for i in range(n)]
    P = sp.Matrix(n, n, lambda i, j: w[i][j] / deg[i])
    D.add("(a) P row-stochastic", cancel_all(P * sp.ones(n, 1) - sp.ones(n, 1)))
    D.add(
        "(b) detailed balance pi_i P_ij = pi_j P_ji",
        cancel_all(sp.Matrix(n, n, lambda i, j: pi[i] * P[i, j] - pi[j] * P[j, i])),
    )
    D.add("pi stationary: pi P = pi", cancel_all(sp.Matrix([pi]) * P - sp.Matrix([pi])))
    O, angles = symbolic_metric_transports(n, d)
    D.add(
        "(c) O_ij orthogonal",
        reduce_circle(sp.Matrix.vstack(*[O[i][j].T * O[i][j] - sp.eye(d) for i in range(n) for j in range(n)]), angles),
    )
    W = walk_matrix(P, O)
    Delta = sp.eye(n * d) - W
    Pi = kron(sp.diag(*pi), sp.eye(d))
    S = Pi * Delta
    D.add("1. Delta is pi-self-adjoint: (diag pi (x) I) Delta symmetric", reduce_circle(S - S.T, angles))
    x = symbol_vector("x", n * d, real=True)
    lhs = pi_inner(x, Delta * x, pi, d)
    D.add(
        "3. Dirichlet: <x,Delta x>_pi = 1/2 sum pi_i P_ij |x_i - O_ij x_j|^2",
        reduce_circle(lhs - dirichlet_form(P, O, pi, x, d), angles),
    )
    D.add(
        "2. <x,(2I-Delta)x>_pi = 1/2 sum pi_i P_ij |x_i + O_ij x_j|^2 (so spec in [0,2])",
        reduce_circle(pi_inner(x, 2 * x - Delta * x, pi, d) - dirichlet_form(P, O, pi, x, d, sign=+1), angles),
    )
    s = sized_symbol("s", positive=True)
    Os, _ = symbolic_metric_transports(n, d, scale=s)
    Ds = sp.eye(n * d) - walk_matrix(P, Os)
    nx = pi_inner(x, x, pi, d)
    D.add(
        "scaled O = sQ: <x,Delta x>_pi = Dirichlet + (1-s^2)/2 |x|^2_pi",
        reduce_circle(pi_inner(x, Ds * x, pi, d) - dirichlet_form(P, Os, pi, x, d) - (1 - s**2) / 2 * nx, angles),
    )
    D.add(
        "scaled O = sQ: the (1-s^2)/2 term is needed",
        reduce_circle(pi_inner(x, Ds * x, pi, d) - dirichlet_form(P, Os, pi, x, d), angles),
        expect_zero=False,
    )
    # 5. flat connection
    if d == 2:
        phis = [sized_symbol(f"rho_{i}", real=True) for i in range(n)]
        Rs = [rotation(p) for p in phis]
        Of = [[Rs[i] * Rs[j].T for j in range(n)] for i in range(n)]
        Df = sp.eye(n * d) - walk_matrix(P, Of)
        Rb = block_matrix([[Rs[i] if i == j else sp.zeros(d, d) for j in range(n)] for i in range(n)])
        D.add(
            "5. flat connection: Delta = R((I-P) (x) I_d) R^T",
            reduce_circle(Df - Rb * kron(sp.eye(n) - P, sp.eye(d)) * Rb.T, phis),
        )
        v = symbol_vector("v", d, real=True)
        sec = sp.Matrix.vstack(*[Rs[i] * v for i in range(n)])
        D.add("4. parallel section x_i = R_i v is in ker Delta", reduce_circle(Df * sec, phis))
    if counterexamples:
        D.checks.extend(t3_counterexamples().checks)
    return D


def spectrum_residual(M: sp.Matrix, expected: dict) -> sp.Matrix:
    """Exact residual between ``M``'s eigenvalues (with multiplicities) and ``expected``:
    ``charpoly(M)(z) - prod (z - e)^m`` expanded (zero iff the multisets agree)."""
    z = sp.Symbol("z")
    want = sp.prod([(z - e) ** m for e, m in expected.items()])
    return sp.Matrix([sp.expand(M.charpoly(z).as_expr() - sp.expand(want))])


def _stated(wid: str) -> dict:
    """The spectrum a T3 witness states (:data:`theory.cases.T3_WITNESS_FACTS`), each eigenvalue once."""
    return {sp.sympify(e): 1 for e in T3_WITNESS_FACTS[wid]["spectrum"]}


def t3_inverse_transports() -> tuple[sp.Matrix, list]:
    """T3.c1.w2's walk: the 3-cycle with weights ``T3_INVERSE_TRANSPORTS["weight"]`` off the diagonal and
    the transports ``O_12, O_23, O_31`` of the case data, ``O_ji = O_ij^{-1}``, zero diagonal blocks."""
    inv = T3_INVERSE_TRANSPORTS
    Oc: list = [[None] * 3 for _ in range(3)]
    for (p, q), key in (((0, 1), "O12"), ((1, 2), "O23"), ((2, 0), "O31")):
        Oc[p][q] = rational_matrix(inv[key])
        Oc[q][p] = Oc[p][q].inv()
    for k in range(3):
        Oc[k][k] = sp.zeros(2, 2)
    w = to_rational(inv["weight"])
    return sp.Matrix(3, 3, lambda a, b: 0 if a == b else w), Oc


def t3_counterexamples() -> Derivation:
    """THEOREMS.md T3's necessity counterexamples, evaluated in exact arithmetic (the stated values
    read from :mod:`theory.cases`)."""
    D = Derivation("T3", {})
    facts = T3_WITNESS_FACTS["T3.a.w1"]
    R = sp.Rational
    i = sp.I
    r3 = sp.sqrt(3)
    # drop (a)
    P = sp.Matrix([[0, 2], [2, 0]])
    Delta = sp.eye(2) - P
    D.add("drop (a) [P=[[0,2],[2,0]], O=1]: spec Delta = {-1, 3}", spectrum_residual(Delta, _stated("T3.a.w1")))
    pi = [R(1, 2), R(1, 2)]
    x = sp.Matrix([1, 1])
    O1 = [[sp.eye(1)] * 2] * 2
    form = pi_inner(x, Delta * x, pi, 1)
    D.add("drop (a): <x,Delta x>_pi = -1 at x=(1,1)", form - facts["form"])
    D.add("drop (a): Dirichlet form = 0 at x=(1,1)", dirichlet_form(P, O1, pi, x, 1) - facts["dirichlet"])
    D.add(
        "drop (a): correction sum_i pi_i (1 - r_i)|x_i|^2 = -1",
        sum(pi[k] * (1 - sum(P[k, :])) * x[k] ** 2 for k in range(2)) - facts["correction"],
    )
    # drop (b): directed 3-cycle
    C = sp.Matrix([[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    D.add(
        "drop (b) [directed 3-cycle, O=1]: spec = {0, 3/2 +- (sqrt3/2) i}",
        spectrum_residual(sp.eye(3) - C, _stated("T3.b.w1")),
    )
    # drop O_ji = O_ij^T only
    Rp = rotation(sp.pi / 3)
    sw = block_matrix([[sp.zeros(2, 2), Rp], [Rp, sp.zeros(2, 2)]])
    D.add(
        "drop O_ji=O_ij^T [swap, O_12=O_21=R(pi/3)]: spec = {1/2 +- i sqrt3/2, 3/2 +- i sqrt3/2}",
        spectrum_residual(
            sp.eye(4) - sw,
            {R(1, 2) + r3 / 2 * i: 1, R(1, 2) - r3 / 2 * i: 1, R(3, 2) + r3 / 2 * i: 1, R(3, 2) - r3 / 2 * i: 1},
        ),
    )
    # drop orthogonality only
    D.add(
        "drop orthogonality [swap, O=2]: spec = {-1, 3}",
        spectrum_residual(sp.eye(2) - sp.Matrix([[0, 2], [2, 0]]), _stated("T3.c1.w1")),
    )
    # drop orthogonality, keep O_ji = O_ij^{-1}
    inv = T3_INVERSE_TRANSPORTS
    Pc, Oc = t3_inverse_transports()
    Dc = sp.eye(6) - walk_matrix(Pc, Oc)
    z = sp.Symbol("z")
    cp = sp.Poly(Dc.charpoly(z).as_expr(), z)
    real_roots = sp.real_roots(cp)  # exact (isolated), with multiplicity
    neg_all = [r for r in real_roots if r < 0]
    neg = sorted(set(neg_all), key=float)
    n_complex = cp.degree() - len(real_roots)
    D.add(
        "drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: one negative real eigenvalue",
        sp.Integer(len(neg) - 1),
        detail=f"{len(neg)} distinct negative real root(s), algebraic multiplicity {len(neg_all)}, exact root isolation",
    )
    stated, digits = inv["negative_eigenvalue"], int(inv["digits"])
    half = sp.Rational(1, 2 * 10**digits)
    lo, hi = to_rational(stated) - half, to_rational(stated) + half
    D.add(
        f"drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: exactly one distinct real eigenvalue in [{stated} -+ {float(half):g}]",
        sp.Integer(cp.count_roots(lo, hi) - 1),
        detail="exact root count in the rounding interval",
    )
    D.add_numeric(
        f"drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: the negative eigenvalue is {stated} ({digits} decimals)",
        float(neg[0].evalf(30)) if neg else float("nan"),
        float(stated),
        float(half),
        detail=f"negative real root {float(neg[0].evalf(30)) if neg else float('nan'):.8f}",
    )
    D.add(
        "drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: a complex pair exists (number of non-real eigenvalues)",
        sp.Integer(n_complex),
        expect_zero=False,
        detail=f"{n_complex} non-real eigenvalues",
    )
    Sc = kron(sp.eye(3) / 3, sp.eye(2)) * Dc
    D.add("drop orthogonality keep O_ji=O_ij^-1: pi-self-adjointness fails", Sc - Sc.T, expect_zero=False)
    return D


# ================================================================================================
# T4
# ================================================================================================
@sized("T4", n=(3, 3), d=(1, 2))
def derive_t4(n: int = 3, d: int = 2) -> Derivation:
    """T4: softmax attention ``A = softmax_rows(X M X^T / sqrt(d_k))`` with a general bilinear
    ``M``. Kolmogorov triangle identity
    ``log[A_ij A_jk A_ki / (A_ik A_kj A_ji)] = (2/sqrt(d_k)) (x_j-x_i)^T M_a (x_k-x_i)``,
    ``M_a = (M - M^T)/2``; symmetric M gives detailed balance with ``pi_i ∝ D_ii`` (stationary);
    a query bias ``beta_j`` keeps it with ``pi_i ∝ e^{beta_i} sum_j e^{S_ij + beta_j}``; a key
    bias cancels; affinely collinear tokens are reversible for any M; with a causal mask detailed
    balance forces ``pi_1 = ... = pi_{n-1} = 0`` (0-indexed): no positive pi."""
    D = Derivation("T4", {"n": n, "d": d})
    X = symbol_matrix("x", n, d, real=True)
    M = symbol_matrix("m", d, d, real=True)
    dk = sized_symbol("d_k", positive=True)
    S = X * M * X.T / sp.sqrt(dk)
    A = softmax_rows(S)
    Ma = (M - M.T) / 2
    xs = [X[k, :].T for k in range(n)]
    for i, j, k in [(0, 1, 2)]:  # n = 3, the supported size: the one triangle
        ratio = A[i, j] * A[j, k] * A[k, i] / (A[i, k] * A[k, j] * A[j, i])
        rhs = 2 / sp.sqrt(dk) * ((xs[j] - xs[i]).T * Ma * (xs[k] - xs[i]))[0, 0]
        D.add(
            f"Kolmogorov triangle ({i},{j},{k}): log ratio = (2/sqrt d_k)(x_j-x_i)^T M_a (x_k-x_i)",
            sp.expand(sp.expand_log(sp.log(sp.powsimp(ratio)), force=True) - rhs),
        )
    # symmetric M => detailed balance with pi_i = D_ii (normalisation irrelevant)
    Msym = sp.Matrix(d, d, lambda a, b: sized_symbol(f"m_{min(a, b)}{max(a, b)}", real=True))
    Ss = X * Msym * X.T / sp.sqrt(dk)
    As = softmax_rows(Ss)
    Dg = [sum(sp.exp(Ss[i, k]) for k in range(n)) for i in range(n)]
    D.add(
        "symmetric M: pi_i A_ij = pi_j A_ji with pi_i = D_ii",
        cancel_all(sp.Matrix(n, n, lambda i, j: Dg[i] * As[i, j] - Dg[j] * As[j, i])),
    )
    D.add("symmetric M: pi = (D_ii) is stationary", cancel_all(sp.Matrix([Dg]) * As - sp.Matrix([Dg])))
    # key bias cancels: S_ij + c_i (depends on the query only) leaves A unchanged
    c = [sized_symbol(f"c_{i}", real=True) for i in range(n)]
    Ak = softmax_rows(sp.Matrix(n, n, lambda i, j: Ss[i, j] + c[i]))
    D.add("key bias (a per-query constant in the scores) cancels", cancel_all(sp.powsimp(Ak - As)))
    # query bias: S_ij + beta_j => detailed balance with pi_i = e^{beta_i} D'_ii
    beta = [sized_symbol(f"beta_{j}", real=True) for j in range(n)]
    Sq = sp.Matrix(n, n, lambda i, j: Ss[i, j] + beta[j])
    Aq = softmax_rows(Sq)
    piq = [sp.exp(beta[i]) * sum(sp.exp(Sq[i, k]) for k in range(n)) for i in range(n)]
    D.add(
        "query bias beta_j: reversible with pi_i = e^{beta_i} sum_j e^{S_ij + beta_j}",
        cancel_all(sp.powsimp(sp.Matrix(n, n, lambda i, j: piq[i] * Aq[i, j] - piq[j] * Aq[j, i]))),
    )
    D.add(
        "query bias changes pi: pi_i = D_ii is no longer balanced",
        cancel_all(sp.powsimp(sp.Matrix(n, n, lambda i, j: Dg[i] * Aq[i, j] - Dg[j] * Aq[j, i]))),
        expect_zero=False,
    )
    # affinely collinear tokens: the triangle form vanishes for any M
    x0, v = symbol_vector("p", d, real=True), symbol_vector("v", d, real=True)
    ts = [sized_symbol(f"tau_{k}", real=True) for k in range(3)]
    col = [x0 + ts[k] * v for k in range(3)]
    D.add(
        "affinely collinear tokens: (x_j-x_i)^T M_a (x_k-x_i) = 0 for any M",
        sp.expand(((col[1] - col[0]).T * Ma * (col[2] - col[0]))[0, 0]),
    )
    if d >= 2:
        D.add(
            "general tokens, nonsymmetric M: the triangle form is nonzero",
            sp.expand(((xs[1] - xs[0]).T * Ma * (xs[2] - xs[0]))[0, 0]),
            expect_zero=False,
        )
    # causal: detailed balance forces pi_j = 0 for j >= 1
    Ac = softmax_rows(Ss, mask=[(i, j) for i in range(n) for j in range(n) if j > i])
    pis = sp.symbols(f"pi0:{n}")
    eqs = [pis[i] * Ac[i, j] - pis[j] * Ac[j, i] for i in range(n) for j in range(i + 1, n)]
    sol = sp.linsolve(eqs, list(pis))
    (tup,) = list(sol)
    D.add(
        "causal mask: detailed balance forces pi_1 = ... = pi_{n-1} = 0 (no positive pi)",
        sp.Matrix(list(tup[1:])),
        detail=f"solutions {sp.sstr(sol)}",
    )
    return D


# ================================================================================================
# T5
# ================================================================================================
@sized("T5", n=(2, 3), d=(2, 2))
def derive_t5(n: int = 3, d: int = 2) -> Derivation:
    """T5: single head ``Delta = I - kron(A, T)``. Metric compatibility for constant transport
    (``T^T T = I`` and ``T = T^T``) is exactly ``T`` an orthogonal involution ``I - 2 Pi_U``
    (solved for generic 2x2 T); then with reversible A, Delta is pi-self-adjoint, and
    ``det(zI - Delta) = ((-1)^n p_A(1-z))^{dim Fix T} p_A(z-1)^{d - dim Fix T}`` (spec = 1-lambda on
    Fix(T), 1+lambda on the -1 eigenspace) for generic A; a non-orthogonal involution fails
    pi-self-adjointness."""
    D = Derivation("T5", {"n": n, "d": d})
    T = symbol_matrix("t", d, d)
    I = sp.eye(d)
    D.add(
        "orthogonal + symmetric => involution: T^2 - I = (T^T T - I) + (T - T^T) T",
        expand_all(T * T - I - ((T.T * T - I) + (T - T.T) * T)),
    )
    D.add(
        "orthogonal + involution => symmetric: T^T - T = T^T (I - T^2) + (T^T T - I) T",
        expand_all(T.T - T - (T.T * (I - T * T) + (T.T * T - I) * T)),
    )
    phi = sized_symbol("phi", real=True)
    refl = sp.Matrix([[sp.cos(phi), sp.sin(phi)], [sp.sin(phi), -sp.cos(phi)]])
    D.add(
        "d=2 reflections [[cos, sin], [sin, -cos]] are orthogonal symmetric involutions",
        reduce_circle(sp.Matrix.vstack(refl.T * refl - sp.eye(2), refl - refl.T, refl * refl - sp.eye(2)), [phi]),
    )
    u = symbol_vector("u", d, real=True)
    Hh = householder(u)
    D.add(
        "I - 2 Pi_U is orthogonal, symmetric, an involution",
        cancel_all(sp.Matrix.vstack(Hh.T * Hh - sp.eye(d), Hh - Hh.T, Hh * Hh - sp.eye(d))),
    )
    w = symbolic_symmetric_weights(n)
    deg = [sum(w[i][j] for j in range(n)) for i in range(n)]
    A = sp.Matrix(n, n, lambda i, j: w[i][j] / deg[i])
    Pi = kron(sp.diag(*deg), sp.eye(d))
    Delta = sp.eye(n * d) - kron(A, Hh)
    S = Pi * Delta
    D.add("reversible A, T = I - 2 Pi_U: Delta pi-self-adjoint", cancel_all(S - S.T))
    Tn = sp.Matrix([[1, 1], [0, -1]])  # T^2 = I, not orthogonal
    D.add("T=[[1,1],[0,-1]] is an involution: T^2 = I", Tn * Tn - sp.eye(2))
    D.add("T=[[1,1],[0,-1]] is not orthogonal: T^T T != I", Tn.T * Tn - sp.eye(2), expect_zero=False)
    Sn = Pi * (sp.eye(n * d) - kron(A, Tn))
    D.add(
        "non-orthogonal involution T=[[1,1],[0,-1]]: pi-self-adjointness fails",
        cancel_all(Sn - Sn.T),
        expect_zero=False,
    )
    # spectrum for generic A (not even reversible) and a rational reflection (dim Fix = 1)
    Ag = symbol_matrix("a", n, n)
    Tr = householder(sp.Matrix([1, 2]))  # [[3/5,-4/5],[-4/5,-3/5]]
    z = sp.Symbol("z")
    pA = Ag.charpoly(z).as_expr()
    want = ((-1) ** n * pA.subs(z, 1 - z)) ** 1 * pA.subs(z, z - 1) ** (d - 1)
    D.add(
        "spec(I - kron(A,T)) = {1-lambda_i} on Fix T and {1+lambda_i} on the -1 space",
        sp.expand((sp.eye(n * d) - kron(Ag, Tr)).charpoly(z).as_expr() - want),
    )
    return D


# ================================================================================================
# T6
# ================================================================================================
@sized("T6", n=(2, 3), d=(1, 2), heads=(1, 2), ring=(2, 12))
def derive_t6(n: int = 3, d: int = 2, heads: int = 2, ring: int = 5) -> Derivation:
    """T6: for ``F_i(X) = sum_h sum_j A^h_ij(X) T_h x_j - x_i`` with softmax attention
    ``A^h = softmax_rows(X M_h X^T + b^h)`` (generic bilinear ``M_h``, generic positional bias
    ``b^h``), the Jacobian at a homogeneous state ``X = 1 (x) x*`` is exactly
    ``block(sum_h A0^h_ij T_h) - I``. It fails for sigmoid attention and off homogeneous states.
    Fourier: for circulant ``A0^h_ij = a_h((j-i) mod ring)`` and any ring-th root of unity
    ``zeta = e^{2 pi i k/ring}``, ``phi_k(j) = zeta^j``: ``J (phi_k (x) v) = phi_k (x) (M(k) - I) v``,
    ``M(k) = sum_h a_h^(k) T_h``, ``a^(k) = sum_m a(m) zeta^{+m}``; the opposite sign fails.
    Rotating wave: ``R(theta) (1, -i)^T = e^{i theta} (1, -i)^T``."""
    H = heads
    D = Derivation("T6", {"n": n, "d": d, "heads": H, "ring": ring})
    X = symbol_matrix("x", n, d, real=True)
    xs = symbol_vector("xstar", d, real=True)
    Ms = [symbol_matrix(f"m{h}", d, d, real=True) for h in range(H)]
    bs = [symbol_matrix(f"b{h}", n, n, real=True) for h in range(H)]
    Ts = [symbol_matrix(f"t{h}", d, d, real=True) for h in range(H)]
    if H >= 2:  # the derivation covers distinct heads: a shared score matrix, bias or transport fails here
        D.add("heads are distinct: M_0 - M_1 != 0 (score matrices)", Ms[0] - Ms[1], expect_zero=False)
        D.add("heads are distinct: b^0 - b^1 != 0 (positional biases)", bs[0] - bs[1], expect_zero=False)
        D.add("heads are distinct: T_0 - T_1 != 0 (transports)", Ts[0] - Ts[1], expect_zero=False)
    # e^h_ij stands for exp(S^h_ij(X)) at the base state; the chain rule d e = e dS is applied by
    # hand so the exponentials stay algebraically independent (SymPy would merge exp products).
    es = [symbol_matrix(f"e{h}", n, n, positive=True) for h in range(H)]
    Ss = [X * Ms[h] * X.T + bs[h] for h in range(H)]
    hom = {X[i, k]: xs[k] for i in range(n) for k in range(d)}
    xvars = [X[i, k] for i in range(n) for k in range(d)]
    evars = [es[h][i, j] for h in range(H) for i in range(n) for j in range(n)]
    dS = sp.Matrix.vstack(
        *[es[h][i, j] * sp.Matrix([Ss[h][i, j]]).jacobian(xvars) for h in range(H) for i in range(n) for j in range(n)]
    )

    def jac_minus_walk(attn, at):
        """``J - (block(sum_h A0^h_ij T_h) - I)`` at the base state ``at``."""
        As = [attn(h) for h in range(H)]
        F = sp.Matrix.vstack(
            *[
                sum((As[h][i, j] * Ts[h] * X[j, :].T for h in range(H) for j in range(n)), sp.zeros(d, 1)) - X[i, :].T
                for i in range(n)
            ]
        )
        J = (F.jacobian(xvars) + F.jacobian(evars) * dS).xreplace(at)
        Wlin = block_matrix(
            [[sum((As[h][i, j] * Ts[h] for h in range(H)), sp.zeros(d, d)) for j in range(n)] for i in range(n)]
        )
        return J - (Wlin - sp.eye(n * d))

    soft = lambda h: sp.Matrix(n, n, lambda i, j: es[h][i, j] / sum(es[h][i, k] for k in range(n)))
    D.add("Jacobian at 1(x)x* = block(sum_h A0^h_ij T_h) - I (softmax, H1+H2)", numerators(jac_minus_walk(soft, hom)))
    sig = lambda h: es[h].applyfunc(lambda e: e / (1 + e))
    D.add(
        "drop H1 (sigmoid attention, rows not normalised): extra terms remain (exact value at a rational point)",
        at_rational_point(jac_minus_walk(sig, hom)),
        expect_zero=False,
    )
    # n >= 2 (the supported sizes): token 0 moved off the homogeneous state by T6.H2's witness formula
    moved = [MOVED.rhs.xreplace({xstar_[_c]: xs[k]}) for k in range(d)]
    inhom = {X[i, k]: (xs[k] if i else moved[k]) for i in range(n) for k in range(d)}
    D.add(
        "drop H2 (inhomogeneous base state x_0 = x* + 1): extra terms remain (exact value at a rational point)",
        at_rational_point(jac_minus_walk(soft, inhom)),
        expect_zero=False,
    )
    D.checks.extend(t6_fourier(ring, d, H).checks)
    return D


def t6_fourier(ring: int, d: int, heads: int, *, sign: int = +1) -> Derivation:
    """Fourier eigenpairs of the circulant linearisation, for every ring-th root of unity at once
    (residuals reduced modulo ``zeta^ring - 1``); ``sign = -1`` uses the reversed convention and
    must fail."""
    H = heads
    D = Derivation("T6", {"ring": ring, "d": d, "heads": H})
    zeta = sp.Symbol("zeta")
    a = [[sized_symbol(f"a{h}_{m}", real=True) for m in range(ring)] for h in range(H)]
    Ts = [symbol_matrix(f"t{h}", d, d, real=True) for h in range(H)]
    v = symbol_vector("v", d)
    A0 = [sp.Matrix(ring, ring, lambda i, j: a[h][(j - i) % ring]) for h in range(H)]
    if H >= 2 and sign > 0:  # a shared score kernel or transport fails here
        D.add(
            "Fourier: heads are distinct: a_0 - a_1 != 0 (score kernels)",
            sp.Matrix(a[0]) - sp.Matrix(a[1]),
            expect_zero=False,
        )
        D.add("Fourier: heads are distinct: T_0 - T_1 != 0 (transports)", Ts[0] - Ts[1], expect_zero=False)
    J = block_matrix(
        [[sum((A0[h][i, j] * Ts[h] for h in range(H)), sp.zeros(d, d)) for j in range(ring)] for i in range(ring)]
    ) - sp.eye(ring * d)

    def hat(h, sgn):
        return sum(a[h][m] * (zeta**m if sgn > 0 else zeta ** ((ring - m) % ring)) for m in range(ring))

    def residual(sgn):
        Mk = sum((hat(h, sgn) * Ts[h] for h in range(H)), sp.zeros(d, d))
        phi = sp.Matrix(ring, 1, lambda j, make_conclusion: zeta**j)
        return reduce_root_of_unity(J * kron(phi, v) - kron(phi, (Mk - sp.eye(d)) * v), zeta, ring)

    if sign > 0:
        D.add(
            f"Fourier (ring={ring}): J(phi_k (x) v) = phi_k (x) (M(k)-I) v, a^(k) = sum_m a(m) e^(+2 pi i k m/n)",
            residual(+1),
        )
        if ring >= 3:
            D.add("Fourier with the reversed sign e^(-2 pi i k m/n) is wrong", residual(-1), expect_zero=False)
        th, rho = sized_symbol("theta", real=True), sized_symbol("rho", positive=True)
        e = sp.Matrix([1, -sp.I])
        D.add(
            "rotating wave: rho R(theta)(1,-i)^T = rho e^{i theta}(1,-i)^T",
            sp.expand((rho * rotation(th) * e - rho * (sp.cos(th) + sp.I * sp.sin(th)) * e).applyfunc(sp.expand)),
        )
    else:
        D.add("Fourier with the reversed sign", residual(-1))
    return D
