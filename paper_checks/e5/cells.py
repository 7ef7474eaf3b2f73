"""E5 sweep definition: the coarse pattern vocabulary, the sweep configuration and one cell's model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.errors import ParameterError
from numerics.patterns.symbols import (
    CLUSTER,
    COEXISTING,
    INCOHERENT,
    ROTATING_CLUSTER,
    STANDING,
    STANDING_HELIX,
    STATIONARY,
    TRAVELLING,
    TRAVELLING_HELIX,
    gaussian_kernel,
)

CLAIM = "E5"
C_CLUSTER, C_STATIONARY, C_TRAVELLING, C_STANDING, C_COEXISTING, C_INCOHERENT = (
    "cluster",
    "stationary",
    "travelling",
    "standing",
    "coexisting",
    "incoherent",
)
COARSE = (C_CLUSTER, C_STATIONARY, C_TRAVELLING, C_STANDING, C_COEXISTING, C_INCOHERENT)
_COARSE_OF = {
    CLUSTER: C_CLUSTER,
    ROTATING_CLUSTER: C_CLUSTER,
    STATIONARY: C_STATIONARY,
    TRAVELLING: C_TRAVELLING,
    TRAVELLING_HELIX: C_TRAVELLING,
    STANDING: C_STANDING,
    STANDING_HELIX: C_STANDING,
    COEXISTING: C_COEXISTING,
    INCOHERENT: C_INCOHERENT,
}
DYNAMICS = ("sphere", "postnorm", "prenorm")


def coarse_class(label: str) -> str:
    """Map a :data:`numerics.patterns.symbols.PATTERN_CLASSES` label to :data:`COARSE`."""
    try:
        return _COARSE_OF[label]
    except KeyError:
        raise ParameterError(
            f"unknown pattern class {label!r}; expected one of {sorted(_COARSE_OF)}", argument="label"
        ) from None


@dataclass(frozen=True)
class PhaseConfig:
    """The sweep. ``kernels``: (name, centre, width) of head 1's ring kernel."""

    n: int = 24
    kernels: tuple = (("sym", 0.0, 1.5), ("asym+2", 2.0, 1.5), ("asym+4", 4.0, 1.5))
    thetas: tuple = (0.0, math.pi / 4, math.pi / 2, 3 * math.pi / 4, math.pi)
    rho: float = 3.0
    heads: tuple = (1, 2)
    content: tuple = (False, True)
    dynamics: tuple = DYNAMICS
    eta: float = 1.0
    content_scale: float = 1.0
    eps: float = 1e-8
    lin_amplitude: float = 1e-3  # fluctuation amplitude that ends the linear window
    dt: float = 0.05
    t_min: float = 6.0  # linear window bounds (time units; layers for stacks)
    t_cap: float = 40.0
    t_sat: float = 30.0
    layers_min: int = 12
    layers_cap: int = 80
    layers_sat: int = 60
    samples: int = 60  # target samples per window
    prenorm_in_tau: bool = True  # classify pre-norm windows in effective time τ (see run_sweep)
    seed: int = 0


@dataclass(frozen=True)
class Cell:
    kernel: str
    theta: float
    heads: int
    content: bool
    dynamics: str


def cell_model(cfg: PhaseConfig, cell: Cell) -> tuple[torch.Tensor, torch.Tensor, tuple | None]:
    """``(kernels (H, n), transports (H, 3, 3), content (W_Q, W_K) or None)`` of a sweep cell (float64)."""
    spec = {k[0]: k for k in cfg.kernels}
    if cell.kernel not in spec:
        raise ParameterError(f"unknown kernel {cell.kernel!r}; have {list(spec)}", argument="kernel")
    _, centre, width = spec[cell.kernel]
    H = int(cell.heads)
    if H not in (1, 2):
        raise ParameterError(f"heads must be 1 or 2, got {H}", argument="heads")
    c, s = math.cos(cell.theta), math.sin(cell.theta)
    R = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    Qs = [torch.eye(2, dtype=torch.float64), torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))]
    T = torch.zeros(H, 3, 3, dtype=torch.float64)
    ker = []
    for h in range(H):
        T[h, :2, :2] = cfg.rho * Qs[h] @ R / H
        T[h, 2, 2] = 1.0 / H
        ker.append(gaussian_kernel(cfg.n, centre if h == 0 else -centre / 2, width if h == 0 else 1.5 * width))
    content = None
    if cell.content:
        g = torch.Generator().manual_seed(1_000 + 7 * cfg.seed + H)
        content = (
            cfg.content_scale * torch.randn(H, 2, 3, generator=g, dtype=torch.float64),
            cfg.content_scale * torch.randn(H, 2, 3, generator=g, dtype=torch.float64),
        )
    return torch.stack(ker), T, content
