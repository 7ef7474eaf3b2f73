"""The generic oracle of a stated formula: a conclusion whose predicate is ``"formulas_hold"`` holds on
an instance when every formula of its params does — an :class:`theory.formulas.Identity` (``lhs =
rhs`` at every value of its free indices, premises checked first: an instance violating one is outside
the statement) or a :class:`theory.formulas.walks.Relation` (``≥``, ``>``, ``≤``, ``<``, or ``condition
⇒ relation``), each evaluated by :func:`theory.formulas.evaluate` / ``lambdify`` of the very SymPy
expressions the statement renders. A user states formulas; no oracle function is written.

The instance: a mapping of value names to arrays (numpy, torch — converted to float64 on the CPU —, or
nested lists) and the sizes ``n``, ``d``, ``H`` (ints) the formulas' indices range over.

The threshold: the conclusion's ``tol`` param (a :class:`theory.formulas.tolerances.Tolerance`; the
public builder :func:`theory.api.conclusion` states ``64·ε·N`` by default, ``N`` the product of the
sizes the formulas mention) on the residual relative to the larger side floored at unity; decided
three-valued (:func:`theory.oracles.instances.residual_verdict`: within its own rounding error of the
threshold, undecided).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from ..formulas import environment, evaluate, premise_residuals, tabulate
from ..formulas.tolerances import EPS
from .instances import Verdict, all_of, not_applicable, residual_verdict

#: the predicate name a stated conclusion carries (:data:`theory.oracles.PREDICATES`)
NAME = "formulas_hold"


def as_values(inst: Mapping[str, Any]) -> dict[str, Any]:
    """The instance with every tensor / list as a float64 (or complex128) numpy array; ints stay."""
    out: dict[str, Any] = {}
    for k, v in inst.items():
        if hasattr(v, "detach"):  # a torch tensor (theory imports no torch: duck-typed)
            v = v.detach().cpu().numpy()
        if isinstance(v, (list, tuple)):
            v = np.asarray(v)
        if isinstance(v, np.ndarray):
            v = v.astype(np.complex128 if np.iscomplexobj(v) else np.float64)
        out[k] = v
    return out


def _formulas(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in params.items()
        if callable(getattr(v, "markdown", None))
        and not getattr(v, "is_tolerance", False)
        and not getattr(v, "is_assertion", False)
    }


def _threshold(params: Mapping[str, Any], values: Mapping[str, Any]) -> float:
    tol = params.get("tol")
    if tol is None:
        return 64 * EPS
    return float(tol.value(values)) if hasattr(tol, "value") else float(tol)


def _scale(*arrays) -> float:
    finite = [np.abs(a[np.isfinite(a)]).max() for a in map(np.asarray, arrays) if np.isfinite(a).any()]
    return max([1.0, *map(float, finite)])


def _identity(key: str, ident, values: Mapping[str, Any], t: float) -> Verdict:
    for pl, pr in premise_residuals(ident, values):
        gap = float(np.abs(pl - pr).max()) / _scale(pl, pr)
        if not gap <= t:
            return not_applicable(f"premise of {key} violated by the instance (relative gap {gap:.1e})")
    lhs, rhs = evaluate(ident, values)
    r = float(np.abs(lhs - rhs).max()) if np.size(lhs) else 0.0
    return residual_verdict(r / _scale(lhs, rhs), t, f"{key}: {ident.name} evaluated on the instance")


def _relation(key: str, rel, values: Mapping[str, Any], t: float) -> Verdict:
    from ..formulas.walks import margin

    m, strict = margin(rel, values)
    m = np.asarray(m, dtype=np.float64)
    scale = 1.0
    if not isinstance(rel.rel, sp.Implies):
        env = environment(rel, values)
        scale = _scale(tabulate(rel.rel.lhs, rel.free, env), tabulate(rel.rel.rhs, rel.free, env))
    worst = float(m.min()) / scale if m.size else np.inf
    if strict:  # certainly > 0 beyond the rounding threshold; certainly ≤ 0 fails; between: undecided
        holds, fails = worst > t, worst < -t
        return Verdict(holds, max(0.0, -worst), t, f"{key}: {rel.name} (strict)", undecided=not (holds or fails))
    return residual_verdict(max(0.0, -worst), t, f"{key}: {rel.name} evaluated on the instance")


def formulas_hold(inst: Mapping[str, Any], params: Mapping[str, Any]) -> Verdict:
    """Every formula of ``params`` on the instance ``inst`` (module docstring); a formula of another
    kind (a :class:`theory.formulas.walks.Term`) is refused by name."""
    values = as_values(inst)
    t = _threshold(params, values)
    verdicts = []
    for key, f in _formulas(params).items():
        if hasattr(f, "rel"):
            verdicts.append(_relation(key, f, values, t))
        elif hasattr(f, "lhs"):
            verdicts.append(_identity(key, f, values, t))
        else:
            raise TypeError(f"formula {key!r}: the generic oracle evaluates identities and relations, not {f!r}")
    if not verdicts:
        raise ValueError("formulas_hold: the conclusion states no formula (params)")
    return all_of(*verdicts)


def exact_values(instance: Mapping[str, Any]) -> dict[str, Any]:
    """A witness's exact data (ints, ``"p/q"`` strings, nested lists) as arrays of SymPy rationals; the
    sizes (plain ints) and the ``kind`` stay."""

    def conv(v):
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        if isinstance(v, float):
            raise TypeError(f"witness data must be exact (int or 'p/q' string), got the float {v!r}")
        return sp.Rational(v)

    out: dict[str, Any] = {}
    for k, v in instance.items():
        if isinstance(v, (list, tuple)):
            out[k] = np.array(conv(v), dtype=object)
        elif isinstance(v, str) and k != "kind":
            out[k] = sp.Rational(v)
        else:
            out[k] = v
    return out


def relation_attained(statement, sh) -> Verdict:
    """The sharpness check ``"attained"`` of a stated relation (a bound ``≤`` / ``≥`` of
    :func:`theory.api.relation`): on the witness's exact data the relation ``statement.params[sh.bound]``
    holds and is attained — its smallest margin is exactly zero (exact SymPy arithmetic on the very
    expression the statement renders, so a widened bound is missed)."""
    from ..formulas.walks import margin

    rel = statement.params.get(sh.bound)
    if rel is None or not hasattr(rel, "rel"):
        return Verdict(False, np.inf, 0.0, f"{sh.id}: {statement.id} states no relation {sh.bound!r}")
    m, _strict = margin(rel, exact_values(sh.instance))
    entries = [sp.nsimplify(x) for x in np.asarray(m, dtype=object).ravel()]
    worst = min(entries, default=sp.oo)
    ok = worst == 0
    return Verdict(bool(ok), 0.0 if ok else abs(float(worst)), 0.0, f"{sh.id}: smallest exact margin {worst}")
