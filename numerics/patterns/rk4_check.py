r"""RK4 step check: refuse a step ``dt`` that RK4 cannot integrate for the linearised dynamics.

:func:`rk4_amplification` is RK4's stability function ``R(z)``; :func:`check_rk4_step` compares it
with ``e^z`` on the spectrum of the linearisation of an :class:`~numerics.patterns.simulate.MHADynamics` at a
state (FFT dispersion for content-free rings, else the dense autograd Jacobian, else a Lipschitz
bound) and raises :class:`~numerics.errors.UnstableStepError`. The argument specs ``DYNAMICS`` /
``STATE`` come from :mod:`numerics.patterns.dynamics`, below this module and :mod:`numerics.patterns.simulate`.

Every public name is re-exported by :mod:`numerics.patterns.simulate` (its import path and contract name).
"""

from __future__ import annotations

import torch

from numerics.contracts.declarations import Flag, Float, Int, Tensor, contract
from numerics.errors import UnstableStepError
from numerics.patterns.dynamics import DYNAMICS, STATE, MHADynamics


@contract(z=Tensor("...", dtype="complex"), name="numerics.patterns.simulate.rk4_amplification")
def rk4_amplification(z: torch.Tensor) -> torch.Tensor:
    """RK4 stability function ``R(z) = 1 + z + z²/2 + z³/6 + z⁴/24`` (one step of ``y' = λy``, ``z = λ dt``)."""
    return 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24


def _linear_spectrum(dyn: MHADynamics, X0: torch.Tensor, sphere: bool, max_dense: int) -> torch.Tensor | None:
    """Eigenvalues of the linearisation at ``X0`` (first batch element): exact FFT dispersion for the
    content-free ring, autograd Jacobian when ``n·d <= max_dense``, else ``None``."""
    from numerics.patterns.symbols import dispersion

    if (
        dyn.content_free
        and dyn.kernels is not None
        and dyn.abs_pe is None
        and not dyn.causal
        and dyn.normalization == "softmax"
        and not sphere
    ):
        return dispersion(dyn.kernels, dyn.T).reshape(-1)
    x = X0.reshape(-1, *X0.shape[-2:])[0]
    n, d = x.shape
    if n * d > max_dense:
        return None
    J = dyn.jacobian(x, sphere=sphere)
    return torch.linalg.eigvals(J)


@contract(
    dyn=DYNAMICS,
    X0=STATE,
    dt=Float(lo=0.0),
    sphere=Flag(),
    max_dense=Int(lo=0),
    accuracy=Float(lo=0.0),
    name="numerics.patterns.simulate.check_rk4_step",
)
def check_rk4_step(
    dyn: MHADynamics, X0, dt: float, *, sphere: bool = False, max_dense: int = 1024, accuracy: float = 0.05
) -> float:
    r"""Refuse a step ``dt`` that RK4 cannot integrate for the linearisation at ``X0``.

    For each eigenvalue ``λ`` (``z = λ dt``): a non-growing mode (``Re λ ≤ 0``) must not be
    amplified, ``|R(z)| ≤ 1``; every mode must be resolved, ``|R(z) − e^z| ≤ accuracy·|e^z|``.
    Without a spectrum (large content-dependent cases) the bound ``dt·(1 + Σ‖T_h‖₂) ≤ 2.5`` is used
    (RK4's stability interval is ``[−2.785, 0]``). Returns the largest ``|z|``; raises
    :class:`UnstableStepError` naming ``dt`` with a safe value."""
    lam = _linear_spectrum(dyn, X0, sphere, max_dense)
    if lam is None:
        L = dyn.lipschitz_bound()
        if dt * L > 2.5:
            raise UnstableStepError(
                f"dt={dt} exceeds the RK4 bound 2.5/L = {2.5 / L:.3g} (L = 1 + Σ‖T_h‖₂ = {L:.3g})", argument="dt"
            )
        return dt * L
    z = lam.to(torch.complex128) * dt
    R = rk4_amplification(z)
    ez = torch.exp(z)
    bad_stab = (z.real <= 0) & (R.abs() > 1 + 1e-12)
    bad_acc = (R - ez).abs() > accuracy * ez.abs()
    if bool((bad_stab | bad_acc).any()):
        zmax = lam.abs().max().item()
        # |z| <= 1 keeps RK4 stable and within ~2% of e^z on the whole disk
        safe = 1.0 / max(zmax, 1e-300)
        why = "amplifies a decaying mode" if bool(bad_stab.any()) else "does not resolve the fastest mode"
        raise UnstableStepError(f"dt={dt} {why} (max |λ|dt = {zmax * dt:.3g}); use dt <= {safe:.3g}", argument="dt")
    return z.abs().max().item()
