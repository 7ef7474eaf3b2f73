"""The claim words of the statements (:class:`theory.statements.Assertion`): every "iff", "suffices",
"is not necessary", "only if", "never" and "always" a registry text says is a placeholder ``«name»``
rendered from one of these, and :mod:`theory.oracles.assertions` checks its structure (a sufficiency
is a conclusion with its premise, a non-necessity a witness formula without it, an equivalence two
formulas each the other's premise, a universal a predicate or a test that evaluates it on every
instance). ``tests/theory/test_assertions.py`` rejects the words in free text.

:data:`ASSERTIONS` joins a conclusion's params (statement id -> name -> assertion, merged by
:mod:`theory.registry`); a note's assertions are in its own params.
"""

from __future__ import annotations

from .. import formulas as _F
from ..formulas import patterns as _FP
from ..formulas import reversibility as _FR
from ..formulas import spectral as _FS
from ..statements import Assertion, Note

ASSERTIONS: dict[str, dict[str, Assertion]] = {
    "T2.constant": {
        # both directions evaluated at once by the predicate (the nearest-Kronecker test and the formula agree)
        "iff": Assertion("iff", evaluated_by="t2_constant_criterion"),
        "iff_heads": Assertion("iff", evaluated_by="t2_constant_criterion"),
    },
    "T4.criterion": {
        "iff": Assertion("iff", (_FR.CONVERSE, _FS.KOLMOGOROV)),
        "only_if": Assertion("only_if", (_FS.KOLMOGOROV,)),
        "suffices": Assertion("suffices", (_F.T4_BALANCE, _F.T4_STATIONARY)),
        "not_necessary": Assertion("not_necessary", (_F.T4_BALANCE, _FR.COLLINEAR)),
    },
    "T4.causal": {"never": Assertion("never", evaluated_by="t4_causal")},
    "T5.laplacian": {
        # 'if': the predicate on every instance of the hypotheses; 'only if': a witness per hypothesis
        "iff": Assertion(
            "iff",
            witnesses=("T5.reversible.w1", "T5.involution.w1", "T5.involution.w2"),
            evaluated_by="sha_laplacian",
        ),
    },
}

#: T2's note: a head of rank at most ``d_h < d`` is never orthogonal (the note's formulas, by the test)
NEVER_ORTHOGONAL = Assertion("never", evaluated_by="tests/theory/test_formulas_walks.py::test_head_rank_note")

#: T6's note on the constant mode (one head: ``M(k) = â(k) T`` with ``|â(k)| ≤ â(0) = 1``)
T6_CONSTANT_MODE = Note(
    "For real kernels the mode $(k^*, \\sigma)$ and its conjugate (T6.selection's conjugation) are the same real "
    "pattern; compare selections modulo this conjugation. With one head, a positive real eigenvalue of $T$ equal to "
    "its spectral radius «always» selects the constant mode $\\varphi_0$ (clustering): «dominant» at every "
    "wavenumber $k$.",
    {
        "dominant": _FP.DOMINANT,
        "always": Assertion(
            "always",
            evaluated_by="tests/theory/test_assertions.py::test_t6_positive_spectral_radius_selects_the_constant_mode",
        ),
    },
)
