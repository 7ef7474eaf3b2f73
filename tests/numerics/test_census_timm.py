"""The timm census (issue 38, item 5; ``connwalk census --library timm``): the architectures enumerated
from timm (an attention architecture judged, a CNN listed as ``no attention``), an attention module that
runs only on its model's token count or on a grid judged on exactly those tokens, the command's
``--library`` option, and the counts recomputed from the rows."""

from __future__ import annotations

import json

import pytest
import torch

from connwalk import main
from numerics.census.report import CONFORMS, DECLINED, FAILS_, HYP_FAILS, TIMED_OUT, UNDECIDED_
from numerics.census.timm import call_adapter, find_attention, run_timm_census, timm_architectures
from numerics.census.timm_report import (
    NO_ATTENTION,
    TIMM_STATUSES,
    TimmCensusResult,
    TimmRow,
    render_timm_markdown,
    write_timm_census,
)
from numerics.conformance.kit import check_attention


# --------------------------------------------------------------------------- enumeration, end to end
def test_timm_architectures_are_timm_modules_with_their_models():
    archs = dict(timm_architectures())
    assert "test_vit" in archs["vision_transformer"] and "resnet50" in archs["resnet"]
    assert "swin_tiny_patch4_window7_224" in archs["swin_transformer"]


def test_a_vit_is_judged_and_a_cnn_is_listed_without_attention():
    res = run_timm_census(architectures=["vision_transformer", "resnet"], examples=1)
    rows = {(r.family, r.cls): r for r in res.rows}
    vit = rows[("vision_transformer", "Attention")]
    assert vit.status == CONFORMS and vit.variant == "test_vit" and vit.module == "timm.layers.attention", vit
    cnn = rows[("resnet", "")]
    assert cnn.status == NO_ATTENTION and "no softmax attention kernel" in cnn.reason, cnn
    assert len(res.rows) == 2
    assert res.architectures() == {
        "total": 2,
        NO_ATTENTION: 1,
        "with attention": 1,
        "judged": 1,
        "partly judged": 0,
    }


# --------------------------------------------------------------------------- a module as its model calls it
class WindowAttention(torch.nn.Module):
    """Attention with a relative position bias over exactly ``N`` tokens (as a window attention has)."""

    def __init__(self, d: int = 8, heads: int = 2, N: int = 4, grid: bool = False) -> None:
        super().__init__()
        self.h, self.grid = heads, grid
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.bias = torch.nn.Parameter(torch.randn(heads, N, N) * 0.1)

    def forward(self, x, mask=None):
        shape = x.shape
        qkv = self.qkv(x)  # on the grid itself when it is one: (B, H, W, 3C)
        B, d = shape[0], shape[-1]
        n = qkv.numel() // (B * 3 * d)
        q, k, v = qkv.reshape(B, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-1, -2) * (d // self.h) ** -0.5 + self.bias).softmax(-1)
        y = self.proj((a @ v).transpose(1, 2).reshape(B, n, d))
        return y.reshape(shape)


class Block(torch.nn.Module):
    def __init__(self, grid: bool = False) -> None:
        super().__init__()
        self.attn = WindowAttention(grid=grid)
        self.grid = grid

    def forward(self, x):
        return x + self.attn(x.reshape(-1, 2, 2, 8) if self.grid else x.reshape(-1, 4, 8)).reshape(x.shape)


@pytest.mark.parametrize("grid", [False, True])
def test_a_module_that_runs_only_on_its_window_is_judged_on_exactly_its_tokens(grid):
    torch.manual_seed(0)
    model = Block(grid).double().eval()
    found = find_attention(model, torch.randn(3, 4, 8, dtype=torch.float64))
    assert list(found) == ["WindowAttention"]
    mod, args, kwargs = found["WindowAttention"]
    assert mod is model.attn and tuple(args[0].shape) == ((3, 2, 2, 8) if grid else (3, 4, 8))
    ad = call_adapter(mod, args, kwargs, "WindowAttention")
    assert ad.max_length == 4 and ad.layout == ("bhwc" if grid else "tokens")
    rep = check_attention(mod, adapter=ad, examples=2, seed=0, max_length=4, min_length=4)
    assert rep.conforms and {r.draw.n for r in rep.results} == {4}


def test_a_module_that_runs_on_no_drawn_input_says_which_shape_it_was_given():
    from numerics.conformance.torch_capture import TorchCaptureError

    class Odd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            raise RuntimeError("never")

    with pytest.raises(TorchCaptureError) as info:
        call_adapter(Odd(), (torch.zeros(1, 5, 8),), {}, "Odd")
    assert "(1, 5, 8)" in str(info.value) and "RuntimeError: never" in str(info.value)


# --------------------------------------------------------------------------- what the capture reads
class ConvAttention(torch.nn.Module):
    """Attention on a (B, C, H, W) grid with 1×1 convolutions as projections, weighting the values as
    ``V @ Aᵀ`` (tokens on the last axis), its q/k/v from ``F.linear``-free convolutions."""

    def __init__(self, d: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.h = heads
        self.qkv = torch.nn.Conv2d(d, 3 * d, 1)
        self.proj = torch.nn.Conv2d(d, d, 1)

    def forward(self, x):
        B, C, H, W = x.shape
        q, k, v = self.qkv(x).reshape(B, 3, self.h, C // self.h, H * W).unbind(1)  # (B, h, dh, N)
        a = (q.transpose(-1, -2) @ k * (C // self.h) ** -0.5).softmax(-1)  # (B, h, N, N)
        return self.proj((v @ a.transpose(-1, -2)).reshape(B, C, H, W))


class KeywordLinearAttention(torch.nn.Module):
    """Self-attention whose projections are ``F.linear(x, weight=..., bias=...)`` (as BEiT's and EVA's)."""

    def __init__(self, d: int = 8, heads: int = 2, class_token: bool = False) -> None:
        super().__init__()
        self.h, self.cls = heads, class_token
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x):
        B, n, d = x.shape
        qkv = torch.nn.functional.linear(x, weight=self.qkv.weight, bias=self.qkv.bias)
        q, k, v = qkv.reshape(B, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        if self.cls:  # class attention: the first token's query over every token
            q = q[:, :, :1]
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, q.shape[2], d))


def test_one_by_one_convolutions_and_values_weighted_as_v_at_a_transposed_are_read():
    torch.manual_seed(0)
    mod = ConvAttention(d=16).double().eval()
    ad = call_adapter(mod, (torch.randn(1, 16, 2, 2, dtype=torch.float64),), {}, "ConvAttention")
    assert ad.layout == "bchw" and ad.max_length == 4
    rep = check_attention(mod, adapter=ad, examples=2, seed=0, max_length=4, min_length=4)
    assert rep.conforms and rep.results and all(r.t2.status == "holds" for r in rep.results)


@pytest.mark.parametrize("class_token", [False, True])
def test_keyword_linear_projections_and_class_attention_are_read(class_token):
    torch.manual_seed(0)
    mod = KeywordLinearAttention(class_token=class_token).double().eval()
    ad = call_adapter(mod, (torch.randn(1, 5, 8, dtype=torch.float64),), {}, "KeywordLinearAttention")
    assert ad.max_length is None  # any number of tokens
    rep = check_attention(mod, adapter=ad, examples=2, seed=0, max_length=5)
    # class attention: one query over the n drawn tokens, read as cross-attention wherever n > 1
    assert rep.conforms and all(r.cross == (class_token and r.draw.n > 1) for r in rep.results)
    assert any(r.draw.n > 1 for r in rep.results)


class LinearNormAttention(torch.nn.Module):
    """LeViT's projections: a linear and an inference batch norm of its (B·n, c) rows (one affine map)."""

    def __init__(self, d: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.h = heads
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.bn = torch.nn.BatchNorm1d(3 * d)
        self.proj = torch.nn.Linear(d, d)
        with torch.no_grad():  # statistics and affine parameters of a trained norm, not the identity
            for t in (self.bn.weight, self.bn.running_var):
                t.uniform_(0.5, 1.5)
            for t in (self.bn.bias, self.bn.running_mean):
                t.normal_(0.0, 0.3)

    def forward(self, x):
        B, n, d = x.shape
        qkv = self.bn(self.qkv(x).flatten(0, 1)).reshape(B, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(*qkv)
        return self.proj(y.transpose(1, 2).reshape(B, n, d))


def test_a_linear_followed_by_an_inference_batch_norm_is_read_as_one_linear_map():
    torch.manual_seed(0)
    mod = LinearNormAttention().double().eval()
    ad = call_adapter(mod, (torch.randn(1, 3, 8, dtype=torch.float64),), {}, "LinearNormAttention")
    rep = check_attention(mod, adapter=ad, examples=2, seed=0, max_length=3)
    assert rep.conforms and rep.results and all(r.t2.status == "holds" for r in rep.results)


# --------------------------------------------------------------------------- the command
def test_census_library_is_transformers_or_timm(tmp_path, capsys):
    assert main(["census", "--library", "keras", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("connwalk: error: --library: ") and "'keras'" in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_census_library_timm_writes_its_own_files(tmp_path, capsys):
    assert main(["census", "--library", "timm", "--model-types", "resnet", "--out", str(tmp_path), "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CENSUS-timm.md", "census-timm.json"]
    data = json.loads((tmp_path / "census-timm.json").read_text())
    assert [(r["family"], r["status"]) for r in data["rows"]] == [("resnet", NO_ATTENTION)]
    assert "1 timm architectures" in capsys.readouterr().out
    assert main(["census", "--library", "timm", "--model-types", "nope", "--out", str(tmp_path), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("connwalk: error: --model-types: ")


# --------------------------------------------------------------------------- bookkeeping
def _synthetic() -> TimmCensusResult:
    rows = [TimmRow(f"C{i}", f"arch{i}", "m", s, s) for i, s in enumerate(TIMM_STATUSES)]
    rows.append(TimmRow("Other", "arch0", "m", DECLINED, "the kit could not run it: x"))  # arch0: partly judged
    rows.append(TimmRow("Other", "arch1", "m", CONFORMS, "ok"))  # arch1: judged (both rows)
    return TimmCensusResult(rows, "t", "t", 0, 1, "today", 1.0, 1.0)


def test_timm_counts_count_each_row_under_its_own_status_once(tmp_path):
    res = _synthetic()
    want = dict.fromkeys(TIMM_STATUSES, 1)
    want[DECLINED] += 1
    want[CONFORMS] += 1
    assert res.counts() == want
    judged = {CONFORMS, HYP_FAILS, FAILS_, UNDECIDED_}
    by = {}
    for r in res.rows:
        by.setdefault(r.family, []).append(r.status)
    assert res.architectures() == {
        "total": len(TIMM_STATUSES),
        NO_ATTENTION: 1,
        "with attention": len(TIMM_STATUSES) - 1,
        "judged": sum(all(s in judged for s in v) for v in by.values()),  # arch1, arch2, arch3
        "partly judged": 1,  # arch0
    }
    assert res.architectures()["judged"] == 3
    (path,) = [p for p in write_timm_census(res, tmp_path) if p.suffix == ".json"]
    data = json.loads(path.read_text())
    assert data["counts"] == {s: sum(r["status"] == s for r in data["rows"]) for s in TIMM_STATUSES}


def test_the_timm_count_table_labels_each_count_with_its_status():
    res = _synthetic()
    res.rows = [r for r in res.rows if r.cls != "Other"] + [TimmRow("T", "z", "m", TIMED_OUT, "t")]
    text = render_timm_markdown(res)
    for s in TIMM_STATUSES:
        assert f"| {s} | {2 if s == TIMED_OUT else 1} |" in text
