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
(:mod:`theory.derivations_general`) read it from here. ``CLAIMS`` holds E1-E6 and LAP (statement,
statistic, null model, decision rule); adding a claim is adding one :class:`Claim` entry.

One idea per file: :mod:`theory.theorem` (the :class:`Theorem` record), :mod:`theory.registry_common`
(seed papers, test paths, shared wordings), the entries :mod:`theory.registry_lemmas` (L1-L4),
:mod:`theory.registry_walks` (T1, T2), T3 here, :mod:`theory.registry_spectral` (T4-T6) and
:mod:`theory.registry_claims` (E1-E6, LAP); this module assembles them and looks them up.

    >>> from theory.registry import get
    >>> get("T3").derive(n=3, d=2).passed
    True
    >>> get("T3").conclusion("T3.spectrum").params["hi"]
    2
"""

from __future__ import annotations

from dataclasses import replace as _replace

from . import cases as _cases
from . import derivations as _dv
from . import derivations_general as _gen
from . import formulas as _F
from .errors import UnknownTheoremError
from .registry_claims import CLAIMS
from .registry_common import _CERT, _CLAIM_LAP, _NEC, _REL, _ROT, _SPEC, _STMT, _SYM, _T3_NUMERIC, SEED_A, _c
from .registry_lemmas import LEMMAS
from .registry_spectral import SPECTRAL_THEOREMS
from .registry_walks import WALK_THEOREMS
from .statements import Claim, Conclusion, Hypothesis, Witness
from .theorem import Source, Theorem

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

#: the conventions every statement, derivation and test uses (rendered first in THEOREMS.md)
CONVENTIONS: tuple[str, ...] = (
    "Tokens $x_1, \\dots, x_n \\in \\mathbb{R}^d$ are the rows of $X \\in \\mathbb{R}^{n\\times d}$: a vector field on the token-position graph.",
    "Stacking is **token-major**: $x = \\operatorname{vec}(X^\\top)$ (`X.reshape(-1)`); block $(i,j)$ of an $nd\\times nd$ operator is rows $id{:}(i+1)d$, columns $jd{:}(j+1)d$. Feature-major stacking $\\operatorname{vec}(X)$ turns $A\\otimes T$ into $T\\otimes A$; mixing the two is the classic silent bug.",
    "A **connection walk** is $(Wx)_i = \\sum_j P_{ij} O_{ij} x_j$ with $P \\ge 0$ (walk matrix) and transports $O_{ij} \\in \\mathbb{R}^{d\\times d}$; its block $(i,j)$ is $P_{ij} O_{ij}$; the generator is $\\Delta = I - W$.",
    "Transports act on **column vectors**. With torch `nn.Linear` weights (out $\\times$ in) the single-head transport is $T = W_O W_V$ ($W_V$: $d_h\\times d$, $W_O$: $d\\times d_h$); in row-vector code $Y = A X W_v W_o$ the transport is $T = (W_v W_o)^\\top$.",
    "Attention $A = A(X)$: every identity is a factorisation $Y = W(X) X$, not linearity in $X$.",
    "Biases: with row-stochastic $A$, value and output biases give the token-independent offset $c = W_O b_V + b_O$: $y_i = \\sum_j A_{ij} T x_j + c$.",
    "Multi-head attention: $B_{ij} = \\sum_h A^h_{ij} T_h$, $P = \\frac1H\\sum_h A^h$, gates $g^h_{ij} = A^h_{ij}/\\sum_k A^k_{ij}$, $O_{ij} = H\\sum_h g^h_{ij} T_h$.",
    "Inner product $\\langle x, y\\rangle_\\pi = \\sum_i \\pi_i x_i^\\top y_i$; Fourier modes on a ring of $n$ tokens $\\varphi_k(j) = e^{2\\pi i k j/n}$.",
)


# T3 lives here, in the registry's own file (the gate's "edit T3's bound in theory/registry.py" check);
# L1-L4, T1-T2, T4-T6 and E1-E6/LAP are in theory/registry_{lemmas,walks,spectral,claims}.py.
T3: Theorem = Theorem(
    id="T3",
    title="When the generator is a random-walk connection Laplacian",
    kind="theorem",
    source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T3"),
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
                    "$P=[[0,2],[2,0]]$, $O=1$, $\\pi = (\\frac12,\\frac12)$: spec $\\{-1,3\\}$; at $x=(1,1)$ $\\langle x,\\Delta x\\rangle_\\pi = -1$ vs Dirichlet $0$ (correction $\\sum_i\\pi_i(1-r_i)|x_i|^2 = -1$)",
                    fails=("T3.spectrum", "T3.dirichlet"),
                    instance={
                        "kind": "walk",
                        "P": [[0, 2], [2, 0]],
                        "O": [[[[1]], [[1]]], [[[1]], [[1]]]],
                        "pi": ["1/2", "1/2"],
                    },
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
                    "directed 3-cycle, $O=1$: spec $\\{0, \\frac32 \\pm \\frac{\\sqrt3}{2} i\\}$, self-adjoint in no inner product",
                    fails=("T3.self_adjoint", "T3.spectrum"),
                    instance={"kind": "walk", "P": [[0, 1, 0], [0, 0, 1], [1, 0, 0]], "O": [[[[1]]] * 3] * 3},
                    derivation="T3::drop (b) [directed 3-cycle",
                ),
            ),
        ),
        Hypothesis(
            "T3.c1",
            "(c1) orthogonal",
            "every $O_{ij}$ on the support ($P_{ij} \\ne 0$) is orthogonal: «orthogonal»",
            predicate="orthogonal",
            params={"orthogonal": _F.ORTHOGONAL},
            witnesses=(
                Witness(
                    "T3.c1.w1",
                    "swap walk, $O_{12} = O_{21} = 2$: spec $\\{-1, 3\\}$",
                    fails=("T3.spectrum",),
                    instance={"kind": "walk", "P": [[0, 1], [1, 0]], "O": [[[[0]], [[2]]], [[[2]], [[0]]]]},
                    derivation="T3::drop orthogonality [swap, O=2]",
                ),
                Witness(
                    "T3.c1.w2",
                    "keep $O_{ji} = O_{ij}^{-1}$ only (3-cycle, weights $\\frac12$, $O_{12}=[[1,\\frac32],[0,1]]$, $O_{23}=I$, $O_{31}=\\operatorname{diag}(2,\\frac12)$): a negative eigenvalue $\\approx "
                    + str(_cases.T3_INVERSE_TRANSPORTS["negative_eigenvalue"])
                    + "$ and a complex pair",
                    derivation="T3::drop orthogonality keep O_ji=O_ij^-1 [3-cycle]: one negative real eigenvalue",
                ),
            ),
        ),
        Hypothesis(
            "T3.c2",
            "(c2) transpose-compatible",
            "transpose-compatible on every two-way edge: «transpose»",
            predicate="transpose_compatible",
            params={"transpose": _F.TRANSPOSE},
            witnesses=(
                Witness(
                    "T3.c2.w1",
                    "swap walk, $O_{12} = O_{21} = R$ a rotation ($R = [[\\frac35,-\\frac45],[\\frac45,\\frac35]]$ here, $R(\\pi/3)$ in the derivation): complex spectrum",
                    fails=("T3.self_adjoint", "T3.spectrum"),
                    instance={
                        "kind": "walk",
                        "P": [[0, 1], [1, 0]],
                        "O": [[[[0, 0], [0, 0]], _ROT], [_ROT, [[0, 0], [0, 0]]]],
                    },
                    derivation="T3::drop O_ji=O_ij^T [swap",
                ),
            ),
        ),
    ),
    conclusions=(
        _c(
            "T3.self_adjoint",
            "$\\Delta = I - W = I - (\\operatorname{diag}\\pi \\otimes I)^{-1} W_{\\mathrm{sym}}$ with $W_{\\mathrm{sym}} = \\operatorname{block}(\\pi_i P_{ij} O_{ij})$ symmetric; $\\Delta$ is self-adjoint in $\\langle x,y\\rangle_\\pi = \\sum_i \\pi_i x_i^\\top y_i$, entrywise: «self_adjoint»",
            predicate="walk_self_adjoint",
            params={"self_adjoint": _F.SELF_ADJOINT},
            tolerance=_REL,
            derivations=("T3::1. Delta is pi-self-adjoint",),
            tests=(_STMT,),
        ),
        _c(
            "T3.spectrum",
            "spectrum real, in $[«lo», «hi»]$: with the Dirichlet form, $\\langle x,(2I-\\Delta)x\\rangle_\\pi$ is a sum of squares, entrywise: «upper_form»",
            predicate="walk_spectrum_interval",
            params={"lo": 0, "hi": 2, "upper_form": _F.UPPER_FORM},
            tolerance=_SPEC,
            derivations=("T3::2. <x,(2I-Delta)x>_pi",),
            tests=(_STMT,),
        ),
        _c(
            "T3.dirichlet",
            "Dirichlet form $\\langle x,\\Delta x\\rangle_\\pi$ entrywise ($x_{i,a}$: component $a$ of token $i$, $O_{i,j,a,b}$: entry $(a,b)$ of $O_{ij}$): «dirichlet»",
            predicate="walk_dirichlet",
            params={"dirichlet": _F.DIRICHLET},
            tolerance=_REL,
            derivations=("T3::3. Dirichlet",),
            tests=(_STMT,),
        ),
        _c(
            "T3.kernel",
            "kernel = parallel sections ($x_i = O_{ij} x_j$ on every edge)",
            predicate="walk_kernel_parallel",
            tolerance="null spaces by SVD at threshold 1e-9·‖·‖₂; equal dimension and ‖Δ Z‖, ‖C K‖ ≤ 1e-7",
            derivations=("T3::4. parallel section",),
            tests=(_STMT,),
        ),
        _c(
            "T3.flat",
            "flat connection $O_{ij} = R_i R_j^\\top$: $\\Delta = R((I-P)\\otimes I_d)R^\\top$, $\\dim\\ker\\Delta = «kernel_dim_per_d»\\,d$ ($P$ irreducible)",
            predicate="walk_flat",
            params={"kernel_dim_per_d": 1},
            tolerance=_REL + "; rank threshold 1e-9",
            derivations=("T3::5. flat connection",),
            tests=(_STMT,),
        ),
        _c(
            "T3.scaled",
            "scaled isometries $O_{ij} = s Q_{ij}$: the Dirichlet form gains $+\\frac{1-s^2}{2}\\lVert x\\rVert_\\pi^2$; $\\operatorname{spec}\\Delta \\subset [1-s, 1+s]$",
            predicate="walk_scaled",
            tolerance=_SPEC,
            derivations=("T3::scaled O = sQ: <x,Delta x>_pi",),
            tests=(_STMT,),
        ),
    ),
    derivation=_dv.derive_t3,
    lemmas=("L3",),
    notes=(
        "Weaker: the Dirichlet form and the kernel need only (a), orthogonal $O$ and a stationary $\\pi > 0$; then spec lies in the disk $|z-1| \\le 1$. Without a positive stationary $\\pi$ the kernel statement fails: $P=[[1,0],[.5,.5]]$, $d=1$, $O_{22}=-1$.",
        "Gauge-free form on $B$: $B_{ij} = p_{ij} Q_{ij}$, $Q_{ij}$ orthogonal, $\\sum_j p_{ij} = 1$, $\\pi_i B_{ij} = \\pi_j B_{ji}^\\top$; balanced norms $\\pi_i\\lVert B_{ij}\\rVert = \\pi_j\\lVert B_{ji}\\rVert$ are not enough (the transports must match).",
    ),
    symbolic_tests=(_SYM,),
    certificate_tests=(_CERT,),
    numeric_tests=_T3_NUMERIC
    + (
        "tests/numerics/test_spectra.py",
        "tests/numerics/test_statements.py",
        "tests/numerics/test_oracles.py",
        "tests/numerics/test_scale.py",
    ),
    necessity_tests=(_NEC,),
)

#: how far each conclusion's symbolic proof reaches, and the steps of the derivation for symbolic
#: sizes (theory/derivations_general.py) that prove it. ``{sized}``: the exact SymPy derivation at
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
    "L2.rows": ("{sized}", ()),
    "L3.identity": ("all n, d", ("general: <x,(I-W)x>_pi",)),
    "L4.resultant": ("{sized}", ()),
    "T1.walk": ("all n, d", ("general: vec(SHA(X)^T)", "general: block (i, j)")),
    "T1.spectrum": ("via L4: n = 1..3, d = 1..2 (sized); otherwise checked numerically only", ()),
    "T2.walk": ("all n, d, H (heads distinct by construction)", _GENERAL_T2),
    "T2.gauge": ("{sized}", ()),
    "T2.constant": ("{sized}", ()),
    "T2.special": ("{sized}", ()),
    "T2.counterexample": ("exact, the stated instance (n = d = H = 2)", ()),
    "T3.self_adjoint": ("all n, d", ("general: <x, Delta y>_pi",)),
    "T3.spectrum": (
        "the identity: all n, d; the interval itself (Rayleigh-quotient argument, not in SymPy): checked numerically only",
        ("general: <x,(2I-Delta)x>_pi",),
    ),
    "T3.dirichlet": ("all n, d", ("general: Dirichlet identity",)),
    "T3.kernel": ("{sized}", ()),
    "T3.flat": ("{sized}", ()),
    "T3.scaled": ("{sized}", ()),
    "T4.triangle": ("all n, d", ("general: Kolmogorov triangle",)),
    "T4.criterion": (
        "'if' (symmetric scores): all n, d; 'only if' (Kolmogorov cycles, not in SymPy): n = 3 and checked numerically",
        (
            "general: symmetric M",
            "general: symmetric scores => detailed balance",
            "general: symmetric scores => stationary",
        ),
    ),
    "T4.query_bias": ("{sized}", ()),
    "T4.causal": ("{sized}", ()),
    "T5.laplacian": ("{sized}", ()),
    "T5.spectrum": (
        "the eigenvectors u ⊗ f and their eigenvalues: all n, d; completeness with multiplicities: {sized} (generic A)",
        ("general: on Fix(T)", "general: on the -1 space"),
    ),
    "T5.kernel": (
        "parallel sections lie in the kernel: sized (T3's derivation); equal dimensions: checked numerically only",
        (),
    ),
    "T5.non_orthogonal": ("{sized}", ()),
    "T6.jacobian": ("{sized}", ()),
    "T6.fourier": (
        "every ring size n, all d, H (heads distinct by construction)",
        ("general: heads' scores", "general: heads' transports", "general: J(phi_k (x) v)"),
    ),
    "T6.selection": (
        "checked numerically only (the Fourier block-diagonalisation it rests on is T6.fourier's)",
        (),
    ),
    "T6.rotating": ("exact (d = 2, every angle and radius)", ()),
}


#: formulas a conclusion renders and its derivation for symbolic sizes proves, but its predicate does
#: not evaluate (the predicate checks the matrix / spectral form directly); THEOREMS.md says so
NOT_EVALUATED: dict[str, tuple[str, str]] = {
    "T3.self_adjoint": ("self_adjoint", "it checks that (diag π ⊗ I)Δ is symmetric"),
    "T3.spectrum": ("upper_form", "it checks the eigenvalues of Δ"),
}


def _sized(t: Theorem) -> str:
    sizes = ", ".join(f"{k} = {lo}" if lo == hi else f"{k} = {lo}..{hi}" for k, (lo, hi) in t.supported_sizes.items())
    return f"sized: exact SymPy at {sizes}"


#: tests of the statement itself, for every entry: the rendering (THEOREMS.md), the registry's links
#: and, where the entry has one, the derivation for symbolic sizes
_STATEMENT_TESTS = ("tests/theory/test_render.py", "tests/theory/test_registry_links.py")
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


#: tests inside a linked file that are about resources, not the statement (left out of `--theorem`)
UNLINKED: frozenset[str] = frozenset(
    {"tests/numerics/test_diagnose_dense.py::test_diagnose_size_limits_default_to_1024"}
)


def _scoped(t: Theorem) -> Theorem:
    cons = []
    for c in t.conclusions:
        scope, general = SCOPES[c.id]
        cons.append(_replace(c, scope=scope.replace("{sized}", _sized(t)), general=general))
    general_fn = _gen.GENERAL.get(t.id)
    extra_sym = _STATEMENT_TESTS + (_GENERAL_TESTS if general_fn is not None else ())
    return _replace(
        t,
        conclusions=tuple(cons),
        general=general_fn,
        symbolic_tests=t.symbolic_tests + tuple(p for p in extra_sym if p not in t.symbolic_tests),
        numeric_tests=t.numeric_tests
        + tuple(p for p in IMPLEMENTATION_TESTS.get(t.id, ()) if p not in t.numeric_tests),
    )


MAIN: list[Theorem] = [_scoped(t) for t in (*WALK_THEOREMS, T3, *SPECTRAL_THEOREMS)]
LEMMAS = [_scoped(t) for t in LEMMAS]

#: every registered statement, lemmas first (they are used by the theorems)
THEOREMS: list[Theorem] = LEMMAS + MAIN
_BY_ID = {t.id: t for t in THEOREMS}
_CLAIMS_BY_ID = {c.id: c for c in CLAIMS}


def linked_tests() -> dict[str, set[str]]:
    """Test path (a file, or ``file::test``) -> the ids whose registry entry links it: every test
    whose failure reveals a wrong statement or implementation of X (the pytest plugin tags them
    with X, so ``pytest --theorem X`` runs them all; :data:`UNLINKED` tests are left out)."""
    out: dict[str, set[str]] = {}
    for t in THEOREMS:
        paths = [*t.symbolic_tests, *t.certificate_tests, *t.numeric_tests, *t.necessity_tests]
        paths += [p for c in t.conclusions for p in c.tests]
        for p in paths:
            out.setdefault(p, set()).add(t.id)
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
