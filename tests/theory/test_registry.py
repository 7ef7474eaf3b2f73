"""The theorem registry: contents, lookups, bad input, and the no-torch rule for ``theory``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from theory import derivations as dv
from theory.errors import TheoryError, UnknownTheoremError, UnsupportedSizeError
from theory.registry import CLAIMS, LEMMAS, MAIN, THEOREMS, Theorem, claim_ids, get, get_claim, ids

REPO = Path(__file__).resolve().parents[2]


def test_registry_lists_t1_to_t6_and_their_lemmas():
    assert [t.id for t in MAIN] == ["T1", "T2", "T3", "T4", "T5", "T6"]
    assert THEOREMS == LEMMAS + MAIN
    assert len(set(ids())) == len(THEOREMS)
    known = set(ids())
    for t in THEOREMS:
        assert isinstance(t, Theorem)
        assert t.title and t.hypotheses and t.conclusions and t.source.claim and t.source.section
        assert all(h.id and h.name and h.text for h in t.hypotheses)
        assert all(c.id and c.text for c in t.conclusions)
        assert set(t.lemmas) <= known, (t.id, t.lemmas)
        assert callable(t.derivation) and t.supported_sizes, t.id
        assert t.symbolic_tests, t.id
        for p in t.symbolic_tests + t.certificate_tests:  # the theory area's own tests exist
            assert (REPO / p).is_file(), p
        if t.kind == "theorem":
            assert t.numeric_tests and t.necessity_tests and t.certificate_tests, t.id
            assert all(
                p.startswith(("tests/numerics/test_", "tests/models/test_")) and p.endswith(".py")
                for p in t.numeric_tests + t.necessity_tests
            )
        for s in (t.title, *(c.text for c in t.conclusions), *t.notes, *(h.text for h in t.hypotheses)):
            assert s.count("$") % 2 == 0, f"{t.id}: unbalanced $ in {s!r}"


def _entry_tests(tid):
    """An entry's own numeric tests, as its registry file states them (before the registry adds the
    implementation test files, ``IMPLEMENTATION_TESTS``, checked below)."""
    from theory.registry.lemmas import LEMMAS
    from theory.registry.spectral import SPECTRAL_THEOREMS
    from theory.registry.walks import WALK_THEOREMS

    return {t.id: t for t in (*LEMMAS, *WALK_THEOREMS, *SPECTRAL_THEOREMS)}[tid].numeric_tests


def test_implementation_tests_are_linked_and_exist():
    from theory.registry import IMPLEMENTATION_TESTS

    for tid, paths in IMPLEMENTATION_TESTS.items():
        assert set(paths) <= set(get(tid).numeric_tests), tid
        for p in paths:
            assert (REPO / p).is_file(), p


def test_numeric_test_paths_are_the_assigned_ones():
    stmt = "tests/numerics/test_statements.py"
    scale = "tests/numerics/test_scale.py"
    assert set(_entry_tests("T1")) == {
        "tests/numerics/test_walk_t1.py",
        "tests/numerics/test_attention.py",
        stmt,
        scale,
    }
    assert set(_entry_tests("T2")) == {
        "tests/numerics/test_walk_t2.py",
        "tests/numerics/test_attention.py",
        "tests/numerics/test_oracles.py",
        scale,
        "tests/models/test_identity_tiny.py",
        "tests/models/test_identity_real.py",
        "tests/models/test_registry.py",
        stmt,
    }
    group = {
        "tests/numerics/test_laplacian.py",
        "tests/numerics/test_reversibility.py",
        "tests/numerics/test_necessity.py",
        "tests/numerics/test_graphs.py",
        "tests/numerics/test_statements.py",
    }
    assert set(_entry_tests("T3") + get("T3").necessity_tests) == group | {
        "tests/numerics/test_spectra.py",
        "tests/numerics/test_oracles.py",
        scale,
    }
    assert set(_entry_tests("T5") + get("T5").necessity_tests) == group | {"tests/numerics/test_involution.py"}
    assert set(_entry_tests("T4") + get("T4").necessity_tests) <= group
    assert set(_entry_tests("T6")) == {
        "tests/numerics/test_patterns.py",
        "tests/numerics/test_statements.py",
        "tests/numerics/test_t6_emergence.py",
        "tests/numerics/test_oracles.py",
    }


def test_get_returns_registered_objects():
    for t in THEOREMS:
        assert get(t.id) is t


def test_claims_are_registered_and_separate_from_theorems():
    assert claim_ids() == ["E1", "E2", "E3", "E4", "E5", "E6", "LAP"]
    for c in CLAIMS:
        assert get_claim(c.id) is c
        assert c.statement and c.statistic and c.null_model and c.decision_rule and c.module
    with pytest.raises(UnknownTheoremError):
        get_claim("T3")


@pytest.mark.parametrize("bad", ["T7", "t3", "E1", "", None, 3])
def test_unknown_id_lists_known_ids(bad):
    with pytest.raises(UnknownTheoremError) as ei:
        get(bad)
    assert isinstance(ei.value, KeyError) and isinstance(ei.value, TheoryError)
    msg = str(ei.value)
    assert repr(bad) in msg
    for t in THEOREMS:
        assert t.id in msg


def test_size_out_of_range_lists_supported_sizes():
    with pytest.raises(UnsupportedSizeError) as ei:
        get("T3").derive(n=12)
    msg = str(ei.value)
    assert "T3" in msg and "n=12" in msg and "n in 2..3" in msg and "d in 1..2" in msg
    assert isinstance(ei.value, ValueError)
    with pytest.raises(UnsupportedSizeError, match="heads in 1..2"):
        get("T6").derive(heads=5)
    with pytest.raises(UnsupportedSizeError, match="supported sizes: n in 1..4, d in 1..3"):
        get("T1").derive(m=3)  # unknown size name
    with pytest.raises(UnsupportedSizeError):
        get("T1").derive(n=2.0)  # not an int
    with pytest.raises(UnsupportedSizeError):
        dv.derive_t1(n=True)
    with pytest.raises(UnsupportedSizeError):
        dv.derive_t2(0)  # positional sizes are validated too


def test_default_sizes_are_within_supported_ranges():
    for t in THEOREMS:
        for k, v in t.default_sizes.items():
            lo, hi = t.supported_sizes[k]
            assert lo <= v <= hi, (t.id, k, v)
        assert set(t.default_sizes) == set(t.supported_sizes), t.id


def test_theory_never_imports_torch():
    """theory/ imports neither torch nor numerics (nor paper_checks); the registry, the renderer and
    the derivations do not even need numpy (only the oracles use it)."""
    code = (
        "import sys\n"
        "import theory, theory.registry, theory.render, theory.derivations, theory.certificates, "
        "theory.symbolic, theory.report, theory.errors, theory.statements\n"
        "theory.render.render_markdown(); theory.render.render_latex()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numerics', 'paper_checks', 'numpy'))\n"
        "assert not bad, bad\n"
        "import theory.oracles\n"
        "from theory.registry import THEOREMS\n"
        "theory.oracles.judge(THEOREMS[5].conclusions[-1], {})\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numerics', 'paper_checks'))\n"
        "assert not bad, bad\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "clean"
