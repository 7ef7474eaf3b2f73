r"""What a numerical verdict means: the decision rule shared by the oracles and the code they judge.

A statement such as "``‖πP − π‖ ≤ τ``" or "``dim ker Δ = dim`` parallel sections" is decided on a
*computed* residual, which carries its own rounding error. Every decision here is three-valued:

* **holds** — the residual is below the threshold by more than its own error bound,
* **fails** — it is above the threshold by more than its error bound,
* **undecided** — it lies within its error bound of the threshold (or could not be computed: NaN),
  so the arithmetic cannot tell which side the exact value is on. An undecided result is reported
  with its reason; it is never counted as a failure (nor as a success).

The *error bound* of a residual is the classical first-order bound of its computation: a sum or dot
product of ``k`` terms whose absolute values add up to ``S`` is off by at most ``k·ε·S`` (Higham,
*Accuracy and Stability of Numerical Algorithms*, §3.1; ``γ_k ≤ k·ε`` with ``ε`` the unit
roundoff ``2⁻⁵³`` doubled here to machine epsilon for slack), so :func:`rounding_error` takes the
reduction size ``k`` and the operands' scale ``S``. The *threshold* (the tolerance of a statement,
:func:`numerics.tolerance.tol`) models the rounding of the inputs the statement is about; the error
bound models the rounding of the check itself. They are different numbers and both matter.

Rank decisions (kernel dimensions, parallel sections, flatness, numerical rank in span criteria)
use the same rule on each singular value: :func:`rank_interval` returns the interval of ranks
compatible with the computed singular values, and a rank is *decided* only when that interval is
a single number. Every caller, oracle or toolkit, uses these functions, so that two checks of the
same quantity cannot decide it with two different rules.

The functions are written with operators only (``+``, ``<=``, ``&``, ``sum``), so they apply
unchanged to Python floats, numpy arrays and torch tensors (this module imports neither numpy nor
torch: it is the statement's semantics, not an implementation).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EPS64",
    "HOLDS",
    "FAILS",
    "UNDECIDED",
    "ROUNDING_SAFETY",
    "rounding_error",
    "decide",
    "status",
    "rank_interval",
    "combine",
    "unresolved_by_square",
]

EPS64 = 2.0**-52
HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
#: Slack on the first-order bound ``k·ε·S`` (second-order terms, the norms of the final reduction).
ROUNDING_SAFETY = 2.0


def rounding_error(size: int, scale: float, eps: float = EPS64, safety: float = ROUNDING_SAFETY) -> float:
    """Error bound of a residual computed from ``size`` accumulated terms of total magnitude
    ``scale`` in precision ``eps``: ``safety · size · eps · scale`` (never negative)."""
    return safety * max(int(size), 1) * eps * max(float(scale), 0.0)


def decide(residual: Any, threshold: Any, error: Any) -> tuple[Any, Any]:
    """``(holds, fails)`` of "``residual ≤ threshold``" with the residual known to ``± error``.

    ``holds``: ``residual + error ≤ threshold``; ``fails``: ``residual − error > threshold``.
    Where neither is true (within the error band, or a NaN residual) the decision is *undecided*.
    Works elementwise on floats, numpy arrays and torch tensors."""
    return residual + error <= threshold, residual - error > threshold


def status(holds: bool, fails: bool) -> str:
    """The word for one decision: ``"holds"``, ``"fails"`` or ``"undecided"``."""
    if holds and fails:
        raise ValueError("a decision cannot both hold and fail")
    return HOLDS if holds else FAILS if fails else UNDECIDED


def rank_interval(singular_values: Any, threshold: Any, error: Any) -> tuple[Any, Any]:
    """``(lo, hi)``: the ranks compatible with computed singular values known to ``± error``, a
    singular value counting as zero when it is at most ``threshold``.

    ``lo`` counts the values certainly above the threshold (``σ − error > threshold``), ``hi`` those
    not certainly at or below it (``σ + error > threshold``). The rank is decided iff ``lo == hi``;
    a null-space dimension is ``m − rank`` (``m`` the number of columns). Reduces over the last axis
    of an array or tensor (or a plain list)."""
    if isinstance(singular_values, (list, tuple)):
        lo = sum(1 for s in singular_values if s - error > threshold)
        hi = sum(1 for s in singular_values if s + error > threshold)
        return lo, hi
    above = singular_values - error > threshold
    maybe = singular_values + error > threshold
    return above.sum(-1), maybe.sum(-1)


def unresolved_by_square(energy: float, weight_max: float, threshold: float) -> bool:
    """Whether a defect that an operator sees only *squared* lies below what it resolves.

    ``Δ`` sees a parallel-section defect quadratically: under reversibility and metric
    compatibility ``<x, Δx>_π = E(x) = ½ Σ π_i P_ij ‖x_i − O_ij x_j‖²``, so a unit ``x`` with
    ``‖Δx‖ ≤ threshold`` has ``E(x) ≤ π_max·threshold``. A direction whose energy is at most twice
    that (the factor 2 for the identity's own rounding) is invisible to ``Δ`` however clearly the
    constraints resolve its defect ``‖Cx‖ ≈ √(2E)``: "``dim ker Δ`` vs parallel sections" is then
    undecided, not failed. Used by the oracles and by :mod:`numerics.laplacian.dense` alike."""
    return energy <= 2.0 * weight_max * threshold


def combine(statuses) -> str:
    """Conjunction of decisions: fails if any fails, else undecided if any is undecided, else holds."""
    seen = list(statuses)
    if FAILS in seen:
        return FAILS
    if UNDECIDED in seen:
        return UNDECIDED
    return HOLDS
