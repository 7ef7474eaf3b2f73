"""Argument contracts of the public entry points (the bad-input half of the toolkit).

One public face; the chain inside runs one way: :mod:`~numerics.contracts.validate` (the shared checks
that name the argument) → :mod:`~numerics.contracts.kinds` (the argument kinds, ``Spec`` and its
subclasses, the binding environment) → :mod:`~numerics.contracts.declarations` (``@contract`` and the
``REGISTRY`` of declared entry points) → this face. Every other package of :mod:`numerics` sits above it."""

from __future__ import annotations

from numerics.contracts import declarations
from numerics.contracts.declarations import *  # noqa: F403

#: the face: the public names of ``declarations`` (first occurrence kept)
__all__ = list(dict.fromkeys([*declarations.__all__]))
