r"""The adapter interface: what a model family adapter yields per attention layer.

Contract (used by ``paper_checks``; keep these names):

* ``numerics.models.registry.load(name, *, dtype=torch.float32, device=None, seed=0) -> ModelHandle``
  where ``name`` is ``"minilm"``, ``"smollm2-135m"``, a local HF directory, a ``.gguf`` path, or
  ``"random:<name>"`` (same architecture, seeded random init: the null model).
* ``ModelHandle.layers(input_ids, attention_mask=None, *, keep=None) -> Iterator[LayerCapture]``
  streams one :class:`LayerCapture` per attention layer (``keep`` = optional set of layer indices).
* ``ModelHandle.tokenize(texts, length) -> input_ids`` ``(batch, length)`` exactly ``length`` tokens.

All tensors in a capture are detached, on CPU unless the caller asked otherwise, in the handle's
dtype; batch dim first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import torch


@dataclass
class LayerCapture:
    """One attention layer, captured on a batch of inputs.

    ``attn_input``  ``(B, n, d)``  hidden states after the norm that feeds attention (pre-norm
                    models: LN(x); post-norm BERT: the residual stream itself);
    ``A``           ``(B, H, n, n)`` per-query-head attention probabilities (eager; masks applied);
    ``W_O``         ``(H, d, d_h)`` and ``W_V`` ``(H, d_h, d)``: head factors, ``T_h = W_O[h] @ W_V[h]``
                    (GQA already mapped to query heads; norm gain folded into ``W_V`` iff
                    ``gain_folded``);
    ``offset``      ``(d,)`` affine bias offset ``c = W_O b_V + b_O``;
    ``attn_output`` ``(B, n, d)`` the model's own attention sub-layer output before the residual
                    add (captured with hooks) — the identity test compares ``walk.apply`` + c to it;
    ``norm_gain``   ``(d,)`` or None: the gain of the norm that feeds attention;
    ``mask``        ``(B, n)`` bool, True for real (non-padding) tokens.
    """

    layer: int
    attn_input: torch.Tensor
    A: torch.Tensor
    W_O: torch.Tensor
    W_V: torch.Tensor
    offset: torch.Tensor
    attn_output: torch.Tensor | None = None
    norm_gain: torch.Tensor | None = None
    gain_folded: bool = False
    mask: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)

    @property
    def transports(self) -> torch.Tensor:
        """``T_h`` ``(H, d, d)``."""
        return self.W_O @ self.W_V

    def walk(self):
        """The connection walk of this layer (factored; batch dim first)."""
        from numerics.walk import ConnectionWalk

        return ConnectionWalk.from_factors(self.A, self.W_O, self.W_V)


class ModelHandle(Protocol):
    name: str
    family: str  # "bert", "llama", "gpt2", "gemma3", "mpnet"
    kind: str  # "encoder" | "decoder"
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_model: int
    d_head: int
    n_params: int
    max_length: int
    model: object  # the Hugging Face model (eager attention, eval mode)
    tokenizer: object | None  # its tokenizer (None for tokenizer-less local dirs and tiny: models)

    def tokenize(self, texts: list[str], length: int) -> torch.Tensor: ...

    def layers(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, *, keep: set[int] | None = None
    ) -> Iterator[LayerCapture]: ...
