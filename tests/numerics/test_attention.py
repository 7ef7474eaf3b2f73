"""T1/T2 against an implementation we did not write: torch.nn.MultiheadAttention's own forward; then
the attention layer (numerics.attention) piece by piece against per-head float64 loops: the kv-head map,
weight validation, head factors and biases, attention probabilities, the walk built from the weights,
error messages, devices, and undefined or overflowing scores."""

from __future__ import annotations

import math

import numpy as np
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
from numerics.errors import (
    DeviceMismatchError,
    DTypeError,
    NonFiniteError,
    ParameterError,
    ShapeError,
)
from numerics.tolerance import assert_close, rel_err
from numerics.walk import ConnectionWalk
from tests.helpers import assert_bad_input, naive_walk_apply, raises_named, t
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


# ======================================================================================================
# The attention layer piece by piece: the kv-head map, weight validation, head factors and biases,
# attention probabilities, the walk built from the weights, error messages, devices and undefined or
# overflowing scores. References are per-head loops in float64 numpy written from the module docstring's
# formulas (A^h = softmax(Q_h K_{kv(h)}ᵀ·scale + bias + mask), T_h = W_O^h W_V^{kv(h)}, c = W_O b_V + b_O)
# and torch's own nn.MultiheadAttention; never the code under test.
# ======================================================================================================
f64 = torch.float64


def weights(seed, H=4, Hkv=2, dh=2, d=3, biases=True, scale=None):
    g = np.random.default_rng(seed)
    W = dict(
        W_Q=g.standard_normal((H * dh, d)),
        W_K=g.standard_normal((Hkv * dh, d)),
        W_V=g.standard_normal((Hkv * dh, d)),
        W_O=g.standard_normal((d, H * dh)),
    )
    b = (
        dict(
            b_Q=g.standard_normal(H * dh),
            b_K=g.standard_normal(Hkv * dh),
            b_V=g.standard_normal(Hkv * dh),
            b_O=g.standard_normal(d),
        )
        if biases
        else {}
    )
    np_w = {**W, **b}
    w = AttentionWeights(**{k: t(v) for k, v in np_w.items()}, n_heads=H, n_kv_heads=Hkv, scale=scale)
    return w, np_w


def literal_heads(np_w, X, H, Hkv, dh, scale=None, causal=False, pad=None, bias=None):
    """Per-head A^h (n, n), T_h (d, d), c (d,) by loops."""
    n = X.shape[0]
    g = H // Hkv
    A, T = [], []
    for h in range(H):
        kvh = h // g
        q = X @ np_w["W_Q"][h * dh : (h + 1) * dh].T + np_w.get("b_Q", np.zeros(H * dh))[h * dh : (h + 1) * dh]
        ks = slice(kvh * dh, (kvh + 1) * dh)
        k = X @ np_w["W_K"][ks].T + np_w.get("b_K", np.zeros(Hkv * dh))[ks]
        s = (1 / math.sqrt(dh)) if scale is None else scale
        S = q @ k.T * s
        if bias is not None:
            S = S + bias[h]
        for i in range(n):
            for j in range(n):
                if (causal and j > i) or (pad is not None and pad[j]):
                    S[i, j] = -np.inf
        E = np.exp(S - S.max(1, keepdims=True))
        A.append(E / E.sum(1, keepdims=True))
        T.append(np_w["W_O"][:, h * dh : (h + 1) * dh] @ np_w["W_V"][ks])
    c = np.zeros(np_w["W_O"].shape[0])
    if "b_V" in np_w:
        for h in range(H):
            c += np_w["W_O"][:, h * dh : (h + 1) * dh] @ np_w["b_V"][(h // g) * dh : (h // g + 1) * dh]
    if "b_O" in np_w:
        c = c + np_w["b_O"]
    return np.stack(A), np.stack(T), c


def close(a, b, atol=1e-12):
    a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    np.testing.assert_allclose(a, b, rtol=0, atol=atol)


# ------------------------------------------------------------------------------------- kv head map
def test_kv_head_map_groups_consecutive_query_heads():
    assert kv_head_map(6, 2) == [0, 0, 0, 1, 1, 1]
    assert kv_head_map(6, 6) == [0, 1, 2, 3, 4, 5]
    assert kv_head_map(6, 1) == [0] * 6
    assert kv_head_map(3, None) == [0, 1, 2]


@pytest.mark.parametrize("H, Hkv", [(4, 3), (2, 4)])
def test_kv_head_map_rejects_a_non_divisor_naming_n_kv_heads(H, Hkv):
    msg = raises_named(ShapeError, "n_kv_heads", lambda: kv_head_map(H, Hkv))
    assert f"n_heads={H} must be a multiple of n_kv_heads={Hkv}" in msg


@pytest.mark.parametrize("H, Hkv", [(4, 0), (4, -2)])
def test_kv_head_map_rejects_a_nonpositive_kv_head_count_as_a_parameter(H, Hkv):
    """n_kv_heads < 1 is a bad scalar (the contract's Int(lo=1)), not a divisibility failure."""
    msg = raises_named(ParameterError, "n_kv_heads", lambda: kv_head_map(H, Hkv))
    assert msg == f"n_kv_heads: must be >= 1, got {Hkv}"


# ------------------------------------------------------------------------------------- weights validation
def good(**over):
    base = dict(
        W_Q=torch.ones(4, 3, dtype=f64),
        W_K=torch.ones(2, 3, dtype=f64),
        W_V=torch.ones(2, 3, dtype=f64),
        W_O=torch.ones(3, 4, dtype=f64),
        n_heads=2,
        n_kv_heads=1,
    )
    base.update(over)
    return base


@pytest.mark.parametrize(
    "over, err, arg",
    [
        (dict(W_Q=torch.ones(4, dtype=f64)), ShapeError, "W_Q"),
        (dict(W_K=torch.ones(1, 2, 3, dtype=f64)), ShapeError, "W_K"),
        (dict(W_V=torch.full((2, 3), float("nan"), dtype=f64)), NonFiniteError, "W_V"),
        (dict(W_O=torch.ones(3, 4, dtype=torch.float32)), DTypeError, "W_O"),
        (dict(n_kv_heads=3), ShapeError, "n_kv_heads"),
        (
            dict(
                W_Q=torch.ones(5, 3, dtype=f64),
                n_kv_heads=None,
                n_heads=5,
                W_K=torch.ones(5, 3, dtype=f64),
                W_V=torch.ones(5, 3, dtype=f64),
                W_O=torch.ones(3, 4, dtype=f64),
            ),
            ShapeError,
            "W_O",
        ),
        (dict(W_Q=torch.ones(5, 3, dtype=f64), W_O=torch.ones(3, 5, dtype=f64)), ShapeError, "W_Q"),
        (dict(W_Q=torch.ones(5, 3, dtype=f64)), ShapeError, "W_O"),  # W_O's q=4 disagrees with W_Q's q=5
        (dict(W_K=torch.ones(3, 3, dtype=f64)), ShapeError, "W_K"),
        (dict(W_V=torch.ones(2, 4, dtype=f64)), ShapeError, "W_V"),
        (dict(W_O=torch.ones(4, 4, dtype=f64)), ShapeError, "W_O"),
        (dict(W_O=torch.ones(3, 2, dtype=f64)), ShapeError, "W_O"),
        (dict(b_Q=torch.ones(3, dtype=f64)), ShapeError, "b_Q"),
        (dict(b_K=torch.ones(4, dtype=f64)), ShapeError, "b_K"),
        (dict(b_V=torch.ones(4, dtype=f64)), ShapeError, "b_V"),
        (dict(b_O=torch.ones(4, dtype=f64)), ShapeError, "b_O"),
        (dict(b_O=torch.ones(1, 3, dtype=f64)), ShapeError, "b_O"),
        (dict(b_K=torch.full((2,), float("inf"), dtype=f64)), NonFiniteError, "b_K"),
        (dict(b_Q=torch.ones(4, dtype=torch.float32)), DTypeError, "b_Q"),
    ],
)
def test_weights_validation_names_the_offending_argument(over, err, arg):
    raises_named(err, arg, lambda: AttentionWeights(**good(**over)))


def test_weight_shape_messages_state_the_expected_shape():
    msg = raises_named(ShapeError, "W_K", lambda: AttentionWeights(**good(W_K=torch.ones(3, 3, dtype=f64))))
    assert msg == "W_K: expected (2, 3), got (3, 3)"
    msg = raises_named(ShapeError, "W_O", lambda: AttentionWeights(**good(W_O=torch.ones(4, 4, dtype=f64))))
    assert msg == "W_O: has d=4 but W_Q has d=3 (shape (4, 4))"
    msg = raises_named(ShapeError, "b_V", lambda: AttentionWeights(**good(b_V=torch.ones(4, dtype=f64))))
    assert msg == "b_V: expected (2,), got (4,)"
    msg = raises_named(
        ShapeError,
        "W_Q",
        lambda: AttentionWeights(**good(W_Q=torch.ones(5, 3, dtype=f64), W_O=torch.ones(3, 5, dtype=f64))),
    )
    assert msg == "W_Q: rows 5 not divisible by n_heads=2"


def test_weights_accept_array_likes_and_store_tensors():
    w = AttentionWeights(
        W_Q=np.ones((4, 3)),
        W_K=np.ones((2, 3)),
        W_V=np.ones((2, 3)),
        W_O=np.ones((3, 4)),
        n_heads=2,
        n_kv_heads=1,
        b_V=np.ones(2),
        b_O=np.ones(3),
    )
    assert all(isinstance(getattr(w, k), torch.Tensor) for k in ("W_Q", "W_K", "W_V", "W_O", "b_V", "b_O"))
    assert (w.d, w.d_head) == (3, 2)


# ------------------------------------------------------------------------------------- head factors and bias
def test_head_factors_and_transports_follow_the_gqa_map():
    w, np_w = weights(1)
    Wo, Wv = head_factors(w)
    for h in range(4):
        kvh = h // 2
        close(Wo[h], np_w["W_O"][:, 2 * h : 2 * h + 2], atol=0)
        close(Wv[h], np_w["W_V"][2 * kvh : 2 * kvh + 2], atol=0)
    _, T, _ = literal_heads(np_w, np.zeros((1, 3)), 4, 2, 2)
    close(head_transports(w), T)


@pytest.mark.parametrize("which", ["none", "b_V", "b_O", "both"])
def test_bias_offset_is_W_O_b_V_plus_b_O(which):
    w, np_w = weights(2)
    keep = {"none": (), "b_V": ("b_V",), "b_O": ("b_O",), "both": ("b_V", "b_O")}[which]
    for nm in ("b_V", "b_O"):
        if nm not in keep:
            setattr(w, nm, None)
            np_w.pop(nm)
    _, _, c = literal_heads(np_w, np.zeros((1, 3)), 4, 2, 2)
    got = bias_offset(w)
    assert got.shape == (3,) and got.dtype == f64
    close(got, c)


# ------------------------------------------------------------------------------------- attention probs
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_attention_probs_gqa_with_scale_and_causal_mask(causal, scale):
    w, np_w = weights(3, scale=scale)
    X = np.random.default_rng(3).standard_normal((5, 3))
    A_ref, _, _ = literal_heads(np_w, X, 4, 2, 2, scale=scale, causal=causal)
    A = attention_probs(t(X), w, causal=causal)
    assert A.shape == (4, 5, 5)
    close(A, A_ref)


def test_attention_probs_key_padding_mask_and_additive_bias():
    w, np_w = weights(4)
    g = np.random.default_rng(4)
    X = g.standard_normal((2, 5, 3))
    pad = np.array([[False, False, True, False, True], [False, False, False, False, False]])
    bias = g.standard_normal((4, 5, 5))
    A = attention_probs(t(X), w, key_padding_mask=torch.as_tensor(pad), attn_bias=t(bias))
    for b in range(2):
        A_ref, _, _ = literal_heads(np_w, X[b], 4, 2, 2, pad=pad[b], bias=bias)
        close(A[b], A_ref)
    assert float(A[0, :, :, 2].abs().max()) == 0.0
    # the contract takes only a bool mask: an integer 0/1 mask is refused, naming the argument
    msg = raises_named(
        DTypeError,
        "key_padding_mask",
        lambda: attention_probs(t(X), w, key_padding_mask=torch.as_tensor(pad.astype(np.int64)), attn_bias=t(bias)),
    )
    assert msg == "key_padding_mask: expected a bool mask, got dtype torch.int64"


def test_attention_probs_rejects_x_with_the_wrong_feature_dim():
    w, _ = weights(5)
    msg = raises_named(ShapeError, "X", lambda: attention_probs(torch.ones(4, 2, dtype=f64), w))
    assert msg == "X: has d=2 but the w has d=3 (shape (4, 2))"
    raises_named(ShapeError, "X", lambda: attention_probs(torch.ones(3, dtype=f64), w))
    raises_named(NonFiniteError, "X", lambda: attention_probs(torch.full((4, 3), float("nan"), dtype=f64), w))
    raises_named(DTypeError, "X", lambda: attention_probs(torch.ones(4, 3, dtype=torch.float32), w))


# ------------------------------------------------------------------------------------- walk from weights
@pytest.mark.parametrize("factored", [True, False])
def test_walk_from_weights_plus_offset_is_the_per_head_layer(factored):
    w, np_w = weights(6)
    X = np.random.default_rng(6).standard_normal((4, 3))
    A, T, c = literal_heads(np_w, X, 4, 2, 2, causal=True)
    walk, c_got = walk_from_weights(t(X), w, causal=True, factored=factored)
    assert walk.factored == factored and walk.n_heads == 4
    Y_ref = sum(A[h] @ X @ T[h].T for h in range(4)) + c
    close(walk.apply(t(X)) + c_got, Y_ref)
    close(c_got, c)


def test_walk_from_weights_passes_masks_and_bias_through():
    w, np_w = weights(7)
    g = np.random.default_rng(7)
    X = g.standard_normal((4, 3))
    pad = np.array([False, True, False, False])
    bias = g.standard_normal((4, 4, 4))
    A, _, _ = literal_heads(np_w, X, 4, 2, 2, pad=pad, bias=bias)
    walk, _ = walk_from_weights(t(X), w, key_padding_mask=torch.as_tensor(pad), attn_bias=t(bias))
    close(walk.attention, A)


def test_from_torch_mha_with_and_without_bias_reproduces_torch():
    for bias in (True, False):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(6, 3, bias=bias, batch_first=True).double()
        w = AttentionWeights.from_torch_mha(mha)
        assert (w.n_heads, w.d, w.d_head) == (3, 6, 2)
        assert (w.b_Q is None) == (not bias) and (w.b_O is None) == (not bias)
        X = torch.randn(2, 4, 6, dtype=f64, generator=torch.Generator().manual_seed(1))
        ref, _ = mha(X, X, X, need_weights=False)
        walk, c = walk_from_weights(X, w)
        close(walk.apply(X) + c, ref.detach().numpy())
        close(w.W_Q, mha.in_proj_weight[:6].detach().numpy(), atol=0)
        close(w.W_K, mha.in_proj_weight[6:12].detach().numpy(), atol=0)
        close(w.W_V, mha.in_proj_weight[12:].detach().numpy(), atol=0)


def test_from_torch_mha_needs_packed_projections():
    mha = torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=3)
    raises_named(ShapeError, "mha", lambda: AttentionWeights.from_torch_mha(mha))


def test_to_converts_weights_and_biases_and_keeps_head_layout():
    w, _ = weights(8, scale=0.25)
    w32 = w.to(dtype=torch.float32)
    for nm in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"):
        assert getattr(w32, nm).dtype == torch.float32
        close(getattr(w32, nm).double(), getattr(w, nm).numpy(), atol=1e-6)
    assert (w32.n_heads, w32.n_kv_heads, w32.scale) == (4, 2, 0.25)
    w0, _ = weights(8, biases=False)
    assert w0.to(dtype=torch.float32).b_V is None


# ------------------------------------------------------------------------------------- error messages
def W(**over):
    return lambda: AttentionWeights(**good(**over))


BAD_INPUT = [
    (
        W(W_Q=torch.ones(4, 3, dtype=torch.int64)),
        "DTypeError",
        "W_Q: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (W(W_Q=torch.ones(4, dtype=f64)), "ShapeError", "W_Q: expected shape (q, d), got (4,)"),
    (W(W_K=torch.ones(1, 2, 3, dtype=f64)), "ShapeError", "W_K: expected shape (*, d), got (1, 2, 3)"),
    (W(W_V=torch.full((2, 3), math.nan, dtype=f64)), "NonFiniteError", "W_V: contains 6 NaN/inf entries"),
    (
        W(W_K=torch.ones(2, 3)),
        "DTypeError",
        "W_K: dtype torch.float32 differs from W_Q's torch.float64; cast explicitly",
    ),
    (W(n_kv_heads=3), "ShapeError", "n_kv_heads: n_heads=2 must be a multiple of n_kv_heads=3"),
    # W_O sized to agree with W_Q (q=5) so the per-head split, not the size agreement, is what fails
    (
        W(W_Q=torch.ones(5, 3, dtype=f64), W_O=torch.ones(3, 5, dtype=f64)),
        "ShapeError",
        "W_Q: rows 5 not divisible by n_heads=2",
    ),
    (W(W_Q=torch.ones(5, 3, dtype=f64)), "ShapeError", "W_O: has q=4 but W_Q has q=5 (shape (3, 4))"),
    (W(W_K=torch.ones(2, 4, dtype=f64)), "ShapeError", "W_K: has d=4 but W_Q has d=3 (shape (2, 4))"),
    (W(W_V=torch.ones(4, 3, dtype=f64)), "ShapeError", "W_V: expected (2, 3), got (4, 3)"),
    (W(W_O=torch.ones(3, 2, dtype=f64)), "ShapeError", "W_O: has q=2 but W_Q has q=4 (shape (3, 2))"),
    (W(b_Q=torch.ones(4, dtype=torch.int64)), "DTypeError", "b_Q: expected a floating tensor"),
    (W(b_K=torch.full((2,), math.inf, dtype=f64)), "NonFiniteError", "b_K: contains 2 NaN/inf entries"),
    (W(b_V=torch.ones(2)), "DTypeError", "b_V: dtype torch.float32 differs from W_Q's torch.float64; cast explicitly"),
    (W(b_Q=torch.ones(3, dtype=f64)), "ShapeError", "b_Q: has q=3 but W_Q has q=4 (shape (3,))"),
    (W(b_K=torch.ones(4, dtype=f64)), "ShapeError", "b_K: expected (2,), got (4,)"),
    (W(b_O=torch.ones(1, 3, dtype=f64)), "ShapeError", "b_O: expected shape (d), got (1, 3)"),
    (
        lambda: AttentionWeights.from_torch_mha(torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=3)),
        "ShapeError",
        "mha: only packed in_proj (kdim == vdim == embed_dim) is supported",
    ),
    (
        lambda: attention_probs(torch.ones(4, 3, dtype=torch.int64), AttentionWeights(**good())),
        "DTypeError",
        "X: expected a floating tensor",
    ),
    (
        lambda: attention_probs(torch.ones(3, dtype=f64), AttentionWeights(**good())),
        "ShapeError",
        "X: expected shape (..., n, d), got (3,)",
    ),
    (
        lambda: attention_probs(torch.full((4, 3), math.nan, dtype=f64), AttentionWeights(**good())),
        "NonFiniteError",
        "X: contains 12 NaN/inf entries",
    ),
    (
        lambda: attention_probs(torch.ones(4, 3), AttentionWeights(**good())),
        "DTypeError",
        "X: dtype torch.float32 differs from w's torch.float64; cast explicitly",
    ),
    (
        lambda: attention_probs(torch.ones(4, 2, dtype=f64), AttentionWeights(**good())),
        "ShapeError",
        "X: has d=2 but the w has d=3 (shape (4, 2))",
    ),
    (
        lambda: walk_from_weights(torch.ones(4, 2, dtype=f64), AttentionWeights(**good())),
        "ShapeError",
        "X: has d=2 but the w has d=3 (shape (4, 2))",
    ),
]


@pytest.mark.parametrize("call, err, message", BAD_INPUT)
def test_bad_input_messages_name_the_argument_and_what_was_expected(call, err, message):
    assert_bad_input(call, err, message)


# ------------------------------------------------------------------------------------- the `w` argument spec
# ``_weights()`` builds the spec every public function declares for ``w``; it runs once, at import,
# as a decorator argument, so the public calls above cannot tell a changed spec from the one that was
# imported. These tests run it as a unit, with the same expectations as the public messages.
def _check_w(**arguments):
    from numerics.attention import _weights
    from numerics.contracts.declarations import Contract, Tensor

    return Contract("probe", {"w": _weights(), "X": Tensor("... n d")}).validate(arguments)


def test_w_spec_refuses_a_non_weights_object_naming_w():
    msg = raises_named(DTypeError, "w", lambda: _check_w(w={"W_Q": torch.ones(4, 3, dtype=f64)}))
    assert msg == "w: expected an AttentionWeights, got dict"


def test_w_spec_binds_d_so_x_with_another_feature_dim_is_refused_against_w():
    w = AttentionWeights(**good())
    assert _check_w(w=w, X=torch.ones(4, 3, dtype=f64))["w"] is w
    msg = raises_named(ShapeError, "X", lambda: _check_w(w=w, X=torch.ones(4, 2, dtype=f64)))
    assert msg == "X: has d=2 but the w has d=3 (shape (4, 2))"


def test_w_spec_puts_the_weights_dtype_in_the_group_naming_w():
    """A float32 X against float64 weights is named, and the weights are called ``w`` (the parameter
    the caller used), not ``W_Q``."""
    w = AttentionWeights(**good())
    msg = raises_named(DTypeError, "X", lambda: _check_w(w=w, X=torch.ones(4, 3)))
    assert msg == "X: dtype torch.float32 differs from w's torch.float64; cast explicitly"


# ------------------------------------------------------------------------------------- devices and defaults
def _on_meta(w: AttentionWeights) -> AttentionWeights:
    """``w`` with every tensor moved to the meta device (shapes and dtypes only). The constructor
    refuses meta tensors (it checks values), so they are swapped in after construction."""
    import copy

    m = copy.copy(w)
    for nm in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"):
        if getattr(m, nm) is not None:
            setattr(m, nm, getattr(m, nm).to("meta"))
    return m


@pytest.mark.parametrize("which", [("b_V",), ("b_O",), ("b_V", "b_O"), ()])
def test_bias_offset_lives_on_the_weights_device(which):
    w, _ = weights(9)
    for nm in ("b_V", "b_O"):
        if nm not in which:
            setattr(w, nm, None)
    c = bias_offset(_on_meta(w))
    assert (c.device.type, c.dtype, tuple(c.shape)) == ("meta", f64, (3,))


def test_to_moves_the_weights_to_the_requested_device():
    """``to(device=...)`` reaches every tensor: asking for the meta device gives meta tensors, which
    the constructor then refuses (no values to check), naming the first weight."""
    w, _ = weights(10)
    msg = raises_named(DeviceMismatchError, "W_Q", lambda: w.to(device="meta"))
    assert "meta tensor" in msg
    msg = raises_named(DeviceMismatchError, "W_Q", lambda: w.to(torch.float32, torch.device("meta")))
    assert "meta tensor" in msg


def test_walk_from_weights_keeps_the_factors_by_default():
    """Docstring: "transports kept as low-rank factors" unless ``factored=False``."""
    w, np_w = weights(11)
    X = np.random.default_rng(11).standard_normal((3, 3))
    walk, c = walk_from_weights(t(X), w)
    assert walk.factored is True
    A, T, c_ref = literal_heads(np_w, X, 4, 2, 2)
    close(walk.apply(t(X)) + c, sum(A[h] @ X @ T[h].T for h in range(4)) + c_ref)


# ------------------------------------------------------------------------------------- undefined or overflowing scores
F32_MAX = float(np.finfo(np.float32).max)


def _one_head_f32(q_weight: float, k_weight: float) -> AttentionWeights:
    """d = d_h = 1, one head, scale 1: the score of every (query, key) pair of X = 1 is q_weight·k_weight."""
    f = torch.float32
    return AttentionWeights(
        W_Q=torch.tensor([[q_weight]], dtype=f),
        W_K=torch.tensor([[k_weight]], dtype=f),
        W_V=torch.ones(1, 1, dtype=f),
        W_O=torch.ones(1, 1, dtype=f),
        n_heads=1,
        scale=1.0,
    )


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("causal", [False, True])
def test_overflowing_raw_scores_are_an_overflow_of_x_not_a_mask(sign, causal):
    """Regression: raw scores of ±1e40 (float32 overflows past 3.4e38 to ±inf) were reported as
    ``causal: masks every key`` (even with causal=False) instead of an overflow."""
    assert abs(1e20 * 1e20) > F32_MAX  # the float64 product, beyond float32's range
    w = _one_head_f32(1e20, sign * 1e20)
    msg = raises_named(ParameterError, "X", lambda: attention_probs(torch.ones(2, 1), w, causal=causal))
    assert msg == "X: scores overflow to NaN/±inf (weights or inputs too large for this dtype)"


def test_a_bias_that_overflows_the_scores_to_plus_inf_is_named():
    w = _one_head_f32(1e19, 1e19)  # scores 1e38, finite in float32
    assert F32_MAX < 1e38 + 3e38
    attention_probs(torch.ones(2, 1), w, attn_bias=torch.full((2, 2), 2e38))  # 3e38: still finite
    msg = raises_named(
        ParameterError, "attn_bias", lambda: attention_probs(torch.ones(2, 1), w, attn_bias=torch.full((2, 2), 3e38))
    )
    assert msg == "attn_bias: scores + attn_bias overflow to +inf (too large for this dtype)"


MASKED = "masks every key of some query (an all −inf score row): its attention is undefined"


def test_a_bias_row_of_minus_inf_is_refused_naming_attn_bias():
    w, _ = weights(12)
    X = t(np.random.default_rng(12).standard_normal((4, 3)))
    bias = torch.zeros(4, 4, 4, dtype=f64)
    bias[2, 1, :] = -math.inf  # head 2, query 1: every key
    msg = raises_named(ParameterError, "attn_bias", lambda: attention_probs(X, w, attn_bias=bias))
    assert msg == "attn_bias: " + MASKED
    # a harmless padding mask beside it does not take the blame
    pad = torch.zeros(4, dtype=torch.bool)
    msg = raises_named(ParameterError, "attn_bias", lambda: attention_probs(X, w, attn_bias=bias, key_padding_mask=pad))


def test_a_bias_that_masks_what_causal_leaves_is_refused_naming_attn_bias():
    """Query 0 under the causal mask sees key 0 only; a −inf bias on (0, 0) leaves it nothing."""
    w, np_w = weights(13)
    Xn = np.random.default_rng(13).standard_normal((3, 3))
    bias = np.zeros((3, 3))
    bias[0, 0] = -np.inf
    A = attention_probs(t(Xn), w, attn_bias=t(bias))  # without causal, query 0 still has keys 1, 2
    A_ref, _, _ = literal_heads(np_w, Xn, 4, 2, 2, bias=np.broadcast_to(bias, (4, 3, 3)))
    close(A, A_ref)
    assert float(A[:, 0, 0].abs().max()) == 0.0
    msg = raises_named(ParameterError, "attn_bias", lambda: attention_probs(t(Xn), w, attn_bias=t(bias), causal=True))
    assert msg == "attn_bias: " + MASKED


@pytest.mark.parametrize("with_bias", [False, True])
def test_padding_every_key_of_one_batch_element_is_refused_naming_the_mask(with_bias):
    """Only batch element 1 pads every key; element 0 alone would be fine."""
    w, _ = weights(14)
    X = t(np.random.default_rng(14).standard_normal((2, 4, 3)))
    pad = torch.tensor([[False, True, False, False], [True, True, True, True]])
    bias = torch.zeros(4, 4, 4, dtype=f64) if with_bias else None
    attention_probs(X[:1], w, key_padding_mask=pad[:1], attn_bias=bias)
    msg = raises_named(
        ParameterError, "key_padding_mask", lambda: attention_probs(X, w, key_padding_mask=pad, attn_bias=bias)
    )
    assert msg == "key_padding_mask: " + MASKED


@pytest.mark.parametrize(
    "shape, message",
    [
        ((5, 5), "attn_bias: shape (5, 5) does not broadcast against the scores (2, 4, 4, 4) (..., H, n, n)"),
        ((3, 4, 4), "attn_bias: shape (3, 4, 4) does not broadcast against the scores (2, 4, 4, 4) (..., H, n, n)"),
    ],
)
def test_a_bias_that_does_not_broadcast_against_the_scores_is_refused(shape, message):
    w, _ = weights(15)
    X = torch.zeros(2, 4, 3, dtype=f64)
    msg = raises_named(ShapeError, "attn_bias", lambda: attention_probs(X, w, attn_bias=torch.zeros(shape, dtype=f64)))
    assert msg == message


def test_a_bias_of_another_dtype_is_refused_naming_attn_bias():
    w, _ = weights(16)
    X = torch.zeros(4, 3, dtype=f64)
    msg = raises_named(DTypeError, "attn_bias", lambda: attention_probs(X, w, attn_bias=torch.zeros(4, 4)))
    assert msg == "attn_bias: dtype torch.float32 differs from X's torch.float64; cast explicitly"
