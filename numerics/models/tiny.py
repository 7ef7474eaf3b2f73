r"""Tiny random configurations of each supported family, built locally (no downloads).

``tiny_model(family, *, seed=0, dtype=torch.float64)`` returns an eval-mode ``transformers`` model with
eager attention and the family's distinctive features switched on:

* ``bert``   — post-norm encoder, biases everywhere (value bias → the affine offset ``c``);
* ``llama``  — GQA (H=4, H_kv=2), RoPE, RMSNorm, causal;
* ``gpt2``   — fused ``c_attn`` in ``Conv1D`` (in × out) layout, biases, causal;
* ``gemma3`` — GQA (H=4, H_kv=1), QK-norm, ``head_dim`` ≠ d/H, alternating sliding-window (window 4)
  and full attention, ``query_pre_attn_scalar`` scaling, Gemma's ``1 + w`` RMSNorm;
* ``mpnet``  — relative position bias added to the scores, post-norm.

Non-trivial norm gains and biases (drawn with the same seed) make gain folding testable.
"""

from __future__ import annotations

import torch

from numerics.models.names import TINY_FAMILIES, check_tiny_family

__all__ = ["TINY_FAMILIES", "tiny_config", "tiny_model"]

# ``TINY_FAMILIES`` lives in :mod:`numerics.models.names` (standard library: a command line checks
# ``tiny:<family>`` without importing torch)


def tiny_config(family: str, **overrides):
    """The ``transformers`` config of the tiny ``family`` model (``overrides`` replace fields)."""
    check_tiny_family(family)
    import transformers as tf

    common = dict(vocab_size=97, attn_implementation="eager", **overrides)
    if family == "bert":
        return tf.BertConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=64,
            **common,
        )
    if family == "llama":
        return tf.LlamaConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            **common,
        )
    if family == "gpt2":
        return tf.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0, **common)
    if family == "gemma3":
        return tf.Gemma3TextConfig(
            hidden_size=32,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=16,
            intermediate_size=64,
            max_position_embeddings=64,
            sliding_window=4,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
            query_pre_attn_scalar=24,
            **common,
        )
    if family == "mpnet":
        return tf.MPNetConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            max_position_embeddings=66,
            relative_attention_num_buckets=32,
            **common,
        )
    raise AssertionError(f"TINY_FAMILIES lists {family!r} but tiny_config has no config for it")


def tiny_model(family: str, *, seed: int = 0, dtype: torch.dtype = torch.float64, **overrides):
    """A seeded random tiny model of ``family`` (eval mode, eager attention, ``dtype``)."""
    import transformers as tf

    cfg = tiny_config(family, **overrides)
    cls = {
        "bert": tf.BertModel,
        "llama": tf.LlamaForCausalLM,
        "gpt2": tf.GPT2LMHeadModel,
        "gemma3": tf.Gemma3ForCausalLM,
        "mpnet": tf.MPNetModel,
    }[family]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(cfg)
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for name, p in model.named_parameters():
                # non-trivial norm gains / biases (HF initialises them to 1 / 0)
                if "norm" in name.lower() or name.split(".")[-2:][0].startswith("ln"):
                    p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
                elif name.endswith("bias"):
                    p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model.to(dtype).eval()
