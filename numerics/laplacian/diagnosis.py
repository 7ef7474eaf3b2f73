"""Top of :mod:`numerics.laplacian`: :func:`diagnose` (input handling, the choice of the dense or
the factored route, the tolerance precision); the walk-level operators :func:`~numerics.walk.as_walk` and
:func:`~numerics.walk.generator_dense` it re-exports are the walk core's. Imports :mod:`~numerics.laplacian.result`, :mod:`~numerics.laplacian.dense`
and :mod:`~numerics.laplacian.factored` from the package; the definitions are in the package's
docstring. Registered under ``numerics.laplacian.<name>``, where the package re-exports them."""

from __future__ import annotations

import math

import torch

from numerics.contracts.declarations import (
    Choice,
    Flag,
    Int,
    Options,
    PrecisionDType,
    Walk,
    contract,
    positive_mass,
)
from numerics.contracts.declarations import Tensor as TensorSpec
from numerics.contracts.validate import check_memory
from numerics.errors import ParameterError
from numerics.laplacian.dense import diagnose_dense
from numerics.laplacian.factored import diagnose_factored
from numerics.laplacian.result import LaplacianDiagnostics
from numerics.walk import ConnectionWalk, as_walk

__all__ = [
    "METHODS",
    "FACTORED_OPTIONS",
    "AUTO_MAX_ND",
    "tolerance_dtype",
    "dense_bytes",
    "auto_method",
    "diagnose",
]

F64 = torch.float64
METHODS = ("auto", "dense", "factored")
#: keyword options of diagnose(method="factored") (numerics.laplacian.factored.diagnose_factored)
FACTORED_OPTIONS = {
    "assemble_max": Int(lo=0),
    "k_max": Int(lo=1),
    "chunk_elems": Int(lo=1),
    "spectrum": Flag(),
    "kernel": Flag(),
    "max_matvecs": Int(lo=1),
}
#: the ``n·d`` up to which the dense path is the faster one for a walk with ``H ≤ d`` terms per
#: block (:func:`auto_method`)
AUTO_MAX_ND = 96


def tolerance_dtype(w: ConnectionWalk, attention_dtype) -> torch.dtype:
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


def auto_method(n: int, d: int, H: int, max_dense: int, auto_max_nd: int | None = None) -> str:
    """The path ``method="auto"`` takes for a walk of ``n`` tokens, dimension ``d`` and ``H`` terms per
    block (heads; ``d²`` for an edges-form walk, the factored path's basis): of the paths that compute
    every check, the faster one (``auto_max_nd`` given: dense exactly when ``n·d ≤ auto_max_nd``, the
    caller's own switch). Above ``max_dense`` the dense path skips its spectrum / kernel /
    parallel-section / flatness checks, so the factored path is the only complete one. Below it,
    dense when ``n·d ≤ AUTO_MAX_ND·max(1, H/d)``: the dense path costs ``O((n·d)³)`` whatever ``H``,
    the factored one a few hundred products of cost ``O(H·n·d·(n + d))`` plus ``O(H²n²)`` for the
    algebraic checks. Measured by ``python benchmarks/bench_diagnose.py --auto`` (one thread, both
    paths on the same walk, best of two, dense ÷ factored time; issue 22's faster factored path
    moved the switch from 192 to 96): ``H = 4`` random heads 0.42 at ``n·d = 64``, 1.2 at 128, 5.5
    at 256, 17 at 512, 59 at 1024 (reversible heads: 0.52, 1.16, 5.1, 9.3); ``H = 12`` 1.08 at 128
    (``d = 8``), 2.5 at 256, 22 at 512; ``H = 64`` 0.66 at 256 (``d = 16``), 1.8 (``d = 16``) and 2.2
    (``d = 32``) at 512; edges form (``H = d²``) 0.07–0.85 from ``n·d = 32`` to 512. With this rule
    auto's pick is the faster path, or within 25 % of it, at every one of those 24 sizes."""
    if auto_max_nd is not None:
        return "dense" if n * d <= auto_max_nd else "factored"
    if n * d > max_dense:
        return "factored"
    return "dense" if n * d <= AUTO_MAX_ND * max(1.0, H / max(d, 1)) else "factored"


@contract(
    walk=Walk(),
    method=Choice(METHODS),
    probes=Int(lo=1),
    seed=Int(lo=0),
    max_dense=Int(lo=0),
    pi=TensorSpec("... n", nonneg=True, optional=True),
    svd_max_entries=Int(lo=0),
    auto_max_nd=Int(lo=0, optional=True),
    attention_dtype=PrecisionDType(optional=True),
    memory_budget=Int(lo=0, optional=True),
    factored_options=Options(FACTORED_OPTIONS),
    after=positive_mass("pi"),
    name="numerics.laplacian.diagnose",
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
    auto_max_nd: int | None = None,
    attention_dtype=None,
    memory_budget: int | None = None,
    **factored_options,
) -> LaplacianDiagnostics:
    r"""Measure every T3 condition of ``walk`` (a :class:`ConnectionWalk` of any kind, batched, or
    blocks ``B`` ``(..., n, n, d, d)``). See the module docstring for definitions and gauges.

    ``method``: ``"dense"`` (form the blocks; refused with :class:`MemoryBudgetError` naming
    ``walk`` when they exceed the memory budget of :func:`numerics.contracts.validate.check_memory`),
    ``"factored"`` (:func:`numerics.laplacian.factored.diagnose_factored`; ``factored_options``
    go there; an edges-form walk needs ``d⁴ + 3·n²d²`` numbers there, refused like the dense path
    over the budget) or ``"auto"`` (:func:`auto_method`: the faster path that computes every check —
    factored above ``max_dense``; below it dense when ``n·d ≤ 96·max(1, H/d)``, ``H`` the heads or
    ``d²`` for an edges-form walk; an explicit ``auto_max_nd``: dense exactly when
    ``n·d ≤ auto_max_nd``).
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
    tdt_p = tolerance_dtype(w, attention_dtype)
    tdt = tolerance_dtype(w, None)
    n, d = w.n, w.d
    if method == "auto":
        method = auto_method(n, d, w.n_heads if w.kind == "heads" else d * d, max_dense, auto_max_nd)
    if method == "factored":
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
    return diagnose_dense(w.to(dtype=F64), tdt, probes, seed, max_dense, pi, svd_max_entries, tdt_p)
