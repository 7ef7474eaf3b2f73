"""Bad input: every public entry point of the walk core raises a typed error naming the argument;
the whole messages, for every check the constructors run; the unchecked matvec's own checks of X."""

from __future__ import annotations

import numpy as np
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
from tests.helpers import assert_bad_input, raises_named

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


# ------------------------------------------------------------------------------------- whole messages
# README: a bad argument raises a typed error whose message starts with the argument's name and
# states what was expected. Whole messages are pinned here for every check the constructors run.
A22 = torch.tensor([[0.5, 0.5], [0.25, 0.75]], dtype=f64)
I3 = torch.eye(3, dtype=f64)
AH = A22.expand(2, 2, 2)
WO, WV = torch.ones(2, 3, 1, dtype=f64), torch.ones(2, 1, 3, dtype=f64)
NAN = float("nan")
META = torch.device("meta")

BAD_INPUT = [
    # from_sha
    (
        lambda: ConnectionWalk.from_sha(torch.ones(2, 2, dtype=torch.int64), I3),
        "DTypeError",
        "A: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (
        lambda: ConnectionWalk.from_sha(torch.ones(3, dtype=f64), I3),
        "ShapeError",
        "A: expected shape (..., n, n), got (3,)",
    ),
    (
        lambda: ConnectionWalk.from_sha(torch.ones(2, 3, dtype=f64), I3),
        "ShapeError",
        "A: has n=2 and 3 in one shape (2, 3)",
    ),
    (
        lambda: ConnectionWalk.from_sha(torch.ones(0, 0, dtype=f64), I3),
        "ShapeError",
        "A: n must be >= 1, got n=0 in shape (0, 0)",
    ),
    (
        lambda: ConnectionWalk.from_sha(torch.tensor([[NAN, 0.5], [0.5, 0.5]], dtype=f64), I3),
        "NonFiniteError",
        "A: contains 1 NaN/inf entries",
    ),
    (
        lambda: ConnectionWalk.from_sha(torch.tensor([[-1.0, 2.0], [0.5, 0.5]], dtype=f64), I3),
        "NegativeWeightError",
        "A: has negative entries (min -1.000e+00); weights must be >= 0",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22 * 2, I3, stochastic=True),
        "NotStochasticError",
        "A: rows must sum to 1 (max |row sum - 1| = 1.000e+00 > ",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, torch.ones(3, 3, dtype=torch.int64)),
        "DTypeError",
        "T: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, torch.ones(2, 3, 3, dtype=f64)),
        "ShapeError",
        "T: expected shape (d, d), got (2, 3, 3)",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, torch.ones(3, dtype=f64)),
        "ShapeError",
        "T: expected shape (d, d), got (3,)",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, torch.ones(3, 2, dtype=f64)),
        "ShapeError",
        "T: has d=2 and 3 in one shape (3, 2)",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, I3.float()),
        "DTypeError",
        "T: dtype torch.float32 differs from A's torch.float64; cast explicitly",
    ),
    (lambda: ConnectionWalk.from_sha(A22, I3.to(META)), "DeviceMismatchError", "T: device meta differs from A's cpu"),
    (lambda: ConnectionWalk.from_sha(A22, I3 * NAN), "NonFiniteError", "T: contains 9 NaN/inf entries"),
    # from_mha
    (lambda: ConnectionWalk.from_mha(A22, I3[None]), "ShapeError", "A: expected shape (..., H, n, n), got (2, 2)"),
    (
        lambda: ConnectionWalk.from_mha(torch.ones(1, 2, 3, dtype=f64), I3[None]),
        "ShapeError",
        "A: has n=2 and 3 in one shape (1, 2, 3)",
    ),
    (
        lambda: ConnectionWalk.from_mha(torch.ones(1, 0, 0, dtype=f64), I3[None]),
        "ShapeError",
        "A: n must be >= 1, got n=0 in shape (1, 0, 0)",
    ),
    (
        lambda: ConnectionWalk.from_mha(torch.ones(1, 2, 0, 0, dtype=f64), I3.expand(2, 3, 3)),
        "ShapeError",
        "A: n must be >= 1, got n=0 in shape (1, 2, 0, 0)",
    ),
    (
        lambda: ConnectionWalk.from_mha(AH * 2, I3.expand(2, 3, 3), stochastic=True),
        "NotStochasticError",
        "A: rows must sum to 1",
    ),
    (
        lambda: ConnectionWalk.from_mha(AH, torch.ones(2, 2, 2, dtype=torch.int64)),
        "DTypeError",
        "T: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (lambda: ConnectionWalk.from_mha(AH, I3), "ShapeError", "T: expected shape (..., H, d, d), got (3, 3)"),
    (
        lambda: ConnectionWalk.from_mha(AH, torch.ones(2, 3, 2, dtype=f64)),
        "ShapeError",
        "T: has d=2 and 3 in one shape (2, 3, 2)",
    ),
    (
        lambda: ConnectionWalk.from_mha(AH, I3.expand(2, 3, 3).float()),
        "DTypeError",
        "T: dtype torch.float32 differs from A's torch.float64; cast explicitly",
    ),
    (lambda: ConnectionWalk.from_mha(AH, I3.expand(2, 3, 3) * NAN), "NonFiniteError", "T: contains 18 NaN/inf entries"),
    (
        lambda: ConnectionWalk.from_mha(AH, I3.expand(3, 3, 3)),
        "ShapeError",
        "T: has H=3 but A has H=2 (shape (3, 3, 3))",
    ),
    # from_factors
    (lambda: ConnectionWalk.from_factors(A22, WO, WV), "ShapeError", "A: expected shape (..., H, n, n), got (2, 2)"),
    (
        lambda: ConnectionWalk.from_factors(AH * 2, WO, WV, stochastic=True),
        "NotStochasticError",
        "A: rows must sum to 1",
    ),
    (
        lambda: ConnectionWalk.from_factors(AH, WO.long(), WV),
        "DTypeError",
        "W_O: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (
        lambda: ConnectionWalk.from_factors(AH, WO, WV.long()),
        "DTypeError",
        "W_V: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (lambda: ConnectionWalk.from_factors(AH, WO[0], WV), "ShapeError", "W_O: expected shape (H, d, k), got (3, 1)"),
    (
        lambda: ConnectionWalk.from_factors(AH, WO[None], WV),
        "ShapeError",
        "W_O: expected shape (H, d, k), got (1, 2, 3, 1)",
    ),
    (lambda: ConnectionWalk.from_factors(AH, WO, WV[0]), "ShapeError", "W_V: expected shape (H, k, d), got (1, 3)"),
    (
        lambda: ConnectionWalk.from_factors(AH, WO, WV[None]),
        "ShapeError",
        "W_V: expected shape (H, k, d), got (1, 2, 1, 3)",
    ),
    (
        lambda: ConnectionWalk.from_factors(AH, WO.float(), WV),
        "DTypeError",
        "W_O: dtype torch.float32 differs from A's torch.float64; cast explicitly",
    ),
    (
        lambda: ConnectionWalk.from_factors(AH, WO, WV.float()),
        "DTypeError",
        "W_V: dtype torch.float32 differs from A's torch.float64; cast explicitly",
    ),
    (lambda: ConnectionWalk.from_factors(AH, WO * NAN, WV), "NonFiniteError", "W_O: contains 6 NaN/inf entries"),
    (lambda: ConnectionWalk.from_factors(AH, WO, WV * NAN), "NonFiniteError", "W_V: contains 6 NaN/inf entries"),
    (lambda: ConnectionWalk.from_factors(AH, WO[:1], WV), "ShapeError", "W_O: has H=1 but A has H=2 (shape (1, 3, 1))"),
    (lambda: ConnectionWalk.from_factors(AH, WO, WV[:1]), "ShapeError", "W_V: has H=1 but A has H=2 (shape (1, 1, 3))"),
    (
        lambda: ConnectionWalk.from_factors(AH, WO, torch.ones(1, 2, 3, dtype=f64)),
        "ShapeError",
        "W_V: has H=1 but A has H=2 (shape (1, 2, 3))",
    ),
    (
        lambda: ConnectionWalk.from_factors(AH, WO, torch.ones(2, 2, 3, dtype=f64)),
        "ShapeError",
        "W_O: has k=1 but W_V has k=2 (shape (2, 3, 1))",
    ),
    (
        lambda: ConnectionWalk.from_factors(AH, WO, torch.ones(2, 1, 4, dtype=f64)),
        "ShapeError",
        "W_O: has d=3 but W_V has d=4 (shape (2, 3, 1))",
    ),
    # from_edges
    (
        lambda: ConnectionWalk.from_edges(torch.ones(2, dtype=f64), I3),
        "ShapeError",
        "P: expected shape (..., n, n), got (2,)",
    ),
    (
        lambda: ConnectionWalk.from_edges(torch.ones(2, 3, dtype=f64), I3),
        "ShapeError",
        "P: has n=2 and 3 in one shape (2, 3)",
    ),
    (lambda: ConnectionWalk.from_edges(A22 * 2, I3, stochastic=True), "NotStochasticError", "P: rows must sum to 1"),
    (lambda: ConnectionWalk.from_edges(A22 - 1, I3), "NegativeWeightError", "P: has negative entries"),
    (
        lambda: ConnectionWalk.from_edges(A22, torch.ones(3, 3, dtype=torch.int64)),
        "DTypeError",
        "O: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (
        lambda: ConnectionWalk.from_edges(A22, torch.ones(3, dtype=f64)),
        "ShapeError",
        "O: expected shape (d, d) or (..., n, n, d, d), got (3,)",
    ),
    (
        lambda: ConnectionWalk.from_edges(A22, torch.ones(2, 2, 3, 2, dtype=f64)),
        "ShapeError",
        "O: has d=2 and 3 in one shape (2, 2, 3, 2)",
    ),
    (
        lambda: ConnectionWalk.from_edges(A22, I3.float()),
        "DTypeError",
        "O: dtype torch.float32 differs from P's torch.float64; cast explicitly",
    ),
    (lambda: ConnectionWalk.from_edges(A22, I3 * NAN), "NonFiniteError", "O: contains 9 NaN/inf entries"),
    (
        lambda: ConnectionWalk.from_edges(A22, torch.ones(3, 3, 2, 2, dtype=f64)),
        "ShapeError",
        "O: has n=3 but P has n=2 (shape (3, 3, 2, 2))",
    ),
    (
        lambda: ConnectionWalk.from_edges(A22.expand(1, 3, 2, 2), torch.ones(3, 3, 1, 1, dtype=f64)),
        "ShapeError",
        "O: has n=3 but P has n=2 (shape (3, 3, 1, 1))",
    ),
    (
        lambda: ConnectionWalk.from_edges(A22, torch.ones(2, 3, 3, dtype=f64)),
        "ShapeError",
        "O: expected shape (d, d) or (..., n, n, d, d), got (2, 3, 3)",
    ),
    # from_blocks
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 1, 1, dtype=torch.int64)),
        "DTypeError",
        "B: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 2, dtype=f64)),
        "ShapeError",
        "B: expected shape (..., n, n, d, d), got (2, 2, 2)",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 2, 3, dtype=f64)),
        "ShapeError",
        "B: has d=2 and 3 in one shape (2, 2, 2, 3)",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.full((2, 2, 1, 1), NAN, dtype=f64)),
        "NonFiniteError",
        "B: contains 4 NaN/inf entries",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 3, 1, 1, dtype=f64)),
        "ShapeError",
        "B: has n=2 and 3 in one shape (2, 3, 1, 1)",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 1, 1, dtype=f64), P=torch.ones(2, dtype=f64)),
        "ShapeError",
        "P: expected shape (..., n, n), got (2,)",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 1, 1, dtype=f64), P=torch.ones(2, 3, dtype=f64)),
        "ShapeError",
        "P: has n=2 and 3 in one shape (2, 3)",
    ),
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 1, 1, dtype=f64), P=A22.float()),
        "DTypeError",
        "P: dtype torch.float32 differs from B's torch.float64; cast explicitly",
    ),
    # the gauge of from_blocks is row-stochastic by definition (2·P was once accepted)
    (
        lambda: ConnectionWalk.from_blocks(torch.ones(2, 2, 1, 1, dtype=f64), P=A22 * 2),
        "NotStochasticError",
        "P: rows must sum to 1 (max |row sum - 1| = 1.000e+00 > 2.8e-14)",
    ),
    # stochastic=False is the default of every other constructor: unnormalised weights are accepted
    (lambda: ConnectionWalk.from_sha(A22 * 2, I3), None, None),
    (lambda: ConnectionWalk.from_mha(AH * 2, I3.expand(2, 3, 3)), None, None),
    (lambda: ConnectionWalk.from_factors(AH * 2, WO, WV), None, None),
    (lambda: ConnectionWalk.from_edges(A22 * 2, I3), None, None),
    # apply
    (
        lambda: ConnectionWalk.from_sha(A22, I3).apply(torch.ones(2, 3, dtype=torch.int64)),
        "DTypeError",
        "X: expected a floating tensor (float32/float64), got torch.int64",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, I3).apply(torch.ones(6, dtype=f64)),
        "ShapeError",
        "X: expected shape (..., n, d), got (6,)",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, I3).apply(torch.ones(2, 3)),
        "DTypeError",
        "X: dtype torch.float32 differs from self's torch.float64; cast explicitly",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, I3).apply(torch.ones(3, 3, dtype=f64)),
        "ShapeError",
        "X: has n=3 but the self has n=2 (shape (3, 3))",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, I3).apply(torch.ones(2, 2, dtype=f64)),
        "ShapeError",
        "X: has d=2 but the self has d=3 (shape (2, 2))",
    ),
    # indices
    (
        lambda: ConnectionWalk.from_sha(A22, I3).edge_transport(0, 2),
        "ParameterError",
        "j: index 2 out of range for n=2",
    ),
    (
        lambda: ConnectionWalk.from_sha(A22, I3).edge_transport(-3, 0),
        "ParameterError",
        "i: index -3 out of range for n=2",
    ),
]


@pytest.mark.parametrize("call, err, message", BAD_INPUT)
def test_bad_input_messages_name_the_argument_and_what_was_expected(call, err, message):
    if err is None:  # a valid call in the middle of the matrix: nothing raised
        call()
        return
    assert_bad_input(call, err, message)


@pytest.mark.parametrize(
    "X, err, message",
    [
        ("abc", DTypeError, "X: cannot convert str to a tensor"),
        (torch.ones(3, dtype=f64), ShapeError, "X: expected shape (..., n, d), got (3,)"),
        (torch.ones(3, 2), DTypeError, "X: dtype torch.float32 differs from walk's torch.float64; cast explicitly"),
        (torch.ones(4, 2, dtype=f64), ShapeError, "X: expected (..., 3, 2), got (4, 2)"),
        (torch.ones(3, 5, dtype=f64), ShapeError, "X: expected (..., 3, 2), got (3, 5)"),
        (torch.ones(2, 3, 3, dtype=f64), ShapeError, "X: expected (..., 3, 2), got (2, 3, 3)"),
    ],
)
def test_the_unchecked_apply_still_refuses_a_malformed_x(X, err, message):
    """``walk._apply`` (the library's matvec without the contract wrapper) keeps the body's own checks:
    a wrong rank, dtype or size of X is refused naming X, never broadcast into a wrong answer."""
    w = ConnectionWalk.from_mha(torch.full((2, 3, 3), 1 / 3, dtype=f64), torch.eye(2, dtype=f64).expand(2, 2, 2))
    msg = raises_named(err, "X", lambda: w._apply(X))
    assert msg.startswith(message), msg
    Y = w._apply(torch.ones(3, 2, dtype=f64))  # and a well-formed X goes through: Σ_h A^h X T_hᵀ = 2·X
    np.testing.assert_allclose(Y.numpy(), 2 * np.ones((3, 2)), rtol=0, atol=1e-12)
