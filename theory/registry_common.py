"""Shared pieces of the registry entries: the seed papers, the test files the entries name, the
seed claims' wordings, tolerance texts, the ``_c`` conclusion builder and small rational cases."""

from __future__ import annotations

from . import cases as _cases
from .statements import Conclusion

SEED_A = "Seed A: *From Self-Attention to Connection Laplacian: A Unified Operator View of Transformers* (arXiv 2607.10677; seeds/000_5bdc14e69496fe14.txt, seeds/002_3d12162842770432.txt)"
SEED_B = "Seed B: *Pattern Formation in Transformers* (seeds/004_438af889239262c2.txt)"

_SYM = "tests/theory/test_derivations.py"
_CERT = "tests/theory/test_certificates.py"
_STMT = "tests/numerics/test_statements.py::test_conclusions_hold_on_drawn_instances"
_NEC = "tests/numerics/test_necessity.py"
_CLAIM_SHA = "single-head attention (SHA) is exactly a connection propagation step with constant transport"
_CLAIM_MHA = (
    "multi-head attention (MHA) is exactly a single edge-dependent connection walk whose effective "
    "transport is an attention-gated mixture of headwise transports"
)
_CLAIM_LAP = (
    "we further clarify the conditions under which the corresponding generator reduces to a random-walk "
    "connection Laplacian, highlighting the roles of stochasticity, reversibility, and metric-compatible transports"
)
_CLAIM_PAT = (
    "the full Transformer architecture imposes inductive priors by selectively amplifying a rich set of "
    "patterns (travelling waves, rotating waves, ...); the role of positional encoding, multi-head attention "
    "and output-value geometry in which pattern is amplified"
)

_T3_NUMERIC = (
    "tests/numerics/test_laplacian.py",
    "tests/numerics/test_reversibility.py",
    "tests/numerics/test_graphs.py",
)
_REL = "relative residual ≤ 64·ε·(size) (ε = float64 machine epsilon; size = number of summed terms)"
_SPEC = "eigenvalues of the dense float64 matrix: |Im| and the distance outside the interval ≤ 1e-9·nd·max(1, ‖W‖₂)"


def _c(id, statement, *, derivations=(), tests=(), predicate=None, params=None, tolerance="", scope=""):
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


_ROT = [["3/5", "-4/5"], ["4/5", "3/5"]]  # a rational rotation (Cayley), not symmetric
_REFL = [[1, 0], [0, -1]]
_T2_CE = dict(_cases.T2_COUNTEREXAMPLE)

_E12_RULE = (
    "'reproduced' if the 95% bootstrap interval of the effect (trained − null) lies on the claim side of 0 "
    "(and, for late/early ratios, the trained interval below the reference 1); 'not reproduced' if it lies on "
    "the wrong side, or entirely within ±5% of |null|; otherwise 'inconclusive' (`paper_checks.inference.decide`)"
)
_NULL_RANDOM = (
    "`random:<same architecture>`: the same architecture at random initialisation (3 seeds), measured on "
    "the same prompts; nested bootstrap over seeds and prompts"
)
