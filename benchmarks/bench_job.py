#!/usr/bin/env python
r"""Benchmark: the cost of the main job and of its LAP check, and its determinism.

Runs ``connwalk paper-checks`` in fresh subprocesses (``python -m connwalk``, this checkout):

1. the default job (every claim, LAP included) with ``--seed S``;
2. the same command again (same seed) — ``results.json`` and ``report.md`` must be byte-identical;
3. the job without LAP (``--claims E1 E2 E3 E4 E5 E6``).

Prints, per run, wall and CPU seconds (user + system of the child, ``resource.getrusage``), the ratio
CPU(with LAP) / CPU(without), the LAP share, and whether the two same-seed reports are identical.
These are the figures README quotes. The first load of SmolLM2 dequantises its GGUF once (~35 s) into
the cache; run once before measuring, or read run 2.

Usage: ``python benchmarks/bench_job.py [--seed 0] [--models minilm smollm2-135m] [--quick]
[--threads 1] [--no-repeat]``
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLAIMS_WITHOUT_LAP = ["E1", "E2", "E3", "E4", "E5", "E6"]


def run(out: Path, args, claims=None) -> tuple[float, float]:
    """One job in a child process: (wall s, CPU s of the child)."""
    cmd = [sys.executable, "-m", "connwalk", "paper-checks", "--out", str(out), "--seed", str(args.seed)]
    cmd += ["--no-progress", "--threads", str(args.threads)]
    if args.models:
        cmd += ["--models", *args.models]
    if args.quick:
        cmd.append("--quick")
    if claims:
        cmd += ["--claims", *claims]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", nargs="+", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-repeat", action="store_true", help="skip the second same-seed run")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="connwalk-bench-job-") as d:
        d = Path(d)
        w1, c1 = run(d / "a", args)
        print(f"1. default job (LAP included): wall {w1:.1f} s, CPU {c1:.1f} s", flush=True)
        if not args.no_repeat:
            w2, c2 = run(d / "b", args)
            same = {n: (d / "a" / n).read_bytes() == (d / "b" / n).read_bytes() for n in ("results.json", "report.md")}
            print(f"2. same command again: wall {w2:.1f} s, CPU {c2:.1f} s; byte-identical: {same}", flush=True)
        w3, c3 = run(d / "c", args, CLAIMS_WITHOUT_LAP)
        print(f"3. without LAP: wall {w3:.1f} s, CPU {c3:.1f} s", flush=True)
        cl = c1 if args.no_repeat else min(c1, c2)  # run 1 may include the one-time GGUF dequantisation
        print(
            f"CPU with LAP / without: {cl / c3:.2f} (LAP ≈ {cl - c3:.0f} s CPU, {100 * (cl - c3) / cl:.0f}% of the job)"
        )
        if not args.no_repeat and not all(same.values()):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
