"""Benchmark the connection-walk core (issue 2). Prints ratios measured in this run; no asserts.

1. ``apply`` of a walk built from an ``nn.MultiheadAttention``'s weights (attention given,
   transports as low-rank factors W_O^h, W_V^h) vs the module's own forward
   (n=1024, d=512, H=8, float32, CPU). Target: ratio ≤ 1.3.
2. factored ``apply`` vs dense ``to_dense() @ x`` (n=256, d=64, H=4, float32). Target: ≥ 50×.
3. Peak extra memory of factored apply vs the O(H·n² + n·d) estimate (subprocess VmHWM).

Run: ``python benchmarks/bench_walk.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import torch

sys.path.insert(0, ".")
from numerics.attention import AttentionWeights, walk_from_weights
from numerics.walk import ConnectionWalk


def best_of(fn, repeat=5):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def bench_mha(n, d, H):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d, H, batch_first=True)
    X = torch.randn(1, n, d)
    w = AttentionWeights.from_torch_mha(mha)
    with torch.no_grad():
        walk, c = walk_from_weights(X, w)
        Y_ref = mha(X, X, X, need_weights=False)[0]
        err = ((walk.apply(X) + c - Y_ref).norm() / Y_ref.norm()).item()
        t_mod = best_of(lambda: mha(X, X, X, need_weights=False), repeat=10)
        t_walk = best_of(lambda: walk.apply(X) + c, repeat=10)
    return {
        "n": n,
        "d": d,
        "H": H,
        "module_forward_s": t_mod,
        "walk_apply_s": t_walk,
        "ratio_walk_over_module": t_walk / t_mod,
        "rel_err": err,
        "target": "<= 1.3",
    }


def bench_dense(n, d, H):
    torch.manual_seed(0)
    A = torch.softmax(torch.randn(H, n, n), -1)
    dh = d // H
    Wo, Wv = torch.randn(H, d, dh) / d**0.5, torch.randn(H, dh, d) / d**0.5
    walk = ConnectionWalk.from_factors(A, Wo, Wv)
    X = torch.randn(n, d)
    with torch.no_grad():
        # factored first: after a 1 GiB dense build/free the allocator state slows small ops for a while
        t_fact = best_of(lambda: walk.apply(X), repeat=30)
        t_build = time.perf_counter()
        D = walk.to_dense()
        t_build = time.perf_counter() - t_build
        x = X.reshape(-1)
        t_dense = best_of(lambda: D @ x, repeat=3)
        err = ((D @ x).reshape(n, d) - walk.apply(X)).norm().item() / walk.apply(X).norm().item()
    return {
        "n": n,
        "d": d,
        "H": H,
        "dense_matvec_s": t_dense,
        "dense_build_s": t_build,
        "factored_apply_s": t_fact,
        "speedup_matvec_only": t_dense / t_fact,
        "speedup_incl_build": (t_dense + t_build) / t_fact,
        "rel_err": err,
        "dense_bytes": D.numel() * D.element_size(),
        "target": ">= 50",
    }


MEM_SNIPPET = r"""
import sys, torch
def hwm():  # peak RSS of this process image (VmHWM is reset at exec, unlike ru_maxrss)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
sys.path.insert(0, ".")
from numerics.walk import ConnectionWalk
n, d, H, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)
A = torch.softmax(torch.randn(H, n, n), -1); dh = d // H
walk = ConnectionWalk.from_factors(A, torch.randn(H, d, dh), torch.randn(H, dh, d)); X = torch.randn(n, d)
base = hwm()
with torch.no_grad():
    y = walk.apply(X) if mode == "factored" else walk.to_dense() @ X.reshape(-1)
print(hwm() - base)
"""


def bench_memory(n, d, H):
    out = {}
    for mode in ("factored", "dense"):
        r = subprocess.run(
            [sys.executable, "-c", MEM_SNIPPET, str(n), str(d), str(H), mode],
            capture_output=True,
            text=True,
            check=True,
        )
        out[f"{mode}_peak_extra_bytes"] = int(r.stdout.strip().splitlines()[-1])
    out["estimate_factored_bytes_O(Hn^2+nd)"] = 4 * (H * n * n + n * d + H * n * (d // H))
    out["estimate_dense_bytes"] = 4 * (n * d) ** 2
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads for both sides (default 1: stable on a shared machine)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.quick:
        res = {"mha": bench_mha(256, 128, 8), "dense": bench_dense(64, 32, 4), "memory": bench_memory(64, 32, 4)}
    else:
        res = {"mha": bench_mha(1024, 512, 8), "dense": bench_dense(256, 64, 4), "memory": bench_memory(256, 64, 4)}
    print(json.dumps(res, indent=2))
    print(f"apply / nn.MultiheadAttention forward: {res['mha']['ratio_walk_over_module']:.2f}x (target <= 1.3)")
    print(
        f"dense matvec / factored apply: {res['dense']['speedup_matvec_only']:.0f}x "
        f"(incl. building the dense operator: {res['dense']['speedup_incl_build']:.0f}x; target >= 50)"
    )


if __name__ == "__main__":
    main()
