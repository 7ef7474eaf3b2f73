"""``connwalk conform`` runs a real float64 shadow (issue 37 item 4): the twin is built from the adapter's
class, never from a wrapper put on the instance, and its extraction is verified float64 on every draw
(else the shadow is dropped and every row says why). Through the command a score scale off by 1e-6
fails as through ``check_attention``, and every module of the conformance test set gets the same
verdict and the same "decided by" on both paths."""

from __future__ import annotations

import json
import re

import pytest
import torch

from connwalk import main
from numerics.conformance.kit import SHADOW, adapter_for, check_attention
from tests.helpers import importable_module
from tests.numerics.test_conformance import HandAttention, LinearAttention, MeanAttention
from tests.numerics.test_conformance_variants import CORRECT, HYPOTHESIS_FAILS, IDENTITY_FAILS, Attn, Unmasked

EXAMPLES = 6
#: every factory-style module of the conformance test set (test_conformance_variants.py and
#: test_conformance.py), by its expected verdict
SET = {
    **{f"conforms:{k}": v for k, v in CORRECT.items()},
    **{f"fails:{k}": v for k, v in IDENTITY_FAILS.items()},
    **{f"hypothesis:{k}": v[0] for k, v in HYPOTHESIS_FAILS.items()},
    "conforms:hand-float32": lambda: HandAttention(d=64, heads=4, dtype=torch.float32),
    "fails:hand-float32-transposed": lambda: HandAttention(d=64, heads=4, wrong="transpose", dtype=torch.float32),
    "fails:hand-float64-permuted": lambda: HandAttention(wrong="permute"),
    "conforms:linear-attention": LinearAttention,
    "conforms:mean-attention": MeanAttention,
    "conforms:torch-mha-float32": lambda: torch.nn.MultiheadAttention(16, 4, batch_first=True),
    "conforms:torch-mha-kdim-vdim": lambda: torch.nn.MultiheadAttention(16, 4, kdim=5, vdim=7).double(),
}


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


FACTORIES = "import torch\nfrom tests.paper_checks.test_conform_shadow import SET\n" + "".join(
    f"\n\ndef {_ident(name)}():\n    torch.manual_seed(0)\n    return SET[{name!r}]()\n" for name in SET
)


@pytest.fixture
def conformance_set(tmp_path, monkeypatch):
    yield from importable_module(tmp_path, monkeypatch, "conformance_set", FACTORIES)


def _cli(target: str, tmp_path, *extra: str) -> tuple[int, dict]:
    js = tmp_path / "r.json"
    rc = main(["conform", target, "--examples", str(EXAMPLES), "--no-hypotheses", "--json", str(js), *extra])
    return rc, json.loads(js.read_text())


def test_a_score_scale_off_by_1e_6_fails_through_the_command(conformance_set, capsys):
    rc, data = _cli("conformance_set:fails_score_scale_1e_6", conformance_set)
    assert rc == 1, capsys.readouterr().out
    assert data["verdict"] == "fails" and data["decided_by"] == SHADOW
    assert data["shadow"] == "float64 shadow run" and data["counterexample"]["decided_by"] == SHADOW
    assert "T2 FAILS" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(SET))
def test_every_module_of_the_conformance_set_gets_one_verdict_on_both_paths(name, conformance_set):
    rc, data = _cli(f"conformance_set:{_ident(name)}", conformance_set)
    torch.manual_seed(0)
    rep = check_attention(SET[name](), examples=EXAMPLES, hypotheses=False)
    expected = {"conforms": "conforms", "fails": "fails", "hypothesis": "hypothesis fails"}[name.split(":")[0]]
    assert rep.verdict == expected, rep.table()
    assert (data["verdict"], data["decided_by"], data["hypothesis_failures"]) == (
        rep.verdict,
        rep.decided_by,
        rep.hypothesis_failures,
    )
    assert rc == {"conforms": 0, "fails": 1, "hypothesis fails": 1}[rep.verdict]
    assert [r["decided_by"] for r in data["draws"]] == [r.decided_by for r in rep.results]
    assert data["shadow"] == (rep.shadow or "float64 shadow run")


def test_a_wrapper_on_the_adapter_is_not_copied_into_the_shadow():
    """A progress wrapper put on the instance (as ``connwalk conform`` once did) closes over the float32
    module; the twin runs its class's ``extract`` on the float64 copy all the same."""
    m = Unmasked(defect="scale")
    ad = adapter_for(m)
    inner, seen = ad.extract, []

    def extract(draw):
        seen.append(draw)
        return inner(draw)

    ad.extract = extract
    twin, why = ad.shadow()
    assert twin is not None and why == "" and "extract" not in vars(twin)
    assert twin.module.q.weight.dtype == torch.float64 and m.q.weight.dtype == torch.float32
    rep = check_attention(m, adapter=ad, examples=EXAMPLES, hypotheses=False)
    assert rep.verdict == "fails" and rep.decided_by == SHADOW, rep.table()
    assert len(seen) >= EXAMPLES  # the wrapper ran: on the module's own run only


class ReportsFloat32(Attn):
    """Reports every tensor in float32, whatever dtype it runs in: its float64 copy's run is not a
    float64 run, so it cannot decide anything."""

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        for f in ("output", "A", "W_O", "W_V", "values", "b_V", "b_O"):
            setattr(ex, f, getattr(ex, f).float())
        return ex


def test_a_shadow_whose_tensors_are_not_float64_is_dropped_and_each_row_says_why():
    rep = check_attention(ReportsFloat32(), examples=EXAMPLES, hypotheses=False)
    assert rep.verdict == "conforms" and rep.decided_by == "float32", rep.table()
    assert "not float64 (output float32, A float32" in rep.shadow and "decides nothing" in rep.shadow
    assert all(r.decided_by == "float32" and "not float64" in r.no_shadow for r in rep.results)
    assert "no float64 shadow" in rep.table()
    assert all("not float64" in d["shadow"] for d in rep.as_dict()["draws"])


def test_progress_goes_through_the_kits_hook():
    lines: list[str] = []
    rep = check_attention(Attn(), examples=2, hypotheses=False, progress=lines.append)
    assert rep.conforms
    for k in (1, 2):
        assert f"draw {k}/2: running the module" in lines and f"draw {k}/2: layer 1/1: T2" in lines
    assert "the repeated shape: running the module" in lines
