"""The formulas THEOREMS.md shows for the claims E2, E5 and LAP are the statistics measured.

Each formula of a claim's ``params`` (:mod:`theory.formulas.claims`) is evaluated (``lambdify`` of
the very expression, :func:`theory.formulas.claims.evaluate`) on a random instance and compared with
the statistic the claim's measuring code computes (``paper_checks.laplacian_stats``,
``paper_checks.stats``, ``paper_checks.e5.sweep``); a fact the text states about the statistics
(``α − β`` is the Dirichlet residual, ``W_rev``'s walk is stochastic, ...) is evaluated on the same
instance. The registry names, per formula, the test below that evaluates it (``Claim.evaluated_by``),
and :data:`CLAIM_FORMULA_MUTANTS` shows each such test rejects an edit of the rendered expression.

Agreement is decided with :mod:`theory.rounding`: a comparison fails when the residual exceeds the
rounding bound of ``SIZE`` accumulated float64 terms at the values' scale; it is never a tolerance
picked to pass.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from paper_checks import laplacian_stats as LS
from paper_checks import stats as PS
from theory.formulas import a, b, d, i, j, tabulate
from theory.formulas import claims as FC
from theory.formulas import walks as FW
from theory.registry import get_claim
from theory.rounding import decide, rounding_error

F64 = torch.float64
N, D, H, DH = 4, 3, 2, 2
#: accumulated float64 terms of the largest computation compared (the dense ``nd × nd`` walk, per head)
SIZE = (N * D) ** 2 * H
_TEST_FILE = "tests/paper_checks/test_claim_formulas.py"


def _rejects(measured, formula) -> bool:
    """The comparison is decided unequal: ``max |measured − formula|`` exceeds its rounding bound."""
    m, f = np.asarray(measured, dtype=float), np.asarray(formula, dtype=float)
    residual = float(np.max(np.abs(m - f)))
    scale = max(float(np.max(np.abs(m))), float(np.max(np.abs(f))), 1.0)
    _, fails = decide(residual, 0.0, rounding_error(SIZE, scale))
    return bool(fails) or not np.isfinite(residual)


def _t(v) -> torch.Tensor:
    return torch.as_tensor(np.asarray(v), dtype=F64)


def _layer(seed: int, *, stochastic: bool = True):
    """Heads ``A`` ``(H, n, n)`` (softmax rows; rescaled rows when not ``stochastic``), ``W_O``, ``W_V``, input ``x``."""
    rng = np.random.default_rng(seed)
    A = np.exp(rng.standard_normal((H, N, N)))
    A /= A.sum(-1, keepdims=True)
    if not stochastic:
        A = A * rng.uniform(0.7, 1.3, size=(H, N, 1))
    Wo, Wv = rng.standard_normal((H, D, DH)), rng.standard_normal((H, DH, D))
    return A, Wo, Wv, rng.standard_normal((N, D))


def _instance(params, A, Wo, Wv, x) -> dict:
    """What the formulas are evaluated on: the sizes, the heads, ``T_h = W_O[h] W_V[h]`` (T1's layout),
    the input ``x``; the walk gauge ``P``, ``g``, ``O`` from the claim's own definitions; the walk's
    ``nd × nd`` matrix ``W`` (:data:`theory.formulas.walks.WALK_BLOCK`); ``π`` the stationary law of
    ``P`` (:func:`_stationary`)."""
    env = {"n": N, "d": D, "H": H, "A": A, "T": np.einsum("hak,hkb->hab", Wo, Wv), "x": x}
    for key in ("P", "g", "O"):
        f = params[key]
        env[f.lhs.base.label.name] = tabulate(f.rhs, f.free, env)
    blocks = tabulate(FW.WALK_BLOCK.rhs, FW.WALK_BLOCK.free, env)
    env["W"] = blocks.transpose(0, 2, 1, 3).reshape(N * D, N * D)
    env["pi"] = _stationary(env["P"])
    return env


def _stationary(P) -> np.ndarray:
    """Oracle: the stationary law of a row-stochastic ``P`` (least squares of ``πP = π``, ``Σπ = 1``)."""
    M = np.vstack([P.T - np.eye(len(P)), np.ones((1, len(P)))])
    return np.linalg.lstsq(M, np.r_[np.zeros(len(P)), 1.0], rcond=None)[0]


def _violation(rel, values) -> tuple:
    """``(violation, 0)`` of a relation ``≤`` / ``≥``: by how much its sides are on the wrong side
    (rejected, as any comparison, only when that exceeds the rounding bound)."""
    lhs, rhs = FC.evaluate(rel, values)
    over = lhs - rhs if isinstance(rel.rel, sp.LessThan) else rhs - lhs
    return (max(float(over), 0.0), 0.0)


def _measured(f, env, value) -> tuple:
    """``(measured, formula)`` of a statistic's definition ``f``, the measured value given as its symbol."""
    return tuple(FC.evaluate(f, {**env, f.lhs.name: value}))


# ------------------------------------------------------------------------------------------ LAP
def _hypotheses(params) -> dict[str, list]:
    A, Wo, Wv, x = _layer(0)
    env = _instance(params, A, Wo, Wv, x)
    hd = LS.hypothesis_defects(_t(A)[None], _t(Wo), _t(Wv))
    out = {k: [_measured(params[k], env, float(hd[k][0]))] for k in ("detailed_balance", "transpose_symmetry")}
    for key in ("orthogonality", "scaled_isometry"):
        out[key] = [_measured(params[key], env, float(hd[key][0]))]
    f = params["block_detailed_balance"]
    norms = FC.environment(f.where[:3], env)  # B, its block norms N and their row sums r
    env["lap_pin"] = _stationary(norms["lap_N"] / norms["lap_r"][:, None])
    out["block_detailed_balance"] = [_measured(f, env, float(hd["block_detailed_balance"][0]))]
    out["self_adjoint"] = [_measured(params["self_adjoint"], env, float(hd["self_adjoint"][0]))]
    A2, *_ = _layer(1, stochastic=False)  # rows that do not sum to 1: a nonzero stochasticity defect
    env2 = _instance(params, A2, Wo, Wv, x)
    out["stochastic"] = [
        _measured(params["stochastic"], env2, float(LS.hypothesis_defects(_t(A2)[None], _t(Wo), _t(Wv))["stochastic"])),
        _measured(params["stochastic"], env2, float(LS.stochastic_defect(_t(A2)[None])[0])),
    ]
    return out


def _dirichlet(params) -> dict[str, list]:
    A, Wo, Wv, x = _layer(2)
    env = _instance(params, A, Wo, Wv, x)
    f = params["dirichlet"]
    out = {"dirichlet": [_measured(f, env, float(LS.dirichlet_defect(_t(A)[None], _t(Wo), _t(Wv), _t(x)[None])))]}
    # any π-weighted walk: rows that do not sum to 1, a positive π that is not stationary
    A2, *_ = _layer(3, stochastic=False)
    env2 = _instance(params, A2, Wo, Wv, x)
    env2["pi"] = np.random.default_rng(3).uniform(0.5, 1.5, N)
    m2 = float(LS.dirichlet_defect(_t(A2)[None], _t(Wo), _t(Wv), _t(x)[None], pi=_t(env2["pi"])[None]))
    out["dirichlet"].append(_measured(f, env2, m2))
    out["dirichlet_split"] = [tuple(FC.evaluate(params["dirichlet_split"], FC.environment(f.where, env2)))]
    return out


def _radius(params) -> dict[str, list]:
    from numerics.tolerance import tol
    from paper_checks.laplacian_check import SPEC, STATUS_HOLDS, status

    A, Wo, Wv, x = _layer(4)
    env = _instance(params, A, Wo, Wv, x)
    rho = LS.spectral_radius(_t(A)[None], _t(Wo), _t(Wv), tol_arpack=0.0)
    out = {"radius": [(rho, FC.evaluate(params["radius"], env)[0])]}
    # a walk with T3's hypotheses (uniform P, one symmetric orthogonal transport): ρ(W) ≤ 1 holds
    v = np.arange(1.0, D + 1)
    Q = np.eye(D) - 2 * np.outer(v, v) / (v @ v)
    out["radius"].append(_violation(params["radius"], {"W": np.kron(np.full((N, N), 1 / N), Q)}))
    # the status of the spectral radius: 'holds' iff the interval's upper end satisfies the relation
    t32 = tol(torch.float32, N)
    out["radius_status"] = []
    for upper in (1 + t32 / 2, 1 + 2 * t32, 0.5):
        code = status((upper - 0.1, upper), SPEC["spectral_radius"].reference, t32) == STATUS_HOLDS
        shown = FC.holds(params["radius_status"], {"W": upper * np.eye(N * D), "lap_tol32": t32})
        out["radius_status"].append((float(code), float(shown)))
    return out


def _nearest(params):
    """The reversible walk's comparisons and the environment the involution fit continues from."""
    A, Wo, Wv, x = _layer(5)
    env = _instance(params, A, Wo, Wv, x)
    At, Wot, Wvt, Xt = _t(A)[None], _t(Wo), _t(Wv), _t(x)[None]
    Y_m = LS.walk_output(At, Wot, Wvt, Xt)[0].numpy()
    Yr_m, pi2_m, P2_m = (v[0].numpy() for v in LS.reversible_part(At, Wot, Wvt, Xt))
    dist = {k: float(v[0]) for k, v in LS.nearest_walk_distances(At, Wot, Wvt, Xt).items()}
    out: dict[str, list] = {}
    for key, name, measured in (("output", "lap_Y", Y_m), ("pi2", "lap_pi2", pi2_m), ("P2", "lap_P2", P2_m)):
        f = params[key]
        pair = tuple(FC.evaluate(f, {**env, name: measured}))
        out[key] = [pair]
        env[name] = pair[1]  # the formula's value: what the next formulas use
    Wrev = FC.value(params["W_rev"].rhs, env, where=params["W_rev"].where)
    Yr = (Wrev @ x.reshape(-1)).reshape(N, D)
    out["W_rev"] = [(Yr_m, Yr)]
    env["lap_Wrev"] = Wrev
    out["distance"] = [_measured(params["distance"], {**env, "lap_Yp": Yr}, dist["dist_reversible"])]
    for key in ("rev_transpose", "rev_stochastic", "rev_balance"):
        out[key] = [tuple(FC.evaluate(params[key], env))]
    return out, env, (Y_m, P2_m, x, dist)


def _reversible(params) -> dict[str, list]:
    return _nearest(params)[0]


def _involution(params) -> dict[str, list]:
    base, env, (Y_m, P2_m, x, dist) = _nearest(params)
    out: dict[str, list] = {"distance": base["distance"]}
    s_m, Q_m = (v[0].numpy() for v in LS.involution_fit(_t(Y_m)[None], _t(P2_m @ x)[None]))
    s_m = float(s_m)
    Z = FC.value(params["Z"].rhs, env)
    out["Z"] = [(P2_m @ x, Z)]
    env["Z"] = Z
    S = FC.value(params["eigen"].lhs, env)
    lam, U = np.linalg.eigh(S)  # oracle: the eigen-decomposition of the displayed sym(ZᵀY)
    env.update(U=U, Lambda=np.diag(lam), lap_lam=lam)
    out["eigen"] = [tuple(FC.evaluate(params["eigen"], env))]
    out["Q_star"] = [_measured(params["Q_star"], env, Q_m)]
    out["s_star"] = [_measured(params["s_star"], env, s_m), _measured(params["s_star"], env, dist["laplacian_scale"])]
    terms = FC.evaluate(params["involution"], {"Q": Q_m})
    out["involution"] = [(terms[0], t) for t in terms[1:]]
    out["scale"] = [_violation(params["scale"], {"s": s_m})]
    env.update(s=FC.value(params["s_star"].rhs, env), Q=FC.value(params["Q_star"].rhs, env))
    K = FC.evaluate(params["involution_walk"], env)
    YL = (K @ x.reshape(-1)).reshape(N, D)
    out["involution_walk"] = [_measured(params["distance"], {**env, "lap_Yp": YL}, dist["dist_laplacian"])]
    return out


# ----------------------------------------------------------------------------------------- E2, E5
def _procrustes(params) -> dict[str, list]:
    rng = np.random.default_rng(6)
    d_, h_, dh_ = 5, 2, 2  # rank(T_Σ) ≤ 4 < d: the zero singular values count
    Wo, Wv = rng.standard_normal((h_, d_, dh_)), rng.standard_normal((h_, dh_, d_))
    TS = np.einsum("hak,hkb->ab", Wo, Wv)
    f = params["procrustes"]
    env = {"d": d_, "e2_TS": TS}
    closed = float(FC.value(f.rhs, env, where=f.where))
    measured = float(PS.procrustes_defect(PS.summed_singular_values(_t(Wo), _t(Wv)), d_))
    inner = f.lhs.args[0]  # the minimised expression, evaluated at scales s and orthogonal Q
    Uo, sv, Vt = np.linalg.svd(TS)
    at_polar = float(FC.value(inner, {**env, "s": sv.sum() / d_, "Q": Uo @ Vt}))
    sampled = []
    for _ in range(64):
        Qr, Rr = np.linalg.qr(rng.standard_normal((d_, d_)))
        sampled.append(
            float(FC.value(inner, {**env, "s": rng.uniform(0, 2 * sv.max()), "Q": Qr * np.sign(np.diag(Rr))}))
        )
    # the minimum is attained (polar factor, s = Σσ/d) and no sampled (s, Q) goes below it
    return {"procrustes": [(measured, closed), (at_polar, closed), (0.0, max(closed - min(sampled), 0.0))]}


def _agreement(params) -> dict[str, list]:
    from paper_checks.e5.cells import COARSE
    from paper_checks.e5.sweep import agreement

    out = [(float(FC.E5_CLASSES == COARSE), 1.0)]
    f = params["agreement"]
    for cp in COARSE:
        for co in COARSE:
            for kp in range(3):
                for ko in range(3):
                    code = agreement(cp, kp, co, ko)
                    values = {
                        "e5_c_pred": COARSE.index(cp),
                        "e5_c_obs": COARSE.index(co),
                        "e5_k_pred": kp,
                        "e5_k_obs": ko,
                    }
                    lhs, rhs = FC.evaluate(f, {**values, f.lhs.name: code})
                    out.append((float(lhs), float(rhs)))
    return {"agreement": out}


#: the comparisons of each test the registry names (``Claim.evaluated_by``)
GROUPS = {
    "test_lap_hypothesis_defects_are_the_rendered_formulas": _hypotheses,
    "test_lap_dirichlet_defect_is_the_rendered_formula": _dirichlet,
    "test_lap_spectral_radius_is_the_rendered_formula": _radius,
    "test_lap_reversible_walk_is_the_rendered_formula": _reversible,
    "test_lap_involution_fit_is_the_rendered_formula": _involution,
    "test_e2_procrustes_defect_is_the_rendered_formula": _procrustes,
    "test_e5_agreement_is_the_rendered_formula": _agreement,
}
_CLAIM_OF = {"lap": "LAP", "e2": "E2", "e5": "E5"}


def _claim_of(test: str) -> str:
    return _CLAIM_OF[test.split("_")[1]]


def _run(test: str, params=None) -> dict[str, list]:
    return GROUPS[test](get_claim(_claim_of(test)).params if params is None else params)


def _check_agrees(test: str) -> None:
    claim = get_claim(_claim_of(test))
    checks = _run(test)
    keys = {k for k, t in claim.evaluated_by.items() if t.endswith("::" + test)} - {"P", "g", "O"}
    assert keys <= set(checks), (test, keys - set(checks))
    bad = [(k, m, f) for k, pairs in checks.items() for m, f in pairs if _rejects(m, f)]
    assert not bad, bad


@pytest.mark.theorem("LAP")
def test_lap_hypothesis_defects_are_the_rendered_formulas():
    _check_agrees("test_lap_hypothesis_defects_are_the_rendered_formulas")


@pytest.mark.theorem("LAP")
def test_lap_dirichlet_defect_is_the_rendered_formula():
    _check_agrees("test_lap_dirichlet_defect_is_the_rendered_formula")


@pytest.mark.theorem("LAP")
def test_lap_spectral_radius_is_the_rendered_formula():
    _check_agrees("test_lap_spectral_radius_is_the_rendered_formula")


@pytest.mark.theorem("LAP")
def test_lap_reversible_walk_is_the_rendered_formula():
    _check_agrees("test_lap_reversible_walk_is_the_rendered_formula")


@pytest.mark.theorem("LAP")
def test_lap_involution_fit_is_the_rendered_formula():
    _check_agrees("test_lap_involution_fit_is_the_rendered_formula")


@pytest.mark.theorem("E2")
def test_e2_procrustes_defect_is_the_rendered_formula():
    _check_agrees("test_e2_procrustes_defect_is_the_rendered_formula")


@pytest.mark.theorem("E5")
def test_e5_agreement_is_the_rendered_formula():
    _check_agrees("test_e5_agreement_is_the_rendered_formula")


@pytest.mark.theorem("E2")
@pytest.mark.theorem("E5")
@pytest.mark.theorem("LAP")
def test_every_claim_formula_is_evaluated_by_a_named_test():
    """Every formula a claim renders names the test of this module that evaluates it."""
    for cid in ("E2", "E5", "LAP"):
        claim = get_claim(cid)
        formulas = {k for k, v in claim.params.items() if callable(getattr(v, "markdown", None))}
        assert formulas and formulas == set(claim.evaluated_by), (cid, formulas ^ set(claim.evaluated_by))
        for key, node in claim.evaluated_by.items():
            path, name = node.split("::")
            assert path == _TEST_FILE and name in GROUPS and name in globals(), (cid, key, node)


# --------------------------------------------------------------------------------------- mutants
def _o(p, q, r, s):
    return FW.F.O_[p, q, r, s]


def _sum_sigma():
    return sp.Sum(FC.sigma_[a], (a, 0, d - 1))


_Fm, _W, _Pi = FC.Fm, FC.Wm, FC.Pi
#: edits of the rendered expressions: name -> (claim, formula key, edit); each is rejected by the
#: comparisons of the test the registry names for that formula
CLAIM_FORMULA_MUTANTS = {
    "LAP detailed_balance F - F^T -> F + F^T": (
        "LAP",
        "detailed_balance",
        lambda f: f.edited(rhs=FC.NormF(_Fm + _Fm.T) / FC.NormF(_Fm + _Fm.T)),
    ),
    "LAP orthogonality sqrt(d) -> d": (
        "LAP",
        "orthogonality",
        lambda f: f.edited(rhs=f.rhs.xreplace({1 / sp.sqrt(d): 1 / d})),
    ),
    "LAP block_detailed_balance B_ji^T -> B_ji": (
        "LAP",
        "block_detailed_balance",
        lambda f: f.edited(rhs=f.rhs.xreplace({FC.B_[j, i, b, a]: FC.B_[j, i, a, b]})),
    ),
    "LAP transpose_symmetry O_ji^T -> O_ji": (
        "LAP",
        "transpose_symmetry",
        lambda f: f.edited(rhs=f.rhs.xreplace({_o(j, i, b, a): _o(j, i, a, b)})),
    ),
    "LAP scaled_isometry drop the weights P_ij": (
        "LAP",
        "scaled_isometry",
        lambda f: f.edited(where=((FC.v_[i, j], FC.Indicator(FC._NORM_SQ > 0)),)),
    ),
    "LAP stochastic drop - 1": (
        "LAP",
        "stochastic",
        lambda f: f.edited(rhs=FC.MaxOver(sp.Abs(sp.Sum(FW.P[i, j], (j, 0, FC.n - 1))), sp.Tuple(i, 0, FC.n - 1))),
    ),
    "LAP self_adjoint W^T Pi -> W Pi": (
        "LAP",
        "self_adjoint",
        lambda f: f.edited(rhs=FC.NormF(_Pi * _W - _W * _Pi) / FC.NormF(_Pi * _W + _W * _Pi)),
    ),
    "LAP dirichlet_split 1/2 -> 1": (
        "LAP",
        "dirichlet_split",
        lambda f: f.edited(rhs=f.rhs.xreplace({sp.Rational(-1, 2): sp.S.NegativeOne})),
    ),
    "LAP radius <= 1 -> <= 1/2": ("LAP", "radius", lambda f: f.edited(rel=sp.LessThan(f.rel.lhs, sp.Rational(1, 2)))),
    "LAP radius_status 1 + tol -> 1": ("LAP", "radius_status", lambda f: f.edited(rel=sp.LessThan(f.rel.lhs, 1))),
    "LAP pi2 P^T pi -> P pi": (
        "LAP",
        "pi2",
        lambda f: f.edited(rhs=f.rhs.xreplace({FW.P[j, i]: FW.P[i, j]})),
    ),
    "LAP W_rev W^T -> W": (
        "LAP",
        "W_rev",
        lambda f: f.edited(rhs=sp.Inverse(FC.Pi2) * (_Pi * _W + _W * _Pi) / 2),
    ),
    "LAP s_star ||Z||^2 -> ||Z||": (
        "LAP",
        "s_star",
        lambda f: f.edited(rhs=f.rhs.xreplace({FC.NormF(FC.Zm) ** -2: 1 / FC.NormF(FC.Zm)})),
    ),
    "LAP Q_star sign(Lambda) -> Lambda": ("LAP", "Q_star", lambda f: f.edited(rhs=FC.Um * FC.Lam * FC.Um.T)),
    "LAP P drop 1/H": ("LAP", "P", lambda f: f.edited(rhs=f.rhs * FW.H)),
    "E2 procrustes d -> d^2": (
        "E2",
        "procrustes",
        lambda f: f.edited(rhs=sp.sqrt(1 - _sum_sigma() ** 2 / (d**2 * sp.Sum(FC.sigma_[a] ** 2, (a, 0, d - 1))))),
    ),
    "E2 procrustes (sum sigma)^2 -> sum sigma^2": (
        "E2",
        "procrustes",
        lambda f: f.edited(
            rhs=sp.sqrt(1 - sp.Sum(FC.sigma_[a] ** 2, (a, 0, d - 1)) / (d * sp.Sum(FC.sigma_[a] ** 2, (a, 0, d - 1))))
        ),
    ),
    "E2 procrustes sigma(T) -> sigma(T^T T)": (
        "E2",
        "procrustes",
        lambda f: f.edited(where=((FC.sigma_[a], FC.SingularValue(FC.TSm.T * FC.TSm, a)),)),
    ),
    "E5 agreement and -> or": ("E5", "agreement", lambda f: f.edited(rhs=sp.Or(*f.rhs.args))),
    "E5 agreement drop the cluster exemption": (
        "E5",
        "agreement",
        lambda f: f.edited(rhs=f.rhs.xreplace({sp.Eq(FC.c_pred, FC.CLUSTER): sp.false})),
    ),
    "E5 agreement |k_pred| = |k_obs| -> k_pred <= k_obs": (
        "E5",
        "agreement",
        lambda f: f.edited(
            rhs=f.rhs.xreplace({sp.Eq(sp.Abs(FC.k_pred), sp.Abs(FC.k_obs)): sp.Le(FC.k_pred, FC.k_obs)})
        ),
    ),
}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.theorem(n.split()[0]), id=n) for n in CLAIM_FORMULA_MUTANTS]
)
def test_claim_formula_mutant_is_rejected(name):
    """The test the registry names for the formula accepts the registry's expression (its own test)
    and rejects the edited one (the rendered formula changes with it: THEOREMS.md shows the edit)."""
    from theory.report import record

    cid, key, edit = CLAIM_FORMULA_MUTANTS[name]
    claim = get_claim(cid)
    mutant = edit(claim.params[key])
    assert mutant.markdown() != claim.params[key].markdown(), name
    test = claim.evaluated_by[key].split("::")[1]
    checks = _run(test, {**claim.params, key: mutant})
    assert any(_rejects(m, f) for pairs in checks.values() for m, f in pairs), name
    record(cid, counterexample=f"claim formula mutant rejected: {name}")
