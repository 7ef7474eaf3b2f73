r"""Conformance adapters for stand-alone Hugging Face attention modules (:mod:`numerics.conformance.kit`).

A whole model is checked layer by layer through :class:`numerics.models.adapters.HFModelHandle`;
these adapters take *one* attention module, as a researcher holds it, and supply what its parent
model would: the input ``X`` ``(B, n, d)`` drawn from the seed, the 4-D additive mask (causal for
decoders, the sliding window of a Gemma 3 sliding layer, key padding for encoders), RoPE position
embeddings for Llama / Gemma 3 (the family's rotary module on positions ``0..n−1``), and for MPNet a
drawn relative position bias ``(1, H, n, n)`` (its parent encoder owns the bucketed bias table).
The module runs with eager attention (set for the call, restored after) so its probabilities are
returned; built as cross-attention (``BertAttention`` / ``BertSelfAttention`` / ``GPT2Attention``
with ``is_cross_attention``), it is given a second drawn input as ``encoder_hidden_states`` and read
through the attention-interface capture (:mod:`numerics.conformance.hf_capture`); the output compared with the walk is the output projection's (``o_proj`` / ``c_proj`` /
``o`` / BERT ``output.dense``), before any residual add or norm.

=========================  =====================================================================
class                      walk factors read from the module
=========================  =====================================================================
``BertSelfAttention``      ``value``; no output projection (``W_O`` = identity, per head block)
``BertAttention``          ``self.value``, ``output.dense`` (hooked: before dropout + LayerNorm)
``MPNetSelfAttention``     ``v``, ``o``
``MPNetAttention``         ``attn.v``, ``attn.o`` (hooked: before dropout + LayerNorm)
``GPT2Attention``          ``c_attn`` (``Conv1D``: ``in × out``, transposed here), ``c_proj``
``LlamaAttention``         ``v_proj``, ``o_proj``; GQA: query head ``h`` reads kv head ``h // g``
``Gemma3Attention``        as Llama (QK-norm and the sliding window act on ``A`` only)
=========================  =====================================================================
"""

from __future__ import annotations

from typing import Any

import torch

from numerics.conformance.protocol import Adapter, Draw, EvalMode, Extraction, dtype_of
from numerics.errors import UnsupportedArchitectureError

__all__ = ["HF_ATTENTION_CLASSES", "HFAttentionAdapter", "hf_attention_adapter"]

HF_ATTENTION_CLASSES = (
    "BertSelfAttention",
    "BertAttention",
    "MPNetSelfAttention",
    "MPNetAttention",
    "GPT2Attention",
    "LlamaAttention",
    "Gemma3Attention",
)


def _heads_out(W: torch.Tensor, H: int) -> torch.Tensor:
    """``nn.Linear`` output projection ``(d, H d_h)`` → ``(H, d, d_h)``."""
    d = W.shape[0]
    return W.reshape(d, H, -1).permute(1, 0, 2)


class HFAttentionAdapter(Adapter):
    """One stand-alone Hugging Face attention module of the classes in :data:`HF_ATTENTION_CLASSES`."""

    H: int

    def __init__(self, module: Any) -> None:
        cls = type(module).__name__
        if cls not in HF_ATTENTION_CLASSES:
            raise UnsupportedArchitectureError(
                f"{cls} is not one of the Hugging Face attention classes {', '.join(HF_ATTENTION_CLASSES)}",
                argument="module",
            )
        self.module: Any = module
        self.cls = cls
        self.name = f"{cls} (stand-alone)"
        self.dtype = dtype_of(module)
        core: Any = module.self if cls == "BertAttention" else module.attn if cls == "MPNetAttention" else module
        self.core: Any = core
        config: Any = getattr(core, "config", None) or getattr(module, "config", None)
        self.config = config
        self.decoder = cls in ("GPT2Attention", "LlamaAttention", "Gemma3Attention") and bool(
            getattr(core, "is_causal", True)
        )
        self.takes_mask = not self.decoder
        # built as cross-attention (BertAttention(is_cross_attention=True), GPT2Attention(is_cross_attention=True)):
        # keys and values come from a second input of length m; read through the attention-interface capture
        self.cross = bool(getattr(module, "is_cross_attention", False) or getattr(core, "is_cross_attention", False))
        if self.cross:
            if cls not in ("BertAttention", "BertSelfAttention", "GPT2Attention"):
                raise UnsupportedArchitectureError(
                    f"{cls} built as cross-attention is not supported stand-alone; pass its whole model",
                    argument="module",
                )
            self.decoder, self.takes_mask = False, False
        if cls.startswith(("Bert", "MPNet")):
            self.H = int(self.core.num_attention_heads)
        elif cls == "GPT2Attention":
            self.H = int(self.core.num_heads)
        else:
            self.H = int(config.num_attention_heads)
        self.d_model = int(config.hidden_size) if self.cross else self._factors()[1].shape[2]
        self.max_length = None

    # ------------------------------------------------------------------ factors
    def _factors(self):
        """``(W_O (H, d, d_h), W_V (H, d_h, d), b_V (H, d_h) | None, b_O | None)`` as the module claims."""
        c, H = self.core, self.H
        if self.cls.startswith("Bert"):
            Wv, bv = c.value.weight, c.value.bias
            if self.cls == "BertAttention":
                Wo, bo = self.module.output.dense.weight, self.module.output.dense.bias
            else:
                Wo, bo = torch.eye(Wv.shape[0], dtype=Wv.dtype), None
            kv = list(range(H))
        elif self.cls.startswith("MPNet"):
            Wv, bv, Wo, bo = c.v.weight, c.v.bias, c.o.weight, c.o.bias
            kv = list(range(H))
        elif self.cls == "GPT2Attention":
            d = c.embed_dim
            Wv, bv = c.c_attn.weight[:, 2 * d :].T, c.c_attn.bias[2 * d :]
            Wo, bo = c.c_proj.weight.T, c.c_proj.bias
            kv = list(range(H))
        else:  # Llama / Gemma 3
            Wv, bv, Wo, bo = c.v_proj.weight, c.v_proj.bias, c.o_proj.weight, c.o_proj.bias
            g = c.num_key_value_groups
            kv = [h // g for h in range(H)]
        dh = Wo.shape[1] // H
        Wv = Wv.detach().reshape(-1, dh, Wv.shape[1])[torch.tensor(kv)]
        b_V = None if bv is None else bv.detach().reshape(-1, dh)[torch.tensor(kv)]
        return _heads_out(Wo.detach(), H), Wv, b_V, None if bo is None else bo.detach()

    # ------------------------------------------------------------------ inputs the parent would give
    def _mask(self, draw: Draw) -> torch.Tensor:
        n, dt = draw.n, self.dtype
        allowed = torch.ones(draw.batch, n, n, dtype=torch.bool)
        if self.decoder:
            allowed &= torch.ones(n, n, dtype=torch.bool).tril()
            w = getattr(self.core, "sliding_window", None)
            if w:
                i = torch.arange(n)
                allowed &= (i[:, None] - i[None, :]) < int(w)
        kpm = draw.key_padding_mask()
        if kpm is not None:
            allowed &= ~kpm[:, None, :]
        return torch.zeros(allowed.shape, dtype=dt).masked_fill(~allowed, torch.finfo(dt).min)[:, None]

    def _rope(self, X: torch.Tensor, n: int):
        import transformers.models.gemma3.modeling_gemma3 as g3
        import transformers.models.llama.modeling_llama as ll

        pos = torch.arange(n)[None].expand(X.shape[0], n)
        if self.cls == "LlamaAttention":
            return ll.LlamaRotaryEmbedding(self.config)(X, pos)
        rot = g3.Gemma3RotaryEmbedding(self.config)
        return rot(X, pos, self.core.layer_type)

    def _extract_cross(self, draw: Draw) -> list[Extraction]:
        from numerics.conformance.hf_capture import read_extraction, run_captured

        g = draw.generator()
        X = draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype, gen=g)
        E = draw.randn(draw.batch, draw.m, self.d_model, dtype=self.dtype, gen=g)
        cfg = self.config
        impl = getattr(cfg, "_attn_implementation", None)
        try:
            cfg._attn_implementation = "eager"
            records, calls = run_captured(self.module, lambda: self.module(X, encoder_hidden_states=E), [self.module])
        finally:
            cfg._attn_implementation = impl
        return [read_extraction(self.module, records, calls, None)]

    def extract(self, draw: Draw) -> list[Extraction]:
        if self.cross:
            return self._extract_cross(draw)
        g = draw.generator()
        X = draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype, gen=g)
        mask = self._mask(draw)
        kw: dict = {"attention_mask": mask}
        if self.cls in ("LlamaAttention", "Gemma3Attention"):
            kw["position_embeddings"] = self._rope(X, draw.n)
        if self.cls.startswith("MPNet"):
            kw["position_bias"] = draw.randn(1, self.H, draw.n, draw.n, dtype=self.dtype, gen=g)
            kw["output_attentions"] = True
        if self.cls == "GPT2Attention":
            kw["output_attentions"] = True
        hooked: dict = {}
        hook = None
        if self.cls == "BertAttention":
            hook = self.module.output.dense.register_forward_hook(lambda m, a, o: hooked.update(y=o))
        elif self.cls == "MPNetAttention":
            hook = self.core.o.register_forward_hook(lambda m, a, o: hooked.update(y=o))
        cfg = self.config
        impl = getattr(cfg, "_attn_implementation", None) if cfg is not None else None
        try:
            if cfg is not None and impl not in (None, "eager"):
                cfg._attn_implementation = "eager"
            with EvalMode(self.module), torch.no_grad():
                out = self.module(X, **kw)
        finally:
            if hook is not None:
                hook.remove()
            if cfg is not None and impl not in (None, "eager"):
                cfg._attn_implementation = impl
        y = hooked["y"] if hook is not None else out[0]
        A = out[-1] if self.cls.startswith("MPNet") else out[1]
        if A is None:
            raise UnsupportedArchitectureError(
                f"{self.cls} returned no attention probabilities (eager attention is required)", argument="module"
            )
        W_O, W_V, b_V, b_O = self._factors()
        kpm = draw.key_padding_mask()
        return [
            Extraction(
                y,
                A,
                W_O,
                W_V,
                X,
                b_V,
                b_O,
                None if kpm is None else ~kpm,
                torch.float32 if self.cls in ("LlamaAttention", "Gemma3Attention") else None,
            )
        ]


def hf_attention_adapter(module: torch.nn.Module) -> HFAttentionAdapter:
    return HFAttentionAdapter(module)
