"""The conformance kit's bad inputs (issue 36), each refused before the module runs with a typed error
naming the argument: a :class:`Draw` that is no input of the module (``check_draw``), ``examples`` over
the kit's bound, ``max_length`` over the memory budget, ``layers`` on a single module, ``adapter=`` that
is no adapter, a module on the meta device; and a caller's ``SIGALRM`` handler, which reaches the
caller while the kit runs and is restored after it."""

from __future__ import annotations

import signal
from typing import ClassVar

import pytest
import torch

from numerics.conformance.bounds import MAX_EXAMPLES, max_scale
from numerics.conformance.kit import Draw, check_attention, check_draw
from numerics.errors import (
    MemoryBudgetError,
    ModelError,
    NonFiniteError,
    ParameterError,
    SequenceTooLongError,
    ShapeError,
)


def mha(**kw) -> torch.nn.MultiheadAttention:
    torch.manual_seed(0)
    return torch.nn.MultiheadAttention(8, 2, batch_first=True, **kw)  # float32, self-attention, takes a mask


class Ran(BaseException):
    """Raised by :class:`NoDraw` when the kit runs it: the kit must refuse the call before any draw
    (a ``BaseException``, so that nothing of the kit turns it into a verdict)."""


class NoDraw(torch.nn.Module):
    """A module of the ``connwalk_attention`` protocol that must never be run."""

    embed_dim = 8

    def connwalk_attention(self, X, key_padding_mask=None):
        raise Ran("the kit ran a draw")


class NoMask(torch.nn.Module):
    """Plain attention through the protocol without a ``key_padding_mask`` parameter."""

    embed_dim = 8

    def __init__(self):
        super().__init__()
        self.mha = mha()

    def connwalk_attention(self, X):
        from numerics.conformance.adapters import MHAAdapter

        out, A = self.mha(X, X, X, need_weights=True, average_attn_weights=False)
        W_O, W_V, b_V, b_O = MHAAdapter(self.mha)._weights()
        return {"output": out, "A": A, "W_O": W_O, "W_V": W_V, "values": X, "b_V": b_V, "b_O": b_O}


def draw(batch=1, n=3, m=None, pad=None, causal=False, seed=0, scale=1.0) -> Draw:
    return Draw(batch, n, n if m is None else m, (0,) * batch if pad is None else pad, causal, seed, scale)


# each of issue 36's draws (T2 "fails" with a NaN/inf residual, a blame on the module or on A, or a
# pad silently ignored on today's main), and the error and field that now refuse it
BAD_DRAWS = {
    "every key padded": (draw(pad=(3,)), ParameterError, "draw.pad"),
    "pad larger than m": (draw(pad=(5,)), ParameterError, "draw.pad"),
    "scale NaN": (draw(scale=float("nan")), NonFiniteError, "draw.scale"),
    "scale inf": (draw(scale=float("inf")), NonFiniteError, "draw.scale"),
    "scale 1e30 (float32 scores overflow)": (draw(scale=1e30), ParameterError, "draw.scale"),
    "m != n on self-attention": (draw(m=4), ShapeError, "draw.m"),
    "more pads than batch rows": (draw(pad=(0, 1)), ShapeError, "draw.pad"),
    "a zero pad for a row that does not exist": (draw(pad=(0, 0)), ShapeError, "draw.pad"),
    "fewer pads than batch rows": (draw(batch=2, pad=(1,)), ShapeError, "draw.pad"),
    "a negative batch": (draw(batch=-1, pad=()), ParameterError, "draw.batch"),
    "a negative length": (draw(n=-2), ParameterError, "draw.n"),
    "a pad of -1": (draw(pad=(-1,)), ParameterError, "draw.pad"),
    "batch 0": (draw(batch=0), ParameterError, "draw.batch"),
    "n = 0": (draw(n=0), ParameterError, "draw.n"),
    "causal on a module drawn without a causal mask": (draw(n=3, m=2, causal=True), ParameterError, "draw.causal"),
}


@pytest.mark.parametrize("case", sorted(BAD_DRAWS))
def test_check_draw_refuses_a_draw_that_is_no_input_of_the_module(case):
    d, error, field = BAD_DRAWS[case]
    module = mha(kdim=6, vdim=6) if "causal" in case else mha()  # cross-attention (kdim): no causal draws
    with pytest.raises(error) as ei:
        check_draw(module, d)
    assert ei.value.argument == field and str(ei.value).startswith(f"{field}: ")


def test_check_draw_refuses_a_pad_the_module_cannot_take():
    """A module without a key padding mask: the pad would be ignored (on today's main the kit handed
    the mask to the extraction as if the module had applied it)."""
    with pytest.raises(ParameterError) as ei:
        check_draw(NoMask(), draw(batch=2, pad=(0, 1)))
    assert ei.value.argument == "draw.pad" and "takes no key padding mask" in str(ei.value)


def test_check_draw_refuses_a_draw_longer_than_the_context():
    from numerics.conformance.adapters import MHAAdapter

    ad = MHAAdapter(mha())
    ad.max_length = 4
    with pytest.raises(SequenceTooLongError) as ei:
        check_draw(ad.mha, draw(n=5), adapter=ad)
    assert ei.value.argument == "draw.n"


def test_the_largest_scale_is_the_fourth_root_of_the_range_and_runs():
    """The bound refuses only what overflows: a draw at float32's bound conforms (decided), one above
    it is refused; float64 takes far larger inputs."""
    top = max_scale(torch.float32)
    assert top == pytest.approx(torch.finfo(torch.float32).max ** 0.25) and 4e9 < top < 5e9
    assert max_scale(torch.float16) == pytest.approx(65504**0.25)
    assert max_scale(torch.float64) > 1e76
    assert all(r.t2.status == "holds" for r in check_draw(mha(), draw(batch=2, pad=(0, 2), scale=top)))
    with pytest.raises(ParameterError):
        check_draw(mha(), draw(scale=top * 1.01))


def test_examples_over_the_bound_are_refused_before_any_draw():
    """On today's main ``examples=10**9`` runs (a billion draws: the module below raises at the first)."""
    with pytest.raises(ParameterError) as ei:
        check_attention(NoDraw(), examples=10**9)
    assert ei.value.argument == "examples" and str(MAX_EXAMPLES) in str(ei.value)


def test_max_length_over_the_memory_budget_is_refused_before_any_draw(monkeypatch):
    """``max_length=10**7`` failed in the allocator (or ran, on a small draw); the largest draw's
    attention (2 × 10¹⁴ entries) is held against the budget first."""
    monkeypatch.setenv("CONNWALK_MEMORY_BUDGET", "1G")
    with pytest.raises(MemoryBudgetError) as ei:
        check_attention(NoDraw(), max_length=10**7, examples=1)
    msg = str(ei.value)
    assert ei.value.argument == "max_length" and "bytes" in msg and "memory budget of 1 GiB" in msg, msg


def test_layers_on_a_single_module_are_refused():
    with pytest.raises(ParameterError) as ei:
        check_attention(mha(), layers=[99], examples=1)
    assert ei.value.argument == "layers"


def test_an_adapter_that_is_no_adapter_is_refused():
    with pytest.raises(ParameterError) as ei:
        check_attention(mha(), adapter="x", examples=1)
    assert ei.value.argument == "adapter"


def test_a_module_on_the_meta_device_is_refused():
    with pytest.raises(ModelError) as ei:
        check_attention(torch.nn.MultiheadAttention(8, 2, device="meta"), examples=1)
    assert ei.value.argument == "module" and "meta device" in str(ei.value)


class Alarm(Exception):
    """The caller's own timeout exception."""


class SignalsOnce(torch.nn.Module):
    """MultiheadAttention through the protocol that sends its process ``SIGALRM`` on its ``at``-th run
    (counted over its float64 copy's runs too), as a caller's timer would fire in the middle."""

    embed_dim = 8
    calls: ClassVar[list[int]] = [0]

    def __init__(self, at: int):
        super().__init__()
        self.inner, self.at = NoMask(), at

    def connwalk_attention(self, X, key_padding_mask=None):
        SignalsOnce.calls[0] += 1
        if SignalsOnce.calls[0] == self.at:
            signal.raise_signal(signal.SIGALRM)
        return self.inner.connwalk_attention(X)


@pytest.mark.parametrize("at", [1, 2, 6])  # the module's first run, its float64 copy's first, a later draw
def test_a_callers_alarm_reaches_the_caller_and_its_handler_is_restored(at):
    """The caller's SIGALRM handler raises its own exception; on today's main the kit caught it as the
    module's error (ExtractionError / a shape error naming the module), as a failing float64 copy, or as
    a T3/T5 check "not computed", and ran on."""
    SignalsOnce.calls[0] = 0
    seen = []

    def handler(signum, frame):
        seen.append(signum)
        raise Alarm("the caller's timeout")

    old = signal.signal(signal.SIGALRM, handler)
    try:
        with pytest.raises(Alarm, match="the caller's timeout"):
            check_attention(SignalsOnce(at), examples=5)
        assert seen == [signal.SIGALRM]
        assert signal.getsignal(signal.SIGALRM) is handler
    finally:
        signal.signal(signal.SIGALRM, old)
