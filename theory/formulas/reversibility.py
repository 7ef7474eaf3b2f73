"""T4's and T5's further formulas (reversibility of softmax attention; the single-head involution
case): the support and size premises of T4, the "if" direction of T4's criterion and its
affinely-collinear case, the single-head Laplacian ``Δ = I - A ⊗ T`` with its kernel, and the
numbers T5's witnesses state. :class:`theory.formulas.Identity` objects (or
:class:`theory.formulas.walks.Relation`) over symbolic sizes, with the index conventions and the
shared symbols of :mod:`theory.formulas`; the registry cites them (``«name»``), THEOREMS.md renders
them with ``sympy.latex`` and the oracles evaluate them (:func:`theory.formulas.evaluate`).

Notation SymPy lacks (``I`` and ``𝟏`` of symbolic size for numpy, ``ker``, ``Fix``, ``dim``) is
written here once: each class has its ``_latex`` and its numpy evaluation (``_numpycode``; the null
spaces are those of the oracles, :func:`theory.oracles.instances.null_space`).
"""

from __future__ import annotations

import sympy as sp

from . import A_, O_, P_, T4_TRIANGLE, X_, A_m, Identity, T_m, a, b, d, i, j, mu_, n, pi_
from .notation import Dim, Eye, Fix, Ker, Ones
from .spectral import d_key
from .walks import Relation, Shape

# ------------------------------------------------------------------------------------------------
# notation: matrices of symbolic size, kernels, fixed spaces, dimensions
# ------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------
# T4: the hypothesis' support and size, "if" of the criterion, affinely collinear tokens
# ------------------------------------------------------------------------------------------------
#: T4.softmax: the layer weights of the bilinear form (``d_k × d``: ``nn.Linear`` out × in)
SHAPE_WQ = Shape("W_Q", sp.MatrixSymbol("W_Q", d_key, d))
SHAPE_WK = Shape("W_K", sp.MatrixSymbol("W_K", d_key, d))
#: T4: no mask, the offsets ``μ`` of the scores vanish
NO_MASK = Identity("no_mask", mu_[i, j], sp.S.Zero, (i, j))
#: T4.softmax: full support, every weight of the attention (T4.softmax's ``attention``) positive
POSITIVE = Relation("positive", sp.StrictGreaterThan(A_[i, j], 0), (i, j))
#: T4.softmax: at least three tokens (a triangle); T4.causal: at least two (an edge)
SOFTMAX_SIZE = Relation("size", sp.GreaterThan(n, 3))
CAUSAL_SIZE = Relation("size", sp.GreaterThan(n, 2))

#: T4.criterion, "if": where T4.triangle's right side vanishes on every triple (the premise), the
#: attention is reversible with ``π_i = A_0i / A_i0`` (Kolmogorov: fix ``π_0 = 1``, go along
#: ``0 → i``; the balanced cycles make every path give the same ratio)
CONVERSE = Identity(
    "converse",
    pi_[i] * A_[i, j],
    pi_[j] * A_[j, i],
    (i, j),
    ((T4_TRIANGLE.rhs, sp.S.Zero),),
    (*T4_TRIANGLE.where, (pi_[i], A_[0, i] / A_[i, 0])),
)

p_, v_, t_ = sp.IndexedBase("p"), sp.IndexedBase("v"), sp.IndexedBase("t")
#: T4.criterion: symmetric scores are not necessary: for affinely collinear tokens
#: ``x_i = p + t_i v`` the triangle's right side vanishes for every ``M`` (``v^T M_a v = 0``), so
#: :data:`CONVERSE` applies (any two tokens are affinely collinear)
COLLINEAR = Identity(
    "collinear",
    T4_TRIANGLE.rhs,
    sp.S.Zero,
    tuple(T4_TRIANGLE.free),
    (),
    ((X_[i, a], p_[a] + t_[i] * v_[a]), T4_TRIANGLE.where[-1]),
)

# ------------------------------------------------------------------------------------------------
# T5: the single-head Laplacian, its kernel, the witnesses' numbers
# ------------------------------------------------------------------------------------------------
Delta_m = sp.MatrixSymbol("Delta", n * d, n * d)
#: T5: the single-head generator, token-major: ``Δ = I - A ⊗ T``
LAPLACIAN = Identity("laplacian", Delta_m, Eye(n * d) - sp.KroneckerProduct(A_m, T_m))
#: T5: the connection walk it is: ``P = A`` and every ``O_ij = T`` (T1's block definitions)
WALK_P = Identity("walk_p", P_[i, j], A_m[i, j], (i, j))
WALK_O = Identity("walk_o", O_[i, j, a, b], T_m[a, b], (i, j, a, b))
#: T5.kernel: ``ker Δ = 𝟏 ⊗ Fix(T)`` (the spaces, compared as spans of their bases)
KERNEL_SPACE = Identity("kernel_space", Ker(Delta_m), sp.KroneckerProduct(Ones(n, 1), Fix(T_m)))
#: T5.softmax.w1: without full support the kernel is larger than ``𝟏 ⊗ Fix(T)``
KERNEL_EXCESS = Relation("excess", sp.StrictGreaterThan(Dim(Ker(Delta_m)), Dim(Fix(T_m))))
#: T5.involution.w2: ``T`` an involution
INVOLUTION = Identity("involution", T_m**2, Eye(d))
#: T5.reversible.w1: the Kolmogorov ratio of the cycle ``0 → 1 → 2 → 0`` (1 for a reversible walk)
cycle_ratio = sp.Symbol("r")
CYCLE_RATIO = Identity("ratio", cycle_ratio, A_m[0, 1] * A_m[1, 2] * A_m[2, 0] / (A_m[0, 2] * A_m[2, 1] * A_m[1, 0]))
UNBALANCED = Relation("unbalanced", sp.Ne(cycle_ratio, 1))
