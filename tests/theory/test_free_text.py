"""No formula in THEOREMS.md is free text.

Every ``$...$`` span of a registry text (a theorem's title, source claim, hypotheses, witnesses,
conclusions and notes; the conventions; the claims' statement, statistic, null model and decision
rule) is either

* *notation*: a name, possibly with sub/superscripts, primes, a function application or a tuple of
  names (``$\\pi$``, ``$O_{ij}$``, ``$A^h(X)$``, ``$(i, a)$``, ``$\\operatorname{Fix}(T)$``): no
  relation, no operation, no number; or
* *a binding of rendered data*: names equal to a placeholder (``$T = «T»$``,
  ``$O_{12} = O_{21} = «O[0][1]»$``), whose right side is filled from the instance or params;

and every other formula is a placeholder ``«name»`` rendered by ``sympy.latex`` from the
expression in the statement's params (the one the oracles evaluate). A span that states a relation
(``=``, ``<``, ``\\le``, ``\\in``, ``\\approx``, …), an operation (``+``, ``-``, ``/``, ``\\otimes``,
``\\times``, ``\\sum``, ``\\frac``, a norm, ``\\max``, …) or a number (outside a sub/superscript)
in the template itself is a formula typed by hand: the test names it.
"""

from __future__ import annotations

import re

import pytest

from theory import registry
from theory.gate.prose import theorem_texts

pytestmark = pytest.mark.theorem(*registry.ids())

_SPAN = re.compile(r"\$([^$]*)\$")
_PLACEHOLDER = re.compile(r"«[^»]*»")
_NAME = r"[A-Za-z\\][A-Za-z0-9\\{}_^'*,]*"
_BINDING = re.compile(rf"^\s*(?:{_NAME}\s*=\s*)+§\s*$")
#: sub/superscript groups (innermost braces first, then single-token ones)
_SCRIPT_BRACED = re.compile(r"[_^]\{[^{}]*\}")
_SCRIPT_TOKEN = re.compile(r"[_^](?:\\[A-Za-z]+|[A-Za-z0-9*])")
_OPERATOR = re.compile(r"[=<>+\-/|0-9]")
_COMMANDS = [
    "le",
    "leq",
    "ge",
    "geq",
    "ne",
    "neq",
    "approx",
    "in",
    "notin",
    "subset",
    "subseteq",
    "supset",
    "to",
    "mapsto",
    "otimes",
    "oplus",
    "times",
    "sum",
    "prod",
    "frac",
    "tfrac",
    "dfrac",
    "sqrt",
    "pm",
    "mp",
    "cdot",
    "odot",
    "circ",
    "lVert",
    "rVert",
    "Vert",
    "langle",
    "rangle",
    "max",
    "min",
    "sup",
    "inf",
    "lim",
    "dim",
    "ker",
    "det",
    "exp",
    "log",
    "partial",
    "nabla",
    "infty",
    "int",
]
_COMMAND = re.compile(r"\\(" + "|".join(_COMMANDS) + r")(?![A-Za-z])")
_OPERATORNAME = re.compile(r"\\operatorname\{(argmax|argmin|Re|Im|eig|rank|diag|spec|sign|span|sym|tr|vec)\}")


def free_formulas(template: str) -> list[str]:
    """The ``$...$`` spans of ``template`` that are formulas typed by hand (module docstring)."""
    out = []
    for m in _SPAN.finditer(template):
        span = m.group(1)
        core = _PLACEHOLDER.sub("§", span)
        if core.strip() == "§" or _BINDING.match(core):
            continue
        stripped, prev = core, None
        while stripped != prev:
            prev, stripped = stripped, _SCRIPT_BRACED.sub("", stripped)
        stripped = _SCRIPT_TOKEN.sub("", stripped)
        if _OPERATOR.search(stripped) or _COMMAND.search(stripped) or _OPERATORNAME.search(stripped):
            out.append(span)
    return out


def _theorem_texts(t) -> list[tuple[str, str]]:
    """The prose rule's texts of ``t`` (:func:`theory.gate.prose.theorem_texts`) with its source claim,
    without the sharpness witnesses (their free text is tests/theory/test_assertions.py's)."""
    witnesses = {sh.id for sh in t.sharpness}
    texts = [(where, text) for where, text in theorem_texts(t) if where not in witnesses]
    return [*texts[:1], (f"{t.id}.source", getattr(t.source.claim, "statement", t.source.claim)), *texts[1:]]


def registry_texts() -> dict[str, list[tuple[str, str]]]:
    """Every registry text template, by entry (``conventions``, theorem and claim ids)."""
    out: dict[str, list[tuple[str, str]]] = {
        "conventions": [
            (f"convention{q}", cv.statement + " " + cv.unevaluated) for q, cv in enumerate(registry.CONVENTIONS)
        ]
    }
    for tid in registry.ids():
        out[tid] = _theorem_texts(registry.get(tid))
    for cid in registry.claim_ids():
        cl = registry.get_claim(cid)
        fields = ("title", "statement", "statistic", "null_model", "decision_rule")
        out[cid] = [(f"{cid}.{f}", getattr(cl, f)) for f in fields]
    return out


def _entries() -> list[str]:
    return list(registry_texts())


@pytest.mark.parametrize("entry", _entries())
def test_no_formula_is_free_text(entry):
    found = [(where, span) for where, text in registry_texts()[entry] for span in free_formulas(text)]
    assert not found, f"{entry}: formulas typed by hand (render them from an expression): {found}"


@pytest.mark.parametrize(
    "span",
    [
        "\\pi",
        "O_{ij}",
        "A^h(X)",
        "(i, a)",
        "\\operatorname{Fix}(T)",
        "x_i^\\top",
        "T_{h,\\cdot,\\cdot}",
        "A^1",
        "O_{12}",
        "\\mathbb{R}^d",
        "T = «T»",
        "O_{12} = O_{21} = «O[0][1]»",
        "«formula»",
        "x^*",
    ],
)
def test_notation_and_bindings_are_not_formulas(span):
    assert free_formulas(f"text ${span}$ text") == []


@pytest.mark.parametrize(
    "span",
    [
        "\\Delta = I - W",
        "B_{12} \\ne 0 = P_{12}",
        "x_i \\in \\mathbb{R}^d",
        "nd\\times nd",
        "A\\otimes T",
        "n = 64",
        "10^{-10}",
        "-1",
        "0",
        "\\frac12",
        "\\lVert x\\rVert_\\pi^2",
        "n \\ge «n_min»",
        "«a» \\approx «b»",
        "k^* = \\operatorname{argmax}_k \\max \\operatorname{Re}\\operatorname{eig} M(k)",
        "\\operatorname{rank} T_h \\le d_h",
        "0/0",
        "|k| = 3",
        "i \\to j",
        "\\dim\\ker\\Delta",
    ],
)
def test_hand_typed_formulas_are_found(span):
    assert free_formulas(f"text ${span}$ text") == [span]


#: a relation or operation sign typed in prose (outside ``$...$`` and placeholders): a formula written
#: in unicode instead of rendered from an expression
_UNICODE_FORMULA = re.compile(r"[=<>≤≥≠≈·×⊗⊕‖∈∉⊂⊆⇔⇒→↦−±√∑Σ∏∞]")
#: a size binding of a proof scope (``n = 2..3``, ``n = d = H = 2``, ``d = 1..2``): words, not a formula
_SIZES = re.compile(r"\b(?:[ndHk]|heads|ring)(?:\s*=\s*[ndHk])*\s*=\s*\d+(?:\.\.\d+)?")


def unicode_formulas(text: str) -> list[str]:
    """The relation/operation signs of ``text`` outside its ``$...$`` spans and ``«placeholders»``."""
    prose = _PLACEHOLDER.sub(" ", _SPAN.sub(" ", text))
    return _UNICODE_FORMULA.findall(prose)


def _tolerances_and_scopes() -> list[tuple[str, str]]:
    out = []
    for tid in registry.ids():
        for c in registry.get(tid).conclusions:
            out += [(f"{c.id}.tolerance", c.tolerance), (f"{c.id}.scope", _SIZES.sub("", c.scope))]
    return out


def test_tolerances_and_scopes_have_no_unicode_formula():
    """A conclusion's tolerance text cites its thresholds as ``«name»`` (expressions its oracle
    evaluates: :mod:`theory.formulas.tolerances`) and its proof scope says in words what is proved;
    neither types a formula (``≤ 1e-9·‖W‖₂``, ``u ⊗ f``, ``Δ = I − A ⊗ T``) in prose."""
    found = [(where, unicode_formulas(text)) for where, text in _tolerances_and_scopes()]
    found = [(where, signs) for where, signs in found if signs]
    assert not found, found


@pytest.mark.parametrize(
    "text",
    [
        "relative residual ≤ 64·ε·(size)",
        "distance ≤ 1e-6·max(1, ‖A‖‖T‖)",
        "miss ≤ 1e-9 ⇔ every block",
        "an edge with A_ij > 0 = A_ji",
        "the eigenvectors u ⊗ f",
        "Δ = I − A ⊗ T as the walk",
    ],
)
def test_unicode_formulas_are_found(text):
    assert unicode_formulas(text)


def test_placeholders_spans_and_sizes_are_not_unicode_formulas():
    assert not unicode_formulas("relative residual «tol» ($\\varepsilon$: the machine epsilon; $x = y$ aside)")
    assert not _UNICODE_FORMULA.search(_SIZES.sub("", "the stated instance (n = d = H = 2); n = 2..3, d = 1..2"))


#: what a formula-free title or description may not contain (a relation, an operation, a sub/superscript, a brace,
#: TeX or code)
_FORMULA_CHARS = re.compile(r"[=<>^_/+*|\[\]{}$\\`]")


def test_every_derivation_step_has_a_formula_free_title():
    """THEOREMS.md shows each derivation step by its title (the step names are code labels), and each
    fixed-size derivation by a description of its instances in words."""
    from theory import steps

    names = [s[1] for table in (steps.STEPS, steps.GENERAL_STEPS) for entry in table.values() for s in entry]
    missing = [x for x in names if x not in steps.TITLES]
    assert not missing, f"steps without a title: {missing}"
    assert set(steps.TITLES) == set(names), "titles of steps that no longer exist"
    typed = [x for x in [*steps.TITLES.values(), *steps.INSTANCES.values()] if _FORMULA_CHARS.search(x)]
    assert not typed, typed
    assert set(steps.INSTANCES) == {t for t in registry.ids() if registry.get(t).steps}


def test_formula_free_text_check_catches_a_formula_in_a_title():
    assert _FORMULA_CHARS.search("symmetric M: pi_i A_ij = pi_j A_ji")
    assert not _FORMULA_CHARS.search("symmetric scores: detailed balance with the partition functions as weights")


def test_theorems_md_shows_no_step_label():
    """No derivation step label (code, with its formulas) is printed in THEOREMS.md: only its title."""
    from theory import steps
    from theory.render import render_markdown

    text = render_markdown()
    shown = [x for x in steps.TITLES if _FORMULA_CHARS.search(x) and x in text]
    assert not shown, shown
