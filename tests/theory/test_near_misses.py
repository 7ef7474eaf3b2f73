"""Every tolerance is pinned from above and from below by the statement it decides.

For each ``(conclusion, tolerance)`` of :data:`NEAR`: a *near-hit* — a true instance, its residual at
rounding level — must hold under the registry's tolerance (a tolerance too tight fails it), and a
*near-miss* — the conclusion's own formula (or bound) off by a small known relative margin ``m`` on
that instance — must fail (a tolerance loosened ``10⁴``-fold accepts it). The margin is not a copy of
the tolerance: it is the accuracy the check's arithmetic delivers at these sizes, by the check's class
(:data:`MARGINS`): ``ε^{3/4}`` for a float64 residual of a few dozen terms (rounding ``≈ size·ε``),
``ε^{1/2}`` for an eigenvalue or singular value of a normal matrix, ``ε^{1/4}`` for the
``√ε``-accurate eigenvalues of a non-normal (defective) one and for a null-space basis (accurate to
``ε/g`` at a singular-value gap ``g``: ``√ε`` at the gap ``√ε`` of the eigen class), ``10^{-28}`` for
a 40-digit mpmath value.
``test_the_margin_is_inside_the_loosened_window`` checks that each near-miss is accepted once its
tolerance is loosened ``10⁴``-fold, so the pin is real: editing a tolerance of
:mod:`theory.formulas.tolerances` by that factor fails ``pytest --theorem <id>`` here.

A threshold (a rank rule, a Kronecker or head difference) is pinned from above by a *true* instance
with a singular value (difference) of its class's margin that the loosened threshold counts as zero
(:data:`HITS`); every tolerance is pinned from below by a near-hit whose residual lies between the
tolerance and its ``10⁴``-fold tightening (:data:`BELOW`: the tightened tolerance gets it wrong).
``test_every_tolerance_is_pinned_from_above_and_below`` requires both for every ``(conclusion,
tolerance)`` pair and for each of the sixteen tolerance objects.
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
MARGINS = {"rounding": EPS**0.75, "eigen": EPS**0.5, "defective": EPS**0.25, "basis": EPS**0.25, "mpmath": 1e-28}
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


#: a symmetric doubly stochastic walk with self-loops: spectrum ``{1, 1/4, 1/4}`` (exact, dyadic entries)
_P4 = np.array([[2.0, 1.0, 1.0], [1.0, 2.0, 1.0], [1.0, 1.0, 2.0]]) / 4


def contracted(m: float) -> dict:
    """The flat transports ``Q_ij = R_i R_jᵀ`` of :func:`flat` contracted to ``O = Q/(1+m)`` on the
    doubly stochastic ``_P4``: ``W = R(P ⊗ I)Rᵀ/(1+m)`` is symmetric with spectrum ``{1, 1/4, 1/4}/(1+m)``,
    so ``Δ`` has no kernel and its least singular value is ``m/(1+m)`` exactly (``d``-fold), its singular
    vectors the flat sections ``x_i = R_i v``; the parallel sections of ``O`` are ``{0}`` too (the
    self-loops force ``x_i = x_i/(1+m)``): T3.kernel holds, ``0 = 0``. The one family where ``Δ`` lifts
    the flat sections *linearly* in ``m`` with them as singular vectors: orthogonal transports off a
    flat connection by an angle ``θ`` lift them only by ``O(θ²)`` while tilting them by ``O(θ)``, which
    no kernel tolerance separates from the rank threshold."""
    return {"kind": "walk", "P": _P4, "O": flat()["O"] / (1 + m)}


def _tilt_parallel(c, m):
    """``x_i (1 + m·i) = Σ_b O_ij,ab x_j,b (1 + m·j)``: the parallel sections rescaled token by token
    (``D^{-1}`` of them, ``D = diag(1 + m·i) ⊗ I``): the same dimension, the space tilted by an angle of
    order ``m``."""
    f = c.params["parallel"]
    return c.with_params(parallel=f.edited(lhs=f.lhs * (1 + sp.Float(m) * F.i), rhs=f.rhs * (1 + sp.Float(m) * F.j)))


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
    # the parallel formula scaled by 1 + m on transports contracted by 1/(1 + m): the edited statement
    # claims the flat sections (dimension d) for a Δ whose least singular value there is m/(1 + m)
    "T3.kernel/tol_rank": (
        "T3.kernel",
        "tol_rank",
        lambda: contracted(MARGINS["rounding"]),
        _scale_rhs("parallel"),
        "rounding",
    ),
    "T3.kernel/tol": ("T3.kernel", "tol", flat, _tilt_parallel, "basis"),
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


def _theorem(name: str) -> str:
    """The theorem of a table entry ``"T3.kernel/tol"``: its tests run under ``--theorem T3``."""
    return name.split(".")[0]


def _params(names):
    return [pytest.param(nm, marks=pytest.mark.theorem(_theorem(nm)), id=nm) for nm in names]


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


def substochastic_flat(tau: float) -> dict:
    """:func:`flat` with row 0 of ``P`` summing to ``1 − τ``: the flat formula is an identity in ``P``
    (it holds), and ``Δ``'s flat sections lift to a singular value ``≈ τ/√n``: with ``τ`` the rounding
    margin, below the rank rule's ``10⁻⁹`` (the dimension is ``d``) and above its ``10⁴``-fold tightening
    (the dimension drops to 0, against the stated ``d``)."""
    P = flat()["P"].copy()
    P[0, 0] -= tau
    return {**flat(), "P": P}


def weak_defect(w: float, tau: float) -> dict:
    """The flat connection of :func:`flat` on a walk whose token 0 hangs on by a weight ``w`` (the gap
    of ``Δ`` above its kernel is of order ``w``) and whose row 0 sums to ``1 − τ``: a defect below the
    rank rule's resolution (``τ = 64ε``: one rounding under the oracles' safety factor, below the rule's
    ``64·ε·n·d``), so both kernels keep
    dimension ``d``, but ``Δ``'s tilts off the flat sections by ``≈ τ/w`` — the parallel-section
    constraints ``C`` (unweighted, the support only) do not see ``P``'s values, and see the tilt at full
    size. The kernel tolerance must accept this residual (the rank rule calls the instance stochastic),
    and is pinned from below by it."""
    P = _stochastic(np.array([[1.0, w, 0.0], [w, 1.0, 1.0], [0.0, 1.0, 1.0]]))
    P[0, 0] -= tau
    return {**flat(), "P": P}


#: a defective transport (the double eigenvalue 1, one eigenvector; dyadic entries, not triangular)
JORDAN = np.array([[1.5, 0.25], [-1.0, 0.5]])

#: the near-hit of :func:`weak_defect`: gap ``10⁻⁶``, defect ``64ε`` (its residual ``≈ 4·10⁻⁹``: see
#: ``test_the_kernel_near_hit_residual_is_its_defect_amplified``)
KERNEL_HIT = (1e-6, 64 * EPS)

#: name -> (conclusion, tolerance key, instance): near-hits whose residual lies between the tolerance
#: and its ``10⁴``-fold tightening, so the tightened tolerance gets them wrong (pins from below): the
#: rounding-level instances of :data:`NEAR` for the rounding tolerances, the threshold instances of
#: :data:`HITS`, and for T3.kernel the flat connection (a rank threshold below the SVD's rounding band
#: leaves its kernel dimension undecided) and :func:`weak_defect` (a basis residual ``≈ 10⁻⁹``)
BELOW = {
    "T3.self_adjoint/tol": ("T3.self_adjoint", "tol", walk),
    "T3.dirichlet/tol_form": ("T3.dirichlet", "tol_form", walk),
    "T4.triangle/tol": ("T4.triangle", "tol", lambda: softmax(False)),
    "T2.walk/tol": ("T2.walk", "tol", mha),
    "T6.fourier/tol": ("T6.fourier", "tol", ring),
    # heads a rounding margin apart: equal (and a constant transport) to both thresholds; tightened,
    # one threshold sees the difference and the other does not, and the two tests disagree
    "T2.constant/tol": ("T2.constant", "tol", lambda: near_equal_heads(MARGINS["rounding"])),
    "T2.constant/tol_heads": ("T2.constant", "tol_heads", lambda: near_equal_heads(MARGINS["rounding"])),
    "T3.flat/tol_rank": ("T3.flat", "tol_rank", lambda: substochastic_flat(MARGINS["rounding"])),
    "T5.kernel/tol_span": ("T5.kernel", "tol_span", lambda: near_fixed_head(MARGINS["eigen"])),
    # a defective T: the eigenvalues of A ⊗ T and of T are √ε-accurate (the defective class), ≈ 10⁻⁸ apart
    "T1.spectrum/tol": ("T1.spectrum", "tol", lambda: {"A": sha()["A"], "T": JORDAN}),
    "T3.kernel/tol_rank": ("T3.kernel", "tol_rank", flat),
    "T3.kernel/tol": ("T3.kernel", "tol", lambda: weak_defect(*KERNEL_HIT)),
}


def _tightened(c, key):
    tol = c.params[key]
    return c.with_params(**{key: tol.edited(bound=tol.bound / LOOSER)})


@pytest.mark.parametrize("name", _params(BELOW))
def test_a_tightened_tolerance_gets_the_near_hit_wrong(name):
    """The near-hit holds under the registry's tolerance and not under its ``10⁴``-fold tightening (so
    tightening the tolerance that much fails this test's first assertion in the mutant run)."""
    cid, key, make = BELOW[name]
    c, inst = _conclusion(cid), make()
    hit, tight = oracles.judge(c, inst), oracles.judge(_tightened(c, key), inst)
    assert hit.holds and hit.applicable, (name, hit)
    assert not tight.holds, (name, tight)


@pytest.mark.theorem(_theorem("T3.kernel/tol_rank"))
def test_the_kernel_near_miss_margin_is_a_singular_value_of_delta():
    """The T3.kernel/tol_rank near-miss, independently: ``Δ = I − R(P ⊗ I)Rᵀ/(1+m)`` has the singular
    values ``|1 − λ/(1+m)|`` over the exact spectrum ``λ`` of the rational ``P`` (SymPy), so the least is
    ``m/(1+m)`` on the flat sections; the dense float64 ``Δ`` of the instance has it to rounding."""
    m = MARGINS["rounding"]
    lam = sp.Matrix(4 * _P4).applyfunc(sp.Integer).eigenvals()
    assert {sp.Rational(k, 4): v for k, v in lam.items()} == {1: 1, sp.Rational(1, 4): 2}
    inst = contracted(m)
    s = np.linalg.svd(np.eye(6) - oracles.dense_walk(inst["P"], inst["O"]), compute_uv=False)
    want = sorted([m / (1 + m)] * 2 + [1 - 0.25 / (1 + m)] * 4)
    assert np.allclose(np.sort(s), want, rtol=0, atol=64 * EPS), (s, want)


@pytest.mark.theorem(_theorem("T3.kernel/tol"))
def test_the_kernel_near_hit_residual_is_its_defect_amplified():
    """The T3.kernel/tol near-hit, independently (mpmath, 40 digits, on the instance's float data): the
    least right singular space of ``Δ`` against the parallel-section constraints ``C``,
    ``‖C K‖/‖C‖``, is the oracle's residual to 10 % (the SVD's own rounding adds ``≈ 0.1·ε/w``, under
    1 % of it here), and lies well inside ``(10⁻¹¹, 10⁻⁷)``, the kernel tolerance and its ``10⁴``-fold
    tightening: the defect, not rounding, sets it."""
    import mpmath

    inst = weak_defect(*KERNEL_HIT)
    P, O = inst["P"], inst["O"]
    n, d = 3, 2
    with mpmath.workdps(40):
        D = mpmath.eye(n * d) - mpmath.matrix(oracles.dense_walk(P, O).tolist())
        _, _, V = mpmath.svd_r(D)
        K = V[n * d - d :, :].T  # the d least right singular vectors (svd_r sorts descending)
        rows = []
        for i, j in zip(*np.nonzero(P)):
            for a in range(d):
                rows.append(
                    [(1 if q == i * d + a else 0) - (O[i, j, a, q % d] if q // d == j else 0) for q in range(n * d)]
                )
        C = mpmath.matrix(rows)
        cn = max(max(mpmath.svd_r(C, compute_uv=False)), 1)
        exact = max(mpmath.svd_r(C * K, compute_uv=False)) / cn
    verdict = oracles.judge(_conclusion("T3.kernel"), inst)
    assert 1e-9 <= exact <= 1e-8, exact
    assert abs(verdict.residual - float(exact)) <= 0.1 * float(exact), (verdict, exact)


#: tolerance -> why no near-hit lies within ``10⁴`` of it: fixed tolerances far above what their check's
#: arithmetic leaves on a true instance (a normal matrix's eigenvalues, a 40-digit mpmath value, the
#: growth rate of a diagonalizable Jacobian: residuals at rounding, ``10⁵``–``10¹⁰`` below them). Their
#: near-hits (:data:`NEAR`) fail once the tolerance is tightened to that rounding level; a ``10⁴``-fold
#: tightening is caught by ``test_the_margin_is_inside_the_loosened_window`` (the class margin's
#: near-miss is then beyond the ``10⁴``-fold loosening of the tightened tolerance).
BELOW_BY_THE_WINDOW = {
    "spectrum": "a reversible walk's I − W is similar to a symmetric matrix: its eigenvalues are ε·κ-accurate "
    "with no sign pushing them outside the interval, and a defect of the data that moves them is seen by the "
    "same conclusion's form identity at rounding level",
    "eigen": "T5's A is reversible (diagonalizable): its eigenvalues and Δ's are ε·κ-accurate; a defective A "
    "(√ε-accurate) would leave the theorem's premise",
    "exact": "the mpmath value at 40 digits meets its closed form to ≈ 10⁻⁴⁰",
    "growth": "the Jacobian's abscissa is ε·κ-accurate at a simple eigenvalue; at a defective one it errs by "
    "≈ √ε, the tolerance itself",
}


@pytest.mark.theorem(*registry.ids())
def test_every_tolerance_is_pinned_from_above_and_below():
    """Every ``(conclusion, tolerance)`` of the registry has a near-miss (:data:`NEAR`) or a threshold
    instance a looser threshold gets wrong (:data:`HITS`), and a near-hit that holds (every entry of
    :data:`NEAR`, :data:`HITS`, :data:`BELOW`); every tolerance object of
    :mod:`theory.formulas.tolerances` (all sixteen, by name) is pinned from above by one of the first and
    from below by a near-hit its ``10⁴``-fold tightening gets wrong (:data:`BELOW`), but for the fixed
    tolerances of :data:`BELOW_BY_THE_WINDOW` (reported with the reason)."""

    def pairs(table):
        return {tuple(nm.split("/")) for nm in table}

    def name(pair):
        cid, key = pair
        return _conclusion(cid).params[key].name

    want = {(c.id, key) for tid in registry.ids() for c in registry.get(tid).conclusions for key in c.tolerances}
    above, hit, below = pairs(NEAR) | pairs(HITS), pairs(NEAR) | pairs(HITS) | pairs(BELOW), pairs(BELOW)
    assert not want - above, sorted(want - above)
    assert not want - hit, sorted(want - hit)
    assert above | hit <= want, sorted((above | hit) - want)
    every = {v.name for v in vars(FT).values() if isinstance(v, FT.Tolerance)}
    assert len(every) == 16, sorted(every)
    assert not every - {name(p) for p in above}, sorted(every - {name(p) for p in above})
    unpinned = every - {name(p) for p in below}
    assert unpinned == set(BELOW_BY_THE_WINDOW), sorted(unpinned ^ set(BELOW_BY_THE_WINDOW))
