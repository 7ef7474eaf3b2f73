"""A documented import path kept working: the code is :mod:`numerics.patterns.classify` (its public names, re-exported)."""

from numerics.patterns.classify import (
    ModeFit,
    PatternObservation,
    Thresholds,
    classify_trajectory,
    hankel_dmd,
    measure_mode,
    space_time_spectrum,
    spatial_modes,
)

__all__ = [
    "Thresholds",
    "PatternObservation",
    "ModeFit",
    "spatial_modes",
    "space_time_spectrum",
    "hankel_dmd",
    "measure_mode",
    "classify_trajectory",
]
