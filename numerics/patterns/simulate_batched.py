r"""Batched fast path: many ring-kernel MHA cells of one ``(n, d)`` integrated as one batch.

:class:`BatchedDynamics` stacks the cells' biases, transports and content weights;
:func:`simulate_cells` integrates them all at once (sphere-flow RK4, post-norm or pre-norm stacks),
for parameter sweeps. The one-trajectory reference simulators it is checked against
(:func:`~numerics.patterns.simulate.simulate_flow`, :func:`~numerics.patterns.simulate.simulate_stack`) stay in
:mod:`numerics.patterns.simulate`.

Every public name is re-exported by :mod:`numerics.patterns.simulate` (its import path and contract name).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from numerics.contracts.declarations import Choice, Float, Instance, Int, Passthrough, Tensor, contract
from numerics.errors import DTypeError, ParameterError, ShapeError, SimulationDivergedError
from numerics.patterns.dynamics import MHADynamics


# ----------------------------------------------------------------------------- batched fast path
def _batched_sizes(bd) -> dict:
    P, _, n, _ = bd.bias.shape
    return {"P": P, "n": n, "d": bd.T.shape[-1]}


_BATCHED = Instance(lambda: BatchedDynamics, "a BatchedDynamics", bind=_batched_sizes, tensor=lambda bd: bd.T)


class BatchedDynamics:
    r"""Many ring-kernel :class:`MHADynamics` of one ``(n, d)`` evaluated as one batch (fast path of
    parameter sweeps; :func:`simulate_flow` / :func:`simulate_stack` are its one-trajectory reference).

    ``MHA(X)_p = Σ_h softmax(b^h_p + β_p q^h kᵀ/√d_k) X_p T^{hᵀ}_p`` for every cell ``p``; cells with
    fewer heads are padded with zero transports, content-free cells with zero ``W_Q, W_K`` (their
    attention is then ``softmax(b) = a``). States ``(P, n, d)``. The same formulas as
    :meth:`MHADynamics.mha` / :meth:`MHADynamics.sphere_velocity`."""

    @contract(
        self=Passthrough(),
        dyns=Instance((list, tuple), "a list of MHADynamics"),
        name="numerics.patterns.simulate.BatchedDynamics.__init__",
    )
    def __init__(self, dyns: list[MHADynamics]):
        for p, dy in enumerate(dyns):
            if not isinstance(dy, MHADynamics):
                raise DTypeError(f"cell {p}: expected an MHADynamics, got {type(dy).__name__}", argument="dyns")
        if not dyns:
            raise ShapeError("need at least one dynamics", argument="dyns")
        n, d = dyns[0].n, dyns[0].d
        if n is None:
            raise ParameterError("cell 0 has no ring (no kernels)", argument="dyns")
        H = max(dy.H for dy in dyns)
        dk = max((dy.Wq.shape[1] for dy in dyns if dy.Wq is not None), default=1)
        P = len(dyns)
        dt = dyns[0].T.dtype
        self.bias = torch.zeros(P, H, n, n, dtype=dt)
        self.T = torch.zeros(P, H, d, d, dtype=dt)
        self.Wq = torch.zeros(P, H, dk, d, dtype=dt)
        self.Wk = torch.zeros(P, H, dk, d, dtype=dt)
        self.scale = torch.zeros(P, 1, 1, 1, dtype=dt)
        for p, dy in enumerate(dyns):
            if dy.n != n or dy.d != d:
                raise ShapeError(f"cell {p} has (n, d) = ({dy.n}, {dy.d}), cell 0 ({n}, {d})", argument="dyns")
            if (
                dy.bias is None
                or dy.abs_pe is not None
                or dy.rope is not None
                or dy.causal
                or dy.normalization != "softmax"
            ):
                raise ParameterError(
                    f"cell {p}: batched cells must be ring-kernel softmax dynamics without "
                    "absolute PE, RoPE or causal mask",
                    argument="dyns",
                )
            self.bias[p, : dy.H] = dy.bias
            self.T[p, : dy.H] = dy.T
            if dy.Wq is not None and dy.Wk is not None:
                self.Wq[p, : dy.H, : dy.Wq.shape[1]] = dy.Wq
                self.Wk[p, : dy.H, : dy.Wk.shape[1]] = dy.Wk
                self.scale[p] = dy.beta / math.sqrt(dy.Wq.shape[1])
        self.content = bool((self.scale != 0).any())
        self.A0 = torch.softmax(self.bias, -1)

    @contract(self=_BATCHED, X=Tensor("P n d"), name="numerics.patterns.simulate.BatchedDynamics.mha")
    def mha(self, X: torch.Tensor) -> torch.Tensor:
        """``MHA(X)_p`` ``(P, n, d)`` of every cell (the formula of :meth:`MHADynamics.mha`)."""
        if self.content:
            q = torch.einsum("phkd,pnd->phnk", self.Wq, X)
            k = torch.einsum("phkd,pnd->phnk", self.Wk, X)
            A = torch.softmax(self.bias + self.scale * (q @ k.transpose(-1, -2)), -1)
        else:
            A = self.A0
        AX = A @ X[:, None]  # (P, H, n, d)
        return (AX @ self.T.transpose(-1, -2)).sum(1)

    @contract(self=_BATCHED, X=Tensor("P n d"), name="numerics.patterns.simulate.BatchedDynamics.sphere_velocity")
    def sphere_velocity(self, X: torch.Tensor) -> torch.Tensor:
        """Tangent field of every cell (the formula of :meth:`MHADynamics.sphere_velocity`)."""
        m = self._mha(X)
        return m - (m * X).sum(-1, keepdim=True) / (X * X).sum(-1, keepdim=True) * X

    # unchecked forms for simulate_cells' loop (states it built from a checked X0)
    _mha = mha.__wrapped__
    _sphere_velocity = sphere_velocity.__wrapped__


def _unit_rows(X: torch.Tensor) -> torch.Tensor:
    return X / torch.linalg.vector_norm(X, dim=-1, keepdim=True)


@contract(
    bd=_BATCHED,
    X0=Tensor("P n d"),
    dynamics=Choice(("sphere", "postnorm", "prenorm")),
    steps=Int(lo=1),
    dt=Float(lo=0.0),
    eta=Float(lo=0.0),
    save_every=Int(lo=1),
    name="numerics.patterns.simulate.simulate_cells",
)
def simulate_cells(
    bd: BatchedDynamics,
    X0: torch.Tensor,
    *,
    dynamics: str,
    steps: int,
    dt: float = 0.05,
    eta: float = 1.0,
    save_every: int = 1,
) -> tuple[np.ndarray, torch.Tensor]:
    """Integrate all cells of ``bd`` from ``X0`` ``(P, n, d)``: ``sphere`` = RK4 of the sphere flow
    (renormalised each step), ``postnorm`` / ``prenorm`` = ``steps`` layers (unit-sphere norm).
    Returns ``(times (S,), states (S, P, n, d))`` (time units for the flow, layer indices for
    stacks). Non-finite states raise :class:`SimulationDivergedError`."""
    if dynamics not in ("sphere", "postnorm", "prenorm"):
        raise ParameterError(
            f"unknown dynamics {dynamics!r}; expected 'sphere', 'postnorm' or 'prenorm'", argument="dynamics"
        )
    X = X0.clone()
    if dynamics in ("sphere", "postnorm"):
        X = _unit_rows(X)
    times, states = [0.0], [X]
    for s in range(1, steps + 1):
        if dynamics == "sphere":
            f = bd._sphere_velocity
            k1 = f(X)
            k2 = f(X + 0.5 * dt * k1)
            k3 = f(X + 0.5 * dt * k2)
            k4 = f(X + dt * k3)
            X = _unit_rows(X + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
        elif dynamics == "postnorm":
            X = _unit_rows(X + eta * bd._mha(X))
        else:
            X = X + eta * bd._mha(_unit_rows(X))
        if s % save_every == 0 or s == steps:
            if not bool(torch.isfinite(X).all()):
                raise SimulationDivergedError(f"non-finite state at step {s}", argument="X0")
            times.append(s * dt if dynamics == "sphere" else float(s))
            states.append(X)
    return np.asarray(times), torch.stack(states)
