"""The census's config shrinker (numerics.census.shrink) on real families, and the inputs a family asks
for (numerics.conformance.hf_inputs): families the census used to decline for the harness's sake
build small, keep their relations, run on their drawn inputs; a build that fails names the attribute."""

from __future__ import annotations

import pytest
import torch
import transformers

from numerics.census.config import MAX_PARAMS, build_tiny, tiny_config
from numerics.census.shrink import ShrinkError, kind_of
from numerics.conformance.checks import Counterexample, Verdict
from numerics.conformance.hf_capture import CaptureAdapter
from numerics.conformance.hf_inputs import describe_inputs, draw_inputs
from numerics.conformance.protocol import Draw

transformers.logging.set_verbosity_error()


def _params(model) -> int:
    return sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in model.buffers())


# ----------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "model_type",
    [
        "luke",  # a 500k entity vocabulary (entity_vocab_size)
        "perceiver",  # d_latents
        "vjepa2",  # the predictor's and pooler's own widths
        "align",  # EfficientNet's width / depth coefficients
        "edgetam_video",  # per-stage widths of a nested backbone config
    ],
)
def test_formerly_oversized_families_build_under_the_limit(model_type):
    model = build_tiny(model_type, seed=0)
    assert _params(model) <= MAX_PARAMS


def test_swin_heads_divide_every_stage_width():
    cfg = tiny_config("donut-swin")  # 3 heads of a width 64 stage: the shrunk default did not build
    for i, h in enumerate(cfg.num_heads):
        assert (cfg.embed_dim * 2**i) % h == 0, (i, cfg.embed_dim, h)
    build_tiny("donut-swin", seed=0)


def test_kv_heads_divide_heads_and_an_unset_kv_head_count_is_set():
    cfg = tiny_config("nemotron")  # num_key_value_heads None in the default: the model divided by it
    assert cfg.num_attention_heads % cfg.num_key_value_heads == 0
    build_tiny("nemotron", seed=0)


def test_mla_rope_dims_keep_their_relations_and_the_model_runs():
    cfg = tiny_config("deepseek_v3")  # head_dim == qk_rope_head_dim, qk_head_dim == nope + rope
    assert cfg.head_dim == cfg.qk_rope_head_dim
    assert cfg.qk_head_dim == cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    model = build_tiny("deepseek_v3", seed=0)
    with torch.no_grad():
        model(input_ids=torch.tensor([[1, 2, 3, 4]]))


@pytest.mark.parametrize(
    ("model_type", "cls"),
    [
        ("jamba", "JambaAttention"),  # attention at attn_layer_offset 4 of every attn_layer_period 8
        ("recurrent_gemma", "RecurrentGemmaAttention"),  # the cycled pattern recurrent, recurrent, attention
        ("bamba", "BambaAttention"),  # attn_layer_indices unset: no attention layer in the default
    ],
)
def test_a_hybrid_keeps_an_attention_layer(model_type, cls):
    # cut to two layers, neither was attention before
    model = build_tiny(model_type, seed=0)
    assert any(type(m).__name__ == cls for m in model.modules())


def test_a_list_that_summed_to_the_width_still_does():
    cfg = tiny_config("reformer")  # axial_pos_embds_dim sums to hidden_size
    assert sum(cfg.axial_pos_embds_dim) == cfg.hidden_size
    build_tiny("reformer", seed=0)


def test_a_build_that_fails_names_the_attribute():
    # Chameleon's default leaves its vocabulary map unset; DBRX's attention config lacks an attribute
    # its model reads: each error names the attribute
    with pytest.raises(ShrinkError) as exc:
        build_tiny("chameleon", seed=0)
    assert exc.value.argument == "chameleon.vocabulary_map"
    assert "could not reconcile chameleon.vocabulary_map (unset in the default configuration)" in str(exc.value)
    with pytest.raises(ShrinkError, match="could not reconcile rope_theta") as exc:
        build_tiny("dbrx", seed=0)
    assert exc.value.argument == "rope_theta"


def test_names_say_what_they_size():
    assert kind_of("entity_vocab_size") == "vocab"
    assert kind_of("num_attention_heads_per_stage") == "heads"
    assert kind_of("embed_dim_per_stage") == "width"
    assert kind_of("pad_token_id") is None
    assert kind_of("patch_size") == "small"
    assert kind_of("window_size") is None


# ----------------------------------------------------------------------------- inputs


def _adapter(model_type: str, cls: str) -> CaptureAdapter:
    model = build_tiny(model_type, dtype=torch.float64, seed=0)
    target = next(m for m in model.modules() if type(m).__name__ == cls)
    return CaptureAdapter(model, [target])


DRAW = Draw(batch=1, n=5, m=5, pad=(0,), causal=False, seed=7, scale=1.0)


@pytest.mark.parametrize(
    ("model_type", "cls", "extra"),
    [
        ("bros", "BrosSelfAttention", "bbox"),  # "You have to specify bbox"
        ("patchtst", "PatchTSTAttention", "past_observed_mask"),  # main input past_values
        ("videomae", "VideoMAESelfAttention", None),  # a video: (B, frames, C, H, W)
        ("vilt", "ViltSelfAttention", "pixel_values"),  # text model that also needs an image
        ("timesfm", "TimesFmAttention", "freq"),  # past_values with its padding and frequency
    ],
)
def test_a_family_that_needs_further_inputs_runs_on_them(model_type, cls, extra):
    ad = _adapter(model_type, cls)
    with torch.no_grad():
        out = ad.run_drawn(DRAW, lambda kw: ad.root(**kw))
    assert out is not None
    if extra is not None:
        assert extra in ad.describe_inputs(DRAW)


def test_a_video_family_is_judged_through_the_capture():
    (ex,) = _adapter("videomae", "VideoMAESelfAttention").extract(DRAW)
    assert ex.A.shape[0] == 1 and bool(torch.isfinite(ex.output).all())


def test_the_other_inputs_are_determined_by_the_draw():
    ad = _adapter("lilt", "LiltSelfAttention")
    a = draw_inputs(ad.root, "input_ids", DRAW, torch.float64, takes_mask=False)
    b = draw_inputs(ad.root, "input_ids", DRAW, torch.float64, takes_mask=False)
    c = draw_inputs(ad.root, "input_ids", Draw(1, 5, 5, (0,), False, 8, 1.0), torch.float64, takes_mask=False)
    assert set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a if isinstance(a[k], torch.Tensor))
    assert not torch.equal(a["bbox"], c["bbox"])
    box = a["bbox"]
    assert (
        box.shape == (1, 5, 4) and bool((box[..., 2] >= box[..., 0]).all()) and bool((box[..., 3] >= box[..., 1]).all())
    )
    assert describe_inputs(a, "input_ids") == "bbox (1, 5, 4)"


def test_a_counterexample_states_the_other_inputs():
    cx = Counterexample(DRAW, "", "T2", Verdict("fails", 1.0, 0.5, 1.0, "x", 1.0), inputs="bbox (1, 5, 4)")
    assert "(with bbox (1, 5, 4))" in str(cx)
