"""Recording what the test-suite checked, per theorem id, for the end-of-run theorem table.

Torch-free. Tests (and helpers they call) record:
    record("T3", residual=1e-15)                # one property example, its residual
    record("T3", counterexample="drop (a): ...")  # a necessity counterexample found
    record("T3", symbolic=True)                  # the symbolic derivation reached exact zero

The bookkeeping lives in a :class:`TheoremReport` object owned by the pytest session: the
theorem-checker plugin (``numerics.pytest_plugin``) creates one per session, stores it on the pytest
config and makes it the *active* report for the session's duration (:func:`activate`);
:func:`record` writes to the active report (outside a session, to a detached one that nothing
reads). The plugin prints the table, dumps it as JSON and merges the reports of pytest-xdist
workers.
"""

from __future__ import annotations

import contextlib
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


def _worse(a: float, b: float) -> float:
    """The worse of two residuals; NaN is worst of all and is never hidden by a later max()."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, abs(b))


def _key(k: str):
    return (k[0], int(k[1:]) if k[1:].isdigit() else 0, k)


class TheoremReport:
    """Per-theorem tallies of one test session (or one xdist worker)."""

    def __init__(self) -> None:
        self.tallies: dict[str, TheoremTally] = {}
        #: statement id -> the gate's report (:meth:`theory.gate.GateReport.as_dict` plus ``summary``)
        self.gates: dict[str, dict] = {}

    def __bool__(self) -> bool:
        return bool(self.tallies)

    def _get(self, theorem: str) -> TheoremTally:
        return self.tallies.setdefault(theorem, TheoremTally(theorem))

    def record(
        self,
        theorem: str,
        *,
        residual: float | None = None,
        symbolic: bool | None = None,
        counterexample: str | None = None,
        examples: int | None = None,
    ) -> None:
        t = self._get(theorem)
        if residual is not None:
            t.examples += 1 if examples is None else examples
            t.worst_residual = _worse(t.worst_residual, float(residual))
        elif examples is not None:
            t.examples += examples
        if symbolic is not None:
            t.symbolic = symbolic if t.symbolic is None else (t.symbolic and symbolic)
        if counterexample is not None and counterexample not in t.counterexamples:
            t.counterexamples.append(counterexample)

    def record_outcome(self, theorem: str, passed: bool) -> None:
        t = self._get(theorem)
        if passed:
            t.tests_passed += 1
        else:
            t.tests_failed += 1

    def record_gate(self, theorem: str, gate: dict) -> None:
        """The gate's report on ``theorem`` (``pytest --theorem ID`` for a statement registered outside
        connwalk): shown under its row of the table and in ``--theorem-json`` as ``"gate"``."""
        t = self._get(theorem)
        self.gates[theorem] = gate
        for c in gate.get("conclusions", ()):
            shown = next(
                (x.strip() for x in gate["summary"].splitlines() if x.strip().startswith("counterexample")), ""
            )
            if c.get("counterexample") is not None and shown:
                entry = f"{c['id']}: {shown}"
                if entry not in t.counterexamples:
                    t.counterexamples.append(entry)

    def merge(self, rows: list[dict]) -> None:
        """Merge tallies from another process (pytest-xdist workers)."""
        for row in rows:
            t = self._get(row["theorem"])
            t.examples += row["examples"]
            wr = row["worst_residual"]
            t.worst_residual = _worse(t.worst_residual, math.nan if wr == "nan" else float(wr))
            if row["symbolic"] is not None:
                t.symbolic = row["symbolic"] if t.symbolic is None else (t.symbolic and row["symbolic"])
            for c in row["counterexamples"]:
                if c not in t.counterexamples:
                    t.counterexamples.append(c)
            t.tests_passed += row["tests_passed"]
            t.tests_failed += row["tests_failed"]

    def table_rows(self, only: list[str] | None = None) -> list[dict]:
        """Rows sorted by id (T2 before T10); ``only`` restricts to these ids (e.g. ``--theorem``)."""
        keys = [k for k in sorted(self.tallies, key=_key) if only is None or k in only]
        return [self.tallies[k].as_dict() for k in keys]

    def render_table(self, only: list[str] | None = None) -> str:
        rows = self.table_rows(only)
        scopes = _scopes()
        lines = [
            f"{'theorem':<8} {'symbolic':<9} {'tests':>11} {'examples':>9} {'worst residual':>15}  counterexamples",
        ]
        for r in rows:
            sym = {None: "-", True: "✓", False: "✗"}[r["symbolic"]]
            tests = f"{r['tests_passed']}/{r['tests_passed'] + r['tests_failed']}"
            ce = len(r["counterexamples"])
            lines.append(
                f"{r['theorem']:<8} {sym:<9} {tests:>11} {r['examples']:>9} {r['worst_residual']:>15.3e}  {ce}"
            )
            for cid, scope in scopes.get(r["theorem"], []):
                lines.append(f"{'':<8}   scope {cid}: {scope}")
            for c in r["counterexamples"]:
                lines.append(f"{'':<8}   - {c}")
            if r["theorem"] in self.gates:  # its counterexamples are the lines above
                summary = self.gates[r["theorem"]]["summary"].splitlines()
                lines += [f"{'':<8}   {x.strip()}" for x in summary if not x.strip().startswith("counterexample")]
        lines.append(
            "symbolic: ✓ every derivation reached exact zero, ✗ one failed, - none ran; "
            "tests: passed/run; examples: property examples recorded; scope: how far each conclusion's "
            "symbolic proof reaches (the registry's statement)"
        )
        return "\n".join(lines)

    def dump_json(self, path: str, *, exitstatus: int | None = None, only: list[str] | None = None) -> None:
        """Write ``{"theorems": [row, ...], "exitstatus": ...}``; each row as in :meth:`table_rows`
        plus the registered ``title`` (theorem or claim; ``null`` for unregistered ids). A NaN worst
        residual is written as the string ``"nan"`` so the file stays strict JSON."""
        titles = _titles()
        rows = []
        for r in self.table_rows(only):
            gate = self.gates.get(r["theorem"])
            title = titles.get(r["theorem"], gate.get("title") if gate else None)
            r = dict(r, title=title, scopes=dict(_scopes().get(r["theorem"], [])))
            if gate is not None:
                r["gate"] = gate
            if isinstance(r["worst_residual"], float) and math.isnan(r["worst_residual"]):
                r["worst_residual"] = "nan"
            rows.append(r)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"theorems": rows, "exitstatus": exitstatus}, fh, indent=2, ensure_ascii=False)


_active: list[TheoremReport] = [TheoremReport()]  # the bottom entry is the detached report


def active() -> TheoremReport:
    """The report :func:`record` writes to: the current session's, else a detached one."""
    return _active[-1]


@contextlib.contextmanager
def activate(rep: TheoremReport):
    """Make ``rep`` the active report inside the ``with`` block (the pytest plugin wraps the
    session in it)."""
    _active.append(rep)
    try:
        yield rep
    finally:
        _active.remove(rep)


def record(
    theorem: str,
    *,
    residual: float | None = None,
    symbolic: bool | None = None,
    counterexample: str | None = None,
    examples: int | None = None,
) -> None:
    """Record into the active report (see :class:`TheoremReport.record`)."""
    active().record(theorem, residual=residual, symbolic=symbolic, counterexample=counterexample, examples=examples)


def _titles() -> dict[str, str]:
    try:
        from .registry import CLAIMS, THEOREMS

        titles = {t.id: t.title for t in THEOREMS}
        titles.update({c.id: c.title for c in CLAIMS})
        return titles
    except Exception:  # pragma: no cover - the table must print even if the registry is broken
        return {}


def _scopes() -> dict[str, list[tuple[str, str]]]:
    """Theorem id -> ``[(conclusion id, proof scope), ...]`` from the registry."""
    try:
        from .registry import THEOREMS

        return {t.id: [(c.id, c.scope) for c in t.conclusions if c.scope] for t in THEOREMS}
    except Exception:  # pragma: no cover - the table must print even if the registry is broken
        return {}
