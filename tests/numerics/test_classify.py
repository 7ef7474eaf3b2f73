"""Pattern classifier on synthetic trajectories of known class (and known velocity / ω), the
space–time spectrum, mode fits, thresholds, and bad input."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics.errors import NonFiniteError, ShapeError
from numerics.patterns.classify import Thresholds, classify_trajectory, measure_mode, space_time_spectrum
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
)

F64 = torch.float64
N, STEPS, DT = 32, 200, 0.05


def _grid():
    t = torch.arange(STEPS, dtype=F64) * DT
    i = torch.arange(N, dtype=F64)
    return t, i


def synthetic(kind: str, k: int = 3, w: float = 0.7, growth: float = 0.0, amp: float = 0.3, seed: int = 0):
    """A trajectory ``(T, N, 3)`` of the named class around the base state e1. Travelling modes use
    phase ``2πki/N + wt``, i.e. velocity ``−N w / (2πk)``; helices rotate in the (e2, e3) plane."""
    t, i = _grid()
    ph = 2 * math.pi * k * i[None, :] / N + w * t[:, None]
    env = torch.exp(growth * t)[:, None]
    X = torch.zeros(STEPS, N, 3, dtype=F64)
    X[..., 0] = 1.0
    if kind == TRAVELLING:
        X[..., 1] = amp * env * torch.cos(ph)
    elif kind == TRAVELLING_HELIX:
        X[..., 1] = amp * env * torch.cos(ph)
        X[..., 2] = amp * env * torch.sin(ph)
    elif kind == STANDING_HELIX:
        ph2 = 2 * math.pi * k * i[None, :] / N - w * t[:, None]
        X[..., 1] = amp * env * (torch.cos(ph) + 0.8 * torch.cos(ph2))
        X[..., 2] = amp * env * (torch.sin(ph) - 0.8 * torch.sin(ph2))
    elif kind == STANDING:
        X[..., 1] = amp * env * torch.cos(2 * math.pi * k * i / N)[None] * torch.cos(w * t)[:, None]
    elif kind == STATIONARY:
        X[..., 1] = amp * env * torch.cos(2 * math.pi * k * i / N + 0.4)[None]
    elif kind == CLUSTER:
        X[..., 1] = amp * torch.cos(2 * math.pi * k * i / N)[None] * torch.exp(-0.6 * t)[:, None]
    elif kind == ROTATING_CLUSTER:
        X[..., 0] = torch.cos(w * t)[:, None]
        X[..., 1] = torch.sin(w * t)[:, None]
        X[..., 2] = 0.05 * torch.cos(2 * math.pi * k * i / N)[None] * torch.exp(-0.6 * t)[:, None]
    elif kind == COEXISTING:
        X[..., 1] = amp * torch.cos(ph) + 0.7 * amp * torch.cos(2 * math.pi * (k + 4) * i / N)[None]
    elif kind == INCOHERENT:
        g = torch.Generator().manual_seed(seed)
        X[..., 1:] = amp * torch.randn(STEPS, N, 2, generator=g, dtype=F64)
    else:  # pragma: no cover
        raise ValueError(kind)
    return t, X


KINDS = [
    TRAVELLING,
    TRAVELLING_HELIX,
    STANDING_HELIX,
    STANDING,
    STATIONARY,
    CLUSTER,
    ROTATING_CLUSTER,
    COEXISTING,
    INCOHERENT,
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_synthetic_class_is_recognised(kind):
    t, X = synthetic(kind)
    obs = classify_trajectory(t, X)
    assert obs.label == kind, (obs.label, obs.details)
    if kind in (TRAVELLING, TRAVELLING_HELIX, STANDING, STANDING_HELIX, STATIONARY):
        assert obs.k == 3
    if kind in (TRAVELLING, TRAVELLING_HELIX):
        assert obs.velocity == pytest.approx(-N * 0.7 / (2 * math.pi * 3), rel=1e-6)
    if kind in (TRAVELLING_HELIX, STANDING_HELIX, STANDING, ROTATING_CLUSTER):
        assert abs(obs.omega) == pytest.approx(0.7, rel=1e-6)
    if kind == COEXISTING:
        assert {k for k, _ in obs.modes[:2]} == {3, 7}


@given(st.integers(1, 10), st.floats(0.2, 2.0), st.floats(0.0, 0.3), st.sampled_from([TRAVELLING, TRAVELLING_HELIX]))
def test_measured_velocity_and_growth_of_travelling_modes(k, w, growth, kind):
    """Random wavenumber, frequency and growth: the class, |k|, σ and velocity are recovered."""
    t, X = synthetic(kind, k=k, w=w, growth=growth)
    obs = classify_trajectory(t, X)
    assert obs.label == kind and obs.k == k
    assert obs.velocity == pytest.approx(-N * w / (2 * math.pi * k), rel=1e-6)
    fit = measure_mode(t, X, k)
    assert fit.growth_rate.real == pytest.approx(growth, abs=1e-8)
    assert fit.growth_rate.imag == pytest.approx(w, rel=1e-8)
    # the same wave decaying relative to the base state is a cluster
    t, X = synthetic(kind, k=k, w=w, growth=-growth - 0.05)
    assert classify_trajectory(t, X).label == CLUSTER


def test_space_time_spectrum_peaks_at_the_travelling_mode():
    k, w = 3, 2 * math.pi * 5 / (STEPS * DT)  # an exact temporal bin
    t, X = synthetic(TRAVELLING, k=k, w=w)
    om, ks, P = space_time_spectrum(t, X)
    iw, ik = divmod(int(torch.argmax(P)), P.shape[1])
    # peaks at (ω, k) and at its conjugate (−ω, −k)
    assert (abs(ks[ik].item()), abs(om[iw].item())) == (k, pytest.approx(w, rel=1e-9))
    assert torch.sign(ks[ik]).item() == torch.sign(om[iw]).item()


def test_thresholds_move_decisions_as_documented():
    t, X = synthetic(COEXISTING)
    assert classify_trajectory(t, X, thresholds=Thresholds(coexist_ratio=0.6)).label == TRAVELLING
    t, X = synthetic(TRAVELLING_HELIX)
    assert classify_trajectory(t, X, thresholds=Thresholds(phase_tol=100.0)).label == STATIONARY
    t, X = synthetic(STATIONARY, growth=0.0)
    X[..., 1] *= 1e-5  # tiny, not growing: a cluster under cluster_tol, a pattern below it
    assert classify_trajectory(t, X).label == CLUSTER
    assert classify_trajectory(t, X, thresholds=Thresholds(cluster_tol=1e-9)).label == STATIONARY


def test_small_growing_fluctuation_is_a_pattern_not_a_cluster():
    t, X = synthetic(TRAVELLING, growth=0.5, amp=1e-9)
    assert classify_trajectory(t, X).label == TRAVELLING


def test_bad_input():
    t, X = synthetic(TRAVELLING)
    with pytest.raises(ShapeError) as e:
        classify_trajectory(t[:-1], X)
    assert e.value.argument == "times"
    t2 = t.clone()
    t2[5] += 0.01
    with pytest.raises(ShapeError):
        classify_trajectory(t2, X)
    Xb = X.clone()
    Xb[3, 2, 1] = float("inf")
    with pytest.raises(NonFiniteError):
        classify_trajectory(t, Xb)
    with pytest.raises(ShapeError):
        classify_trajectory(t, X[:, :1])
    with pytest.raises(ShapeError):
        classify_trajectory(t, X[0])
    with pytest.raises(ShapeError):
        classify_trajectory(t, X, window=(100.0, 200.0))


def _elliptic_wave(w: float, e: float, k: int = 3):
    """``x_1 = 0.3 cos φ``, ``x_2 = 0.3 e sin φ``, ``φ = 2πki/N + wt``: the k-mode vector is
    ``(0, 1, −ie)`` up to scale, so its polarisation ``|uᵀu|/uᴴu`` is ``(1 − e²)/(1 + e²)`` exactly."""
    t, i = _grid()
    ph = 2 * math.pi * k * i[None, :] / N + w * t[:, None]
    X = torch.zeros(STEPS, N, 3, dtype=F64)
    X[..., 0] = 1.0
    X[..., 1] = 0.3 * torch.cos(ph)
    X[..., 2] = 0.3 * e * torch.sin(ph)
    return t, X


def test_phase_tol_decides_at_its_documented_value():
    """|Im s|·duration = 0.95 and 1.05 × phase_tol (0.3): stationary below, travelling above; a
    threshold moved by 10% either way flips one of the two."""
    th = Thresholds()
    assert th.phase_tol == 0.3
    duration = (STEPS - 1) * DT
    below = classify_trajectory(*_elliptic_wave(0.95 * th.phase_tol / duration, 0.0))
    above = classify_trajectory(*_elliptic_wave(1.05 * th.phase_tol / duration, 0.0))
    assert below.label == STATIONARY, below.details
    assert above.label == TRAVELLING, above.details
    assert abs(above.omega) * duration == pytest.approx(1.05 * th.phase_tol, rel=1e-6)


def test_pol_threshold_decides_at_its_documented_value():
    """Polarisation (1 − e²)/(1 + e²) = 0.95 and 1.05 × pol_threshold (0.9): a helix below, a
    travelling wave above; a threshold moved by 10% either way flips one of the two."""
    th = Thresholds()
    assert th.pol_threshold == 0.9
    for p, kind in ((0.95 * th.pol_threshold, TRAVELLING_HELIX), (1.05 * th.pol_threshold, TRAVELLING)):
        e = math.sqrt((1 - p) / (1 + p))
        obs = classify_trajectory(*_elliptic_wave(0.7, e))
        assert obs.details["polarisation"] == pytest.approx(p, rel=1e-8)
        assert obs.label == kind, (p, obs.label)
