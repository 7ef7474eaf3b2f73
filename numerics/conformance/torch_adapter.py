r"""The adapter of the torch capture (:mod:`numerics.conformance.torch_capture`): :class:`TorchCaptureAdapter`
runs the module itself on each drawn input and builds its :class:`~numerics.conformance.protocol.Extraction`
from what was observed — ``output`` the module's own returned output (never recomputed), ``A`` the literal
float64 attention of the observed kernel, ``W_V`` / ``b_V`` / ``W_O`` / ``b_O`` the observed projections
located by column matching, ``values`` the tokens the value projection read — and
:func:`capture_adapter_for`, the fallback of :func:`numerics.conformance.adapters.adapter_for` for a module
no built-in adapter knows (a dry run on a tiny draw; a container holding exactly one attention is judged
through that attention submodule, whose path the adapter's name carries)."""

from __future__ import annotations

import torch

from numerics.conformance.hf_capture import match_columns
from numerics.conformance.protocol import Adapter, Draw, EvalMode, Extraction, dtype_of, forward_parameters
from numerics.conformance.torch_capture import Kernel, LinearCall, Run, TorchCaptureError, observe

__all__ = ["TorchCaptureAdapter", "capture_adapter_for", "read_run", "attention_path"]

F64 = torch.float64
#: the dry run of :func:`capture_adapter_for`: batch and length told apart (a sequence-first module is seen)
DRY = Draw(batch=2, n=3, m=3, pad=(0, 0), causal=False, seed=0, scale=1.0)
#: the token counts the dry run tries, in order, until the module runs: a module that runs only on a fixed
#: number of tokens (a Swin window, a relative-position table of fixed size) is found at its own
DRY_LENGTHS = (3, *range(1, 3), *range(4, 65))


def _rows(t: torch.Tensor, B: int, L: int):
    """``t`` as ``(B, L, c)`` in each row order it may be stored in: batch-first, then sequence-first."""
    if t.ndim == 3 and tuple(t.shape[:2]) == (B, L):
        yield t
    if t.ndim == 3 and tuple(t.shape[:2]) == (L, B) and B != L:
        yield t.transpose(0, 1)
    if t.ndim == 2 and t.shape[0] == B * L:
        yield t.reshape(B, L, -1)
        if B > 1 and L > 1:
            yield t.reshape(L, B, -1).transpose(0, 1)
    if t.ndim == 3 and B == L and tuple(t.shape[:2]) == (L, B):
        yield t.transpose(0, 1)
    if t.ndim >= 4 and t.shape[0] == B and t.shape[1:-1].numel() == L:  # a grid of tokens (B, h, w, c)
        yield t.reshape(B, L, t.shape[-1])


def _first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    if isinstance(out, dict):
        return next((v for v in out.values() if isinstance(v, torch.Tensor)), None)
    return None


def _tol(dtype) -> float:
    """64 eps of ``dtype``, at most float32's: a norm on the values computes in float32 even in a float64
    model (Hugging Face's RMSNorms cast to float32), and the values then carry float32's rounding."""
    eps = torch.finfo(dtype if dtype.is_floating_point else F64).eps
    return 64 * max(eps, torch.finfo(torch.float32).eps)


def _constant(s: torch.Tensor, dtype) -> bool:
    return bool(((s - s.mean(0)).abs() <= _tol(dtype) * s.abs().amax(0)).all())


def scaled_blocks(Y: torch.Tensor, V: torch.Tensor, H: int, dh: int, dtype):
    """``(idx, s, g)`` with ``V[:, h·dh + i] = s[:, h] · g[h·dh + i] · Y[:, idx[h·dh + i]]`` for every head
    ``h`` (a block of ``dh`` consecutive columns of ``Y``, in its natural layout), to :func:`_tol` of ``dtype``
    relative to the block's scale: a per-token, per-head rescaling (a norm, or a constant scale) of an
    output's head blocks; None when some head is no such block (or a block has a zero entry: no evidence)."""
    N, C = Y.shape
    idx, S, G = [], [], []
    for h in range(H):
        Vh = V[:, h * dh : (h + 1) * dh]
        scale = Vh.abs().max()
        found = None
        for o in range(0, C - dh + 1, dh):
            Yo = Y[:, o : o + dh]
            if bool((Yo == 0).any()) or scale == 0:
                continue
            R = Vh / Yo
            s = R[:, :1]
            if bool((s == 0).any()):
                continue
            g = (R / s).mean(0)
            if bool((Vh - s * g * Yo).abs().max() <= _tol(dtype) * scale):
                found = (o, s[:, 0], g)
                break
        if found is None:
            return None
        o, s_, g = found
        idx.append(torch.arange(o, o + dh))
        S.append(s_)
        G.append(g)
    return torch.cat(idx), torch.stack(S, 1), torch.cat(G)


def _value_projection(k: Kernel, linears: list[LinearCall], name: str, notes: list | None = None):
    assert k.v is not None
    B, Hkv, m, dh = k.v.shape
    vals = k.v.detach().permute(0, 2, 1, 3).reshape(B * m, Hkv * dh)
    for lc in reversed([c for c in linears if c.seq < k.seq and c.fresh()]):
        for r, y in enumerate(_rows(lc.y, B, m)):
            idx = match_columns(y.reshape(B * m, -1), vals, distinct=False)
            if idx is None:
                continue
            W = lc.W.detach()
            W_V = W[idx].reshape(Hkv, dh, W.shape[1])
            b_V = None if lc.b is None else lc.b.detach()[idx].reshape(Hkv, dh)
            return W_V, b_V, list(_rows(lc.x, B, m))[r]
    for lc in reversed([c for c in linears if c.seq < k.seq and c.fresh()]):
        for r, y in enumerate(_rows(lc.y, B, m)):
            got = scaled_blocks(y.reshape(B * m, -1).detach().to(F64), vals.to(F64), Hkv, dh, k.dtype)
            if got is None:
                continue
            idx, s, g = got
            # values = s (per token and head) · g (per column) · an F.linear output: a constant s is a scale
            # folded into W_V (a walk); one that varies is a norm on the values, judged with its mean scale
            c = s.mean(0).repeat_interleave(dh) * g
            W = lc.W.detach()
            W_V = (W[idx] * c[:, None].to(W.dtype)).reshape(Hkv, dh, W.shape[1])
            b_V = None if lc.b is None else (lc.b.detach()[idx] * c.to(lc.b.dtype)).reshape(Hkv, dh)
            if notes is not None and not _constant(s, k.dtype):
                notes.append("a norm on the values (the kernel's values are an F.linear output rescaled per token)")
            return W_V, b_V, list(_rows(lc.x, B, m))[r]
    raise TorchCaptureError(
        f"{name}: the kernel's values ({k.how}) are no F.linear output observed before it (a norm, rotation or "
        "mixing acts on v, or the projection is no F.linear): not of the walk's form W_O·A·(W_V x + b_V)",
        argument="module",
    )


#: the note of an attention output read among other columns of the projection's input or the module's output
BESIDE = "columns beside the attention output (a convolution or mixing next to it) reach the output"


def _output_projection(
    k: Kernel,
    linears: list[LinearCall],
    own: torch.Tensor | None,
    name: str,
    projection_output: list | None = None,
    notes: list | None = None,
):
    """``(W_O, b_O)``: the linear after the kernel whose input columns are the kernel's output; else the
    linear after it whose output *is* the module's own output (natural head layout)."""
    assert k.out is not None
    B, H, n, dh = k.out.shape
    att = k.out.detach().permute(0, 2, 1, 3).reshape(B * n, H * dh)
    after = [c for c in linears if c.seq > k.seq and c.fresh()]
    for lc in after:
        for r, x in enumerate(_rows(lc.x, B, n)):
            if x.shape[-1] != H * dh:
                continue
            idx = match_columns(att, x.reshape(B * n, -1))
            if idx is not None:
                W = lc.W.detach()
                inv = torch.empty_like(idx)
                inv[idx] = torch.arange(idx.numel())
                W_O = W[:, inv].reshape(W.shape[0], H, dh).permute(1, 0, 2)
                if projection_output is not None:  # the projection's own output, in the rows read
                    projection_output.append(list(_rows(lc.y, B, n))[r])
                return W_O, _bias(lc)
    for lc in after:  # a projection of the attention output beside other columns (a convolution's: not a walk)
        for r, x in enumerate(_rows(lc.x, B, n)):
            if x.shape[-1] <= H * dh:
                continue
            idx = match_columns(x.reshape(B * n, -1), att)
            if idx is not None:
                W = lc.W.detach()
                if notes is not None:
                    notes.append(BESIDE)
                if projection_output is not None:
                    projection_output.append(list(_rows(lc.y, B, n))[r])
                return W[:, idx].reshape(W.shape[0], H, dh).permute(1, 0, 2), _bias(lc)
    for lc in after:
        if own is None or lc.x.shape[-1] != H * dh or lc.y.numel() != own.numel():
            continue
        if torch.equal(lc.y.detach().reshape(own.shape), own.detach()):  # (B·n, c) rows of (B, n, c) too
            # the kernel's output reaches the projection that makes the module's output changed: W_O in
            # the natural head layout, and the identity decides (the module's own output is judged)
            W = lc.W.detach()
            return W.reshape(W.shape[0], H, dh).permute(1, 0, 2), _bias(lc)
    for ys in [] if own is None else _rows(own.detach(), B, n):
        # the module returns the attention output itself (its projection is another module's: W_O = I), or
        # among other columns (a convolution beside it: W_O selects the attention's, the others are not a walk)
        if ys.shape[-1] < H * dh:
            continue
        idx = match_columns(ys.reshape(B * n, -1), att)
        if idx is not None:
            if notes is not None and ys.shape[-1] > H * dh:
                notes.append(BESIDE)
            W_O = torch.zeros(ys.shape[-1], H * dh, dtype=att.dtype)
            W_O[idx, torch.arange(H * dh)] = 1.0
            return W_O.reshape(-1, H, dh).permute(1, 0, 2), None
    raise TorchCaptureError(
        f"{name}: the kernel's output ({k.how}) reaches no F.linear output projection unchanged, and the "
        "module's output is no projection's output (a gate, norm or nonlinearity after it): not of the walk's "
        "form W_O·A·V",
        argument="module",
    )


def _bias(lc: LinearCall):
    return None if lc.b is None else lc.b.detach()


def _inside(run: Run, mod: torch.nn.Module, seqs: list[int]) -> bool:
    c = run.obs.calls.get(id(mod))
    return c is not None and all(c.start < s < c.end for s in seqs)


def _kernel(run: Run, target: torch.nn.Module, name: str) -> Kernel:
    ks = [k for k in run.obs.kernels if _inside(run, target, [k.seq])]
    if not ks:
        raise TorchCaptureError(
            f"{name} ran without an observed attention kernel (no F.scaled_dot_product_attention, no softmax "
            "consumed by a matmul/einsum, no F.multi_head_attention_forward)",
            argument="module",
        )
    if len(ks) > 1:
        raise TorchCaptureError(
            f"{name} made {len(ks)} attention kernel calls ({', '.join(k.how for k in ks)}): pass the one attention "
            "submodule to judge",
            argument="module",
        )
    return ks[0]


def read_run(
    run: Run,
    target: torch.nn.Module,
    B: int,
    n: int,
    name: str,
    label: str = "",
    *,
    projection: bool = False,
    notes: list | None = None,
) -> Extraction:
    """The :class:`Extraction` of ``target``'s first call in ``run`` (module docstring); ``projection``: where
    an output projection consumes the kernel's output unchanged, its own output is judged (the attention
    sublayer of a class that also adds a residual and a norm, as the interface capture reads it) rather
    than the module's; ``notes`` hears what structure was read (a norm on the values)."""
    k = _kernel(run, target, name)
    if k.A.shape[0] != B or k.A.shape[2] != n:
        raise TorchCaptureError(
            f"{name}: the kernel's attention has shape {tuple(k.A.shape)} but the input is ({B}, {n}, ·): the "
            "module does not read its input as (batch, tokens, features) (batch_first=False?)",
            argument="module",
        )
    call = run.obs.calls.get(id(target))
    own = _first_tensor(call.output if call is not None else run.output)
    if k.factors is not None:  # F.multi_head_attention_forward: its arguments, its module's output
        W_O, W_V, b_V, b_O, values = k.factors
    else:
        lin = [c for c in run.obs.linears if _inside(run, target, [c.seq])]
        W_V, b_V, values = _value_projection(k, lin, name, notes)
        seen: list = []
        W_O, b_O = _output_projection(k, lin, own, name, seen, notes)
        if projection and seen:
            own = seen[0]
        H, Hkv = k.A.shape[1], W_V.shape[0]
        if H % Hkv:
            raise TorchCaptureError(f"{name}: {H} query heads and {Hkv} value heads", argument="module")
        kv = torch.arange(H) // (H // Hkv)
        W_V, b_V = W_V[kv], None if b_V is None else b_V[kv]
        if k.scale is not None:  # a fixed per-head/channel factor on the kernel's output acts on the values
            W_V = (W_V.to(F64) * k.scale[:, :, None]).to(W_V.dtype)  # the module's own precision
            b_V = None if b_V is None else (b_V.to(F64) * k.scale).to(b_V.dtype)
    if not isinstance(own, torch.Tensor) or tuple(own.shape) != (B, n, W_O.shape[1]):
        got = tuple(own.shape) if isinstance(own, torch.Tensor) else type(own).__name__
        raise TorchCaptureError(
            f"{name}: its output is {got}, expected ({B}, {n}, {W_O.shape[1]}) (batch, tokens, features)",
            argument="module",
        )
    return Extraction(own.detach(), k.A, W_O, W_V, values.detach(), b_V, b_O, None, k.dtype, layer=label)


def attention_path(run: Run, root: torch.nn.Module) -> str:
    """The path of the innermost submodule of ``root`` holding the one observed kernel and the projections
    around it ("" for ``root`` itself)."""
    name = type(root).__name__
    k = _kernel(run, root, name)
    seqs = [k.seq]
    if k.factors is None:
        lin = run.obs.linears
        before = [c.seq for c in lin if c.seq < k.seq]
        after = [c.seq for c in lin if c.seq > k.seq]
        seqs += before[-1:] + after[:1]
    best, depth = "", -1
    for path, mod in root.named_modules():
        d = 0 if not path else path.count(".") + 1
        if d > depth and _inside(run, mod, seqs):
            best, depth = path, d
    return best


class TorchCaptureAdapter(Adapter):
    """Any attention module, run on drawn ``X`` ``(B, n, d_model)`` under the torch capture (module docstring);
    ``path``: judge this submodule of ``module`` (a container run whole), named in :attr:`name`; ``length``:
    the one token count the dry run found the module to run on, where it did not on 3 (a draw of another
    length that the module refuses is then a :class:`TorchCaptureError` saying which ``min_length`` /
    ``max_length`` to pass); ``d_model``: the input width (default: the first ``nn.Linear``'s ``in_features``, an ``embed_dim``). Key padding is
    drawn where ``module.forward`` takes torch's ``key_padding_mask`` / ``src_key_padding_mask`` (``(B, m)``
    bool, True = padded: a convention the name fixes); the kernel's mask is then read from its call. Other
    masks (``mask``, ``attn_mask``) are not drawn: their conventions differ between libraries."""

    takes_mask = False
    mask_arg = ""

    def __init__(
        self, module: torch.nn.Module, *, path: str = "", d_model: int | None = None, length: int | None = None
    ) -> None:
        if not isinstance(module, torch.nn.Module):
            raise TorchCaptureError(f"expected a torch.nn.Module, got {type(module).__name__}", argument="module")
        self.module, self.path, self.length = module, path, length
        try:
            self.target = module.get_submodule(path) if path else module
        except AttributeError:
            raise TorchCaptureError(f"{type(module).__name__} has no submodule {path!r}", argument="module") from None
        d = d_model or _width(module)
        if not isinstance(d, int) or d < 1:
            raise TorchCaptureError(
                f"{type(module).__name__}: no input width found (no nn.Linear, no embed_dim): pass d_model",
                argument="module",
            )
        self.d_model = d
        self.dtype = dtype_of(module)
        params = forward_parameters(module)
        self.mask_arg = next((p for p in MASK_ARGUMENTS if p in params), "")
        self.takes_mask = bool(self.mask_arg)
        where = f" at {path} ({type(self.target).__name__})" if path else ""
        self.name = f"torch capture{where}"

    def extract(self, draw: Draw) -> list[Extraction]:
        X = draw.randn(draw.batch, draw.n, self.d_model, dtype=self.dtype)
        kpm = draw.key_padding_mask() if self.takes_mask else None
        kw = {} if kpm is None else {self.mask_arg: kpm}
        nm = type(self.module).__name__ + (f".{self.path}" if self.path else "")
        try:
            with EvalMode(self.module), torch.no_grad():
                run = observe(self.module, X, **kw)
        except Exception as exc:
            if self.length is None or draw.n == self.length:
                raise
            raise TorchCaptureError(
                f"{nm} raised {type(exc).__name__} on {draw.n} tokens; it ran on {self.length} (a window of fixed "
                f"size?): pass min_length={self.length}, max_length={self.length} (--min-length, --max-length)",
                argument="module",
            ) from exc
        ex = read_run(run, self.target, draw.batch, draw.n, nm, label=self.path)
        ex.key_mask = None if kpm is None else ~kpm
        return [ex]


#: the key padding arguments drawn (torch's convention: ``(B, m)`` bool, True = padded)
MASK_ARGUMENTS = ("src_key_padding_mask", "key_padding_mask")


def _width(module: torch.nn.Module) -> int | None:
    for m in module.modules():
        e = getattr(m, "embed_dim", None)
        if isinstance(e, int):
            return e
        if isinstance(m, torch.nn.Linear):
            return int(m.in_features)
    return None


def capture_adapter_for(module) -> TorchCaptureAdapter | None:
    """A :class:`TorchCaptureAdapter` for ``module`` when a dry run on a tiny draw observes one attention
    kernel (judged at the innermost submodule holding it); None when the module cannot be run on
    ``(B, n, d_model)`` or no kernel is seen; a :class:`TorchCaptureError` when one is seen but cannot be read."""
    if not isinstance(module, torch.nn.Module) or _width(module) is None:
        return None
    ad = TorchCaptureAdapter(module)
    for n in DRY_LENGTHS:
        X = DRY.randn(DRY.batch, n, ad.d_model, dtype=ad.dtype)
        try:
            with EvalMode(module), torch.no_grad():
                run = observe(module, X)
            break
        except TorchCaptureError:
            raise
        except Exception:  # not at this length (a window of fixed size), or no module of (B, n, d) tokens
            continue
    else:
        return None
    if not run.obs.kernels:
        return None
    path = attention_path(run, module)
    ad = TorchCaptureAdapter(module, path=path, length=None if n == DRY.n else n)
    read_run(run, ad.target, DRY.batch, n, type(module).__name__, label=path)  # readable, or why not
    return ad
