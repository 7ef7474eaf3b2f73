"""The registry and the test-suite point at each other: every test file the registry names exists,
and every test file tagged ``@pytest.mark.theorem("Tk")`` is named by theorem Tk in the registry
(so THEOREMS.md lists where each theorem is checked numerically)."""
from __future__ import annotations

import re
from pathlib import Path

from theory.registry import THEOREMS

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r'theorem\("(T\d+)"\)')


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
        for tid in sorted(set(MARK.findall(path.read_text(encoding="utf-8")))):
            if tid in by_id and rel not in by_id[tid]:
                unlisted.append((tid, rel))
    assert not unlisted, f"tests tagged with a theorem that the registry does not list: {unlisted}"
