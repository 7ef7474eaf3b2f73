r"""Declared argument contracts of the public entry points: one declaration per function drives its
entry validation (and the bad-input test matrix in ``tests/contracts``).

A declaration names every argument's *kind*::

    @contract(A=Tensor("... H n n", nonneg=True), T=Tensor("H d d"), stochastic=Flag())
    def from_mha(cls, A, T, *, stochastic=False): ...

and the wrapper checks the arguments, in declaration order, before the body runs. What a kind
guarantees (each refusal is a typed :class:`~numerics.errors.ConnwalkError` whose message starts
with the argument's name, i.e. the parameter name the caller used):

* :class:`Tensor` — converted (``numpy`` arrays keep their dtype; Python lists/tuples become
  float64, or complex128, never float32; bool lists are refused); dtype ``float32``/``float64``
  (``real``), also complex (``complex``) or ``bool`` (``mask``); integer, bool, half and bfloat16
  tensors are refused where a float operator is meant (:class:`DTypeError`); rank and sizes match
  the shape pattern, whose symbols (``n``, ``d``, ``H`` …) must agree between arguments and be
  ``>= 1`` (no empty sizes; :class:`ShapeError`); finite (NaN/inf: :class:`NonFiniteError`;
  ``neg_inf=True`` admits ``−inf``, e.g. masked scores), nonnegative
  (:class:`NegativeWeightError`), row-stochastic (:class:`NotStochasticError`); tensors of one
  ``group`` share dtype and device (the lower-precision argument is named: promoting it would be a
  silent cast). Non-contiguous tensors and leading batch dims (``...``) are accepted.
* :class:`Int` / :class:`Float` — Python or numpy numbers (``bool`` refused), in range, finite;
  ``Int`` refuses non-integers (``1.5``). :class:`Index` — an integer in ``[−n, n)`` for a bound
  size ``n``. :class:`Choice` — one of the listed values. :class:`Flag` — a bool.
  All :class:`ParameterError`.
* :class:`Walk` — a :class:`~numerics.walk.ConnectionWalk` or blocks ``B`` ``(..., n, n, d, d)``;
  binds ``n``, ``d`` (and ``H``). :class:`Instance` — an object of a given class.
  :class:`FloatDType` — a floating ``torch.dtype`` (``walk.to(torch.int64)`` is refused).
  :class:`PrecisionDType` — any floating ``torch.dtype`` naming a precision (``ParameterError``).
  :class:`Options` — a ``**kwargs`` parameter: known keys, each checked by its own spec.
  :class:`Passthrough` — accepted as given (documented: generators, devices, callables).

``REGISTRY`` maps each declared function's qualified name (``module.qualname``) to its
:class:`Contract`; ``tests/contracts/test_declarations.py`` fails when a public function of the
README toolkit map has none. :meth:`Contract.validate` checks a plain mapping (dataclass fields,
command-line options named as typed, e.g. ``--seed``).

The kinds themselves live in :mod:`numerics.contracts.kinds` and are re-exported here.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from numerics.contracts.kinds import (
    RANK,
    Choice,
    Complex,
    Env,
    Flag,
    Float,
    FloatDType,
    Index,
    Instance,
    Int,
    Options,
    Passthrough,
    PrecisionDType,
    Spec,
    Tensor,
    Walk,
    to_tensor,
)
from numerics.errors import (
    DeviceMismatchError,
    DTypeError,
    NonFiniteError,
    ParameterError,
)

__all__ = [
    "REGISTRY",
    "Contract",
    "contract",
    "Spec",
    "Tensor",
    "Int",
    "Float",
    "Complex",
    "Index",
    "Choice",
    "Flag",
    "Walk",
    "Instance",
    "FloatDType",
    "PrecisionDType",
    "Options",
    "Passthrough",
    "to_tensor",
]

REGISTRY: dict[str, Contract] = {}


# ------------------------------------------------------------------------------------- contracts
@dataclass
class Contract:
    """The declared kinds of one entry point's arguments (``specs``, in checking order), minimum
    sizes per symbol (``mins``, default 1) and the qualified name."""

    name: str
    specs: dict[str, Spec]
    mins: dict[str, int] = field(default_factory=dict)
    after: Callable | None = None  # (arguments, sizes) -> None: cross-argument rules

    def validate(self, arguments: dict) -> dict:
        """Check ``arguments`` (name -> value) in declaration order; returns them converted."""
        env = Env(self.mins)
        out = dict(arguments)
        for nm, spec in self.specs.items():
            if nm not in out:
                continue
            v = out[nm]
            if v is None and (spec.optional or isinstance(spec, Passthrough)):
                continue
            out[nm] = spec.check(nm, v, env)
        env.resolve()
        _check_groups(env)
        if self.after is not None:
            self.after(out, {k: v for k, (v, _) in env.sizes.items()})
        return out


def _check_groups(env: Env) -> None:
    for members in env.groups.values():
        if len(members) < 2:
            continue
        dts = {x.dtype for _, x, _ in members}
        if len(dts) > 1:
            # name the odd one out: the dtype of the majority (a reference object's, when there is one)
            # is taken as meant; ties name the lower-precision argument (promoting it would be the
            # silent cast we refuse)
            refs = [m for m in members if not m[2]]
            count: dict = {}
            for m in members:
                count[m[1].dtype] = count.get(m[1].dtype, 0) + 1
            if refs:
                good = refs[0][1].dtype
            else:
                best = max(count.values())
                good = max((dt for dt, c in count.items() if c == best), key=lambda dt: RANK.get(dt, 0))
            cand = [m for m in members if m[2] and m[1].dtype != good] or [m for m in members if m[1].dtype != good]
            low = min(cand, key=lambda m: (RANK.get(m[1].dtype, 0), members.index(m)))
            other = next(m for m in members if m[1].dtype == good)
            raise DTypeError(
                f"dtype {low[1].dtype} differs from {other[0]}'s {other[1].dtype}; cast explicitly", argument=low[0]
            )
        devs = {x.device for _, x, _ in members}
        if len(devs) > 1:
            cand = [m for m in members if m[2]] or members
            first = members[0][1].device
            bad = next((m for m in cand if m[1].device != first), cand[-1])
            raise DeviceMismatchError(f"device {bad[1].device} differs from {members[0][0]}'s {first}", argument=bad[0])


def contract(*, mins: Any = None, after: Any = None, name: Any = None, **specs: Any):
    """Decorator: declare ``specs`` for the function's parameters and check them on every call."""

    def deco(f):
        qual = name or f"{f.__module__}.{f.__qualname__}"
        sig = inspect.signature(f)
        unknown = set(specs) - set(sig.parameters)
        if unknown:
            raise TypeError(f"contract for {qual} names unknown parameters {sorted(unknown)}")
        c = Contract(qual, dict(specs), dict(mins or {}), after)
        REGISTRY[qual] = c

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise ParameterError(str(exc), argument=qual.rsplit(".", 1)[-1]) from None
            bound.arguments.update(c.validate(bound.arguments))
            return f(*bound.args, **bound.kwargs)

        wrapper.__contract__ = c
        return wrapper

    return deco


def declare(qualname: str, *, mins: dict | None = None, after: Callable | None = None, **specs: Spec) -> Contract:
    """Register a contract checked explicitly with :meth:`Contract.validate` (dataclass fields, CLI options)."""
    c = Contract(qualname, dict(specs), dict(mins or {}), after)
    REGISTRY[qualname] = c
    return c


def parallel_memory(arguments: dict, sizes: dict) -> None:
    """Memory rule of :func:`numerics.laplacian.parallel_constraints`: ``C`` has ``n³d²`` entries."""
    from numerics.contracts.validate import check_memory

    O = arguments["O"]
    n, d = sizes["n"], sizes["d"]
    batch = math.prod(O.shape[:-4])
    check_memory(
        "O",
        batch * n**3 * d**2 * O.element_size(),
        f"the n²d × nd constraint matrix (n={n}, d={d})",
        "the Gram form used by numerics.laplacian.diagnose (svd_max_entries)",
    )


def finite_on_support(tensor: str, support: Callable) -> Callable:
    """An ``after`` rule: ``arguments[tensor]`` (which may hold NaN off the support, never read there)
    must be finite where ``support(arguments)`` is True."""

    def rule(arguments: dict, sizes: dict) -> None:
        x, sup = arguments[tensor], support(arguments)
        try:
            bad = ~torch.isfinite(x) & sup[..., None, None]
        except RuntimeError:
            return
        if bool(bad.any()):
            raise NonFiniteError(
                f"contains {int(bad.sum())} NaN/inf entries on the support (where they are read)", argument=tensor
            )

    return rule


def positive_mass(tensor: str) -> Callable:
    """An ``after`` rule: ``arguments[tensor]`` (a nonnegative weight vector ``(..., n)``, e.g. a
    given ``π`` normalised inside) must have positive total mass in every batch element; all zeros
    would be normalised to NaN."""

    def rule(arguments: dict, sizes: dict) -> None:
        x = arguments.get(tensor)
        if x is None:
            return
        mass = x.sum(-1)
        if bool((mass <= 0).any()):
            raise ParameterError(
                f"has no mass ({int((mass <= 0).sum())} of {mass.numel()} vectors sum to 0): it cannot be "
                "normalised to a distribution",
                argument=tensor,
            )

    return rule


def batch_agree(**cores: int | str) -> Callable:
    """An ``after`` rule: the leading (batch) dims of the named arguments broadcast together.
    ``cores`` maps each argument to the number of its trailing core dims (``"walk"``: a
    :class:`~numerics.walk.ConnectionWalk`, whose ``batch_shape`` is used); an argument with no more
    dims than its core (e.g. one shared ``(d, d)`` transport) has no batch. The first argument is the
    reference; the first later one that does not broadcast with those before it is named
    (:class:`ShapeError`), instead of torch's error deep inside the computation."""
    from numerics.errors import ShapeError

    def rule(arguments: dict, sizes: dict) -> None:
        seen: list[tuple[str, tuple]] = []
        for nm, core in cores.items():
            x = arguments.get(nm)
            if x is None:
                continue
            if core == "walk":
                if not hasattr(x, "batch_shape"):
                    continue
                b = tuple(x.batch_shape)
            else:
                if not isinstance(x, torch.Tensor) or x.ndim <= int(core):
                    continue
                b = tuple(x.shape[: x.ndim - int(core)])
            try:
                torch.broadcast_shapes(*[s for _, s in seen], b)
            except RuntimeError:
                ref = ", ".join(f"{m}'s {s}" for m, s in seen)
                raise ShapeError(f"batch shape {b} does not broadcast with {ref}", argument=nm) from None
            seen.append(("the walk" if core == "walk" else nm, b))

    rule.cores = dict(cores)  # type: ignore[attr-defined]  # read by the bad-input matrix
    return rule
