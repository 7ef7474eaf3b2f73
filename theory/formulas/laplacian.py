"""T3's further formulas: the matrix form of the flat connection, the kernel dimension, the scaled
transports and their spectral interval, and the facts T3's necessity witnesses state about their
data (spectra, forms at a probe, the negative eigenvalue of the inverse-transport case).

The notation SymPy lacks is written here once: :class:`Spec` (``spec M``), :class:`Within`
(``S ⊆ I``) and :class:`Approx` (``a ≈ b``), each rendered by ``sympy.latex``; ``dim ker M`` is
``Dim(Ker(M))`` of :mod:`theory.formulas.notation`. The oracles of :mod:`theory.oracles.laplacian` evaluate these expressions: matrix
expressions by :func:`matrix_value` (``lambdify`` at the instance's sizes), a witness's facts exactly
on its rational data (:func:`theory.oracles.laplacian.witness_facts`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import sympy as sp

from . import (
    DIRICHLET,
    DIRICHLET_CORRECTED,
    O_,
    PI_FORM,
    Identity,
    a,
    b,
    c,
    compiled,
    d,
    i,
    j,
    n,
    pi_,
    shown,
)
from .notation import Dim, Ker
from .spectral import Q_, SCALED_HI, SCALED_LO, s_
from .walks import Relation

# ------------------------------------------------------------------------------------------------
# notation
# ------------------------------------------------------------------------------------------------


class Spec(sp.Function):
    """``spec M``: the eigenvalues of a square matrix (evaluated by the oracles)."""

    nargs = 1

    def _latex(self, printer):
        return r"\operatorname{spec} " + printer._print(self.args[0])


class Within(sp.Function):
    """``S ⊆ I``: a set (a spectrum) inside another (an interval)."""

    nargs = 2

    def _latex(self, printer):
        return printer._print(self.args[0]) + r" \subseteq " + printer._print(self.args[1])


class Approx(sp.Function):
    """``a ≈ b``: ``a`` rounded to the decimals ``b`` is written with."""

    nargs = 2

    def _latex(self, printer):
        return printer._print(self.args[0]) + r" \approx " + printer._print(self.args[1])


#: the generator ``Δ = I - W`` as one ``nd × nd`` matrix
Delta = shown("Delta", r"\Delta", n * d, n * d)
#: the walk matrix ``P`` and the block-diagonal ``R = diag(R_i)`` as matrices
P_m = sp.MatrixSymbol("P", n, n)
R_m = shown("R", r"\operatorname{diag}\left(R_{i}\right)", n * d, n * d)


@functools.lru_cache(maxsize=64)
def _at_sizes(expr, n_: int, d_: int):
    """``expr`` with the sizes fixed (SymPy cannot print a symbolic-size identity) and the names of
    its matrices."""
    fixed = expr.xreplace({n: sp.Integer(n_), d: sp.Integer(d_)})
    return fixed, tuple(sorted({s.name for s in fixed.free_symbols if isinstance(s, sp.MatrixSymbol)}))


def matrix_value(expr, values: Mapping[str, Any]):
    """The matrix expression ``expr`` at the instance's sizes ``values["n"]``, ``values["d"]`` on the
    instance's matrices (by name): :func:`theory.formulas.compiled` (``lambdify``, compiled once) of
    the expression with the sizes fixed."""
    import numpy as np

    fixed, names = _at_sizes(expr, int(values["n"]), int(values["d"]))
    return np.asarray(compiled(fixed, names)(*(np.asarray(values[nm], float) for nm in names)), float)


# ------------------------------------------------------------------------------------------------
# T3.flat and T3.scaled
# ------------------------------------------------------------------------------------------------

#: T3.flat: ``Δ = R((I - P) ⊗ I_d)R^T`` with ``R = diag(R_i)`` (the matrix form of
#: :data:`theory.formulas.spectral.FLAT`)
FLAT_MATRIX = Identity("flat_matrix", Delta, R_m * sp.KroneckerProduct(sp.Identity(n) - P_m, sp.Identity(d)) * R_m.T)


def kernel_dimension(per_d) -> Identity:
    """T3.flat: ``dim ker Δ = per_d · d`` (``per_d``: the registry's number, 1 for irreducible ``P``)."""
    return Identity("kernel_dim", Dim(Ker(Delta)), sp.Integer(per_d) * d)


#: T3.scaled: the transports are scaled isometries, ``O_ij = s Q_ij`` (entry ``(a, b)``)
SCALED_TRANSPORT = Identity("scaled_transport", O_[i, j, a, b], s_ * Q_[i, j, a, b], (i, j, a, b))
#: T3.scaled: ``spec Δ ⊆ [1 - s, 1 + s]``
SCALED_SPECTRUM = Relation("scaled_spectrum", Within(Spec(Delta), sp.Interval(SCALED_LO, SCALED_HI)))

# ------------------------------------------------------------------------------------------------
# what T3's witnesses state about their data
# ------------------------------------------------------------------------------------------------


def spectrum(values: Sequence[Any]) -> Identity:
    """``spec Δ = {values}`` (SymPy strings or numbers: the exact eigenvalues, each once; the
    oracle also asks for ``nd`` of them, so a multiset with repeats cannot be stated this way)."""
    return Identity("spectrum", Spec(Delta), sp.FiniteSet(*(sp.sympify(v) for v in values)))


def form_value(value) -> Identity:
    """``<x, Δx>_π = value`` at the witness's probe ``x`` (the expression of :data:`PI_FORM`)."""
    return Identity("form", PI_FORM, sp.sympify(value))


def dirichlet_value(value) -> Identity:
    """The Dirichlet sum ``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` (T3.dirichlet's right side) ``= value``."""
    return Identity("dirichlet_value", DIRICHLET.rhs, sp.sympify(value))


#: L3's stochasticity correction ``Σ_i π_i (1 − Σ_j P_ij) ‖x_i‖²`` (its identity's right side minus the
#: Dirichlet sum)
CORRECTION = DIRICHLET_CORRECTED.rhs - DIRICHLET.rhs


def correction_value(value) -> Identity:
    """L3.identity's correction term ``= value`` at the witness's probe."""
    return Identity("correction", CORRECTION, sp.sympify(value))


#: T3.c1.w2: the transports kept, ``O_ji = O_ij^{-1}`` (entry ``(a, c)`` of ``O_ij O_ji = I``)
INVERSE = Identity(
    "inverse", sp.Sum(O_[i, j, a, b] * O_[j, i, b, c], (b, 0, d - 1)), sp.KroneckerDelta(a, c), (i, j, a, c)
)
lam_neg = sp.Symbol("lambda_-")


def negative_eigenvalue(value, digits: int) -> Relation:
    """``λ₋ ≈ value``: the negative real eigenvalue, ``value`` rounded to ``digits`` decimals."""
    return Relation("negative", Approx(lam_neg, sp.Float(str(value), digits)))


# ------------------------------------------------------------------------------------------------
# T3's notes
# ------------------------------------------------------------------------------------------------
z_ = sp.Symbol("z")
#: the weaker form: with (a), orthogonal ``O`` and a positive stationary ``π`` (no reversibility),
#: ``spec Δ ⊆ {z : |z - 1| ≤ 1}``
DISK = Relation("disk", Within(Spec(Delta), sp.ConditionSet(z_, sp.Abs(z_ - 1) <= 1, sp.S.Complexes)))

#: the gauge-free form on the blocks ``B_ij = P_ij O_ij``: ``B_ij = p_ij Q_ij`` (``Q_ij`` orthogonal) with
#: stochastic weights ...
B_, p_, N_ = sp.IndexedBase("B"), sp.IndexedBase("p"), sp.IndexedBase("N")
GAUGE_FREE = Identity("gauge_free", B_[i, j, a, b], p_[i, j] * Q_[i, j, a, b], (i, j, a, b))
GAUGE_FREE_ROWS = Identity("rows", sp.Sum(p_[i, j], (j, 0, n - 1)), sp.S.One, (i,))
#: ... and block detailed balance ``π_i B_ij = π_j B_ji^T`` (entry ``(a, b)``)
BLOCK_BALANCE = Identity("block_balance", pi_[i] * B_[i, j, a, b], pi_[j] * B_[j, i, b, a], (i, j, a, b))
#: balanced (Frobenius) norms, ``π_i ‖B_ij‖ = π_j ‖B_ji‖``: implied by block balance, not enough for it
NORM_BALANCE = Identity(
    "norm_balance",
    pi_[i] * N_[i, j],
    pi_[j] * N_[j, i],
    (i, j),
    (),
    ((N_[i, j], sp.sqrt(sp.Sum(B_[i, j, a, b] ** 2, (a, 0, d - 1), (b, 0, d - 1)))),),
)
