r"""The matrix-free spectrum checks of the factored T3 diagnostics (:mod:`numerics.laplacian.factored`):
the Bendixson enclosure from Lanczos extremes of the π-symmetrised operator, Arnoldi Ritz values
where the enclosure does not decide (:mod:`numerics.laplacian.krylov`, stopped at the checks'
rounding error; ARPACK at machine precision as ``route="arpack"``), per batch element of a
:class:`~numerics.laplacian.blocks.FactoredBlocks`, with the small-walk route that assembles the
operator densely; and the Lanczos / operator helpers the kernel checks
(:mod:`numerics.laplacian.kernel`) share: :func:`linear_operator`, :func:`dense_operator`,
:func:`sym_extreme`. The bounds are stated in :mod:`numerics.laplacian.factored`'s docstring.

Each spectral residual is a max of components; an Arnoldi component certainly below a converged
component of every check it feeds is left unconverged (:class:`_Skip`, with the reason in
``extra['spectrum_facts'][b]['not_converged']``). Measured on random ``n = 64, d = 64, H = 4``
walks (``benchmarks/bench_diagnose.py: random_walk``, one thread, the previous and this module
alternated in one process, ``process_time`` medians): on the benchmark's walk (seed 1) the Arnoldi
run stops after 48 products instead of 73 (``low`` and ``high``, Bendixson bounds 0.84 and 1.01,
below the ``im`` component 1.026 of ``spectrum_interval``, from one 10-product Lanczos refinement
of ``H_S``), the spectrum checks 50.5 → 34.7 ms (15 rounds; 145 → 140 applies); on seeds 2, 3, 5,
6 −3 to −4 ms (Arnoldi 73, 73, 66, 64 → 56, 60, 56, 56 products); seeds 4, 7–10 the same products.
Residuals the same to 5e-13 (within the Ritz values' backward error ``err`` = 6.6e-12: both runs
stop at ``ρ ≤ err``, at different steps). Rejected: converging the Bendixson extremes to ``err``
before Arnoldi (40 Lanczos steps on ``H_S``, 24 ms, more than Arnoldi saves); taking an extreme
within ``ρ`` of a 2-step Ritz value (``θ_min = 0.70``, ``ρ = 0.43`` while ``λ_min = −0.655``:
hence the margin :data:`SKIP_MARGIN` and the settled-value rule); refining where the candidate
was about to converge (:data:`SKIP_PENDING`) or where only the residual screen's estimates had
converged the references (seed 10: 18 products for nothing). The ``‖W‖`` Lanczos run stops on the
Kato–Temple bound (:func:`_top_norm_done`): seeds 1–3 24, 26, 26 → 18, 20, 18 products of
``WᵀW``, 11.9, 11.8, 13.6 → 9.0, 8.5, 8.4 ms (11 rounds), ``‖W‖`` the same to 1.2e-14 relative
(so every tolerance and error bound reported).
Imports :mod:`~numerics.laplacian.result`, :mod:`~numerics.laplacian.blocks`,
:mod:`~numerics.laplacian.checks` and :mod:`~numerics.laplacian.krylov` from the package."""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.laplacian.blocks import FactoredBlocks, element
from numerics.laplacian.checks import spectrum_error
from numerics.laplacian.krylov import arnoldi_ends, block_op, lanczos_ends
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
    res = torch.linalg.vector_norm(block_op(fn, n, d)(V) - V * torch.from_numpy(vals), dim=0)
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
    starts: dict | None = None,
):
    """``(interval, disk, scaled)`` checks and ``extra`` facts (module docstring), per batch element.
    ``starts``: where the Krylov route's Arnoldi runs, ``starts[b]`` receives the best approximate null
    vector of ``Δ`` in its final Krylov space (:func:`null_start`), the start of the kernel search.

    Each check's residual is a max of components (``max |Im z|``, how far ``Re z`` leaves the
    interval at either end, ``max |z − 1| − 1``). Each component has a Bendixson upper bound; a
    component's Arnoldi estimate is computed only when its bound could change the verdict or the
    residual (bound above both the tolerance and the residual known so far); on the Krylov route
    an Arnoldi component certainly below another of every check it feeds is not converged
    (:class:`_Skip`)."""
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
        err_b = spectrum_error(N, float(wn[b]))
        skip = _Skip(e, p, seed, cnt, {k: bounds[k] for k in active}, wanted, s_b, err_b)

        def arnoldi(comp, e=e, wanted=wanted, cnt=cnt, err=err_b, skip=skip):
            if comp not in ritz:
                if route == "krylov":  # every component that may be needed, from one Krylov space of W
                    ritz.update(_arnoldi_krylov(e, wanted, seed, cnt, err, skip, starts, b))
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
                    for c in above:
                        arnoldi(c)
                    # a component certainly below the others (skip.dropped) cannot change the max
                    known = max(_component(name, c, ritz[c], s_b) for c in above if c not in skip.dropped)
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
        fact["arnoldi"] = {k: (v.real, v.imag) for k, v in ritz.items() if k not in skip.dropped}
        if skip.dropped:
            fact["not_converged"] = skip.dropped
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
    (:func:`~numerics.laplacian.checks.spectrum_error`: it sets the tolerance ``t_b``; stopped on
    the Kato–Temple bound, :func:`_top_norm_done`); then each
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

    def solve(fn, ends, done, k=1, per_end=False):
        op = block_op(fn, n, d, cnt)
        out, ok = lanczos_ends(op, N, v0, ends, done, max_products=KRYLOV_CAP, k=k, per_end=per_end)
        if not ok:
            which, k = ("BE", 2) if len(ends) == 2 else ("LA", 1)
            vals, _, r = sym_extreme(fn, N, n, d, which, cnt, seed, k=k)
            return {"min": (float(vals[0]), None, float(r[0])), "max": (float(vals[-1]), None, float(r[-1]))}
        return {end: pairs[0] for end, pairs in out.items()}

    def norm_done(acc):  # √θ to within acc(√θ)
        return lambda _k, t, rho, _an: rho <= (lambda a: a * a + 2 * a * math.sqrt(max(t, 0.0)))(acc(max(t, 0.0)))

    w = solve(WtW, ("max",), _top_norm_done(lambda t: spectrum_error(N, math.sqrt(t))), k=2, per_end=True)["max"]
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


#: the margin on the second Ritz pair's residual in :func:`_top_norm_done` (``α = θ₂ + 4ρ₂``)
TEMPLE_MARGIN = 4.0


def _top_norm_done(acc):
    """The per-end ``done`` of :func:`~numerics.laplacian.krylov.lanczos_ends` (``k = 2``,
    ``per_end``) at the top of a positive semidefinite operator (``‖W‖² = λ₁(WᵀW)``): ``√θ₁`` within
    ``acc(√θ₁)`` of ``√λ₁`` (``λ₁ − θ₁ ≤ a² + 2a√θ₁``), where ``λ₁ − θ₁ ≤ ρ₁`` (the rule so far) or,
    sharper, the Kato–Temple bound ``λ₁ − θ₁ ≤ ρ₁² / (θ₁ − α)`` with ``α = θ₂ + 4ρ₂ ≥ λ₂`` (the second
    Ritz value within ``ρ₂`` of ``λ₂``, the convention every extreme here uses, with a margin of 4;
    with one pair only, the first rule). Measured on the random ``n = 64, d = 64, H = 4`` walk:
    24 → 18 products of ``WᵀW``, ``√θ₁`` the same to 1.3e-14 relative (``ρ₁ = 9e-7``,
    ``θ₁ − α = 0.85``: the bound 1e-12 against the 3.5e-11 allowed)."""

    def done(_end, pairs, _an):
        t1, r1 = pairs[0]
        gain = r1
        if len(pairs) > 1:
            alpha = pairs[1][0] + TEMPLE_MARGIN * pairs[1][1]
            gain = r1 if alpha >= t1 else min(r1, r1 * r1 / (t1 - alpha))
        a = acc(max(t1, 0.0))
        return gain <= a * a + 2 * a * math.sqrt(max(t1, 0.0))

    return done


#: the margin on a Lanczos residual ``ρ`` when a refined Bendixson extreme shows that an Arnoldi
#: component is below the residual (:class:`_Skip`): the extreme is taken within ``4ρ`` of its Ritz
#: value, not ``ρ``. Lanczos on ``H_S`` of the random ``n = 64, d = 64, H = 4`` walk from the seeded
#: start: after 2 steps ``θ_min = 0.70``, ``ρ = 0.43`` while ``λ_min = −0.655`` (3.2 ρ away: an early
#: Ritz value is not yet near the extreme); after 4, 6, 8 steps ``θ_min − λ_min`` = 0.39, 0.04, 0.01
#: with ``ρ`` = 0.61, 0.16, 0.08
SKIP_MARGIN = 4.0
#: Lanczos products one refinement of a Bendixson extreme may spend (:class:`_Skip`; 10 for both ends of
#: ``H_S`` on the random walk above); past it the component is converged by Arnoldi as before
SKIP_CAP = 24


#: a candidate of :class:`_Skip` whose Arnoldi residual is within this factor of ``err`` is left to
#: converge (no refinement). Ten random ``n = 64, d = 64, H = 4`` walks (seeds 1–10): without it,
#: refinements (8–14 products of ``H_S``, each an ``apply`` and an ``apply_t``: about 7 Arnoldi
#: steps' time) were spent at 2, 3 and 7 × err (the residual screen's estimates) on candidates that
#: converged at the next check anyway (products saved: 0, 4, 4); the useful ones at 20 × err and above
SKIP_PENDING = 10.0
#: the Lanczos end that bounds each component a :class:`_Skip` may leave unconverged (``H_S`` for
#: ``low`` / ``high``, ``K_SᵀK_S`` for ``im``)
_SKIP_ENDS = {"low": "min", "high": "max", "im": "max"}


class _Skip:
    """Which Arnoldi components need not converge, as the ``done`` rule of :func:`_arnoldi_krylov`.

    Each residual is a max of components (:func:`_component`); a component that is certainly below
    another component of every check it feeds cannot change any residual. A *candidate* is a
    wanted component that, in every check it feeds, has another component with a larger Bendixson
    bound (the Ritz values of :func:`_extremes_krylov`); the others are *references* and converge as
    before (``ρ ≤ err``); the keys are ordered references first, so within one pass of Ritz checks
    a candidate sees its references' values of that pass. A candidate is done when ``ρ ≤ err``, or
    when every check ``k`` it feeds has a converged reference and ``U_k + err < v_k``: ``v_k`` the
    largest converged reference of ``k`` (part of the residual the full route reports), ``U_k`` the
    candidate's Bendixson bound from its extreme refined by Lanczos (``H_S`` for ``low`` / ``high``,
    ``K_SᵀK_S`` for ``im``) and taken within ``SKIP_MARGIN·ρ`` of the Ritz value; ``+ err``: the
    full route's Arnoldi value is an eigenvalue of ``Δ + E``, ``‖E‖ ≤ err``, inside the enclosure
    widened by ``err``. The refinement runs once per candidate (lazily: only when the references
    have converged) and stops at success, at ``ρ ≤ err``, when hopeless (a Ritz value lies inside
    the spectrum, so ``U_k ≥`` its value already) or after :data:`SKIP_CAP` products.
    ``dropped``: the candidates whose last ``done`` said so, with their bounds and the residual
    components below which they lie (``extra['spectrum_facts'][b]['not_converged']``). A verdict
    cannot change through a drop: ``v_k > U_k + err`` and ``U_k`` is taken no lower than the bound
    of the first Lanczos run, above ``t_b`` (the candidate is wanted), so ``v_k`` alone already fails
    the check; if the extreme were not within the margin only the residual's value would be low."""

    def __init__(self, e: FactoredBlocks, p, seed: int, cnt: list, bounds: dict, wanted, s_b: float, err: float):
        self.e, self.p, self.seed, self.cnt, self.s_b, self.err = e, p, seed, cnt, s_b, err
        self.first = bounds
        self.comps = {k: [c for c in wanted if c in bnd] for k, bnd in bounds.items()}
        self.feeds = {c: [k for k in bounds if c in self.comps[k]] for c in wanted}
        cand = {
            c
            for c in wanted
            if c in _SKIP_ENDS
            and all(any(bounds[k][o] > bounds[k][c] for o in self.comps[k] if o != c) for k in self.feeds[c])
        }
        self.refs = [c for c in wanted if c not in cand]
        self.order = self.refs + sorted(cand)
        self.state: dict = {}  # reference -> its Ritz value of W in the current pass (None: not converged)
        self.refined: dict = {}  # candidate -> (θ, ρ) of its refined extreme
        self.dropped: dict = {}
        self.step = 0  # Arnoldi products so far
        self.seen: dict = {}  # candidate -> the step of its first sight with converged references

    def done(self, c: str, z: complex, rho: float, _g: float) -> bool:
        if c in self.refs:
            self.state[c] = z if rho <= self.err else None
            return rho <= self.err
        self.dropped.pop(c, None)
        if rho <= self.err:
            return True
        v = self._reference_values(c)
        if v is None:
            return False
        if c not in self.refined:
            if rho <= SKIP_PENDING * self.err:
                return False  # about to converge: a refinement would cost more than it saves
            if self.seen.get(c) != self.step:
                # first sight in this Ritz check: the residual screen's pass, whose references may
                # pass on estimates only; "done" lets the check compute the explicit residuals, and
                # the explicit pass (same step) decides. Where a check has no screen (an invariant
                # space, n·d steps, the cap) the run ends there whatever this says
                self.seen[c] = self.step
                return True
            self._refine(c, v)
        # not below the first run's Ritz value (inside the spectrum, above t_b: so v_k fails the check alone)
        bound = {k: max(self._bound(c, k, *self.refined[c]), self.first[k][c]) for k in v}
        if all(bound[k] + self.err < v[k] for k in v):
            theta, r = self.refined[c]
            self.dropped[c] = {
                "bendixson_bound": bound,
                "below": v,
                "lanczos": (theta, r),
                "why": f"not converged: its Bendixson bound (the Lanczos value moved by {SKIP_MARGIN:g}·ρ, ρ the "
                "larger of its residual and its last move) plus the rounding error is below a converged "
                "component of every check it feeds, so it cannot change a residual",
            }
            return True
        return False

    def _bound(self, c: str, k: str, theta: float, rho: float) -> float:
        """The Bendixson bound of component ``c`` in check ``k`` from the Ritz value ``θ`` of its
        extreme, taken within ``SKIP_MARGIN·ρ`` (``ρ = 0``: the Ritz value's own, a lower bound)."""
        if c == "im":
            return math.sqrt(max(theta + SKIP_MARGIN * rho, 0.0))
        x = theta - SKIP_MARGIN * rho if c == "low" else theta + SKIP_MARGIN * rho
        return _component(k, c, complex(x), self.s_b)

    def _refine(self, c: str, v: dict) -> None:
        """Refine the extreme of ``c`` against the residual components ``v`` by one Lanczos run
        from the seeded start (with the other end of ``H_S`` when that is a candidate pending in the
        same check: on the random walk 10 products for both instead of 10 + 8). ``ρ`` is taken as
        ``max(ρ, |θ − θ_prev|)``: the Ritz value must also have settled since the previous check
        (an early Ritz value may be far from the extreme). Not from the Ritz vectors
        :func:`_extremes_krylov` reached (2–6 products fewer on four random ``n = 64`` walks): from
        a Ritz vector the first Ritz values move little, so settling says less (seed 3: ``θ_max``
        2.25 with ``max(ρ, move)`` 0.14 after 4 products, the extreme ≥ 2.59)."""
        e, n, d = self.e, self.e.n, self.e.d
        Hs, KtK, _, _ = _pi_operators(e, self.p)
        want = {c: v}
        for o in () if c == "im" else ("low", "high"):
            vo = self._reference_values(o) if o not in want and self.seen.get(o) == self.step else None
            if vo is not None and o not in self.refs and o not in self.refined:
                want[o] = vo
        ends = {_SKIP_ENDS[o]: o for o in want}
        hist: dict = {end: [] for end in ends}

        def eff(end, t, rho):  # the residual, or the move since the previous check if larger
            h = hist[end]
            if not h or h[-1] != t:
                h.append(t)
            return max(rho, abs(t - h[-2])) if len(h) > 1 else math.inf

        def done(end, t, rho, _an):
            o, vo = ends[end], want[ends[end]]
            if rho <= self.err or any(self._bound(o, k, t, 0.0) + self.err >= vo[k] for k in vo):
                return True  # converged, or hopeless (the Ritz value lies inside the spectrum)
            return all(self._bound(o, k, t, eff(end, t, rho)) + self.err < vo[k] for k in vo)

        v0 = torch.from_numpy(np.random.default_rng(self.seed).standard_normal(n * d)).to(e.a.device)
        op = block_op(KtK if c == "im" else Hs, n, d, self.cnt)
        out, _ = lanczos_ends(op, n * d, v0, tuple(ends), done, max_products=SKIP_CAP)
        for end, o in ends.items():
            theta, _, rho = out[end][0]
            self.refined[o] = (float(theta), eff(end, theta, rho))

    def _reference_values(self, c: str) -> dict | None:
        """``{check: largest converged reference component}`` for each check ``c`` feeds, or None
        when some check has no converged reference yet."""
        v = {}
        for k in self.feeds[c]:
            vals = [
                _ritz_component(k, o, self.state[o], self.s_b) for o in self.comps[k] if self.state.get(o) is not None
            ]
            if not vals:
                return None
            v[k] = max(vals)
        return v


def _ritz_component(name: str, comp: str, z: complex, s_b: float) -> float:
    """:func:`_component` at a Ritz value ``z`` of ``W`` (``Δ``'s is ``1 − z``; ``mod`` takes ``W``'s)."""
    return _component(name, comp, z if comp == "mod" else 1 - z, s_b)


#: scores of the eigenvalues ``z`` of ``W`` for each component (``Δ``'s eigenvalue is ``1 − z``)
_SCORES = {
    "im": lambda z: np.abs(z.imag),
    "low": lambda z: z.real,
    "high": lambda z: -z.real,
    "mod": lambda z: np.abs(z),
}


def null_start(V: torch.Tensor, AV: torch.Tensor) -> torch.Tensor:
    """The unit vector ``y = V s`` of the span of ``V`` (orthonormal columns, ``AV = W V``) with the
    smallest ``‖Δ y‖ = ‖(V − AV) s‖``: ``s`` the eigenvector of the smallest eigenvalue of the Gram
    ``(V − AV)ᵀ(V − AV)`` (a start vector: its accuracy does not enter any decision), on the host.

    Why (issue 22): the Arnoldi space of ``W`` is a GMRES-like space for ``Δ = I − W`` — polynomials
    in ``W`` that make ``(I − W) p(W) v0`` small — so its best vector leans on the smallest singular
    directions of ``Δ``, and the kernel search (Lanczos on ``ΔᵀΔ``) started there needs fewer steps
    to the same Ritz value. Measured (same stopping rule, ``σ_1(Δ)`` equal to 6 digits): random
    ``n = 64, d = 64, H = 4`` walks 72 → 44, 58 → 38, 90 → 74 steps; ``n = 512`` 80 → 54;
    MiniLM-sized 322 → 146; ``n = 24, d = 24, H = 12`` 60 → 28 (the start with a tenth of the seeded
    random vector added, as the kernel uses it)."""
    D = V - AV
    _, U = torch.linalg.eigh(D.T @ D)
    y = V @ U[:, 0]
    return (y / torch.linalg.vector_norm(y)).cpu()


def _arnoldi_krylov(
    e: FactoredBlocks, comps, seed: int, cnt: list, err: float, skip=None, starts: dict | None = None, b: int = 0
) -> dict:
    """The components ``comps`` of :func:`_arnoldi_extreme` from one restarted Arnoldi run on ``W``
    (:func:`~numerics.laplacian.krylov.arnoldi_ends`), each Ritz value to backward error ``ρ ≤ err``
    (an exact eigenvalue of ``W + E``, ``‖E‖ ≤ err``: the accuracy
    :func:`~numerics.laplacian.checks.spectrum_error` states for the dense solver). Falls back to
    :func:`_arnoldi_extreme` past :data:`KRYLOV_CAP` products. ``starts``: receives ``starts[b]``, the
    :func:`null_start` of the final Krylov space."""
    n, d = e.n, e.d
    N = n * d
    v0 = torch.from_numpy(np.random.default_rng(seed).standard_normal(N)).to(e.a.device)

    apply = block_op(e.apply, n, d, cnt)

    def op(X):
        if skip is not None:
            skip.step += X.shape[1]
        return apply(X)

    done = (lambda _c, _z, rho, _g: rho <= err) if skip is None else skip.done
    order = comps if skip is None else skip.order  # a candidate's references are checked before it
    keys = {c: _SCORES[c] for c in order}
    keep = None if starts is None else (lambda V, AV: starts.__setitem__(b, null_start(V, AV)))
    out, ok = arnoldi_ends(op, N, v0, keys, done, max_products=KRYLOV_CAP, tie=err, on_exit=keep)
    if not ok:
        if skip is not None:
            skip.dropped.clear()
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
