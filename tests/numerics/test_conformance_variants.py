"""The conformance kit's judgement on a set of attention modules written here from scratch, as a user
writes them against the documented ``connwalk_attention`` protocol (and ``torch.nn.MultiheadAttention``).

Correct variants — plain, ALiBi, RoPE, grouped-query, sliding window, per-head temperature — conform
(decided by the float64 shadow: the modules are float32). Wrong ones do not, each with the verdict and
the statement it violates: a transposed output projection, heads in the wrong order, a value bias
applied after the output projection, a query-axis softmax reported as a key-axis one, reported
attention from another call, a score scale off by 1e-6 (relative) *fail* T2's identity; a query-axis
softmax that is reported, dropout left on and reported, signed weights, and attention sinks (a learned
sink logit, a null key, ``add_zero_attn``) keep the identity and *fail a hypothesis* of T2. Nothing
raises anything but a typed error (numerics.errors.ConnwalkError)."""

from __future__ import annotations

import copy
import math
import threading

import pytest
import torch

from numerics.conformance.kit import (
    HYPOTHESIS_STATEMENTS,
    SHADOW,
    T2_STATEMENT,
    VERDICTS,
    Draw,
    Extraction,
    ExtractionError,
    check_attention,
    check_draw,
)
from numerics.errors import ConnwalkError, ParameterError, ShapeError

EPS_SCALE = 1e-6  # the relative score-scale defect the float64 shadow must catch


def _rope(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on ``(B, H, n, dh)``, positions ``0..n−1``, base 10000."""
    n, dh = x.shape[-2], x.shape[-1]
    inv = 1.0 / 10000 ** (torch.arange(0, dh, 2, dtype=x.dtype) / dh)
    ang = torch.arange(n, dtype=x.dtype)[:, None] * inv[None]
    cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
    x1, x2 = x[..., : dh // 2], x[..., dh // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Attn(torch.nn.Module):
    """Softmax multi-head attention (float32 by default), written out by hand.

    ``kv_heads``: grouped-query attention; ``pos``: ``"alibi"`` / ``"rope"``; ``causal``; ``window``:
    sliding window (causal); ``temperature``: a learned per-head factor on the scores; ``sink``:
    ``"learned"`` (a learned logit per head in the softmax's denominator, no value) or ``"null"`` (a key
    and value of zeros). ``defect`` makes the module wrong in one way while it keeps claiming its
    parameters' ``W_O``, ``W_V`` and biases (see the module docstring)."""

    def __init__(
        self,
        d=16,
        heads=4,
        kv_heads=None,
        pos=None,
        causal=False,
        window=None,
        temperature=False,
        sink=None,
        defect=None,
        dtype=torch.float32,
        seed=0,
    ):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed_dim, self.H, self.Hkv, self.dh = d, heads, kv_heads or heads, d // heads
        self.pos, self.causal, self.window, self.sink, self.defect = pos, causal or bool(window), window, sink, defect
        H, Hkv, dh = self.H, self.Hkv, self.dh
        self.q = torch.nn.Linear(d, H * dh, dtype=dtype)
        self.k = torch.nn.Linear(d, Hkv * dh, dtype=dtype)
        self.v = torch.nn.Linear(d, Hkv * dh, dtype=dtype)
        self.o = torch.nn.Linear(H * dh, d, dtype=dtype)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(0.3 * torch.randn(p.shape, generator=g, dtype=torch.float64))
        self.tau = torch.nn.Parameter(1 + torch.rand(H, generator=g, dtype=dtype)) if temperature else None
        self.sink_logit = torch.nn.Parameter(torch.randn(H, generator=g, dtype=dtype)) if sink == "learned" else None
        self.prev = None
        self.calls = 0

    def _scores(self, X, kpm, factor=1.0):
        B, n, _ = X.shape
        H, Hkv, dh = self.H, self.Hkv, self.dh
        q = self.q(X).view(B, n, H, dh).transpose(1, 2)
        k = self.k(X).view(B, n, Hkv, dh).transpose(1, 2)
        if self.pos == "rope":
            q, k = _rope(q), _rope(k)
        k = k.repeat_interleave(H // Hkv, dim=1)
        S = (q @ k.transpose(-1, -2)) * (factor / math.sqrt(dh))
        if self.tau is not None:
            S = S * self.tau[:, None, None]
        i = torch.arange(n)
        if self.pos == "alibi":
            slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1, dtype=X.dtype) / H)
            S = S - slopes[:, None, None] * (i[:, None] - i[None, :]).abs().to(X.dtype)
        allowed = torch.ones(n, n, dtype=torch.bool)
        if self.causal:
            allowed &= i[:, None] >= i[None, :]
        if self.window:
            allowed &= (i[:, None] - i[None, :]) < self.window
        S = S.masked_fill(~allowed, float("-inf"))
        if kpm is not None:
            S = S.masked_fill(kpm[:, None, None, :], float("-inf"))
        return S

    def _softmax(self, S, dim=-1):
        if self.sink is None:
            return torch.softmax(S, dim)
        extra = self.sink_logit[None, :, None, None] if self.sink == "learned" else torch.zeros(())
        S2 = torch.cat([S, extra.to(S.dtype).expand(*S.shape[:-1], 1)], -1)
        return torch.softmax(S2, -1)[..., :-1]  # the sink's column has no value (a zero / no value vector)

    def forward(self, X, kpm=None):
        """``(Y, reported A)``."""
        self.calls += 1
        B, n, d = X.shape
        H, dh, dfx = self.H, self.dh, self.defect
        S = self._scores(X, kpm, 1 + EPS_SCALE if dfx == "scale" else 1.0)
        P = self._softmax(S, -2 if dfx in ("query_softmax", "query_softmax_hidden") else -1)
        reported = P
        if dfx == "scale":
            reported = self._softmax(self._scores(X, kpm))
        if dfx == "query_softmax_hidden":
            reported = self._softmax(S, -1)
        if dfx in ("dropout", "dropout_hidden"):
            P = torch.nn.functional.dropout(P, 0.25, training=True)  # left on, whatever the mode
            reported = P if dfx == "dropout" else reported
        if dfx == "signed":
            P = 2 * P - 1.0 / n  # rows still sum to one
            reported = P
        vw = self.v.weight
        V = (X @ vw.T + (0 if dfx == "value_bias_after" else self.v.bias)).view(B, n, self.Hkv, dh).transpose(1, 2)
        V = V.repeat_interleave(H // self.Hkv, dim=1)
        ctx = P @ V
        if dfx == "heads_order":
            ctx = ctx.flip(1)
        flat = ctx.transpose(1, 2).reshape(B, n, H * dh)
        Y = flat @ self.o.weight + self.o.bias if dfx == "transpose_out" else self.o(flat)
        if dfx == "value_bias_after":
            Y = Y + self.v.bias.view(self.Hkv, dh).repeat_interleave(H // self.Hkv, 0).reshape(-1)
        if dfx == "flaky" and self.calls % 2 == 0:
            Y = flat @ self.o.weight + self.o.bias  # wrong on every other call only
        if dfx == "stale":
            reported, self.prev = (self.prev if self.prev is not None else reported), reported
        return Y, reported

    def connwalk_attention(self, X, key_padding_mask=None):
        Y, A = self(X, key_padding_mask)
        d, H, dh = self.embed_dim, self.H, self.dh
        kv = torch.arange(H) // (H // self.Hkv)
        return Extraction(
            output=Y,
            A=A,
            W_O=self.o.weight.detach().view(d, H, dh).permute(1, 0, 2),
            W_V=self.v.weight.detach().view(self.Hkv, dh, d)[kv],
            values=X,
            b_V=self.v.bias.detach().view(self.Hkv, dh)[kv],
            b_O=self.o.bias.detach(),
        )


class Unmasked(Attn):
    """The same module without a key padding mask (a decoder, or a softmax over the query axis,
    which padding would leave without a query)."""

    def connwalk_attention(self, X):
        return super().connwalk_attention(X)


def _check(m, **kw):
    kw.setdefault("examples", 8)
    kw.setdefault("hypotheses", False)
    return check_attention(m, **kw)


# --------------------------------------------------------------------------- correct variants conform
CORRECT = {
    "plain": lambda: Attn(),
    "alibi": lambda: Attn(pos="alibi"),
    "alibi-causal": lambda: Unmasked(pos="alibi", causal=True),
    "rope": lambda: Attn(pos="rope"),
    "gqa": lambda: Attn(kv_heads=2),
    "gqa-rope-causal": lambda: Unmasked(kv_heads=1, pos="rope", causal=True),
    "sliding-window": lambda: Unmasked(window=3),
    "per-head-temperature": lambda: Attn(temperature=True),
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_variants_conform_decided_by_the_float64_shadow(name):
    rep = _check(CORRECT[name]())
    assert rep.verdict == "conforms", rep.table()
    assert rep.conforms and rep.hypothesis_failures == [] and rep.counterexample is None
    assert rep.decided_by == SHADOW and rep.shadow == "" and rep.dtype == "float32"
    assert all(r.decided_by == SHADOW and set(r.hypotheses) == {"nonnegative", "row-stochastic"} for r in rep.results)


def test_correct_float64_variant_is_decided_by_its_own_dtype():
    rep = _check(Attn(pos="rope", dtype=torch.float64))
    assert rep.verdict == "conforms" and rep.decided_by == "float64" and "float64 itself" in rep.shadow


class Softmax32(Attn):
    """A float64 module whose softmax runs in float32 and is cast back (as many Hugging Face kernels
    do): its rows are off by float32 rounding, which the hypotheses must allow."""

    def _softmax(self, S, dim=-1):
        return torch.softmax(S.float(), dim).to(S.dtype)


def test_a_float32_softmax_in_a_float64_module_is_judged_at_float32_rounding():
    rep = _check(Softmax32(dtype=torch.float64), examples=10)
    assert rep.verdict == "conforms", rep.table()
    assert rep.decided_by == "float64"


# --------------------------------------------------------------------------- wrong variants: the identity fails
IDENTITY_FAILS = {
    "transposed-output-projection": lambda: Attn(defect="transpose_out"),
    "heads-in-wrong-order": lambda: Attn(defect="heads_order"),
    "value-bias-after-output-projection": lambda: Attn(defect="value_bias_after"),
    "query-axis-softmax-not-reported": lambda: Unmasked(defect="query_softmax_hidden"),
    "dropout-on-not-reported": lambda: Attn(defect="dropout_hidden"),
    "stale-attention": lambda: Attn(defect="stale"),
    "score-scale-1e-6": lambda: Unmasked(defect="scale"),
}


@pytest.mark.parametrize("name", list(IDENTITY_FAILS))
def test_wrong_variants_fail_the_identity_with_a_counterexample(name):
    rep = _check(IDENTITY_FAILS[name]())
    assert rep.verdict == "fails", rep.table()
    assert not rep.conforms and rep.status == "fails"
    cx = rep.counterexample
    assert cx is not None and cx.statement == T2_STATEMENT and cx.verdict.status == "fails"
    assert cx.verdict.residual > cx.verdict.bound
    assert "violates T2" in rep.table() and "check_draw(module, Draw(" in rep.table()


def test_a_score_scale_off_by_1e_6_is_caught_by_the_shadow_only():
    """At float32 the defect lies below the bound (~1e-5 relative): the own-dtype run alone cannot
    fail it; the float64 shadow on the same draws does, and says so."""
    rep = _check(Unmasked(defect="scale"))
    assert rep.verdict == "fails" and rep.decided_by == SHADOW and rep.counterexample.decided_by == SHADOW
    blind = _check(Unmasked(defect="scale"), shadow=False)
    assert blind.verdict in ("conforms", "undecided") and blind.decided_by == "float32"
    assert [r.draw for r in blind.results] == [r.draw for r in rep.results]  # the same draws


def test_stale_attention_of_another_shape_is_a_failure_not_an_error():
    rep = _check(Attn(defect="stale"), examples=10)
    assert rep.verdict == "fails"
    assert any("not the attention of this call" in r.t2.detail for r in rep.results)


# --------------------------------------------------------------------------- the identity holds, a hypothesis fails
HYPOTHESIS_FAILS = {
    "query-axis-softmax-reported": (lambda: Unmasked(defect="query_softmax"), ["row-stochastic"]),
    "dropout-on-reported": (lambda: Attn(defect="dropout"), ["row-stochastic"]),
    "signed-weights": (lambda: Unmasked(defect="signed"), ["nonnegative"]),
    "learned-sink": (lambda: Attn(sink="learned"), ["row-stochastic"]),
    "null-key": (lambda: Attn(sink="null", pos="rope"), ["row-stochastic"]),
    "torch-mha-add-zero-attn": (
        lambda: torch.nn.MultiheadAttention(16, 4, add_zero_attn=True, batch_first=True),
        ["row-stochastic"],
    ),
}


@pytest.mark.parametrize("name", list(HYPOTHESIS_FAILS))
def test_walks_that_are_not_stochastic_fail_the_named_hypothesis(name):
    make, expected = HYPOTHESIS_FAILS[name]
    torch.manual_seed(0)
    rep = _check(make())
    assert rep.verdict == "hypothesis fails", rep.table()
    assert rep.hypothesis_failures == expected and not rep.conforms
    assert all(r.t2.status != "fails" for r in rep.results)  # the identity itself holds
    cx = rep.counterexample
    assert cx is not None and cx.statement == HYPOTHESIS_STATEMENTS[expected[0]] and cx.verdict.status == "fails"
    assert f"HYPOTHESIS FAILS ({expected[0]}" in rep.table()


def test_sinks_get_one_answer_on_every_path():
    """A learned sink logit, a null key in a user module and torch's add_zero_attn: the same verdict,
    the same hypothesis, and the row-stochastic residual of the counterexample equals a literal float64
    recomputation (Python sums over the float64 copy's reported rows)."""
    answers = set()
    for make in (
        lambda: Attn(sink="learned"),
        lambda: Attn(sink="null"),
        HYPOTHESIS_FAILS["torch-mha-add-zero-attn"][0],
    ):
        torch.manual_seed(1)
        m = make()
        rep = _check(m)
        answers.add((rep.verdict, tuple(rep.hypothesis_failures), rep.decided_by))
        if isinstance(m, Attn):
            cx = rep.counterexample
            twin = copy.deepcopy(m).double()
            d = cx.draw
            X = d.randn(d.batch, d.n, m.embed_dim)
            _, A = twin(X, d.key_padding_mask())
            rows = [math.fsum(row) for row in A.detach().reshape(-1, d.n).tolist()]
            assert math.isclose(cx.verdict.residual, max(abs(1 - s) for s in rows), rel_tol=1e-12)
    assert answers == {("hypothesis fails", ("row-stochastic",), SHADOW)}


# --------------------------------------------------------------------------- judge, never crash
def test_a_failure_seen_once_is_never_lost():
    """Wrong on every other call only: shrinking cannot replay it faithfully; the verdict still fails
    and the counterexample is a failure actually observed (no Flaky, no NoSuchExample)."""
    rep = _check(Attn(defect="flaky"), examples=10)
    assert rep.verdict == "fails" and rep.counterexample is not None
    assert rep.counterexample.verdict.status == "fails"


def test_nondeterministic_forward_gets_a_verdict():
    for dfx in ("dropout", "dropout_hidden"):
        rep = _check(Attn(defect=dfx), examples=6, hypotheses=True)
        assert rep.verdict in ("hypothesis fails", "fails")


class Raises(Attn):
    def connwalk_attention(self, X, key_padding_mask=None):
        if X.shape[1] > 2:
            raise RuntimeError("kernel not implemented for n > 2")
        return super().connwalk_attention(X, key_padding_mask)


class Float32Only(Attn):
    """Raises on float64 inputs: only its float64 copy fails to run."""

    def connwalk_attention(self, X, key_padding_mask=None):
        if X.dtype == torch.float64:
            raise TypeError("float32 kernels only")
        return super().connwalk_attention(X, key_padding_mask)


class Locked(Attn):
    """Holds a lock: copy.deepcopy cannot copy it."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.lock = threading.Lock()


def test_what_the_module_raises_is_a_typed_error_naming_it():
    with pytest.raises(ExtractionError) as ei:
        _check(Raises(), examples=10)
    assert ei.value.argument == "module" and str(ei.value).startswith("module: Raises")
    assert "RuntimeError: kernel not implemented" in str(ei.value)


@pytest.mark.parametrize("cls,why", [(Float32Only, "TypeError: float32 kernels only"), (Locked, "copy.deepcopy")])
def test_without_a_shadow_the_own_dtype_decides_and_says_why(cls, why):
    rep = _check(cls())
    assert rep.verdict == "conforms" and rep.decided_by == "float32" and why in rep.shadow
    assert f"no float64 shadow: {rep.shadow}" in rep.table()


class BadReturn(Attn):
    def __init__(self, how, **kw):
        super().__init__(**kw)
        self.how = how

    def connwalk_attention(self, X, key_padding_mask=None):
        ex = super().connwalk_attention(X, key_padding_mask)
        if self.how == "tuple":
            return ex.output, ex.A
        if self.how == "dict":
            return {"output": ex.output, "attention": ex.A}
        if self.how == "W_V":
            ex.W_V = ex.W_V[:, :, :3]
        if self.how == "key_mask":
            ex.key_mask = torch.ones(7, 9, dtype=torch.bool)
        return ex

    def forward(self, X, kpm=None):
        Y, A = super().forward(X, kpm)
        return (Y * float("nan"), A) if self.how == "nan" else (Y, A)  # the module's own output is NaN


@pytest.mark.parametrize(
    "how,err,arg",
    [
        ("tuple", ParameterError, "module"),
        ("dict", ParameterError, "module"),
        ("W_V", ShapeError, "values"),
        ("key_mask", ShapeError, "key_mask"),
    ],
)
def test_malformed_extractions_are_typed_errors(how, err, arg):
    with pytest.raises(err) as ei:
        _check(BadReturn(how))
    assert ei.value.argument == arg


def test_a_nan_output_is_a_failure():
    rep = _check(BadReturn("nan"))
    assert rep.verdict == "fails" and rep.counterexample is not None


ALL = {
    **{k: v for k, v in CORRECT.items()},
    **IDENTITY_FAILS,
    **{k: v[0] for k, v in HYPOTHESIS_FAILS.items()},
    "flaky": lambda: Attn(defect="flaky"),
    "raises": lambda: Raises(),
    "bad-tuple": lambda: BadReturn("tuple"),
}


@pytest.mark.parametrize("name", list(ALL))
def test_nothing_raises_but_a_typed_error(name):
    """Every module gets a verdict (with T3/T5 reported too), except the two whose extraction is
    broken, which get a typed error."""
    if name in ("raises", "bad-tuple"):
        with pytest.raises(ConnwalkError):
            check_attention(ALL[name](), examples=5, hypotheses=True)
        return
    rep = check_attention(ALL[name](), examples=5, hypotheses=True)
    assert rep.verdict in VERDICTS and rep.table() and rep.as_dict()["verdict"] == rep.verdict
    for r in rep.results:  # T3/T5 are reported exactly where the attention is a walk of this call, on the
        # sweep's draws (the last, repeated shape checks T2 and staleness only)
        sweep = r.index < 5
        assert bool(r.t3) == (sweep and bool(r.hypotheses) and not r.failed_hypotheses() and not r.cross), r


def test_a_counterexample_replays():
    rep = _check(Attn(defect="transpose_out"))
    cx = rep.counterexample
    assert isinstance(cx.draw, Draw) and cx.replay().endswith(f"check_draw(module, {cx.draw!r})")
    again = check_draw(Attn(defect="transpose_out"), eval(repr(cx.draw), {"Draw": Draw}))
    assert any(r.t2.status == "fails" for r in again)


def test_check_draw_names_a_bad_draw():
    with pytest.raises(ParameterError) as ei:
        check_draw(Attn(), "B=1 n=2")
    assert ei.value.argument == "draw"
