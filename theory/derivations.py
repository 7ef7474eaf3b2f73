"""Symbolic derivations of T1-T6 (and lemmas L1-L4) on generic SymPy instances.

Each ``derive_*`` function builds fully generic symbolic objects at the given sizes and returns a
:class:`~theory.symbolic.Derivation`: a list of named residuals that reduce to **exact zero**
(``expand`` / ``cancel`` / reduction modulo ``cos^2+sin^2=1`` or ``zeta^n=1``), plus necessity
witnesses whose residual must stay nonzero when a hypothesis is dropped.
Sizes are limited to what SymPy handles in seconds; a size outside the supported range raises
:class:`~theory.errors.UnsupportedSizeError` listing the ranges.
"""

from __future__ import annotations

from .derivation_sizes import (  # noqa: F401
    SIZES,
    _sym,
    sized,
)
from .derivations_spectral import (  # noqa: F401
    _spectrum_residual,
    derive_t3,
    derive_t4,
    derive_t5,
    derive_t6,
    t3_counterexamples,
    t6_fourier,
)
from .derivations_walks import (  # noqa: F401
    _gates,
    _head_blocks,
    _metric_transports,
    _q,
    _qmat,
    _softmax_like,
    _sym_weights,
    derive_l1,
    derive_l2,
    derive_l3,
    derive_l4,
    derive_t1,
    derive_t2,
    t2_counterexample,
)
from .symbolic import (  # noqa: F401
    Derivation,
    at_rational_point,
    block,
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
    stack_feature_major,
    stack_token_major,
    sylvester_resultant,
    symbol_matrix,
    symbol_vector,
    walk_matrix,
)

DERIVATIONS = {
    "L1": derive_l1,
    "L2": derive_l2,
    "L3": derive_l3,
    "L4": derive_l4,
    "T1": derive_t1,
    "T2": derive_t2,
    "T3": derive_t3,
    "T4": derive_t4,
    "T5": derive_t5,
    "T6": derive_t6,
}
