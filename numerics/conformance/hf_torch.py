r"""A transformers attention module judged through the torch capture, inside its model.

The interface capture (:mod:`numerics.conformance.hf_capture`) reads what a family's attention kernel
received through transformers' attention interface. A class that computes attention its own way (its
own softmax and matmul / einsum, never calling the interface) is seen by the torch-level capture
(:mod:`numerics.conformance.torch_capture`) instead, as is a class whose attention output reaches its
output projection through a gate, norm or nonlinearity: :class:`ModelTorchAdapter` drives the model on
the interface adapter's drawn inputs (:meth:`CaptureAdapter.inputs`: the same token sequences and
padding, the same roots) under the torch capture, and reads the target module's first call with
:func:`~numerics.conformance.torch_adapter.read_run` — its own output, the literal float64 attention of
the observed kernel, the projections located by column matching; where a projection consumes the
kernel's output unchanged, its own output is judged (a class that also adds a residual and a norm after
it, as BERT-style ``…Attention`` wrappers do, is read as its attention sublayer — the interface capture's
reading). A gate between the attention and the
output projection is then judged, not declined: the projection whose output is the module's output is
taken in the natural head layout and T2's identity decides (it fails, with the counterexample, unless
the gate happens to be the identity on the draw).
"""

from __future__ import annotations

import torch

from numerics.conformance.hf_capture import CaptureAdapter, CaptureError
from numerics.conformance.protocol import Adapter, Draw, Extraction
from numerics.conformance.torch_adapter import read_run
from numerics.conformance.torch_capture import TorchCaptureError, observe_call

__all__ = ["ModelTorchAdapter", "STRUCTURAL"]

#: a structural reason of the torch capture's reading → the one line a census row gives for it
STRUCTURAL = (
    (
        "reaches no F.linear output projection unchanged",
        "a gate, norm or nonlinearity between the attention and the output projection",
    ),
    ("are no F.linear output observed before it", "a norm, rotation or mixing on the values"),
)


class ModelTorchAdapter(Adapter):
    """``target`` (an attention module inside ``hf.model``) judged through the torch capture while the
    model runs on ``hf``'s drawn inputs (module docstring)."""

    def __init__(self, hf: CaptureAdapter, target: torch.nn.Module) -> None:
        if not isinstance(hf, CaptureAdapter):
            raise CaptureError(f"expected a CaptureAdapter, got {type(hf).__name__}", argument="hf")
        if not any(m is target for m in hf.model.modules()):
            raise CaptureError(
                f"{type(target).__name__} is not a module of {type(hf.model).__name__}", argument="target"
            )
        self.hf, self.target = hf, target
        self.name = f"{type(target).__name__} in {type(hf.model).__name__} (torch capture)"
        self.dtype = hf.dtype
        self.d_model = hf.d_model
        self.takes_mask = hf.takes_mask
        self.max_length = hf.max_length
        #: a structure the capture read that makes the module no walk (a norm on the values), "" if none seen
        self.structure = ""

    def extract(self, draw: Draw) -> list[Extraction]:
        return [self.hf.over_roots(lambda: self._run(draw))]

    def _run(self, draw: Draw) -> Extraction:
        hf, root = self.hf, self.hf.root
        with torch.no_grad():  # the interface adapter's inputs (and further ones a refusal names)
            run = hf.run_forward(draw, lambda kw: observe_call(root, draw.batch, lambda: root(**kw)))
        if id(self.target) not in run.obs.calls:
            raise CaptureError(
                f"{type(self.target).__name__} is not called in a forward of {type(root).__name__}", argument="module"
            )
        return self._read(run, draw)

    def _read(self, run, draw: Draw) -> Extraction:
        name = type(self.target).__name__
        kernels = [
            kn
            for kn in run.obs.kernels
            if (c := run.obs.calls.get(id(self.target))) is not None and c.start < kn.seq < c.end
        ]
        if not kernels:
            raise TorchCaptureError(
                f"{name} ran without an observed attention kernel (no F.scaled_dot_product_attention, no softmax "
                "consumed by a matmul/einsum, no F.multi_head_attention_forward)",
                argument="module",
            )
        B, n = int(kernels[0].A.shape[0]), int(kernels[0].A.shape[2])
        notes: list = []
        ex = read_run(run, self.target, B, n, name, projection=True, notes=notes)
        self.structure = self.structure or (notes[0] if notes else "")
        kpm = draw.key_padding_mask() if self.takes_mask else None
        m = int(kernels[0].A.shape[3])
        if kpm is not None and tuple(kpm.shape) == (B, m) and m == n and ex.values.shape[1] == n:
            ex.key_mask = ~kpm
        return ex
