r"""Family specs: where each supported Hugging Face family (BERT, Llama, Gemma 3, GPT-2, MPNet) keeps
its layers, attention module, output projection, attention weights (``nn.Linear`` layout, GQA mapped
to query heads) and the norm feeding attention; ``config.model_type`` → family; reading parameters
also when ``accelerate`` offloaded them; the norm decomposition ``norm(x) = g ⊙ x̂ + β`` used for gain
folding. :mod:`numerics.models.adapters` (the capturing handle) re-exports the public names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from numerics.errors import ModelError, UnsupportedArchitectureError

__all__ = ["FamilySpec", "FAMILIES", "SUPPORTED_MODEL_TYPES", "family_of"]


# --------------------------------------------------------------------------- family specs
@dataclass(frozen=True)
class FamilySpec:
    """Where each piece lives in a family's modules.

    ``layers(base)`` → list of layer modules; ``attn(layer)`` → the module whose input is the
    attention input and whose output carries the probabilities; ``out(layer)`` → the output
    projection (its output is ``attn_output``); ``weights(layer)`` → :class:`AttentionWeights`
    (``nn.Linear`` layout); ``norm(base, layers, l)`` → ``(module, kind)`` of the norm that feeds
    layer ``l``'s attention, ``kind`` in ``{"layernorm", "rmsnorm", "rmsnorm1p"}``."""

    family: str
    kind: str
    layers: Callable
    attn: Callable
    out: Callable
    weights: Callable
    norm: Callable
    max_length: Callable
    force_output_attentions: bool = False


def module_param(module, name: str):
    """``module.<name>`` as a real tensor, also when ``accelerate`` offloaded it (then the parameter
    is on the ``meta`` device outside the module's own forward, and the values live in the
    hook's ``weights_map`` on CPU or disk)."""
    t = getattr(module, name, None)
    if t is None or t.device.type != "meta":
        return t
    hook = getattr(module, "_hf_hook", None)
    for hk in [hook] + list(getattr(hook, "hooks", []) or []):
        wm = getattr(hk, "weights_map", None)
        if wm is not None and name in wm:
            dev = getattr(hk, "execution_device", None)
            v = wm[name]
            return v.to(dev) if dev is not None else v
    raise ModelError(
        f"parameter {name} of {type(module).__name__} is on the meta device and no accelerate weights map holds it",
        argument="model",
    )


def _lin(m):
    return module_param(m, "weight"), module_param(m, "bias")


def _bert_weights(layer, cfg):
    s = layer.attention.self
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = (
        _lin(s.query),
        _lin(s.key),
        _lin(s.value),
        _lin(layer.attention.output.dense),
    )
    return dict(
        W_Q=Wq,
        W_K=Wk,
        W_V=Wv,
        W_O=Wo,
        b_Q=bq,
        b_K=bk,
        b_V=bv,
        b_O=bo,
        n_heads=cfg.num_attention_heads,
        n_kv_heads=None,
        scale=float(s.scaling),
    )


def _llama_weights(layer, cfg):
    a = layer.self_attn
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = _lin(a.q_proj), _lin(a.k_proj), _lin(a.v_proj), _lin(a.o_proj)
    return dict(
        W_Q=Wq,
        W_K=Wk,
        W_V=Wv,
        W_O=Wo,
        b_Q=bq,
        b_K=bk,
        b_V=bv,
        b_O=bo,
        n_heads=cfg.num_attention_heads,
        n_kv_heads=cfg.num_key_value_heads,
        scale=float(a.scaling),
    )


def _gpt2_weights(layer, cfg):
    a = layer.attn
    d = a.embed_dim
    W, b = _lin(a.c_attn)  # Conv1D: weight (in=d, out=3d), y = x W + b
    Wp, bp = _lin(a.c_proj)
    return dict(
        W_Q=W[:, :d].T,
        W_K=W[:, d : 2 * d].T,
        W_V=W[:, 2 * d :].T,
        W_O=Wp.T,
        b_Q=b[:d],
        b_K=b[d : 2 * d],
        b_V=b[2 * d :],
        b_O=bp,
        n_heads=cfg.n_head,
        n_kv_heads=None,
        scale=None,
    )


def _mpnet_weights(layer, cfg):
    s = layer.attention.attn
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = _lin(s.q), _lin(s.k), _lin(s.v), _lin(s.o)
    return dict(
        W_Q=Wq,
        W_K=Wk,
        W_V=Wv,
        W_O=Wo,
        b_Q=bq,
        b_K=bk,
        b_V=bv,
        b_O=bo,
        n_heads=cfg.num_attention_heads,
        n_kv_heads=None,
        scale=None,
    )


def _postnorm_prev(base, layers, l):
    return (base.embeddings.LayerNorm if l == 0 else layers[l - 1].output.LayerNorm), "layernorm"


FAMILIES: dict[str, FamilySpec] = {
    "bert": FamilySpec(
        family="bert",
        kind="encoder",
        layers=lambda base: list(base.encoder.layer),
        attn=lambda L: L.attention.self,
        out=lambda L: L.attention.output.dense,
        weights=_bert_weights,
        norm=_postnorm_prev,
        max_length=lambda cfg: int(cfg.max_position_embeddings),
    ),
    "llama": FamilySpec(
        family="llama",
        kind="decoder",
        layers=lambda base: list(base.layers),
        attn=lambda L: L.self_attn,
        out=lambda L: L.self_attn.o_proj,
        weights=_llama_weights,
        norm=lambda base, layers, l: (layers[l].input_layernorm, "rmsnorm"),
        max_length=lambda cfg: int(cfg.max_position_embeddings),
    ),
    "gpt2": FamilySpec(
        family="gpt2",
        kind="decoder",
        layers=lambda base: list(base.h),
        attn=lambda L: L.attn,
        out=lambda L: L.attn.c_proj,
        weights=_gpt2_weights,
        norm=lambda base, layers, l: (layers[l].ln_1, "layernorm"),
        max_length=lambda cfg: int(cfg.n_positions),
    ),
    "mpnet": FamilySpec(
        family="mpnet",
        kind="encoder",
        layers=lambda base: list(base.encoder.layer),
        attn=lambda L: L.attention.attn,
        out=lambda L: L.attention.attn.o,
        weights=_mpnet_weights,
        norm=_postnorm_prev,
        # positions start at padding_idx + 1 (RoBERTa-style)
        max_length=lambda cfg: int(cfg.max_position_embeddings) - int(cfg.pad_token_id) - 1,
        force_output_attentions=True,
    ),
}
# Gemma 3 is laid out as Llama; only its RMSNorm scales by (1 + w)
FAMILIES["gemma3"] = replace(
    FAMILIES["llama"], family="gemma3", norm=lambda base, layers, l: (layers[l].input_layernorm, "rmsnorm1p")
)

#: ``config.model_type`` → family name.
SUPPORTED_MODEL_TYPES: dict[str, str] = {
    "bert": "bert",
    "llama": "llama",
    "gpt2": "gpt2",
    "gemma3_text": "gemma3",
    "mpnet": "mpnet",
}


def family_of(config) -> str:
    """Family name for a ``transformers`` config; raises :class:`UnsupportedArchitectureError`."""
    mt = getattr(config, "model_type", None)
    if mt == "gemma3" and hasattr(config, "text_config"):
        mt = "gemma3_text"
    if mt not in SUPPORTED_MODEL_TYPES:
        supported = ", ".join(f"{k} ({v})" for k, v in SUPPORTED_MODEL_TYPES.items())
        raise UnsupportedArchitectureError(
            f"model_type {mt!r} is not supported; supported model types (family): {supported}", argument="model"
        )
    return SUPPORTED_MODEL_TYPES[mt]


def normalised_parts(
    x: torch.Tensor, norm: torch.nn.Module, kind: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(x̂, g, β)`` with ``norm(x) = g ⊙ x̂ + β`` (computed in the norm's own arithmetic)."""
    if kind == "layernorm":
        xh = torch.nn.functional.layer_norm(x, norm.normalized_shape, None, None, norm.eps)  # type: ignore[arg-type]
        return xh, module_param(norm, "weight"), module_param(norm, "bias")
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    if kind == "rmsnorm":  # Llama: x̂ = (x_f32 * rsqrt(mean x² + eps)).to(dtype); out = w * x̂
        xf = x.to(torch.float32)
        xh = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)  # type: ignore[operator]
        return xh, module_param(norm, "weight"), None
    if kind == "rmsnorm1p":  # Gemma: x̂ = x_f32 * rsqrt(mean x² + eps); out = x̂ * (1 + w)
        xf = x.float()
        xh = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)  # type: ignore[operator]
        return xh.to(x.dtype), 1.0 + module_param(norm, "weight").float(), None
    raise ModelError(f"unknown norm kind {kind!r}", argument="kind")  # pragma: no cover
