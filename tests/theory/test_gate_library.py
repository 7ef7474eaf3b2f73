"""The gate as a library (:mod:`theory.gate`) on statements stated with :mod:`theory.api`: the property
test generated from the statement (a shrunk counterexample for a false one), the generated mutants
(rejected, proved equivalent, or surviving — which fails the gate), the sharpness witness of every bound
(a bound without one named), the prose check; and on connwalk's own statements, the mutant counts the
discriminating test files report."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import strategies as st

from tests.theory import stated
from tests.theory import test_discriminating_spectral as disc_spectral
from tests.theory import test_discriminating_walks as disc_walks
from theory import api, oracles
from theory.errors import UnknownTheoremError
from theory.gate import gate, gate_theorem
from theory.gate.mutants import conclusion_mutants


def test_a_true_statement_passes_and_every_mutant_is_rejected():
    t = stated.true_statement()
    r = gate_theorem(t, "test")
    assert r.status == "passes" and r.exit_code == 0, r.summary()
    assert [c.status for c in r.conclusions] == ["holds"]
    generated = conclusion_mutants(t.conclusions[0])
    assert {m.name for m in r.mutants} == {m.name for m in generated} and len(generated) >= 3
    assert r.counts()["rejected"] == len(generated)


def test_a_false_statement_fails_with_a_shrunk_counterexample():
    t = stated.false_statement()
    r = gate_theorem(t, "test")
    assert r.status == "fails" and r.exit_code == 1
    (res,) = r.conclusions
    assert res.status == "fails" and res.counterexample is not None
    assert res.counterexample["n"] == 2 and np.asarray(res.counterexample["P"]).shape == (2, 2)  # shrunk
    assert oracles.judge(t.conclusions[0], res.counterexample).fails  # it does break the statement
    assert "counterexample (shrunk)" in r.summary()


def _symmetric_walks():
    def walk(p: float) -> dict:
        return {"P": np.array([[p, 1 - p], [1 - p, p]]), "n": 2}

    return st.floats(0.1, 0.9).map(walk)


def test_a_surviving_mutant_fails_the_gate():
    """Rows summing to one, drawn only on symmetric walks: the columns sum to one as well, so the index
    swap ``P_ik -> P_ki`` is never rejected, and it is not the same statement: it survives."""
    c = api.conclusion("S.rows", "«rows»", formulas={"rows": stated.ROWS}, strategy=_symmetric_walks())
    r = gate_theorem(api.statement("S", "the rows of a symmetric walk", conclusions=[c]), "test")
    assert r.conclusions[0].status == "holds"
    survived = [m.name for m in r.mutants if m.status == "survived"]
    assert survived == ["S.rows rows lhs: P[i, k] -> P[k, i] (index swap)"], r.summary()
    assert r.status == "fails" and "surviving mutant: S.rows rows lhs" in r.summary()


def _bounded(sharpness=()):
    rel = api.relation("entries", sp.Le(stated.P[api.i, api.j], 1), free=(api.i, api.j))
    c = api.conclusion("B.entries", "«entries»", formulas={"entries": rel}, strategy=stated.WALKS)
    return api.statement("B", "the entries of a walk", conclusions=[c], sharpness=sharpness)


def test_a_bound_without_a_witness_is_named_and_a_witness_must_attain_it():
    r = gate_theorem(_bounded(), "test")
    assert [(b.of, b.bound, b.status) for b in r.bounds] == [("B.entries", "entries", "missing")]
    assert r.status == "fails" and "B.entries `entries`" in r.summary()
    text = "the identity walk $P = «P»$ has its diagonal entries at the bound"
    good = api.sharpness("B.entries.sharp", "B.entries", "entries", text, {"P": [[1, 0], [0, 1]], "n": 2})
    r = gate_theorem(_bounded([good]), "test")
    assert [(b.witness, b.status) for b in r.bounds] == [("B.entries.sharp", "sharp")]
    loose = good.__class__(**{**good.__dict__, "instance": {"P": [["1/2", "1/2"], ["1/2", "1/2"]], "n": 2}})
    r = gate_theorem(_bounded([loose]), "test")
    assert [b.status for b in r.bounds] == ["missed"] and r.status == "fails"


def test_a_count_typed_in_prose_fails_the_gate():
    t = stated.true_statement()
    typed = t.__class__(**{**t.__dict__, "title": "the rows of a walk always sum to two"})
    r = gate_theorem(typed, "test")
    assert {(w, rule) for _, w, rule in r.prose} == {("always", "assertion"), ("two", "count")}
    assert r.status == "fails"


def test_a_registered_statement_is_gated_by_id_and_an_unknown_id_is_named():
    api.register(stated.false_statement("GATE_SYM"))
    try:
        r = gate("GATE_SYM")
        assert r.status == "fails" and r.origin == f"in-process: {__name__}"
    finally:
        api.unregister("GATE_SYM")
    with pytest.raises(UnknownTheoremError, match="GATE_SYM"):
        gate("GATE_SYM")


@pytest.mark.parametrize("module", [disc_walks, disc_spectral], ids=["walks", "spectral"])
def test_the_gate_generates_the_mutants_the_discriminating_files_test(module):
    """The library's generator on connwalk's statements gives exactly the mutants the discriminating
    files run (each rejected by its property test or shown equivalent there)."""
    from theory.registry import EVALUATED_BY_TESTS, get

    names = {
        m.name
        for t, cid in module.CONCLUSIONS
        for m in conclusion_mutants(get(t).conclusion(cid), skip=EVALUATED_BY_TESTS.get(cid, {}))
    }
    assert names == set(module.MUTANTS) and set(module.EQUIVALENT) <= names


def test_the_gate_on_t1_reproduces_its_discriminating_counts():
    r = gate("T1")
    expected_equivalent = {nm for nm in disc_walks.EQUIVALENT if nm.startswith("T1.")}
    t1_mutants = {nm for nm, (t, _) in disc_walks.MUTANTS.items() if t == "T1"}
    assert r.status == "passes", r.summary()
    assert {m.name for m in r.mutants if m.status == "equivalent"} == expected_equivalent
    assert {m.name for m in r.mutants if m.status == "rejected"} == t1_mutants - expected_equivalent
