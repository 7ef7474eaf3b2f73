"""Benchmark (issue 5 item 7): ratios against baselines measured in the same run, and peak memory.

1. MiniLM extraction — ``for cap in handle.layers(ids)`` on 32 prompts × 128 tokens (every layer's
   A, W_O, W_V, offset, attention input and output, streamed) vs the plain Hugging Face forward
   ``model(ids, output_attentions=True)`` of the same eager model. Target ratio ≤ 1.5.
   Each mode runs in its own subprocess so that the peak-RSS figures are separate.
2. SmolLM2-135M load time, cold (GGUF → dequantise → write the safetensors cache → load) vs warm
   (verified cache hit), each in a fresh subprocess with the same empty/filled temporary cache.
   Target warm/cold ≤ 0.1.

Usage: ``python benchmarks/bench_extraction.py [--reps 5] [--skip-load]``. Prints one line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_extract(mode: str, reps: int, n_prompts: int, length: int) -> dict:
    import torch

    from numerics.models.corpus import sample_prompts
    from numerics.models.registry import load

    torch.set_num_threads(max(1, torch.get_num_threads()))
    h = load("minilm", dtype=torch.float32, device="cpu")
    ids = sample_prompts(h, n_prompts, length, seed=0)
    mask = torch.ones_like(ids)

    def extract():
        n = 0
        for cap in h.layers(ids, mask):
            n += cap.A.numel()
        return n

    def hf():
        with torch.inference_mode():
            out = h.model(input_ids=ids, attention_mask=mask, output_attentions=True)
        return sum(a.numel() for a in out.attentions)

    if mode == "time":  # both modes interleaved in one process: the machine's load hits both alike
        extract(), hf()  # warm-up (thread pools, lazy imports)
        t_ex, t_hf = [], []
        for _ in range(reps):
            for fn, acc in ((hf, t_hf), (extract, t_ex)):
                t = time.perf_counter()
                fn()
                acc.append(time.perf_counter() - t)
        t_ex.sort()
        t_hf.sort()
        return {
            "mode": mode,
            "extract_median_s": t_ex[reps // 2],
            "hf_median_s": t_hf[reps // 2],
            "extract_min_s": t_ex[0],
            "hf_min_s": t_hf[0],
        }
    fn = extract if mode == "extract" else hf
    base = _rss_mib()
    fn()
    return {
        "mode": mode,
        "rss_before_mib": base,
        "peak_rss_mib": _peak_mib(),
        "peak_over_model_mib": _peak_mib() - base,
    }


def child_load(cache_dir: str) -> dict:
    os.environ["CONNWALK_CACHE"] = cache_dir
    import torch
    from transformers import AutoConfig, AutoTokenizer  # noqa: F401

    from numerics.models import registry

    # one-off library imports (Llama modelling code, tokenizer classes) outside the timed region,
    # so that cold vs warm compares the checkpoint load itself
    registry.load("tiny:llama", device="cpu")
    import transformers.tokenization_utils_tokenizers  # noqa: F401

    t = time.perf_counter()
    h = registry.load("smollm2-135m", dtype=torch.float32, device="cpu")
    dt = time.perf_counter() - t
    t = time.perf_counter()
    registry.load("smollm2-135m", dtype=torch.float32, device="cpu")
    again = time.perf_counter() - t
    return {"load_s": dt, "second_load_same_process_s": again, "n_params": h.n_params, "peak_rss_mib": _peak_mib()}


def _run_child(args: list[str]) -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
        TRANSFORMERS_VERBOSITY="error",
        HF_HUB_OFFLINE="1",
    )
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--skip-load", action="store_true")
    p.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        kind = a.child[0]
        res = child_extract(kind, a.reps, a.prompts, a.length) if kind != "load" else child_load(a.child[1])
        print(json.dumps(res))
        return 0

    common = ["--reps", str(a.reps), "--prompts", str(a.prompts), "--length", str(a.length)]
    tm = _run_child(common + ["--child", "time"])
    hf = _run_child(common + ["--child", "hf"])
    ex = _run_child(common + ["--child", "extract"])
    print(
        f"minilm {a.prompts}x{a.length}, {a.reps} interleaved reps: HF forward(output_attentions=True) median "
        f"{tm['hf_median_s']:.3f}s (min {tm['hf_min_s']:.3f}s), extraction median {tm['extract_median_s']:.3f}s "
        f"(min {tm['extract_min_s']:.3f}s)"
    )
    print(
        f"ratio extraction/HF = {tm['extract_median_s'] / tm['hf_median_s']:.2f} median, "
        f"{tm['extract_min_s'] / tm['hf_min_s']:.2f} min  (target <= 1.5)"
    )
    print(
        f"peak RSS over the loaded model, one pass each in its own process: HF {hf['peak_over_model_mib']:.0f} MiB, "
        f"extraction {ex['peak_over_model_mib']:.0f} MiB (process peaks {hf['peak_rss_mib']:.0f} / "
        f"{ex['peak_rss_mib']:.0f} MiB)"
    )
    if not a.skip_load:
        with tempfile.TemporaryDirectory(prefix="connwalk-bench-cache-") as d:
            cold = _run_child(["--child", "load", d])
            warm = _run_child(["--child", "load", d])
        print(
            f"smollm2-135m load: cold (GGUF, empty cache) {cold['load_s']:.2f}s, warm (cache hit, fresh process) "
            f"{warm['load_s']:.2f}s, warm in-process {warm['second_load_same_process_s']:.2f}s"
        )
        print(
            f"ratio warm/cold = {warm['load_s'] / cold['load_s']:.3f}  (target <= 0.1); "
            f"peak RSS cold {cold['peak_rss_mib']:.0f} MiB, warm {warm['peak_rss_mib']:.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
