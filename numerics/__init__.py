"""connwalk numerics: torch reference implementations of the connection-walk view of attention.

Conventions (THEOREMS.md (Conventions)): tokens are rows of ``X`` (``(..., n, d)``); stacking is token-major,
``x = X.reshape(-1)``; block ``(i, j)`` of an ``nd x nd`` operator is rows ``i*d:(i+1)*d`` and
columns ``j*d:(j+1)*d``; transports act on column vectors.
"""

from numerics.errors import (
    ConnwalkError,  # noqa: F401
    DeviceMismatchError,  # noqa: F401
    DTypeError,  # noqa: F401
    NegativeWeightError,  # noqa: F401
    NonFiniteError,  # noqa: F401
    NotStochasticError,  # noqa: F401
    OffSupportError,  # noqa: F401
    ShapeError,  # noqa: F401
    UndefinedError,  # noqa: F401
)
from numerics.vision_env import install as _install_vision_env

_install_vision_env()  # torchvision imports beside the CPU torch (numerics.vision_env)
