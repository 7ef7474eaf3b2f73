"""``connwalk`` answers at once and leaves the process as it found it (issue 30):

* ``--help`` of the command and of every subcommand, and argument errors, import no torch, SymPy or
  transformers (read from ``python -X importtime``, in a fresh interpreter);
* :func:`connwalk.main` run in-process restores torch's thread count, default dtype and RNG
  state, numpy's and Python's global RNG states and the warning filters;
* the constants the parsers spell out to stay import-free equal their homes.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import connwalk as cli

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sympy", "transformers")


def _subcommands() -> list[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def _importtime(argv: list[str], cwd: Path | None = None) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -X importtime -m connwalk ARGV``; the result and the top-level packages it
    imported (the importtime lines are removed from the returned stderr)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "connwalk", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    mods, rest = set(), []
    for line in r.stderr.splitlines():
        if line.startswith("import time:"):
            name = line.rsplit("|", 1)[-1].strip()
            mods.add(name.split(".")[0])
        else:
            rest.append(line)
    r.stderr = "\n".join(rest)
    return r, mods


def test_the_importtime_reader_sees_a_heavy_import():
    """The check below can fail: a command that does import torch (a patterns run's work) shows it."""
    r, mods = _importtime(["patterns", "--help"])
    assert "argparse" in mods or "paper_checks" in mods, mods
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import connwalk.patterns_work"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert any(line.rsplit("|", 1)[-1].strip() == "torch" for line in r.stderr.splitlines())


@pytest.mark.parametrize("sub", [None, *_subcommands()])
def test_help_imports_no_torch_sympy_transformers(sub):
    r, mods = _importtime([sub, "--help"] if sub else ["--help"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: connwalk"), r.stdout[:200]
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--bogus"], "required: COMMAND"),
        (["conform", "pkg.mod:f", "--bogus"], "unrecognized arguments: --bogus"),
        (["paper-checks", "--out", "o", "--sed", "1"], "unrecognized arguments"),
        (["conform"], "MODULE_OR_MODEL"),
        (["conform", "pkg.mod:f", "--examples", "abc"], "--examples"),
        (["conform", "pkg.mod:f", "--examples", "0"], "--examples: must be >= 1"),
        (["conform", "pkg.mod:f", "--examples", "100000000"], "--examples: must be <= 10000"),
        (["conform", "pkg.mod:f", "--max-length", "10000000"], "--max-length: must be <="),
        (["conform", "pkg.mod:f", "--max-batch", "0"], "--max-batch"),
        (["conform", "pkg.mod:f", "--layers", "-1"], "--layers"),
        (["conform", "pkg.mod:f", "--json", "{tmp}/missing/r.json"], "--json: the directory"),
        (["conform", "pkg.mod:f", "--json", "{tmp}"], "is a directory"),
        (["paper-checks", "--out", "{tmp}/o", "--seed", "-1"], "--seed: must be >= 0"),
        (["analyze", "minilm", "--threads", "0"], "--threads"),
        (["patterns", "--out", "{tmp}/p", "--n", "1"], "--n: must be >= 2"),
        (["patterns", "--out", "{tmp}/p", "--phase-grid", "1"], "--phase-grid"),
        (["patterns", "--out", "{tmp}/p", "--t-final", "0.01"], "--t-final"),
        (["paper-checks", "--out", "/proc/connwalk-report"], "--out"),
        (["analyze", "minilm", "--out", "/proc/connwalk-report"], "--out"),
        # misspelt names: checked against the stdlib-only lists (paper_checks.names, numerics.models.names)
        (["paper-checks", "--out", "{tmp}/o", "--models", "nosuch"], "--models: unknown model 'nosuch'"),
        (["paper-checks", "--out", "{tmp}/o", "--models", "minilm", "tiny:nosuch"], "--models: unknown tiny family"),
        (["paper-checks", "--out", "{tmp}/o", "--models", "synthetic:nosuch"], "--models: unknown synthetic model"),
        (["paper-checks", "--out", "{tmp}/o", "--models", "random:minilm"], "--models: 'random:minilm': null models"),
        (["paper-checks", "--out", "{tmp}/o", "--models", "{tmp}/m.gguf"], "--models: '{tmp}/m.gguf': no such GGUF"),
        (["paper-checks", "--out", "{tmp}/o", "--claims", "E9"], "--claims: unknown claim 'E9'; known claims: E1"),
        (["paper-checks", "--out", "{tmp}/o", "--claims", "laplacian", "E9"], "--claims: unknown claim 'E9'"),
        (["analyze", "nosuch"], "error: model: unknown model 'nosuch'"),
        (["analyze", "random:minilm"], "error: model: 'random:minilm': null models"),
        (["analyze", "synthetic:enc", "--claims", "E1", "E9"], "--claims: unknown claim 'E9'"),
        (["conform", "nosuch-model"], "MODULE_OR_MODEL: nosuch-model: unknown model 'nosuch-model'"),
        (["conform", "tiny:nosuch"], "MODULE_OR_MODEL: tiny:nosuch: no tiny config for 'nosuch'"),
        (["conform", "random:nosuch"], "MODULE_OR_MODEL: random:nosuch: unknown model 'nosuch'"),
        (["conform", "{tmp}/m.gguf"], "MODULE_OR_MODEL: {tmp}/m.gguf: {tmp}/m.gguf: no such GGUF file"),
    ],
)
def test_argument_errors_exit_2_with_one_line_and_no_heavy_import(argv, needle, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    needle = needle.replace("{tmp}", str(tmp_path))
    r, mods = _importtime(argv, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], lines
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["paper-checks", "--out", "{tmp}/o", "--models", "{tmp}/d"], "--models: '{tmp}/d': not a Hugging Face model"),
        (["analyze", "{tmp}/d"], "model: '{tmp}/d': not a Hugging Face model directory"),
        (["conform", "{tmp}/d"], "MODULE_OR_MODEL: {tmp}/d: {tmp}/d: not a Hugging Face model directory"),
    ],
)
def test_a_directory_that_is_not_a_model_is_refused_without_heavy_import(argv, needle, tmp_path):
    (tmp_path / "d").mkdir()
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    r, mods = _importtime(argv, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle.replace("{tmp}", str(tmp_path)) in lines[0], lines
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["d"]  # nothing written


FACTORIES = textwrap.dedent(
    """
    import random
    import warnings

    import numpy as np
    import torch

    def meddling():
        # a factory that changes every piece of process state an entry point must restore
        torch.set_default_dtype(torch.float64)
        torch.manual_seed(123)
        np.random.seed(123)
        random.seed(123)
        warnings.simplefilter("ignore")
        torch.set_num_threads(1)
        return torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    """
)


def _state():
    return (
        torch.get_num_threads(),
        torch.get_default_dtype(),
        torch.random.get_rng_state().clone(),
        np.random.get_state()[1].copy(),  # noqa: NPY002 (the global state is what is compared)
        random.getstate(),
        list(warnings.filters),
    )


def _same(a, b) -> list[str]:
    names = ("threads", "default dtype", "torch RNG", "numpy RNG", "python RNG", "warning filters")
    out = []
    for name, x, y in zip(names, a, b):
        eq = (
            torch.equal(x, y)
            if isinstance(x, torch.Tensor)
            else (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y)
        )
        if not eq:
            out.append(name)
    return out


@pytest.fixture
def meddling(tmp_path, monkeypatch):
    (tmp_path / "meddling_factories.py").write_text(FACTORIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("meddling_factories", None)
    threads = torch.get_num_threads()
    torch.set_num_threads(2 if threads == 1 else threads)  # so that the job's --threads 1 is a change
    yield tmp_path
    sys.modules.pop("meddling_factories", None)
    torch.set_num_threads(threads)


@pytest.mark.parametrize(
    "argv",
    [
        ["conform", "meddling_factories:meddling", "--examples", "2", "--no-hypotheses"],
        ["analyze", "synthetic:enc", "--prompts", "4", "--length", "12", "--null-seeds", "2", "--n-boot", "40"],
        ["patterns", "--out", "{tmp}/p", "--no-plots", "--phase-grid", "0", "--t-final", "2", "--dt", "0.05"],
    ],
)
def test_main_leaves_the_process_state_as_it_was(argv, meddling, capsys):
    argv = [a.replace("{tmp}", str(meddling)) for a in argv]
    before = _state()
    assert cli.main([*argv, "--no-progress"] if argv[0] != "patterns" else argv) == 0, capsys.readouterr().err
    assert _same(before, _state()) == []


def test_the_state_check_sees_a_change(meddling):
    """The comparison above can fail: the meddling factory, called outside an entry point, changes all six."""
    before = _state()
    np_state = np.random.get_state()  # noqa: NPY002
    try:
        import meddling_factories

        meddling_factories.meddling()
        assert _same(before, _state()) == [
            "threads",
            "default dtype",
            "torch RNG",
            "numpy RNG",
            "python RNG",
            "warning filters",
        ]
    finally:
        torch.set_default_dtype(before[1])
        torch.random.set_rng_state(before[2])
        warnings.filters[:] = before[5]
        random.setstate(before[4])
        np.random.set_state(np_state)  # noqa: NPY002


def test_spelt_out_constants_equal_their_homes():
    from connwalk import patterns
    from numerics.patterns.classify import MIN_SAMPLES
    from paper_checks.stats import SINK_TAU

    assert int(1 / SINK_TAU) + 1 == cli.MIN_LENGTH
    assert patterns.MIN_SAMPLES == MIN_SAMPLES


def test_the_name_lists_have_one_home():
    """The CLI checks names against the very lists the job, the registry and the model modules use (the
    stdlib-only name modules), not against copies."""
    from numerics.models import names as model_names
    from numerics.models import registry, tiny
    from paper_checks import laplacian_check, main_job, synthetic
    from paper_checks import names as job_names

    assert cli.CLAIM_NAMES is main_job.CLAIMS is job_names.CLAIMS
    assert main_job.check_claims is job_names.check_claims is cli.check_claims
    assert main_job.check_model_name is job_names.check_model_name is cli.check_model_name
    assert (laplacian_check.CLAIM, laplacian_check.ALIASES) == (job_names.LAP_CLAIM, job_names.LAP_ALIASES)
    assert laplacian_check.CLAIM in job_names.CLAIMS
    assert synthetic.CONFIGS is job_names.SYNTHETIC_CONFIGS
    assert registry.CHECKPOINTS is model_names.CHECKPOINTS
    assert tiny.TINY_FAMILIES is model_names.TINY_FAMILIES
