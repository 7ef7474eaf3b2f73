"""Device selection: ``auto`` (cuda if available, else cpu), overridable by ``CONNWALK_DEVICE``
(``cpu``, ``cuda``, ``cuda:1``, ``auto``) and by pytest's ``--device`` option (which sets the env)."""

from __future__ import annotations

import os

import torch

ENV = "CONNWALK_DEVICE"


def default_device(requested: str | None = None) -> torch.device:
    name = (requested or os.environ.get(ENV) or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        from numerics.errors import DeviceMismatchError

        raise DeviceMismatchError(f"device {name!r} requested but CUDA is not available", argument=ENV)
    return dev


def as_device(name: str, device) -> torch.device:
    """``device`` (a ``torch.device`` or a string such as ``"cpu"``, ``"cuda:0"``) as a
    ``torch.device``; anything else, or a string torch does not parse, raises
    :class:`~numerics.errors.ParameterError` naming ``name``; a CUDA device without CUDA raises
    :class:`~numerics.errors.DeviceMismatchError`."""
    from numerics.errors import DeviceMismatchError, ParameterError

    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise ParameterError(
                f"{device!r} is not a device (expected e.g. 'cpu', 'cuda', 'cuda:0')", argument=name
            ) from None
    else:
        raise ParameterError(f"expected a torch.device or a device string, got {type(device).__name__}", argument=name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DeviceMismatchError(f"device {str(dev)!r} requested but CUDA is not available", argument=name)
    return dev
