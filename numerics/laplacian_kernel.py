r"""The kernel / parallel-section / flatness checks of the factored T3 diagnostics
(:mod:`numerics.laplacian_factored`), matrix-free, with stated bounds.

Parallel sections (``x_i = O_ij x_j`` on every edge, i.e. ``Cx = 0``). Every token reaches a closed
communicating class of the support graph, so a BFS tree towards one root per closed class (a parent
``p(i)`` with ``P_{i p(i)} > 0`` for every other token) fixes a parallel section by its values at
the roots: ``x_i = M_i v_{r(i)}`` with ``M_i = O_{i p(i)} M_{p(i)}``, ``M_root = I``. So
``dim ker C ≤ m = d · (number of closed classes)`` and ``ker C ⊆ E = range[M_i]`` — the kernel of
the tree rows ``C_T`` of ``C``. With ``Q`` an orthonormal basis of ``E`` and ``σ'_1 ≤ … ≤ σ'_m``
the singular values of ``C Q`` (an ``n²d × m`` matrix, reduced row chunk by row chunk to its
triangular factor: accurate to ``eps·‖C‖``, never the ``√eps`` of a Gram route):

* *upper bounds* ``σ_k(C) ≤ σ'_k`` (Courant–Fischer: a ``k``-dimensional subspace), so every
  ``σ'_k ≤ thr·‖C‖`` certifies a parallel direction;
* *lower bounds* ``σ_k(C) ≥ f(σ'_k)`` with ``f(σ') = s_T σ' / √((s_T + ‖C‖)² + σ'²)``: write a
  unit ``x`` orthogonal to the first ``k − 1`` directions as ``Qu + y`` with ``y ⊥ E``; then
  ``‖Cx‖ ≥ ‖C_T y‖ ≥ s_T ‖y‖`` and ``‖Cx‖ ≥ σ'_k ‖u‖ − ‖C‖ ‖y‖``, whose worst case is ``f``. Here
  ``s_T`` is the smallest nonzero singular value of ``C_T``: ``C_T C_Tᵀ ⪰ (I − N)(I − N)ᵀ`` with
  ``N`` the nilpotent parent coupling of depth ``D``, so ``s_T ≥ 1 / Σ_{k<D} ν^k``,
  ``ν = √(max #children) · max ‖O_{i p(i)}‖₂``; for a star tree (every token has an edge to its
  root: any softmax or causal attention) ``s_T ≥ 1``. Past ``m`` directions ``σ_{m+1}(C) ≥ s_T``.

So ``dim parallel = #{σ'_k ≤ thr·‖C‖}`` is *decided* when ``f(σ'_{k+1}) > thr·‖C‖`` (else the
check is undefined, with the reason), and ``flat`` (``σ_{n_comp·d}(C) ≤ thr·‖C‖``) holds when
``σ'_{need} ≤ thr·‖C‖``, fails when ``f(σ'_{need}) > thr·‖C‖``: its residual is the upper bound
``σ'_{need}/‖C‖`` and ``extra['kernel_facts']`` carries the interval ``[f, σ']/‖C‖`` that contains
the dense ``σ_need/‖C‖``.

``ker Δ``. Candidates are the parallel sections ``Z``: the singular values of ``Δ Z`` (``N × k``,
SVD) are upper bounds of the smallest ones of ``Δ`` and certify ``dim ker Δ ≥ k_0``. Further null
directions are searched orthogonally to those found, by Lanczos on ``ΔᵀΔ`` restricted to their
complement (ARPACK ``eigsh``, smallest eigenvalue, seeded start): a Ritz pair ``(θ, ρ)`` gives
``σ_{k+1}(Δ) ≥ √(θ − ρ)`` (assuming, as every Krylov method must, that the smallest eigenvalue is
the one Lanczos converged to); a new direction with ``√(θ + ρ) ≤ thr·‖Δ‖`` is added, up to
``k_max`` of them; between the two the check is undefined. ``‖Δ‖`` and ``‖C‖`` are Lanczos
largest singular values.

Thresholds: ``thr = tol(dtype, n·d)`` for both operators (every singular value above comes from
an SVD of an explicit product, accurate to ``eps·‖·‖``). The dense path uses the same threshold
for ``Δ`` and, above ``svd_max_entries``, ``√tol`` for ``C`` (its Gram route); the two agree
except for singular values between the two thresholds. ``kernel_parallel``: residual
``max(‖ΔZ‖/‖Δ‖, ‖CK‖/‖C‖)`` (``K`` the null basis of ``Δ``; ``‖CK‖`` by the same row-chunked
triangular factor), bound ``max(thr, thr·‖Δ‖/σ_{kD+1}(Δ), thr·‖C‖/σ_{kC+1}(C))`` (Wedin /
Davis–Kahan with the lower bounds above as gaps), holds when it is within the bound and
``dim ker Δ = dim parallel``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from numerics.laplacian_checks import make_check
from numerics.tolerance import tol

if TYPE_CHECKING:
    from numerics.laplacian_factored import FactoredBlocks

F64 = torch.float64

__all__ = ["kernel_factored", "section_tree", "constraints_factor", "lower_bound"]


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
    queue = list(roots)
    for r_idx, r in enumerate(roots):
        root_of[r] = r_idx
    head = 0
    while head < len(queue):
        u = queue[head]
        head += 1
        for i in map(int, np.nonzero(sup[:, u])[0]):
            if root_of[i] < 0:
                parent[i], root_of[i], depth[i] = u, root_of[u], depth[u] + 1
                queue.append(i)
    return roots, parent, root_of, depth


def _edge_transports(e: FactoredBlocks, i: torch.Tensor, j: torch.Tensor) -> torch.Tensor:
    """``O_ij = Σ_h w^h_ij T_h`` ``(len(i), d, d)`` for the listed edges."""
    return torch.einsum("he,had->ead", e.w[:, i, j], e.T)


def _sections_basis(e: FactoredBlocks, sup: np.ndarray):
    """Orthonormal basis ``Q`` ``(N, m)`` of the sections fixed by their root values, the tree's
    ``s_T`` lower bound and the tree facts."""
    n, d = e.n, e.d
    roots, parent, root_of, depth = section_tree(sup)
    order = np.argsort(depth, kind="stable")
    kids = np.nonzero(parent >= 0)[0]
    Otree = torch.zeros(n, d, d, dtype=F64)
    if len(kids):
        Otree[kids] = _edge_transports(e, torch.as_tensor(kids), torch.as_tensor(parent[kids]))
    M = torch.zeros(n, d, d, dtype=F64)
    for i in order:
        M[i] = torch.eye(d, dtype=F64) if parent[i] < 0 else Otree[i] @ M[parent[i]]
    m = d * len(roots)
    E = torch.zeros(n, d, m, dtype=F64)
    for i in range(n):
        c = int(root_of[i])
        E[i, :, c * d : (c + 1) * d] = M[i]
    Q = torch.linalg.qr(E.reshape(n * d, m))[0]
    D = int(depth.max()) if n else 0
    if D <= 1:
        s_T = 1.0
    else:
        nu = math.sqrt(int(np.bincount(parent[kids]).max())) * float(torch.linalg.matrix_norm(Otree[kids], ord=2).max())
        s_T = 1.0 / sum(nu**k for k in range(D))
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


def lower_bound(sigma: float, s_T: float, c: float) -> float:
    """``min_{t∈[0,1]} max(s_T t, σ'√(1 − t²) − c t)`` (module docstring); ``s_T`` for ``σ' = ∞``."""
    if math.isinf(sigma):
        return s_T
    return s_T * sigma / math.sqrt((s_T + c) ** 2 + sigma**2)


def _krylov_ritz(e: FactoredBlocks, Q: torch.Tensor, k: int, max_cols: int, rel: float):
    """The ``k``-th smallest Ritz value ``θ`` and its residual ``ρ`` of ``CᵀC`` on the block Krylov
    space ``span[Q, CᵀC Q, (CᵀC)² Q, …]`` (``≤ max_cols`` columns, at most ``8 d``; stops early once
    ``√θ − √(θ − ρ) ≤ rel·√θ`` or the space is invariant). ``θ ≥ λ_k(CᵀC)`` (Courant–Fischer) and
    an eigenvalue lies within ``ρ`` of ``θ``."""
    n, d = e.n, e.d
    N = Q.shape[0]
    G_apply = lambda X: e.constraints_gram_fast(X.T.reshape(-1, n, d)).reshape(-1, N).T
    V, AV = Q, G_apply(Q)
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
        if not U.shape[1]:
            return t, r
        AU = G_apply(U)
        VAU = V.T @ AU
        G = torch.cat([torch.cat([G, VAU], 1), torch.cat([VAU.T, U.T @ AU], 1)], 0)
        V, AV, last = torch.cat([V, U], 1), torch.cat([AV, AU], 1), U.shape[1]


def _kernel_element(e: FactoredBlocks, n_comp: int, tdt, k_max: int, seed: int, max_cols: int):
    """``(kp_res, kp_bnd, kp_why, flat_res, flat_why, kD, kC, facts)`` of one walk."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    from numerics.laplacian_spectral import _sym_extreme

    n, d = e.n, e.d
    N = n * d
    thr = tol(tdt, N)
    Dfn = lambda x: x - e.apply(x)
    DtD = lambda x: (lambda y: y - e.apply_t(y))(x - e.apply(x))
    cnt = [0]
    dn = max(float(_sym_extreme(DtD, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt()), 1.0)
    cn = max(float(_sym_extreme(e.constraints_gram_fast, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt()), 1.0)
    # parallel sections: Rayleigh–Ritz of C on the sections fixed by their root values
    Q, s_T, facts = _sections_basis(e, e.sup.numpy())
    m = Q.shape[1]
    RC = constraints_factor(e, Q)
    RC = torch.cat([RC, torch.zeros(m - RC.shape[0], m, dtype=F64)]) if RC.shape[0] < m else RC
    _, sC, VhC = torch.linalg.svd(RC)
    sC, UC = sC.flip(0), VhC.flip(0).T  # ascending
    kC = int((sC <= thr * cn).sum())
    whys = []
    low_next = lower_bound(float(sC[kC]) if kC < m else math.inf, s_T, cn)
    undefined = low_next <= thr * cn
    if undefined:
        whys.append(
            f"undefined: dim parallel ≥ {kC}, and σ_{kC + 1}(C) ∈ [{low_next:.1e}, {float(sC[kC]):.1e}] "
            f"straddles the threshold {thr * cn:.1e}"
        )
    Z = Q @ UC[:, :kC]
    # ker Δ: the parallel sections first, then Lanczos on the complement of what was found
    if kC:
        DZ = Dfn(Z.T.reshape(kC, n, d)).reshape(kC, N).T
        _, sZ, VhZ = torch.linalg.svd(DZ, full_matrices=False)
        r1 = float(sZ[0]) / dn
        K = Z @ VhZ.T.flip(1)[:, : int((sZ <= thr * dn).sum())]
    else:
        r1, K = 0.0, torch.zeros(N, 0, dtype=F64)
    s_next, extra_found = math.nan, 0
    v0 = np.random.default_rng(seed).standard_normal(N)
    while True:
        Kt = K

        def mv(v, Kt=Kt):
            cnt[0] += 1
            x = torch.from_numpy(np.ascontiguousarray(np.asarray(v).reshape(N), dtype=np.float64))
            if Kt.shape[1]:
                c = Kt.T @ x
                y = x - Kt @ c
                out = DtD(y.reshape(1, n, d)).reshape(N)
                out = out - Kt @ (Kt.T @ out) + dn**2 * (Kt @ c)
            else:
                out = DtD(x.reshape(1, n, d)).reshape(N)
            return out.numpy()

        op = LinearOperator((N, N), matvec=mv, dtype=np.float64)
        try:
            lam, vec = eigsh(op, k=1, which="SA", v0=v0, tol=1e-6, ncv=min(N, 40), maxiter=3000)
        except ArpackNoConvergence as exc:
            undefined = True
            whys.append(f"undefined: Lanczos for σ_{K.shape[1] + 1}(Δ) did not converge ({exc})")
            break
        v = torch.from_numpy(vec[:, 0])
        rho = float(torch.linalg.vector_norm(torch.from_numpy(mv(vec[:, 0])) - float(lam[0]) * v))
        lo, hi = math.sqrt(max(float(lam[0]) - rho, 0.0)), math.sqrt(max(float(lam[0]) + rho, 0.0))
        v = v - K @ (K.T @ v)
        Kc = torch.cat([K, (v / torch.linalg.vector_norm(v))[:, None]], 1)
        # certify with Δ itself (accurate to eps‖Δ‖), not the Gram residual (eps‖Δ‖²)
        sv = torch.linalg.svdvals(Dfn(Kc.T.reshape(-1, n, d)).reshape(Kc.shape[1], N).T)
        if float(sv[0]) <= thr * dn and extra_found < k_max:
            K = Kc
            extra_found += 1
            continue
        if lo > thr * dn:
            s_next = lo
            break
        undefined = True
        whys.append(
            f"undefined: σ_{K.shape[1] + 1}(Δ) ∈ [{lo:.1e}, {hi:.1e}] straddles the threshold {thr * dn:.1e}"
            if float(sv[0]) > thr * dn
            else f"undefined: more than k_max = {k_max} null directions of Δ outside the parallel sections"
        )
        break
    kD = K.shape[1]
    if not kD:
        r2 = 0.0
    elif extra_found:
        r2 = float(torch.linalg.matrix_norm(constraints_factor(e, K), ord=2)) / cn
    else:  # K = Q c inside the root-fixed sections: ‖CK‖ = ‖R c‖ with the factor of CQ already at hand
        r2 = float(torch.linalg.matrix_norm(RC @ (Q.T @ K), ord=2)) / cn
    bnd = thr
    if kD and s_next == s_next:
        bnd = max(bnd, thr * dn / s_next)
    if kC:
        bnd = max(bnd, thr * cn / low_next)
    need = n_comp * d
    flat_why = None
    if need == 0:
        fl = 0.0
    else:
        up = float(sC[need - 1])
        lo_f = lower_bound(up, s_T, cn)
        fl = up / cn
        facts["flat_interval"] = (lo_f / cn, fl)
        if up > thr * cn >= lo_f:
            fl = math.nan
            flat_why = f"flat: σ_{need}(C)/‖C‖ ∈ [{lo_f / cn:.1e}, {up / cn:.1e}] straddles the threshold {thr:.1e}"
        elif up > thr * cn:  # fails (certified by f); sharpen the residual by block Krylov Rayleigh–Ritz
            t, r = _krylov_ritz(e, Q, need, max_cols, math.sqrt(thr))
            fl = min(fl, math.sqrt(t) / cn)
            lo_r = max(math.sqrt(max(t - r, 0.0)) / cn, lo_f / cn)
            facts["flat_interval"] = (lo_r, fl)
            facts["flat_certified_lower"] = lo_f / cn
            flat_why = (
                f"flat: residual is the Ritz upper bound of σ_{need}(C)/‖C‖ ∈ [{lo_r:.3e}, {fl:.3e}] "
                f"(lower end: Ritz residual; certified ≥ {lo_f / cn:.2e} from the root-fixed sections)"
            )
    facts.update({"norm_Delta": dn, "norm_C": cn, "sigma_next_Delta": s_next, "matvecs": cnt[0], "s_T": s_T})
    kp_res = math.nan if undefined else max(r1, r2)
    return kp_res, bnd, (whys[0] if whys else None), fl, flat_why, kD, kC, facts


#: the sections path holds about ``(H + 4)·m·n·d`` float64 entries (``m = d·classes`` basis columns,
#: their head transports and one row chunk); above this many times ``chunk_elems`` it is not used
SECTIONS_MAX_CHUNKS = 16


def sections_fit(e: FactoredBlocks, n_comp: int) -> bool:
    """Whether the root-fixed sections basis of one walk fits the memory rule above."""
    m = e.d * max(int(n_comp), 1)
    return (e.H + 4) * m * e.n * e.d <= SECTIONS_MAX_CHUNKS * e.chunk_elems


def _kernel_element_lanczos(e: FactoredBlocks, n_comp: int, tdt, k_max: int, seed: int):
    """The bounded-memory fallback (a full layer: ``d·classes`` sections do not fit): the ``k_max``
    smallest eigenpairs of ``ΔᵀΔ`` and ``CᵀC`` by Lanczos, ``O(k_max·n·d)`` memory. Null spaces are
    counted with the threshold ``max(tol, √tol(float64))`` (squared singular values); a null space that
    reaches ``k_max`` is undefined, and a failing flatness residual beyond ``σ_{k_max}`` is the lower
    bound ``σ_{k_max}/‖C‖`` (undefined when that bound is under the threshold). Same tuple as
    :func:`_kernel_element`."""
    from scipy.sparse.linalg import ArpackNoConvergence

    from numerics.laplacian_spectral import _sym_extreme

    n, d = e.n, e.d
    N = n * d
    fact = {"method": "lanczos (sections basis over the memory rule)", "k_max": k_max}
    DtD = lambda x: (lambda y: y - e.apply_t(y))(x - e.apply(x))
    Dfn = lambda x: x - e.apply(x)
    CtC = e.constraints_gram_fast
    k = min(k_max, N - 1)
    cnt = [0]
    try:
        lamD, VD, _ = _sym_extreme(DtD, N, n, d, "SA", cnt, seed, k=k)
        lamC, VC, _ = _sym_extreme(CtC, N, n, d, "SA", cnt, seed, k=k)
    except ArpackNoConvergence as exc:  # a cluster of small singular values
        msg = f"undefined: Lanczos for the {k} smallest singular values did not converge ({exc})"
        return math.nan, 0.0, msg, math.nan, msg, 0, 0, fact
    sD, sC = lamD.clamp(min=0).sqrt(), lamC.clamp(min=0).sqrt()
    dn = max(float(_sym_extreme(DtD, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt()), 1.0)
    cn = max(float(_sym_extreme(CtC, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt()), 1.0)
    thr = max(tol(tdt, N), math.sqrt(tol(F64, N)))
    kD, kC = int((sD <= thr * dn).sum()), int((sC <= thr * cn).sum())
    why: str | None = None
    if kD == sD.numel() or kC == sC.numel():
        why = (
            f"undefined: a null space reaches the k_max = {sD.numel()} eigenpairs computed "
            f"(dim ker Δ ≥ {kD} or dim parallel ≥ {kC}); raise k_max"
        )
    K, Z = VD[:, :kD], VC[:, :kC]
    r1 = float(torch.linalg.matrix_norm(Dfn(Z.T.reshape(-1, n, d)).reshape(kC, N).T, ord=2)) / dn if kC else 0.0
    r2 = (
        float(torch.linalg.eigvalsh(K.T @ CtC(K.T.reshape(-1, n, d)).reshape(kD, N).T).max().clamp(min=0).sqrt()) / cn
        if kD
        else 0.0
    )
    r = math.nan if why else max(r1, r2)
    bnd = thr
    if 0 < kD < sD.numel():  # Wedin / Davis–Kahan, as on the dense path
        bnd = max(bnd, thr * dn / float(sD[kD]))
    if 0 < kC < sC.numel():
        bnd = max(bnd, thr * cn / float(sC[kC]))
    need = int(n_comp) * d
    fwhy: str | None = None
    if need == 0:
        fl = 0.0
    elif need <= sC.numel():
        fl = float(sC[need - 1]) / cn
    else:  # σ_need ≥ σ_k: a lower bound; certain failure only when it already exceeds the threshold
        fl = float(sC[-1]) / cn
        fwhy = (
            f"flat: σ_{need} of C not computed (k_max = {sC.numel()}); residual is the lower bound σ_{sC.numel()}/‖C‖"
        )
        if fl <= thr:
            fl = math.nan
    fact.update(norm_Delta=dn, norm_C=cn, matvecs=cnt[0])
    return r, bnd, why, fl, fwhy, kD, kC, fact


def kernel_factored(
    fb: FactoredBlocks, n_comp: torch.Tensor, tdt, *, assemble_max: int = 32, k_max: int = 8, seed: int = 0
):
    """``(kernel_parallel, flat, kernel_dim, parallel_dim, facts)`` per batch element (module
    docstring); walks with ``n·d ≤ assemble_max`` are assembled and decomposed by SVD with the
    dense path's thresholds."""
    from numerics.laplacian_spectral import _assemble, _element

    n, d = fb.n, fb.d
    N = n * d
    nb = max(1, math.prod(fb.batch))
    kp_res, kp_bnd, fl_res = (torch.zeros(nb, dtype=F64) for _ in range(3))
    kD_all, kC_all = torch.zeros(nb, dtype=torch.int64), torch.zeros(nb, dtype=torch.int64)
    whys: list[str] = []
    flat_whys: list[str] = []
    facts: list[dict] = []
    thr = tol(tdt, N)
    for b in range(nb):
        e = _element(fb, b)
        if assemble_max < N and N >= 4:  # ARPACK needs a few dimensions
            nc = int(n_comp.reshape(-1)[b])
            if sections_fit(e, nc):
                r, bnd, why, fl, fwhy, kD, kC, fact = _kernel_element(
                    e, nc, tdt, k_max, seed, min(8 * e.d, max(1, 4 * e.chunk_elems // N))
                )
            else:
                r, bnd, why, fl, fwhy, kD, kC, fact = _kernel_element_lanczos(e, nc, tdt, k_max, seed)
            kp_res[b], kp_bnd[b], fl_res[b], kD_all[b], kC_all[b] = r, bnd, fl, kD, kC
            whys += [why] if why else []
            flat_whys += [fwhy] if fwhy else []
            facts.append(fact)
            continue
        Dfn = lambda x, e=e: x - e.apply(x)
        Dm = _assemble(Dfn, N, n, d)
        _, sD, VhD = torch.linalg.svd(Dm)
        sD, VD = sD.flip(0), VhD.flip(0).T  # ascending
        Cm = e.constraints_apply(torch.eye(N, dtype=F64).reshape(N, n, d)).reshape(N, -1).T
        _, sC, VhC = torch.linalg.svd(Cm, full_matrices=False)
        sC, VC = sC.flip(0), VhC.flip(0).T  # ascending
        dn, cn = max(float(sD[-1]), 1.0), max(float(sC[-1]), 1.0)
        kD = int((sD <= thr * dn).sum())
        kC = int((sC <= thr * cn).sum())
        kD_all[b], kC_all[b] = kD, kC
        K, Z = VD[:, :kD], VC[:, :kC]
        r1 = float(torch.linalg.matrix_norm(Dm @ Z, ord=2)) / dn if kC else 0.0
        r2 = float(torch.linalg.matrix_norm(Cm @ K, ord=2)) / cn if kD else 0.0
        kp_res[b] = max(r1, r2)
        bnd = thr
        if 0 < kD < sD.numel():  # Wedin / Davis–Kahan, as on the dense path
            bnd = max(bnd, thr * dn / float(sD[kD]))
        if 0 < kC < sC.numel():
            bnd = max(bnd, thr * cn / float(sC[kC]))
        kp_bnd[b] = bnd
        need = int(n_comp.reshape(-1)[b]) * d
        fl_res[b] = 0.0 if need == 0 else float(sC[need - 1]) / cn
    bs = fb.batch
    kD_t, kC_t = kD_all.reshape(bs), kC_all.reshape(bs)
    kp_r = kp_res.reshape(bs)
    kp = make_check(
        "kernel_parallel",
        kp_r,
        kp_bnd.reshape(bs),
        whys[0] if whys else None,
        require=(kD_t == kC_t) | torch.isnan(kp_r),
    )
    flat = make_check("flat", fl_res.reshape(bs), thr, flat_whys[0] if flat_whys else None)
    return kp, flat, kD_t, kC_t, facts
