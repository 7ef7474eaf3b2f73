r"""Run one model over a batch of prompts and collect every E1 / E2 statistic per layer.

:func:`measure` streams :class:`numerics.models.base.LayerCapture` objects from a model handle
and returns a :class:`Measurement`: per statistic an array ``(U, K)`` (units × layers, see
:mod:`paper_checks.inference`) plus per-layer curves for the figures. Definitions of the
statistics are in :mod:`paper_checks.stats`; the table of what is measured is :data:`E1_STATS`
and :data:`E2_STATS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import torch

from numerics.errors import ModelError, ShapeError
from numerics.tolerance import tol
from paper_checks import stats as S

F64 = torch.float64


@dataclass(frozen=True)
class StatSpec:
    claim: str
    id: str
    summary: str  # key of inference.SUMMARIES
    direction: int  # -1: smaller supports the claim; +1: larger supports it
    unit: str  # what the bootstrap resamples
    definition: str
    reference: float | None = None  # absolute condition on the trained value (ratio < 1)


CHANGE_DEF = {
    "walk_change_frob": "‖P_{l+1} − P_l‖_F / ‖P_l‖_F",
    "walk_change_tv": "(1/n) Σ_i ½ Σ_j |P_{l+1,ij} − P_{l,ij}| (mean row total variation)",
    "walk_spectral_distance": "‖σ(P_{l+1}) − σ(P_l)‖_2 / ‖σ(P_l)‖_2 (sorted singular values)",
    "stationary_drift": "½ ‖π_{l+1} − π_l‖_1, π = PageRank law of P_l (α = 0.15)",
}
LEVEL_DEF = {
    "reversibility_defect": (
        "‖F − Fᵀ‖_F / ‖F + Fᵀ‖_F, F = diag(π) P_l, π stationary (NaN: causal, never reversible by T4)",
        -1,
    ),
    "positional_r2": (
        "1 − Σ_S (P̃_ij − a(i−j))² / Σ_S P̃_ij², P̃ = P minus its row means on the support S, "
        "a = least-squares Toeplitz kernel",
        +1,
    ),
    "diffusion_r2": (
        "within-row corr²_S(P, K), K = row-normalised exp(−‖x_i − x_j‖²/ε), ε = median, both row-centred on S",
        +1,
    ),
}

E1_STATS: list[StatSpec] = [
    StatSpec(
        "E1",
        k,
        "late_early_ratio",
        -1,
        "prompts",
        f"late-third / early-third ratio of the per-layer mean of {v}",
        reference=1.0,
    )
    for k, v in CHANGE_DEF.items()
] + [
    StatSpec("E1", k, "late_mean", s, "prompts", f"late-third mean over layers of {v}")
    for k, (v, s) in LEVEL_DEF.items()
]

E2_STATS: list[StatSpec] = [
    StatSpec(
        "E2",
        "head_sv_cv",
        "mean",
        -1,
        "heads",
        "mean over heads and layers of std/mean of the nonzero singular values of T_h (partial-isometry defect)",
    ),
    StatSpec(
        "E2",
        "summed_sv_cv",
        "mean",
        -1,
        "layers",
        "mean over layers of std/mean of the nonzero singular values of T_Σ = Σ_h T_h (on its rank)",
    ),
    StatSpec(
        "E2",
        "summed_procrustes",
        "mean",
        -1,
        "layers",
        "mean over layers of min_{s,Q} ‖T_Σ − sQ‖_F/‖T_Σ‖_F = sqrt(1 − (Σσ)²/(dΣσ²)), Q orthogonal d×d",
    ),
    StatSpec(
        "E2",
        "data_gain_cv",
        "mean",
        -1,
        "prompts",
        "mean over layers and heads of the CV over the layer's real input tokens x of ‖T_h x‖/‖x‖",
    ),
    StatSpec(
        "E2",
        "edge_defect",
        "mean",
        -1,
        "prompts",
        "Σ_ij P_ij κ(O_ij)/Σ_ij P_ij, κ(O)² = r tr((OᵀO)²)/tr(OᵀO)² − 1 (CV of the r nonzero σ²), "
        "O_ij = H Σ_h g^h_ij T_h; from head Gram terms",
    ),
]

# E2 statistics that have the two transport baselines (same hidden states and gates)
E2_BASELINED = ("summed_sv_cv", "summed_procrustes", "data_gain_cv", "edge_defect")
BASELINES = ("spectrum_matched", "flat_subspace")
VARIANTS = ("plain", "sink-aware")


@dataclass
class Measurement:
    """All statistics of one model on one prompt batch.

    ``e1[variant][stat]``: ``(B, K)`` per prompt × layer (K = L−1 for changes, L for levels);
    ``e2[stat]``: ``(U, K)``; ``e2_baselines[baseline][stat]``: same layout;
    ``spectra``: ``(L, H, d_h)`` singular values of T_h (figures); ``sinks``: sink positions."""

    name: str
    kind: str
    family: str
    n_params: int
    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    n_prompts: int
    length: int
    e1: dict = field(default_factory=dict)
    e2: dict = field(default_factory=dict)
    e2_baselines: dict = field(default_factory=dict)
    spectra: np.ndarray | None = None
    sinks: list = field(default_factory=list)
    edge_layers: list = field(default_factory=list)
    checks: dict = field(default_factory=dict)  # name -> result of a per-layer hook (see measure)


def spread_layers(L: int, k: int) -> list[int]:
    """``k`` evenly spaced layer indices of ``range(L)`` (all when ``k ≥ L``), first and last included."""
    if k >= L:
        return list(range(L))
    if k <= 1:
        return [L - 1]
    return sorted({round(i * (L - 1) / (k - 1)) for i in range(k)})


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", F64).numpy()


def _summed(wo, wv, rank_tol: float, d: int) -> tuple[float, float]:
    """Partial-isometry CV and Procrustes defect of the summed transport ``Σ_h T_h``."""
    sv = S.summed_singular_values(wo, wv)
    return float(S.nonzero_sv_cv(sv[None], rank_tol)[0]), float(S.procrustes_defect(sv, d))


def measure(
    handle,
    input_ids: torch.Tensor,
    *,
    baselines: bool = True,
    edge_layers: int = 6,
    edge_prompts: int = 4,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
    hooks: Iterable = (),
) -> Measurement:
    """Measure every E1/E2 statistic of ``handle`` on ``input_ids`` ``(B, n)``.

    ``baselines``: also compute the E2 spectrum-matched and flat-subspace baselines (trained model).
    ``edge_layers`` / ``edge_prompts``: the edge defect (the costly one) is computed on that many
    evenly spaced layers and the first that many prompts. ``progress(1)`` is called per layer.
    ``hooks``: objects with ``name``, ``layer(index, A, X, W_O, W_V)`` (float64 tensors of each layer,
    called in order) and ``finish(n_layers)``; their results land in ``Measurement.checks[name]``
    (further checks on the same forward pass, e.g. :mod:`paper_checks.laplacian_check`)."""
    hooks = list(hooks)
    B, n = int(input_ids.shape[0]), int(input_ids.shape[1])
    L = int(handle.n_layers)
    e_layers = spread_layers(L, edge_layers)
    gen = torch.Generator().manual_seed(int(seed) * 7919 + 17)
    Ps, D2s = [], []
    head_cv, summed_cv, procr, data_cv, edge = [], [], [], [], []
    base: dict[str, dict[str, list]] = {b: {k: [] for k in E2_BASELINED} for b in BASELINES}
    spectra = []
    seen = []
    for cap in handle.layers(input_ids):
        if cap.mask is not None and not bool(cap.mask.all()):
            raise ModelError(
                "padded prompts are not supported by the paper checks; use full-length prompts", argument="input_ids"
            )
        attn_dtype = cap.A.dtype  # the precision the walk's entries carry (π's conditioning guard)
        A = cap.A.detach().to("cpu", F64)
        X = cap.attn_input.detach().to("cpu", F64)
        Wo = cap.W_O.detach().to("cpu", F64)
        Wv = cap.W_V.detach().to("cpu", F64)
        H, d, dh = Wo.shape
        rank_tol = tol(cap.W_O.dtype, d)
        seen.append(cap.layer)
        P = A.mean(1)
        Ps.append(P)
        D2s.append(S.sq_dists(X))
        # --- E2 weight statistics
        U, s, V = S.svd_factors(Wo, Wv)  # T_h = U_h diag(s_h) V_hᵀ, s (H, dh)
        spectra.append(_np(s))
        head_cv.append(_np(S.nonzero_sv_cv(s, rank_tol)))

        c, p = _summed(Wo, Wv, rank_tol, d)
        summed_cv.append(c)
        procr.append(p)
        data_cv.append(_np(S.data_gain_cv(Wo, Wv, X).mean(-1)))  # (B,)
        variants = {"trained": (Wo, Wv)}
        if baselines:
            variants["spectrum_matched"] = S.spectrum_matched_factors(Wo, Wv, gen, svd=(U, s, V))
            variants["flat_subspace"] = S.flat_factors(Wo, Wv, svd=(U, s, V))
            for bname in BASELINES:
                wo, wv = variants[bname]
                c2, p2 = _summed(wo, wv, rank_tol, d)
                base[bname]["summed_sv_cv"].append(c2)
                base[bname]["summed_procrustes"].append(p2)
                base[bname]["data_gain_cv"].append(_np(S.data_gain_cv(wo, wv, X).mean(-1)))
        if (len(seen) - 1) in e_layers:
            r = S.factor_rank(Wo, Wv, rank_tol)
            Ae = A[:edge_prompts]
            edge.append(_np(S.edge_defect(Ae, Wo, Wv, r)))
            if baselines:
                for bname in BASELINES:
                    wo, wv = variants[bname]
                    rb = S.factor_rank(wo, wv, rank_tol)
                    base[bname]["edge_defect"].append(_np(S.edge_defect(Ae, wo, wv, rb)))
        for hk in hooks:
            hk.layer(len(seen) - 1, A, X, Wo, Wv)
        if progress is not None:
            progress(1)
    if len(Ps) != L:
        raise ModelError(f"model streamed {len(Ps)} layers, expected n_layers={L}", argument="handle")
    m = Measurement(
        name=handle.name,
        kind=handle.kind,
        family=getattr(handle, "family", ""),
        n_params=int(getattr(handle, "n_params", 0)),
        n_layers=L,
        n_heads=int(handle.n_heads),
        d_model=int(handle.d_model),
        d_head=int(handle.d_head),
        n_prompts=B,
        length=n,
        edge_layers=e_layers,
    )
    Pst = torch.stack(Ps)  # (L, B, n, n)
    sinks = S.sink_positions(Pst)
    m.sinks = [int(i) for i in torch.nonzero(sinks).flatten()]
    if n - len(m.sinks) < 2:  # data-dependent: known only after this model's own pass
        raise ShapeError(
            f"{n} tokens leave {n - len(m.sinks)} after removing the attention-sink positions {m.sinks} of "
            f"{handle.name} (the sink-aware statistics need at least 2); use a longer length",
            argument="length",
        )
    for variant in VARIANTS:
        if variant == "plain":
            Pv, Dv = Ps, D2s
        else:
            Pv = [S.remove_sinks(P, sinks) for P in Ps]
            Dv = [S.remove_sink_dists(D, sinks) for D in D2s]
        e1 = {}
        e1["walk_change_frob"] = np.stack([_np(S.frob_change(a, b)) for a, b in pairwise(Pv)], 1)
        e1["walk_change_tv"] = np.stack([_np(S.tv_change(a, b)) for a, b in pairwise(Pv)], 1)
        e1["walk_spectral_distance"] = np.stack([_np(S.spectral_distance(a, b)) for a, b in pairwise(Pv)], 1)
        pr = [S.pagerank(P) for P in Pv]
        e1["stationary_drift"] = np.stack([_np(0.5 * (b - a).abs().sum(-1)) for a, b in pairwise(pr)], 1)
        e1["reversibility_defect"] = np.stack([_np(S.reversibility_defect(P, dtype=attn_dtype)) for P in Pv], 1)
        e1["positional_r2"] = np.stack([_np(S.positional_r2(P)) for P in Pv], 1)
        e1["diffusion_r2"] = np.stack([_np(S.diffusion_r2(P, D)) for P, D in zip(Pv, Dv)], 1)
        m.e1[variant] = e1
    m.e2 = {
        "head_sv_cv": np.concatenate(head_cv)[:, None],  # (L*H, 1)
        "summed_sv_cv": np.array(summed_cv)[:, None],  # (L, 1)
        "summed_procrustes": np.array(procr)[:, None],
        "data_gain_cv": np.stack(data_cv, 1),  # (B, L)
        "edge_defect": np.stack(edge, 1),  # (B_e, L_e)
    }
    if baselines:
        m.e2_baselines = {
            b: {
                "summed_sv_cv": np.array(base[b]["summed_sv_cv"])[:, None],
                "summed_procrustes": np.array(base[b]["summed_procrustes"])[:, None],
                "data_gain_cv": np.stack(base[b]["data_gain_cv"], 1),
                "edge_defect": np.stack(base[b]["edge_defect"], 1),
            }
            for b in BASELINES
        }
    m.spectra = np.stack(spectra)
    m.checks = {hk.name: hk.finish(L) for hk in hooks}
    return m


def all_specs() -> Iterable[StatSpec]:
    yield from E1_STATS
    yield from E2_STATS
