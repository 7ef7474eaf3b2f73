"""What is local to this repository's tests; the theorem checker itself is the package's pytest
plugin :mod:`numerics.pytest_plugin` (``--theorem``, ``--theorem-json``, ``--device``, the
``theorem`` marker, the ``device`` fixture, the Hypothesis profiles ``ci``/``dev``/``thorough``/
``mutation``). Installed, connwalk registers it as a ``pytest11`` entry point under the name
``numerics.pytest_plugin``; ``pytest_plugins`` below loads it from the checkout otherwise (pytest
skips it when the entry point already did, so it is never registered twice).

Local policy:

* the default Hypothesis profile is env ``HYPOTHESIS_PROFILE``, else ``ci`` when ``CI`` is set, else
  ``dev`` (``--hypothesis-profile`` overrides it);
* ``--property-only`` (used by ``scripts/robustness.sh seeds``) keeps only the Hypothesis property
  tests: the seed-independent ones (derivations, fixed cases) decide the same under every seed;
* the registry tags this repository's tests too: every unmarked test in a file (or every test) that a
  registry entry links (``theory.registry.linked_tests``) gets that entry's ``theorem`` marker before
  the plugin reads the markers, so ``pytest --theorem T3`` runs everything the registry links to T3.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

pytest_plugins = ["numerics.pytest_plugin", "pytester"]  # pytester: tests of the plugin


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own hook, which applies --hypothesis-profile
def pytest_configure(config):
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser):
    parser.addoption(
        "--property-only", action="store_true", help="run only Hypothesis property tests (the seed-dependent ones)"
    )


# tests that search with hypothesis.find (necessity witnesses, statement mutants): seed-dependent too
FIND_SEARCHES = ("tests/numerics/test_necessity.py", "tests/theory/test_gate.py")


def _seed_dependent(item) -> bool:
    obj = getattr(item, "obj", None)
    return bool(getattr(obj, "is_hypothesis_test", False)) or item.nodeid.startswith(FIND_SEARCHES)


def _registry_links() -> tuple[dict[str, set[str]], frozenset[str]]:
    try:
        from theory.registry import UNLINKED, linked_tests

        return linked_tests(), UNLINKED
    except Exception:  # pragma: no cover - a broken registry fails its own tests
        return {}, frozenset()


@pytest.hookimpl(tryfirst=True)  # before the plugin's hook, which reads the markers and deselects
def pytest_collection_modifyitems(config, items):
    links, unlinked = _registry_links()
    for item in items:
        path = item.nodeid.split("::")[0]
        func = item.nodeid.split("[")[0]
        if func in unlinked or any(m.args for m in item.iter_markers("theorem")):
            continue  # a test marked for given theorems is about those (its own marks are precise)
        for tid in sorted(links.get(path, set()) | links.get(func, set())):
            item.add_marker(pytest.mark.theorem(tid))  # the registry links this unmarked test to tid
    if config.getoption("--property-only"):
        keep = [it for it in items if _seed_dependent(it)]
        drop = [it for it in items if it not in keep]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
