"""T2 on tiny random configs of every supported family (built locally, no downloads): the identity
on every layer in float32 and float64, with and without gain folding and padding, plus the
family-specific structure (GQA sharing, sliding window, causal mask, Conv1D layout)."""

from __future__ import annotations

import pytest
import torch

from numerics.attention import attention_probs
from numerics.models.adapters import IDENTITY_RTOL, relative_identity_error, row_exact_offset
from numerics.models.registry import wrap
from numerics.models.tiny import TINY_FAMILIES, tiny_model
from numerics.tolerance import rel_err, tol
from tests.models._identity import assert_identity, transposed_transport_error

N = 10


def _ids(h, batch=2, n=N, seed=0):
    return torch.randint(0, h.vocab_size, (batch, n), generator=torch.Generator().manual_seed(seed))


def _mask(batch=2, n=N):
    m = torch.ones(batch, n, dtype=torch.long)
    m[1, n - 3 :] = 0  # right padding on the second sequence
    return m


_HANDLES: dict = {}


def handle(family, dtype, device="cpu"):
    key = (family, dtype, str(device))
    if key not in _HANDLES:
        m = tiny_model(family, seed=0, dtype=dtype).to(device)
        _HANDLES[key] = wrap(m, name=f"tiny:{family}", trained=False)
    return _HANDLES[key]


@pytest.mark.theorem("T2")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_identity_every_layer(family, dtype, device):
    """On the test device (``--device``; captures come back on CPU)."""
    h = handle(family, dtype, device)
    assert_identity(h, _ids(h))
    assert_identity(h, _ids(h, seed=1), _mask())


@pytest.mark.theorem("T2")
@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_identity_with_gain_folded(family):
    """Folding the feeding norm's gain (and LayerNorm bias) into W_V keeps the identity; the
    folded attention input is the normalised x̂ (unit RMS / standardised rows), not LN(x)."""
    h = handle(family, torch.float32)
    assert_identity(h, _ids(h), _mask(), fold_gain=True)
    ids = _ids(h)
    plain = {c.layer: c for c in h.layers(ids)}
    for c in h.layers(ids, fold_gain=True):
        p = plain[c.layer]
        assert c.gain_folded and not p.gain_folded
        assert torch.allclose(c.W_V, p.W_V * c.norm_gain, rtol=0, atol=tol(torch.float32, h.d_model))
        assert not torch.allclose(c.attn_input, p.attn_input)  # the gains are not 1 in the tiny models
        # the folded input x̂ rebuilds the norm's output: g ⊙ x̂ + β = LN(x)
        norm = h.spec.norm(h.model.base_model, h.spec.layers(h.model.base_model), c.layer)[0]
        beta = norm.bias.detach() if getattr(norm, "bias", None) is not None else 0.0
        assert rel_err(c.attn_input * c.norm_gain + beta, p.attn_input) <= tol(torch.float32, h.d_model)


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_identity_can_fail(family):
    """Negative control: transposed transports (the §0 layout bug) are far off the bound. (Rotating
    the heads is no control here: at random init every head's attention is nearly uniform.)"""
    h = handle(family, torch.float64)
    errs = [transposed_transport_error(c) for c in h.layers(_ids(h))]
    assert min(errs) > 1e3 * IDENTITY_RTOL[torch.float32], errs


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_weights_reproduce_attention(family):
    """For families without RoPE / QK-norm / relative bias, numerics.attention.attention_probs on the
    extracted nn.Linear-layout weights (GPT-2: transposed Conv1D) reproduces the model's own A."""
    h = handle(family, torch.float64)
    ids, mask = _ids(h), _mask()
    for c in h.layers(ids, mask):
        A = attention_probs(c.attn_input, c.extra["weights"], causal=h.kind == "decoder", key_padding_mask=~mask.bool())
        assert rel_err(A, c.A) <= tol(torch.float64, N * h.d_model)


def test_gqa_and_sliding_window_gemma3():
    h = handle("gemma3", torch.float64)
    n = 9
    caps = list(h.layers(_ids(h, n=n)))
    types = h.model.config.layer_types
    w = h.model.config.sliding_window
    i, j = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    for c in caps:
        assert c.A.shape == (2, 4, n, n)
        assert bool((c.A[..., j > i] == 0).all())  # causal
        outside = i - j >= w
        if types[c.layer] == "sliding_attention":
            assert bool((c.A[..., outside] == 0).all())
        else:
            assert bool((c.A[..., outside] > 0).all())
        for hh in range(4):  # one kv head: all query heads share W_V
            assert torch.equal(c.W_V[hh], c.W_V[0])
        assert c.W_O.shape == (4, 32, 16) and c.W_V.shape == (4, 16, 32)  # head_dim 16 != d/H = 8


def test_llama_value_bias_row_sums():
    """With a value bias, the constant offset c needs row-stochastic A. HF Llama's eager softmax runs
    in float32 and is cast back, so in float64 rows sum to 1 ± ~1e-7 and the constant-offset identity
    is only float32-accurate; the per-row offset Σ_j A_ij makes it exact again."""
    h = wrap(tiny_model("llama", dtype=torch.float64, attention_bias=True))
    for c in h.layers(_ids(h)):
        e_const = relative_identity_error(c)
        e_rows = rel_err(c.walk().apply(c.attn_input) + row_exact_offset(c), c.attn_output)
        assert e_rows <= IDENTITY_RTOL[torch.float64]
        row_defect = (c.A.sum(-1) - 1).abs().max().item()
        assert 0 < row_defect <= tol(torch.float32, N)
        assert e_const > e_rows


def test_streaming_keep_and_early_stop():
    h = handle("gemma3", torch.float32)
    ids = _ids(h)
    got = [c.layer for c in h.layers(ids, keep={1})]
    assert got == [1]
    gen = h.layers(ids)
    first = next(gen)
    assert first.layer == 0
    gen.close()  # consumer stops early: forward aborted, hooks removed
    mods = [m for m in h.model.modules() if m._forward_hooks or m._forward_pre_hooks]
    assert mods == []
    assert [c.layer for c in h.layers(ids)] == [0, 1, 2]
    caps = list(h.layers(ids, with_output=False))
    assert all(c.attn_output is None for c in caps)
    assert all(c.A.device.type == "cpu" and c.A.dtype == torch.float32 for c in caps)


def test_handle_attributes():
    h = handle("llama", torch.float32)
    assert (h.family, h.kind, h.n_layers, h.n_heads, h.n_kv_heads, h.d_model, h.d_head) == (
        "llama",
        "decoder",
        2,
        4,
        2,
        32,
        8,
    )
    assert h.n_params == sum(p.numel() for p in h.model.parameters())
    assert h.max_length == 64
    b = handle("mpnet", torch.float32)
    assert b.kind == "encoder" and b.max_length == 66 - 1 - 1


def test_transformerlens_layout_ov_is_the_transpose():
    """THEOREMS.md (Conventions) against TransformerLens's layout (TransformerLens itself is not installed, see the
    issue note): TL stores GPT-2 heads as ``W_V[h] = c_attn.weight[:, 2d + h d_h : …]`` ``(d, d_h)`` and
    ``W_O[h] = c_proj.weight[h d_h : …, :]`` ``(d_h, d)`` and acts on row vectors, so its OV circuit
    ``W_V[h] @ W_O[h]`` is ``T_hᵀ`` of our column-vector transport."""
    h = handle("gpt2", torch.float64)
    attn = h.model.transformer.h[0].attn
    d, H = h.d_model, h.n_heads
    dh = d // H
    cap = next(iter(h.layers(_ids(h), keep={0})))
    W = attn.c_attn.weight.detach()
    Wp = attn.c_proj.weight.detach()
    for k in range(H):
        ov_tl = W[:, 2 * d + k * dh : 2 * d + (k + 1) * dh] @ Wp[k * dh : (k + 1) * dh, :]
        assert rel_err(ov_tl.T, cap.transports[k]) <= tol(torch.float64, dh)
        assert rel_err(ov_tl, cap.transports[k]) > 0.1  # not symmetric: the transpose matters


def test_abandoned_stream_is_superseded():
    """A stream left open (consumer raised mid-loop) must not leave live hooks: the next layers()
    call stops it, and the abandoned one then raises instead of hanging or truncating silently."""
    from numerics.errors import ModelError

    h = handle("bert", torch.float32)
    ids = _ids(h)
    old = h.layers(ids)
    assert next(old).layer == 0
    assert [c.layer for c in h.layers(ids)] == [0, 1]
    with pytest.raises(ModelError, match="superseded"):
        next(old)
    assert [m for m in h.model.modules() if m._forward_hooks or m._forward_pre_hooks] == []
