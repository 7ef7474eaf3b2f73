"""The package layering, read from the source (``ast``, no imports executed).

* ``theory`` imports neither torch nor ``numerics`` nor ``paper_checks`` (not even inside a function):
  statements, oracles and derivations stay independent of the code they judge.
* ``numerics`` never imports ``paper_checks`` (the toolkit does not depend on the paper checks).
* The import graph of the three packages has no cycle, counting the imports inside functions (a
  deferred import only hides a cycle from the interpreter, not from the reader).
* No module imports another module's private name (``from x import _name``): what two modules share
  is public in the lower one.
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


def _from_base(module: str, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` statement of ``module`` reads (relative imports resolved)."""
    base = node.module or ""
    if node.level:
        pkg = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            pkg = pkg.rpartition(".")[0]
        base = f"{pkg}.{base}" if base else pkg
    return base


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
            base = _from_base(module, node)
            out += [(base, id(node) in top)] + [(f"{base}.{a.name}", id(node) in top) for a in node.names]
    return out


def private_imports(module: str, source: str | None = None) -> list[tuple[str, str]]:
    """``(source module, name)`` for every ``from source import _name`` of ``module`` (its file, or
    ``source`` in its place) whose source is another module of the three packages (dunder names and
    submodules are not private names)."""
    text = MODULES[module].read_text() if source is None else source
    tree = ast.parse(text, filename=str(MODULES[module]))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            src = _project_module(base)
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if src and src != module and private and f"{base}.{a.name}" not in MODULES:
                    out.append((src, a.name))
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


def import_graph(*, function_level: bool) -> nx.DiGraph:
    """Module → imported project module, for module-level imports, or for all imports when
    ``function_level``."""
    g = nx.DiGraph()
    g.add_nodes_from(MODULES)
    for m in MODULES:
        for name, top in imports(m):
            target = _project_module(name)
            if (top or function_level) and target and target != m:
                g.add_edge(m, target)
    return g


#: import cycles known and not yet untied (each a sorted list of the modules of one strongly connected
#: component): the list may only shrink. Empty since the Laplacian package was untied,
#: contracts ↔ contract_specs ↔ walk, simulate ↔ rk4_check ↔ simulate_batched and
#: paper_checks.report ↔ laplacian_check.
KNOWN_CYCLES: list[list[str]] = []


def test_the_scan_sees_function_level_imports():
    # paper_checks.report renders the LAP section through an import inside render_markdown
    assert ("paper_checks.laplacian_check.report_section", False) in imports("paper_checks.report")
    g = import_graph(function_level=True)
    assert g.has_edge("paper_checks.report", "paper_checks.laplacian_check")
    assert not import_graph(function_level=False).has_edge("paper_checks.report", "paper_checks.laplacian_check")


def test_the_cycle_check_finds_a_cycle_made_only_of_a_deferred_import():
    # the graph the test below reads, plus one deferred import back up the Laplacian chain
    g = import_graph(function_level=True)
    assert not g.has_edge("numerics.laplacian.result", "numerics.laplacian.diagnosis")
    g.add_edge("numerics.laplacian.result", "numerics.laplacian.diagnosis")
    sccs = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert any({"numerics.laplacian.result", "numerics.laplacian.diagnosis"} <= set(c) for c in sccs)


def test_no_import_cycle_counting_function_level_imports():
    g = import_graph(function_level=True)
    sccs = sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)
    new = [c for c in sccs if c not in KNOWN_CYCLES]
    assert not new, f"import cycles (function-level imports counted): {new}"
    gone = [c for c in KNOWN_CYCLES if c not in sccs]
    assert not gone, f"untied cycles still listed in KNOWN_CYCLES (remove them): {gone}"


def test_the_laplacian_package_is_a_one_way_chain():
    chain = [
        "algebra",
        "result",
        "forms",
        "blocks",
        "checks",
        "krylov",
        "spectral",
        "sections",
        "lanczos",
        "kernel_arpack",
        "kernel",
        "dense",
        "factored",
        "diagnosis",
    ]
    rank = {f"numerics.laplacian.{f}": i for i, f in enumerate(chain)}
    assert set(rank) == {m for m in MODULES if m.startswith("numerics.laplacian.")}
    for m, i in rank.items():
        for name, _ in imports(m):
            target = _project_module(name)
            if target and target.startswith("numerics.laplacian"):
                assert target in rank and rank[target] < i, f"{m} imports {name} (not below it in the chain)"


def test_the_private_import_scan_sees_a_private_import():
    # a relative and an absolute private import (a broken scan would pass the test below vacuously);
    # a submodule and a dunder are not private names
    src = (
        "from .common import SEED_A, _hidden\n"
        "from theory.oracles.instances import _helper\n"
        "from . import common\n"
        "from .common import __doc__\n"
        "def f():\n    from ..rounding import _late\n"
    )
    found = private_imports("theory.registry.walks", src)
    assert found == [
        ("theory.registry.common", "_hidden"),
        ("theory.oracles.instances", "_helper"),
        ("theory.rounding", "_late"),
    ]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_imported_across_modules(module):
    bad = private_imports(module)
    assert not bad, f"{module} imports private names of other modules: {bad}"
