"""The torch capture (issue 37, items 1–3): ``check_attention(module)`` with zero adapter lines for attention
written outside the project — a timm-style ViT ``Attention`` written here from scratch, a softmax-path
module, x-transformers' ``Attention``, ``nn.TransformerEncoderLayer`` (through its ``self_attn``) — judged
on the module's own output against the walk of the literal A of what its kernel received."""

from __future__ import annotations

import math
import sys
import textwrap

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import x_transformers

from connwalk import main
from numerics.conformance import (
    TorchCaptureAdapter,
    TorchCaptureError,
    literal_sdpa,
    literal_softmax,
    observe,
)
from numerics.conformance.kit import T2_STATEMENT, Draw, NotAttentionError, check_attention

EPS64 = torch.finfo(torch.float64).eps


class ViTAttention(nn.Module):
    """timm's ViT ``Attention``, written from its description: a fused ``qkv`` linear, heads split by
    reshape, optional ``qk_norm`` (a LayerNorm on each head's q and k), ``F.scaled_dot_product_attention``,
    ``proj``; ``scale_norm``: a LayerNorm on the attention output before ``proj``; ``gated``: the attention
    output times ``sigmoid(gate(x))`` before ``proj``; ``doubled``: twice ``proj``'s output returned;
    ``tanh_after``: ``tanh`` of ``proj``'s output returned."""

    def __init__(self, d=32, heads=4, *, qk_norm=False, scale_norm=False, gated=False, doubled=False, tanh_after=False):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.q_norm = nn.LayerNorm(self.dh) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(self.dh) if qk_norm else nn.Identity()
        self.norm = nn.LayerNorm(d) if scale_norm else nn.Identity()
        self.gate = nn.Linear(d, d) if gated else None
        self.doubled, self.tanh_after = doubled, tanh_after

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.h, self.dh).permute(2, 0, 3, 1, 4).unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, C)
        o = self.norm(o)
        if self.gate is not None:
            o = o * torch.sigmoid(self.gate(x))
        y = self.proj(o)
        if self.tanh_after:
            y = torch.tanh(y)
        return 2 * y if self.doubled else y


class SoftmaxAttention(nn.Module):
    """Separate q/k/v linears, ``scores = q @ kᵀ · scale``, ``P = scores.softmax(-1)``, ``P @ v``, ``out``;
    ``tanh_before``: ``tanh`` of the attention output before ``out``; ``defect``: ``"temperature"``
    (scores × (1 + 1e-3)), ``"query_axis"`` (the softmax over queries), ``"dropout_on"`` (dropout applied
    to P whatever the training flag)."""

    def __init__(self, d=24, heads=3, *, tanh_before=False, defect=""):
        super().__init__()
        self.h, self.dh, self.tanh_before, self.defect = heads, d // heads, tanh_before, defect
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = (f(x).reshape(B, N, self.h, self.dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = q @ k.transpose(-1, -2) * self.dh**-0.5
        if self.defect == "temperature":
            s = s * (1 + 1e-3)
        P = s.softmax(-2 if self.defect == "query_axis" else -1)
        if self.defect == "dropout_on":
            P = F.dropout(P, 0.5, training=True)
        o = (P @ v).transpose(1, 2).reshape(B, N, -1)
        return self.out(torch.tanh(o) if self.tanh_before else o)


def _seeded(factory, *args, **kw):
    torch.manual_seed(0)
    return factory(*args, **kw)


def _fails_t2(rep) -> None:
    assert rep.verdict == "fails" and not rep.hypothesis_failures, rep.table()
    cx = rep.counterexample
    assert cx is not None and cx.statement == T2_STATEMENT and cx.verdict.residual > cx.verdict.bound


# --------------------------------------------------------------------------- timm-style ViT attention
@pytest.mark.parametrize("kw", [{}, {"qk_norm": True}], ids=["plain", "qk_norm"])
def test_vit_attention_conforms_with_zero_adapter_lines(kw):
    m = _seeded(ViTAttention, **kw)
    rep = check_attention(m, examples=6, seed=0)
    assert rep.verdict == "conforms" and rep.adapter == "torch capture", rep.table()
    assert not rep.shadow  # the float64 copy ran: a float64 kernel, decided at float64
    # the module's own float32 output against the walk of the float64 literal A: a residual at its rounding,
    # never exactly 0 (the output is not rebuilt from the A it is judged against)
    own = check_attention(m, examples=4, seed=0, shadow=False)
    assert own.results and all(r.decided_by == "float32" for r in own.results)
    assert all(0 < r.t2.residual <= r.t2.bound for r in own.results)


@pytest.mark.parametrize("kw", [{"scale_norm": True}, {"gated": True}], ids=["scale_norm", "gated"])
def test_vit_attention_with_a_norm_or_gate_before_proj_fails(kw):
    """A LayerNorm on the attention output, or a gate ``sigmoid(gate(x))``, between the kernel and ``proj``
    fails T2 (not declined). T2 states ``y_i = Σ_h Σ_j A^h_ij W_O^h (W_V^h x_j + b_V^h) + b_O`` with fixed
    factors; the norm divides each query's output by its own spread and the gate multiplies it by a
    query-dependent diagonal, so the transport ``proj·G_i·W_V`` depends on the query ``i``: no fixed
    ``W_O`` reproduces the output. The capture locates ``W_V`` (the ``qkv`` columns of v) and the
    projection whose output *is* the module's output (``proj``, in the natural head layout); the
    module's own output then differs from the walk of the literal A by far more than its rounding."""
    _fails_t2(check_attention(_seeded(ViTAttention, **kw), examples=6, seed=0))


@pytest.mark.parametrize("kw", [{"doubled": True}, {"tanh_after": True}], ids=["doubled", "tanh_after"])
def test_the_module_s_own_output_is_judged(kw):
    """What the module returns after ``proj`` is its output: twice it, or its tanh, is not the walk (a
    capture that recomputed the output from the located factors would call both conforming)."""
    m = _seeded(ViTAttention, **kw)
    _fails_t2(check_attention(m, examples=4, seed=1))
    d = Draw(2, 5, 5, (0, 0), False, 3, 1.0)
    X = d.randn(2, 5, 32, dtype=torch.float32)
    (ex,) = TorchCaptureAdapter(m).extract(d)
    with torch.no_grad():
        assert torch.equal(ex.output, m(X))


# --------------------------------------------------------------------------- softmax → P @ V
def test_softmax_path_conforms_and_a_tanh_before_the_projection_fails():
    rep = check_attention(_seeded(SoftmaxAttention), examples=6, seed=0)
    assert rep.verdict == "conforms", rep.table()
    _fails_t2(check_attention(_seeded(SoftmaxAttention, tanh_before=True), examples=6, seed=0))


@pytest.mark.parametrize(
    "defect,verdict",
    [("temperature", "conforms"), ("query_axis", "hypothesis fails"), ("dropout_on", "hypothesis fails")],
)
def test_defective_softmax_kernels_get_t2_s_verdict(defect, verdict):
    """Kernels written here, each judged by what it computed: a temperature on the scores is still a
    walk (the A used is the softmax of the scaled scores: conforms); a softmax over the queries weights
    the values with a column-stochastic A, and dropout left on with survivors scaled by 2 — the identity
    holds with the A the values were weighted with, whose rows do not sum to one: *hypothesis fails*
    (row-stochastic), never declined."""
    rep = check_attention(_seeded(SoftmaxAttention, defect=defect), examples=6, seed=0)
    assert rep.verdict == verdict, rep.table()
    if verdict != "conforms":
        assert "row-stochastic" in rep.hypothesis_failures and all(r.t2.status == "holds" for r in rep.results)


class GQAAttention(nn.Module):
    """Grouped-query attention: 4 query heads read 2 kv heads (``enable_gqa``), one fused ``kv`` linear."""

    def __init__(self, d=32, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.g, self.dh = heads, kv_heads, d // heads
        self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(d, 2 * kv_heads * self.dh), nn.Linear(d, d)

    def forward(self, x):
        B, N, _ = x.shape
        q = self.q(x).reshape(B, N, self.h, self.dh).transpose(1, 2)
        k, v = self.kv(x).reshape(B, N, 2, self.g, self.dh).permute(2, 0, 3, 1, 4).unbind(0)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o(o.transpose(1, 2).reshape(B, N, -1))


def test_grouped_query_attention_maps_kv_heads_to_query_heads():
    rep = check_attention(_seeded(GQAAttention), examples=6, seed=0)
    assert rep.verdict == "conforms", rep.table()


# --------------------------------------------------------------------------- x-transformers
@pytest.mark.parametrize("kw", [{}, {"causal": True}], ids=["plain", "causal"])
def test_x_transformers_attention_conforms(kw):
    rep = check_attention(_seeded(x_transformers.Attention, dim=64, heads=4, **kw), examples=6, seed=0)
    assert rep.verdict == "conforms" and not rep.shadow, rep.table()


def test_x_transformers_causal_mask_is_read_from_the_call():
    m = _seeded(x_transformers.Attention, dim=64, heads=4, causal=True).eval()
    with torch.no_grad():
        (k,) = observe(m, torch.randn(1, 5, 64)).obs.kernels
    low = torch.ones(5, 5, dtype=torch.bool).tril()
    assert bool((k.A[:, :, ~low] == 0).all()) and bool((k.A[:, :, low] > 0).all())


def test_x_transformers_post_softmax_talking_heads():
    """``post_talking_heads=True`` mixes the heads' probabilities after the softmax (a 1×1 conv over heads)
    and weights the values with the mixture ``A'^h = Σ_g M_hg softmax_g``. The capture follows the
    probabilities to the ``einsum`` that consumes them and judges the mixture: the identity holds with it,
    but its rows sum to ``Σ_g M_hg`` and entries may be negative, so T2's hypotheses fail — *hypothesis
    fails*, not a walk. x-transformers initialises the mixing to the identity (``dirac_``): then it is a
    walk and conforms."""
    m = _seeded(x_transformers.Attention, dim=64, heads=4, post_talking_heads=True)
    assert check_attention(m, examples=4, seed=0).verdict == "conforms"
    with torch.no_grad():
        m.attend.post_softmax_talking_heads.weight.normal_(generator=torch.Generator().manual_seed(1))
    rep = check_attention(m, examples=6, seed=0)
    assert rep.verdict == "hypothesis fails" and "row-stochastic" in rep.hypothesis_failures, rep.table()
    assert all(r.t2.status == "holds" for r in rep.results)


def test_x_transformers_gated_values_fail():
    """``gate_values=True``: the attention output times ``sigmoid(to_v_gate(x))`` before ``to_out`` — a
    query-dependent transport (as the ViT gate above): fails."""
    _fails_t2(check_attention(_seeded(x_transformers.Attention, dim=64, heads=4, gate_values=True), examples=6))


# --------------------------------------------------------------------------- torch's encoder layer
def test_transformer_encoder_layer_is_judged_through_its_self_attn():
    layer = _seeded(nn.TransformerEncoderLayer, d_model=32, nhead=4, batch_first=True)
    rep = check_attention(layer, examples=5, seed=0)
    assert rep.verdict == "conforms" and "self_attn" in rep.adapter, rep.table()
    assert {r.layer for r in rep.results} == {"self_attn"} and "self_attn" in rep.table()


def test_mha_fast_path_is_off_under_the_capture():
    """``nn.MultiheadAttention``'s native fast path (eval, no grad) is skipped while a torch function mode
    is active: its Python path runs and ``F.multi_head_attention_forward`` is observed."""
    layer = _seeded(nn.TransformerEncoderLayer, d_model=32, nhead=4, batch_first=True).eval()
    with torch.no_grad():
        run = observe(layer, torch.randn(2, 3, 32))
    assert [k.how.split(" ")[0] for k in run.obs.kernels] == ["F.multi_head_attention_forward"]


def test_a_sequence_first_layer_is_refused_naming_module():
    layer = _seeded(nn.TransformerEncoderLayer, d_model=32, nhead=4)  # batch_first=False
    with pytest.raises(TorchCaptureError, match="batch_first") as ei:
        check_attention(layer, examples=2)
    assert ei.value.argument == "module"


CLI_FACTORY = textwrap.dedent(
    """
    import torch

    def encoder_layer():
        torch.manual_seed(0)
        return torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, batch_first=True)
    """
)


def test_cli_conform_of_an_encoder_layer(tmp_path, monkeypatch, capsys):
    (tmp_path / "capture_factories.py").write_text(CLI_FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("capture_factories", None)
    try:
        assert main(["conform", "capture_factories:encoder_layer", "--examples", "3"]) == 0
    finally:
        sys.modules.pop("capture_factories", None)
    out = capsys.readouterr().out
    assert "T2 HOLDS" in out and "self_attn" in out


# --------------------------------------------------------------------------- what cannot be read
class TwoAttentions(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = ViTAttention(), ViTAttention()

    def forward(self, x):
        return self.b(self.a(x))


class NormedValues(SoftmaxAttention):
    """A LayerNorm on the values (after their projection): no linear's output is the kernel's v."""

    def __init__(self):
        super().__init__()
        self.vn = nn.LayerNorm(24)
        v = self.v
        self.v = nn.Sequential(v, self.vn)


class Router(nn.Module):
    """A softmax that no matmul consumes (a classifier's): no attention kernel."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x).softmax(-1)


@pytest.mark.parametrize(
    "module,needle",
    [(TwoAttentions(), "2 attention kernel calls"), (NormedValues(), "no F.linear output observed before it")],
    ids=["two_attentions", "normed_values"],
)
def test_what_cannot_be_located_is_a_typed_error_naming_module(module, needle):
    with pytest.raises(TorchCaptureError, match=needle) as ei:
        check_attention(module, examples=2)
    assert ei.value.argument == "module"


def test_no_observed_kernel_stays_not_attention():
    for mod in (nn.Linear(4, 4), Router()):
        with pytest.raises(NotAttentionError) as ei:
            check_attention(mod, examples=2)
        assert ei.value.argument == "module" and "observed no attention kernel" in str(ei.value)


# --------------------------------------------------------------------------- the literal A
def _oracle(q, k, mask=None, causal=False, scale=None, groups=1):
    """softmax(q kᵀ·scale + mask) by hand in float64: exp of the shifted scores over their sum."""
    q, k = q.to(torch.float64), k.to(torch.float64).repeat_interleave(groups, dim=1)
    s = torch.einsum("bhie,bhje->bhij", q, k) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    keep = torch.ones_like(s, dtype=torch.bool)
    if causal:
        keep &= torch.ones(s.shape[-2:], dtype=torch.bool).tril()
    if mask is not None:
        keep &= mask
    e = torch.where(keep, torch.exp(s - s.masked_fill(~keep, -math.inf).amax(-1, keepdim=True)), 0.0)
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize("causal,gqa,masked,scale", [(False, False, False, None), (True, True, True, 0.3)])
def test_literal_attention_against_a_float64_oracle(causal, gqa, masked, scale):
    g = torch.Generator().manual_seed(7)
    B, H, Hkv, n, E = 2, 4, 2 if gqa else 4, 5, 8
    q, k = torch.randn(B, H, n, E, generator=g), torch.randn(B, Hkv, n, E, generator=g)
    mask = torch.rand(B, 1, n, n, generator=g) > 0.3 if masked else None
    if mask is not None:
        mask[..., 0] = True  # every query keeps a key
    A = literal_sdpa(q, k, mask, causal, scale, enable_gqa=gqa)
    ref = _oracle(q, k, mask, causal, scale, H // Hkv)
    assert A.dtype == torch.float64 and A.shape == (B, H, n, n)
    # two float64 evaluations of the same softmax over n keys: each within (n + 2)·eps of the exact
    assert float((A - ref).abs().max()) <= 2 * (n + 2) * EPS64
    s = torch.randn(B, H, n, n, generator=g)
    assert float((literal_softmax(s, 2) - _oracle_axis(s, 2)).abs().max()) <= 2 * (n + 2) * EPS64


def _oracle_axis(s, dim):
    s = s.to(torch.float64)
    e = torch.exp(s - s.amax(dim, keepdim=True))
    return e / e.sum(dim, keepdim=True)


def test_the_observed_kernel_s_attention_is_the_literal_one():
    """The capture's A of a ViT attention run is the float64 softmax of the q and k its kernel received."""
    m = _seeded(ViTAttention, qk_norm=True).eval()
    X = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        (k,) = observe(m, X).obs.kernels
        B, N, _ = X.shape
        q, kk, _v = m.qkv(X).reshape(B, N, 3, 4, 8).permute(2, 0, 3, 1, 4).unbind(0)
        ref = _oracle(m.q_norm(q), m.k_norm(kk))
    assert k.A.dtype == torch.float64 and float((k.A - ref).abs().max()) <= 2 * (N + 2) * EPS64


def test_encoder_layer_key_padding_is_drawn_and_read_from_the_call():
    """``src_key_padding_mask`` (torch's convention, True = padded) is drawn; the kernel receives it through
    ``F.multi_head_attention_forward`` and the literal A gives the padded keys no weight."""
    layer = _seeded(nn.TransformerEncoderLayer, d_model=32, nhead=4, batch_first=True)
    rep = check_attention(layer, examples=8, seed=0)
    assert rep.verdict == "conforms", rep.table()
    assert any(any(r.draw.pad) for r in rep.results)  # some draws were padded
    d = Draw(2, 5, 5, (2, 0), False, 1, 1.0)
    (ex,) = TorchCaptureAdapter(layer, path="self_attn").extract(d)
    assert bool((ex.A[0, :, :, 3:] == 0).all()) and bool((ex.A[0, :, :, :3] > 0).all())
    assert torch.equal(ex.key_mask, ~d.key_padding_mask())
