"""The local policy of ``tests/conftest.py`` that no other test would notice losing: Hypothesis' pool of
*local constants* (the literals of every imported module outside site-packages, mixed into its draws
by Hypothesis ≥ 6.131) is pinned empty for the whole session, so what a search draws does not depend
on which project modules an earlier test imported (issue 30)."""

from __future__ import annotations


def test_hypothesis_mixes_no_literal_of_the_project_into_its_draws():
    from hypothesis.internal.conjecture import providers

    import numerics.tolerance  # a project module full of literals (64.0, 1e-300, …)

    assert numerics.tolerance.SAFETY == 64.0
    assert len(providers._get_local_constants()) == 0
