"""Every tolerance is pinned from above and from below by the statement it decides.

For each ``(conclusion, tolerance)`` of :data:`NEAR`: a *near-hit* — a true instance, its residual at
rounding level — must hold under the registry's tolerance (a tolerance too tight fails it), and a
*near-miss* — the conclusion's own formula (or bound) off by a small known relative margin ``m`` on
that instance — must fail (a tolerance loosened ``10⁴``-fold accepts it). The margin is not a copy of
the tolerance: it is the accuracy the check's arithmetic delivers at these sizes, by the check's class
(:data:`MARGINS`): ``ε^{3/4}`` for a float64 residual of a few dozen terms (rounding ``≈ size·ε``),
``ε^{1/2}`` for an eigenvalue or singular value of a normal matrix, ``ε^{1/4}`` for the
``√ε``-accurate eigenvalues of a non-normal (defective) one, ``10^{-28}`` for a 40-digit mpmath value.
``test_the_margin_is_inside_the_loosened_window`` checks that each near-miss is accepted once its
tolerance is loosened ``10⁴``-fold, so the pin is real: editing a tolerance of
:mod:`theory.formulas.tolerances` by that factor fails ``pytest --theorem <id>`` here.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory import formulas as F
from theory import oracles, registry
from theory.formulas import tolerances as FT

EPS = FT.EPS
#: the near-miss margin by the check's accuracy class (module docstring)
MARGINS = {"rounding": EPS**0.75, "eigen": EPS**0.5, "defective": EPS**0.25, "mpmath": 1e-28}
LOOSER = 1e4


def _rot(t: float) -> np.ndarray:
    return np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])


def _stochastic(W: np.ndarray) -> np.ndarray:
    return W / W.sum(-1, keepdims=True)


_W3 = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 1.5], [3.0, 1.5, 2.0]])  # symmetric positive weights


def sha() -> dict:
    A = _stochastic(np.array([[1.0, 2.0, 0.5], [0.3, 1.0, 1.2], [2.0, 0.7, 1.0]]))
    T = np.array([[0.9, -0.4], [0.3, 1.1]])
    X = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 0.6]])
    return {"kind": "sha_layers", "A": A, "T": T, "X": X, "Y": A @ X @ T.T}


def mha() -> dict:
    As = np.stack([_stochastic(np.array([[1.0, 2.0, 0.5], [0.3, 1.0, 1.2], [2.0, 0.7, 1.0]])), _stochastic(_W3)])
    Ts = np.stack([np.array([[0.9, -0.4], [0.3, 1.1]]), np.array([[0.2, 1.0], [-0.7, 0.5]])])
    Pg = _stochastic(np.array([[1.0, 1.0, 2.0], [3.0, 1.0, 1.0], [1.0, 2.0, 2.0]]))
    return {"kind": "mha", "As": As, "Ts": Ts, "Pg": Pg}


def walk() -> dict:
    """A reversible walk (symmetric weights) with transpose-compatible rotations."""
    P = _stochastic(_W3)
    O = np.zeros((3, 3, 2, 2))
    for i in range(3):
        for j in range(3):
            O[i, j] = _rot(0.3 * (j - i) + 0.1 * (j - i) ** 3)  # O_ji = O_ijᵀ, not a flat connection
    return {"kind": "walk", "P": P, "O": O}


def flat() -> dict:
    """A flat connection ``O_ij = R_i R_jᵀ`` (rotations ``R_i``) on the reversible walk."""
    R = np.stack([_rot(t) for t in (0.2, 1.1, -0.7)])
    O = np.einsum("iac,jbc->ijab", R, R)
    return {"kind": "walk", "P": _stochastic(_W3), "O": O, "R": R}


def swap(s: float | None = None) -> dict:
    """The swap walk with ``O = 1`` (and the scale ``s``: ``O = s·1``): spec Δ = {1 − s, 1 + s}, the
    interval's ends."""
    out = {"kind": "walk", "P": np.array([[0.0, 1.0], [1.0, 0.0]]), "O": np.ones((2, 2, 1, 1))}
    return out if s is None else {**out, "s": s}


def shared_attention() -> dict:
    inst = mha()
    return {**inst, "As": np.stack([inst["As"][0], inst["As"][0]])}


def head() -> dict:
    """A reversible positive ``A`` with a reflection ``T`` (T5's hypotheses)."""
    return {"kind": "sha", "A": _stochastic(_W3), "T": np.diag([1.0, -1.0])}


def softmax(symmetric: bool) -> dict:
    X = np.array([[0.5, -1.0], [1.5, 0.25], [-0.75, 0.6]])
    M = np.array([[0.8, 0.3], [0.3, -0.5]]) if symmetric else np.array([[0.8, 0.9], [-0.2, -0.5]])
    return {"kind": "softmax", "X": X, "M": M, "beta": np.array([0.2, -0.4, 0.1])}


def ring() -> dict:
    n = 5
    A0 = np.zeros((1, n, n))
    for i in range(n):
        for off, w in ((0, 0.4), (1, 0.35), (-1, 0.25)):
            A0[0, i, (i + off) % n] += w
    return {"kind": "ring", "A0": A0, "T": np.array([[[0.9, -0.5], [0.4, 0.8]]])}


def rotating() -> dict:
    inst = ring()
    rho, theta = 0.9, 0.7
    return {**inst, "T": (rho * _rot(theta))[None], "rho": rho, "theta": theta}


def _scale_rhs(key: str):
    def edit(c, m):
        f = c.params[key]
        return c.with_params(**{key: f.edited(rhs=f.rhs * (1 + sp.Float(m)))})

    return edit


def _shift_rhs(key: str, by):
    """The formula's right side plus ``m`` times ``by`` (``f_a`` for ``Δ(1 ⊗ f) = 0``)."""

    def edit(c, m):
        f = c.params[key]
        return c.with_params(**{key: f.edited(rhs=f.rhs + sp.Float(m) * by)})

    return edit


def _narrow_hi(c, m):
    return c.with_params(hi=sp.Float(c.params["hi"]) - sp.Float(m))


def _narrow_scaled(c, m):
    from theory.formulas import laplacian as FL

    rel = c.params["scaled_spectrum"]
    iv = rel.rel.args[1]
    return c.with_params(
        scaled_spectrum=rel.edited(rel=FL.Within(rel.rel.args[0], sp.Interval(iv.start, iv.end - sp.Float(m))))
    )


def _tilt_kernel_space(c, m):
    """``ker Δ = (𝟏 + m Aᵀ𝟏) ⊗ Fix(T)``: the stated kernel tilted by an angle of order ``m`` (the
    column sums of ``A`` are not uniform), its dimension unchanged."""
    f = c.params["kernel_space"]
    ones, fix = f.rhs.args
    A = sp.MatrixSymbol("A", F.n, F.n)
    return c.with_params(kernel_space=f.edited(rhs=sp.KroneckerProduct(ones + sp.Float(m) * A.T * ones, fix)))


def _miss_exact(c, m):
    return c.with_params(miss_exact=f"({c.params['miss_exact']}) + {m!r}")


#: name -> (conclusion, tolerance key, instance, near-miss edit, margin class)
NEAR = {
    "T1.walk/tol": ("T1.walk", "tol", sha, _scale_rhs("block"), "rounding"),
    "T1.spectrum/tol": (
        "T1.spectrum",
        "tol",
        lambda: {"A": sha()["A"], "T": sha()["T"]},
        _scale_rhs("spectrum"),
        "defective",
    ),
    "T2.walk/tol": ("T2.walk", "tol", mha, _scale_rhs("rows"), "rounding"),
    "T2.gauge/tol": ("T2.gauge", "tol", mha, _scale_rhs("gauge"), "rounding"),
    "T2.special/tol": ("T2.special", "tol", shared_attention, _scale_rhs("shared_A"), "rounding"),
    "T2.counterexample/tol": ("T2.counterexample", "tol", dict, _miss_exact, "mpmath"),
    "T3.self_adjoint/tol": ("T3.self_adjoint", "tol", walk, _scale_rhs("self_adjoint"), "rounding"),
    "T3.dirichlet/tol_form": ("T3.dirichlet", "tol_form", walk, _scale_rhs("dirichlet"), "rounding"),
    "T3.spectrum/tol_form": ("T3.spectrum", "tol_form", walk, _scale_rhs("upper_form"), "rounding"),
    "T3.spectrum/tol_spectrum": ("T3.spectrum", "tol_spectrum", swap, _narrow_hi, "eigen"),
    "T3.flat/tol": ("T3.flat", "tol", flat, _scale_rhs("flat"), "rounding"),
    "T3.scaled/tol_form": ("T3.scaled", "tol_form", lambda: swap(0.5), _scale_rhs("scaled"), "rounding"),
    "T3.scaled/tol_spectrum": ("T3.scaled", "tol_spectrum", lambda: swap(0.5), _narrow_scaled, "eigen"),
    "T4.triangle/tol": ("T4.triangle", "tol", lambda: softmax(False), _scale_rhs("triangle"), "rounding"),
    "T4.criterion/tol": ("T4.criterion", "tol", lambda: softmax(True), _scale_rhs("balance"), "rounding"),
    "T4.query_bias/tol": ("T4.query_bias", "tol", lambda: softmax(True), _scale_rhs("query_bias"), "rounding"),
    "T5.laplacian/tol": ("T5.laplacian", "tol", head, _scale_rhs("self_adjoint"), "rounding"),
    "T5.laplacian/tol_form": ("T5.laplacian", "tol_form", head, _scale_rhs("dirichlet"), "rounding"),
    "T5.laplacian/tol_spectrum": ("T5.laplacian", "tol_spectrum", head, _narrow_hi, "eigen"),
    "T5.spectrum/tol": ("T5.spectrum", "tol", head, _scale_rhs("on_fix"), "defective"),
    "T5.kernel/tol": ("T5.kernel", "tol", head, _shift_rhs("kernel", F.f_[F.a]), "rounding"),
    "T5.kernel/tol_span": ("T5.kernel", "tol_span", head, _tilt_kernel_space, "defective"),
    "T6.fourier/tol": ("T6.fourier", "tol", ring, _scale_rhs("fourier"), "rounding"),
    "T6.selection/tol": ("T6.selection", "tol", ring, _scale_rhs("conjugate"), "rounding"),
    "T6.selection/tol_growth": ("T6.selection", "tol_growth", ring, _scale_rhs("growth"), "defective"),
    "T6.rotating/tol": ("T6.rotating", "tol", rotating, _scale_rhs("rotating"), "rounding"),
}


def weak_flat(w: float) -> dict:
    """The flat connection of :func:`flat` on a walk whose token 0 hangs on by a weight ``w``: the
    kernel has dimension ``d`` (irreducible), the next singular value of ``Δ`` is of order ``w``."""
    W = np.array([[1.0, w, 0.0], [w, 1.0, 1.0], [0.0, 1.0, 1.0]])
    return {**flat(), "P": _stochastic(W)}


def near_equal_heads(w: float) -> dict:
    """Two heads with independent transports whose attentions differ by ``w``: not a constant
    transport, heads not equal (both tests of T2.constant agree)."""
    inst = mha()
    A1 = _stochastic(inst["As"][0] + w * np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    return {**inst, "As": np.stack([inst["As"][0], A1])}


def near_fixed_head(w: float) -> dict:
    """T with the eigenvalues 1 and 1 − w: Fix(T) has dimension one."""
    return {**head(), "T": np.diag([1.0, 1.0 - w])}


#: name -> (conclusion, tolerance key, instance): true instances a 10⁴-fold loosened threshold gets
#: wrong (a singular value, a Kronecker miss, a head difference of the margin of its class counted as
#: zero); they pin the rank and Kronecker thresholds from above
HITS = {
    "T3.flat/tol_rank": ("T3.flat", "tol_rank", lambda: weak_flat(MARGINS["eigen"])),
    "T2.constant/tol": ("T2.constant", "tol", lambda: near_equal_heads(MARGINS["eigen"])),
    "T2.constant/tol_heads": ("T2.constant", "tol_heads", lambda: near_equal_heads(MARGINS["eigen"])),
    "T5.kernel/tol_rank": ("T5.kernel", "tol_rank", lambda: near_fixed_head(MARGINS["eigen"])),
}


def hit_verdicts(name: str):
    cid, key, make = HITS[name]
    c, inst = _conclusion(cid), make()
    return oracles.judge(c, inst), oracles.judge(_loosened(c, key), inst)


def _conclusion(cid: str):
    return registry.get(cid.split(".")[0]).conclusion(cid)


def _loosened(c, key):
    tol = c.params[key]
    return c.with_params(**{key: tol.edited(bound=tol.bound * LOOSER)})


def verdicts(name: str):
    """``(near-hit, near-miss, near-miss under the 10⁴-fold loosened tolerance)`` verdicts."""
    cid, key, make, edit, cls = NEAR[name]
    c, inst = _conclusion(cid), make()
    miss = edit(c, MARGINS[cls])
    return oracles.judge(c, inst), oracles.judge(miss, inst), oracles.judge(_loosened(miss, key), inst)


def _params(names):
    return [pytest.param(nm, marks=pytest.mark.theorem(nm.split(".")[0]), id=nm) for nm in names]


@pytest.mark.parametrize("name", _params(NEAR))
def test_near_hit_holds(name):
    """The true instance, at rounding level: the registry's tolerance accepts it (pins from below)."""
    hit, _, _ = verdicts(name)
    assert hit.holds and hit.applicable, (name, hit)


@pytest.mark.parametrize("name", _params(NEAR))
def test_near_miss_fails(name):
    """The conclusion off by the margin of its class: the registry's tolerance rejects it (pins from
    above: loosening the tolerance ``10⁴``-fold fails here)."""
    _, miss, _ = verdicts(name)
    assert miss.fails and miss.applicable, (name, miss)


@pytest.mark.parametrize("name", _params(NEAR))
def test_the_margin_is_inside_the_loosened_window(name):
    """The near-miss is near: the tolerance loosened ``10⁴``-fold accepts it (so the margin is below
    any such loosening, and the near-miss is what pins the tolerance)."""
    _, _, loose = verdicts(name)
    assert loose.holds, (name, loose)


@pytest.mark.parametrize("name", _params(HITS))
def test_near_hit_of_a_threshold_holds_and_a_looser_one_gets_it_wrong(name):
    """A true instance with a singular value / Kronecker miss / head difference of its class's margin:
    the registry's threshold decides it right; the threshold loosened ``10⁴``-fold counts the margin as
    zero and gets it wrong (so loosening the threshold fails the first assertion's mutant run)."""
    hit, loose = hit_verdicts(name)
    assert hit.holds and hit.applicable, (name, hit)
    assert not loose.holds, (name, loose)


#: (conclusion, tolerance key) with no near-miss here, and why (reported, not hidden)
NOT_PINNED = {
    ("T3.kernel", "tol_rank"): "a true instance with a singular value of Δ between the threshold and its "
    "10⁴-fold loosening has a kernel basis accurate only to ε/σ, above the kernel tolerance: not separable",
    ("T3.kernel", "tol"): "no near-miss found: an edited parallel-section formula changes the dimension, "
    "which the rank threshold decides",
}


@pytest.mark.theorem(*registry.ids())
def test_every_tolerance_has_a_near_miss_or_a_near_hit():
    pinned = {tuple(nm.split("/")) for nm in [*NEAR, *HITS]}
    pinned = {(cid, key) for cid, key in pinned}
    want = {(c.id, key) for tid in registry.ids() for c in registry.get(tid).conclusions for key in c.tolerances}
    missing = want - pinned - set(NOT_PINNED)
    assert not missing, sorted(missing)
    by_object = {registry.get(cid[:2]).conclusion(cid).params[key].name for cid, key in pinned}
    every = {v.name for v in vars(FT).values() if isinstance(v, FT.Tolerance)}
    assert every - by_object <= {"kernel_rank", "kernel"}, sorted(every - by_object)
