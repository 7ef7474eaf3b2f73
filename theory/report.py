"""Recording what the test-suite checked, per theorem id, for the end-of-run theorem table.

Torch-free. Tests (and helpers they call) record:
    record("T3", residual=1e-15)                # one property example, its residual
    record("T3", counterexample="drop (a): ...")  # a necessity counterexample found
    record("T3", symbolic=True)                  # the symbolic derivation reached exact zero
The pytest plugin in ``tests/conftest.py`` prints the table and can dump it as JSON.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field


@dataclass
class TheoremTally:
    theorem: str
    symbolic: bool | None = None  # None: no symbolic test ran; True: all exact zero; False: one failed
    examples: int = 0
    worst_residual: float = 0.0
    counterexamples: list[str] = field(default_factory=list)
    tests_passed: int = 0
    tests_failed: int = 0

    def as_dict(self) -> dict:
        return {
            "theorem": self.theorem,
            "symbolic": self.symbolic,
            "examples": self.examples,
            "worst_residual": self.worst_residual,
            "counterexamples": list(self.counterexamples),
            "tests_passed": self.tests_passed,
            "tests_failed": self.tests_failed,
        }


TALLY: dict[str, TheoremTally] = {}


def _get(theorem: str) -> TheoremTally:
    return TALLY.setdefault(theorem, TheoremTally(theorem))


def _worse(a: float, b: float) -> float:
    """The worse of two residuals; NaN is worst of all and is never hidden by a later max()."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, abs(b))


def record(theorem: str, *, residual: float | None = None, symbolic: bool | None = None,
           counterexample: str | None = None, examples: int | None = None) -> None:
    t = _get(theorem)
    if residual is not None:
        t.examples += 1 if examples is None else examples
        t.worst_residual = _worse(t.worst_residual, float(residual))
    elif examples is not None:
        t.examples += examples
    if symbolic is not None:
        t.symbolic = symbolic if t.symbolic is None else (t.symbolic and symbolic)
    if counterexample is not None and counterexample not in t.counterexamples:
        t.counterexamples.append(counterexample)


def record_outcome(theorem: str, passed: bool) -> None:
    t = _get(theorem)
    if passed:
        t.tests_passed += 1
    else:
        t.tests_failed += 1


def merge(rows: list[dict]) -> None:
    """Merge tallies from another process (pytest-xdist workers)."""
    for row in rows:
        t = _get(row["theorem"])
        t.examples += row["examples"]
        t.worst_residual = _worse(t.worst_residual, float(row["worst_residual"]))
        if row["symbolic"] is not None:
            t.symbolic = row["symbolic"] if t.symbolic is None else (t.symbolic and row["symbolic"])
        for c in row["counterexamples"]:
            if c not in t.counterexamples:
                t.counterexamples.append(c)
        t.tests_passed += row["tests_passed"]
        t.tests_failed += row["tests_failed"]


def table_rows(only: list[str] | None = None) -> list[dict]:
    """Rows sorted by id (T2 before T10); ``only`` restricts to these ids (e.g. ``--theorem``)."""
    def key(k: str):
        return (k[0], int(k[1:]) if k[1:].isdigit() else 0, k)

    keys = [k for k in sorted(TALLY, key=key) if only is None or k in only]
    return [TALLY[k].as_dict() for k in keys]


def render_table(only: list[str] | None = None) -> str:
    rows = table_rows(only)
    lines = [
        f"{'theorem':<8} {'symbolic':<9} {'tests':>11} {'examples':>9} {'worst residual':>15}  counterexamples",
    ]
    for r in rows:
        sym = {None: "-", True: "✓", False: "✗"}[r["symbolic"]]
        tests = f"{r['tests_passed']}/{r['tests_passed'] + r['tests_failed']}"
        ce = len(r["counterexamples"])
        lines.append(f"{r['theorem']:<8} {sym:<9} {tests:>11} {r['examples']:>9} {r['worst_residual']:>15.3e}  {ce}")
        for c in r["counterexamples"]:
            lines.append(f"{'':<8}   - {c}")
    lines.append("symbolic: ✓ every derivation reached exact zero, ✗ one failed, - none ran; "
                 "tests: passed/run; examples: property examples recorded")
    return "\n".join(lines)


def _titles() -> dict[str, str]:
    try:
        from .registry import THEOREMS

        return {t.id: t.title for t in THEOREMS}
    except Exception:  # pragma: no cover - the table must print even if the registry is broken
        return {}


def dump_json(path: str, *, exitstatus: int | None = None, only: list[str] | None = None) -> None:
    """Write ``{"theorems": [row, ...], "exitstatus": ...}``; each row as in :func:`table_rows`
    plus the registered ``title`` (``null`` for ids not in the registry, e.g. E1-E6). A NaN worst
    residual is written as the string ``"nan"`` so the file stays strict JSON."""
    titles = _titles()
    rows = []
    for r in table_rows(only):
        r = dict(r, title=titles.get(r["theorem"]))
        if isinstance(r["worst_residual"], float) and math.isnan(r["worst_residual"]):
            r["worst_residual"] = "nan"
        rows.append(r)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"theorems": rows, "exitstatus": exitstatus}, fh, indent=2, ensure_ascii=False)
