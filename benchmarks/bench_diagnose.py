#!/usr/bin/env python
r"""Benchmark (issue 13 item 3): factored vs dense ``numerics.laplacian.diagnose``.

Part 1 — ``n·d = 4096`` (default ``n = 64, d = 64, H = 4``, head dim 16): the same walk diagnosed by
``method="dense"`` (``max_dense`` raised so that every check runs) and ``method="factored"``;
prints both times, the ratio (target ≥ 50×), whether every check's ``holds`` agrees and the largest
residual difference per check. Two walks: a reversible metric-compatible one (shared symmetric
attention, one symmetric orthogonal transport split over the heads: every T3 hypothesis holds) and
a random softmax one with random low-rank transports (everything fails).

Part 2 — one full MiniLM-sized layer (``n = 128, d = 384, H = 12``): the real first layer of
``minilm`` (``numerics.models.registry.load``, float64 weights, ``attention_dtype=float32`` since
HF's eager softmax runs in float32) when installed, else random factors of that size; prints the
time and the peak extra memory of ``method="factored"`` (``VmHWM`` reset through
``/proc/self/clear_refs`` before the call; target ≤ 1 GiB).

``--auto``: ``method="auto"``'s choice checked against both paths timed on the same walk (best of two
calls, one thread): random and reversible walks with ``H = 4``, random ones with ``H = 12`` and ``H > d``,
edges-form walks, ``n·d`` from 16 to 1024; prints dense ÷ factored time, which path is faster, which one
``diagnosis.auto_method`` picks, and whether they agree (a pick within 25 % of the faster one counts as
agreeing: on a shared machine two runs of one path differ by that much).

Usage: ``python benchmarks/bench_diagnose.py --auto [--threads 1]``, ``python benchmarks/bench_diagnose.py [--n 64] [--d 64] [--heads 4] [--part 1|2|both]
[--random-layer] [--threads 1] [--dense-cache FILE]``. The report at the three sizes is
``python benchmarks/bench_diagnose_kernel.py --three``; the walks both scripts time are in
:mod:`benchmarks.walks` (neither script imports the other). ``--dense-cache``: the dense runs are read from FILE when present (else
run and saved there), so the factored side can be re-measured alone.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

from benchmarks.walks import edges_walk, minilm_layer0, random_walk, reversible_walk
from numerics.laplacian import diagnose

F = torch.float64


AUTO_CASES = (
    [
        ("random H=4", lambda n, d: random_walk(n, d, 4), nd)
        for nd in ((4, 4), (8, 8), (16, 8), (16, 16), (32, 16), (32, 32))
    ]
    + [("reversible H=4", lambda n, d: reversible_walk(n, d, 4), nd) for nd in ((8, 8), (16, 8), (16, 16), (32, 16))]
    + [("random H=12", lambda n, d: random_walk(n, d, 12), nd) for nd in ((16, 8), (16, 16), (16, 32), (32, 32))]
    + [("random H=64", lambda n, d: random_walk(n, d, 64), nd) for nd in ((16, 16), (16, 32), (32, 16))]
    + [("edges", edges_walk, nd) for nd in ((4, 4), (8, 4), (8, 8), (16, 8), (32, 8), (64, 8), (32, 16))]
)


def auto_report() -> int:
    """``--auto`` (module docstring): returns the number of sizes where auto's pick is over 25 % slower."""
    from numerics.laplacian.diagnosis import auto_method

    def best(w, method):
        out = math.inf
        for _ in range(2):
            t0 = time.perf_counter()
            diagnose(w, method=method)
            out = min(out, time.perf_counter() - t0)
        return out

    diagnose(random_walk(8, 4, 2))
    diagnose(random_walk(8, 4, 2), method="factored", assemble_max=0)
    bad = 0
    print(
        f"{'walk':16s} {'n':>4s} {'d':>4s} {'n·d':>5s} {'dense s':>9s} {'fact s':>9s} {'dense/fact':>10s}  faster   auto"
    )
    for label, make, (n, d) in AUTO_CASES:
        w = make(n, d)
        H = w.n_heads if w.kind == "heads" else d * d
        td, tf = best(w, "dense"), best(w, "factored")
        pick = auto_method(n, d, H, 1024)
        faster = "dense" if td <= tf else "factored"
        ok = (td if pick == "dense" else tf) <= 1.25 * min(td, tf)
        bad += not ok
        print(
            f"{label:16s} {n:4d} {d:4d} {n * d:5d} {td:9.4f} {tf:9.4f} {td / tf:10.2f}  {faster:8s} {pick:8s}"
            f"{'' if ok else '  <- auto is the slower path'}",
            flush=True,
        )
    print(f"auto picked a path over 25 % slower at {bad} of {len(AUTO_CASES)} sizes")
    return bad


def dense_record(Dd, td: float) -> dict:
    """What the comparison needs from one dense run (picklable: ``--dense-cache``)."""
    return {
        "time": td,
        "threads": torch.get_num_threads(),
        "checks": {k: (c.holds.clone(), c.residual.clone(), c.tol) for k, c in Dd.checks().items()},
        "kernel_dim": Dd.kernel_dim,
        "parallel_dim": Dd.parallel_dim,
    }


def compare(rec: dict, Df) -> tuple[bool, dict]:
    same, diffs = True, {}
    for name, (hd, rd_t, _) in rec["checks"].items():
        cf = getattr(Df, name)
        same &= bool((hd == cf.holds).all())
        rd, rf = float(rd_t.max()), float(cf.residual.max())
        diffs[name] = (bool(hd.all()), bool(cf.holds.all()), rd, rf, abs(rd - rf))
    return same, diffs


def part1(n, d, H, dense_cache=None):
    print(f"== part 1: n={n} d={d} H={H} nd={n * d} threads={torch.get_num_threads()}")
    cache = torch.load(dense_cache) if dense_cache and os.path.exists(dense_cache) else {}
    for label, w in (("reversible", reversible_walk(n, d, H)), ("random", random_walk(n, d, H))):
        t0 = time.perf_counter()
        Df = diagnose(w, method="factored")
        tf = time.perf_counter() - t0
        key = f"{label}:{n}:{d}:{H}"
        if key in cache:
            rec = cache[key]
            print(f"   (dense from {dense_cache}: {rec['time']:.1f} s at {rec['threads']} threads, not rerun)")
        else:
            t0 = time.perf_counter()
            Dd = diagnose(w, method="dense", max_dense=n * d)
            rec = cache[key] = dense_record(Dd, time.perf_counter() - t0)
            if dense_cache:
                torch.save(cache, dense_cache)
        td = rec["time"]
        same, diffs = compare(rec, Df)
        print(
            f"-- {label}: dense {td:.1f} s, factored {tf:.2f} s, speed-up {td / tf:.1f}x "
            f"(target >= 50x: {'PASS' if td / tf >= 50 else 'FAIL'}); same verdicts: {same}"
        )
        print(f"   {'check':24s} {'dense':>6s} {'fact':>6s} {'r_dense':>11s} {'r_fact':>11s} {'|diff|':>10s}")
        for k, (hd, hf, rd, rf, df) in diffs.items():
            print(f"   {k:24s} {hd!s:>6s} {hf!s:>6s} {rd:11.3e} {rf:11.3e} {df:10.2e}")
        print(
            f"   dims ker Δ / parallel: dense {rec['kernel_dim']} / {rec['parallel_dim']}, factored {Df.kernel_dim} / {Df.parallel_dim}"
        )
        print(f"   factored extra: { {k: v for k, v in Df.extra.items() if k != 'spectrum_facts'} }")


def _vmhwm() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def part2(random_layer: bool, kernel: bool = True):
    w, src, kw = None, "random", {}
    if not random_layer:
        w = minilm_layer0()
        if w is not None:
            src, kw = "minilm layer 0 (real, float64 weights)", {"attention_dtype": torch.float32}
        else:
            print("(using random factors)")
    if w is None:
        w = random_walk(128, 384, 12)
    print(f"== part 2: {src}: {w}")
    base = _vmhwm()
    reset = _reset_hwm()
    rss0 = _vmhwm() if reset else base
    t0 = time.perf_counter()
    D = diagnose(w, method="factored", kernel=kernel, **kw)
    t = time.perf_counter() - t0
    peak = _vmhwm()
    extra = peak - rss0
    print(
        f"factored diagnose: {t:.1f} s; peak extra memory {extra / 2**20:.0f} MiB (VmHWM {'reset' if reset else 'NOT reset'}"
        f", {rss0 / 2**20:.0f} → {peak / 2**20:.0f} MiB); target <= 1024 MiB: {'PASS' if extra <= 2**30 else 'FAIL'}"
    )
    print(D.summary(tuple([0] * len(D.stochastic.holds.shape))))
    print({k: v for k, v in D.extra.items()})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--part", default="both", choices=["1", "2", "both"])
    ap.add_argument("--random-layer", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--dense-cache", default=None, help="part 1: load / save the dense runs here (they take ~25 min)")
    ap.add_argument("--no-kernel", action="store_true", help="part 2: skip the Lanczos null-space checks")
    ap.add_argument("--auto", action="store_true", help="method='auto''s pick vs both paths timed")
    args = ap.parse_args(argv)
    if args.auto:
        torch.set_num_threads(args.threads or 1)
        auto_report()
        return 0
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.part in ("1", "both"):
        part1(args.n, args.d, args.heads, args.dense_cache)
    if args.part in ("2", "both"):
        part2(args.random_layer, not args.no_kernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
