"""T2 on real trained checkpoints: every layer of MiniLM (BERT encoder) and SmolLM2-135M (Llama
decoder, GQA, RoPE) — ``walk.apply(attn_input) + c`` equals the model's attention output to relative
error ≤ 1e-5 (float32) and ≤ 1e-10 (float64), on corpus prompts and on a padded batch."""

from __future__ import annotations

import pytest
import torch

from numerics.models.adapters import IDENTITY_RTOL
from numerics.models.corpus import sample_prompts
from tests.models._identity import assert_identity, head_permuted_error, transposed_transport_error

pytestmark = [pytest.mark.slow, pytest.mark.theorem("T2")]


def _padded(handle, n, left: bool):
    """Two prompts of n tokens, the second padded by a third of its length (right or left)."""
    ids = sample_prompts(handle, 2, n, seed=3)
    mask = torch.ones_like(ids)
    k = n // 3
    pad = handle.tokenizer.pad_token_id if handle.tokenizer.pad_token_id is not None else 0
    if left:
        ids[1, :k] = pad
        mask[1, :k] = 0
    else:
        ids[1, n - k :] = pad
        mask[1, n - k :] = 0
    return ids, mask


@pytest.mark.parametrize("which", ["minilm32", "minilm64"])
def test_minilm_every_layer(which, request):
    h = request.getfixturevalue(which)
    errs = assert_identity(h, sample_prompts(h, 3, 24, seed=0))
    assert len(errs) == 6
    ids, mask = _padded(h, 20, left=False)
    assert_identity(h, ids, mask)


@pytest.mark.parametrize("which", ["smollm32", "smollm64"])
def test_smollm2_every_layer(which, request):
    h = request.getfixturevalue(which)
    assert (h.n_layers, h.n_heads, h.n_kv_heads, h.d_model) == (30, 9, 3, 576)
    errs = assert_identity(h, sample_prompts(h, 2, 12, seed=0))
    assert len(errs) == 30
    ids, mask = _padded(h, 12, left=False)
    assert_identity(h, ids, mask)
    if h.dtype == torch.float32:
        assert_identity(h, *_padded(h, 12, left=True))


def test_left_padding_float64_nan_is_refused(smollm64):
    """HF Llama eager in float64: a fully masked (left-pad) query row gets a -inf float32 softmax → NaN.
    The adapter refuses it with a typed error naming attention_mask instead of passing NaN on."""
    from numerics.errors import NonFiniteError

    ids, mask = _padded(smollm64, 12, left=True)
    with pytest.raises(NonFiniteError, match="attention_mask"):
        list(smollm64.layers(ids, mask, keep={0}))


def test_masks_are_in_the_captured_attention(minilm32, smollm32):
    """Padding keys get exactly zero weight (encoder); the decoder's A is causal; rows sum to 1."""
    ids, mask = _padded(minilm32, 18, left=False)
    cap = next(iter(minilm32.layers(ids, mask)))
    pad = ~mask.bool()
    assert bool((cap.A[1][:, :, pad[1]] == 0).all())
    assert bool((cap.A[0] > 0).all())
    assert torch.allclose(cap.A.sum(-1), torch.ones(()), atol=IDENTITY_RTOL[torch.float32])
    assert cap.mask is not None and bool((cap.mask == mask.bool()).all())
    cap = next(iter(smollm32.layers(sample_prompts(smollm32, 1, 10, seed=1))))
    assert bool((cap.A.triu(1) == 0).all()) and bool((cap.A.diagonal(dim1=-2, dim2=-1)[..., 0] == 1).all())


def test_identity_can_fail(minilm64, smollm64):
    """Negative controls: rotating the heads' attention (wrong head ↔ transport pairing) or
    transposing the transports (§0 layout bug) breaks the identity by orders of magnitude."""
    for h in (minilm64, smollm64):
        ids = sample_prompts(h, 1, 12, seed=2)
        caps = list(h.layers(ids, keep={0, 1, h.n_layers - 1}))
        errs = [head_permuted_error(c) for c in caps] + [transposed_transport_error(c) for c in caps]
        assert min(errs) > 1e3 * IDENTITY_RTOL[torch.float32], errs


def test_smollm2_gqa_sharing(smollm64):
    """GQA (T2): query heads 3g..3g+2 read kv head g: identical W_V, distinct W_O."""
    cap = next(iter(smollm64.layers(sample_prompts(smollm64, 1, 6, seed=0), keep={5})))
    assert cap.layer == 5
    for g in range(3):
        for h in range(3 * g, 3 * g + 3):
            assert torch.equal(cap.W_V[h], cap.W_V[3 * g])
    assert not torch.equal(cap.W_O[0], cap.W_O[1])
    assert cap.W_O.shape == (9, 576, 64) and cap.W_V.shape == (9, 64, 576)
    # rank T_h <= d_h < d: a single head is never orthogonal (T2)
    assert int(torch.linalg.matrix_rank(cap.transports[0])) <= 64
