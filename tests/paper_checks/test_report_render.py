"""The report as a reader meets it: valid Markdown tables, every figure shown with a caption in its
section, E3's unmeasured rows as one line, LAP rows whose words agree with their verdicts, no empty
axes, progress on stderr for every stage after the measurement, and a terminal summary instead of the
table.

One small job (two synthetic models, an encoder and a decoder, every claim, quick sizes) is run once
for the module; each test reads its report."""

from __future__ import annotations

import contextlib
import io
import json
import re
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paper_checks import laplacian_check as L
from paper_checks.formatting import md_row, md_rule
from paper_checks.verdict import INCONCLUSIVE, INSUFFICIENT_SCALE, NOT_REPRODUCED, REPRODUCED

MODELS = ["synthetic:enc", "synthetic:dec"]


# ------------------------------------------------------------------------------------------ oracle
def gfm_cells(line: str) -> list[str]:
    """The cells of a GitHub-flavoured-Markdown table row: split at every pipe not escaped by a
    backslash (code spans do not protect a pipe in GFM tables), the outer pipes removed."""
    body = line.strip()
    assert body.startswith("|"), line
    parts = re.split(r"(?<!\\)\|", body)
    parts = parts[1:]  # before the leading pipe
    if parts and parts[-1].strip() == "":
        parts = parts[:-1]  # after the trailing pipe
    return [p.strip() for p in parts]


def tables(md: str) -> list[list[str]]:
    """Every table of ``md``: maximal runs of lines starting with ``|``."""
    out, cur = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def test_the_cell_counter_sees_an_unescaped_pipe():
    """The checker itself: the LAP scale cell as it was (``|eigenvalue|`` unescaped) adds two cells;
    escaped it does not."""
    header = "| a | b | c |"
    assert len(gfm_cells(header)) == 3
    assert len(gfm_cells("| x | |eigenvalue|, against 1 | y |")) == 5
    assert len(gfm_cells(r"| x | \|eigenvalue\|, against 1 | y |")) == 3


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab |\n"), max_size=8), min_size=1, max_size=5))
def test_md_row_keeps_every_cell_a_peer_parser_reads_back(cells):
    """A peer parser (markdown-it-py, GFM tables) reads back exactly the cells :func:`md_row` was given
    (pipes escaped, line breaks as spaces, outer blanks trimmed as every renderer does), and the cell
    counter agrees with it."""
    from markdown_it import MarkdownIt

    md = "\n".join([md_row([f"h{i}" for i in range(len(cells))]), md_rule(len(cells)), md_row(cells)])
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    assert sum(t.type == "td_open" for t in tokens) == len(cells)
    body = [t.content for t in tokens if t.type == "inline"][len(cells) :]
    assert body == [c.replace("\n", " ").strip() for c in cells]
    assert [len(gfm_cells(line)) for line in md.splitlines()] == [len(cells)] * 3


# ------------------------------------------------------------------------------------------ the job
@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One job: its report directory, rows, stderr, each stage's progress calls and every saved
    figure's panels (axes on/off, data drawn, text)."""
    import matplotlib.figure

    from paper_checks import progress
    from paper_checks.main_job import JobConfig, run_job

    out = tmp_path_factory.mktemp("render") / "rep"
    panels: dict[str, list[dict]] = {}
    calls: dict[str, list[tuple[int, int]]] = {}
    real_save = matplotlib.figure.Figure.savefig
    real_update = progress.stage_bar.update

    def spy_save(fig, fname, *a, **k):
        panels[Path(str(fname)).name] = [
            {
                "on": ax.axison,
                "data": bool(ax.lines or ax.patches or ax.collections or ax.images),
                "text": " ".join(t.get_text() for t in ax.texts),
                "title": ax.get_title(),
            }
            for ax in fig.axes
        ]
        return real_save(fig, fname, *a, **k)

    def spy_update(self, done, total, what=""):
        calls.setdefault(self.desc, []).append((done, total))
        return real_update(self, done, total, what)

    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setattr(matplotlib.figure.Figure, "savefig", spy_save)
        mp.setattr(progress.stage_bar, "update", spy_update)
        cfg = JobConfig(models=list(MODELS), quick=True, n_prompts=3, length=8, progress=True)
        rows, _ = run_job(cfg, out, log=lambda *a, **k: None)
    return {"out": out, "rows": rows, "stderr": err.getvalue(), "panels": panels, "calls": calls}


def test_every_table_row_has_its_headers_cell_count(job):
    md = (job["out"] / "report.md").read_text()
    found = tables(md)
    assert len(found) >= 8  # summary, verdicts, E2 baselines, E1 trends, two LAP tables and two per-layer
    for t in found:
        n = len(gfm_cells(t[0]))
        assert len(t) >= 3, t[0]
        assert all(re.fullmatch(r":?-{3,}:?", c) for c in gfm_cells(t[1])), t[1]
        bad = [line for line in t[1:] if len(gfm_cells(line)) != n]
        assert bad == [], f"{t[0]!r}: {bad[:2]}"
    # the row that broke the LAP tables: its scale cell names the eigenvalue modulus, one cell
    sr = [line for line in md.splitlines() if line.startswith("| spectral_radius |")]
    assert len(sr) == 2 and all(len(gfm_cells(line)) == len(gfm_cells(L.TABLE_HEADER)) for line in sr)


def test_every_png_is_shown_in_its_section_with_a_caption(job):
    out = job["out"]
    md = (out / "report.md").read_text()
    lines = md.splitlines()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) >= 10  # e1, e2, lap per model; three E5 phase diagrams; E6(a), E6(b)
    headings = [(i, ln) for i, ln in enumerate(lines) if ln.startswith("#")]
    section_of = {}
    for name in pngs:
        hits = [i for i, ln in enumerate(lines) if re.fullmatch(rf"!\[([^\]]+)\]\({re.escape(name)}\)", ln)]
        assert len(hits) == 1, f"{name} shown {len(hits)} times"
        i = hits[0]
        alt = re.fullmatch(r"!\[([^\]]+)\]\(.*\)", lines[i]).group(1)
        assert alt.strip(), name
        caption = next(ln for ln in lines[i + 1 :] if ln.strip())
        assert re.fullmatch(r"\*Look for [^*]+\*", caption), (name, caption)
        section_of[name] = [h for j, h in headings if j < i]
    assert "## Figures" not in lines  # no bare list of files at the end

    def under(name, heading):
        return heading in section_of[name]

    def last(name):
        return section_of[name][-1]

    assert last("lap_synthetic_dec.png").startswith("### synthetic:dec (")  # under its model's LAP table
    assert last("lap_synthetic_enc.png").startswith("### synthetic:enc (")
    assert last("e1_synthetic_enc.png") == "## E1 depth trends"
    assert last("e2_synthetic_dec.png") == "## E2 transport baselines"
    assert all(last(n) == "## E5 phase diagrams" for n in pngs if n.startswith("e5_"))
    assert all(last(n) == "## E6 training curves" for n in pngs if n.startswith("e6"))
    alt = {n: re.search(rf"^!\[([^\]]+)\]\({re.escape(n)}\)$", md, re.M).group(1) for n in pngs}
    assert "synthetic:dec" in alt["lap_synthetic_dec.png"] and "synthetic:enc" in alt["e1_synthetic_enc.png"]
    assert under("lap_synthetic_dec.png", "## LAP: Laplacian reduction on real layers (T3 hypotheses and conclusions)")
    files = json.loads((out / "results.json").read_text())["files"]
    assert set(pngs) <= set(files)


def test_insufficient_scale_rows_are_one_line_per_claim(job):
    out = job["out"]
    data = json.loads((out / "results.json").read_text())
    e3 = [r for r in data["rows"] if r["claim"] == "E3"]
    assert len(e3) >= 2 and all(r["verdict"] == INSUFFICIENT_SCALE for r in e3)  # results.json keeps them all
    md = (out / "report.md").read_text()
    verdicts = md.split("## Verdicts", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in verdicts.splitlines() if INSUFFICIENT_SCALE in ln and ln.startswith("|")]
    assert len(lines) == 1
    cells = gfm_cells(lines[0])
    assert cells[0] == "E3" and "encoders: synthetic:enc" in cells[1] and "decoders: synthetic:dec" in cells[1]
    n_stats = len({r["statistic"] for r in e3})
    assert f"all {n_stats} statistics ({len(e3)} rows)" in cells[2] and "one size" in cells[2]
    assert not any(ln.startswith("- **E3 ") for ln in md.splitlines())  # no definitions of rows never computed
    summary = md.split("## Verdict summary", 1)[1].split("\n## ", 1)[0]
    e3_counts = next(gfm_cells(ln) for ln in summary.splitlines() if ln.startswith("| E3 |"))
    assert e3_counts[-1] == str(len(e3))  # the counts still count every row


#: the verdict each comparison text allows (the words of the "trained vs null" cell and the verdict
#: answer the same question)
AGREES = {
    L.COMPARISON_CLOSER: {REPRODUCED},
    L.COMPARISON_FARTHER: {NOT_REPRODUCED},
    L.COMPARISON_SAME: {NOT_REPRODUCED},
    L.COMPARISON_BOTH: {NOT_REPRODUCED},
    L.COMPARISON_OPEN: {INCONCLUSIVE},
    L.COMPARISON_UNDEF: {INCONCLUSIVE},
}


def test_lap_rows_read_without_contradiction(job):
    md = (job["out"] / "report.md").read_text()
    n = len(gfm_cells(L.TABLE_HEADER))
    rows = [gfm_cells(ln) for ln in md.splitlines() if ln.startswith("| ") and len(gfm_cells(ln)) == n]
    rows = [r for r in rows if r[0] in {s.id for s in L.SPECS}]
    assert len(rows) == 2 * len(L.SPECS)
    seen = set()
    for r in rows:
        comparison, verdict = r[-2], r[-1].strip("*")
        assert verdict in AGREES[comparison], r
        seen.add(comparison)
        if comparison == L.COMPARISON_BOTH:
            assert r[3] == "holds / holds" and comparison.startswith("not closer")
    assert L.COMPARISON_BOTH in seen  # softmax rows sum to 1 to rounding in both: the case is exercised


def test_no_empty_axes(job):
    """Every panel with axes shows data; a statistic a causal model does not have is text only."""
    panels = job["panels"]
    assert {"e1_synthetic_dec.png", "lap_synthetic_dec.png", "e2_synthetic_enc.png"} <= set(panels)
    empty = [(f, p["title"]) for f, ps in panels.items() for p in ps if p["on"] and not p["data"]]
    assert empty == []
    na = [p for p in panels["e1_synthetic_dec.png"] if "not applicable: causal" in p["text"]]
    assert len(na) == 1 and not na[0]["on"] and na[0]["title"] == "reversibility_defect"
    lap_na = [p for p in panels["lap_synthetic_dec.png"] if "not applicable: causal" in p["text"]]
    assert lap_na and all(not p["on"] for p in lap_na)
    assert not any("not applicable" in p["text"] for p in panels["e1_synthetic_enc.png"])


def test_every_stage_after_the_measurement_shows_progress(job):
    """After the measurement's bar: the verdicts, the figures, E5 and E6 each show a bar on stderr that
    starts at 0 of a known total and ends exactly at it (each step counted once)."""
    err = job["stderr"]
    order = ["paper checks:", "verdicts:", "figures:", "E5 phase sweep:", "E6 training:"]
    pos = [err.find(s) for s in order]
    assert all(p >= 0 for p in pos) and pos == sorted(pos), pos
    calls = job["calls"]
    for stage in ("verdicts", "figures", "E5 phase sweep", "E6 training"):
        c = calls[stage]
        assert c[0][0] == 0 and c[0][1] > 0, stage  # the total is known when the bar appears
        assert len({t for _, t in c}) == 1, stage
        assert c[-1][0] == c[-1][1], (stage, c[-1])
        assert all(b[0] >= a[0] for a, b in pairwise(c)), stage
        assert f"{stage}: 100%" in err


def test_terminal_summary_counts_verdicts_and_points_to_the_report(job):
    from paper_checks.report import terminal_summary

    rows, out = job["rows"], job["out"]
    text = terminal_summary(rows, out)
    lines = text.splitlines()
    claims = list(dict.fromkeys(r.claim for r in rows))
    assert len(lines) == len(claims) + 2  # heading, one line per claim, the path
    assert lines[-1].endswith(str(Path(out).resolve() / "report.md"))
    assert "|" not in text  # the table goes only to report.md
    data = json.loads((out / "results.json").read_text())["rows"]
    pattern = re.compile(rf"(\d+) ({NOT_REPRODUCED}|{REPRODUCED}|{INCONCLUSIVE}|{INSUFFICIENT_SCALE})(?=,| \()")
    for c in claims:
        line = next(ln for ln in lines if ln.split()[0] == c)
        got = {v: int(k) for k, v in pattern.findall(line)}
        want = {}
        for r in data:
            if r["claim"] == c:
                want[r["verdict"]] = want.get(r["verdict"], 0) + 1
        assert got == want, line
        assert line.endswith(f"({sum(want.values())} rows)")
