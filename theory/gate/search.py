"""The property test's search: its Hypothesis settings and the search, among its own draws, for an
instance that rejects a mutant (the statement holds on it, the mutant does not)."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, find, settings

from .. import oracles

#: the property tests' settings (the seeded strategies are cheap; the oracles dominate)
PROPERTY = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
#: the search for a rejecting instance among the property test's own draws
SEARCH = settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


#: a first, short search among the same draws (most mutants are rejected by one of the first draws): a
#: mutant it does not reject goes to the exact equivalence check before the full :data:`SEARCH`
QUICK = settings(SEARCH, max_examples=10)


def fails_the_property_test(conclusion, inst) -> bool:
    """What the property test asserts, negated: the verdict does not hold (or judging raises)."""
    try:
        return not oracles.judge(conclusion, inst).holds
    except Exception:
        return True


def fingerprint(inst) -> tuple:
    """A hashable key of a drawn instance (its values' bytes): the same draw, the same key."""
    import numpy as np

    def key(v):
        if isinstance(v, np.ndarray):
            return (v.dtype.str, v.shape, v.tobytes())
        if isinstance(v, (list, tuple)):
            return tuple(key(x) for x in v)
        return repr(v)

    return tuple((k, key(v)) for k, v in sorted(inst.items(), key=lambda kv: kv[0]))


def rejecting_instance(instances, conclusion, mutant, holds: dict | None = None, search: settings = SEARCH):
    """An instance of ``instances`` (the property test's strategy) on which ``conclusion`` holds and
    its mutant does not (``hypothesis.errors.NoSuchExample`` if none is drawn). ``holds``: a cache of the
    statement's own verdicts by :func:`fingerprint` (the derandomized search draws the same instances for
    every mutant of a conclusion: the gate judges the statement once per draw); ``search``: the settings
    of the search (:data:`SEARCH`, or :data:`QUICK`)."""

    def original_holds(inst) -> bool:
        if holds is None:
            return oracles.judge(conclusion, inst).holds
        try:
            fp = fingerprint(inst)
        except Exception:  # an instance that cannot be keyed is judged every time
            return oracles.judge(conclusion, inst).holds
        if fp not in holds:
            holds[fp] = oracles.judge(conclusion, inst).holds
        return holds[fp]

    def rejected(inst) -> bool:
        return original_holds(inst) and fails_the_property_test(mutant.apply(conclusion), inst)

    found = find(instances, rejected, settings=search)
    if not rejected(found):  # a flaky judge: the instance found does not reject the mutant when judged again
        raise AssertionError(f"{mutant.name}: the instance found does not reject it when judged again")
    return found
