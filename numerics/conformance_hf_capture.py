"""A documented import path kept working: the code is :mod:`numerics.conformance.hf_capture` (its public names, re-exported)."""

from numerics.conformance.hf_capture import *  # noqa: F403
from numerics.conformance.hf_capture import __all__  # noqa: F401
