r"""Spectra of the generator ``Δ = I − W`` of a connection walk: dense and matrix-free.

* :func:`dense_eigenvalues` — ``torch.linalg.eigvals`` of the dense token-major ``Δ``
  ``(..., nd, nd)`` (float64): the naive reference, ``O((nd)³)`` time and ``(nd)²`` memory.
* :func:`generator_operator` — a ``scipy.sparse.linalg.LinearOperator`` for ``Δ`` (or for the
  π-symmetrised ``S = D^{1/2} Δ D^{-1/2}``, ``D = diag(π) ⊗ I_d``) whose matvec is
  ``walk.apply``: heads-form walks stay factored (``Σ_h A^h X T_hᵀ`` or the low-rank factors), so
  the ``nd × nd`` matrix is never formed; one matvec costs what the attention layer costs.
* :func:`extreme_eigenvalues` — ARPACK on that operator. When ``Δ`` is self-adjoint in
  ``<x, y>_π = Σ π_i x_iᵀ y_i`` (T3: ``π_i B_ij = π_j B_jiᵀ``, checked matrix-free on random
  probes), ``S`` is symmetric with the same eigenvalues as ``Δ`` (``S = D^{1/2} Δ D^{-1/2}`` is a
  similarity) and Lanczos (``eigsh``) applies; otherwise implicitly restarted Arnoldi (``eigs``).

Why the symmetrisation is exact: ``(D W)ᵀ = D W`` iff ``π_i B_ij = (π_j B_ji)ᵀ`` blockwise, and then
``D^{1/2} W D^{-1/2} = D^{-1/2} (D W) D^{-1/2}`` is symmetric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.linalg import LinearOperator, eigs, eigsh

from numerics.contracts.declarations import Choice, Flag, Float, Int, Passthrough, Tensor, Walk, contract
from numerics.contracts.validate import as_tensor, batch_index, check_finite
from numerics.errors import DTypeError, NonFiniteError, ParameterError, ShapeError, UndefinedError
from numerics.markov import stationary_info
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk, as_walk, generator_dense

__all__ = [
    "SpectrumResult",
    "select",
    "dense_eigenvalues",
    "symmetrized_dense",
    "generator_operator",
    "pi_symmetry_residual",
    "extreme_eigenvalues",
]

F64 = torch.float64


@dataclass
class SpectrumResult:
    """``eigenvalues`` (numpy, sorted by real part then imaginary part; real dtype when the
    symmetric path was used), ``method`` (``"eigsh-pi-symmetrised"`` or ``"eigs"``),
    ``symmetric_residual`` (the π-symmetry probe residual, relative), ``pi`` (numpy or None),
    ``matvecs`` (operator applications used)."""

    eigenvalues: np.ndarray
    method: str
    symmetric_residual: float
    pi: np.ndarray | None
    matvecs: int


@contract(walk=Walk(), index=Passthrough())
def select(walk, index) -> ConnectionWalk:
    """The batch element ``index`` of a batched walk, in the same storage form (still factored)."""
    w = as_walk(walk)
    if index is None:
        return w
    idx = batch_index("index", index, tuple(w.batch_shape), full=False)
    if w.kind == "edges":
        return ConnectionWalk(kind="edges", P=w._P[idx], O=w._O[idx])
    T = w._T
    if T is not None and T.ndim > 3:
        T = T[idx]
    return ConnectionWalk(kind="heads", A=w._A[idx], T=T, W_O=w._W_O, W_V=w._W_V)


@contract(walk=Walk())
def dense_eigenvalues(walk) -> torch.Tensor:
    """Eigenvalues ``(..., nd)`` (complex128) of the dense ``Δ = I − W`` (naive reference)."""
    return torch.linalg.eigvals(generator_dense(walk))


_PI = Tensor("n", nonneg=True, group=None)


@contract(walk=Walk(), pi=_PI)
def symmetrized_dense(walk, pi) -> torch.Tensor:
    """Dense ``S = D^{1/2} Δ D^{-1/2}`` ``(..., nd, nd)``, ``D = diag(π) ⊗ I_d`` (reference)."""
    w = as_walk(walk)
    pi = as_tensor("pi", pi).to(F64)
    if bool((pi <= 0).any()):
        raise UndefinedError("π must be positive for D^{-1/2}", argument="pi")
    Dl = generator_dense(w)
    r = torch.sqrt(pi).repeat_interleave(w.d, dim=-1)
    return r[..., :, None] * Dl / r[..., None, :]


def _unbatched(walk, index) -> ConnectionWalk:
    w = select(walk, index)
    w = w.to(dtype=F64)
    if len(w.batch_shape):
        raise ShapeError(
            f"batched walk (batch shape {tuple(w.batch_shape)}): pass index= to choose one element", argument="walk"
        )
    return w


@contract(
    walk=Walk(), pi=Tensor("n", nonneg=True, group=None, optional=True), index=Passthrough(), counter=Passthrough()
)
def generator_operator(walk, *, pi=None, index=None, counter: list | None = None) -> LinearOperator:
    """Matrix-free ``Δ`` (``pi`` None) or ``S = D^{1/2} Δ D^{-1/2}`` as a float64 LinearOperator of
    shape ``(nd, nd)`` on token-major vectors; the matvec is ``x − walk.apply(x)``."""
    w = _unbatched(walk, index)
    n, d = w.n, w.d
    dev = w.device
    if pi is not None:
        p = as_tensor("pi", pi).to(device=dev, dtype=F64)
        check_finite("pi", p)
        if p.shape != (n,):
            raise ShapeError(f"expected ({n},), got {tuple(p.shape)}", argument="pi")
        if bool((p <= 0).any()):
            raise UndefinedError("π must be positive for the π-symmetrised operator", argument="pi")
        sq = torch.sqrt(p)[:, None]
    else:
        sq = None

    def mv(x):
        x = np.asarray(x)
        if counter is not None:
            counter[0] += 1
        X = torch.from_numpy(np.ascontiguousarray(x.reshape(n, d), dtype=np.float64)).to(dev)
        if sq is not None:
            Y = X / sq
            Y = Y - w._apply(Y)
            Y = Y * sq
        else:
            Y = X - w._apply(X)
        return Y.reshape(-1).cpu().numpy()

    return GeneratorOperator(mv, n, d)


class GeneratorOperator(LinearOperator):
    """The float64 ``(nd, nd)`` operator :func:`generator_operator` returns: its ``matvec`` takes a real,
    finite token-major vector ``x`` of shape ``(nd,)`` or ``(nd, 1)``; anything else is refused naming
    ``x`` (:class:`ShapeError` with the expected length, :class:`DTypeError`, :class:`NonFiniteError`;
    ``matmat`` likewise, naming ``X``) before scipy's own shape check or the walk sees it (a NaN vector
    gave NaN; a wrong length gave scipy's bare "dimension mismatch")."""

    def __init__(self, mv, n: int, d: int):
        self._mv, self.n, self.d = mv, n, d
        super().__init__(dtype=np.float64, shape=(n * d, n * d))

    def _matvec(self, x):
        return self._mv(x)

    def _check(self, name: str, x, matrix: bool):
        x = np.asanyarray(x)
        N = self.shape[1]
        if (x.ndim != 2 or x.shape[0] != N) if matrix else x.shape not in ((N,), (N, 1)):
            want = f"({N}, k)" if matrix else f"({N},) or ({N}, 1)"
            raise ShapeError(
                f"expected a token-major {'matrix' if matrix else 'vector'} of length n·d = {self.n}·{self.d} = {N} "
                f"(shape {want}), got shape {x.shape}",
                argument=name,
            )
        if x.dtype.kind not in "fiu":
            raise DTypeError(f"expected real values, got dtype {x.dtype}", argument=name)
        bad = int((~np.isfinite(x)).sum())
        if bad:
            raise NonFiniteError(f"{bad} NaN/inf entries (of {x.size}): Δx is defined for finite x", argument=name)
        return x

    def matvec(self, x):
        return super().matvec(self._check("x", x, matrix=False))

    def matmat(self, X):
        return super().matmat(self._check("X", X, matrix=True))


@contract(walk=Walk(), pi=_PI, probes=Int(lo=1), seed=Int(lo=0), index=Passthrough())
def pi_symmetry_residual(walk, pi, *, probes: int = 4, seed: int = 0, index=None) -> float:
    """Matrix-free test of ``(D W)ᵀ = D W``: ``max |uᵀ D W v − vᵀ D W u| / (‖D^{½}u‖ ‖D^{½}W v‖ +
    ‖D^{½}v‖ ‖D^{½}W u‖)`` over seeded random probe pairs (two matvecs per pair)."""
    w = _unbatched(walk, index)
    n, d = w.n, w.d
    p = as_tensor("pi", pi).to(device=w.device, dtype=F64)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    U = torch.randn(probes, n, d, generator=gen, dtype=F64).to(w.device)
    V = torch.randn(probes, n, d, generator=gen, dtype=F64).to(w.device)
    WU, WV = w._apply(U), w._apply(V)
    ip = lambda a, b: (p[:, None] * a * b).sum((-1, -2))
    nrm = lambda a: torch.sqrt(ip(a, a))
    num = (ip(U, WV) - ip(V, WU)).abs()
    den = nrm(U) * nrm(WV) + nrm(V) * nrm(WU)
    return float((num / den.clamp(min=1e-300)).max())


@contract(
    walk=Walk(),
    k=Int(lo=1),
    which=Choice(("BE", "SA", "LA", "LM")),
    pi=Tensor("n", nonneg=True, group=None, optional=True),
    symmetric=Flag(optional=True),
    index=Passthrough(),
    tol_arpack=Float(lo=0.0, closed=True),
    ncv=Int(lo=1, optional=True),
    maxiter=Int(lo=1, optional=True),
    seed=Int(lo=0),
)
def extreme_eigenvalues(
    walk,
    k: int = 10,
    *,
    which: str = "BE",
    pi=None,
    symmetric: bool | None = None,
    index=None,
    tol_arpack: float = 0.0,
    ncv: int | None = None,
    maxiter: int | None = None,
    seed: int = 0,
) -> SpectrumResult:
    r"""``k`` extreme eigenvalues of ``Δ = I − W`` without forming the ``nd × nd`` matrix.

    ``which``: ``"BE"`` (both ends: ``k//2`` smallest and ``k − k//2`` largest real parts),
    ``"SA"``/``"LA"`` (smallest / largest real part), ``"LM"`` (largest modulus).
    ``symmetric``: None = detect (``π`` = given ``pi`` or the walk's stationary distribution, then
    :func:`pi_symmetry_residual` ≤ ``tol``); True forces the π-symmetrised Lanczos path (``pi``
    then required or computed), False forces Arnoldi. ``tol_arpack`` 0 means machine precision.
    """
    w = _unbatched(walk, index)
    n, d = w.n, w.d
    N = n * d
    if not (1 <= k < N - 1):
        raise ParameterError(f"must satisfy 1 <= k < n·d − 1 = {N - 1} for ARPACK, got {k}", argument="k")
    if which not in ("BE", "SA", "LA", "LM"):
        raise ShapeError(f"which must be one of BE, SA, LA, LM, got {which!r}", argument="which")
    pi_v = None
    sym_res = math.nan
    if symmetric is not False:
        if pi is not None:
            pi_v = as_tensor("pi", pi).to(device=w.device, dtype=F64)
        else:
            info = stationary_info(w.walk_matrix.to(F64))
            if bool(info.unique) and bool((info.pi > 0).all()):
                pi_v = info.pi
            elif symmetric:
                raise UndefinedError("no unique positive stationary π; pass pi=", argument="walk")
        if pi_v is not None:
            sym_res = pi_symmetry_residual(w, pi_v, seed=seed)
            ok = sym_res <= tol(F64, N)
            if symmetric is None:
                symmetric = ok
            elif not ok:
                # forcing the symmetric path with a π that does not symmetrise Δ would return the
                # eigenvalues of a different operator: refused, never computed
                raise UndefinedError(
                    f"symmetric=True but Δ is not self-adjoint in <·,·>_π (π-symmetry residual "
                    f"{sym_res:.3e} > {tol(F64, N):.1e}): pass the stationary π or symmetric=None",
                    argument="pi" if pi is not None else "walk",
                )
        else:
            symmetric = False
    rng = np.random.default_rng(seed)
    v0 = rng.standard_normal(N)
    counter = [0]
    if symmetric:
        op = generator_operator(w, pi=pi_v, counter=counter)
        vals = eigsh(op, k=k, which=which, v0=v0, tol=tol_arpack, ncv=ncv, maxiter=maxiter, return_eigenvectors=False)
        vals = np.sort(np.real(vals))
        method = "eigsh-pi-symmetrised"
    else:
        op = generator_operator(w, counter=counter)
        if which == "BE":
            lo = eigs(
                op,
                k=max(k // 2, 1),
                which="SR",
                v0=v0,
                tol=tol_arpack,
                ncv=ncv,
                maxiter=maxiter,
                return_eigenvectors=False,
            )
            hi = (
                eigs(
                    op,
                    k=k - k // 2,
                    which="LR",
                    v0=v0,
                    tol=tol_arpack,
                    ncv=ncv,
                    maxiter=maxiter,
                    return_eigenvectors=False,
                )
                if k - k // 2 > 0
                else np.array([])
            )
            vals = np.concatenate([lo, hi])
        else:
            wmap = {"SA": "SR", "LA": "LR", "LM": "LM"}
            vals = eigs(
                op, k=k, which=wmap[which], v0=v0, tol=tol_arpack, ncv=ncv, maxiter=maxiter, return_eigenvectors=False
            )
        vals = vals[np.lexsort((vals.imag, vals.real))]
        method = "eigs"
    return SpectrumResult(vals, method, float(sym_res), None if pi_v is None else pi_v.cpu().numpy(), counter[0])
