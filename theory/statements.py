"""Statements as data: the structured pieces a registry entry is made of.

A theorem's hypotheses and conclusions are objects, not free text:

* :class:`Hypothesis` — ``id`` (``"T3.a"``), a short ``name``, the Markdown/LaTeX ``statement``, the
  name of an executable ``predicate`` (a function of :mod:`theory.oracles`, judged there in dense
  float64 / mpmath / exact ``Fraction`` — never by the numerics code the theorem is about) with its
  ``params``, and the necessity ``witnesses`` showing the hypothesis cannot be dropped.
* :class:`Conclusion` — the same, plus the tolerance rule of its predicate (its thresholds ``«name»``
  of ``params``: :class:`theory.formulas.tolerances.Tolerance` expressions the oracle evaluates), the derivation steps
  (``"T3::2. <x,(2I-Delta)x>_pi"``: a check of ``theory.derivations`` whose name starts with the
  text after ``::``) that prove it symbolically and the property tests (``path::test_name``) that
  exercise it.
* :class:`Witness` — a counterexample kept as an explicit regression case: either an exact
  ``instance`` (judged by the oracles in ``tests/numerics/test_necessity.py``) or a
  ``derivation`` necessity check (``expect_zero=False``) that must stay nonzero. Its text is a
  template whose data parts are filled from the ``instance`` (``«P»``, ``«O[0][1]»``: see
  :func:`fill_data`), so the text shows the data the oracles judge; :func:`typed_data` lists the
  matrices still typed in a text (checked against the instance by the tests).

Every number a statement carries lives in ``params``, and so does every formula it states (a
:class:`theory.formulas.Identity`: one SymPy expression, rendered with ``sympy.latex``, evaluated by
the oracles, proved by the derivations); the statement text refers to it with
``«name»`` (or ``«name|sign»``: ``-`` for -1, empty for +1; ``«name|+sign»``: ``+``/``-``;
``«name|tex»``: ``sympy.latex`` of exact data or of a SymPy expression string), so
THEOREMS.md and the property tests read the same value and editing it changes what is tested.
This module imports only the standard library (and SymPy, lazily, where a witness's data is
rendered).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

_PLACEHOLDER = re.compile(r"«([A-Za-z_][A-Za-z0-9_]*)(?:\|([+a-z]+))?»")


def latex_value(value: Any) -> str:
    """``«name|tex»``: exact data as :func:`latex_data`; a string that is not a rational number
    (``"sqrt(2)*sqrt(5 - sqrt(17))/2"``) as ``sympy.latex`` of its SymPy expression."""
    if isinstance(value, str) and not re.fullmatch(r"-?\d+(/\d+)?", value.strip()):
        import sympy as sp

        return sp.latex(sp.sympify(value))
    return latex_data(value)


def _fmt(value: Any, flt: str | None) -> str:
    if flt is None and callable(getattr(value, "markdown", None)):
        return value.markdown()  # a formula (theory.formulas.Identity): rendered from its SymPy expression
    if flt == "sign":
        return "-" if value < 0 else ""
    if flt == "+sign":
        return "-" if value < 0 else "+"
    if flt == "tex":
        return latex_value(value)
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


#: a witness's data placeholder: ``«key»`` or ``«key[0][1]»`` (0-based indices into the instance's value)
_DATA = re.compile(r"«([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)»")


def _exact(value: Any) -> Any:
    """Instance data (ints, ``"p/q"`` strings, nested lists) as SymPy rationals / nested lists."""
    import sympy as sp

    if isinstance(value, (list, tuple)):
        return [_exact(v) for v in value]
    if isinstance(value, float):
        raise TypeError(f"witness data must be exact (int or 'p/q' string), got the float {value!r}")
    return sp.Rational(value)


def _depth(value: Any) -> int:
    return 1 + _depth(value[0]) if isinstance(value, list) and value else 0


def latex_data(value: Any) -> str:
    """``sympy.latex`` of exact instance data: a number, a vector ``(a, b)``, a matrix (a 1×1
    matrix as its entry), a list of matrices ``M_1, M_2``."""
    import sympy as sp

    v = _exact(value)
    depth = _depth(v)
    if depth == 0:
        return sp.latex(v)
    if depth == 1:
        return r"\left(" + ", ".join(sp.latex(x) for x in v) + r"\right)"
    if depth == 2:
        return sp.latex(v[0][0]) if len(v) == len(v[0]) == 1 else sp.latex(sp.Matrix(v))
    return ", ".join(latex_data(x) for x in value)


def fill_data(template: str, instance: Mapping[str, Any] | None, formulas: Mapping[str, Any] | None = None) -> str:
    """``template`` with every ``«key»`` / ``«key[p][q]»`` replaced by :func:`latex_data` of that
    part of ``instance`` (write it inside ``$...$``), and every ``«name»`` of ``formulas`` by the
    formula's rendering; a key neither holds raises ``KeyError``."""

    def sub(m: re.Match) -> str:
        key, path = m.group(1), m.group(2)
        if formulas and key in formulas and not path:
            return _fmt(formulas[key], None)
        if instance is None or key not in instance:
            raise KeyError(f"witness text cites «{key}» but its instance has {sorted(instance or {})}")
        value = instance[key]
        for p in re.findall(r"\d+", path):
            value = value[int(p)]
        return latex_data(value)

    return _DATA.sub(sub, template)


#: a matrix typed in a text: ``[[...], [...]]`` (entries: integers, decimals, ``\frac{p}{q}``, ``\frac pq``)
_TYPED = re.compile(r"\[\[[^\[\]]*\](?:\s*,\s*\[[^\[\]]*\])*\]")


def _typed_number(s: str) -> Any:
    from fractions import Fraction

    s = s.strip().replace(" ", "")
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-")
    m = re.fullmatch(r"\\[dt]?frac\{?(\d+)\}?\{?(\d+)\}?", s)
    if m:
        return sign * Fraction(int(m.group(1)), int(m.group(2)))
    return sign * Fraction(s)  # ValueError for anything else: a typed entry must be a number


def typed_data(text: str) -> list[list[list[Any]]]:
    """The matrices typed literally in ``text`` (``[[0,2],[2,0]]``), as lists of ``Fraction``;
    ``ValueError`` names an entry that is not a plain number."""
    out = []
    for lit in _TYPED.findall(text):
        rows = re.findall(r"\[([^\[\]]*)\]", lit)
        out.append([[_typed_number(x) for x in r.split(",")] for r in rows])
    return out


@dataclass(frozen=True)
class Witness:
    """A necessity witness: dropping the hypothesis it belongs to makes ``fails`` (conclusion ids)
    fail on it. ``instance``: exact data (ints / ``"p/q"`` strings / nested lists) with a ``kind``
    key naming the oracle instance builder; ``derivation``: ``"T6::drop H1"`` (a necessity check
    of the theorem's symbolic derivation). ``statement``: the text, its data parts written as
    placeholders ``«key»`` / ``«key[p][q]»`` filled from ``instance`` (:attr:`text`), its formulas
    as ``«name»`` of ``params``."""

    id: str
    statement: str
    fails: tuple[str, ...] = ()
    instance: Mapping[str, Any] | None = None
    derivation: str | None = None
    #: formulas the text cites (``«name»``), e.g. the identity a derivation witness refutes
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The statement with its data placeholders filled from the instance (``sympy.latex``) and
        its formulas rendered from their expressions."""
        return fill_data(self.statement, self.instance, self.params)

    def with_data(self, **changes: Any) -> Witness:
        """A copy with some instance data replaced (the rendered text follows)."""
        return replace(self, instance={**(self.instance or {}), **changes})


#: words that assert (a sufficiency, a necessity, an equivalence, a universal): a registry text may
#: carry them only through an :class:`Assertion` placeholder, never as free text
ASSERTION_WORDS = (
    "suffice",
    "suffices",
    "sufficient",
    "necessary",
    "always",
    "never",
    "iff",
    "only if",
    "implies",
    "whatever",
)

#: how each kind of :class:`Assertion` is worded (``{premise}``: its first formula's premise)
_ASSERTION_TEXT = {
    "iff": "iff",
    "only_if": "only if",
    "suffices": "${premise}$ suffices",
    "not_necessary": "${premise}$ is not necessary",
    "never": "never",
    "always": "always",
}


@dataclass(frozen=True)
class Assertion:
    """A claim word of a statement, generated from structured fields that
    :mod:`theory.oracles.assertions` checks: ``suffices`` — ``formulas`` are conclusions carrying the
    premise (rendered from the first one's premise); ``not_necessary`` — ``formulas`` are ``(a
    sufficient formula, a witness formula without its premise)``; ``iff`` — ``formulas`` are the two
    directions, each the other's premise (or ``witnesses``: necessity witnesses of the theorem for the
    'only if', the statement's predicate for the 'if'); ``only_if`` — a formula with a premise;
    ``never`` / ``always`` — a universal the statement's predicate (or, in a note, the test of
    ``evaluated_by``) checks on every instance. A statement cites it as ``«name»``."""

    kind: str
    formulas: tuple[Any, ...] = ()
    witnesses: tuple[str, ...] = ()
    evaluated_by: str = ""

    #: not a formula the statement states, nor a tolerance (``Conclusion.formulas`` leaves it out)
    is_assertion = True

    def markdown(self) -> str:
        premise = ""
        if "{premise}" in _ASSERTION_TEXT[self.kind]:
            import sympy as sp

            lhs, rhs = self.formulas[0].premises[0]
            premise = sp.latex(sp.Eq(lhs, rhs, evaluate=False))
        return _ASSERTION_TEXT[self.kind].format(premise=premise)


@dataclass(frozen=True)
class Sharpness:
    """A sharpness witness of one bound the registry states: exact data (``instance``, as a
    :class:`Witness`'s) on which the bound ``bound`` (a param of the statement ``of``: a conclusion,
    a hypothesis or a note ``"T3.note0"``) is attained, judged by the exact check ``check`` of
    :mod:`theory.oracles.sharpness` against the bound *as the registry states it* (so a widened bound
    fails). ``sharp=False``: the bound is not sharp; the instance shows the best constant found and
    ``statement`` says so. ``statement``: context text, its data ``«key»`` filled from ``instance``."""

    id: str
    of: str
    bound: str
    statement: str
    instance: Mapping[str, Any]
    check: str
    sharp: bool = True

    @property
    def text(self) -> str:
        return fill_data(self.statement, self.instance)


@dataclass(frozen=True)
class Check:
    """How the gate (:mod:`theory.gate`) exercises one conclusion: ``strategy`` draws its instances (a
    Hypothesis strategy of dicts: value name -> array, numpy or torch, plus the sizes ``n``, ``d``,
    ``H`` the formulas range over, as ints); ``sizes``: the explicit sizes of the exact equivalence
    check of its mutants (by symbol name: ``{"n": 2, "d": 2}``); ``rules``: rewrites (functions of a
    SymPy expression, e.g. :func:`theory.gate.equivalence.symmetric_rule`) that state the theorem's
    hypotheses to that check."""

    strategy: Any
    sizes: Mapping[str, int] = field(default_factory=lambda: {"n": 2, "d": 2, "H": 2})
    rules: tuple[Any, ...] = ()


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
    #: the steps of the theorem's derivation for symbolic sizes (:mod:`theory.derivations.general`)
    #: that prove it, by name prefix
    general: tuple[str, ...] = ()
    #: how the gate draws its instances (:class:`Check`); None: the project's own tables (theory.gate.project)
    check: Check | None = field(default=None, compare=False)

    @property
    def text(self) -> str:
        return fill(self.statement, self.params)

    @property
    def formulas(self) -> dict[str, Any]:
        """The formula params (objects with a ``markdown`` method), by name; a tolerance is not one."""
        return {
            k: v
            for k, v in self.params.items()
            if callable(getattr(v, "markdown", None))
            and not getattr(v, "is_tolerance", False)
            and not getattr(v, "is_assertion", False)
        }

    @property
    def tolerances(self) -> dict[str, Any]:
        """The tolerance params (:class:`theory.formulas.tolerances.Tolerance`: the threshold of a check
        as a SymPy expression the oracle evaluates), by name."""
        return {k: v for k, v in self.params.items() if getattr(v, "is_tolerance", False)}

    @property
    def tolerance_text(self) -> str:
        """The tolerance rule with its thresholds (``«name»``) rendered from their expressions."""
        return fill(self.tolerance, self.params)

    def with_params(self, **changes: Any) -> Conclusion:
        """A copy with some params replaced (statement mutants are built this way)."""
        return replace(self, params={**self.params, **changes})


@dataclass(frozen=True)
class Convention:
    """A convention every statement uses (THEOREMS.md's first section): its text cites formulas as
    ``«name»`` (``params``: SymPy expressions of :mod:`theory.formulas.walks` / :mod:`theory.formulas`),
    and ``evaluated_by`` names the oracle that evaluates those very expressions (empty: none does,
    ``unevaluated`` says why)."""

    statement: str
    params: Mapping[str, Any] = field(default_factory=dict)
    evaluated_by: tuple[str, ...] = ()
    unevaluated: str = ""

    @property
    def text(self) -> str:
        out = fill(self.statement, self.params)
        if self.evaluated_by:  # (``unevaluated``, if any: the formulas a named test evaluates instead)
            tested = f"; {self.unevaluated}" if self.unevaluated else ""
            out += " (evaluated by " + ", ".join(f"`{p}`" for p in self.evaluated_by) + tested + ")"
        elif self.unevaluated:
            out += f" (not evaluated by an oracle: {self.unevaluated})"
        return out


@dataclass(frozen=True)
class Threshold:
    """A number a claim's decision rule states (a side of 0, a reference, a fraction of the null, a
    confidence level, a count), cited in the rule's text as ``«name»``: ``value`` is exact (an int or a
    ``"p/q"`` string), rendered as a decimal or, with ``percent``, as a percentage. The claim's decision
    function (:mod:`theory.oracles.decisions`) reads it from here, and its sharpness witness (a pair of
    synthetic inputs on either side, :mod:`theory.registry.claim_sharpness`) pins it."""

    value: Any
    percent: bool = False

    @property
    def exact(self) -> Any:
        from fractions import Fraction

        return Fraction(str(self.value))

    def __str__(self) -> str:
        v = self.exact * 100 if self.percent else self.exact
        text = str(v.numerator) if v.denominator == 1 else f"{float(v):g}"
        return text + ("%" if self.percent else "")


@dataclass(frozen=True)
class Claim:
    """An empirical claim (E1-E6): what is claimed, the statistic that measures it, the null model it
    is compared with and the decision rule that turns the comparison into a verdict; ``module``: the
    paper_checks code that measures it. Its texts cite formulas as ``«name»`` of ``params``, each
    evaluated by the test ``evaluated_by`` names."""

    id: str
    title: str
    statement: str
    statistic: str
    null_model: str
    decision_rule: str
    module: str
    source: str = ""
    tests: tuple[str, ...] = ()
    #: the formulas the texts cite (``«name»``): expressions of :mod:`theory.formulas.claims`
    params: Mapping[str, Any] = field(default_factory=dict)
    #: formula name -> the test that evaluates it against the statistic ``module`` computes
    evaluated_by: Mapping[str, str] = field(default_factory=dict)
    #: the numbers the decision rule states (``«name»``): :class:`Threshold`, judged by
    #: :mod:`theory.oracles.decisions` and pinned by the claim's sharpness witnesses
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    #: the sharpness witnesses of its thresholds and bounds (:class:`Sharpness`; set by the registry)
    sharpness: tuple[Any, ...] = ()

    def filled(self, part: str) -> str:
        """The text ``part`` (``"statement"``, ``"statistic"``, ``"null_model"``, ``"decision_rule"``)
        with its formulas rendered from their expressions and its thresholds from their values."""
        return fill(getattr(self, part), {**self.params, **self.thresholds})


class Note(str):
    """A theorem's note: the rendered text (a ``str``, so THEOREMS.md and every reader see the
    filled text), remembering its ``statement``, a template citing data as ``«name»`` /
    ``«name|tex»`` filled from ``params`` (e.g. a reference case's numbers from
    :mod:`theory.cases`, never typed in the text)."""

    statement: str
    params: Mapping[str, Any]

    def __new__(cls, statement: str, params: Mapping[str, Any] | None = None) -> Note:
        obj = super().__new__(cls, fill(statement, dict(params or {})))
        obj.statement, obj.params = statement, dict(params or {})
        return obj

    def __reduce__(self):  # copy / pickle rebuild from the template, not from the filled text
        return (Note, (self.statement, self.params))
