"""A documented import path kept working: the code is :mod:`numerics.patterns.simulate` (its public names, re-exported)."""

from numerics.patterns.simulate import (
    BatchedDynamics,
    MHADynamics,
    SelectionWarning,
    Trajectory,
    check_rk4_step,
    layer_norm,
    perturbed_homogeneous,
    rk4_amplification,
    simulate_cells,
    simulate_flow,
    simulate_stack,
    sinusoidal_pe,
    sphere_project,
)

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
