"""The package layering, read from the source (``ast``, no imports executed).

* ``theory`` imports neither torch nor ``numerics`` nor ``paper_checks`` (not even inside a function):
  statements, oracles and derivations stay independent of the code they judge.
* ``numerics`` never imports ``paper_checks`` (the toolkit does not depend on the paper checks).
* The module-level import graph of the three packages has no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("numerics", "theory", "paper_checks")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imports(module: str) -> list[tuple[str, bool]]:
    """``(imported name, at module level)`` for every import statement of ``module`` (relative imports
    resolved; ``from a import b`` yields both ``a`` and ``a.b``)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = f"{pkg}.{base}" if base else pkg
            out += [(base, id(node) in top)] + [(f"{base}.{a.name}", id(node) in top) for a in node.names]
    return out


def _project_module(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def test_the_scan_sees_the_packages():
    assert {"numerics.walk", "theory.registry", "paper_checks.cli", "paper_checks.cli.patterns"} <= set(MODULES)
    assert ("torch", True) in imports("numerics.walk")
    assert any(n.startswith("paper_checks.cli.patterns") for n, _ in imports("paper_checks.cli"))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("theory")))
def test_theory_imports_neither_torch_nor_the_code_it_judges(module):
    bad = sorted({n for n, _ in imports(module) if n.split(".")[0] in ("torch", "numerics", "paper_checks")})
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("numerics")))
def test_numerics_never_imports_paper_checks(module):
    bad = sorted({n for n, _ in imports(module) if n.split(".")[0] == "paper_checks"})
    assert not bad, f"{module} imports {bad}"


def test_no_module_level_import_cycle():
    g = nx.DiGraph()
    g.add_nodes_from(MODULES)
    for m in MODULES:
        for name, top in imports(m):
            target = _project_module(name)
            if top and target and target != m:
                g.add_edge(m, target)
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import cycles: {cycles[:5]}"
