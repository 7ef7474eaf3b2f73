"""E5 machinery on known answers (not on how the claim comes out)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from numerics.errors import ParameterError
from numerics.patterns.simulate import BatchedDynamics, MHADynamics, simulate_cells
from numerics.patterns.symbols import PATTERN_CLASSES, gaussian_kernel, predict_pattern
from numerics.tolerance import tol
from paper_checks import e5
from paper_checks.e5 import predict, report
from paper_checks.verdict import VERDICTS, StatResult

pytestmark = pytest.mark.theorem("E5")
F64 = torch.float64


def test_coarse_class_covers_the_vocabulary():
    for lab in PATTERN_CLASSES:
        assert e5.coarse_class(lab) in e5.COARSE
    with pytest.raises(ParameterError) as e:
        e5.coarse_class("spiral")
    assert e.value.argument == "label"
    cfg = e5.PhaseConfig()
    with pytest.raises(ParameterError) as e:
        e5.cell_model(cfg, e5.Cell("wide", 0.0, 1, False, "sphere"))
    assert e.value.argument == "kernel"
    with pytest.raises(ParameterError) as e:
        e5.cell_model(cfg, e5.Cell("sym", 0.0, 3, False, "sphere"))
    assert e.value.argument == "heads"
    with pytest.raises(ParameterError) as e:
        e5.predict_cell(*e5.cell_model(cfg, e5.Cell("sym", 0.0, 1, False, "sphere"))[:2], dynamics="euler")
    assert e.value.argument == "dynamics"


def test_predict_cell_reproduces_theory_ex1():
    """THEOREMS.md T6 Ex1 (n=64, kernel at +4 width 1.5, T = diag(1, −3)): |k*| = 7,
    σ = 0.62926 ± 0.67486i, c ≈ 0.982; the flow's fluctuation prediction must say exactly this."""
    a = gaussian_kernel(64, 4.0, 1.5)[None]
    T = torch.diag(torch.tensor([1.0, -3.0], dtype=F64))[None]
    p = e5.predict_cell(a, T, dynamics="flow")
    assert p.label == e5.C_TRAVELLING and p.k == 7 and not p.tie
    assert p.s.real == pytest.approx(0.62926, abs=1e-5) and abs(p.s.imag) == pytest.approx(0.67486, abs=1e-5)
    assert abs(p.velocity) == pytest.approx(0.982, abs=1e-3)
    ref = predict_pattern(a, T)  # E's flat-flow prediction (k = 0 does not dominate here)
    assert abs(ref.k_star) == p.k and p.velocity == pytest.approx(ref.phase_velocity, rel=1e-9)


def test_symmetric_kernel_rotation_is_reported_as_a_tie():
    """Symmetric kernel + rotation: tied ±k helices — a standing pattern, never a guessed winner."""
    cfg = e5.PhaseConfig()
    a, T, _ = e5.cell_model(cfg, e5.Cell("sym", math.pi / 4, 1, False, "sphere"))
    p = e5.predict_cell(a, T, dynamics="sphere")
    assert p.tie and p.label == e5.C_STANDING and len(p.ties) == 2
    assert {k for k, _ in p.ties} == {p.k}
    z1, z2 = (z for _, z in p.ties)
    assert z1.real == pytest.approx(z2.real, abs=1e-12) and z1.imag == pytest.approx(-z2.imag, abs=1e-12)


def test_cell_model_base_state_is_an_equilibrium():
    cfg = e5.PhaseConfig()
    for cell in (e5.Cell("asym+2", 1.0, 2, True, "sphere"), e5.Cell("sym", 0.3, 1, False, "postnorm")):
        a, T, cont = e5.cell_model(cfg, cell)
        dyn = MHADynamics(T, kernels=a, content=cont)
        X = torch.tensor([0.0, 0.0, 1.0], dtype=F64).expand(cfg.n, 3).contiguous()
        assert dyn.velocity(X).abs().max().item() <= tol(F64, cfg.n * 3)


def test_prenorm_layer_factor_matches_simulation():
    """Pre-norm relative growth of a single mode: (r_l + ημ)/(r_l + η), r_l = 1 + ηl, per layer."""
    cfg = e5.PhaseConfig(n=12)
    a, T, _ = e5.cell_model(cfg, e5.Cell("sym", math.pi, 1, False, "prenorm"))  # M(k) = −ρ â(k) I on the plane
    k, L, eta, amp = 2, 25, 0.8, 1e-9
    i = torch.arange(cfg.n, dtype=F64)
    X0 = torch.zeros(cfg.n, 3, dtype=F64)
    X0[:, 2] = 1.0
    X0[:, 0] = amp * torch.cos(2 * math.pi * k * i / cfg.n)
    bd = BatchedDynamics([MHADynamics(T, kernels=a)])
    _, S = simulate_cells(bd, X0[None], dynamics="prenorm", steps=L, eta=eta)
    XL = S[-1, 0]
    rel = (2 * torch.fft.fft(XL[:, 0], dim=0)[k].abs() / cfg.n / XL[:, 2].mean()).item() / amp
    from numerics.patterns.symbols import symbol

    ev = torch.linalg.eigvals(symbol(a, T))[k]
    mu = ev[torch.argmin(ev.real)]  # the plane branch −ρ â(k) (the e3 branch is â(k))
    assert abs(mu.imag.item()) < 1e-12 and mu.real.item() < 0
    s = predict._exponents(mu[None], "prenorm", eta, L)
    pred = math.exp(L * s.real.item())
    direct = math.prod(abs((1 + eta * l + eta * mu.real.item()) / (1 + eta * l + eta)) for l in range(L))
    assert pred == pytest.approx(direct, rel=1e-12)
    assert rel == pytest.approx(pred, rel=1e-6)


def test_agreement_rule_and_rows_on_a_toy_sweep():
    """A toy sweep whose observations equal the predictions has agreement 1.0; flipping half of the
    observations gives 0.5 — with the Wilson interval around it."""
    assert e5.agreement(e5.C_TRAVELLING, 3, e5.C_TRAVELLING, 3)
    assert not e5.agreement(e5.C_TRAVELLING, 3, e5.C_TRAVELLING, 2)
    assert e5.agreement(e5.C_CLUSTER, 0, e5.C_CLUSTER, 0)
    assert not e5.agreement(e5.C_STANDING, 1, e5.C_TRAVELLING, 1)
    cfg = e5.PhaseConfig()
    recs = []
    labels = [(e5.C_TRAVELLING, 2), (e5.C_CLUSTER, 0), (e5.C_STATIONARY, 5), (e5.C_STANDING, 1)]
    for j, (lab, k) in enumerate(labels * 5):
        p = e5.CellPrediction(lab, k, 0.1 + 0.2j, 0.0, lab == e5.C_STANDING, [], 0.1, 0.5)
        recs.append(
            {
                "cell": e5.Cell("sym", float(j), 1, False, "sphere"),
                "pred": p,
                "obs": lab,
                "obs_k": k,
                "sat": lab,
                "sat_k": k,
                "obs_velocity": None,
                "sat_velocity": None,
                "agree": e5.agreement(lab, k, lab, k),
                "variants": {"default": (lab, k, True)},
                "stack_differs": None,
                "stack_frozen": None,
            }
        )
    rows = report._rows({"records": recs, "variants": ["default"], "seconds": 0.0, "config": cfg}, "test")
    assert rows[0].statistic == "agreement_predicted_vs_observed" and rows[0].trained == 1.0
    for r in recs[::2]:
        r["agree"] = False
        r["variants"]["default"] = (r["obs"], r["obs_k"], False)
    rows = report._rows({"records": recs, "variants": ["default"], "seconds": 0.0, "config": cfg}, "test")
    lo, hi = rows[0].interval
    assert rows[0].trained == 0.5 and lo < 0.5 < hi


def test_transition_vocabulary():
    base = {
        "obs": e5.C_TRAVELLING,
        "obs_k": 2,
        "sat": e5.C_TRAVELLING,
        "sat_k": 2,
        "obs_velocity": 1.0,
        "sat_velocity": 1.02,
    }
    assert e5.transition(base) == "stabilises"
    assert e5.transition({**base, "sat_velocity": 0.5}) == "drifts"
    assert e5.transition({**base, "sat": e5.C_STATIONARY}) == "pins"
    assert e5.transition({**base, "sat_k": 3}) == "changes mode"
    assert e5.transition({**base, "obs": e5.C_COEXISTING}) == "competes"
    assert e5.transition({**base, "sat": e5.C_COEXISTING}) == "coexists"


def test_run_quick_end_to_end(tmp_path):
    rows = e5.run(tmp_path, quick=True)
    assert rows and all(isinstance(r, StatResult) for r in rows)
    assert rows[0].statistic == "agreement_predicted_vs_observed"
    for r in rows:
        assert r.claim == "E5" and r.verdict in VERDICTS and r.rule
        if r.interval is not None and r.effect is not None:
            assert r.interval[0] - 1e-12 <= r.effect <= r.interval[1] + 1e-12
    sens = rows[0].extra["threshold_sensitivity"]
    assert "default" in sens and len(sens) == 1 + 2 * len(e5.THRESHOLD_VARIANTS)
    for dyn in ("sphere", "postnorm", "prenorm"):
        assert (tmp_path / f"e5_phase_{dyn}.png").stat().st_size > 1000


def test_prenorm_effective_time_and_resampling():
    eta, L = 0.7, 30
    tau = e5.prenorm_effective_time(L, eta)
    assert tau[0] == 0.0 and tau.shape == (L + 1,)
    assert tau[5] == pytest.approx(sum(eta / (1 + eta * (j + 1)) for j in range(5)), rel=1e-14)
    # a signal linear in τ is reproduced exactly by the resampling (linear interpolation between layers)
    t = torch.as_tensor(tau, dtype=F64)
    states = (2.0 + 3.0 * t)[:, None, None].expand(L + 1, 4, 2).clone()
    grid, res = e5.prenorm_effective_window(states, (10, 30), eta)
    assert grid.shape == (21,) and grid[0] == pytest.approx(tau[10]) and grid[-1] == pytest.approx(tau[30])
    np.testing.assert_allclose(np.diff(grid), np.full(20, (tau[30] - tau[10]) / 20), rtol=1e-12)
    ref = (2.0 + 3.0 * torch.as_tensor(grid, dtype=F64))[:, None, None].expand_as(res)
    assert (res - ref).abs().max().item() <= tol(F64, L, scale=ref.abs().max().item())
    with pytest.raises(ParameterError) as e:
        e5.prenorm_effective_window(states, (10, 31), eta)
    assert e.value.argument == "window"


def test_prenorm_resampling_is_linear_interpolation_between_layers():
    """Oracle: np.interp on every (token, coordinate) series of a non-linear signal."""
    eta, L = 0.6, 24
    tau = e5.prenorm_effective_time(L, eta)
    rng = np.random.default_rng(3)
    states = torch.as_tensor(rng.normal(size=(L + 1, 5, 3)).cumsum(0), dtype=F64)
    grid, res = e5.prenorm_effective_window(states, (6, 20), eta)
    ref = np.stack([[np.interp(grid, tau, states[:, i, c].numpy()) for c in range(3)] for i in range(5)])
    np.testing.assert_allclose(res.numpy(), ref.transpose(2, 0, 1), rtol=0, atol=1e-13)
    assert res.dtype == F64
    # second oracle: scipy's degree-1 B-spline through the layers (what the docstring compares against)
    from scipy.interpolate import make_interp_spline

    spline = make_interp_spline(tau[6:21], states[6:21].numpy(), k=1, axis=0)(grid)
    scale = np.abs(spline).max()
    assert np.abs(res.numpy() - spline).max() <= 8 * np.finfo(np.float64).eps * scale


def test_an_annihilated_mode_sets_no_scale_for_the_tie_tolerance():
    """A pre-norm layer factor of exactly 0 gives a mode the exponent −inf; the tie tolerance is scaled by
    the finite exponents (the full job's prenorm sweep met one: tol refused scale=inf, and before that the
    tolerance was infinite, every mode tied)."""
    import math

    import torch

    from numerics.tolerance import tol
    from paper_checks.e5.predict import annihilated, exponent_scale

    s = annihilated(torch.log(torch.tensor([0.0, 2.0, -3.0], dtype=torch.complex128)))
    assert math.isinf(s[0].real) and exponent_scale(s) == max(1.0, abs(complex(s[2])))
    assert math.isfinite(tol(torch.float64, 6, scale=exponent_scale(s)))
    assert exponent_scale(annihilated(torch.log(torch.zeros(2, dtype=torch.complex128)))) == 1.0
