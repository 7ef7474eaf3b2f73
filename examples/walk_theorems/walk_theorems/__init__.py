"""Two statements about reversible walks, stated with :mod:`theory.api` (formulas, not tests):

* ``WALK_STATIONARY`` (true): for a walk ``P = D⁻¹K`` of a symmetric positive weight matrix ``K``, the
  degrees normalised, ``π_i = d_i / Σ_k d_k``, are stationary: ``Σ_i π_i P_ij = π_j``.
* ``WALK_SYMMETRIC`` (false, and easy to miss): "the generator ``Δ = I − P`` of such a walk is
  symmetric". Reversibility makes ``D_π P`` symmetric, not ``P``; the claim holds only when every degree
  is the same (a regular graph, the example a reviewer checks by hand), and the gate's property test
  finds — and shrinks — a walk on two tokens with unequal degrees.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import strategies as st

from theory import api

P, pi, L = sp.IndexedBase("P"), sp.IndexedBase("pi"), sp.IndexedBase("L")
i, j, n = api.i, api.j, api.n


def _walk(weights: list[list[float]]) -> dict:
    """The walk ``D⁻¹K`` of ``K`` = the weights made symmetric, and ``π`` its normalised degrees."""
    W = np.triu(np.asarray(weights, dtype=np.float64))
    K = W + np.triu(W, 1).T
    deg = K.sum(-1)
    return {"P": K / deg[:, None], "pi": deg / deg.sum(), "n": len(weights)}


#: reversible walks on 2-4 tokens, weights in [1/10, 1] drawn entry by entry (so a counterexample shrinks)
REVERSIBLE_WALKS = (
    st.integers(2, 4)
    .flatmap(lambda k: st.lists(st.lists(st.floats(0.1, 1.0), min_size=k, max_size=k), min_size=k, max_size=k))
    .map(_walk)
)

STATIONARY = api.identity("stationary", sp.Sum(pi[i] * P[i, j], (i, 0, n - 1)), pi[j], free=(j,))
SYMMETRIC = api.identity(
    "symmetric",
    L[i, j],
    L[j, i],
    free=(i, j),
    where=((L[i, j], sp.KroneckerDelta(i, j) - P[i, j]),),
)
REVERSIBLE = api.hypothesis(
    "WALK_STATIONARY.reversible", "reversible", "$P = D^{-1} K$ with $K$ symmetric and positive, $D$ its degrees"
)

WALK_STATIONARY = api.statement(
    "WALK_STATIONARY",
    "the normalised degrees are stationary",
    hypotheses=[REVERSIBLE],
    conclusions=[
        api.conclusion(
            "WALK_STATIONARY.pi",
            "the normalised degrees $\\pi$ satisfy «stationary»",
            formulas={"stationary": STATIONARY},
            strategy=REVERSIBLE_WALKS,
        )
    ],
)
WALK_SYMMETRIC = api.statement(
    "WALK_SYMMETRIC",
    "the generator of a reversible walk is symmetric",
    hypotheses=[api.hypothesis("WALK_SYMMETRIC.reversible", "reversible", REVERSIBLE.statement)],
    conclusions=[
        api.conclusion(
            "WALK_SYMMETRIC.generator",
            "the generator is symmetric: «symmetric»",
            formulas={"symmetric": SYMMETRIC},
            strategy=REVERSIBLE_WALKS,
        )
    ],
)

#: what the entry point ``walk_theorems = "walk_theorems:STATEMENTS"`` registers
STATEMENTS = [WALK_STATIONARY, WALK_SYMMETRIC]
