"""Markov / walk oracles: every hypothesis predicate, and the conclusions about attention as a walk
(T1 layout, T2 gated multi-head walks and the Kronecker criterion); T3's conclusions on the walk
are in :mod:`theory.oracles.laplacian`.

Re-exported by :mod:`theory.oracles`; imports neither torch nor numerics.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from .. import formulas as _F
from ..formulas import spectral as _FS
from ..formulas import tolerances as _FT
from ..formulas import walks as _FW
from .instances import (
    EPS,
    Verdict,
    all_of,
    exact,
    mask_offsets,
    not_applicable,
    residual_verdict,
    walk_pi,
    walk_view,
)


# ---------------------------------------------------------------------------------------------
# hypotheses
# ---------------------------------------------------------------------------------------------
def walk_values(P, O, pi=None) -> dict:
    n, d = P.shape[0], O.shape[-1]
    return {"P": P, "O": O, "pi": pi, "n": n, "d": d}


def stochastic(inst, params) -> Verdict:
    """(a), the registry's formula ``params["stochastic"]`` evaluated on the instance."""
    P, O = walk_view(inst)
    lhs, rhs = _F.evaluate(params.get("stochastic", _F.STOCHASTIC), walk_values(P, O))
    return residual_verdict(
        np.abs(lhs - rhs).max(), 64 * EPS * P.shape[0], "max |Σ_j P_ij − 1| (the registry's formula)"
    )


def reversible(inst, params) -> Verdict:
    """(b), the registry's formula ``params["balance"]`` evaluated with the instance's (or the
    stationary) ``π``; no positive ``π`` or a one-way edge is a certain failure."""
    P, O = walk_view(inst)
    pi = walk_pi(inst, P)
    n = P.shape[0]
    positive, strict = _FW.margin(params.get("positive", _FW.PI_POSITIVE), {"pi": pi, "n": n})
    floor = 1e-12 * max(pi.max(), 1e-300)  # π > 0 (the registry's relation), beyond rounding
    if (positive.min() <= floor) if strict else (positive.min() < -floor):
        return Verdict(False, math.inf, 0.0, f"no positive π (min π = {pi.min():.2e})")
    one_way = ((P > 0) & (P.T == 0)).any()
    lhs, rhs = _F.evaluate(params.get("balance", _F.BALANCE), walk_values(P, O, pi))
    r = float(np.abs(lhs - rhs).max())
    t = 1e3 * EPS * n * max(float((pi[:, None] * P).max()), 1e-300)
    v = residual_verdict(r, t, "max |π_i P_ij − π_j P_ji| (the registry's formula)")
    return Verdict(False, math.inf, t, "one-way edge") if one_way else v


def orthogonal(inst, params) -> Verdict:
    """(c1), the registry's formula ``params["orthogonal"]`` evaluated on the support of ``P``."""
    P, O = walk_view(inst)
    d = O.shape[-1]
    lhs, rhs = _F.evaluate(params.get("orthogonal", _F.ORTHOGONAL), walk_values(P, O))
    on = (P != 0)[:, :, None, None]
    r = float(np.abs(np.where(on, lhs - rhs, 0.0)).max()) if lhs.size else 0.0
    return residual_verdict(
        r, 64 * EPS * d * max(1.0, float(np.abs(O).max()) ** 2), "max ‖O_ijᵀO_ij − I‖ on the support"
    )


def transpose_compatible(inst, params) -> Verdict:
    """(c2), the registry's formula ``params["transpose"]`` evaluated on the two-way edges."""
    P, O = walk_view(inst)
    two = ((P > 0) & (P.T > 0))[:, :, None, None]
    lhs, rhs = _F.evaluate(params.get("transpose", _F.TRANSPOSE), walk_values(P, O))
    r = float(np.abs(np.where(two, lhs - rhs, 0.0)).max()) if lhs.size else 0.0
    return residual_verdict(r, 64 * EPS * max(1.0, float(np.abs(O).max())), "max ‖O_ji − O_ijᵀ‖ on two-way edges")


def orthogonal_involution(inst, params) -> Verdict:
    """T5.involution: the registry's formulas ``params["orthogonal"]`` (``TᵀT = I``) and
    ``params["symmetric"]`` (``T = Tᵀ``) evaluated on the instance's ``T``."""
    T = np.asarray(inst["T"], float)
    d = T.shape[0]
    r = 0.0
    for key, default in (("orthogonal", _FS.T_ORTHOGONAL), ("symmetric", _FS.T_SYMMETRIC)):
        lhs, rhs = _F.evaluate(params.get(key, default), {"T": T, "d": d})
        r = max(r, float(np.abs(lhs - rhs).max()))
    return residual_verdict(
        r, 64 * EPS * d * max(1.0, float(np.abs(T).max()) ** 2), "‖TᵀT − I‖, ‖T − Tᵀ‖ (the registry's formulas)"
    )


def full_support(inst, params) -> Verdict:
    A = np.asarray(inst["A"], float)
    return Verdict(bool((A > 0).all()), float((A <= 0).sum()), 0.0, "number of entries A_ij ≤ 0")


def heads_stochastic(inst, params) -> Verdict:
    """T2.heads: the registry's formula ``params["heads"]`` (rows of every head sum to 1) evaluated
    on the instance, and no negative entry."""
    As = np.asarray(inst["As"] if "As" in inst else inst["A0"], float)
    H, n, _ = As.shape
    nonneg = params.get("nonneg", _FW.WALK_NONNEG)  # every head is a walk matrix (the conventions' relation)
    neg = max(float(np.clip(-_FW.margin(nonneg, {"P": A, "n": n})[0], 0, None).max()) for A in As)
    lhs, rhs = _F.evaluate(params.get("heads", _F.HEADS_STOCHASTIC), {"A": As, "n": n, "H": H})
    r = max(float(np.abs(lhs - rhs).max()), neg)
    return residual_verdict(
        r, 64 * EPS * As.shape[-1], "max |Σ_j A^h_ij − 1| (the registry's formula), negative entries"
    )


def p_is_head_mean(inst, params) -> Verdict:
    """T2.convention: the registry's formula ``params["convention"]`` (``P = mean_h A^h``) evaluated
    with the instance's ``P`` (none given: the convention is the definition, nothing to check)."""
    As = np.asarray(inst["As"], float)
    if inst.get("P") is None:
        return residual_verdict(0.0, 0.0, "P = mean_h A^h (default)")
    H, n, _ = As.shape
    values = {"A": As, "P": np.asarray(inst["P"], float), "n": n, "H": H}
    lhs, rhs = _F.evaluate(params.get("convention", _FW.CONVENTION), values)
    return residual_verdict(
        np.abs(lhs - rhs).max(), 64 * EPS * H, "max |P_ij − mean_h A^h_ij| (the registry's formula)"
    )


def softmax_full_support(inst, params) -> Verdict:
    """T4.softmax: the attention the registry's formula ``params["attention"]`` defines on the instance
    (its mask ``μ``: ``-∞`` above the diagonal for a causal one) satisfies the registry's
    ``no_mask``, ``positive`` and ``size`` (:func:`t4_support`)."""
    X, M = np.asarray(inst["X"], float), np.asarray(inst["M"], float)
    n, d = X.shape
    mu = mask_offsets(inst, n)
    dk = float(inst["dk"]) if inst.get("dk") is not None else float(d)
    ident = params["attention"]
    env = _F.environment(ident, {"X": X, "M": M, "mu": mu, "d_k": dk, "n": n, "d": d})
    A = _F.tabulate(ident.rhs, ident.free, env)
    support = t4_support(A, mu, params, f"mask={inst.get('mask')}")
    if inst.get("W_Q") is None:  # no layer weights: M is given directly
        return support
    WQ, WK = np.asarray(inst["W_Q"], float), np.asarray(inst["W_K"], float)
    lhs, rhs = _F.evaluate(params.get("qk", _FS.QK), {"M": M, "W_Q": WQ, "W_K": WK, "d": d, "d_k": WQ.shape[0]})
    if lhs.shape != rhs.shape:
        return Verdict(False, math.inf, 0.0, f"M = W_Q^T W_K: shapes {lhs.shape} vs {rhs.shape}")
    scale = max(1.0, float(np.abs(WQ).max() * np.abs(WK).max()) * WQ.shape[0])
    notation = residual_verdict(
        float(np.abs(lhs - rhs).max()), 64 * EPS * scale, "max |M_ab − (W_Q^T W_K)_ab| (the registry's formula)"
    )
    return all_of(support, notation)


def relation_verdict(rel, values, what: str) -> Verdict:
    """A registry relation (:class:`theory.formulas.walks.Relation`) at every value of its free
    indices: holds iff its margin is positive (strict) / nonnegative everywhere; residual: the worst
    violation."""
    m, strict = _FW.margin(rel, values)
    m = np.asarray(m, float)
    ok = bool((m > 0).all() if strict else (m >= 0).all())
    return Verdict(
        ok, 0.0 if ok else float(np.max(-m, initial=0.0)) or 1.0, 0.0, f"{what}: {rel.name} (the registry's formula)"
    )


def t4_support(A: np.ndarray, mu: np.ndarray, params, what: str) -> Verdict:
    """T4.softmax's support: the registry's ``no_mask`` (``μ = 0``, exactly, on the instance's
    offsets ``mu``), ``positive`` (every ``A_ij > 0``) and ``size`` (``n ≥ 3``)."""
    n = A.shape[0]
    lhs, rhs = _F.evaluate(params["no_mask"], {"mu": mu, "n": n})
    no_mask = residual_verdict(float(np.abs(lhs - rhs).max()), 0.0, f"{what}: max |μ_ij − formula| (no_mask)")
    return all_of(
        no_mask,
        relation_verdict(params["positive"], {"A": A, "n": n}, f"{what}, min A_ij = {float(A.min()):.2e}"),
        relation_verdict(params["size"], {"n": n}, f"n = {n}"),
    )


def circulant(inst, params) -> Verdict:
    """T6.H3: the registry's formula ``params["circulant"]`` (``A0^h_ij = a_h((j − i) mod n)``)
    evaluated on the instance (exactly: both sides are entries of ``A0``)."""
    A0 = np.asarray(inst["A0"], float)
    H, n, _ = A0.shape
    lhs, rhs = _F.evaluate(params.get("circulant", _FS.CIRCULANT), {"A0": A0, "n": n, "H": H})
    return residual_verdict(
        float(np.abs(lhs - rhs).max()), 0.0, "max |A0_ij − a((j−i) mod n)| (the registry's formula)"
    )


def t1_transport_layout(inst, params) -> Verdict:
    """T1.transport: the registry's formula ``params["layout"]`` (``T = W_O W_V``) evaluated on the
    instance's layer weights."""
    if "W_O" not in inst:
        return not_applicable("no layer weights")
    T, WO, WV = (np.asarray(inst[k], float) for k in ("T", "W_O", "W_V"))
    sizes = {"d": T.shape[0], "d_h": WV.shape[0]}  # nn.Linear weights (out × in): the conventions' shapes
    wrong = [
        w
        for key, sh, v in (("W_V", _FW.SHAPE_W_V, WV), ("W_O", _FW.SHAPE_W_O, WO))
        if (w := params.get(key, sh).mismatch(v, sizes))
    ]
    if wrong:
        return Verdict(False, math.inf, 0.0, "; ".join(wrong))
    lhs, rhs = _F.evaluate(params.get("layout", _FW.LAYOUT), {"T": T, "W_O": WO, "W_V": WV})
    if lhs.shape != rhs.shape:
        return Verdict(False, math.inf, 0.0, f"layout: shapes {lhs.shape} vs {rhs.shape}")
    return residual_verdict(
        np.abs(lhs - rhs).max(),
        64 * EPS * WV.shape[0] * max(1.0, float(np.abs(WO).max() * np.abs(WV).max())),
        "‖T − W_O W_V‖ (the registry's formula)",
    )


def t1_same_input(inst, params) -> Verdict:
    """T1.factorisation: the registry's formula ``params["softmax"]`` (softmax attention of the
    scores ``X M Xᵀ / √d``, no mask) evaluated at the instance's input ``X``: the walk's ``A`` must be
    the attention at the input it multiplies. Not applicable without the score matrix ``M``."""
    if inst.get("M") is None or inst.get("A") is None:
        return not_applicable("no score matrix M")
    A, X, M = (np.asarray(inst[k], float) for k in ("A", "X", "M"))
    n, d = X.shape
    sizes = {"n": n, "d": d}
    dk, no_mask = params.get("dk", _FW.DK_IS_D), params.get("no_mask", _FW.NO_MASK)
    mu = _FW.broadcast(no_mask.rhs, no_mask.free, sizes)  # the hypothesis' d_k and mask, evaluated
    values = {"X": X, "M": M, **sizes, "d_k": float(_F.tabulate(dk.rhs, (), sizes)), "mu": mu}
    with np.errstate(over="ignore", invalid="ignore"):
        lhs, rhs = _F.evaluate(params.get("softmax", _FW.SOFTMAX), {**values, "A": A})
    return residual_verdict(
        float(np.nan_to_num(np.abs(lhs - rhs), nan=np.inf).max()),
        64 * EPS * n * d,
        "max |A_ij − softmax_j(S(X))_ij| (the registry's formula)",
    )


# ---------------------------------------------------------------------------------------------
# conclusions
# ---------------------------------------------------------------------------------------------
def stack(X: np.ndarray, stacking: str) -> np.ndarray:
    if stacking == "token-major":  # vec(Xᵀ): the conventions' STACK_ENTRY, entry i·d + a is X_ia
        entry = _FW.STACK_ENTRY
        x = np.empty(X.size)
        x[_FW.broadcast(entry.lhs.indices[0], entry.free, {"n": X.shape[0], "d": X.shape[1]})] = X
        return x
    if stacking == "feature-major":
        return X.T.reshape(-1)  # vec(X): feature k occupies entries k·n … (k+1)·n − 1
    raise ValueError(f"stacking: unknown convention {stacking!r}")


def t1_walk(inst, params) -> Verdict:
    """T1's formulas (``params["sha"]``, ``params["stacked"]``: SymPy expressions of the registry)
    evaluated on the instance: ``Y`` is SHA's literal output."""
    A, T, X = (np.asarray(inst[k], float) for k in ("A", "T", "X"))
    Y = np.asarray(inst["Y"], float) if inst.get("Y") is not None else A @ X @ T.T
    values = {"A": A, "T": T, "X": X, "Y": Y}
    sizes = {"n": A.shape[0], "d": T.shape[0]}  # the tokens are the rows of X (the conventions' shapes)
    token = params.get("x_i", _FW.SHAPE_TOKEN)
    wrong = [w for w in (params.get("X", _FW.SHAPE_X).mismatch(X, sizes), *(token.mismatch(x, sizes) for x in X)) if w]
    if wrong:
        return Verdict(False, math.inf, 0.0, "; ".join(wrong))
    scale = max(1.0, float(np.abs(A).sum(-1).max() * np.abs(T).sum(-1).max() * np.abs(X).max()))
    tol = params.get("tol", _FT.OPERATOR).value(n=A.shape[0], d=T.shape[0])  # the registry's tolerance
    parts = []
    for key in ("sha", "stacked"):
        ident = params.get(key, getattr(_F, {"sha": "SHA", "stacked": "SHA_STACKED"}[key]))
        lhs, rhs = _F.evaluate(ident, values)
        if lhs.shape != rhs.shape:
            return Verdict(False, math.inf, tol, f"{key}: shapes {lhs.shape} vs {rhs.shape}")
        parts.append(residual_verdict(np.abs(lhs - rhs).max() / scale, tol, f"{key}: ‖lhs − rhs‖ / scale"))
    block = params.get("block")
    if block is not None:  # the blocks of the operator the stacked formula states: the walk P = A, O_ij = T
        stacked = params.get("stacked", _F.SHA_STACKED)
        op = stacked.rhs.args[0] if isinstance(stacked.rhs, sp.MatMul) else stacked.rhs
        K = np.asarray(_F.tabulate(op, (), values), float)
        n, d = A.shape[0], T.shape[0]
        lhs, rhs = _F.evaluate(block, {**values, "K": K, "n": n, "d": d})
        parts.append(
            residual_verdict(np.abs(lhs - rhs).max() / scale, tol, "block (i, j) = P_ij O_ij with P = A, O_ij = T")
        )
    return all_of(*parts)


def multiset_distance(got: np.ndarray, want: np.ndarray) -> float:
    """Greedy multiset distance: each wanted value takes the nearest unused computed one."""
    if got.size != want.size:
        return math.inf
    used = np.zeros(got.size, bool)
    worst = 0.0
    for w in want:
        dist = np.where(used, np.inf, np.abs(got - w))
        k = int(np.argmin(dist))
        used[k] = True
        worst = max(worst, float(dist[k]))
    return worst


def kron_spectrum(inst, params) -> Verdict:
    """The eigenvalues of ``params["kron"]`` (``A ⊗ T``) against the registry's formula ``params["spectrum"]`` (``λ_i μ_a``
    tabulated over the eigenvalues of ``A``, ``T``), as multisets."""
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    kron = params.get("kron", _FW.KRON_AT)  # the operator the statement names, evaluated
    got = np.linalg.eigvals(np.asarray(_F.tabulate(kron.expr, (), {"A": A, "T": T}), float))
    values = {"lambda": np.linalg.eigvals(A), "mu": np.linalg.eigvals(T), "n": A.shape[0], "d": T.shape[0]}
    spectrum = params.get("spectrum", _FW.KRON_EIGENVALUES)
    want = np.asarray(_F.tabulate(spectrum.rhs, spectrum.free, values), complex).reshape(-1)
    tol = params.get("tol", _FT.KRON_SPECTRUM).value({"A": A, "T": T})  # the registry's tolerance
    return residual_verdict(multiset_distance(got, want), tol, "multiset distance spec(A⊗T) vs {λ_i μ_k}")


def heads_B(As: np.ndarray, Ts: np.ndarray) -> np.ndarray:
    """``B`` (n, n, d, d), ``B_ij = Σ_h A^h_ij T_h``: the registry's definition (T2's formulas)."""
    H, n, _ = As.shape
    values = {"A": As, "T": Ts, "n": n, "d": Ts.shape[-1], "H": H}
    hd, body = _FW._B_DEF
    return np.asarray(_F.tabulate(body, hd.indices, values), float)


def _heads_values(As: np.ndarray, Ts: np.ndarray, **extra) -> dict:
    return {"A": As, "T": Ts, "n": As.shape[1], "d": Ts.shape[-1], "H": As.shape[0], **extra}


def off_support(As: np.ndarray, params) -> np.ndarray:
    """Where every head vanishes (T2's note ``params["off_support"]``, evaluated exactly): there the gates are 0/0."""
    ident = params.get("off_support", _FW.OFF_SUPPORT)
    lhs, rhs = _F.evaluate(ident, {"A": As, "n": As.shape[1], "H": As.shape[0]})
    return np.asarray(lhs == rhs)


def t2_gated_walk(inst, params) -> Verdict:
    """T2's formulas (``params["rows"]``, ``["gates"]``, ``["blocks"]``: SymPy expressions of the
    registry, with their definitions of ``P``, ``g``, ``O``, ``B``) evaluated on the instance; an
    instance ``P`` (another gauge) replaces the definition ``P = mean_h A^h``. Off support (every
    ``A^h_ij = 0``) the gates are ``0/0``: there ``P_ij = 0`` and the block must vanish."""
    As, Ts = np.asarray(inst["As"], float), np.asarray(inst["Ts"], float)
    H, n, _ = As.shape
    values = {"A": As, "T": Ts, "P": inst.get("P"), "n": n, "d": Ts.shape[-1], "H": H}
    scale = max(1.0, float(np.abs(Ts).max()) * H)
    t = params.get("tol", _FT.HEADS).value(n=n, H=H)  # the registry's tolerance
    off = off_support(As, params)
    parts = []
    rows = params.get("rows", _F.T2_ROWS)
    lhs, rhs = _F.evaluate(rows, values)
    parts.append(residual_verdict(float(np.abs(lhs - rhs).max()), t, "rows: P row sums (the registry's formula)"))
    gates = params.get("gates", _F.T2_GATES)
    with np.errstate(invalid="ignore", divide="ignore"):
        lhs, rhs = _F.evaluate(gates, values)
        g = _F.environment(gates, values)["g"]
    if (~off).any():
        neg = float(np.clip(-g[:, ~off], 0, None).max())
        parts.append(
            residual_verdict(max(float(np.abs(lhs - rhs)[~off].max()), neg), t, "gates convex (the registry's formula)")
        )
    blocks = params.get("blocks", _F.T2_BLOCKS)
    with np.errstate(invalid="ignore", divide="ignore"):
        lhs, rhs = _F.evaluate(blocks, values)
    lhs = np.where(off[:, :, None, None], 0.0, lhs)  # off support P_ij = 0, O_ij arbitrary
    parts.append(
        residual_verdict(float(np.abs(lhs - rhs).max()) / scale, t, "P_ij O_ij = B_ij (the registry's formula)")
    )
    return all_of(*parts)


def rearranged_blocks(B: np.ndarray) -> np.ndarray:
    n = B.shape[0]
    return np.stack([B[i, j].reshape(-1) for i in range(n) for j in range(n)])  # rows vec(B_ij)


def kronecker_constant(B: np.ndarray, tolerance=None) -> tuple[bool, float]:
    """``(constant, miss)``: is ``B = P ⊗ T`` with ``P ≥ 0`` (Van Loan rearrangement: the
    nearest-Kronecker miss and the leading factor's negative part within ``tolerance``, default
    :data:`theory.formulas.tolerances.KRONECKER`, evaluated on ``B``)?"""
    U, s, Vh = np.linalg.svd(rearranged_blocks(B), full_matrices=False)
    miss = float(np.sqrt((s[1:] ** 2).sum()))
    thr = (tolerance or _FT.KRONECKER).value({"B": B})
    p = U[:, 0] * s[0]
    p = p if p.sum() >= 0 else -p
    return bool(miss <= thr and float(p.min()) >= -thr), miss


def _independent(Ts: np.ndarray) -> bool | None:
    """Are the ``T_h`` linearly independent? ``None`` when the singular values do not decide it."""
    sv = np.linalg.svd(Ts.reshape(Ts.shape[0], -1), compute_uv=False)
    top = max(float(sv[0]), 1e-300)
    if sv.size < Ts.shape[0] or float(sv[-1]) < 1e-12 * top:
        return False
    return True if float(sv[-1]) > 1e-6 * top else None


def t2_constant_criterion(inst, params) -> Verdict:
    """T2.constant: the nearest-Kronecker test (Van Loan) against the registry's criterion
    (``params["constant"]``: ``B_ij = c_ij T_Σ``, ``params["nonneg"]``: ``c_ij ≥ 0``) and, for
    linearly independent ``T_h``, against ``params["equal_heads"]`` (``A^h = A^1``)."""
    As, Ts = np.asarray(inst["As"], float), np.asarray(inst["Ts"], float)
    values = _heads_values(As, Ts)
    constant = params.get("constant", _FW.CONSTANT)
    with np.errstate(invalid="ignore", divide="ignore"):
        lhs, rhs = _F.evaluate(constant, values)
        coeff, _ = _FW.margin(params.get("nonneg", _FW.CONSTANT_NONNEG), _F.environment(constant, values))
    B = np.asarray(lhs, float)
    rhs = np.nan_to_num(rhs, nan=0.0)  # c = 0/0 only where T_Σ = 0, and then c·T_Σ = 0 for every c
    thr = params.get("tol", _FT.KRONECKER).value({"B": B})  # the registry's tolerance
    kron_const, miss = kronecker_constant(B, params.get("tol"))
    worst = float(np.sqrt(((lhs - rhs) ** 2).sum((-1, -2))).max())
    cmin = float(np.nan_to_num(coeff, nan=0.0).min())
    crit = worst <= thr and cmin >= -thr
    detail = f"nearest-Kronecker miss {miss:.2e} (constant: {kron_const}); multiples of T_Σ: {crit}"
    parts = [Verdict(kron_const == crit, 0.0 if kron_const == crit else 1.0, 0.0, detail)]
    if _independent(Ts):
        el, er = _F.evaluate(params.get("equal_heads", _FW.EQUAL_HEADS), values)
        equal = float(np.abs(el - er).max()) <= params.get("tol_heads", _FT.EQUAL_HEADS).value({"A": As})
        ok = kron_const == equal
        parts.append(Verdict(ok, 0.0 if ok else 1.0, 0.0, f"independent T_h: heads equal {equal}"))
    return all_of(*parts)


def t2_gauge(inst, params) -> Verdict:
    """T2.gauge: the registry's formula ``params["gauge"]`` (``P'_ij O'_ij = B_ij`` with
    ``O'_ij = B_ij / P'_ij``, ``P'`` row-stochastic) evaluated for each gauge ``P'`` whose premises
    hold: ``params["support"]`` (``B_ij ≠ 0 ⇒ P'_ij > 0``) and the row sums. The gauges: the
    instance's ``Pg`` if any, the positive ``(P + 1/n) / 2`` and ``P`` with column 0 removed (rows
    renormalised: it vanishes on blocks ``B_i0 ≠ 0``, outside the premise), ``P`` the head mean."""
    As, Ts = np.asarray(inst["As"], float), np.asarray(inst["Ts"], float)
    ts = float(np.abs(Ts).max())
    if ts > 0:
        # the statement is linear in T: judged at unit scale (an exact power-of-two rescaling), so that
        # no product of a tiny transport (e.g. 1e-259) underflows in the support premise B_ij ≠ 0
        Ts = Ts * 2.0 ** -math.floor(math.log2(ts))
    n = As.shape[1]
    P = As.mean(0)
    cut = P.copy()
    cut[:, 0] = 0.0
    sums = cut.sum(-1, keepdims=True)
    gauges = [0.5 * (P + 1.0 / n)] + ([cut / sums] if n > 1 and (sums > 0).all() else [])
    if inst.get("Pg") is not None:
        gauges.insert(0, np.asarray(inst["Pg"], float))
    B = heads_B(As, Ts)
    on = np.abs(B).max((-1, -2)) > 0
    ident = params.get("gauge", _FW.GAUGE)
    t = params.get("tol", _FT.HEADS).value(n=n, H=As.shape[0])  # the registry's tolerance
    scale = max(1.0, float(np.abs(B).max()))
    parts = []
    for Pg in gauges:
        values = _heads_values(As, Ts, Pg=Pg)
        sup, strict = _FW.margin(params.get("support", _FW.GAUGE_SUPPORT), values)
        if ((sup <= 0) if strict else (sup < 0)).any():
            continue  # outside the premise (the relation's own condition): P' vanishes on a block B_ij ≠ 0
        with np.errstate(invalid="ignore", divide="ignore"):  # O' = B / P' is 0/0 where both vanish
            rows = [float(np.abs(lp - rp).max()) for lp, rp in _F.premise_residuals(ident, values)]
            lhs, rhs = _F.evaluate(ident, values)
        if rows and max(rows) > t:
            continue  # P' not row-stochastic
        res = np.where(on[:, :, None, None], np.nan_to_num(lhs - rhs, nan=np.inf), 0.0)
        parts.append(
            residual_verdict(float(np.abs(res).max()) / scale, t, "P'_ij O'_ij = B_ij (the registry's formula)")
        )
    return all_of(*parts) if parts else not_applicable("no gauge within the premises")


def t2_special(inst, params) -> Verdict:
    """T2.special: each of the registry's formulas ``params["shared_A"]`` (``O_ij = T_Σ``),
    ``["shared_T"]`` (``O_ij = H T_1``), ``["cancelling"]`` (``B = 0``) evaluated on the instance
    where its premises (shared attention / shared transport / two cancelling heads) hold on it;
    not applicable where none does. Off support (every ``A^h_ij = 0``) ``O_ij`` is arbitrary."""
    As, Ts = np.asarray(inst["As"], float), np.asarray(inst["Ts"], float)
    values = _heads_values(As, Ts)
    off = off_support(As, params)
    t = params.get("tol", _FT.HEADS).value(n=As.shape[1], H=As.shape[0])  # the registry's tolerance
    scale = max(1.0, float(np.abs(Ts).max()) * As.shape[0])
    parts = []
    for key, dflt in (("shared_A", _FW.SHARED_A), ("shared_T", _FW.SHARED_T), ("cancelling", _FW.CANCELLING)):
        ident = params.get(key, dflt)
        try:  # a premise's gate A^h_ij / Σ_l A^l_ij is 0/0 off support, where it is no condition: read as met
            with np.errstate(invalid="ignore", divide="ignore"):
                prem = [
                    float(np.max(np.abs(np.nan_to_num(lp - rp, nan=0.0)), initial=0.0))
                    for lp, rp in _F.premise_residuals(ident, values)
                ]
        except IndexError:  # a premise names a head the instance does not have (H = 1)
            continue
        if any(r > t * scale for r in prem):
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            lhs, rhs = _F.evaluate(ident, values)
        res = np.where(off[:, :, None, None], 0.0, np.nan_to_num(lhs - rhs, nan=np.inf))
        parts.append(residual_verdict(float(np.abs(res).max()) / scale, t, f"{key} (the registry's formula)"))
    return all_of(*parts) if parts else not_applicable("no shared attention, shared transport or cancelling heads")


def t2_counterexample(inst, params) -> Verdict:
    """Instance-free: the registered numbers of T2's counterexample, recomputed from its data."""
    import mpmath
    import sympy

    A1, A2, T1, T2 = (exact(params[k]) for k in ("A1", "A2", "T1", "T2"))
    B = [
        [[[A1[i][j] * T1[a][b] + A2[i][j] * T2[a][b] for b in range(2)] for a in range(2)] for j in range(2)]
        for i in range(2)
    ]
    stated = [B[0][0] == exact(params["B11"]), B[0][1] == exact(params["B12"])]
    v1 = [x for r in B[0][0] for x in r]
    v2 = [x for r in B[0][1] for x in r]
    rank2 = any(v1[a] * v2[b] - v1[b] * v2[a] != 0 for a in range(4) for b in range(a + 1, 4))
    with mpmath.workdps(40):
        R = mpmath.matrix(
            [[mpmath.mpf(x.numerator) / x.denominator for r in B[i][j] for x in r] for i in range(2) for j in range(2)]
        )
        s = mpmath.svd_r(R, compute_uv=False)
        sv = sorted((s[k] for k in range(len(s))), reverse=True)
        miss = mpmath.sqrt(sum(x**2 for x in sv[1:]))
        closed = mpmath.mpf(str(sympy.N(sympy.sympify(params["miss_exact"]), 45)))
        exact_res = float(abs(miss - closed))
    rounded_res = abs(float(miss) - float(params["miss"]))
    half_ulp = 0.5 * 10.0 ** (-int(params["digits"]))
    detail = f"miss = {mpmath.nstr(miss, 15)}; stated {params['miss']} ({params['digits']} decimals), exact {params['miss_exact']}"
    return all_of(
        Verdict(all(stated), 0.0 if all(stated) else 1.0, 0.0, "stated B_11, B_12"),
        Verdict(rank2, 0.0 if rank2 else 1.0, 0.0, "B_11, B_12 linearly independent"),
        residual_verdict(exact_res, params.get("tol", _FT.EXACT).value(), detail),
        residual_verdict(rounded_res, half_ulp, "rounded value"),
    )
