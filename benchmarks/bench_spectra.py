#!/usr/bin/env python
r"""Benchmark: k extreme eigenvalues of Δ = I − W, matrix-free ARPACK vs dense ``eig``.

Target (issue 4): n = 512 tokens, d = 32 (nd = 16384), k = 10 (5 smallest + 5 largest): the
matrix-free path (``numerics.spectra.extreme_eigenvalues``: π-symmetrised Lanczos on the factored
heads form, never forming the nd × nd matrix) ≥ 20× faster than dense ``eig`` of the token-major
Δ, eigenvalues agreeing to 1e-8; report peak memory of both.

The walk: H heads sharing one reversible softmax attention ``A = softmax(X M_s Xᵀ/√4)`` (``M_s``
symmetric), head transports ``T_h = w_h T_s`` with ``T_s`` symmetric, eigenvalues spread in
[−0.9, 0.95] (so the extreme eigenvalues of Δ are simple), stored as factors ``W_O[h] W_V[h]``.

Each method runs in a fresh process (``multiprocessing`` spawn) so that its peak RSS
(``VmHWM`` − RSS before the measured call) is its own. The dense baseline can be capped with
``--dense-timeout``: when it does not finish, the script reports the *measured lower bound*
``ratio ≥ timeout / t_matrix_free`` and the RSS peak observed until then, and checks the
eigenvalue agreement at the smaller ``--agree-n/--agree-d`` size where both finish.

Usage::

    python benchmarks/bench_spectra.py                      # n=512, d=32, no cap on dense
    python benchmarks/bench_spectra.py --dense-timeout 600  # cap the dense baseline
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def build_walk(n: int, d: int, H: int, seed: int):
    import torch

    from numerics.walk import ConnectionWalk

    F = torch.float64
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, dtype=F, generator=g)
    M = torch.randn(4, 4, dtype=F, generator=g)
    A = torch.softmax(X @ (M + M.T) @ X.T / 4, dim=-1)
    Q, _ = torch.linalg.qr(torch.randn(d, d, dtype=F, generator=g))
    Ts = Q @ torch.diag(torch.linspace(-0.9, 0.95, d, dtype=F)) @ Q.T
    w = torch.rand(H, dtype=F, generator=g) + 0.5
    w = w / w.sum()
    W_O = (w[:, None, None] * Ts).contiguous()  # (H, d, d_h = d)
    W_V = torch.eye(d, dtype=F).expand(H, d, d).contiguous()
    return ConnectionWalk.from_factors(A.expand(H, n, n).contiguous(), W_O, W_V)


def structured_reference(n: int, d: int, H: int, k: int, seed: int) -> np.ndarray:
    """The k extreme eigenvalues of Δ from T1, without the nd × nd matrix: all heads share A, so
    W = kron(A, T_Σ) and spec Δ = {1 − λ_i(A) μ_k(T_Σ)} (n×n and d×d eigensolves)."""
    import torch

    walk = build_walk(n, d, H, seed)
    A = walk.attention[0]
    T = walk.head_transports.sum(0)
    lam = torch.linalg.eigvals(A)
    mu = torch.linalg.eigvalsh((T + T.T) / 2).to(lam.dtype)
    ev = (1 - lam[:, None] * mu[None, :]).reshape(-1).numpy()
    ev = np.sort(ev.real)  # A reversible: λ real
    return np.concatenate([ev[: k // 2], ev[-(k - k // 2) :]])


def _vm(key: str) -> float:
    """``VmHWM`` / ``VmRSS`` of this process in MiB (Linux)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _reset_hwm() -> None:
    try:  # Linux ≥ 4.0: writing 5 to clear_refs resets VmHWM to the current RSS
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def run_matrix_free(n, d, H, k, seed, threads, q):
    import torch

    torch.set_num_threads(threads)
    from numerics.spectra import extreme_eigenvalues

    walk = build_walk(n, d, H, seed)
    extreme_eigenvalues(build_walk(8, 2, 1, seed), k=2)  # warm up imports / ARPACK
    _reset_hwm()
    base = _vm("VmRSS")
    t = time.perf_counter()
    res = extreme_eigenvalues(walk, k=k, which="BE")
    dt = time.perf_counter() - t
    q.put(
        {
            "time": dt,
            "mem_mib": _vm("VmHWM") - base,
            "eig": np.sort(res.eigenvalues.real),
            "method": res.method,
            "matvecs": res.matvecs,
            "sym_res": res.symmetric_residual,
        }
    )


def run_dense(n, d, H, k, seed, threads, q):
    import scipy.linalg as sla
    import torch

    torch.set_num_threads(threads)
    walk = build_walk(n, d, H, seed)
    _reset_hwm()
    base = _vm("VmRSS")
    q.put({"pid": os.getpid(), "base": base})
    t = time.perf_counter()
    L = walk.to_dense()  # (nd, nd) token-major W
    L.neg_()
    L.diagonal().add_(1.0)  # Δ = I − W in place (no second nd×nd buffer)
    a = L.numpy().T  # Fortran-ordered view of Δᵀ: same eigenvalues, no copy for LAPACK
    ev = sla.eigvals(a, overwrite_a=True, check_finite=False)
    dt = time.perf_counter() - t
    ev = ev[np.argsort(ev.real)]
    ext = np.concatenate([ev[: k // 2], ev[-(k - k // 2) :]])
    q.put({"time": dt, "mem_mib": _vm("VmHWM") - base, "eig": ext, "max_imag": float(np.abs(ev.imag).max())})


def _peak_of(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def measure(fn, args, timeout=None):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=fn, args=(*args, q))
    p.start()
    info = {}
    t0 = time.perf_counter()
    peak = float("nan")
    while True:
        try:
            msg = q.get(timeout=1.0)
            if "pid" in msg:
                info.update(msg)
                continue
            info.update(msg)
            break
        except Exception:
            if "pid" in info:
                v = _peak_of(info["pid"]) - info["base"]  # VmHWM is monotone: keep the latest reading
                if v == v:
                    peak = v
            if not p.is_alive():
                raise RuntimeError(f"{fn.__name__} died (exit code {p.exitcode})")  # noqa: B904
            if timeout is not None and time.perf_counter() - t0 > timeout:
                p.terminate()
                p.join()
                return {"timeout": True, "time": time.perf_counter() - t0, "mem_mib": peak}
    p.join()
    return info


def compare(n, d, H, k, seed, threads, dense_timeout, label):
    N = n * d
    print(f"\n== {label}: n={n}, d={d}, H={H}, nd={N}, k={k}, threads={threads}")
    mf = measure(run_matrix_free, (n, d, H, k, seed, threads))
    print(
        f"matrix-free ({mf['method']}): {mf['time']:.3f} s, {mf['matvecs']} matvecs, "
        f"peak RSS +{mf['mem_mib']:.1f} MiB, π-symmetry residual {mf['sym_res']:.1e}"
    )
    print(f"  eigenvalues: {np.array2string(mf['eig'], precision=12, max_line_width=200)}")
    ref = structured_reference(n, d, H, k, seed)
    print(f"  vs structured T1 reference 1 − λ_i(A)μ_k(T_Σ): max |Δλ| = {np.abs(ref - mf['eig']).max():.2e}")
    if dense_timeout is not None and dense_timeout <= 0:
        return {"mf": mf}
    dense_bytes = 8 * N * N
    print(f"dense eig: the nd×nd float64 matrix alone is {dense_bytes / 2**20:.0f} MiB")
    de = measure(run_dense, (n, d, H, k, seed, threads), timeout=dense_timeout)
    if de.get("timeout"):
        ratio = de["time"] / mf["time"]
        print(f"dense eig: did NOT finish within {de['time']:.0f} s (cap); peak RSS observed +{de['mem_mib']:.0f} MiB")
        print(f"RATIO (dense / matrix-free) >= {ratio:.0f}x  (measured lower bound)")
        return {"ratio_lower_bound": ratio, "mf": mf, "dense": de}
    err = float(np.abs(np.sort(de["eig"].real) - mf["eig"]).max())
    ratio = de["time"] / mf["time"]
    print(f"dense eig: {de['time']:.3f} s, peak RSS +{de['mem_mib']:.1f} MiB, max |Im λ| {de['max_imag']:.1e}")
    print(
        f"RATIO (dense / matrix-free) = {ratio:.1f}x; max |Δλ| = {err:.2e} ({'OK' if err <= 1e-8 else 'FAIL'} vs 1e-8)"
    )
    return {"ratio": ratio, "err": err, "mf": mf, "dense": de}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=max(1, min(os.cpu_count() or 1, 16)))
    ap.add_argument(
        "--dense-timeout",
        type=float,
        default=None,
        help="cap (s) on the dense baseline; 0 skips it (matrix-free + structured check only)",
    )
    ap.add_argument("--agree-n", type=int, default=64, help="size where both finish when the dense run is capped")
    ap.add_argument("--agree-d", type=int, default=16)
    args = ap.parse_args(argv)
    out = compare(args.n, args.d, args.heads, args.k, args.seed, args.threads, args.dense_timeout, "target size")
    if "ratio_lower_bound" in out or "dense" not in out:
        compare(args.agree_n, args.agree_d, args.heads, args.k, args.seed, args.threads, None, "agreement size")


if __name__ == "__main__":
    main()
