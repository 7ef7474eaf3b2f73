r"""Family adapters: a loaded Hugging Face ``transformers`` model → per-layer :class:`LayerCapture`.

For every attention layer ``l`` the adapter captures, with forward hooks on the model's own modules
(eager attention, so the probabilities are materialised):

* ``attn_input``  ``(B, n, d)`` the hidden states that enter the attention module (pre-norm families:
  the output of the norm ``LN(x)``; post-norm BERT / MPNet: the residual stream itself);
* ``A``           ``(B, H, n, n)`` per-query-head probabilities returned by the eager kernel (padding,
  causal, sliding-window masks and relative position bias already applied by the model);
* ``W_O`` ``(H, d, d_h)``, ``W_V`` ``(H, d_h, d)`` in ``nn.Linear`` layout with GQA mapped to query heads
  (``kv(h) = h // (H / H_kv)``, THEOREMS.md T2), so ``T_h = W_O[h] W_V[h]``;
* ``offset`` ``(d,)`` ``c = W_O b_V + b_O``;
* ``attn_output`` ``(B, n, d)`` the attention sub-layer output before the residual add: the output
  projection's output (BERT ``attention.output.dense``, MPNet ``attn.o``, Llama/Gemma 3 ``o_proj``,
  GPT-2 ``c_proj``). Gemma 3 then applies ``post_attention_layernorm`` before the residual add; that
  norm is outside the walk and is not part of ``attn_output``.

so that, on every layer, ``walk.apply(attn_input) + offset == attn_output`` (T1/T2 in the wild)::

    y_i = Σ_h Σ_j A^h_ij T_h x_j + c.

Gain folding (``fold_gain=True``): the norm feeding attention is ``x ↦ g ⊙ x̂ + β`` (LayerNorm: ``x̂``
standardised; RMSNorm: ``x̂ = x / rms(x)``; Gemma's RMSNorm uses ``g = 1 + weight``). Then
``attn_input`` is ``x̂`` (recomputed from the norm's captured input), ``W_V ← W_V diag(g)`` and
``b_V ← b_V + W_V β``, so the identity still holds exactly and ``T_h`` absorbs the gain.

Streaming: :meth:`HFModelHandle.layers` runs the forward pass in a worker thread that hands over one
layer at a time (a hand-off queue of size 1), so at most one layer's ``(B, H, n, n)`` is held unless
the caller keeps them. Breaking out of the loop aborts the forward pass. Weights are read inside the
hook, when ``accelerate`` (``device_map="auto"``, possibly offloaded) has placed them on the layer's
execution device; nothing assumes the model sits on one device.
"""

from __future__ import annotations

import math
import numbers
import queue
import threading
from collections.abc import Iterator

import torch

from numerics.attention import AttentionWeights, bias_offset, head_factors
from numerics.device import as_device
from numerics.errors import (
    DTypeError,
    ModelError,
    NonFiniteError,
    ParameterError,
    SequenceTooLongError,
    ShapeError,
    UnsupportedArchitectureError,
)
from numerics.models.base import LayerCapture
from numerics.models.families import (
    FAMILIES,
    SUPPORTED_MODEL_TYPES,
    FamilySpec,
    family_of,
    module_param,
    normalised_parts,
)

__all__ = [
    "FamilySpec",
    "FAMILIES",
    "SUPPORTED_MODEL_TYPES",
    "family_of",
    "HFModelHandle",
    "relative_identity_error",
    "row_exact_offset",
    "IDENTITY_RTOL",
]


#: Acceptance bound of the identity ``walk.apply(attn_input) + offset ≈ attn_output`` on real and
#: tiny models (issue 5): relative Frobenius error per layer. Stricter than ``tol(dtype, d)``.
IDENTITY_RTOL = {torch.float32: 1e-5, torch.float64: 1e-10}


# --------------------------------------------------------------------------- the handle
class _Abort(Exception):
    """Raised inside a hook to stop the forward pass (consumer stopped or last kept layer done)."""


_DONE = object()


class HFModelHandle:
    """A loaded ``transformers`` model of a supported family (see :mod:`numerics.models.base`).

    Attributes: ``name, family, kind, n_layers, n_heads, n_kv_heads, d_model, d_head, n_params,
    max_length``, ``model`` (the HF model, eager attention, eval mode), ``tokenizer`` (or None),
    ``dtype``, ``source`` (where the weights came from), ``trained`` (False for ``random:`` nulls).
    """

    def __init__(
        self, model, tokenizer=None, *, name: str | None = None, source: str | None = None, trained: bool = True
    ):
        cfg = model.config
        self.family = family_of(cfg)
        if getattr(cfg, "model_type", None) == "gemma3" and hasattr(model, "language_model"):
            raise UnsupportedArchitectureError(
                "multimodal Gemma 3 is not supported; load the text model (Gemma3ForCausalLM)", argument="model"
            )
        self.spec = FAMILIES[self.family]
        self.model = model.eval()
        if getattr(model.config, "_attn_implementation", "eager") != "eager":
            model.set_attn_implementation("eager")
        self.tokenizer = tokenizer
        self.name = name or getattr(cfg, "name_or_path", None) or self.family
        self.source = source
        self.trained = trained
        self.kind = self.spec.kind
        self._base = model.base_model
        self._layers = self.spec.layers(self._base)
        self.n_layers = len(self._layers)
        w = self.spec.weights(self._layers[0], cfg)
        self.n_heads = int(w["n_heads"])
        self.n_kv_heads = int(w["n_kv_heads"] or w["n_heads"])
        self.d_model = int(w["W_O"].shape[0])
        self.d_head = int(w["W_Q"].shape[0]) // self.n_heads
        self.n_params = int(sum(p.numel() for p in model.parameters()))
        self.max_length = self.spec.max_length(cfg)
        self.vocab_size = int(cfg.vocab_size)
        self.dtype = next(model.parameters()).dtype

    _active = None

    def _supersede(self) -> None:
        if self._active is not None:
            stop, handles, superseded = self._active
            superseded.set()
            stop.set()
            for h in handles:
                h.remove()
            self._active = None

    def __repr__(self) -> str:
        return (
            f"HFModelHandle(name={self.name!r}, family={self.family}, kind={self.kind}, layers={self.n_layers}, "
            f"H={self.n_heads}, H_kv={self.n_kv_heads}, d={self.d_model}, d_h={self.d_head}, "
            f"params={self.n_params}, dtype={self.dtype}, trained={self.trained})"
        )

    # ----------------------------------------------------------------- inputs
    def tokenize(self, texts: list[str], length: int) -> torch.Tensor:
        """``input_ids`` ``(len(texts), length)``: each text's tokens (with the tokenizer's special
        tokens, e.g. ``[CLS] … [SEP]``) cut to exactly ``length``; a text with fewer tokens raises
        :class:`~numerics.errors.CorpusTooShortError` (never padded silently)."""
        from numerics.models.corpus import encode_exact

        return encode_exact(self, texts, length)

    def _input_device(self) -> torch.device:
        emb = self.model.get_input_embeddings()
        dev = emb.weight.device
        return torch.device("cpu") if dev.type == "meta" else dev

    def check_inputs(self, input_ids, attention_mask=None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Validate ``input_ids`` ``(B, n)`` integer ids in ``[0, vocab)``, ``n ≤ max_length``, and
        ``attention_mask`` ``(B, n)`` of 0/1 (int or bool). Nothing is truncated or cast silently."""
        if not isinstance(input_ids, torch.Tensor):
            raise DTypeError(f"expected a torch integer tensor, got {type(input_ids).__name__}", argument="input_ids")
        if input_ids.is_floating_point() or input_ids.is_complex() or input_ids.dtype == torch.bool:
            raise DTypeError(f"expected integer token ids, got {input_ids.dtype}", argument="input_ids")
        if input_ids.ndim != 2 or input_ids.shape[1] < 1 or input_ids.shape[0] < 1:
            raise ShapeError(
                f"expected shape (batch, n) with n >= 1, got {tuple(input_ids.shape)}", argument="input_ids"
            )
        n = input_ids.shape[1]
        if n > self.max_length:
            raise SequenceTooLongError(
                f"sequence length {n} exceeds {self.name}'s context of {self.max_length} tokens (refused, not truncated)",
                argument="input_ids",
            )
        lo, hi = int(input_ids.min()), int(input_ids.max())
        if lo < 0 or hi >= self.vocab_size:
            raise ShapeError(
                f"token ids must lie in [0, {self.vocab_size}), got range [{lo}, {hi}]", argument="input_ids"
            )
        if attention_mask is not None:
            if not isinstance(attention_mask, torch.Tensor):
                raise DTypeError(
                    f"expected a torch tensor, got {type(attention_mask).__name__}", argument="attention_mask"
                )
            if attention_mask.is_floating_point() or attention_mask.is_complex():
                raise DTypeError(
                    f"expected an integer or bool mask, got {attention_mask.dtype}", argument="attention_mask"
                )
            if tuple(attention_mask.shape) != tuple(input_ids.shape):
                raise ShapeError(
                    f"expected shape {tuple(input_ids.shape)} (as input_ids), got {tuple(attention_mask.shape)}",
                    argument="attention_mask",
                )
            m = attention_mask.to(torch.long)
            if bool(((m != 0) & (m != 1)).any()):
                raise ShapeError("entries must be 0 or 1", argument="attention_mask")
            if bool((m.sum(1) == 0).any()):
                raise ShapeError("a row masks every token", argument="attention_mask")
            attention_mask = m
        return input_ids, attention_mask

    # ----------------------------------------------------------------- capture
    def layers(
        self,
        input_ids,
        attention_mask=None,
        *,
        keep: set[int] | None = None,
        fold_gain: bool = False,
        out_device=None,
        with_output: bool = True,
    ) -> Iterator[LayerCapture]:
        """Stream one :class:`LayerCapture` per attention layer (index order), one at a time.

        ``keep``: layer indices to capture (others are run but not captured; the forward pass stops
        after the last kept layer). ``fold_gain``: fold the feeding norm's gain into ``W_V`` (module
        docstring). ``out_device``: where captured tensors go (default CPU). Captured tensors are in
        the model's dtype. ``with_output=False`` skips ``attn_output``."""
        input_ids, attention_mask = self.check_inputs(input_ids, attention_mask)
        out_dev = as_device("out_device", out_device) if out_device is not None else torch.device("cpu")
        if keep is not None:
            try:
                items = list(keep)
            except TypeError:
                raise ParameterError(
                    f"expected a set of layer indices, got {type(keep).__name__}", argument="keep"
                ) from None
            if any(isinstance(k, bool) or not isinstance(k, numbers.Integral) for k in items):
                raise ParameterError(f"expected integer layer indices, got {items!r}", argument="keep")
            keep = {int(k) for k in items}
            bad = [k for k in keep if not 0 <= k < self.n_layers]
            if bad:
                raise ShapeError(f"layer indices {sorted(bad)} out of range [0, {self.n_layers})", argument="keep")
            if not keep:
                return iter(())
        wanted = set(range(self.n_layers)) if keep is None else keep
        return self._stream(
            input_ids,
            attention_mask,
            wanted,
            fold_gain,
            out_dev,
            with_output,
        )

    def _stream(self, input_ids, attention_mask, wanted, fold_gain, out_dev, with_output):
        q: queue.Queue = queue.Queue(maxsize=1)
        stop = threading.Event()
        last = max(wanted)
        spec, cfg, layers = self.spec, self.model.config, self._layers
        dtype = self.dtype
        mask_cpu = None if attention_mask is None else attention_mask.to(torch.bool)
        state: dict[int, dict] = {}
        handles = []
        owner: dict[str, int] = {}  # hooks act only inside this stream's own worker thread

        def put(item):
            while True:
                if stop.is_set():
                    raise _Abort
                try:
                    q.put(item, timeout=0.05)
                    return
                except queue.Full:
                    continue

        def mv(t):
            return None if t is None else t.detach().to(device=out_dev, dtype=dtype)

        def make_pre(l):
            def pre(module, args, kwargs):
                if threading.get_ident() != owner.get("tid"):
                    return None  # another stream's forward pass on the same model
                if stop.is_set():
                    raise _Abort
                hs = args[0] if args else kwargs["hidden_states"]
                state[l] = {"x": hs.detach()}
                if spec.force_output_attentions:
                    state[l]["asked"] = bool(kwargs.get("output_attentions", False))
                    kwargs = dict(kwargs)
                    kwargs["output_attentions"] = True
                    return args, kwargs
                return None

            return pre

        def make_attn_post(l):
            def post(module, args, kwargs, output):
                if threading.get_ident() != owner.get("tid"):
                    return None
                st = state[l]
                if not isinstance(output, tuple) or len(output) < 2 or output[1] is None:
                    raise ModelError(
                        f"layer {l}: attention module returned no probabilities (is attn_implementation 'eager'?)",
                        argument="model",
                    )
                st["A"] = output[1].detach()
                ret = None
                if spec.force_output_attentions and not st.get("asked", False):
                    ret = (output[0],) + tuple(output[2:])
                maybe_finish(l)
                return ret

            return post

        def make_out_post(l):
            def post(module, args, output):
                if threading.get_ident() != owner.get("tid"):
                    return None
                st = state[l]
                st["y"] = output.detach()
                if fold_gain and l in norm_inputs:
                    st["norm_in"] = norm_inputs.pop(l)
                maybe_finish(l)

            return post

        def maybe_finish(l):
            st = state[l]
            if "A" not in st or "y" not in st:
                return
            del state[l]
            if not bool(torch.isfinite(st["A"]).all()):
                bad = (~torch.isfinite(st["A"])).any(-1)  # (B, H, n) rows
                rows = sorted({int(i) for i in bad.nonzero()[:, 2].tolist()})
                raise NonFiniteError(
                    f"layer {l}: the model's own attention probabilities are NaN/inf in query rows {rows[:8]}"
                    f"{'...' if len(rows) > 8 else ''} (fully masked rows, e.g. left padding of a decoder whose "
                    f"float32 softmax sees a float64 mask of -inf); use right padding or float32",
                    argument="attention_mask",
                )
            w = AttentionWeights(
                **{
                    k: (v.detach() if isinstance(v, torch.Tensor) else v)
                    for k, v in spec.weights(layers[l], cfg).items()
                }
            )
            x = st["x"]
            norm_mod, nkind = spec.norm(self._base, layers, l)
            g_eff = module_param(norm_mod, "weight").detach()
            if nkind == "rmsnorm1p":
                g_eff = (1.0 + g_eff.float()).to(x.dtype)
            if fold_gain:
                xin = st.get("norm_in")
                if xin is None:
                    raise ModelError(f"layer {l}: the norm feeding attention did not run", argument="fold_gain")
                xh, g, beta = normalised_parts(xin, norm_mod, nkind)
                g = g.detach().to(device=w.W_V.device, dtype=w.W_V.dtype)
                bv = w.b_V if w.b_V is not None else torch.zeros(w.W_V.shape[0], dtype=w.W_V.dtype, device=w.W_V.device)
                if beta is not None:
                    bv = bv + w.W_V @ beta.detach().to(device=w.W_V.device, dtype=w.W_V.dtype)
                w = AttentionWeights(
                    W_Q=w.W_Q,
                    W_K=w.W_K,
                    W_V=w.W_V * g[None, :],
                    W_O=w.W_O,
                    n_heads=w.n_heads,
                    n_kv_heads=w.n_kv_heads,
                    b_Q=w.b_Q,
                    b_K=w.b_K,
                    b_V=bv,
                    b_O=w.b_O,
                    scale=w.scale,
                )
                x = xh
            Wo, Wv = head_factors(w)
            cap = LayerCapture(
                layer=l,
                attn_input=mv(x),
                A=mv(st["A"]),
                W_O=mv(Wo),
                W_V=mv(Wv),
                offset=mv(bias_offset(w)),
                attn_output=mv(st["y"]) if with_output else None,
                norm_gain=mv(g_eff),
                gain_folded=fold_gain,
                mask=None if mask_cpu is None else mask_cpu.to(out_dev),
                extra={"weights": w.to(dtype=dtype, device=out_dev), "family": self.family, "norm_kind": nkind},
            )
            put(cap)
            if l == last:
                raise _Abort

        def make_norm_pre(l):
            def pre(module, args):
                if threading.get_ident() == owner.get("tid"):
                    norm_inputs[l] = args[0].detach()

            return pre

        norm_inputs: dict[int, torch.Tensor] = {}

        def register():
            for l in sorted(wanted):
                L = layers[l]
                handles.append(spec.attn(L).register_forward_pre_hook(make_pre(l), with_kwargs=True))
                handles.append(spec.attn(L).register_forward_hook(make_attn_post(l), with_kwargs=True))
                if fold_gain:
                    nm, _ = spec.norm(self._base, layers, l)
                    handles.append(nm.register_forward_pre_hook(make_norm_pre(l)))
                handles.append(spec.out(L).register_forward_hook(make_out_post(l)))

        dev = self._input_device()
        ids = input_ids.to(dev)
        am = None if attention_mask is None else attention_mask.to(dev)

        def run():
            owner["tid"] = threading.get_ident()
            try:
                with torch.inference_mode():
                    self._base(input_ids=ids, attention_mask=am, use_cache=False)
                put(_DONE)
            except _Abort:
                try:
                    put(_DONE)
                except _Abort:
                    pass
            except BaseException as exc:  # forwarded to the consumer
                try:
                    put(exc)
                except _Abort:
                    pass

        superseded = threading.Event()

        def gen():
            # one live stream per handle: a stream abandoned without being closed (e.g. an exception
            # in the consumer's loop) is stopped here, so its hooks can never fire again
            self._supersede()
            self._active = (stop, handles, superseded)
            register()
            t = threading.Thread(target=run, name="connwalk-capture", daemon=True)
            t.start()
            try:
                while True:
                    if superseded.is_set():
                        raise ModelError(
                            "this layers() stream was superseded by a newer layers() call on the "
                            "same handle; consume one stream at a time",
                            argument="layers",
                        )
                    try:
                        item = q.get(timeout=0.1)
                    except queue.Empty:
                        if not t.is_alive() and q.empty() and not superseded.is_set():
                            raise ModelError("the capture thread ended without a result", argument="layers")  # noqa: B904
                        continue
                    if item is _DONE:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    yield item
            finally:
                stop.set()
                while t.is_alive():
                    try:
                        q.get(timeout=0.05)
                    except queue.Empty:
                        pass
                t.join()
                for h in handles:
                    h.remove()
                if self._active is not None and self._active[0] is stop:
                    self._active = None

        return gen()


def relative_identity_error(cap: LayerCapture) -> float:
    """``‖walk.apply(attn_input) + offset − attn_output‖_F / ‖attn_output‖_F`` (float64 norms)."""
    if cap.attn_output is None:
        raise ModelError("capture has no attn_output (with_output=False)", argument="cap")
    y = cap.walk().apply(cap.attn_input) + cap.offset
    ref = cap.attn_output
    num = torch.linalg.vector_norm((y - ref).to(torch.float64)).item()
    den = torch.linalg.vector_norm(ref.to(torch.float64)).item()
    return num / max(den, math.ulp(0.0))


def row_exact_offset(cap: LayerCapture) -> torch.Tensor:
    """Per-token affine term ``c_i = Σ_h r^h_i W_O^h b_V^{kv(h)} + b_O`` ``(B, n, d)``, ``r^h_i = Σ_j A^h_ij``.

    Equals ``cap.offset`` when every row of every ``A^h`` sums to 1. Models whose eager softmax runs
    in float32 and is cast back (Llama, Gemma 3 in float64) have row sums ``1 ± O(1e-7)``; with a
    value bias the constant offset then carries that float32 error, while this form stays exact."""
    from numerics.attention import kv_head_map

    w = cap.extra["weights"]
    Wo = cap.W_O  # (H, d, d_h)
    r = cap.A.sum(-1)  # (B, H, n)
    c = torch.zeros(cap.A.shape[0], cap.A.shape[-1], Wo.shape[1], dtype=Wo.dtype, device=Wo.device)
    if w.b_V is not None:
        kv = torch.tensor(kv_head_map(w.n_heads, w.n_kv_heads), device=Wo.device)
        bv = w.b_V.reshape(-1, w.d_head)[kv]  # (H, d_h)
        per_head = torch.einsum("hdk,hk->hd", Wo, bv)  # (H, d)
        c = c + torch.einsum("bhn,hd->bnd", r, per_head)
    if w.b_O is not None:
        c = c + w.b_O
    return c
