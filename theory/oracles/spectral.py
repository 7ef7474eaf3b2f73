"""Spectral / pattern oracles: the sheaf Laplacian spectrum and kernel (T5), softmax attention
patterns (T4: triangle, symmetric-reversible, query bias, causal) and ring Fourier symbols (T6).

Re-exported by :mod:`theory.oracles`; imports neither torch nor numerics.
"""

from __future__ import annotations

import math

import numpy as np

from .. import formulas as _F
from ..formulas import patterns as _FP
from ..formulas import reversibility as _FR
from ..formulas import spectral as _FS
from ..formulas import tolerances as _FT
from .instances import (
    EPS,
    Verdict,
    all_of,
    dense_walk,
    form_scale,
    mask_offsets,
    not_applicable,
    null_space,
    polarization_probes,
    premised,
    residual_verdict,
    walk_pi,
    walk_view,
)
from .laplacian import (
    walk_dirichlet,
    walk_self_adjoint,
    walk_spectrum_interval,
)
from .walks import (
    multiset_distance,
    relation_verdict,
)


def sha_laplacian(inst, params) -> Verdict:
    """T5.laplacian: the walk the registry's formulas ``walk_p``, ``walk_o`` define (``P = A``,
    ``O_ij = T``), whose ``I − W`` is the registry's ``laplacian`` (``Δ = I − A ⊗ T``), is
    π-self-adjoint with the spectrum in ``[lo, hi]`` and the Dirichlet form (T3's oracles)."""
    walk, kron = sha_walk(inst, params)
    return all_of(
        kron,
        walk_self_adjoint(walk, params),
        walk_spectrum_interval(walk, params),
        walk_dirichlet(walk, params),
    )


def walk_spectrum(inst, params) -> Verdict:
    """T3.spectrum: the eigenvalues of ``Δ`` in ``[lo, hi]`` (:func:`walk_spectrum_interval`), and
    the registry's formula ``params["upper_form"]`` (``<x,(2I-Δ)x>_π`` as a sum of squares) evaluated
    at every polarization probe ``x`` at once (:func:`theory.oracles.instances.polarization_probes`),
    relative to the size of its terms (:func:`theory.oracles.instances.form_scale`)."""
    P, O = walk_view(inst)
    pi = walk_pi(inst, P)
    n, d = P.shape[0], O.shape[-1]
    X = polarization_probes(n, d)
    lhs, rhs = _F.evaluate(params["upper_form"], {"pi": pi, "P": P, "O": O, "x": X, "n": n, "d": d})
    form = residual_verdict(
        float((np.abs(lhs - rhs) / form_scale(P, O, pi, X)).max()),
        params.get("tol_form", _FT.FORM).value(n=n, d=d),  # the registry's tolerance
        "|<x,(2I−Δ)x>_π − sum of squares| / scale on the polarization probes (the registry's formula)",
    )
    return all_of(walk_spectrum_interval(inst, params), form)


def eig_count(T: np.ndarray, value: float) -> int:
    """Geometric multiplicity of ``value`` (threshold relative to ``max(‖T‖₂, 1)``)."""
    return int(eigenspace(T, value).shape[1])


def _eigen_coefficient(ident):
    """The eigenvalue a T5 formula states, as a function of λ: ``rhs / (u_i f_a)`` (SymPy), or
    ``None`` when the formula's right side is not a multiple of ``u ⊗ f``."""
    import sympy as sp

    coef = sp.cancel(ident.rhs / (_F.u_[_F.i] * _F.f_[_F.a]))
    if coef.has(sp.Indexed):
        return None
    return sp.lambdify([_F.lam], coef, modules=["numpy"])


def t5_spectrum(inst, params) -> Verdict:
    """T5's formulas (``params["on_fix"]``, ``["on_minus"]``: the registry's SymPy expressions)
    evaluated on every eigenpair of ``A`` and eigenvector of ``T`` (their premises hold by
    construction), and the eigenvalues they state compared with ``spec Δ`` as multisets."""
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    n, d = A.shape[0], T.shape[0]
    lam, U = np.linalg.eig(A)
    fix, minus = eig_count(T, 1.0), eig_count(T, -1.0)
    tol = params.get("tol", _FT.EIGEN).value()  # the registry's tolerance
    parts, want = [], []
    for key, default, sigma, mult in (("on_fix", _F.T5_ON_FIX, 1.0, fix), ("on_minus", _F.T5_ON_MINUS, -1.0, minus)):
        ident = params.get(key, default)
        coef = _eigen_coefficient(ident)
        if coef is None:
            return Verdict(False, math.inf, tol, f"{key}: the formula's right side is not a multiple of u ⊗ f")
        want += [complex(coef(la)) for la in lam] * mult
        F_ = eigenspace(T, sigma)
        worst = 0.0
        for col in range(F_.shape[1]):
            for q in range(n):
                values = {"A": A, "T": T, "u": U[:, q], "f": F_[:, col], "lambda": lam[q], "n": n, "d": d}
                lhs, rhs = _F.evaluate(ident, values)
                worst = max(worst, float(np.abs(lhs - rhs).max()))
        parts.append(residual_verdict(worst, tol, f"{key}: Δ(u ⊗ f) = the formula's eigenvalue · (u ⊗ f)"))
    got = np.linalg.eigvals(sha_generator(A, T, params))
    parts.append(
        residual_verdict(
            multiset_distance(got, np.array(want)), tol, f"dim Fix T = {fix}, dim(−1) = {minus}; multiset distance"
        )
    )
    return all_of(*parts)


def t5_kernel(inst, params) -> Verdict:
    """T5.kernel: the registry's formula ``params["kernel"]`` (``Δ(1 ⊗ f) = 0``) evaluated at once on
    a basis ``f`` of the eigenspace of ``T`` its premise names (``T f = σ f``, ``σ`` read from the
    formula), and the spaces of ``params["kernel_space"]`` (``ker Δ = 1 ⊗ Fix(T)``, ``Δ`` from
    ``params["laplacian"]``) equal: the same dimension and the same span."""
    import sympy as sp

    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    n, d = A.shape[0], T.shape[0]
    ident = params["kernel"]
    sigmas = [sp.cancel(r / _F.f_[_F.a]) for l_, r in ident.premises if l_.has(_F.f_)]
    if len(sigmas) != 1 or sigmas[0].has(sp.Indexed):
        return Verdict(False, math.inf, 0.0, "kernel: the formula names no eigenspace T f = σ f")
    sigma = float(sigmas[0])
    F_ = eigenspace(T, sigma, params.get("tol_rank", _FT.RANK).value())
    worst = 0.0
    if F_.shape[1]:
        lhs, rhs = _F.evaluate(ident, {"A": A, "T": T, "f": F_, "n": n, "d": d})
        worst = float(np.abs(lhs - rhs).max()) / max(1.0, float(np.abs(A).sum(-1).max() * np.abs(T).sum(-1).max()))
    contained = residual_verdict(
        worst,
        params.get("tol", _FT.OPERATOR).value(n=n, d=d),
        f"Δ(1 ⊗ f) = 0 on the {sigma:g}-eigenspace of T (the registry's formula)",
    )
    values = {"Delta": sha_generator(A, T, params), "A": A, "T": T, "n": n, "d": d}
    span_tol = params.get("tol_span", _FT.SPAN).value()
    return all_of(contained, same_span(*_F.evaluate(params["kernel_space"], values), "kernel_space", span_tol))


def _t4_values(inst, mu=None) -> dict:
    X, M = np.asarray(inst["X"], float), np.asarray(inst["M"], float)
    n, d = X.shape
    dk = float(inst["dk"]) if inst.get("dk") is not None else float(d)
    return {"X": X, "M": M, "mu": np.zeros((n, n)) if mu is None else mu, "d_k": dk, "n": n, "d": d}


def t4_triangle(inst, params) -> Verdict:
    """T4's triangle formula (``params["triangle"]``: the registry's SymPy expression, with its
    definitions of ``S``, ``Z``, ``A``, ``Ma``) on every triple of the unmasked softmax attention."""
    values = _t4_values(inst, _no_mask({**inst, "mask": None}, params))
    n = values["n"]
    ident = params.get("triangle", _F.T4_TRIANGLE)
    lhs, rhs = _F.evaluate(ident, values)
    S = _F.environment(ident, values)["S"]
    worst = float(np.abs(lhs - rhs).max()) / (1 + float(np.abs(S).max()))
    return residual_verdict(
        worst,
        params.get("tol", _FT.ROW).value(n=n),
        "|log triangle ratio − stated form| / (1 + max|S|) (the registry's formula)",
    )


def t4_symmetric_reversible(inst, params) -> Verdict:
    """T4's formulas (``params["balance"]``, ``params["stationary"]``: SymPy expressions of the
    registry, with their premise ``M_ab = M_ba`` and definitions ``S``, ``Z``, ``A``) evaluated on the
    instance as drawn — ``M`` is not symmetrised here (:func:`premised`)."""
    n = np.asarray(inst["X"]).shape[0]
    values = _t4_values(inst, _no_mask(inst, params))
    t = params.get("tol", _FT.ROW).value(n=n)  # the registry's tolerance
    parts = [
        premised(params.get(key, default), values, key, t, "π_i ∝ Z_i")
        for key, default in (("balance", _F.T4_BALANCE), ("stationary", _F.T4_STATIONARY))
    ]
    parts.append(t4_only_if(inst, params.get("kolmogorov", _FS.KOLMOGOROV), t))
    if "converse" in params and inst.get("mask") is None:  # "if", and the affinely collinear case
        ident = params["converse"]
        parts.append(
            premised(ident, values, "converse", t, "balanced cycles ⇒ reversible", _balance_scale(ident, values))
        )
        parts.append(t4_collinear(inst, params, t))
    return all_of(*parts)


def t4_only_if(inst, ident, t: float) -> Verdict:
    """T4.criterion's "only if" (``ident``: the registry's formula ``kolmogorov``): where the unmasked
    attention is reversible, with the positive ``π_i = A_0i / A_i0`` (the only candidate), the
    triangle's right side vanishes on every triple; not applicable where it is not reversible."""
    if inst.get("mask") is not None:
        return not_applicable("a mask: no positive π (T4.causal)")
    values = _t4_values(inst)
    env = _F.environment(ident, values)
    A = env["A"]
    pi = A[0, :] / A[:, 0]
    scale = 1 + float(np.abs(env["S"]).max())
    return premised(ident, {**values, "pi": pi}, "kolmogorov", t, "reversible ⇒ balanced cycles", scale)


def t4_query_bias(inst, params) -> Verdict:
    """T4's query-bias formula (``params["query_bias"]``: the registry's SymPy expression, with its
    premise ``M_ab = M_ba`` and definitions ``S``, ``Z``, ``A``, ``π``) on the unmasked instance as
    drawn (:func:`premised`); ``β``: the instance's, else ``linspace(-1, 1, n)``."""
    n = np.asarray(inst["X"]).shape[0]
    beta = np.asarray(inst["beta"], float) if inst.get("beta") is not None else np.linspace(-1, 1, n)
    values = {**_t4_values(inst), "beta": beta}
    t = params.get("tol", _FT.ROW).value(n=n)  # the registry's tolerance
    return premised(params["query_bias"], values, "query_bias", t, "π_i ∝ e^{β_i} Σ_j e^{S_ij+β_j}")


def t4_causal(inst, params) -> Verdict:
    """T4.causal: for every size ``m ≤ n`` the registry's ``size`` admits, the attention of
    T4.softmax's formula (:data:`theory.formulas.spectral.ATTENTION`) on the first ``m`` tokens with
    the causal mask ``params["mask"]`` (whatever mask the instance carries) has an edge
    ``A_ij > 0 = A_ji``, which forces ``π_i = 0`` under detailed balance."""
    X = np.asarray(inst["X"], float)
    n = X.shape[0]
    sizes = [m for m in range(1, n + 1) if relation_verdict(params["size"], {"n": m}, f"n = {m}").holds]
    if not sizes:
        return not_applicable(f"n = {n}: no size up to it satisfies the registry's size")
    ident, missing = _FS.ATTENTION, []
    for m in sizes:
        values = _t4_values({**inst, "X": X[:m]}, mask_offsets({"mask": "causal"}, m, params["mask"]))
        A = _F.tabulate(ident.rhs, ident.free, _F.environment(ident, values))
        if not ((A > 0) & (A.T == 0)).any():
            missing.append(m)
    return Verdict(
        not missing,
        float(len(missing)),
        0.0,
        f"an edge with A_ij > 0 = A_ji (forces π_i = 0) at sizes {sizes}; none at {missing}",
    )


def ring_instance(inst) -> tuple[np.ndarray, np.ndarray]:
    A0, T = np.asarray(inst["A0"], float), np.asarray(inst["T"], float)
    return A0, T


def homogeneous(inst, params) -> Verdict:
    """T6.H2: the registry's formula ``params["homogeneous"]`` (``X = 1 ⊗ x^*``, every token in the
    same state) evaluated on the instance's base state ``X`` (exactly: both sides are entries of
    ``X``)."""
    if inst.get("X") is None:
        raise KeyError("T6.H2: the ring instance has no base state 'X'")
    X = np.asarray(inst["X"], float)
    lhs, rhs = _F.evaluate(params.get("homogeneous", _FS.HOMOGENEOUS), {"X": X, "n": X.shape[0], "d": X.shape[1]})
    return residual_verdict(float(np.abs(lhs - rhs).max()), 0.0, "max |X_ic − x*_c| (the registry's formula)")


def _ring_values(A0: np.ndarray, T: np.ndarray, k: int | None = None, root=None) -> dict:
    """The ring instance's values; at a wavenumber ``k``, ``ζ`` from the formula ``root`` (default
    :data:`theory.formulas.patterns.ROOT`, ``ζ = e^{2πik/n}``)."""
    H, n, _ = A0.shape
    out = {"A0": A0, "T": T, "n": n, "d": T.shape[-1], "H": H}
    if k is not None:
        out["zeta"] = complex(_F.tabulate((root or _FP.ROOT).rhs, (), {"k": k, "n": n}))
    return out


def ring_jacobian(A0: np.ndarray, T: np.ndarray, jacobian=None) -> np.ndarray:
    """``J``: the registry's formula ``jacobian`` (default :data:`theory.formulas.spectral.JACOBIAN`,
    ``J = block(Σ_h A0^h_ij T_h) − I``) tabulated over its entries ``((i, c), (j, b))``."""
    ident = jacobian or _FS.JACOBIAN
    n, d = A0.shape[-1], T.shape[-1]
    return np.real(_F.tabulate(ident.rhs, ident.free, _ring_values(A0, T))).reshape(n * d, n * d)


def ring_symbol(A0: np.ndarray, T: np.ndarray, k: int, symbol=None, at: dict | None = None) -> np.ndarray:
    """``M(k)``: the registry's formula ``symbol`` (default :data:`theory.formulas.spectral.SYMBOL`,
    ``M(k) = Σ_h â_h(k) T_h``) tabulated at ``ζ = e^{2πik/n}`` (or at the values ``at``)."""
    ident = symbol or _FS.SYMBOL
    env = _F.environment(ident, at if at is not None else _ring_values(A0, T, k))
    return _F.tabulate(ident.rhs, ident.free, env).astype(complex)


def t6_fourier(inst, params) -> Verdict:
    """T6's formulas evaluated on the instance for every ``k`` (``ζ``: the registry's ``root``) and
    every unit vector ``v``: the entrywise ``params["fourier"]`` and the matrix-level
    ``params["eigenpair"]`` (``J(φ_k ⊗ v) = φ_k ⊗ (M(k) − I)v``, ``J`` and ``M(k)`` tabulated from
    T6.jacobian's and T6.selection's formulas)."""
    A0, T = ring_instance(inst)
    H, n, _ = A0.shape
    d = T.shape[-1]
    ident = params.get("fourier", _F.FOURIER)
    pair, root = params.get("eigenpair"), params.get("root")
    J = ring_jacobian(A0, T)
    scale = max(1.0, float(np.linalg.norm(J, 2)))
    worst = 0.0
    for k in range(n):
        values = _ring_values(A0, T, k, root)
        Mk = ring_symbol(A0, T, k, at=values)
        for col in range(d):
            lhs, rhs = _F.evaluate(ident, {**values, "v": np.eye(d)[col]})
            worst = max(worst, float(np.abs(lhs - rhs).max()) / scale)
            if pair is not None:
                lhs, rhs = _F.evaluate(pair, {**values, "J": J, "Mk": Mk, "v": np.eye(d)[col]})
                worst = max(worst, float(np.abs(lhs - rhs).max()) / scale)
    return residual_verdict(
        worst,
        params.get("tol", _FT.RING).value(n=n, H=H, d=d),
        "max_k ‖J(φ_k⊗v) − φ_k⊗(M(k) − I)v‖ / ‖J‖ (the registry's formulas)",
    )


def ring_symbols(A0: np.ndarray, T: np.ndarray, symbol=None) -> np.ndarray:
    """The family ``M(k)``, ``k = 0..n-1`` (leading axis): :func:`ring_symbol` at every ``k``."""
    return np.stack([ring_symbol(A0, T, k, symbol) for k in range(A0.shape[-1])])


def t6_selection(inst, params) -> Verdict:
    """T6.selection: the registry's ``selection`` (``k* = argmax_k max Re spec(M(k) − I)``) and
    ``growth`` (``σ``, the leading eigenvalue of ``M(k*) − I``) evaluated on the family of the
    registry's symbol ``params["symbol"]``, then its ``abscissa`` (``Re σ = max Re spec J``, ``J``:
    T6.jacobian's formula); the conjugation ``params["conjugate"]`` on the same family when the
    instance is real (every ring instance is)."""
    A0, T = ring_instance(inst)
    n, d = A0.shape[-1], T.shape[-1]
    env = {"Mk": ring_symbols(A0, T, params["symbol"]), "J": ring_jacobian(A0, T), "n": n, "d": d}
    env["k_star"] = int(_F.tabulate(params["selection"].rhs, (), env))
    env["sigma"] = complex(_F.tabulate(params["growth"].rhs, (), env))
    lhs, rhs = _F.evaluate(params["abscissa"], env)
    sig, dense = float(lhs), float(rhs)
    growth = residual_verdict(
        abs(sig - dense) / max(1.0, abs(dense)),
        params.get("tol_growth", _FT.GROWTH).value(),  # the registry's tolerance
        f"Re σ(k*) = {sig:.6g} vs max Re eig J = {dense:.6g}",
    )
    if "conjugate" not in params:
        return growth
    lhs, rhs = _F.evaluate(params["conjugate"], env)
    scale = max(1.0, float(np.abs(env["Mk"]).max()))
    conj = residual_verdict(
        float(np.abs(lhs - rhs).max()) / scale,
        params.get("tol", _FT.RING).value(n=n, H=A0.shape[0], d=d),  # the registry's tolerance
        "max_k ‖M(−k) − conj M(k)‖ (the registry's formula)",
    )
    return all_of(growth, conj)


def t6_rotating(inst, params) -> Verdict:
    """T6.rotating: the registry's formula ``params["rotating"]`` (``(M(k) − I) z = σ_z(k) z``,
    ``z = (1, −i)``, premise ``T = ρR(θ)``) evaluated for every ``k``."""
    if inst.get("rho") is None:
        return not_applicable("no rotating-wave transport in this instance")
    A0, T = ring_instance(inst)
    rho, th = float(inst["rho"]), float(inst["theta"])
    n = A0.shape[-1]
    ident = params["rotating"]
    base = {**_ring_values(A0, T, 0), "rho": rho, "theta": th}
    gap = max((float(np.abs(pl - pr).max()) for pl, pr in _F.premise_residuals(ident, base)), default=0.0)
    if gap > 64 * EPS * max(1.0, rho):
        return not_applicable(f"premise of rotating (T = ρR(θ)) violated by the instance (gap {gap:.1e})")
    worst = 0.0
    for k in range(n):
        lhs, rhs = _F.evaluate(ident, {**base, **_ring_values(A0, T, k)})
        worst = max(worst, float(np.abs(lhs - rhs).max()))
    return residual_verdict(
        worst / max(1.0, rho),
        params.get("tol", _FT.ROW).value(n=n),
        "max_k ‖(M(k) − I)z − σ_z(k)z‖, z = (1, −i) (the registry's formula)",
    )


# ------------------------------------------------------------------------------------------------
# T5: the single-head walk and generator from the registry's formulas (theory.formulas.reversibility)
# ------------------------------------------------------------------------------------------------
def eigenspace(T: np.ndarray, value: float, rel: float | None = None) -> np.ndarray:
    """Orthonormal basis of the eigenspace of ``T`` for ``value`` (threshold ``rel``, default
    :data:`theory.formulas.tolerances.RANK`, relative to ``max(‖T‖₂, 1)``); ``Fix(T)`` of the
    formulas is ``eigenspace(T, 1)``."""
    T = np.asarray(T, float)
    rel = _FT.RANK.value() if rel is None else rel
    return null_space(T - value * np.eye(T.shape[0]), rel=rel, scale=max(float(np.linalg.norm(T, 2)), 1.0))


def defined(ident, values: dict, name: str) -> np.ndarray:
    """The value of ``name`` that the definition ``ident`` (``head = body``) states, read from both
    sides: the body tabulated over the free indices and placed in the order of the head's indices
    (``P_ji = A_ij`` defines ``P = Aᵀ``), a transposed matrix head (``Δᵀ = …``) transposed back;
    ``ValueError`` if the left side is not ``name`` itself."""
    import sympy as sp

    head = ident.lhs
    body = np.asarray(_F.tabulate(ident.rhs, ident.free, values), float)
    if isinstance(head, sp.Indexed) and head.base.label.name == name and set(head.indices) == set(ident.free):
        return np.transpose(body, [list(ident.free).index(x) for x in head.indices]).copy()
    if isinstance(head, sp.Transpose) and getattr(head.arg, "name", None) == name and not ident.free:
        return body.T.copy()
    if getattr(head, "name", None) == name and not ident.free:
        return body
    raise ValueError(f"the formula {ident.name} does not define {name}: its left side is {head}")


def sha_generator(A: np.ndarray, T: np.ndarray, params) -> np.ndarray:
    """``Δ``: the right side of the registry's formula ``params["laplacian"]`` (default
    :data:`theory.formulas.reversibility.LAPLACIAN`, ``I − A ⊗ T``) on ``A``, ``T``."""
    ident = params.get("laplacian", _FR.LAPLACIAN)
    values = {"A": A, "T": T, "n": A.shape[0], "d": T.shape[0]}
    return defined(ident, values, "Delta")


def sha_walk(inst, params) -> tuple[dict, Verdict]:
    """The connection walk of a single head: ``P``, ``O`` tabulated from the registry's formulas
    ``params["walk_p"]``, ``params["walk_o"]`` (``P = A``, ``O_ij = T``), and the verdict that its
    ``I − W`` (dense, by block loops) is the registry's ``laplacian`` (``Δ = I − A ⊗ T``)."""
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    n, d = A.shape[0], T.shape[0]
    values = {"A": A, "T": T, "n": n, "d": d}
    P, O = defined(params["walk_p"], values, "P"), defined(params["walk_o"], values, "O")
    walk = {"kind": "walk", "P": P, "O": O}
    lhs, rhs = _F.evaluate(params["laplacian"], {**values, "Delta": np.eye(n * d) - dense_walk(P, O)})
    scale = max(1.0, float(np.abs(A).sum(-1).max() * np.abs(T).sum(-1).max()))
    kron = residual_verdict(
        float(np.abs(lhs - rhs).max()) / scale,
        params.get("tol", _FT.OPERATOR).value(n=n, d=d),  # the registry's tolerance
        "I − W of the walk (P, O) vs Δ (the registry's formulas)",
    )
    return walk, kron


def same_span(U: np.ndarray, V: np.ndarray, key: str, tol: float | None = None) -> Verdict:
    """Two spaces given by bases (columns; orthonormalised here) are equal: the same dimension and
    ``‖Π_U − Π_V‖₂`` (the orthogonal projectors) within the rounding of the bases (``tol``, default
    :data:`theory.formulas.tolerances.SPAN`)."""
    tol = _FT.SPAN.value() if tol is None else tol
    U, V = np.atleast_2d(U), np.atleast_2d(V)
    if U.shape[0] != V.shape[0]:
        return Verdict(False, math.inf, 0.0, f"{key}: spaces of dimensions {U.shape[0]} and {V.shape[0]}")
    qu, qv = (np.linalg.qr(B)[0] if B.shape[1] else B for B in (U, V))
    if qu.shape[1] != qv.shape[1]:
        return Verdict(False, 1.0, 0.0, f"{key}: dimensions {qu.shape[1]} vs {qv.shape[1]}")
    gap = float(np.linalg.norm(qu @ qu.T - qv @ qv.T, 2)) if qu.size else 0.0
    return residual_verdict(gap, tol, f"{key}: equal dimension {qu.shape[1]}, ‖Π_U − Π_V‖₂ (the registry's formula)")


# ------------------------------------------------------------------------------------------------
# T4: the criterion's "if" and its affinely collinear case
# ------------------------------------------------------------------------------------------------
def t4_collinear(inst, params, t: float) -> Verdict:
    """T4.criterion, "symmetric scores are not necessary": the instance's tokens moved onto the line
    ``x_i = p + t_i v`` of the registry's ``collinear`` (``p = x_0``, ``v = (1, …, d)``, ``t_i = i / (n − 1)``)
    make the triangle's right side vanish for the instance's ``M`` (symmetric or not), and on them
    the two sides of the registry's ``converse`` agree (reversible with ``π_i = A_0i / A_i0``; its
    premise is what ``collinear`` states, so it is not re-tested against rounding here)."""
    values = _t4_values(inst, _no_mask(inst, params))
    X, n = values["X"], values["n"]
    ident = params["collinear"]
    line = {k: v for k, v in values.items() if k != "X"}
    line.update(p=X[0], v=np.arange(1.0, X.shape[1] + 1), t=np.linspace(0.0, 1.0, n))
    on_line = {**values, "X": _F.environment(ident, line)["X"]}
    converse = params["converse"]
    lhs, rhs = _F.evaluate(converse, on_line)
    return all_of(
        premised(ident, line, "collinear", t, "the triangle form on affinely collinear tokens", _score_scale(on_line)),
        residual_verdict(
            float(np.abs(lhs - rhs).max()) / _balance_scale(converse, on_line),
            t,
            "converse on affinely collinear tokens, any M (the registry's formulas)",
        ),
    )


def _score_scale(values) -> float:
    """``1 + max |S_ij|``: the rounding scale of a log-domain quantity of T4's attention."""
    return 1 + float(np.abs(_F.environment(_FS.ATTENTION, values)["S"]).max())


def _balance_scale(ident, values) -> float:
    """The rounding scale of a product ``π_i A_ij`` of T4's attention: its largest value times
    ``1 + max |S_ij|`` (the relative error of ``A`` grows with the scores)."""
    lhs, _ = _F.evaluate(ident.edited(premises=()), values)
    return max(float(np.abs(lhs).max()), 1e-300) * _score_scale(values)


def _no_mask(inst, params) -> np.ndarray:
    """The mask offsets ``μ`` of an instance: a causal one's (:func:`mask_offsets`), else the
    registry's ``no_mask`` (``μ = 0``) tabulated."""
    n = np.asarray(inst["X"]).shape[0]
    if inst.get("mask") is not None or "no_mask" not in params:
        return mask_offsets(inst, n)
    ident = params["no_mask"]
    return np.asarray(_F.tabulate(ident.rhs, ident.free, {"n": n}), float) + np.zeros((n, n))
