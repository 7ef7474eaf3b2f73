"""Evidence weighed per draw (issue 37, item 5): a draw counts for *conforms* only when T2's identity
determines the attention on it — when a wrong row-stochastic ``A`` would give another output. Per
batch row the identity is linear in a query's weights over all heads, ``y = Σ_h a^h U^h + b_O`` with
``U^h = (X W_V^hᵀ + b_V^h) W_O^hᵀ``; two stochastic rows differ by ``δ ⊥ 1`` per head, so the draw
identifies ``A`` iff the stacked ``Qᵀ U^h`` (``Q`` a basis of ``1^⊥``) has full row rank ``H(m − 1)``
(:func:`numerics.conformance.protocol.identifies`, decided at the module's rounding)."""

from __future__ import annotations

import json

import pytest
import sympy
import torch

from numerics.conformance.kit import Draw, Extraction, check_attention, check_draw
from numerics.conformance.protocol import identifies
from theory.rounding import EPS64, ROUNDING_SAFETY

F64, F32 = torch.float64, torch.float32
EPS32 = torch.finfo(F32).eps


def _ex(X: torch.Tensor, Wv: torch.Tensor, Wo: torch.Tensor, bv: torch.Tensor | None = None) -> Extraction:
    """An extraction of one batch row: values ``X`` ``(m, d_v)``, ``W_V`` ``(H, d_h, d_v)``, ``W_O`` ``(H, d_out, d_h)``."""
    m, H = X.shape[0], Wv.shape[0]
    return Extraction(torch.zeros(1, m, Wo.shape[1]), torch.zeros(1, H, m, m), Wo, Wv, X[None], b_V=bv)


def _oracle(X: torch.Tensor, Wv: torch.Tensor, Wo: torch.Tensor) -> bool:
    """Exact (rational) rank of the stacked ``D X W_V^hᵀ W_O^hᵀ``, ``D``'s rows ``e_j − e_m`` (a basis of 1^⊥)."""
    m, H = X.shape[0], Wv.shape[0]
    Xs = sympy.Matrix(X.to(torch.int64).tolist())
    D = sympy.Matrix(m - 1, m, lambda i, j: (1 if j == i else 0) - (1 if j == m - 1 else 0))
    blocks = [
        D * Xs * sympy.Matrix(Wv[h].to(torch.int64).tolist()).T * sympy.Matrix(Wo[h].to(torch.int64).tolist()).T
        for h in range(H)
    ]
    return sympy.Matrix.vstack(*blocks).rank() == H * (m - 1)


def _ints(g: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randint(-3, 4, shape, generator=g).to(F64)


CASES = {
    # name: (H, d_h, d_v, m, how the values are made)
    "generic, m − 1 < d_h": (2, 3, 6, 3, None),
    "m = d_h + 1: U has rank d_h < m, yet 1's direction is the only one lost": (1, 3, 4, 4, None),
    "m = d_h + 2: rank-deficient by count": (1, 3, 5, 5, None),
    "two equal value rows": (2, 4, 8, 4, "equal"),
    "an affine combination of value rows": (2, 4, 8, 4, "affine"),
    "two heads jointly: H(m − 1) > d_out": (3, 2, 4, 3, "narrow"),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_rank_criterion_agrees_with_an_exact_rational_oracle(name, seed):
    H, dh, dv, m, how = CASES[name]
    g = torch.Generator().manual_seed(seed)
    X = _ints(g, m, dv)
    if how == "equal":
        X[1] = X[0]
    if how == "affine":  # x_3 = 2 x_1 − x_2: δ = (2, −1, −1, 0) sums to 0 and moves no output
        X[2] = 2 * X[0] - X[1]
    d_out = 4 if how == "narrow" else H * dh + 1
    Wv, Wo = _ints(g, H, dh, dv), _ints(g, H, d_out, dh)
    expect = _oracle(X, Wv, Wo)
    got, why = identifies(_ex(X, Wv, Wo), F32)
    assert got is expect, why
    # a value bias is constant over the keys: it changes nothing
    assert identifies(_ex(X, Wv, Wo, bv=_ints(g, H, dh)), F32)[0] is expect


def test_the_oracle_cases_are_not_all_one_answer():
    g = torch.Generator().manual_seed(0)
    seen = set()
    for H, dh, dv, m, how in CASES.values():
        X = _ints(g, m, dv)
        if how == "equal":
            X[1] = X[0]
        seen.add(_oracle(X, _ints(g, H, dh, dv), _ints(g, H, 4 if how == "narrow" else H * dh + 1, dh)))
    assert seen == {True, False}


@pytest.mark.parametrize("factor,expect", [(1 + 1e-6, True), (1 - 1e-6, False), (1.0, None)])
def test_the_rank_threshold_is_pinned_from_above_and_below(factor, expect):
    # values whose centred form has singular values a and b exactly (columns ⊥ 1 and to each other):
    # θ = ROUNDING_SAFETY·(d_v + d_h + m)·eps₃₂·a, the SVD's own error 2·(2 + 2)·eps₆₄·a ≪ 1e-6·θ
    a = 3.0
    theta = ROUNDING_SAFETY * (2 + 2 + 3) * EPS32 * a
    assert ROUNDING_SAFETY * 4 * EPS64 * a < 1e-6 * theta
    p = torch.tensor([1.0, -1.0, 0.0], dtype=F64) / 2**0.5
    q = torch.tensor([1.0, 1.0, -2.0], dtype=F64) / 6**0.5
    X = torch.stack([a * p, theta * factor * q], 1)  # (3, 2)
    eye = torch.eye(2, dtype=F64)[None]
    assert identifies(_ex(X, eye, eye), F32)[0] is expect


# --------------------------------------------------------------------------- through the kit
class NarrowHeads(torch.nn.Module):
    """One head of dimension 1 over 4-wide tokens; reports the attention it uses, or (``wrong``) another
    row-stochastic one that differs from it by a ``δ`` the values cannot see (``δ ⊥ 1`` and
    ``δ ⊥ X w_V``: the same output) — a wrong A that passes wherever the draw does not determine A."""

    embed_dim = 4

    def __init__(self, wrong: bool) -> None:
        super().__init__()
        self.wrong = wrong
        g = torch.Generator().manual_seed(5)
        self.w_v = torch.nn.Parameter(torch.randn(1, 4, generator=g))
        self.w_o = torch.nn.Parameter(torch.randn(4, 1, generator=g))

    def connwalk_attention(self, X):
        B, n, _ = X.shape
        A = torch.full((B, 1, n, n), 1.0 / n, dtype=F64)
        v = (X.to(F64) @ self.w_v.to(F64).T)[..., 0]  # (B, n)
        reported = A.clone()
        if self.wrong and n >= 3:
            for b in range(B):
                basis = torch.linalg.qr(torch.stack([torch.ones(n, dtype=F64), v[b]], 1))[0]
                r = torch.arange(n, dtype=F64) ** 2
                delta = r - basis @ (basis.T @ r)  # ⊥ 1 and ⊥ v
                reported[b, 0] += 0.5 / n * delta / delta.abs().max()
        Y = (A[:, 0] @ v[..., None]) @ self.w_o.to(F64).T
        dt = X.dtype
        return Extraction(Y.to(dt), reported.to(dt), self.w_o.detach()[None].to(dt), self.w_v.detach()[None].to(dt), X)


def test_a_module_whose_heads_are_narrower_than_every_draws_keys_gets_no_identifying_draw():
    rep = check_attention(NarrowHeads(wrong=False), examples=5, min_length=3, max_length=6, hypotheses=False)
    assert all(r.t2.status == "holds" for r in rep.results)
    assert all(r.identifying is False for r in rep.results)
    assert rep.identifying == (0, 6)
    assert rep.verdict == "undecided" and not rep.conforms, rep.table()
    assert "0 of 6 draws identifying" in rep.evidence and "no draw determines A" in rep.evidence
    assert "0 of 6 draws identifying" in rep.table() and "on no draw that determines A" in rep.table()
    data = json.loads(json.dumps(rep.as_dict(), default=str))
    assert data["identifying_draws"] == 0 and data["verdict"] == "undecided"
    assert data["evidence"].startswith("0 of 6 draws identifying")
    assert all(d["identifying"] is False and "rank" in d["identifying_why"] for d in data["draws"])


def test_a_wrong_attention_that_passes_only_where_the_draw_cannot_tell_is_not_conforming():
    mod = NarrowHeads(wrong=True)
    d = Draw(1, 5, 5, (0,), False, 3, 1.0)
    (r,) = check_draw(mod, d, shadow=False)
    A_used = torch.full((5, 5), 0.2)
    Y = mod.connwalk_attention(d.randn(1, 5, 4, dtype=F32))
    assert (Y.A[0, 0].to(F64) - A_used.to(F64)).abs().max() > 0.01  # it reports a wrong A ...
    assert r.t2.status == "holds" and r.identifying is False  # ... that the identity cannot see here
    rep = check_attention(mod, examples=5, min_length=3, max_length=6, hypotheses=False)
    assert rep.verdict == "undecided" and not rep.conforms, rep.table()
    # where n ≤ 2 the draw determines A (and this module reports the right one there)
    small = check_attention(mod, examples=5, max_length=2, hypotheses=False)
    assert small.conforms and small.identifying[0] == small.identifying[1] > 0, small.table()


@pytest.mark.parametrize("embed,heads", [(16, 2), (32, 4), (24, 3), (64, 8)])
def test_the_default_sizes_identify_for_mha_with_head_dim_at_least_8(embed, heads):
    rep = check_attention(torch.nn.MultiheadAttention(embed, heads, batch_first=True), hypotheses=False)
    k, n = rep.identifying
    assert k == n == 11 and rep.conforms, rep.table()
    assert all(r.identifying is True for r in rep.results)


def test_head_dim_4_at_the_default_sizes_leaves_some_draws_unweighed():
    # m − 1 > d_h = 4 on the draws with more than 5 real keys: those are reported, not counted
    rep = check_attention(torch.nn.MultiheadAttention(8, 2, batch_first=True), hypotheses=False)
    k, n = rep.identifying
    assert 0 < k < n, rep.table()
    assert all(r.identifying is False for r in rep.results if r.draw.m - max(r.draw.pad) > 5)
    assert f"{k} of {n} draws identifying" in rep.table()


def test_the_cli_exits_undecided_and_says_how_many_draws_identified(tmp_path, monkeypatch, capsys):
    from connwalk import main

    # heads of dimension 1: with at least 3 real keys no draw determines A
    (tmp_path / "evidence_factories.py").write_text(
        "import torch\n\ndef narrow():\n    torch.manual_seed(0)\n"
        "    return torch.nn.MultiheadAttention(4, 4, batch_first=True)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    js = tmp_path / "r.json"
    argv = ["conform", "evidence_factories:narrow", "--examples", "3", "--min-length", "3", "--json", str(js)]
    assert main(argv) == 3
    out = capsys.readouterr().out
    assert "0 of 4 draws identifying" in out and "on no draw that determines A" in out
    data = json.loads(js.read_text())
    assert data["verdict"] == "undecided" and data["identifying_draws"] == 0
