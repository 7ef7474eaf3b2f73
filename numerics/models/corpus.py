r"""The shipped text corpus and a seeded sampler of prompts of an exact token length.

``numerics/data/corpus.txt``: 600 English sentences, one per line, taken from the docstrings of the
Python 3.11 standard library (modules such as ``collections``, ``json``, ``asyncio``, ``email``,
``tkinter``; sentences of 8–35 words made of plain prose characters, deduplicated, shuffled with
seed 0). It is text that every Python installation carries, so the corpus is offline and
redistributable (PSF licence).

``sample_prompts(tok, n_prompts, length, seed)`` tokenises the whole corpus once as one stream
(sentences joined by a space), and draws ``n_prompts`` windows that each start at a sentence start,
wrapped in the tokenizer's own special tokens (e.g. ``[CLS] … [SEP]`` for BERT, nothing for SmolLM2):
every prompt has exactly ``length`` tokens and the draw is a pure function of ``seed``.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np
import torch

from numerics.errors import CorpusTooShortError, ParameterError, SequenceTooLongError, ShapeError

__all__ = [
    "corpus_sentences",
    "special_framing",
    "token_stream",
    "sample_prompts",
    "encode_exact",
    "check_corpus_length",
]


@functools.lru_cache(maxsize=1)
def corpus_sentences() -> tuple[str, ...]:
    """The shipped corpus, one sentence per entry."""
    text = resources.files("numerics").joinpath("data/corpus.txt").read_text(encoding="utf-8")
    return tuple(s.strip() for s in text.splitlines() if s.strip())


def _tokenizer_of(obj):
    tok = getattr(obj, "tokenizer", obj)
    if tok is None or not callable(tok):
        raise ShapeError(
            "needs a handle with a tokenizer, or a tokenizer (this handle has none)", argument="handle_or_tokenizer"
        )
    return tok


def special_framing(tok) -> tuple[list[int], list[int]]:
    """``(prefix, suffix)`` special-token ids the tokenizer adds around any text."""
    probe = "hello world"
    full = list(tok(probe, add_special_tokens=True)["input_ids"])
    plain = list(tok(probe, add_special_tokens=False)["input_ids"])
    for k in range(len(full) - len(plain) + 1):
        if full[k : k + len(plain)] == plain:
            return full[:k], full[k + len(plain) :]
    raise ShapeError(
        "cannot locate the text inside the tokenizer's special-token framing", argument="tokenizer"
    )  # pragma: no cover


_STREAMS: dict[int, tuple[object, np.ndarray, np.ndarray]] = {}


def token_stream(tok) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, starts)``: the corpus as one token stream and the token index of each sentence start."""
    hit = _STREAMS.get(id(tok))
    if hit is not None and hit[0] is tok:
        return hit[1], hit[2]
    sents = corpus_sentences()
    text = " ".join(sents)
    char_starts, pos = [], 0
    for s in sents:
        char_starts.append(pos)
        pos += len(s) + 1
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    tok_ends = np.asarray([o[1] for o in enc["offset_mapping"]], dtype=np.int64)
    # the token that contains the sentence's first character (the first whose span ends after it;
    # byte-level BPE tokens carry the preceding space, WordPiece tokens do not)
    starts = np.unique(np.searchsorted(tok_ends, np.asarray(char_starts), side="right"))
    starts = starts[starts < len(ids)]
    _STREAMS[id(tok)] = (tok, ids, starts)
    return ids, starts


def _check_length(obj, length) -> int:
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise ShapeError(f"expected an int, got {type(length).__name__}", argument="length")
    length = int(length)
    max_len = getattr(obj, "max_length", None)
    if max_len is not None and length > max_len:
        raise SequenceTooLongError(
            f"{length} tokens exceeds the model's context of {max_len} (refused)", argument="length"
        )
    return length


def _windows(tok, length: int):
    """``(prefix, suffix, ids, valid starts, m)`` of prompts of ``length`` tokens (``m`` corpus tokens
    inside the special tokens); raises when there is no room or no window."""
    if length < 1:
        raise ShapeError(f"expected a positive int, got {length}", argument="length")
    prefix, suffix = special_framing(tok)
    m = length - len(prefix) - len(suffix)
    if m < 1:
        raise ShapeError(
            f"length {length} leaves no room for text inside {len(prefix) + len(suffix)} special tokens",
            argument="length",
        )
    ids, starts = token_stream(tok)
    valid = starts[starts + m <= len(ids)]
    if len(valid) == 0:
        raise CorpusTooShortError(
            f"the corpus has {len(ids)} tokens; a prompt of {length} tokens needs {m} consecutive corpus tokens",
            argument="length",
        )
    return prefix, suffix, ids, valid, m


def check_corpus_length(tokenizer, length: int) -> int:
    """Refuse a prompt ``length`` the shipped corpus cannot fill with ``tokenizer`` (a tokenizer only:
    no model needed, so callers can check before any weights load). Returns the number of windows
    (sentence starts) that fit. :class:`CorpusTooShortError` / :class:`ShapeError` naming ``length``."""
    tok = _tokenizer_of(tokenizer)
    length = _check_length(tokenizer, length)
    return len(_windows(tok, length)[3])


def sample_prompts(handle_or_tokenizer, n_prompts: int, length: int, seed: int = 0) -> torch.Tensor:
    """``input_ids`` ``(n_prompts, length)`` (``torch.long``), drawn from the corpus with ``seed``.

    Windows start at sentence starts (chosen without replacement while enough distinct starts
    exist) and include the tokenizer's special tokens. Raises
    :class:`~numerics.errors.CorpusTooShortError` when the corpus has fewer tokens than a window
    needs, :class:`~numerics.errors.SequenceTooLongError` when ``length`` exceeds the model's context."""
    tok = _tokenizer_of(handle_or_tokenizer)
    length = _check_length(handle_or_tokenizer, length)
    if isinstance(n_prompts, bool) or not isinstance(n_prompts, (int, np.integer)) or n_prompts < 1:
        raise ShapeError(f"expected a positive int, got {n_prompts!r}", argument="n_prompts")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ParameterError(f"expected a nonnegative int, got {seed!r}", argument="seed")
    prefix, suffix, ids, valid, m = _windows(tok, length)
    rng = np.random.default_rng(int(seed))
    pick = rng.choice(valid, size=int(n_prompts), replace=int(n_prompts) > len(valid))
    rows = [prefix + ids[s : s + m].tolist() + suffix for s in pick]
    return torch.tensor(rows, dtype=torch.long)


def encode_exact(handle_or_tokenizer, texts, length: int) -> torch.Tensor:
    """Each text's ids (with special tokens) cut to exactly ``length``: ``(len(texts), length)``.

    A text with fewer than ``length`` tokens raises :class:`~numerics.errors.CorpusTooShortError`."""
    tok = _tokenizer_of(handle_or_tokenizer)
    length = _check_length(handle_or_tokenizer, length)
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts) or len(texts) == 0:
        raise ShapeError("expected a non-empty list of strings", argument="texts")
    prefix, suffix = special_framing(tok)
    m = length - len(prefix) - len(suffix)
    if m < 1:
        raise ShapeError(f"length {length} leaves no room for text inside the special tokens", argument="length")
    rows = []
    for i, t in enumerate(texts):
        body = list(tok(t, add_special_tokens=False, verbose=False)["input_ids"])
        if len(body) < m:
            raise CorpusTooShortError(
                f"text {i} has {len(body)} tokens, fewer than the {m} needed for length {length}", argument="texts"
            )
        rows.append(prefix + body[:m] + suffix)
    return torch.tensor(rows, dtype=torch.long)
