"""The spectral side's further formulas (T3's flat and scaled connections, T4's query bias, T5's
kernel, T6's rotating wave): :class:`theory.formulas.Identity` objects over symbolic sizes, with the
index conventions and the shared symbols of :mod:`theory.formulas`. The registry cites them in the
statements (``«name»``), THEOREMS.md renders them with ``sympy.latex`` and the oracles evaluate them
(:func:`theory.formulas.evaluate`)."""

from __future__ import annotations

import sympy as sp

from .formulas import (
    _T4_SYMMETRIC,
    _T4_WHERE,
    A_,
    DIRICHLET_SUM,
    O_,
    P_,
    PI_FORM,
    S_,
    Z_,
    Identity,
    _walk,
    a,
    b,
    c,
    d,
    i,
    j,
    k,
    n,
    pi_,
    x_,
)

beta_ = sp.IndexedBase("beta", real=True)

#: T4: a query bias adds ``β_j`` to every score ``S_ij`` (a key bias adds ``β_i``, which the softmax
#: cancels); with symmetric scores the attention stays reversible with ``π_i = e^{β_i} Z_i``
QUERY_BIAS = Identity(
    "query_bias",
    pi_[i] * A_[i, j],
    pi_[j] * A_[j, i],
    (i, j),
    _T4_SYMMETRIC,
    (
        _T4_WHERE[0],
        (Z_[i], sp.Sum(sp.exp(S_[i, k] + beta_[k]), (k, 0, n - 1))),
        (A_[i, j], sp.exp(S_[i, j] + beta_[j]) / Z_[i]),
        (pi_[i], sp.exp(beta_[i]) * Z_[i]),
    ),
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
    _walk(x_),
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
