r"""Factored T3 diagnostics: every check of :func:`numerics.laplacian.diagnose` without the
``n²d²`` blocks.

A walk is held as ``B_ij = Σ_h a^h_ij T_h`` with coefficients ``a`` ``(..., H, n, n)`` and
transports ``T`` ``(H, d, d)``: for a heads-form walk ``a = A`` (the attention of each head) and
``T_h`` (``W_O^h W_V^h`` when stored as factors); an edges-form walk is written in the basis of the
``d²`` unit matrices (``H = d²``, exact). Then, with
``w^h_ij = a^h_ij / P_ij`` (so ``O_ij = Σ_h w^h_ij T_h``):

* every per-edge Frobenius norm the checks need is ``‖Σ_m c_m(i, j) X_m‖_F`` for a short list of
  fixed matrices ``X_m`` — ``{T_h}`` (block norms), ``{T_h, T_hᵀ}`` (``π_i B_ij − π_j B_jiᵀ``,
  ``O_ji − O_ijᵀ``), ``{T_hᵀT_k + T_kᵀT_h, I}`` (``c² O_ijᵀO_ij − I``). With ``R`` the triangular
  factor of the ``d² × m`` matrix ``[vec X_m]`` (Householder QR, accumulated over row chunks so
  that only ``H² · chunk · d`` numbers exist at once), ``‖Σ c_m X_m‖_F = ‖R c‖₂`` *exactly*: no
  ``n²d²`` object and, unlike the expansion ``cᵀ(XᵀX)c``, no cancellation (the error is
  ``O(eps)·Σ|c_m|‖X_m‖``, as for the dense sum, not ``O(√eps)``);
* ``W``, ``Wᵀ``, ``Δ``, the π-symmetrised ``S = D^{½} Δ D^{-½}`` and the parallel-section
  constraints ``C`` (``(Cx)_ij = x_i − O_ij x_j``) are applied matrix-free (``Σ_h a^h X T_hᵀ``);
* the Dirichlet identity uses the same seeded probes as the dense path, its energy summed over
  row chunks.

Spectrum (stated bounds). Bendixson's theorem: every eigenvalue ``z`` of ``Δ`` (= of ``S``) has
``λ_min(H_S) ≤ Re z ≤ λ_max(H_S)`` and ``|Im z| ≤ ‖K_S‖₂`` (``H_S``, ``K_S`` the symmetric and
skew parts of ``S``), and ``|z − 1| ≤ ‖W‖_π``. Those extremes of symmetric operators come from
Lanczos (ARPACK ``eigsh``, tolerance = machine precision; the Ritz residuals are reported in
``extra``). When the enclosure already satisfies a spectral check it *certifies* it (the reported
residual is an upper bound of the dense one); for a π-self-adjoint walk ``K_S = 0`` and the
enclosure is the exact spectral interval. Otherwise the extreme eigenvalues of the non-normal
``Δ`` are estimated by Arnoldi (``eigs``: smallest / largest real part, largest imaginary part,
largest ``|z − 1|``); those are Ritz values without a rigorous bound and the reason says so.

Kernel (:mod:`numerics.laplacian_kernel`). The parallel sections are fixed by their values at one
token per closed class (a BFS tree of the support), so ``dim ker C ≤ d·(closed classes)`` and
``ker C`` lies in the ``d·(closed classes)``-dimensional span of the root-fixed sections: a
Rayleigh–Ritz of ``C`` there (a Gram of ``CᵀC`` on the sections, with the eps·‖C‖-accurate
row-chunked factor for the directions the Gram cannot resolve) gives certified upper bounds of its
smallest singular values and, through the tree rows, certified lower bounds; ``ker Δ`` starts from
those sections and is decided by the Dirichlet certificate (no search) when the walk is nearly
stochastic, stationary and orthogonal, else by a deflated Lanczos search (up to ``k_max``
directions). Every product counts against ``max_matvecs``: past it the checks are *undecided*
with the reason; a walk that already fails a T3 hypothesis gives the search at most what the other
checks spent. Otherwise a check is undefined only where a bound straddles its threshold, with the
interval in the reason.

Walks with ``n·d ≤ assemble_max`` (default 32) are too small for ARPACK (``k < n·d − 1``): there
``Δ`` and ``C`` are assembled from the same matrix-free operators applied to unit vectors
(``n·(nd)² ≤ 32768`` numbers) and decomposed by SVD, with the dense path's thresholds.

Memory: ``a`` and ``w`` (``2H n²``), ``T`` (``H d²``), the triangular factors (``(H²/2)²``), the
root-fixed sections and the edge Gram of the kernel checks (``n d × d·(closed classes)``, ``n d²``),
probes and Lanczos vectors (``O(n d)`` each) and chunks bounded by ``chunk_elems``.

The spectrum computations live in :mod:`numerics.laplacian_spectral`, the kernel ones in
:mod:`numerics.laplacian_kernel` (both re-exported here).
"""

from __future__ import annotations

import math
import time

import torch

from numerics.laplacian_spectral import kernel_factored, spectrum_factored
from numerics.tolerance import tol

F64 = torch.float64

__all__ = ["FactoredBlocks", "factored_blocks", "diagnose_factored", "spectrum_factored", "kernel_factored"]


def _tsqr(chunks, m: int, dtype, device, batch=()) -> torch.Tensor:
    """Triangular ``R`` (``..., ≤m, m``) with ``RᵀR = XᵀX`` for ``X`` given as row chunks
    ``(..., rows, m)`` (QR of ``[R_prev; chunk]`` one chunk at a time)."""
    R = torch.zeros(*batch, 0, m, dtype=dtype, device=device)
    for X in chunks:
        X = X.expand(*batch, *X.shape[-2:]) if len(batch) and X.ndim == 2 else X
        R = torch.linalg.qr(torch.cat([R, X], dim=-2), mode="r")[1]
    return R


class FactoredBlocks:
    """The block algebra of :mod:`numerics.laplacian_checks` for ``B_ij = Σ_h a^h_ij T_h``:
    ``P`` ``(..., n, n)``, ``a`` ``(..., H, n, n)``, ``T`` ``(H, d, d)`` or ``(..., H, d, d)``
    (all float64). ``chunk_elems`` bounds the size of every temporary."""

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
        #: batch elements of :func:`numerics.laplacian_spectral._element`): the unit of ``max_matvecs``
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
    def _row_chunk(self, per_row: int) -> int:
        return max(1, min(self.n, self.chunk_elems // max(per_row, 1)))

    def _factor(self, key: str) -> torch.Tensor:
        if key in self._R:
            return self._R[key]
        T, d, H = self.T, self.d, self.H
        tb = T.shape[:-3]
        ca = max(1, min(d, self.chunk_elems // max(H * H * d, 1)))  # rows a of the d×d matrices per chunk
        if key == "T":  # columns vec T_h
            chunks = (T[..., :, a0 : a0 + ca, :].reshape(*tb, H, -1).transpose(-1, -2) for a0 in range(0, d, ca))
            m = H
        elif key == "TTt":  # columns vec T_h, then vec T_hᵀ
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
            hh, kk = torch.triu_indices(H, H, device=T.device)
            S = self._pair_products(hh, kk)  # (..., pairs, d, d): T_hᵀ T_k
            S = S + (hh != kk).to(T.dtype)[:, None, None] * S.transpose(-1, -2)
            eye = torch.eye(d, dtype=T.dtype, device=T.device)
            ca = max(1, min(d, self.chunk_elems // max(len(hh) * d, 1)))

            def gen():
                for a0 in range(0, d, ca):
                    cols = S[..., a0 : a0 + ca, :].reshape(*S.shape[:-2], -1)
                    idc = eye[a0 : a0 + ca].reshape(1, -1).expand(*cols.shape[:-2], 1, cols.shape[-1])
                    yield torch.cat([cols, idc], -2).transpose(-1, -2)

            chunks = gen()
            m = H * (H + 1) // 2 + 1
        R = _tsqr(chunks, m, T.dtype, T.device, tb)
        self._R[key] = R
        return R

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
            out[..., i0 : i0 + step, :] = torch.linalg.vector_norm(torch.einsum("...rm,...mij->...rij", R, c), dim=-3)
        return out

    # -------------------------------------------------------------- the block-algebra interface
    def norms(self) -> torch.Tensor:
        return self._norms(self._factor("T"), lambda i0, i1: self.a[..., i0:i1, :])

    @property
    def terms(self) -> int:
        return 1 if self.exact else self.H

    def block_scale(self) -> torch.Tensor:
        """``Σ_h |a^h_ij| ‖T_h‖_F`` (edges form: ``‖B_ij‖_F``, its coefficients are the entries)."""
        if self.exact:
            return self.norms()
        tn = torch.linalg.matrix_norm(self.T)
        return torch.einsum("...hij,...h->...ij", self.a.abs(), tn)

    def norm_floor(self) -> torch.Tensor:
        """Rounding level of ``‖Σ_h a^h_ij T_h‖_F``: ``tol(float64, H)·Σ_h |a^h_ij| ‖T_h‖_F``; 0 for
        an edges-form walk (its unit-matrix coefficients are the entries themselves: no sum)."""
        if self.exact:
            return torch.zeros_like(self.P)
        tn = torch.linalg.matrix_norm(self.T)
        return tol(F64, self.H) * torch.einsum("...hij,...h->...ij", self.a.abs(), tn)

    def transport_norms(self) -> torch.Tensor:
        return self._norms(self._factor("T"), lambda i0, i1: self.w[..., i0:i1, :])

    def balance_defect(self, pi: torch.Tensor) -> torch.Tensor:
        a, aT = self.a, self.a.transpose(-1, -2)
        return self._norms(
            self._factor("TTt"),
            lambda i0, i1: torch.cat(
                [pi[..., None, i0:i1, None] * a[..., i0:i1, :], -pi[..., None, None, :] * aT[..., i0:i1, :]], -3
            ),
        )

    def transpose_defect(self) -> torch.Tensor:
        w, wT = self.w, self.w.transpose(-1, -2)
        return self._norms(self._factor("TTt"), lambda i0, i1: torch.cat([wT[..., i0:i1, :], -w[..., i0:i1, :]], -3))

    def gram_defect(self, c: torch.Tensor) -> torch.Tensor:
        hh, kk = torch.triu_indices(self.H, self.H, device=self.P.device)

        def coef(i0, i1):
            w = self.w[..., i0:i1, :]
            pair = w[..., hh, :, :] * w[..., kk, :, :] * (c[..., None, i0:i1, :] ** 2)
            return torch.cat([pair, -torch.ones_like(pair[..., :1, :, :])], -3)

        return self._norms(self._factor("gram"), coef)

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
        step = self._row_chunk(p * self.n * self.d * 2)
        for i0 in range(0, self.n, step):
            i1 = min(i0 + step, self.n)
            diff = x[..., i0:i1, None, :] - self._transported(Y, i0, i1)
            wt = (pi[..., i0:i1, None] * self.P[..., i0:i1, :] * self.sup[..., i0:i1, :])[..., None, :, :]
            E = E + 0.5 * (wt * (diff**2).sum(-1)).sum((-1, -2))
        return E

    def constraints_apply(self, x: torch.Tensor) -> torch.Tensor:
        """``C x`` ``(p, n, n, d)`` for one walk (``n²d`` per probe: small walks only)."""
        Y = self._tx(x)
        return (x[:, :, None, :] - self._transported(Y, 0, self.n)) * self.sup.to(F64)[None, :, :, None]

    def _coef_apply(self, c: torch.Tensor, x: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """``Σ_h c^h x T_hᵀ`` (``transpose``: ``Σ_h c^hᵀ x T_h``) for one walk, ``c`` ``(H, n, n)``,
        ``x`` ``(p, n, d)`` (with factors through ``W_V``, ``W_O``)."""
        self.counter[0] += x[..., 0, 0].numel()
        cc = (c.transpose(-1, -2) if transpose else c).unsqueeze(-4)
        if self.W_O is not None:
            if transpose:
                return ((cc @ (x.unsqueeze(-3) @ self.W_O)) @ self.W_V).sum(-3)  # type: ignore[operator]
            return ((cc @ (x.unsqueeze(-3) @ self.W_V.transpose(-1, -2))) @ self.W_O.transpose(-1, -2)).sum(-3)  # type: ignore[union-attr]
        T = self.T if transpose else self.T.transpose(-1, -2)
        return (cc @ (x.unsqueeze(-3) @ T.unsqueeze(-4))).sum(-3)

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
            g = torch.einsum("hik,gik->hgk", self.w, self.w).reshape(H * H, n)
            G = torch.zeros(n, d * d, dtype=F64, device=self.P.device)
            hh, kk = (t.reshape(-1) for t in torch.meshgrid(torch.arange(H), torch.arange(H), indexing="ij"))
            step = max(1, min(H * H, self.chunk_elems // max(d * d, 1)))
            for p0 in range(0, H * H, step):  # one (n × pairs)·(pairs × d²) product per block of head pairs
                pp = self._pair_products(hh[p0 : p0 + step], kk[p0 : p0 + step]).reshape(-1, d * d)
                G += g[p0 : p0 + step].T @ pp
            G = G.reshape(n, d, d)
        self._R["edge_gram"] = G
        return G

    def constraints_gram_fast(self, x: torch.Tensor) -> torch.Tensor:
        """``CᵀC x`` for one walk, ``x`` ``(p, n, d)``, from the expansion
        ``(CᵀCx)_k = deg_k x_k + G_k x_k − Σ_j O_kj x_j − Σ_i O_ikᵀ x_i`` (two walk-like products and
        the edge Gram ``G``): the cost of two ``W`` products instead of ``n²d`` per probe, but with
        the rounding ``eps·‖C‖²·‖x‖`` of the expansion (use :meth:`constraints_gram_apply` where
        ``‖Cx‖ ≪ ‖C‖‖x‖`` matters)."""
        deg = self.sup.to(F64).sum(-1)
        Gx = (self._edge_gram() @ x.permute(1, 2, 0)).permute(2, 0, 1)  # one d×d by d×p product per token
        return deg[:, None] * x + Gx - self._coef_apply(self.w, x) - self._coef_apply(self.w, x, transpose=True)

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


# ------------------------------------------------------------------------------------ assembly
def dirichlet_terms(fb: FactoredBlocks, hyp: dict) -> list:
    r"""Per flat batch index ``(w_min, π_max, ε_q)`` of the Dirichlet certificate
    (:mod:`numerics.laplacian_kernel`), or None where π is not positive: ``w_min = min π_i P_ij``
    over the support and ``ε_q`` bounds ``|<x, Δx>_π − ½ Σ π_i P_ij ‖x_i − O_ij x_j‖²|`` for a unit
    ``x`` from the algebraic checks' residuals — ``½(max_i π_i |1 − r_i| + ‖πP − ρπ‖_∞ + |1 − ρ| π_max
    + max_j (πP)_j · max_ij ‖O_ijᵀO_ij − I‖_F)`` (rows ``r_i = Σ_j P_ij``), plus ``tol(float64, n·d)·π_max``
    for their rounding. No reversibility is needed."""
    from numerics.tolerance import tol as _tol

    st = hyp["_st"]
    n = fb.n
    P = fb.P.reshape(-1, n, n)
    pis, pos = st.safe.reshape(-1, n), st.positive.reshape(-1)
    rho = st.info.rho.reshape(-1)
    res_pi = st.check.residual.reshape(-1)
    res_o = hyp["orthogonal"].residual.reshape(-1)
    out: list = []
    for b in range(P.shape[0]):
        pi = pis[b]
        if not bool(pos[b]) or not bool((pi > 0).all()) or not math.isfinite(float(res_o[b]) + float(res_pi[b])):
            out.append(None)
            continue
        F = pi[:, None] * P[b]
        w_min = float(F[P[b] > 0].min())
        pi_max = float(pi.max())
        eps_q = (
            0.5
            * (
                float((pi * (1 - P[b].sum(-1)).abs()).max())
                + float(res_pi[b])
                + abs(1 - float(rho[b])) * pi_max
                + float(F.sum(0).max()) * float(res_o[b])
            )
            + _tol(F64, n * fb.d) * pi_max
        )
        out.append((w_min, pi_max, eps_q))
    return out


def diagnose_factored(
    w,
    *,
    probes: int = 3,
    seed: int = 0,
    pi=None,
    tdt=F64,
    assemble_max: int = 32,
    k_max: int = 8,
    chunk_elems: int = 1 << 22,
    spectrum: bool = True,
    kernel: bool = True,
    tdt_p=None,
    memory_budget: int | None = None,
    max_matvecs: int | None = None,
    kernel_route: str = "sections",
):
    """The factored :class:`numerics.laplacian.LaplacianDiagnostics` of a :class:`ConnectionWalk`
    (use :func:`numerics.laplacian.diagnose` with ``method="factored"``). ``spectrum`` / ``kernel``
    False skip those checks (reported undefined with the reason); ``k_max``: most null directions of
    ``Δ`` searched for outside the parallel sections; ``max_matvecs``: cap on the kernel route's
    products with ``W``/``Wᵀ`` per walk (past it the kernel / flat checks are *undecided* with the
    reason). Default None: :data:`numerics.laplacian_kernel.MAX_MATVECS`, and a walk that fails a T3
    hypothesis gives the search for further null directions of ``Δ`` at most what the other checks
    spent (the early exit); an explicit value is the only cap, early exit included.
    ``kernel_route="arpack"``: the previous unbounded route, kept as the benchmark's baseline;
    ``assemble_max``: largest ``n·d`` assembled densely; ``chunk_elems``: the largest temporary
    (numbers); ``memory_budget``: bytes for :func:`factored_blocks` (default: the budget of
    :func:`numerics.validate.check_memory`). ``extra['seconds']`` / ``extra['matvecs']``: time and
    products per part (algebraic, spectrum, kernel)."""
    from numerics.errors import ParameterError
    from numerics.laplacian import _algebraic_checks, _skipped, assemble
    from numerics.laplacian_kernel import MAX_MATVECS
    from numerics.markov import weak_components

    early_exit = max_matvecs is None  # an explicit cap replaces the early exit's smaller one
    max_matvecs = MAX_MATVECS if max_matvecs is None else max_matvecs
    for name, val, lo in (
        ("assemble_max", assemble_max, 0),
        ("k_max", k_max, 1),
        ("chunk_elems", chunk_elems, 1),
        ("max_matvecs", max_matvecs, 1),
    ):
        if not isinstance(val, int) or isinstance(val, bool) or val < lo:
            raise ParameterError(f"must be an int >= {lo}, got {val!r}", argument=name)
    if w.device.type != "cpu":
        # the spectral and kernel routes drive ARPACK / host Lanczos with host vectors: the whole
        # factored diagnosis runs on a host copy and its result goes back to the walk's device
        kw = dict(probes=probes, seed=seed, pi=None if pi is None else torch.as_tensor(pi).cpu(), tdt=tdt)
        kw.update(assemble_max=assemble_max, k_max=k_max, chunk_elems=chunk_elems, spectrum=spectrum, kernel=kernel)
        kw.update(tdt_p=tdt_p, memory_budget=memory_budget, max_matvecs=None if early_exit else max_matvecs)
        return diagnose_factored(w.to(device="cpu"), kernel_route=kernel_route, **kw).to(w.device)
    t0 = time.perf_counter()
    w = w.to(dtype=F64)
    fb = factored_blocks(w, chunk_elems=chunk_elems, memory_budget=memory_budget)
    P = fb.P
    hyp = _algebraic_checks(fb, P, tdt, pi, probes, seed, tdt_p)
    seconds, matvecs = {"algebraic": time.perf_counter() - t0}, {"algebraic": fb.counter[0]}
    st, si, scale = hyp["_st"], hyp["scaled_isometry"], hyp["_scale"]
    sup = fb.sup
    n_comp = weak_components(sup | sup.transpose(-1, -2))
    extra = {"method": "factored", "tolerance_dtype": str(tdt_p or tdt), "H": fb.H}
    t0, c0 = time.perf_counter(), fb.counter[0]
    if spectrum:
        (s_int, s_disk, s_sc), facts = spectrum_factored(
            fb, st.safe, st.positive, scale, si, tdt, assemble_max=assemble_max, seed=seed
        )
        extra.update(facts)
    else:
        s_int, s_disk, s_sc = (
            _skipped(k, fb.batch, P.device, "skipped: spectrum=False")
            for k in ("spectrum_interval", "spectrum_disk", "spectrum_scaled")
        )
    seconds["spectrum"], matvecs["spectrum"] = time.perf_counter() - t0, fb.counter[0] - c0
    t0, c0 = time.perf_counter(), fb.counter[0]
    if kernel:
        t3 = hyp["stochastic"].holds & st.check.holds & hyp["detailed_balance"].holds & hyp["metric_compatible"].holds
        kp, flat, kD, kC, kfacts = kernel_factored(
            fb,
            n_comp,
            tdt,
            assemble_max=assemble_max,
            k_max=k_max,
            seed=seed,
            max_matvecs=max_matvecs,
            t3=t3 if early_exit else None,
            dirichlet=dirichlet_terms(fb, hyp),
            rest_matvecs=fb.counter[0],
            route=kernel_route,
        )
        if kfacts:
            extra["kernel_facts"] = kfacts
    else:
        kp, flat = (_skipped(k, fb.batch, P.device, "skipped: kernel=False") for k in ("kernel_parallel", "flat"))
        kD = kC = None
    seconds["kernel"], matvecs["kernel"] = time.perf_counter() - t0, fb.counter[0] - c0
    extra["seconds"], extra["matvecs"] = seconds, matvecs  # per part; matvecs: products with W, Wᵀ or coefficients
    return assemble(hyp, s_int, s_disk, s_sc, kp, flat, None, kD, kC, n_comp, fb.n, fb.d, extra)
