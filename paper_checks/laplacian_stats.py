r"""Statistics of the ``LAP`` check: how far a real attention layer is from a connection Laplacian.

Notation (one layer, one prompt; every function is batched over a leading prompt axis ``B``):
``A`` ``(B, H, n, n)`` head attention, ``W_O`` ``(H, d, d_h)``, ``W_V`` ``(H, d_h, d)``,
``T_h = W_O[h] W_V[h]``, blocks ``B_ij = Σ_h A^h_ij T_h``, walk gauge ``P = mean_h A^h`` and
``O_ij = B_ij / P_ij = Σ_h c^h_ij T_h`` with ``c^h_ij = A^h_ij / P_ij`` (THEOREMS.md T2); ``X``
``(B, n, d)`` the layer's real input (``LayerCapture.attn_input``), ``Y = W X`` (rows
``y_i = Σ_j B_ij x_j``: the attention output without the bias offset).

Hypothesis defects (0 iff the hypothesis holds; all relative, scale-free):

* ``stochastic``: ``max_i |Σ_j P_ij − 1|`` (T3 a);
* ``detailed_balance``: ``‖F − Fᵀ‖_F / ‖F + Fᵀ‖_F``, ``F = diag(π) P``, π stationary (T3 b);
* ``block_detailed_balance``: ``‖G − G^τ‖ / ‖G + G^τ‖`` with ``G_ij = π̂_i B_ij``,
  ``G^τ_ij = π̂_j B_jiᵀ`` (Frobenius over all blocks), π̂ the gauge-free π of the block norms
  (stationary law of ``N_ij / Σ_k N_ik`` divided by the row sums, ``N_ij = ‖B_ij‖_F``);
* ``transpose_symmetry``: ``(Σ w_ij ‖O_ij − O_jiᵀ‖² / Σ w_ij ‖O_ij + O_jiᵀ‖²)^{1/2}`` over the
  two-way edges, ``w_ij = (P_ij + P_ji)/2`` (T3 c, second half);
* ``orthogonality``: ``Σ_ij P_ij ‖O_ijᵀO_ij − I‖_F/√d / Σ_ij P_ij`` (T3 c, first half);
* ``scaled_isometry``: ``Σ_ij P_ij ι(O_ij) / Σ_ij P_ij``, ``ι(O)² = d tr((OᵀO)²)/tr(OᵀO)² − 1``
  (the CV of all ``d`` squared singular values: 0 iff ``O = sQ``, ``Q`` orthogonal);

conclusion statuses:

* ``self_adjoint``: ``‖ΠW − WᵀΠ‖_F / ‖ΠW + WᵀΠ‖_F``, ``Π = diag(π) ⊗ I_d`` (T3.1);
* ``dirichlet``: the Dirichlet identity on the real input ``x``: ``|a − b| / (a + b)`` with
  ``a = ½ Σ_i π_i (2 − r_i) ‖x_i‖²`` and ``b = ½ Σ_ij π_i P_ij ‖O_ij x_j‖²`` (``r_i = Σ_j P_ij``),
  since ``<x, Δx>_π − ½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖² = a − b`` for any π-weighted walk (T3.3);
* ``spectral_radius``: ``ρ(W)``; T3.2 (spectrum of Δ in [0, 2]) implies ``ρ(W) ≤ 1`` (matrix-free
  ARPACK, :func:`spectral_radius`).

Distances to walks that satisfy the hypotheses (:func:`nearest_walk_distances`; THEOREMS.md
"LAP" states and proves the properties):

* ``dist_reversible``: ``‖Y − W_rev X‖_F / ‖Y‖_F``, ``W_rev = Π''⁻¹ ½ (ΠW + WᵀΠ)`` (π as below,
  ``π'' = ½(π ⊙ r + Pᵀπ)``): the renormalised π-self-adjoint part of ``W``. Its walk
  ``P'' = F/π''``, ``F = ½(ΠP + PᵀΠ)``, is stochastic and reversible w.r.t. π''; its transports
  ``O''_ij = (f_ij O_ij + f_ji O_jiᵀ)/(f_ij + f_ji)`` (``f_ij = π_i P_ij``) satisfy ``O''_ji = O''_ijᵀ``;
  when π is stationary (π'' = π) it is the orthogonal projection of ``W`` onto the π-self-adjoint
  operators in the Hilbert–Schmidt norm of ``ℓ²(π) ⊗ ℝ^d`` (the nearest one in that norm).
* ``dist_laplacian``: ``min_{s ≥ 0, Q} ‖Y − (P'' ⊗ sQ) X‖_F / ‖Y‖_F`` over orthogonal involutions
  ``Q = Qᵀ = Q⁻¹`` (the T5 connection Laplacians on the reversible walk P''); closed form:
  ``S = sym(ZᵀY)`` with ``Z = P''X`` (rows), ``S = U Λ Uᵀ``, ``Q* = U sign(Λ) Uᵀ``,
  ``s* = Σ|λ| / ‖Z‖_F²`` (von Neumann's trace inequality). ``P'' ⊗ s*Q*`` satisfies (a), (b) and
  scaled metric compatibility, so this is an upper bound on the distance to the set of all scaled
  connection Laplacians (with per-edge transports) in the same output norm.

Why the two targets satisfy the hypotheses (tested in ``tests/paper_checks/test_laplacian_check.py``
with the dense ``numerics.laplacian.diagnose``):

* ``W_rev`` has blocks ``B''_ij = (π_i B_ij + π_j B_jiᵀ) / (2π''_i)``. With ``f_ij = π_i P_ij`` and
  ``F = (f + fᵀ)/2`` (symmetric, ≥ 0): ``π''_i = Σ_j F_ij``, so ``P'' = F/π''`` has rows summing to 1
  (a) and ``π''_i P''_ij = F_ij = π''_j P''_ji`` (b, ``π'' > 0`` because ``π > 0``). Its transports
  ``O''_ij = B''_ij / P''_ij = (f_ij O_ij + f_ji O_jiᵀ)/(f_ij + f_ji)`` satisfy ``O''_ji = O''_ijᵀ``, and
  ``π''_i B''_ij = ½(π_i B_ij + π_j B_jiᵀ) = (π''_j B''_ji)ᵀ``: Δ'' is π''-self-adjoint (T3.1). When
  ``πP = π``, ``π'' = π`` and ``W_rev = ½(W + W*)`` with ``W* = Π⁻¹WᵀΠ`` the ``ℓ²(π)``-adjoint; ``W − W_rev``
  is π-skew, orthogonal to every π-self-adjoint ``S`` in ``<M, N> = tr(M* N)``, so ``W_rev`` is the
  nearest π-self-adjoint operator in that norm. Orthogonality of ``O''`` is *not* enforced.
* ``P'' ⊗ sQ`` with ``Q = Qᵀ = Q⁻¹``: every transport is ``sQ`` (a scaled orthogonal map) and
  ``O_ji = sQ = O_ijᵀ``; with (a), (b) from ``P''`` this is T3 with the scale of item 6 (T5 up to the
  scale): π''-self-adjoint, spectrum in ``[1 − s, 1 + s]``. Optimality: for orthogonal ``Q``,
  ``‖Y − sZQ‖² = ‖Y‖² − 2s<ZᵀY, Q> + s²‖Z‖²`` and for symmetric ``Q``, ``<ZᵀY, Q> = <S, Q> ≤ Σ|λ_i(S)|``
  (von Neumann's trace inequality, all singular values of ``Q`` equal 1), with equality at ``Q*``;
  minimising over ``s ≥ 0`` gives ``s*``.

π: the stationary distribution of ``P`` when it is positive (encoders); for causal walks (never
reversible with a positive π, T4) the π-dependent defects are NaN and the nearest walk uses the
PageRank law (α = 0.15), which is positive. Cost per prompt: ``O(H² n² + H n d d_h)`` for
everything except ``orthogonality`` / ``scaled_isometry`` (``O(H⁴ n²)`` from the head Gram terms of
:func:`paper_checks.stats.edge_gram_terms`); nothing of size ``n²d²`` (not even ``n d²``) is formed.
:func:`dense_reference` is the literal float64 reference (forms every block; small sizes only).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.contracts.validate import as_tensor, check_finite, check_ndim
from numerics.errors import ShapeError
from numerics.tolerance import tol
from paper_checks import stats as S

F64 = torch.float64

HYPOTHESES = (
    "stochastic",
    "detailed_balance",
    "block_detailed_balance",
    "transpose_symmetry",
    "orthogonality",
    "scaled_isometry",
)
CONCLUSIONS = ("self_adjoint", "dirichlet", "spectral_radius")
DISTANCES = ("dist_reversible", "dist_laplacian")


def gram_resolution(n: int, H: int) -> float:
    """Absolute resolution of the Gram-identity defects (``block_detailed_balance``, ``self_adjoint``,
    ``transpose_symmetry``, ``orthogonality``, ``scaled_isometry``): each is the square root of a
    difference of two sums of ``H² n²`` float64 terms of magnitude ~1 (e.g. ``‖a − b‖² = ‖a‖² + ‖b‖²
    − 2<a, b>``), so a defect that is exactly 0 comes out as up to ``√tol(float64, H² n²)`` (~1e-6
    at n = 128, H = 12) — far below any defect of a real layer (0.1–1) and below the float32 status
    tolerance of the check."""
    return math.sqrt(tol(F64, H * H * n * n))


# ------------------------------------------------------------------------------------------ inputs
_SEEN: list = []  # fingerprints of the last validated float64 tensors (nested calls skip re-checking)


def _fp(t) -> tuple | None:
    if not isinstance(t, torch.Tensor) or t.dtype != F64:
        return None
    return (id(t), t.data_ptr(), tuple(t.shape), t._version)


def _finite(name: str, t: torch.Tensor) -> None:
    fp = _fp(t)
    if fp is not None and fp in _SEEN:
        return
    check_finite(name, t)
    if fp is not None:
        _SEEN.append(fp)
        del _SEEN[:-8]


def _inputs(A, W_O, W_V, X=None):
    A = as_tensor("A", A)
    check_ndim("A", A, 4, "(B, H, n, n)", max_ndim=4)
    _finite("A", A)
    for nm, w in (("W_O", W_O), ("W_V", W_V)):
        if isinstance(w, torch.Tensor):
            _finite(nm, w)
    Wo, Wv = (
        (W_O, W_V)
        if all(_fp(w) is not None and _fp(w) in _SEEN for w in (W_O, W_V))
        and W_O.ndim == 3
        and W_V.ndim == 3
        and W_V.shape == (W_O.shape[0], W_O.shape[2], W_O.shape[1])
        else S._factors(W_O, W_V)
    )
    B, H, n, n2 = A.shape
    if n != n2:
        raise ShapeError(f"expected (B, H, n, n), got {tuple(A.shape)}", argument="A")
    if Wo.shape[0] != H:
        raise ShapeError(f"has H={H} heads but W_O has {Wo.shape[0]}", argument="A")
    if X is None:
        return A.to(F64), Wo, Wv
    X = as_tensor("X", X)
    check_ndim("X", X, 3, "(B, n, d)", max_ndim=3)
    _finite("X", X)
    if X.shape != (B, n, Wo.shape[1]):
        raise ShapeError(f"expected {(B, n, Wo.shape[1])} to match A and W_O, got {tuple(X.shape)}", argument="X")
    return A.to(F64), Wo, Wv, X.to(F64)


def head_grams(W_O, W_V) -> tuple[torch.Tensor, torch.Tensor]:
    """``G_hk = tr(T_hᵀ T_k)`` and ``N_hk = tr(T_h T_k)`` ``(H, H)``, from d_h×d_h products only.

    For coefficient vectors ``a, b``: ``‖Σ a_h T_h‖_F² = aᵀGa`` and
    ``<Σ a_h T_h, Σ b_k T_kᵀ>_F = aᵀNb``."""
    Wo, Wv = S._factors(W_O, W_V)
    C = torch.einsum("hdi,kdj->hkij", Wo, Wo)  # W_O[h]ᵀ W_O[k]
    D = torch.einsum("kid,ljd->klij", Wv, Wv)  # W_V[k] W_V[l]ᵀ
    G = torch.einsum("hkij,khji->hk", C, D)
    E = torch.einsum("hid,kde->hkie", Wv, Wo)  # W_V[h] W_O[k]  (d_h × d_h)
    N = torch.einsum("hkij,khji->hk", E, E)
    return G, N


def transport_grams(W_O, W_V) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(G, N, Q4)`` of the layer: :func:`head_grams` and the quartic ``Q4_hklm = tr(C_hk D_kl C_lm D_mh)``
    of :func:`paper_checks.stats.edge_gram_terms`, from three ``(H d_h)²`` GEMMs
    (``C = W_Oᵀ W_O``, ``D = W_V W_Vᵀ``, ``E = W_V W_O`` on the concatenated heads) shared by all."""
    Wo, Wv = S._factors(W_O, W_V)
    H, d, dh = Wo.shape
    Oc = Wo.permute(1, 0, 2).reshape(d, H * dh)
    Vc = Wv.reshape(H * dh, d)
    C = (Oc.T @ Oc).reshape(H, dh, H, dh).permute(0, 2, 1, 3)  # C[h,k] = W_O[h]ᵀ W_O[k]
    D = (Vc @ Vc.T).reshape(H, dh, H, dh).permute(0, 2, 1, 3)  # D[k,l] = W_V[k] W_V[l]ᵀ
    E = (Vc @ Oc).reshape(H, dh, H, dh).permute(0, 2, 1, 3)  # E[h,k] = W_V[h] W_O[k]
    G = (C * D.permute(1, 0, 3, 2)).sum((-1, -2))  # tr(C_hk D_kh)
    N = (E * E.permute(1, 0, 3, 2)).sum((-1, -2))  # tr(E_hk E_kh)
    X = torch.einsum("hkij,klja->hklia", C, D)  # C_hk D_kl
    Xf = X.permute(0, 2, 1, 3, 4).reshape(H, H, H, dh * dh)  # (h, l, k, e)
    Yf = X.transpose(-1, -2).reshape(H, H, H, dh * dh).permute(2, 0, 1, 3)  # (h, l, m, e)
    Q4 = (Xf @ Yf.transpose(-1, -2)).permute(0, 2, 1, 3).contiguous()  # (h, k, l, m)
    return G, N, Q4


def stationary_or_nan(P: torch.Tensor) -> torch.Tensor:
    """Stationary law ``(B, n)`` of ``P``; NaN rows for causal walks (no positive π, T4)."""
    causal = S.is_causal(P)
    out = torch.full(P.shape[:-1], float("nan"), dtype=F64, device=P.device)
    if (~causal).any():
        out[~causal] = S.stationary(P[~causal])
    return out


def walk_pi(P: torch.Tensor) -> torch.Tensor:
    """The positive π used by the nearest walks: stationary (non-causal) or PageRank (causal)."""
    causal = S.is_causal(P)
    pi = S.pagerank(P)
    if (~causal).any():
        pi[~causal] = S.stationary(P[~causal])
    return pi


def block_pi(A: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """Gauge-free π ``(B, n)`` from the block norms ``N_ij = ‖B_ij‖_F = (A_ijᵀ G A_ij)^{1/2}``.

    ``π ∝ π'/r`` with ``r_i = Σ_j N_ij`` and ``π'`` the stationary law of ``N/r`` (then
    ``π_i N_ij = π_j N_ji`` whenever block detailed balance holds). NaN for causal walks."""
    Nn = _edge_quad(A, G, A).clamp_min(0).sqrt()
    r = Nn.sum(-1)
    Nh = Nn / r.clamp_min(torch.finfo(F64).tiny)[..., None]
    pi = stationary_or_nan(Nh) / r
    return pi / pi.sum(-1, keepdim=True)


def _pi_sym_defect(A: torch.Tensor, pi: torch.Tensor, G: torch.Tensor, N: torch.Tensor) -> torch.Tensor:
    """``‖ΠW − WᵀΠ‖_F / ‖ΠW + WᵀΠ‖_F`` for weights π ``(B, n)`` (NaN where π is NaN).

    With ``Ã^h = diag(π) A^h``: ``Σ_ij ‖π_i B_ij ∓ π_j B_jiᵀ‖² = 2 Σ_hk (G_hk S_hk ∓ N_hk R_hk)``,
    ``S_hk = <Ã^h, Ã^k>_F``, ``R_hk = <Ã^h, Ã^kᵀ>_F``: O(H² n²)."""
    At = torch.nan_to_num(pi)[:, None, :, None] * A
    Sg = torch.einsum("bhij,bkij->bhk", At, At)
    Rg = torch.einsum("bhij,bkji->bhk", At, At)
    gs = (G * Sg).sum((-1, -2))
    nr = (N * Rg).sum((-1, -2))
    out = ((gs - nr).clamp_min(0) / (gs + nr).clamp_min(torch.finfo(F64).tiny)).sqrt()
    return torch.where(torch.isnan(pi).any(-1), torch.full_like(out, float("nan")), out)


# ------------------------------------------------------------------------------------- defects
def _edge_quad(a: torch.Tensor, M: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a_ijᵀ M b_ij`` per edge for ``a, b`` ``(B, H, n, n)`` (head axis 1), ``(B, n, n)``."""
    ap = a.permute(0, 2, 3, 1)
    return ((ap @ M) * b.permute(0, 2, 3, 1)).sum(-1)


def stochastic_defect(A) -> torch.Tensor:
    """``max_i |Σ_j P_ij − 1|`` ``(B,)``."""
    A = as_tensor("A", A).to(F64)
    return (A.mean(1).sum(-1) - 1).abs().amax(-1)


def hypothesis_defects(A, W_O, W_V, *, quartic: bool = True, gram=None) -> dict[str, torch.Tensor]:
    """Every hypothesis defect and the ``self_adjoint`` conclusion, factored, each ``(B,)``.

    ``quartic`` False skips ``orthogonality`` / ``scaled_isometry`` (the O(H⁴ n²) ones).
    ``gram``: precomputed :func:`transport_grams` ``(G, N, Q4)`` of the layer."""
    A, Wo, Wv = _inputs(A, W_O, W_V)
    Bsz, H, n, _ = A.shape
    d = Wo.shape[1]
    G, N, Q4 = gram if gram is not None else transport_grams(Wo, Wv)
    P = A.mean(1)
    out = {"stochastic": (P.sum(-1) - 1).abs().amax(-1)}
    out["detailed_balance"] = S.reversibility_defect(P)
    pi = stationary_or_nan(P)
    out["block_detailed_balance"] = _pi_sym_defect(A, block_pi(A, G), G, N)
    out["self_adjoint"] = _pi_sym_defect(A, pi, G, N)
    # transpose symmetry on two-way edges (walk gauge)
    c = A / P.clamp_min(torch.finfo(F64).tiny)[:, None]
    ct = c.transpose(-1, -2)
    two = (P > 0) & (P.transpose(-1, -2) > 0)
    g_ij = _edge_quad(c, G, c)  # ‖O_ij‖²
    g_ji = g_ij.transpose(-1, -2)  # ‖O_ji‖² = ‖O_jiᵀ‖²
    x_ij = _edge_quad(c, N, ct)  # <O_ij, O_jiᵀ>
    w = 0.5 * (P + P.transpose(-1, -2)) * two
    num = (w * (g_ij + g_ji - 2 * x_ij)).sum((-1, -2))
    den = (w * (g_ij + g_ji + 2 * x_ij)).sum((-1, -2))
    out["transpose_symmetry"] = (num.clamp_min(0) / den.clamp_min(torch.finfo(F64).tiny)).sqrt()
    if quartic:
        G2 = G
        cf = c.permute(0, 2, 3, 1).reshape(-1, H)
        s2 = ((cf @ G2) * cf).sum(-1)
        Qm = Q4.reshape(H * H, H * H)
        s4 = torch.empty_like(s2)
        for s in range(0, cf.shape[0], 8192):
            cc = cf[s : s + 8192]
            u = (cc[:, :, None] * cc[:, None, :]).reshape(-1, H * H)
            s4[s : s + 8192] = ((u @ Qm) * u).sum(-1)
        wp = P.reshape(-1)
        orth = ((s4 - 2 * s2 + d).clamp_min(0) / d).sqrt()
        ok = s2 > 0
        iso = torch.where(
            ok, (d * s4 / torch.where(ok, s2, torch.ones_like(s2)) ** 2 - 1).clamp_min(0).sqrt(), torch.zeros_like(s2)
        )
        W_ = wp.reshape(Bsz, -1)
        out["orthogonality"] = (orth.reshape(Bsz, -1) * W_).sum(-1) / W_.sum(-1)
        out["scaled_isometry"] = (iso.reshape(Bsz, -1) * W_ * ok.reshape(Bsz, -1)).sum(-1) / (
            W_ * ok.reshape(Bsz, -1)
        ).sum(-1)
    return out


# ----------------------------------------------------------------------------------- on data
def walk_output(A, W_O, W_V, X) -> torch.Tensor:
    """``Y = W X`` rows ``y_i = Σ_j Σ_h A^h_ij T_h x_j``: ``Σ_h A^h (X W_V[h]ᵀ) W_O[h]ᵀ`` ``(B, n, d)``."""
    A, Wo, Wv, X = _inputs(A, W_O, W_V, X)
    Bsz, H, n, _ = A.shape
    d, dh = Wo.shape[1], Wo.shape[2]
    Z = (X @ Wv.reshape(H * dh, d).T).reshape(Bsz, n, H, dh).transpose(1, 2)  # (B, H, n, d_h)
    U = (A @ Z).transpose(1, 2).reshape(Bsz, n, H * dh)
    return U @ Wo.permute(1, 0, 2).reshape(d, H * dh).T


def walk_transpose_output(A, W_O, W_V, U) -> torch.Tensor:
    """``Wᵀ U`` rows ``Σ_j B_jiᵀ u_j``: ``Σ_h A^hᵀ (U W_O[h]) W_V[h]`` ``(B, n, d)``."""
    A, Wo, Wv, U = _inputs(A, W_O, W_V, U)
    Bsz, H, n, _ = A.shape
    d, dh = Wo.shape[1], Wo.shape[2]
    Z = (U @ Wo.permute(1, 0, 2).reshape(d, H * dh)).reshape(Bsz, n, H, dh).transpose(1, 2)  # U W_O[h]
    V = (A.transpose(-1, -2) @ Z).transpose(1, 2).reshape(Bsz, n, H * dh)
    return V @ Wv.reshape(H * dh, d)


def dirichlet_defect(A, W_O, W_V, X, *, pi=None) -> torch.Tensor:
    """``|a − b| / (a + b)`` of the Dirichlet identity on ``X`` (module docstring), ``(B,)``.

    ``b = ½ Σ_ij π_i ‖B_ij x_j‖² / P_ij`` with ``‖B_ij x_j‖² = A_ijᵀ K_j A_ij``,
    ``K_j[h, k] = (T_h x_j)ᵀ (T_k x_j)``: O(H² n² + H² d_h² n). NaN for causal walks (unless ``pi``)."""
    A, Wo, Wv, X = _inputs(A, W_O, W_V, X)
    P = A.mean(1)
    pi = stationary_or_nan(P) if pi is None else as_tensor("pi", pi).to(F64)
    Bsz, H, n, _ = A.shape
    d, dh = Wo.shape[1], Wo.shape[2]
    z = (X.reshape(-1, d) @ Wv.reshape(H * dh, d).T).reshape(-1, H, dh)  # W_V[h] x_j, (B n, H, d_h)
    Tx = torch.einsum("thi,hdi->thd", z, Wo)  # T_h x_j, (B n, H, d)
    K = (Tx @ Tx.transpose(-1, -2)).reshape(Bsz, n, H, H)  # K_j[h, k] = (T_h x_j)ᵀ(T_k x_j)
    Aj = A.permute(0, 3, 2, 1)  # (B, j, i, h)
    bx = ((Aj @ K) * Aj).sum(-1).transpose(-1, -2)  # ‖B_ij x_j‖² = A_ijᵀ K_j A_ij, (B, i, j)
    sup = P > 0
    bterm = torch.where(sup, bx / torch.where(sup, P, torch.ones_like(P)), torch.zeros_like(P))
    pis = torch.nan_to_num(pi)
    b = 0.5 * (pis[:, :, None] * bterm).sum((-1, -2))
    a = 0.5 * (pis * (2 - P.sum(-1)) * (X * X).sum(-1)).sum(-1)
    out = (a - b).abs() / (a + b).abs().clamp_min(torch.finfo(F64).tiny)
    return torch.where(torch.isnan(pi).any(-1), torch.full_like(out, float("nan")), out)


def reversible_part(A, W_O, W_V, X, *, pi=None, Y=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(W_rev X, π'', P'')``: the renormalised π-self-adjoint part of the walk applied to ``X``.

    ``W_rev X = (π ⊙ WX + Wᵀ(π ⊙ X)) / (2π'')``, ``π'' = ½(π ⊙ r + Pᵀπ)``, ``P'' = F / π''`` with
    ``F = ½(diag(π) P + Pᵀ diag(π))``; π = :func:`walk_pi` unless given (must be positive)."""
    A, Wo, Wv, X = _inputs(A, W_O, W_V, X)
    P = A.mean(1)
    pi = walk_pi(P) if pi is None else as_tensor("pi", pi).to(F64)
    if bool((pi <= 0).any()) or bool(torch.isnan(pi).any()):
        raise ShapeError("must be positive and finite", argument="pi")
    Y = walk_output(A, Wo, Wv, X) if Y is None else Y
    YT = walk_transpose_output(A, Wo, Wv, pi[..., None] * X)
    pi2 = 0.5 * (pi * P.sum(-1) + (P.transpose(-1, -2) @ pi[..., None])[..., 0])
    F = 0.5 * (pi[..., :, None] * P + (pi[..., :, None] * P).transpose(-1, -2))
    P2 = F / pi2[..., :, None]
    return (pi[..., None] * Y + YT) / (2 * pi2[..., None]), pi2, P2


def involution_fit(Y: torch.Tensor, Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s*, Q*)`` minimising ``‖Y − s Z Q‖_F`` over ``s ≥ 0`` and orthogonal involutions ``Q``.

    ``S = ½(ZᵀY + YᵀZ) = U Λ Uᵀ``; ``Q* = U sign(Λ) Uᵀ`` (sign 0 → +1) maximises ``<S, Q>`` over
    symmetric orthogonal ``Q`` (von Neumann: ``<S, Q> ≤ Σ|λ_i|``), ``s* = Σ|λ| / ‖Z‖_F²``."""
    M = Z.transpose(-1, -2) @ Y
    Sm = 0.5 * (M + M.transpose(-1, -2))
    lam, U = torch.linalg.eigh(Sm)
    sg = torch.where(lam >= 0, torch.ones_like(lam), -torch.ones_like(lam))
    Q = (U * sg[..., None, :]) @ U.transpose(-1, -2)
    zz = (Z * Z).sum((-1, -2))
    s = lam.abs().sum(-1) / zz.clamp_min(torch.finfo(F64).tiny)
    return s, Q


def involution_apply(Y: torch.Tensor, Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s*, s* Z Q*)`` of :func:`involution_fit` without any ``d × d`` eigenproblem when ``2n < d``.

    ``S = sym(ZᵀY)`` vanishes off ``V = span(rows of Z and Y)`` (``d × m``, ``m ≤ 2n``, orthonormal
    from a QR), so ``S = V S_c Vᵀ`` with ``S_c = sym((ZV)ᵀ(YV))`` (m × m) has the same nonzero
    eigenvalues, and ``Z Q* = (ZV) U_c sign(Λ_c) U_cᵀ Vᵀ`` because ``Z (I − VVᵀ) = 0``: O(n d² → n² d)."""
    Bsz, n, d = Z.shape
    if 2 * n >= d:
        s, Q = involution_fit(Y, Z)
        return s, s[:, None, None] * (Z @ Q)
    V, _ = torch.linalg.qr(torch.cat([Z, Y], 1).transpose(-1, -2))  # (B, d, 2n)
    Zc, Yc = Z @ V, Y @ V
    Mc = Zc.transpose(-1, -2) @ Yc
    lam, U = torch.linalg.eigh(0.5 * (Mc + Mc.transpose(-1, -2)))
    sg = torch.where(lam >= 0, torch.ones_like(lam), -torch.ones_like(lam))
    zz = (Z * Z).sum((-1, -2))
    s = lam.abs().sum(-1) / zz.clamp_min(torch.finfo(F64).tiny)
    ZQ = ((Zc @ (U * sg[..., None, :])) @ U.transpose(-1, -2)) @ V.transpose(-1, -2)
    return s, s[:, None, None] * ZQ


def nearest_walk_distances(A, W_O, W_V, X) -> dict[str, torch.Tensor]:
    """``dist_reversible`` and ``dist_laplacian`` ``(B,)`` (module docstring), plus the fitted
    scale ``laplacian_scale`` s* of the involution walk."""
    A, Wo, Wv, X = _inputs(A, W_O, W_V, X)
    Y = walk_output(A, Wo, Wv, X)
    Yr, _, P2 = reversible_part(A, Wo, Wv, X, Y=Y)
    ny = torch.linalg.vector_norm(Y, dim=(-1, -2)).clamp_min(torch.finfo(F64).tiny)
    s, YL = involution_apply(Y, P2 @ X)
    return {
        "dist_reversible": torch.linalg.vector_norm(Y - Yr, dim=(-1, -2)) / ny,
        "dist_laplacian": torch.linalg.vector_norm(Y - YL, dim=(-1, -2)) / ny,
        "laplacian_scale": s,
    }


def spectral_radius(A, W_O, W_V, *, index: int = 0, tol_arpack: float = 1e-6, seed: int = 0) -> float:
    """``ρ(W)`` of prompt ``index``: the modulus of the largest-modulus eigenvalue of ``W`` (ARPACK
    ``eigs`` on the factored walk, relative accuracy ``tol_arpack``). ``Δ = I − W`` has eigenvalues
    ``1 − μ``, so T3.2 (spec Δ ⊂ [0, 2]) implies ``ρ(W) ≤ 1``. Matrix-free: one matvec costs one
    attention layer; nothing of size ``(nd)²`` is formed."""
    from scipy.sparse.linalg import LinearOperator, eigs

    from numerics.walk import ConnectionWalk

    A, Wo, Wv = _inputs(A, W_O, W_V)
    w = ConnectionWalk.from_factors(A[index], Wo, Wv)
    n, d = w.n, w.d

    def mv(x):
        Xt = torch.from_numpy(np.ascontiguousarray(np.asarray(x).reshape(n, d), dtype=np.float64))
        return w.apply(Xt.to(Wo.device)).reshape(-1).cpu().numpy()

    op = LinearOperator((n * d, n * d), matvec=mv, dtype=np.float64)
    v0 = np.random.default_rng(seed).standard_normal(n * d)
    vals = eigs(op, k=1, which="LM", v0=v0, tol=tol_arpack, return_eigenvectors=False)
    return float(np.abs(vals).max())


def constant_field_radius(W_O, W_V) -> float:
    """``ρ(Σ_h T_h)``, a prompt-independent lower bound on ``ρ(W)``: with row-stochastic ``A^h`` a
    constant field ``x_i = v`` maps to ``(Wx)_i = Σ_h (Σ_j A^h_ij) T_h v = (Σ_h T_h) v``, so every
    eigenvalue of ``Σ_h T_h`` is one of ``W`` (eigenvector ``1 ⊗ v``). One ``d × d`` eigensolve."""
    Wo, Wv = S._factors(W_O, W_V)
    T = (Wo @ Wv).sum(0)
    return float(torch.linalg.eigvals(T).abs().max())


# ----------------------------------------------------------------------------- dense reference
def dense_reference(A, W_O, W_V, X, *, b: int = 0) -> dict[str, float]:
    """Literal float64 reference of every statistic for prompt ``b`` (forms all ``n²`` blocks,
    ``O_ij``, the dense ``nd × nd`` ``W``, ``W_rev``; the involution fit by the same closed form on
    dense products). Small sizes only: ``O(n² d² + (nd)³)``."""
    A = torch.as_tensor(A, dtype=F64)[b]
    Wo = torch.as_tensor(W_O, dtype=F64)
    Wv = torch.as_tensor(W_V, dtype=F64)
    X = torch.as_tensor(X, dtype=F64)[b]
    H, n, _ = A.shape
    d = Wo.shape[1]
    T = Wo @ Wv
    P = A.mean(0)
    Bk = torch.einsum("hij,hab->ijab", A, T)
    O = Bk / P[:, :, None, None]
    eye = torch.eye(d, dtype=F64)
    causal = bool((torch.triu(P, 1) == 0).all()) and n > 1
    out: dict[str, float] = {"stochastic": float((P.sum(1) - 1).abs().max())}

    def stat(Pm):
        Mt = torch.eye(n, dtype=F64) - Pm + 1.0
        p = torch.linalg.solve(Mt.T, torch.ones(n, dtype=F64))
        return p / p.sum()

    pi = None if causal else stat(P)
    if pi is None:
        out["detailed_balance"] = out["self_adjoint"] = out["block_detailed_balance"] = out["dirichlet"] = math.nan
    else:
        F = pi[:, None] * P
        out["detailed_balance"] = float(torch.linalg.norm(F - F.T) / torch.linalg.norm(F + F.T))
        Wd = Bk.permute(0, 2, 1, 3).reshape(n * d, n * d)
        pid = pi.repeat_interleave(d)
        PW, WP = pid[:, None] * Wd, Wd.T * pid[None, :]  # Π W and Wᵀ Π (Π diagonal)
        out["self_adjoint"] = float(torch.linalg.norm(PW - WP) / torch.linalg.norm(PW + WP))
        Nn = torch.linalg.matrix_norm(Bk)
        r = Nn.sum(1)
        bp = stat(Nn / r[:, None]) / r
        bp = bp / bp.sum()
        Gb = bp[:, None, None, None] * Bk
        Gt = (bp[:, None, None, None] * Bk).permute(1, 0, 3, 2)
        out["block_detailed_balance"] = float(torch.linalg.norm(Gb - Gt) / torch.linalg.norm(Gb + Gt))
        lhs = float((pi[:, None] * X * (X - (Wd @ X.reshape(-1)).reshape(n, d))).sum())
        E = 0.0
        for i in range(n):
            for j in range(n):
                E += 0.5 * float(pi[i] * P[i, j] * ((X[i] - O[i, j] @ X[j]) ** 2).sum())
        a = 0.5 * float((pi * (2 - P.sum(1)) * (X * X).sum(1)).sum())
        bb = 0.5 * sum(float(pi[i] * P[i, j] * ((O[i, j] @ X[j]) ** 2).sum()) for i in range(n) for j in range(n))
        out["dirichlet"] = abs(lhs - E) / abs(a + bb)
    num = den = 0.0
    so = sw = si = swi = 0.0
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0 and P[j, i] > 0:
                wgt = 0.5 * float(P[i, j] + P[j, i])
                num += wgt * float(torch.linalg.norm(O[i, j] - O[j, i].T) ** 2)
                den += wgt * float(torch.linalg.norm(O[i, j] + O[j, i].T) ** 2)
            if P[i, j] > 0:
                p = float(P[i, j])
                so += p * float(torch.linalg.norm(O[i, j].T @ O[i, j] - eye)) / math.sqrt(d)
                sw += p
                lam = torch.linalg.svdvals(O[i, j]) ** 2  # all d squared singular values
                if float(lam.sum()) > 0:
                    si += p * math.sqrt(max(float(lam.var(unbiased=False) / lam.mean() ** 2), 0.0))
                    swi += p
    out["transpose_symmetry"] = math.sqrt(num / den)
    out["orthogonality"] = so / sw
    out["scaled_isometry"] = si / swi
    # nearest walks, densely
    pw = stat(P) if not causal else _pagerank_dense(P)
    Wd = Bk.permute(0, 2, 1, 3).reshape(n * d, n * d)
    pwd = pw.repeat_interleave(d)
    pi2 = 0.5 * (pw * P.sum(1) + P.T @ pw)
    Wrev = (0.5 * (pwd[:, None] * Wd + Wd.T * pwd[None, :])) / pi2.repeat_interleave(d)[:, None]
    x = X.reshape(-1)
    y = Wd @ x
    out["dist_reversible"] = float(torch.linalg.norm(y - Wrev @ x) / torch.linalg.norm(y))
    Fm = 0.5 * (pw[:, None] * P + (pw[:, None] * P).T)
    P2 = Fm / pi2[:, None]
    Z = P2 @ X
    s, Q = involution_fit(y.reshape(n, d)[None], Z[None])
    WL = torch.kron(P2, s[0] * Q[0])  # token-major P'' ⊗ sQ (Q symmetric)
    out["dist_laplacian"] = float(torch.linalg.norm(y - WL @ x) / torch.linalg.norm(y))
    out["spectral_radius"] = float(torch.linalg.eigvals(Wd).abs().max())
    return out


def _pagerank_dense(P: torch.Tensor, alpha: float = S.PAGERANK_ALPHA) -> torch.Tensor:
    n = P.shape[0]
    v = torch.linalg.solve((torch.eye(n, dtype=F64) - (1 - alpha) * P).T, torch.full((n,), alpha / n, dtype=F64))
    return v / v.sum()
