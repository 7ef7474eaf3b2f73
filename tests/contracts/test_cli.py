"""The command line on bad input: every option checked before any work (exit 2, one line naming the
option as typed, nothing written), ``--out`` never deletes what the suite did not write, SIGINT /
SIGTERM remove the temporary directory, and ``pytest --device cuda`` without CUDA is one usage error."""

from __future__ import annotations

import os
import signal

import pytest
import torch

import connwalk as cli
from connwalk import patterns as patterns_cli
from paper_checks import main_job

SMALL = ["--prompts", "4", "--length", "12", "--null-seeds", "2", "--n-boot", "40", "--no-progress"]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if any model is loaded (validation must come first)."""

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the options were checked")

    monkeypatch.setattr(main_job, "load_model", boom)


def _one_line_error(capsys, option):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"connwalk: error: {option}:"), err[0]
    return err[0]


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**32)], "--seed"),
        (["--prompts", "1"], "--prompts"),
        (["--length", "3"], "--length"),
        (["--length", "5"], "--length"),  # 1/n ≥ the sink threshold 0.2: a uniform null marks every key a sink
        (["--length", "257"], "--length"),  # synthetic:enc's context is 256, read before any load
        (["--null-seeds", "0"], "--null-seeds"),
        (["--n-boot", "0"], "--n-boot"),
        (["--threads", "0"], "--threads"),
        (["--models", "random:minilm"], "--models"),
        (["--models", "synthetic:nope"], "--models"),
        (["--models", "no-such-model"], "--models"),
        (["--models", "/nonexistent/model.gguf"], "--models"),
        (["--claims", "E9"], "--claims"),
    ],
)
def test_paper_checks_bad_option_exits_2_before_any_work(argv, option, tmp_path, capsys, no_work):
    out = tmp_path / "out"
    rc = cli.main(["paper-checks", "--out", str(out), "--models", "synthetic:enc", *SMALL, *argv])
    assert rc == 2
    _one_line_error(capsys, option)
    assert list(tmp_path.iterdir()) == []


def test_length_beyond_a_real_models_context_is_refused_before_its_weights_load(tmp_path, capsys, no_work):
    """minilm's context, from its config.json read literally here, refuses --length before any load."""
    import json

    from numerics.models import registry

    _, path = registry.resolve("minilm")
    ctx = json.loads((path / "config.json").read_text())["max_position_embeddings"]
    argv = ["paper-checks", "--out", str(tmp_path / "o"), "--models", "minilm", *SMALL, "--length", str(ctx + 1)]
    assert cli.main(argv) == 2
    assert f"context of {ctx} tokens" in _one_line_error(capsys, "--length")
    assert list(tmp_path.iterdir()) == []
    assert cli.main(["analyze", "minilm", *SMALL, "--length", "100000"]) == 2
    _one_line_error(capsys, "--length")


def test_length_beyond_the_corpus_is_refused_before_any_weights(tmp_path, capsys, no_work):
    """A model directory whose context (100000) exceeds the shipped corpus: --length 20000 is refused
    from the tokenizer alone. The directory holds no weights at all, so any load would fail otherwise;
    the corpus size comes from the tokenizer, counted independently here."""
    import json
    import shutil

    from transformers import AutoTokenizer

    from numerics.models import registry
    from numerics.models.corpus import corpus_sentences

    _, src = registry.resolve("minilm")
    model = tmp_path / "long-context-bert"
    model.mkdir()
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / f, model / f)
    cfg = json.loads((src / "config.json").read_text())
    cfg["max_position_embeddings"] = 100000
    (model / "config.json").write_text(json.dumps(cfg))
    n_tokens = len(
        AutoTokenizer.from_pretrained(str(src))(" ".join(corpus_sentences()), add_special_tokens=False)["input_ids"]
    )
    assert 1024 < n_tokens < 20000
    capsys.readouterr()  # transformers' own warning about the oracle's long input
    out = tmp_path / "o"
    assert cli.main(["paper-checks", "--out", str(out), "--models", str(model), *SMALL, "--length", "20000"]) == 2
    line = _one_line_error(capsys, "--length")
    assert f"the corpus has {n_tokens} tokens" in line
    assert not out.exists()


def test_gguf_context_length_from_the_header_alone(tmp_path):
    """A GGUF written by the gguf package with its context length after a tokenizer array and many
    other keys: read from the header (no dequantisation)."""
    import gguf
    import numpy as np

    from numerics.models import registry

    p = tmp_path / "ctx.gguf"
    w = gguf.GGUFWriter(str(p), "llama")
    w.add_token_list([f"t{i}" for i in range(300)])
    for i in range(80):
        w.add_uint32(f"filler.{i}", i)
    w.add_context_length(1234)
    w.add_tensor("x", np.zeros(4, dtype="float32"))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    assert registry.context_length(str(p)) == 1234
    assert main_job.context_length("smollm2-135m") == 8192  # SmolLM2-135M's published context


@pytest.mark.parametrize("kind", ["gguf", "config"])
def test_analyze_on_a_corrupt_model_names_its_own_argument(kind, tmp_path, capsys, no_work):
    if kind == "gguf":
        model = tmp_path / "broken.gguf"
        model.write_bytes(b"NOTAGGUF" * 8)
    else:
        model = tmp_path / "m"
        model.mkdir()
        (model / "config.json").write_text("{ not json")
    assert cli.main(["analyze", str(model), *SMALL]) == 2
    line = _one_line_error(capsys, "model")
    assert "--models" not in line


def test_sinks_leaving_too_few_tokens_name_length(tmp_path, capsys, monkeypatch):
    """Sinks depend on the attention, so this is known only after a model's pass: addressed to
    --length, exit 2, nothing written."""
    from paper_checks import stats

    monkeypatch.setattr(stats, "sink_positions", lambda Ps, tau=0.2: torch.ones(Ps.shape[-1], dtype=torch.bool))
    argv = ["paper-checks", "--out", str(tmp_path / "o"), "--models", "synthetic:enc", "--claims", "E1", *SMALL]
    assert cli.main(argv) == 2
    assert "attention-sink positions" in _one_line_error(capsys, "--length")
    assert list(tmp_path.iterdir()) == []


def test_random_model_name_says_what_to_pass(tmp_path, capsys, no_work):
    assert cli.main(["paper-checks", "--out", str(tmp_path / "o"), "--models", "random:minilm"]) == 2
    line = _one_line_error(capsys, "--models")
    assert "'minilm'" in line and "automatically" in line


@pytest.mark.parametrize("out", ["", "   "])
def test_empty_out_is_refused(out, capsys, no_work):
    assert cli.main(["paper-checks", "--out", out, "--models", "synthetic:enc", *SMALL]) == 2
    _one_line_error(capsys, "--out")


def test_unwritable_out_is_refused_before_the_job(capsys, no_work):
    assert cli.main(["paper-checks", "--out", "/proc/connwalk-report", "--models", "synthetic:enc", *SMALL]) == 2
    _one_line_error(capsys, "--out")


def test_argparse_errors_are_one_line_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["paper-checks", "--out", "x", "--seed", "abc"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--seed" in err[0] and "invalid int value" in err[0]


def test_out_holding_user_files_is_never_replaced(tmp_path, capsys, no_work):
    out = tmp_path / "work"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    assert cli.main(["paper-checks", "--out", str(out), "--models", "synthetic:enc", *SMALL]) == 2
    assert "not a connwalk report" in _one_line_error(capsys, "--out")
    assert (out / "notes.txt").read_text() == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_out_with_a_foreign_results_json_is_never_replaced(tmp_path, capsys, no_work):
    out = tmp_path / "other"
    out.mkdir()
    (out / "results.json").write_text('{"schema": "someone-else/1"}')
    assert cli.main(["paper-checks", "--out", str(out), "--models", "synthetic:enc", *SMALL]) == 2
    _one_line_error(capsys, "--out")
    assert (out / "results.json").read_text() == '{"schema": "someone-else/1"}'


def _small_report(out):
    return cli.main(["paper-checks", "--out", str(out), "--models", "synthetic:enc", "--claims", "E1", *SMALL])


def test_user_file_inside_a_previous_report_survives_a_rerun(tmp_path, capsys, monkeypatch):
    out = tmp_path / "R"
    assert _small_report(out) == 0
    report = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / "my-notes.md").write_text("my notes")
    (out / "mine").mkdir()  # a subdirectory of the user's, too
    capsys.readouterr()

    def boom(*a, **k):
        raise AssertionError("a model was loaded before --out was checked")

    monkeypatch.setattr(main_job, "load_model", boom)
    assert _small_report(out) == 2
    line = _one_line_error(capsys, "--out")
    assert "'mine'" in line and "'my-notes.md'" in line
    assert (out / "my-notes.md").read_text() == "my notes" and (out / "mine").is_dir()
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "my-notes.md"} == report


def test_a_manifest_cannot_name_files_outside_the_report(tmp_path, capsys):
    """A results.json listing ``../x`` is not a licence to delete ``x`` (only plain names inside count)."""
    out = tmp_path / "R"
    assert _small_report(out) == 0
    import json

    data = json.loads((out / "results.json").read_text())
    data["files"] += ["../victim.txt"]
    (out / "results.json").write_text(json.dumps(data))
    (tmp_path / "victim.txt").write_text("keep")
    assert _small_report(out) == 0
    assert (tmp_path / "victim.txt").read_text() == "keep"


def test_a_report_of_the_older_schema_without_manifest_is_replaced_by_its_figures(tmp_path, capsys):
    """Reports written before the manifest: their fixed files and the figures their report.md shows."""
    out = tmp_path / "R"
    assert _small_report(out) == 0
    import json

    data = json.loads((out / "results.json").read_text())
    del data["files"]

    def as_older_report():
        (out / "results.json").write_text(json.dumps(data))
        (out / "timings.json").unlink()  # a file reports gained with the manifest

    as_older_report()
    assert _small_report(out) == 0
    as_older_report()
    (out / "notes.png").write_bytes(b"mine")  # not shown in report.md: not the report's
    assert _small_report(out) == 2
    assert (out / "notes.png").read_bytes() == b"mine"


def test_out_dot_in_an_empty_working_directory(tmp_path, monkeypatch, capsys):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    assert _small_report(".") == 0
    names = sorted(p.name for p in work.iterdir())
    assert "report.md" in names and "results.json" in names
    assert not any(n.startswith(".") for n in names)  # no temporary directory left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd"]  # nothing written beside it
    assert _small_report(".") == 0  # and again: the report's own files are replaced in place
    assert sorted(p.name for p in work.iterdir()) == names


def test_an_existing_out_is_built_inside_itself(tmp_path, monkeypatch, capsys):
    """An existing --out is built in a temporary directory inside it (its parent, e.g. the parent of the
    working directory, need not be writable) and never renamed as a whole."""
    from paper_checks import figures

    seen = {}
    draw = figures.draw_all

    def spy(runs, tmp, **kw):
        seen["tmp"] = tmp
        return draw(runs, tmp, **kw)

    monkeypatch.setattr("paper_checks.figures.draw_all", spy)
    out = tmp_path / "R"
    out.mkdir()
    inode = out.stat().st_ino
    assert _small_report(out) == 0
    assert seen["tmp"].parent == out and not seen["tmp"].exists()
    assert out.stat().st_ino == inode


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_during_the_write_removes_the_temporary_directory(sig, code, tmp_path, monkeypatch, capsys):
    seen = {}

    def interrupted(runs, tmp, **kw):
        seen["tmp"] = tmp
        assert tmp.exists()
        os.kill(os.getpid(), sig)  # delivered to this (main) thread: the handler raises here
        raise AssertionError("the signal did not interrupt the job")

    monkeypatch.setattr("paper_checks.figures.draw_all", interrupted)
    out = tmp_path / "report"
    # the test arranges its own signals: a shell that starts pytest in the background leaves SIGINT
    # ignored (SIG_IGN is inherited), and an ignored signal never reaches the job
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        rc = cli.main(["paper-checks", "--out", str(out), "--models", "synthetic:enc", "--claims", "E1", *SMALL])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert rc == code
    assert "tmp" in seen and not seen["tmp"].exists()
    assert list(tmp_path.iterdir()) == []  # no report, no .report.tmp-* left behind
    assert "nothing was written" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is not cli._on_sigterm  # handler restored


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--dt", "0"], "--dt"),
        (["--dt", "nan"], "--dt"),
        (["--dt", "-0.1"], "--dt"),
        (["--n", "200000"], "--n"),
        (["--n", "1"], "--n"),
        (["--t-final", "0"], "--t-final"),
        (["--t-final", "0.005"], "--t-final"),
        (["--t-final", "0.03", "--dt", "0.01"], "--t-final"),  # 3 steps: too few samples to observe a class
        (["--dynamics", "postnorm", "--layers", "5"], "--layers"),
        (["--seed", "-1"], "--seed"),
        (["--eps", "nan"], "--eps"),
        (["--eps", "0"], "--eps"),
        (["--eta", "inf"], "--eta"),
        (["--layers", "0"], "--layers"),
        (["--phase-grid", "1"], "--phase-grid"),
        (["--phase-rho", "nan"], "--phase-rho"),
        (["--kernel", "4:nan"], "--kernel"),
        (["--transport", "diag:inf,1"], "--transport"),
        (["--dt", "5"], "--dt"),  # unstable RK4 step: the library's UnstableStepError, addressed to the option
    ],
)
def test_patterns_bad_option_exits_2_naming_the_option(argv, option, tmp_path, capsys):
    out = tmp_path / "p"
    rc = cli.main(["patterns", "--out", str(out), "--no-plots", "--phase-grid", "0", *argv])
    assert rc == 2
    _one_line_error(capsys, option)
    assert list(tmp_path.iterdir()) == []


def test_patterns_out_holding_user_files_is_refused(tmp_path, capsys):
    out = tmp_path / "p"
    out.mkdir()
    (out / "summary.json").write_text("{}")
    assert cli.main(["patterns", "--out", str(out), "--no-plots", "--phase-grid", "0"]) == 2
    _one_line_error(capsys, "--out")
    assert (out / "summary.json").read_text() == "{}"


def test_option_tables_declare_every_numeric_option():
    """The declared option tables cover the parsers' numeric options (a new option needs a kind)."""
    import argparse

    parser = cli.build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    from connwalk import conform as conform_cli

    tables = (
        ("paper-checks", cli.OPTIONS, set()),
        ("analyze", cli.OPTIONS, set()),
        ("patterns", patterns_cli.OPTIONS, set()),
        ("conform", conform_cli.OPTIONS, {"--layers"}),  # a list, each index checked >= 0 on its own
    )
    for name, table, lists in tables:
        numeric = {
            o for a in subs[name]._actions if a.type in (int, float) for o in a.option_strings if o.startswith("--")
        }
        assert numeric, name
        assert numeric - lists <= set(table.specs), (name, numeric - set(table.specs))


def test_device_cuda_without_cuda_is_one_usage_error():
    from numerics.pytest_plugin import check_device_option

    check_device_option("cpu")
    check_device_option("auto")
    with pytest.raises(pytest.UsageError, match="--device bogus"):
        check_device_option("bogus")
    if not torch.cuda.is_available():
        with pytest.raises(pytest.UsageError, match="--device cuda: .*CUDA is not available"):
            check_device_option("cuda")
