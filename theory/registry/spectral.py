"""Registry entries T3-T6: the random-walk connection Laplacian, reversibility of softmax attention,
the single-head involution case, and pattern formation."""

from __future__ import annotations

from .. import cases as _cases
from .. import derivations as _dv
from .. import formulas as _F
from ..formulas import laplacian as _FL
from ..formulas import patterns as _FP
from ..formulas import reversibility as _FR
from ..formulas import spectral as _FS
from ..formulas import tolerances as _FT
from ..statements import Hypothesis, Note, Witness, latex_data
from ..theorem import Source, Theorem
from .assertions import T6_CONSTANT_MODE
from .common import (
    CERTIFICATE_TESTS,
    CLAIM_LAP,
    CLAIM_PAT,
    EIGEN_RULE,
    FLAT_RULE,
    FORM_RULE,
    KERNEL_RULE,
    NECESSITY_TESTS,
    REFLECTION,
    ROTATION,
    SEED_A,
    SEED_B,
    SELECTION_RULE,
    SHA_LAPLACIAN_RULE,
    SPECTRUM_RULE,
    STATEMENT_TEST,
    SYMBOLIC_TESTS,
    T3_NUMERIC_TESTS,
    T5_KERNEL_RULE,
    make_conclusion,
    relative,
)

_INV = _cases.T3_INVERSE_TRANSPORTS
_NOPI = _cases.T3_KERNEL_WITHOUT_POSITIVE_PI
_BUILD = {
    "spectrum": _FL.spectrum,
    "form": _FL.form_value,
    "dirichlet": _FL.dirichlet_value,
    "correction": _FL.correction_value,
}


def _facts(wid: str) -> dict:
    """The formulas a T3 witness's text states about its data, built from the case data
    (:data:`theory.cases.T3_WITNESS_FACTS`) and judged by :func:`theory.oracles.laplacian.witness_facts`."""
    return {k: _BUILD[k](v) for k, v in _cases.T3_WITNESS_FACTS[wid].items()}


T3: Theorem = Theorem(
    id="T3",
    title="When the generator is a random-walk connection Laplacian",
    kind="theorem",
    source=Source(SEED_A, CLAIM_LAP, "THEOREMS.md T3"),
    hypotheses=(
        Hypothesis(
            "T3.a",
            "(a) stochastic",
            "«stochastic»",
            predicate="stochastic",
            params={"stochastic": _F.STOCHASTIC},
            witnesses=(
                Witness(
                    "T3.a.w1",
                    "$P=«P»$, $O=«O[0][1]»$, $\\pi = «pi»$: «spectrum»; at $x = «x»$ the $\\pi$-form of $\\Delta$, «form», against the Dirichlet sum, «dirichlet» (L3.identity's correction term: «correction»)",
                    fails=("T3.spectrum", "T3.dirichlet"),
                    instance={
                        "kind": "walk",
                        "P": [[0, 2], [2, 0]],
                        "O": [[[[1]], [[1]]], [[[1]], [[1]]]],
                        "pi": ["1/2", "1/2"],
                        "x": [1, 1],
                    },
                    params=_facts("T3.a.w1"),
                    derivation="T3::drop (a) [P=[[0,2],[2,0]], O=1]: spec Delta = {-1, 3}",
                ),
            ),
        ),
        Hypothesis(
            "T3.b",
            "(b) reversible",
            "«balance» for some positive $\\pi$",
            predicate="reversible",
            params={"balance": _F.BALANCE},
            witnesses=(
                Witness(
                    "T3.b.w1",
                    "directed cycle $P = «P»$, $O = «O[0][1]»$: «spectrum», self-adjoint in no inner product",
                    fails=("T3.self_adjoint", "T3.spectrum"),
                    instance={"kind": "walk", "P": [[0, 1, 0], [0, 0, 1], [1, 0, 0]], "O": [[[[1]]] * 3] * 3},
                    params=_facts("T3.b.w1"),
                    derivation="T3::drop (b) [directed 3-cycle",
                ),
            ),
        ),
        Hypothesis(
            "T3.c1",
            "(c1) orthogonal",
            "every $O_{ij}$ on the support (the nonzero entries of $P$) is orthogonal: «orthogonal»",
            predicate="orthogonal",
            params={"orthogonal": _F.ORTHOGONAL},
            witnesses=(
                Witness(
                    "T3.c1.w1",
                    "swap walk $P = «P»$, $O_{12} = O_{21} = «O[0][1]»$: «spectrum»",
                    fails=("T3.spectrum",),
                    instance={"kind": "walk", "P": [[0, 1], [1, 0]], "O": [[[[0]], [[2]]], [[[2]], [[0]]]]},
                    params=_facts("T3.c1.w1"),
                    derivation="T3::drop orthogonality [swap, O=2]",
                ),
                Witness(
                    "T3.c1.w2",
                    "keep «inverse» only (directed cycle, weights $«weight»$, $O_{12} = «O12»$, $O_{23} = «O23»$, "
                    "$O_{31} = «O31»$, the derivation's data): a negative eigenvalue, «negative», and a complex pair",
                    params={
                        "inverse": _FL.INVERSE,
                        **{k: latex_data(_INV[k]) for k in ("weight", "O12", "O23", "O31")},
                        "negative": _FL.negative_eigenvalue(_INV["negative_eigenvalue"], int(_INV["digits"])),
                    },
                    derivation="T3::drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: one negative real eigenvalue",
                ),
            ),
        ),
        Hypothesis(
            "T3.c2",
            "(c2) transpose-compatible",
            "transpose-compatible on every edge used both ways: «transpose»",
            predicate="transpose_compatible",
            params={"transpose": _F.TRANSPOSE},
            witnesses=(
                Witness(
                    "T3.c2.w1",
                    "swap walk $P = «P»$, $O_{12} = O_{21} = «O[0][1]»$, a rotation: complex spectrum, «spectrum» (the derivation checks another angle)",
                    fails=("T3.self_adjoint", "T3.spectrum"),
                    instance={
                        "kind": "walk",
                        "P": [[0, 1], [1, 0]],
                        "O": [[[[0, 0], [0, 0]], ROTATION], [ROTATION, [[0, 0], [0, 0]]]],
                    },
                    params=_facts("T3.c2.w1"),
                    derivation="T3::drop O_ji=O_ij^T [swap",
                ),
            ),
        ),
    ),
    conclusions=(
        make_conclusion(
            "T3.self_adjoint",
            "$\\Delta$, the generator of the conventions, is self-adjoint in their $\\pi$ inner product, entrywise: «self_adjoint» (at unit vectors $x$, $y$ both sides are the entries of $\\Delta$ weighted by $\\pi$ and of its transpose)",
            predicate="walk_self_adjoint",
            params={"self_adjoint": _F.SELF_ADJOINT},
            tolerance=relative(_FT.OPERATOR),
            derivations=("T3::1. Delta is pi-self-adjoint",),
            tests=(STATEMENT_TEST,),
        ),
        make_conclusion(
            "T3.spectrum",
            "spectrum real, in $[«lo», «hi»]$: with the Dirichlet form, the upper form (the $\\pi$-form of the reflected generator, the left side below) is a sum of squares, entrywise: «upper_form»",
            predicate="walk_spectrum",
            params={"lo": 0, "hi": 2, "upper_form": _F.UPPER_FORM},
            tolerance=SPECTRUM_RULE,
            derivations=("T3::2. <x,(2I-Delta)x>_pi",),
            tests=(STATEMENT_TEST,),
        ),
        make_conclusion(
            "T3.dirichlet",
            "Dirichlet form (the $\\pi$-form of $\\Delta$) entrywise ($x_{i,a}$: component $a$ of token $i$, $O_{i,j,a,b}$: entry $(a,b)$ of $O_{ij}$): «dirichlet»",
            predicate="walk_dirichlet",
            params={"dirichlet": _F.DIRICHLET},
            tolerance=FORM_RULE,
            derivations=("T3::3. Dirichlet",),
            tests=(STATEMENT_TEST,),
        ),
        make_conclusion(
            "T3.kernel",
            "kernel = parallel sections: «parallel» on every edge (every nonzero entry of $P$)",
            predicate="walk_kernel_parallel",
            params={"parallel": _FS.PARALLEL},
            tolerance=KERNEL_RULE,
            derivations=("T3::4. parallel section",),
            tests=(STATEMENT_TEST,),
        ),
        make_conclusion(
            "T3.flat",
            "flat connection (transports made of orthogonal $R_i$, the premises below): $\\Delta$ is the scalar generator of $P$ on every feature, conjugated by the $R_i$, entrywise: «flat»; as matrices, «flat_matrix»; «kernel_dim» ($P$ irreducible)",
            predicate="walk_flat",
            params={"flat": _FS.FLAT, "flat_matrix": _FL.FLAT_MATRIX, "kernel_dim": _FL.kernel_dimension(1)},
            tolerance=FLAT_RULE,
            derivations=("T3::5. flat connection",),
            tests=(STATEMENT_TEST,),
        ),
        make_conclusion(
            "T3.scaled",
            "scaled isometries, «scaled_transport» ($Q$ satisfying (c1), (c2)): the Dirichlet form gains a multiple of the squared $\\pi$-norm of $x$: «scaled»; «scaled_spectrum»",
            predicate="walk_scaled",
            params={
                "scaled_transport": _FL.SCALED_TRANSPORT,
                "scaled": _FS.SCALED,
                "scaled_spectrum": _FL.SCALED_SPECTRUM,
            },
            tolerance=SPECTRUM_RULE,
            derivations=("T3::scaled O = sQ: <x,Delta x>_pi",),
            tests=(STATEMENT_TEST,),
        ),
    ),
    derivation=_dv.derive_t3,
    lemmas=("L3",),
    notes=(
        Note(
            "Weaker: the Dirichlet form and the kernel need only (a), orthogonal $O$ and a stationary $\\pi$ with "
            "positive entries; then the spectrum lies in a disk: «disk». Without a positive stationary $\\pi$ the "
            "kernel statement fails: $P = «P»$, $d = «d»$, $O_{22} = «O22»$, every other transport the identity.",
            {
                "disk": _FL.DISK,
                "P": latex_data(_NOPI["P"]),
                "d": latex_data(len(_NOPI["O"][0][0])),
                "O22": latex_data(_NOPI["O"][1][1]),
            },
        ),
        Note(
            "Gauge-free form on the blocks $B_{ij}$ (of $W$): «gauge_free» with every $Q_{ij}$ orthogonal, «rows» "
            "and «block_balance» (evaluated by `block_detailed_balance`); balanced norms, «norm_balance», are not "
            "enough (the transports must match).",
            {
                "gauge_free": _FL.GAUGE_FREE,
                "rows": _FL.GAUGE_FREE_ROWS,
                "block_balance": _FL.BLOCK_BALANCE,
                "norm_balance": _FL.NORM_BALANCE,
            },
        ),
    ),
    # the facts T3's witnesses and notes state, judged exactly on their data
    symbolic_tests=(SYMBOLIC_TESTS, "tests/theory/test_laplacian_witnesses.py"),
    certificate_tests=(CERTIFICATE_TESTS,),
    numeric_tests=T3_NUMERIC_TESTS
    + (
        "tests/numerics/test_spectra.py",
        "tests/numerics/test_statements.py",
        "tests/numerics/test_oracles.py",
        "tests/numerics/test_scale.py",
    ),
    necessity_tests=(NECESSITY_TESTS,),
)


#: T5: the interval of the spectrum (T5.laplacian states it, T5.non_orthogonal and T5.involution.w2 cite it)
T5_INTERVAL: dict = {"lo": 0, "hi": 2}


SPECTRAL_THEOREMS: list[Theorem] = [
    T3,
    Theorem(
        id="T4",
        title="When softmax attention is reversible",
        kind="theorem",
        source=Source(SEED_A, CLAIM_LAP, "THEOREMS.md T4"),
        hypotheses=(
            Hypothesis(
                "T4.softmax",
                "softmax",
                "softmax attention «attention» with the bilinear form «qk» («shape_q», «shape_k») and full support (no mask, «no_mask», every weight positive, «positive»), «size»",
                predicate="softmax_full_support",
                params={
                    "attention": _FS.ATTENTION,
                    "qk": _FS.QK,
                    "shape_q": _FR.SHAPE_WQ,
                    "shape_k": _FR.SHAPE_WK,
                    "no_mask": _FR.NO_MASK,
                    "positive": _FR.POSITIVE,
                    "size": _FR.SOFTMAX_SIZE,
                },
                witnesses=(
                    Witness(
                        "T4.softmax.w1",
                        "a causal mask, $X = «X»$, symmetric $M = «M»$: no longer detailed balance (no positive $\\pi$ at all)",
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
            make_conclusion(
                "T4.triangle",
                "Kolmogorov triangle identity for all tokens $i$, $j$, $k$ (with $S$, $Z$, $A$ as below, no mask: «no_mask»): «triangle»",
                predicate="t4_triangle",
                params={"triangle": _F.T4_TRIANGLE, "no_mask": _FR.NO_MASK},
                tolerance=relative(_FT.ROW),
                derivations=("T4::Kolmogorov triangle (0,1,2)",),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T4.criterion",
                "$A$ is reversible «iff» the right side of T4.triangle vanishes on all tokens $i$, $j$, $k$ (the antisymmetric part $M_a$ of $M$ vanishes on the differences of the tokens); if — Kolmogorov's criterion, with $\\pi$ carried along the edges from the first token: «converse»; «only_if» — a reversible $A$ with a positive $\\pi$ balances every cycle (Kolmogorov): «kolmogorov»; «suffices» (symmetric scores) — detailed balance with $\\pi_i \\propto Z_i$: «balance» ($\\mu$: the mask, «no_mask» without one), and $\\pi$ is stationary: «stationary»; «not_necessary» — for affinely collinear tokens (as any pair is: `T4.softmax.not_sharp`) the right side vanishes for every $M$: «collinear», so the 'if' above applies",
                params={
                    "balance": _F.T4_BALANCE,
                    "stationary": _F.T4_STATIONARY,
                    "kolmogorov": _FS.KOLMOGOROV,
                    "converse": _FR.CONVERSE,
                    "collinear": _FR.COLLINEAR,
                    "no_mask": _FR.NO_MASK,
                },
                predicate="t4_symmetric_reversible",
                tolerance=relative(_FT.ROW),
                derivations=(
                    "T4::symmetric M: pi_i A_ij = pi_j A_ji",
                    "T4::symmetric M: pi = (D_ii) is stationary",
                    "T4::affinely collinear tokens",
                ),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T4.query_bias",
                "a key bias (a score term $\\beta_i$) cancels; a query bias (a score term $\\beta_j$) keeps reversibility with symmetric scores: «query_bias»",
                predicate="t4_query_bias",
                params={"query_bias": _FS.QUERY_BIAS},
                tolerance=relative(_FT.ROW),
                derivations=("T4::key bias", "T4::query bias beta_j: reversible"),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T4.causal",
                "causal attention (T4.softmax's attention with the mask «mask») is «never» reversible with a positive $\\pi$ («size»)",
                predicate="t4_causal",
                params={"mask": _FS.MASK, "size": _FR.CAUSAL_SIZE},
                tolerance="exact: an edge from some token $i$ to a token $j$ with positive weight and none back (detailed balance then forces a zero weight $\\pi_i$)",
                derivations=("T4::causal mask",),
                tests=(STATEMENT_TEST,),
            ),
        ),
        derivation=_dv.derive_t4,
        notes=(
            "RoPE: reversible when the query and key projections are one matrix; a symmetric $M$ alone is not enough (`tests/numerics/test_reversibility.py`).",
        ),
        symbolic_tests=(SYMBOLIC_TESTS, "tests/theory/test_witness_statements.py"),
        certificate_tests=(CERTIFICATE_TESTS,),
        numeric_tests=(
            "tests/numerics/test_reversibility.py",
            "tests/numerics/test_graphs.py",
            "tests/numerics/test_statements.py",
        ),
        necessity_tests=(NECESSITY_TESTS,),
    ),
    Theorem(
        id="T5",
        title="Single head: when $\\Delta$ is a connection Laplacian",
        kind="theorem",
        source=Source(SEED_A, CLAIM_LAP, "THEOREMS.md T5"),
        hypotheses=(
            Hypothesis(
                "T5.softmax",
                "softmax",
                "$A$ softmax attention with full support (so $A$ is irreducible)",
                predicate="full_support",
                witnesses=(
                    Witness(
                        "T5.softmax.w1",
                        "$A = «A»$ (not full support, reducible), $T = «T»$: «excess» ($\\dim\\ker\\Delta = «kernel_dim»$, $\\dim\\operatorname{Fix}T = «fix_dim»$)",
                        fails=("T5.kernel",),
                        instance={"kind": "sha", "A": [[1, 0], [0, 1]], "T": REFLECTION, "kernel_dim": 2, "fix_dim": 1},
                        params={"excess": _FR.KERNEL_EXCESS},
                    ),
                ),
            ),
            Hypothesis(
                "T5.reversible",
                "reversible",
                "the walk «walk_p» is reversible: «balance» for some positive $\\pi$",
                predicate="reversible",
                params={"walk_p": _FR.WALK_P, "balance": _F.BALANCE},
                witnesses=(
                    Witness(
                        "T5.reversible.w1",
                        "non-reversible $A = «A»$ (its triangle ratio «ratio», $r = «cycle_ratio»$: «unbalanced»), $T = «T»$: not $\\pi$-self-adjoint",
                        fails=("T5.laplacian",),
                        instance={
                            "kind": "sha",
                            "A": [["1/2", "1/4", "1/4"], ["1/8", "1/2", "3/8"], ["1/4", "1/4", "1/2"]],
                            "T": REFLECTION,
                            "cycle_ratio": 3,
                        },
                        params={"ratio": _FR.CYCLE_RATIO, "unbalanced": _FR.UNBALANCED},
                    ),
                ),
            ),
            Hypothesis(
                "T5.involution",
                "involution",
                "$T$ orthogonal, «orthogonal», and symmetric, «symmetric»: an orthogonal involution (a reflection across $\\operatorname{Fix}(T)$)",
                predicate="orthogonal_involution",
                params={"orthogonal": _FS.T_ORTHOGONAL, "symmetric": _FS.T_SYMMETRIC},
                witnesses=(
                    Witness(
                        "T5.involution.w1",
                        "$A = «A»$, $T = «T»$ a rotation (orthogonal, not symmetric): complex spectrum",
                        fails=("T5.laplacian", "T5.spectrum"),
                        instance={"kind": "sha", "A": [["3/5", "2/5"], ["1/5", "4/5"]], "T": ROTATION},
                    ),
                    Witness(
                        "T5.involution.w2",
                        "$A = «A»$, $T = «T»$ («involution», not orthogonal): real spectrum in $[«lo», «hi»]$ but not $\\pi$-self-adjoint",
                        fails=("T5.laplacian",),
                        instance={"kind": "sha", "A": [["3/5", "2/5"], ["1/5", "4/5"]], "T": [[1, 1], [0, -1]]},
                        derivation="T5::non-orthogonal involution",
                        params={"involution": _FR.INVOLUTION, **T5_INTERVAL},
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "T5.laplacian",
                "«laplacian» (the walk «walk_p», «walk_o») is a connection Laplacian — $\\pi$-self-adjoint, «self_adjoint», real spectrum in $[«lo», «hi»]$, the Dirichlet form «dirichlet» — «iff» $A$ is reversible and $T$ an orthogonal involution (up to a global gauge)",
                predicate="sha_laplacian",
                params={
                    **T5_INTERVAL,
                    "self_adjoint": _F.SELF_ADJOINT,
                    "dirichlet": _F.DIRICHLET,
                    "laplacian": _FR.LAPLACIAN,
                    "walk_p": _FR.WALK_P,
                    "walk_o": _FR.WALK_O,
                },
                tolerance=SHA_LAPLACIAN_RULE,
                derivations=(
                    "T5::reversible A, T = I - 2 Pi_U: Delta pi-self-adjoint",
                    "T5::orthogonal + symmetric => involution",
                ),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T5.spectrum",
                "the spectrum of «laplacian», with algebraic multiplicities: for every eigenpair $(\\lambda, u)$ of $A$ and eigenvector $f$ of $T$, the vector with components $u_i f_a$ is an eigenvector — for $f$ in $\\operatorname{Fix}(T)$ «on_fix», and for $f$ reversed by $T$ «on_minus» (the left sides: its component $(i, a)$ under $\\Delta$)",
                predicate="t5_spectrum",
                params={"on_fix": _F.T5_ON_FIX, "on_minus": _F.T5_ON_MINUS, "laplacian": _FR.LAPLACIAN},
                tolerance=EIGEN_RULE,
                derivations=("T5::spec(I - kron(A,T))",),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T5.kernel",
                "«kernel_space» for irreducible $A$ (with «laplacian»): the section equal to a fixed vector $f$ of $T$ at every token is in the kernel (its component $(i, a)$ under $\\Delta$): «kernel», and the dimensions are equal",
                predicate="t5_kernel",
                params={"kernel": _FS.T5_KERNEL, "kernel_space": _FR.KERNEL_SPACE, "laplacian": _FR.LAPLACIAN},
                tolerance=T5_KERNEL_RULE,
                derivations=("T3::4. parallel section",),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T5.non_orthogonal",
                "a non-orthogonal involution has real spectrum in $[«lo», «hi»]$ but fails $\\pi$-self-adjointness and the Dirichlet form (T5.laplacian's formulas)",
                params=T5_INTERVAL,
                derivations=("T5::non-orthogonal involution",),
                tests=("tests/numerics/test_necessity.py::test_t5_non_orthogonal_involution_explicit",),
            ),
        ),
        derivation=_dv.derive_t5,
        lemmas=("L3", "L4"),
        symbolic_tests=(SYMBOLIC_TESTS, "tests/theory/test_witness_statements.py"),
        certificate_tests=(CERTIFICATE_TESTS,),
        numeric_tests=T3_NUMERIC_TESTS + ("tests/numerics/test_involution.py", "tests/numerics/test_statements.py"),
        necessity_tests=(NECESSITY_TESTS,),
    ),
    Theorem(
        id="T6",
        title="Pattern formation: linearisation and dispersion relation",
        kind="theorem",
        source=Source(SEED_B, CLAIM_PAT, "THEOREMS.md T6"),
        hypotheses=(
            Hypothesis(
                "T6.H1",
                "(H1) normalised",
                "each $A^h(X)$ is row-stochastic for all $X$: «heads»",
                predicate="heads_stochastic",
                params={"heads": _F.HEADS_STOCHASTIC},
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
                "base state $X$ (not necessarily an equilibrium) with every token in the same state $x^*$: «homogeneous»",
                predicate="homogeneous",
                params={"homogeneous": _FS.HOMOGENEOUS},
                witnesses=(
                    Witness(
                        "T6.H2.w1",
                        "inhomogeneous base state, the first token moved off $x^*$ (the other tokens stay there): «moved»: extra derivative terms",
                        derivation="T6::drop H2",
                        params={"moved": _FP.MOVED},
                    ),
                ),
            ),
            Hypothesis(
                "T6.H3",
                "(H3) circulant",
                "relative positional kernel on a ring (no absolute PE, no mask): «circulant»",
                predicate="circulant",
                params={"circulant": _FS.CIRCULANT},
                witnesses=(
                    Witness(
                        "T6.H3.w1",
                        "a non-circulant (absolute-position) attention on a ring, $A0 = «A0[0]»$, $T = «T[0]»$: Fourier modes are not eigenvectors",
                        fails=("T6.fourier",),
                        instance={
                            "kind": "ring",
                            "A0": [[["1/2", "1/2", 0], [0, "1/2", "1/2"], ["1/3", "1/3", "1/3"]]],
                            "T": [[[2]]],
                            "X": [[1], [1], [1]],
                        },
                    ),
                ),
            ),
        ),
        conclusions=(
            make_conclusion(
                "T6.jacobian",
                "(H1)+(H2): the Jacobian of the dynamics «dynamics» (with $A_{h,i,j}$ the entry $(i, j)$ of head $h$'s attention $A^h(X)$ at the state $X$ whose tokens are the $x_j$) at the base state is exactly $J$, entry $((i, c), (j, b))$ (token-major): «jacobian»",
                params={"dynamics": _FS.DYNAMICS, "jacobian": _FS.JACOBIAN},
                derivations=("T6::Jacobian at 1(x)x*",),
                tests=(
                    "tests/numerics/test_patterns.py::test_t6_jacobian_of_softmax_dynamics_equals_walk_minus_identity",
                ),
            ),
            make_conclusion(
                "T6.fourier",
                "(H3): for every wavenumber $k$, with «root», the Fourier mode $\\varphi_k$ tensored with any $v$ is an eigenvector of $J$ (T6.jacobian, token-major) up to the symbol $M(k)$ (T6.selection) of the kernels: «eigenpair»; entrywise (component $c$ of token $i$ of both sides): «fourier»",
                predicate="t6_fourier",
                params={"fourier": _F.FOURIER, "eigenpair": _FP.EIGENPAIR, "root": _FP.ROOT},
                tolerance=relative(_FT.RING),
                derivations=("T6::Fourier (ring=", "T6::Fourier with the reversed sign"),
                tests=(STATEMENT_TEST,),
            ),
            make_conclusion(
                "T6.selection",
                "with the symbol «symbol» ($M(k)$: the matrix $M$ at T6.fourier's $\\zeta$): selection «selection», growth «growth» (the eigenvalue of largest real part), and that real part is the largest real part of the spectrum of $J$ (T6.jacobian): «abscissa»; for real kernels and transports «conjugate», so the selection is the conjugate pair of $k^*$ (one real pattern); phase velocity «velocity»",
                predicate="t6_selection",
                params={
                    "symbol": _FS.SYMBOL,
                    "selection": _FP.SELECTION,
                    "growth": _FP.GROWTH,
                    "abscissa": _FP.ABSCISSA,
                    "conjugate": _FP.CONJUGATE,
                    "velocity": _FS.VELOCITY,
                },
                tolerance=SELECTION_RULE,
                derivations=("T6::Fourier (ring=",),
                tests=(STATEMENT_TEST, "tests/numerics/test_t6_emergence.py::test_emergence_follows_the_symbol"),
            ),
            make_conclusion(
                "T6.rotating",
                "rotating wave (one head whose transport $T$ is the rotation by $\\theta$ scaled by $\\rho$: the premises below): the vector $z$ below is an eigenvector of T6.fourier's shifted symbol with the eigenvalue $\\sigma_z(k)$ on the right: «rotating»",
                predicate="t6_rotating",
                params={"rotating": _FS.ROTATING},
                tolerance=relative(_FT.ROW),
                derivations=("T6::rotating wave",),
                tests=(STATEMENT_TEST,),
            ),
        ),
        derivation=_dv.derive_t6,
        lemmas=("L2",),
        notes=(
            "The symbol predicts onset only; on a line or with a causal mask the operator is non-normal (transient growth only).",
            T6_CONSTANT_MODE,
            Note(
                "Reference case Ex1 ($n = «n»$, wrapped Gaussian kernel centred at offset $«centre»$, width $«width|tex»$, $T = «T|tex»$): the symbol selects $k^* = «k_star»$ up to sign, $\\sigma = «sigma|tex»$ up to conjugation, $c = «velocity»$ (RK4 step $dt = «dt»$, perturbation $\\varepsilon = «perturbation»$, linear-window fit).",
                {**_cases.T6_EX1, "sigma": f"{_cases.T6_EX1['sigma_re']} + {_cases.T6_EX1['sigma_im']}*I"},
            ),
            Note(
                "Reference case Ex3 (a head per kernel, centred at offsets $«centres|tex»$, non-commuting transports $T_h = «T|tex»$): the symbol selects $k^* = «k_star»$ up to sign while a per-head guess gives $k = «k_naive»$; the simulation follows the symbol.",
                _cases.T6_EX3,
            ),
        ),
        symbolic_tests=(SYMBOLIC_TESTS,),
        certificate_tests=(CERTIFICATE_TESTS,),
        numeric_tests=(
            "tests/numerics/test_patterns.py",
            "tests/numerics/test_statements.py",
            "tests/numerics/test_t6_emergence.py",
            "tests/numerics/test_oracles.py",  # T6.H2's predicate on the instance's base state
        ),
        necessity_tests=("tests/numerics/test_patterns.py", NECESSITY_TESTS),
    ),
]
