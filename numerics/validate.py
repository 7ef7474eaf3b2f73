"""Input validation shared by every public entry point. Each check names the argument."""
from __future__ import annotations

from typing import Sequence

import torch

from numerics.errors import (
    DTypeError,
    DeviceMismatchError,
    NegativeWeightError,
    NonFiniteError,
    NotStochasticError,
    ShapeError,
)
from numerics.tolerance import tol


def as_tensor(name: str, x, *, allow_complex: bool = False) -> torch.Tensor:
    """Accept a torch tensor or array-like; require a floating (or, if allowed, complex) dtype.

    Integer / bool inputs are refused rather than silently cast (they are almost always a bug)."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except Exception as exc:  # pragma: no cover - torch's message is kept
            raise DTypeError(f"cannot convert {type(x).__name__} to a tensor ({exc})", argument=name) from exc
    if x.is_complex():
        if not allow_complex:
            raise DTypeError(f"expected a real floating tensor, got complex dtype {x.dtype}", argument=name)
    elif not x.is_floating_point():
        raise DTypeError(f"expected a floating tensor (float32/float64), got {x.dtype}", argument=name)
    return x


def check_finite(name: str, x: torch.Tensor) -> None:
    if not bool(torch.isfinite(x).all()):
        bad = (~torch.isfinite(x)).sum().item()
        raise NonFiniteError(f"contains {bad} NaN/inf entries", argument=name)


def check_ndim(name: str, x: torch.Tensor, min_ndim: int, shape_doc: str, max_ndim: int | None = None) -> None:
    if x.ndim < min_ndim or (max_ndim is not None and x.ndim > max_ndim):
        raise ShapeError(f"expected shape {shape_doc}, got {tuple(x.shape)}", argument=name)


def check_square(name: str, x: torch.Tensor, shape_doc: str) -> None:
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"expected square trailing dims {shape_doc}, got {tuple(x.shape)}", argument=name)


def check_nonnegative(name: str, x: torch.Tensor) -> None:
    if bool((x < 0).any()):
        raise NegativeWeightError(f"has negative entries (min {x.min().item():.3e}); walk weights must be >= 0", argument=name)


def check_stochastic(name: str, P: torch.Tensor, atol: float | None = None) -> float:
    """Rows of ``P`` (last axis) must sum to 1. Returns the max row-sum residual."""
    n = P.shape[-1]
    r = (P.sum(-1) - 1).abs().max().item() if P.numel() else 0.0
    bound = atol if atol is not None else tol(P.dtype, n)
    if r > bound:
        raise NotStochasticError(f"rows must sum to 1 (max |row sum - 1| = {r:.3e} > {bound:.1e})", argument=name)
    return r


def check_same(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> None:
    """Same dtype and device for all tensors (no silent promotion)."""
    t0 = tensors[0]
    for nm, t in zip(names[1:], tensors[1:]):
        if t.dtype != t0.dtype:
            raise DTypeError(f"dtype {t.dtype} differs from {names[0]}'s {t0.dtype}; cast explicitly", argument=nm)
        if t.device != t0.device:
            raise DeviceMismatchError(f"device {t.device} differs from {names[0]}'s {t0.device}", argument=nm)
