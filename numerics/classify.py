"""A documented import path kept working: the code is :mod:`numerics.patterns.classify` (its public names, re-exported)."""

from numerics.patterns.classify import *  # noqa: F403
from numerics.patterns.classify import __all__  # noqa: F401
