"""The shipped corpus and the seeded prompt sampler."""

from __future__ import annotations

import pytest
import torch

from numerics.errors import CorpusTooShortError, SequenceTooLongError, ShapeError
from numerics.models.corpus import corpus_sentences, encode_exact, sample_prompts, special_framing


def test_corpus_ships_hundreds_of_sentences():
    s = corpus_sentences()
    assert 300 <= len(s) <= 2000
    assert len(set(s)) == len(s)
    assert all(x[0].isupper() and x.endswith(".") for x in s)


def test_sample_prompts_exact_length_and_deterministic(minilm32):
    a = sample_prompts(minilm32, 5, 33, seed=7)
    b = sample_prompts(minilm32.tokenizer, 5, 33, seed=7)
    c = sample_prompts(minilm32, 5, 33, seed=8)
    assert a.shape == (5, 33) and a.dtype == torch.long
    assert torch.equal(a, b) and not torch.equal(a, c)
    cls_id, sep_id = minilm32.tokenizer.cls_token_id, minilm32.tokenizer.sep_token_id
    assert bool((a[:, 0] == cls_id).all()) and bool((a[:, -1] == sep_id).all())
    assert not bool(((a[:, 1:-1] == cls_id) | (a[:, 1:-1] == sep_id)).any())
    # prompts start at a sentence start: the first word is capitalised
    first = [minilm32.tokenizer.decode(r[1:4]) for r in a]
    assert all(w[:1].isalpha() for w in first)


def test_sample_prompts_decoder_has_no_framing(smollm32):
    assert special_framing(smollm32.tokenizer) == ([], [])
    x = sample_prompts(smollm32, 3, 50, seed=0)
    assert x.shape == (3, 50)
    text = smollm32.tokenizer.decode(x[0])
    assert text.strip()[:1].isupper()


def test_too_short_and_too_long(minilm32):
    with pytest.raises(SequenceTooLongError, match="length"):
        sample_prompts(minilm32, 1, minilm32.max_length + 1, seed=0)
    tok = minilm32.tokenizer
    with pytest.raises(CorpusTooShortError, match="corpus"):
        sample_prompts(tok, 1, 10**6, seed=0)  # a bare tokenizer has no context limit
    with pytest.raises(ShapeError, match="n_prompts"):
        sample_prompts(minilm32, 0, 8, seed=0)


def test_tokenize_exact(minilm32):
    texts = [
        "The quick brown fox jumps over the lazy dog near the river bank.",
        "Attention is a connection walk on the token graph of a sentence.",
    ]
    ids = minilm32.tokenize(texts, 8)
    assert ids.shape == (2, 8)
    assert torch.equal(ids, encode_exact(minilm32, texts, 8))
    with pytest.raises(CorpusTooShortError, match="text 1"):
        minilm32.tokenize([texts[0], "Short."], 12)
    with pytest.raises(ShapeError, match="texts"):
        minilm32.tokenize("not a list", 8)
