"""``connwalk conform MODULE_OR_MODEL``: exit 0 on a conforming module, 1 on a violation (with the
shrunk counterexample) or a failed hypothesis, 2 with one line on stderr for bad input, 3 undecided."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from connwalk import main
from tests.helpers import importable_module

REPO = Path(__file__).resolve().parents[2]

FACTORIES = textwrap.dedent(
    '''
    import torch

    def good():
        torch.manual_seed(0)
        return torch.nn.MultiheadAttention(8, 2, batch_first=True).double()

    class Transposed(torch.nn.MultiheadAttention):
        """Claims out_proj.weight but applies its transpose."""

        def forward(self, q, k, v, **kw):
            out, A = super().forward(q, k, v, **kw)
            ctx = (out - self.out_proj.bias) @ torch.linalg.inv(self.out_proj.weight).T
            return ctx @ self.out_proj.weight + self.out_proj.bias, A

    def wrong():
        torch.manual_seed(0)
        return Transposed(8, 2, batch_first=True).double()

    def raises():
        raise RuntimeError("no GPU here")

    def linear():
        return torch.nn.Linear(4, 4)

    def nan_weights():
        m = good()
        with torch.no_grad():
            m.out_proj.weight[0, 0] = float("nan")
        return m

    class NoArguments(torch.nn.MultiheadAttention):
        def __init__(self):
            torch.manual_seed(0)
            super().__init__(8, 2, batch_first=True)

    class NeedsArguments(torch.nn.MultiheadAttention):
        pass

    def sink():
        """A null key (rows over the real keys sum to less than one): the identity holds, the
        row-stochastic hypothesis of T2 does not."""
        torch.manual_seed(0)
        return torch.nn.MultiheadAttention(8, 2, batch_first=True, add_zero_attn=True).double()

    MODULE = good()
    '''
)


@pytest.fixture
def factories(tmp_path, monkeypatch):
    yield from importable_module(tmp_path, monkeypatch, "user_factories", FACTORIES)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_conforming_factory_exits_0_and_writes_json(factories, capsys):
    js = factories / "r.json"
    assert main(["conform", "user_factories:good", "--examples", "4", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "conformance of MultiheadAttention" in out and "T2 HOLDS" in out
    data = json.loads(js.read_text())
    assert data["conforms"] is True and len(data["draws"]) == 4 + 1  # and the repeated shape
    assert main(["conform", "user_factories:MODULE", "--examples", "2"]) == 0  # an attribute, not a factory


def test_hypothesis_failure_exits_1_and_names_the_hypothesis(factories, capsys):
    assert main(["conform", "user_factories:sink", "--examples", "3"]) == 1
    assert "row-stochastic" in capsys.readouterr().out


def test_every_verdict_of_the_kit_has_an_exit_code():
    from connwalk.conform import EXIT_CODES
    from numerics.conformance.kit import VERDICTS

    assert set(EXIT_CODES) == set(VERDICTS)
    assert EXIT_CODES["conforms"] == 0 and EXIT_CODES["undecided"] not in (0, 1, 2)
    assert EXIT_CODES["fails"] == EXIT_CODES["hypothesis fails"] == 1


def test_violation_exits_1_with_counterexample(factories, capsys):
    assert main(["conform", "user_factories:wrong", "--examples", "4"]) == 1
    out = capsys.readouterr().out
    assert "T2 FAILS" in out and "counterexample (shrunk)" in out and "violates T2" in out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["user_factories:raises"], "the factory raised RuntimeError: no GPU here"),
        (["user_factories:linear"], "Linear is not an attention module"),
        (["user_factories:missing"], "has no attribute 'missing'"),
        (["no_such_pkg_23.mod:factory"], "does not import"),
        (["no-such-model-23"], "MODULE_OR_MODEL"),
        (["user_factories:good", "--examples", "0"], "--examples"),
        (["user_factories:good", "--max-length", "0"], "--max-length"),
    ],
)
def test_bad_input_exits_2_with_one_line(factories, capsys, argv, needle):
    assert main(["conform", *argv]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("connwalk: error:") and needle in line, line


def test_model_name_whole_model(capsys):
    assert main(["conform", "tiny:gpt2", "--examples", "2", "--dtype", "float64", "--layers", "1"]) == 0
    out = capsys.readouterr().out
    assert "gpt2" in out and "T2 HOLDS" in out


def test_as_a_ci_step_in_a_subprocess(factories):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(factories), str(REPO), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-m", "connwalk", "conform", "user_factories:wrong", "--examples", "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 1 and "violates T2" in r.stdout, r.stdout + r.stderr


# ---------------------------------------------------------------- issue 29: every option checked first
@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the target is resolved (the options must be refused before any work)."""
    from connwalk import conform

    def boom(*a, **k):
        raise AssertionError("the target was resolved before the options were checked")

    monkeypatch.setattr(conform, "resolve", boom)


@pytest.mark.parametrize("where", ["missing_dir", "existing_dir", "unwritable", "under_a_file"])
def test_json_location_refused_before_any_work(where, factories, tmp_path, capsys, no_work):
    path = {
        "missing_dir": str(tmp_path / "no" / "such" / "r.json"),
        "existing_dir": str(tmp_path),
        "unwritable": "/proc/connwalk-conform.json",
        "under_a_file": str(factories / "user_factories.py" / "r.json"),
    }[where]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["conform", "user_factories:good", "--json", path]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("connwalk: error: --json:"), line
    assert capsys.readouterr().out == ""  # no table printed
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_json_into_an_existing_file_is_replaced_whole(factories, capsys):
    js = factories / "r.json"
    js.write_text("old")
    assert main(["conform", "user_factories:good", "--examples", "2", "--json", str(js)]) == 0
    assert json.loads(js.read_text())["conforms"] is True
    assert sorted(p.name for p in factories.iterdir() if p.name.startswith(".connwalk")) == []


@pytest.mark.parametrize(
    "argv, option",
    [
        (["--examples", "100000000"], "--examples"),
        (["--examples", "0"], "--examples"),
        (["--max-length", "10000000"], "--max-length"),  # over the hard bound
        (["--max-length", "100000"], "--max-length"),  # within it, over the memory budget
        (["--max-batch", "100000"], "--max-batch"),
        (["--seed", "-1"], "--seed"),
    ],
)
def test_unbounded_options_refused_before_any_work(argv, option, factories, capsys, no_work):
    assert main(["conform", "user_factories:good", *argv]) == 2
    assert _one_line(capsys.readouterr().err).startswith(f"connwalk: error: {option}:")


def test_max_length_against_the_memory_budget(factories, capsys, monkeypatch, no_work):
    """The largest draw's attention (batch × length² × 20 bytes per head and layer, at least) is held
    against CONNWALK_MEMORY_BUDGET before the target is built: 2 × 1000² × 20 B = 40 MB > 1 MB."""
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "1M")
    assert main(["conform", "user_factories:good", "--max-length", "1000"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("connwalk: error: --max-length:") and "memory budget" in line, line


def test_largest_draw_bytes_by_hand():
    from connwalk.conform import draw_bytes

    # B=2, H=3, n=5, 4 layers of float32 (scores + probabilities) + one float64 layer (A and |A|)
    assert draw_bytes(2, 5, heads=3, layers=4, itemsize=4) == 2 * 3 * 25 * (4 * 2 * 4 + 16)


def test_a_bad_budget_is_named_as_the_environment_variable(factories, capsys, monkeypatch):
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "lots")
    assert main(["conform", "user_factories:good", "--examples", "2"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("connwalk: error: CONNWALK_MEMORY_BUDGET:"), line
    assert "--CONNWALK" not in line


def test_nan_in_the_weights_names_the_target(factories, capsys):
    assert main(["conform", "user_factories:nan_weights", "--examples", "2"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("connwalk: error: MODULE_OR_MODEL: user_factories:nan_weights: "), line
    assert "W_O" not in line and "NaN" in line


def test_readdress_keeps_options_env_variables_and_maps_fields(monkeypatch):
    from connwalk.parser import readdress
    from numerics.errors import NonFiniteError, ParameterError

    opts = {"max_length": "--max-length"}
    e = readdress(ParameterError("must be >= 1, got 0", argument="max_length"), opts, fallback="T")
    assert str(e) == "--max-length: must be >= 1, got 0" and isinstance(e, ParameterError)
    env = ParameterError("bad", argument="CONNWALK_MEMORY_BUDGET")
    assert readdress(env, opts, fallback="T") is env
    monkeypatch.delenv("W_O", raising=False)
    e = readdress(NonFiniteError("contains NaN", argument="W_O"), opts, fallback="T", prefix="m:f: ")
    assert str(e) == "T: m:f: contains NaN (in W_O)" and isinstance(e, NonFiniteError)
    e = readdress(NonFiniteError("contains NaN", argument="W_O"), opts, fallback="T", fields={"W_O": "its weight"})
    assert str(e) == "T: its weight: contains NaN"


def test_a_class_target_is_instantiated(factories, capsys):
    assert main(["conform", "user_factories:NoArguments", "--examples", "2"]) == 0
    assert "T2 HOLDS" in capsys.readouterr().out


def test_a_class_needing_arguments_is_one_line(factories, capsys):
    assert main(["conform", "user_factories:NeedsArguments"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("connwalk: error: MODULE_OR_MODEL: user_factories:NeedsArguments:"), line
    assert "embed_dim" in line and "num_heads" in line


def test_help_is_whole_and_ends_with_the_exit_codes():
    r = subprocess.run(
        [sys.executable, "-m", "connwalk", "conform", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80"},
        timeout=60,
    )
    assert r.returncode == 0
    text = r.stdout
    for raw in (":func:", ":mod:", ":class:", ":data:", "``"):
        assert raw not in text, raw
    assert all(len(line) <= 80 for line in text.splitlines()), max(text.splitlines(), key=len)
    tail = text[text.index("exit status:") :]
    for code in ("0  ", "1  ", "2  "):
        assert f"\n  {code}" in tail, code
    assert "eval mode" in text and "Replaying a failure" in text and "CONNWALK_MEMORY_BUDGET" in text
    # every paragraph of the description ends a sentence (none cut off mid-way)
    body = text[text.index("\n\n") + 2 : text.index("positional arguments:")]
    for para in body.strip().split("\n\n"):
        assert para.rstrip()[-1] in ".:" or para.lstrip().startswith("MODULE_OR_MODEL is one of"), para


def test_progress_per_layer_on_a_terminal(monkeypatch, capsys):
    """On a terminal's stderr: what it loads, then which draw and layer it is at (whole model)."""
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["conform", "tiny:gpt2", "--examples", "2", "--dtype", "float64"]) == 0
    # stage lines and the live status line, rewritten in place (carriage return, erase to end of line)
    lines = [x.replace("\x1b[K", "") for x in err.getvalue().replace("\r", "\n").splitlines() if x.strip("\x1b[K")]
    assert all(x.startswith("connwalk conform: [") for x in lines), lines
    assert "loading torch" in lines[0] and "[  0.0 s]" in lines[0], lines
    assert any("loading tiny:gpt2" in x for x in lines), lines
    assert any("checking 2 draws of" in x for x in lines), lines
    for draw in (1, 2):
        for layer in (1, 2):  # tiny:gpt2 has two layers
            assert any(f"draw {draw}/2: layer {layer}/2" in x for x in lines), lines
    err2 = Tty()
    monkeypatch.setattr(sys, "stderr", err2)
    assert main(["conform", "tiny:gpt2", "--examples", "2", "--dtype", "float64", "--no-progress"]) == 0
    assert err2.getvalue() == ""
