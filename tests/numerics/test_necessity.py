"""Necessity of every hypothesis, judged by the independent oracles (theory/oracles/__init__.py).

* ``test_hypothesis_is_necessary[T3.a]`` …: for each registered hypothesis with a predicate,
  Hypothesis ``find`` searches instances drawn with *only that hypothesis dropped*
  (``tests/numerics/statement_cases.py``) for one where the oracle says the dropped hypothesis
  fails, the other hypotheses hold, and a conclusion of the theorem fails (also by the oracle);
  the shrunk instance is re-checked and recorded. ``diagnose`` plays no part in these judgements
  (``tests/numerics/test_oracles.py`` checks ``diagnose`` against the oracles on its own).
* ``test_registered_witness[...]``: every necessity witness registered with an exact instance
  (THEOREMS.md lists them) is kept as an explicit regression case: the dropped hypothesis fails,
  the others hold, and each conclusion the witness names fails.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, find, settings

from numerics.laplacian import diagnose, format_spectrum
from numerics.walk import ConnectionWalk
from tests.numerics.statement_cases import instances
from theory import oracles
from theory.registry import MAIN, get
from theory.report import record

F = torch.float64

# bounded, derandomized searches: generation stops at the first hit (no shrinking: any hit is a
# valid counterexample, and shrinking dominated the run time)
SEARCH = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


def fmt(a) -> str:
    return np.array2string(np.round(np.asarray(a, float), 3) + 0.0, separator=",", max_line_width=10**6).replace(
        "\n", ""
    )


def _searchable():
    """Hypotheses whose necessity shows on instances (a predicate and an instance witness); the
    others (T6's H1, H2: the Jacobian) have derivation witnesses, checked in test_derivations."""
    for t in MAIN:
        for h in t.hypotheses:
            if h.predicate is not None and any(w.instance is not None for w in h.witnesses):
                yield pytest.param(t.id, h.id, marks=pytest.mark.theorem(t.id), id=h.id)


def _verdicts(theorem, dropped: str, inst):
    hyp, con = oracles.judge_theorem(theorem, inst)
    return hyp[dropped], {k: v for k, v in hyp.items() if k != dropped}, con


@pytest.mark.parametrize("tid,hid", list(_searchable()))
def test_hypothesis_is_necessary(tid, hid):
    theorem = get(tid)
    h = theorem.hypothesis(hid)

    def violates(inst) -> bool:
        dropped, others, con = _verdicts(theorem, hid, inst)
        # a counterexample: the dropped hypothesis certainly fails, every other certainly holds and
        # a conclusion certainly fails (an undecided verdict is no evidence either way)
        return dropped.fails and all(v.holds for v in others.values()) and any(v.fails for v in con.values())

    inst = find(instances(theorem.without(hid)), violates, settings=SEARCH)
    dropped, others, con = _verdicts(theorem, hid, inst)
    assert dropped.fails, dropped
    assert all(v.holds for v in others.values()), others
    failed = sorted(k for k, v in con.items() if v.fails)
    assert failed
    data = ", ".join(f"{k}={fmt(v)}" for k, v in inst.items() if isinstance(v, np.ndarray))
    record(tid, counterexample=f"drop {h.name} (found, judged by the oracles): {data} → fails {', '.join(failed)}")


def _witnesses():
    for t in MAIN:
        for h in t.hypotheses:
            for w in h.witnesses:
                if w.instance is not None:
                    yield pytest.param(t.id, h.id, w.id, marks=pytest.mark.theorem(t.id), id=w.id)


@pytest.mark.parametrize("tid,hid,wid", list(_witnesses()))
def test_registered_witness(tid, hid, wid):
    theorem = get(tid)
    h = theorem.hypothesis(hid)
    (w,) = [w for w in h.witnesses if w.id == wid]
    inst = oracles.build(w.instance)
    hyp, con = oracles.judge_theorem(theorem, inst)
    if h.predicate is not None:
        assert not hyp[hid].holds, f"{wid}: the dropped hypothesis holds on the witness"
    for k, v in hyp.items():
        if k != hid:
            assert v.holds, f"{wid}: hypothesis {k} should hold on the witness: {v}"
    for cid in w.fails:
        assert not con[cid].holds, f"{wid}: conclusion {cid} should fail: {con[cid]}"
    record(tid, counterexample=f"{wid}: {w.text} → fails {', '.join(w.fails)}")


@pytest.mark.theorem("T5")
def test_t5_non_orthogonal_involution_explicit():
    """T² = I but T not orthogonal: real spectrum in [0, 2], not π-self-adjoint, no Dirichlet —
    by the oracles, and diagnose says the same."""
    inst = {"kind": "sha", "A": np.array([[0.6, 0.4], [0.3, 0.7]]), "T": np.array([[1.0, 1.0], [0.0, -1.0]])}
    assert np.allclose(inst["T"] @ inst["T"], np.eye(2))
    assert oracles.reversible(inst, {}).holds and not oracles.orthogonal_involution(inst, {}).holds
    c = get("T5").conclusion("T5.non_orthogonal")  # the interval it states; T5.laplacian's formulas
    lap = get("T5").conclusion("T5.laplacian").params
    assert oracles.walk_spectrum_interval(inst, c.params).holds
    assert not oracles.walk_self_adjoint(inst, lap).holds and not oracles.walk_dirichlet(inst, lap).holds
    D = diagnose(ConnectionWalk.from_sha(torch.tensor(inst["A"], dtype=F), torch.tensor(inst["T"], dtype=F)))
    assert bool(D.detailed_balance.holds) and bool(D.spectrum_interval.holds)
    assert not bool(D.self_adjoint.holds) and not bool(D.dirichlet.holds)
    record(
        "T5",
        counterexample=f"non-orthogonal involution T=[[1,1],[0,-1]], A=[[.6,.4],[.3,.7]]: "
        f"spec Δ = {format_spectrum(D.spectrum)} ⊂ [0,2] but not π-self-adjoint, "
        f"Dirichlet fails",
    )
