r"""The inputs a Hugging Face family asks for, drawn for :class:`~numerics.conformance.hf_capture.CaptureAdapter`.

:func:`draw_inputs` reads the root model's ``forward`` signature and configuration: the draw fixes the
token sequence the walk is judged on (``input_ids`` ``1…99`` of the draw's generator, key padding as
the draw says); every other input is drawn **once per draw from the draw's seed**, after the tokens,
in a fixed order — so a draw (its ``describe()``, its seed) determines all of them, and
:func:`describe_inputs` states their shapes beside a counterexample. By name:

* ``pixel_values`` of the configured channels and image size (a video's ``num_frames`` frames, a
  keypoint matcher's image pair: ``(B, T, C, H, W)``), ``pixel_values_videos`` likewise;
* ``bbox`` (``(B, n, 4)`` boxes ``x0 ≤ x1``, ``y0 ≤ y1`` in ``0…1000``), ``lang_ids``;
* time series: ``past_values`` of the configured context length and channels, with
  ``past_observed_mask`` / ``observed_mask`` (all observed), ``past_values_padding`` (none),
  ``past_time_features``, ``freq``;
* audio: ``input_features`` / ``audio_mel`` of the configured mel bins (``audio_mel_mask``: none
  padded), ``input_values`` samples;
* ``flattened_patches`` (row and column ids, then the patch pixels), a decision transformer's
  ``states`` / ``actions`` / ``rewards`` / ``returns_to_go`` / ``timesteps``, LXMERT's
  ``visual_feats`` / ``visual_pos``;
* ``inputs`` embeddings of the configured width (Perceiver);
* a vision tower's patch grid: ``grid_thw`` (one image of 4 × 4 patches) with its flattened patches.

:func:`amend` answers a forward that refused the drawn inputs: when its error (or the source line that
raised it) names a further input the signature has (``You have to specify pixel_values``, ``bbox``)
the inputs are drawn again with it (from the same seed); audio features a family takes as
``(B, frames, bins)`` are the same features transposed; None when there is nothing to change.
"""

from __future__ import annotations

from typing import Any

import torch

from numerics.conformance.protocol import Draw, forward_parameters

__all__ = ["draw_inputs", "amend", "describe_inputs", "DRAWABLE"]

F64 = torch.float64


def _configs(cfg: Any) -> list:
    """``cfg`` and its sub-configurations, breadth first (``vision_config``, ``encoder_config`` …)."""
    out, todo, seen = [], [cfg], set()
    while todo:
        c = todo.pop(0)
        if c is None or isinstance(c, dict) or id(c) in seen or not hasattr(c, "to_dict"):
            continue
        seen.add(id(c))
        out.append(c)
        todo += [v for v in vars(c).values() if hasattr(v, "to_dict") and hasattr(v, "model_type")]
    return out


def _sub(cfg: Any, *names: str) -> Any:
    """The first of ``names`` set on ``cfg`` or on a sub-configuration of it (breadth first)."""
    for c in _configs(cfg):
        for nm in names:
            v = getattr(c, nm, None)
            if v is not None and not isinstance(v, bool):
                return v
    return None


def _int(cfg: Any, default: int, *names: str) -> int:
    v = _sub(cfg, *names)
    if isinstance(v, (list, tuple)) and v:
        v = v[0]
    return int(v) if isinstance(v, (int, float)) and v > 0 else default


def _image(cfg: Any) -> tuple[int, int, int]:
    c = _int(cfg, 3, "num_channels", "in_channels", "in_chans")
    s = _sub(cfg, "image_size", "img_size")
    h, w = (s, s) if isinstance(s, int) else tuple(int(x) for x in s[:2]) if isinstance(s, (list, tuple)) else (32, 32)
    return c, h, w


class _Ctx:
    """What the drawers share: the root, its config and signature, the draw, its generator, the dtype."""

    def __init__(self, root: Any, draw: Draw, dtype: torch.dtype) -> None:
        self.root, self.cfg, self.draw, self.dtype = root, root.config, draw, dtype
        self.params = forward_parameters(root)
        self.g = draw.generator()
        self.B, self.n = draw.batch, draw.n

    def randn(self, *shape: int, scale: float = 1.0) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=self.g, dtype=F64)).to(self.dtype)

    def ints(self, lo: int, hi: int, *shape: int) -> torch.Tensor:
        return torch.randint(lo, max(lo + 1, hi), shape, generator=self.g)


def _pixels(x: _Ctx, frames: int | None = None) -> torch.Tensor:
    c, h, w = _image(x.cfg)
    if frames is None:
        return x.randn(x.B, c, h, w, scale=x.draw.scale)
    return x.randn(x.B, frames, c, h, w, scale=x.draw.scale)


def _frames(x: _Ctx) -> int | None:
    """A video's frame count, or 2 for a model of image pairs (keypoint matching); None: one image."""
    if "KeypointMatching" in type(x.root).__name__ or "LoFTR" in type(x.root).__name__:
        return 2
    f = _sub(x.cfg, "num_frames", "frames_per_clip")
    return int(f) if isinstance(f, int) and f > 0 else None


def _bbox(x: _Ctx) -> torch.Tensor:
    """Boxes ``x0, y0, x1, y1`` (``x0 ≤ x1``, ``y0 ≤ y1``, in ``0…1000``); a family of ``dim_bbox`` 8
    (quadrilaterals) gets the box's four corners."""
    lo = x.ints(0, 500, x.B, x.n, 2)
    hi = lo + x.ints(0, 500, x.B, x.n, 2)
    if _int(x.cfg, 4, "dim_bbox") == 8:
        x0, y0, x1, y1 = lo[..., 0], lo[..., 1], hi[..., 0], hi[..., 1]
        return torch.stack([x0, y0, x1, y0, x1, y1, x0, y1], dim=-1)
    return torch.cat([lo, hi], dim=-1)


def _time_series(x: _Ctx, kw: dict) -> None:
    cfg = x.cfg
    L = _int(cfg, 32, "context_length", "patch_length")
    L += max(getattr(cfg, "lags_sequence", None) or [0])
    ch = _int(cfg, 1, "num_input_channels", "input_size")
    shape = (x.B, L) if "PatchTS" not in type(x.root).__name__ else (x.B, L, ch)
    if ch > 1 and "PatchTS" not in type(x.root).__name__:
        shape = (x.B, L, ch)
    kw["past_values"] = x.randn(*shape)
    for nm in ("past_observed_mask", "observed_mask"):
        if nm in x.params:
            kw[nm] = torch.ones(shape, dtype=x.dtype)
    if "past_values_padding" in x.params:
        kw["past_values_padding"] = torch.zeros(x.B, L, dtype=x.dtype)
    if "freq" in x.params:
        kw["freq"] = torch.zeros(x.B, 1, dtype=torch.long)
    if "past_time_features" in x.params:
        nt = getattr(cfg, "num_time_features", 0)
        kw["past_time_features"] = x.randn(x.B, L, int(nt) if isinstance(nt, int) and nt >= 0 else 0)


def _tokens(x: _Ctx, kw: dict, takes_mask: bool) -> torch.Tensor:
    cfg = x.cfg
    vocab = int(getattr(cfg, "vocab_size", 0) or getattr(getattr(cfg, "text_config", None), "vocab_size", 0) or 0)
    ids = x.ints(1, max(3, min(vocab, 100)), x.B, x.n)
    kw["input_ids"] = ids
    kpm = x.draw.key_padding_mask() if takes_mask else None
    if kpm is not None:
        kw["attention_mask"] = (~kpm).to(torch.long)
    if getattr(cfg, "is_encoder_decoder", False) and "decoder_input_ids" in x.params:
        kw["decoder_input_ids"] = ids.clone()
    width = getattr(cfg, "hidden_size", None)
    if "encoder_hidden_states" in x.params and getattr(cfg, "add_cross_attention", False) and width:
        kw["encoder_hidden_states"] = x.randn(x.B, x.n + 1, int(width))
    return ids


def _main(x: _Ctx, main: str, kw: dict, takes_mask: bool) -> None:
    cfg = x.cfg
    if main == "input_ids":
        _tokens(x, kw, takes_mask)
    elif main in ("pixel_values", "pixel_values_videos"):
        kw[main] = _pixels(x, _frames(x) if main == "pixel_values" else _int(cfg, 2, "num_frames"))
    elif main == "input_features":
        bins = _int(cfg, 80, "num_mel_bins", "feature_size", "input_feat_size", "n_mels")
        T = 2 * _int(cfg, 16, "max_source_positions")
        kw["input_features"] = x.randn(x.B, bins, T)
        if "decoder_input_ids" in x.params:
            kw["decoder_input_ids"] = x.ints(1, 50, x.B, x.n)
    elif main == "input_values" and _sub(cfg, "num_mel_bins") is not None and _sub(cfg, "max_length") is not None:
        # a spectrogram (AST): max_length frames of num_mel_bins
        kw["input_values"] = x.randn(x.B, _int(cfg, 128, "max_length"), _int(cfg, 16, "num_mel_bins"))
    elif main == "input_values":
        kw["input_values"] = x.randn(x.B, 1600)
    elif main == "audio_mel":
        bins = _int(cfg, 16, "input_feat_size", "num_mel_bins", "feature_size")
        kw["audio_mel"] = x.randn(x.B, 32, bins)
        kw["audio_mel_mask"] = torch.zeros(x.B, 32, dtype=torch.bool)
    elif main == "past_values":
        _time_series(x, kw)
    elif main == "flattened_patches":
        d = _int(cfg, 768, "patch_embed_hidden_size")
        N = 16
        pos = torch.stack(torch.meshgrid(torch.arange(1, 5), torch.arange(1, 5), indexing="ij"), -1).reshape(N, 2)
        kw["flattened_patches"] = torch.cat(
            [pos.expand(x.B, N, 2).to(x.dtype), x.randn(x.B, N, d, scale=x.draw.scale)], dim=-1
        )
        kw["attention_mask"] = torch.ones(x.B, N, dtype=torch.long)
        if "decoder_input_ids" in x.params:
            kw["decoder_input_ids"] = x.ints(1, 50, x.B, x.n)
    elif main == "states":
        kw["states"] = x.randn(x.B, x.n, _int(cfg, 4, "state_dim"))
        kw["actions"] = x.randn(x.B, x.n, _int(cfg, 2, "act_dim"))
        kw["rewards"] = x.randn(x.B, x.n, 1)
        kw["returns_to_go"] = x.randn(x.B, x.n, 1)
        kw["timesteps"] = x.ints(0, _int(cfg, 16, "max_ep_len"), x.B, x.n)
        kw["attention_mask"] = torch.ones(x.B, x.n, dtype=torch.long)
    elif main == "inputs":  # embeddings of the model's width (Perceiver without a preprocessor)
        kw["inputs"] = x.randn(x.B, x.n, _int(cfg, 64, "d_model", "hidden_size"), scale=x.draw.scale)
    elif main == "hidden_states" and "grid_thw" in x.params:
        _grid(x, kw)
    else:
        raise KeyError(main)


def _grid(x: _Ctx, kw: dict) -> None:
    """One image of 4 × 4 patches (a multiple of any spatial merge of 2) for a vision tower fed
    flattened patches and their ``grid_thw``."""
    cfg = x.cfg
    p = _int(cfg, 8, "patch_size")
    t = _int(cfg, 1, "temporal_patch_size")
    c = _int(cfg, 3, "in_channels", "num_channels", "in_chans")
    kw["grid_thw"] = torch.tensor([[1, 4, 4]])
    kw["hidden_states"] = x.randn(16, c * t * p * p, scale=x.draw.scale)


#: the main inputs :func:`draw_inputs` draws
DRAWABLE = (
    "input_ids",
    "pixel_values",
    "pixel_values_videos",
    "input_features",
    "input_values",
    "audio_mel",
    "past_values",
    "flattened_patches",
    "states",
    "inputs",
    "hidden_states",
)

#: secondary inputs drawn whenever the signature names them (never changing the token sequence)
_ALWAYS = ("bbox", "lang_ids", "visual_feats")


def _extra(x: _Ctx, name: str, kw: dict) -> bool:
    """Draw the further input ``name`` into ``kw``; False when there is no rule for it."""
    cfg = x.cfg
    if name == "bbox":
        kw["bbox"] = _bbox(x)
    elif name == "lang_ids":
        kw["lang_ids"] = torch.zeros(x.B, dtype=torch.long)
    elif name == "visual_feats":
        N = 4
        kw["visual_feats"] = x.randn(x.B, N, _int(cfg, 64, "visual_feat_dim"))
        kw["visual_pos"] = x.randn(x.B, N, _int(cfg, 4, "visual_pos_dim")).abs()
    elif name in ("pixel_values", "pixel_values_videos"):
        kw[name] = _pixels(x, _frames(x) if name == "pixel_values" else _int(cfg, 2, "num_frames"))
    elif name == "input_ids":
        _tokens(x, kw, False)
    elif name == "grid_thw":
        _grid(x, kw)
    else:
        return False
    return True


def draw_inputs(root: Any, main: str, draw: Draw, dtype: torch.dtype, *, takes_mask: bool, also=()) -> dict:
    """The keyword inputs of one forward of ``root`` on ``draw`` (module docstring); ``main`` the
    root's main input; ``also``: further inputs to draw (:func:`amend`). ``KeyError`` naming ``main``
    when it is no input the kit can draw."""
    x = _Ctx(root, draw, dtype)
    kw: dict = {}
    _main(x, main, kw, takes_mask)
    for name in (*_ALWAYS, *also):
        if name in x.params and name not in kw:
            _extra(x, name, kw)
    if "output_attentions" in x.params and main == "input_ids":  # own-way modules return their weights then
        kw["output_attentions"] = True
    return kw


def amend(root: Any, main: str, kw: dict, exc: BaseException, draw: Draw, dtype: torch.dtype, *, takes_mask: bool):
    """The inputs drawn again with what the error ``exc`` of a forward on ``kw`` asks for (module
    docstring), or None when it names nothing the signature has and the kit can draw."""
    import traceback

    lines = " ".join(fr.line or "" for fr in traceback.extract_tb(exc.__traceback__)[-3:])
    msg = (str(exc) + " " + lines).lower()  # the message, and the source lines that raised it
    params = forward_parameters(root)
    also = [k for k in kw if k not in ("input_ids", main) and k in params]
    want = [
        p
        for p in params
        if p not in kw
        and p in ("pixel_values", "pixel_values_videos", "input_ids", "bbox", "grid_thw")
        and p.lower() in msg
    ]
    pixels = main == "input_ids" and "pixel_values" in params and "pixel_values" not in kw
    if not want and pixels and any(w in msg for w in ("pixel", "image", "visual")):
        want = ["pixel_values"]
    feats = kw.get("input_features")
    if not want and isinstance(feats, torch.Tensor) and feats.ndim == 3 and isinstance(exc, RuntimeError):
        bins = _int(root.config, 80, "num_mel_bins", "feature_size", "input_feat_size", "n_mels")
        if feats.shape[1] == bins != feats.shape[2]:  # the family takes (B, frames, bins): the same features
            return {**kw, "input_features": feats.transpose(1, 2).contiguous()}
    if not want:
        return None
    return draw_inputs(root, main, draw, dtype, takes_mask=takes_mask, also=[*also, *want])


def describe_inputs(kw: dict, main: str) -> str:
    """The drawn inputs beside the main one, by shape (they are determined by the draw's seed)."""
    parts = [
        f"{k} {tuple(v.shape)}" for k, v in kw.items() if k != main and isinstance(v, torch.Tensor) and k != "input_ids"
    ]
    return ", ".join(parts)
