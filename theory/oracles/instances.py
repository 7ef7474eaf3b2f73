"""Oracle foundations: the :class:`Verdict` type, exact registered data -> float64 instances
(:func:`build`, the layer transport by the registry's layout formulas) and the dense objects of a
connection walk that the predicates of :mod:`theory.oracles` share: its matrix, the token view of a
stacked vector and the π inner product evaluated from the conventions' formulas
(:mod:`theory.formulas.walks`), the stationary law, null spaces, the Dirichlet form's scale.

Imports neither torch nor numerics (see :mod:`theory.oracles`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import UndecidedTruthError
from ..formulas import evaluate, premise_residuals, tabulate
from ..rounding import EPS64, HOLDS, ROUNDING_SAFETY, UNDECIDED, combine, decide, rank_interval, rounding_error
from ..rounding import status as decision_status

EPS = EPS64


@dataclass(frozen=True)
class Verdict:
    """One decision (:mod:`theory.rounding`): ``holds`` (certainly within tolerance), else ``fails``
    or, with ``undecided`` set, neither (within the residual's own rounding error of the tolerance,
    or a rank that the arithmetic cannot resolve; ``detail`` says why)."""

    holds: bool
    residual: float
    tol: float
    detail: str = ""
    applicable: bool = True
    undecided: bool = False

    def __post_init__(self) -> None:
        if self.holds and self.undecided:
            raise ValueError("a verdict cannot both hold and be undecided")

    def __bool__(self) -> bool:
        if self.undecided:
            raise UndecidedTruthError(
                f"an undecided verdict ({self.detail or 'within its rounding error of the tolerance'}) has no "
                "truth value: use .holds, .fails or .status"
            )
        return self.holds

    @property
    def fails(self) -> bool:
        return not self.holds and not self.undecided

    @property
    def status(self) -> str:
        return decision_status(self.holds, self.fails)


ORACLE_SAFETY = 64.0  # the safety factor of every rounding-level tolerance here (64·EPS·size·scale)


def residual_verdict(residual: float, tol: float, detail: str = "", error: float | None = None) -> Verdict:
    """``residual ≤ tol`` decided with the residual known to ``± error`` (a NaN residual: undecided).

    Default ``error``: a rounding-level tolerance (``0 < tol < 1e-9``) is ``64·EPS·size·scale`` by
    construction in these oracles, and the residual it judges is computed from the same reduction
    size and operand scale, so its error bound is :func:`theory.rounding.rounding_error` of those:
    ``tol · ROUNDING_SAFETY / 64``. A fixed tolerance (``1e-6`` on eigenvalue multisets, exact zero)
    is not a rounding model: it is decided as stated (error 0) unless the caller gives one."""
    r = float(residual)
    if error is None:
        error = tol * ROUNDING_SAFETY / ORACLE_SAFETY if 0 < tol < 1e-9 else 0.0
    h, f = decide(r, float(tol), float(error))
    return Verdict(bool(h), r, float(tol), detail, undecided=not (h or f))


def not_applicable(detail: str) -> Verdict:
    return Verdict(True, 0.0, 0.0, detail, applicable=False)


def all_of(*vs: Verdict) -> Verdict:
    """Conjunction: holds iff all hold, fails if any fails, else undecided; residual/tol of the
    worst (failing first, then largest residual/tol) part."""
    vs = [v for v in vs if v.applicable]  # type: ignore[assignment]
    if not vs:
        return not_applicable("no part applicable")
    worst = max(vs, key=lambda v: (v.fails, v.residual / v.tol if v.tol > 0 else math.inf))
    st = combine(v.status for v in vs)
    return Verdict(
        st == HOLDS,
        worst.residual,
        worst.tol,
        "; ".join(v.detail for v in vs if v.detail),
        undecided=st == UNDECIDED,
    )


# ---------------------------------------------------------------------------------------------
# exact data -> float64 instances
# ---------------------------------------------------------------------------------------------
def q(v) -> Fraction:
    """int / ``"p/q"`` string / Fraction -> Fraction (floats are refused: witnesses are exact)."""
    if isinstance(v, bool):
        raise TypeError(f"not an exact number: {v!r}")
    if isinstance(v, (int, Fraction)):
        return Fraction(v)
    if isinstance(v, str):
        return Fraction(v)
    raise TypeError(f"not an exact number: {v!r}")


def exact(a) -> Any:
    """Nested lists of exact numbers -> nested lists of Fractions."""
    if isinstance(a, (list, tuple)):
        return [exact(x) for x in a]
    return q(a)


def arr(a) -> np.ndarray:
    """Nested exact data (or floats / arrays) -> float64 array."""
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)

    def conv(x):
        if isinstance(x, (list, tuple)):
            return [conv(y) for y in x]
        if isinstance(x, float):
            return x
        return float(q(x))

    return np.asarray(conv(a), dtype=np.float64)


def softmax_rows(S: np.ndarray) -> np.ndarray:
    """Row softmax by its definition (max-shifted exponentials over their row sum); ``-inf`` masks."""
    S = S - S.max(-1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(-1, keepdims=True)


def mask_offsets(inst: Mapping, n: int, mask=None) -> np.ndarray:
    """The mask ``μ`` added to the scores: for a causal instance the registry's formula ``mask``
    (default :data:`theory.formulas.spectral.MASK`: ``-∞`` above the diagonal) tabulated, else 0."""
    if inst.get("mask") != "causal":
        return np.zeros((n, n))
    from ..formulas.spectral import MASK

    ident = mask or MASK
    return np.asarray(tabulate(ident.rhs, ident.free, {"n": n}), float)


def layout_transport(layout: str, W_O: np.ndarray, W_V: np.ndarray) -> np.ndarray:
    """The transport of a layer with ``nn.Linear`` weights under ``layout``: ``"column"`` (T1.transport's
    ``LAYOUT``, ``T = W_O W_V``) or ``"row"`` (its witness's ``ROW_LAYOUT``, ``T = (W_O W_V)^T``), the
    registry's formula evaluated."""
    from ..formulas import walks as _FW

    formulas = {"column": _FW.LAYOUT, "row": _FW.ROW_LAYOUT}
    if layout not in formulas:
        raise ValueError(f"layout: unknown {layout!r} (expected one of {sorted(formulas)})")
    return np.asarray(tabulate(formulas[layout].rhs, (), {"W_O": W_O, "W_V": W_V}), float)


def build(instance: Mapping[str, Any]) -> dict:
    """Float64 instance from a witness's exact data (see the module docstring for the kinds)."""
    kind = instance["kind"]
    out: dict[str, Any] = {"kind": kind}
    if kind == "walk":
        out["P"], out["O"] = arr(instance["P"]), arr(instance["O"])
        if "pi" in instance:
            out["pi"] = arr(instance["pi"])
    elif kind == "sha":
        out["A"], out["T"] = arr(instance["A"]), arr(instance["T"])
    elif kind == "sha_layers":
        A, X, WV, WO = (arr(instance[k]) for k in ("A", "X", "W_V", "W_O"))
        out.update(A=A, X=X, W_V=WV, W_O=WO)
        out["T"] = layout_transport(instance.get("layout", "column"), WO, WV)
        out["Y"] = A @ (X @ WV.T) @ WO.T  # nn.Linear: V = X W_Vᵀ, Y = A V W_Oᵀ
    elif kind == "sha_reuse":
        X0, X1, M, T = (arr(instance[k]) for k in ("X0", "X1", "M", "T"))
        d = X0.shape[1]
        out["A"] = softmax_rows(X0 @ M @ X0.T / math.sqrt(d))  # frozen at X0
        out.update(T=T, X=X1, M=M)
        out["Y"] = softmax_rows(X1 @ M @ X1.T / math.sqrt(d)) @ X1 @ T.T  # SHA(X1), attention at X1
    elif kind == "mha":
        out["As"], out["Ts"] = arr(instance["As"]), arr(instance["Ts"])
        if "P" in instance:
            out["P"] = arr(instance["P"])
    elif kind == "softmax":
        out["X"], out["M"] = arr(instance["X"]), arr(instance["M"])
        out["mask"] = instance.get("mask")
        for k in ("dk", "beta", "W_Q", "W_K"):
            if k in instance:
                out[k] = arr(instance[k])
    elif kind == "ring":
        out["A0"], out["T"] = arr(instance["A0"]), arr(instance["T"])
        if "X" in instance:  # the base state at which A0 = A(X) is taken
            out["X"] = arr(instance["X"])
    else:
        raise ValueError(f"instance: unknown kind {kind!r}")
    return out


# ---------------------------------------------------------------------------------------------
# walks: the dense walk (the conventions' formulas evaluated), stationary law, null spaces
# ---------------------------------------------------------------------------------------------
def walk_view(inst: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """``(P, O)`` of a walk instance; a single head ``(A, T)`` is the walk ``P = A``, ``O_ij = T``."""
    if "P" in inst and "O" in inst:
        return np.asarray(inst["P"], float), np.asarray(inst["O"], float)
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    n = A.shape[0]
    return A, np.broadcast_to(T, (n, n, *T.shape)).copy()


def dense_walk(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    """``W``: the conventions' formulas evaluated (:mod:`theory.formulas.walks`): the shape
    ``SHAPE_W`` (``nd × nd``) and ``WALK_BLOCK``, whose left side places entry ``(i, j, a, b)`` (token-major)
    and whose right side ``P_ij O_ij`` is its value."""
    from ..formulas import walks as _FW

    n, d = P.shape[0], O.shape[-1]
    values = {"P": P, "O": O, "n": n, "d": d}
    free = _FW.WALK_BLOCK.free
    rows, cols = (_FW.broadcast(e, free, values) for e in _FW.WALK_BLOCK.lhs.indices)
    W = np.zeros(_FW.SHAPE_W.dims(values))
    W[rows, cols] = _FW.broadcast(_FW.WALK_BLOCK.rhs, free, values)
    return W


def tokens(x: np.ndarray, n: int, d: int) -> np.ndarray:
    """The ``(n, d)`` tokens of a stacked ``x``: the conventions' ``STACK_ENTRY`` evaluated (entry
    ``i d + a`` of ``x`` is component ``a`` of token ``i``; trailing axes of ``x`` are kept)."""
    from ..formulas import walks as _FW

    entry = _FW.STACK_ENTRY
    pos = _FW.broadcast(entry.lhs.indices[0], entry.free, {"n": n, "d": d})
    return np.asarray(x)[pos]


def stationary(P: np.ndarray) -> np.ndarray:
    """A solution of ``π P = π``, ``Σ π = 1`` (least squares on the stacked system)."""
    n = P.shape[0]
    M = np.vstack([P.T - np.eye(n), np.ones((1, n))])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    return np.linalg.lstsq(M, rhs, rcond=None)[0]


def walk_pi(inst: Mapping, P: np.ndarray) -> np.ndarray:
    return np.asarray(inst["pi"], float) if inst.get("pi") is not None else stationary(P)


def null_space(M: np.ndarray, rel: float = 1e-9, scale: float | None = None) -> np.ndarray:
    """Orthonormal basis (columns) of the numerical null space of ``M``: singular values
    ``≤ rel·scale`` count as zero (``scale`` defaults to ``max(σ_max, 1)``). See
    :func:`null_space_interval` for the decision with its rounding error."""
    return null_space_interval(M, rel, scale)[0]


def null_space_interval(M: np.ndarray, rel: float = 1e-9, scale: float | None = None):
    """``(basis, lo, hi, s)``: the null-space basis at threshold ``rel·scale`` and the interval
    ``[lo, hi]`` of null-space dimensions compatible with the computed singular values ``s``
    (:func:`theory.rounding.rank_interval`: an SVD's singular values are accurate to
    ``size·eps·σ_max``); the dimension is decided iff ``lo == hi``."""
    if M.size == 0:
        return np.eye(M.shape[1]), M.shape[1], M.shape[1], np.zeros(0)
    _, s, Vh = np.linalg.svd(M)
    smax = scale if scale is not None else max(float(s[0]) if s.size else 0.0, 1.0)
    thr = rel * smax
    err = rounding_error(max(M.shape), float(s[0]) if s.size else 0.0)
    r_lo, r_hi = rank_interval(s, thr, err)
    rank = int((s > thr).sum())
    m = M.shape[1]
    return Vh[rank:].T.conj(), m - int(r_hi), m - int(r_lo), s


def probe_vectors(nd: int, k: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((k, nd))


def polarization_probes(n: int, d: int) -> np.ndarray:
    """The vectors ``e_p + e_q`` (``p ≤ q``) of ``R^{nd}`` as the columns of an ``(n, d, K)`` array: a
    quadratic form is determined by its values on them (polarization), so an identity of quadratic
    forms evaluated on them at once is checked for every ``x``."""
    nd = n * d
    p, q = np.triu_indices(nd)
    E = np.eye(nd)
    return (E[:, p] + E[:, q]).reshape(n, d, -1)


def pi_inner_product(x, y, pi, d):
    """``<x, y>_π`` of stacked vectors: the conventions' ``PI_INNER`` evaluated."""
    from ..formulas import walks as _FW

    n = len(pi)
    values = {"pi": pi, "x": tokens(x, n, d), "y": tokens(y, n, d), "n": n, "d": d}
    return float(tabulate(_FW.PI_INNER.rhs, (), values))


def dirichlet_scale(P, O, pi, x, d) -> float:
    """The size of the Dirichlet identity's terms, ``Σ_ij π_i |P_ij| (|x_i|² + |O_ij x_j|²)``: the
    scale of its residual (the identity itself is the registry's formula, :mod:`theory.formulas`)."""
    n = P.shape[0]
    mag = 0.0
    for i in range(n):
        for j in range(n):
            xi, oxj = x[i * d : (i + 1) * d], O[i, j] @ x[j * d : (j + 1) * d]
            mag += pi[i] * abs(P[i, j]) * (xi @ xi + oxj @ oxj)
    return float(mag)


def premised(ident, values, key: str, t: float, what: str, scale: float | None = None) -> Verdict:
    """``ident`` (a registry formula with premises) on the instance ``values`` as drawn: a premise
    the instance violates makes it not applicable; a formula without the premise is checked on every
    instance. Residual of its two sides relative to ``scale`` (default: the largest entry of its left
    side), tolerance ``t``."""
    gaps = [
        float(np.abs(pl - pr).max()) / max(float(np.abs(pl).max()), 1e-300)
        for pl, pr in premise_residuals(ident, values)
    ]
    if any(g > t for g in gaps):
        return not_applicable(f"premise of {key} violated by the instance (relative gap {max(gaps):.1e})")
    lhs, rhs = evaluate(ident, values)
    den = float(np.abs(lhs).max()) if scale is None else scale
    return residual_verdict(
        float(np.abs(lhs - rhs).max()) / max(den, 1e-300), t, f"{key}: the registry's formula, {what}"
    )


def form_scale(P, O, pi, X) -> np.ndarray:
    """The size of the terms of a quadratic-form identity of the walk (T3's forms) at each probe
    ``X[..., k]`` (``X``: ``(n, d, K)``): ``Σ_i π_i|x_i|² + Σ_ij π_i|P_ij|(|x_i|² + |O_ij x_j|²)``, the
    scale of its residual (never below 1e-300)."""
    nx = (X**2).sum(1)
    nox = (np.einsum("ijab,jbk->ijak", O, X) ** 2).sum(2)
    scale = (pi[:, None] * nx).sum(0) + (pi[:, None, None] * np.abs(P)[:, :, None] * (nx[:, None, :] + nox)).sum((0, 1))
    return np.maximum(scale, 1e-300)


def spectrum_in(ev: np.ndarray, lo: float, hi: float, t: float) -> Verdict:
    """The eigenvalues ``ev`` (of ``I - W``) real and in ``[lo, hi]`` within ``t`` (the registry's
    tolerance, :data:`theory.formulas.tolerances.SPECTRUM`, evaluated by the caller)."""
    im = float(np.abs(ev.imag).max()) if ev.size else 0.0
    out = float(np.clip(np.maximum(lo - ev.real, ev.real - hi), 0, None).max()) if ev.size else 0.0
    return residual_verdict(max(im, out), t, f"spec in [{lo:g}, {hi:g}]: max |Im| {im:.2e}, outside by {out:.2e}")
