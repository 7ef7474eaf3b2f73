"""A documented import path kept working: the code is :mod:`numerics.patterns.dynamics` (its public names, re-exported)."""

from numerics.patterns.dynamics import (
    DYNAMICS,
    STATE,
    MHADynamics,
)

__all__ = [
    "MHADynamics",
    "DYNAMICS",
    "STATE",
]
