"""Every registered statement, the project's and everyone else's, with where each comes from.

Two ways in, one record out (:class:`Registered`: the :class:`~theory.theorem.Theorem` and its
``origin``):

* the entry-point group :data:`GROUP` (``connwalk.theorems``): an installed package declares, in its
  ``pyproject.toml``, ``[project.entry-points."connwalk.theorems"] mine = "my_pkg.theorems:STATEMENTS"``;
  the object named is a statement, an iterable of statements, or a function returning either;
* :func:`register` in-process (a ``conftest.py``): ``register(statement)`` (:func:`unregister` undoes it).

connwalk's own entries (``THEOREMS``: L1-L4, T1-T6) come through the same path: its ``pyproject.toml``
declares :data:`OWN` in that group, and :func:`all_statements` loads that declaration with the loader
every entry point goes through (also where the installed metadata predates it), first. An id registered
twice (two packages, or a package and connwalk) is refused, naming both origins.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import import_module, metadata
from typing import Any

from ..errors import StatementError, UnknownTheoremError
from ..theorem import Theorem

#: the entry-point group an installed package registers its statements in
GROUP = "connwalk.theorems"
#: connwalk's own declaration in that group (its pyproject.toml): ``name = "module:attribute"``
OWN = ("connwalk", "theory.registry:THEOREMS")


@dataclass(frozen=True)
class Registered:
    """A registered statement and where it comes from (``"entry point connwalk.theorems: name =
    module:attr (distribution)"``, or ``"in-process: module"``)."""

    theorem: Theorem
    origin: str

    @property
    def id(self) -> str:
        return self.theorem.id


_IN_PROCESS: dict[str, Registered] = {}


def resolve(value: str) -> Any:
    """The object an entry point's value ``"module:attr.attr"`` names (its module imported)."""
    mod, _, attr = value.partition(":")
    obj: Any = import_module(mod.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def statements_of(obj: Any, argument: str) -> list[Theorem]:
    """The statements ``obj`` holds: a :class:`Theorem`, an iterable of them, or a function returning
    either; :class:`~theory.errors.StatementError` naming ``argument`` for anything else."""
    if callable(obj) and not isinstance(obj, Theorem):
        obj = obj()
    items = [obj] if isinstance(obj, Theorem) else obj
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise StatementError(argument, f"expected a Theorem or an iterable of them, got {type(obj).__name__}")
    out = list(items)
    bad = [type(x).__name__ for x in out if not isinstance(x, Theorem)]
    if bad:
        raise StatementError(argument, f"expected Theorem records (theory.api.statement), got {bad}")
    return out


def check_statement(t: Theorem, argument: str = "statement") -> None:
    """The shape every registered statement has: an id, conclusion ids unique and prefixed by it, and a
    :class:`~theory.statements.Check` (its instance strategy) on every conclusion the generic oracle judges."""
    if not isinstance(t, Theorem):
        raise StatementError(argument, f"expected a Theorem (theory.api.statement), got {type(t).__name__}")
    if not t.id or not isinstance(t.id, str) or any(ch.isspace() for ch in t.id):
        raise StatementError(argument, f"a statement id is a non-empty word, got {t.id!r}")
    ids = [x.id for x in t.hypotheses] + [x.id for x in t.conclusions]
    dup = sorted({x for x in ids if ids.count(x) > 1})
    if dup:
        raise StatementError(argument, f"{t.id}: hypothesis/conclusion ids repeated: {dup}")
    stray = [x for x in ids if not x.startswith(t.id + ".")]
    if stray:
        raise StatementError(argument, f"{t.id}: hypothesis/conclusion ids must start with {t.id + '.'!r}: {stray}")
    if not t.conclusions:
        raise StatementError(argument, f"{t.id}: states no conclusion")
    unchecked = [x.id for x in t.conclusions if x.predicate == "formulas_hold" and x.check is None]
    if unchecked:
        raise StatementError(argument, f"{t.id}: conclusions judged by the generic oracle need a Check: {unchecked}")


def _entry_points() -> Iterator[tuple[str, str, str]]:
    """``(name, value, distribution)`` of the group's entry points, connwalk's own declaration first."""
    yield OWN[0], OWN[1], "connwalk"
    for ep in metadata.entry_points(group=GROUP):
        if (ep.name, ep.value) == OWN:
            continue  # the installed metadata of connwalk itself
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        yield ep.name, ep.value, dist


def all_statements() -> list[Registered]:
    """Every registered statement, with its origin: connwalk's, then the installed packages' (entry
    points, in the order importlib.metadata lists them), then the in-process ones. A duplicate id is a
    :class:`~theory.errors.StatementError` naming both origins."""
    out: dict[str, Registered] = {}

    def add(rec: Registered) -> None:
        if rec.id in out:
            raise StatementError(rec.origin, f"statement id {rec.id!r} is also registered by {out[rec.id].origin}")
        out[rec.id] = rec

    for name, value, dist in _entry_points():
        where = f"entry point {GROUP}: {name} = {value} ({dist})"
        try:
            found = statements_of(resolve(value), where)
        except StatementError:
            raise
        except Exception as exc:  # an entry point that does not load is named, not skipped
            raise StatementError(where, f"does not load: {type(exc).__name__}: {exc}") from exc
        for t in found:
            check_statement(t, where)
            add(Registered(t, where))
    for rec in _IN_PROCESS.values():
        add(rec)
    return list(out.values())


def register(statement: Theorem, origin: str | None = None) -> Registered:
    """Register ``statement`` in this process (a conftest); ``origin`` defaults to the caller's module.
    Registering the same id again replaces an in-process registration of it (a reloaded conftest); an id
    another origin registers is refused (:class:`~theory.errors.StatementError`)."""
    check_statement(statement)
    if origin is None:
        origin = f"in-process: {sys._getframe(1).f_globals.get('__name__', '?')}"
    rec = Registered(statement, origin)
    previous = _IN_PROCESS.pop(statement.id, None)
    try:
        all_statements_by_id(extra=rec)
    except StatementError:
        if previous is not None:
            _IN_PROCESS[statement.id] = previous
        raise
    _IN_PROCESS[statement.id] = rec
    return rec


def unregister(statement_id: str) -> None:
    """Undo :func:`register` (an id not registered in-process: :class:`~theory.errors.UnknownTheoremError`)."""
    if statement_id not in _IN_PROCESS:
        raise UnknownTheoremError(statement_id, sorted(_IN_PROCESS))
    del _IN_PROCESS[statement_id]


def all_statements_by_id(extra: Registered | None = None) -> dict[str, Registered]:
    """:func:`all_statements` by id (with ``extra`` added as if registered: the duplicate check)."""
    recs = all_statements()
    out = {r.id: r for r in recs}
    if extra is not None:
        if extra.id in out:
            raise StatementError(
                extra.origin, f"statement id {extra.id!r} is also registered by {out[extra.id].origin}"
            )
        out[extra.id] = extra
    return out


def get_registered(statement_id: str) -> Registered:
    """The registered statement ``statement_id`` (ours or anyone's); :class:`~theory.errors.UnknownTheoremError`
    listing every registered id otherwise."""
    by_id = all_statements_by_id()
    if not isinstance(statement_id, str) or statement_id not in by_id:
        raise UnknownTheoremError(statement_id, list(by_id))
    return by_id[statement_id]
