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

import torch

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


def eps(dtype: torch.dtype) -> float:
    """Machine epsilon of a floating / complex torch dtype."""
    if dtype.is_complex:
        dtype = torch.float64 if dtype == torch.complex128 else torch.float32
    return torch.finfo(dtype).eps


def tol(dtype: torch.dtype, size: int = 1, *, scale: float = 1.0, safety: float = SAFETY) -> float:
    """Absolute tolerance for a quantity of magnitude ``scale`` from ``size`` accumulated ops.

    ``tol(float64, n*d)`` is ~1.4e-14 * n*d; ``tol(float32, n*d)`` ~7.6e-6 * n*d.
    """
    return safety * max(int(size), 1) * eps(dtype) * max(float(scale), math.ulp(1.0))


def judge(residual, dtype: torch.dtype, size: int = 1, *, scale: float = 1.0, error=0.0, safety: float = SAFETY):
    """``(holds, fails)`` of "``residual ≤ tol(dtype, size, scale=scale, safety=safety)``" with the
    residual known to ``± error`` (:func:`decide`): a check's verdict from its residual, size and scale
    in one call. Elementwise on floats, arrays and tensors (``error`` may be per element)."""
    return decide(residual, tol(dtype, size, scale=scale, safety=safety), error)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """``‖a − b‖_F / max(‖b‖_F, tiny)`` as a Python float (computed in float64)."""
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
