"""The spectral side's further formulas (T3's flat and scaled connections, T4's query bias, T5's
kernel, T6's rotating wave): :class:`theory.formulas.Identity` objects over symbolic sizes, with the
index conventions and the shared symbols of :mod:`theory.formulas`. The registry cites them in the
statements (``«name»``), THEOREMS.md renders them with ``sympy.latex`` and the oracles evaluate them
(:func:`theory.formulas.evaluate`)."""

from __future__ import annotations

import sympy as sp

from .formulas import _T4_SYMMETRIC, _T4_WHERE, A_, S_, Z_, Identity, i, j, k, n, pi_

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
