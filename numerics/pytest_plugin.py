"""The theorem-checker pytest plugin, shipped with connwalk (entry point group ``pytest11``).

After ``pip install connwalk`` any project's pytest loads it (disable with
``-p no:numerics.pytest_plugin``); this repository's ``tests/conftest.py`` names it in
``pytest_plugins`` as well, which pytest skips when the entry point already loaded it.

* ``@pytest.mark.theorem("T3")`` tags a test (``theorem("T2", "T3")`` tags it with both) (the marker is registered here, so ``--strict-markers``
  accepts it); ``pytest --theorem T3`` runs only those tests; at the end a table per theorem is
  printed (symbolic ✓/✗, property examples, worst residual, necessity counterexamples, tests
  passed/failed); ``--theorem-json PATH`` writes it as JSON. Works with pytest-xdist. Tests record
  into the table with :func:`theory.report.record` (``record("T2", residual=r)``).
* ``pytest --theorem MINE`` for a statement registered outside connwalk (:mod:`theory.api`: an entry point
  in the group ``connwalk.theorems``, or ``register()`` in a conftest) also runs the gate on it
  (:func:`theory.gate.gate`: the property test generated from the statement, its generated mutants, the
  sharpness witness of every bound, the prose check) as one test ``gate[MINE]``, and shows the gate's
  verdict under its row of the table (``--theorem-json``: the row's ``"gate"``). connwalk's own ids
  select exactly the tests tagged with them, as before.
* ``--device cpu|cuda|cuda:N|auto`` (or env ``CONNWALK_DEVICE``): where numeric tests run; checked
  once at the start (an unknown device, or cuda without CUDA, is one usage error); the ``device``
  fixture returns the chosen ``torch.device``. torch is imported only when a device is asked for.
* Hypothesis profiles registered (select with Hypothesis' own ``--hypothesis-profile NAME``):
  ``ci`` (derandomized, 30 examples), ``dev`` (100), ``thorough`` (1000), ``mutation``
  (derandomized, 15 examples, no shrinking, no database). All have no deadline. The plugin
  registers them and loads none: which profile is the default is the project's choice.
* Strategies for inputs: :mod:`numerics.strategies`; a conformance check of any attention module:
  :mod:`numerics.conformance.kit`.

Torch-free at import (the plugin loads in every pytest run of an environment that has connwalk).
"""

from __future__ import annotations

import contextlib
import os

import pytest
from hypothesis import HealthCheck, Phase, settings

from theory import report as theorem_report

__all__ = [
    "PROFILES",
    "THEOREM_CHECKER",
    "TheoremChecker",
    "check_device_option",
    "known_theorem_ids",
    "register_profiles",
]

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]

#: The Hypothesis profiles the plugin registers: name → settings keyword arguments.
PROFILES: dict[str, dict] = {
    "ci": dict(max_examples=30, derandomize=True, deadline=None, print_blob=True, suppress_health_check=_SUPPRESS),
    "dev": dict(max_examples=100, deadline=None, print_blob=True, suppress_health_check=_SUPPRESS),
    "thorough": dict(max_examples=1000, deadline=None, print_blob=True, suppress_health_check=_SUPPRESS),
    "mutation": dict(
        max_examples=15,
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=False,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=_SUPPRESS,
    ),
}


def register_profiles() -> None:
    """Register :data:`PROFILES` with Hypothesis (idempotent; loads none of them)."""
    for name, kw in PROFILES.items():
        settings.register_profile(name, **kw)


register_profiles()

KNOWN_IDS_FALLBACK = ["T1", "T2", "T3", "T4", "T5", "T6", "E1", "E2", "E3", "E4", "E5", "E6"]
THEOREM_CHECKER = pytest.StashKey["TheoremChecker"]()
MARKER = "theorem(id): the test checks theorem/claim `id` of connwalk's THEOREMS.md (T1..T6, E1..E6, L1..L4)"


def known_theorem_ids() -> list[str]:
    try:
        from theory.registry import claim_ids, ids

        return ids() + claim_ids()
    except Exception:
        return KNOWN_IDS_FALLBACK


def registered_ids() -> list[str]:
    """The ids of the statements registered outside connwalk (entry points, conftests): ``--theorem``
    accepts them and runs the gate on each. A registration that does not load is a usage error."""
    from theory.errors import StatementError
    from theory.registry.external import all_statements

    own = set(known_theorem_ids())
    try:
        return [r.id for r in all_statements() if r.id not in own]
    except StatementError as exc:
        raise pytest.UsageError(f"--theorem: {exc}") from None


class GateFailed(Exception):
    """The gate did not pass a statement (its summary is the failure's text)."""


class GateItem(pytest.Item):
    """``gate[ID]``: the gate (:func:`theory.gate.gate`) on a statement registered outside connwalk."""

    def __init__(self, *, statement_id: str, **kw) -> None:
        super().__init__(**kw)
        self.statement_id = statement_id
        self.add_marker(pytest.mark.theorem(statement_id))

    def runtest(self) -> None:
        from theory.gate import gate

        rep = gate(self.statement_id)
        self.user_properties.append(("theorem_gate", rep.as_dict()))
        if not rep.passed:
            raise GateFailed(rep.summary())

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, GateFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"gate[{self.statement_id}]"


def pytest_addoption(parser):
    group = parser.getgroup("connwalk", "connwalk theorem checker")
    group.addoption("--device", default=None, help="device for numeric tests: cpu, cuda, cuda:N, auto")
    group.addoption("--theorem", action="append", default=[], help="only run tests marked with this theorem id")
    group.addoption("--theorem-json", default=None, help="write the theorem table as JSON to this path")


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
        self.session = None
        self._ctx: contextlib.AbstractContextManager | None = None

    def start(self) -> None:
        ctx = theorem_report.activate(self.report)
        ctx.__enter__()
        self._ctx = ctx

    def stop(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None

    def pytest_sessionstart(self, session):
        self.session = session  # the parent of the gate's test items (``gate[ID]``)

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        if self.worker:
            return  # counted once, in the controller
        for key, value in report.user_properties:
            if key == "theorem":
                self.report.record_outcome(value, report.passed)
            elif key == "theorem_gate":
                self.report.record_gate(value["id"], value)

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
    if hasattr(config, "addinivalue_line"):
        config.addinivalue_line("markers", MARKER)
    dev = config.getoption("--device")
    if dev:
        os.environ["CONNWALK_DEVICE"] = dev
    if dev or os.environ.get("CONNWALK_DEVICE"):
        check_device_option(dev or os.environ["CONNWALK_DEVICE"])
    wanted = config.getoption("--theorem")
    if wanted:
        known = known_theorem_ids()
        if any(w not in known for w in wanted):
            known = known + registered_ids()
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
    """Every id of every ``theorem`` marker (``theorem("T2", "T3")`` tags both)."""
    return [tid for m in item.iter_markers("theorem") for tid in m.args]


def _gate_items(config) -> list[GateItem]:
    """``gate[ID]`` for every ``--theorem`` id registered outside connwalk (checked at configure)."""
    own = set(known_theorem_ids())
    external = [sid for sid in dict.fromkeys(config.getoption("--theorem")) if sid not in own]
    checker = config.stash.get(THEOREM_CHECKER, None) if hasattr(config, "stash") else None
    session = getattr(checker, "session", None)
    if not external or session is None:
        return []
    return [GateItem.from_parent(session, name=f"gate[{sid}]", statement_id=sid) for sid in external]


def pytest_collection_modifyitems(config, items):
    items += _gate_items(config)
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
    """The ``torch.device`` chosen by ``--device`` / ``CONNWALK_DEVICE`` (default: cpu)."""
    from numerics.device import default_device

    return default_device()
