"""A documented import path kept working: the code is :mod:`numerics.patterns.simulate` (its public names, re-exported)."""

from numerics.patterns.simulate import *  # noqa: F403
from numerics.patterns.simulate import __all__  # noqa: F401
