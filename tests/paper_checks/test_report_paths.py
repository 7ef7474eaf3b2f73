"""results.json names the report's own figures relative to the report, never by the temporary
directory's absolute path (that directory is renamed away when the report is complete)."""

from __future__ import annotations

import json

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
