r"""The inner product, Dirichlet energy and parallel-section constraints of T3 as dense formulas
on explicit tensors (no walk object): :func:`pi_inner`, :func:`dirichlet_energy`,
:func:`parallel_constraints` (the matrix ``C``), :func:`parallel_gram` (``CᵀC`` without ``C``),
:func:`apply_constraints` (``C K``) and :func:`parallel_svd` (its singular values, by SVD of ``C`` or
eigendecomposition of ``CᵀC``). Used by the dense blocks, the checks and the dense kernel check;
imports nothing from the package. The documented ones are registered under
``numerics.laplacian.<name>``, where :mod:`numerics.laplacian` re-exports them."""

from __future__ import annotations

import torch

from numerics.contracts.declarations import Tensor, contract, finite_on_support, parallel_memory

__all__ = ["pi_inner", "dirichlet_energy", "parallel_constraints", "parallel_gram", "apply_constraints", "parallel_svd"]


@contract(x=Tensor("... n d"), y=Tensor("... n d"), pi=Tensor("... n", nonneg=True), name="numerics.laplacian.pi_inner")
def pi_inner(x: torch.Tensor, y: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """``<x, y>_π = Σ_i π_i x_iᵀ y_i`` for ``x, y`` ``(..., n, d)``, ``π`` ``(..., n)``."""
    return (pi[..., :, None] * x * y).sum((-1, -2))


@contract(
    P=Tensor("... n n", nonneg=True),
    O=Tensor("... n n d d", finite=False),
    pi=Tensor("... n", nonneg=True),
    x=Tensor("... n d"),
    after=finite_on_support("O", lambda a: a["P"] > 0),
    name="numerics.laplacian.dirichlet_energy",
)
def dirichlet_energy(P: torch.Tensor, O: torch.Tensor, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    r"""``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` for ``P`` ``(..., n, n)``, ``O`` ``(..., n, n, d, d)``,
    ``π`` ``(..., n)``, ``x`` ``(..., n, d)``. Edges with ``P_ij = 0`` contribute 0 (their ``O``,
    possibly NaN, is never read)."""
    sup = P > 0
    Oz = torch.where(sup[..., None, None], O, torch.zeros_like(O))
    Ox = torch.einsum("...ijab,...jb->...ija", Oz, x)
    diff = x[..., :, None, :] - Ox
    return 0.5 * (pi[..., :, None] * P * (diff**2).sum(-1)).sum((-1, -2))


@contract(
    O=Tensor("... n n d d", finite=False),
    support=Tensor("... n n", dtype="mask"),
    after=lambda a, s: (finite_on_support("O", lambda a: a["support"])(a, s), parallel_memory(a, s)),  # type: ignore[func-returns-value]
    name="numerics.laplacian.parallel_constraints",
)
def parallel_constraints(O: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""Constraint matrix ``C`` ``(..., n·n·d, n·d)`` of parallel sections: block row ``(i, j)`` is
    ``e_iᵀ ⊗ I − e_jᵀ ⊗ O_ij`` on edges of ``support`` and 0 elsewhere, so ``Cx = 0`` iff
    ``x_i = O_ij x_j`` on every edge (token-major ``x``)."""
    n, d = O.shape[-3], O.shape[-1]
    eye_n = torch.eye(n, dtype=O.dtype, device=O.device)
    eye_d = torch.eye(d, dtype=O.dtype, device=O.device)
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    # C[i, j, a, k, b] = δ_ik δ_ab − δ_jk O_ij[a, b]
    first = eye_n[:, None, None, :, None] * eye_d[None, None, :, None, :]  # (i, 1, a, k, b)
    first = first.expand(n, n, d, n, d)
    second = eye_n[None, :, None, :, None] * Oz[..., :, :, :, None, :]  # (..., i, j, a, k, b)
    C = (first - second) * support[..., :, :, None, None, None].to(O.dtype)
    return C.reshape(*O.shape[:-4], n * n * d, n * d)


def parallel_gram(O: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    r"""``G = CᵀC`` ``(..., nd, nd)`` for :func:`parallel_constraints` without forming ``C``:
    block ``(k, l)`` = ``Σ_{edges (i,j)} (δ_ik I − δ_jk O_ij)ᵀ (δ_il I − δ_jl O_ij)``."""
    n, d = O.shape[-3], O.shape[-1]
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    s = support.to(O.dtype)
    eye_n = torch.eye(n, dtype=O.dtype, device=O.device)
    eye_d = torch.eye(d, dtype=O.dtype, device=O.device)
    G = (s.sum(-1)[..., :, None, None, None] * eye_n[:, :, None, None]) * eye_d  # δ_kl outdeg(k) I
    OtO = (Oz.transpose(-1, -2) @ Oz).sum(-4)  # Σ_i O_ijᵀ O_ij, indexed by j
    G = G + eye_n[:, :, None, None] * OtO[..., :, None, :, :]
    G = G - Oz - Oz.transpose(-4, -3).transpose(-1, -2)
    return G.transpose(-3, -2).reshape(*O.shape[:-4], n * d, n * d)


def apply_constraints(O: torch.Tensor, support: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """``C K`` ``(n·n·d, m)`` for one walk: row block ``(i, j)`` = ``K_i − O_ij K_j`` on the support."""
    n, d = O.shape[-3], O.shape[-1]
    Kb = K.reshape(n, d, -1)
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    R = Kb[:, None] - torch.einsum("ijab,jbm->ijam", Oz, Kb)
    R = R * support[:, :, None, None].to(R.dtype)
    return R.reshape(n * n * d, -1)


def parallel_svd(O: torch.Tensor, support: torch.Tensor, max_entries: int = 1 << 22):
    """Singular values (descending), right singular vectors of ``C`` (parallel constraints) and
    whether the Gram path was used: an SVD of ``C`` when it is small, else an eigendecomposition of
    ``CᵀC`` (σ = √λ, accurate to √eps·‖C‖ only)."""
    n, d = O.shape[-3], O.shape[-1]
    if n * n * d * n * d <= max_entries:
        _, s, Vh = torch.linalg.svd(parallel_constraints(O, support), full_matrices=False)
        return s, Vh, False
    lam, V = torch.linalg.eigh(parallel_gram(O, support))
    lam, V = lam.flip(-1), V.flip(-1)
    return lam.clamp(min=0).sqrt(), V.transpose(-1, -2), True


# ---------------------------------------------------------------------------------------------
# the diagnostics
