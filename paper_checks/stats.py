r"""Statistics of the paper checks E1 (walk geometry by depth) and E2 (transport isometry).

Every function is batched over a leading prompt axis ``B`` and computes in float64 (inputs are
upcast explicitly). Notation: ``P`` ``(B, n, n)`` is the effective walk of one layer,
``P = (1/H) Σ_h A^h`` (T2 convention); ``X`` ``(B, n, d)`` the hidden states that feed the layer
(``LayerCapture.attn_input``); head factors ``W_O`` ``(H, d, d_h)``, ``W_V`` ``(H, d_h, d)``,
``T_h = W_O[h] W_V[h]``. The *support* of ``P`` is where ``P > 0`` is allowed: all pairs for
encoders, ``j ≤ i`` for causal walks (detected from ``P``: strictly upper part identically 0).

E1 (walk) statistics — consecutive layers ``a = P_l``, ``b = P_{l+1}``:

* ``frob_change(a, b)  = ‖b − a‖_F / ‖a‖_F``;
* ``tv_change(a, b)    = (1/n) Σ_i ½ Σ_j |b_ij − a_ij|``  (mean row total variation, in [0, 1]);
* ``spectral_distance(a, b) = ‖σ(b) − σ(a)‖_2 / ‖σ(a)‖_2`` with σ the sorted singular values
  (:func:`walk_singular_values`);
* ``stationary_drift(a, b) = ½ ‖π(b) − π(a)‖_1`` with π the PageRank distribution
  ``π = (α/n) 1ᵀ (I − (1−α) P)^{-1}``, α = 0.15 (unique and positive also for causal walks,
  whose plain stationary distribution is the degenerate e_1);

single-layer statistics:

* ``reversibility_defect(P) = ‖F − Fᵀ‖_F / ‖F + Fᵀ‖_F``, ``F = diag(π) P`` with π the stationary
  distribution of ``P`` (``π = 1ᵀ (I − P + 11ᵀ)^{-1}``, :func:`numerics.markov.stationary_info`
  with its conditioning guard); 0 iff detailed balance holds (T3 b), in
  [0, 1]. NaN for causal walks: they are never reversible with a positive π (T4), so the statistic
  is not defined there;
* ``positional_r2(P) = 1 − Σ_S (P̃_ij − a(i−j))² / Σ_S P̃_ij²`` over the support S, where
  ``P̃`` is P with its row means (over S) subtracted and ``a(m)`` the mean of ``P̃`` over the m-th
  diagonal of S (least-squares Toeplitz fit): the fraction of the within-row variance of P
  explained by a positional kernel a(i−j);
* ``diffusion_r2(P, X)`` = squared within-row correlation over S between ``P`` and the
  row-normalised diffusion kernel ``K_ij ∝ exp(−‖x_i − x_j‖² / ε)`` (ε = median squared distance
  over S, i≠j; both row-centred): the within-row variance fraction explained by a linear function
  of a diffusion kernel on the hidden states. Row centring matters for causal walks, whose rows
  all share the ``1/(i+1)``-like normalisation profile.

Sink-aware variants: :func:`sink_positions` finds the positions that act as attention sinks
(position 0 always, plus every key whose mean received attention ``(1/n) Σ_i P_ij`` reaches
``tau`` in some layer); :func:`remove_sinks` deletes those tokens (rows and columns) and
renormalises the rows.

E2 (transport) statistics:

* ``sv_cv(s)``: coefficient of variation std/mean of the nonzero singular values (the
  partial-isometry defect: 0 iff ``T`` is a scaled partial isometry ``s U Vᵀ``);
* ``procrustes_defect(T) = min_{s, Q orthogonal} ‖T − sQ‖_F / ‖T‖_F
  = sqrt(1 − (Σ_k σ_k)² / (d Σ_k σ_k²))`` (all d singular values);
* data-dependent defect: CV over real hidden states x of the gain ``‖T x‖ / ‖x‖``;
* edge defect: for ``O_ij = H Σ_h g^h_ij T_h`` the CV of its r nonzero squared singular values,
  ``κ(O)² = r tr((OᵀO)²) / tr(OᵀO)² − 1``, averaged with weights ``P_ij``; computed from the head
  Gram terms without forming any ``O_ij`` (:func:`edge_defect`), reference :func:`edge_defect_naive`.
"""

from __future__ import annotations

import math

import torch

from numerics.contracts.validate import as_tensor, check_finite, check_ndim
from numerics.errors import ParameterError, ShapeError
from numerics.markov import stationary_info
from numerics.tolerance import tol

PAGERANK_ALPHA = 0.15
SINK_TAU = 0.2

F64 = torch.float64


def _walk(name: str, P) -> torch.Tensor:
    P = as_tensor(name, P)
    check_ndim(name, P, 3, "(B, n, n)", max_ndim=3)
    if P.shape[-1] != P.shape[-2]:
        raise ShapeError(f"expected (B, n, n), got {tuple(P.shape)}", argument=name)
    check_finite(name, P)
    return P.to(F64)


def _pair(Pa, Pb) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = _walk("Pa", Pa), _walk("Pb", Pb)
    if a.shape != b.shape:
        raise ShapeError(f"shape {tuple(b.shape)} differs from Pa's {tuple(a.shape)}", argument="Pb")
    return a, b


def is_causal(P: torch.Tensor) -> torch.Tensor:
    """``(B,)`` bool: the strictly upper triangle of ``P`` is identically zero (and n ≥ 2)."""
    n = P.shape[-1]
    if n < 2:
        return torch.zeros(P.shape[0], dtype=torch.bool, device=P.device)
    return torch.triu(P, diagonal=1).abs().flatten(1).amax(1) == 0


def support_mask(P: torch.Tensor) -> torch.Tensor:
    """``(B, n, n)`` bool support: lower triangle (incl. diagonal) for causal walks, else all."""
    n = P.shape[-1]
    low = torch.ones(n, n, dtype=torch.bool, device=P.device).tril()
    c = is_causal(P)
    return torch.where(c[:, None, None], low.expand_as(P), torch.ones_like(P, dtype=torch.bool))


# ---------------------------------------------------------------------------------------- E1
def frob_change(Pa, Pb) -> torch.Tensor:
    """``‖Pb − Pa‖_F / ‖Pa‖_F`` per prompt, ``(B,)``."""
    a, b = _pair(Pa, Pb)
    return torch.linalg.matrix_norm(b - a) / torch.linalg.matrix_norm(a)


def tv_change(Pa, Pb) -> torch.Tensor:
    """Mean row total variation ``(1/n) Σ_i ½ Σ_j |Pb_ij − Pa_ij|`` per prompt, ``(B,)``."""
    a, b = _pair(Pa, Pb)
    return 0.5 * (b - a).abs().sum(-1).mean(-1)


def walk_singular_values(P) -> torch.Tensor:
    """Singular values of ``P`` ``(B, n)`` descending, as ``sqrt(eigvalsh(P Pᵀ))``.

    LAPACK's SVD is very slow on the graded, nearly-uniform causal walks of random models; the
    Gram route is exact for the large singular values and accurate to ``~sqrt(eps)·σ_max`` for
    the ones near 0, negligible in :func:`spectral_distance`."""
    P = _walk("P", P)
    lam = torch.linalg.eigvalsh(P @ P.transpose(-1, -2)).flip(-1).clamp_min(0)
    return lam.sqrt()


def spectral_distance(Pa, Pb) -> torch.Tensor:
    """``‖σ(Pb) − σ(Pa)‖_2 / ‖σ(Pa)‖_2`` (sorted singular values) per prompt, ``(B,)``."""
    a, b = _pair(Pa, Pb)
    sa, sb = walk_singular_values(a), walk_singular_values(b)
    return torch.linalg.vector_norm(sb - sa, dim=-1) / torch.linalg.vector_norm(sa, dim=-1)


def pagerank(P, alpha: float = PAGERANK_ALPHA) -> torch.Tensor:
    """``π = (α/n) 1ᵀ (I − (1−α) P)^{-1}`` ``(B, n)``: stationary law of the walk that follows P
    with probability 1−α and jumps uniformly with probability α (P row-stochastic)."""
    P = _walk("P", P)
    if not 0 < alpha <= 1:
        raise ParameterError(f"must be in (0, 1], got {alpha}", argument="alpha")
    n = P.shape[-1]
    I = torch.eye(n, dtype=F64, device=P.device)
    rhs = torch.full((P.shape[0], n, 1), alpha / n, dtype=F64, device=P.device)
    pi = torch.linalg.solve((I - (1 - alpha) * P).transpose(-1, -2), rhs)[..., 0]
    return pi / pi.sum(-1, keepdim=True)


def stationary_drift(Pa, Pb, alpha: float = PAGERANK_ALPHA) -> torch.Tensor:
    """``½ ‖π(Pb) − π(Pa)‖_1`` with π the PageRank law (:func:`pagerank`), ``(B,)``."""
    a, b = _pair(Pa, Pb)
    return 0.5 * (pagerank(b, alpha) - pagerank(a, alpha)).abs().sum(-1)


def stationary(P, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Stationary law ``π = 1ᵀ (I − P + 11ᵀ)^{-1}`` ``(B, n)`` of an irreducible row-stochastic P
    (:func:`numerics.markov.stationary_info`): NaN where π is not unique or is ill-conditioned
    (``cond(I − P + 11ᵀ) · tol(dtype, n) ≥ 1``: the solve cannot resolve it).

    ``dtype``: the precision P's entries carry (default float32, the checkpoints' softmax; P itself is
    upcast to float64). It sets the row-sum tolerance and the conditioning guard."""
    P = _walk("P", P)
    return stationary_info(P, dtype=dtype).pi


def reversibility_defect(P, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``‖F − Fᵀ‖_F / ‖F + Fᵀ‖_F``, ``F = diag(π) P`` (π :func:`stationary`, ``dtype`` its
    precision); NaN for causal walks and where π is undefined."""
    P = _walk("P", P)
    causal = is_causal(P)
    out = torch.full((P.shape[0],), float("nan"), dtype=F64, device=P.device)
    if (~causal).any():
        Q = P[~causal]
        F = stationary(Q, dtype=dtype)[..., :, None] * Q
        Ft = F.transpose(-1, -2)
        out[~causal] = torch.linalg.matrix_norm(F - Ft) / torch.linalg.matrix_norm(F + Ft)
    return out


def _r2(resid_ss: torch.Tensor, total_ss: torch.Tensor, scale: torch.Tensor, count: int) -> torch.Tensor:
    """``1 − resid/total``; NaN where the total variance is at rounding level (nothing to explain)."""
    floor = tol(F64, count, scale=1.0) * scale
    r2 = 1 - resid_ss / total_ss.clamp_min(torch.finfo(F64).tiny)
    return torch.where(total_ss > floor, r2, torch.full_like(r2, float("nan")))


def _row_centred(P: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """``P_ij − mean_{j∈S_i} P_ij`` on the support, 0 off it."""
    Sf = S.to(F64)
    m = (P * Sf).sum(-1, keepdim=True) / Sf.sum(-1, keepdim=True).clamp_min(1)
    return (P - m) * Sf


def positional_r2(P) -> torch.Tensor:
    """Fraction of the within-row variance of P explained by a positional kernel ``a(i − j)``, ``(B,)``.

    ``Pc = P − row means`` on the support S; ``a(m)`` = mean of ``Pc`` over the m-th diagonal of S
    (its least-squares Toeplitz fit); ``R² = 1 − Σ_S (Pc − a(i−j))² / Σ_S Pc²`` ∈ [0, 1]. Row
    centring removes what every walk shares (rows sum to 1: the causal ``1/(i+1)`` profile); NaN
    when P has no within-row variance (e.g. uniform attention)."""
    P = _walk("P", P)
    B, n, _ = P.shape
    Sb = support_mask(P)
    S = Sb.to(F64)
    Pc = _row_centred(P, Sb)
    idx = (torch.arange(n, device=P.device)[:, None] - torch.arange(n, device=P.device)[None, :]) + n - 1
    idx = idx.reshape(-1).expand(B, -1)
    sums = torch.zeros(B, 2 * n - 1, dtype=F64, device=P.device).scatter_add_(1, idx, Pc.reshape(B, -1))
    cnts = torch.zeros(B, 2 * n - 1, dtype=F64, device=P.device).scatter_add_(1, idx, S.reshape(B, -1))
    a = sums / cnts.clamp_min(1)
    fit = a.gather(1, idx).reshape(B, n, n) * S
    resid = ((Pc - fit) ** 2).sum((-1, -2))
    total = (Pc**2).sum((-1, -2))
    return _r2(resid, total, (P * P * S).sum((-1, -2)), n * n)


def sq_dists(X) -> torch.Tensor:
    """Pairwise squared distances ``‖x_i − x_j‖²`` ``(B, n, n)`` of ``X`` ``(B, n, d)``."""
    X = as_tensor("X", X)
    check_ndim("X", X, 3, "(B, n, d)", max_ndim=3)
    check_finite("X", X)
    X = X.to(F64)
    g = (X * X).sum(-1)
    D = g[:, :, None] + g[:, None, :] - 2 * X @ X.transpose(-1, -2)
    D = D.clamp_min(0)
    n = X.shape[1]
    return D * (1 - torch.eye(n, dtype=F64, device=X.device))


def diffusion_r2(P, D2) -> torch.Tensor:
    """Squared within-row correlation between ``P`` and the row-normalised diffusion kernel
    ``K_ij ∝ exp(−D2_ij / ε)`` (ε = median of ``D2`` over the off-diagonal support), ``(B,)``:
    ``(Σ_S P̃ K̃)² / (Σ_S P̃² Σ_S K̃²)`` with ``P̃, K̃`` row-centred on the support S (so the shared
    row-normalisation profile of causal walks does not count as explained).

    ``D2`` ``(B, n, n)``: squared distances of the hidden states (:func:`sq_dists`)."""
    P = _walk("P", P)
    D2 = _walk("D2", D2)
    if D2.shape != P.shape:
        raise ShapeError(f"shape {tuple(D2.shape)} differs from P's {tuple(P.shape)}", argument="D2")
    B, n, _ = P.shape
    S = support_mask(P)
    off = S & ~torch.eye(n, dtype=torch.bool, device=P.device)
    out = torch.full((B,), float("nan"), dtype=F64, device=P.device)
    for b in range(B):
        vals = D2[b][off[b]]
        if vals.numel() == 0:
            continue
        eps_ = vals.median()
        if not eps_ > 0:
            continue
        K = torch.exp(-D2[b] / eps_) * S[b]
        K = K / K.sum(-1, keepdim=True)
        p, k = P[b][S[b]], K[S[b]]
        pc, kc = _row_centred(P[b], S[b])[S[b]], _row_centred(K, S[b])[S[b]]
        den = (pc * pc).sum() * (kc * kc).sum()
        if den > tol(F64, p.numel()) * ((p * p).sum() * (k * k).sum()):
            out[b] = (pc * kc).sum() ** 2 / den
    return out


def column_mass(P) -> torch.Tensor:
    """Mean attention received by each key, ``(1/n) Σ_i P_ij`` ``(B, n)``."""
    P = _walk("P", P)
    return P.mean(-2)


def sink_positions(Ps, tau: float = SINK_TAU) -> torch.Tensor:
    """Sink positions shared by all prompts and layers, ``(n,)`` bool.

    ``Ps`` ``(L, B, n, n)``: position 0 always; any key whose mean received attention (averaged
    over prompts) reaches ``tau`` in at least one layer."""
    Ps = as_tensor("Ps", Ps)
    check_ndim("Ps", Ps, 4, "(L, B, n, n)", max_ndim=4)
    mass = Ps.to(F64).mean(-2).mean(1)  # (L, n)
    sinks = (mass >= tau).any(0)
    sinks[0] = True
    return sinks


def remove_sinks(P, sinks) -> torch.Tensor:
    """Delete sink tokens (rows and columns) and renormalise rows: ``(B, n', n')``."""
    P = _walk("P", P)
    sinks = torch.as_tensor(sinks, dtype=torch.bool, device=P.device)
    if sinks.shape != (P.shape[-1],):
        raise ShapeError(f"expected ({P.shape[-1]},) bool, got {tuple(sinks.shape)}", argument="sinks")
    keep = ~sinks
    if int(keep.sum()) < 2:
        raise ShapeError("fewer than 2 tokens remain after removing sinks", argument="sinks")
    Q = P[:, keep][:, :, keep]
    rs = Q.sum(-1, keepdim=True)
    if bool((rs <= 0).any()):
        raise ShapeError("a non-sink row puts all its mass on sinks; cannot renormalise", argument="sinks")
    return Q / rs


def remove_sink_dists(D2, sinks) -> torch.Tensor:
    """The matching restriction of squared distances ``(B, n', n')``."""
    keep = ~torch.as_tensor(sinks, dtype=torch.bool, device=D2.device)
    return D2[:, keep][:, :, keep]


# ---------------------------------------------------------------------------------------- E2
def cv(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Coefficient of variation ``std/mean`` (population std) along ``dim``."""
    m = x.mean(dim)
    return (x - m.unsqueeze(dim)).pow(2).mean(dim).sqrt() / m


def _factors(W_O, W_V) -> tuple[torch.Tensor, torch.Tensor]:
    W_O = as_tensor("W_O", W_O)
    W_V = as_tensor("W_V", W_V)
    check_ndim("W_O", W_O, 3, "(H, d, d_h)", max_ndim=3)
    check_ndim("W_V", W_V, 3, "(H, d_h, d)", max_ndim=3)
    check_finite("W_O", W_O)
    check_finite("W_V", W_V)
    H, d, dh = W_O.shape
    if W_V.shape != (H, dh, d):
        raise ShapeError(f"expected {(H, dh, d)} to match W_O {tuple(W_O.shape)}", argument="W_V")
    return W_O.to(F64), W_V.to(F64)


def head_singular_values(W_O, W_V) -> torch.Tensor:
    """Singular values of ``T_h = W_O[h] W_V[h]`` on its rank bound d_h, ``(H, d_h)`` descending.

    ``W_O = Q_o R_o``, ``W_Vᵀ = Q_v R_v`` (thin QR) give ``σ(T_h) = σ(R_o R_vᵀ)``: d_h×d_h work."""
    Wo, Wv = _factors(W_O, W_V)
    _, Ro = torch.linalg.qr(Wo)
    _, Rv = torch.linalg.qr(Wv.transpose(-1, -2))
    return torch.linalg.svdvals(Ro @ Rv.transpose(-1, -2))


def nonzero_sv_cv(s: torch.Tensor, rank_tol: float) -> torch.Tensor:
    """CV of the singular values above ``rank_tol · σ_max`` along the last axis (rows: heads)."""
    s = s.to(F64)
    keep = s > rank_tol * s.amax(-1, keepdim=True)
    cnt = keep.sum(-1)
    m = (s * keep).sum(-1) / cnt
    var = (((s - m[..., None]) * keep) ** 2).sum(-1) / cnt
    return var.sqrt() / m


def procrustes_defect(s: torch.Tensor, d: int) -> torch.Tensor:
    """``sqrt(1 − (Σσ)² / (d Σσ²))`` from singular values ``s`` (zeros beyond ``len(s)`` count)."""
    s = s.to(F64)
    return (1 - s.sum(-1) ** 2 / (d * (s * s).sum(-1))).clamp_min(0).sqrt()


def data_gain_cv(W_O, W_V, X) -> torch.Tensor:
    """CV over tokens of ``‖T_h x‖ / ‖x‖``, ``(B, H)``; ``X`` ``(B, n, d)`` real hidden states.

    ``‖T_h x‖² = zᵀ (W_O[h]ᵀ W_O[h]) z`` with ``z = W_V[h] x``: one ``(B n) × d × (H d_h)`` GEMM."""
    Wo, Wv = _factors(W_O, W_V)
    X = as_tensor("X", X)
    check_ndim("X", X, 3, "(B, n, d)", max_ndim=3)
    X = X.to(F64)
    B, n, d = X.shape
    H, dh = Wv.shape[0], Wv.shape[1]
    z = (X.reshape(B * n, d) @ Wv.reshape(H * dh, d).T).reshape(B * n, H, dh)  # (Bn, H, d_h)
    G = Wo.transpose(-1, -2) @ Wo  # (H, d_h, d_h)
    sq = torch.einsum("thi,hij,thj->th", z, G, z).clamp_min(0)  # (Bn, H)
    g = sq.sqrt() / torch.linalg.vector_norm(X.reshape(B * n, d), dim=-1)[:, None]
    return cv(g.reshape(B, n, H).transpose(1, 2), -1)


def summed_singular_values(W_O, W_V) -> torch.Tensor:
    """All d singular values of ``T_Σ = Σ_h T_h`` (descending).

    Heads that share a value block (GQA) are grouped first, ``T_Σ = Σ_g (Σ_{h∈g} W_O[h]) W_V[g]``,
    so the inner dimension is ``k = (#groups)·d_h``. When ``k < d`` the nonzero singular values are
    those of ``R_o R_vᵀ`` (thin QRs of the grouped factors, k × k) and the other ``d − k`` are exactly
    0; otherwise ``svdvals`` of the dense ``d × d`` product."""
    Wo, Wv = _factors(W_O, W_V)
    H, d, dh = Wo.shape
    blocks: list[torch.Tensor] = []
    sums: list[torch.Tensor] = []
    for h in range(H):
        for g, b in enumerate(blocks):
            if torch.equal(b, Wv[h]):
                sums[g] = sums[g] + Wo[h]
                break
        else:
            blocks.append(Wv[h])
            sums.append(Wo[h])
    Og = torch.cat(sums, dim=1)  # (d, k)
    Vg = torch.cat(blocks, dim=0)  # (k, d)
    k = Og.shape[1]
    if k >= d:
        return torch.linalg.svdvals(Og @ Vg)
    Ro = torch.linalg.qr(Og)[1]
    Rv = torch.linalg.qr(Vg.T)[1]
    s = torch.linalg.svdvals(Ro @ Rv.T)
    return torch.cat([s, torch.zeros(d - k, dtype=F64, device=s.device)])


def factor_rank(W_O, W_V, rank_tol: float) -> int:
    """Rank bound r of every edge transport: ``min(rank W_O_cat, rank W_V_cat)``."""
    Wo, Wv = _factors(W_O, W_V)
    H, d, dh = Wo.shape
    Oc = Wo.permute(1, 0, 2).reshape(d, H * dh)
    Vc = Wv.reshape(H * dh, d)
    # singular values from the (H d_h)² Gram matrices (eigvalsh: cheaper than an SVD)
    so = torch.linalg.eigvalsh(Oc.T @ Oc).clamp_min(0).sqrt()
    sv = torch.linalg.eigvalsh(Vc @ Vc.T).clamp_min(0).sqrt()
    ro = int((so > rank_tol * so.max()).sum())
    rv = int((sv > rank_tol * sv.max()).sum())
    return min(ro, rv)


def edge_gram_terms(W_O, W_V) -> tuple[torch.Tensor, torch.Tensor]:
    """Head Gram terms ``(G2 (H, H), Q4 (H, H, H, H))`` of the edge transports.

    With ``C_hk = W_O[h]ᵀ W_O[k]`` and ``D_kl = W_V[k] W_V[l]ᵀ`` (d_h × d_h) and
    ``O = Σ_h c_h T_h``: ``tr(OᵀO) = Σ c_h c_k G2_hk``, ``G2_hk = tr(C_hk D_kh)``, and
    ``tr((OᵀO)²) = Σ c_h c_k c_l c_m Q4_hklm``, ``Q4_hklm = tr(C_hk D_kl C_lm D_mh)``.
    Cost ``O(H³ d_h³ + H⁴ d_h²)``; no d×d (let alone n²d²) object is formed."""
    Wo, Wv = _factors(W_O, W_V)
    H, d, dh = Wo.shape
    C = torch.einsum("hdi,kdj->hkij", Wo, Wo)  # (H, H, dh, dh)
    D = torch.einsum("kid,ljd->klij", Wv, Wv)  # (H, H, dh, dh)
    G2 = torch.einsum("hkij,khji->hk", C, D)
    X = torch.einsum("hkij,klja->hklia", C, D)  # X_hkl = C_hk D_kl
    # Q4[h,k,l,m] = tr(X_hkl X_lmh) = Σ_ia X[h,k,l,i,a] X[l,m,h,a,i]
    Xf = X.permute(0, 2, 1, 3, 4).reshape(H, H, H, dh * dh)  # (h, l, k, e)
    Y = X.transpose(-1, -2).reshape(H, H, H, dh * dh)  # (l, m, h, e) with e = (a, i) transposed
    Yf = Y.permute(2, 0, 1, 3)  # (h, l, m, e)
    Q = Xf @ Yf.transpose(-1, -2)  # (h, l, k, m)
    Q4 = Q.permute(0, 2, 1, 3).contiguous()  # (h, k, l, m)
    return G2, Q4


def edge_defect(A, W_O, W_V, rank: int, *, gram=None) -> torch.Tensor:
    """P-weighted mean over edges of ``κ(O_ij)``, computed factored, ``(B,)``.

    ``A`` ``(B, H, n, n)`` head attention; ``O_ij = H Σ_h g^h_ij T_h = Σ_h (A^h_ij / P_ij) T_h``
    with ``P = mean_h A^h``; ``κ(O)² = r tr((OᵀO)²)/tr(OᵀO)² − 1`` (CV of the r nonzero squared
    singular values); ``Σ_ij P_ij κ(O_ij) / Σ_ij P_ij``. Edges with ``P_ij = 0`` carry weight 0."""
    A = as_tensor("A", A)
    check_ndim("A", A, 4, "(B, H, n, n)", max_ndim=4)
    A = A.to(F64)
    G2, Q4 = gram if gram is not None else edge_gram_terms(W_O, W_V)
    B, H, n, _ = A.shape
    if G2.shape[0] != H:
        raise ShapeError(f"has H={H} heads but the factors have {G2.shape[0]}", argument="A")
    P = A.mean(1)  # (B, n, n)
    c = (A / P.clamp_min(torch.finfo(F64).tiny)[:, None]).permute(0, 2, 3, 1).reshape(-1, H)  # (E, H)
    w = P.reshape(-1)
    s2 = torch.einsum("eh,hk,ek->e", c, G2, c)
    # quartic form via the symmetric pair vector u = c ⊗ c
    Qm = Q4.reshape(H * H, H * H)
    out = torch.empty_like(s2)
    chunk = 8192
    for s in range(0, c.shape[0], chunk):
        cc = c[s : s + chunk]
        u = (cc[:, :, None] * cc[:, None, :]).reshape(-1, H * H)
        out[s : s + chunk] = ((u @ Qm) * u).sum(-1)
    s4 = out
    ok = (w > 0) & (s2 > 0)
    k2 = torch.where(ok, rank * s4 / torch.where(ok, s2, torch.ones_like(s2)) ** 2 - 1, torch.zeros_like(s2))
    kappa = k2.clamp_min(0).sqrt().reshape(B, n * n)
    w = (w * ok).reshape(B, n * n)
    return (kappa * w).sum(-1) / w.sum(-1)


def edge_defect_naive(A, W_O, W_V, rank: int) -> torch.Tensor:
    """Dense float64 reference of :func:`edge_defect`: forms every ``O_ij`` and its singular values."""
    A = as_tensor("A", A).to(F64)
    Wo, Wv = _factors(W_O, W_V)
    T = Wo @ Wv  # (H, d, d)
    B, H, n, _ = A.shape
    P = A.mean(1)
    out = torch.zeros(B, dtype=F64)
    for b in range(B):
        num = den = 0.0
        for i in range(n):
            for j in range(n):
                p = float(P[b, i, j])
                if p <= 0:
                    continue
                O = torch.einsum("h,hde->de", A[b, :, i, j] / p, T)
                s = torch.linalg.svdvals(O)[:rank]
                lam = s * s
                kap = math.sqrt(max(float(lam.var(unbiased=False) / lam.mean() ** 2), 0.0))
                num += p * kap
                den += p
        out[b] = num / den
    return out


# ----------------------------------------------------------------------------- E2 baselines
def svd_factors(W_O, W_V) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``T_h = U_h diag(s_h) V_hᵀ`` on the rank bound d_h: ``U (H, d, d_h)``, ``s (H, d_h)``,
    ``V (H, d, d_h)`` (from the thin QRs of the factors; no d×d SVD)."""
    Wo, Wv = _factors(W_O, W_V)
    Qo, Ro = torch.linalg.qr(Wo)
    Qv, Rv = torch.linalg.qr(Wv.transpose(-1, -2))
    u, s, vh = torch.linalg.svd(Ro @ Rv.transpose(-1, -2))
    return Qo @ u, s, Qv @ vh.transpose(-1, -2)


def spectrum_matched_factors(W_O, W_V, generator: torch.Generator, *, svd=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Baseline: the same singular values, Haar-random singular vectors (per head).

    Returns factors ``(U' s^{1/2}, s^{1/2} V'ᵀ)`` with ``U', V'`` random orthonormal ``(d, d_h)``.
    ``svd``: a precomputed :func:`svd_factors` result."""
    _, s, _ = svd if svd is not None else svd_factors(W_O, W_V)
    H, dh = s.shape
    d = W_O.shape[1]

    def haar():
        G = torch.randn(H, d, dh, generator=generator, dtype=F64)
        Q, R = torch.linalg.qr(G)
        return Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))[:, None, :]

    U, V = haar(), haar()
    r = s.sqrt()
    return U * r[:, None, :], (V * r[:, None, :]).transpose(-1, -2)


def flat_factors(W_O, W_V, *, svd=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Baseline: the head's own subspaces with a flat spectrum, ``T'_h = mean(s_h) U_h V_hᵀ``."""
    U, s, V = svd if svd is not None else svd_factors(W_O, W_V)
    r = s.mean(-1).sqrt()[:, None, None]
    return U * r, (V * r).transpose(-1, -2)
