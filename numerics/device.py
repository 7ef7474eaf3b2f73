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
