"""Errors raised by ``theory`` (torch- and numerics-free on purpose: ``theory`` imports SymPy + stdlib only).

Every error names what was asked for and lists what exists, so a typo is fixed from the message alone.
"""

from __future__ import annotations


class TheoryError(Exception):
    """Base class of every error raised by ``theory``."""


class UnknownTheoremError(TheoryError, KeyError):
    """A theorem / lemma id that is not in the registry. The message lists the known ids."""

    def __init__(self, requested: str, known: list[str]):
        self.requested = requested
        self.known = list(known)
        super().__init__(f"unknown theorem id {requested!r}; known ids: {', '.join(self.known)}")

    def __str__(self) -> str:  # KeyError would repr() the message; keep it readable
        return self.args[0]


class UnsupportedSizeError(TheoryError, ValueError):
    """A size (n, d, H, ...) outside the range a symbolic derivation is known to handle quickly.

    The message lists every size parameter of that derivation with its supported range.
    """

    def __init__(self, theorem: str, argument: str, value, supported: dict[str, tuple[int, int]]):
        self.theorem = theorem
        self.argument = argument
        self.value = value
        self.supported = dict(supported)
        ranges = ", ".join(f"{k} in {lo}..{hi}" for k, (lo, hi) in self.supported.items())
        super().__init__(
            f"{theorem}: {argument}={value!r} is not supported by the symbolic derivation; "
            f"supported sizes: {ranges or '(no size parameters)'}"
        )


class NotExactError(TheoryError, TypeError):
    """A floating-point (inexact) number given where an exact certificate needs a rational."""

    def __init__(self, argument: str, value):
        self.argument = argument
        super().__init__(
            f"{argument}: exact certificates need rationals (int, fractions.Fraction or sympy.Rational), "
            f"got {type(value).__name__} {value!r}"
        )


class UndecidedTruthError(TheoryError, TypeError):
    """``bool()`` of a three-valued decision that is undecided (holds / fails / undecided): like
    SymPy's relational whose truth value it cannot determine, it has no two-valued truth value. Read
    ``.holds``, ``.fails`` or ``.status``. A ``TypeError``, as SymPy's is."""


class StatementError(TheoryError, ValueError):
    """A statement given to :mod:`theory.api` (or found behind a ``connwalk.theorems`` entry point) that
    cannot be registered: the message names the argument (or the entry point) and what is wrong."""

    def __init__(self, argument: str, problem: str):
        self.argument = argument
        super().__init__(f"{argument}: {problem}")
