"""Independent oracles: every registered hypothesis and conclusion as an executable predicate.

Each predicate is the *literal definition* of its statement, evaluated in dense float64 (numpy,
explicit block loops), in exact ``Fraction`` arithmetic or with mpmath at 40 digits — never with
the :mod:`numerics` code a theorem is about (this module imports neither torch nor numerics, and a
test enforces it). The property tests, the necessity searches and the statement mutants of
``tests/theory/test_gate.py`` all judge with these functions, reading the numbers of a statement
from its ``params`` (:mod:`theory.registry`).

An *instance* is a dict of float64 arrays; :func:`build` turns the exact data of a registered
witness (``{"kind": ..., ...}`` with ints and ``"p/q"`` strings) into one. Keys by kind:

* ``walk``: ``P`` (n, n), ``O`` (n, n, d, d), optional ``pi`` (n,), ``R`` (n, d, d) for a flat
  connection ``O_ij = R_i R_jᵀ``, ``s`` for the scaled variant ``s·O``;
* ``sha``: ``A`` (n, n), ``T`` (d, d) — the walk ``P = A``, ``O_ij = T``;
* ``sha_layers`` / ``sha_reuse`` (T1): ``A``, ``T``, ``X``, ``Y`` with ``Y`` computed literally;
* ``mha``: ``As`` (H, n, n), ``Ts`` (H, d, d), optional ``P``;
* ``softmax``: ``X`` (n, d), ``M`` (d, d), optional ``mask`` ("causal"), ``dk``, ``beta`` (n,);
* ``ring``: ``A0`` (H, n, n), ``T`` (H, d, d), optional ``rho``, ``theta`` (rotating wave).

Every predicate returns a :class:`Verdict` (``holds``, ``residual``, ``tol``, ``detail``,
``applicable``: False when the instance is outside the statement's premise, e.g. no flat
connection drawn — then ``holds`` is True and nothing was tested).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .generic import formulas_hold
from .instances import (  # noqa: F401
    EPS,
    Verdict,
    all_of,
    arr,
    build,
    dense_walk,
    dirichlet_scale,
    exact,
    not_applicable,
    null_space,
    pi_inner_product,
    probe_vectors,
    q,
    residual_verdict,
    softmax_rows,
    spectrum_in,
    stationary,
    tokens,
    walk_pi,
    walk_view,
)
from .laplacian import (  # noqa: F401
    block_detailed_balance,
    gauge_constraints,
    walk_dirichlet,
    walk_flat,
    walk_kernel_parallel,
    walk_scaled,
    walk_self_adjoint,
    walk_spectrum_interval,
)
from .spectral import (  # noqa: F401
    eig_count,
    homogeneous,
    ring_instance,
    ring_jacobian,
    ring_symbol,
    ring_symbols,
    sha_laplacian,
    t4_causal,
    t4_query_bias,
    t4_symmetric_reversible,
    t4_triangle,
    t5_kernel,
    t5_spectrum,
    t6_fourier,
    t6_rotating,
    t6_selection,
    walk_spectrum,
)
from .walks import (  # noqa: F401
    circulant,
    full_support,
    heads_B,
    heads_stochastic,
    kron_spectrum,
    kronecker_constant,
    multiset_distance,
    orthogonal,
    orthogonal_involution,
    p_is_head_mean,
    rearranged_blocks,
    reversible,
    softmax_full_support,
    stack,
    stochastic,
    t1_same_input,
    t1_transport_layout,
    t1_walk,
    t2_constant_criterion,
    t2_counterexample,
    t2_gated_walk,
    t2_gauge,
    t2_special,
    transpose_compatible,
)

PREDICATES: dict[str, Callable[[Mapping, Mapping], Verdict]] = {
    f.__name__: f
    for f in (
        stochastic,
        reversible,
        orthogonal,
        transpose_compatible,
        orthogonal_involution,
        full_support,
        heads_stochastic,
        p_is_head_mean,
        softmax_full_support,
        circulant,
        homogeneous,
        t1_same_input,
        t1_transport_layout,
        t1_walk,
        kron_spectrum,
        t2_gated_walk,
        t2_constant_criterion,
        t2_counterexample,
        t2_gauge,
        t2_special,
        walk_self_adjoint,
        walk_spectrum_interval,
        walk_spectrum,
        walk_dirichlet,
        block_detailed_balance,
        walk_kernel_parallel,
        walk_flat,
        walk_scaled,
        sha_laplacian,
        t5_spectrum,
        t5_kernel,
        t4_triangle,
        t4_symmetric_reversible,
        t4_query_bias,
        t4_causal,
        t6_fourier,
        t6_selection,
        t6_rotating,
        formulas_hold,  # the generic oracle of a stated formula (theory.api's statements)
    )
}


def judge(statement, inst: Mapping) -> Verdict:
    """Evaluate a registered hypothesis or conclusion (its ``predicate`` with its ``params``)."""
    if statement.predicate is None:
        raise ValueError(f"{statement.id}: no executable predicate")
    return PREDICATES[statement.predicate](inst, statement.params)


def judge_theorem(theorem, inst: Mapping) -> tuple[dict[str, Verdict], dict[str, Verdict]]:
    """``(hypotheses, conclusions)``: the verdict of every predicated statement of ``theorem``."""
    hyp = {h.id: judge(h, inst) for h in theorem.hypotheses if h.predicate}
    con = {c.id: judge(c, inst) for c in theorem.conclusions if c.predicate}
    return hyp, con
