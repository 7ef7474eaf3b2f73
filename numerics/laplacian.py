r"""Laplacian-reduction diagnostics (THEOREMS.md T3–T5): is ``Δ = I − W`` a connection Laplacian?

For a connection walk ``(W x)_i = Σ_j P_ij O_ij x_j`` with token-major blocks ``B_ij = P_ij O_ij``
(shape ``(..., n, n, d, d)``) the generator is ``Δ = I − W``. T3's hypotheses are

* (a) stochastic: ``Σ_j P_ij = 1``;
* (b) reversible: ``π_i P_ij = π_j P_ji`` for some **positive** ``π``;
* (c) metric-compatible: ``O_ij`` orthogonal and ``O_ji = O_ijᵀ``;

and under (a)+(b)+(c) its conclusions are: Δ self-adjoint in ``<x, y>_π = Σ_i π_i x_iᵀ y_i``;
spectrum real in ``[0, 2]``; the Dirichlet identity
``<x, Δx>_π = ½ Σ_ij π_i P_ij ‖x_i − O_ij x_j‖²``; ``ker Δ`` = parallel sections
(``x_i = O_ij x_j`` on every edge); flat connections (``O_ij = R_i R_j^{-1}``) have ``dim ker = d``
per connected component.

:func:`diagnose` measures every hypothesis and conclusion on one walk (or a batch) and returns a
:class:`LaplacianDiagnostics` whose fields are :class:`Check` objects (``holds``, ``residual``,
``tol``, ``reason``). Each check is one function of :mod:`numerics.laplacian_checks`; ``diagnose``
assembles them. ``method="dense"`` forms the ``n²d²`` blocks (the reference);
``method="factored"`` (:mod:`numerics.laplacian_factored`) gets every check from the heads'
coefficients and small Gram factors of the transports plus matrix-free operators, in
``O(H n² + n d + H² d²)`` memory; ``method="auto"`` picks dense for ``n·d ≤ auto_max_nd``.
Conventions:

* *Walk gauge.* ``stochastic``, ``orthogonal``, ``transpose_symmetric``, ``detailed_balance`` and
  ``dirichlet`` use the walk's own ``P`` and ``O`` (``P = mean_h A^h`` for heads-form walks, T2).
* *Gauge-free.* ``block_detailed_balance`` (``π_i B_ij = π_j B_jiᵀ`` for some ``π > 0``, with
  ``π`` solved from the norms ``N_ij = ‖B_ij‖_F``) and ``scaled_isometry`` (``B_ij = β_ij Q_ij``,
  ``Q_ij`` orthogonal, all row sums of ``β`` equal to one scale ``s``) depend on ``B`` only.
* ``π`` is the left Perron vector of ``P`` (:mod:`numerics.markov`), normalised to sum 1. When
  ``P`` has several closed classes the stationary distribution is *not unique*: ``pi_unique`` is
  False, the reported ``π`` weights every closed class equally (any positive combination is
  equally valid for T3) and the reasons say so. Transient states (``π`` with zeros) make every
  ``π``-dependent check fail with a reason.
* Spectral checks: ``spectrum_interval`` (real, in ``[0, 2]``: T3.2), ``spectrum_disk``
  (``|z − 1| ≤ 1``: the weaker statement) and ``spectrum_scaled`` (real, in ``[1 − s, 1 + s]`` with
  the gauge-free scale ``s``: the scaled-isometry variant).
* Every tolerance comes from :func:`numerics.tolerance.tol` (eps of the precision the walk's
  entries carry, size of the sum, scale of the operands). Computations run in float64.

*Precision of real attention.* Hugging Face's eager attention computes the softmax in float32 even
when the model runs in float64, so real rows sum to 1 only within ``~n·eps₃₂`` (about 2.4e-7 for
MiniLM at 128 tokens) although the tensors are float64. Pass ``attention_dtype=torch.float32``:
the checks on the walk matrix alone (``stochastic``, ``positive_stationary``,
``detailed_balance``, sizes ``n``) then use float32's eps, the precision those entries carry. The
block-level and spectral checks keep the walk's own precision: they are float64 statements about
the operator as given, and a float32 perturbation of the entries is *not* absorbed there (they can
only fail more often; scaling ``tol(float32, n·d)`` would reach ~0.4 at MiniLM size and make them
vacuous). Nothing else widens a tolerance.
"""

from __future__ import annotations

import math

import torch

from numerics.contracts import (
    Choice,
    Flag,
    Int,
    Options,
    PrecisionDType,
    Tensor,
    Walk,
    contract,
    finite_on_support,
    parallel_memory,
    positive_mass,
)
from numerics.errors import ParameterError
from numerics.laplacian_checks import (
    Check,
    DenseBlocks,
    check_block_detailed_balance,
    check_detailed_balance,
    check_dirichlet,
    check_metric_compatible,
    check_orthogonal,
    check_scaled_isometry,
    check_self_adjoint,
    check_stochastic,
    check_transpose_symmetric,
    stationary,
    transport_scale,
)
from numerics.laplacian_types import CHECK_NAMES as CHECK_NAMES
from numerics.laplacian_types import LaplacianDiagnostics, format_spectrum
from numerics.markov import (
    StationaryInfo,
    classes_from_reachability,
    communicating_classes,
    perron_solve,
    reachability,
    stationary_distribution,
    stationary_info,
    weak_components,
)
from numerics.tolerance import tol
from numerics.validate import check_memory
from numerics.walk import ConnectionWalk

# old private names kept importable for callers outside this module
_classes = classes_from_reachability
_perron_solve = perron_solve

__all__ = [
    "Check",
    "LaplacianDiagnostics",
    "StationaryInfo",
    "METHODS",
    "as_walk",
    "diagnose",
    "reachability",
    "communicating_classes",
    "weak_components",
    "stationary_info",
    "stationary_distribution",
    "parallel_constraints",
    "generator_dense",
    "pi_inner",
    "dirichlet_energy",
    "format_spectrum",
]

F64 = torch.float64
METHODS = ("auto", "dense", "factored")
#: keyword options of diagnose(method="factored") (numerics.laplacian_factored.diagnose_factored)
FACTORED_OPTIONS = {
    "assemble_max": Int(lo=0),
    "k_max": Int(lo=1),
    "chunk_elems": Int(lo=1),
    "spectrum": Flag(),
    "kernel": Flag(),
    "max_matvecs": Int(lo=1),
}


# ---------------------------------------------------------------------------------------------
# input handling
@contract(walk=Walk())
def as_walk(walk) -> ConnectionWalk:
    """A :class:`ConnectionWalk`, or blocks ``B`` ``(..., n, n, d, d)`` wrapped with the default
    gauge of :meth:`ConnectionWalk.from_blocks`. Complex / NaN / non-square input raises."""
    if isinstance(walk, ConnectionWalk):
        return walk
    # the contract (Walk()) has checked and converted the blocks: a real, finite (..., n, n, d, d)
    # tensor with square d×d blocks, errors naming ``walk``
    return ConnectionWalk.from_blocks(walk)


# ---------------------------------------------------------------------------------------------
# operators and forms
@contract(walk=Walk())
def generator_dense(walk) -> torch.Tensor:
    """Dense token-major ``Δ = I − W`` ``(..., nd, nd)`` in float64 (materialises ``(nd)²``)."""
    w = as_walk(walk)
    W = w.to_dense().to(F64)
    eye = torch.eye(W.shape[-1], dtype=F64, device=W.device)
    return eye - W


@contract(x=Tensor("... n d"), y=Tensor("... n d"), pi=Tensor("... n", nonneg=True))
def pi_inner(x: torch.Tensor, y: torch.Tensor, pi: torch.Tensor) -> torch.Tensor:
    """``<x, y>_π = Σ_i π_i x_iᵀ y_i`` for ``x, y`` ``(..., n, d)``, ``π`` ``(..., n)``."""
    return (pi[..., :, None] * x * y).sum((-1, -2))


@contract(
    P=Tensor("... n n", nonneg=True),
    O=Tensor("... n n d d", finite=False),
    pi=Tensor("... n", nonneg=True),
    x=Tensor("... n d"),
    after=finite_on_support("O", lambda a: a["P"] > 0),
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


def _parallel_gram(O: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
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


def _apply_constraints(O: torch.Tensor, support: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """``C K`` ``(n·n·d, m)`` for one walk: row block ``(i, j)`` = ``K_i − O_ij K_j`` on the support."""
    n, d = O.shape[-3], O.shape[-1]
    Kb = K.reshape(n, d, -1)
    Oz = torch.where(support[..., None, None], O, torch.zeros_like(O))
    R = Kb[:, None] - torch.einsum("ijab,jbm->ijam", Oz, Kb)
    R = R * support[:, :, None, None].to(R.dtype)
    return R.reshape(n * n * d, -1)


def _parallel_svd(O: torch.Tensor, support: torch.Tensor, max_entries: int = 1 << 22):
    """Singular values (descending), right singular vectors of ``C`` (parallel constraints) and
    whether the Gram path was used: an SVD of ``C`` when it is small, else an eigendecomposition of
    ``CᵀC`` (σ = √λ, accurate to √eps·‖C‖ only)."""
    n, d = O.shape[-3], O.shape[-1]
    if n * n * d * n * d <= max_entries:
        _, s, Vh = torch.linalg.svd(parallel_constraints(O, support), full_matrices=False)
        return s, Vh, False
    lam, V = torch.linalg.eigh(_parallel_gram(O, support))
    lam, V = lam.flip(-1), V.flip(-1)
    return lam.clamp(min=0).sqrt(), V.transpose(-1, -2), True


# ---------------------------------------------------------------------------------------------
# the diagnostics


def _tolerance_dtype(w: ConnectionWalk, attention_dtype) -> torch.dtype:
    """The precision whose eps sets every tolerance: ``attention_dtype`` when given (the precision
    the attention entries were computed in, e.g. float32 softmax inside a float64 model), else the
    walk's dtype when it is below float64, else float64."""
    if attention_dtype is not None:  # a floating torch.dtype: diagnose's contract (PrecisionDType) checked it
        return attention_dtype
    return w.dtype if w.dtype in (torch.float16, torch.bfloat16, torch.float32) else F64


def dense_bytes(n: int, d: int, batch: int = 1) -> int:
    """Bytes the dense path holds at once: about six float64 ``n²d²`` arrays (``B``, ``O``,
    ``OᵀO``, the π-weighted blocks and their transpose, one difference) per batch element."""
    return 6 * 8 * batch * (n * d) ** 2


@contract(
    walk=Walk(),
    method=Choice(METHODS),
    probes=Int(lo=1),
    seed=Int(lo=0),
    max_dense=Int(lo=0),
    pi=Tensor("... n", nonneg=True, optional=True),
    svd_max_entries=Int(lo=0),
    auto_max_nd=Int(lo=0),
    attention_dtype=PrecisionDType(optional=True),
    memory_budget=Int(lo=0, optional=True),
    factored_options=Options(FACTORED_OPTIONS),
    after=positive_mass("pi"),
)
def diagnose(
    walk,
    *,
    method: str = "auto",
    probes: int = 3,
    seed: int = 0,
    max_dense: int = 1024,
    pi=None,
    svd_max_entries: int = 1 << 22,
    auto_max_nd: int = 1024,
    attention_dtype=None,
    memory_budget: int | None = None,
    **factored_options,
) -> LaplacianDiagnostics:
    r"""Measure every T3 condition of ``walk`` (a :class:`ConnectionWalk` of any kind, batched, or
    blocks ``B`` ``(..., n, n, d, d)``). See the module docstring for definitions and gauges.

    ``method``: ``"dense"`` (form the blocks; refused with :class:`MemoryBudgetError` naming
    ``walk`` when they exceed the memory budget of :func:`numerics.validate.check_memory`),
    ``"factored"`` (:func:`numerics.laplacian_factored.diagnose_factored`; ``factored_options``
    go there; an edges-form walk needs ``d⁴ + 3·n²d²`` numbers there, refused like the dense path
    over the budget) or ``"auto"`` (dense when ``n·d ≤ auto_max_nd``, default 1024, else factored).
    ``probes``: number of seeded random test fields for the Dirichlet identity. ``max_dense``
    (dense path, default 1024): largest ``n·d`` for which the dense spectrum / kernel / parallel-section /
    flatness checks run (else they are reported undefined with the reason). ``pi``: optional
    ``(..., n)`` positive weights to use instead of the computed Perron vector (e.g. one chosen
    stationary distribution of a disconnected walk). ``svd_max_entries``: above this many entries
    of the parallel-section constraint matrix ``C`` (``n³d²``) its null space comes from ``CᵀC``
    (``(nd)²`` memory, rank threshold ``√eps``) instead of an SVD of ``C``. ``attention_dtype``:
    the precision the attention entries were computed in (module docstring).
    """
    # method / probes / max_dense / auto_max_nd are validated by the contract above
    w = as_walk(walk)
    tdt_p = _tolerance_dtype(w, attention_dtype)
    tdt = _tolerance_dtype(w, None)
    n, d = w.n, w.d
    if method == "auto":
        method = "dense" if n * d <= auto_max_nd else "factored"
    if method == "factored":
        from numerics.laplacian_factored import diagnose_factored

        return diagnose_factored(
            w, probes=probes, seed=seed, pi=pi, tdt=tdt, tdt_p=tdt_p, memory_budget=memory_budget, **factored_options
        )
    if factored_options:
        raise ParameterError(
            f"options {sorted(factored_options)} apply to method='factored' only", argument=sorted(factored_options)[0]
        )
    check_memory(
        "walk",
        dense_bytes(n, d, math.prod(w.batch_shape)),
        f"the dense diagnostics' n²d² blocks (n={n}, d={d})",
        'diagnose(walk, method="factored")',
        budget=memory_budget,
    )
    return _diagnose_dense(w.to(dtype=F64), tdt, probes, seed, max_dense, pi, svd_max_entries, tdt_p)


def _diagnose_dense(
    w: ConnectionWalk, tdt, probes, seed, max_dense, pi, svd_max_entries, tdt_p=None
) -> LaplacianDiagnostics:
    """Dense assembly of the checks of :mod:`numerics.laplacian_checks` (``w`` in float64)."""
    from numerics.laplacian_dense import dense_kernel, dense_spectrum

    n, d = w.n, w.d
    P = w.walk_matrix.to(F64)
    batch = P.shape[:-2]
    sup = P > 0
    O, _ = w.edge_transports()
    O = torch.where(sup[..., None, None], O.to(F64), torch.zeros_like(O, dtype=F64))
    floor = bscale = None
    terms = 1
    if w.kind == "heads":  # rounding level of the head sums (laplacian_checks.DenseBlocks)
        tn = torch.linalg.matrix_norm(w.head_transports.to(F64))
        bscale = torch.einsum("...hij,...h->...ij", w.attention.to(F64).abs(), tn)
        floor = tol(F64, w.n_heads) * bscale
        terms = w.n_heads
    blocks = DenseBlocks(P, w.blocks().to(F64), O, floor, bscale, terms)
    hyp = _algebraic_checks(blocks, P, tdt, pi, probes, seed, tdt_p)
    st, si, scale = hyp["_st"], hyp["scaled_isometry"], hyp["_scale"]
    n_comp = weak_components(sup | sup.transpose(-1, -2))
    nd = n * d
    spectrum = kernel_dim = parallel_dim = None
    if nd <= max_dense:
        Wd = w.to_dense().to(F64)
        D = torch.eye(nd, dtype=F64, device=P.device) - Wd
        spectrum, (s_int, s_disk, s_sc) = dense_spectrum(D, Wd, scale, si, tdt, nd)
        kp, flat, kernel_dim, parallel_dim = dense_kernel(
            D, O, sup, P, st.safe, st.defined, n_comp, tdt, svd_max_entries
        )
    else:
        why = f"skipped: n·d = {nd} > max_dense = {max_dense} (use method='factored' or numerics.spectra)"
        s_int, s_disk, s_sc, kp, flat = (
            _skipped(k, batch, P.device, why)
            for k in ("spectrum_interval", "spectrum_disk", "spectrum_scaled", "kernel_parallel", "flat")
        )
    return assemble(
        hyp,
        s_int,
        s_disk,
        s_sc,
        kp,
        flat,
        spectrum,
        kernel_dim,
        parallel_dim,
        n_comp,
        n,
        d,
        {"method": "dense", "tolerance_dtype": str(tdt_p or tdt)},
    )


def _skipped(name: str, batch, device, why: str) -> Check:
    """A check that was not computed: undecided (neither holds nor fails), with the reason."""
    no = torch.zeros(batch, dtype=torch.bool, device=device)
    return Check(name, no, torch.full(batch, float("nan"), dtype=F64, device=device), float("nan"), why, fails=no)


def _algebraic_checks(blocks, P: torch.Tensor, tdt, pi, probes: int, seed: int, tdt_p=None) -> dict:
    """Every check that needs no spectrum: one call per hypothesis / conclusion, any block algebra.
    ``tdt_p``: the precision of the walk matrix's entries (``attention_dtype``) for the checks on
    ``P`` alone (stochastic, π, detailed balance); default ``tdt``."""
    tdt_p = tdt if tdt_p is None else tdt_p
    st = stationary(P, tdt_p, pi)
    bdb, bpi = check_block_detailed_balance(blocks, tdt)
    orth, onorm = check_orthogonal(blocks, tdt)
    ts = check_transpose_symmetric(blocks, tdt, onorm)
    t_scale, common, s_max = transport_scale(blocks, tdt)
    si, scale = check_scaled_isometry(blocks, tdt)
    return {
        "stochastic": check_stochastic(P, tdt_p),
        "positive_stationary": st.check,
        "detailed_balance": check_detailed_balance(P, st, tdt_p),
        "block_detailed_balance": bdb,
        "orthogonal": orth,
        "transpose_symmetric": ts,
        "metric_compatible": check_metric_compatible(orth, ts),
        "scaled_isometry": si,
        "self_adjoint": check_self_adjoint(blocks, st, tdt),
        "dirichlet": check_dirichlet(blocks, st, common, s_max, tdt, probes, seed),
        "_st": st,
        "_bpi": bpi,
        "_scale": scale,
        "_transport_scale": t_scale,
    }


def assemble(
    hyp: dict, s_int, s_disk, s_sc, kp, flat, spectrum, kernel_dim, parallel_dim, n_comp, n, d, extra: dict
) -> LaplacianDiagnostics:
    """The :class:`LaplacianDiagnostics` from the algebraic checks and the spectral / kernel ones."""
    st = hyp["_st"]
    checks = {k: v for k, v in hyp.items() if not k.startswith("_")}
    return LaplacianDiagnostics(
        **checks,
        spectrum_interval=s_int,
        spectrum_disk=s_disk,
        spectrum_scaled=s_sc,
        kernel_parallel=kp,
        flat=flat,
        pi=st.pi,
        pi_unique=st.info.unique,
        block_pi=hyp["_bpi"],
        rho=st.info.rho,
        scale=hyp["_scale"],
        transport_scale=hyp["_transport_scale"],
        spectrum=spectrum,
        kernel_dim=kernel_dim,
        parallel_dim=parallel_dim,
        n_components=n_comp,
        n=n,
        d=d,
        extra=extra,
    )
