"""A documented import path kept working: the code is :mod:`numerics.patterns.dynamics` (its public names, re-exported)."""

from numerics.patterns.dynamics import *  # noqa: F403
from numerics.patterns.dynamics import __all__  # noqa: F401
