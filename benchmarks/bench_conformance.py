#!/usr/bin/env python
r"""Benchmark: time of the conformance kit (``numerics.conformance.kit.check_attention``) on a
MiniLM-size Hugging Face attention module — the first ``BertAttention`` of ``minilm`` (d = 384,
12 heads, float32; random weights of that configuration when the checkpoint is not installed) —
and, with ``--whole-model``, on the whole 6-layer model. Target: < 30 s for the module (default 10
draws, n ≤ 8, B ≤ 2).

Before / after, measured in the same run on the same draws: the kit without its float64 shadow
(``shadow=False``: the own-dtype run only, as before the shadow existed) and with it (the default);
the baseline is the module's own forward passes on those draws (what any check must at least pay).
The script prints each time and its ratio to the baseline, and the shadow's cost (with / without).

Each configuration runs ``--repeats`` times (alternating, after a warm-up); the fastest counts.

With ``--against REF`` (a git revision, e.g. the commit before a change) the script times instead the
default check (10 draws, T2 + T3/T5, float64 shadow) of the same module (seeded random MiniLM-size
weights) under REF's ``numerics``/``theory`` (``git archive`` into a temporary directory) and under this
tree's, alternating ``--repeats`` times in one run, each in a fresh interpreter after a warm-up, and
prints both fastest times and their ratio (issue 37: at most 2× today's).

Usage: ``python benchmarks/bench_conformance.py [--examples 10] [--max-length 8] [--repeats 2] [--whole-model]
[--against REF]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch

from numerics.conformance.kit import adapter_for, check_attention


def minilm():
    try:
        from numerics.models.registry import load

        return load("minilm").model, "minilm (trained)"
    except Exception:  # not installed: the same configuration, random weights
        import transformers as tf

        cfg = tf.BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
        cfg._attn_implementation = "eager"
        return tf.BertModel(cfg).eval(), "MiniLM-size BERT (random)"


#: run in a fresh interpreter with one tree's code first on the path: the check's seconds, its evidence
_TIMED = """
import sys, torch, transformers as tf
sys.path.insert(0, sys.argv[1])
import numerics
assert numerics.__file__.startswith(sys.argv[1]), numerics.__file__
from numerics.conformance.kit import check_attention
torch.set_num_threads(int(sys.argv[3])); torch.manual_seed(0)
cfg = tf.BertConfig(hidden_size=384, num_hidden_layers=1, num_attention_heads=12, intermediate_size=1536)
cfg._attn_implementation = "eager"
module = tf.BertModel(cfg).eval().encoder.layer[0].attention
check_attention(module, examples=1, max_length=2)
r = check_attention(module, examples=int(sys.argv[2]))
print(r.seconds, r.verdict, getattr(r, "evidence", "-"), sep="|")
"""


def against(ref: str, examples: int, repeats: int, threads: int) -> int:
    """Time the default check under ``ref``'s code and this tree's, alternating, in one run."""
    import subprocess
    import tempfile

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as base:
        arch = subprocess.run(
            ["git", "-C", here, "archive", ref, "numerics", "theory"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", base], input=arch.stdout, check=True)
        best = {ref: math.inf, "this tree": math.inf}
        seen = {}
        for _ in range(repeats):
            for label, root in ((ref, base), ("this tree", here)):
                cmd = [sys.executable, "-c", _TIMED, root, str(examples), str(threads)]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=base)
                sec, verdict, evidence = out.stdout.strip().splitlines()[-1].split("|")
                best[label] = min(best[label], float(sec))
                seen[label] = f"verdict {verdict}; {evidence}"
    for label, sec in best.items():
        print(f"  {label:<12} {sec:7.2f} s  ({seen[label]})")
    print(f"MiniLM-size layer-0 attention, {examples} draws: this tree / {ref} = {best['this tree'] / best[ref]:.2f}x")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10)
    ap.add_argument("--max-length", type=int, default=8)
    ap.add_argument("--whole-model", action="store_true")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each configuration; the fastest counts")
    ap.add_argument("--against", default=None, metavar="REF", help="time REF's kit against this tree's, in one run")
    a = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    if a.against:
        return against(a.against, a.examples, a.repeats, max(1, min(4, os.cpu_count() or 1)))
    model, what = minilm()
    module = model.encoder.layer[0].attention
    check_attention(module, examples=1, max_length=2)  # warm-up: first-call costs are nobody's
    kw = dict(examples=a.examples, max_length=a.max_length)
    best: dict = {}
    for _ in range(a.repeats):  # alternate before / after, keep each one's fastest run
        for hyp in (False, True):
            for shadow in (False, True):
                r = check_attention(module, hypotheses=hyp, shadow=shadow, **kw)
                if (hyp, shadow) not in best or r.seconds < best[hyp, shadow].seconds:
                    best[hyp, shadow] = r
    rep = best[True, True]
    ad = adapter_for(module)
    draws = list({r.index: r.draw for r in rep.results}.values())
    assert all(list({r.index: r.draw for r in b.results}.values()) == draws for b in best.values())  # same draws
    base = math.inf
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for d in draws:
            ad.extract(d)  # the module's own forward passes on the same draws
        base = min(base, time.perf_counter() - t0)
    print(rep.table())
    print(f"{what}: layer-0 BertAttention, {len(draws)} draws; baseline: its forward passes {base:.3f} s")
    for hyp in (False, True):
        what_hyp = "T2 + T3/T5 reported" if hyp else "T2 only (hypotheses=False)"
        for shadow, label in ((False, "before: own dtype only"), (True, "after: + float64 shadow")):
            r = best[hyp, shadow]
            print(
                f"  {what_hyp:<27} {label:<24} {r.seconds:7.2f} s  ratio to baseline "
                f"{r.seconds / max(base, 1e-9):6.1f}x  verdict {r.verdict}, decided by {r.decided_by}"
            )
        ratio = best[hyp, True].seconds / max(best[hyp, False].seconds, 1e-9)
        print(f"  {what_hyp:<27} the shadow's cost: {ratio:.2f}x the own-dtype-only check")
    print(f"target < 30 s for the default check: {'met' if rep.seconds < 30 else 'NOT met'} ({rep.seconds:.2f} s)")
    if a.whole_model:
        for hyp in (False, True):
            for shadow in (False, True):
                r2 = check_attention(model, hypotheses=hyp, shadow=shadow, **kw)
                print(
                    f"whole model (6 layers), hypotheses={hyp}, shadow={shadow}: {r2.seconds:.2f} s, "
                    f"verdict {r2.verdict}, decided by {r2.decided_by}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
