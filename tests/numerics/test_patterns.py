"""T6: linearisation, FFT dispersion relation, selection, reference cases Ex1/Ex3, prediction vs
emergence, non-circulant positional encodings, causal transient growth, discrete-stack traps, bad input;
then each step of ring pattern formation on its own against literal float64 numpy."""

from __future__ import annotations

import cmath
import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics.errors import (
    DTypeError,
    MemoryBudgetError,
    NegativeWeightError,
    NonFiniteError,
    NotStochasticError,
    ParameterError,
    ShapeError,
    UndefinedError,
)
from numerics.patterns.classify import classify_trajectory, measure_mode
from numerics.patterns.simulate import MHADynamics, perturbed_homogeneous, simulate_flow, simulate_stack, sinusoidal_pe
from numerics.patterns.symbols import (
    CLUSTER,
    COEXISTING,
    ROTATING_CLUSTER,
    STANDING,
    STANDING_HELIX,
    STATIONARY,
    TRAVELLING,
    TRAVELLING_HELIX,
    _classify_prediction,
    canonical_pattern,
    circulant,
    discrete_selection,
    dispersion,
    distinct_patterns,
    effective_time,
    gaussian_kernel,
    kernel_from_bias,
    kernel_hat,
    linear_operator,
    naive_per_head_growth,
    polarisation,
    predict_from_operator,
    predict_pattern,
    signed_wavenumbers,
    symbol,
    transient_growth,
    validate_kernels,
    validate_transports,
)
from numerics.tolerance import assert_close, tol
from tests.helpers import assert_bad_input, naive_token_major, raises_named, t
from theory.cases import T6_EX1, T6_EX3
from theory.formulas import evaluate
from theory.oracles import ring_jacobian
from theory.registry import get
from theory.report import record

F64 = torch.float64


def _t(a):
    return torch.as_tensor(np.asarray(a), dtype=F64)


def _R(theta: float) -> torch.Tensor:
    return _t([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])


# ------------------------------------------------------------------ reference constructions
def _width(case) -> float:
    num, den = case["width"].split("/")
    return int(num) / int(den)


def ex1():
    """THEOREMS.md T6 Ex1 (theory.cases.T6_EX1): n=64, wrapped Gaussian kernel centred at +4, width 1.5
    (form found to reproduce the stated numbers exactly), T = diag(1, −3)."""
    E = T6_EX1
    return gaussian_kernel(E["n"], float(E["centre"]), _width(E))[None], _t(E["T"])[None]


# Ex3's transports (theory.cases.T6_EX3): integer, non-commuting T_h found by a search over small
# integer matrices for "symbol |k*| = 6, per-head guess |k| = 3, both with clear gaps".
EX3_T = _t(T6_EX3["T"])


def ex3():
    E = T6_EX3
    return torch.stack([gaussian_kernel(E["n"], float(c), _width(E)) for c in E["centres"]]), EX3_T.clone()


def naive_kernel_hat(a: np.ndarray) -> np.ndarray:
    """â(k) = Σ_m a(m) e^{+2πikm/n} by explicit loops (THEOREMS.md sign convention)."""
    n = a.shape[-1]
    out = np.zeros(a.shape, dtype=complex)
    for k in range(n):
        for m in range(n):
            out[..., k] += a[..., m] * np.exp(2j * np.pi * k * m / n)
    return out


def naive_expm(A: np.ndarray, squarings: int = 10, terms: int = 30) -> np.ndarray:
    """e^A = (Σ_k (A/2^s)^k / k!)^(2^s) — plain Taylor series with scaling and squaring."""
    B = A / 2.0**squarings
    E = np.eye(A.shape[0])
    term = np.eye(A.shape[0])
    for k in range(1, terms):
        term = term @ B / k
        E = E + term
    for _ in range(squarings):
        E = E @ E
    return E


def naive_circulant(a: np.ndarray) -> np.ndarray:
    H, n = a.shape
    A = np.zeros((H, n, n))
    for h in range(H):
        for i in range(n):
            for j in range(n):
                A[h, i, j] = a[h, (j - i) % n]
    return A


# ------------------------------------------------------------------ strategies (local)
@st.composite
def ring_cases(draw, max_n: int = 10, max_d: int = 3, max_h: int = 3):
    H = draw(st.integers(1, max_h))
    n = draw(st.integers(2, max_n))
    d = draw(st.integers(1, max_d))
    el = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
    a = draw(hnp.arrays(np.float64, (H, n), elements=el))
    a[:, draw(st.integers(0, n - 1))] += 0.5  # every row normalisable
    a = a / a.sum(-1, keepdims=True)
    T = draw(hnp.arrays(np.float64, (H, d, d), elements=st.floats(-2, 2, allow_nan=False, allow_subnormal=False)))
    return _t(a), _t(T)


def _fourier_frame(n: int, d: int) -> torch.Tensor:
    """Unitary (F ⊗ I_d) with columns φ_k ⊗ e_a / √n, token-major."""
    i = np.arange(n)
    F = np.exp(2j * np.pi * np.outer(i, i) / n) / np.sqrt(n)  # column k = φ_k / √n
    return torch.as_tensor(np.kron(F, np.eye(d)), dtype=torch.complex128)


# ------------------------------------------------------------------ FFT path vs naive references
@pytest.mark.theorem("T6")
@given(ring_cases())
def test_kernel_hat_sign_convention_matches_naive_loop(case):
    a, _ = case
    got = kernel_hat(a)
    ref = _t(naive_kernel_hat(a.numpy()).real) + 1j * _t(naive_kernel_hat(a.numpy()).imag)
    assert_close(got, ref, size=a.shape[-1], dtype=F64, what="â(k)")
    # the ones-vector is an eigenvector with â(0) = 1 for stochastic kernels
    assert_close(got[:, 0], torch.ones(a.shape[0], dtype=torch.complex128), size=a.shape[-1], dtype=F64)


@pytest.mark.theorem("T6")
@given(ring_cases())
def test_fourier_block_diagonalises_dense_jacobian(case):
    """(F⊗I)ᴴ J (F⊗I) = blockdiag(M(k) − I): the FFT path vs the naive loop-assembled dense J."""
    a, T = case
    H, n = a.shape
    d = T.shape[-1]
    J = naive_token_major(_t(naive_circulant(a.numpy())), T) - torch.eye(n * d, dtype=F64)
    assert_close(linear_operator(a, T), J, size=n * d, what="linear_operator vs naive loop")
    U = _fourier_frame(n, d)
    D = U.conj().T @ J.to(torch.complex128) @ U
    M = symbol(a, T)
    ref = torch.block_diag(*[M[k] - torch.eye(d, dtype=M.dtype) for k in range(n)])
    scale = max(1.0, torch.linalg.matrix_norm(J).item())
    err = torch.linalg.matrix_norm(D - ref).item() / scale
    assert err <= tol(F64, n * d), f"block diagonalisation residual {err:.3e}"
    record("T6", residual=err)
    # and the eigenvalues: every FFT branch is an eigenvalue of J (residual of the eigen-equation)
    sig = dispersion(a, T)
    for k in range(n):
        for b in range(d):
            s = torch.linalg.svdvals(J.to(torch.complex128) - (sig[k, b]) * torch.eye(n * d, dtype=torch.complex128))
            assert s.min().item() <= 1e-6 * scale, f"σ_{b}({k}) = {sig[k, b]} not an eigenvalue of J"


@pytest.mark.theorem("T6")
def test_dense_prediction_agrees_with_fft_prediction_ex3():
    a, T = ex3()
    p = predict_pattern(a, T)
    q = predict_from_operator(linear_operator(a, T), 64, 2)
    assert q.k_star == p.k_star
    assert abs(q.growth_rate - p.growth_rate) <= tol(F64, 128, scale=abs(p.growth_rate)) * 128
    assert q.purity > 1 - 1e-9
    assert q.pattern_class == p.pattern_class


# ------------------------------------------------------------------ T6 linearisation (autograd reference)
def dynamics_residual(ident, A, T, X, velocity) -> float:
    """``max |ẋ − (Σ_h Σ_j A^h_ij T_h x_j − x_i)|``: the formula ``ident`` (T6.jacobian's ``dynamics``)
    evaluated with the attention ``A`` ``(H, n, n)``, transports ``T``, state ``X`` ``(n, d)`` against
    the ``velocity`` ``(n, d)`` of the code under test."""
    H, n, d = A.shape[0], X.shape[0], X.shape[1]
    lhs, rhs = evaluate(ident, {"xdot": velocity, "A": A, "T": T, "x": X, "n": n, "d": d, "H": H})
    return float(np.abs(lhs - rhs).max())


@st.composite
def softmax_dynamics_cases(draw):
    H = draw(st.integers(1, 3))
    n = draw(st.integers(2, 7))
    d = draw(st.integers(1, 3))
    dk = draw(st.integers(1, 3))
    fl = lambda lo, hi: st.floats(lo, hi, allow_nan=False, allow_subnormal=False)
    bias = draw(hnp.arrays(np.float64, (H, n), elements=fl(-3, 3)))
    T = draw(hnp.arrays(np.float64, (H, d, d), elements=fl(-2, 2)))
    Wq = draw(hnp.arrays(np.float64, (H, dk, d), elements=fl(-1.5, 1.5)))
    Wk = draw(hnp.arrays(np.float64, (H, dk, d), elements=fl(-1.5, 1.5)))
    x = draw(hnp.arrays(np.float64, (d,), elements=fl(-2, 2)))
    return kernel_from_bias(_t(bias)), _t(T), (_t(Wq), _t(Wk)), _t(x)


@pytest.mark.theorem("T6")
@given(softmax_dynamics_cases())
def test_t6_jacobian_of_softmax_dynamics_equals_walk_minus_identity(case):
    """Autograd Jacobian of the real softmax dynamics at 1⊗x* = block(Σ_h A0^h T_h) − I, whatever the
    content attention (the softmax-derivative terms cancel because rows of dA sum to 0)."""
    a, T, content, x = case
    n, d = a.shape[1], T.shape[-1]
    dyn = MHADynamics(T, kernels=a, content=content, beta=1.0)
    X = x.expand(n, d).contiguous()
    J = dyn.jacobian(X)
    ref = linear_operator(a, T)
    scale = 1 + sum(torch.linalg.matrix_norm(T[h]).item() for h in range(T.shape[0]))
    r = assert_close(J, ref, size=n * d, dtype=F64, what="autograd J vs walk − I")
    # ... and the statement's own formula (T6.jacobian's registry expression, evaluated by the oracle)
    stated = ring_jacobian(
        naive_circulant(a.numpy()), T.numpy(), get("T6").conclusion("T6.jacobian").params["jacobian"]
    )
    assert_close(J, _t(stated), size=n * d, dtype=F64, what="autograd J vs the registry's formula for J")
    record("T6", residual=r)
    # content changes attention away from the base state (so the cancellation is not vacuous): the
    # attention at Y is the literal softmax of log a_h(j − i) + β (W_Q y_i)·(W_K y_j)/√d_k (numpy here)
    Y = X + 0.3 * torch.arange(n * d, dtype=F64).reshape(n, d).sin()
    an, Wq, Wk, Yn = a.numpy(), content[0].numpy(), content[1].numpy(), Y.numpy()
    dk = Wq.shape[1]
    ref_A = np.zeros((T.shape[0], n, n))
    for hh in range(T.shape[0]):
        q, k = Yn @ Wq[hh].T, Yn @ Wk[hh].T
        with np.errstate(divide="ignore"):
            S = np.log(an[hh][(np.arange(n)[None, :] - np.arange(n)[:, None]) % n]) + (q @ k.T) / math.sqrt(dk)
        S = S - S.max(1, keepdims=True)
        ref_A[hh] = np.exp(S) / np.exp(S).sum(1, keepdims=True)
    got = dyn.attention(Y).numpy()
    assert np.abs(got - ref_A).max() <= 1e-12 * scale
    # the dynamics as T6.jacobian states it (the registry's formula), with that attention, is the
    # velocity whose Jacobian was taken above
    stated_dynamics = get("T6").conclusion("T6.jacobian").params["dynamics"]
    assert dynamics_residual(stated_dynamics, ref_A, T.numpy(), Yn, dyn.velocity(Y).numpy()) <= 1e-12 * scale * (
        1 + float(np.abs(Yn).max())
    )


@pytest.mark.theorem("T6")
def test_t6_fails_for_unnormalised_attention_and_inhomogeneous_states():
    g = torch.Generator().manual_seed(3)
    n, d, H = 6, 2, 2
    a = kernel_from_bias(torch.randn(H, n, generator=g, dtype=F64))
    T = torch.randn(H, d, d, generator=g, dtype=F64)
    content = (torch.randn(H, 2, d, generator=g, dtype=F64), torch.randn(H, 2, d, generator=g, dtype=F64))
    x = _t([0.8, -1.1])
    X = x.expand(n, d).contiguous()
    ref = linear_operator(a, T)
    # (H1) dropped: sigmoid attention with the same scores
    sig = MHADynamics(T, pos_bias=torch.log(circulant(a)), content=content, normalization="sigmoid")
    J1 = sig.jacobian(X)
    A0 = sig.attention(X)
    ref1 = torch.einsum("hij,hab->iajb", A0, T).reshape(n * d, n * d) - torch.eye(n * d, dtype=F64)
    e1 = torch.linalg.matrix_norm(J1 - ref1).item() / torch.linalg.matrix_norm(ref1).item()
    assert e1 > 1e-2, "sigmoid attention should break the cancellation"
    record("T6", counterexample=f"drop H1 (sigmoid attention, n={n}, d={d}, H={H}): ‖J − (walk−I)‖/‖walk−I‖ = {e1:.3g}")
    # (H2) dropped: inhomogeneous base state with content attention
    dyn = MHADynamics(T, kernels=a, content=content)
    Xi = X + 0.5 * torch.randn(n, d, generator=g, dtype=F64)
    J2 = dyn.jacobian(Xi)
    A = dyn.attention(Xi)
    ref2 = torch.einsum("hij,hab->iajb", A, T).reshape(n * d, n * d) - torch.eye(n * d, dtype=F64)
    e2 = torch.linalg.matrix_norm(J2 - ref2).item() / torch.linalg.matrix_norm(ref2).item()
    assert e2 > 1e-2
    record("T6", counterexample=f"drop H2 (inhomogeneous state, content on): relative Jacobian error {e2:.3g}")
    # control: the homogeneous softmax case is exact
    assert_close(dyn.jacobian(X), ref, size=n * d, dtype=F64)


# ------------------------------------------------------------------ selection facts
@pytest.mark.theorem("T6")
@given(ring_cases(max_d=1), st.floats(0.05, 3.0))
def test_positive_real_eigenvalue_selects_cluster(case, lam):
    a, _ = case
    T = torch.full((a.shape[0], 1, 1), lam, dtype=F64)
    p = predict_pattern(a, T)
    assert p.k_star == 0 or p.tie
    assert p.growth_rate.real == pytest.approx(a.shape[0] * lam - 1, abs=tol(F64, a.shape[1], scale=lam) * a.shape[0])
    if not p.tie:
        assert p.pattern_class == CLUSTER


@pytest.mark.theorem("T6")
def test_rotating_wave_frequency_formula_and_handedness():
    n, rho, theta = 48, 1.3, 2.2
    T = (rho * _R(theta))[None]
    a = gaussian_kernel(n, 3.0, 1.5)[None]
    p = predict_pattern(a, T)
    assert p.pattern_class == TRAVELLING_HELIX and not p.tie
    # THEOREMS.md T6: z = x_a + i x_b, σ_z(k) = ρ e^{iθ} â(k) − 1, ω = ρ(Re â sin θ + Im â cos θ) at the z-mode k_z
    ah = kernel_hat(a[0])
    sz = rho * complex(math.cos(theta), math.sin(theta)) * ah - 1
    kz = int(torch.argmax(sz.real))
    omega_theory = rho * (ah[kz].real * math.sin(theta) + ah[kz].imag * math.cos(theta)).item()
    orient = torch.sign(torch.linalg.det(p.rotation_plane)).item()  # plane (u1, u2) vs (e_a, e_b)
    assert orient * p.rotation_frequency == pytest.approx(omega_theory, rel=1e-12)
    assert abs(p.k_star) == abs(int(signed_wavenumbers(n)[kz]))
    # symmetric kernel: tied ±k helices, reported as a tie (standing helix), no guessed winner
    sym = (gaussian_kernel(n, 3.0, 1.5) + gaussian_kernel(n, -3.0, 1.5))[None] / 2
    q = predict_pattern(sym, T)
    assert q.tie and q.pattern_class == STANDING_HELIX and len(q.ties) == 2
    assert {k for k, _ in q.ties} == {abs(q.k_star)}


# ------------------------------------------------------------------ reference cases (THEOREMS.md T6)
@pytest.mark.theorem("T6")
def test_ex1_prediction_matches_stated_numbers():
    a, T = ex1()
    p = predict_pattern(a, T)
    E = T6_EX1  # the numbers THEOREMS.md's note renders
    assert abs(p.k_star) == E["k_star"] and not p.tie
    s = p.growth_rate
    assert round(s.real, E["sigma_digits"]) == E["sigma_re"]
    assert round(abs(s.imag), E["sigma_digits"]) == E["sigma_im"]
    assert round(p.phase_velocity, E["velocity_digits"]) == E["velocity"]
    assert p.pattern_class == TRAVELLING


def _fit_window(traj, k):
    t = traj.times
    return measure_mode(t, traj.states, k, window=(t[-1].item() / 2, t[-1].item()))


@pytest.mark.theorem("T6")
def test_ex1_emergence_follows_prediction_with_content_attention():
    """RK4 at T6_EX1's step and perturbation, softmax dynamics with random content attention: the
    observed mode, growth rate and phase velocity in the linear window match the symbol."""
    a, T = ex1()
    p = predict_pattern(a, T)
    g = torch.Generator().manual_seed(0)
    content = (torch.randn(1, 2, 2, generator=g, dtype=F64), torch.randn(1, 2, 2, generator=g, dtype=F64))
    dyn = MHADynamics(T, kernels=a, content=content)
    E = T6_EX1  # the simulation THEOREMS.md's note states
    X0 = perturbed_homogeneous(E["n"], 2, [1.0, 0.0], E["perturbation"], generator=g)
    tr = simulate_flow(dyn, X0, 24.0, E["dt"], save_every=20)
    dev = (tr.final - tr.final.mean(0)).abs().max().item()
    assert dev < 1e-3, "left the linear window"
    fit = _fit_window(tr, E["k_star"])
    obs = classify_trajectory(tr.times, tr.states, window=(12.0, 24.0))
    assert obs.k == E["k_star"] and obs.label == TRAVELLING
    rel_g = abs(fit.growth_rate.real - s_re(p)) / abs(s_re(p))
    rel_w = abs(fit.growth_rate.imag - p.growth_rate.imag) / abs(p.growth_rate.imag)
    rel_c = abs(fit.velocity - p.phase_velocity) / abs(p.phase_velocity)
    assert rel_g <= 1e-3 and rel_w <= 1e-2 and rel_c <= 1e-2
    assert abs(obs.velocity - E["velocity"]) <= 1e-2 * E["velocity"]
    record("T6", residual=max(rel_g, rel_c))


def s_re(p):
    return p.growth_rate.real


@pytest.mark.theorem("T6")
def test_ex3_non_commuting_heads_follow_symbol_not_per_head_guess():
    a, T = ex3()
    assert not torch.allclose(T[0] @ T[1], T[1] @ T[0])
    p = predict_pattern(a, T)
    naive = naive_per_head_growth(a, T)
    E = T6_EX3  # the numbers THEOREMS.md's note renders
    k_naive = abs(int(signed_wavenumbers(E["n"])[int(torch.argmax(naive))]))
    assert abs(p.k_star) == E["k_star"] and k_naive == E["k_naive"] and p.gap_k > 0.3
    dyn = MHADynamics(T, kernels=a)
    g = torch.Generator().manual_seed(1)
    X0 = perturbed_homogeneous(E["n"], 2, [0.0, 0.0], 1e-10, generator=g)
    tr = simulate_flow(dyn, X0, 8.0, 0.01, save_every=10)
    obs = classify_trajectory(tr.times, tr.states, window=(4.0, 8.0))
    assert obs.k == E["k_star"], f"simulation selected |k|={obs.k}"
    fit = _fit_window(tr, E["k_star"])
    assert abs(fit.growth_rate.real - p.growth_rate.real) <= 1e-3 * abs(p.growth_rate.real)
    record("T6", residual=abs(fit.growth_rate - p.growth_rate) / abs(p.growth_rate))


# (prediction vs emergence on drawn cases: tests/numerics/test_t6_emergence.py)


# ------------------------------------------------------------------ beyond the ring
@pytest.mark.theorem("T6")
def test_absolute_pe_and_rope_break_circulance_but_not_the_linearisation():
    g = torch.Generator().manual_seed(5)
    n, d, H = 12, 2, 2
    a = torch.stack([gaussian_kernel(n, 2.0, 1.0), gaussian_kernel(n, -1.0, 1.5)])
    T = torch.randn(H, d, d, generator=g, dtype=F64)
    content = (torch.randn(H, 2, d, generator=g, dtype=F64), torch.randn(H, 2, d, generator=g, dtype=F64))
    pe = sinusoidal_pe(n, d, base=10.0)
    X = _t([0.4, 1.2]).expand(n, d).contiguous()
    for dyn in (
        MHADynamics(T, kernels=a, content=content, abs_pe=pe),
        MHADynamics(T, kernels=a, content=content, rope=10.0),
    ):
        A0 = dyn.attention(X)
        J = dyn.jacobian(X)
        ref = linear_operator(A0, T)  # H1 + H2 still hold: J = walk at the base state − I
        record("T6", residual=assert_close(J, ref, size=n * d, dtype=F64))
        # ... but the base-state attention is no longer circulant
        shifted = torch.roll(torch.roll(A0, 1, -1), 1, -2)
        assert (A0 - shifted).abs().max().item() > 1e-3
        q = predict_from_operator(J, n, d)
        # oracle: the eigenvalues of J in 30-digit arithmetic (mpmath, no LAPACK)
        mpmath.mp.dps = 30
        ev, _ = mpmath.eig(mpmath.matrix(J.tolist()))
        assert q.growth_rate.real == pytest.approx(float(max(mpmath.re(e) for e in ev)), abs=1e-10)
        assert 0 <= q.purity <= 1


@pytest.mark.theorem("T6")
def test_causal_mask_transient_growth_beyond_spectrum():
    n, d = 24, 1
    a = gaussian_kernel(n, -2.0, 1.0)[None]  # attends backwards: survives the causal mask
    T = _t([[[-4.0]]])
    assert predict_pattern(a, T).growth_rate.real > 0.4  # on the ring: an unstable travelling wave
    dyn = MHADynamics(T, kernels=a, causal=True)
    X = torch.zeros(n, d, dtype=F64)
    J = dyn.jacobian(X)
    A = dyn.attention(X)
    assert_close(A.sum(-1), torch.ones(1, n, dtype=F64), size=n)
    assert_close(J, linear_operator(A, T), size=n * d, dtype=F64)
    times = torch.linspace(0, 12, 25, dtype=F64)
    tg = transient_growth(J, times)
    # reference norms: naive scaling-and-squaring Taylor series + numpy 2-norm. (scipy.linalg.expm is
    # NOT used: on this lower-triangular J it is off by 1e-2 against mpmath at 40 digits; torch agrees
    # with mpmath to 4e-16.)
    ref = [np.linalg.norm(naive_expm(t * J.numpy()), 2) for t in times.tolist()]
    assert_close(tg.norms, _t(ref), size=n * d, dtype=F64, what="‖e^{tJ}‖")
    # non-normal: transient (convective) amplification although the spectrum (triangular) decays
    assert tg.spectral_abscissa < -1 and tg.numerical_abscissa > 0
    assert tg.max_norm > 4 and tg.t_max > 0 and tg.amplification > 1e6


# ------------------------------------------------------------------ discrete stacks: the two traps
def _trap_case():
    """d = 3, base state e1 (eigenvalue 1 of T), a scaled rotation on the (e2, e3) plane. The flow
    selects |k| = 2 (largest Re μ); the post-norm stack with η = 2 selects |k| = 1 (largest
    |1 + h(μ − 1)|, which rewards Im μ). Found by a grid search over kernel centre/width, ρ, θ, η."""
    n, th = 32, 0.55 * math.pi
    T = torch.zeros(1, 3, 3, dtype=F64)
    T[0, 0, 0] = 1.0
    T[0, 1:, 1:] = 2.2 * _R(th)
    return gaussian_kernel(n, 4.0, 2.0)[None], T


def test_postnorm_stack_can_select_another_k_than_the_flow():
    a, T = _trap_case()
    sel = discrete_selection(a, T, eta=2.0, layers=60, scheme="postnorm")
    assert sel.differs and (sel.k_star, sel.k_continuous) == (1, 2)
    assert abs(predict_pattern(a, T).k_star) == 2
    # the simulations really do what the two selection rules say
    dyn = MHADynamics(T, kernels=a)
    g = torch.Generator().manual_seed(2)
    X0 = perturbed_homogeneous(32, 3, [1.0, 0.0, 0.0], 1e-8, generator=g)
    with pytest.warns(UserWarning, match="selects"):
        tr = simulate_stack(dyn, X0, 60, 2.0, scheme="postnorm")
    assert tr.selection.k_star == 1 and any("selects" in m for m in tr.warnings)
    obs = classify_trajectory(tr.times, tr.states, window=(30, 60))
    assert obs.k == 1
    fl = simulate_flow(dyn, X0, 15.0, 0.01, save_every=10)
    assert classify_trajectory(fl.times, fl.states, window=(7.5, 15.0)).k == 2
    # small steps recover the flow's selection
    assert not discrete_selection(a, T, eta=0.01, layers=60, scheme="postnorm").differs


def test_prenorm_effective_time_is_logarithmic_and_freezing_is_reported():
    for eta, L in [(0.5, 10), (0.1, 1000), (1.0, 50)]:
        tau = effective_time("prenorm", eta, L)
        # relative perturbations see the base amplitude after the layer, r_{l+1} = 1 + η(l+1)
        ref = sum(eta / (1 + eta * (l + 1)) for l in range(L))
        assert tau == pytest.approx(ref, rel=1e-12)
        # integral bounds of the decreasing summand η/(1+ηx), x = 1..L
        assert math.log((1 + eta * (L + 1)) / (1 + eta)) <= tau <= math.log(1 + eta * L)
    assert effective_time("postnorm", 1.0, 10) == pytest.approx(5.0)
    a, T = ex1()
    sel = discrete_selection(a, T, eta=0.5, layers=12, scheme="prenorm")
    assert sel.frozen and any("freezes" in m for m in sel.messages())
    assert not discrete_selection(a, T, eta=0.5, layers=12, scheme="postnorm", min_contrast=1.01).frozen


def test_prenorm_layer_steps_match_the_residual_amplitude_ratio_exactly():
    """h_l is the relative gain of one pre-norm layer: with base amplitude r_l = 1 + ηl a tangent
    perturbation is multiplied by (r_l + ημ)/(r_l + η) = 1 + h_l(μ − 1). Oracle: that ratio in exact
    Fractions for rational η, μ (never the closed form)."""
    from fractions import Fraction

    from numerics.patterns.symbols import prenorm_layer_steps

    for eta, mu, L, first in [
        (Fraction(1, 2), Fraction(7, 3), 9, 0),
        (Fraction(3), Fraction(-2, 5), 6, 2),
        (Fraction(1, 10), Fraction(11, 10), 12, 11),
    ]:
        h = prenorm_layer_steps(float(eta), L, first)
        assert h.dtype == F64 and h.shape == (L - first,)
        for i, l in enumerate(range(first, L)):
            r = 1 + eta * l
            exact = ((r + eta * mu) / (r + eta) - 1) / (mu - 1)
            assert h[i].item() == pytest.approx(float(exact), rel=4 * np.finfo(float).eps)
    with pytest.raises(ParameterError) as e:
        prenorm_layer_steps(0.0, 3)
    assert e.value.argument == "eta"


def test_postnorm_layer_step_matches_the_normalised_layer_gain_exactly():
    """h is the relative gain of one post-norm layer: x ← (x + ηMx)/(1 + η) multiplies a tangent
    perturbation by (1 + ημ)/(1 + η) = 1 + h(μ − 1). Oracle: that ratio in exact Fractions; and the
    stack's effective time and E5's post-norm exponent read the same h."""
    import cmath
    from fractions import Fraction

    from numerics.patterns.symbols import effective_time, postnorm_layer_step
    from paper_checks.e5.predict import _exponents

    for eta, mu in [
        (Fraction(1, 2), Fraction(7, 3)),
        (Fraction(3), Fraction(-2, 5)),
        (Fraction(1, 10), Fraction(11, 10)),
    ]:
        exact = ((1 + eta * mu) / (1 + eta) - 1) / (mu - 1)
        h = postnorm_layer_step(float(eta))
        assert h == pytest.approx(float(exact), rel=2 * np.finfo(float).eps)
        assert effective_time("postnorm", float(eta), 7) == pytest.approx(7 * float(exact), rel=4 * np.finfo(float).eps)
        z = torch.tensor([complex(float(mu), 0.3)], dtype=torch.complex128)
        ref = cmath.log((1 + float(eta) * z[0].item()) / (1 + float(eta)))
        assert abs(_exponents(z, "postnorm", float(eta), 5)[0].item() - ref) <= 8 * np.finfo(float).eps
    with pytest.raises(ParameterError) as e:
        postnorm_layer_step(-1.0)
    assert e.value.argument == "eta"


# ------------------------------------------------------------------ bad input
def test_bad_input_is_refused_with_named_errors():
    T = torch.eye(2, dtype=F64)[None]
    with pytest.raises(NegativeWeightError) as e:
        predict_pattern(_t([[0.5, 0.7, -0.2]]), T)
    assert e.value.argument == "kernels"
    with pytest.raises(NotStochasticError, match="normalisable"):
        predict_pattern(_t([[0.0, 0.0, 0.0]]), T, normalize=True)
    with pytest.raises(NotStochasticError, match="sum to 1"):
        predict_pattern(_t([[1.0, 1.0, 1.0]]), T)
    p = predict_pattern(_t([[1.0, 1.0, 1.0]]), T, normalize=True)
    assert p.k_star == 0
    with pytest.raises(ShapeError) as e:
        predict_pattern(_t([[1.0]]), T)
    assert "n must be >= 2" in str(e.value)
    with pytest.raises(ShapeError) as e:
        predict_pattern(_t([[0.5, 0.5]]), torch.ones(1, 2, 3, dtype=F64))
    assert e.value.argument == "transports"
    with pytest.raises(ShapeError):
        predict_pattern(_t([[0.5, 0.5]]), torch.ones(2, 2, 2, dtype=F64))  # H mismatch
    with pytest.raises(DTypeError):
        predict_pattern(torch.tensor([[1, 0]]), T)
    with pytest.raises(ParameterError) as e:
        gaussian_kernel(1, 0.0, 1.0)
    assert e.value.argument == "n"
    with pytest.raises(ParameterError) as e:
        gaussian_kernel(8, 0.0, 0.0)
    assert e.value.argument == "width"
    with pytest.raises(ParameterError) as e:
        discrete_selection(*ex1(), eta=-1.0, layers=3)
    assert e.value.argument == "eta"
    with pytest.raises(ParameterError) as e:
        discrete_selection(*ex1(), eta=0.5, layers=0)
    assert e.value.argument == "layers"
    with pytest.raises(ParameterError) as e:
        effective_time("sideways", 0.1, 3)
    assert e.value.argument == "scheme"
    with pytest.raises(NonFiniteError) as e:
        kernel_from_bias(torch.tensor([0.0, float("nan")], dtype=F64))
    assert e.value.argument == "bias"


@pytest.mark.theorem("T6")
def test_sphere_flow_onset_equals_symbol_on_the_invariant_plane():
    """Sphere flow at the fixed point 1⊗e1 of T = blockdiag(1, ρR(θ)) (content attention on): the
    autograd Jacobian restricted to the tangent coordinates (e2, e3) has exactly the in-plane
    branches eig M(k)|_(e2,e3) − 1; the radial row is zero."""
    n, th = 12, 2.0
    a = gaussian_kernel(n, 2.0, 1.2)[None]
    T = torch.zeros(1, 3, 3, dtype=F64)
    T[0, 0, 0] = 1.0
    T[0, 1:, 1:] = 1.4 * _R(th)
    g = torch.Generator().manual_seed(0)
    content = (torch.randn(1, 2, 3, generator=g, dtype=F64), torch.randn(1, 2, 3, generator=g, dtype=F64))
    dyn = MHADynamics(T, kernels=a, content=content)
    X = _t([1.0, 0.0, 0.0]).expand(n, 3).contiguous()
    J = dyn.jacobian(X, sphere=True)
    radial = [i * 3 for i in range(n)]
    assert J[radial].abs().max().item() <= tol(F64, 3 * n)
    tang = [i * 3 + c for i in range(n) for c in (1, 2)]
    ev = torch.linalg.eigvals(J[tang][:, tang])
    ref = (torch.linalg.eigvals(symbol(a, T)[:, 1:, 1:]) - 1).reshape(-1)
    D = (ev[:, None] - ref[None, :]).abs()
    r = max(D.min(1).values.max().item(), D.min(0).values.max().item())
    assert r <= tol(F64, 3 * n, scale=3.0), r
    record("T6", residual=r)


# ======================================================================================================
# Each step of ring pattern formation on its own. Expected values are literal float64 numpy:
# â(k) = Σ_m a(m) e^{+2πikm/n} summed term by term, dense Jacobians assembled block by block, e^{tJ} of a
# 2×2 Jordan-type block in closed form, log-gains of discrete stacks from their per-layer factors.
# ======================================================================================================
f64 = torch.float64


def hat(a):
    n = len(a)
    return np.array([sum(a[m] * cmath.exp(2j * math.pi * k * m / n) for m in range(n)) for k in range(n)])


def signed(k, n):
    return k if k <= n // 2 else k - n


# ------------------------------------------------------------------------------------- kernels
def test_gaussian_kernel_is_the_wrapped_gaussian_normalised():
    n, c, w = 7, 5.5, 0.9
    raw = []
    for m in range(n):
        # signed ring offset of m − c in [−n/2, n/2): the representative m − c + j·n in that range
        off = next(m - c + j * n for j in (-1, 0, 1) if -n / 2 <= m - c + j * n < n / 2)
        raw.append(math.exp(-(off**2) / (2 * w**2)))
    ref = np.array(raw) / sum(raw)
    got = gaussian_kernel(n, c, w)
    assert got.dtype == f64 and got.shape == (n,)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-14, atol=0)
    assert gaussian_kernel(n, c, w, dtype=torch.float32).dtype == torch.float32


@pytest.mark.parametrize(
    "n, width, arg",
    [
        (1, 1.0, "n"),
        (0, 1.0, "n"),
        (5, 0.0, "width"),
        (5, -1.0, "width"),
        (5, float("inf"), "width"),
        (5, float("nan"), "width"),
    ],
)
def test_gaussian_kernel_bad_sizes_name_the_argument(n, width, arg):
    msg = raises_named(ParameterError, arg, lambda: gaussian_kernel(n, 0.0, width))
    if arg == "n":
        assert msg == f"n: must be >= 2, got {n}"
    elif math.isfinite(width):
        assert msg == f"width: must be > 0.0, got {width}"
    else:
        assert msg == f"width: must be a finite number, got {width}"


def test_gaussian_kernel_accepts_the_smallest_ring():
    a = gaussian_kernel(2, 0.0, 1.0)
    np.testing.assert_allclose(a.numpy(), np.array([1.0, math.exp(-0.5)]) / (1 + math.exp(-0.5)), rtol=1e-15)


def test_kernel_from_bias_is_a_softmax_with_masked_offsets():
    b = np.array([[0.3, -1.0, -np.inf, 2.0], [0.0, 0.0, 0.0, 0.0]])
    e = np.exp(b - 2.0)
    ref = np.stack([e[0] / e[0].sum(), np.full(4, 0.25)])
    np.testing.assert_allclose(kernel_from_bias(t(b)).numpy(), ref, rtol=1e-15, atol=0)
    for bad in (np.nan, np.inf):
        msg = raises_named(NonFiniteError, "bias", lambda: kernel_from_bias(t([0.0, bad])))
        assert msg == "bias: contains 1 NaN/+inf entries"


def test_circulant_is_indexed_by_the_offset_j_minus_i():
    a = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    C = circulant(t(a)).numpy()
    assert C.shape == (2, 4, 4)
    for h in range(2):
        for i in range(4):
            for j in range(4):
                assert C[h, i, j] == a[h, (j - i) % 4]


def test_validate_kernels_checks_and_normalises():
    a = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    assert torch.equal(validate_kernels(t(a)), t(a))
    raises_named(ShapeError, "kernels", lambda: validate_kernels(t(a[0])))
    raises_named(ShapeError, "kernels", lambda: validate_kernels(torch.ones(0, 3, dtype=f64)))
    msg = raises_named(ShapeError, "kernels", lambda: validate_kernels(torch.ones(2, 1, dtype=f64)))
    assert "n must be >= 2, got n=1" in msg
    raises_named(NegativeWeightError, "kernels", lambda: validate_kernels(t([[1.5, -0.5]])))
    raises_named(NonFiniteError, "kernels", lambda: validate_kernels(t([[np.nan, 1.0]])))
    msg = raises_named(
        NotStochasticError, "kernels", lambda: validate_kernels(t([[0.0, 0.0], [0.5, 0.5]]), normalize=True)
    )
    assert "sums to 0" in msg
    msg = raises_named(NotStochasticError, "kernels", lambda: validate_kernels(t([[1.0, 1.0]])))
    assert "max |sum − 1| = 1.000e+00" in msg and "normalize=True" in msg
    np.testing.assert_allclose(
        validate_kernels(t([[1.0, 3.0], [2.0, 2.0]]), normalize=True).numpy(), [[0.25, 0.75], [0.5, 0.5]], rtol=1e-15
    )
    # roundoff-level deviation from 1 is accepted, 1e-9 is not
    validate_kernels(t([[0.5, 0.5 + 1e-15]]))
    raises_named(NotStochasticError, "kernels", lambda: validate_kernels(t([[0.5, 0.5 + 1e-9]])))


def test_validate_transports_checks_heads_and_shape():
    T = torch.eye(2, dtype=f64).expand(3, 2, 2)
    assert validate_transports(T, 3) is not None and validate_transports(T).shape == (3, 2, 2)
    msg = raises_named(ShapeError, "transports", lambda: validate_transports(T, 2))
    assert msg == "transports: expected 2 heads (kernels have 2 rows), got 3"
    raises_named(ShapeError, "transports", lambda: validate_transports(torch.eye(2, dtype=f64)))
    raises_named(ShapeError, "transports", lambda: validate_transports(torch.ones(1, 2, 3, dtype=f64)))
    raises_named(NonFiniteError, "transports", lambda: validate_transports(torch.full((1, 2, 2), np.inf)))


# ------------------------------------------------------------------------------------- symbol
def test_signed_wavenumbers_even_and_odd_rings():
    assert signed_wavenumbers(5).tolist() == [0, 1, 2, -2, -1]
    assert signed_wavenumbers(6).tolist() == [0, 1, 2, 3, -2, -1]
    assert signed_wavenumbers(2).tolist() == [0, 1]


def test_symbol_dispersion_and_naive_growth_are_the_literal_sums():
    g = np.random.default_rng(1)
    n, H, d = 6, 2, 2
    a = g.random((H, n))
    a /= a.sum(1, keepdims=True)
    T = g.standard_normal((H, d, d))
    ah = np.stack([hat(a[h]) for h in range(H)])
    np.testing.assert_allclose(kernel_hat(t(a)).numpy(), ah, atol=1e-14)
    M = np.einsum("hk,hab->kab", ah, T)
    np.testing.assert_allclose(symbol(t(a), t(T)).numpy(), M, atol=1e-14)
    disp = dispersion(t(a), t(T)).numpy()
    for k in range(n):
        ev = np.linalg.eigvals(M[k]) - 1
        assert np.all(np.diff(disp[k].real) <= 0)  # sorted by decreasing real part
        np.testing.assert_allclose(np.sort_complex(disp[k]), np.sort_complex(ev), atol=1e-13)
    naive = [sum(np.linalg.eigvals(ah[h, k] * T[h]).real.max() for h in range(H)) - 1 for k in range(n)]
    np.testing.assert_allclose(naive_per_head_growth(t(a), t(T)).numpy(), naive, atol=1e-13)
    # normalize=True reaches the same symbol from unnormalised kernels
    np.testing.assert_allclose(symbol(t(3 * a), t(T), normalize=True).numpy(), M, atol=1e-14)
    np.testing.assert_allclose(dispersion(t(3 * a), t(T), normalize=True).numpy(), disp, atol=1e-13)
    np.testing.assert_allclose(naive_per_head_growth(t(3 * a), t(T), normalize=True).numpy(), naive, atol=1e-13)


def test_polarisation_of_linear_elliptic_and_circular_vectors():
    assert polarisation(torch.tensor([1.0, -2.0], dtype=f64)) == pytest.approx(1.0, abs=1e-15)
    assert polarisation(torch.tensor([1.0, 1j])) == pytest.approx(0.0, abs=1e-15)
    assert polarisation(torch.tensor([1.0, 0.5j])) == pytest.approx(0.75 / 1.25, abs=1e-15)
    assert polarisation(torch.tensor([1j, 2j])) == pytest.approx(1.0, abs=1e-15)
    raises_named(UndefinedError, "v", lambda: polarisation(torch.zeros(2)))


# ------------------------------------------------------------------------------------- FFT prediction
def literal_scalar_prediction(a, tau):
    """d = 1, H = 1: σ(k) = τ â(k) − 1; returns (k*, σ, runner-up |k|, gap) with k* > 0 representative."""
    n = len(a)
    sig = tau * hat(a) - 1
    best = sig.real.max()
    k = min(k for k in range(n) if sig[k].real >= best - 1e-12 and signed(k, n) >= 0)
    s = sig[k]
    ks = signed(k, n)
    others = [(sig[j].real, abs(signed(j, n))) for j in range(n) if abs(signed(j, n)) != ks]
    r_re, r_k = max(others)
    return ks, s, r_k, best - r_re


def test_travelling_wave_fields_from_the_literal_symbol():
    a = np.array([0.1, 0.6, 0.05, 0.05, 0.1, 0.05, 0.05])  # odd ring: no Nyquist k
    tau = -2.0
    n = len(a)
    ks, s, r_k, gap = literal_scalar_prediction(a, tau)
    assert ks != 0 and abs(s.imag) > 1e-3
    p = predict_pattern(t(a[None]), t([[[tau]]]))
    assert p.k_star == ks and p.n == n and p.d == 1
    assert abs(p.growth_rate - s) <= 1e-13
    assert p.growing == (s.real > 0)
    assert p.phase_velocity == pytest.approx(-n * s.imag / (2 * math.pi * ks), rel=1e-12)
    assert p.frequency == pytest.approx(s.imag, rel=1e-12)
    assert p.rotation_frequency == 0.0  # d = 1: nothing rotates
    assert p.pattern_class == TRAVELLING and not p.tie and p.conjugate_pair
    assert p.runner_up_k == r_k
    assert p.gap == pytest.approx(gap, rel=1e-10) and p.gap_k == pytest.approx(gap, rel=1e-10)
    assert p.method == "fft" and p.purity == 1.0
    # mode[i] = e^{2πik*i/n} v with |v| = 1
    phases = p.mode[:, 0] / p.mode[0, 0]
    np.testing.assert_allclose(phases.numpy(), np.exp(2j * math.pi * ks * np.arange(n) / n), atol=1e-13)
    assert abs(abs(complex(p.eigenvector[0])) - 1) < 1e-14
    np.testing.assert_allclose(p.dispersion[:, 0].numpy(), tau * hat(a) - 1, atol=1e-13)


def test_cluster_fields_from_the_literal_symbol():
    a = np.array([0.4, 0.3, 0.1, 0.2])
    p = predict_pattern(t(a[None]), t([[[2.0]]]))
    sig = 2 * hat(a) - 1
    assert p.k_star == 0 and abs(p.growth_rate - 1.0) <= 1e-14
    assert p.pattern_class == CLUSTER and p.phase_velocity == 0.0 and p.frequency == 0.0
    assert not p.conjugate_pair
    assert p.gap == pytest.approx(1.0 - max(sig[1:].real), rel=1e-12)
    assert p.runner_up_k == abs(signed(int(np.argmax(sig[1:].real)) + 1, 4))


def test_stationary_pattern_at_the_nyquist_wavenumber():
    a = np.array([0.2, 0.3, 0.2, 0.3])  # â(2) = 0.2 − 0.3 + 0.2 − 0.3 = −0.2, real
    p = predict_pattern(t(a[None]), t([[[-3.0]]]))
    assert p.k_star == 2 and p.growth_rate == pytest.approx(-3 * -0.2 - 1, abs=1e-14)
    assert p.pattern_class == STATIONARY and not p.conjugate_pair and not p.tie
    assert p.phase_velocity == 0.0


def test_tie_tolerance_decides_what_counts_as_a_tie():
    # two heads on orthogonal branches: growth 0.2 at |k| = 1 and 0.2 + 1e-9 at |k| = 2
    n = 8
    p1 = np.zeros(n)
    p1[[1, 7]] = 0.5  # â1(k) = cos(2πk/8)
    p2 = np.zeros(n)
    p2[[2, 6]] = 0.5  # â2(k) = cos(4πk/8)
    # branch 1: τ1 â1, max at k=0 → use τ < 0 so the winner is the most negative â: k = 4 (â1 = −1)
    T = np.zeros((2, 2, 2))
    T[0, 0, 0], T[1, 1, 1] = -1.2, -(1.2 + 1e-9)
    p_tight = predict_pattern(t(np.stack([p1, p2])), t(T), tie_tol=1e-12)
    p_loose = predict_pattern(t(np.stack([p1, p2])), t(T), tie_tol=1e-6)
    assert not p_tight.tie and p_loose.tie
    assert p_tight.tie_tol == 1e-12 and p_loose.tie_tol == 1e-6
    assert len(p_loose.ties) == 2


# ------------------------------------------------------------------------------------- dense route
def literal_jacobian(A, T):
    H, n, _ = A.shape
    d = T.shape[-1]
    J = -np.eye(n * d)
    for i in range(n):
        for j in range(n):
            J[i * d : (i + 1) * d, j * d : (j + 1) * d] += sum(A[h, i, j] * T[h] for h in range(H))
    return J


def test_linear_operator_from_kernels_and_from_full_attention():
    g = np.random.default_rng(2)
    a = g.random((2, 5))
    a /= a.sum(1, keepdims=True)
    T = g.standard_normal((2, 3, 3))
    A = np.stack([[[a[h, (j - i) % 5] for j in range(5)] for i in range(5)] for h in range(2)])
    np.testing.assert_allclose(linear_operator(t(a), t(T)).numpy(), literal_jacobian(A, T), atol=1e-15)
    B = g.random((2, 4, 4))
    B /= B.sum(-1, keepdims=True)
    np.testing.assert_allclose(linear_operator(t(B), t(T)).numpy(), literal_jacobian(B, T), atol=1e-15)
    raises_named(ShapeError, "attention", lambda: linear_operator(t(B[0, 0]), t(T)))
    raises_named(ShapeError, "attention", lambda: linear_operator(t(g.random((2, 4, 3))), t(T)))
    raises_named(ShapeError, "transports", lambda: linear_operator(t(B), t(T[:1])))


def test_dense_prediction_of_a_pure_fourier_mode():
    a = np.array([0.1, 0.6, 0.05, 0.05, 0.1, 0.05, 0.05])  # odd ring: no Nyquist k
    A = np.stack([[[a[(j - i) % 7] for j in range(7)] for i in range(7)]])
    J = literal_jacobian(A, np.array([[[-2.0]]]))
    ks, s, _, gap = literal_scalar_prediction(a, -2.0)
    p = predict_from_operator(t(J), 7, 1)
    assert p.method == "dense" and p.k_star == ks
    assert abs(p.growth_rate - s) <= 1e-12
    assert p.purity == pytest.approx(1.0, abs=1e-12)
    assert p.gap == pytest.approx(gap, rel=1e-9)
    assert p.pattern_class == TRAVELLING
    ev = np.linalg.eigvals(J)
    np.testing.assert_allclose(np.sort_complex(p.extra["eigenvalues"].numpy()), np.sort_complex(ev), atol=1e-12)
    msg = raises_named(ShapeError, "J", lambda: predict_from_operator(t(J), 4, 1))
    assert msg == "J: expected (4, 4) for n=4, d=1, got (7, 7)"


def test_dense_prediction_purity_of_a_mixed_mode():
    """J = diag block: the leading eigenvector is a localised bump, not a Fourier mode: purity < 1."""
    n = 4
    J = -np.eye(n)
    J[0, 0] = 0.5  # token 0 grows alone: w = e_0, |c_k|² = 1/16 for every k
    p = predict_from_operator(t(J), n, 1)
    assert p.growth_rate == pytest.approx(0.5, abs=1e-14)
    # k* = 0 carries 1/4 of the power (±k together: k = 0 alone)
    assert p.purity == pytest.approx(0.25, abs=1e-12)


# ------------------------------------------------------------------------------------- transient growth
def test_transient_growth_of_a_jordan_block_is_the_closed_form():
    a = 6.0
    J = np.array([[-1.0, a], [0.0, -1.0]])
    times = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 4.0])
    tg = transient_growth(t(J), times)
    # e^{tJ} = e^{−t} [[1, a t], [0, 1]]; ‖[[1, s], [0, 1]]‖₂ = (s + √(s² + 4)) / 2
    G = np.exp(-times) * (a * times + np.sqrt((a * times) ** 2 + 4)) / 2
    np.testing.assert_allclose(tg.norms.numpy(), G, rtol=1e-12)
    np.testing.assert_allclose(tg.times.numpy(), times, rtol=0)
    assert tg.spectral_abscissa == pytest.approx(-1.0, abs=1e-7)  # defective: eigvals to √eps
    assert tg.numerical_abscissa == pytest.approx(-1.0 + a / 2, rel=1e-13)
    i = int(np.argmax(G))
    assert tg.max_norm == pytest.approx(G[i], rel=1e-12) and tg.t_max == times[i]
    amp = (G * np.exp(times * -1.0 * -1.0)).max()  # max_t G(t) e^{−t·(−1)}
    assert tg.amplification == pytest.approx(amp, rel=1e-6)
    assert tg.amplification > 1


def test_transient_growth_of_a_normal_matrix_has_no_amplification():
    J = np.diag([-0.5, 0.2])
    times = [0.0, 1.0, 3.0]
    tg = transient_growth(t(J), times)
    np.testing.assert_allclose(tg.norms.numpy(), np.exp(0.2 * np.array(times)), rtol=1e-13)
    assert tg.amplification == pytest.approx(1.0, rel=1e-12)
    assert tg.t_max == 3.0


def test_transient_growth_bad_input_names_the_argument():
    raises_named(ShapeError, "J", lambda: transient_growth(torch.ones(2, 3, dtype=f64), [0.0]))
    raises_named(ShapeError, "times", lambda: transient_growth(torch.eye(2, dtype=f64), [[0.0, 1.0]]))
    raises_named(NonFiniteError, "times", lambda: transient_growth(torch.eye(2, dtype=f64), [0.0, math.inf]))
    raises_named(NonFiniteError, "J", lambda: transient_growth(torch.full((2, 2), math.nan, dtype=f64), [0.0]))


# ------------------------------------------------------------------------------------- discrete stacks
def test_effective_time_of_each_scheme():
    assert effective_time("euler", 0.3, 7) == pytest.approx(2.1, rel=1e-15)
    assert effective_time("postnorm", 0.5, 6) == pytest.approx(0.5 / 1.5 * 6, rel=1e-15)
    assert effective_time("prenorm", 0.5, 3) == pytest.approx(0.5 / 1.5 + 0.5 / 2.0 + 0.5 / 2.5, rel=1e-15)
    msg = raises_named(ParameterError, "scheme", lambda: effective_time("rk4", 0.1, 3))
    assert msg == "scheme: must be one of 'postnorm', 'prenorm', 'euler', got 'rk4'"
    for bad in (0.0, -0.1, math.inf, math.nan, "0.1", None):
        raises_named(ParameterError, "eta", lambda: effective_time("euler", bad, 3))


def scalar_stack_case():
    a = np.array([0.1, 0.6, 0.05, 0.05, 0.1, 0.05, 0.05])  # odd ring: no Nyquist k
    return a, -2.0


@pytest.mark.parametrize("scheme", ["euler", "postnorm", "prenorm"])
def test_discrete_selection_log_gain_is_the_product_of_per_layer_factors(scheme):
    a, tau = scalar_stack_case()
    n, eta, L = len(a), 0.4, 5
    mu = tau * hat(a)
    if scheme == "euler":
        lg = L * np.log(np.abs(1 + eta * (mu - 1)))
    elif scheme == "postnorm":
        lg = L * np.log(np.abs(1 + eta / (1 + eta) * (mu - 1)))
    else:
        lg = sum(np.log(np.abs(1 + eta / (1 + eta * (l + 1)) * (mu - 1))) for l in range(L))
    sel = discrete_selection(t(a[None]), t([[[tau]]]), eta=eta, layers=L, scheme=scheme)
    np.testing.assert_allclose(sel.log_gain[:, 0].numpy(), lg, rtol=1e-12)
    kd = abs(signed(int(np.argmax(lg)), n))
    kc = abs(signed(int(np.argmax(mu.real)), n))
    assert (sel.k_star, sel.k_continuous, sel.differs) == (kd, kc, kd != kc)
    other = max(lg[j] for j in range(n) if abs(signed(j, n)) != kd)
    assert sel.contrast == pytest.approx(lg.max() - other, rel=1e-12)
    gap_c = mu.real.max() - max(mu.real[j] for j in range(n) if abs(signed(j, n)) != kc)
    assert sel.time_needed == pytest.approx(math.log(10.0) / gap_c, rel=1e-12)
    assert sel.frozen == (sel.contrast < math.log(10.0))
    assert sel.effective_time == pytest.approx(effective_time(scheme, eta, L), rel=1e-15)
    assert (sel.scheme, sel.eta, sel.layers) == (scheme, eta, L)


def test_discrete_selection_min_contrast_sets_frozen_and_messages():
    a, tau = scalar_stack_case()
    sel = discrete_selection(t(a[None]), t([[[tau]]]), eta=0.4, layers=2, scheme="euler", min_contrast=1e6)
    assert sel.frozen
    assert any(m.startswith("euler stack: after 2 layers") for m in sel.messages())
    sel = discrete_selection(t(a[None]), t([[[tau]]]), eta=0.4, layers=2, scheme="euler", min_contrast=1.0001)
    assert not sel.frozen and not sel.differs and sel.messages() == []


def test_discrete_selection_bad_arguments():
    a, tau = scalar_stack_case()
    msg = raises_named(
        ParameterError, "layers", lambda: discrete_selection(t(a[None]), t([[[tau]]]), eta=0.1, layers=0)
    )
    assert msg == "layers: must be >= 1, got 0"
    msg = raises_named(ParameterError, "eta", lambda: discrete_selection(t(a[None]), t([[[tau]]]), eta=0.0, layers=3))
    assert msg == "eta: must be > 0.0, got 0.0"
    raises_named(
        ParameterError, "scheme", lambda: discrete_selection(t(a[None]), t([[[tau]]]), eta=0.1, layers=3, scheme="rk4")
    )
    sel = discrete_selection(t(3 * a[None]), t([[[tau]]]), eta=0.1, layers=3, scheme="euler", normalize=True)
    assert sel.layers == 3


# ------------------------------------------------------------------------------------- error messages
K2 = torch.tensor([[0.25, 0.75]], dtype=f64)
T1 = torch.eye(2, dtype=f64)[None]

BAD_INPUT = [
    (lambda: gaussian_kernel(1, 0.0, 1.0), "ParameterError", "n: must be >= 2, got 1"),
    (lambda: gaussian_kernel(4, 0.0, 0.0), "ParameterError", "width: must be > 0.0, got 0.0"),
    (lambda: kernel_from_bias(torch.tensor([1, 2])), "DTypeError", "bias: expected a floating tensor"),
    (lambda: kernel_from_bias(t([0.0, math.nan])), "NonFiniteError", "bias: contains 1 NaN/+inf entries"),
    (lambda: circulant(torch.tensor([1, 2])), "DTypeError", "kernels: expected a floating tensor"),
    (lambda: kernel_hat(torch.tensor([1, 2])), "DTypeError", "kernels: expected a floating tensor"),
    (lambda: validate_kernels(torch.tensor([[1, 0]])), "DTypeError", "kernels: expected a floating tensor"),
    (lambda: validate_kernels(K2[0]), "ShapeError", "kernels: expected shape (H, n), got (2,)"),
    (lambda: validate_kernels(K2[None]), "ShapeError", "kernels: expected shape (H, n), got (1, 1, 2)"),
    (
        lambda: validate_kernels(torch.ones(0, 3, dtype=f64)),
        "ShapeError",
        "kernels: H must be >= 1, got H=0 in shape (0, 3)",
    ),
    (
        lambda: validate_kernels(torch.ones(1, 1, dtype=f64)),
        "ShapeError",
        "kernels: n must be >= 2, got n=1 in shape (1, 1)",
    ),
    (lambda: validate_kernels(K2 * math.inf), "NonFiniteError", "kernels: contains 2 NaN/inf entries"),
    (lambda: validate_kernels(t([[1.5, -0.5]])), "NegativeWeightError", "kernels: has negative entries"),
    (
        lambda: validate_kernels(t([[0.0, 0.0]])),
        "NotStochasticError",
        "kernels: a kernel row sums to 0: not normalisable",
    ),
    (
        lambda: validate_kernels(t([[0.5, 0.6]])),
        "NotStochasticError",
        "kernels: kernel rows must sum to 1 (max |sum − 1| = 1.000e-01 > ",
    ),
    (
        lambda: validate_transports(torch.eye(2, dtype=torch.int64)[None]),
        "DTypeError",
        "transports: expected a floating tensor",
    ),
    (
        lambda: validate_transports(torch.eye(2, dtype=f64)),
        "ShapeError",
        "transports: expected shape (H, d, d), got (2, 2)",
    ),
    (
        lambda: validate_transports(torch.ones(1, 2, 3, dtype=f64)),
        "ShapeError",
        "transports: has d=2 and 3 in one shape (1, 2, 3)",
    ),
    (lambda: validate_transports(T1 * math.nan), "NonFiniteError", "transports: contains 4 NaN/inf entries"),
    (
        lambda: symbol(K2, T1.float()),
        "DTypeError",
        "transports: dtype torch.float32 differs from kernels's torch.float64; cast explicitly",
    ),
    (lambda: symbol(K2, T1.expand(2, 2, 2)), "ShapeError", "transports: has H=2 but kernels has H=1 (shape (2, 2, 2))"),
    (lambda: polarisation(torch.zeros(3)), "UndefinedError", "v: zero vector has no polarisation"),
    (lambda: linear_operator(torch.tensor([[1, 0]]), T1), "DTypeError", "attention: expected a floating tensor"),
    (lambda: linear_operator(K2[0], T1), "ShapeError", "attention: expected shape (H, n) or (H, n, n), got (2,)"),
    (
        lambda: linear_operator(torch.ones(1, 2, 3, dtype=f64), T1),
        "ShapeError",
        "attention: has n=2 and 3 in one shape (1, 2, 3)",
    ),
    (
        lambda: linear_operator(torch.ones(1, 2, 2), T1),
        "DTypeError",
        "attention: dtype torch.float32 differs from transports's torch.float64; cast explicitly",
    ),
    (
        lambda: predict_from_operator(torch.tensor([[1, 0], [0, 1]]), 2, 1),
        "DTypeError",
        "J: expected a floating tensor",
    ),
    (
        lambda: predict_from_operator(torch.ones(2, 3, dtype=f64), 2, 1),
        "ShapeError",
        "J: has N=2 and 3 in one shape (2, 3)",
    ),
    (
        lambda: predict_from_operator(torch.full((2, 2), math.nan, dtype=f64), 2, 1),
        "NonFiniteError",
        "J: contains 4 NaN/inf entries",
    ),
    (lambda: transient_growth(torch.tensor([[1, 0], [0, 1]]), [0.0]), "DTypeError", "J: expected a floating tensor"),
    (
        lambda: transient_growth(torch.ones(2, 3, dtype=f64), [0.0]),
        "ShapeError",
        "J: has N=2 and 3 in one shape (2, 3)",
    ),
    (
        lambda: transient_growth(torch.full((2, 2), math.inf, dtype=f64), [0.0]),
        "NonFiniteError",
        "J: contains 4 NaN/inf entries",
    ),
    (
        lambda: transient_growth(torch.eye(2, dtype=f64), [[0.0, 1.0]]),
        "ShapeError",
        "times: expected shape (T), got (1, 2)",
    ),
    (lambda: transient_growth(torch.eye(2, dtype=f64), 1.0), "ShapeError", "times: expected shape (T), got ()"),
    (
        lambda: transient_growth(torch.eye(2, dtype=f64), [0.0, math.nan]),
        "NonFiniteError",
        "times: contains 1 NaN/inf entries",
    ),
    (
        lambda: effective_time("rk4", 0.1, 3),
        "ParameterError",
        "scheme: must be one of 'postnorm', 'prenorm', 'euler', got 'rk4'",
    ),
    (lambda: effective_time("euler", 0.0, 3), "ParameterError", "eta: must be > 0.0, got 0.0"),
    (lambda: discrete_selection(K2, T1, eta=0.1, layers=0), "ParameterError", "layers: must be >= 1, got 0"),
    (lambda: discrete_selection(K2, T1, eta=-0.1, layers=2), "ParameterError", "eta: must be > 0.0, got -0.1"),
    (
        lambda: discrete_selection(K2, T1, eta=0.1, layers=2, scheme="rk4"),
        "ParameterError",
        "scheme: must be one of 'postnorm', 'prenorm', 'euler', got 'rk4'",
    ),
    (
        lambda: discrete_selection(K2, T1.expand(2, 2, 2), eta=0.1, layers=2),
        "ShapeError",
        "transports: has H=2 but kernels has H=1 (shape (2, 2, 2))",
    ),
    (lambda: predict_pattern(K2 * 2, T1), "NotStochasticError", "kernels: kernel rows must sum to 1"),
    (lambda: naive_per_head_growth(K2, T1.float()), "DTypeError", "transports: dtype torch.float32 differs"),
]


@pytest.mark.parametrize("call, err, message", BAD_INPUT)
def test_bad_input_messages_name_the_argument_and_what_was_expected(call, err, message):
    assert_bad_input(call, err, message)


# ------------------------------------------------------------------------------------- dense route, continued
def circulant_np(a):
    n = len(a)
    return np.array([[a[(j - i) % n] for j in range(n)] for i in range(n)])


def test_dense_default_tie_tol_is_tol_times_sqrt_nd():
    """Default ``tie_tol = tol(dtype, n·d, scale=max(1, max|λ|))·√(n·d)`` (the docstring's rule)."""
    small = np.diag([0.5, -0.3, -0.2, -0.1, 0.0, -0.4])  # n = 3, d = 2, max|λ| = 0.5 < 1
    p = predict_from_operator(t(small), 3, 2)
    assert p.tie_tol == pytest.approx(tol(f64, 6, scale=1.0) * math.sqrt(6), rel=1e-12, abs=0)
    assert p.n == 3 and p.d == 2
    big = np.diag([3.0, -1.0, -2.0, -0.5, 0.0, -0.4])  # max|λ| = 3: the scale enters
    p = predict_from_operator(t(big), 3, 2)
    assert p.tie_tol == pytest.approx(tol(f64, 6, scale=3.0) * math.sqrt(6), rel=1e-12, abs=0)
    p = predict_from_operator(torch.tensor(small, dtype=torch.float32), 3, 2)
    assert p.tie_tol == pytest.approx(tol(torch.float32, 6, scale=1.0) * math.sqrt(6), rel=1e-6, abs=0)


def test_dense_explicit_tie_tol_decides_the_tie_and_is_reported():
    # J = [[0, b], [b, 0]]: λ = b at k = 0 (vector (1, 1)), −b at k = 1 (vector (1, −1))
    J = t([[0.0, -0.05], [-0.05, 0.0]])
    loose = predict_from_operator(J, 2, 1, tie_tol=0.2)
    assert loose.tie is True and loose.tie_tol == 0.2 and loose.d == 1
    assert loose.pattern_class == COEXISTING
    assert isinstance(loose.ties, list) and len(loose.ties) == 2
    assert sorted((k, round(s.real, 12), round(s.imag, 12)) for k, s in loose.ties) == [(0, -0.05, 0.0), (1, 0.05, 0.0)]
    assert loose.k_star == 1 and loose.growth_rate == pytest.approx(0.05, abs=1e-15)
    tight = predict_from_operator(J, 2, 1, tie_tol=0.05)
    assert tight.tie is False and tight.ties == [(1, pytest.approx(0.05, abs=1e-15))]
    assert tight.pattern_class == STATIONARY
    assert tight.gap == pytest.approx(0.1, abs=1e-15)


def test_dense_zero_tie_tol_keeps_the_leading_eigenvalue():
    J = np.diag([0.3, -0.2, -0.7])
    p = predict_from_operator(t(J), 3, 1, tie_tol=0.0)
    assert p.growth_rate == pytest.approx(0.3, abs=0) and p.tie is False and p.tie_tol == 0.0
    assert p.gap == pytest.approx(0.5, abs=1e-15)


def test_dense_purity_is_the_power_share_of_the_literal_dft():
    """J = 2uuᵀ/|u|² − I: leading eigenvector u = (3, 1, 0, 0), λ = 1, all others −1.

    c_k = (1/4) Σ_i u_i e^{−2πiki/4} = (1, (3 − i)/4, 1/2, (3 + i)/4): |c_k|² = (16, 10, 4, 10)/16,
    so k* = 0 with purity 16/40."""
    u = np.array([3.0, 1.0, 0.0, 0.0])
    J = 2 * np.outer(u, u) / (u @ u) - np.eye(4)
    c = np.array([sum(u[i] * cmath.exp(-2j * math.pi * k * i / 4) for i in range(4)) / 4 for k in range(4)])
    np.testing.assert_allclose(np.abs(c) ** 2, np.array([16, 10, 4, 10]) / 16, atol=1e-15)
    p = predict_from_operator(t(J), 4, 1)
    assert p.k_star == 0 and p.growth_rate == pytest.approx(1.0, abs=1e-14)
    assert p.purity == pytest.approx(0.4, abs=1e-14)
    assert p.gap == pytest.approx(2.0, abs=1e-14)


def test_dense_gap_masks_only_the_leading_pattern():
    """Spectrum {0.5, −0.5, −0.9}: the gap is 0.5 − (−0.5) = 1 (−0.5 = −σ̄ is a different mode)."""
    p = predict_from_operator(t(np.diag([0.5, -0.5, -0.9])), 3, 1)
    assert p.gap == pytest.approx(1.0, abs=1e-15)
    assert p.purity == pytest.approx(1 / 3, abs=1e-15)  # e_0: equal power at every k


def test_dense_eigenvector_is_the_fourier_coefficient_over_tokens():
    """Ring with d = 2 through the dense route: ``v`` ∝ the eigenvector of the literal symbol
    ``M(k*) = â(k*) T`` for σ, with ``k*`` and σ of the literal dispersion."""
    a = np.array([0.1, 0.6, 0.1, 0.1, 0.1])  # asymmetric: the leading pair is complex, k = ±2
    T = np.array([[0.2, 0.4], [0.1, -2.0]])
    n, d = 5, 2
    J = literal_jacobian(circulant_np(a)[None], T[None])
    best = None
    for k in range(n):
        ev, V = np.linalg.eig(hat(a)[k] * T)
        for b in range(d):
            if best is None or ev[b].real > best[0].real + 1e-12:
                best = (ev[b], k, V[:, b])
    lam, k, u = best
    assert signed(k, n) == 2  # representative k* > 0 of the pair (2, σ), (−2, σ̄)
    p = predict_from_operator(t(J), n, d)
    assert p.k_star == 2 and p.d == 2 and p.method == "dense"
    assert abs(p.growth_rate - (lam - 1)) <= 1e-12
    v = p.eigenvector.numpy()
    u = u / np.linalg.norm(u)
    assert abs(abs(np.vdot(u, v)) - 1) <= 1e-12  # same complex line
    assert p.polarisation == pytest.approx(abs(u @ u) / np.vdot(u, u).real, abs=1e-12)
    assert p.purity == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------------------------- transient growth, continued
def test_transient_growth_times_take_the_dtype_of_j():
    J = torch.tensor([[-1.0, 2.0], [0.0, -1.0]], dtype=torch.float32)
    tg = transient_growth(J, [0.0, 0.5])  # a list: float64 before the cast
    assert tg.times.dtype == torch.float32 and tg.norms.dtype == torch.float32
    G = np.exp(-0.5) * (1.0 + math.sqrt(1.0 + 4)) / 2  # ‖e^{−t}[[1, 2t], [0, 1]]‖₂ at t = 1/2
    assert float(tg.norms[1]) == pytest.approx(G, rel=1e-6)
    # 1e39 overflows float32: the cast times are not finite and are refused by name
    msg = raises_named(NonFiniteError, "times", lambda: transient_growth(J, t([0.0, 1e39])))
    assert msg == "times: contains 1 NaN/inf entries"


def test_transient_growth_memory_budget_edge(monkeypatch):
    """3 · T · N² · element_size bytes: 3 · 3 · 4 · 8 = 288 for three times and a 2×2 float64 J."""
    J = t([[-1.0, 1.0], [0.0, -2.0]])
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "288")
    assert transient_growth(J, [0.0, 1.0, 2.0]).norms.shape == (3,)
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "287")
    msg = raises_named(MemoryBudgetError, "times", lambda: transient_growth(J, [0.0, 1.0, 2.0]))
    assert msg == (
        f"times: 3 dense matrix exponentials of size 2 would take {288 / 2**30:.3g} GiB, over the memory "
        f"budget of {287 / 2**30:.3g} GiB (set $CONNWALK_MEMORY_BUDGET to change it); use fewer times instead"
    )


def test_linear_operator_memory_budget_edge(monkeypatch):
    """3 · (n·d)² · element_size bytes: 3 · 6² · 8 = 864 for n = 3, d = 2 in float64."""
    A = t(np.full((1, 3, 3), 1 / 3))
    T = t(np.eye(2)[None])
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "864")
    assert linear_operator(A, T).shape == (6, 6)
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "863")
    msg = raises_named(MemoryBudgetError, "attention", lambda: linear_operator(A, T))
    assert msg == (
        f"attention: the dense (nd)×(nd) Jacobian (n=3, d=2) would take {864 / 2**30:.3g} GiB, over the memory "
        f"budget of {863 / 2**30:.3g} GiB (set $CONNWALK_MEMORY_BUDGET to change it); use predict_pattern "
        "(FFT, ring kernels) or numerics.spectra on a ConnectionWalk instead"
    )


def test_linear_operator_refuses_attention_rows_that_do_not_sum_to_one():
    """J = walk − I holds for row-stochastic heads (H1, H2): 5·A (rows summing to 5) was accepted. Rows are
    judged three ways (:func:`numerics.tolerance.judge`): one ulp off 1 is rounding, kept."""
    A = np.full((1, 3, 3), 1 / 3)
    T = t(np.eye(2)[None])
    msg = raises_named(NotStochasticError, "attention", lambda: linear_operator(t(5 * A), T))
    assert msg.startswith("attention: rows must sum to 1 (max |sum − 1| = 4.000e+00 > ")
    B = A.copy()
    B[0, 2] = [0.5, 0.5, 1e-3]
    raises_named(NotStochasticError, "attention", lambda: linear_operator(t(B), T))
    B[0, 2] = [0.5, 0.5 + 2.0**-53, 0.0]
    assert linear_operator(t(B), T).shape == (6, 6)


def test_linear_operator_renames_kernel_errors_to_attention():
    T = t(np.eye(2)[None])
    msg = raises_named(NotStochasticError, "attention", lambda: linear_operator(t([[0.5, 0.6]]), T))
    assert msg.startswith("attention: kernel rows must sum to 1 (max |sum − 1| = 1.000e-01 > ")
    assert msg.endswith("); pass normalize=True to normalise explicitly") and "kernels" not in msg
    # a message with a second ': ' keeps it (only the argument prefix is replaced)
    msg = raises_named(NotStochasticError, "attention", lambda: linear_operator(t([[0.0, 0.0]]), T))
    assert msg == "attention: a kernel row sums to 0: not normalisable"


def test_naive_per_head_growth_does_not_normalise_by_default():
    K = t([[0.5, 1.5]])
    T = t([[[2.0]]])
    raises_named(NotStochasticError, "kernels", lambda: naive_per_head_growth(K, T))
    g = naive_per_head_growth(K, T, normalize=True)  # a = (1/4, 3/4): â = (1, −1/2), g = 2â − 1
    np.testing.assert_allclose(g.numpy(), [1.0, -2.0], atol=1e-15)


def test_dense_tie_reports_the_largest_growth_not_the_largest_k():
    # J = [[0, b], [b, 0]], b > 0: λ = b at k = 0, −b at k = 1; both tied under tie_tol = 0.2
    p = predict_from_operator(t([[0.0, 0.05], [0.05, 0.0]]), 2, 1, tie_tol=0.2)
    assert p.tie is True and p.k_star == 0 and p.growth_rate == pytest.approx(0.05, abs=1e-15)


def test_dispersion_does_not_normalise_by_default():
    K = t([[0.5, 1.5]])
    T = t([[[2.0]]])
    raises_named(NotStochasticError, "kernels", lambda: dispersion(K, T))
    sig = dispersion(K, T, normalize=True)  # a = (1/4, 3/4): σ = 2â − 1 = (1, −2)
    np.testing.assert_allclose(sig[:, 0].numpy(), [1.0, -2.0], atol=1e-15)


# ------------------------------------------------------------------------------------- FFT route, every field
def rot(theta):
    return np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])


def literal_ring(a, T):
    """σ(k, b) = eig(â(k) T) − 1 of one head by numpy; returns (σ (n, d), eigenvectors (n, d, d))."""
    ah = hat(np.asarray(a, dtype=float))
    pairs = [np.linalg.eig(ah[k] * T) for k in range(len(a))]
    return np.array([ev - 1 for ev, _ in pairs]), np.array([V for _, V in pairs])


def canonical(k, s, n):
    ks = signed(k, n)
    if ks == 0 or (n % 2 == 0 and abs(ks) == n // 2):
        return (ks, s.conjugate()) if s.imag < 0 else (ks, s)
    return (-ks, s.conjugate()) if ks < 0 else (ks, s)


def check_fields(p, a, T, k_star, sigma, u, ttol):
    """Every field of ``p`` against the literal selected mode ``(k*, σ, u)`` (u an eigenvector of M(k*))."""
    n, d = len(a), T.shape[-1]
    sig, _ = literal_ring(a, T)
    assert (p.n, p.d, p.k_star, p.method, p.purity) == (n, d, k_star, "fft", 1.0)
    assert abs(p.growth_rate - sigma) <= 1e-13 and p.growing == (sigma.real > 0)
    assert p.tie_tol == pytest.approx(ttol, rel=1e-12, abs=0)
    rotating_pol = abs(u @ u) / np.vdot(u, u).real
    assert p.polarisation == pytest.approx(rotating_pol, abs=1e-12)
    freq = sigma.imag if abs(sigma.imag) > ttol else 0.0
    assert p.frequency == pytest.approx(freq, abs=1e-13)
    rotating = rotating_pol < 1 - 1e-6 and abs(sigma.imag) > ttol
    assert p.rotation_frequency == (pytest.approx(freq, abs=1e-13) if rotating else 0.0)
    c = 0.0 if k_star == 0 else -n * freq / (2 * math.pi * k_star)
    assert p.phase_velocity == pytest.approx(c, abs=1e-12)
    v = p.eigenvector.numpy()
    assert abs(np.linalg.norm(v) - 1) <= 1e-14 and abs(abs(np.vdot(u / np.linalg.norm(u), v)) - 1) <= 1e-12
    vv = v @ v  # phase fixed: vᵀv real ≥ 0
    assert abs(vv.imag) <= 1e-14 and vv.real >= -1e-15
    phases = np.exp(2j * math.pi * k_star * np.arange(n) / n)
    np.testing.assert_allclose(p.mode.numpy(), phases[:, None] * v[None, :], atol=1e-14)
    assert p.rotation_plane.dtype == torch.float64
    np.testing.assert_allclose(p.rotation_plane.numpy(), np.stack([v.real, -v.imag]), atol=0)
    selfconj = k_star == 0 or 2 * abs(k_star) == n
    assert p.conjugate_pair == (not (selfconj and abs(sigma.imag) <= ttol))
    # gaps: best growth of a different real pattern / of a different |k|
    reps = [(canonical(k, sig[k, b], n), k) for k in range(n) for b in range(d)]
    other = [s.real for (kc, s), _ in reps if not (kc == k_star and abs(s - sigma) <= ttol)]
    assert p.gap == pytest.approx(sigma.real - max(other), abs=1e-12)
    diff = [(s.real, abs(kc)) for (kc, s), _ in reps if abs(kc) != abs(k_star)]
    r_re, r_k = max(diff)
    assert p.gap_k == pytest.approx(sigma.real - r_re, abs=1e-12) and p.runner_up_k == r_k
    # rows sorted by decreasing real part (branches of equal real part in either order)
    got = p.dispersion.numpy()
    assert all((np.diff(row.real) <= 1e-13).all() for row in got)
    key = lambda z: (round(-z.real, 9), z.imag)
    for row, ref in zip(got, sig):
        np.testing.assert_allclose(sorted(row, key=key), sorted(ref, key=key), atol=1e-13)


@pytest.mark.parametrize(
    ("re", "growth"), [(2.0, "holds"), (1.0, "undecided"), (0.5, "undecided"), (-0.5, "undecided"), (-1.0, "fails")]
)
def test_growing_is_decided_with_the_predictions_own_tie_tolerance(re, growth):
    """``Re σ`` within ``tie_tol`` of 0 is no growth and no decay the prediction can tell (as ``|Im σ| ≤
    tie_tol`` is no rotation): ``growing`` once read ``Re σ > 0`` and called ``tie_tol / 2`` growing."""
    from dataclasses import replace

    from numerics.errors import UndecidedTruthError

    p = predict_pattern(t([[0.1, 0.5, 0.1, 0.1, 0.1, 0.1]]), t(1.5 * rot(2.0)[None]))
    q = replace(p, growth_rate=complex(re * p.tie_tol, 0.3))
    assert q.growth == growth
    if growth == "undecided":
        with pytest.raises(UndecidedTruthError, match="within tie_tol"):
            q.growing  # noqa: B018
    else:
        assert q.growing == (growth == "holds")


def test_travelling_helix_every_field_from_the_literal_symbol():
    a = [0.1, 0.5, 0.1, 0.1, 0.1, 0.1]  # asymmetric: â complex, one handedness
    T = 1.5 * rot(2.0)
    sig, V = literal_ring(a, T)
    k, b = 2, int(np.argmax(sig[2].real))  # the best pair is k = ±2 (k = 2 is the representative)
    assert sig[2, b].real == pytest.approx(sig.real.max(), abs=1e-14)
    p = predict_pattern(t([a]), t(T[None]))
    ttol = tol(f64, 12, scale=max(1.0, np.abs(sig).max()))
    check_fields(p, a, T, 2, sig[k, b], V[k][:, b], ttol)
    assert p.pattern_class == TRAVELLING_HELIX and p.tie is False and p.ties == [(2, pytest.approx(sig[k, b]))]
    assert p.rotation_frequency != 0.0


def test_rotating_cluster_every_field_from_the_literal_symbol():
    a = [0.3, 0.2, 0.1, 0.1, 0.1, 0.2]
    T = 1.5 * rot(0.3)  # k = 0: σ = 1.5 e^{±0.3i} − 1, Re σ > 0; the representative has Im σ > 0
    sig, V = literal_ring(a, T)
    b = int(np.argmax(sig[0].imag))
    p = predict_pattern(t([a]), t(T[None]))
    ttol = tol(f64, 12, scale=max(1.0, np.abs(sig).max()))
    check_fields(p, a, T, 0, sig[0, b], V[0][:, b], ttol)
    assert p.pattern_class == ROTATING_CLUSTER and p.conjugate_pair and p.phase_velocity == 0.0
    assert p.growth_rate.imag > 0 and p.growing


def test_standing_helix_ties_the_two_branches_of_one_wavenumber():
    a = [0.2, 0.4, 0.0, 0.0, 0.4]  # symmetric: â real, â(±2) = 0.2 + 0.8 cos(4π/5) < 0
    T = -2.0 * rot(0.4)  # M(±2) = −2â R(0.4): σ = x ± iy at the same k
    sig, V = literal_ring(a, T)
    p = predict_pattern(t([a]), t(T[None]))
    ttol = tol(f64, 10, scale=max(1.0, np.abs(sig).max()))
    assert p.tie is True and p.pattern_class == STANDING_HELIX and p.k_star == 2
    assert sorted((k, round(s.imag, 10)) for k, s in p.ties) == sorted((2, round(s.imag, 10)) for s in sig[2])
    b = int(np.argmin(np.abs(sig[2] - p.growth_rate)))
    check_fields(p, a, T, 2, sig[2, b], V[2][:, b], ttol)


def test_float32_ring_is_computed_in_complex64():
    a = [0.1, 0.5, 0.1, 0.1, 0.1, 0.1]
    T = 1.5 * rot(2.0)
    p = predict_pattern(torch.tensor([a], dtype=torch.float32), torch.tensor(T[None], dtype=torch.float32))
    sig, _ = literal_ring(a, T)
    assert p.dispersion.dtype == torch.complex64 and p.eigenvector.dtype == torch.complex64
    assert p.k_star == 2 and abs(p.growth_rate - sig[2, np.argmax(sig[2].real)]) <= 1e-5
    assert p.tie_tol == pytest.approx(tol(torch.float32, 12, scale=max(1.0, np.abs(sig).max())), rel=1e-5, abs=0)


# ------------------------------------------------------------------------------------- canonical representatives
@pytest.mark.parametrize(
    "k, sigma, n, expect",
    [
        (2, 1 + 2j, 5, (2, 1 + 2j, False)),  # k = n//2 of an odd ring is an ordinary k > 0
        (2, 1 - 2j, 5, (2, 1 - 2j, False)),  # … even with Im σ < 0 (only k ∈ {0, n/2} flip on Im σ)
        (3, 1 + 2j, 5, (2, 1 - 2j, True)),  # FFT index 3 ≡ −2: conjugated
        (-2, 1 + 2j, 5, (2, 1 - 2j, True)),  # signed −2: the same
        (0, 1 - 2j, 4, (0, 1 + 2j, True)),  # self-conjugate k = 0: Im σ ≥ 0
        (0, 1 + 0j, 4, (0, 1 + 0j, False)),  # real σ at k = 0: nothing to flip
        (2, 1 - 2j, 4, (2, 1 + 2j, True)),  # Nyquist k = n/2 of an even ring
        (2, 1 + 0j, 4, (2, 1 + 0j, False)),
        (3, 1 - 2j, 4, (1, 1 + 2j, True)),
        (1, 1 - 2j, 4, (1, 1 - 2j, False)),
    ],
)
def test_canonical_pattern_cases(k, sigma, n, expect):
    got = canonical_pattern(k, sigma, n)
    assert got == expect and type(got[0]) is int and isinstance(got[1], complex)


def test_distinct_patterns_merges_conjugate_partners_only():
    a = 0.5 + 0.25j
    assert distinct_patterns([1, 4], [a, a.conjugate()], 5, 0.0) == [(1, a)]
    assert distinct_patterns([1, 4], [a, a], 5, 0.0) == [(1, a), (1, a.conjugate())]
    # merged when |Δσ| equals the tolerance exactly (0.25 is exact in binary)
    assert distinct_patterns([1, 1], [0.5 + 0j, 0.75 + 0j], 5, 0.25) == [(1, 0.5 + 0j)]
    assert distinct_patterns([1, 1], [0.5 + 0j, 0.75 + 0j], 5, 0.125) == [(1, 0.5 + 0j), (1, 0.75 + 0j)]
    assert distinct_patterns([0, 2], [0.5 + 0j, 0.5 + 0j], 4, 0.0) == [(0, 0.5 + 0j), (2, 0.5 + 0j)]
    assert distinct_patterns([], [], 4, 0.0) == []


@pytest.mark.parametrize(
    "k_star, sigma, pol, tie, ties, expect",
    [
        (1, 0.1 + 0.2j, 1.0, True, [(1, 0.1 + 0.2j), (1, 0.1 - 0.2j)], STANDING),
        (1, 0.1 + 0.2j, 1 - 1e-6, True, [(1, 0.1 + 0.2j), (1, 0.1 - 0.2j)], STANDING),  # at the bound: linear
        (1, 0.1 + 0.2j, 0.5, True, [(1, 0.1 + 0.2j), (1, 0.1 - 0.2j)], STANDING_HELIX),
        (1, 0.1 + 0.0j, 0.5, True, [(1, 0.1 + 0.0j), (1, 0.1 + 0.2j)], STANDING),  # real σ: not rotating
        (1, 0.1 + 0.2j, 1.0, True, [(1, 0.1 + 0.2j), (2, 0.1 - 0.2j)], COEXISTING),  # different |k|
        (1, 0.1 + 0.2j, 1.0, True, [(1, 0.1), (1, 0.1 + 0.2j), (1, 0.1 - 0.2j)], COEXISTING),  # three
        (0, 0.1 + 0.2j, 1.0, True, [(0, 0.1 + 0.2j), (0, 0.1 + 0.3j)], COEXISTING),  # k* = 0
        (0, 0.1 + 0.2j, 1.0, False, [(0, 0.1 + 0.2j)], ROTATING_CLUSTER),
        (0, 0.1 + 1e-3j, 1.0, False, [(0, 0.1 + 1e-3j)], CLUSTER),  # |Im σ| = tie_tol: not rotating
        (2, 0.1 + 1e-3j, 0.5, False, [(2, 0.1 + 1e-3j)], STATIONARY),  # |Im σ| = tie_tol: real
        (2, 0.1 + 2e-3j, 1.0, False, [(2, 0.1 + 2e-3j)], TRAVELLING),
        (2, 0.1 + 2e-3j, 1 - 1e-6, False, [(2, 0.1 + 2e-3j)], TRAVELLING),
        (2, 0.1 + 2e-3j, 0.9, False, [(2, 0.1 + 2e-3j)], TRAVELLING_HELIX),
        (-2, 0.1 - 2e-3j, 0.9, False, [(-2, 0.1 - 2e-3j)], TRAVELLING_HELIX),
    ],
)
def test_classification_rules_at_their_edges(k_star, sigma, pol, tie, ties, expect):
    assert _classify_prediction(k_star, sigma, pol, tie, ties, 5, 1e-3) == expect


def test_polarisation_values_and_dtype():
    assert polarisation(torch.tensor([1.0 + 0j, 0.0])) == pytest.approx(1.0, abs=1e-15)
    assert polarisation(torch.tensor([1.0 + 0j, 1j])) == pytest.approx(0.0, abs=1e-15)
    v = torch.tensor([2.0 + 0j, 1j], dtype=torch.complex64)  # |4 − 1| / (4 + 1)
    assert polarisation(v) == pytest.approx(0.6, abs=1e-7)
    assert isinstance(polarisation(v), float)


def test_nyquist_helix_every_field_from_the_literal_symbol():
    a = [0.1, 0.4, 0.1, 0.4]  # â = (1, 0, −0.6, 0): the Nyquist k = 2 carries the most negative â
    T = -2.0 * rot(0.4)  # σ(2) = 1.2 e^{±0.4i} − 1: a conjugate pair at the self-conjugate k = n/2
    sig, V = literal_ring(a, T)
    b = int(np.argmax(sig[2].imag))
    p = predict_pattern(t([a]), t(T[None]))
    ttol = tol(f64, 8, scale=max(1.0, np.abs(sig).max()))
    check_fields(p, a, T, 2, sig[2, b], V[2][:, b], ttol)
    assert p.conjugate_pair and p.tie is False and p.growth_rate.imag > 0
    assert p.gap == pytest.approx(sig[2, b].real - sig[1].real.max(), abs=1e-12)


def test_ring_zero_tie_tol_and_an_all_tied_ring():
    a = np.array([0.1, 0.6, 0.05, 0.05, 0.1, 0.05, 0.05])
    ks, s, _, gap = literal_scalar_prediction(a, -2.0)
    p = predict_pattern(t(a[None]), t([[[-2.0]]]), tie_tol=0.0)
    assert p.k_star == ks and abs(p.growth_rate - s) <= 1e-13 and p.tie is False and p.tie_tol == 0.0
    assert p.gap == pytest.approx(gap, rel=1e-10)  # the selected pattern itself is excluded at tie_tol = 0
    # everything tied: the report is still the literal best, and every distinct pattern is listed
    q = predict_pattern(t(a[None]), t([[[-2.0]]]), tie_tol=100.0)
    assert q.k_star == ks and abs(q.growth_rate - s) <= 1e-13 and q.tie is True
    assert q.pattern_class == COEXISTING and len(q.ties) == 4  # k = 0 and the pairs ±1, ±2, ±3


@pytest.mark.parametrize("swap", [False, True])
def test_exact_tie_reports_the_first_wavenumber_in_fft_order(swap):
    """Two heads on orthogonal branches, growth exactly 0 at k = 0 (uniform kernel, T = +1) and at
    k = ±1 (kernel δ_{m=2}: â(k) = (−1)^k, T = −1): the documented representative of an exact tie is
    the first in FFT order, k* = 0, whichever branch carries it."""
    K = t([[0.25] * 4, [0.0, 0.0, 1.0, 0.0]])
    up, down = np.diag([1.0, 0.0]), np.diag([0.0, -1.0])
    if swap:
        up, down = up[::-1, ::-1].copy(), down[::-1, ::-1].copy()
    p = predict_pattern(K, t(np.stack([up, down])))
    assert p.tie is True and p.pattern_class == COEXISTING
    assert p.k_star == 0 and p.growth_rate == 0
    assert sorted(k for k, _ in p.ties) == [0, 1]


def test_eigenvector_phase_makes_vtv_real_and_nonnegative():
    """``v`` unit with ``vᵀv = |vᵀv| = polarisation`` (phase fixed), for a d = 1 wave (v = ±1) and
    for an elliptic d = 2 mode (T with complex eigenvalues and non-circular eigenvectors)."""
    a = np.array([0.1, 0.6, 0.05, 0.05, 0.1, 0.05, 0.05])
    v = complex(predict_pattern(t(a[None]), t([[[-2.0]]])).eigenvector[0])
    assert abs(v.imag) <= 1e-15 and abs(abs(v.real) - 1) <= 1e-15
    # eigenvalues (1 ± i√7)/2, eigenvectors ∝ (1, −λ/2): elliptic, and vᵀv of LAPACK's normalisation
    # (largest entry real) is not real, so the phase fix has work to do
    T = np.array([[0.0, -2.0], [1.0, 1.0]])
    p = predict_pattern(t(a[None]), t(T[None]))
    v = p.eigenvector.numpy()
    vv = v @ v
    assert 0.1 < p.polarisation < 0.9
    assert abs(vv.imag) <= 1e-14 and vv.real == pytest.approx(p.polarisation, abs=1e-14)
    assert abs(np.linalg.norm(v) - 1) <= 1e-14


def test_growth_imaginary_part_at_the_tie_tolerance_counts_as_zero_frequency():
    a = [0.1, 0.5, 0.1, 0.1, 0.1, 0.1]
    T = 1.5 * rot(2.0)
    p0 = predict_pattern(t([a]), t(T[None]))
    assert abs(p0.growth_rate.imag) > 1e-3
    p = predict_pattern(t([a]), t(T[None]), tie_tol=abs(p0.growth_rate.imag))
    assert p.growth_rate == p0.growth_rate
    assert p.frequency == 0.0 and p.phase_velocity == 0.0 and p.rotation_frequency == 0.0
