r"""The matrix-free spectrum checks of the factored T3 diagnostics (:mod:`numerics.laplacian.factored`):
the Bendixson enclosure from Lanczos extremes of the π-symmetrised operator, Arnoldi Ritz values
where the enclosure does not decide (:mod:`numerics.laplacian.krylov`, stopped at the checks'
rounding error; ARPACK at machine precision as ``route="arpack"``), per batch element of a
:class:`~numerics.laplacian.blocks.FactoredBlocks`, with the small-walk route that assembles the
operator densely; and the Lanczos / operator helpers the kernel checks
(:mod:`numerics.laplacian.kernel`) share: :func:`linear_operator`, :func:`dense_operator`,
:func:`sym_extreme`. The bounds are stated in :mod:`numerics.laplacian.factored`'s docstring.
Imports :mod:`~numerics.laplacian.result`, :mod:`~numerics.laplacian.blocks`,
:mod:`~numerics.laplacian.checks` and :mod:`~numerics.laplacian.krylov` from the package."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks, element
from numerics.laplacian.checks import spectrum_error
from numerics.laplacian.krylov import arnoldi_ends, lanczos_ends
from numerics.laplacian.result import Check, make_check
from numerics.tolerance import tol

F64 = torch.float64

__all__ = ["spectrum_factored", "linear_operator", "dense_operator", "sym_extreme"]


def linear_operator(fn, N: int, n: int, d: int, counter: list, device=None):
    """A scipy ``LinearOperator`` of ``fn`` (a torch map on ``(1, n, d)`` fields on ``device``):
    ARPACK's host vectors go to the walk's device and back."""
    from scipy.sparse.linalg import LinearOperator

    def mv(v):
        counter[0] += 1
        x = torch.from_numpy(np.ascontiguousarray(np.asarray(v).real.reshape(1, n, d), dtype=np.float64))
        return fn(x.to(device)).reshape(-1).cpu().numpy()

    return LinearOperator((N, N), matvec=mv, dtype=np.float64)


def dense_operator(fn, N: int, n: int, d: int) -> torch.Tensor:
    """The ``N × N`` matrix of a matrix-free map (its columns are the images of unit vectors)."""
    E = torch.eye(N, dtype=F64).reshape(N, n, d)
    return fn(E).reshape(N, N).T.contiguous()


def sym_extreme(fn, N, n, d, which: str, counter, seed: int, k: int = 1, max_restarts: int = 300, tol: float = 0.0):
    """Extreme eigenvalues of a symmetric matrix-free map by Lanczos (ARPACK relative ``tol``, 0:
    machine precision), with Ritz residual norms."""
    from scipy.sparse.linalg import ArpackNoConvergence, eigsh

    v0 = np.random.default_rng(seed).standard_normal(N)
    op = linear_operator(fn, N, n, d, counter)
    ncv = min(N, max(2 * k + 1, 40))
    try:
        vals, vecs = eigsh(op, k=k, which=which, v0=v0, tol=tol, ncv=ncv, maxiter=max_restarts)
    except ArpackNoConvergence:
        # clustered extremes (e.g. a transport's ±1 eigenvalues repeat every eigenvalue of P) can
        # stall the machine-precision stopping rule; 1e-12 relative is far inside every tolerance,
        # and the Ritz residuals returned below state what was reached. A second failure raises
        # (the callers report the check undefined with the reason)
        vals, vecs = eigsh(op, k=k, which=which, v0=v0, tol=1e-12, ncv=min(N, 2 * ncv), maxiter=max_restarts)
    V = torch.from_numpy(vecs)
    res = torch.linalg.vector_norm(fn(V.T.reshape(-1, n, d)).reshape(k, N).T - V * torch.from_numpy(vals), dim=0)
    order = np.argsort(vals)
    return torch.from_numpy(vals[order]), V[:, order], res[order]


def spectrum_factored(
    fb: FactoredBlocks,
    pi_safe,
    pi_ok,
    scale,
    si: Check,
    tdt,
    *,
    assemble_max: int = 32,
    seed: int = 0,
    route: str = "krylov",
):
    """``(interval, disk, scaled)`` checks and ``extra`` facts (module docstring), per batch element.

    Each check's residual is a max of components (``max |Im z|``, how far ``Re z`` leaves the
    interval at either end, ``max |z − 1| − 1``). Each component has a Bendixson upper bound; a
    component's Arnoldi estimate is computed only when its bound could change the verdict or the
    residual (bound above both the tolerance and the residual known so far)."""
    n, d = fb.n, fb.d
    N = n * d
    nb = max(1, math.prod(fb.batch))
    flat_scale = scale.reshape(-1)
    si_h = si.holds.reshape(-1)
    res = {
        k: torch.full((nb,), float("nan"), dtype=F64) for k in ("spectrum_interval", "spectrum_disk", "spectrum_scaled")
    }
    wn = torch.zeros(nb, dtype=F64)
    how, facts, certified = [], [], dict.fromkeys(res, True)
    for b in range(nb):
        e = element(fb, b)
        s_b = float(flat_scale[b])
        if assemble_max >= N:
            Wd = dense_operator(lambda x, e=e: e.apply(x), N, n, d)
            try:
                ev = torch.linalg.eigvals(torch.eye(N, dtype=F64, device=Wd.device) - Wd)
            except torch.linalg.LinAlgError:  # as on the dense path: LAPACK through numpy (balancing)
                ev = torch.as_tensor(np.linalg.eigvals((torch.eye(N, dtype=F64) - Wd.cpu()).numpy()))
            im, lo, hi = float(ev.imag.abs().max()), float(ev.real.min()), float(ev.real.max())
            res["spectrum_interval"][b] = max(im, -lo, hi - 2, 0.0)
            res["spectrum_disk"][b] = max(float((ev - 1).abs().max()) - 1, 0.0)
            res["spectrum_scaled"][b] = max(im, (1 - s_b) - lo, hi - (1 + s_b), 0.0)
            wn[b] = torch.linalg.matrix_norm(Wd, ord=2)
            how.append("assembled")
            certified = dict.fromkeys(res, False)
            continue
        cnt = [0]
        p = pi_safe.reshape(-1, n)[b] if bool(pi_ok.reshape(-1)[b]) else torch.full((n,), 1.0 / n, dtype=F64)
        if route == "krylov":
            ext = _extremes_krylov(e, p, seed, cnt, tdt, s_b if bool(si_h[b]) else None)
        else:
            ext = _extremes_arpack(e, p, seed, cnt)
        lo, hi, im_b, mod_b, wn[b], r_max = ext
        bounds = {
            "spectrum_interval": {"im": im_b, "low": -lo, "high": hi - 2},
            "spectrum_disk": {"mod": mod_b - 1},
            "spectrum_scaled": {"im": im_b, "low": (1 - s_b) - lo, "high": hi - (1 + s_b)},
        }
        fact = {"bendixson_re": (lo, hi), "bendixson_im": im_b, "norm_W_pi": mod_b, "ritz_residual": r_max}
        t_b = tol(tdt, N, scale=max(float(wn[b]), 1.0))
        active = [k for k in bounds if k != "spectrum_scaled" or bool(si_h[b])]
        wanted = sorted({c for k in active for c, bnd in bounds[k].items() if bnd > t_b})
        ritz: dict = {}

        def arnoldi(comp, e=e, wanted=wanted, cnt=cnt, err=spectrum_error(N, float(wn[b]))):
            if comp not in ritz:
                if route == "krylov":  # every component that may be needed, from one Krylov space of W
                    ritz.update(_arnoldi_krylov(e, wanted, seed, cnt, err))
                else:
                    ritz[comp] = _arnoldi_extreme(e, comp, seed, cnt)
            return ritz[comp]

        for name in active:
            comps = bounds[name]
            if route == "krylov":  # every component above t_b has its Ritz value (one Arnoldi run)
                above = [c for c, bnd in comps.items() if bnd > t_b]
                known = max(comps.values())  # all within t_b: certified by the enclosure
                if above:
                    certified[name] = False
                    known = max(_component(name, c, arnoldi(c), s_b) for c in above)
                    if known <= t_b:
                        known = max([known] + [bnd for c, bnd in comps.items() if c not in above])
                res[name][b] = max(known, 0.0)
                continue
            known = 0.0
            for comp, bnd in sorted(comps.items(), key=lambda kv: -kv[1]):
                if bnd <= max(known, t_b):
                    known = max(known, bnd) if known <= t_b else known
                    continue
                certified[name] = False
                known = max(known, _component(name, comp, arnoldi(comp), s_b))
            res[name][b] = max(known, 0.0)
        fact["arnoldi"] = {k: (v.real, v.imag) for k, v in ritz.items()}
        fact["matvecs"] = cnt[0]
        facts.append(fact)
        how.append("bendixson")
    bs = fb.batch
    t_sp = tol(tdt, N, scale=max(float(wn.max()), 1.0))
    out = []
    for name, r in res.items():
        r = r.reshape(bs)
        if name == "spectrum_scaled" and not bool(si.holds.all()):
            r = torch.where(si.holds, r, torch.full_like(r, float("nan")))
            why = "not a scaled isometry (no common scale s)"
        elif how and how[0] == "assembled":
            why = None
        elif certified[name]:
            why = "certified by the Bendixson enclosure (residual: its upper bound)"
        else:
            why = (
                "from Arnoldi Ritz values of the non-normal Δ where the Bendixson enclosure does not decide "
                "(no rigorous error bound)"
            )
        req = ~si.fails if name == "spectrum_scaled" else None
        out.append(make_check(name, r, t_sp, why, error=spectrum_error(N, float(wn.max())), require=req))
    extra = {"spectrum_method": "assembled" if all(h == "assembled" for h in how) else "bendixson+arnoldi"}
    if facts:
        extra["spectrum_facts"] = facts  # type: ignore[assignment]
    return tuple(out), extra


def _component(name: str, comp: str, z: complex, s_b: float) -> float:
    """The residual component ``comp`` of check ``name`` at a Ritz value ``z`` (of ``Δ``; of ``W``
    for ``mod``)."""
    if comp == "im":
        return abs(z.imag)
    if comp == "mod":
        return abs(z) - 1
    if comp == "low":
        return -z.real if name == "spectrum_interval" else (1 - s_b) - z.real
    return z.real - 2 if name == "spectrum_interval" else z.real - (1 + s_b)


def _pi_operators(e: FactoredBlocks, p: torch.Tensor):
    """``H_S``, ``K_SᵀK_S``, ``W_πᵀW_π`` and ``WᵀW`` on ``(p, n, d)`` fields (``S = D^{½} Δ D^{-½}``,
    ``W_π = I − S``; module docstring of :mod:`numerics.laplacian.factored`)."""
    sq = p.sqrt()[:, None]
    S = lambda x: x - e.apply(x / sq) * sq
    St = lambda x: x - e.apply_t(x * sq) / sq
    Hs = lambda x: 0.5 * (S(x) + St(x))
    KtK = lambda x: 0.25 * (St(S(x) - St(x)) - S(S(x) - St(x)))
    MtM = lambda x: (lambda y: y - St(y))(x - S(x))
    WtW = lambda x: e.apply_t(e.apply(x))
    return Hs, KtK, MtM, WtW


def _extremes_arpack(e: FactoredBlocks, p: torch.Tensor, seed: int, cnt: list):
    """``(λ_min(H_S), λ_max(H_S), ‖K_S‖, ‖W_π‖, ‖W‖, largest Ritz residual)`` by ARPACK at machine
    precision (the previous route)."""
    n, d = e.n, e.d
    N = n * d
    Hs, KtK, MtM, WtW = _pi_operators(e, p)
    lohi, _, r_h = sym_extreme(Hs, N, n, d, "BE", cnt, seed, k=2)
    kk, _, r_k = sym_extreme(KtK, N, n, d, "LA", cnt, seed)
    mm, _, r_m = sym_extreme(MtM, N, n, d, "LA", cnt, seed)
    wn = float(sym_extreme(WtW, N, n, d, "LA", cnt, seed)[0][0].clamp(min=0).sqrt())
    im_b, mod_b = float(kk[0].clamp(min=0).sqrt()), float(mm[0].clamp(min=0).sqrt())
    return float(lohi[0]), float(lohi[-1]), im_b, mod_b, wn, float(max(r_h.max(), r_k.max(), r_m.max()))


#: products one Krylov solve may spend before the ARPACK route takes over (a safety net: the
#: random and MiniLM-sized walks of the benchmark converge in under 200)
KRYLOV_CAP = 3000


def _extremes_krylov(e: FactoredBlocks, p: torch.Tensor, seed: int, cnt: list, tdt, s_b: float | None):
    """As :func:`_extremes_arpack`, each quantity to the accuracy its decision can use: ``‖W‖``
    first, to within the spectrum checks' rounding error at that norm
    (:func:`~numerics.laplacian.checks.spectrum_error`: it sets the tolerance ``t_b``); then each
    Bendixson extreme until either it is within that error ``err`` (Ritz residual ``ρ ≤ err`` for an
    eigenvalue, ``√(θ+ρ) − √θ ≤ err`` for a norm: it then differs from the exact one by less than
    the error the check already allows for) or every residual component it bounds is certainly
    above ``t_b`` (Ritz values lie inside the spectrum: ``λ_min ≤ θ_min``, ``θ_max ≤ λ_max``), when
    only the Arnoldi values of those components enter the residual and the extreme is reported as
    the Ritz value reached. ``s_b``: the common scale of a scaled isometry (the ``spectrum_scaled``
    components), None when that check is not computed. One Lanczos run gives both ends of ``H_S``.
    A solve that does not converge within :data:`KRYLOV_CAP` products falls back to ARPACK."""
    n, d = e.n, e.d
    N = n * d
    Hs, KtK, MtM, WtW = _pi_operators(e, p)
    v0 = torch.from_numpy(np.random.default_rng(seed).standard_normal(N)).to(e.a.device)

    def solve(fn, ends, done):
        def op(X):
            cnt[0] += X.shape[1]
            return fn(X.T.reshape(-1, n, d)).reshape(-1, N).T

        out, ok = lanczos_ends(op, N, v0, ends, done, max_products=KRYLOV_CAP)
        if not ok:
            which, k = ("BE", 2) if len(ends) == 2 else ("LA", 1)
            vals, _, r = sym_extreme(fn, N, n, d, which, cnt, seed, k=k)
            return {"min": (float(vals[0]), None, float(r[0])), "max": (float(vals[-1]), None, float(r[-1]))}
        return {end: pairs[0] for end, pairs in out.items()}

    def norm_done(acc):  # √θ to within acc(√θ)
        return lambda _k, t, rho, _an: rho <= (lambda a: a * a + 2 * a * math.sqrt(max(t, 0.0)))(acc(max(t, 0.0)))

    w = solve(WtW, ("max",), norm_done(lambda t: spectrum_error(N, math.sqrt(t))))["max"]
    wn = math.sqrt(max(w[0], 0.0))
    err, t_b = spectrum_error(N, wn), tol(tdt, N, scale=max(wn, 1.0))
    # where each extreme enters: low = off − λ_min, high = λ_max − off (interval; scaled when computed)
    off = {"min": [0.0] + ([1 - s_b] if s_b is not None else []), "max": [2.0] + ([1 + s_b] if s_b is not None else [])}
    above = {
        "min": lambda t: all(o - t > t_b for o in off["min"]),
        "max": lambda t: all(t - o > t_b for o in off["max"]),
    }
    h = solve(Hs, ("min", "max"), lambda end, t, rho, _an: rho <= err or above[end](t))
    sq = lambda t: math.sqrt(max(t, 0.0))
    k = solve(KtK, ("max",), lambda *a: norm_done(lambda _t: err)(*a) or sq(a[1]) > t_b)["max"]
    m = solve(MtM, ("max",), lambda *a: norm_done(lambda _t: err)(*a) or sq(a[1]) - 1 > t_b)["max"]
    r_max = max(h["min"][2], h["max"][2], k[2], m[2])
    return h["min"][0], h["max"][0], sq(k[0]), sq(m[0]), wn, r_max


#: scores of the eigenvalues ``z`` of ``W`` for each component (``Δ``'s eigenvalue is ``1 − z``)
_SCORES = {
    "im": lambda z: np.abs(z.imag),
    "low": lambda z: z.real,
    "high": lambda z: -z.real,
    "mod": lambda z: np.abs(z),
}


def _arnoldi_krylov(e: FactoredBlocks, comps, seed: int, cnt: list, err: float) -> dict:
    """The components ``comps`` of :func:`_arnoldi_extreme` from one restarted Arnoldi run on ``W``
    (:func:`~numerics.laplacian.krylov.arnoldi_ends`), each Ritz value to backward error ``ρ ≤ err``
    (an exact eigenvalue of ``W + E``, ``‖E‖ ≤ err``: the accuracy
    :func:`~numerics.laplacian.checks.spectrum_error` states for the dense solver). Falls back to
    :func:`_arnoldi_extreme` past :data:`KRYLOV_CAP` products."""
    n, d = e.n, e.d
    N = n * d
    v0 = torch.from_numpy(np.random.default_rng(seed).standard_normal(N)).to(e.a.device)

    def op(X):
        cnt[0] += X.shape[1]
        return e.apply(X.T.reshape(-1, n, d)).reshape(-1, N).T

    keys = {c: _SCORES[c] for c in comps}
    out, ok = arnoldi_ends(op, N, v0, keys, lambda _c, _z, rho, _g: rho <= err, max_products=KRYLOV_CAP, tie=err)
    if not ok:
        return {c: _arnoldi_extreme(e, c, seed, cnt) for c in comps}
    return {c: z if c == "mod" else 1 - z for c, (z, _) in out.items()}


def _arnoldi_extreme(e: FactoredBlocks, comp: str, seed: int, cnt: list) -> complex:
    """One extreme eigenvalue by ARPACK ``eigs``: of ``Δ`` with the largest ``|Im|`` (``im``), the
    smallest / largest real part (``low`` / ``high``); of ``W`` the largest modulus (``mod``)."""
    from scipy.sparse.linalg import eigs

    n, d = e.n, e.d
    N = n * d
    v0 = np.random.default_rng(seed).standard_normal(N)
    if comp == "mod":
        z = eigs(linear_operator(e.apply, N, n, d, cnt), k=1, which="LM", v0=v0, tol=0.0, return_eigenvectors=False)
        return complex(z[np.argmax(np.abs(z))])
    op = linear_operator(lambda x: x - e.apply(x), N, n, d, cnt)
    which = {"im": "LI", "low": "SR", "high": "LR"}[comp]
    z = eigs(op, k=2 if comp == "im" else 1, which=which, v0=v0, tol=0.0, return_eigenvectors=False)
    pick = {"im": np.argmax(np.abs(z.imag)), "low": np.argmin(z.real), "high": np.argmax(z.real)}[comp]
    return complex(z[pick])
