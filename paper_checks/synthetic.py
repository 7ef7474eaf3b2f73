r"""Constructed models with known answers, behind the same :class:`ModelHandle` contract.

A synthetic model is a stack of pre-norm attention-only layers on a random embedding:

    x ← x + MHA_l(LN(x)),   A^h_l = softmax(γ_l · q_hᵀk_h/√d_h + β · b(i − j) [+ causal mask]),

with a relative positional bias ``b(m) = −|m| / w`` shared by all layers and heads. Two knobs
produce known answers:

* ``content_decay`` ρ: ``γ_l = ρ^l``. With ρ < 1 the content term fades with depth, so the walks
  converge to the fixed positional kernel (E1 holds by construction); ``ρ = 0`` makes every
  layer's attention identical (all consecutive-layer distances are exactly 0 from layer 1 on;
  ``content_decay=None`` makes *all* layers purely positional).
* ``isometric``: ``W_O = s Q_1``, ``W_V = Q_2ᵀ`` with ``Q_1, Q_2`` orthogonal (``H d_h = d``), so
  every head transport is a scaled partial isometry and ``T_Σ = s Q_1 Q_2ᵀ`` a scaled orthogonal map
  (E2 defects 0 by construction). Otherwise weights are i.i.d. Gaussian, std ``1/√d`` (a random init).

Names understood by :func:`load`: ``synthetic:enc``, ``synthetic:dec`` (small: d=32, H=4, 6 layers),
``synthetic:enc-large``, ``synthetic:dec-large`` (d=64, H=8, 9 layers, faster content decay),
``synthetic:frozen`` (an encoder whose layers all have the same attention), each also as
``random:synthetic:...`` (same architecture, Gaussian weights, no positional bias: the null).
"""

from __future__ import annotations

import math

import torch

from numerics.attention import AttentionWeights, attention_probs, head_factors
from numerics.errors import ModelError, SequenceTooLongError, ShapeError
from numerics.models.base import LayerCapture
from paper_checks.names import SYNTHETIC_CONFIGS as CONFIGS
from paper_checks.names import SyntheticConfig, is_synthetic  # noqa: F401 (re-exported)

F64 = torch.float64


class SyntheticHandle:
    """A constructed model implementing the ``ModelHandle`` contract (see module docstring)."""

    family = "synthetic"

    def __init__(self, name: str, cfg: SyntheticConfig, seed: int = 0, dtype: torch.dtype = F64):
        if cfg.d % cfg.n_heads:
            raise ShapeError(f"d={cfg.d} is not a multiple of n_heads={cfg.n_heads}", argument="cfg")
        self.name = name
        self.cfg = cfg
        self.kind = cfg.kind
        self.n_layers = cfg.n_layers
        self.n_heads = cfg.n_heads
        self.n_kv_heads = cfg.n_heads
        self.d_model = cfg.d
        self.d_head = cfg.d // cfg.n_heads
        self.max_length = cfg.max_length
        self.dtype = dtype
        g = torch.Generator().manual_seed(int(seed) * 1_000_003 + (0 if cfg.trained else 1))
        d = cfg.d
        self.embed = torch.randn(cfg.vocab, d, generator=g, dtype=F64)
        self.weights: list[AttentionWeights] = []
        for _ in range(cfg.n_layers):
            Wq = torch.randn(d, d, generator=g, dtype=F64) / math.sqrt(d) * 2.0
            Wk = torch.randn(d, d, generator=g, dtype=F64) / math.sqrt(d) * 2.0
            if cfg.trained and cfg.isometric:
                Q1 = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0]
                Q2 = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F64))[0]
                Wo, Wv = cfg.gain * Q1, Q2.T.contiguous()
            else:
                Wo = torch.randn(d, d, generator=g, dtype=F64) / math.sqrt(d)
                Wv = torch.randn(d, d, generator=g, dtype=F64) / math.sqrt(d)
            self.weights.append(
                AttentionWeights(
                    W_Q=Wq.to(dtype), W_K=Wk.to(dtype), W_V=Wv.to(dtype), W_O=Wo.to(dtype), n_heads=cfg.n_heads
                )
            )
        self.n_params = int(self.embed.numel() + 4 * d * d * cfg.n_layers)

    # ---------------------------------------------------------------- contract
    def tokenize(self, texts: list[str], length: int) -> torch.Tensor:
        """Character codes mod vocab; exactly ``length`` tokens per text (too short: error)."""
        if length > self.max_length:
            raise SequenceTooLongError(f"{length} > max_length={self.max_length}", argument="length")
        rows = []
        for t in texts:
            if len(t) < length:
                raise ModelError(f"text of {len(t)} characters is shorter than length={length}", argument="texts")
            rows.append([ord(ch) % self.cfg.vocab for ch in t[:length]])
        return torch.tensor(rows, dtype=torch.long)

    def sample_ids(self, n_prompts: int, length: int, seed: int) -> torch.Tensor:
        if length > self.max_length:
            raise SequenceTooLongError(f"{length} > max_length={self.max_length}", argument="length")
        g = torch.Generator().manual_seed(int(seed))
        return torch.randint(0, self.cfg.vocab, (n_prompts, length), generator=g)

    def _bias(self, n: int) -> torch.Tensor | None:
        if not self.cfg.trained:
            return None
        m = torch.arange(n)[:, None] - torch.arange(n)[None, :]
        return (-(m.abs().to(F64)) / self.cfg.pos_width * self.cfg.pos_strength).to(self.dtype)

    def layers(self, input_ids: torch.Tensor, attention_mask=None, *, keep=None):
        ids = torch.as_tensor(input_ids)
        if ids.ndim != 2:
            raise ShapeError(f"expected (B, n), got {tuple(ids.shape)}", argument="input_ids")
        B, n = ids.shape
        if n > self.max_length:
            raise SequenceTooLongError(f"{n} > max_length={self.max_length}", argument="input_ids")
        X = self.embed[ids].to(self.dtype)
        bias = self._bias(n)
        causal = self.kind == "decoder"
        for l, w in enumerate(self.weights):
            Xn = (X - X.mean(-1, keepdim=True)) / X.std(-1, unbiased=False, keepdim=True)
            if self.cfg.trained:
                gamma = 0.0 if self.cfg.content_decay is None else self.cfg.content_decay**l
                wl = AttentionWeights(W_Q=w.W_Q * gamma, W_K=w.W_K, W_V=w.W_V, W_O=w.W_O, n_heads=w.n_heads)
            else:
                wl = w
            A = attention_probs(Xn, wl, causal=causal, attn_bias=bias)
            Wo, Wv = head_factors(w)
            Z = A @ (Xn[:, None] @ Wv.transpose(-1, -2))  # (B, H, n, d_h)
            Y = (Z @ Wo.transpose(-1, -2)).sum(1)  # (B, n, d): Σ_h A^h X T_hᵀ
            if keep is None or l in keep:
                yield LayerCapture(
                    layer=l,
                    attn_input=Xn,
                    A=A,
                    W_O=Wo,
                    W_V=Wv,
                    offset=torch.zeros(self.d_model, dtype=self.dtype),
                    attn_output=Y,
                    mask=torch.ones(B, n, dtype=torch.bool),
                )
            X = X + Y


def load(name: str, *, seed: int = 0, dtype: torch.dtype = F64) -> SyntheticHandle:
    """``synthetic:<cfg>`` or ``random:synthetic:<cfg>`` (see the module docstring)."""
    random = name.startswith("random:")
    key = name.removeprefix("random:").removeprefix("synthetic:")
    if key not in CONFIGS:
        raise ModelError(
            f"unknown synthetic model {name!r}; known: {', '.join('synthetic:' + k for k in CONFIGS)}", argument="name"
        )
    cfg = CONFIGS[key]
    if random:
        cfg = SyntheticConfig(**{**cfg.__dict__, "trained": False})
    return SyntheticHandle(name, cfg, seed=seed, dtype=dtype)
