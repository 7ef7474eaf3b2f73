r"""Laplacian-reduction diagnostics (THEOREMS.md T3–T5): is ``Δ = I − W`` a connection Laplacian?

For a connection walk ``(W x)_i = Σ_j P_ij O_ij x_j`` with token-major blocks ``B_ij = P_ij O_ij``
(shape ``(..., n, n, d, d)``) the generator is ``Δ = I − W``. T3's hypotheses are

* (a) stochastic: ``Σ_j P_ij = 1``;
* (b) reversible: ``π_i P_ij = π_j P_ji`` for some **positive** ``π``;
* (c) metric-compatible: ``O_ij`` orthogonal and ``O_ji = O_ijᵀ``;

and under (a)+(b)+(c) its conclusions are: Δ self-adjoint in ``<x, y>_π = Σ_i π_i x_iᵀ y_i``;
spectrum real in ``[0, 2]``; the Dirichlet identity
``<x, Δx>_π = ½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²``; ``ker Δ`` = parallel sections
(``x_i = O_ij x_j`` on every edge); flat connections (``O_ij = R_i R_j^{-1}``) have ``dim ker = d``
per connected component.

:func:`diagnose` measures every hypothesis and conclusion on one walk (or a batch) and returns a
:class:`LaplacianDiagnostics` whose fields are :class:`Check` objects (``holds``, ``residual``,
``tol``, ``reason``). Conventions:

* *Walk gauge.* ``stochastic``, ``orthogonal``, ``transpose_symmetric``, ``detailed_balance`` and
  ``dirichlet`` use the walk's own ``P`` and ``O`` (``P = mean_h A^h`` for heads-form walks, T2).
* *Gauge-free.* ``block_detailed_balance`` (``π_i B_ij = π_j B_jiᵀ`` for some ``π > 0``, with
  ``π`` solved from the norms ``N_ij = ‖B_ij‖_F``) and ``scaled_isometry`` (``B_ij = β_ij Q_ij``,
  ``Q_ij`` orthogonal, all row sums of ``β`` equal to one scale ``s``) depend on ``B`` only.
* ``π`` is the left Perron vector of ``P`` (the stationary distribution when ``P`` is
  stochastic), normalised to sum 1. When ``P`` has several closed classes the stationary
  distribution is *not unique*: ``pi_unique`` is False, the reported ``π`` weights every closed
  class equally (any positive combination is equally valid for T3) and the reasons say so.
  Transient states (``π`` with zeros) make every ``π``-dependent check fail with a reason.
* Spectral checks: ``spectrum_interval`` (real, in ``[0, 2]``: T3.2), ``spectrum_disk``
  (``|z − 1| ≤ 1``: the weaker statement) and ``spectrum_scaled`` (real, in ``[1 − s, 1 + s]`` with
  the gauge-free scale ``s``: the scaled-isometry variant).
* Every tolerance comes from :func:`numerics.tolerance.tol` (float64 eps, size of the sum,
  scale of the operands). Computations run in float64 on the walk's device.

Dense pieces (spectrum, kernel, parallel sections, flatness) form ``nd × nd`` matrices and are
skipped with an explicit reason above ``max_dense``; use :mod:`numerics.spectra` for large walks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from numerics.contracts import Int, Passthrough, Tensor, Walk, contract, finite_on_support, parallel_memory
from numerics.errors import ShapeError, UndefinedError
from numerics.tolerance import tol
from numerics.validate import as_tensor, check_finite, check_ndim, check_nonnegative, check_square
from numerics.walk import ConnectionWalk

__all__ = [
    "Check",
    "LaplacianDiagnostics",
    "StationaryInfo",
    "as_walk",
    "diagnose",
    "reachability",
    "communicating_classes",
    "weak_components",
    "stationary_info",
    "stationary_distribution",
    "parallel_constraints",
    "generator_dense",
    "pi_inner",
    "dirichlet_energy",
]

F64 = torch.float64


# ---------------------------------------------------------------------------------------------
# result types
@dataclass
class Check:
    """One condition: ``holds`` (bool, batch shape), ``residual`` (float64, batch shape; NaN where
    undefined), the tolerance used, and ``reason`` (why it is undefined / skipped, else None)."""

    name: str
    holds: torch.Tensor
    residual: torch.Tensor
    tol: float
    reason: str | None = None

    def __bool__(self) -> bool:
        return bool(self.holds.all())

    @property
    def defined(self) -> torch.Tensor:
        return ~torch.isnan(self.residual)

    def __repr__(self) -> str:
        r = self.residual.detach().cpu()
        h = self.holds.detach().cpu()
        if r.ndim == 0:
            body = f"holds={bool(h)}, residual={r.item():.3e}"
        else:
            body = f"holds={int(h.sum())}/{h.numel()}, max residual={torch.nan_to_num(r, nan=-1).max().item():.3e}"
        why = f", reason={self.reason!r}" if self.reason else ""
        return f"Check({self.name}: {body}, tol={self.tol:.1e}{why})"


@dataclass
class StationaryInfo:
    """Left Perron data of a nonnegative ``P`` ``(..., n, n)``.

    ``pi`` ``(..., n)`` (sum 1; NaN where undefined), ``rho`` Perron root (1 for stochastic P),
    ``irreducible``, ``n_closed`` (number of closed communicating classes), ``transient`` (some
    state outside every closed class: ``π`` has zeros), ``unique``, ``residual``
    ``‖πP − ρπ‖_∞``, ``reasons`` (one string per batch element, '' when fine), ``condition`` the
    condition number of the Perron solve (for reducible stochastic ``P``: the largest over the
    per-class solves); π is reported undefined when ``condition · tol ≥ 1``. The solve is backward
    stable, so ``‖π̂ − π‖ / ‖π‖ ≲ condition · tol(dtype, n)``: any comparison of this π with an
    exact route must carry that factor."""

    pi: torch.Tensor
    rho: torch.Tensor
    irreducible: torch.Tensor
    n_closed: torch.Tensor
    transient: torch.Tensor
    unique: torch.Tensor
    residual: torch.Tensor
    reasons: list[str]
    condition: torch.Tensor | None = None  # cond(ρI − P + 11ᵀ) of the Perron solve; reducible
    # stochastic P: the largest cond(I − P_C + 11ᵀ) over the closed classes C; 1 where no solve ran


CHECK_NAMES = (
    "stochastic", "positive_stationary", "detailed_balance", "block_detailed_balance", "orthogonal",
    "transpose_symmetric", "metric_compatible", "scaled_isometry", "self_adjoint", "spectrum_interval",
    "spectrum_disk", "spectrum_scaled", "dirichlet", "kernel_parallel", "flat",
)


@dataclass
class LaplacianDiagnostics:
    r"""All T3 conditions of one walk (batch). See the module docstring for the definitions.

    Fields that are :class:`Check`: ``stochastic``, ``positive_stationary``, ``detailed_balance``,
    ``block_detailed_balance``, ``orthogonal``, ``transpose_symmetric``, ``metric_compatible``,
    ``scaled_isometry``, ``self_adjoint``, ``spectrum_interval`` (real, in ``[0, 2]``),
    ``spectrum_disk`` (``|z − 1| ≤ 1``), ``spectrum_scaled`` (real, in ``[1 − s, 1 + s]`` with the
    gauge-free scale ``s``; fails when ``scaled_isometry`` fails), ``dirichlet``, ``kernel_parallel``,
    ``flat``. Data: ``pi`` ``(..., n)`` (walk gauge), ``pi_unique``,
    ``block_pi`` ``(..., n)`` (gauge-free), ``rho`` (Perron root of P), ``scale`` (gauge-free
    scaled-isometry scale ``s``), ``transport_scale`` (common ``‖O_ij‖_F/√d`` in the walk gauge,
    NaN if not common), ``spectrum`` ``(..., nd)`` complex eigenvalues of Δ (None if skipped),
    ``kernel_dim``, ``parallel_dim``, ``n_components`` (weakly connected components of the support).
    """

    stochastic: Check
    positive_stationary: Check
    detailed_balance: Check
    block_detailed_balance: Check
    orthogonal: Check
    transpose_symmetric: Check
    metric_compatible: Check
    scaled_isometry: Check
    self_adjoint: Check
    spectrum_interval: Check
    spectrum_disk: Check
    spectrum_scaled: Check
    dirichlet: Check
    kernel_parallel: Check
    flat: Check
    pi: torch.Tensor
    pi_unique: torch.Tensor
    block_pi: torch.Tensor
    rho: torch.Tensor
    scale: torch.Tensor
    transport_scale: torch.Tensor
    spectrum: torch.Tensor | None
    kernel_dim: torch.Tensor | None
    parallel_dim: torch.Tensor | None
    n_components: torch.Tensor
    n: int
    d: int
    extra: dict = field(default_factory=dict)

    def checks(self) -> dict[str, Check]:
        return {name: getattr(self, name) for name in CHECK_NAMES}

    def hypotheses_t3(self) -> torch.Tensor:
        """(a) ∧ (b) ∧ (c): stochastic, reversible with a positive π, metric-compatible."""
        return (self.stochastic.holds & self.positive_stationary.holds & self.detailed_balance.holds
                & self.metric_compatible.holds)

    def conclusions_t3(self) -> torch.Tensor:
        """Items 1–4 of T3: π-self-adjoint, real spectrum in [0, 2], Dirichlet, ker = parallel.

        (The Dirichlet identity is the walk-gauge one with the scaled-isometry correction.)"""
        return (self.self_adjoint.holds & self.spectrum_interval.holds & self.dirichlet.holds
                & self.kernel_parallel.holds)

    def is_connection_laplacian(self) -> torch.Tensor:
        """Gauge-free T3 form: ``B_ij = p_ij Q_ij`` with ``Σ_j p_ij = 1``, ``Q`` orthogonal and
        ``π_i B_ij = π_j B_jiᵀ`` for some ``π > 0`` (scale 1)."""
        one = (self.scale - 1).abs() <= self.scaled_isometry.tol * 4
        return self.scaled_isometry.holds & one & self.block_detailed_balance.holds

    def failing(self, index: tuple = ()) -> list[str]:
        """Names of the checks that do not hold (for batch element ``index``)."""
        return [k for k, c in self.checks().items() if not bool(c.holds[index])]

    def summary(self, index: tuple = ()) -> str:
        """A fixed-width table for batch element ``index``."""
        lines = [f"{'condition':<24}{'holds':<7}{'residual':>12}  {'tol':>9}  reason"]
        for k, c in self.checks().items():
            r = c.residual[index].item()
            lines.append(f"{k:<24}{str(bool(c.holds[index])):<7}{r:>12.3e}  {c.tol:>9.1e}  {c.reason or ''}")
        s = self.scale[index].item()
        lines.append(f"scale s = {s:.6g}; rho = {self.rho[index].item():.6g}; pi unique = {bool(self.pi_unique[index])}")
        if self.spectrum is not None:
            ev = self.spectrum[index]
            lines.append("spectrum of Δ: " + format_spectrum(ev))
        return "\n".join(lines)

    def as_dict(self, index: tuple = ()) -> dict:
        out = {}
        for k, c in self.checks().items():
            out[k] = {"holds": bool(c.holds[index]), "residual": float(c.residual[index]), "tol": c.tol,
                      "reason": c.reason}
        out["scale"] = float(self.scale[index])
        out["pi"] = self.pi[index].detach().cpu().tolist()
        return out


def format_spectrum(ev: torch.Tensor, digits: int = 4, max_items: int = 12) -> str:
    """``{a, b±ci, ...}``: eigenvalues rounded, conjugate pairs merged, sorted by real part."""
    ev = ev.detach().cpu().to(torch.complex128).reshape(-1)
    items: list[str] = []
    q = 10.0 ** (-digits)
    vals = sorted(ev.tolist(), key=lambda z: (round(z.real / q) * q, round(z.imag / q) * q))
    for z in vals:
        re, im = round(z.real, digits) + 0.0, round(z.imag, digits) + 0.0
        if abs(im) < q:
            items.append(f"{re:g}")
        elif im > 0:
            items.append(f"{re:g}±{im:g}i")
    # collapse repeats
    out: list[str] = []
    for it in items:
        if out and out[-1].split("×")[0] == it:
            base, _, cnt = out[-1].partition("×")
            out[-1] = f"{base}×{int(cnt or 1) + 1}"
        else:
            out.append(it)
    if len(out) > max_items:
        out = out[:max_items] + ["…"]
    return "{" + ", ".join(out) + "}"


# ---------------------------------------------------------------------------------------------
# input handling
@contract(walk=Walk())
def as_walk(walk) -> ConnectionWalk:
    """A :class:`ConnectionWalk`, or blocks ``B`` ``(..., n, n, d, d)`` wrapped with the default
    gauge of :meth:`ConnectionWalk.from_blocks`. Complex / NaN / non-square input raises."""
    if isinstance(walk, ConnectionWalk):
        return walk
    B = as_tensor("B", walk)  # complex -> DTypeError
    check_ndim("B", B, 4, "(..., n, n, d, d)")
    if B.shape[-1] != B.shape[-2]:
        raise ShapeError(f"blocks must be square d×d, got trailing dims {tuple(B.shape[-2:])}", argument="B")
    if B.shape[-3] != B.shape[-4]:
        raise ShapeError(f"expected (..., n, n, d, d), got {tuple(B.shape)}", argument="B")
    check_finite("B", B)
    return ConnectionWalk.from_blocks(B)


def _check_walk_matrix(P) -> torch.Tensor:
    P = as_tensor("P", P)
    check_ndim("P", P, 2, "(..., n, n)")
    check_square("P", P, "(..., n, n)")
    check_finite("P", P)
    check_nonnegative("P", P)
    return P


# ---------------------------------------------------------------------------------------------
# graph structure in linear algebra (batched)
@contract(support=Tensor("... n n", dtype="mask"))
def reachability(support: torch.Tensor) -> torch.Tensor:
    """Reflexive-transitive closure ``R`` ``(..., n, n)`` of a boolean adjacency: ``R_ij`` iff
    ``j`` is reachable from ``i`` (``i → j`` along edges with ``support``); ``⌈log₂ n⌉`` squarings."""
    n = support.shape[-1]
    eye = torch.eye(n, dtype=torch.bool, device=support.device)
    R = (support | eye).to(F64)
    for _ in range(max(1, math.ceil(math.log2(max(n, 2))))):
        R = ((R @ R) > 0).to(F64)
    return R > 0


def _classes(R: torch.Tensor):
    """From the closure: same-class mask, closed-node mask, number of closed classes."""
    same = R & R.transpose(-1, -2)
    closed = ~(R & ~R.transpose(-1, -2)).any(-1)  # nothing reachable that cannot reach back
    size = same.sum(-1).to(F64)
    n_closed = torch.round((closed.to(F64) / size).sum(-1)).to(torch.int64)
    return same, closed, n_closed


@contract(support=Tensor("... n n", dtype="mask"))
def communicating_classes(support: torch.Tensor):
    """Strongly connected components of a boolean adjacency ``(..., n, n)`` (Tarjan via
    ``scipy.sparse.csgraph``, ``O(n²)`` per element on the CPU): returns ``(same, closed, n_closed)``
    — same-class mask ``(..., n, n)``, closed-node mask ``(..., n)`` (no edge leaves the node's
    class), number of closed classes ``(...)``. Equals :func:`_classes` of :func:`reachability`
    (which costs ``O(n³ log n)``), without the transitive closure."""
    from scipy.sparse.csgraph import connected_components

    n = support.shape[-1]
    S = support.reshape(-1, n, n).detach().cpu().numpy()
    same = np.zeros(S.shape, dtype=bool)
    closed = np.zeros(S.shape[:2], dtype=bool)
    n_closed = np.zeros(S.shape[0], dtype=np.int64)
    for b in range(S.shape[0]):
        k, lab = connected_components(S[b], directed=True, connection="strong")
        ii, jj = np.nonzero(S[b])
        leaving = lab[ii] != lab[jj]
        closed_comp = np.ones(k, dtype=bool)
        closed_comp[lab[ii[leaving]]] = False
        closed[b] = closed_comp[lab]
        n_closed[b] = int(closed_comp.sum())
        same[b] = lab[:, None] == lab[None, :]
    dev = support.device
    bshape = support.shape[:-2]
    return (torch.as_tensor(same, device=dev).reshape(*bshape, n, n),
            torch.as_tensor(closed, device=dev).reshape(*bshape, n),
            torch.as_tensor(n_closed, device=dev).reshape(bshape))


@contract(support=Tensor("... n n", dtype="mask"))
def weak_components(support: torch.Tensor) -> torch.Tensor:
    """Number of weakly connected components ``(...)`` of a boolean adjacency ``(..., n, n)``."""
    from scipy.sparse.csgraph import connected_components

    n = support.shape[-1]
    S = support.reshape(-1, n, n).detach().cpu().numpy()
    out = [connected_components(S[b], directed=True, connection="weak")[0] for b in range(S.shape[0])]
    return torch.as_tensor(out, dtype=torch.int64, device=support.device).reshape(support.shape[:-2])


def _perron_solve(P: torch.Tensor, rho: torch.Tensor):
    """Solve ``π (ρI − P + 11ᵀ) = 1ᵀ`` (nonsingular iff the Perron root is simple)."""
    n = P.shape[-1]
    eye = torch.eye(n, dtype=P.dtype, device=P.device)
    M = rho[..., None, None] * eye - P + 1.0
    rhs = torch.ones(*P.shape[:-1], 1, dtype=P.dtype, device=P.device)
    sol, info = torch.linalg.solve_ex(M.transpose(-1, -2), rhs)
    return sol[..., 0], info


@contract(P=Tensor("... n n", nonneg=True), dtype=Passthrough())
def stationary_info(P, *, dtype: torch.dtype | None = None) -> StationaryInfo:
    r"""Left Perron vector ``π`` of a nonnegative ``P`` ``(..., n, n)`` with ``πP = ρπ``, ``Σπ = 1``.

    For stochastic ``P`` (``ρ = 1``) this is the stationary distribution. Irreducible ``P``: ``π``
    unique and positive. Several closed classes (stochastic ``P``): each class's stationary
    distribution weighted ``1/k`` (``unique`` False). Reducible non-stochastic ``P``: undefined
    (NaN). ``dtype``: precision for the stochasticity tolerance (default: ``P``'s dtype)."""
    P = _check_walk_matrix(P)
    dtype = dtype or P.dtype
    P = P.to(F64)
    n = P.shape[-1]
    batch = P.shape[:-2]
    sup = P > 0
    same, closed, n_closed = communicating_classes(sup)
    irreducible = same.all(-1).all(-1)
    transient = ~closed.all(-1)
    rows = P.sum(-1)
    stoch = ((rows - 1).abs() <= tol(dtype, n)).all(-1)
    rho = torch.ones(batch, dtype=F64, device=P.device)
    if not bool(stoch.all()):
        ev = torch.linalg.eigvals(P)
        rho = torch.where(stoch, rho, ev.real.amax(-1))
    pi, info = _perron_solve(P, rho)
    pi = pi / pi.sum(-1, keepdim=True)
    # forward error of the solve ≲ cond(ρI − P + 11ᵀ) · backward error: a nearly decomposable walk
    # (couplings below roundoff) has a stationary π that float arithmetic cannot resolve
    eye = torch.eye(n, dtype=F64, device=P.device)
    cond = torch.linalg.cond(rho[..., None, None] * eye - P + 1.0) if n else torch.ones(batch, dtype=F64)
    cond = torch.where(irreducible & torch.isfinite(cond), cond, torch.where(irreducible, torch.inf, 1.0))
    ill = irreducible & (cond * tol(dtype, n) >= 1)
    ok = irreducible & (info == 0) & ~ill
    pi = torch.where(ok[..., None], pi, torch.full_like(pi, float("nan")))
    reasons = [""] * math.prod(batch)
    for b, bad in enumerate(ill.reshape(-1).tolist()):
        if bad:
            reasons[b] = (f"undefined: π is ill-conditioned (cond(ρI − P + 11ᵀ) = {cond.reshape(-1)[b].item():.1e}): "
                          f"a nearly decomposable walk whose couplings are below roundoff")
    flatP = P.reshape(-1, n, n)
    flat_pi = pi.reshape(-1, n).clone()
    flat_irr = irreducible.reshape(-1)
    flat_st = stoch.reshape(-1)
    flat_nc = n_closed.reshape(-1)
    flat_closed = closed.reshape(-1, n)
    flat_same = same.reshape(-1, n, n)
    flat_tr = transient.reshape(-1)
    flat_cond = cond.reshape(-1).clone()
    for b in range(flatP.shape[0]):
        if bool(flat_irr[b]):
            continue
        k = int(flat_nc[b])
        if not bool(flat_st[b]):
            reasons[b] = f"undefined: P is reducible and not stochastic ({k} closed classes)"
            continue
        piv = torch.zeros(n, dtype=F64, device=P.device)
        done = torch.zeros(n, dtype=torch.bool, device=P.device)
        flat_cond[b] = 1.0
        ill_cls: list = []
        for i in range(n):
            if done[i] or not flat_closed[b, i]:
                continue
            idx = torch.nonzero(flat_same[b, i]).reshape(-1)
            done[idx] = True
            sub = flatP[b][idx][:, idx]
            p_c, inf_c = _perron_solve(sub, torch.ones((), dtype=F64, device=P.device))
            # the class's own Perron solve carries its own condition number (same bound as above)
            m = int(idx.numel())
            c_c = torch.linalg.cond(torch.eye(m, dtype=F64, device=P.device) - sub + 1.0).item()
            c_c = c_c if math.isfinite(c_c) else math.inf
            flat_cond[b] = max(float(flat_cond[b]), c_c)
            if int(inf_c) != 0 or c_c * tol(dtype, m) >= 1:
                ill_cls.append((idx.tolist(), c_c))
            piv[idx] = p_c / p_c.sum() / k
        if ill_cls:
            flat_pi[b] = float("nan")
            where, c_c = max(ill_cls, key=lambda t: t[1])
            reasons[b] = (f"undefined: π is ill-conditioned on closed class {where} (cond(I − P_C + 11ᵀ) = "
                          f"{c_c:.1e}): a nearly decomposable class whose couplings are below roundoff")
            continue
        flat_pi[b] = piv
        msgs = []
        if k > 1:
            msgs.append(f"several stationary distributions ({k} closed classes): π not unique, "
                        f"reported π weights each class 1/{k}")
        if bool(flat_tr[b]):
            msgs.append("transient states: the stationary π has zeros (no positive π)")
        reasons[b] = "; ".join(msgs)
    pi = flat_pi.reshape(*batch, n)
    cond = flat_cond.reshape(batch)
    unique = (n_closed == 1) & ~torch.isnan(pi).any(-1)
    res = (pi.unsqueeze(-2) @ P).squeeze(-2) - rho[..., None] * pi
    residual = res.abs().amax(-1)
    return StationaryInfo(pi=pi, rho=rho, irreducible=irreducible, n_closed=n_closed, transient=transient,
                          unique=unique, residual=residual, reasons=reasons, condition=cond)


@contract(P=Tensor("... n n", nonneg=True))
def stationary_distribution(P) -> torch.Tensor:
    """The unique left Perron vector ``π`` ``(..., n)`` of ``P`` (stationary distribution for
    stochastic ``P``). Raises :class:`UndefinedError` when it is not unique (several closed classes)
    or undefined (reducible non-stochastic ``P``) in any batch element."""
    info = stationary_info(P)
    bad = ~info.unique
    if bool(bad.any()):
        why = next(r for r, b in zip(info.reasons, bad.reshape(-1).tolist()) if b) or "not unique"
        raise UndefinedError(f"no unique stationary distribution: {why}", argument="P")
    return info.pi


# ---------------------------------------------------------------------------------------------
# operators and forms
@contract(walk=Walk())
def generator_dense(walk) -> torch.Tensor:
    """Dense token-major ``Δ = I − W`` ``(..., nd, nd)`` in float64 (materialises ``(nd)²``)."""
    w = as_walk(walk)
    W = w.to_dense().to(F64)
    eye = torch.eye(W.shape[-1], dtype=F64, device=W.device)
    return eye - W


@contract(x=Tensor("... n d"), y=Tensor("... n d"), pi=Tensor("... n", nonneg=True))
def pi_inner(x: torch.Tensor, y: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """``<x, y>_π = Σ_i π_i x_iᵀ y_i`` for ``x, y`` ``(..., n, d)``, ``π`` ``(..., n)``."""
    return (pi[..., :, None] * x * y).sum((-1, -2))


@contract(P=Tensor("... n n", nonneg=True), O=Tensor("... n n d d", finite=False), pi=Tensor("... n", nonneg=True), x=Tensor("... n d"), after=finite_on_support("O", lambda a: a["P"] > 0))
def dirichlet_energy(P: torch.Tensor, O: torch.Tensor, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    r"""``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` for ``P`` ``(..., n, n)``, ``O`` ``(..., n, n, d, d)``,
    ``π`` ``(..., n)``, ``x`` ``(..., n, d)``. Edges with ``P_ij = 0`` contribute 0 (their ``O``,
    possibly NaN, is never read)."""
    sup = P > 0
    Oz = torch.where(sup[..., None, None], O, torch.zeros_like(O))
    Ox = torch.einsum("...ijab,...jb->...ija", Oz, x)
    diff = x[..., :, None, :] - Ox
    return 0.5 * (pi[..., :, None] * P * (diff ** 2).sum(-1)).sum((-1, -2))


@contract(O=Tensor("... n n d d", finite=False), support=Tensor("... n n", dtype="mask"), after=lambda a, s: (finite_on_support("O", lambda a: a["support"])(a, s), parallel_memory(a, s)))
def parallel_constraints(O: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""Constraint matrix ``C`` ``(..., n·n·d, n·d)`` of parallel sections: block row ``(i, j)`` is
    ``e_iᵀ ⊗ I − e_jᵀ ⊗ O_ij`` on edges of ``support`` and 0 elsewhere, so ``Cx = 0`` iff
    ``x_i = O_ij x_j`` on every edge (token-major ``x``)."""
    n, d = O.shape[-3], O.shape[-1]
    eye_n = torch.eye(n, dtype=O.dtype, device=O.device)
    eye_d = torch.eye(d, dtype=O.dtype, device=O.device)
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    # C[i, j, a, k, b] = δ_ik δ_ab − δ_jk O_ij[a, b]
    first = eye_n[:, None, None, :, None] * eye_d[None, None, :, None, :]  # (i, 1, a, k, b)
    first = first.expand(n, n, d, n, d)
    second = eye_n[None, :, None, :, None] * Oz[..., :, :, :, None, :]  # (..., i, j, a, k, b)
    C = (first - second) * support[..., :, :, None, None, None].to(O.dtype)
    return C.reshape(*O.shape[:-4], n * n * d, n * d)


def _parallel_gram(O: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""``G = CᵀC`` ``(..., nd, nd)`` for :func:`parallel_constraints` without forming ``C``:
    block ``(k, l)`` = ``Σ_{edges (i,j)} (δ_ik I − δ_jk O_ij)ᵀ (δ_il I − δ_jl O_ij)``."""
    n, d = O.shape[-3], O.shape[-1]
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    s = support.to(O.dtype)
    eye_n = torch.eye(n, dtype=O.dtype, device=O.device)
    eye_d = torch.eye(d, dtype=O.dtype, device=O.device)
    G = (s.sum(-1)[..., :, None, None, None] * eye_n[:, :, None, None]) * eye_d  # δ_kl outdeg(k) I
    OtO = (Oz.transpose(-1, -2) @ Oz).sum(-4)  # Σ_i O_ijᵀ O_ij, indexed by j
    G = G + eye_n[:, :, None, None] * OtO[..., :, None, :, :]
    G = G - Oz - Oz.transpose(-4, -3).transpose(-1, -2)
    return G.transpose(-3, -2).reshape(*O.shape[:-4], n * d, n * d)


def _apply_constraints(O: torch.Tensor, support: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """``C K`` ``(n·n·d, m)`` for one walk: row block ``(i, j)`` = ``K_i − O_ij K_j`` on the support."""
    n, d = O.shape[-3], O.shape[-1]
    Kb = K.reshape(n, d, -1)
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    R = Kb[:, None] - torch.einsum("ijab,jbm->ijam", Oz, Kb)
    R = R * support[:, :, None, None].to(R.dtype)
    return R.reshape(n * n * d, -1)


def _parallel_svd(O: torch.Tensor, support: torch.Tensor, max_entries: int = 1 << 22):
    """Singular values (descending), right singular vectors of ``C`` (parallel constraints) and
    whether the Gram path was used: an SVD of ``C`` when it is small, else an eigendecomposition of
    ``CᵀC`` (σ = √λ, accurate to √eps·‖C‖ only)."""
    n, d = O.shape[-3], O.shape[-1]
    if n * n * d * n * d <= max_entries:
        _, s, Vh = torch.linalg.svd(parallel_constraints(O, support), full_matrices=False)
        return s, Vh, False
    lam, V = torch.linalg.eigh(_parallel_gram(O, support))
    lam, V = lam.flip(-1), V.flip(-1)
    return lam.clamp(min=0).sqrt(), V.transpose(-1, -2), True


# ---------------------------------------------------------------------------------------------
def _nanmax(x: torch.Tensor, dims) -> torch.Tensor:
    return torch.where(torch.isnan(x), torch.full_like(x, -math.inf), x).amax(dims)


def _masked_max(x: torch.Tensor, mask: torch.Tensor, dims) -> torch.Tensor:
    v = torch.where(mask, x, torch.zeros_like(x))
    return v.amax(dims) if v.numel() else v.sum(dims)


def _block_pi(Bn: torch.Tensor) -> tuple[torch.Tensor, str]:
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


@contract(walk=Walk(), probes=Int(lo=1), seed=Int(lo=0), max_dense=Int(lo=0), pi=Tensor("... n", nonneg=True, optional=True), svd_max_entries=Int(lo=0))
def diagnose(walk, *, probes: int = 3, seed: int = 0, max_dense: int = 1024, pi=None,
             svd_max_entries: int = 1 << 22) -> LaplacianDiagnostics:
    r"""Measure every T3 condition of ``walk`` (a :class:`ConnectionWalk` of any kind, batched, or
    blocks ``B`` ``(..., n, n, d, d)``). See the module docstring for definitions and gauges.

    ``probes``: number of seeded random test fields for the Dirichlet identity. ``max_dense``:
    largest ``n·d`` for which the dense spectrum / kernel / parallel-section / flatness checks run
    (else they are reported undefined with the reason). ``pi``: optional ``(..., n)`` positive
    weights to use instead of the computed Perron vector (e.g. one chosen stationary
    distribution of a disconnected walk). ``svd_max_entries``: above this many entries of the
    parallel-section constraint matrix ``C`` (``n³d²``) its null space comes from ``CᵀC``
    (``(nd)²`` memory, rank threshold ``√eps``) instead of an SVD of ``C``.
    """
    w = as_walk(walk)
    # tolerances follow the input precision (float32 inputs carry float32 rounding); every
    # computation below runs in float64
    tdt = w.dtype if w.dtype in (torch.float16, torch.bfloat16, torch.float32) else F64
    w = w.to(dtype=F64)
    n, d = w.n, w.d
    dev = w.device
    P = w.walk_matrix.to(F64)
    B = w.blocks().to(F64)
    batch = P.shape[:-2]
    sup = P > 0
    O, _ = w.edge_transports()
    O = O.to(F64)
    O = torch.where(sup[..., None, None], O, torch.zeros_like(O))
    nan_b = torch.full(batch, float("nan"), dtype=F64, device=dev)
    false_b = torch.zeros(batch, dtype=torch.bool, device=dev)
    eye_d = torch.eye(d, dtype=F64, device=dev)

    def mk(name, residual, bound, reason=None, holds=None):
        residual = residual.to(F64)
        h = (residual <= bound) if holds is None else holds
        h = h & ~torch.isnan(residual)
        return Check(name, h, residual, float(bound), reason or None)

    # ---- (a) stochastic
    rows = P.sum(-1)
    t_row = tol(tdt, n)
    zero_rows = (rows <= 0).any(-1)
    stoch = mk("stochastic", (rows - 1).abs().amax(-1), t_row,
               "zero row(s) in P: not a walk" if bool(zero_rows.any()) else None)

    # ---- stationary π (walk gauge)
    info = stationary_info(P, dtype=tdt)
    reasons = sorted({r for r in info.reasons if r})
    if pi is not None:
        pi_t = as_tensor("pi", pi).to(F64)
        if pi_t.shape != P.shape[:-1]:
            raise ShapeError(f"expected {tuple(P.shape[:-1])}, got {tuple(pi_t.shape)}", argument="pi")
        check_finite("pi", pi_t)
        pi_v = pi_t / pi_t.sum(-1, keepdim=True)
        pi_res = ((pi_v.unsqueeze(-2) @ P).squeeze(-2) - info.rho[..., None] * pi_v).abs().amax(-1)
    else:
        pi_v = info.pi
        pi_res = info.residual
    if pi is None:
        # positivity of the computed π is structural (Perron–Frobenius: π > 0 exactly on the closed
        # classes, 0 on transient states), not numerical: an entry like 1e-238 (a state entered with
        # probability 1e-238) may round to 0 in the solve while the normwise error is still tiny
        pi_pos = ~info.transient & ~torch.isnan(pi_v).any(-1)
    else:
        pi_pos = (pi_v > 0).all(-1) & ~torch.isnan(pi_v).any(-1)
    t_pi = tol(tdt, n)
    pos_stat = mk("positive_stationary", pi_res, t_pi, "; ".join(reasons),
                  holds=(pi_res <= t_pi) & pi_pos)
    pi_def = ~torch.isnan(pi_v).any(-1)
    pi_safe = torch.where(pi_def[..., None], pi_v, torch.zeros_like(pi_v))

    # ---- (b) detailed balance, walk gauge
    F = pi_safe[..., :, None] * P
    db_res = (F - F.transpose(-1, -2)).abs().amax((-1, -2))
    db_res = torch.where(pi_def, db_res, nan_b)
    # π comes from a linear solve: its forward error carries the solve's condition number
    kappa = float(torch.nan_to_num(info.condition, nan=1.0, posinf=1.0).max().item()) if pi is None and F.numel() else 1.0
    t_db = tol(tdt, n, scale=max(F.abs().max().item(), 1e-300) if F.numel() else 1.0) * max(kappa, 1.0)
    pi_why = None if bool(pi_pos.all()) else ("no positive π: " + "; ".join(reasons) if reasons
                                              else "no positive π")
    # exact, rounding-free necessary condition: with π > 0, π_i P_ij = π_j P_ji needs P_ji > 0
    # whenever P_ij > 0 (a one-way edge whose flux is below the tolerance is still a certain failure)
    p_one_way = (sup & ~sup.transpose(-1, -2)).any(-1).any(-1)
    if bool((p_one_way & pi_pos).any()):
        ow = torch.nonzero((sup & ~sup.transpose(-1, -2)).reshape(-1, n, n)[p_one_way.reshape(-1).nonzero()[0, 0]])[0]
        i_, j_ = int(ow[0]), int(ow[1])
        pi_why = ((pi_why + "; ") if pi_why else "") + (
            f"support of P not symmetric (e.g. edge {i_}→{j_} has no reverse edge): exact detailed balance "
            f"is impossible for π > 0, whatever the size of the residual")
    db = mk("detailed_balance", db_res, t_db, pi_why, holds=(db_res <= t_db) & pi_pos & ~p_one_way)

    # ---- gauge-free block detailed balance
    Bn = torch.linalg.matrix_norm(B)  # (..., n, n)
    bpi, bpi_reason = _block_pi(Bn)
    bpi_def = ~torch.isnan(bpi).any(-1)
    bpi_safe = torch.where(bpi_def[..., None], bpi, torch.zeros_like(bpi))
    G = bpi_safe[..., :, None, None, None] * B
    bdb_res = torch.linalg.matrix_norm(G - G.transpose(-4, -3).transpose(-1, -2)).amax((-1, -2))
    bdb_res = torch.where(bpi_def, bdb_res, nan_b)
    gscale = max(float(torch.linalg.matrix_norm(G).max()), float(Bn.max()) / n, 1e-300)
    t_bdb = tol(tdt, n * d, scale=gscale)
    bdb = mk("block_detailed_balance", bdb_res, t_bdb, bpi_reason or None)

    # ---- (c) orthogonality and O_ji = O_ijᵀ (walk gauge, on the support)
    OtO = O.transpose(-1, -2) @ O
    orth_def = torch.linalg.matrix_norm(OtO - eye_d)
    orth_res = _masked_max(orth_def, sup, (-1, -2))
    onorm = _masked_max(torch.linalg.matrix_norm(O) ** 2, sup, (-1, -2))
    t_orth = tol(tdt, d, scale=max(float(onorm.max()) if onorm.numel() else 1.0, float(d)))
    orth = mk("orthogonal", orth_res, t_orth)
    two_way = sup & sup.transpose(-1, -2)
    ts_def = torch.linalg.matrix_norm(O.transpose(-4, -3) - O.transpose(-1, -2))
    ts_res = _masked_max(ts_def, two_way, (-1, -2))
    one_way = (sup & ~sup.transpose(-1, -2)).any(-1).any(-1)
    t_ts = tol(tdt, d, scale=max(math.sqrt(float(onorm.max())) if onorm.numel() else 1.0, 1.0))
    ts = mk("transpose_symmetric", ts_res, t_ts,
            "support not symmetric: checked on two-way edges only" if bool(one_way.any()) else None)
    mc = Check("metric_compatible", orth.holds & ts.holds, torch.maximum(orth.residual, ts.residual),
               max(t_orth, t_ts), None)

    # walk-gauge common transport scale (for the scaled Dirichlet identity)
    s_edge = torch.linalg.matrix_norm(O) / math.sqrt(d)
    s_max = _masked_max(s_edge, sup, (-1, -2))
    s_min = -_masked_max(-s_edge, sup, (-1, -2))
    s_safe = torch.where(s_max > 0, s_max, torch.ones_like(s_max))
    Qw = O / s_safe[..., None, None, None, None]
    qorth = _masked_max(torch.linalg.matrix_norm(Qw.transpose(-1, -2) @ Qw - eye_d), sup, (-1, -2))
    common = ((s_max - s_min) <= tol(tdt, d, scale=s_safe.max().item() if s_safe.numel() else 1.0)) & (
        qorth <= tol(tdt, d, scale=float(d)))
    transport_scale = torch.where(common, s_max, nan_b)

    # ---- gauge-free scaled isometry
    beta = Bn / math.sqrt(d)
    bsafe = torch.where(beta > 0, beta, torch.ones_like(beta))
    Q = B / bsafe[..., None, None]
    q_def = _masked_max(torch.linalg.matrix_norm(Q.transpose(-1, -2) @ Q - eye_d), beta > 0, (-1, -2))
    rs = beta.sum(-1)
    s_est = rs.mean(-1)
    s_spread = (rs - s_est[..., None]).abs().amax(-1) / torch.where(s_est > 0, s_est, torch.ones_like(s_est))
    si_res = torch.maximum(q_def, s_spread)
    t_si = tol(tdt, n * d, scale=float(d))
    si = mk("scaled_isometry", si_res, t_si, "zero block row" if bool((rs <= 0).any()) else None,
            holds=(si_res <= t_si) & (s_est > 0))
    scale = s_est

    # ---- π-self-adjointness (walk π)
    Gw = pi_safe[..., :, None, None, None] * B
    sa_res = torch.linalg.matrix_norm(Gw - Gw.transpose(-4, -3).transpose(-1, -2)).amax((-1, -2))
    sa_res = torch.where(pi_def, sa_res, nan_b)
    gws = torch.linalg.matrix_norm(Gw).amax((-1, -2)) if Gw.numel() else torch.ones(batch, dtype=F64)
    t_sa = tol(tdt, n * d, scale=max(float(gws.max()) if gws.numel() else 1.0, 1e-300))
    sa = mk("self_adjoint", sa_res, t_sa, pi_why, holds=(sa_res <= t_sa) & pi_pos)

    # ---- Dirichlet identity (walk gauge, scaled correction when the transports share a scale)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(probes, *batch, n, d, generator=gen, dtype=F64).to(dev)
    x = x.movedim(0, -3) if len(batch) else x  # (..., probes, n, d)
    Bx = torch.einsum("...ijab,...kjb->...kia", B, x)
    lhs = pi_inner(x, x - Bx, pi_safe[..., None, :])
    E = dirichlet_energy(P[..., None, :, :], O[..., None, :, :, :, :], pi_safe[..., None, :], x)
    s_w = torch.where(common, s_max, torch.ones_like(s_max))
    corr = 0.5 * (1 - s_w[..., None] ** 2) * pi_inner(x, x, pi_safe[..., None, :])
    # rounding scale: the magnitudes of every summed term
    dscale = (pi_inner(x, x, pi_safe[..., None, :]) * (1 + s_w[..., None] ** 2)
              + (pi_safe[..., None, :, None] * Bx.abs() * x.abs()).sum((-1, -2)) + E.abs())
    dir_rel = ((lhs - E - corr).abs() / dscale.clamp(min=1e-300)).amax(-1)
    dir_rel = torch.where(pi_def, dir_rel, nan_b)
    t_dir = tol(tdt, n * d)
    dirichlet = mk("dirichlet", dir_rel, t_dir, None if bool(pi_def.all()) else "π undefined")

    # ---- components of the undirected support
    und = sup | sup.transpose(-1, -2)
    n_comp = weak_components(und)

    # ---- dense pieces
    nd = n * d
    spectrum = kernel_dim = parallel_dim = None
    if nd <= max_dense:
        Wd = w.to_dense().to(F64)
        eye = torch.eye(nd, dtype=F64, device=dev)
        D = eye - Wd
        try:
            ev = torch.linalg.eigvals(D)
        except torch.linalg.LinAlgError:
            # torch's geev can fail to converge on matrices whose entries span hundreds of decades
            # (e.g. a 1e-131 coupling next to 5e-17 rounding); LAPACK through numpy (with balancing)
            # handles them: same algorithm family, float64, on the host
            ev = torch.as_tensor(np.linalg.eigvals(D.detach().cpu().numpy())).to(device=dev, dtype=torch.complex128)
        spectrum = ev
        wn = torch.linalg.matrix_norm(Wd, ord=2) if nd else torch.zeros(batch, dtype=F64, device=dev)
        t_sp = tol(tdt, nd, scale=max(float(wn.max()) if wn.numel() else 1.0, 1.0))
        im = ev.imag.abs().amax(-1)
        re = ev.real
        out = torch.clamp(torch.maximum(-re, re - 2), min=0).amax(-1)
        spec_int = mk("spectrum_interval", torch.maximum(im, out), t_sp)
        disk = torch.clamp((ev - 1).abs() - 1, min=0).amax(-1)
        spec_disk = mk("spectrum_disk", disk, t_sp)
        lo, hi = (1 - scale)[..., None], (1 + scale)[..., None]
        out_s = torch.clamp(torch.maximum(lo - re, re - hi), min=0).amax(-1)
        res_s = torch.where(si.holds, torch.maximum(im, out_s), nan_b)
        spec_sc = mk("spectrum_scaled", res_s, t_sp,
                     None if bool(si.holds.all()) else "not a scaled isometry (no common scale s)")
        # kernel of Δ and parallel sections
        _, sD, VhD = torch.linalg.svd(D)
        sC, VhC, gram_path = _parallel_svd(O, sup, max_entries=svd_max_entries)
        dn = sD[..., :1].clamp(min=1.0)
        cn = sC.amax(-1, keepdim=True).clamp(min=1.0)
        # relative rank thresholds: singular values from an SVD are accurate to eps·‖·‖; those
        # from √λ(CᵀC) (large walks) only to √eps·‖C‖
        thr_D = tol(tdt, nd)
        thr_C = max(thr_D, math.sqrt(tol(F64, nd))) if gram_path else thr_D
        kD = (sD <= thr_D * dn).sum(-1)
        kC = (sC <= thr_C * cn).sum(-1)
        kernel_dim, parallel_dim = kD, kC
        kp_res = torch.zeros(batch, dtype=F64, device=dev)
        flat_res = torch.zeros(batch, dtype=F64, device=dev)
        fD, fVD, fVC = D.reshape(-1, nd, nd), VhD.reshape(-1, nd, nd), VhC.reshape(-1, nd, nd)
        fO, fS = O.reshape(-1, n, n, d, d), sup.reshape(-1, n, n)
        fkD, fkC = kD.reshape(-1), kC.reshape(-1)
        fdn, fcn, fsC = dn.reshape(-1), cn.reshape(-1), sC.reshape(-1, sC.shape[-1])
        fsD = sD.reshape(-1, sD.shape[-1])
        fP, fpi, fpidef = P.reshape(-1, n, n), pi_safe.reshape(-1, n), pi_def.reshape(-1)
        t_k = max(thr_D, thr_C)
        kp_bound = torch.full(batch, t_k, dtype=F64, device=dev).reshape(-1)
        kp_amb = torch.zeros(batch, dtype=torch.bool, device=dev).reshape(-1)
        amb_why: list[str] = []
        fcomp = n_comp.reshape(-1)
        kp_flat = kp_res.reshape(-1)
        fl_flat = flat_res.reshape(-1)
        for b in range(fD.shape[0]):
            K = fVD[b, nd - int(fkD[b]):].transpose(0, 1)  # kernel basis of Δ (nd, kD)
            Z = fVC[b, nd - int(fkC[b]):].transpose(0, 1)  # parallel sections (nd, kC)
            r1 = torch.linalg.matrix_norm(fD[b] @ Z, ord=2).item() / fdn[b].item() if Z.shape[1] else 0.0
            # C K edge by edge: (K_i − O_ij K_j) on the support, never forming C
            r2 = (torch.linalg.matrix_norm(_apply_constraints(fO[b], fS[b], K), ord=2).item() / fcn[b].item()
                  if K.shape[1] else 0.0)
            kp_flat[b] = max(r1, r2)
            # A computed null basis is off the exact one by sin θ ≤ ‖E‖ / gap (Wedin / Davis–Kahan),
            # ‖E‖ ≤ thr·‖·‖, gap = the smallest singular value kept out of the null space; so
            # r2 = ‖CK‖/‖C‖ ≤ thr_D·‖D‖/gap_D and r1 = ‖DZ‖/‖D‖ ≤ thr_C·‖C‖/gap_C.
            kDb, kCb = int(fkD[b]), int(fkC[b])
            sDb, sCb = fsD[b], fsC[b]
            bnd = t_k
            if 0 < kDb < sDb.numel():
                bnd = max(bnd, thr_D * fdn[b].item() / sDb[sDb.numel() - kDb - 1].item())
            if 0 < kCb < sCb.numel():
                bnd = max(bnd, thr_C * fcn[b].item() / sCb[sCb.numel() - kCb - 1].item())
            kp_bound[b] = bnd
            # Counts that differ only by what the other operator cannot resolve are ambiguous, not a
            # violation. Δ sees a parallel-section defect quadratically: for a unit x with
            # ‖Δx‖ ≤ thr_D·‖Δ‖ the Dirichlet identity gives E(x) = ½ Σ π_i P_ij ‖(Cx)_ij‖²
            # = <x, Δx>_π ≤ π_max·thr_D·‖Δ‖, so a defect with E(x) below that (×2 for the identity's
            # own rounding) is invisible to Δ however clearly C resolves it. Conversely (Jensen,
            # rows of P summing to r_i) ‖Δz‖ ≤ max(r_max, 1)·‖Cz‖, so a parallel section that C
            # accepts at thr_C·‖C‖ may miss Δ's threshold by that much. Beyond these limits the
            # mismatch is certain (e.g. a kernel of Δ with a large Dirichlet energy).
            if kDb != kCb and bool(fpidef[b]):
                if kDb > kCb:
                    wts = (fpi[b][:, None] * fP[b]).clamp(min=0).sqrt()
                    WCK = _apply_constraints(fO[b], fS[b], K).reshape(n, n, d, -1) * wts[:, :, None, None]
                    e_max = 0.5 * torch.linalg.matrix_norm(WCK.reshape(n * n * d, -1), ord=2).item() ** 2
                    lim = 2 * fpi[b].max().item() * thr_D * fdn[b].item()
                    amb = e_max <= lim
                    what = (f"the extra directions of ker Δ have Dirichlet energy ≤ {e_max:.1e} (≤ {lim:.1e}, below "
                            f"what Δ resolves: it sees the defect ‖Cx‖ ≈ {math.sqrt(2 * e_max):.1e} only squared)")
                else:
                    lim = thr_C * fcn[b].item() * max(float(fP[b].sum(-1).max()), 1.0) / fdn[b].item()
                    amb = r1 <= lim
                    what = f"the extra parallel sections have ‖ΔZ‖/‖Δ‖ = {r1:.1e} ≤ {lim:.1e} (the Jensen bound)"
                if amb:
                    kp_amb[b] = True
                    amb_why.append(
                        f"undefined: ker Δ vs parallel sections is ambiguous at "
                        f"{str(tdt).replace('torch.', '')} precision: dim ker Δ = {kDb} at tolerance {thr_D:.1e}, "
                        f"dim parallel = {kCb} at {thr_C:.1e}, and {what}")
            need = int(fcomp[b]) * d  # flat: parallel sections of full dimension d per component
            if need == 0:
                fl_flat[b] = 0.0
            else:
                s_sorted = torch.sort(fsC[b]).values
                fl_flat[b] = s_sorted[need - 1].item() / fcn[b].item()
        kp_bound = kp_bound.reshape(batch)
        kp_amb = kp_amb.reshape(batch)
        kp_res = torch.where(kp_amb, nan_b, kp_res)
        kp = mk("kernel_parallel", kp_res, float(kp_bound.max()) if kp_bound.numel() else t_k,
                amb_why[0] if amb_why else None, holds=(kp_res <= kp_bound) & (kD == kC) & ~kp_amb)
        flat = mk("flat", flat_res, thr_C)
    else:
        why = f"skipped: n·d = {nd} > max_dense = {max_dense} (use numerics.spectra)"
        spec_int = Check("spectrum_interval", false_b, nan_b, float("nan"), why)
        spec_disk = Check("spectrum_disk", false_b, nan_b, float("nan"), why)
        spec_sc = Check("spectrum_scaled", false_b, nan_b, float("nan"), why)
        kp = Check("kernel_parallel", false_b, nan_b, float("nan"), why)
        flat = Check("flat", false_b, nan_b, float("nan"), why)

    return LaplacianDiagnostics(
        stochastic=stoch, positive_stationary=pos_stat, detailed_balance=db, block_detailed_balance=bdb,
        orthogonal=orth, transpose_symmetric=ts, metric_compatible=mc, scaled_isometry=si, self_adjoint=sa,
        spectrum_interval=spec_int, spectrum_disk=spec_disk, spectrum_scaled=spec_sc, dirichlet=dirichlet, kernel_parallel=kp, flat=flat,
        pi=pi_v, pi_unique=info.unique, block_pi=bpi, rho=info.rho, scale=scale, transport_scale=transport_scale,
        spectrum=spectrum, kernel_dim=kernel_dim, parallel_dim=parallel_dim, n_components=n_comp, n=n, d=d,
    )
