r"""The kernel / parallel-section / flatness checks of the factored T3 diagnostics
(:mod:`numerics.laplacian.factored`), matrix-free, with stated bounds.

Parallel sections (``x_i = O_ij x_j`` on every edge, i.e. ``Cx = 0``). Every token reaches a closed
communicating class of the support graph, so a BFS tree towards one root per closed class (a parent
``p(i)`` with ``P_{i p(i)} > 0`` for every other token) fixes a parallel section by its values at
the roots: ``x_i = M_i v_{r(i)}`` with ``M_i = O_{i p(i)} M_{p(i)}``, ``M_root = I``. So
``dim ker C ≤ m = d · (number of closed classes)`` and ``ker C ⊆ E = range[M_i]`` — the kernel of
the tree rows ``C_T`` of ``C``. With ``Q`` an orthonormal basis of ``E`` and ``σ'_1 ≤ … ≤ σ'_m``
the singular values of ``C Q`` (an ``n²d × m`` matrix; how they are computed, and to what accuracy,
is the route below):

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

The route (default; chosen by measurement, ``benchmarks/bench_diagnose_kernel.py``). The previous
route spent its time in three places, none of which decides anything the structure does not
already decide: the eps-accurate factor of ``C Q`` on every section (a QR of an ``n²d × m`` matrix:
39 s of 69 s at ``n = 512, d = 64, H = 4``), ARPACK to machine precision for the smallest
eigenpairs of ``ΔᵀΔ`` / ``CᵀC`` (the bounded fallback: 290 s of 321 s on a MiniLM-sized layer,
mostly ARPACK's own restarts on ``n·d = 49152``) and a block-Krylov sharpening of a flatness
residual whose verdict was already certified. Now:

* ``‖Δ‖``, ``‖C‖``: Lanczos to relative 1e-8 (they only scale thresholds). A walk that fails a T3
  hypothesis (not edges form) starts instead from certified upper bounds without products
  (:func:`numerics.laplacian.sections.norm_bounds`) and a Ritz value of ``‖C‖`` to relative 1e-2
  (a lower bound at any residual): each decision uses the lower end on its holding side and the
  upper end on its failing side, and the 1e-8 norms are computed where that does not decide (a
  possible parallel section or a direction the Gram leaves to the refined factor, a straddling
  flatness interval, a new null direction of ``Δ`` or a search result near ``thr·‖Δ‖``), so every
  verdict is the one of the 1e-8 norms. ``extra['kernel_facts']`` then carries ``norm_Delta`` NaN
  where it was not needed, ``norm_C`` the loose Ritz value and the bounds ``norm_Delta_bound`` /
  ``norm_C_bound``; on the random ``n = 64, d = 64, H = 4`` walk this drops the kernel part from
  495 to 381 products;
* *sections, Gram first*: ``G = Qᵀ(CᵀC Q)`` by the edge-Gram expansion (two ``W``-like products
  per section, blocked, one where a T3 hypothesis fails; error ``δ = tol(float64, n·d)·‖C‖²``),
  eigenpairs ``(λ_k, u_k)``; ``σ'_k ∈ [√(λ_k − 2δ), √(λ_k + δ)]``. Only the directions with ``λ_k``
  below ``min((4·thr·‖C‖(‖C‖ + s_T)/s_T)², 100δ) + 2δ`` — those the Gram cannot tell from the threshold —
  get the eps·‖C‖-accurate row-chunked factor (``k_S`` columns instead of ``m``; none on a
  generic walk, the ``dim ker`` ones on a T3 walk). The bounds above keep their form with these
  intervals (Courant–Fischer on ``span[Q u_S, …]``; the cross terms of the two blocks are ≤ δ);
* *ker Δ without a search when T3 (a)+(c) nearly hold* — the **Dirichlet certificate**: for any
  ``π > 0`` and unit ``x``, ``<x, Δx>_π = ½ Σ π_i P_ij ‖x_i − O_ij x_j‖² + e(x)`` with
  ``|e(x)| ≤ ε_q`` (:func:`numerics.laplacian.factored.dirichlet_terms`: the row-sum, stationarity
  and orthogonality residuals; no reversibility), so for ``x`` orthogonal to the ``k`` parallel
  sections found, ``π_max ‖Δx‖ ≥ <x, Δx>_π ≥ ½ w_min f(σ'_{k+1})² − ε_q`` (``w_min = min π_i P_ij``
  on the support, ``f`` the lower bound above). When that exceeds ``thr·‖Δ‖`` and every section is
  in ``ker Δ`` (``‖Δ Z‖`` below the threshold), ``dim ker Δ = dim parallel`` is decided with no
  Lanczos at all; a capped Ritz estimate (at most ``SHARPEN_PRODUCTS`` products) may only sharpen the
  gap used in the error bound (``max`` of the two);
* otherwise a deflated Lanczos search on ``ΔᵀΔ`` (:func:`~numerics.laplacian.lanczos.deflated_smallest`,
  relative 1e-4: the value only has to be told from a threshold many orders below;
  ``σ_{k+1}(Δ) ≥ √(θ − ρ)`` assuming, as every Krylov method must, that the smallest eigenvalue is
  the one Lanczos converged to); new null directions are certified with ``Δ`` itself, up to
  ``k_max``. The search for ``σ_1`` (no null direction yet) stops earlier, at relative residual
  ``DECIDED_RTOL`` (0.1), once ``√(θ − ρ) > thr·‖Δ‖`` — the same assumption, and the decision
  ``dim ker Δ = 0`` whose bound does not use ``σ_1``; past a null direction ``σ_{k+1}`` is the gap
  of the bound and keeps the 1e-4 rule (random ``n = 64`` walk: 144 products instead of 200). Where
  the spectrum checks ran their Arnoldi on ``W``, the ``σ_1`` search starts from that space's best
  approximate null vector of ``Δ`` plus a tenth of the seeded random start
  (:func:`~numerics.laplacian.spectral.null_start`; the stopping rule and its assumption are the
  same, the random part keeps a component along every direction): on the random ``n = 64`` walk
  72 → 44 Lanczos steps (144 → 88 products), MiniLM-sized 322 → 146;
* *early exit* (unless ``max_matvecs`` is given explicitly): when a T3 hypothesis already fails,
  the search above gets at most ``max(products of the other checks, SEARCH_FLOOR)`` products (the
  floor: the spectrum checks spend a few hundred products since their Krylov solves stop at the
  checks' rounding error, fewer than one search of a MiniLM-sized layer), and a failing flatness
  residual is not sharpened by block Krylov (its dense algebra cost more than the rest of ``diagnose``): it is the sections'
  Ritz upper bound, with the certified interval in the reason and ``flat_interval``; otherwise the
  sharpening stops at the cap with the Ritz bound reached;
* *cap*: every product with ``W``, ``Wᵀ`` or a coefficient operator counts
  (``FactoredBlocks.counter``); past ``max_matvecs`` (default :data:`MAX_MATVECS`) the checks are
  **undecided**: residual NaN, ``holds`` False, the reason starting "undecided:" and naming the cap,
  ``extra['kernel_facts'][b]['decided']`` False and the dimensions −1 where they were not counted.

Measured (``bench_diagnose_kernel.py --large --minilm``, one thread, a shared 2-core machine, both
routes in the same run), kernel part new vs previous: random softmax ``n = 64, d = 64, H = 4``
0.34 s / 495 products vs 1.79 s / 1637; reversible (``dim ker = 32``, decided by the certificate)
0.47 s / 346 vs 0.87 s / 789; ``n = 512`` 7.4 s / 475 vs 110 s / 1637; MiniLM-sized random
(float64) 28 s / 1735 vs 95 s / 3880; same verdicts and dimensions everywhere. The searches run
on :func:`ritz_extreme`, not ARPACK: at ``n = 512`` ARPACK's own per-step work (``dsaupd``) took
15 s of the kernel part's 25 s, more than its products. Rejected: the eps-accurate factor on
every section (the QR dominates and resolves nothing the Gram does not at ``λ ≥ 100δ``), an
unshifted Lanczos for σ_min of a walk whose T3 hypotheses hold (the certificate needs none),
LOBPCG without a preconditioner (none is at hand) for the search: on the random walk above the
smallest eigenvalue of ``ΔᵀΔ`` to 1e-4 took 260 products at block size 1 (ARPACK: 282), 670 / 1136
at block sizes 4 / 8, and more time than ARPACK in each case.

Issue 22, random ``n = 64`` walk: kernel products 381 → 261 (the ``σ_1`` stop; the Gram at one product
per section, :func:`~numerics.laplacian.sections.sections_gram`), cheaper Krylov bookkeeping, contiguous
Gram columns (strided: each ``CᵀC`` product up to 1.7× slower). Kept: the loose Ritz value of ``‖C‖``
(the Gram's ``λ_max`` is far below ``‖C‖²``: the flatness residual's value would change).

The previous route stays as ``route="arpack"`` (:func:`kernel_element_arpack`, the benchmark's
baseline): parallel sections from the factor of ``C Q`` on every section; ``ker Δ`` from those plus
Lanczos on ``ΔᵀΔ`` restricted to their complement (ARPACK ``eigsh``, smallest eigenvalue, seeded
start, relative 1e-6), a new direction with ``√(θ + ρ) ≤ thr·‖Δ‖`` added, up to ``k_max`` of
them; between the two the check is undefined. ``‖Δ‖`` and ``‖C‖`` are Lanczos largest singular
values.

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

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks, element
from numerics.laplacian.kernel_arpack import ARPACK_MAX_CHUNKS, kernel_element_arpack, kernel_element_bounded, undecided
from numerics.laplacian.lanczos import Meter, OverBudget, deflated_smallest, operator_norm
from numerics.laplacian.result import make_check
from numerics.laplacian.sections import (
    constraints_factor,
    extended_basis,
    extension_step,
    flat_interval,
    krylov_ritz,
    lower_bound,
    norm_bounds,
    parallel_count,
    section_tree,
    sections_basis,
    sections_gram,
    sections_in_kernel,
    subspace_bound,
)
from numerics.laplacian.spectral import dense_operator
from numerics.tolerance import tol

F64 = torch.float64

__all__ = ["kernel_factored", "section_tree", "constraints_factor", "lower_bound"]


#: most columns of ``CᵀC Q`` per product: wider blocks are slower per column (measured, one thread:
#: ``n = 64, d = 64, H = 4`` 11 ms at 16 columns vs 19 ms at 64; MiniLM-sized 4.1 s at 4 vs 7 s at ≥ 8,
#: where the memory rule already allows only 5)
GRAM_BLOCK = 16


def _gram_block(e: FactoredBlocks) -> int:
    """Columns per ``CᵀC`` block product (:data:`GRAM_BLOCK` at most): its temporaries hold about
    ``(w + 3)·n·d`` numbers per column, ``w = H·k/d`` with per-head factors of width ``k`` (the
    block coefficient product), else ``w = H``. With ``w = H`` for factors too, a MiniLM-sized layer
    got blocks of 5 columns, and its sections' Gram took 3.4 s instead of 2.7 s at 16 (same process)."""
    w = e.H * e.W_V.shape[-2] / e.d if e.W_V is not None and not e.exact else e.H
    return max(1, min(e.d, GRAM_BLOCK, int(e.chunk_elems // max((w + 3) * e.n * e.d, 1))))


def _gram_columns(e: FactoredBlocks, Q: torch.Tensor, meter: Meter, block: int) -> torch.Tensor:
    """``CᵀC Q`` ``(N, m)`` by the edge-Gram expansion, ``block`` columns at a time."""
    n, d = e.n, e.d
    N, m = Q.shape
    out = torch.empty_like(Q)
    Qt = Q.T.contiguous()  # contiguous fields: strided ones made each product up to 1.7× slower
    for c0 in range(0, m, block):
        meter.check()
        out[:, c0 : c0 + block] = e.constraints_gram_fast(Qt[c0 : c0 + block].reshape(-1, n, d)).reshape(-1, N).T
    return out


def _kernel_element(
    e: FactoredBlocks,
    n_comp: int,
    tdt,
    k_max: int,
    seed: int,
    max_cols: int,
    limit: int,
    search_limit: int | None = None,
    dirichlet: tuple[float, float, float] | None = None,
    start: torch.Tensor | None = None,
):
    """``(kp_res, kp_bnd, kp_why, flat_res, flat_why, kD, kC, facts)`` of one walk (module
    docstring, "The route"). ``limit``: most products with ``W``/``Wᵀ``/coefficient operators
    (``max_matvecs``); ``search_limit``: most of them for the optional searches (further null
    directions of ``Δ``, the sharpened flatness residual) — given when a T3 hypothesis already
    fails; ``dirichlet``: ``(w_min, π_max, ε_q)`` of the Dirichlet certificate, or None; ``start``: a
    unit start for the search of ``σ_1(Δ)`` (:func:`~numerics.laplacian.spectral.null_start`), or None."""
    n, d = e.n, e.d
    N = n * d
    thr = tol(tdt, N)
    meter = Meter(e, limit)
    facts: dict = {"method": "sections (Gram + refined factor) + Dirichlet certificate / capped Lanczos"}
    Dfn = lambda x: x - e.apply(x)
    DtD = lambda x: (lambda y: y - e.apply_t(y))(x - e.apply(x))
    CtC = e.constraints_gram_fast
    block = _gram_block(e)
    # a walk failing T3 starts from certified upper bounds of the norms and a loose Ritz value of ‖C‖
    # (a lower bound); the 1e-8 norms are computed only where a decision depends on where in between
    bounded = search_limit is not None and not e.exact
    try:
        if bounded:
            dn_up, cn_up = norm_bounds(e)
            dn, cn = math.nan, operator_norm(CtC, N, n, d, seed, meter, NORM_RTOL_BOUNDED)
        else:
            dn = dn_up = operator_norm(DtD, N, n, d, seed, meter)
            cn = cn_up = operator_norm(CtC, N, n, d, seed, meter)
        # parallel sections: Rayleigh–Ritz of CᵀC on the root-fixed sections (Gram, error δ)
        Q, s_T, tf = sections_basis(e, e.sup.numpy())
        facts.update(tf)
        AQ = _gram_columns(e, Q, meter, block) if search_limit is None else None  # kept for sharpening
        G = Q.T @ AQ if AQ is not None else sections_gram(e, Q, meter, block)
    except OverBudget as exc:
        return undecided(
            f"undecided: max_matvecs = {limit} reached ({exc} products) before the parallel sections were counted",
            facts,
            meter,
        )
    m = Q.shape[1]
    lam, U = torch.linalg.eigh(0.5 * (G + G.T))
    delta = tol(F64, N) * cn_up**2  # rounding of the expansion CᵀC x (eps·‖C‖²·‖x‖, with room)
    # refine what the Gram cannot resolve near the thresholds (below 100δ), never more
    cut = min((4 * thr * cn_up * (cn_up + s_T) / s_T) ** 2, 100 * delta) + 2 * delta
    s_up = (lam + delta).clamp(min=0).sqrt()  # σ_k(C) ≤ s_up[k] (Courant–Fischer, Gram error δ)
    s_lo = (lam - 2 * delta).clamp(min=0).sqrt()  # input of f for the (k+1)-th lower bound
    if bounded and not (float(lam[0]) > cut and lower_bound(float(s_lo[0]), s_T, cn_up) > thr * cn_up):
        try:  # not certainly free of parallel sections under the bounds: the route with the 1e-8 norms
            dn = dn_up = operator_norm(DtD, N, n, d, seed, meter)
            cn = cn_up = operator_norm(CtC, N, n, d, seed, meter)
        except OverBudget as exc:
            return undecided(f"undecided: max_matvecs = {limit} reached ({exc} products)", facts, meter)
        bounded, delta = False, tol(F64, N) * cn**2
        cut = min((4 * thr * cn * (cn + s_T) / s_T) ** 2, 100 * delta) + 2 * delta
        s_up, s_lo = (lam + delta).clamp(min=0).sqrt(), (lam - 2 * delta).clamp(min=0).sqrt()
    kS = int((lam <= cut).sum())
    V, RC = U, torch.zeros(0, 0, dtype=F64)
    if kS:  # directions the Gram cannot resolve: the eps·‖C‖-accurate factor of C Q U_S
        RC = constraints_factor(e, Q @ U[:, :kS])
        RC = torch.cat([RC, torch.zeros(kS - RC.shape[0], kS, dtype=F64)]) if RC.shape[0] < kS else RC
        _, sS, VhS = torch.linalg.svd(RC)
        sS, WS = sS.flip(0), VhS.flip(0).T
        V = torch.cat([U[:, :kS] @ WS, U[:, kS:]], 1)
        gapN = float(lam[kS]) - delta if kS < m else math.inf
        s_up = torch.cat([sS, s_up[kS:]])
        s_lo = torch.cat([(torch.minimum(sS**2, torch.tensor(gapN, dtype=F64)) - delta).clamp(min=0).sqrt(), s_lo[kS:]])
    facts["refined_directions"] = kS
    kC, low_next, whys = parallel_count(s_up, s_lo, thr * cn, s_T, cn_up)
    undefined = bool(whys)
    Z = Q @ V[:, :kC]
    r1, K = sections_in_kernel(Dfn, Z, n, d, thr, dn)
    s_next, extra_found, capped_search = math.nan, 0, False
    meter.soft(search_limit)

    def exact_dn() -> float:  # ‖Δ‖ to 1e-8, once, where a decision needs more than its bound
        nonlocal dn, dn_up
        if dn != dn:
            dn = dn_up = operator_norm(DtD, N, n, d, seed, meter)
        return dn

    if dirichlet is not None and K.shape[1] == kC:
        # unit x ⊥ Z: ‖Cx‖ ≥ low_next, so π_max‖Δx‖ ≥ <x, Δx>_π ≥ ½ w_min low_next² − ε_q
        w_min, pi_max, eps_q = dirichlet
        cert = (0.5 * w_min * low_next**2 - eps_q) / pi_max if pi_max > 0 else -math.inf
        facts["dirichlet_lower_bound"] = cert
        try:
            if cert > thr * dn_up or (cert > 0 and cert > thr * exact_dn()):
                s_next = cert
        except OverBudget:  # the search below meets the same cap and says so
            pass
    v0 = np.random.default_rng(seed).standard_normal(N)
    if s_next == s_next and kC:  # decided; a short Ritz estimate may sharpen the gap of the bound
        cap = meter.cap
        meter.soft(min(SHARPEN_PRODUCTS, max(meter.cap - meter.used, 0)))
        try:
            lam1, _, rho = deflated_smallest(DtD, K, dn, N, n, d, meter, v0)
            if rho < lam1:
                facts["sigma_next_Delta_ritz"] = math.sqrt(lam1 - rho)
                s_next = max(s_next, math.sqrt(lam1 - rho))
        except OverBudget:
            pass
        meter.cap = cap
    while s_next != s_next and not undefined:  # no certificate: deflated Lanczos, capped
        try:
            # a fresh start per direction: a single-vector Krylov space from the previous start holds
            # only that start's component in a multiple null space, i.e. the direction already found
            v0 = np.random.default_rng([seed, K.shape[1]]).standard_normal(N)
            if start is not None and not K.shape[1]:  # σ_1: the spectrum's Arnoldi space hands a start
                v0 = start.numpy() + 0.1 * v0 / np.linalg.norm(v0)
            # σ_1: stop once σ_1 > thr·‖Δ‖ is decided (dim ker Δ = 0, no gap in the bound); else 1e-4
            level = None if K.shape[1] else thr * dn_up
            lam1, vec, rho = deflated_smallest(DtD, K, dn_up, N, n, d, meter, v0, level)
            lo, hi = math.sqrt(max(lam1 - rho, 0.0)), math.sqrt(max(lam1 + rho, 0.0))
            Kc, top = extended_basis(K, vec, Dfn, n, d)
            if top <= thr * dn_up or lo <= thr * dn_up:  # not decided by the bound of ‖Δ‖
                exact_dn()
        except OverBudget as exc:
            undefined = True
            facts["kernel_dim_at_least"] = K.shape[1]
            capped_search = True
            whys.append(
                f"undecided: the search for σ_{K.shape[1] + 1}(Δ) stopped at its cap ({exc} products; "
                + (
                    "a T3 hypothesis fails, so at most the products of the other checks"
                    if search_limit is not None
                    else f"max_matvecs = {limit}"
                )
                + ")"
            )
            break
        # dn_up = ‖Δ‖ here, or both sides of the decision hold with the bound
        action, why = extension_step(top, lo, hi, thr * dn_up, extra_found, k_max, K.shape[1])
        if action == "extend":
            K, extra_found = Kc, extra_found + 1
            continue
        if action == "stop":
            s_next = lo
            break
        undefined = True
        whys.append(why)
    kD = -1 if capped_search else K.shape[1]
    need = n_comp * d
    up = float(s_up[need - 1]) if need else 0.0
    if bounded and need:  # flatness undecided under the bounds of ‖C‖: the 1e-8 norm (rare)
        fl, lo_f, flat_why = flat_interval(up, float(s_lo[need - 1]), need, s_T, cn, thr, {}, cn_up)
        bounded = flat_why is None
    if bounded and kD > 0:  # ‖CK‖/‖C‖ of new null directions: the 1e-8 norm
        bounded = False
    if not bounded and cn_up != cn:
        try:
            cn = cn_up = operator_norm(CtC, N, n, d, seed, meter)
        except OverBudget as exc:
            return undecided(f"undecided: max_matvecs = {limit} reached ({exc} products)", facts, meter)
    if kD <= 0:
        r2 = 0.0
    elif not extra_found and not kS:  # K inside the sections, resolved by the Gram: ‖CK‖² ≤ λ_max(cᵀGc) + δ
        c = Q.T @ K
        r2 = math.sqrt(max(float(torch.linalg.eigvalsh(c.T @ (0.5 * (G + G.T)) @ c).max()), 0.0) + delta) / cn
    elif extra_found:
        r2 = float(torch.linalg.matrix_norm(constraints_factor(e, K), ord=2)) / cn
    else:  # K = Q U_S c inside the refined directions: ‖CK‖ = ‖R c‖ with their factor already at hand
        r2 = float(torch.linalg.matrix_norm(RC @ (U[:, :kS].T @ (Q.T @ K)), ord=2)) / cn
    bnd = subspace_bound(thr, dn, cn, kD, s_next, kC, low_next)
    flat_why = None
    if need == 0:
        fl = 0.0
    else:
        fl, lo_f, flat_why = flat_interval(up, float(s_lo[need - 1]), need, s_T, cn, thr, facts, cn_up)
        if (
            flat_why is None and up > thr * cn and search_limit is not None
        ):  # fails (certified by f); T3 fails: not sharpened
            facts["flat_certified_lower"] = lo_f / cn_up
            flat_why = (
                f"flat: residual is the Ritz upper bound of σ_{need}(C)/‖C‖ on the root-fixed sections, "
                f"∈ [{lo_f / cn_up:.3e}, {fl:.3e}] (certified; not sharpened: a T3 hypothesis fails)"
            )
        elif flat_why is None and up > thr * cn:  # fails (certified by f); sharpen by block Krylov, within the cap
            t, r = krylov_ritz(e, Q, need, max_cols, math.sqrt(thr), AQ=AQ, meter=meter)
            t = max(t - delta, 0.0)
            fl = min(fl, math.sqrt(t + 2 * delta) / cn)
            lo_r = max(math.sqrt(max(t - r, 0.0)) / cn, lo_f / cn)
            facts["flat_interval"] = (lo_r, fl)
            facts["flat_certified_lower"] = lo_f / cn
            flat_why = (
                f"flat: residual is the Ritz upper bound of σ_{need}(C)/‖C‖ ∈ [{lo_r:.3e}, {fl:.3e}] "
                f"(lower end: Ritz residual; certified ≥ {lo_f / cn:.2e} from the root-fixed sections)"
            )
    facts.update(norm_Delta=dn, norm_C=cn, sigma_next_Delta=s_next, matvecs=meter.used, s_T=s_T)
    if bounded:  # ‖Δ‖ may be NaN (not needed), ‖C‖ a loose Ritz value: the bounds that decided
        facts.update(norm_Delta_bound=dn_up, norm_C_bound=cn_up)
    facts["decided"] = not undefined and fl == fl
    kp_res = math.nan if undefined else max(r1, r2)
    return kp_res, bnd, (whys[0] if whys else None), fl, flat_why, kD, kC, facts


SECTIONS_MAX_CHUNKS = 24


def sections_fit(e: FactoredBlocks, n_comp: int, route: str = "sections") -> bool:
    """Whether the root-fixed sections basis of one walk fits the memory rule above (the route of
    :func:`_kernel_element` holds ``Q``, ``CᵀC Q``, the frames ``E`` and two ``n·d²`` arrays: about
    ``4·m·n·d + 2·n·d²``, and the Gram's two span buffers, at most ``2·chunk_elems``; the previous
    route ``(H + 4)·m·n·d``)."""
    m = e.d * max(int(n_comp), 1)
    if route == "arpack":
        return (e.H + 4) * m * e.n * e.d <= ARPACK_MAX_CHUNKS * e.chunk_elems
    return 3 * m * e.n * e.d + 2 * e.n * e.d * e.d <= SECTIONS_MAX_CHUNKS * e.chunk_elems


#: relative residual of the Ritz value of ‖C‖ of a walk failing T3 (a lower bound at any residual;
#: decisions use it only on their holding side, the certified upper bound on the failing side). On the
#: random ``n = 64, d = 64, H = 4`` walk 1e-3 took 26 Lanczos steps (``CᵀC`` products), 1e-2 takes 20:
#: ‖C‖ 29.8372 → 29.8312 (−0.02 %), so the flatness residual, an upper bound, 0.71958 → 0.71972; the
#: same on ``n = 512``
NORM_RTOL_BOUNDED = 1e-2
#: default cap on the kernel route's products with ``W``/``Wᵀ``/coefficient operators per walk
MAX_MATVECS = 10_000
#: least budget of the optional searches of a walk that fails a T3 hypothesis (module docstring):
#: the search for σ_1(Δ) of a random MiniLM-sized layer (n = 128, d = 384, H = 12) takes about 800
#: products, more than the spectrum and algebraic checks now count (about 330)
SEARCH_FLOOR = 1000
#: cap of the Ritz estimate that only sharpens a gap the Dirichlet certificate already decided
SHARPEN_PRODUCTS = 200


def kernel_factored(
    fb: FactoredBlocks,
    n_comp: torch.Tensor,
    tdt,
    *,
    assemble_max: int = 32,
    k_max: int = 8,
    seed: int = 0,
    max_matvecs: int = MAX_MATVECS,
    t3=None,
    dirichlet=None,
    rest_matvecs: int = 0,
    route: str = "sections",
    starts: dict | None = None,
):
    """``(kernel_parallel, flat, kernel_dim, parallel_dim, facts)`` per batch element (module
    docstring); walks with ``n·d ≤ assemble_max`` are assembled and decomposed by SVD with the
    dense path's thresholds. ``max_matvecs``: cap per walk (past it the checks are *undecided*,
    with the reason, and the dimensions −1 where not counted); ``t3``: ``(...)`` bool, the T3
    hypotheses hold (where False the optional searches get at most ``max(rest_matvecs,
    SEARCH_FLOOR)`` products: ``rest_matvecs`` is what the other checks spent); ``dirichlet``: per
    flat batch index ``(w_min, π_max, ε_q)`` or None (the certificate of the module docstring);
    ``route="arpack"``: the previous unbounded route (the benchmark's baseline); ``starts``: per flat
    batch index, the start of the ``σ_1(Δ)`` search where the spectrum's Arnoldi ran (module docstring)."""
    n, d = fb.n, fb.d
    N = n * d
    nb = max(1, math.prod(fb.batch))
    kp_res, kp_bnd, fl_res = (torch.zeros(nb, dtype=F64) for _ in range(3))
    kD_all, kC_all = torch.zeros(nb, dtype=torch.int64), torch.zeros(nb, dtype=torch.int64)
    whys: list[str] = []
    flat_whys: list[str] = []
    facts: list[dict] = []
    thr = tol(tdt, N)
    t3_flat = None if t3 is None else torch.as_tensor(t3).reshape(-1)
    for b in range(nb):
        e = element(fb, b)
        if assemble_max < N and N >= 4:  # ARPACK needs a few dimensions
            nc = int(n_comp.reshape(-1)[b])
            max_cols = min(8 * e.d, max(1, 4 * e.chunk_elems // N))
            if route == "arpack" and sections_fit(e, nc, route):
                r, bnd, why, fl, fwhy, kD, kC, fact = kernel_element_arpack(e, nc, tdt, k_max, seed, max_cols)
            elif route == "arpack":
                r, bnd, why, fl, fwhy, kD, kC, fact = kernel_element_bounded(e, nc, tdt, k_max, seed)
            else:
                early = t3_flat is not None and not bool(t3_flat[b])
                search = max(int(rest_matvecs), SEARCH_FLOOR) if early else None
                if sections_fit(e, nc):
                    r, bnd, why, fl, fwhy, kD, kC, fact = _kernel_element(
                        e,
                        nc,
                        tdt,
                        k_max,
                        seed,
                        max_cols,
                        max_matvecs,
                        search,
                        None if dirichlet is None else dirichlet[b],
                        None if starts is None else starts.get(b),
                    )
                else:
                    r, bnd, why, fl, fwhy, kD, kC, fact = kernel_element_bounded(
                        e, nc, tdt, k_max, seed, max_matvecs, search
                    )
            kp_res[b], kp_bnd[b], fl_res[b], kD_all[b], kC_all[b] = r, bnd, fl, kD, kC
            whys += [why] if why else []
            flat_whys += [fwhy] if fwhy else []
            facts.append(fact)
            continue
        Dfn = lambda x, e=e: x - e.apply(x)
        Dm = dense_operator(Dfn, N, n, d)
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
