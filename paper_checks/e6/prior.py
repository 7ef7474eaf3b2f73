"""E6(a) dispersion analysis of the positional prior (THEOREMS.md T6 conventions, one layer ``x ← A x``).

The kernel and its Fourier symbol come from :mod:`numerics.patterns.symbols` (``gaussian_kernel``,
``kernel_hat``); this module only turns them into the E6 quantities (velocity per layer, the
kernel whose velocity matches the task)."""

from __future__ import annotations

import numpy as np

from numerics.patterns.symbols import gaussian_kernel, kernel_hat


def ring_kernel(n: int, peak: int, width: float) -> np.ndarray:
    """Normalised wrapped Gaussian on the ring, ``a(m) ∝ exp(−circ(m − peak)²/(2 width²))``, shape
    ``(n,)`` (``numerics.patterns.symbols.gaussian_kernel`` as a float64 numpy array)."""
    return gaussian_kernel(n, float(peak), width).numpy()


def kernel_symbol(kernel) -> np.ndarray:
    """``â(k) = Σ_m a(m) e^{+2πikm/n}`` for k = 0..n−1 (``numerics.patterns.symbols.kernel_hat``: n·ifft)."""
    a = np.asarray(kernel, dtype=np.float64)
    return kernel_hat(a).numpy()


def kernel_velocity(kernel, k: int = 1) -> float:
    """Per-layer phase velocity of Fourier mode ``k`` under ``x ← A x`` (T = I):
    ``c(k) = −n·arg â(k)/(2πk)`` tokens per layer (THEOREMS.md T6 sign: ``y_i = x_{i+s}`` is c = −s)."""
    a = np.asarray(kernel, dtype=np.float64)
    n = a.shape[-1]
    ah = kernel_symbol(a)[k]
    return float(-n * np.angle(ah) / (2 * np.pi * k))


def choose_prior_kernel(n: int, velocity: float, width: float) -> tuple[int, np.ndarray, float]:
    """Dispersion-chosen positional prior: among ring kernels ``ring_kernel(n, m0, width)``,
    ``m0 = 0..n−1``, the one whose predicted k=1 velocity is closest to ``velocity``.
    Returns ``(m0, kernel (n,), predicted velocity)``."""
    best: tuple[float, int, np.ndarray, float] | None = None
    for m0 in range(n):
        a = ring_kernel(n, m0, width)
        c = kernel_velocity(a, 1)
        err = abs(c - velocity)
        if best is None or err < best[0] - 1e-12:
            best = (err, m0, a, c)
    assert best is not None  # n >= 2 (gaussian_kernel refuses smaller rings)
    return best[1], best[2], best[3]
