"""The outline of each symbolic derivation, as data: the steps ``theory.derivations.derive_<id>()``
takes at its default sizes, in order, each with its kind. THEOREMS.md renders them under each statement
and ``tests/theory/test_derivations.py::test_derivation_reaches_exact_zero`` requires the derivation to
produce exactly these steps (names, order, kinds), so an edit on either side is caught.

Kinds: ``"zero"`` — the residual is an exact structural zero; ``"witness"`` — a necessity witness, an
exact nonzero residual; ``"numeric"`` — a rounded value compared within its stated precision.
"""

from __future__ import annotations

ZERO, WITNESS, NUMERIC = "zero", "witness", "numeric"

#: theorem id -> ((kind, step name[, detail]), ...) at the default sizes of its derivation; the detail
#: (when the step reports one) is what it found: a solution set, a root count, a closed form
STEPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "L1": (
        (ZERO, "token-major: stack(A X T^T) = kron(A,T) stack(X)"),
        (ZERO, "feature-major: vec(A X T^T) = kron(T,A) vec(X)"),
        (WITNESS, "mixing conventions is wrong: stack_tm(A X T^T) != kron(T,A) stack_tm(X)"),
    ),
    "L2": (
        (ZERO, "rows sum to 1"),
        (ZERO, "sum_j d A_0j / d x_ab = 0"),
    ),
    "L3": (
        (ZERO, "<x,(I-W)x>_pi = Dirichlet + sum_i pi_i (1-r_i)|x_i|^2"),
        (WITNESS, "without the correction term the identity fails when rows do not sum to 1"),
    ),
    "L4": ((ZERO, "charpoly(kron(A,T))(z) = Res_mu(p_T(mu), mu^n p_A(z/mu))"),),
    "T1": (
        (ZERO, "SHA(X) = kron(A,T) x (token-major)"),
        (ZERO, "kron(A,T) = walk with P = A, O_ij = T"),
        (ZERO, "per token: y_i = sum_j A_ij T x_j"),
        (WITNESS, "feature-major kron(T,A) applied to the token-major x is NOT SHA"),
    ),
    "T2": (
        (WITNESS, "heads are distinct: A^1 - A^2 != 0"),
        (WITNESS, "heads are distinct: T_1 - T_2 != 0"),
        (ZERO, "MHA(X) = block(B) x, B_ij = sum_h A^h_ij T_h"),
        (ZERO, "P = mean_h A^h is row-stochastic"),
        (ZERO, "gates are convex: sum_h g^h_ij = 1"),
        (ZERO, "block(P, O) = B exactly"),
        (ZERO, "gauge: block(P', B/P') = B for any positive row-stochastic P'"),
        (ZERO, "cancelling heads (T_2=-T_1, A^1=A^2): B = 0"),
        (ZERO, "cancelling heads: P = (A^1 + A^2)/H stays positive (equals 2A^1/H)"),
        (ZERO, "shared A across heads: O_ij = T_Sigma"),
        (ZERO, "shared T across heads: O_ij = H T"),
        (
            ZERO,
            "constant transport with independent T_h forces A^1_ij = ... = A^H_ij",
            "solution set {(kappa, kappa, kappa)}",
        ),
        (ZERO, "counterexample: B_11 of the MHA operator is the stated matrix"),
        (ZERO, "counterexample: B_12 of the MHA operator is the stated matrix"),
        (ZERO, "counterexample: B_11, B_12 linearly independent (rank 2)", "exact rank over Q"),
        (
            ZERO,
            "counterexample: nearest Kronecker product misses by the stated closed form (squares agree, both >= 0)",
            "miss^2 = 5/2 - sqrt(17)/2",
        ),
        (NUMERIC, "counterexample: nearest Kronecker product misses by 0.662 (3 decimals)", "miss = 0.662153447"),
    ),
    "T3": (
        (ZERO, "(a) P row-stochastic"),
        (ZERO, "(b) detailed balance pi_i P_ij = pi_j P_ji"),
        (ZERO, "pi stationary: pi P = pi"),
        (ZERO, "(c) O_ij orthogonal"),
        (ZERO, "1. Delta is pi-self-adjoint: (diag pi (x) I) Delta symmetric"),
        (ZERO, "3. Dirichlet: <x,Delta x>_pi = 1/2 sum pi_i P_ij |x_i - O_ij x_j|^2"),
        (ZERO, "2. <x,(2I-Delta)x>_pi = 1/2 sum pi_i P_ij |x_i + O_ij x_j|^2 (so spec in [0,2])"),
        (ZERO, "scaled O = sQ: <x,Delta x>_pi = Dirichlet + (1-s^2)/2 |x|^2_pi"),
        (WITNESS, "scaled O = sQ: the (1-s^2)/2 term is needed"),
        (ZERO, "5. flat connection: Delta = R((I-P) (x) I_d) R^T"),
        (ZERO, "4. parallel section x_i = R_i v is in ker Delta"),
        (ZERO, "drop (a) [P=[[0,2],[2,0]], O=1]: spec Delta = {-1, 3}"),
        (ZERO, "drop (a): <x,Delta x>_pi = -1 at x=(1,1)"),
        (ZERO, "drop (a): Dirichlet form = 0 at x=(1,1)"),
        (ZERO, "drop (a): correction sum_i pi_i (1 - r_i)|x_i|^2 = -1"),
        (ZERO, "drop (b) [directed 3-cycle, O=1]: spec = {0, 3/2 +- (sqrt3/2) i}"),
        (ZERO, "drop O_ji=O_ij^T [swap, O_12=O_21=R(pi/3)]: spec = {1/2 +- i sqrt3/2, 3/2 +- i sqrt3/2}"),
        (ZERO, "drop orthogonality [swap, O=2]: spec = {-1, 3}"),
        (
            ZERO,
            "drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: one negative real eigenvalue",
            "1 distinct negative real root(s), algebraic multiplicity 2, exact root isolation",
        ),
        (
            ZERO,
            "drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: exactly one distinct real eigenvalue in [-0.0268 -+ 5e-05]",
            "exact root count in the rounding interval",
        ),
        (
            NUMERIC,
            "drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: the negative eigenvalue is -0.0268 (4 decimals)",
            "negative real root -0.02681079",
        ),
        (
            WITNESS,
            "drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: a complex pair exists (number of non-real eigenvalues)",
            "4 non-real eigenvalues",
        ),
        (WITNESS, "drop orthogonality keep O_ji=O_ij^-1: pi-self-adjointness fails"),
    ),
    "T4": (
        (ZERO, "Kolmogorov triangle (0,1,2): log ratio = (2/sqrt d_k)(x_j-x_i)^T M_a (x_k-x_i)"),
        (ZERO, "symmetric M: pi_i A_ij = pi_j A_ji with pi_i = D_ii"),
        (ZERO, "symmetric M: pi = (D_ii) is stationary"),
        (ZERO, "key bias (a per-query constant in the scores) cancels"),
        (ZERO, "query bias beta_j: reversible with pi_i = e^{beta_i} sum_j e^{S_ij + beta_j}"),
        (WITNESS, "query bias changes pi: pi_i = D_ii is no longer balanced"),
        (ZERO, "affinely collinear tokens: (x_j-x_i)^T M_a (x_k-x_i) = 0 for any M"),
        (WITNESS, "general tokens, nonsymmetric M: the triangle form is nonzero"),
        (
            ZERO,
            "causal mask: detailed balance forces pi_1 = ... = pi_{n-1} = 0 (no positive pi)",
            "solutions {(pi0, 0, 0)}",
        ),
    ),
    "T5": (
        (ZERO, "orthogonal + symmetric => involution: T^2 - I = (T^T T - I) + (T - T^T) T"),
        (ZERO, "orthogonal + involution => symmetric: T^T - T = T^T (I - T^2) + (T^T T - I) T"),
        (ZERO, "d=2 reflections [[cos, sin], [sin, -cos]] are orthogonal symmetric involutions"),
        (ZERO, "I - 2 Pi_U is orthogonal, symmetric, an involution"),
        (ZERO, "reversible A, T = I - 2 Pi_U: Delta pi-self-adjoint"),
        (ZERO, "T=[[1,1],[0,-1]] is an involution: T^2 = I"),
        (WITNESS, "T=[[1,1],[0,-1]] is not orthogonal: T^T T != I"),
        (WITNESS, "non-orthogonal involution T=[[1,1],[0,-1]]: pi-self-adjointness fails"),
        (ZERO, "spec(I - kron(A,T)) = {1-lambda_i} on Fix T and {1+lambda_i} on the -1 space"),
    ),
    "T6": (
        (WITNESS, "heads are distinct: M_0 - M_1 != 0 (score matrices)"),
        (WITNESS, "heads are distinct: b^0 - b^1 != 0 (positional biases)"),
        (WITNESS, "heads are distinct: T_0 - T_1 != 0 (transports)"),
        (ZERO, "Jacobian at 1(x)x* = block(sum_h A0^h_ij T_h) - I (softmax, H1+H2)"),
        (
            WITNESS,
            "drop H1 (sigmoid attention, rows not normalised): extra terms remain (exact value at a rational point)",
        ),
        (
            WITNESS,
            "drop H2 (inhomogeneous base state x_0 = x* + 1): extra terms remain (exact value at a rational point)",
        ),
        (WITNESS, "Fourier: heads are distinct: a_0 - a_1 != 0 (score kernels)"),
        (WITNESS, "Fourier: heads are distinct: T_0 - T_1 != 0 (transports)"),
        (ZERO, "Fourier (ring=5): J(phi_k (x) v) = phi_k (x) (M(k)-I) v, a^(k) = sum_m a(m) e^(+2 pi i k m/n)"),
        (WITNESS, "Fourier with the reversed sign e^(-2 pi i k m/n) is wrong"),
        (ZERO, "rotating wave: rho R(theta)(1,-i)^T = rho e^{i theta}(1,-i)^T"),
    ),
}

#: theorem id -> the steps of its derivation for symbolic sizes (``theory.derivations.general``), in order
GENERAL_STEPS: dict[str, tuple[tuple[str, ...], ...]] = {
    "L2": (
        (ZERO, "general: rows sum to 1, all n, any differentiable scores"),
        (ZERO, "general: the derivative of a row sums to 0, all n, any differentiable scores"),
        (WITNESS, "general: witness: unnormalised attention, the derivative of a row is not 0"),
    ),
    "L1": (
        (ZERO, "general: token-major, entry i*d + a, all n, d"),
        (ZERO, "general: feature-major, entry a*n + i, all n, d"),
    ),
    "L3": ((ZERO, "general: <x,(I-W)x>_pi = Dirichlet + correction (no row sums), all n, d"),),
    "T1": (
        (ZERO, "general: vec(SHA(X)^T) = (A (x) T) vec(X^T), entry i*d + a, all n, d"),
        (ZERO, "general: block (i, j) of the operator is P_ij O_ij with P = A, O_ij = T, all n, d"),
    ),
    "T2": (
        (WITNESS, "general: heads' attentions are distinct symbols (A^h for a symbolic head index h)"),
        (WITNESS, "general: heads' transports are distinct symbols (T_h for a symbolic head index h)"),
        (ZERO, "general: P = mean_h A^h is row-stochastic when every head is, all n, H"),
        (ZERO, "general: gates sum to 1, all n, d, H"),
        (ZERO, "general: P_ij O_ij = B_ij, all n, d, H"),
        (ZERO, "general: gauge P'_ij O'_ij = B_ij, all n, d, H"),
        (ZERO, "general: shared attention: O_ij = T_Sigma, all n, d, H"),
        (ZERO, "general: shared transport: O_ij = H T_1, all n, d, H"),
        (ZERO, "general: cancelling heads: B = 0, all n, d (H = 2)"),
    ),
    "T3": (
        (ZERO, "general: <x, Delta y>_pi = <Delta x, y>_pi from (b), (c2), all n, d"),
        (ZERO, "general: Dirichlet identity from (a), (b), (c1), all n, d"),
        (ZERO, "general: <x,(2I-Delta)x>_pi = 1/2 sum pi_i P_ij |x_i + O_ij x_j|^2 from (a), (b), (c1), all n, d"),
        (ZERO, "general: flat connection O_ij = R_i R_j^T: Delta = R((I-P)(x)I)R^T entrywise, all n, d"),
        (
            ZERO,
            "general: scaled isometries O = sQ: Dirichlet form + (1-s^2)/2 |x|_pi^2 from (a), (b), (c1) on Q, all n, d",
        ),
    ),
    "T4": (
        (ZERO, "general: symmetric M => symmetric scores S_ij = S_ji (no mask), all n, d"),
        (ZERO, "general: Kolmogorov triangle log ratio = (2/sqrt d_k)(x_j-x_i)^T M_a (x_k-x_i), all n, d"),
        (ZERO, "general: symmetric scores => detailed balance Z_i A_ij = Z_j A_ji, all n"),
        (ZERO, "general: symmetric scores => stationary sum_i Z_i A_ij = Z_j, all n"),
        (ZERO, "general: symmetric scores + query bias => detailed balance with pi_i = e^beta_i Z_i, all n, d"),
    ),
    "T5": (
        (ZERO, "general: on Fix(T): Delta(u (x) f) = (1 - lambda) u (x) f, all n, d"),
        (ZERO, "general: on the -1 space: Delta(u (x) f) = (1 + lambda) u (x) f, all n, d"),
        (ZERO, "general: Delta(1 (x) f) = 0 for f in Fix(T) when the rows of A sum to 1, all n, d"),
    ),
    "T6": (
        (WITNESS, "general: heads' scores (kernels a_h) are distinct symbols (symbolic head index h)"),
        (WITNESS, "general: heads' transports are distinct symbols (T_h for a symbolic head index h)"),
        (ZERO, "general: J(phi_k (x) v) = phi_k (x) (M(k) - I) v for every ring size n (zeta^n = 1)"),
    ),
}
