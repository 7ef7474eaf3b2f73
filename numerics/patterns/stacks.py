r"""Discrete layer stacks (post-norm, pre-norm, Euler): effective time, pre-norm step sizes and mode selection.

A stack selects the mode with the largest per-layer factor ``|1 + h(μ − 1)|`` of the symbol's
eigenvalues ``μ = eig M(k)`` (:mod:`numerics.patterns.kernels`), not the one with the largest ``Re σ``, and a
pre-norm stack's effective time grows only like ``log(1 + ηL)`` (:func:`effective_time`,
:func:`prenorm_layer_steps`, :func:`discrete_selection`, :class:`StackSelection`).

Every public name is re-exported by :mod:`numerics.patterns.symbols` (its import path and contract name).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from numerics.contracts.declarations import Choice, Float, Int, contract
from numerics.errors import ParameterError
from numerics.patterns.kernels import KT_SPECS, kernel_hat, signed_wavenumbers, validate_pair

# ----------------------------------------------------------------------------- discrete stacks
_SCHEME = Choice(("postnorm", "prenorm", "euler"))


@contract(scheme=_SCHEME, eta=Float(lo=0.0), layers=Int(lo=0), name="numerics.patterns.symbols.effective_time")
def effective_time(scheme: str, eta: float, layers: int) -> float:
    r"""Continuous time a stack of ``layers`` layers of step ``eta`` corresponds to (onset regime).

    * ``"postnorm"`` ``x ← norm(x + η MHA(x))``: per-layer factor ``1 + h(μ − 1)``, ``h = η/(1+η)``,
      so ``τ = h·L``.
    * ``"prenorm"`` ``x ← x + η MHA(norm(x))``: the residual stream's amplitude grows like
      ``r_l = 1 + ηl``; a relative perturbation ``ε = δ/r`` obeys
      ``ε_{l+1} = ε_l (r_l + ημ)/(r_l + η) = ε_l (1 + η(μ−1)/r_{l+1})``, so layer ``l`` advances it by
      ``η / (1 + η(l+1))`` and ``τ = Σ_{l<L} η/(1 + η(l+1)) ≈ log((1 + ηL)/(1+η)) + …`` — it grows
      only logarithmically.
    * ``"euler"`` ``x ← x + η f(x)``: ``τ = ηL``."""
    _check_eta(eta)
    if scheme == "postnorm":
        return postnorm_layer_step(eta) * layers
    if scheme == "prenorm":
        return float(prenorm_layer_steps(eta, layers).sum().item())
    if scheme == "euler":
        return eta * layers
    raise ParameterError(f"unknown scheme {scheme!r}; expected 'postnorm', 'prenorm' or 'euler'", argument="scheme")


@contract(eta=Float(lo=0.0), name="numerics.patterns.symbols.postnorm_layer_step")
def postnorm_layer_step(eta: float) -> float:
    r"""Post-norm step time ``h = η/(1+η)`` (the same for every layer).

    The one definition of the post-norm step: ``x ← norm(x + η MHA(x))`` multiplies a relative tangent
    perturbation by ``(1 + ημ)/(1 + η) = 1 + h(μ − 1)`` per layer (:func:`effective_time`,
    :func:`discrete_selection` and the E5 paper check's exponents use it)."""
    _check_eta(eta)
    return eta / (1 + eta)


@contract(eta=Float(lo=0.0), layers=Int(lo=0), first=Int(lo=0), name="numerics.patterns.symbols.prenorm_layer_steps")
def prenorm_layer_steps(eta: float, layers: int, first: int = 0) -> torch.Tensor:
    r"""Pre-norm step times ``h_l = η / (1 + η(l+1))`` of layers ``l = first .. layers−1`` (float64).

    The one definition of the pre-norm step: ``x ← x + η MHA(norm(x))`` has residual amplitude
    ``r_l = 1 + ηl``, and layer ``l`` multiplies a relative tangent perturbation by
    ``(r_l + ημ)/(r_l + η) = 1 + h_l (μ − 1)`` (:func:`effective_time`, :func:`discrete_selection`,
    the E5 paper check's exponents and effective-time axis all use it)."""
    _check_eta(eta)
    l = torch.arange(int(first), int(layers), dtype=torch.float64)
    return eta / (1 + eta * (l + 1))


def _check_eta(eta):
    if not (isinstance(eta, (int, float)) and math.isfinite(eta) and eta > 0):
        raise ParameterError(f"step size must be a positive finite number, got {eta!r}", argument="eta")


@dataclass
class StackSelection:
    """Which mode a discrete stack amplifies, versus the continuous flow (issue 7 item 2 traps).

    ``log_gain`` ``(n, d)``: total log amplitude gain of each branch after ``layers`` layers,
    relative to the homogeneous state. ``k_star`` / ``k_continuous``: signed representatives.
    ``differs``: the stack selects a different ``|k|`` than the continuous flow (trap 1).
    ``contrast``: log-gain of the winner minus that of the best mode at another ``|k|``; ``frozen``
    when ``contrast < log(min_contrast)``: selection not finished after ``layers`` layers (trap 2,
    typical of pre-norm stacks whose ``effective_time`` grows like ``log(1 + ηL)``).
    ``time_needed``: continuous time for the continuous winner to reach ``min_contrast``."""

    scheme: str
    eta: float
    layers: int
    k_star: int
    k_continuous: int
    differs: bool
    effective_time: float
    contrast: float
    frozen: bool
    time_needed: float
    log_gain: torch.Tensor

    def messages(self) -> list[str]:
        out = []
        if self.differs:
            out.append(
                f"{self.scheme} stack (eta={self.eta}) selects |k|={abs(self.k_star)} but the continuous "
                f"flow selects |k|={abs(self.k_continuous)} (per-layer factor vs Re σ)"
            )
        if self.frozen:
            out.append(
                f"{self.scheme} stack: after {self.layers} layers (effective time {self.effective_time:.3g}; "
                f"the flow needs {self.time_needed:.3g}) the winner leads the runner-up only by a factor "
                f"e^{self.contrast:.2f}: the pattern freezes before selection finishes"
            )
        return out


@contract(
    **KT_SPECS,
    eta=Float(lo=0.0),
    layers=Int(lo=1),
    scheme=_SCHEME,
    min_contrast=Float(lo=1.0),
    mins={"n": 2},
    name="numerics.patterns.symbols.discrete_selection",
)
def discrete_selection(
    kernels,
    transports,
    eta: float,
    layers: int,
    *,
    scheme: str = "postnorm",
    min_contrast: float = 10.0,
    normalize: bool = False,
) -> StackSelection:
    r"""Mode selection of a discrete stack, from the symbol ``μ = eig M(k)``.

    * ``postnorm``: per-layer factor ``|1 + h(μ − 1)|``, ``h = η/(1+η)``; selection
      ``argmax_k max_b |1 + h(μ_b(k) − 1)|`` (can differ from ``argmax Re μ`` when ``Im μ`` is large:
      ``|1 + h(μ−1)|² = (1 + h(Re μ − 1))² + h² (Im μ)²``).
    * ``prenorm``: layer ``l`` multiplies by ``|1 + η(μ − 1)/(1 + η(l+1))|`` (relative to the
      base state, whose amplitude grows as ``1 + ηl``; see :func:`effective_time`).
    * ``euler``: ``|1 + η(μ − 1)|`` per layer.
    Both onset estimates assume the homogeneous state's amplitude follows the eigenvalue-1 direction
    (unit growth of ``M(0)``), as for the reference cases."""
    _check_eta(eta)
    if int(layers) < 1:
        raise ParameterError(f"layers must be >= 1, got {layers}", argument="layers")
    a, T = validate_pair(kernels, transports, normalize)
    n = a.shape[1]
    mu = torch.linalg.eigvals(torch.einsum("hk,hab->kab", kernel_hat(a), T.to(torch.complex128)))
    if scheme == "postnorm":
        h = postnorm_layer_step(eta)
        lg = layers * torch.log(torch.abs(1 + h * (mu - 1)))
    elif scheme == "euler":
        lg = layers * torch.log(torch.abs(1 + eta * (mu - 1)))
    elif scheme == "prenorm":
        lg = torch.zeros_like(mu.real)
        for h_l in prenorm_layer_steps(eta, int(layers)).tolist():
            lg = lg + torch.log(torch.abs(1 + h_l * (mu - 1)))
    else:
        raise ParameterError(f"unknown scheme {scheme!r}; expected 'postnorm', 'prenorm' or 'euler'", argument="scheme")
    ks = signed_wavenumbers(n)
    best_per_k = lg.max(-1).values
    kd = int(torch.argmax(best_per_k).item())
    kc = int(torch.argmax((mu.real - 1).max(-1).values).item())
    k_disc, k_cont = abs(int(ks[kd])), abs(int(ks[kc]))
    other = best_per_k.clone()
    other[ks.abs() == k_disc] = -math.inf
    contrast = (best_per_k[kd] - other.max()).item() if n > 2 or bool(torch.isfinite(other).any()) else math.inf
    re = (mu.real - 1).max(-1).values
    o2 = re.clone()
    o2[ks.abs() == k_cont] = -math.inf
    gap_c = (re[kc] - o2.max()).item() if bool(torch.isfinite(o2).any()) else math.inf
    need = math.log(min_contrast) / gap_c if gap_c > 0 else math.inf
    tau = effective_time(scheme, eta, int(layers))
    return StackSelection(
        scheme=scheme,
        eta=float(eta),
        layers=int(layers),
        k_star=k_disc,
        k_continuous=k_cont,
        differs=k_disc != k_cont,
        effective_time=tau,
        contrast=float(contrast),
        frozen=contrast < math.log(min_contrast),
        time_needed=need,
        log_gain=lg,
    )
