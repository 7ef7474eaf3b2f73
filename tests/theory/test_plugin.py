"""The theorem-checker plugin (tests/conftest.py) and theory.report, end to end."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from theory import report

REPO = Path(__file__).resolve().parents[2]
FIXTURE = "tests/theory/plugin_fixture.py"


def _pytest(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "pytest", FIXTURE, "-p", "no:cacheprovider", "-q", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_theorem_option_selects_and_table_prints(tmp_path):
    js = tmp_path / "t.json"
    r = _pytest("--theorem", "T3", "--theorem-json", str(js))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed, 2 deselected" in r.stdout
    assert "theorem checker" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("T3 "))
    assert "✓" in row and "2/2" in row and "3.000e-15" in row
    data = json.loads(js.read_text())
    (t3,) = [t for t in data["theorems"] if t["theorem"] == "T3"]
    assert t3["examples"] == 3 and t3["worst_residual"] == 3e-15 and t3["symbolic"] is True
    assert t3["counterexamples"] == ["drop (a): spec {-1, 3}"] and t3["tests_passed"] == 2
    assert all(t["theorem"] != "T1" for t in data["theorems"])


def test_failures_are_counted_and_symbolic_cross_shown(tmp_path):
    js = tmp_path / "t.json"
    r = _pytest("--theorem-json", str(js))
    assert r.returncode == 1
    row = next(line for line in r.stdout.splitlines() if line.startswith("T1 "))
    assert "✗" in row and "1/2" in row
    (t1,) = [t for t in json.loads(js.read_text())["theorems"] if t["theorem"] == "T1"]
    assert t1["tests_failed"] == 1 and t1["symbolic"] is False


def test_unknown_theorem_id_is_a_usage_error():
    r = _pytest("--theorem", "T9")
    assert r.returncode == 4  # pytest usage error
    out = r.stdout + r.stderr
    assert "unknown id(s) ['T9']" in out and "T1" in out and "T6" in out and "L1" in out


def test_xdist_workers_are_merged(tmp_path):
    pytest.importorskip("xdist")
    js = tmp_path / "t.json"
    r = _pytest("-n", "2", "--theorem", "T3", "--theorem-json", str(js), timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    (t3,) = json.loads(js.read_text())["theorems"]
    assert t3["examples"] == 3 and t3["worst_residual"] == 3e-15 and t3["symbolic"] is True
    assert t3["tests_passed"] == 2 and t3["counterexamples"] == ["drop (a): spec {-1, 3}"]


def test_report_tally_semantics(monkeypatch):
    monkeypatch.setattr(report, "TALLY", {})
    report.record("T2", residual=1e-12)
    report.record("T2", residual=5e-13)
    report.record("T2", residual=0, examples=10)
    report.record("T2", symbolic=True)
    report.record("T2", symbolic=False)
    report.record("T2", symbolic=True)  # one failure sticks
    report.record("T2", counterexample="x")
    report.record("T2", counterexample="x")  # deduplicated
    report.record("T10", examples=2)
    report.record_outcome("T2", True)
    report.record_outcome("T2", False)
    (t2, t10) = report.table_rows()  # T2 before T10 (numeric order)
    assert t2["examples"] == 12 and t2["worst_residual"] == 1e-12 and t2["symbolic"] is False
    assert t2["counterexamples"] == ["x"] and (t2["tests_passed"], t2["tests_failed"]) == (1, 1)
    assert t10["theorem"] == "T10" and t10["examples"] == 2
    report.record("T2", residual=float("nan"))
    assert math.isnan(report.table_rows()[0]["worst_residual"])  # NaN is never hidden
    report.record("T2", residual=1.0)
    assert math.isnan(report.table_rows()[0]["worst_residual"])
    table = report.render_table()
    assert "T2" in table and "✗" in table and "nan" in table
