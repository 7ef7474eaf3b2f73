r"""The parallel sections of a factored walk and the pieces both kernel routes share
(:mod:`numerics.laplacian.kernel` and its baseline :mod:`numerics.laplacian.kernel_arpack`): the BFS
section tree of the support, the root-fixed sections basis (a section is fixed by its value at one
token per closed class), the Gram of ``C`` on them, the row-chunked factor of ``C Q``, the lower bound of ``σ(C)`` through the
tree rows, the Krylov Ritz refinement, the count of parallel sections with its straddle rule and the
sections that lie in ``ker Δ``."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks
from numerics.laplacian.krylov import block_op

F64 = torch.float64

__all__ = [
    "section_tree",
    "edge_transports",
    "sections_basis",
    "constraints_factor",
    "sections_gram",
    "lower_bound",
    "krylov_ritz",
    "parallel_count",
    "sections_in_kernel",
    "subspace_bound",
    "flat_interval",
    "norm_bounds",
]


def section_tree(sup: np.ndarray):
    """``(roots, parent, root_of, depth)`` of a BFS forest of a boolean adjacency ``sup``
    ``(n, n)`` towards one root per closed class (``parent[i] = j`` with ``sup[i, j]``; ``-1`` at
    the roots; ``root_of[i]`` the index of ``i``'s root in ``roots``)."""
    from scipy.sparse.csgraph import connected_components

    n = sup.shape[0]
    k, lab = connected_components(sup, directed=True, connection="strong")
    ii, jj = np.nonzero(sup)
    closed = np.ones(k, dtype=bool)
    closed[lab[ii[lab[ii] != lab[jj]]]] = False
    roots = [int(np.nonzero(lab == c)[0][0]) for c in range(k) if closed[c]]
    parent = np.full(n, -1, dtype=np.int64)
    root_of = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    root_of[roots] = np.arange(len(roots))
    # the FIFO breadth-first search from all roots at once, one level at a time: a new token's parent
    # is the first token of the level (queue order) with an edge to it, and the next level keeps the
    # queue's order (by that parent's position, then by index) — the tree of the token-by-token
    # queue (tests/numerics/test_diagnose_agreement.py compares them), without a Python loop per token
    level = np.asarray(roots, dtype=np.int64)
    while level.size:
        reach = sup[:, level] & (root_of < 0)[:, None]
        new = np.nonzero(reach.any(1))[0]
        pos = reach[new].argmax(1)
        parent[new], root_of[new], depth[new] = level[pos], root_of[level[pos]], depth[level[pos]] + 1
        level = new[np.lexsort((new, pos))]
    return roots, parent, root_of, depth


def edge_transports(e: FactoredBlocks, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
    """``O_ij = Σ_h w^h_ij T_h`` ``(len(i), d, d)`` for the listed edges."""
    return torch.einsum("he,had->ead", e.w[:, i, j], e.T)


def sections_basis(e: FactoredBlocks, sup: np.ndarray):
    """Orthonormal basis ``Q`` ``(N, m)`` of the sections fixed by their root values, the tree's
    ``s_T`` lower bound and the tree facts (about ``2·m·N + 2·n·d²`` numbers at the peak)."""
    n, d = e.n, e.d
    roots, parent, root_of, depth = section_tree(sup)
    order = np.argsort(depth, kind="stable")
    kids = np.nonzero(parent >= 0)[0]
    M = torch.zeros(n, d, d, dtype=F64)
    if len(kids):
        M[kids] = edge_transports(e, torch.as_tensor(kids), torch.as_tensor(parent[kids]))
    D = int(depth.max()) if n else 0
    nu = 0.0
    if D > 1:
        nu = math.sqrt(int(np.bincount(parent[kids]).max())) * float(torch.linalg.matrix_norm(M[kids], ord=2).max())
    for i in order:  # M_i = O_{i p(i)} M_{p(i)}, in place (parents first)
        if parent[i] < 0:
            M[i] = torch.eye(d, dtype=F64)
        elif depth[i] > 1:
            M[i] = M[i] @ M[parent[i]]
    m = d * len(roots)
    if len(roots) == 1:
        E = M.reshape(n * d, d)
    else:
        E = torch.zeros(n, d, m, dtype=F64)
        for i in range(n):
            c = int(root_of[i])
            E[i, :, c * d : (c + 1) * d] = M[i]
        E = E.reshape(n * d, m)
    del M
    Q = torch.linalg.qr(E)[0]
    s_T = 1.0 if D <= 1 else 1.0 / sum(nu**k for k in range(D))
    return Q, s_T, {"closed_classes": len(roots), "tree_depth": D, "s_T": s_T}


def constraints_factor(e: FactoredBlocks, X: torch.Tensor) -> torch.Tensor:
    """Triangular factor ``R`` ``(≤k, k)`` of ``C X`` (``X`` ``(N, k)``): ``RᵀR = (CX)ᵀ(CX)``,
    accumulated over row chunks of ``C X`` (``(CX)_ij = X_i − O_ij X_j`` on the support)."""
    n, d = e.n, e.d
    k = X.shape[1]
    x = X.T.reshape(k, n, d)
    Y = e._tx(x)
    s = e.sup.to(F64)
    R = torch.zeros(0, k, dtype=F64)
    step = e._row_chunk(k * n * d * 2)
    for i0 in range(0, n, step):
        i1 = min(i0 + step, n)
        y = (x[:, i0:i1, None, :] - e._transported(Y, i0, i1)) * s[None, i0:i1, :, None]
        rows = y.permute(1, 2, 3, 0).reshape(-1, k)
        R = torch.linalg.qr(torch.cat([R, rows]), mode="r")[1]
    return R


#: most columns of ``CᵀC Q`` gathered before they are projected on ``Q`` (:func:`sections_gram`)
GRAM_SPAN = 64


def sections_gram(e: FactoredBlocks, Q: torch.Tensor, meter, block: int) -> torch.Tensor:
    """``Qᵀ CᵀC Q`` ``(m, m)`` by the edge-Gram expansion of :meth:`FactoredBlocks.constraints_gram_fast`
    with one walk-like product per column, ``block`` columns at a time: ``Qᵀ(D Q) − A − Aᵀ`` with
    ``A = Qᵀ(Σ_j O_kj Q_j)``, since ``Qᵀ(Σ_i O_ikᵀ Q_i) = Aᵀ`` (the same terms, the same rounding
    order of magnitude). ``meter``: a :class:`numerics.laplacian.lanczos.Meter` (checked per block).

    The products' columns are gathered, up to :data:`GRAM_SPAN` (and ``chunk_elems / (n·d)``) of
    them, before one projection ``Qᵀ(·)``: projecting each block of ``block`` columns read all of
    ``Q`` once per block — at the MiniLM size (``m = 384``, ``n·d = 49152``, blocks of 5 columns
    under the memory rule) 77 passes over 151 MB. Measured, one thread, same process: MiniLM-sized
    random layer 6.8 → 2.5–3.4 s; ``n = 64, d = 64, H = 4`` unchanged (13.7 vs 14.7 ms, one span); the
    Gram the same to 2.4e-14 relative."""
    n, d = e.n, e.d
    N, m = Q.shape
    S, A = torch.empty(m, m, dtype=F64), torch.empty(m, m, dtype=F64)
    Qt = Q.T.contiguous()  # contiguous fields for the products
    span = max(block, min(m, GRAM_SPAN, e.chunk_elems // max(N, 1)))
    Db, Mb = torch.empty(span, N, dtype=F64), torch.empty(span, N, dtype=F64)
    for s0 in range(0, m, span):
        s1 = min(s0 + span, m)
        for c0 in range(s0, s1, block):
            c1 = min(c0 + block, s1)
            meter.check()
            dx, mx = e.constraints_gram_split(Qt[c0:c1].reshape(-1, n, d))
            Db[c0 - s0 : c1 - s0], Mb[c0 - s0 : c1 - s0] = dx.reshape(-1, N), mx.reshape(-1, N)
        S[:, s0:s1], A[:, s0:s1] = Qt @ Db[: s1 - s0].T, Qt @ Mb[: s1 - s0].T
    return S - A - A.T


def lower_bound(sigma: float, s_T: float, c: float) -> float:
    """``min_{t∈[0,1]} max(s_T t, σ'√(1 − t²) − c t)`` (module docstring); ``s_T`` for ``σ' = ∞``."""
    if math.isinf(sigma):
        return s_T
    return s_T * sigma / math.sqrt((s_T + c) ** 2 + sigma**2)


def krylov_ritz(e: FactoredBlocks, Q: torch.Tensor, k: int, max_cols: int, rel: float, AQ=None, meter=None):
    """The ``k``-th smallest Ritz value ``θ`` and its residual ``ρ`` of ``CᵀC`` on the block Krylov
    space ``span[Q, CᵀC Q, (CᵀC)² Q, …]`` (``≤ max_cols`` columns, at most ``8 d``; stops early once
    ``√θ − √(θ − ρ) ≤ rel·√θ`` or the space is invariant). ``θ ≥ λ_k(CᵀC)`` (Courant–Fischer) and
    an eigenvalue lies within ``ρ`` of ``θ``. ``AQ``: ``CᵀC Q`` when already at hand; ``meter``: a
    :class:`numerics.laplacian.lanczos.Meter` whose cap ends the search early (with the Ritz pair reached so far)."""
    n, d = e.n, e.d
    N = Q.shape[0]
    G_apply = block_op(e.constraints_gram_fast, n, d)
    V, AV = Q, (G_apply(Q) if AQ is None else AQ)
    G = V.T @ AV
    last = Q.shape[1]
    while True:
        th, Y = torch.linalg.eigh(0.5 * (G + G.T))
        y = Y[:, k - 1]
        t = float(th[k - 1].clamp(min=0))
        r = float(torch.linalg.vector_norm(AV @ y - th[k - 1] * (V @ y)))
        if math.sqrt(t) - math.sqrt(max(t - r, 0.0)) <= rel * math.sqrt(t) or V.shape[1] >= min(N, max_cols):
            return t, r

        W = AV[:, -last:]
        for _ in range(2):  # block Gram–Schmidt, twice
            W = W - V @ (V.T @ W)
        U, sv, _ = torch.linalg.svd(W, full_matrices=False)
        keep = sv > 1e-10 * float(sv.max()) if sv.numel() and float(sv.max()) > 0 else sv > 0
        U = U[:, keep][:, : min(N, max_cols) - V.shape[1]]
        if not U.shape[1] or (meter is not None and meter.used + 2 * U.shape[1] > meter.cap):
            return t, r
        AU = G_apply(U)
        VAU = V.T @ AU
        G = torch.cat([torch.cat([G, VAU], 1), torch.cat([VAU.T, U.T @ AU], 1)], 0)
        V, AV, last = torch.cat([V, U], 1), torch.cat([AV, AU], 1), U.shape[1]


def parallel_count(s_up: torch.Tensor, s_lo: torch.Tensor, thr_c: float, s_T: float, c: float):
    """``(kC, low_next, whys)``: the parallel sections counted by the upper bounds ``s_up`` of
    ``σ(C)`` (ascending) at threshold ``thr_c`` (``thr·‖C‖``), the certified lower bound of the next
    singular value through the tree rows from its lower estimate in ``s_lo``, and the reason when that
    bound straddles the threshold (the count is then undefined)."""
    m = s_up.numel()
    kC = int((s_up <= thr_c).sum())
    low_next = lower_bound(float(s_lo[kC]) if kC < m else math.inf, s_T, c)
    whys: list[str] = []
    if low_next <= thr_c:
        whys.append(
            f"undefined: dim parallel ≥ {kC}, and σ_{kC + 1}(C) ∈ [{low_next:.1e}, {float(s_up[kC]):.1e}] "
            f"straddles the threshold {thr_c:.1e}"
        )
    return kC, low_next, whys


def sections_in_kernel(Dfn, Z: torch.Tensor, n: int, d: int, thr_d: float, dn: float):
    """``(r1, K)``: ``‖ΔZ‖/‖Δ‖`` over the parallel sections ``Z`` ``(N, kC)`` and the basis ``K`` of the
    part of ``span Z`` that ``Δ`` maps below ``thr_d·‖Δ‖`` (where the search for ``ker Δ`` starts)."""
    N, kC = Z.shape
    if not kC:
        return 0.0, torch.zeros(N, 0, dtype=F64)
    DZ = block_op(Dfn, n, d)(Z)
    _, sZ, VhZ = torch.linalg.svd(DZ, full_matrices=False)
    return float(sZ[0]) / dn, Z @ VhZ.T.flip(1)[:, : int((sZ <= thr_d * dn).sum())]


def extended_basis(K: torch.Tensor, vec: torch.Tensor, Dfn, n: int, d: int) -> tuple[torch.Tensor, float]:
    """``K`` with the unit part of ``vec`` outside its span appended, and the largest singular value of
    ``Δ`` on that basis — certified with ``Δ`` itself (accurate to eps·‖Δ‖), not with the Gram
    residual (eps·‖Δ‖²)."""
    v = vec - K @ (K.T @ vec)
    Kc = torch.cat([K, (v / torch.linalg.vector_norm(v))[:, None]], 1)
    sv = torch.linalg.svdvals(block_op(Dfn, n, d)(Kc))
    return Kc, float(sv[0])


def extension_step(top: float, lo: float, hi: float, level: float, extra_found: int, k_max: int, k: int):
    """One step of the search for null directions of ``Δ`` beyond the ``k`` found: ``"extend"`` when
    ``Δ`` is below ``level`` on the extended basis (``top``, :func:`extended_basis`) and fewer than
    ``k_max`` extra directions were taken; ``"stop"`` when ``σ_{k+1}(Δ) ∈ [lo, hi]`` is certainly above
    ``level``; else ``"undefined"`` with its reason (the interval straddles ``level``, or ``k_max`` is
    reached). Returns ``(action, reason)``."""
    if top <= level and extra_found < k_max:
        return "extend", None
    if lo > level:
        return "stop", None
    if top > level:
        return "undefined", f"undefined: σ_{k + 1}(Δ) ∈ [{lo:.1e}, {hi:.1e}] straddles the threshold {level:.1e}"
    return "undefined", f"undefined: more than k_max = {k_max} null directions of Δ outside the parallel sections"


def subspace_bound(thr: float, dn: float, cn: float, kD: int, s_next: float, kC: int, low_next: float) -> float:
    """The bound of the kernel residual ``max(‖ΔZ‖/‖Δ‖, ‖CK‖/‖C‖)``: a computed null basis is off the
    exact one by ``sin θ ≤ thr·‖·‖ / gap`` (Wedin / Davis–Kahan), the gap being the next singular value
    of ``Δ`` (``s_next``, NaN when not searched) and the certified lower bound ``low_next`` of ``C``'s."""
    bnd = thr
    if kD > 0 and s_next == s_next:
        bnd = max(bnd, thr * dn / s_next)
    if kC:
        bnd = max(bnd, thr * cn / low_next)
    return bnd


def flat_interval(
    up: float, lo_est: float, need: int, s_T: float, cn: float, thr: float, facts: dict, cn_up: float | None = None
):
    """``(fl, lo_f, why)``: flatness residual ``σ_need(C)/‖C‖`` from its upper bound ``up``, the
    certified lower bound ``lo_f`` through the tree rows from the estimate ``lo_est`` (both recorded in
    ``facts['flat_interval']``), and ``fl = NaN`` with the reason when that interval straddles the
    threshold. ``cn_up``: an upper bound of ``‖C‖`` where ``cn`` is only a lower one (the lower end
    and the failing side then use it; default ``cn``)."""
    cu = cn if cn_up is None else cn_up
    lo_f = lower_bound(lo_est, s_T, cu)
    fl = up / cn
    facts["flat_interval"] = (lo_f / cu, fl)
    if up > thr * cn and thr * cu >= lo_f:
        return (
            math.nan,
            lo_f,
            f"flat: σ_{need}(C)/‖C‖ ∈ [{lo_f / cu:.1e}, {up / cn:.1e}] straddles the threshold {thr:.1e}",
        )
    return fl, lo_f, None


def norm_bounds(e: FactoredBlocks) -> tuple[float, float]:
    """Certified upper bounds ``(‖Δ‖, ‖C‖)`` (each at least 1, the norms' floor in the thresholds) of
    one walk, in ``O(H n² + n d²)`` without products: ``‖Δ‖ ≤ 1 + Σ_h ‖a^h‖₂ ‖T_h‖₂`` with
    ``‖a‖₂ ≤ √(‖a‖₁ ‖a‖_∞)`` and ``‖T‖₂ ≤ ‖T‖_F``; ``C = C₁ − C₂`` with ``(C₁x)_ij = x_i`` and
    ``(C₂x)_ij = O_ij x_j`` on the support, so ``‖C‖ ≤ √(max_i deg_i) + √(max_j ‖G_j‖₂)`` with
    ``G_j = Σ_i O_ijᵀ O_ij`` (PSD: ``‖G‖₂ ≤ min(‖G‖_F, ‖G‖_∞)``). The factor ``1 + 1e-8`` covers the
    rounding of these few sums."""
    a = e.a.abs()
    a2 = (a.sum(-1).amax(-1) * a.sum(-2).amax(-1)).sqrt()  # (H,): √(‖a‖_∞ ‖a‖₁)
    dn = 1.0 + float((a2 * torch.linalg.matrix_norm(e.T)).sum())
    G = e._edge_gram()
    g = torch.minimum(torch.linalg.matrix_norm(G), G.abs().sum(-1).amax(-1))
    cn = math.sqrt(float(e.sup.sum(-1).max())) + math.sqrt(float(g.max()))
    return max(dn, 1.0) * (1 + 1e-8), max(cn, 1.0) * (1 + 1e-8)
