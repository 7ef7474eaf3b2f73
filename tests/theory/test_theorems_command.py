"""``connwalk theorems``: every registered statement with its origin, ``--render PATH`` (their THEOREMS.md
section), ``--check ID`` (the gate; exit codes as ``connwalk conform``'s: 0 passes, 1 fails, 2 bad input,
3 undecided). Statements registered in-process here, unregistered after each test."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from hypothesis import strategies as st

from connwalk import main
from tests.theory import stated
from theory import api
from theory.formulas.tolerances import EPS


@pytest.fixture
def mine():
    ids = []
    for t in (stated.true_statement("CLI_MINE"), stated.false_statement("CLI_SYM"), _undecided()):
        api.register(t)
        ids.append(t.id)
    yield
    for sid in ids:
        api.unregister(sid)


def _undecided() -> api.Theorem:
    """``X_0 = 0`` drawn only where ``X_0`` is exactly its threshold ``64·ε``: within its own rounding
    error of it, so neither holds nor fails."""
    X = sp.IndexedBase("X")
    tiny = api.identity("tiny", X[0], 0)
    draws = st.just({"X": np.array([64 * EPS])})
    c = api.conclusion("CLI_TINY.zero", "«tiny»", formulas={"tiny": tiny}, strategy=draws)
    return api.statement("CLI_TINY", "a value at its threshold", conclusions=[c])


def test_the_listing_names_every_statement_and_its_origin(mine, capsys):
    assert main(["theorems"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("L1 ") and "theory.registry:THEOREMS" in lines[0]
    (sym,) = [x for x in lines if x.startswith("CLI_SYM ")]
    assert sym.endswith(f"the walk's generator is symmetric — in-process: {__name__}")


def test_render_writes_the_section_of_the_registered_statements(mine, tmp_path, capsys):
    out = tmp_path / "REGISTERED.md"
    assert main(["theorems", "--render", str(out)]) == 0
    md = out.read_text()
    assert "## CLI_MINE — the rows of a stochastic walk" in md and "## CLI_SYM" in md
    assert "\\sum_{k=0}^{n - 1} {P}_{i,k} = 1" in md  # the formula, rendered by sympy.latex
    assert "## T3" not in md  # connwalk's own are in THEOREMS.md


def test_check_exit_codes(mine, tmp_path, capsys):
    js = tmp_path / "gate.json"
    assert main(["theorems", "--check", "CLI_MINE", "--json", str(js)]) == 0
    assert json.loads(js.read_text())["status"] == "passes"
    assert main(["theorems", "--check", "CLI_SYM"]) == 1
    assert "counterexample (shrunk): {P: [[" in capsys.readouterr().out
    assert main(["theorems", "--check", "CLI_TINY"]) == 3


@pytest.mark.parametrize(
    "argv, named",
    [
        (["theorems", "--check", "NOPE"], "--check 'NOPE'"),
        (["theorems", "--render", "/nonexistent-dir/x.md"], "--render"),
        (["theorems", "--json", "x.json"], "--json"),
    ],
)
def test_bad_input_exits_2_naming_the_option(argv, named, capsys):
    assert main(argv) == 2
    assert named in capsys.readouterr().err
