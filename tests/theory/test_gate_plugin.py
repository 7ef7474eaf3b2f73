"""``pytest --theorem MINE`` in a user's project (``pytester``) for statements its conftest registers
(:func:`theory.api.register`): the gate runs as one test ``gate[MINE]`` per statement, passes the true
one, fails the false one with its shrunk counterexample, and shows both in the theorem table and in
``--theorem-json``; connwalk's own ids select only their tagged tests, as before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
from tests.theory import stated
from theory import api

api.register(stated.true_statement('MINE'))
api.register(stated.false_statement('MINE_SYM'))
"""

TESTS = """
import pytest


@pytest.mark.theorem('MINE')
def test_my_own_check():
    pass


@pytest.mark.theorem('T3')
def test_tagged_with_ours():
    pass
"""


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("CONNWALK_DEVICE", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_mine=TESTS)
    return pytester


def test_theorem_mine_runs_the_gate_and_shows_it(project):
    js = project.path / "theorems.json"
    ids = ("--theorem", "MINE", "--theorem", "MINE_SYM", "--theorem", "T3")
    r = project.runpytest_subprocess("-p", "numerics.pytest_plugin", *ids, "--theorem-json", str(js))
    # gate[MINE], the tests tagged MINE and T3 pass; gate[MINE_SYM] fails; no gate test for connwalk's T3
    r.assert_outcomes(passed=3, failed=1)
    out = r.stdout.str()
    assert "gate[T3]" not in out and "gate T3" not in out
    assert "gate MINE (in-process: conftest): PASSES" in out
    assert "gate MINE_SYM (in-process: conftest): FAILS" in out
    assert "MINE_SYM.symmetric: counterexample (shrunk): {P: [[" in out
    data = {row["theorem"]: row for row in json.loads(js.read_text())["theorems"]}
    assert data["MINE"]["gate"]["status"] == "passes" and data["MINE"]["tests_passed"] == 2
    assert data["MINE"]["gate"]["counts"]["rejected"] >= 3
    sym = data["MINE_SYM"]["gate"]
    assert sym["status"] == "fails" and sym["conclusions"][0]["counterexample"]["n"] == 2
    assert data["MINE_SYM"]["title"] == "the walk's generator is symmetric"

    assert data["T3"]["tests_passed"] == 1 and "gate" not in data["T3"]


def test_an_unknown_id_lists_the_registered_ones(project):
    r = project.runpytest_subprocess("-p", "numerics.pytest_plugin", "--theorem", "NOPE")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown id(s) ['NOPE']" in r.stderr.str() and "MINE_SYM" in r.stderr.str()
