r"""E5 — phase diagrams: which pattern each architectural component selects (Seed B, THEOREMS.md T6).

Claim (THEOREMS.md E5): positional encoding (kernel shape / asymmetry), multi-head attention and
output-value geometry (the OV eigenvalue angle θ) control which pattern is amplified (cluster,
stationary periodic, travelling wave, rotating / helical waves, …), which stabilise, compete or
coexist.

Set-up (one cell of the sweep). Ring of ``n`` tokens in ``d = 3``; base state ``x* = e3``;
transports ``T_h = (1/H)·blockdiag(ρ·Q_h R(θ), 1)`` with ``R(θ)`` the plane rotation, ``Q_1 = I``,
``Q_2 = diag(1, −1)`` (a reflection: the two heads do not commute), so ``M(0) e3 = e3``: ``x*`` is an
equilibrium of the flow and of the normalised dynamics, and its tangent plane is the ``(e1, e2)``
plane (the linearisation of the sphere flow and of a post-norm stack at ``x*`` is then the flat one
restricted to the plane). Kernels: wrapped Gaussians ``gaussian_kernel(n, centre, width)``; head 2
uses centre ``−centre/2`` and width ``1.5·width``. Content attention on: random ``W_Q, W_K``
``(H, 2, 3)`` (by T6 the onset cannot depend on them: the softmax derivative cancels at a homogeneous
state; after saturation it can). Dynamics: ``sphere`` (RK4 of the sphere flow), ``postnorm``
(``X ← norm(X + η·MHA(X))``), ``prenorm`` (``X ← X + η·MHA(norm(X))``), ``norm`` = unit sphere.

Prediction (:func:`predict_cell`): symbol ``M(k) = Σ_h â_h(k) T_h`` (``numerics.patterns.symbols.symbol``),
branch exponents ``s = μ − 1`` (flow, per unit time), ``s = log(1 + h(μ − 1))``, ``h = η/(1+η)``
(post-norm, per layer) or ``s = mean_l log(1 + η/(1+ηl)·(μ − 1))`` over the linear window's layers
(pre-norm; ``η/(1+ηl)`` is :func:`numerics.patterns.symbols.prenorm_layer_steps`). Winner ``argmax Re s``; several distinct real patterns within ``tol`` of the best are a
**tie**: at one ``|k| ≠ 0`` a *standing* wave, otherwise *coexisting* — never a guessed winner. A
single winner is a cluster (``k = 0``), stationary (``|Im s|·window < phase_tol``: the oscillation is
not observable in the window) or travelling. Classes are compared on the coarse vocabulary
:data:`COARSE` (helix / non-helix and rotating / static cluster are reported in ``extra``).

Observation: every cell is simulated from ``x* + ε ξ`` (batched over cells by
:class:`numerics.patterns.simulate.BatchedDynamics`, checked against the one-trajectory simulators in the tests), classified by
:func:`numerics.patterns.classify.classify_trajectory` on the *linear window* ``[t_lin/2, t_lin]``
(``t_lin = log(A_lin/ε)/max Re s`` over all modes, the ``k = 0`` turn of the common direction included,
clamped) and on the *saturated window* at the end
(``t_lin + t_sat/2 … t_lin + t_sat``). Pre-norm windows are classified in effective time
``τ_l = Σ_{j<l} η/(1+η(j+1))`` (:func:`prenorm_effective_window`): per layer the relative growth is
``1 + η(μ−1)/(1+η(l+1))``, a non-autonomous rate in the layer index that the classifier's exponential
(DMD) model would split into spurious components; in ``τ`` it is ``e^{(μ−1)τ}`` up to ``O(h_l²)``.

Statistics: agreement fraction predicted vs observed (onset; class and ``|k|``) with a Wilson 95%
interval, its range over classifier-threshold variants (each threshold ×0.5 and ×2); per component,
the fraction of cell pairs differing only in that component whose observed pattern differs; the
onset → saturation transitions (stabilise / pin / drift / compete / coexist / change mode) and
the relative departure of saturated from linear velocities.

Modules: :mod:`~paper_checks.e5.cells` (vocabulary, sweep configuration, cell model),
:mod:`~paper_checks.e5.predict` (linear prediction), :mod:`~paper_checks.e5.sweep` (simulation and
classification), :mod:`~paper_checks.e5.report` (rows, figures, :func:`run`).
"""

from numerics.patterns.simulate import (
    BatchedDynamics,
    simulate_cells,
)
from paper_checks.e5.cells import (
    C_CLUSTER,
    C_COEXISTING,
    C_INCOHERENT,
    C_STANDING,
    C_STATIONARY,
    C_TRAVELLING,
    CLAIM,
    COARSE,
    DYNAMICS,
    Cell,
    PhaseConfig,
    cell_model,
    coarse_class,
)
from paper_checks.e5.predict import (
    CellPrediction,
    predict_cell,
)
from paper_checks.e5.report import (
    SCALES,
    configs,
    run,
)
from paper_checks.e5.sweep import (
    THRESHOLD_VARIANTS,
    agreement,
    prenorm_effective_time,
    prenorm_effective_window,
    run_sweep,
    transition,
)
from paper_checks.inference import (
    wilson_interval,
)

__all__ = [
    "BatchedDynamics",
    "CLAIM",
    "COARSE",
    "C_CLUSTER",
    "C_COEXISTING",
    "C_INCOHERENT",
    "C_STANDING",
    "C_STATIONARY",
    "C_TRAVELLING",
    "Cell",
    "CellPrediction",
    "DYNAMICS",
    "PhaseConfig",
    "SCALES",
    "THRESHOLD_VARIANTS",
    "agreement",
    "cell_model",
    "coarse_class",
    "configs",
    "predict_cell",
    "prenorm_effective_time",
    "prenorm_effective_window",
    "run",
    "run_sweep",
    "simulate_cells",
    "transition",
    "wilson_interval",
]
