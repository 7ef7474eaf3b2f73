"""The ``connwalk`` CLI and the report directory, on constructed (synthetic) models only."""

from __future__ import annotations

import json
import os
import types

import pytest

import connwalk as cli
from numerics.errors import CorpusTooShortError
from paper_checks import main_job
from paper_checks.verdict import REPRODUCED, StatResult

SMALL = ["--prompts", "4", "--length", "12", "--null-seeds", "2", "--n-boot", "40", "--no-progress"]
MODELS = ["synthetic:enc", "synthetic:dec"]


def _pc(out, *extra, models=MODELS, claims=("E1", "E2", "E3", "E4")):
    return cli.main(["paper-checks", "--out", str(out), "--models", *models, "--claims", *claims, *SMALL, *extra])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "report"
    assert _pc(out) == 0
    return out


def test_report_directory_contents(report):
    names = sorted(os.listdir(report))
    assert "report.md" in names and "results.json" in names
    assert {"e1_synthetic_enc.png", "e2_synthetic_enc.png", "e1_synthetic_dec.png", "e2_synthetic_dec.png"} <= set(
        names
    )
    for n in names:
        if n.endswith(".png"):
            with open(report / n, "rb") as fh:
                assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    data = json.loads((report / "results.json").read_text())
    rows = data["rows"]
    for claim in ("E1", "E2"):
        for m in MODELS:
            got = [r for r in rows if r["claim"] == claim and r["model"] == m]
            assert got, (claim, m)
            assert all(r["null"] is not None or r["statistic"].startswith("reversibility") for r in got)
    assert any(r["claim"] == "E3" for r in rows) and any(r["claim"] == "E4" for r in rows)
    md = (report / "report.md").read_text()
    assert "do **not** cover variation across models" in md
    assert "124M → 8B" in md
    assert md.splitlines()[0] == "# connwalk paper checks: E1, E2, E3, E4"  # the claims that ran
    assert "| E2 | synthetic:enc | head_sv_cv |" in md
    # exact scaled isometries in the constructed encoder: E2 head defect reproduced
    hv = [r for r in rows if r["claim"] == "E2" and r["model"] == "synthetic:enc" and r["statistic"] == "head_sv_cv"][0]
    assert hv["verdict"] == REPRODUCED


def test_deterministic_given_the_seed(report, tmp_path):
    out = tmp_path / "again"
    assert _pc(out) == 0
    assert (out / "results.json").read_bytes() == (report / "results.json").read_bytes()
    assert (out / "report.md").read_bytes() == (report / "report.md").read_bytes()


def test_replaced_atomically_and_failure_keeps_the_old_report(tmp_path, monkeypatch):
    out = tmp_path / "keep"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    # a directory the suite did not write is never replaced (it could hold the user's files)
    assert _pc(out, models=["synthetic:enc"], claims=("E1",)) == 2
    assert (out / "stale.txt").read_text() == "old" and sorted(p.name for p in out.iterdir()) == ["stale.txt"]
    (out / "stale.txt").unlink()
    assert _pc(out, models=["synthetic:enc"], claims=("E1",)) == 0  # an empty directory may be used
    (out / "stale.png").write_bytes(b"x")  # a file added to a report of ours is not the report's: refused
    assert _pc(out, models=["synthetic:enc"], claims=("E1",)) == 2
    assert (out / "stale.png").read_bytes() == b"x"
    (out / "stale.png").unlink()
    listed = json.loads((out / "results.json").read_text())["files"]
    assert sorted(listed) == sorted(p.name for p in out.iterdir())  # the manifest names every file written
    assert _pc(out, models=["synthetic:enc"], claims=("E1",)) == 0  # only the report's own files: replaced
    # no temporary directories left inside or beside it
    assert sorted(p.name for p in out.iterdir()) == sorted(listed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]
    before = (out / "results.json").read_bytes()

    def boom(*a, **k):
        raise RuntimeError("figure failure")

    monkeypatch.setattr("paper_checks.figures.draw_all", boom)
    with pytest.raises(RuntimeError):
        _pc(out, models=["synthetic:enc"], claims=("E1",))
    assert (out / "results.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]
    assert sorted(p.name for p in out.iterdir()) == sorted(listed)


def test_same_seed_same_bytes_with_e5_e6(tmp_path):
    """E5/E6 time their sweeps; the seconds go to timings.json, so results.json and report.md of two
    runs of one seed are byte-identical."""
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        assert _pc(out, "--quick", models=["synthetic:enc"], claims=("E1", "E5", "E6")) == 0
    for name in ("results.json", "report.md"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    data = json.loads((outs[0] / "results.json").read_text())
    assert {r["claim"] for r in data["rows"]} >= {"E5", "E6"}
    assert "seconds" not in (outs[0] / "results.json").read_text()
    timings = json.loads((outs[0] / "timings.json").read_text())["seconds"]
    assert {"E5", "E6", "synthetic:enc"} <= set(timings) and all(v >= 0 for v in timings.values())
    assert "timings.json" in data["files"]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--claims", "E9"], "--claims: unknown claim 'E9'"),
        (["--models", "synthetic:nope"], "unknown synthetic model"),
        (["--length", "400"], "max_length"),
        (["--prompts", "1"], "--prompts"),
    ],
)
def test_bad_input_exit_code_and_nothing_written(argv, needle, tmp_path, capsys):
    out = tmp_path / "out"
    base = ["paper-checks", "--out", str(out), "--models", "synthetic:enc", *SMALL]
    rc = cli.main(base + argv)
    assert rc == 2
    assert needle in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert _pc(f) == 2
    assert "not a directory" in capsys.readouterr().err
    assert f.read_text() == "x"


def test_corpus_too_short_is_reported(tmp_path, monkeypatch, capsys):
    def short(handle, n, length, seed):
        raise CorpusTooShortError(f"corpus too short for length={length}", argument="length")

    monkeypatch.setattr(main_job, "sample_ids", short)
    assert _pc(tmp_path / "o") == 2
    assert "corpus too short" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_external_claims_hook(tmp_path, monkeypatch):
    calls = {}

    def fake_run(out_dir, *, quick, seed):
        calls["args"] = (quick, seed)
        (out_dir / "e5_fake.png").write_bytes(b"\x89PNG\r\n\x1a\n")
        return [StatResult("E5", "fake-sim", "stat", 1.0, 0.0, (0.5, 1.5), 1.0, REPRODUCED, "rule")]

    monkeypatch.setitem(main_job.EXTERNAL, "E5", types.SimpleNamespace(run=fake_run))
    monkeypatch.setitem(main_job.EXTERNAL, "E6", types.SimpleNamespace())
    out = tmp_path / "ext"
    assert _pc(out, "--quick", "--seed", "3", claims=("E5", "E6")) == 0
    assert calls["args"] == (True, 3)
    data = json.loads((out / "results.json").read_text())
    assert [r["claim"] for r in data["rows"]] == ["E5"]
    md = (out / "report.md").read_text()
    assert "e5_fake.png" in md and "E6" in md and "not available" in md


def test_patterns_subcommand_is_registered(monkeypatch):
    mod = types.ModuleType("connwalk.patterns")

    def add_parser(sub):
        p = sub.add_parser("patterns")
        p.set_defaults(func=lambda args: 7)

    mod.add_parser = add_parser
    monkeypatch.setattr(cli, "patterns_cli", mod)
    assert cli.main(["patterns"]) == 7


def test_analyze_prints_table(capsys):
    assert cli.main(["analyze", "synthetic:enc", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "| E1 | synthetic:enc | walk_change_frob |" in out
    assert "| E2 | synthetic:enc | edge_defect |" in out


def test_analyze_through_the_model_adapters(capsys):
    """Tiny random HF configs (registry ``tiny:*``) go through the real adapter path (GQA llama)."""
    assert cli.main(["analyze", "tiny:llama", *SMALL]) == 0
    out = capsys.readouterr().out
    for stat in ("walk_change_frob", "positional_r2", "head_sv_cv", "data_gain_cv", "edge_defect"):
        assert f"| tiny:llama | {stat} |" in out


def test_caveat_states_the_sizes_that_ran():
    """The size range in the caveats is the models' own, rounded as the E3 rows round it (MiniLM's
    22.7M parameters read 23M there and here)."""
    from paper_checks.report import caveats

    two = caveats({"minilm": {"n_params": 22_713_216}, "smollm2-135m": {"n_params": 134_515_008}})[1]
    assert "the models here span 23M → 135M" in two and "22M" not in two
    assert "the one model here has 23M" in caveats({"minilm": {"n_params": 22_713_216}})[1]
    assert "the 2 models here all have 0.041M" in caveats({"a": {"n_params": 41_000}, "b": {"n_params": 41_000}})[1]
    assert "no pretrained model ran" in caveats({})[1]


def test_terminal_prints_the_summary_and_the_report_has_the_table(tmp_path, capsys):
    out = tmp_path / "summary"
    assert _pc(out, models=["synthetic:enc"], claims=("E1",)) == 0
    printed = capsys.readouterr().out
    assert "| E1 |" not in printed  # the full table is not printed on the terminal
    assert "E1 " in printed and "rows)" in printed  # per-claim counts
    assert str(out.resolve() / "report.md") in printed
    assert "| E1 | synthetic:enc |" in (out / "report.md").read_text()
