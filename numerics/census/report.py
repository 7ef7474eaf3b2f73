"""The census's statuses and ``CENSUS.md``: the status of a conformance kit report (:func:`verdict_of`,
:func:`status_of`), and ``CENSUS.md`` from a :class:`numerics.census.run.CensusResult`: the run's facts,
counts per status, the conforming families, the declines grouped by reason, and one table row per
attention class."""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = [
    "render_markdown",
    "reason_kind",
    "split_rows",
    "JUDGED",
    "STATUSES",
    "HYPOTHESES",
    "verdict_of",
    "status_of",
    "hypotheses_of",
]

CONFORMS, HYP_FAILS, FAILS_, DECLINED, UNDECIDED_, TIMED_OUT = (
    "conforms",
    "identity holds, hypothesis fails",
    "fails",
    "declined",
    "undecided",
    "timed out",
)
#: every row's status, in the order of CENSUS.md's count table. ``timed out``: the class (or its family's
#: build) used up its CPU budget twice, the second time retried alone after the other classes
STATUSES = (CONFORMS, HYP_FAILS, FAILS_, UNDECIDED_, TIMED_OUT, DECLINED)
HYPOTHESES = (
    ("T3(a) stochastic", "t3", "a stochastic"),
    ("T3(b) reversible", "t3", "b reversible"),
    ("T3(c) metric", "t3", "c metric"),
    ("T5 full support", "t5", "softmax"),
    ("T5 reversible", "t5", "reversible"),
    ("T5 involution", "t5", "involution"),
)


# --------------------------------------------------------------------------- verdicts
def verdict_of(report) -> tuple[str, list[str], str]:
    """``(verdict, hypothesis failures, decided by)`` of a :class:`~numerics.conformance.kit.ConformanceReport`:
    its ``verdict`` / ``hypothesis_failures`` / ``decided_by`` when it has them; otherwise derived
    from ``conforms`` / ``status`` and T3(a) on the drawn rows (a row-stochastic failure there is a
    failed hypothesis of T2)."""
    from numerics.tolerance import FAILS, UNDECIDED

    v = getattr(report, "verdict", None)
    hyp = list(getattr(report, "hypothesis_failures", None) or [])
    by = getattr(report, "decided_by", None) or str(getattr(report, "dtype", ""))
    if v is None:
        if not report.conforms:
            v = "fails"
        else:
            bad = [r for r in report.results if r.t3.get("a stochastic") is not None]
            if any(r.t3["a stochastic"].status == FAILS for r in bad):
                v, hyp = "hypothesis fails", ["row-stochastic"]
            elif report.status == UNDECIDED:
                v = "undecided"
            else:
                v = "conforms"
    return str(v), hyp, by


def hypotheses_of(report) -> dict[str, str]:
    """T3's and T5's hypotheses (:data:`HYPOTHESES`) on the report's draws: holds / fails / undecided,
    combined over the draws, or why not applicable."""
    from numerics.tolerance import combine

    # T3/T5 are computed on self-attention draws whose T2 hypotheses hold: otherwise not applicable, and why
    why = "n/a (cross-attention)" if all(r.cross for r in report.results) else "n/a (T2's hypotheses fail)"
    out = {}
    for label, kind, key in HYPOTHESES:
        st = [getattr(r, kind)[key].status for r in report.results if key in getattr(r, kind)]
        out[label] = combine(st) if st else why
    return out


def status_of(report) -> tuple[str, str, list[str], str]:
    """``(status, reason, hypothesis failures, decided by)`` of a kit report: its verdict
    (:func:`verdict_of`) as one of :data:`STATUSES`, and a one-line reason."""
    v, hyp, by = verdict_of(report)
    ratio = max((r.t2.residual / r.t2.bound for r in report.results if r.t2.bound > 0), default=math.nan)
    if v == "conforms":
        return CONFORMS, f"T2 holds on every draw (worst residual/bound {ratio:.1e})", hyp, by
    if v == "hypothesis fails":
        return HYP_FAILS, f"T2's identity holds; its hypotheses fail: {', '.join(hyp) or '?'}", hyp, by
    if v == "undecided":
        banded = any(r.t2.status == "undecided" for r in report.results)
        if banded or not hasattr(report, "evidence"):
            return UNDECIDED_, "T2 undecided within the rounding band on some draw", hyp, by
        # the identity held on every draw, but on none that determines A (the kit's evidence rule)
        return UNDECIDED_, f"T2's identity holds, but {report.evidence}", hyp, by
    cx = getattr(report, "counterexample", None)
    first = str(cx).splitlines() if cx is not None else []
    return FAILS_, " ".join(s.strip() for s in first[:3]) or "T2 fails", hyp, by


_KINDS = (
    ("library but it was not found", "an optional package is absent"),  # first: a build error may say so too
    (
        "made no call through transformers' attention interface",
        "computes attention its own way and returns no probabilities",
    ),
    ("did not run on the drawn inputs", "the tiny model does not run on the inputs the kit draws"),
    ("not instantiated by a tiny base model", "no tiny base model of its family instantiates it"),
    ("reaches no linear output projection", "not of the form W_O·A·V: a gate, norm or mixing after the attention"),
    ("no linear projection's output", "not of the form A·(W_V x + b_V): a norm, rotation or mixing on the values"),
    ("eager kernel is not softmax", "its eager kernel is not softmax attention"),
    ("no input the kit can draw", "needs inputs the kit cannot draw"),
    ("not a grouped-query layout", "query and key/value heads in no grouped-query layout"),
    ("timed out", "timed out"),
    ("the module does not import", "the module does not import"),
    ("the kit could not run it", "the kit could not run it"),
    ("process running it died", "its process died"),
)


#: statuses that are verdicts on the class (the census judged it)
JUDGED = (CONFORMS, HYP_FAILS, FAILS_, UNDECIDED_)
#: decline groups whose cause lies outside the class (this environment lacks an optional package)
OUTSIDE = ("the module does not import", "an optional package is absent")


def split_rows(rows) -> tuple[list, list, list]:
    """``(judged, harness gaps, outside the class)``: every row in exactly one — a verdict (:data:`JUDGED`),
    a decline whose group is :data:`OUTSIDE`, else (any other decline, a timeout) a gap of the harness."""
    judged = [r for r in rows if r.status in JUDGED]
    outside = [r for r in rows if r.status == DECLINED and reason_kind(r.reason) in OUTSIDE]
    gaps = [
        r for r in rows if r.status not in JUDGED and not (r.status == DECLINED and reason_kind(r.reason) in OUTSIDE)
    ]
    return judged, gaps, outside


def reason_kind(reason: str) -> str:
    """The group a decline reason belongs to (the table of reasons in ``CENSUS.md``)."""
    for key, kind in _KINDS:
        if key in reason:
            return kind
    return "other"


def _cell(s: str, width: int = 160) -> str:
    s = re.sub(r"\s+", " ", str(s)).replace("|", "\\|")
    return s if len(s) <= width else s[: width - 1] + "…"


def hypothesis_cells(row) -> str:
    """The hypothesis columns of a row (:data:`HYPOTHESES`): h holds, f fails, u undecided, – not applicable."""
    ab = {"holds": "h", "fails": "f", "undecided": "u"}
    return " | ".join(ab.get(row.hypotheses.get(h[0], ""), "–") if row.hypotheses else "" for h in HYPOTHESES)


def render_markdown(result) -> str:
    counts = result.counts()
    fams = result.conforming_families()
    lines = [
        "# Census: every attention class in transformers, checked as a connection walk",
        "",
        "Generated by `connwalk census` (numerics/census/run.py); do not edit by hand.",
        "",
        f"- transformers {result.transformers_version}, torch {result.torch_version}; {result.date}; "
        f"seed {result.seed}, {result.examples} draws per class, float64 (the shadow precision; float32 where a "
        "kernel has no float64)",
        f"- {len(result.rows)} attention classes; wall {result.wall_seconds:.0f} s with {result.jobs} worker "
        f"process(es), CPU {result.cpu_seconds:.0f} s",
        "- rule: every class defined in a `transformers.models.*.modeling_*` module of a model type of "
        "`CONFIG_MAPPING_NAMES` that is an `nn.Module`, not a `PreTrainedModel`, and whose name ends with "
        "`Attention`; each built inside its family's base model from a tiny random configuration and judged by "
        "the conformance kit through the attention-interface capture, which observes the family's own kernel "
        "(never substitutes it): the module's own output against the walk of the literal A of what the kernel "
        "received; a class that capture does not see (its own softmax and matmul, a gate or norm before its output "
        "projection, a norm on its values) through the torch-level capture inside the same model, on the same "
        "inputs — a structural non-walk is then a verdict (fails, the structure named first)",
        "",
        "## Counts",
        "",
        "| status | classes |",
        "|---|---:|",
    ]
    lines += [f"| {s} | {counts[s]} |" for s in STATUSES]
    judged, gaps, outside = split_rows(result.rows)
    total = len(result.rows)
    lines += [
        "",
        f"**Judged: {len(judged)} of {total} classes ({100 * len(judged) / max(total, 1):.0f} %)** — conforms, "
        f"identity holds / hypothesis fails, fails or undecided. Not judged: {len(gaps)} are the census harness's "
        f"gaps (listed below with their errors: a tiny model it could not build or run, inputs it cannot draw, "
        f"an attention neither capture reads, a class out of time) and {len(outside)} cannot be built in this "
        "environment for a reason outside the class (an optional package that is absent, named).",
        "",
        f"**{len(fams)} model families** have at least one conforming class: " + ", ".join(f"`{f}`" for f in fams),
        "",
    ]
    hyp = [r for r in result.rows if r.status == HYP_FAILS]
    if hyp:
        lines += ["## Identity holds, hypothesis fails", ""]
        lines += [f"- `{r.cls}` ({r.family}): {_cell(r.reason)}" for r in hyp]
        lines.append("")
    bad = [r for r in result.rows if r.status in (FAILS_, UNDECIDED_)]
    if bad:
        lines += ["## Fails / undecided", ""]
        lines += [f"- `{r.cls}` ({r.family}), {r.status}: {_cell(r.reason, 400)}" for r in bad]
        lines.append("")
    late = [r for r in result.rows if r.status == TIMED_OUT]
    if late:
        lines += ["## Timed out (also when retried alone)", ""]
        lines += [f"- `{r.cls}` ({r.family}): {_cell(r.reason, 400)}" for r in late]
        lines.append("")
    if gaps:
        lines += ["## Not judged: the harness's gaps", ""]
        lines += [f"- `{r.cls}` ({r.family}), {r.status}: {_cell(r.reason, 300)}" for r in gaps]
        lines.append("")
    if outside:
        lines += ["## Not judged: outside the class", ""]
        lines += [f"- `{r.cls}` ({r.family}): {_cell(r.reason, 300)}" for r in outside]
        lines.append("")
    dec = Counter(reason_kind(r.reason) for r in result.rows if r.status == DECLINED)
    lines += ["## Declines by reason", "", "| reason | classes |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in dec.most_common()]
    lines += [
        "",
        "## Per class",
        "",
        "Hypothesis columns: T3(a) stochastic, (b) reversible, (c) metric-compatible on the walk of one batch "
        "row; T5 per head: full support, reversible, orthogonal-involution transport — on the drawn inputs at "
        "random initialisation (h holds, f fails, u undecided, – not applicable: cross-attention, or attention that is not a walk (T2's hypotheses fail)).",
        "",
        "| family | class | status | " + " | ".join(h[0] for h in HYPOTHESES) + " | reason |",
        "|---|---|---|" + "---|" * len(HYPOTHESES) + "---|",
    ]
    for r in result.rows:
        lines.append(f"| {r.family} | `{r.cls}` | {r.status} | {hypothesis_cells(r)} | {_cell(r.reason)} |")
    return "\n".join(lines) + "\n"
