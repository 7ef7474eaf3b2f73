"""Bad input: every public entry point of the walk core raises a typed error naming the argument."""

from __future__ import annotations

import pytest
import torch

from numerics.attention import AttentionWeights, attention_probs
from numerics.errors import (
    ConnwalkError,
    DeviceMismatchError,
    DTypeError,
    NegativeWeightError,
    NonFiniteError,
    NotStochasticError,
    OffSupportError,
    ParameterError,
    ShapeError,
)
from numerics.walk import ConnectionWalk

f64 = torch.float64
A2 = torch.tensor([[0.5, 0.5], [0.25, 0.75]], dtype=f64)
T2 = torch.eye(3, dtype=f64)


@pytest.mark.parametrize(
    "call, err, arg",
    [
        (lambda: ConnectionWalk.from_sha(torch.ones(3, dtype=f64), T2), ShapeError, "A"),
        (lambda: ConnectionWalk.from_sha(torch.ones(2, 3, dtype=f64), T2), ShapeError, "A"),
        (lambda: ConnectionWalk.from_sha(A2, torch.ones(3, 2, dtype=f64)), ShapeError, "T"),
        (lambda: ConnectionWalk.from_sha(A2, torch.ones(2, 3, 3, dtype=f64)), ShapeError, "T"),
        (lambda: ConnectionWalk.from_mha(A2, T2), ShapeError, "A"),
        (lambda: ConnectionWalk.from_mha(A2.expand(2, 2, 2), T2.expand(3, 3, 3)), ShapeError, "T"),
        (lambda: ConnectionWalk.from_sha(A2 * float("nan"), T2), NonFiniteError, "A"),
        (lambda: ConnectionWalk.from_sha(A2, T2 * float("inf")), NonFiniteError, "T"),
        (lambda: ConnectionWalk.from_sha(A2 - 0.6, T2), NegativeWeightError, "A"),
        (lambda: ConnectionWalk.from_sha(A2 * 2, T2, stochastic=True), NotStochasticError, "A"),
        # mixed precision: the lower-precision argument is named (promoting it would be a silent cast)
        (lambda: ConnectionWalk.from_sha(A2.float(), T2), DTypeError, "A"),
        (lambda: ConnectionWalk.from_sha(torch.ones(2, 2, dtype=torch.int64), T2), DTypeError, "A"),
        (lambda: ConnectionWalk.from_sha(A2.to(torch.complex128), T2), DTypeError, "A"),
        (lambda: ConnectionWalk.from_sha(A2, T2.to("meta")), DeviceMismatchError, "T"),
        (lambda: ConnectionWalk.from_sha(A2, T2).apply(torch.ones(2, 2, dtype=f64)), ShapeError, "X"),
        (lambda: ConnectionWalk.from_sha(A2, T2).apply(torch.ones(3, 3, dtype=f64)), ShapeError, "X"),
        (lambda: ConnectionWalk.from_sha(A2, T2).apply(torch.ones(2, 3, dtype=torch.float32)), DTypeError, "X"),
        (
            lambda: ConnectionWalk.from_factors(
                A2.expand(2, 2, 2), torch.ones(2, 3, 1, dtype=f64), torch.ones(2, 2, 3, dtype=f64)
            ),
            ShapeError,
            "W_O",
        ),
        (
            lambda: ConnectionWalk.from_factors(
                A2.expand(2, 2, 2), torch.ones(1, 3, 1, dtype=f64), torch.ones(2, 1, 3, dtype=f64)
            ),
            ShapeError,
            "W_O",
        ),
        (lambda: ConnectionWalk.from_edges(A2, torch.ones(3, 3, 2, 2, dtype=f64)), ShapeError, "O"),
        (lambda: ConnectionWalk.from_edges(A2, torch.ones(2, 2, 2, 3, dtype=f64)), ShapeError, "O"),
        (lambda: ConnectionWalk.from_sha(A2, T2).edge_transport(2, 0), ParameterError, "i"),
        (
            lambda: ConnectionWalk.from_sha(torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=f64), T2).edge_transport(0, 1),
            OffSupportError,
            "(i, j)",
        ),
        (
            lambda: AttentionWeights(
                W_Q=torch.ones(4, 4), W_K=torch.ones(4, 4), W_V=torch.ones(4, 4), W_O=torch.ones(4, 4), n_heads=3
            ),
            ShapeError,
            "W_Q",
        ),
        (
            lambda: AttentionWeights(
                W_Q=torch.ones(4, 4), W_K=torch.ones(2, 4), W_V=torch.ones(4, 4), W_O=torch.ones(4, 4), n_heads=2
            ),
            ShapeError,
            "W_K",
        ),
        (
            lambda: AttentionWeights(
                W_Q=torch.ones(4, 4),
                W_K=torch.ones(4, 4),
                W_V=torch.ones(4, 4),
                W_O=torch.ones(4, 4, dtype=f64),
                n_heads=2,
            ),
            DTypeError,
            "W_O",
        ),
        (
            lambda: AttentionWeights(
                W_Q=torch.ones(4, 4),
                W_K=torch.ones(4, 4),
                W_V=torch.ones(4, 4),
                W_O=torch.ones(4, 4),
                n_heads=2,
                b_V=torch.ones(3),
            ),
            ShapeError,
            "b_V",
        ),
        (
            lambda: attention_probs(
                torch.ones(3, 5),
                AttentionWeights(
                    W_Q=torch.ones(4, 4), W_K=torch.ones(4, 4), W_V=torch.ones(4, 4), W_O=torch.ones(4, 4), n_heads=2
                ),
            ),
            ShapeError,
            "X",
        ),
    ],
)
def test_bad_input_raises_typed_error_naming_argument(call, err, arg):
    with pytest.raises(err) as exc:
        call()
    assert isinstance(exc.value, ConnwalkError)
    assert exc.value.argument == arg
    assert str(exc.value).startswith(f"{arg}:")


def test_errors_are_also_builtin_types():
    with pytest.raises(ValueError):
        ConnectionWalk.from_sha(A2 - 1, T2)
    with pytest.raises(TypeError):
        ConnectionWalk.from_sha(A2.float(), T2)


def test_nothing_is_silently_coerced():
    """float32 attention with float64 transports is refused, not promoted."""
    with pytest.raises(DTypeError, match="cast explicitly"):
        ConnectionWalk.from_mha(A2.float().expand(1, 2, 2), T2[None])


def test_n_equals_one_is_allowed():
    w = ConnectionWalk.from_sha(torch.ones(1, 1, dtype=f64), 2 * T2)
    assert torch.equal(w.apply(torch.ones(1, 3, dtype=f64)), 2 * torch.ones(1, 3, dtype=f64))
