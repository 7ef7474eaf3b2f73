r"""One function per T3 hypothesis and conclusion, shared by the dense and the factored diagnostics.

Every check reads the walk through a small *block algebra*: an object with the per-edge quantities
the checks need, so that the same tolerance rule and the same verdict logic serve both paths.

* :class:`DenseBlocks` holds ``B`` ``(..., n, n, d, d)`` and ``O`` and computes every quantity from
  the blocks (``n²d²`` memory: the reference).
* :class:`numerics.laplacian_factored.FactoredBlocks` holds ``B_ij = Σ_h a^h_ij T_h`` as the
  coefficients ``a`` ``(..., H, n, n)`` and ``T`` ``(H, d, d)`` and gets the same quantities from
  small triangular factors of the ``T``'s (``O(H n² + H² d²)`` memory, never ``n²d²``).

The interface (each returns ``(..., n, n)`` unless said):

* ``block_scale()`` ``Σ_h |a^h_ij| ‖T_h‖_F`` (heads) or ``‖B_ij‖_F`` (explicit blocks) and ``terms``
  (``H`` or 1): the magnitude and count of the summands of a block, from which both paths take the
  same rounding-error bound of every per-edge residual (:func:`edge_error`): the verdicts of the
  two paths are then decided with the same error band, so that heads that cancel (a block much
  smaller than its terms) make both paths *undecided* rather than one of them wrong;

* ``norms()`` ``‖B_ij‖_F``; ``transport_norms()`` ``‖O_ij‖_F`` (0 off the support);
* ``norm_floor()`` the rounding level of ``‖B_ij‖_F`` when ``B_ij`` is a sum of head terms,
  ``tol(float64, H)·Σ_h |a^h_ij| ‖T_h‖_F`` (0 for explicit blocks): a block below it is a sum
  that cancelled and counts as absent in the gauge-free checks (both paths use the same rule);
* ``balance_defect(π)`` ``‖π_i B_ij − π_j B_jiᵀ‖_F``;
* ``transpose_defect()`` ``‖O_ji − O_ijᵀ‖_F``;
* ``gram_defect(c)`` ``‖c_ij² O_ijᵀ O_ij − I‖_F`` for a scaling ``c`` ``(..., n, n)``;
* ``apply(x)`` ``(Wx)`` for ``x`` ``(..., p, n, d)``; ``edge_energy(π, x)``
  ``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` ``(..., p)``.

Tolerances all come from :func:`numerics.tolerance.tol` with ``tdt`` the precision the walk was
given in (see :func:`numerics.laplacian.diagnose` for ``attention_dtype``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.errors import ShapeError
from numerics.markov import StationaryInfo, stationary_info
from numerics.tolerance import tol
from numerics.validate import as_tensor, check_finite
from theory.rounding import decide, rounding_error
from theory.rounding import status as decision_status

F64 = torch.float64

__all__ = [
    "Check",
    "DenseBlocks",
    "Stationary",
    "make_check",
    "edge_error",
    "check_stochastic",
    "stationary",
    "check_detailed_balance",
    "check_block_detailed_balance",
    "check_orthogonal",
    "check_transpose_symmetric",
    "check_metric_compatible",
    "transport_scale",
    "check_scaled_isometry",
    "check_self_adjoint",
    "check_dirichlet",
    "spectrum_checks",
    "spectrum_error",
    "block_pi",
]


@dataclass
class Check:
    """One condition, decided in three ways (:mod:`theory.rounding`): ``holds`` (bool, batch shape:
    certainly within tolerance), ``fails`` (bool: certainly not), and *undecided* where neither is
    true — the residual lies within its own rounding ``error`` of the tolerance, or it could not be
    computed (skipped, ambiguous rank: NaN residual, with the ``reason``). ``residual`` (float64,
    batch shape; NaN where undefined), ``tol`` the threshold, ``error`` the error bound of the
    residual's own computation. ``tol`` is reported as one number (the largest where a check has
    a bound per batch element). ``holds`` is False where undecided: read ``fails`` (or
    :meth:`status`) to tell "false" from "not decided"."""

    name: str
    holds: torch.Tensor
    residual: torch.Tensor
    tol: float
    reason: str | None = None
    fails: torch.Tensor = None  # type: ignore[assignment]  # default: ~holds where the residual is defined
    error: float = 0.0

    def __post_init__(self) -> None:
        if self.fails is None:
            self.fails = ~self.holds & ~torch.isnan(self.residual)
        if self.holds.device.type != "meta" and bool((self.holds & self.fails).any()):
            raise ValueError(f"{self.name}: a decision cannot both hold and fail")

    def to(self, device) -> Check:
        """The same check with its tensors on ``device``."""
        return Check(
            self.name,
            self.holds.to(device),
            self.residual.to(device),
            self.tol,
            self.reason,
            fails=self.fails.to(device),
            error=self.error,
        )

    def __bool__(self) -> bool:
        return bool(self.holds.all())

    @property
    def defined(self) -> torch.Tensor:
        return ~torch.isnan(self.residual)

    @property
    def undecided(self) -> torch.Tensor:
        """Where the check is neither certainly true nor certainly false."""
        return ~self.holds & ~self.fails

    def status(self, index: tuple = ()) -> str:
        """``"holds"``, ``"fails"`` or ``"undecided"`` for batch element ``index``."""
        return decision_status(bool(self.holds[index]), bool(self.fails[index]))

    def __repr__(self) -> str:
        r = self.residual.detach().cpu()
        h = self.holds.detach().cpu()
        if r.ndim == 0:
            body = f"{self.status()}, residual={r.item():.3e}"
        else:
            u = int(self.undecided.sum())
            body = f"holds={int(h.sum())}/{h.numel()}" + (f" ({u} undecided)" if u else "")
            body += f", max residual={torch.nan_to_num(r, nan=-1).max().item():.3e}"
        why = f", reason={self.reason!r}" if self.reason else ""
        return f"Check({self.name}: {body}, tol={self.tol:.1e}, error={self.error:.1e}{why})"


def make_check(name: str, residual: torch.Tensor, bound, reason=None, *, error: float = 0.0, require=None) -> Check:
    """Decide "``residual ≤ bound``" with the residual known to ``± error`` (:func:`theory.rounding.decide`).

    ``require`` (bool, batch shape): a structural condition decided exactly (a one-way edge, no
    positive π, unequal ranks): where it is False the check fails whatever the residual. Where the
    residual is NaN and ``require`` holds, the check is undecided (it could not be computed)."""
    residual = residual.to(F64)
    thr = bound.to(F64) if isinstance(bound, torch.Tensor) else float(bound)  # a tensor: per element
    h, f = decide(residual, thr, float(error))
    if require is not None:
        h = h & require
        f = f | ~require
    shown = float(bound.max()) if isinstance(bound, torch.Tensor) and bound.numel() else float(bound)
    return Check(name, h, residual, shown, reason or None, fails=f, error=float(error))


def edge_error(blocks, scale: torch.Tensor, extra: int = 0) -> float:
    """Error bound of a per-edge Frobenius residual ``‖Σ_m X_m‖_F`` whose terms have Frobenius
    norms summing to ``scale`` ``(..., n, n)`` (maximum over the support): every entry is a sum of
    ``terms`` (the heads, ``blocks.terms``) ``+ extra`` accumulations, each off by at most
    ``k·ε·Σ|entries|``, and the Frobenius norm of those entry errors is at most ``k·ε·scale``.
    Both block algebras use this bound."""
    if not scale.numel():
        return 0.0
    s = torch.where(blocks.sup, scale, torch.zeros_like(scale))
    return rounding_error(blocks.terms + extra + 1, float(s.max()))


def _masked_max(x: torch.Tensor, mask: torch.Tensor, dims) -> torch.Tensor:
    v = torch.where(mask, x, torch.zeros_like(x))
    return v.amax(dims) if v.numel() else v.sum(dims)


def _fmax(x: torch.Tensor, default: float = 1.0) -> float:
    return float(x.max()) if x.numel() else default


# ------------------------------------------------------------------------------------ dense algebra
class DenseBlocks:
    """The block algebra on explicit blocks: ``P`` ``(..., n, n)``, ``B`` and ``O``
    ``(..., n, n, d, d)`` (float64, ``O`` zero off the support)."""

    def __init__(
        self,
        P: torch.Tensor,
        B: torch.Tensor,
        O: torch.Tensor,
        floor: torch.Tensor | None = None,
        block_scale: torch.Tensor | None = None,
        terms: int = 1,
    ):
        self.P, self.B, self.O = P, B, O
        self.floor = torch.zeros_like(P) if floor is None else floor
        self.sup = P > 0
        self.n, self.d = P.shape[-1], B.shape[-1]
        self._OtO: torch.Tensor | None = None
        self._block_scale = block_scale
        self.terms = int(terms)  # summands of each block (H for a heads-form walk, 1 for explicit blocks)

    def block_scale(self) -> torch.Tensor:
        """``Σ_h |a^h_ij| ‖T_h‖_F`` for a heads-form walk (given), else ``‖B_ij‖_F``: the magnitude of
        the terms that make up ``B_ij``, which sets the rounding error of anything computed from it."""
        return self.norms() if self._block_scale is None else self._block_scale

    def norms(self) -> torch.Tensor:
        return torch.linalg.matrix_norm(self.B)

    def norm_floor(self) -> torch.Tensor:
        return self.floor

    def transport_norms(self) -> torch.Tensor:
        return torch.linalg.matrix_norm(self.O)

    def balance_defect(self, pi: torch.Tensor) -> torch.Tensor:
        G = pi[..., :, None, None, None] * self.B
        return torch.linalg.matrix_norm(G - G.transpose(-4, -3).transpose(-1, -2))

    def transpose_defect(self) -> torch.Tensor:
        return torch.linalg.matrix_norm(self.O.transpose(-4, -3) - self.O.transpose(-1, -2))

    def gram_defect(self, c: torch.Tensor) -> torch.Tensor:
        OtO = self._OtO
        if OtO is None:
            OtO = self._OtO = self.O.transpose(-1, -2) @ self.O
        eye = torch.eye(self.d, dtype=F64, device=self.P.device)
        return torch.linalg.matrix_norm((c**2)[..., None, None] * OtO - eye)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("...ijab,...pjb->...pia", self.B, x)

    def edge_energy(self, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        from numerics.laplacian import dirichlet_energy

        return dirichlet_energy(self.P[..., None, :, :], self.O[..., None, :, :, :, :], pi[..., None, :], x)


# ------------------------------------------------------------------------------------ (a) stochastic
def check_stochastic(P: torch.Tensor, tdt: torch.dtype, row_tol: float | None = None) -> Check:
    """(a) ``max_i |Σ_j P_ij − 1|`` against ``row_tol`` (default ``tol(tdt, n)``)."""
    n = P.shape[-1]
    rows = P.sum(-1)
    t_row = tol(tdt, n) if row_tol is None else float(row_tol)
    zero_rows = (rows <= 0).any(-1)
    return make_check(
        "stochastic",
        (rows - 1).abs().amax(-1),
        t_row,
        "zero row(s) in P: not a walk" if bool(zero_rows.any()) else None,
        error=rounding_error(n + 1, _fmax(rows.abs(), 0.0) + 1.0),
    )


# ------------------------------------------------------------------------------------ stationary π
@dataclass
class Stationary:
    """The walk-gauge π and what the π-dependent checks need from it."""

    check: Check  # positive_stationary
    pi: torch.Tensor  # (..., n), NaN where undefined
    safe: torch.Tensor  # π with NaN replaced by 0
    positive: torch.Tensor  # (...) bool
    defined: torch.Tensor  # (...) bool
    info: StationaryInfo
    reasons: list
    given: bool  # π was passed in by the caller


def stationary(P: torch.Tensor, tdt: torch.dtype, pi=None) -> Stationary:
    """Stationary π of ``P`` (:func:`numerics.markov.stationary_info`) or the caller's ``pi``,
    its residual ``‖πP − ρπ‖_∞`` and positivity (``positive_stationary``)."""
    n = P.shape[-1]
    info = stationary_info(P, dtype=tdt)
    reasons = sorted({r for r in info.reasons if r})
    if pi is not None:
        pi_t = as_tensor("pi", pi).to(F64)
        if pi_t.shape != P.shape[:-1]:
            raise ShapeError(f"expected {tuple(P.shape[:-1])}, got {tuple(pi_t.shape)}", argument="pi")
        check_finite("pi", pi_t)
        pi_v = pi_t / pi_t.sum(-1, keepdim=True)
        pi_res = ((pi_v.unsqueeze(-2) @ P).squeeze(-2) - info.rho[..., None] * pi_v).abs().amax(-1)
        pi_pos = (pi_v > 0).all(-1) & ~torch.isnan(pi_v).any(-1)
    else:
        pi_v, pi_res = info.pi, info.residual
        # positivity of the computed π is structural (Perron–Frobenius: π > 0 exactly on the closed
        # classes, 0 on transient states), not numerical: an entry like 1e-238 may round to 0
        pi_pos = ~info.transient & ~torch.isnan(pi_v).any(-1)
    t_pi = tol(tdt, n)
    # πP − ρπ: n products per entry, magnitudes ≤ max π·(max column sum of P) + ρ·max π
    pi_scale = _fmax(torch.nan_to_num(pi_v.abs(), nan=0.0), 0.0) * (_fmax(P.sum(-2), 0.0) + _fmax(info.rho.abs(), 0.0))
    chk = make_check(
        "positive_stationary",
        pi_res,
        t_pi,
        "; ".join(reasons),
        error=rounding_error(n + 1, pi_scale),
        require=pi_pos,
    )
    pi_def = ~torch.isnan(pi_v).any(-1)
    safe = torch.where(pi_def[..., None], pi_v, torch.zeros_like(pi_v))
    return Stationary(chk, pi_v, safe, pi_pos, pi_def, info, reasons, pi is not None)


def _pi_reason(st: Stationary) -> str | None:
    if bool(st.positive.all()):
        return None
    return "no positive π: " + "; ".join(st.reasons) if st.reasons else "no positive π"


# ------------------------------------------------------------------------------------ (b) reversibility
def check_detailed_balance(P: torch.Tensor, st: Stationary, tdt: torch.dtype) -> Check:
    """(b) ``max_ij |π_i P_ij − π_j P_ji|``; the tolerance carries the π solve's condition number.
    A one-way edge (``P_ij > 0 = P_ji``) is a certain failure whatever the residual's size."""
    n = P.shape[-1]
    sup = P > 0
    F = st.safe[..., :, None] * P
    res = (F - F.transpose(-1, -2)).abs().amax((-1, -2))
    res = torch.where(st.defined, res, torch.full_like(res, float("nan")))
    kappa = (
        float(torch.nan_to_num(st.info.condition, nan=1.0, posinf=1.0).max().item())  # type: ignore[arg-type]
        if not st.given and F.numel()
        else 1.0
    )
    t_db = tol(tdt, n, scale=max(F.abs().max().item(), 1e-300) if F.numel() else 1.0) * max(kappa, 1.0)
    why = _pi_reason(st)
    one_way_e = sup & ~sup.transpose(-1, -2)
    one_way = one_way_e.any(-1).any(-1)
    if bool((one_way & st.positive).any()):
        b = int((one_way & st.positive).reshape(-1).nonzero()[0, 0])
        ow = torch.nonzero(one_way_e.reshape(-1, n, n)[b])[0]
        i_, j_ = int(ow[0]), int(ow[1])
        why = ((why + "; ") if why else "") + (
            f"support of P not symmetric (e.g. edge {i_}→{j_} has no reverse edge): exact detailed balance "
            f"is impossible for π > 0, whatever the size of the residual"
        )
    return make_check(
        "detailed_balance",
        res,
        t_db,
        why,
        error=rounding_error(2, _fmax(F.abs(), 0.0)),
        require=st.positive & ~one_way,
    )


def _floored_norms(blocks) -> torch.Tensor:
    Bn = blocks.norms()
    return torch.where(Bn <= blocks.norm_floor(), torch.zeros_like(Bn), Bn)


def block_pi(Bn: torch.Tensor) -> tuple[torch.Tensor, str]:
    """Gauge-free π from ``N_ij = ‖B_ij‖_F``: ``π ∝ π'/r`` with ``π'`` stationary for ``N/r``."""
    r = Bn.sum(-1)
    zero_row = (r <= 0).any(-1)
    safe = torch.where(r > 0, r, torch.ones_like(r))
    Nh = Bn / safe[..., None]
    Nh = torch.where((r > 0)[..., None], Nh, torch.eye(Bn.shape[-1], dtype=F64, device=Bn.device).expand_as(Nh))
    info = stationary_info(Nh, dtype=F64)
    pi = info.pi / safe
    pi = pi / pi.sum(-1, keepdim=True)
    bad = zero_row | info.transient
    pi = torch.where(bad[..., None], torch.full_like(pi, float("nan")), pi)
    reason = ""
    ill = [r for r in info.reasons if "ill-conditioned" in r]
    if bool(zero_row.any()):
        reason = "a block row of B is zero: no positive π balances it"
    elif ill:
        reason = "block π " + ill[0]
    elif bool(info.transient.any()):
        reason = "the support of B has transient states: no positive π"
    elif not bool(info.unique.all()):
        reason = "support of B is disconnected: block π weights each class equally"
    return pi, reason


def check_block_detailed_balance(blocks, tdt: torch.dtype) -> tuple[Check, torch.Tensor]:
    """Gauge-free ``max_ij ‖π_i B_ij − π_j B_jiᵀ‖_F`` with π from the block norms; returns the
    check and that π."""
    n, d = blocks.n, blocks.d
    Bn = _floored_norms(blocks)
    bpi, why = block_pi(Bn)
    bdef = ~torch.isnan(bpi).any(-1)
    bsafe = torch.where(bdef[..., None], bpi, torch.zeros_like(bpi))
    res = blocks.balance_defect(bsafe).amax((-1, -2))
    res = torch.where(bdef, res, torch.full_like(res, float("nan")))
    gscale = max(_fmax(bsafe[..., :, None] * Bn, 0.0), _fmax(Bn, 0.0) / max(n, 1), 1e-300)
    bs = blocks.block_scale()
    err = edge_error(blocks, bsafe[..., :, None] * bs + bsafe[..., None, :] * bs.transpose(-1, -2), 2)
    return make_check(
        "block_detailed_balance",
        res,
        tol(tdt, n * d, scale=gscale),
        why or None,
        error=err,
        require=bdef,
    ), bpi


# ------------------------------------------------------------------------------------ (c) metric compatibility
def check_orthogonal(blocks, tdt: torch.dtype) -> tuple[Check, float]:
    """``max ‖O_ijᵀ O_ij − I‖_F`` on the support; returns the check and ``max ‖O_ij‖_F²``."""
    d, sup = blocks.d, blocks.sup
    one = torch.ones_like(blocks.P)
    res = _masked_max(blocks.gram_defect(one), sup, (-1, -2))
    onorm = _fmax(_masked_max(blocks.transport_norms() ** 2, sup, (-1, -2)))
    return make_check("orthogonal", res, tol(tdt, d, scale=max(onorm, float(d))), error=_gram_error(blocks, one)), onorm


def check_transpose_symmetric(blocks, tdt: torch.dtype, onorm: float) -> Check:
    """``max ‖O_ji − O_ijᵀ‖_F`` over two-way edges (a one-way edge is reported in the reason)."""
    d, sup = blocks.d, blocks.sup
    two_way = sup & sup.transpose(-1, -2)
    res = _masked_max(blocks.transpose_defect(), two_way, (-1, -2))
    one_way = (sup & ~sup.transpose(-1, -2)).any(-1).any(-1)
    ts = transport_scales(blocks)
    return make_check(
        "transpose_symmetric",
        res,
        tol(tdt, d, scale=max(math.sqrt(onorm), 1.0)),
        "support not symmetric: checked on two-way edges only" if bool(one_way.any()) else None,
        error=edge_error(blocks, torch.where(two_way, ts + ts.transpose(-1, -2), torch.zeros_like(ts)), 1),
    )


def check_metric_compatible(orth: Check, ts: Check) -> Check:
    """(c) = orthogonal ∧ transpose-symmetric (fails if either fails, undecided if either is)."""
    return Check(
        "metric_compatible",
        orth.holds & ts.holds,
        torch.maximum(orth.residual, ts.residual),
        max(orth.tol, ts.tol),
        None,
        fails=orth.fails | ts.fails,
        error=max(orth.error, ts.error),
    )


def transport_scales(blocks) -> torch.Tensor:
    """``Σ_h |w^h_ij| ‖T_h‖_F = block_scale / P_ij`` on the support (0 off it): the magnitude of
    the terms of ``O_ij``."""
    sup = blocks.sup
    safe = torch.where(sup, blocks.P, torch.ones_like(blocks.P))
    return torch.where(sup, blocks.block_scale() / safe, torch.zeros_like(blocks.P))


def _gram_error(blocks, c: torch.Tensor, rel_c: torch.Tensor | None = None) -> float:
    """Error bound of ``‖c² O_ijᵀO_ij − I‖_F``: the products of the head terms of ``O_ij``
    (``c²·(Σ_h |w^h| ‖T_h‖)²``, which is what the factored path's Gram expansion sums and what the
    dense path's ``O_ij`` carries as rounding), plus ``‖I‖_F = √d``; ``rel_c`` adds the relative
    error of a computed scaling ``c`` (twice it, times ``‖c²OᵀO‖ ≈ d``)."""
    ts = transport_scales(blocks)
    mag = (c**2) * ts**2 * 3 + math.sqrt(blocks.d)
    if rel_c is not None:
        mag = mag + 2 * rel_c * blocks.d
    return edge_error(blocks, mag, blocks.d)


def transport_scale(blocks, tdt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Walk-gauge common scale ``s`` with ``O_ij = s Q_ij``, ``Q_ij`` orthogonal: returns
    ``(transport_scale (NaN if not common), common (bool), s_max)``."""
    d, sup = blocks.d, blocks.sup
    s_edge = blocks.transport_norms() / math.sqrt(d)
    s_max = _masked_max(s_edge, sup, (-1, -2))
    # the smallest edge scale on the support (off-support entries set to s_max, never below it)
    s_min = torch.where(sup, s_edge, s_max[..., None, None]).amin((-1, -2)) if s_edge.numel() else s_max
    s_safe = torch.where(s_max > 0, s_max, torch.ones_like(s_max))
    c = (1 / s_safe)[..., None, None].expand_as(blocks.P)
    qorth = _masked_max(blocks.gram_defect(c), sup, (-1, -2))
    common = ((s_max - s_min) <= tol(tdt, d, scale=_fmax(s_safe))) & (qorth <= tol(tdt, d, scale=float(d)))
    return torch.where(common, s_max, torch.full_like(s_max, float("nan"))), common, s_max


def check_scaled_isometry(blocks, tdt: torch.dtype) -> tuple[Check, torch.Tensor]:
    """Gauge-free ``B_ij = β_ij Q_ij`` (``β_ij = ‖B_ij‖_F/√d``, ``Q_ij`` orthogonal) with equal
    row sums ``s`` of ``β``; residual ``max(max ‖Q_ijᵀQ_ij − I‖_F, spread of the row sums / s)``.
    Returns the check and ``s`` (mean row sum)."""
    n, d = blocks.n, blocks.d
    beta = _floored_norms(blocks) / math.sqrt(d)
    mask = blocks.sup & (beta > 0)
    bsafe = torch.where(mask, beta, torch.ones_like(beta))
    c = torch.where(mask, blocks.P / bsafe, torch.zeros_like(beta))  # Q_ij = O_ij P_ij / β_ij
    q_def = _masked_max(blocks.gram_defect(c), mask, (-1, -2))
    rs = beta.sum(-1)
    s_est = rs.mean(-1)
    spread = (rs - s_est[..., None]).abs().amax(-1) / torch.where(s_est > 0, s_est, torch.ones_like(s_est))
    res = torch.maximum(q_def, spread)
    t_si = tol(tdt, n * d, scale=float(d))
    # β_ij = ‖B_ij‖/√d is known to rounding_error(terms + d², block_scale): a relative error
    # ρ_ij·that (ρ = block_scale/‖B‖, the cancellation ratio of the heads) carried into c = P/β
    # and into the row sums
    bs = blocks.block_scale()
    Bn = beta * math.sqrt(d)
    rho = torch.where(mask, bs / torch.where(mask, Bn, torch.ones_like(Bn)), torch.zeros_like(Bn))
    rel_beta = rounding_error(blocks.terms + d + 1, 1.0) * rho
    err = max(_gram_error(blocks, c, rel_beta), float(rel_beta.max()) * (n + 1) if rel_beta.numel() else 0.0)
    return make_check(
        "scaled_isometry",
        res,
        t_si,
        "zero block row" if bool((rs <= 0).any()) else None,
        error=err,
        require=s_est > 0,
    ), s_est


# ------------------------------------------------------------------------------------ conclusions
def check_self_adjoint(blocks, st: Stationary, tdt: torch.dtype) -> Check:
    """T3.1: ``max ‖π_i B_ij − π_j B_jiᵀ‖_F`` with the walk's π (``(DW)ᵀ = DW`` blockwise)."""
    n, d = blocks.n, blocks.d
    res = blocks.balance_defect(st.safe).amax((-1, -2))
    res = torch.where(st.defined, res, torch.full_like(res, float("nan")))
    gws = _fmax(st.safe[..., :, None] * blocks.norms())
    t_sa = tol(tdt, n * d, scale=max(gws, 1e-300))
    bs = blocks.block_scale()
    err = edge_error(blocks, st.safe[..., :, None] * bs + st.safe[..., None, :] * bs.transpose(-1, -2), 2)
    return make_check("self_adjoint", res, t_sa, _pi_reason(st), error=err, require=st.positive)


def probe_fields(batch, n: int, d: int, probes: int, seed: int, device) -> torch.Tensor:
    """Seeded standard-normal test fields ``(..., probes, n, d)`` (the same for every path)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(probes, *batch, n, d, generator=gen, dtype=F64).to(device)
    return x.movedim(0, -3) if len(batch) else x


def check_dirichlet(
    blocks, st: Stationary, common: torch.Tensor, s_max: torch.Tensor, tdt: torch.dtype, probes: int, seed: int
) -> Check:
    """T3.3 on seeded probes: ``|<x, Δx>_π − E(x) − ½(1 − s²)‖x‖²_π|`` relative to the magnitudes of
    every summed term (``s`` the common walk-gauge transport scale, 1 if none)."""
    n, d = blocks.n, blocks.d
    batch = blocks.P.shape[:-2]
    x = probe_fields(batch, n, d, probes, seed, blocks.P.device)
    pi = st.safe[..., None, :]
    Bx = blocks.apply(x)
    from numerics.laplacian import pi_inner

    lhs = pi_inner(x, x - Bx, pi)
    E = blocks.edge_energy(st.safe, x)
    s_w = torch.where(common, s_max, torch.ones_like(s_max))
    xx = pi_inner(x, x, pi)
    corr = 0.5 * (1 - s_w[..., None] ** 2) * xx
    dscale = xx * (1 + s_w[..., None] ** 2) + (pi[..., :, None] * Bx.abs() * x.abs()).sum((-1, -2)) + E.abs()
    rel = ((lhs - E - corr).abs() / dscale.clamp(min=1e-300)).amax(-1)
    rel = torch.where(st.defined, rel, torch.full_like(rel, float("nan")))
    # a relative residual of sums over n·d entries of products of H head terms
    return make_check(
        "dirichlet",
        rel,
        tol(tdt, n * d),
        None if bool(st.defined.all()) else "π undefined",
        error=rounding_error(n * d + blocks.terms + 2, 1.0),
    )


def spectrum_error(nd: int, w_norm: float) -> float:
    """Error bound of the computed extremes of the spectrum of ``Δ = I − W``: a backward-stable
    eigensolver returns the eigenvalues of ``Δ + E`` with ``‖E‖ ≤ nd·eps·‖Δ‖`` (``‖Δ‖ ≤ 1 + ‖W‖``);
    for a normal or π-self-adjoint ``Δ`` that is also the forward error. (For a non-normal ``Δ``
    the forward error grows with the eigenvalues' condition numbers, which no check here estimates:
    its decisions near the threshold are as good as the backward bound.)"""
    return rounding_error(nd, 1.0 + max(float(w_norm), 0.0))


def spectrum_checks(
    im_max, re_min, re_max, mod_max, scale, si: Check, t_sp: float, why: str | None = None, error: float = 0.0
):
    """``spectrum_interval`` (real, in [0, 2]), ``spectrum_disk`` (``|z − 1| ≤ 1``) and
    ``spectrum_scaled`` (real, in ``[1 − s, 1 + s]``) from the extremes of the spectrum of Δ:
    ``max |Im z|``, ``min Re z``, ``max Re z``, ``max |z − 1|`` (each ``(...)``)."""
    out = torch.clamp(torch.maximum(-re_min, re_max - 2), min=0)
    s_int = make_check("spectrum_interval", torch.maximum(im_max, out), t_sp, why, error=error)
    s_disk = make_check("spectrum_disk", torch.clamp(mod_max - 1, min=0), t_sp, why, error=error)
    out_s = torch.clamp(torch.maximum((1 - scale) - re_min, re_max - (1 + scale)), min=0)
    res_s = torch.where(si.holds, torch.maximum(im_max, out_s), torch.full_like(out_s, float("nan")))
    extra = None if bool(si.holds.all()) else "not a scaled isometry (no common scale s)"
    s_sc = make_check(
        "spectrum_scaled", res_s, t_sp, "; ".join(r for r in (why, extra) if r) or None, error=error, require=~si.fails
    )
    return s_int, s_disk, s_sc
