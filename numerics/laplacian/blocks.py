r"""The block-access protocol of :mod:`numerics.laplacian` and its two implementations.

Every check of :mod:`numerics.laplacian.checks` reads the walk through a small *block algebra*: an object with the per-edge quantities
the checks need, so that the same tolerance rule and the same verdict logic serve both paths.

* :class:`DenseBlocks` holds ``B`` ``(..., n, n, d, d)`` and ``O`` and computes every quantity from
  the blocks (``n²d²`` memory: the reference).
* :class:`FactoredBlocks` holds ``B_ij = Σ_h a^h_ij T_h`` as the
  coefficients ``a`` ``(..., H, n, n)`` and ``T`` ``(H, d, d)`` and gets the same quantities from
  small triangular factors of the ``T``'s (``O(H n² + H² d²)`` memory, never ``n²d²``).

The interface (each returns ``(..., n, n)`` unless said):

* ``block_scale()`` ``Σ_h |a^h_ij| ‖T_h‖_F`` (heads) or ``‖B_ij‖_F`` (explicit blocks) and ``terms``
  (``H`` or 1): the magnitude and count of the summands of a block, from which both paths take the
  same rounding-error bound of every per-edge residual (:func:`edge_error`): the verdicts of the
  two paths are then decided with the same error band, so that heads that cancel (a block much
  smaller than its terms) make both paths *undecided* rather than one of them wrong;

* ``norms()`` ``‖B_ij‖_F``; ``transport_norms()`` ``‖O_ij‖_F`` (0 off the support);
* ``norm_floor()`` the rounding level of ``‖B_ij‖_F`` when ``B_ij`` is a sum of head terms,
  ``tol(float64, H)·Σ_h |a^h_ij| ‖T_h‖_F`` (0 for explicit blocks): a block below it is a sum
  that cancelled and counts as absent in the gauge-free checks (both paths use the same rule);
* ``balance_defect(π)`` ``‖π_i B_ij − π_j B_jiᵀ‖_F``;
* ``transpose_defect()`` ``‖O_ji − O_ijᵀ‖_F``;
* ``gram_defect(c)`` ``‖c_ij² O_ijᵀ O_ij − I‖_F`` for a scaling ``c`` ``(..., n, n)``;
* ``apply(x)`` ``(Wx)`` for ``x`` ``(..., p, n, d)``; ``edge_energy(π, x)``
  ``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` ``(..., p)`` (the factored algebra also has
  ``transported_energy(π, x)``, ``Σ_ij π_i P_ij ‖O_ij x_j‖²`` from the heads, or None).

Tolerances all come from :func:`numerics.tolerance.tol` with ``tdt`` the precision the walk was
given in (see :func:`numerics.laplacian.diagnose` for ``attention_dtype``).

The factored form, its bounds and its memory are described in :mod:`numerics.laplacian.factored`.
Imports :mod:`numerics.laplacian.forms` only (from the package).
"""

from __future__ import annotations

from typing import Protocol

import torch

from numerics.laplacian.algebra import max_scaled, row_norms, tsqr
from numerics.laplacian.forms import dirichlet_energy
from numerics.tolerance import tol

F64 = torch.float64

__all__ = ["Blocks", "DenseBlocks", "FactoredBlocks", "factored_blocks", "element"]


class Blocks(Protocol):
    """What every check needs of a walk (module docstring): :class:`DenseBlocks` and
    :class:`FactoredBlocks` implement it."""

    @property
    def P(self) -> torch.Tensor: ...  # the walk matrix (..., n, n)

    @property
    def sup(self) -> torch.Tensor: ...  # its support, P > 0

    @property
    def n(self) -> int: ...

    @property
    def d(self) -> int: ...

    @property
    def terms(self) -> int: ...  # summands of each block (H heads, 1 for explicit blocks)

    def block_scale(self) -> torch.Tensor: ...

    def norms(self) -> torch.Tensor: ...

    def norm_floor(self) -> torch.Tensor: ...

    def transport_norms(self) -> torch.Tensor: ...

    def balance_defect(self, pi: torch.Tensor) -> torch.Tensor: ...

    def transpose_defect(self) -> torch.Tensor: ...

    def gram_defect(self, c: torch.Tensor) -> torch.Tensor: ...

    def apply(self, x: torch.Tensor) -> torch.Tensor: ...

    def edge_energy(self, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor: ...


class DenseBlocks:
    """The block algebra on explicit blocks: ``P`` ``(..., n, n)``, ``B`` and ``O``
    ``(..., n, n, d, d)`` (float64, ``O`` zero off the support)."""

    def __init__(
        self,
        P: torch.Tensor,
        B: torch.Tensor,
        O: torch.Tensor,
        floor: torch.Tensor | None = None,
        block_scale: torch.Tensor | None = None,
        terms: int = 1,
    ):
        self.P, self.B, self.O = P, B, O
        # a sum of head terms rounds at tol(float64, H)·Σ_h |a^h_ij| ‖T_h‖_F (as FactoredBlocks.norm_floor);
        # explicit blocks have no sum to round
        if floor is None:
            floor = torch.zeros_like(P) if block_scale is None else tol(F64, terms) * block_scale
        self.floor = floor
        self.sup = P > 0
        self.n, self.d = P.shape[-1], B.shape[-1]
        self._OtO: tuple[torch.Tensor, torch.Tensor] | None = None
        self._block_scale = block_scale
        self.terms = int(terms)  # summands of each block (H for a heads-form walk, 1 for explicit blocks)

    def block_scale(self) -> torch.Tensor:
        """``Σ_h |a^h_ij| ‖T_h‖_F`` for a heads-form walk (given), else ``‖B_ij‖_F``: the magnitude of
        the terms that make up ``B_ij``, which sets the rounding error of anything computed from it."""
        if self._block_scale is None:
            self._block_scale = self.norms()  # every per-edge error bound reads it: computed once
        return self._block_scale

    def norms(self) -> torch.Tensor:
        return torch.linalg.matrix_norm(self.B)

    def norm_floor(self) -> torch.Tensor:
        return self.floor

    def transport_norms(self) -> torch.Tensor:
        return torch.linalg.matrix_norm(self.O)

    def balance_defect(self, pi: torch.Tensor) -> torch.Tensor:
        G = pi[..., :, None, None, None] * self.B
        return torch.linalg.matrix_norm(G - G.transpose(-4, -3).transpose(-1, -2))

    def transpose_defect(self) -> torch.Tensor:
        return torch.linalg.matrix_norm(self.O.transpose(-4, -3) - self.O.transpose(-1, -2))

    def gram_defect(self, c: torch.Tensor) -> torch.Tensor:
        # ÔᵀÔ of Ô_ij = O_ij / m_ij (m_ij = max |O_ij|), then (c_ij m_ij)²: c² OᵀO overflows or
        # underflows for tiny blocks (c = 1e161 for O = 1e-161: c² = inf, OᵀO subnormal)
        if self._OtO is None:
            On, m = max_scaled(self.O, (-1, -2))
            self._OtO = (On.transpose(-1, -2) @ On, m)
        OtO, m = self._OtO
        eye = torch.eye(self.d, dtype=F64, device=self.P.device)
        return torch.linalg.matrix_norm(((c * m) ** 2)[..., None, None] * OtO - eye)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("...ijab,...pjb->...pia", self.B, x)

    def edge_energy(self, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return dirichlet_energy(self.P[..., None, :, :], self.O[..., None, :, :, :, :], pi[..., None, :], x)


# ------------------------------------------------------------------------------------ factored algebra
#: numbers per temporary of the row-chunked sums (``edge_energy``, the per-edge norms, the factor of
#: ``C X``): 4 MiB instead of ``chunk_elems`` (32 MiB). Measured at ``n = 64, d = 64, H = 4``, one
#: thread, same process, temporaries capped at 2^17 / 2^18 / 2^19 / 2^20 / ``chunk_elems`` numbers: the
#: algebraic checks 22 / 19 / 20 / 19 / 28 ms, the factor of ``C X`` on 32 sections 196 / 191 / 122 /
#: 121 / 177 ms (memory traffic and page faults of the large temporaries, not arithmetic)
CACHE_ELEMS = 1 << 19
#: numbers per difference ``x_i − O_ij x_j`` of :meth:`FactoredBlocks.edge_energy` (768 KiB: the chunk
#: and its square stay in a 1 MiB L2 cache). Measured at ``n = d = 64``, three probes, one thread,
#: alternated in one process: 21 rows a chunk (``CACHE_ELEMS``) 4.6 ms, 10 rows 3.8, 9 rows 2.2, 8 rows
#: (this cap) 1.7, 6 rows 2.2 (the literal Dirichlet sum, which decides the reversible walks)
EDGE_ELEMS = 96 << 10


class FactoredBlocks:
    """The block algebra (:class:`Blocks`) for ``B_ij = Σ_h a^h_ij T_h``:
    ``P`` ``(..., n, n)``, ``a`` ``(..., H, n, n)``, ``T`` ``(H, d, d)`` or ``(..., H, d, d)``
    (all float64). ``chunk_elems`` bounds the size of every temporary.

    Per-edge norms are ``‖R c_ij‖₂`` summed as squares along the factor's rows (:func:`row_norms`).
    Where the products of a factor with every edge's coefficients fit in one chunk they are kept:
    the two π's of :meth:`balance_defect` and the three scalings of :meth:`gram_defect` reweight
    them, and :meth:`norms` reads the leading block of the ``[T_h, T_hᵀ]`` factor (no factor of
    ``[T_h]`` alone). The algebraic checks of the random ``n = d = 64, H = 4`` walk: 11.3 → 8.4 ms
    (the norm sums), 13.3 → 8.1 ms with the π solves of :func:`numerics.markov.stationary_core`,
    then 22.7 → 13.4 ms with the kept products (alternated in one process, loads differ between
    the three runs)."""

    def __init__(
        self,
        P: torch.Tensor,
        a: torch.Tensor,
        T: torch.Tensor,
        *,
        chunk_elems: int = 1 << 22,
        W_O: torch.Tensor | None = None,
        W_V: torch.Tensor | None = None,
        w: torch.Tensor | None = None,
        exact: bool = False,
        counter: list | None = None,
    ):
        self.exact = exact  # coefficients are the blocks' entries (edges form): no head sums to round
        #: single-vector products with ``W``, ``Wᵀ`` or a coefficient operator so far (shared by the
        #: batch elements of :func:`element`): the unit of ``max_matvecs``
        self.counter = [0] if counter is None else counter
        self.P, self.a, self.T = P, a, T
        self.W_O, self.W_V = W_O, W_V  # optional low-rank factors T_h = W_O[h] @ W_V[h] (cheaper products)
        self.sup = P > 0
        self.n, self.d, self.H = P.shape[-1], T.shape[-1], a.shape[-3]
        self.batch = P.shape[:-2]
        safe = torch.where(self.sup, P, torch.ones_like(P))
        if w is None:
            w = a / safe[..., None, :, :]
        self.w = torch.where(self.sup[..., None, :, :], w, torch.zeros_like(a))  # O_ij = Σ_h w^h_ij T_h
        self.chunk_elems = int(chunk_elems)
        self._R: dict = {}

    # -------------------------------------------------------------- triangular factors
    def _row_chunk(self, per_row: int, cap: int = CACHE_ELEMS) -> int:
        """Rows per chunk of a row-chunked sum: temporaries of at most ``min(chunk_elems, cap)``
        numbers."""
        return max(1, min(self.n, min(self.chunk_elems, cap) // max(per_row, 1)))

    def _factor(self, key: str) -> torch.Tensor:
        if key in self._R:
            return self._R[key]
        T, d, H = self.T, self.d, self.H
        tb = T.shape[:-3]
        ca = max(1, min(d, self.chunk_elems // max(H * H * d, 1)))  # rows a of the d×d matrices per chunk
        if key == "TTt":  # columns vec T_h, then vec T_hᵀ
            Tt = T.transpose(-1, -2)
            chunks = (
                torch.cat(
                    [T[..., :, a0 : a0 + ca, :].reshape(*tb, H, -1), Tt[..., :, a0 : a0 + ca, :].reshape(*tb, H, -1)],
                    -2,
                ).transpose(-1, -2)
                for a0 in range(0, d, ca)
            )
            m = 2 * H
        else:  # "gram": columns vec(T_hᵀT_k + T_kᵀT_h) (h < k), vec(T_hᵀT_h), then vec I
            # (tried: the d(d+1)/2 entries a ≤ b only, off-diagonal ones times √2 — every column is
            # symmetric — half the rows for the QR, but the gather of those entries cost more: 0.60 →
            # 0.66 ms at d = 64, H = 4, alternated in one process)
            hh, kk = torch.triu_indices(H, H, device=T.device)
            S = self._pair_sums(hh, kk)
            eye = torch.eye(d, dtype=T.dtype, device=T.device)
            ca = max(1, min(d, self.chunk_elems // max(len(hh) * d, 1)))

            def gen():
                for a0 in range(0, d, ca):
                    cols = S[..., a0 : a0 + ca, :].reshape(*S.shape[:-2], -1)
                    idc = eye[a0 : a0 + ca].reshape(1, -1).expand(*cols.shape[:-2], 1, cols.shape[-1])
                    yield torch.cat([cols, idc], -2).transpose(-1, -2)

            chunks = gen()
            m = H * (H + 1) // 2 + 1
        R = tsqr(chunks, m, T.dtype, T.device, tb)
        self._R[key] = R
        return R

    def _lead(self) -> torch.Tensor:
        """The factor of ``[vec T_h]`` alone: the leading ``H × H`` block of the ``"TTt"`` factor (a QR's
        leading columns are the QR of those columns; one factorisation instead of two)."""
        return self._factor("TTt")[..., : self.H, : self.H]

    def _pair_sums(self, hh: torch.Tensor, kk: torch.Tensor) -> torch.Tensor:
        """``T_hᵀ T_k + T_kᵀ T_h`` (``h ≠ k``) and ``T_hᵀ T_h`` (``h = k``) ``(..., pairs, d, d)``: the terms
        of ``OᵀO`` over head pairs ``h ≤ k``."""
        S = self._pair_products(hh, kk)
        return S + (hh != kk).to(S.dtype)[:, None, None] * S.transpose(-1, -2)

    def _pair_products(self, hh: torch.Tensor, kk: torch.Tensor) -> torch.Tensor:
        """``T_hᵀ T_k`` for the index pairs ``(hh, kk)``; with factors
        ``W_V[h]ᵀ (W_O[h]ᵀ W_O[k]) W_V[k]`` (``d² d_h`` per pair instead of ``d³``)."""
        if self.W_O is not None:
            G = self.W_O[hh].transpose(-1, -2) @ self.W_O[kk]  # (pairs, d_h, d_h)
            return self.W_V[hh].transpose(-1, -2) @ (G @ self.W_V[kk])  # type: ignore[index]
        return self.T[..., hh, :, :].transpose(-1, -2) @ self.T[..., kk, :, :]

    def _norms(self, R: torch.Tensor, coef) -> torch.Tensor:
        """``‖R c_ij‖₂`` ``(..., n, n)`` for coefficients built row-chunk by row-chunk:
        ``coef(i0, i1)`` returns ``(..., m, i1 − i0, n)``."""
        out = torch.empty(*self.batch, self.n, self.n, dtype=F64, device=self.P.device)
        step = self._row_chunk(R.shape[-1] * self.n * 2)
        for i0 in range(0, self.n, step):
            c = coef(i0, min(i0 + step, self.n))
            y = (R @ c.flatten(-2)).unflatten(-1, c.shape[-2:])
            out[..., i0 : i0 + step, :] = row_norms(y)
        return out

    # -------------------------------------------------------------- the block-algebra interface
    def norms(self) -> torch.Tensor:
        if "norms" not in self._R:  # read by three checks: computed once
            if self._whole(2 * self.H):  # the products balance_defect reuses
                U = self._products("R11 a", self._lead(), self.a)
                self._R["norms"] = row_norms(U)
            else:
                self._R["norms"] = self._norms(self._lead(), lambda i0, i1: self.a[..., i0:i1, :])
        return self._R["norms"]

    @property
    def terms(self) -> int:
        return 1 if self.exact else self.H

    def block_scale(self) -> torch.Tensor:
        """``Σ_h |a^h_ij| ‖T_h‖_F`` (edges form: ``‖B_ij‖_F``, its coefficients are the entries)."""
        if "block_scale" not in self._R:  # every per-edge error bound reads it: computed once
            if self.exact:
                self._R["block_scale"] = self.norms()
            else:
                tn = torch.linalg.matrix_norm(self.T)
                self._R["block_scale"] = torch.einsum("...hij,...h->...ij", self.a.abs(), tn)
        return self._R["block_scale"]

    def norm_floor(self) -> torch.Tensor:
        """Rounding level of ``‖Σ_h a^h_ij T_h‖_F``: ``tol(float64, H)·Σ_h |a^h_ij| ‖T_h‖_F``; 0 for
        an edges-form walk (its unit-matrix coefficients are the entries themselves: no sum)."""
        if "norm_floor" not in self._R:  # read by four checks: computed once
            self._R["norm_floor"] = torch.zeros_like(self.P) if self.exact else tol(F64, self.H) * self.block_scale()
        return self._R["norm_floor"]

    def transport_norms(self) -> torch.Tensor:
        if "transport_norms" not in self._R:  # read by two checks: computed once
            self._R["transport_norms"] = self._norms(self._lead(), lambda i0, i1: self.w[..., i0:i1, :])
        return self._R["transport_norms"]

    def _whole(self, m: int) -> bool:
        """Whether the products of an ``m``-column factor with every edge's coefficients fit in one
        chunk: they are then kept, and a second call with other weights (π, ``c``) only rescales them."""
        return self._row_chunk(m * self.n * 2) >= self.n

    def _products(self, key: str, R: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """``R X_ij`` ``(..., r, n, n)`` for coefficients ``X`` ``(..., m, n, n)``, kept under ``key``."""
        if key not in self._R:
            self._R[key] = (R @ X.flatten(-2)).unflatten(-1, X.shape[-2:])
        return self._R[key]

    def balance_defect(self, pi: torch.Tensor) -> torch.Tensor:
        a, aT = self.a, self.a.transpose(-1, -2)
        R, H = self._factor("TTt"), self.H
        if self._whole(2 * H):
            # R [π_i a_ij; −π_j a_ji] = π_i R₁₁ a_ij − π_j R[:, H:] a_ji (R upper triangular: R₁₁ = R[:H, :H])
            U = self._products("R11 a", self._lead(), a)
            V = self._products("R2 aT", R[..., :, H:], aT)
            r = U.shape[-3]
            top = pi[..., None, :, None] * U - pi[..., None, None, :] * V[..., :r, :, :]
            bot = pi[..., None, None, :] * V[..., r:, :, :]
            return row_norms(torch.cat([top, bot], -3) if bot.shape[-3] else top)
        return self._norms(
            R,
            lambda i0, i1: torch.cat(
                [pi[..., None, i0:i1, None] * a[..., i0:i1, :], -pi[..., None, None, :] * aT[..., i0:i1, :]], -3
            ),
        )

    def transpose_defect(self) -> torch.Tensor:
        w, wT = self.w, self.w.transpose(-1, -2)
        return self._norms(self._factor("TTt"), lambda i0, i1: torch.cat([wT[..., i0:i1, :], -w[..., i0:i1, :]], -3))

    def gram_defect(self, c: torch.Tensor) -> torch.Tensor:
        hh, kk = torch.triu_indices(self.H, self.H, device=self.P.device)
        R = self._factor("gram")
        if self._whole(R.shape[-1]):
            # R [c² w^h w^k; −1] = (c m)² (R[:, :−1] [ŵ^h ŵ^k]) − R[:, −1] with ŵ = w/m, m_ij = max_h |w^h_ij|
            # (c² w w would overflow / underflow for tiny blocks): the products are kept, each call rescales
            wn, m = self._scaled_w()
            Y = self._products("gram w w", R[..., :, :-1], wn[..., hh, :, :] * wn[..., kk, :, :])
            y = ((c * m) ** 2)[..., None, :, :] * Y - R[..., :, -1:, None]
            return row_norms(y)

        def coef(i0, i1):
            wn, m = self._scaled_w()
            w = wn[..., i0:i1, :]
            pair = w[..., hh, :, :] * w[..., kk, :, :] * ((c * m)[..., None, i0:i1, :] ** 2)
            return torch.cat([pair, -torch.ones_like(pair[..., :1, :, :])], -3)

        return self._norms(R, coef)

    def _scaled_w(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ŵ, m)``: the edge weights ``ŵ^h_ij = w^h_ij / m_ij`` with ``m_ij = max_h |w^h_ij|`` (1 where 0)."""
        if "scaled w" not in self._R:
            self._R["scaled w"] = max_scaled(self.w, -3)
        return self._R["scaled w"]

    def _tx(self, x: torch.Tensor) -> torch.Tensor:
        """``T_h x_j`` ``(..., p, H, n, d)`` for ``x`` ``(..., p, n, d)``."""
        if self.W_O is not None:
            return (x.unsqueeze(-3) @ self.W_V.transpose(-1, -2)) @ self.W_O.transpose(-1, -2)  # type: ignore[union-attr]
        return x.unsqueeze(-3) @ self.T.transpose(-1, -2).unsqueeze(-4)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """``W x`` for ``x`` ``(..., p, n, d)``: ``Σ_h a^h x T_hᵀ`` (with factors
        ``Σ_h (a^h x W_V[h]ᵀ) W_O[h]ᵀ``, the attention layer's own cost)."""
        self.counter[0] += x[..., 0, 0].numel()
        a = self.a.unsqueeze(-4)
        if self.W_O is not None:
            return ((a @ (x.unsqueeze(-3) @ self.W_V.transpose(-1, -2))) @ self.W_O.transpose(-1, -2)).sum(-3)  # type: ignore[union-attr]
        return (a @ self._tx(x)).sum(-3)

    def apply_t(self, y: torch.Tensor) -> torch.Tensor:
        """``Wᵀ y``: ``(Wᵀy)_j = Σ_i B_ijᵀ y_i = Σ_h (a^hᵀ y T_h)_j``."""
        self.counter[0] += y[..., 0, 0].numel()
        at = self.a.transpose(-1, -2).unsqueeze(-4)
        if self.W_O is not None:
            return ((at @ (y.unsqueeze(-3) @ self.W_O)) @ self.W_V).sum(-3)  # type: ignore[operator]
        return (at @ (y.unsqueeze(-3) @ self.T.unsqueeze(-4))).sum(-3)

    def _transported(self, Y: torch.Tensor, i0: int, i1: int) -> torch.Tensor:
        """``O_ij x_j = Σ_h w^h_ij (T_h x_j)`` ``(..., p, i1 − i0, n, d)`` from ``Y = T x`` (one
        matrix product per target token j)."""
        w = self.w[..., i0:i1, :]  # (..., H, c, n)
        Yj = Y.movedim(-2, -3)  # (..., p, n_j, H, d)
        wj = w.movedim(-1, -3).unsqueeze(-4)  # (..., 1, n_j, H, c)
        return (wj.transpose(-1, -2) @ Yj).movedim(-3, -2)  # (..., p, c, n_j, d)

    def edge_energy(self, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²`` ``(..., p)``, summed over row chunks."""
        Y = self._tx(x)
        p = x.shape[-3]
        E = torch.zeros(*x.shape[:-2], dtype=F64, device=x.device)
        step = self._row_chunk(p * self.n * self.d, EDGE_ELEMS)
        for i0 in range(0, self.n, step):
            i1 = min(i0 + step, self.n)
            diff = x[..., i0:i1, None, :] - self._transported(Y, i0, i1)
            wt = (pi[..., i0:i1, None] * self.P[..., i0:i1, :] * self.sup[..., i0:i1, :])[..., None, :, :]
            E = E + 0.5 * (wt * (diff**2).sum(-1)).sum((-1, -2))
        return E

    def transported_energy(self, pi: torch.Tensor, x: torch.Tensor) -> torch.Tensor | None:
        """``Σ_ij π_i P_ij ‖O_ij x_j‖²`` ``(..., p)`` from the heads: ``Σ_j Σ_hg c^hg_j M^hg_j`` with
        ``c^hg_j = Σ_i π_i P_ij w^h_ij w^g_ij`` and ``M^hg_j = ⟨T_h x_j, T_g x_j⟩`` (``H²n(n + pd)``
        work, no ``n²d`` temporary); None for an edges-form walk or ``H² > n·d`` (the literal
        :meth:`edge_energy` is then as cheap). The term of the expansion
        ``E = ½Σ π_i r_i‖x_i‖² − ⟨x, Wx⟩_π + ½·this`` that :func:`numerics.laplacian.checks.check_dirichlet`
        uses where it decides (its docstring: the rounding bound and the fallback)."""
        if self.exact or self.n * self.d < self.H**2:
            return None
        # batched products over the target token j on contiguous copies: the three einsums took 0.74 ms,
        # this 0.42 (n = d = 64, H = 4, three probes, one thread, alternated in one process)
        wt = pi[..., :, None] * self.P * self.sup
        A = (wt[..., None, :, :] * self.w).movedim(-1, -3).contiguous()  # (..., n_j, H, n_i)
        c = A @ self.w.movedim(-1, -3).transpose(-1, -2).contiguous()  # (..., n_j, H, H)
        Y = self._tx(x).transpose(-3, -2).contiguous()  # (..., p, n_j, H, d)
        M = Y @ Y.transpose(-1, -2)  # (..., p, n_j, H, H): ⟨T_h x_j, T_g x_j⟩
        return (c[..., None, :, :, :] * M).sum((-1, -2, -3))

    def constraints_apply(self, x: torch.Tensor) -> torch.Tensor:
        """``C x`` ``(p, n, n, d)`` for one walk (``n²d`` per probe: small walks only)."""
        Y = self._tx(x)
        return (x[:, :, None, :] - self._transported(Y, 0, self.n)) * self.sup.to(F64)[None, :, :, None]

    def _coef_apply(self, c: torch.Tensor, x: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """``Σ_h c^h x T_hᵀ`` (``transpose``: ``Σ_h c^hᵀ x T_h``) for one walk, ``c`` ``(H, n, n)``,
        ``x`` ``(p, n, d)`` (with factors through ``W_V``, ``W_O``)."""
        self.counter[0] += x[..., 0, 0].numel()
        if x.shape[0] > 1 and not self.exact:
            return self._coef_apply_block(c.transpose(-1, -2) if transpose else c, x, transpose)
        cc = (c.transpose(-1, -2) if transpose else c).unsqueeze(-4)
        if self.W_O is not None:
            if transpose:
                return ((cc @ (x.unsqueeze(-3) @ self.W_O)) @ self.W_V).sum(-3)  # type: ignore[operator]
            return ((cc @ (x.unsqueeze(-3) @ self.W_V.transpose(-1, -2))) @ self.W_O.transpose(-1, -2)).sum(-3)  # type: ignore[union-attr]
        T = self.T if transpose else self.T.transpose(-1, -2)
        return (cc @ (x.unsqueeze(-3) @ T.unsqueeze(-4))).sum(-3)

    def _coef_apply_block(self, cc: torch.Tensor, x: torch.Tensor, transpose: bool) -> torch.Tensor:
        """:meth:`_coef_apply` for a block of ``p > 1`` fields as plain matrix products: ``Z =
        x·[L_1 … L_H]`` (every head at once), ``U^h = cc^h Z^h`` (one product per head over all ``p``
        fields) and ``Σ_h U^h R_h`` (one product), with ``x T_hᵀ = x W_V[h]ᵀ W_O[h]ᵀ``
        (``transpose``: ``x T_h = x W_O[h] W_V[h]``); without factors ``L_h = T_hᵀ`` (``T_h``) and
        ``Σ_h U^h``. The broadcast form materialises ``x`` once per head and multiplies ``p·H``
        small matrices: measured at ``n = d = 64, H = 4``, ``p = 16``, one thread, a product and
        its transpose, four rounds: with factors (head dimension 16) 1.7–1.9 → 0.82–0.86 ms,
        without 3.9–7.8 (median 7.5) → 4.8–5.3 ms (the sections' Gram, the block Krylov products)."""
        p, n, d, H = x.shape[0], self.n, self.d, self.H
        W_O, W_V = self.W_O, self.W_V
        if W_O is not None and W_V is not None:
            L, R = (W_O, W_V) if transpose else (W_V.transpose(-1, -2), W_O.transpose(-1, -2))
        else:
            L, R = (self.T if transpose else self.T.transpose(-1, -2)), None
        k = L.shape[-1]
        Z = (x.reshape(p * n, d) @ L.permute(1, 0, 2).reshape(d, H * k)).reshape(p, n, H, k)
        U = torch.bmm(cc, Z.permute(2, 1, 0, 3).reshape(H, n, p * k)).reshape(H, n, p, k)
        if R is None:
            return U.sum(0).permute(1, 0, 2)
        return (U.permute(2, 1, 0, 3).reshape(p * n, H * k) @ R.reshape(H * k, d)).reshape(p, n, d)

    def _edge_gram(self) -> torch.Tensor:
        """``G_k = Σ_i O_ikᵀ O_ik`` ``(n, d, d)`` over the support, for one walk: from the head
        Gram terms ``Σ_i w^h_ik w^g_ik`` and ``T_hᵀ T_g`` (``n d²`` memory), or entry by entry for
        an edges-form walk."""
        if "edge_gram" in self._R:
            return self._R["edge_gram"]
        n, d, H = self.n, self.d, self.H
        if self.exact:  # w holds the entries of O: (d², n, n) -> (n, n, d, d)
            O = self.w.reshape(d, d, n, n).permute(2, 3, 0, 1)
            G = torch.einsum("ikab,ikac->kbc", O, O)
        else:
            # G_k = Σ_{h≤g} g^hg_k S_hg with g^hg_k = Σ_i w^h_ik w^g_ik and the symmetrised pairs S_hg of
            # the Gram factor (H(H+1)/2 products instead of H²); g as one batched product on a contiguous
            # copy, G as the first block's product (a zeroed n·d² accumulator cost 2 ms in page faults).
            # Measured at n = d = 64, H = 4, one thread, alternated in one process: 2.9 → 0.56 ms
            hh, kk = torch.triu_indices(H, H, device=self.P.device)
            wk = self.w.movedim(-1, -3).contiguous()  # (n_k, H, n_i)
            g = (wk @ wk.transpose(-1, -2))[:, hh, kk]  # (n, pairs)
            step = max(1, min(len(hh), self.chunk_elems // max(d * d, 1)))
            parts: list[torch.Tensor] = []
            for p0 in range(0, len(hh), step):  # one (n × pairs)·(pairs × d²) product per block of head pairs
                pp = self._pair_sums(hh[p0 : p0 + step], kk[p0 : p0 + step]).reshape(-1, d * d)
                part = g[:, p0 : p0 + step] @ pp
                parts = [parts[0].add_(part)] if parts else [part]
            G = parts[0].reshape(n, d, d)
        self._R["edge_gram"] = G
        return G

    def constraints_gram_fast(self, x: torch.Tensor) -> torch.Tensor:
        """``CᵀC x`` for one walk, ``x`` ``(p, n, d)``, from the expansion
        ``(CᵀCx)_k = deg_k x_k + G_k x_k − Σ_j O_kj x_j − Σ_i O_ikᵀ x_i`` (two walk-like products and
        the edge Gram ``G``): the cost of two ``W`` products instead of ``n²d`` per probe, but with
        the rounding ``eps·‖C‖²·‖x‖`` of the expansion (use :meth:`constraints_gram_apply` where
        ``‖Cx‖ ≪ ‖C‖‖x‖`` matters)."""
        dx, mx = self.constraints_gram_split(x)
        return dx - mx - self._coef_apply(self.w, x, transpose=True)

    def constraints_gram_split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(deg_k x_k + G_k x_k, Σ_j O_kj x_j)`` for one walk, ``x`` ``(p, n, d)``: the terms of
        :meth:`constraints_gram_fast` but the transposed one, which a symmetric form ``Xᵀ CᵀC X``
        gets as the transpose of ``Xᵀ(Σ_j O_kj X_j)`` (one walk-like product instead of two)."""
        deg = self.sup.to(F64).sum(-1)
        Gx = (self._edge_gram() @ x.permute(1, 2, 0)).permute(2, 0, 1)  # one d×d by d×p product per token
        return deg[:, None] * x + Gx, self._coef_apply(self.w, x)

    def constraints_gram_apply(self, x: torch.Tensor) -> torch.Tensor:
        """``CᵀC x`` for one walk, ``x`` ``(p, n, d)``: ``(Cx)_ij = x_i − O_ij x_j`` on the support,
        accumulated over row chunks (``Cx`` itself, ``n²d`` per probe, is never held whole)."""
        Y = self._tx(x)
        out = torch.zeros_like(x)
        p = x.shape[0]
        s = self.sup.to(F64)
        step = self._row_chunk(p * self.n * self.d * 2)
        for i0 in range(0, self.n, step):
            i1 = min(i0 + step, self.n)
            y = (x[:, i0:i1, None, :] - self._transported(Y, i0, i1)) * s[None, i0:i1, :, None]
            out[:, i0:i1] += y.sum(-2)  # Σ_j y_ij into row i
            z = self.w[:, i0:i1].permute(2, 0, 1) @ y.permute(2, 1, 0, 3).reshape(self.n, i1 - i0, -1)
            z = z.reshape(self.n, self.H, p, self.d).permute(2, 1, 0, 3)  # (p, H, n_j, d): Σ_i w^h_ij y_ij
            if self.W_O is not None:
                out -= ((z @ self.W_O) @ self.W_V).sum(1)  # type: ignore[operator]  # − Σ_h T_hᵀ z^h
            else:
                out -= (z @ self.T).sum(1)
        return out


def factored_blocks(w, *, chunk_elems: int = 1 << 22, memory_budget: int | None = None) -> FactoredBlocks:
    """:class:`FactoredBlocks` of a walk in float64: heads form as is; an edges-form walk (which
    already holds ``n²d²`` numbers) in the basis of the ``d²`` unit matrices ``E_ab``:
    ``a^{ab}_ij = B_ij[a, b]``, ``w^{ab}_ij = O_ij[a, b]`` (exact, entry by entry). That basis takes
    three ``n²d²`` arrays and a ``d²×d²`` identity: above the memory budget (``memory_budget`` bytes if
    given) it is refused with :class:`MemoryBudgetError` naming ``walk``, as
    :meth:`ConnectionWalk.nearest_kronecker` refuses the same basis."""
    if w.kind == "heads":
        a = w.attention.to(F64)
        fac = {"W_O": w._W_O.to(F64), "W_V": w._W_V.to(F64)} if w.factored else {}
        return FactoredBlocks(a.mean(-3), a, w.head_transports.to(F64), chunk_elems=chunk_elems, **fac)
    # P·O, its unit-matrix coefficients and those of O: three n²d² arrays; E: the d²×d² identity
    w._check_unit_basis("the factored form's n²d² unit-matrix coefficients", copies=3, budget=memory_budget)
    P = w.walk_matrix.to(F64)
    d = w.d
    O = w._O.to(F64).expand(*P.shape, d, d)
    # coefficients in the basis of unit matrices E_ab (H = d²): exact, entry by entry
    coef = lambda M: M.movedim(-2, -4).movedim(-1, -3).reshape(*M.shape[:-4], d * d, *M.shape[-4:-2])
    E = torch.eye(d * d, dtype=F64, device=P.device).reshape(d * d, d, d)
    return FactoredBlocks(P, coef(P[..., None, None] * O), E, chunk_elems=chunk_elems, w=coef(O), exact=True)


def element(fb: FactoredBlocks, b: int) -> FactoredBlocks:
    """Batch element ``b`` (flat index) as an unbatched :class:`FactoredBlocks`."""
    if not len(fb.batch):
        return fb
    n, H, d = fb.n, fb.H, fb.d
    T = fb.T if fb.T.ndim == 3 else fb.T.reshape(-1, H, d, d)[b]
    return FactoredBlocks(
        fb.P.reshape(-1, n, n)[b],
        fb.a.reshape(-1, H, n, n)[b],
        T,
        chunk_elems=fb.chunk_elems,
        W_O=fb.W_O,
        W_V=fb.W_V,
        w=fb.w.reshape(-1, H, n, n)[b],
        exact=fb.exact,
        counter=fb.counter,
    )
