r"""The ARPACK-based kernel routes of the factored diagnostics: the previous route (``route="arpack"``),
kept as the baseline of ``benchmarks/bench_diagnose_kernel.py`` — the factor of ``C Q`` on all
root-fixed sections and an unbounded ARPACK search for further null directions of ``Δ`` — and the
bounded-memory fallback of both routes (:func:`kernel_element_bounded`: a walk whose sections basis
does not fit the memory rule)."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks
from numerics.laplacian.krylov import arpack_rule, block_op, lanczos_ends
from numerics.laplacian.lanczos import Meter, OverBudget
from numerics.laplacian.sections import (
    constraints_factor,
    extended_basis,
    extension_step,
    flat_interval,
    krylov_ritz,
    parallel_count,
    sections_basis,
    sections_in_kernel,
    subspace_bound,
)
from numerics.laplacian.spectral import sym_extreme
from numerics.tolerance import tol

F64 = torch.float64

__all__ = ["kernel_element_arpack", "kernel_element_bounded", "undecided", "ARPACK_MAX_CHUNKS"]

ARPACK_MAX_CHUNKS = 16  # the previous route's rule (route="arpack")


def kernel_element_arpack(e: FactoredBlocks, n_comp: int, tdt, k_max: int, seed: int, max_cols: int):
    """The previous route (``route="arpack"``, the baseline of ``benchmarks/bench_diagnose.py``):
    ``(kp_res, kp_bnd, kp_why, flat_res, flat_why, kD, kC, facts)`` of one walk, with an
    unbounded ARPACK search (``tol=1e-6``) and the row-chunked factor of ``C Q`` on all sections."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    n, d = e.n, e.d
    N = n * d
    thr = tol(tdt, N)
    Dfn = lambda x: x - e.apply(x)
    DtD = lambda x: (lambda y: y - e.apply_t(y))(x - e.apply(x))
    cnt = [0]
    dn = max(float(sym_extreme(DtD, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt()), 1.0)
    cn = max(float(sym_extreme(e.constraints_gram_fast, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt()), 1.0)
    # parallel sections: Rayleigh–Ritz of C on the sections fixed by their root values
    Q, s_T, facts = sections_basis(e, e.sup.numpy())
    m = Q.shape[1]
    RC = constraints_factor(e, Q)
    RC = torch.cat([RC, torch.zeros(m - RC.shape[0], m, dtype=F64)]) if RC.shape[0] < m else RC
    _, sC, VhC = torch.linalg.svd(RC)
    sC, UC = sC.flip(0), VhC.flip(0).T  # ascending
    kC, low_next, whys = parallel_count(sC, sC, thr * cn, s_T, cn)
    undefined = bool(whys)
    Z = Q @ UC[:, :kC]
    # ker Δ: the parallel sections first, then Lanczos on the complement of what was found
    r1, K = sections_in_kernel(Dfn, Z, n, d, thr, dn)
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
        Kc, top = extended_basis(K, v, Dfn, n, d)
        action, why = extension_step(top, lo, hi, thr * dn, extra_found, k_max, K.shape[1])
        if action == "extend":
            K, extra_found = Kc, extra_found + 1
            continue
        if action == "stop":
            s_next = lo
            break
        undefined = True
        whys.append(why)
        break
    kD = K.shape[1]
    if not kD:
        r2 = 0.0
    elif extra_found:
        r2 = float(torch.linalg.matrix_norm(constraints_factor(e, K), ord=2)) / cn
    else:  # K = Q c inside the root-fixed sections: ‖CK‖ = ‖R c‖ with the factor of CQ already at hand
        r2 = float(torch.linalg.matrix_norm(RC @ (Q.T @ K), ord=2)) / cn
    bnd = subspace_bound(thr, dn, cn, kD, s_next, kC, low_next)
    need = n_comp * d
    flat_why = None
    if need == 0:
        fl = 0.0
    else:
        up = float(sC[need - 1])
        fl, lo_f, flat_why = flat_interval(up, up, need, s_T, cn, thr, facts)
        if (
            flat_why is None and up > thr * cn
        ):  # fails (certified by f); sharpen the residual by block Krylov Rayleigh–Ritz
            t, r = krylov_ritz(e, Q, need, max_cols, math.sqrt(thr))
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


#: the sections path's float64 entries (:func:`sections_fit`, ``m = d·classes`` basis columns);
#: above this many times ``chunk_elems`` it is not used


def undecided(why: str, facts: dict, meter: Meter):
    """The tuple of a walk whose kernel checks stopped at their cap: both undecided with ``why``."""
    facts["decided"], facts["matvecs"] = False, meter.used
    return math.nan, math.nan, why, math.nan, why, -1, -1, facts


def kernel_element_bounded(
    e: FactoredBlocks, n_comp: int, tdt, k_max: int, seed: int, limit: int | None = None, search: int | None = None
):
    """The bounded-memory fallback (a full layer: ``d·classes`` sections do not fit): the ``k_max``
    smallest eigenpairs of ``ΔᵀΔ`` and ``CᵀC`` by Lanczos, ``O(k_max·n·d)`` memory. Null spaces are
    counted with the threshold ``max(tol, √tol(float64))`` (squared singular values); a null space that
    reaches ``k_max`` is undefined, and a failing flatness residual beyond ``σ_{k_max}`` is the lower
    bound ``σ_{k_max}/‖C‖`` (undefined when that bound is under the threshold). Same tuple as
    :func:`numerics.laplacian.kernel._kernel_element`. ``limit``: cap on the products (past it: undecided); ``search``: the
    smaller cap of ``Δ``'s eigenpairs for a walk that fails a T3 hypothesis."""
    from scipy.sparse.linalg import ArpackNoConvergence

    n, d = e.n, e.d
    N = n * d
    fact = {"method": "lanczos (sections basis over the memory rule)", "k_max": k_max}
    meter = Meter(e, 1 << 62 if limit is None else limit)

    def capped(fn):
        return lambda x: (meter.check(), fn(x))[1]

    DtD = capped(lambda x: (lambda y: y - e.apply_t(y))(x - e.apply(x)))
    Dfn = lambda x: x - e.apply(x)
    CtC = capped(e.constraints_gram_fast)
    k = min(k_max, N - 1)
    cnt = [0]
    try:  # the parallel sections (C's smallest pairs to machine precision: the flat residual) and the norms
        lamC, VC, _ = sym_extreme(CtC, N, n, d, "SA", cnt, seed, k=k)
        dn = max(float(sym_extreme(DtD, N, n, d, "LA", cnt, seed, tol=1e-8)[0][0].clamp(min=0).sqrt()), 1.0)
        cn = max(float(sym_extreme(CtC, N, n, d, "LA", cnt, seed, tol=1e-8)[0][0].clamp(min=0).sqrt()), 1.0)
    except ArpackNoConvergence as exc:  # a cluster of small singular values
        msg = f"undefined: Lanczos for the {k} smallest singular values did not converge ({exc})"
        return math.nan, 0.0, msg, math.nan, msg, 0, 0, fact
    except OverBudget as exc:
        return undecided(
            f"undecided: the bounded Lanczos route stopped at its cap of {meter.cap} products ({exc})", fact, meter
        )
    over: str | None = None
    meter.soft(search)
    try:  # Δ's smallest pairs: only told from the threshold (relative 1e-4), within the search's cap
        # thick-restart Lanczos with ARPACK's relative rule (ρ ≤ 1e-4·max(|θ|, eps^{2/3}·‖ΔᵀΔ‖)):
        # ARPACK's own restarts spent several times the products on the same rule
        pairs = lanczos_ends(
            block_op(DtD, n, d),
            N,
            torch.from_numpy(np.random.default_rng(seed).standard_normal(N)),
            ("min",),
            arpack_rule(1e-4),
            k=k,
        )[0]["min"]
        lamD = torch.tensor([t for t, _, _ in pairs], dtype=F64)
        VD = torch.stack([y for _, y, _ in pairs], 1)
    except OverBudget as exc:  # the parallel sections and flatness stay decided; ker Δ is not
        over = f"undecided: Δ's eigenpairs stopped at their cap of {meter.cap} products ({exc})"
        lamD, VD = torch.zeros(0, dtype=F64), torch.zeros(N, 0, dtype=F64)
    CtC = e.constraints_gram_fast  # past the searches: the remaining products are not capped
    sD, sC = lamD.clamp(min=0).sqrt(), lamC.clamp(min=0).sqrt()
    thr = max(tol(tdt, N), math.sqrt(tol(F64, N)))
    kD, kC = int((sD <= thr * dn).sum()), int((sC <= thr * cn).sum())
    why: str | None = None
    if kD == sD.numel() or kC == sC.numel():
        why = (
            f"undefined: a null space reaches the k_max = {sD.numel()} eigenpairs computed "
            f"(dim ker Δ ≥ {kD} or dim parallel ≥ {kC}); raise k_max"
        )
    K, Z = VD[:, :kD], VC[:, :kC]
    r1 = float(torch.linalg.matrix_norm(block_op(Dfn, n, d)(Z), ord=2)) / dn if kC else 0.0
    r2 = float(torch.linalg.eigvalsh(K.T @ block_op(CtC, n, d)(K)).max().clamp(min=0).sqrt()) / cn if kD else 0.0
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
    fact.update(norm_Delta=dn, norm_C=cn, matvecs=meter.used)
    if over:
        fact["decided"] = False
        return math.nan, bnd, over, fl, fwhy, -1, kC, fact
    return r, bnd, why, fl, fwhy, kD, kC, fact
