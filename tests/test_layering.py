"""The package layering, read from the source (``ast``, no imports executed).

* The top-level packages stack one way: ``theory`` → ``numerics`` → ``paper_checks`` → ``connwalk`` (the
  command) → ``benchmarks`` (each imports only what is left of it). ``theory`` imports neither torch nor
  the code it judges (not even inside a function).
* ``numerics`` is rooms by concern (:data:`ROOMS`), bottom to top: the base (errors, threshold and
  decision), ``contracts/``, the walk core, ``laplacian/``, ``patterns/`` (Seed B), ``models/``,
  ``conformance/``, ``census/``, the test tooling, the documented former paths. Inside a room the
  modules form a one-way chain: a module imports only rooms below its own and the modules before it in
  its room's chain (a package's ``__init__``, its public face, last).
* No module of ``numerics`` but :mod:`numerics.tolerance` reads :mod:`theory.rounding`: a check asks one
  module for its threshold and its verdict.
* The import graph of the three packages has no cycle, counting the imports inside functions (a
  deferred import only hides a cycle from the interpreter, not from the reader).
* No module imports another module's private name (``from x import _name``): what two modules share
  is public in the lower one.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
#: top-level packages, bottom to top: each may import only those before it
PACKAGES = ("theory", "numerics", "paper_checks", "connwalk", "benchmarks")
#: modules over this many lines are split (the project's limit)
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: the Laplacian package's chain, bottom to top
LAPLACIAN_CHAIN = (
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
)
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


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(module: str, source: str | None = None) -> list[tuple[str, str]]:
    """``(source module, name)`` for every ``from source import _name`` of ``module`` (its file, or
    ``source`` in its place) whose source is another module of the project's packages (dunder names and
    submodules are not private names), and ``(module, "")`` for every import of another project module
    that is itself private (``numerics._x``, however it is imported)."""
    text = MODULES[module].read_text() if source is None else source
    tree = ast.parse(text, filename=str(MODULES[module]))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                src = _project_module(a.name)
                if src and src != module and _private(src.rpartition(".")[2]):
                    out.append((src, ""))
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            src = _project_module(base)
            if src and src != module and _private(src.rpartition(".")[2]):
                out.append((src, ""))
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in MODULES:
                    if sub != module and _private(a.name):
                        out.append((sub, ""))
                elif src and src != module and _private(a.name):
                    out.append((src, a.name))
    return out


def _project_module(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def targets(module: str) -> set[str]:
    """The project modules ``module`` imports (function-level imports counted): for ``from a import b``
    the module ``a.b`` when it is one, else ``a`` (a package reached only to import its submodule is
    not imported for its face)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {_project_module(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else _project_module(base))
    return {m for m in out if m and m != module}


def test_the_scan_sees_the_packages():
    assert {"numerics.walk", "theory.registry", "connwalk", "connwalk.patterns", "benchmarks.walks"} <= set(MODULES)
    assert ("torch", True) in imports("numerics.walk")
    assert any(n.startswith("connwalk.patterns") for n, _ in imports("connwalk"))
    # ``from numerics.models import cache`` reaches the submodule, not the package's face
    assert "numerics.models.cache" in targets("numerics.models.registry")
    assert "numerics.models" not in targets("numerics.models.registry")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("theory")))
def test_theory_imports_neither_torch_nor_the_code_it_judges(module):
    bad = sorted({n for n, _ in imports(module) if n.split(".")[0] in ("torch", *PACKAGES[1:])})
    assert not bad, f"{module} imports {bad}"


#: entry points at former command paths README documents: ``python -m paper_checks.cli`` runs the
#: command (``connwalk``), above its package. The one upward import the stack allows, and only in a
#: module nothing imports for its code: its body is exactly ``import sys``, ``from <command> import
#: main``, ``sys.exit(main())``, and no module of the packages imports it (tests below).
ENTRY_POINTS = {"paper_checks.cli.__main__": "connwalk"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_packages_import_only_those_below_them(module):
    rank = PACKAGES.index(module.split(".")[0])
    command = ENTRY_POINTS.get(module)
    allowed = {command, f"{command}.main"} if command else set()
    bad = sorted({n for n, _ in imports(module) if n.split(".")[0] in PACKAGES[rank + 1 :]} - allowed)
    assert not bad, f"{module} imports {bad}, above its package"


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_an_entry_point_only_runs_its_command_and_nothing_imports_it(entry):
    tree = ast.parse(MODULES[entry].read_text())
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert [ast.unparse(n) for n in body] == [
        "import sys",
        f"from {ENTRY_POINTS[entry]} import main",
        "sys.exit(main())",
    ]
    importers = sorted(m for m in MODULES if any(_project_module(n) == entry for n, _ in imports(m)))
    assert not importers, f"{importers} import the entry point {entry}"


#: numerics' rooms by concern, bottom to top, each a one-way chain (a package's face last)
ROOMS: dict[str, list[str]] = {
    "base": [
        "numerics.errors",
        "numerics.vision_env",
        "numerics",
        "numerics.tolerance",
        "numerics.threads",
        "numerics.device",
    ],
    "contracts": [
        "numerics.contracts.validate",
        "numerics.contracts.kinds",
        "numerics.contracts.declarations",
        "numerics.contracts",
    ],
    "walk core": ["numerics.walk", "numerics.attention", "numerics.markov", "numerics.graphs", "numerics.spectra"],
    "laplacian": [
        *(f"numerics.laplacian.{m}" for m in LAPLACIAN_CHAIN),
        "numerics.laplacian",
    ],
    "patterns": [
        "numerics.patterns.kernels",
        "numerics.patterns.stacks",
        "numerics.patterns.symbols",
        "numerics.patterns.dynamics",
        "numerics.patterns.simulate_batched",
        "numerics.patterns.rk4_check",
        "numerics.patterns.simulate",
        "numerics.patterns.classify",
        "numerics.patterns",
    ],
    "models": [
        "numerics.models",  # its face is its docstring: the modules are imported one by one (names without torch)
        "numerics.models.names",
        "numerics.models.corpus",
        "numerics.models.families",
        "numerics.models.base",
        "numerics.models.tiny",
        "numerics.models.files",
        "numerics.models.adapters",
        "numerics.models.cache",
        "numerics.models.registry",
    ],
    "conformance": [
        "numerics.conformance.protocol",
        "numerics.conformance.hf_returned",
        "numerics.conformance.hf_inputs",
        "numerics.conformance.hf_capture",
        "numerics.conformance.torch_capture",
        "numerics.conformance.torch_adapter",
        "numerics.conformance.hf_torch",
        "numerics.conformance.hf",
        "numerics.conformance.checks",
        "numerics.conformance.adapters",
        "numerics.conformance.observed",
        "numerics.conformance.bounds",
        "numerics.conformance.kit",
        "numerics.conformance",
    ],
    "census": [
        "numerics.census.shrink",
        "numerics.census.config",
        "numerics.census.report",
        "numerics.census.pool",
        "numerics.census.judge",
        "numerics.census.run",
        "numerics.census.timm_report",
        "numerics.census.timm",
        "numerics.census",
    ],
    "tooling": ["numerics.strategies", "numerics.pytest_plugin"],
    "documented paths": [
        "numerics.dynamics",
        "numerics.simulate",
        "numerics.classify",
        "numerics.conformance_hf",
        "numerics.conformance_hf_capture",
    ],
}
#: the former module paths README documents, kept as re-export files: target of each
DOCUMENTED_PATHS = {
    "numerics.dynamics": "numerics.patterns.dynamics",
    "numerics.simulate": "numerics.patterns.simulate",
    "numerics.classify": "numerics.patterns.classify",
    "numerics.conformance_hf": "numerics.conformance.hf",
    "numerics.conformance_hf_capture": "numerics.conformance.hf_capture",
}
POSITION = {m: (r, i) for r, room in enumerate(ROOMS.values()) for i, m in enumerate(room)}


def test_every_numerics_module_is_in_one_room():
    listed = [m for room in ROOMS.values() for m in room]
    assert len(listed) == len(set(listed))
    assert set(listed) == {m for m in MODULES if m.split(".")[0] == "numerics"}


def upward(module: str, imported) -> list[str]:
    """The modules of ``imported`` that are not below ``module`` in :data:`ROOMS`."""
    return sorted(t for t in imported if t in POSITION and not POSITION[t] < POSITION[module])


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] == "numerics"))
def test_numerics_rooms_are_one_way(module):
    bad = upward(module, targets(module))
    assert not bad, f"{module} {POSITION[module]} imports {bad} (not below it in ROOMS)"


def test_the_room_check_sees_an_upward_import():
    # an arrow back up a room's chain, one up to a higher room, one to a package's own face: all caught
    assert upward("numerics.patterns.symbols", {"numerics.patterns.simulate"}) == ["numerics.patterns.simulate"]
    assert upward("numerics.walk", {"numerics.laplacian.result", "numerics.errors"}) == ["numerics.laplacian.result"]
    assert upward("numerics.conformance.kit", {"numerics.conformance"}) == ["numerics.conformance"]
    assert upward("numerics.census.run", {"numerics.conformance", "numerics.walk", "numerics.contracts.kinds"}) == []


@pytest.mark.parametrize("old", sorted(DOCUMENTED_PATHS))
def test_documented_former_paths_re_export_their_module(old):
    """Each former path README documents holds no code of its own: ``from <module> import *`` and the
    module's ``__all__``, so it serves exactly the module's public names, the very same objects."""
    tree = ast.parse(MODULES[old].read_text())
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert [(type(n), getattr(n, "module", None), [a.name for a in n.names]) for n in body] == [
        (ast.ImportFrom, DOCUMENTED_PATHS[old], ["*"]),
        (ast.ImportFrom, DOCUMENTED_PATHS[old], ["__all__"]),
    ]
    shim, target = importlib.import_module(old), importlib.import_module(DOCUMENTED_PATHS[old])
    assert shim.__all__ == target.__all__ and target.__all__
    assert all(getattr(shim, n) is getattr(target, n) for n in target.__all__)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] == "numerics"))
def test_only_the_tolerance_module_reads_the_decision_rule(module):
    reads = sorted({n for n, _ in imports(module) if n == "theory.rounding" or n.startswith("theory.rounding.")})
    assert module == "numerics.tolerance" or not reads, f"{module} imports {reads}: ask numerics.tolerance"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_over_the_line_limit(module):
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines (limit {MAX_LINES})"


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
    chain = LAPLACIAN_CHAIN
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


def test_the_private_import_scan_sees_a_private_module(monkeypatch):
    # a private module imported three ways, its public name included, is one private import each
    monkeypatch.setitem(MODULES, "numerics._hidden", MODULES["numerics.threads"])
    src = "from numerics._hidden import public\nimport numerics._hidden\nfrom numerics import _hidden\n"
    assert private_imports("numerics.walk", src) == [("numerics._hidden", "")] * 3


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_imported_across_modules(module):
    bad = private_imports(module)
    assert not bad, f"{module} imports private names of other modules: {bad}"
