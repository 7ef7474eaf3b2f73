r"""Pattern classification of simulated token trajectories by space–time Fourier analysis.

Input: ``states`` ``(T, n, d)`` at uniformly spaced ``times`` ``(T,)`` (one trajectory; slice a
batch first). Spatial modes (THEOREMS.md sign convention, ``φ_k(i) = e^{+2πiki/n}``)::

    c_k(t) = (1/n) Σ_i x_i(t) e^{−2πiki/n}  ∈ C^d         (numpy/torch ``fft`` along tokens / n)

so a real pattern ``Re(e^{σt} φ_k ⊗ v)`` has ``c_k(t) = e^{σt} v / 2`` and ``c_{−k} = conj c_k``.

Decision procedure (thresholds in :class:`Thresholds`; all exposed so sensitivity can be studied):

1. **cluster**: the relative fluctuation ``r(t) = ‖X − mean_i X‖ / ‖mean_i X‖`` ends below 1 and
   decays (log-slope over the window < −``decay_slope``), or is below ``cluster_tol`` at the window's end without
   growing (a small but growing fluctuation is a pattern in its linear window, not a cluster). A cluster
   whose mean rotates (oscillatory Hankel-DMD components of ``c_0``) is a **rotating cluster**.
2. Power per ``|k| ≥ 1``: ``P(|k|) = ‖c_k‖² + ‖c_{−k}‖²`` at the window's last frame, as fractions
   of the fluctuation power. *Top modes*: fraction ≥ ``coexist_ratio`` × the dominant one. If they
   cover less than ``incoherent_frac`` or there are more than ``max_modes``: **incoherent**; two to
   ``max_modes`` top modes: **coexisting modes** (``modes`` lists all, sorted).
3. Temporal content of ``c_{k1}(t)`` (``k1 = +|k|``) by Hankel (delay-embedded) DMD over the window:
   exponents ``s_r`` with vectors ``u_r``; *significant* components have final amplitude ≥
   ``coexist_ratio`` × the largest.
   * one component, ``|Im s|·duration < phase_tol``: **stationary periodic**;
   * one component, oscillating: **travelling wave** if ``u`` is linearly polarised
     (``|uᵀu| ≥ pol_threshold``) else **travelling helix**; ``velocity = −n Im s / (2π k1)``,
     ``omega = Im s``;
   * two components with opposite frequencies: **standing wave** / **standing helix** (by
     polarisation);
   * anything else: **coexisting modes** (several branches at one ``k``).

:func:`measure_mode` fits ``σ`` of one wavenumber (growth rate + frequency) for the T6
prediction-vs-emergence checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from numerics.contracts.declarations import Float, Instance, Int, Passthrough, Tensor, contract
from numerics.contracts.validate import as_tensor, check_finite, check_ndim
from numerics.errors import ParameterError, ShapeError
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
    polarisation,
)
from numerics.threads import small_problem_threads

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


@dataclass(frozen=True)
class Thresholds:
    """Classifier thresholds (see the module docstring for where each enters)."""

    cluster_tol: float = 1e-3
    decay_slope: float = 1e-3
    incoherent_frac: float = 0.5
    coexist_ratio: float = 0.25
    phase_tol: float = 0.3
    pol_threshold: float = 0.9
    svd_rtol: float = 1e-7
    delays: int = 3
    max_modes: int = 3


@dataclass
class ModeFit:
    """Fitted ``σ`` of wavenumber ``k`` (dominant DMD component at the end of the window).

    ``velocity = −n Im σ / (2π k)`` (0 for k = 0); ``components``: all ``(s_r, final amplitude)``."""

    k: int
    growth_rate: complex
    velocity: float
    vector: torch.Tensor
    components: list


@dataclass
class PatternObservation:
    """What a trajectory shows. ``label`` ∈ :data:`numerics.patterns.symbols.PATTERN_CLASSES`; ``k`` = dominant
    ``|k|`` (0 for clusters); ``velocity`` (tokens / time unit) and ``omega`` (rad / time unit) when
    measured; ``modes``: ``[(|k|, power fraction)]`` sorted; ``details``: intermediate numbers."""

    label: str
    k: int
    velocity: float | None
    omega: float | None
    growth_rate: complex | None
    power_fraction: float
    modes: list
    details: dict = field(default_factory=dict)


def _check_traj(times, states):
    X = as_tensor("states", states)
    check_ndim("states", X, 3, "(T, n, d)", max_ndim=3)
    check_finite("states", X)
    t = as_tensor("times", torch.as_tensor(times, dtype=torch.float64))
    check_ndim("times", t, 1, "(T,)", max_ndim=1)
    if t.shape[0] != X.shape[0]:
        raise ShapeError(f"{t.shape[0]} times for {X.shape[0]} states", argument="times")
    if X.shape[1] < 2:
        raise ShapeError(f"need n >= 2 tokens, got {X.shape[1]}", argument="states")
    if t.shape[0] >= 2:
        dt = t[1:] - t[:-1]
        if bool((dt <= 0).any()) or (dt.max() - dt.min()).item() > 1e-9 * max(dt.abs().max().item(), 1.0):
            raise ShapeError("times must be uniformly spaced and increasing", argument="times")
    return t, X.to(torch.float64)


_T = Tensor("T", group=None)
_S = Tensor("T n d")


@contract(states=_S)
def spatial_modes(states) -> torch.Tensor:
    """``c_k(t)`` ``(T, n, d)`` complex, FFT index ``k`` (``states`` ``(T, n, d)``)."""
    X = as_tensor("states", states)
    return torch.fft.fft(X.to(torch.float64), dim=-2) / X.shape[-2]


@contract(states=_S, times=_T, mins={"n": 2})
def space_time_spectrum(times, states) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Space–time power of the fluctuation ``X − mean_i X``: returns ``(omega (T,), k (n,), power (T, n))``.

    ``power[w, k] = Σ_a |F_a(ω_w, k)|²`` with ``F_a(ω, k) = Σ_t Σ_i x̃_{ia}(t) e^{−2πiki/n} e^{−iωt}``,
    so a travelling mode ``e^{i(2πki/n + ωt)}`` appears at ``(ω, k)``; both axes fft-shifted.
    Amplitude growth smears ``ω``: pass a saturated window."""
    t, X = _check_traj(times, states)
    Xf = X - X.mean(-2, keepdim=True)
    T, n = X.shape[0], X.shape[1]
    dt = (t[1] - t[0]).item() if T > 1 else 1.0
    C = torch.fft.fft(Xf, dim=-2)  # e^{-2πiki/n}
    F = torch.fft.fft(C, dim=0)  # e^{−iωt} with ω = 2π f
    P = (F.abs() ** 2).sum(-1)
    om = torch.fft.fftshift(2 * math.pi * torch.fft.fftfreq(T, d=dt, dtype=torch.float64))
    ks = torch.fft.fftshift(torch.fft.fftfreq(n, d=1.0 / n, dtype=torch.float64)).round().to(torch.int64)
    return om, ks, torch.fft.fftshift(P, dim=(0, 1))


@contract(series=Tensor("T m", dtype="complex"), times=_T, delays=Int(lo=1), svd_rtol=Float(lo=0.0, hi=1.0))
def hankel_dmd(times, series: torch.Tensor, *, delays: int = 3, svd_rtol: float = 1e-7):
    r"""Exponents and final amplitudes of a uniformly sampled vector series ``series`` ``(T, m)`` (complex).

    Delay-embeds ``delays`` consecutive samples (so a rank-1 standing oscillation ``(αe^{iωt} +
    βe^{−iωt})v`` is resolved), fits the linear propagator by exact DMD on the SVD-truncated data
    (singular values ≥ ``svd_rtol``·max), and returns a list of ``(s, amplitude_at_end, vector)``
    sorted by decreasing final amplitude; ``s = log(λ)/Δt``, ``vector`` = the first-delay block
    (unit norm)."""
    t = torch.as_tensor(times, dtype=torch.float64)
    Z = series.to(torch.complex128)
    T, m = Z.shape
    q = max(1, min(int(delays), T // 3))
    if T - q < 2:
        raise ShapeError(f"need more samples than {q + 1} for DMD, got {T}", argument="times")
    dt = (t[1] - t[0]).item()
    Hk = torch.cat([Z[i : T - q + i + 1] for i in range(q)], dim=1).T  # (q m, T−q+1)
    Y0, Y1 = Hk[:, :-1], Hk[:, 1:]
    U, S, Vh = torch.linalg.svd(Y0, full_matrices=False)
    r = int((svd_rtol * S[0] <= S).sum().item()) if S[0] > 0 else 0
    if r == 0:
        return []
    U, S, Vh = U[:, :r], S[:r], Vh[:r]
    At = U.conj().T @ Y1 @ Vh.conj().T / S[None, :]
    lam, W = torch.linalg.eig(At)
    Phi = Y1 @ Vh.conj().T / S[None, :] @ W  # exact DMD modes (q m, r)
    # amplitudes from the last snapshot
    b = torch.linalg.lstsq(Phi, Hk[:, -1:].to(Phi.dtype)).solution[:, 0]
    out = []
    for j in range(r):
        vec = Phi[:m, j]
        nv = torch.linalg.vector_norm(vec)
        amp = (b[j].abs() * nv).item()
        if nv > 0:
            vec = vec / nv
        s = complex(torch.log(lam[j]).item()) / dt
        out.append((s, amp, vec))
    out.sort(key=lambda x: -x[1])
    return out


def _window(t: torch.Tensor, X: torch.Tensor, window):
    if window is None:
        return t, X
    try:
        t0, t1 = (float(v) for v in window)
    except (TypeError, ValueError):
        raise ParameterError(f"expected a pair (t0, t1), got {window!r}", argument="window") from None
    if not (math.isfinite(t0) and math.isfinite(t1) and t0 < t1):
        raise ParameterError(f"expected finite t0 < t1, got {window!r}", argument="window")
    m = (t >= t0 - 1e-12) & (t <= t1 + 1e-12)
    if int(m.sum()) < MIN_SAMPLES:
        raise ShapeError(f"window {window} holds fewer than {MIN_SAMPLES} samples", argument="window")
    return t[m], X[m]


#: the fewest samples a trajectory (or its window) may have: a growth rate, a frequency and a class
#: are read from how the state changes, which one sample cannot show (same floor as ``window``)
MIN_SAMPLES = 4


def _k_bound(sign: int):
    """``|k| <= n // 2``: every other wavenumber aliases to one of these on n tokens, and the reported
    velocity ``−n Im σ / (2π k)`` would be that of a wavenumber that was never fitted."""
    return lambda sizes: None if "n" not in sizes else sign * (sizes["n"] // 2)


@contract(
    states=_S,
    times=_T,
    k=Int(lo=_k_bound(-1), hi=_k_bound(1)),
    window=Passthrough(),
    delays=Int(lo=1),
    svd_rtol=Float(lo=0.0, hi=1.0),
    mins={"n": 2, "T": MIN_SAMPLES},
)
def measure_mode(times, states, k: int, *, window=None, delays: int = 3, svd_rtol: float = 1e-7) -> ModeFit:
    r"""Fit ``σ`` (growth rate + i·frequency) of wavenumber ``k`` from a trajectory ``(T, n, d)``.

    Hankel DMD of ``c_k(t)`` over ``window = (t0, t1)`` (default: all samples); the component with
    the largest amplitude at the window's end is reported. For the conjugate representative use
    ``k > 0``; then ``velocity = −n Im σ / (2π k)`` as in :class:`numerics.patterns.symbols.PatternPrediction`."""
    X = as_tensor("states", states)
    with small_problem_threads(X):
        return _measure_mode(times, X, k, window=window, delays=delays, svd_rtol=svd_rtol)


def _measure_mode(times, states, k, *, window, delays, svd_rtol) -> ModeFit:
    t, X = _check_traj(times, states)
    t, X = _window(t, X, window)
    n = X.shape[1]
    C = spatial_modes(X)[:, int(k) % n]
    comps = hankel_dmd(t, C, delays=delays, svd_rtol=svd_rtol)
    if not comps:
        raise ShapeError(f"wavenumber {k} carries no signal in the window", argument="k")
    s, amp, vec = comps[0]
    vel = 0.0 if k == 0 else -n * s.imag / (2 * math.pi * k)
    return ModeFit(int(k), s, vel, vec, [(c[0], c[1]) for c in comps])


@contract(
    states=_S,
    times=_T,
    window=Passthrough(),
    thresholds=Instance(lambda: Thresholds, "a Thresholds", optional=True),
    mins={"n": 2, "T": MIN_SAMPLES},
)
def classify_trajectory(times, states, *, window=None, thresholds: Thresholds | None = None) -> PatternObservation:
    """Classify a trajectory ``(T, n, d)`` (uniform ``times``) into a pattern class (module docstring)."""
    X = as_tensor("states", states)
    with small_problem_threads(X):
        return _classify(times, X, window, thresholds)


def _classify(times, states, window, thresholds) -> PatternObservation:
    th = thresholds or Thresholds()
    t, X = _check_traj(times, states)
    t, X = _window(t, X, window)
    n = X.shape[1]
    duration = (t[-1] - t[0]).item()
    C = spatial_modes(X)  # (T, n, d)
    p = (C.abs() ** 2).sum(-1)  # (T, n)
    base = p[:, 0]
    fl = p[:, 1:].sum(-1)
    r = torch.sqrt(fl / base.clamp_min(1e-300))
    # log-slope of the relative fluctuation over the window (least squares)
    lr = torch.log(r.clamp_min(1e-300))
    tc = t - t.mean()
    slope = ((tc * (lr - lr.mean())).sum() / (tc * tc).sum().clamp_min(1e-300)).item()
    details = {"rel_fluctuation": r[-1].item(), "fluctuation_slope": slope, "duration": duration}
    growing = slope > th.decay_slope
    # a cluster needs the fluctuation below the mean at the end (r < 1); this also keeps a
    # roundoff-floored mean (r ~ 1/eps, e.g. mean decaying much faster than the pattern) out
    if r[-1].item() < 1.0 and (slope < -th.decay_slope or (r[-1].item() < th.cluster_tol and not growing)):
        comps = hankel_dmd(t, C[:, 0], delays=th.delays, svd_rtol=th.svd_rtol)
        amax = comps[0][1] if comps else 0.0
        osc = [c for c in comps if c[1] >= th.coexist_ratio * amax and abs(c[0].imag) * duration >= th.phase_tol]
        if osc:
            om = abs(osc[0][0].imag)
            details["components_k0"] = [(c[0], c[1]) for c in comps]
            return PatternObservation(ROTATING_CLUSTER, 0, 0.0, om, osc[0][0], 1.0, [(0, 1.0)], details)
        return PatternObservation(CLUSTER, 0, 0.0, 0.0, None, 1.0, [(0, 1.0)], details)
    # power per |k| at the last frame
    last = p[-1]
    kmax = n // 2
    P = torch.zeros(kmax + 1, dtype=torch.float64)
    for k in range(1, kmax + 1):
        P[k] = last[k] + (last[n - k] if (n - k) != k else 0.0)
    tot = P.sum().item()
    frac = (P / max(tot, 1e-300)).tolist()
    order = sorted(range(1, kmax + 1), key=lambda k: -frac[k])
    modes = [(k, frac[k]) for k in order if frac[k] > 0]
    k1 = order[0]
    f1 = frac[k1]
    frac[order[1]] if len(order) > 1 else 0.0
    details["spectrum"] = frac
    top = [(k, f) for k, f in modes if f >= th.coexist_ratio * f1]
    coverage = sum(f for _, f in top)
    details["coverage"] = coverage
    if coverage < th.incoherent_frac or len(top) > th.max_modes:
        return PatternObservation(INCOHERENT, k1, None, None, None, f1, modes, details)
    if len(top) >= 2:
        return PatternObservation(COEXISTING, k1, None, None, None, f1, modes, details)
    comps = hankel_dmd(t, C[:, k1], delays=th.delays, svd_rtol=th.svd_rtol)
    amax = comps[0][1]
    sig = [c for c in comps if c[1] >= th.coexist_ratio * amax]
    details["components"] = [(c[0], c[1]) for c in comps]
    s, _, u = sig[0]
    osc = abs(s.imag) * duration >= th.phase_tol
    pol = polarisation(u)
    details["polarisation"] = pol
    if len(sig) == 1:
        if not osc:
            return PatternObservation(STATIONARY, k1, 0.0, 0.0, s, f1, modes, details)
        vel = -n * s.imag / (2 * math.pi * k1)
        if pol >= th.pol_threshold:
            return PatternObservation(TRAVELLING, k1, vel, s.imag, s, f1, modes, details)
        return PatternObservation(TRAVELLING_HELIX, k1, vel, s.imag, s, f1, modes, details)
    if len(sig) == 2:
        s2, _, u2 = sig[1]
        opposite = osc and s.imag * s2.imag < 0 and abs(abs(s.imag) - abs(s2.imag)) <= 0.1 * abs(s.imag)
        if opposite:
            pol2 = polarisation(u2)
            lab = STANDING if min(pol, pol2) >= th.pol_threshold else STANDING_HELIX
            return PatternObservation(lab, k1, 0.0, abs(s.imag), s, f1, modes, details)
        if not osc and abs(s2.imag) * duration < th.phase_tol:
            # two non-oscillating branches at the same k: still a stationary pattern
            return PatternObservation(STATIONARY, k1, 0.0, 0.0, s, f1, modes, details)
    return PatternObservation(COEXISTING, k1, None, None, s, f1, modes, details)
