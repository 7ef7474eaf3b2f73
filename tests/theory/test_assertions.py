"""No claim in prose: the words that assert (:data:`theory.statements.ASSERTION_WORDS`: "suffices",
"is necessary", "always", "never", "iff", "only if", "implies", "whatever") appear in a registry text
only through an :class:`theory.statements.Assertion` placeholder, generated from structured fields
that :mod:`theory.oracles.assertions` checks (a sufficiency is a conclusion with its premise, a
non-necessity a witness formula without it, an equivalence two formulas each the other's premise or a
predicate plus necessity witnesses, a universal a predicate or a test). Free text around them is
context only: ``test_no_assertion_word_is_free_text`` names any such word typed by hand, so editing
T4's prose to "any scores suffice (softmax attention is always reversible)" fails ``--theorem T4``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.theory.test_free_text import registry_texts
from theory import registry
from theory.gate.prose import assertion_words, count_words
from theory.oracles import assertions as OA
from theory.statements import Assertion

#: the claims' decision rules define their verdicts ("'reproduced' iff ..."): definitions, not claims
#: of the theory; their formulas are checked by tests/theory/test_free_text.py
_DEFINITIONS = re.compile(r"^(E\d|LAP)\.")


def _theorem_entries() -> list[str]:
    return ["conventions", *registry.ids()]


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(
            e, marks=pytest.mark.theorem(*registry.ids()) if e == "conventions" else pytest.mark.theorem(e), id=e
        )
        for e in _theorem_entries()
    ],
)
def test_no_assertion_word_is_free_text(entry):
    texts = list(registry_texts()[entry])
    if entry != "conventions":
        texts += [(sh.id, sh.statement) for sh in registry.get(entry).sharpness]
    found = [(where, w) for where, text in texts for w in assertion_words(text)]
    assert not found, f"{entry}: assertion words in free text (generate them from an Assertion): {found}"


def _prose(entry: str) -> list[tuple[str, str]]:
    """The texts of ``entry`` (a theorem, a claim or the conventions) whose numbers must be structured:
    every registry text and sharpness witness, except the source quotes (the paper's own words, which
    the statement's formulas check)."""
    texts = [(w, t) for w, t in registry_texts()[entry] if not w.endswith(".source")]
    if entry in registry.ids():
        texts += [(sh.id, sh.statement) for sh in registry.get(entry).sharpness]
    elif entry in registry.claim_ids():
        texts += [(sh.id, sh.statement) for sh in registry.get_claim(entry).sharpness]
    return texts


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(
            e,
            marks=pytest.mark.theorem(*registry.ids(), *registry.claim_ids())
            if e == "conventions"
            else pytest.mark.theorem(e),
            id=e,
        )
        for e in [*_theorem_entries(), *registry.claim_ids()]
    ],
)
def test_no_count_or_rate_is_free_text(entry):
    found = [(where, w) for where, text in _prose(entry) for w in count_words(text)]
    assert not found, f"{entry}: numbers, counts or rates in free text (cite them from a structured field): {found}"


@pytest.mark.parametrize(
    "text",
    [
        "the kernel always has dimension 2",
        "the kernel has dimension one",
        "the error halves with each layer",
        "the gap doubles per step",
        "twice as wide",
        "three times the radius",
        "a threefold speed-up",
        "at most 3 heads",
        "two tokens are enough",
        "it costs O(n) time",
        "the defect decays exponentially",
        "convergence is linear",
        "a quadratic rate",
        "within 5% of the null",
        "the interval lies above 0.8",
        "rows sum to zero",
        "from 124M to 8B parameters",
    ],
)
def test_counts_and_rates_are_found(text):
    assert count_words(text)


def test_formulas_placeholders_and_identifiers_are_not_counts():
    assert not count_words("$\\dim\\ker\\Delta = 2$ and «kernel_dim»; T3.2, (c1), float32, E1/E2, RK4, Ex1")
    assert not count_words("the linear prediction, linearly independent $T_h$, a linear-window fit, a quadratic form")
    assert not count_words("`X.reshape(-1)` and `tol(float32, n)`; any other one; a single head")


@pytest.mark.theorem("T3", "T4")
def test_a_false_count_injected_into_a_statement_is_rejected():
    """A false sentence typed into a conclusion's prose is found, though its formula is unchanged."""
    t3 = registry.get("T3").conclusion("T3.kernel")
    t4 = registry.get("T4").conclusion("T4.triangle")
    for c, sentence in ((t3, "; the kernel always has dimension 2"), (t4, "; the error halves with each layer")):
        assert not count_words(c.statement)
        injected = c.statement + sentence
        assert count_words(injected), injected
    assert assertion_words(t3.statement + "; the kernel always has dimension 2") == ["always"]


@pytest.mark.parametrize(
    "text",
    [
        "any scores suffice (softmax attention is always reversible)",
        "symmetric scores are not necessary",
        "A is reversible iff the triangle vanishes",
        "causal attention is never reversible",
        "only if the walk is reversible",
        "(c1) implies a real spectrum",
    ],
)
def test_assertion_words_are_found(text):
    assert assertion_words(text)


def test_placeholders_and_formulas_are_not_assertion_words():
    assert not assertion_words("$A$ is reversible «iff» the right side; «suffices» (symmetric scores)")
    assert not assertion_words("the claim ${x} \\text{ iff } y$ inside a formula")


def _assertions():
    """``(theorem, statement, name, assertion)`` for every assertion of a conclusion or a note."""
    out = []
    for t in registry.THEOREMS:
        sts = list(t.conclusions) + [
            _Note(f"{t.id}.note{q}", getattr(nt, "params", {})) for q, nt in enumerate(t.notes)
        ]
        for st in sts:
            for name, v in st.params.items():
                if isinstance(v, Assertion):
                    out.append((t, st, name, v))
    return out


class _Note:
    def __init__(self, sid, params):
        self.id, self.params, self.predicate = sid, params, None


ASSERTIONS = {f"{st.id}:{name}": (t, st, a) for t, st, name, a in _assertions()}


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.theorem(k.split(".")[0]), id=k) for k in ASSERTIONS])
def test_every_assertion_is_backed_by_structure(key):
    t, st, a = ASSERTIONS[key]
    assert OA.problems(t, st, a) == [], key


@pytest.mark.theorem("T4")
def test_t4_criterion_words_are_generated_and_checked():
    c = registry.get("T4").conclusion("T4.criterion")
    kinds = {v.kind for v in c.params.values() if isinstance(v, Assertion)}
    assert {"iff", "only_if", "suffices", "not_necessary"} <= kinds
    assert "suffices" in c.text and "is not necessary" in c.text


def test_a_false_assertion_is_rejected():
    """Each kind's check rejects the assertion with its structure removed or swapped."""
    t = registry.get("T4")
    c = t.conclusion("T4.criterion")
    conv, kol = c.params["iff"].formulas
    assert OA.problems(t, c, Assertion("iff", (conv, conv)))  # not each other's premise
    assert OA.problems(t, c, Assertion("suffices", (c.params["balance"], kol)))  # not one shared premise
    assert OA.problems(t, c, Assertion("suffices", (c.params["collinear"],)))  # no premise at all
    assert OA.problems(t, c, Assertion("not_necessary", (c.params["balance"], c.params["balance"])))
    causal = t.conclusion("T4.causal")
    assert OA.problems(t, causal, Assertion("never", evaluated_by="t4_triangle"))
    t5 = registry.get("T5")
    lap = t5.conclusion("T5.laplacian")
    assert OA.problems(t5, lap, Assertion("iff", witnesses=("T5.softmax.w1",), evaluated_by="sha_laplacian"))
    assert OA.problems(t, c, Assertion("always", evaluated_by="tests/theory/test_assertions.py::test_no_such_test"))


@pytest.mark.theorem("T6")
def test_t6_positive_spectral_radius_selects_the_constant_mode():
    """T6's note: one head, a stochastic circulant kernel ``a`` (``|â(k)| ≤ â(0) = 1``) and a transport
    ``T`` whose eigenvalue of largest modulus is real and positive: the symbol ``M(k) = â(k) T`` has
    its largest growth rate ``max Re eig(M(k) − I)`` at ``k = 0`` (literal DFT, dense eigenvalues); a
    transport whose top eigenvalue is negative selects another wavenumber (the premise is needed)."""
    from theory.formulas.walks import margin

    dominant = registry.get("T6").notes[1].params["dominant"]  # the note's formula, evaluated on the family M(k)
    rng = np.random.default_rng(20261202)
    checked = 0
    for _ in range(400):
        n, d = int(rng.integers(3, 9)), int(rng.integers(1, 4))
        a = rng.random(n) ** 3
        a /= a.sum()
        T = rng.standard_normal((d, d))
        ev = np.linalg.eigvals(T)
        top = ev[np.argmax(np.abs(ev))]
        if abs(top.imag) > 1e-12 or top.real <= 0 or np.sum(np.isclose(np.abs(ev), abs(top))) > 1:
            continue
        ahat = np.array([np.sum(a * np.exp(2j * np.pi * np.arange(n) * k / n)) for k in range(n)])
        growth = [np.max(np.linalg.eigvals(ahat[k] * T - np.eye(d)).real) for k in range(n)]
        assert growth[0] >= max(growth) - 1e-12 * (1 + abs(top)), (n, d, growth)
        gap, _ = margin(dominant.edited(free=()), {"Mk": ahat[:, None, None] * T})
        assert np.allclose(gap, growth[0] - np.array(growth), atol=1e-12 * (1 + abs(top))), (gap, growth)
        checked += 1
    assert checked >= 50
    # without the premise: T = -1 on the ring of 4 with the shift kernel selects k = 2 (â(2) = -1)
    a = np.array([0.0, 1.0, 0.0, 0.0])
    ahat = np.array([np.sum(a * np.exp(2j * np.pi * np.arange(4) * k / 4)) for k in range(4)])
    growth = [float((ahat[k] * -1.0 - 1.0).real) for k in range(4)]
    assert int(np.argmax(growth)) == 2
