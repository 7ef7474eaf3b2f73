r"""Ring kernels and their Fourier symbol (THEOREMS.md T6, H3): the building blocks of :mod:`numerics.patterns.symbols`.

Relative positional kernels on a ring ``kernels[h, m] = a_h(m)`` (:func:`gaussian_kernel`,
:func:`kernel_from_bias`), their circulant attention matrices (:func:`circulant`), input checks
(:func:`validate_kernels`, :func:`validate_transports`), signed FFT wavenumbers and the symbol
``M(k) = Σ_h â_h(k) T_h`` with ``â_h(k) = Σ_m a_h(m) e^{+2πikm/n}`` (:func:`kernel_hat`, :func:`symbol`).

Every public name is re-exported by :mod:`numerics.patterns.symbols` (its import path and contract name).
"""

from __future__ import annotations

import math

import torch

from numerics.contracts.declarations import Flag, Float, FloatDType, Int, Passthrough, Tensor, contract
from numerics.contracts.validate import (
    as_tensor,
    check_finite,
    check_memory,
    check_ndim,
    check_nonnegative,
    check_same,
    check_square,
)
from numerics.errors import NonFiniteError, NotStochasticError, ParameterError, ShapeError
from numerics.tolerance import tol


# ----------------------------------------------------------------------------- kernels
@contract(
    n=Int(lo=2),
    center=Float(),
    width=Float(lo=0.0),
    dtype=FloatDType(),
    device=Passthrough(),
    name="numerics.patterns.symbols.gaussian_kernel",
)
def gaussian_kernel(n: int, center: float, width: float, *, dtype=torch.float64, device=None) -> torch.Tensor:
    r"""Wrapped Gaussian relative kernel ``a(m) ∝ exp(−δ(m)² / (2 width²))``, ``δ(m)`` the signed ring
    offset of ``m − center`` in ``[−n/2, n/2)``; normalised to sum 1. Shape ``(n,)``.

    This is the form that reproduces THEOREMS.md T6 Ex1 exactly (``center=4, width=1.5, n=64``)."""
    if int(n) < 2:
        raise ParameterError(f"ring size must be >= 2, got {n}", argument="n")
    if not (width > 0 and math.isfinite(width)):
        raise ParameterError(f"width must be positive and finite, got {width}", argument="width")
    itemsize = torch.empty((), dtype=dtype).element_size()
    check_memory("n", 4 * int(n) * itemsize, f"the kernel of n={n} offsets (a few copies)", "a smaller ring")
    m = torch.arange(n, dtype=dtype, device=device)
    delta = torch.remainder(m - center + n / 2, n) - n / 2
    a = torch.exp(-(delta**2) / (2 * width**2))
    return a / a.sum()


@contract(bias=Tensor("... n", neg_inf=True), name="numerics.patterns.symbols.kernel_from_bias")
def kernel_from_bias(bias) -> torch.Tensor:
    """Relative-position attention at a homogeneous state: ``a_h = softmax(bias_h)`` over ``m``.

    ``bias`` ``(..., n)`` real (``−inf`` allowed = masked offset) → kernel ``(..., n)``. Scores that
    depend on content only through ``x*ᵀ M x*`` are constant along a row and cancel in softmax."""
    b = as_tensor("bias", bias)
    if bool(torch.isnan(b).any()) or bool((b == float("inf")).any()):
        raise NonFiniteError("bias must not contain NaN or +inf", argument="bias")
    if not bool(torch.isfinite(b).any(-1).all()):
        raise ParameterError("a row is −inf at every offset: its softmax is undefined (0/0)", argument="bias")
    return torch.softmax(b, dim=-1)


@contract(kernels=Tensor("... n"), name="numerics.patterns.symbols.circulant")
def circulant(kernels) -> torch.Tensor:
    """``A0[..., i, j] = a((j − i) mod n)``: ``(..., n)`` → ``(..., n, n)``."""
    a = as_tensor("kernels", kernels)
    n = a.shape[-1]
    check_memory(
        "kernels",
        a.numel() * n * a.element_size() + n * n * 8,
        f"the circulant operators (..., n, n) of {a.numel() // n} kernel(s) of length n={n}",
        "kernel_hat / symbol (the circulant's eigenvalues, O(n) per kernel)",
    )
    idx = (torch.arange(n, device=a.device)[None, :] - torch.arange(n, device=a.device)[:, None]) % n
    return a[..., idx]


@contract(
    kernels=Tensor("H n", nonneg=True),
    normalize=Flag(),
    mins={"n": 2},
    name="numerics.patterns.symbols.validate_kernels",
)
def validate_kernels(kernels, *, normalize: bool = False) -> torch.Tensor:
    """Check ``kernels`` ``(H, n)``: real floating, finite, ``n >= 2``, nonnegative, rows summing to 1.

    ``normalize=True`` divides each row by its sum instead of requiring it (explicit opt-in; a row
    with sum 0 is still refused as not normalisable)."""
    a = as_tensor("kernels", kernels)
    check_ndim("kernels", a, 2, "(H, n)", max_ndim=2)
    if a.shape[0] < 1:
        raise ShapeError("need at least one head", argument="kernels")
    if a.shape[1] < 2:
        raise ShapeError(f"ring size n must be >= 2, got n={a.shape[1]}", argument="kernels")
    check_finite("kernels", a)
    check_nonnegative("kernels", a)
    s = a.sum(-1)
    if bool((s <= 0).any()):
        raise NotStochasticError("a kernel row sums to 0: not normalisable", argument="kernels")
    if normalize:
        return a / s[:, None]
    r = (s - 1).abs().max().item()
    bound = tol(a.dtype, a.shape[1])
    if r > bound:
        raise NotStochasticError(
            f"kernel rows must sum to 1 (max |sum − 1| = {r:.3e} > {bound:.1e}); pass normalize=True to "
            "normalise explicitly",
            argument="kernels",
        )
    return a


@contract(transports=Tensor("H d d"), H=Int(lo=1, optional=True), name="numerics.patterns.symbols.validate_transports")
def validate_transports(transports, H: int | None = None) -> torch.Tensor:
    """Check ``transports`` ``(H, d, d)``: real floating, finite, square, ``H`` matching."""
    T = as_tensor("transports", transports)
    check_ndim("transports", T, 3, "(H, d, d)", max_ndim=3)
    check_square("transports", T, "(H, d, d)")
    check_finite("transports", T)
    if H is not None and T.shape[0] != H:
        raise ShapeError(f"expected {H} heads (kernels have {H} rows), got {T.shape[0]}", argument="transports")
    return T


#: contract specs of the (kernels, transports, normalize) arguments shared by patterns and stacks
KT_SPECS = dict(kernels=Tensor("H n", nonneg=True), transports=Tensor("H d d"), normalize=Flag())
#: contract spec of a tie tolerance
TIE_SPEC = Float(lo=0.0, closed=True, optional=True)


def validate_pair(kernels, transports, normalize: bool):
    """Validated ``(a, T)``: kernels ``(H, n)`` (normalised when asked) and transports ``(H, d, d)`` on one device / dtype."""
    a = validate_kernels(kernels, normalize=normalize)
    T = validate_transports(transports, a.shape[0])
    check_same(["kernels", "transports"], [a, T])
    return a, T


# ----------------------------------------------------------------------------- linear theory
@contract(n=Int(lo=1), device=Passthrough(), name="numerics.patterns.symbols.signed_wavenumbers")
def signed_wavenumbers(n: int, device=None) -> torch.Tensor:
    """Signed wavenumber of FFT index ``k = 0..n−1``: values in ``(−n/2, n/2]`` (``(n,)`` int64)."""
    k = torch.arange(n, device=device)
    return torch.where(k <= n // 2, k, k - n)


@contract(kernels=Tensor("... n"), name="numerics.patterns.symbols.kernel_hat")
def kernel_hat(kernels) -> torch.Tensor:
    r"""``â_h(k) = Σ_m a_h(m) e^{+2πikm/n}`` for FFT index ``k = 0..n−1``: ``(..., n)`` → complex ``(..., n)``.

    Computed as ``n · ifft(a)`` (THEOREMS.md sign convention)."""
    a = as_tensor("kernels", kernels)
    n = a.shape[-1]
    return torch.fft.ifft(a, dim=-1) * n


@contract(**KT_SPECS, mins={"n": 2}, name="numerics.patterns.symbols.symbol")
def symbol(kernels, transports, *, normalize: bool = False) -> torch.Tensor:
    """``M(k) = Σ_h â_h(k) T_h``: kernels ``(H, n)``, transports ``(H, d, d)`` → complex ``(n, d, d)``."""
    a, T = validate_pair(kernels, transports, normalize)
    ah = kernel_hat(a)  # (H, n)
    return torch.einsum("hk,hab->kab", ah, T.to(ah.dtype))
