"""A documented import path kept working: the code is :mod:`numerics.conformance.hf_capture` (its public names, re-exported)."""

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

__all__ = [
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
