"""The conformance kit's own logic, held by tests (issue 37): the merge of the own-dtype run with the
float64 shadow, the verdict's precedence (fails > hypothesis fails > undecided > conforms), the eval
mode's restore, a decision's truth value, and the kit's tolerances pinned from above and below — a
defect one rounding step over the bound fails, one step under it holds (the near-misses of T2's
identity and of the returned-weights comparison), with each bound written out here from its formula."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from numerics.conformance.checks import (
    SHADOW,
    ConformanceReport,
    DrawResult,
    Verdict,
    merge,
    t2_identity,
)
from numerics.conformance.hf_returned import returned_weights_extraction
from numerics.conformance.kit import Draw, Extraction, check_attention
from numerics.conformance.protocol import EvalMode
from numerics.errors import UndecidedTruthError
from numerics.tolerance import FAILS, HOLDS, UNDECIDED
from theory.rounding import EPS64, ROUNDING_SAFETY

F64, F32 = torch.float64, torch.float32
EPS32 = torch.finfo(F32).eps
DRAW = Draw(1, 1, 1, (0,), False, 0, 1.0)


def _v(status: str) -> Verdict:
    return Verdict(status, {HOLDS: 0.0, FAILS: 2.0, UNDECIDED: 1.0}[status], 1.0, 0.5 if status == UNDECIDED else 0.0)


# --------------------------------------------------------------------------- the shadow's merge
# (own dtype, shadow) → the run whose decision stands: the shadow decides, unless it is undecided or
# only the own-dtype run fails (a dtype-specific failure: overflow, a low-precision path)
MERGE = {
    (HOLDS, HOLDS): (HOLDS, SHADOW),
    (HOLDS, FAILS): (FAILS, SHADOW),
    (HOLDS, UNDECIDED): (UNDECIDED, SHADOW),
    (UNDECIDED, HOLDS): (HOLDS, SHADOW),
    (UNDECIDED, FAILS): (FAILS, SHADOW),
    (UNDECIDED, UNDECIDED): (UNDECIDED, SHADOW),
    (FAILS, HOLDS): (FAILS, "float32"),  # a failure only the module's own dtype sees stands
    (FAILS, FAILS): (FAILS, SHADOW),
    (FAILS, UNDECIDED): (FAILS, "float32"),
}


@pytest.mark.parametrize("native,shadow", list(MERGE))
def test_merge_table(native, shadow):
    v, by = merge(_v(native), _v(shadow), "float32")
    assert (v.status, by) == MERGE[(native, shadow)]


@pytest.mark.parametrize("native", [HOLDS, FAILS, UNDECIDED])
def test_without_a_shadow_the_own_run_decides(native):
    v, by = merge(_v(native), None, "float32")
    assert (v.status, by) == (native, "float32")


class Float32Defect(torch.nn.Module):
    """Correct in float64, wrong (output scaled by 1.01) when it runs in float32: a failure only the
    module's own dtype sees, which the float64 shadow's *holds* must not override."""

    embed_dim = 4

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.eye(4))

    def connwalk_attention(self, X):
        B, n, d = X.shape
        A = torch.full((B, 1, n, n), 1.0 / n, dtype=X.dtype)
        V = X @ self.w.T
        Y = (A[:, 0] @ V) * (1.01 if X.dtype == F32 else 1.0)
        return Extraction(Y, A, self.w.detach()[None], torch.eye(4, dtype=X.dtype)[None], X)


def test_a_failure_seen_only_in_the_modules_own_dtype_stands():
    rep = check_attention(Float32Defect(), examples=3, hypotheses=False)
    assert rep.verdict == "fails" and rep.decided_by == "float32", rep.table()
    assert rep.counterexample is not None and rep.counterexample.decided_by == "float32"


# --------------------------------------------------------------------------- the verdict's precedence
def _report(*rows: tuple[str, dict[str, str]], identifying=(True,)) -> ConformanceReport:
    """Rows of T2's and the hypotheses' statuses; ``identifying``: each row's, cycled (default: every one)."""
    results = [
        DrawResult(i, DRAW, "", _v(t2), hypotheses={h: _v(s) for h, s in hyp.items()})
        for i, (t2, hyp) in enumerate(rows)
    ]
    for i, r in enumerate(results):
        r.identifying = identifying[i % len(identifying)]
    return ConformanceReport("m", "a", "float32", results, None, 0.0, 0)


OK = {"nonnegative": HOLDS, "row-stochastic": HOLDS}
SUB = {"nonnegative": HOLDS, "row-stochastic": FAILS}
UND = {"nonnegative": HOLDS, "row-stochastic": UNDECIDED}


@pytest.mark.parametrize(
    "rows,verdict",
    [
        ([(HOLDS, OK)], "conforms"),
        ([(FAILS, OK)], "fails"),
        ([(HOLDS, SUB)], "hypothesis fails"),
        ([(FAILS, SUB)], "fails"),  # the identity fails: that is the verdict, whatever the hypotheses
        ([(HOLDS, SUB), (FAILS, OK)], "fails"),
        ([(FAILS, OK), (HOLDS, SUB)], "fails"),
        ([(HOLDS, SUB), (UNDECIDED, OK)], "hypothesis fails"),
        ([(HOLDS, OK), (UNDECIDED, OK)], "undecided"),  # never reported as conforms
        ([(HOLDS, UND)], "undecided"),
        ([(UNDECIDED, UND), (FAILS, OK)], "fails"),
        ([], "undecided"),  # no draw decides nothing
    ],
)
def test_verdict_precedence(rows, verdict):
    rep = _report(*rows)
    assert rep.verdict == verdict
    assert rep.conforms is (verdict == "conforms")
    assert rep.status == {"conforms": HOLDS, "undecided": UNDECIDED}.get(verdict, FAILS)
    if verdict == "hypothesis fails":
        assert rep.hypothesis_failures == ["row-stochastic"]


@pytest.mark.parametrize(
    "rows,identifying,verdict",
    [
        ([(HOLDS, OK)], (False,), "undecided"),  # the identity holds where it cannot tell a wrong A
        ([(HOLDS, OK)], (None,), "undecided"),  # whether it can is itself undecided: no evidence
        ([(HOLDS, OK), (HOLDS, OK)], (False, True), "conforms"),  # one identifying draw is evidence
        ([(HOLDS, OK), (FAILS, OK)], (True, False), "fails"),  # a failure is one wherever it is seen
        ([(HOLDS, SUB), (HOLDS, OK)], (False,), "hypothesis fails"),
    ],
)
def test_verdict_weighs_the_evidence(rows, identifying, verdict):
    rep = _report(*rows, identifying=identifying)
    assert rep.verdict == verdict
    k = sum(1 for i in range(len(rows)) if identifying[i % len(identifying)] is True)
    assert rep.identifying == (k, len(rows)) and rep.evidence.startswith(f"{k} of {len(rows)} draws identifying")


def test_each_layer_needs_an_identifying_draw():
    rep = _report((HOLDS, OK), (HOLDS, OK), identifying=(True, False))
    rep.results[1].index, rep.results[1].layer, rep.results[0].layer = 0, "1", "0"  # one draw, two layers
    assert rep.verdict == "undecided" and rep.identifying == (0, 1) and "(layer 1)" in rep.evidence


# --------------------------------------------------------------------------- a decision's truth value
def test_a_verdict_is_true_when_it_holds_false_when_it_fails_and_undecided_raises():
    assert bool(_v(HOLDS)) is True
    assert bool(_v(FAILS)) is False
    with pytest.raises(UndecidedTruthError, match="undecided"):
        bool(_v(UNDECIDED))
    failing = _report((FAILS, OK))
    assert not failing.results[0].t2  # `if report.results[0].t2:` no longer reads "fails" as success


# --------------------------------------------------------------------------- eval mode
class Records(torch.nn.Module):
    """Records the training flag it runs with (itself and a child)."""

    embed_dim = 2

    def __init__(self) -> None:
        super().__init__()
        self.child = torch.nn.Dropout(0.5)
        self.seen: list[tuple[bool, bool]] = []

    def connwalk_attention(self, X):
        self.seen.append((self.training, self.child.training))
        B, n, d = X.shape
        A = torch.full((B, 1, n, n), 1.0 / n, dtype=X.dtype)
        eye = torch.eye(d, dtype=X.dtype)[None]
        return Extraction(A[:, 0] @ X, A, eye, eye, X)


@pytest.mark.parametrize("training", [True, False])
def test_eval_mode_runs_in_eval_and_restores_the_flag(training):
    m = Records().train(training)
    with EvalMode(m):
        assert not m.training and not m.child.training
    assert m.training is training and m.child.training is training
    m2 = Records().train(training)
    rep = check_attention(m2, examples=2, hypotheses=False)
    assert rep.conforms and m2.seen and all(s == (False, False) for s in m2.seen)
    assert m2.training is training and m2.child.training is training


# --------------------------------------------------------------------------- T2's identity: near-misses
def _identity_case(y_entries: list[float], perturb: float) -> Extraction:
    """Two heads, two tokens, dyadic entries: the walk ``Ŷ`` is exact in float32, and the output is
    ``Ŷ`` with ``perturb`` added to one entry (a float32 number on that entry's grid)."""
    A = torch.tensor([[[[0.5, 0.5], [0.25, 0.75]], [[1.0, 0.0], [0.5, 0.5]]]], dtype=F32)  # (1, 2, 2, 2)
    W_O = torch.tensor([[[1.0], [0.5]], [[-0.5], [1.0]]], dtype=F32)  # (2, 2, 1)
    W_V = torch.tensor([[[1.0, -1.0]], [[0.5, 0.25]]], dtype=F32)  # (2, 1, 2)
    X = torch.tensor([y_entries[:2], y_entries[2:]], dtype=F32)[None]  # (1, 2, 2)
    V = torch.einsum("bmd,hkd->bhmk", X.double(), W_V.double())
    Y = torch.einsum("bhnm,bhmk,hok->bno", A.double(), V, W_O.double())
    out = Y.clone()
    out[0, 0, 0] += perturb
    assert torch.equal(out.float().double(), out), "the case must be exact in float32"
    return Extraction(out.float(), A, W_O, W_V, X)


def _identity_bound(ex: Extraction) -> tuple[float, float, float]:
    """The documented bound, written out: ``2·k·eps₃₂·S + 2·e`` with ``k = d_v + m + H·d_h + 1``,
    ``S = ‖Σ|terms|‖_F``, ``e = 2·k·eps₆₄·S``; returns (bound, e, the output entry's float32 spacing)."""
    A, W_O, W_V, X = (t.double() for t in (ex.A, ex.W_O, ex.W_V, ex.values))
    Sa = torch.einsum("bhnm,bhmk,hok->bno", A.abs(), torch.einsum("bmd,hkd->bhmk", X.abs(), W_V.abs()), W_O.abs())
    S = float(torch.linalg.vector_norm(Sa))
    k = 2 + 2 + 2 * 1 + 1
    assert ROUNDING_SAFETY == 2.0  # the slack theory.rounding states
    e = 2 * k * EPS64 * S
    y = abs(float(ex.output[0, 0, 0]))
    return 2 * k * EPS32 * S + 2 * e, e, 2.0 ** (math.frexp(y)[1] - 1) * EPS32  # y in [2^(x-1), 2^x)


@pytest.mark.parametrize("entries", [[1.0, 0.5, -0.25, 2.0], [4.0, -2.0, 1.0, 0.5]])
def test_the_identitys_bound_is_pinned_from_above_and_below(entries):
    base = _identity_case(entries, 0.0)
    bound, e, ulp = _identity_bound(base)
    below = math.floor((bound - 2 * e) / ulp) * ulp  # the largest defect on the grid that must hold
    above = math.ceil((bound + 2 * e) / ulp) * ulp  # the smallest that must fail
    assert above - below <= 2 * ulp and above < 1.2 * bound  # a near-miss on both sides
    v_below, _ = t2_identity(_identity_case(entries, below))
    v_above, _ = t2_identity(_identity_case(entries, above))
    assert v_below.bound == pytest.approx(bound, rel=1e-12) and v_above.bound == pytest.approx(bound, rel=1e-12)
    assert v_below.residual == pytest.approx(below, rel=1e-9) and v_above.residual == pytest.approx(above, rel=1e-9)
    assert v_below.status == HOLDS, v_below
    assert v_above.status == FAILS, v_above


# --------------------------------------------------------------------------- returned weights: near-misses
class _Target(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.v = torch.nn.Linear(2, 2, dtype=F64)
        self.o = torch.nn.Linear(2, 2, dtype=F64)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=F64))


def _returned(defect_over_tol: float):
    """A module whose output projection's input is ``A·P`` (``P`` its value projection's output),
    one entry moved by ``defect_over_tol`` times the documented tolerance ``8·(m+1)·eps·(max|Q_col| +
    max|P|)``."""
    t = _Target()
    g = torch.Generator().manual_seed(4)
    X = torch.randn(1, 3, 2, generator=g, dtype=F64)
    A = torch.softmax(torch.randn(1, 1, 3, 3, generator=g, dtype=F64), -1)
    P = t.v(X).detach()
    Q = torch.einsum("bhnm,bmc->bnc", A, P)
    m = 3
    tol = 8 * (m + 1) * EPS64 * (float(Q[..., 0].abs().max()) + float(P.abs().max()))
    Q = Q.clone()
    Q[0, 1, 0] += defect_over_tol * tol
    Y = t.o(Q).detach()
    calls = {
        id(t): SimpleNamespace(inputs={}, outputs={"all": (Y, A)}),
        id(t.v): SimpleNamespace(inputs={"x": X}, outputs={"y": P}),
        id(t.o): SimpleNamespace(inputs={"x": Q}, outputs={"y": Y}),
    }
    return returned_weights_extraction(t, calls, None, "0")


def test_the_returned_weights_comparison_is_pinned_from_above_and_below():
    assert isinstance(_returned(0.0), Extraction)
    assert isinstance(_returned(0.8), Extraction)  # just below the tolerance: the weights explain it
    assert _returned(1.25) is None  # just above: they do not (a looser comparison would accept it)
    assert _returned(1e6) is None
