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
from ..formulas import laplacian as _FL
from ..formulas import spectral as _FS
from ..formulas import tolerances as _FT
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
        params.get("tol", _FT.OPERATOR).value(n=n, d=d),  # the registry's tolerance
        "max_pq |<e_p, Δe_q>_π − <Δe_p, e_q>_π| / max_i π_i (1 + Σ_j |P_ij||O_ij|) (the registry's formula)",
    )


def walk_spectrum_interval(inst, params) -> Verdict:
    P, O = walk_view(inst)
    W = dense_walk(P, O)
    lo, hi = float(params["lo"]), float(params["hi"])
    return spectrum_in(
        np.linalg.eigvals(np.eye(W.shape[0]) - W), lo, hi, spectrum_tol(params, W, P.shape[0], O.shape[-1])
    )


def spectrum_tol(params, W: np.ndarray, n: int, d: int) -> float:
    """The registry's ``params["tol_spectrum"]`` (default :data:`theory.formulas.tolerances.SPECTRUM`)
    on the dense walk ``W`` of ``n`` tokens of ``d`` features."""
    return params.get("tol_spectrum", _FT.SPECTRUM).value({"W": W if W.size else np.zeros((1, 1))}, n=n, d=d)


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
        worst,
        params.get("tol_form", _FT.FORM).value(n=n, d=d),  # the registry's tolerance
        "|<x,Δx>_π − Dirichlet| / scale over 3 probes (the registry's formula)",
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
    their operator's norm, decided with :mod:`theory.rounding`: a dimension its singular values do not
    decide (one within the SVD's rounding band of the threshold) leaves the verdict undecided, even when
    the two computed dimensions agree; unequal dimensions fail unless the extra
    directions lie below what the other operator resolves (``Δ`` sees a section defect only squared,
    :func:`theory.rounding.unresolved_by_square`; ``‖Δz‖ ≤ max(r_max, 1)·‖Cz‖`` the other way, with
    ``r`` the row sums of ``P``): undecided."""
    P, O = walk_view(inst)
    n, d = P.shape[0], O.shape[-1]
    Dl = np.eye(n * d) - dense_walk(P, O)
    C = gauge_constraints(P, O, params.get("parallel"))
    rel = params.get("tol_rank", _FT.KERNEL_RANK).value(n=n, d=d)  # the registry's SVD threshold
    tol = params.get("tol", _FT.KERNEL).value()  # the registry's tolerance on the two kernels
    dn = max(float(np.linalg.norm(Dl, 2)), 1.0)
    cn = max(float(np.linalg.norm(C, 2)), 1.0) if C.size else 1.0
    K, kd_lo, kd_hi, _ = null_space_interval(Dl, rel)
    Z, kc_lo, kc_hi, _ = null_space_interval(C, rel)
    r1 = float(np.linalg.norm(Dl @ Z, 2)) / dn if Z.size else 0.0
    r2 = float(np.linalg.norm(C @ K, 2)) / cn if K.size and C.size else 0.0
    dims = f"dim ker Δ = {K.shape[1]}, dim parallel sections = {Z.shape[1]}"
    why = ""
    if kd_lo != kd_hi or kc_lo != kc_hi:  # equal computed dimensions prove nothing then either
        why = f"a dimension is not decided by its singular values (ker Δ ∈ [{kd_lo}, {kd_hi}], ker C ∈ [{kc_lo}, {kc_hi}])"
    elif K.shape[1] == Z.shape[1]:
        return residual_verdict(max(r1, r2), tol, dims)
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
        return Verdict(False, math.nan, tol, f"{dims}: undecided: {why}", undecided=True)
    return Verdict(False, math.inf, tol, dims)


def walk_flat(inst, params) -> Verdict:
    """T3.flat: the registry's formula ``params["flat"]`` (``Δ = R((I-P)⊗I)R^T`` entrywise, premises
    ``O_ij = R_i R_j^T``, ``R_i`` orthogonal: :func:`theory.oracles.instances.premised`) at every unit
    vector ``x = e_p`` at once, its matrix form ``params["flat_matrix"]`` on the dense ``Δ`` and
    ``R = diag(R_i)``, and ``params["kernel_dim"]`` (``dim ker Δ`` by the rank rule, its right side
    evaluated at the instance's ``d``)."""
    if inst.get("R") is None:
        return not_applicable("no flat connection in this instance")
    P, O = walk_view(inst)
    R = np.asarray(inst["R"], float)
    n, d = R.shape[0], R.shape[-1]
    E = np.eye(n * d).reshape(n, d, n * d)
    values = {"P": P, "O": O, "R": R, "x": E, "n": n, "d": d}
    what = "Δ = R((I−P)⊗I)Rᵀ at every unit vector (entries O(1): P stochastic, R orthogonal)"
    tol = params.get("tol", _FT.OPERATOR).value(n=n, d=d)  # the registry's tolerance
    form = premised(params["flat"], values, "flat", tol, what, scale=1.0)
    Dl = np.eye(n * d) - dense_walk(P, O)
    forms = [form]
    if params.get("flat_matrix") is not None:
        Rb = np.zeros((n * d, n * d))
        for t in range(n):
            Rb[t * d : (t + 1) * d, t * d : (t + 1) * d] = R[t]
        ident, mats = params["flat_matrix"], {"Delta": Dl, "P": P, "R": Rb, "n": n, "d": d}
        gap = np.abs(_FL.matrix_value(ident.lhs, mats) - _FL.matrix_value(ident.rhs, mats)).max()
        forms.append(residual_verdict(float(gap), tol, "flat_matrix: the registry's matrix formula"))
    _, k_lo, k_hi, _ = null_space_interval(Dl, params.get("tol_rank", _FT.RANK).value())
    want = int(_F.tabulate(params["kernel_dim"].rhs, (), {"d": d}))
    dim = (
        Verdict(True, 0.0, 0.0, f"dim ker Δ = {want}, stated {want}")
        if k_lo == k_hi == want
        else Verdict(False, math.nan, 0.0, f"dim ker Δ ∈ [{k_lo}, {k_hi}] (undecided), stated {want}", undecided=True)
        if k_lo <= want <= k_hi
        else Verdict(False, float(min(abs(k_lo - want), abs(k_hi - want))), 0.0, f"dim ker Δ = {k_hi}, stated {want}")
    )
    return all_of(*forms, dim)


def walk_scaled(inst, params) -> Verdict:
    """T3.scaled: the transports ``params["scaled_transport"]`` (``O = s·Q``, ``Q``: the instance's
    transports), ``spec Δ`` in the interval of ``params["scaled_spectrum"]`` (its ends, expressions of
    ``s``, at the instance's ``s``) and the registry's formula ``params["scaled"]`` on the polarization
    probes (every ``x``: :func:`theory.oracles.instances.polarization_probes`)."""
    if inst.get("s") is None:
        return not_applicable("no scale in this instance")
    P, Q = walk_view(inst)
    s = float(inst["s"])
    pi = walk_pi(inst, P)
    n, d = P.shape[0], Q.shape[-1]
    interval = params["scaled_spectrum"].rel.args[1]
    lo, hi = (float(e.subs(_FS.s_, s)) for e in (interval.start, interval.end))
    transport = params["scaled_transport"]
    O = _F.tabulate(transport.rhs, transport.free, {"Q": Q, "s": s, "n": n, "d": d})
    W = dense_walk(P, O)
    X = polarization_probes(n, d)
    lhs, rhs = _F.evaluate(params["scaled"], {"pi": pi, "P": P, "Q": Q, "s": s, "x": X, "n": n, "d": d})
    form = residual_verdict(
        float((np.abs(lhs - rhs) / form_scale(P, s * Q, pi, X)).max()),
        params.get("tol_form", _FT.FORM).value(n=n, d=d),  # the registry's tolerance
        "|<x,Δx>_π − scaled Dirichlet form| / scale on the polarization probes (the registry's formula)",
    )
    return all_of(spectrum_in(np.linalg.eigvals(np.eye(W.shape[0]) - W), lo, hi, spectrum_tol(params, W, n, d)), form)


def block_detailed_balance(inst, params) -> Verdict:
    """Gauge-free detailed balance on the blocks ``B_ij = P_ij O_ij``: some ``π > 0`` with the
    registry's ``params["block_balance"]`` (``π_i B_ij = π_j B_jiᵀ``, T3's note). On a connected
    support the ratios ``π_j/π_i = N_ij/N_ji`` (the norms of ``params["norm_balance"]``'s definition)
    along a spanning tree (breadth first from 0) are forced; the candidate is then checked on every
    block (and a one-way edge, ``B_ij ≠ 0 = B_ji``, is a certain failure)."""
    P, O = walk_view(inst)
    n, d = P.shape[0], O.shape[-1]
    B = P[:, :, None, None] * O
    balance = params.get("block_balance", _FL.BLOCK_BALANCE)
    norms = params.get("norm_balance", _FL.NORM_BALANCE)
    N = _F.environment(norms, {"B": B, "n": n, "d": d})["N"]
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
    lhs, rhs = _F.evaluate(balance, {"pi": pi, "B": B, "n": n, "d": d})
    r = float(np.abs(lhs - rhs).max()) / max(float(np.abs(lhs).max()), 1e-300)
    nl, nr = _F.evaluate(norms, {"pi": pi, "B": B, "n": n, "d": d})
    gap = float(np.abs(nl - nr).max()) / max(float(np.abs(nl).max()), 1e-300)
    return residual_verdict(
        r, 64 * EPS * n * d, f"π_i B_ij = π_j B_jiᵀ (the registry's formula; norms balanced to {gap:.1e})"
    )


# ------------------------------------------------------------------------------------------------
# what T3's witnesses state about their data, evaluated exactly
# ------------------------------------------------------------------------------------------------
def _rational(v):
    return [_rational(x) for x in v] if isinstance(v, (list, tuple)) else sp.Rational(v)


def exact_value(expr, data, n: int, d: int):
    """``expr`` (a formula over ``n``, ``d`` with ``Indexed`` data ``P``, ``O``, ``pi``, ``x``) at the
    exact witness data (``x``: token-major, ``n·d`` entries), by SymPy: the sums expanded at the
    sizes, every entry replaced by its rational value."""
    vals = {k: _rational(v) for k, v in data.items() if k in ("P", "O", "pi", "x")}
    out = expr.xreplace({_F.n: sp.Integer(n), _F.d: sp.Integer(d)}).doit()
    sub = {}
    for e in out.atoms(sp.Indexed):
        name, idx = e.base.label.name, [int(t) for t in e.indices]
        v = vals[name]
        if name == "x":
            v = v[idx[0] * d + idx[1]]
        else:
            for t in idx:
                v = v[t]
        sub[e] = v
    return sp.nsimplify(out.xreplace(sub))


def exact_generator(data) -> sp.Matrix:
    """``Δ = I − W`` of exact walk data, ``W`` with blocks ``P_ij O_ij``."""
    from ..symbolic import walk_matrix

    P, O = sp.Matrix(_rational(data["P"])), _rational(data["O"])
    Ob = [[sp.Matrix(O[t][u]) for u in range(len(O))] for t in range(len(O))]
    return sp.eye(P.shape[0] * Ob[0][0].shape[0]) - walk_matrix(P, Ob)


def fact_verdict(fact, data) -> Verdict:
    """A fact a witness states (a formula of :mod:`theory.formulas.laplacian`) on its exact data:
    ``spec Δ = {…}`` holds iff the characteristic polynomial of ``Δ`` is ``Π (z − e)`` over the stated
    set (so the set is all of the spectrum, each eigenvalue simple); a form identity iff its two sides
    are equal. Exact (SymPy), so the verdict is certain."""
    Dl = exact_generator(data)
    nd = Dl.shape[0]
    n = len(data["P"])
    d = nd // n
    if isinstance(fact.lhs, _FL.Spec):
        z = sp.Symbol("z")
        want = sp.prod([z - e for e in fact.rhs])
        r = sp.simplify(sp.expand(Dl.charpoly(z).as_expr() - want))
        gap = 0.0 if r == 0 else math.inf
        return Verdict(r == 0, gap, 0.0, f"{fact.name}: charpoly(Δ) − Π(z − e) = {r} (exact)")
    r = sp.simplify(exact_value(fact.lhs, data, n, d) - exact_value(fact.rhs, data, n, d))
    return Verdict(r == 0, 0.0 if r == 0 else float(abs(r)), 0.0, f"{fact.name}: lhs − rhs = {r} (exact)")


def witness_facts(witness) -> Verdict:
    """Every formula a T3 witness's text states about its instance (its ``params`` with an ``lhs``),
    each judged by :func:`fact_verdict`."""
    facts = [f for f in witness.params.values() if hasattr(f, "lhs")]
    if not facts:
        return not_applicable(f"{witness.id} states no formula about its data")
    return all_of(*(fact_verdict(f, witness.instance) for f in facts))
