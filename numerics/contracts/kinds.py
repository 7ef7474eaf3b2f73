"""The argument kinds of :mod:`numerics.contracts.declarations` (``Spec`` and its subclasses), the shared
conversion :func:`to_tensor` and the per-call binding environment ``Env`` (symbol sizes, dtype /
device groups). Each kind's ``check`` converts one argument or raises a typed
:class:`~numerics.errors.ConnwalkError`; the decorator, ``Contract`` and ``REGISTRY`` stay in
:mod:`numerics.contracts.declarations`, which re-exports everything here."""

from __future__ import annotations

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

_REAL = (torch.float32, torch.float64)
_COMPLEX = (torch.complex64, torch.complex128)
RANK = {
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
class Env:
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

    def check(self, name: str, value, env: Env):  # pragma: no cover - abstract
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
                from numerics.contracts.validate import check_stochastic

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


def _bound(b, env: Env):
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


#: the classes a :class:`Walk` spec takes as a walk: :mod:`numerics.walk` registers ``ConnectionWalk``
#: (:func:`register_walk_type`) where it defines it, so that this module, below the walk, never imports it
WALK_TYPES: list[type] = []


def register_walk_type(cls: type) -> type:
    """Class decorator: instances of ``cls`` pass a :class:`Walk` spec as walks (they must have ``n``,
    ``d``, ``n_heads`` and ``attention``)."""
    WALK_TYPES.append(cls)
    return cls


@dataclass
class Walk(Spec):
    """A :class:`ConnectionWalk` or blocks ``(..., n, n, d, d)``; binds ``n`` and ``d``. ``matrix=True``
    also accepts a walk matrix ``P`` ``(..., n, n)`` (graph views)."""

    matrix: bool = False
    optional: bool = False
    blame: bool = True

    def check(self, name, value, env):
        if isinstance(value, tuple(WALK_TYPES)):
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
