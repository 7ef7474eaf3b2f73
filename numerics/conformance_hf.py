"""A documented import path kept working: the code is :mod:`numerics.conformance.hf` (its public names, re-exported)."""

from numerics.conformance.hf import (
    HF_ATTENTION_CLASSES,
    HFAttentionAdapter,
    hf_attention_adapter,
)

__all__ = [
    "HF_ATTENTION_CLASSES",
    "HFAttentionAdapter",
    "hf_attention_adapter",
]
