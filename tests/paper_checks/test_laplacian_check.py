"""The LAP check: factored statistics vs a literal dense float64 reference, constructed walks with
known answers, the nearest walks satisfy the hypotheses (checked by the dense ``diagnose``), and the
check in the main job / CLI on synthetic models."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import connwalk as cli
from numerics.errors import ShapeError
from numerics.laplacian import diagnose
from numerics.walk import ConnectionWalk
from paper_checks import laplacian_stats as LS

F64 = torch.float64
SPEC_STATS = (
    "stochastic",
    "detailed_balance",
    "block_detailed_balance",
    "transpose_symmetry",
    "orthogonality",
    "scaled_isometry",
    "self_adjoint",
    "dirichlet",
    "dist_reversible",
    "dist_laplacian",
)


def _instance(seed, *, B=2, H=3, n=5, d=6, dh=2, causal=False, gqa=False):
    g = torch.Generator().manual_seed(seed)
    S = torch.randn(B, H, n, n, generator=g, dtype=F64)
    if causal:
        S = S.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -math.inf)
    A = S.softmax(-1)
    Wo = torch.randn(H, d, dh, generator=g, dtype=F64) / math.sqrt(d)
    Wv = torch.randn(H, dh, d, generator=g, dtype=F64) / math.sqrt(d)
    if gqa:  # heads 0 and 1 share a value block (grouped-query attention)
        Wv[1] = Wv[0]
    X = torch.randn(B, n, d, generator=g, dtype=F64)
    return A, Wo, Wv, X


def _factored(A, Wo, Wv, X):
    out = LS.hypothesis_defects(A, Wo, Wv)
    out["dirichlet"] = LS.dirichlet_defect(A, Wo, Wv, X)
    out.update(LS.nearest_walk_distances(A, Wo, Wv, X))
    return out


def _close(a, b, rtol=1e-9):
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= rtol * max(1.0, abs(b))


@settings(max_examples=12)
@given(
    seed=st.integers(0, 2**16),
    causal=st.booleans(),
    gqa=st.booleans(),
    n=st.integers(2, 6),
    dh=st.integers(1, 3),
    H=st.integers(1, 3),
)
def test_factored_matches_dense_reference(seed, causal, gqa, n, dh, H):
    d = 5
    A, Wo, Wv, X = _instance(seed, B=2, H=H, n=n, d=d, dh=dh, causal=causal, gqa=gqa and H > 1)
    f = _factored(A, Wo, Wv, X)
    for b in range(2):
        ref = LS.dense_reference(A, Wo, Wv, X, b=b)
        for k in SPEC_STATS:
            assert _close(float(f[k][b]), ref[k]), (k, float(f[k][b]), ref[k])
        assert _close(LS.spectral_radius(A, Wo, Wv, index=b, tol_arpack=1e-12), ref["spectral_radius"], 1e-7)
        if causal and n > 1:
            for k in ("detailed_balance", "block_detailed_balance", "self_adjoint", "dirichlet"):
                assert math.isnan(float(f[k][b]))


@pytest.mark.parametrize("gqa", [False, True])
def test_transport_grams_match_the_e2_gram_terms_and_dense_traces(gqa):
    _, Wo, Wv, _ = _instance(3, H=3, d=7, dh=2, gqa=gqa)
    G, N, Q4 = LS.transport_grams(Wo, Wv)
    G2, Q4e = LS.S.edge_gram_terms(Wo, Wv)  # the E2 implementation (independent einsum route)
    assert torch.allclose(G, G2, atol=1e-12) and torch.allclose(Q4, Q4e, atol=1e-12)
    T = Wo @ Wv
    assert torch.allclose(N, torch.einsum("hab,kba->hk", T, T), atol=1e-12)  # tr(T_h T_k), literal
    assert torch.allclose(G, torch.einsum("hab,kab->hk", T, T), atol=1e-12)  # tr(T_hᵀ T_k)
    Gh, Nh = LS.head_grams(Wo, Wv)
    assert torch.allclose(G, Gh, atol=1e-12) and torch.allclose(N, Nh, atol=1e-12)


def _reversible_attention(seed, n, B=1):
    """Softmax of symmetric scores: reversible with π ∝ row sums of exp(S) (T4)."""
    g = torch.Generator().manual_seed(seed)
    S = torch.randn(B, n, n, generator=g, dtype=F64)
    S = S + S.transpose(-1, -2)
    return S.softmax(-1)


def _householder(d, seed):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(d, 1, generator=g, dtype=F64)
    return torch.eye(d, dtype=F64) - 2 * u @ u.T / (u.T @ u)


@pytest.mark.parametrize("s", [1.0, 0.6])
def test_walk_that_satisfies_the_hypotheses_has_zero_defects_and_distance(s):
    n, d, H = 6, 4, 2
    P = _reversible_attention(3, n, B=2)
    A = P[:, None].expand(2, H, n, n).contiguous()  # shared attention: O_ij = Σ_h T_h = sQ
    Q = _householder(d, 5)  # orthogonal involution
    Wo = (s / H) * Q.expand(H, d, d).contiguous()
    Wv = torch.eye(d, dtype=F64).expand(H, d, d).contiguous()
    X = torch.randn(2, n, d, generator=torch.Generator().manual_seed(1), dtype=F64)
    f = _factored(A, Wo, Wv, X)
    for k in ("stochastic", "detailed_balance", "dist_reversible", "dist_laplacian"):
        assert float(f[k].abs().max()) < 1e-12, (k, f[k])
    res = LS.gram_resolution(n, H)  # Gram-identity defects: √(difference of O(1) sums)
    for k in ("block_detailed_balance", "transpose_symmetry", "scaled_isometry", "self_adjoint"):
        assert float(f[k].abs().max()) <= res, (k, f[k], res)
    # orthogonality: O = sQ gives ‖OᵀO − I‖_F/√d = |s² − 1| exactly
    assert torch.allclose(f["orthogonality"], torch.full((2,), abs(s * s - 1), dtype=F64), atol=res)
    assert torch.allclose(f["laplacian_scale"], torch.full((2,), s, dtype=F64), atol=1e-12)
    if s == 1.0:
        assert float(f["dirichlet"].max()) < 1e-12
    # the spectral radius of P ⊗ sQ is s (P stochastic, Q = ±1 eigenvalues)
    assert abs(LS.spectral_radius(A, Wo, Wv, tol_arpack=1e-12) - s) < 1e-9
    # the dense diagnose agrees that the (unscaled) walk satisfies T3
    if s == 1.0:
        dg = diagnose(ConnectionWalk.from_factors(A[0], Wo, Wv))
        assert bool(dg.hypotheses_t3()) and bool(dg.conclusions_t3())


def _rotation_walk(theta, n=5, seed=0):
    P = _reversible_attention(seed, n, B=1)
    R = torch.tensor([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]], dtype=F64)
    A = P[:, None]  # one head
    return A, R[None], torch.eye(2, dtype=F64)[None]


@pytest.mark.parametrize("theta", [0.0, 0.3, 1.0, 2.5])
def test_rotation_transport_known_answers(theta):
    """P reversible, O_ij ≡ R(θ): the π-symmetrisation is P ⊗ cos θ I, so the output changes by
    P ⊗ sin θ J: dist_reversible = |sin θ|; transpose symmetry = self-adjointness defect = |tan θ|;
    orthogonality, scaled isometry, detailed balance, Dirichlet = 0; ρ(W) = 1."""
    A, Wo, Wv = _rotation_walk(theta)
    X = torch.randn(1, 5, 2, generator=torch.Generator().manual_seed(7), dtype=F64)
    f = _factored(A, Wo, Wv, X)
    assert abs(float(f["dist_reversible"][0]) - abs(math.sin(theta))) < 1e-12
    res = LS.gram_resolution(5, 1)
    for k in ("transpose_symmetry", "self_adjoint", "block_detailed_balance"):
        assert abs(float(f[k][0]) - abs(math.tan(theta))) <= res * (1 + math.tan(theta) ** 2), k
    for k in ("orthogonality", "scaled_isometry"):
        assert float(f[k][0]) <= res, k
    for k in ("detailed_balance", "dirichlet", "stochastic"):
        assert float(f[k][0]) < 1e-12, k
    assert abs(LS.spectral_radius(A, Wo, Wv, tol_arpack=1e-12) - 1.0) < 1e-9


def _brute_force_involution_distance(Y, Z):
    """min over s ≥ 0 and 2×2 orthogonal involutions (±I, reflections Ref(φ)) of ‖Y − sZQ‖/‖Y‖, by a
    dense grid over φ refined with a bounded scalar minimiser (independent of the closed form)."""
    from scipy.optimize import minimize_scalar

    Y, Z = Y.numpy(), Z.numpy()

    def resid(Q):
        ZQ = Z @ Q
        s = max(float((Y * ZQ).sum() / (ZQ * ZQ).sum()), 0.0)
        return float(np.linalg.norm(Y - s * ZQ))

    ref = lambda p: np.array([[math.cos(p), math.sin(p)], [math.sin(p), -math.cos(p)]])
    best = min(resid(np.eye(2)), resid(-np.eye(2)))
    grid = np.linspace(0, 2 * math.pi, 721)
    vals = [resid(ref(p)) for p in grid]
    k = int(np.argmin(vals))
    r = minimize_scalar(
        lambda p: resid(ref(p)),
        bounds=(grid[max(k - 1, 0)], grid[min(k + 1, 720)]),
        method="bounded",
        options={"xatol": 1e-12},
    )
    best = min(best, float(r.fun), min(vals))
    return best / float(np.linalg.norm(Y))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_involution_distance_matches_brute_force(seed):
    g = torch.Generator().manual_seed(seed)
    n = 6
    A = torch.randn(1, 2, n, n, generator=g, dtype=F64).softmax(-1)
    Wo = torch.randn(2, 2, 1, generator=g, dtype=F64)
    Wv = torch.randn(2, 1, 2, generator=g, dtype=F64)
    X = torch.randn(1, n, 2, generator=g, dtype=F64)
    f = LS.nearest_walk_distances(A, Wo, Wv, X)
    Y = LS.walk_output(A, Wo, Wv, X)[0]
    _, _, P2 = LS.reversible_part(A, Wo, Wv, X)
    bf = _brute_force_involution_distance(Y, P2[0] @ X[0])
    assert float(f["dist_laplacian"][0]) <= bf + 1e-9  # closed form is the minimum ...
    assert float(f["dist_laplacian"][0]) >= bf - 1e-6  # ... and the brute force reaches it


@pytest.mark.parametrize("n,d", [(3, 20), (5, 11), (6, 12)])
def test_involution_on_the_data_subspace_equals_the_full_fit(n, d):
    g = torch.Generator().manual_seed(n * d)
    Y = torch.randn(2, n, d, generator=g, dtype=F64)
    Z = torch.randn(2, n, d, generator=g, dtype=F64)
    s_full, Q = LS.involution_fit(Y, Z)
    s_red, ZQ = LS.involution_apply(Y, Z)
    assert torch.allclose(s_full, s_red, atol=1e-12)
    assert torch.allclose(s_full[:, None, None] * (Z @ Q), ZQ, atol=1e-11)


def _dense_nearest_walks(A, Wo, Wv, b=0, causal=False):
    """The two target walks built edge by edge (independently of the operator formulas)."""
    A, Wo, Wv = A[b], Wo, Wv
    H, n, _ = A.shape
    T = Wo @ Wv
    P = A.mean(0)
    Bk = torch.einsum("hij,hab->ijab", A, T)
    if causal:
        pi = LS._pagerank_dense(P)
    else:
        M = torch.eye(n, dtype=F64) - P + 1.0
        pi = torch.linalg.solve(M.T, torch.ones(n, dtype=F64))
        pi = pi / pi.sum()
    f = pi[:, None] * P
    Fm = 0.5 * (f + f.T)
    pi2 = Fm.sum(1)
    P2 = Fm / pi2[:, None]
    O = torch.where((P > 0)[:, :, None, None], Bk / P.clamp_min(1e-300)[:, :, None, None], torch.zeros_like(Bk))
    O2 = torch.zeros_like(O)
    for i in range(n):
        for j in range(n):
            if f[i, j] + f[j, i] > 0:
                O2[i, j] = (f[i, j] * O[i, j] + f[j, i] * O[j, i].T) / (f[i, j] + f[j, i])
    return P2, O2, pi2


@pytest.mark.parametrize("causal", [False, True])
def test_nearest_walks_satisfy_the_hypotheses(causal):
    n, d = 5, 3
    A, Wo, Wv, X = _instance(11, B=1, H=2, n=n, d=d, dh=2, causal=causal)
    P2, O2, pi2 = _dense_nearest_walks(A, Wo, Wv, causal=causal)
    w_rev = ConnectionWalk.from_edges(P2, O2)
    dg = diagnose(w_rev)
    assert bool(dg.stochastic) and bool(dg.positive_stationary) and bool(dg.detailed_balance)
    assert bool(dg.transpose_symmetric) and bool(dg.self_adjoint)
    assert torch.allclose(dg.pi, pi2, atol=1e-12)  # π'' is the stationary law of P''
    # the operator formula of reversible_part equals the edge-by-edge walk
    Yr, pi2_f, P2_f = LS.reversible_part(A, Wo, Wv, X)
    assert torch.allclose(Yr[0], w_rev.apply(X[0]), atol=1e-12)
    assert torch.allclose(P2_f[0], P2, atol=1e-13) and torch.allclose(pi2_f[0], pi2, atol=1e-13)
    # the constant-involution Laplacian P'' ⊗ s*Q*: scaled connection Laplacian (T3 item 6, T5)
    Y = LS.walk_output(A, Wo, Wv, X)
    s, Q = LS.involution_fit(Y, P2_f @ X)
    assert torch.allclose(Q[0] @ Q[0], torch.eye(d, dtype=F64), atol=1e-12) and torch.allclose(Q[0], Q[0].T)
    dl = diagnose(ConnectionWalk.from_edges(P2, Q[0]))
    assert bool(dl.hypotheses_t3()) and bool(dl.conclusions_t3())
    ds = diagnose(ConnectionWalk.from_edges(P2, s[0] * Q[0]))
    assert bool(ds.scaled_isometry) and bool(ds.block_detailed_balance) and bool(ds.spectrum_scaled)
    dist = LS.nearest_walk_distances(A, Wo, Wv, X)
    YL = ConnectionWalk.from_edges(P2, s[0] * Q[0]).apply(X[0])
    assert abs(float(dist["dist_laplacian"][0]) - float((Y[0] - YL).norm() / Y[0].norm())) < 1e-12


def test_reversible_part_is_the_nearest_pi_self_adjoint_operator():
    """π stationary: W_rev = ½(W + Π⁻¹WᵀΠ) is the orthogonal projection onto π-self-adjoint operators
    in the Hilbert–Schmidt norm of ℓ²(π) ⊗ ℝ^d, ‖M‖² = tr(Π⁻¹MᵀΠM) = ‖Π^½ M Π^-½‖_F²."""
    n, d = 5, 3
    A, Wo, Wv, X = _instance(4, B=1, H=2, n=n, d=d, dh=2)
    P2, O2, pi2 = _dense_nearest_walks(A, Wo, Wv)
    W = ConnectionWalk.from_factors(A[0], Wo, Wv).to_dense()
    Wr = ConnectionWalk.from_edges(P2, O2).to_dense()
    r = pi2.repeat_interleave(d).sqrt()

    def hs(M):
        return float(torch.linalg.norm(r[:, None] * M / r[None, :]))

    base = hs(W - Wr)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        K = torch.randn(n * d, n * d, generator=g, dtype=F64)
        Ssym = (K + K.T) / r[:, None] ** 2  # Π S symmetric: π-self-adjoint
        Ssym = Ssym * 1.0
        assert torch.allclose(r[:, None] ** 2 * Ssym, (r[:, None] ** 2 * Ssym).T)
        for t in (1e-3, 1e-1):
            assert hs(W - (Wr + t * Ssym)) >= base - 1e-12


def test_bad_input_raises_with_argument_names():
    A, Wo, Wv, X = _instance(0)
    with pytest.raises(ShapeError, match="X"):
        LS.nearest_walk_distances(A, Wo, Wv, X[:, :, :-1])
    with pytest.raises(ShapeError, match="A"):
        LS.hypothesis_defects(A[:, :2], Wo, Wv)
    with pytest.raises(ShapeError, match="pi"):
        LS.reversible_part(A, Wo, Wv, X, pi=torch.zeros(2, 5, dtype=F64))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_constant_field_radius_is_an_eigenvalue_of_the_dense_walk(seed):
    """ρ(Σ_h T_h) beside ρ(W) in the report: every eigenvalue of Σ_h T_h is one of the literal dense
    W (numpy, float64, built block by block here), so it bounds ρ(W) from below on every prompt."""
    A, Wo, Wv, _ = _instance(seed, B=2, H=3, n=5, d=6, dh=4)
    An, T = A.numpy(), (Wo @ Wv).numpy()
    H, n, d = T.shape[0], An.shape[-1], T.shape[1]
    ev_sum = np.linalg.eigvals(T.sum(0))
    bound = LS.constant_field_radius(Wo, Wv)
    assert abs(bound - np.abs(ev_sum).max()) <= 1e-12 * max(1.0, bound)
    for b in range(An.shape[0]):
        W = np.zeros((n * d, n * d))
        for i in range(n):
            for j in range(n):
                W[i * d : (i + 1) * d, j * d : (j + 1) * d] = sum(An[b, h, i, j] * T[h] for h in range(H))
        ev_w = np.linalg.eigvals(W)
        for lam in ev_sum:
            assert np.abs(ev_w - lam).min() <= 1e-9, (b, lam)
        assert bound <= np.abs(ev_w).max() + 1e-12


def test_comparison_words_on_either_side_of_each_boundary():
    """The 'trained vs null' column: one case on each side of 0 and of the ±5%-of-|null| band."""
    from paper_checks import laplacian_check as L

    assert L.comparison((-0.2, -0.1), 1.0, both_hold=False) == L.COMPARISON_CLOSER
    assert L.comparison((0.1, 0.2), 1.0, both_hold=False) == L.COMPARISON_FARTHER
    assert L.comparison((-0.04, 0.04), 1.0, both_hold=False) == L.COMPARISON_SAME
    assert L.comparison((-0.06, 0.04), 1.0, both_hold=False) == L.COMPARISON_OPEN
    assert L.comparison((-0.04, -0.01), 1.0, both_hold=False) == L.COMPARISON_SAME  # closer, but within ±5%
    assert L.comparison((-0.06, -0.01), 1.0, both_hold=False) == L.COMPARISON_CLOSER
    assert L.comparison((float("nan"), 1.0), 1.0, both_hold=False) == L.COMPARISON_UNDEF
    assert L.comparison(None, 1.0, both_hold=False) == L.COMPARISON_UNDEF
    assert L.comparison((-0.2, -0.1), 1.0, both_hold=True) == L.COMPARISON_BOTH


def test_spectral_radius_digits_follow_the_arpack_tolerance():
    from paper_checks import laplacian_check as L
    from paper_checks.formatting import fmt_ci, fmt_sig

    assert [L.significant_digits(t) for t in (1e-3, 1e-6, 5e-4, 0.1)] == [3, 6, 3, 1]
    assert fmt_sig(76.41392, 3) == "76.4" and fmt_sig(1.2449, 3) == "1.24" and fmt_sig(None, 3) == "—"
    assert fmt_ci((1.2449, 1.9612), 3) == "[1.24, 1.96]"


SMALL = ["--prompts", "3", "--length", "8", "--null-seeds", "2", "--n-boot", "30", "--no-progress"]


def test_laplacian_claim_in_the_job_and_the_cli(tmp_path, capsys):
    out = tmp_path / "rep"
    assert (
        cli.main(
            [
                "paper-checks",
                "--out",
                str(out),
                "--models",
                "synthetic:enc",
                "synthetic:dec",
                "--claims",
                "laplacian",
                *SMALL,
            ]
        )
        == 0
    )
    data = json.loads((out / "results.json").read_text())
    rows = [r for r in data["rows"] if r["claim"] == "LAP"]
    assert {r["model"] for r in rows} == {"synthetic:enc", "synthetic:dec"}
    assert {r["statistic"] for r in rows} == set(SPEC_STATS) | {"spectral_radius"}
    assert all(r["claim"] == "LAP" for r in data["rows"])  # only the requested claim
    enc = {r["statistic"]: r for r in rows if r["model"] == "synthetic:enc"}
    dec = {r["statistic"]: r for r in rows if r["model"] == "synthetic:dec"}
    # softmax rows: stochastic at rounding level; causal walks: π-dependent statistics undefined
    assert enc["stochastic"]["extra"]["status_trained"] == "holds"
    assert enc["stochastic"]["verdict"] == "not reproduced" and "rounding" in enc["stochastic"]["notes"]
    assert dec["detailed_balance"]["trained"] is None and dec["detailed_balance"]["verdict"] == "inconclusive"
    assert enc["detailed_balance"]["trained"] is not None
    assert len(enc["dist_laplacian"]["extra"]["per_layer"]) == 6
    md = (out / "report.md").read_text()
    assert "## LAP: Laplacian reduction on real layers" in md and "### synthetic:dec" in md
    from paper_checks.laplacian_check import COMPARISON_BOTH, TABLE_HEADER

    assert md.count(TABLE_HEADER) == 2  # one table per model, with both questions as columns
    assert md.splitlines()[0] == "# connwalk paper checks: LAP"
    line = next(ln for ln in md.splitlines() if ln.startswith("| stochastic |") and "holds / holds" in ln)
    assert f"| {COMPARISON_BOTH} | **not reproduced** |" in line and COMPARISON_BOTH.startswith("not closer")
    sr = enc["spectral_radius"]["extra"]
    assert sr["significant_digits"] == 3 and sr["arpack_tol"] == 1e-3
    for p in sr["per_layer"]:  # ρ(W) ≥ ρ(Σ_h T_h) on every prompt, so on their mean
        assert p["trained"] >= p["lower_bound"] * (1 - 1e-3)
        assert f"≥ {p['lower_bound']:.3g}" in md
    capsys.readouterr()
    assert cli.main(["analyze", "synthetic:enc", "--claims", "LAP", *SMALL]) == 0
    table = capsys.readouterr().out
    assert "| LAP | synthetic:enc | dist_laplacian |" in table and "| E1 |" not in table
    assert cli.main(["analyze", "synthetic:enc", "--claims", "laplacien", *SMALL]) == 2


def test_statuses_agree_with_the_factored_diagnose():
    """The T3 ``diagnose(method="factored")`` and the LAP defects tell the same story: on a walk that
    satisfies the hypotheses every check holds and every defect is at rounding level; on a random
    softmax layer the checks fail and the defects are large."""
    n, d, H = 12, 6, 2
    P = _reversible_attention(8, n, B=1)
    A = P[:, None].expand(1, H, n, n).contiguous()
    Q = _householder(d, 2)
    Wo = (1.0 / H) * Q.expand(H, d, d).contiguous()
    Wv = torch.eye(d, dtype=F64).expand(H, d, d).contiguous()
    X = torch.randn(1, n, d, generator=torch.Generator().manual_seed(3), dtype=F64)
    good = diagnose(ConnectionWalk.from_factors(A[0], Wo, Wv), method="factored")
    f = _factored(A, Wo, Wv, X)
    res = LS.gram_resolution(n, H)
    assert bool(good.hypotheses_t3()) and bool(good.self_adjoint) and bool(good.dirichlet)
    assert all(
        float(f[k][0]) <= res
        for k in (
            "detailed_balance",
            "transpose_symmetry",
            "orthogonality",
            "scaled_isometry",
            "self_adjoint",
            "block_detailed_balance",
        )
    )
    A2, Wo2, Wv2, X2 = _instance(5, B=1, H=H, n=n, d=d, dh=3)
    bad = diagnose(ConnectionWalk.from_factors(A2[0], Wo2, Wv2), method="factored")
    f2 = _factored(A2, Wo2, Wv2, X2)
    for check, stat in (
        ("detailed_balance", "detailed_balance"),
        ("transpose_symmetric", "transpose_symmetry"),
        ("orthogonal", "orthogonality"),
        ("self_adjoint", "self_adjoint"),
        ("block_detailed_balance", "block_detailed_balance"),
        ("scaled_isometry", "scaled_isometry"),
    ):
        assert not bool(getattr(bad, check).holds), check
        assert float(f2[stat][0]) > 1e-3, stat
