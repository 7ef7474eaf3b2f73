"""The census: every attention class of the installed transformers (``connwalk census``), and every timm
architecture's attention (``connwalk census --library timm``), judged by the conformance kit.

One public face; the chain inside runs one way: :mod:`~numerics.census.config` (tiny random models of any
family) → :mod:`~numerics.census.report` (``CENSUS.md``) → :mod:`~numerics.census.pool` (budgets, workers,
whole files) → :mod:`~numerics.census.run` (enumeration, verdicts, :func:`run_census`, :func:`write_census`)
→ :mod:`~numerics.census.timm_report` (``CENSUS-timm.md``) → :mod:`~numerics.census.timm` (timm's
architectures, :func:`run_timm_census`) → this face. Sits above :mod:`numerics.conformance`."""

from __future__ import annotations

from numerics.census import config, report, run, timm, timm_report
from numerics.census.config import *  # noqa: F403
from numerics.census.report import *  # noqa: F403
from numerics.census.run import *  # noqa: F403
from numerics.census.timm import *  # noqa: F403
from numerics.census.timm_report import *  # noqa: F403

#: the face: the public names of ``config``, ``report``, ``run``, ``timm_report``, ``timm`` (first occurrence kept)
__all__ = list(dict.fromkeys([*config.__all__, *report.__all__, *run.__all__, *timm_report.__all__, *timm.__all__]))
