r"""Build head attention ``A^h`` and head transports ``T_h`` from attention weights (T1, T2, §0).

Weights use torch ``nn.Linear`` layout (``out × in``): ``q = W_Q x + b_Q`` etc. With ``H`` query
heads of size ``d_h`` and ``H_kv`` key/value heads (GQA; ``H_kv = H`` for plain MHA), query head
``h`` reads kv head ``h // (H / H_kv)`` and

* ``A^h = softmax(Q_h K_{kv(h)}ᵀ · scale + mask)`` (scale ``1/√d_h`` by default),
* ``T_h = W_O[:, h·d_h:(h+1)·d_h] · W_V[kv(h)·d_h:(kv(h)+1)·d_h, :]``  (``d × d``, rank ≤ d_h),
* bias offset ``c = W_O b_V + b_O`` (added to every token when every ``A^h`` is row-stochastic),

so that ``MHA(X) = Σ_h A^h X T_hᵀ + 1 cᵀ``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.contracts.declarations import (
    Flag,
    Float,
    FloatDType,
    Instance,
    Int,
    Passthrough,
    Tensor,
    contract,
    declare,
)
from numerics.contracts.validate import as_tensor, check_finite, check_ndim, check_same
from numerics.errors import ParameterError, ShapeError
from numerics.walk import ConnectionWalk

__all__ = [
    "AttentionWeights",
    "kv_head_map",
    "head_factors",
    "head_transports",
    "bias_offset",
    "attention_probs",
    "walk_from_weights",
]


@contract(n_heads=Int(lo=1), n_kv_heads=Int(lo=1, optional=True))
def kv_head_map(n_heads: int, n_kv_heads: int | None = None) -> list[int]:
    """Index of the kv head read by each query head (GQA: ``h // (H / H_kv)``)."""
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    if n_kv < 1 or n_heads % n_kv:
        raise ShapeError(f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv}", argument="n_kv_heads")
    g = n_heads // n_kv
    return [h // g for h in range(n_heads)]


@dataclass
class AttentionWeights:
    """One attention layer's weights in ``nn.Linear`` layout.

    ``W_Q`` ``(H d_h, d)``, ``W_K``/``W_V`` ``(H_kv d_h, d)``, ``W_O`` ``(d, H d_h)``; biases optional.
    """

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    n_heads: int
    n_kv_heads: int | None = None
    b_Q: torch.Tensor | None = None
    b_K: torch.Tensor | None = None
    b_V: torch.Tensor | None = None
    b_O: torch.Tensor | None = None
    scale: float | None = None

    def __post_init__(self):
        checked = _WEIGHTS.validate({f: getattr(self, f) for f in _WEIGHTS.specs})
        for f, v in checked.items():
            setattr(self, f, v)
        names = ["W_Q", "W_K", "W_V", "W_O"]
        for nm in names:
            t = as_tensor(nm, getattr(self, nm))
            check_ndim(nm, t, 2, "(out, in)", max_ndim=2)
            check_finite(nm, t)
            setattr(self, nm, t)
        check_same(names, [getattr(self, nm) for nm in names])
        H = self.n_heads
        Hkv = self.n_kv_heads or H
        kv_head_map(H, Hkv)
        d = self.W_Q.shape[1]
        if self.W_Q.shape[0] % H:
            raise ShapeError(f"rows {self.W_Q.shape[0]} not divisible by n_heads={H}", argument="W_Q")
        dh = self.W_Q.shape[0] // H
        for nm in ("W_K", "W_V"):
            if tuple(getattr(self, nm).shape) != (Hkv * dh, d):
                raise ShapeError(f"expected ({Hkv * dh}, {d}), got {tuple(getattr(self, nm).shape)}", argument=nm)
        if tuple(self.W_O.shape) != (d, H * dh):
            raise ShapeError(f"expected ({d}, {H * dh}), got {tuple(self.W_O.shape)}", argument="W_O")
        for nm, size in (("b_Q", H * dh), ("b_K", Hkv * dh), ("b_V", Hkv * dh), ("b_O", d)):
            b = getattr(self, nm)
            if b is not None:
                b = as_tensor(nm, b)
                check_finite(nm, b)
                check_same(["W_Q", nm], [self.W_Q, b])
                if tuple(b.shape) != (size,):
                    raise ShapeError(f"expected ({size},), got {tuple(b.shape)}", argument=nm)
                setattr(self, nm, b)

    @property
    def d(self) -> int:
        return self.W_Q.shape[1]

    @property
    def d_head(self) -> int:
        return self.W_Q.shape[0] // self.n_heads

    @classmethod
    @contract(mha=Instance(torch.nn.MultiheadAttention, "a torch.nn.MultiheadAttention"))
    def from_torch_mha(cls, mha: torch.nn.MultiheadAttention) -> AttentionWeights:
        """Weights of a ``torch.nn.MultiheadAttention`` (packed ``in_proj``, same q/k/v dims)."""
        if mha.in_proj_weight is None:
            raise ShapeError("only packed in_proj (kdim == vdim == embed_dim) is supported", argument="mha")
        W = mha.in_proj_weight.detach()
        d = mha.embed_dim
        b = mha.in_proj_bias.detach() if mha.in_proj_bias is not None else None
        return cls(
            W_Q=W[:d],
            W_K=W[d : 2 * d],
            W_V=W[2 * d :],
            W_O=mha.out_proj.weight.detach(),
            n_heads=mha.num_heads,
            b_Q=None if b is None else b[:d],
            b_K=None if b is None else b[d : 2 * d],
            b_V=None if b is None else b[2 * d :],
            b_O=None if mha.out_proj.bias is None else mha.out_proj.bias.detach(),
        )

    @contract(self=Passthrough(), dtype=FloatDType(optional=True), device=Passthrough())
    def to(self, dtype=None, device=None) -> AttentionWeights:
        def g(t: torch.Tensor) -> torch.Tensor:
            return t.to(dtype=dtype, device=device)

        def f(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else g(t)

        return AttentionWeights(
            g(self.W_Q),
            g(self.W_K),
            g(self.W_V),
            g(self.W_O),
            self.n_heads,
            self.n_kv_heads,
            f(self.b_Q),
            f(self.b_K),
            f(self.b_V),
            f(self.b_O),
            self.scale,
        )


def _weights(**kw):
    return Instance(AttentionWeights, "an AttentionWeights", bind=lambda w: {"d": w.d}, tensor=lambda w: w.W_Q, **kw)


_WEIGHTS = declare(
    "numerics.attention.AttentionWeights",
    # the GQA sizes of W_K / W_V (H_kv·d_h rows) depend on n_kv_heads: checked in __post_init__
    W_Q=Tensor("q d"),
    W_K=Tensor("* d"),
    W_V=Tensor("* d"),
    W_O=Tensor("d q"),
    n_heads=Int(lo=1),
    n_kv_heads=Int(lo=1, optional=True),
    b_Q=Tensor("q", optional=True),
    b_K=Tensor("*", optional=True),
    b_V=Tensor("*", optional=True),
    b_O=Tensor("d", optional=True),
    scale=Float(optional=True, nonzero=True),
)


@contract(w=_weights())
def head_factors(w: AttentionWeights) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-query-head factors ``W_O^h`` ``(H, d, d_h)`` and ``W_V^h`` ``(H, d_h, d)`` (GQA mapped)."""
    H, dh, d = w.n_heads, w.d_head, w.d
    kv = torch.tensor(kv_head_map(H, w.n_kv_heads), device=w.W_V.device)
    Wv = w.W_V.reshape(-1, dh, d)[kv]  # (H, d_h, d)
    Wo = w.W_O.reshape(d, H, dh).permute(1, 0, 2)  # (H, d, d_h)
    return Wo, Wv


@contract(w=_weights())
def head_transports(w: AttentionWeights) -> torch.Tensor:
    """``T_h = W_O^h W_V^{kv(h)}`` ``(H, d, d)``."""
    Wo, Wv = head_factors(w)
    return Wo @ Wv


@contract(w=_weights())
def bias_offset(w: AttentionWeights) -> torch.Tensor:
    """``c = W_O b_V + b_O`` ``(d,)`` — the same for every token when each ``A^h`` is stochastic."""
    c = torch.zeros(w.d, dtype=w.W_O.dtype, device=w.W_O.device)
    if w.b_V is not None:
        Wo, _ = head_factors(w)
        kv = kv_head_map(w.n_heads, w.n_kv_heads)
        bv = w.b_V.reshape(-1, w.d_head)[torch.tensor(kv, device=c.device)]  # (H, d_h)
        c = c + torch.einsum("hdk,hk->d", Wo, bv)
    if w.b_O is not None:
        c = c + w.b_O
    return c


_PROBS = dict(
    w=_weights(),
    X=Tensor("... n d"),
    causal=Flag(),
    key_padding_mask=Tensor("... n", dtype="mask", optional=True),
    attn_bias=Tensor("...", neg_inf=True, optional=True, group=None),
)


def _refuse_all_masked_rows(S: torch.Tensor, who: str) -> None:
    if not bool(torch.isfinite(S).any(-1).all()):
        raise ParameterError(
            "masks every key of some query (an all −inf score row): its attention is undefined", argument=who
        )


@contract(**_PROBS)
def attention_probs(
    X, w: AttentionWeights, *, causal: bool = False, key_padding_mask=None, attn_bias=None
) -> torch.Tensor:
    """Softmax attention ``(..., H, n, n)`` for inputs ``X`` ``(..., n, d)``.

    ``key_padding_mask`` ``(..., n)`` bool, True = padded key (excluded). ``attn_bias`` is added to
    the scores (e.g. relative position bias) and broadcasts against ``(..., H, n, n)``."""
    X = as_tensor("X", X)
    check_ndim("X", X, 2, "(..., n, d)")
    check_finite("X", X)
    check_same(["W_Q", "X"], [w.W_Q, X])
    if X.shape[-1] != w.d:
        raise ShapeError(f"feature dim {X.shape[-1]} != weights' d={w.d}", argument="X")
    H, dh = w.n_heads, w.d_head
    n = X.shape[-2]
    q = X @ w.W_Q.T + (w.b_Q if w.b_Q is not None else 0)
    k = X @ w.W_K.T + (w.b_K if w.b_K is not None else 0)
    q = q.reshape(*X.shape[:-1], H, dh).transpose(-2, -3)  # (..., H, n, d_h)
    k = k.reshape(*X.shape[:-1], -1, dh).transpose(-2, -3)  # (..., H_kv, n, d_h)
    kv = torch.tensor(kv_head_map(H, w.n_kv_heads), device=X.device)
    k = k.index_select(-3, kv)
    scale = w.scale if w.scale is not None else 1.0 / math.sqrt(dh)
    S = (q @ k.transpose(-1, -2)) * scale
    if not bool(torch.isfinite(S).all()):
        # before any mask: a non-finite raw score is an overflow, never a masked key
        raise ParameterError("scores overflow to NaN/±inf (weights or inputs too large for this dtype)", argument="X")
    if attn_bias is not None:
        check_same(["X", "attn_bias"], [X, attn_bias])
        try:
            torch.broadcast_shapes(attn_bias.shape, S.shape)
        except RuntimeError:
            raise ShapeError(
                f"shape {tuple(attn_bias.shape)} does not broadcast against the scores {tuple(S.shape)} (..., H, n, n)",
                argument="attn_bias",
            ) from None
        S = S + attn_bias
        if bool((float("inf") == S).any()):
            raise ParameterError("scores + attn_bias overflow to +inf (too large for this dtype)", argument="attn_bias")
    if causal:
        m = torch.ones(n, n, dtype=torch.bool, device=X.device).triu(1)
        S = S.masked_fill(m, float("-inf"))
    # a query with every key masked: softmax would be 0/0 (NaN rows), never filled in. The causal mask
    # keeps the diagonal, so an all −inf row after it comes from attn_bias (alone or with causal).
    _refuse_all_masked_rows(S, "attn_bias")
    if key_padding_mask is not None:
        S = S.masked_fill(key_padding_mask[..., None, None, :], float("-inf"))
        _refuse_all_masked_rows(S, "key_padding_mask")
    return torch.softmax(S, dim=-1)


@contract(**_PROBS, factored=Flag())
def walk_from_weights(
    X, w: AttentionWeights, *, causal: bool = False, key_padding_mask=None, attn_bias=None, factored: bool = True
) -> tuple[ConnectionWalk, torch.Tensor]:
    """``(walk, c)`` with ``MHA(X) = walk.apply(X) + c``; transports kept as low-rank factors."""
    A = attention_probs(X, w, causal=causal, key_padding_mask=key_padding_mask, attn_bias=attn_bias)
    if factored:
        Wo, Wv = head_factors(w)
        walk = ConnectionWalk.from_factors(A, Wo, Wv)
    else:
        walk = ConnectionWalk.from_mha(A, head_transports(w))
    return walk, bias_offset(w)
