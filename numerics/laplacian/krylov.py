r"""Krylov eigen-solvers of the factored diagnostics, with the stopping rule given by the caller:
thick-restart Lanczos for extreme eigenvalues of a symmetric matrix-free map
(:func:`lanczos_ends`, :func:`ritz_extreme`) and restarted Arnoldi for several extreme eigenvalues
of a non-symmetric one from one Krylov space (:func:`arnoldi_ends`).

Both keep ``op(V)`` beside the orthonormal basis ``V`` and report each Ritz pair's residual
``ρ = ‖op(y) − θ y‖`` computed from them (``y`` unit): ``θ`` is then an exact eigenvalue of ``op + E``
with ``‖E‖ ≤ ρ`` (a backward error, as for a backward-stable dense solver), and for a symmetric
``op`` an eigenvalue lies within ``ρ`` of ``θ``. The caller's ``done(key, θ, ρ, ‖G‖)`` says when a
pair is accurate enough for its decision (the spectrum checks: within the check's rounding error,
:mod:`numerics.laplacian.spectral`), so no product is spent past what the verdict can use. No ARPACK:
its fixed machine-precision rule spent 2–3× the products on the spectrum checks, and its own work
per step cost more than the products at ``n·d ≥ 3e4``. Vectors stay on ``v0``'s device.
Imports nothing from the package.

The bookkeeping per step (issue 22: at ``n·d = 4096`` it cost twice the products), first pass.
Measured on the random ``n = 64, d = 64, H = 4`` walk, one thread, the previous and the current
solver in the same process on the same operator: the 100-step search for the smallest eigenvalue of
``ΔᵀΔ`` 70 → 49 ms, the four Arnoldi extremes of ``W`` (69 products) 58 → 38 ms, with the same
products and the same Ritz values to 1e-14:

* the bases are stored column by column (:func:`_basis`): the operators get contiguous fields
  (strided ones made an ``apply`` 1.2× and a ``CᵀC`` product 1.7× slower);
* the **residual screen** (:func:`_certainly_pending`): a check first estimates every Ritz
  residual from the Krylov relation ``op V = V G + f e_jᵀ`` as ``‖f‖·|s_j|`` (``f`` is the
  continuation, computed anyway) and computes the explicit residuals (two ``N × j`` products per
  pair, 1.3 ms per Arnoldi check) only when no wanted pair certainly fails ``done``; decisions are
  still taken on explicit residuals only, so the stops are the same (``tests/numerics/test_krylov.py``);
* Arnoldi checks every :data:`ARNOLDI_CHECK_EVERY` steps instead of 4;
* each product is stored as a column (``AV[:, j] = y[:, 0]``), not as an ``(N, 1)`` slice (17 µs
  against 3 µs per step at ``N = 4096``), and each new basis vector is divided by its norm in place.

Second pass (in-process A/B, old and new alternated, ``process_time`` medians over 9–11 rounds on a
loaded 2-core machine): per step at ``N = 4096`` with a trivial operator (``j ≤ 60``) Lanczos
0.32 → 0.18 ms, Arnoldi 0.23 → 0.18 ms; on the random walk the ker Δ search (72 products)
44 → 31 ms, the Arnoldi run on ``W`` (73 products) 33 → 29 ms, every Krylov run of a diagnose
123 → 98 ms, ``diagnose_factored`` 140 → 125 ms. Every run of ``diagnose`` on the random and the
reversible ``n = 64`` walks makes the same products and stops at the same step, with Ritz values
within 1.4e-13 relative (the zero eigenvalues of ``H_S`` within ``eps·‖op‖``). What changed:

* Lanczos is the textbook one with full reorthogonalisation: the three-term recurrence (``O(N)``)
  and one reorthogonalisation pass against the whole basis, repeated by the DGKS criterion (it
  only removes rounding, so it rarely repeats): two ``N × j`` products per step instead of four
  (the projection ``Vᵀop(v)``, the first pass with those coefficients, and the DGKS pass that
  nearly always ran, since the projection removes most of ``op(v)``). The projected matrix is
  then tridiagonal, with an arrow after a thick restart (its column computed explicitly once),
  kept on the host;
* the checks' Ritz pairs come from LAPACK's subset solvers (:func:`_ritz_pairs`): bisection and
  inverse iteration (``dstebz``, ``dstein``) for the wanted pairs and the other end's value while
  the matrix is tridiagonal (35 µs at ``j = 40`` against 108 µs for ``eigh``; inside a run, with
  cold caches, 40–60 µs against 100–300 µs), ``dsyevr`` index ranges on the arrow;
* Arnoldi's projected matrix is Hessenberg (its row computed only after a restart: one ``N × j``
  product less per step), with the DGKS coefficients added to its column (as ARPACK does); a check
  takes the Ritz values by ``eigvals`` (torch's: 0.48 ms at ``j = 56`` against 1.15 ms for numpy's
  ``eig``) and the vectors of the candidates only, by inverse iteration (:func:`~numerics.laplacian.algebra.inverse_iteration_eigenvectors`,
  about 75 µs per conjugate pair); a full ``eig`` only at a restart;
* on the CPU the per-step arithmetic runs on numpy views of the basis (:class:`_Basis`): a
  Lanczos step's dozen small operations 90 → 71 µs; other devices keep the torch steps.

Rejected (measured the same way): checking Lanczos every 3 or 4 steps (first pass: the ``ΔᵀΔ``
search 43 ms either way vs 41 ms at 2); ``dsyevr`` subsets on the tridiagonal matrix too (at
``j = 60`` one end plus the other end's value 127 µs, ``dstebz``/``dstein`` 45 µs, ``eigh`` 147 µs); inverse
iteration through scipy's ``lu_factor``/``lu_solve`` (their argument checks: 0.9 ms per Arnoldi
check, as much as the ``eig`` it replaced) and numpy's ``eigvals`` (0.82 ms at ``j = 60`` against
torch's 0.55 ms); Arnoldi with ``max_dim`` 40 (96 products, slower) or 80 (3 % faster, within
the noise)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from scipy.linalg import lapack

from numerics.laplacian.algebra import inverse_iteration_eigenvectors

F64 = torch.float64
EPS = float(torch.finfo(F64).eps)
#: Lanczos steps between two Rayleigh–Ritz checks of :func:`lanczos_ends` (at ``n·d = 4096`` the small
#: eigensolve and the wanted pairs' residuals cost about as much as a product: the 100-product ker Δ
#: search of a random ``n = 64, d = 64, H = 4`` walk took 51 ms checking every step, 46–47 ms every
#: second step with the same products; at most ``CHECK_EVERY − 1`` products past the stopping point)
CHECK_EVERY = 2
#: Arnoldi steps between two Ritz checks of :func:`arnoldi_ends` (then a dense ``eig`` of the projected
#: matrix, up to 60 × 60: about ten products' time at ``n·d = 4096``; now ``eigvals`` and the
#: candidates' vectors, about half of that). Measured on the random
#: ``n = 64, d = 64, H = 4`` walk (its four extremes to the spectrum checks' rounding error, one
#: thread, same process, time in units of one ``apply``): 4 steps 69 products in 419 applies' time,
#: 8 steps 73 in 379, 12 steps 77 in 486 (before the residual screen: 4 steps 652, 8 steps 472)
ARNOLDI_CHECK_EVERY = 8

__all__ = ["lanczos_ends", "ritz_extreme", "arnoldi_ends", "block_op", "arpack_rule"]


#: the per-step vector arithmetic of a basis on the CPU runs on numpy views of the same memory
#: (:class:`_Basis`): a numpy call costs about 1 µs, a torch one 2–4 µs, and a Lanczos step makes
#: about ten of them besides its two ``N × j`` products (at ``N = 4096``, ``j = 40``: 90 → 71 µs)
NUMPY_STEPS = True


class _Basis:
    """``V`` and ``op(V)`` (torch, on ``v0``'s device: the operator, the checks and the restarts use
    these) and ``v``, ``av``: the same memory as numpy arrays on the CPU (:data:`NUMPY_STEPS`),
    else the tensors themselves, for the per-step arithmetic (:func:`_orth_step`)."""

    def __init__(self, N: int, m: int, dev):
        self.V, self.AV = _basis(N, m, dev), _basis(N, m, dev)
        cpu = NUMPY_STEPS and self.V.device.type == "cpu"
        self.v: Any = self.V.numpy() if cpu else self.V
        self.av: Any = self.AV.numpy() if cpu else self.AV

    def start(self, op, v0: torch.Tensor) -> None:
        """Column 0: ``v0`` normalised, and ``op`` of it."""
        self.V[:, 0] = v0.to(F64) / torch.linalg.vector_norm(v0.to(F64))
        self.AV[:, 0] = op(self.V[:, :1])[:, 0]

    def push(self, op, j: int, f, nf: float) -> None:
        """Column ``j``: ``f / nf`` (written in place) and ``op`` of it."""
        if isinstance(f, np.ndarray):
            np.divide(f, nf, out=self.v[:, j])
        else:
            torch.div(f, nf, out=self.v[:, j])
        self.AV[:, j] = op(self.V[:, j : j + 1])[:, 0]

    def coefficients(self, c: np.ndarray):
        """Host coefficients ``c`` as the step arithmetic takes them."""
        return c if isinstance(self.v, np.ndarray) else torch.from_numpy(np.ascontiguousarray(c)).to(self.V.device)

    def step(self, r: torch.Tensor):
        """A torch vector (of the basis's device) as the step arithmetic takes it."""
        return r.numpy() if isinstance(self.v, np.ndarray) else r


def _norm(x) -> float:
    return math.sqrt(float(x @ x)) if isinstance(x, np.ndarray) else float(torch.linalg.vector_norm(x))


def _minus(r, Vj, c):
    """``r − Vj c`` (a new vector)."""
    return r - Vj @ c if isinstance(r, np.ndarray) else torch.addmv(r, Vj, c, alpha=-1.0)


def _host(c) -> np.ndarray:
    return c if isinstance(c, np.ndarray) else c.cpu().numpy()


def _orth_step(V, j: int, r, c=None):
    """``(r', ‖r'‖, ‖r‖, d)``: ``r`` orthogonalised against ``V[:, :j]`` (classical Gram–Schmidt,
    repeated when the first pass removed more than ``1 − 1/√2`` of its norm: the
    Daniel–Gragg–Kaufman–Stewart criterion). ``c``: the first pass's coefficients ``V[:, :j]ᵀ r``
    when already at hand (the continuation of a Krylov sequence: the projected matrix's last column);
    ``d``: the coefficients removed beyond ``c`` (None when no pass beyond ``c`` ran). ``V``, ``r``,
    ``c``: numpy arrays or tensors alike (:class:`_Basis`)."""
    Vj = V[:, :j]
    n0 = _norm(r)
    d = Vj.T @ r if c is None else None
    r = _minus(r, Vj, c if d is None else d)
    nr = _norm(r)
    if nr < 0.7071 * n0:
        d2 = Vj.T @ r
        r = _minus(r, Vj, d2)
        nr = _norm(r)
        d = d2 if d is None else d + d2
    return r, nr, n0, d


def _basis(N: int, m: int, dev) -> torch.Tensor:
    """An ``(N, m)`` basis stored column by column (each column contiguous: the operators get
    contiguous fields — strided ones made the factored products up to 1.7× slower)."""
    return torch.empty(m, N, dtype=F64, device=dev).T


def block_op(fn, n: int, d: int, counter: list | None = None):
    """A map ``fn`` of ``(p, n, d)`` fields as the map of ``(n·d, p)`` blocks the solvers here take
    (each column one field), adding the columns to ``counter[0]`` when given."""

    def op(X):
        if counter is not None:
            counter[0] += X.shape[1]
        return fn(X.T.reshape(-1, n, d)).reshape(-1, n * d).T

    return op


def _times(V: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    """``V X`` for a basis stored column by column (:func:`_basis`), computed as ``(Xᵀ Vᵀ)ᵀ``, a
    product of row-major operands whose result is again stored column by column: at ``N = 4096``,
    ``V`` ``N × 60``, ``X`` ``60 × 20``, one thread, 0.86 → 0.26 ms (the restarts and the Ritz
    vectors of the checks)."""
    return (X.T @ V.T).T


def lanczos_ends(
    op,
    N: int,
    v0: torch.Tensor,
    ends,
    done,
    max_dim: int = 40,
    keep: int = 8,
    max_products=None,
    k: int = 1,
    per_end: bool = False,
):
    """``({end: [(θ, y, ρ), …]}, converged)``: the ``k`` Ritz pairs nearest each end in ``ends`` ⊆
    ``("min", "max")`` (nearest first) of a symmetric matrix-free ``op`` (``(N, p) → (N, p)``) by
    thick-restart Lanczos with full reorthogonalisation: the three-term recurrence, once
    reorthogonalised against the basis (twice by the DGKS criterion), with ``op(V)`` kept, restarted
    from the ``max(keep, 2k)`` Ritz vectors nearest each wanted end at ``max_dim`` (the projected
    matrix is tridiagonal, with an arrow after a restart). Checks every :data:`CHECK_EVERY` steps (and
    at each restart, at the cap, and when the space turns invariant) and stops when
    ``done(end, θ, ρ, anorm)`` for every pair (``anorm``: largest ``|θ|``), when the space is
    invariant, or (``converged`` False) after ``max_products`` products. A check computes the
    explicit residuals only past the screen (:func:`_certainly_pending`). ``per_end``: ``done(end,
    [(θ, ρ), …], anorm)`` decides each end from all its pairs at once (nearest first; a rule that
    uses the next pair, e.g. Kato–Temple), monotone in every ``ρ``."""
    max_dim = min(max(max_dim, 3 * k), N)
    if per_end:  # the screen and the checks below ask per pair: a pair is done when its end is
        by_end = done
        done = None
    keep = max(keep, 2 * k)
    dev = v0.device
    B = _Basis(N, max_dim, dev)
    B.start(op, v0)
    V, AV = B.V, B.AV
    T = np.zeros((max_dim, max_dim))  # VᵀAV (host): tridiagonal, with an arrow after a restart
    T[0, 0] = float(V[:, 0] @ AV[:, 0])
    j, products, lo = 1, 1, 0  # lo: the first nonzero row of T's column j − 1
    restarted = False  # T is tridiagonal until the first restart
    cap = float("inf") if max_products is None else max_products
    while True:
        more = j < N and products < cap
        f, nf, n0 = _lanczos_continuation(B, T, j, lo) if more else (None, 0.0, 1.0)
        invariant = more and nf <= 1e-10 * n0
        if more and not invariant and j % CHECK_EVERY and j < max_dim:  # between checks
            lo = _lanczos_expand(op, B, T, j, f, nf, arrow=False)
            products += 1
            j += 1
            continue
        wanted = [
            (end, i)
            for end in ends
            for i in (range(min(k, j)) if end == "min" else range(j - 1, max(j - 1 - k, -1), -1))
        ]
        th, S, anorm = _ritz_pairs(T, j, not restarted, [i for _, i in wanted])
        pend = j < k
        if more and not invariant:
            # the screen: op V = V T + f e_jᵀ, so ‖f‖·|s_j| estimates each Ritz residual
            est = [nf * abs(float(S[j - 1, c])) for c in range(len(wanted))]
            if per_end:
                slack = _screen_slack(j, anorm)
                pend = pend or any(
                    not by_end(
                        e,
                        [(float(th[c]), max(0.5 * est[c] - slack, 0.0)) for c, (w, _) in enumerate(wanted) if w == e],
                        anorm,
                    )
                    for e in ends
                )
            else:
                groups = [[(end, float(th[c]), est[c])] for c, (end, _) in enumerate(wanted)]
                pend = pend or _certainly_pending(groups, done, anorm, j)
        if not pend or not more or invariant:
            out: dict = {}
            Sw = torch.from_numpy(S).to(dev)
            Y, AY = _times(V[:, :j], Sw), _times(AV[:, :j], Sw)
            for c, (end, _) in enumerate(wanted):
                t = float(th[c])
                rho = float(torch.linalg.vector_norm(AY[:, c] - t * Y[:, c]))
                out.setdefault(end, []).append((t, Y[:, c], rho))
                if not per_end:
                    pend |= not done(end, t, rho, anorm)
            if per_end:
                pend |= any(not by_end(e, [(t, rho) for t, _, rho in out[e]], anorm) for e in out)
            if not pend or j >= N or invariant:
                return out, True
            if not more:
                return out, False
        arrow = j >= max_dim
        if arrow:  # thick restart: the `keep` Ritz vectors nearest each wanted end (f ⊥ them)
            assert f is not None
            j = _thick_restart(V, AV, T, j, keep, ends, not restarted)
            f, nf, _, _ = _orth_step(B.v, j, f)
            restarted = True
        lo = _lanczos_expand(op, B, T, j, f, nf, arrow)
        products += 1
        j += 1


def _lanczos_continuation(B: _Basis, T: np.ndarray, j: int, lo: int):
    """``(f, ‖f‖, ‖op(v)‖)`` for the last basis vector ``v = V[:, j−1]``: ``f = op(v) − V T[:, j−1]``
    (the three-term recurrence; the arrow after a restart), reorthogonalised against ``V[:, :j]``
    (once, twice by the DGKS criterion: :func:`_orth_step`)."""
    V, AV = B.v, B.av
    c = T[lo:j, j - 1]
    if j - lo <= 2:
        if isinstance(V, np.ndarray):
            f = AV[:, j - 1] - float(c[-1]) * V[:, j - 1]
            if j - lo == 2:
                f -= float(c[0]) * V[:, j - 2]
        else:
            f = torch.add(AV[:, j - 1], V[:, j - 1], alpha=-float(c[-1]))
            if j - lo == 2:
                f.sub_(V[:, j - 2], alpha=float(c[0]))
    else:
        f = _minus(AV[:, j - 1], V[:, lo:j], B.coefficients(c))
    f, nf, n1, _ = _orth_step(V, j, f)
    return f, nf, math.sqrt(float(c @ c) + n1 * n1)


def _lanczos_expand(op, B: _Basis, T: np.ndarray, j: int, f, nf: float, arrow: bool) -> int:
    """Column ``j`` of the Lanczos basis: ``v = f / ‖f‖`` (written in place), ``op(v)`` and column
    ``j`` of ``T``: ``β = ‖f‖`` and ``α = vᵀop(v)``, or after a restart (``arrow``) the whole column
    ``V[:, :j+1]ᵀ op(v)``; returns the first nonzero row of that column."""
    B.push(op, j, f, nf)
    V, AV = B.v, B.av
    if arrow:
        h = _host(V[:, : j + 1].T @ AV[:, j])
        T[: j + 1, j], T[j, : j + 1] = h, h
        return 0
    T[j - 1, j] = T[j, j - 1] = nf
    T[j, j] = float(V[:, j] @ AV[:, j])
    return j - 1


def _screen_slack(j: int, anorm: float) -> float:
    """Room for the rounding of the Krylov relation ``op V = V G + f e_jᵀ`` (Gram–Schmidt with
    reorthogonalisation and the small eigensolves: a few ``j·eps·‖op‖``), with a factor 1000."""
    return 1e3 * j * EPS * anorm


def _certainly_pending(groups, done, anorm: float, j: int) -> bool:
    """The screen of the Ritz checks: whether some group of candidate Ritz pairs ``[(key, θ, est), …]``
    (a wanted pair alone; for :func:`arnoldi_ends` a key's tied candidates) has no member that passes
    ``done`` even at ``max(½·est − slack, 0)`` (:func:`_screen_slack`), a value below its explicit
    residual: ``est = ‖f‖·|s_j|`` is that residual in exact arithmetic (``op V = V G + f e_jᵀ``).
    ``done`` is monotone in ``ρ`` (every caller's rule is "ρ small enough", possibly or-ed with a
    condition on ``θ``), so the explicit residuals would fail it too: the estimate only skips a
    check's explicit residuals (two ``N × j`` products per pair), it never decides a stop."""
    slack = _screen_slack(j, anorm)
    return any(not any(done(key, t, max(0.5 * est - slack, 0.0), anorm) for key, t, est in g) for g in groups)


def _thick_restart(V: torch.Tensor, AV: torch.Tensor, T: np.ndarray, j: int, keep: int, ends, tri: bool) -> int:
    """Restart of :func:`lanczos_ends` on the ``keep`` Ritz vectors nearest each wanted end (in
    place): ``T`` becomes their Ritz values' diagonal; returns the new basis size."""
    kk = min(keep, j)
    idx = sorted(set(range(kk) if "min" in ends else ()) | set(range(j - kk, j) if "max" in ends else ()))
    th, S, _ = _ritz_pairs(T, j, tri, idx)
    sel = torch.from_numpy(S).to(V.device)
    j = len(idx)
    V[:, :j], AV[:, :j] = _times(V, sel), _times(AV, sel)
    T[:] = 0.0
    T[:j, :j] = np.diag(th)
    return j


def _ritz_pairs(T: np.ndarray, j: int, tri: bool, idx: list) -> tuple[np.ndarray, np.ndarray, float]:
    """``(θ, S, max |θ|)``: the eigenvalues of the symmetric ``T[:j, :j]`` with the indices ``idx``
    (of the ascending spectrum) and their unit eigenvectors (the columns of ``S``), and the largest eigenvalue modulus,
    by LAPACK's subset solvers: bisection and inverse iteration (``dstebz``, ``dstein``) while
    ``T`` is tridiagonal (``tri``), ``dsyevr`` with an index range after a restart (the arrow)."""
    if j == 1:  # (LAPACK's wrappers take no empty off-diagonal)
        return np.full(len(idx), T[0, 0]), np.ones((1, len(idx))), abs(float(T[0, 0]))
    uniq = sorted(set(idx))
    runs: list = []  # contiguous index ranges
    for i in uniq:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    ends = [r for r in ([0, 0], [j - 1, j - 1]) if not any(a <= r[0] <= b for a, b in runs)]
    if tri:
        d, e = T.diagonal()[:j].copy(), T.diagonal(1)[: j - 1].copy()
        ws, bs = [], []
        for a, b in runs + ends:
            m, w, iblock, isplit, info = lapack.dstebz(d, e, 2, 0.0, 0.0, a + 1, b + 1, 0.0, "B")
            if info or m != b - a + 1:
                raise np.linalg.LinAlgError(f"dstebz: info {info}, {m} of {b - a + 1} eigenvalues")
            ws.append(w[:m])
            bs.append(iblock)
        nv = len(uniq)
        if len(runs) == 1 and isplit[0] == j:  # one run, T unreduced: dstebz's output as dstein takes it
            th = ws[0]
            z, info = lapack.dstein(d, e, th, bs[0], isplit)
            S = z[:, :nv]
        else:  # dstein takes them block by block, ascending in each
            srt = [np.argsort(w, kind="stable") for w in ws[: len(runs)]]  # a split T: listed by block
            th = np.concatenate([w[o] for w, o in zip(ws, srt)])
            bl = np.concatenate([ib[: len(w)][o] for ib, w, o in zip(bs, ws, srt)])
            order = np.lexsort((th, bl))
            ib = np.zeros(j, dtype=bl.dtype)
            ib[:nv] = bl[order]
            z, info = lapack.dstein(d, e, th[order], ib, isplit)
            S = np.empty((j, nv))
            S[:, order] = z[:, :nv]
        if info:
            raise np.linalg.LinAlgError(f"dstein: info {info}")
        vals = np.concatenate(ws)
    else:
        ths, Ss, ws = [], [], []
        for a, b in runs + ends:
            vec = [a, b] in runs
            w, z, m, _, info = lapack.dsyevr(T[:j, :j], compute_v=int(vec), range="I", il=a + 1, iu=b + 1)
            if info or m != b - a + 1:
                raise np.linalg.LinAlgError(f"dsyevr: info {info}, {m} of {b - a + 1} eigenvalues")
            ws.append(w[:m])
            if vec:
                ths.append(w[:m])
                Ss.append(z[:, :m])
        th, S, vals = np.concatenate(ths), np.ascontiguousarray(np.concatenate(Ss, axis=1)), np.concatenate(ws)
    if uniq != idx:
        pos = {i: p for p, i in enumerate(uniq)}
        sel = [pos[i] for i in idx]
        th, S = th[sel], S[:, sel]
    return th, S, float(np.abs(vals).max())


def arpack_rule(rtol: float):
    """ARPACK's relative stopping rule as a ``done`` of :func:`lanczos_ends`:
    ``ρ ≤ rtol·max(|θ|, eps^{2/3}·‖op‖_est)`` (``‖op‖_est`` the largest ``|θ|``)."""
    return lambda _end, t, rho, an: rho <= rtol * max(abs(t), EPS ** (2 / 3) * an)


def ritz_extreme(op, N: int, v0: torch.Tensor, smallest: bool, rtol: float, max_dim: int = 40, keep: int = 8):
    """``(θ, y, ρ)``: the smallest (``smallest``) or largest eigenvalue of a symmetric matrix-free
    ``op`` by :func:`lanczos_ends`, stopped at :func:`arpack_rule` ``(rtol)``; the cap on products is
    the caller's (its ``op`` raises)."""
    end = "min" if smallest else "max"
    res, _ = lanczos_ends(op, N, v0, (end,), arpack_rule(rtol), max_dim, keep)
    return res[end][0]


def arnoldi_ends(
    op,
    N: int,
    v0: torch.Tensor,
    keys: dict,
    done,
    max_dim: int = 60,
    keep: int = 24,
    max_products=None,
    tie=0.0,
    on_exit=None,
):
    """``({name: (θ, ρ)}, converged)``: for each ``keys[name]`` (a score of complex eigenvalues,
    numpy-vectorised) the Ritz value of a non-symmetric matrix-free ``op`` with the largest score
    and its residual norm, from one Krylov space: Arnoldi (classical Gram–Schmidt, repeated by the
    DGKS criterion; the projected matrix ``G`` is Hessenberg, with a full row after a restart) with
    ``op(V)`` kept, restarted at ``max_dim`` from the real invariant span of the ``keep // len(keys)``
    best Ritz vectors of each key (explicit Krylov–Schur). Among Ritz values whose scores tie (within
    ``tie``, e.g. the real eigenvalues of a ``max |Im|`` key) the one with the smallest residual is
    taken. Stops when ``done(name, θ, ρ, ‖G‖)`` for every key, when the space is invariant, or
    (``converged`` False) after ``max_products`` products. Checks every :data:`ARNOLDI_CHECK_EVERY`
    steps: the Ritz values (``eigvals``) and, by inverse iteration, the vectors of the candidates
    only (all of them by ``eig`` at a restart), computing the explicit residuals only past the
    screen (:func:`_certainly_pending`). ``on_exit(V, op(V))``, when given, sees the final basis
    (``N × j``, orthonormal columns) and its products before the return."""
    max_dim = min(max_dim, N)
    dev = v0.device
    B = _Basis(N, max_dim, dev)
    B.start(op, v0)
    V, AV = B.V, B.AV
    G = np.zeros((max_dim, max_dim))
    G[0, 0] = float(V[:, 0] @ AV[:, 0])
    j, products = 1, 1
    cap = float("inf") if max_products is None else max_products
    per = max(keep // max(len(keys), 1), 2)
    out: dict = {}

    def finish(converged: bool):
        if on_exit is not None:
            on_exit(V[:, :j], AV[:, :j])
        return out, converged

    while True:
        more = j < N and products < cap
        f, nf = _arnoldi_continuation(B, G, j) if more else (None, 0.0)
        invariant = more and nf <= 1e-12 * max(float(np.abs(G[:j, :j]).max()), 1e-300)
        if more and not invariant and j % ARNOLDI_CHECK_EVERY and j < max_dim:  # between checks
            _arnoldi_expand(op, B, G, j, f, nf, row=False)
            products += 1
            j += 1
            continue
        Gj = G[:j, :j]
        restart = more and not invariant and j >= max_dim
        if restart:  # every vector is needed for the restart
            th, S = np.linalg.eig(Gj)
        else:
            th = torch.linalg.eigvals(torch.from_numpy(Gj)).numpy()
        gnorm = float(np.abs(th).max())
        best_sets, picks = [], {}
        for name, score in keys.items():
            sc = score(th)
            order = np.argsort(-sc)
            best_sets.append(order[:per])
            # ties (within ``tie``, e.g. the real eigenvalues of a max |Im| key): the smallest residual
            picks[name] = [int(i) for i in order[:8] if sc[i] >= sc[order[0]] - tie]
        cols = sorted({i for c in picks.values() for i in c})
        Sc = S[:, cols] if restart else inverse_iteration_eigenvectors(Gj, th[cols], gnorm)
        Sc = Sc / np.linalg.norm(Sc, axis=0)
        pending = False
        if more and not invariant:
            # the screen (as in lanczos_ends): op V = V G + f e_jᵀ, ‖f‖·|s_j| estimates each residual
            est = dict(zip(cols, (nf * np.abs(Sc[j - 1])).tolist()))
            groups = [[(name, complex(th[i]), est[i]) for i in picks[name]] for name in keys]
            pending = _certainly_pending(groups, done, gnorm, j)
            if pending and not restart:  # certainly pending: continue the sequence with f
                _arnoldi_expand(op, B, G, j, f, nf, row=False)
                products += 1
                j += 1
                continue
        if not pending:
            rho_of = dict(zip(cols, _ritz_residuals(V[:, :j], AV[:, :j], th[cols], Sc)))
            for name in keys:
                rho, i = min((rho_of[i], i) for i in picks[name])
                out[name] = (complex(th[i]), rho)
                pending |= not done(name, complex(th[i]), rho, gnorm)
        if not pending or j >= N or invariant:
            return finish(True)
        if products >= cap:
            return finish(False)
        if not restart:
            _arnoldi_expand(op, B, G, j, f, nf, row=False)
            products += 1
            j += 1
            continue
        # restart on the real span of the wanted Ritz vectors
        idx = sorted(set(np.concatenate(best_sets).tolist()))
        idx = sorted(set(idx) | {int(np.argmin(np.abs(th - np.conj(th[i])))) for i in idx})
        S = S / np.linalg.norm(S, axis=0)
        P = np.concatenate([S[:, idx].real, S[:, idx].imag], axis=1)
        U, sv, _ = np.linalg.svd(P, full_matrices=False)
        Y = U[:, sv > 1e-8 * sv[0]]
        k = Y.shape[1]
        Yt = torch.from_numpy(np.ascontiguousarray(Y)).to(device=dev)
        V[:, :k], AV[:, :k] = _times(V, Yt), _times(AV, Yt)
        G[:k, :k] = Y.T @ Gj @ Y
        G[k:, :] = 0.0
        G[:, k:] = 0.0
        Rk = AV[:, :k] - _times(V[:, :k], torch.from_numpy(np.ascontiguousarray(G[:k, :k])).to(device=dev))
        r = Rk[:, int(torch.linalg.vector_norm(Rk, dim=0).argmax())]
        j = k
        r, nr, _, _ = _orth_step(B.v, j, B.step(r))
        if nr <= 1e-12 * max(gnorm, 1e-300):
            return finish(True)
        _arnoldi_expand(op, B, G, j, r, nr, row=True)
        products += 1
        j += 1


def _arnoldi_continuation(B: _Basis, G: np.ndarray, j: int):
    """``(f, ‖f‖)``: ``op(v) − V G[:j, j−1]`` for the last basis vector ``v = V[:, j−1]`` (the
    projection computed with it), reorthogonalised by the DGKS criterion (:func:`_orth_step`), whose
    coefficients are added to that column of ``G``."""
    f, nf, _, d = _orth_step(B.v, j, B.av[:, j - 1], B.coefficients(G[:j, j - 1]))
    if d is not None:
        G[:j, j - 1] += _host(d)
    return f, nf


def _arnoldi_expand(op, B: _Basis, G: np.ndarray, j: int, f, nf: float, row: bool) -> None:
    """Column ``j`` of the Arnoldi basis: ``v = f / ‖f‖`` (in place), ``op(v)``, its projection
    ``G[:j+1, j] = V[:, :j+1]ᵀ op(v)`` (the next continuation's Gram–Schmidt coefficients) and row
    ``j`` of ``G``: ``‖f‖`` below the diagonal (Hessenberg), or after a restart (``row``) the whole
    row ``vᵀ op(V[:, :j])``."""
    B.push(op, j, f, nf)
    V, AV = B.v, B.av
    G[: j + 1, j] = _host(V[:, : j + 1].T @ AV[:, j])
    if row:
        G[j, :j] = _host(V[:, j] @ AV[:, :j])
    else:
        G[j, j - 1] = nf


def _ritz_residuals(V: torch.Tensor, AV: torch.Tensor, th: np.ndarray, S: np.ndarray) -> list:
    """``‖AV s − θ V s‖`` for each unit complex column ``s`` of ``S`` with its Ritz value ``θ``, in
    real arithmetic."""
    c = len(th)
    X = torch.from_numpy(np.ascontiguousarray(np.concatenate([S.real, S.imag], axis=1))).to(V.device)
    VX, AX = _times(V, X), _times(AV, X)
    tr = torch.tensor(th.real, dtype=F64, device=V.device)
    ti = torch.tensor(th.imag, dtype=F64, device=V.device)
    re = AX[:, :c] - VX[:, :c] * tr + VX[:, c:] * ti
    im = AX[:, c:] - VX[:, c:] * tr - VX[:, :c] * ti
    return torch.sqrt(torch.linalg.vector_norm(re, dim=0) ** 2 + torch.linalg.vector_norm(im, dim=0) ** 2).tolist()
