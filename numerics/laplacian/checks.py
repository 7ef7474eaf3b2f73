r"""One function per T3 hypothesis and conclusion, written once against the block-access protocol
(:class:`numerics.laplacian.blocks.Blocks`) and shared by the dense and the factored diagnostics,
and :func:`algebraic_checks`, every check that needs no spectrum.

Tolerances all come from :func:`numerics.tolerance.tol` with ``tdt`` the precision the walk was
given in (see :func:`numerics.laplacian.diagnose` for ``attention_dtype``).

Cost (the benchmark's random and reversible ``n = d = 64, H = 4`` walks, one thread, old and new
alternated in one process, ``process_time`` medians of 15–21 rounds, four runs under different
loads): :func:`algebraic_checks` with :func:`numerics.laplacian.factored.dirichlet_terms` 13.3 → 6.9
to 17.1 → 10.9 ms (ratio 0.52–0.64) and 23.4 → 11.3 to 24.2 → 14.7 ms (0.48–0.61). The work saved is in the block algebra (per-edge norms as sums of squares, products
kept for the second π and the three Gram scalings, one ``[T, Tᵀ]`` factor, the literal Dirichlet sum
in L2-sized chunks: :mod:`numerics.laplacian.blocks`) and in the two π solves
(:func:`numerics.markov.stationary_core`: the block-norm walk reuses the walk's communicating
classes). Formulas, tolerances, error bounds and decisions are unchanged; residuals move within
rounding. Tried and left: one batched pass for the per-walk Dirichlet certificate terms
(``numerics.laplacian.factored.dirichlet_terms``: bitwise the same, 0.068 → 0.065 ms, not worth the
change). Imports
:mod:`~numerics.laplacian.result`, :mod:`~numerics.laplacian.forms` and
:mod:`~numerics.laplacian.blocks` (for the type) from the package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.contracts.validate import as_tensor, check_finite
from numerics.errors import ShapeError
from numerics.laplacian.blocks import Blocks
from numerics.laplacian.forms import pi_inner
from numerics.laplacian.result import Check, make_check
from numerics.markov import StationaryInfo, stationary_core, weak_components
from numerics.tolerance import judge, rounding_error, tol

F64 = torch.float64

__all__ = [
    "Stationary",
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
    "probe_fields",
    "algebraic_checks",
]


def edge_error(blocks: Blocks, scale: torch.Tensor, extra: int = 0) -> float:
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
    info = stationary_core(P, dtype=tdt)
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


def support_components(st: Stationary, sup: torch.Tensor) -> torch.Tensor:
    """Weak components ``(...)`` of the walk's support ``sup`` (``P > 0``): one where the π solve
    found ``P`` irreducible (one communicating class spans one weak component: no second graph
    search, 0.3 ms at ``n = 64``), else :func:`numerics.markov.weak_components`."""
    if bool(st.info.irreducible.all()):
        return torch.ones(sup.shape[:-2], dtype=torch.int64, device=sup.device)
    return weak_components(sup | sup.transpose(-1, -2))


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


def block_pi(Bn: torch.Tensor, classes: tuple | None = None) -> tuple[torch.Tensor, str]:
    """Gauge-free π from ``N_ij = ‖B_ij‖_F``: ``π ∝ π'/r`` with ``π'`` stationary for ``N/r``
    (``classes``: the walk's ``StationaryInfo.classes``, reused where ``N`` has the walk's support)."""
    r = Bn.sum(-1)
    zero_row = (r <= 0).any(-1)
    safe = torch.where(r > 0, r, torch.ones_like(r))
    Nh = Bn / safe[..., None]
    Nh = torch.where((r > 0)[..., None], Nh, torch.eye(Bn.shape[-1], dtype=F64, device=Bn.device).expand_as(Nh))
    info = stationary_core(Nh, dtype=F64, classes=classes)
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


def check_block_detailed_balance(
    blocks: Blocks, tdt: torch.dtype, classes: tuple | None = None
) -> tuple[Check, torch.Tensor]:
    """Gauge-free ``max_ij ‖π_i B_ij − π_j B_jiᵀ‖_F`` with π from the block norms; returns the
    check and that π (``classes``: as for :func:`block_pi`)."""
    n, d = blocks.n, blocks.d
    Bn = _floored_norms(blocks)
    bpi, why = block_pi(Bn, classes)
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
def check_orthogonal(blocks: Blocks, tdt: torch.dtype) -> tuple[Check, float]:
    """``max ‖O_ijᵀ O_ij − I‖_F`` on the support; returns the check and ``max ‖O_ij‖_F²``."""
    d, sup = blocks.d, blocks.sup
    one = torch.ones_like(blocks.P)
    res = _masked_max(blocks.gram_defect(one), sup, (-1, -2))
    onorm = _fmax(_masked_max(blocks.transport_norms() ** 2, sup, (-1, -2)))
    return make_check("orthogonal", res, tol(tdt, d, scale=max(onorm, float(d))), error=_gram_error(blocks, one)), onorm


def check_transpose_symmetric(blocks: Blocks, tdt: torch.dtype, onorm: float) -> Check:
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


def _gram_error(blocks: Blocks, c: torch.Tensor, rel_c: torch.Tensor | None = None) -> float:
    """Error bound of ``‖c² O_ijᵀO_ij − I‖_F``: the products of the head terms of ``O_ij``
    (``c²·(Σ_h |w^h| ‖T_h‖)²``, which is what the factored path's Gram expansion sums and what the
    dense path's ``O_ij`` carries as rounding), plus ``‖I‖_F = √d``; ``rel_c`` adds the relative
    error of a computed scaling ``c`` (twice it, times ``‖c²OᵀO‖ ≈ d``)."""
    ts = transport_scales(blocks)
    mag = (c * ts) ** 2 * 3 + math.sqrt(blocks.d)  # (c·ts)²: c² alone overflows for tiny blocks
    if rel_c is not None:
        mag = mag + 2 * rel_c * blocks.d
    return edge_error(blocks, mag, blocks.d)


def _norm_error(blocks: Blocks) -> torch.Tensor:
    """Relative error of each computed block norm ``‖B_ij‖`` (and of ``‖O_ij‖ = ‖B_ij‖/P_ij``):
    ``rounding_error(terms + d + 1)·ρ_ij`` with ``ρ_ij = block_scale/‖B_ij‖``, the cancellation ratio
    of the heads (0 off the support and on zero blocks)."""
    Bn = _floored_norms(blocks)
    mask = blocks.sup & (Bn > 0)
    safe = torch.where(mask, Bn, torch.ones_like(Bn))
    rho = torch.where(mask, blocks.block_scale() / safe, torch.zeros_like(Bn))
    k = blocks.terms + blocks.d + 1
    # the norms are sums of squares, unscaled: below √(smallest normal) ≈ 1.5e-154 each square is
    # known only to the subnormal spacing 2⁻¹⁰⁷⁴ (relative k·2⁻¹⁰⁷⁴/‖B‖² = k·(2⁻⁵³⁷/‖B‖)², kept in range)
    under = torch.where(mask, k * (2.0**-537 / safe) ** 2, torch.zeros_like(Bn))
    return rounding_error(k, 1.0) * rho + under


def transport_scale(blocks: Blocks, tdt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Walk-gauge common scale ``s`` with ``O_ij = s Q_ij``, ``Q_ij`` orthogonal, decided with the
    error of the computed norms and Gram defects (the heads' cancellation, as in
    :func:`check_scaled_isometry`): returns ``(transport_scale (NaN unless certainly common),
    common (certainly), s_max, undecided (neither certainly common nor certainly not))``."""
    d, sup = blocks.d, blocks.sup
    s_edge = blocks.transport_norms() / math.sqrt(d)
    s_max = _masked_max(s_edge, sup, (-1, -2))
    # the smallest edge scale on the support (off-support entries set to s_max, never below it)
    s_min = torch.where(sup, s_edge, s_max[..., None, None]).amin((-1, -2)) if s_edge.numel() else s_max
    s_safe = torch.where(s_max > 0, s_max, torch.ones_like(s_max))
    c = (1 / s_safe)[..., None, None].expand_as(blocks.P)
    qorth = _masked_max(blocks.gram_defect(c), sup, (-1, -2))
    rel = _norm_error(blocks)
    rel_max = rel.amax((-1, -2)) if rel.numel() else torch.zeros_like(s_max)
    # s_max and s_min are each known to a relative rel_max; the Gram defect to _gram_error
    hs, fs = judge(s_max - s_min, tdt, d, scale=_fmax(s_safe), error=2 * rel_max * s_max)
    hq, fq = judge(qorth, tdt, d, scale=float(d), error=_gram_error(blocks, c, rel))
    common, not_common = hs & hq, fs | fq
    undecided = ~common & ~not_common
    return torch.where(common, s_max, torch.full_like(s_max, float("nan"))), common, s_max, undecided


def check_scaled_isometry(blocks: Blocks, tdt: torch.dtype) -> tuple[Check, torch.Tensor]:
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
    rel_beta = _norm_error(blocks)
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
def check_self_adjoint(blocks: Blocks, st: Stationary, tdt: torch.dtype) -> Check:
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
    blocks: Blocks,
    st: Stationary,
    common: torch.Tensor,
    s_max: torch.Tensor,
    tdt: torch.dtype,
    probes: int,
    seed: int,
    scale_undecided: torch.Tensor | None = None,
) -> Check:
    """T3.3 on seeded probes: ``|<x, Δx>_π − E(x) − ½(1 − s²)‖x‖²_π|`` relative to the magnitudes of
    every summed term (``s`` the common walk-gauge transport scale, 1 if none). ``E`` is the literal
    edge sum (``blocks.edge_energy``) unless the head expansion decides (:func:`_dirichlet_expanded`).
    Where ``scale_undecided`` (:func:`transport_scale` could not tell whether the scale is common),
    the identity to check is not determined: the check is undecided, with the reason."""
    n, d = blocks.n, blocks.d
    batch = blocks.P.shape[:-2]
    x = probe_fields(batch, n, d, probes, seed, blocks.P.device)
    pi = st.safe[..., None, :]
    Bx = blocks.apply(x)
    s_w = torch.where(common, s_max, torch.ones_like(s_max))
    xx = pi_inner(x, x, pi)
    corr = 0.5 * (1 - s_w[..., None] ** 2) * xx
    pre = xx * (1 + s_w[..., None] ** 2) + (pi[..., :, None] * Bx.abs() * x.abs()).sum((-1, -2))
    t_d = tol(tdt, n * d)
    # a relative residual of sums over n·d entries of products of H head terms
    error = rounding_error(n * d + blocks.terms + 2, 1.0)
    rel = _dirichlet_expanded(blocks, st, x, Bx, (xx, corr, pre, s_w), t_d, error)
    if rel is None:
        lhs = pi_inner(x, x - Bx, pi)
        E = blocks.edge_energy(st.safe, x)
        rel = ((lhs - E - corr).abs() / (pre + E.abs()).clamp(min=1e-300)).amax(-1)
    rel = torch.where(st.defined, rel, torch.full_like(rel, float("nan")))
    reasons = [] if bool(st.defined.all()) else ["π undefined"]
    if scale_undecided is not None and bool(scale_undecided.any()):
        rel = torch.where(scale_undecided, torch.full_like(rel, float("nan")), rel)
        reasons.append("undecided: whether the transports share one scale s is within rounding (the heads cancel)")
    return make_check("dirichlet", rel, t_d, "; ".join(reasons) or None, error=error)


def _dirichlet_expanded(blocks, st: Stationary, x, Bx, parts, t_d: float, error: float):
    """The Dirichlet residual of :func:`check_dirichlet` from the head expansion, or None where it
    does not decide. ``E = ½a − b + ½q`` (``a = Σ_i π_i r_i ‖x_i‖²``, ``r_i = Σ_j P_ij``,
    ``b = ⟨x, Wx⟩_π``, ``q = Σ_ij π_i P_ij ‖O_ij x_j‖²`` from ``blocks.transported_energy``), so the
    numerator ``<x, Δx>_π − E − corr`` is ``‖x‖²_π − ½a − ½q − corr`` (``b`` cancels): ``O(H²n(n + pd))``
    instead of the literal ``p n² d H``.

    Rounding bound: every term either route sums (the literal's ``‖x_i − O_ij x_j‖²`` and ``⟨x, Wx⟩``,
    the expansion's ``a``, ``q``, ``‖x‖²_π``) is at most, per probe, ``S = (2 + s²)‖x‖²_π +
    Σ_ij π_i P_ij (‖x_i‖ + σ_ij ‖x_j‖)²`` with ``σ_ij = Σ_h |w^h_ij| ‖T_h‖_F`` (the magnitude of
    ``O_ij``'s head terms, :func:`transport_scales`; ``‖|T_h| |x_j|‖ ≤ ‖T_h‖_F ‖x_j‖``) and is a sum of
    at most ``K = n² + nd + 2d + H² + H + 8`` rounded operations, so each route's numerator is within
    ``δ = rounding_error(K, S)`` of the exact one and its denominator (which holds ``|E|``) within
    ``2δ``: the two relative residuals differ by at most ``2(δ/den)(1 + rel)`` per probe. The
    expansion's value is used only where, for every walk of the batch with a defined π, it is
    farther than that plus the check's own ``error`` from the tolerance: the literal route then
    takes the same decision (holds: ``rel + error ≤ tol``; fails: ``rel − error > tol``). Elsewhere
    (a residual near the tolerance, e.g. a walk where T3.3 holds to rounding at large ``n²``)
    the caller computes the literal sum. The naive float64 reference is
    ``tests/numerics/test_dirichlet_expansion.py``. Measured (one thread, same process): the check
    on the random ``n = 64, d = 64, H = 4`` walk 11.4 → 1.9 ms (residual 0.23, decided); on the
    reversible walk of the benchmark (residual 1e-16, tolerance 5.8e-11, margin above it: ``n² = 4096``
    in ``K``) the literal sum decides, as before, for about 1 ms more."""
    q = blocks.transported_energy(st.safe, x) if hasattr(blocks, "transported_energy") else None
    if q is None:
        return None
    xx, corr, pre, s_w = parts
    n, d = blocks.n, blocks.d
    H = blocks.terms
    wt = st.safe[..., :, None] * blocks.P * blocks.sup
    nx2 = (x * x).sum(-1)  # (..., p, n)
    a = (wt.sum(-1)[..., None, :] * nx2).sum(-1)
    b = pi_inner(x, Bx, st.safe[..., None, :])
    E = 0.5 * a - b + 0.5 * q
    den = (pre + E.abs()).clamp(min=1e-300)
    relp = (xx - 0.5 * a - 0.5 * q - corr).abs() / den
    rel = relp.amax(-1)
    nx = nx2.sqrt()
    ts = transport_scales(blocks)
    S = xx * (2 + s_w[..., None] ** 2) + (
        wt[..., None, :, :] * (nx[..., :, :, None] + ts[..., None, :, :] * nx[..., :, None, :]) ** 2
    ).sum((-1, -2))
    delta = rounding_error(n * n + n * d + 2 * d + H * H + H + 8, 1.0) * S / den
    margin = (2 * delta * (1 + relp)).amax(-1) + error
    if bool((((rel - t_d).abs() > margin) | ~st.defined).all()):
        return rel
    return None


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


def algebraic_checks(blocks: Blocks, P: torch.Tensor, tdt, pi, probes: int, seed: int, tdt_p=None) -> dict:
    """Every check that needs no spectrum: one call per hypothesis / conclusion, any block algebra.
    ``tdt_p``: the precision of the walk matrix's entries (``attention_dtype``) for the checks on
    ``P`` alone (stochastic, π, detailed balance); default ``tdt``."""
    tdt_p = tdt if tdt_p is None else tdt_p
    st = stationary(P, tdt_p, pi)
    bdb, bpi = check_block_detailed_balance(blocks, tdt, st.info.classes)
    orth, onorm = check_orthogonal(blocks, tdt)
    ts = check_transpose_symmetric(blocks, tdt, onorm)
    t_scale, common, s_max, scale_undecided = transport_scale(blocks, tdt)
    si, scale = check_scaled_isometry(blocks, tdt)
    return {
        "stochastic": check_stochastic(P, tdt_p),
        "positive_stationary": st.check,
        "detailed_balance": check_detailed_balance(P, st, tdt_p),
        "block_detailed_balance": bdb,
        "orthogonal": orth,
        "transpose_symmetric": ts,
        "metric_compatible": check_metric_compatible(orth, ts),
        "scaled_isometry": si,
        "self_adjoint": check_self_adjoint(blocks, st, tdt),
        "dirichlet": check_dirichlet(blocks, st, common, s_max, tdt, probes, seed, scale_undecided),
        "_st": st,
        "_bpi": bpi,
        "_scale": scale,
        "_transport_scale": t_scale,
    }
