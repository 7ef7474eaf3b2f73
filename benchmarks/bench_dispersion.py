#!/usr/bin/env python
r"""Benchmark (issue 7 item 9): dispersion relation by FFT block diagonalisation vs dense ``eig``.

Target: ring of ``n = 1024`` tokens, ``d = 16`` (``nd = 16384``), ``H`` heads with random
normalised kernels and random transports: ``numerics.patterns.symbols.dispersion`` (FFT of the kernels +
``n`` eigenproblems of size ``d``) ≥ 100× faster than ``torch.linalg.eigvals`` of the dense
token-major Jacobian ``J = block(Σ_h A0^h_ij T_h) − I`` (``numerics.patterns.symbols.linear_operator``),
eigenvalues agreeing to 1e-9 (relative to ``max |λ|``).

Agreement is the symmetric Hausdorff distance between the two eigenvalue sets (nearest neighbour
in the complex plane, both directions, via a k-d tree) divided by ``max |λ|``, plus the relative
difference of the sums (trace check, sensitive to multiplicities).

The dense baseline is O((nd)³): at the target size it needs ~2 GiB per copy of ``J`` and, on a
small CPU, tens of minutes; ``--n``/``--d`` run smaller sizes, and ``--extrapolate`` prints the
ratio the measured dense time would scale to at ``n = 1024, d = 16`` assuming O((nd)³) — labelled
as an extrapolation, never as a measurement.

Usage: ``python benchmarks/bench_dispersion.py [--n 1024] [--d 16] [--heads 4] [--reps 3]
[--seed 0] [--extrapolate] [--device cpu|cuda]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np
import torch
from scipy.spatial import cKDTree

from numerics.device import default_device
from numerics.patterns.symbols import dispersion, linear_operator


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the FFT path (best time kept)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None)
    ap.add_argument("--extrapolate", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (both paths)")
    ap.add_argument("--fft-only", action="store_true", help="time the FFT path only (no dense baseline)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = default_device(args.device)
    g = torch.Generator().manual_seed(args.seed)
    n, d, H = args.n, args.d, args.heads
    a = torch.rand(H, n, generator=g, dtype=torch.float64) ** 4
    a = (a / a.sum(-1, keepdim=True)).to(dev)
    T = (torch.randn(H, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)).to(dev)

    fft_times = []
    for _ in range(max(1, args.reps)):
        _sync(dev)
        t0 = time.perf_counter()
        sig = dispersion(a, T)
        _sync(dev)
        fft_times.append(time.perf_counter() - t0)
    t_fft = min(fft_times)
    if args.fft_only:
        print(f"n={n} d={d} H={H} nd={n * d} device={dev.type} threads={torch.get_num_threads()}")
        print(f"fft dispersion      : {t_fft * 1e3:10.2f} ms (best of {len(fft_times)}); dense baseline not run")
        return 0

    _sync(dev)
    t0 = time.perf_counter()
    J = linear_operator(a, T)
    _sync(dev)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    ev = torch.linalg.eigvals(J)
    _sync(dev)
    t_eig = time.perf_counter() - t0

    x = sig.reshape(-1).cpu().numpy()
    y = ev.cpu().numpy()
    scale = max(np.abs(y).max(), 1.0)
    P = np.c_[x.real, x.imag]
    Q = np.c_[y.real, y.imag]
    h1 = cKDTree(Q).query(P)[0].max()
    h2 = cKDTree(P).query(Q)[0].max()
    haus = max(h1, h2) / scale
    trace = abs(x.sum() - y.sum()) / (abs(y).sum())
    ratio = t_eig / t_fft
    print(f"n={n} d={d} H={H} nd={n * d} device={dev.type} threads={torch.get_num_threads()}")
    print(f"fft dispersion      : {t_fft * 1e3:10.2f} ms (best of {len(fft_times)})")
    print(f"dense eig baseline  : {t_eig * 1e3:10.2f} ms (+ {t_build * 1e3:.1f} ms to build J)")
    print(f"speed-up (eig/fft)  : {ratio:10.1f}x   target >= 100x: {'PASS' if ratio >= 100 else 'FAIL'}")
    print(
        f"eigenvalue agreement: Hausdorff/max|λ| = {haus:.2e}, trace rel diff = {trace:.2e}   "
        f"target <= 1e-9: {'PASS' if max(haus, trace) <= 1e-9 else 'FAIL'}"
    )
    if args.extrapolate and (n, d) != (1024, 16):
        factor = (1024 * 16 / (n * d)) ** 3
        fft_factor = (1024 / n) * (16 / d) ** 3  # n small eigenproblems of size d
        print(
            f"EXTRAPOLATED (not measured) to n=1024, d=16 assuming O((nd)^3) dense and O(n d^3) FFT: "
            f"dense ~{t_eig * factor:.0f} s, ratio ~{ratio * factor / fft_factor:.0f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
