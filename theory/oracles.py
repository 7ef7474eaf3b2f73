"""Independent oracles: every registered hypothesis and conclusion as an executable predicate.

Each predicate is the *literal definition* of its statement, evaluated in dense float64 (numpy,
explicit block loops), in exact ``Fraction`` arithmetic or with mpmath at 40 digits — never with
the :mod:`numerics` code a theorem is about (this module imports neither torch nor numerics, and a
test enforces it). The property tests, the necessity searches and the statement mutants of
``tests/theory/test_gate.py`` all judge with these functions, reading the numbers of a statement
from its ``params`` (:mod:`theory.registry`).

An *instance* is a dict of float64 arrays; :func:`build` turns the exact data of a registered
witness (``{"kind": ..., ...}`` with ints and ``"p/q"`` strings) into one. Keys by kind:

* ``walk``: ``P`` (n, n), ``O`` (n, n, d, d), optional ``pi`` (n,), ``R`` (n, d, d) for a flat
  connection ``O_ij = R_i R_jᵀ``, ``s`` for the scaled variant ``s·O``;
* ``sha``: ``A`` (n, n), ``T`` (d, d) — the walk ``P = A``, ``O_ij = T``;
* ``sha_layers`` / ``sha_reuse`` (T1): ``A``, ``T``, ``X``, ``Y`` with ``Y`` computed literally;
* ``mha``: ``As`` (H, n, n), ``Ts`` (H, d, d), optional ``P``;
* ``softmax``: ``X`` (n, d), ``M`` (d, d), optional ``mask`` ("causal"), ``dk``, ``beta`` (n,);
* ``ring``: ``A0`` (H, n, n), ``T`` (H, d, d), optional ``rho``, ``theta`` (rotating wave).

Every predicate returns a :class:`Verdict` (``holds``, ``residual``, ``tol``, ``detail``,
``applicable``: False when the instance is outside the statement's premise, e.g. no flat
connection drawn — then ``holds`` is True and nothing was tested).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Verdict:
    holds: bool
    residual: float
    tol: float
    detail: str = ""
    applicable: bool = True

    def __bool__(self) -> bool:
        return self.holds


def _v(residual: float, tol: float, detail: str = "") -> Verdict:
    r = float(residual)
    return Verdict(bool(r <= tol), r, float(tol), detail)


def _na(detail: str) -> Verdict:
    return Verdict(True, 0.0, 0.0, detail, applicable=False)


def _all(*vs: Verdict) -> Verdict:
    """Conjunction: holds iff all hold; residual/tol of the worst (largest residual/tol) part."""
    vs = [v for v in vs if v.applicable]  # type: ignore[assignment]
    if not vs:
        return _na("no part applicable")
    worst = max(vs, key=lambda v: (not v.holds, v.residual / v.tol if v.tol > 0 else math.inf))
    return Verdict(all(v.holds for v in vs), worst.residual, worst.tol, "; ".join(v.detail for v in vs if v.detail))


# ---------------------------------------------------------------------------------------------
# exact data -> float64 instances
# ---------------------------------------------------------------------------------------------
def q(v) -> Fraction:
    """int / ``"p/q"`` string / Fraction -> Fraction (floats are refused: witnesses are exact)."""
    if isinstance(v, bool):
        raise TypeError(f"not an exact number: {v!r}")
    if isinstance(v, (int, Fraction)):
        return Fraction(v)
    if isinstance(v, str):
        return Fraction(v)
    raise TypeError(f"not an exact number: {v!r}")


def exact(a) -> Any:
    """Nested lists of exact numbers -> nested lists of Fractions."""
    if isinstance(a, (list, tuple)):
        return [exact(x) for x in a]
    return q(a)


def arr(a) -> np.ndarray:
    """Nested exact data (or floats / arrays) -> float64 array."""
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)

    def conv(x):
        if isinstance(x, (list, tuple)):
            return [conv(y) for y in x]
        if isinstance(x, float):
            return x
        return float(q(x))

    return np.asarray(conv(a), dtype=np.float64)


def softmax_rows(S: np.ndarray) -> np.ndarray:
    """Row softmax by its definition (max-shifted exponentials over their row sum); ``-inf`` masks."""
    S = S - S.max(-1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(-1, keepdims=True)


def causal_scores(S: np.ndarray) -> np.ndarray:
    n = S.shape[-1]
    return np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, S)


def build(instance: Mapping[str, Any]) -> dict:
    """Float64 instance from a witness's exact data (see the module docstring for the kinds)."""
    kind = instance["kind"]
    out: dict[str, Any] = {"kind": kind}
    if kind == "walk":
        out["P"], out["O"] = arr(instance["P"]), arr(instance["O"])
        if "pi" in instance:
            out["pi"] = arr(instance["pi"])
    elif kind == "sha":
        out["A"], out["T"] = arr(instance["A"]), arr(instance["T"])
    elif kind == "sha_layers":
        A, X, WV, WO = (arr(instance[k]) for k in ("A", "X", "W_V", "W_O"))
        out.update(A=A, X=X, W_V=WV, W_O=WO)
        out["T"] = WO @ WV if instance.get("layout", "column") == "column" else (WO @ WV).T
        out["Y"] = A @ (X @ WV.T) @ WO.T  # nn.Linear: V = X W_Vᵀ, Y = A V W_Oᵀ
    elif kind == "sha_reuse":
        X0, X1, M, T = (arr(instance[k]) for k in ("X0", "X1", "M", "T"))
        d = X0.shape[1]
        out["A"] = softmax_rows(X0 @ M @ X0.T / math.sqrt(d))  # frozen at X0
        out.update(T=T, X=X1)
        out["Y"] = softmax_rows(X1 @ M @ X1.T / math.sqrt(d)) @ X1 @ T.T  # SHA(X1), attention at X1
    elif kind == "mha":
        out["As"], out["Ts"] = arr(instance["As"]), arr(instance["Ts"])
        if "P" in instance:
            out["P"] = arr(instance["P"])
    elif kind == "softmax":
        out["X"], out["M"] = arr(instance["X"]), arr(instance["M"])
        out["mask"] = instance.get("mask")
        for k in ("dk", "beta"):
            if k in instance:
                out[k] = arr(instance[k])
    elif kind == "ring":
        out["A0"], out["T"] = arr(instance["A0"]), arr(instance["T"])
    else:
        raise ValueError(f"instance: unknown kind {kind!r}")
    return out


# ---------------------------------------------------------------------------------------------
# walks: literal dense definitions
# ---------------------------------------------------------------------------------------------
def walk_view(inst: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """``(P, O)`` of a walk instance; a single head ``(A, T)`` is the walk ``P = A``, ``O_ij = T``."""
    if "P" in inst and "O" in inst:
        return np.asarray(inst["P"], float), np.asarray(inst["O"], float)
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    n = A.shape[0]
    return A, np.broadcast_to(T, (n, n, *T.shape)).copy()


def dense_walk(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    """``W`` with block ``(i, j) = P_ij O_ij`` (token-major), by explicit block loops."""
    n, d = P.shape[0], O.shape[-1]
    W = np.zeros((n * d, n * d))
    for i in range(n):
        for j in range(n):
            W[i * d : (i + 1) * d, j * d : (j + 1) * d] = P[i, j] * O[i, j]
    return W


def stationary(P: np.ndarray) -> np.ndarray:
    """A solution of ``π P = π``, ``Σ π = 1`` (least squares on the stacked system)."""
    n = P.shape[0]
    M = np.vstack([P.T - np.eye(n), np.ones((1, n))])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    return np.linalg.lstsq(M, rhs, rcond=None)[0]


def walk_pi(inst: Mapping, P: np.ndarray) -> np.ndarray:
    return np.asarray(inst["pi"], float) if inst.get("pi") is not None else stationary(P)


def null_space(M: np.ndarray, rel: float = 1e-9, scale: float | None = None) -> np.ndarray:
    """Orthonormal basis (columns) of the numerical null space of ``M``: singular values
    ``≤ rel·scale`` count as zero (``scale`` defaults to ``max(σ_max, 1)``)."""
    if M.size == 0:
        return np.eye(M.shape[1])
    _, s, Vh = np.linalg.svd(M)
    smax = scale if scale is not None else max(float(s[0]) if s.size else 0.0, 1.0)
    rank = int((s > rel * smax).sum())
    return Vh[rank:].T.conj()


def _probes(nd: int, k: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((k, nd))


def _pi_inner(x, y, pi, d):
    return float(sum(pi[i] * x[i * d : (i + 1) * d] @ y[i * d : (i + 1) * d] for i in range(len(pi))))


def _dirichlet(P, O, pi, x, d):
    n = P.shape[0]
    tot, mag = 0.0, 0.0
    for i in range(n):
        for j in range(n):
            if P[i, j] == 0:
                continue
            r = x[i * d : (i + 1) * d] - O[i, j] @ x[j * d : (j + 1) * d]
            tot += pi[i] * P[i, j] * (r @ r)
            mag += (
                pi[i]
                * P[i, j]
                * (
                    x[i * d : (i + 1) * d] @ x[i * d : (i + 1) * d]
                    + (O[i, j] @ x[j * d : (j + 1) * d]) ** 2 @ np.ones(d)
                )
            )
    return tot / 2, mag


def _spectrum_in(ev: np.ndarray, lo: float, hi: float, W: np.ndarray) -> Verdict:
    nd = max(W.shape[0], 1)
    t = 1e-9 * nd * max(1.0, float(np.linalg.norm(W, 2)) if W.size else 1.0)
    im = float(np.abs(ev.imag).max()) if ev.size else 0.0
    out = float(np.clip(np.maximum(lo - ev.real, ev.real - hi), 0, None).max()) if ev.size else 0.0
    return _v(max(im, out), t, f"spec in [{lo:g}, {hi:g}]: max |Im| {im:.2e}, outside by {out:.2e}")


# ---------------------------------------------------------------------------------------------
# hypotheses
# ---------------------------------------------------------------------------------------------
def stochastic(inst, params) -> Verdict:
    P, _ = walk_view(inst)
    return _v(np.abs(P.sum(-1) - 1).max(), 64 * EPS * P.shape[0], "max |Σ_j P_ij − 1|")


def reversible(inst, params) -> Verdict:
    P, _ = walk_view(inst)
    pi = walk_pi(inst, P)
    n = P.shape[0]
    if pi.min() <= 1e-12 * max(pi.max(), 1e-300):
        return Verdict(False, math.inf, 0.0, f"no positive π (min π = {pi.min():.2e})")
    one_way = ((P > 0) & (P.T == 0)).any()
    F = pi[:, None] * P
    r = float(np.abs(F - F.T).max())
    t = 1e3 * EPS * n * max(float(F.max()), 1e-300)
    v = _v(r, t, "max |π_i P_ij − π_j P_ji|")
    return Verdict(False, math.inf, t, "one-way edge") if one_way else v


def orthogonal(inst, params) -> Verdict:
    P, O = walk_view(inst)
    d = O.shape[-1]
    r = max((float(np.abs(O[i, j].T @ O[i, j] - np.eye(d)).max()) for i, j in zip(*np.nonzero(P))), default=0.0)
    return _v(r, 64 * EPS * d * max(1.0, float(np.abs(O).max()) ** 2), "max ‖O_ijᵀO_ij − I‖ on the support")


def transpose_compatible(inst, params) -> Verdict:
    P, O = walk_view(inst)
    two = (P > 0) & (P.T > 0)
    r = max((float(np.abs(O[j, i] - O[i, j].T).max()) for i, j in zip(*np.nonzero(two))), default=0.0)
    return _v(r, 64 * EPS * max(1.0, float(np.abs(O).max())), "max ‖O_ji − O_ijᵀ‖ on two-way edges")


def orthogonal_involution(inst, params) -> Verdict:
    T = np.asarray(inst["T"], float)
    d = T.shape[0]
    r = max(float(np.abs(T.T @ T - np.eye(d)).max()), float(np.abs(T - T.T).max()))
    return _v(r, 64 * EPS * d * max(1.0, float(np.abs(T).max()) ** 2), "‖TᵀT − I‖, ‖T − Tᵀ‖")


def full_support(inst, params) -> Verdict:
    A = np.asarray(inst["A"], float)
    return Verdict(bool((A > 0).all()), float((A <= 0).sum()), 0.0, "number of entries A_ij ≤ 0")


def heads_stochastic(inst, params) -> Verdict:
    As = np.asarray(inst["As"] if "As" in inst else inst["A0"], float)
    neg = float(np.clip(-As, 0, None).max())
    r = max(float(np.abs(As.sum(-1) - 1).max()), neg)
    return _v(r, 64 * EPS * As.shape[-1], "max |Σ_j A^h_ij − 1|, negative entries")


def p_is_head_mean(inst, params) -> Verdict:
    As = np.asarray(inst["As"], float)
    if inst.get("P") is None:
        return _v(0.0, 0.0, "P = mean_h A^h (default)")
    return _v(np.abs(np.asarray(inst["P"], float) - As.mean(0)).max(), 64 * EPS, "‖P − mean_h A^h‖")


def softmax_full_support(inst, params) -> Verdict:
    n = np.asarray(inst["X"]).shape[0]
    ok = inst.get("mask") is None and n >= 3
    return Verdict(ok, 0.0 if ok else 1.0, 0.0, f"mask={inst.get('mask')}, n={n}")


def circulant(inst, params) -> Verdict:
    A0 = np.asarray(inst["A0"], float)
    n = A0.shape[-1]
    idx = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    r = float(np.abs(A0 - A0[:, 0, :][:, idx]).max())
    return _v(r, 0.0, "max |A0_ij − a((j−i) mod n)|")


def t1_transport_layout(inst, params) -> Verdict:
    if "W_O" not in inst:
        return _na("no layer weights")
    T, WO, WV = (np.asarray(inst[k], float) for k in ("T", "W_O", "W_V"))
    return _v(
        np.abs(T - WO @ WV).max(),
        64 * EPS * WV.shape[0] * max(1.0, float(np.abs(WO).max() * np.abs(WV).max())),
        "‖T − W_O W_V‖",
    )


# ---------------------------------------------------------------------------------------------
# conclusions
# ---------------------------------------------------------------------------------------------
def stack(X: np.ndarray, stacking: str) -> np.ndarray:
    if stacking == "token-major":
        return X.reshape(-1)  # vec(Xᵀ): token i occupies entries i·d … (i+1)·d − 1
    if stacking == "feature-major":
        return X.T.reshape(-1)  # vec(X): feature k occupies entries k·n … (k+1)·n − 1
    raise ValueError(f"stacking: unknown convention {stacking!r}")


def t1_walk(inst, params) -> Verdict:
    A, T, X = (np.asarray(inst[k], float) for k in ("A", "T", "X"))
    Y = np.asarray(inst["Y"], float) if inst.get("Y") is not None else A @ X @ T.T
    s = params["stacking"]
    lhs = stack(Y, s)
    rhs = np.kron(A, T) @ stack(X, s)
    scale = max(1.0, float(np.abs(A).sum(-1).max() * np.abs(T).sum(-1).max() * np.abs(X).max()))
    return _v(np.abs(lhs - rhs).max() / scale, 64 * EPS * A.shape[0] * T.shape[0], f"‖stack(Y) − (A⊗T) stack(X)‖ ({s})")


def _match(got: np.ndarray, want: np.ndarray) -> float:
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
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    got = np.linalg.eigvals(np.kron(A, T))
    want = np.array([la * mu for la in np.linalg.eigvals(A) for mu in np.linalg.eigvals(T)])
    scale = max(1.0, float(np.linalg.norm(A, 2) * np.linalg.norm(T, 2)))
    return _v(_match(got, want) / scale, 1e-6, "multiset distance spec(A⊗T) vs {λ_i μ_k}")


def heads_B(As: np.ndarray, Ts: np.ndarray) -> np.ndarray:
    """``B`` (n, n, d, d), ``B_ij = Σ_h A^h_ij T_h``, by loops."""
    H, n, _ = As.shape
    d = Ts.shape[-1]
    B = np.zeros((n, n, d, d))
    for h in range(H):
        for i in range(n):
            for j in range(n):
                B[i, j] += As[h, i, j] * Ts[h]
    return B


def t2_gated_walk(inst, params) -> Verdict:
    As, Ts = np.asarray(inst["As"], float), np.asarray(inst["Ts"], float)
    H, n, _ = As.shape
    P = np.asarray(inst["P"], float) if inst.get("P") is not None else As.mean(0)
    B = heads_B(As, Ts)
    scale = max(1.0, float(np.abs(Ts).max()) * H)
    rows = float(np.abs(P.sum(-1) - 1).max())
    gate_res, blk = 0.0, 0.0
    for i in range(n):
        for j in range(n):
            tot = As[:, i, j].sum()
            if P[i, j] == 0 or tot == 0:
                blk = max(blk, float(np.abs(B[i, j]).max()) / scale)  # no O_ij can produce B_ij ≠ 0
                continue
            g = As[:, i, j] / tot
            gate_res = max(gate_res, abs(g.sum() - 1), float(np.clip(-g, 0, None).max()))
            O = H * sum(g[h] * Ts[h] for h in range(H))
            blk = max(blk, float(np.abs(P[i, j] * O - B[i, j]).max()) / scale)
    t = 64 * EPS * H * n
    return _all(_v(rows, t, "P row sums"), _v(gate_res, t, "gates convex"), _v(blk, t, "P_ij O_ij = B_ij"))


def _rearranged(B: np.ndarray) -> np.ndarray:
    n = B.shape[0]
    return np.stack([B[i, j].reshape(-1) for i in range(n) for j in range(n)])  # rows vec(B_ij)


def kronecker_constant(B: np.ndarray) -> tuple[bool, float]:
    """``(constant, miss)``: is ``B = P ⊗ T`` with ``P ≥ 0`` (nearest-Kronecker miss ≤ 1e-9·‖B‖_F,
    Van Loan rearrangement, and the leading factor of one sign)?"""
    normB = max(float(np.linalg.norm(B)), 1e-300)
    U, s, Vh = np.linalg.svd(_rearranged(B), full_matrices=False)
    miss = float(np.sqrt((s[1:] ** 2).sum()))
    thr = 1e-9 * normB
    p = U[:, 0] * s[0]
    p = p if p.sum() >= 0 else -p
    return bool(miss <= thr and float(p.min()) >= -thr), miss


def t2_constant_criterion(inst, params) -> Verdict:
    As, Ts = np.asarray(inst["As"], float), np.asarray(inst["Ts"], float)
    B = heads_B(As, Ts)
    n = B.shape[0]
    thr = 1e-9 * max(float(np.linalg.norm(B)), 1e-300)
    kron_const, miss = kronecker_constant(B)
    TS = Ts.sum(0)
    tt = float((TS * TS).sum())
    worst, cmin = 0.0, 0.0
    for i in range(n):
        for j in range(n):
            c = float((B[i, j] * TS).sum()) / tt if tt > 0 else 0.0
            worst = max(worst, float(np.linalg.norm(B[i, j] - c * TS)))
            cmin = min(cmin, c)
    crit = worst <= thr and cmin >= -thr
    return Verdict(
        kron_const == crit,
        0.0 if kron_const == crit else 1.0,
        0.0,
        f"nearest-Kronecker miss {miss:.2e} (constant: {kron_const}); multiples of T_Σ: {crit}",
    )


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
    return _all(
        Verdict(all(stated), 0.0 if all(stated) else 1.0, 0.0, "stated B_11, B_12"),
        Verdict(rank2, 0.0 if rank2 else 1.0, 0.0, "B_11, B_12 linearly independent"),
        _v(exact_res, 1e-30, detail),
        _v(rounded_res, half_ulp, "rounded value"),
    )


def walk_self_adjoint(inst, params) -> Verdict:
    P, O = walk_view(inst)
    pi = walk_pi(inst, P)
    d = O.shape[-1]
    S = np.kron(np.diag(pi), np.eye(d)) @ (np.eye(P.shape[0] * d) - dense_walk(P, O))
    return _v(
        np.abs(S - S.T).max() / max(float(np.abs(S).max()), 1e-300),
        64 * EPS * S.shape[0],
        "‖(diag π ⊗ I)Δ − ((diag π ⊗ I)Δ)ᵀ‖ / ‖·‖",
    )


def walk_spectrum_interval(inst, params) -> Verdict:
    P, O = walk_view(inst)
    W = dense_walk(P, O)
    return _spectrum_in(np.linalg.eigvals(np.eye(W.shape[0]) - W), float(params["lo"]), float(params["hi"]), W)


def walk_dirichlet(inst, params, *, correction: float = 0.0) -> Verdict:
    P, O = walk_view(inst)
    pi = walk_pi(inst, P)
    d = O.shape[-1]
    W = dense_walk(P, O)
    worst = 0.0
    for x in _probes(W.shape[0]):
        lhs = _pi_inner(x, x - W @ x, pi, d)
        E, mag = _dirichlet(P, O, pi, x, d)
        nx = _pi_inner(x, x, pi, d)
        worst = max(worst, abs(lhs - E - correction * nx) / max(mag + nx, 1e-300))
    return _v(worst, 64 * EPS * W.shape[0] * P.shape[0], "|<x,Δx>_π − Dirichlet| / scale over 3 probes")


def _constraints(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    n, d = P.shape[0], O.shape[-1]
    rows = []
    for i, j in zip(*np.nonzero(P)):
        C = np.zeros((d, n * d))
        C[:, i * d : (i + 1) * d] += np.eye(d)
        C[:, j * d : (j + 1) * d] -= O[i, j]
        rows.append(C)
    return np.vstack(rows) if rows else np.zeros((0, n * d))


def walk_kernel_parallel(inst, params) -> Verdict:
    P, O = walk_view(inst)
    Dl = np.eye(P.shape[0] * O.shape[-1]) - dense_walk(P, O)
    C = _constraints(P, O)
    K, Z = null_space(Dl), null_space(C)
    r1 = float(np.linalg.norm(Dl @ Z, 2)) / max(float(np.linalg.norm(Dl, 2)), 1.0) if Z.size else 0.0
    r2 = float(np.linalg.norm(C @ K, 2)) / max(float(np.linalg.norm(C, 2)), 1.0) if K.size and C.size else 0.0
    same = K.shape[1] == Z.shape[1]
    return Verdict(
        same and max(r1, r2) <= 1e-7,
        max(r1, r2) if same else math.inf,
        1e-7,
        f"dim ker Δ = {K.shape[1]}, dim parallel sections = {Z.shape[1]}",
    )


def walk_flat(inst, params) -> Verdict:
    if inst.get("R") is None:
        return _na("no flat connection in this instance")
    P, O = walk_view(inst)
    R = np.asarray(inst["R"], float)
    n, d = R.shape[0], R.shape[-1]
    Dl = np.eye(n * d) - dense_walk(P, O)
    Rb = np.zeros((n * d, n * d))
    for i in range(n):
        Rb[i * d : (i + 1) * d, i * d : (i + 1) * d] = R[i]
    form = float(np.abs(Dl - Rb @ np.kron(np.eye(n) - P, np.eye(d)) @ Rb.T).max())
    kdim = null_space(Dl).shape[1]
    want = int(params["kernel_dim_per_d"]) * d
    return _all(
        _v(form, 64 * EPS * n * d, "‖Δ − R((I−P)⊗I)Rᵀ‖"),
        Verdict(kdim == want, abs(kdim - want), 0.0, f"dim ker Δ = {kdim}, stated {want}"),
    )


def walk_scaled(inst, params) -> Verdict:
    if inst.get("s") is None:
        return _na("no scale in this instance")
    P, O = walk_view(inst)
    s = float(inst["s"])
    sc = dict(inst, O=s * O)
    sc.pop("A", None)
    W = dense_walk(P, s * O)
    return _all(
        _spectrum_in(np.linalg.eigvals(np.eye(W.shape[0]) - W), 1 - s, 1 + s, W),
        walk_dirichlet(dict(sc, P=P), {}, correction=(1 - s * s) / 2),
    )


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
        return _na("support of B not connected")
    G = pi[:, None, None, None] * B
    r = float(np.abs(G - np.swapaxes(np.swapaxes(G, 0, 1), -1, -2)).max()) / max(float(np.abs(G).max()), 1e-300)
    norms = float(np.abs(pi[:, None] * N - (pi[:, None] * N).T).max()) / max(float((pi[:, None] * N).max()), 1e-300)
    return _v(r, 64 * EPS * n * O.shape[-1], f"π_i B_ij = π_j B_jiᵀ (norms balanced to {norms:.1e})")


def sha_laplacian(inst, params) -> Verdict:
    return _all(walk_self_adjoint(inst, params), walk_spectrum_interval(inst, params), walk_dirichlet(inst, params))


def _eig_count(T: np.ndarray, value: float) -> int:
    """Geometric multiplicity of ``value`` (threshold relative to ``max(‖T‖₂, 1)``)."""
    return int(
        null_space(T - value * np.eye(T.shape[0]), rel=1e-9, scale=max(float(np.linalg.norm(T, 2)), 1.0)).shape[1]
    )


def t5_spectrum(inst, params) -> Verdict:
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    lam = np.linalg.eigvals(A)
    fix, minus = _eig_count(T, 1.0), _eig_count(T, -1.0)
    want = np.array(
        [1 + params["on_fix"] * la for la in lam] * fix + [1 + params["on_minus"] * la for la in lam] * minus
    )
    got = np.linalg.eigvals(np.eye(A.shape[0] * T.shape[0]) - np.kron(A, T))
    return _v(_match(got, want), 1e-6, f"dim Fix T = {fix}, dim(−1) = {minus}; multiset distance")


def t5_kernel(inst, params) -> Verdict:
    A, T = np.asarray(inst["A"], float), np.asarray(inst["T"], float)
    n, d = A.shape[0], T.shape[0]
    K = null_space(np.eye(n * d) - np.kron(A, T))
    F = null_space(T - np.eye(d), scale=max(float(np.linalg.norm(T, 2)), 1.0))
    S = np.kron(np.ones((n, 1)), F) if F.size else np.zeros((n * d, 0))
    joint = np.linalg.matrix_rank(np.hstack([K, S]), tol=1e-7) if (K.size or S.size) else 0
    ok = K.shape[1] == S.shape[1] == joint
    return Verdict(
        ok, 0.0 if ok else 1.0, 0.0, f"dim ker Δ = {K.shape[1]}, dim 1⊗Fix T = {S.shape[1]}, joint rank {joint}"
    )


def _softmax_instance(inst, M: np.ndarray, *, causal: bool = False, beta=None):
    X = np.asarray(inst["X"], float)
    dk = float(inst["dk"]) if inst.get("dk") is not None else float(X.shape[1])
    S = X @ M @ X.T / math.sqrt(dk)
    if beta is not None:
        S = S + beta[None, :]
    if causal:
        S = causal_scores(S)
    return X, dk, S, softmax_rows(S)


def t4_triangle(inst, params) -> Verdict:
    M = np.asarray(inst["M"], float)
    X, dk, S, A = _softmax_instance(inst, M)
    n = X.shape[0]
    Ma = (M - M.T) / 2
    coef = params["sign"] * params["coefficient"] / math.sqrt(dk)
    worst = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                lhs = (
                    math.log(A[i, j])
                    + math.log(A[j, k])
                    + math.log(A[k, i])
                    - math.log(A[i, k])
                    - math.log(A[k, j])
                    - math.log(A[j, i])
                )
                rhs = coef * float((X[j] - X[i]) @ Ma @ (X[k] - X[i]))
                worst = max(worst, abs(lhs - rhs) / (1 + float(np.abs(S).max())))
    return _v(worst, 64 * EPS * n, "|log triangle ratio − stated form| / (1 + max|S|)")


def t4_symmetric_reversible(inst, params) -> Verdict:
    M = np.asarray(inst["M"], float)
    Ms = (M + M.T) / 2
    causal = inst.get("mask") == "causal"
    X, dk, S, A = _softmax_instance(inst, Ms, causal=causal)
    Sm = S - np.max(S[np.isfinite(S)])
    D = np.exp(Sm).sum(-1)  # D_ii up to one common factor
    pi = D / D.sum()
    F = pi[:, None] * A
    db = float(np.abs(F - F.T).max()) / float(F.max())
    stat = float(np.abs(pi @ A - pi).max()) / float(pi.max())
    t = 64 * EPS * X.shape[0]
    return _all(_v(db, t, "symmetric M: π_i A_ij = π_j A_ji with π ∝ D_ii"), _v(stat, t, "π stationary"))


def t4_query_bias(inst, params) -> Verdict:
    M = np.asarray(inst["M"], float)
    n = np.asarray(inst["X"]).shape[0]
    beta = np.asarray(inst["beta"], float) if inst.get("beta") is not None else np.linspace(-1, 1, n)
    X, dk, S, A = _softmax_instance(inst, (M + M.T) / 2, beta=beta)
    c = float(S.max())
    pi = np.exp(beta - beta.max()) * np.exp(S - c).sum(-1)
    pi = pi / pi.sum()
    F = pi[:, None] * A
    return _v(
        float(np.abs(F - F.T).max()) / float(F.max()),
        64 * EPS * n,
        "query bias: π_i ∝ e^{β_i} Σ_j e^{S_ij+β_j} balances A",
    )


def t4_causal(inst, params) -> Verdict:
    M = np.asarray(inst["M"], float)
    X, dk, S, A = _softmax_instance(inst, M, causal=True)
    if X.shape[0] < 2:
        return _na("n < 2")
    one_way = bool(((A > 0) & (A.T == 0)).any())
    return Verdict(one_way, 0.0 if one_way else 1.0, 0.0, "an edge with A_ij > 0 = A_ji (forces π_i = 0)")


def _ring(inst) -> tuple[np.ndarray, np.ndarray]:
    A0, T = np.asarray(inst["A0"], float), np.asarray(inst["T"], float)
    return A0, T


def ring_jacobian(A0: np.ndarray, T: np.ndarray) -> np.ndarray:
    """``J = block(Σ_h A0^h_ij T_h) − I`` by block loops."""
    H, n, _ = A0.shape
    d = T.shape[-1]
    W = np.zeros((n * d, n * d))
    for h in range(H):
        W += dense_walk(A0[h], np.broadcast_to(T[h], (n, n, d, d)))
    return W - np.eye(n * d)


def kernel_hat(a: np.ndarray, k: int, sign: int) -> complex:
    """``â(k) = Σ_m a(m) e^{sign·2πikm/n}`` by its defining sum."""
    n = a.shape[-1]
    return complex(sum(a[m] * np.exp(sign * 2j * np.pi * k * m / n) for m in range(n)))


def ring_symbol(A0: np.ndarray, T: np.ndarray, k: int, sign: int) -> np.ndarray:
    return sum(kernel_hat(A0[h, 0], k, sign) * T[h] for h in range(A0.shape[0]))


def t6_fourier(inst, params) -> Verdict:
    A0, T = _ring(inst)
    H, n, _ = A0.shape
    d = T.shape[-1]
    J = ring_jacobian(A0, T)
    scale = max(1.0, float(np.linalg.norm(J, 2)))
    worst = 0.0
    for k in range(n):
        phi = np.exp(2j * np.pi * k * np.arange(n) / n)
        Mk = ring_symbol(A0, T, k, params["hat_sign"]) - params["shift"] * np.eye(d)
        for a in range(d):
            v = np.eye(d)[a]
            worst = max(worst, float(np.abs(J @ np.kron(phi, v) - np.kron(phi, Mk @ v)).max()) / scale)
    return _v(worst, 64 * EPS * n * H * d, "max_k ‖J(φ_k⊗v) − φ_k⊗(M(k) − shift·I)v‖ / ‖J‖")


def t6_selection(inst, params) -> Verdict:
    A0, T = _ring(inst)
    n = A0.shape[-1]
    sig = (
        max(float(np.linalg.eigvals(ring_symbol(A0, T, k, params["hat_sign"])).real.max()) for k in range(n))
        - params["shift"]
    )
    dense = float(np.linalg.eigvals(ring_jacobian(A0, T)).real.max())
    return _v(abs(sig - dense) / max(1.0, abs(dense)), 1e-8, f"Re σ(k*) = {sig:.6g} vs max Re eig J = {dense:.6g}")


def t6_rotating(inst, params) -> Verdict:
    if inst.get("rho") is None:
        return _na("no rotating-wave transport in this instance")
    A0, T = _ring(inst)
    rho, th = float(inst["rho"]), float(inst["theta"])
    n = A0.shape[-1]
    v = np.array([1.0, -1j])
    worst = 0.0
    for k in range(n):
        M = ring_symbol(A0, T, k, params["hat_sign"])
        sz = rho * np.exp(1j * th) * kernel_hat(A0[0, 0], k, params["hat_sign"])
        worst = max(worst, float(np.abs((M - params["shift"] * np.eye(2)) @ v - (sz - params["shift"]) * v).max()))
    return _v(worst / max(1.0, rho), 64 * EPS * n, "‖(M(k) − shift)(1, −i) − σ_z(k)(1, −i)‖")


PREDICATES: dict[str, Callable[[Mapping, Mapping], Verdict]] = {
    f.__name__: f
    for f in (
        stochastic,
        reversible,
        orthogonal,
        transpose_compatible,
        orthogonal_involution,
        full_support,
        heads_stochastic,
        p_is_head_mean,
        softmax_full_support,
        circulant,
        t1_transport_layout,
        t1_walk,
        kron_spectrum,
        t2_gated_walk,
        t2_constant_criterion,
        t2_counterexample,
        walk_self_adjoint,
        walk_spectrum_interval,
        walk_dirichlet,
        block_detailed_balance,
        walk_kernel_parallel,
        walk_flat,
        walk_scaled,
        sha_laplacian,
        t5_spectrum,
        t5_kernel,
        t4_triangle,
        t4_symmetric_reversible,
        t4_query_bias,
        t4_causal,
        t6_fourier,
        t6_selection,
        t6_rotating,
    )
}


def judge(statement, inst: Mapping) -> Verdict:
    """Evaluate a registered hypothesis or conclusion (its ``predicate`` with its ``params``)."""
    if statement.predicate is None:
        raise ValueError(f"{statement.id}: no executable predicate")
    return PREDICATES[statement.predicate](inst, statement.params)


def judge_theorem(theorem, inst: Mapping) -> tuple[dict[str, Verdict], dict[str, Verdict]]:
    """``(hypotheses, conclusions)``: the verdict of every predicated statement of ``theorem``."""
    hyp = {h.id: judge(h, inst) for h in theorem.hypotheses if h.predicate}
    con = {c.id: judge(c, inst) for c in theorem.conclusions if c.predicate}
    return hyp, con
