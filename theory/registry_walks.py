"""Registry entries T1 and T2: attention as a connection walk (single head, multi-head)."""

from __future__ import annotations

from . import derivations as _dv
from . import formulas as _F
from .registry_common import _CERT, _CLAIM_MHA, _CLAIM_SHA, _NEC, _REL, _STMT, _SYM, _T2_CE, SEED_A, _c
from .statements import Hypothesis, Witness
from .theorem import Source, Theorem

WALK_THEOREMS: list[Theorem] = [
    Theorem(
        id="T1",
        title="Single-head attention is a constant-transport connection walk",
        kind="theorem",
        source=Source(SEED_A, _CLAIM_SHA, "THEOREMS.md T1"),
        hypotheses=(
            Hypothesis(
                "T1.factorisation",
                "factorisation",
                "$A = A(X)$ is treated as given: the identity is a factorisation $Y = W(X) X$, not linearity in $X$",
                witnesses=(
                    Witness(
                        "T1.factorisation.w1",
                        "softmax attention frozen at $X_0$ applied to $X_1$: $\\mathrm{SHA}(X_1) \\ne (A(X_0)\\otimes T) x_1$",
                        fails=("T1.walk",),
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
                "$T = W_O W_V$ (torch `nn.Linear` layout, column vectors)",
                predicate="t1_transport_layout",
                witnesses=(
                    Witness(
                        "T1.transport.w1",
                        "row-vector layout $T = (W_O W_V)^\\top$ used with `nn.Linear` weights",
                        fails=("T1.walk",),
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
            _c(
                "T1.walk",
                "«sha», i.e. «stacked» (**token-major** stacking, $\\operatorname{vec}(X^\\top)$ = `X.reshape(-1)`): the connection walk with $P = A$ and $O_{ij} \\equiv T$",
                predicate="t1_walk",
                params={"sha": _F.SHA, "stacked": _F.SHA_STACKED},
                tolerance=_REL,
                derivations=("T1::SHA(X) = kron(A,T) x (token-major)", "T1::kron(A,T) = walk with P = A, O_ij = T"),
                tests=(_STMT,),
            ),
            _c(
                "T1.spectrum",
                "$\\operatorname{spec}(A\\otimes T) = \\{\\lambda_i(A) \\mu_k(T)\\}$ with algebraic multiplicities (any square $A$, $T$)",
                predicate="kron_spectrum",
                tolerance="multisets matched by optimal assignment; distance ≤ 1e-6·max(1, ‖A‖‖T‖) (eigenvalues of non-normal matrices are only √ε-accurate)",
                derivations=("L4::charpoly(kron(A,T))",),
                tests=(_STMT,),
            ),
        ),
        derivation=_dv.derive_t1,
        lemmas=("L1", "L4"),
        symbolic_tests=(_SYM,),
        certificate_tests=(_CERT,),
        numeric_tests=(
            "tests/numerics/test_walk_t1.py",
            "tests/numerics/test_attention.py",
            "tests/numerics/test_statements.py",
            "tests/numerics/test_scale.py",
        ),
        necessity_tests=("tests/numerics/test_walk_t1.py", _NEC),
    ),
    Theorem(
        id="T2",
        title="Multi-head attention is one edge-dependent connection walk",
        kind="theorem",
        source=Source(SEED_A, _CLAIM_MHA, "THEOREMS.md T2"),
        hypotheses=(
            Hypothesis(
                "T2.heads",
                "heads",
                "blocks $B_{ij} = \\sum_h A^h_{ij} T_h$ (as defined in the conclusion), every head row-stochastic (softmax: strictly positive): «heads»",
                predicate="heads_stochastic",
                params={"heads": _F.HEADS_STOCHASTIC},
                witnesses=(
                    Witness(
                        "T2.heads.w1",
                        "a head with rows summing to 2: $P = \\frac1H\\sum_h A^h$ is not a walk matrix",
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
                "$P = \\frac1H \\sum_h A^h$ (a gauge choice)",
                predicate="p_is_head_mean",
                witnesses=(
                    Witness(
                        "T2.convention.w1",
                        "$P = A^1$ with $A^1_{12} = 0 < A^2_{12}$: $B_{12} \\ne 0 = P_{12}$, no $O_{12}$ exists",
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
            _c(
                "T2.walk",
                "$P$ is row-stochastic: «rows»; the gates are convex: «gates»; and $P_{ij} O_{ij} = B_{ij}$ exactly: «blocks» (head $h$: $A^h = A_{h,\\cdot,\\cdot}$, $T_h = T_{h,\\cdot,\\cdot}$)",
                predicate="t2_gated_walk",
                params={"rows": _F.T2_ROWS, "gates": _F.T2_GATES, "blocks": _F.T2_BLOCKS},
                tolerance=_REL,
                derivations=(
                    "T2::P = mean_h A^h is row-stochastic",
                    "T2::gates are convex",
                    "T2::block(P, O) = B exactly",
                    "T2::MHA(X) = block(B) x",
                ),
                tests=(_STMT,),
            ),
            _c(
                "T2.gauge",
                "gauge: any row-stochastic $P'$ with $P'_{ij} > 0$ wherever $B_{ij} \\neq 0$ works with $O'_{ij} = B_{ij} / P'_{ij}$",
                derivations=("T2::gauge",),
                tests=("tests/numerics/test_walk_t2.py",),
            ),
            _c(
                "T2.constant",
                "constant transport iff every $B_{ij}$ is a nonnegative multiple of $T_\\Sigma = \\sum_h T_h$; with linearly independent $T_h$ iff $A^1 = \\dots = A^H$",
                predicate="t2_constant_criterion",
                tolerance="nearest-Kronecker miss ≤ 1e-9·‖B‖_F ⇔ every B_ij within 1e-9·‖B‖_F of its projection on T_Σ (coefficient ≥ 0)",
                derivations=("T2::constant transport with independent T_h",),
                tests=(_STMT,),
            ),
            _c(
                "T2.special",
                "shared $A$ gives $O = T_\\Sigma$; shared $T$ gives $O = H T$; cancelling heads ($T_2 = -T_1$, $A^1 = A^2$) give $B = 0$ while $P > 0$",
                derivations=("T2::shared A across heads", "T2::shared T across heads", "T2::cancelling heads"),
                tests=("tests/numerics/test_walk_t2.py",),
            ),
            _c(
                "T2.counterexample",
                "counterexample ($n=d=H=2$, $A^1 = [[.9,.1],[.2,.8]]$, $A^2 = \\frac12 \\mathbf{1}\\mathbf{1}^\\top$, $T_1 = I$, $T_2 = J$): $B_{11}$, $B_{12}$ linearly independent; the nearest Kronecker product misses by $\\sqrt2\\sqrt{5-\\sqrt{17}}/2 \\approx «miss»$ (`«miss_exact»`, «digits» decimals)",
                predicate="t2_counterexample",
                params=_T2_CE,
                tolerance="exact value (mpmath, 40 digits) within 1e-30 of `miss_exact`; the rounded `miss` within half a unit of its last decimal",
                derivations=(
                    "T2::counterexample: B_11",
                    "T2::counterexample: B_12",
                    "T2::counterexample: B_11, B_12 linearly independent",
                    "T2::counterexample: nearest Kronecker product misses by",
                ),
                tests=(_STMT,),
            ),
        ),
        derivation=_dv.derive_t2,
        lemmas=("L1",),
        notes=(
            "GQA: query head $h$ reads kv head $h // (H/H_{kv})$; $\\operatorname{rank} T_h \\le d_h$, so a single head is never orthogonal when $d_h < d$.",
            "Off support (all $A^h_{ij} = 0$, e.g. a causal mask) the gates are $0/0$ and $O_{ij}$ is arbitrary.",
        ),
        symbolic_tests=(_SYM,),
        certificate_tests=(_CERT,),
        numeric_tests=(
            "tests/numerics/test_walk_t2.py",
            "tests/numerics/test_attention.py",
            "tests/numerics/test_scale.py",
            "tests/models/test_identity_tiny.py",
            "tests/models/test_identity_real.py",
            "tests/models/test_registry.py",
            "tests/numerics/test_statements.py",
        ),
        necessity_tests=("tests/numerics/test_walk_t2.py", _NEC),
    ),
]
