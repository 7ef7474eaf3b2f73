r"""One census row judged: the kit on an attention class inside its tiny model (:func:`judge`).

The interface capture (:class:`~numerics.conformance.hf_capture.CaptureAdapter`) first; where it cannot
see the class's attention (a class computing its own softmax and matmul) or its output projection (a gate,
norm or nonlinearity between them), the torch-level capture inside the same model
(:class:`~numerics.conformance.hf_torch.ModelTorchAdapter`), on the same drawn inputs. A structural
non-walk is then a verdict: T2's identity fails, and the row says why first, in one line. A kernel
without float64 (some MoE / fused kernels) runs in the model's float32.
"""

from __future__ import annotations

import math

from numerics.census.report import FAILS_, hypotheses_of, status_of

__all__ = ["judge", "report_of", "fill_row", "one_line", "census_instance"]


def one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:200] if msg else ''}".rstrip(": ")


def report_of(model, module, *, examples: int, seed: int, max_length: int, progress=None):
    """``(report, why)``: the kit's report on ``module`` inside ``model`` (module docstring) and, where the
    torch capture judged it, the structural line a failing row gives first ("" through the interface);
    :class:`~numerics.conformance.hf_capture.CaptureError` when neither capture can read it (its reason,
    then the torch capture's)."""
    from numerics.conformance.hf_capture import CaptureAdapter, CaptureError

    name = f"{type(module).__name__} in {type(model).__name__}"
    kw = {"examples": examples, "seed": seed, "max_length": max_length, "progress": progress}
    try:
        return _checked(model, module, lambda: CaptureAdapter(model, [module], name=name), **kw), ""
    except CaptureError as exc:
        why = _torch_worth(str(exc))
        if not why:
            raise
        # the interface capture does not see this class's attention (its own softmax and matmul) or its
        # output projection (a gate, norm or nonlinearity before it): the torch-level capture, in the model
        from numerics.conformance.hf_torch import ModelTorchAdapter
        from numerics.conformance.torch_capture import TorchCaptureError

        made: list = []

        def make():
            made.append(ModelTorchAdapter(CaptureAdapter(model, [module], name=name), module))
            return made[-1]

        try:
            rep = _checked(model, module, make, **kw)
            return rep, next((ad.structure for ad in made if ad.structure), why)
        except (CaptureError, TorchCaptureError) as exc2:
            raise CaptureError(f"{exc}; the torch capture: {str(exc2).split(': ', 1)[-1]}", argument="module") from None


def judge(model, module, row, *, examples: int, seed: int, max_length: int) -> None:
    """Set ``row`` (a :class:`~numerics.census.run.CensusRow`): status, reason, hypotheses (module docstring)."""
    from numerics.conformance.hf_capture import CaptureError

    try:
        rep, why = report_of(model, module, examples=examples, seed=seed, max_length=max_length)
        fill_row(row, rep, why)
    except CaptureError as exc:
        row.reason = str(exc).split(": ", 1)[-1]
    except Exception as exc:  # the kit judges; whatever escapes is stated, never raised
        row.reason = "the kit could not run it: " + one_line(exc)


def fill_row(row, rep, why: str = "") -> None:
    """``row``'s status, reason, hypotheses and worst residual/bound from the kit's report ``rep``; ``why``
    (a structure the capture read) first in a failing row's reason."""
    row.status, row.reason, row.hypothesis_failures, row.decided_by = status_of(rep)
    if why and row.status == FAILS_:
        row.reason = f"{why} — {row.reason}"
    row.hypotheses = hypotheses_of(rep)
    row.t2_ratio = max((r.t2.residual / r.t2.bound for r in rep.results if r.t2.bound > 0), default=math.nan)


#: interface-capture reasons the torch-level capture can go past → what a failing row then says first
_TORCH_WORTH = (
    ("made no call through transformers' attention interface", "its own attention (seen by the torch capture)"),
    (
        "reaches no linear output projection unchanged",
        "a gate, norm or nonlinearity between the attention and the output projection",
    ),
    ("are no linear projection's output", "a norm, rotation or mixing on the values"),
)


def _torch_worth(reason: str) -> str:
    return next((why for key, why in _TORCH_WORTH if key in reason), "")


def _checked(model, module, make, *, examples: int, seed: int, max_length: int, progress=None):
    """The kit's report on ``module`` through the adapter ``make()`` builds; a kernel without float64
    (some MoE / fused kernels: "did not run") is run in the model's float32 instead."""
    import torch

    from numerics.conformance.hf_capture import CaptureError
    from numerics.conformance.kit import check_attention

    kw = {"examples": examples, "seed": seed, "max_length": max_length, "max_batch": 2, "progress": progress}
    ad = make()
    try:
        return check_attention(module, adapter=ad, **kw)
    except CaptureError as exc:
        if "did not run" not in str(exc) or ad.dtype != torch.float64:
            raise
    model.float()  # the module's float32 run
    try:
        return check_attention(module, adapter=make(), **kw)
    finally:
        model.double()


def census_instance(model_type: str, cls: str, *, seed: int = 0):
    """``(model, module)``: the first instance of attention class ``cls`` in the census's tiny float64
    model of ``model_type`` (built as the census builds it: the base model, then as a decoder with
    cross-attention), so that one census row is reproduced alone (``connwalk conform census:TYPE:Class``);
    :class:`~numerics.errors.ModelError` naming ``model_type`` or ``cls`` otherwise."""
    import torch

    from numerics.census.config import build_tiny, known_model_types
    from numerics.errors import ConnwalkError, ModelError

    known_model_types([model_type])
    notes = []
    for cross in (False, True):
        try:
            model = build_tiny(model_type, dtype=torch.float64, cross=cross, seed=seed)
        except Exception as exc:
            if not cross:  # the base model's build error says why; a family without cross-attention is no news
                notes.append(str(exc).split(": ", 1)[-1] if isinstance(exc, ConnwalkError) else one_line(exc))
            continue
        inst = next((m for m in model.modules() if type(m).__name__ == cls), None)
        if inst is not None:
            return model, inst
    why = f" ({notes[0]})" if notes else ""
    raise ModelError(f"no instance of {cls} in the tiny model of {model_type}{why}", argument="cls")
