"""The theorem registry: one object per theorem T1-T6, per lemma L1-L4 it needs, and per
empirical claim E1-E6 and LAP.

``THEOREMS`` (ordered: L1-L4, then T1-T6) is the single list everything reads: the pytest plugin
(``--theorem`` ids), ``python -m theory.render`` (THEOREMS.md) and the test-suite. Statements are
data (:mod:`theory.statements`): every hypothesis and conclusion has an id, its Markdown/LaTeX
text, an executable predicate of :mod:`theory.oracles` with its params and tolerance rule, and
links — conclusions name the derivation steps of :mod:`theory.derivations` that prove them and the
property tests that exercise them, hypotheses name their necessity witnesses. Every number a
statement carries (T3's interval, T2's Kronecker miss, T4's triangle coefficient, T5's spectra,
T6's Fourier sign and growth formula, T1's stacking) is a param: THEOREMS.md and the property
tests (``tests/numerics/test_statements.py``) read it from here. ``CLAIMS`` holds E1-E6 and LAP (statement,
statistic, null model, decision rule); adding a claim is adding one :class:`Claim` entry.

    >>> from theory.registry import get
    >>> get("T3").derive(n=3, d=2).passed
    True
    >>> get("T3").conclusion("T3.spectrum").params["hi"]
    2
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from . import cases as _cases
from . import derivations as _dv
from .errors import UnknownTheoremError, UnsupportedSizeError
from .statements import Claim, Conclusion, Hypothesis, Witness
from .symbolic import Derivation

SEED_A = "Seed A: *From Self-Attention to Connection Laplacian: A Unified Operator View of Transformers* (arXiv 2607.10677; seeds/000_5bdc14e69496fe14.txt, seeds/002_3d12162842770432.txt)"
SEED_B = "Seed B: *Pattern Formation in Transformers* (seeds/004_438af889239262c2.txt)"

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


@dataclass(frozen=True)
class Source:
    seed: str
    claim: str
    section: str


@dataclass(frozen=True)
class Theorem:
    id: str
    title: str
    kind: str  # "theorem" | "lemma"
    source: Source
    hypotheses: tuple[Hypothesis, ...]
    conclusions: tuple[Conclusion, ...]
    derivation: Callable[..., Derivation]
    lemmas: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    symbolic_tests: tuple[str, ...] = ()
    certificate_tests: tuple[str, ...] = ()
    numeric_tests: tuple[str, ...] = ()
    necessity_tests: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def supported_sizes(self) -> dict[str, tuple[int, int]]:
        """Size parameter -> inclusive (min, max) the symbolic derivation accepts."""
        return dict(_dv.SIZES.get(self.id, {}))

    @property
    def steps(self) -> tuple[tuple[str, ...], ...]:
        """The derivation's outline at its default sizes: ``(kind, step name[, detail])`` in order
        (:data:`theory.steps.STEPS`; kinds ``"zero"``, ``"witness"``, ``"numeric"``)."""
        from .steps import STEPS

        return STEPS.get(self.id, ())

    @property
    def default_sizes(self) -> dict[str, int]:
        sig = inspect.signature(self.derivation)
        return {k: p.default for k, p in sig.parameters.items() if k in self.supported_sizes}

    def derive(self, **sizes: int) -> Derivation:
        """Run the symbolic derivation (exact). Unknown size names or out-of-range sizes raise
        :class:`~theory.errors.UnsupportedSizeError` listing the supported ranges."""
        supported = self.supported_sizes
        for k, v in sizes.items():
            if k not in supported:
                raise UnsupportedSizeError(self.id, k, v, supported)
        return self.derivation(**sizes)

    def hypothesis(self, hid: str) -> Hypothesis:
        for h in self.hypotheses:
            if h.id == hid:
                return h
        raise KeyError(f"{self.id}: no hypothesis {hid!r}; known: {[h.id for h in self.hypotheses]}")

    def conclusion(self, cid: str) -> Conclusion:
        for c in self.conclusions:
            if c.id == cid:
                return c
        raise KeyError(f"{self.id}: no conclusion {cid!r}; known: {[c.id for c in self.conclusions]}")

    def without(self, hid: str) -> Theorem:
        """The statement with hypothesis ``hid`` removed (a statement mutant)."""
        self.hypothesis(hid)
        return replace(self, hypotheses=tuple(h for h in self.hypotheses if h.id != hid))

    def with_conclusion(self, c: Conclusion) -> Theorem:
        """The statement with the conclusion of the same id replaced by ``c``."""
        self.conclusion(c.id)
        return replace(self, conclusions=tuple(c if x.id == c.id else x for x in self.conclusions))

    @property
    def hypothesis_ids(self) -> frozenset[str]:
        return frozenset(h.id for h in self.hypotheses)


_SYM = "tests/theory/test_derivations.py"
_SYM_MUT = "tests/theory/test_derivations_mutants.py"  # the derivation helpers, judged by exact arithmetic
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


def _c(id, statement, *, derivations=(), tests=(), predicate=None, params=None, tolerance=""):
    return Conclusion(
        id=id,
        statement=statement,
        predicate=predicate,
        params=dict(params or {}),
        tolerance=tolerance,
        derivations=tuple(derivations),
        tests=tuple(tests),
    )


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
                "$A \\in \\mathbb{R}^{n\\times n}$, $T \\in \\mathbb{R}^{d\\times d}$, $X \\in \\mathbb{R}^{n\\times d}$ (row $i$ is $x_i^\\top$)",
                witnesses=(
                    Witness(
                        "L1.shapes.w1",
                        "mixing conventions: $\\operatorname{kron}(T, A)$ applied to the token-major $x$ is not $\\mathrm{stack}(A X T^\\top)$",
                        derivation="L1::mixing conventions is wrong",
                    ),
                ),
            ),
        ),
        conclusions=(
            _c(
                "L1.token_major",
                "$\\operatorname{vec}((A X T^\\top)^\\top) = (A \\otimes T)\\, \\operatorname{vec}(X^\\top)$ (token-major stacking, block $(i,j)$ of $A\\otimes T$ is $A_{ij} T$)",
                derivations=("L1::token-major",),
                tests=("tests/theory/test_derivations.py::test_stacking_lemma_other_sizes",),
            ),
            _c(
                "L1.feature_major",
                "$\\operatorname{vec}(A X T^\\top) = (T \\otimes A)\\, \\operatorname{vec}(X)$ (feature-major stacking)",
                derivations=("L1::feature-major",),
                tests=("tests/theory/test_derivations.py::test_stacking_lemma_other_sizes",),
            ),
        ),
        derivation=_dv.derive_l1,
        symbolic_tests=(_SYM,),
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
                "$A_{ij}(X) = e^{S_{ij}(X)} / \\sum_k e^{S_{ik}(X)}$ for differentiable scores $S$",
                witnesses=(
                    Witness(
                        "L2.softmax.w1",
                        "unnormalised (sigmoid) attention keeps the derivative terms",
                        derivation="T6::drop H1",
                    ),
                ),
            ),
        ),
        conclusions=(
            _c(
                "L2.rows",
                "$\\sum_j A_{ij} = 1$ and $\\sum_j \\partial A_{ij} / \\partial x_{ab} = 0$ for every $i, a, b$",
                derivations=("L2::rows sum to 1", "L2::sum_j d A_0j / d x_ab = 0"),
                tests=("tests/theory/test_derivations.py::test_l2_catches_unnormalised_attention",),
            ),
        ),
        derivation=_dv.derive_l2,
        symbolic_tests=(_SYM,),
    ),
    Theorem(
        id="L3",
        title="Dirichlet identity with a stochasticity correction",
        kind="lemma",
        source=Source("(lemma)", "general correction term $\\sum_i \\pi_i (1-r_i)|x_i|^2$", "THEOREMS.md T3"),
        hypotheses=(
            Hypothesis(
                "L3.balance",
                "detailed balance",
                "$\\pi_i P_{ij} = \\pi_j P_{ji}$ with $\\pi > 0$; row sums $r_i = \\sum_j P_{ij}$ arbitrary",
                witnesses=(
                    Witness(
                        "L3.balance.w1",
                        "directed 3-cycle: no inner product makes $\\Delta$ self-adjoint",
                        derivation="T3::drop (b) [directed 3-cycle",
                    ),
                ),
            ),
            Hypothesis(
                "L3.metric",
                "metric",
                "$O_{ij}$ orthogonal and $O_{ji} = O_{ij}^\\top$",
                witnesses=(
                    Witness(
                        "L3.metric.w1",
                        "scaled transports $O = sQ$ add $\\frac{1-s^2}{2}\\lVert x\\rVert_\\pi^2$",
                        derivation="T3::scaled O = sQ: the (1-s^2)/2 term is needed",
                    ),
                ),
            ),
        ),
        conclusions=(
            _c(
                "L3.identity",
                "$\\langle x, (I-W)x\\rangle_\\pi = \\tfrac12 \\sum_{ij} \\pi_i P_{ij} \\lVert x_i - O_{ij} x_j\\rVert^2 + \\sum_i \\pi_i (1 - r_i) \\lVert x_i \\rVert^2$",
                derivations=("L3::<x,(I-W)x>_pi = Dirichlet + sum_i pi_i (1-r_i)|x_i|^2",),
                tests=("tests/theory/test_derivations.py::test_derivation_reaches_exact_zero",),
            ),
        ),
        derivation=_dv.derive_l3,
        symbolic_tests=(_SYM,),
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
                "$A \\in \\mathbb{C}^{n\\times n}$, $T \\in \\mathbb{C}^{d\\times d}$ arbitrary",
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
            _c(
                "L4.resultant",
                "$\\det(zI - A\\otimes T) = \\operatorname{Res}_\\mu\\big(p_T(\\mu),\\, \\mu^n p_A(z/\\mu)\\big) = \\prod_{i,k} (z - \\lambda_i \\mu_k)$",
                derivations=("L4::charpoly(kron(A,T))",),
                tests=("tests/theory/test_derivations.py::test_derivation_reaches_exact_zero",),
            ),
        ),
        derivation=_dv.derive_l4,
        symbolic_tests=(_SYM,),
    ),
]

_ROT = [["3/5", "-4/5"], ["4/5", "3/5"]]  # a rational rotation (Cayley), not symmetric
_REFL = [[1, 0], [0, -1]]
_T2_CE = dict(_cases.T2_COUNTEREXAMPLE)

MAIN: list[Theorem] = [
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
                "$\\mathrm{SHA}(X) = A X T^\\top$, i.e. $y = (A \\otimes T) x$ (**«stacking»** stacking): the connection walk with $P = A$ and $O_{ij} \\equiv T$",
                predicate="t1_walk",
                params={"stacking": "token-major"},
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
                "$B_{ij} = \\sum_h A^h_{ij} T_h$, every $A^h$ row-stochastic (softmax: strictly positive)",
                predicate="heads_stochastic",
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
                "$P$ is row-stochastic, gates $g^h_{ij} = A^h_{ij} / \\sum_k A^k_{ij}$ are convex and $O_{ij} = H \\sum_h g^h_{ij} T_h$ gives $P_{ij} O_{ij} = B_{ij}$ exactly",
                predicate="t2_gated_walk",
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
        symbolic_tests=(_SYM, _SYM_MUT),
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
    Theorem(
        id="T3",
        title="When the generator is a random-walk connection Laplacian",
        kind="theorem",
        source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T3"),
        hypotheses=(
            Hypothesis(
                "T3.a",
                "(a) stochastic",
                "$\\sum_j P_{ij} = 1$",
                predicate="stochastic",
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
                "$\\pi_i P_{ij} = \\pi_j P_{ji}$ for some positive $\\pi$",
                predicate="reversible",
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
                "every $O_{ij}$ on the support is orthogonal",
                predicate="orthogonal",
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
                "$O_{ji} = O_{ij}^\\top$ on every edge",
                predicate="transpose_compatible",
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
                "$\\Delta = I - W = I - (\\operatorname{diag}\\pi \\otimes I)^{-1} W_{\\mathrm{sym}}$ with $W_{\\mathrm{sym}} = \\operatorname{block}(\\pi_i P_{ij} O_{ij})$ symmetric; $\\Delta$ is self-adjoint in $\\langle x,y\\rangle_\\pi = \\sum_i \\pi_i x_i^\\top y_i$",
                predicate="walk_self_adjoint",
                tolerance=_REL,
                derivations=("T3::1. Delta is pi-self-adjoint",),
                tests=(_STMT,),
            ),
            _c(
                "T3.spectrum",
                "spectrum real, in $[«lo», «hi»]$: $\\langle x,(2I-\\Delta)x\\rangle_\\pi = \\tfrac12\\sum_{ij}\\pi_i P_{ij}\\lVert x_i + O_{ij}x_j\\rVert^2$",
                predicate="walk_spectrum_interval",
                params={"lo": 0, "hi": 2},
                tolerance=_SPEC,
                derivations=("T3::2. <x,(2I-Delta)x>_pi",),
                tests=(_STMT,),
            ),
            _c(
                "T3.dirichlet",
                "Dirichlet form $\\langle x,\\Delta x\\rangle_\\pi = \\tfrac12 \\sum_{ij} \\pi_i P_{ij} \\lVert x_i - O_{ij} x_j\\rVert^2$",
                predicate="walk_dirichlet",
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
        symbolic_tests=(_SYM, _SYM_MUT),
        certificate_tests=(_CERT,),
        numeric_tests=_T3_NUMERIC
        + (
            "tests/numerics/test_spectra.py",
            "tests/numerics/test_statements.py",
            "tests/numerics/test_oracles.py",
            "tests/numerics/test_scale.py",
        ),
        necessity_tests=(_NEC,),
    ),
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
                "Kolmogorov triangle identity: $\\log\\frac{A_{ij}A_{jk}A_{ki}}{A_{ik}A_{kj}A_{ji}} = «sign|sign»\\frac{«coefficient»}{\\sqrt{d_k}} (x_j - x_i)^\\top M_a (x_k - x_i)$, $M_a = \\frac{M - M^\\top}{2}$",
                predicate="t4_triangle",
                params={"coefficient": 2, "sign": 1},
                tolerance=_REL,
                derivations=("T4::Kolmogorov triangle (0,1,2)",),
                tests=(_STMT,),
            ),
            _c(
                "T4.criterion",
                "$A$ is reversible iff $M_a$ vanishes on $\\operatorname{span}\\{x_j - x_1\\}$; symmetric $M$ suffices ($\\pi_i \\propto D_{ii}$, stationary), is not necessary (affinely collinear tokens; $n = 2$)",
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
                "$\\operatorname{spec}\\Delta = \\{1 «on_fix|+sign» \\lambda_i\\}$ on $\\operatorname{Fix}(T)$ $\\cup$ $\\{1 «on_minus|+sign» \\lambda_i\\}$ on the $-1$ eigenspace",
                predicate="t5_spectrum",
                params={"on_fix": -1, "on_minus": 1},
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
                "(H3): eigenpairs $\\varphi_k \\otimes v$, $\\varphi_k(j) = e^{2\\pi i k j / n}$, eigenvalues $\\operatorname{eig} M(k) - «shift»$, $M(k) = \\sum_h \\hat a_h(k) T_h$, $\\hat a(k) = \\sum_m a(m) e^{«hat_sign|+sign»2\\pi i k m / n}$",
                predicate="t6_fourier",
                params={"hat_sign": 1, "shift": 1},
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
        symbolic_tests=(_SYM, _SYM_MUT),
        certificate_tests=(_CERT,),
        numeric_tests=(
            "tests/numerics/test_patterns.py",
            "tests/numerics/test_statements.py",
            "tests/numerics/test_t6_emergence.py",
        ),
        necessity_tests=("tests/numerics/test_patterns.py", _NEC),
    ),
]

_E12_RULE = (
    "'reproduced' if the 95% bootstrap interval of the effect (trained − null) lies on the claim side of 0 "
    "(and, for late/early ratios, the trained interval below the reference 1); 'not reproduced' if it lies on "
    "the wrong side, or entirely within ±5% of |null|; otherwise 'inconclusive' (`paper_checks.inference.decide`)"
)
_NULL_RANDOM = (
    "`random:<same architecture>`: the same architecture at random initialisation (3 seeds), measured on "
    "the same prompts; nested bootstrap over seeds and prompts"
)

CLAIMS: list[Claim] = [
    Claim(
        "E1",
        "Attention graphs converge to stable geometric operators in deeper layers",
        "effective attention graphs converge to stable geometric operators in deeper layers",
        statistic=(
            "per layer, the change of the head-averaged attention operator between consecutive layers "
            "(plain and sink-aware variants) summarised as the late-third / early-third ratio, and the "
            "late-third mean of level statistics (`paper_checks.measure.E1_STATS`)"
        ),
        null_model=_NULL_RANDOM,
        decision_rule=_E12_RULE,
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_known_answers.py", "tests/paper_checks/test_inference.py"),
    ),
    Claim(
        "E2",
        "Learned transports self-organise into approximate scaled isometries",
        "learned transports self-organize into approximate scaled isometries",
        statistic=(
            "singular-value coefficient of variation of each head's $T_h$ and of $T_\\Sigma$, Procrustes defect "
            "$\\min_{s,Q}\\lVert T_\\Sigma - sQ\\rVert_F/\\lVert T_\\Sigma\\rVert_F$, data gain CV and the attention-weighted "
            "edge-transport defect (`paper_checks.measure.E2_STATS`); smaller supports the claim"
        ),
        null_model=_NULL_RANDOM + "; plus spectrum-matched and flat-subspace baselines",
        decision_rule=_E12_RULE,
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_known_answers.py", "tests/paper_checks/test_stats.py"),
    ),
    Claim(
        "E3",
        "E1 and E2 strengthen with scale",
        "E1 and E2 strengthen consistently with scale (paper: 124M → 8B; encoder and decoder)",
        statistic=(
            "for consecutive sizes of one architecture kind, the claim-oriented effect of the larger model minus "
            "that of the smaller one"
        ),
        null_model="each model's own random-initialisation null; the difference interval comes from independent draws",
        decision_rule=(
            "'reproduced' if the difference interval is > 0 and the larger model's own E1/E2 verdict is "
            "reproduced; 'not reproduced' if < 0; 'insufficient scale range' with fewer than two sizes; "
            "otherwise 'inconclusive' (`paper_checks.inference.decide_scale`)"
        ),
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_inference.py",),
    ),
    Claim(
        "E4",
        "The same holds for encoders and decoders",
        "E1 and E2 hold for encoders and decoders alike",
        statistic="the per-model E1/E2 verdicts, per statistic, for every encoder and every decoder",
        null_model="as E1/E2 (per model)",
        decision_rule=(
            "'reproduced' iff reproduced for every encoder and every decoder; 'not reproduced' if any model's "
            "verdict is 'not reproduced'; 'inconclusive' otherwise or when a kind is missing "
            "(`paper_checks.inference.decide_both`)"
        ),
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_inference.py",),
    ),
    Claim(
        "E5",
        "Each component controls which pattern is amplified",
        (
            "each component (positional encoding, multi-head attention, output-value geometry) controls which pattern is "
            "amplified, which stabilise, compete or coexist (clusters, stationary periodic, travelling waves, rotating waves, …)"
        ),
        statistic=(
            "agreement fraction between the linear prediction (symbol $M(k)$, T6) and the simulated onset pattern "
            "(coarse class and $|k|$) over a phase-diagram sweep, with a Wilson 95% interval; per component, the "
            "fraction of cell pairs differing only in that component whose observed pattern differs"
        ),
        null_model="the same fraction computed on the predictions (what the linear theory alone implies)",
        decision_rule=(
            "agreement: 'reproduced' if the Wilson interval lies above 0.8, 'not reproduced' if below; "
            "components: 'reproduced' if the interval lies above 0.1, 'not reproduced' if below; "
            "otherwise 'inconclusive'"
        ),
        module="paper_checks.e5_phase",
        source=SEED_B,
        tests=("tests/paper_checks/test_e5_phase.py",),
    ),
    Claim(
        "E6",
        "Task-aligned positional encoding and initialisation act as a dynamical prior",
        (
            "task-aligned positional encoding + weight initialisation act as a dynamical prior: better data efficiency and "
            "faster optimisation (controlled sequence tasks; ConViT-style attention on images)"
        ),
        statistic=(
            "paired differences between the aligned arm and each baseline arm: optimiser steps to a loss "
            "threshold and test accuracy at small data sizes (cyclic-shift task; GPSA on 8×8 digits)"
        ),
        null_model="baseline arms (absolute PE, zero relative bias, misaligned prior) sharing seeds and data with the aligned arm",
        decision_rule=(
            "per baseline: 'reproduced' if the 95% paired t-interval of the effect lies above 0, "
            "'not reproduced' if its upper end is ≤ 0, 'inconclusive' otherwise"
        ),
        module="paper_checks.e6_prior",
        source=SEED_B,
        tests=("tests/paper_checks/test_e6_prior.py",),
    ),
    # LAP (issue 13): the T3 hypotheses measured on real layers; added by the LAP check's branch
    Claim(
        "LAP",
        "Real attention layers and the Laplacian-reduction hypotheses",
        (
            "trained attention layers are closer to a random-walk connection Laplacian (T3: (a) stochastic, "
            "(b) reversible, (c) metric-compatible) than a random initialisation of the same architecture; and how "
            "far each layer is from a walk that satisfies the hypotheses"
        ),
        statistic=(
            "per layer and prompt, on the layer's real input $x$, with $P = \\frac1H\\sum_h A^h$, "
            "$O_{ij} = \\sum_h (A^h_{ij}/P_{ij}) T_h$, $\\pi$ stationary: each hypothesis's defect — "
            "$\\max_i|\\sum_j P_{ij} - 1|$; $\\lVert F - F^\\top\\rVert_F/\\lVert F + F^\\top\\rVert_F$, "
            "$F = \\operatorname{diag}(\\pi)P$; the same for the blocks $\\hat\\pi_i B_{ij}$ vs "
            "$\\hat\\pi_j B_{ji}^\\top$ ($\\hat\\pi$ from the block norms); the $P$-weighted transpose "
            "asymmetry $\\lVert O_{ij} - O_{ji}^\\top\\rVert/\\lVert O_{ij} + O_{ji}^\\top\\rVert$, "
            "orthogonality defect $\\lVert O_{ij}^\\top O_{ij} - I\\rVert_F/\\sqrt d$ and scaled-isometry "
            "defect (CV of all $d$ squared singular values of $O_{ij}$) — and each conclusion's status: "
            "$\\lVert \\Pi W - W^\\top \\Pi\\rVert_F/\\lVert \\Pi W + W^\\top \\Pi\\rVert_F$, the Dirichlet "
            "identity on $x$ ($|a - b|/(a + b)$, $a - b = \\langle x, \\Delta x\\rangle_\\pi - \\tfrac12\\sum_{ij} "
            "\\pi_i P_{ij}\\lVert x_i - O_{ij}x_j\\rVert^2$) and the spectral radius $\\rho(W)$ (T3.2 implies "
            "$\\rho(W) \\le 1$); distances $\\lVert Wx - W'x\\rVert/\\lVert Wx\\rVert$ to "
            "$W_{\\mathrm{rev}} = \\Pi''^{-1}\\tfrac12(\\Pi W + W^\\top\\Pi)$, $\\pi'' = \\tfrac12(\\pi \\odot r + "
            "P^\\top\\pi)$ (stochastic, reversible w.r.t. $\\pi''$, $O''_{ji} = O''^\\top_{ij}$; for stationary "
            "$\\pi$ the nearest $\\pi$-self-adjoint operator in the Hilbert–Schmidt norm of "
            "$\\ell^2(\\pi)\\otimes\\mathbb R^d$) and to the best $P''\\otimes sQ$ over orthogonal involutions "
            "$Q = Q^\\top = Q^{-1}$, $s \\ge 0$ (closed form $Q^* = U\\operatorname{sign}(\\Lambda)U^\\top$ from "
            "$\\operatorname{sym}(Z^\\top Y) = U\\Lambda U^\\top$, $Z = P''X$, $Y = WX$, $s^* = \\sum|\\lambda|/\\lVert Z\\rVert_F^2$: "
            "a T5 connection Laplacian, so an upper bound on the distance to all scaled connection Laplacians); "
            "mean over layers; causal walks have no positive $\\pi$ (T4): $\\pi$-dependent defects undefined, "
            "the distances use the PageRank law (`paper_checks.laplacian_stats`)"
        ),
        null_model=_NULL_RANDOM,
        decision_rule=(
            "direction: smaller = closer to a connection Laplacian; 'reproduced' if the 95% bootstrap "
            "interval of the effect (trained − null) lies below 0; 'not reproduced' if above 0 or entirely "
            "within ±5% of |null|; otherwise 'inconclusive' (`paper_checks.inference.decide`); separately a "
            "status per statistic: 'holds' iff the trained interval lies at or below tol(float32, n) (the "
            "model computes softmax in float32; $\\rho(W)$ against $1 + $ tol)"
        ),
        module="paper_checks.laplacian_check",
        source=SEED_A,
        tests=("tests/paper_checks/test_laplacian_check.py",),
    ),
]

#: every registered statement, lemmas first (they are used by the theorems)
THEOREMS: list[Theorem] = LEMMAS + MAIN
_BY_ID = {t.id: t for t in THEOREMS}
_CLAIMS_BY_ID = {c.id: c for c in CLAIMS}


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
