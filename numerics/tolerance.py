"""Threshold and decision, in one home. Every numeric comparison of :mod:`numerics` gets its threshold
from :func:`tol` and its three-valued verdict from :func:`decide` (or both at once from :func:`judge`);
no other module of :mod:`numerics` reads :mod:`theory.rounding`, where the decision rule is stated
with the theory (``holds`` when ``residual + error ≤ threshold``, ``fails`` when
``residual − error > threshold``, else *undecided*), so a check asks this module alone.

A relative residual of a computation with ``k`` accumulated floating-point operations per output in
precision ``eps`` is bounded (to first order, with modest constants) by ``c * k * eps``; we use
``k = size`` (the inner dimension, e.g. ``n*d`` for an ``nd x nd`` operator applied to a vector)
and a safety factor ``c = 64``. Comparisons are *relative to the scale of the inputs*
(``scale`` = a norm of the operands), so ``abs(err) <= tol(dtype, size) * scale``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from numerics.errors import DTypeError, ParameterError, ShapeError
from theory.rounding import (
    FAILS,
    HOLDS,
    ROUNDING_SAFETY,
    UNDECIDED,
    combine,
    decide,
    rounding_error,
    status,
    unresolved_by_square,
)

__all__ = [
    "SAFETY",
    "eps",
    "tol",
    "judge",
    "rel_err",
    "assert_close",
    "HOLDS",
    "FAILS",
    "UNDECIDED",
    "ROUNDING_SAFETY",
    "combine",
    "decide",
    "rounding_error",
    "status",
    "unresolved_by_square",
]

SAFETY = 64.0


def _check_dtype(dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not (dtype.is_floating_point or dtype.is_complex):
        raise DTypeError(f"expected a floating or complex torch dtype, got {dtype!r}", argument="dtype")
    return dtype


def _check_size(size) -> int:
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or int(size) < 0:
        raise ParameterError(f"expected an int >= 0 (a number of operations), got {size!r}", argument="size")
    return int(size)


def _check_scalar(name: str, value, *, positive: bool = False) -> float:
    """A finite real ``value`` >= 0 (> 0 with ``positive``) as a float; else :class:`ParameterError`."""
    try:
        if isinstance(value, (str, bytes, bool, complex)):
            raise TypeError
        v = float(value)
    except (TypeError, ValueError, RuntimeError):
        raise ParameterError(f"expected a finite real number, got {value!r}", argument=name) from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ParameterError(f"expected a finite real number {'>' if positive else '>='} 0, got {v!r}", argument=name)
    return v


def _check_nonnegative(name: str, value, what: str) -> None:
    """Elementwise: ``value`` (float, array or tensor) real, not NaN and >= 0 (+inf allowed)."""
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise DTypeError(f"expected real values, got dtype {value.dtype}", argument=name)
        nan, neg = int(torch.isnan(value).sum()), int((value < 0).sum())
    else:
        a = np.asarray(value)
        if a.dtype.kind not in "fiu":
            raise DTypeError(
                f"expected real numbers, got {type(value).__name__} of kind {a.dtype.kind!r}", argument=name
            )
        nan, neg = int(np.isnan(a).sum()), int((a < 0).sum())
    if nan:
        raise ParameterError(f"{nan} NaN value(s): {what} that was not computed has no decision", argument=name)
    if neg:
        raise ParameterError(f"{neg} negative value(s): {what} is a norm, never below 0", argument=name)


def eps(dtype: torch.dtype) -> float:
    """Machine epsilon of a floating / complex torch dtype (a complex dtype: that of its real part).
    Any other ``dtype`` (integer, bool, not a torch dtype): :class:`DTypeError`."""
    dtype = _check_dtype(dtype)
    if dtype.is_complex:
        dtype = dtype.to_real()
    return torch.finfo(dtype).eps


def tol(dtype: torch.dtype, size: int = 1, *, scale: float = 1.0, safety: float = SAFETY) -> float:
    """Absolute tolerance for a quantity of magnitude ``scale`` from ``size`` accumulated ops.

    ``tol(float64, n*d)`` is ~1.4e-14 * n*d; ``tol(float32, n*d)`` ~7.6e-6 * n*d. ``size`` is an int
    >= 0 (0 counts as 1), ``scale`` a finite real >= 0, ``safety`` a finite real > 0 and ``dtype`` a
    floating or complex torch dtype; anything else is refused (:class:`ParameterError` /
    :class:`DTypeError` naming the argument), never coerced."""
    e = eps(dtype)
    k = _check_size(size)
    s = _check_scalar("scale", scale)
    c = _check_scalar("safety", safety, positive=True)
    return c * max(k, 1) * e * max(s, math.ulp(1.0))


def judge(residual, dtype: torch.dtype, size: int = 1, *, scale: float = 1.0, error=0.0, safety: float = SAFETY):
    """``(holds, fails)`` of "``residual ≤ tol(dtype, size, scale=scale, safety=safety)``" with the
    residual known to ``± error`` (:func:`decide`): a check's verdict from its residual, size and scale
    in one call. Elementwise on floats, arrays and tensors (``error`` may be per element).

    ``residual`` and ``error`` are norms: every element real and >= 0 (``+inf`` allowed: an infinite
    residual fails, an infinite error leaves the decision undecided). A negative or NaN element is
    refused (:class:`ParameterError` naming ``residual`` / ``error``): a NaN residual is a computation
    that did not happen, not a verdict on the statement (the raw rule :func:`decide` calls it
    undecided; a check that can meet one reports it itself)."""
    bound = tol(dtype, size, scale=scale, safety=safety)
    _check_nonnegative("residual", residual, "a residual")
    _check_nonnegative("error", error, "an error bound")
    return decide(residual, bound, error)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """``‖a − b‖_F / max(‖b‖_F, tiny)`` as a Python float (computed in float64). ``a`` and ``b`` are
    tensors of one shape (no broadcasting: :class:`ShapeError` naming both)."""
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, torch.Tensor):
            raise DTypeError(f"expected a torch.Tensor, got {type(x).__name__}", argument=name)
    if a.shape != b.shape:
        raise ShapeError(f"shapes differ: a {tuple(a.shape)}, b {tuple(b.shape)}", argument="(a, b)")
    a64 = a.detach().to(torch.complex128 if a.is_complex() or b.is_complex() else torch.float64)
    b64 = b.detach().to(a64.dtype)
    den = torch.linalg.vector_norm(b64).item()
    return torch.linalg.vector_norm(a64 - b64).item() / max(den, 1e-300)


def assert_close(actual, expected, *, size: int = 1, dtype: torch.dtype | None = None, what: str = "") -> float:
    """Assert ``‖actual − expected‖ <= tol(dtype, size) * max(‖expected‖, 1)``; returns the residual.

    Used by tests so that every tolerance in the suite comes from one formula.
    """
    dtype = dtype or (actual.dtype if isinstance(actual, torch.Tensor) else torch.float64)
    a = torch.as_tensor(actual)
    b = torch.as_tensor(expected)
    scale = max(
        torch.linalg.vector_norm(b.detach().to(torch.complex128 if b.is_complex() else torch.float64)).item(), 1.0
    )
    err = torch.linalg.vector_norm(a.detach().to(torch.complex128) - b.detach().to(torch.complex128)).item()
    bound = tol(dtype, size, scale=scale)
    if not err <= bound:
        raise AssertionError(f"{what or 'values'} differ: |err|={err:.3e} > tol={bound:.3e} (scale {scale:.3e})")
    return err / scale
