"""The walk side's formulas beyond :mod:`theory.formulas` (T1's hypotheses, T2's gauge, constant
transport and special cases, the conventions): one SymPy expression each, rendered into THEOREMS.md
with ``sympy.latex``, evaluated by the oracles of :mod:`theory.oracles.walks` with
:func:`theory.formulas.evaluate`, and (where cheap) proved for symbolic sizes by
:mod:`theory.derivations.general`.

:class:`Relation` is the inequality counterpart of :class:`theory.formulas.Identity` (``c_ij ≥ 0``
for every value of its free indices, with ``where`` definitions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import sympy as sp

from .. import formulas as F
from . import H, Identity, a, b, d, h, i, j, n
from .notation import Delimited

# ------------------------------------------------------------------------------------------------
# machinery: displayed names, inequalities
# ------------------------------------------------------------------------------------------------


class Label(sp.Symbol):
    """A symbol evaluated under its plain ``name`` and displayed as LaTeX (``P'``, ``T_\\Sigma``)."""

    _display: ClassVar[dict[str, str]] = {}

    def _latex(self, printer):
        return self._display.get(self.name, self.name)


def shown_base(name: str, latex: str) -> sp.IndexedBase:
    """An ``IndexedBase`` evaluated from the instance value ``name``, displayed as ``latex``."""
    Label._display[name] = latex
    return sp.IndexedBase(Label(name))


@dataclass(frozen=True)
class Relation:
    """``rel`` (a SymPy relational: ``≥``, ``>``) for every value of the ``free`` indices, with
    the ``where`` definitions (as for :class:`theory.formulas.Identity`)."""

    name: str
    rel: Any
    free: tuple[sp.Symbol, ...] = ()
    where: tuple[tuple[Any, Any], ...] = ()

    def markdown(self) -> str:
        out = f"${F._tex(self.rel)}$"
        if self.where:
            out += " where " + ", ".join(f"${F._tex(hd)} = {F._tex(e)}$" for hd, e in self.where)
        return out

    def edited(self, **changes: Any) -> Relation:
        return replace(self, **changes)

    def __str__(self) -> str:
        return f"formula {self.name}"


def margin(rel: Relation, values: Mapping[str, Any]):
    """``lhs - rhs`` of ``rel`` over its free indices, signed so that the relation holds where it is
    ``≥ 0`` (``>``: ``> 0``); ``(margin, strict)``. An implication ``condition ⇒ relation`` has the
    margin of its relation where the condition holds and ``+∞`` elsewhere."""
    env = F.environment(rel, values)
    if isinstance(rel.rel, sp.Implies):  # ``condition ⇒ relation``: holds (margin +∞) where the condition fails
        cond, consequent = rel.rel.args
        m, strict = margin(rel.edited(rel=consequent), values)
        import numpy as np

        on = F.tabulate(cond, rel.free, env).astype(bool)
        return np.where(on, m, np.inf), strict
    lhs, rhs = F.tabulate(rel.rel.lhs, rel.free, env), F.tabulate(rel.rel.rhs, rel.free, env)
    if isinstance(rel.rel, (sp.GreaterThan, sp.StrictGreaterThan)):
        return lhs - rhs, isinstance(rel.rel, sp.StrictGreaterThan)
    if isinstance(rel.rel, (sp.LessThan, sp.StrictLessThan)):
        return rhs - lhs, isinstance(rel.rel, sp.StrictLessThan)
    raise TypeError(f"relation {rel.name}: unsupported relational {type(rel.rel).__name__}")


# ------------------------------------------------------------------------------------------------
# T1: the transport of a torch layer
# ------------------------------------------------------------------------------------------------
d_h = sp.Symbol("d_h", integer=True, positive=True)
W_O, W_V = sp.MatrixSymbol("W_O", d, d_h), sp.MatrixSymbol("W_V", d_h, d)
#: T1.transport: with ``nn.Linear`` weights (out × in) the transport is ``T = W_O W_V``
LAYOUT = Identity("layout", F.T_m, W_O * W_V)

Kb = shown_base("K", r"\left(A \otimes T\right)")
#: T1: entry ``(i d + a, j d + b)`` of ``A ⊗ T`` is that of the walk with ``P = A``, ``O_ij = T``
T1_BLOCK = Identity(
    "block",
    Kb[i * d + a, j * d + b],
    F.P_[i, j] * F.O_[i, j, a, b],
    (i, j, a, b),
    (),
    ((F.P_[i, j], F.A_m[i, j]), (F.O_[i, j, a, b], F.T_m[a, b])),
)
nu_, lam_A, mu_T = sp.IndexedBase("nu"), sp.IndexedBase("lambda"), sp.IndexedBase("mu")
#: T1 / L4: the eigenvalues ``ν`` of ``A ⊗ T`` (with algebraic multiplicity, suitably ordered)
KRON_EIGENVALUES = Identity("spectrum", nu_[i * d + a], lam_A[i] * mu_T[a], (i, a))

# ------------------------------------------------------------------------------------------------
# T2: the convention, the gauge, constant transport, special cases
# ------------------------------------------------------------------------------------------------
Ah, Th, B, P = F.Ah_, F.Th_, F.B_, F.P_
_B_DEF = F._T2_WHERE[3]  # B_ij = Σ_h A^h_ij T_h: the definition T2.walk's blocks use
#: T2.convention: ``P = mean_h A^h`` (the definition T2.walk's rows use)
CONVENTION = Identity("convention", *F._T2_WHERE[0], (i, j))

Q, U = shown_base("Pg", "P'"), shown_base("Og", "O'")
_GAUGE_WHERE = (_B_DEF, (U[i, j, a, b], B[i, j, a, b] / Q[i, j]))
#: T2.gauge: another row-stochastic ``P'`` with ``O'_ij = B_ij / P'_ij`` has the same blocks
GAUGE = Identity(
    "gauge",
    Q[i, j] * U[i, j, a, b],
    B[i, j, a, b],
    (i, j, a, b),
    ((sp.Sum(Q[i, j], (j, 0, n - 1)), sp.S.One),),
    _GAUGE_WHERE,
)
#: ... with ``P'_ij > 0`` wherever the block ``B_ij`` is not zero
GAUGE_SUPPORT = Relation(
    "support",
    sp.Implies(sp.Ne(sp.Sum(B[i, j, a, b] ** 2, (a, 0, d - 1), (b, 0, d - 1)), 0), sp.StrictGreaterThan(Q[i, j], 0)),
    (i, j),
    (_B_DEF,),
)

TS, cc = shown_base("TS", r"T_{\Sigma}"), sp.IndexedBase("c")
_CONSTANT_WHERE = (
    _B_DEF,
    (TS[a, b], sp.Sum(Th[h, a, b], (h, 0, H - 1))),
    (
        cc[i, j],
        sp.Sum(B[i, j, a, b] * TS[a, b], (a, 0, d - 1), (b, 0, d - 1))
        / sp.Sum(TS[a, b] ** 2, (a, 0, d - 1), (b, 0, d - 1)),
    ),
)
#: T2.constant: every block a multiple of ``T_Σ = Σ_h T_h`` (``c_ij``: the projection coefficient) ...
CONSTANT = Identity("constant", B[i, j, a, b], cc[i, j] * TS[a, b], (i, j, a, b), (), _CONSTANT_WHERE)
#: ... with a nonnegative coefficient (``c`` as :data:`CONSTANT` defines it: evaluated in its environment)
CONSTANT_NONNEG = Relation("nonneg", sp.GreaterThan(cc[i, j], 0), (i, j))
#: ... and, for linearly independent ``T_h``, every head the same attention
EQUAL_HEADS = Identity("equal_heads", Ah[h, i, j], Ah[0, i, j], (h, i, j))

#: T2.special: heads sharing one attention ``A^h = A^1`` have ``O_ij = T_Σ``
SHARED_A = Identity(
    "shared_A",
    F.O_[i, j, a, b],
    sp.Sum(Th[h, a, b], (h, 0, H - 1)),
    (i, j, a, b),
    ((Ah[h, i, j], Ah[0, i, j]),),
    F._T2_WHERE[1:3],
)
#: ... heads sharing one transport ``T_h = T_1`` have ``O_ij = H T_1``
SHARED_T = Identity(
    "shared_T",
    F.O_[i, j, a, b],
    H * Th[0, a, b],
    (i, j, a, b),
    ((Th[h, a, b], Th[0, a, b]),),
    F._T2_WHERE[1:3],
)
#: ... two cancelling heads (``A^2 = A^1``, ``T_2 = -T_1``) have ``B = 0`` (``H = 2``)
CANCELLING = Identity(
    "cancelling",
    B[i, j, a, b],
    sp.S.Zero,
    (i, j, a, b),
    ((H, sp.Integer(2)), (Ah[1, i, j], Ah[0, i, j]), (Th[1, a, b], -Th[0, a, b])),
    (_B_DEF,),
)

# ------------------------------------------------------------------------------------------------
# the conventions
# ------------------------------------------------------------------------------------------------
x_vec = sp.MatrixSymbol("x", n * d, 1)
#: token-major stacking ``x = vec(X^T)`` (``X.reshape(-1)``)
STACKING = Identity("stacking", x_vec, F.Vec(F.X_m.T))
#: the connection walk ``(W x)_i = Σ_j P_ij O_ij x_j`` and its generator ``Δ = I - W``, componentwise
Wx, Dx = shown_base("Wx", r"\left(W x\right)"), shown_base("Dx", r"\left(\Delta x\right)")
WALK = Identity("walk", Wx[i, a], F.x_[i, a] - F.walk_component(F.x_), (i, a))
GENERATOR = Identity("generator", Dx[i, a], F.walk_component(F.x_), (i, a))
Wb = shown_base("Wb", "W")
#: entry ``(i d + a, j d + b)`` of the walk's ``nd × nd`` matrix: block ``(i, j)`` is ``P_ij O_ij``
WALK_BLOCK = Identity("block", Wb[i * d + a, j * d + b], P[i, j] * F.O_[i, j, a, b], (i, j, a, b))
#: a walk matrix is nonnegative
WALK_NONNEG = Relation("nonneg", sp.GreaterThan(P[i, j], 0), (i, j))
#: the π inner product
y_ = sp.IndexedBase("y")
ip = shown_base("ip", r"\left\langle x, y\right\rangle_{\pi}")
PI_INNER = Identity("pi_inner", ip, sp.Sum(F.pi_[i] * sp.Sum(F.x_[i, a] * y_[i, a], (a, 0, d - 1)), (i, 0, n - 1)))
#: the single-head output with biases: ``y_i = Σ_j A_ij T x_j + c``, ``c = W_O b_V + b_O``
b_V, b_O = sp.MatrixSymbol("b_V", d_h, 1), sp.MatrixSymbol("b_O", d, 1)
c_vec = sp.MatrixSymbol("c", d, 1)
BIAS = Identity("bias", c_vec, W_O * b_V + b_O)
yb = sp.IndexedBase("y")
BIAS_OUTPUT = Identity(
    "bias_output",
    yb[i, a],
    sp.Sum(F.A2_[i, j] * sp.Sum(F.T2_[a, b] * F.x_[j, b], (b, 0, d - 1)), (j, 0, n - 1)) + sp.IndexedBase("c")[a],
    (i, a),
)
#: entry ``i d + a`` of the token-major ``x`` is component ``a`` of token ``i``
STACK_ENTRY = Identity("entry", x_vec[i * d + a, 0], F.X_m[i, a], (i, a))


class Shape:
    """``M ∈ R^{rows × cols}``, rendered from the matrix symbol's own shape."""

    def __init__(self, name: str, sym: sp.MatrixSymbol, field: str = "R"):
        self.name, self.sym, self.field = name, sym, field

    def markdown(self) -> str:
        r, q = self.sym.shape
        space = F._tex(r) if q == 1 else f"{F._tex(r)} \\times {F._tex(q)}"  # a column vector: R^r
        return f"${F._tex(self.sym)} \\in \\mathbb{{{self.field}}}^{{{space}}}$"

    def dims(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The array shape the formula states at the sizes ``sizes`` (``{"n": 3, "d": 2}``); a
        column vector is a 1-d array."""
        r, q = (
            int(sp.sympify(x).subs({s: int(sizes[s.name]) for s in sp.sympify(x).free_symbols})) for x in self.sym.shape
        )
        return (r,) if self.sym.shape[1] == 1 else (r, q)

    def mismatch(self, value: Any, sizes: Mapping[str, int]) -> str:
        """Empty when ``value`` has the shape the formula states at ``sizes``, else what differs."""
        import numpy as np

        want, got = self.dims(sizes), np.shape(value)
        return "" if tuple(got) == want else f"{self.name}: shape {tuple(got)}, the formula states {want}"

    def __str__(self) -> str:
        return f"formula {self.name}"


SHAPE_X = Shape("X", F.X_m)
#: multi-head attention's definitions, the very objects T2's formulas use (one Identity per definition)
DEF_P, DEF_G, DEF_O, DEF_B = (
    Identity(nm, hd, body, tuple(hd.indices)) for nm, (hd, body) in zip(("P", "g", "O", "B"), F._T2_WHERE, strict=True)
)
#: Fourier modes on a ring of ``n`` tokens
phi = shown_base("phi", r"\varphi")
kk = sp.Symbol("k", integer=True, nonnegative=True)
FOURIER_MODE = Identity("mode", phi[kk, j], sp.exp(2 * sp.pi * sp.I * kk * j / n), (kk, j))

#: the single-head attention of T4 / T6 (softmax of the scores), as its definition in T4's formulas
SOFTMAX = Identity("softmax", F.A_[i, j], F.T4_WHERE[2][1], (i, j), (), F.T4_WHERE[:2])

# ------------------------------------------------------------------------------------------------
# L1: shapes and the mixed convention; L2: softmax rows; L4: the Kronecker spectrum
# ------------------------------------------------------------------------------------------------
SHAPE_A, SHAPE_T = Shape("A", F.A_m), Shape("T", F.T_m)
#: L4: any complex square matrices
SHAPE_AC, SHAPE_TC = Shape("A", F.A_m, "C"), Shape("T", F.T_m, "C")
#: L1's witness: the feature-major operator applied to the token-major stacking (false in general)
MIXED = Identity("mixed", F.Vec((F.A_m * F.X_m * F.T_m.T).T), sp.KroneckerProduct(F.T_m, F.A_m) * F.Vec(F.X_m.T))

xs = sp.Symbol("x")  # one coordinate x_{m,c} of the input
Sf = sp.Function("S")  # differentiable scores S_ij(X)
#: L2's hypothesis: softmax rows of differentiable scores
L2_SOFTMAX = Identity(
    "softmax", F.A2_[i, j], sp.exp(Sf(i, j, xs)) / sp.Sum(sp.exp(Sf(i, F.k, xs)), (F.k, 0, n - 1)), (i, j)
)
#: L2's witness: unnormalised (sigmoid) attention
L2_SIGMOID = Identity("sigmoid", F.A2_[i, j], sp.exp(Sf(i, j, xs)) / (1 + sp.exp(Sf(i, j, xs))), (i, j))
#: L2: rows sum to 1 ...
L2_ROWS = Identity("rows", sp.Sum(F.A2_[i, j], (j, 0, n - 1)), sp.S.One, (i,))
#: ... and the derivative of every row sums to 0
L2_DERIVATIVE = Identity("derivative", sp.Sum(sp.Derivative(F.A2_[i, j], xs), (j, 0, n - 1)), sp.S.Zero, (i,))

zs, mus = sp.Symbol("z"), sp.Symbol("mu")
p_A, p_T = sp.Function("p_A"), sp.Function("p_T")


class Res(sp.Function):
    """``Res_μ(f, g) = lc(f)^{deg g} Π_{f(r)=0} g(r)``: the resultant in ``μ`` (rendered; :meth:`doit`
    computes it for polynomials as the Sylvester determinant)."""

    nargs = 2

    def _latex(self, printer):
        f, g = (printer._print(x) for x in self.args)
        return r"\operatorname{Res}_{\mu}\left(" + f + ", " + g + r"\right)"

    def doit(self, **hints):
        from ..symbolic import sylvester_resultant  # the fixed-size derivation's resultant

        f, g = (x.doit(**hints) for x in self.args)
        return sylvester_resultant(sp.expand(f), sp.expand(g), mus)


_CHARPOLY_KRON = sp.Determinant(zs * sp.Identity(n * d) - sp.KroneckerProduct(F.A_m, F.T_m))
#: L4: the characteristic polynomial of ``A ⊗ T`` as a resultant of those of ``A``, ``T`` ...
L4_RESULTANT = Identity("resultant", _CHARPOLY_KRON, Res(p_T(mus), mus**n * p_A(zs / mus)))
#: ... and as the product over the eigenvalue pairs (``λ_i`` of ``A``, ``μ_a`` of ``T``, with multiplicity)
L4_PRODUCT = Identity("product", _CHARPOLY_KRON, sp.Product(zs - lam_A[i] * mu_T[a], (i, 0, n - 1), (a, 0, d - 1)))

# ------------------------------------------------------------------------------------------------
# the conventions' and T1/T2's notation: cross references, shapes, definitions the oracles evaluate
# ------------------------------------------------------------------------------------------------


class Term:
    """A cross reference: a subexpression another formula contains (``A ⊗ T`` of L1's token-major
    identity), rendered from that very object (one home)."""

    def __init__(self, name: str, expr: Any):
        self.name, self.expr = name, expr

    def markdown(self) -> str:
        return f"${F._tex(self.expr)}$"

    def edited(self, **changes: Any) -> Term:
        return Term(changes.get("name", self.name), changes.get("expr", self.expr))

    def __str__(self) -> str:
        return f"formula {self.name}"


def broadcast(expr, free: tuple[sp.Symbol, ...], values: Mapping[str, Any]):
    """``expr`` (free of ``Sum``) at every value of the indices ``free`` at once: one call of its
    ``lambdify`` with the indices as broadcasting integer grids (``P[i, j]`` indexes the array)."""
    import numpy as np

    names = F.value_names(expr)
    grids = dict(zip((x.name for x in free), np.ix_(*(np.arange(F.index_size(x, values)) for x in free)), strict=True))
    out = F.compiled(expr, names)(*(grids[nm] if nm in grids else values[nm] for nm in names))
    return np.broadcast_to(out, tuple(F.index_size(x, values) for x in free))


#: L1 / T1 / the conventions: the token-major operator ``A ⊗ T`` and the feature-major ``T ⊗ A``
KRON_AT = Term("kron", F.L1_TOKEN_MAJOR.rhs.args[0])
KRON_TA = Term("kron_feature", F.L1_FEATURE_MAJOR.rhs.args[0])
#: a token ``x_i ∈ R^d`` (row ``i`` of ``X``)
SHAPE_TOKEN = Shape("x_i", sp.MatrixSymbol("x_i", d, 1))
#: the walk's ``nd × nd`` matrix (its entries: :data:`WALK_BLOCK`) and a ``d × d`` transport
SHAPE_W = Shape("W", sp.MatrixSymbol("W", n * d, n * d))
SHAPE_O = Shape("O_ij", sp.MatrixSymbol("O_{ij}", d, d))
#: ``nn.Linear`` weights (out × in)
SHAPE_W_V, SHAPE_W_O = Shape("W_V", W_V), Shape("W_O", W_O)
W_m = sp.MatrixSymbol("W", n * d, n * d)
#: the generator ``Δ = I - W`` (its components: :data:`GENERATOR`)
GENERATOR_MATRIX = Identity("Delta", sp.MatrixSymbol("Delta", n * d, n * d), sp.Identity(n * d) - W_m)
#: T1.transport's witness: the row-vector layout ``T = (W_O W_V)^T`` used with ``nn.Linear`` weights
ROW_LAYOUT = Identity("row_layout", F.T_m, sp.Transpose(W_O * W_V))
#: T1.factorisation / the conventions: the key width is the model width, and no mask
DK_IS_D = Identity("dk", F.dk, d)
NO_MASK = Identity("no_mask", F.mu_[i, j], sp.S.Zero, (i, j))
#: the Fourier modes' root of unity (T6 writes the mode as ``ζ^j``)
ZETA = Identity("zeta", F.zeta, sp.exp(2 * sp.pi * sp.I * kk / n))
#: L3: the detailed-balance weights are positive
PI_POSITIVE = Relation("positive", sp.StrictGreaterThan(F.pi_[i], 0), (i,))
#: L3's source: the stochasticity correction (the last term of :data:`theory.formulas.DIRICHLET_CORRECTED`)
L3_CORRECTION = Term("correction", next(x for x in F.DIRICHLET_CORRECTED.rhs.args if isinstance(x, sp.Sum)))

#: T2.convention's witness: a nonzero block where the walk matrix vanishes (no ``O_ij`` exists)
NO_TRANSPORT = Relation(
    "no_transport",
    sp.And(sp.Ne(sp.Sum(B[i, j, a, b] ** 2, (a, 0, d - 1), (b, 0, d - 1)), 0), sp.Eq(P[i, j], 0)),
    (i, j),
    (_B_DEF,),
)
#: T2's note: off support every head vanishes (there the gates are 0/0)
OFF_SUPPORT = Identity("off_support", sp.Sum(Ah[h, i, j], (h, 0, H - 1)), sp.S.Zero, (i, j))
#: T2's note: GQA, query head ``h`` reads kv head ``⌊h / (H / H_kv)⌋``
H_kv = sp.Symbol("H_kv", integer=True, positive=True)
kv_ = shown_base("kv", r"\operatorname{kv}")
GQA = Identity("gqa", kv_[h], sp.floor(h / (H / H_kv)), (h,))


class Rank(Delimited):
    """``rank M`` (rendered ``\\operatorname{rank}``; evaluated by ``numpy.linalg.matrix_rank``)."""

    is_integer = True
    is_nonnegative = True
    tex_left, tex_right, numpy_code = r"\operatorname{rank}\left(", r"\right)", "numpy.linalg.matrix_rank({})"


#: T2's note: a head's transport ``T_h = W_O W_V`` has rank at most ``d_h`` ...
HEAD_RANK = Relation("rank", sp.LessThan(Rank(W_O * W_V), d_h))
#: ... which is below ``d`` for a narrow head (so ``T_h`` is never orthogonal)
NARROW = Relation("narrow", sp.StrictLessThan(d_h, d))
