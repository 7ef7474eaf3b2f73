"""Statements written against the public API (:mod:`theory.api`) for the gate's tests: a walk strategy
and two statements about it — one true (rows sum to one), one false in a way a reviewer could miss
(the generator ``I - P`` symmetric: true for the symmetric walks a quick check might draw, false
without reversibility). Not collected by pytest (no ``test_`` prefix)."""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import strategies as st

from theory import api

P = sp.IndexedBase("P")
L = sp.IndexedBase("L")


def walk(seed: int) -> dict:
    """A row-stochastic walk on 2-4 tokens (full support), from a seed."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    W = rng.uniform(0.1, 1.0, (n, n))
    return {"P": W / W.sum(-1, keepdims=True), "n": n}


def _normalised(W: list[list[float]]) -> dict:
    A = np.asarray(W, dtype=np.float64)
    return {"P": A / A.sum(-1, keepdims=True), "n": len(W)}


#: row-stochastic walks on 2-4 tokens drawn entry by entry (weights in [1/10, 1]), so Hypothesis shrinks a
#: counterexample to the fewest tokens and the simplest weights
WALKS = (
    st.integers(2, 4)
    .flatmap(lambda n: st.lists(st.lists(st.floats(0.1, 1.0), min_size=n, max_size=n), min_size=n, max_size=n))
    .map(_normalised)
)
ROWS = api.identity("rows", sp.Sum(P[api.i, api.k], (api.k, 0, api.n - 1)), 1, free=(api.i,))
SYMMETRIC = api.identity(
    "symmetric",
    L[api.i, api.j],
    L[api.j, api.i],
    free=(api.i, api.j),
    where=((L[api.i, api.j], sp.KroneckerDelta(api.i, api.j) - P[api.i, api.j]),),
)


def true_statement(sid: str = "MINE") -> api.Theorem:
    return api.statement(
        sid,
        "the rows of a stochastic walk",
        conclusions=[api.conclusion(f"{sid}.rows", "every row: «rows»", formulas={"rows": ROWS}, strategy=WALKS)],
    )


def false_statement(sid: str = "MINE_SYM") -> api.Theorem:
    return api.statement(
        sid,
        "the walk's generator is symmetric",
        conclusions=[
            api.conclusion(f"{sid}.symmetric", "«symmetric»", formulas={"symmetric": SYMMETRIC}, strategy=WALKS)
        ],
    )
