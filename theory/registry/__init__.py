"""The theorem registry: one object per theorem T1-T6, per lemma L1-L4 it needs, and per
empirical claim E1-E6 and LAP.

``THEOREMS`` (ordered: L1-L4, then T1-T6) is the single list everything reads: the pytest plugin
(``--theorem`` ids), ``python -m theory.render`` (THEOREMS.md) and the test-suite. Statements are
data (:mod:`theory.statements`): every hypothesis and conclusion has an id, its Markdown/LaTeX
text, an executable predicate of :mod:`theory.oracles` with its params and tolerance rule, and
links — conclusions name the derivation steps of :mod:`theory.derivations` that prove them and the
property tests that exercise them, hypotheses name their necessity witnesses. Every number a
statement carries (T3's interval, T2's Kronecker miss, T4's triangle coefficient, T6's growth
shift) is a param, and so is every formula (a SymPy expression of :mod:`theory.formulas`: T1's
stacking, T2's walk, T3's forms, T4's balance, T5's spectral map, T6's Fourier symbol): THEOREMS.md,
the property tests (``tests/numerics/test_statements.py``) and the derivations for symbolic sizes
(:mod:`theory.derivations.general`) read it from here. ``CLAIMS`` holds E1-E6 and LAP (statement,
statistic, null model, decision rule); adding a claim is adding one :class:`Claim` entry.

One idea per file: :mod:`theory.theorem` (the :class:`Theorem` record), :mod:`theory.registry.common`
(seed papers, test paths, shared wordings), the entries :mod:`theory.registry.lemmas` (L1-L4),
:mod:`theory.registry.walks` (T1, T2), :mod:`theory.registry.spectral` (T3-T6) and
:mod:`theory.registry.claims` (E1-E6, LAP); this module assembles them and looks them up.

    >>> from theory.registry import get
    >>> get("T3").derive(n=3, d=2).passed
    True
    >>> get("T3").conclusion("T3.spectrum").params["hi"]
    2
"""

from __future__ import annotations

from dataclasses import replace as _replace

from ..derivations import general as _gen
from ..errors import UnknownTheoremError
from ..statements import Claim, Conclusion, Hypothesis, Witness
from ..theorem import Source, Theorem
from .assertions import ASSERTIONS
from .claim_sharpness import CLAIM_SHARPNESS
from .claims import CLAIMS as _MEASURED
from .conventions import CONVENTIONS  # the conventions (rendered first in THEOREMS.md)
from .lemmas import LEMMAS
from .sharpness import SHARPNESS
from .spectral import SPECTRAL_THEOREMS
from .walks import WALK_THEOREMS

__all__ = [
    "Claim",
    "Conclusion",
    "Hypothesis",
    "Witness",
    "Source",
    "Theorem",
    "CONVENTIONS",
    "LEMMAS",
    "MAIN",
    "THEOREMS",
    "CLAIMS",
    "ids",
    "claim_ids",
    "get",
    "get_claim",
]

#: how far each conclusion's symbolic proof reaches, and the steps of the derivation for symbolic
#: sizes (theory/derivations/general.py) that prove it. ``{sized}``: the exact SymPy derivation at
#: the theorem's supported sizes (its ``SIZES``). Where SymPy does not reach, the scope says so.
_GENERAL_T2 = (
    "general: heads' attentions",
    "general: heads' transports",
    "general: P = mean_h",
    "general: gates sum to 1",
    "general: P_ij O_ij = B_ij",
)
SCOPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "L1.token_major": ("all n, d", ("general: token-major",)),
    "L1.feature_major": ("all n, d", ("general: feature-major",)),
    "L2.rows": ("all n, any differentiable scores", ("general: rows sum to 1", "general: the derivative of a row")),
    "L3.identity": ("all n, d", ("general: <x,(I-W)x>_pi",)),
    "L4.resultant": ("{sized}", ()),
    "T1.walk": ("all n, d", ("general: vec(SHA(X)^T)", "general: block (i, j)")),
    "T1.spectrum": ("via L4: n = 1..3, d = 1..2 (sized); otherwise checked numerically only", ()),
    "T2.walk": ("all n, d, H (heads distinct by construction)", _GENERAL_T2),
    "T2.gauge": ("all n, d, H", ("general: gauge",)),
    "T2.constant": ("{sized}", ()),
    "T2.special": (
        "all n, d, H (cancelling heads: H = 2)",
        ("general: shared attention", "general: shared transport", "general: cancelling heads"),
    ),
    "T2.counterexample": ("exact, the stated instance (n = d = H = 2)", ()),
    "T3.self_adjoint": ("all n, d", ("general: <x, Delta y>_pi",)),
    "T3.spectrum": (
        "the identity: all n, d; the interval itself (Rayleigh-quotient argument, not in SymPy): checked numerically only",
        ("general: <x,(2I-Delta)x>_pi",),
    ),
    "T3.dirichlet": ("all n, d", ("general: Dirichlet identity",)),
    "T3.kernel": ("{sized}", ()),
    "T3.flat": (
        "the generator as the scalar one of P on every feature, conjugated by the orthogonal frames: all n, d; the kernel of dimension d (P irreducible): {sized}",
        ("general: flat connection",),
    ),
    "T3.scaled": (
        "the form: all n, d; the spectral interval (Rayleigh-quotient argument): checked numerically only",
        ("general: scaled isometries",),
    ),
    "T4.triangle": ("all n, d", ("general: Kolmogorov triangle",)),
    "T4.criterion": (
        "'if' for symmetric scores: all n, d; 'if' in general (`converse`, Kolmogorov) and affinely collinear tokens (`collinear`; at n = 3 also in SymPy): evaluated by the predicate on drawn instances; 'only if' (`kolmogorov`, Kolmogorov cycles): n = 3 in SymPy, evaluated by the predicate on drawn instances",
        (
            "general: symmetric M",
            "general: symmetric scores => detailed balance",
            "general: symmetric scores => stationary",
        ),
    ),
    "T4.query_bias": ("all n, d", ("general: symmetric scores + query bias",)),
    "T4.causal": ("{sized}", ()),
    "T5.laplacian": (
        "{sized}; the generator as the walk with the attention as walk matrix and the transport on every edge: checked numerically only",
        (),
    ),
    "T5.spectrum": (
        "the eigenvectors (an eigenvector of A tensored with one of T) and their eigenvalues: all n, d; completeness with multiplicities: {sized} (generic A)",
        ("general: on Fix(T)", "general: on the -1 space"),
    ),
    "T5.kernel": (
        "the constant sections with values fixed by T lie in the kernel: all n, d; the kernel is exactly these sections (equal spaces, irreducible A): checked numerically only",
        ("general: Delta(1 (x) f) = 0",),
    ),
    "T5.non_orthogonal": ("{sized}", ()),
    "T6.jacobian": ("{sized}", ()),
    "T6.fourier": (
        "`fourier` (entrywise): every ring size n, all d, H (heads distinct by construction); its matrix form"
        " `eigenpair` at `root`: evaluated by the predicate on drawn instances",
        ("general: heads' scores", "general: heads' transports", "general: J(phi_k (x) v)"),
    ),
    "T6.selection": (
        "checked numerically only (the Fourier block-diagonalisation it rests on is T6.fourier's)",
        (),
    ),
    "T6.rotating": ("exact (d = 2, every angle and radius)", ()),
}


_FW_TESTS = "tests/theory/test_formulas_walks.py"
#: formulas a conclusion renders that its predicate does not evaluate but a test does (the test,
#: and what it judges the formula against); THEOREMS.md says so
EVALUATED_BY_TESTS: dict[str, dict[str, tuple[str, str]]] = {
    "T6.jacobian": {
        "dynamics": (
            "tests/numerics/test_patterns.py::test_t6_jacobian_of_softmax_dynamics_equals_walk_minus_identity",
            "against the velocity of `numerics.patterns.dynamics.MHADynamics`, whose autograd Jacobian it compares with J,"
            " at a state off the base state with the literal softmax attention",
        ),
    },
    # the walk side's formulas outside conclusions (notes, source quotes, witnesses), by the text's id
    "L3.source": {
        "correction": (
            f"{_FW_TESTS}::test_l3_source_correction_is_the_lemma_gap",
            "against the literal gap between the π-form of I − W and the Dirichlet form on a balanced walk",
        ),
    },
    "T2.convention.w1": {
        "no_transport": (
            f"{_FW_TESTS}::test_t2_convention_witness_names_the_block_without_transport",
            "on the witness's instance (holds at B_12; nowhere with the head mean P)",
        ),
    },
    "T2.note0": {
        "gqa": (f"{_FW_TESTS}::test_gqa_formula_is_the_kv_head_map", "against `numerics.attention.kv_head_map`"),
        "rank": (f"{_FW_TESTS}::test_head_rank_note", "on random narrow heads"),
        "narrow": (f"{_FW_TESTS}::test_head_rank_note", "on random narrow heads"),
        "never": (f"{_FW_TESTS}::test_head_rank_note", "on random narrow heads: none is orthogonal"),
    },
    "T6.note1": {
        "dominant": (
            "tests/theory/test_assertions.py::test_t6_positive_spectral_radius_selects_the_constant_mode",
            "on random stochastic circulant kernels and transports with a positive real top eigenvalue",
        ),
    },
    "T6.selection": {
        "velocity": (
            "tests/numerics/test_t6_emergence.py::test_emergence_follows_the_symbol",
            "against the velocity measured on the simulated pattern",
        ),
    },
}


def _sized(t: Theorem) -> str:
    sizes = ", ".join(f"{k} = {lo}" if lo == hi else f"{k} = {lo}..{hi}" for k, (lo, hi) in t.supported_sizes.items())
    return f"sized: exact SymPy at {sizes}"


#: tests of the statement itself, for every entry: the rendering (THEOREMS.md), the registry's links, the witnesses' data
#: and, where the entry has one, the derivation for symbolic sizes
_STATEMENT_TESTS = (
    "tests/theory/test_render.py",
    "tests/theory/test_registry_links.py",
    "tests/theory/test_witnesses.py",
    "tests/theory/test_formulas_walks.py",  # the conventions' formulas
)
_GENERAL_TESTS = ("tests/theory/test_general_derivations.py",)
#: the implementation's own tests (edge cases, bad input) of the functions a theorem
#: names: `pytest --theorem X` runs them too
IMPLEMENTATION_TESTS: dict[str, tuple[str, ...]] = {
    "T1": (
        "tests/numerics/test_walk.py",
        "tests/numerics/test_attention.py",
        "tests/numerics/test_walk_errors.py",
    ),
    "T2": (
        "tests/numerics/test_walk.py",
        "tests/numerics/test_attention.py",
        "tests/numerics/test_walk_errors.py",
        "tests/numerics/test_conformance.py",  # the conformance kit: module(X) = W(X)·X + c on any module
    ),
    "T3": (
        "tests/numerics/test_diagnose_dense.py",
        "tests/numerics/test_diagnose_checks.py",
        "tests/numerics/test_markov.py",
        "tests/numerics/test_graphs.py",
    ),
    "T4": (
        "tests/numerics/test_graphs.py",
        "tests/numerics/test_markov.py",
    ),
    "T5": ("tests/numerics/test_diagnose_dense.py", "tests/numerics/test_diagnose_checks.py"),
    "T6": ("tests/numerics/test_patterns.py", "tests/numerics/test_t6_emergence.py"),
}


#: the theory area's tests of one entry beyond the statement tests (listed with its symbolic tests)
_DISC_WALKS = "tests/theory/test_discriminating_walks.py"  # each formula's mutant kinds rejected
_DISC_SPECTRAL = "tests/theory/test_discriminating_spectral.py"
THEORY_TESTS: dict[str, tuple[str, ...]] = {
    # walks with a kernel and non-symmetric transports; a false count injected into T3's prose
    "T1": (_DISC_WALKS,),
    "T2": (_DISC_WALKS,),
    "T3": ("tests/theory/test_discriminating.py", "tests/theory/test_assertions.py"),
    "T4": ("tests/theory/test_assertions.py", _DISC_SPECTRAL),  # the claim words and their structure
    "T5": (_DISC_SPECTRAL,),
    "T6": ("tests/theory/test_assertions.py", _DISC_SPECTRAL),  # the note on the constant mode
}


#: tests inside a linked file that are about resources, not the statement (left out of `--theorem`)
UNLINKED: frozenset[str] = frozenset(
    {"tests/numerics/test_diagnose_dense.py::test_diagnose_size_limits_default_to_1024"}
)


def _scoped(t: Theorem) -> Theorem:
    cons = []
    for c in t.conclusions:
        scope, general = SCOPES[c.id]
        c = c.with_params(**ASSERTIONS.get(c.id, {}))  # the claim words («iff», «suffices», ...)
        cons.append(_replace(c, scope=scope.replace("{sized}", _sized(t)), general=general))
    general_fn = _gen.GENERAL.get(t.id)
    extra_sym = _STATEMENT_TESTS + (_GENERAL_TESTS if general_fn is not None else ()) + THEORY_TESTS.get(t.id, ())
    return _replace(
        t,
        conclusions=tuple(cons),
        sharpness=SHARPNESS.get(t.id, ()),
        general=general_fn,
        symbolic_tests=t.symbolic_tests + tuple(p for p in extra_sym if p not in t.symbolic_tests),
        numeric_tests=t.numeric_tests
        + tuple(p for p in IMPLEMENTATION_TESTS.get(t.id, ()) if p not in t.numeric_tests),
    )


MAIN: list[Theorem] = [_scoped(t) for t in (*WALK_THEOREMS, *SPECTRAL_THEOREMS)]
LEMMAS = [_scoped(t) for t in LEMMAS]

#: every registered statement, lemmas first (they are used by the theorems)
THEOREMS: list[Theorem] = LEMMAS + MAIN
_BY_ID = {t.id: t for t in THEOREMS}
#: the empirical claims, each with the sharpness witnesses of its thresholds and bounds
CLAIMS: list[Claim] = [_replace(c, sharpness=CLAIM_SHARPNESS.get(c.id, ())) for c in _MEASURED]
_CLAIMS_BY_ID = {c.id: c for c in CLAIMS}


def linked_tests() -> dict[str, set[str]]:
    """Test path (a file, or ``file::test``) -> the ids (theorems and claims) whose registry entry links it: every test
    whose failure reveals a wrong statement or implementation of X (the pytest plugin tags them
    with X, so ``pytest --theorem X`` runs them all; :data:`UNLINKED` tests are left out)."""
    out: dict[str, set[str]] = {}
    for t in THEOREMS:
        paths = [*t.symbolic_tests, *t.certificate_tests, *t.numeric_tests, *t.necessity_tests]
        paths += [p for c in t.conclusions for p in c.tests]
        for p in paths:
            out.setdefault(p, set()).add(t.id)
    for cl in CLAIMS:  # a claim's own tests (the module that measures it, its formulas' tests)
        for p in cl.tests:
            out.setdefault(p, set()).add(cl.id)
    return out


def ids() -> list[str]:
    return [t.id for t in THEOREMS]


def claim_ids() -> list[str]:
    return [c.id for c in CLAIMS]


def get(theorem_id: str) -> Theorem:
    """The registered theorem/lemma with this id; :class:`UnknownTheoremError` (a ``KeyError``)
    listing the known ids otherwise."""
    if not isinstance(theorem_id, str) or theorem_id not in _BY_ID:
        raise UnknownTheoremError(theorem_id, ids())
    return _BY_ID[theorem_id]


def get_claim(claim_id: str) -> Claim:
    """The registered empirical claim (E1-E6, LAP) with this id (``UnknownTheoremError`` otherwise)."""
    if not isinstance(claim_id, str) or claim_id not in _CLAIMS_BY_ID:
        raise UnknownTheoremError(claim_id, claim_ids())
    return _CLAIMS_BY_ID[claim_id]
