#!/usr/bin/env python
r"""Benchmark (issue 13): the LAP check's factored statistics at real size vs the dense reference.

Part 1 (agreement and speed-up at a size the dense reference can take): one layer of random
softmax attention with the head layout of a real model (``--d``, ``--heads``, ``--kv-heads``,
``--dh``) at ``--n-small`` tokens; ``paper_checks.laplacian_stats`` factored statistics vs
``dense_reference`` (forms every ``O_ij``, the dense ``nd × nd`` walk and its eigenvalues) in the same
process: time ratio dense / factored and the largest absolute difference over the statistics.

Part 2 (real size): the same layout at ``--n`` tokens (default 128) and ``--batch`` prompts, factored
only (the dense walk would need ``(n d)²`` floats: 18.9 GB for MiniLM at n = 128): wall time per
prompt and peak resident-set growth (psutil, sampled), against ``(n d)² · 8`` bytes of one dense walk.

Defaults are MiniLM's layout (d = 384, 12 heads, d_h = 32); SmolLM2: ``--d 576 --heads 9 --kv-heads 3
--dh 64``. ``--real minilm`` / ``--real smollm2-135m`` use the first layer of the real checkpoint on
corpus prompts instead of random attention.

Usage: ``python benchmarks/bench_laplacian_check.py [--n 128] [--n-small 6] [--d 384] [--heads 12]
[--kv-heads 12] [--dh 32] [--batch 2] [--real NAME]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import psutil
import torch

from paper_checks import laplacian_check as LC
from paper_checks import laplacian_stats as LS

F64 = torch.float64


def _random_layer(B, n, d, H, Hkv, dh, seed):
    g = torch.Generator().manual_seed(seed)
    A = (3 * torch.randn(B, H, n, n, generator=g, dtype=F64)).softmax(-1)
    Wo = torch.randn(H, d, dh, generator=g, dtype=F64) / math.sqrt(d)
    Wv_kv = torch.randn(Hkv, dh, d, generator=g, dtype=F64) / math.sqrt(d)
    Wv = Wv_kv.repeat_interleave(H // Hkv, 0)
    X = torch.randn(B, n, d, generator=g, dtype=F64)
    return A, Wo, Wv, X


def _real_layer(name, B, n, seed):
    from paper_checks.main_job import load_model, sample_ids

    h = load_model(name)
    cap = next(iter(h.layers(sample_ids(h, B, n, seed))))
    return cap.A.to(F64), cap.W_O.to(F64), cap.W_V.to(F64), cap.attn_input.to(F64)


def _factored_all(A, Wo, Wv, X, times=None):
    """Every LAP statistic of one layer (all prompts); ``times`` gets (everything but ρ(W), ρ(W)) seconds."""
    c = LC.Collector(1, prompts=A.shape[0], layers=None, spec_layers=0)
    t0 = time.perf_counter()
    c.layer(0, A, X, Wo, Wv)
    t1 = time.perf_counter()
    out = c.finish(1)["stats"]
    out["spectral_radius"] = torch.tensor(
        [[LS.spectral_radius(A, Wo, Wv, index=b, tol_arpack=1e-6)] for b in range(A.shape[0])]
    ).numpy()
    if times is not None:
        times += [t1 - t0, time.perf_counter() - t1]
    return out


class _PeakRSS:
    def __init__(self):
        self.p = psutil.Process()
        self.base = self.peak = self.p.memory_info().rss
        self._stop = False

    def __enter__(self):
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        return self

    def _run(self):
        while not self._stop:
            self.peak = max(self.peak, self.p.memory_info().rss)
            time.sleep(0.005)

    def __exit__(self, *a):
        self._stop = True
        self.t.join()
        self.peak = max(self.peak, self.p.memory_info().rss)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--n-small", type=int, default=6)
    ap.add_argument("--d", type=int, default=384)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=None)
    ap.add_argument("--dh", type=int, default=32)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--real", default=None)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    Hkv = a.kv_heads or a.heads

    def layer(B, n, seed):
        if a.real:
            return _real_layer(a.real, B, n, seed)
        return _random_layer(B, n, a.d, a.heads, Hkv, a.dh, seed)

    # part 1: agreement with the dense reference
    A, Wo, Wv, X = layer(1, a.n_small, 0)
    n, d = A.shape[-1], Wo.shape[1]
    t0 = time.perf_counter()
    fac = _factored_all(A, Wo, Wv, X)
    tf = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = LS.dense_reference(A, Wo, Wv, X)
    td = time.perf_counter() - t0
    diffs = {k: abs(float(fac[k][0, 0]) - v) for k, v in ref.items() if math.isfinite(v)}
    worst = max(diffs, key=diffs.get)
    print(
        f"part 1: n={n}, d={d}, H={A.shape[1]}, kv heads={Hkv if not a.real else 'model'} (nd = {n * d}): "
        f"factored {tf:.3f} s, dense reference {td:.3f} s, ratio {td / tf:.1f}x; "
        f"max |factored − dense| = {diffs[worst]:.2e} ({worst})"
    )
    for k in sorted(ref):
        print(f"  {k:24s} factored {float(fac[k][0, 0]): .6e}  dense {ref[k]: .6e}")
    # part 2: real size, factored only
    A, Wo, Wv, X = layer(a.batch, a.n, 1)
    B, n = A.shape[0], A.shape[-1]
    with _PeakRSS() as mem:
        times = []
        out = _factored_all(A, Wo, Wv, X, times)
    extra = (mem.peak - mem.base) / 2**20
    dense = (n * d) ** 2 * 8 / 2**30
    print(
        f"part 2: n={n}, d={d}, H={A.shape[1]}, B={B}: factored LAP statistics {times[0]:.2f} s "
        f"({times[0] / B:.2f} s per prompt) + ARPACK ρ(W) {times[1] / B:.2f} s per prompt; peak RSS growth "
        f"{extra:.0f} MiB vs one dense walk (nd)²·8 B = {dense:.1f} GiB"
    )
    for k, v in out.items():
        print(f"  {k:24s} {', '.join(f'{float(x):.4g}' for x in v[:, 0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
