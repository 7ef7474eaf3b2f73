"""Census classes the attention-interface capture cannot read are judged through the torch capture inside
their model (numerics.census.judge, numerics.conformance.hf_torch): a class computing its own softmax and
matmul conforms or fails on its own output; a gate between the attention and the output projection is a
verdict (fails, the structure named first), not a decline; one census row is reproduced alone by
``connwalk conform census:TYPE:Class``."""

from __future__ import annotations

import pytest
import torch

from connwalk import main
from numerics.census.judge import census_instance
from numerics.census.report import CONFORMS, DECLINED, FAILS_
from numerics.census.run import check_class, run_census
from numerics.conformance.hf_capture import CaptureAdapter, CaptureError
from numerics.conformance.hf_torch import ModelTorchAdapter
from numerics.conformance.protocol import Draw
from numerics.errors import ModelError


def _row(model_type: str, cls: str):
    model, module = census_instance(model_type, cls)
    return check_class(model, module, family=model_type, examples=2, seed=0, max_length=6, timeout=60)


def test_a_class_computing_its_own_softmax_is_judged_on_its_own_output():
    # RoFormer's self-attention never calls the attention interface (its own matmul / softmax / matmul):
    # the interface capture declined it ("computes attention its own way")
    row = _row("roformer", "RoFormerSelfAttention")
    assert row.status == CONFORMS, row.reason
    assert "T2 holds" in row.reason


def test_a_gate_before_the_output_projection_fails_with_the_structure_named():
    # AFMoE gates the attention output (sigmoid(gate(x)) ⊙ attn) before o_proj: T2's identity fails on the
    # module's own output; the interface capture declined it ("reaches no linear output projection unchanged")
    row = _row("afmoe", "AfmoeAttention")
    assert row.status == FAILS_, row.reason
    assert row.reason.startswith("a gate, norm or nonlinearity between the attention and the output projection")
    assert "counterexample" in row.reason and "violates T2" in row.reason


def test_the_torch_capture_reads_a_module_returning_the_attention_output_itself():
    # BERT-style "self-attention" classes return A·V (the output projection is a sibling module): W_O = I in
    # the natural head layout, the output the module's own
    model, module = census_instance("roformer", "RoFormerSelfAttention")
    ad = ModelTorchAdapter(CaptureAdapter(model, [module]), module)
    (ex,) = ad.extract(Draw(batch=2, n=5, m=5, pad=(0, 0), causal=False, seed=3, scale=1.0))
    H, d, dh = ex.W_O.shape
    assert H * dh == d and ex.b_O is None
    assert torch.equal(ex.W_O.permute(1, 0, 2).reshape(d, H * dh), torch.eye(d, dtype=ex.W_O.dtype))
    assert ex.output.shape == (2, 5, d) and ex.A.shape[:3] == (2, H, 5)


def test_model_torch_adapter_refuses_what_it_cannot_drive():
    model, module = census_instance("roformer", "RoFormerSelfAttention")
    with pytest.raises(CaptureError, match="hf") as e:
        ModelTorchAdapter(object(), module)  # type: ignore[arg-type]
    assert e.value.argument == "hf"
    with pytest.raises(CaptureError) as e:
        ModelTorchAdapter(CaptureAdapter(model, [module]), torch.nn.Linear(2, 2))
    assert e.value.argument == "target"


def test_census_instance_names_what_it_cannot_find():
    with pytest.raises(ModelError) as e:
        census_instance("llama", "NoSuchAttention")
    assert e.value.argument == "cls" and "NoSuchAttention" in str(e.value)
    assert "add_cross_attention" not in str(e.value)  # a family without cross-attention is not the reason


EXIT = {CONFORMS: 0, FAILS_: 1, "identity holds, hypothesis fails": 1, "undecided": 3}


@pytest.mark.parametrize(
    "model_type, cls",
    [
        ("llama", "LlamaAttention"),  # through the interface: conforms
        ("roformer", "RoFormerSelfAttention"),  # its own softmax, through the torch capture: conforms
        ("afmoe", "AfmoeAttention"),  # a gate: fails
    ],
)
def test_a_census_row_is_reproduced_alone_by_conform(model_type, cls, capsys):
    result = run_census(model_types=[model_type], classes=[cls], examples=2, seed=0, max_length=6, jobs=1)
    (row,) = result.rows
    assert row.status != DECLINED
    code = main(["conform", f"census:{model_type}:{cls}", "--examples", "2", "--max-length", "6", "--no-progress"])
    assert code == EXIT[row.status]
    out = capsys.readouterr().out
    assert cls in out


def test_census_target_syntax_and_unknowns_exit_2(capsys):
    assert main(["conform", "census:llama", "--no-progress"]) == 2
    assert "census:MODEL_TYPE:Class" in capsys.readouterr().err
    assert main(["conform", "census:nosuch:X", "--no-progress"]) == 2
    assert "nosuch" in capsys.readouterr().err


@pytest.mark.parametrize(
    "model_type, cls",
    [
        # MobileViT folds the patch pixels into the batch: (B·P, H, n, n) attention, its own batch
        ("mobilevit", "MobileViTSelfAttention"),
        # VitDet projects a grid of tokens (B, h, w, 3C) with one fused qkv linear
        ("vitdet", "VitDetAttention"),
    ],
)
def test_the_torch_capture_reads_folded_batches_and_token_grids(model_type, cls):
    # read, and T2's identity holds on every draw (conforms, or undecided only for want of a draw that
    # determines A: the census's tiny configuration fixes the number of patches); before, declined
    row = _row(model_type, cls)
    assert row.status == CONFORMS or (row.status == "undecided" and "T2's identity holds" in row.reason), row.reason
    assert row.t2_ratio <= 1.0


def test_values_rescaled_by_a_constant_are_a_walk_and_a_norm_on_them_fails():
    # MiMo-V2-Flash multiplies v_proj's output by a constant v_scale: a scale folded into W_V, a walk
    row = _row("mimo_v2_flash", "MiMoV2FlashAttention")
    assert row.status == CONFORMS, row.reason
    # Gemma-4 normalises each value head (an RMSNorm on v): the values vary per token, no constant W_V
    row = _row("gemma4_unified", "Gemma4UnifiedTextAttention")
    assert row.status == FAILS_, row.reason
    assert row.reason.startswith("a norm on the values") and "violates T2" in row.reason


def test_scaled_blocks_finds_per_token_rescalings_of_head_blocks():
    from numerics.conformance.torch_adapter import scaled_blocks

    g = torch.Generator().manual_seed(0)
    Y = torch.randn(12, 3 * 4, generator=g, dtype=torch.float64)  # three head blocks of 4 columns
    gain = torch.rand(4, generator=g, dtype=torch.float64) + 0.5
    # a constant scale of blocks 2 and 0, in that order
    V = torch.cat([0.25 * Y[:, 8:12], 0.25 * Y[:, 0:4]], 1) * gain.repeat(2)
    idx, s, gg = scaled_blocks(Y, V, 2, 4, torch.float64)
    assert idx.tolist() == [8, 9, 10, 11, 0, 1, 2, 3]
    assert torch.allclose(s[:, :1] * gg[None, :4], torch.full((12, 4), 0.25, dtype=torch.float64) * gain, rtol=1e-12)
    assert torch.allclose(s, s[0].expand_as(s), rtol=1e-12)  # constant per head
    # an RMS norm per token and head: the factor varies per token
    blk = Y[:, 4:8]
    N = blk / blk.pow(2).mean(1, keepdim=True).sqrt()
    idx, s, _ = scaled_blocks(Y, N, 1, 4, torch.float64)
    assert idx.tolist() == [4, 5, 6, 7] and float(s[:, 0].std()) > 1e-3
    # a mixing of the columns is no rescaling
    M = Y[:, 0:4] @ torch.randn(4, 4, generator=g, dtype=torch.float64)
    assert scaled_blocks(Y, M, 1, 4, torch.float64) is None


def test_every_row_is_judged_a_harness_gap_or_outside_the_class_exactly_once():
    from numerics.census.report import HYP_FAILS, TIMED_OUT, UNDECIDED_, render_markdown, split_rows
    from numerics.census.run import CensusResult, CensusRow

    rows = [
        CensusRow("A", "f", "m", CONFORMS, "T2 holds"),
        CensusRow("B", "f", "m", HYP_FAILS, "sinks"),
        CensusRow("C", "f", "m", FAILS_, "a gate …"),
        CensusRow("D", "f", "m", UNDECIDED_, "no identifying draw"),
        CensusRow("E", "f", "m", TIMED_OUT, "out of time"),
        CensusRow("F", "f", "m", DECLINED, "the module does not import (ModuleNotFoundError: torchaudio)"),
        CensusRow("G", "f", "m", DECLINED, "XModel did not run on the drawn inputs (ValueError: …)"),
        CensusRow("H", "f", "m", DECLINED, "not instantiated by a tiny base model of its family (…)"),
        CensusRow(
            "I",
            "f",
            "m",
            DECLINED,
            "not instantiated by a tiny base model of its family (x: the shrunk configuration does not build "
            "(ImportError: XModel requires the natten library but it was not found in your environment.",
        ),
    ]
    judged, gaps, outside = split_rows(rows)
    assert [r.cls for r in judged] == ["A", "B", "C", "D"]
    assert [r.cls for r in gaps] == ["E", "G", "H"]
    assert [r.cls for r in outside] == ["F", "I"]
    res = CensusResult(rows, "5.24.0", "2.13.0", 0, 2, "today", 1.0, 1.0, 1)
    md = render_markdown(res)
    assert (
        "**Judged: 4 of 9 classes (44 %)**" in md
        and "3 are the census harness's gaps" in md
        and "and 2 cannot be built" in md
    )
    assert "## Not judged: the harness's gaps" in md and "- `G` (f), declined: XModel did not run" in md
    assert "## Not judged: outside the class" in md and "- `F` (f): the module does not import" in md


def test_a_convolution_beside_the_attention_fails_with_the_structure_named():
    # ConvBERT concatenates a span-based convolution's output with the attention output before the output
    # projection: the projection's input holds the attention's columns among others, which are no walk
    from numerics.conformance.torch_adapter import BESIDE

    row = _row("convbert", "ConvBertAttention")
    assert row.status == FAILS_, row.reason
    assert row.reason.startswith(BESIDE) and "violates T2" in row.reason


class _Routed(torch.nn.Module):
    """A router's softmax mixed into the tokens before an ordinary attention (a MoE layer before it in a model):
    the values then derive from that older softmax too; the attention's probabilities are the newer one's."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.router = torch.nn.Linear(d, 2)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.heads, self.embed_dim = heads, d

    def forward(self, x):
        g = torch.softmax(self.router(x), dim=-1)
        x = x * g[..., :1] + x * g[..., 1:] * 0.5
        B, n, d = x.shape
        q, k, v = (f(x).reshape(B, n, self.heads, -1).transpose(1, 2) for f in (self.q, self.k, self.v))
        p = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        return self.o((p @ v).transpose(1, 2).reshape(B, n, d))


def test_values_carrying_an_older_softmax_are_still_values():
    from numerics.conformance.kit import check_attention

    torch.manual_seed(0)
    rep = check_attention(_Routed().double(), examples=3, seed=0, max_length=6)
    assert rep.verdict == "conforms", rep.table()
