"""A documented import path kept working: the code is :mod:`numerics.conformance.hf` (its public names, re-exported)."""

from numerics.conformance.hf import *  # noqa: F403
from numerics.conformance.hf import __all__  # noqa: F401
