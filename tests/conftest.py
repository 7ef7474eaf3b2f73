"""Test configuration: device option, Hypothesis profiles, and the theorem-checker plugin.

* ``--device cpu|cuda|auto`` (or env ``CONNWALK_DEVICE``): where numeric tests run (auto = cuda if
  available). Every test passes on CPU.
* Hypothesis profiles: ``ci`` (derandomized, 30 examples), ``dev`` (100), ``thorough`` (1000),
  ``mutation`` (derandomized, 15 examples, no shrinking, no database: used by scripts/mutation.sh,
  where a failing example only has to be found, never minimised).
  Chosen by ``--hypothesis-profile`` or env ``HYPOTHESIS_PROFILE``; default ``ci`` when ``CI`` is
  set, else ``dev``.
* ``@pytest.mark.theorem("T3")`` tags a test, and so does the registry: every unmarked test in a
  file (or every test) a registry entry links (``theory.registry.linked_tests``) is tagged with that
  entry's id;
  ``pytest --theorem T3`` runs only those; at the end
  a table per theorem is printed (symbolic ✓/✗, property examples, worst residual, necessity
  counterexamples); ``--theorem-json PATH`` writes it as JSON. Works with pytest-xdist.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from theory import report as theorem_report

settings.register_profile(
    "ci",
    max_examples=30,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "mutation",
    max_examples=15,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

KNOWN_IDS_FALLBACK = ["T1", "T2", "T3", "T4", "T5", "T6", "E1", "E2", "E3", "E4", "E5", "E6"]
THEOREM_CHECKER = pytest.StashKey["TheoremChecker"]()


def known_theorem_ids() -> list[str]:
    try:
        from theory.registry import claim_ids, ids

        return ids() + claim_ids()
    except Exception:
        return KNOWN_IDS_FALLBACK


def pytest_addoption(parser):
    parser.addoption("--device", default=None, help="device for numeric tests: cpu, cuda, cuda:N, auto")
    parser.addoption("--theorem", action="append", default=[], help="only run tests marked with this theorem id")
    parser.addoption("--theorem-json", default=None, help="write the theorem table as JSON to this path")


class TheoremChecker:
    """The theorem-checker plugin: owns this session's :class:`theory.report.TheoremReport`
    (stored on the config, ``config.stash[THEOREM_CHECKER]``), makes it the active report while the
    session runs, counts outcomes of tagged tests, prints the table and writes ``--theorem-json``.
    Under pytest-xdist each worker has its own checker; the controller merges the workers' tallies
    (outcomes are counted in the controller only)."""

    def __init__(self, config) -> None:
        self.config = config
        self.report = theorem_report.TheoremReport()
        self.worker = hasattr(config, "workerinput")
        self._ctx = None

    def start(self) -> None:
        self._ctx = theorem_report.activate(self.report)
        self._ctx.__enter__()

    def stop(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        if self.worker:
            return  # counted once, in the controller
        for key, value in report.user_properties:
            if key == "theorem":
                self.report.record_outcome(value, report.passed)

    def pytest_sessionfinish(self, session, exitstatus):
        cfg = self.config
        if hasattr(cfg, "workeroutput"):
            cfg.workeroutput["theorem_tally"] = [
                {**r, "tests_passed": 0, "tests_failed": 0} for r in self.report.table_rows()
            ]
        path = cfg.getoption("--theorem-json")
        if path and not self.worker:
            self.report.dump_json(path, exitstatus=int(exitstatus), only=cfg.getoption("--theorem") or None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        rows = getattr(node, "workeroutput", {}).get("theorem_tally")
        if rows:
            self.report.merge(rows)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if self.worker or not self.report:
            return
        terminalreporter.section("theorem checker")
        terminalreporter.write_line(self.report.render_table(only=config.getoption("--theorem") or None))

    def pytest_unconfigure(self, config):
        self.stop()


def check_device_option(name: str) -> None:
    """``--device`` / ``CONNWALK_DEVICE`` checked once at the start: an unknown device, or cuda on a
    machine without CUDA, is one usage error (not one failure per test)."""
    from numerics.device import default_device
    from numerics.errors import ConnwalkError

    try:
        default_device(name)
    except (ConnwalkError, RuntimeError) as exc:
        raise pytest.UsageError(f"--device {name}: {exc}") from None


def pytest_configure(config):
    dev = config.getoption("--device")
    if dev:
        os.environ["CONNWALK_DEVICE"] = dev
    if dev or os.environ.get("CONNWALK_DEVICE"):
        check_device_option(dev or os.environ["CONNWALK_DEVICE"])
    wanted = config.getoption("--theorem")
    if wanted:
        known = known_theorem_ids()
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise pytest.UsageError(f"--theorem: unknown id(s) {unknown}; known ids: {', '.join(known)}")
    if not hasattr(config, "stash") or not hasattr(config, "pluginmanager"):
        return  # a bare config object (unit tests of this hook)
    checker = TheoremChecker(config)
    config.stash[THEOREM_CHECKER] = checker
    config.pluginmanager.register(checker, "theorem-checker")
    checker.start()


def _theorem_ids(item) -> list[str]:
    return [m.args[0] for m in item.iter_markers("theorem") if m.args]


def _registry_links() -> tuple[dict[str, set[str]], frozenset[str]]:
    try:
        from theory.registry import UNLINKED, linked_tests

        return linked_tests(), UNLINKED
    except Exception:  # pragma: no cover - a broken registry fails its own tests
        return {}, frozenset()


def pytest_collection_modifyitems(config, items):
    links, unlinked = _registry_links()
    for item in items:
        path = item.nodeid.split("::")[0]
        func = item.nodeid.split("[")[0]
        if func in unlinked or _theorem_ids(item):
            continue  # a test marked for given theorems is about those (its own marks are precise)
        for tid in sorted(links.get(path, set()) | links.get(func, set())):
            item.add_marker(pytest.mark.theorem(tid))  # the registry links this unmarked test to tid
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


@pytest.fixture
def device():
    from numerics.device import default_device

    return default_device()
