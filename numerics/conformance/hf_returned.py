r"""The census's second way in (:mod:`numerics.conformance.hf_capture`): a Hugging Face attention module
that computes its attention its own way (not through the attention interface: Falcon, ALiBi models,
…) but returns its probabilities when the model runs with ``output_attentions=True``.

The returned ``A`` ``(B, H, n, m)`` is not trusted as given: the output projection's input must be,
column by column, ``A^h · v`` for a column ``v`` of a linear projection's output inside the module
(to the rounding of an ``m``-term sum), which finds each head's value rows and output columns whatever the
layout; the kit then judges the identity with the factors read from those projections. Returned
weights that were not the ones used (another call's, a pre-dropout copy of a training run) match no
column and the module is declined with that reason.
"""

from __future__ import annotations

import torch

from numerics.conformance.protocol import Extraction

__all__ = ["returned_weights_extraction", "affine_of"]

F64 = torch.float64


def affine_of(p) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """``(W (out, in), b | None)`` of an ``nn.Linear`` or a GPT-style ``Conv1D`` (weight ``in × out``)."""
    w = getattr(p, "weight", None)
    if not isinstance(w, torch.Tensor) or w.ndim != 2:
        return None
    if isinstance(p, torch.nn.Linear):
        return w.detach(), None if p.bias is None else p.bias.detach()
    if type(p).__name__ == "Conv1D" and hasattr(p, "nf"):
        return w.detach().T, None if p.bias is None else p.bias.detach()
    return None


def _probabilities(out, B: int | None = None):
    """The first 4-D tensor in a module's output that looks like attention: nonnegative, rows ≤ 1."""
    items = out if isinstance(out, (tuple, list)) else (out,)
    for t in items:
        if isinstance(t, torch.Tensor) and t.ndim == 4 and t.is_floating_point() and t.numel():
            if B is not None and t.shape[0] != B:
                continue
            t64 = t.detach().to(F64)
            if bool((t64 >= 0).all()) and bool((t64.sum(-1) <= 1 + 1e-3).all()):
                return t
    return None


def returned_weights_extraction(target, calls: dict, kpm, label: str) -> Extraction | None:
    """The :class:`Extraction` of ``target``'s first call from its returned probabilities and the
    hooked projections (``calls``: module id → recorded inputs / outputs), or None when the output
    holds no probabilities or they do not explain the output projection's input."""
    tc = calls.get(id(target))
    if tc is None or "all" not in tc.outputs:
        return None
    A = _probabilities(tc.outputs["all"])
    if A is None:
        return None
    B, H, n, m = A.shape
    lin: list = []
    for mod in target.modules():
        c = calls.get(id(mod))
        if affine_of(mod) is not None and c is not None and "x" in c.inputs and "y" in c.outputs:
            lin.append((mod, c))
    A64 = A.detach().to(F64)
    eps = torch.finfo(A.dtype).eps
    for vmod, vc in lin:
        P = vc.outputs["y"]
        if not isinstance(P, torch.Tensor) or P.ndim != 3 or P.shape[:2] != (B, m):
            continue
        AP = torch.einsum("bhnm,bmc->hbnc", A64, P.detach().to(F64)).reshape(H, B * n, -1)  # (H, B n, C)
        for omod, oc in lin:
            Xo = oc.inputs["x"]
            if omod is vmod or not isinstance(Xo, torch.Tensor) or Xo.ndim != 3 or Xo.shape[:2] != (B, n):
                continue
            K = Xo.shape[-1]
            if K % H:
                continue
            Q = Xo.detach().to(F64).reshape(B * n, K)
            # column k of the projection's input is A^h · P[:, c] for one (h, c)
            scale = Q.abs().amax(0)
            if bool((scale == 0).any()):
                continue
            d = (Q.T[None, :, None, :] - AP.transpose(1, 2)[:, None]).abs().amax(-1)  # (H, K, C)
            dist, cidx = d.min(-1)  # per head, per input column
            tol = 8 * (m + 1) * eps * (scale + P.detach().to(F64).abs().max())
            ok = dist <= tol  # (H, K): heads whose A^h·P explains input column k
            if not bool(ok.any(0).all()):
                continue
            natural = torch.arange(K) // (K // H)  # ties (identical heads on a tiny draw): the natural layout
            head = torch.where(ok[natural, torch.arange(K)], natural, ok.to(torch.int8).argmax(0))
            col = cidx[head, torch.arange(K)]
            per = [torch.nonzero(head == h).reshape(-1) for h in range(H)]
            if any(p.numel() != K // H for p in per):
                continue
            Wv, bv = affine_of(vmod)  # type: ignore[misc]
            Wo, bo = affine_of(omod)  # type: ignore[misc]
            W_V = torch.stack([Wv[col[p]] for p in per])  # (H, d_h, d_v)
            b_V = None if bv is None else torch.stack([bv[col[p]] for p in per])
            W_O = torch.stack([Wo[:, p] for p in per])  # (H, d_out, d_h)
            X = vc.inputs["x"]
            self_att = m == n and X.shape[1] == n
            return Extraction(
                oc.outputs["y"].reshape(B, n, -1),
                A,
                W_O,
                W_V,
                X.reshape(B, m, -1),
                b_V,
                bo,
                None if (kpm is None or not self_att) else ~kpm,
                torch.float32 if A.dtype == F64 else A.dtype,  # eager kernels take the softmax in float32
                layer=label,
            )
    return None
