"""Simulators: RK4 flow vs exact exponential and a naive RK4 loop, sphere flow, post-/pre-norm
stacks vs their literal formulas, batching, device, instability detection and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from numerics.errors import NonFiniteError, ParameterError, ShapeError, SimulationDivergedError, UnstableStepError
from numerics.patterns.simulate import (
    MHADynamics,
    SelectionWarning,
    check_rk4_step,
    layer_norm,
    perturbed_homogeneous,
    rk4_amplification,
    simulate_flow,
    simulate_stack,
    sphere_project,
)
from numerics.patterns.symbols import gaussian_kernel, linear_operator
from numerics.tolerance import assert_close, tol

F64 = torch.float64


def _case(n=8, d=2, H=2, seed=0, content=True):
    g = torch.Generator().manual_seed(seed)
    a = torch.stack([gaussian_kernel(n, 1.0 + h, 1.0 + 0.5 * h) for h in range(H)])
    T = 0.8 * torch.randn(H, d, d, generator=g, dtype=F64)
    cont = None
    if content:
        cont = (torch.randn(H, 2, d, generator=g, dtype=F64), torch.randn(H, 2, d, generator=g, dtype=F64))
    X0 = torch.randn(n, d, generator=g, dtype=F64)
    return a, T, cont, X0


def naive_mha(A: np.ndarray, T: np.ndarray, X: np.ndarray) -> np.ndarray:
    H, n, _ = A.shape
    Y = np.zeros_like(X)
    for h in range(H):
        for i in range(n):
            for j in range(n):
                Y[i] += A[h, i, j] * (T[h] @ X[j])
    return Y


def naive_softmax_attention(a, T, Wq, Wk, X, beta=1.0):
    """Scores log a((j−i) mod n) + β (Wq x_i)·(Wk x_j)/√d_k by loops; softmax per row."""
    H, n = a.shape
    dk = Wq.shape[1]
    A = np.zeros((H, n, n))
    for h in range(H):
        for i in range(n):
            s = np.array(
                [np.log(a[h, (j - i) % n]) + beta * (Wq[h] @ X[i]) @ (Wk[h] @ X[j]) / np.sqrt(dk) for j in range(n)]
            )
            e = np.exp(s - s.max())
            A[h, i] = e / e.sum()
    return A


def test_mha_matches_naive_loops_with_content_attention():
    a, T, (Wq, Wk), X = _case()
    dyn = MHADynamics(T, kernels=a, content=(Wq, Wk))
    A = naive_softmax_attention(a.numpy(), T.numpy(), Wq.numpy(), Wk.numpy(), X.numpy())
    assert_close(dyn.attention(X), torch.from_numpy(A), size=8, dtype=F64, what="attention")
    Y = naive_mha(A, T.numpy(), X.numpy())
    assert_close(dyn.velocity(X), torch.from_numpy(Y) - X, size=16, dtype=F64, what="f(X)")


def test_rk4_flow_matches_exact_exponential_and_naive_rk4_loop():
    a, T, _, X0 = _case(content=False)
    n, d = X0.shape
    dyn = MHADynamics(T, kernels=a)
    dt, steps = 0.01, 150
    tr = simulate_flow(dyn, X0, steps * dt, dt, save_every=50)
    assert tr.states.shape == (4, n, d) and torch.allclose(tr.times, torch.tensor([0, 0.5, 1.0, 1.5], dtype=F64))
    J = linear_operator(a, T).numpy()
    # naive RK4 on the dense operator (same algorithm, independent code)
    x = X0.reshape(-1).numpy().copy()
    for _ in range(steps):
        k1 = J @ x
        k2 = J @ (x + dt / 2 * k1)
        k3 = J @ (x + dt / 2 * k2)
        k4 = J @ (x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    assert_close(tr.final.reshape(-1), torch.from_numpy(x), size=n * d * steps, dtype=F64, what="RK4 vs naive")
    # exact solution: RK4's global error is O(dt^4)
    ex = torch.linalg.matrix_exp(torch.from_numpy(J) * steps * dt) @ X0.reshape(-1)
    err = (tr.final.reshape(-1) - ex).norm().item() / ex.norm().item()
    lam = np.abs(np.linalg.eigvals(J)).max()
    assert err <= (lam * dt) ** 4 * steps * dt * lam, f"RK4 error {err:.3e}"


def test_sphere_flow_stays_on_sphere_and_is_tangent():
    a, T, cont, X0 = _case(d=3)
    dyn = MHADynamics(T, kernels=a, content=cont)
    Xs = sphere_project(X0)
    v = dyn.sphere_velocity(Xs)
    assert (v * Xs).sum(-1).abs().max().item() <= tol(F64, 3, scale=v.abs().max().item())
    tr = simulate_flow(dyn, X0, 1.0, 0.01, sphere=True, save_every=25)
    norms = tr.states.norm(dim=-1)
    assert (norms - 1).abs().max().item() <= tol(F64, 3)


def test_stacks_match_their_literal_formulas_and_batching():
    a, T, cont, _ = _case(n=6, d=3)
    dyn = MHADynamics(T, kernels=a, content=cont)
    g = torch.Generator().manual_seed(7)
    X0 = torch.randn(4, 6, 3, generator=g, dtype=F64)
    eta = 0.4
    post = simulate_stack(dyn, X0, 3, eta, scheme="postnorm", warn=False)
    pre = simulate_stack(dyn, X0, 3, eta, scheme="prenorm", warn=False)
    ln = simulate_stack(dyn, X0, 2, eta, scheme="prenorm", norm="layernorm", warn=False)
    for b in range(4):
        Xp = X0[b] / X0[b].norm(dim=-1, keepdim=True)
        Xq = X0[b].clone()
        Xl = X0[b].clone()
        for layer in range(3):
            A = naive_softmax_attention(a.numpy(), T.numpy(), cont[0].numpy(), cont[1].numpy(), Xp.numpy())
            Y = Xp + eta * torch.from_numpy(naive_mha(A, T.numpy(), Xp.numpy()))
            Xp = Y / Y.norm(dim=-1, keepdim=True)
            Nq = Xq / Xq.norm(dim=-1, keepdim=True)
            A = naive_softmax_attention(a.numpy(), T.numpy(), cont[0].numpy(), cont[1].numpy(), Nq.numpy())
            Xq = Xq + eta * torch.from_numpy(naive_mha(A, T.numpy(), Nq.numpy()))
            if layer < 2:
                c = Xl - Xl.mean(-1, keepdim=True)
                Nl = c / c.pow(2).mean(-1, keepdim=True).sqrt()
                A = naive_softmax_attention(a.numpy(), T.numpy(), cont[0].numpy(), cont[1].numpy(), Nl.numpy())
                Xl = Xl + eta * torch.from_numpy(naive_mha(A, T.numpy(), Nl.numpy()))
        assert_close(post.final[b], Xp, size=100, dtype=F64, what="post-norm")
        assert_close(pre.final[b], Xq, size=100, dtype=F64, what="pre-norm")
        assert_close(ln.final[b], Xl, size=100, dtype=F64, what="pre-norm LayerNorm")
    # batched flow == per-element flow
    fb = simulate_flow(dyn, X0, 0.2, 0.02)
    for b in range(4):
        assert_close(fb.final[b], simulate_flow(dyn, X0[b], 0.2, 0.02).final, size=60, dtype=F64)
    assert pre.effective_times[-1].item() == pytest.approx(sum(eta / (1 + eta * (l + 1)) for l in range(3)))


def test_simulation_runs_on_the_test_device(device):
    a, T, cont, X0 = _case()
    dyn_cpu = MHADynamics(T, kernels=a, content=cont)
    dyn_dev = MHADynamics(T.to(device), kernels=a.to(device), content=tuple(c.to(device) for c in cont))
    r_cpu = simulate_flow(dyn_cpu, X0, 0.5, 0.05).final
    r_dev = simulate_flow(dyn_dev, X0.to(device), 0.5, 0.05).final
    assert r_dev.device.type == torch.device(device).type
    assert_close(r_dev.cpu(), r_cpu, size=1000, dtype=F64)


def test_prenorm_freeze_is_reported_as_a_warning():
    a = gaussian_kernel(64, 4.0, 1.5)[None]
    T = torch.diag(torch.tensor([1.0, -3.0], dtype=F64))[None]
    dyn = MHADynamics(T, kernels=a)
    X0 = perturbed_homogeneous(64, 2, [1.0, 0.0], 1e-6, generator=torch.Generator().manual_seed(0))
    with pytest.warns(SelectionWarning, match="freezes"):
        tr = simulate_stack(dyn, X0, 12, 0.5, scheme="prenorm")
    assert tr.selection.frozen and tr.effective_times[-1].item() < math.log(1 + 0.5 * 12) + 0.5


# ------------------------------------------------------------------ failure detection and bad input
def test_unstable_step_is_refused_before_running():
    a, T, _, X0 = _case(content=False)
    dyn = MHADynamics(8.0 * T, kernels=a)
    with pytest.raises(UnstableStepError) as e:
        simulate_flow(dyn, X0, 10.0, 0.5)
    assert e.value.argument == "dt" and "use dt <=" in str(e.value)
    # the refusal is justified: without the check RK4 blows up to inf/NaN or the divergence bound
    with pytest.raises(SimulationDivergedError):
        simulate_flow(dyn, X0, 100.0, 0.5, check_step=False, max_norm=1e30)
    # content attention: the autograd-Jacobian spectrum is used
    a, T, cont, X0 = _case()
    with pytest.raises(UnstableStepError):
        check_rk4_step(MHADynamics(10.0 * T, kernels=a, content=cont), X0, 1.0)
    assert abs(rk4_amplification(torch.tensor(-2.785)).item()) == pytest.approx(1.0, abs=1e-3)


def test_bad_input_errors_name_the_argument():
    a, T, cont, X0 = _case()
    dyn = MHADynamics(T, kernels=a, content=cont)
    bad = X0.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(NonFiniteError):
        simulate_flow(dyn, bad, 1.0, 0.1)
    with pytest.raises(ParameterError) as e:
        simulate_flow(dyn, X0, 1.0, 0.3)
    assert e.value.argument == "t_final"
    with pytest.raises(ParameterError) as e:
        simulate_flow(dyn, X0, 1.0, -0.1)
    assert e.value.argument == "dt"
    with pytest.raises(ParameterError) as e:
        simulate_stack(dyn, X0, 3, 0.0)
    assert e.value.argument == "eta"
    with pytest.raises(ParameterError):
        simulate_stack(dyn, X0, 3, 0.1, scheme="sandwich")
    with pytest.raises(SimulationDivergedError):
        simulate_stack(dyn, torch.zeros_like(X0), 3, 0.1)
    with pytest.raises(SimulationDivergedError):
        layer_norm(torch.ones(3, 4, dtype=F64))
    with pytest.raises(ShapeError) as e:
        dyn.velocity(torch.zeros(5, 2, dtype=F64))
    assert e.value.argument == "X"
    with pytest.raises(ShapeError):
        MHADynamics(T, kernels=a, pos_bias=torch.zeros(2, 8, 8, dtype=F64))
    with pytest.raises(ShapeError):
        MHADynamics(T, rope=10000.0)
    with pytest.raises(ShapeError):
        MHADynamics(T, kernels=a, content=(torch.zeros(2, 3, 2, dtype=F64),) * 2, rope=10.0)  # odd d_k
    with pytest.raises(ParameterError):
        MHADynamics(T, kernels=a, normalization="relu")
    with pytest.raises(ShapeError):
        MHADynamics(T, kernels=a[:1])
    with pytest.raises(ParameterError):
        perturbed_homogeneous(1, 2, [0.0, 0.0], 1e-3)


def test_sinusoidal_pe_literal_values():
    from numerics.patterns.simulate import sinusoidal_pe

    pe = sinusoidal_pe(5, 5, base=100.0)
    for i in range(5):
        for f in range(3):
            w = 100.0 ** (-2 * f / 5)
            assert pe[i, 2 * f].item() == pytest.approx(math.sin(i * w), abs=1e-15)
            if 2 * f + 1 < 5:
                assert pe[i, 2 * f + 1].item() == pytest.approx(math.cos(i * w), abs=1e-15)
    with pytest.raises(ParameterError):
        sinusoidal_pe(0, 4)


# ------------------------------------------------------------------ batched fast path (sweeps)
def _rot3(rho: float, theta: float, reflect: bool = False, heads: int = 1) -> torch.Tensor:
    """``(1/heads)·blockdiag(ρ Q R(θ), 1)`` with ``Q = diag(1, −1)`` when ``reflect``."""
    c, s = math.cos(theta), math.sin(theta)
    T = torch.zeros(3, 3, dtype=F64)
    T[:2, :2] = rho * torch.tensor([[c, -s], [s, c]], dtype=F64)
    if reflect:
        T[1, :2] = -T[1, :2]
    T[2, 2] = 1.0
    return T / heads


def _sweep_cells(n: int = 12) -> list[MHADynamics]:
    """Three ring cells of one (n, 3): 1 head; 2 non-commuting heads with content attention; 2 heads
    without content (different H and content per cell exercise the padding)."""
    g = torch.Generator().manual_seed(5)
    one = MHADynamics(_rot3(3.0, 2.0)[None], kernels=gaussian_kernel(n, 2.0, 1.5)[None])
    k2 = torch.stack([gaussian_kernel(n, 0.0, 1.5), gaussian_kernel(n, 0.0, 2.25)])
    T2 = torch.stack([_rot3(3.0, math.pi, heads=2), _rot3(3.0, math.pi, reflect=True, heads=2)])
    cont = (torch.randn(2, 2, 3, generator=g, dtype=F64), torch.randn(2, 2, 3, generator=g, dtype=F64))
    two = MHADynamics(T2, kernels=k2, content=cont)
    k3 = torch.stack([gaussian_kernel(n, 4.0, 1.5), gaussian_kernel(n, -2.0, 2.25)])
    T3 = torch.stack([_rot3(3.0, 0.8, heads=2), _rot3(3.0, 0.8, reflect=True, heads=2)])
    return [one, two, MHADynamics(T3, kernels=k3)]


@pytest.mark.parametrize("dynamics", ["sphere", "postnorm", "prenorm"])
def test_batched_cells_match_the_one_trajectory_simulators(dynamics):
    """simulate_cells (all cells in one batch, float64) vs simulate_flow / simulate_stack run on each
    cell alone: the reference integrators, not the batch code, define the expected states."""
    from numerics.patterns.simulate import BatchedDynamics, simulate_cells

    n, steps, dt, eta = 12, 40, 0.02, 0.7
    dyns = _sweep_cells(n)
    g = torch.Generator().manual_seed(3)
    X0 = torch.tensor([0.0, 0.0, 1.0], dtype=F64) + 0.05 * torch.randn(n, 3, generator=g, dtype=F64)
    times, states = simulate_cells(
        BatchedDynamics(dyns), X0.expand(len(dyns), n, 3).contiguous(), dynamics=dynamics, steps=steps, dt=dt, eta=eta
    )
    assert states.dtype == F64 and states.shape == (steps + 1, len(dyns), n, 3)
    for i, dy in enumerate(dyns):
        if dynamics == "sphere":
            ref = simulate_flow(dy, X0, steps * dt, dt, sphere=True, check_step=False)
        else:
            ref = simulate_stack(dy, X0, steps, eta, scheme=dynamics, warn=False)
        err = (states[:, i] - ref.states).abs().max().item()
        assert err <= tol(F64, n * 3 * steps), (i, err)
        np.testing.assert_allclose(times, ref.times.numpy(), rtol=1e-12, atol=0)


def test_batched_cells_refuse_what_they_cannot_batch():
    from numerics.errors import ParameterError
    from numerics.patterns.simulate import BatchedDynamics, simulate_cells

    dyns = _sweep_cells(12)
    with pytest.raises(ShapeError) as e:
        BatchedDynamics([])
    assert e.value.argument == "dyns"
    with pytest.raises(ShapeError) as e:
        BatchedDynamics([dyns[0], _sweep_cells(10)[0]])
    assert e.value.argument == "dyns"
    causal = MHADynamics(_rot3(3.0, 2.0)[None], kernels=gaussian_kernel(12, 2.0, 1.5)[None], causal=True)
    with pytest.raises(ParameterError) as e:
        BatchedDynamics([dyns[0], causal])
    assert e.value.argument == "dyns"
    X0 = torch.ones(1, 12, 3, dtype=F64)
    with pytest.raises(ParameterError) as e:
        simulate_cells(BatchedDynamics(dyns[:1]), X0, dynamics="euler", steps=2)
    assert e.value.argument == "dynamics"
    with pytest.raises(SimulationDivergedError):
        simulate_cells(BatchedDynamics(dyns[:1]), torch.zeros(1, 12, 3, dtype=F64), dynamics="postnorm", steps=2)
