"""Intra-op thread control: the one place that pins torch's thread count (patterns, simulate,
classify, and the E5/E6 paper checks use it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads and restore the previous count on exit.

    ``n`` None or 0 leaves the count unchanged. Tiny batched operations (the E5/E6 ensembles, small
    eigen-solves) run fastest on one thread and far faster than on two threads of a contended
    machine (measured 18 ms vs 60–460 ms per E6 training step)."""
    prev = torch.get_num_threads()
    want = int(n) if n else prev
    if want != prev:
        torch.set_num_threads(want)
    try:
        yield
    finally:
        if want != prev:
            torch.set_num_threads(prev)


def small_problem_threads(X: torch.Tensor, limit: int = 1 << 22) -> contextlib.AbstractContextManager[None]:
    """:func:`torch_threads` (1) when ``X`` is on the CPU and ``X.numel() · X.shape[-2] <= limit``.

    For such sizes intra-op threading only adds synchronisation: measured 50× slower for a 64-token
    RK4 step on a loaded 2-core machine. The previous thread count is restored on exit."""
    small = X.device.type == "cpu" and X.numel() * (X.shape[-2] if X.ndim >= 2 else 1) <= limit
    return torch_threads(1 if small else None)
