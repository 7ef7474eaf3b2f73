"""Degenerate inputs and inputs that used to die with a builtin exception (each was accepted with a
wrong or meaningless answer, or raised a generic error): typed errors naming the argument, and the
valid float32 input that was refused, accepted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from numerics import graphs, spectra
from numerics.errors import NotStochasticError, ParameterError, ShapeError
from numerics.laplacian import diagnose
from numerics.markov import stationary_info
from numerics.patterns.classify import classify_trajectory, measure_mode
from numerics.walk import ConnectionWalk

F64 = torch.float64


def _raises(err, arg, fn):
    with pytest.raises(err) as e:
        fn()
    assert type(e.value) is err and str(e.value).startswith(f"{arg}:"), str(e.value)
    return e.value


def walk_component(batch=(), n=4, d=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = torch.softmax(torch.randn(*batch, 2, n, n, generator=g, dtype=F64), -1)
    return ConnectionWalk.from_mha(A, torch.randn(2, d, d, generator=g, dtype=F64))


def test_an_index_on_an_unbatched_walk_is_refused_not_ignored():
    P = walk_component().walk_matrix
    _raises(ParameterError, "index", lambda: graphs.to_networkx(P, index=3))
    assert graphs.to_networkx(P).number_of_nodes() == 4


@pytest.mark.parametrize(
    "index, err", [(5, ParameterError), (-4, ParameterError), ("a", ParameterError), ((0, 1), ShapeError)]
)
def test_an_index_out_of_range_on_a_batched_walk_is_named(index, err):
    w = walk_component(batch=(3,))
    _raises(err, "index", lambda: graphs.to_networkx(w, index=index))
    _raises(err, "index", lambda: graphs.is_irreducible(w, index=index))
    if index != (0, 1):  # select takes leading indices: (0, 1) has one too many here as well
        _raises(err, "index", lambda: spectra.select(w, index))
    g = graphs.to_networkx(w, index=-3)  # in range from the end: element 0
    assert np.allclose(g[0][1]["weight"], float(w.walk_matrix[0, 0, 1]))


def test_a_float32_softmax_is_stochastic_to_float32_rounding():
    """Rows of a float32 softmax sum to 1 only to ~1e-7: the graph keeps P's precision and judges
    with its tolerance; a float64 P off by as much is still refused."""
    n = 300
    P = torch.softmax(3 * torch.randn(n, n, generator=torch.Generator().manual_seed(1)), -1)
    off = (P.double().sum(-1) - 1).abs().max().item()
    assert 1e-8 < off < 1e-5
    pi = graphs.stationary_distribution(P)
    Pd = P.double().numpy()
    Pd = Pd / Pd.sum(1, keepdims=True)
    assert np.abs(pi @ Pd - pi).max() < 1e-5  # the stationary distribution of P (float32 rounding)
    P64 = P.double()
    P64[0] *= 1 + 1e-6
    _raises(NotStochasticError, "walk", lambda: graphs.stationary_distribution(P64))


def test_classifying_one_sample_is_refused():
    t = torch.zeros(1, dtype=F64)
    X = torch.randn(1, 8, 2, dtype=F64)
    _raises(ShapeError, "states", lambda: classify_trajectory(t, X))
    _raises(ShapeError, "states", lambda: measure_mode(t, X, 1))


def test_an_aliased_wavenumber_is_refused():
    """On n tokens wavenumber k and k ± n are one mode; the velocity −n Im σ/(2πk) of an aliased k is
    not the fitted mode's."""
    t = torch.arange(12, dtype=F64) * 0.1
    X = torch.randn(12, 8, 2, generator=torch.Generator().manual_seed(0), dtype=F64)
    _raises(ParameterError, "k", lambda: measure_mode(t, X, 10**6))
    _raises(ParameterError, "k", lambda: measure_mode(t, X, 5))
    _raises(ParameterError, "k", lambda: measure_mode(t, X, -5))
    assert measure_mode(t, X, 4).k == 4 and measure_mode(t, X, -4).k == -4


def test_stationary_info_dtype_must_name_a_precision():
    P = walk_component().walk_matrix
    _raises(ParameterError, "dtype", lambda: stationary_info(P, dtype=torch.int64))
    _raises(ParameterError, "dtype", lambda: stationary_info(P, dtype="float32"))
    assert stationary_info(P, dtype=torch.float32).pi.shape == (4,)


def test_diagnose_with_a_massless_pi_is_refused_not_nan():
    w = walk_component()
    _raises(ParameterError, "pi", lambda: diagnose(w, pi=torch.zeros(4, dtype=F64)))


def test_perron_solve_rho_must_broadcast_with_p():
    from numerics.markov import perron_solve

    P = torch.full((2, 3, 3), 1 / 3, dtype=F64)
    _raises(ShapeError, "rho", lambda: perron_solve(P, torch.ones(3, dtype=F64)))
    pi, _ = perron_solve(P, torch.ones(2, dtype=F64))
    assert torch.allclose(pi, torch.full((2, 3), 1 / 3, dtype=F64), rtol=0, atol=1e-15)


def test_batch_shapes_that_do_not_broadcast_are_named():
    w = walk_component(batch=(3,))
    _raises(ShapeError, "X", lambda: w.apply(torch.randn(5, 4, 2, dtype=F64)))
    assert w.apply(torch.randn(2, 3, 4, 2, dtype=F64)).shape == (2, 3, 4, 2)  # broadcasting is fine
    A = torch.softmax(torch.randn(3, 2, 4, 4, dtype=F64), -1)
    _raises(ShapeError, "T", lambda: ConnectionWalk.from_mha(A, torch.randn(5, 2, 2, 2, dtype=F64)))
    B = torch.randn(3, 4, 4, 2, 2, dtype=F64)
    _raises(ShapeError, "P", lambda: ConnectionWalk.from_blocks(B, P=torch.full((5, 4, 4), 0.25, dtype=F64)))
    _raises(
        ShapeError,
        "O",
        lambda: ConnectionWalk.from_edges(
            torch.full((3, 4, 4), 0.25, dtype=F64), torch.randn(5, 4, 4, 2, 2, dtype=F64)
        ),
    )


# ------------------------------------------------------------------ allocations sized by an argument
@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: __import__("numerics.patterns.kernels", fromlist=["x"]).gaussian_kernel(10**10, 4.0, 1.5), "n"),
        (
            lambda: __import__("numerics.patterns.kernels", fromlist=["x"]).circulant(
                torch.full((4096,), 1 / 4096, dtype=F64)
            ),
            "kernels",
        ),
        (lambda: __import__("numerics.patterns.simulate", fromlist=["x"]).sinusoidal_pe(10**6, 10**3), "n"),
        (
            lambda: __import__("numerics.patterns.simulate", fromlist=["x"]).perturbed_homogeneous(
                10**5, 10**3, torch.zeros(10**3, dtype=F64), 0.1
            ),
            "n",
        ),
    ],
)
def test_allocations_sized_by_an_argument_go_through_the_budget(call, arg, monkeypatch):
    """Each would allocate well over 100 MiB; with a 64 MiB budget each is refused up front, naming the
    argument that sized it (the allocator is never asked)."""
    from numerics.errors import MemoryBudgetError

    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "64M")
    e = _raises(MemoryBudgetError, arg, call)
    assert "memory budget of 0.0625 GiB" in str(e)


def test_small_allocations_are_unaffected_by_a_small_budget(monkeypatch):
    from numerics.patterns.kernels import circulant, gaussian_kernel
    from numerics.patterns.simulate import perturbed_homogeneous, sinusoidal_pe

    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "64M")
    a = gaussian_kernel(64, 4.0, 1.5)
    assert circulant(a).shape == (64, 64) and sinusoidal_pe(64, 8).shape == (64, 8)
    assert perturbed_homogeneous(8, 2, torch.zeros(2, dtype=F64), 0.1, batch=(3,)).shape == (3, 8, 2)


@pytest.mark.parametrize("raw", ["nan", "inf", "-5G", "0", "abc", "G", "1e400"])
def test_the_memory_budget_itself_is_validated(raw, monkeypatch):
    from numerics.contracts.validate import memory_budget

    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", raw)
    _raises(ParameterError, "CONNWALK_MEMORY_BUDGET", memory_budget)


@pytest.mark.parametrize("raw, value", [("8G", 8 << 30), ("8GiB", 8 << 30), ("512M", 512 << 20), ("1000", 1000)])
def test_the_memory_budget_accepts_byte_counts(raw, value, monkeypatch):
    from numerics.contracts.validate import memory_budget

    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", raw)
    assert memory_budget() == value


@pytest.mark.parametrize("batch", [3, (2, -1), (2.5,), "ab"])
def test_perturbed_homogeneous_batch_is_a_tuple_of_sizes(batch):
    from numerics.patterns.simulate import perturbed_homogeneous

    _raises(ParameterError, "batch", lambda: perturbed_homogeneous(8, 2, torch.zeros(2, dtype=F64), 0.1, batch=batch))


# ------------------------------------------------------------------ loader and corpus arguments
@pytest.mark.parametrize(
    "kw, arg",
    [
        ({"device": "bogus"}, "device"),
        ({"device": 3}, "device"),
        ({"seed": -1}, "seed"),
        ({"seed": "a"}, "seed"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_loader_arguments_of_the_wrong_type_or_sign(kw, arg):
    from numerics.models import registry

    _raises(ParameterError, arg, lambda: registry.load("tiny:bert", **kw))


@pytest.mark.parametrize(
    "kw, arg", [({"keep": 3}, "keep"), ({"keep": [1.5]}, "keep"), ({"out_device": "bogus"}, "out_device")]
)
def test_capture_arguments_of_the_wrong_type(kw, arg):
    from numerics.models import registry

    h = registry.load("tiny:bert", device="cpu")
    ids = torch.randint(0, 50, (1, 8), generator=torch.Generator().manual_seed(0))
    _raises(ParameterError, arg, lambda: next(iter(h.layers(ids, **kw))))
    assert next(iter(h.layers(ids, keep={1}))).layer == 1


@pytest.mark.parametrize("seed", [-1, "a", 1.5, True])
def test_sample_prompts_seed_of_the_wrong_type_or_sign(seed):
    from numerics.models import registry
    from numerics.models.corpus import sample_prompts

    tok = registry.load("minilm", device="cpu").tokenizer
    _raises(ParameterError, "seed", lambda: sample_prompts(tok, 2, 16, seed=seed))
    _raises(ShapeError, "length", lambda: sample_prompts(tok, 2, -3))
