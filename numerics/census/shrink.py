r"""The census's config shrinker: every size of a transformers configuration, kept consistent.

:func:`shrink` walks a configuration and every sub-configuration inside it (``text_config``,
``vision_config``, ``encoder``, ``backbone_config``, lists of them, and raw ``dict`` sub-configurations
that carry a ``model_type``), and in each caps the integer attributes whose **name** says what they
size (:func:`kind_of`): vocabularies (``vocab_size``, ``entity_vocab_size``, … → 128), layer counts
(→ 2; per-stage ``depths`` → 1 each), heads (→ 4; kv heads → 2), head dims (``head_dim``,
``rotary_dim``, ``*_head_dim`` … → 16), widths (``hidden_size``, ``*_dim``, ``*_size``, ``*_channels``,
``*_rank``, ``*_hidden_size`` … → :data:`WIDTH`), feed-forward widths (→ 64), experts (→ 4, 2 per
token), images (32 px in patches of 8), audio (16 positions, 16 mel bins); lists of widths and heads
elementwise. Then it restores the relations the default configuration had among them
(:func:`_reconcile`), family-agnostic:

* **divisibility**: a width the heads divided still divides (the heads drop to the largest divisor),
  kv heads still divide the heads (and equal them in latent attention, ``kv_lora_rank``, whose keys
  have every query head, and in a stack's own counts, ``encoder_num_key_value_heads ==
  encoder_num_attention_heads``; the family's ``num_key_value_heads`` becomes 2, grouped-query);
* **equality and sums** among head dimensions: ``head_dim == qk_rope_head_dim`` stays equal (the
  smaller wins), ``qk_head_dim == qk_nope_head_dim + qk_rope_head_dim`` stays a sum;
* **derived attributes** (set by a dataclass configuration's ``__post_init__`` from its fields, and
  not shrunk themselves) are derived again from the shrunk fields;
* **per-layer lists** (of the length of a layer count that was cut) are cut with it; a list of layer
  kinds keeps one layer of each of its first two kinds in their order (so that a hybrid keeps an
  attention layer; so does a cycled pattern of kinds, and an unset ``attn_layer_indices`` puts attention
  in the last layer); a layer period / offset (``attn_layer_period``, ``attn_layer_offset``) is brought
  inside the cut stack.

A relation the shrinker cannot restore raises :class:`ShrinkError` naming the attribute (a
:class:`~numerics.errors.ModelError`). :func:`suspects` names the shrunk attributes an error message of
a failed build points at, and :func:`oversized` the attribute that sets a too large tensor.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from numerics.errors import ModelError

__all__ = ["WIDTH", "UNSET", "SMALL", "ShrinkError", "shrink", "kind_of", "suspects", "oversized", "TIMM_TINY"]

WIDTH = 64

_LAYERS = {
    "num_hidden_layers",
    "n_layer",
    "n_layers",
    "num_layers",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
    "num_encoder_layers",
}
_HEADS = {"n_head", "n_heads", "num_heads", "attention_heads"}
_KV = {"num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num"}
_HEAD_DIM = {
    "head_dim",
    "d_kv",
    "kv_channels",
    "attention_head_dim",
    "v_head_dim",
    "attention_head_size",
    "rotary_dim",
    "rope_dim",
    "d_head",
    "dim_head",
    "head_size",
}
_WIDTH_NAMES = {"hidden_size", "d_model", "n_embd", "embed_dim", "dim", "model_dim", "d_embed", "word_embed_proj_dim"}
_FFN = {
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
}
_EXPERTS = {"num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"}
_TOPK = {"num_experts_per_tok", "moe_topk", "top_k", "num_experts_per_token", "moe_k"}
_MOE_FFN = {"moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size"}
#: fixed caps
SMALL = {
    "kv_lora_rank": 16,
    "q_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "projection_dim": 32,
    "max_source_positions": 16,
    "n_shared_experts": 1,
    "image_size": 32,
    "patch_size": 8,
    "num_mel_bins": 16,
    "n_group": 1,
    "topk_group": 1,
    "num_expert_group": 1,
    "num_queries": 16,
    "context_length": 64,
    "num_frames": 4,
    "num_latents": 16,
}
#: sizes a default configuration leaves unset (None) that the model needs: set to these (vocabularies: 128,
#: experts per token: 2)
UNSET = {"prediction_length": 4, "context_length": 8}
#: name parts of ``*_size`` / ``*_dim`` attributes that are no width (a kernel, a window, a grid, a count of positions)
_NOT_WIDTH = (
    "kernel",
    "patch",
    "window",
    "stride",
    "pool",
    "chunk",
    "batch",
    "image",
    "position",
    "merge",
    "bucket",
    "sample",
    "frame",
    "group",
    "sliding",
    "spatial",
    "temporal",
    "seq",
    "length",
    "context",
    "max_",
    "min_",
    "token",
    "step",
    "stack",
    "pad",
    "vocab",
    "codebook",
    "cache",
    "bins",
    "fft",
    "hop",
    "shape",
    "grid",
    "crop",
    "resolution",
    "input_size",
    "output_size",
)

#: timm backbones the census swaps in for a ``TimmBackboneConfig``'s architecture (timm's own test models)
TIMM_TINY = {
    "resnet": "test_resnet",
    "convnext": "test_convnext",
    "vit": "test_vit",
    "efficientnet": "test_efficientnet",
}


class ShrinkError(ModelError):
    """A relation among a configuration's sizes the shrinker could not restore (the attribute named)."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_list(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and bool(v) and all(_is_int(x) for x in v)


def kind_of(name: str) -> str | None:
    """What an integer attribute named ``name`` sizes: ``vocab``, ``layers``, ``kv``, ``heads``,
    ``head_dim``, ``experts``, ``topk``, ``moe_ffn``, ``ffn``, ``width``, ``small`` (a fixed cap of
    :data:`SMALL`), ``period``, ``offset``, or None (not a size: ids, flags, kernels, windows …)."""
    n = name.lower()
    if n.endswith(("_token_id", "_token_index", "_id", "_ids", "_idx", "_index")) or n.startswith(("use_", "is_")):
        return None
    if n in SMALL:
        return "small"
    if "vocab" in n and "position" not in n:
        return "vocab"
    if n in _LAYERS or (re.fullmatch(r"(num_|n_)?([a-z0-9]+_)*layers", n) and not n.startswith("max_")):
        return "layers"
    if n in _KV or n.endswith(("key_value_heads", "kv_heads")):
        return "kv"
    if n in _HEADS or n.endswith("attention_heads") or "heads_per_stage" in n:
        return "heads"
    if "blocks_per_stage" in n or "depths_per_stage" in n:
        return "layers"
    if "embed_dim" in n or "channel_list" in n or "hidden_sizes" in n:
        return "width"
    if n in _HEAD_DIM or n.endswith("head_dim"):
        return "head_dim"
    if n in _EXPERTS:
        return "experts"
    if n in _TOPK:
        return "topk"
    if n in _MOE_FFN:
        return "moe_ffn"
    if n.endswith("_layer_period"):
        return "period"
    if n.endswith("_layer_offset"):
        return "offset"
    if n in _FFN or n.endswith(("intermediate_size", "ffn_dim", "_units")):
        return "ffn"
    if n in _WIDTH_NAMES or (re.fullmatch(r"d_[a-z]+", n) and n not in ("d_state", "d_conv")):
        return "width"
    if n.endswith(("hidden_size", "_dim", "_size", "_channels", "_rank", "_width", "_dims", "_sizes")) and not any(
        p in n for p in _NOT_WIDTH
    ):
        return "width"
    return None


_CAP = {"vocab": 128, "layers": 2, "kv": 2, "heads": 4, "head_dim": 16, "experts": 4, "topk": 2, "moe_ffn": 32}


class _View:
    """An attribute view of a config object or a raw dict sub-configuration; ``put`` never raises
    (a read-only or validated attribute stays as it is) and records what changed."""

    def __init__(self, cfg: Any, changed: dict, before: dict) -> None:
        self.cfg, self.changed = cfg, changed
        self.attrs = dict(cfg) if isinstance(cfg, dict) else dict(vars(cfg))
        self.orig = dict(self.attrs)
        self.where = str(cfg.get("model_type", "dict") if isinstance(cfg, dict) else getattr(cfg, "model_type", "?"))
        before.update({f"{self.where}.{k}": v for k, v in self.orig.items() if _is_int(v) or v is None})

    def get(self, k: str) -> Any:
        return self.attrs.get(k)

    def changed_keys(self) -> set:
        return {k for k in self.attrs if self.attrs[k] is not self.orig.get(k) and self.attrs[k] != self.orig.get(k)}

    def put(self, k: str, v: Any) -> None:
        if self.attrs.get(k) == v:
            return
        try:
            if isinstance(self.cfg, dict):
                self.cfg[k] = v
            else:
                setattr(self.cfg, k, v)
        except Exception:  # a read-only or validated attribute: left as it is
            return
        self.attrs[k] = v
        self.changed[f"{self.where}.{k}"] = (self.orig.get(k), v)


def _divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` that is at most ``at_most`` (≥ 1)."""
    return max(d for d in range(1, max(1, min(at_most, n)) + 1) if n % d == 0)


def shrink(cfg: Any) -> tuple[dict, dict]:
    """Shrink ``cfg`` in place (module docstring); returns ``(changed, before)``: ``{"model_type.attr":
    (old, new)}`` of what it changed and ``{"model_type.attr": value}`` of every integer it saw before."""
    changed: dict = {}
    before: dict = {}
    _shrink(cfg, set(), changed, before)
    return changed, before


def _shrink(cfg: Any, seen: set, changed: dict, before: dict) -> None:
    if id(cfg) in seen:
        return
    seen.add(id(cfg))
    vw = _View(cfg, changed, before)
    _caps(vw)
    _timm(vw)
    _reconcile(vw)
    _rederive(vw)
    _rope_sections(vw)
    _cut_per_layer(vw)
    _token_ids(vw)
    for k, v in list(vw.attrs.items()):
        subs = v if isinstance(v, (list, tuple)) else [v]
        for s in subs:
            if _is_config(s) or (isinstance(s, dict) and "model_type" in s and k != "rope_parameters"):
                _shrink(s, seen, changed, before)


def _is_config(x: Any) -> bool:
    return hasattr(x, "model_type") and hasattr(x, "to_dict") and hasattr(x, "sub_configs")


def _caps(vw: _View) -> None:
    for k, v in list(vw.attrs.items()):  # sizes the default leaves unset that the model needs
        if v is None and (kind_of(k) in ("vocab", "topk") or k in UNSET):
            vw.put(k, UNSET[k] if k in UNSET else _CAP[kind_of(k) or "vocab"])
    stages = len(vw.get("depths")) if isinstance(vw.get("depths"), (list, tuple)) else None
    # a layer count of a convolution stack (its per-layer lists hold strides or kernels) sets the input's
    # downsampling: it stays, as the stages (``num_layers == len(depths)``) do, cut by ``depths``
    convs = {len(v) for k, v in vw.attrs.items() if isinstance(v, (list, tuple)) and ("stride" in k or "kernel" in k)}
    for k, v in list(vw.attrs.items()):
        kind = kind_of(k)
        if (
            kind is None
            or kind in ("period", "offset")
            or (kind == "layers" and _is_int(v) and (v == stages or v in convs))
        ):
            continue
        cap = SMALL[k] if kind == "small" else _CAP.get(kind, WIDTH)
        if _is_int(v) and v > cap:
            vw.put(k, cap)
        elif _int_list(v) and kind in ("width", "ffn", "heads", "head_dim", "small", "kv"):
            vw.put(k, type(v)(min(x, cap) for x in v))
        elif _int_list(v) and kind == "layers":  # per-stage layer counts
            vw.put(k, type(v)(min(x, 1) for x in v))
    for k, v in list(vw.attrs.items()):  # EfficientNet-style scalings of widths and depths
        if isinstance(v, float) and k.endswith(("depth_coefficient", "width_coefficient")) and v > 1:
            vw.put(k, 1.0)
    if _int_list(vw.get("depths")):
        vw.put("depths", type(vw.get("depths"))(min(x, 1) for x in vw.get("depths")))


def _timm(vw: _View) -> None:
    """A timm backbone named by architecture (``TimmBackboneConfig.backbone``): timm's own tiny test
    model of that architecture (:data:`TIMM_TINY`), random init."""
    name = vw.get("backbone")
    if not isinstance(name, str) or (vw.get("model_type") != "timm_backbone" and "Timm" not in type(vw.cfg).__name__):
        return
    for prefix, tiny in TIMM_TINY.items():
        if name.startswith(prefix):
            vw.put("backbone", tiny)
            return
    vw.put("backbone", "test_resnet")


def _reconcile(vw: _View) -> None:
    """Restore the default's relations among the shrunk sizes (module docstring)."""
    o, a = vw.orig, vw.attrs
    ints = {k: v for k, v in o.items() if _is_int(v) and _is_int(a.get(k))}
    kinds = {k: kind_of(k) for k in ints}
    # a head count left unset beside a width and heads: the tiny model's own (kv heads 2, head dim width / heads)
    h, hs = a.get("num_attention_heads"), a.get("hidden_size")
    if isinstance(h, int) and h > 0 and "num_key_value_heads" in a and a["num_key_value_heads"] is None:
        vw.put("num_key_value_heads", _divisor(h, _CAP["kv"]))
    if isinstance(h, int) and h > 0 and isinstance(hs, int) and "head_dim" in a and a["head_dim"] is None:
        vw.put("head_dim", hs // h)
    # head dimensions (``head_dim``, ``qk_rope_head_dim``, ``qk_head_dim`` …): equal ones stay equal
    # (the smaller shrunk value wins), a sum of two stays their sum
    dims = [k for k in ints if "head_dim" in k and o[k] >= 8]
    for i, x in enumerate(dims):
        for y in dims[i + 1 :]:
            if o[x] == o[y] and a[x] != a[y] and (x in vw.changed_keys() or y in vw.changed_keys()):
                m = min(a[x], a[y])
                vw.put(x, m)
                vw.put(y, m)
    for x in dims:
        for i, y in enumerate(dims):
            for z in dims[i + 1 :]:
                if x not in (y, z) and o[x] == o[y] + o[z] and a[x] != a[y] + a[z] and o[x] > max(o[y], o[z]):
                    vw.put(x, a[y] + a[z])
    # a list of dimensions that summed to a width sums to the shrunk width, in the same proportions
    for k, v in list(a.items()):
        ov = o.get(k)
        if not (_int_list(v) and isinstance(ov, (list, tuple)) and _int_list(ov) and len(ov) > 1):
            continue
        for w in (w for w in ints if kinds[w] == "width" and o[w] == sum(ov) and a[w] != sum(v)):
            part = [max(1, x * a[w] // o[w]) for x in ov]
            part[-1] += a[w] - sum(part)
            if part[-1] >= 1:
                vw.put(k, type(v)(part))
            break
    # divisibility: widths by heads, heads by kv heads
    heads = [k for k in ints if kinds[k] == "heads"]
    widths = [k for k in ints if kinds[k] == "width" and k in _WIDTH_NAMES | {"hidden_size"}]
    explicit_hd = any(kinds[k] == "head_dim" for k in ints)
    for h in heads:
        for w in widths:
            if o[h] > 1 and o[w] % o[h] == 0 and a[w] % a[h] and not explicit_hd:
                vw.put(h, _divisor(a[w], a[h]))
                if a[w] % a[h]:
                    raise ShrinkError(f"{vw.where}: {h}={a[h]} does not divide {w}={a[w]}", argument=h)
    for kv in (k for k in ints if kinds[k] == "kv"):
        for h in heads:
            same_stack = kv.split("_num_")[0] == h.split("_num_")[0] and "_num_" in kv and "_num_" in h
            if o[kv] == o[h] and ("kv_lora_rank" in a or same_stack):  # latent attention: keys of every
                vw.put(kv, a[h])  # query head; a stack's own counts (``encoder_num_*``) kept as they were
            elif o[kv] >= 1 and o[h] % o[kv] == 0 and a[h] % a[kv]:
                vw.put(kv, _divisor(a[h], a[kv]))
    # a window no larger than the patch grid
    size, patch, window = a.get("image_size"), a.get("patch_size"), a.get("window_size")
    if isinstance(size, int) and isinstance(patch, int) and isinstance(window, int) and size >= patch > 0:
        side = size // patch // (4 if "depths" in a else 1)  # staged (Swin): two windows a side, two stages on
        if window > max(1, side):
            vw.put("window_size", max(1, side))
    # per-stage lists: heads divide the stage widths
    hl = next((vw.get(k) for k in ("num_heads", "num_attention_heads") if _int_list(vw.get(k))), None)
    if hl is not None:
        key = next(k for k in ("num_heads", "num_attention_heads") if _int_list(vw.get(k)))
        base = vw.get("embed_dim") if _is_int(vw.get("embed_dim")) else None
        wl = next(
            (vw.get(k) for k in ("hidden_sizes", "embed_dims", "embed_dim", "hidden_size") if _int_list(vw.get(k))),
            None,
        )
        if wl is not None and len(wl) == len(hl):
            vw.put(key, type(hl)(_divisor(w, h) for w, h in zip(wl, hl, strict=True)))
        elif base is not None:
            vw.put(key, type(hl)(_divisor(base * 2**i, h) for i, h in enumerate(hl)))


def _rederive(vw: _View) -> None:
    """Attributes a dataclass configuration derives from its fields (``__post_init__``: Bros'
    ``dim_bbox_projection = hidden_size // num_attention_heads``) derived again from the shrunk fields."""
    cfg = vw.cfg
    if isinstance(cfg, dict) or not dataclasses.is_dataclass(cfg):
        return
    fields = {f.name for f in dataclasses.fields(cfg) if f.init}
    derived = [k for k, v in vw.attrs.items() if k not in fields and _is_int(v) and k not in vw.changed_keys()]
    if not derived:
        return
    cls: Any = type(cfg)
    try:
        fresh = cls(**{k: vw.attrs[k] for k in fields if k in vw.attrs})
    except Exception:  # the fields alone do not make a configuration: nothing derived again
        return
    for k in derived:
        v = getattr(fresh, k, None)
        if _is_int(v) and v != vw.attrs[k]:
            vw.put(k, v)


def _rope_sections(vw: _View) -> None:
    for k in ("rope_parameters", "rope_scaling"):
        rp = vw.get(k)
        sec = rp.get("mrope_section") if isinstance(rp, dict) else None
        if (
            isinstance(rp, dict)
            and sec is None
            and "mrope_section" in getattr(vw.cfg, "ignore_keys_at_rope_validation", ())
        ):
            sec = [16, 24, 24]  # the families' default when the key is absent
        if isinstance(rp, dict) and _int_list(sec):
            hd, frac = vw.get("head_dim"), rp.get("partial_rotary_factor", vw.get("partial_rotary_factor"))
            rot = hd if _is_int(hd) and hd <= 16 else 16
            if isinstance(frac, float) and 0 < frac < 1:  # a partial rotary: sections of the rotated dims
                rot = max(2, int(rot * frac))
            half = rot // 2
            secs = [int(x) for x in sec or ()]
            tot = sum(secs)
            new = [max(1, x * half // tot) for x in secs]
            # the rest to a section of its own size (equal sections, paired by some families, stay equal)
            alone = [i for i, x in enumerate(secs) if secs.count(x) == 1]
            new[alone[0] if alone else 0] += half - sum(new)
            vw.put(k, {**rp, "mrope_section": new})


def _cut_per_layer(vw: _View) -> None:
    """Per-layer lists cut with the layer counts; periods and offsets inside the cut stack."""
    o, a = vw.orig, vw.attrs
    cut = {o[k]: a[k] for k in o if kind_of(k) == "layers" and _is_int(o[k]) and _is_int(a.get(k)) and a[k] < o[k]}
    for k, v in list(a.items()):
        if not isinstance(v, (list, tuple)) or k == "depths" or len(v) not in cut or len(v) <= 2:
            continue
        new = cut[len(v)]
        kinds = list(dict.fromkeys(x for x in v if isinstance(x, str)))
        if len(kinds) >= 2:  # per-layer types (hybrids: mamba / attention …): one layer of each of two kinds,
            keep = sorted(v.index(x) for x in kinds[:2])  # in their order, so an attention layer stays
            vw.put(k, type(v)(v[i] for i in keep))
        else:
            vw.put(k, type(v)(v[:new]))
    if not cut:
        return
    n = min(cut.values())
    for k, v in list(a.items()):
        kinds = list(dict.fromkeys(x for x in v if isinstance(x, str))) if isinstance(v, (list, tuple)) else []
        seq = isinstance(v, (list, tuple))
        if seq and len(v) not in cut and len(kinds) >= 2 and len(v) > n and not all(x in v[:n] for x in kinds[:2]):
            # a cycled pattern of layer kinds longer than the cut stack: one layer of each of its first two kinds
            vw.put(k, type(v)(v[i] for i in sorted(v.index(x) for x in kinds[:2])))
        if v is None and k.endswith("attn_layer_indices"):  # a hybrid whose default places no attention layer
            vw.put(k, [n - 1])
    for k in list(a):
        if kind_of(k) == "period" and _is_int(a[k]) and a[k] > n:
            vw.put(k, n)
    for k in list(a):
        if kind_of(k) == "offset" and _is_int(a[k]):
            per = a.get(k.replace("_offset", "_period"))
            lim = per if isinstance(per, int) and per >= 1 else n
            if a[k] >= lim:
                vw.put(k, lim - 1)


def _token_ids(vw: _View) -> None:
    """Special token ids moved into ``100…127`` of the 128-token vocabulary (drawn ids ``1…99`` are plain)."""
    vocab = vw.get("vocab_size")
    if not (_is_int(vocab) and vocab <= 128):
        return
    nxt = 100
    if vw.orig.get("vocab_size") is None:  # a vocabulary the default leaves to its tokenizer: its special ids too
        for k in ("pad_token_id", "mask_token_id", "bos_token_id", "eos_token_id"):
            if k in vw.attrs and vw.attrs[k] is None:
                vw.put(k, nxt)
                nxt += 1
    for k, v in list(vw.attrs.items()):
        if k.endswith(("_token_id", "_token_index")) and _is_int(v) and v >= 100:
            vw.put(k, nxt)
            nxt = min(nxt + 1, 127)
        elif k.endswith("_token_id") and _int_list(v):
            vw.put(k, [x if x < 100 else 100 + i % 28 for i, x in enumerate(v)])


_NUM = re.compile(r"\d+")


def suspects(changed: dict, exc: BaseException, cfgs: dict | None = None) -> list[str]:
    """The attributes a failed build's error ``exc`` points at: shrunk ones (``changed``) named in its
    message, else whose new value appears in it as a number; else the ``config.<name>`` its failing
    source lines read that is unset (None) in ``cfgs`` (``"model_type.attr"`` → value), or the attribute
    it says the configuration lacks."""
    import traceback

    message = (str(exc).strip().splitlines() or [""])[0]
    named = [k for k in changed if re.search(rf"\b{re.escape(k.split('.', 1)[-1])}\b", message)]
    if named:
        return named
    nums = {int(x) for x in _NUM.findall(message)}
    hit = [k for k, (_, new) in changed.items() if _is_int(new) and new in nums and new > 2]
    if hit:
        return hit
    unset = {k.split(".", 1)[-1]: k for k, v in (cfgs or {}).items() if v is None}
    for fr in reversed(traceback.extract_tb(exc.__traceback__)[-4:]):
        for nm in re.findall(r"config\.(\w+)", fr.line or ""):
            if nm in unset:
                return [f"{unset[nm]} (unset in the default configuration)"]
    lack = re.search(r"has no attribute '(\w+)'", message)
    return [f"{lack.group(1)} (absent from the configuration)"] if lack else []


def oversized(cfg_changed: dict, orig_ints: dict, shape: tuple) -> list[str]:
    """Attributes of the unshrunk configuration (``orig_ints``: ``"model_type.attr"`` → value) whose
    value is a dimension of ``shape`` (the largest tensor of a too large model) and that the shrinker
    left as they were."""
    dims = {d for d in shape if d > WIDTH}
    return [k for k, v in orig_ints.items() if _is_int(v) and v in dims and k not in cfg_changed] or [
        f"a size of {math.prod(shape):,} ({' x '.join(map(str, shape))}) no attribute names"
    ]
