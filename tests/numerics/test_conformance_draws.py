"""What the kit draws and what it judges (issue 37 item 6): a padded query is no walk row (a correct
sliding-window module with key padding conforms), ``min_length`` bounds the drawn lengths from below,
the run repeats a shape so that attention kept from the previous call of that shape is caught, and a
defect of the module's own kernel observed while it runs is a verdict — through ``connwalk conform``
exit 1, not 2."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from numerics.conformance.kit import SHADOW, Draw, ExtractionError, KernelDefect, check_attention, check_draw
from numerics.errors import ParameterError
from tests.numerics.test_conformance_variants import Attn


# --------------------------------------------------------------------------- a padded query is no walk row
class PaddedWindow(Attn):
    """A correct sliding-window (causal, window 3) module that takes key padding. A padded query whose
    window holds only padded keys has no key to attend to: its row is zero (as kernels that zero a
    fully masked row give) and its output the output bias alone. Such a row is no token's."""

    def __init__(self, **kw) -> None:
        super().__init__(window=3, **kw)

    def _softmax(self, S, dim=-1):
        return torch.softmax(S, dim).nan_to_num(0.0)


def test_a_padded_query_is_not_judged_as_a_walk_row():
    m = PaddedWindow()
    d = Draw(batch=1, n=6, m=6, pad=(4,), causal=False, seed=3, scale=1.0)  # queries 4, 5 see padded keys only
    with torch.no_grad():
        _, A = m(d.randn(1, 6, m.embed_dim, dtype=torch.float32), d.key_padding_mask())
    assert float(A[0, :, 5].abs().sum()) == 0.0  # the padded query's row is zero
    (r,) = check_draw(m, d)
    assert r.hypotheses["row-stochastic"].status == "holds", r.hypotheses["row-stochastic"]
    assert r.hypotheses["nonnegative"].status == "holds" and r.t2.status == "holds", r.t2
    rep = check_attention(PaddedWindow(), examples=12, hypotheses=False)
    assert any(sum(x.draw.pad) >= 3 for x in rep.results)  # padded windows were drawn
    assert rep.verdict == "conforms", rep.table()


def test_a_real_querys_row_is_still_judged():
    """Excluding padded queries leaves every real query judged: a sink on the real tokens still fails."""
    rep = check_attention(Attn(sink="learned"), examples=6, hypotheses=False)
    assert rep.verdict == "hypothesis fails" and rep.hypothesis_failures == ["row-stochastic"]


# --------------------------------------------------------------------------- min_length
class NeedsThree(Attn):
    """Raises on fewer than three tokens (a module that needs n ≥ k)."""

    def connwalk_attention(self, X, key_padding_mask=None):
        if X.shape[1] < 3:
            raise ValueError("needs at least 3 tokens")
        return super().connwalk_attention(X, key_padding_mask)


def test_min_length_bounds_the_drawn_lengths_from_below():
    rep = check_attention(NeedsThree(), examples=8, min_length=3, hypotheses=False)
    assert rep.verdict == "conforms", rep.table()
    assert all(r.draw.n >= 3 for r in rep.results) and any(r.draw.n == 3 for r in rep.results)
    with pytest.raises(ExtractionError, match="needs at least 3 tokens"):  # the default draws n = 1 too
        check_attention(NeedsThree(), examples=8, hypotheses=False)


@pytest.mark.parametrize("value", [0, -1, 2.5, True, 9])
def test_a_bad_min_length_is_named(value):
    with pytest.raises(ParameterError) as err:
        check_attention(Attn(), examples=2, min_length=value, max_length=8)
    assert err.value.argument == "min_length"


# --------------------------------------------------------------------------- stale attention of the same shape
class StaleByShape(Attn):
    """Reports the attention of the first call of each input shape on every later call of that shape
    (while its output uses this call's): stale, and of the right shape. Its softmax is written out
    (``exp`` / ``sum``), so the torch capture sees no attention kernel in its forward: its ``A`` is
    taken as reported (``trusted``), and only the repeated shape can catch it (where a kernel is seen,
    the kit compares the reported ``A`` with it: ``test_conformance_observed``)."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict = {}

    def _softmax(self, S, dim=-1):
        e = (S - S.amax(dim, keepdim=True)).exp()
        return e / e.sum(dim, keepdim=True)

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        key = (tuple(X.shape), None if key_padding_mask is None else tuple(key_padding_mask.reshape(-1).tolist()))
        ex.A = self.kept.setdefault(key, ex.A)
        return ex


def test_stale_attention_is_caught_when_the_shape_repeats():
    rep = check_attention(StaleByShape(), examples=6, seed=0, hypotheses=False)
    assert rep.verdict == "fails", rep.table()
    shapes = [(r.draw.batch, r.draw.n, r.draw.m) for r in rep.results]
    assert len(shapes) == 6 + 1 and shapes[-1] == shapes[-2]  # the repeated shape, right after its first
    assert rep.results[-1].draw.seed != rep.results[-2].draw.seed
    assert rep.results[-1].t2.status == "fails" and "previous call's" in rep.results[-1].t2.detail
    assert all(r.trusted == ("A",) for r in rep.results)  # no kernel observed: A as reported, and said


# --------------------------------------------------------------------------- a defective kernel is a verdict
class ObservedDefect(Attn):
    """An adapter-side observation of the module's own kernel: it raises :class:`KernelDefect`."""

    def connwalk_attention(self, X, key_padding_mask=None):
        raise KernelDefect("the kernel's output is not the walk of its reported A", residual=1.0, bound=1e-6)


def test_a_kernel_defect_is_a_failure_with_a_counterexample():
    rep = check_attention(ObservedDefect(), examples=3, hypotheses=False)
    assert rep.verdict == "fails" and rep.counterexample is not None
    assert rep.counterexample.verdict.residual > rep.counterexample.verdict.bound
    assert "not the walk of its reported A" in rep.table()


class DefectSeenInFloat64(Attn):
    """Its kernel's defect is observed only at float64 precision (in the float64 copy)."""

    def connwalk_attention(self, X, key_padding_mask=None):
        if X.dtype == torch.float64:
            raise KernelDefect("a score scale off by 1e-6", residual=1e-9, bound=1e-12)
        return super().connwalk_attention(X, key_padding_mask)


def test_a_kernel_defect_seen_by_the_shadow_only_fails_decided_by_it():
    rep = check_attention(DefectSeenInFloat64(), examples=3, hypotheses=False)
    assert rep.verdict == "fails" and rep.decided_by == SHADOW, rep.table()
    assert rep.shadow == ""  # the shadow was not dropped: it decided


QWEN = """
import torch
from transformers import Qwen2Config, Qwen2Model

def model():
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    cfg._attn_implementation = "eager"
    return Qwen2Model(cfg).eval()
"""


def test_a_defective_family_kernel_exits_1_through_the_command(tmp_path, monkeypatch, capsys):
    """Qwen2's own eager kernel patched at run time to use scores·1.5 while it returns the nominal
    weights: the command's verdict is *fails* (exit 1), not bad input (exit 2)."""
    import transformers.models.qwen2.modeling_qwen2 as qwen2

    from connwalk import main

    own = qwen2.eager_attention_forward

    def defective(module, query, key, value, attention_mask, scaling, dropout=0.0, **kw):
        out, _ = own(module, query, key, value, attention_mask, scaling * 1.5, dropout, **kw)
        _, weights = own(module, query, key, value, attention_mask, scaling, dropout, **kw)
        return out, weights

    monkeypatch.setattr(qwen2, "eager_attention_forward", defective)
    (tmp_path / "qwen_defect.py").write_text(QWEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("qwen_defect", None)
    js = tmp_path / "r.json"
    try:
        rc = main(["conform", "qwen_defect:model", "--examples", "2", "--no-hypotheses", "--json", str(js)])
    finally:
        sys.modules.pop("qwen_defect", None)
    captured = capsys.readouterr()
    assert rc == 1, captured.err
    assert json.loads(js.read_text())["verdict"] == "fails" and "T2 FAILS" in captured.out


def test_min_length_through_the_command(tmp_path, monkeypatch, capsys):
    from connwalk import main

    (tmp_path / "needs_three.py").write_text(
        "from tests.numerics.test_conformance_draws import NeedsThree\n\ndef build():\n    return NeedsThree()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("needs_three", None)
    js = tmp_path / "r.json"
    try:
        assert main(["conform", "needs_three:build", "--examples", "3", "--min-length", "3", "--json", str(js)]) == 0
        assert all(int(d["input"].split("n=")[1].split()[0]) >= 3 for d in json.loads(js.read_text())["draws"])
        capsys.readouterr()
        for bad in (["--min-length", "0"], ["--min-length", "9", "--max-length", "8"]):
            assert main(["conform", "needs_three:build", *bad]) == 2
            err = capsys.readouterr().err
            assert "--min-length" in err and len(err.strip().splitlines()) == 1, err
    finally:
        sys.modules.pop("needs_three", None)
