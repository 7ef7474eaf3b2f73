"""results.json names the report's own figures relative to the report, never by the temporary
directory's absolute path (that directory is renamed away when the report is complete)."""

from __future__ import annotations

import json
import re

from paper_checks.report import write_report


def test_figure_paths_are_relative_to_the_report(tmp_path):
    out = tmp_path / "rep"
    extra: dict = {"elsewhere": "/etc/hosts"}

    def figures(d):
        (d / "a.png").write_bytes(b"png")
        extra["figures"] = [str(d / "a.png")]  # as the E5/E6 figure writers record them
        return ["a.png"]

    write_report(out, [], {"seed": 0}, figures=figures, extra_json=extra)
    data = json.loads((out / "results.json").read_text())
    assert data["figures"] == ["a.png"]
    assert (out / data["figures"][0]).is_file()
    assert data["elsewhere"] == "/etc/hosts"  # paths outside the report are left as they are


def test_a_failure_while_swapping_puts_the_previous_report_back(tmp_path, monkeypatch):
    """The new files are renamed into an existing report one by one; a failure half-way (here the
    second rename of a new file) restores the previous report's files exactly, and leaves no temporary
    directory behind."""
    import os

    import pytest

    out = tmp_path / "rep"

    def draw(tag):
        def figures(d):
            (d / "a.png").write_bytes(tag)
            (d / "b.png").write_bytes(tag)
            return ["a.png", "b.png"]

        return figures

    write_report(out, [], {"seed": 0}, figures=draw(b"old"))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = os.rename
    calls = {"new": 0}

    def flaky(src, dst):
        if ".connwalk-tmp-" in str(src):
            calls["new"] += 1
            if calls["new"] == 2:
                raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "rename", flaky)
    with pytest.raises(OSError):
        write_report(out, [], {"seed": 1}, figures=draw(b"new"))
    monkeypatch.setattr(os, "rename", real)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    write_report(out, [], {"seed": 1}, figures=draw(b"new"))
    assert (out / "a.png").read_bytes() == b"new" and json.loads((out / "results.json").read_text())["config"] == {
        "seed": 1
    }


def test_every_figure_panel_has_axis_labels_and_lap_has_its_figure(tmp_path, monkeypatch):
    """Every drawn panel of every report figure (E1, E2, LAP, E5, E6) carries an x and a y label, and
    LAP draws one figure per model, listed in the report."""
    import matplotlib.figure

    import connwalk as cli

    missing = []
    real = matplotlib.figure.Figure.savefig

    def spy(fig, fname, *a, **k):
        for ax in fig.axes:
            drawn = ax.axison and (ax.lines or ax.patches or ax.collections)
            if drawn and not (ax.get_ylabel().strip() and ax.get_xlabel().strip()):
                missing.append((str(fname).rsplit("/", 1)[-1], ax.get_title()))
        return real(fig, fname, *a, **k)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    out = tmp_path / "rep"
    argv = ["paper-checks", "--out", str(out), "--models", "synthetic:enc", "--quick", "--no-progress"]
    assert cli.main([*argv, "--claims", "E1", "E2", "LAP", "E5", "E6", "--prompts", "3", "--length", "8"]) == 0
    assert missing == []
    assert (out / "lap_synthetic_enc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text()
    assert re.search(r"^!\[LAP per layer for synthetic:enc[^\]]*\]\(lap_synthetic_enc\.png\)$", md, re.M)
    assert "lap_synthetic_enc.png" in json.loads((out / "results.json").read_text())["files"]
