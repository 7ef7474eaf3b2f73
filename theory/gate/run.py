"""The gate on one registered statement: :func:`gate` ``(statement_id) -> GateReport``.

For every conclusion with a predicate, on the instances its strategy draws (the conclusion's
:class:`~theory.statements.Check`, or connwalk's own :data:`theory.gate.project.STRATEGIES`):

1. **the property test**, generated from the statement: the conclusion holds on every draw
   (:data:`theory.gate.search.PROPERTY`: derandomized, so a run is reproducible); a draw on which it
   fails is shrunk by Hypothesis and reported as the counterexample;
2. **the generated mutants** (:mod:`theory.gate.mutants`) of its formulas: each is *rejected* (among the
   property test's own draws, an instance the statement holds on and the mutant fails), or *equivalent*
   (the exact SymPy reason of :mod:`theory.gate.equivalence` is listed), or it *survives* — and a
   surviving mutant fails the gate (the property test cannot tell the statement from a wrong one);

and for the statement: **the sharpness witness of every bound** (:mod:`theory.gate.sharp`: a bound
without one fails the gate, named) and **the prose check** (:mod:`theory.gate.prose`: no assertion word,
count or rate typed in free text).

The verdict is three-valued, as ``connwalk conform``'s: ``"passes"`` (exit code 0), ``"fails"`` (1),
``"undecided"`` (3: a counterexample within its own rounding error of the threshold, nothing failed).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from hypothesis import find, settings
from hypothesis.errors import NoSuchExample

from .. import oracles
from .equivalence import equivalence_reason
from .mutants import conclusion_mutants
from .prose import prose_problems
from .search import PROPERTY, QUICK, SEARCH, rejecting_instance
from .sharp import BoundResult, bound_results

#: exit codes, as ``connwalk conform``'s (2: bad input, raised before a report exists)
EXIT = {"passes": 0, "fails": 1, "undecided": 3}


@dataclass(frozen=True)
class ConclusionResult:
    """The property test of one conclusion: ``status`` ``"holds"`` / ``"fails"`` / ``"undecided"``;
    ``counterexample``: the shrunk instance it fails (or is undecided) on, as plain lists."""

    id: str
    status: str
    detail: str = ""
    counterexample: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class MutantResult:
    """One generated mutant: ``status`` ``"rejected"`` / ``"equivalent"`` (``detail``: the exact
    reason) / ``"survived"``."""

    name: str
    conclusion: str
    kind: str
    status: str
    detail: str = ""


@dataclass(frozen=True)
class GateReport:
    """Everything the gate found on one statement (module docstring)."""

    id: str
    origin: str
    conclusions: tuple[ConclusionResult, ...] = ()
    mutants: tuple[MutantResult, ...] = ()
    bounds: tuple[BoundResult, ...] = ()
    prose: tuple[tuple[str, str, str], ...] = ()
    unchecked: tuple[str, ...] = field(default=())
    title: str = ""

    @property
    def status(self) -> str:
        if (
            any(c.status == "fails" for c in self.conclusions)
            or any(m.status == "survived" for m in self.mutants)
            or any(not b.ok for b in self.bounds)
            or self.prose
        ):
            return "fails"
        return "undecided" if any(c.status == "undecided" for c in self.conclusions) else "passes"

    @property
    def passed(self) -> bool:
        return self.status == "passes"

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    def counts(self) -> dict[str, int]:
        """How many mutants were rejected, proved equivalent, survived; bounds sharp / failing."""
        out = {k: sum(m.status == k for m in self.mutants) for k in ("rejected", "equivalent", "survived")}
        out["bounds_ok"] = sum(b.ok for b in self.bounds)
        out["bounds_failing"] = sum(not b.ok for b in self.bounds)
        return out

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON): every field, the ``status``, the ``counts`` and the ``summary`` text."""
        return {**asdict(self), "status": self.status, "counts": self.counts(), "summary": self.summary()}

    def summary(self) -> str:
        """A few lines for a terminal: the verdict, each failing part named, the counterexamples."""
        c = self.counts()
        lines = [
            f"gate {self.id} ({self.origin}): {self.status.upper()} — conclusions "
            f"{sum(x.status == 'holds' for x in self.conclusions)}/{len(self.conclusions)} hold; mutants "
            f"{c['rejected']} rejected, {c['equivalent']} equivalent, {c['survived']} surviving; bounds "
            f"{c['bounds_ok']} sharp, {c['bounds_failing']} failing; prose {len(self.prose)} problem(s)"
        ]
        for x in self.conclusions:
            if x.status != "holds":
                lines.append(f"  {x.status}: {x.id} — {x.detail}")
                if x.counterexample is not None:
                    lines.append(f"    counterexample (shrunk): {_show(x.counterexample)}")
        lines += [f"  surviving mutant: {m.name}" for m in self.mutants if m.status == "survived"]
        lines += [f"  equivalent mutant: {m.name} — {m.detail}" for m in self.mutants if m.status == "equivalent"]
        lines += [f"  bound {b.status}: {b.of} `{b.bound}` {b.witness} — {b.detail}" for b in self.bounds if not b.ok]
        lines += [f"  prose: {where}: {word!r} ({rule} in free text)" for where, word, rule in self.prose]
        lines += [f"  no strategy (not property-tested): {cid}" for cid in self.unchecked]
        return "\n".join(lines)


def _plain(v: Any) -> Any:
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def _show(inst: Mapping[str, Any]) -> str:
    def fmt(v):
        a = np.asarray(v)
        return np.array2string(a, precision=4, separator=", ").replace("\n", "") if a.ndim else repr(v)

    return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in inst.items()) + "}"


def strategy_of(theorem_id: str, conclusion) -> Any:
    """The instance strategy of ``conclusion``: its ``Check``, else connwalk's own for the theorem."""
    check = getattr(conclusion, "check", None)
    if check is not None:
        return check.strategy
    from .project import STRATEGIES

    return STRATEGIES.get(theorem_id)


def _not_holding(conclusion):
    def failing(inst) -> bool:
        try:
            return not oracles.judge(conclusion, inst).holds
        except Exception:
            return True

    return failing


#: the property test's search for a counterexample: its settings, with Hypothesis's shrinking
FIND = settings(PROPERTY, phases=list(PROPERTY.phases))


def property_test(conclusion, strategy) -> ConclusionResult:
    """The property test of ``conclusion`` on ``strategy``'s draws (module docstring, item 1)."""
    try:
        found = find(strategy, _not_holding(conclusion), settings=FIND)
    except NoSuchExample:
        return ConclusionResult(conclusion.id, "holds", f"{PROPERTY.max_examples} draws")
    shown = {k: _plain(v) for k, v in found.items()}
    try:
        v = oracles.judge(conclusion, found)
    except Exception as exc:
        return ConclusionResult(conclusion.id, "fails", f"judging raised {type(exc).__name__}: {exc}", shown)
    status = "undecided" if v.undecided else "fails"
    return ConclusionResult(
        conclusion.id, status, f"residual {v.residual:.3g} vs tolerance {v.tol:.3g}: {v.detail}", shown
    )


#: seconds the exact equivalence check of one mutant may take before the gate falls back to the full
#: search (where the process can set an alarm: the main thread on POSIX; elsewhere no limit)
EXACT_SECONDS = 30


class _TimeUp(Exception):
    pass


def _within(seconds: float, f, *args):
    """``f(*args)``, or :class:`_TimeUp` after ``seconds`` (an interval timer; no limit off the main thread)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return f(*args)

    def alarm(signum, frame):
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return f(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _rejected(strategy, conclusion, m, holds, search) -> bool:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # a mutant may divide by a zero or take the log of a negative number: its own NaN, which the oracle reads
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            rejecting_instance(strategy, conclusion, m, holds, search)
            return True
        except NoSuchExample:
            return False


def mutant_results(theorem, conclusion, strategy, skip=()) -> list[MutantResult]:
    """Every generated mutant of ``conclusion``'s formulas, judged (module docstring, item 2): the first
    draws of the search (:data:`theory.gate.search.QUICK`), then the exact equivalence check (at most
    :data:`EXACT_SECONDS`), then the full search (:data:`theory.gate.search.SEARCH`)."""
    out = []
    holds: dict = {}  # the statement's verdict per draw, shared by its mutants' searches
    for m in conclusion_mutants(conclusion, skip=skip):
        if _rejected(strategy, conclusion, m, holds, QUICK):
            out.append(MutantResult(m.name, conclusion.id, m.kind, "rejected"))
            continue
        err = ""
        try:
            why = _within(EXACT_SECONDS, equivalence_reason, theorem.id, conclusion, m)
        except _TimeUp:
            why, err = None, f"; the equivalence check did not finish in {EXACT_SECONDS} s"
        except Exception as exc:  # the exact check could not decide: not shown equivalent
            why, err = None, f"; the equivalence check raised {type(exc).__name__}: {exc}"
        if why:
            out.append(MutantResult(m.name, conclusion.id, m.kind, "equivalent", why))
        elif _rejected(strategy, conclusion, m, holds, SEARCH):
            out.append(MutantResult(m.name, conclusion.id, m.kind, "rejected"))
        else:
            out.append(MutantResult(m.name, conclusion.id, m.kind, "survived", "no draw rejects it" + err))
    return out


def gate_theorem(theorem, origin: str = "") -> GateReport:
    """The gate on the statement record ``theorem`` (registered or not)."""
    from ..registry import EVALUATED_BY_TESTS

    cons, muts, unchecked = [], [], []
    for c in theorem.conclusions:
        if not c.predicate:
            continue
        strategy = strategy_of(theorem.id, c)
        if strategy is None:
            unchecked.append(c.id)
            continue
        result = property_test(c, strategy)
        cons.append(result)
        if result.status == "holds":  # a mutant of a failing statement tells nothing
            muts += mutant_results(theorem, c, strategy, skip=EVALUATED_BY_TESTS.get(c.id, {}))
    return GateReport(
        theorem.id,
        origin,
        tuple(cons),
        tuple(muts),
        tuple(bound_results(theorem)),
        tuple(prose_problems(theorem)),
        tuple(unchecked),
        theorem.title,
    )


def gate(statement_id: str) -> GateReport:
    """The gate on the registered statement ``statement_id`` (connwalk's or anyone's;
    :class:`~theory.errors.UnknownTheoremError` listing the registered ids otherwise)."""
    from ..registry.external import get_registered

    rec = get_registered(statement_id)
    return gate_theorem(rec.theorem, rec.origin)
