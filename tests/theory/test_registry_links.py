"""The registry and the test-suite point at each other: every test file the registry names exists,
and every test file tagged ``@pytest.mark.theorem("Tk")`` is named by theorem Tk in the registry
(so THEOREMS.md lists where each theorem is checked numerically)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from theory.registry import THEOREMS

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"theorem\(([^()]*)\)")
MARK_ID = re.compile(r'"([TL]\d+)"')


def _tagged(text: str) -> set[str]:
    """The theorem/lemma ids of every ``theorem("T2", "T3")`` marker written with literal ids."""
    return {tid for args in MARK.findall(text) for tid in MARK_ID.findall(args)}


def _named(t) -> set[str]:
    files = set()
    for group in (t.symbolic_tests, t.certificate_tests, t.numeric_tests, t.necessity_tests):
        files.update(f.split("::")[0] for f in group)
    return files


def test_every_named_test_file_exists():
    missing = [(t.id, f) for t in THEOREMS for f in sorted(_named(t)) if not (ROOT / f).is_file()]
    assert not missing, f"registry names test files that do not exist: {missing}"


def test_every_tagged_test_file_is_named_by_its_theorem():
    by_id = {t.id: _named(t) for t in THEOREMS}
    unlisted = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for tid in sorted(_tagged(path.read_text(encoding="utf-8"))):
            if tid in by_id and rel not in by_id[tid]:
                unlisted.append((tid, rel))
    assert not unlisted, f"tests tagged with a theorem that the registry does not list: {unlisted}"


def test_the_tag_scan_reads_every_literal_id_of_a_marker():
    assert _tagged('@pytest.mark.theorem("T2", "T3", "T6")\nX = pytest.mark.theorem("L1")') == {"T2", "T3", "T6", "L1"}


# ---------------------------------------------------------------------------------------------
# statement-level links: conclusions -> derivation steps and tests, hypotheses -> witnesses
# ---------------------------------------------------------------------------------------------
import ast  # noqa: E402

from theory import oracles  # noqa: E402
from theory.registry import CLAIMS, get  # noqa: E402
from theory.statements import placeholders  # noqa: E402

#: theory/derivations/__init__.py re-exports the derivations of these modules
DERIVATIONS_SRCS = [
    (ROOT / "theory" / "derivations" / f"{m}.py").read_text(encoding="utf-8") for m in ("walks", "spectral")
]


def _check_name_prefixes() -> list[str]:
    """Leading literal text of every ``D.add(name, ...)`` in the derivation modules."""
    out = []
    for node in (n for src in DERIVATIONS_SRCS for n in ast.walk(ast.parse(src))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add"
            and node.args
        ):
            a = node.args[0]
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                out.append(a.value)
            elif isinstance(a, ast.JoinedStr) and a.values and isinstance(a.values[0], ast.Constant):
                out.append(a.values[0].value)
    return out


def _functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def derivation_links():
    for t in THEOREMS:
        for c in t.conclusions:
            for link in c.derivations:
                yield t.id, c.id, link
        for h in t.hypotheses:
            for w in h.witnesses:
                if w.derivation:
                    yield t.id, w.id, w.derivation


def test_every_conclusion_names_derivation_steps_and_tests():
    missing = [
        (t.id, c.id, what)
        for t in THEOREMS
        for c in t.conclusions
        for what, links in (("derivations", c.derivations), ("tests", c.tests))
        if not links
    ]
    assert not missing, f"conclusions without links: {missing}"


def test_every_hypothesis_names_a_witness():
    missing = [h.id for t in THEOREMS for h in t.hypotheses if not h.witnesses]
    assert not missing, f"hypotheses without a necessity witness: {missing}"
    for t in THEOREMS:
        for h in t.hypotheses:
            for w in h.witnesses:
                assert w.instance is not None or w.derivation, w.id
                assert w.id.startswith(h.id + "."), w.id
                for cid in w.fails:
                    t.conclusion(cid)  # raises KeyError when the witness names a conclusion that does not exist
                if w.instance is not None:
                    assert w.fails, f"{w.id}: an instance witness must name the conclusions it breaks"
                    oracles.build(w.instance)  # the instance kind is known and its data exact


def test_derivation_links_point_at_existing_steps():
    """``ID::text``: ID registered, and ``text`` begins the name of a check in theory/derivations/__init__.py
    (``tests/theory/test_derivations.py`` also matches every link against the derived checks)."""
    names = _check_name_prefixes()
    bad = []
    for tid, owner, link in derivation_links():
        target, sep, text = link.partition("::")
        if not sep or not text or target not in {t.id for t in THEOREMS}:
            bad.append((owner, link, "malformed"))
            continue
        if not any(n.startswith(text) or (text.startswith(n) and len(n) >= 8) for n in names):
            bad.append((owner, link, "no such derivation step"))
    assert not bad, bad


def test_test_links_point_at_existing_tests():
    bad = []
    for t in THEOREMS:
        for c in t.conclusions:
            for link in c.tests:
                path, _, func = link.partition("::")
                if not (ROOT / path).is_file():
                    bad.append((c.id, link, "no such file"))
                elif func and func not in _functions(path):
                    bad.append((c.id, link, "no such test function"))
    for c in CLAIMS:
        bad += [(c.id, p, "no such file") for p in c.tests if not (ROOT / p).is_file()]
    assert not bad, bad


def test_predicates_and_params_resolve():
    for t in THEOREMS:
        for s in (*t.hypotheses, *t.conclusions):
            if s.predicate is not None:
                assert s.predicate in oracles.PREDICATES, (s.id, s.predicate)
            assert placeholders(s.statement) <= set(s.params), (s.id, placeholders(s.statement), sorted(s.params))
        for c in t.conclusions:  # every formula a conclusion holds is rendered in its statement
            assert set(c.formulas) <= placeholders(c.statement), (c.id, sorted(c.formulas))
            # ... and every tolerance (the thresholds its predicate evaluates) in its tolerance text
            assert set(c.tolerances) == placeholders(c.tolerance), (c.id, sorted(c.tolerances))
        if t.kind == "theorem":  # every theorem has at least one executable conclusion
            assert any(c.predicate for c in t.conclusions), t.id
    spectrum = get("T3").conclusion("T3.spectrum")
    plain = {k: v for k, v in spectrum.params.items() if k not in spectrum.formulas and k not in spectrum.tolerances}
    assert plain == {"lo": 0, "hi": 2}
    assert set(spectrum.formulas) == {"upper_form"}


def test_a_dangling_link_is_detected(monkeypatch):
    """The link checks fail for a link that points at nothing."""
    from dataclasses import replace

    t = get("T3")
    c = t.conclusion("T3.spectrum")
    broken = t.with_conclusion(replace(c, derivations=("T3::no such step",), tests=(c.tests[0] + "_gone",)))
    monkeypatch.setattr("tests.theory.test_registry_links.THEOREMS", [broken])
    with pytest.raises(AssertionError, match="no such derivation step"):
        test_derivation_links_point_at_existing_steps()
    with pytest.raises(AssertionError, match="no such test function"):
        test_test_links_point_at_existing_tests()
    monkeypatch.setattr(
        "tests.theory.test_registry_links.THEOREMS", [replace(t, hypotheses=(replace(t.hypotheses[0], witnesses=()),))]
    )
    with pytest.raises(AssertionError, match="without a necessity witness"):
        test_every_hypothesis_names_a_witness()
