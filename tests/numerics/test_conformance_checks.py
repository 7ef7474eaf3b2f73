"""T2's hypotheses as the kit decides them (numerics.conformance.checks.t2_hypotheses), on attention
tensors written by hand: per head, over the keys that are not masked, three-valued at the rounding of
the stated dtype; residuals compared with literal Python sums (math.fsum) over the same rows."""

from __future__ import annotations

import math

import pytest
import torch

from numerics.conformance.checks import stored_precision, t2_hypotheses
from numerics.conformance.kit import Extraction
from numerics.tolerance import tol
from theory.rounding import EPS64


def _ex(A: torch.Tensor, key_mask=None) -> Extraction:
    B, H, n, m = A.shape
    d = 2
    return Extraction(
        output=torch.zeros(B, n, d, dtype=torch.float64),
        A=A,
        W_O=torch.zeros(H, d, 1, dtype=torch.float64),
        W_V=torch.zeros(H, 1, d, dtype=torch.float64),
        values=torch.zeros(B, m, d, dtype=torch.float64),
        key_mask=key_mask,
    )


def _theta(m: int, S: float, dtype) -> float:
    """The documented threshold: tol(dtype, m + 2, scale=S, safety=2) + 2·(2·(m+1)·eps64·(S + 1))."""
    return tol(dtype, m + 2, scale=S, safety=2.0) + 2 * (2.0 * (m + 1) * EPS64 * (S + 1.0))


def test_rows_are_summed_over_the_real_keys_only():
    A = torch.tensor([[[[0.5, 0.5, 0.0], [0.4, 0.4, 0.2]]]], dtype=torch.float64)  # (1, 1, 2, 3)
    mask = torch.tensor([[True, True, False]])
    hyp = t2_hypotheses(_ex(A, mask), torch.float32)
    assert hyp["nonnegative"].status == "holds"
    rs = hyp["row-stochastic"]
    assert rs.status == "fails" and "0/1 heads hold" in rs.detail and "row 1" in rs.detail
    assert rs.residual == pytest.approx(abs(1 - math.fsum([0.4, 0.4])), rel=1e-15)
    assert t2_hypotheses(_ex(A), torch.float32)["row-stochastic"].status == "holds"  # nothing masked


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_row_sums_are_three_valued_at_the_dtype(dtype):
    m = 4

    def status(excess: float) -> str:
        A = torch.full((1, 1, 1, m), 1.0 / m, dtype=torch.float64)
        A[..., 0] += excess
        return t2_hypotheses(_ex(A), dtype)["row-stochastic"].status

    on = _theta(m, 1.0, dtype)
    for _ in range(40):  # the row's own scale S = 1 + excess enters the threshold: its fixed point
        on = _theta(m, 1.0 + on, dtype)
    assert status(0.0) == "holds"
    assert status(0.25 * on) == "holds"
    assert status(-0.25 * on) == "holds"
    assert status(on) == "undecided"  # on the threshold: within the check's own error band
    assert status(4 * on) == "fails"
    assert status(-4 * on) == "fails"


def test_nonnegativity_is_exact_at_zero_and_three_valued_below():
    m = 3
    th = _theta(m, 1.0, torch.float32)

    def status(entry: float) -> str:
        A = torch.tensor([[[[0.5 - entry, 0.5, entry]]]], dtype=torch.float64)
        return t2_hypotheses(_ex(A), torch.float32)["nonnegative"].status

    assert status(0.0) == "holds"
    assert status(-0.01 * th) == "undecided"  # within the float32 rounding of an exact zero
    assert status(-10 * th) == "fails"


def test_per_head_and_non_finite():
    A = torch.full((2, 3, 2, 2), 0.5, dtype=torch.float64)
    A[1, 2, 0] = torch.tensor([0.9, 0.3])  # one row of one head of one batch row
    hyp = t2_hypotheses(_ex(A), torch.float64)
    assert hyp["row-stochastic"].status == "fails" and "2/3 heads hold, 1 fail" in hyp["row-stochastic"].detail
    assert "head 2, b=1, row 0" in hyp["row-stochastic"].detail
    A[0, 0, 1, 1] = float("nan")
    hyp = t2_hypotheses(_ex(A), torch.float64)
    assert hyp["row-stochastic"].status == "fails" and hyp["nonnegative"].status == "fails"


def test_residual_matches_a_literal_sum_on_random_substochastic_attention():
    g = torch.Generator().manual_seed(7)
    B, H, n, m = 2, 3, 4, 5
    A = torch.rand(B, H, n, m, generator=g, dtype=torch.float64)
    A = A / (A.sum(-1, keepdim=True) + torch.rand(B, H, n, 1, generator=g, dtype=torch.float64))  # a sink's share
    mask = torch.ones(B, m, dtype=torch.bool)
    mask[1, 3:] = False
    hyp = t2_hypotheses(_ex(A, mask), torch.float32)
    rows = A.tolist()
    lit = max(
        abs(1 - math.fsum(rows[b][h][i][j] for j in range(m) if bool(mask[b, j])))
        for b in range(B)
        for h in range(H)
        for i in range(n)
    )
    assert hyp["row-stochastic"].status == "fails"
    assert hyp["row-stochastic"].residual == pytest.approx(lit, rel=1e-14)


def test_stored_precision_is_the_coarsest_dtype_holding_every_weight():
    g = torch.Generator().manual_seed(3)
    S = torch.randn(2, 3, 4, 4, generator=g, dtype=torch.float64)
    assert stored_precision(torch.softmax(S, -1)) == torch.float64
    assert stored_precision(torch.softmax(S.float(), -1).double()) == torch.float32
    assert stored_precision(torch.softmax(S, -1).to(torch.bfloat16).double()) == torch.bfloat16
    assert stored_precision(torch.softmax(S.float(), -1)) == torch.float32
