"""Meta-tests: every public function of README's toolkit map declares its arguments
(numerics.contracts.declarations.REGISTRY), and every declaration has a valid example for the bad-input matrix."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from numerics.contracts.declarations import REGISTRY, Passthrough
from tests.contracts.examples import EXAMPLES

README = Path(__file__).resolve().parents[2] / "README.md"

#: modules of the toolkit map that are not argument-taking entry points, with the reason
MODULE_EXEMPT = {
    "numerics.strategies": "Hypothesis strategies for tests (they take draw functions, not user data)",
    "numerics.models": "model loading: names and files are validated by numerics.models.registry and, for the "
    "CLI, by paper_checks.main_job.check_model_name",
    "numerics.pytest_plugin": "pytest hooks, a fixture and profile registration, called by pytest itself; a bad "
    "--device / --theorem is a pytest.UsageError (tests/test_pytest_plugin.py)",
    "numerics.conformance": "takes any user nn.Module (an unknown one is NotAttentionError naming `module`, a "
    "malformed extraction a ShapeError naming the field) and checks its integer options itself (ParameterError "
    "naming them); the bad-input cases are tests/numerics/test_conformance.py; its face also carries the adapters "
    "the kit picks for stand-alone Hugging Face attention modules (an unsupported class is "
    "UnsupportedArchitectureError naming `module`) and the attention-interface capture, which takes a model the kit "
    "already accepted and turns whatever it cannot read into a CaptureError naming `module` (stale or missing "
    "records, shapes, kernels that are not softmax: tests/numerics/test_census_capture.py)",
    "numerics.census": "runs over the installed transformers' own classes, no user data; run_census checks its own "
    "arguments (ParameterError naming `model_types`, `classes`, `jobs`, `timeout` …: "
    "tests/numerics/test_census_operations.py) and connwalk.census.check_options the command's options; every "
    "failure of a class becomes that class's declined row with the reason, a class past its CPU budget a "
    "timed-out row",
    "numerics.contracts": "the declarations themselves: their arguments are the declaring module's source, checked "
    "when it is imported; the bad-input matrix (tests/contracts/test_matrix.py) exercises every kind",
    "numerics.tolerance": "the threshold and decision every check calls with the residual it computed itself (no "
    "user data); tests/numerics/test_tolerance.py checks it against the literal rule in exact arithmetic",
}

#: public names that are results, constants or type definitions, not entry points
NAME_EXEMPT = {
    # result / data types (constructed by the library, no user input)
    "numerics.walk.ConstantTransport",
    "numerics.laplacian.Check",
    "numerics.laplacian.LaplacianDiagnostics",
    "numerics.laplacian.StationaryInfo",
    "numerics.markov.StationaryInfo",
    "numerics.graphs.Reversibility",
    "numerics.graphs.Holonomy",
    "numerics.graphs.Flatness",
    "numerics.graphs.TriangleIdentity",
    "numerics.spectra.SpectrumResult",
    "numerics.patterns.PatternPrediction",
    "numerics.patterns.TransientGrowth",
    "numerics.patterns.StackSelection",
    "numerics.patterns.Trajectory",
    "numerics.patterns.SelectionWarning",
    "numerics.patterns.ModeFit",
    "numerics.patterns.PatternObservation",
    # a frozen dataclass of thresholds with defaults (fields are numbers read by the classifier)
    "numerics.patterns.Thresholds",
    # alias of holonomies (same function object, declared under that name)
    "numerics.graphs.is_flat",
    # the contract-free forms of MHADynamics' declared mha / velocity / sphere_velocity (the same functions
    # unwrapped) for the simulators' loops, and the state check those loops run once before them
    "numerics.patterns.MHADynamics.mha_unchecked",
    "numerics.patterns.MHADynamics.velocity_unchecked",
    "numerics.patterns.MHADynamics.sphere_velocity_unchecked",
    "numerics.patterns.MHADynamics.check_state",
}


#: classes whose raw constructor is internal (documented: build with the named constructors)
CTOR_EXEMPT = {
    "numerics.walk.ConnectionWalk": "storage constructor; build with from_sha/from_mha/from_factors/"
    "from_edges/from_blocks (each declared)"
}


def toolkit_modules() -> list[str]:
    text = README.read_text(encoding="utf-8")
    table = text.split("## Toolkit map", 1)[1].split("\n## ", 1)[0]
    mods = sorted(set(re.findall(r"`(numerics\.[a-z_]+)`", table)))
    assert len(mods) >= 8, mods  # the map names walk, attention, laplacian, graphs, spectra, models, patterns, ...
    return mods


def public_entry_points() -> list[str]:
    names = []
    for mod_name in toolkit_modules():
        if mod_name in MODULE_EXEMPT:
            continue
        mod = importlib.import_module(mod_name)
        for attr in getattr(mod, "__all__", []):
            obj = getattr(mod, attr)
            qual = f"{mod_name}.{attr}"
            if qual in NAME_EXEMPT or not callable(obj):
                continue
            if inspect.isclass(obj):
                if ("__init__" in vars(obj) or "__post_init__" in vars(obj)) and qual not in CTOR_EXEMPT:
                    names.append(qual)
                for m, f in vars(obj).items():
                    f = getattr(f, "__func__", f)
                    if m.startswith("_") or not inspect.isfunction(f) or f"{qual}.{m}" in NAME_EXEMPT:
                        continue
                    params = [p for p in inspect.signature(f).parameters if p not in ("self", "cls")]
                    if params or m in ("to_dense", "blocks", "edge_transports", "gates", "nearest_kronecker"):
                        names.append(f"{qual}.{m}")
            else:
                names.append(qual)
    return names


def _resolve(qual: str):
    """The object ``qual`` names: the longest importable module prefix, then attributes."""
    parts = qual.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p, None)
        return obj
    return None


def _declared(qual: str) -> bool:
    if qual in REGISTRY or f"{qual}.__init__" in REGISTRY:
        return True
    # a re-export at a package's face or an old home (numerics.patterns.predict_pattern is
    # numerics.patterns.symbols.predict_pattern): the very same object, so it carries the declaration of its home
    obj = _resolve(qual)
    for o in (obj, getattr(obj, "__init__", None), getattr(obj, "__post_init__", None)):
        c = getattr(getattr(o, "__func__", o), "__contract__", None)
        if c is not None and REGISTRY.get(c.name) is c:
            return True
    return False


def test_every_public_entry_point_of_the_toolkit_map_has_a_declaration():
    missing = [q for q in public_entry_points() if not _declared(q)]
    assert not missing, f"public entry points without a contract declaration: {missing}"


def test_the_meta_test_sees_the_entry_points_it_should():
    names = set(public_entry_points())
    # a sample across modules: if the enumeration broke, this fails instead of passing vacuously
    for q in (
        "numerics.walk.ConnectionWalk.apply",
        "numerics.walk.ConnectionWalk.from_mha",
        "numerics.laplacian.diagnose",
        "numerics.graphs.is_reversible",
        "numerics.spectra.extreme_eigenvalues",
        "numerics.patterns.predict_pattern",
        "numerics.patterns.simulate_flow",
        "numerics.patterns.classify_trajectory",
        "numerics.attention.AttentionWeights",
        "numerics.patterns.MHADynamics",
        "numerics.patterns.MHADynamics.jacobian",
    ):
        assert q in names, q
    assert len(names) >= 70


def test_every_declared_parameter_exists_and_every_parameter_is_declared():
    for qual, c in REGISTRY.items():
        if not qual.startswith("numerics."):
            continue
        if qual == "numerics.attention.AttentionWeights":
            import dataclasses

            from numerics.attention import AttentionWeights

            assert set(c.specs) == {f.name for f in dataclasses.fields(AttentionWeights)}
            continue
        mod_name, _, rest = qual.partition(".")
        obj = importlib.import_module("numerics." + rest.split(".")[0])
        for part in rest.split(".")[1:]:
            obj = getattr(obj, part)
        f = getattr(obj, "__wrapped__", obj)
        f = getattr(f, "__func__", f)
        params = [
            p for p in inspect.signature(f).parameters if p != "cls" and not (p == "self" and qual.endswith("__init__"))
        ]
        undeclared = [p for p in params if p not in c.specs]
        assert not undeclared, f"{qual}: parameters without a declared kind: {undeclared}"


def test_every_declaration_has_a_valid_example_for_the_matrix():
    numeric = [q.removesuffix(".__init__") for q in REGISTRY if q.startswith("numerics.")]
    missing = [q for q in numeric if q not in EXAMPLES]
    assert not missing, f"declared entry points without an example in tests/contracts/examples.py: {missing}"


@pytest.mark.parametrize("qual", sorted(EXAMPLES))
def test_each_example_is_valid(qual):
    call, make = EXAMPLES[qual]
    call(**make())  # a valid call must not raise


def test_passthrough_arguments_are_few_and_named():
    """Arguments accepted as given (devices, generators, batch indices, callables) are listed here: a new
    one is a deliberate, reviewed acceptance."""
    got = sorted(f"{q}:{a}" for q, c in REGISTRY.items() for a, s in c.specs.items() if isinstance(s, Passthrough))
    allowed = {"device", "generator", "index", "batch", "counter", "where", "window", "content", "dtype", "self"}
    assert all(x.rsplit(":", 1)[1] in allowed for x in got), got
