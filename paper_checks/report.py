r"""The report directory: ``report.md``, ``results.json`` and PNG figures, written atomically.

:func:`write_report` builds everything in a sibling temporary directory and then swaps it into
place (rename), so an interrupted or failed run never leaves a half-written report at ``out``:
``out`` holds either the previous complete report or the new complete one.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from numerics.errors import ConnwalkError
from paper_checks import captions
from paper_checks.formatting import fmt, fmt_ci, fmt_sig, md_row, md_rule
from paper_checks.verdict import INSUFFICIENT_SCALE, VERDICTS, StatResult


class OutputPathError(ConnwalkError, ValueError):
    """The output directory cannot be used (it is a file, or its parent is not writable)."""


def _millions(n_params) -> str:
    """Parameters in millions as the E3 rows print them (22.7M → ``23M``); below 1M, two digits."""
    return f"{n_params / 1e6:.0f}M" if n_params >= 1e6 else f"{n_params / 1e6:.2g}M"


def caveats(models: dict | None = None) -> list[str]:
    """The 'how to read this' caveats; the size range is that of the models that ran (``models``:
    ``results.json["models"]``, name → info with ``n_params``), printed as the E3 rows print it."""
    sizes = sorted(int(v["n_params"]) for v in (models or {}).values() if int(v.get("n_params") or 0) > 0)
    if not sizes:
        span = "no pretrained model ran here, so no scale range at all"
    elif sizes[0] == sizes[-1]:
        who = "the one model here has" if len(sizes) == 1 else f"the {len(sizes)} models here all have"
        span = f"{who} {_millions(sizes[0])}, no range at all"
    else:
        span = f"the models here span {_millions(sizes[0])} → {_millions(sizes[-1])}, a far smaller range"
    return [
        "Intervals are 95% percentile bootstraps over prompts (and over null seeds × prompts, or heads / "
        "layers for weight statistics). They do **not** cover variation across models, checkpoints or "
        "training runs: a verdict describes these checkpoints on this corpus, not transformers in general.",
        f"The paper's scale range is 124M → 8B parameters; {span}. The loaders accept any larger local "
        "Hugging Face directory or GGUF file (`connwalk paper-checks --models /path/to/model ...`).",
        "Null model = `random:<same architecture>`: the same architecture with a seeded random "
        "initialisation, run on the same prompts.",
    ]


def title(config: dict, rows: list[StatResult]) -> str:
    """The report's title: the claims that ran (``config["claims"]``, else those with rows)."""
    claims = list(config.get("claims") or dict.fromkeys(r.claim for r in rows))
    return "# connwalk paper checks: " + (", ".join(map(str, claims)) if claims else "no claims")


#: ``results.json["schema"]`` of every report this suite writes: the marker that lets ``--out`` reuse
#: an existing directory (one without it is never touched)
SCHEMA = "connwalk.paper-checks.report/1"

#: the files of a report that are always there (the figures and ``timings.json`` vary with the run)
FIXED_FILES = ("report.md", "results.json")
#: wall-clock seconds per stage: the one file of a report that differs between runs of the same seed
TIMINGS_FILE = "timings.json"
#: names of the suite's own work in progress inside ``--out`` (a temporary report, the previous one
#: set aside during the swap); never listed as the user's files, never taken for a report file
WORK_PREFIX = ".connwalk-"


def _plain_name(x) -> bool:
    return isinstance(x, str) and x not in ("", ".", "..") and "/" not in x and os.sep not in x and "\\" not in x


def report_manifest(p: Path) -> set[str] | None:
    """The files a previous report at ``p`` says it wrote, or None when ``p`` holds no report of this
    suite (no ``results.json`` with :data:`SCHEMA`).

    Reports since the manifest list their files in ``results.json["files"]``; an older report's are
    its fixed files plus the figures its ``report.md`` shows (``![f](f)`` or ``![caption](f)``). Only plain names in ``p``
    count (a listed ``../x`` or ``a/b`` is ignored, never deleted)."""
    try:
        with open(p / "results.json", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    files = data.get("files")
    if isinstance(files, list):
        names = set(files)
    else:
        names = set(FIXED_FILES)
        try:
            md = (p / "report.md").read_text(encoding="utf-8")
        except (OSError, ValueError):
            md = ""
        # the images report.md shows: ![f](f) in the oldest reports, ![caption](f) since captions
        names |= {m.group(1) for m in re.finditer(r"!\[[^\]]*\]\(([^)\s]+)\)", md)}
    return {n for n in names if _plain_name(n)} | {"results.json"}


def is_report_dir(p: Path) -> bool:
    """``p`` is a report directory written by this suite (its ``results.json`` carries :data:`SCHEMA`)."""
    return report_manifest(p) is not None


def _ours(p: Path, name: str, manifest: set[str]) -> bool:
    """``name`` in ``p`` is a file the previous report wrote: listed, a regular file, not a link."""
    q = p / name
    return name in manifest and q.is_file() and not q.is_symlink()


def _probe(d: Path) -> None:
    """Create and remove a temporary directory in ``d`` (what the report writer will do)."""
    try:
        probe = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}probe-", dir=d)
    except OSError as exc:
        raise OutputPathError(f"cannot create files under {str(d)!r} ({exc.strerror})", argument="--out") from None
    os.rmdir(probe)


def check_out_dir(out: str | os.PathLike) -> Path:
    """Validate ``out`` before any work; returns it as an absolute path (``.`` included).

    ``out`` may be new, an empty directory, or a report directory this suite wrote whose every entry
    the previous report's manifest lists (:func:`report_manifest`). A directory that is not a report,
    or a report into which anything else was put (the user's notes, a subdirectory), is refused with
    the unknown names: the suite never deletes or overwrites a file it did not write. Writability is
    probed where the report will be built (inside an existing ``out``, else in the nearest existing
    ancestor) with a temporary directory that is removed at once."""
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise OutputPathError(f"expected a directory path, got {str(out)!r}", argument="--out")
    p = Path(os.path.abspath(os.fspath(out)))
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{str(out)!r} exists and is not a directory", argument="--out")
    if p.is_dir():
        try:
            entries = [e for e in os.listdir(p) if not e.startswith(WORK_PREFIX)]
        except OSError as exc:
            raise OutputPathError(f"cannot read {str(out)!r} ({exc.strerror})", argument="--out") from None
        if entries:
            manifest = report_manifest(p)
            if manifest is None:
                raise OutputPathError(
                    f"{str(out)!r} exists and is not a connwalk report (no results.json with schema "
                    f"{SCHEMA!r}); its files are left alone: choose a new or empty directory",
                    argument="--out",
                )
            unknown = sorted(e for e in entries if not _ours(p, e, manifest))
            if unknown:
                shown = ", ".join(repr(e) for e in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
                raise OutputPathError(
                    f"{str(out)!r} is a connwalk report that also holds files it did not write ({shown}); "
                    "they would be mixed with the new report, so nothing is replaced: move them out or "
                    "choose another directory",
                    argument="--out",
                )
        if not os.access(p, os.W_OK | os.X_OK):
            raise OutputPathError(f"cannot create files under {str(out)!r}", argument="--out")
        _probe(p)
        return p
    parent = p.parent
    if parent.exists() and not parent.is_dir():
        raise OutputPathError(f"parent {str(parent)!r} is not a directory", argument="--out")
    anc = parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir() or not os.access(anc, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot create files under {str(anc)!r}", argument="--out")
    _probe(anc)
    return p


def _json_safe(x):
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, (np.floating,)):
        return _json_safe(float(x))
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.ndarray):
        return [_json_safe(v) for v in x.tolist()]
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def _insufficient_line(claim: str, rows: list[StatResult]) -> str:
    """One table row standing for every ``insufficient scale range`` row of ``claim``: the groups that
    lack a second size, how many statistics, and why."""
    groups = list(dict.fromkeys(r.model for r in rows))
    stats = list(dict.fromkeys(r.statistic for r in rows))
    why = (
        f"all {len(stats)} statistics ({len(rows)} rows): each architecture kind here has one size, and "
        f"{claim} compares consecutive sizes of one kind; install the scale set (or pass larger models) for {claim}"
    )
    return md_row([claim, "; ".join(groups), why, "—", "—", "—", "—", f"**{INSUFFICIENT_SCALE}**"])


def verdict_table(rows: list[StatResult]) -> str:
    """Markdown table claim × model × statistic × trained / null / effect [CI] / verdict (values to the
    digits their solver supports where a row says so: ``extra["significant_digits"]``). The
    ``insufficient scale range`` rows of a claim (E3 with one size per kind) are one line, where the
    first of them stood, saying why (results.json keeps every row)."""
    header = ["claim", "model", "statistic", "trained", "null", "effect", "95% CI", "verdict"]
    lines = [md_row(header), md_rule(len(header))]
    short = {}
    for r in rows:
        if r.verdict == INSUFFICIENT_SCALE:
            short.setdefault(r.claim, []).append(r)
    done = set()
    for r in rows:
        if r.verdict == INSUFFICIENT_SCALE:
            if r.claim not in done:
                done.add(r.claim)
                lines.append(_insufficient_line(r.claim, short[r.claim]))
            continue
        k = r.extra.get("significant_digits")
        cells = [r.claim, r.model, r.statistic, fmt_sig(r.trained, k), fmt_sig(r.null, k), fmt_sig(r.effect, k)]
        lines.append(md_row([*cells, fmt_ci(r.interval, k), f"**{r.verdict}**"]))
    return "\n".join(lines)


def terminal_summary(rows: list[StatResult], out=None) -> str:
    """What the job prints when it ends: per claim the counts of each verdict, and where the full table
    is (``out``/report.md; the table itself goes only there)."""
    claims = list(dict.fromkeys(r.claim for r in rows))
    width = max((len(c) for c in claims), default=0)
    lines = ["verdicts per claim (counts of rows):"]
    for c in claims:
        cnt = [(v, sum(1 for r in rows if r.claim == c and r.verdict == v)) for v in VERDICTS]
        lines.append(
            f"  {c:<{width}}  " + ", ".join(f"{n} {v}" for v, n in cnt if n) + f" ({sum(n for _, n in cnt)} rows)"
        )
    if not claims:
        lines.append("  (no rows)")
    if out is not None:
        lines.append(f"full table, figures and definitions: {Path(os.path.abspath(os.fspath(out))) / 'report.md'}")
    return "\n".join(lines)


def summary_table(rows: list[StatResult]) -> str:
    claims = sorted({r.claim for r in rows}, key=lambda c: (len(c), c))
    lines = [md_row(["claim", *VERDICTS]), md_rule(len(VERDICTS) + 1)]
    for c in claims:
        cnt = [sum(1 for r in rows if r.claim == c and r.verdict == v) for v in VERDICTS]
        lines.append(md_row([c, *cnt]))
    return "\n".join(lines)


def baseline_table(rows: list[StatResult]) -> str:
    header = ["model", "statistic", "trained", "random null", "spectrum-matched", "flat on own subspace"]
    lines = [md_row(header), md_rule(len(header))]
    for r in rows:
        if r.claim != "E2":
            continue
        bl = r.extra.get("baselines", {})
        sm = bl.get("spectrum_matched", {})
        fl = bl.get("flat_subspace", {})
        lines.append(
            md_row(
                [
                    r.model,
                    r.statistic,
                    fmt(r.trained),
                    f"{fmt(r.null)} {fmt_ci(r.null_interval)}",
                    f"{fmt(sm.get('value'))} {fmt_ci(sm.get('interval'))}",
                    f"{fmt(fl.get('value'))} {fmt_ci(fl.get('interval'))}",
                ]
            )
        )
    return "\n".join(lines)


def trend_table(rows: list[StatResult]) -> str:
    header = [
        "model",
        "statistic",
        "Spearman ρ (depth) trained [95% CI]",
        "ρ null",
        "trained value [95% CI]",
    ]
    lines = [md_row(header), md_rule(len(header))]
    for r in rows:
        if r.claim != "E1":
            continue
        e = r.extra
        lines.append(
            md_row(
                [
                    r.model,
                    r.statistic,
                    f"{fmt(e.get('spearman_trained'))} {fmt_ci(e.get('spearman_trained_interval'))}",
                    fmt(e.get("spearman_null")),
                    f"{fmt(r.trained)} {fmt_ci(e.get('trained_interval'))}",
                ]
            )
        )
    return "\n".join(lines)


def definitions_section(rows: list[StatResult]) -> str:
    """One line per claim and statistic; ``insufficient scale range`` rows have none (they were not
    computed: their one line in the verdict table says why)."""
    seen, lines = set(), []
    for r in rows:
        key = (r.claim, r.statistic.split(" [")[0])
        if key in seen or not r.definition or r.verdict == INSUFFICIENT_SCALE:
            continue
        seen.add(key)
        lines.append(f"- **{r.claim} `{key[1]}`**: {r.definition}. Rule: {r.rule}.")
    return "\n".join(lines)


def figure_lines(fname: str, models=()) -> list[str]:
    """``fname`` shown in the report: the image with its title as alt text (the figure carries the
    same title), and under it one italic line saying what to look at
    (:func:`paper_checks.captions.caption`)."""
    title, look = captions.caption(fname, models)
    return [f"![{title}]({fname})", "", f"*{look[:1].upper()}{look[1:]}.*", ""]


#: the heading of a claim's figures when the claim has no section of its own in the report
FIGURE_SECTIONS = {
    "E1": "## E1 per-layer figures",
    "E2": "## E2 transport figures",
    "LAP": "## LAP per-layer figures",
    "E5": "## E5 phase diagrams",
    "E6": "## E6 training curves",
}


def render_markdown(
    rows: list[StatResult], config: dict, figures: list[str], notes: list[str], models: dict | None = None
) -> str:
    """The report's text. Every figure in ``figures`` is shown once, with its caption, in the section of
    its claim (the LAP figure of a model under that model's LAP table); a figure of no known kind in a
    last section of its own."""
    cfg = "\n".join(f"- {k}: `{v}`" for k, v in config.items())
    left = list(dict.fromkeys(figures))
    names = list(dict.fromkeys(r.model for r in rows))

    def take(claim: str) -> list[str]:
        mine = [f for f in left if captions.place(f) == claim]
        for f in mine:
            left.remove(f)
        return [line for f in mine for line in figure_lines(f, names)]

    parts = [
        title(config, rows),
        "",
        "## Run",
        cfg,
        "",
        "## How to read this",
        *[f"- {c}" for c in caveats(models)],
        *[f"- {n}" for n in notes],
        "",
        "## Verdict summary (counts of rows)",
        summary_table(rows),
        "",
        "## Verdicts",
        "E1/E2: effect = trained − null (null = random init of the same architecture). "
        "E3: `trained` = the larger model's effect, `null` = the smaller model's, effect = their difference "
        "oriented so that > 0 means stronger with size. E4: `trained` = mean effect over encoders, `null` = "
        "over decoders; the verdict conjoins the per-model verdicts. `[sink-aware]`: attention-sink tokens "
        "(position 0 and any key receiving ≥ 20% of the attention on average in some layer) removed, rows "
        "renormalised.",
        "",
        verdict_table(rows),
        "",
    ]
    if any(r.claim == "E2" for r in rows):
        parts += [
            "## E2 transport baselines",
            "The spectrum-matched baseline keeps each head's singular values with Haar-random singular "
            "vectors (which subspace a head reads); the flat baseline keeps the head's own subspaces with "
            "all gains equal to their mean (how uneven its gains are). Both use the trained model's hidden "
            "states and attention.",
            "",
            baseline_table(rows),
            "",
            *take("E2"),
        ]
    if any(r.claim == "E1" for r in rows):
        parts += ["## E1 depth trends", trend_table(rows), "", *take("E1")]
    if any(r.claim == "LAP" for r in rows):
        from paper_checks.laplacian_check import report_section

        def lap_figure(model: str) -> list[str]:
            f = captions.figure_file("lap", model)
            if f not in left:
                return []
            left.remove(f)
            return ["", *figure_lines(f, names)]

        parts += report_section(rows, figure=lap_figure)
    for claim in FIGURE_SECTIONS:
        shown = take(claim)
        if shown:
            parts += [FIGURE_SECTIONS[claim], "", *shown]
    if left:
        parts += ["## Other figures", "", *[line for f in left for line in figure_lines(f, names)]]
    parts += ["## Definitions and rules", definitions_section(rows), ""]
    return "\n".join(parts)


def _inside_report(obj, tmp: Path):
    """Paths of files drawn into the temporary directory, made relative to the report (the temporary
    directory is renamed away, so its absolute paths would point at nothing)."""
    prefix = str(tmp) + os.sep
    if isinstance(obj, str):
        return obj[len(prefix) :] if obj.startswith(prefix) else obj
    if isinstance(obj, dict):
        return {k: _inside_report(v, tmp) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_inside_report(v, tmp) for v in obj]
    return obj


def _swap_into(out: Path, tmp: Path) -> None:
    """Move the finished report in ``tmp`` (a directory inside ``out``) into the existing directory
    ``out``: the previous report's files (its manifest, checked again just before) are set aside, the
    new files renamed in, then the set-aside files removed. Any failure puts the previous files back.
    Nothing else in ``out`` is touched (the check refuses a directory holding anything else)."""
    check_out_dir(out)  # still empty or still only a report of ours
    manifest = report_manifest(out) or set()
    old_files = sorted(e for e in os.listdir(out) if not e.startswith(WORK_PREFIX) and _ours(out, e, manifest))
    new_files = sorted(os.listdir(tmp))
    stash = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}old-", dir=out))
    moved_old: list[str] = []
    moved_new: list[str] = []
    try:
        for name in old_files:
            os.rename(out / name, stash / name)
            moved_old.append(name)
        for name in new_files:
            if os.path.lexists(out / name):
                raise OutputPathError(f"{str(out / name)!r} appeared while the report was written", argument="--out")
            os.rename(tmp / name, out / name)
            moved_new.append(name)
    except BaseException:
        for name in reversed(moved_new):
            os.rename(out / name, tmp / name)
        for name in reversed(moved_old):
            os.rename(stash / name, out / name)
        os.rmdir(stash)
        raise
    os.rmdir(tmp)
    shutil.rmtree(stash, ignore_errors=True)


def write_report(
    out: str | os.PathLike,
    rows: list[StatResult],
    config: dict,
    *,
    figures: Callable[[Path], list[str]] | None = None,
    extra_json: dict | None = None,
    notes: list[str] | None = None,
    timings: dict[str, float] | None = None,
) -> Path:
    """Write ``report.md``, ``results.json``, figures (and ``timings.json`` when ``timings`` is given)
    into ``out`` without ever leaving a half-written report or touching a file the suite did not write.

    Everything is built in a temporary directory first: beside a new ``out`` (then renamed to it), or
    inside an existing one (then swapped in file by file, :func:`_swap_into`). ``results.json["files"]``
    is the manifest: the only files a later run may replace. ``figures(tmpdir) -> [file names]`` draws
    PNGs into the temporary directory. ``results.json`` and ``report.md`` are deterministic given the
    rows; wall-clock ``timings`` go to their own file."""
    out = check_out_dir(out)
    existing = out.is_dir()
    if existing:
        tmp = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}tmp-", dir=out))
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        figs = figures(tmp) if figures is not None else []
        if timings:
            with open(tmp / TIMINGS_FILE, "w", encoding="utf-8") as fh:
                note = "wall-clock seconds per stage of this run (not deterministic; not part of results.json)"
                json.dump({"note": note, "seconds": _json_safe(timings)}, fh, indent=1, ensure_ascii=False)
        files = sorted(set(os.listdir(tmp)) | set(FIXED_FILES))
        payload = {
            "schema": SCHEMA,
            "config": config,
            "rows": [r.as_dict() for r in rows],
            "verdicts": list(VERDICTS),
            "files": files,
        }
        if extra_json:
            payload.update(extra_json)
        payload = _inside_report(payload, tmp)
        with open(tmp / "results.json", "w", encoding="utf-8") as fh:
            json.dump(_json_safe(payload), fh, indent=1, ensure_ascii=False, allow_nan=False)
        with open(tmp / "report.md", "w", encoding="utf-8") as fh:
            fh.write(render_markdown(rows, config, figs, notes or [], models=(extra_json or {}).get("models")))
        if existing:
            _swap_into(out, tmp)
        else:
            os.chmod(tmp, 0o755)
            try:
                os.rename(tmp, out)
            except OSError as exc:
                raise OutputPathError(
                    f"{str(out)!r} appeared while the report was written ({exc.strerror}); the new report "
                    "was discarded",
                    argument="--out",
                ) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
