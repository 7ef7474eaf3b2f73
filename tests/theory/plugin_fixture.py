"""Not collected by default (name does not match test_*.py): run explicitly by test_plugin.py in a
subprocess to exercise the theorem-checker plugin (numerics.pytest_plugin) end to end."""

import pytest

from theory.report import record


@pytest.mark.theorem("T3")
def test_records_residuals():
    for r in (1e-16, 3e-15, 2e-16):
        record("T3", residual=r)


@pytest.mark.theorem("T3")
def test_records_symbolic_and_counterexample():
    record("T3", symbolic=True)
    record("T3", counterexample="drop (a): spec {-1, 3}")


@pytest.mark.theorem("T1")
def test_other_theorem():
    record("T1", residual=0.0)


@pytest.mark.theorem("T1")
def test_failing_theorem_test():
    record("T1", symbolic=False)
    assert False, "deliberate failure: the table must count it"
