"""Shared pieces of the registry entries: the seed papers, the test files the entries name, the
seed claims' wordings, tolerance texts, the ``make_conclusion`` conclusion builder and small rational cases."""

from __future__ import annotations

from .. import cases as _cases
from ..formulas import tolerances as _FT
from ..statements import Conclusion, Threshold

SEED_A = "Seed A: *From Self-Attention to Connection Laplacian: A Unified Operator View of Transformers* (arXiv 2607.10677; seeds/000_5bdc14e69496fe14.txt, seeds/002_3d12162842770432.txt)"
SEED_B = "Seed B: *Pattern Formation in Transformers* (seeds/004_438af889239262c2.txt)"

SYMBOLIC_TESTS = "tests/theory/test_derivations.py"
CERTIFICATE_TESTS = "tests/theory/test_certificates.py"
STATEMENT_TEST = "tests/numerics/test_statements.py::test_conclusions_hold_on_drawn_instances"
NECESSITY_TESTS = "tests/numerics/test_necessity.py"
CLAIM_SHA = "single-head attention (SHA) is exactly a connection propagation step with constant transport"
CLAIM_MHA = (
    "multi-head attention (MHA) is exactly a single edge-dependent connection walk whose effective "
    "transport is an attention-gated mixture of headwise transports"
)
CLAIM_LAP = (
    "we further clarify the conditions under which the corresponding generator reduces to a random-walk "
    "connection Laplacian, highlighting the roles of stochasticity, reversibility, and metric-compatible transports"
)
CLAIM_PAT = (
    "the full Transformer architecture imposes inductive priors by selectively amplifying a rich set of "
    "patterns (travelling waves, rotating waves, ...); the role of positional encoding, multi-head attention "
    "and output-value geometry in which pattern is amplified"
)

T3_NUMERIC_TESTS = (
    "tests/numerics/test_laplacian.py",
    "tests/numerics/test_reversibility.py",
    "tests/numerics/test_graphs.py",
)
#: what the tolerances' symbols are (their expressions: :mod:`theory.formulas.tolerances`)
EPSILON = "$\\varepsilon$: the float64 machine epsilon; $n$, $d$, $H$: the instance's sizes"
#: a relative residual within ``«tol»`` (the conclusion's ``params["tol"]``)
RELATIVE_TOLERANCE = f"relative residual «tol» ({EPSILON})"
#: the eigenvalues of ``I - W`` within ``«tol_spectrum»`` of the interval
SPECTRUM_TOLERANCE = (
    "eigenvalues of the dense float64 matrix: the largest imaginary part and the distance outside the interval "
    "«tol_spectrum» ($W$: the dense walk matrix)"
)
#: a quadratic form's relative residual within ``«tol_form»``
FORM_TOLERANCE = f"relative residual of the form «tol_form» ({EPSILON})"
_RANK = "by SVD: a singular value $\\sigma$, relative to the largest singular value floored at unity, counts as zero when «tol_rank»"


def relative(bound: _FT.Tolerance) -> tuple[str, dict]:
    """The tolerance rule "relative residual «tol»" with ``tol`` the expression ``bound``."""
    return RELATIVE_TOLERANCE, {"tol": bound}


#: tolerance rules ``(text, params)``: the text cites each threshold ``«name»`` of the params
#: (:class:`theory.formulas.tolerances.Tolerance`: the expression the conclusion's oracle evaluates)
SPECTRUM_RULE = (
    SPECTRUM_TOLERANCE + "; " + FORM_TOLERANCE,
    {"tol_spectrum": _FT.SPECTRUM, "tol_form": _FT.FORM},
)
FORM_RULE = (FORM_TOLERANCE, {"tol_form": _FT.FORM})
KERNEL_RULE = (
    f"null spaces of $\\Delta$ and of the constraints $C$ {_RANK}; equal dimension, and the residual of each "
    f"basis under the other operator, relative to its norm, «tol» ({EPSILON})",
    {"tol_rank": _FT.KERNEL_RANK, "tol": _FT.KERNEL},
)
FLAT_RULE = (RELATIVE_TOLERANCE + f"; the kernel {_RANK}", {"tol": _FT.OPERATOR, "tol_rank": _FT.RANK})
SHA_LAPLACIAN_RULE = (
    RELATIVE_TOLERANCE + "; " + FORM_TOLERANCE + "; " + SPECTRUM_TOLERANCE,
    {"tol": _FT.OPERATOR, "tol_form": _FT.FORM, "tol_spectrum": _FT.SPECTRUM},
)
EIGEN_RULE = (
    "multisets matched by optimal assignment, and the eigenpair identities entrywise: distance «tol»",
    {"tol": _FT.EIGEN},
)
T5_KERNEL_RULE = (
    f"eigenspaces of $T$ {_RANK}; containment: relative residual «tol» ({EPSILON}); equal spaces: equal "
    "dimension and the distance of their orthogonal projectors «tol_span»",
    {"tol": _FT.OPERATOR, "tol_rank": _FT.RANK, "tol_span": _FT.SPAN},
)
SELECTION_RULE = (
    "the growth rate against the dense Jacobian's, relative to its size floored at unity, «tol_growth»; "
    "the conjugation: " + RELATIVE_TOLERANCE,
    {"tol": _FT.RING, "tol_growth": _FT.GROWTH},
)
KRON_SPECTRUM_RULE = (
    "multisets matched by optimal assignment: distance «tol» (eigenvalues of non-normal matrices are only "
    "accurate to the square root of the machine epsilon)",
    {"tol": _FT.KRON_SPECTRUM},
)
CONSTANT_RULE = (
    "the nearest-Kronecker miss and every block's distance to its multiple of the transports' sum (and the "
    "coefficients' negative parts) within «tol», both tests agreeing; heads equal within «tol_heads»",
    {"tol": _FT.KRONECKER, "tol_heads": _FT.EQUAL_HEADS},
)
EXACT_RULE = (
    "the mpmath value (at the working precision of `theory.oracles.walks`) differs from `miss_exact` by «tol»; "
    "the rounded `miss` is its nearest decimal at the statement's `digits`",
    {"tol": _FT.EXACT},
)


def make_conclusion(id, statement, *, derivations=(), tests=(), predicate=None, params=None, tolerance="", scope=""):
    """A :class:`Conclusion`; ``tolerance``: its text, or a rule ``(text, tolerance params)`` whose
    thresholds join ``params``."""
    text, bounds = (tolerance, {}) if isinstance(tolerance, str) else tolerance
    return Conclusion(
        id=id,
        statement=statement,
        predicate=predicate,
        params={**(params or {}), **bounds},
        tolerance=text,
        derivations=tuple(derivations),
        tests=tuple(tests),
        scope=scope,
    )


ROTATION = [["3/5", "-4/5"], ["4/5", "3/5"]]  # a rational rotation (Cayley), not symmetric
REFLECTION = [[1, 0], [0, -1]]
T2_COUNTEREXAMPLE_PARAMS = dict(_cases.T2_COUNTEREXAMPLE)

#: the numbers of the effect rule (E1, E2, LAP): the interval's confidence level, the side the effect
#: interval must clear, the reference a late/early ratio's trained interval must stay below and the
#: fraction of |null| inside which an effect counts as none (:class:`theory.statements.Threshold`)
EFFECT_THRESHOLDS = {
    "level": Threshold("19/20", percent=True),
    "side": Threshold(0),
    "reference": Threshold(1),
    "equivalence": Threshold("1/20", percent=True),
}
E12_RULE = (
    "'reproduced' if the «level» bootstrap interval of the effect (trained − null) lies on the claim side of «side» "
    "(and, for late/early ratios, the trained interval below the reference «reference»); 'not reproduced' if it "
    "lies on the wrong side, or entirely within ±«equivalence» of |null|; otherwise 'inconclusive' "
    "(`paper_checks.inference.decide`)"
)
NULL_RANDOM = (
    "`random:<same architecture>`: the same architecture at random initialisation (`null_seeds` seeds of "
    "`paper_checks.main_job`), measured on the same prompts; nested bootstrap over seeds and prompts"
)
