"""Statements as data: the structured pieces a registry entry is made of.

A theorem's hypotheses and conclusions are objects, not free text:

* :class:`Hypothesis` — ``id`` (``"T3.a"``), a short ``name``, the Markdown/LaTeX ``statement``, the
  name of an executable ``predicate`` (a function of :mod:`theory.oracles`, judged there in dense
  float64 / mpmath / exact ``Fraction`` — never by the numerics code the theorem is about) with its
  ``params``, and the necessity ``witnesses`` showing the hypothesis cannot be dropped.
* :class:`Conclusion` — the same, plus the tolerance rule of its predicate, the derivation steps
  (``"T3::2. <x,(2I-Delta)x>_pi"``: a check of ``theory.derivations`` whose name starts with the
  text after ``::``) that prove it symbolically and the property tests (``path::test_name``) that
  exercise it.
* :class:`Witness` — a counterexample kept as an explicit regression case: either an exact
  ``instance`` (judged by the oracles in ``tests/numerics/test_necessity.py``) or a
  ``derivation`` necessity check (``expect_zero=False``) that must stay nonzero.

Every number a statement carries lives in ``params``, and so does every formula it states (a
:class:`theory.formulas.Identity`: one SymPy expression, rendered with ``sympy.latex``, evaluated by
the oracles, proved by the derivations); the statement text refers to it with
``«name»`` (or ``«name|sign»``: ``-`` for -1, empty for +1; ``«name|+sign»``: ``+``/``-``), so
THEOREMS.md and the property tests read the same value and editing it changes what is tested.
This module imports only the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

_PLACEHOLDER = re.compile(r"«([A-Za-z_][A-Za-z0-9_]*)(?:\|([+a-z]+))?»")


def _fmt(value: Any, flt: str | None) -> str:
    if flt is None and callable(getattr(value, "markdown", None)):
        return value.markdown()  # a formula (theory.formulas.Identity): rendered from its SymPy expression
    if flt == "sign":
        return "-" if value < 0 else ""
    if flt == "+sign":
        return "-" if value < 0 else "+"
    if flt is not None:
        raise ValueError(f"unknown placeholder filter {flt!r}")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def fill(template: str, params: Mapping[str, Any]) -> str:
    """``template`` with every ``«name»`` / ``«name|filter»`` replaced from ``params``; a name
    missing from ``params`` raises ``KeyError`` naming it (a statement cannot cite a number it does
    not carry)."""

    def sub(m: re.Match) -> str:
        name, flt = m.group(1), m.group(2)
        if name not in params:
            raise KeyError(f"statement cites «{name}» but its params are {sorted(params)}")
        return _fmt(params[name], flt)

    return _PLACEHOLDER.sub(sub, template)


def placeholders(template: str) -> set[str]:
    return {m.group(1) for m in _PLACEHOLDER.finditer(template)}


@dataclass(frozen=True)
class Witness:
    """A necessity witness: dropping the hypothesis it belongs to makes ``fails`` (conclusion ids)
    fail on it. ``instance``: exact data (ints / ``"p/q"`` strings / nested lists) with a ``kind``
    key naming the oracle instance builder; ``derivation``: ``"T6::drop H1"`` (a necessity check
    of the theorem's symbolic derivation)."""

    id: str
    text: str
    fails: tuple[str, ...] = ()
    instance: Mapping[str, Any] | None = None
    derivation: str | None = None


@dataclass(frozen=True)
class Hypothesis:
    id: str
    name: str
    statement: str
    predicate: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    witnesses: tuple[Witness, ...] = ()

    @property
    def text(self) -> str:
        return fill(self.statement, self.params)


@dataclass(frozen=True)
class Conclusion:
    id: str
    statement: str
    predicate: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    tolerance: str = ""
    derivations: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    #: how far the symbolic proof reaches: "all n, d", "all n, d, H", "n = 3", "checked numerically only", ...
    scope: str = ""
    #: the steps of the theorem's derivation for symbolic sizes (:mod:`theory.derivations_general`)
    #: that prove it, by name prefix
    general: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return fill(self.statement, self.params)

    @property
    def formulas(self) -> dict[str, Any]:
        """The formula params (objects with a ``markdown`` method), by name."""
        return {k: v for k, v in self.params.items() if callable(getattr(v, "markdown", None))}

    def with_params(self, **changes: Any) -> Conclusion:
        """A copy with some params replaced (statement mutants are built this way)."""
        return replace(self, params={**self.params, **changes})


@dataclass(frozen=True)
class Claim:
    """An empirical claim (E1-E6): what is claimed, the statistic that measures it, the null model it
    is compared with and the decision rule that turns the comparison into a verdict; ``module``: the
    paper_checks code that measures it."""

    id: str
    title: str
    statement: str
    statistic: str
    null_model: str
    decision_rule: str
    module: str
    source: str = ""
    tests: tuple[str, ...] = ()
