r"""The attention-interface capture observes the kernel a module uses, never substitutes it: defective
kernels, written here from scratch and patched at run time into six transformers families (the family
module's ``eager_attention_forward``), get the verdict T2 gives them on the module path
(:class:`CaptureAdapter` with :func:`check_attention`), through the census (:func:`check_class`,
:func:`run_census`) and through ``connwalk conform`` on a factory; none is declined. Models built the
ordinary way (default ``sdpa``) are judged through the same observation, at their own rounding.

T2: ``y_i = Σ_h Σ_j A^h_ij W_O^h (W_V^h x_j + b_V^h) + b_O`` with ``A^h`` nonnegative and row-stochastic.
The kit judges the module's own output against the walk of the literal ``A`` of what the kernel received
(``softmax(Q Kᵀ·scaling + mask)``), or of the weights the kernel returned when those certify its output
(nonnegative, zero where the received mask masks, the output their average of the received values: the
weights the values were observed to be averaged with, as the torch capture reads them; whether their rows
sum to one is T2's hypothesis). Expected verdicts, each derived from T2:

==============  =============================================================  ===============
kind            the kernel                                                     T2's verdict
==============  =============================================================  ===============
nominal         ``softmax(S + M)·V``, returns its A                             conforms
returned δ      output from ``softmax(S·(1+δ) + M)``, returns ``softmax(S+M)``  fails: the output is the walk of neither the
                (δ = 1e-3, 1e-6)                                                returned nor the literal A (δ = 1e-6: seen by
                                                                                the float64 shadow)
temperature     ``softmax(S/2 + M)`` for output and returned weights             conforms: the output *is* the walk of the
                                                                                row-stochastic A it returns (a walk)
query axis      softmax over queries (columns stochastic), returned              hypothesis fails: the output is the walk of the
                                                                                weights it returns, whose rows do not sum to one
dropout         dropout p=0.5 left on in eval, returned the dropped weights     hypothesis fails: the output is the walk of the
                                                                                dropped weights, whose rows no longer sum to one
tanh            ``tanh(A·V)`` before the output projection                      fails: not linear in A·V
permute         heads rolled by one in the output                               fails: W_O^h meets another head's A^h V^h
value const     ``A·(V + c_h)``, c_h a per-head constant                        fails: = A·V + c_h (rows sum to one), an affine
                                                                                walk, but its constant Σ_h W_O^h c_h is not the
                                                                                c = Σ_h W_O^h b_V^h + b_O of the module's own
                                                                                parameters: the identity with the read factors
                                                                                fails by ‖Σ_h W_O^h c_h‖
causal leak     its own mask, each query seeing one key ahead (off by one),     fails: the returned A weighs keys the received
                returned                                                        mask masks (no certificate); the literal A's
                                                                                walk is not the output
==============  =============================================================  ===============
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
import transformers

from numerics.census.config import build_tiny
from numerics.census.run import check_class, run_census
from numerics.conformance.hf_capture import CaptureAdapter, is_attention_class
from numerics.conformance.kit import check_attention

F64 = torch.float64
transformers.logging.set_verbosity_error()

FAMILIES = ("llama", "mistral", "qwen2", "gpt_neox", "opt", "vit")
CAUSAL = ("llama", "mistral", "qwen2", "gpt_neox", "opt")
EXPECTED = {
    "nominal": "conforms",
    "returned-1e-3": "fails",
    "returned-1e-6": "fails",
    "temperature": "conforms",
    "query-axis": "hypothesis fails",
    "dropout": "hypothesis fails",
    "tanh": "fails",
    "permute": "fails",
    "value-const": "fails",
    "causal-leak": "fails",
}


#: the census's name of a kit verdict where it differs
CENSUS_STATUS = {"hypothesis fails": "identity holds, hypothesis fails"}


def defective_kernel(kind: str):
    """An attention kernel in the interface's signature, written from scratch, with the defect ``kind``."""

    def kernel(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, **kwargs):
        H, Hkv = query.shape[1], key.shape[1]
        k, v = key.repeat_interleave(H // Hkv, dim=1), value.repeat_interleave(H // Hkv, dim=1)
        sc = query.shape[-1] ** -0.5 if scaling is None else scaling
        s = torch.matmul(query, k.transpose(-1, -2)) * sc
        n, m = s.shape[-2:]
        M = torch.zeros_like(s) if attention_mask is None else attention_mask[..., :m].to(s.dtype).expand_as(s)
        nominal = torch.softmax(s + M, dim=-1)
        used = returned = nominal
        if kind.startswith("returned-"):
            used = torch.softmax(s * (1 + float(kind.split("-", 1)[1])) + M, dim=-1)
        elif kind == "temperature":
            used = returned = torch.softmax(s / 2 + M, dim=-1)
        elif kind == "query-axis":
            used = returned = torch.softmax(s + M, dim=-2)
        elif kind == "dropout":
            used = returned = torch.nn.functional.dropout(nominal, p=0.5, training=True)
        elif kind == "causal-leak":
            see = torch.ones(n, m, dtype=torch.bool).tril(1)  # one key into the future
            used = returned = torch.softmax(s.masked_fill(~see, torch.finfo(s.dtype).min), dim=-1)
        if kind == "value-const":
            v = v + torch.arange(1, H + 1, dtype=v.dtype).reshape(1, H, 1, 1)
        out = torch.matmul(used, v)
        if kind == "tanh":
            out = torch.tanh(out)
        elif kind == "permute":
            out = out.roll(1, dims=1)
        return out.transpose(1, 2).contiguous(), returned

    return kernel


def _kinds(fam: str) -> list[str]:
    return [k for k in EXPECTED if k != "causal-leak" or fam in CAUSAL]


def _family_module(model):
    return sys.modules[type(_attention(model)).__module__]


def _attention(model):
    """The first outermost attention-class module of ``model``."""
    for mod in model.modules():
        if is_attention_class(type(mod)):
            return mod
    raise AssertionError(f"no attention module in {type(model).__name__}")


@pytest.mark.parametrize("fam", FAMILIES)
def test_defective_kernels_get_t2s_verdict_on_the_module_path(fam, monkeypatch):
    model = build_tiny(fam, dtype=F64)
    att = _attention(model)
    famod = _family_module(model)
    got = {}
    for kind in _kinds(fam):
        monkeypatch.setattr(famod, "eager_attention_forward", defective_kernel(kind))
        rep = check_attention(att, adapter=CaptureAdapter(model, [att]), examples=4, max_length=6)
        got[kind] = rep.verdict
    monkeypatch.undo()
    unmodified = check_attention(att, adapter=CaptureAdapter(model, [att]), examples=4, max_length=6)
    got["unmodified"] = unmodified.verdict
    want = {k: EXPECTED[k] for k in _kinds(fam)} | {"unmodified": "conforms"}
    assert got == want


def test_a_defect_fails_with_a_counterexample_through_the_whole_model(monkeypatch):
    import transformers.models.mistral.modeling_mistral as mistral

    model = build_tiny("mistral", dtype=F64)
    monkeypatch.setattr(mistral, "eager_attention_forward", defective_kernel("returned-1e-6"))
    rep = check_attention(model, examples=4, max_length=6)
    assert rep.verdict == "fails" and rep.counterexample is not None


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_defective_kernels_get_t2s_verdict_through_the_census(kind, monkeypatch):
    import transformers.models.llama.modeling_llama as llama

    model = build_tiny("llama", dtype=F64)
    monkeypatch.setattr(llama, "eager_attention_forward", defective_kernel(kind))
    row = check_class(model, _attention(model), family="llama", examples=3, seed=0, max_length=6, timeout=120.0)
    assert row.status == CENSUS_STATUS.get(EXPECTED[kind], EXPECTED[kind]), row.reason


def test_defective_kernels_through_run_census(monkeypatch):
    import transformers.models.opt.modeling_opt as opt

    got = {}
    for kind in ("nominal", "returned-1e-3", "temperature", "value-const"):
        monkeypatch.setattr(opt, "eager_attention_forward", defective_kernel(kind))
        res = run_census(model_types=["opt"], classes=["OPTAttention"], examples=3, timeout=120.0)
        got[kind] = [r.status for r in res.rows]
    assert got == {k: [CENSUS_STATUS.get(EXPECTED[k], EXPECTED[k])] for k in got}


FACTORY = """
import torch
from numerics.census.config import build_tiny

def model():
    return build_tiny("qwen2", dtype=torch.float32)
"""


@pytest.mark.parametrize("kind", ["nominal", "returned-1e-6", "temperature", "query-axis", "tanh", "causal-leak"])
def test_defective_kernels_get_t2s_verdict_through_the_command(kind, tmp_path, monkeypatch, capsys):
    import transformers.models.qwen2.modeling_qwen2 as qwen2

    from connwalk import main

    monkeypatch.setattr(qwen2, "eager_attention_forward", defective_kernel(kind))
    name = f"observe_factory_{kind.replace('-', '_').replace('.', '_')}"
    (tmp_path / f"{name}.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    js = tmp_path / "r.json"
    try:
        rc = main(["conform", f"{name}:model", "--examples", "3", "--json", str(js)])
    finally:
        sys.modules.pop(name, None)
    err = capsys.readouterr().err
    assert json.loads(js.read_text())["verdict"] == EXPECTED[kind], err
    assert rc == (0 if EXPECTED[kind] == "conforms" else 1)  # a hypothesis failing is a violation too


def _ordinary(name: str):
    torch.manual_seed(0)
    if name in ("qwen2", "mistral"):
        config, model = {"qwen2": (transformers.Qwen2Config, transformers.Qwen2Model)}.get(
            name, (transformers.MistralConfig, transformers.MistralModel)
        )
        cfg = config(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=64,
            vocab_size=97,
        )
        return model(cfg)
    if name == "opt":
        cfg = transformers.OPTConfig(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=4,
            ffn_dim=64,
            vocab_size=97,
            word_embed_proj_dim=32,
        )
        return transformers.OPTModel(cfg)
    if name == "distilbert":
        cfg = transformers.DistilBertConfig(dim=32, n_layers=1, n_heads=4, hidden_dim=64, vocab_size=97)
        return transformers.DistilBertModel(cfg)
    cfg = transformers.RobertaConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, vocab_size=97
    )
    return transformers.RobertaModel(cfg)


@pytest.mark.parametrize("name", ["qwen2", "mistral", "opt", "distilbert", "roberta"])
def test_a_model_built_the_ordinary_way_conforms_at_its_rounding(name):
    model = _ordinary(name).eval()
    assert model.config._attn_implementation == "sdpa"  # the default: the kit observes torch's sdpa kernel
    rep = check_attention(model, examples=4, max_length=6, shadow=False)
    assert rep.verdict == "conforms" and rep.dtype == "float32"
    res = [r.t2.residual for r in rep.results if r.draw.n > 1]
    # the float32 module's own rounding: not zero (the judged output is the module's, not the kit's A·V)
    assert res and all(r > 0 for r in res)
    assert all(r.t2.residual <= r.t2.bound for r in rep.results)
