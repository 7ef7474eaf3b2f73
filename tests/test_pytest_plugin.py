"""The shipped pytest plugin (numerics.pytest_plugin) on a throwaway project outside this repository
(``pytester``): a marked test, ``--theorem T2``, the theorem table, ``--theorem-json``, the marker
under ``--strict-markers``, the Hypothesis profiles, ``--device``; and its ``pytest11`` entry point."""

from __future__ import annotations

import importlib
import json
import os
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# the throwaway project's tests (single-quoted marks: they are not this repository's theorem tests, which
# tests/theory/test_registry_links.py matches by their double-quoted marks)

PROJECT = """
import pytest
from hypothesis import given, settings, strategies as st

from theory.report import record


@pytest.mark.theorem('T2')
def test_identity_residual():
    record("T2", residual=2.5e-16)
    record("T2", residual=1.25e-15)


@pytest.mark.theorem('T2')
@given(st.integers(0, 10**9))
def test_profile_in_force(k):
    assert settings().max_examples == 30 and settings().derandomize  # the plugin's "ci" profile
    record("T2", examples=1)


@pytest.mark.theorem('T3')
def test_other_theorem():
    record("T3", residual=1.0)


def test_untagged():
    pass
"""


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("CONNWALK_DEVICE", raising=False)
    pytester.makepyfile(test_user=PROJECT)
    return pytester


def test_theorem_option_table_and_json(project):
    js = project.path / "theorems.json"
    r = project.runpytest_subprocess(
        "-p",
        "numerics.pytest_plugin",
        "--strict-markers",
        "--theorem",
        "T2",
        "--theorem-json",
        str(js),
        "--hypothesis-profile",
        "ci",
    )
    r.assert_outcomes(passed=2, deselected=2)
    out = r.stdout.str()
    assert "theorem checker" in out
    (row,) = [line for line in out.splitlines() if line.startswith("T2 ")]
    assert "1.250e-15" in row and "2/2" in row
    assert not [line for line in out.splitlines() if line.startswith("T3 ")]  # filtered by --theorem
    data = json.loads(js.read_text())
    (t2,) = data["theorems"]
    assert (t2["theorem"], t2["worst_residual"], t2["tests_passed"], t2["examples"]) == ("T2", 1.25e-15, 2, 32)
    assert data["exitstatus"] == 0


def test_unknown_theorem_and_bad_device_are_usage_errors(project):
    r = project.runpytest_subprocess("-p", "numerics.pytest_plugin", "--theorem", "T99")
    assert r.ret == pytest.ExitCode.USAGE_ERROR and "unknown id(s) ['T99']" in r.stderr.str()
    r = project.runpytest_subprocess("-p", "numerics.pytest_plugin", "--device", "bogus")
    assert r.ret == pytest.ExitCode.USAGE_ERROR and "--device bogus" in r.stderr.str()


def test_without_the_plugin_the_marker_is_unknown(project):
    """The throwaway project really depends on the plugin: without it (``-p no:``) the marker
    is rejected by --strict-markers and the options do not exist."""
    r = project.runpytest_subprocess("-p", "no:numerics.pytest_plugin", "--strict-markers")
    assert r.ret != 0 and "'theorem' not found in `markers`" in r.stdout.str()


def test_named_twice_registers_once(project):
    """A project that names the plugin in ``pytest_plugins`` *and* gets it from ``-p`` (as this
    repository's conftest does when the entry point is installed) registers it once."""
    project.makeconftest('pytest_plugins = ["numerics.pytest_plugin"]\n')
    r = project.runpytest_subprocess(
        "-p", "numerics.pytest_plugin", "--strict-markers", "--theorem", "T3", "--hypothesis-profile", "ci"
    )
    r.assert_outcomes(passed=1, deselected=3)
    assert r.stdout.str().count("theorem checker") == 1


def test_entry_point_declared_in_pyproject():
    """``pip install`` reads this table: the pytest11 entry point names the plugin module under its
    own name (``-p no:numerics.pytest_plugin`` disables it; ``pytest_plugins`` naming it is a no-op)."""
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"numerics.pytest_plugin": "numerics.pytest_plugin"}
    mod = importlib.import_module("numerics.pytest_plugin")
    for hook in ("pytest_addoption", "pytest_configure", "pytest_collection_modifyitems", "device"):
        assert hasattr(mod, hook), hook


def test_installed_entry_point_if_any_points_at_the_plugin():
    """Where this checkout is installed with its entry point, it is the same module (after a change
    of pyproject.toml, ``pip install -e .`` must be re-run for the metadata to follow)."""
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="pytest11") if ep.value.startswith("numerics")]
    assert all((ep.name, ep.value) == ("numerics.pytest_plugin", "numerics.pytest_plugin") for ep in eps), eps
