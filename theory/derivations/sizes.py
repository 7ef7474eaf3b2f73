"""Supported sizes of the symbolic derivations: the :data:`SIZES` registry (read by
:mod:`theory.registry` and rendered in THEOREMS.md) and the :func:`sized` decorator that validates
keyword sizes, raising :class:`~theory.errors.UnsupportedSizeError`.
"""

from __future__ import annotations

import functools
import inspect

import sympy as sp

from ..errors import UnsupportedSizeError

#: supported size ranges per derivation id (inclusive); used for validation and in THEOREMS.md
SIZES: dict[str, dict[str, tuple[int, int]]] = {}


def sized(theorem: str, **ranges: tuple[int, int]):
    """Register supported size ranges and validate keyword sizes before deriving."""

    def deco(fn):
        SIZES[theorem] = dict(ranges)
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            for name, value in bound.arguments.items():
                if name not in ranges:
                    continue
                lo, hi = ranges[name]
                if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                    raise UnsupportedSizeError(theorem, name, value, ranges)
            return fn(*bound.args, **bound.kwargs)

        wrapper.supported_sizes = dict(ranges)
        return wrapper

    return deco


def sized_symbol(name, **kw):
    return sp.Symbol(name, **kw)
