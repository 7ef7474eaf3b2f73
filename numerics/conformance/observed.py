r"""Nothing trusted that can be observed (issue 37 item 3): where an adapter *reports* what the module
computed — a user's ``connwalk_attention`` (:class:`~numerics.conformance.adapters.ProtocolAdapter`) or an
:class:`~numerics.conformance.protocol.Adapter` of the user's own (:func:`reports`) — the kit watches the
module itself while the adapter extracts: the torch capture's
:class:`~numerics.conformance.torch_capture.Observer` and forward hooks on the module
(:func:`extract_observed`). Where the adapter never ran the module's forward, the kit runs it on the
drawn tokens itself (a key padding mask through ``key_padding_mask`` / ``src_key_padding_mask``, torch's
convention). :func:`reconcile` then compares, per draw:

* **output**: the module's own output (the first tensor its forward returned, batch first) against the
  reported one, at the accuracy both sides deliver: ``‖Y_module − Y_reported‖_F`` against the sum of the
  two T2 bounds (each is within its own bound of the walk where the module is one), three-valued (a
  NaN / inf on one side only disagrees; equal ones agree); the output judged is the module's own.
* **A**: where the capture sees exactly one attention kernel in the module's call (a softmax consumed by
  a matmul / einsum, ``F.scaled_dot_product_attention``, ``F.multi_head_attention_forward``), its
  float64 attention ``(B, H, n, m)`` against the reported ``A``. The layout first: a reported ``A`` that
  is a permutation of the kernel's axes (heads last, queries first, ...) and fits T2's identity so
  permuted, or one with more key columns than the kernel (a null / memory key's column left in). Then,
  unless the reported ``A`` is a tensor the module's own forward returned (its own claim, judged by T2
  as it stands), the values, through the identity: the module's own output is the walk of the
  observed attention (holds) and not of the reported one (fails).

A disagreement is an :class:`~numerics.errors.AdapterMismatchError` naming the field and the layout it
must have, never a verdict on the module. What could not be observed is recorded per draw as
``trusted`` (the fields taken as reported) with ``why`` (:class:`Seen`): ``("output", "A")`` where the kit
cannot run the module's forward on the drawn tokens (no ``torch.nn.Module``, a forward that raises or
returns no ``(B, n, d_out)`` tensor, a padded draw its forward takes no mask for, a causal draw an
adapter passes its own way without running the module, an adapter that reports several layers or whose
values are not the kit's tokens), ``("A",)`` where the forward ran but the
capture saw no attention kernel in it, or several. The factors (``W_O``, ``W_V``, biases, ``values``)
are claims the identity verifies on the module's own output, never trusted as evidence on their own."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, NoReturn

import torch

from numerics.conformance.adapters import ProtocolAdapter
from numerics.conformance.checks import Verdict, t2_identity
from numerics.conformance.protocol import Adapter, Draw, EvalMode, Extraction, extract_checked, forward_parameters
from numerics.conformance.torch_adapter import MASK_ARGUMENTS
from numerics.conformance.torch_capture import Observer, tensors_in
from numerics.errors import AdapterMismatchError
from numerics.tolerance import FAILS, HOLDS, ROUNDING_SAFETY, decide, rounding_error, tol

__all__ = ["Seen", "Watcher", "reports", "module_path", "extract_observed", "reconcile", "BOTH"]

F64 = torch.float64
#: the fields trusted where the module's forward cannot be run on the drawn tokens
BOTH = ("output", "A")
_AXES = ("B", "H", "n", "m")
_WANT = "(B, H, n, m): batch, heads before queries, queries, keys"


def reports(ad: Adapter) -> bool:
    """Whether ``ad`` reports what its module computed (its output and ``A`` are the adapter's word): a
    :class:`ProtocolAdapter` (the user's ``connwalk_attention``) or an adapter class defined outside
    connwalk. connwalk's own adapters read both from the module's own call."""
    f = getattr(type(ad), "extract", None)
    return f is ProtocolAdapter.extract or not str(getattr(f, "__module__", "")).startswith("numerics.")


def module_path(ad: Adapter, module) -> str | None:
    """Where ``ad`` holds the ``torch.nn.Module`` judged (an attribute, or one attribute down: a model
    handle's ``model``), so that the float64 twin's copy is found at the same place: ``module`` itself,
    else (``module`` is the adapter) the one module the adapter holds; None when there is none."""
    found: list[tuple[str, torch.nn.Module]] = []
    for k, v in vars(ad).items():
        if isinstance(v, torch.nn.Module):
            found.append((k, v))
        elif not isinstance(v, (torch.Tensor, type)) and hasattr(v, "__dict__"):
            found += [(f"{k}.{j}", w) for j, w in vars(v).items() if isinstance(w, torch.nn.Module)]
    for path, v in found:
        if v is module:
            return path
    if (module is ad or not isinstance(module, torch.nn.Module)) and len({id(v) for _, v in found}) == 1:
        return found[0][0]
    return None


def _at(ad: Adapter, path: str | None) -> torch.nn.Module | None:
    obj: Any = ad
    for part in (path or "").split(".") if path else []:
        obj = getattr(obj, part, None)
    return obj if path and isinstance(obj, torch.nn.Module) else None


@dataclass
class _RootCall:
    start: int
    end: int = -1
    output: Any = None


class Watcher(Observer):
    """The torch capture's :class:`Observer` with forward hooks on ``root`` (every call of it: its
    place and returned output, ``root_calls``) and bookkeeping that never reaches the module: a reading
    of the capture that raises ends the observation of the attention (``broken`` says why)."""

    def __init__(self, batch: int, root: torch.nn.Module | None) -> None:
        super().__init__(batch)
        self.broken = ""
        self.root_calls: list[_RootCall] = []
        self.handles = []
        if root is not None:
            self.handles = [root.register_forward_pre_hook(self._pre), root.register_forward_hook(self._post)]

    def _pre(self, _mod, _args) -> None:
        self.root_calls.append(_RootCall(self.tick()))

    def _post(self, _mod, _args, out) -> None:
        open_ = [c for c in self.root_calls if c.end < 0]
        if open_:
            open_[-1].end, open_[-1].output = self.tick(), out

    def close(self) -> None:
        for h in self.handles:
            h.remove()

    def _guard(self, read, *args):
        try:
            return read(*args)
        except Exception as exc:  # the capture's reading, not the module: recorded, never raised into it
            self.broken = self.broken or f"{type(exc).__name__}: {exc}"
            return True

    def _sdpa(self, *args) -> None:
        self._guard(super()._sdpa, *args)

    def _consumer(self, *args) -> bool:
        return bool(self._guard(super()._consumer, *args))

    def _spread(self, *args) -> None:
        self._guard(super()._spread, *args)

    def _mha(self, *args) -> None:
        self._guard(super()._mha, *args)


@dataclass
class Seen:
    """What the kit observed of the module itself on one draw: ``output`` its own output ``(B, n, d_out)``
    (None: not observed), ``returned`` the tensors its forward returned, ``A`` the one observed kernel's
    float64 attention ``(B, H, n, m)`` and ``how`` it was seen (None: not observed); ``trusted`` the
    fields taken as the adapter reported them, and ``why``."""

    output: torch.Tensor | None = None
    returned: list = field(default_factory=list)
    A: torch.Tensor | None = None
    how: str = ""
    trusted: tuple[str, ...] = ()
    why: str = ""


def _batch_first(out, B: int, n: int) -> torch.Tensor | None:
    t = next(tensors_in(out), None)
    if not isinstance(t, torch.Tensor) or t.ndim != 3:
        return None
    if tuple(t.shape[:2]) == (B, n):
        return t.detach().cpu()
    if tuple(t.shape[:2]) == (n, B):
        return t.detach().cpu().transpose(0, 1)
    return None


def _tokens(ad: Adapter, d: Draw, ex: Extraction) -> torch.Tensor | None:
    """The drawn tokens the module's forward is run on: the protocol's ``X``; for another adapter the
    kit's own draw ``(B, n, d_model)``, when the extraction's ``values`` are exactly those."""
    if isinstance(ad, ProtocolAdapter):
        return ad.tokens(d)
    if ad.cross or not isinstance(ad.d_model, int) or ad.d_model < 1:
        return None
    X = d.randn(d.batch, d.n, ad.d_model, dtype=ad.dtype)
    v = ex.values
    ok = isinstance(v, torch.Tensor) and v.shape == X.shape and v.dtype == X.dtype
    return X if ok and torch.equal(v.detach().cpu(), X) else None


def extract_observed(
    ad: Adapter, d: Draw, name: str, module, path: str | None, native: bool
) -> tuple[list[Extraction], Seen]:
    """``ad.extract(d)`` (:func:`~numerics.conformance.protocol.extract_checked`) while the module is
    watched, and what was observed of it (module docstring). The module is ``ad``'s at ``path``, else
    (the own-dtype run only) ``module`` itself."""
    root = _at(ad, path) or (module if native and isinstance(module, torch.nn.Module) else None)
    w = Watcher(d.batch, root)
    try:
        with w:
            exs = extract_checked(ad, d, name)
    finally:
        w.close()
    if root is None:
        why = f"{type(module).__name__} is no torch.nn.Module the kit can run: its output and A are as reported"
        return exs, Seen(trusted=BOTH, why=why)
    if len(exs) != 1:
        return exs, Seen(trusted=BOTH, why=f"{len(exs)} layers reported: the module's forward gives one output")
    calls = [c for c in w.root_calls if c.end > 0]
    if not calls:  # the adapter did not run the module's forward: the kit runs it on the same tokens
        X = _tokens(ad, d, exs[0])
        if X is None:
            why = "the adapter did not run the module, and its values are not the kit's drawn tokens (B, n, d_model)"
            return exs, Seen(trusted=BOTH, why=why)
        if d.causal and ad.takes_causal:  # the adapter passes the flag its own way: no convention to call with
            return exs, Seen(trusted=BOTH, why="the draw is causal and the adapter did not run the module itself")
        kw: dict = {}
        kpm = d.key_padding_mask()
        if kpm is not None:
            arg = next((p for p in MASK_ARGUMENTS if p in forward_parameters(root)), "")
            if not arg:
                return exs, Seen(
                    trusted=BOTH,
                    why=f"the draw pads keys {list(d.pad)}; its forward takes no {' / '.join(MASK_ARGUMENTS)}",
                )
            kw[arg] = kpm
        w = Watcher(d.batch, root)
        try:
            with EvalMode(root), torch.no_grad(), w:
                root(X, **kw)
        except Exception as exc:  # a forward the kit cannot call on the drawn tokens: said, not guessed
            why = f"its forward, run by the kit on the drawn tokens, raised {type(exc).__name__}: {exc}"
            return exs, Seen(trusted=BOTH, why=why)
        finally:
            w.close()
        calls = [c for c in w.root_calls if c.end > 0]
    if not calls:
        return exs, Seen(trusted=BOTH, why="its forward ran without its forward hooks being called")
    c = calls[-1]
    own, returned = _batch_first(c.output, d.batch, d.n), list(tensors_in(c.output))
    if own is None:
        got = [tuple(t.shape) for t in returned[:1]] or type(c.output).__name__
        why = f"its forward returned {got}, not ({d.batch}, {d.n}, d_out) (batch, tokens, features)"
        return exs, Seen(returned=returned, trusted=BOTH, why=why)
    ks = [k for k in w.kernels if c.start < k.seq < c.end]
    if w.broken or len(ks) != 1:
        why = (
            f"the capture could not read its kernel ({w.broken})"
            if w.broken
            else "no attention kernel (a softmax consumed by a matmul / einsum, F.scaled_dot_product_attention, "
            "F.multi_head_attention_forward) observed in its forward"
            if not ks
            else f"{len(ks)} attention kernels observed in its forward ({', '.join(k.how for k in ks)})"
        )
        return exs, Seen(own, returned, trusted=("A",), why=why + ": A is checked only through T2's identity")
    return exs, Seen(own, returned, ks[0].A.cpu(), ks[0].how)


# --------------------------------------------------------------------------- the comparisons
def _fit(ex: Extraction, qm, **fields) -> Verdict | None:
    """T2's identity with ``fields`` replaced (None when that extraction cannot be checked)."""
    cand = Extraction(**{**{f: getattr(ex, f) for f in Extraction.__dataclass_fields__}, **fields})
    try:
        return t2_identity(cand.validate(), qm)[0]
    except Exception:
        return None


def _layout(p: tuple[int, ...]) -> str:
    """The layout of a reported ``A`` whose axes ``permute(p)`` brings to ``(B, H, n, m)``."""
    names = [""] * 4
    for want, got in enumerate(p):
        names[got] = _AXES[want]
    where = (
        " (heads last)" if names[3] == "H" else " (queries before heads)" if names.index("n") < names.index("H") else ""
    )
    return "(" + ", ".join(names) + ")" + where


def _queries(ex: Extraction, d: Draw, cross: bool) -> torch.Tensor | None:
    if cross or d.m != d.n or not any(d.pad):
        return None
    kpm = d.key_padding_mask()
    return None if kpm is None else ~kpm


def reconcile(ex: Extraction, seen: Seen, d: Draw, cross: bool = False) -> None:
    """Compare ``ex`` (its tensors on the CPU) with what was observed (module docstring) and put the
    module's own output in it: what is judged. Raises :class:`AdapterMismatchError` naming the field."""
    qm = _queries(ex, d, cross)
    own = seen.output
    if seen.A is not None and isinstance(ex.A, torch.Tensor) and ex.A.ndim == 4:
        _check_layout(ex, seen.A, own if own is not None else ex.output, qm, seen.how)
    if own is not None:
        _check_output(ex, own, qm)
        ex.output = own
    if seen.A is not None and isinstance(ex.A, torch.Tensor) and tuple(ex.A.shape) == tuple(seen.A.shape):
        A = ex.A.detach()
        if not any(t.shape == A.shape and torch.equal(t.detach().cpu().to(A.dtype), A) for t in seen.returned):
            _check_values(ex, seen, qm)


def _check_layout(ex: Extraction, obs: torch.Tensor, out, qm, how: str) -> None:
    rep, want = ex.A.detach(), tuple(obs.shape)
    same = tuple(rep.shape) == want
    perms = [p for p in itertools.permutations(range(4)) if p != (0, 1, 2, 3) and tuple(rep.permute(p).shape) == want]
    if same and perms:  # axes of equal sizes: only the values can tell the layout
        v = _fit(ex, qm, A=rep, output=out)
        if v is None or v.status != FAILS:
            return
    for p in perms:
        v = _fit(ex, qm, A=rep.permute(p), output=out)
        if v is not None and (v.status == HOLDS or (not same and v.status != FAILS)):
            raise AdapterMismatchError(
                f"the reported A {tuple(rep.shape)} is laid out {_layout(p)}: the module's kernel ({how}) computed "
                f"{want} and T2's identity holds for its own output with the reported A so permuted; expected "
                f"{_WANT}",
                argument="A",
            )
    if not same and tuple(rep.shape[:3]) == want[:3] and rep.shape[3] > want[3]:
        raise AdapterMismatchError(
            f"the reported A has {rep.shape[3]} key columns, the module's kernel ({how}) attends over {want[3]} "
            f"keys: expected {_WANT} {want}, over the real keys only (a null / memory key's column left out)",
            argument="A",
        )


def _check_output(ex: Extraction, own: torch.Tensor, qm) -> None:
    rep = ex.output
    if not isinstance(rep, torch.Tensor) or tuple(rep.shape) != tuple(own.shape):
        got = tuple(rep.shape) if isinstance(rep, torch.Tensor) else type(rep).__name__
        raise AdapterMismatchError(
            f"the reported output is {got}, the module's own forward on the same input gives {tuple(own.shape)}: "
            "expected the module's own output (B, n, d_out)",
            argument="output",
        )
    a, b = own.detach().to(F64), rep.detach().cpu().to(F64)
    diff = torch.where((a == b) | (a.isnan() & b.isnan()), torch.zeros((), dtype=F64), a - b)  # inf = inf, NaN = NaN
    if qm is not None:
        diff = torch.where(qm.to(torch.bool)[:, :, None], diff, torch.zeros((), dtype=F64))
    r = float(torch.linalg.vector_norm(diff))
    if r == 0.0:
        return
    if not math.isfinite(r):  # a NaN / inf on one side only
        _mismatch(f"where the other is finite, one holds NaN / inf (‖Y_module − Y_reported‖_F = {r})")
    v_own, v_rep = _fit(ex, qm, output=own), _fit(ex, qm)
    scale = float(torch.linalg.vector_norm(a)) + float(torch.linalg.vector_norm(b))
    if v_own is not None and v_rep is not None:  # each side within its own T2 bound of the walk
        bound = v_own.bound + v_rep.bound
    else:  # no identity to state the bound from (an A of another shape): the outputs' own rounding
        dt = own.dtype if torch.finfo(own.dtype).eps >= torch.finfo(rep.dtype).eps else rep.dtype
        bound = tol(dt, own.shape[-1], scale=scale, safety=ROUNDING_SAFETY)
    _, fails = decide(r, bound, rounding_error(2, scale))
    if fails:
        _mismatch(f"‖Y_module − Y_reported‖_F = {r:.3e} > {bound:.3e} (the accuracy both deliver)")


def _mismatch(what: str) -> NoReturn:
    raise AdapterMismatchError(
        f"the reported output is not the module's own: its forward on the same input gives {what}; expected the "
        "module's own output (B, n, d_out), not a recomputation",
        argument="output",
    )


def _check_values(ex: Extraction, seen: Seen, qm) -> None:
    assert seen.A is not None
    v_rep, v_obs = _fit(ex, qm), _fit(ex, qm, A=seen.A)
    if v_rep is None or v_obs is None or v_rep.status != FAILS or v_obs.status != HOLDS:
        return
    gap = float((ex.A.detach().to(F64) - seen.A).abs().max())
    raise AdapterMismatchError(
        f"the reported A is not the attention the module's kernel computed ({seen.how}): the module's own output "
        f"is the walk of the observed attention (‖Y − Ŷ‖ = {v_obs.residual:.3e} ≤ {v_obs.bound:.3e}) and not "
        f"of the reported one ({v_rep.residual:.3e} > {v_rep.bound:.3e}); max |A_reported − A_observed| = "
        f"{gap:.3e}; expected {_WANT} {tuple(seen.A.shape)}, the kernel's weights over the real keys",
        argument="A",
    )
