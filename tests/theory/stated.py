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
    """A row-stochastic walk on 2-4 tokens (full support)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    W = rng.uniform(0.1, 1.0, (n, n))
    return {"P": W / W.sum(-1, keepdims=True), "n": n}


WALKS = st.integers(0, 2**32 - 1).map(walk)
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
        "a stochastic walk's rows sum to one",
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
