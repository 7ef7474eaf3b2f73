"""The spectral side's further formulas (T3's flat and scaled connections, T4's query bias, T5's
kernel, T6's rotating wave): :class:`theory.formulas.Identity` objects over symbolic sizes, with the
index conventions and the shared symbols of :mod:`theory.formulas`. The registry cites them in the
statements (``«name»``), THEOREMS.md renders them with ``sympy.latex`` and the oracles evaluate them
(:func:`theory.formulas.evaluate`)."""

from __future__ import annotations

import sympy as sp

from . import (
    A0_,
    A2_,
    A_,
    DIRICHLET_SUM,
    M_,
    O_,
    P_,
    PI_FORM,
    S_,
    T2_,
    T4_SYMMETRIC,
    T4_TRIANGLE,
    T4_WHERE,
    X_,
    Z_,
    Ah_,
    H,
    Identity,
    Th_,
    a,
    a_,
    b,
    c,
    d,
    f_,
    h,
    i,
    j,
    k,
    m,
    mu_,
    n,
    pi_,
    walk_component,
    x_,
    zeta,
)

beta_ = sp.IndexedBase("beta", real=True)

#: T4: a query bias adds ``β_j`` to every score ``S_ij`` (a key bias adds ``β_i``, which the softmax
#: cancels); with symmetric scores the attention stays reversible with ``π_i = e^{β_i} Z_i``
QUERY_BIAS = Identity(
    "query_bias",
    pi_[i] * A_[i, j],
    pi_[j] * A_[j, i],
    (i, j),
    T4_SYMMETRIC,
    (
        T4_WHERE[0],
        (Z_[i], sp.Sum(sp.exp(S_[i, k] + beta_[k]), (k, 0, n - 1))),
        (A_[i, j], sp.exp(S_[i, j] + beta_[j]) / Z_[i]),
        (pi_[i], sp.exp(beta_[i]) * Z_[i]),
    ),
)

#: T4.criterion, "only if": a reversible attention (detailed balance ``π_i A_ij = π_j A_ji``) has a
#: balanced cycle on every triple (Kolmogorov), so T4.triangle's right side vanishes: the antisymmetric
#: part ``Ma`` of ``M`` vanishes on ``span{x_j - x_i}``
KOLMOGOROV = Identity(
    "kolmogorov",
    T4_TRIANGLE.rhs,
    sp.S.Zero,
    (i, j, k),
    ((pi_[i] * A_[i, j], pi_[j] * A_[j, i]),),
    T4_TRIANGLE.where,
)

# T3: kernel, flat and scaled connections
R_, Q_ = sp.IndexedBase("R"), sp.IndexedBase("Q")
s_ = sp.Symbol("s", positive=True)

#: T3.kernel: a parallel section, ``x_i = O_ij x_j`` (component ``a``; on every edge ``P_ij ≠ 0``)
PARALLEL = Identity("parallel", x_[i, a], sp.Sum(O_[i, j, a, b] * x_[j, b], (b, 0, d - 1)), (i, j, a))


def _R_T(v, t):
    """Component ``c`` of ``R_t^T v_t``."""
    return sp.Sum(R_[t, b, c] * v[t, b], (b, 0, d - 1))


#: T3.flat: for ``O_ij = R_i R_j^T`` (``R_i`` orthogonal), component ``(i, a)`` of ``Δx`` equals that of
#: ``R((I - P) ⊗ I_d)R^T x`` (``R = diag(R_i)``)
FLAT = Identity(
    "flat",
    walk_component(x_),
    sp.Sum(R_[i, a, c] * (_R_T(x_, i) - sp.Sum(P_[i, j] * _R_T(x_, j), (j, 0, n - 1))), (c, 0, d - 1)),
    (i, a),
    (
        (O_[i, j, a, b], sp.Sum(R_[i, a, c] * R_[j, b, c], (c, 0, d - 1))),
        (sp.Sum(R_[i, a, c] * R_[i, b, c], (c, 0, d - 1)), sp.KroneckerDelta(a, b)),
    ),
)

#: T3.scaled: with scaled isometries ``O_ij = s Q_ij`` the Dirichlet form gains ``(1 - s²)/2 ‖x‖²_π``
SCALED = Identity(
    "scaled",
    PI_FORM.xreplace({O_[i, j, a, b]: s_ * Q_[i, j, a, b]}),
    sp.Rational(1, 2) * DIRICHLET_SUM.xreplace({O_[i, j, a, b]: s_ * Q_[i, j, a, b]})
    + (1 - s_**2) / 2 * sp.Sum(pi_[i] * sp.Sum(x_[i, a] ** 2, (a, 0, d - 1)), (i, 0, n - 1)),
)
#: T3.scaled: the interval ``spec Δ ⊂ [1 - s, 1 + s]`` (its ends as expressions of ``s``)
SCALED_LO, SCALED_HI = 1 - s_, 1 + s_

# T5: single head, Δ = I - A ⊗ T
#: T5.involution: ``T`` orthogonal (``T^T T = I``) and symmetric (``T = T^T``)
T_ORTHOGONAL = Identity("orthogonal", sp.Sum(T2_[a, b] * T2_[a, c], (a, 0, d - 1)), sp.KroneckerDelta(b, c), (b, c))
T_SYMMETRIC = Identity("symmetric", T2_[a, b], T2_[b, a], (a, b))
#: T5.kernel: component ``(i, a)`` of ``Δ(1 ⊗ f)`` vanishes for ``f`` in the eigenspace of ``T`` its
#: premise names (``Fix T``) when the rows of ``A`` sum to 1
T5_KERNEL = Identity(
    "kernel",
    f_[a] - sp.Sum(A2_[i, j] * T2_[a, b] * f_[b], (j, 0, n - 1), (b, 0, d - 1)),
    sp.S.Zero,
    (i, a),
    ((sp.Sum(A2_[i, j], (j, 0, n - 1)), sp.S.One), (sp.Sum(T2_[a, b] * f_[b], (b, 0, d - 1)), f_[a])),
)

# T6: ring of n tokens, heads A0^h at the homogeneous state (theory.formulas.fourier's symbols)
J_, Mk_, z_ = sp.IndexedBase("J"), sp.IndexedBase("M"), sp.IndexedBase("z")
rho, theta = sp.Symbol("rho", positive=True), sp.Symbol("theta", real=True)
_KERNEL = (a_[h, m], A0_[h, 0, m])


class _XStar(sp.Symbol):
    """The base state's label ``xstar``, displayed ``x^*``."""

    def _latex(self, printer):
        return "x^{*}"


xstar_ = sp.IndexedBase(_XStar("xstar"))
#: T6.H2: the base state is homogeneous, ``X = 1 ⊗ x^*``: component ``c`` of every token ``i`` is
#: ``x^*_c`` (defined as token 0's, so the formula says that every token carries the same state)
HOMOGENEOUS = Identity("homogeneous", X_[i, c], xstar_[c], (i, c), (), ((xstar_[c], X_[0, c]),))

#: T6.H3: every head circulant, ``A0^h_ij = a_h((j - i) mod n)`` with ``a_h(m) = A0^h_{0m}``
CIRCULANT = Identity("circulant", A0_[h, i, j], A0_[h, 0, sp.Mod(j - i, n)], (h, i, j))


class _XDot(sp.Symbol):
    """The velocity's label ``xdot``, displayed ``\\dot x``."""

    def _latex(self, printer):
        return "\\dot{x}"


xdot_ = sp.IndexedBase(_XDot("xdot"))
#: T6.jacobian: the dynamics whose Jacobian it is, component ``c`` of token ``i``:
#: ``ẋ_i = Σ_h Σ_j A^h_ij(X) T_h x_j − x_i`` (``A^h`` the heads' attention at the state ``X = (x_j)``)
DYNAMICS = Identity(
    "dynamics",
    xdot_[i, c],
    sp.Sum(Ah_[h, i, j] * Th_[h, c, b] * x_[j, b], (h, 0, H - 1), (j, 0, n - 1), (b, 0, d - 1)) - x_[i, c],
    (i, c),
)
#: T6.jacobian: ``J = block(Σ_h A0^h_ij T_h) - I``, entry ``((i, c), (j, b))`` (token-major)
JACOBIAN = Identity(
    "jacobian",
    J_[i, c, j, b],
    sp.Sum(A0_[h, i, j] * Th_[h, c, b], (h, 0, H - 1)) - sp.KroneckerDelta(i, j) * sp.KroneckerDelta(c, b),
    (i, c, j, b),
)
#: T6.selection: the symbol ``M(k) = Σ_h â_h(k) T_h``, ``â_h(k) = Σ_m a_h(m) ζ^m``, ``ζ = e^{2πik/n}``
SYMBOL = Identity(
    "symbol",
    Mk_[c, b],
    sp.Sum(sp.Sum(a_[h, m] * zeta**m, (m, 0, n - 1)) * Th_[h, c, b], (h, 0, H - 1)),
    (c, b),
    (),
    (_KERNEL,),
)


#: T6.selection: the phase velocity of the selected mode ``(k*, σ)``
class _KStar(sp.Symbol):
    """The selected wavenumber ``k_star``, displayed ``k^*``."""

    def _latex(self, printer):
        return "k^{*}"


k_star, sigma_ = _KStar("k_star", positive=True), sp.Symbol("sigma")
VELOCITY = Identity("velocity", sp.Symbol("c"), -n * sp.im(sigma_) / (2 * sp.pi * k_star))
#: T6.rotating: for one head ``T = ρ R(θ)``, ``z = (1, -i)`` is an eigenvector of ``M(k) - I`` with the
#: eigenvalue ``σ_z(k) = ρ e^{iθ} â(k) - 1`` (component ``c``)
ROTATING = Identity(
    "rotating",
    sp.Sum(Mk_[c, b] * z_[b], (b, 0, d - 1)) - z_[c],
    (rho * sp.exp(sp.I * theta) * sp.Sum(a_[0, m] * zeta**m, (m, 0, n - 1)) - 1) * z_[c],
    (c,),
    (
        (Th_[0, 0, 0], rho * sp.cos(theta)),
        (Th_[0, 0, 1], -rho * sp.sin(theta)),
        (Th_[0, 1, 0], rho * sp.sin(theta)),
        (Th_[0, 1, 1], rho * sp.cos(theta)),
    ),
    (_KERNEL, (Mk_[c, b], SYMBOL.rhs), (z_[c], (-sp.I) ** c)),
)

#: T4.softmax: the attention, ``A = softmax_rows(X M X^T / sqrt(d_k) + μ)`` (``μ``: the mask)
ATTENTION = Identity("attention", A_[i, j], sp.exp(S_[i, j]) / Z_[i], (i, j), (), T4_WHERE[:2])
#: T4.softmax: the bilinear form of the scores, ``M = W_Q^T W_K`` (``W_Q, W_K`` of shape ``d_k × d``)
W_Q_, W_K_ = sp.IndexedBase("W_Q"), sp.IndexedBase("W_K")
e_, d_key = sp.Symbol("e", integer=True, nonnegative=True), sp.Symbol("d_k", integer=True, positive=True)
QK = Identity("qk", M_[a, b], sp.Sum(W_Q_[e_, a] * W_K_[e_, b], (e_, 0, d_key - 1)), (a, b))
#: T4.causal: the causal mask (token ``i`` attends to ``j ≤ i`` only)
MASK = Identity("mask", mu_[i, j], sp.Piecewise((-sp.oo, j > i), (0, True)), (i, j))
