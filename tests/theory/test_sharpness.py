"""Every bound the registry states is shown sharp by an exact witness (:mod:`theory.registry.sharpness`).

The witness is judged in exact SymPy arithmetic (:mod:`theory.oracles.sharpness`) against the bound
*as the registry states it*: editing a bound in :mod:`theory.formulas` or in a statement's params
(``SCALED_LO, SCALED_HI = 1 - s_, 1 + 2 * s_``; ``hi = 3``; the disk's radius; ``rank ≤ 2 d_h``; the
causal size ``n ≥ 3``) makes the witness miss the stated end, and ``pytest --theorem <id>`` fails
here. ``test_a_widened_bound_is_caught`` applies such edits in memory and checks that they are.
"""

from __future__ import annotations

import pytest
import sympy as sp

from tests.theory.test_free_text import free_formulas
from theory import registry
from theory.formulas import laplacian as FL
from theory.formulas import spectral as FS
from theory.formulas import walks as FW
from theory.gate.sharp import is_bound
from theory.oracles import sharpness as S
from theory.registry.claim_sharpness import CLAIM_SHARPNESS
from theory.registry.sharpness import SHARPNESS
from theory.statements import Threshold

WITNESSES = {sh.id: (tid, sh) for tid, shs in SHARPNESS.items() for sh in shs}
WITNESSES.update({sh.id: (cid, sh) for cid, shs in CLAIM_SHARPNESS.items() for sh in shs})


def _entry(tid: str):
    """The theorem or the claim ``tid``."""
    return registry.get_claim(tid) if tid in registry.claim_ids() else registry.get(tid)


def _params(names):
    return [pytest.param(nm, marks=pytest.mark.theorem(WITNESSES[nm][0]), id=nm) for nm in names]


@pytest.mark.parametrize("name", _params(WITNESSES))
def test_sharpness_witness_attains_the_stated_bound(name):
    tid, sh = WITNESSES[name]
    t = _entry(tid)
    assert sh in t.sharpness, "the registry carries the witness (THEOREMS.md renders it)"
    verdict = S.check(t, sh)
    assert verdict.holds and not verdict.undecided, (name, verdict)


def _statement(tid: str, sid: str):
    if tid in registry.claim_ids():
        return registry.get_claim(tid)
    return S.statement_of(registry.get(tid), sid)


class _Edited:
    def __init__(self, st, **params):
        self.id, self.params = st.id, {**st.params, **params}
        self.thresholds = getattr(st, "thresholds", {})


def _threshold(st, key, f):
    """The claim ``st`` with its threshold ``key`` moved to ``f(value)``."""
    from dataclasses import replace

    th = st.thresholds[key]
    return replace(st, thresholds={**st.thresholds, key: Threshold(str(f(th.exact)), th.percent)})


def _rel(st, key, rel):
    return _Edited(st, **{key: st.params[key].edited(rel=rel)})


def _within(st, key, interval_or_set):
    rel = st.params[key]
    return rel.edited(rel=FL.Within(rel.rel.args[0], interval_or_set))


def _widen(name: str, how: str):
    """The statement of witness ``name`` with its bound widened (``how``), as a statement object."""
    tid, sh = WITNESSES[name]
    st = _statement(tid, sh.of)
    s = FS.s_
    z = FL.z_
    edits = {
        "hi x2": lambda: _Edited(st, hi=2 * sp.sympify(st.params["hi"])),
        "lo - 1": lambda: _Edited(st, lo=sp.sympify(st.params["lo"]) - 1),
        "1 + 2s": lambda: _Edited(st, scaled_spectrum=_within(st, "scaled_spectrum", sp.Interval(1 - s, 1 + 2 * s))),
        "1 - 2s": lambda: _Edited(st, scaled_spectrum=_within(st, "scaled_spectrum", sp.Interval(1 - 2 * s, 1 + s))),
        "1 + s^2": lambda: _Edited(st, scaled_spectrum=_within(st, "scaled_spectrum", sp.Interval(1 - s, 1 + s**2))),
        "radius x2": lambda: _Edited(
            st, disk=_within(st, "disk", sp.ConditionSet(z, sp.Abs(z - 1) <= 2, sp.S.Complexes))
        ),
        "rank <= 2 d_h": lambda: _Edited(
            st, rank=st.params["rank"].edited(rel=sp.LessThan(st.params["rank"].rel.lhs, 2 * FW.d_h))
        ),
        "dim ker = 2d": lambda: _Edited(st, kernel_dim=FL.kernel_dimension(2)),
        "n >= 3": lambda: _Edited(st, size=st.params["size"].edited(rel=sp.GreaterThan(FW.n, 3))),
        "n >= 4": lambda: _Edited(st, size=st.params["size"].edited(rel=sp.GreaterThan(FW.n, 4))),
        "d_h <= d": lambda: _rel(st, "narrow", sp.LessThan(FW.d_h, FW.d)),
        "d_h < d + 1": lambda: _rel(st, "narrow", sp.StrictLessThan(FW.d_h, FW.d + 1)),
        "growth(0) x2": lambda: _rel(
            st, "dominant", sp.LessThan(st.params["dominant"].rel.lhs, 2 * st.params["dominant"].rel.rhs)
        ),
        "growth(0) + 1": lambda: _rel(
            st, "dominant", sp.LessThan(st.params["dominant"].rel.lhs, st.params["dominant"].rel.rhs + 1)
        ),
        "rho <= 2": lambda: _rel(st, "radius", sp.LessThan(st.params["radius"].rel.lhs, 2)),
        "rho <= 2 + tol": lambda: _rel(
            st, "radius_status", sp.LessThan(st.params["radius_status"].rel.lhs, st.params["radius_status"].rel.rhs + 1)
        ),
        "s >= -1": lambda: _rel(st, "scale", sp.GreaterThan(st.params["scale"].rel.lhs, -1)),
        "x2": lambda: _threshold(st, sh.bound, lambda v: 2 * v),
        "x1/2": lambda: _threshold(st, sh.bound, lambda v: v / 2),
        "+1/100": lambda: _threshold(st, sh.bound, lambda v: v + sp.Rational(1, 100)),
        "-1/100": lambda: _threshold(st, sh.bound, lambda v: v - sp.Rational(1, 100)),
        "level 90%": lambda: _threshold(st, sh.bound, lambda v: sp.Rational(9, 10)),
        "level 99%": lambda: _threshold(st, sh.bound, lambda v: sp.Rational(99, 100)),
    }
    return sh, edits[how]()


WIDENED = [
    ("T3.spectrum.sharp", "hi x2"),
    ("T3.spectrum.sharp", "lo - 1"),
    ("T3.scaled.sharp", "1 + 2s"),
    ("T3.scaled.sharp", "1 - 2s"),
    ("T3.scaled.sharp", "1 + s^2"),
    ("T3.note0.sharp", "radius x2"),
    ("T3.flat.sharp", "dim ker = 2d"),
    ("T5.laplacian.sharp", "hi x2"),
    ("T5.laplacian.sharp", "lo - 1"),
    ("T5.non_orthogonal.sharp", "hi x2"),
    ("T5.non_orthogonal.sharp", "lo - 1"),
    ("T2.note0.sharp", "rank <= 2 d_h"),
    ("T4.causal.sharp", "n >= 3"),
    ("T4.softmax.not_sharp", "n >= 4"),
    ("T2.note0.narrow.sharp", "d_h <= d"),
    ("T2.note0.narrow.sharp", "d_h < d + 1"),
    ("T6.note1.sharp", "growth(0) x2"),
    ("T6.note1.sharp", "growth(0) + 1"),
    ("LAP.radius.sharp", "rho <= 2"),
    ("LAP.radius_status.sharp", "rho <= 2 + tol"),
    ("LAP.scale.sharp", "s >= -1"),
]
#: how a claim's threshold is moved: a nonzero one by a factor either way, a side of 0 off it either
#: way, a confidence level to 90% and to 99%
_MOVES = {"side": ("+1/100", "-1/100"), "level": ("level 90%", "level 99%")}
WIDENED += [
    (nm, how)
    for nm, (tid, sh) in WITNESSES.items()
    if sh.check == "threshold_pair"
    for how in _MOVES.get(sh.bound, ("x2", "x1/2"))
]


@pytest.mark.parametrize(
    ("name", "how"),
    [pytest.param(nm, how, marks=pytest.mark.theorem(WITNESSES[nm][0]), id=f"{nm}:{how}") for nm, how in WIDENED],
)
def test_a_widened_bound_is_caught(name, how):
    """The same check on the statement with its bound widened in memory: the witness misses it."""
    tid, _ = WITNESSES[name]
    sh, edited = _widen(name, how)
    verdict = S.check(_entry(tid), sh, edited)
    assert not verdict.holds, (name, how, verdict)


def _is_bound(key, value) -> bool:
    """A bound a statement asserts (the gate's rule, :func:`theory.gate.sharp.is_bound`)."""
    return is_bound(key, value)


def registry_bounds() -> set[tuple[str, str]]:
    """``(statement id, bound key)`` of every bound of a hypothesis, conclusion or note, and of every
    claim's thresholds and bounds (``(claim id, key)``)."""
    out = {(c.id, key) for c in registry.CLAIMS for key, v in {**c.params, **c.thresholds}.items() if _is_bound(key, v)}
    for t in registry.THEOREMS:
        sts = [(st.id, st.params) for st in (*t.hypotheses, *t.conclusions)]
        sts += [(f"{t.id}.note{q}", getattr(nt, "params", {})) for q, nt in enumerate(t.notes)]
        for sid, params in sts:
            for key, value in params.items():
                if _is_bound(key, value):
                    out.add((sid, "lo,hi" if key in ("lo", "hi") else key))
    return out


@pytest.mark.theorem(*registry.ids(), *registry.claim_ids())
def test_every_registry_bound_has_a_sharpness_witness():
    covered = {(sh.of, sh.bound) for _, sh in WITNESSES.values()}
    missing = registry_bounds() - covered
    assert not missing, f"bounds without a sharpness witness: {sorted(missing)}"
    assert {("T3.scaled", "scaled_spectrum"), ("T3.spectrum", "lo,hi"), ("T4.causal", "size")} <= covered
    assert {("T2.note0", "narrow"), ("T6.note1", "dominant"), ("E5", "agreement_min"), ("LAP", "radius")} <= covered


@pytest.mark.theorem(*registry.ids(), *registry.claim_ids())
def test_every_sharp_witness_has_a_widening_mutant_here():
    assert {nm for nm, sh in ((k, v[1]) for k, v in WITNESSES.items()) if sh.sharp} <= {nm for nm, _ in WIDENED}


@pytest.mark.theorem(*registry.ids(), *registry.claim_ids())
def test_sharpness_texts_type_no_formula():
    found = [(nm, span) for nm, (_, sh) in WITNESSES.items() for span in free_formulas(sh.statement)]
    assert not found, found


def test_theorems_md_lists_every_witness():
    from theory.render import render_markdown

    text = render_markdown()
    assert all(f"`{nm}`" in text for nm in WITNESSES)
