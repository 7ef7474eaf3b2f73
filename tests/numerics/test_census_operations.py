"""The census as an operation (issue 36, "Census operations"; issue 38's bookkeeping): the output
proved writable before any work, SIGINT / SIGTERM / a killed parent stop every worker within seconds
and write nothing, ``jobs`` capped, unknown or ill-typed model types and classes refused by name, the
budget in CPU time with ``timed out`` a status of its own (retried once alone), files written whole,
and the counts / count table / verdict mapping held exactly. Every case runs on fake classes or a
monkeypatched kit: seconds each, never the whole census."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

import numerics.census.run as census_run
from connwalk import main
from numerics.census.report import STATUSES, render_markdown, status_of
from numerics.census.run import CensusResult, CensusRow, check_class, max_jobs, run_census, write_census
from numerics.errors import ParameterError

ROOT = Path(__file__).resolve().parents[2]
TIMED_OUT = "timed out"  # the status literal: not imported, so that this file loads on the code before it


# --------------------------------------------------------------------------- helpers
def _no_census(*args, **kwargs):
    raise AssertionError("the census ran")


def _fake_report(**kw):
    """A kit report as verdict_of / status_of / hypotheses_of read it (no draws)."""
    base = dict(conforms=True, status="holds", results=[], dtype="float64", counterexample=None)
    base.update(kw)
    return types.SimpleNamespace(**base)


class _Capture:
    def __init__(self, *args, **kwargs):
        self.dtype = None


def _kit(monkeypatch, body):
    """check_class's kit replaced by ``body`` (the capture by a stand-in)."""
    import numerics.conformance.hf_capture as hf_capture
    import numerics.conformance.hf_torch  # noqa: F401 - imported first: it binds the real CaptureAdapter, never the stand-in
    import numerics.conformance.kit as kit

    monkeypatch.setattr(hf_capture, "CaptureAdapter", _Capture)
    monkeypatch.setattr(kit, "check_attention", lambda *a, **k: body())


def _burn(seconds: float):
    """Busy for up to ``seconds`` of wall time (a class that computes for ever, bounded so that a
    missing budget fails the test instead of hanging it)."""
    t0, x = time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        x += 1
    return _fake_report()


def _check(timeout: float) -> CensusRow:
    module = types.SimpleNamespace()
    return check_class(object(), module, family="fake", examples=1, seed=0, max_length=6, timeout=timeout)


# --------------------------------------------------------------------------- output proved writable
def test_out_that_cannot_be_written_exits_2_naming_it_before_any_work(tmp_path, monkeypatch, capsys):
    # DIR is a writable directory, but DIR/CENSUS.md cannot be written (a directory of that name): the
    # old up-front check passed it, ran the census and died on the write with a traceback (exit 1)
    monkeypatch.setattr(census_run, "run_census", _no_census)
    monkeypatch.setattr(census_run, "attention_classes", _no_census)
    out = tmp_path / "out"
    (out / "CENSUS.md").mkdir(parents=True)
    assert main(["census", "--out", str(out), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "CENSUS.md" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in out.iterdir()) == ["CENSUS.md"] and not list((out / "CENSUS.md").iterdir())


def test_write_census_is_whole_or_nothing(tmp_path):
    # the JSON cannot be written (its directory is missing): CENSUS.md keeps its old text, no temporary
    # file is left (before: CENSUS.md was already overwritten when the JSON write failed)
    old = "old census\n"
    (tmp_path / "CENSUS.md").write_text(old)
    res = CensusResult([CensusRow("XAttention", "x", "m", "conforms", "ok")], "t", "t", 0, 1, "today", 1.0, 1.0)
    with pytest.raises(OSError):
        write_census(res, tmp_path, tmp_path / "missing" / "census.json")
    assert (tmp_path / "CENSUS.md").read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CENSUS.md"]
    paths = write_census(res, tmp_path, tmp_path / "c.json")
    assert [p.name for p in paths] == ["CENSUS.md", "c.json"]
    assert "`XAttention`" in (tmp_path / "CENSUS.md").read_text()
    assert json.loads((tmp_path / "c.json").read_text())["rows"][0]["class"] == "XAttention"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CENSUS.md", "c.json"]


# --------------------------------------------------------------------------- signals and workers
#: a census of six fake classes whose work never ends, run by ``connwalk census --jobs 2``: each worker
#: leaves a mark (its pid) when it starts a task
DRIVER = """
import os, signal, sys, time
from pathlib import Path

signal.signal(signal.SIGINT, signal.default_int_handler)  # as on a terminal, even if started ignoring it
import numerics.census.run as run

marks = Path(sys.argv[1])


def classes(model_types=None):
    return [("fake", f"fake.modeling_{i}", f"Slow{i}Attention") for i in range(6)]


def rows(task):
    (marks / f"worker-{os.getpid()}").write_text("")
    time.sleep(600)
    return []


run.attention_classes, run._module_rows, run.max_jobs = classes, rows, lambda: 2
from connwalk import main

sys.exit(main(["census", "--out", sys.argv[2], "--jobs", "2", "--quiet"]))
"""


def _alive(pid: int) -> bool:
    """Running (a zombie is not: it holds no memory and runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.add(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def _census_with_busy_workers(tmp_path):
    """The driver started with both workers inside a task: ``(process, worker pids, out dir)``."""
    (tmp_path / "driver.py").write_text(DRIVER)
    marks, out = tmp_path / "marks", tmp_path / "out"
    marks.mkdir()
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(marks), str(out)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the test's cleanup reaches every process of it
    )
    deadline = time.monotonic() + 180
    while len(list(marks.iterdir())) < 2:
        if proc.poll() is not None:
            pytest.fail(f"the census ended before its workers started: {proc.communicate()}")
        if time.monotonic() > deadline:
            _kill_group(proc)
            pytest.fail("the workers did not start in 180 s")
        time.sleep(0.05)
    workers = {int(p.name.split("-")[1]) for p in marks.iterdir()}
    assert workers <= _children(proc.pid)
    return proc, _children(proc.pid) | workers, out


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.communicate()


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return {p for p in pids if _alive(p)}


@pytest.mark.parametrize(
    ("sig", "code", "group"),
    [(signal.SIGTERM, 143, False), (signal.SIGINT, 130, True)],
    ids=["SIGTERM", "SIGINT-to-the-group"],
)
def test_a_signal_stops_the_census_and_its_workers_within_seconds_writing_nothing(tmp_path, sig, code, group):
    proc, children, out = _census_with_busy_workers(tmp_path)
    try:
        t0 = time.monotonic()
        if group:  # Ctrl-C on a terminal: the whole foreground group gets it, workers included
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{sig.name}: still running 15 s later")
        assert time.monotonic() - t0 < 15
        assert proc.returncode == code, err.decode()[-2000:]
        assert _gone_within(children, 5) == set()
        assert list(out.iterdir()) == []  # no CENSUS.md, no temporary file
    finally:
        _kill_group(proc)


def test_the_workers_die_with_their_parent(tmp_path):
    proc, children, _ = _census_with_busy_workers(tmp_path)
    try:
        os.kill(proc.pid, signal.SIGKILL)  # no handler runs: the workers must notice by themselves
        proc.communicate(timeout=30)
        assert _gone_within(children, 10) == set()
    finally:
        _kill_group(proc)
        for pid in children:  # a leftover of a failing run: not left to run on
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --------------------------------------------------------------------------- arguments
@pytest.fixture
def no_classes(monkeypatch):
    """No class to run (the arguments are the subject): a run that gets past its checks returns at once."""
    monkeypatch.setattr(census_run, "attention_classes", lambda model_types=None: [])


@pytest.mark.parametrize("jobs", [0, -1, True, 1.5, "2", None, "cap+1", "cap*64"])
def test_jobs_is_an_integer_from_1_to_the_cpus(no_classes, jobs):
    jobs = {"cap+1": max_jobs() + 1, "cap*64": 64 * max_jobs()}.get(jobs, jobs) if isinstance(jobs, str) else jobs
    with pytest.raises(ParameterError) as info:
        run_census(jobs=jobs)
    assert info.value.argument == "jobs"


def test_jobs_up_to_the_cpus_is_taken(no_classes):
    assert run_census(jobs=max_jobs()).jobs == max_jobs()


def test_census_command_refuses_more_jobs_than_cpus(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(census_run, "run_census", _no_census)
    assert main(["census", "--out", str(tmp_path), "--jobs", str(max_jobs() + 1), "--quiet"]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("timeout", [True, False, 0, -1, math.nan, math.inf, "5", None])
def test_timeout_is_a_positive_finite_number(no_classes, timeout):
    with pytest.raises(ParameterError) as info:
        run_census(timeout=timeout)
    assert info.value.argument == "timeout"


@pytest.mark.parametrize(
    ("argument", "value"),
    [
        ("model_types", "bert"),
        ("model_types", b"bert"),
        ("model_types", [1]),
        ("model_types", []),
        ("model_types", [""]),
        ("model_types", {"bert": 1}),
        ("classes", "BertAttention"),
        ("classes", [None]),
        ("classes", ()),
    ],
)
def test_model_types_and_classes_are_lists_of_names(no_classes, argument, value):
    with pytest.raises(ParameterError) as info:
        run_census(**{argument: value})
    assert info.value.argument == argument


def test_attention_classes_refuses_a_string_and_unknown_model_types():
    from numerics.census.config import attention_classes

    with pytest.raises(ParameterError) as info:
        attention_classes("bert")
    assert info.value.argument == "model_types"
    with pytest.raises(ParameterError) as info:
        attention_classes(["gpt2", "nope"])
    assert info.value.argument == "model_types" and "'nope'" in str(info.value) and "gpt2" not in str(info.value)


def test_unknown_model_types_and_classes_are_named(monkeypatch):
    with pytest.raises(ParameterError) as info:
        run_census(model_types=["gpt2", "nope", "nada"])
    assert info.value.argument == "model_types" and "'nope'" in str(info.value) and "'nada'" in str(info.value)
    ran = []
    monkeypatch.setattr(census_run, "_module_rows", lambda task: ran.append(task) or [])
    with pytest.raises(ParameterError) as info:
        run_census(model_types=["gpt2"], classes=["GPT2Attention", "NoSuchAttention"])
    assert info.value.argument == "classes" and "'NoSuchAttention'" in str(info.value)
    assert "GPT2Attention" not in str(info.value) and ran == []  # refused before any class ran


@pytest.mark.parametrize(
    ("argv", "option", "name"),
    [
        (["--model-types", "nope"], "--model-types", "nope"),
        (["--model-types", "gpt2", "--classes", "NoSuchAttention"], "--classes", "NoSuchAttention"),
    ],
)
def test_census_command_exits_2_naming_unknown_model_types_and_classes(tmp_path, capsys, argv, option, name):
    assert main(["census", *argv, "--out", str(tmp_path), "--jobs", "1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"connwalk: error: {option}: ") and name in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- the budget
def test_a_class_that_computes_past_its_budget_is_timed_out_in_cpu_time(monkeypatch):
    monkeypatch.setattr(census_run, "WALL_FACTOR", 1000)  # only the CPU budget can stop it here
    _kit(monkeypatch, lambda: _burn(20.0))
    t0 = time.monotonic()
    row = _check(0.2)
    assert time.monotonic() - t0 < 10
    assert row.status == TIMED_OUT and row.reason == "timed out after 0.2 s CPU", row
    assert row.hypotheses == {} and row.cls == "SimpleNamespace" and row.family == "fake"


def test_a_class_that_waits_is_not_timed_out_by_the_wall_clock_alone(monkeypatch):
    # 0.4 s of waiting (a loaded machine, a lock) on a budget of 0.2 s CPU: judged, not timed out
    def slow():
        time.sleep(0.4)
        return _fake_report()

    _kit(monkeypatch, slow)
    row = _check(0.2)
    assert row.status == "conforms", row


def test_a_class_blocked_without_cpu_is_stopped_at_its_wall_backstop(monkeypatch):
    def blocked():
        time.sleep(20.0)
        return _fake_report()

    _kit(monkeypatch, blocked)
    t0 = time.monotonic()
    row = _check(0.05)
    assert time.monotonic() - t0 < 10
    assert row.status == TIMED_OUT and "wall" in row.reason and "0.05 s CPU" in row.reason, row


def test_the_budget_leaves_a_callers_timer_and_handler_as_they_were(monkeypatch):
    _kit(monkeypatch, _fake_report)
    fired = []
    old = signal.signal(signal.SIGALRM, lambda s, f: fired.append(s))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        assert _check(5.0).status == "conforms"
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left <= 0.5
        time.sleep(left + 0.2)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_a_family_build_past_its_budget_times_its_classes_out(monkeypatch):
    import numerics.census.config as config

    monkeypatch.setattr(config, "build_tiny", lambda *a, **k: _burn(20.0))
    monkeypatch.setattr(census_run, "WALL_FACTOR", 1000)
    mod = "transformers.models.gpt2.modeling_gpt2"
    rows = census_run._module_rows((mod, [("gpt2", mod, "GPT2Attention")], 1, 0, 6, 0.1))
    assert [(r.cls, r.status) for r in rows] == [("GPT2Attention", TIMED_OUT)]
    assert rows[0].reason == "timed out after 0.1 s CPU building the tiny model of gpt2"


def test_a_timed_out_class_is_retried_once_alone_after_the_others(monkeypatch):
    todo = [("fake", "fake.a", "AAttention"), ("fake", "fake.a", "BAttention"), ("fake", "fake.c", "CAttention")]
    calls = []

    def rows(task):
        modname, items = task[0], task[1]
        calls.append((modname, [i[2] for i in items]))
        out = []
        for mt, _, name in items:
            late = name == "CAttention" or (name == "AAttention" and len(calls) <= 2)
            out.append(CensusRow(name, mt, modname, TIMED_OUT if late else "conforms", "timed out after 1 s CPU"))
        return out

    monkeypatch.setattr(census_run, "attention_classes", lambda model_types=None: list(todo))
    monkeypatch.setattr(census_run, "_module_rows", rows)
    seen = []
    res = run_census(progress=lambda r: seen.append(r.cls))
    assert calls == [
        ("fake.a", ["AAttention", "BAttention"]),
        ("fake.c", ["CAttention"]),
        ("fake.a", ["AAttention"]),  # the retries: only the classes that ran out, one task at a time
        ("fake.c", ["CAttention"]),
    ]
    assert {r.cls: r.status for r in res.rows} == {
        "AAttention": "conforms",
        "BAttention": "conforms",
        "CAttention": TIMED_OUT,
    }
    assert next(r.reason for r in res.rows if r.cls == "CAttention").endswith("(and again when retried alone)")
    assert sorted(seen) == ["AAttention", "BAttention", "CAttention"]  # each row reported once, final
    assert res.counts()[TIMED_OUT] == 1


def test_census_help_states_the_exit_codes_and_the_budget(capsys):
    from connwalk.census import EPILOG

    with pytest.raises(SystemExit) as info:
        main(["census", "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for code in (
        "0 the census ran",
        "2 bad input",
        "130 stopped by SIGINT",
        "143 stopped by SIGTERM",
        "1 an unexpected",
    ):
        assert code in out, code
    assert "unknown --model-types or --classes" in out and "more --jobs than CPUs" in out
    assert f"after {census_run.WALL_FACTOR} times that in wall time" in " ".join(EPILOG.split())
    assert "timed out" in out and "CPU seconds per model build and per class" in out


# --------------------------------------------------------------------------- bookkeeping (issue 38)
#: one synthetic census: a different number of rows for each status, so that a count under another
#: label, or a status counted under two labels, changes the numbers
PER_STATUS = {
    "conforms": 6,
    "identity holds, hypothesis fails": 5,
    "fails": 4,
    "undecided": 3,
    TIMED_OUT: 2,
    "declined": 1,
}


def _synthetic() -> CensusResult:
    rows = [
        CensusRow(f"{s.split()[0].title()}{i}Attention", f"fam{j}", "m", s, "why")
        for j, (s, n) in enumerate(PER_STATUS.items())
        for i in range(n)
    ]
    return CensusResult(rows, "t", "t", 0, 1, "today", 1.0, 1.0)


def test_counts_count_each_row_under_its_own_status_once():
    res = _synthetic()
    assert set(STATUSES) == set(PER_STATUS)
    assert res.counts() == PER_STATUS
    assert sum(res.counts().values()) == len(res.rows)


def test_only_conforming_rows_make_a_family_conform():
    res = _synthetic()
    assert res.conforming_families() == ["fam0"]  # fam3's rows are undecided, fam1's fail a hypothesis


def test_status_of_maps_each_verdict_to_its_own_status():
    from numerics.conformance.kit import Verdict

    assert status_of(_fake_report())[0] == "conforms"
    assert status_of(_fake_report(status="undecided"))[0] == "undecided"
    assert status_of(_fake_report(verdict="undecided"))[0] == "undecided"
    assert status_of(_fake_report(conforms=False, status="fails"))[0] == "fails"
    t2 = types.SimpleNamespace(residual=1e-17, bound=1e-12)
    sink = types.SimpleNamespace(t2=t2, t3={"a stochastic": Verdict("fails", 0.3, 1e-12)})
    assert status_of(_fake_report(results=[sink]))[0] == "identity holds, hypothesis fails"


def test_the_count_table_labels_each_count_with_its_status():
    md = render_markdown(_synthetic())
    table = md.split("## Counts", 1)[1].split("\n\n", 2)[1].splitlines()
    assert table[:2] == ["| status | classes |", "|---|---:|"]
    assert table[2:] == [f"| {s} | {PER_STATUS[s]} |" for s in STATUSES]
    assert "## Timed out" in md and "`Timed0Attention` (fam4)" in md


def test_the_committed_counts_are_the_rows_counted_once_each():
    committed = json.loads((ROOT / "census.json").read_text())
    md = (ROOT / "CENSUS.md").read_text()
    rows = committed["rows"]
    assert all(r["status"] in STATUSES for r in rows)
    table = [line for line in md.split("## Counts", 1)[1].split("\n\n", 2)[1].splitlines()[2:]]
    for s in STATUSES:
        n = sum(r["status"] == s for r in rows)
        if s in committed["counts"]:
            assert committed["counts"][s] == n and f"| {s} | {n} |" in table, s
        else:  # a status added after this census was made: none of its rows has it, its table no line
            assert n == 0 and not any(line.startswith(f"| {s} |") for line in table), s
    assert len(table) == len(committed["counts"]) and sum(committed["counts"].values()) == len(rows)


def test_an_undecided_row_says_whether_the_band_or_the_evidence_left_it_open():
    """A class whose identity held on every draw, but on none that determines A (more real keys than
    its heads can tell apart), is undecided for that reason, not for a rounding band it never met."""
    from numerics.conformance.kit import check_attention
    from tests.numerics.test_conformance_evidence import NarrowHeads

    rep = check_attention(NarrowHeads(wrong=False), examples=3, min_length=3, max_length=6, hypotheses=False)
    assert rep.verdict == "undecided" and all(r.t2.status == "holds" for r in rep.results)
    status, reason, _, _ = status_of(rep)
    assert status == "undecided" and "0 of 4 draws identifying" in reason and "rounding band" not in reason
    banded = types.SimpleNamespace(status="undecided", residual=1.0, bound=1.0)
    fake = _fake_report(status="undecided", results=[types.SimpleNamespace(t2=banded, t3={})])
    assert status_of(fake)[1] == "T2 undecided within the rounding band on some draw"
