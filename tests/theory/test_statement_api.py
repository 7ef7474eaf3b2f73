"""The public way to state a theorem (:mod:`theory.api`) and to register it (in-process, or through the
entry-point group ``connwalk.theorems``): the generic oracle judges the stated formulas on drawn
instances, every registered statement is listed with its origin, bad input is named."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import sympy as sp

from tests.theory import stated
from theory import api, oracles, registry
from theory.errors import StatementError, UnknownTheoremError


def test_the_generic_oracle_judges_the_stated_formulas():
    inst = stated.walk(3)
    rows = stated.true_statement().conclusions[0]
    sym = stated.false_statement().conclusions[0]
    assert rows.predicate == "formulas_hold" and rows.check is not None
    assert oracles.judge(rows, inst).holds
    assert oracles.judge(sym, inst).fails
    symmetric = {"P": np.array([[0.25, 0.75], [0.75, 0.25]]), "n": 2}
    assert oracles.judge(sym, symmetric).holds  # the case a reviewer's quick check might draw


def test_a_torch_instance_is_judged_like_numpy():
    import torch

    inst = stated.walk(5)
    t_inst = {"P": torch.tensor(inst["P"], dtype=torch.float32), "n": inst["n"]}
    v = oracles.judge(stated.true_statement().conclusions[0], t_inst)
    # float32 rows sum to one only to float32's accuracy: the float64 threshold fails them (no loosening)
    assert v.fails and v.residual < 1e-6


def test_a_relation_is_judged_and_its_default_tolerance_names_the_sizes():
    rel = api.relation("nonneg", sp.Ge(stated.P[api.i, api.j], 0), free=(api.i, api.j))
    c = api.conclusion("X.nonneg", "«nonneg»", formulas={"nonneg": rel}, strategy=stated.WALKS)
    assert oracles.judge(c, stated.walk(1)).holds
    assert oracles.judge(c, {"P": np.array([[1.5, -0.5], [0.5, 0.5]]), "n": 2}).fails
    eps = sp.Symbol("varepsilon", positive=True)
    assert c.params["tol"].bound == 64 * eps  # an entrywise sign: no size
    assert stated.true_statement().conclusions[0].params["tol"].bound == 64 * eps * api.n  # a sum over n terms


def test_the_registry_is_listed_first_through_the_public_path():
    recs = api.all_statements()
    assert [r.theorem for r in recs[: len(registry.THEOREMS)]] == registry.THEOREMS
    assert all("connwalk.theorems" in r.origin and "theory.registry:THEOREMS" in r.origin for r in recs[:10])


def test_register_lists_the_statement_with_its_origin_and_unregister_removes_it():
    t = stated.true_statement("MINE_REG")
    rec = api.register(t)
    try:
        assert rec.origin == f"in-process: {__name__}"
        assert api.get_registered("MINE_REG").theorem is t
        with pytest.raises(StatementError, match="also registered by"):
            api.register(stated.true_statement("T3"))  # connwalk's id: refused, naming the origin
    finally:
        api.unregister("MINE_REG")
    with pytest.raises(UnknownTheoremError, match="MINE_REG"):
        api.get_registered("MINE_REG")


@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: api.identity("", 1, 1), "name"),
        (lambda: api.relation("r", 1), "rel"),
        (lambda: api.conclusion("X.c", "«r»", formulas={}, strategy=stated.WALKS), "formulas"),
        (lambda: api.conclusion("X.c", "«r»", formulas={"r": stated.ROWS}, strategy=[1]), "strategy"),
        (lambda: api.conclusion("X.c", "x", formulas={"r": sp.Symbol("x")}, strategy=stated.WALKS), "formulas"),
        (lambda: api.statement("X", "t", conclusions=[stated.true_statement().conclusions[0]]), "statement 'X'"),
        (lambda: api.register("T9"), "statement"),
    ],
)
def test_bad_input_is_named(build, argument):
    with pytest.raises(StatementError) as e:
        build()
    assert e.value.argument == argument and str(e.value).startswith(argument)


def install(tmp_path, name: str, source: str, value: str) -> None:
    """A package ``name`` with ``source`` as its ``theorems`` module and an entry point ``value`` in the
    group ``connwalk.theorems``, installed as importlib.metadata sees an installed distribution (a
    ``.dist-info`` on the path): the test puts ``tmp_path`` on ``sys.path``."""
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "theorems.py").write_text(textwrap.dedent(source))
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[connwalk.theorems]\n{name} = {value}\n")


def test_an_installed_package_registers_through_the_entry_point_group(tmp_path, monkeypatch):
    source = "from tests.theory.stated import true_statement\nSTATEMENTS = [true_statement('EP1')]\n"
    install(tmp_path, "walkthm", source, "walkthm.theorems:STATEMENTS")
    monkeypatch.syspath_prepend(str(tmp_path))
    rec = api.get_registered("EP1")
    assert rec.origin == "entry point connwalk.theorems: walkthm = walkthm.theorems:STATEMENTS (walkthm)"


def test_an_entry_point_that_does_not_load_is_named(tmp_path, monkeypatch):
    install(tmp_path, "brokenthm", "STATEMENTS = 3\n", "brokenthm.theorems:STATEMENTS")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(StatementError, match="brokenthm = brokenthm.theorems:STATEMENTS"):
        api.all_statements()


def test_pyproject_declares_connwalks_own_statements_in_the_group():
    import tomllib
    from pathlib import Path

    from theory.registry import external

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    declared = data["project"]["entry-points"][external.GROUP]
    assert declared == {external.OWN[0]: external.OWN[1]}
    assert external.resolve(external.OWN[1]) is registry.THEOREMS
