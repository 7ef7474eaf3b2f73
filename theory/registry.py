"""The theorem registry: one object per theorem T1-T6 and per lemma L1-L4 it needs.

``THEOREMS`` (ordered: L1-L4, then T1-T6) is the single list everything reads: the pytest plugin
(``--theorem`` ids), ``python -m theory.render`` (THEOREMS.md) and the test-suite. Each entry has its
id, title, source (seed + claim), named hypotheses, conclusions, the symbolic derivation (a callable
returning a :class:`~theory.symbolic.Derivation`) with its supported sizes, and the paths of its
symbolic, exact-certificate, numeric property and necessity tests. Statements are written once in
Markdown with ``$...$`` LaTeX math and rendered to Markdown or LaTeX.

    >>> from theory.registry import THEOREMS, get
    >>> get("T3").derive(n=3, d=2).passed
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import derivations as _dv
from .errors import UnknownTheoremError
from .symbolic import Derivation

SEED_A = "Seed A: *From Self-Attention to Connection Laplacian: A Unified Operator View of Transformers* (arXiv 2607.10677; seeds/000_5bdc14e69496fe14.txt, seeds/002_3d12162842770432.txt)"
SEED_B = "Seed B: *Pattern Formation in Transformers* (seeds/004_438af889239262c2.txt)"
THEORY_MD = "THEOREMS.md"


@dataclass(frozen=True)
class Hypothesis:
    """A named hypothesis: ``name`` (short handle, e.g. ``"(b) reversible"``) and ``statement``
    (Markdown with ``$...$`` math)."""

    name: str
    statement: str


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
    conclusions: tuple[str, ...]
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
    def default_sizes(self) -> dict[str, int]:
        import inspect

        sig = inspect.signature(self.derivation)
        return {k: p.default for k, p in sig.parameters.items() if k in self.supported_sizes}

    def derive(self, **sizes: int) -> Derivation:
        """Run the symbolic derivation (exact). Unknown size names or out-of-range sizes raise
        :class:`~theory.errors.UnsupportedSizeError` listing the supported ranges."""
        from .errors import UnsupportedSizeError

        supported = self.supported_sizes
        for k, v in sizes.items():
            if k not in supported:
                raise UnsupportedSizeError(self.id, k, v, supported)
        return self.derivation(**sizes)

    def to_markdown(self) -> str:
        from .render import theorem_markdown

        return theorem_markdown(self)

    def to_latex(self) -> str:
        from .render import theorem_latex

        return theorem_latex(self)


_SYM = "tests/theory/test_derivations.py"
_CERT = "tests/theory/test_certificates.py"
_CLAIM_SHA = "single-head attention (SHA) is exactly a connection propagation step with constant transport"
_CLAIM_MHA = ("multi-head attention (MHA) is exactly a single edge-dependent connection walk whose effective "
              "transport is an attention-gated mixture of headwise transports")
_CLAIM_LAP = ("we further clarify the conditions under which the corresponding generator reduces to a random-walk "
              "connection Laplacian, highlighting the roles of stochasticity, reversibility, and metric-compatible transports")
_CLAIM_PAT = ("the full Transformer architecture imposes inductive priors by selectively amplifying a rich set of "
              "patterns (travelling waves, rotating waves, ...); the role of positional encoding, multi-head attention "
              "and output-value geometry in which pattern is amplified")

_T3_NUMERIC = ("tests/numerics/test_laplacian.py", "tests/numerics/test_reversibility.py", "tests/numerics/test_graphs.py")
_T3_NECESSITY = ("tests/numerics/test_necessity.py",)

LEMMAS: list[Theorem] = [
    Theorem(
        id="L1", title="Token-major stacking of a bilinear token map", kind="lemma",
        source=Source("(convention)", "token-major stacking; mixing conventions is the classic silent bug", "THEOREMS.md (Conventions)"),
        hypotheses=(Hypothesis("shapes", "$A \\in \\mathbb{R}^{n\\times n}$, $T \\in \\mathbb{R}^{d\\times d}$, $X \\in \\mathbb{R}^{n\\times d}$ (row $i$ is $x_i^\\top$)"),),
        conclusions=(
            "$\\operatorname{vec}((A X T^\\top)^\\top) = (A \\otimes T)\\, \\operatorname{vec}(X^\\top)$ (token-major stacking, block $(i,j)$ of $A\\otimes T$ is $A_{ij} T$)",
            "$\\operatorname{vec}(A X T^\\top) = (T \\otimes A)\\, \\operatorname{vec}(X)$ (feature-major stacking)",
        ),
        derivation=_dv.derive_l1, symbolic_tests=(_SYM,),
    ),
    Theorem(
        id="L2", title="Softmax rows: normalisation kills the derivative", kind="lemma",
        source=Source("(lemma)", "the softmax-derivative terms cancel because rows of dA sum to 0", "THEOREMS.md T6"),
        hypotheses=(Hypothesis("softmax", "$A_{ij}(X) = e^{S_{ij}(X)} / \\sum_k e^{S_{ik}(X)}$ for differentiable scores $S$"),),
        conclusions=("$\\sum_j A_{ij} = 1$ and $\\sum_j \\partial A_{ij} / \\partial x_{ab} = 0$ for every $i, a, b$",),
        derivation=_dv.derive_l2, symbolic_tests=(_SYM,),
    ),
    Theorem(
        id="L3", title="Dirichlet identity with a stochasticity correction", kind="lemma",
        source=Source("(lemma)", "general correction term $\\sum_i \\pi_i (1-r_i)|x_i|^2$", "THEOREMS.md T3"),
        hypotheses=(
            Hypothesis("detailed balance", "$\\pi_i P_{ij} = \\pi_j P_{ji}$ with $\\pi > 0$; row sums $r_i = \\sum_j P_{ij}$ arbitrary"),
            Hypothesis("metric", "$O_{ij}$ orthogonal and $O_{ji} = O_{ij}^\\top$"),
        ),
        conclusions=("$\\langle x, (I-W)x\\rangle_\\pi = \\tfrac12 \\sum_{ij} \\pi_i P_{ij} \\lVert x_i - O_{ij} x_j\\rVert^2 + \\sum_i \\pi_i (1 - r_i) \\lVert x_i \\rVert^2$",),
        derivation=_dv.derive_l3, symbolic_tests=(_SYM,),
    ),
    Theorem(
        id="L4", title="Spectrum of a Kronecker product", kind="lemma",
        source=Source("(lemma)", "spectrum of kron(A,T) = products of eigenvalues with algebraic multiplicities", "THEOREMS.md T1"),
        hypotheses=(Hypothesis("square", "$A \\in \\mathbb{C}^{n\\times n}$, $T \\in \\mathbb{C}^{d\\times d}$ arbitrary"),),
        conclusions=("$\\det(zI - A\\otimes T) = \\operatorname{Res}_\\mu\\big(p_T(\\mu),\\, \\mu^n p_A(z/\\mu)\\big) = \\prod_{i,k} (z - \\lambda_i \\mu_k)$",),
        derivation=_dv.derive_l4, symbolic_tests=(_SYM,),
    ),
]

MAIN: list[Theorem] = [
    Theorem(
        id="T1", title="Single-head attention is a constant-transport connection walk", kind="theorem",
        source=Source(SEED_A, _CLAIM_SHA, "THEOREMS.md T1"),
        hypotheses=(
            Hypothesis("factorisation", "$A = A(X)$ is treated as given: the identity is a factorisation $Y = W(X) X$, not linearity in $X$"),
            Hypothesis("transport", "$T = W_O W_V$ (torch `nn.Linear` layout, column vectors)"),
        ),
        conclusions=(
            "$\\mathrm{SHA}(X) = A X T^\\top$, i.e. $y = (A \\otimes T) x$ (token-major): the connection walk with $P = A$ and $O_{ij} \\equiv T$",
            "$\\operatorname{spec}(A\\otimes T) = \\{\\lambda_i(A) \\mu_k(T)\\}$ with algebraic multiplicities (any square $A$, $T$)",
        ),
        derivation=_dv.derive_t1, lemmas=("L1", "L4"),
        symbolic_tests=(_SYM,), certificate_tests=(_CERT,),
        numeric_tests=("tests/numerics/test_walk_t1.py", "tests/numerics/test_attention.py", "tests/numerics/test_scale.py"),
        necessity_tests=("tests/numerics/test_walk_t1.py",),
    ),
    Theorem(
        id="T2", title="Multi-head attention is one edge-dependent connection walk", kind="theorem",
        source=Source(SEED_A, _CLAIM_MHA, "THEOREMS.md T2"),
        hypotheses=(
            Hypothesis("heads", "$B_{ij} = \\sum_h A^h_{ij} T_h$, every $A^h$ row-stochastic (softmax: strictly positive)"),
            Hypothesis("convention", "$P = \\frac1H \\sum_h A^h$ (a gauge choice)"),
        ),
        conclusions=(
            "gates $g^h_{ij} = A^h_{ij} / \\sum_k A^k_{ij}$ are convex and $O_{ij} = H \\sum_h g^h_{ij} T_h$ gives $P_{ij} O_{ij} = B_{ij}$ exactly",
            "gauge: any row-stochastic $P'$ with $P'_{ij} > 0$ wherever $B_{ij} \\neq 0$ works with $O'_{ij} = B_{ij} / P'_{ij}$",
            "constant transport iff every $B_{ij}$ is a nonnegative multiple of $T_\\Sigma = \\sum_h T_h$; with linearly independent $T_h$ iff $A^1 = \\dots = A^H$",
            "shared $A$ gives $O = T_\\Sigma$; shared $T$ gives $O = H T$; cancelling heads ($T_2 = -T_1$, $A^1 = A^2$) give $B = 0$ while $P > 0$",
            "counterexample ($n=d=H=2$, $A^1 = [[.9,.1],[.2,.8]]$, $A^2 = \\frac12 \\mathbf{1}\\mathbf{1}^\\top$, $T_1 = I$, $T_2 = J$): $B_{11}$, $B_{12}$ linearly independent; nearest Kronecker product misses by $0.662$",
        ),
        derivation=_dv.derive_t2, lemmas=("L1",),
        notes=("GQA: query head $h$ reads kv head $h // (H/H_{kv})$; $\\operatorname{rank} T_h \\le d_h$, so a single head is never orthogonal when $d_h < d$.",),
        symbolic_tests=(_SYM,), certificate_tests=(_CERT,),
        numeric_tests=("tests/numerics/test_walk_t2.py", "tests/numerics/test_attention.py", "tests/numerics/test_scale.py",
                       "tests/models/test_identity_tiny.py", "tests/models/test_identity_real.py",
                       "tests/models/test_registry.py"),
        necessity_tests=("tests/numerics/test_walk_t2.py",),
    ),
    Theorem(
        id="T3", title="When the generator is a random-walk connection Laplacian", kind="theorem",
        source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T3"),
        hypotheses=(
            Hypothesis("(a) stochastic", "$\\sum_j P_{ij} = 1$"),
            Hypothesis("(b) reversible", "$\\pi_i P_{ij} = \\pi_j P_{ji}$ for some positive $\\pi$"),
            Hypothesis("(c) metric-compatible", "$O_{ij}$ orthogonal and $O_{ji} = O_{ij}^\\top$"),
        ),
        conclusions=(
            "$\\Delta = I - W = I - (\\operatorname{diag}\\pi \\otimes I)^{-1} W_{\\mathrm{sym}}$ with $W_{\\mathrm{sym}} = \\operatorname{block}(\\pi_i P_{ij} O_{ij})$ symmetric; $\\Delta$ is self-adjoint in $\\langle x,y\\rangle_\\pi = \\sum_i \\pi_i x_i^\\top y_i$",
            "spectrum real, in $[0,2]$: $\\langle x,(2I-\\Delta)x\\rangle_\\pi = \\tfrac12\\sum_{ij}\\pi_i P_{ij}\\lVert x_i + O_{ij}x_j\\rVert^2$",
            "Dirichlet form $\\langle x,\\Delta x\\rangle_\\pi = \\tfrac12 \\sum_{ij} \\pi_i P_{ij} \\lVert x_i - O_{ij} x_j\\rVert^2$",
            "kernel = parallel sections ($x_i = O_{ij} x_j$ on every edge)",
            "flat connection $O_{ij} = R_i R_j^\\top$: $\\Delta = R((I-P)\\otimes I_d)R^\\top$, $\\dim\\ker\\Delta = d$ ($P$ irreducible)",
            "scaled isometries $O_{ij} = s Q_{ij}$: the Dirichlet form gains $+\\frac{1-s^2}{2}\\lVert x\\rVert_\\pi^2$; $\\operatorname{spec}\\Delta \\subset [1-s, 1+s]$",
        ),
        derivation=_dv.derive_t3, lemmas=("L3",),
        notes=(
            "Weaker: items 3 and 4 need only (a), orthogonal $O$ and a stationary $\\pi > 0$; then spec lies in the disk $|z-1| \\le 1$.",
            "Necessity (evaluated exactly): drop (a) $P=[[0,2],[2,0]]$: spec $\\{-1,3\\}$, $\\langle x,\\Delta x\\rangle_\\pi = -1$ vs Dirichlet $0$ at $x=(1,1)$; drop (b) directed 3-cycle: spec $\\{0, \\frac32 \\pm \\frac{\\sqrt3}{2} i\\}$; drop $O_{ji}=O_{ij}^\\top$ (swap, $R(\\pi/3)$): spec $\\{\\frac12\\pm\\frac{\\sqrt3}2 i, \\frac32\\pm\\frac{\\sqrt3}2 i\\}$; drop orthogonality (swap, $O=2$): spec $\\{-1,3\\}$; keep $O_{ji}=O_{ij}^{-1}$ only (3-cycle): eigenvalue $-0.0268$ and complex pairs.",
        ),
        symbolic_tests=(_SYM,), certificate_tests=(_CERT,),
        numeric_tests=_T3_NUMERIC + ("tests/numerics/test_spectra.py", "tests/numerics/test_scale.py"), necessity_tests=_T3_NECESSITY,
    ),
    Theorem(
        id="T4", title="When softmax attention is reversible", kind="theorem",
        source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T4"),
        hypotheses=(
            Hypothesis("softmax", "$A = \\operatorname{softmax}_{\\text{rows}}(X M X^\\top / \\sqrt{d_k})$, $M = W_Q^\\top W_K$, full support (no mask), $n \\ge 3$"),
        ),
        conclusions=(
            "Kolmogorov triangle identity: $\\log\\frac{A_{ij}A_{jk}A_{ki}}{A_{ik}A_{kj}A_{ji}} = \\frac{2}{\\sqrt{d_k}} (x_j - x_i)^\\top M_a (x_k - x_i)$, $M_a = \\frac{M - M^\\top}{2}$",
            "$A$ is reversible iff $M_a$ vanishes on $\\operatorname{span}\\{x_j - x_1\\}$; symmetric $M$ suffices ($\\pi_i \\propto D_{ii}$, stationary), is not necessary (affinely collinear tokens; $n = 2$)",
            "a key bias cancels; a query bias keeps reversibility with $\\pi_i \\propto e^{\\beta_i}\\sum_j e^{S_{ij}+\\beta_j}$",
            "causal attention is never reversible with a positive $\\pi$ ($n \\ge 2$)",
        ),
        derivation=_dv.derive_t4,
        notes=("RoPE: reversible when $W_Q = W_K$; symmetric $M$ alone is not enough.",),
        symbolic_tests=(_SYM,), certificate_tests=(_CERT,),
        numeric_tests=("tests/numerics/test_reversibility.py", "tests/numerics/test_graphs.py"),
        necessity_tests=_T3_NECESSITY,
    ),
    Theorem(
        id="T5", title="Single head: when $I - A\\otimes T$ is a connection Laplacian", kind="theorem",
        source=Source(SEED_A, _CLAIM_LAP, "THEOREMS.md T5"),
        hypotheses=(
            Hypothesis("softmax", "$A$ softmax attention with full support"),
            Hypothesis("reversible", "$A$ reversible"),
            Hypothesis("involution", "$T$ orthogonal and $T = T^\\top$, i.e. $T = I - 2\\Pi_U$"),
        ),
        conclusions=(
            "$I - A\\otimes T$ is a connection Laplacian iff $A$ reversible and $T$ an orthogonal involution (up to a global gauge: $T^2 = I$)",
            "$\\operatorname{spec}\\Delta = \\{1-\\lambda_i\\}$ on $\\operatorname{Fix}(T)$ $\\cup$ $\\{1+\\lambda_i\\}$ on the $-1$ eigenspace; $\\ker\\Delta = \\mathbf 1 \\otimes \\operatorname{Fix}(T)$ for irreducible $A$",
            "a non-orthogonal involution has real spectrum in $[0,2]$ but fails $\\pi$-self-adjointness and the Dirichlet form",
        ),
        derivation=_dv.derive_t5, lemmas=("L3", "L4"),
        symbolic_tests=(_SYM,), certificate_tests=(_CERT,),
        numeric_tests=_T3_NUMERIC + ("tests/numerics/test_involution.py",), necessity_tests=_T3_NECESSITY,
    ),
    Theorem(
        id="T6", title="Pattern formation: linearisation and dispersion relation", kind="theorem",
        source=Source(SEED_B, _CLAIM_PAT, "THEOREMS.md T6"),
        hypotheses=(
            Hypothesis("(H1) normalised", "each $A^h(X)$ is row-stochastic for all $X$"),
            Hypothesis("(H2) homogeneous", "base state $X = \\mathbf 1 \\otimes x^*$ (not necessarily an equilibrium)"),
            Hypothesis("(H3) circulant", "$A^h_{0,ij} = a_h((j-i) \\bmod n)$: relative positional kernel on a ring, no absolute PE, no mask"),
        ),
        conclusions=(
            "(H1)+(H2): the Jacobian of $\\dot x_i = \\sum_h\\sum_j A^h_{ij}(X) T_h x_j - x_i$ is exactly $J = \\operatorname{block}(\\sum_h A^h_{0,ij} T_h) - I$",
            "(H3): eigenpairs $\\varphi_k \\otimes v$, $\\varphi_k(j) = e^{2\\pi i k j / n}$, eigenvalues $\\operatorname{eig} M(k) - 1$, $M(k) = \\sum_h \\hat a_h(k) T_h$, $\\hat a(k) = \\sum_m a(m) e^{+2\\pi i k m / n}$",
            "selection $k^* = \\operatorname{argmax}_k \\max \\operatorname{Re}\\operatorname{eig} M(k)$, growth $\\sigma = \\lambda_{\\max}(M(k^*)) - 1$; phase velocity $c = -n \\operatorname{Im}\\sigma / (2\\pi k^*)$",
            "rotating wave $T = \\rho R(\\theta)$: $\\sigma_z(k) = \\rho e^{i\\theta}\\hat a(k) - 1$",
        ),
        derivation=_dv.derive_t6, lemmas=("L2",),
        notes=(
            "Fails for unnormalised (sigmoid) attention and for inhomogeneous base states (necessity witnesses in the derivation).",
            "The symbol predicts onset only; on a line or with a causal mask the operator is non-normal.",
        ),
        symbolic_tests=(_SYM,), certificate_tests=(_CERT,),
        numeric_tests=("tests/numerics/test_patterns.py",),
        necessity_tests=("tests/numerics/test_patterns.py",),
    ),
]

#: every registered statement, lemmas first (they are used by the theorems)
THEOREMS: list[Theorem] = LEMMAS + MAIN
_BY_ID = {t.id: t for t in THEOREMS}


def ids() -> list[str]:
    return [t.id for t in THEOREMS]


def get(theorem_id: str) -> Theorem:
    """The registered theorem/lemma with this id; :class:`UnknownTheoremError` (a ``KeyError``)
    listing the known ids otherwise."""
    if not isinstance(theorem_id, str) or theorem_id not in _BY_ID:
        raise UnknownTheoremError(theorem_id, ids())
    return _BY_ID[theorem_id]
