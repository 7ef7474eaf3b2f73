"""Argument contracts of the public entry points (the bad-input half of the toolkit).

One public face; the chain inside runs one way: :mod:`~numerics.contracts.validate` (the shared checks
that name the argument) → :mod:`~numerics.contracts.kinds` (the argument kinds, ``Spec`` and its
subclasses, the binding environment) → :mod:`~numerics.contracts.declarations` (``@contract`` and the
``REGISTRY`` of declared entry points) → this face. Every other package of :mod:`numerics` sits above it."""

from __future__ import annotations

from numerics.contracts.declarations import (
    REGISTRY,
    Choice,
    Complex,
    Contract,
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
    contract,
    to_tensor,
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
