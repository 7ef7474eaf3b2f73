"""The census (numerics.census.run, ``connwalk census``): a sample of the committed rows (census.json,
CENSUS.md at the repository root) against a fresh run on just those classes; the classes issue 29 names;
the verdict mapping; the command line's checks before work."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
import transformers

from connwalk import main
from numerics.census.report import reason_kind
from numerics.census.run import STATUSES, run_census, verdict_of

ROOT = Path(__file__).resolve().parents[2]
transformers.logging.set_verbosity_error()

#: small families, one row of each kind the census has: conforms (interface capture, the returned-
#: weights path, a cross-attention class), a sink (identity holds, hypothesis fails), declines
SAMPLE = [
    ("llama", "LlamaAttention"),
    ("bert", "BertCrossAttention"),
    ("falcon", "FalconAttention"),
    ("gpt_oss", "GptOssAttention"),
    ("afmoe", "AfmoeAttention"),
    ("xlnet", "XLNetRelativeAttention"),
]

#: the classes issue 29 names: each must conform or be declined for a stated reason
NAMED = [
    "MistralAttention",
    "Qwen2Attention",
    "Qwen3Attention",
    "GPTNeoXAttention",
    "FalconAttention",
    "PhiAttention",
    "OPTAttention",
    "T5Attention",
    "DistilBertSelfAttention",
    "ViTAttention",
    "WhisperAttention",
    "RobertaAttention",
]


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads((ROOT / "census.json").read_text())


@pytest.fixture(scope="module")
def fresh(committed):
    rows = {r["class"]: r for r in committed["rows"]}
    fams = sorted({rows[c]["family"] for _, c in SAMPLE})
    return run_census(
        model_types=fams, classes=[c for _, c in SAMPLE], examples=committed["examples"], seed=committed["seed"]
    )


def test_the_committed_census_is_consistent(committed):
    # of the locked transformers: tests/test_lock.py (the lock is what scripts/install.sh installs)
    md = (ROOT / "CENSUS.md").read_text()
    assert f"transformers {committed['transformers_version']}" in md
    assert f"seed {committed['seed']}" in md
    for status, n in committed["counts"].items():
        assert f"| {status} | {n} |" in md
    assert sum(committed["counts"].values()) == len(committed["rows"])
    assert all(r["status"] in STATUSES and r["reason"] for r in committed["rows"])  # no crashed / empty row


def test_sample_rows_agree_with_a_fresh_run(committed, fresh):
    old = {r["class"]: r for r in committed["rows"]}
    new = {r.cls: r for r in fresh.rows}
    kinds = set()
    for fam, cls in SAMPLE:
        assert cls in old and cls in new, cls
        assert old[cls]["family"] == new[cls].family == fam
        assert new[cls].status == old[cls]["status"], (cls, new[cls].reason, old[cls]["reason"])
        assert reason_kind(new[cls].reason) == reason_kind(old[cls]["reason"]), cls
        assert new[cls].hypotheses == old[cls]["hypotheses"], cls
        kinds.add(new[cls].status)
    assert {"conforms", "identity holds, hypothesis fails", "declined"} <= kinds


def test_the_named_classes_conform_or_are_declined_for_a_stated_reason(committed):
    rows = {r["class"]: r for r in committed["rows"]}
    for cls in NAMED:
        r = rows[cls]
        assert r["status"] in ("conforms", "declined"), (cls, r["status"], r["reason"])
        if r["status"] == "declined":
            assert reason_kind(r["reason"]) != "other" and "unsupported family" not in r["reason"], r


def test_at_least_forty_families_conform_and_no_row_crashed(committed):
    fams = {r["family"] for r in committed["rows"] if r["status"] == "conforms"}
    assert len(fams) >= 40
    assert not [r for r in committed["rows"] if "Traceback" in r["reason"]]


def _report(**kw):
    base = dict(conforms=True, status="holds", results=[], dtype="float64", counterexample=None)
    base.update(kw)
    return types.SimpleNamespace(**base)


def test_verdict_of_reads_the_report_fields_and_derives_them_when_absent():
    from numerics.conformance.kit import Verdict

    assert verdict_of(
        _report(verdict="hypothesis fails", hypothesis_failures=["nonnegative"], decided_by="float64 shadow")
    ) == (
        "hypothesis fails",
        ["nonnegative"],
        "float64 shadow",
    )
    assert verdict_of(_report()) == ("conforms", [], "float64")
    assert verdict_of(_report(conforms=False, status="fails"))[0] == "fails"
    assert verdict_of(_report(status="undecided"))[0] == "undecided"
    sink = types.SimpleNamespace(t3={"a stochastic": Verdict("fails", 0.3, 1e-12)})
    assert verdict_of(_report(results=[sink]))[:2] == ("hypothesis fails", ["row-stochastic"])


def test_census_json_into_a_missing_directory_exits_2_before_any_work(tmp_path, capsys):
    rc = main(["census", "--json", str(tmp_path / "missing" / "c.json"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "--json" in err and "does not exist" in err
    assert not (tmp_path / "CENSUS.md").exists()
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["census", "--out", str(f)]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["census", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_census_command_writes_the_table_and_the_rows(tmp_path, capsys):
    js = tmp_path / "c.json"
    rc = main(["census", "--model-types", "gpt2", "--out", str(tmp_path), "--json", str(js), "--jobs", "1", "--quiet"])
    assert rc == 0
    data = json.loads(js.read_text())
    assert [r["class"] for r in data["rows"]] == ["GPT2Attention"]
    assert data["rows"][0]["status"] == "conforms" and data["rows"][0]["family"] == "gpt2"
    md = (tmp_path / "CENSUS.md").read_text()
    assert f"transformers {transformers.__version__}" in md and "`GPT2Attention`" in md
    assert "census of 1 attention classes" in capsys.readouterr().out
