"""What a necessity witness's text states about its own instance holds on that instance.

``tests/numerics/test_necessity.py`` judges the conclusions a witness breaks; the facts its text
states on the way (T5's: the kernel larger than ``1 ⊗ Fix(T)`` with the dimensions it names, the
Kolmogorov ratio of the cycle with its value, ``T² = I`` and the spectral interval of the
non-orthogonal involution) are formulas of :mod:`theory.formulas.reversibility` (the witness's
``params``) and numbers of its ``instance``: this test evaluates those very formulas on that very
data — exactly (SymPy rationals) where the statement is algebraic, with the oracles where it is a
dimension or a spectrum — and each edit in :data:`WITNESS_MUTANTS` (of a formula or of a number) is
rejected.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import sympy as sp

from theory import formulas as F
from theory import oracles
from theory.oracles.spectral import sha_generator
from theory.registry import get
from theory.report import record
from theory.statements import Witness


def _witness(wid: str) -> Witness:
    for h in get(wid.split(".")[0]).hypotheses:
        for w in h.witnesses:
            if w.id == wid:
                return w
    raise KeyError(wid)


def _exact(value) -> sp.Matrix:
    return sp.Matrix([[sp.Rational(x) for x in row] for row in value])


def _kernel_excess(w: Witness) -> list[tuple[str, bool]]:
    """``dim ker Δ > dim Fix(T)`` (the witness's formula ``excess``, ``Δ`` by T5's ``laplacian``) and
    the two dimensions the text names (``kernel_dim``, ``fix_dim``)."""
    inst = oracles.build(w.instance)
    A, T = inst["A"], inst["T"]
    rel = w.params["excess"].rel
    env = {"Delta": sha_generator(A, T, {}), "T": T, "n": A.shape[0], "d": T.shape[0]}
    lhs, rhs = (int(F.tabulate(side, (), env)) for side in (rel.lhs, rel.rhs))
    holds = bool(rel.func(sp.Integer(lhs), sp.Integer(rhs)))
    return [
        (f"{rel} with {lhs}, {rhs}", holds),
        (f"stated dim ker Δ = {w.instance['kernel_dim']}, evaluated {lhs}", lhs == w.instance["kernel_dim"]),
        (f"stated dim Fix T = {w.instance['fix_dim']}, evaluated {rhs}", rhs == w.instance["fix_dim"]),
    ]


def _cycle_ratio(w: Witness) -> list[tuple[str, bool]]:
    """The Kolmogorov ratio (the formula ``ratio``) of the exact ``A``, its stated value
    ``cycle_ratio`` and the formula ``unbalanced`` (``r ≠ 1``) at that value."""
    ident = w.params["ratio"]
    r = sp.nsimplify(ident.rhs.subs(F.A_m, _exact(w.instance["A"])))
    stated = sp.Rational(w.instance["cycle_ratio"])
    unbalanced = w.params["unbalanced"].rel.subs(ident.lhs, r)
    return [
        (f"r = {r} vs stated {stated}", r == stated),
        (f"{w.params['unbalanced'].rel} at r = {r}", unbalanced is sp.true),
    ]


def _involution(w: Witness) -> list[tuple[str, bool]]:
    """``T² = I`` (the formula ``involution``) on the exact ``T``, and the spectrum of the walk in
    ``[lo, hi]`` (the oracle of T5.laplacian's interval, with the witness's ``lo``, ``hi``)."""
    ident = w.params["involution"]
    T = _exact(w.instance["T"])
    lhs = sp.Matrix(ident.lhs.subs(F.T_m, T).doit())
    rhs = sp.Matrix(ident.rhs.subs(F.d, T.shape[0]).as_explicit())
    spectrum = oracles.walk_spectrum_interval(oracles.build(w.instance), w.params)
    return [(f"{ident.name}: {lhs.tolist()} vs {rhs.tolist()}", lhs == rhs), (spectrum.detail, spectrum.holds)]


CHECKS = {
    "T5.softmax.w1": _kernel_excess,
    "T5.reversible.w1": _cycle_ratio,
    "T5.involution.w2": _involution,
}


@pytest.mark.parametrize("wid", [pytest.param(w, marks=pytest.mark.theorem(w.split(".")[0]), id=w) for w in CHECKS])
def test_witness_text_holds_on_its_instance(wid):
    w = _witness(wid)
    results = CHECKS[wid](w)
    assert all(ok for _, ok in results), (wid, results)
    record(wid.split(".")[0], counterexample=f"{wid}: its stated facts hold on its data ({len(results)} checks)")


def _formula(key, **changes):
    return lambda w: replace(w, params={**w.params, key: w.params[key].edited(**changes)})


def _rel(key, rel):
    return lambda w: replace(w, params={**w.params, key: w.params[key].edited(rel=rel)})


_R = sp.Symbol("r")
#: name -> (witness, edit); each edit of a formula or a stated number is rejected by the check above
WITNESS_MUTANTS = {
    "T5.softmax.w1 dim ker > dim Fix -> <": (
        "T5.softmax.w1",
        lambda w: _rel("excess", sp.StrictLessThan(*w.params["excess"].rel.args))(w),
    ),
    "T5.softmax.w1 stated dim ker 2 -> 1": ("T5.softmax.w1", lambda w: w.with_data(kernel_dim=1)),
    "T5.softmax.w1 stated dim Fix 1 -> 2": ("T5.softmax.w1", lambda w: w.with_data(fix_dim=2)),
    "T5.reversible.w1 ratio A_12 -> A_21": (
        "T5.reversible.w1",
        lambda w: _formula("ratio", rhs=w.params["ratio"].rhs.xreplace({F.A_m[1, 2]: F.A_m[2, 1]}))(w),
    ),
    "T5.reversible.w1 stated ratio 3 -> 1/3": ("T5.reversible.w1", lambda w: w.with_data(cycle_ratio="1/3")),
    "T5.reversible.w1 r != 1 -> r != 3": ("T5.reversible.w1", lambda w: _rel("unbalanced", sp.Ne(_R, 3))(w)),
    "T5.involution.w2 T^2 = I -> T^T T = I": (
        "T5.involution.w2",
        lambda w: _formula("involution", lhs=F.T_m.T * F.T_m)(w),
    ),
    "T5.involution.w2 T^2 = I -> -I": (
        "T5.involution.w2",
        lambda w: _formula("involution", rhs=-w.params["involution"].rhs)(w),
    ),
    "T5.involution.w2 interval [0, 2] -> [0, 1]": (
        "T5.involution.w2",
        lambda w: replace(w, params={**w.params, "hi": 1}),
    ),
}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.theorem(n.split(".")[0]), id=n) for n in WITNESS_MUTANTS]
)
def test_witness_text_mutant_is_rejected(name):
    wid, edit = WITNESS_MUTANTS[name]
    mutant = edit(_witness(wid))
    results = CHECKS[wid](mutant)
    assert not all(ok for _, ok in results), (name, results)
    record(wid.split(".")[0], counterexample=f"witness text mutant rejected: {name}")


@pytest.mark.theorem("T4", "T5")
def test_every_witness_formula_is_checked():
    """Each T4/T5 instance witness whose text cites a formula (its ``params``) is checked here."""
    cited = {
        w.id
        for tid in ("T4", "T5")
        for h in get(tid).hypotheses
        for w in h.witnesses
        if w.instance is not None and any(callable(getattr(v, "markdown", None)) for v in w.params.values())
    }
    assert cited <= set(CHECKS), sorted(cited - set(CHECKS))
