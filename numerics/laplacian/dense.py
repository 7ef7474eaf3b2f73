r"""Dense pieces of the T3 diagnostics: the full spectrum of ``Δ`` and ``ker Δ`` vs the parallel
sections, from the ``nd × nd`` matrix (the reference for :mod:`numerics.laplacian.factored`), and
:func:`diagnose_dense`, the dense assembly of every check on :class:`~numerics.laplacian.blocks.DenseBlocks`.

:func:`dense_spectrum` — ``eigvals`` of ``Δ = I − W`` (LAPACK through numpy when torch's geev
fails to converge) and the three spectral checks. :func:`dense_kernel` — SVD of ``Δ`` and of the
parallel-section constraints ``C`` (or an eigendecomposition of ``CᵀC`` for large walks), with the
null-space error bounds and the ambiguity rule explained inline. Imports
:mod:`~numerics.laplacian.result`, :mod:`~numerics.laplacian.forms`, :mod:`~numerics.laplacian.blocks`
and :mod:`~numerics.laplacian.checks` from the package.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import DenseBlocks
from numerics.laplacian.checks import algebraic_checks, spectrum_checks, spectrum_error, support_components
from numerics.laplacian.forms import apply_constraints, parallel_svd
from numerics.laplacian.result import Check, LaplacianDiagnostics, assemble, make_check, skipped
from numerics.tolerance import tol, unresolved_by_square
from numerics.walk import ConnectionWalk

F64 = torch.float64

__all__ = ["dense_spectrum", "dense_kernel", "diagnose_dense"]


def dense_spectrum(D: torch.Tensor, Wd: torch.Tensor, scale, si: Check, tdt, nd: int):
    """Eigenvalues ``(..., nd)`` of the dense ``Δ`` and the checks ``(interval, disk, scaled)``."""
    dev = D.device
    try:
        ev = torch.linalg.eigvals(D)
    except torch.linalg.LinAlgError:
        # torch's geev can fail to converge on matrices whose entries span hundreds of decades
        # (e.g. a 1e-131 coupling next to 5e-17 rounding); LAPACK through numpy (with balancing)
        # handles them: same algorithm family, float64, on the host
        ev = torch.as_tensor(np.linalg.eigvals(D.detach().cpu().numpy())).to(device=dev, dtype=torch.complex128)
    batch = D.shape[:-2]
    wn = torch.linalg.matrix_norm(Wd, ord=2) if nd else torch.zeros(batch, dtype=F64, device=dev)
    t_sp = tol(tdt, nd, scale=max(float(wn.max()) if wn.numel() else 1.0, 1.0))
    im = ev.imag.abs().amax(-1)
    err = spectrum_error(nd, float(wn.max()) if wn.numel() else 0.0)
    checks = spectrum_checks(
        im, ev.real.amin(-1), ev.real.amax(-1), (ev - 1).abs().amax(-1), scale, si, t_sp, error=err
    )
    return ev, checks


def dense_kernel(D, O, sup, P, pi_safe, pi_def, n_comp, tdt, svd_max_entries: int):
    """``(kernel_parallel, flat, kernel_dim, parallel_dim)`` from SVDs of ``Δ`` and ``C``."""
    n, d = O.shape[-3], O.shape[-1]
    nd = n * d
    dev = D.device
    batch = P.shape[:-2]
    nan_b = torch.full(batch, float("nan"), dtype=F64, device=dev)
    _, sD, VhD = torch.linalg.svd(D)
    sC, VhC, gram_path = parallel_svd(O, sup, max_entries=svd_max_entries)
    dn = sD[..., :1].clamp(min=1.0)
    cn = sC.amax(-1, keepdim=True).clamp(min=1.0)
    # relative rank thresholds: singular values from an SVD are accurate to eps·‖·‖; those
    # from √λ(CᵀC) (large walks) only to √eps·‖C‖
    thr_D = tol(tdt, nd)
    thr_C = max(thr_D, math.sqrt(tol(F64, nd))) if gram_path else thr_D
    kD = (sD <= thr_D * dn).sum(-1)
    kC = (sC <= thr_C * cn).sum(-1)
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
        K = fVD[b, nd - int(fkD[b]) :].transpose(0, 1)  # kernel basis of Δ (nd, kD)
        Z = fVC[b, nd - int(fkC[b]) :].transpose(0, 1)  # parallel sections (nd, kC)
        r1 = torch.linalg.matrix_norm(fD[b] @ Z, ord=2).item() / fdn[b].item() if Z.shape[1] else 0.0
        # C K edge by edge: (K_i − O_ij K_j) on the support, never forming C
        r2 = (
            torch.linalg.matrix_norm(apply_constraints(fO[b], fS[b], K), ord=2).item() / fcn[b].item()
            if K.shape[1]
            else 0.0
        )
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
                WCK = apply_constraints(fO[b], fS[b], K).reshape(n, n, d, -1) * wts[:, :, None, None]
                e_max = 0.5 * torch.linalg.matrix_norm(WCK.reshape(n * n * d, -1), ord=2).item() ** 2
                lim = 2 * fpi[b].max().item() * thr_D * fdn[b].item()
                # the bound needs π > 0: E(x) gives no weight to the edges out of a state with
                # π_i = 0 (transient), so a zero energy there says nothing about Δ's resolution.
                # The rule is the oracles' (theory.rounding.unresolved_by_square).
                amb = unresolved_by_square(e_max, fpi[b].max().item(), thr_D * fdn[b].item()) and bool(
                    (fpi[b] > 0).all()
                )
                what = (
                    f"the extra directions of ker Δ have Dirichlet energy ≤ {e_max:.1e} (≤ {lim:.1e}, below "
                    f"what Δ resolves: it sees the defect ‖Cx‖ ≈ {math.sqrt(2 * e_max):.1e} only squared)"
                )
            else:
                lim = thr_C * fcn[b].item() * max(float(fP[b].sum(-1).max()), 1.0) / fdn[b].item()
                amb = r1 <= lim
                what = f"the extra parallel sections have ‖ΔZ‖/‖Δ‖ = {r1:.1e} ≤ {lim:.1e} (the Jensen bound)"
            if amb:
                kp_amb[b] = True
                amb_why.append(
                    f"undefined: ker Δ vs parallel sections is ambiguous at "
                    f"{str(tdt).replace('torch.', '')} precision: dim ker Δ = {kDb} at tolerance {thr_D:.1e}, "
                    f"dim parallel = {kCb} at {thr_C:.1e}, and {what}"
                )
        need = int(fcomp[b]) * d  # flat: parallel sections of full dimension d per component
        if need == 0:
            fl_flat[b] = 0.0
        else:
            s_sorted = torch.sort(fsC[b]).values
            fl_flat[b] = s_sorted[need - 1].item() / fcn[b].item()
    kp_bound = kp_bound.reshape(batch)
    kp_amb = kp_amb.reshape(batch)
    kp_res = torch.where(kp_amb, nan_b, kp_res)
    # ranks that differ beyond what either operator resolves fail; an ambiguous count is undecided
    # (NaN residual); the subspace residuals are decided against their Wedin bounds
    kp = make_check(
        "kernel_parallel",
        kp_res,
        kp_bound if kp_bound.numel() else t_k,
        amb_why[0] if amb_why else None,
        require=(kD == kC) | kp_amb,
    )
    flat = make_check("flat", flat_res, thr_C)
    return kp, flat, kD, kC


def diagnose_dense(
    w: ConnectionWalk, tdt, probes, seed, max_dense, pi, svd_max_entries, tdt_p=None
) -> LaplacianDiagnostics:
    """Dense assembly of the checks of :mod:`numerics.laplacian.checks` (``w`` in float64)."""
    n, d = w.n, w.d
    P = w.walk_matrix.to(F64)
    batch = P.shape[:-2]
    sup = P > 0
    O, _ = w.edge_transports()
    O = torch.where(sup[..., None, None], O.to(F64), torch.zeros_like(O, dtype=F64))
    bscale = None
    terms = 1
    if w.kind == "heads":  # the magnitude of the head sums: their rounding level (blocks.DenseBlocks)
        tn = torch.linalg.matrix_norm(w.head_transports.to(F64))
        bscale = torch.einsum("...hij,...h->...ij", w.attention.to(F64).abs(), tn)
        terms = w.n_heads
    blocks = DenseBlocks(P, w.blocks().to(F64), O, block_scale=bscale, terms=terms)
    hyp = algebraic_checks(blocks, P, tdt, pi, probes, seed, tdt_p)
    st, si, scale = hyp["_st"], hyp["scaled_isometry"], hyp["_scale"]
    n_comp = support_components(st, sup)
    nd = n * d
    spectrum = kernel_dim = parallel_dim = None
    if nd <= max_dense:
        Wd = w.to_dense().to(F64)
        D = torch.eye(nd, dtype=F64, device=P.device) - Wd
        spectrum, (s_int, s_disk, s_sc) = dense_spectrum(D, Wd, scale, si, tdt, nd)
        kp, flat, kernel_dim, parallel_dim = dense_kernel(
            D, O, sup, P, st.safe, st.defined, n_comp, tdt, svd_max_entries
        )
    else:
        why = f"skipped: n·d = {nd} > max_dense = {max_dense} (use method='factored' or numerics.spectra)"
        s_int, s_disk, s_sc, kp, flat = (
            skipped(k, batch, P.device, why)
            for k in ("spectrum_interval", "spectrum_disk", "spectrum_scaled", "kernel_parallel", "flat")
        )
    return assemble(
        hyp,
        s_int,
        s_disk,
        s_sc,
        kp,
        flat,
        spectrum,
        kernel_dim,
        parallel_dim,
        n_comp,
        n,
        d,
        {"method": "dense", "tolerance_dtype": str(tdt_p or tdt)},
    )
