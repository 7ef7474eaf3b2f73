"""The walks the Laplacian benchmarks time (``bench_diagnose.py``, ``bench_diagnose_kernel.py``): seeded
synthetic walks and the real first MiniLM layer when its optional checkpoint is installed."""

from __future__ import annotations

import math

import torch

from numerics.walk import ConnectionWalk

F = torch.float64


def reversible_walk(n, d, H, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, n, generator=g, dtype=F)
    K = torch.exp(X + X.T)
    A = K / K.sum(-1, keepdim=True)
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=F))
    S = Q @ torch.diag(torch.tensor([1.0, -1.0] * (d // 2) + [1.0] * (d % 2), dtype=F)) @ Q.T
    u = torch.rand(H, generator=g, dtype=F)
    u = u / u.sum()
    return ConnectionWalk.from_mha(torch.stack([A] * H), u[:, None, None] * S / H * H)


def random_walk(n, d, H, seed=1):
    g = torch.Generator().manual_seed(seed)
    dh = max(1, d // H)
    A = torch.softmax(2 * torch.randn(H, n, n, generator=g, dtype=F), -1)
    return ConnectionWalk.from_factors(
        A,
        torch.randn(H, d, dh, generator=g, dtype=F) / math.sqrt(d),
        torch.randn(H, dh, d, generator=g, dtype=F) / math.sqrt(d),
    )


def edges_walk(n, d, seed=2):
    """An edges-form walk: softmax ``P``, Gaussian transports ``O_ij``."""
    g = torch.Generator().manual_seed(seed)
    P = torch.softmax(torch.randn(n, n, generator=g, dtype=F), -1)
    return ConnectionWalk.from_edges(P, torch.randn(n, n, d, d, generator=g, dtype=F))


def minilm_layer0():
    """The walk of the real first MiniLM layer on 128 tokens (float64 weights), or None with the reason
    printed when the optional ``minilm`` checkpoint is not usable."""
    try:
        from numerics.models.registry import load

        h = load("minilm", dtype=F, device="cpu")
        ids = h.tokenize(["The quick brown fox jumps over the lazy dog. " * 20], 128)
        return next(iter(h.layers(ids, keep={0}))).walk()
    except Exception as exc:  # the model is optional: the callers fall back or skip
        print(f"(minilm not usable: {exc})")
        return None
