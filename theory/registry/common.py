"""Shared pieces of the registry entries: the seed papers, the test files the entries name, the
seed claims' wordings, tolerance texts, the ``make_conclusion`` conclusion builder and small rational cases."""

from __future__ import annotations

from .. import cases as _cases
from ..statements import Conclusion

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
RELATIVE_TOLERANCE = "relative residual ≤ 64·ε·(size) (ε = float64 machine epsilon; size = number of summed terms)"
SPECTRUM_TOLERANCE = (
    "eigenvalues of the dense float64 matrix: |Im| and the distance outside the interval ≤ 1e-9·nd·max(1, ‖W‖₂)"
)


def make_conclusion(id, statement, *, derivations=(), tests=(), predicate=None, params=None, tolerance="", scope=""):
    return Conclusion(
        id=id,
        statement=statement,
        predicate=predicate,
        params=dict(params or {}),
        tolerance=tolerance,
        derivations=tuple(derivations),
        tests=tuple(tests),
        scope=scope,
    )


ROTATION = [["3/5", "-4/5"], ["4/5", "3/5"]]  # a rational rotation (Cayley), not symmetric
REFLECTION = [[1, 0], [0, -1]]
T2_COUNTEREXAMPLE_PARAMS = dict(_cases.T2_COUNTEREXAMPLE)

E12_RULE = (
    "'reproduced' if the 95% bootstrap interval of the effect (trained − null) lies on the claim side of 0 "
    "(and, for late/early ratios, the trained interval below the reference 1); 'not reproduced' if it lies on "
    "the wrong side, or entirely within ±5% of |null|; otherwise 'inconclusive' (`paper_checks.inference.decide`)"
)
NULL_RANDOM = (
    "`random:<same architecture>`: the same architecture at random initialisation (3 seeds), measured on "
    "the same prompts; nested bootstrap over seeds and prompts"
)
