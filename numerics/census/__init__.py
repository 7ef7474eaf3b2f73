"""The census: every attention class of the installed transformers judged by the conformance kit
(``connwalk census``).

One public face; the chain inside runs one way: :mod:`~numerics.census.config` (tiny random models of any
family) → :mod:`~numerics.census.report` (``CENSUS.md``) → :mod:`~numerics.census.run` (enumeration,
workers under a memory limit, verdicts, :func:`run_census`, :func:`write_census`) → this face. Sits above
:mod:`numerics.conformance`."""

from __future__ import annotations

from numerics.census import config, report, run
from numerics.census.config import *  # noqa: F403
from numerics.census.report import *  # noqa: F403
from numerics.census.run import *  # noqa: F403

#: the face: the public names of ``config``, ``report``, ``run`` (first occurrence kept)
__all__ = list(dict.fromkeys([*config.__all__, *report.__all__, *run.__all__]))
