r"""Observe, never substitute: the conformance kit (:mod:`numerics.conformance.kit`) for any PyTorch attention
module, read beneath the libraries by a ``torch.overrides.TorchFunctionMode`` while the module runs its
*own* forward on a drawn input (issue 37, items 1–3).

**What is observed** (:class:`Observer`, one run): every ``F.linear`` call (input, weight, bias, output),
every 1×1 ``F.conv1d`` / ``F.conv2d`` (stride 1, one group) as the linear map of each position it is, and
an inference ``F.batch_norm`` of a linear's output folded into it (one more linear call);
every ``F.scaled_dot_product_attention`` call (q, k, v, ``attn_mask``, ``is_causal``, ``scale``,
``enable_gqa``, ``dropout_p`` and the output it returned); every softmax (``torch.softmax``,
``F.softmax``, ``Tensor.softmax``: its input scores, ``dim``, output) and the first ``matmul`` / ``@`` /
``bmm`` / ``einsum`` that consumes those probabilities (``P @ V``: the probabilities it used, ``V``, its
output) — the probabilities are followed through every call made on them (a cast, a dropout, a
reshape, a head-mixing convolution); and ``F.multi_head_attention_forward`` (``nn.MultiheadAttention``,
``nn.TransformerEncoderLayer.self_attn``): inside a mode's ``__torch_function__`` the mode is popped and
this function re-dispatches to it on entry, so its nested calls cannot be seen; its arguments are read
instead (inputs, ``in_proj`` / ``out_proj`` weights, masks, heads) and its returned output kept. A mode
being active also turns torch's native MHA / encoder-layer fast path off (``has_torch_function`` is
true), so the Python path runs. Module calls are timed by forward hooks, so each observation is placed
inside the module that made it.

**The literal A** (:func:`literal_sdpa`, :func:`literal_softmax`) is computed in float64, independently,
from what the kernel received: ``softmax(q kᵀ·scale + mask)`` (causal: the top-left lower triangle; GQA:
query head ``h`` reads kv head ``h // g``) or the softmax of the observed scores along the observed axis.
Where the probabilities reached ``P @ V`` changed by something other than a copy, cast or reshape
(post-softmax talking heads, dropout left on), the probabilities the values were weighted with are
judged as observed (T2's hypotheses then say whether they are a walk's).

**The factors** are located by column matching (:func:`numerics.conformance.hf_capture.match_columns`, one
implementation): ``W_V`` from the ``F.linear`` before the kernel whose output columns are the kernel's
``v`` (a fused ``qkv`` linear, interleaved heads, GQA: any column order), ``W_O`` from the ``F.linear``
after it whose input columns are the kernel's output. When none is, but the module's own output *is*
the output of a linear after the kernel that reads as many columns (a gate, a norm or a nonlinearity
between the kernel and its output projection), that projection is ``W_O`` in the natural head layout and
the identity decides: the module's own output is judged. The values are the tokens the value projection reads. What cannot be
located raises :class:`TorchCaptureError` naming ``module``.

``F.linear``'s arguments are read by name as well as by position. A vector over the features added in
place to a linear's output (``qkv += bias``) is folded into that call's bias; any other in-place change
of the output leaves the call stale (not used as a projection). A kernel output ``(B, H, n, d_h)``
multiplied by a number, a parameter or buffer of the module, or a tensor computed from them alone, that
is constant over batch and tokens (a per-head scale) is a fixed diagonal on the values: it is folded
into ``W_V`` (:attr:`Kernel.scale`). Two kernels' outputs over the same ``v`` added or subtracted, each
scaled per head at most (differential attention), are one kernel whose ``A`` is that combination.
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from numerics.conformance.hf_capture import CaptureError

__all__ = [
    "observe_call",
    "TorchCaptureError",
    "Kernel",
    "LinearCall",
    "Observer",
    "observe",
    "literal_sdpa",
    "literal_softmax",
]

F64 = torch.float64
_SOFTMAX = {torch.softmax, F.softmax, torch.Tensor.softmax}
_MATMUL = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.Tensor.bmm}
_MHA_SIGNATURE = inspect.signature(F.multi_head_attention_forward)
_IADD = {torch.Tensor.__iadd__, torch.Tensor.add_}
_SUB = {torch.sub, torch.Tensor.sub, torch.Tensor.__sub__}
_ADD = {torch.add, torch.Tensor.add, torch.Tensor.__add__}
_MUL = {
    torch.mul,
    torch.Tensor.mul,
    torch.Tensor.__mul__,
    torch.Tensor.__rmul__,
    torch.Tensor.mul_,
    torch.Tensor.__imul__,
}


def _version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # an inference-mode tensor keeps no version counter
        return 0


class TorchCaptureError(CaptureError):
    """The torch capture saw the module run but cannot read it as ``W_O·A·(W_V x + b_V) + b_O``: no
    attention kernel, several, no value projection feeding ``v``, no output projection reading the
    kernel's output, or a layout other than ``(batch, tokens, features)``; ``argument`` is ``module``."""


@dataclass
class LinearCall:
    """One ``F.linear``: ``x`` input, ``W`` weight ``(out, in)``, ``b`` bias, ``y`` output; ``seq`` its place."""

    seq: int
    x: torch.Tensor
    W: torch.Tensor
    b: torch.Tensor | None
    y: torch.Tensor
    version: int = 0  # ``y._version`` as read: another in-place change of ``y`` makes this call stale

    def fresh(self) -> bool:
        """``y`` is still what ``x Wᵀ + b`` made (no in-place change since, other than a folded bias)."""
        return _version(self.y) == self.version


@dataclass
class Kernel:
    """One observed attention kernel, normalised to ``(B, H, n, m)``: ``A`` float64 (literal or observed),
    ``v`` ``(B, Hkv, m, d_h)``, ``out`` ``(B, H, n, d_h)``; ``how`` names what was seen. An
    ``F.multi_head_attention_forward`` call carries its factors (``factors``) and output (``returned``)."""

    seq: int
    how: str
    A: torch.Tensor
    dtype: torch.dtype
    v: torch.Tensor | None = None
    out: torch.Tensor | None = None
    factors: tuple | None = None
    returned: torch.Tensor | None = None
    scale: torch.Tensor | None = None  # ``(H, d_h)`` float64: a fixed per-head/channel factor on ``out``


@dataclass
class _Softmax:
    seq: int
    scores: torch.Tensor
    dim: int
    probs: torch.Tensor
    dtype: torch.dtype | None = None


@dataclass
class _Call:
    module: torch.nn.Module
    start: int
    end: int = -1
    output: Any = None


# --------------------------------------------------------------------------- the literal attention
def literal_sdpa(q, k, attn_mask=None, is_causal=False, scale=None, enable_gqa=False) -> torch.Tensor:
    """``softmax(q kᵀ·scale + mask)`` in float64 as ``F.scaled_dot_product_attention`` defines it: ``q``
    ``(…, H, n, E)``, ``k`` ``(…, Hkv, m, E)`` (``enable_gqa``: query head ``h`` reads kv head ``h // g``);
    a bool mask keeps True, a float mask is added; ``is_causal``: the top-left lower triangle. A row
    with no key left is zero (no weight on any key)."""
    q64, k64 = q.detach().to(F64), k.detach().to(F64)
    if enable_gqa and q64.ndim >= 3 and k64.shape[-3] != q64.shape[-3]:
        k64 = k64.repeat_interleave(q64.shape[-3] // k64.shape[-3], dim=-3)
    s = q64 @ k64.transpose(-1, -2) * (q64.shape[-1] ** -0.5 if scale is None else float(scale))
    n, m = s.shape[-2], s.shape[-1]
    if is_causal:
        s = s.masked_fill(~torch.ones(n, m, dtype=torch.bool).tril(), -math.inf)
    if attn_mask is not None:
        am = attn_mask.detach()
        s = s.masked_fill(~am, -math.inf) if am.dtype == torch.bool else s + am.to(F64)
    return _softmax64(s, -1)


def literal_softmax(scores: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The softmax of the observed ``scores`` along ``dim``, in float64; where the kernel's softmax call
    names a precision of its own coarser than the scores' (``F.softmax(s, dim, dtype=torch.float32)`` on
    float64 scores, as in a float64 shadow of a module that pins its softmax to float32), at that
    precision: the walk's weights are then only as exact as the kernel declares them, and a float64
    literal would blame the module for the rounding it chose."""
    s = scores.detach()
    if dtype is not None and dtype.is_floating_point and torch.finfo(dtype).eps > torch.finfo(s.dtype).eps:
        return torch.softmax(s.to(dtype), dim).to(F64)
    return _softmax64(s.to(F64), dim)


def _softmax64(s: torch.Tensor, dim: int) -> torch.Tensor:
    empty = torch.isneginf(s).all(dim, keepdim=True)
    return torch.softmax(s.masked_fill(empty, 0.0), dim).masked_fill(empty, 0.0)


# --------------------------------------------------------------------------- the observer
_CONV = {F.conv1d, F.conv2d}


def _pointwise(func, args, kwargs) -> bool:
    """A conv1d / conv2d that maps each position linearly: kernel 1, stride 1, no padding or dilation, 1 group."""
    a = dict(zip(("input", "weight", "bias", "stride", "padding", "dilation", "groups"), args), **kwargs)
    x, W = a.get("input"), a.get("weight")
    if not isinstance(x, torch.Tensor) or not isinstance(W, torch.Tensor) or x.ndim != W.ndim:
        return False
    return (
        all(int(k) == 1 for k in W.shape[2:])
        and _each(a.get("stride", 1), 1)
        and _each(a.get("padding", 0), 0)
        and _each(a.get("dilation", 1), 1)
        and a.get("groups", 1) == 1
    )


def _each(v, want: int) -> bool:
    """A stride / padding / dilation (int, tuple, or a padding mode: ``"same"`` is none for a kernel of 1)."""
    if isinstance(v, (str, int)):
        return v in ("valid", "same") if isinstance(v, str) else v == want
    return all(int(e) == want for e in v)


def _tokens(t: torch.Tensor) -> torch.Tensor:  # (B, C, …) as (B, positions, C), row-major
    return t.flatten(2).transpose(1, 2)


def tensors_in(obj):
    """Every tensor in ``obj`` (nested lists, tuples and dicts), in order."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_in(o)


class Observer(TorchFunctionMode):
    """The mode (module docstring); ``batch`` is the drawn batch size (heads merged into a leading
    ``B·H`` axis are split by it). After the run: ``linears``, ``kernels``, ``calls`` (module → its first
    call)."""

    def __init__(self, batch: int) -> None:
        super().__init__()
        self.batch = batch
        self.seq = 0
        self.linears: list[LinearCall] = []
        self.kernels: list[Kernel] = []
        self.softmaxes: list[_Softmax] = []
        self.calls: dict[int, _Call] = {}
        self.taint: dict[int, int] = {}  # id(tensor) → index of the softmax it derives from
        self.keep: list[torch.Tensor] = []  # tainted tensors held, so that their ids stay theirs
        self.state: set[int] = set()  # ids of the run module's parameters and buffers (its fixed state)
        self.kout: dict[int, Kernel] = {}  # id(a kernel's (B, H, n, d_h) output, held) → that kernel
        self.lin_out: dict[int, int] = {}  # id(linear output) → its index in ``linears`` (held there)

    def tick(self) -> int:  # the next sequence number: the order of observations and module calls
        self.seq += 1
        return self.seq

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.multi_head_attention_forward:
            out = func(*args, **kwargs)
            self._mha(args, kwargs, out)
            return out
        if func in _IADD and args and id(args[0]) in self.lin_out:
            return self._bias_add(func, args, kwargs)
        out = func(*args, **kwargs)
        if func is F.linear:
            a = dict(zip(("input", "weight", "bias"), args), **kwargs)  # timm's EVA: F.linear(x, weight=…, bias=…)
            lc = LinearCall(self.tick(), a["input"], a["weight"], a.get("bias"), out, _version(out))
            self.lin_out[id(out)] = len(self.linears)
            self.linears.append(lc)
            if self.taint:  # a linear of the probabilities (talking heads) changes them: followed
                self._spread(args, kwargs, out)
        elif func in _CONV and _pointwise(func, args, kwargs):  # a 1×1 convolution: a linear map of each token
            a = dict(zip(("input", "weight", "bias"), args), **kwargs)
            W, x = a["weight"].flatten(1), _tokens(a["input"])
            self.linears.append(LinearCall(self.tick(), x, W, a.get("bias"), _tokens(out), _version(out)))
            if self.taint:
                self._spread(args, kwargs, out)
        elif func is F.batch_norm and self.linears:
            self._batch_norm(args, kwargs, out)
            if self.taint:
                self._spread(args, kwargs, out)
        elif func is F.scaled_dot_product_attention:
            self._sdpa(args, kwargs, out)
        elif func in _SOFTMAX:
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            dt = kwargs.get("dtype") or next((a for a in args[2:] if isinstance(a, torch.dtype)), None)
            if isinstance(dim, int) and isinstance(out, torch.Tensor):
                self.softmaxes.append(_Softmax(self.tick(), args[0], dim, out, dt))
                self._mark(out, len(self.softmaxes) - 1)
        elif (func in _MUL and self._scaled(args, out)) or (
            func in _SUB | _ADD and self._combined(func, args, kwargs, out)
        ):
            pass  # a kernel's output scaled by a fixed factor, or two kernels' outputs combined: folded
        elif func in _MATMUL or func is torch.einsum:
            if not self._consumer(func, args, out):
                self._spread(args, kwargs, out)
        elif self.taint:
            self._spread(args, kwargs, out)
        self._derive(func, args, kwargs, out)
        return out

    def _batch_norm(self, args, kwargs, out) -> None:
        """An inference batch norm (running statistics) of the last linear's output, in any shape: a
        per-channel affine map, so the two are one linear map ``diag(s)·W``, observed as one more call."""
        names = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
        a = dict(zip(names, args), **kwargs)
        x, mean, var, lc = a["input"], a.get("running_mean"), a.get("running_var"), self.linears[-1]
        if a.get("training") or mean is None or var is None or not isinstance(out, torch.Tensor):
            return
        src = lc.y._base if lc.y._base is not None else lc.y  # a convolution's output is read through a view
        same = x.untyped_storage().data_ptr() == src.untyped_storage().data_ptr() and x.numel() == src.numel()
        if not same or x.shape[1] != lc.W.shape[0] or not lc.fresh():
            return
        s = torch.rsqrt(var.detach() + a.get("eps", 1e-5))
        if a.get("weight") is not None:
            s = s * a["weight"].detach()
        shift = -mean.detach() * s + (0 if a.get("bias") is None else a["bias"].detach())
        W = lc.W.detach() * s[:, None]
        b = shift if lc.b is None else lc.b.detach() * s + shift
        y = out if out.ndim == 2 else _tokens(out)
        self.linears.append(LinearCall(self.tick(), lc.x, W, b, y, _version(out)))

    def _derive(self, func, args, kwargs, out) -> None:
        """What is computed from the module's parameters and buffers alone (``head_gate.sigmoid()``) is
        fixed state too (held, so that its id stays its own)."""
        ts = list(tensors_in(args[:1] if func is torch.Tensor.type_as else (args, kwargs)))  # type_as(q): q's dtype
        if ts and all(id(t) in self.state for t in ts):
            for t in tensors_in(out):
                self.state.add(id(t))
                self.keep.append(t)

    def _bias_add(self, func, args, kwargs):
        """``y += b`` on a linear's output ``y`` (timm's EVA with ``qkv_bias_separate``): a vector over
        ``y``'s last axis is folded into that call's bias; any other in-place change leaves it stale."""
        lc = self.linears[self.lin_out[id(args[0])]]
        other = args[1] if len(args) > 1 else kwargs.get("other")
        was_fresh = lc.fresh()
        out = func(*args, **kwargs)
        vec = (
            isinstance(other, torch.Tensor) and other.numel() == lc.y.shape[-1] and other.shape[-1:] == lc.y.shape[-1:]
        )
        if vec and was_fresh and kwargs.get("alpha", 1) == 1 and out is lc.y:
            add = other.detach().reshape(-1).clone()
            lc.b = add if lc.b is None else lc.b.detach() + add
            lc.version = _version(lc.y)
        return out

    def _kernel_out(self, out, k: Kernel | None = None) -> None:
        if isinstance(out, torch.Tensor) and out.ndim == 4:
            self.kout[id(out)] = self.kernels[-1] if k is None else k
            self.keep.append(out)

    def _scaled(self, args, out) -> bool:
        """``out = o * s`` on a kernel's ``(B, H, n, d_h)`` output ``o`` with ``s`` a number, a parameter or
        buffer of the module or computed from them alone, constant over batch and tokens (open_clip's ``head_scale``):
        a fixed diagonal on each head's values, folded into ``W_V``. A factor that reads the input (a gate)
        is not folded."""
        if len(args) != 2 or not isinstance(out, torch.Tensor):
            return False
        for o, sc in (args, args[::-1]):
            if isinstance(sc, (int, float)) and not isinstance(sc, bool):
                sc = torch.tensor(float(sc), dtype=F64)  # a number: fixed
            elif id(sc) not in self.state:
                continue
            if id(o) not in self.kout or sc.ndim > 4 or out.shape != o.shape:
                continue
            s4 = sc.detach().reshape((1,) * (4 - sc.ndim) + tuple(sc.shape))
            if s4.shape[0] != 1 or s4.shape[2] != 1:
                return False  # varies with the batch row or the token: no fixed factor
            k = self.kout[id(o)]
            if k.out is None or tuple(k.out.shape) != tuple(o.shape):
                return False
            f = s4.to(F64).expand(1, o.shape[1], 1, o.shape[3])[0, :, 0, :]
            k.scale = f if k.scale is None else k.scale * f
            k.out = out
            self._kernel_out(out, k)
            return True
        return False

    def _combined(self, func, args, kwargs, out) -> bool:
        """``o1 ± o2`` of two kernels' ``(B, H, n, d_h)`` outputs over the same ``v``, each scaled per head
        at most (timm's fused ``DiffAttention``: ``attn1 - λ·attn2``): one kernel whose ``A`` is the
        combination the values were weighted with, ``s1·A1 ± s2·A2`` (T2's hypotheses judge it)."""
        if len(args) != 2 or kwargs or not isinstance(out, torch.Tensor):
            return False
        k1, k2 = (self.kout.get(id(a)) if isinstance(a, torch.Tensor) else None for a in args)
        if k1 is None or k2 is None or k1 is k2 or k1.v is None or k2.v is None or k1.factors or k2.factors:
            return False
        if k1.v.shape != k2.v.shape or not torch.equal(k1.v, k2.v) or k1.A.shape != k2.A.shape:
            return False
        sign = -1.0 if func in _SUB else 1.0
        w = []
        for k in (k1, k2):
            s = torch.ones(k.A.shape[1], 1, dtype=F64) if k.scale is None else k.scale
            if not bool((s == s[:, :1]).all()):
                return False  # a factor per value channel: no weight on the keys
            w.append(s[:, 0].reshape(1, -1, 1, 1))
        A = w[0] * k1.A + sign * w[1] * k2.A
        how = f"two kernels combined ({k1.how} {'-' if sign < 0 else '+'} {k2.how}): the weights used, as combined"
        self.kernels = [k for k in self.kernels if k is not k1 and k is not k2]
        self.kernels.append(Kernel(self.tick(), how, A, k1.dtype, k1.v, self._heads(out)))
        self._kernel_out(out)
        return True

    def _mark(self, t: torch.Tensor, k: int) -> None:
        self.taint[id(t)] = k
        self.keep.append(t)

    def _spread(self, args, kwargs, out) -> None:
        src = {self.taint[id(t)] for t in tensors_in((args, kwargs)) if id(t) in self.taint}
        if len(src) == 1:
            k = src.pop()
            for t in tensors_in(out):
                self._mark(t, k)

    # ---- heads: a leading B·H axis split, a missing head axis added
    def _heads(self, t: torch.Tensor) -> torch.Tensor | None:
        B = self.batch
        if t.ndim == 4:  # (batch, heads, ·, ·); a batch folded with other axes (MobileViT's patch pixels) is its own
            return t
        if t.ndim == 3 and t.shape[0] == B:
            return t[:, None]
        if t.ndim == 3 and t.shape[0] % B == 0:
            return t.reshape(B, t.shape[0] // B, *t.shape[1:])
        if t.ndim == 2:
            return t[None, None] if B == 1 else None
        return None

    def _sdpa(self, args, kwargs, out) -> None:
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        a = dict(zip(names, args), **kwargs)
        q, k, v = a["query"], a["key"], a["value"]
        A = literal_sdpa(q, k, a.get("attn_mask"), bool(a.get("is_causal")), a.get("scale"), bool(a.get("enable_gqa")))
        how = "F.scaled_dot_product_attention"
        if float(a.get("dropout_p") or 0.0):
            how += f" (dropout_p={a['dropout_p']} passed to the kernel)"
        A4, v4, o4 = self._heads(A), self._heads(v), self._heads(out)
        if A4 is not None and v4 is not None and o4 is not None:
            self.kernels.append(Kernel(self.tick(), how, A4, q.dtype, v4, o4))
            self._kernel_out(out)

    def _consumer(self, func, args, out) -> bool:
        """``P' @ V`` with ``P'`` derived from an observed softmax: a kernel; False if this is none."""
        ops = list(args[1:]) if func is torch.einsum else list(args)
        if func is torch.einsum and len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
        if len(ops) != 2 or not all(isinstance(o, torch.Tensor) for o in ops):
            return False
        # the probabilities derive from the newer softmax (values may carry an older one's: a MoE router's
        # weights mixed into the residual stream, followed through the next projections)
        t0, t1 = self.taint.get(id(ops[0]), -1), self.taint.get(id(ops[1]), -1)
        if t0 == t1:
            return False
        if t1 > t0:  # V @ Pᵀ (tokens on the last axis): read as P @ Vᵀ, transposed back
            if func is torch.einsum or ops[0].ndim < 2 or ops[1].ndim < 2:
                return False
            src, P, V, O = ops[1], ops[1].transpose(-1, -2), ops[0].transpose(-1, -2), out.transpose(-1, -2)
            sm = self.softmaxes[self.taint[id(src)]]  # the transposed probabilities themselves (not a kernel)
            if P.shape != sm.probs.shape or sm.dim not in (-1, sm.probs.ndim - 1):
                return False
        else:
            src = ops[0]
            P, V, O = ops[0], ops[1], out
        if func is torch.einsum:
            got = _einsum_layout(args[0], P, V, O)
            if got is None:
                return False
            P, V, O = got
        if P.ndim < 2 or V.ndim < 2 or P.shape[-1] != V.shape[-2]:
            return False
        sm = self.softmaxes[self.taint[id(src)]]
        same = sm.probs.numel() == P.numel() and bool(torch.equal(sm.probs.detach().reshape(P.shape).to(P.dtype), P))
        if same:
            A, how = literal_softmax(sm.scores, sm.dim, sm.dtype).reshape(P.shape), "softmax → P @ V"
        else:
            A, how = P.detach().to(F64), "softmax → (changed) → P @ V: the probabilities used, as observed"
        A4, v4, o4 = self._heads(A), self._heads(V), self._heads(O)
        if A4 is None or v4 is None or o4 is None:
            return False
        self.kernels.append(Kernel(self.tick(), how, A4, P.dtype, v4, o4))
        self._kernel_out(out)
        return True

    def _mha(self, args, kwargs, out) -> None:
        a = _MHA_SIGNATURE.bind(*args, **kwargs).arguments
        seq = self.tick()
        bad = [nm for nm in ("bias_k", "bias_v", "static_k", "static_v") if a.get(nm) is not None]
        if a.get("add_zero_attn"):
            bad.append("add_zero_attn")
        if bad:
            raise TorchCaptureError(
                f"multi_head_attention_forward was called with {', '.join(bad)}: learned or static keys/values "
                "that are no token (torch.nn.MultiheadAttention itself is checked by its own adapter)",
                argument="module",
            )
        H, E = int(a["num_heads"]), int(a["embed_dim_to_check"])
        dh = E // H
        if a.get("use_separate_proj_weight"):
            Wq, Wk, Wv = a["q_proj_weight"], a["k_proj_weight"], a["v_proj_weight"]
        else:
            Wq, Wk, Wv = a["in_proj_weight"].chunk(3)
        bias = a.get("in_proj_bias")
        bq, bk, bv = (None, None, None) if bias is None else bias.chunk(3)
        # (L, N, E) → (N, H, L, dh): torch's own head split (head h: rows h·dh … of each projection)
        xq, xk, xv = (t.detach().to(F64).transpose(0, 1) for t in (a["query"], a["key"], a["value"]))

        def heads(x, W, b):
            y = x @ W.detach().to(F64).T + (0 if b is None else b.detach().to(F64))
            return y.reshape(y.shape[0], y.shape[1], H, -1).transpose(1, 2)

        q, k = heads(xq, Wq, bq), heads(xk, Wk, bk)
        N, L, S = q.shape[0], q.shape[2], k.shape[2]
        s = torch.zeros(N, H, L, S, dtype=F64)
        am, kpm = a.get("attn_mask"), a.get("key_padding_mask")
        if am is not None:
            am = am.detach().reshape(-1, H, L, S) if am.ndim == 3 else am.detach()
            s = s.masked_fill(am, -math.inf) if am.dtype == torch.bool else s + am.to(F64)
        if kpm is not None:
            kpm = kpm.detach()[:, None, None, :]
            s = s.masked_fill(kpm, -math.inf) if kpm.dtype == torch.bool else s + kpm.to(F64)
        A = _softmax64(q @ k.transpose(-1, -2) * dh**-0.5 + s, -1)
        W_V = Wv.detach().reshape(H, dh, -1)
        b_V = None if bv is None else bv.detach().reshape(H, dh)
        Wo, bo = a["out_proj_weight"].detach(), a.get("out_proj_bias")
        W_O = Wo.reshape(Wo.shape[0], H, dh).permute(1, 0, 2)
        values = a["value"].detach().transpose(0, 1)
        ret = out[0] if isinstance(out, (tuple, list)) else out
        self.kernels.append(
            Kernel(seq, "F.multi_head_attention_forward (its arguments read)", A, a["query"].dtype,
                   factors=(W_O, W_V, b_V, None if bo is None else bo.detach(), values), returned=ret)
        )  # fmt: skip


def _einsum_layout(eq, P, V, O):
    """``P``, ``V``, ``O`` of a two-operand einsum permuted to ``(batch…, i, j)``, ``(batch…, j, d)``,
    ``(batch…, i, d)`` (``P``'s last label contracted; a batch label ``V`` lacks is broadcast); None when
    the equation is not of that form."""
    if not isinstance(eq, str) or "..." in eq or "->" not in eq:
        return None
    lhs, lo = eq.replace(" ", "").split("->")
    parts = lhs.split(",")
    if len(parts) != 2:
        return None
    lp, lv = parts
    if len(lp) < 2 or not re.fullmatch(r"[a-zA-Z]+", lp + lv + lo):
        return None
    i, j = lp[-2], lp[-1]
    d = [c for c in lv if c not in lp]
    if j not in lv or j in lo or len(d) != 1 or i in lv:
        return None
    batch = lp[:-2]
    if any(c not in lo for c in batch) or sorted(lo) != sorted(batch + i + d[0]):
        return None
    vb = "".join(c for c in batch if c in lv)
    if any(c not in batch + j + d[0] for c in lv):
        return None
    Vp = torch.einsum(f"{lv}->{vb}{j}{d[0]}", V)
    for pos, c in enumerate(batch):
        if c not in lv:
            Vp = Vp.unsqueeze(pos)
    return P, Vp, torch.einsum(f"{lo}->{batch}{i}{d[0]}", O)


@dataclass
class Run:
    """One observed run: the :class:`Observer`, the module's returned output, and the calls by module."""

    obs: Observer
    output: Any
    paths: dict[int, str] = field(default_factory=dict)


def observe(module: torch.nn.Module, *inputs, **kwargs) -> Run:
    """Run ``module(*inputs, **kwargs)`` under an :class:`Observer` (batch: the first input's first
    axis), with forward hooks placing each observation inside the module that made it."""
    return observe_call(module, int(inputs[0].shape[0]), lambda: module(*inputs, **kwargs))


def observe_call(module: torch.nn.Module, batch: int, fn) -> Run:
    """:func:`observe` of ``fn()`` (a forward of ``module`` on inputs of batch size ``batch``, such as a
    model's keyword inputs)."""
    obs = Observer(batch)
    obs.state = {id(t) for t in (*module.parameters(), *module.buffers())}
    paths = {id(m): nm for nm, m in module.named_modules()}
    handles = []

    def pre(mod, _args):
        if id(mod) not in obs.calls:
            obs.calls[id(mod)] = _Call(mod, obs.tick())

    def post(mod, _args, out):
        c = obs.calls.get(id(mod))
        if c is not None and c.end < 0:
            c.end, c.output = obs.tick(), out

    for m in module.modules():
        handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    try:
        with obs:
            out = fn()
    finally:
        for h in handles:
            h.remove()
    return Run(obs, out, paths)
