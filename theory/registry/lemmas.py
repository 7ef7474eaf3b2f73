"""Registry entries L1-L4: the lemmas the theorems use."""

from __future__ import annotations

from .. import derivations as _dv
from .. import formulas as _F
from ..formulas import laplacian as _FL
from ..formulas import spectral as _FS
from ..formulas import walks as _FW
from ..statements import Hypothesis, Note, Witness
from ..theorem import Source, Theorem
from .common import SYMBOLIC_TESTS, make_conclusion

LEMMAS: list[Theorem] = [
    Theorem(
        id="L1",
        title="Token-major stacking of a bilinear token map",
        kind="lemma",
        source=Source(
            "(convention)",
            "token-major stacking; mixing conventions is the classic silent bug",
            "THEOREMS.md (Conventions)",
        ),
        hypotheses=(
            Hypothesis(
                "L1.shapes",
                "shapes",
                "«A», «T», «X» (row $i$ of $X$ is token $i$)",
                params={"A": _FW.SHAPE_A, "T": _FW.SHAPE_T, "X": _FW.SHAPE_X},
                witnesses=(
                    Witness(
                        "L1.shapes.w1",
                        "mixing conventions, the feature-major operator on the token-major stacking: «mixed» is false",
                        derivation="L1::mixing conventions is wrong",
                        params={"mixed": _FW.MIXED},
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "L1.token_major",
                "«token_major» (token-major stacking; T1.walk states the blocks of «kron»)",
                params={"token_major": _F.L1_TOKEN_MAJOR, "kron": _FW.KRON_AT},
                derivations=("L1::token-major",),
                tests=("tests/theory/test_derivations.py::test_stacking_lemma_other_sizes",),
            ),
            make_conclusion(
                "L1.feature_major",
                "«feature_major» (feature-major stacking)",
                params={"feature_major": _F.L1_FEATURE_MAJOR},
                derivations=("L1::feature-major",),
                tests=("tests/theory/test_derivations.py::test_stacking_lemma_other_sizes",),
            ),
        ),
        derivation=_dv.derive_l1,
        symbolic_tests=(SYMBOLIC_TESTS,),
    ),
    Theorem(
        id="L2",
        title="Softmax rows: normalisation kills the derivative",
        kind="lemma",
        source=Source("(lemma)", "the softmax-derivative terms cancel because rows of dA sum to 0", "THEOREMS.md T6"),
        hypotheses=(
            Hypothesis(
                "L2.softmax",
                "softmax",
                "softmax rows of differentiable scores $S$ (functions of every coordinate $x$ of the input $X$): «softmax»",
                params={"softmax": _FW.L2_SOFTMAX},
                witnesses=(
                    Witness(
                        "L2.softmax.w1",
                        "unnormalised (sigmoid) attention, «sigmoid», keeps the derivative terms",
                        derivation="T6::drop H1",
                        params={"sigmoid": _FW.L2_SIGMOID},
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "L2.rows",
                "rows are normalised, «rows», and so the derivative of a row cancels, «derivative», for every row $i$ and every coordinate $x$ of the input",
                params={"rows": _FW.L2_ROWS, "derivative": _FW.L2_DERIVATIVE},
                derivations=("L2::rows sum to 1", "L2::sum_j d A_0j / d x_ab = 0"),
                tests=("tests/theory/test_derivations.py::test_l2_catches_unnormalised_attention",),
            ),
        ),
        derivation=_dv.derive_l2,
        symbolic_tests=(SYMBOLIC_TESTS,),
    ),
    Theorem(
        id="L3",
        title="Dirichlet identity with a stochasticity correction",
        kind="lemma",
        source=Source(
            "(lemma)",
            Note(
                "general correction term «correction» (the row sums $r_i$ written out)",
                {"correction": _FW.L3_CORRECTION},
            ),
            "THEOREMS.md T3",
        ),
        hypotheses=(
            Hypothesis(
                "L3.balance",
                "detailed balance",
                "«balance» with «positive»; row sums arbitrary",
                params={"balance": _F.BALANCE, "positive": _FW.PI_POSITIVE},
                witnesses=(
                    Witness(
                        "L3.balance.w1",
                        "directed cycle: no inner product makes $\\Delta$ self-adjoint",
                        derivation="T3::drop (b) [directed 3-cycle",
                    ),
                ),
            ),
            Hypothesis(
                "L3.metric",
                "metric",
                "every $O_{ij}$ orthogonal, «orthogonal», and transpose-compatible, «transpose»",
                params={"orthogonal": _F.ORTHOGONAL, "transpose": _F.TRANSPOSE},
                witnesses=(
                    Witness(
                        "L3.metric.w1",
                        "scaled transports, «scaled_O» with every $Q_{ij}$ orthogonal, add a multiple of the squared π-norm of $x$ (T3.scaled): «scaled»",
                        derivation="T3::scaled O = sQ: the (1-s^2)/2 term is needed",
                        params={"scaled": _FS.SCALED, "scaled_O": _FL.SCALED_TRANSPORT},
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "L3.identity",
                "the π-form of the generator equals the Dirichlet form plus a stochasticity correction (rows need not be normalised), entrywise: «identity»",
                params={"identity": _F.DIRICHLET_CORRECTED},
                derivations=("L3::<x,(I-W)x>_pi = Dirichlet + sum_i pi_i (1-r_i)|x_i|^2",),
                tests=("tests/theory/test_derivations.py::test_derivation_reaches_exact_zero",),
            ),
        ),
        derivation=_dv.derive_l3,
        symbolic_tests=(SYMBOLIC_TESTS,),
    ),
    Theorem(
        id="L4",
        title="Spectrum of a Kronecker product",
        kind="lemma",
        source=Source(
            "(lemma)", "spectrum of kron(A,T) = products of eigenvalues with algebraic multiplicities", "THEOREMS.md T1"
        ),
        hypotheses=(
            Hypothesis(
                "L4.square",
                "square",
                "«A», «T» arbitrary",
                params={"A": _FW.SHAPE_AC, "T": _FW.SHAPE_TC},
                witnesses=(
                    Witness(
                        "L4.square.w1",
                        "(no hypothesis beyond squareness: the identity is generic)",
                        derivation="L4::charpoly(kron(A,T))",
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "L4.resultant",
                "«resultant» and «product» ($p_A$, $p_T$: the characteristic polynomials of $A$, $T$; $\\lambda_i$, $\\mu_a$: their eigenvalues with algebraic multiplicities)",
                params={"resultant": _FW.L4_RESULTANT, "product": _FW.L4_PRODUCT},
                derivations=("L4::charpoly(kron(A,T))",),
                tests=("tests/theory/test_derivations.py::test_derivation_reaches_exact_zero",),
            ),
        ),
        derivation=_dv.derive_l4,
        symbolic_tests=(SYMBOLIC_TESTS,),
    ),
]
