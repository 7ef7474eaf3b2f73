"""The adapter protocol of :mod:`numerics.conformance.kit`: a drawn input (:class:`Draw`), what one run of
a module yields (:class:`Extraction`), the :class:`Adapter` base, and two helpers every adapter uses
(:class:`EvalMode`, :func:`dtype_of`). Below both :mod:`numerics.conformance.kit` and
:mod:`numerics.conformance.hf` (the Hugging Face adapters), so that neither imports the other for them;
documented as ``numerics.conformance.kit.Draw`` / ``Extraction`` / ``Adapter``, where they are re-exported."""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass

import torch

from numerics.contracts.validate import check_finite
from numerics.errors import ConnwalkError, MemoryBudgetError, ModelError, NonFiniteError, ShapeError
from numerics.tolerance import FAILS, HOLDS, ROUNDING_SAFETY, combine, decide, rounding_error, status, tol

__all__ = [
    "forward_parameters",
    "Draw",
    "Extraction",
    "Adapter",
    "EvalMode",
    "ExtractionError",
    "KernelDefect",
    "dtype_of",
    "draw_strategy",
    "extract_checked",
    "identifies",
    "SHADOW_MAX_PARAMETERS",
]

#: the largest module (parameters) the kit copies to float64 for its shadow run (2 GiB of float64)
SHADOW_MAX_PARAMETERS = 2**28


class ExtractionError(ModelError):
    """The module raised while the kit ran it on a drawn input: ``argument`` is ``module`` and the
    message names the module's class, the exception and the input."""


class KernelDefect(ExtractionError):
    """The module's own kernel was observed, while it ran, to compute something other than the
    attention it claims (an adapter or capture that compares the two raises it): a verdict of the
    module — T2 *fails* on that draw, with ``residual`` > ``bound`` — never bad input."""

    def __init__(self, message: str, *, residual: float, bound: float, argument: str = "module") -> None:
        super().__init__(message, argument=argument)
        self.residual, self.bound = float(residual), float(bound)


F64 = torch.float64


# --------------------------------------------------------------------------- draws and extraction
@dataclass(frozen=True)
class Draw:
    """One drawn input configuration. ``pad[b]``: number of right-padded keys of batch row ``b``;
    ``m``: key/value length (``= n`` for self-attention); ``seed``: the generator of the tokens."""

    batch: int
    n: int
    m: int
    pad: tuple[int, ...]
    causal: bool
    seed: int
    scale: float

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)

    def randn(self, *shape: int, dtype: torch.dtype = F64, gen: torch.Generator | None = None) -> torch.Tensor:
        g = gen or self.generator()
        return (self.scale * torch.randn(*shape, generator=g, dtype=F64)).to(dtype)

    def key_padding_mask(self) -> torch.Tensor | None:
        """``(B, m)`` bool, True = padded key; None when nothing is padded."""
        if not any(self.pad):
            return None
        kpm = torch.zeros(self.batch, self.m, dtype=torch.bool)
        for b, p in enumerate(self.pad):
            if p:
                kpm[b, self.m - p :] = True
        return kpm

    def describe(self) -> str:
        s = f"B={self.batch} n={self.n}"
        if self.m != self.n:
            s += f" m={self.m}"
        if any(self.pad):
            s += f" pad={list(self.pad)}"
        if self.causal:
            s += " causal"
        return s + f" seed={self.seed} scale={self.scale:g}"


@dataclass
class Extraction:
    """What an adapter extracts from one run of the module (shapes with ``B`` batch, ``H`` heads).

    ``output`` ``(B, n, d_out)``: the module's own output; ``A`` ``(B, H, n, m)``: the attention it
    used; ``W_O`` ``(H, d_out, d_h)``, ``W_V`` ``(H, d_h, d_v)``: the transport factors it claims
    (``T_h = W_O[h] W_V[h]``; GQA mapped to query heads); ``values`` ``(B, m, d_v)``: the inputs
    the values are made of; ``b_V`` ``(H, d_h)`` / ``b_O`` ``(d_out,)`` optional biases;
    ``key_mask`` ``(B, m)`` bool, True = real key (None: all real); ``attention_dtype``: the
    precision ``A`` was computed in (default: ``output``'s dtype); ``layer``: a label."""

    output: torch.Tensor
    A: torch.Tensor
    W_O: torch.Tensor
    W_V: torch.Tensor
    values: torch.Tensor
    b_V: torch.Tensor | None = None
    b_O: torch.Tensor | None = None
    key_mask: torch.Tensor | None = None
    attention_dtype: torch.dtype | None = None
    layer: str = ""

    @property
    def self_attention(self) -> bool:
        return self.A.shape[-1] == self.A.shape[-2] and self.W_O.shape[1] == self.W_V.shape[2]

    def validate(self) -> Extraction:
        for nm in ("output", "A", "W_O", "W_V", "values"):
            v = getattr(self, nm)
            if not isinstance(v, torch.Tensor):
                raise ShapeError(f"expected a tensor, got {type(v).__name__}", argument=nm)
        B, H, n, m = self.A.shape if self.A.ndim == 4 else (None,) * 4
        if B is None:
            raise ShapeError(f"expected (B, H, n, m), got {tuple(self.A.shape)}", argument="A")
        if self.W_O.ndim != 3 or self.W_V.ndim != 3 or self.W_O.shape[0] != H or self.W_V.shape[0] != H:
            raise ShapeError(
                f"expected W_O (H={H}, d_out, d_h) and W_V (H, d_h, d_v), got {tuple(self.W_O.shape)} and "
                f"{tuple(self.W_V.shape)}",
                argument="W_O",
            )
        if self.W_O.shape[2] != self.W_V.shape[1]:
            raise ShapeError("W_O's and W_V's head dims differ", argument="W_V")
        if tuple(self.values.shape) != (B, m, self.W_V.shape[2]):
            raise ShapeError(
                f"expected ({B}, {m}, {self.W_V.shape[2]}), got {tuple(self.values.shape)}", argument="values"
            )
        km = self.key_mask
        if km is not None and (not isinstance(km, torch.Tensor) or tuple(km.shape) != (B, m)):
            got = tuple(km.shape) if isinstance(km, torch.Tensor) else type(km).__name__
            raise ShapeError(
                f"expected a ({B}, {m}) bool tensor (True = real key) or None, got {got}", argument="key_mask"
            )
        if tuple(self.output.shape) != (B, n, self.W_O.shape[1]):
            raise ShapeError(
                f"expected ({B}, {n}, {self.W_O.shape[1]}), got {tuple(self.output.shape)}", argument="output"
            )
        # the claimed factors are the module's parameters: a NaN/inf there is bad input, not a verdict
        # (what the module computes from finite parameters, A and its output, is judged instead)
        for nm in ("W_O", "W_V", "b_V", "b_O"):
            v = getattr(self, nm)
            if isinstance(v, torch.Tensor):
                check_finite(nm, v)
        return self


class Adapter:
    """Extraction for one kind of module: ``d_model`` (input width), ``takes_mask`` (a key padding
    mask), ``takes_causal`` (a causal flag), ``causal_only`` (the module runs causal only: every draw
    is causal), ``cross`` (keys/values from a second input of length ``m``), ``max_length``,
    ``dtype``; :meth:`extract` runs the module on a :class:`Draw`."""

    name = "adapter"
    d_model: int = 0
    takes_mask = False
    takes_causal = False
    cross = False
    causal_only = False  # the module runs causal only: every draw is causal (``connwalk_causal``)
    max_length: int | None = None
    dtype: torch.dtype = torch.float32

    def extract(self, draw: Draw) -> list[Extraction]:  # pragma: no cover - interface
        raise NotImplementedError

    def describe_inputs(self, draw: Draw) -> str:
        """The inputs the adapter drew for ``draw`` beside its tokens ("" when none): they are a
        function of the draw (its seed), stated beside a counterexample."""
        return ""

    def shadow(self) -> tuple[Adapter | None, str]:
        """A float64 twin of this adapter for the kit's shadow run, or ``(None, why not)``.

        The twin is ``copy.deepcopy(self)`` with every ``torch.nn.Module`` it holds (directly, or one
        attribute down: a model handle's ``model``) cast by ``.double()`` and its ``dtype`` set to
        float64; precisions the adapter states separately (``attention_dtype``) are kept. An adapter
        whose module cannot be copied or cast, or holds none, has no twin; the reason says why. A
        method replaced on the instance (a wrapper) is not copied: the twin runs its class's methods,
        so no wrapper can make it run the original module. The kit still verifies, on every draw,
        that the twin's tensors are float64 (else the shadow is dropped, with the reason)."""
        if self.dtype == torch.float64:
            return None, "the module is float64 itself"
        mods = _modules(self)
        if not mods:
            return None, f"{type(self).__name__} holds no torch.nn.Module to copy"
        size = sum(p.numel() for m in {id(m): m for m in mods}.values() for p in m.parameters())
        if size > SHADOW_MAX_PARAMETERS:
            return None, f"{size} parameters: a float64 copy would exceed {SHADOW_MAX_PARAMETERS} (2 GiB)"
        try:
            twin = copy.deepcopy(self)
            # an instance attribute over a method (a wrapper put on this adapter: ``ad.extract = ...``)
            # closes over *this* adapter and its float32 module; the twin runs its class's own methods
            for k in [k for k, v in vars(twin).items() if callable(v) and callable(getattr(type(twin), k, None))]:
                delattr(twin, k)
            for m in _modules(twin):
                m.double()
            for holder in [twin, *(v for v in vars(twin).values() if _holder(v))]:
                if isinstance(getattr(holder, "dtype", None), torch.dtype):
                    holder.dtype = torch.float64
        except Exception as exc:  # a module that cannot be copied or cast: no shadow, and why
            return None, f"copy.deepcopy + .double() raised {type(exc).__name__}: {exc}"
        return twin, ""


def _holder(v) -> bool:
    return not isinstance(v, (torch.nn.Module, torch.Tensor, type)) and hasattr(v, "__dict__")


def _modules(obj) -> list[torch.nn.Module]:
    """The ``torch.nn.Module`` attributes of ``obj`` and of its plain-object attributes."""
    out = []
    for v in vars(obj).values():
        if isinstance(v, torch.nn.Module):
            out.append(v)
        elif _holder(v):
            out += [w for w in vars(v).values() if isinstance(w, torch.nn.Module)]
    return out


class EvalMode:
    """Run a module in eval mode (dropout off) and restore its training flag."""

    def __init__(self, module) -> None:
        self.module = module if isinstance(module, torch.nn.Module) else None
        self.was = self.module.training if self.module is not None else False

    def __enter__(self):
        if self.module is not None:
            self.module.eval()

    def __exit__(self, *exc):
        if self.module is not None:
            self.module.train(self.was)


def forward_parameters(module) -> tuple[str, ...]:
    """The names ``module.forward`` takes, in order (none where its signature cannot be read)."""
    try:
        return tuple(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        return ()


def dtype_of(module) -> torch.dtype:
    """The dtype of the module's first floating parameter (float32 when it has none)."""
    params = getattr(module, "parameters", None)
    for p in params() if callable(params) else ():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def draw_strategy(
    ad: Adapter, max_batch: int, max_length: int, masks: bool, min_length: int = 1, causal: bool | None = None
):
    """The Hypothesis strategy of :class:`Draw` for ``ad`` (sizes, key padding, causal flag, seed, scale);
    ``n`` (and a cross-attention module's ``m``) in ``[min_length, max_length]``. ``causal``: True, every
    draw causal (as for a module that declares ``causal_only``, whatever ``masks`` says); False, none;
    None, the adapter's declaration, else a drawn flag where the module takes one."""
    from hypothesis import strategies as st

    if causal is None and ad.causal_only:
        causal = True

    @st.composite
    def draws(draw):
        B = draw(st.integers(1, max_batch))
        n = draw(st.integers(min_length, max_length))
        m = draw(st.integers(min_length, max_length)) if ad.cross else n
        pad = tuple(draw(st.integers(0, m - 1)) for _ in range(B)) if (masks and ad.takes_mask) else (0,) * B
        flag = causal if causal is not None else (draw(st.booleans()) if (masks and ad.takes_causal) else False)
        seed = draw(st.integers(0, 2**31 - 1))
        scale = draw(st.sampled_from((1.0, 0.25, 4.0)))
        return Draw(B, n, m, pad, flag, seed, scale)

    return draws()


def extract_checked(ad: Adapter, d: Draw, name: str) -> list[Extraction]:
    """``ad.extract(d)``; whatever the module raises becomes a typed error naming it."""
    try:
        exs = ad.extract(d)
    except ConnwalkError:
        raise
    except MemoryError:
        raise MemoryBudgetError(f"{name} ran out of memory on input {d.describe()}", argument="module") from None
    except Exception as exc:
        raise ExtractionError(
            f"{name} raised {type(exc).__name__}: {exc} (on input {d.describe()})", argument="module"
        ) from exc
    if not isinstance(exs, list) or not exs or not all(isinstance(e, Extraction) for e in exs):
        raise ShapeError(f"{name}'s adapter returned {type(exs).__name__}, not a list of Extraction", argument="module")
    return exs


def check_finite_parameters(module) -> None:
    """A NaN/inf in a module's parameters is bad input, refused before any draw:
    :class:`~numerics.errors.NonFiniteError` naming ``module`` and the parameter. Buffers are not
    parameters and may hold ±inf on purpose (clipping bounds, masks): what they do to the output is judged."""
    if not isinstance(module, torch.nn.Module):
        return
    for nm, p in module.named_parameters():
        with torch.no_grad():
            bad = int((~torch.isfinite(p)).sum())
        if bad:
            raise NonFiniteError(f"its parameter {nm} contains {bad} NaN/inf entries", argument="module")


# --------------------------------------------------------------------------- evidence
def identifies(ex: Extraction, dtype: torch.dtype) -> tuple[bool | None, str]:
    r"""Whether this draw determines ``A`` — T2's identity tells every wrong row-stochastic ``A`` from
    the right one — at the rounding of ``dtype``: True / False / None (undecided), and why.

    Per batch row, the identity is linear in a query's attention over all heads at once:
    ``y = Σ_h a^h U^h + b_O`` with ``U^h = (X W_V^hᵀ + b_V^h) W_O^hᵀ`` ``(m_r × d_out)`` over the ``m_r``
    real keys. Two row-stochastic ``A`` differ by ``δ`` with ``Σ_j δ^h_j = 0`` per head (the ones'
    direction is invisible: a constant on every value, ``b_V`` too, shifts every stochastic row alike),
    so the draw determines ``A`` iff ``M = [Qᵀ U^1; …; Qᵀ U^H]`` ``(H(m_r−1) × d_out)``, ``Q`` an
    orthonormal basis of ``1^⊥``, has full row rank: then a wrong ``A`` moves the output by at least
    ``σ_min(M)·‖δ‖``. Not identifying, exactly, where ``m_r − 1 > min(d_h, d_v)`` or
    ``H(m_r − 1) > d_out`` (a rank bound); else ``σ_min`` (float64 SVD, error ``e`` =
    ``rounding_error(H(m_r−1) + d_out, σ_max)``) is decided against ``θ = tol(dtype, d_v + d_h + m_r,
    scale=σ_max, safety=ROUNDING_SAFETY)``: every ``M`` within the module's rounding of this one has
    full rank (identifying), some has not (not identifying), or ``σ_min`` is within ``e`` of ``θ``."""
    Wo, Wv, X = (t.detach().to(F64) for t in (ex.W_O, ex.W_V, ex.values))
    H, dh, dv = Wv.shape
    real = torch.ones(X.shape[:2], dtype=torch.bool) if ex.key_mask is None else ex.key_mask.to(torch.bool)
    seen, worst = [], (math.inf, "")
    for b in range(X.shape[0]):
        idx = real[b].nonzero().reshape(-1)
        mr = int(idx.numel())
        if mr <= 1:  # one real key: a stochastic row is determined by itself
            continue
        if mr - 1 > min(dh, dv) or H * (mr - 1) > Wo.shape[1]:
            why = f"b={b}: {mr} real keys, head dim {dh}, d_v {dv}, {H} heads → d_out {Wo.shape[1]}"
            return False, why + ": rank < H(m−1), a wrong A gives the same output"
        # Q[:, 1:]: an orthonormal basis of 1^⊥ (QR of [1, e_1, …, e_{m−1}])
        Q = torch.linalg.qr(torch.cat([torch.ones(mr, 1, dtype=F64), torch.eye(mr, dtype=F64)[:, : mr - 1]], 1))[0]
        # Qᵀ U^h = (Qᵀ X) W_V^hᵀ W_O^hᵀ, in that order (b_V and b_O: constant over the keys, Qᵀ 1 = 0)
        V = torch.einsum("rd,hkd->hrk", Q[:, 1:].T @ X[b, idx], Wv)
        M = torch.einsum("hrk,hok->hro", V, Wo).reshape(H * (mr - 1), -1)
        sv = torch.linalg.svdvals(M.T if M.shape[0] < M.shape[1] else M)  # tall: LAPACK's wide path is far slower
        smax, smin = float(sv[0]), float(sv[-1])
        theta = tol(dtype, dv + dh + mr, scale=smax, safety=ROUNDING_SAFETY)
        h, f = decide(smin, theta, rounding_error(M.shape[0] + M.shape[1], smax))
        seen.append(status(bool(f), bool(h)))
        if smin / max(theta, 1e-300) < worst[0]:
            worst = (smin / max(theta, 1e-300), f"b={b}: σ_min/θ = {smin:.3e}/{theta:.3e} over {mr} keys")
    st = combine(seen)
    if st == FAILS:
        return False, worst[1] + ": within the rounding a wrong A gives the same output"
    return (True if st == HOLDS else None), (worst[1] or "one real key per batch row") + (
        "" if st == HOLDS else ": undecided"
    )
