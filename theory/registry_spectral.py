"""Registry entries T4-T6: reversibility of softmax attention, the single-head involution case,
and pattern formation."""

from __future__ import annotations

from . import derivations as _dv
from . import formulas as _F
from .registry_common import (
    _CERT,
    _CLAIM_LAP,
    _CLAIM_PAT,
    _NEC,
    _REFL,
    _REL,
    _ROT,
    _SPEC,
    _STMT,
    _SYM,
    _T3_NUMERIC,
    SEED_A,
    SEED_B,
    _c,
)
from .statements import Hypothesis, Witness
from .theorem import Source, Theorem

SPECTRAL_THEOREMS: list[Theorem] = [
    Theorem(
        id="T4",
        title="When softmax attention is reversible",
        kind="theorem",
        source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T4"),
        hypotheses=(
            Hypothesis(
                "T4.softmax",
                "softmax",
                "$A = \\operatorname{softmax}_{\\text{rows}}(X M X^\\top / \\sqrt{d_k})$, $M = W_Q^\\top W_K$, full support (no mask), $n \\ge 3$",
                predicate="softmax_full_support",
                witnesses=(
                    Witness(
                        "T4.softmax.w1",
                        "a causal mask: symmetric $M$ no longer gives detailed balance (no positive $\\pi$ at all)",
                        fails=("T4.criterion",),
                        instance={
                            "kind": "softmax",
                            "X": [[1, 0], [0, 1], [1, 1]],
                            "M": [[1, "1/2"], ["1/2", 1]],
                            "mask": "causal",
                        },
                    ),
                ),
            ),
        ),
        conclusions=(
            _c(
                "T4.triangle",
                "Kolmogorov triangle identity for every triple $i, j, k$ (with $S$, $Z$, $A$ as below, no mask: $\\mu = 0$): «triangle»",
                predicate="t4_triangle",
                params={"triangle": _F.T4_TRIANGLE},
                tolerance=_REL,
                derivations=("T4::Kolmogorov triangle (0,1,2)",),
                tests=(_STMT,),
            ),
            _c(
                "T4.criterion",
                "$A$ is reversible iff $M_a$ vanishes on $\\operatorname{span}\\{x_j - x_1\\}$; symmetric scores suffice — detailed balance with $\\pi_i \\propto Z_i$: «balance» ($\\mu$: the mask, $0$ without one), and $\\pi$ is stationary: «stationary»; symmetric scores are not necessary (affinely collinear tokens; $n = 2$)",
                params={"balance": _F.T4_BALANCE, "stationary": _F.T4_STATIONARY},
                predicate="t4_symmetric_reversible",
                tolerance=_REL,
                derivations=(
                    "T4::symmetric M: pi_i A_ij = pi_j A_ji",
                    "T4::symmetric M: pi = (D_ii) is stationary",
                    "T4::affinely collinear tokens",
                ),
                tests=(_STMT,),
            ),
            _c(
                "T4.query_bias",
                "a key bias cancels; a query bias keeps reversibility with $\\pi_i \\propto e^{\\beta_i}\\sum_j e^{S_{ij}+\\beta_j}$",
                predicate="t4_query_bias",
                tolerance=_REL,
                derivations=("T4::key bias", "T4::query bias beta_j: reversible"),
                tests=(_STMT,),
            ),
            _c(
                "T4.causal",
                "causal attention is never reversible with a positive $\\pi$ ($n \\ge 2$)",
                predicate="t4_causal",
                tolerance="exact: an edge $i \\to j$ with $A_{ij} > 0 = A_{ji}$ (detailed balance then forces $\\pi_i = 0$)",
                derivations=("T4::causal mask",),
                tests=(_STMT,),
            ),
        ),
        derivation=_dv.derive_t4,
        notes=("RoPE: reversible when $W_Q = W_K$; symmetric $M$ alone is not enough.",),
        symbolic_tests=(_SYM,),
        certificate_tests=(_CERT,),
        numeric_tests=(
            "tests/numerics/test_reversibility.py",
            "tests/numerics/test_graphs.py",
            "tests/numerics/test_statements.py",
        ),
        necessity_tests=(_NEC,),
    ),
    Theorem(
        id="T5",
        title="Single head: when $I - A\\otimes T$ is a connection Laplacian",
        kind="theorem",
        source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T5"),
        hypotheses=(
            Hypothesis(
                "T5.softmax",
                "softmax",
                "$A$ softmax attention with full support (so $A$ is irreducible)",
                predicate="full_support",
                witnesses=(
                    Witness(
                        "T5.softmax.w1",
                        "$A = I$ (not full support, reducible), $T = \\operatorname{diag}(1,-1)$: $\\dim\\ker\\Delta = 2 > \\dim \\operatorname{Fix} T$",
                        fails=("T5.kernel",),
                        instance={"kind": "sha", "A": [[1, 0], [0, 1]], "T": _REFL},
                    ),
                ),
            ),
            Hypothesis(
                "T5.reversible",
                "reversible",
                "$A$ reversible",
                predicate="reversible",
                witnesses=(
                    Witness(
                        "T5.reversible.w1",
                        "non-reversible $A$ (a triangle ratio $3 \\ne 1$), $T = \\operatorname{diag}(1,-1)$: not $\\pi$-self-adjoint",
                        fails=("T5.laplacian",),
                        instance={
                            "kind": "sha",
                            "A": [["1/2", "1/4", "1/4"], ["1/8", "1/2", "3/8"], ["1/4", "1/4", "1/2"]],
                            "T": _REFL,
                        },
                    ),
                ),
            ),
            Hypothesis(
                "T5.involution",
                "involution",
                "$T$ orthogonal and $T = T^\\top$, i.e. $T = I - 2\\Pi_U$",
                predicate="orthogonal_involution",
                witnesses=(
                    Witness(
                        "T5.involution.w1",
                        "$T$ a rotation (orthogonal, not symmetric): complex spectrum",
                        fails=("T5.laplacian", "T5.spectrum"),
                        instance={"kind": "sha", "A": [["3/5", "2/5"], ["1/5", "4/5"]], "T": _ROT},
                    ),
                    Witness(
                        "T5.involution.w2",
                        "$T = [[1,1],[0,-1]]$ ($T^2 = I$, not orthogonal): real spectrum in $[0,2]$ but not $\\pi$-self-adjoint",
                        fails=("T5.laplacian",),
                        instance={"kind": "sha", "A": [["3/5", "2/5"], ["1/5", "4/5"]], "T": [[1, 1], [0, -1]]},
                        derivation="T5::non-orthogonal involution",
                    ),
                ),
            ),
        ),
        conclusions=(
            _c(
                "T5.laplacian",
                "$I - A\\otimes T$ is a connection Laplacian ($\\pi$-self-adjoint, real spectrum in $[«lo», «hi»]$, Dirichlet form) iff $A$ reversible and $T$ an orthogonal involution (up to a global gauge: $T^2 = I$)",
                predicate="sha_laplacian",
                params={"lo": 0, "hi": 2},
                tolerance=_REL + "; " + _SPEC,
                derivations=(
                    "T5::reversible A, T = I - 2 Pi_U: Delta pi-self-adjoint",
                    "T5::orthogonal + symmetric => involution",
                ),
                tests=(_STMT,),
            ),
            _c(
                "T5.spectrum",
                "$\\operatorname{spec}\\Delta$, $\\Delta = I - A \\otimes T$, with algebraic multiplicities: for every eigenpair $(\\lambda, u)$ of $A$, on $\\operatorname{Fix}(T)$ «on_fix» and on the $-1$ eigenspace «on_minus» (component $(i, a)$ of $\\Delta(u \\otimes f)$)",
                predicate="t5_spectrum",
                params={"on_fix": _F.T5_ON_FIX, "on_minus": _F.T5_ON_MINUS},
                tolerance="multisets matched by optimal assignment; distance ≤ 1e-6",
                derivations=("T5::spec(I - kron(A,T))",),
                tests=(_STMT,),
            ),
            _c(
                "T5.kernel",
                "$\\ker\\Delta = \\mathbf 1 \\otimes \\operatorname{Fix}(T)$ for irreducible $A$",
                predicate="t5_kernel",
                tolerance="null space by SVD at threshold 1e-9; equal dimension and containment",
                derivations=("T3::4. parallel section",),
                tests=(_STMT,),
            ),
            _c(
                "T5.non_orthogonal",
                "a non-orthogonal involution has real spectrum in $[0,2]$ but fails $\\pi$-self-adjointness and the Dirichlet form",
                derivations=("T5::non-orthogonal involution",),
                tests=("tests/numerics/test_necessity.py::test_t5_non_orthogonal_involution_explicit",),
            ),
        ),
        derivation=_dv.derive_t5,
        lemmas=("L3", "L4"),
        symbolic_tests=(_SYM,),
        certificate_tests=(_CERT,),
        numeric_tests=_T3_NUMERIC + ("tests/numerics/test_involution.py", "tests/numerics/test_statements.py"),
        necessity_tests=(_NEC,),
    ),
    Theorem(
        id="T6",
        title="Pattern formation: linearisation and dispersion relation",
        kind="theorem",
        source=Source(SEED_B, _CLAIM_PAT, "THEOREMS.md T6"),
        hypotheses=(
            Hypothesis(
                "T6.H1",
                "(H1) normalised",
                "each $A^h(X)$ is row-stochastic for all $X$",
                predicate="heads_stochastic",
                witnesses=(
                    Witness(
                        "T6.H1.w1",
                        "sigmoid (unnormalised) attention: extra derivative terms in the Jacobian",
                        derivation="T6::drop H1",
                    ),
                ),
            ),
            Hypothesis(
                "T6.H2",
                "(H2) homogeneous",
                "base state $X = \\mathbf 1 \\otimes x^*$ (not necessarily an equilibrium)",
                witnesses=(
                    Witness(
                        "T6.H2.w1",
                        "inhomogeneous base state $x_0 = x^* + 1$: extra derivative terms",
                        derivation="T6::drop H2",
                    ),
                ),
            ),
            Hypothesis(
                "T6.H3",
                "(H3) circulant",
                "$A^h_{0,ij} = a_h((j-i) \\bmod n)$: relative positional kernel on a ring, no absolute PE, no mask",
                predicate="circulant",
                witnesses=(
                    Witness(
                        "T6.H3.w1",
                        "a non-circulant (absolute-position) attention on a ring of 3: Fourier modes are not eigenvectors",
                        fails=("T6.fourier",),
                        instance={
                            "kind": "ring",
                            "A0": [[["1/2", "1/2", 0], [0, "1/2", "1/2"], ["1/3", "1/3", "1/3"]]],
                            "T": [[[2]]],
                        },
                    ),
                ),
            ),
        ),
        conclusions=(
            _c(
                "T6.jacobian",
                "(H1)+(H2): the Jacobian of $\\dot x_i = \\sum_h\\sum_j A^h_{ij}(X) T_h x_j - x_i$ is exactly $J = \\operatorname{block}(\\sum_h A^h_{0,ij} T_h) - I$",
                derivations=("T6::Jacobian at 1(x)x*",),
                tests=(
                    "tests/numerics/test_patterns.py::test_t6_jacobian_of_softmax_dynamics_equals_walk_minus_identity",
                ),
            ),
            _c(
                "T6.fourier",
                "(H3): eigenpairs $\\varphi_k \\otimes v$, $\\varphi_k(j) = \\zeta^j$, $\\zeta = e^{2\\pi i k / n}$, with the symbol $M(k) = \\sum_h \\hat a_h(k) T_h$ of the kernels $a_h(m) = A0^h_{0m}$; component $c$ of token $i$, $J = \\operatorname{block}(\\sum_h A0^h_{ij} T_h) - I$: «fourier»",
                predicate="t6_fourier",
                params={"fourier": _F.FOURIER},
                tolerance=_REL,
                derivations=("T6::Fourier (ring=", "T6::Fourier with the reversed sign"),
                tests=(_STMT,),
            ),
            _c(
                "T6.selection",
                "selection $k^* = \\operatorname{argmax}_k \\max \\operatorname{Re}\\operatorname{eig} M(k)$, growth $\\sigma = \\lambda_{\\max}(M(k^*)) - «shift»$; phase velocity $c = «velocity_sign|sign»n \\operatorname{Im}\\sigma / (2\\pi k^*)$",
                predicate="t6_selection",
                params={"shift": 1, "velocity_sign": -1, "hat_sign": 1},
                tolerance=_REL,
                derivations=("T6::Fourier (ring=",),
                tests=(_STMT, "tests/numerics/test_t6_emergence.py::test_emergence_follows_the_symbol"),
            ),
            _c(
                "T6.rotating",
                "rotating wave $T = \\rho R(\\theta)$: $\\sigma_z(k) = \\rho e^{i\\theta}\\hat a(k) - «shift»$",
                predicate="t6_rotating",
                params={"shift": 1, "hat_sign": 1},
                tolerance=_REL,
                derivations=("T6::rotating wave",),
                tests=(_STMT,),
            ),
        ),
        derivation=_dv.derive_t6,
        lemmas=("L2",),
        notes=(
            "The symbol predicts onset only; on a line or with a causal mask the operator is non-normal (transient growth only).",
            "For real kernels $M(-k) = \\overline{M(k)}$: $(k^*, \\sigma)$ and $(-k^*, \\bar\\sigma)$ are the same real pattern; compare selections modulo this conjugation. A positive real eigenvalue of $T$ always selects $k = 0$ (clustering).",
            "Reference case Ex1 ($n = 64$, wrapped Gaussian kernel centred at $+4$, width $1.5$, $T = \\operatorname{diag}(1,-3)$): $|k^*| = 7$, $\\sigma = 0.62926 \\pm 0.67486 i$, $c = 0.982$ (RK4 $dt = 0.01$, perturbation $10^{-10}$, linear-window fit).",
            "Reference case Ex3 (two heads, kernels centred at $+7$ and $-4$, non-commuting $T_h$): $|k^*| = 6$ while a per-head guess gives $|k| = 3$; the simulation follows the symbol.",
        ),
        symbolic_tests=(_SYM,),
        certificate_tests=(_CERT,),
        numeric_tests=(
            "tests/numerics/test_patterns.py",
            "tests/numerics/test_statements.py",
            "tests/numerics/test_t6_emergence.py",
        ),
        necessity_tests=("tests/numerics/test_patterns.py", _NEC),
    ),
]
