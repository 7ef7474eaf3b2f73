"""The census: every attention class of the installed transformers judged by the conformance kit
(``connwalk census``).

One public face; the chain inside runs one way: :mod:`~numerics.census.config` (tiny random models of any
family) → :mod:`~numerics.census.report` (``CENSUS.md``) → :mod:`~numerics.census.run` (enumeration,
workers under a memory limit, verdicts, :func:`run_census`, :func:`write_census`) → this face. Sits above
:mod:`numerics.conformance`."""

from __future__ import annotations

from numerics.census.config import (
    MAX_PARAMS,
    WIDTH,
    build_tiny,
    model_class,
    tiny_config,
)
from numerics.census.report import (
    HYPOTHESES,
    STATUSES,
    reason_kind,
    render_markdown,
)
from numerics.census.run import (
    CensusResult,
    CensusRow,
    attention_classes,
    check_class,
    run_census,
    verdict_of,
    write_census,
)

__all__ = [
    "WIDTH",
    "MAX_PARAMS",
    "tiny_config",
    "build_tiny",
    "model_class",
    "render_markdown",
    "reason_kind",
    "STATUSES",
    "HYPOTHESES",
    "CensusRow",
    "CensusResult",
    "attention_classes",
    "run_census",
    "verdict_of",
    "check_class",
    "write_census",
]
