r"""Capture through transformers' own attention interface: the conformance kit (:mod:`numerics.conformance.kit`)
for every Hugging Face model whose attention modules call ``ALL_ATTENTION_FUNCTIONS``.

**The capture observes, never substitutes.** Inside :func:`capturing`, every kernel transformers'
attention interface hands a module — a key's (``"sdpa"``, any other that runs here) or the module's
own default, its family's ``eager_attention_forward`` — is wrapped, not replaced: it runs unchanged
and the wrapper records what it received (query, key, value, mask, ``scaling``, ``softcap``,
``s_aux`` / ``sinks``, ``position_bias``, sdpa's ``is_causal``) and returned. The record's ``A`` is the
literal softmax of those inputs, computed independently in float64 (:func:`capture_attention`'s
formula: a sink column dropped after the softmax, bool masks True = attend), unless the kernel returned
weights that certify its output as the average of the received values with those weights
(:func:`_certificate`: a float32 softmax of a float64 model, a consistent temperature, a sink's
sub-stochastic rows, a softmax over the wrong axis) — then ``A`` is the weights the values were observed to
be averaged with, as the torch capture reads them, and T2's hypotheses judge whether those are a walk's; ``values`` the received value states (after the grouped-query repeat);
``output`` the kernel's own output. The output projection's input is that output, so the module's own
output is judged against the walk of ``A``: a defective kernel fails T2's identity. The literal kernel
is also registered as ``"connwalk_capture"`` (:func:`register`).

**The factors** are read from the module's parameters, never fitted: the value projection is the
``nn.Linear`` / ``Conv1D`` inside the attention module whose output columns *are* the captured value
states (matched column by column, so fused ``qkv`` layouts, interleaved heads and GQA need no table),
the output projection the one whose input columns are the captured attention output (none: ``W_O``
is the identity when the module returns the attention output itself); else :class:`CaptureError`
says why (the census then reads the class with :mod:`numerics.conformance.hf_torch`). :class:`CaptureAdapter`
drives a model (or a smaller ``PreTrainedModel`` holding the targets) on drawn inputs.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any

import torch

from numerics.conformance.hf_inputs import amend, describe_inputs, draw_inputs
from numerics.conformance.hf_returned import affine_of, returned_weights_extraction
from numerics.conformance.protocol import Adapter, Draw, EvalMode, Extraction, KernelDefect, dtype_of
from numerics.errors import UnsupportedArchitectureError
from numerics.tolerance import eps

__all__ = [
    "CAPTURE",
    "CaptureError",
    "CaptureRecord",
    "CaptureAdapter",
    "capture_attention",
    "capturing",
    "register",
    "match_columns",
    "is_attention_class",
    "read_extraction",
    "run_captured",
]

CAPTURE = "connwalk_capture"
F64 = torch.float64


class CaptureError(UnsupportedArchitectureError):
    """The module cannot be read as a walk through the capture: it does not call the attention
    interface, its eager kernel is not softmax attention, its values or output projection are not
    plain linear maps of the captured states, or the record is not of this call."""


@dataclass
class CaptureRecord:
    """One call of the interface: ``probs`` ``(B, H, n, m)`` (after masking, before dropout; the
    weights the output used), ``values`` ``(B, H, m, d_h)`` (after the kv repeat), ``output``
    ``(B, n, H, d_h)`` (what the function returned), ``compute_dtype`` of the softmax, ``note``."""

    module: Any
    probs: torch.Tensor
    values: torch.Tensor
    output: torch.Tensor
    compute_dtype: torch.dtype
    note: str = ""


#: records of the calls made inside :func:`capturing`, in call order
_RECORDS: list[CaptureRecord] = []
_ACTIVE = [False]


def _literal(module, query, key, value, attention_mask, scaling, softcap, position_bias, sink, causal=False):
    B, H, n, dh = query.shape
    Hkv = key.shape[1]
    if Hkv < 1 or H % Hkv or value.shape[1] != Hkv:
        raise CaptureError(
            f"query has {H} heads, key {Hkv}, value {value.shape[1]}: not a grouped-query layout", argument="module"
        )
    g = H // Hkv
    k, v = key.repeat_interleave(g, dim=1), value.repeat_interleave(g, dim=1)
    ct = torch.promote_types(query.dtype, torch.float32)
    s = torch.matmul(query.to(ct), k.to(ct).transpose(-1, -2)) * (dh**-0.5 if scaling is None else float(scaling))
    if softcap:
        s = torch.tanh(s / softcap) * softcap
    if position_bias is not None:
        s = s + position_bias.to(ct)
    if attention_mask is not None:
        m = attention_mask[..., : k.shape[-2]]
        s = s.masked_fill(~m, torch.finfo(ct).min) if m.dtype == torch.bool else s + m.to(ct)
    elif causal:  # torch's is_causal: the upper-left triangle
        s = s.masked_fill(~torch.ones(n, k.shape[-2], dtype=torch.bool).tril(), torch.finfo(ct).min)
    if sink is not None:
        col = sink.to(ct).reshape(1, -1, 1, 1).expand(B, H, n, 1)
        logits = torch.cat([s, col], dim=-1)
        logits = logits - logits.amax(-1, keepdim=True)
        probs = torch.softmax(logits, dim=-1)[..., :-1]
    else:
        probs = torch.softmax(s, dim=-1)
    return probs.to(v.dtype), v, ct


def _sink(kwargs):
    sink = kwargs.get("s_aux")
    return kwargs.get("sinks") if sink is None else sink


def capture_attention(
    module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, softcap=None, **kwargs
):
    """The eager attention, literally (module docstring). Returns ``(output (B, n, H, d_h), probs)``."""
    probs, v, ct = _literal(
        module, query, key, value, attention_mask, scaling, softcap, kwargs.get("position_bias"), _sink(kwargs)
    )
    used = torch.nn.functional.dropout(probs, p=float(dropout or 0.0), training=bool(module.training))
    return torch.matmul(used, v).transpose(1, 2).contiguous(), probs


#: the slack of the comparison of a kernel's returned weights with the literal A (see :func:`_observe`)
RETURNED_SLACK = 8

_EAGER = ("scaling", "dropout")


def _is_sdpa(kernel) -> bool:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return kernel is sdpa_attention_forward


def _observe(kernel, module, query, key, value, mask, args, kwargs, result) -> None:
    """Record one call of ``kernel``: the literal A in float64 from what it received, the received
    value states (after the kv repeat) and the kernel's own output."""
    named = dict(zip(_EAGER, args)) | kwargs
    causal = False
    if _is_sdpa(kernel):  # sdpa_attention_forward's own rule for a missing mask
        flag = named.get("is_causal")
        flag = getattr(module, "is_causal", True) if flag is None else flag
        causal = bool(query.shape[2] > 1 and mask is None and flag)
    q, k, v64 = (t.detach().to(F64) for t in (query, key, value))
    pb, sink = named.get("position_bias"), _sink(named)
    probs, v64, _ = _literal(
        module,
        q,
        k,
        v64,
        mask,
        named.get("scaling"),
        named.get("softcap"),
        None if pb is None else pb.detach().to(F64),
        None if sink is None else sink.detach().to(F64),
        causal,
    )
    out = result[0] if isinstance(result, (tuple, list)) else result
    if not isinstance(out, torch.Tensor):
        raise CaptureError(f"{type(module).__name__}'s attention kernel returned no tensor", argument="module")
    ct = torch.promote_types(query.dtype, torch.float32)
    w = result[1] if isinstance(result, (tuple, list)) and len(result) > 1 else None
    if isinstance(w, torch.Tensor) and w.shape == probs.shape and w.is_floating_point():
        w = w.detach()
        if eps(ct) < eps(torch.float32) and torch.equal(w, w.float().to(w.dtype)):
            # the weights it returned show the kernel's softmax ran in float32: whichever A is judged (those
            # weights, or the literal A when they certify nothing, e.g. a sink applied to the output as a
            # scale), the module's attention is of that precision
            ct = torch.float32
        cert = _certificate(w, v64, out.detach(), mask)
        if cert is not None:
            probs = cert
    _RECORDS.append(CaptureRecord(module, probs, v64.to(value.dtype), out.detach(), ct))


def _certificate(w, v64, out, mask):
    """The weights ``w`` a kernel returned (in float64), when they certify its
    output as their average of the received values: finite, nonnegative, zero where the received mask
    masks, and the output ``w·V`` at the output's rounding (``RETURNED_SLACK·(m+1)·eps``). Their row sums
    are not required here: whether they are a walk's weights (rows summing to one) is T2's hypothesis,
    judged on them by the kit. None otherwise (the literal A of the inputs is judged then)."""
    m = w.shape[-1]
    w64 = w.to(F64)
    if not bool(torch.isfinite(w64).all()) or bool((w64 < 0).any()):
        return None
    if mask is not None:
        mk = mask[..., :m]
        off = ~mk if mk.dtype == torch.bool else ~torch.isfinite(mk) | (mk <= torch.finfo(mk.dtype).min / 2)
        if bool((w64 * off).abs().amax() > 0):
            return None
    o64 = out.to(F64)
    ref, scale = torch.matmul(w64, v64).transpose(1, 2), torch.matmul(w64.abs(), v64.abs()).transpose(1, 2)
    if o64.shape != ref.shape or bool(((o64 - ref).abs() > RETURNED_SLACK * (m + 1) * eps(out.dtype) * scale).any()):
        return None
    return w64


def _observer(kernel):
    """``kernel`` wrapped: it runs unchanged, and each call inside :func:`capturing` is recorded."""
    if kernel is None or getattr(kernel, "_connwalk_observer", False):
        return kernel

    @functools.wraps(kernel)
    def observed(module, query, key, value, attention_mask=None, *args, **kwargs):
        result = kernel(module, query, key, value, attention_mask, *args, **kwargs)
        if _ACTIVE[0]:
            _observe(kernel, module, query, key, value, attention_mask, args, kwargs, result)
        return result

    observed._connwalk_observer = True
    return observed


def register() -> None:
    """Register :data:`CAPTURE` in transformers' attention and mask interfaces (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(CAPTURE, capture_attention)
    AttentionMaskInterface.register(CAPTURE, ALL_MASK_ATTENTION_FUNCTIONS["eager"])


@contextlib.contextmanager
def capturing():
    """Record the attention-interface calls made inside (the list is cleared on entry and yielded):
    every kernel the interface hands out — a key's (``"sdpa"``, …) or the module's own default (its
    family's ``eager_attention_forward``) — is wrapped, never replaced, until exit."""
    from transformers import AttentionInterface

    register()
    get_interface, getitem = AttentionInterface.get_interface, AttentionInterface.__getitem__

    def observed_interface(self, attn_implementation, default):
        return _observer(get_interface(self, attn_implementation, default))

    def observed_item(self, key):
        return _observer(getitem(self, key))

    _RECORDS.clear()
    AttentionInterface.get_interface = observed_interface
    AttentionInterface.__getitem__ = observed_item
    _ACTIVE[0] = True
    try:
        yield _RECORDS
    finally:
        _ACTIVE[0] = False
        AttentionInterface.get_interface = get_interface
        if "__getitem__" in AttentionInterface.__dict__ and AttentionInterface.__dict__["__getitem__"] is observed_item:
            del AttentionInterface.__getitem__
        else:  # pragma: no cover - the class defined its own
            AttentionInterface.__getitem__ = getitem


# --------------------------------------------------------------------------- reading the factors
def match_columns(P: torch.Tensor, V: torch.Tensor, *, distinct: bool = True) -> torch.Tensor | None:
    """Indices ``idx`` with ``P[:, idx[k]] == V[:, k]`` for every column ``k`` of ``V`` (to the
    rounding of a copy or a cast: 4 eps of the column's scale), pairwise distinct when ``distinct``
    (repeated columns of ``V``, as a grouped-query repeat makes, may share one of ``P`` otherwise);
    None when a column of ``V`` is no column of ``P``."""
    if P.shape[0] != V.shape[0] or (distinct and P.shape[1] < V.shape[1]):
        return None
    P64, V64 = P.detach().to(F64), V.detach().to(F64)
    scale = V64.abs().amax(dim=0)  # (K,)
    if bool((scale == 0).any()):
        return None  # a zero column matches anything: no evidence
    d = (V64[:, :, None] - P64[:, None, :]).abs().amax(dim=0)  # (K, C): max |difference| over rows
    dist, idx = d.min(dim=1)
    eps = torch.finfo(P.dtype).eps
    if not bool((dist <= 4 * eps * scale).all()) or (distinct and len(set(idx.tolist())) != idx.numel()):
        return None
    return idx


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a == b`` to the rounding of a copy or a cast (4 eps of the scale)."""
    if a.shape != b.shape:
        return False
    a64, b64 = a.detach().to(F64), b.detach().to(F64)
    eps = torch.finfo(a.dtype).eps
    return bool((a64 - b64).abs().max() <= 4 * eps * (b64.abs().max() + 1e-300))


def is_attention_class(cls) -> bool:
    """The census's rule: an ``nn.Module`` subclass, not a whole ``PreTrainedModel``, whose name ends
    with ``Attention`` (``BertSelfAttention``, ``LlamaAttention``, ``WhisperAttention``, …)."""
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module) and cls.__name__.endswith("Attention")):
        return False
    return not any(b.__name__ == "PreTrainedModel" for b in cls.__mro__)


@dataclass
class _Call:
    inputs: dict
    outputs: dict


def _first(x):
    return x[0] if isinstance(x, (tuple, list)) else x


#: refusals that say a root model does not reach the targets (the next, smaller root is tried)
NEXT_ROOT = ("made no call", "did not run", "no input the kit", "is not called in a forward")


class CaptureAdapter(Adapter):
    """A Hugging Face model driven on drawn inputs with :func:`capture_attention` as its eager
    kernel: one :class:`Extraction` per captured attention module (``targets``: only these
    modules, in order; default every outermost attention-class module that called the interface).
    The model run is ``model`` itself, or, when the targets make no call on its inputs (a vision tower
    of a multimodal model, a decoder stack), the next smaller ``PreTrainedModel`` inside it holding
    every target, tried outermost first. Key padding is drawn for token models whose targets are not
    causal (not for encoder-decoder models nor for a whole-model run without targets). ``double()``:
    a float64 twin for a shadow run."""

    def __init__(self, model, targets=None, *, name: str | None = None) -> None:
        if not isinstance(model, torch.nn.Module) or not hasattr(getattr(model, "config", None), "model_type"):
            raise CaptureError(f"expected a Hugging Face model, got {type(model).__name__}", argument="model")
        self.model = model
        self.targets = list(targets) if targets is not None else None
        self.roots = self._roots()
        self.root = self.roots[0]
        self.name = name or f"{type(model).__name__} (attention interface capture)"
        self.dtype = dtype_of(model)
        self.main_input = getattr(self.root, "main_input_name", "input_ids")
        cfg = self.root.config
        causal = any(getattr(t, "is_causal", False) for t in (self.targets or []))
        self.takes_mask = (
            self.main_input == "input_ids" and not causal and not getattr(cfg, "is_encoder_decoder", False)
        )
        if self.targets is None:
            self.takes_mask = False
        self.d_model = int(getattr(cfg, "hidden_size", 0) or 0)
        self.max_length = None
        self._drawn: dict = {}

    def _roots(self) -> list:
        """The models that may drive the targets: ``model``, then each smaller ``PreTrainedModel``
        inside it holding every target (a vision tower, a decoder stack), outermost first."""
        from transformers import PreTrainedModel

        if not self.targets:
            return [self.model]
        out = [self.model]
        for _, sub in self.model.named_modules():
            if isinstance(sub, PreTrainedModel) and sub is not self.model:
                mods = {id(m) for m in sub.modules()}
                if all(id(t) in mods for t in self.targets):
                    out.append(sub)
        return out

    def double(self) -> CaptureAdapter:
        """A float64 twin (a deep copy of the model in float64), for a shadow run."""
        import copy

        model = copy.deepcopy(self.model).double()
        index = {id(m): k for k, m in enumerate(self.model.modules())}
        mods = list(model.modules())
        targets = None if self.targets is None else [mods[index[id(t)]] for t in self.targets]
        return CaptureAdapter(model, targets, name=self.name)

    # ------------------------------------------------------------------ inputs
    def inputs(self, draw: Draw, also=()) -> dict:
        """The keyword inputs of one forward of ``root`` on ``draw``
        (:func:`numerics.conformance.hf_inputs.draw_inputs`: the family's signature and configuration)."""
        try:
            return draw_inputs(self.root, self.main_input, draw, self.dtype, takes_mask=self.takes_mask, also=also)
        except KeyError:
            raise CaptureError(
                f"{type(self.root).__name__}'s main input {self.main_input!r} is no input the kit can draw",
                argument="model",
            ) from None

    def run_drawn(self, draw: Draw, call):
        """``call(kw)`` on the inputs drawn for ``draw``; a refusal naming a further input the forward's
        signature has is answered by drawing it too, from the same seed (:func:`~numerics.conformance.
        hf_inputs.amend`, at most three times). The inputs used are kept for :meth:`describe_inputs`;
        an error of the last try (or one that names nothing to add) is raised as it is."""
        kw = self.inputs(draw)
        for tries in range(4):
            try:
                out = call(kw)
                break
            except (CaptureError, KernelDefect):
                raise
            except Exception as exc:
                more = amend(self.root, self.main_input, kw, exc, draw, self.dtype, takes_mask=self.takes_mask)
                if tries == 3 or more is None:
                    raise
                kw = more
        self._drawn[draw] = kw
        return out

    def describe_inputs(self, draw: Draw) -> str:
        """The inputs drawn beside the tokens for ``draw`` (from its seed), by shape."""
        return describe_inputs(self._drawn.get(draw, {}), self.main_input)

    # ------------------------------------------------------------------ extraction
    def extract(self, draw: Draw) -> list[Extraction]:
        if self.targets is None or len(self.roots) == 1:
            return self._extract(draw)
        return self.over_roots(lambda: self._extract(draw))

    def over_roots(self, attempt):
        """``attempt()`` with each root as :attr:`root`, outermost first, until one answers (kept first); a
        refusal of :data:`NEXT_ROOT` tries the next (the first is raised if none answers), others raise."""
        first: Exception | None = None
        for k, root in enumerate(self.roots):
            self.root, self.main_input = root, getattr(root, "main_input_name", "input_ids")
            try:
                got = attempt()
            except CaptureError as exc:
                first = first or exc
                if any(s in str(exc) for s in NEXT_ROOT):
                    continue
                raise
            self.roots = self.roots[k:]  # this one reaches the targets: keep it first
            return got
        assert first is not None
        raise first

    def run_forward(self, draw: Draw, call):
        """:meth:`run_drawn`; the forward's own error is a :class:`CaptureError`: the root did not run."""
        try:
            return self.run_drawn(draw, call)
        except (CaptureError, KernelDefect):  # a defect of the module's own kernel is a verdict
            raise
        except Exception as exc:
            raise CaptureError(
                f"{type(self.root).__name__} did not run on the drawn inputs ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:160] if str(exc) else ''})",
                argument="model",
            ) from None

    def _extract(self, draw: Draw) -> list[Extraction]:
        root = self.root
        watch = self.targets if self.targets is not None else None
        records, calls = self.run_forward(draw, lambda kw: run_captured(root, lambda: root(**kw), watch))
        kpm = draw.key_padding_mask() if self.takes_mask else None
        if watch is None:
            order: list = []
            for r in records:
                outer = self._outer(r.module)
                if all(outer is not o for o in order):
                    order.append(outer)
            return [read_extraction(m, records, calls, kpm, str(k)) for k, m in enumerate(order)]
        return [read_extraction(t, records, calls, kpm, str(k) if len(watch) > 1 else "") for k, t in enumerate(watch)]

    def _outer(self, module):
        """The outermost module holding ``module`` whose class is an attention class (itself if none)."""
        if not hasattr(self, "_parents"):
            self._parents = {id(c): p for p in self.root.modules() for c in p.children()}
        best, cur = module, module
        while id(cur) in self._parents:
            cur = self._parents[id(cur)]
            if is_attention_class(type(cur)):
                best = cur
        return best


def run_captured(root, fn, watch=None):
    """Run ``fn()`` (a forward of ``root``) in eval mode under :func:`capturing`, with the first call's
    input and output of every linear projection and attention-class module inside ``root`` (and of
    ``watch``) hooked. Returns ``(records, calls)``."""
    calls: dict[int, _Call] = {}
    handles = []

    def pre(mod, args, kwargs):
        c = calls.setdefault(id(mod), _Call({}, {}))
        if "x" not in c.inputs:
            c.inputs["x"] = _first(args) if args else next(iter(kwargs.values()), None)

    def post(mod, args, kwargs, out):
        c = calls.setdefault(id(mod), _Call({}, {}))
        if "y" not in c.outputs:
            c.outputs["y"], c.outputs["all"] = _first(out), out

    for mod in root.modules():
        if affine_of(mod) is not None or is_attention_class(type(mod)) or any(mod is t for t in watch or ()):
            handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
            handles.append(mod.register_forward_hook(post, with_kwargs=True))
    try:
        with EvalMode(root), torch.no_grad(), capturing() as recs:
            fn()
            records = list(recs)
    finally:
        for h in handles:
            h.remove()
    return records, calls


def read_extraction(target, records, calls, kpm, label: str = "") -> Extraction:
    """The :class:`Extraction` of ``target``'s first call from the interface ``records`` and the
    hooked projections (``calls``, :func:`run_captured`); ``kpm`` the key padding (True = padded)."""
    inside = {id(m): m for m in target.modules()}
    mine = [r for r in records if id(r.module) in inside]
    cls = type(target).__name__
    if not mine:
        got = returned_weights_extraction(target, calls, kpm, label)
        if got is not None:
            return got
        raise CaptureError(
            f"{cls} made no call through transformers' attention interface in this forward "
            "(it computes attention its own way, or the drawn input does not reach it)",
            argument="module",
        )
    rec = mine[0]
    if len({id(r.module) for r in mine}) > 1:
        raise CaptureError(f"{cls} holds several attention calls of different modules", argument="module")
    B, H, n, m = rec.probs.shape
    dh = rec.values.shape[-1]
    if rec.values.shape != (B, H, m, dh) or rec.output.shape != (B, n, H, dh):
        raise CaptureError(
            f"{cls}: the record's shapes disagree (probs {tuple(rec.probs.shape)}, values "
            f"{tuple(rec.values.shape)}, output {tuple(rec.output.shape)}): not a record of this call",
            argument="module",
        )
    lin = [(mod, calls.get(id(mod))) for mod in target.modules() if affine_of(mod) is not None]
    lin = [(mod, c) for mod, c in lin if c is not None and "x" in c.inputs and "y" in c.outputs]
    # the value projection: its output columns are the captured values
    vals = rec.values.permute(0, 2, 1, 3).reshape(B * m, H * dh)
    W_V = b_V = X = None
    for mod, c in lin:
        y = c.outputs["y"]
        if not isinstance(y, torch.Tensor) or y.ndim != 3 or y.shape[0] * y.shape[1] != B * m:
            continue
        idx = match_columns(y.reshape(B * m, -1), vals, distinct=False)
        if idx is not None:
            W, b = affine_of(mod)  # type: ignore[misc]
            W_V = W[idx].reshape(H, dh, W.shape[1])
            b_V = None if b is None else b[idx].reshape(H, dh)
            X = c.inputs["x"]
            break
    if W_V is None or not isinstance(X, torch.Tensor):
        raise CaptureError(
            f"{cls}: the captured values are no linear projection's output inside the module "
            "(a norm, rotation or mixing acts on v): not of the walk's form W_O·A·(W_V x + b_V)",
            argument="module",
        )
    # the output projection: its input columns are the attention output
    att = rec.output.reshape(B * n, H * dh)
    W_O = b_O = Y = None
    for mod, c in lin:
        x = c.inputs["x"]
        if not isinstance(x, torch.Tensor) or x.ndim != 3 or x.shape[0] * x.shape[1] != B * n:
            continue
        if x.shape[-1] != H * dh:
            continue
        xs = x.reshape(B * n, -1)
        if _same(xs, att):  # the natural layout (head h in columns h·d_h … (h+1)·d_h − 1)
            idx = torch.arange(H * dh)
        else:  # every input column is an attention column, in some order
            idx = match_columns(att, xs)
        if idx is not None:
            W, b = affine_of(mod)  # type: ignore[misc]
            inv = torch.empty_like(idx)
            inv[idx] = torch.arange(idx.numel())
            W_O = W[:, inv].reshape(W.shape[0], H, dh).permute(1, 0, 2)
            b_O, Y = b, c.outputs["y"]
            break
    if W_O is None:
        tc = calls.get(id(target))
        y = None if tc is None else tc.outputs.get("y")
        if isinstance(y, torch.Tensor) and y.numel() == att.numel():
            ys = y.reshape(B * n, -1)
            idx = torch.arange(H * dh) if _same(ys, att) else match_columns(att, ys)
            if idx is not None:
                eye = torch.eye(H * dh, dtype=rec.values.dtype)
                inv = torch.empty_like(idx)
                inv[idx] = torch.arange(idx.numel())
                W_O, Y = eye[:, inv].reshape(H * dh, H, dh).permute(1, 0, 2), y.reshape(B, n, -1)
    if W_O is None or not isinstance(Y, torch.Tensor):
        raise CaptureError(
            f"{cls}: the attention output reaches no linear output projection unchanged (a gate, norm "
            "or mixing between them): not of the walk's form W_O·A·V",
            argument="module",
        )
    self_att = m == n and X.shape[1] == n
    key_mask = None if (kpm is None or not self_att) else ~kpm
    return Extraction(
        Y.reshape(B, n, -1),
        rec.probs,
        W_O,
        W_V,
        X.reshape(B, m, -1),
        b_V,
        b_O,
        key_mask,
        rec.compute_dtype,
        layer=label,
    )
