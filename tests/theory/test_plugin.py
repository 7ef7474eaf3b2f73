"""The theorem-checker plugin (numerics.pytest_plugin) and theory.report, end to end."""

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
    return subprocess.run(
        [sys.executable, "-m", "pytest", FIXTURE, "-p", "no:cacheprovider", "-q", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_end_to_end_table_and_json(tmp_path):
    """One real pytest run over the fixture: outcomes counted, ✓/✗, residuals, JSON artefact."""
    js = tmp_path / "t.json"
    r = _pytest("--theorem-json", str(js))
    assert r.returncode == 1, r.stdout + r.stderr  # the fixture has one deliberate failure
    assert "theorem checker" in r.stdout
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line[:2] in ("T1", "T3")}
    assert "✓" in rows["T3"] and "2/2" in rows["T3"] and "3.000e-15" in rows["T3"]
    assert "✗" in rows["T1"] and "1/2" in rows["T1"]
    data = {t["theorem"]: t for t in json.loads(js.read_text())["theorems"]}
    t3, t1 = data["T3"], data["T1"]
    assert t3["examples"] == 3 and t3["worst_residual"] == 3e-15 and t3["symbolic"] is True
    assert t3["counterexamples"] == ["drop (a): spec {-1, 3}"] and t3["tests_passed"] == 2
    assert t1["tests_failed"] == 1 and t1["tests_passed"] == 1 and t1["symbolic"] is False
    assert json.loads(js.read_text())["exitstatus"] == 1


def test_end_to_end_under_xdist(tmp_path):
    """Two xdist workers: each has its own report; the controller merges them and counts outcomes
    once, so the JSON artefact equals the serial run's."""
    js = tmp_path / "t.json"
    r = _pytest("-n", "2", "--theorem-json", str(js), timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    data = {t["theorem"]: t for t in json.loads(js.read_text())["theorems"]}
    assert (data["T3"]["examples"], data["T3"]["tests_passed"], data["T3"]["worst_residual"]) == (3, 2, 3e-15)
    assert (data["T1"]["tests_passed"], data["T1"]["tests_failed"], data["T1"]["symbolic"]) == (1, 1, False)
    assert data["T3"]["counterexamples"] == ["drop (a): spec {-1, 3}"]


def test_theorem_option_deselects_other_tests():
    import types

    import numerics.pytest_plugin as cf
    import tests.conftest as local

    def item(*ids, nodeid="tests/elsewhere/test_unlinked.py::test_x"):
        marks = [types.SimpleNamespace(args=(i,)) for i in ids]
        return types.SimpleNamespace(
            iter_markers=lambda name, m=marks: iter(m if name == "theorem" else []),
            add_marker=lambda mark, m=marks: m.append(types.SimpleNamespace(args=mark.args)),
            user_properties=[],
            nodeid=nodeid,
        )

    # the last item carries no marker, but the registry links its file to T3 (and T4)
    linked = item(nodeid="tests/numerics/test_markov.py::test_x[case]")
    size_limit = item(nodeid="tests/numerics/test_diagnose_dense.py::test_diagnose_size_limits_default_to_1024")
    items = [item("T3"), item("T1"), item(), item("T1", "T3"), linked, size_limit]
    deselected = []
    cfg = _FakeConfig(**{"--theorem": ["T3"]})
    cfg.hook = types.SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items))
    keep = list(items)
    local.pytest_collection_modifyitems(cfg, keep)  # this repository's registry links (tryfirst)
    cf.pytest_collection_modifyitems(cfg, keep)  # the plugin: user properties, --theorem selection
    assert keep == [items[0], items[3], linked] and deselected == [items[1], items[2], size_limit]
    assert items[3].user_properties == [("theorem", "T1"), ("theorem", "T3")]
    assert linked.user_properties == [("theorem", "T3"), ("theorem", "T4")]


def test_one_marker_with_several_ids_tags_each():
    """One marker naming T2 and T3 is selected by ``--theorem T3`` as well as by T2."""
    import types

    import numerics.pytest_plugin as cf

    mark = types.SimpleNamespace(args=("T2", "T3"))
    item = types.SimpleNamespace(
        iter_markers=lambda name: iter([mark] if name == "theorem" else []), user_properties=[], nodeid="t::x"
    )
    other = types.SimpleNamespace(iter_markers=lambda name: iter([]), user_properties=[], nodeid="t::y")
    deselected: list = []
    cfg = _FakeConfig(**{"--theorem": ["T3"]})
    cfg.hook = types.SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items))
    keep = [item, other]
    cf.pytest_collection_modifyitems(cfg, keep)
    assert keep == [item] and deselected == [other]
    assert item.user_properties == [("theorem", "T2"), ("theorem", "T3")]


class _FakeConfig:
    def __init__(self, **opts):
        self.opts = opts

    def getoption(self, name):
        return self.opts.get(name)


def test_unknown_theorem_id_is_a_usage_error():
    import numerics.pytest_plugin as cf

    with pytest.raises(pytest.UsageError) as ei:
        cf.pytest_configure(_FakeConfig(**{"--device": None, "--theorem": ["T3", "T9"]}))
    msg = str(ei.value)
    assert "unknown id(s) ['T9']" in msg and "T1" in msg and "T6" in msg and "L1" in msg and "E6" in msg
    cf.pytest_configure(_FakeConfig(**{"--device": None, "--theorem": ["T3", "L2", "E1"]}))  # accepted


def _checker(worker: bool, **opts):
    import numerics.pytest_plugin as cf

    cfg = _FakeConfig(**{"--theorem-json": None, "--theorem": [], **opts})
    if worker:
        cfg.workeroutput, cfg.workerinput = {}, {}
    return cf.TheoremChecker(cfg)


def test_xdist_worker_tallies_are_merged(tmp_path):
    """The xdist path without spawning workers: a worker's checker exports its report at session
    finish, the controller's checker merges it (outcomes are counted in the controller only)."""
    import types

    worker = _checker(True)
    with report.activate(worker.report):
        report.record("T3", residual=3e-15)
        report.record("T3", symbolic=True, counterexample="c1")
    worker.pytest_runtest_logreport(
        types.SimpleNamespace(when="call", passed=True, failed=False, user_properties=[("theorem", "T3")])
    )
    worker.pytest_sessionfinish(None, 0)
    rows = worker.config.workeroutput["theorem_tally"]
    assert rows[0]["tests_passed"] == 0  # not double counted
    js = tmp_path / "t.json"
    ctl = _checker(False, **{"--theorem-json": str(js)})
    with report.activate(ctl.report):
        report.record("T3", residual=1e-16, counterexample="c2")
    assert worker.report.table_rows()[0]["counterexamples"] == ["c1"]  # reports are separate objects
    ctl.pytest_runtest_logreport(
        types.SimpleNamespace(when="call", passed=True, failed=False, user_properties=[("theorem", "T3")])
    )
    ctl.pytest_testnodedown(types.SimpleNamespace(workeroutput={"theorem_tally": rows}), None)
    ctl.pytest_testnodedown(types.SimpleNamespace(workeroutput={"theorem_tally": rows}), None)  # 2nd worker
    (t3,) = ctl.report.table_rows()
    assert t3["examples"] == 3 and t3["worst_residual"] == 3e-15 and t3["symbolic"] is True
    assert t3["counterexamples"] == ["c2", "c1"] and t3["tests_passed"] == 1
    ctl.pytest_sessionfinish(None, 0)
    data = json.loads(js.read_text())
    assert (
        data["exitstatus"] == 0
        and data["theorems"][0]["title"] == "When the generator is a random-walk connection Laplacian"
    )
    assert [
        {k: v for k, v in r.items() if k not in ("title", "scopes")} for r in data["theorems"]
    ] == ctl.report.table_rows()


def test_record_goes_to_the_active_report_only():
    a, b = report.TheoremReport(), report.TheoremReport()
    with report.activate(a):
        report.record("T1", residual=1.0)
        with report.activate(b):
            report.record("T2", residual=2.0)
        report.record("T1", residual=3.0)
    assert [r["theorem"] for r in a.table_rows()] == ["T1"] and a.table_rows()[0]["examples"] == 2
    assert [r["theorem"] for r in b.table_rows()] == ["T2"]
    assert report.active() is not a and report.active() is not b


def test_report_tally_semantics(tmp_path):
    rep = report.TheoremReport()
    rep.record("T2", residual=1e-12)
    rep.record("T2", residual=5e-13)
    rep.record("T2", residual=0, examples=10)
    rep.record("T2", symbolic=True)
    rep.record("T2", symbolic=False)
    rep.record("T2", symbolic=True)  # one failure sticks
    rep.record("T2", counterexample="x")
    rep.record("T2", counterexample="x")  # deduplicated
    rep.record("T10", examples=2)
    rep.record_outcome("T2", True)
    rep.record_outcome("T2", False)
    (t2, t10) = rep.table_rows()  # T2 before T10 (numeric order)
    assert t2["examples"] == 12 and t2["worst_residual"] == 1e-12 and t2["symbolic"] is False
    assert t2["counterexamples"] == ["x"] and (t2["tests_passed"], t2["tests_failed"]) == (1, 1)
    assert t10["theorem"] == "T10" and t10["examples"] == 2
    assert [r["theorem"] for r in rep.table_rows(only=["T10"])] == ["T10"]  # --theorem filter
    assert "T2 " not in rep.render_table(only=["T10"])
    rep.record("T2", residual=float("nan"))
    assert math.isnan(rep.table_rows()[0]["worst_residual"])  # NaN is never hidden
    rep.record("T2", residual=1.0)
    assert math.isnan(rep.table_rows()[0]["worst_residual"])
    table = rep.render_table()
    assert "T2" in table and "✗" in table and "nan" in table
    # each conclusion's proof scope, from the registry
    assert "scope T2.walk: all n, d, H" in table and "scope T2.counterexample: exact" in table
    js = tmp_path / "t.json"
    rep.dump_json(str(js))
    assert json.loads(js.read_text())["theorems"][0]["worst_residual"] == "nan"  # strict JSON
    assert json.loads(js.read_text())["theorems"][0]["scopes"]["T2.walk"].startswith("all n, d, H")
    other = report.TheoremReport()
    other.merge(json.loads(js.read_text())["theorems"])  # a worker's "nan" string merges as NaN
    assert math.isnan(other.table_rows()[0]["worst_residual"])


def test_theorem_option_collects_the_registry_linked_implementation_tests():
    """`--theorem T3` collects the unmarked tests of T3's implementation test files (the edge
    cases of the functions T3 names), leaving out the one size-limit test the registry unlinks."""
    import os

    files = ["tests/numerics/test_markov.py", "tests/numerics/test_diagnose_dense.py"]
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--theorem", "T3", *files],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    ids = [line for line in r.stdout.splitlines() if "::" in line]
    assert any(i.startswith(files[0]) for i in ids) and any(i.startswith(files[1]) for i in ids), r.stdout[-2000:]
    assert not any("test_diagnose_size_limits_default_to_1024" in i for i in ids)
