"""State your own theorem: the public way to write a statement the gate (:mod:`theory.gate`) checks.

A statement is the record the registry's own entries are (:class:`~theory.theorem.Theorem`, with
:class:`~theory.statements.Hypothesis`, :class:`~theory.statements.Conclusion`,
:class:`~theory.statements.Witness`, :class:`~theory.statements.Sharpness`); the builders below fill
what a user need not write. You write **formulas** (SymPy expressions over indexed values), not oracles
and not tests::

    import sympy as sp
    from hypothesis import strategies as st
    from theory import api

    P = sp.IndexedBase("P")  # evaluated from the instance value "P"
    rows = api.identity("rows", sp.Sum(P[api.i, api.k], (api.k, 0, api.n - 1)), 1, free=(api.i,))
    MINE = api.statement(
        "MINE", "rows of a stochastic walk sum to one",
        conclusions=[api.conclusion("MINE.rows", "«rows»", formulas={"rows": rows}, strategy=my_walks)],
    )
    api.register(MINE)  # or an entry point in the group "connwalk.theorems"

* :func:`identity` — ``lhs = rhs`` at every value of the ``free`` indices, with ``premises`` (pairs
  ``(l, r)`` the instance must satisfy, else it is outside the statement) and ``where`` definitions
  (pairs ``(head, body)``, evaluated in order); :func:`relation` — an inequality (``sp.Le``, ``sp.Ge``,
  ``sp.Lt``, ``sp.Gt``, or ``sp.Implies(condition, inequality)``). Index symbols: ``i, j, k, m`` run over
  ``0..n-1``, ``a, b, c`` over ``0..d-1``, ``h, l`` over ``0..H-1`` (:data:`i`, ..., :data:`n`, :data:`d`,
  :data:`H` below).
* :func:`conclusion` — its text cites each formula as ``«name»`` (rendered with ``sympy.latex``); the
  ``strategy`` (a Hypothesis strategy, e.g. built from :mod:`numerics.strategies` or your own) draws the
  instances: dicts of value name -> array (numpy or torch) and the sizes ``n``, ``d``, ``H`` as ints. The
  predicate is the generic oracle :func:`theory.oracles.generic.formulas_hold`: every formula evaluated
  by ``lambdify`` of its own expression on the instance, relative residual within ``tol`` (a
  :class:`~theory.formulas.tolerances.Tolerance`; default ``64·ε·N``, ``N`` the product of the sizes the
  formulas mention), decided three-valued. ``sizes`` and ``rules``: the explicit sizes and the rewrites
  (your hypotheses, e.g. :func:`theory.gate.equivalence.symmetric_rule`) of the exact check that a
  generated mutant states the same (:class:`~theory.statements.Check`).
* :func:`sharpness` — a witness that a bound (a non-strict relation with no free index, see
  :func:`theory.gate.sharp.is_bound`) is attained, on exact data (ints, ``"p/q"`` strings, nested
  lists): the gate fails a bound without one, naming it.
* :func:`statement` — the record; :func:`register` (in-process) / the entry-point group
  ``connwalk.theorems`` (an installed package) make it known to ``pytest --theorem ID``, ``connwalk
  theorems`` and :func:`theory.gate.gate`; :func:`all_statements` lists every one with its origin.

Bad input raises :class:`~theory.errors.StatementError` naming the argument.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping
from typing import Any

import sympy as sp

from . import formulas as F
from .errors import StatementError
from .formulas import Identity
from .formulas.tolerances import Tolerance, eps
from .formulas.walks import Relation
from .oracles.generic import NAME as GENERIC_PREDICATE
from .registry.common import RELATIVE_TOLERANCE
from .registry.external import GROUP, Registered, all_statements, get_registered, register, unregister
from .statements import Check, Conclusion, Hypothesis, Note, Sharpness, Witness
from .theorem import Source, Theorem

n, d, H = F.n, F.d, F.H
i, j, k, m, a, b, c, h, l = F.i, F.j, F.k, F.m, F.a, F.b, F.c, F.h, F.l

__all__ = [
    "GROUP",
    "Check",
    "Conclusion",
    "Hypothesis",
    "Identity",
    "Registered",
    "Relation",
    "Sharpness",
    "Source",
    "Theorem",
    "Tolerance",
    "Witness",
    "all_statements",
    "conclusion",
    "get_registered",
    "hypothesis",
    "identity",
    "register",
    "relation",
    "sharpness",
    "statement",
    "unregister",
    *["n", "d", "H", "i", "j", "k", "m", "a", "b", "c", "h", "l"],
]


def identity(name: str, lhs: Any, rhs: Any, *, free=(), premises=(), where=()) -> Identity:
    """``lhs = rhs`` for every value of ``free`` (module docstring)."""
    if not isinstance(name, str) or not name:
        raise StatementError("name", f"a formula's name is a non-empty string, got {name!r}")
    return Identity(name, sp.sympify(lhs), sp.sympify(rhs), tuple(free), tuple(premises), tuple(where))


def relation(name: str, rel: Any, *, free=(), where=()) -> Relation:
    """An inequality (or ``condition ⇒ inequality``) for every value of ``free``."""
    if not isinstance(rel, (sp.core.relational.Relational, sp.Implies)):
        raise StatementError("rel", f"{name}: expected a SymPy inequality (sp.Le, sp.Ge, ...), got {rel!r}")
    return Relation(name, rel, tuple(free), tuple(where))


def default_tolerance(formulas: Iterable[Any]) -> Tolerance:
    """``64·ε·N``: ``N`` the product of the sizes (``n``, ``d``, ``H``) the formulas mention."""
    syms: set = set()
    for f in formulas:
        for part in (getattr(f, "lhs", None), getattr(f, "rhs", None), getattr(f, "rel", None)):
            syms |= getattr(part, "free_symbols", set())
        for _, body in getattr(f, "where", ()):
            syms |= sp.sympify(body).free_symbols
    size = functools.reduce(operator.mul, [s for s in (n, d, H) if s in syms], sp.S.One)
    return Tolerance("formula", 64 * eps * size)


def conclusion(
    id: str,
    statement: str,
    *,
    formulas: Mapping[str, Any],
    strategy: Any,
    tol: Tolerance | None = None,
    sizes: Mapping[str, int] | None = None,
    rules: Iterable[Any] = (),
    params: Mapping[str, Any] | None = None,
) -> Conclusion:
    """A conclusion judged by the generic oracle on ``strategy``'s instances (module docstring)."""
    if not formulas:
        raise StatementError("formulas", f"{id}: a conclusion states at least one formula")
    for key, f in formulas.items():
        if not isinstance(f, (Identity, Relation)):
            raise StatementError("formulas", f"{id}: {key!r} is not an api.identity / api.relation, got {f!r}")
    if not callable(getattr(strategy, "example", None)):
        raise StatementError("strategy", f"{id}: expected a Hypothesis strategy, got {strategy!r}")
    if tol is not None and not isinstance(tol, Tolerance):
        raise StatementError("tol", f"{id}: expected a theory.formulas.tolerances.Tolerance, got {tol!r}")
    tol = tol if tol is not None else default_tolerance(formulas.values())
    check = Check(strategy, dict(sizes or {"n": 2, "d": 2, "H": 2}), tuple(rules))
    return Conclusion(
        id=id,
        statement=statement,
        predicate=GENERIC_PREDICATE,
        params={**(params or {}), **formulas, "tol": tol},
        tolerance=RELATIVE_TOLERANCE,
        scope="checked numerically only (the gate's property test)",
        check=check,
    )


def hypothesis(id: str, name: str, statement: str, *, params=None, witnesses=()) -> Hypothesis:
    """A hypothesis (its text; the instance strategy of each conclusion draws only instances of it)."""
    return Hypothesis(id, name, statement, params=dict(params or {}), witnesses=tuple(witnesses))


def sharpness(id: str, of: str, bound: str, statement: str, instance: Mapping[str, Any], sharp: bool = True):
    """A witness that the relation ``bound`` of conclusion ``of`` is attained on the exact ``instance``."""
    return Sharpness(id, of, bound, statement, dict(instance), "relation_attained", sharp)


def _underived(**sizes: int):
    raise ValueError("a statement of theory.api has no symbolic derivation (its conclusions' scope says so)")


def statement(
    id: str,
    title: str,
    *,
    conclusions: Iterable[Conclusion],
    hypotheses: Iterable[Hypothesis] = (),
    sharpness: Iterable[Sharpness] = (),
    notes: Iterable[str] = (),
    source: str = "",
    kind: str = "theorem",
) -> Theorem:
    """The statement record (checked as :func:`register` checks it)."""
    t = Theorem(
        id=id,
        title=title,
        kind=kind,
        source=Source(source or "stated with theory.api", title, ""),
        hypotheses=tuple(hypotheses),
        conclusions=tuple(conclusions),
        derivation=_underived,
        notes=tuple(x if isinstance(x, Note) else Note(x) for x in notes),
        sharpness=tuple(sharpness),
    )
    from .registry.external import check_statement

    check_statement(t, f"statement {id!r}")
    return t
