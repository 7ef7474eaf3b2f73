"""Nothing trusted that can be observed (issue 37 item 3), and the causal-only declaration.

Where an adapter *reports* the module's output and attention (a ``connwalk_attention`` method, or an
``Adapter`` of the user's own), the kit runs the module's own forward on the same drawn tokens under the
torch capture and compares: a reported output that is not the module's own, or a reported ``A`` that is
not its kernel's (heads last, a null key's column left in, another attention), is an
``AdapterMismatchError`` naming the field — never a verdict on the module — and the output judged is the
module's own. What cannot be observed is recorded per row as ``trusted`` (table and JSON). A module that
runs causal only declares it (``connwalk_causal = True`` / ``causal=True`` / ``--causal``): every draw
is causal."""

from __future__ import annotations

import json
import math
import sys

import pytest
import torch

from numerics.conformance.kit import Adapter, Draw, Extraction, ExtractionError, check_attention, check_draw
from numerics.errors import AdapterMismatchError, ParameterError
from tests.numerics.test_conformance import LinearAttention, MeanAttention
from tests.numerics.test_conformance_variants import Attn, Unmasked

F32 = torch.float32


# --------------------------------------------------------------------------- post-softmax talking heads
class TalkingHeads(torch.nn.Module):
    """Post-softmax talking heads (Shazeer et al., 2020): the heads' probabilities are mixed by a learned
    ``H × H`` matrix before they weight the values. ``report``: what its ``connwalk_attention`` says —
    ``"walk"`` the walk of the softmax it would like (instead of its own output: the lie), ``"premix"``
    its own output with the softmax before the mixing, ``"used"`` its own output with the probabilities
    it used (honest: they are not stochastic, so a T2 hypothesis fails)."""

    def __init__(self, report: str = "walk", d: int = 16, heads: int = 4) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.embed_dim, self.H, self.dh, self.report = d, heads, d // heads, report
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, dtype=F32) for _ in range(4))
        self.mix = torch.nn.Parameter(torch.eye(heads, dtype=F32) + 0.5 * torch.randn(heads, heads, generator=g))
        with torch.no_grad():
            for lin in (self.q, self.k, self.v, self.o):
                for p in lin.parameters():
                    p.copy_(0.3 * torch.randn(p.shape, generator=g))

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        B, n, _ = t.shape
        return t.view(B, n, self.H, self.dh).transpose(1, 2)

    def _softmax(self, X, key_padding_mask):
        S = self._split(self.q(X)) @ self._split(self.k(X)).transpose(-1, -2) / math.sqrt(self.dh)
        if key_padding_mask is not None:
            S = S.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        return torch.softmax(S, -1)

    def _out(self, P, X):
        B, n, d = X.shape
        return self.o((P @ self._split(self.v(X))).transpose(1, 2).reshape(B, n, d))

    def forward(self, X, key_padding_mask=None):
        P = torch.einsum("gh,bhij->bgij", self.mix, self._softmax(X, key_padding_mask))
        return self._out(P, X)

    def connwalk_attention(self, X, key_padding_mask=None):
        A = self._softmax(X, key_padding_mask)
        if self.report == "walk":
            Y = self._out(A, X)  # the walk of the A it would like, never its own output
        else:
            Y = self(X, key_padding_mask)
        if self.report == "used":
            A = torch.einsum("gh,bhij->bgij", self.mix, A)
        d, H, dh = self.embed_dim, self.H, self.dh
        return Extraction(
            output=Y,
            A=A,
            W_O=self.o.weight.detach().view(d, H, dh).permute(1, 0, 2),
            W_V=self.v.weight.detach().view(H, dh, d),
            values=X,
            b_V=self.v.bias.detach().view(H, dh),
            b_O=self.o.bias.detach(),
        )


def test_a_reported_walk_instead_of_the_modules_output_is_an_adapter_error():
    """On today's main this module *conforms*: the kit judged the output the adapter reported."""
    with pytest.raises(AdapterMismatchError) as ei:
        check_attention(TalkingHeads("walk"), examples=6, hypotheses=False)
    assert ei.value.argument == "output"
    assert "not the module's own" in str(ei.value) and "(B, n, d_out)" in str(ei.value)


def test_a_reported_attention_the_module_did_not_use_is_an_adapter_error():
    """Its own output, with the softmax before the mixing as ``A``: the module's own output is the walk of
    the probabilities its kernel used, not of the reported ones."""
    with pytest.raises(AdapterMismatchError) as ei:
        check_attention(TalkingHeads("premix"), examples=6, hypotheses=False)
    assert ei.value.argument == "A" and "(B, H, n, m)" in str(ei.value)


def test_talking_heads_reported_honestly_is_judged_not_an_adapter_error():
    rep = check_attention(TalkingHeads("used"), examples=6, hypotheses=False)
    assert rep.verdict == "hypothesis fails", rep.table()
    assert all(r.t2.status == "holds" and r.trusted == () for r in rep.results)


class NaNReported(Attn):
    """Reports NaN where its own (finite) output is: the NaN is the adapter's, not the module's."""

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        ex.output = ex.output * float("nan")
        return ex


def test_a_nan_only_the_adapter_reports_is_an_adapter_error():
    """On today's main: *fails* (the module blamed for its adapter's NaN)."""
    with pytest.raises(AdapterMismatchError) as ei:
        check_attention(NaNReported(), examples=3, hypotheses=False)
    assert ei.value.argument == "output" and "NaN" in str(ei.value)


# --------------------------------------------------------------------------- the layout of A
class HeadsLast(Attn):
    """Reports its (correct) attention laid out ``(B, n, m, H)``."""

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        ex.A = ex.A.permute(0, 2, 3, 1).contiguous()
        return ex


class NullColumnLeft(Attn):
    """A null key (a zero key and value) whose column it leaves in the reported ``A``."""

    def __init__(self) -> None:
        super().__init__(sink="null")

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        S = self._scores(X, key_padding_mask)
        ex.A = torch.softmax(torch.cat([S, torch.zeros(*S.shape[:-1], 1)], -1), -1)
        return ex


def test_an_attention_laid_out_heads_last_is_an_adapter_error_naming_the_layout():
    """On today's main: "fails … not the attention of this call (kept from another call?)"."""
    with pytest.raises(AdapterMismatchError) as ei:
        check_attention(HeadsLast(), examples=4, hypotheses=False)
    assert ei.value.argument == "A"
    assert "(B, n, m, H) (heads last)" in str(ei.value) and "(B, H, n, m)" in str(ei.value)
    # a draw with n = H, where the shape alone cannot tell: the values do
    d = Draw(batch=1, n=4, m=4, pad=(0,), causal=False, seed=5, scale=1.0)
    with pytest.raises(AdapterMismatchError, match="heads last"):
        check_draw(HeadsLast(), d)


def test_a_null_keys_column_left_in_a_is_an_adapter_error():
    with pytest.raises(AdapterMismatchError) as ei:
        check_attention(NullColumnLeft(), examples=4, hypotheses=False)
    assert ei.value.argument == "A" and "key columns" in str(ei.value) and "null" in str(ei.value)


class KeptA(Attn):
    """Its ``connwalk_attention`` reports the first call's attention of each input shape again (the
    module's softmax is observed: the kit compares)."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict = {}

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        mask = None if key_padding_mask is None else tuple(key_padding_mask.reshape(-1).tolist())
        ex.A = self.kept.setdefault((tuple(X.shape), mask), ex.A)
        return ex


def test_an_attention_kept_from_another_call_is_an_adapter_error_where_the_kernel_is_seen():
    """On today's main: *fails*, found only on the repeated shape."""
    with pytest.raises(AdapterMismatchError) as ei:
        check_attention(KeptA(), examples=6, seed=0, hypotheses=False)
    assert ei.value.argument == "A" and "not the attention the module's kernel computed" in str(ei.value)


# --------------------------------------------------------------------------- honest modules and adapters
def test_an_honest_protocol_module_still_conforms_observed():
    rep = check_attention(Attn(), examples=6, hypotheses=False)
    assert rep.verdict == "conforms" and rep.shadow == "", rep.table()
    assert rep.trusted == "" and all(r.trusted == () and r.trusted_why == "" for r in rep.results)
    assert all(d["trusted"] == [] for d in rep.as_dict()["draws"]) and rep.as_dict()["trusted"] == ""


class OwnAdapter(Adapter):
    """A user's adapter: runs ``module.connwalk_attention`` on the kit's drawn tokens; ``run_module=False``
    reports without running the module (its ``connwalk_attention`` must then not call the forward)."""

    takes_mask = True

    def __init__(self, module, name="own adapter") -> None:
        self.module, self.name = module, name
        self.d_model, self.dtype = module.embed_dim, module.q.weight.dtype

    def extract(self, draw):
        X = draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype)
        kpm = draw.key_padding_mask()
        with torch.no_grad():
            ex = self.module.connwalk_attention(X, kpm)
        ex.key_mask = None if kpm is None else ~kpm
        return [ex]


def test_an_honest_user_adapter_conforms_and_a_lying_one_is_an_adapter_error():
    m = Attn()
    rep = check_attention(m, adapter=OwnAdapter(m), examples=6, hypotheses=False)
    assert rep.verdict == "conforms" and rep.shadow == "" and rep.trusted == "", rep.table()
    th = TalkingHeads("walk")
    with pytest.raises(AdapterMismatchError) as ei:  # on today's main: conforms
        check_attention(th, adapter=OwnAdapter(th), examples=6, hypotheses=False)
    assert ei.value.argument == "output"


# --------------------------------------------------------------------------- what is trusted, said
class OtherTokens(OwnAdapter):
    """Runs the protocol on tokens of its own (not the kit's draw) without calling the module's forward."""

    def extract(self, draw):
        X = 2 * draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype)
        return [MeanAttention().connwalk_attention(X)]


def test_what_cannot_be_observed_is_reported_as_trusted(tmp_path):
    rep = check_attention(LinearAttention(), examples=4, hypotheses=False)  # no softmax kernel to observe
    assert rep.verdict == "conforms", rep.table()
    assert all(r.trusted == ("A",) and "no attention kernel" in r.trusted_why for r in rep.results)
    assert "trusted: A as reported on" in rep.table()
    assert [line.split()[-1] for line in rep.table().splitlines()[2:]] == ["A"] * len(rep.results)  # its column
    data = json.loads(json.dumps(rep.as_dict()))
    assert all(d["trusted"] == ["A"] for d in data["draws"]) and data["trusted"].startswith("A as reported")
    rep = check_attention(MeanAttention(), examples=3, hypotheses=False)  # no forward to run
    assert all(r.trusted == ("output", "A") and "forward" in r.trusted_why for r in rep.results)
    assert "output and A as reported" in rep.table()
    m = Attn()
    rep = check_attention(m, adapter=OtherTokens(m), examples=3, hypotheses=False)
    assert all(r.trusted == ("output", "A") and "not the kit's drawn tokens" in r.trusted_why for r in rep.results)


# --------------------------------------------------------------------------- causal-only modules
class CausalOnly(Unmasked):
    """Causal attention that runs causal only, and says so."""

    connwalk_causal = True

    def __init__(self) -> None:
        super().__init__(causal=True)


class CausalOnlyAdapter(OwnAdapter):
    """A user's adapter that takes the draw's causal flag and refuses to run without it."""

    takes_mask, takes_causal = False, True

    def extract(self, draw):
        if not draw.causal:
            raise ValueError("this module supports causal masks only")
        X = draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype)
        with torch.no_grad():
            return [self.module.connwalk_attention(X)]


def test_a_causal_only_module_declares_it_and_every_draw_is_causal():
    rep = check_attention(CausalOnly(), examples=6, hypotheses=False)
    assert rep.verdict == "conforms", rep.table()
    assert all(r.draw.causal for r in rep.results) and " causal" in rep.table()
    rep = check_attention(Unmasked(causal=True), examples=6, hypotheses=False, causal=True)
    assert rep.verdict == "conforms" and all(r.draw.causal for r in rep.results), rep.table()
    m = Unmasked(causal=True)
    rep = check_attention(m, adapter=CausalOnlyAdapter(m), examples=6, hypotheses=False, causal=True)
    assert rep.verdict == "conforms" and all(r.draw.causal for r in rep.results), rep.table()
    with pytest.raises(ExtractionError, match="causal masks only"):  # undeclared: non-causal draws too
        check_attention(m, adapter=CausalOnlyAdapter(m), examples=6, hypotheses=False)


def test_a_counterexample_of_a_check_declared_causal_replays_causal():
    m = Unmasked(causal=True, defect="transpose_out")
    rep = check_attention(m, examples=4, hypotheses=False, causal=True)
    cx = rep.counterexample
    assert rep.verdict == "fails" and cx is not None and cx.draw.causal and "causal=True)" in cx.replay()
    (r,) = check_draw(m, cx.draw, causal=True)  # the replay runs: the draw is the module's input
    assert r.t2.status == "fails"


@pytest.mark.parametrize("value", ["yes", 1, 0.0])
def test_a_bad_causal_is_named(value):
    with pytest.raises(ParameterError) as ei:
        check_attention(Attn(), examples=2, causal=value)
    assert ei.value.argument == "causal"


def test_a_causal_only_module_refuses_non_causal_draws():
    with pytest.raises(ParameterError) as ei:
        check_attention(CausalOnly(), examples=2, causal=False)
    assert ei.value.argument == "causal" and "causal-only" in str(ei.value)
    with pytest.raises(ParameterError) as ei:
        check_draw(CausalOnly(), Draw(batch=1, n=3, m=3, pad=(0,), causal=False, seed=0, scale=1.0))
    assert ei.value.argument == "draw.causal"

    class Unsure(CausalOnly):
        connwalk_causal = "yes"  # type: ignore[assignment]

    with pytest.raises(ParameterError) as ei:
        check_attention(Unsure(), examples=2)
    assert ei.value.argument == "module.connwalk_causal"


CAUSAL = """
from tests.numerics.test_conformance_variants import Unmasked

def build():
    return Unmasked(causal=True)
"""


def test_causal_through_the_command(tmp_path, monkeypatch, capsys):
    from connwalk import main

    (tmp_path / "causal_only_mod.py").write_text(CAUSAL)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("causal_only_mod", None)
    js = tmp_path / "r.json"
    try:
        rc = main(
            ["conform", "causal_only_mod:build", "--examples", "3", "--no-hypotheses", "--causal", "--json", str(js)]
        )
    finally:
        sys.modules.pop("causal_only_mod", None)
    assert rc == 0, capsys.readouterr().err
    draws = json.loads(js.read_text())["draws"]
    assert draws and all(" causal" in d["input"] for d in draws)
