r"""The conformance kit's arguments, refused before any draw runs (:mod:`numerics.conformance.kit`).

* :func:`check_counts`: ``examples`` (at most :data:`MAX_EXAMPLES`), ``seed``, ``max_batch``,
  ``max_length``, ``min_length`` (:func:`check_min_length`: at most ``max_length``); :func:`check_progress`; :func:`check_adapter`: ``adapter=`` an :class:`~numerics.conformance.protocol.Adapter`;
  :func:`check_module_data`: a module whose parameters or buffers sit on the ``meta`` device (shapes
  without data) is refused naming ``module``.
* :func:`check_draw_memory`: the largest draw's attention (:func:`draw_bytes`) against the memory budget
  (``$CONNWALK_MEMORY_BUDGET``, :func:`numerics.contracts.validate.memory_budget`) before anything is
  allocated: :class:`~numerics.errors.MemoryBudgetError` naming ``max_length`` with the estimate.
* :func:`validate_draw`: a :class:`~numerics.conformance.protocol.Draw` given to ``check_draw`` (a
  replayed counterexample, or one written by hand) holds what the kit's own draws hold, else a typed
  error naming the field (``draw.pad``, ``draw.scale``, ...): sizes ``≥ 1``; one ``pad`` per batch row,
  each in ``[0, m − 1]`` (every row keeps a real key: padding all ``m`` leaves a softmax over no key,
  ``0/0``); ``m = n`` unless the module is cross-attention; a pad or a causal flag only where the
  module takes one (the kit's own draws never set them for it); ``n`` within the module's context; a finite ``scale`` in
  ``(0, max_scale(dtype)]`` (:func:`max_scale`).
* :func:`caller_signals`: while the kit runs, a signal handler of the caller's (a ``SIGALRM`` timeout,
  a ``SIGTERM`` handler) that raises reaches the caller as its own exception, at once: the kit's
  guards, which turn what a *module* raises into an error naming it (or drop a failing float64 copy,
  or report a T3/T5 check as not computed), never catch it, and the caller's handlers are restored
  afterwards, untouched.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from numerics.conformance.protocol import Adapter, Draw
from numerics.contracts.validate import check_memory
from numerics.errors import (
    ModelError,
    NonFiniteError,
    ParameterError,
    SequenceTooLongError,
    ShapeError,
)

__all__ = [
    "MAX_EXAMPLES",
    "CallerSignal",
    "caller_signals",
    "check_adapter",
    "check_causal",
    "check_counts",
    "check_draw_memory",
    "check_min_length",
    "check_module_data",
    "check_progress",
    "draw_bytes",
    "max_scale",
    "validate_draw",
]

#: the most Hypothesis draws one check runs (``connwalk conform --examples`` has the same bound)
MAX_EXAMPLES = 10_000
#: the largest seed of a :class:`Draw` (``torch.Generator.manual_seed`` takes ``[0, 2**64)``)
SEED_LIMIT = 2**64


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_counts(**values: int) -> None:
    """``examples`` in ``[1, MAX_EXAMPLES]``, ``max_batch`` and ``max_length`` ``≥ 1``, ``seed ≥ 0``
    (each an integer): :class:`~numerics.errors.ParameterError` naming the first that is not."""
    for nm, v in values.items():
        lo = 0 if nm == "seed" else 1
        hi = MAX_EXAMPLES if nm == "examples" else None
        if not _is_int(v) or v < lo or (hi is not None and v > hi):
            rng = f"in [{lo}, {hi}]" if hi is not None else f"≥ {lo}"
            why = " (the kit's bound on the draws of one check)" if hi is not None else ""
            raise ParameterError(f"expected an integer {rng}{why}, got {v!r}", argument=nm)


def check_min_length(min_length: int, max_length: int) -> None:
    """``min_length`` (an integer ``≥ 1``, :func:`check_counts`) at most ``max_length`` (after a
    model's context has capped it): :class:`~numerics.errors.ParameterError` naming ``min_length``."""
    if min_length > max_length:
        raise ParameterError(
            f"the smallest drawn length must not exceed the longest, max_length = {max_length} (capped at the "
            f"module's context where it has one), got {min_length}",
            argument="min_length",
        )


def check_causal(causal, ad: Adapter) -> bool | None:
    """``causal``: None (the adapter's declaration: ``connwalk_causal``, else a drawn flag where the
    module takes one), True (the module runs causal only: every draw causal) or False (no draw causal;
    refused for a module that declares itself causal-only). :class:`~numerics.errors.ParameterError`
    naming ``causal``. Returns the mode the draws follow (True where the adapter declares it)."""
    if causal is not None and not isinstance(causal, bool):
        raise ParameterError(
            f"expected None (the module's own declaration), True (causal-only: every draw causal) or False, got "
            f"{causal!r}",
            argument="causal",
        )
    if causal is False and ad.causal_only:
        raise ParameterError(
            f"{ad.name} declares itself causal-only (connwalk_causal = True): it cannot be run without a causal "
            "mask; leave causal out or pass True",
            argument="causal",
        )
    return True if ad.causal_only else causal


def check_progress(progress) -> None:
    """``progress``: None or a callable taking one line of text (:class:`~numerics.errors.ParameterError`
    naming ``progress``)."""
    if progress is not None and not callable(progress):
        raise ParameterError(
            f"expected None or a callable taking one line of text, got {type(progress).__name__}",
            argument="progress",
        )


def check_adapter(adapter, layers=None) -> None:
    """``adapter=``: None (the kit picks one) or an :class:`Adapter`, which checks the layers it was
    built with (``layers`` is then refused: it would be ignored)."""
    if adapter is not None and not isinstance(adapter, Adapter):
        raise ParameterError(
            f"expected a numerics.conformance.kit.Adapter (or None: the kit picks one), got {type(adapter).__name__}",
            argument="adapter",
        )
    if adapter is not None and layers is not None:
        raise ParameterError(
            "selects the layers of a whole model when the kit builds its adapter; an adapter given as adapter= "
            "checks the layers it was built with (adapter_for(model, layers=...))",
            argument="layers",
        )


def check_module_data(module) -> None:
    """A module (or the module of a model handle) with parameters or buffers on the ``meta`` device
    holds shapes without data: nothing can be run or judged. :class:`~numerics.errors.ModelError`
    naming ``module`` and the first such tensor."""
    mod = module if isinstance(module, torch.nn.Module) else getattr(module, "model", None)
    if not isinstance(mod, torch.nn.Module):
        return
    for nm, t in [*mod.named_parameters(), *mod.named_buffers()]:
        if t.is_meta:
            raise ModelError(
                f"its tensor {nm} is on the meta device: meta tensors carry shapes but no data, so the module "
                "cannot be run (load or materialise its weights first, e.g. module.to_empty(device='cpu') and "
                "load_state_dict)",
                argument="module",
            )


# --------------------------------------------------------------------------- memory
def draw_bytes(max_batch: int, max_length: int, heads: int = 1, layers: int = 1, itemsize: int = 4) -> int:
    """Bytes of the largest draw's attention: the module's scores and probabilities of every checked
    layer (``layers`` × ``(B, H, n, n)`` in the module's dtype, held until the draw is judged) plus
    the float64 reference of one layer (its copy of the attention and of its absolute value)."""
    per = max_batch * heads * max_length * max_length
    return per * (layers * 2 * itemsize + 2 * 8)


def _positive_int(v) -> int | None:
    return v if _is_int(v) and v > 0 else None


def attention_dims(module, ad: Adapter) -> tuple[int, int, int]:
    """``(heads, layers, itemsize)`` where ``module`` / ``ad`` say them, else 1, 1 and the dtype's size
    (so that the estimate is a lower bound)."""
    cfg = getattr(getattr(module, "model", module), "config", None)
    heads = None
    for obj, names in ((module, ("num_heads", "n_heads")), (cfg, ("num_attention_heads", "n_head"))):
        for nm in names:
            heads = heads or _positive_int(getattr(obj, nm, None))
    keep = getattr(ad, "keep", None)
    layers = len(keep) if isinstance(keep, (set, frozenset, list, tuple)) and keep else None
    for obj, nm in ((module, "n_layers"), (cfg, "num_hidden_layers"), (cfg, "n_layer")):
        layers = layers or _positive_int(getattr(obj, nm, None))
    try:
        itemsize = torch.empty((), dtype=ad.dtype).element_size()
    except (TypeError, RuntimeError):
        itemsize = 4
    return heads or 1, layers or 1, itemsize


def check_draw_memory(module, ad: Adapter, batch: int, n: int, m: int | None = None, *, argument: str) -> None:
    """The attention of a draw of ``batch`` rows, ``n`` queries and ``m`` keys (default ``n``) against
    the memory budget, before it is allocated: :class:`~numerics.errors.MemoryBudgetError` naming
    ``argument``, with the estimate and the budget."""
    heads, layers, itemsize = attention_dims(module, ad)
    keys = n if m is None else m
    nbytes = draw_bytes(batch, 1, heads, layers, itemsize) * n * keys
    check_memory(
        argument,
        nbytes,
        f"the largest draw's attention (batch {batch}, {n} queries × {keys} keys, {heads} heads, {layers} layers; "
        f"{nbytes:,} bytes)",
        f"a smaller {argument}" + (" or max_batch" if argument == "max_length" else ""),
    )


# --------------------------------------------------------------------------- a given draw
def max_scale(dtype: torch.dtype) -> float:
    """The largest input scale (the drawn tokens' standard deviation) the kit runs a ``dtype`` module
    on: the fourth root of the dtype's largest finite value (float16 ≈ 16, float32 / bfloat16 ≈ 4.3e9,
    float64 ≈ 1.2e77). Attention scores are products of two projections of the input, so they grow
    as the scale squared; the fourth root leaves the other square root of the range to the weights,
    the sums over the width and the softmax. Above it the module's own arithmetic overflows (scores
    of ``inf``, a softmax of ``inf − inf`` = NaN) whatever the module is: an input the kit refuses,
    not a verdict on the module."""
    try:
        top = torch.finfo(dtype).max
    except TypeError:
        top = torch.finfo(torch.float32).max
    return float(top) ** 0.25


def validate_draw(draw, ad: Adapter, causal: bool | None = None) -> None:
    """Refuse a :class:`Draw` that is not an input of ``ad``'s module (module docstring), naming the
    field (``causal``: the mode of :func:`check_causal`; a causal-only module's draw must be causal):
    :class:`~numerics.errors.ParameterError` (a bad value), ``ShapeError`` (``pad``'s length, ``m``
    against ``n``), ``NonFiniteError`` (a NaN/inf ``scale``), ``SequenceTooLongError`` (``n`` over the
    module's context)."""
    if not isinstance(draw, Draw):
        raise ParameterError(f"expected a numerics.conformance.kit.Draw, got {type(draw).__name__}", argument="draw")
    for f in ("batch", "n", "m"):
        v = getattr(draw, f)
        if not _is_int(v) or v < 1:
            raise ParameterError(f"expected an integer ≥ 1, got {v!r}", argument=f"draw.{f}")
    if not _is_int(draw.seed) or not 0 <= draw.seed < SEED_LIMIT:
        raise ParameterError(f"expected an integer in [0, 2**64), got {draw.seed!r}", argument="draw.seed")
    if not isinstance(draw.causal, bool):
        raise ParameterError(f"expected True or False, got {draw.causal!r}", argument="draw.causal")
    pad = draw.pad
    if not isinstance(pad, tuple) or not all(_is_int(p) for p in pad):
        raise ParameterError(f"expected a tuple of integers, got {pad!r}", argument="draw.pad")
    if len(pad) != draw.batch:
        raise ShapeError(
            f"expected one entry per batch row ({draw.batch}), got {len(pad)}: {list(pad)}", argument="draw.pad"
        )
    bad = [(b, p) for b, p in enumerate(pad) if not 0 <= p <= draw.m - 1]
    if bad:
        b, p = bad[0]
        raise ParameterError(
            f"pad[{b}] = {p}: each row pads 0 to m − 1 = {draw.m - 1} keys (a row keeps at least one real key; "
            "padding all of them leaves a softmax over no key, 0/0)",
            argument="draw.pad",
        )
    s = draw.scale
    if isinstance(s, bool) or not isinstance(s, (int, float)):
        raise ParameterError(f"expected a real number, got {s!r}", argument="draw.scale")
    if not math.isfinite(s):
        raise NonFiniteError(f"expected a finite input scale, got {s!r}", argument="draw.scale")
    dtype, top = ad.dtype, max_scale(ad.dtype)
    if not 0 < s <= top:
        raise ParameterError(
            f"expected a scale (the drawn tokens' standard deviation) in (0, {top:.3g}] for a "
            f"{str(dtype).replace('torch.', '')} module, got {s!r}: larger inputs overflow the module's own "
            "attention scores (inf, then NaN), whatever the module is",
            argument="draw.scale",
        )
    name = getattr(ad, "name", type(ad).__name__)
    if not ad.cross and draw.m != draw.n:
        raise ShapeError(
            f"{name} is self-attention (its keys are its queries): m must equal n = {draw.n}, got {draw.m}",
            argument="draw.m",
        )
    if any(pad) and not ad.takes_mask:
        raise ParameterError(f"{name} takes no key padding mask: the pad would be ignored", argument="draw.pad")
    causal = check_causal(causal, ad)
    if causal and not draw.causal:
        raise ParameterError(
            f"{name} runs causal only (declared: connwalk_causal / causal=True): expected True", argument="draw.causal"
        )
    if draw.causal and (causal is False or not (ad.takes_causal or causal)):
        raise ParameterError(
            f"{name} takes no causal flag (the kit never draws one for it): expected False", argument="draw.causal"
        )
    if ad.max_length is not None and max(draw.n, draw.m) > ad.max_length:
        raise SequenceTooLongError(
            f"{max(draw.n, draw.m)} tokens exceed the module's context of {ad.max_length}", argument="draw.n"
        )


# --------------------------------------------------------------------------- the caller's signals
class CallerSignal(BaseException):
    """What a caller's signal handler raised while the kit ran (``error``): a ``BaseException``, so
    that no guard of the kit (``except Exception``) and no Hypothesis run keeps it; re-raised as
    ``error`` when the kit returns control (:func:`caller_signals`)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def _relay(handler):
    def relay(signum, frame):
        try:
            handler(signum, frame)
        except BaseException as exc:
            raise CallerSignal(exc) from None

    return relay


@contextmanager
def caller_signals() -> Iterator[None]:
    """Run the body with every Python-level signal handler (``SIGALRM``, ``SIGTERM``, ...) wrapped so
    that what it raises reaches the caller unchanged and at once (module docstring); the handlers are
    restored on exit. In a thread other than the main one (where no handler runs) it does nothing."""
    saved: dict = {}
    if threading.current_thread() is threading.main_thread():
        for s in signal.valid_signals():
            try:
                h = signal.getsignal(s)
                if callable(h):
                    signal.signal(s, _relay(h))
                    saved[s] = h
            except (OSError, ValueError, RuntimeError):  # a signal Python may not handle
                continue
    try:
        yield
    except CallerSignal as cs:
        err = cs.error
        raise err.with_traceback(err.__traceback__) from err.__cause__
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
