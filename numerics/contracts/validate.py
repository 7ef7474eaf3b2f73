"""Input validation shared by every public entry point. Each check names the argument."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from numerics.errors import (
    DeviceMismatchError,
    DTypeError,
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
        raise NegativeWeightError(
            f"has negative entries (min {x.min().item():.3e}); walk weights must be >= 0", argument=name
        )


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


def batch_index(name: str, index, batch: Sequence[int], *, full: bool = True) -> tuple[int, ...]:
    """``index`` (an int, or a tuple / list of ints) as a tuple selecting into ``batch``: all of its dims
    (``full``) or its leading ones; negative indices count from the end. Anything else — another
    type, too many (or, with ``full``, too few) entries, an entry out of range — raises naming
    ``name`` (:class:`ParameterError` / :class:`ShapeError`)."""
    import numbers

    from numerics.errors import ParameterError

    def is_int(i) -> bool:
        return isinstance(i, numbers.Integral) and not isinstance(i, bool) and type(i).__name__ != "bool_"

    idx = (index,) if is_int(index) else (tuple(index) if isinstance(index, list) else index)
    if not isinstance(idx, tuple) or not all(is_int(i) for i in idx):
        raise ParameterError(f"expected an int or a tuple of ints, got {index!r}", argument=name)
    batch = tuple(int(b) for b in batch)
    if len(idx) > len(batch) or (full and len(idx) != len(batch)):
        raise ShapeError(f"index {index} does not select one walk of batch shape {batch}", argument=name)
    for i, size in zip(idx, batch):
        if not -size <= int(i) < size:
            raise ParameterError(f"index {index} out of range for batch shape {batch}", argument=name)
    return tuple(int(i) for i in idx)


# ----------------------------------------------------------------------------------- memory budget
_BUDGET_ENV = "CONNWALK_MEMORY_BUDGET"


def memory_budget() -> int:
    """Bytes one dense intermediate may take. ``$CONNWALK_MEMORY_BUDGET`` (bytes; suffixes K/M/G
    accepted) overrides; the default is half the memory available now (``/proc/meminfo``
    MemAvailable), or 4 GiB where that cannot be read."""
    import os

    raw = os.environ.get(_BUDGET_ENV)
    if raw is not None and raw.strip() != "":
        from numerics.errors import ParameterError

        s = raw.strip().upper().removesuffix("B").removesuffix("I")  # 8G, 8GB, 8GiB
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(s[-1:], 1)
        try:
            val = float(s[:-1] if s[-1:] in ("K", "M", "G", "T") else s) * mult
        except ValueError:
            val = math.nan
        if not (math.isfinite(val) and val >= 1):
            raise ParameterError(
                f"cannot use {raw!r} as a memory budget: expected a positive byte count such as 8G, 512M or 1000000000",
                argument=_BUDGET_ENV,
            ) from None
        return int(val)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // 2
    except OSError:  # pragma: no cover - non-Linux
        pass
    return 4 << 30


def check_memory(name: str, nbytes: int | float, what: str, alternative: str, budget: int | None = None) -> None:
    """Refuse (``MemoryBudgetError`` naming ``name``) to form a dense object of ``nbytes`` bytes above
    the budget; ``what`` says what would be formed, ``alternative`` the factored way to get it."""
    from numerics.errors import MemoryBudgetError

    limit = memory_budget() if budget is None else int(budget)
    if nbytes > limit:
        raise MemoryBudgetError(
            f"{what} would take {nbytes / 2**30:.3g} GiB, over the memory budget of {limit / 2**30:.3g} GiB "
            f"(set ${_BUDGET_ENV} to change it); use {alternative} instead",
            argument=name,
        )
