"""Small deterministic cases for the dense T3 diagnostics (numerics.laplacian, laplacian_checks,
laplacian_dense), each judged by an independent float64 oracle: numpy's eigenvalues / singular
values of the literal ``Δ`` and constraint matrix ``C`` built by loops, closed forms, and the
tolerance rule of numerics.tolerance. Written to pin down what mutation testing found unchecked:
exact residual values, the tolerances they are compared with, reasons, and batched inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from numerics.laplacian_checks import Check, make_check
from numerics.laplacian_dense import dense_kernel, dense_spectrum
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk

F = torch.float64


def t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def literal_delta(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    """``Δ = I − W`` token-major, block (i, j) = −P_ij O_ij (+ I on the diagonal), by loops."""
    n, d = O.shape[0], O.shape[-1]
    L = np.eye(n * d)
    for i in range(n):
        for j in range(n):
            L[i * d : (i + 1) * d, j * d : (j + 1) * d] -= P[i, j] * O[i, j]
    return L


def literal_constraints(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    """``C`` with block row (i, j) = e_iᵀ ⊗ I − e_jᵀ ⊗ O_ij on edges P_ij > 0, 0 elsewhere."""
    n, d = O.shape[0], O.shape[-1]
    C = np.zeros((n * n * d, n * d))
    for i in range(n):
        for j in range(n):
            if P[i, j] > 0:
                r = (i * n + j) * d
                C[r : r + d, i * d : (i + 1) * d] += np.eye(d)
                C[r : r + d, j * d : (j + 1) * d] -= O[i, j]
    return C


def rot(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def triangle(theta: float, lazy: float = 1 / 3):
    """n = 3, P_ii = lazy, P_ij = (1 − lazy)/2, O_ij = R(θ) (i < j), R(θ)ᵀ (i > j), I on the
    diagonal: metric-compatible, holonomy R(θ) around the triangle (no parallel section unless θ = 0)."""
    P = np.full((3, 3), (1 - lazy) / 2)
    np.fill_diagonal(P, lazy)
    O = np.empty((3, 3, 2, 2))
    for i in range(3):
        for j in range(3):
            O[i, j] = np.eye(2) if i == j else (rot(theta) if i < j else rot(theta).T)
    return P, O


# ------------------------------------------------------------------------------ laplacian_dense.dense_spectrum
def _schur(blocks) -> np.ndarray:
    """Real block-diagonal matrix with eigenvalues a ± ib for each (a, b) (b = 0: one real a)."""
    parts = [np.array([[a, -b], [b, a]]) if b else np.array([[a]]) for a, b in blocks]
    n = sum(p.shape[0] for p in parts)
    M, k = np.zeros((n, n)), 0
    for p in parts:
        M[k : k + p.shape[0], k : k + p.shape[0]] = p
        k += p.shape[0]
    return M


def spectral_oracle(D: np.ndarray, s: float):
    ev = np.linalg.eigvals(D)
    im = np.abs(ev.imag).max()
    interval = max(im, max(0.0, -ev.real.min(), ev.real.max() - 2))
    disk = max(0.0, np.abs(ev - 1).max() - 1)
    scaled = max(im, max(0.0, (1 - s) - ev.real.min(), ev.real.max() - (1 + s)))
    return ev, interval, disk, scaled


def test_dense_spectrum_residuals_and_tolerance_match_numpy_on_a_batch():
    # element 0: eigenvalues 1 ± 0.3i, 2.2, −0.6 (outside [0, 2] on both sides); element 1:
    # 0.5 ± 0.9i, 1.0, 1.5 (inside [0, 2] but complex; |z − 1| = √1.06 > 1)
    D0 = _schur([(1.0, 0.3), (2.2, 0), (-0.6, 0)])
    D1 = _schur([(0.5, 0.9), (1.0, 0), (1.5, 0)])
    D = t(np.stack([D0, D1]))
    Wd = torch.eye(4, dtype=F) - D
    scale = t([0.5, 0.7])
    si = make_check("scaled_isometry", t([0.0, 0.0]), 1e-12)
    ev, (s_int, s_disk, s_sc) = dense_spectrum(D, Wd, scale, si, F, 4)
    wn = max(np.linalg.norm(np.eye(4) - D0, 2), np.linalg.norm(np.eye(4) - D1, 2))
    assert wn > 1
    for c in (s_int, s_disk, s_sc):
        assert c.tol == pytest.approx(tol(F, 4, scale=wn), rel=1e-12)
    for b, (Db, s) in enumerate(((D0, 0.5), (D1, 0.7))):
        ev_ref, interval, disk, scaled = spectral_oracle(Db, s)
        assert np.allclose(np.sort_complex(ev[b].numpy()), np.sort_complex(ev_ref), atol=1e-13)
        assert float(s_int.residual[b]) == pytest.approx(interval, abs=1e-13)
        assert float(s_disk.residual[b]) == pytest.approx(disk, abs=1e-13)
        assert float(s_sc.residual[b]) == pytest.approx(scaled, abs=1e-13)
    assert float(s_int.residual[0]) == pytest.approx(0.6, abs=1e-13)  # Re z = −0.6 below 0
    assert float(s_int.residual[1]) == pytest.approx(0.9, abs=1e-13)  # Im z = 0.9
    assert float(s_disk.residual[1]) == pytest.approx(math.sqrt(1.06) - 1, abs=1e-13)
    assert float(s_sc.residual[0]) == pytest.approx(1.1, abs=1e-13)  # (1 − 0.5) − (−0.6)
    assert not bool(s_int.holds.any()) and not bool(s_disk.holds.any())


def test_dense_spectrum_tolerance_floor_and_precision():
    # ‖W‖₂ = 0.5 < 1: the tolerance's scale is 1, in the precision given
    D = t(np.diag([0.5, 0.5, 0.5]))
    Wd = torch.eye(3, dtype=F) - D
    si = make_check("scaled_isometry", t(0.0), 1e-12)
    ev, (s_int, s_disk, s_sc) = dense_spectrum(D, Wd, t(0.5), si, torch.float32, 3)
    assert s_int.tol == pytest.approx(tol(torch.float32, 3), rel=1e-12)
    assert s_disk.tol == s_int.tol == s_sc.tol
    assert bool(s_int.holds) and bool(s_disk.holds) and bool(s_sc.holds)
    assert float(s_int.residual) == 0.0 and float(s_disk.residual) == 0.0 and float(s_sc.residual) == 0.0
    assert ev.dtype == torch.complex128


def test_dense_spectrum_falls_back_to_numpy_with_a_complex_result(monkeypatch):
    """When torch's eigvals raises LinAlgError the eigenvalues come from numpy; numpy returns a
    *real* array for a real spectrum, which must still become complex128 (``.imag`` is read)."""

    def fail(*a, **k):
        raise torch.linalg.LinAlgError("geev did not converge")

    D = t(np.diag([0.25, 1.0, 1.75]))
    monkeypatch.setattr(torch.linalg, "eigvals", fail)
    si = make_check("scaled_isometry", t(0.0), 1e-12)
    ev, (s_int, _, _) = dense_spectrum(D, torch.eye(3, dtype=F) - D, t(1.0), si, F, 3)
    assert ev.dtype == torch.complex128
    assert np.allclose(np.sort(ev.real.numpy()), [0.25, 1.0, 1.75], atol=0)
    assert bool(s_int.holds) and float(s_int.residual) == 0.0


# ------------------------------------------------------------------------------ laplacian_dense.dense_kernel
def kernel_inputs(P: np.ndarray, O: np.ndarray):
    """Arguments of dense_kernel for one walk (O zeroed off the support), batch shape ()."""
    from numerics.markov import weak_components

    Pt, Ot = t(P), t(O)
    sup = Pt > 0
    Ot = torch.where(sup[..., None, None], Ot, torch.zeros_like(Ot))
    D = t(literal_delta(P, np.where((P > 0)[..., None, None], O, 0)))
    from numerics.markov import stationary_info

    pi = stationary_info(Pt).pi
    pi_def = ~torch.isnan(pi).any(-1)
    pi_safe = torch.where(pi_def[..., None], pi, torch.zeros_like(pi))
    return D, Ot, sup, Pt, pi_safe, pi_def, weak_components(sup | sup.transpose(-1, -2))


def null_dim(M: np.ndarray, thr: float) -> int:
    s = np.linalg.svd(M, compute_uv=False)
    return int((s <= thr * max(s[0], 1.0)).sum())


@pytest.mark.parametrize("theta", [0.0, 0.7])
def test_dense_kernel_dimensions_residuals_and_bounds_against_numpy(theta):
    P, O = triangle(theta, lazy=0.9)  # Δ's nonzero σ ≈ 0.15: the gap widens the kernel bound
    args = kernel_inputs(P, O)
    kp, flat, kD, kC = dense_kernel(*args, F, 1 << 22)
    L, C = literal_delta(P, O), literal_constraints(P, O)
    thr = tol(F, 6)
    sD, sC = np.linalg.svd(L, compute_uv=False), np.linalg.svd(C, compute_uv=False)
    assert int(kD) == null_dim(L, thr) == (2 if theta == 0 else 0)
    assert int(kC) == null_dim(C, thr) == int(kD)
    assert bool(kp.holds) and float(kp.residual) <= kp.tol
    # the bound: max(thr, thr·max(‖Δ‖, 1)/gap_Δ, thr·max(‖C‖, 1)/gap_C), gap = smallest kept σ
    bnd = thr
    if theta == 0:
        bnd = max(thr, thr * max(sD[0], 1) / sD[-3], thr * max(sC[0], 1) / sC[-3])
        assert bnd > thr
    assert kp.tol == pytest.approx(bnd, rel=1e-9)
    # flat: the (n_comp·d)-th smallest σ of C over max(‖C‖, 1); tolerance thr (SVD path)
    assert float(flat.residual) == pytest.approx(np.sort(sC)[1] / max(sC[0], 1.0), rel=1e-9, abs=1e-15)
    assert flat.tol == pytest.approx(thr, rel=1e-12)
    assert bool(flat.holds) == (theta == 0)
    if theta:
        assert float(flat.residual) > 0.05


def test_dense_kernel_gram_path_threshold_and_flatness():
    P, O = triangle(0.0)
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 0)  # CᵀC path
    thr_C = max(tol(F, 6), math.sqrt(tol(F, 6)))
    assert flat.tol == pytest.approx(thr_C, rel=1e-12)
    assert int(kD) == int(kC) == 2 and bool(kp.holds) and bool(flat.holds)
    assert kp.tol >= thr_C


def test_dense_kernel_certain_mismatch_has_the_literal_residual():
    """P = [[1, 0], [½, ½]], d = 1, O = (1, ·; 1, −1): ker Δ = span(3, 1), no parallel section.
    The residual is ‖C k‖₂ / max(‖C‖₂, 1) for the unit kernel vector k of Δ (numpy oracle)."""
    P = np.array([[1.0, 0.0], [0.5, 0.5]])
    O = np.array([[[[1.0]], [[0.0]]], [[[1.0]], [[-1.0]]]])
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 1 << 22)
    C = literal_constraints(P, O)
    k = np.array([3.0, 1.0]) / math.sqrt(10)
    assert np.abs(literal_delta(P, O) @ k).max() <= 1e-15
    r2 = np.linalg.norm(C @ k) / max(np.linalg.norm(C, 2), 1.0)
    assert int(kD) == 1 and int(kC) == 0
    assert not bool(kp.holds)
    assert float(kp.residual) == pytest.approx(r2, rel=1e-9)
    assert r2 == pytest.approx(math.sqrt(0.8) / math.sqrt(3 + math.sqrt(5)), rel=1e-12)
    assert kp.reason is None
    # flat: n_comp·d = 1 parallel direction needed; C's smallest σ over its largest
    sC = np.linalg.svd(C, compute_uv=False)
    assert float(flat.residual) == pytest.approx(sC.min() / sC.max(), rel=1e-9) and not bool(flat.holds)


def test_dense_kernel_batch_equals_elements_and_takes_the_largest_bound():
    cases = [triangle(0.0), triangle(0.7), triangle(1e-3)]
    single = [dense_kernel(*kernel_inputs(P, O), F, 1 << 22) for P, O in cases]
    one = [kernel_inputs(P, O) for P, O in cases]
    batched = [torch.stack([a[k] for a in one]) for k in range(7)]
    kp, flat, kD, kC = dense_kernel(*batched, F, 1 << 22)
    for b, (kpb, flb, kDb, kCb) in enumerate(single):
        assert int(kD[b]) == int(kDb) and int(kC[b]) == int(kCb)
        assert bool(kp.holds[b]) == bool(kpb.holds)
        assert float(kp.residual[b]) == pytest.approx(float(kpb.residual), rel=1e-6, abs=1e-15)
        assert float(flat.residual[b]) == pytest.approx(float(flb.residual), rel=1e-9, abs=1e-15)
    assert kp.tol == pytest.approx(max(s[0].tol for s in single), rel=1e-9)
    assert [bool(h) for h in flat.holds] == [True, False, False]
