"""One SymPy expression per identity: the formulas the statements state, the oracles evaluate and
the derivations prove.

An :class:`Identity` is ``lhs = rhs`` for every value of its ``free`` indices, over symbolic sizes
(``n`` tokens, ``d`` features, ``H`` heads): ``Sum``/``Indexed`` with symbolic bounds, or
``MatrixSymbol``/``KroneckerProduct`` with symbolic shapes. It may carry ``premises`` (equations it
assumes, e.g. symmetric scores) and ``where`` definitions (``S_ij = ...``). The registry holds these
objects in a statement's ``params``; THEOREMS.md shows :meth:`Identity.markdown` (``sympy.latex``
of the same objects); the oracles call :func:`evaluate` (``lambdify`` of the same objects on a numeric
instance — no second hand-written formula); the general derivations of
:mod:`theory.derivations.general` rewrite the same objects to an exact zero for symbolic sizes.

Index ranges: ``i, j, k`` run over ``0..n-1`` (tokens), ``a, b, c`` over ``0..d-1`` (features),
``h, l`` over ``0..H-1`` (heads), ``m`` over ``0..n-1`` (ring offsets).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import sympy as sp

if TYPE_CHECKING:  # numpy is imported where a formula is evaluated (the registry and renderer never need it)
    import numpy as np

n, d, H = sp.symbols("n d H", integer=True, positive=True)
i, j, k, m, a, b, c, h, l = sp.symbols("i j k m a b c h l", integer=True, nonnegative=True)
dk = sp.Symbol("d_k", positive=True)

#: the range of every index symbol: 0 .. size - 1
RANGE: dict[sp.Symbol, sp.Symbol] = {i: n, j: n, k: n, m: n, a: d, b: d, c: d, h: H, l: H}


class Vec(sp.MatrixExpr):
    """``vec(M)``: the columns of ``M`` stacked (column-major), so ``vec(X^T)`` is the token-major
    stacking ``X.reshape(-1)`` and ``vec(X)`` the feature-major one."""

    def __new__(cls, M):
        return super().__new__(cls, sp.sympify(M))

    @property
    def arg(self):
        return self.args[0]

    @property
    def shape(self):
        r, q = self.arg.shape
        return (r * q, sp.S.One)

    def _entry(self, p, q, **kwargs):
        r = self.arg.shape[0]
        return self.arg[sp.Mod(p, r), sp.floor(p / r)]

    def _latex(self, printer):
        return r"\operatorname{vec}\left(" + printer._print(self.arg) + r"\right)"

    def _numpycode(self, printer):
        return "numpy.reshape(numpy.transpose(" + printer._print(self.arg) + "), (-1, 1))"

    _pythoncode = _numpycode


class Shown(sp.MatrixSymbol):
    """A matrix symbol displayed as a LaTeX name (``\\mathrm{SHA}(X)``) and evaluated from the
    instance value of its plain ``name``."""

    _display: ClassVar[dict[str, str]] = {}

    def _latex(self, printer):
        return self._display.get(self.name, self.name)


def shown(name: str, latex: str, rows, cols) -> Shown:
    Shown._display[name] = latex
    return Shown(name, rows, cols)


def _tex(e) -> str:
    return sp.latex(e, long_frac_ratio=0)


@dataclass(frozen=True)
class Identity:
    """``lhs = rhs`` for every value of the ``free`` indices, assuming ``premises`` (pairs
    ``(l, r)``: ``l = r`` for every value of the indices they contain) with the ``where``
    definitions (pairs ``(Indexed head, expression)``, evaluated in order)."""

    name: str
    lhs: Any
    rhs: Any
    free: tuple[sp.Symbol, ...] = ()
    premises: tuple[tuple[Any, Any], ...] = ()
    where: tuple[tuple[Any, Any], ...] = ()

    def markdown(self) -> str:
        out = f"${_tex(self.lhs)} = {_tex(self.rhs)}$"
        if self.where:
            out += " where " + ", ".join(f"${_tex(hd)} = {_tex(e)}$" for hd, e in self.where)
        if self.premises:
            out += " if " + " and ".join(f"${_tex(l_)} = {_tex(r_)}$" for l_, r_ in self.premises)
        return out

    def edited(self, **changes: Any) -> Identity:
        """A copy with some fields replaced (formula mutants are built this way)."""
        return replace(self, **changes)

    def __str__(self) -> str:  # the registry's params listing shows the formula's name
        return f"formula {self.name}"


# ------------------------------------------------------------------------------------------------
# numeric evaluation: lambdify of the very expressions above
# ------------------------------------------------------------------------------------------------
def value_names(expr) -> tuple[str, ...]:
    """The names of the values ``expr`` is evaluated on (its symbols and matrix symbols, sorted): the
    arguments of :func:`compiled`."""
    out = set()
    for s in expr.free_symbols:
        if isinstance(s, sp.Indexed):
            continue
        if isinstance(s, (sp.Symbol, sp.MatrixSymbol)):
            out.add(s.name)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=512)
def compiled(expr, names: tuple[str, ...]):
    """``lambdify`` of ``expr`` over ``names`` (numpy), compiled once per expression."""
    return sp.lambdify([sp.Symbol(nm) for nm in names], expr, modules=["numpy"])


def index_size(idx, env) -> int:
    """The range of the index symbol ``idx`` on the instance ``env`` (its size by :data:`RANGE`)."""
    return int(env[RANGE[idx].name])


def tabulate(expr, indices, env: Mapping[str, Any]) -> np.ndarray:
    """``expr`` evaluated at every value of ``indices`` (an array of that shape; a plain value
    when ``indices`` is empty)."""
    import numpy as np

    names = value_names(expr)
    idx_names = {x.name for x in indices}
    missing = [nm for nm in names if nm not in env and nm not in idx_names]
    if missing:
        raise KeyError(f"formula needs values for {missing}")
    f = compiled(expr, names)
    if not indices:
        return np.asarray(f(*(env[nm] for nm in names)))
    shape = tuple(index_size(x, env) for x in indices)
    pos = {x.name: p for p, x in enumerate(indices)}
    vals = [
        np.asarray(f(*(combo[pos[nm]] if nm in pos else env[nm] for nm in names)))
        for combo in itertools.product(*(range(s) for s in shape))
    ]
    # float, or complex where the values are (roots of unity); a batch of probes (an instance value
    # with trailing axes, e.g. every unit vector x at once) adds its axes after the indices'
    out = np.stack(np.broadcast_arrays(*vals))
    return out.reshape(shape + out.shape[1:])


def _head_name(head) -> str:
    return head.base.label.name if isinstance(head, sp.Indexed) else head.name


def environment(ident, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` plus every ``where`` definition of ``ident`` (an object with ``where``, or the
    ``(head, body)`` pairs themselves), tabulated in order: an ``Indexed`` head over its indices, a
    ``Symbol`` / ``MatrixSymbol`` head whole; a value the instance gives under a defined name is kept
    (e.g. T2's walk matrix ``P`` in another gauge)."""
    env = dict(values)
    for head, expr in getattr(ident, "where", ident):
        name = _head_name(head)
        if values.get(name) is None:
            env[name] = tabulate(expr, tuple(head.indices) if isinstance(head, sp.Indexed) else (), env)
    return env


def evaluate(ident: Identity, values: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(lhs, rhs)`` of ``ident`` on the instance ``values`` (name -> array; sizes ``n``, ``d``,
    ``H`` as ints), tabulated over its free indices."""
    env = environment(ident, values)
    lhs, rhs = tabulate(ident.lhs, ident.free, env), tabulate(ident.rhs, ident.free, env)
    # a side free of the probes (e.g. ``0``) gets the probe axes of the other as length-1 axes
    lhs = lhs.reshape(lhs.shape + (1,) * (rhs.ndim - lhs.ndim))
    rhs = rhs.reshape(rhs.shape + (1,) * (lhs.ndim - rhs.ndim))
    return lhs, rhs


def premise_residuals(ident: Identity, values: Mapping[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(lhs, rhs), ...]`` of every premise of ``ident`` over the indices it contains."""
    env = environment(ident, values)
    out = []
    for l_, r_ in ident.premises:
        idx = tuple(sorted((s for s in (l_ - r_).free_symbols if s in RANGE), key=lambda s: s.name))
        out.append((tabulate(l_, idx, env), tabulate(r_, idx, env)))
    return out


# ------------------------------------------------------------------------------------------------
# the formulas
# ------------------------------------------------------------------------------------------------
pi_, P_, O_, x_ = (sp.IndexedBase(s) for s in ("pi", "P", "O", "x"))


def _transported(sign=-1):
    """``x_{ia} + sign * sum_b O_{ijab} x_{jb}``: component ``a`` of ``x_i ± O_ij x_j``."""
    return x_[i, a] + sign * sp.Sum(O_[i, j, a, b] * x_[j, b], (b, 0, d - 1))


#: ``<x, (I - W) x>_pi``, ``(W x)_i = sum_j P_ij O_ij x_j``, read literally
PI_FORM = sp.Sum(
    pi_[i]
    * sp.Sum(
        x_[i, a] * (x_[i, a] - sp.Sum(P_[i, j] * sp.Sum(O_[i, j, a, b] * x_[j, b], (b, 0, d - 1)), (j, 0, n - 1))),
        (a, 0, d - 1),
    ),
    (i, 0, n - 1),
)
#: ``sum_ij pi_i P_ij ||x_i - O_ij x_j||^2``
DIRICHLET_SUM = sp.Sum(pi_[i] * P_[i, j] * sp.Sum(_transported(-1) ** 2, (a, 0, d - 1)), (i, 0, n - 1), (j, 0, n - 1))

#: T3's hypotheses as equations (and the derivations' rewrite rules): (a) rows sum to 1
STOCHASTIC = Identity("stochastic", sp.Sum(P_[i, j], (j, 0, n - 1)), sp.S.One, (i,))
#: (b) detailed balance
BALANCE = Identity("balance", pi_[i] * P_[i, j], pi_[j] * P_[j, i], (i, j))
#: (c1) every O_ij (on the support) orthogonal
ORTHOGONAL = Identity(
    "orthogonal", sp.Sum(O_[i, j, a, b] * O_[i, j, a, c], (a, 0, d - 1)), sp.KroneckerDelta(b, c), (i, j, b, c)
)
#: (c2) O_ji = O_ij^T (on two-way edges)
TRANSPOSE = Identity("transpose", O_[j, i, b, a], O_[i, j, a, b], (i, j, a, b))

#: T3's Dirichlet identity
DIRICHLET = Identity("dirichlet", PI_FORM, sp.Rational(1, 2) * DIRICHLET_SUM)

y_ = sp.IndexedBase("y")


def walk_component(v, sign=-1):
    """Component ``a`` of ``((I + sign·W) v)_i``, ``(W v)_i = Σ_j P_ij O_ij v_j``."""
    return v[i, a] + sign * sp.Sum(P_[i, j] * sp.Sum(O_[i, j, a, b] * v[j, b], (b, 0, d - 1)), (j, 0, n - 1))


#: T3: ``Δ = I - W`` is self-adjoint in ``<·,·>_π``: ``<x, Δy>_π = <Δx, y>_π``
SELF_ADJOINT = Identity(
    "self_adjoint",
    sp.Sum(pi_[i] * sp.Sum(x_[i, a] * walk_component(y_), (a, 0, d - 1)), (i, 0, n - 1)),
    sp.Sum(pi_[i] * sp.Sum(walk_component(x_) * y_[i, a], (a, 0, d - 1)), (i, 0, n - 1)),
)
#: T3: ``<x, (2I - Δ)x>_π = ½ Σ_ij π_i P_ij ||x_i + O_ij x_j||²`` (so spec Δ ⊂ [0, 2] once Δ is self-adjoint)
UPPER_FORM = Identity(
    "upper_form",
    sp.Sum(pi_[i] * sp.Sum(x_[i, a] * walk_component(x_, +1), (a, 0, d - 1)), (i, 0, n - 1)),
    sp.Rational(1, 2)
    * sp.Sum(pi_[i] * P_[i, j] * sp.Sum(_transported(+1) ** 2, (a, 0, d - 1)), (i, 0, n - 1), (j, 0, n - 1)),
)

#: L3: the Dirichlet identity with the stochasticity correction ``sum_i pi_i (1 - r_i) |x_i|^2``
DIRICHLET_CORRECTED = Identity(
    "dirichlet_corrected",
    PI_FORM,
    sp.Rational(1, 2) * DIRICHLET_SUM
    + sp.Sum(pi_[i] * (1 - sp.Sum(P_[i, j], (j, 0, n - 1))) * sp.Sum(x_[i, a] ** 2, (a, 0, d - 1)), (i, 0, n - 1)),
)

# T1 / L1: token-major stacking
A_m, T_m, X_m = sp.MatrixSymbol("A", n, n), sp.MatrixSymbol("T", d, d), sp.MatrixSymbol("X", n, d)
Y_m = shown("Y", r"\mathrm{SHA}(X)", n, d)

#: T1: ``SHA(X) = A X T^T``
SHA = Identity("sha", Y_m, A_m * X_m * T_m.T)
#: T1: ``vec(SHA(X)^T) = (A ⊗ T) vec(X^T)`` (token-major)
SHA_STACKED = Identity("stacked", Vec(Y_m.T), sp.KroneckerProduct(A_m, T_m) * Vec(X_m.T))
#: L1: ``vec((A X T^T)^T) = (A ⊗ T) vec(X^T)``
L1_TOKEN_MAJOR = Identity("token_major", Vec((A_m * X_m * T_m.T).T), sp.KroneckerProduct(A_m, T_m) * Vec(X_m.T))
#: L1: ``vec(A X T^T) = (T ⊗ A) vec(X)``
L1_FEATURE_MAJOR = Identity("feature_major", Vec(A_m * X_m * T_m.T), sp.KroneckerProduct(T_m, A_m) * Vec(X_m))

# T4: softmax attention with symmetric scores
X_, M_, Z_, A_, mu_, Ma_ = (sp.IndexedBase(s) for s in ("X", "M", "Z", "A", "mu", "Ma"))
S_ = sp.IndexedBase("S", real=True)  # real scores: log(e^S) = S
T4_WHERE = (
    (S_[i, j], sp.Sum(X_[i, a] * M_[a, b] * X_[j, b], (a, 0, d - 1), (b, 0, d - 1)) / sp.sqrt(dk) + mu_[i, j]),
    (Z_[i], sp.Sum(sp.exp(S_[i, k]), (k, 0, n - 1))),
    (A_[i, j], sp.exp(S_[i, j]) / Z_[i]),
)
T4_SYMMETRIC = ((M_[a, b], M_[b, a]),)
#: T4: symmetric scores give detailed balance with ``pi_i = Z_i`` (``mu``: the mask, 0 without one)
T4_BALANCE = Identity("balance", Z_[i] * A_[i, j], Z_[j] * A_[j, i], (i, j), T4_SYMMETRIC, T4_WHERE)
#: T4: the Kolmogorov triangle identity (every triple; ``Ma`` the antisymmetric part of ``M``)
T4_TRIANGLE = Identity(
    "triangle",
    sp.log(A_[i, j]) + sp.log(A_[j, k]) + sp.log(A_[k, i]) - sp.log(A_[i, k]) - sp.log(A_[k, j]) - sp.log(A_[j, i]),
    2 / sp.sqrt(dk) * sp.Sum((X_[j, a] - X_[i, a]) * Ma_[a, b] * (X_[k, b] - X_[i, b]), (a, 0, d - 1), (b, 0, d - 1)),
    (i, j, k),
    (),
    (*T4_WHERE, (Ma_[a, b], (M_[a, b] - M_[b, a]) / 2)),
)
#: T4: ... and ``pi_i = Z_i`` is stationary
T4_STATIONARY = Identity("stationary", sp.Sum(Z_[i] * A_[i, j], (i, 0, n - 1)), Z_[j], (j,), T4_SYMMETRIC, T4_WHERE)

# T2: multi-head attention, heads ``A[h, i, j]``, ``T[h, a, b]`` (distinct symbols by construction)
Ah_, Th_, g_, B_ = (sp.IndexedBase(s) for s in ("A", "T", "g", "B"))
_T2_WHERE = (
    (P_[i, j], sp.Sum(Ah_[h, i, j], (h, 0, H - 1)) / H),
    (g_[h, i, j], Ah_[h, i, j] / sp.Sum(Ah_[l, i, j], (l, 0, H - 1))),
    (O_[i, j, a, b], H * sp.Sum(g_[h, i, j] * Th_[h, a, b], (h, 0, H - 1))),
    (B_[i, j, a, b], sp.Sum(Ah_[h, i, j] * Th_[h, a, b], (h, 0, H - 1))),
)
#: T2's hypothesis (heads): every head row-stochastic
HEADS_STOCHASTIC = Identity("heads", sp.Sum(Ah_[h, i, j], (j, 0, n - 1)), sp.S.One, (h, i))
#: T2: ``P = mean_h A^h`` is row-stochastic (when every head is: hypothesis T2.heads)
T2_ROWS = Identity(
    "rows",
    sp.Sum(P_[i, j], (j, 0, n - 1)),
    sp.S.One,
    (i,),
    ((sp.Sum(Ah_[h, i, j], (j, 0, n - 1)), sp.S.One),),
    _T2_WHERE[:1],
)
#: T2: the gates are convex weights
T2_GATES = Identity("gates", sp.Sum(g_[h, i, j], (h, 0, H - 1)), sp.S.One, (i, j), (), _T2_WHERE[1:2])
#: T2: ``P_ij O_ij = B_ij``
T2_BLOCKS = Identity("blocks", P_[i, j] * O_[i, j, a, b], B_[i, j, a, b], (i, j, a, b), (), _T2_WHERE)

# T6: ring of n tokens, heads ``A0^h`` at the homogeneous state, circulant under (H3): ``zeta^n = 1``
a_, v_, A0_ = sp.IndexedBase("a"), sp.IndexedBase("v"), sp.IndexedBase("A0")
zeta = sp.Symbol("zeta")


def fourier(hat_sign: int = 1, shift=1) -> Identity:
    """T6: component ``c`` of token ``i`` of ``J(φ_k ⊗ v)``, ``J = block(Σ_h A0^h_ij T_h) - I``,
    ``φ_k(j) = ζ^j``, equals that of ``φ_k ⊗ (M(k) - shift·I)v``, ``M(k) = Σ_h â_h(k) T_h``,
    ``â_h(k) = Σ_m a_h(m) ζ^(hat_sign·m)`` with the kernel ``a_h(m) = A0^h_{0m}`` (row 0).
    Under (H3) ``A0^h_ij = a_h((j - i) mod n)``: a rewrite rule of the derivation, not part of the
    formula, so a non-circulant instance fails it."""
    Tv = sp.Sum(Th_[h, c, b] * v_[b], (b, 0, d - 1))
    lhs = sp.Sum(sp.Sum(A0_[h, i, j] * Tv, (h, 0, H - 1)) * zeta**j, (j, 0, n - 1)) - zeta**i * v_[c]
    hat = sp.Sum(a_[h, m] * zeta ** (hat_sign * m), (m, 0, n - 1))
    rhs = zeta**i * (sp.Sum(hat * Tv, (h, 0, H - 1)) - shift * v_[c])
    return Identity("fourier", lhs, rhs, (i, c), (), ((a_[h, m], A0_[h, 0, m]),))


#: T6's Fourier block-diagonalisation
FOURIER = fourier()

# T5: single head, Δ = I - A ⊗ T with T an involution: eigenvectors u ⊗ f
u_, f_, A2_, T2_ = sp.IndexedBase("u"), sp.IndexedBase("f"), sp.IndexedBase("A"), sp.IndexedBase("T")
lam = sp.Symbol("lambda")
#: component ``(i, a)`` of ``(I - A ⊗ T)(u ⊗ f)``
_KRON_UF = u_[i] * f_[a] - sp.Sum(A2_[i, j] * T2_[a, b] * u_[j] * f_[b], (j, 0, n - 1), (b, 0, d - 1))
_EIGEN_A = (sp.Sum(A2_[i, j] * u_[j], (j, 0, n - 1)), lam * u_[i])


def t5_eigen(sigma: int, coefficient) -> Identity:
    """T5: ``(I - A ⊗ T)(u ⊗ f) = coefficient · (u ⊗ f)`` if ``A u = λ u`` and ``T f = sigma·f``."""
    T_f = (sp.Sum(T2_[a, b] * f_[b], (b, 0, d - 1)), sigma * f_[a])
    return Identity(
        "on_fix" if sigma > 0 else "on_minus", _KRON_UF, coefficient * u_[i] * f_[a], (i, a), (_EIGEN_A, T_f)
    )


#: T5: on Fix(T) the eigenvalue is 1 - λ; on the -1 eigenspace 1 + λ
T5_ON_FIX = t5_eigen(+1, 1 - lam)
T5_ON_MINUS = t5_eigen(-1, 1 + lam)
