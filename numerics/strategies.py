"""Public Hypothesis strategies for attention matrices, walks and transports.

Every strategy draws its entries through Hypothesis (so failures shrink to small, readable
matrices), returns torch tensors in ``dtype`` (float64 by default) on ``device`` (default:
:func:`numerics.device.default_device`), and allows sizes down to ``n = 1`` / ``d = 1``.

Quick map (THEOREMS.md ids in brackets):

=============================  =====================================================================
``row_stochastic``             nonnegative row-stochastic ``(batch.., n, n)``, optional zeros [T2, T3a]
``softmax_attention``          softmax of bilinear scores on random tokens, optional causal mask /
                               symmetric form; returns :class:`SoftmaxInstance` [T4]
``reversible_walks``           ``P = D⁻¹K`` from symmetric ``K ≥ 0`` with its ``π ∝ D`` [T3b]
``general_transports``         any ``(H, d, d)``
``low_rank_heads``             ``(W_O (H,d,d_h), W_V (H,d_h,d))`` head factors [T2]
``orthogonal``                 ``(k, d, d)`` orthogonal (QR of a drawn matrix, sign-fixed) [T3c]
``symmetric_orthogonal``       ``I − 2Π_U`` (orthogonal involutions) [T5]
``scaled_isometries``          ``(s, s·Q)`` [T3, scaled]
``flat_connections``           ``(R (n,d,d), O_ij = R_i R_jᵀ)`` [T3.5]
``metric_compatible_walks``    reversible ``P`` with orthogonal ``O_ij``, ``O_ji = O_ijᵀ`` [T3]
``mha_instances``              tokens + :class:`~numerics.attention.AttentionWeights` (biases, GQA) [T1, T2]
=============================  =====================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics.attention import AttentionWeights
from numerics.device import default_device

DEFAULT_DTYPE = torch.float64

__all__ = [
    "SoftmaxInstance",
    "MHAInstance",
    "arrays",
    "row_stochastic",
    "softmax_attention",
    "reversible_walks",
    "general_transports",
    "low_rank_heads",
    "orthogonal",
    "symmetric_orthogonal",
    "scaled_isometries",
    "flat_connections",
    "metric_compatible_walks",
    "mha_instances",
]


def _t(a: np.ndarray, dtype, device) -> torch.Tensor:
    return torch.as_tensor(
        np.ascontiguousarray(a), dtype=dtype or DEFAULT_DTYPE, device=device if device is not None else default_device()
    )


def _elements(lo: float, hi: float):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)


def arrays(shape, lo: float = -2.0, hi: float = 2.0, *, dtype=None, device=None):
    """Real arrays of ``shape`` with entries in ``[lo, hi]`` as torch tensors."""
    return hnp.arrays(np.float64, tuple(shape), elements=_elements(lo, hi)).map(lambda a: _t(a, dtype, device))


@st.composite
def row_stochastic(
    draw,
    n: int | None = None,
    *,
    batch: tuple = (),
    min_n: int = 1,
    max_n: int = 6,
    zeros: bool = False,
    dtype=None,
    device=None,
):
    """Row-stochastic ``(*batch, n, n)``. ``zeros=True`` allows zero entries (each row keeps >= 1
    positive entry); otherwise all entries are >= 1e-3 before normalisation (full support)."""
    n = n if n is not None else draw(st.integers(min_n, max_n))
    lo = 0.0 if zeros else 1e-3
    W = draw(hnp.arrays(np.float64, (*batch, n, n), elements=_elements(lo, 1.0)))
    if zeros:
        keep = draw(hnp.arrays(np.bool_, (*batch, n, n)))
        W = W * keep
        idx = draw(hnp.arrays(np.int64, (*batch, n), elements=st.integers(0, n - 1)))
        rows = np.take_along_axis(W, idx[..., None], -1)
        np.put_along_axis(W, idx[..., None], np.where(rows > 0, rows, 1.0), -1)
    W = W / W.sum(-1, keepdims=True)
    return _t(W, dtype, device)


@dataclass
class SoftmaxInstance:
    """``A = softmax(X M Xᵀ / √d_k + mask)``: tokens ``X`` (n, d), form ``M`` (d, d), scale, causal."""

    A: torch.Tensor
    X: torch.Tensor
    M: torch.Tensor
    scale: float
    causal: bool


@st.composite
def softmax_attention(
    draw,
    n: int | None = None,
    d: int | None = None,
    *,
    min_n: int = 1,
    max_n: int = 6,
    max_d: int = 4,
    causal: bool | None = False,
    symmetric: bool = False,
    dtype=None,
    device=None,
):
    """Softmax attention from a bilinear form (``symmetric=True``: ``M = Mᵀ``, T4's sufficient
    condition); ``causal=None`` draws the mask flag."""
    n = n if n is not None else draw(st.integers(min_n, max_n))
    d = d if d is not None else draw(st.integers(1, max_d))
    causal = draw(st.booleans()) if causal is None else causal
    X = draw(hnp.arrays(np.float64, (n, d), elements=_elements(-2, 2)))
    M = draw(hnp.arrays(np.float64, (d, d), elements=_elements(-1.5, 1.5)))
    if symmetric:
        M = (M + M.T) / 2
    scale = 1.0 / np.sqrt(d)
    S = X @ M @ X.T * scale
    if causal:
        S = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, S)
    S = S - S.max(-1, keepdims=True)
    E = np.exp(S)
    A = E / E.sum(-1, keepdims=True)
    return SoftmaxInstance(_t(A, dtype, device), _t(X, dtype, device), _t(M, dtype, device), float(scale), causal)


@st.composite
def reversible_walks(
    draw, n: int | None = None, *, min_n: int = 1, max_n: int = 6, zeros: bool = False, dtype=None, device=None
):
    """``(P, π)`` with ``P = D⁻¹K``, ``K = Kᵀ ≥ 0``, ``π = diag(D)/Σ D`` (detailed balance exact).

    ``zeros=True`` allows zero off-diagonal weights (the graph may be disconnected); the diagonal
    stays positive so no row is empty."""
    n = n if n is not None else draw(st.integers(min_n, max_n))
    K = draw(hnp.arrays(np.float64, (n, n), elements=_elements(0.0 if zeros else 1e-2, 1.0)))
    if zeros:
        K = K * draw(hnp.arrays(np.bool_, (n, n)))
        K[np.diag_indices(n)] = np.maximum(K[np.diag_indices(n)], 1e-2)
    K = (K + K.T) / 2
    D = K.sum(-1)
    P = K / D[:, None]
    return _t(P, dtype, device), _t(D / D.sum(), dtype, device)


def general_transports(H: int, d: int, *, lo: float = -2.0, hi: float = 2.0, dtype=None, device=None):
    """Arbitrary ``(H, d, d)`` transports."""
    return arrays((H, d, d), lo, hi, dtype=dtype, device=device)


@st.composite
def low_rank_heads(draw, H: int, d: int, d_head: int | None = None, *, dtype=None, device=None):
    """Head factors ``(W_O (H, d, d_h), W_V (H, d_h, d))``; ``T_h = W_O[h] W_V[h]`` has rank ≤ d_h."""
    dh = d_head if d_head is not None else draw(st.integers(1, max(1, d)))
    Wo = draw(hnp.arrays(np.float64, (H, d, dh), elements=_elements(-1.5, 1.5)))
    Wv = draw(hnp.arrays(np.float64, (H, dh, d), elements=_elements(-1.5, 1.5)))
    return _t(Wo, dtype, device), _t(Wv, dtype, device)


def _orthonormalise(G: np.ndarray) -> np.ndarray:
    """QR with the sign of R's diagonal fixed (a well-defined map to O(d))."""
    Q, R = np.linalg.qr(G)
    s = np.sign(np.diagonal(R, axis1=-2, axis2=-1))
    s = np.where(s == 0, 1.0, s)
    return Q * s[..., None, :]


def _well_conditioned(G: np.ndarray) -> np.ndarray:
    # keep QR stable: add a multiple of I when the drawn matrix is (nearly) singular
    d = G.shape[-1]
    return G + 3.0 * np.eye(d)


@st.composite
def orthogonal(draw, d: int, k: int = 1, *, dtype=None, device=None):
    """``(k, d, d)`` orthogonal matrices (both determinants occur)."""
    G = draw(hnp.arrays(np.float64, (k, d, d), elements=_elements(-2, 2)))
    flips = draw(hnp.arrays(np.bool_, (k,)))
    Q = _orthonormalise(_well_conditioned(G))
    Q[flips, :, 0] *= -1
    return _t(Q, dtype, device)


@st.composite
def symmetric_orthogonal(draw, d: int, k: int = 1, *, dtype=None, device=None):
    """``(k, d, d)`` orthogonal involutions ``I − 2Π_U`` (U of random dimension 0..d)."""
    out = []
    for _ in range(k):
        r = draw(st.integers(0, d))
        Q = draw(orthogonal(d, 1, dtype=torch.float64, device="cpu"))[0].numpy()
        U = Q[:, :r]
        out.append(np.eye(d) - 2 * U @ U.T)
    return _t(np.stack(out), dtype, device)


@st.composite
def scaled_isometries(draw, d: int, k: int = 1, *, s_min: float = 0.1, s_max: float = 2.0, dtype=None, device=None):
    """``(s, s·Q)`` with one scale ``s`` and ``(k, d, d)`` orthogonal ``Q``."""
    s = draw(st.floats(s_min, s_max, allow_nan=False))
    Q = draw(orthogonal(d, k, dtype=dtype, device=device))
    return s, s * Q


@st.composite
def flat_connections(draw, n: int, d: int, *, dtype=None, device=None):
    """``(R, O)``: frames ``R`` ``(n, d, d)`` orthogonal and ``O_ij = R_i R_jᵀ`` ``(n, n, d, d)``."""
    R = draw(orthogonal(d, n, dtype=dtype, device=device))
    O = torch.einsum("iab,jcb->ijac", R, R)
    return R, O


@st.composite
def metric_compatible_walks(
    draw,
    n: int | None = None,
    d: int | None = None,
    *,
    min_n: int = 1,
    max_n: int = 5,
    max_d: int = 3,
    dtype=None,
    device=None,
):
    """``(P, O, π)``: reversible stochastic ``P`` with ``π``, orthogonal ``O_ij`` with
    ``O_ji = O_ijᵀ`` and symmetric orthogonal ``O_ii`` — all three hypotheses of T3."""
    n = n if n is not None else draw(st.integers(min_n, max_n))
    d = d if d is not None else draw(st.integers(1, max_d))
    P, pi = draw(reversible_walks(n, dtype=torch.float64, device="cpu"))
    Q = draw(orthogonal(d, n * n, dtype=torch.float64, device="cpu")).reshape(n, n, d, d)
    S = draw(symmetric_orthogonal(d, n, dtype=torch.float64, device="cpu"))
    O = torch.empty(n, n, d, d, dtype=torch.float64)
    for i in range(n):
        O[i, i] = S[i]
        for j in range(i + 1, n):
            O[i, j] = Q[i, j]
            O[j, i] = Q[i, j].T
    dev = device if device is not None else default_device()
    dt = dtype or DEFAULT_DTYPE
    return P.to(dev, dt), O.to(dev, dt), pi.to(dev, dt)


@dataclass
class MHAInstance:
    X: torch.Tensor  # (batch, n, d)
    weights: AttentionWeights
    causal: bool


@st.composite
def mha_instances(
    draw,
    *,
    max_n: int = 6,
    max_heads: int = 3,
    max_d_head: int = 3,
    batch: int | None = None,
    gqa: bool = True,
    biases: bool | None = None,
    causal: bool | None = None,
    dtype=None,
    device=None,
):
    """Tokens and attention weights: ``H`` heads of size ``d_h``, ``H_kv | H`` kv heads when
    ``gqa``, optional biases on q/k/v/o, optional causal mask. ``d = H·d_h`` (as in torch MHA)."""
    n = draw(st.integers(1, max_n))
    H = draw(st.integers(1, max_heads))
    dh = draw(st.integers(1, max_d_head))
    divisors = [k for k in range(1, H + 1) if H % k == 0]
    Hkv = draw(st.sampled_from(divisors)) if gqa else H
    d = H * dh
    B = batch if batch is not None else draw(st.integers(1, 2))
    biases = draw(st.booleans()) if biases is None else biases
    causal = draw(st.booleans()) if causal is None else causal
    el = _elements(-1, 1)
    get = lambda shape: _t(draw(hnp.arrays(np.float64, shape, elements=el)), dtype, device)
    X = _t(draw(hnp.arrays(np.float64, (B, n, d), elements=_elements(-2, 2))), dtype, device)
    w = AttentionWeights(
        W_Q=get((H * dh, d)),
        W_K=get((Hkv * dh, d)),
        W_V=get((Hkv * dh, d)),
        W_O=get((d, H * dh)),
        n_heads=H,
        n_kv_heads=Hkv,
        b_Q=get((H * dh,)) if biases else None,
        b_K=get((Hkv * dh,)) if biases else None,
        b_V=get((Hkv * dh,)) if biases else None,
        b_O=get((d,)) if biases else None,
    )
    return MHAInstance(X, w, causal)


# ---------------------------------------------------------------------------------- large sizes
SCALE_ENV = "CONNWALK_SCALE_MAX_N"


def scale_max_n(default: int = 48) -> int:
    """Largest ``n`` the at-scale strategies draw: ``$CONNWALK_SCALE_MAX_N`` (e.g. 1024 on a GPU),
    else ``default`` (small enough for CI on a CPU)."""
    import os

    raw = os.environ.get(SCALE_ENV)
    if not raw:
        return default
    try:
        val = int(raw)
    except ValueError:
        val = 0
    if val < 2:
        from numerics.errors import ParameterError

        raise ParameterError(f"must be an integer >= 2, got {raw!r}", argument=SCALE_ENV)
    return val


@dataclass
class SeededWalk:
    """An at-scale instance built on ``device`` from a drawn seed (entries are not drawn one by one,
    so sizes up to n = 1024 stay cheap; a failure is reproduced by its ``(n, d, H, seed)``)."""

    n: int
    d: int
    H: int
    seed: int
    X: torch.Tensor  # (n, d)
    A: torch.Tensor  # (H, n, n) row-stochastic (softmax of random scores, optionally causal)
    T: torch.Tensor  # (H, d, d)
    causal: bool


@st.composite
def seeded_walks(draw, *, max_n: int | None = None, max_d: int = 16, max_heads: int = 4, dtype=None, device=None):
    """``SeededWalk`` with ``n`` up to :func:`scale_max_n` (log-uniform), ``d ≤ max_d``, ``H ≤ max_heads``."""
    top = max_n if max_n is not None else scale_max_n()
    exp = draw(st.integers(1, max(1, int(np.log2(top)))))
    n = draw(st.integers(2 ** (exp - 1) + (exp > 1), min(2**exp, top)))
    d = draw(st.integers(1, max_d))
    H = draw(st.integers(1, max_heads))
    seed = draw(st.integers(0, 2**31 - 1))
    causal = draw(st.booleans())
    dev = device if device is not None else default_device()
    dt = dtype or DEFAULT_DTYPE
    g = torch.Generator(device="cpu").manual_seed(seed)
    S = torch.randn(H, n, n, generator=g, dtype=torch.float64) * 2.0
    if causal:
        S = S.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    A = torch.softmax(S, dim=-1)
    T = torch.randn(H, d, d, generator=g, dtype=torch.float64) / max(d, 1) ** 0.5
    X = torch.randn(n, d, generator=g, dtype=torch.float64)
    return SeededWalk(n, d, H, seed, X.to(dev, dt), A.to(dev, dt), T.to(dev, dt), causal)
