"""The command line on bad input: every option checked before any work (exit 2, one line naming the
option as typed, nothing written), ``--out`` never deletes what the suite did not write, SIGINT /
SIGTERM remove the temporary directory, and ``pytest --device cuda`` without CUDA is one usage error."""

from __future__ import annotations

import os
import signal

import pytest
import torch

from paper_checks import cli, main_job, patterns_cli

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
    for name, table in (("paper-checks", cli.OPTIONS), ("analyze", cli.OPTIONS), ("patterns", patterns_cli.OPTIONS)):
        numeric = {
            o for a in subs[name]._actions if a.type in (int, float) for o in a.option_strings if o.startswith("--")
        }
        assert numeric <= set(table.specs), (name, numeric - set(table.specs))


def test_device_cuda_without_cuda_is_one_usage_error():
    from numerics.pytest_plugin import check_device_option

    check_device_option("cpu")
    check_device_option("auto")
    with pytest.raises(pytest.UsageError, match="--device bogus"):
        check_device_option("bogus")
    if not torch.cuda.is_available():
        with pytest.raises(pytest.UsageError, match="--device cuda: .*CUDA is not available"):
            check_device_option("cuda")
