"""What T3's necessity witnesses state about their data holds, exactly: each formula a witness's text
renders (``spec Δ = {…}``, the forms at its probe, the inverse transports kept by T3.c1.w2) is judged
on the witness's own rational data by :func:`theory.oracles.laplacian.witness_facts` (SymPy, no
float), and an edited value is rejected."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sympy as sp

from theory import formulas as F
from theory.derivations.spectral import t3_inverse_transports
from theory.formulas import laplacian as FL
from theory.oracles.laplacian import exact_value, fact_verdict, witness_facts
from theory.registry import get

pytestmark = pytest.mark.theorem("T3")


def _witnesses():
    return {w.id: w for h in get("T3").hypotheses for w in h.witnesses}


STATING = sorted(wid for wid, w in _witnesses().items() if w.instance is not None and w.params)


def test_every_instance_witness_states_its_facts_as_formulas():
    assert STATING == ["T3.a.w1", "T3.b.w1", "T3.c1.w1", "T3.c2.w1"]


@pytest.mark.parametrize("wid", STATING)
def test_witness_facts_hold_exactly(wid):
    v = witness_facts(_witnesses()[wid])
    assert v.applicable and v.holds and not v.undecided, v


#: edits of a stated value: each must be rejected on the witness's data
EDITS = {
    "T3.a.w1 spec {-1, 3} -> {-1, 2}": ("T3.a.w1", "spectrum", FL.spectrum([-1, 2])),
    "T3.a.w1 spec {-1, 3} -> {3} (an eigenvalue left out)": ("T3.a.w1", "spectrum", FL.spectrum([3])),
    "T3.a.w1 <x, Delta x>_pi = -1 -> 1": ("T3.a.w1", "form", FL.form_value(1)),
    "T3.a.w1 Dirichlet sum 0 -> -1": ("T3.a.w1", "dirichlet", FL.dirichlet_value(-1)),
    "T3.a.w1 correction -1 -> 0": ("T3.a.w1", "correction", FL.correction_value(0)),
    "T3.b.w1 spec conjugate pair -> real pair": ("T3.b.w1", "spectrum", FL.spectrum([0, 1, 2])),
    "T3.c2.w1 spec 2/5 +- 4i/5 -> 3/5 +- 4i/5": (
        "T3.c2.w1",
        "spectrum",
        FL.spectrum(["3/5 + 4*I/5", "3/5 - 4*I/5", "8/5 + 4*I/5", "8/5 - 4*I/5"]),
    ),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edited_stated_value_is_rejected(name):
    wid, key, fact = EDITS[name]
    w = _witnesses()[wid]
    assert fact_verdict(w.params[key], w.instance).holds
    bad = replace(w, params={**w.params, key: fact})
    assert fact.markdown() in bad.text  # the edit is what THEOREMS.md would show
    v = witness_facts(bad)
    assert v.fails and not v.undecided, (name, v)


def _inverse_data():
    P, O = t3_inverse_transports()
    return {"P": P.tolist(), "O": [[M.tolist() for M in row] for row in O]}


def _residual(ident, data):
    """``lhs − rhs`` of ``ident`` at every value of its free indices, exactly (off the diagonal blocks:
    T3.c1.w2's walk has no self-loops)."""
    n, d = 3, 2
    out = []
    for p in range(n):
        for q in range(n):
            if p == q:
                continue
            for u in range(d):
                for v in range(d):
                    at = dict(zip(ident.free, (p, q, u, v), strict=True))
                    r = exact_value(ident.lhs.xreplace(at), data, n, d) - exact_value(
                        ident.rhs.xreplace(at), data, n, d
                    )
                    out.append(sp.simplify(r))
    return out


def test_inverse_transports_keep_the_inverse_and_drop_orthogonality():
    """T3.c1.w2 renders ``O_ij O_ji = I`` (the premise it keeps): it holds on the derivation's data,
    orthogonality (the dropped (c1), T3.c1's own formula) does not, and an edited premise is rejected."""
    w = _witnesses()["T3.c1.w2"]
    data = _inverse_data()
    assert w.params["inverse"] is FL.INVERSE
    assert all(r == 0 for r in _residual(FL.INVERSE, data))
    assert any(r != 0 for r in _residual(get("T3").hypothesis("T3.c1").params["orthogonal"], data))
    transposed = FL.INVERSE.edited(lhs=FL.INVERSE.lhs.xreplace({F.O_[F.j, F.i, F.b, F.c]: F.O_[F.i, F.j, F.c, F.b]}))
    assert any(r != 0 for r in _residual(transposed, data))


# ------------------------------------------------------------------------------------------------
# the notes: the weaker form's disk, and its counterexample without a positive stationary π
# ------------------------------------------------------------------------------------------------
def _note(q):
    return get("T3").notes[q]


def _disk_margin(rel, inst):
    """How far ``spec Δ`` of ``inst`` lies outside the set of ``rel`` (``Within(Spec(Δ), {z | cond})``),
    ``cond`` evaluated by ``lambdify`` at the dense float64 eigenvalues, its sides' difference (``≤ 0``
    inside)."""
    import numpy as np

    from theory.oracles.instances import dense_walk, walk_view

    P, O = walk_view(inst)
    ev = np.linalg.eigvals(np.eye(P.shape[0] * O.shape[-1]) - dense_walk(P, O))
    cond = rel.rel.args[1].condition
    f = sp.lambdify([FL.z_], cond.lhs - cond.rhs, modules=["numpy"])
    return float(np.max(f(ev)))


def _non_reversible_instances():
    """Stochastic ``P`` with positive entries (so a positive stationary ``π``), not reversible, and
    orthogonal transports (exact Cayley rotations / a reflection, ``d = 2``)."""
    import numpy as np

    rot = [np.array([[3, -4], [4, 3]]) / 5, np.array([[5, -12], [12, 5]]) / 13, np.array([[1.0, 0], [0, -1]])]
    Ps = [
        np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]]),
        np.array([[0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.9, 0.05, 0.05]]),  # nearly a directed cycle
    ]
    out = []
    for P in Ps:
        O = np.array([[rot[(p + 2 * q) % 3] if p != q else rot[2] for q in range(3)] for p in range(3)])
        out.append({"kind": "walk", "P": P, "O": O})
        out.append({"kind": "walk", "P": P, "O": np.swapaxes(O, -1, -2)})
    return out


def test_the_weaker_form_keeps_the_spectrum_in_the_disk():
    """Note 0's «disk» (the registry's relation) on walks with (a), (c1) and a positive stationary π but
    not (b): every eigenvalue inside up to rounding; the radius edited to 1/2 is rejected."""
    from theory import oracles

    disk = _note(0).params["disk"]
    assert disk is FL.DISK and disk.markdown() in _note(0)
    half = disk.edited(rel=disk.rel.xreplace({sp.Abs(FL.z_ - 1) <= 1: sp.Abs(FL.z_ - 1) <= sp.Rational(1, 2)}))
    worst_half = 0.0
    for inst in _non_reversible_instances():
        assert oracles.stochastic(inst, {}).holds and oracles.orthogonal(inst, {}).holds
        assert oracles.reversible(inst, {}).fails
        assert _disk_margin(disk, inst) <= 1e-12, inst
        worst_half = max(worst_half, _disk_margin(half, inst))
    assert worst_half > 0.1


def test_without_a_positive_stationary_pi_the_kernel_statement_fails():
    """Note 0's counterexample, built from the case data it renders: (a) and (c1) hold, the stationary π
    has a zero entry, and exactly ``dim ker Δ = 1`` while no section is parallel (T3.kernel's formula,
    evaluated exactly at every unit vector on every edge); T3.kernel's oracle does not accept it (in
    float64 the extra kernel direction has Dirichlet energy at the rounding level: undecided)."""
    import numpy as np

    from theory import oracles
    from theory.cases import T3_KERNEL_WITHOUT_POSITIVE_PI as case
    from theory.oracles.instances import stationary
    from theory.oracles.laplacian import exact_generator
    from theory.statements import latex_data

    assert latex_data(case["P"]) in _note(0)
    inst = oracles.build({"kind": "walk", **case})
    assert oracles.stochastic(inst, {}).holds and oracles.orthogonal(inst, {}).holds
    assert np.min(stationary(inst["P"])) <= 1e-12
    kernel = get("T3").conclusion("T3.kernel")
    assert not oracles.judge(kernel, inst).holds
    n, d = 2, 1
    assert len(exact_generator(case).nullspace()) == 1
    parallel = kernel.params["parallel"]
    rows = []
    for p in range(n):
        for q in range(n):
            if sp.Rational(case["P"][p][q]) == 0:
                continue
            at = dict(zip(parallel.free, (p, q, 0), strict=True))
            gap = parallel.lhs.xreplace(at) - parallel.rhs.xreplace(at)
            rows.append(
                [exact_value(gap, {**case, "x": [int(r == c) for c in range(n * d)]}, n, d) for r in range(n * d)]
            )
    assert sp.Matrix(rows).rank() == n * d  # only x = 0 is parallel


def _reversible_walk(transposed: bool):
    """A reversible stochastic ``P`` (full support) with rotations ``O_ij`` (``i < j``), reflections on
    the diagonal, and ``O_ji = O_ijᵀ`` (``transposed``) or ``O_ji = O_ij``."""
    import numpy as np

    K = np.array([[1.0, 2.0, 0.5], [2.0, 0.3, 1.0], [0.5, 1.0, 2.0]])
    P = K / K.sum(-1, keepdims=True)
    rot = [np.array([[3, -4], [4, 3]]) / 5, np.array([[5, -12], [12, 5]]) / 13, np.array([[8, -15], [15, 8]]) / 17]
    O = np.zeros((3, 3, 2, 2))
    for p in range(3):
        O[p, p] = np.array([[0.6, 0.8], [0.8, -0.6]])
        for q in range(p + 1, 3):
            O[p, q] = rot[p + q - 1]
            O[q, p] = rot[p + q - 1].T if transposed else rot[p + q - 1]
    return {"kind": "walk", "P": P, "O": O}


def test_the_gauge_free_form_on_the_blocks():
    """Note 1's formulas on the blocks of a reversible walk with (c1), (c2): ``B = p Q`` with ``p`` read
    off the norms (``‖B_ij‖ = p_ij √d`` for orthogonal ``Q_ij``), stochastic ``p``, orthogonal ``Q`` and
    block balance (by ``block_detailed_balance``, which evaluates the note's formula) hold; block
    balance without the transpose is rejected, and with ``O_ji = O_ij`` only the norms balance."""
    import numpy as np

    from theory import oracles

    note = _note(1)
    for key in ("gauge_free", "rows", "block_balance", "norm_balance"):
        assert note.params[key].markdown() in note
    good = _reversible_walk(True)
    P, O = good["P"], good["O"]
    n, d = 3, 2
    B = P[:, :, None, None] * O
    N = F.environment(note.params["norm_balance"], {"B": B, "n": n, "d": d})["N"]
    p, Q = N / np.sqrt(d), B / (N / np.sqrt(d))[:, :, None, None]
    for key in ("gauge_free", "rows"):
        lhs, rhs = F.evaluate(note.params[key], {"B": B, "p": p, "Q": Q, "n": n, "d": d})
        assert np.abs(lhs - rhs).max() <= 1e-14, key
    assert oracles.orthogonal({"P": P, "O": Q}, {}).holds
    assert oracles.block_detailed_balance(good, {}).holds
    bb = note.params["block_balance"]
    untransposed = bb.edited(rhs=bb.rhs.xreplace({FL.B_[F.j, F.i, F.b, F.a]: FL.B_[F.j, F.i, F.a, F.b]}))
    assert oracles.block_detailed_balance(good, {"block_balance": untransposed}).fails
    bad = _reversible_walk(False)
    pi = oracles.stationary(bad["P"])
    Bb = bad["P"][:, :, None, None] * bad["O"]
    lhs, rhs = F.evaluate(note.params["norm_balance"], {"pi": pi, "B": Bb, "n": n, "d": d})
    assert np.abs(lhs - rhs).max() <= 1e-14
    assert oracles.block_detailed_balance(bad, {}).fails
