"""The instance strategies of connwalk's own statements, as the gate (:mod:`theory.gate.run`) runs
them: per theorem a seeded generator of instances on which every hypothesis holds and whose structure
makes the mutant kinds visible (``n, d ≥ 2``, non-symmetric scores and transports, the special cases
the conclusions speak of a fair share of the time). The discriminating test files
(``tests/theory/test_discriminating*.py``) draw from these very strategies.

* T1: SHA with ``nn.Linear`` weights, attention at ``X``; T2: two or three row-stochastic heads with
  distinct attentions and transports, and shared attention, shared transport or cancelling heads a
  quarter of the time each, half of the draws sparse with a gauge ``P'``;
* T3: a connected reversible walk (a ring plus chords) with orthogonal transports, flat two thirds of the
  time; T4: softmax attention without mask, scores symmetric half of the time; T5: ``A = D⁻¹K`` with an
  orthogonal involution ``T``; T6: circulant heads of a positive kernel at a homogeneous state, a
  rotating wave half of the time.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st


def _softmax(S: np.ndarray) -> np.ndarray:
    E = np.exp(S - S.max(-1, keepdims=True))
    return E / E.sum(-1, keepdims=True)


def t1_instance(seed: int) -> dict:
    """A T1 instance (both hypotheses hold): SHA with ``nn.Linear`` weights, attention at ``X``."""
    rng = np.random.default_rng(seed)
    n, d, dh = int(rng.integers(2, 5)), int(rng.integers(2, 4)), int(rng.integers(1, 4))
    X = rng.uniform(-2, 2, (n, d))
    M = rng.uniform(-1.5, 1.5, (d, d))
    WV, WO = rng.uniform(-1.5, 1.5, (dh, d)), rng.uniform(-1.5, 1.5, (d, dh))
    A = _softmax(X @ M @ X.T / math.sqrt(d))
    Y = A @ (X @ WV.T) @ WO.T
    return {"kind": "t1", "A": A, "T": WO @ WV, "X": X, "Y": Y, "W_O": WO, "W_V": WV, "M": M}


def t2_instance(seed: int) -> dict:
    """A T2 instance (both hypotheses hold): row-stochastic heads; the mode (free, shared attention,
    shared transport, two cancelling heads) drawn uniformly; half of the draws sparse (a support
    shared by the heads, not symmetric) with a gauge ``P'`` positive on the transposed support."""
    rng = np.random.default_rng(seed)
    mode = ("free", "shared_A", "shared_T", "cancelling")[int(rng.integers(0, 4))]
    H = 2 if mode == "cancelling" else int(rng.integers(2, 4))
    n, d = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    sparse = rng.random() < 0.5
    # a support shared by every head, not symmetric (a zero A^h_ij for every h: off support)
    mask = (rng.random((n, n)) < 0.6) | np.eye(n, dtype=bool) if sparse else np.ones((n, n), bool)

    def head():
        W = rng.uniform(0.05, 1.0, (n, n)) * mask
        return W / W.sum(-1, keepdims=True)

    base = head()
    As = np.stack([base if mode in ("shared_A", "cancelling") else head() for _ in range(H)])
    Ts = rng.uniform(-2, 2, (H, d, d))
    if mode == "shared_T":
        Ts = np.stack([Ts[0]] * H)
    elif mode == "cancelling":
        Ts = np.stack([Ts[0], -Ts[0]])
    inst = {"kind": "mha", "As": As, "Ts": Ts}
    if sparse:  # a gauge positive on the transposed support: outside T2.gauge's premise unless symmetric
        G = rng.uniform(0.05, 1.0, (n, n)) * (mask.T | np.eye(n, dtype=bool))
        inst["Pg"] = G / G.sum(-1, keepdims=True)
    return inst


def _rotation(rng, d: int) -> np.ndarray:
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return Q


def walk_instance(seed: int) -> dict:
    """A T3 instance from ``seed`` (module docstring): every hypothesis of T3 holds."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    d = int(rng.integers(2, 4)) if rng.random() < 0.9 else 1
    W = np.zeros((n, n))
    for i in range(n):  # a ring (connected) plus random chords and self-loops
        W[i, (i + 1) % n] = W[(i + 1) % n, i] = rng.uniform(0.2, 2.0)
    chords = rng.random((n, n)) < 0.4
    W += np.triu(chords * rng.uniform(0.1, 1.5, (n, n)), 0)
    W = np.triu(W) + np.triu(W, 1).T
    P = W / W.sum(1, keepdims=True)
    flat = rng.random() < 2 / 3
    if flat:
        R = np.stack([_rotation(rng, d) for _ in range(n)])
        O = np.einsum("iac,jbc->ijab", R, R)
    else:
        R = None
        O = np.zeros((n, n, d, d))
        for i in range(n):
            for j in range(i, n):
                Q = _rotation(rng, d) if i != j else np.eye(d)
                O[i, j], O[j, i] = Q, Q.T
    out = {"kind": "walk", "P": P, "O": O, "s": float(rng.uniform(0.3, 2.0))}
    if R is not None:
        out["R"] = R
    return out


def t4_instance(seed: int) -> dict:
    """A T4 instance (T4.softmax holds): no mask, scores symmetric half of the time."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 6)), int(rng.integers(2, 4))
    M = rng.uniform(-1.5, 1.5, (d, d))
    if rng.random() < 0.5:
        M = (M + M.T) / 2
    return {
        "kind": "softmax",
        "X": rng.uniform(-1.5, 1.5, (n, d)),
        "M": M,
        "mask": None,
        "beta": rng.uniform(-1, 1, n),
    }


def _involution(rng, d: int) -> np.ndarray:
    """``I - 2 Q Qᵀ`` for ``k`` orthonormal columns ``Q`` (``k = 0..d``): ``dim Fix T = d - k``."""
    k = int(rng.integers(0, d + 1))
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return np.eye(d) - 2 * Q[:, :k] @ Q[:, :k].T


def t5_instance(seed: int) -> dict:
    """A T5 instance (every hypothesis holds): ``A = D⁻¹K`` (K symmetric positive), ``T`` an
    orthogonal involution."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    K = rng.uniform(0.05, 1.0, (n, n))
    K = (K + K.T) / 2
    return {"kind": "sha", "A": K / K.sum(-1, keepdims=True), "T": _involution(rng, d)}


def t6_instance(seed: int) -> dict:
    """A T6 instance (every hypothesis holds): circulant heads of a positive kernel, a homogeneous
    base state; half of the draws a single head whose transport is ``ρ R(θ)``."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    rotating = rng.random() < 0.5
    H, d = (1, 2) if rotating else (int(rng.integers(1, 3)), 2)
    a = rng.uniform(0.05, 1.0, (H, n))
    a = a / a.sum(-1, keepdims=True)
    idx = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    inst = {"kind": "ring", "A0": a[:, idx]}
    if rotating:
        rho, th = float(rng.uniform(0.3, 2.0)), float(rng.uniform(-math.pi, math.pi))
        R = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
        inst.update(rho=rho, theta=th, T=(rho * R)[None])
    else:
        inst["T"] = rng.uniform(-1.5, 1.5, (H, d, d))
    inst["X"] = np.ones((n, 1)) * rng.uniform(-1, 1, (1, d))
    return inst


def _seeded(f):
    return st.integers(0, 2**32 - 1).map(f)


#: theorem id -> the strategy of its instances (every conclusion with a predicate is judged on it)
STRATEGIES = {
    "T1": _seeded(t1_instance),
    "T2": _seeded(t2_instance),
    "T3": _seeded(walk_instance),
    "T4": _seeded(t4_instance),
    "T5": _seeded(t5_instance),
    "T6": _seeded(t6_instance),
}
