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

__all__ = ["judge", "one_line"]


def one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:200] if msg else ''}".rstrip(": ")


def judge(model, module, row, *, examples: int, seed: int, max_length: int) -> None:
    """Set ``row`` (a :class:`~numerics.census.run.CensusRow`): status, reason, hypotheses (module docstring)."""
    from numerics.conformance.hf_capture import CaptureAdapter, CaptureError
    from numerics.conformance.torch_capture import TorchCaptureError

    name = f"{row.cls} in {type(model).__name__}"
    try:
        try:
            rep = _checked(
                model, module, lambda: CaptureAdapter(model, [module], name=name), examples, seed, max_length
            )
            why = ""
        except CaptureError as exc:
            why = _torch_worth(str(exc))
            if not why:
                raise
            # the interface capture does not see this class's attention (its own softmax and matmul) or its
            # output projection (a gate, norm or nonlinearity before it): the torch-level capture, in the model
            from numerics.conformance.hf_torch import ModelTorchAdapter

            try:
                rep = _checked(
                    model,
                    module,
                    lambda: ModelTorchAdapter(CaptureAdapter(model, [module], name=name), module),
                    examples,
                    seed,
                    max_length,
                )
            except (CaptureError, TorchCaptureError) as exc2:
                raise CaptureError(
                    f"{exc}; the torch capture: {str(exc2).split(': ', 1)[-1]}", argument="module"
                ) from None
        row.status, row.reason, row.hypothesis_failures, row.decided_by = status_of(rep)
        if why and row.status == FAILS_:
            row.reason = f"{why} — {row.reason}"
        row.hypotheses = hypotheses_of(rep)
        row.t2_ratio = max((r.t2.residual / r.t2.bound for r in rep.results if r.t2.bound > 0), default=math.nan)
    except CaptureError as exc:
        row.reason = str(exc).split(": ", 1)[-1]
    except Exception as exc:  # the kit judges; whatever escapes is stated, never raised
        row.reason = "the kit could not run it: " + one_line(exc)


#: interface-capture reasons the torch-level capture can go past → what a failing row then says first
_TORCH_WORTH = (
    ("made no call through transformers' attention interface", "its own attention (seen by the torch capture)"),
    (
        "reaches no linear output projection unchanged",
        "a gate, norm or nonlinearity between the attention and the output projection",
    ),
)


def _torch_worth(reason: str) -> str:
    return next((why for key, why in _TORCH_WORTH if key in reason), "")


def _checked(model, module, make, examples: int, seed: int, max_length: int):
    """The kit's report on ``module`` through the adapter ``make()`` builds; a kernel without float64
    (some MoE / fused kernels: "did not run") is run in the model's float32 instead."""
    import torch

    from numerics.conformance.hf_capture import CaptureError
    from numerics.conformance.kit import check_attention

    ad = make()
    try:
        return check_attention(module, adapter=ad, examples=examples, seed=seed, max_length=max_length, max_batch=2)
    except CaptureError as exc:
        if "did not run" not in str(exc) or ad.dtype != torch.float64:
            raise
    model.float()  # the module's float32 run
    try:
        ad = make()
        return check_attention(module, adapter=ad, examples=examples, seed=seed, max_length=max_length, max_batch=2)
    finally:
        model.double()
