"""``connwalk conform MODULE_OR_MODEL``: exit 0 on a conforming module, 1 on a violation (with the
shrunk counterexample), 2 with one line on stderr for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paper_checks.cli import main

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

    MODULE = good()
    '''
)


@pytest.fixture
def factories(tmp_path, monkeypatch):
    (tmp_path / "user_factories.py").write_text(FACTORIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("user_factories", None)
    yield tmp_path
    sys.modules.pop("user_factories", None)


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
    assert data["conforms"] is True and len(data["draws"]) == 4
    assert main(["conform", "user_factories:MODULE", "--examples", "2"]) == 0  # an attribute, not a factory


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
        [sys.executable, "-m", "paper_checks.cli", "conform", "user_factories:wrong", "--examples", "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 1 and "violates T2" in r.stdout, r.stdout + r.stderr
