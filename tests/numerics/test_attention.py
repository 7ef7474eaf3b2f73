"""T1/T2 against an implementation we did not write: torch.nn.MultiheadAttention's own forward."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.attention import (
    AttentionWeights,
    attention_probs,
    bias_offset,
    head_factors,
    head_transports,
    kv_head_map,
    walk_from_weights,
)
from numerics.errors import ShapeError
from numerics.tolerance import assert_close, rel_err
from numerics.walk import ConnectionWalk
from tests.helpers import naive_walk_apply
from theory.report import record


@pytest.mark.theorem("T1")
@pytest.mark.theorem("T2")
@given(
    n=st.integers(1, 7),
    H=st.integers(1, 4),
    dh=st.integers(1, 4),
    bias=st.booleans(),
    causal=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    batch=st.integers(1, 2),
)
def test_walk_reproduces_torch_multihead_attention(n, H, dh, bias, causal, seed, batch):
    d = H * dh
    g = torch.Generator().manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d, H, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5)
    X = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
    mask = torch.ones(n, n, dtype=torch.bool).triu(1) if causal else None
    with torch.no_grad():
        Y, attn = mha(X, X, X, attn_mask=mask, need_weights=True, average_attn_weights=False)
    w = AttentionWeights.from_torch_mha(mha)
    dev = torch.device("cpu")
    walk, c = walk_from_weights(X.to(dev), w, causal=causal)
    Yw = walk.apply(X) + c
    r = rel_err(Yw, Y)
    assert_close(Yw, Y, size=n * d, what="walk vs nn.MultiheadAttention")
    assert_close(walk.attention, attn, size=d, what="A^h vs MHA's weights")
    # the dense token-major operator agrees too (T1/T2 as nd×nd matrices)
    for b in range(batch):
        yd = (walk.to_dense()[b] @ X[b].reshape(-1)).reshape(n, d) + c
        assert_close(yd, Y[b], size=n * d, what="dense operator vs MHA")
    record("T2", residual=r)
    if H == 1:
        record("T1", residual=r)


@pytest.mark.theorem("T2")
@given(cst.mha_instances())
def test_weights_helpers_against_naive_heads(inst):
    """GQA head map, per-head transports and bias offset against a per-head loop written from §0."""
    w, X = inst.weights, inst.X
    H, dh, d = w.n_heads, w.d_head, w.d
    kv = kv_head_map(H, w.n_kv_heads)
    A = attention_probs(X, w, causal=inst.causal)
    T = head_transports(w)
    c = bias_offset(w)
    Y_ref = torch.zeros_like(X)
    for h in range(H):
        q = X @ w.W_Q[h * dh : (h + 1) * dh].T + (w.b_Q[h * dh : (h + 1) * dh] if w.b_Q is not None else 0)
        kk = slice(kv[h] * dh, (kv[h] + 1) * dh)
        k = X @ w.W_K[kk].T + (w.b_K[kk] if w.b_K is not None else 0)
        v = X @ w.W_V[kk].T + (w.b_V[kk] if w.b_V is not None else 0)
        S = q @ k.transpose(-1, -2) / math.sqrt(dh)
        if inst.causal:
            S = S.masked_fill(
                torch.ones(S.shape[-1], S.shape[-1], dtype=torch.bool, device=S.device).triu(1), float("-inf")
            )
        Ah = torch.softmax(S, -1)
        assert_close(A[:, h], Ah, size=d, what=f"A^{h}")
        assert_close(T[h], w.W_O[:, h * dh : (h + 1) * dh] @ w.W_V[kk], size=dh, what=f"T_{h}")
        Y_ref = Y_ref + (Ah @ v) @ w.W_O[:, h * dh : (h + 1) * dh].T
    if w.b_O is not None:
        Y_ref = Y_ref + w.b_O
    walk, c2 = walk_from_weights(X, w, causal=inst.causal)
    assert torch.equal(c, c2)
    r = assert_close(walk.apply(X) + c, Y_ref, size=H * X.shape[-2] * d, what="walk + c vs per-head loop")
    for b in range(X.shape[0]):
        assert_close((naive_walk_apply(A[b], T, X[b]) + c.cpu()).to(X.device), Y_ref[b], size=H * X.shape[-2] * d)
    # rank of each head transport ≤ d_h, of their sum ≤ H_kv d_h (T2, GQA)
    assert int(torch.linalg.matrix_rank(T).max()) <= dh
    assert int(torch.linalg.matrix_rank(T.sum(0))) <= (w.n_kv_heads or H) * dh
    record("T2", residual=r)


def test_gqa_head_map():
    assert kv_head_map(9, 3) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert kv_head_map(4) == [0, 1, 2, 3]
    with pytest.raises(ShapeError, match="n_kv_heads"):
        kv_head_map(9, 2)


def test_head_factors_layout():
    W = torch.arange(24, dtype=torch.float64)
    w = AttentionWeights(
        W_Q=W.reshape(4, 6)[:, :4].clone(),
        W_K=W.reshape(4, 6)[:, 1:5].clone(),
        W_V=W.reshape(4, 6)[:, 2:6].clone(),
        W_O=W.reshape(6, 4)[:4].clone(),
        n_heads=2,
    )
    Wo, Wv = head_factors(w)
    assert torch.equal(Wv[1], w.W_V[2:4])
    assert torch.equal(Wo[1], w.W_O[:, 2:4])
    walk = ConnectionWalk.from_factors(torch.full((2, 3, 3), 1 / 3, dtype=torch.float64), Wo, Wv)
    assert walk.factored and walk.d == 4 and walk.n_heads == 2
