r"""Tiny random models of any transformers family, for the census (:mod:`numerics.census.run`).

:func:`tiny_config` takes the model type's default configuration and shrinks, in it and in every
sub-configuration (``text_config``, ``vision_config``, ``encoder``, …), the attributes that set the
size: widths to :data:`WIDTH` (64), heads to 4 (2 kv heads where the family has a kv-head count),
head dims to 16, feed-forward widths to 64, layers to 2 (per-layer lists cut to match), the
vocabulary to 128 (special token ids moved into ``100…127``, so that drawn ids ``1…99`` are plain
tokens), experts to 4 (2 per token), images to 32 px in patches of 8, audio positions to 16.
:func:`build_tiny` builds the family's base model from it with eager attention — first on the
``meta`` device, refusing a model that is still over :data:`MAX_PARAMS` parameters (a family whose
size is set by an attribute this list does not know), then for real, seeded, in ``dtype``.
:func:`attention_classes` lists the attention classes the modeling modules of the model types define.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from numerics.errors import ModelError, ParameterError

__all__ = [
    "WIDTH",
    "MAX_PARAMS",
    "tiny_config",
    "build_tiny",
    "model_class",
    "attention_classes",
    "name_list",
    "known_model_types",
]

WIDTH = 64
MAX_PARAMS = 10_000_000

_WIDTH = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "model_dim", "d_embed", "word_embed_proj_dim")
_FFN = (
    "intermediate_size",
    "ffn_dim",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "d_ff",
    "n_inner",
    "hidden_dim",
    "feed_forward_size",
    "mlp_dim",
    "ffn_hidden_size",
    "mlp_hidden_size",
    "intermediate_dim",
    "inner_hidden_size",
)
_HEADS = (
    "num_attention_heads",
    "n_head",
    "n_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "num_heads",
    "attention_heads",
)
_KV = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
_HEAD_DIM = ("head_dim", "d_kv", "kv_channels", "attention_head_dim", "v_head_dim", "attention_head_size")
_LAYERS = (
    "num_hidden_layers",
    "n_layer",
    "n_layers",
    "num_layers",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
    "num_encoder_layers",
)
_EXPERTS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
_TOPK = ("num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token")
_MOE_FFN = ("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size")
_SMALL = {
    "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "projection_dim": 32,
    "max_source_positions": 16,
    "n_shared_experts": 1,
    "vocab_size": 128,
    "image_size": 32,
    "patch_size": 8,
    "num_mel_bins": 16,
}


def _is_config(x: Any) -> bool:
    return hasattr(x, "model_type") and hasattr(x, "to_dict") and hasattr(x, "sub_configs")


def _shrink(cfg: Any, seen: set) -> None:
    if id(cfg) in seen:
        return
    seen.add(id(cfg))
    attrs = dict(vars(cfg))

    def has_int(k: str) -> bool:
        v = attrs.get(k)
        return isinstance(v, int) and not isinstance(v, bool)

    def put(k: str, v: Any) -> None:
        try:
            setattr(cfg, k, v)
        except Exception:  # a read-only or validated attribute: left as it is
            pass

    old_layers = next((attrs[k] for k in _LAYERS if has_int(k)), None)
    for k in _WIDTH:
        if has_int(k) and attrs[k] > WIDTH:
            put(k, WIDTH)
    for k in _FFN:
        if has_int(k) and attrs[k] > WIDTH:
            put(k, WIDTH)
    for k in _HEADS:
        if has_int(k) and attrs[k] > 4:
            put(k, 4)
        elif isinstance(attrs.get(k), list) and all(isinstance(x, int) for x in attrs[k]):
            put(k, [2] * len(attrs[k]))
    caps = [(k, 2) for k in _KV] + [(k, 16) for k in _HEAD_DIM] + [(k, 2) for k in _LAYERS]
    for k, v in caps:
        if has_int(k) and attrs[k] > v:
            put(k, v)
    if isinstance(attrs.get("depths"), list):
        put("depths", [1] * len(attrs["depths"]))
    caps = [(k, 4) for k in _EXPERTS] + [(k, 2) for k in _TOPK] + [(k, 32) for k in _MOE_FFN]
    for k, v in [*caps, *_SMALL.items()]:
        if has_int(k) and attrs[k] > v:
            put(k, v)
        elif k in ("image_size", "patch_size") and isinstance(attrs.get(k), (list, tuple)) and attrs[k]:
            put(k, type(attrs[k])([v] * len(attrs[k])))
    for k in ("rope_parameters", "rope_scaling"):
        rp = attrs.get(k)
        sec = rp.get("mrope_section") if isinstance(rp, dict) else None
        if (
            isinstance(rp, dict)
            and sec is None
            and "mrope_section" in getattr(cfg, "ignore_keys_at_rope_validation", ())
        ):
            sec = [16, 24, 24]  # the families' default when the key is absent
        if isinstance(rp, dict) and isinstance(sec, list) and sec and all(isinstance(x, int) for x in sec):
            # multimodal RoPE sections split head_dim / 2 frequencies: rescale them to the tiny head dim
            half, tot = 8, sum(sec)
            new = [max(1, x * half // tot) for x in sec]
            new[0] += half - sum(new)
            put(k, {**rp, "mrope_section": new})
    if old_layers is not None and old_layers > 2:
        for k, v in attrs.items():
            if isinstance(v, (list, tuple)) and len(v) == old_layers and k not in ("depths",):
                kinds = list(dict.fromkeys(x for x in v if isinstance(x, str)))
                if len(kinds) >= 2:  # per-layer types (hybrids: mamba / attention …): keep one layer of two kinds,
                    keep = sorted(v.index(x) for x in kinds[:2])  # in their order, so an attention layer stays
                    put(k, type(v)(v[i] for i in keep))
                else:
                    put(k, type(v)(v[:2]))
    vocab = getattr(cfg, "vocab_size", None)
    if isinstance(vocab, int) and vocab <= 128:
        nxt = [100]
        for k, v in attrs.items():
            if (
                k.endswith(("_token_id", "_token_index"))
                and isinstance(v, int)
                and not isinstance(v, bool)
                and v >= 100
            ):
                put(k, nxt[0])
                nxt[0] = min(nxt[0] + 1, 127)
            elif k.endswith("_token_id") and isinstance(v, list) and v and all(isinstance(x, int) for x in v):
                put(k, [x if x < 100 else 100 + i % 28 for i, x in enumerate(v)])
    for k, v in attrs.items():
        if _is_config(v):
            _shrink(v, seen)
        elif isinstance(v, dict) and "model_type" in v:
            pass  # a raw dict sub-config: the family builds it later from defaults


def tiny_config(model_type: str):
    """The model type's default configuration with every size attribute shrunk (module docstring)."""
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.for_model(model_type)
    except Exception as exc:
        raise ModelError(f"no default configuration ({type(exc).__name__}: {exc})", argument="model_type") from None
    _shrink(cfg, set())
    return cfg


def model_class(model_type: str, cfg) -> Any:
    """The family's base model class: ``AutoModel``'s, else the first of the other auto mappings."""
    import transformers
    import transformers.models.auto.modeling_auto as ma

    names = [ma.MODEL_MAPPING_NAMES.get(model_type)]
    names += [
        getattr(ma, a).get(model_type)
        for a in sorted(dir(ma))
        if a.startswith("MODEL_") and a.endswith("_MAPPING_NAMES") and isinstance(getattr(ma, a), dict)
    ]
    for nm in names:
        if isinstance(nm, (tuple, list)):
            nm = nm[0] if nm else None
        if isinstance(nm, str) and hasattr(transformers, nm):
            return getattr(transformers, nm)
    raise ModelError(f"{model_type}: no model class in transformers' auto mappings", argument="model_type")


def build_tiny(model_type: str, *, dtype=None, seed: int = 0, cross: bool = False):
    """The tiny base model of ``model_type`` (module docstring), eager attention, eval mode;
    ``cross``: built as a decoder with cross-attention (``is_decoder``, ``add_cross_attention``),
    the configuration in which BERT-like families instantiate their cross-attention classes."""
    import torch

    cfg = tiny_config(model_type)
    if cross:
        if not hasattr(cfg, "add_cross_attention"):
            raise ModelError(f"{model_type}: the configuration has no add_cross_attention", argument="model_type")
        cfg.is_decoder = True
        cfg.add_cross_attention = True
    cls = model_class(model_type, cfg)
    with torch.device("meta"):
        meta = cls._from_config(cfg, attn_implementation="eager")
    n = sum(p.numel() for p in meta.parameters()) + sum(b.numel() for b in meta.buffers())
    del meta
    if n > MAX_PARAMS:
        raise ModelError(
            f"{model_type}: the shrunk configuration still has {n:,} parameters and buffers (> {MAX_PARAMS:,}): "
            "a size attribute the census does not shrink",
            argument="model_type",
        )
    torch.manual_seed(seed)
    model = cls._from_config(cfg, attn_implementation="eager")
    if dtype is not None:
        model = model.to(dtype)
    return model.eval()


# --------------------------------------------------------------------------- enumeration
def _modeling_modules(model_type: str) -> list[str]:
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    pkg_name = f"transformers.models.{model_type_to_module_name(model_type)}"
    try:
        pkg = importlib.import_module(pkg_name)
    except Exception:
        return []
    d = os.path.dirname(getattr(pkg, "__file__", "") or "")
    if not d or not os.path.isdir(d):
        return []
    names = sorted(f[:-3] for f in os.listdir(d) if f.startswith("modeling_") and f.endswith(".py"))
    return [f"{pkg_name}.{n}" for n in names if not n.startswith(("modeling_tf_", "modeling_flax_"))]


def name_list(value, argument: str) -> list[str] | None:
    """``value`` (``None``, or a list / tuple / set of nonempty strings) as a list without repeats; else
    :class:`ParameterError` naming ``argument`` (a string is not a list of its letters)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise ParameterError(f"expected a list of names, got {type(value).__name__} {value!r}", argument=argument)
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad or not value:
        raise ParameterError(f"expected a nonempty list of names, got {value!r}", argument=argument)
    return sorted(value) if isinstance(value, (set, frozenset)) else list(dict.fromkeys(value))


def known_model_types(model_types) -> list[str] | None:
    """:func:`name_list` of ``model_types``, each a key of transformers' ``CONFIG_MAPPING_NAMES`` (else
    :class:`ParameterError` naming ``model_types`` and the unknown ones)."""
    names = name_list(model_types, "model_types")
    if names is not None:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        unknown = [m for m in names if m not in CONFIG_MAPPING_NAMES]
        if unknown:
            raise ParameterError(
                f"unknown model type(s) {', '.join(map(repr, unknown))} (not in the installed transformers' "
                "CONFIG_MAPPING_NAMES)",
                argument="model_types",
            )
    return names


def attention_classes(model_types=None) -> list[tuple[str, str, str]]:
    """``(model_type, module, class name)`` of every attention class (module docstring's rule), each
    class once (under the first model type whose package defines it); ``model_types`` (a list of model
    types of ``CONFIG_MAPPING_NAMES``, else :class:`ParameterError`) restricts the walk. Modules that do
    not import give a row with class ``"<module>"`` (declined there)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from numerics.conformance.hf_capture import is_attention_class

    model_types = known_model_types(model_types)
    out, seen = [], set()
    for mt in model_types if model_types is not None else list(CONFIG_MAPPING_NAMES):
        for modname in _modeling_modules(mt):
            if modname in seen:
                continue
            seen.add(modname)
            try:
                mod = importlib.import_module(modname)
            except Exception as exc:
                out.append((mt, modname, f"<{modname.rsplit('.', 1)[-1]}: {type(exc).__name__}>"))
                continue
            for name, obj in vars(mod).items():
                if getattr(obj, "__module__", None) == modname and is_attention_class(obj):
                    out.append((mt, modname, name))
    return out
