r"""Simulators of MHA token dynamics: continuous flow (RK4), sphere flow, post-/pre-norm stacks.

The dynamics (THEOREMS.md T6), for a state ``X`` ``(..., n, d)``::

    MHA(X)_i = Σ_h Σ_j A^h_ij(X) T_h x_j,          f(X) = MHA(X) − X            (flow)
    S^h_ij   = b^h_ij + β · q^h_i · k^h_j / √d_k   (scores; A^h = softmax_j S^h, or sigmoid)
    q^h_i    = Rot_i W_Q^h (x_i + p_i),   k^h_j = Rot_j W_K^h (x_j + p_j)

* positional bias ``b^h_ij``: ``log a_h((j − i) mod n)`` from relative ring kernels ``(H, n)``
  (``kernels=``), or any ``(H, n, n)`` bias (``pos_bias=``);
* content attention: ``W_Q``, ``W_K`` ``(H, d_k, d)`` (``content=None`` means ``M_h = 0``:
  attention is then the constant ``A0`` and the flow is linear);
* ``abs_pe`` ``(n, d)``: absolute positional encoding added to the attention *inputs* only (values
  use ``x``), which makes the base-state attention non-circulant;
* ``rope``: rotary embedding of ``q``/``k`` (``Rot_i`` rotates pair ``f`` by ``i·θ_f``,
  ``θ_f = base^{−2f/d_k}``); on a line (not a ring) this is Toeplitz, not circulant;
* ``causal``: keys ``j > i`` masked;
* ``normalization="sigmoid"``: unnormalised attention ``A = sigmoid(S)`` (violates T6's H1).

Integrators (all batched over leading dims, any device, dtype of ``X0``):

* :func:`simulate_flow` — RK4 on ``dX/dt = f(X)``; ``sphere=True``: RK4 on the tangent field
  ``P^⊥_{x_i} MHA(X)_i`` followed by renormalisation ``x_i ← x_i/‖x_i‖`` (normalisation is the
  saturating nonlinearity).
  Onset on the sphere is *not* the flat symbol in general: at a fixed point ``x*`` (unit,
  ``T_Σ x* = λ* x*``) tangent perturbations grow with ``eig(P M(k) P) − x*ᵀT_Σx*`` on
  ``P = I − x*x*ᵀ``; it equals the flat ``σ(k)`` when ``λ* = 1`` and the pattern lives in an
  invariant complement of ``x*`` (e.g. ``T = blockdiag(1, ρR(θ))``, ``x* = e1``). In ``d = 2`` the
  tangent space is one-dimensional, so rotating (complex) branches cannot appear there.
* :func:`simulate_stack` — discrete layers: ``postnorm`` ``X ← norm(X + η·MHA(X))``,
  ``prenorm`` ``X ← X + η·MHA(norm(X))``; ``norm`` = per-token unit sphere or LayerNorm (no affine).

* :class:`BatchedDynamics` + :func:`simulate_cells` — many ring-kernel cells of one ``(n, d)`` in one
  batch (parameter sweeps); checked against the two integrators above.

The dynamics object :class:`MHADynamics` lives in :mod:`numerics.patterns.dynamics`, the RK4 step check in
:mod:`numerics.patterns.rk4_check` and the batched fast path in :mod:`numerics.patterns.simulate_batched` (all three below
this module, none importing it); they are re-exported here under their documented names.

Two traps are *reported*, not hidden (``Trajectory.selection`` / ``Trajectory.warnings`` and a
:class:`SelectionWarning`): a post-norm stack selects with ``|1 + h(μ − 1)|``, ``h = η/(1+η)``, which
can pick another ``k*`` than the flow; a pre-norm stack's effective time grows like
``log(1 + ηL)``, so the pattern can freeze before selection finishes.

Numerical failure is detected: a priori, an RK4 step outside the stability/accuracy region of the
linearised operator raises :class:`~numerics.errors.UnstableStepError`; during the run NaN/inf, a
norm above ``max_norm`` or a zero-norm token raise :class:`~numerics.errors.SimulationDivergedError`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field

import torch

from numerics.contracts.declarations import Choice, Flag, Float, FloatDType, Int, Passthrough, Tensor, contract
from numerics.contracts.validate import check_finite, check_memory
from numerics.errors import (
    ParameterError,
    ShapeError,
    SimulationDivergedError,
)
from numerics.patterns.dynamics import DYNAMICS, STATE, MHADynamics
from numerics.patterns.rk4_check import check_rk4_step, rk4_amplification
from numerics.patterns.simulate_batched import BatchedDynamics, simulate_cells
from numerics.patterns.symbols import StackSelection, discrete_selection, effective_time
from numerics.threads import small_problem_threads

__all__ = [
    "MHADynamics",
    "Trajectory",
    "SelectionWarning",
    "simulate_flow",
    "simulate_stack",
    "rk4_amplification",
    "check_rk4_step",
    "perturbed_homogeneous",
    "sphere_project",
    "layer_norm",
    "sinusoidal_pe",
    "BatchedDynamics",
    "simulate_cells",
]


class SelectionWarning(UserWarning):
    """A discrete stack's selection differs from the flow's, or freezes before it finishes."""


@contract(n=Int(lo=1), d=Int(lo=1), base=Float(lo=0.0), dtype=FloatDType(), device=Passthrough())
def sinusoidal_pe(n: int, d: int, *, base: float = 10000.0, dtype=torch.float64, device=None) -> torch.Tensor:
    """Absolute sinusoidal encoding ``(n, d)``: ``p_{i,2f} = sin(i ω_f)``, ``p_{i,2f+1} = cos(i ω_f)``,
    ``ω_f = base^{−2f/d}`` (Vaswani et al.); odd ``d`` drops the last cosine."""
    if int(n) < 1 or int(d) < 1:
        raise ShapeError(f"need n, d >= 1, got n={n}, d={d}", argument="n")
    itemsize = torch.empty((), dtype=dtype).element_size()
    # angles, sin, cos, the stacked and the sliced copy: five (n, d)-sized arrays
    check_memory("n", 5 * int(n) * int(d) * itemsize, f"the (n, d) = ({n}, {d}) encoding", "a smaller n or d")
    f = torch.arange((d + 1) // 2, dtype=dtype, device=device)
    w = base ** (-2 * f / d)
    ang = torch.arange(n, dtype=dtype, device=device)[:, None] * w[None, :]
    pe = torch.stack([torch.sin(ang), torch.cos(ang)], -1).reshape(n, -1)
    return pe[:, :d].contiguous()


# ------------------------------------------------------------------ trajectories
@dataclass
class Trajectory:
    """``states`` ``(T, ..., n, d)`` at ``times`` ``(T,)``. For stacks ``times`` are layer indices and
    ``effective_times`` the onset-regime continuous time (see :func:`numerics.patterns.symbols.effective_time`)."""

    times: torch.Tensor
    states: torch.Tensor
    kind: str
    step: float
    effective_times: torch.Tensor | None = None
    selection: StackSelection | None = None
    warnings: list = field(default_factory=list)

    @property
    def final(self) -> torch.Tensor:
        return self.states[-1]


@contract(
    n=Int(lo=2),
    d=Int(lo=1),
    x_star=Tensor("d"),
    eps=Float(lo=0.0, closed=True),
    batch=Passthrough(),
    generator=Passthrough(),
    dtype=FloatDType(),
    device=Passthrough(),
)
def perturbed_homogeneous(
    n: int, d: int, x_star, eps: float, *, batch: tuple = (), generator=None, dtype=torch.float64, device=None
) -> torch.Tensor:
    """``X0 = 1 ⊗ x* + eps·ξ`` ``(*batch, n, d)`` with ``ξ`` standard normal (seeded by ``generator``)."""
    if int(n) < 2:
        raise ShapeError(f"need n >= 2 tokens, got {n}", argument="n")
    if isinstance(batch, int) or not isinstance(batch, (tuple, list)):
        raise ParameterError(f"expected a tuple of batch sizes, got {batch!r}", argument="batch")
    for b in batch:
        if isinstance(b, bool) or not isinstance(b, numbers.Integral) or b < 1:
            raise ParameterError(f"expected positive integer batch sizes, got {tuple(batch)!r}", argument="batch")
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = 2 * math.prod(int(b) for b in batch) * int(n) * int(d) * itemsize  # the noise and the state
    check_memory("n", nbytes, f"the states (*batch, n, d) = {(*batch, n, d)}", "a smaller batch, n or d")
    x = torch.as_tensor(x_star, dtype=dtype, device=device).reshape(-1)
    if x.numel() != d:
        raise ShapeError(f"expected {d} entries, got {x.numel()}", argument="x_star")
    xi = torch.randn(*batch, n, d, generator=generator, dtype=dtype, device="cpu" if generator is not None else device)
    return x + eps * xi.to(device=device if device is not None else xi.device)


@contract(X=Tensor("... n d"), where=Passthrough())
def sphere_project(X: torch.Tensor, *, where: str = "") -> torch.Tensor:
    """``x_i / ‖x_i‖`` per token; a zero-norm token raises :class:`SimulationDivergedError`."""
    return _sphere_project(X, where=where)


def _sphere_project(X: torch.Tensor, *, where: str = "") -> torch.Tensor:
    r = torch.linalg.vector_norm(X, dim=-1, keepdim=True)
    if bool((r == 0).any()) or not bool(torch.isfinite(r).all()):
        raise SimulationDivergedError(
            f"zero-norm or non-finite token in sphere normalisation {where}".strip(), argument="X"
        )
    return X / r


@contract(X=Tensor("... n d"), where=Passthrough())
def layer_norm(X: torch.Tensor, *, where: str = "") -> torch.Tensor:
    """LayerNorm without affine parameters: ``(x − mean)/std`` over features (population std)."""
    return _layer_norm(X, where=where)


def _layer_norm(X: torch.Tensor, *, where: str = "") -> torch.Tensor:
    c = X - X.mean(-1, keepdim=True)
    s = c.pow(2).mean(-1, keepdim=True).sqrt()
    if bool((s == 0).any()):
        raise SimulationDivergedError(
            f"token with zero feature variance in LayerNorm {where} (d={X.shape[-1]})".strip(), argument="X"
        )
    return c / s


def _check_positive(name: str, v) -> float:
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
        raise ParameterError(f"must be a positive finite number, got {v!r}", argument=name)
    return float(v)


def _guard(X: torch.Tensor, max_norm: float, where: str) -> None:
    if not bool(torch.isfinite(X).all()):
        raise SimulationDivergedError(f"non-finite state at {where}", argument="X0")
    m = X.abs().max().item()
    if m > max_norm:
        raise SimulationDivergedError(
            f"state magnitude {m:.3g} exceeds max_norm={max_norm:.3g} at {where}", argument="X0"
        )


@contract(
    dyn=DYNAMICS,
    X0=STATE,
    t_final=Float(lo=0.0),
    dt=Float(lo=0.0),
    sphere=Flag(),
    save_every=Int(lo=1),
    check_step=Flag(),
    max_norm=Float(lo=0.0, inf_ok=True),
)
def simulate_flow(
    dyn: MHADynamics,
    X0,
    t_final: float,
    dt: float = 0.01,
    *,
    sphere: bool = False,
    save_every: int = 1,
    check_step: bool = True,
    max_norm: float = 1e100,
) -> Trajectory:
    r"""RK4 integration of ``dX/dt = f(X)`` (or the sphere flow) from ``X0`` ``(..., n, d)`` to ``t_final``.

    ``t_final / dt`` must be a whole number of steps (checked, not rounded silently). States are saved
    every ``save_every`` steps (plus the first and last). ``sphere=True``: tokens are first projected
    onto the unit sphere, then each RK4 step of the tangent field is followed by renormalisation."""
    X = dyn.check_state(X0, "X0")
    check_finite("X0", X)
    dt = _check_positive("dt", dt)
    t_final = _check_positive("t_final", t_final)
    steps = round(t_final / dt)
    if abs(steps * dt - t_final) > 1e-9 * max(t_final, 1.0) or steps < 1:
        raise ParameterError(f"t_final={t_final} is not a whole number of steps of dt={dt}", argument="t_final")
    if int(save_every) < 1:
        raise ShapeError(f"save_every must be >= 1, got {save_every}", argument="save_every")
    if sphere:
        X = _sphere_project(X, where="of X0")
    if check_step:
        with small_problem_threads(X):
            check_rk4_step(dyn, X, dt, sphere=sphere)
    fn = dyn.sphere_velocity_unchecked if sphere else dyn.velocity_unchecked
    with small_problem_threads(X):
        times, states = _rk4_loop(fn, X, dt, steps, sphere, save_every, max_norm)
    return Trajectory(torch.tensor(times, dtype=torch.float64), torch.stack(states), "sphere" if sphere else "flow", dt)


def _rk4_loop(fn, X, dt, steps, sphere, save_every, max_norm):
    times, states = [0.0], [X]
    for s in range(1, steps + 1):
        k1 = fn(X)
        k2 = fn(X + 0.5 * dt * k1)
        k3 = fn(X + 0.5 * dt * k2)
        k4 = fn(X + dt * k3)
        X = X + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if sphere:
            X = _sphere_project(X, where=f"step {s} (t={s * dt:.4g})")
        _guard(X, max_norm, f"step {s} (t={s * dt:.4g})")
        if s % save_every == 0 or s == steps:
            times.append(s * dt)
            states.append(X)
    return times, states


@contract(
    dyn=DYNAMICS,
    X0=STATE,
    layers=Int(lo=1),
    eta=Float(lo=0.0),
    scheme=Choice(("postnorm", "prenorm")),
    norm=Choice(("sphere", "layernorm")),
    save_every=Int(lo=1),
    max_norm=Float(lo=0.0, inf_ok=True),
    min_contrast=Float(lo=1.0),
    warn=Flag(),
)
def simulate_stack(
    dyn: MHADynamics,
    X0,
    layers: int,
    eta: float,
    *,
    scheme: str = "postnorm",
    norm: str = "sphere",
    save_every: int = 1,
    max_norm: float = 1e100,
    min_contrast: float = 10.0,
    warn: bool = True,
) -> Trajectory:
    r"""Discrete layer stack from ``X0`` ``(..., n, d)``, ``layers`` layers of step ``eta``:

    * ``postnorm``: ``X ← norm(X + η·MHA(X))`` (``X0`` is normalised first);
    * ``prenorm``:  ``X ← X + η·MHA(norm(X))``.

    ``norm``: ``"sphere"`` (``x_i/‖x_i‖``) or ``"layernorm"`` (no affine). For ring kernels the
    onset selection of the stack (:func:`numerics.patterns.symbols.discrete_selection`) is attached as
    ``selection``; a different ``k*`` than the flow's, or a frozen selection, is added to
    ``warnings`` and emitted as :class:`SelectionWarning` (``warn=False`` to silence)."""
    X = dyn.check_state(X0, "X0")
    check_finite("X0", X)
    eta = _check_positive("eta", eta)
    if int(layers) < 1:
        raise ShapeError(f"layers must be >= 1, got {layers}", argument="layers")
    if scheme not in ("postnorm", "prenorm"):
        raise ShapeError(f"scheme must be 'postnorm' or 'prenorm', got {scheme!r}", argument="scheme")
    if norm == "sphere":
        nf = _sphere_project
    elif norm == "layernorm":
        nf = _layer_norm
    else:
        raise ShapeError(f"norm must be 'sphere' or 'layernorm', got {norm!r}", argument="norm")
    if int(save_every) < 1:
        raise ShapeError(f"save_every must be >= 1, got {save_every}", argument="save_every")
    if scheme == "postnorm":
        X = nf(X, where="of X0")
    times, states = [0], [X]
    with small_problem_threads(X):
        for l in range(1, int(layers) + 1):
            where = f"layer {l}"
            if scheme == "postnorm":
                X = nf(X + eta * dyn.mha_unchecked(X), where=where)
            else:
                X = X + eta * dyn.mha_unchecked(nf(X, where=where))
            _guard(X, max_norm, where)
            if l % save_every == 0 or l == layers:
                times.append(l)
                states.append(X)
    tt = torch.tensor(times, dtype=torch.float64)
    eff = torch.tensor([effective_time(scheme, eta, int(t)) if t > 0 else 0.0 for t in times], dtype=torch.float64)
    traj = Trajectory(tt, torch.stack(states), scheme, eta, effective_times=eff)
    if dyn.kernels is not None and dyn.abs_pe is None and not dyn.causal and dyn.normalization == "softmax":
        sel = discrete_selection(dyn.kernels, dyn.T, eta, int(layers), scheme=scheme, min_contrast=min_contrast)
        traj.selection = sel
        traj.warnings = sel.messages()
        if warn:
            for m in traj.warnings:
                warnings.warn(m, SelectionWarning, stacklevel=2)
    return traj
