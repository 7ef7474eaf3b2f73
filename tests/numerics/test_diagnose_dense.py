"""``diagnose`` and its dense path in small deterministic cases: ``dense_spectrum``, ``dense_kernel``
(dimensions, residuals, bounds, ambiguity reasons), the forms (``generator_dense``, ``pi_inner``,
``dirichlet_energy``, the parallel-section constraints), the tolerance precision, and ``diagnose``'s
options, size limits, reasons and batches. Each is judged by an independent float64 oracle: numpy's
eigenvalues / singular values of the literal ``Δ`` and constraint matrix ``C`` built by loops, closed
forms, and the tolerance rule of numerics.tolerance. Written where mutation testing found exact
residual values, tolerances, reasons and batched inputs unchecked (formerly test_laplacian_mutants.py,
whose per-check cases are in test_diagnose_checks.py). ``host`` builds a float64 CPU tensor."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from numerics.errors import ShapeError
from numerics.laplacian import (
    diagnose,
    dirichlet_energy,
    generator_dense,
)
from numerics.laplacian.dense import dense_kernel, dense_spectrum
from numerics.laplacian.result import Check, make_check
from numerics.tolerance import tol
from numerics.walk import ConnectionWalk
from tests.helpers import host, literal_constraints, rot, triangle

F = torch.float64


def literal_delta(P: np.ndarray, O: np.ndarray) -> np.ndarray:
    """``Δ = I − W`` token-major, block (i, j) = −P_ij O_ij (+ I on the diagonal), by loops."""
    n, d = O.shape[0], O.shape[-1]
    L = np.eye(n * d)
    for i in range(n):
        for j in range(n):
            L[i * d : (i + 1) * d, j * d : (j + 1) * d] -= P[i, j] * O[i, j]
    return L


# ------------------------------------------------------------------------------ numerics.laplacian.dense.dense_spectrum
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
    D2 = np.diag([0.5, 1.0, 1.2, 1.5])  # element 2: real, inside [1 − s, 1 + s] = [0.5, 1.5]
    D = host(np.stack([D0, D1, D2]))
    Wd = torch.eye(4, dtype=F) - D
    scale = host([0.5, 0.7, 0.5])
    si = make_check("scaled_isometry", host([0.0, 0.0, 0.0]), 1e-12)
    ev, (s_int, s_disk, s_sc) = dense_spectrum(D, Wd, scale, si, F, 4)
    wn = max(np.linalg.norm(np.eye(4) - D0, 2), np.linalg.norm(np.eye(4) - D1, 2))
    assert wn > 1
    for c in (s_int, s_disk, s_sc):
        assert c.tol == pytest.approx(tol(F, 4, scale=wn), rel=1e-12, abs=0)
    for b, (Db, s) in enumerate(((D0, 0.5), (D1, 0.7), (D2, 0.5))):
        ev_ref, interval, disk, scaled = spectral_oracle(Db, s)
        assert np.allclose(np.sort_complex(ev[b].numpy()), np.sort_complex(ev_ref), atol=1e-13)
        assert float(s_int.residual[b]) == pytest.approx(interval, abs=1e-13)
        assert float(s_disk.residual[b]) == pytest.approx(disk, abs=1e-13)
        assert float(s_sc.residual[b]) == pytest.approx(scaled, abs=1e-13)
    assert float(s_int.residual[0]) == pytest.approx(0.6, abs=1e-13)  # Re z = −0.6 below 0
    assert float(s_int.residual[1]) == pytest.approx(0.9, abs=1e-13)  # Im z = 0.9
    assert float(s_disk.residual[1]) == pytest.approx(math.sqrt(1.06) - 1, abs=1e-13)
    assert float(s_sc.residual[0]) == pytest.approx(1.1, abs=1e-13)  # (1 − 0.5) − (−0.6)
    assert s_int.holds.tolist() == [False, False, True] and s_disk.holds.tolist() == [False, False, True]
    assert s_sc.holds.tolist() == [False, False, True]


def test_dense_spectrum_tolerance_floor_and_precision():
    # ‖W‖₂ = 0.5 < 1: the tolerance's scale is 1, in the precision given
    D = host(np.diag([0.5, 0.5, 0.5]))
    Wd = torch.eye(3, dtype=F) - D
    si = make_check("scaled_isometry", host(0.0), 1e-12)
    ev, (s_int, s_disk, s_sc) = dense_spectrum(D, Wd, host(0.5), si, torch.float32, 3)
    assert s_int.tol == pytest.approx(tol(torch.float32, 3), rel=1e-12, abs=0)
    assert s_disk.tol == s_int.tol == s_sc.tol
    assert bool(s_int.holds) and bool(s_disk.holds) and bool(s_sc.holds)
    assert float(s_int.residual) == 0.0 and float(s_disk.residual) == 0.0 and float(s_sc.residual) == 0.0
    assert ev.dtype == torch.complex128


def test_dense_spectrum_falls_back_to_numpy_with_a_complex_result(monkeypatch):
    """When torch's eigvals raises LinAlgError the eigenvalues come from numpy; numpy returns a
    *real* array for a real spectrum, which must still become complex128 (``.imag`` is read)."""

    def fail(*a, **k):
        raise torch.linalg.LinAlgError("geev did not converge")

    D = host(np.diag([0.25, 1.0, 1.75]))
    monkeypatch.setattr(torch.linalg, "eigvals", fail)
    si = make_check("scaled_isometry", host(0.0), 1e-12)
    ev, (s_int, _, _) = dense_spectrum(D, torch.eye(3, dtype=F) - D, host(1.0), si, F, 3)
    assert ev.dtype == torch.complex128
    assert np.allclose(np.sort(ev.real.numpy()), [0.25, 1.0, 1.75], atol=0)
    assert bool(s_int.holds) and float(s_int.residual) == 0.0


# ------------------------------------------------------------------------------ numerics.laplacian.dense.dense_kernel
def kernel_inputs(P: np.ndarray, O: np.ndarray):
    """Arguments of dense_kernel for one walk (O zeroed off the support), batch shape ()."""
    from numerics.markov import weak_components

    Pt, Ot = host(P), host(O)
    sup = Pt > 0
    Ot = torch.where(sup[..., None, None], Ot, torch.zeros_like(Ot))
    D = host(literal_delta(P, np.where((P > 0)[..., None, None], O, 0)))
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
    assert kp.tol == pytest.approx(bnd, rel=1e-9, abs=0)
    # flat: the (n_comp·d)-th smallest σ of C over max(‖C‖, 1); tolerance thr (SVD path)
    assert float(flat.residual) == pytest.approx(np.sort(sC)[1] / max(sC[0], 1.0), rel=1e-9, abs=1e-15)
    assert flat.tol == pytest.approx(thr, rel=1e-12, abs=0)
    assert bool(flat.holds) == (theta == 0)
    if theta:
        assert float(flat.residual) > 0.05


def test_dense_kernel_gram_path_threshold_and_flatness():
    P, O = triangle(0.0)
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 0)  # CᵀC path
    thr_C = max(tol(F, 6), math.sqrt(tol(F, 6)))
    assert flat.tol == pytest.approx(thr_C, rel=1e-12, abs=0)
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
    sD = np.linalg.svd(literal_delta(P, O), compute_uv=False)  # Δ's gap term; C has no null space
    assert kp.tol == pytest.approx(max(tol(F, 2), tol(F, 2) * max(sD[0], 1.0) / sD[0]), rel=1e-9, abs=0)
    assert not bool(kp.holds)
    assert float(kp.residual) == pytest.approx(r2, rel=1e-9, abs=0)
    assert r2 == pytest.approx(math.sqrt(0.8) / math.sqrt(3 + math.sqrt(5)), rel=1e-12, abs=0)
    assert kp.reason is None
    # flat: n_comp·d = 1 parallel direction needed; C's smallest σ over its largest
    sC = np.linalg.svd(C, compute_uv=False)
    assert float(flat.residual) == pytest.approx(sC.min() / sC.max(), rel=1e-9, abs=0) and not bool(flat.holds)


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
    assert kp.tol == pytest.approx(max(s[0].tol for s in single), rel=1e-9, abs=0)
    assert [bool(h) for h in flat.holds] == [True, False, False]


# ------------------------------------------------------------------------------ numerics.laplacian: operators and forms
def _rand(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F)


def test_generator_dense_of_blocks_and_heads_matches_the_literal_delta():

    A = torch.softmax(_rand((2, 2, 3, 3), 1), -1)  # batch 2, H = 2
    T = _rand((2, 2, 2), 2)
    w = ConnectionWalk.from_mha(A, T)
    G = generator_dense(w)
    assert G.shape == (2, 6, 6) and G.dtype == F
    for b in range(2):
        Bn = np.einsum("hij,hab->ijab", A[b].numpy(), T.numpy())
        assert np.abs(G[b].numpy() - literal_delta(np.ones((3, 3)), Bn)).max() <= 1e-15
        Gb = generator_dense(host(Bn))  # blocks input (as_walk wraps them)
        assert np.abs(Gb.numpy() - literal_delta(np.ones((3, 3)), Bn)).max() <= 1e-15
    G32 = generator_dense(ConnectionWalk.from_mha(A.float(), T.float()))
    assert G32.dtype == F
    # two batch dimensions (3, 2): the identity is sized by the operator, not by a batch dim
    A4 = torch.softmax(_rand((3, 2, 1, 3, 3), 9), -1)
    G4 = generator_dense(ConnectionWalk.from_mha(A4, T[:1]))
    assert G4.shape == (3, 2, 6, 6)
    Bn = np.einsum("hij,hab->ijab", A4[2, 1].numpy(), T[:1].numpy())
    assert np.abs(G4[2, 1].numpy() - literal_delta(np.ones((3, 3)), Bn)).max() <= 1e-15


def test_pi_inner_and_dirichlet_energy_against_loops():
    from numerics.laplacian import pi_inner

    x, y = _rand((2, 3, 2), 3), _rand((2, 3, 2), 4)
    pi = torch.rand(2, 3, generator=torch.Generator().manual_seed(5), dtype=F)
    got = pi_inner(x, y, pi)
    for b in range(2):
        ref = sum(pi[b, i].item() * float(x[b, i] @ y[b, i]) for i in range(3))
        assert float(got[b]) == pytest.approx(ref, rel=1e-13, abs=0)
    P = host([[[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0]]] * 2)
    P[1, 0, 2] = 0.25
    O = _rand((2, 3, 3, 2, 2), 6)
    O[P == 0] = float("nan")  # never read: edges with P_ij = 0 contribute 0
    E = dirichlet_energy(P, O, pi, x)
    for b in range(2):
        ref = 0.5 * sum(
            pi[b, i].item() * P[b, i, j].item() * float(((x[b, i] - O[b, i, j] @ x[b, j]) ** 2).sum())
            for i in range(3)
            for j in range(3)
            if P[b, i, j] > 0
        )
        assert float(E[b]) == pytest.approx(ref, rel=1e-13, abs=0)
    assert float(E[0]) != pytest.approx(float(E[1]), rel=1e-6, abs=0)


def test_parallel_constraints_gram_and_apply_against_the_literal_C():
    from numerics.laplacian.forms import apply_constraints, parallel_constraints, parallel_gram, parallel_svd

    P = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0]])
    O = _rand((3, 3, 2, 2), 7).numpy()
    C = literal_constraints(P, O)
    sup = host(P) > 0
    assert np.abs(parallel_constraints(host(O), sup).numpy() - C).max() == 0.0
    # batched: the second element with one more edge
    P2 = P.copy()
    P2[0, 2] = 0.1
    Cb = parallel_constraints(host(np.stack([O, O])), host(np.stack([P, P2])) > 0)
    assert Cb.shape == (2, 18, 6) and np.abs(Cb[1].numpy() - literal_constraints(P2, O)).max() == 0.0
    G = parallel_gram(host(O), sup).numpy()
    assert np.abs(G - C.T @ C).max() <= 1e-13
    Gb = parallel_gram(host(np.stack([O, O])), host(np.stack([P, P2])) > 0)
    assert np.abs(Gb[1].numpy() - literal_constraints(P2, O).T @ literal_constraints(P2, O)).max() <= 1e-13
    K = _rand((6, 3), 8)
    assert np.abs(apply_constraints(host(O), sup, K).numpy() - C @ K.numpy()).max() <= 1e-13
    # SVD of C up to n³d² = 108 entries, else eigh of CᵀC (descending σ)
    s1, V1, g1 = parallel_svd(host(O), sup, max_entries=108)
    s2, V2, g2 = parallel_svd(host(O), sup, max_entries=107)
    assert not g1 and g2
    ref = np.linalg.svd(C, compute_uv=False)
    assert np.abs(s1.numpy() - ref).max() <= 1e-13
    assert np.abs(s2.numpy() - ref).max() <= 1e-7 and bool((s2[:-1] >= s2[1:]).all())
    for s, V in ((s1, V1), (s2, V2)):  # right singular vectors: ‖C v_k‖ = σ_k
        assert np.abs(np.linalg.norm(C @ V.numpy().T, axis=0) - s.numpy()).max() <= 1e-7


def test_parallel_svd_of_a_batch_gives_each_element_its_own_singular_vectors():
    """Both routes (SVD of C, eigh of CᵀC) on a batch of two different walks: each element's σ are
    those of its own literal C (numpy), and the rows of its Vh are orthonormal right singular vectors,
    ‖C v_k‖ = σ_k (the eigh route reverses eigenvalues and vectors along their own axis, whatever the batch)."""
    from numerics.laplacian.forms import parallel_svd

    P1 = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0]])
    P2 = np.array([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]])
    O1, O2 = _rand((3, 3, 2, 2), 11).numpy(), _rand((3, 3, 2, 2), 12).numpy()
    Ob, sup = host(np.stack([O1, O2])), host(np.stack([P1, P2])) > 0
    for max_entries, gram in ((1 << 22, False), (0, True)):
        s, Vh, used = parallel_svd(Ob, sup, max_entries=max_entries)
        assert used is gram and s.shape == (2, 6) and Vh.shape == (2, 6, 6)
        for b, (P, O) in enumerate(((P1, O1), (P2, O2))):
            C = literal_constraints(P, O)
            assert np.abs(s[b].numpy() - np.linalg.svd(C, compute_uv=False)).max() <= (1e-7 if gram else 1e-13)
            V = Vh[b].numpy()
            assert np.abs(V @ V.T - np.eye(6)).max() <= 1e-12
            assert np.abs(np.linalg.norm(C @ V.T, axis=0) - s[b].numpy()).max() <= 1e-7


def test_constraint_forms_are_built_on_the_device_of_the_transports():
    """C and CᵀC take their identities from O's device. The meta device stands in for an accelerator
    (shapes only; torch refuses a CPU identity beside a meta tensor). ``parallel_constraints`` is called
    past its contract, which refuses meta tensors because it cannot check their values."""
    from numerics.laplacian.forms import parallel_constraints, parallel_gram

    O = torch.zeros(2, 3, 3, 2, 2, dtype=F, device="meta")
    sup = torch.ones(2, 3, 3, dtype=torch.bool, device="meta")
    C = parallel_constraints.__wrapped__(O, sup)
    assert C.device.type == "meta" and C.shape == (2, 18, 6) and C.dtype == F
    G = parallel_gram(O, sup)
    assert G.device.type == "meta" and G.shape == (2, 6, 6) and G.dtype == F


@pytest.mark.parametrize("method", ["dense", "factored"])
def test_both_routes_decide_in_the_precision_of_a_float32_walk(method):
    """A float32 one-head walk whose transport swaps the two features (d = 2, ‖O‖²_F = 2 exactly): the
    orthogonality check's tolerance is tol(float32, d)·max(‖O‖²_F, d) = 64·2·eps₃₂·2 on either route
    (float64 would make it 2²⁹ times smaller)."""
    from numerics.laplacian import diagnose

    A = torch.full((1, 3, 3), 1 / 3, dtype=torch.float32)
    T = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]], dtype=torch.float32)
    D = diagnose(ConnectionWalk.from_mha(A, T), method=method)
    assert D.orthogonal.tol == pytest.approx(64 * 2 * 2.0**-23 * 2, rel=1e-12)  # ‖O‖² from a float64 norm


def test_generator_dense_is_built_on_the_walk_device():
    """Δ = I − W with the identity on the walk's device (the meta device stands in for an accelerator)."""
    from numerics.laplacian import generator_dense

    w = ConnectionWalk.from_edges(torch.full((2, 2), 0.5, dtype=F), torch.eye(2, dtype=F)).to(device="meta")
    D = generator_dense(w)
    assert D.device.type == "meta" and D.shape == (4, 4) and D.dtype == F


def test_tolerance_dtype_rules_and_errors():
    from numerics.errors import ParameterError
    from numerics.laplacian import tolerance_dtype
    from tests.helpers import raises_named

    P = torch.full((2, 2), 0.5, dtype=F)
    w32 = ConnectionWalk.from_edges(P.float(), torch.eye(1))  # (float16 walks are refused earlier)
    assert tolerance_dtype(w32, None) == torch.float32 and tolerance_dtype(w32, torch.float64) == F
    w64 = ConnectionWalk.from_edges(P, torch.eye(1, dtype=F))
    assert tolerance_dtype(w64, None) == F and tolerance_dtype(w64, torch.float32) == torch.float32
    # diagnose's contract refuses what is not a floating dtype (the helper trusts it)

    raises_named(ParameterError, "attention_dtype", lambda: diagnose(w64, attention_dtype=torch.int64))
    raises_named(ParameterError, "attention_dtype", lambda: diagnose(w64, attention_dtype="float32"))


# ------------------------------------------------------------------------------ numerics.laplacian: diagnose
def test_dense_memory_budget_boundary_and_bytes():
    from numerics.errors import MemoryBudgetError
    from numerics.laplacian import dense_bytes
    from tests.helpers import raises_named

    assert dense_bytes(3, 2, 5) == 6 * 8 * 5 * 36 and dense_bytes(3, 2) == 6 * 8 * 36
    P = torch.full((2, 3, 3), 1 / 3, dtype=F)
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    need = 6 * 8 * 2 * 36  # batch of 2, n·d = 6
    D = diagnose(w, method="dense", memory_budget=need)
    assert bool(D.is_connection_laplacian().all())
    msg = raises_named(MemoryBudgetError, "walk", lambda: diagnose(w, method="dense", memory_budget=need - 1))
    assert "the dense diagnostics' n²d² blocks (n=3, d=2)" in msg
    assert msg.endswith('use diagnose(walk, method="factored") instead')


def test_diagnose_method_choice_options_and_extra():
    from numerics.errors import ParameterError
    from tests.helpers import raises_named

    P = torch.full((3, 3), 1 / 3, dtype=F)
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    assert diagnose(w, auto_max_nd=6).extra == {"method": "dense", "tolerance_dtype": "torch.float64"}
    assert diagnose(w, auto_max_nd=5).extra["method"] == "factored"
    assert diagnose(w, method="factored", k_max=3).extra["method"] == "factored"
    assert diagnose(w, attention_dtype=torch.float32).extra["tolerance_dtype"] == "torch.float32"
    msg = raises_named(ParameterError, "chunk_elems", lambda: diagnose(w, method="dense", k_max=3, chunk_elems=2))
    assert msg == "chunk_elems: options ['chunk_elems', 'k_max'] apply to method='factored' only"


def test_diagnose_max_dense_boundary_and_skipped_checks():

    P = torch.full((2, 3, 3), 1 / 3, dtype=F)
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    D = diagnose(w, method="dense", max_dense=6)
    assert D.spectrum is not None and D.spectrum.shape == (2, 6) and int(D.kernel_dim[0]) == 2
    S = diagnose(w, method="dense", max_dense=5)  # auto would take the factored path (every check)
    why = "skipped: n·d = 6 > max_dense = 5 (use method='factored' or numerics.spectra)"
    assert S.spectrum is None and S.kernel_dim is None and S.parallel_dim is None
    for k in ("spectrum_interval", "spectrum_disk", "spectrum_scaled", "kernel_parallel", "flat"):
        c = getattr(S, k)
        assert c.name == k and c.reason == why and math.isnan(c.tol)
        assert c.holds.shape == (2,) and not bool(c.holds.any()) and c.holds.dtype == torch.bool
        assert c.residual.dtype == F and bool(torch.isnan(c.residual).all())
        # not computed is not false: undecided, with the reason, in every view of the result
        assert not bool(c.fails.any()) and bool(c.undecided.all()) and c.status((0,)) == "undecided"
        assert S.as_dict((1,))[k]["status"] == "undecided" and k in S.undecided((0,)) and k not in S.failing((0,))
    assert bool(S.self_adjoint.holds.all())
    assert "kernel_parallel         undecided" in S.summary((0,))


def test_diagnose_fields_on_a_scaled_reversible_walk():
    """P reversible with π = (¼, ½, ¼), O = s·R (R orthogonal symmetric): walk-gauge transport scale
    s, gauge-free scale s, spectrum of Δ = I − s·(P ⊗ R) is 1 − s·λ(P)·(±1)."""

    P = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    Rs = np.array([[0.0, 1.0], [1.0, 0.0]])
    s = 0.8
    D = diagnose(ConnectionWalk.from_edges(host(P), host(s * Rs)))
    assert D.n == 3 and D.d == 2 and int(D.n_components) == 1 and bool(D.pi_unique)
    assert D.pi.tolist() == pytest.approx([0.25, 0.5, 0.25], abs=1e-15)
    assert D.block_pi.tolist() == pytest.approx([0.25, 0.5, 0.25], abs=1e-14)
    assert float(D.rho) == 1.0
    assert float(D.transport_scale) == pytest.approx(s, rel=1e-14, abs=0) and float(D.scale) == pytest.approx(
        s, rel=1e-14, abs=0
    )
    lam = np.linalg.eigvals(P).real
    ref = np.sort(np.concatenate([1 - s * lam, 1 + s * lam]))
    assert np.abs(np.sort(D.spectrum.real.numpy()) - ref).max() <= 1e-14
    assert bool(D.spectrum_scaled.holds) and not bool(D.orthogonal.holds) and bool(D.dirichlet.holds)
    assert int(D.kernel_dim) == 0 and int(D.parallel_dim) == 0  # x_i = 0.8·R x_i forces x = 0
    # ρ ≠ 1 for a non-stochastic walk: 2·P
    D2 = diagnose(ConnectionWalk.from_edges(host(2 * P), host(Rs)))
    assert float(D2.rho) == pytest.approx(2.0, rel=1e-14, abs=0) and not bool(D2.stochastic.holds)


def test_attention_dtype_sets_the_walk_matrix_tolerances_only():

    P = torch.full((3, 3), 1 / 3, dtype=F)
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    D = diagnose(w, attention_dtype=torch.float32)
    D64 = diagnose(w)
    assert D.stochastic.tol == tol(torch.float32, 3) and D64.stochastic.tol == tol(F, 3)
    assert D.positive_stationary.tol == tol(torch.float32, 3) and D64.positive_stationary.tol == tol(F, 3)
    assert D.detailed_balance.tol > 1e5 * D64.detailed_balance.tol
    for k in ("block_detailed_balance", "orthogonal", "self_adjoint", "dirichlet", "scaled_isometry"):
        assert getattr(D, k).tol == getattr(D64, k).tol, k  # block-level checks keep float64
    # a row sum off by 1e-7: a float32-softmax rounding, a float64 defect
    P2 = P.clone()
    P2[0, 0] += 1e-7
    w2 = ConnectionWalk.from_edges(P2, torch.eye(2, dtype=F))
    assert bool(diagnose(w2, attention_dtype=torch.float32).stochastic.holds)
    assert not bool(diagnose(w2).stochastic.holds)


def test_cancelled_head_sum_counts_as_an_absent_block():
    """Three heads whose terms on edge 0→1 cancel exactly in real arithmetic (0.1 + 0.2 − 0.3) but
    leave a rounding residue: below the head-sum floor the block is absent, so the support of B is
    one-way and the gauge-free π reports the transient state, as it does for the exact zero."""

    A = torch.zeros(3, 2, 2, dtype=F)
    A[:, 0, 0] = torch.tensor([0.9, 0.8, 0.7], dtype=F)
    A[:, 0, 1] = torch.tensor([0.1, 0.2, 0.3], dtype=F)
    A[:, 1, 0] = 0.5
    A[:, 1, 1] = 0.5
    T = torch.tensor([[[1.0]], [[1.0]], [[-1.0]]], dtype=F)
    w = ConnectionWalk.from_mha(A, T)
    B01 = float(w.blocks()[0, 1, 0, 0])
    assert 0 < abs(B01) <= tol(F, 3) * 0.6  # a rounding residue, below the floor
    D = diagnose(w)
    assert D.block_detailed_balance.reason == "the support of B has transient states: no positive π"
    assert not bool(D.block_detailed_balance.holds)


# ------------------------------------------------------------------------------ numerics.laplacian.dense: ambiguity reasons
def _null_basis(M: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.svd(M)[2][-k:].T if k else np.zeros((M.shape[1], 0))


def test_ambiguous_kernel_reason_carries_the_dirichlet_energy_of_the_extra_directions():
    """Nearly flat triangle (sin θ = 3.3333e-10): ker Δ is 2-dimensional at float64 but C has no
    null vector. The reason reports e = max Dirichlet energy over unit x ∈ ker Δ (numpy:
    ½ λ_max(KᵀCᵀΠCK), Π = diag(π_i P_ij)), the limit 2·π_max·tol·max(‖Δ‖, 1), and √(2e)."""
    s_ = 3.3333e-10
    P, O = triangle(math.asin(s_))
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 1 << 22)
    assert int(kD) == 2 and int(kC) == 0 and not bool(kp.holds) and bool(torch.isnan(kp.residual))
    L, C = literal_delta(P, O), literal_constraints(P, O)
    K = _null_basis(L, 2)
    Pi = np.repeat((np.full(3, 1 / 3)[:, None] * P).reshape(-1), 2)
    e = 0.5 * np.linalg.eigvalsh(K.T @ C.T @ (Pi[:, None] * C) @ K).max()
    thr = tol(F, 6)
    lim = 2 * (1 / 3) * thr * max(np.linalg.norm(L, 2), 1.0)
    assert e <= lim
    want = (
        f"undefined: ker Δ vs parallel sections is ambiguous at float64 precision: dim ker Δ = 2 at tolerance "
        f"{thr:.1e}, dim parallel = 0 at {thr:.1e}, and the extra directions of ker Δ have Dirichlet energy ≤ "
        f"{e:.1e} (≤ {lim:.1e}, below what Δ resolves: it sees the defect ‖Cx‖ ≈ {math.sqrt(2 * e):.1e} only squared)"
    )
    assert kp.reason == want
    sD = np.linalg.svd(L, compute_uv=False)  # the bound: Δ's gap term only (C has no null space)
    assert kp.tol == pytest.approx(max(thr, thr * max(sD[0], 1.0) / sD[-3]), rel=1e-9, abs=0)


def test_ambiguous_parallel_sections_reason_carries_the_jensen_bound():
    """P = ¼·11ᵀ (n = 4), every O_ij = R(θ), sin θ = 1.2901e-13: C accepts 2 parallel sections, Δ
    none. The reason reports r = ‖ΔZ‖₂/max(‖Δ‖, 1) (Z: C's null space, numpy) and the limit
    tol·max(‖C‖, 1)·max(row sum, 1)/max(‖Δ‖, 1)."""
    s_ = 1.2901e-13
    R = np.array([[math.sqrt(1 - s_ * s_), -s_], [s_, math.sqrt(1 - s_ * s_)]])
    P = np.full((4, 4), 0.25)
    O = np.broadcast_to(R, (4, 4, 2, 2)).copy()
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 1 << 22)
    assert int(kC) == 2 and int(kD) == 0 and bool(torch.isnan(kp.residual))
    L, C = literal_delta(P, O), literal_constraints(P, O)
    Z = _null_basis(C, 2)
    dn, cn = max(np.linalg.norm(L, 2), 1.0), max(np.linalg.norm(C, 2), 1.0)
    r1 = np.linalg.norm(L @ Z, 2) / dn
    thr = tol(F, 8)
    lim = thr * cn * 1.0 / dn
    assert r1 <= lim
    assert kp.reason.endswith(f"the extra parallel sections have ‖ΔZ‖/‖Δ‖ = {r1:.1e} ≤ {lim:.1e} (the Jensen bound)")
    assert f"dim ker Δ = 0 at tolerance {thr:.1e}, dim parallel = 2 at {thr:.1e}" in kp.reason
    # the bound carries C's gap: thr·max(‖C‖, 1)/σ (σ the smallest singular value of C kept out)
    sC = np.linalg.svd(C, compute_uv=False)
    assert kp.tol == pytest.approx(max(thr, thr * cn / sC[-3]), rel=1e-9, abs=0)


def test_kernel_bound_carries_the_gap_of_a_slowly_mixing_walk():
    """Two lazy pairs joined by weak edges (ε = 1.3·10⁻³, d = 1, O = 1): ker Δ = parallel sections = the
    constants, and Δ's smallest kept singular value σ is of order ε, so the Wedin bound of the kernel
    residual is tol·max(‖Δ‖, 1)/σ, far above tol (numpy's SVD of the literal Δ and C give every term)."""
    e = 1.3e-3
    P = np.array([[0.5 - e, 0.5, e, 0.0], [0.5, 0.5 - e, 0.0, e], [e, 0.0, 0.5 - e, 0.5], [0.0, e, 0.5, 0.5 - e]])
    O = np.ones((4, 4, 1, 1))
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 1 << 22)
    assert int(kD) == 1 and int(kC) == 1 and bool(kp.holds)
    L, C = literal_delta(P, O), literal_constraints(P, O)
    sD, sC = np.linalg.svd(L, compute_uv=False), np.linalg.svd(C, compute_uv=False)
    thr = tol(F, 4)
    dn, cn = max(sD[0], 1.0), max(sC[0], 1.0)
    want = max(thr, thr * dn / sD[-2], thr * cn / sC[-2])
    assert want > 100 * thr and kp.tol == pytest.approx(want, rel=1e-9, abs=0)


def test_kernel_bound_carries_the_gap_of_the_constraints():
    """A star of 9 tokens with weights 0.1 (d = 1, O = 1): C, which sees only the support, has one
    parallel section (the constants) and singular values √2 (the gap) up to √18, while Δ ≈ I has no
    kernel. The bound is C's Wedin term tol·max(‖C‖, 1)/σ_gap = 3·tol (numpy's SVD of the literal C)."""
    n = 9
    P = np.zeros((n, n))
    P[0, 1:], P[1:, 0] = 0.1, 0.1
    O = np.ones((n, n, 1, 1))
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 1 << 22)
    assert int(kD) == 0 and int(kC) == 1 and bool(kp.fails)
    sC = np.linalg.svd(literal_constraints(P, O), compute_uv=False)
    thr = tol(F, n)
    want = thr * max(sC[0], 1.0) / sC[n - 2]
    assert want == pytest.approx(3 * thr, rel=1e-9) and kp.tol == pytest.approx(want, rel=1e-9, abs=0)


def test_spectrum_checks_carry_the_eigensolver_error_of_the_walk_norm():
    """The spectral checks' error is the backward error of the eigensolver for ‖Δ‖ ≤ 1 + ‖W‖₂:
    rounding_error(nd, 1 + ‖W‖₂), with ‖W‖₂ = 2 for the doubled swap walk (numpy's 2-norm)."""
    from numerics.laplacian import diagnose
    from theory.rounding import rounding_error

    P = np.array([[0.0, 2.0], [2.0, 0.0]])
    D = diagnose(ConnectionWalk.from_edges(host(P), torch.eye(1, dtype=F)))
    want = rounding_error(2, 1.0 + np.linalg.norm(P, 2))
    for c in (D.spectrum_interval, D.spectrum_disk, D.spectrum_scaled):
        assert c.error == pytest.approx(want, rel=1e-12, abs=0), c.name


def test_an_edges_walk_has_one_term_per_block_in_its_error_bounds():
    """Explicit blocks are no sum of head terms: the self-adjointness error is rounding_error(1 + 2 + 1,
    max over edges of π_i‖B_ij‖_F + π_j‖B_ji‖_F) = rounding_error(4, ½) for P = ½·11ᵀ, O = 1."""
    from numerics.laplacian import diagnose
    from theory.rounding import rounding_error

    D = diagnose(ConnectionWalk.from_edges(torch.full((2, 2), 0.5, dtype=F), torch.eye(1, dtype=F)))
    assert D.self_adjoint.error == pytest.approx(rounding_error(4, 0.5), rel=1e-12, abs=0)


def test_ambiguity_in_a_batch_reports_the_first_and_keeps_other_elements_defined():
    s_ = 3.3333e-10
    cases = [triangle(0.0, lazy=0.9), triangle(math.asin(s_)), triangle(0.7)]
    one = [kernel_inputs(P, O) for P, O in cases]
    kp, flat, kD, kC = dense_kernel(*[torch.stack([a[k] for a in one]) for k in range(7)], F, 1 << 22)
    assert [bool(v) for v in torch.isnan(kp.residual)] == [False, True, False]
    assert kp.holds.tolist() == [True, False, True]
    assert kp.reason.startswith("undefined: ker Δ vs parallel sections is ambiguous at float64 precision")
    ref = dense_kernel(*one[1], F, 1 << 22)[0]
    assert kp.reason == ref.reason


# ------------------------------------------------------------------------------ names, reasons, batches
def test_every_check_carries_its_own_name():
    from numerics.laplacian import CHECK_NAMES

    w = ConnectionWalk.from_edges(host(np.full((2, 3, 3), 1 / 3)), torch.eye(2, dtype=F))
    for D in (diagnose(w), diagnose(w, max_dense=5)):
        for k in CHECK_NAMES:
            c = getattr(D, k)
            assert isinstance(c, Check) and c.name == k, (k, c.name)
            assert c.holds.shape == (2,) and c.holds.dtype == torch.bool and c.residual.shape == (2,)


def test_spectrum_checks_reasons_and_upper_edges():
    from numerics.laplacian.checks import spectrum_checks

    si = make_check("scaled_isometry", host([0.0, 1.0]), 0.5)  # holds for element 0 only
    a, b, c = spectrum_checks(
        host([0.0, 0.0]), host([0.1, 0.1]), host([2.5, 1.0]), host([1.5, 0.9]), host([1.0, 1.0]), si, 1e-12, "w"
    )
    assert (a.name, b.name, c.name) == ("spectrum_interval", "spectrum_disk", "spectrum_scaled")
    assert a.reason == "w" and b.reason == "w"
    assert c.reason == "w; not a scaled isometry (no common scale s)"
    assert a.residual.tolist() == pytest.approx([0.5, 0.0], abs=1e-15)  # Re z = 2.5 is 0.5 above 2
    assert c.residual[0].item() == pytest.approx(0.5, abs=1e-15) and bool(torch.isnan(c.residual[1]))
    assert b.residual.tolist() == pytest.approx([0.5, 0.0], abs=1e-15)
    _, _, c2 = spectrum_checks(
        host(0.0), host(0.1), host(1.9), host(0.9), host(1.0), make_check("s", host(0.0), 0.5), 1e-12
    )
    assert c2.reason is None and bool(c2.holds)
    _, _, c3 = spectrum_checks(
        host(0.0), host(0.1), host(1.9), host(0.9), host(1.0), make_check("s", host(1.0), 0.5), 1e-12
    )
    assert c3.reason == "not a scaled isometry (no common scale s)"


def test_stochastic_tolerance_uses_n_for_two_batch_dims():
    from numerics.laplacian.checks import check_stochastic

    P = host(np.full((2, 5, 3, 3), 1 / 3))  # batch (2, 5), n = 3
    c = check_stochastic(P, F)
    assert c.tol == tol(F, 3) and c.holds.shape == (2, 5) and bool(c.holds.all())
    from numerics.laplacian.checks import check_detailed_balance, stationary

    st_ = stationary(P, F, torch.ones(2, 5, 3, dtype=F))  # given π: no condition factor
    db = check_detailed_balance(P, st_, F)
    assert db.tol == pytest.approx(tol(F, 3, scale=1 / 9), rel=1e-12, abs=0) and bool(db.holds.all())


def test_dense_pieces_on_an_empty_batch():
    """diagnose refuses empty batches; its dense pieces take them (nothing to reduce over) and report
    the tolerances of the empty maximum: scale 1 for the spectrum, the Gram-path threshold for the
    kernel (the SVD path's constraint matrix refuses an empty batch)."""
    D = torch.zeros(0, 2, 2, dtype=F)
    ev, (a, b, c) = dense_spectrum(D, D, torch.zeros(0, dtype=F), make_check("s", torch.zeros(0, dtype=F), 1.0), F, 2)
    assert ev.shape == (0, 2) and a.residual.shape == (0,) and a.tol == tol(F, 2)
    O = torch.zeros(0, 2, 2, 1, 1, dtype=F)
    z = torch.zeros(0, 2, 2, dtype=F)
    kp, fl, kD, kC = dense_kernel(
        z,
        O,
        z > 0,
        z,
        torch.zeros(0, 2, dtype=F),
        torch.zeros(0, dtype=torch.bool),
        torch.zeros(0, dtype=torch.long),
        F,
        0,
    )
    thr_C = math.sqrt(tol(F, 2))
    assert kp.tol == thr_C and fl.tol == thr_C and kD.shape == (0,) and kp.residual.shape == (0,)


def test_identity_walk_and_a_one_node_rotation():
    """W = I (P = I, O = I): Δ = 0 and C = 0, every direction is in both null spaces (no gap term).
    One node with a rotation self-loop R(1): Δ = C = I − R, σ = 2 sin ½ (twice), no kernel, no
    parallel section, flat residual σ_min / max(‖C‖, 1) = 2 sin ½ (‖C‖ < 1)."""
    kp, flat, kD, kC = dense_kernel(
        *kernel_inputs(np.eye(2), np.broadcast_to(np.eye(1), (2, 2, 1, 1)).copy()), F, 1 << 22
    )
    assert int(kD) == int(kC) == 2 and bool(kp.holds) and kp.tol == tol(F, 2) and float(flat.residual) == 0.0
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(np.ones((1, 1)), rot(1.0)[None, None]), F, 1 << 22)
    assert int(kD) == int(kC) == 0 and bool(kp.holds) and float(kp.residual) == 0.0
    assert float(flat.residual) == pytest.approx(2 * math.sin(0.5), rel=1e-12, abs=0) and not bool(flat.holds)


def test_diagnose_defaults_and_smallest_allowed_options():
    """The documented defaults probes=3, seed=0 (the Dirichlet probes), and the smallest values the
    contract allows: probes=1, max_dense=0 (every dense spectral check skipped), auto_max_nd=0."""

    P = host([[0.2, 1.5, 0.3], [0.4, 0.1, 0.2], [1.0, 0.6, 0.9]])  # rows ≠ 1: a probe-dependent defect
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    r = lambda **kw: float(diagnose(w, **kw).dirichlet.residual)
    base = r()
    assert base == r(probes=3, seed=0)
    for other in (r(probes=4, seed=0), r(probes=3, seed=1), r(probes=1, seed=0)):
        assert abs(other - base) > 1e-3 * base
    D = diagnose(w, method="dense", probes=1, max_dense=0)
    assert D.spectrum is None and "max_dense = 0" in D.flat.reason and not bool(D.dirichlet.holds)
    assert diagnose(w, auto_max_nd=0).extra["method"] == "factored"
    assert diagnose(w, method="dense", auto_max_nd=0).extra["method"] == "dense"


def test_kernel_bound_of_a_slow_near_bipartite_walk():
    """δ = 0.01: a 2-cycle weakly coupled to a third state, O = 1. Δ has eigenvalues 0, 0.03 and
    1.99, so ‖Δ‖ > 1 and the null-space gap 0.03 is small: the bound is tol·‖Δ‖/0.03 (numpy)."""
    dl = 0.01
    P = np.array([[0.0, 1 - dl, dl], [1 - dl, 0.0, dl], [dl, dl, 1 - 2 * dl]])
    O = np.ones((3, 3, 1, 1))
    kp, flat, kD, kC = dense_kernel(*kernel_inputs(P, O), F, 1 << 22)
    L, C = literal_delta(P, O), literal_constraints(P, O)
    sD, sC = np.linalg.svd(L, compute_uv=False), np.linalg.svd(C, compute_uv=False)
    assert sD[0] == pytest.approx(1.99, rel=1e-12, abs=0) and sD[-2] == pytest.approx(0.03, rel=1e-9, abs=0)
    thr = tol(F, 3)
    bnd = max(thr, thr * sD[0] / sD[-2], thr * max(sC[0], 1.0) / sC[-2])
    assert bnd == pytest.approx(thr * 1.99 / 0.03, rel=1e-9, abs=0)
    assert int(kD) == int(kC) == 1 and bool(kp.holds)
    assert kp.tol == pytest.approx(bnd, rel=1e-9, abs=0)


def test_diagnose_size_limits_default_to_1024():
    """Documented defaults: ``method="auto"`` is dense up to n·d = 1024 and the dense spectral /
    kernel checks run up to n·d = 1024 (``max_dense``). One token, d = 1024 and 1025."""
    from numerics.errors import MemoryBudgetError
    from tests.helpers import raises_named

    walk = lambda d: ConnectionWalk.from_edges(torch.ones((1, 1), dtype=F), torch.eye(d, dtype=F))
    D = diagnose(walk(1024))
    assert D.extra["method"] == "dense" and D.spectrum is not None and D.spectrum.shape == (1024,)
    S = diagnose(walk(1025), method="dense")
    assert S.spectrum is None
    assert S.flat.reason == "skipped: n·d = 1025 > max_dense = 1024 (use method='factored' or numerics.spectra)"
    # auto at n·d = 1025 takes the factored path, where an edges-form walk needs d⁴ numbers: refused
    msg = raises_named(MemoryBudgetError, "walk", lambda: diagnose(walk(1025)))
    assert msg.startswith(f"walk: a d²×d² identity (d=1025) would take {1025**4 * 8 / 2**30:.3g} GiB"), msg
    assert msg.endswith("use a heads-form walk (from_mha / from_factors) instead")


def test_factored_edges_form_memory_boundary():
    """The unit-matrix basis of an edges-form walk is refused like ConnectionWalk.nearest_kronecker's:
    three float64 n²d² arrays (n = 3, d = 2, a batch of 2: 3·2·36·8 = 1728 bytes) and a d²×d²
    identity (128 bytes), each against the budget, at the byte."""
    from numerics.errors import MemoryBudgetError
    from tests.helpers import raises_named

    P = torch.full((2, 3, 3), 1 / 3, dtype=F)
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    D = diagnose(w, method="factored", memory_budget=1728)
    assert D.extra["method"] == "factored" and bool(D.is_connection_laplacian().all())
    msg = raises_named(MemoryBudgetError, "walk", lambda: diagnose(w, method="factored", memory_budget=1727))
    assert msg.startswith("walk: the factored form's n²d² unit-matrix coefficients (n=3, d=2, batch=(2,))"), msg


def test_diagnose_option_messages():
    """The contract names each option and its bound (the body re-checked them before: dead code)."""
    from numerics.errors import ParameterError
    from tests.helpers import raises_named

    w = ConnectionWalk.from_edges(torch.full((3, 3), 1 / 3, dtype=F), torch.eye(2, dtype=F))
    assert raises_named(ParameterError, "probes", lambda: diagnose(w, probes=0)) == "probes: must be >= 1, got 0"
    for name in ("auto_max_nd", "max_dense"):
        assert raises_named(ParameterError, name, lambda: diagnose(w, **{name: -1})) == f"{name}: must be >= 0, got -1"
    msg = raises_named(ParameterError, "method", lambda: diagnose(w, method="sparse"))
    assert "sparse" in msg and "'dense'" in msg and "'factored'" in msg


# ------------------------------------------------------------------------------ diagnose: arguments reach both paths
def _path3():
    """P reversible with π = (¼, ½, ¼) (a lazy path on 3 states), O = I₂."""
    P = host([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    return P, ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))


@pytest.mark.parametrize("method", ["dense", "factored"])
def test_a_given_pi_is_the_one_judged(method):
    """``pi=`` replaces the Perron vector in every π-weighted check, on both paths: the uniform π is
    not balanced for this P (π_0 P_01 − π_1 P_10 = (½ − ¼)/3 ≠ 0), the Perron π is."""

    P, w = _path3()
    D = diagnose(w, method=method)
    assert torch.allclose(D.pi, host([0.25, 0.5, 0.25]), rtol=0, atol=1e-15) and bool(D.detailed_balance.holds)
    u = torch.full((3,), 1 / 3, dtype=F)
    G = diagnose(w, method=method, pi=u)
    assert torch.equal(G.pi, u)
    assert not bool(G.detailed_balance.holds) and not bool(G.self_adjoint.holds)
    flux = (u[:, None] * P - (u[:, None] * P).T).abs().max()  # literal π_i P_ij − π_j P_ji
    assert float(flux) == pytest.approx(1 / 12, rel=1e-15)
    assert float(G.detailed_balance.residual) >= float(flux) - 1e-16


def test_factored_path_receives_probes_seed_tolerances_and_options():
    """``diagnose(method="factored")`` gets the same probes, seed and tolerance precisions as the
    dense path (its Dirichlet residual on a non-stochastic walk, which depends on the probes, equals
    the dense one) and its own options."""

    P = host([[0.2, 1.5, 0.3], [0.4, 0.1, 0.2], [1.0, 0.6, 0.9]])  # rows ≠ 1: a probe-dependent defect
    w = ConnectionWalk.from_edges(P, torch.eye(2, dtype=F))
    res = {}
    for key, kw in (("default", {}), ("other", {"probes": 5, "seed": 3})):
        dense = float(diagnose(w, method="dense", **kw).dirichlet.residual)
        fact = float(diagnose(w, method="factored", **kw).dirichlet.residual)
        assert fact == pytest.approx(dense, rel=1e-12, abs=0)
        res[key] = fact
    # the two probe sets give residuals far apart (beyond float64 rounding at this size, so the
    # agreement above tells which probes the factored path used)
    assert abs(res["other"] - res["default"]) > tol(F, 3, scale=res["default"])
    w32 = ConnectionWalk.from_edges(P.float(), torch.eye(2))
    d32, f32 = diagnose(w32, method="dense"), diagnose(w32, method="factored")
    assert f32.stochastic.tol == d32.stochastic.tol == tol(torch.float32, 3)
    f = diagnose(w, method="factored", attention_dtype=torch.float32)
    assert f.extra["tolerance_dtype"] == "torch.float32" and f.stochastic.tol == tol(torch.float32, 3)
    assert diagnose(w, method="factored").stochastic.tol == tol(F, 3)
    S = diagnose(w, method="factored", spectrum=False)
    assert S.spectrum_interval.reason == "skipped: spectrum=False"


def test_float32_walk_is_diagnosed_in_float64():
    """A float32 heads walk: the dense path converts the walk before forming Δ, so the spectrum is
    that of the float64 operator built from the float32 entries (numpy oracle, literal blocks)."""

    g = torch.Generator().manual_seed(5)
    A = torch.softmax(torch.randn(2, 4, 4, generator=g), -1).float()
    T = torch.randn(2, 3, 3, generator=g).float()
    w = ConnectionWalk.from_mha(A, T)
    A64, T64 = A.double().numpy(), T.double().numpy()
    L = np.eye(12)
    for i in range(4):
        for j in range(4):
            L[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] -= A64[0, i, j] * T64[0] + A64[1, i, j] * T64[1]
    want = np.sort_complex(np.linalg.eigvals(L))
    got = np.sort_complex(diagnose(w, method="dense").spectrum.numpy())
    assert np.abs(got - want).max() < 1e-12


def test_components_count_one_way_edges():
    """``n_components`` counts weakly connected components of the support (networkx oracle): a
    one-way edge 0 → 1 joins the two states."""
    import networkx as nx

    P = host([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(2, dtype=F)))
    G = nx.DiGraph([(i, j) for i in range(3) for j in range(3) if P[i, j] > 0])
    assert int(D.n_components) == nx.number_weakly_connected_components(G) == 2


def test_gram_path_on_a_batch_equals_each_element():
    """The CᵀC route (forced with ``svd_max_entries=0``) on a batch of two different walks gives each
    element's kernel and parallel-section dimensions and flatness residual."""

    P = torch.full((3, 3), 1 / 3, dtype=F)
    walks = [triangle(0.0), triangle(0.7)]
    Ps = torch.stack([host(p) for p, _ in walks])
    Os = torch.stack([host(o) for _, o in walks])
    batch = diagnose(ConnectionWalk.from_edges(Ps, Os), svd_max_entries=0)
    for b, (p, o) in enumerate(walks):
        one = diagnose(ConnectionWalk.from_edges(host(p), host(o)))
        assert int(batch.kernel_dim[b]) == int(one.kernel_dim) and int(batch.parallel_dim[b]) == int(one.parallel_dim)
        assert float(batch.flat.residual[b]) == pytest.approx(float(one.flat.residual), abs=1e-7)
    assert P.shape == (3, 3)


@pytest.mark.parametrize("ratio,absent", [(0.75, True), (1.5, False)])
def test_head_sum_floor_is_tol_h_times_the_head_terms(ratio, absent):
    """A block that is a sum of head terms counts as absent iff ‖B_ij‖ ≤ tol(float64, H)·Σ_h |a^h_ij|‖T_h‖
    (its rounding level). Three heads, T = (s, s, −s) with s = 10⁶, a₀₁ = (¼, ¼, ½ − δ): B₀₁ = δ·s
    exactly, with δ set at 0.75 and 1.5 floors; B₁₀ = s/2, so the block support is one-way iff
    B₀₁ is absent."""

    s = 1e6
    delta = ratio * tol(F, 3) * 1.0  # Σ_h |a^h_01| = 1 − δ: the floor up to a relative δ
    a3 = 0.5 - delta
    A = torch.tensor([[[0.75, 0.25], [0.5, 0.5]], [[0.75, 0.25], [0.5, 0.5]], [[1 - a3, a3], [0.5, 0.5]]], dtype=F)
    T = torch.tensor([[[s]], [[s]], [[-s]]], dtype=F)
    w = ConnectionWalk.from_mha(A, T)
    B01 = abs(float(w.blocks()[0, 1, 0, 0]))
    floor = tol(F, 3) * float(A[:, 0, 1].abs().sum()) * s
    assert (floor >= B01) is absent and 0.5 * floor < B01 < 2 * floor
    reason = diagnose(w).block_detailed_balance.reason
    assert (reason == "the support of B has transient states: no positive π") is absent


def test_a_mixed_batch_is_judged_element_by_element():
    """Four different walks (n = 3, d = 2) in one batch: every check's residual (the Dirichlet one
    aside: its seeded probes depend on the batch shape) and verdict, π and the spectrum equal those
    of the same walk diagnosed alone — no reduction runs across the batch."""

    g = torch.Generator().manual_seed(11)
    path = host([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    cycle = host([[0.2, 0.8, 0.0], [0.0, 0.2, 0.8], [0.8, 0.0, 0.2]])
    soft = torch.softmax(torch.randn(3, 3, generator=g, dtype=F), -1)
    lazy = host([[0.4, 0.3, 0.3], [0.3, 0.4, 0.3], [0.3, 0.3, 0.4]])
    eye = torch.eye(2, dtype=F).expand(3, 3, 2, 2)
    R = torch.as_tensor(rot(0.4))
    rots = torch.stack(
        [torch.stack([R if i < j else (R.T if i > j else torch.eye(2, dtype=F)) for j in range(3)]) for i in range(3)]
    )
    # two elements without a positive π: a transient state 0, and a zero block row 0 (O_0j = 0)
    transient = host([[0.2, 0.8, 0.0], [0.0, 0.5, 0.5], [0.0, 0.5, 0.5]])
    zero_row = eye.clone()
    zero_row[0] = 0.0
    Ps = torch.stack([path, cycle, soft, lazy, transient, lazy])
    Os = torch.stack([eye, rots, torch.randn(3, 3, 2, 2, generator=g, dtype=F), 0.8 * rots, eye, zero_row])
    Db = diagnose(ConnectionWalk.from_edges(Ps, Os))
    verdicts = set()
    for b in range(6):
        D1 = diagnose(ConnectionWalk.from_edges(Ps[b], Os[b]))
        for name, c in D1.checks().items():
            cb = getattr(Db, name)
            assert bool(cb.holds[b]) == bool(c.holds), (b, name)
            verdicts.add((name, bool(c.holds)))
            if name == "dirichlet":
                continue
            r1, rb = float(c.residual), float(cb.residual[b])
            assert (math.isnan(r1) and math.isnan(rb)) or rb == pytest.approx(r1, rel=1e-9, abs=1e-15), (b, name)
        assert torch.allclose(Db.pi[b], D1.pi, rtol=0, atol=1e-14, equal_nan=True)
        assert torch.allclose(
            torch.sort(Db.spectrum[b].real).values, torch.sort(D1.spectrum.real).values, rtol=0, atol=1e-12
        )
        assert int(Db.kernel_dim[b]) == int(D1.kernel_dim) and int(Db.n_components[b]) == int(D1.n_components)
        assert torch.equal(torch.isnan(Db.block_pi[b]), torch.isnan(D1.block_pi))
    # a given π, element by element as well (uniform: balanced for the symmetric walks only; one
    # element's π has a zero entry, so it alone is not positive)
    u = torch.full((6, 3), 1 / 3, dtype=F)
    u[2] = torch.tensor([0.5, 0.5, 0.0], dtype=F)
    Gb = diagnose(ConnectionWalk.from_edges(Ps, Os), pi=u)
    for b in range(6):
        G1 = diagnose(ConnectionWalk.from_edges(Ps[b], Os[b]), pi=u[b])
        for name in ("positive_stationary", "detailed_balance", "self_adjoint"):
            r1, rb = float(getattr(G1, name).residual), float(getattr(Gb, name).residual[b])
            assert bool(getattr(Gb, name).holds[b]) == bool(getattr(G1, name).holds), (b, name)
            assert (math.isnan(r1) and math.isnan(rb)) or rb == pytest.approx(r1, rel=1e-9, abs=1e-15), (b, name)
    # the batch mixes verdicts: most checks hold on some elements and fail on others
    mixed = {n for n, h in verdicts if (n, not h) in verdicts}
    assert {"detailed_balance", "block_detailed_balance", "orthogonal", "self_adjoint"} <= mixed


def test_given_pi_shape_dtype_and_the_no_positive_pi_reasons():
    """A given π must have the walk's batch shape (error names ``pi`` and both shapes); a float32
    walk with a float32 π is judged in float64 like the same walk in float64; the reasons of the
    π-weighted checks are "no positive π", followed by the stationary-distribution reasons joined
    with "; " when there are any."""
    from numerics.laplacian import diagnose
    from tests.helpers import raises_named

    w = ConnectionWalk.from_edges(torch.full((3, 3), 1 / 3, dtype=F), torch.eye(2, dtype=F))
    msg = raises_named(ShapeError, "pi", lambda: diagnose(w, pi=torch.ones(2, 3, dtype=F)))
    assert msg == "pi: expected (3,), got (2, 3)"
    P = host([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])
    pi = torch.tensor([0.2, 0.5, 0.3])
    D32 = diagnose(ConnectionWalk.from_edges(P.float(), torch.eye(2)), pi=pi)
    D64 = diagnose(ConnectionWalk.from_edges(P.float().double(), torch.eye(2, dtype=F)), pi=pi.double())
    assert D32.pi.dtype == F and torch.equal(D32.pi, D64.pi)
    assert float(D32.detailed_balance.residual) == float(D64.detailed_balance.residual) > 0
    G = diagnose(w, pi=torch.tensor([0.5, 0.5, 0.0], dtype=F))
    assert G.self_adjoint.reason == "no positive π" and not bool(G.self_adjoint.holds)
    two = host([[0.5, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0.5, 0.5]])  # 2 closed classes, 2 transient
    D = diagnose(ConnectionWalk.from_edges(two, torch.eye(2, dtype=F)))
    reasons = D.positive_stationary.reason.split("; ")
    assert len(reasons) == 2 and reasons[0].startswith("several stationary distributions (2 closed classes)")
    assert reasons[1].startswith("transient states")
    assert D.self_adjoint.reason == "no positive π: " + "; ".join(reasons)


def test_diagnostics_move_to_another_device_whole():
    """``LaplacianDiagnostics.to`` moves every tensor and every check's tensors (the factored path
    diagnoses a walk on an accelerator on a host copy and returns the result on the walk's device);
    the meta device stands in for an accelerator on a CPU-only machine."""

    P = torch.full((3, 3), 1 / 3, dtype=F)
    D = diagnose(ConnectionWalk.from_edges(P, torch.eye(2, dtype=F)), method="factored")
    M = D.to("meta")
    for name, c in M.checks().items():
        assert c.holds.device.type == c.fails.device.type == c.residual.device.type == "meta", name
        assert (
            c.tol == getattr(D, name).tol and c.error == getattr(D, name).error and c.reason == getattr(D, name).reason
        )
    for k in (
        "pi",
        "pi_unique",
        "block_pi",
        "rho",
        "scale",
        "transport_scale",
        "kernel_dim",
        "parallel_dim",
        "n_components",
    ):
        assert getattr(M, k).device.type == "meta", k
    assert M.n == D.n and M.d == D.d and M.extra == D.extra
    back = D.to("cpu")
    assert back.summary() == D.summary()
