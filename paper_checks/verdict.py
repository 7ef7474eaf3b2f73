"""The common result row of every paper check (E1–E6) and the verdict vocabulary.

Every statistic reported by any check is one :class:`StatResult`. The report (``report.md``,
``results.json``) is a list of these. Verdict rules are written in code next to each statistic and
summarised in ``rule`` so the report can print them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
INSUFFICIENT_SCALE = "insufficient scale range"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, INSUFFICIENT_SCALE)


@dataclass
class StatResult:
    claim: str  # "E1".."E6"
    model: str  # model name, or experiment name for E5/E6
    statistic: str  # short id, e.g. "walk_change_frob_trend"
    trained: float | None  # value for the trained model / treatment
    null: float | None  # value for the null model / baseline (mean over seeds)
    interval: tuple[float, float] | None  # 95% interval of the effect (or of `trained`), see `interval_of`
    effect: float | None  # effect size used by the rule (e.g. trained − null)
    verdict: str
    rule: str  # the decision rule in words
    interval_of: str = "effect"
    definition: str = ""  # formula of the statistic
    null_interval: tuple[float, float] | None = None
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict: {self.verdict!r} is not one of {VERDICTS}")

    def as_dict(self) -> dict:
        return asdict(self)
