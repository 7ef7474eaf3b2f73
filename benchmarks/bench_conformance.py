#!/usr/bin/env python
r"""Benchmark: time of the conformance kit (``numerics.conformance.check_attention``) on a
MiniLM-size Hugging Face attention module — the first ``BertAttention`` of ``minilm`` (d = 384,
12 heads, float32; random weights of that configuration when the checkpoint is not installed) —
and on the whole 6-layer model. Target: < 30 s for the module (default 10 draws, n ≤ 8, B ≤ 2).

The baseline, measured in the same run: the module's own forward passes on the same draws (what
any check must at least pay); the script prints both times and their ratio, and, for the whole
model, the time with and without the T3/T5 hypotheses.

Usage: ``python benchmarks/bench_conformance.py [--examples 10] [--max-length 8] [--whole-model]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

from numerics.conformance import adapter_for, check_attention


def minilm():
    try:
        from numerics.models.registry import load

        return load("minilm").model, "minilm (trained)"
    except Exception:  # not installed: the same configuration, random weights
        import transformers as tf

        cfg = tf.BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
        cfg._attn_implementation = "eager"
        return tf.BertModel(cfg).eval(), "MiniLM-size BERT (random)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10)
    ap.add_argument("--max-length", type=int, default=8)
    ap.add_argument("--whole-model", action="store_true")
    a = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    model, what = minilm()
    module = model.encoder.layer[0].attention
    rep = check_attention(module, examples=a.examples, max_length=a.max_length)
    ad = adapter_for(module)
    t0 = time.perf_counter()
    for r in {r.index: r for r in rep.results}.values():
        ad.extract(r.draw)  # the module's own forward passes on the same draws
    base = time.perf_counter() - t0
    print(rep.table())
    print(
        f"{what}: layer-0 BertAttention, {a.examples} draws: check {rep.seconds:.2f} s, forward passes "
        f"{base:.3f} s, ratio {rep.seconds / max(base, 1e-9):.0f}x; target < 30 s: "
        f"{'met' if rep.seconds < 30 else 'NOT met'}"
    )
    if a.whole_model:
        for hyp in (False, True):
            r2 = check_attention(model, examples=a.examples, max_length=a.max_length, hypotheses=hyp)
            print(f"whole model (6 layers), hypotheses={hyp}: {r2.seconds:.2f} s, T2 {r2.status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
