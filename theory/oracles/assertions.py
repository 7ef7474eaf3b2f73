"""Structural checks of the claim words (:class:`theory.statements.Assertion`): each kind is backed by
structure an oracle evaluates, never by the word alone.

* ``suffices``: every formula is a conclusion carrying the premise the word is rendered from, and the
  statement states (and its predicate evaluates) it;
* ``not_necessary``: ``(sufficient, witness)``: the witness formula is stated and does not carry the
  sufficient formula's premise;
* ``iff``: ``(if, only if)`` formulas, each the other's premise; or the statement's predicate
  (``evaluated_by``) for the 'if' and necessity witnesses of the theorem that break the statement for
  the 'only if';
* ``only_if``: a stated formula with a premise;
* ``never`` / ``always``: the universal is evaluated on every instance by the statement's predicate, or
  (in a note) by the named test, which exists.

:func:`problems` returns what is missing (empty: the assertion is backed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]


def _stated(statement, f) -> bool:
    return any(v is f or v == f for v in getattr(statement, "params", {}).values())


def _test_exists(path: str) -> bool:
    file, _, name = path.partition("::")
    p = _ROOT / file
    return p.is_file() and (not name or f"def {name}(" in p.read_text(encoding="utf-8"))


def problems(theorem, statement, a: Any) -> list[str]:
    """What backs the assertion ``a`` of ``statement`` (a conclusion or a note of ``theorem``): the
    missing pieces, as sentences (empty when it is backed)."""
    out: list[str] = []
    fs = a.formulas
    for f in fs:
        if not _stated(statement, f):
            out.append(f"{a.kind}: formula {f} is not stated by {statement.id}")
    if a.kind == "suffices":
        if not fs or not fs[0].premises:
            return [*out, "suffices: no formula with a premise"]
        premise = fs[0].premises[0]
        out += [f"suffices: {f} does not carry the premise {premise}" for f in fs if premise not in f.premises]
        if not getattr(statement, "predicate", None):
            out.append("suffices: no predicate evaluates the formulas")
    elif a.kind == "not_necessary":
        if len(fs) != 2 or not fs[0].premises:
            return [*out, "not_necessary: needs (a sufficient formula, a witness formula)"]
        if fs[0].premises[0] in fs[1].premises:
            out.append("not_necessary: the witness carries the premise it should do without")
    elif a.kind == "iff":
        if fs:
            if len(fs) != 2:
                return [*out, "iff: needs the two directions"]
            f_if, f_only = fs
            if (f_only.lhs, f_only.rhs) not in tuple(f_if.premises):
                out.append("iff: the 'if' formula's premise is not the 'only if' conclusion")
            if (f_if.lhs, f_if.rhs) not in tuple(f_only.premises):
                out.append("iff: the 'only if' formula's premise is not the 'if' conclusion")
        else:
            if a.evaluated_by != getattr(statement, "predicate", None):
                out.append(f"iff: {a.evaluated_by!r} is not the statement's predicate")
            known = {w.id: w for h in theorem.hypotheses for w in h.witnesses}
            for wid in a.witnesses:
                if wid not in known:
                    out.append(f"iff: no necessity witness {wid}")
                elif statement.id not in known[wid].fails:
                    out.append(f"iff: witness {wid} does not break {statement.id}")
    elif a.kind == "only_if":
        if len(fs) != 1 or not fs[0].premises:
            out.append("only_if: needs one formula with a premise")
    elif a.kind in ("never", "always"):
        by = a.evaluated_by
        if "::" in by:
            if not _test_exists(by):
                out.append(f"{a.kind}: no test {by}")
        elif not by or by != getattr(statement, "predicate", None):
            out.append(f"{a.kind}: {by!r} is not the statement's predicate")
    else:
        out.append(f"unknown assertion kind {a.kind!r}")
    return out
