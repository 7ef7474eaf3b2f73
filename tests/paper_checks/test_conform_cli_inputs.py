"""``connwalk conform`` on issue 36's inputs, as a user runs it (subprocesses, in a temporary working
directory): a ``.gguf`` of random bytes exits 2 naming the file before torch or transformers is
imported; a run leaves no ``.hypothesis/`` folder in the working directory; ``python -m
paper_checks.cli``, the path README documented, is the command; the command's ``--examples`` bound is
the kit's."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

GOOD = textwrap.dedent(
    """
    import torch

    def good():
        torch.manual_seed(0)
        return torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    """
)


def _env(tmp_path: Path, *paths: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in paths), str(REPO)])
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the command's Hypothesis cache: not the user's home
    return env


def _imported(importtime_stderr: str) -> set[str]:
    """The modules ``python -X importtime`` reports (``import time: self | cumulative | name``)."""
    out = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            out.add(line.rsplit("|", 1)[1].strip())
    return out


def test_a_gguf_of_random_bytes_exits_2_before_torch_is_imported(tmp_path):
    """On today's main the command imported torch and transformers (4 s) before the registry read the
    file's 4 magic bytes."""
    path = tmp_path / "model.gguf"
    path.write_bytes(random.Random(0).randbytes(4096))
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "connwalk", "conform", str(path), "--no-progress"],
        capture_output=True,
        text=True,
        cwd=work,
        env=_env(tmp_path),
        timeout=300,
    )
    errors = [line for line in r.stderr.splitlines() if not line.startswith("import time:")]
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(errors) == 1 and errors[0].startswith("connwalk: error: MODULE_OR_MODEL:"), errors
    assert str(path) in errors[0] and "GGUF" in errors[0] and "magic" in errors[0], errors[0]
    imported = _imported(r.stderr)
    assert "connwalk.conform" in imported  # the scan sees the command's imports
    assert not {"torch", "transformers"} & imported, sorted({"torch", "transformers"} & imported)


def test_conform_leaves_no_hypothesis_folder_in_the_working_directory(tmp_path):
    """Hypothesis writes its cache of local constants under ``./.hypothesis`` of the directory it was
    imported in; the command keeps it under ``$XDG_CACHE_HOME/connwalk/hypothesis``."""
    pkg, work = tmp_path / "pkg", tmp_path / "work"
    pkg.mkdir()
    work.mkdir()
    (pkg / "user_factories.py").write_text(GOOD)
    r = subprocess.run(
        [sys.executable, "-m", "connwalk", "conform", "user_factories:good", "--examples", "10", "--no-progress"],
        capture_output=True,
        text=True,
        cwd=work,
        env=_env(tmp_path, pkg),
        timeout=300,
    )
    assert r.returncode == 0 and "T2 HOLDS" in r.stdout, r.stdout + r.stderr
    assert sorted(p.name for p in work.iterdir()) == []
    assert not (pkg / ".hypothesis").exists() and not (REPO / "connwalk" / ".hypothesis").exists()


def test_python_m_paper_checks_cli_is_the_command(tmp_path):
    """README documented ``python -m paper_checks.cli``; it had gone when the command moved to connwalk."""
    r = subprocess.run(
        [sys.executable, "-m", "paper_checks.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: connwalk") and "conform" in r.stdout


def test_the_commands_examples_bound_is_the_kits():
    from connwalk.conform import MAX_EXAMPLES
    from numerics.conformance.bounds import MAX_EXAMPLES as KIT

    assert MAX_EXAMPLES == KIT
