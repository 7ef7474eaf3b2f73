"""The empirical claims E1-E6 are registered data (statement, statistic, null model, decision rule)
and agree with what paper_checks measures: the same claim ids, and each claim's module exists.
Adding a claim is one :class:`theory.statements.Claim` entry in ``theory/registry/claims.py``."""

from __future__ import annotations

import importlib

from theory.registry import CLAIMS, claim_ids
from theory.render import render_markdown


def test_paper_checks_claim_ids_match_the_registry():
    from paper_checks.main_job import CLAIMS as MEASURED

    assert list(MEASURED) == claim_ids(), (list(MEASURED), claim_ids())


def test_each_claim_names_its_measuring_module_and_renders():
    md = render_markdown()
    for c in CLAIMS:
        mod = importlib.import_module(c.module)
        if hasattr(mod, "CLAIM"):
            assert c.id == mod.CLAIM, (c.module, mod.CLAIM)
        assert f"## {c.id} — {c.title}" in md and c.filled("decision_rule") in md and c.filled("null_model") in md


def test_known_theorem_ids_include_the_claims():
    import numerics.pytest_plugin as cf

    known = cf.known_theorem_ids()
    assert set(claim_ids()) <= set(known) and "T3" in known and "L1" in known


def test_a_claims_own_tests_run_under_its_id():
    """``pytest --theorem LAP`` runs the tests the claim lists (the registry links them to its id)."""
    from theory.registry import linked_tests

    links = linked_tests()
    missing = [(c.id, p) for c in CLAIMS for p in c.tests if c.id not in links.get(p, set())]
    assert not missing, missing
    assert any(c.tests for c in CLAIMS)
