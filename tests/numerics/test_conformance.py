"""The conformance kit (numerics.conformance.kit): it accepts every attention module that is the walk it
claims (torch MHA in its variants, the Hugging Face families whole and stand-alone, a user's
linear-attention layer) and rejects, with a shrunk counterexample naming T2, modules that are not
(W_O transposed, heads permuted between W_V and W_O). The user modules here are written as a user
would, against the documented ``connwalk_attention`` protocol; the residual of a rejection is
compared with a literal float64 loop over the definition."""

from __future__ import annotations

import math

import pytest
import torch

from numerics.conformance.adapters import MHAAdapter
from numerics.conformance.kit import (
    HYPOTHESES,
    T2_STATEMENT,
    ConformanceError,
    Extraction,
    NotAttentionError,
    assert_conforms,
    check_attention,
)
from numerics.errors import ConnwalkError, NonFiniteError, ParameterError, UnsupportedArchitectureError


# --------------------------------------------------------------------------- user modules
class HandAttention(torch.nn.Module):
    """Softmax multi-head attention written by hand. ``wrong="transpose"`` applies ``W_Oᵀ`` instead of
    ``W_O``; ``wrong="permute"`` sends head ``h``'s values through head ``h+1``'s output block.
    Either way the module still *claims* its parameters' ``W_O``, ``W_V``."""

    def __init__(self, d=8, heads=2, wrong=None, dtype=torch.float64):
        super().__init__()
        self.embed_dim, self.h, self.wrong = d, heads, wrong
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, dtype=dtype) for _ in range(4))

    def _attention(self, X, key_padding_mask):
        B, n, d = X.shape
        H, dh = self.h, d // self.h
        q = self.q(X).reshape(B, n, H, dh).transpose(1, 2)
        k = self.k(X).reshape(B, n, H, dh).transpose(1, 2)
        S = q @ k.transpose(-1, -2) / math.sqrt(dh)
        if key_padding_mask is not None:
            S = S.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        return torch.softmax(S, -1)

    def forward(self, X, key_padding_mask=None):
        B, n, d = X.shape
        H, dh = self.h, d // self.h
        A = self._attention(X, key_padding_mask)
        ctx = A @ self.v(X).reshape(B, n, H, dh).transpose(1, 2)  # (B, H, n, dh)
        if self.wrong == "permute":
            ctx = ctx.roll(1, dims=1)
        flat = ctx.transpose(1, 2).reshape(B, n, d)
        W = self.o.weight.T if self.wrong == "transpose" else self.o.weight
        return flat @ W.T + self.o.bias, A

    def connwalk_attention(self, X, key_padding_mask=None):
        Y, A = self(X, key_padding_mask)
        d, H = self.embed_dim, self.h
        dh = d // H
        return Extraction(
            output=Y,
            A=A,
            W_O=self.o.weight.detach().reshape(d, H, dh).permute(1, 0, 2),
            W_V=self.v.weight.detach().reshape(H, dh, d),
            values=X,
            b_V=self.v.bias.detach().reshape(H, dh),
            b_O=self.o.bias.detach(),
        )


class LinearAttention(torch.nn.Module):
    """Normalised linear attention (Katharopoulos et al.): ``φ = elu + 1``, computed in its linear
    form ``φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q_i)ᵀ Σ_j φ(k_j)``; the walk's ``A`` is formed only for
    the check."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.embed_dim, self.h = d, heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, dtype=torch.float64) for _ in range(4))

    def _feat(self, X, key_padding_mask):
        B, n, d = X.shape
        H, dh = self.h, d // self.h
        fq = torch.nn.functional.elu(self.q(X).reshape(B, n, H, dh).transpose(1, 2)) + 1
        fk = torch.nn.functional.elu(self.k(X).reshape(B, n, H, dh).transpose(1, 2)) + 1
        if key_padding_mask is not None:
            fk = fk * (~key_padding_mask)[:, None, :, None]
        return fq, fk

    def forward(self, X, key_padding_mask=None):
        B, n, d = X.shape
        H, dh = self.h, d // self.h
        fq, fk = self._feat(X, key_padding_mask)
        v = self.v(X).reshape(B, n, H, dh).transpose(1, 2)
        kv = fk.transpose(-1, -2) @ v  # (B, H, dh, dh)
        z = fk.sum(-2)  # (B, H, dh)
        ctx = (fq @ kv) / (fq @ z[..., None])
        return self.o(ctx.transpose(1, 2).reshape(B, n, d))

    def connwalk_attention(self, X, key_padding_mask=None):
        fq, fk = self._feat(X, key_padding_mask)
        S = fq @ fk.transpose(-1, -2)
        d, H = self.embed_dim, self.h
        dh = d // H
        return dict(
            output=self(X, key_padding_mask),
            A=S / S.sum(-1, keepdim=True),
            W_O=self.o.weight.detach().reshape(d, H, dh).permute(1, 0, 2),
            W_V=self.v.weight.detach().reshape(H, dh, d),
            values=X,
            b_V=self.v.bias.detach().reshape(H, dh),
            b_O=self.o.bias.detach(),
        )


class MeanAttention(torch.nn.Module):
    """``y_i = mean_j x_j``: one head, uniform attention, ``T = I``. Every hypothesis of T3 and T5
    holds by construction (stochastic, reversible with uniform π, identity transports; full support;
    ``I`` is an orthogonal involution)."""

    embed_dim = 4

    def connwalk_attention(self, X):
        B, n, d = X.shape
        A = torch.full((B, 1, n, n), 1.0 / n, dtype=X.dtype)
        eye = torch.eye(d, dtype=X.dtype)
        return Extraction(X.mean(1, keepdim=True).expand(B, n, d), A, eye[None], eye[None], X)


# --------------------------------------------------------------------------- conforming modules
@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(bias=False),
        dict(kdim=5, vdim=7),
        dict(kdim=5, vdim=7, bias=False, batch_first=True),
        dict(batch_first=True, dtype=torch.float32),
    ],
    ids=["bias", "no-bias", "kdim-vdim", "kdim-vdim-nobias-bf", "bf-float32"],
)
def test_torch_mha_conforms(kw):
    torch.manual_seed(0)
    dtype = kw.pop("dtype", torch.float64)
    m = torch.nn.MultiheadAttention(16, 4, **kw).to(dtype)
    rep = assert_conforms(m, examples=8)
    assert rep.conforms and rep.status == "holds" and rep.counterexample is None
    draws = {r.index: r.draw for r in rep.results}
    assert len(draws) == 8 + 1 and any(any(d.pad) for d in draws.values())  # key padding was exercised
    if "kdim" in kw:
        assert all(r.t3 == {} and r.cross for r in rep.results)
        assert any(d.m != d.n for d in draws.values())
    else:
        assert any(d.causal for d in draws.values())
        # T3 on every draw of the sweep; the repeated shape (index 8) checks T2 and staleness only
        assert all(set(r.t3) == {"a stochastic", "b reversible", "c metric"} for r in rep.results if r.index < 8)
        assert all(r.t3 == {} for r in rep.results if r.index == 8)
    assert rep.dtype == str(dtype).replace("torch.", "")


def test_mha_with_a_key_that_is_no_token_is_refused():
    m = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True)
    with pytest.raises(UnsupportedArchitectureError) as ei:
        check_attention(m)
    assert ei.value.argument == "module"


@pytest.mark.parametrize("family", ["bert", "mpnet", "gpt2", "llama", "gemma3"])
def test_hf_models_conform_layer_by_layer(family):
    from numerics.models.tiny import tiny_model

    model = tiny_model(family)
    rep = assert_conforms(model, examples=3)
    layers = {r.layer for r in rep.results}
    assert layers == {str(i) for i in range(len(layers))} and len(layers) >= 2  # every layer checked
    assert family in rep.adapter


def _standalone(cls_name):
    import transformers.models.bert.modeling_bert as bert
    import transformers.models.gemma3.modeling_gemma3 as gemma3
    import transformers.models.gpt2.modeling_gpt2 as gpt2
    import transformers.models.llama.modeling_llama as llama
    import transformers.models.mpnet.modeling_mpnet as mpnet

    from numerics.models.tiny import tiny_config

    torch.manual_seed(0)
    make = {
        "BertSelfAttention": lambda: bert.BertSelfAttention(tiny_config("bert")),
        "BertAttention": lambda: bert.BertAttention(tiny_config("bert")),
        "MPNetSelfAttention": lambda: mpnet.MPNetSelfAttention(tiny_config("mpnet")),
        "MPNetAttention": lambda: mpnet.MPNetAttention(tiny_config("mpnet")),
        "GPT2Attention": lambda: gpt2.GPT2Attention(tiny_config("gpt2"), layer_idx=0),
        "LlamaAttention": lambda: llama.LlamaAttention(tiny_config("llama"), layer_idx=0),
        "Gemma3Attention": lambda: gemma3.Gemma3Attention(tiny_config("gemma3"), layer_idx=0),  # sliding layer
    }
    m = make[cls_name]().double()
    with torch.no_grad():  # non-zero biases, as a trained module has
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return m


@pytest.mark.parametrize(
    "cls_name",
    [
        "BertSelfAttention",
        "BertAttention",
        "MPNetSelfAttention",
        "MPNetAttention",
        "GPT2Attention",
        "LlamaAttention",
        "Gemma3Attention",
    ],
)
def test_hf_standalone_attention_conforms(cls_name):
    m = _standalone(cls_name)
    rep = assert_conforms(m, examples=4)
    assert cls_name in rep.adapter and len({r.index for r in rep.results}) == 4 + 1


def test_wrong_hf_module_is_rejected():
    """The stand-alone path is not vacuous: a patched GPT-2 kernel that treats its ``Conv1D`` output
    projection as an ``nn.Linear`` (``x Wᵀ + b`` instead of ``x W + b``) is rejected; unpatched, the
    same module conforms."""
    m = _standalone("GPT2Attention")
    patch = m.c_proj.register_forward_hook(lambda mod, args, out: args[0] @ mod.weight.T + mod.bias)
    try:
        rep = check_attention(m, examples=4)
    finally:
        patch.remove()
    assert not rep.conforms and rep.counterexample is not None
    assert rep.counterexample.statement == T2_STATEMENT
    assert check_attention(m, examples=4).conforms


def test_linear_attention_conforms_and_reports_hypotheses():
    torch.manual_seed(1)
    rep = assert_conforms(LinearAttention(), examples=8)
    assert "connwalk_attention" in rep.adapter
    # φ = elu + 1 > 0: every real weight positive, rows normalised
    assert all(r.t3["a stochastic"].status == "holds" for r in rep.results if r.index < 8)
    assert all(r.t5["softmax"].status == "holds" for r in rep.results if r.index < 8)


def test_mean_attention_meets_every_hypothesis():
    rep = assert_conforms(MeanAttention(), examples=6)
    for r in rep.results:
        if r.index == 6:  # the repeated shape: T2 and staleness only
            assert r.t3 == {} and r.t5 == {}
            continue
        assert {k: v.status for k, v in r.t3.items()} == dict.fromkeys(r.t3, "holds"), r.t3
        assert {k: v.status for k, v in r.t5.items()} == dict.fromkeys(r.t5, "holds"), r.t5
        assert r.t5["involution"].detail.startswith("1/1")


# --------------------------------------------------------------------------- rejected modules
def _literal_residual(module, draw):
    """‖Y − Ŷ‖_F by the definition, float64 Python loops over the claimed parameters."""
    X = draw.randn(draw.batch, draw.n, module.embed_dim)
    kpm = draw.key_padding_mask()
    Y, A = module(X, kpm)
    d, H = module.embed_dim, module.h
    dh = d // H
    Wv, bv = module.v.weight.detach().tolist(), module.v.bias.detach().tolist()
    Wo, bo = module.o.weight.detach().tolist(), module.o.bias.detach().tolist()
    x, a, y = X.tolist(), A.detach().tolist(), Y.detach().tolist()
    total = 0.0
    for b in range(draw.batch):
        for i in range(draw.n):
            for r in range(d):
                s = bo[r]
                for h in range(H):
                    for j in range(draw.n):
                        for k in range(dh):
                            vk = bv[h * dh + k] + sum(Wv[h * dh + k][c] * x[b][j][c] for c in range(d))
                            s += a[b][h][i][j] * Wo[r][h * dh + k] * vk
                total += (y[b][i][r] - s) ** 2
    return math.sqrt(total)


@pytest.mark.parametrize("wrong", ["transpose", "permute"])
def test_wrong_module_rejected_with_shrunk_counterexample(wrong):
    torch.manual_seed(2)
    good, bad = HandAttention(), HandAttention(wrong=wrong)
    bad.load_state_dict(good.state_dict())
    assert assert_conforms(good, examples=6).conforms  # the same code without the defect conforms
    with pytest.raises(ConformanceError) as ei:
        assert_conforms(bad, examples=6)
    rep = ei.value.report
    cx = rep.counterexample
    assert cx is not None and cx.statement == T2_STATEMENT and cx.statement.startswith("T2")
    assert "violates T2" in str(ei.value) and "counterexample (shrunk)" in str(ei.value)
    # shrunk: one sequence, one token, nothing padded, unit scale (the defect shows at n = 1)
    d = cx.draw
    assert (d.batch, d.n, d.pad, d.scale) == (1, 1, (0,), 1.0)
    assert cx.verdict.status == "fails" and cx.verdict.residual > cx.verdict.bound
    lit = _literal_residual(bad, d)
    assert abs(cx.verdict.residual - lit) <= 1e-12 * lit


# --------------------------------------------------------------------------- bad input, report
def test_not_an_attention_module():
    with pytest.raises(NotAttentionError) as ei:
        check_attention(torch.nn.Linear(4, 4))
    assert ei.value.argument == "module" and "connwalk_attention" in str(ei.value)


@pytest.mark.parametrize("arg,value", [("examples", 0), ("max_length", 0), ("seed", -1), ("max_batch", True)])
def test_bad_arguments_are_named(arg, value):
    with pytest.raises(ParameterError) as ei:
        check_attention(MeanAttention(), **{arg: value})
    assert ei.value.argument == arg


def test_malformed_extraction_is_named():
    class Bad(MeanAttention):
        def connwalk_attention(self, X):
            ex = super().connwalk_attention(X)
            ex.values = X[:, :, :2]
            return ex

    with pytest.raises(Exception) as ei:
        check_attention(Bad())
    assert getattr(ei.value, "argument", None) == "values"


@pytest.mark.parametrize(
    "param,field", [("out_proj.weight", "W_O"), ("in_proj_weight", "W_V"), ("out_proj.bias", "b_O")]
)
def test_non_finite_parameters_are_bad_input_not_a_verdict(param, field):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():
        t = mha.get_parameter(param)
        t.view(-1)[-1] = float("nan")  # the last row of in_proj_weight is a value row
    with pytest.raises(NonFiniteError) as ei:
        check_attention(mha, examples=2, hypotheses=False)
    assert ei.value.argument == "module" and param in str(ei.value) and "NaN" in str(ei.value)
    with pytest.raises(NonFiniteError) as ei:  # the claimed factors, also when an adapter builds them
        check_attention(MHAAdapter(mha), examples=2, hypotheses=False)
    assert ei.value.argument == field


def test_an_infinite_buffer_is_no_bad_input():
    """Buffers may hold ±inf on purpose (an input clipping bound of -inf): the module is judged."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    mha.register_buffer("input_min", torch.tensor(-math.inf, dtype=torch.float64))
    assert check_attention(mha, examples=2, hypotheses=False).conforms


def test_report_table_and_dict():
    rep = check_attention(MeanAttention(), examples=3, seed=5)
    table = rep.table()
    assert table.startswith("conformance of MeanAttention") and "T2 HOLDS" in table and "seed 5" in table
    data = rep.as_dict()
    assert data["conforms"] is True and data["counterexample"] is None and len(data["draws"]) == 3 + 1
    assert set(data["draws"][0]) == {
        *("draw", "input", "layer", "decided_by", "shadow", "hypotheses", "T2", "T3", "T5"),
        *("identifying", "identifying_why", "trusted", "trusted_why"),
    }
    k = sum(r.draw.n <= 5 for r in rep.results)  # one head of dimension 4: n − 1 ≤ 4 keys' differences
    assert k > 0 and data["identifying_draws"] == k and data["evidence"] == f"{k} of 4 draws identifying"
    assert data["verdict"] == "conforms" and data["hypothesis_failures"] == []
    assert data["decided_by"] == "float64 shadow" and set(data["draws"][0]["hypotheses"]) == set(HYPOTHESES)
    again = check_attention(MeanAttention(), examples=3, seed=5)
    assert [r.draw for r in again.results] == [r.draw for r in rep.results]  # seeded


def test_layers_out_of_range_are_named():
    from numerics.models.tiny import tiny_model

    with pytest.raises(ConnwalkError) as ei:
        check_attention(tiny_model("bert"), layers=[7])
    assert ei.value.argument == "layers"


@pytest.mark.parametrize("wrong", ["transpose", "permute"])
def test_wrong_float32_module_rejected(wrong):
    """float32: the bound (k·eps₃₂·Σ|terms|) stays far below the output's own size, so a defect of
    that size is caught."""
    torch.manual_seed(3)
    good = HandAttention(d=64, heads=4, dtype=torch.float32)
    bad = HandAttention(d=64, heads=4, wrong=wrong, dtype=torch.float32)
    bad.load_state_dict(good.state_dict())
    assert check_attention(good, examples=5).conforms
    rep = check_attention(bad, examples=5)
    assert not rep.conforms and rep.counterexample is not None


def test_minilm_size_float32_defect_is_caught():
    """A MiniLM-size BertAttention (d = 384, 12 heads, float32, random weights) whose output projection
    is applied transposed (a patched kernel) is rejected; unpatched it conforms. (With tol's default
    safety of 64 on top of the absolute-value sum, 2 of these 3 draws passed.)"""
    import transformers as tf
    import transformers.models.bert.modeling_bert as bert

    torch.manual_seed(4)
    cfg = tf.BertConfig(hidden_size=384, num_attention_heads=12, intermediate_size=64, attn_implementation="eager")
    m = bert.BertAttention(cfg)
    assert check_attention(m, examples=3, max_length=4, hypotheses=False).conforms
    patch = m.output.dense.register_forward_hook(lambda mod, args, out: args[0] @ mod.weight + mod.bias)
    try:
        rep = check_attention(m, examples=3, max_length=4, hypotheses=False)
    finally:
        patch.remove()
    assert not rep.conforms and rep.counterexample.statement == T2_STATEMENT


@pytest.mark.parametrize("family", ["bert", "llama"])
def test_float32_hf_models_are_decided_by_the_float64_shadow(family):
    """A float32 model is copied to float64 (deepcopy + .double()) and that copy decides; Llama's
    float32 softmax stays judged at float32 rounding, so the copy does not turn it into a
    hypothesis failure."""
    from numerics.models.tiny import tiny_model

    rep = check_attention(tiny_model(family).float(), examples=3, hypotheses=False)
    assert rep.verdict == "conforms" and rep.decided_by == "float64 shadow" and rep.shadow == ""
    assert rep.dtype == "float32" and all(r.decided_by == "float64 shadow" for r in rep.results)
