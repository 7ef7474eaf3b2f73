"""Notation SymPy lacks, written once for every formulas module: the identity and the all-ones column
of a symbolic size, the kernel and the fixed space of a matrix (evaluated as orthonormal bases), the
dimension of a space given by a basis, and the Frobenius and spectral norms. Each renders with ``_latex`` and evaluates with ``_numpycode``.
The two bases the formulas modules' own notation builds on: :class:`Delimited` (a number from one
argument, rendered between delimiters) and :class:`MatrixOf` (a matrix from one matrix argument)."""

from __future__ import annotations

import sympy as sp


class Eye(sp.Identity):
    """The identity matrix ``I`` of a symbolic size (``numpy.eye`` once the size is a number)."""

    def _latex(self, printer):
        return "I"

    def _numpycode(self, printer):
        return f"numpy.eye({printer._print(self.rows)})"

    _pythoncode = _numpycode


class Ones(sp.OneMatrix):
    """The all-ones column ``𝟏`` of a symbolic length."""

    def _latex(self, printer):
        return r"\mathbf{1}"

    def _numpycode(self, printer):
        return f"numpy.ones(({printer._print(self.rows)}, {printer._print(self.cols)}))"

    _pythoncode = _numpycode


class Delimited(sp.Function):
    """A number computed from one argument, rendered ``left arg right`` (a power outside) and
    evaluated by ``numpy`` code with ``{}`` for the argument; subclasses set the three strings."""

    nargs = 1
    is_commutative = True
    tex_left = tex_right = numpy_code = ""

    def _latex(self, printer, exp=None):
        out = self.tex_left + printer._print(self.args[0]) + self.tex_right
        return out if exp is None else out + "^{" + exp + "}"

    def _numpycode(self, printer):
        return self.numpy_code.format(printer._print(self.args[0]))

    _pythoncode = _numpycode


class MatrixOf(sp.MatrixExpr):
    """A matrix expression of one matrix argument, of that argument's shape unless a subclass says
    otherwise."""

    def __new__(cls, M):
        return super().__new__(cls, sp.sympify(M))

    @property
    def shape(self):
        return self.args[0].shape


_basis_columns = sp.Symbol("r", integer=True, nonnegative=True)


class Ker(MatrixOf):
    """``ker M``: evaluated as an orthonormal basis (columns) of the numerical null space."""

    @property
    def shape(self):
        return (self.args[0].shape[1], _basis_columns)

    def _latex(self, printer):
        return r"\ker " + printer._print(self.args[0])

    def _numpycode(self, printer):
        return f"{printer._module_format('theory.oracles.instances.null_space')}({printer._print(self.args[0])})"

    _pythoncode = _numpycode


class Fix(MatrixOf):
    """``Fix(T) = ker(T - I)``: evaluated as an orthonormal basis of the eigenspace for 1
    (:func:`theory.oracles.spectral.eigenspace`)."""

    @property
    def shape(self):
        return (self.args[0].shape[0], _basis_columns)

    def _latex(self, printer):
        return r"\operatorname{Fix}\left(" + printer._print(self.args[0]) + r"\right)"

    def _numpycode(self, printer):
        return f"{printer._module_format('theory.oracles.spectral.eigenspace')}({printer._print(self.args[0])}, 1.0)"

    _pythoncode = _numpycode


class Dim(sp.Expr):
    """``dim V`` of a space given by a basis (:class:`Ker`, :class:`Fix`): its number of columns."""

    is_integer = True
    is_nonnegative = True

    def _latex(self, printer):
        return r"\dim " + printer._print(self.args[0])

    def _numpycode(self, printer):
        return f"numpy.shape({printer._print(self.args[0])})[1]"

    _pythoncode = _numpycode


class NormF(Delimited):
    """``‖M‖_F``: the Frobenius norm of a value (every entry of an array, whatever its shape; the
    Euclidean norm of a vector)."""

    is_real = True
    tex_left, tex_right, numpy_code = r"\left\lVert ", r"\right\rVert_F", "numpy.linalg.norm({})"


class Norm2(Delimited):
    """``‖M‖₂``: the spectral norm (largest singular value) of a matrix."""

    is_real = True
    tex_left, tex_right, numpy_code = r"\left\lVert ", r"\right\rVert_{2}", "numpy.linalg.norm({}, 2)"
