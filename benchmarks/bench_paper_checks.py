#!/usr/bin/env python
r"""Benchmark (issue 6): the factored edge-transport defect vs the dense per-edge reference.

``paper_checks.stats.edge_defect`` computes ``Σ_ij P_ij κ(O_ij) / Σ_ij P_ij`` from head Gram terms
(``O(H³ d_h³ + H⁴ d_h² + n² H⁴)``, no d×d matrix per edge); ``edge_defect_naive`` forms every
``O_ij`` (d×d) and its singular values (``O(n² (H d² + d³))``). Both run in float64 on the same
random inputs in the same process; the script prints the time ratio naive / factored and the
relative difference of the results. Default sizes are small enough for the naive path on 2 CPU
cores (``--n 8 --d 128 --heads 4 --dh 32``); the real models use n = 64, d = 384–576.

Usage: ``python benchmarks/bench_paper_checks.py [--n 8] [--d 128] [--heads 4] [--dh 32] [--reps 3]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

from paper_checks import stats as S


def _best(f, reps):
    best = float("inf")
    out = None
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dh", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    g = torch.Generator().manual_seed(a.seed)
    A = torch.softmax(torch.randn(1, a.heads, a.n, a.n, generator=g, dtype=torch.float64) * 2, -1)
    Wo = torch.randn(a.heads, a.d, a.dh, generator=g, dtype=torch.float64)
    Wv = torch.randn(a.heads, a.dh, a.d, generator=g, dtype=torch.float64)
    r = S.factor_rank(Wo, Wv, 1e-10)
    t_fast, fast = _best(lambda: S.edge_defect(A, Wo, Wv, r), a.reps)
    t_naive, naive = _best(lambda: S.edge_defect_naive(A, Wo, Wv, r), 1)
    rel = float((fast - naive).abs().max() / naive.abs().max())
    print(f"edge defect  n={a.n} d={a.d} H={a.heads} d_h={a.dh}  rank={r}")
    print(f"  factored (Gram terms): {t_fast * 1e3:9.2f} ms")
    print(f"  naive (dense O_ij):    {t_naive * 1e3:9.2f} ms")
    print(f"  ratio naive/factored:  {t_naive / t_fast:9.1f}x   relative difference {rel:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
