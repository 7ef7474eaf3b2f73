r"""Tiny random models of any transformers family, for the census (:mod:`numerics.census.run`).

:func:`tiny_config` takes the model type's default configuration and shrinks it with
:func:`numerics.census.shrink.shrink`: in it and in every sub-configuration (``text_config``,
``vision_config``, ``encoder``, backbone configs, raw ``dict`` sub-configs), every attribute whose name
says it is a size — widths to :data:`WIDTH` (64), heads to 4 (2 kv heads where the family has a kv-head
count), head dims to 16, feed-forward widths to 64, layers to 2 (per-layer lists cut to match, a hybrid
keeping an attention layer), vocabularies (entity tables too) to 128 (special token ids moved into
``100…127``, so that drawn ids ``1…99`` are plain tokens), experts to 4 (2 per token), images to 32 px in
patches of 8, audio positions to 16 — and restores the relations the default had among them (heads
divide widths, kv heads divide heads, derived attributes derived again).
:func:`build_tiny` builds the family's base model from it with eager attention — first on the
``meta`` device, refusing a model that is still over :data:`MAX_PARAMS` parameters (naming the
attribute its largest tensor is sized by), a configuration that does not build naming the attribute
it could not reconcile (:class:`~numerics.census.shrink.ShrinkError`) — then for real, seeded, in ``dtype``.
:func:`attention_classes` lists the attention classes the modeling modules of the model types define.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from numerics.census.shrink import WIDTH, ShrinkError, oversized, shrink, suspects
from numerics.errors import ModelError, ParameterError

__all__ = [
    "WIDTH",
    "MAX_PARAMS",
    "ShrinkError",
    "tiny_config",
    "build_tiny",
    "model_class",
    "attention_classes",
    "name_list",
    "known_model_types",
]

MAX_PARAMS = 10_000_000


def tiny_config(model_type: str):
    """The model type's default configuration with every size attribute shrunk (module docstring)."""
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.for_model(model_type)
    except Exception as exc:
        raise ModelError(f"no default configuration ({type(exc).__name__}: {exc})", argument="model_type") from None
    shrink(cfg)
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
    from transformers import AutoConfig

    try:
        cfg = AutoConfig.for_model(model_type)
    except Exception as exc:
        raise ModelError(f"no default configuration ({type(exc).__name__}: {exc})", argument="model_type") from None
    changed, before = shrink(cfg)
    if cross:
        if not hasattr(cfg, "add_cross_attention"):
            raise ModelError(f"{model_type}: the configuration has no add_cross_attention", argument="model_type")
        cfg.is_decoder = True
        cfg.add_cross_attention = True
    cls = model_class(model_type, cfg)
    try:
        with torch.device("meta"):
            meta = cls._from_config(cfg, attn_implementation="eager")
    except Exception as exc:
        line = (str(exc).strip().splitlines() or [""])[0][:200]
        who = suspects(changed, exc, before)
        raise ShrinkError(
            f"{model_type}: the shrunk configuration does not build ({type(exc).__name__}: {line})"
            + (f"; could not reconcile {', '.join(who[:3])}" if who else ""),
            argument=who[0].split(" ")[0] if who else "model_type",
        ) from exc
    tensors = [*meta.parameters(), *meta.buffers()]
    n = sum(t.numel() for t in tensors)
    big = tuple(max(tensors, key=lambda t: t.numel()).shape) if tensors else ()
    del meta, tensors
    if n > MAX_PARAMS:
        who = oversized(changed, before, big)
        raise ModelError(
            f"{model_type}: the shrunk configuration still has {n:,} parameters and buffers (> {MAX_PARAMS:,}): "
            f"its largest tensor {big} is set by {', '.join(who[:3])}, which the census does not shrink",
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
