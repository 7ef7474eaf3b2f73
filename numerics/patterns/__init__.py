"""Seed B: pattern formation of MHA token dynamics on a ring (THEOREMS.md T6) — where the code for Seed B lives.

One public face; the chain inside runs one way: :mod:`~numerics.patterns.kernels` (ring kernels and their
Fourier symbol) → :mod:`~numerics.patterns.stacks` (discrete layer stacks) → :mod:`~numerics.patterns.symbols`
(the linear theory: symbol ``M(k)``, dispersion, ``k*``, :func:`predict_pattern`) →
:mod:`~numerics.patterns.dynamics` (:class:`MHADynamics`) → :mod:`~numerics.patterns.simulate_batched` →
:mod:`~numerics.patterns.rk4_check` → :mod:`~numerics.patterns.simulate` (RK4, sphere flow, post-/pre-norm
stacks) → :mod:`~numerics.patterns.classify` (space–time classifier of simulated trajectories) → this face."""

from __future__ import annotations

from numerics.patterns import classify, dynamics, simulate, symbols
from numerics.patterns.classify import *  # noqa: F403
from numerics.patterns.dynamics import *  # noqa: F403
from numerics.patterns.simulate import *  # noqa: F403
from numerics.patterns.symbols import *  # noqa: F403

#: the face: the public names of ``symbols``, ``dynamics``, ``simulate``, ``classify`` (first occurrence kept)
__all__ = list(dict.fromkeys([*symbols.__all__, *dynamics.__all__, *simulate.__all__, *classify.__all__]))
