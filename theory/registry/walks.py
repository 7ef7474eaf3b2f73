"""Registry entries T1 and T2: attention as a connection walk (single head, multi-head)."""

from __future__ import annotations

from .. import derivations as _dv
from .. import formulas as _F
from ..formulas import tolerances as _FT
from ..formulas import walks as _FW
from ..statements import Hypothesis, Note, Witness
from ..theorem import Source, Theorem
from .assertions import NEVER_ORTHOGONAL
from .common import (
    CERTIFICATE_TESTS,
    CLAIM_MHA,
    CLAIM_SHA,
    CONSTANT_RULE,
    EXACT_RULE,
    KRON_SPECTRUM_RULE,
    NECESSITY_TESTS,
    SEED_A,
    STATEMENT_TEST,
    SYMBOLIC_TESTS,
    T2_COUNTEREXAMPLE_PARAMS,
    make_conclusion,
    relative,
)

WALK_THEOREMS: list[Theorem] = [
    Theorem(
        id="T1",
        title="Single-head attention is a constant-transport connection walk",
        kind="theorem",
        source=Source(SEED_A, CLAIM_SHA, "THEOREMS.md T1"),
        hypotheses=(
            Hypothesis(
                "T1.factorisation",
                "factorisation",
                "the attention is taken at the input it multiplies (the identity is a factorisation, not linearity in $X$): «softmax» at the instance's $X$, with «dk» and no mask, «no_mask»",
                predicate="t1_same_input",
                params={"softmax": _FW.SOFTMAX, "dk": _FW.DK_IS_D, "no_mask": _FW.NO_MASK},
                witnesses=(
                    Witness(
                        "T1.factorisation.w1",
                        "softmax attention frozen at $X_0 = «X0»$ applied to $X_1 = «X1»$ (scores $M = «M»$, $T = «T»$): with $A$ taken at $X_0$ and $X$ at $X_1$, T1.walk's «stacked» fails",
                        fails=("T1.walk",),
                        params={"stacked": _F.SHA_STACKED},
                        instance={
                            "kind": "sha_reuse",
                            "X0": [[1, 0], [0, 1], [1, 1]],
                            "X1": [[2, 0], [0, -1], [1, 2]],
                            "M": [[1, "1/2"], [0, 1]],
                            "T": [[1, 2], [0, 1]],
                        },
                    ),
                ),
            ),
            Hypothesis(
                "T1.transport",
                "transport",
                "torch `nn.Linear` layout (weights out × in, «W_V», «W_O»; column vectors): «layout»",
                predicate="t1_transport_layout",
                params={"layout": _FW.LAYOUT, "W_V": _FW.SHAPE_W_V, "W_O": _FW.SHAPE_W_O},
                witnesses=(
                    Witness(
                        "T1.transport.w1",
                        "row-vector layout «row_layout» used with `nn.Linear` weights $W_V = «W_V»$, $W_O = «W_O»$ ($A = «A»$, $X = «X»$)",
                        fails=("T1.walk",),
                        params={"row_layout": _FW.ROW_LAYOUT},
                        instance={
                            "kind": "sha_layers",
                            "A": [["1/2", "1/2", 0], [0, "1/3", "2/3"], ["1/4", "1/4", "1/2"]],
                            "X": [[1, 2], [0, 1], [-1, 3]],
                            "W_V": [[1, 2], [0, 1]],
                            "W_O": [[1, 0], [3, 1]],
                            "layout": "row",
                        },
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "T1.walk",
                "«sha», i.e. «stacked» (**token-major** stacking, `X.reshape(-1)`): the connection walk whose blocks are «block»",
                predicate="t1_walk",
                params={"sha": _F.SHA, "stacked": _F.SHA_STACKED, "block": _FW.T1_BLOCK},
                tolerance=relative(_FT.OPERATOR),
                derivations=("T1::SHA(X) = kron(A,T) x (token-major)", "T1::kron(A,T) = walk with P = A, O_ij = T"),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T1.spectrum",
                "the eigenvalues $\\nu$ of «kron», with algebraic multiplicities and suitably ordered, are «spectrum» ($\\lambda_i$, $\\mu_a$: those of $A$, $T$; any square $A$, $T$)",
                predicate="kron_spectrum",
                params={"spectrum": _FW.KRON_EIGENVALUES, "kron": _FW.KRON_AT},
                tolerance=KRON_SPECTRUM_RULE,
                derivations=("L4::charpoly(kron(A,T))",),
                tests=(STATEMENT_TEST,),
            ),
        ),
        derivation=_dv.derive_t1,
        lemmas=("L1", "L4"),
        symbolic_tests=(SYMBOLIC_TESTS,),
        certificate_tests=(CERTIFICATE_TESTS,),
        numeric_tests=(
            "tests/numerics/test_walk_t1.py",
            "tests/numerics/test_attention.py",
            "tests/numerics/test_statements.py",
            "tests/numerics/test_scale.py",
        ),
        necessity_tests=("tests/numerics/test_walk_t1.py", NECESSITY_TESTS),
    ),
    Theorem(
        id="T2",
        title="Multi-head attention is one edge-dependent connection walk",
        kind="theorem",
        source=Source(SEED_A, CLAIM_MHA, "THEOREMS.md T2"),
        hypotheses=(
            Hypothesis(
                "T2.heads",
                "heads",
                "every head row-stochastic (softmax: strictly positive), «heads»",
                predicate="heads_stochastic",
                params={"heads": _F.HEADS_STOCHASTIC},
                witnesses=(
                    Witness(
                        "T2.heads.w1",
                        "a head whose rows are not normalised, $A^1 = «As[0]»$ ($A^2 = «As[1]»$, $T_1 = «Ts[0]»$, $T_2 = «Ts[1]»$): the head mean $P$ is not a walk matrix",
                        fails=("T2.walk",),
                        instance={
                            "kind": "mha",
                            "As": [[[1, 1], [1, 1]], [["1/2", "1/2"], ["1/2", "1/2"]]],
                            "Ts": [[[1, 0], [0, 1]], [[0, -1], [1, 0]]],
                        },
                    ),
                ),
            ),
            Hypothesis(
                "T2.convention",
                "convention",
                "the walk matrix is the head mean (a gauge choice): «convention»",
                predicate="p_is_head_mean",
                params={"convention": _FW.CONVENTION},
                witnesses=(
                    Witness(
                        "T2.convention.w1",
                        "$P = A^1 = «P»$ with $A^1_{12} = «As[0][0][1]»$, $A^2_{12} = «As[1][0][1]»$ ($T_1 = «Ts[0]»$, $T_2 = «Ts[1]»$): «no_transport» holds for the block $B_{12}$ (nonzero where $P_{12}$ vanishes), so no $O_{12}$ exists",
                        params={"no_transport": _FW.NO_TRANSPORT},
                        fails=("T2.walk",),
                        instance={
                            "kind": "mha",
                            "As": [[[1, 0], [0, 1]], [["1/2", "1/2"], ["1/2", "1/2"]]],
                            "Ts": [[[1, 0], [0, 1]], [[0, -1], [1, 0]]],
                            "P": [[1, 0], [0, 1]],
                        },
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "T2.walk",
                "$P$ is row-stochastic: «rows»; the gates are convex: «gates»; and the walk's blocks are the heads' blocks exactly: «blocks» (head $h$: $A^h$ and $T_h$ are the slices $A_{h,\\cdot,\\cdot}$, $T_{h,\\cdot,\\cdot}$ of the stacked heads)",
                predicate="t2_gated_walk",
                params={"rows": _F.T2_ROWS, "gates": _F.T2_GATES, "blocks": _F.T2_BLOCKS},
                tolerance=relative(_FT.HEADS),
                derivations=(
                    "T2::P = mean_h A^h is row-stochastic",
                    "T2::gates are convex",
                    "T2::block(P, O) = B exactly",
                    "T2::MHA(X) = block(B) x",
                ),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T2.gauge",
                "gauge: any other row-stochastic walk matrix $P'$, positive on every nonzero block: «support», works with its own transports: «gauge»",
                predicate="t2_gauge",
                params={"gauge": _FW.GAUGE, "support": _FW.GAUGE_SUPPORT},
                tolerance=relative(_FT.HEADS),
                derivations=("T2::gauge",),
                tests=("tests/numerics/test_walk_t2.py", STATEMENT_TEST),
            ),
            make_conclusion(
                "T2.constant",
                "constant transport (the blocks a Kronecker product, one transport for every edge) «iff» every block is a nonnegative multiple of the transports' sum: «constant» with «nonneg»; with linearly independent $T_h$ «iff_heads» all heads attend alike: «equal_heads»",
                predicate="t2_constant_criterion",
                params={"constant": _FW.CONSTANT, "nonneg": _FW.CONSTANT_NONNEG, "equal_heads": _FW.EQUAL_HEADS},
                tolerance=CONSTANT_RULE,
                derivations=("T2::constant transport with independent T_h",),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T2.special",
                "shared attention: «shared_A»; shared transport: «shared_T»; cancelling heads: «cancelling», while $P$ (the head mean) is unchanged",
                predicate="t2_special",
                params={"shared_A": _FW.SHARED_A, "shared_T": _FW.SHARED_T, "cancelling": _FW.CANCELLING},
                tolerance=relative(_FT.HEADS),
                derivations=("T2::shared A across heads", "T2::shared T across heads", "T2::cancelling heads"),
                tests=("tests/numerics/test_walk_t2.py", STATEMENT_TEST),
            ),
            make_conclusion(
                "T2.counterexample",
                "counterexample ($A^1 = «A1|tex»$, $A^2 = «A2|tex»$, $T_1 = «T1|tex»$, $T_2 = «T2|tex»$): $B_{11} = «B11|tex»$ and $B_{12} = «B12|tex»$ are linearly independent; the nearest Kronecker product misses by $«miss_exact|tex»$, «miss» when rounded to «digits» decimals",
                predicate="t2_counterexample",
                params=T2_COUNTEREXAMPLE_PARAMS,
                tolerance=EXACT_RULE,
                derivations=(
                    "T2::counterexample: B_11",
                    "T2::counterexample: B_12",
                    "T2::counterexample: B_11, B_12 linearly independent",
                    "T2::counterexample: nearest Kronecker product misses by",
                ),
                tests=(STATEMENT_TEST,),
            ),
        ),
        derivation=_dv.derive_t2,
        lemmas=("L1",),
        notes=(
            Note(
                "GQA: query head $h$ reads the kv head «gqa»; a head's transport has «rank», so a single head is «never» orthogonal when «narrow».",
                {"gqa": _FW.GQA, "rank": _FW.HEAD_RANK, "narrow": _FW.NARROW, "never": NEVER_ORTHOGONAL},
            ),
            Note(
                "Off support, «off_support» (e.g. a causal mask), the gates «g» divide zero by zero and $O_{ij}$ is arbitrary (`t2_gated_walk` and `t2_special` find these entries with this formula).",
                {"off_support": _FW.OFF_SUPPORT, "g": _FW.DEF_G},
            ),
        ),
        symbolic_tests=(SYMBOLIC_TESTS,),
        certificate_tests=(CERTIFICATE_TESTS,),
        numeric_tests=(
            "tests/numerics/test_walk_t2.py",
            "tests/numerics/test_attention.py",
            "tests/numerics/test_oracles.py",  # T2.gauge's oracle at the edge of float64's range
            "tests/numerics/test_scale.py",
            "tests/models/test_identity_tiny.py",
            "tests/models/test_identity_real.py",
            "tests/models/test_registry.py",
            "tests/numerics/test_statements.py",
        ),
        necessity_tests=("tests/numerics/test_walk_t2.py", NECESSITY_TESTS),
    ),
]
