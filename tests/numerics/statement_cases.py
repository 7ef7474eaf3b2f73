"""Instances drawn for a registered statement: Hypothesis strategies that enforce exactly the
hypotheses the statement lists and draw everything else generically.

``instances(theorem)`` reads ``theorem.hypothesis_ids``: a hypothesis present is enforced by
construction, one absent is not (so a statement mutant with a hypothesis removed is tried on
instances that violate it). Instances are dicts of float64 numpy arrays in the layout of
:mod:`theory.oracles`. ``holds(theorem, inst)`` judges every predicated hypothesis and
conclusion with the oracles; ``failures`` lists what does not hold.

Not collected by pytest (no ``test_`` prefix); used by ``test_statements.py``, ``test_necessity.py``,
``test_oracles.py`` and ``tests/theory/test_gate.py``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics import strategies as cst
from theory import oracles

KNOWN = {
    "T1": {"T1.factorisation", "T1.transport"},
    "T2": {"T2.heads", "T2.convention"},
    "T3": {"T3.a", "T3.b", "T3.c1", "T3.c2"},
    "T4": {"T4.softmax"},
    "T5": {"T5.softmax", "T5.reversible", "T5.involution"},
    "T6": {"T6.H1", "T6.H2", "T6.H3"},
}


def _el(lo=-2.0, hi=2.0):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)


def _arr(shape, lo=-2.0, hi=2.0):
    return hnp.arrays(np.float64, tuple(shape), elements=_el(lo, hi))


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().to(torch.float64).numpy()


def _orth(draw, d: int, k: int = 1) -> np.ndarray:
    return _np(draw(cst.orthogonal(d, k, dtype=torch.float64, device="cpu")))


def _sym_orth(draw, d: int, k: int = 1) -> np.ndarray:
    return _np(draw(cst.symmetric_orthogonal(d, k, dtype=torch.float64, device="cpu")))


def _stochastic(draw, n: int, lo: float = 1e-2) -> np.ndarray:
    W = draw(_arr((n, n), lo, 1.0))
    return W / W.sum(-1, keepdims=True)


# ---------------------------------------------------------------------------------------- T1
@st.composite
def _t1(draw, hyp):
    n, d, dh = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    X = draw(_arr((n, d)))
    M = draw(_arr((d, d), -1.5, 1.5))
    WV, WO = draw(_arr((dh, d), -1.5, 1.5)), draw(_arr((d, dh), -1.5, 1.5))
    A_X = oracles.softmax_rows(X @ M @ X.T / math.sqrt(d))
    Y = A_X @ (X @ WV.T) @ WO.T  # nn.Linear semantics, attention at X
    if "T1.factorisation" in hyp:
        A = A_X
    else:  # attention frozen at another input X0 (treating A as if SHA were linear in X)
        X0 = draw(_arr((n, d)))
        A = oracles.softmax_rows(X0 @ M @ X0.T / math.sqrt(d))
    T = WO @ WV if "T1.transport" in hyp else (WO @ WV).T
    return {"kind": "t1", "A": A, "T": T, "X": X, "Y": Y, "W_O": WO, "W_V": WV, "M": M}


# ---------------------------------------------------------------------------------------- T2
@st.composite
def _t2(draw, hyp):
    H, n, d = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    # shared attention (the constant-transport case), shared transport, two cancelling heads: T2's
    # special cases
    mode = draw(st.sampled_from(("free", "shared_A", "shared_T", "cancelling")))
    H = 2 if mode == "cancelling" else H
    base = _stochastic(draw, n)
    As = np.stack([base if mode in ("shared_A", "cancelling") else _stochastic(draw, n) for _ in range(H)])
    if "T2.heads" not in hyp:
        As = As * draw(_arr((H, n, 1), 0.3, 3.0))  # rows no longer sum to 1
    Ts = draw(_arr((H, d, d)))
    if mode == "shared_T":
        Ts = np.stack([Ts[0]] * H)
    elif mode == "cancelling":
        Ts = np.stack([Ts[0], -Ts[0]])
    inst = {"kind": "mha", "As": As, "Ts": Ts}
    if "T2.convention" not in hyp:
        inst["P"] = As[0] / As[0].sum(-1, keepdims=True)  # a different (row-stochastic) gauge
    return inst


# ---------------------------------------------------------------------------------------- T3
def _transports(draw, n, d, orth: bool, transpose: bool) -> np.ndarray:
    if orth:
        Q = _orth(draw, d, n * n).reshape(n, n, d, d)
        S = _sym_orth(draw, d, n)
    else:
        Q = draw(_arr((n, n, d, d)))
        S0 = draw(_arr((n, d, d)))
        S = (S0 + np.swapaxes(S0, -1, -2)) / 2
    if not transpose:
        return Q
    O = Q.copy()
    for i in range(n):
        O[i, i] = S[i]
        for j in range(i + 1, n):
            O[j, i] = Q[i, j].T
    return O


@st.composite
def _t3(draw, hyp):
    n, d = draw(st.integers(1, 4)), draw(st.integers(1, 2))
    inst: dict = {"kind": "walk"}
    if "T3.b" in hyp:
        K = draw(_arr((n, n), 1e-2, 1.0))
        K = (K + K.T) / 2
        if "T3.a" in hyp:
            P = K / K.sum(-1, keepdims=True)  # reversible, π ∝ row sums of K
        else:  # reversible for a drawn π, rows not summing to 1
            pi = draw(_arr((n,), 0.1, 1.0))
            P = K / pi[:, None] * draw(st.floats(0.3, 3.0))
            inst["pi"] = pi / pi.sum()
    else:
        P = _stochastic(draw, n, lo=1e-3)
        if "T3.a" not in hyp:
            P = P * draw(_arr((n, 1), 0.3, 3.0))
    inst["P"] = P
    full = {"T3.a", "T3.b", "T3.c1", "T3.c2"} <= hyp
    variant = draw(st.sampled_from(["general", "flat", "scaled"])) if full else "general"
    if variant == "flat":
        R = _orth(draw, d, n)
        inst["R"] = R
        inst["O"] = np.einsum("iab,jcb->ijac", R, R)
    else:
        inst["O"] = _transports(draw, n, d, "T3.c1" in hyp, "T3.c2" in hyp)
    if variant == "scaled":
        inst["s"] = draw(st.floats(0.2, 2.0))
    return inst


# ---------------------------------------------------------------------------------------- T4
@st.composite
def _t4(draw, hyp):
    full = "T4.softmax" in hyp
    n, d = draw(st.integers(3, 5) if full else st.integers(2, 4)), draw(st.integers(1, 3))
    M = draw(_arr((d, d), -1.5, 1.5))
    if draw(st.booleans()):  # symmetric scores: the premise of T4.criterion's formulas holds
        M = (M + M.T) / 2
    return {
        "kind": "softmax",
        "X": draw(_arr((n, d))),
        "M": M,
        "mask": None if full else "causal",
        "beta": draw(_arr((n,), -1.0, 1.0)),
    }


# ---------------------------------------------------------------------------------------- T5
@st.composite
def _t5(draw, hyp):
    d = draw(st.integers(1, 3))
    rev, soft = "T5.reversible" in hyp, "T5.softmax" in hyp
    n = draw(st.integers(2, 4) if rev else st.integers(3, 4))
    if rev:
        K = draw(_arr((n, n), 1e-2 if soft else 0.0, 1.0))
        if not soft:
            K = K * draw(hnp.arrays(np.bool_, (n, n)))
            K[np.diag_indices(n)] = np.maximum(K[np.diag_indices(n)], 1e-2)
        K = (K + K.T) / 2
        A = K / K.sum(-1, keepdims=True)
    else:
        X, M = draw(_arr((n, 2))), draw(_arr((2, 2), -1.5, 1.5))
        A = oracles.softmax_rows(X @ M @ X.T / math.sqrt(2))  # generic M: not reversible
        if not soft:
            A = A * (np.eye(n) + draw(hnp.arrays(np.bool_, (n, n))))
            A = A / A.sum(-1, keepdims=True)
    T = _sym_orth(draw, d)[0] if "T5.involution" in hyp else draw(_arr((d, d)))
    return {"kind": "sha", "A": A, "T": T}


# ---------------------------------------------------------------------------------------- T6
@st.composite
def _t6(draw, hyp):
    n = draw(st.integers(3, 8))
    rotating = draw(st.booleans())
    H, d = (1, 2) if rotating else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    if "T6.H3" in hyp:
        a = draw(_arr((H, n), 1e-2, 1.0))
        a = a / a.sum(-1, keepdims=True)
        idx = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
        A0 = a[:, idx]
    else:
        A0 = np.stack([_stochastic(draw, n) for _ in range(H)])
    if "T6.H1" not in hyp:
        A0 = A0 * draw(st.floats(0.3, 3.0))
    inst = {"kind": "ring", "A0": A0}
    if rotating:
        rho, th = draw(st.floats(0.2, 2.0)), draw(st.floats(-math.pi, math.pi))
        inst.update(
            rho=rho, theta=th, T=(rho * np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]]))[None]
        )
    else:
        inst["T"] = draw(_arr((H, d, d)))
    # the base state at which A0 = A(X) is taken: 1 ⊗ x* under (H2), any state otherwise
    inst["X"] = np.ones((n, 1)) * draw(_arr((1, d))) if "T6.H2" in hyp else draw(_arr((n, d)))
    return inst


_BUILDERS = {"T1": _t1, "T2": _t2, "T3": _t3, "T4": _t4, "T5": _t5, "T6": _t6}


def instances(theorem):
    """Strategy of instances enforcing exactly ``theorem``'s listed hypotheses."""
    hyp = set(theorem.hypothesis_ids)
    unknown = hyp - KNOWN[theorem.id]
    if unknown:
        raise KeyError(f"{theorem.id}: the sampler cannot enforce hypotheses {sorted(unknown)}")
    return _BUILDERS[theorem.id](hyp)


def failures(theorem, inst) -> dict[str, oracles.Verdict]:
    """Every predicated hypothesis or conclusion of ``theorem`` that the oracles reject on ``inst``
    (certainly: an undecided verdict is not a rejection)."""
    hyp, con = oracles.judge_theorem(theorem, inst)
    return {k: v for k, v in {**hyp, **con}.items() if v.fails}


def conclusions_hold(theorem, inst) -> bool:
    _, con = oracles.judge_theorem(theorem, inst)
    return all(v.holds for v in con.values())
