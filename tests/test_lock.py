"""The locked install (requirements.lock, scripts/lock.sh, scripts/install.sh): the lock is well formed,
satisfies pyproject's own requirements, agrees with the hand-chosen pins of constraints.txt and with the
committed census, and is what is installed — exactly, and closed under the installed distributions'
dependencies (scripts/lock_diff.py, which install.sh runs with --check)."""

from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"


def _lock_diff():
    spec = importlib.util.spec_from_file_location("lock_diff", ROOT / "scripts" / "lock_diff.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pins() -> dict[str, str]:
    return _lock_diff().read_lock(LOCK)


def test_the_lock_is_name_eq_version_lines_each_name_once():
    lines = [ln for ln in LOCK.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) >= 50  # the whole environment, not a handful of direct pins
    names = [canonicalize_name(ln.split("==")[0]) for ln in lines]
    assert len(names) == len(set(names))
    for ln in lines:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.!]*", ln), ln  # no ranges, no +local
        Version(ln.split("==")[1])


def test_the_lock_satisfies_pyproject_and_its_test_extra():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    for spec in [*meta["dependencies"], *meta["optional-dependencies"]["test"]]:
        req = Requirement(spec)
        name = canonicalize_name(req.name)
        assert name in pins, f"pyproject asks for {req.name}; the lock does not name it"
        assert req.specifier.contains(pins[name], prereleases=True), (spec, pins[name])


def test_the_hand_chosen_pins_are_the_locked_versions():
    pins = _pins()
    chosen = _lock_diff().read_lock(ROOT / "constraints.txt")
    assert {"torch", "transformers"} <= set(chosen)
    for name, version in chosen.items():
        assert pins.get(name) == version, (name, version, pins.get(name))


def test_the_committed_census_belongs_to_the_locked_transformers_and_torch():
    census = json.loads((ROOT / "census.json").read_text())
    pins = _pins()
    assert census["transformers_version"] == pins["transformers"], "regenerate: connwalk census"
    assert census["torch_version"].split("+")[0] == pins["torch"]
    assert f"transformers {pins['transformers']}, torch {pins['torch']}" in (ROOT / "CENSUS.md").read_text()


def test_the_committed_timm_census_belongs_to_the_locked_timm_and_torch():
    census = json.loads((ROOT / "census-timm.json").read_text())
    pins = _pins()
    assert census["timm_version"] == pins["timm"], "regenerate: connwalk census --library timm"
    assert census["torch_version"].split("+")[0] == pins["torch"]
    assert f"timm {pins['timm']}, torch {pins['torch']}" in (ROOT / "CENSUS-timm.md").read_text()


def test_the_installed_environment_is_the_lock_and_the_lock_is_closed():
    diff = _lock_diff().differences(_pins())
    assert diff == [], "the environment is not the locked one (bash scripts/install.sh):\n" + "\n".join(diff)


def test_lock_diff_reports_a_moved_version_a_missing_one_and_an_unlocked_dependency(tmp_path):
    mod = _lock_diff()
    pins = _pins()
    moved = dict(pins, numpy="0.0.1", **{"no-such-dist": "1.0"})
    del moved["filelock"]  # torch, transformers ... require it
    diff = mod.differences(moved)
    assert any(d.startswith("numpy: locked 0.0.1, installed ") for d in diff)
    assert "no-such-dist: locked 1.0, installed nothing" in diff
    assert any(d.endswith("requires filelock, which the lock does not name") for d in diff)
    lock = tmp_path / "x.lock"
    lock.write_text("numpy>=1\n")
    try:
        mod.read_lock(lock)
    except SystemExit as e:
        assert "not a `name==version` line" in str(e)
    else:
        raise AssertionError("a range in a lock was accepted")


def test_install_sh_installs_the_lock_exactly():
    text = (ROOT / "scripts" / "install.sh").read_text()
    assert "-r requirements.lock" in text
    assert "--no-deps --no-build-isolation -e ." in text  # the package adds no resolution of its own
    assert "lock_diff.py --check requirements.lock" in text
