"""Symbolic derivations of T1-T6 (and lemmas L1-L4) on generic SymPy instances.

Each ``derive_*`` function builds fully generic symbolic objects at the given sizes and returns a
:class:`~theory.symbolic.Derivation`: a list of named residuals that reduce to **exact zero**
(``expand`` / ``cancel`` / reduction modulo ``cos^2+sin^2=1`` or ``zeta^n=1``), plus necessity
witnesses whose residual must stay nonzero when a hypothesis is dropped.
Sizes are limited to what SymPy handles in seconds; a size outside the supported range raises
:class:`~theory.errors.UnsupportedSizeError` listing the ranges.
"""

from __future__ import annotations

from ..symbolic import (  # noqa: F401
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
from .sizes import (  # noqa: F401
    SIZES,
    sized,
    sized_symbol,
)
from .spectral import (  # noqa: F401
    derive_t3,
    derive_t4,
    derive_t5,
    derive_t6,
    spectrum_residual,
    t3_counterexamples,
    t6_fourier,
)
from .walks import (  # noqa: F401
    derive_l1,
    derive_l2,
    derive_l3,
    derive_l4,
    derive_t1,
    derive_t2,
    gate_matrices,
    head_blocks,
    rational_matrix,
    softmax_like,
    symbolic_metric_transports,
    symbolic_symmetric_weights,
    t2_counterexample,
    to_rational,
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
