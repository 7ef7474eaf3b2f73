"""T3's oracles on a connection walk: self-adjointness, the spectrum and its upper form, the Dirichlet
identity, the kernel (parallel sections), flat and scaled connections, and block detailed balance —
each the registry's formula evaluated on the instance (dense float64, exact rank rules of
:mod:`theory.rounding`).

Re-exported by :mod:`theory.oracles`; imports neither torch nor numerics.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from .. import formulas as _F
from ..formulas import spectral as _FS
from ..rounding import unresolved_by_square
from .instances import (
    EPS,
    Verdict,
    all_of,
    dense_walk,
    dirichlet_scale,
    form_scale,
    not_applicable,
    null_space_interval,
    pi_inner_product,
    polarization_probes,
    premised,
    probe_vectors,
    residual_verdict,
    spectrum_in,
    walk_pi,
    walk_view,
)
from .walks import walk_values


def walk_self_adjoint(inst, params) -> Verdict:
    """The registry's formula ``params["self_adjoint"]`` (``<x, Δy>_π = <Δx, y>_π``) evaluated at
    every pair of unit vectors ``x = e_p``, ``y = e_q`` at once (``x`` of shape ``(n, d, nd, 1)``, ``y``
    of shape ``(n, d, 1, nd)``): its two sides are the matrices ``(diag π ⊗ I)Δ`` and its transpose."""
    P, O = walk_view(inst)
    pi = walk_pi(inst, P)
    n, d = P.shape[0], O.shape[-1]
    E = np.eye(n * d).reshape(n, d, n * d)
    values = {**walk_values(P, O, pi), "x": E[:, :, :, None], "y": E[:, :, None, :]}
    lhs, rhs = _F.evaluate(params.get("self_adjoint", _F.SELF_ADJOINT), values)
    # the size of the terms each entry sums, π_i (1 + Σ_j |P_ij| |O_ij|): an entry near 0 (Δ ≈ 0 on a
    # nearly absorbing state) is still computed from terms of this size, and rounds at their scale
    terms = pi * (1.0 + (np.abs(P)[:, :, None, None] * np.abs(O)).sum(1).max((-1, -2)))
    scale = max(float(np.abs(lhs).max()), float(np.abs(terms).max()), 1e-300)
    return residual_verdict(
        np.abs(lhs - rhs).max() / scale,
        64 * EPS * n * d,
        "max_pq |<e_p, Δe_q>_π − <Δe_p, e_q>_π| / max_i π_i (1 + Σ_j |P_ij||O_ij|) (the registry's formula)",
    )


def walk_spectrum_interval(inst, params) -> Verdict:
    P, O = walk_view(inst)
    W = dense_walk(P, O)
    return spectrum_in(np.linalg.eigvals(np.eye(W.shape[0]) - W), float(params["lo"]), float(params["hi"]), W)


def walk_dirichlet(inst, params) -> Verdict:
    """The Dirichlet identity of the registry (``params["dirichlet"]``, a SymPy expression) evaluated
    on the instance at 3 probes ``x``."""
    P, O = walk_view(inst)
    pi = walk_pi(inst, P)
    n, d = P.shape[0], O.shape[-1]
    ident = params.get("dirichlet", _F.DIRICHLET)
    worst = 0.0
    for x in probe_vectors(n * d):
        lhs, rhs = _F.evaluate(ident, {"pi": pi, "P": P, "O": O, "x": x.reshape(n, d), "n": n, "d": d})
        nx = pi_inner_product(x, x, pi, d)
        worst = max(worst, abs(float(lhs) - float(rhs)) / max(dirichlet_scale(P, O, pi, x, d) + nx, 1e-300))
    return residual_verdict(
        worst, 64 * EPS * n * d * n, "|<x,Δx>_π − Dirichlet| / scale over 3 probes (the registry's formula)"
    )


def gauge_constraints(P: np.ndarray, O: np.ndarray, parallel=None) -> np.ndarray:
    """The matrix ``C`` of the parallel-section condition (the registry's formula ``parallel``,
    ``x_i = O_ij x_j``) on every edge ``P_ij ≠ 0``: its two sides evaluated at every unit vector
    ``x = e_p`` at once, ``d`` rows ``lhs - rhs`` per edge (edges in row-major order)."""
    n, d = P.shape[0], O.shape[-1]
    E = np.eye(n * d).reshape(n, d, n * d)
    lhs, rhs = _F.evaluate(parallel or _FS.PARALLEL, {"O": O, "x": E, "n": n, "d": d})
    return (lhs - rhs)[P != 0].reshape(-1, n * d)


def walk_kernel_parallel(inst, params) -> Verdict:
    """``ker Δ`` = the parallel sections ``ker C``, both null spaces at ``64·eps·nd`` relative to
    their operator's norm, decided with :mod:`theory.rounding`: unequal dimensions fail unless the extra
    directions lie below what the other operator resolves (``Δ`` sees a section defect only squared,
    :func:`theory.rounding.unresolved_by_square`; ``‖Δz‖ ≤ max(r_max, 1)·‖Cz‖`` the other way, with
    ``r`` the row sums of ``P``), or a dimension is not decided by its singular values: undecided."""
    P, O = walk_view(inst)
    n, d = P.shape[0], O.shape[-1]
    Dl = np.eye(n * d) - dense_walk(P, O)
    C = gauge_constraints(P, O, params.get("parallel"))
    rel = 64 * EPS * n * d  # the rounding level of an n·d-dimensional operator, as for every tolerance
    dn = max(float(np.linalg.norm(Dl, 2)), 1.0)
    cn = max(float(np.linalg.norm(C, 2)), 1.0) if C.size else 1.0
    K, kd_lo, kd_hi, _ = null_space_interval(Dl, rel)
    Z, kc_lo, kc_hi, _ = null_space_interval(C, rel)
    r1 = float(np.linalg.norm(Dl @ Z, 2)) / dn if Z.size else 0.0
    r2 = float(np.linalg.norm(C @ K, 2)) / cn if K.size and C.size else 0.0
    dims = f"dim ker Δ = {K.shape[1]}, dim parallel sections = {Z.shape[1]}"
    if K.shape[1] == Z.shape[1]:
        return residual_verdict(max(r1, r2), 1e-7, dims)
    why = ""
    if kd_lo != kd_hi or kc_lo != kc_hi:
        why = f"a dimension is not decided by its singular values (ker Δ ∈ [{kd_lo}, {kd_hi}], ker C ∈ [{kc_lo}, {kc_hi}])"
    elif K.shape[1] > Z.shape[1]:
        pi = walk_pi(inst, P)
        if (pi > 0).all():
            wts = np.sqrt(np.clip(pi[:, None] * P, 0, None))
            rows = []
            for i, j in zip(*np.nonzero(P)):
                rows.append(wts[i, j] * (K[i * d : (i + 1) * d] - O[i, j] @ K[j * d : (j + 1) * d]))
            e_max = 0.5 * float(np.linalg.norm(np.vstack(rows), 2)) ** 2 if rows else 0.0
            if unresolved_by_square(e_max, float(pi.max()), rel * dn):
                why = f"the extra directions of ker Δ have Dirichlet energy {e_max:.1e}, below what Δ resolves"
    elif r1 <= rel * cn * max(float(P.sum(1).max()), 1.0) / dn:
        why = f"the extra parallel sections have ‖ΔZ‖/‖Δ‖ = {r1:.1e}, below what C resolves"
    if why:
        return Verdict(False, math.nan, 1e-7, f"{dims}: undecided: {why}", undecided=True)
    return Verdict(False, math.inf, 1e-7, dims)


def walk_flat(inst, params) -> Verdict:
    """T3.flat: the registry's formula ``params["flat"]`` (``Δ = R((I-P)⊗I)R^T`` entrywise, premises
    ``O_ij = R_i R_j^T``, ``R_i`` orthogonal: :func:`theory.oracles.instances.premised`) at every unit
    vector ``x = e_p`` at once, and ``dim ker Δ = kernel_dim_per_d · d``."""
    if inst.get("R") is None:
        return not_applicable("no flat connection in this instance")
    P, O = walk_view(inst)
    R = np.asarray(inst["R"], float)
    n, d = R.shape[0], R.shape[-1]
    E = np.eye(n * d).reshape(n, d, n * d)
    values = {"P": P, "O": O, "R": R, "x": E, "n": n, "d": d}
    what = "Δ = R((I−P)⊗I)Rᵀ at every unit vector (entries O(1): P stochastic, R orthogonal)"
    form = premised(params["flat"], values, "flat", 64 * EPS * n * d, what, scale=1.0)
    Dl = np.eye(n * d) - dense_walk(P, O)
    _, k_lo, k_hi, _ = null_space_interval(Dl)
    want = int(params["kernel_dim_per_d"]) * d
    dim = (
        Verdict(True, 0.0, 0.0, f"dim ker Δ = {want}, stated {want}")
        if k_lo == k_hi == want
        else Verdict(False, math.nan, 0.0, f"dim ker Δ ∈ [{k_lo}, {k_hi}] (undecided), stated {want}", undecided=True)
        if k_lo <= want <= k_hi
        else Verdict(False, float(min(abs(k_lo - want), abs(k_hi - want))), 0.0, f"dim ker Δ = {k_hi}, stated {want}")
    )
    return all_of(form, dim)


def walk_scaled(inst, params) -> Verdict:
    """T3.scaled: ``spec Δ`` in ``[lo_s, hi_s]`` (the registry's expressions of ``s``) for ``O = s·Q``
    (``Q``: the instance's transports), and the registry's formula ``params["scaled"]`` on the
    polarization probes (every ``x``: :func:`theory.oracles.instances.polarization_probes`)."""
    if inst.get("s") is None:
        return not_applicable("no scale in this instance")
    P, Q = walk_view(inst)
    s = float(inst["s"])
    pi = walk_pi(inst, P)
    n, d = P.shape[0], Q.shape[-1]
    lo, hi = (float(sp.sympify(params[k]).subs(_FS.s_, s)) for k in ("lo_s", "hi_s"))
    W = dense_walk(P, s * Q)
    X = polarization_probes(n, d)
    lhs, rhs = _F.evaluate(params["scaled"], {"pi": pi, "P": P, "Q": Q, "s": s, "x": X, "n": n, "d": d})
    form = residual_verdict(
        float((np.abs(lhs - rhs) / form_scale(P, s * Q, pi, X)).max()),
        64 * EPS * n * d * n,
        "|<x,Δx>_π − scaled Dirichlet form| / scale on the polarization probes (the registry's formula)",
    )
    return all_of(spectrum_in(np.linalg.eigvals(np.eye(W.shape[0]) - W), lo, hi, W), form)


def block_detailed_balance(inst, params) -> Verdict:
    """Gauge-free detailed balance on the blocks ``B_ij = P_ij O_ij``: some ``π > 0`` with
    ``π_i B_ij = π_j B_jiᵀ``. On a connected support the ratios ``π_j/π_i = ‖B_ij‖/‖B_ji‖`` along a
    spanning tree (breadth first from 0) are forced; the candidate is then checked on every block
    (and a one-way edge, ``B_ij ≠ 0 = B_ji``, is a certain failure)."""
    P, O = walk_view(inst)
    n = P.shape[0]
    B = P[:, :, None, None] * O
    N = np.linalg.norm(B, axis=(-1, -2))
    if ((N > 0) & (N.T == 0)).any():
        return Verdict(False, math.inf, 0.0, "one-way block")
    pi = np.full(n, np.nan)
    pi[0] = 1.0
    queue = [0]
    while queue:
        i = queue.pop(0)
        for j in range(n):
            if np.isnan(pi[j]) and N[i, j] > 0:
                pi[j] = pi[i] * N[i, j] / N[j, i]
                queue.append(j)
    if np.isnan(pi).any():
        return not_applicable("support of B not connected")
    G = pi[:, None, None, None] * B
    r = float(np.abs(G - np.swapaxes(np.swapaxes(G, 0, 1), -1, -2)).max()) / max(float(np.abs(G).max()), 1e-300)
    norms = float(np.abs(pi[:, None] * N - (pi[:, None] * N).T).max()) / max(float((pi[:, None] * N).max()), 1e-300)
    return residual_verdict(r, 64 * EPS * n * O.shape[-1], f"π_i B_ij = π_j B_jiᵀ (norms balanced to {norms:.1e})")
