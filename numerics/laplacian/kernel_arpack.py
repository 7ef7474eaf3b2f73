r"""The previous kernel route of the factored diagnostics (``route="arpack"``), kept as the baseline
of ``benchmarks/bench_diagnose_kernel.py``: the factor of ``C Q`` on all root-fixed sections and an
unbounded ARPACK search for further null directions of ``Δ``."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks
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

__all__ = ["kernel_element_arpack", "ARPACK_MAX_CHUNKS"]

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
