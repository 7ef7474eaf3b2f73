r"""Finite Markov chains on the support of a walk matrix: classes, periodicity, stationary π.

Everything here is batched over leading dims ``...`` of a nonnegative ``P`` ``(..., n, n)``.

* :func:`communicating_classes` — strongly connected components (Tarjan via
  ``scipy.sparse.csgraph``), closed classes (no edge leaves the class) and their number;
  :func:`weak_components` — weakly connected components.
* :func:`reachability` and :func:`classes_from_reachability` — the same classes from the
  reflexive-transitive closure by repeated boolean squaring (``O(n³ log n)``, pure linear
  algebra): a second, independent route, used to cross-check the first.
* :func:`period` — the period of each node's communicating class (gcd of its cycle lengths; 0 for
  a class without a cycle, i.e. a single node without a self-loop).
* :func:`stationary_info` — the left Perron vector ``π`` (``πP = ρπ``, ``Σπ = 1``) with its
  conditioning guard: ``π`` solves ``π(ρI − P + 11ᵀ) = 1ᵀ`` (backward stable), so its relative
  forward error is ``≲ cond · tol``; a solve with ``cond · tol(dtype, n) ≥ 1`` is reported
  undefined with the reason (a nearly decomposable chain whose couplings are below roundoff).
  Reducible stochastic ``P``: one solve per closed class, each class weighted ``1/k``.
  :func:`stationary_core` is its body for the diagnostics of :mod:`numerics.laplacian` (their walk
  matrix was checked when the walk was built; the block-norm walk reuses the walk's classes).
  :func:`stationary_distribution` returns the unique ``π`` or raises.

``numerics.graphs`` answers the same questions with networkx and is kept independent of this
module on purpose (the tests compare the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from numerics.contracts.declarations import PrecisionDType, Tensor, batch_agree, contract
from numerics.contracts.validate import as_tensor, check_finite, check_ndim, check_nonnegative, check_square
from numerics.errors import UndefinedError
from numerics.tolerance import tol

__all__ = [
    "StationaryInfo",
    "reachability",
    "classes_from_reachability",
    "communicating_classes",
    "weak_components",
    "period",
    "perron_solve",
    "stationary_info",
    "stationary_distribution",
]

F64 = torch.float64


def _check_walk_matrix(P) -> torch.Tensor:
    P = as_tensor("P", P)
    check_ndim("P", P, 2, "(..., n, n)")
    check_square("P", P, "(..., n, n)")
    check_finite("P", P)
    check_nonnegative("P", P)
    return P


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
    classes: tuple | None = None  # (support P > 0, same, closed, n_closed): communicating_classes of the
    # support, which stationary_core reuses for another matrix with the same support


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


@contract(R=Tensor("... n n", dtype="mask"))
def classes_from_reachability(R: torch.Tensor):
    """From the closure ``R`` of :func:`reachability`: same-class mask ``(..., n, n)``, closed-node
    mask ``(..., n)`` and number of closed classes ``(...)`` (what :func:`communicating_classes`
    returns, by linear algebra instead of Tarjan)."""
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
    class), number of closed classes ``(...)``. Equals :func:`classes_from_reachability` of :func:`reachability`
    (which costs ``O(n³ log n)``), without the transitive closure."""
    return _classes(support)


def _csr(n: int, ii: np.ndarray, jj: np.ndarray):
    """The adjacency with edges ``ii → jj`` (row-major order, as ``np.nonzero`` gives them) as a
    CSR matrix: scipy's csgraph validates a dense adjacency through a masked array, about 70 µs
    more per call at ``n = 64`` than this."""
    from scipy.sparse import csr_matrix

    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ii, minlength=n), out=indptr[1:])
    return csr_matrix((np.ones(jj.size), jj, indptr), shape=(n, n))


def _classes(support: torch.Tensor):
    """:func:`communicating_classes` without its argument checks (the callers in this module
    pass a support they built)."""
    from scipy.sparse.csgraph import connected_components

    n = support.shape[-1]
    S = support.reshape(-1, n, n).detach().cpu().numpy()
    same = np.zeros(S.shape, dtype=bool)
    closed = np.zeros(S.shape[:2], dtype=bool)
    n_closed = np.zeros(S.shape[0], dtype=np.int64)
    for b in range(S.shape[0]):
        ii, jj = np.nonzero(S[b])
        k, lab = connected_components(_csr(n, ii, jj), directed=True, connection="strong")
        leaving = lab[ii] != lab[jj]
        closed_comp = np.ones(k, dtype=bool)
        closed_comp[lab[ii[leaving]]] = False
        closed[b] = closed_comp[lab]
        n_closed[b] = int(closed_comp.sum())
        same[b] = lab[:, None] == lab[None, :]
    dev = support.device
    bshape = support.shape[:-2]
    return (
        torch.as_tensor(same, device=dev).reshape(*bshape, n, n),
        torch.as_tensor(closed, device=dev).reshape(*bshape, n),
        torch.as_tensor(n_closed, device=dev).reshape(bshape),
    )


@contract(support=Tensor("... n n", dtype="mask"))
def weak_components(support: torch.Tensor) -> torch.Tensor:
    """Number of weakly connected components ``(...)`` of a boolean adjacency ``(..., n, n)``."""
    from scipy.sparse.csgraph import connected_components

    n = support.shape[-1]
    S = support.reshape(-1, n, n).detach().cpu().numpy()
    out = [
        connected_components(_csr(n, *np.nonzero(S[b])), directed=True, connection="weak")[0] for b in range(S.shape[0])
    ]
    return torch.as_tensor(out, dtype=torch.int64, device=support.device).reshape(support.shape[:-2])


@contract(support=Tensor("... n n", dtype="mask"))
def period(support: torch.Tensor) -> torch.Tensor:
    """Period of each node's communicating class ``(..., n)`` (int64) for a boolean adjacency
    ``(..., n, n)``: the gcd of the lengths of the cycles through the class, found as the gcd of
    ``level(u) + 1 − level(v)`` over the class's edges ``u → v`` with BFS levels from one node
    (``O(n²)`` per element). A class with no cycle (one node, no self-loop) has period 0; a
    closed class of period 1 is aperiodic."""
    n = support.shape[-1]
    S = support.reshape(-1, n, n).detach().cpu().numpy().astype(bool)
    out = np.zeros((S.shape[0], n), dtype=np.int64)
    from scipy.sparse.csgraph import connected_components

    for b in range(S.shape[0]):
        k, lab = connected_components(S[b], directed=True, connection="strong")
        for c in range(k):
            nodes = np.nonzero(lab == c)[0]
            level: dict[int, int] = {int(nodes[0]): 0}
            queue = [int(nodes[0])]
            g = 0
            while queue:
                u = queue.pop(0)
                for v in map(int, np.nonzero(S[b, u])[0]):
                    if lab[v] != c:
                        continue
                    if v in level:
                        g = math.gcd(g, abs(level[u] + 1 - level[v]))
                    else:
                        level[v] = level[u] + 1
                        queue.append(v)
            out[b, nodes] = g
    return torch.as_tensor(out, device=support.device).reshape(support.shape[:-1])


@contract(P=Tensor("... n n", nonneg=True), rho=Tensor("...", nonneg=True), after=batch_agree(P=2, rho=0))
def perron_solve(P: torch.Tensor, rho: torch.Tensor):
    """Solve ``π (ρI − P + 11ᵀ) = 1ᵀ`` (nonsingular iff the Perron root is simple)."""
    return _perron(P, rho)


def _perron(P: torch.Tensor, rho: torch.Tensor):
    """:func:`perron_solve` without its argument checks (for :func:`stationary_core`)."""
    n = P.shape[-1]
    eye = torch.eye(n, dtype=P.dtype, device=P.device)
    M = rho[..., None, None] * eye - P + 1.0
    rhs = torch.ones(*P.shape[:-1], 1, dtype=P.dtype, device=P.device)
    sol, info = torch.linalg.solve_ex(M.transpose(-1, -2), rhs)
    # the Perron vector of a nonnegative matrix is nonnegative: a negative entry is the solve's
    # rounding (an entry ~1e-134 comes out as −6e-17), within the forward error that the callers'
    # conditioning guard bounds; clamping keeps π a valid weight (NaN stays NaN)
    return sol[..., 0].clamp(min=0), info


@contract(P=Tensor("... n n", nonneg=True), dtype=PrecisionDType(optional=True))
def stationary_info(P, *, dtype: torch.dtype | None = None) -> StationaryInfo:
    r"""Left Perron vector ``π`` of a nonnegative ``P`` ``(..., n, n)`` with ``πP = ρπ``, ``Σπ = 1``.

    For stochastic ``P`` (``ρ = 1``) this is the stationary distribution. Irreducible ``P``: ``π``
    unique and positive. Several closed classes (stochastic ``P``): each class's stationary
    distribution weighted ``1/k`` (``unique`` False). Reducible non-stochastic ``P``: undefined
    (NaN). ``dtype``: precision for the stochasticity tolerance (default: ``P``'s dtype)."""
    return stationary_core(P, dtype=dtype)


def stationary_core(P, *, dtype: torch.dtype | None = None, classes: tuple | None = None) -> StationaryInfo:
    """:func:`stationary_info` under its own checks of ``P`` (finite, nonnegative, ``(..., n, n)``)
    but not the declared contract's second pass, for the diagnostics (their walk matrix and their
    block-norm walk); ``classes``: the ``StationaryInfo.classes`` of another matrix, whose
    communicating classes are reused when its support equals ``P > 0`` (compared, never assumed).
    Measured on the benchmark's random walk (``n = 64``), one thread, alternated in one process:
    :func:`stationary_info` before this split 1.84 ms, this 1.10 (no nested contracts of
    :func:`communicating_classes` and :func:`perron_solve`, no scipy dense-graph validation, no
    per-element Python loop on an irreducible batch), 0.79 with ``classes``."""
    P = _check_walk_matrix(P)
    dtype = dtype or P.dtype
    P = P.to(F64)
    n = P.shape[-1]
    batch = P.shape[:-2]
    sup = P > 0
    if classes is not None and classes[0].shape == sup.shape and torch.equal(classes[0], sup):
        same, closed, n_closed = classes[1:]
    else:
        same, closed, n_closed = _classes(sup)
    irreducible = same.all(-1).all(-1)
    transient = ~closed.all(-1)
    rows = P.sum(-1)
    stoch = ((rows - 1).abs() <= tol(dtype, n)).all(-1)
    rho = torch.ones(batch, dtype=F64, device=P.device)
    if not bool(stoch.all()):
        ev = torch.linalg.eigvals(P)
        rho = torch.where(stoch, rho, ev.real.amax(-1))
    pi, info = _perron(P, rho)
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
    for b in ill.reshape(-1).nonzero().reshape(-1).tolist():
        reasons[b] = (
            f"undefined: π is ill-conditioned (cond(ρI − P + 11ᵀ) = {cond.reshape(-1)[b].item():.1e}): "
            f"a nearly decomposable walk whose couplings are below roundoff"
        )
    reducible = (~irreducible).reshape(-1).nonzero().reshape(-1).tolist()
    if reducible:  # one solve per closed class (an irreducible batch skips this)
        pi, cond = _per_class(P, pi, cond, reducible, stoch, n_closed, closed, same, transient, reasons, dtype)
    unique = (n_closed == 1) & ~torch.isnan(pi).any(-1)
    res = (pi.unsqueeze(-2) @ P).squeeze(-2) - rho[..., None] * pi
    residual = res.abs().amax(-1)
    return StationaryInfo(
        pi=pi,
        rho=rho,
        irreducible=irreducible,
        n_closed=n_closed,
        transient=transient,
        unique=unique,
        residual=residual,
        reasons=reasons,
        condition=cond,
        classes=(sup, same, closed, n_closed),
    )


def _per_class(
    P: torch.Tensor,
    pi: torch.Tensor,
    cond: torch.Tensor,
    reducible: list,
    stoch: torch.Tensor,
    n_closed: torch.Tensor,
    closed: torch.Tensor,
    same: torch.Tensor,
    transient: torch.Tensor,
    reasons: list,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """π and its condition number of the reducible elements (flat indices ``reducible``) of a batch:
    undefined unless stochastic, else one Perron solve per closed class, each class weighted ``1/k``
    (``reasons`` filled in place)."""
    n = P.shape[-1]
    batch = P.shape[:-2]
    flatP = P.reshape(-1, n, n)
    flat_pi = pi.reshape(-1, n).clone()
    flat_st = stoch.reshape(-1)
    flat_nc = n_closed.reshape(-1)
    flat_closed = closed.reshape(-1, n)
    flat_same = same.reshape(-1, n, n)
    flat_tr = transient.reshape(-1)
    flat_cond = cond.reshape(-1).clone()
    for b in reducible:
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
            p_c, inf_c = _perron(sub, torch.ones((), dtype=F64, device=P.device))
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
            reasons[b] = (
                f"undefined: π is ill-conditioned on closed class {where} (cond(I − P_C + 11ᵀ) = "
                f"{c_c:.1e}): a nearly decomposable class whose couplings are below roundoff"
            )
            continue
        flat_pi[b] = piv
        msgs = []
        if k > 1:
            msgs.append(
                f"several stationary distributions ({k} closed classes): π not unique, "
                f"reported π weights each class 1/{k}"
            )
        if bool(flat_tr[b]):
            msgs.append("transient states: the stationary π has zeros (no positive π)")
        reasons[b] = "; ".join(msgs)
    return flat_pi.reshape(*batch, n), flat_cond.reshape(batch)


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
