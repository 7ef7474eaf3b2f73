r"""Factored T3 diagnostics: every check of :func:`numerics.laplacian.diagnose` without the
``n²d²`` blocks.

A walk is held as ``B_ij = Σ_h a^h_ij T_h`` with coefficients ``a`` ``(..., H, n, n)`` and
transports ``T`` ``(H, d, d)``: for a heads-form walk ``a = A`` (the attention of each head) and
``T_h`` (``W_O^h W_V^h`` when stored as factors); an edges-form walk is written in the basis of the
``d²`` unit matrices (``H = d²``, exact). Then, with
``w^h_ij = a^h_ij / P_ij`` (so ``O_ij = Σ_h w^h_ij T_h``):

* every per-edge Frobenius norm the checks need is ``‖Σ_m c_m(i, j) X_m‖_F`` for a short list of
  fixed matrices ``X_m`` — ``{T_h}`` (block norms), ``{T_h, T_hᵀ}`` (``π_i B_ij − π_j B_jiᵀ``,
  ``O_ji − O_ijᵀ``), ``{T_hᵀT_k + T_kᵀT_h, I}`` (``c² O_ijᵀO_ij − I``). With ``R`` the triangular
  factor of the ``d² × m`` matrix ``[vec X_m]`` (Householder QR, accumulated over row chunks so
  that only ``H² · chunk · d`` numbers exist at once), ``‖Σ c_m X_m‖_F = ‖R c‖₂`` *exactly*: no
  ``n²d²`` object and, unlike the expansion ``cᵀ(XᵀX)c``, no cancellation (the error is
  ``O(eps)·Σ|c_m|‖X_m‖``, as for the dense sum, not ``O(√eps)``);
* ``W``, ``Wᵀ``, ``Δ``, the π-symmetrised ``S = D^{½} Δ D^{-½}`` and the parallel-section
  constraints ``C`` (``(Cx)_ij = x_i − O_ij x_j``) are applied matrix-free (``Σ_h a^h X T_hᵀ``);
* the Dirichlet identity uses the same seeded probes as the dense path, its energy summed over
  row chunks.

Spectrum (stated bounds). Bendixson's theorem: every eigenvalue ``z`` of ``Δ`` (= of ``S``) has
``λ_min(H_S) ≤ Re z ≤ λ_max(H_S)`` and ``|Im z| ≤ ‖K_S‖₂`` (``H_S``, ``K_S`` the symmetric and
skew parts of ``S``), and ``|z − 1| ≤ ‖W‖_π``. Those extremes of symmetric operators come from
thick-restart Lanczos (:mod:`numerics.laplacian.krylov`), each stopped once its Ritz residual puts
it within the spectrum checks' own rounding error (:func:`~numerics.laplacian.checks.spectrum_error`;
the residuals are reported in ``extra``). When the enclosure already satisfies a spectral check it
*certifies* it (the reported residual is an upper bound of the dense one); for a π-self-adjoint
walk ``K_S = 0`` and the enclosure is the exact spectral interval. Otherwise the extreme
eigenvalues of the non-normal ``Δ`` (smallest / largest real part, largest imaginary part, largest
``|z − 1|``) are Ritz values of one restarted Arnoldi run on ``W``, each with backward error
within that rounding error (an exact eigenvalue of ``W + E``, ``‖E‖ ≤`` the error the check states
for the dense solver); they have no rigorous forward bound and the reason says so. The previous
solvers (ARPACK at machine precision, one Arnoldi run per component) stay as
``spectrum_route="arpack"``, the benchmark's baseline: on a random softmax walk ``n = 64, d = 64,
H = 4`` the spectrum took 924 products there and 135 here, on a MiniLM-sized one 1979 and 328.

Kernel (:mod:`numerics.laplacian.kernel`). The parallel sections are fixed by their values at one
token per closed class (a BFS tree of the support), so ``dim ker C ≤ d·(closed classes)`` and
``ker C`` lies in the ``d·(closed classes)``-dimensional span of the root-fixed sections: a
Rayleigh–Ritz of ``C`` there (a Gram of ``CᵀC`` on the sections, with the eps·‖C‖-accurate
row-chunked factor for the directions the Gram cannot resolve) gives certified upper bounds of its
smallest singular values and, through the tree rows, certified lower bounds; ``ker Δ`` starts from
those sections and is decided by the Dirichlet certificate (no search) when the walk is nearly
stochastic, stationary and orthogonal, else by a deflated Lanczos search (up to ``k_max``
directions). Every product counts against ``max_matvecs``: past it the checks are *undecided*
with the reason; a walk that already fails a T3 hypothesis gives the search at most what the other
checks spent. Otherwise a check is undefined only where a bound straddles its threshold, with the
interval in the reason.

Walks with ``n·d ≤ assemble_max`` (default 32) are too small for Krylov solvers: there
``Δ`` and ``C`` are assembled from the same matrix-free operators applied to unit vectors
(``n·(nd)² ≤ 32768`` numbers) and decomposed by SVD, with the dense path's thresholds.

Memory: ``a`` and ``w`` (``2H n²``), ``T`` (``H d²``), the triangular factors (``(H²/2)²``), the
root-fixed sections and the edge Gram of the kernel checks (``n d × d·(closed classes)``, ``n d²``),
probes and Lanczos vectors (``O(n d)`` each) and chunks bounded by ``chunk_elems``.

The block algebra is :class:`numerics.laplacian.blocks.FactoredBlocks`; the spectrum computations
live in :mod:`numerics.laplacian.spectral`, the kernel ones in :mod:`numerics.laplacian.kernel`; this
module assembles them (:func:`diagnose_factored`), on top of both.
"""

from __future__ import annotations

import math
import time

import torch

from numerics.contracts.validate import memory_budget as read_memory_budget
from numerics.errors import ParameterError
from numerics.laplacian.blocks import FactoredBlocks, factored_blocks
from numerics.laplacian.checks import algebraic_checks, support_components
from numerics.laplacian.kernel import MAX_MATVECS, kernel_factored
from numerics.laplacian.result import assemble, skipped
from numerics.laplacian.spectral import spectrum_factored
from numerics.tolerance import tol

F64 = torch.float64

__all__ = ["diagnose_factored", "dirichlet_terms"]


# ------------------------------------------------------------------------------------ assembly
def dirichlet_terms(fb: FactoredBlocks, hyp: dict) -> list:
    r"""Per flat batch index ``(w_min, π_max, ε_q)`` of the Dirichlet certificate
    (:mod:`numerics.laplacian.kernel`), or None where π is not positive: ``w_min = min π_i P_ij``
    over the support and ``ε_q`` bounds ``|<x, Δx>_π − ½ Σ π_i P_ij ‖x_i − O_ij x_j‖²|`` for a unit
    ``x`` from the algebraic checks' residuals — ``½(max_i π_i |1 − r_i| + ‖πP − ρπ‖_∞ + |1 − ρ| π_max
    + max_j (πP)_j · max_ij ‖O_ijᵀO_ij − I‖_F)`` (rows ``r_i = Σ_j P_ij``), plus ``tol(float64, n·d)·π_max``
    for their rounding. No reversibility is needed."""
    st = hyp["_st"]
    n = fb.n
    P = fb.P.reshape(-1, n, n)
    pis, pos = st.safe.reshape(-1, n), st.positive.reshape(-1)
    rho = st.info.rho.reshape(-1)
    res_pi = st.check.residual.reshape(-1)
    res_o = hyp["orthogonal"].residual.reshape(-1)
    out: list = []
    for b in range(P.shape[0]):
        pi = pis[b]
        if not bool(pos[b]) or not bool((pi > 0).all()) or not math.isfinite(float(res_o[b]) + float(res_pi[b])):
            out.append(None)
            continue
        F = pi[:, None] * P[b]
        w_min = float(F[P[b] > 0].min())
        pi_max = float(pi.max())
        eps_q = (
            0.5
            * (
                float((pi * (1 - P[b].sum(-1)).abs()).max())
                + float(res_pi[b])
                + abs(1 - float(rho[b])) * pi_max
                + float(F.sum(0).max()) * float(res_o[b])
            )
            + tol(F64, n * fb.d) * pi_max
        )
        out.append((w_min, pi_max, eps_q))
    return out


def diagnose_factored(
    w,
    *,
    probes: int = 3,
    seed: int = 0,
    pi=None,
    tdt=F64,
    assemble_max: int = 32,
    k_max: int = 8,
    chunk_elems: int = 1 << 22,
    spectrum: bool = True,
    kernel: bool = True,
    tdt_p=None,
    memory_budget: int | None = None,
    max_matvecs: int | None = None,
    kernel_route: str = "sections",
    spectrum_route: str = "krylov",
):
    """The factored :class:`numerics.laplacian.LaplacianDiagnostics` of a :class:`ConnectionWalk`
    (use :func:`numerics.laplacian.diagnose` with ``method="factored"``). ``spectrum`` / ``kernel``
    False skip those checks (reported undefined with the reason); ``k_max``: most null directions of
    ``Δ`` searched for outside the parallel sections; ``max_matvecs``: cap on the kernel route's
    products with ``W``/``Wᵀ`` per walk (past it the kernel / flat checks are *undecided* with the
    reason). Default None: :data:`numerics.laplacian.kernel.MAX_MATVECS`, and a walk that fails a T3
    hypothesis gives the search for further null directions of ``Δ`` at most what the other checks
    spent, and at least :data:`numerics.laplacian.kernel.SEARCH_FLOOR` (the early exit); an explicit value is the only cap, early exit included.
    ``kernel_route="arpack"`` / ``spectrum_route="arpack"``: the previous unbounded routes, kept as
    the benchmark's baseline;
    ``assemble_max``: largest ``n·d`` assembled densely; ``chunk_elems``: the largest temporary
    (numbers); ``memory_budget``: bytes for :func:`factored_blocks` (default: the budget of
    :func:`numerics.contracts.validate.check_memory`). ``extra['seconds']`` / ``extra['matvecs']``: time and
    products per part (algebraic, spectrum, kernel)."""
    early_exit = max_matvecs is None  # an explicit cap replaces the early exit's smaller one
    max_matvecs = MAX_MATVECS if max_matvecs is None else max_matvecs
    for name, val, lo in (
        ("assemble_max", assemble_max, 0),
        ("k_max", k_max, 1),
        ("chunk_elems", chunk_elems, 1),
        ("max_matvecs", max_matvecs, 1),
    ):
        if not isinstance(val, int) or isinstance(val, bool) or val < lo:
            raise ParameterError(f"must be an int >= {lo}, got {val!r}", argument=name)
    if memory_budget is None:  # $CONNWALK_MEMORY_BUDGET read and validated here, as the dense path does
        memory_budget = read_memory_budget()
    if w.device.type != "cpu":
        # the spectral and kernel routes drive host Lanczos / Arnoldi (and ARPACK) with host vectors: the whole
        # factored diagnosis runs on a host copy and its result goes back to the walk's device
        kw = dict(probes=probes, seed=seed, pi=None if pi is None else torch.as_tensor(pi).cpu(), tdt=tdt)
        kw.update(assemble_max=assemble_max, k_max=k_max, chunk_elems=chunk_elems, spectrum=spectrum, kernel=kernel)
        kw.update(tdt_p=tdt_p, memory_budget=memory_budget, max_matvecs=None if early_exit else max_matvecs)
        kw.update(kernel_route=kernel_route, spectrum_route=spectrum_route)
        return diagnose_factored(w.to(device="cpu"), **kw).to(w.device)
    t0 = time.perf_counter()
    w = w.to(dtype=F64)
    fb = factored_blocks(w, chunk_elems=chunk_elems, memory_budget=memory_budget)
    P = fb.P
    hyp = algebraic_checks(fb, P, tdt, pi, probes, seed, tdt_p)
    seconds, matvecs = {"algebraic": time.perf_counter() - t0}, {"algebraic": fb.counter[0]}
    st, si, scale = hyp["_st"], hyp["scaled_isometry"], hyp["_scale"]
    sup = fb.sup
    n_comp = support_components(st, sup)
    extra = {"method": "factored", "tolerance_dtype": str(tdt_p or tdt), "H": fb.H}
    starts: dict = {}  # the spectrum's Arnoldi spaces hand the kernel search its start (spectral.null_start)
    t0, c0 = time.perf_counter(), fb.counter[0]
    if spectrum:
        (s_int, s_disk, s_sc), facts = spectrum_factored(
            fb,
            st.safe,
            st.positive,
            scale,
            si,
            tdt,
            assemble_max=assemble_max,
            seed=seed,
            route=spectrum_route,
            starts=starts,
        )
        extra.update(facts)
    else:
        s_int, s_disk, s_sc = (
            skipped(k, fb.batch, P.device, "skipped: spectrum=False")
            for k in ("spectrum_interval", "spectrum_disk", "spectrum_scaled")
        )
    seconds["spectrum"], matvecs["spectrum"] = time.perf_counter() - t0, fb.counter[0] - c0
    t0, c0 = time.perf_counter(), fb.counter[0]
    if kernel:
        t3 = hyp["stochastic"].holds & st.check.holds & hyp["detailed_balance"].holds & hyp["metric_compatible"].holds
        kp, flat, kD, kC, kfacts = kernel_factored(
            fb,
            n_comp,
            tdt,
            assemble_max=assemble_max,
            k_max=k_max,
            seed=seed,
            max_matvecs=max_matvecs,
            t3=t3 if early_exit else None,
            dirichlet=dirichlet_terms(fb, hyp),
            rest_matvecs=fb.counter[0],
            route=kernel_route,
            starts=starts,
        )
        if kfacts:
            extra["kernel_facts"] = kfacts
    else:
        kp, flat = (skipped(k, fb.batch, P.device, "skipped: kernel=False") for k in ("kernel_parallel", "flat"))
        kD = kC = None
    seconds["kernel"], matvecs["kernel"] = time.perf_counter() - t0, fb.counter[0] - c0
    extra["seconds"], extra["matvecs"] = seconds, matvecs  # per part; matvecs: products with W, Wᵀ or coefficients
    return assemble(hyp, s_int, s_disk, s_sc, kp, flat, None, kD, kC, n_comp, fb.n, fb.d, extra)
