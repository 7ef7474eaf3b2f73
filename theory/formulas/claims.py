"""The empirical claims' formulas (E2, E5, LAP): the statistics the measuring code of ``paper_checks``
computes, one SymPy expression each, rendered into THEOREMS.md with ``sympy.latex`` and evaluated
by ``tests/paper_checks/test_claim_formulas.py`` (:func:`evaluate`: ``lambdify`` of the same
expression on a random instance, compared with the statistic the claim's module computes).

A statistic is a :class:`Quantity`: ``symbol = expression`` with ``where`` definitions, like
:class:`theory.formulas.Identity`; its ``lhs`` is the measured value (the test passes the
measuring code's number under the symbol's name, so :func:`evaluate` returns measured vs formula).
The walk gauge ``P``, ``g``, ``O`` are T2's definitions (:data:`theory.formulas.walks.DEF_P`, ...).

Notation SymPy lacks, each with its LaTeX and its numpy evaluation: :class:`theory.formulas.notation.NormF` (Frobenius /
Euclidean), :class:`MaxOver` (``max_i``), :class:`Diag`, :class:`theory.formulas.notation.Eye` (``I``), :class:`Sym`,
:class:`SignDiag`, :class:`SpectralRadius`, :class:`Indicator`, :class:`SingularValue`, :class:`MinOver`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from .. import formulas as F
from . import B_, DIRICHLET_SUM, O_, P_, PI_FORM, Identity, a, b, c, d, i, j, k, n, pi_, x_
from .notation import Delimited, Eye, MatrixOf, NormF
from .walks import DEF_B, Label, Relation, shown_base

# ------------------------------------------------------------------------------------------------
# notation
# ------------------------------------------------------------------------------------------------


class SpectralRadius(Delimited):
    """``ρ(W)``: the largest modulus of an eigenvalue."""

    is_real = True
    tex_left, tex_right = r"\rho\left(", r"\right)"
    numpy_code = "numpy.max(numpy.abs(numpy.linalg.eigvals({})))"


class MaxOver(sp.Function):
    """``max_i e``: ``MaxOver(e, (i, lo, hi))``, the maximum over ``i = lo..hi``."""

    nargs = 2
    is_commutative = True

    @property
    def free_symbols(self):
        e, (v, lo, hi) = self.args
        return (e.free_symbols - {v}) | lo.free_symbols | hi.free_symbols

    def _latex(self, printer, exp=None):
        e, (v, _, _) = self.args
        out = r"\max_{" + printer._print(v) + "} " + printer._print(e)
        return out if exp is None else r"\left(" + out + r"\right)^{" + exp + "}"

    def _numpycode(self, printer):
        e, (v, lo, hi) = self.args
        p = printer._print
        return f"builtins.max({p(e)} for {p(v)} in range({p(lo)}, {p(hi)} + 1))"


class Indicator(Delimited):
    """``1[condition]``: 1 where the condition holds, 0 elsewhere."""

    tex_left, tex_right, numpy_code = r"\mathbb{1}\left[", r"\right]", "numpy.where({}, 1.0, 0.0)"


class Diag(MatrixOf):
    """``diag(v)``: the diagonal matrix of the vector ``v`` (``n × 1``)."""

    @property
    def shape(self):
        return (self.args[0].shape[0], self.args[0].shape[0])

    def _latex(self, printer):
        return r"\operatorname{diag}\left(" + printer._print(self.args[0]) + r"\right)"

    def _numpycode(self, printer):
        return "numpy.diag(numpy.ravel(" + printer._print(self.args[0]) + "))"


class Sym(MatrixOf):
    """``sym(M) = (M + Mᵀ)/2``: the symmetric part of a square matrix."""

    def _latex(self, printer):
        return r"\operatorname{sym}\left(" + printer._print(self.args[0]) + r"\right)"

    def _numpycode(self, printer):
        M = printer._print(self.args[0])
        return f"(0.5 * (({M}) + numpy.transpose({M})))"


class SignDiag(MatrixOf):
    """``sign(Λ)`` of a diagonal matrix, entrywise on the diagonal, with ``sign 0 = +1``."""

    def _latex(self, printer):
        return r"\operatorname{sign}\left(" + printer._print(self.args[0]) + r"\right)"

    def _numpycode(self, printer):
        return "numpy.diag(numpy.where(numpy.diag(" + printer._print(self.args[0]) + ") >= 0, 1.0, -1.0))"


class SingularValue(sp.Function):
    """``σ_a(M)``: the ``a``-th singular value of ``M`` (descending, all ``min(rows, cols)`` of them)."""

    nargs = 2
    is_commutative = True
    is_real = True

    def _latex(self, printer, exp=None):
        M, k = (printer._print(x) for x in self.args)
        out = r"\sigma_{" + k + r"}\left(" + M + r"\right)"
        return out if exp is None else out + "^{" + exp + "}"

    def _numpycode(self, printer):
        M, k = (printer._print(x) for x in self.args)
        return f"numpy.linalg.svd({M}, compute_uv=False)[{k}]"


class MinOver(sp.Function):
    """``min_{v1, v2} e`` (displayed only: :func:`evaluate` does not minimise; the test that
    evaluates a :class:`MinOver` minimises ``e``, lambdified, over its variables itself)."""

    is_commutative = True

    def _latex(self, printer, exp=None):
        e, *vs = self.args
        return r"\min_{" + ", ".join(printer._print(v) for v in vs) + "} " + printer._print(e)


# ------------------------------------------------------------------------------------------------
# machinery: quantities and their evaluation
# ------------------------------------------------------------------------------------------------


def _tex(e) -> str:
    return sp.latex(e)  # ratios as \frac{num}{den} (statistics are read as quotients)


@dataclass(frozen=True)
class Quantity(Identity):
    """``lhs = rhs`` with ``where`` definitions whose heads may be ``Indexed`` (tabulated over
    their indices), ``Symbol`` or ``MatrixSymbol`` (evaluated whole): a statistic's definition
    (``lhs``: the measured value's symbol) or a fact about them (``lhs``, ``rhs`` both formulas)."""

    def markdown(self) -> str:
        out = f"${_tex(self.lhs)} = {_tex(self.rhs)}$"
        if self.where:
            out += " where " + ", ".join(f"${_tex(hd)} = {_tex(e)}$" for hd, e in self.where)
        return out


@dataclass(frozen=True)
class Equivalence(Quantity):
    """``lhs ⇔ rhs``: a verdict (``lhs``: the measured boolean) and the condition that defines it."""

    def markdown(self) -> str:
        return f"${_tex(self.lhs)} \\Leftrightarrow {_tex(self.rhs)}$"


@dataclass(frozen=True)
class Chain:
    """``t_0 = t_1 = ...`` (e.g. ``Q = Qᵀ = Q⁻¹``)."""

    name: str
    terms: tuple[Any, ...]

    def markdown(self) -> str:
        return "$" + " = ".join(_tex(t) for t in self.terms) + "$"

    def __str__(self) -> str:
        return f"formula {self.name}"


@dataclass(frozen=True)
class Expression:
    """A displayed expression (an operator the text names, e.g. ``P'' ⊗ sQ``)."""

    name: str
    expr: Any

    def markdown(self) -> str:
        return f"${_tex(self.expr)}$"

    def __str__(self) -> str:
        return f"formula {self.name}"


#: the ``where`` definitions evaluated in order (:func:`theory.formulas.environment`, one home)
environment = F.environment


def value(expr, values: Mapping[str, Any], free=(), where=()):
    """``expr`` evaluated (``lambdify``) on ``values`` with the ``where`` definitions, over ``free``."""
    return F.tabulate(expr, tuple(free), environment(where, values))


def evaluate(formula, values: Mapping[str, Any]):
    """``(lhs, rhs)`` of a :class:`Quantity` / :class:`Identity` / :class:`Relation` on the
    instance ``values`` (the terms of a :class:`Chain`; the value of an :class:`Expression`)."""
    if isinstance(formula, Chain):
        return [value(t, values) for t in formula.terms]
    if isinstance(formula, Expression):
        return value(formula.expr, values)
    if isinstance(formula, Relation):
        env = environment(formula.where, values)
        return F.tabulate(formula.rel.lhs, formula.free, env), F.tabulate(formula.rel.rhs, formula.free, env)
    env = environment(formula.where, values)
    return F.tabulate(formula.lhs, formula.free, env), F.tabulate(formula.rhs, formula.free, env)


def holds(rel: Relation, values: Mapping[str, Any]) -> bool:
    """Whether the relation ``rel`` (``≤`` / ``≥``) holds on ``values`` (exactly: no tolerance)."""
    lhs, rhs = evaluate(rel, values)
    return bool(sp.sympify(rel.rel.func(sp.Float(float(lhs)), sp.Float(float(rhs)))))


# ------------------------------------------------------------------------------------------------
# symbols (evaluated under their plain name, displayed as LaTeX)
# ------------------------------------------------------------------------------------------------
def _label(name: str, latex: str) -> sp.Symbol:
    Label._display[name] = latex
    return Label(name)


# ------------------------------------------------------------------------------------------------
# LAP: hypothesis defects (paper_checks.laplacian_stats.hypothesis_defects)
# ------------------------------------------------------------------------------------------------
#: (a) stochastic: ``δ_a = max_i |Σ_j P_ij − 1|``
STOCHASTIC_DEFECT = Quantity(
    "stochastic",
    _label("lap_stochastic", r"\delta_{\mathrm{a}}"),
    MaxOver(sp.Abs(sp.Sum(P_[i, j], (j, 0, n - 1)) - 1), sp.Tuple(i, 0, n - 1)),
)

Pm = sp.MatrixSymbol("P", n, n)
pim = sp.MatrixSymbol("pi", n, 1)
Fm = sp.MatrixSymbol("F", n, n)
#: (b) detailed balance: ``δ_b = ‖F − Fᵀ‖_F / ‖F + Fᵀ‖_F``, ``F = diag(π) P``
BALANCE_DEFECT = Quantity(
    "detailed_balance",
    _label("lap_balance", r"\delta_{\mathrm{b}}"),
    NormF(Fm - Fm.T) / NormF(Fm + Fm.T),
    where=((Fm, Diag(pim) * Pm),),
)

Nb_, r_, pih_, pin_ = (
    shown_base(f"lap_{s}", t) for s, t in (("N", "N"), ("r", "r"), ("pih", r"\hat\pi"), ("pin", r"\pi'"))
)
_BLOCK_TERM = pih_[i] * B_[i, j, a, b], pih_[j] * B_[j, i, b, a]
#: (b) for the blocks, gauge-free: ``π̂ ∝ π'/r`` with ``π'`` the stationary law of ``N_ij / r_i``
BLOCK_BALANCE_DEFECT = Quantity(
    "block_detailed_balance",
    _label("lap_block_balance", r"\delta_{\mathrm{b}}^{B}"),
    sp.sqrt(
        sp.Sum((_BLOCK_TERM[0] - _BLOCK_TERM[1]) ** 2, (i, 0, n - 1), (j, 0, n - 1), (a, 0, d - 1), (b, 0, d - 1))
        / sp.Sum((_BLOCK_TERM[0] + _BLOCK_TERM[1]) ** 2, (i, 0, n - 1), (j, 0, n - 1), (a, 0, d - 1), (b, 0, d - 1))
    ),
    where=(
        (B_[i, j, a, b], DEF_B.rhs),
        (Nb_[i, j], sp.sqrt(sp.Sum(B_[i, j, a, b] ** 2, (a, 0, d - 1), (b, 0, d - 1)))),
        (r_[i], sp.Sum(Nb_[i, j], (j, 0, n - 1))),
        (pih_[i], (pin_[i] / r_[i]) / sp.Sum(pin_[k] / r_[k], (k, 0, n - 1))),
    ),
)

w_ = shown_base("lap_w", "w")
_TWO_WAY = ((w_[i, j], (P_[i, j] + P_[j, i]) / 2 * Indicator(sp.And(P_[i, j] > 0, P_[j, i] > 0))),)


def _edge_sq(sign: int):
    """``Σ_ij w_ij ‖O_ij + sign O_jiᵀ‖_F²``."""
    return sp.Sum(
        w_[i, j] * sp.Sum((O_[i, j, a, b] + sign * O_[j, i, b, a]) ** 2, (a, 0, d - 1), (b, 0, d - 1)),
        (i, 0, n - 1),
        (j, 0, n - 1),
    )


#: (c) second half, the ``P``-weighted transpose asymmetry over the two-way edges
TRANSPOSE_DEFECT = Quantity(
    "transpose_symmetry",
    _label("lap_transpose", r"\delta_{\mathrm{c}}^{\top}"),
    sp.sqrt(_edge_sq(-1) / _edge_sq(+1)),
    where=_TWO_WAY,
)

#: (c) item 6, the scaled-isometry defect: ``ι(O)² = d tr((OᵀO)²)/tr(OᵀO)² − 1`` (the CV of the ``d``
#: squared singular values), averaged with the weights ``P_ij`` over the nonzero blocks
_GRAM_SQ = sp.Sum(sp.Sum(O_[i, j, a, b] * O_[i, j, a, c], (a, 0, d - 1)) ** 2, (b, 0, d - 1), (c, 0, d - 1))
_NORM_SQ = sp.Sum(O_[i, j, a, b] ** 2, (a, 0, d - 1), (b, 0, d - 1))
v_ = shown_base("lap_v", "v")
ISOMETRY_DEFECT = Quantity(
    "scaled_isometry",
    _label("lap_isometry", r"\delta_{\mathrm{c}}^{s}"),
    sp.Sum(v_[i, j] * sp.sqrt(d * _GRAM_SQ / _NORM_SQ**2 - 1), (i, 0, n - 1), (j, 0, n - 1))
    / sp.Sum(v_[i, j], (i, 0, n - 1), (j, 0, n - 1)),
    where=((v_[i, j], P_[i, j] * Indicator(_NORM_SQ > 0)),),
)

#: (c) first half, the orthogonality defect ``Σ_ij P_ij ‖O_ijᵀO_ij − I‖_F/√d / Σ_ij P_ij``
_ORTH_EDGE = sp.sqrt(
    sp.Sum(
        (sp.Sum(O_[i, j, a, b] * O_[i, j, a, c], (a, 0, d - 1)) - sp.KroneckerDelta(b, c)) ** 2,
        (b, 0, d - 1),
        (c, 0, d - 1),
    )
)
ORTHOGONALITY_DEFECT = Quantity(
    "orthogonality",
    _label("lap_orthogonality", r"\delta_{\mathrm{c}}^{O}"),
    sp.Sum(P_[i, j] * _ORTH_EDGE / sp.sqrt(d), (i, 0, n - 1), (j, 0, n - 1))
    / sp.Sum(P_[i, j], (i, 0, n - 1), (j, 0, n - 1)),
)

# ------------------------------------------------------------------------------------------------
# LAP: conclusion statuses
# ------------------------------------------------------------------------------------------------
Wm = sp.MatrixSymbol("W", n * d, n * d)
Pi = sp.MatrixSymbol("Pi", n * d, n * d)
_PI_DEF = (Pi, sp.KroneckerProduct(Diag(pim), Eye(d)))
#: T3.1: ``‖ΠW − WᵀΠ‖_F / ‖ΠW + WᵀΠ‖_F``, ``Π = diag(π) ⊗ I_d``
SELF_ADJOINT_DEFECT = Quantity(
    "self_adjoint",
    _label("lap_self_adjoint", r"\delta_{\mathrm{sa}}"),
    NormF(Pi * Wm - Wm.T * Pi) / NormF(Pi * Wm + Wm.T * Pi),
    where=(_PI_DEF,),
)

alpha, beta = _label("lap_alpha", r"\alpha"), _label("lap_beta", r"\beta")
_ALPHA = sp.Rational(1, 2) * sp.Sum(
    pi_[i] * (2 - sp.Sum(P_[i, j], (j, 0, n - 1))) * sp.Sum(x_[i, a] ** 2, (a, 0, d - 1)), (i, 0, n - 1)
)
_BETA = sp.Rational(1, 2) * sp.Sum(
    pi_[i] * P_[i, j] * sp.Sum(sp.Sum(O_[i, j, a, b] * x_[j, b], (b, 0, d - 1)) ** 2, (a, 0, d - 1)),
    (i, 0, n - 1),
    (j, 0, n - 1),
)
_AB_WHERE = ((alpha, _ALPHA), (beta, _BETA))
#: T3.3 on the input ``x``: ``|α − β| / |α + β|``
DIRICHLET_DEFECT = Quantity(
    "dirichlet",
    _label("lap_dirichlet", r"\delta_{\mathrm{D}}"),
    sp.Abs(alpha - beta) / sp.Abs(alpha + beta),
    where=_AB_WHERE,
)
pi_form = _label("lap_pi_form", r"\left\langle x, \Delta x\right\rangle_{\pi}")
#: ... because ``α − β`` is the Dirichlet identity's residual for any π-weighted walk
DIRICHLET_SPLIT = Quantity(
    "dirichlet_split",
    alpha - beta,
    pi_form - sp.Rational(1, 2) * DIRICHLET_SUM,
    where=((pi_form, PI_FORM),),  # α, β: as DIRICHLET_DEFECT defines them (evaluated in its environment)
)

#: T3.2 (spec Δ ⊂ [0, 2]) implies ``ρ(W) ≤ 1``
RADIUS_BOUND = Relation("radius", sp.LessThan(SpectralRadius(Wm), 1))
#: the decision rule's status of the spectral radius
#: (``tol_float32(n)``: ``numerics.tolerance.tol(torch.float32, n)``, the instance gives its value)
RADIUS_STATUS = Relation(
    "radius_status",
    sp.LessThan(SpectralRadius(Wm), 1 + _label("lap_tol32", r"\operatorname{tol}_{\mathrm{float32}}\left(n\right)")),
)

# ------------------------------------------------------------------------------------------------
# LAP: distances to walks that satisfy the hypotheses (paper_checks.laplacian_stats.nearest_walk_distances)
# ------------------------------------------------------------------------------------------------
Y_ = shown_base("lap_Y", "Y")
Yp_ = shown_base("lap_Yp", "Y'")
#: ``Y = Wx``: rows ``y_i = Σ_j P_ij O_ij x_j``
OUTPUT = Quantity(
    "output", Y_[i, a], sp.Sum(P_[i, j] * sp.Sum(O_[i, j, a, b] * x_[j, b], (b, 0, d - 1)), (j, 0, n - 1)), (i, a)
)
Ym = F.shown("lap_Y", "Y", n, d)
Ypm = F.shown("lap_Yp", "Y'", n, d)
#: the relative output change ``‖Y − Y'‖_F / ‖Y‖_F`` of another walk ``W'`` (``Y' = W'x``)
DISTANCE = Quantity("distance", _label("lap_distance", r"\delta_{W'}"), NormF(Ym - Ypm) / NormF(Ym))

pi2_ = shown_base("lap_pi2", r"\pi''")
#: ``π'' = ½(π ⊙ r + Pᵀπ)``, ``r_i = Σ_j P_ij``
PI2 = Quantity(
    "pi2",
    pi2_[i],
    (pi_[i] * sp.Sum(P_[i, j], (j, 0, n - 1)) + sp.Sum(P_[j, i] * pi_[j], (j, 0, n - 1))) / 2,
    (i,),
)
P2_ = shown_base("lap_P2", "P''")
#: ``P'' = diag(π'')⁻¹ ½(diag(π) P + Pᵀ diag(π))``: the walk of ``W_rev``
P2 = Quantity("P2", P2_[i, j], (pi_[i] * P_[i, j] + pi_[j] * P_[j, i]) / (2 * pi2_[i]), (i, j))
Wrev = F.shown("lap_Wrev", r"W_{\mathrm{rev}}", n * d, n * d)
Pi2 = F.shown("lap_Pi2", r"\Pi''", n * d, n * d)
pi2m = F.shown("lap_pi2", r"\pi''", n, 1)
#: ``W_rev = Π''⁻¹ ½(ΠW + WᵀΠ)``, ``Π = diag(π) ⊗ I_d``, ``Π'' = diag(π'') ⊗ I_d``
W_REV = Quantity(
    "W_rev",
    Wrev,
    sp.Inverse(Pi2) * (Pi * Wm + Wm.T * Pi) / 2,
    where=(_PI_DEF, (Pi2, sp.KroneckerProduct(Diag(pi2m), Eye(d)))),
)
O2_ = shown_base("lap_O2", "O''")
#: ``W_rev``'s transports ``O''_ij = (W_rev)_ij / P''_ij`` satisfy ``O''_ji = O''_ijᵀ``
REV_TRANSPOSE = Quantity(
    "rev_transpose",
    O2_[j, i, b, a],
    O2_[i, j, a, b],
    (i, j, a, b),
    where=((O2_[i, j, a, b], Wrev[i * d + a, j * d + b] / P2_[i, j]),),
)
#: ``P''`` is stochastic ...
REV_STOCHASTIC = Quantity("rev_stochastic", sp.Sum(P2_[i, j], (j, 0, n - 1)), sp.S.One, (i,))
#: ... and reversible w.r.t. ``π''``
REV_BALANCE = Quantity("rev_balance", pi2_[i] * P2_[i, j], pi2_[j] * P2_[j, i], (i, j))

# the involution fit (paper_checks.laplacian_stats.involution_fit)
Qm = sp.MatrixSymbol("Q", d, d)
Qstar = F.shown("lap_Qstar", "Q^*", d, d)
Um = sp.MatrixSymbol("U", d, d)
Lam = sp.MatrixSymbol("Lambda", d, d)
Xm = sp.MatrixSymbol("x", n, d)
Zm = sp.MatrixSymbol("Z", n, d)
P2m = F.shown("lap_P2", "P''", n, n)
s_ = sp.Symbol("s")
sstar = _label("lap_sstar", "s^*")
lam_ = shown_base("lap_lam", r"\lambda")
#: the target operators ``P'' ⊗ sQ``
INVOLUTION_WALK = Expression("involution_walk", sp.KroneckerProduct(P2m, s_ * Qm))
#: over orthogonal involutions ``Q = Qᵀ = Q⁻¹`` ...
INVOLUTION = Chain("involution", (Qm, Qm.T, sp.Inverse(Qm)))
#: ... and scales ``s ≥ 0``
SCALE_NONNEG = Relation("scale", sp.GreaterThan(s_, 0))
#: ``Z = P''x`` (rows ``z_i = Σ_j P''_ij x_j``)
Z_DEF = Quantity("Z", Zm, P2m * Xm)
#: ``sym(Zᵀ Y) = U Λ Uᵀ`` (``U`` orthogonal, ``Λ`` diagonal: the eigen-decomposition)
EIGEN = Quantity("eigen", Sym(Zm.T * Ym), Um * Lam * Um.T)
#: the closed form ``Q* = U sign(Λ) Uᵀ`` ...
Q_STAR = Quantity("Q_star", Qstar, Um * SignDiag(Lam) * Um.T)
#: ... and ``s* = Σ_a |λ_a| / ‖Z‖_F²`` (``λ_a = Λ_aa``)
S_STAR = Quantity("s_star", sstar, sp.Sum(sp.Abs(lam_[a]), (a, 0, d - 1)) / NormF(Zm) ** 2)

#: the LAP hypothesis defects, (a)–(f) and self-adjointness (one test evaluates them together)
LAP_HYPOTHESES = (
    STOCHASTIC_DEFECT,
    BALANCE_DEFECT,
    BLOCK_BALANCE_DEFECT,
    TRANSPOSE_DEFECT,
    ORTHOGONALITY_DEFECT,
    ISOMETRY_DEFECT,
    SELF_ADJOINT_DEFECT,
)
#: every LAP formula, by its key in the claim's params
LAP = {
    f.name: f
    for f in (
        *LAP_HYPOTHESES,
        DIRICHLET_DEFECT,
        DIRICHLET_SPLIT,
        RADIUS_BOUND,
        RADIUS_STATUS,
        OUTPUT,
        DISTANCE,
        PI2,
        P2,
        W_REV,
        REV_TRANSPOSE,
        REV_STOCHASTIC,
        REV_BALANCE,
        INVOLUTION_WALK,
        INVOLUTION,
        SCALE_NONNEG,
        Z_DEF,
        EIGEN,
        Q_STAR,
        S_STAR,
    )
}

# ------------------------------------------------------------------------------------------------
# E2: the Procrustes defect of the summed transport (paper_checks.stats.procrustes_defect)
# ------------------------------------------------------------------------------------------------
TSm = F.shown("e2_TS", r"T_{\Sigma}", d, d)
sigma_ = shown_base("e2_sigma", r"\sigma")
#: the Procrustes defect over scales ``s`` and orthogonal ``Q``, and its closed form from the
#: singular values (the minimiser: ``Q`` the polar factor of ``T_Σ``, ``s = Σσ/d``)
PROCRUSTES_INNER = NormF(sp.MatAdd(TSm, -s_ * Qm, evaluate=False)) / NormF(TSm)
PROCRUSTES = Quantity(
    "procrustes",
    MinOver(PROCRUSTES_INNER, s_, Qm),
    sp.sqrt(1 - sp.Sum(sigma_[a], (a, 0, d - 1)) ** 2 / (d * sp.Sum(sigma_[a] ** 2, (a, 0, d - 1)))),
    where=((sigma_[a], SingularValue(TSm, a)),),
)

# ------------------------------------------------------------------------------------------------
# E5: when a predicted and an observed onset pattern agree (paper_checks.e5.sweep.agreement)
# ------------------------------------------------------------------------------------------------
#: coarse classes as numbers (the codes :func:`evaluate` compares; names as in ``paper_checks.e5.cells``)
E5_CLASSES = ("cluster", "stationary", "travelling", "standing", "coexisting", "incoherent")
c_pred, c_obs = _label("e5_c_pred", r"c_{\mathrm{pred}}"), _label("e5_c_obs", r"c_{\mathrm{obs}}")
k_pred, k_obs = _label("e5_k_pred", r"k_{\mathrm{pred}}"), _label("e5_k_obs", r"k_{\mathrm{obs}}")
agree = _label("e5_agree", r"\mathrm{agree}")


class ClassName(sp.Atom):
    """A coarse class (``\\mathrm{cluster}``), evaluated as its code (its index in :data:`E5_CLASSES`)."""

    is_commutative = True

    def __new__(cls, name: str):
        obj = super().__new__(cls)
        obj.name = name
        return obj

    def _hashable_content(self):
        return (self.name,)

    def sort_key(self, order=None):  # by name, not by the (per-process) string hash: a stable rendering
        return self.class_key(), (1, (self.name,)), sp.S.One.sort_key(), sp.S.One

    def _latex(self, printer):
        return r"\mathrm{" + self.name.removeprefix("e5_") + "}"

    def _numpycode(self, printer):
        return str(E5_CLASSES.index(self.name.removeprefix("e5_")))


CLUSTER, COEXISTING = ClassName("e5_cluster"), ClassName("e5_coexisting")
#: same coarse class and, unless the prediction is a cluster or coexisting patterns, the same ``|k|``
AGREEMENT = Equivalence(
    "agreement",
    agree,
    sp.And(
        sp.Eq(c_pred, c_obs),
        sp.Or(sp.Eq(c_pred, CLUSTER), sp.Eq(c_pred, COEXISTING), sp.Eq(sp.Abs(k_pred), sp.Abs(k_obs))),
    ),
)
