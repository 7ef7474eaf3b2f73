"""T1/T2/T3 at scale: instances built from a drawn seed (``numerics.strategies.seeded_walks``), so
``n`` reaches ``$CONNWALK_SCALE_MAX_N`` (1024 on a GPU run) without drawing n² entries one by one.

The oracle for the factored walk is the literal block formula ``y_i = Σ_j (Σ_h A^h_ij T_h) x_j`` on
sampled rows ``i`` in float64 on the CPU; for T3 the literal Dirichlet sums over every edge."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from numerics import strategies as cst
from numerics.tolerance import assert_close
from numerics.walk import ConnectionWalk
from theory.report import record


def _rows(n: int, k: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return sorted(set(torch.randint(0, n, (k,), generator=g).tolist()) | {0, n - 1})


def _literal_rows(A: torch.Tensor, T: torch.Tensor, X: torch.Tensor, rows: list[int]) -> torch.Tensor:
    A64, T64, X64 = (t.detach().cpu().double() for t in (A, T, X))
    out = torch.zeros(len(rows), X64.shape[1], dtype=torch.float64)
    for r, i in enumerate(rows):
        B = torch.zeros(A64.shape[-1], T64.shape[-1], T64.shape[-1], dtype=torch.float64)
        for h in range(A64.shape[0]):
            B += A64[h, i][:, None, None] * T64[h]
        out[r] = torch.einsum("jab,jb->a", B, X64)
    return out


@pytest.mark.theorem("T2")
@given(cst.seeded_walks())
def test_mha_walk_at_scale_matches_literal_blocks(inst):
    w = ConnectionWalk.from_mha(inst.A, inst.T)
    Y = w.apply(inst.X)
    rows = _rows(inst.n, 8, inst.seed)
    ref = _literal_rows(inst.A, inst.T, inst.X, rows)
    r = assert_close(Y[rows].cpu(), ref, size=inst.n * inst.d * inst.H, what=f"walk rows (n={inst.n})")
    record("T2", residual=r)


@pytest.mark.theorem("T1")
@given(cst.seeded_walks(max_heads=1))
def test_sha_walk_at_scale_matches_literal_blocks(inst):
    w = ConnectionWalk.from_sha(inst.A[0], inst.T[0])
    Y = w.apply(inst.X)
    rows = _rows(inst.n, 8, inst.seed)
    ref = _literal_rows(inst.A[:1], inst.T[:1], inst.X, rows)
    r = assert_close(Y[rows].cpu(), ref, size=inst.n * inst.d, what=f"SHA rows (n={inst.n})")
    record("T1", residual=r)


@pytest.mark.theorem("T3")
@given(cst.seeded_walks(max_d=4, max_heads=1), st.integers(0, 2**31 - 1))
def test_dirichlet_identities_at_scale(inst, probe_seed):
    """Reversible P = D⁻¹K (K symmetric from the drawn scores) with O_ij = R_i R_jᵀ Q_ij where
    Q_ji = Q_ijᵀ orthogonal: ⟨x,(I∓W)x⟩_π = ½ Σ π_i P_ij ‖x_i ∓ O_ij x_j‖², so spec Δ ⊂ [0, 2].
    The quadratic forms use the walk's matrix-free apply; the right-hand sides the literal sums."""
    n, d = inst.n, inst.d
    dev, dt = inst.A.device, inst.A.dtype
    g = torch.Generator().manual_seed(inst.seed)
    K = inst.A[0].double().cpu()
    K = (K + K.T) / 2  # symmetric, positive: reversible walk P = D⁻¹K with π ∝ D
    deg = K.sum(1)
    P = K / deg[:, None]
    pi = deg / deg.sum()
    G = torch.randn(n, n, d, d, generator=g, dtype=torch.float64)
    Q, _ = torch.linalg.qr(G)
    iu = torch.triu_indices(n, n, 1)
    O = Q.clone()
    O[iu[1], iu[0]] = Q[iu[0], iu[1]].transpose(-1, -2)  # O_ji = O_ijᵀ
    diag = torch.eye(d, dtype=torch.float64).expand(n, d, d).clone()
    diag[:, 0, 0] = -1.0  # symmetric orthogonal O_ii (a reflection)
    O[torch.arange(n), torch.arange(n)] = diag
    w = ConnectionWalk.from_edges(P.to(dev, dt), O.to(dev, dt))
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(probe_seed), dtype=torch.float64)
    Wx = w.apply(x.to(dev, dt)).double().cpu()
    lhs_minus = (pi[:, None] * x * (x - Wx)).sum()
    lhs_plus = (pi[:, None] * x * (x + Wx)).sum()
    Ox = torch.einsum("ijab,jb->ija", O, x)
    rhs_minus = 0.5 * (pi[:, None] * P * ((x[:, None, :] - Ox) ** 2).sum(-1)).sum()
    rhs_plus = 0.5 * (pi[:, None] * P * ((x[:, None, :] + Ox) ** 2).sum(-1)).sum()
    size = n * n * d
    r1 = assert_close(lhs_minus, rhs_minus, size=size, dtype=dt, what="⟨x,Δx⟩_π vs Dirichlet sum")
    r2 = assert_close(lhs_plus, rhs_plus, size=size, dtype=dt, what="⟨x,(2I−Δ)x⟩_π vs Dirichlet sum")
    assert rhs_minus >= 0 and rhs_plus >= 0
    record("T3", residual=max(r1, r2))
