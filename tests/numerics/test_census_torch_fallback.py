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
    row = _row(model_type, cls)
    assert row.status == CONFORMS, row.reason
