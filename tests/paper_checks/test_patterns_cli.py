"""``connwalk patterns``: stand-alone ``main(argv)``, registration on a parent parser, outputs, bad input."""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import pytest

from connwalk import patterns as patterns_cli


def test_ex1_summary_matches_the_reference_case(tmp_path, capsys):
    out = tmp_path / "ex1"
    rc = patterns_cli.main(
        ["--out", str(out), "--example", "ex1", "--t-final", "20", "--dt", "0.02", "--phase-grid", "3"]
    )
    assert rc == 0
    s = json.loads((out / "summary.json").read_text())
    p = s["prediction"]
    assert abs(p["k_star"]) == 7 and round(p["growth_rate"][0], 5) == 0.62926
    assert round(abs(p["growth_rate"][1]), 5) == 0.67486 and round(p["phase_velocity"], 3) == 0.982
    assert s["observed"]["label"] == "travelling wave" and s["observed"]["k"] == 7
    assert abs(s["observed"]["velocity"] - 0.982) <= 1e-2
    for f in ("dispersion.png", "spacetime.png", "phase.png"):
        assert (out / f).stat().st_size > 1000
    assert "k*=7" in capsys.readouterr().out


def test_registered_subcommand_runs_a_stack_with_observed_phase_diagram(tmp_path):
    parser = argparse.ArgumentParser(prog="connwalk")
    sub = parser.add_subparsers(dest="command")
    patterns_cli.add_parser(sub)
    out = tmp_path / "stack"
    args = parser.parse_args(
        [
            "patterns",
            "--out",
            str(out),
            "--n",
            "16",
            "--kernel",
            "3:1.5",
            "--transport",
            "blockrot:2.2,99",
            "--dynamics",
            "postnorm",
            "--eta",
            "2",
            "--layers",
            "30",
            "--phase-grid",
            "2",
            "--observe",
            "--t-final",
            "4",
            "--dt",
            "0.02",
            "--no-plots",
        ]
    )
    assert args.func(args) == 0
    s = json.loads((out / "summary.json").read_text())
    # oracle (numpy, from the definitions): kernel a(m) ∝ exp(−δ(m)²/(2·1.5²)), δ the ring offset of
    # m − 3; T = blockdiag(1, 2.2 R(99°)); one head, so μ(k) = â(k)·eig T; post-norm layer factor
    # |1 + h(μ − 1)|, h = η/(1+η); the stack selects argmax_|k| of the largest factor
    n, h = 16, 2 / 3
    m = np.arange(n)
    delta = np.mod(m - 3 + n / 2, n) - n / 2
    a = np.exp(-(delta**2) / (2 * 1.5**2))
    a /= a.sum()
    th = np.radians(99)
    lam = np.array([1.0, 2.2 * np.exp(1j * th), 2.2 * np.exp(-1j * th)])
    ahat = np.array([(a * np.exp(-2j * np.pi * k * m / n)).sum() for k in range(n)])
    factor = np.abs(1 + h * (ahat[:, None] * lam[None, :] - 1)).max(1)
    k_best = int(np.argmax(factor))
    assert s["stack_selection"]["k_star"] == min(k_best, n - k_best)
    pred, obs = np.array(s["phase"]["predicted"]), np.array(s["phase"]["observed"])
    assert pred.shape == obs.shape == (2, 2)
    assert s["phase"]["agreement"] == pytest.approx(float((pred == obs).mean()), abs=1e-12)
    assert not os.path.exists(out / "dispersion.png")


@pytest.mark.parametrize(
    "argv, arg",
    [
        (["--transport", "rot:1,2,3"], "--transport"),
        (["--kernel", "4"], "--kernel"),
        (["--kernel", "1:1", "--kernel", "2:1", "--transport", "diag:1,-3"], "--transport"),
        (["--n", "1"], "--n"),
        (["--phase-grid", "1"], "--phase-grid"),
    ],
)
def test_bad_input_exits_2_with_named_argument(tmp_path, capsys, argv, arg):
    rc = patterns_cli.main(["--out", str(tmp_path / "x"), "--no-plots", *argv])
    assert rc == 2
    err = capsys.readouterr().err
    assert arg in err and "error" in err
    assert not (tmp_path / "x" / "summary.json").exists()
