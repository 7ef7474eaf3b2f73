"""Test configuration: device option, Hypothesis profiles, and the theorem-checker plugin.

* ``--device cpu|cuda|auto`` (or env ``CONNWALK_DEVICE``): where numeric tests run (auto = cuda if
  available). Every test passes on CPU.
* Hypothesis profiles: ``ci`` (derandomized, 30 examples), ``dev`` (100), ``thorough`` (1000),
  ``mutation`` (derandomized, 15 examples, no shrinking, no database: used by scripts/mutation.sh,
  where a failing example only has to be found, never minimised).
  Chosen by ``--hypothesis-profile`` or env ``HYPOTHESIS_PROFILE``; default ``ci`` when ``CI`` is
  set, else ``dev``.
* ``@pytest.mark.theorem("T3")`` tags a test; ``pytest --theorem T3`` runs only those; at the end
  a table per theorem is printed (symbolic ✓/✗, property examples, worst residual, necessity
  counterexamples); ``--theorem-json PATH`` writes it as JSON. Works with pytest-xdist.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from theory import report as theorem_report

settings.register_profile(
    "ci", max_examples=30, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", max_examples=100, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "mutation", max_examples=15, derandomize=True, deadline=None, database=None, print_blob=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

KNOWN_IDS_FALLBACK = ["T1", "T2", "T3", "T4", "T5", "T6", "E1", "E2", "E3", "E4", "E5", "E6"]


def known_theorem_ids() -> list[str]:
    try:
        from theory.registry import THEOREMS  # type: ignore

        ids = [t.id for t in THEOREMS]
        return ids + [i for i in KNOWN_IDS_FALLBACK if i.startswith("E") and i not in ids]
    except Exception:
        return KNOWN_IDS_FALLBACK


def pytest_addoption(parser):
    parser.addoption("--device", default=None, help="device for numeric tests: cpu, cuda, cuda:N, auto")
    parser.addoption("--theorem", action="append", default=[], help="only run tests marked with this theorem id")
    parser.addoption("--theorem-json", default=None, help="write the theorem table as JSON to this path")


_IS_XDIST_WORKER = False


def pytest_configure(config):
    global _IS_XDIST_WORKER
    _IS_XDIST_WORKER = hasattr(config, "workerinput")
    dev = config.getoption("--device")
    if dev:
        os.environ["CONNWALK_DEVICE"] = dev
    wanted = config.getoption("--theorem")
    if wanted:
        known = known_theorem_ids()
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise pytest.UsageError(f"--theorem: unknown id(s) {unknown}; known ids: {', '.join(known)}")


def _theorem_ids(item) -> list[str]:
    return [m.args[0] for m in item.iter_markers("theorem") if m.args]


def pytest_collection_modifyitems(config, items):
    for item in items:
        for tid in _theorem_ids(item):
            item.user_properties.append(("theorem", tid))
    wanted = set(config.getoption("--theorem"))
    if wanted:
        keep, drop = [], []
        for item in items:
            (keep if wanted & set(_theorem_ids(item)) else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    if _IS_XDIST_WORKER:
        return  # counted once, in the controller (not via the env var: subprocesses inherit it)
    for key, value in report.user_properties:
        if key == "theorem":
            theorem_report.record_outcome(value, report.passed)


def pytest_sessionfinish(session, exitstatus):
    cfg = session.config
    if hasattr(cfg, "workeroutput"):
        cfg.workeroutput["theorem_tally"] = [
            {**r, "tests_passed": 0, "tests_failed": 0} for r in theorem_report.table_rows()
        ]
    path = cfg.getoption("--theorem-json")
    if path and not hasattr(cfg, "workerinput"):
        theorem_report.dump_json(path, exitstatus=int(exitstatus), only=cfg.getoption("--theorem") or None)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    rows = getattr(node, "workeroutput", {}).get("theorem_tally")
    if rows:
        theorem_report.merge(rows)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput") or not theorem_report.TALLY:
        return
    terminalreporter.section("theorem checker")
    terminalreporter.write_line(theorem_report.render_table(only=config.getoption("--theorem") or None))


@pytest.fixture
def device():
    from numerics.device import default_device

    return default_device()
