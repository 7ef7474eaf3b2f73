"""The suite under pytest-xdist (README's test command is ``python -m pytest -n auto``): each worker gets
its share of the cores; the README command and the CI gate agree. (That the outcome counts are the same
in one process and split across workers, in any order, is ``bash scripts/robustness.sh xdist``.)"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from tests.conftest import share_cores_among_workers

ROOT = Path(__file__).resolve().parents[1]


def test_each_worker_gets_its_share_of_the_cores(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
        assert share_cores_among_workers() is None
        assert torch.get_num_threads() == before
        for workers, want in ((1, cores), (cores, 1), (4 * cores, 1)):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
            monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(workers))
            assert share_cores_among_workers() == want
            assert torch.get_num_threads() == want
    finally:
        torch.set_num_threads(before)


def test_the_readme_test_command_is_the_ci_gates():
    readme = (ROOT / "README.md").read_text()
    cmd = re.search(r"^bash scripts/install\.sh && (python -m pytest[^\n]*)$", readme, re.M)
    assert cmd is not None and "-n auto" in cmd.group(1)
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/install.sh" in ci
    assert re.search(rf"^{re.escape(cmd.group(1))}$", ci, re.M), cmd.group(1)
