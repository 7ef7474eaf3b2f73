"""Typed errors. Every error names the offending argument and states what was expected.

The hierarchy subclasses the matching builtin too (``ShapeError`` is a ``ValueError``,
``DTypeError`` a ``TypeError``), so generic ``except ValueError`` code keeps working.
"""

from __future__ import annotations

import theory.errors


class ConnwalkError(Exception):
    """Base class of every error raised by connwalk."""

    def __init__(self, message: str, *, argument: str | None = None):
        self.argument = argument
        super().__init__(f"{argument}: {message}" if argument else message)


class ShapeError(ConnwalkError, ValueError):
    """Wrong number of dimensions, wrong sizes, or mismatched n / d / H between arguments."""


class DTypeError(ConnwalkError, TypeError):
    """Non-floating dtype, complex where real is required, or mixed dtypes."""


class DeviceMismatchError(ConnwalkError, ValueError):
    """Arguments that live on different devices."""


class NonFiniteError(ConnwalkError, ValueError):
    """NaN or inf where finite values are required."""


class NegativeWeightError(ConnwalkError, ValueError):
    """Negative entries in a walk / attention matrix (walk matrices are nonnegative)."""


class NotStochasticError(ConnwalkError, ValueError):
    """Rows that do not sum to 1 where row-stochasticity is required."""


class OffSupportError(ConnwalkError, LookupError):
    """An edge with P_ij = 0: its transport O_ij is undefined (0/0), not zero."""


class UndefinedError(ConnwalkError, ValueError):
    """A quantity that does not exist for this input (e.g. several stationary distributions)."""


class ModelError(ConnwalkError, RuntimeError):
    """Problems loading or adapting a model (missing package, unsupported architecture, bad file)."""


class ModelNotInstalledError(ModelError, ModuleNotFoundError):
    """A named checkpoint whose package is not installed; the message gives the install command."""


class UnsupportedArchitectureError(ModelError):
    """A model family the adapters do not support; the message lists the supported ones."""


class CorruptFileError(ModelError):
    """A malformed GGUF / safetensors / cache file; the message gives the path and reason."""


class SequenceTooLongError(ConnwalkError, ValueError):
    """An input longer than the model's context window (refused, never truncated)."""


class UnstableStepError(ConnwalkError, ValueError):
    """A step size outside the integrator's stability / accuracy region for the linearised operator
    (the simulation would diverge or amplify decaying modes numerically); the message gives a safe bound."""


class SimulationDivergedError(NonFiniteError):
    """A simulation produced NaN/inf, exceeded its divergence bound, or hit a zero-norm token in a
    normalisation; the message gives the step / layer and time at which it happened."""


class CorpusTooShortError(ConnwalkError, ValueError):
    """A text or corpus with fewer tokens than the requested prompt length (never padded silently)."""


class ParameterError(ConnwalkError, ValueError):
    """A bad scalar parameter (NaN, negative, zero, out of range, non-integer where an integer is
    meant). ``ShapeError`` is reserved for shapes."""


class MemoryBudgetError(ConnwalkError, MemoryError):
    """A dense object (n²d² blocks, an N×N matrix with N = nd) whose estimated size exceeds the memory
    budget; the message gives the estimate, the budget, and the factored alternative."""


class UndecidedTruthError(ConnwalkError, theory.errors.UndecidedTruthError):
    """``bool()`` of a three-valued check that is not decided everywhere (some element neither holds
    nor fails): ``if diag.kernel_parallel:`` would read "undecided" as "fails". Use ``.holds``,
    ``.fails`` or ``.status(index)``. A ``TypeError`` (SymPy raises one for the truth value of a
    relation it cannot decide) and :class:`theory.errors.UndecidedTruthError`."""


class BatchIndexError(ConnwalkError, IndexError):
    """An ``index`` that does not select one element of a batched result: missing where the result
    is batched, of the wrong length, or out of range. The message names the index and the batch
    shape."""


class AdapterMismatchError(ConnwalkError, ValueError):
    """What an adapter reported (its ``Extraction``'s ``output``, ``A``, ...) disagrees with what the
    conformance kit observed the module itself compute on the same input: an error of the adapter (the
    user's ``connwalk_attention`` or ``Adapter``), never a verdict on the module. ``argument`` names the
    field; the message gives the observed and reported values and the layout the field must have."""
