"""The semantic bad inputs of issue 11 that a per-argument class cannot express (each was a silent
NaN or a wrong answer before): refused with a typed error naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from numerics import graphs, spectra
from numerics.attention import AttentionWeights, attention_probs
from numerics.contracts.validate import check_memory, memory_budget
from numerics.errors import (
    MemoryBudgetError,
    NonFiniteError,
    NotStochasticError,
    ParameterError,
    UndefinedError,
)
from numerics.patterns import symbols as patterns
from numerics.patterns.simulate import MHADynamics
from numerics.walk import ConnectionWalk
from tests.contracts.examples import rev_walk, rnd, stoch, sym_stoch, transports, weights
from tests.helpers import naive_walk_apply

F64 = torch.float64


def _raises(err, arg, fn):
    with pytest.raises(err) as e:
        fn()
    assert str(e.value).startswith(f"{arg}:"), str(e.value)
    return e.value


def test_every_key_masked_is_refused_not_nan():
    X, w = rnd(4, 3), weights()
    _raises(
        ParameterError,
        "key_padding_mask",
        lambda: attention_probs(X, w, key_padding_mask=torch.ones(4, dtype=torch.bool)),
    )
    bias = torch.zeros(2, 4, 4, dtype=F64)
    bias[1, 2] = -math.inf
    _raises(ParameterError, "attn_bias", lambda: attention_probs(X, w, attn_bias=bias))
    # a partly masked row is fine and still stochastic
    A = attention_probs(X, w, key_padding_mask=torch.tensor([False, True, True, False]))
    assert torch.allclose(A.sum(-1), torch.ones(2, 4, dtype=F64), atol=1e-15)
    assert bool((A[..., 1:3] == 0).all())


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_nan_or_plus_inf_bias_and_nan_scale_are_refused(value):
    bias = torch.zeros(2, 4, 4, dtype=F64)
    bias[0, 1, 2] = value
    _raises(NonFiniteError, "attn_bias", lambda: attention_probs(rnd(4, 3), weights(), attn_bias=bias))
    w = weights()
    _raises(ParameterError, "scale", lambda: AttentionWeights(w.W_Q, w.W_K, w.W_V, w.W_O, n_heads=2, scale=math.nan))


def test_symmetric_path_refuses_a_pi_that_is_not_stationary():
    """Forcing eigsh with a π that does not symmetrise Δ returned eigenvalues of another operator."""
    w = ConnectionWalk.from_sha(stoch(5, seed=3), torch.eye(2, dtype=F64))  # not reversible
    pi = torch.full((5,), 0.2, dtype=F64)
    _raises(UndefinedError, "pi", lambda: spectra.extreme_eigenvalues(w, k=2, pi=pi, symmetric=True))
    # with the true π of a reversible walk the forced path agrees with the dense reference
    rw = ConnectionWalk.from_sha(sym_stoch(), torch.eye(3, dtype=F64))  # reversible, symmetric transport
    got = spectra.extreme_eigenvalues(rw, k=2, which="LA", pi=torch.full((4,), 0.25, dtype=F64), symmetric=True)
    dense = np.sort(spectra.dense_eigenvalues(rw).real.numpy())
    assert abs(got.eigenvalues.max() - dense.max()) <= 1e-10


def test_graph_stationary_distribution_needs_a_stochastic_walk():
    P = stoch(4) * torch.tensor([1.0, 1.0, 1.5, 1.0], dtype=F64)[:, None]
    _raises(NotStochasticError, "walk", lambda: graphs.stationary_distribution(P))
    pi = graphs.stationary_distribution(sym_stoch())
    assert np.allclose(pi, 0.25, atol=1e-12)  # doubly stochastic: uniform


def test_constant_transport_rtol_nan_and_measure_mode_k_non_integer():
    from numerics.patterns.classify import measure_mode
    from tests.contracts.examples import mha_walk, traj

    _raises(ParameterError, "rtol", lambda: mha_walk().constant_transport(rtol=math.nan))
    t, X = traj()
    _raises(ParameterError, "k", lambda: measure_mode(t, X, 1.5))
    _raises(NonFiniteError, "times", lambda: measure_mode(torch.full_like(t, math.nan), X, 1))


def test_walk_to_an_integer_dtype_is_refused():
    from numerics.errors import DTypeError

    _raises(DTypeError, "dtype", lambda: rev_walk().to(dtype=torch.int64))
    assert rev_walk().to(dtype=torch.float32).dtype == torch.float32


def test_all_minus_inf_bias_rows_are_refused():
    b = torch.zeros(2, 8, dtype=F64)
    b[1] = -math.inf
    _raises(ParameterError, "bias", lambda: patterns.kernel_from_bias(b))
    pb = torch.zeros(2, 8, 8, dtype=F64)
    pb[0, 3] = -math.inf
    _raises(ParameterError, "pos_bias", lambda: MHADynamics(transports(), pos_bias=pb))


def test_lists_keep_float64_and_match_the_naive_reference():
    A, T = stoch(H_=2), rnd(2, 3, 3)
    X = rnd(4, 3, seed=4)
    w = ConnectionWalk.from_mha(A.tolist(), T.tolist())
    assert w.dtype == F64
    Y = w.apply(X.tolist())
    assert Y.dtype == F64
    ref = naive_walk_apply(A, T, X)
    assert torch.allclose(Y, ref, rtol=0, atol=1e-14)
    with pytest.raises(Exception) as e:
        ConnectionWalk.from_mha([[[True, False], [False, True]]], T[:1].tolist())
    assert str(e.value).startswith("A:")


def test_heads_zero_is_refused():
    from numerics.errors import ShapeError

    _raises(
        ShapeError,
        "A",
        lambda: ConnectionWalk.from_mha(torch.zeros(0, 3, 3, dtype=F64), torch.zeros(0, 2, 2, dtype=F64)),
    )


def test_memory_budget_env_and_message(monkeypatch):
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "2K")
    assert memory_budget() == 2048
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "1.5M")
    assert memory_budget() == int(1.5 * 2**20)
    e = _raises(MemoryBudgetError, "walk", lambda: check_memory("walk", 2**21, "the thing", "the factored way"))
    assert "the factored way" in str(e) and "the thing" in str(e)
    check_memory("walk", 2**20, "the thing", "x")  # within the budget: no error
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "lots")
    _raises(ParameterError, "CONNWALK_MEMORY_BUDGET", memory_budget)


def test_large_walk_dense_paths_refuse_without_allocating(monkeypatch):
    """n = 512, d = 64 (8.6 GB of blocks): refused by the estimate under a 1 GiB budget, factored apply works."""
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "1G")
    n, d = 512, 64
    A = torch.full((1, n, n), 1.0 / n, dtype=F64)
    w = ConnectionWalk.from_factors(A, torch.zeros(1, d, 1, dtype=F64), torch.zeros(1, 1, d, dtype=F64))
    for f in (
        w.to_dense,
        w.blocks,
        w.edge_transports,
        lambda: graphs.to_networkx(w),
        lambda: graphs.is_reversible(w),
        lambda: spectra.dense_eigenvalues(w),
    ):
        _raises(MemoryBudgetError, "walk", f)
    assert w.apply(torch.ones(n, d, dtype=F64)).shape == (n, d)
