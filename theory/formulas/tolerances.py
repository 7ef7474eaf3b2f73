"""The conclusions' tolerances: each threshold an oracle decides with is a SymPy expression of the
instance's sizes (``n``, ``d``, ``H``), the float64 machine epsilon ``ε`` and norms of its data.

A :class:`Tolerance` sits in a conclusion's ``params``; the conclusion's tolerance text cites it as
``«name»`` (rendered ``r ≤ bound`` by ``sympy.latex``), and the oracle gets the threshold it uses by
:meth:`Tolerance.value` of that very expression on the instance — there is no second, hand-written
threshold (editing the expression changes what the oracle accepts). The factor 64 on ``ε`` is the
oracles' safety factor (:data:`theory.oracles.instances.ORACLE_SAFETY`); the size factor is the
number of rounded terms the residual accumulates (``n·d`` for an operator entry, ``n²·d`` for a
quadratic form, ``n`` for a softmax row, ...).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp

from ..rounding import EPS64
from . import H, compiled, d, n, value_names
from .notation import Delimited, Norm2, NormF

#: the float64 machine epsilon (its value: :data:`EPS`)
eps = sp.Symbol("varepsilon", positive=True)
EPS = EPS64


@dataclass(frozen=True)
class Tolerance:
    """``quantity ≤ bound``: the threshold of one check of a conclusion's oracle. ``quantity``: the
    LaTeX name of what is bounded (``r``: a relative residual, as the tolerance text says)."""

    name: str
    bound: Any
    quantity: str = "r"

    #: not a formula the statement states (``theory.statements.Conclusion.formulas`` leaves it out)
    is_tolerance = True

    def markdown(self) -> str:
        return f"${self.quantity} \\le {sp.latex(self.bound)}$"

    @functools.cached_property
    def _function(self):
        names = value_names(self.bound)
        return names, compiled(self.bound, names)

    def value(self, values: Mapping[str, Any] | None = None, **sizes: Any) -> float:
        """The threshold on the instance: ``bound`` evaluated (``lambdify``, as every formula) with
        ``ε`` = :data:`EPS` and the sizes / data ``values`` it names (``KeyError`` for a missing one)."""
        names, f = self._function
        env = {"varepsilon": EPS, **(values or {}), **sizes}
        missing = [nm for nm in names if nm not in env]
        if missing:
            raise KeyError(f"tolerance {self.name} needs values for {missing}")
        return float(f(*(env[nm] for nm in names)))

    def edited(self, **changes: Any) -> Tolerance:
        """A copy with some fields replaced (tolerance mutants are built this way)."""
        return replace(self, **changes)

    def __str__(self) -> str:
        return f"tolerance {self.name}"


W_, A_, T_, B_ = (sp.Symbol(s) for s in ("W", "A", "T", "B"))
_E9 = sp.Float(1e-9)

#: an entry of an ``n·d``-dimensional operator identity (sums of ``n·d`` rounded terms)
OPERATOR = Tolerance("operator", 64 * eps * n * d)
#: a quadratic form of the walk (``n`` blocks of ``n·d`` terms)
FORM = Tolerance("form", 64 * eps * n**2 * d)
#: a softmax row (``n`` terms)
ROW = Tolerance("row", 64 * eps * n)
#: a head mean / gated sum (``H`` heads of ``n`` terms)
HEADS = Tolerance("heads", 64 * eps * H * n)
#: a ring operator over every head (``n·H·d`` terms)
RING = Tolerance("ring", 64 * eps * n * H * d)
#: the eigenvalues of the dense ``W`` (``I - W``'s): ``|Im|`` and the distance outside the interval
SPECTRUM = Tolerance("spectrum", _E9 * n * d * sp.Max(1, Norm2(W_)), r"\delta")
#: a multiset distance of eigenvalues of a non-normal Kronecker product (only ``√ε``-accurate)
KRON_SPECTRUM = Tolerance("kron_spectrum", sp.Float(1e-6) * sp.Max(1, Norm2(A_) * Norm2(T_)), r"\delta")
#: a multiset distance of eigenvalues, and the entries of an eigenpair identity
EIGEN = Tolerance("eigen", sp.Float(1e-6), r"\delta")
#: the nearest-Kronecker miss of ``B`` and each block's distance to its projection on ``T_Σ``
KRONECKER = Tolerance("kronecker", _E9 * NormF(B_), r"\delta")
#: a null space by SVD: singular values below this (relative to ``max(1, σ_max)``) count as zero
RANK = Tolerance("rank", _E9, r"\sigma")
#: a null space of an ``n·d``-dimensional operator: its rounding level as the SVD threshold
KERNEL_RANK = Tolerance("kernel_rank", 64 * eps * n * d, r"\sigma")
#: two null spaces found at their rounding level agree: ``‖Δ Z‖``, ``‖C K‖`` relative to the norms
KERNEL = Tolerance("kernel", sp.Float(1e-7))
#: an mpmath value at 40 digits against its closed form
EXACT = Tolerance("exact", sp.Float(1e-30), r"\delta")


class MaxAbs(Delimited):
    """``max |M|``: the largest absolute entry of a value."""

    tex_left, tex_right, numpy_code = r"\max\left\lvert ", r"\right\rvert", "numpy.max(numpy.abs({}))"


#: heads attend alike: ``|A^h - A^1|`` entrywise, relative to the largest attention weight
EQUAL_HEADS = Tolerance("equal_heads", _E9 * MaxAbs(A_), r"\delta")
#: two spaces equal: the distance of their orthogonal projectors
SPAN = Tolerance("span", sp.Float(1e-6), r"\delta")
#: the growth rate of the selected wavenumber against the dense Jacobian's spectral abscissa
GROWTH = Tolerance("growth", sp.Float(1e-8))
