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
``tol``, ``reason``). Each check is one function of :mod:`numerics.laplacian.checks`; ``diagnose``
assembles them. ``method="dense"`` forms the ``n²d²`` blocks (the reference);
``method="factored"`` (:mod:`numerics.laplacian.factored`) gets every check from the heads'
coefficients and small Gram factors of the transports plus matrix-free operators, in
``O(H n² + n d + H² d²)`` memory; ``method="auto"`` picks the faster of the two paths that
computes every check (:func:`~numerics.laplacian.diagnosis.auto_method`).
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

The package is a one-way chain; each file imports only the ones above it:

* ``result``: :class:`Check`, ``make_check``, :class:`LaplacianDiagnostics`, ``format_spectrum``,
  ``skipped``, ``assemble`` (what a diagnosis returns; decisions from :mod:`theory.rounding`);
* ``forms``: ``pi_inner``, ``dirichlet_energy``, ``parallel_constraints`` and their Gram / SVD
  (dense formulas on explicit tensors);
* ``blocks``: the block-access protocol ``Blocks`` and its implementations ``DenseBlocks`` and
  ``FactoredBlocks`` (``factored_blocks``, ``element``);
* ``checks``: one function per T3 hypothesis and conclusion, written once against ``Blocks``, and
  ``algebraic_checks``;
* ``krylov``: thick-restart Lanczos and restarted Arnoldi with the caller's stopping rule (no
  ARPACK);
* ``spectral``: the matrix-free spectrum checks and the operator helpers;
* ``sections``: the parallel sections of a factored walk (section tree, root-fixed basis, factor of
  ``C Q``, the count with its straddle rule), shared by both kernel routes;
* ``lanczos``: the product meter and the budgeted Lanczos searches of the kernel route;
* ``kernel_arpack``: the previous unbounded kernel route, the benchmark's baseline;
* ``kernel``: the matrix-free kernel / parallel-section / flatness checks;
* ``dense``: the dense spectrum and kernel checks and ``diagnose_dense``;
* ``factored``: ``diagnose_factored``;
* ``diagnosis``: :func:`diagnose` (``method="auto" | "dense" | "factored"``), ``auto_method``,
  ``as_walk``, ``generator_dense``.
"""

from numerics.laplacian.diagnosis import FACTORED_OPTIONS as FACTORED_OPTIONS
from numerics.laplacian.diagnosis import METHODS, diagnose
from numerics.laplacian.diagnosis import dense_bytes as dense_bytes
from numerics.laplacian.diagnosis import tolerance_dtype as tolerance_dtype
from numerics.laplacian.forms import dirichlet_energy, parallel_constraints, pi_inner
from numerics.laplacian.result import CHECK_NAMES as CHECK_NAMES
from numerics.laplacian.result import Check, LaplacianDiagnostics, format_spectrum
from numerics.markov import (
    StationaryInfo,
    communicating_classes,
    reachability,
    stationary_distribution,
    stationary_info,
    weak_components,
)
from numerics.walk import as_walk, generator_dense

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
