"""T6's pattern-selection formulas at the matrix level: the Fourier modes and their eigen-relation,
the selection ``k* = argmax_k`` of the spectral abscissa of ``M(k) - I``, the growth ``σ``, the
conjugation symmetry ``M(-k) = conj M(k)`` and the inhomogeneous state of (H2)'s witness.

SymPy has no notation for the spectral abscissa, the leading eigenvalue or an argmax over the ring's
wavenumbers, so this module writes them (:class:`Abscissa`, :class:`Leading`, :class:`ArgMaxK`,
:class:`AtK`, :class:`MinusK`, :class:`MinusI`, :class:`Conj`): each renders with ``_latex`` and evaluates with
``_numpycode`` (so :func:`theory.formulas.evaluate` / :func:`theory.formulas.tabulate` lambdify the
same objects THEOREMS.md shows). A *family over k* (``M(k)`` for every ``k = 0..n-1``) is evaluated
as an array with ``k`` on its leading axis: ``ArgMaxK``, ``AtK`` and ``MinusK`` read that axis, and
``Abscissa``, ``Leading``, ``MinusI`` act on the trailing two (one matrix or a whole family).
"""

from __future__ import annotations

import sympy as sp

from . import X_, Identity, c, d, j, k, n, shown, zeta
from .notation import MatrixOf
from .spectral import k_star, sigma_, xstar_
from .walks import ZETA, Relation, shown_base


# ------------------------------------------------------------------------------------------------
# notation SymPy lacks
# ------------------------------------------------------------------------------------------------
class MinusI(MatrixOf):
    """``X - I`` (``I`` the identity of ``X``'s size; SymPy's ``Identity`` of a symbolic size does
    not lambdify), for one matrix or a family."""

    def _entry(self, p, q, **kwargs):
        return self.args[0][p, q] - sp.KroneckerDelta(p, q)

    def _latex(self, printer):
        return r"\left(" + printer._print(self.args[0]) + r" - I\right)"

    def _numpycode(self, printer):
        x = printer._print(self.args[0])
        return f"(({x}) - numpy.eye(numpy.shape({x})[-1]))"


class _OfMatrix(sp.Expr):
    """A number computed from a matrix (or, batched, from each matrix of a family)."""

    def __new__(cls, X):
        return super().__new__(cls, sp.sympify(X))

    def _arg(self, printer) -> str:
        """The matrix, in parentheses (``X - I`` brings its own)."""
        x = printer._print(self.args[0])
        return x if isinstance(self.args[0], MinusI) else r"\left(" + x + r"\right)"


class Abscissa(_OfMatrix):
    """The spectral abscissa ``max Re spec X``."""

    is_real = True

    def _latex(self, printer):
        return r"\max \operatorname{Re} \operatorname{spec}" + self._arg(printer)

    def _numpycode(self, printer):
        return f"numpy.amax(numpy.real(numpy.linalg.eigvals({printer._print(self.args[0])})), axis=-1)"


class Leading(_OfMatrix):
    """The eigenvalue of ``X`` with the largest real part (complex)."""

    def _latex(self, printer):
        return r"\lambda_{\max \operatorname{Re}}" + self._arg(printer)

    def _numpycode(self, printer):
        ev = f"numpy.linalg.eigvals({printer._print(self.args[0])})"
        return f"(lambda e: numpy.take_along_axis(e, numpy.argmax(e.real, axis=-1)[..., None], -1)[..., 0])({ev})"


class ArgMaxK(sp.Expr):
    """``argmax_k f(k)`` over the ring's wavenumbers ``k = 0..n-1`` (the family's leading axis). A
    conjugate pair ``k``, ``n - k`` ties (``M(-k) = conj M(k)``): either is ``k*``, and what the
    statement derives from it (``Re σ``, the real pattern) is the same for both."""

    def __new__(cls, f):
        return super().__new__(cls, sp.sympify(f))

    is_integer = True

    def _latex(self, printer):
        return r"\operatorname{argmax}_{k} " + printer._print(self.args[0])

    def _numpycode(self, printer):
        f = printer._print(self.args[0])
        return f"int(numpy.argmax({f}, axis=0))"


class AtK(sp.Expr):
    """``f(k)`` at ``k = value`` (a member of a family)."""

    def __new__(cls, f, value):
        return super().__new__(cls, sp.sympify(f), sp.sympify(value))

    def _latex(self, printer):
        f, value = self.args
        return r"\left. " + printer._print(f) + r" \right|_{k = " + printer._print(value) + "}"

    def _numpycode(self, printer):
        f, value = (printer._print(x) for x in self.args)
        return f"numpy.asarray({f})[int({value})]"


class Conj(MatrixOf):
    """The entrywise complex conjugate ``\\overline{X}``."""

    def _entry(self, p, q, **kwargs):
        return sp.conjugate(self.args[0][p, q])

    def _latex(self, printer):
        return r"\overline{" + printer._print(self.args[0]) + "}"

    def _numpycode(self, printer):
        return f"numpy.conjugate({printer._print(self.args[0])})"


class MinusK(MatrixOf):
    """The family ``F(-k)`` (``-k`` modulo the ring size) of a family ``F(k)``, displayed ``M(-k)``
    for the symbol."""

    def _latex(self, printer):
        return printer._print(self.args[0]).replace("(k)", "(-k)")

    def _numpycode(self, printer):
        return f"numpy.roll(numpy.flip({printer._print(self.args[0])}, 0), 1, 0)"


# ------------------------------------------------------------------------------------------------
# T6.fourier: the Fourier modes and the eigen-relation, at the matrix level
# ------------------------------------------------------------------------------------------------
#: the symbol at ``k`` (``d × d``; T6.selection's ``M``), and the family of all ``M(k)``
Mk = shown("Mk", "M(k)", d, d)
#: ``J`` as an ``nd × nd`` matrix (token-major; T6.jacobian's entries)
J_m = sp.MatrixSymbol("J", n * d, n * d)
phi_m = shown("phi", r"\varphi_k", n, 1)
phi_ = shown_base("phi", r"\varphi_k")
v_m = sp.MatrixSymbol("v", d, 1)

#: ``ζ = e^{2πik/n}``: the ``k``-th root of unity of the ring (the conventions' formula, one home)
ROOT = ZETA
#: T6.fourier: ``J(φ_k ⊗ v) = φ_k ⊗ (M(k) - I)v`` with the Fourier mode ``φ_k(j) = ζ^j``
EIGENPAIR = Identity(
    "eigenpair",
    J_m * sp.KroneckerProduct(phi_m, v_m),
    sp.KroneckerProduct(phi_m, MinusI(Mk) * v_m),
    (),
    (),
    ((phi_[j], zeta**j),),
)

# ------------------------------------------------------------------------------------------------
# T6.selection: the selected wavenumber, its growth, and what the growth is
# ------------------------------------------------------------------------------------------------
#: ``k* = argmax_k max Re spec(M(k) - I)``
SELECTION = Identity("selection", k_star, ArgMaxK(Abscissa(MinusI(Mk))))
#: ``σ``: the eigenvalue of ``M(k*) - I`` with the largest real part
GROWTH = Identity("growth", sigma_, AtK(Leading(MinusI(Mk)), k_star))
#: the fact: ``Re σ`` is the spectral abscissa of ``J`` (the fastest-growing mode of the linearisation)
ABSCISSA = Identity("abscissa", sp.re(sigma_), Abscissa(J_m))
#: for real kernels and transports ``M(-k) = conj M(k)``: ``(k*, σ)`` and ``(-k*, conj σ)`` are one real pattern
CONJUGATE = Identity("conjugate", MinusK(Mk), Conj(Mk))

#: T6's note on the constant mode: no wavenumber grows faster than ``k = 0``,
#: ``max Re spec(M(k) - I) ≤ max Re spec(M(0) - I)`` (one head, ``T``'s top eigenvalue real, positive)
DOMINANT = Relation("dominant", sp.LessThan(Abscissa(MinusI(Mk)), AtK(Abscissa(MinusI(Mk)), 0)), (k,))

# ------------------------------------------------------------------------------------------------
# T6.H2's witness: token 0 moved off the homogeneous state
# ------------------------------------------------------------------------------------------------
#: ``x_0 = x^* + 1`` (every other token stays at ``x^*``): the base state of the derivation's witness
MOVED = Identity("moved", X_[0, c], xstar_[c] + 1, (c,))
