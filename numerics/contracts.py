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
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from numerics.errors import (
    DeviceMismatchError,
    DTypeError,
    NegativeWeightError,
    NonFiniteError,
    ParameterError,
    ShapeError,
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

_REAL = (torch.float32, torch.float64)
_COMPLEX = (torch.complex64, torch.complex128)
_RANK = {
    torch.float16: 0,
    torch.bfloat16: 0,
    torch.float32: 1,
    torch.float64: 2,
    torch.complex64: 1,
    torch.complex128: 2,
}


# ------------------------------------------------------------------------------------- conversion
def to_tensor(name: str, x) -> torch.Tensor:
    """``x`` as a tensor without silent precision loss: tensors as given, numpy arrays with their
    dtype, Python lists / tuples / numbers as float64 (complex128 when complex); bool lists and
    ragged or non-numeric input are refused (:class:`DTypeError`)."""
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, np.ndarray):
        if x.dtype == object or x.dtype.kind not in "biufc":
            raise DTypeError(f"expected a numeric array, got numpy dtype {x.dtype}", argument=name)
        return torch.from_numpy(np.ascontiguousarray(x).reshape(x.shape))  # ascontiguousarray makes 0-d 1-d
    if isinstance(x, (str, bytes, dict, set)) or x is None:
        raise DTypeError(f"expected a tensor, got {type(x).__name__}", argument=name)
    try:
        probe = torch.as_tensor(x)
    except Exception as exc:
        raise DTypeError(f"cannot convert {type(x).__name__} to a tensor ({exc})", argument=name) from None
    if probe.dtype == torch.bool:
        raise DTypeError("expected numbers, got bools (pass a float tensor)", argument=name)
    if probe.is_complex():
        return torch.as_tensor(x, dtype=torch.complex128)
    return torch.as_tensor(x, dtype=torch.float64)


# ------------------------------------------------------------------------------------- specs
class _Env:
    """Sizes bound so far (symbol -> (size, argument that bound it)) and the dtype/device groups."""

    def __init__(self, mins: dict[str, int]):
        self.sizes: dict[str, tuple[int, str]] = {}
        self.mins = mins
        self.groups: dict[str, list[tuple[str, torch.Tensor, bool]]] = {}
        self.occ: dict[str, list[tuple[int, str, str, bool, float]]] = {}
        self.conflict = False

    def bind(self, sym: str, size: int, name: str, where: str, ref: bool = False, weight: float = 1.0) -> None:
        lo = self.mins.get(sym, 1)
        if size < lo:
            raise ShapeError(f"{sym} must be >= {lo}, got {sym}={size} in shape {where}", argument=name)
        self.occ.setdefault(sym, []).append((size, name, where, ref, weight))
        if sym not in self.sizes:
            self.sizes[sym] = (size, name)
        elif self.sizes[sym][0] != size:
            self.conflict = True

    def resolve(self) -> None:
        """Sizes that disagree between arguments: the value of a reference object (a walk, weights,
        dynamics) or else the majority of dimensions (optional arguments count half; ties: the
        first-declared argument's value) is taken as meant, and the first argument that differs from
        it is named."""
        if not self.conflict:
            return
        for sym, occ in self.occ.items():  # one argument disagreeing with itself is named first
            per: dict[str, set] = {}
            for size, nm, where, *_ in occ:
                per.setdefault(nm, set()).add(size)
            for nm, sizes in per.items():
                if len(sizes) > 1:
                    where = next(o[2] for o in occ if o[1] == nm)
                    raise ShapeError(
                        f"has {sym}={' and '.join(map(str, sorted(sizes)))} in one shape {where}", argument=nm
                    )
        for sym, occ in self.occ.items():
            if len({o[0] for o in occ}) < 2:
                continue
            refs = [o for o in occ if o[3]]
            if refs:
                good = refs[0][0]
            else:
                # one vote per dimension (half for optional arguments such as masks and biases)
                votes: dict[int, float] = {}
                for size, _, _, _, wt in occ:
                    votes[size] = votes.get(size, 0.0) + wt
                best = max(votes.values())
                good = next(o[0] for o in occ if votes[o[0]] == best)
            bad = next(o for o in occ if o[0] != good and not o[3])
            other = next(o for o in occ if o[0] == good)
            src = f"the {other[1]} has" if other[3] else f"{other[1]} has"
            raise ShapeError(f"has {sym}={bad[0]} but {src} {sym}={good} (shape {bad[2]})", argument=bad[1])


class Spec:
    """Base class: ``check(name, value, env)`` returns the (possibly converted) value or raises."""

    optional = False

    def check(self, name: str, value, env: _Env):  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


def _shape_str(x: torch.Tensor) -> str:
    return str(tuple(x.shape))


@dataclass
class Tensor(Spec):
    """A tensor argument. ``shape``: a pattern such as ``"... n d"`` (``...`` = any leading dims,
    symbols bind sizes, integers are literal sizes, ``*`` any size) or a tuple of alternatives
    tried by rank. ``dtype``: ``"real"``, ``"complex"`` (real or complex float) or ``"mask"`` (bool)."""

    shape: str | tuple = "..."
    dtype: str = "real"
    finite: bool = True
    neg_inf: bool = False
    nonneg: bool = False
    positive: bool = False
    stochastic: bool = False
    optional: bool = False
    group: str | None = "main"
    blame: bool = True
    min_batch: int = 0

    def describe(self) -> str:
        return f"Tensor({self.shape!r}, {self.dtype})"

    def _dtype(self, name, x):
        if self.dtype == "mask":
            if x.dtype != torch.bool:
                raise DTypeError(f"expected a bool mask, got dtype {x.dtype}", argument=name)
            return
        ok = _REAL + (_COMPLEX if self.dtype == "complex" else ())
        if x.dtype in ok:
            return
        if x.dtype in (torch.float16, torch.bfloat16):
            raise DTypeError(
                f"{x.dtype} is not supported (too little precision for these checks); cast to float32 or float64",
                argument=name,
            )
        if x.is_complex():
            raise DTypeError(f"expected a real floating tensor, got complex dtype {x.dtype}", argument=name)
        want = "float32/float64" + (" or complex" if self.dtype == "complex" else "")
        raise DTypeError(f"expected a floating tensor ({want}), got {x.dtype}; cast explicitly", argument=name)

    def _pattern(self, name, x):
        pats = self.shape if isinstance(self.shape, tuple) else (self.shape,)
        toks_list = [p.split() for p in pats]
        for toks in toks_list:
            fixed = [t for t in toks if t != "..."]
            if ("..." in toks and x.ndim >= len(fixed) + self.min_batch) or x.ndim == len(toks):
                return toks
        doc = " or ".join("(" + ", ".join(t) + ")" for t in toks_list)
        raise ShapeError(f"expected shape {doc}, got {_shape_str(x)}", argument=name)

    def check(self, name, value, env):
        x = to_tensor(name, value)
        self._dtype(name, x)
        if self.group is not None:
            first = next(iter(env.groups.get(self.group, [])), None)
            if first is not None and first[1].device != x.device:
                raise DeviceMismatchError(
                    f"device {x.device} differs from {first[0]}'s {first[1].device}", argument=name
                )
        if x.device.type == "meta":
            raise DeviceMismatchError("is a meta tensor (no values to check or compute with)", argument=name)
        toks = self._pattern(name, x)
        where = _shape_str(x)
        fixed = [t for t in toks if t != "..."]
        lead = x.ndim - len(fixed)
        for k in range(lead):
            if x.shape[k] < 1:
                raise ShapeError(f"has an empty batch dimension, shape {where}", argument=name)
        for t, size in zip(fixed, x.shape[lead:]):
            if t == "*":
                if size < 1:
                    raise ShapeError(f"has an empty dimension, shape {where}", argument=name)
            elif t.isdigit():
                if size != int(t):
                    raise ShapeError(f"expected size {t} in shape {where}", argument=name)
            else:
                env.bind(t, int(size), name, where, weight=0.5 if self.optional else 1.0)
        if self.dtype != "mask":
            if self.finite and not bool(torch.isfinite(x).all()):
                bad = torch.isnan(x) | ((x == math.inf) if self.neg_inf and not x.is_complex() else ~torch.isfinite(x))
                if bool(bad.any()):
                    what = "NaN/+inf" if self.neg_inf else "NaN/inf"
                    raise NonFiniteError(f"contains {int(bad.sum())} {what} entries", argument=name)
            if self.nonneg and bool((x < 0).any()):
                raise NegativeWeightError(
                    f"has negative entries (min {x.min().item():.3e}); weights must be >= 0", argument=name
                )
            if self.positive and bool((x <= 0).any()):
                raise ParameterError(f"must be positive (min {x.min().item():.3e})", argument=name)
            if self.stochastic:
                from numerics.validate import check_stochastic

                check_stochastic(name, x)
            if self.group is not None:
                env.groups.setdefault(self.group, []).append((name, x, self.blame))
        return x


@dataclass
class Int(Spec):
    """An integer (Python or numpy, not bool) in ``[lo, hi]``; ``lo``/``hi`` may name a bound size
    symbol with an offset, e.g. ``hi=("N", -2)`` means ``<= N − 2``."""

    lo: Any = None
    hi: Any = None
    optional: bool = False

    def describe(self) -> str:
        return f"Int[{self.lo}, {self.hi}]"

    def check(self, name, value, env):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
                raise ParameterError(f"expected an integer, got {value!r}", argument=name)
            raise ParameterError(f"expected an integer, got {type(value).__name__} {value!r}", argument=name)
        v = int(value)
        lo, hi = _bound(self.lo, env), _bound(self.hi, env)
        if lo is not None and v < lo:
            raise ParameterError(f"must be >= {lo}, got {v}", argument=name)
        if hi is not None and v > hi:
            raise ParameterError(f"must be <= {hi}, got {v}", argument=name)
        return v


def _bound(b, env: _Env):
    if b is None or isinstance(b, (int, float)):
        return b
    if callable(b):
        return b({k: v for k, (v, _) in env.sizes.items()})
    sym, off = b
    if sym not in env.sizes:
        return None
    return env.sizes[sym][0] + off


@dataclass
class Float(Spec):
    """A real number (Python or numpy, not bool): never NaN; finite unless ``inf_ok``; ``lo``/``hi``
    bounds, open (``>``/``<``) unless ``closed``."""

    lo: float | None = None
    hi: float | None = None
    closed: bool = False
    inf_ok: bool = False
    optional: bool = False
    nonzero: bool = False

    def describe(self) -> str:
        return f"Float({self.lo}, {self.hi})"

    def check(self, name, value, env):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise ParameterError(f"expected a real number, got {type(value).__name__} {value!r}", argument=name)
        v = float(value)
        if math.isnan(v) or (math.isinf(v) and not self.inf_ok):
            raise ParameterError(f"must be a finite number, got {v}", argument=name)
        if self.lo is not None and (v < self.lo or (v == self.lo and not self.closed)):
            raise ParameterError(f"must be {'>=' if self.closed else '>'} {self.lo}, got {v}", argument=name)
        if self.hi is not None and (v > self.hi or (v == self.hi and not self.closed)):
            raise ParameterError(f"must be {'<=' if self.closed else '<'} {self.hi}, got {v}", argument=name)
        if self.nonzero and v == 0:
            raise ParameterError("must be nonzero", argument=name)
        return value if isinstance(value, float) else v


@dataclass
class Complex(Spec):
    """A real or complex number (Python or numpy, not bool) with finite parts."""

    optional: bool = False

    def check(self, name, value, env):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Complex):
            raise ParameterError(f"expected a number, got {type(value).__name__} {value!r}", argument=name)
        v = complex(value)
        if not (math.isfinite(v.real) and math.isfinite(v.imag)):
            raise ParameterError(f"must be a finite number, got {v}", argument=name)
        return v


@dataclass
class Index(Spec):
    """An integer index into a bound size ``dim``: ``−size <= i < size``."""

    dim: str = "n"
    optional: bool = False

    def check(self, name, value, env):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise ParameterError(f"expected an integer index, got {type(value).__name__} {value!r}", argument=name)
        v = int(value)
        if self.dim in env.sizes:
            n = env.sizes[self.dim][0]
            if not -n <= v < n:
                raise ParameterError(f"index {v} out of range for {self.dim}={n}", argument=name)
        return v


@dataclass
class Choice(Spec):
    options: tuple = ()
    optional: bool = False

    def check(self, name, value, env):
        try:
            ok = value in self.options
        except TypeError:
            ok = False
        if not ok or isinstance(value, bool) != any(isinstance(o, bool) for o in self.options if o == value):
            raise ParameterError(f"must be one of {', '.join(map(repr, self.options))}, got {value!r}", argument=name)
        return value


@dataclass
class Flag(Spec):
    optional: bool = False

    def check(self, name, value, env):
        if not isinstance(value, (bool, np.bool_)):
            raise ParameterError(f"expected True or False, got {type(value).__name__} {value!r}", argument=name)
        return bool(value)


@dataclass
class FloatDType(Spec):
    optional: bool = False

    def check(self, name, value, env):
        if not isinstance(value, torch.dtype):
            raise DTypeError(f"expected a torch dtype, got {value!r}", argument=name)
        if value not in _REAL:
            raise DTypeError(
                f"a walk is a float operator: expected torch.float32 or torch.float64, got {value}", argument=name
            )
        return value


@dataclass
class PrecisionDType(Spec):
    """A floating ``torch.dtype`` naming a precision (e.g. the precision attention entries were
    computed in); any floating dtype, half included. Anything else: :class:`ParameterError`."""

    optional: bool = False

    def check(self, name, value, env):
        if not isinstance(value, torch.dtype) or not value.is_floating_point:
            raise ParameterError(f"must be a floating torch.dtype, got {value!r}", argument=name)
        return value


@dataclass
class Options(Spec):
    """Extra keyword options (a ``**kwargs`` parameter): each key must be one of ``specs`` and its
    value is checked by that spec; the error names the option (the keyword the caller used)."""

    specs: dict = field(default_factory=dict)
    optional: bool = True

    def describe(self) -> str:
        return f"Options({', '.join(self.specs)})"

    def check(self, name, value, env):
        out = {}
        for key, v in dict(value).items():
            spec = self.specs.get(key)
            if spec is None:
                raise ParameterError(f"unknown option; expected one of {', '.join(self.specs)}", argument=key)
            out[key] = v if v is None and spec.optional else spec.check(key, v, env)
        return out


@dataclass
class Instance(Spec):
    cls: Any = object
    what: str = ""
    optional: bool = False
    bind: Callable | None = None  # obj -> {symbol: size}
    tensor: Callable | None = None  # obj -> a tensor whose dtype/device the "main" group must share

    def check(self, name, value, env):
        cls = (
            self.cls()
            if callable(self.cls) and not isinstance(self.cls, type) and not isinstance(self.cls, tuple)
            else self.cls
        )
        if not isinstance(value, cls):
            raise DTypeError(
                f"expected {self.what or getattr(cls, '__name__', cls)}, got {type(value).__name__}", argument=name
            )
        if self.bind is not None:
            for sym, size in self.bind(value).items():
                env.bind(sym, int(size), name, f"of {type(value).__name__}", ref=True)
        if self.tensor is not None:
            env.groups.setdefault("main", []).append((name, self.tensor(value), False))
        return value


@dataclass
class Walk(Spec):
    """A :class:`ConnectionWalk` or blocks ``(..., n, n, d, d)``; binds ``n`` and ``d``. ``matrix=True``
    also accepts a walk matrix ``P`` ``(..., n, n)`` (graph views)."""

    matrix: bool = False
    optional: bool = False
    blame: bool = True

    def check(self, name, value, env):
        from numerics.walk import ConnectionWalk

        if isinstance(value, ConnectionWalk):
            env.bind("n", value.n, name, "of the walk", ref=True)
            env.bind("d", value.d, name, "of the walk", ref=True)
            env.bind("H", value.n_heads, name, "of the walk", ref=True)
            env.groups.setdefault("main", []).append((name, value.attention, self.blame))
            return value
        if type(value).__name__ == "DiGraph" and self.matrix:
            return value
        if not isinstance(value, (torch.Tensor, np.ndarray, list, tuple)):
            what = "a ConnectionWalk" + (
                ", blocks or a walk matrix" if self.matrix else " or blocks B (..., n, n, d, d)"
            )
            raise DTypeError(f"expected {what}, got {type(value).__name__}", argument=name)
        pats = ("... n n d d", "n n") if self.matrix else ("... n n d d",)
        if self.matrix and isinstance(value, (torch.Tensor, np.ndarray, list, tuple)):
            x = to_tensor(name, value)
            pats = ("... n n d d",) if x.ndim >= 4 else ("... n n",)
            value = x
        spec = Tensor(pats, nonneg=False, blame=self.blame)
        if pats == ("... n n",):
            spec = Tensor("... n n", nonneg=True, blame=self.blame)
        try:
            return spec.check(name, value, env)
        except DTypeError as exc:
            if not isinstance(value, (torch.Tensor, np.ndarray, list, tuple)):
                what = "a ConnectionWalk" + (
                    ", blocks or a walk matrix" if self.matrix else " or blocks B (..., n, n, d, d)"
                )
                raise DTypeError(f"expected {what}, got {type(value).__name__}", argument=name) from None
            raise exc


@dataclass
class Passthrough(Spec):
    """Accepted as given (documented in the function's docstring)."""

    optional: bool = True

    def check(self, name, value, env):
        return value


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
        env = _Env(self.mins)
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


def _check_groups(env: _Env) -> None:
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
                good = max((dt for dt, c in count.items() if c == best), key=lambda dt: _RANK.get(dt, 0))
            cand = [m for m in members if m[2] and m[1].dtype != good] or [m for m in members if m[1].dtype != good]
            low = min(cand, key=lambda m: (_RANK.get(m[1].dtype, 0), members.index(m)))
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
    from numerics.validate import check_memory

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
