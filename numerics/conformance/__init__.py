"""The conformance kit: is *this* attention module the connection walk it claims (THEOREMS.md T2)?
Where to look to support a new attention family.

One public face; the chain inside runs one way: :mod:`~numerics.conformance.protocol` (a drawn input, an
extraction, the ``Adapter`` base) → :mod:`~numerics.conformance.hf_returned` (HF modules that return their
probabilities) → :mod:`~numerics.conformance.hf_capture` (capture through transformers' attention interface)
→ :mod:`~numerics.conformance.hf` (stand-alone HF attention modules) → :mod:`~numerics.conformance.adapters`
(torch MHA, the ``connwalk_attention`` protocol, whole models) → :mod:`~numerics.conformance.checks` (T2's
hypotheses and identity, T3/T5 hypotheses per draw) → :mod:`~numerics.conformance.kit`
(:func:`check_attention`, :func:`assert_conforms`, reports) → this face."""

from __future__ import annotations

from numerics.conformance.hf import (
    HF_ATTENTION_CLASSES,
    HFAttentionAdapter,
    hf_attention_adapter,
)
from numerics.conformance.hf_capture import (
    CAPTURE,
    CaptureAdapter,
    CaptureError,
    CaptureRecord,
    capture_attention,
    capturing,
    is_attention_class,
    match_columns,
    read_extraction,
    register,
    run_captured,
)
from numerics.conformance.kit import (
    HYPOTHESES,
    HYPOTHESIS_STATEMENTS,
    SHADOW,
    T2_STATEMENT,
    VERDICTS,
    Adapter,
    ConformanceError,
    ConformanceReport,
    Counterexample,
    Draw,
    DrawResult,
    Extraction,
    ExtractionError,
    NotAttentionError,
    Verdict,
    adapter_for,
    assert_conforms,
    check_attention,
    check_draw,
)

__all__ = [
    "Adapter",
    "Draw",
    "Extraction",
    "ExtractionError",
    "Counterexample",
    "DrawResult",
    "ConformanceReport",
    "ConformanceError",
    "NotAttentionError",
    "Verdict",
    "adapter_for",
    "check_attention",
    "check_draw",
    "assert_conforms",
    "T2_STATEMENT",
    "HYPOTHESES",
    "HYPOTHESIS_STATEMENTS",
    "VERDICTS",
    "SHADOW",
    "HF_ATTENTION_CLASSES",
    "HFAttentionAdapter",
    "hf_attention_adapter",
    "CAPTURE",
    "CaptureError",
    "CaptureRecord",
    "CaptureAdapter",
    "capture_attention",
    "capturing",
    "register",
    "match_columns",
    "is_attention_class",
    "read_extraction",
    "run_captured",
]
