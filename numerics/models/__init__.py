"""Adapters from real checkpoints to connection walks. See :mod:`numerics.models.base` for the
interface every family adapter implements.

* :mod:`.registry` — ``load(name, *, dtype, device, seed)``, ``available()``, ``wrap(model, tokenizer)``;
* :mod:`.adapters` — ``HFModelHandle`` (capture of each layer), re-exporting the family specs;
* :mod:`.families` — the family specs (BERT, Llama, GPT-2, Gemma 3, MPNet) and ``family_of``;
* :mod:`.cache` — the atomic, checksummed cache of dequantised GGUF weights;
* :mod:`.corpus` — the shipped corpus and ``sample_prompts``;
* :mod:`.tiny` — tiny random configs of each family (tests, examples).
"""
