"""T6 selection and emergence: the symbol's prediction is what the simulated dynamics do.

The cases are valid **by construction** (no ``assume``, no filtering): the kernel is built in
Fourier space, ``a(m) = (1 + 2r cos(2πk₀m/n − ψ) + 2ε cos(2πk₁m/n − ψ₁))/n`` (nonnegative since
``2r + 2ε < 1``; rows sum to 1), so ``â(0) = 1``, ``â(±k₀) = r e^{±iψ}``, ``â(±k₁) = ε e^{±iψ₁}`` and
0 elsewhere (with T6's sign convention ``â(k) = Σ_m a(m) e^{+2πikm/n}``). With one head and
``T = ρR(θ)`` the symbol ``M(k) = â(k)ρR(θ)`` has eigenvalues ``â(k)ρe^{±iθ}``:

* *wave* cases: ``|θ| ∈ [0.55π, 0.7π]`` (``cos θ < 0``: the ``k = 0`` mode decays) and
  ``ψ = θ − φ`` with ``|φ| ≤ 0.15π``: the best branch at ``k₀`` has ``Re = rρ cos φ ≥ 0.89 rρ``,
  clear of the other branch (``rρ cos(2θ − φ) ≤ 0.16 rρ``), of ``k = 0`` and of the ``ε`` mode
  (``k₁ ≠ k₀``) by construction;
* *cluster* cases: ``θ ∈ [0, 0.3π]``, ``ψ = θ + π/2``: ``k = 0`` wins by ``ρ cos θ``.

``ρ`` is set so that the selected growth rate ``Re σ`` equals a drawn target in ``[0.15, 0.5]``.
Every drawn case is simulated (RK4, perturbation 1e-10, softmax dynamics with or without content
attention, which cannot change the onset by T6) and compared with the registered statement
``T6.selection``: the observed ``|k|`` is ``k*``, the growth rate and frequency agree, and the phase
velocity follows the registered formula (its sign read from the registry). The split of the cases is
fixed, not drawn (:data:`N_WAVES` wave cases, :data:`N_CLUSTERS` cluster cases, each its own Hypothesis
run), so the coverage the test asserts — at least 50 cases, at least 25 of them with ``k* ≠ 0`` — holds
for every seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from numerics.patterns.classify import classify_trajectory, measure_mode
from numerics.patterns.simulate import MHADynamics, perturbed_homogeneous, simulate_flow
from numerics.patterns.symbols import predict_pattern
from numerics.tolerance import tol
from theory import formulas as F
from theory import oracles
from theory.registry import get
from theory.report import record

F64 = torch.float64
#: cases per run (every profile), by kind: the assertions below need >= 50 cases, >= 25 with k* != 0
N_WAVES, N_CLUSTERS = 37, 19


def _rot(t: float) -> np.ndarray:
    return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])


@st.composite
def emergence_cases(draw, kind: str):
    """``(kernel (n,), T (1, 2, 2), k0, target growth, seed, content)`` of ``kind`` (``"wave"`` or
    ``"cluster"``): valid by construction."""
    n = draw(st.sampled_from([12, 16, 20]))
    k0 = draw(st.integers(1, n // 2 - 1))
    k1 = draw(st.integers(1, n // 2 - 2))
    k1 += k1 >= k0  # another wavenumber in [1, n/2 - 1], never k0
    r = draw(st.floats(0.25, 0.4))
    eps = draw(st.floats(0.0, 0.05))
    psi1 = draw(st.floats(-math.pi, math.pi))
    if kind == "wave":
        theta = draw(st.floats(0.55 * math.pi, 0.7 * math.pi)) * draw(st.sampled_from([1, -1]))
        phi = draw(st.floats(-0.15 * math.pi, 0.15 * math.pi))
        psi = theta - phi
        lam = r * math.cos(phi)  # best Re eig of M(k0) per unit ρ
    else:
        theta = draw(st.floats(0.0, 0.3 * math.pi))
        psi = theta + math.pi / 2
        lam = math.cos(theta)
    g = draw(st.floats(0.15, 0.5))
    rho = (1 + g) / lam
    m = np.arange(n)
    a = (1 + 2 * r * np.cos(2 * np.pi * k0 * m / n - psi) + 2 * eps * np.cos(2 * np.pi * k1 * m / n - psi1)) / n
    T = rho * _rot(theta)[None]
    return a, T, (k0 if kind == "wave" else 0), g, draw(st.integers(0, 2**16)), draw(st.booleans())


def _selection(a: np.ndarray, T: np.ndarray, sel):
    """``(k*, σ, gap)``: ``k*`` and ``σ`` from the registry's formulas ``selection``
    (``argmax_k max Re spec(M(k) − I)``) and ``growth`` (the leading eigenvalue of ``M(k*) − I``) on
    the family of its ``symbol``, ``k*`` canonical in ``[0, n/2]`` (with ``σ`` conjugated along);
    ``gap``: from the literal eigenvalues of every ``M(k)``, the selected branch's real part less the
    best real part of every *other* real pattern (the conjugate ``(n − k*, λ̄)``, and ``λ̄`` at a
    self-conjugate ``k*``, are the same real pattern; a common shift of the eigenvalues cancels)."""
    n = a.shape[0]
    A0 = a[(np.arange(n)[None, :] - np.arange(n)[:, None]) % n][None]  # the circulant of the kernel
    family = oracles.ring_symbols(A0, T, sel["symbol"])  # the registry's formula for M(k), every k
    env = {"Mk": family, "n": n, "d": T.shape[-1]}
    k_top = env["k_star"] = int(F.tabulate(sel["selection"].rhs, (), env))
    s_top = complex(F.tabulate(sel["growth"].rhs, (), env))
    modes = [(k, complex(ev)) for k in range(n) for ev in np.linalg.eigvals(family[k])]
    l_top = max((lam for k, lam in modes if k == k_top), key=lambda lam: lam.real)

    def same(k, lam):
        return (k == k_top and abs(lam - l_top) <= 1e-9) or (
            k == (n - k_top) % n and abs(lam - l_top.conjugate()) <= 1e-9
        )

    runner = max((lam.real for k, lam in modes if not same(k, lam)), default=-math.inf)
    kc = min(k_top, n - k_top)
    sigma = s_top if k_top <= n // 2 else s_top.conjugate()
    return kc, sigma, l_top.real - runner


# fitted vs predicted growth rate: allowed multiple of the discretisation + nonlinearity estimate
# (sources in _check_case)
EMERGENCE_RATE_FACTOR = 10.0


def _check_case(case, stats: dict) -> None:
    a, T, k0, g, seed, content_on = case
    n, d = a.shape[0], T.shape[-1]
    sel = get("T6").conclusion("T6.selection").params
    k_star, sigma, gap = _selection(a, T, sel)
    # the registry's selection and growth are what the construction put in (k0, the target growth g)
    assert k_star == k0, (k_star, k0)
    assert abs(sigma.real - g) <= 1e-9 and gap >= 0.05, (sigma, g, gap)
    # the toolkit's prediction agrees with the registry's formulas
    p = predict_pattern(torch.as_tensor(a, dtype=F64)[None], torch.as_tensor(T, dtype=F64))
    assert abs(p.k_star) == k_star and not p.tie
    assert abs(p.growth_rate.real - sigma.real) <= 1e-9
    # simulate: long enough for the runner-up to fade, short enough to stay linear
    t_end = min(max(8.0 / gap, 10.0), 30.0, 14.0 / g)
    dt = 0.04
    se = 5
    steps = se * int(math.ceil(t_end / dt / se))
    gen = torch.Generator().manual_seed(seed)
    cont = None
    if content_on:
        cont = (
            0.5 * torch.randn(1, 2, d, generator=gen, dtype=F64),
            0.5 * torch.randn(1, 2, d, generator=gen, dtype=F64),
        )
    dyn = MHADynamics(torch.as_tensor(T, dtype=F64), kernels=torch.as_tensor(a, dtype=F64)[None], content=cont)
    x_star = torch.randn(d, generator=gen, dtype=F64)
    X0 = perturbed_homogeneous(n, d, x_star, 1e-10, generator=gen)
    tr = simulate_flow(dyn, X0, steps * dt, dt, save_every=se)
    t = tr.times
    fl = tr.states - tr.states.mean(1, keepdim=True)
    assert fl.abs().max().item() < 1e-2 * max(1.0, tr.states.abs().max().item())  # linear window
    win = (t[-1].item() / 2, t[-1].item())
    obs = classify_trajectory(t, tr.states, window=win)
    assert obs.k == k_star, f"observed |k|={obs.k} ({obs.label}), predicted {k_star}"
    fit = measure_mode(t, tr.states, k_star, window=win)
    # Not a float64 identity, so not numerics.tolerance.tol alone: the fitted rate comes from a
    # nonlinear RK4 trajectory and is compared with the linear theory. The fit projects on the k*
    # Fourier mode, so other modes do not enter; what remains is
    # (1) the RK4 discretisation, |log|R(σ·dt)|/dt − Re σ| / |Re σ| (R the RK4 stability polynomial; relative
    #     to Re σ, as rel_g is: for a rotating mode with |Im σ| ≈ 10·Re σ, dividing by |σ| instead made the
    #     budget 10× smaller than the bias it stands for — the untuned seed 3254015781 drew σ = 0.156 − 1.575i,
    #     whose fitted rate is off by exactly the RK4 bias, 1.096e-7), and
    # (2) the nonlinearity, of the order of the pattern's relative amplitude at the end of the run.
    # The budget is EMERGENCE_RATE_FACTOR × (1) + (2), floored at the round-off of the fit.
    # Measured over the 56 CI draws: rel_g ≤ 1.5e-9.
    z = complex(sigma) * dt
    r_rk4 = 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24
    rk4_rel = abs(math.log(abs(r_rk4)) / dt - sigma.real) / abs(sigma.real)
    amp_rel = fl.abs().max().item() / max(1.0, tr.states.abs().max().item())
    budget = EMERGENCE_RATE_FACTOR * (rk4_rel + amp_rel) + tol(F64, steps)
    rel_g = abs(fit.growth_rate.real - sigma.real) / abs(sigma.real)
    assert rel_g <= budget, (fit.growth_rate, sigma, budget)
    if k_star == 0 or (n % 2 == 0 and k_star == n // 2):  # self-conjugate: Im σ up to sign
        rel_w = abs(abs(fit.growth_rate.imag) - abs(sigma.imag)) / abs(sigma)
    else:
        rel_w = abs(fit.growth_rate.imag - sigma.imag) / abs(sigma)
    assert rel_w <= 1e-2, (fit.growth_rate, sigma)
    if k_star != 0:
        # phase velocity from the registry's formula (T6.selection's `velocity`)
        vel = sel["velocity"]
        c = float(F.tabulate(vel.rhs, (), {"n": n, "sigma": sigma, "k_star": k_star}))
        rel_c = abs(fit.velocity - c) / (n * abs(sigma) / (2 * math.pi * k_star))
        assert rel_c <= 1e-2, (fit.velocity, c)
        stats["waves"] += 1
    stats["cases"] += 1
    record("T6", residual=rel_g)


@pytest.mark.theorem("T6")
def test_emergence_follows_the_symbol():
    stats = {"cases": 0, "waves": 0}
    for kind, count in (("wave", N_WAVES), ("cluster", N_CLUSTERS)):

        @settings(max_examples=count, database=None, deadline=None)
        @given(emergence_cases(kind))
        def run(case):
            _check_case(case, stats)

        run()
    print(f"T6 emergence: {stats['cases']} cases drawn and checked, {stats['waves']} with k* != 0")
    # Hypothesis replays nothing here (no database, no failures): every drawn case was checked once
    assert stats["cases"] >= 50, stats
    assert stats["waves"] >= 25, stats
