r"""The adapters of the conformance kit (:mod:`numerics.conformance.kit`): how a module's per-head attention
and transports are read. :class:`MHAAdapter` (``torch.nn.MultiheadAttention``), :class:`ProtocolAdapter`
(a user's module with ``connwalk_attention``), :class:`HFModelAdapter` (a Hugging Face model of a supported
family), the stand-alone Hugging Face attention classes (:mod:`numerics.conformance.hf`), and
:func:`adapter_for`, which picks one. Re-exported by :mod:`numerics.conformance.kit`."""

from __future__ import annotations

import inspect
from typing import Any

import torch

from numerics.conformance.protocol import Adapter, Draw, EvalMode, Extraction, dtype_of
from numerics.errors import ParameterError, ShapeError, UnsupportedArchitectureError


class NotAttentionError(UnsupportedArchitectureError):
    """The object given is not an attention module any adapter knows (and has no
    ``connwalk_attention`` method)."""


class MHAAdapter(Adapter):
    """``torch.nn.MultiheadAttention``: packed ``in_proj`` or separate ``q/k/v_proj_weight``
    (``kdim``/``vdim``: cross-attention inputs of width ``kdim``, ``vdim``), biases optional,
    ``batch_first`` either way; key padding and causal masks. ``add_zero_attn=True`` appends a zero
    key with a zero value (an attention sink): the attention over the real keys is reported (the
    zero key's column dropped; its value is zero, so the identity is unchanged) and its rows sum to
    less than one, so the kit answers *hypothesis fails (row-stochastic)*, as for every sink.
    ``add_bias_kv=True`` appends a learned key *and value*: that value enters every output, which is
    then not ``W(X)·X + c`` over the tokens, so it is declined."""

    name = "torch.nn.MultiheadAttention"
    takes_mask = True

    def __init__(self, mha: torch.nn.MultiheadAttention) -> None:
        if mha.bias_k is not None:
            raise UnsupportedArchitectureError(
                "add_bias_kv appends a learned key and value that are no token: the learned value enters every "
                "output, so the output is not W(X)·X + c over the tokens (add_zero_attn, a sink with a zero "
                "value, is checked)",
                argument="module",
            )
        self.zero_key = bool(mha.add_zero_attn)
        self.mha = mha
        self.d_model = mha.embed_dim
        self.cross = not mha._qkv_same_embed_dim
        self.takes_causal = not self.cross
        self.dtype = dtype_of(mha)

    def _weights(self):
        m, d, H = self.mha, self.mha.embed_dim, self.mha.num_heads
        if m._qkv_same_embed_dim:
            Wv = m.in_proj_weight[2 * d :]
        else:
            Wv = m.v_proj_weight
        bv = None if m.in_proj_bias is None else m.in_proj_bias[2 * d :]
        dh = d // H
        W_V = Wv.detach().reshape(H, dh, -1)
        W_O = m.out_proj.weight.detach().reshape(d, H, dh).permute(1, 0, 2)
        b_V = None if bv is None else bv.detach().reshape(H, dh)
        b_O = None if m.out_proj.bias is None else m.out_proj.bias.detach()
        return W_O, W_V, b_V, b_O

    def extract(self, draw: Draw) -> list[Extraction]:
        m, dt = self.mha, self.dtype
        g = draw.generator()
        X = draw.randn(draw.batch, draw.n, self.d_model, dtype=dt, gen=g)
        if self.cross:
            K = draw.randn(draw.batch, draw.m, m.kdim, dtype=dt, gen=g)
            V = draw.randn(draw.batch, draw.m, m.vdim, dtype=dt, gen=g)
        else:
            K = V = X
        kpm = draw.key_padding_mask()
        am = None
        if draw.causal:
            am = torch.ones(draw.n, draw.m, dtype=torch.bool).triu(1)
        args = (X, K, V) if m.batch_first else (X.transpose(0, 1), K.transpose(0, 1), V.transpose(0, 1))
        with EvalMode(m), torch.no_grad():
            out, A = m(*args, key_padding_mask=kpm, attn_mask=am, need_weights=True, average_attn_weights=False)
        if not m.batch_first:
            out = out.transpose(0, 1)
        if self.zero_key:  # the zero key (last column) is no token: its value is zero, so it adds nothing
            A = A[..., :-1]
        W_O, W_V, b_V, b_O = self._weights()
        return [Extraction(out, A, W_O, W_V, V, b_V, b_O, None if kpm is None else ~kpm)]


class ProtocolAdapter(Adapter):
    """A user's module with ``connwalk_attention(X, key_padding_mask=None)`` (module docstring); a module
    attribute ``connwalk_causal = True`` declares it causal-only (it applies the causal mask itself: every
    draw is causal). :meth:`tokens` are the drawn ``X`` it is given."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.name = type(module).__name__ + " (connwalk_attention)"
        d = getattr(module, "embed_dim", None) or getattr(module, "d_model", None)
        if not isinstance(d, int) or d < 1:
            raise NotAttentionError(
                f"{type(module).__name__} has connwalk_attention but no integer embed_dim / d_model", argument="module"
            )
        self.d_model = d
        self.takes_mask = "key_padding_mask" in inspect.signature(module.connwalk_attention).parameters
        self.dtype = dtype_of(module)
        causal = getattr(module, "connwalk_causal", False)
        if not isinstance(causal, bool):
            raise ParameterError(
                f"{type(module).__name__}.connwalk_causal: expected True (the module runs causal only) or False, "
                f"got {causal!r}",
                argument="module.connwalk_causal",
            )
        self.causal_only = causal

    def tokens(self, draw: Draw) -> torch.Tensor:
        """The drawn ``X`` ``(B, n, d_model)`` in the module's dtype: what ``connwalk_attention`` is given."""
        return draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype)

    def extract(self, draw: Draw) -> list[Extraction]:
        X = self.tokens(draw)
        kpm = draw.key_padding_mask()
        kw = {"key_padding_mask": kpm} if self.takes_mask else {}
        with EvalMode(self.module), torch.no_grad():
            got = self.module.connwalk_attention(X, **kw)
        if isinstance(got, dict):
            try:
                got = Extraction(**got)
            except TypeError as exc:
                raise ParameterError(
                    f"connwalk_attention returned a dict that is no Extraction ({exc})", argument="module"
                ) from None
        if not isinstance(got, Extraction):
            raise ParameterError(
                f"connwalk_attention returned {type(got).__name__}; expected an Extraction or a dict of its fields",
                argument="module",
            )
        if got.key_mask is None and kpm is not None:
            got.key_mask = ~kpm
        return [got]


class HFModelAdapter(Adapter):
    """A Hugging Face model of a supported family: every attention layer (or ``layers``), captured
    by :class:`numerics.models.adapters.HFModelHandle` on token ids drawn from the seed (right
    padding through ``attention_mask``)."""

    takes_mask = True

    def __init__(self, model, layers=None) -> None:
        from numerics.models.adapters import HFModelHandle

        self.handle = model if isinstance(model, HFModelHandle) else HFModelHandle(model)
        h = self.handle
        self.name = f"{type(h.model).__name__} ({h.family}, {h.n_layers} layers)"
        self.d_model, self.dtype, self.max_length = h.d_model, h.dtype, h.max_length
        self.keep = None if layers is None else {int(k) for k in layers}
        if self.keep is not None and (not self.keep or not all(0 <= k < h.n_layers for k in self.keep)):
            raise ShapeError(f"layer indices must lie in [0, {h.n_layers}), got {sorted(self.keep)}", argument="layers")
        # padding is drawn for encoders only: a causal model's real tokens never see right padding,
        # and with a sliding window the padded queries of a decoder may have no key left at all
        self.takes_mask = h.kind == "encoder"
        # Llama / Gemma 3 eager softmax runs in float32 whatever the model's dtype
        self.attention_dtype = torch.float32 if h.family in ("llama", "gemma3") else None

    def extract(self, draw: Draw) -> list[Extraction]:
        h = self.handle
        ids = torch.randint(0, h.vocab_size, (draw.batch, draw.n), generator=draw.generator())
        kpm = draw.key_padding_mask()
        am = None if kpm is None else (~kpm).to(torch.long)
        out = []
        for cap in h.layers(ids, am, keep=self.keep):
            w = cap.extra["weights"]
            bv = None
            if w.b_V is not None:
                from numerics.attention import kv_head_map

                kv = torch.tensor(kv_head_map(w.n_heads, w.n_kv_heads))
                bv = w.b_V.reshape(-1, w.d_head)[kv]
            assert cap.attn_output is not None  # layers(..., with_output=True)
            out.append(
                Extraction(
                    cap.attn_output,
                    cap.A,
                    cap.W_O,
                    cap.W_V,
                    cap.attn_input,
                    bv,
                    w.b_O,
                    None if kpm is None else ~kpm,
                    self.attention_dtype,
                    layer=str(cap.layer),
                )
            )
        return out


def adapter_for(module, *, layers=None) -> Adapter:
    """The adapter of ``module``: an :class:`Adapter` itself; ``torch.nn.MultiheadAttention``; a
    module with ``connwalk_attention``; a Hugging Face model (or ``HFModelHandle``) of a supported
    family, and a Hugging Face model of any other family through the attention-interface capture
    (:class:`numerics.conformance.hf_capture.CaptureAdapter`, every captured attention layer; no
    ``layers`` selection); a stand-alone Hugging Face attention module of the supported families; any other ``torch.nn.Module`` whose
    forward on ``(B, n, d_model)`` makes one observed attention kernel (the torch capture,
    :func:`numerics.conformance.torch_adapter.capture_adapter_for`). Anything else raises
    :class:`NotAttentionError` naming ``module``; ``layers`` (:func:`check_layers`) given for anything
    but a whole model raises :class:`~numerics.errors.ParameterError` naming it (it would be ignored)."""
    check_layers(layers)
    from numerics.models.adapters import HFModelHandle

    whole = isinstance(module, HFModelHandle) or (
        isinstance(module, torch.nn.Module)
        and hasattr(getattr(module, "config", None), "model_type")
        and hasattr(module, "base_model")
        and not is_hf_attention(module)
    )
    if layers is not None and (not whole or isinstance(module, Adapter) or hasattr(module, "connwalk_attention")):
        raise ParameterError(
            f"selects the layers of a whole Hugging Face model; {type(module).__name__} is one module (its layers "
            "would be ignored): leave layers out",
            argument="layers",
        )
    if isinstance(module, Adapter):
        return module
    if isinstance(module, torch.nn.MultiheadAttention):
        return MHAAdapter(module)
    if callable(getattr(module, "connwalk_attention", None)):
        return ProtocolAdapter(module)
    if whole:
        try:
            return HFModelAdapter(module, layers)
        except UnsupportedArchitectureError:
            if isinstance(module, HFModelHandle) or layers is not None:
                raise
        # a family the handle does not know: every attention module that calls transformers' attention
        # interface (or returns its probabilities), through the capture
        from numerics.conformance.hf_capture import CaptureAdapter

        return CaptureAdapter(module)
    if isinstance(module, torch.nn.Module) and is_hf_attention(module):
        from numerics.conformance.hf import hf_attention_adapter

        return hf_attention_adapter(module)
    # any other module: the torch capture, when a dry run on a tiny draw observes one attention kernel
    # (a container is judged through the submodule holding it, named in the adapter's name)
    from numerics.conformance.torch_adapter import capture_adapter_for

    captured = capture_adapter_for(module)
    if captured is not None:
        return captured
    raise NotAttentionError(
        f"{type(module).__name__} is not an attention module connwalk knows: expected torch.nn.MultiheadAttention, "
        "a Hugging Face model (any family whose attention goes through transformers' attention interface), a "
        "stand-alone Hugging Face attention module of bert, mpnet, gpt2, llama, gemma3 (any other: pass "
        "numerics.conformance.hf_capture.CaptureAdapter(model, [module]) as adapter=), or a module with a "
        "connwalk_attention(X, key_padding_mask=None) method (numerics.conformance.kit); the torch capture, run "
        "on (batch, tokens, d_model), observed no attention kernel in its forward",
        argument="module",
    )


def check_layers(layers) -> None:
    """``layers``: None (every layer) or a nonempty collection of layer indices, integers ``≥ 0``
    (:class:`~numerics.errors.ParameterError` naming ``layers``; their upper bound is the model's)."""
    if layers is None:
        return
    items = list(layers) if isinstance(layers, (list, tuple, set, frozenset, range)) else None
    if not items or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in items):
        raise ParameterError(
            f"expected None or a nonempty list of layer indices (integers ≥ 0), got {layers!r}", argument="layers"
        )


def is_hf_attention(module) -> bool:
    try:
        from numerics.conformance.hf import HF_ATTENTION_CLASSES
    except ImportError:  # pragma: no cover
        return False
    return type(module).__name__ in HF_ATTENTION_CLASSES
