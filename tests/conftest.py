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
  the plugin reads the markers, so ``pytest --theorem T3`` runs everything the registry links to T3;
* under pytest-xdist each worker gets its share of the cores (torch and BLAS threads), so ``-n auto``
  does not run two threads per core;
* order independence: ``--order reverse`` / ``--order shuffle --order-seed N`` (modules shuffled, and
  the tests within each) / ``--order interleave --order-seed N`` (every test shuffled) run the suite
  in another order (``scripts/robustness.sh order``); the default keeps the collected order;
* no test sees what an earlier one left behind: Hypothesis' pool of *local constants* (the literals
  of every imported project module, which Hypothesis ≥ 6.131 mixes into its draws — so what a search
  draws depended on which modules an earlier test had imported) is pinned empty; after each test the
  torch / numpy / ``random`` generators, the warning filters and the Hypothesis profile are restored,
  and a test that leaves torch's thread count or default dtype changed fails (an entry point must
  restore what it changes).
"""

from __future__ import annotations

import os
import random
import warnings

import numpy as np
import pytest
import torch
from hypothesis import settings

pytest_plugins = ["numerics.pytest_plugin", "pytester"]  # pytester: tests of the plugin


def pin_hypothesis_local_constants() -> bool:
    """Pin Hypothesis' pool of local constants empty; False if this Hypothesis has no such pool.

    Hypothesis ≥ 6.131 draws, with a small probability per choice, literal constants collected from
    every *imported* module outside site-packages (``providers._get_local_constants``). The pool then
    depends on which project modules earlier tests imported (and on every literal anyone adds to the
    code): the same derandomized search drew other instances after an in-process paper-checks run
    and missed a counterexample (issue 30). The literals of the code under test are no part of any
    statement checked here; Hypothesis' own global constants (NaN, ±0, boundaries) stay."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - an older Hypothesis: no local constants
        return False
    if not hasattr(providers, "_get_local_constants"):  # pragma: no cover
        return False
    empty = type(providers._local_constants)()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    return True


def share_cores_among_workers() -> int | None:
    """Under pytest-xdist, give each worker process its share of the cores: torch's intra-op threads and
    the BLAS pools (OpenBLAS / MKL, through threadpoolctl) at ``max(1, cores // workers)``. Two workers
    on two cores each running two threads would contend for the cores (4 threads on 2). Returns the
    threads per worker, or None outside xdist (the counts are left as they are)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not os.environ.get("PYTEST_XDIST_WORKER") or not workers:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    share = max(1, cores // max(1, int(workers)))
    torch.set_num_threads(share)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=share)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass
    return share


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own hook, which applies --hypothesis-profile
def pytest_configure(config):
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))
    pin_hypothesis_local_constants()
    share_cores_among_workers()


def pytest_addoption(parser):
    parser.addoption(
        "--property-only", action="store_true", help="run only Hypothesis property tests (the seed-dependent ones)"
    )
    parser.addoption(
        "--order",
        choices=("fixed", "reverse", "shuffle", "interleave"),
        default="fixed",
        help="test order: fixed (collected, the default), reverse, shuffle (modules, then the tests in each) "
        "or interleave (every test); with --order-seed",
    )
    parser.addoption("--order-seed", type=int, default=0, help="seed of --order shuffle / interleave (default 0)")


def pytest_report_header(config):
    order = config.getoption("--order")
    if order != "fixed":
        seed = f" --order-seed {config.getoption('--order-seed')}" if order in ("shuffle", "interleave") else ""
        return f"test order: --order {order}{seed}"
    return None


def _reorder(config, items) -> None:
    order, rng = config.getoption("--order"), random.Random(config.getoption("--order-seed"))
    if order == "reverse":
        items.reverse()
    elif order == "interleave":
        rng.shuffle(items)
    elif order == "shuffle":
        modules: dict[str, list] = {}
        for it in items:
            modules.setdefault(it.nodeid.split("::")[0], []).append(it)
        groups = list(modules.values())
        rng.shuffle(groups)
        for g in groups:
            rng.shuffle(g)
        items[:] = [it for g in groups for it in g]


_LEAKS = {
    "torch threads": torch.get_num_threads,
    "torch default dtype": torch.get_default_dtype,
}


@pytest.fixture(autouse=True)
def _global_state():
    """Each test starts from the state the previous one started from: the generators (torch, numpy's
    legacy global one, ``random``), the warning filters and the Hypothesis profile are restored after
    it; torch's thread count and default dtype must come back unchanged (an entry point that sets them
    restores them: the test fails otherwise, and the state is restored for the next one)."""
    before = {k: get() for k, get in _LEAKS.items()}
    rng = (torch.random.get_rng_state(), np.random.get_state(), random.getstate())  # noqa: NPY002 (restored)
    filters = list(warnings.filters)
    profile = settings.get_current_profile_name()
    yield
    after = {k: get() for k, get in _LEAKS.items()}
    torch.set_num_threads(before["torch threads"])
    torch.set_default_dtype(before["torch default dtype"])
    torch.random.set_rng_state(rng[0])
    np.random.set_state(rng[1])  # noqa: NPY002 (the legacy global generator, restored)
    random.setstate(rng[2])
    warnings.filters[:] = filters
    if settings.get_current_profile_name() != profile:
        settings.load_profile(profile)
    leaked = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not leaked, f"global state left changed by this test (before, after): {leaked}"


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
    _reorder(config, items)
    if config.getoption("--property-only"):
        keep = [it for it in items if _seed_dependent(it)]
        drop = [it for it in items if it not in keep]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
