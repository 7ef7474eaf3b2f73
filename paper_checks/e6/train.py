"""Helpers shared by the two E6 ensembles: stacking members and reading steps-to-threshold."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import torch


def stack_members(inits: list[dict], device, trainable: Collection[str]) -> dict:
    """Stack per-member parameter dicts into one dict of ``(G, ...)`` float32 tensors on ``device``;
    the keys in ``trainable`` require gradients (the rest are masks / constants).

    Adam is elementwise and the training loss is a sum of per-member losses, so the members of a
    stacked ensemble train exactly as if each were trained alone."""
    out = {}
    for key in inits[0]:
        t = torch.stack([m[key] for m in inits]).to(device=device, dtype=torch.float32)
        if key in trainable:
            t.requires_grad_(True)
        out[key] = t
    return out


def steps_to_threshold(losses, threshold: float) -> np.ndarray:
    """First step index t with ``losses[..., t] < threshold`` (step 0 = before any update);
    ``inf`` where never reached. ``losses``: (..., T+1)."""
    L = np.asarray(losses, dtype=np.float64)
    hit = threshold > L
    first = np.argmax(hit, axis=-1).astype(np.float64)
    first[~hit.any(axis=-1)] = np.inf
    return first
